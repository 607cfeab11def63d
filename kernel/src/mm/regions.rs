//! The heap's backing store: first-fit regions (`linked_list_allocator`) that grow
//! on demand from the frame allocator, and the memory-pressure signal.
//!
//! A fixed heap carved at boot split a small guest's memory badly: at `memory = 8`
//! the heap was 1.25 MiB while frames sat unused after the vifs and disks had taken
//! theirs, and a `cp -r` ran the heap out and aborted the kernel (Rust's infallible
//! allocations panic on failure; stable `no_std` has no way to catch that). Linux
//! does not partition memory that way either: the slab takes pages from the page
//! allocator as it needs them, down to a watermark kept for I/O. So here: when no
//! region has room, the heap takes a new run of frames (at least [`GROW_BYTES`]) as
//! long as [`Grow`] says the frames left stay above their reserve.
//!
//! Growth moves the limit; it does not remove it. What keeps a full heap from
//! aborting the kernel is that the big, input-driven allocations are fallible and
//! the paths that grow without bound (the filesystems' caches and write-behind, a
//! command's buffers) ask [`RegionHeap::available`] first and fail with ENOMEM (or
//! shrink their caches) below the low-water mark: what remains below the mark is
//! for the small infallible allocations of work already under way (Linux's
//! watermarks and `__GFP_MEMALLOC` reserve play the same part).

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{null_mut, NonNull};
use linked_list_allocator::Heap;
use spin::Mutex;

/// Regions the heap can be made of (the boot region and later growth).
pub const MAX_REGIONS: usize = 24;
/// Least the heap takes when it grows (fewer, larger regions keep first-fit fast).
pub const GROW_BYTES: usize = 256 * 1024;
const PAGE: usize = 4096;

/// Where new heap memory comes from.
pub trait Grow {
    /// A run of at least `bytes` (a multiple of 4 KiB) that the heap owns from now
    /// on, as (address, length); None when it cannot be spared.
    fn take(&self, bytes: usize) -> Option<(usize, usize)>;
    /// Bytes [`Grow::take`] could still give.
    fn spare(&self) -> usize;
}

/// No growth: the heap is what it was given.
pub struct NoGrow;

impl Grow for NoGrow {
    fn take(&self, _bytes: usize) -> Option<(usize, usize)> {
        None
    }
    fn spare(&self) -> usize {
        0
    }
}

struct Regions {
    heaps: [Heap; MAX_REGIONS],
    len: usize,
}

/// A first-fit heap over up to [`MAX_REGIONS`] regions, growing through `G`.
pub struct RegionHeap<G> {
    regions: Mutex<Regions>,
    grow: G,
}

/// What the heap holds: bytes in its regions, their used and free parts, regions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapStats {
    /// Bytes the regions span.
    pub size: usize,
    /// Bytes handed out (as the first-fit lists count them).
    pub used: usize,
    /// Bytes free in the regions.
    pub free: usize,
    /// Regions (1 + times the heap grew).
    pub regions: usize,
}

impl<G: Grow> RegionHeap<G> {
    /// An empty heap that grows through `grow`.
    pub const fn new(grow: G) -> Self {
        RegionHeap {
            regions: Mutex::new(Regions {
                heaps: [const { Heap::empty() }; MAX_REGIONS],
                len: 0,
            }),
            grow,
        }
    }

    /// Gives the heap `[addr, addr + len)`. Returns false (and leaves the memory
    /// alone) when every region slot is taken or `len` is too small to hold a hole.
    ///
    /// # Safety
    /// The range is valid, writable memory that nothing else uses, for good.
    pub unsafe fn add_region(&self, addr: usize, len: usize) -> bool {
        let mut r = self.regions.lock();
        // SAFETY: the caller's contract, passed on.
        unsafe { Self::add_locked(&mut r, addr, len) }
    }

    /// # Safety
    /// As [`RegionHeap::add_region`].
    unsafe fn add_locked(r: &mut Regions, addr: usize, len: usize) -> bool {
        if r.len == MAX_REGIONS || len < 64 || addr == 0 {
            return false;
        }
        let i = r.len;
        // SAFETY: the caller gives `[addr, addr + len)` to the heap for good; slot `i` is empty (never initialised).
        unsafe { r.heaps[i].init(addr as *mut u8, len) };
        r.len += 1;
        true
    }

