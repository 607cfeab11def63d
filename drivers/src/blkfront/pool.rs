//! I/O buffers: 4 KiB pages from the disk's pool. With persistent grants a pool
//! page stays granted to the backend for good, so callers fill and read the granted
//! memory directly; a buffer from elsewhere (another disk's) is swapped for one of
//! ours for the life of a request (bounced).

use super::Blkfront;
use crate::blkif;
use crate::platform::{DmaPages, XenPlatform};
use alloc::vec::Vec;
use xenlet_xen::gnttab::{Access, Grant};
use xenlet_xen::shared::PAGE_BYTES;

/// Most I/O buffer pages per disk (4 MiB of data plus indirect pages): bounded so a
/// 32 MiB guest keeps memory for everything else.
pub const POOL_MAX_PAGES: usize = 1024 + 64;

/// A 4 KiB I/O buffer in grantable memory. Its bytes are reached by copy only.
pub struct IoBuf {
    pub(super) page: DmaPages,
    /// Persistent grant, and the connection it was made on (the backend's domain id
    /// and the device's resume count: see `Blkfront::conn`).
    pub(super) grant: Option<(Grant, u32)>,
}

impl IoBuf {
    /// Copies `data` into the buffer at `offset`.
    pub fn write_at(&self, offset: usize, data: &[u8]) {
        self.page.mem().write_bytes(offset, data);
    }
    /// Copies bytes out of the buffer at `offset`.
    pub fn read_at(&self, offset: usize, out: &mut [u8]) {
        self.page.mem().read_bytes(offset, out);
    }
    /// Zeroes the buffer.
    pub fn zero(&self) {
        self.page.mem().zero();
    }
    /// Size in bytes.
    pub fn len(&self) -> usize {
        PAGE_BYTES
    }
    /// Never empty.
    pub fn is_empty(&self) -> bool {
        false
    }
    /// A buffer over plain memory, for host tests of code above [`BlockDevice`].
    #[cfg(any(test, feature = "test-util"))]
    pub fn for_test() -> IoBuf {
        IoBuf {
            page: DmaPages::leak_for_test(0, 1).0,
            grant: None,
        }
    }
}

impl<P: XenPlatform> Blkfront<P> {
    pub(super) fn new_buf(&mut self) -> Option<IoBuf> {
        if self.pool_total >= self.pool_limit {
            return None;
        }
        let page = self.platform.alloc_pages(1)?;
        let grant = if self.info.features.persistent {
            match self
                .platform
                .grant(self.link.backend_id, &page, 0, Access::ReadWrite)
            {
                Ok(g) => Some((g, self.conn)),
                Err(_) => {
                    self.platform.free_pages(page);
                    return None;
                }
            }
        } else {
            None
        };
        self.pool_total += 1;
        Some(IoBuf { page, grant })
    }

    /// With persistent grants, swaps each buffer of `bufs` that is not granted to
    /// this backend (another disk's, in a disk-to-disk copy) for one of our own pool
    /// pages, copying a write's data in: Linux's blkback maps every grant of a
    /// persistent frontend read-write and keeps it, so a read-only per-request grant
    /// fails and a read-write one would stay mapped for good. Linux's blkfront copies
    /// into its persistent pages the same way. Returns the swapped-out buffers (for
    /// [`Blkfront::unbounce`]); `Err` if the pool has no page now (all swaps undone).
    pub(super) fn bounce(&mut self, op: u8, bufs: &mut [IoBuf]) -> Result<Vec<(usize, IoBuf)>, ()> {
        let mut bounced = Vec::new();
        if !self.info.features.persistent {
            return Ok(bounced);
        }
        let mut page = [0u8; PAGE_BYTES];
        for i in 0..bufs.len() {
            if matches!(&bufs[i].grant, Some((_, c)) if *c == self.conn) {
                continue;
            }
            let Some(own) = self.pool.pop().or_else(|| self.new_buf()) else {
                self.unbounce(bufs, bounced, false);
                return Err(());
            };
            if op == blkif::OP_WRITE {
                bufs[i].read_at(0, &mut page);
                own.write_at(0, &page);
            }
            let theirs = core::mem::replace(&mut bufs[i], own);
            bounced.push((i, theirs));
            self.stats.bounced_pages += 1;
        }
        Ok(bounced)
    }

    /// Puts the caller's buffers back in `bufs` (a read's data copied into them
    /// when `copy_back`), our pages back in the pool.
    pub(super) fn unbounce(
        &mut self,
        bufs: &mut [IoBuf],
        bounced: Vec<(usize, IoBuf)>,
        copy_back: bool,
    ) {
        let mut page = [0u8; PAGE_BYTES];
        for (i, theirs) in bounced {
            let Some(slot) = bufs.get_mut(i) else {
                continue; // not reachable: indexes come from `bounce`
            };
            let own = core::mem::replace(slot, theirs);
            if copy_back {
                own.read_at(0, &mut page);
                slot.write_at(0, &page);
            }
            self.pool.push(own);
        }
    }
}
