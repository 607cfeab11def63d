//! The kernel's file tree: the VFS over a tmpfs root (with `/tmp` and `/mnt`), the
//! blkfront disks as block devices for filesystems, `mount`/`umount`, and the
//! write-back of every filesystem before the domain shuts down.

use crate::{dev::frontends, time::clock};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use core::sync::atomic::{AtomicUsize, Ordering};
use spin::Mutex;
use xenlet_drivers::blkfront::{BlockDevice, BlockError};
use xenlet_drivers::blocksync::{self, SyncError, Waiter, WriteBehind};
use xenlet_fs::memfs::MemFs;
use xenlet_fs::part::{self, Partition};
use xenlet_fs::vfs::{BoxedFs, Vfs};
use xenlet_fs::{BlockDev, FsError, IoError, MountOptions};

static VFS: Mutex<Option<Vfs>> = Mutex::new(None);
/// Memory each ext mount may use for its caches (set at [`init`]).
static CACHE_BYTES: AtomicUsize = AtomicUsize::new(1 << 20);

/// Wall-clock seconds for file times: Xen's wall clock, else 0 (plain QEMU has no
/// clock source wired up yet).
pub fn now_secs() -> i64 {
    crate::xen::platform::wallclock_secs().unwrap_or(0)
}

/// The root filesystem `cmdline` asks for: `root=/dev/xvdXN` (or `root=none`), else
/// partition 1 of xvda when it is a Linux partition (the boot disk, as OpenWrt's
/// combined image lays it out). Returns the device name, or None for a tmpfs root.
fn root_device(cmdline: &str) -> Option<String> {
    if let Some(r) = cmdline
        .split_whitespace()
        .find_map(|w| w.strip_prefix("root="))
    {
        return (r != "none").then(|| String::from(r.strip_prefix("/dev/").unwrap_or(r)));
    }
    let (_, d) = open_dev("xvda1").ok()?;
    matches!(d, Dev::Part(_)).then(|| String::from("xvda1"))
}

/// Sets up the file tree: the root disk read-write at `/` (see [`root_device`]), or a
/// tmpfs of `tmp_limit` bytes when there is none or it cannot be mounted; a tmpfs at
/// `/tmp`; `/mnt`. Each ext mount caches up to `cache_bytes`. Returns the boot
/// report's line.
pub fn init(cmdline: &str, tmp_limit: u64, cache_bytes: usize) -> String {
    CACHE_BYTES.store(cache_bytes, Ordering::Relaxed);
    let tmpfs = || Box::new(MemFs::new(tmp_limit, now_secs)) as BoxedFs;
    let (mut v, report) = match root_device(cmdline) {
        None => (
            Vfs::new(tmpfs(), "rootfs"),
            String::from("tmpfs (no root disk)"),
        ),
        Some(name) => match open_dev(&name).and_then(|(n, d)| {
            open_fs(d, None, false)
                .map(|fs| (n, fs))
                .map_err(|e| format!("/dev/{name}: {e}"))
        }) {
            Ok((n, fs)) => {
                let line = format!(
                    "/dev/{n} {}{}",
                    xenlet_fs::FileSystem::kind(fs.as_ref()),
                    if fs.read_only() {
                        ", read-only"
                    } else {
                        ", read-write"
                    }
                );
                (Vfs::new(fs, &format!("/dev/{n}")), line)
            }
            // A missing or damaged root still gives a shell, with the reason.
            Err(why) => (Vfs::new(tmpfs(), "rootfs"), format!("tmpfs ({why})")),
        },
    };
    // A replace of a configuration (or the lease file) cut off by a crash leaves its
    // hidden temporary file; the file itself is whole, old or new.
    let mut report = report;
    // Below the heap's low-water mark the mounts give their caches back, then
    // refuse work that would grow them (ENOMEM) rather than run the heap out.
    v.set_memory_low(crate::mm::heap::memory_low);
    for dir in ["/etc/config", "/etc"] {
        match v.remove_stale_temps(dir) {
            Ok(gone) => {
                for name in gone {
                    report.push_str(&format!(
                        "; removed {dir}/{name}, a replace cut off by a crash"
                    ));
                }
            }
            Err(xenlet_fs::FsError::NotFound) => {}
            Err(e) => report.push_str(&format!("; {dir}: {e}")),
        }
    }
    for d in ["/tmp", "/mnt"] {
        let _ = v.mkdir(d, 0o755);
    }
    if let Err(e) = v.mount("/tmp", "tmpfs", tmpfs()) {
        crate::println!("vfs: /tmp: {e}");
    }
    *VFS.lock() = Some(v);
    report
}