    /// The regions' sizes, use and count.
    pub fn stats(&self) -> HeapStats {
        let r = self.regions.lock();
        let mut s = HeapStats {
            regions: r.len,
            ..HeapStats::default()
        };
        for h in &r.heaps[..r.len] {
            s.size += h.size();
            s.used += h.used();
            s.free += h.free();
        }
        s
    }

    /// Bytes that could still be allocated: free in the regions plus what the heap
    /// could still take (fragmentation aside).
    pub fn available(&self) -> usize {
        self.stats().free + self.grow.spare()
    }

    /// The growth source.
    pub fn grower(&self) -> &G {
        &self.grow
    }
}

// SAFETY: blocks come from `linked_list_allocator`'s first-fit lists over regions
// the heap owns (the boot run and runs taken from `Grow`, given for good), each
// handed out once and returned to the region that holds its address.
unsafe impl<G: Grow> GlobalAlloc for RegionHeap<G> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut r = self.regions.lock();
        let n = r.len;
        for h in &mut r.heaps[..n] {
            if let Ok(p) = h.allocate_first_fit(layout) {
                return p.as_ptr();
            }
        }
        if n == MAX_REGIONS {
            return null_mut();
        }
        // Room for the block at any alignment, and the list's own header.
        let need = layout
            .size()
            .saturating_add(layout.align())
            .saturating_add(64);
        let want = need.max(GROW_BYTES).min(self.grow.spare().max(need));
        let want = want.div_ceil(PAGE).saturating_mul(PAGE);
        let Some((addr, len)) = self.grow.take(want) else {
            return null_mut();
        };
        // SAFETY: `Grow::take` handed this run over for good: free, writable, used by nothing else.
        if !unsafe { Self::add_locked(&mut r, addr, len) } {
            return null_mut();
        }
        let last = r.len - 1;
        r.heaps[last]
            .allocate_first_fit(layout)
            .map_or(null_mut(), NonNull::as_ptr)
    }

    // SAFETY: (the trait's contract) `ptr` came from `alloc` with `layout`.
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let Some(p) = NonNull::new(ptr) else {
            return;
        };
        let mut r = self.regions.lock();
        let n = r.len;
        let a = ptr as usize;
        // A block lies wholly in the region that gave it; one no region holds cannot
        // have come from here and is left alone (leaked) rather than corrupt a list.
        if let Some(h) = r.heaps[..n]
            .iter_mut()
            .find(|h| (h.bottom() as usize) <= a && a < h.top() as usize)
        {
            // SAFETY: the caller's contract: `ptr` came from this heap's `alloc` with `layout`, so from region `h`'s first-fit list.
            unsafe { h.deallocate(p, layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use core::sync::atomic::{AtomicUsize, Ordering};
    use std::alloc::System;
    use std::vec::Vec;

    /// Runs of host memory, as many bytes as `budget` allows (leaked: the heap owns
    /// them for good, as it does frames).
    struct HostGrow {
        budget: AtomicUsize,
        taken: AtomicUsize,
    }

    impl HostGrow {
        fn new(budget: usize) -> Self {
            HostGrow {
                budget: AtomicUsize::new(budget),
                taken: AtomicUsize::new(0),
            }
        }
    }

    impl Grow for HostGrow {
        fn take(&self, bytes: usize) -> Option<(usize, usize)> {
            let left = self.budget.load(Ordering::Relaxed);
            if bytes > left || !bytes.is_multiple_of(PAGE) {
                return None;
            }
            self.budget.store(left - bytes, Ordering::Relaxed);
            self.taken.fetch_add(1, Ordering::Relaxed);
            let l = Layout::from_size_align(bytes, PAGE).unwrap();
            // SAFETY: a non-zero layout.
            let p = unsafe { System.alloc(l) };
            (!p.is_null()).then_some((p as usize, bytes))
        }
        fn spare(&self) -> usize {
            self.budget.load(Ordering::Relaxed)
        }
    }

    fn boot_region<G: Grow>(h: &RegionHeap<G>, bytes: usize) {
        let l = Layout::from_size_align(bytes, PAGE).unwrap();
        // SAFETY: a non-zero layout; the run is leaked to the heap.
        let p = unsafe { System.alloc(l) };
        // SAFETY: fresh host memory, given to the heap for good.
        assert!(unsafe { h.add_region(p as usize, bytes) });
    }

    #[test]
    fn grows_past_its_boot_region_until_the_source_says_no_then_fails_cleanly() {
        let h = RegionHeap::new(HostGrow::new(1 << 20));
        boot_region(&h, 64 * 1024);
        let l = Layout::from_size_align(48 * 1024, 8).unwrap();
        let mut got = Vec::new();
        loop {
            // SAFETY: non-zero size.
            let p = unsafe { h.alloc(l) };
            if p.is_null() {
                break;
            }
            // SAFETY: a fresh block of 48 KiB.
            unsafe { core::ptr::write_bytes(p, got.len() as u8, l.size()) };
            got.push(p);
            assert!(got.len() < 100, "the source's budget bounds the heap");
        }
        // 64 KiB boot + 1 MiB grown (in 256 KiB steps): 5 blocks each of 256 KiB, 1 of the boot's.
        assert_eq!(got.len(), 1 + 4 * 5, "blocks in 64 KiB + 4 x 256 KiB");
        assert_eq!(h.grower().taken.load(Ordering::Relaxed), 4);
        assert_eq!(h.available(), h.stats().free, "nothing left to take");
        // Every block freed goes back to its own region; all can be had again.
        for (i, p) in got.iter().enumerate() {
            // SAFETY: the block is live and was filled above.
            let s = unsafe { core::slice::from_raw_parts(*p, l.size()) };
            assert!(s.iter().all(|&b| b == i as u8), "block {i} overwritten");
            // SAFETY: allocated by `h` with `l`, freed once.
            unsafe { h.dealloc(*p, l) };
        }
        assert_eq!(h.stats().used, 0);
        for _ in 0..got.len() {
            // SAFETY: non-zero size.
            assert!(!unsafe { h.alloc(l) }.is_null());
        }
        assert_eq!(h.stats().regions, 5, "no growth for memory it already has");
    }

    #[test]
    fn a_block_bigger_than_the_growth_step_takes_a_region_of_its_own() {
        let h = RegionHeap::new(HostGrow::new(4 << 20));
        boot_region(&h, 16 * 1024);
        let l = Layout::from_size_align(1 << 20, 4096).unwrap();
        // SAFETY: non-zero size.
        let p = unsafe { h.alloc(l) };
        assert!(!p.is_null());
        assert_eq!(p as usize % 4096, 0);
        assert!(h.stats().size >= (1 << 20) + 16 * 1024);
        // Asking for more than the source has fails, and the heap still works.
        let huge = Layout::from_size_align(8 << 20, 8).unwrap();
        // SAFETY: non-zero size.
        assert!(unsafe { h.alloc(huge) }.is_null());
        let small = Layout::from_size_align(100, 8).unwrap();
        // SAFETY: non-zero size.
        let q = unsafe { h.alloc(small) };
        assert!(!q.is_null());
        // SAFETY: allocated above with these layouts.
        unsafe {
            h.dealloc(q, small);
            h.dealloc(p, l);
        }
        assert_eq!(h.stats().used, 0);
    }

    #[test]
    fn without_growth_the_boot_region_is_all_and_foreign_frees_are_ignored() {
        let h = RegionHeap::new(NoGrow);
        boot_region(&h, 32 * 1024);
        let l = Layout::from_size_align(40 * 1024, 8).unwrap();
        // SAFETY: non-zero size.
        assert!(unsafe { h.alloc(l) }.is_null());
        let before = h.stats();
        let mut outside = [0u64; 8];
        // SAFETY: the pointer is not the heap's: dealloc must leave it (and the lists) alone.
        unsafe { h.dealloc(outside.as_mut_ptr().cast(), Layout::new::<[u64; 8]>()) };
        assert_eq!(h.stats(), before);
        assert_eq!(outside, [0; 8]);
    }
}
