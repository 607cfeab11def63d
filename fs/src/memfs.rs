//! An in-memory filesystem (`tmpfs`): the root `/` before a disk is mounted there,
//! and `/tmp`. Its size is capped at creation, so filling it gives ENOSPC instead of
//! exhausting the kernel heap: a file is charged for the buffer it holds (its
//! capacity, not its length), which grows fallibly by an eighth at a time
//! (`grown_capacity`), not by doubling.

use crate::error::FsError;
use crate::types::{DirEntry, FileSystem, FileType, Ino, Stat, StatFs};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

const ROOT: Ino = 1;
/// Bytes a name or an inode is charged against the size cap, besides its data.
const OVERHEAD: u64 = 128;
/// Longest name, as ext4's.
pub const NAME_MAX: usize = 255;
/// The least a file's buffer grows by, once it has one.
const GROW_MIN: usize = 256;

/// The capacity a file's buffer of capacity `cap` takes to hold `end` bytes: `end`
/// for the first write (most files are written at once), then `end` or an eighth
/// more than it had (at least [`GROW_MIN`]) if that is more, so that a file written
/// in small pieces is copied a bounded number of times, with at most an eighth
/// unused (doubling left up to half of a buffer unused and uncharged).
fn grown_capacity(cap: usize, end: usize) -> usize {
    if cap == 0 {
        return end;
    }
    end.max(cap.saturating_add((cap / 8).max(GROW_MIN)))
}

enum Body {
    File(Vec<u8>),
    Dir(BTreeMap<String, Ino>),
    Symlink(String),
}

struct Node {
    body: Body,
    mode: u16,
    nlink: u32,
    /// Parent directory (directories only; the root is its own parent).
    parent: Ino,
    atime: i64,
    mtime: i64,
    ctime: i64,
}

impl Node {
    fn kind(&self) -> FileType {
        match self.body {
            Body::File(_) => FileType::File,
            Body::Dir(_) => FileType::Dir,
            Body::Symlink(_) => FileType::Symlink,
        }
    }
}

/// An in-memory filesystem.
pub struct MemFs {
    nodes: BTreeMap<Ino, Node>,
    next: Ino,
    used: u64,
    limit: u64,
    now: fn() -> i64,
}

/// Checks a single path component.
pub fn check_name(name: &str) -> Result<(), FsError> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(FsError::Invalid("bad file name"));
    }
    if name.len() > NAME_MAX {
        return Err(FsError::NameTooLong);
    }
    Ok(())
}

impl MemFs {
    /// An empty filesystem holding at most `limit` bytes (data plus a small charge per
    /// inode and name); `now` gives the time stamps.
    pub fn new(limit: u64, now: fn() -> i64) -> Self {
        let t = now();
        let mut nodes = BTreeMap::new();
        nodes.insert(
            ROOT,
            Node {
                body: Body::Dir(BTreeMap::new()),
                mode: 0o040755,
                nlink: 2,
                parent: ROOT,
                atime: t,
                mtime: t,
                ctime: t,
            },
        );
        MemFs {
            nodes,
            next: ROOT + 1,
            used: OVERHEAD,
            limit,
            now,
        }
    }

    fn node(&self, ino: Ino) -> Result<&Node, FsError> {
        self.nodes.get(&ino).ok_or(FsError::NotFound)
    }

    fn node_mut(&mut self, ino: Ino) -> Result<&mut Node, FsError> {
        self.nodes.get_mut(&ino).ok_or(FsError::NotFound)
    }

    fn dir(&self, ino: Ino) -> Result<&BTreeMap<String, Ino>, FsError> {
        match &self.node(ino)?.body {
            Body::Dir(d) => Ok(d),
            _ => Err(FsError::NotDir),
        }
    }

    fn dir_mut(&mut self, ino: Ino) -> Result<&mut BTreeMap<String, Ino>, FsError> {
        match &mut self.node_mut(ino)?.body {
            Body::Dir(d) => Ok(d),
            _ => Err(FsError::NotDir),
        }
    }

    fn charge(&mut self, bytes: u64) -> Result<(), FsError> {
        let after = self.used.checked_add(bytes).ok_or(FsError::NoSpace)?;
        if after > self.limit {
            return Err(FsError::NoSpace);
        }
        self.used = after;
        Ok(())
    }

    fn refund(&mut self, bytes: u64) {
        self.used = self.used.saturating_sub(bytes);
    }

