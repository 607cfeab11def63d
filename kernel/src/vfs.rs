//! The kernel's file tree: the VFS over a tmpfs root (with `/tmp` and `/mnt`), the
//! blkfront disks as block devices for filesystems, `mount`/`umount`, and the
//! write-back of every filesystem before the domain shuts down.

use crate::{clock, frontends};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use spin::Mutex;
use xenlet_drivers::blkfront::{BlockDevice, BlockError};
use xenlet_drivers::blocksync::{self, SyncError, Waiter};
use xenlet_fs::memfs::MemFs;
use xenlet_fs::vfs::{BoxedFs, Vfs};
use xenlet_fs::{BlockDev, FsError, IoError, MountOptions};

static VFS: Mutex<Option<Vfs>> = Mutex::new(None);

/// Wall-clock seconds for file times: Xen's wall clock, else 0 (plain QEMU has no
/// clock source wired up yet).
pub fn now_secs() -> i64 {
    crate::xen::wallclock_secs().unwrap_or(0)
}

/// Sets up `/` (tmpfs of `root_limit` bytes) with `/tmp` (another tmpfs) and `/mnt`.
pub fn init(root_limit: u64) {
    let mut v = Vfs::new(Box::new(MemFs::new(root_limit, now_secs)), "rootfs");
    for d in ["/tmp", "/mnt", "/etc"] {
        let _ = v.mkdir(d, 0o755);
    }
    let _ = v.mount("/tmp", "tmpfs", Box::new(MemFs::new(root_limit, now_secs)));
    *VFS.lock() = Some(v);
}

/// Runs `f` on the tree (None before [`init`]).
pub fn with<T>(f: impl FnOnce(&mut Vfs) -> T) -> Option<T> {
    VFS.lock().as_mut().map(f)
}

/// Disk waits for filesystems: the kernel clock, and not interruptible (a command
/// checks Ctrl-C between its own steps, so metadata is never left half-written).
struct FsWait;

impl Waiter for FsWait {
    fn now_ns(&self) -> u64 {
        clock::now().as_nanos()
    }
    fn interrupted(&self) -> bool {
        false
    }
}

/// A blkfront disk as a filesystem's block device.
pub struct XvdDev {
    name: String,
    size: u64,
    read_only: bool,
}

impl XvdDev {
    /// The connected disk called `name` ("xvdb" or "/dev/xvdb").
    pub fn open(name: &str) -> Option<Self> {
        let name = name.strip_prefix("/dev/").unwrap_or(name);
        frontends::with_disk(name, |d| XvdDev {
            name: String::from(name),
            size: d.info().bytes(),
            read_only: d.info().readonly,
        })
    }
}

fn io_err(e: SyncError) -> IoError {
    match e {
        SyncError::Device(BlockError::ReadOnly) => IoError::ReadOnly,
        SyncError::Device(BlockError::Broken(why)) => IoError::Broken(why),
        SyncError::Device(_) | SyncError::Timeout => IoError::Io,
        SyncError::Interrupted => IoError::Interrupted,
        SyncError::Range => IoError::OutOfRange,
    }
}

impl BlockDev for XvdDev {
    fn size_bytes(&self) -> u64 {
        self.size
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        frontends::with_disk(&self.name, |d| blocksync::read(d, &FsWait, offset, buf))
            .ok_or_else(|| IoError::Broken(String::from("disk gone")))?
            .map_err(io_err)
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        frontends::with_disk(&self.name, |d| blocksync::write(d, &FsWait, offset, data))
            .ok_or_else(|| IoError::Broken(String::from("disk gone")))?
            .map_err(io_err)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        frontends::with_disk(&self.name, |d| blocksync::flush(d, &FsWait))
            .ok_or_else(|| IoError::Broken(String::from("disk gone")))?
            .map_err(io_err)
    }
}

/// Opens the filesystem on `dev` (ext2 or ext4: the superblock decides; `kind`, if
/// given, must agree).
fn open_fs(dev: XvdDev, kind: Option<&str>, read_only: bool) -> Result<BoxedFs, FsError> {
    let opts = MountOptions {
        read_only,
        now: now_secs,
    };
    let fs = xenlet_fs::ext::Ext::mount(dev, opts)?;
    if let Some(k) = kind {
        let real = xenlet_fs::FileSystem::kind(&fs);
        // ext4's driver mounts ext2 and ext3 too, as Linux's does.
        if k != real && k != "ext4" {
            return Err(FsError::Invalid("filesystem type does not match the disk"));
        }
    }
    Ok(Box::new(fs))
}

/// `mount [-t TYPE] [-o ro] DEV DIR`: returns the line for the kernel log.
pub fn mount(dev: &str, dir: &str, kind: Option<&str>, read_only: bool) -> Result<String, String> {
    let d = XvdDev::open(dev).ok_or_else(|| format!("{dev}: No such device"))?;
    let ro = read_only || d.read_only;
    let dev_path = format!("/dev/{}", d.name);
    let fs = open_fs(d, kind, ro).map_err(|e| format!("{dev}: {e}"))?;
    let line = format!(
        "{} on {dir}: {}{}",
        dev_path,
        xenlet_fs::FileSystem::kind(fs.as_ref()),
        if fs.read_only() { ", read-only" } else { "" }
    );
    with(|v| v.mount(dir, &dev_path, fs))
        .ok_or_else(|| String::from("no file tree"))?
        .map_err(|e| format!("{dir}: {e}"))?;
    Ok(line)
}

/// `umount DIR|DEV`.
pub fn umount(target: &str) -> Result<(), String> {
    let t = if target.starts_with("xvd") {
        format!("/dev/{target}")
    } else {
        String::from(target)
    };
    with(|v| v.umount(&t).map(|_| ()))
        .ok_or_else(|| String::from("no file tree"))?
        .map_err(|e| format!("{target}: {e}"))
}

/// Writes back and marks clean every filesystem (before power-off, reboot or an
/// `xl shutdown`); prints what failed.
pub fn shutdown() {
    // Never wait on the lock here: a shutdown may come while a command holds it.
    let Some(mut g) = VFS.try_lock() else {
        crate::println!("xenlet: file systems busy; not unmounted");
        return;
    };
    if let Some(v) = g.as_mut() {
        for (path, e) in v.unmount_all() {
            crate::println!("xenlet: unmounting {path}: {e}");
        }
    }
}
