//! What the heap tests share: a counting (and optionally limiting) global
//! allocator, a block device over a host image file, and e2fsprogs.

#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use xenlet_fs::{BlockDev, IoError};

/// The system allocator, counting live bytes and their high-water mark, and
/// refusing (a null pointer, as a full kernel heap does) any allocation that would
/// take the live bytes past [`set_limit`]'s bound.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
static REFUSED: AtomicUsize = AtomicUsize::new(0);

impl Counting {
    fn admit(n: usize) -> bool {
        if LIVE.load(Ordering::Relaxed).saturating_add(n) > LIMIT.load(Ordering::Relaxed) {
            REFUSED.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }
    fn add(n: usize) {
        let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
    fn sub(n: usize) {
        LIVE.fetch_sub(n, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on unchanged to `System`, which upholds
// `GlobalAlloc`'s contract, or refused with a null pointer (which the contract
// allows); the counters are plain atomics and never touch memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !Self::admit(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout goes to System as it came.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            Self::add(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if !Self::admit(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            Self::add(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from this allocator (so from System) with layout `l`.
        unsafe { System.dealloc(p, l) };
        Self::sub(l.size());
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() && !Self::admit(new - l.size()) {
            return std::ptr::null_mut();
        }
        // The caller ensures `new` is valid for `l`'s alignment.
        // SAFETY: `p` came from System with layout `l`, and `new` is the caller's valid size.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            Self::sub(l.size());
            Self::add(new);
        }
        q
    }
}

/// Live heap bytes now.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Starts a new high-water mark at the live heap now.
pub fn reset_peak() {
    PEAK.store(live(), Ordering::Relaxed);
}

/// The live heap's high-water mark.
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Refuses allocations past `bytes` live (usize::MAX: no bound).
pub fn set_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// The bound now.
pub fn limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

/// Allocations refused so far.
pub fn refused() -> usize {
    REFUSED.load(Ordering::Relaxed)
}

/// A block device over a host image file.
pub struct Disk {
    file: File,
    size: u64,
    read_only: bool,
}

impl Disk {
    pub fn open(path: &Path, read_only: bool) -> Disk {
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .open(path)
            .expect("open image");
        let size = file.metadata().unwrap().len();
        Disk {
            file,
            size,
            read_only,
        }
    }
}

impl BlockDev for Disk {
    fn size_bytes(&self) -> u64 {
        self.size / 512 * 512
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        if offset + buf.len() as u64 > self.size {
            return Err(IoError::OutOfRange);
        }
        self.file
            .read_exact_at(buf, offset)
            .map_err(|_| IoError::Io)
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        if self.read_only {
            return Err(IoError::ReadOnly);
        }
        if offset + data.len() as u64 > self.size {
            return Err(IoError::OutOfRange);
        }
        self.file
            .write_all_at(data, offset)
            .map_err(|_| IoError::Io)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

/// A temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn tool(name: &str) -> PathBuf {
    for d in ["/sbin", "/usr/sbin", "/usr/bin", "/bin"] {
        let p = Path::new(d).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} not found: this test needs e2fsprogs");
}

pub fn run(c: &mut Command) -> String {
    let out = c.output().expect("run e2fsprogs");
    assert!(
        out.status.success(),
        "{c:?} failed ({:?}):\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
