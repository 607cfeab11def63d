//! A page of memory shared with Xen or another domain, accessed by copy only.
//!
//! The other side may change the page at any time, so no Rust reference ever points
//! into it: reads and writes are bounds-checked volatile copies, atomics are done on
//! raw pointers (as Asterinas's `SafePtr` and Xen's `RING_COPY_REQUEST` do). This file
//! and `hypercall.rs` are the only ones in the crate that use `unsafe`.
#![allow(unsafe_code)]

use alloc::vec::Vec;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// Bytes in a page.
pub const PAGE_BYTES: usize = 4096;

/// Shared memory at a fixed address: one 4 KiB page, or a physically contiguous run
/// of pages (multi-page rings).
#[derive(Debug)]
pub struct SharedPage {
    base: *mut u8,
    len: usize,
}

// SAFETY: the page is only accessed through volatile copies and atomics, which are
// sound from any CPU; the pointer itself is just an address.
unsafe impl Send for SharedPage {}
// SAFETY: as above; no method hands out references into the page.
unsafe impl Sync for SharedPage {}

impl SharedPage {
    /// Wraps the page at `base`.
    ///
    /// # Safety
    /// `base` must be 4 KiB-aligned, mapped readable and writable for the life of the
    /// value, and not used as a Rust object by anyone else (it is memory Xen or a
    /// backend writes to).
    pub const unsafe fn new(base: *mut u8) -> Self {
        SharedPage {
            base,
            len: PAGE_BYTES,
        }
    }

    /// Wraps `pages` contiguous pages at `base`.
    ///
    /// # Safety
    /// As for [`SharedPage::new`], for all `pages` pages.
    pub const unsafe fn new_region(base: *mut u8, pages: usize) -> Self {
        SharedPage {
            base,
            len: pages * PAGE_BYTES,
        }
    }

    /// Fresh zeroed heap memory of `pages` pages, leaked so it lives forever: stands
    /// in for memory shared with another domain in host tests.
    #[cfg(any(test, feature = "test-util"))]
    pub fn leak_new(pages: usize) -> Self {
        extern crate std;
        #[repr(C, align(4096))]
        struct Page([u8; PAGE_BYTES]);
        let v: std::vec::Vec<Page> = (0..pages.max(1)).map(|_| Page([0; PAGE_BYTES])).collect();
        let leaked: &'static mut [Page] = std::vec::Vec::leak(v);
        // SAFETY: leaked, page-aligned heap memory of `pages` pages that nothing else references; it is never freed.
        unsafe { SharedPage::new_region(leaked.as_mut_ptr().cast(), pages.max(1)) }
    }

    /// A second handle on the same memory, for a test playing the other domain.
    #[cfg(any(test, feature = "test-util"))]
    pub fn alias_for_test(&self) -> Self {
        // SAFETY: both handles only copy and use atomics on memory that lives forever (test memory from `leak_new`).
        unsafe { SharedPage::new_region(self.base, self.len / PAGE_BYTES) }
    }

    /// Length in bytes.
    pub fn len_bytes(&self) -> usize {
        self.len
    }

    /// The page's address (its guest-physical address under identity mapping).
    pub fn addr(&self) -> u64 {
        self.base as u64
    }

    fn check(&self, offset: usize, len: usize, align: usize) -> usize {
        // An out-of-range offset is a bug in this crate's constants, never input.
        // Checked: `offset + len` must not wrap (release builds do not trap on overflow).
        let in_bounds = offset.checked_add(len).is_some_and(|end| end <= self.len);
        assert!(
            offset.is_multiple_of(align) && in_bounds,
            "shared page access out of bounds"
        );
        offset
    }

