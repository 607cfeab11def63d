//! Receive: a pool of pages stays granted to the backend (read-write) and posted on
//! the RX ring; a received packet's data is copied out of its page once and the page
//! is posted again. A packet may take several slots (scatter-gather) and carry a GSO
//! extra-info slot; every slot's buffer is the one posted at its ring position. The
//! RX rings are taken in turn, a bounded batch each, into one received queue.

use super::queue::Queue;
use super::xenbus::Link;
use super::{LinkStats, Netfront, NetfrontStats, ETH_HEADER};
use crate::netif::{self, RxChecksum, RxResponse};
use crate::platform::XenPlatform;
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Received frames kept until taken; more are dropped (counted).
const RECEIVED_MAX: usize = 1024;
/// Bytes of received frames kept until taken (their buffers' capacity): past it, responses stay on the ring
/// until the frames are taken (netback holds or drops what does not fit, as for
/// any slow guest). 1,024 frames of 64 KiB would be 64 MiB, far past a small
/// guest's heap; this holds 340 MTU frames or 8 whole GSO packets.
pub(super) const RECEIVED_BYTES: usize = 512 * 1024;
/// RX responses one queue hands over before the next queue's turn.
pub(super) const RX_BUDGET: usize = 64;

/// The largest received frame kept: an IPv4 or IPv6 packet of 64 KiB (a GSO packet)
/// behind its Ethernet header.
pub const RX_FRAME_MAX: usize = 65535 + ETH_HEADER;

/// Why a received packet is dropped once all its slots are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RxDrop {
    /// The backend reported an error, or sent extra info not asked for (`rx_errors`).
    Error,
    /// Larger than [`RX_FRAME_MAX`] (`rx_dropped`).
    TooLong,
}

/// A frame shorter than this that holds more than twice its length is copied into
/// a buffer of its size on delivery (cheap); a longer one keeps its buffer, so a
/// frame leaving the driver holds at most 8 times its length.
const TRIM_BELOW: usize = RX_FRAME_MAX / 8;

/// A received packet being put together from its slots: the first data slot, then
/// its extra-info slots, then the other data slots.
pub(super) struct RxPacket {
    data: Vec<u8>,
    /// The first slot's flags.
    flags: u16,
    /// More data slots follow.
    more_data: bool,
    /// Extra-info slots follow.
    extras: bool,
    /// It came with a GSO extra: the segment size it was built from (0 when the
    /// extra said 0 or was not TCP: then it is still received whole, but cannot be
    /// passed on as GSO).
    gso: Option<u16>,
    drop: Option<RxDrop>,
}

