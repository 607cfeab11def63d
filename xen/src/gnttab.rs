//! Grant tables, version 1 (xen/include/public/grant_table.h).
//!
//! A v1 entry is 8 bytes: `flags` u16, `domid` u16, `frame` u32; 512 per page. To
//! grant, the frontend writes domid and frame, then (after a barrier) the flags; to
//! revoke, it clears the flags with a compare-exchange that fails while the backend
//! has the page mapped (`GTF_reading`/`GTF_writing`). A [`Grant`] handle owns its
//! reference: it can only be ended once, and only ending it gives the frame back.

use crate::shared::SharedPage;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{fence, Ordering};

/// `GTF_permit_access`.
pub const GTF_PERMIT_ACCESS: u16 = 1;
/// `GTF_readonly`.
pub const GTF_READONLY: u16 = 1 << 2;
/// `GTF_reading`: the backend has the page mapped for reading.
pub const GTF_READING: u16 = 1 << 3;
/// `GTF_writing`: the backend has the page mapped for writing.
pub const GTF_WRITING: u16 = 1 << 4;
/// v1 entries per grant-table frame.
pub const ENTRIES_PER_FRAME: u32 = 512;
/// `GNTTAB_NR_RESERVED_ENTRIES`: refs the toolstack uses (console, xenstore).
pub const RESERVED_ENTRIES: u32 = 8;

/// `GNTST_okay`: a map, unmap or copy succeeded.
pub const GNTST_OKAY: i16 = 0;
/// `GNTST_general_error`.
pub const GNTST_GENERAL_ERROR: i16 = -1;
/// `GNTST_bad_domain`: no such domain.
pub const GNTST_BAD_DOMAIN: i16 = -2;
/// `GNTST_bad_gntref`: no such grant reference (or not granted to us).
pub const GNTST_BAD_GNTREF: i16 = -3;
/// `GNTST_bad_copy_arg`: an offset or length outside the page.
pub const GNTST_BAD_COPY_ARG: i16 = -10;
/// `GNTST_permission_denied`: e.g. a write through a read-only grant.
pub const GNTST_PERMISSION_DENIED: i16 = -8;

/// Xen's name for a `GNTST_*` status.
pub fn status_name(status: i16) -> &'static str {
    match status {
        0 => "okay",
        -1 => "general error",
        -2 => "bad domain",
        -3 => "bad grant reference",
        -4 => "bad handle",
        -5 => "bad virtual address",
        -6 => "bad device address",
        -7 => "no device space",
        -8 => "permission denied",
        -9 => "bad page",
        -10 => "bad copy argument",
        -11 => "address too big",
        -12 => "try again",
        -13 => "no space",
        _ => "unknown status",
    }
}

/// A grant reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GrantRef(pub u32);

impl fmt::Display for GrantRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Read-only or read-write access for the other domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The backend may only read.
    ReadOnly,
    /// The backend may read and write.
    ReadWrite,
}

/// Grant-table failures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantError {
    /// No free reference and the table cannot grow.
    Exhausted,
    /// The backend still has the page mapped; try again later.
    InUse,
    /// The page index is outside the pages given.
    NoSuchPage,
}

impl fmt::Display for GrantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GrantError::Exhausted => "no free grant references",
            GrantError::InUse => "grant still mapped by the backend",
            GrantError::NoSuchPage => "no such page to grant",
        })
    }
}

/// Allocator of grant references over `capacity` entries (refs below
/// [`RESERVED_ENTRIES`] are never handed out).
#[derive(Debug)]
pub struct RefAllocator {
    /// Freed references, oldest first: handed out again in the order they were
    /// freed (first in, first out), so a reference is reused as late as possible.
    /// A backend that still used a stale reference (a request it had not consumed
    /// when the frontend gave up on it) then reaches nothing new for as long as can
    /// be, rather than the page granted right after.
    free: VecDeque<u32>,
    /// One bit per reference below `next`: set while it is handed out (so `free`
    /// checks a reference in constant time, not by searching the free list).
    allocated: Vec<u64>,
    next: u32,
    capacity: u32,
    in_use: u32,
}