    /// Grows file `ino`'s buffer from capacity `cap` to `want`, charged in full
    /// first: [`FsError::NoSpace`] past the limit or when the heap refuses (nothing
    /// changed then).
    fn grow_file(&mut self, ino: Ino, cap: usize, want: usize) -> Result<(), FsError> {
        self.charge((want - cap) as u64)?;
        let got = match &mut self.node_mut(ino)?.body {
            Body::File(d) => d.try_reserve_exact(want - d.len()).map(|()| d.capacity()),
            _ => Ok(cap),
        };
        match got {
            Ok(c) => {
                // The allocator may give more than asked: that is charged too.
                self.used += c.saturating_sub(want) as u64;
                Ok(())
            }
            Err(_) => {
                self.refund((want - cap) as u64);
                Err(FsError::NoSpace)
            }
        }
    }

    fn touch_dir(&mut self, dir: Ino) {
        let t = (self.now)();
        if let Ok(n) = self.node_mut(dir) {
            n.mtime = t;
            n.ctime = t;
        }
    }

    /// Adds entry `name` to `dir` for a new node holding `body`, with permission bits
    /// `perm` (its mode's type bits follow from `body`).
    fn add(&mut self, dir: Ino, name: &str, body: Body, perm: u16) -> Result<Ino, FsError> {
        check_name(name)?;
        if self.dir(dir)?.contains_key(name) {
            return Err(FsError::Exists);
        }
        self.charge(OVERHEAD + name.len() as u64)?;
        let ino = self.next;
        self.next += 1;
        let t = (self.now)();
        let is_dir = matches!(body, Body::Dir(_));
        let kind = match body {
            Body::File(_) => 0o100000,
            Body::Dir(_) => 0o040000,
            Body::Symlink(_) => 0o120000,
        };
        self.nodes.insert(
            ino,
            Node {
                body,
                mode: kind | (perm & 0o7777),
                nlink: if is_dir { 2 } else { 1 },
                parent: dir,
                atime: t,
                mtime: t,
                ctime: t,
            },
        );
        self.dir_mut(dir)?.insert(String::from(name), ino);
        if is_dir {
            self.node_mut(dir)?.nlink += 1;
        }
        self.touch_dir(dir);
        Ok(ino)
    }

    /// Creates a symbolic link `name` in `dir` pointing at `target`.
    pub fn symlink(&mut self, dir: Ino, name: &str, target: &str) -> Result<Ino, FsError> {
        self.charge(target.len() as u64)?;
        self.add(dir, name, Body::Symlink(String::from(target)), 0o777)
            .inspect_err(|_| self.refund(target.len() as u64))
    }

    /// Drops one link to `ino`, freeing it with the last.
    fn drop_link(&mut self, ino: Ino, name_len: usize) {
        self.refund(OVERHEAD + name_len as u64);
        let Some(n) = self.nodes.get_mut(&ino) else {
            return;
        };
        n.nlink = n.nlink.saturating_sub(1);
        n.ctime = (self.now)();
        if n.nlink == 0 || matches!(n.body, Body::Dir(_)) {
            if let Some(n) = self.nodes.remove(&ino) {
                let bytes = match &n.body {
                    Body::File(d) => d.capacity() as u64,
                    Body::Symlink(t) => t.len() as u64,
                    Body::Dir(_) => 0,
                };
                self.refund(bytes);
            }
        }
    }

    /// Whether `anc` is `ino` or one of its ancestors.
    fn is_ancestor(&self, anc: Ino, mut ino: Ino) -> bool {
        for _ in 0..self.nodes.len() + 1 {
            if ino == anc {
                return true;
            }
            match self.nodes.get(&ino) {
                Some(n) if n.parent != ino => ino = n.parent,
                _ => return false,
            }
        }
        false
    }
}

