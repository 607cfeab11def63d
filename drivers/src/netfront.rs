//! netfront: the Xen PV network frontend (xen/include/public/io/netif.h), data path
//! and handshake.
//!
//! Handshake ([`Netfront::connect_with`], driven by the shared xenbus [`Frontend`]):
//! once the backend waits (InitWait), choose the number of queues N: the caller's
//! cap, no more than the backend's `multi-queue-max-queues` (a missing, malformed or
//! zero value counts as 1). Each queue is a TX ring, an RX ring and one event
//! channel. With N = 1 publish `tx-ring-ref`, `rx-ring-ref` and `event-channel` in
//! the frontend's directory, as a frontend that knows nothing of queues does, and no
//! `multi-queue-num-queues`; with N > 1 publish `multi-queue-num-queues` = N and
//! those three keys under `queue-0/` .. `queue-<N-1>/` instead (netif.h, "Multiple
//! transmit and receive queues"). Then, for the whole vif: `request-rx-copy` = 1,
//! `feature-rx-notify` = 1, `feature-sg` = 1, and go Connected when the backend is;
//! the MAC comes from the frontend's `mac` key and the MTU from the backend's `mtu`
//! key (libxl's `vif = [ "...,mtu=9000" ]`; 1500 when absent or malformed, and at
//! most 1500 without scatter-gather, as Linux's netfront does). TCPv4 GSO packets are
//! sent when the backend offers `feature-gso-tcpv4` (and scatter-gather); with
//! scatter-gather the frontend also writes `feature-gso-tcpv4`/`feature-gso-tcpv6`,
//! so TCP packets of up to 64 KiB arrive whole: a first data slot flagged
//! `NETRXF_extra_info`, a GSO extra-info slot (written over a response), then the
//! remaining data slots. Every slot's buffer is the one posted at its ring position;
//! a data response naming another id breaks the vif.
//!
//! Queues: a frame is sent on the queue its flow hashes to (IPv4/IPv6 addresses and
//! TCP/UDP ports; anything else on queue 0), so one flow is never reordered across
//! queues; the backend picks the queue of each received packet, and the RX rings
//! are taken in turn (a bounded batch each), into one received queue.
//!
//! RX: a pool of pages stays granted to the backend (read-write) and posted on the RX
//! ring; a received packet's data is copied out of its page once and the page is
//! posted again. TX: every TX ring slot owns a page granted read-only for good; a
//! packet is copied into the pages of the slots it takes (several slots with
//! `NETTXF_more_data` when it is larger than a page) and the slots are free again on
//! the response (netback copies or maps the page only until it answers).
//! Checksums: receive checksum offload is on (the default of netif.h): a packet the
//! backend marks `NETRXF_csum_blank` comes with its TCP/UDP checksum left as the
//! pseudo-header sum, one marked `NETRXF_data_validated` was checked by it, and the
//! caller checks the others ([`Netfront::recv_flagged`], [`RxChecksum`]); packets
//! sent carry full checksums, except GSO packets (`NETTXF_csum_blank`). Every response is checked (id in range and in flight,
//! data inside the page, status); a bad one marks the vif broken.
//!
//! The rings, the event channel and the buffers make up a queue; the received
//! frames, the counters and the broken state are the vif's: a bad response on any
//! queue breaks the whole vif.

use crate::netif::{self, RxResponse, TxRequest};
use crate::platform::{DmaPages, XenPlatform};
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use xenlet_xen::evtchn::Port;
use xenlet_xen::gnttab::{Access, Grant};
use xenlet_xen::ring::FrontRing;
use xenlet_xen::shared::PAGE_BYTES;
use xenlet_xen::xenbus::{Action, Frontend, XenbusState};

/// The MTU when the backend names none (Ethernet's).
pub const DEFAULT_MTU: usize = 1500;
/// Ethernet header bytes in front of the MTU's worth of packet.
pub const ETH_HEADER: usize = 14;
/// The largest MTU taken from the backend: a frame must fit netif's 16-bit size.
pub const MAX_MTU: usize = 65535 - ETH_HEADER;
/// The smallest MTU taken (IPv4's minimum).
pub const MIN_MTU: usize = 68;

/// The MTU from the backend's `mtu` key: [`DEFAULT_MTU`] when it is absent, not a
/// number or outside [`MIN_MTU`]..=[`MAX_MTU`]; at most [`DEFAULT_MTU`] without
/// scatter-gather (a frame must then fit one page, and Linux keeps such a vif at 1500).
pub fn mtu_from_backend(value: Option<&str>, sg: bool) -> usize {
    let mtu = value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|m| (MIN_MTU..=MAX_MTU).contains(m))
        .unwrap_or(DEFAULT_MTU);
    if sg {
        mtu
    } else {
        mtu.min(DEFAULT_MTU)
    }
}
/// Queues a vif asks for by default ([`Netfront::connect`]; the kernel's
/// `xenlet.netqueues=` default too): two, so that dom0 can spread its netback work
/// over two threads. Fewer when the backend offers fewer. Each queue holds 2 ring
/// pages and 512 buffer pages (2 MiB).
pub const DEFAULT_MAX_QUEUES: usize = 2;

/// Buffers per queue and direction when there is memory: one per ring slot.
const FULL_BUFFERS: usize = 256;

/// Buffer counts a first queue tries when the full set is not to be had: each
/// still carries a 64 KiB GSO packet (17 slots) many times over.
const SMALLER_BUFFERS: [usize; 2] = [128, 64];

/// The most `queue-N/` directories an earlier attempt can have left to clear (a
/// bound on a number read back from XenStore).
const MAX_QUEUES_EVER: usize = 64;
/// How long the handshake waits for the backend.
const HANDSHAKE_TIMEOUT_NS: u64 = 60_000_000_000;
/// Received frames kept until taken; more are dropped (counted).
const RECEIVED_MAX: usize = 1024;
/// Bytes of received frames kept until taken: past it, responses stay on the ring
/// until the frames are taken (netback holds or drops what does not fit, as for
/// any slow guest). 1,024 frames of 64 KiB would be 64 MiB, far past a small
/// guest's heap; this holds 340 MTU frames or 8 whole GSO packets.
const RECEIVED_BYTES: usize = 512 * 1024;
/// RX responses one queue hands over before the next queue's turn.
const RX_BUDGET: usize = 64;

/// Network errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetError {
    /// The vif is broken (bad response); the reason is kept.
    Broken(String),
    /// No TX slot or buffer free now.
    Busy,
    /// The frame is empty or larger than 64 KiB.
    BadFrame,
    /// The handshake failed.
    Handshake(String),
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetError::Broken(w) => write!(f, "vif broken: {w}"),
            NetError::Busy => f.write_str("transmit queue full"),
            NetError::BadFrame => f.write_str("bad frame size"),
            NetError::Handshake(w) => write!(f, "handshake failed: {w}"),
        }
    }
}

/// Link statistics, as `ip -s link` shows them.
#[derive(Clone, Copy, Debug, Default)]
pub struct NetStats {
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Received packets dropped (errors, oversize, no room).
    pub rx_dropped: u64,
    /// Receive errors reported by the backend, and packets with unusable extra info.
    pub rx_errors: u64,
    /// Packets received whole as GSO packets (not cut into MTU-sized frames by dom0).
    pub rx_gso: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Transmit errors reported by the backend.
    pub tx_errors: u64,
}

struct RxBuf {
    page: DmaPages,
    grant: Grant,
    posted: bool,
}

struct TxSlot {
    in_flight: bool,
    page: DmaPages,
    grant: Grant,
    /// Bytes of the packet this slot starts (0 for continuation slots).
    packet_bytes: usize,
}

/// What the backend says of a received packet's TCP/UDP checksum (receive checksum
/// offload, on by default in netif.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxChecksum {
    /// Nothing: the receiver checks it.
    Unknown,
    /// The backend checked it (`NETRXF_data_validated`).
    Validated,
    /// Never computed (`NETRXF_csum_blank`): the field holds only the pseudo-header
    /// sum; the packet comes from dom0's own stack and its data is good.
    Blank,
}

impl RxChecksum {
    /// From a first RX slot's `NETRXF_*` flags.
    pub fn from_flags(flags: u16) -> Self {
        if flags & netif::NETRXF_CSUM_BLANK != 0 {
            RxChecksum::Blank
        } else if flags & netif::NETRXF_DATA_VALIDATED != 0 {
            RxChecksum::Validated
        } else {
            RxChecksum::Unknown
        }
    }
}

/// Packet counters of one queue ([`Netfront::queue_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Packets received on the queue.
    pub rx_packets: u64,
    /// Packets sent on the queue (answered OK by the backend).
    pub tx_packets: u64,
}

/// Why a queue did not take a packet.
enum QueueError {
    /// No free slot now.
    Busy,
    /// A bad response or a ring failure: the vif is broken, for this reason.
    Broken(String),
}

/// One TX/RX ring pair with its event channel and buffers.
struct Queue {
    tx: FrontRing,
    rx: FrontRing,
    /// The ring pages' grants (published as `tx-ring-ref` / `rx-ring-ref`), kept for
    /// the life of the queue ([`FrontRing`] holds the pages).
    tx_ring_grant: Grant,
    rx_ring_grant: Grant,
    port: Port,
    rx_bufs: Vec<RxBuf>,
    tx_slots: Vec<TxSlot>,
    tx_free: Vec<u16>,
    /// A multi-slot packet being assembled (its slots come in order on this ring).
    partial: Option<RxPacket>,
    /// The buffer id posted at each RX ring position (index mod ring size): an
    /// extra-info slot overwrites the response's id, so its buffer is found here.
    posted_ids: Vec<u16>,
    /// Packets received on this queue.
    rx_packets: u64,
    /// Packets sent on this queue (answered OK).
    tx_packets: u64,
}

/// The largest received frame kept: an IPv4 or IPv6 packet of 64 KiB (a GSO packet)
/// behind its Ethernet header.
pub const RX_FRAME_MAX: usize = 65535 + ETH_HEADER;

/// Why a received packet is dropped once all its slots are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RxDrop {
    /// The backend reported an error, or sent extra info not asked for (`rx_errors`).
    Error,
    /// Larger than [`RX_FRAME_MAX`] (`rx_dropped`).
    TooLong,
}

/// A received packet being put together from its slots: the first data slot, then
/// its extra-info slots, then the other data slots.
struct RxPacket {
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
    /// Grants the ring pages, allocates the event channel, grants one page per TX
    /// slot (read-only) and per RX slot (read-write), and posts every RX buffer. On
    /// failure everything taken so far is given back (a page whose grant cannot be
    /// ended stays allocated).
    fn setup<P: XenPlatform>(p: &P, backend_id: u16, buffers: usize) -> Result<Self, NetError> {
        let mut held: Vec<(DmaPages, Grant)> = Vec::new();
        let mut port = None;
        match Self::take_resources(p, backend_id, buffers, &mut held, &mut port) {
            Ok(()) => {}
            Err(e) => {
                give_back(p, held, port);
                return Err(e);
            }
        }
        let port = port.ok_or_else(|| NetError::Handshake(String::from("no event channel")))?;
        // held: tx ring, rx ring, then the TX buffers, then the RX buffers.
        let mut it = held.into_iter();
        let (Some((tx_page, tx_ring_grant)), Some((rx_page, rx_ring_grant))) =
            (it.next(), it.next())
        else {
            return Err(NetError::Handshake(String::from("ring pages missing")));
        };
        let tx = FrontRing::init(tx_page, netif::TX_ENTRY_BYTES);
        let mut rx = FrontRing::init(rx_page, netif::RX_ENTRY_BYTES);
        let tx_slots: Vec<TxSlot> = it
            .by_ref()
            .take(buffers.min(tx.size() as usize))
            .map(|(page, grant)| TxSlot {
                in_flight: false,
                page,
                grant,
                packet_bytes: 0,
            })
            .collect();
        let mut rx_bufs = Vec::with_capacity(rx.size() as usize);
        for (i, (page, grant)) in it.enumerate() {
            // A fresh ring has room for every buffer: this cannot fail.
            let _ = rx.push_request(&netif::encode_rx_request(i as u16, grant.gref().0));
            rx_bufs.push(RxBuf {
                page,
                grant,
                posted: true,
            });
        }
        let _ = rx.push_requests_and_check_notify();
        // buffer i went to ring position i (positions past the buffers are written
        // as buffers are posted again)
        let rx_entries = rx.size() as usize;
        let mut posted_ids: Vec<u16> = (0..rx_bufs.len() as u16).collect();
        posted_ids.resize(rx_entries, 0);

        let entries = tx_slots.len();
        Ok(Queue {
            tx,
            rx,
            tx_ring_grant,
            rx_ring_grant,
            port,
            rx_bufs,
            tx_slots,
            tx_free: (0..entries as u16).rev().collect(),
            partial: None,
            posted_ids,
            rx_packets: 0,
            tx_packets: 0,
        })
    }

