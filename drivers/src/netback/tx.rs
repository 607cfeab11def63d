//! The client's frames to us (its TX ring): requests parsed into packets (checked,
//! see the module doc), the slots' data copied out with batched grant copies into
//! our staging pages, then into the received queue; every slot answered.

use super::guard::Verdict;
use super::{
    ring_error, ClientFrame, Conn, Netback, NetbackStats, RxChecksum, FATAL_SLOTS, MAX_EXTRAS,
    MAX_SLOTS, RECEIVED_MAX, RECEIVED_MAX_BYTES, TX_BUDGET, TX_STAGING_PAGES,
};

/// The client's packets gathered for a copy, and their copy ops.
pub(super) type TxBatch = (Vec<Pending>, Vec<Op>);
use crate::netif::{self, TX_ENTRY_BYTES};
use crate::platform::{CopyDir, CopyOp, DmaPages, XenBackend};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use xenlet_xen::ring::BackRing;
use xenlet_xen::shared::PAGE_BYTES;

/// Ethernet header bytes: a shorter frame is dropped.
const ETH_HEADER: usize = 14;

/// One packet taken off the TX ring.
pub(super) struct Packet {
    /// The first slot's id, then the following data slots' ids.
    ids: Vec<u16>,
    /// Extra-info slots (answered `NETIF_RSP_NULL`).
    extras: usize,
    /// Each data slot: (grant, offset, bytes).
    segs: Vec<(u32, u16, u16)>,
    /// The frame's length (the first slot's `size`).
    total: usize,
    csum: RxChecksum,
    gso: Option<u16>,
    /// Why the packet is dropped (answered with an error), if it is.
    drop: Option<&'static str>,
}

/// What the next requests hold.
enum Take {
    /// No request.
    Empty,
    /// The frontend broke the protocol.
    Fatal(String),
    /// A packet, whole.
    Packet(Packet),
}

fn take(ring: &mut BackRing, raw: &mut [u8; TX_ENTRY_BYTES]) -> Result<bool, String> {
    ring.take_request(raw).map_err(|e| ring_error("tx", e))
}

/// Takes the next request of a packet begun, which must be there (`missing` when it
/// is not).
fn take_more(
    ring: &mut BackRing,
    raw: &mut [u8; TX_ENTRY_BYTES],
    missing: &str,
) -> Result<(), String> {
    if take(ring, raw)? {
        Ok(())
    } else {
        Err(missing.into())
    }
}

