//! The completion path: every response is copied out of the ring once and checked
//! (id in range and in flight, operation matching, status known); its request's
//! grants end and it completes. A bad response marks the disk broken: its pending
//! I/O fails (its grants kept until the teardown), nothing panics.

use super::grants::Abandoned;
use super::request::Slot;
use super::{Blkfront, BlockError, Completion, IoBuf};
use crate::blkif;
use crate::platform::XenPlatform;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_xen::shared::PAGE_BYTES;

impl<P: XenPlatform> Blkfront<P> {
    /// Takes the request in slot `idx` out of flight, if it is in flight: what it
    /// held (tag, operation, grants, buffers, indirect pages, bounced buffers), the
    /// slot left free.
    pub(super) fn take_in_flight(&mut self, idx: usize) -> Option<Slot> {
        self.slots.get_mut(idx)?.take().map(|s| *s)
    }

    /// Marks the device broken and fails everything in flight.
    pub(super) fn fail(&mut self, why: String) {
        if self.broken.is_some() {
            return;
        }
        self.link.ring.mark_broken();
        for idx in 0..self.slots.len() {
            let Some(slot) = self.take_in_flight(idx) else {
                continue;
            };
            // The backend has not answered: it may still consume the request, so
            // its grants stay and its pages are held until the teardown (a grant
            // ended now frees its ref, which a stale request could then reach on
            // another page). The caller gets its answer without buffers.
            // A bounced buffer of the caller's was never the backend's: it goes
            // back (our page in its place stays with the request).
            let theirs: Vec<IoBuf> = slot.bounced.into_iter().map(|(_, b)| b).collect();
            self.abandoned.push(Abandoned {
                grants: slot.grants,
                bufs: slot.bufs,
                indirect: slot.indirect,
            });
            self.done.push_back(Completion {
                tag: slot.tag,
                result: Err(BlockError::Broken(why.clone())),
                bufs: theirs,
            });
        }
        self.broken = Some(why);
    }

    pub(super) fn complete(&mut self, raw: &[u8; blkif::RESPONSE_BYTES]) {
        let rsp = blkif::decode_response(raw);
        let Some(idx) = usize::try_from(rsp.id)
            .ok()
            .filter(|&i| i < self.slots.len())
        else {
            return self.fail(format!("response id {} out of range", rsp.id));
        };
        let Some(slot) = self.slots[idx].as_deref() else {
            return self.fail(format!("response id {} not in flight (duplicate?)", rsp.id));
        };
        let sent = slot.op;
        let op_ok = rsp.operation == sent
            || (rsp.operation == blkif::OP_INDIRECT && !slot.indirect.is_empty());
        if !op_ok {
            return self.fail(format!(
                "response id {} has operation {} for request operation {sent}",
                rsp.id, rsp.operation
            ));
        }
        let result = match rsp.status {
            blkif::RSP_OKAY => Ok(()),
            blkif::RSP_ERROR => Err(BlockError::Io),
            blkif::RSP_EOPNOTSUPP => {
                match sent {
                    blkif::OP_FLUSH_DISKCACHE => self.info.features.flush = false,
                    blkif::OP_WRITE_BARRIER => self.info.features.barrier = false,
                    blkif::OP_DISCARD => self.info.features.discard = false,
                    _ => {}
                }
                Err(BlockError::NotSupported)
            }
            s => return self.fail(format!("response id {} has unknown status {s}", rsp.id)),
        };
        let Some(Slot {
            tag,
            grants,
            mut indirect,
            mut bufs,
            bounced,
            ..
        }) = self.take_in_flight(idx)
        else {
            return; // in flight: seen above
        };
        // (bounced buffers were never granted per request: their indexes are not
        // among the grants' below)
        self.unbounce(&mut bufs, bounced, sent == blkif::OP_READ && result.is_ok());
        // A page the backend still maps after answering is quarantined (never
        // reused: not returned, not pooled) and the disk is marked broken, as Linux
        // does since XSA-396.
        let kept = self.end_grants(grants, &mut bufs, &mut indirect);
        self.pool.extend(indirect);
        self.free_slots.push(idx);
        let (result, broken) = if kept > 0 {
            let why = format!(
                "response id {} answered with {kept} page(s) still mapped by the backend",
                rsp.id
            );
            (Err(BlockError::Broken(why.clone())), Some(why))
        } else {
            (result, None)
        };
        let bytes: u64 = bufs.len() as u64 * PAGE_BYTES as u64;
        self.stats.requests += 1;
        match sent {
            blkif::OP_READ => self.stats.read_bytes += bytes,
            blkif::OP_WRITE => self.stats.written_bytes += bytes,
            _ => {}
        }
        self.done.push_back(Completion { tag, result, bufs });
        if let Some(why) = broken {
            self.fail(why);
        }
    }
}