    /// Takes a queue's pages, grants and port, in [`Queue::setup`]'s order, into
    /// `held` and `port` (which the caller gives back on failure).
    fn take_resources<P: XenPlatform>(
        p: &P,
        backend_id: u16,
        buffers: usize,
        held: &mut Vec<(DmaPages, Grant)>,
        port: &mut Option<Port>,
    ) -> Result<(), NetError> {
        let mut take = |what: &str, access: Access| -> Result<(), NetError> {
            let page = p
                .alloc_pages(1)
                .ok_or_else(|| NetError::Handshake(format!("no memory for {what}")))?;
            match p.grant(backend_id, &page, 0, access) {
                Ok(g) => {
                    held.push((page, g));
                    Ok(())
                }
                Err(e) => {
                    p.free_pages(page);
                    Err(NetError::Handshake(format!("{what} grant: {e}")))
                }
            }
        };
        take("tx ring", Access::ReadWrite)?;
        take("rx ring", Access::ReadWrite)?;
        let tx_entries = xenlet_xen::ring::ring_entries(PAGE_BYTES, netif::TX_ENTRY_BYTES);
        let rx_entries = xenlet_xen::ring::ring_entries(PAGE_BYTES, netif::RX_ENTRY_BYTES);
        // TX buffers: one page per TX ring slot (or `buffers`, fewer), granted
        // read-only for good.
        for _ in 0..(tx_entries as usize).min(buffers) {
            take("TX buffers", Access::ReadOnly)?;
        }
        // RX buffers: one per RX ring slot (or fewer), granted for good.
        for _ in 0..(rx_entries as usize).min(buffers) {
            take("RX buffers", Access::ReadWrite)?;
        }
        *port = Some(hs("event channel", p.alloc_unbound(backend_id))?);
        Ok(())
    }

    /// Ends the buffers' and the rings' grants and frees their pages (a page the
    /// backend still maps keeps its grant and stays allocated), closes the event
    /// channel. Returns the (buffer, ring) pages freed.
    fn release<P: XenPlatform>(self, p: &P) -> (usize, usize) {
        let mut freed = 0;
        let pages = self
            .rx_bufs
            .into_iter()
            .map(|b| (b.page, b.grant))
            .chain(self.tx_slots.into_iter().map(|t| (t.page, t.grant)));
        for (page, grant) in pages {
            if p.end_grant(grant).is_ok() {
                p.free_pages(page);
                freed += 1;
            }
        }
        let rings = [
            (self.tx.into_pages(), self.tx_ring_grant),
            (self.rx.into_pages(), self.rx_ring_grant),
        ];
        let mut rings_freed = 0;
        for (pages, grant) in rings {
            if p.end_grant(grant).is_ok() {
                p.free_pages(pages);
                rings_freed += 1;
            }
        }
        p.close_port(self.port);
        (freed, rings_freed)
    }

    fn mark_broken(&mut self) {
        self.tx.mark_broken();
        self.rx.mark_broken();
    }

    /// TX slots free now.
    fn tx_free_slots(&self) -> usize {
        self.tx_free.len().min(self.tx.free_requests() as usize)
    }

