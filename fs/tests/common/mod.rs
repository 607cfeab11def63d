//! Shared helpers for the ext tests: a file-backed BlockDev, a write-counting wrapper,
//! an in-memory device that records its writes for crash tests, images built with the real e2fsprogs, e2fsck and debugfs runners, temp dirs.
#![allow(dead_code)]

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use xenlet_fs::{BlockDev, Ext, FileSystem, FileType, FsError, Ino, IoError, MountOptions};

/// A block device over a (sparse) host file.
pub struct FileDisk {
    pub file: File,
    pub size: u64,
    pub read_only: bool,
}

impl FileDisk {
    pub fn open(path: &Path) -> FileDisk {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .expect("open image");
        let size = file.metadata().unwrap().len();
        FileDisk {
            file,
            size,
            read_only: false,
        }
    }
}

impl BlockDev for FileDisk {
    fn size_bytes(&self) -> u64 {
        self.size / 512 * 512
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        whole_sectors_within(offset, buf.len(), self.size)?;
        self.file
            .read_exact_at(buf, offset)
            .map_err(|_| IoError::Io)
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        if self.read_only {
            return Err(IoError::ReadOnly);
        }
        whole_sectors_within(offset, data.len(), self.size)?;
        self.file
            .write_all_at(data, offset)
            .map_err(|_| IoError::Io)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

/// A file-backed device's check of an I/O: `len` bytes at `offset`, both whole
/// 512-byte sectors, all below `size`; `OutOfRange` otherwise.
pub fn whole_sectors_within(offset: u64, len: usize, size: u64) -> Result<(), IoError> {
    if !offset.is_multiple_of(512) || !len.is_multiple_of(512) || offset + len as u64 > size {
        return Err(IoError::OutOfRange);
    }
    Ok(())
}

/// Counts the reads and writes that reach the device below.
pub struct Counting<D> {
    pub inner: D,
    pub writes: u64,
    pub bytes: u64,
    pub sizes: Vec<usize>,
    pub reads: u64,
    pub read_bytes: u64,
    /// Don't pass all-zero writes of 1 MiB or more down (counted all the same): for a
    /// freshly made sparse image whose free space already reads as zeros, this keeps a
    /// multi-GiB streaming test from filling the host disk.
    pub skip_zero_writes: bool,
    /// Fail every write with an I/O error while set.
    pub fail_writes: bool,
    /// Faults injected as a real device shows them (write-behind errors, read errors).
    pub faults: Faults,
}

/// Faults a test device injects (issue 30), counted over the I/Os it sees from when
/// the plan is set: a write the device accepts but loses, reported at the next flush
/// (as a kernel's write-behind reports a failed write: the submit succeeded), for one
/// write or for every write from one on (a disk that died); and a read that fails.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Writes seen (accepted or not).
    pub writes: u64,
    /// Reads seen.
    pub reads: u64,
    /// The write with this number (from 0) is lost; the next flush fails.
    pub lose_write: Option<u64>,
    /// Every write from this number on is lost; every flush after fails.
    pub lose_writes_from: Option<u64>,
    /// The read with this number (from 0) fails with an I/O error, and the bytes it
    /// asked for stay unreadable (a medium error: every later read that touches
    /// them fails too, as a bad sector does; so a read retried in another shape,
    /// readahead's exact read after its window failed, fails as well).
    pub fail_read: Option<u64>,
    /// The byte ranges a failed read made unreadable.
    pub bad: Vec<(u64, u64)>,
    /// Faults that happened (lost writes, failed reads).
    pub injected: u64,
    /// A lost write not yet reported by a flush.
    pub unreported: bool,
}

impl Faults {
    /// Called for each write: whether it reaches the medium.
    pub fn write_passes(&mut self) -> bool {
        let n = self.writes;
        self.writes += 1;
        let lost = self.lose_write == Some(n) || self.lose_writes_from.is_some_and(|f| n >= f);
        if lost {
            self.injected += 1;
            self.unreported = true;
        }
        !lost
    }
    /// Called for each read of `len` bytes at `offset`.
    pub fn read(&mut self, offset: u64, len: usize) -> Result<(), IoError> {
        let n = self.reads;
        self.reads += 1;
        let end = offset + len as u64;
        if self.fail_read == Some(n) {
            self.injected += 1;
            self.bad.push((offset, end));
            return Err(IoError::Io);
        }
        if self.bad.iter().any(|&(b, e)| offset < e && b < end) {
            return Err(IoError::Io);
        }
        Ok(())
    }
    /// Called for each flush: the error of a lost write since the last one.
    pub fn flush(&mut self) -> Result<(), IoError> {
        if std::mem::take(&mut self.unreported) {
            return Err(IoError::Io);
        }
        Ok(())
    }
}

static ZEROS: [u8; 1 << 20] = [0; 1 << 20];

impl<D: BlockDev> Counting<D> {
    pub fn new(inner: D) -> Self {
        Counting {
            inner,
            writes: 0,
            bytes: 0,
            sizes: Vec::new(),
            reads: 0,
            read_bytes: 0,
            skip_zero_writes: false,
            fail_writes: false,
            faults: Faults::default(),
        }
    }
}

impl<D: BlockDev> BlockDev for Counting<D> {
    fn size_bytes(&self) -> u64 {
        self.inner.size_bytes()
    }
    fn read_only(&self) -> bool {
        self.inner.read_only()
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        self.faults.read(offset, buf.len())?;
        self.reads += 1;
        self.read_bytes += buf.len() as u64;
        self.inner.read(offset, buf)
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        if self.fail_writes {
            return Err(IoError::Io);
        }
        self.writes += 1;
        self.bytes += data.len() as u64;
        self.sizes.push(data.len());
        if !self.faults.write_passes() {
            return Ok(());
        }
        if self.skip_zero_writes
            && data.len() >= ZEROS.len()
            && data.chunks(ZEROS.len()).all(|c| c == &ZEROS[..c.len()])
        {
            return Ok(());
        }
        self.inner.write(offset, data)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.faults.flush()?;
        self.inner.flush()
    }
}

/// What a [`RecDisk`] saw: every write (offset, data, flush epoch), and the epoch,
/// which each flush advances.
#[derive(Default)]
pub struct WriteLog {
    pub writes: Vec<(u64, Vec<u8>, u32)>,
    pub epoch: u32,
}

/// A device in memory that logs every write and flush (the crash tests replay a
/// prefix of the writes onto the image as it was), and injects `faults` (none by
/// default; the fault sweeps).
pub struct RecDisk {
    pub img: Vec<u8>,
    /// Shared, so that a test reads it while the filesystem owns the device.
    pub log: Rc<RefCell<WriteLog>>,
    pub faults: Faults,
}

impl RecDisk {
    /// A device over `img` with an empty log and no faults.
    pub fn new(img: Vec<u8>) -> RecDisk {
        RecDisk {
            img,
            log: Rc::default(),
            faults: Faults::default(),
        }
    }
}

impl BlockDev for RecDisk {
    fn size_bytes(&self) -> u64 {
        self.img.len() as u64
    }
    fn read_only(&self) -> bool {
        false
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        self.faults.read(offset, buf.len())?;
        let o = offset as usize;
        buf.copy_from_slice(self.img.get(o..o + buf.len()).ok_or(IoError::OutOfRange)?);
        Ok(())
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        if !self.faults.write_passes() {
            return Ok(());
        }
        let o = offset as usize;
        self.img
            .get_mut(o..o + data.len())
            .ok_or(IoError::OutOfRange)?
            .copy_from_slice(data);
        let mut l = self.log.borrow_mut();
        let epoch = l.epoch;
        l.writes.push((offset, data.to_vec(), epoch));
        Ok(())
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.faults.flush()?;
        self.log.borrow_mut().epoch += 1;
        Ok(())
    }
}

/// A unique temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "xenlet-fs-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    /// The path of `name` in the dir.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("XENLET_KEEP_TMP").is_some() {
            eprintln!("kept {}", self.0.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A new temp dir tagged `tag` holding `img`, a fresh filesystem [`mkfs`] makes
/// (no source tree, no extra options); the image goes when the dir drops.
pub fn fresh_image(tag: &str, kind: &str, block_size: u32, size: &str) -> (TempDir, PathBuf) {
    fresh_image_with(tag, kind, block_size, size, &[])
}

/// A new temp dir tagged `tag` holding `img`, made by [`mkfs`] from the tree that
/// `fill` makes at the path it is given (`src` in the dir).
pub fn tree_image(
    tag: &str,
    kind: &str,
    block_size: u32,
    size: &str,
    fill: impl FnOnce(&Path),
) -> (TempDir, PathBuf) {
    let t = TempDir::new(tag);
    let src = t.path().join("src");
    fill(&src);
    let img = t.path().join("img");
    mkfs(&img, kind, block_size, size, Some(&src), &[]);
    (t, img)
}

/// [`fresh_image`] with `extra` mke2fs options.
pub fn fresh_image_with(
    tag: &str,
    kind: &str,
    block_size: u32,
    size: &str,
    extra: &[&str],
) -> (TempDir, PathBuf) {
    let t = TempDir::new(tag);
    let img = t.path().join("img");
    mkfs(&img, kind, block_size, size, None, extra);
    (t, img)
}

/// Path of an e2fsprogs tool; panics (failing the test) if it is not installed.
pub fn tool(name: &str) -> PathBuf {
    for d in ["/sbin", "/usr/sbin", "/usr/bin", "/bin"] {
        let p = Path::new(d).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} not found in /sbin or /usr/sbin: these tests need e2fsprogs (apt-get install e2fsprogs)");
}

/// Runs mke2fs: `kind` is "ext2" or "ext4", `size` like "64M"; `src` populates it.
pub fn mkfs(
    img: &Path,
    kind: &str,
    block_size: u32,
    size: &str,
    src: Option<&Path>,
    extra: &[&str],
) {
    let mut c = Command::new(tool("mke2fs"));
    c.args(["-q", "-F", "-t", kind, "-b", &block_size.to_string()]);
    c.args(extra);
    if let Some(s) = src {
        c.arg("-d").arg(s);
    }
    c.arg(img).arg(size);
    c.env("MKE2FS_CONFIG", "/etc/mke2fs.conf");
    let out = c.output().expect("run mke2fs");
    assert!(
        out.status.success(),
        "mke2fs failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Unmounts `fs`, lets go of its device, and checks `img` with [`fsck_clean`].
pub fn unmount_clean(mut fs: impl FileSystem, img: &Path) {
    fs.unmount().unwrap();
    drop(fs);
    fsck_clean(img);
}

/// `e2fsck ARGS img`: its exit code (-1 if it was killed) and its output, stdout
/// then stderr.
pub fn e2fsck(img: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(tool("e2fsck"))
        .args(args)
        .arg(img)
        .output()
        .expect("run e2fsck");
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// `e2fsck -fn`: panics with its output unless the filesystem is clean.
pub fn fsck_clean(img: &Path) {
    let (code, out) = e2fsck(img, &["-fn"]);
    assert!(code == 0, "e2fsck -fn found problems (exit {code}):\n{out}");
}

/// `e2fsck -fy`: repairs; panics (the message starting with `what`) unless it
/// exits 0 (nothing to fix) or 1 (fixed).
pub fn fsck_repair(img: &Path, what: &str) {
    let (code, out) = e2fsck(img, &["-fy"]);
    assert!(matches!(code, 0 | 1), "{what}: e2fsck -fy: {out}");
}

/// `e2fsck -fyD`: rebuild (index) directories.
pub fn fsck_index_dirs(img: &Path) {
    let (code, out) = e2fsck(img, &["-fyD"]);
    assert!(matches!(code, 0..=2), "e2fsck -fyD: {out}");
}

/// Block numbers comma-separated, as debugfs's `jw -b` and `jw -r` take them.
pub fn block_list(blocks: &[u64]) -> String {
    blocks
        .iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs a debugfs script read-write (`debugfs -w -f`), the script file beside the image.
pub fn debugfs_w(img: &Path, script: &str) {
    let cmds = img.with_extension("cmds");
    std::fs::write(&cmds, script).unwrap();
    let out = Command::new(tool("debugfs"))
        .args(["-w", "-f"])
        .arg(&cmds)
        .arg(img)
        .output()
        .unwrap();
    assert!(out.status.success(), "debugfs: {out:?}");
}

/// Runs one debugfs request read-write (`debugfs -w -R`); panics unless it succeeds.
pub fn debugfs_w_req(img: &Path, req: &str) {
    let out = Command::new(tool("debugfs"))
        .args(["-w", "-R", req])
        .arg(img)
        .output()
        .unwrap();
    assert!(out.status.success(), "debugfs -w -R {req}: {out:?}");
}

/// dumpe2fs's report on `img` (`args` before it: `-h` for the superblock alone).
pub fn dumpe2fs(img: &Path, args: &[&str]) -> String {
    let out = Command::new(tool("dumpe2fs"))
        .args(args)
        .arg(img)
        .output()
        .expect("run dumpe2fs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `dumpe2fs -h`: the superblock's fields.
pub fn dumpe2fs_h(img: &Path) -> String {
    dumpe2fs(img, &["-h"])
}

/// The line of `dumpe2fs -h` that starts with `key` ("" if none).
pub fn dumpe2fs_h_line(img: &Path, key: &str) -> String {
    dumpe2fs_h(img)
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or("")
        .to_string()
}

/// Runs a debugfs request, returns stdout.
pub fn debugfs(img: &Path, req: &str) -> Vec<u8> {
    let out = Command::new(tool("debugfs"))
        .arg("-R")
        .arg(req)
        .arg(img)
        .output()
        .expect("run debugfs");
    assert!(
        out.status.success(),
        "debugfs -R {req}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The streaming benchmark's file system (`dd bs=16k` into `/test`): a 3 GiB ext4 of
/// 4 KiB blocks in temp dir `name`, mounted over a write-counting disk that skips
/// zero writes, and the empty file `/test`. Returns the dir (kept while it lives),
/// the image, the mount and the file.
pub fn stream_fs(name: &str) -> (TempDir, PathBuf, Ext<Counting<FileDisk>>, Ino) {
    let t = TempDir::new(name);
    let img = t.path().join("img");
    mkfs(&img, "ext4", 4096, "3G", None, &[]);
    let mut disk = Counting::new(FileDisk::open(&img));
    disk.skip_zero_writes = true;
    let mut fs = Ext::mount(disk, opts()).unwrap();
    let root = fs.root();
    let ino = fs.create(root, "test", 0o644).unwrap();
    (t, img, fs, ino)
}

pub fn opts() -> MountOptions {
    MountOptions {
        read_only: false,
        now: || 1_700_000_000,
    }
}

pub fn mount(img: &Path) -> Ext<FileDisk> {
    Ext::mount(FileDisk::open(img), opts()).expect("mount")
}

/// Resolves a `/`-separated path.
pub fn resolve<F: FileSystem>(fs: &mut F, path: &str) -> Result<Ino, FsError> {
    let mut ino = fs.root();
    for c in path.split('/').filter(|c| !c.is_empty()) {
        ino = fs.lookup(ino, c)?;
    }
    Ok(ino)
}

/// Reads a whole file.
pub fn read_all<F: FileSystem>(fs: &mut F, ino: Ino) -> Vec<u8> {
    let size = fs.stat(ino).unwrap().size;
    let mut v = vec![0u8; size as usize];
    let mut off = 0;
    while off < v.len() {
        let n = fs.read(ino, off as u64, &mut v[off..]).unwrap();
        assert!(n > 0, "short read at {off} of {size}");
        off += n;
    }
    v
}

/// A small deterministic PRNG (xorshift64).
pub use xenlet_testrng::XorShift as Rng;

/// Fills `dir` with a varied tree; returns nothing (compare against the directory).
pub fn build_tree(dir: &Path, many: usize) {
    let mut r = Rng(0x1234_5678_9abc_def1);
    std::fs::write(dir.join("empty"), b"").unwrap();
    std::fs::write(dir.join("one"), b"x").unwrap();
    std::fs::write(dir.join("f4095"), r.bytes(4095)).unwrap();
    std::fs::write(dir.join("f4097"), r.bytes(4097)).unwrap();
    std::fs::write(dir.join("big"), r.bytes((1 << 20) + 12345)).unwrap();
    // Sparse: data, a hole, data.
    {
        let f = File::create(dir.join("sparse")).unwrap();
        f.write_all_at(&r.bytes(3000), 0).unwrap();
        f.write_all_at(&r.bytes(5000), 5 << 20).unwrap();
        f.set_len((9 << 20) + 7).unwrap();
    }
    let mut deep = dir.to_path_buf();
    for i in 0..12 {
        deep = deep.join(format!("level{i}"));
        std::fs::create_dir(&deep).unwrap();
        std::fs::write(deep.join("file"), format!("depth {i}")).unwrap();
    }
    std::os::unix::fs::symlink("f4095", dir.join("short-link")).unwrap();
    let long: String = "a/".repeat(70) + "target";
    std::os::unix::fs::symlink(&long, dir.join("long-link")).unwrap();
    let m = dir.join("many");
    std::fs::create_dir(&m).unwrap();
    for i in 0..many {
        std::fs::write(
            m.join(format!("entry-with-a-longer-name-{i:05}")),
            format!("{i}"),
        )
        .unwrap();
    }
}

/// The names in directory `ino`, in the order it lists them.
pub fn dir_names<F: FileSystem>(fs: &mut F, ino: Ino) -> Vec<String> {
    fs.read_dir(ino)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect()
}

/// Checks that everything under `src` reads the same through `fs` at `path`.
pub fn compare_tree<F: FileSystem>(fs: &mut F, src: &Path, path: &str) -> usize {
    let ino = resolve(fs, path).unwrap_or_else(|e| panic!("resolve {path}: {e}"));
    let mut names = dir_names(fs, ino);
    names.sort();
    let mut want: Vec<String> = std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "lost+found")
        .collect();
    want.sort();
    names.retain(|n| n != "lost+found");
    assert_eq!(names, want, "directory {path}");
    let mut count = 0;
    for n in want {
        let p = src.join(&n);
        let sub = format!("{path}/{n}");
        let md = std::fs::symlink_metadata(&p).unwrap();
        let ino = resolve(fs, &sub).unwrap();
        let st = fs.stat(ino).unwrap();
        if md.file_type().is_symlink() {
            assert_eq!(st.kind, FileType::Symlink, "{sub}");
            let target = std::fs::read_link(&p).unwrap();
            assert_eq!(
                read_all(fs, ino),
                target.as_os_str().as_encoded_bytes(),
                "{sub}"
            );
        } else if md.is_dir() {
            assert_eq!(st.kind, FileType::Dir, "{sub}");
            count += compare_tree(fs, &p, &sub);
        } else {
            assert_eq!(st.kind, FileType::File, "{sub}");
            assert_eq!(st.size, md.len(), "{sub}");
            assert_eq!(read_all(fs, ino), std::fs::read(&p).unwrap(), "{sub}");
        }
        count += 1;
    }
    count
}

/// crc32c as jbd2 uses it (the raw Castagnoli CRC, seed given): the tests' own, apart
/// from the crate's.
pub fn jbd2_crc32c(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// Shrinks the journal of the 1 KiB-block image `img` to `blocks` blocks as its
/// superblock says (`s_maxlen`, the checksum v3 sealed again): a log smaller than
/// mke2fs makes, for operations that do not fit one transaction.
pub fn shrink_journal(img: &std::path::Path, blocks: u32) {
    edit_journal_superblock(img, |jsb| {
        jsb[0x10..0x14].copy_from_slice(&blocks.to_be_bytes());
        jsb[0xFC..0x100].fill(0);
        let c = !jbd2_crc32c(!0, jsb);
        jsb[0xFC..0x100].copy_from_slice(&c.to_be_bytes());
    });
}

/// Rewrites the journal superblock (the first block of the journal inode, 8) of the
/// 1 KiB-block image `img` in place with `edit`.
pub fn edit_journal_superblock(img: &std::path::Path, edit: impl FnOnce(&mut [u8; 1024])) {
    use std::os::unix::fs::FileExt;
    let jblk: u64 = String::from_utf8_lossy(&debugfs(img, "bmap <8> 0"))
        .trim()
        .parse()
        .unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(img)
        .unwrap();
    let mut jsb = [0u8; 1024];
    f.read_exact_at(&mut jsb, jblk * 1024).unwrap();
    edit(&mut jsb);
    f.write_all_at(&jsb, jblk * 1024).unwrap();
}
