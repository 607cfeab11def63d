//! The domain's grant table: frames mapped on demand (`XENMAPSPACE_grant_table`),
//! references handed out as [`Grant`] handles that can be ended only once.

use crate::mm;
use alloc::vec::Vec;
use spin::Mutex;
use xenlet_xen::abi::XENMAPSPACE_grant_table;
use xenlet_xen::gnttab::{self, Access, Grant, GrantError, RefAllocator, ENTRIES_PER_FRAME};
use xenlet_xen::hypercall;
use xenlet_xen::shared::SharedPage;
use xenlet_xen::XenError;

struct Table {
    frames: Vec<SharedPage>,
    max_frames: u32,
    refs: RefAllocator,
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// Grant-table statistics for `xen`.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    /// Frames mapped.
    pub frames: u32,
    /// Most frames Xen allows.
    pub max_frames: u32,
    /// References in use.
    pub refs_in_use: u32,
}

fn map_frame(index: u32) -> Result<SharedPage, XenError> {
    let f = mm::heap::alloc_frames(1, 1).ok_or(XenError::NoMem)?;
    // SAFETY: a frame just taken from the allocator, given up as RAM: Xen maps grant table frame `index` there.
    unsafe { hypercall::add_to_physmap(XENMAPSPACE_grant_table, u64::from(index), f.addr >> 12) }?;
    // SAFETY: the frame is identity-mapped, page-aligned and now Xen's grant-table frame, accessed only through this SharedPage.
    Ok(unsafe { SharedPage::new(f.addr as *mut u8) })
}

/// Queries the table size and maps its first frame.
pub fn init() -> Result<Stats, XenError> {
    let (_, max_frames) = hypercall::gnttab_query_size()?;
    let first = map_frame(0)?;
    *TABLE.lock() = Some(Table {
        frames: alloc::vec![first],
        max_frames,
        refs: RefAllocator::new(ENTRIES_PER_FRAME),
    });
    Ok(stats().unwrap_or(Stats {
        frames: 1,
        max_frames,
        refs_in_use: 0,
    }))
}

/// After the domain was restored or migrated: the new domain's grant table is new
/// and empty, and none of its frames is mapped. Each frame is mapped again where it
/// was (`XENMAPSPACE_grant_table` at the same guest frame, as Linux's
/// `gnttab_resume`). The references handed out before stay allocated until their
/// owners end them (their entries are now empty, so ending them succeeds): each
/// frontend grants its pages anew when it reconnects.
pub fn resume() -> Result<u32, XenError> {
    x86_64::instructions::interrupts::without_interrupts(|| {
        let g = TABLE.lock();
        let Some(t) = g.as_ref() else { return Ok(0) };
        for (i, page) in t.frames.iter().enumerate() {
            let gfn = page.addr() >> 12;
            // SAFETY: the frame was given up to Xen for this grant-table frame at boot (it has been the table's since, reached only through `page`); mapping the new table's frame at the same guest frame restores that.
            unsafe { hypercall::add_to_physmap(XENMAPSPACE_grant_table, i as u64, gfn) }?;
        }
        Ok(t.frames.len() as u32)
    })
}

/// Current statistics, if the table is set up.
pub fn stats() -> Option<Stats> {
    x86_64::instructions::interrupts::without_interrupts(|| {
        TABLE.lock().as_ref().map(|t| Stats {
            frames: t.frames.len() as u32,
            max_frames: t.max_frames,
            refs_in_use: t.refs.in_use(),
        })
    })
}

/// Grants domain `domid` access to guest frame `gfn`; grows the table when full.
pub fn grant(domid: u16, gfn: u32, access: Access) -> Result<Grant, GrantError> {
    x86_64::instructions::interrupts::without_interrupts(|| {
        let mut g = TABLE.lock();
        let t = g.as_mut().ok_or(GrantError::Exhausted)?;
        let r = match t.refs.alloc() {
            Some(r) => r,
            None => {
                let next = t.frames.len() as u32;
                if next >= t.max_frames {
                    return Err(GrantError::Exhausted);
                }
                t.frames
                    .push(map_frame(next).map_err(|_| GrantError::Exhausted)?);
                t.refs.grow((next + 1) * ENTRIES_PER_FRAME);
                t.refs.alloc().ok_or(GrantError::Exhausted)?
            }
        };
        let (frame, off) = gnttab::locate(r);
        let page = t.frames.get(frame).ok_or(GrantError::Exhausted)?;
        gnttab::write_entry(page, off, domid, gfn, access);
        Ok(Grant::new(r, gfn))
    })
}

