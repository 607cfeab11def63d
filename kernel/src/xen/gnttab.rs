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