impl RefAllocator {
    /// An allocator with `capacity` entries (grows with [`RefAllocator::grow`]).
    pub fn new(capacity: u32) -> Self {
        RefAllocator {
            free: VecDeque::new(),
            allocated: Vec::new(),
            next: RESERVED_ENTRIES,
            capacity,
            in_use: 0,
        }
    }

    /// Adds entries (a newly mapped frame).
    pub fn grow(&mut self, capacity: u32) {
        self.capacity = self.capacity.max(capacity);
    }

    /// A free reference, or `None` when all `capacity` are in use: one never used
    /// before while there is one, else the one freed longest ago.
    pub fn alloc(&mut self) -> Option<GrantRef> {
        let r = if self.next < self.capacity {
            self.next += 1;
            self.next - 1
        } else {
            self.free.pop_front()?
        };
        let (w, bit) = ((r / 64) as usize, 1u64 << (r % 64));
        if self.allocated.len() <= w {
            self.allocated.resize(w + 1, 0);
        }
        self.allocated[w] |= bit;
        self.in_use += 1;
        Some(GrantRef(r))
    }

    /// Returns a reference. Refusing unknown, reserved or already free refs keeps a
    /// buggy caller from corrupting the free list.
    pub fn free(&mut self, r: GrantRef) -> bool {
        let (w, bit) = ((r.0 / 64) as usize, 1u64 << (r.0 % 64));
        if r.0 < RESERVED_ENTRIES || r.0 >= self.next {
            return false;
        }
        match self.allocated.get_mut(w) {
            Some(word) if *word & bit != 0 => *word &= !bit,
            _ => return false,
        }
        self.free.push_back(r.0);
        self.in_use -= 1;
        true
    }

    /// References handed out and not freed.
    pub fn in_use(&self) -> u32 {
        self.in_use
    }

    /// Entries managed.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }
}

/// Byte offset of `r`'s entry within its frame, and the frame index.
pub fn locate(r: GrantRef) -> (usize, usize) {
    (
        (r.0 / ENTRIES_PER_FRAME) as usize,
        ((r.0 % ENTRIES_PER_FRAME) * 8) as usize,
    )
}

/// Writes a v1 entry granting `domid` access to guest frame `gfn`.
pub fn write_entry(page: &SharedPage, offset: usize, domid: u16, gfn: u32, access: Access) {
    page.write_bytes(offset + 2, &domid.to_le_bytes());
    page.write_bytes(offset + 4, &gfn.to_le_bytes());
    // domid and frame before flags: pairs with Xen's check of the flags on map.
    fence(Ordering::SeqCst);
    let ro = if access == Access::ReadOnly {
        GTF_READONLY
    } else {
        0
    };
    page.store_u16(offset, GTF_PERMIT_ACCESS | ro);
}

/// Revokes an entry unless the backend still maps it.
pub fn end_entry(page: &SharedPage, offset: usize) -> Result<(), GrantError> {
    let mut flags = page.load_u16(offset);
    loop {
        if flags & (GTF_READING | GTF_WRITING) != 0 {
            return Err(GrantError::InUse);
        }
        match page.cmpxchg_u16(offset, flags, 0) {
            Ok(_) => return Ok(()),
            Err(actual) => flags = actual,
        }
    }
}

/// An active grant: owns its reference until ended.
#[derive(Debug)]
#[must_use = "a grant must be ended; dropping it leaks the reference and the page"]
pub struct Grant {
    gref: GrantRef,
    gfn: u32,
}

impl Grant {
    /// Wraps a reference just written with [`write_entry`].
    pub fn new(gref: GrantRef, gfn: u32) -> Self {
        Grant { gref, gfn }
    }

    /// The reference to hand to the backend.
    pub fn gref(&self) -> GrantRef {
        self.gref
    }

    /// The granted guest frame.
    pub fn gfn(&self) -> u32 {
        self.gfn
    }