/// Runs `f` on the tree (None before [`init`]).
pub fn with<T>(f: impl FnOnce(&mut Vfs) -> T) -> Option<T> {
    VFS.lock().as_mut().map(f)
}

/// Disk waits for filesystems (and `dd` with a file): the kernel clock, and not
/// interruptible (a command checks Ctrl-C between its own steps, so metadata is never
/// left half-written).
pub(crate) struct FsWait;

impl Waiter for FsWait {
    fn now_ns(&self) -> u64 {
        clock::now().as_nanos()
    }
    fn interrupted(&self) -> bool {
        false
    }
}

/// A blkfront disk as a filesystem's block device. Writes go behind (see
/// `blocksync::WriteBehind`): they return once on the ring, so the filesystem's
/// next writes overlap the backend's work; reads wait for them (without taking
/// their errors), flushes wait and report a lost write, every time after it.
pub struct XvdDev {
    /// The disk instance, not its name: a disk attached later under the same name
    /// is not this one.
    disk: frontends::DiskHandle,
    size: u64,
    read_only: bool,
    behind: WriteBehind,
}

/// Why a filesystem's I/O fails once its disk was detached.
const DISK_GONE: &str = "disk gone";

/// Requests a disk keeps in flight behind the filesystem's back (1 MiB each at most).
const WRITE_BEHIND: usize = 8;

impl XvdDev {
    /// The connected disk called `name` ("xvdb" or "/dev/xvdb").
    pub fn open(name: &str) -> Option<Self> {
        let disk = frontends::open_disk(name)?;
        frontends::with_handle(&disk, |d| (d.info().bytes(), d.info().readonly)).map(
            |(size, read_only)| XvdDev {
                disk,
                size,
                read_only,
                behind: WriteBehind::new(WRITE_BEHIND),
            },
        )
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
        let wb = &mut self.behind;
        frontends::with_handle(&self.disk, |d| {
            // the writes before it land first; their errors stay for `sync`
            blocksync::settle(d, &FsWait, wb)?;
            blocksync::read(d, &FsWait, offset, buf)
        })
        .ok_or_else(|| IoError::Broken(String::from(DISK_GONE)))?
        .map_err(io_err)
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        let wb = &mut self.behind;
        frontends::with_handle(&self.disk, |d| {
            blocksync::write_behind(d, &FsWait, wb, offset, data)
        })
        .ok_or_else(|| IoError::Broken(String::from(DISK_GONE)))?
        .map_err(io_err)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        let wb = &mut self.behind;
        frontends::with_handle(&self.disk, |d| {
            blocksync::drain(d, &FsWait, wb)?;
            blocksync::flush(d, &FsWait)
        })
        .ok_or_else(|| IoError::Broken(String::from(DISK_GONE)))?
        .map_err(io_err)
    }
}

/// A disk or one of its MBR partitions.
pub enum Dev {
    /// A whole disk (`xvdb`).
    Whole(XvdDev),
    /// A partition (`xvda1`).
    Part(Partition<XvdDev>),
}

impl BlockDev for Dev {
    fn size_bytes(&self) -> u64 {
        match self {
            Dev::Whole(d) => d.size_bytes(),
            Dev::Part(p) => p.size_bytes(),
        }
    }
    fn read_only(&self) -> bool {
        match self {
            Dev::Whole(d) => d.read_only(),
            Dev::Part(p) => p.read_only(),
        }
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        match self {
            Dev::Whole(d) => d.read(offset, buf),
            Dev::Part(p) => p.read(offset, buf),
        }
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        match self {
            Dev::Whole(d) => d.write(offset, data),
            Dev::Part(p) => p.write(offset, data),
        }
    }
    fn flush(&mut self) -> Result<(), IoError> {
        match self {
            Dev::Whole(d) => d.flush(),
            Dev::Part(p) => p.flush(),
        }
    }
}