/// Takes the next packet's requests (all of them, or the vif is broken).
fn take_packet(ring: &mut BackRing) -> Take {
    let mut raw = [0u8; TX_ENTRY_BYTES];
    match take(ring, &mut raw) {
        Ok(true) => {}
        Ok(false) => return Take::Empty,
        Err(e) => return Take::Fatal(e),
    }
    let first = netif::decode_tx_request(&raw);
    let mut extras = 0;
    let mut gso = None;
    let mut drop = None;
    let mut more_extra = first.flags & netif::NETTXF_EXTRA_INFO != 0;
    while more_extra {
        if extras == MAX_EXTRAS {
            return Take::Fatal(format!("more than {MAX_EXTRAS} extra-info slots"));
        }
        if let Err(e) = take_more(ring, &mut raw, "an extra-info slot is missing") {
            return Take::Fatal(e);
        }
        let x = netif::decode_tx_extra(&raw);
        if x.kind == 0 || x.kind >= netif::EXTRA_TYPE_MAX {
            return Take::Fatal(format!("extra-info slot of invalid type {}", x.kind));
        }
        if x.kind == netif::EXTRA_TYPE_GSO {
            match x.check() {
                Ok(()) => gso = Some(x.gso_size),
                Err(_) => drop = Some("a bad GSO extra"),
            }
        }
        extras += 1;
        more_extra = x.more;
    }
    let total = usize::from(first.size);
    let mut remaining = total;
    let mut ids = vec![first.id];
    let mut rest = Vec::new();
    let mut flags = first.flags;
    while flags & netif::NETTXF_MORE_DATA != 0 {
        if ids.len() >= FATAL_SLOTS {
            return Take::Fatal(format!("a packet of more than {FATAL_SLOTS} slots"));
        }
        if let Err(e) = take_more(ring, &mut raw, "a packet's slots are not all published") {
            return Take::Fatal(e);
        }
        let r = netif::decode_tx_request(&raw);
        if usize::from(r.offset) + usize::from(r.size) > PAGE_BYTES {
            return Take::Fatal(format!(
                "slot {} crosses its page (offset {} size {})",
                r.id, r.offset, r.size
            ));
        }
        if drop.is_none() && usize::from(r.size) > remaining {
            drop = Some("a slot larger than the rest of its frame");
        }
        remaining = remaining.saturating_sub(usize::from(r.size));
        ids.push(r.id);
        rest.push((r.gref, r.offset, r.size));
        flags = r.flags;
    }
    if usize::from(first.offset) + remaining > PAGE_BYTES {
        return Take::Fatal(format!(
            "first slot {} crosses its page (offset {} size {remaining})",
            first.id, first.offset
        ));
    }
    if drop.is_none() && ids.len() > MAX_SLOTS {
        drop = Some("more slots than offered");
    }
    if drop.is_none() && total < ETH_HEADER {
        drop = Some("shorter than an Ethernet header");
    }
    let mut segs = vec![(first.gref, first.offset, remaining as u16)];
    segs.extend(rest);
    let csum = if first.flags & netif::NETTXF_CSUM_BLANK != 0 {
        RxChecksum::Blank
    } else if first.flags & netif::NETTXF_DATA_VALIDATED != 0 {
        RxChecksum::Validated
    } else {
        RxChecksum::Unknown
    };
    Take::Packet(Packet {
        ids,
        extras,
        segs,
        total,
        csum,
        gso,
        drop,
    })
}

/// A packet waiting for its batch's copy: where its bytes go in the staging pages and
/// which ops are its own.
pub(super) struct Pending {
    packet: Packet,
    at: usize,
    ops: core::ops::Range<usize>,
}

/// A copy op without its borrow of the staging pages (made when the batch goes).
#[derive(Clone, Copy)]
pub(super) struct Op {
    page: usize,
    offset: u16,
    gref: u32,
    remote_offset: u16,
    len: u16,
}

/// The ops that copy `len` bytes from the frontend's (`gref`, `remote`) to staging
/// byte `at`, one per local page touched.
pub(super) fn split(ops_out: &mut Vec<Op>, at: usize, gref: u32, remote: u16, len: u16) {
    let mut done = 0usize;
    let len = usize::from(len);
    while done < len {
        let pos = at + done;
        let (page, off) = (pos / PAGE_BYTES, pos % PAGE_BYTES);
        let n = (PAGE_BYTES - off).min(len - done);
        ops_out.push(Op {
            page,
            offset: off as u16,
            gref,
            remote_offset: remote + done as u16,
            len: n as u16,
        });
        done += n;
    }
}

/// Publishes the responses queued on `ring` (some are) and says whether the
/// frontend asked for an event (`RING_PUSH_RESPONSES_AND_CHECK_NOTIFY`): it is then
/// owed one (`owed`; sent once for both rings, [`Netback::flush_notify`]), counted in
/// `sent`, else in `suppressed`.
pub(super) fn publish(ring: &mut BackRing, owed: &mut bool, [sent, suppressed]: [&mut u64; 2]) {
    if ring.push_responses_and_check_notify() {
        *owed = true;
        *sent += 1;
    } else {
        *suppressed += 1;
    }
}