/// Ends a grant; gives the handle back if the backend still maps the page.
pub fn end(grant: Grant) -> Result<u32, Grant> {
    x86_64::instructions::interrupts::without_interrupts(|| {
        let mut g = TABLE.lock();
        let Some(t) = g.as_mut() else {
            return Err(grant);
        };
        let (frame, off) = gnttab::locate(grant.gref());
        let Some(page) = t.frames.get(frame) else {
            return Err(grant);
        };
        match gnttab::end_entry(page, off) {
            Ok(()) => {
                let (r, gfn) = grant.into_parts();
                t.refs.free(r);
                Ok(gfn)
            }
            Err(_) => Err(grant),
        }
    })
}

// The backend's side: other domains' grants mapped and copied (a driver domain).

/// Foreign pages mapped now, and frames lost to a failed unmap or repopulate (never
/// given back to the allocator: no RAM, or someone else's page, may be behind them).
static MAPPED: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
static LOST: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// (foreign pages mapped, frames lost), for `xen`.
pub fn foreign_stats() -> (u64, u64) {
    use core::sync::atomic::Ordering::Relaxed;
    (MAPPED.load(Relaxed), LOST.load(Relaxed))
}

/// Maps grant `gref` of domain `domid` (read-write if `writable`) into this domain,
/// the way Linux maps onto ballooned pages: a frame is taken from the allocator, its
/// RAM given back to Xen (`XENMEM_decrease_reservation`), and the grant mapped at
/// that guest frame. The boot page tables map it already (identity, write-back,
/// which is right for another domain's RAM); only Xen's guest-physical map changes.
/// Xen's `GNTST_*` status when it cannot.
pub fn map_foreign(
    domid: u16,
    gref: u32,
    writable: bool,
) -> Result<xenlet_xen::shared::ForeignPage, i16> {
    use core::sync::atomic::Ordering::Relaxed;
    use xenlet_xen::gnttab::GNTST_GENERAL_ERROR;
    let f = mm::heap::alloc_frames(1, 1).ok_or(GNTST_GENERAL_ERROR)?;
    if f.addr + 4096 > mm::heap::MAPPED_LIMIT {
        let _ = mm::heap::free_frames(f);
        return Err(GNTST_GENERAL_ERROR);
    }
    let gfn = f.addr >> 12;
    // SAFETY: the frame was just taken from the allocator and is used by nothing; from here on nothing reads or writes it as RAM (it goes back to the allocator only after `populate_physmap` made it RAM again).
    if unsafe { hypercall::decrease_reservation(gfn) }.is_err() {
        let _ = mm::heap::free_frames(f);
        return Err(GNTST_GENERAL_ERROR);
    }
    // SAFETY: `f.addr` is page-aligned, ours and empty (ballooned just above): the foreign page appears there and nowhere else.
    match unsafe { hypercall::gnttab_map_grant_ref(f.addr, domid, gref, writable) } {
        Ok(handle) => {
            MAPPED.fetch_add(1, Relaxed);
            // SAFETY: the page at `f.addr` (identity-mapped, below the mapping limit) is now the foreign page, mapped under `handle` until `unmap_foreign` takes this value back; nothing else uses the frame.
            let mem = unsafe { SharedPage::new(f.addr as *mut u8) };
            // SAFETY: as above: exactly that one page, mapped at `gfn`, owned by the returned value.
            Ok(unsafe { xenlet_xen::shared::ForeignPage::from_mapping(mem, gfn, handle) })
        }
        Err(status) => {
            give_back(gfn);
            Err(status)
        }
    }
}

