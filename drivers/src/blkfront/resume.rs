//! The reconnect after the domain was restored or migrated (`xl restore`, `xl
//! migrate`): memory is as it was, but the ring, its grants and the event channel
//! belong to a domain that is gone, and a new backend waits at InitWait. As Linux's
//! `blkfront_resume`/`blkif_recover`, the device goes through the handshake again on
//! the same [`Blkfront`] (its name, buffers and counters kept).
//!
//! Grants made before the move name entries of the old grant table: the new one is
//! empty, so each such handle ends at once and its reference is free again. A
//! persistent grant is tagged with its connection ([`conn`]: the resume count and
//! the backend), so a buffer granted before the move is never taken for one of the
//! new backend's; the pool's are granted anew, and a caller's comes back through
//! [`Blkfront::refresh`] when it is freed.

use super::request::Slot;
use super::{xenbus, Blkfront, BlockDevice, BlockError, BlockRequest, Completion, IoBuf};
use crate::platform::XenPlatform;
use alloc::format;
use alloc::vec::Vec;
use xenlet_xen::evtchn::Port;
use xenlet_xen::gnttab::Access;

/// The connection key of persistent grants made now to `backend_id`.
pub(super) fn conn<P: XenPlatform>(p: &P, backend_id: u16) -> u32 {
    (p.resumes() << 16) | u32::from(backend_id)
}

/// A port number no channel has: what a device that could not reconnect holds in
/// place of its old domain's channel, so its teardown closes nothing of the new
/// domain's.
pub(super) const NO_PORT: Port = Port(u32::MAX);

impl<P: XenPlatform> Blkfront<P> {
    /// Reconnects after a restore or migration. Requests the old backend had not
    /// answered are sent again to the new one, as Linux's `blkif_recover` does (the
    /// kernel normally lets the disks answer before it suspends, but a suspend taken
    /// in the middle of a command can leave some): their grants, the ring's and the
    /// pool's are ended (empty entries now), the requests granted anew on the new
    /// ring; one that cannot go (the new ring is smaller, no grant) completes with an
    /// I/O error. Returns how many were sent again. If the handshake fails the disk
    /// is broken, with the reason, and those requests fail.
    pub fn resume(&mut self) -> Result<usize, BlockError> {
        // The requests in flight: the old backend will never answer them.
        let mut again = Vec::new();
        for idx in 0..self.slots.len() {
            let Some(Slot {
                tag,
                asked: (op, sector, bytes),
                grants,
                mut bufs,
                mut indirect,
                bounced,
                ..
            }) = self.take_in_flight(idx)
            else {
                continue;
            };
            self.unbounce(&mut bufs, bounced, false);
            self.end_grants(grants, &mut bufs, &mut indirect);
            self.pool.extend(indirect);
            self.free_slots.push(idx);
            again.push(BlockRequest {
                tag,
                op,
                sector,
                bytes,
                bufs,
            });
        }
        // Requests abandoned when the device broke before: no backend holds them now.
        let pages = self.end_abandoned();
        self.pool.extend(pages);
        // The old ring's grants (their references free again for the new ring).
        for g in core::mem::take(&mut self.link.ring_grants) {
            let _ = self.platform.end_grant(g);
        }
        let (link, info) = match xenbus::connect(&self.platform, self.vdev, self.info.name.clone())
        {
            Ok(l) => l,
            Err(e) => {
                self.link.port = NO_PORT;
                self.fail(format!("not reconnected after a restore: {e}"));
                self.fail_all(again);
                return Err(e);
            }
        };
        let old = core::mem::replace(&mut self.link, link);
        self.platform.free_pages(old.ring.into_pages());
        if info.sectors != self.info.sectors {
            // Not the disk it was: what is mounted on it must not write there.
            let why = format!(
                "after the restore the disk has {} sectors, not {}",
                info.sectors, self.info.sectors
            );
            self.fail(why.clone());
            self.fail_all(again);
            return Err(BlockError::Handshake(why));
        }
        self.conn = conn(&self.platform, self.link.backend_id);
        let entries = self.link.ring.size() as usize;
        self.slots.resize_with(entries, || None);
        self.free_slots = (0..entries).rev().collect();
        self.pool_limit =
            (entries * info.features.max_segments as usize + 64).min(super::POOL_MAX_PAGES);
        self.info = info;
        let pool = core::mem::take(&mut self.pool);
        for b in pool {
            let b = self.refresh(b);
            self.pool.push(b);
        }
        self.broken = None;
        let mut sent = 0;
        for req in again {
            match self.start(req) {
                Ok(()) => sent += 1,
                Err((_, req)) => self.fail_all(alloc::vec![req]),
            }
        }
        self.kick();
        Ok(sent)
    }

    /// Requests that will not be sent again: each completes with an I/O error, its
    /// buffers back to the caller.
    fn fail_all(&mut self, reqs: Vec<BlockRequest>) {
        for r in reqs {
            self.done.push_back(Completion {
                tag: r.tag,
                result: Err(BlockError::Io),
                bufs: r.bufs,
            });
        }
    }

    /// A buffer coming back to the pool: one granted before the last restore has its
    /// grant ended (the entry is empty now) and, with persistent grants, granted
    /// anew to this backend. A grant of this connection, or another disk's made
    /// since the restore, is left as it is.
    pub(super) fn refresh(&mut self, mut buf: IoBuf) -> IoBuf {
        let stale = matches!(&buf.grant, Some((_, c)) if c >> 16 != self.conn >> 16);
        if !stale {
            return buf;
        }
        if let Some((g, _)) = buf.grant.take() {
            if let Err(g) = self.platform.end_grant(g) {
                // Cannot be (no backend maps the old table); kept as it was.
                buf.grant = Some((g, 0));
                return buf;
            }
        }
        if self.info.features.persistent {
            if let Ok(g) =
                self.platform
                    .grant(self.link.backend_id, &buf.page, 0, Access::ReadWrite)
            {
                buf.grant = Some((g, self.conn));
            }
        }
        buf
    }
}
