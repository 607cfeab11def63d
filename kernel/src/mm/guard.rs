//! A global-allocator wrapper that refuses to allocate where allocation is forbidden:
//! in interrupt context. The heap's lock does not hold interrupts off and packet code
//! allocates with interrupts on, so an interrupt handler that allocated while the
//! interrupted code held the heap lock would spin the only vCPU forever. Handlers
//! never allocate by design; this check makes a slip fail loudly (a panic naming it)
//! instead of hanging once in a while.

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// `inner`, with allocation and freeing forbidden while a [`Forbidden`] guard lives,
/// counting the bytes of live allocations (what the program holds, apart from what
/// the allocator keeps for reuse).
pub struct CheckedAlloc<A> {
    inner: A,
    forbidden: AtomicU32,
    live: AtomicUsize,
}

/// While it lives, the allocator panics on any allocation or free.
pub struct Forbidden<'a> {
    depth: &'a AtomicU32,
}

impl Drop for Forbidden<'_> {
    fn drop(&mut self) {
        self.depth.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<A> CheckedAlloc<A> {
    /// Wraps `inner`.
    pub const fn new(inner: A) -> Self {
        CheckedAlloc {
            inner,
            forbidden: AtomicU32::new(0),
            live: AtomicUsize::new(0),
        }
    }

    /// Bytes in live allocations (requested sizes).
    pub fn live_bytes(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    /// The wrapped allocator.
    pub fn inner(&self) -> &A {
        &self.inner
    }

    /// Forbids allocation until the guard is dropped (nests).
    pub fn forbid(&self) -> Forbidden<'_> {
        self.forbidden.fetch_add(1, Ordering::SeqCst);
        Forbidden {
            depth: &self.forbidden,
        }
    }

    /// Whether allocation is forbidden now.
    pub fn is_forbidden(&self) -> bool {
        self.forbidden.load(Ordering::SeqCst) > 0
    }

    fn check(&self, what: &str, layout: Layout) {
        if self.is_forbidden() {
            // Let the panic path run without tripping this again.
            self.forbidden.store(0, Ordering::SeqCst);
            panic!(
                "heap {what} of {} bytes in interrupt context (allocation is forbidden there)",
                layout.size()
            );
        }
    }
}

// SAFETY: every call is passed on unchanged to `inner`, a GlobalAlloc; the check
// only panics before the call and changes no memory.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CheckedAlloc<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.check("allocation", layout);
        // SAFETY: the caller's contract for `alloc`, passed on.
        let p = unsafe { self.inner.alloc(layout) };
        if !p.is_null() {
            self.live.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.check("free", layout);
        // SAFETY: the caller's contract for `dealloc`, passed on (`ptr` came from `inner`).
        unsafe { self.inner.dealloc(ptr, layout) };
        self.live.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.check("allocation", layout);
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        if !p.is_null() {
            self.live.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.check("reallocation", layout);
        // SAFETY: the caller's contract for `realloc`, passed on.
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            self.live.fetch_add(new_size, Ordering::Relaxed);
            self.live.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::alloc::System;

    static A: CheckedAlloc<System> = CheckedAlloc::new(System);

    #[test]
    fn allocation_is_allowed_outside_and_after_a_forbidden_zone() {
        let l = Layout::from_size_align(64, 8).unwrap();
        // SAFETY: a non-zero-sized layout; the block is freed with the same layout.
        unsafe {
            let p = A.alloc(l);
            assert!(!p.is_null());
            A.dealloc(p, l);
        }
        let z = CheckedAlloc::new(System);
        {
            let _g = z.forbid();
            let _h = z.forbid();
            assert!(z.is_forbidden());
        }
        assert!(!z.is_forbidden(), "nested guards undo themselves");
    }

    #[test]
    fn live_bytes_follow_alloc_realloc_and_free() {
        let z = CheckedAlloc::new(System);
        let l = Layout::from_size_align(100, 8).unwrap();
        // SAFETY: non-zero-sized layouts; each block is freed with the layout it has.
        unsafe {
            let p = z.alloc(l);
            let q = z.alloc_zeroed(l);
            assert_eq!(z.live_bytes(), 200);
            let p = z.realloc(p, l, 300);
            assert_eq!(z.live_bytes(), 400);
            z.dealloc(p, Layout::from_size_align(300, 8).unwrap());
            z.dealloc(q, l);
        }
        assert_eq!(z.live_bytes(), 0);
    }

    #[test]
    #[should_panic(expected = "in interrupt context")]
    fn allocating_in_a_forbidden_zone_panics() {
        let z = CheckedAlloc::new(System);
        let _g = z.forbid();
        let l = Layout::from_size_align(16, 8).unwrap();
        // SAFETY: a non-zero-sized layout; it panics before allocating.
        let _ = unsafe { z.alloc(l) };
    }

    #[test]
    #[should_panic(expected = "free of 16 bytes in interrupt context")]
    fn freeing_in_a_forbidden_zone_panics() {
        let z = CheckedAlloc::new(System);
        let l = Layout::from_size_align(16, 8).unwrap();
        // SAFETY: a non-zero-sized layout.
        let p = unsafe { z.alloc(l) };
        let _g = z.forbid();
        // SAFETY: `p` came from `z` with `l`; it panics before freeing.
        unsafe { z.dealloc(p, l) };
    }
}