    /// Copies `buf.len()` bytes out of the page at `offset`.
    ///
    /// Volatile reads (the other domain may write at any time), a word at a time
    /// where the page address is 8-byte aligned: packets and blocks are copied
    /// through here, so byte-at-a-time would cost.
    pub fn read_bytes(&self, offset: usize, buf: &mut [u8]) {
        // SAFETY: `MaybeUninit<u8>` has `u8`'s layout and `copy_out` writes only initialised bytes through the view, so `buf` stays initialised.
        let out = unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) };
        self.copy_out(offset, out);
    }

    /// Appends `len` bytes of the page at `offset` to `out`, copied straight into
    /// its spare capacity: a received packet is built without first filling its
    /// buffer with zeroes only to copy over them (one pass over the data fewer).
    pub fn append_to(&self, offset: usize, len: usize, out: &mut Vec<u8>) {
        out.reserve(len);
        let old = out.len();
        self.copy_out(offset, &mut out.spare_capacity_mut()[..len]);
        // SAFETY: `copy_out` wrote all `len` bytes after the old length (reserved above), so the new length covers only initialised bytes.
        unsafe { out.set_len(old + len) };
    }

    /// Copies `out.len()` bytes out of the page at `offset` into `out`, writing
    /// every byte of it (see [`SharedPage::read_bytes`]).
    fn copy_out(&self, offset: usize, out: &mut [MaybeUninit<u8>]) {
        let off = self.check(offset, out.len(), 1);
        let head = ((8 - (off % 8)) % 8).min(out.len());
        let (h, rest) = out.split_at_mut(head);
        for (i, b) in h.iter_mut().enumerate() {
            // SAFETY: in bounds (checked above) of a mapped page (constructor contract).
            b.write(unsafe { self.base.add(off + i).read_volatile() });
        }
        let mut chunks = rest.chunks_exact_mut(8);
        let mut at = off + head;
        for c in &mut chunks {
            // SAFETY: in bounds (checked above); `at` is 8-aligned (base is page-aligned) so the u64 read is aligned.
            let w = unsafe { self.base.add(at).cast::<u64>().read_volatile() };
            for (d, v) in c.iter_mut().zip(w.to_ne_bytes()) {
                d.write(v);
            }
            at += 8;
        }
        for (i, b) in chunks.into_remainder().iter_mut().enumerate() {
            // SAFETY: in bounds (checked above) of a mapped page.
            b.write(unsafe { self.base.add(at + i).read_volatile() });
        }
    }

    /// Copies `buf` into the page at `offset` (volatile, a word at a time where
    /// aligned, as [`SharedPage::read_bytes`]).
    pub fn write_bytes(&self, offset: usize, buf: &[u8]) {
        let off = self.check(offset, buf.len(), 1);
        let head = ((8 - (off % 8)) % 8).min(buf.len());
        let (h, rest) = buf.split_at(head);
        for (i, b) in h.iter().enumerate() {
            // SAFETY: in bounds (checked above) of a mapped, writable page.
            unsafe { self.base.add(off + i).write_volatile(*b) };
        }
        let mut chunks = rest.chunks_exact(8);
        let mut at = off + head;
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            // SAFETY: in bounds (checked above); `at` is 8-aligned (base is page-aligned) so the u64 write is aligned.
            unsafe {
                self.base
                    .add(at)
                    .cast::<u64>()
                    .write_volatile(u64::from_ne_bytes(w))
            };
            at += 8;
        }
        for (i, b) in chunks.remainder().iter().enumerate() {
            // SAFETY: in bounds (checked above) of a mapped, writable page.
            unsafe { self.base.add(at + i).write_volatile(*b) };
        }
    }

    /// Zeroes the whole page.
    pub fn zero(&self) {
        for i in (0..self.len).step_by(8) {
            // SAFETY: `len` is a whole number of pages, so every 8-byte step below it is in the region and aligned.
            unsafe { self.base.add(i).cast::<u64>().write_volatile(0) };
        }
    }

    fn atomic_u8(&self, offset: usize) -> &AtomicU8 {
        let off = self.check(offset, 1, 1);
        // SAFETY: in bounds; AtomicU8 has alignment 1; the reference is to an atomic cell, whose concurrent modification by Xen is exactly what atomics allow, and it does not outlive `self`.
        unsafe { AtomicU8::from_ptr(self.base.add(off)) }
    }

    fn atomic_u16(&self, offset: usize) -> &AtomicU16 {
        let off = self.check(offset, 2, 2);
        // SAFETY: in bounds and 2-aligned (checked); see `atomic_u8`.
        unsafe { AtomicU16::from_ptr(self.base.add(off).cast()) }
    }

    fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        let off = self.check(offset, 4, 4);
        // SAFETY: in bounds and 4-aligned (checked); see `atomic_u8`.
        unsafe { AtomicU32::from_ptr(self.base.add(off).cast()) }
    }

    fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        let off = self.check(offset, 8, 8);
        // SAFETY: in bounds and 8-aligned (checked); see `atomic_u8`.
        unsafe { AtomicU64::from_ptr(self.base.add(off).cast()) }
    }

    /// Atomic load of a byte.
    pub fn load_u8(&self, offset: usize) -> u8 {
        self.atomic_u8(offset).load(Ordering::SeqCst)
    }
    /// Atomic store of a byte.
    pub fn store_u8(&self, offset: usize, v: u8) {
        self.atomic_u8(offset).store(v, Ordering::SeqCst)
    }
    /// Atomic load of a u16 (grant entry flags).
    pub fn load_u16(&self, offset: usize) -> u16 {
        self.atomic_u16(offset).load(Ordering::SeqCst)
    }
    /// Atomic store of a u16.
    pub fn store_u16(&self, offset: usize, v: u16) {
        self.atomic_u16(offset).store(v, Ordering::SeqCst)
    }
    /// Atomic compare-exchange of a u16; `Err(actual)` when it did not match.
    pub fn cmpxchg_u16(&self, offset: usize, current: u16, new: u16) -> Result<u16, u16> {
        self.atomic_u16(offset)
            .compare_exchange(current, new, Ordering::SeqCst, Ordering::SeqCst)
    }
    /// Atomic load of a u32 (ring indexes).
    pub fn load_u32(&self, offset: usize) -> u32 {
        self.atomic_u32(offset).load(Ordering::SeqCst)
    }
    /// Atomic store of a u32 (ring indexes).
    pub fn store_u32(&self, offset: usize, v: u32) {
        self.atomic_u32(offset).store(v, Ordering::SeqCst)
    }
    /// Atomic load of a u64.
    pub fn load_u64(&self, offset: usize) -> u64 {
        self.atomic_u64(offset).load(Ordering::SeqCst)
    }
    /// Atomic swap of a u64 (pending selector).
    pub fn swap_u64(&self, offset: usize, v: u64) -> u64 {
        self.atomic_u64(offset).swap(v, Ordering::SeqCst)
    }
    /// Atomic AND of a u64; returns the old value (clearing pending bits).
    pub fn and_u64(&self, offset: usize, v: u64) -> u64 {
        self.atomic_u64(offset).fetch_and(v, Ordering::SeqCst)
    }
    /// Atomic OR of a u64; returns the old value (setting mask bits).
    pub fn or_u64(&self, offset: usize, v: u64) -> u64 {
        self.atomic_u64(offset).fetch_or(v, Ordering::SeqCst)
    }
}