/// Grant-copies in one hypercall (counted in `copy_batches`, the ops in
/// `copy_ops`; none when there is nothing to copy): `from` from domain `domid`'s
/// grants into `from_staging`, and `to` from `to_staging` into its grants (the
/// client's packets out and frames to it in, both rings' in one call, as the copies
/// of a wakeup go in one `GNTTABOP_copy` in Linux's netback); returns each op's
/// status, `from`'s then `to`'s, in order.
pub(super) fn copy_batch<P: XenBackend>(
    platform: &P,
    domid: u16,
    [(from_staging, from), (to_staging, to)]: [(&DmaPages, &[Op]); 2],
    stats: &mut NetbackStats,
) -> Vec<i16> {
    fn side<'a>(
        staging: &'a DmaPages,
        domid: u16,
        ops: &'a [Op],
        dir: CopyDir,
    ) -> impl Iterator<Item = CopyOp<'a>> + 'a {
        ops.iter().map(move |o| CopyOp {
            local: staging,
            page: o.page,
            offset: o.offset,
            domid,
            gref: o.gref,
            remote_offset: o.remote_offset,
            len: o.len,
            dir,
            status: -1,
        })
    }
    let mut copies: Vec<CopyOp<'_>> = side(from_staging, domid, from, CopyDir::FromRemote)
        .chain(side(to_staging, domid, to, CopyDir::ToRemote))
        .collect();
    if !copies.is_empty() {
        platform.grant_copy(&mut copies);
        stats.copy_batches += 1;
        stats.copy_ops += copies.len() as u64;
    }
    copies.iter().map(|c| c.status).collect()
}

/// Answers every slot of `packet` with `status` (its extra-info slots `NULL`);
/// a ring error is kept in `broken`.
fn answer(conn: &mut Conn, packet: &Packet, status: i16, broken: &mut Option<String>) {
    let mut answers = vec![netif::encode_tx_response(packet.ids[0], status)];
    answers.extend((0..packet.extras).map(|_| netif::encode_tx_response(0, netif::RSP_NULL)));
    answers.extend(
        packet.ids[1..]
            .iter()
            .map(|&id| netif::encode_tx_response(id, status)),
    );
    for a in answers {
        if let Err(e) = conn.tx.push_response(&a) {
            *broken = Some(ring_error("tx", e));
        }
    }
}

impl<P: XenBackend> Netback<P> {
    /// The next frame the client sent.
    pub fn recv(&mut self) -> Option<Vec<u8>> {
        self.recv_meta().map(|f| f.frame)
    }

    /// The next frame the client sent, with its checksum state and GSO size.
    pub fn recv_meta(&mut self) -> Option<ClientFrame> {
        let f = self.received.pop_front()?;
        self.received_bytes -= f.frame.len();
        Some(f)
    }

    /// Frames received and not yet taken.
    pub fn received_len(&self) -> usize {
        self.received.len()
    }

