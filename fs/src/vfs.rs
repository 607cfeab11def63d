//! The VFS: one tree of paths over mounted filesystems. `/` is a filesystem of its
//! own (tmpfs until a disk is mounted over it); other filesystems are mounted on
//! directories of the tree. Paths are absolute or relative to the working directory;
//! `.` and `..` are resolved by name (like `realpath -s`), symbolic links are followed
//! (at most [`MAX_SYMLINKS`] per lookup).

use crate::error::FsError;
use crate::memfs::check_name;
use crate::types::{DirEntry, FileSystem, FileType, Ino, Stat, StatFs};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

/// Symbolic links followed in one lookup before giving up (ELOOP), as Linux.
pub const MAX_SYMLINKS: usize = 40;

/// A filesystem the VFS can own.
pub type BoxedFs = Box<dyn FileSystem + Send>;

struct Mount {
    /// Normalised absolute path of the mount point ("/" for the root).
    path: String,
    /// What was mounted ("/dev/xvdb", "tmpfs").
    source: String,
    fs: BoxedFs,
    /// Mount generation: a file handle from an earlier mount at the same slot is stale.
    gen: u64,
}

/// A file found by path: which mount, which inode. Stays valid until that filesystem
/// is unmounted (then operations on it fail with ENOENT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handle {
    mount: usize,
    gen: u64,
    ino: Ino,
}

/// One line of `mount`'s output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountInfo {
    /// Source device or "tmpfs".
    pub source: String,
    /// Mount point.
    pub path: String,
    /// Filesystem type.
    pub kind: &'static str,
    /// Mounted read-only.
    pub read_only: bool,
    /// Why it went read-only after an error, if it did ([`FileSystem::error`]).
    pub error: Option<String>,
}

/// The mount table and the working directory.
pub struct Vfs {
    mounts: Vec<Option<Mount>>,
    next_gen: u64,
    cwd: String,
    memory_low: fn() -> bool,
    /// Operations refused with ENOMEM because memory stayed low after shrinking.
    refused: u64,
}

/// Asked before an operation that may grow memory: whether memory is low (the kernel
/// answers from its heap; the default never says so).
pub type MemoryLow = fn() -> bool;

/// Splits a normalised absolute path into its components.
fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|c| !c.is_empty())
}