/// Physically contiguous pages that may be granted to another domain: owned and
/// opaque. Only the kernel makes them ([`DmaPages::from_frames`] is `unsafe`, which
/// the `forbid(unsafe_code)` drivers cannot call); a driver gets them from its
/// platform, reaches their bytes by copy ([`DmaPages::mem`]), grants them by page
/// index and gives them back. So a driver can neither name kernel memory to a
/// backend nor free frames it does not own (Asterinas' `DmaCoherent` is the model).
#[derive(Debug)]
pub struct DmaPages {
    mem: SharedPage,
    gfn: u64,
    count: usize,
}

impl DmaPages {
    /// Wraps `count` pages at guest frame `gfn`, reached through `mem`.
    ///
    /// # Safety
    /// `mem` must be exactly those `count` pages (identity-mapped at `gfn << 12`),
    /// owned by the caller and handed over whole: nothing else uses or frees them
    /// until the value is given back ([`DmaPages::into_frames`]).
    pub unsafe fn from_frames(mem: SharedPage, gfn: u64, count: usize) -> Self {
        DmaPages { mem, gfn, count }
    }

    /// The memory, reached by copy only (the other domain may change it any time).
    pub fn mem(&self) -> &SharedPage {
        &self.mem
    }

    /// Number of pages.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The guest frame of page `index`, if there is such a page: what a grant of
    /// it names.
    pub fn frame(&self, index: usize) -> Option<u64> {
        (index < self.count).then(|| self.gfn + index as u64)
    }

