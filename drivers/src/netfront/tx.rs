//! Transmit: every TX ring slot owns a page granted read-only for good; a packet is
//! copied into the pages of the slots it takes (several slots with
//! `NETTXF_more_data` when it is larger than a page, and a GSO extra-info slot for a
//! GSO packet) and the slots are free again on the backend's response.

use super::queue::{Queue, QueueError};
use super::xenbus::Link;
use super::{LinkStats, NetError, Netfront, NetfrontStats};
use crate::flow::tx_queue;
use crate::netif::{self, TxRequest};
use crate::platform::XenPlatform;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_xen::shared::PAGE_BYTES;

impl Queue {
    /// TX slots free now.
    pub(super) fn tx_free_slots(&self) -> usize {
        self.tx_free.len().min(self.tx.free_requests() as usize)
    }

    /// Queues one packet (already checked: 1..=65535 bytes, one page unless
    /// scatter-gather is on) in `chunks.len()` slots, plus a GSO extra-info slot
    /// when `gso` (segment size, `GSO_TYPE_*`) is set.
    pub(super) fn send<P: XenPlatform>(
        &mut self,
        p: &P,
        frame: &[u8],
        gso: Option<(u16, u8)>,
        csum_blank: bool,
        stats: &mut LinkStats,
        xs: &mut NetfrontStats,
    ) -> Result<(), QueueError> {
        let chunks: Vec<&[u8]> = frame.chunks(PAGE_BYTES).collect();
        let ring_slots = chunks.len() + usize::from(gso.is_some());
        let fits = |q: &Self| {
            q.tx_free.len() >= chunks.len() && q.tx.free_requests() as usize >= ring_slots
        };
        if !fits(self) {
            self.reap_tx(stats, xs).map_err(QueueError::Broken)?;
            if !fits(self) {
                xs.tx_ring_full += 1;
                return Err(QueueError::Busy);
            }
        }
        for (i, chunk) in chunks.iter().enumerate() {
            let id = self.tx_free.pop().ok_or(QueueError::Busy)?;
            let Some(slot) = self.tx_slots.get_mut(usize::from(id)) else {
                return Err(QueueError::Broken(format!("tx slot {id} out of range")));
            };
            slot.page.mem().write_bytes(0, chunk);
            let mut more = if i + 1 < chunks.len() {
                netif::NETTXF_MORE_DATA
            } else {
                0
            };
            if i == 0 && gso.is_some() {
                more |= netif::NETTXF_EXTRA_INFO;
            }
            if i == 0 && (gso.is_some() || csum_blank) {
                more |= netif::NETTXF_CSUM_BLANK | netif::NETTXF_DATA_VALIDATED;
            }
            let size = if i == 0 { frame.len() } else { chunk.len() } as u16;
            let req = TxRequest {
                gref: slot.grant.gref().0,
                offset: 0,
                flags: more,
                id,
                size,
            };
            slot.in_flight = true;
            slot.packet_bytes = if i == 0 { frame.len() } else { 0 };
            if let Err(e) = self.tx.push_request(&req.encode()) {
                return Err(QueueError::Broken(format!("tx ring: {e}")));
            }
            if let (0, Some((mss, kind))) = (i, gso) {
                // The extra-info slot follows the first request; its response is
                // NETIF_RSP_NULL.
                if let Err(e) = self.tx.push_request(&netif::encode_gso_extra(mss, kind)) {
                    return Err(QueueError::Broken(format!("tx ring: {e}")));
                }
            }
        }
        xs.tx_packets += 1;
        xs.tx_slots += ring_slots as u64;
        let notify = self.tx.push_requests_and_check_notify();
        if NetfrontStats::notify(&mut xs.tx_notify_sent, &mut xs.tx_notify_suppressed, notify) {
            p.notify(self.port);
        }
        Ok(())
    }

    /// Takes TX responses: frees the slots, counts. A bad response is an error.
    pub(super) fn reap_tx(
        &mut self,
        stats: &mut LinkStats,
        xs: &mut NetfrontStats,
    ) -> Result<(), String> {
        let mut raw = [0u8; 4];
        let mut taken = 0u64;
        xs.tx_reaps += 1;
        loop {
            match self.tx.take_response_or_arm(&mut raw) {
                Ok(true) => {}
                Ok(false) => {
                    xs.tx_rearms += 1;
                    xs.tx_reap_batches += u64::from(taken > 0);
                    return Ok(());
                }
                Err(e) => return Err(format!("tx ring: {e}")),
            }
            taken += 1;
            xs.tx_responses += 1;
            let r = netif::decode_tx_response(&raw);
            if r.status == netif::RSP_NULL {
                continue; // extra-info slot
            }
            let Some(slot) = self
                .tx_slots
                .get_mut(usize::from(r.id))
                .filter(|s| s.in_flight)
            else {
                return Err(format!("tx response id {} not in flight", r.id));
            };
            slot.in_flight = false;
            let bytes = slot.packet_bytes;
            self.tx_free.push(r.id);
            match r.status {
                netif::RSP_OKAY => {
                    if bytes > 0 {
                        stats.tx_packets += 1;
                        stats.tx_bytes += bytes as u64;
                        self.tx_packets += 1;
                    }
                }
                netif::RSP_ERROR | netif::RSP_DROPPED => stats.tx_errors += 1,
                s => return Err(format!("tx response id {} has unknown status {s}", r.id)),
            }
        }
    }
}