    /// Queues one packet (already checked: 1..=65535 bytes, one page unless
    /// scatter-gather is on) in `chunks.len()` slots, plus a GSO extra-info slot
    /// when `gso` is set.
    fn send<P: XenPlatform>(
        &mut self,
        p: &P,
        frame: &[u8],
        gso: Option<u16>,
        csum_blank: bool,
        stats: &mut NetStats,
    ) -> Result<(), QueueError> {
        let chunks: Vec<&[u8]> = frame.chunks(PAGE_BYTES).collect();
        let ring_slots = chunks.len() + usize::from(gso.is_some());
        let fits = |q: &Self| {
            q.tx_free.len() >= chunks.len() && q.tx.free_requests() as usize >= ring_slots
        };
        if !fits(self) {
            self.reap_tx(stats).map_err(QueueError::Broken)?;
            if !fits(self) {
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
            if let (0, Some(mss)) = (i, gso) {
                // The extra-info slot follows the first request; its response is
                // NETIF_RSP_NULL.
                if let Err(e) = self.tx.push_request(&netif::encode_gso_extra(mss)) {
                    return Err(QueueError::Broken(format!("tx ring: {e}")));
                }
            }
        }
        if self.tx.push_requests_and_check_notify() {
            p.notify(self.port);
        }
        Ok(())
    }

    /// Takes TX responses: frees the slots, counts. A bad response is an error.
    fn reap_tx(&mut self, stats: &mut NetStats) -> Result<(), String> {
        let mut raw = [0u8; 4];
        loop {
            match self.tx.take_response(&mut raw) {
                Ok(true) => {}
                Ok(false) => match self.tx.final_check_for_responses() {
                    Ok(true) => continue,
                    Ok(false) => return Ok(()),
                    Err(e) => return Err(format!("tx ring: {e}")),
                },
                Err(e) => return Err(format!("tx ring: {e}")),
            }
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

    /// Takes up to `budget` RX responses: copies each frame out once (complete
    /// frames go to `received`), reposts the buffers. Returns the responses taken;
    /// a bad response is an error.
    fn poll_rx<P: XenPlatform>(
        &mut self,
        p: &P,
        stats: &mut NetStats,
        received: &mut VecDeque<(Vec<u8>, u16, Option<u16>)>,
        budget: usize,
        gso_rx: bool,
    ) -> Result<usize, String> {
        let mut raw = [0u8; netif::RX_ENTRY_BYTES];
        let mut taken = 0;
        let mut reposted = false;
        let size = self.rx.size();
        let result = loop {
            if taken >= budget {
                break Ok(());
            }
            let pos = self.rx.next_response_index();
            match self.rx.take_response(&mut raw) {
                Ok(true) => {}
                Ok(false) => match self.rx.final_check_for_responses() {
                    Ok(true) => continue,
                    Ok(false) => break Ok(()),
                    Err(e) => break Err(format!("rx ring: {e}")),
                },
                Err(e) => break Err(format!("rx ring: {e}")),
            }
            taken += 1;
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
                    data: Vec::new(),
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
                                pkt.data.resize(start + len, 0);
                                buf.page.mem().read_bytes(off, &mut pkt.data[start..]);
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
                reposted = true;
            }
        };
        if reposted && self.rx.push_requests_and_check_notify() {
            p.notify(self.port);
        }
        result.map(|()| taken)
    }
}

/// Releases `queues`: (buffer pages, ring pages) freed.
fn release_all<P: XenPlatform>(p: &P, queues: Vec<Queue>) -> (usize, usize) {
    queues
        .into_iter()
        .map(|q| q.release(p))
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

/// Gives back what a failed setup took: grants ended and pages freed (a page whose
/// grant the backend maps is kept), the port closed.
fn give_back<P: XenPlatform>(p: &P, held: Vec<(DmaPages, Grant)>, port: Option<Port>) {
    for (page, grant) in held {
        if p.end_grant(grant).is_ok() {
            p.free_pages(page);
        }
    }
    if let Some(port) = port {
        p.close_port(port);
    }
}

/// Counts a complete packet (also in its queue's `queue_packets`) and hands it over,
/// or drops it.
fn deliver(
    pkt: RxPacket,
    queue_packets: &mut u64,
    stats: &mut NetStats,
    received: &mut VecDeque<(Vec<u8>, u16, Option<u16>)>,
) {
    match pkt.drop {
        Some(RxDrop::Error) => stats.rx_errors += 1,
        Some(RxDrop::TooLong) => stats.rx_dropped += 1,
        None => {
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

/// One connected virtual network interface.
pub struct Netfront<P: XenPlatform> {
    platform: P,
    backend_id: u16,
    mac: [u8; 6],
    /// At least one.
    queues: Vec<Queue>,
    /// The queue whose RX responses are taken first at the next poll.
    rx_next: usize,
    /// Frames received and copied out, not yet taken, with their first slot's flags.
    received: VecDeque<(Vec<u8>, u16, Option<u16>)>,
    /// Bytes of the frames in `received`.
    received_bytes: usize,
    broken: Option<String>,
    stats: NetStats,
    sg: bool,
    gso: bool,
    mtu: usize,
}

/// Removes what an earlier attempt published in the other layout (netif.h): a
/// retry that makes do with fewer queues must not leave `multi-queue-num-queues` and
/// `queue-N/` behind for netback to read, nor a multi-queue retry the single-queue
/// keys at the top.
fn clear_stale_layout<P: XenPlatform>(p: &P, base: &str, n: usize) -> Result<(), NetError> {
    let old = p
        .xs_read(&format!("{base}/multi-queue-num-queues"))
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0)
        // bounded by what a frontend could have published
        .min(MAX_QUEUES_EVER);
    let rm = |k: &str| hs(k, p.xs_rm(&format!("{base}/{k}")));
    if n > 1 {
        for k in ["tx-ring-ref", "rx-ring-ref", "event-channel"] {
            rm(k)?;
        }
    } else {
        rm("multi-queue-num-queues")?;
    }
    let first_stale = if n > 1 { n } else { 0 };
    for k in first_stale..old {
        rm(&format!("queue-{k}"))?;
    }
    Ok(())
}

fn wait_for_action<P: XenPlatform>(
    p: &P,
    path: &str,
    fe: &Frontend,
    want: Action,
) -> Result<(), NetError> {
    crate::platform::wait_for_action(p, path, fe, want, HANDSHAKE_TIMEOUT_NS)
        .map_err(NetError::Handshake)
}

fn hs<T, E: fmt::Display>(what: &str, r: Result<T, E>) -> Result<T, NetError> {
    r.map_err(|e| NetError::Handshake(format!("{what}: {e}")))
}

/// Parses "aa:bb:cc:dd:ee:ff".
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.trim().split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;

/// A hash of the flow an Ethernet frame belongs to: the IP protocol, source and
/// destination addresses of an IPv4 or IPv6 packet, and its TCP or UDP ports when it
/// carries them where they are found without parsing further (not in IPv4
/// fragments, whose later pieces have no ports, nor behind IPv6 extension headers).
/// `None` for any other frame (ARP, ...). Only the fields named count, so every
/// frame of one flow hashes alike.
fn flow_hash(frame: &[u8]) -> Option<u32> {
    let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    let ip = frame.get(14..)?;
    let (proto, addrs, l4) = match ethertype {
        ETHERTYPE_IPV4 => {
            let ihl = usize::from(*ip.first()? & 0x0f) * 4;
            if *ip.first()? >> 4 != 4 || ihl < 20 || ip.len() < ihl {
                return None;
            }
            // More-fragments flag or a fragment offset: a piece of a datagram.
            let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
            (ip[9], &ip[12..20], (!fragment).then(|| &ip[ihl..]))
        }
        ETHERTYPE_IPV6 => {
            if ip.len() < 40 || ip[0] >> 4 != 6 {
                return None;
            }
            (ip[6], &ip[8..40], Some(&ip[40..]))
        }
        _ => return None,
    };
    let ports = match (proto, l4) {
        (IPPROTO_TCP | IPPROTO_UDP, Some(l4)) => l4.get(..4).unwrap_or(&[]),
        _ => &[],
    };
    // FNV-1a, then a final mix (murmur3's) so that the low bits, which pick the
    // queue, depend on every input bit.
    let mut h: u32 = 0x811c_9dc5;
    for &b in core::iter::once(&proto).chain(addrs).chain(ports) {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    Some(h ^ (h >> 16))
}

/// The transmit queue (of `queues`) for a frame: by its flow hash, so that one flow
/// keeps to one queue (no reordering) and flows spread; frames without one go to
/// queue 0.
fn tx_queue(frame: &[u8], queues: usize) -> usize {
    match flow_hash(frame) {
        Some(h) if queues > 1 => h as usize % queues,
        _ => 0,
    }
}

/// The number of queues to use: the caller's cap `max_queues`, no more than the
/// backend's `multi-queue-max-queues` value `backend_max` (absent, malformed or 0:
/// the backend has one queue), and at least 1.
fn queue_count(max_queues: usize, backend_max: Option<&str>) -> usize {
    let offered = backend_max
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(1);
    max_queues.min(offered).max(1)
}

impl<P: XenPlatform> Netfront<P> {
    /// Connects to `device/vif/<id>` with up to [`DEFAULT_MAX_QUEUES`] queues (as
    /// many as the backend offers, no more).
    pub fn connect(platform: P, id: u32) -> Result<Self, NetError> {
        Self::connect_with(platform, id, DEFAULT_MAX_QUEUES)
    }

    /// Connects to `device/vif/<id>` with up to `max_queues` queues: as many as the
    /// backend offers (`multi-queue-max-queues`), no more, and at least one (also for
    /// `max_queues` = 0). Each queue costs 514 pages; when the pages or grants for
    /// another queue cannot be had, the vif makes do with the queues it has.
    pub fn connect_with(platform: P, id: u32, max_queues: usize) -> Result<Self, NetError> {
        let p = &platform;
        let base = format!("device/vif/{id}");
        let backend = hs("backend path", p.xs_read(&format!("{base}/backend")))?;
        let backend_id = p
            .xs_read(&format!("{base}/backend-id"))
            .ok()
            .and_then(|v| v.trim().parse::<u16>().ok())
            .ok_or_else(|| NetError::Handshake(String::from("bad backend-id")))?;
        let mac = parse_mac(&hs("mac", p.xs_read(&format!("{base}/mac")))?)
            .ok_or_else(|| NetError::Handshake(String::from("malformed mac")))?;
        let bstate = format!("{backend}/state");
        let mut fe = Frontend::new();
        wait_for_action(p, &bstate, &fe, Action::Setup)?;

        let flag = |k: &str| {
            p.xs_read(&format!("{backend}/{k}"))
                .ok()
                .is_some_and(|v| v.trim() == "1")
        };
        let sg = flag("feature-sg");
        // TCP segmentation offload on transmit: the backend splits large TCPv4
        // packets (needs scatter-gather to carry them).
        let gso = sg && flag("feature-gso-tcpv4");
        let mtu = mtu_from_backend(p.xs_read(&format!("{backend}/mtu")).ok().as_deref(), sg);
        let max = p.xs_read(&format!("{backend}/multi-queue-max-queues")).ok();
        let n = queue_count(max_queues, max.as_deref());
        let mut queues = Vec::with_capacity(n);
        for k in 0..n {
            match Queue::setup(p, backend_id, FULL_BUFFERS) {
                Ok(q) => queues.push(q),
                // The first queue makes do with fewer buffers (a small domain: a
                // router's two vifs at memory = 8 do not have 514 pages each);
                // further queues are only worth it whole.
                Err(_) if k == 0 => match Self::setup_smaller(p, backend_id) {
                    Ok(q) => queues.push(q),
                    Err(e) => return Err(e),
                },
                // Fewer queues rather than no vif: a small domain may have the
                // pages (or grants) for one queue only. The failed queue gave back
                // what it took.
                Err(_) if k > 0 => break,
                Err(e) => {
                    release_all(p, queues);
                    return Err(e);
                }
            }
        }
        match Self::publish_and_connect(p, &base, &bstate, &mut fe, &queues, sg) {
            Ok(()) => {}
            Err(e) => {
                // A backend still in InitWait (or gone, or Closed) never took the
                // rings: everything goes back. One that went further (Connected,
                // then Closing: netback failed to map, or our wait ran out) may be
                // copying packets into the RX buffers' grants: it is closed the
                // xenbus way first, and if it does not reach Closed every grant and
                // page stays for good (a reference ended and reused could carry a
                // packet into another device's page), as at a detach that timed out.
                let untouched = matches!(
                    crate::platform::read_state(p, &bstate),
                    None | Some(
                        XenbusState::Initialising | XenbusState::InitWait | XenbusState::Closed
                    )
                );
                if untouched
                    || crate::platform::close_device(p, &base, &bstate, HANDSHAKE_TIMEOUT_NS)
                {
                    // Nothing leaks, and the device can be connected again: the
                    // frontend goes back to Initialising (netback returns to InitWait).
                    release_all(p, queues);
                    let _ = p.xs_write(
                        &format!("{base}/state"),
                        &format!("{}", XenbusState::Initialising.number()),
                    );
                } else {
                    for q in queues {
                        p.close_port(q.port);
                        // Dropped, not released: see `release_after`.
                        drop(q);
                    }
                }
                return Err(e);
            }
        }
        for q in &queues {
            p.notify(q.port);
        }

        Ok(Netfront {
            platform,
            backend_id,
            mac,
            queues,
            rx_next: 0,
            received: VecDeque::new(),
            received_bytes: 0,
            broken: None,
            stats: NetStats::default(),
            sg,
            gso,
            mtu,
        })
    }

    /// A queue with fewer buffers ([`SMALLER_BUFFERS`]), when the full set's pages or
    /// grants are not to be had; the last error if none fits.
    fn setup_smaller(p: &P, backend_id: u16) -> Result<Queue, NetError> {
        let mut last = NetError::Handshake(String::from("no memory for a queue"));
        for n in SMALLER_BUFFERS {
            match Queue::setup(p, backend_id, n) {
                Ok(q) => return Ok(q),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Publishes the queues and features, goes Connected and waits for the backend.
    fn publish_and_connect(
        p: &P,
        base: &str,
        bstate: &str,
        fe: &mut Frontend,
        queues: &[Queue],
        sg: bool,
    ) -> Result<(), NetError> {
        let n = queues.len();
        let w = |k: &str, v: &str| hs(k, p.xs_write(&format!("{base}/{k}"), v));
        clear_stale_layout(p, base, n)?;
        if n > 1 {
            w("multi-queue-num-queues", &format!("{n}"))?;
        }
        for (k, q) in queues.iter().enumerate() {
            // One queue: the keys at the top, as without multi-queue (netif.h).
            let dir = if n > 1 {
                format!("queue-{k}/")
            } else {
                String::new()
            };
            w(
                &format!("{dir}tx-ring-ref"),
                &format!("{}", q.tx_ring_grant.gref()),
            )?;
            w(
                &format!("{dir}rx-ring-ref"),
                &format!("{}", q.rx_ring_grant.gref()),
            )?;
            w(&format!("{dir}event-channel"), &format!("{}", q.port.0))?;
        }
        w("request-rx-copy", "1")?;
        w("feature-rx-notify", "1")?;
        w("feature-sg", if sg { "1" } else { "0" })?;
        // Receive GSO: with scatter-gather, TCP packets up to 64 KiB arrive whole
        // (several data slots and a GSO extra-info slot) instead of cut to the MTU.
        let gso_rx = if sg { "1" } else { "0" };
        w("feature-gso-tcpv4", gso_rx)?;
        w("feature-gso-tcpv6", gso_rx)?;
        w("state", &format!("{}", XenbusState::Connected.number()))?;
        fe.switched(XenbusState::Initialised);
        wait_for_action(p, bstate, fe, Action::Connect)
    }

    /// Gives back every queue's RX and TX buffers and ring pages (grants ended,
    /// pages freed) and closes the event channels, once the backend has closed (`xl
    /// network-detach`). A page the backend still maps keeps its grant and stays
    /// allocated. Returns the buffer pages and the ring pages freed (512 and 2 per
    /// queue when all are).
    pub fn release(self) -> (usize, usize) {
        self.release_after(true)
    }

    /// As [`Netfront::release`], saying whether the backend closed. If it did not
    /// (the close timed out), netback may still hold RX requests it will grant-copy
    /// packets into, and TX requests it will copy from: their grants are never ended
    /// and no page is freed (a reference ended and reused could carry a packet into
    /// another device's page). Only the event channels are closed. Returns (0, 0).
    pub fn release_after(self, backend_closed: bool) -> (usize, usize) {
        let Netfront {
            platform, queues, ..
        } = self;
        if backend_closed {
            return release_all(&platform, queues);
        }
        for q in queues {
            platform.close_port(q.port);
            // Dropped, not released: a DmaPages not given back to the platform
            // stays allocated for good, and a Grant dropped is never ended.
            drop(q);
        }
        (0, 0)
    }

    /// The MAC address from XenStore.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// The backend's domain id.
    pub fn backend_id(&self) -> u16 {
        self.backend_id
    }

    /// Link statistics.
    pub fn stats(&self) -> NetStats {
        self.stats
    }

    /// The number of queues (TX/RX ring pairs) in use.
    pub fn queues(&self) -> usize {
        self.queues.len()
    }

    /// RX buffers of the first queue: one per ring slot (256), or fewer in a domain
    /// short of memory.
    pub fn rx_buffers(&self) -> usize {
        self.queues.first().map_or(0, |q| q.rx_bufs.len())
    }

    /// Packet counters per queue, queue 0 first.
    pub fn queue_stats(&self) -> Vec<QueueStats> {
        self.queues
            .iter()
            .map(|q| QueueStats {
                rx_packets: q.rx_packets,
                tx_packets: q.tx_packets,
            })
            .collect()
    }

    /// Why the vif is broken, if it is.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Whether scatter-gather is on.
    pub fn has_sg(&self) -> bool {
        self.sg
    }

    /// The MTU (from the backend's `mtu` key, see [`mtu_from_backend`]).
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    /// The largest frame sent or expected without GSO: the MTU plus the Ethernet header.
    pub fn max_frame(&self) -> usize {
        self.mtu + ETH_HEADER
    }

    /// Marks the vif broken (every queue's rings), keeping the first reason.
    fn fail(&mut self, why: String) {
        if self.broken.is_none() {
            for q in &mut self.queues {
                q.mark_broken();
            }
            self.broken = Some(why);
        }
    }

    /// Whether the backend takes TCPv4 GSO packets ([`Netfront::send_gso`]).
    pub fn has_gso_tcpv4(&self) -> bool {
        self.gso
    }

    /// TX slots free now (a GSO packet of up to 64 KiB needs 17), on the fullest
    /// queue: the frame to be sent, and so its queue, is not known yet.
    pub fn tx_free_slots(&self) -> usize {
        if self.broken.is_some() {
            return 0;
        }
        self.queues
            .iter()
            .map(Queue::tx_free_slots)
            .min()
            .unwrap_or(0)
    }

    /// Whether a frame of up to [`Netfront::max_frame`] bytes can be sent now,
    /// whatever its queue (every queue has the slots).
    pub fn can_send(&self) -> bool {
        let slots = self.max_frame().div_ceil(PAGE_BYTES);
        self.broken.is_none() && self.queues.iter().all(|q| q.tx_free.len() >= slots)
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

    /// Sends a TCPv4 frame larger than the MTU for the backend to cut into `mss`-byte
    /// segments (GSO). The frame's TCP checksum field must hold the pseudo-header
    /// sum (the backend completes it: `NETTXF_csum_blank`).
    pub fn send_gso(&mut self, frame: &[u8], mss: u16) -> Result<(), NetError> {
        if !self.gso || mss == 0 {
            return Err(NetError::BadFrame);
        }
        self.send_frame(frame, Some(mss), true)
    }

    fn send_frame(
        &mut self,
        frame: &[u8],
        gso: Option<u16>,
        csum_blank: bool,
    ) -> Result<(), NetError> {
        if let Some(w) = &self.broken {
            return Err(NetError::Broken(w.clone()));
        }
        if frame.is_empty() || frame.len() > 65535 {
            return Err(NetError::BadFrame);
        }
        if frame.len() > PAGE_BYTES && !self.sg {
            return Err(NetError::BadFrame);
        }
        let k = tx_queue(frame, self.queues.len());
        let Netfront {
            platform,
            queues,
            stats,
            ..
        } = self;
        let Some(q) = queues.get_mut(k) else {
            return Err(NetError::Busy);
        };
        match q.send(platform, frame, gso, csum_blank, stats) {
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
        let Netfront { queues, stats, .. } = self;
        let failed = queues.iter_mut().find_map(|q| q.reap_tx(stats).err());
        if let Some(why) = failed {
            self.fail(why);
        }
    }

    /// Takes RX responses from every queue, in turn (a queue hands over at most 64
    /// responses before the next one's turn, and the queue that starts moves on at
    /// every call): copies each frame out once, reposts the buffers (notifying that
    /// queue's event channel when the backend asks for it).
    pub fn poll_rx(&mut self) {
        let n = self.queues.len();
        if n == 0 {
            return;
        }
        // Enough turns to drain full rings and see them empty, not more: reposted
        // buffers may be answered again meanwhile, and the next call takes those.
        let rounds = self
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
            let mut taken = 0;
            for k in 0..n {
                if self.broken.is_some() {
                    return;
                }
                let i = (start + k) % n;
                let Netfront {
                    platform,
                    queues,
                    stats,
                    received,
                    sg,
                    ..
                } = self;
                if self.received_bytes >= RECEIVED_BYTES {
                    return;
                }
                let Some(q) = queues.get_mut(i) else {
                    continue;
                };
                let before = received.len();
                let r = q.poll_rx(platform, stats, received, RX_BUDGET, *sg);
                self.received_bytes += received.range(before..).map(|f| f.0.len()).sum::<usize>();
                match r {
                    Ok(t) => taken += t,
                    Err(why) => return self.fail(why),
                }
            }
            if taken == 0 {
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
        self.received_bytes = self.received_bytes.saturating_sub(f.len());
        Some((f, RxChecksum::from_flags(flags), gso))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeMap;
    use core::cell::{Cell, RefCell};
    use xenlet_xen::gnttab::GrantRef;
    use xenlet_xen::shared::SharedPage;
    use xenlet_xen::xenstore::XsError;
    use xenlet_xen::XenError;

    const BE: &str = "/local/domain/0/backend/vif/5/0";

    #[derive(Default)]
    struct Fake {
        xs: RefCell<BTreeMap<String, String>>,
        pages: RefCell<BTreeMap<u64, SharedPage>>,
        grants: RefCell<BTreeMap<u32, u64>>,
        /// Each live grant's access.
        access: RefCell<BTreeMap<u32, Access>>,
        /// Grants the backend keeps mapped: ending them fails (as in Xen).
        mapped: RefCell<alloc::collections::BTreeSet<u32>>,
        next_gfn: Cell<u64>,
        next_gref: Cell<u32>,
        /// "+path" for each watch set, "-path" for each removed.
        watch_log: RefCell<Vec<String>>,
        next_port: Cell<u32>,
        notified: RefCell<Vec<u32>>,
        closed: RefCell<Vec<u32>>,
        pages_freed: Cell<usize>,
        /// The backend never goes Connected.
        backend_stalls: Cell<bool>,
        /// The backend goes Closing when the frontend goes Connected (netback
        /// could not map the rings).
        backend_fails: Cell<bool>,
        /// The backend goes Closed when the frontend does.
        backend_follows_close: Cell<bool>,
        /// Grants made before the grant table is "full".
        grant_limit: Cell<Option<usize>>,
        /// The clock: one second passes per look.
        clock: Cell<u64>,
    }

    impl Fake {
        fn new() -> Self {
            let f = Fake::default();
            f.next_gfn.set(0x1000);
            f.next_gref.set(8);
            f.next_port.set(9);
            let mut xs = f.xs.borrow_mut();
            xs.insert("device/vif/0/backend".into(), BE.into());
            xs.insert("device/vif/0/backend-id".into(), "0".into());
            xs.insert("device/vif/0/mac".into(), "00:16:3e:01:02:03".into());
            xs.insert(format!("{BE}/state"), "2".into());
            xs.insert(format!("{BE}/feature-sg"), "1".into());
            drop(xs);
            f
        }
        fn page_of(&self, key: &str) -> SharedPage {
            let gref: u32 = self.xs.borrow()[key].parse().unwrap();
            let gfn = self.grants.borrow()[&gref];
            self.pages.borrow()[&gfn].alias_for_test()
        }
        /// A backend offering `max` as `multi-queue-max-queues`.
        fn offering_queues(max: &str) -> Self {
            let f = Fake::new();
            f.xs.borrow_mut()
                .insert(format!("{BE}/multi-queue-max-queues"), max.into());
            f
        }
        fn key(&self, key: &str) -> Option<String> {
            self.xs.borrow().get(key).cloned()
        }
        fn page_by_gref(&self, gref: u32) -> SharedPage {
            let gfn = self.grants.borrow()[&gref];
            self.pages.borrow()[&gfn].alias_for_test()
        }
        /// The page of `gref` for the backend to write: only through a read-write
        /// grant, as Xen enforces.
        fn writable_page_by_gref(&self, gref: u32) -> SharedPage {
            assert_eq!(
                self.access.borrow().get(&gref),
                Some(&Access::ReadWrite),
                "the backend writes only through read-write grants"
            );
            self.page_by_gref(gref)
        }
    }

    impl XenPlatform for &Fake {
        fn xs_read(&self, path: &str) -> Result<String, XsError> {
            self.xs
                .borrow()
                .get(path)
                .cloned()
                .ok_or_else(|| XsError::Remote("ENOENT".into()))
        }
        fn xs_write(&self, path: &str, value: &str) -> Result<(), XsError> {
            if path == "device/vif/0/state" && value == "4" && !self.backend_stalls.get() {
                let to = if self.backend_fails.get() { "5" } else { "4" };
                self.xs
                    .borrow_mut()
                    .insert(format!("{BE}/state"), to.into());
            }
            if path == "device/vif/0/state" && value == "6" && self.backend_follows_close.get() {
                self.xs
                    .borrow_mut()
                    .insert(format!("{BE}/state"), "6".into());
            }
            self.xs.borrow_mut().insert(path.into(), value.into());
            Ok(())
        }
        fn xs_rm(&self, path: &str) -> Result<(), XsError> {
            crate::platform::rm_tree(&mut self.xs.borrow_mut(), path);
            Ok(())
        }
        fn xs_watch(&self, path: &str) -> Result<crate::platform::Watch, XsError> {
            self.watch_log.borrow_mut().push(format!("+{path}"));
            Ok(crate::platform::Watch {
                path: path.into(),
                token: "fe".into(),
            })
        }
        fn xs_unwatch(&self, w: crate::platform::Watch) {
            self.watch_log.borrow_mut().push(format!("-{}", w.path));
        }
        fn wait_watch(&self, _: &crate::platform::Watch, _: u64) -> bool {
            true
        }
        fn alloc_pages(&self, count: usize) -> Option<DmaPages> {
            let gfn = self.next_gfn.get();
            self.next_gfn.set(gfn + count as u64);
            let (pages, alias) = DmaPages::leak_for_test(gfn, count);
            self.pages.borrow_mut().insert(gfn, alias);
            Some(pages)
        }
        fn free_pages(&self, p: DmaPages) {
            self.pages_freed.set(self.pages_freed.get() + p.count());
        }
        fn grant(
            &self,
            _: u16,
            pages: &DmaPages,
            index: usize,
            access: Access,
        ) -> Result<Grant, xenlet_xen::gnttab::GrantError> {
            let gfn = pages
                .frame(index)
                .ok_or(xenlet_xen::gnttab::GrantError::NoSuchPage)?;
            if self
                .grant_limit
                .get()
                .is_some_and(|l| self.grants.borrow().len() >= l)
            {
                return Err(xenlet_xen::gnttab::GrantError::Exhausted);
            }
            let r = self.next_gref.get();
            self.next_gref.set(r + 1);
            self.grants.borrow_mut().insert(r, gfn);
            self.access.borrow_mut().insert(r, access);
            Ok(Grant::new(GrantRef(r), gfn as u32))
        }
        fn end_grant(&self, g: Grant) -> Result<(), Grant> {
            if self.mapped.borrow().contains(&g.gref().0) {
                return Err(g);
            }
            self.grants.borrow_mut().remove(&g.gref().0);
            self.access.borrow_mut().remove(&g.gref().0);
            Ok(())
        }
        fn alloc_unbound(&self, _: u16) -> Result<Port, XenError> {
            let p = self.next_port.get();
            self.next_port.set(p + 1);
            Ok(Port(p))
        }
        fn close_port(&self, p: Port) {
            self.closed.borrow_mut().push(p.0);
        }
        fn notify(&self, p: Port) {
            self.notified.borrow_mut().push(p.0);
        }
        fn wait(&self) {}
        fn now_ns(&self) -> u64 {
            let t = self.clock.get();
            self.clock.set(t + 1_000_000_000);
            t
        }
    }

    /// Backend side of the single queue's RX ring: delivers a frame into the next
    /// posted buffer.
    fn deliver(
        f: &Fake,
        rx_rsp_prod: &mut u32,
        id_override: Option<u16>,
        offset: u16,
        data: &[u8],
        status: Option<i16>,
    ) {
        deliver_on(
            f,
            "device/vif/0",
            rx_rsp_prod,
            id_override,
            offset,
            data,
            status,
        );
    }

    /// Backend side of the RX ring published in `dir` (`device/vif/0` or
    /// `device/vif/0/queue-<k>`): delivers a frame into the next posted buffer.
    fn deliver_on(
        f: &Fake,
        dir: &str,
        rx_rsp_prod: &mut u32,
        id_override: Option<u16>,
        offset: u16,
        data: &[u8],
        status: Option<i16>,
    ) {
        let ring = f.page_of(&format!("{dir}/rx-ring-ref"));
        // the request at the same index names the buffer
        let slot = 64 + (*rx_rsp_prod % 256) as usize * 8;
        let mut req = [0u8; 8];
        ring.read_bytes(slot, &mut req);
        let id = u16::from_le_bytes([req[0], req[1]]);
        let gref = u32::from_le_bytes([req[4], req[5], req[6], req[7]]);
        if usize::from(offset) + data.len() <= 4096 {
            f.writable_page_by_gref(gref)
                .write_bytes(usize::from(offset), data);
        }
        let mut rsp = [0u8; 8];
        rsp[0..2].copy_from_slice(&id_override.unwrap_or(id).to_le_bytes());
        rsp[2..4].copy_from_slice(&offset.to_le_bytes());
        rsp[6..8].copy_from_slice(&status.unwrap_or(data.len() as i16).to_le_bytes());
        ring.write_bytes(slot, &rsp);
        *rx_rsp_prod += 1;
        ring.store_u32(8, *rx_rsp_prod);
    }

    #[test]
    fn handshake_mac_and_rx_pool() {
        let f = Fake::new();
        let n = Netfront::connect(&f, 0).unwrap();
        assert_eq!(n.mac(), [0x00, 0x16, 0x3e, 1, 2, 3]);
        let xs = f.xs.borrow();
        for k in ["tx-ring-ref", "rx-ring-ref", "event-channel"] {
            assert!(xs.contains_key(&format!("device/vif/0/{k}")), "{k}");
        }
        assert_eq!(xs["device/vif/0/request-rx-copy"], "1");
        assert_eq!(xs["device/vif/0/state"], "4");
        drop(xs);
        let log = f.watch_log.borrow();
        assert!(!log.is_empty(), "the handshake waited on a watch");
        for pair in log.chunks(2) {
            assert_eq!(pair, [format!("+{BE}/state"), format!("-{BE}/state")]);
        }
        drop(log);
        let ring = f.page_of("device/vif/0/rx-ring-ref");
        assert_eq!(ring.load_u32(0), 256, "every RX buffer posted");
        assert!(n.has_sg());
    }

    #[test]
    fn receives_frames_and_reposts_buffers() {
        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        let mut prod = 0;
        for i in 0..300u32 {
            let frame = [i as u8; 60];
            deliver(&f, &mut prod, None, 0, &frame, None);
            assert_eq!(n.recv().unwrap(), frame.to_vec());
        }
        assert_eq!(n.stats().rx_packets, 300);
        assert!(n.broken().is_none());
    }

    #[test]
    fn received_frames_are_bounded_in_bytes_and_the_rest_wait_on_the_ring() {
        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        let mut prod = 0;
        for i in 0..200u32 {
            deliver(&f, &mut prod, None, 0, &[i as u8; 4000], None);
        }
        assert_eq!(n.recv().unwrap(), [0u8; 4000].to_vec());
        let held = n.received.len() + 1;
        assert!(held < 200, "{held} frames copied out at once");
        assert!(n.received_bytes + 4000 <= RECEIVED_BYTES + RX_BUDGET * 4096);
        // Nothing is lost: the rest come once the first are taken.
        let mut got = 1;
        while let Some(fr) = n.recv() {
            assert_eq!(fr, [got as u8; 4000].to_vec());
            got += 1;
        }
        assert_eq!(got, 200);
        assert_eq!((n.stats().rx_dropped, n.received_bytes), (0, 0));
    }

    #[test]
    fn hostile_rx_responses_break_the_vif() {
        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        let mut prod = 0;
        deliver(&f, &mut prod, None, 4000, &[1; 200], None); // data beyond the page
        assert!(n.recv().is_none());
        assert!(n.broken().unwrap().contains("beyond"), "{:?}", n.broken());

        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        let mut prod = 0;
        deliver(&f, &mut prod, Some(999), 0, &[1; 60], None); // unknown buffer
        assert!(n.recv().is_none());
        assert!(n.broken().unwrap().contains("where buffer 0 was posted"));
        assert!(matches!(n.send(&[0; 60]), Err(NetError::Broken(_))));
    }

    #[test]
    fn a_response_naming_another_posted_buffer_breaks_the_vif() {
        // The data goes into the buffer posted at ring position 0 (id 0), but the
        // response names buffer 1, also posted (at position 1): taken by id, buffer
        // 1 would be read (stale data), posted again while still posted, and buffer
        // 0 never posted again.
        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        let mut prod = 0;
        deliver(&f, &mut prod, Some(1), 0, &[5; 60], None);
        assert_eq!(n.recv(), None, "nothing delivered from the wrong buffer");
        let why = n.broken().expect("the vif is broken");
        assert!(why.contains("rx response id 1 at ring position 0"), "{why}");
        let ring = f.page_of("device/vif/0/rx-ring-ref");
        assert_eq!(ring.load_u32(0), 256, "no buffer posted a second time");
    }

    #[test]
    fn csum_blank_flag_reaches_the_caller() {
        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        assert!(
            !f.xs
                .borrow()
                .contains_key("device/vif/0/feature-no-csum-offload"),
            "receive checksum offload stays on"
        );
        let mut prod = 0;
        deliver(&f, &mut prod, None, 0, &[7; 60], None);
        assert_eq!(
            n.recv_flagged(),
            Some((alloc::vec![7; 60], RxChecksum::Unknown))
        );
        // the same with NETRXF_csum_blank | NETRXF_data_validated in the response (a
        // packet from dom0's stack), then with NETRXF_data_validated alone
        let ring = f.page_of("device/vif/0/rx-ring-ref");
        for (flags, want) in [
            (
                netif::NETRXF_CSUM_BLANK | netif::NETRXF_DATA_VALIDATED,
                RxChecksum::Blank,
            ),
            (netif::NETRXF_DATA_VALIDATED, RxChecksum::Validated),
        ] {
            deliver(&f, &mut prod, None, 0, &[8; 60], None);
            let slot = 64 + ((prod - 1) % 256) as usize * 8;
            ring.write_bytes(slot + 4, &flags.to_le_bytes());
            assert_eq!(n.recv_flagged(), Some((alloc::vec![8; 60], want)));
        }
    }

    #[test]
    fn backend_errors_are_counted_not_fatal() {
        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        let mut prod = 0;
        deliver(&f, &mut prod, None, 0, &[], Some(netif::RSP_ERROR));
        assert!(n.recv().is_none());
        assert_eq!(n.stats().rx_errors, 1);
        assert!(n.broken().is_none());
    }

    /// Backend side: a data slot of `data` with `flags` in the buffer posted at the
    /// next RX ring position of `device/vif/0`.
    fn data_slot(f: &Fake, prod: &mut u32, data: &[u8], flags: u16) {
        let ring = f.page_of("device/vif/0/rx-ring-ref");
        let slot = 64 + (*prod % 256) as usize * 8;
        let mut req = [0u8; 8];
        ring.read_bytes(slot, &mut req);
        let gref = u32::from_le_bytes([req[4], req[5], req[6], req[7]]);
        f.writable_page_by_gref(gref).write_bytes(0, data);
        let mut rsp = [0u8; 8];
        rsp[0..2].copy_from_slice(&req[0..2]);
        rsp[4..6].copy_from_slice(&flags.to_le_bytes());
        rsp[6..8].copy_from_slice(&(data.len() as i16).to_le_bytes());
        ring.write_bytes(slot, &rsp);
        *prod += 1;
        ring.store_u32(8, *prod);
    }

    /// Backend side: an extra-info slot (`struct netif_extra_info`) written over
    /// the next RX response.
    fn extra_slot(f: &Fake, prod: &mut u32, kind: u8, more: bool, gso_size: u16, gso_type: u8) {
        let ring = f.page_of("device/vif/0/rx-ring-ref");
        let slot = 64 + (*prod % 256) as usize * 8;
        let mut e = [0u8; 8];
        e[0] = kind;
        e[1] = u8::from(more);
        e[2..4].copy_from_slice(&gso_size.to_le_bytes());
        e[4] = gso_type;
        ring.write_bytes(slot, &e);
        *prod += 1;
        ring.store_u32(8, *prod);
    }

    /// A 9000-byte packet as netback sends a GSO packet: first data slot, the GSO
    /// extra (plus `extra` more extras), the rest of the data.
    fn gso_packet(f: &Fake, prod: &mut u32, payload: &[u8], extra: Option<(u8, u16, u8)>) {
        let x = netif::NETRXF_EXTRA_INFO | netif::NETRXF_MORE_DATA | netif::NETRXF_CSUM_BLANK;
        data_slot(f, prod, &payload[..4096], x);
        extra_slot(
            f,
            prod,
            netif::EXTRA_TYPE_GSO,
            extra.is_some(),
            1448,
            netif::GSO_TYPE_TCPV4,
        );
        if let Some((kind, size, ty)) = extra {
            extra_slot(f, prod, kind, false, size, ty);
        }
        data_slot(f, prod, &payload[4096..8192], netif::NETRXF_MORE_DATA);
        data_slot(f, prod, &payload[8192..], 0);
    }

    #[test]
    fn gso_packets_arrive_whole_and_their_buffers_return() {
        let f = Fake::new();
        let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
        assert_eq!(
            f.key("device/vif/0/feature-gso-tcpv4").as_deref(),
            Some("1")
        );
        assert_eq!(
            f.key("device/vif/0/feature-gso-tcpv6").as_deref(),
            Some("1")
        );
        let payload: Vec<u8> = (0..9000u32).map(|i| (i % 253) as u8).collect();
        let mut prod = 0;
        // more packets than the ring has slots: every buffer, the extra slots'
        // included, must come back
        for round in 0..100 {
            gso_packet(&f, &mut prod, &payload, None);
            let (frame, csum, gso) = n.recv_meta().unwrap();
            assert!(frame == payload, "round {round}: packet reassembled");
            assert_eq!(csum, RxChecksum::Blank);
            assert_eq!(gso, Some(1448), "the GSO extra's segment size is kept");
            data_slot(&f, &mut prod, &[round as u8; 60], 0);
            assert_eq!(
                n.recv_meta().unwrap(),
                (alloc::vec![round as u8; 60], RxChecksum::Unknown, None)
            );
        }
        assert!(n.broken().is_none(), "{:?}", n.broken());
        let st = n.stats();
        assert_eq!((st.rx_packets, st.rx_gso, st.rx_errors), (200, 100, 0));
        let ring = f.page_of("device/vif/0/rx-ring-ref");
        assert_eq!(
            ring.load_u32(0),
            prod + 256,
            "every slot's buffer posted again"
        );
    }

    #[test]
    fn an_unusable_extra_drops_its_packet_not_the_vif() {
        let f = Fake::new();
        let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
        let payload = alloc::vec![7u8; 9000];
        let mut prod = 0;
        // a hash extra (never asked for) behind the GSO one; then a GSO extra of an
        // unknown type; then one with segment size 0
        gso_packet(
            &f,
            &mut prod,
            &payload,
            Some((netif::EXTRA_TYPE_GSO + 3, 0, 0)),
        );
        assert!(n.recv().is_none());
        let x = netif::NETRXF_EXTRA_INFO;
        data_slot(&f, &mut prod, &[1; 60], x);
        extra_slot(&f, &mut prod, netif::EXTRA_TYPE_GSO, false, 1448, 9);
        data_slot(&f, &mut prod, &[2; 60], x);
        extra_slot(
            &f,
            &mut prod,
            netif::EXTRA_TYPE_GSO,
            false,
            0,
            netif::GSO_TYPE_TCPV6,
        );
        assert!(n.recv().is_none());
        assert_eq!(n.stats().rx_errors, 3);
        assert!(n.broken().is_none());
        // the ring is still in step: the next packets arrive
        gso_packet(&f, &mut prod, &payload, None);
        assert_eq!(n.recv().unwrap().len(), 9000);
        data_slot(&f, &mut prod, &[3; 60], 0);
        assert_eq!(n.recv().unwrap(), alloc::vec![3u8; 60]);
    }

    #[test]
    fn oversized_packet_is_dropped_and_the_ring_stays_in_step() {
        let f = Fake::new();
        let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
        let mut prod = 0;
        // 17 full pages: more than a 64 KiB IP packet can be
        for _ in 0..16 {
            data_slot(&f, &mut prod, &[9; 4096], netif::NETRXF_MORE_DATA);
        }
        data_slot(&f, &mut prod, &[9; 4096], 0);
        assert!(n.recv().is_none());
        assert_eq!(n.stats().rx_dropped, 1);
        data_slot(&f, &mut prod, &[4; 60], 0);
        assert_eq!(n.recv().unwrap(), alloc::vec![4u8; 60]);
        assert!(n.broken().is_none());
    }

    #[test]
    fn extra_info_where_it_cannot_be_breaks_the_vif() {
        // without scatter-gather no GSO is asked for: extra info is a protocol error
        let f = Fake::new();
        f.xs.borrow_mut().remove(&format!("{BE}/feature-sg"));
        let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
        assert_eq!(
            f.key("device/vif/0/feature-gso-tcpv4").as_deref(),
            Some("0")
        );
        let mut prod = 0;
        data_slot(&f, &mut prod, &[1; 60], netif::NETRXF_EXTRA_INFO);
        assert!(n.recv().is_none());
        assert!(
            n.broken().unwrap().contains("not negotiated"),
            "{:?}",
            n.broken()
        );

        // the extra-info flag on a packet's second data slot
        let f = Fake::new();
        let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
        let mut prod = 0;
        data_slot(&f, &mut prod, &[1; 4096], netif::NETRXF_MORE_DATA);
        data_slot(&f, &mut prod, &[1; 60], netif::NETRXF_EXTRA_INFO);
        assert!(n.recv().is_none());
        assert!(
            n.broken().unwrap().contains("after the first slot"),
            "{:?}",
            n.broken()
        );
    }

    #[test]
    fn mtu_comes_from_the_backend_within_bounds() {
        assert_eq!(mtu_from_backend(None, true), 1500);
        assert_eq!(mtu_from_backend(Some("9000"), true), 9000);
        assert_eq!(mtu_from_backend(Some(" 9000\n"), true), 9000);
        assert_eq!(mtu_from_backend(Some("68"), true), 68);
        assert_eq!(mtu_from_backend(Some("65521"), true), 65521);
        for bad in ["", "jumbo", "-1", "67", "65522", "99999999999999999999"] {
            assert_eq!(mtu_from_backend(Some(bad), true), 1500, "{bad:?}");
        }
        // without scatter-gather a frame must fit one page: kept at 1500
        assert_eq!(mtu_from_backend(Some("9000"), false), 1500);
        assert_eq!(mtu_from_backend(Some("1280"), false), 1280);
    }

    #[test]
    fn jumbo_mtu_from_xenstore_sets_frame_size_and_slots_needed() {
        let f = Fake::new();
        f.xs.borrow_mut().insert(format!("{BE}/mtu"), "9000".into());
        let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
        assert_eq!((n.mtu(), n.max_frame()), (9000, 9014));
        // a 9014-byte frame takes 3 slots: with 2 free, no frame may be promised
        for _ in 0..(n.tx_free_slots() - 2) {
            n.send(&[1; 60]).unwrap();
        }
        assert_eq!(n.tx_free_slots(), 2);
        assert!(!n.can_send(), "2 slots cannot carry a 9014-byte frame");

        let f = Fake::new();
        let n = Netfront::connect_with(&f, 0, 1).unwrap();
        assert_eq!((n.mtu(), n.max_frame()), (1500, 1514), "no mtu key");
        let f = Fake::new();
        f.xs.borrow_mut().remove(&format!("{BE}/feature-sg"));
        f.xs.borrow_mut().insert(format!("{BE}/mtu"), "9000".into());
        let n = Netfront::connect_with(&f, 0, 1).unwrap();
        assert_eq!(n.mtu(), 1500, "no scatter-gather: one page per frame");
    }

    #[test]
    fn transmits_single_and_multi_slot_frames() {
        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        let grants_before = f.grants.borrow().len();
        n.send(&[0xab; 60]).unwrap();
        n.send(&[0xcd; 9000]).unwrap(); // 3 slots with scatter-gather
        let ring = f.page_of("device/vif/0/tx-ring-ref");
        assert_eq!(ring.load_u32(0), 4);
        let mut e = [0u8; 12];
        ring.read_bytes(64 + 12, &mut e);
        assert_eq!(
            u16::from_le_bytes([e[6], e[7]]) & netif::NETTXF_MORE_DATA,
            netif::NETTXF_MORE_DATA
        );
        assert_eq!(u16::from_le_bytes([e[10], e[11]]), 9000);
        // backend answers all four
        for i in 0..4u32 {
            ring.read_bytes(64 + i as usize * 12, &mut e);
            let id = [e[8], e[9]];
            ring.write_bytes(64 + i as usize * 12, &[id[0], id[1], 0, 0]);
        }
        ring.store_u32(8, 4);
        n.reap_tx();
        assert_eq!(n.stats().tx_packets, 2);
        assert_eq!(n.stats().tx_bytes, 9060);
        assert_eq!(
            f.grants.borrow().len(),
            grants_before,
            "TX pages stay granted, no grant per packet"
        );
        // a response for a slot not in flight breaks the vif
        ring.write_bytes(64 + 4 * 12, &[0, 0, 0, 0]);
        ring.store_u32(8, 5);
        n.reap_tx();
        assert!(n.broken().is_some());
    }

    #[test]
    fn tx_slots_are_reused_after_responses() {
        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        let ring = f.page_of("device/vif/0/tx-ring-ref");
        for _ in 0..256 {
            n.send(&[1; 100]).unwrap();
        }
        assert_eq!(n.send(&[1; 100]), Err(NetError::Busy), "ring full");
        let mut e = [0u8; 12];
        for i in 0..256usize {
            ring.read_bytes(64 + i * 12, &mut e);
            ring.write_bytes(64 + i * 12, &[e[8], e[9], 0, 0]);
        }
        ring.store_u32(8, 256);
        n.send(&[2; 100]).unwrap();
        assert_eq!(n.stats().tx_packets, 256);
        // the new request names a page holding the new packet
        ring.read_bytes(64, &mut e);
        let gref = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        let mut b = [0u8; 100];
        f.page_by_gref(gref).read_bytes(0, &mut b);
        assert_eq!(b, [2; 100]);
    }

    #[test]
    fn gso_packet_carries_an_extra_info_slot() {
        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        assert!(!n.has_gso_tcpv4(), "not offered by this backend");
        assert_eq!(n.send_gso(&[0; 9000], 1448), Err(NetError::BadFrame));
        let f = Fake::new();
        f.xs.borrow_mut()
            .insert(format!("{BE}/feature-gso-tcpv4"), "1".into());
        let mut n = Netfront::connect(&f, 0).unwrap();
        assert!(n.has_gso_tcpv4());
        let free = n.tx_free_slots();
        n.send_gso(&[5; 9000], 1448).unwrap();
        assert_eq!(
            n.tx_free_slots(),
            free - 4,
            "3 data slots + 1 extra-info slot"
        );
        let ring = f.page_of("device/vif/0/tx-ring-ref");
        assert_eq!(ring.load_u32(0), 4);
        let mut e = [0u8; 12];
        ring.read_bytes(64, &mut e);
        let flags = u16::from_le_bytes([e[6], e[7]]);
        assert_eq!(
            flags,
            netif::NETTXF_EXTRA_INFO
                | netif::NETTXF_CSUM_BLANK
                | netif::NETTXF_DATA_VALIDATED
                | netif::NETTXF_MORE_DATA
        );
        assert_eq!(u16::from_le_bytes([e[10], e[11]]), 9000);
        // netif_extra_info: type GSO (1), flags 0, gso.size, gso.type TCPv4 (1)
        ring.read_bytes(64 + 12, &mut e);
        assert_eq!(&e[..6], &[1, 0, 0xa8, 0x05, 1, 0]);
        // responses: the first data slot, NULL for the extra slot, the other two
        let mut d = [0u8; 12];
        let mut ids = Vec::new();
        for i in [0usize, 2, 3] {
            ring.read_bytes(64 + i * 12, &mut d);
            ids.push([d[8], d[9]]);
        }
        ring.write_bytes(64, &[ids[0][0], ids[0][1], 0, 0]);
        ring.write_bytes(64 + 12, &[0xff, 0xff, 1, 0]); // RSP_NULL, id not meaningful
        ring.write_bytes(64 + 24, &[ids[1][0], ids[1][1], 0, 0]);
        ring.write_bytes(64 + 36, &[ids[2][0], ids[2][1], 0, 0]);
        ring.store_u32(8, 4);
        n.reap_tx();
        assert!(n.broken().is_none(), "{:?}", n.broken());
        assert_eq!(n.stats().tx_packets, 1);
        assert_eq!(n.stats().tx_bytes, 9000);
        assert_eq!(n.tx_free_slots(), free);
    }

    #[test]
    fn csum_blank_send_flags_the_slot_and_plain_send_does_not() {
        let f = Fake::new();
        let mut n = Netfront::connect(&f, 0).unwrap();
        n.send(&[1; 60]).unwrap();
        n.send_csum_blank(&[2; 60]).unwrap();
        let ring = f.page_of("device/vif/0/tx-ring-ref");
        assert_eq!(ring.load_u32(0), 2);
        let mut e = [0u8; 12];
        ring.read_bytes(64, &mut e);
        assert_eq!(u16::from_le_bytes([e[6], e[7]]), 0, "plain: no flags");
        ring.read_bytes(64 + 12, &mut e);
        assert_eq!(
            u16::from_le_bytes([e[6], e[7]]),
            netif::NETTXF_CSUM_BLANK | netif::NETTXF_DATA_VALIDATED
        );
    }

    #[test]
    fn release_ends_the_buffer_grants() {
        let f = Fake::new();
        let before = f.grants.borrow().len();
        let n = Netfront::connect(&f, 0).unwrap();
        assert_eq!(
            f.grants.borrow().len(),
            before + 2 + 512,
            "rings + 256 RX + 256 TX"
        );
        assert_eq!(n.release(), (512, 2));
        assert_eq!(f.grants.borrow().len(), before, "ring grants ended too");
        assert_eq!(f.pages_freed.get(), 514, "ring pages freed too");
    }

    #[test]
    fn a_handshake_that_times_out_gives_everything_back_and_can_be_retried() {
        let f = Fake::offering_queues("2");
        f.backend_stalls.set(true);
        let e = Netfront::connect_with(&f, 0, 2)
            .err()
            .expect("no Connected backend");
        assert!(
            matches!(&e, NetError::Handshake(w) if w.contains("timed out")),
            "{e:?}"
        );
        assert!(f.grants.borrow().is_empty(), "every grant ended");
        assert_eq!(
            f.pages_freed.get(),
            f.pages.borrow().len(),
            "every page freed"
        );
        assert_eq!(f.pages_freed.get(), 2 * 514);
        assert_eq!(f.closed.borrow().len(), 2, "both ports closed");
        assert_eq!(
            f.key("device/vif/0/state").as_deref(),
            Some("1"),
            "back to Initialising, so the vif is connected again later"
        );
        // and it is: the backend now answers
        f.backend_stalls.set(false);
        f.xs.borrow_mut().insert(format!("{BE}/state"), "2".into());
        let n = Netfront::connect_with(&f, 0, 2).unwrap();
        assert_eq!(n.queues(), 2);
    }

    #[test]
    fn a_backend_that_took_the_rings_and_closed_gets_everything_back() {
        let f = Fake::new();
        f.backend_fails.set(true);
        f.backend_follows_close.set(true);
        let e = Netfront::connect(&f, 0).err().expect("backend closed");
        assert!(
            matches!(&e, NetError::Handshake(w) if w.contains("backend closed")),
            "{e:?}"
        );
        assert!(f.grants.borrow().is_empty(), "every grant ended");
        assert_eq!(f.pages_freed.get(), 514, "every page freed");
        assert_eq!(f.closed.borrow().len(), 1, "the port closed");
        assert_eq!(f.key("device/vif/0/state").as_deref(), Some("1"));
    }

    #[test]
    fn a_backend_that_took_the_rings_and_does_not_close_keeps_every_grant() {
        let f = Fake::new();
        f.backend_fails.set(true);
        let e = Netfront::connect(&f, 0).err().expect("backend closed");
        assert!(matches!(&e, NetError::Handshake(_)), "{e:?}");
        assert_eq!(
            f.grants.borrow().len(),
            2 + 2 * FULL_BUFFERS,
            "no grant ended: netback may still copy into the RX buffers"
        );
        assert_eq!(f.pages_freed.get(), 0, "no page freed");
        assert_eq!(f.closed.borrow().len(), 1, "the port closed");
        assert_eq!(
            f.key("device/vif/0/state").as_deref(),
            Some("6"),
            "the frontend told the backend to let go"
        );
    }

    #[test]
    fn a_setup_that_runs_out_of_grants_gives_everything_back() {
        let f = Fake::offering_queues("2");
        // not enough for the first queue even with the fewest buffers (2 + 64 + 64)
        f.grant_limit.set(Some(100));
        let e = Netfront::connect_with(&f, 0, 2)
            .err()
            .expect("grants exhausted");
        assert!(
            matches!(&e, NetError::Handshake(w) if w.contains("grant")),
            "{e:?}"
        );
        assert!(f.grants.borrow().is_empty(), "every grant ended");
        assert_eq!(
            f.pages_freed.get(),
            f.pages.borrow().len(),
            "every page freed"
        );
        assert!(f.closed.borrow().is_empty(), "no port was opened");
    }

    #[test]
    fn a_small_domain_gets_a_queue_with_fewer_buffers() {
        // 300 grants: not a whole queue (514), but 2 rings and 128 + 128 buffers
        let f = Fake::offering_queues("2");
        f.grant_limit.set(Some(300));
        let mut n = Netfront::connect_with(&f, 0, 2).expect("a smaller queue");
        assert_eq!(n.queues(), 1);
        assert_eq!(f.grants.borrow().len(), 2 + 128 + 128);
        assert_eq!(f.key(MQ_NUM), None);
        assert!(f.closed.borrow().is_empty());
        // 128 TX buffers: the 129th packet waits for a response
        let ring = f.page_of("device/vif/0/tx-ring-ref");
        for _ in 0..128 {
            n.send(&[1; 100]).unwrap();
        }
        assert_eq!(
            n.send(&[1; 100]),
            Err(NetError::Busy),
            "128 buffers in flight"
        );
        let mut e = [0u8; 12];
        for i in 0..128usize {
            ring.read_bytes(64 + i * 12, &mut e);
            ring.write_bytes(64 + i * 12, &[e[8], e[9], 0, 0]);
        }
        ring.store_u32(8, 128);
        n.send(&[2; 100]).unwrap();
        // 128 RX buffers posted, and reposted as frames arrive
        let rx = f.page_of("device/vif/0/rx-ring-ref");
        assert_eq!(rx.load_u32(0), 128, "128 RX buffers posted");
        let mut prod = 0;
        for i in 0..300u32 {
            let frame = [i as u8; 60];
            deliver(&f, &mut prod, None, 0, &frame, None);
            assert_eq!(n.recv().unwrap(), frame.to_vec());
        }
        assert!(n.broken().is_none());
    }

    #[test]
    fn grants_for_one_queue_only_make_a_one_queue_vif() {
        let f = Fake::offering_queues("2");
        // enough for the first queue (514) and part of the second
        f.grant_limit.set(Some(514 + 100));
        let mut n = Netfront::connect_with(&f, 0, 2).expect("one queue");
        assert_eq!(n.queues(), 1);
        // the second queue's share was given back, and the vif is set up as a
        // single-queue one (keys at the top)
        assert_eq!(f.grants.borrow().len(), 514);
        // (100 granted, and the one whose grant failed; its port was never opened)
        assert_eq!(f.pages_freed.get(), 101);
        assert!(f.closed.borrow().is_empty());
        assert_eq!(f.key(MQ_NUM), None);
        assert!(f.key("device/vif/0/tx-ring-ref").is_some());
        assert_eq!(f.key("device/vif/0/queue-0/tx-ring-ref"), None);
        assert!(n.send(&[0u8; 60]).is_ok(), "and it sends");
    }

    #[test]
    fn a_retry_with_fewer_queues_leaves_no_stale_multi_queue_keys() {
        let f = Fake::offering_queues("2");
        // what an earlier two-queue attempt published before it failed
        for (k, v) in [
            (MQ_NUM, "2"),
            ("device/vif/0/queue-0/tx-ring-ref", "8"),
            ("device/vif/0/queue-0/event-channel", "9"),
            ("device/vif/0/queue-1/tx-ring-ref", "10"),
            ("device/vif/0/queue-1/event-channel", "11"),
        ] {
            f.xs.borrow_mut().insert(k.into(), v.into());
        }
        f.grant_limit.set(Some(514 + 100));
        let n = Netfront::connect_with(&f, 0, 2).expect("one queue");
        assert_eq!(n.queues(), 1);
        assert_eq!(f.key(MQ_NUM), None);
        assert!(f.key("device/vif/0/tx-ring-ref").is_some());
        let stale: Vec<String> =
            f.xs.borrow()
                .keys()
                .filter(|k| k.starts_with("device/vif/0/queue-"))
                .cloned()
                .collect();
        assert!(stale.is_empty(), "stale queue keys: {stale:?}");
    }

    #[test]
    fn a_multi_queue_retry_removes_the_single_queue_keys() {
        let f = Fake::offering_queues("2");
        for k in ["tx-ring-ref", "rx-ring-ref", "event-channel"] {
            f.xs.borrow_mut()
                .insert(format!("device/vif/0/{k}"), "7".into());
        }
        let n = Netfront::connect_with(&f, 0, 2).expect("two queues");
        assert_eq!(n.queues(), 2);
        assert_eq!(f.key(MQ_NUM).as_deref(), Some("2"));
        assert_eq!(f.key("device/vif/0/tx-ring-ref"), None);
        assert_eq!(f.key("device/vif/0/event-channel"), None);
        assert!(f.key("device/vif/0/queue-1/event-channel").is_some());
    }

    #[test]
    fn a_backend_that_did_not_close_keeps_every_grant() {
        let f = Fake::new();
        let n = Netfront::connect(&f, 0).unwrap();
        let grants = f.grants.borrow().len();
        assert_eq!(n.release_after(false), (0, 0));
        assert_eq!(f.grants.borrow().len(), grants, "no grant ended");
        assert_eq!(f.pages_freed.get(), 0, "no page freed");
        assert_eq!(f.closed.borrow().len(), 1, "the port closed");
    }

    #[test]
    fn release_keeps_a_page_the_backend_still_maps() {
        let f = Fake::new();
        let n = Netfront::connect(&f, 0).unwrap();
        let ring = f.page_of("device/vif/0/rx-ring-ref");
        let mut req = [0u8; 8];
        ring.read_bytes(64, &mut req);
        let gref = u32::from_le_bytes([req[4], req[5], req[6], req[7]]);
        f.mapped.borrow_mut().insert(gref);
        assert_eq!(n.release(), (511, 2), "the mapped page is not freed");
        assert_eq!(f.pages_freed.get(), 513);
        assert!(f.grants.borrow().contains_key(&gref), "its grant stays");
    }

    /// An Ethernet frame holding an IPv4 packet (20-byte header, `frag` = flags and
    /// fragment offset, TTL `ttl`) whose payload is `l4`.
    fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, frag: u16, ttl: u8, l4: &[u8]) -> Vec<u8> {
        let mut f = alloc::vec![0u8; 14];
        f[0..6].copy_from_slice(&[0x00, 0x16, 0x3e, 9, 9, 9]);
        f[6..12].copy_from_slice(&[0x00, 0x16, 0x3e, 1, 2, 3]);
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f.extend_from_slice(&[0x45, 0]);
        f.extend_from_slice(&(20 + l4.len() as u16).to_be_bytes());
        f.extend_from_slice(&[0x12, 0x34]);
        f.extend_from_slice(&frag.to_be_bytes());
        f.extend_from_slice(&[ttl, proto, 0, 0]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        f.extend_from_slice(l4);
        f
    }

    /// A TCP segment's bytes: ports, then the rest of a 20-byte header (flags
    /// `flags`, sequence `seq`), then `payload` bytes.
    fn tcp(sport: u16, dport: u16, seq: u32, flags: u8, payload: usize) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend_from_slice(&sport.to_be_bytes());
        t.extend_from_slice(&dport.to_be_bytes());
        t.extend_from_slice(&seq.to_be_bytes());
        t.extend_from_slice(&[0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
        t.resize(20 + payload, seq as u8);
        t
    }

    /// A TCP/IPv4 frame from 10.0.0.2:`sport` to 10.0.0.1:`dport`.
    fn tcp4(sport: u16, dport: u16, seq: u32, payload: usize) -> Vec<u8> {
        ipv4(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            IPPROTO_TCP,
            0x4000, // don't fragment
            64,
            &tcp(sport, dport, seq, 0x18, payload),
        )
    }

    /// An Ethernet frame holding an IPv6 packet (next header `next`, payload `l4`).
    fn ipv6(src: [u8; 16], dst: [u8; 16], next: u8, hops: u8, l4: &[u8]) -> Vec<u8> {
        let mut f = alloc::vec![0u8; 14];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        f.extend_from_slice(&[0x60, 0, 0, 0]);
        f.extend_from_slice(&(l4.len() as u16).to_be_bytes());
        f.extend_from_slice(&[next, hops]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&dst);
        f.extend_from_slice(l4);
        f
    }

    #[test]
    fn one_flow_hashes_alike_whatever_else_changes() {
        let h = flow_hash(&tcp4(40000, 80, 1, 0)).unwrap();
        // payload, length, sequence number, flags, TTL: none of them count
        assert_eq!(flow_hash(&tcp4(40000, 80, 99_999, 1400)), Some(h));
        let other_flags = ipv4(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            IPPROTO_TCP,
            0,
            3,
            &tcp(40000, 80, 7, 0x11, 5),
        );
        assert_eq!(flow_hash(&other_flags), Some(h));
        // a 64 KiB GSO packet of the flow goes the same way as its small segments
        assert_eq!(flow_hash(&tcp4(40000, 80, 5, 65_000)), Some(h));
        // every field of the flow counts
        assert_ne!(flow_hash(&tcp4(40001, 80, 1, 0)), Some(h), "source port");
        assert_ne!(
            flow_hash(&tcp4(40000, 81, 1, 0)),
            Some(h),
            "destination port"
        );
        let other_host = ipv4(
            [10, 0, 0, 3],
            [10, 0, 0, 1],
            IPPROTO_TCP,
            0x4000,
            64,
            &tcp(40000, 80, 1, 0x18, 0),
        );
        assert_ne!(flow_hash(&other_host), Some(h), "source address");
        let udp = ipv4(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            IPPROTO_UDP,
            0,
            64,
            &tcp(40000, 80, 1, 0, 0)[..8],
        );
        assert_ne!(flow_hash(&udp), Some(h), "protocol");
        let udp2 = ipv4(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            IPPROTO_UDP,
            0,
            64,
            &tcp(40000, 53, 1, 0, 0)[..8],
        );
        assert_ne!(flow_hash(&udp2), flow_hash(&udp), "UDP ports count");
    }

    #[test]
    fn pieces_of_a_datagram_and_portless_protocols_hash_by_address() {
        let dgram = tcp(5353, 5353, 0, 0, 3000);
        let first = ipv4(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            IPPROTO_UDP,
            0x2000,
            64,
            &dgram[..1480],
        );
        let last = ipv4(
            [10, 0, 0, 2],
            [10, 0, 0, 1],
            IPPROTO_UDP,
            185,
            64,
            &dgram[1480..],
        );
        assert_eq!(flow_hash(&first), flow_hash(&last));
        assert!(flow_hash(&first).is_some());
        // ICMP: the bytes after the IP header do not count
        let ping = |id: u8| ipv4([10, 0, 0, 2], [10, 0, 0, 1], 1, 0, 64, &[8, 0, 0, 0, id, 1]);
        assert_eq!(flow_hash(&ping(1)), flow_hash(&ping(2)));
    }

    #[test]
    fn ipv6_flows_hash_by_addresses_and_ports() {
        let a = [0xfd, 0, 0, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        let b = [0xfd, 0, 0, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let f = |sport, hops, payload| {
            ipv6(a, b, IPPROTO_TCP, hops, &tcp(sport, 443, 1, 0x10, payload))
        };
        let h = flow_hash(&f(50000, 64, 0)).unwrap();
        assert_eq!(flow_hash(&f(50000, 1, 1000)), Some(h));
        assert_ne!(flow_hash(&f(50001, 64, 0)), Some(h));
        assert_ne!(
            flow_hash(&ipv6(b, a, IPPROTO_TCP, 64, &tcp(50000, 443, 1, 0, 0))),
            Some(h)
        );
        // truncated: no IPv6 header, no hash
        assert_eq!(flow_hash(&f(50000, 64, 0)[..50]), None);
    }

    #[test]
    fn frames_without_a_flow_go_to_queue_0() {
        let mut arp = alloc::vec![0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(flow_hash(&arp), None);
        assert_eq!(tx_queue(&arp, 4), 0);
        for short in [&[][..], &[0u8; 13][..], &tcp4(1, 2, 3, 0)[..30]] {
            assert_eq!(flow_hash(short), None);
            assert_eq!(tx_queue(short, 4), 0);
        }
        // an IPv4 header with a bad version or length is not parsed
        let mut bad = tcp4(1, 2, 3, 0);
        bad[14] = 0x44;
        assert_eq!(flow_hash(&bad), None);
        bad[14] = 0x65;
        assert_eq!(flow_hash(&bad), None);
        // with one queue everything goes to queue 0
        assert_eq!(tx_queue(&tcp4(40000, 80, 1, 0), 1), 0);
    }

    #[test]
    fn flows_spread_over_the_queues() {
        for queues in [2usize, 3, 4] {
            let mut used = alloc::vec![0u32; queues];
            for sport in 40000..40064 {
                let q = tx_queue(&tcp4(sport, 80, 1, 0), queues);
                assert!(q < queues);
                used[q] += 1;
            }
            // 64 flows: every queue gets a fair share (at least half the average)
            let fair = 64 / queues as u32 / 2;
            assert!(used.iter().all(|&n| n >= fair), "{queues} queues: {used:?}");
        }
    }

    const QDIR: [&str; 2] = ["device/vif/0/queue-0", "device/vif/0/queue-1"];
    const MQ_NUM: &str = "device/vif/0/multi-queue-num-queues";
    const QUEUE_KEYS: [&str; 3] = ["tx-ring-ref", "rx-ring-ref", "event-channel"];

    /// Backend side of a TX ring: answers the requests `from..to` with OKAY.
    fn answer_tx(f: &Fake, dir: &str, from: u32, to: u32) {
        let ring = f.page_of(&format!("{dir}/tx-ring-ref"));
        let mut e = [0u8; 12];
        for i in from..to {
            let slot = 64 + (i % 256) as usize * 12;
            ring.read_bytes(slot, &mut e);
            ring.write_bytes(slot, &[e[8], e[9], 0, 0]);
        }
        ring.store_u32(8, to);
    }

    /// The frame bytes at `at` in the page the `i`-th request of a TX ring names.
    fn tx_bytes(f: &Fake, dir: &str, i: u32, at: usize, buf: &mut [u8]) {
        let ring = f.page_of(&format!("{dir}/tx-ring-ref"));
        let mut e = [0u8; 12];
        ring.read_bytes(64 + (i % 256) as usize * 12, &mut e);
        let gref = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        f.page_by_gref(gref).read_bytes(at, buf);
    }

    fn event_channel(f: &Fake, dir: &str) -> u32 {
        f.key(&format!("{dir}/event-channel"))
            .unwrap()
            .parse()
            .unwrap()
    }

    /// A source port whose TCP flow to port 80 goes to the other of two queues
    /// than source port 40000's.
    fn flows_on_both_queues() -> (u16, usize, u16, usize) {
        let qa = tx_queue(&tcp4(40000, 80, 0, 0), 2);
        let b = (40001..40100)
            .find(|&p| tx_queue(&tcp4(p, 80, 0, 0), 2) != qa)
            .expect("some flow goes to the other queue");
        (40000, qa, b, 1 - qa)
    }

    #[test]
    fn multi_queue_handshake_publishes_each_queue_in_its_directory() {
        let f = Fake::offering_queues("4");
        let n = Netfront::connect_with(&f, 0, 2).unwrap();
        assert_eq!(n.queues(), 2);
        assert_eq!(f.key(MQ_NUM).as_deref(), Some("2"));
        for k in QUEUE_KEYS {
            assert_eq!(f.key(&format!("device/vif/0/{k}")), None, "top-level {k}");
            assert_eq!(f.key(&format!("device/vif/0/queue-2/{k}")), None);
        }
        let mut refs = Vec::new();
        let mut ports = Vec::new();
        for dir in QDIR {
            refs.push(f.key(&format!("{dir}/tx-ring-ref")).unwrap());
            refs.push(f.key(&format!("{dir}/rx-ring-ref")).unwrap());
            ports.push(event_channel(&f, dir));
            let rx = f.page_of(&format!("{dir}/rx-ring-ref"));
            assert_eq!(rx.load_u32(0), 256, "{dir}: every RX buffer posted");
        }
        refs.sort();
        refs.dedup();
        assert_eq!(refs.len(), 4, "four rings");
        assert_ne!(ports[0], ports[1], "an event channel per queue");
        // the vif's own keys stay at the top
        assert_eq!(f.key("device/vif/0/request-rx-copy").as_deref(), Some("1"));
        assert_eq!(
            f.key("device/vif/0/feature-rx-notify").as_deref(),
            Some("1")
        );
        assert_eq!(f.key("device/vif/0/feature-sg").as_deref(), Some("1"));
        assert_eq!(f.key("device/vif/0/state").as_deref(), Some("4"));
        assert_eq!(f.key("device/vif/0/queue-0/state"), None);
        let notified = f.notified.borrow();
        assert!(ports.iter().all(|p| notified.contains(p)), "{notified:?}");
        assert_eq!(f.grants.borrow().len(), 2 * (2 + 512));
    }

    #[test]
    fn connect_takes_what_the_backend_offers_up_to_two_queues() {
        for (offer, want) in [("1", 1), ("2", 2), ("3", 2), ("16", 2)] {
            let f = Fake::offering_queues(offer);
            assert_eq!(Netfront::connect(&f, 0).unwrap().queues(), want, "{offer}");
            let num = (want > 1).then(|| format!("{want}"));
            assert_eq!(f.key(MQ_NUM), num, "{offer}");
        }
        // the caller's cap wins over a larger offer
        let f = Fake::offering_queues("8");
        assert_eq!(Netfront::connect_with(&f, 0, 3).unwrap().queues(), 3);
        assert_eq!(f.key(MQ_NUM).as_deref(), Some("3"));
    }

    #[test]
    fn one_queue_keeps_the_keys_at_the_top() {
        // a backend without multi-queue, and one offering it to a frontend asking
        // for a single queue (or none at all)
        for (f, cap) in [
            (Fake::new(), 4),
            (Fake::offering_queues("4"), 1),
            (Fake::offering_queues("4"), 0),
        ] {
            let n = Netfront::connect_with(&f, 0, cap).unwrap();
            assert_eq!(n.queues(), 1);
            assert_eq!(f.key(MQ_NUM), None, "cap {cap}");
            for k in QUEUE_KEYS {
                assert!(f.key(&format!("device/vif/0/{k}")).is_some(), "{k}");
                assert_eq!(f.key(&format!("device/vif/0/queue-0/{k}")), None);
            }
        }
    }

    #[test]
    fn a_malformed_queue_offer_means_one_queue() {
        for offer in ["x", "0", "", "-2", "2.5", "99999999999999999999999"] {
            let f = Fake::offering_queues(offer);
            let n = Netfront::connect_with(&f, 0, 4).unwrap();
            assert_eq!(n.queues(), 1, "{offer:?}");
            assert_eq!(f.key(MQ_NUM), None, "{offer:?}");
            assert!(f.key("device/vif/0/tx-ring-ref").is_some());
        }
        assert_eq!(queue_count(4, Some(" 3\n")), 3);
        assert_eq!(queue_count(4, None), 1);
        assert_eq!(queue_count(0, Some("4")), 1);
        assert_eq!(queue_count(usize::MAX, Some("2")), 2);
    }

    #[test]
    fn frames_are_received_on_every_queue() {
        let f = Fake::offering_queues("2");
        let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
        let mut prod = [0u32; 2];
        deliver_on(&f, QDIR[1], &mut prod[1], None, 0, &[0x11; 60], None);
        assert_eq!(n.recv(), Some(alloc::vec![0x11; 60]));
        deliver_on(&f, QDIR[0], &mut prod[0], None, 0, &[0x22; 60], None);
        deliver_on(&f, QDIR[1], &mut prod[1], None, 0, &[0x33; 70], None);
        let mut got = Vec::new();
        while let Some(fr) = n.recv() {
            got.push(fr);
        }
        got.sort();
        assert_eq!(got, [alloc::vec![0x22; 60], alloc::vec![0x33; 70]]);
        let qs = n.queue_stats();
        assert_eq!(qs[0].rx_packets, 1);
        assert_eq!(qs[1].rx_packets, 2);
        assert_eq!(n.stats().rx_packets, 3);
        assert_eq!(n.stats().rx_bytes, 190);
        // the buffers go back to the ring they came from, and a backend waiting
        // for requests on queue 1 is woken on queue 1's event channel
        let rx1 = f.page_of(&format!("{}/rx-ring-ref", QDIR[1]));
        assert_eq!(rx1.load_u32(0), 256 + 2, "two buffers reposted on queue 1");
        rx1.store_u32(4, rx1.load_u32(0) + 1); // req_event
        f.notified.borrow_mut().clear();
        deliver_on(&f, QDIR[1], &mut prod[1], None, 0, &[0x44; 60], None);
        assert_eq!(n.recv(), Some(alloc::vec![0x44; 60]));
        assert_eq!(*f.notified.borrow(), [event_channel(&f, QDIR[1])]);
        assert!(n.broken().is_none());
    }

    #[test]
    fn a_busy_queue_does_not_starve_the_other() {
        let f = Fake::offering_queues("2");
        let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
        let mut prod = [0u32; 2];
        for i in 0..200u8 {
            for q in 0..2u8 {
                let mut fr = [0u8; 60];
                fr[0] = q;
                fr[1] = i;
                deliver_on(
                    &f,
                    QDIR[usize::from(q)],
                    &mut prod[usize::from(q)],
                    None,
                    0,
                    &fr,
                    None,
                );
            }
        }
        let mut order = Vec::new();
        while let Some(fr) = n.recv() {
            order.push((fr[0], fr[1]));
        }
        assert_eq!(order.len(), 400);
        // in ring order within each queue
        for q in 0..2 {
            let seq: Vec<u8> = order.iter().filter(|o| o.0 == q).map(|o| o.1).collect();
            assert_eq!(seq, (0..200).collect::<Vec<u8>>());
        }
        // and taken in turns of at most 64 frames
        let longest = order
            .chunk_by(|a, b| a.0 == b.0)
            .map(<[_]>::len)
            .max()
            .unwrap();
        assert!(longest <= 64, "a run of {longest} frames from one queue");
    }

    #[test]
    fn each_flow_keeps_to_one_queue_and_flows_spread() {
        let f = Fake::offering_queues("2");
        let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
        let (a, qa, b, qb) = flows_on_both_queues();
        for i in 0..3 {
            n.send(&tcp4(a, 80, i, 10 * i as usize)).unwrap();
        }
        for i in 0..2 {
            n.send(&tcp4(b, 80, i, 100)).unwrap();
        }
        let mut arp = alloc::vec![0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        n.send(&arp).unwrap();
        let sent = |q: usize| f.page_of(&format!("{}/tx-ring-ref", QDIR[q])).load_u32(0);
        let arp_on = |q: usize| u32::from(q == 0);
        assert_eq!(sent(qa), 3 + arp_on(qa), "flow A");
        assert_eq!(sent(qb), 2 + arp_on(qb), "flow B");
        // the requests carry their flow's frames (source port at byte 34)
        let mut port = [0u8; 2];
        for i in 0..3 {
            tx_bytes(&f, QDIR[qa], i, 34, &mut port);
            assert_eq!(u16::from_be_bytes(port), a);
        }
        for i in 0..2 {
            tx_bytes(&f, QDIR[qb], i, 34, &mut port);
            assert_eq!(u16::from_be_bytes(port), b);
        }
        let mut ethertype = [0u8; 2];
        tx_bytes(&f, QDIR[0], sent(0) - 1, 12, &mut ethertype);
        assert_eq!(ethertype, [0x08, 0x06], "ARP on queue 0");
        // answered on both rings: counted per queue
        for (q, dir) in QDIR.iter().enumerate() {
            answer_tx(&f, dir, 0, sent(q));
        }
        n.reap_tx();
        assert!(n.broken().is_none(), "{:?}", n.broken());
        let qs = n.queue_stats();
        assert_eq!(qs[qa].tx_packets, u64::from(3 + arp_on(qa)));
        assert_eq!(qs[qb].tx_packets, u64::from(2 + arp_on(qb)));
        assert_eq!(n.stats().tx_packets, 6);
    }

    #[test]
    fn the_fullest_queue_decides_can_send() {
        let f = Fake::offering_queues("2");
        let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
        let (a, qa, b, qb) = flows_on_both_queues();
        assert_eq!(n.tx_free_slots(), 256);
        for i in 0..256 {
            n.send(&tcp4(a, 80, i, 0)).unwrap();
        }
        assert_eq!(n.send(&tcp4(a, 80, 256, 0)), Err(NetError::Busy));
        assert!(!n.can_send(), "queue {qa} is full");
        assert_eq!(n.tx_free_slots(), 0);
        // a frame of another flow still goes out on its own queue
        n.send(&tcp4(b, 80, 0, 0)).unwrap();
        assert_eq!(
            f.page_of(&format!("{}/tx-ring-ref", QDIR[qb])).load_u32(0),
            1
        );
        answer_tx(&f, QDIR[qa], 0, 256);
        n.reap_tx();
        assert!(n.can_send());
        assert_eq!(n.tx_free_slots(), 255, "queue {qb} has one in flight");
    }

    #[test]
    fn a_bad_response_on_queue_1_breaks_the_whole_vif() {
        // RX: a response naming a buffer never posted
        let f = Fake::offering_queues("2");
        let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
        let mut prod = [0u32; 2];
        deliver_on(&f, QDIR[1], &mut prod[1], Some(999), 0, &[1; 60], None);
        assert!(n.recv().is_none());
        assert!(
            n.broken().unwrap().contains("rx response id 999"),
            "{:?}",
            n.broken()
        );
        deliver_on(&f, QDIR[0], &mut prod[0], None, 0, &[2; 60], None);
        assert!(n.recv().is_none(), "queue 0 is not read any more");
        let (a, _, b, _) = flows_on_both_queues();
        for fr in [tcp4(a, 80, 0, 0), tcp4(b, 80, 0, 0)] {
            assert!(matches!(n.send(&fr), Err(NetError::Broken(_))));
        }
        assert!(!n.can_send());
        assert_eq!(n.tx_free_slots(), 0);
        for q in QDIR {
            let tx = f.page_of(&format!("{q}/tx-ring-ref"));
            assert_eq!(tx.load_u32(0), 0, "{q}: nothing sent");
        }

        // TX: a response on queue 1 for a slot not in flight
        let f = Fake::offering_queues("2");
        let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
        let (a, qa, b, _) = flows_on_both_queues();
        let on_1 = if qa == 1 { a } else { b };
        n.send(&tcp4(on_1, 80, 0, 0)).unwrap();
        let tx1 = f.page_of(&format!("{}/tx-ring-ref", QDIR[1]));
        tx1.write_bytes(64, &[200, 0, 0, 0]);
        tx1.store_u32(8, 1);
        n.reap_tx();
        assert!(
            n.broken().unwrap().contains("not in flight"),
            "{:?}",
            n.broken()
        );
        let on_0 = if qa == 0 { a } else { b };
        assert!(matches!(
            n.send(&tcp4(on_0, 80, 1, 0)),
            Err(NetError::Broken(_))
        ));
        let tx0 = f.page_of(&format!("{}/tx-ring-ref", QDIR[0]));
        assert_eq!(tx0.load_u32(0), 0);
    }

    #[test]
    fn release_frees_every_queue() {
        let f = Fake::offering_queues("4");
        let n = Netfront::connect_with(&f, 0, 3).unwrap();
        assert_eq!(f.grants.borrow().len(), 3 * (2 + 512));
        let mut ports: Vec<u32> = (0..3)
            .map(|k| event_channel(&f, &format!("device/vif/0/queue-{k}")))
            .collect();
        assert_eq!(n.release(), (3 * 512, 3 * 2));
        assert_eq!(f.pages_freed.get(), 3 * 514);
        assert!(f.grants.borrow().is_empty(), "the ring grants ended too");
        let mut closed = f.closed.borrow().clone();
        closed.sort();
        ports.sort();
        assert_eq!(closed, ports, "every queue's event channel closed");
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(
            parse_mac("00:16:3e:aa:bb:cc"),
            Some([0, 0x16, 0x3e, 0xaa, 0xbb, 0xcc])
        );
        assert_eq!(parse_mac("00:16:3e:aa:bb"), None);
        assert_eq!(parse_mac("00:16:3e:aa:bb:cc:dd"), None);
        assert_eq!(parse_mac("zz:16:3e:aa:bb:cc"), None);
    }
}