    /// Gives the pages up: their first frame and count, for the kernel to free.
    pub fn into_frames(self) -> (u64, usize) {
        (self.gfn, self.count)
    }

    /// Fresh zeroed heap pages standing in for frames `gfn..gfn + count` in host
    /// tests (leaked), with a second handle on them for the test's backend.
    #[cfg(any(test, feature = "test-util"))]
    pub fn leak_for_test(gfn: u64, count: usize) -> (Self, SharedPage) {
        let mem = SharedPage::leak_new(count);
        let alias = mem.alias_for_test();
        (DmaPages { mem, gfn, count }, alias)
    }
}

/// A page of another domain mapped into this one (`GNTTABOP_map_grant_ref`): owned
/// and opaque, like [`DmaPages`]. Only the kernel makes one
/// ([`ForeignPage::from_mapping`] is `unsafe`); a backend reaches its bytes by copy
/// ([`ForeignPage::mem`]: the other domain writes it at any time) and gives it back to
/// the kernel to unmap ([`ForeignPage::into_mapping`]), which is the only way to let
/// go of it (the kernel then gives the guest-physical frame its RAM back).
#[derive(Debug)]
#[must_use = "a mapped page must be unmapped through the platform"]
pub struct ForeignPage {
    mem: SharedPage,
    gfn: u64,
    handle: u32,
}

impl ForeignPage {
    /// Wraps the page mapped at guest frame `gfn` under grant handle `handle`,
    /// reached through `mem`.
    ///
    /// # Safety
    /// `mem` must be exactly that one page, mapped (identity) at `gfn << 12` for as
    /// long as the value lives, and used by nothing else: the mapping is undone only
    /// through [`ForeignPage::into_mapping`].
    pub unsafe fn from_mapping(mem: SharedPage, gfn: u64, handle: u32) -> Self {
        ForeignPage { mem, gfn, handle }
    }

    /// The page, by copy only.
    pub fn mem(&self) -> &SharedPage {
        &self.mem
    }

    /// Gives the mapping up: the guest frame it is at and its grant handle, for the
    /// kernel to unmap.
    pub fn into_mapping(self) -> (u64, u32) {
        (self.gfn, self.handle)
    }

    /// A second handle on test memory standing in for another domain's page mapped
    /// at `gfn` under `handle` (host tests).
    #[cfg(any(test, feature = "test-util"))]
    pub fn alias_for_test(page: &SharedPage, gfn: u64, handle: u32) -> Self {
        ForeignPage {
            mem: page.alias_for_test(),
            gfn,
            handle,
        }
    }
}

#[cfg(test)]
pub(crate) mod testpage {
    //! A heap page standing in for shared memory in host tests.
    use super::{SharedPage, PAGE_BYTES};

    #[repr(C, align(4096))]
    pub struct Page(pub [u8; PAGE_BYTES]);

    /// A second handle on the same memory, playing the other domain (tests only).
    pub fn alias(p: &SharedPage) -> SharedPage {
        // SAFETY: the same leaked test memory; both handles only copy and use atomics.
        unsafe { SharedPage::new_region(p.base, p.len / PAGE_BYTES) }
    }

