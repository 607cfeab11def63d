//! What the heap tests share: a counting (and optionally limiting) global
//! allocator, a block device over a host image file, and e2fsprogs.

#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// The ext tests' helpers: a block device over a host image file, temp dirs,
/// e2fsprogs' paths.
#[path = "../../../fs/tests/common/mod.rs"]
mod fs_common;

pub use fs_common::{tool, FileDisk as Disk, TempDir};

/// A block device over the image at `path`, read-only or not.
pub fn disk(path: &Path, read_only: bool) -> Disk {
    let mut d = Disk::open(path);
    d.read_only = read_only;
    d
}

/// Runs a command (e2fsprogs); fails the test with its output if it fails.
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