    /// Takes up to [`TX_BUDGET`] packets from the client's TX ring: whether
    /// requests are left, and the last batch, whose copy is still to be made
    /// ([`Netback::flush`], with the frames to the client's).
    pub(super) fn gather_tx(&mut self) -> (bool, TxBatch) {
        let staging_bytes = TX_STAGING_PAGES * PAGE_BYTES;
        let mut batch: Vec<Pending> = Vec::new();
        let mut ops: Vec<Op> = Vec::new();
        let mut cursor = 0usize;
        let mut taken = 0;
        let mut limited = false;
        self.stats.rx_polls += 1;
        loop {
            let held = self.received_bytes + cursor;
            if taken >= TX_BUDGET
                || self.received.len() + batch.len() >= RECEIVED_MAX
                || held >= RECEIVED_MAX_BYTES
            {
                self.stats.rx_budget_stops += u64::from(taken >= TX_BUDGET);
                break;
            }
            let Some(conn) = self.conn.as_mut() else {
                return (false, TxBatch::default());
            };
            let packet = match conn.held.take() {
                Some(p) => p,
                None => match take_packet(&mut conn.tx) {
                    Take::Empty => break,
                    Take::Fatal(why) => {
                        self.fail(why);
                        return (false, TxBatch::default());
                    }
                    Take::Packet(p) => {
                        self.stats.rx_taken += 1;
                        self.stats.rx_slots += (p.ids.len() + p.extras) as u64;
                        p
                    }
                },
            };
            // every packet spends its size, as Linux's tx_credit_exceeded charges
            // each request: one over the credit waits, held, with the rest in the ring
            if let Some(credit) = self.credit.as_mut() {
                let waiting = credit.wakeup_ns().is_some();
                if !credit.admit(packet.total as u64, self.platform.now_ns()) {
                    if !waiting {
                        self.stats.rate_waits += 1;
                    }
                    conn.held = Some(packet);
                    limited = true;
                    break;
                }
            }
            taken += 1;
            if packet.drop.is_some() {
                batch.push(Pending {
                    packet,
                    at: 0,
                    ops: 0..0,
                });
                continue;
            }
            if cursor + packet.total > staging_bytes {
                let full = (core::mem::take(&mut batch), core::mem::take(&mut ops));
                self.flush(full, Default::default());
                cursor = 0;
                if self.conn.as_ref().is_none_or(|c| c.tx.is_broken()) {
                    return (false, TxBatch::default());
                }
            }
            let first = ops.len();
            let mut at = cursor;
            for &(gref, off, len) in &packet.segs {
                split(&mut ops, at, gref, off, len);
                at += usize::from(len);
            }
            batch.push(Pending {
                packet,
                at: cursor,
                ops: first..ops.len(),
            });
            cursor = at;
        }
        self.stats.rx_batches += u64::from(taken > 0);
        let gathered = (batch, ops);
        let Some(conn) = self.conn.as_mut() else {
            return (false, TxBatch::default());
        };
        if conn.tx.is_broken() || limited {
            // a packet waits for its credit: the integrator polls at
            // `rate_wakeup_ns`, events meanwhile find it still waiting
            return (false, gathered);
        }
        match conn.tx.final_check_for_requests() {
            Ok(more) => (more, gathered),
            Err(e) => {
                self.fail(ring_error("tx", e));
                (false, TxBatch::default())
            }
        }
    }

    /// After a batch's copy (`statuses`: its ops'): queues the good frames and
    /// answers every slot.
    pub(super) fn finish_tx(&mut self, batch: Vec<Pending>, statuses: &[i16]) {
        if batch.is_empty() {
            return;
        }
        let Netback {
            conn,
            received,
            received_bytes,
            stats,
            filter,
            mac,
            ..
        } = self;
        let Some(conn) = conn.as_mut() else { return };
        let mut broken = None;
        for p in batch {
            let status = if p.packet.drop.is_some() {
                stats.rx_dropped += 1;
                netif::RSP_ERROR
            } else if statuses
                .get(p.ops.clone())
                .is_none_or(|s| s.iter().any(|&s| s != 0))
            {
                stats.rx_errors += 1;
                netif::RSP_ERROR
            } else {
                let mut frame = Vec::new();
                conn.tx_staging
                    .mem()
                    .append_to(p.at, p.packet.total, &mut frame);
                if filter
                    .as_ref()
                    .is_some_and(|f| f.check(&frame, *mac) == Verdict::Drop)
                {
                    // a source the toolstack did not give the client: dropped as a
                    // firewall drops, the client sees its packet sent
                    stats.rx_spoofed += 1;
                    answer(conn, &p.packet, netif::RSP_OKAY, &mut broken);
                    continue;
                }
                stats.rx_packets += 1;
                stats.rx_bytes += frame.len() as u64;
                if p.packet.gso.is_some() {
                    stats.rx_gso += 1;
                }
                *received_bytes += frame.len();
                received.push_back(ClientFrame {
                    frame,
                    csum: p.packet.csum,
                    gso: p.packet.gso,
                });
                netif::RSP_OKAY
            };
            answer(conn, &p.packet, status, &mut broken);
        }
        publish(
            &mut conn.tx,
            &mut conn.owed,
            [&mut stats.rx_notify_sent, &mut stats.rx_notify_suppressed],
        );
        if let Some(why) = broken {
            self.fail(why);
        }
    }
}
