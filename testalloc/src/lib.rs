//! Host tests only: the system allocator, counting the live heap bytes of each
//! thread and their high-water mark, and refusing (a null pointer, as a full kernel
//! heap does) any allocation that would take this thread past the bound of
//! [`limited`]. The test harness runs each test on its own thread, so tests of one
//! binary measure themselves without seeing each other.
//!
//! A test binary installs it with [`count_test_heap!`] (at a crate root that takes
//! this crate as a dev-dependency: `#[cfg(test)] xenlet_testalloc::count_test_heap!();`)
//! and measures with [`peak_during`] or [`limited`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The counting allocator (see the crate's documentation).
pub struct Counting;

/// Installs [`Counting`] as the global allocator of the binary it is expanded in,
/// as a `static TEST_ALLOC`: one line at the root of each crate whose host tests
/// measure their heap.
#[macro_export]
macro_rules! count_test_heap {
    () => {
        #[global_allocator]
        static TEST_ALLOC: $crate::Counting = $crate::Counting;
    };
}

thread_local! {
    /// Bytes this thread allocated minus the bytes it freed (memory freed by another
    /// thread than the one that took it makes this drift, which the tests here never do).
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The high-water mark of `LIVE` since the last [`reset_peak`].
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// Allocations that would take `LIVE` past this are refused.
    static LIMIT: Cell<isize> = const { Cell::new(isize::MAX) };
    /// Allocations refused on this thread.
    static REFUSED: Cell<usize> = const { Cell::new(0) };
    /// Allocations and reallocations this thread asked for (refused or not).
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

fn signed(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

fn admit(n: usize) -> bool {
    let _ = CALLS.try_with(|c| c.set(c.get() + 1));
    // `try_with`: a thread being torn down has no counters; let it through.
    let ok = LIVE
        .try_with(|l| {
            LIMIT
                .try_with(|m| l.get().saturating_add(signed(n)) <= m.get())
                .unwrap_or(true)
        })
        .unwrap_or(true);
    if !ok {
        let _ = REFUSED.try_with(|r| r.set(r.get() + 1));
    }
    ok
}

fn add(n: isize) {
    let _ = LIVE.try_with(|l| {
        let now = l.get().saturating_add(n);
        l.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

// SAFETY: every call is passed on unchanged to `System`, which upholds
// `GlobalAlloc`'s contract, or refused with a null pointer (which the contract
// allows); the counters are `const`-initialised thread-locals of plain integers,
// which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !admit(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout goes to System as it came.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            add(signed(l.size()));
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if !admit(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            add(signed(l.size()));
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from this allocator (so from System) with layout `l`.
        unsafe { System.dealloc(p, l) };
        add(-signed(l.size()));
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new <= l.size() {
            let _ = CALLS.try_with(|c| c.set(c.get() + 1));
        }
        if new > l.size() && !admit(new - l.size()) {
            return std::ptr::null_mut();
        }
        // The caller ensures `new` is a valid size for `l`'s alignment.
        // SAFETY: `p` came from System with layout `l`, and `new` is the caller's valid size.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            add(signed(new) - signed(l.size()));
        }
        q
    }
}

/// Allocations (and reallocations) this thread asked for so far: what a test of
/// a per-packet path counts between two points.
pub fn allocations() -> usize {
    CALLS.with(Cell::get)
}

/// This thread's live heap bytes (relative to an arbitrary start).
pub fn live() -> isize {
    LIVE.with(Cell::get)
}

/// Starts a new high-water mark at the live bytes now.
pub fn reset_peak() {
    PEAK.with(|p| p.set(live()));
}

/// The high-water mark of this thread's live bytes since [`reset_peak`].
pub fn peak() -> isize {
    PEAK.with(Cell::get)
}

/// Bytes this thread may still allocate before [`limited`]'s bound (`isize::MAX`
/// when none is set): what a test's "memory is low" answer looks at.
pub fn headroom() -> isize {
    LIMIT.with(Cell::get).saturating_sub(live())
}

/// Refuses, on this thread, any allocation that would take its live heap more than
/// `bytes` past what it holds now, until [`lift_limit`]; starts a new high-water
/// mark there. Returns the live bytes now (the base to read [`peak`] against).
/// [`limited`] is the same for the length of one call.
pub fn set_limit(bytes: usize) -> isize {
    let base = live();
    LIMIT.with(|m| m.set(base.saturating_add(signed(bytes))));
    reset_peak();
    base
}

/// Lifts this thread's bound (see [`set_limit`]); does nothing on a thread being
/// torn down (a panic hook may call it).
pub fn lift_limit() {
    let _ = LIMIT.try_with(|m| m.set(isize::MAX));
}

/// Runs `f`; returns its result and how far this thread's heap rose above where it
/// was when `f` started (bytes, at the highest point).
pub fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let start = live();
    reset_peak();
    let r = f();
    let rise = peak().saturating_sub(start);
    (r, usize::try_from(rise).unwrap_or(0))
}

/// Runs `f` with this thread's heap allowed to grow by at most `bytes` beyond what
/// it holds now: allocations past that fail (an infallible one aborts the test
/// binary, as it would abort the kernel). Returns `f`'s result and how many
/// allocations were refused.
pub fn limited<R>(bytes: usize, f: impl FnOnce() -> R) -> (R, usize) {
    let before = REFUSED.with(Cell::get);
    let old = LIMIT.with(|m| m.replace(live().saturating_add(signed(bytes))));
    let r = f();
    LIMIT.with(|m| m.set(old));
    (r, REFUSED.with(Cell::get) - before)
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::count_test_heap!();

    #[test]
    fn counts_this_threads_peak_and_refuses_past_the_limit() {
        let (_, rise) = peak_during(|| {
            let v = vec![0u8; 100_000];
            drop(v);
        });
        assert!((100_000..110_000).contains(&rise), "{rise}");
        let (r, refused) = limited(10_000, || {
            let mut v: Vec<u8> = Vec::new();
            v.try_reserve_exact(50_000).is_err()
        });
        assert!(r);
        assert_eq!(refused, 1);
        // The limit is gone again.
        let mut v: Vec<u8> = Vec::new();
        assert!(v.try_reserve_exact(50_000).is_ok());
    }
}