/// Opens `xvdb` or `xvda1` (with or without `/dev/`): (its name, the device).
pub fn open_dev(arg: &str) -> Result<(String, Dev), String> {
    let name = arg.strip_prefix("/dev/").unwrap_or(arg);
    if let Some(d) = XvdDev::open(name) {
        return Ok((String::from(name), Dev::Whole(d)));
    }
    let disk = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let num: u8 = name[disk.len()..]
        .parse()
        .map_err(|_| format!("{arg}: No such device"))?;
    let mut d = XvdDev::open(disk).ok_or_else(|| format!("{arg}: No such device"))?;
    let mut s0 = [0u8; 512];
    d.read(0, &mut s0).map_err(|e| format!("{disk}: {e}"))?;
    let table = part::parse_mbr(&s0, d.size_bytes() / 512)
        .ok_or_else(|| format!("{disk}: no valid MBR partition table"))?;
    let e = table
        .iter()
        .find(|e| e.number == num)
        .ok_or_else(|| format!("{arg}: No such device"))?;
    let p = Partition::new(d, e.start_lba, e.sectors)
        .ok_or_else(|| format!("{name}: partition outside the disk"))?;
    Ok((String::from(name), Dev::Part(p)))
}

/// Opens the filesystem on `dev` (ext2 or ext4: the superblock decides; `kind`, if
/// given, must agree).
fn open_fs(dev: Dev, kind: Option<&str>, read_only: bool) -> Result<BoxedFs, FsError> {
    let opts = MountOptions {
        read_only,
        now: now_secs,
    };
    // The mount's memory bound holds from the start: what the disk sizes at mount
    // (group descriptors, journal replay, orphans) is held to it too.
    let cache_bytes = CACHE_BYTES.load(Ordering::Relaxed);
    let fs = xenlet_fs::ext::Ext::mount_bounded(dev, opts, cache_bytes).map_err(|e| match e {
        // A checksum that fails on a disk dom0's e2fsck calls clean could be this
        // kernel's own code or tables (the CRC-32C table is a constant) damaged in
        // memory since the boot check: the error says which it is.
        FsError::Corrupt(what) => FsError::Corrupt(format!(
            "{what}; kernel image: {}",
            crate::mm::image::check()
        )),
        e => e,
    })?;
    if let Some(r) = fs.replayed() {
        crate::println!("ext4: journal replayed at mount: {r}");
    }
    if let Some(why) = fs.read_only_reason() {
        crate::println!("ext4: mounted read-only: {why}");
    }
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
    let (name, d) = open_dev(dev)?;
    let ro = read_only || d.read_only();
    let dev_path = format!("/dev/{name}");
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
    let r = with(|v| v.umount(&t).map(|_| ())).ok_or_else(|| String::from("no file tree"))?;
    match r {
        Ok(()) => Ok(()),
        // The disk was detached: what was not written back cannot be any more;
        // the mount goes, with a word about it.
        Err(FsError::Io(IoError::Broken(why))) if why == DISK_GONE => {
            with(|v| v.umount_force(&t).map(|_| ()));
            crate::println!("vfs: {target}: the disk is gone; unmounted without writing back");
            Ok(())
        }
        Err(e) => Err(format!("{target}: {e}")),
    }
}

/// The filesystems already said to have gone read-only after an error: (mount
/// point, reason).
static REPORTED: Mutex<alloc::vec::Vec<(String, String)>> = Mutex::new(alloc::vec::Vec::new());

/// Prints, once each, why a mounted filesystem went read-only after an error (an
/// aborted transaction: Linux's "Remounting filesystem read-only"), as soon as the
/// shell loop comes round. Never waits on the lock.
pub fn report_errors() {
    let Some(g) = VFS.try_lock() else { return };
    let Some(v) = g.as_ref() else { return };
    let mut reported = REPORTED.lock();
    for m in v.mounts() {
        let Some(why) = m.error else { continue };
        if reported.iter().any(|(p, w)| *p == m.path && *w == why) {
            continue;
        }
        crate::println!("vfs: {} ({}): {why}", m.path, m.source);
        reported.retain(|(p, _)| *p != m.path);
        reported.push((m.path, why));
    }
}

/// Writes every filesystem back before a suspend (`xl save`, `xl migrate`): what is
/// synced is on the disk whichever domain goes on. Never waits on the lock (a
/// suspend comes between commands, but a command may have left it held).
pub fn sync_for_suspend() {
    let Some(mut g) = VFS.try_lock() else {
        crate::println!("xenlet: file systems busy; not synced before the suspend");
        return;
    };
    if let Some(v) = g.as_mut() {
        if let Err(e) = v.sync_all() {
            crate::println!("xenlet: sync before the suspend: {e}");
        }
    }
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