/// Makes the ballooned frame `gfn` RAM again and returns it to the allocator; a frame
/// Xen will not repopulate is kept out of it for good.
fn give_back(gfn: u64) {
    // SAFETY: `gfn` was ballooned out by `map_foreign` and nothing is mapped there (never mapped, or unmapped successfully).
    if unsafe { hypercall::populate_physmap(gfn) }.is_ok() {
        let _ = mm::heap::free_frames(mm::FrameRun {
            addr: gfn << 12,
            count: 1,
        });
    } else {
        LOST.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    }
}

/// Unmaps a page [`map_foreign`] mapped and gives its frame its RAM back; false if
/// Xen refused the unmap (the frame is then kept out of the allocator for good).
pub fn unmap_foreign(page: xenlet_xen::shared::ForeignPage) -> bool {
    use core::sync::atomic::Ordering::Relaxed;
    let (gfn, handle) = page.into_mapping();
    // SAFETY: the `ForeignPage` (the only handle on the page) was consumed above, so nothing uses the page any more.
    match unsafe { hypercall::gnttab_unmap_grant_ref(gfn << 12, handle) } {
        Ok(()) => {
            MAPPED.fetch_sub(1, Relaxed);
            give_back(gfn);
            true
        }
        Err(_) => {
            LOST.fetch_add(1, Relaxed);
            false
        }
    }
}

/// Grant copies between our pages and other domains' grants, in one hypercall;
/// each op's status set. An op out of bounds, or naming a page its `DmaPages` does
/// not have, fails alone (`GNTST_bad_copy_arg`) without reaching Xen.
pub fn copy(ops: &mut [xenlet_drivers::platform::CopyOp<'_>]) {
    use xenlet_drivers::platform::CopyDir;
    use xenlet_xen::abi::{
        gnttab_copy, gnttab_copy_ptr, GNTCOPY_dest_gref, GNTCOPY_source_gref, DOMID_SELF,
    };
    use xenlet_xen::gnttab::{GNTST_BAD_COPY_ARG, GNTST_GENERAL_ERROR};
    let mut raw: Vec<gnttab_copy> = Vec::with_capacity(ops.len());
    let mut sent: Vec<usize> = Vec::with_capacity(ops.len());
    for (i, op) in ops.iter_mut().enumerate() {
        let Some(frame) = op.local.frame(op.page).filter(|_| op.in_bounds()) else {
            op.status = GNTST_BAD_COPY_ARG;
            continue;
        };
        let local = gnttab_copy_ptr {
            u: frame,
            domid: DOMID_SELF,
            offset: op.offset,
        };
        let remote = gnttab_copy_ptr {
            u: u64::from(op.gref),
            domid: op.domid,
            offset: op.remote_offset,
        };
        let (source, dest, flags) = match op.dir {
            CopyDir::FromRemote => (remote, local, GNTCOPY_source_gref),
            CopyDir::ToRemote => (local, remote, GNTCOPY_dest_gref),
        };
        raw.push(gnttab_copy {
            source,
            dest,
            len: op.len,
            flags,
            status: GNTST_GENERAL_ERROR,
        });
        sent.push(i);
    }
    if raw.is_empty() {
        return;
    }
    // timed: on the nested test bed each call is a costly VM exit (`xen` shows them)
    let ok = super::traps::timed(super::traps::Trap::GrantCopy, || {
        // SAFETY: every local side names a page of a `DmaPages` the caller holds (checked by `frame` above: it owns exactly those frames and lends them to the copy for the call) with offset + len inside the page (`in_bounds`); Xen writes only there, or reads. The remote sides are checked by Xen.
        unsafe { hypercall::gnttab_copy(&mut raw) }
    })
    .is_ok();
    super::traps::count_copy_ops(raw.len());
    for (r, &i) in raw.iter().zip(&sent) {
        if let Some(op) = ops.get_mut(i) {
            op.status = if ok { r.status } else { GNTST_GENERAL_ERROR };
        }
    }
}