    /// A leaked, zeroed page (tests only).
    pub fn page() -> SharedPage {
        let p: &'static mut Page = Box::leak(Box::new(Page([0; PAGE_BYTES])));
        // SAFETY: a leaked, aligned heap page used only through the SharedPage.
        unsafe { SharedPage::new(p.0.as_mut_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::testpage::page;

    #[test]
    fn copies_and_atomics_round_trip() {
        let p = page();
        p.write_bytes(100, b"xenlet");
        let mut b = [0u8; 6];
        p.read_bytes(100, &mut b);
        assert_eq!(&b, b"xenlet");
        p.store_u32(3072, 7);
        assert_eq!(p.load_u32(3072), 7);
        assert_eq!(p.or_u64(2048, 0b101), 0);
        assert_eq!(p.and_u64(2048, !0b1), 0b101);
        assert_eq!(p.swap_u64(2048, 0), 0b100);
    }

    #[test]
    fn word_copies_match_bytewise_at_every_alignment() {
        let p = page();
        let pattern: std::vec::Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
        for off in 0..17usize {
            for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 200] {
                p.zero();
                p.write_bytes(off, &pattern[..len]);
                // bytes around the write stay zero, the write lands exactly
                let mut all = [0u8; 240];
                p.read_bytes(0, &mut all);
                assert!(all[..off].iter().all(|&b| b == 0), "off {off} len {len}");
                assert_eq!(&all[off..off + len], &pattern[..len], "off {off} len {len}");
                assert!(
                    all[off + len..].iter().all(|&b| b == 0),
                    "off {off} len {len}"
                );
                let mut back = std::vec![0u8; len];
                p.read_bytes(off, &mut back);
                assert_eq!(back, &pattern[..len]);
                // appended after what a vector holds, with no zero fill first
                let mut grown = std::vec![9u8; 3];
                p.append_to(off, len, &mut grown);
                assert_eq!(&grown[..3], &[9, 9, 9], "off {off} len {len}");
                assert_eq!(&grown[3..], &pattern[..len], "off {off} len {len}");
            }
        }
        // the last bytes of the page
        p.write_bytes(super::PAGE_BYTES - 3, &[1, 2, 3]);
        let mut t = [0u8; 3];
        p.read_bytes(super::PAGE_BYTES - 3, &mut t);
        assert_eq!(t, [1, 2, 3]);
    }

    #[test]
    fn dma_pages_name_only_their_own_frames() {
        let (d, alias) = super::DmaPages::leak_for_test(0x500, 3);
        assert_eq!(d.count(), 3);
        assert_eq!(d.frame(0), Some(0x500));
        assert_eq!(d.frame(2), Some(0x502));
        assert_eq!(d.frame(3), None, "no page past the end");
        assert_eq!(d.frame(usize::MAX), None);
        d.mem().write_bytes(8192, b"x");
        let mut b = [0u8];
        alias.read_bytes(8192, &mut b);
        assert_eq!(&b, b"x");
        assert_eq!(d.into_frames(), (0x500, 3));
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn out_of_bounds_is_caught() {
        page().store_u32(4094, 1);
    }

    // `usize::MAX + 1` wraps to 0, which is `<= len`: without checked arithmetic a
    // release build (no overflow traps) reads the byte before the page.
    #[test]
    #[should_panic(expected = "out of bounds")]
    fn wrapping_offset_is_caught_read() {
        let mut b = [0u8; 1];
        page().read_bytes(usize::MAX, &mut b);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn wrapping_offset_is_caught_write() {
        page().write_bytes(usize::MAX - 1, &[0u8; 4]);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn wrapping_offset_is_caught_atomic() {
        // usize::MAX - 7 is 8-aligned, and + 8 wraps to 0.
        page().load_u64(usize::MAX - 7);
    }
}