impl<P: XenPlatform> Netfront<P> {
    /// TX slots free now (a GSO packet of up to 64 KiB needs 17), on the fullest
    /// queue: the frame to be sent, and so its queue, is not known yet.
    pub fn tx_free_slots(&self) -> usize {
        if self.broken.is_some() {
            return 0;
        }
        self.link
            .queues
            .iter()
            .map(Queue::tx_free_slots)
            .min()
            .unwrap_or(0)
    }

    /// Whether a frame of up to [`Netfront::max_frame`] bytes can be sent now,
    /// whatever its queue (every queue has the slots).
    pub fn can_send(&self) -> bool {
        let slots = self.max_frame().div_ceil(PAGE_BYTES);
        self.broken.is_none() && self.link.queues.iter().all(|q| q.tx_free.len() >= slots)
    }

    /// Sends one Ethernet frame (copied into the pages of the TX slots it takes) on
    /// the queue of its flow.
    pub fn send(&mut self, frame: &[u8]) -> Result<(), NetError> {
        self.send_frame(frame, None, false)
    }

    /// Sends a frame whose TCP/UDP checksum field holds only the pseudo-header sum
    /// (`NETTXF_csum_blank`: the backend, or the stack that receives it, completes
    /// it), as a router passes on a packet that arrived that way.
    pub fn send_csum_blank(&mut self, frame: &[u8]) -> Result<(), NetError> {
        self.send_frame(frame, None, true)
    }

    /// Sends a TCP frame larger than the MTU for the backend to cut into `mss`-byte
    /// segments (GSO), typed TCPv4 or TCPv6 by its EtherType (each needs the
    /// backend's `feature-gso-tcpv4`/`-tcpv6`). The frame's TCP checksum field must
    /// hold the pseudo-header sum (the backend completes it: `NETTXF_csum_blank`).
    pub fn send_gso(&mut self, frame: &[u8], mss: u16) -> Result<(), NetError> {
        let kind = netif::gso_type_of(frame).ok_or(NetError::BadFrame)?;
        let offered = match kind {
            netif::GSO_TYPE_TCPV6 => self.link.gso6,
            _ => self.link.gso,
        };
        if !offered || mss == 0 {
            return Err(NetError::BadFrame);
        }
        self.send_frame(frame, Some((mss, kind)), true)
    }

    fn send_frame(
        &mut self,
        frame: &[u8],
        gso: Option<(u16, u8)>,
        csum_blank: bool,
    ) -> Result<(), NetError> {
        if let Some(w) = &self.broken {
            return Err(NetError::Broken(w.clone()));
        }
        if frame.is_empty() || frame.len() > 65535 {
            return Err(NetError::BadFrame);
        }
        if frame.len() > PAGE_BYTES && !self.link.sg {
            return Err(NetError::BadFrame);
        }
        let k = tx_queue(frame, self.link.queues.len());
        let Netfront {
            platform,
            link: Link { queues, .. },
            stats,
            driver_stats,
            ..
        } = self;
        let Some(q) = queues.get_mut(k) else {
            return Err(NetError::Busy);
        };
        match q.send(platform, frame, gso, csum_blank, stats, driver_stats) {
            Ok(()) => Ok(()),
            Err(QueueError::Busy) => Err(NetError::Busy),
            Err(QueueError::Broken(why)) => {
                self.fail(why.clone());
                Err(NetError::Broken(why))
            }
        }
    }

    /// Takes TX responses on every queue: frees slots, counts.
    pub fn reap_tx(&mut self) {
        if self.broken.is_some() {
            return;
        }
        let Netfront {
            link: Link { queues, .. },
            stats,
            driver_stats,
            ..
        } = self;
        let failed = queues
            .iter_mut()
            .find_map(|q| q.reap_tx(stats, driver_stats).err());
        if let Some(why) = failed {
            self.fail(why);
        }
    }
}