    /// Consumes the handle after the entry was revoked; returns (ref, frame) so the
    /// caller frees both. Only [`end_entry`] success should lead here.
    pub fn into_parts(self) -> (GrantRef, u32) {
        (self.gref, self.gfn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::testpage::page;

    #[test]
    fn refs_skip_reserved_and_are_reused() {
        let mut a = RefAllocator::new(RESERVED_ENTRIES + 3);
        let r: Vec<_> = (0..3).map(|_| a.alloc().unwrap()).collect();
        assert_eq!(r, [GrantRef(8), GrantRef(9), GrantRef(10)]);
        assert_eq!(a.alloc(), None);
        assert_eq!(a.in_use(), 3);
        assert!(a.free(GrantRef(9)));
        assert!(!a.free(GrantRef(9)), "double free refused");
        assert!(!a.free(GrantRef(3)), "reserved ref refused");
        assert!(!a.free(GrantRef(500)), "never allocated");
        assert_eq!(a.alloc(), Some(GrantRef(9)));
        a.grow(RESERVED_ENTRIES + 4);
        assert_eq!(a.alloc(), Some(GrantRef(11)));
        assert_eq!(a.in_use(), 4);
    }

    #[test]
    fn a_freed_ref_is_reused_last_not_first() {
        let mut a = RefAllocator::new(RESERVED_ENTRIES + 4);
        let r: Vec<_> = (0..4).map(|_| a.alloc().unwrap()).collect();
        // freed in this order: 10, 8, 11
        for i in [2, 0, 3] {
            assert!(a.free(r[i]));
        }
        // the ref freed just now (11) comes back last
        assert_eq!(a.alloc(), Some(r[2]));
        assert_eq!(a.alloc(), Some(r[0]));
        assert!(a.free(r[0]));
        assert_eq!(a.alloc(), Some(r[3]));
        assert_eq!(a.alloc(), Some(r[0]));
        assert_eq!(a.alloc(), None);
    }

    #[test]
    fn fresh_refs_go_before_freed_ones() {
        let mut a = RefAllocator::new(RESERVED_ENTRIES + 2);
        let r0 = a.alloc().unwrap();
        assert!(a.free(r0));
        assert_ne!(a.alloc(), Some(r0), "a never-used ref first");
        assert_eq!(a.alloc(), Some(r0));
    }

    #[test]
    fn freeing_is_constant_time() {
        // 200 000 references freed one by one: a search of the free list on each
        // free makes that 2e10 comparisons (tens of seconds); a bitmap, milliseconds.
        const N: u32 = 200_000;
        let mut a = RefAllocator::new(RESERVED_ENTRIES + N);
        let refs: Vec<_> = (0..N).map(|_| a.alloc().unwrap()).collect();
        let t = std::time::Instant::now();
        for r in &refs {
            assert!(a.free(*r));
        }
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{:?} to free {N} refs",
            t.elapsed()
        );
        assert_eq!(a.in_use(), 0);
        assert!(!a.free(refs[0]), "double free still refused");
        assert_eq!(a.alloc(), Some(refs[0]), "reused, the first freed first");
    }

    #[test]
    fn entry_layout_and_revocation() {
        let p = page();
        let (frame, off) = locate(GrantRef(513));
        assert_eq!((frame, off), (1, 8));
        write_entry(&p, off, 0, 0x1234, Access::ReadOnly);
        let mut raw = [0u8; 8];
        p.read_bytes(off, &mut raw);
        assert_eq!(raw, [0x05, 0, 0, 0, 0x34, 0x12, 0, 0]);
        // backend maps it: cannot end
        p.store_u16(off, GTF_PERMIT_ACCESS | GTF_READONLY | GTF_READING);
        assert_eq!(end_entry(&p, off), Err(GrantError::InUse));
        // backend unmaps
        p.store_u16(off, GTF_PERMIT_ACCESS | GTF_READONLY);
        assert_eq!(end_entry(&p, off), Ok(()));
        assert_eq!(p.load_u16(off), 0);
        let g = Grant::new(GrantRef(513), 0x1234);
        assert_eq!(g.into_parts(), (GrantRef(513), 0x1234));
    }
}
