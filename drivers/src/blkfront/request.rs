//! The submit path: a request is checked (operation offered, inside the disk,
//! aligned, not too many buffers), its buffers granted (or used through their
//! persistent grants, or bounced), encoded direct or indirect, and put on the ring
//! in a free slot; one that cannot go is undone and handed back.

use super::grants::Held;
use super::{Blkfront, BlockError, BlockOp, BlockRequest, IoBuf, SECTOR_BYTES};
use crate::blkif::{self, Segment};
use crate::platform::XenPlatform;
use alloc::boxed::Box;
use alloc::format;
use alloc::vec::Vec;
use xenlet_xen::gnttab::{Access, Grant};
use xenlet_xen::shared::PAGE_BYTES;

/// A request in flight, in its ring slot's entry of `Blkfront::slots` (boxed: a
/// free slot is one null pointer, where this whole struct in every entry took
/// 144 bytes a slot, 72 KiB for a 512-slot ring, most of it idle).
pub(super) struct Slot {
    pub(super) tag: u64,
    pub(super) op: u8,
    /// What the caller asked for (operation, first sector, bytes): what a restore
    /// sends again to the new backend.
    pub(super) asked: (BlockOp, u64, usize),
    pub(super) bufs: Vec<IoBuf>,
    pub(super) grants: Vec<(Grant, Held)>,
    pub(super) indirect: Vec<IoBuf>,
    /// The caller's buffers that were not this backend's (another disk's pool, a
    /// disk-to-disk copy) and went through one of ours instead: (index in `bufs`,
    /// the caller's buffer). See [`Blkfront::bounce`].
    pub(super) bounced: Vec<(usize, IoBuf)>,
}

impl<P: XenPlatform> Blkfront<P> {
    fn segments_for(&self, req: &BlockRequest) -> Result<Vec<u8>, BlockError> {
        // Sectors per buffer: 8 except possibly the last.
        let total_sectors = (req.bytes as u64) / SECTOR_BYTES;
        let mut left = total_sectors;
        let mut per = Vec::with_capacity(req.bufs.len());
        for _ in &req.bufs {
            let n = left.min(8) as u8;
            if n == 0 {
                return Err(BlockError::Invalid("more buffers than bytes"));
            }
            per.push(n);
            left -= u64::from(n);
        }
        if left != 0 {
            return Err(BlockError::Invalid("buffers too small for the byte count"));
        }
        Ok(per)
    }