impl Queue {
    /// Takes up to `budget` RX responses: copies each frame out once (complete
    /// frames go to `received`), reposts the buffers. Returns the responses taken;
    /// a bad response is an error.
    pub(super) fn poll_rx<P: XenPlatform>(
        &mut self,
        p: &P,
        stats: &mut LinkStats,
        xs: &mut NetfrontStats,
        received: &mut VecDeque<(Vec<u8>, u16, Option<u16>)>,
        budget: usize,
        gso_rx: bool,
    ) -> Result<usize, String> {
        let mut raw = [0u8; netif::RX_ENTRY_BYTES];
        let mut taken = 0;
        let mut reposted = 0u64;
        let size = self.rx.size();
        xs.rx_polls += 1;
        let result = loop {
            if taken >= budget {
                xs.rx_budget_stops += 1;
                break Ok(());
            }
            let pos = self.rx.next_response_index();
            // Armed at this index already (no response taken since): look without
            // arming again. A data-plane turn polls every ring, most of them empty,
            // where Linux's netfront looks only on the ring's own event.
            let armed = self.rx_armed_at == Some(pos);
            let took = if armed {
                self.rx.take_response(&mut raw)
            } else {
                self.rx.take_response_or_arm(&mut raw)
            };
            match took {
                Ok(true) => {}
                Ok(false) => {
                    if !armed {
                        xs.rx_rearms += 1;
                        self.rx_armed_at = Some(pos);
                    }
                    break Ok(());
                }
                Err(e) => break Err(format!("rx ring: {e}")),
            }
            taken += 1;
            xs.rx_slots += 1;
            // Every slot's buffer is the one posted at its ring position (Linux's
            // `xennet_get_rx_skb(queue, cons + slots)`): an extra-info slot was
            // written over the response and names none, and a data response naming
            // another buffer is a lying backend (trusting it would post one buffer
            // twice and orphan another).
            let extra_slot = self.partial.as_ref().is_some_and(|k| k.extras);
            let id = self.posted_ids[(pos % size) as usize];
            if !extra_slot {
                let named = netif::decode_rx_response(&raw).id;
                if named != id {
                    break Err(format!(
                        "rx response id {named} at ring position {pos}, where buffer {id} was posted"
                    ));
                }
            }
            let Some(buf) = self.rx_bufs.get_mut(usize::from(id)).filter(|b| b.posted) else {
                break Err(format!("rx buffer {id} at ring position {pos} not posted"));
            };
            buf.posted = false;
            if extra_slot {
                let e = netif::decode_rx_extra(&raw);
                if let Some(pkt) = self.partial.as_mut() {
                    pkt.extras = e.more;
                    match e.check() {
                        Ok(()) if e.kind == netif::EXTRA_TYPE_GSO => {
                            pkt.gso = Some(e.gso_size);
                        }
                        Ok(()) => {}
                        Err(_) => {
                            pkt.drop.get_or_insert(RxDrop::Error);
                        }
                    }
                }
            } else {
                let r: RxResponse = netif::decode_rx_response(&raw);
                if r.flags & netif::NETRXF_EXTRA_INFO != 0 {
                    if !gso_rx {
                        // Only GSO extras are asked for, and only with scatter-gather.
                        break Err(String::from("rx extra info not negotiated"));
                    }
                    if self.partial.is_some() {
                        break Err(format!(
                            "rx response id {id}: extra info after the first slot"
                        ));
                    }
                }
                let pkt = self.partial.get_or_insert_with(|| RxPacket {
                    // A packet with more slots and an extra (GSO) is usually up to
                    // 64 KiB: room for it at once, not a copy at every doubling
                    // (trimmed in `deliver` when it came out much smaller).
                    data: if r.flags & netif::NETRXF_MORE_DATA != 0
                        && r.flags & netif::NETRXF_EXTRA_INFO != 0
                    {
                        Vec::with_capacity(RX_FRAME_MAX)
                    } else {
                        Vec::new()
                    },
                    flags: r.flags,
                    more_data: false,
                    extras: r.flags & netif::NETRXF_EXTRA_INFO != 0,
                    gso: None,
                    drop: None,
                });
                pkt.more_data = r.flags & netif::NETRXF_MORE_DATA != 0;
                match r.data_range() {
                    Ok((off, len)) => {
                        if pkt.drop.is_none() {
                            let start = pkt.data.len();
                            if start + len > RX_FRAME_MAX {
                                pkt.drop = Some(RxDrop::TooLong);
                                pkt.data = Vec::new();
                            } else {
                                buf.page.mem().append_to(off, len, &mut pkt.data);
                            }
                        }
                    }
                    Err(_) if r.status < 0 => {
                        pkt.drop.get_or_insert(RxDrop::Error);
                    }
                    Err(why) => break Err(format!("rx response id {id}: {why}")),
                }
            }
            if self
                .partial
                .as_ref()
                .is_some_and(|k| !k.more_data && !k.extras)
            {
                if let Some(pkt) = self.partial.take() {
                    xs.rx_packets += 1;
                    deliver(pkt, &mut self.rx_packets, stats, received);
                }
            }
            // Post the buffer again, noting where.
            let at = self.rx.next_request_index();
            let gref = buf.grant.gref().0;
            if self
                .rx
                .push_request(&netif::encode_rx_request(id, gref))
                .is_ok()
            {
                self.posted_ids[(at % size) as usize] = id;
                buf.posted = true;
                reposted += 1;
            }
        };
        xs.rx_batches += u64::from(taken > 0);
        if reposted > 0 {
            xs.rx_reposted += reposted;
            xs.rx_refills += 1;
            let notify = self.rx.push_requests_and_check_notify();
            if NetfrontStats::notify(&mut xs.rx_notify_sent, &mut xs.rx_notify_suppressed, notify) {
                p.notify(self.port);
            }
        }
        result.map(|()| taken)
    }
}