/// Joins `path` onto `base` (an absolute directory) and resolves `.` and `..` by name.
pub fn normalize(base: &str, path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let start = if path.starts_with('/') { "" } else { base };
    for c in components(start).chain(components(path)) {
        match c {
            "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut out = String::new();
    for p in &parts {
        out.push('/');
        out.push_str(p);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// Whether normalised `path` is `prefix` or lies below it.
fn is_under(path: &str, prefix: &str) -> bool {
    prefix == "/"
        || path == prefix
        || (path.starts_with(prefix) && path.as_bytes().get(prefix.len()) == Some(&b'/'))
}

impl Vfs {
    /// A tree with `root` mounted at `/`.
    pub fn new(root: BoxedFs, source: &str) -> Self {
        Vfs {
            mounts: alloc::vec![Some(Mount {
                path: String::from("/"),
                source: String::from(source),
                fs: root,
                gen: 0,
            })],
            next_gen: 1,
            cwd: String::from("/"),
            memory_low: || false,
            refused: 0,
        }
    }

    /// Sets what says memory is low. From then on, an operation that can grow the
    /// filesystems' memory (listing a directory, writing, creating, renaming) first
    /// asks; when memory is low every mount shrinks ([`FileSystem::shrink`]), and if
    /// memory is still low the operation fails with ENOMEM before it changes
    /// anything. Removing files is never refused: it is how room is made.
    pub fn set_memory_low(&mut self, f: MemoryLow) {
        self.memory_low = f;
    }

    /// Operations refused with ENOMEM so far.
    pub fn refused_for_memory(&self) -> u64 {
        self.refused
    }

    /// Every mount gives back what memory it can (see [`FileSystem::shrink`]);
    /// returns the first write-out error.
    pub fn shrink_all(&mut self) -> Result<(), FsError> {
        let mut r = Ok(());
        for m in self.mounts.iter_mut().flatten() {
            if let Err(e) = m.fs.shrink() {
                if r.is_ok() {
                    r = Err(e);
                }
            }
        }
        r
    }

    /// [`Vfs::fs`] for an operation that may grow memory: shrinks the mounts when
    /// memory is low, and refuses (ENOMEM) if it stays low.
    fn fs_room(&mut self, h: Handle) -> Result<&mut BoxedFs, FsError> {
        if (self.memory_low)() {
            // A write-out error here is not this operation's: the file it belongs
            // to reports it at its next fsync (errseq), as Linux's writeback does.
            let _ = self.shrink_all();
            if (self.memory_low)() {
                self.refused += 1;
                return Err(FsError::NoMemory);
            }
        }
        self.fs(h)
    }

    /// The working directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// Changes the working directory (`cd`).
    pub fn chdir(&mut self, path: &str) -> Result<(), FsError> {
        let (abs, h) = self.resolve_full(path, true)?;
        if self.stat(h)?.kind != FileType::Dir {
            return Err(FsError::NotDir);
        }
        self.cwd = abs;
        Ok(())
    }

    /// The absolute, normalised form of `path`.
    pub fn absolute(&self, path: &str) -> String {
        normalize(&self.cwd, path)
    }

    /// The mount whose point is the longest prefix of normalised `abs`.
    fn mount_for(&self, abs: &str) -> usize {
        let mut best = 0;
        let mut best_len = 0;
        for (i, m) in self.mounts.iter().enumerate() {
            if let Some(m) = m {
                if is_under(abs, &m.path) && m.path.len() >= best_len {
                    best = i;
                    best_len = m.path.len();
                }
            }
        }
        best
    }

    fn fs(&mut self, h: Handle) -> Result<&mut BoxedFs, FsError> {
        match self.mounts.get_mut(h.mount) {
            Some(Some(m)) if m.gen == h.gen => Ok(&mut m.fs),
            _ => Err(FsError::NotFound),
        }
    }

    /// Resolves `path` to a handle, following symbolic links (the last one too if
    /// `follow`). Returns the resolved absolute path with it.
    fn resolve_full(&mut self, path: &str, follow: bool) -> Result<(String, Handle), FsError> {
        let mut abs = self.absolute(path);
        let mut links = 0;
        'restart: loop {
            // Linux's PATH_MAX, and a depth bound: a directory cycle on a hostile
            // disk (a hard-linked directory) makes `rm -r`/`cp -r` paths grow
            // without end, and their walks hold every level's path.
            if abs.len() > PATH_MAX || components(&abs).count() > MAX_DEPTH {
                return Err(FsError::NameTooLong);
            }
            let mi = self.mount_for(&abs);
            let (mpath, gen) = match &self.mounts[mi] {
                Some(m) => (m.path.clone(), m.gen),
                None => return Err(FsError::NotFound),
            };
            let rel = if mpath == "/" {
                &abs[..]
            } else {
                &abs[mpath.len()..]
            };
            let comps: Vec<String> = components(rel).map(String::from).collect();
            let fs = match &mut self.mounts[mi] {
                Some(m) => &mut m.fs,
                None => return Err(FsError::NotFound),
            };
            let mut ino = fs.root();
            let mut walked = mpath.clone();
            for (i, c) in comps.iter().enumerate() {
                let next = fs.lookup(ino, c)?;
                let last = i + 1 == comps.len();
                if (!last || follow) && fs.stat(next)?.kind == FileType::Symlink {
                    links += 1;
                    if links > MAX_SYMLINKS {
                        return Err(FsError::Invalid("too many levels of symbolic links"));
                    }
                    let target = read_link_of(fs, next)?;
                    let rest: Vec<&str> = comps[i + 1..].iter().map(String::as_str).collect();
                    let joined = normalize(&walked, &target);
                    abs = normalize(&joined, &rest.join("/"));
                    continue 'restart;
                }
                if !walked.ends_with('/') {
                    walked.push('/');
                }
                walked.push_str(c);
                ino = next;
            }
            return Ok((
                abs,
                Handle {
                    mount: mi,
                    gen,
                    ino,
                },
            ));
        }
    }

    /// The file at `path`, following symbolic links.
    pub fn resolve(&mut self, path: &str) -> Result<Handle, FsError> {
        self.resolve_full(path, true).map(|(_, h)| h)
    }

    /// The file at `path`, not following a final symbolic link (`lstat`).
    pub fn resolve_nofollow(&mut self, path: &str) -> Result<Handle, FsError> {
        self.resolve_full(path, false).map(|(_, h)| h)
    }

    /// The directory that holds `path`'s last component, and that component.
    fn parent(&mut self, path: &str) -> Result<(Handle, String), FsError> {
        let abs = self.absolute(path);
        if abs == "/" {
            return Err(FsError::Busy);
        }
        let (dir, name) = abs.rsplit_once('/').unwrap_or(("", &abs));
        let dir = if dir.is_empty() { "/" } else { dir };
        check_name(name)?;
        if self.mounts.iter().flatten().any(|m| m.path == abs) {
            return Err(FsError::Busy);
        }
        let h = self.resolve(dir)?;
        Ok((h, String::from(name)))
    }

    /// `stat` by handle.
    pub fn stat(&mut self, h: Handle) -> Result<Stat, FsError> {
        self.fs(h)?.stat(h.ino)
    }

    /// Lists a directory, sorted by name (in place: a stable sort would take a buffer
    /// of half the listing again, and names in a directory are unique anyway).
    pub fn read_dir(&mut self, h: Handle) -> Result<Vec<DirEntry>, FsError> {
        let mut v = self.fs_room(h)?.read_dir(h.ino)?;
        v.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(v)
    }

    /// Reads at `offset`.
    pub fn read(&mut self, h: Handle, offset: u64, buf: &mut [u8]) -> Result<usize, FsError> {
        self.fs(h)?.read(h.ino, offset, buf)
    }

    /// Writes at `offset`.
    pub fn write(&mut self, h: Handle, offset: u64, data: &[u8]) -> Result<usize, FsError> {
        self.fs_room(h)?.write(h.ino, offset, data)
    }

    /// Sets the size.
    pub fn truncate(&mut self, h: Handle, size: u64) -> Result<(), FsError> {
        self.fs_room(h)?.truncate(h.ino, size)
    }

    /// Writes back one file and flushes its device.
    pub fn fsync(&mut self, h: Handle) -> Result<(), FsError> {
        self.fs(h)?.fsync(h.ino)
    }

    /// Sets the times.
    pub fn set_times(&mut self, h: Handle, atime: i64, mtime: i64) -> Result<(), FsError> {
        self.fs(h)?.set_times(h.ino, atime, mtime)
    }

    /// The target of the symbolic link at `path`.
    pub fn read_link(&mut self, path: &str) -> Result<String, FsError> {
        let h = self.resolve_nofollow(path)?;
        let fs = self.fs(h)?;
        if fs.stat(h.ino)?.kind != FileType::Symlink {
            return Err(FsError::Invalid("not a symbolic link"));
        }
        read_link_of(fs, h.ino)
    }

    /// Opens `path` for writing: creates it (mode 0644) if missing, empties it if
    /// `truncate`. Fails on directories.
    pub fn open_write(&mut self, path: &str, truncate: bool) -> Result<Handle, FsError> {
        let h = match self.resolve(path) {
            Ok(h) => h,
            Err(FsError::NotFound) => {
                let (dir, name) = self.parent(path)?;
                let ino = self.fs_room(dir)?.create(dir.ino, &name, 0o644)?;
                return Ok(Handle { ino, ..dir });
            }
            Err(e) => return Err(e),
        };
        match self.stat(h)?.kind {
            FileType::Dir => return Err(FsError::IsDir),
            FileType::File => {}
            _ => return Err(FsError::Invalid("not a regular file")),
        }
        if truncate {
            self.truncate(h, 0)?;
        }
        Ok(h)
    }

    /// Creates an empty file (fails if it exists).
    pub fn create(&mut self, path: &str, perm: u16) -> Result<Handle, FsError> {
        let (dir, name) = self.parent(path)?;
        let ino = self.fs_room(dir)?.create(dir.ino, &name, perm)?;
        Ok(Handle { ino, ..dir })
    }

    /// `mkdir`.
    pub fn mkdir(&mut self, path: &str, perm: u16) -> Result<Handle, FsError> {
        let (dir, name) = self.parent(path)?;
        let ino = self.fs_room(dir)?.mkdir(dir.ino, &name, perm)?;
        Ok(Handle { ino, ..dir })
    }

    /// `unlink`.
    pub fn unlink(&mut self, path: &str) -> Result<(), FsError> {
        let (dir, name) = self.parent(path)?;
        self.fs(dir)?.unlink(dir.ino, &name)
    }

    /// `rmdir`.
    pub fn rmdir(&mut self, path: &str) -> Result<(), FsError> {
        let (dir, name) = self.parent(path)?;
        self.fs(dir)?.rmdir(dir.ino, &name)
    }

    /// `rename` within one filesystem (EXDEV across filesystems).
    ///
    /// A mount point, or a directory with a mount below it, is busy (EBUSY): the
    /// mount table holds paths, and the mount would be left at the old one.
    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), FsError> {
        let (fd, fname) = self.parent(from)?;
        let (td, tname) = self.parent(to)?;
        if fd.mount != td.mount {
            return Err(FsError::CrossDevice);
        }
        let (af, at) = (self.absolute(from), self.absolute(to));
        if self
            .mounts
            .iter()
            .flatten()
            .any(|m| m.path != "/" && (is_under(&m.path, &af) || m.path == at))
        {
            return Err(FsError::Busy);
        }
        self.fs_room(fd)?.rename(fd.ino, &fname, td.ino, &tname)
    }

    /// `statfs` of the filesystem holding `h`.
    pub fn statfs(&mut self, h: Handle) -> Result<StatFs, FsError> {
        self.fs(h)?.statfs()
    }

    /// Whether the filesystem holding `h` is read-only.
    pub fn read_only(&mut self, h: Handle) -> Result<bool, FsError> {
        Ok(self.fs(h)?.read_only())
    }

    /// Mounts `fs` on the directory `path` (or replaces the root's tmpfs with it if
    /// `path` is `/` and nothing else is mounted).
    pub fn mount(&mut self, path: &str, source: &str, fs: BoxedFs) -> Result<(), FsError> {
        let abs = self.absolute(path);
        if self
            .mounts
            .iter()
            .flatten()
            .any(|m| m.source == source && source.starts_with("/dev/"))
        {
            return Err(FsError::Busy);
        }
        if abs == "/" {
            if self.mounts.iter().flatten().count() > 1 {
                return Err(FsError::Busy);
            }
            let gen = self.next_gen;
            self.next_gen += 1;
            let old = self.mounts[0].replace(Mount {
                path: abs,
                source: String::from(source),
                fs,
                gen,
            });
            if let Some(mut old) = old {
                let _ = old.fs.unmount();
            }
            return Ok(());
        }
        if self.mounts.iter().flatten().any(|m| m.path == abs) {
            return Err(FsError::Busy);
        }
        let h = self.resolve(&abs)?;
        if self.stat(h)?.kind != FileType::Dir {
            return Err(FsError::NotDir);
        }
        let gen = self.next_gen;
        self.next_gen += 1;
        let m = Mount {
            path: abs,
            source: String::from(source),
            fs,
            gen,
        };
        match self.mounts.iter().position(Option::is_none) {
            Some(i) => self.mounts[i] = Some(m),
            None => self.mounts.push(Some(m)),
        }
        Ok(())
    }

    /// Unmounts the filesystem mounted at `target` (a mount point or its source
    /// device): syncs it and marks it clean. EBUSY if something is mounted below it.
    /// The root cannot be unmounted.
    pub fn umount(&mut self, target: &str) -> Result<BoxedFs, FsError> {
        self.umount_with(target, false)
    }

    /// Unmounts without writing anything back (`umount -f`): for a filesystem whose
    /// device has gone, whose unsynced changes cannot be saved anyway.
    pub fn umount_force(&mut self, target: &str) -> Result<BoxedFs, FsError> {
        self.umount_with(target, true)
    }

    fn umount_with(&mut self, target: &str, force: bool) -> Result<BoxedFs, FsError> {
        let abs = self.absolute(target);
        let i = self
            .mounts
            .iter()
            .position(|m| matches!(m, Some(m) if m.path == abs || m.source == target))
            .ok_or(FsError::Invalid("not mounted"))?;
        if i == 0 {
            return Err(FsError::Busy);
        }
        let path = self.mounts[i]
            .as_ref()
            .map(|m| m.path.clone())
            .unwrap_or_default();
        if self
            .mounts
            .iter()
            .flatten()
            .any(|m| m.path != path && is_under(&m.path, &path))
        {
            return Err(FsError::Busy);
        }
        let mut m = self.mounts[i].take().ok_or(FsError::NotFound)?;
        if force {
            // Nothing is written; the filesystem is dropped as it is.
        } else if let Err(e) = m.fs.unmount() {
            // Keep it mounted: nothing is lost, the user can retry or look.
            self.mounts[i] = Some(m);
            return Err(e);
        }
        if is_under(&self.cwd, &path) {
            self.cwd = path.rsplit_once('/').map(|(d, _)| d).unwrap_or("/").into();
            if self.cwd.is_empty() {
                self.cwd = String::from("/");
            }
        }
        Ok(m.fs)
    }

    /// The mount table, in mount order.
    pub fn mounts(&self) -> Vec<MountInfo> {
        self.mounts
            .iter()
            .flatten()
            .map(|m| MountInfo {
                source: m.source.clone(),
                path: m.path.clone(),
                kind: m.fs.kind(),
                read_only: m.fs.read_only(),
                error: m.fs.error(),
            })
            .collect()
    }

    /// `statfs` of the filesystem mounted at exactly `path`.
    pub fn statfs_at(&mut self, path: &str) -> Result<StatFs, FsError> {
        let m = self
            .mounts
            .iter_mut()
            .flatten()
            .find(|m| m.path == path)
            .ok_or(FsError::NotFound)?;
        m.fs.statfs()
    }

    /// Syncs every filesystem; returns the first error (after trying them all).
    pub fn sync_all(&mut self) -> Result<(), FsError> {
        match self.sync_each().into_iter().next() {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    /// Syncs every filesystem; returns each error with its mount point (a writeback
    /// error is reported once, so every one is worth saying).
    pub fn sync_each(&mut self) -> Vec<(String, FsError)> {
        let mut failed = Vec::new();
        for m in self.mounts.iter_mut().flatten() {
            if let Err(e) = m.fs.sync() {
                failed.push((m.path.clone(), e));
            }
        }
        failed
    }

    /// Unmounts everything but the root, innermost first, and syncs and marks clean
    /// the root (for power-off). Returns what failed, by mount point.
    pub fn unmount_all(&mut self) -> Vec<(String, FsError)> {
        let mut failed = Vec::new();
        let mut order: Vec<usize> = (1..self.mounts.len())
            .filter(|&i| self.mounts[i].is_some())
            .collect();
        order.sort_by_key(|&i| {
            core::cmp::Reverse(self.mounts[i].as_ref().map_or(0, |m| m.path.len()))
        });
        for i in order.into_iter().chain(core::iter::once(0)) {
            if let Some(m) = self.mounts[i].as_mut() {
                if let Err(e) = m.fs.unmount() {
                    // A writeback error no sync had reported fails an unmount once
                    // (ext/wberr.rs): reported here, and the second try marks the
                    // filesystem clean.
                    if matches!(e, FsError::Io(_)) {
                        let _ = m.fs.unmount();
                    }
                    failed.push((m.path.clone(), e));
                }
            }
            if i != 0 {
                self.mounts[i] = None;
            }
        }
        failed
    }

    /// Reads a whole (small) file.
    pub fn read_to_vec(&mut self, path: &str, limit: usize) -> Result<Vec<u8>, FsError> {
        let h = self.resolve(path)?;
        let st = self.stat(h)?;
        if st.kind == FileType::Dir {
            return Err(FsError::IsDir);
        }
        if st.size > limit as u64 {
            return Err(FsError::TooBig);
        }
        // Fallible: `limit` is the caller's bound, not a promise the heap can keep.
        let mut v = Vec::new();
        v.try_reserve_exact(st.size as usize)
            .map_err(|_| FsError::NoMemory)?;
        v.resize(st.size as usize, 0);
        let mut done = 0;
        while done < v.len() {
            let n = self.read(h, done as u64, &mut v[done..])?;
            if n == 0 {
                break;
            }
            done += n;
        }
        v.truncate(done);
        Ok(v)
    }

    /// Replaces the file at `path` with `data` atomically: writes the hidden
    /// `.NAME.tmp-xenlet` beside it (hidden so that `uci`, which skips dot files, never
    /// takes a half-written one for a package), syncs it, renames it over `path`, and
    /// syncs again, so a crash leaves the old file or the new one (and perhaps the
    /// temporary file, which [`Vfs::remove_stale_temps`] clears at boot).
    pub fn write_atomic(&mut self, path: &str, data: &[u8]) -> Result<(), FsError> {
        let abs = self.absolute(path);
        let tmp = match abs.rsplit_once('/') {
            Some((dir, name)) if !name.is_empty() => {
                alloc::format!("{dir}/.{name}{TEMP_SUFFIX}")
            }
            _ => return Err(FsError::Invalid("no file name to replace")),
        };
        let h = self.open_write(&tmp, true)?;
        let r = (|| {
            let mut done = 0;
            while done < data.len() {
                done += self.write(h, done as u64, &data[done..])?;
            }
            self.fsync(h)?;
            self.rename(&tmp, &abs)?;
            self.fsync(h)
        })();
        if r.is_err() {
            let _ = self.unlink(&tmp);
        }
        r
    }

    /// Removes the temporary files [`Vfs::write_atomic`] leaves in `dir` when it is
    /// cut off (a crash before its rename); returns their names. The replaced files
    /// themselves are whole, old or new.
    pub fn remove_stale_temps(&mut self, dir: &str) -> Result<Vec<String>, FsError> {
        let h = self.resolve(dir)?;
        let mut gone = Vec::new();
        for e in self.read_dir(h)? {
            if e.name.starts_with('.') && e.name.ends_with(TEMP_SUFFIX) {
                let path = alloc::format!("{}/{}", dir.trim_end_matches('/'), e.name);
                self.unlink(&path)?;
                gone.push(e.name);
            }
        }
        Ok(gone)
    }
}

/// Longest path resolved (bytes), as Linux's PATH_MAX.
pub const PATH_MAX: usize = 4096;
/// Most components in a path resolved.
pub const MAX_DEPTH: usize = 256;

/// What [`Vfs::write_atomic`] appends to the hidden name of its temporary file.
const TEMP_SUFFIX: &str = ".tmp-xenlet";

fn read_link_of(fs: &mut BoxedFs, ino: Ino) -> Result<String, FsError> {
    let size = fs.stat(ino)?.size;
    if size > 4096 {
        return Err(FsError::Corrupt(String::from(
            "symbolic link longer than 4096 bytes",
        )));
    }
    let mut buf = alloc::vec![0u8; size as usize];
    let n = fs.read(ino, 0, &mut buf)?;
    buf.truncate(n);
    String::from_utf8(buf).map_err(|_| FsError::Invalid("symbolic link is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memfs::MemFs;

    fn tmpfs() -> BoxedFs {
        Box::new(MemFs::new(1 << 20, || 0))
    }

    /// The names in directory `dir`, in the order it lists them.
    fn names(v: &mut Vfs, dir: &str) -> Vec<String> {
        let ino = v.resolve(dir).unwrap();
        v.read_dir(ino)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect()
    }

    #[test]
    fn normalize_paths() {
        assert_eq!(normalize("/", "a/b/../c/./d"), "/a/c/d");
        assert_eq!(normalize("/x/y", ".."), "/x");
        assert_eq!(normalize("/x", "/../../"), "/");
        assert_eq!(normalize("/x", "y//z/"), "/x/y/z");
        assert!(
            is_under("/mnt/a", "/mnt") && !is_under("/mntx", "/mnt") && is_under("/mnt", "/mnt")
        );
    }

    #[test]
    fn mounts_shadow_and_unmount() {
        let mut v = Vfs::new(tmpfs(), "tmpfs");
        v.mkdir("/mnt", 0o755).unwrap();
        let h = v.open_write("/mnt/under", true).unwrap();
        v.write(h, 0, b"hidden").unwrap();
        v.mount("/mnt", "/dev/xvdb", tmpfs()).unwrap();
        assert_eq!(
            v.resolve("/mnt/under"),
            Err(FsError::NotFound),
            "covered by the mount"
        );
        v.open_write("/mnt/new", true).unwrap();
        assert_eq!(v.rename("/mnt/new", "/new"), Err(FsError::CrossDevice));
        assert_eq!(v.rmdir("/mnt"), Err(FsError::Busy));
        assert_eq!(v.mount("/mnt", "/dev/xvdc", tmpfs()), Err(FsError::Busy));
        v.mkdir("/other", 0o755).unwrap();
        assert_eq!(
            v.mount("/other", "/dev/xvdb", tmpfs()),
            Err(FsError::Busy),
            "device already mounted"
        );
        v.mkdir("/mnt/inner", 0o755).unwrap();
        v.mount("/mnt/inner", "tmpfs", tmpfs()).unwrap();
        assert_eq!(v.umount("/mnt").err(), Some(FsError::Busy));
        v.umount("/mnt/inner").unwrap();
        v.chdir("/mnt").unwrap();
        v.umount("/dev/xvdb").unwrap();
        assert_eq!(v.cwd(), "/");
        v.mount("/mnt", "/dev/xvdb", tmpfs()).unwrap();
        assert!(v.umount_force("/mnt").is_ok());
        assert_eq!(
            v.umount("/mnt").err(),
            Some(FsError::Invalid("not mounted"))
        );
        assert_eq!(v.read_to_vec("/mnt/under", 100).unwrap(), b"hidden");
        assert_eq!(v.umount("/").err(), Some(FsError::Busy), "the root stays");
    }

    #[test]
    fn paths_are_bounded_in_length_and_depth() {
        let mut v = Vfs::new(tmpfs(), "tmpfs");
        let mut p = String::new();
        for _ in 0..MAX_DEPTH {
            p.push_str("/d");
            v.mkdir(&p, 0o755).unwrap();
        }
        assert!(v.resolve(&p).is_ok(), "{MAX_DEPTH} levels");
        // One more level can be made in the deepest directory, and no more: its
        // path resolves no longer, nor anything below it.
        p.push_str("/d");
        v.mkdir(&p, 0o755).unwrap();
        assert_eq!(v.resolve(&p).err(), Some(FsError::NameTooLong));
        p.push_str("/d");
        assert_eq!(v.mkdir(&p, 0o755).err(), Some(FsError::NameTooLong));
        let long = alloc::format!("/{}", "x/".repeat(PATH_MAX / 2));
        assert_eq!(v.resolve(&long).err(), Some(FsError::NameTooLong));
        // through a symbolic link too: the bound is on the path walked
        assert_eq!(v.resolve("/d/d/d").map(|_| ()), Ok(()));
    }

    #[test]
    fn a_mount_point_or_a_directory_above_one_is_not_renamed() {
        let mut v = Vfs::new(tmpfs(), "tmpfs");
        v.mkdir("/a", 0o755).unwrap();
        v.mkdir("/a/m", 0o755).unwrap();
        v.mkdir("/c", 0o755).unwrap();
        v.mount("/a/m", "tmpfs", tmpfs()).unwrap();
        assert_eq!(v.rename("/a", "/b"), Err(FsError::Busy));
        assert_eq!(v.rename("/a/m", "/a/n"), Err(FsError::Busy));
        assert_eq!(v.rename("/c", "/a/m"), Err(FsError::Busy));
        // the mount is where it was; other renames go on
        assert!(v.resolve("/a/m").is_ok());
        v.rename("/c", "/d").unwrap();
        assert!(v.resolve("/d").is_ok());
    }

    #[test]
    fn stale_handles_fail_after_unmount() {
        let mut v = Vfs::new(tmpfs(), "tmpfs");
        v.mkdir("/m", 0o755).unwrap();
        v.mount("/m", "tmpfs", tmpfs()).unwrap();
        let h = v.open_write("/m/f", true).unwrap();
        v.umount("/m").unwrap();
        v.mount("/m", "tmpfs", tmpfs()).unwrap();
        assert_eq!(v.write(h, 0, b"x"), Err(FsError::NotFound));
    }

    #[test]
    fn symlinks_are_followed_and_loops_stop() {
        let mut v = Vfs::new(tmpfs(), "tmpfs");
        v.mkdir("/etc", 0o755).unwrap();
        v.mkdir("/etc/config", 0o755).unwrap();
        let h = v.open_write("/etc/config/network", true).unwrap();
        v.write(h, 0, b"config interface 'lan'\n").unwrap();
        // A memfs symlink through the FileSystem trait is not available: use MemFs directly.
        let mut m = MemFs::new(1 << 20, || 0);
        let root = m.root();
        m.symlink(root, "loop", "loop").unwrap();
        let d = m.mkdir(root, "d", 0o755).unwrap();
        m.symlink(d, "up", "../target").unwrap();
        let t = m.create(root, "target", 0o644).unwrap();
        m.write(t, 0, b"T").unwrap();
        m.symlink(root, "abs", "/etc/config").unwrap();
        v.mkdir("/l", 0o755).unwrap();
        v.mount("/l", "tmpfs", Box::new(m)).unwrap();
        assert_eq!(v.read_to_vec("/l/d/up", 10).unwrap(), b"T");
        assert_eq!(v.read_link("/l/d/up").unwrap(), "../target");
        assert_eq!(
            v.read_to_vec("/l/abs/network", 100).unwrap(),
            b"config interface 'lan'\n",
            "absolute links leave the mount"
        );
        assert_eq!(
            v.resolve("/l/loop").err(),
            Some(FsError::Invalid("too many levels of symbolic links"))
        );
        assert!(v.resolve_nofollow("/l/loop").is_ok());
    }

    #[test]
    fn atomic_replace_leaves_no_temp() {
        let mut v = Vfs::new(tmpfs(), "tmpfs");
        v.write_atomic("/cfg", b"one").unwrap();
        v.write_atomic("/cfg", b"two!").unwrap();
        assert_eq!(v.read_to_vec("/cfg", 100).unwrap(), b"two!");
        assert_eq!(names(&mut v, "/"), ["cfg"]);
        assert_eq!(v.open_write("/", true).err(), Some(FsError::IsDir));
    }

    #[test]
    fn a_cut_off_replace_leaves_a_hidden_temp_that_boot_removes() {
        let mut v = Vfs::new(tmpfs(), "tmpfs");
        v.mkdir("/etc", 0o755).unwrap();
        v.write_atomic("/etc/network", b"old").unwrap();
        // what a crash before the rename leaves: the temporary file, half written
        let h = v.open_write("/etc/.network.tmp-xenlet", true).unwrap();
        v.write(h, 0, b"ne").unwrap();
        v.write_atomic("/etc/keep.tmp-xenlet", b"not ours: not hidden")
            .unwrap();
        assert_eq!(
            v.remove_stale_temps("/etc").unwrap(),
            [".network.tmp-xenlet"]
        );
        let mut listed = names(&mut v, "/etc");
        listed.sort();
        assert_eq!(listed, ["keep.tmp-xenlet", "network"]);
        assert_eq!(v.read_to_vec("/etc/network", 100).unwrap(), b"old");
        assert_eq!(
            v.write_atomic("/", b"x").err(),
            Some(FsError::Invalid("no file name to replace"))
        );
    }
}