    pub(super) fn start(&mut self, req: BlockRequest) -> Result<(), (BlockError, BlockRequest)> {
        if let Some(why) = &self.broken {
            return Err((BlockError::Broken(why.clone()), req));
        }
        let f = self.info.features;
        let (op, sectors) = match req.op {
            BlockOp::Read => (blkif::OP_READ, req.bytes as u64 / SECTOR_BYTES),
            BlockOp::Write => (blkif::OP_WRITE, req.bytes as u64 / SECTOR_BYTES),
            BlockOp::Flush if f.flush => (blkif::OP_FLUSH_DISKCACHE, 0),
            BlockOp::Flush if f.barrier => (blkif::OP_WRITE_BARRIER, 0),
            BlockOp::Flush => return Err((BlockError::NotSupported, req)),
            BlockOp::Discard { sectors } if f.discard => (blkif::OP_DISCARD, sectors),
            BlockOp::Discard { .. } => return Err((BlockError::NotSupported, req)),
        };
        if matches!(req.op, BlockOp::Write | BlockOp::Discard { .. }) && self.info.readonly {
            return Err((BlockError::ReadOnly, req));
        }
        if matches!(req.op, BlockOp::Read | BlockOp::Write) {
            if req.bytes == 0 || !(req.bytes as u64).is_multiple_of(SECTOR_BYTES) {
                return Err((BlockError::Invalid("length not a multiple of 512"), req));
            }
            if req.bufs.len() > f.max_segments as usize {
                return Err((BlockError::Invalid("too many buffers for one request"), req));
            }
        }
        if req
            .sector
            .checked_add(sectors)
            .is_none_or(|end| end > self.info.sectors)
        {
            return Err((BlockError::Invalid("beyond the end of the disk"), req));
        }
        let per = match self.segments_for(&req) {
            Ok(p) => p,
            Err(e) if matches!(req.op, BlockOp::Read | BlockOp::Write) => return Err((e, req)),
            Err(_) => Vec::new(),
        };
        let Some(slot_idx) = self.free_slots.pop() else {
            return Err((BlockError::Busy, req));
        };

        // A backend with persistent grants maps every grant it gets read-write and
        // keeps it: a foreign buffer goes through one of our own granted pages.
        let mut req = req;
        let bounced = match self.bounce(op, &mut req.bufs) {
            Ok(b) => b,
            Err(()) => {
                self.free_slots.push(slot_idx);
                return Err((BlockError::Busy, req));
            }
        };

        // Grant references for the buffers.
        let mut grants = Vec::new();
        let mut segs = Vec::with_capacity(req.bufs.len());
        let access = if op == blkif::OP_READ {
            Access::ReadWrite
        } else {
            Access::ReadOnly
        };
        for (bi, (buf, n)) in req.bufs.iter().zip(per.iter()).enumerate() {
            // A buffer persistently granted to this backend is used as is; one from
            // another disk's pool (a disk-to-disk copy) is granted for this request.
            let gref = match &buf.grant {
                Some((g, c)) if *c == self.conn => g.gref().0,
                _ => match self
                    .platform
                    .grant(self.link.backend_id, &buf.page, 0, access)
                {
                    Ok(g) => {
                        let r = g.gref().0;
                        grants.push((g, Held::Buf(bi)));
                        r
                    }
                    Err(_) => {
                        let mut req = req;
                        self.unwind(slot_idx, grants, Vec::new(), &mut req.bufs, bounced);
                        return Err((BlockError::Busy, req));
                    }
                },
            };
            segs.push(Segment {
                gref,
                first_sect: 0,
                last_sect: n - 1,
            });
        }

        let id = slot_idx as u64;
        let mut indirect = Vec::new();
        let entry = match op {
            blkif::OP_READ | blkif::OP_WRITE if segs.len() <= blkif::MAX_SEGMENTS => {
                blkif::encode_rw(op, self.vdev, id, req.sector, &segs)
            }
            blkif::OP_READ | blkif::OP_WRITE => {
                let pages = segs.len().div_ceil(blkif::SEGMENTS_PER_INDIRECT_PAGE);
                let mut irefs = Vec::with_capacity(pages);
                for chunk in segs.chunks(blkif::SEGMENTS_PER_INDIRECT_PAGE) {
                    let Some(ib) = self.pool.pop().or_else(|| self.new_buf()) else {
                        let mut req = req;
                        self.unwind(slot_idx, grants, indirect, &mut req.bufs, bounced);
                        return Err((BlockError::Busy, req));
                    };
                    let mut raw = [0u8; PAGE_BYTES];
                    blkif::encode_indirect_segments(chunk, &mut raw);
                    ib.write_at(0, &raw[..chunk.len() * 8]);
                    let r = match &ib.grant {
                        Some((g, c)) if *c == self.conn => g.gref().0,
                        _ => match self.platform.grant(
                            self.link.backend_id,
                            &ib.page,
                            0,
                            Access::ReadOnly,
                        ) {
                            Ok(g) => {
                                let r = g.gref().0;
                                grants.push((g, Held::Indirect(indirect.len())));
                                r
                            }
                            Err(_) => {
                                indirect.push(ib);
                                let mut req = req;
                                self.unwind(slot_idx, grants, indirect, &mut req.bufs, bounced);
                                return Err((BlockError::Busy, req));
                            }
                        },
                    };
                    irefs.push(r);
                    indirect.push(ib);
                }
                blkif::encode_indirect(op, self.vdev, id, req.sector, segs.len() as u16, &irefs)
            }
            blkif::OP_DISCARD => blkif::encode_discard(self.vdev, id, req.sector, sectors),
            _ => blkif::encode_flush(op, self.vdev, id),
        };
        if let Err(e) = self.link.ring.push_request(&entry) {
            let mut req = req;
            self.unwind(slot_idx, grants, indirect, &mut req.bufs, bounced);
            let err = if e == xenlet_xen::ring::RingError::Full {
                BlockError::Busy
            } else {
                BlockError::Broken(format!("{e}"))
            };
            return Err((err, req));
        }
        self.slots[slot_idx] = Some(Box::new(Slot {
            tag: req.tag,
            op,
            asked: (req.op, req.sector, req.bytes),
            bufs: req.bufs,
            grants,
            indirect,
            bounced,
        }));
        if op == blkif::OP_FLUSH_DISKCACHE || op == blkif::OP_WRITE_BARRIER {
            self.stats.flushes += 1;
        }
        Ok(())
    }

    /// Undoes a request that did not reach the ring: ends its grants (a page the
    /// backend maps all the same is quarantined, out of `bufs`), pools its indirect
    /// pages, frees the slot.
    fn unwind(
        &mut self,
        slot_idx: usize,
        grants: Vec<(Grant, Held)>,
        mut indirect: Vec<IoBuf>,
        bufs: &mut Vec<IoBuf>,
        bounced: Vec<(usize, IoBuf)>,
    ) {
        self.unbounce(bufs, bounced, false);
        self.end_grants(grants, bufs, &mut indirect);
        self.pool.extend(indirect);
        self.free_slots.push(slot_idx);
    }
}