/// Counts a complete packet (also in its queue's `queue_packets`) and hands it over,
/// or drops it.
fn deliver(
    mut pkt: RxPacket,
    queue_packets: &mut u64,
    stats: &mut LinkStats,
    received: &mut VecDeque<(Vec<u8>, u16, Option<u16>)>,
) {
    match pkt.drop {
        Some(RxDrop::Error) => stats.rx_errors += 1,
        Some(RxDrop::TooLong) => stats.rx_dropped += 1,
        None => {
            // `received` is bounded by its frames' capacity (`RECEIVED_BYTES`); what
            // leaves holds at most 8 times its length whatever a backend sends (a
            // 20 KiB GSO packet is not copied again to give back 44 KiB).
            if pkt.data.len() < TRIM_BELOW && pkt.data.capacity() > 2 * pkt.data.len() {
                pkt.data.shrink_to_fit();
            }
            stats.rx_packets += 1;
            stats.rx_bytes += pkt.data.len() as u64;
            stats.rx_gso += u64::from(pkt.gso.is_some());
            *queue_packets += 1;
            if received.len() < RECEIVED_MAX {
                received.push_back((pkt.data, pkt.flags, pkt.gso.filter(|&g| g > 0)));
            } else {
                stats.rx_dropped += 1;
            }
        }
    }
}

impl<P: XenPlatform> Netfront<P> {
    /// Takes RX responses from every queue, in turn (a queue hands over at most 64
    /// responses before the next one's turn, and the queue that starts moves on at
    /// every call): copies each frame out once, reposts the buffers (notifying that
    /// queue's event channel when the backend asks for it).
    pub fn poll_rx(&mut self) {
        let n = self.link.queues.len();
        if n == 0 {
            return;
        }
        // Enough turns to drain full rings and see them empty, not more: reposted
        // buffers may be answered again meanwhile, and the next call takes those.
        let rounds = self
            .link
            .queues
            .iter()
            .map(|q| q.rx.size() as usize)
            .max()
            .unwrap_or(0)
            .div_ceil(RX_BUDGET)
            + 1;
        let start = self.rx_next;
        self.rx_next = (start + 1) % n;
        for _ in 0..rounds {
            // Another round only for a queue that stopped at its budget: one that
            // was drained re-armed its event (`rsp_event`) and looked once more,
            // so what comes now comes with an event, and looking again here would
            // only re-arm it again.
            let mut budget_hit = false;
            for k in 0..n {
                if self.broken.is_some() {
                    return;
                }
                let i = (start + k) % n;
                let Netfront {
                    platform,
                    link: Link { queues, sg, .. },
                    stats,
                    driver_stats,
                    received,
                    ..
                } = self;
                if self.received_bytes >= RECEIVED_BYTES {
                    return;
                }
                let Some(q) = queues.get_mut(i) else {
                    continue;
                };
                let before = received.len();
                let r = q.poll_rx(platform, stats, driver_stats, received, RX_BUDGET, *sg);
                self.received_bytes += received
                    .range(before..)
                    .map(|f| f.0.capacity())
                    .sum::<usize>();
                match r {
                    Ok(t) => budget_hit |= t >= RX_BUDGET,
                    Err(why) => return self.fail(why),
                }
            }
            if !budget_hit {
                break;
            }
        }
    }

    /// The next received frame.
    pub fn recv(&mut self) -> Option<Vec<u8>> {
        self.recv_flagged().map(|(f, _)| f)
    }

    /// The next received frame, and what the backend says of its TCP/UDP checksum.
    pub fn recv_flagged(&mut self) -> Option<(Vec<u8>, RxChecksum)> {
        self.recv_meta().map(|(f, c, _)| (f, c))
    }

    /// The next received frame, what the backend says of its checksum, and for a
    /// TCP packet received whole (GSO) the segment size it was built from, so that a
    /// router can send it on as GSO.
    pub fn recv_meta(&mut self) -> Option<(Vec<u8>, RxChecksum, Option<u16>)> {
        if self.received.is_empty() {
            self.poll_rx();
        }
        let (f, flags, gso) = self.received.pop_front()?;
        self.received_bytes = self.received_bytes.saturating_sub(f.capacity());
        Some((f, RxChecksum::from_flags(flags), gso))
    }
}