impl FileSystem for MemFs {
    fn kind(&self) -> &'static str {
        "tmpfs"
    }
    fn root(&self) -> Ino {
        ROOT
    }
    fn read_only(&self) -> bool {
        false
    }
    fn statfs(&mut self) -> Result<StatFs, FsError> {
        let bs = 4096u64;
        let free = self.limit.saturating_sub(self.used) / bs;
        Ok(StatFs {
            kind: "tmpfs",
            block_size: bs as u32,
            blocks: self.limit / bs,
            free_blocks: free,
            avail_blocks: free,
            inodes: self.nodes.len() as u64 + self.limit.saturating_sub(self.used) / OVERHEAD,
            free_inodes: self.limit.saturating_sub(self.used) / OVERHEAD,
        })
    }
    fn lookup(&mut self, dir: Ino, name: &str) -> Result<Ino, FsError> {
        self.dir(dir)?.get(name).copied().ok_or(FsError::NotFound)
    }
    fn stat(&mut self, ino: Ino) -> Result<Stat, FsError> {
        let n = self.node(ino)?;
        let size = match &n.body {
            Body::File(d) => d.len() as u64,
            Body::Dir(_) => 4096,
            Body::Symlink(t) => t.len() as u64,
        };
        Ok(Stat {
            ino,
            kind: n.kind(),
            mode: n.mode,
            nlink: n.nlink,
            uid: 0,
            gid: 0,
            size,
            blocks: size.div_ceil(512),
            atime: n.atime,
            mtime: n.mtime,
            ctime: n.ctime,
        })
    }
    fn read_dir(&mut self, dir: Ino) -> Result<Vec<DirEntry>, FsError> {
        let d = self.dir(dir)?;
        let mut out = Vec::with_capacity(d.len());
        for (name, &ino) in d {
            let kind = self.node(ino).map(Node::kind).unwrap_or(FileType::Special);
            out.push(DirEntry {
                name: name.clone(),
                ino,
                kind,
            });
        }
        Ok(out)
    }
    fn read(&mut self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize, FsError> {
        let n = self.node(ino)?;
        let data = match &n.body {
            Body::File(d) => d.as_slice(),
            Body::Symlink(t) => t.as_bytes(),
            Body::Dir(_) => return Err(FsError::IsDir),
        };
        let Ok(start) = usize::try_from(offset) else {
            return Ok(0);
        };
        if start >= data.len() {
            return Ok(0);
        }
        let k = buf.len().min(data.len() - start);
        buf[..k].copy_from_slice(&data[start..start + k]);
        Ok(k)
    }
    fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize, FsError> {
        let cap = match &self.node(ino)?.body {
            Body::File(d) => d.capacity(),
            Body::Dir(_) => return Err(FsError::IsDir),
            Body::Symlink(_) => return Err(FsError::Invalid("not a regular file")),
        };
        let start = usize::try_from(offset).map_err(|_| FsError::TooBig)?;
        let end = start.checked_add(data.len()).ok_or(FsError::TooBig)?;
        if end > cap {
            // Room to grow by an eighth if the limit and the heap allow, else for
            // exactly this write.
            let want = grown_capacity(cap, end);
            if self.grow_file(ino, cap, want).is_err() {
                self.grow_file(ino, cap, end)?;
            }
        }
        let t = (self.now)();
        let n = self.node_mut(ino)?;
        if let Body::File(d) = &mut n.body {
            if end > d.len() {
                d.resize(end, 0);
            }
            d[start..end].copy_from_slice(data);
        }
        n.mtime = t;
        n.ctime = t;
        Ok(data.len())
    }
    fn truncate(&mut self, ino: Ino, size: u64) -> Result<(), FsError> {
        let (len, cap) = match &self.node(ino)?.body {
            Body::File(d) => (d.len(), d.capacity()),
            Body::Dir(_) => return Err(FsError::IsDir),
            Body::Symlink(_) => return Err(FsError::Invalid("not a regular file")),
        };
        let size = usize::try_from(size).map_err(|_| FsError::TooBig)?;
        if size > cap {
            self.grow_file(ino, cap, size)?;
        }
        let mut freed = 0;
        let t = (self.now)();
        let n = self.node_mut(ino)?;
        if let Body::File(d) = &mut n.body {
            d.resize(size, 0);
            if size == 0 {
                *d = Vec::new();
                freed = cap;
            } else if size < len && size <= cap / 2 {
                // Give most of the buffer back: a smaller copy, if the heap has one
                // (`shrink_to_fit` would abort the guest when it has not).
                let mut v = Vec::new();
                if v.try_reserve_exact(size).is_ok() {
                    v.extend_from_slice(d);
                    freed = cap - v.capacity();
                    *d = v;
                }
            }
        }
        n.mtime = t;
        n.ctime = t;
        self.refund(freed as u64);
        Ok(())
    }
    fn create(&mut self, dir: Ino, name: &str, perm: u16) -> Result<Ino, FsError> {
        self.add(dir, name, Body::File(Vec::new()), perm)
    }
    fn mkdir(&mut self, dir: Ino, name: &str, perm: u16) -> Result<Ino, FsError> {
        self.add(dir, name, Body::Dir(BTreeMap::new()), perm)
    }
    fn unlink(&mut self, dir: Ino, name: &str) -> Result<(), FsError> {
        let ino = self.lookup(dir, name)?;
        if self.node(ino)?.kind() == FileType::Dir {
            return Err(FsError::IsDir);
        }
        self.dir_mut(dir)?.remove(name);
        self.touch_dir(dir);
        self.drop_link(ino, name.len());
        Ok(())
    }
    fn rmdir(&mut self, dir: Ino, name: &str) -> Result<(), FsError> {
        let ino = self.lookup(dir, name)?;
        if !self.dir(ino)?.is_empty() {
            return Err(FsError::NotEmpty);
        }
        self.dir_mut(dir)?.remove(name);
        self.node_mut(dir)?.nlink -= 1;
        self.touch_dir(dir);
        self.drop_link(ino, name.len());
        Ok(())
    }
    fn rename(&mut self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<(), FsError> {
        check_name(to)?;
        let ino = self.lookup(from_dir, from)?;
        self.dir(to_dir)?;
        let moving_dir = self.node(ino)?.kind() == FileType::Dir;
        if moving_dir && self.is_ancestor(ino, to_dir) {
            return Err(FsError::Invalid("cannot move a directory into itself"));
        }
        if let Ok(old) = self.lookup(to_dir, to) {
            if old == ino {
                return Ok(());
            }
            let old_is_dir = self.node(old)?.kind() == FileType::Dir;
            match (moving_dir, old_is_dir) {
                (true, false) => return Err(FsError::NotDir),
                (false, true) => return Err(FsError::IsDir),
                (true, true) if !self.dir(old)?.is_empty() => return Err(FsError::NotEmpty),
                _ => {}
            }
            self.dir_mut(to_dir)?.remove(to);
            if old_is_dir {
                self.node_mut(to_dir)?.nlink -= 1;
            }
            // Freeing the old entry makes room for the longer name, so this cannot fail.
            self.drop_link(old, to.len());
            self.used = self.used + to.len() as u64 - from.len() as u64;
        } else if to.len() > from.len() {
            self.charge((to.len() - from.len()) as u64)?;
        } else {
            self.refund((from.len() - to.len()) as u64);
        }
        self.dir_mut(from_dir)?.remove(from);
        self.dir_mut(to_dir)?.insert(String::from(to), ino);
        if moving_dir && from_dir != to_dir {
            self.node_mut(from_dir)?.nlink -= 1;
            self.node_mut(to_dir)?.nlink += 1;
            self.node_mut(ino)?.parent = to_dir;
        }
        self.touch_dir(from_dir);
        self.touch_dir(to_dir);
        self.node_mut(ino)?.ctime = (self.now)();
        Ok(())
    }
    fn set_times(&mut self, ino: Ino, atime: i64, mtime: i64) -> Result<(), FsError> {
        let t = (self.now)();
        let n = self.node_mut(ino)?;
        n.atime = atime;
        n.mtime = mtime;
        n.ctime = t;
        Ok(())
    }
    fn fsync(&mut self, ino: Ino) -> Result<(), FsError> {
        self.node(ino).map(|_| ())
    }
    fn sync(&mut self) -> Result<(), FsError> {
        Ok(())
    }
    fn unmount(&mut self) -> Result<(), FsError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs() -> MemFs {
        MemFs::new(64 * 1024, || 1_700_000_000)
    }

    #[test]
    fn files_and_directories() {
        let mut m = fs();
        let d = m.mkdir(ROOT, "etc", 0o755).unwrap();
        let f = m.create(d, "hosts", 0o644).unwrap();
        assert_eq!(m.write(f, 0, b"hello").unwrap(), 5);
        assert_eq!(m.write(f, 10, b"x").unwrap(), 1);
        let mut buf = [9u8; 32];
        assert_eq!(m.read(f, 0, &mut buf).unwrap(), 11);
        assert_eq!(&buf[..11], b"hello\0\0\0\0\0x");
        assert_eq!(m.read(f, 11, &mut buf).unwrap(), 0);
        assert_eq!(m.stat(ROOT).unwrap().nlink, 3);
        assert_eq!(m.create(d, "hosts", 0o644), Err(FsError::Exists));
        assert_eq!(m.rmdir(ROOT, "etc"), Err(FsError::NotEmpty));
        assert_eq!(m.unlink(ROOT, "etc"), Err(FsError::IsDir));
        assert_eq!(m.lookup(f, "x"), Err(FsError::NotDir));
        m.unlink(d, "hosts").unwrap();
        m.rmdir(ROOT, "etc").unwrap();
        assert_eq!(m.stat(ROOT).unwrap().nlink, 2);
        assert_eq!(m.used, OVERHEAD, "everything refunded");
    }

    #[test]
    fn full_filesystem_refuses_cleanly() {
        let mut m = MemFs::new(4096, || 0);
        let f = m.create(ROOT, "big", 0o644).unwrap();
        assert_eq!(m.write(f, 0, &[1u8; 8192]), Err(FsError::NoSpace));
        assert_eq!(m.stat(f).unwrap().size, 0, "nothing half-written");
        assert_eq!(m.write(f, u64::MAX, b"x"), Err(FsError::TooBig));
        m.write(f, 0, &[1u8; 1024]).unwrap();
        m.truncate(f, 0).unwrap();
        m.write(f, 0, &[1u8; 2048]).unwrap();
    }

    #[test]
    fn rename_replaces_and_moves_directories() {
        let mut m = fs();
        let a = m.mkdir(ROOT, "a", 0o755).unwrap();
        let b = m.mkdir(ROOT, "b", 0o755).unwrap();
        let f = m.create(a, "new", 0o644).unwrap();
        m.write(f, 0, b"new").unwrap();
        let g = m.create(a, "cfg", 0o644).unwrap();
        m.write(g, 0, b"old").unwrap();
        m.rename(a, "new", a, "cfg").unwrap();
        assert_eq!(m.lookup(a, "cfg").unwrap(), f);
        assert_eq!(m.lookup(a, "new"), Err(FsError::NotFound));
        assert!(m.stat(g).is_err(), "replaced file freed");
        assert_eq!(
            m.rename(ROOT, "a", a, "x"),
            Err(FsError::Invalid("cannot move a directory into itself"))
        );
        m.rename(ROOT, "a", b, "a2").unwrap();
        assert_eq!(m.stat(ROOT).unwrap().nlink, 3);
        assert_eq!(m.stat(b).unwrap().nlink, 3);
        // Onto its own non-empty parent: ENOTEMPTY, as Linux.
        assert_eq!(m.rename(b, "a2", ROOT, "b"), Err(FsError::NotEmpty));
        // A directory replaces an empty directory; the counts follow.
        m.mkdir(ROOT, "c", 0o755).unwrap();
        m.rename(b, "a2", ROOT, "c").unwrap();
        assert_eq!(m.stat(ROOT).unwrap().nlink, 4);
        assert_eq!(m.stat(b).unwrap().nlink, 2);
        let f2 = m.create(ROOT, "f", 0o644).unwrap();
        assert_eq!(m.rename(ROOT, "f", ROOT, "c"), Err(FsError::IsDir));
        assert_eq!(m.rename(ROOT, "c", ROOT, "f"), Err(FsError::NotDir));
        let _ = f2;
        // Everything removed: only the root's charge is left.
        m.unlink(ROOT, "f").unwrap();
        let a2 = m.lookup(ROOT, "c").unwrap();
        m.unlink(a2, "cfg").unwrap();
        m.rmdir(ROOT, "c").unwrap();
        m.rmdir(ROOT, "b").unwrap();
        assert_eq!(m.used, OVERHEAD);
    }

    #[test]
    fn bad_names() {
        let mut m = fs();
        for bad in ["", ".", "..", "a/b"] {
            assert!(m.create(ROOT, bad, 0o644).is_err(), "{bad:?}");
        }
        let long = "x".repeat(256);
        assert_eq!(m.create(ROOT, &long, 0o644), Err(FsError::NameTooLong));
    }

    #[test]
    fn files_are_charged_for_their_buffers() {
        let mut m = MemFs::new(600 << 10, || 0);
        let f = m.create(ROOT, "log", 0o644).unwrap();
        let mut n = 0;
        let err = loop {
            match m.write(f, n as u64, &[7u8; 1000]) {
                Ok(_) => n += 1000,
                Err(e) => break e,
            }
        };
        assert_eq!(err, FsError::NoSpace);
        let Body::File(d) = &m.node(f).unwrap().body else {
            panic!()
        };
        // What is held is what is charged, within the limit; the last eighth's
        // step may not fit, the exact write did until the end.
        assert!(m.used <= m.limit);
        assert_eq!(m.used, OVERHEAD + OVERHEAD + 3 + d.capacity() as u64);
        assert!(n > (600 << 10) - 2000, "{n}");
        // A small file written at once takes what it holds.
        m.truncate(f, 0).unwrap();
        assert_eq!(m.used, 2 * OVERHEAD + 3);
        let g = m.create(ROOT, "small", 0o644).unwrap();
        m.write(g, 0, &[1u8; 100]).unwrap();
        assert_eq!(m.used, 3 * OVERHEAD + 3 + 5 + 100);
        // Shrinking by more than half gives the buffer back.
        m.write(f, 0, &[1u8; 100_000]).unwrap();
        m.truncate(f, 1000).unwrap();
        assert_eq!(m.used, 3 * OVERHEAD + 3 + 5 + 100 + 1000);
        m.unlink(ROOT, "log").unwrap();
        m.unlink(ROOT, "small").unwrap();
        assert_eq!(m.used, OVERHEAD);
    }
}
