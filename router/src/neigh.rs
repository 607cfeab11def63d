//! The neighbour (ARP) table: next-hop MAC resolution with bounded wait queues.
//!
//! A cut-down Linux `net/core/neighbour.c` + `net/ipv4/arp.c` (RFC 826, RFC 1122
//! §2.3.2): an entry is INCOMPLETE while ARP requests are retried
//! ([`NeighConfig::retrans_ms`] apart, [`NeighConfig::max_probes`] tries, Linux's
//! `retrans_time_ms` and `mcast_solicit`), packets waiting for it are copied into
//! preallocated slots (at most [`NeighConfig::queue_per_entry`] each, Linux's
//! `unres_qlen_bytes` idea with a packet count, and a global cap = number of slots).
//! If nobody answers the entry goes FAILED and its packets are handed back to the
//! router (for ICMP host-unreachable) and counted as [`DropReason::NoNeighbour`].
//! The slots are a [`WaitSlots`], which IPv6 neighbour discovery ([`crate::ndp`])
//! uses too.
//! REACHABLE turns STALE after [`NeighConfig::reachable_ms`]; using a STALE entry
//! sends the packet and re-probes it (unicast first, like Linux's PROBE state, but
//! without the 5 s DELAY since no upper layer confirms reachability here). Every ARP
//! frame the interface sees is learnt from: replies make an entry REACHABLE,
//! requests (and gratuitous ARP) refresh an existing one, a request for one of our
//! addresses creates a STALE entry for its sender (Linux's `neigh_event_ns`) and a
//! reply to one of our addresses a REACHABLE one (Linux would ignore an unsolicited
//! reply with `arp_accept=0`; smoltcp, which answers the router's own traffic on the
//! same link, learns from it too, so both caches agree).
//! The table has a fixed number of entries (1,024, Linux's `gc_thresh3`), found
//! through an index; when full, the oldest FAILED entry is evicted, else the oldest
//! that is neither INCOMPLETE nor confirmed in the last 5 s (Linux's
//! `gc_staletime` idea: a full table fails new resolutions, never working ones, so a
//! sweep of 64 addresses no longer evicts the gateway).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;
use core::net::Ipv4Addr;

use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
};

use crate::iface::{Interface, Interfaces, MacDisplay};
use crate::link::ETH_LEN;
use crate::link::{Output, TxMeta};
use crate::stats::Stats;
use crate::{DropReason, IfId, Millis};

/// An entry confirmed this recently is never evicted for a new one.
const KEEP_CONFIRMED_MS: Millis = 5_000;

/// Length of an Ethernet/IPv4 ARP frame.
const ARP_FRAME_LEN: usize = ETH_LEN + 28;

/// Sizes and timers of the neighbour table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeighConfig {
    /// Entries in the table.
    pub capacity: usize,
    /// Packets that may wait for one entry (Linux's `unres_qlen`, 3 here).
    pub queue_per_entry: usize,
    /// Packets that may wait in all (preallocated slots).
    pub queue_slots: usize,
    /// Bytes of one slot: the largest frame that can wait.
    pub slot_len: usize,
    /// Time between ARP requests (Linux `retrans_time_ms`, 1000).
    pub retrans_ms: Millis,
    /// ARP requests before giving up (Linux `mcast_solicit`/`ucast_solicit`, 3).
    pub max_probes: u8,
    /// How long a confirmed entry stays REACHABLE (Linux `base_reachable_time_ms`).
    pub reachable_ms: Millis,
}

impl Default for NeighConfig {
    fn default() -> Self {
        NeighConfig {
            capacity: 1024,
            queue_per_entry: 3,
            queue_slots: 32,
            slot_len: 1514,
            retrans_ms: 1000,
            max_probes: 3,
            reachable_ms: 30_000,
        }
    }
}

/// The state of a neighbour entry (Linux's `NUD_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NeighState {
    /// Being resolved; packets wait.
    Incomplete,
    /// Confirmed recently.
    Reachable,
    /// Known but not confirmed lately; used as is, re-probed on use.
    Stale,
    /// Known, being re-confirmed by ARP requests.
    Probe,
    /// Did not answer.
    Failed,
}

impl NeighState {
    fn name(self) -> &'static str {
        match self {
            NeighState::Incomplete => "INCOMPLETE",
            NeighState::Reachable => "REACHABLE",
            NeighState::Stale => "STALE",
            NeighState::Probe => "PROBE",
            NeighState::Failed => "FAILED",
        }
    }
}

#[derive(Debug)]
struct Entry {
    /// `None`: the entry is free.
    state: Option<NeighState>,
    ip: Ipv4Addr,
    ifc: IfId,
    mac: EthernetAddress,
    /// Last confirmation (or creation).
    updated: Millis,
    probes: u8,
    next_probe: Millis,
    /// Slot indices, oldest first; capacity reserved at construction.
    queue: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    Queued,
    /// Its neighbour failed: waiting for the router to send ICMP and free it.
    Failed,
}

/// The most of a packet's start kept as it arrived (IP header with options + 8).
const ORIGIN_LEN: usize = 68;

#[derive(Debug)]
struct Slot {
    state: SlotState,
    buf: Vec<u8>,
    len: usize,
    tx: TxMeta,
    input: IfId,
    /// The packet's IP header and 8 bytes as it arrived, before any NAT: what an
    /// ICMP error about it quotes ([`NeighTable::note_origin`]); 0 bytes if not set.
    origin: [u8; ORIGIN_LEN],
    origin_len: usize,
}

/// Preallocated slots where packets wait for their neighbour, shared by the ARP table
/// and IPv6 neighbour discovery ([`crate::ndp`]): each entry keeps the indices of
/// its slots, oldest first.
#[derive(Debug)]
pub(crate) struct WaitSlots {
    /// Slots queued since [`WaitSlots::begin_packet`] (preallocated).
    fresh: Vec<usize>,
    slots: Vec<Slot>,
}

impl WaitSlots {
    /// `count` slots of `len` bytes, allocated now.
    pub(crate) fn new(count: usize, len: usize) -> Self {
        let slots = (0..count)
            .map(|_| Slot {
                state: SlotState::Free,
                buf: alloc::vec![0; len],
                len: 0,
                tx: TxMeta::default(),
                input: IfId(0),
                origin: [0; ORIGIN_LEN],
                origin_len: 0,
            })
            .collect();
        WaitSlots {
            fresh: Vec::with_capacity(count),
            slots,
        }
    }

    /// Copies `frame` (its source MAC set to `src_mac`) into a free slot added to
    /// `queue`, unless `queue` holds `per_entry` already or no slot is free.
    pub(crate) fn enqueue(
        &mut self,
        queue: &mut Vec<usize>,
        per_entry: usize,
        src_mac: &[u8],
        input: IfId,
        frame: &[u8],
        tx: TxMeta,
    ) -> Result<(), DropReason> {
        // Linux drops the oldest when unres_qlen is exceeded; dropping the newest keeps
        // the slots' order simple and is what a full hardware queue does too
        if queue.len() >= per_entry {
            return Err(DropReason::NoNeighbour);
        }
        let (si, slot) = self
            .slots
            .iter_mut()
            .enumerate()
            .find(|(_, s)| s.state == SlotState::Free)
            .ok_or(DropReason::NoNeighbour)?;
        let dst = slot
            .buf
            .get_mut(..frame.len())
            .ok_or(DropReason::NoNeighbour)?;
        dst.copy_from_slice(frame);
        if let (Some(src), Some(mac)) = (dst.get_mut(6..12), src_mac.get(..6)) {
            src.copy_from_slice(mac);
        }
        slot.len = frame.len();
        slot.tx = tx;
        slot.input = input;
        slot.state = SlotState::Queued;
        slot.origin_len = 0;
        if self.fresh.len() < self.fresh.capacity() {
            self.fresh.push(si);
        }
        queue.push(si);
        Ok(())
    }

    /// Frees the slots of `queue` oldest first, handing each frame, its [`TxMeta`] and
    /// input interface to `send` (the Vec keeps its capacity).
    pub(crate) fn release(
        &mut self,
        queue: &mut Vec<usize>,
        mut send: impl FnMut(&mut [u8], TxMeta, IfId),
    ) {
        for si in queue.drain(..) {
            let Some(slot) = self.slots.get_mut(si) else {
                continue;
            };
            slot.state = SlotState::Free;
            let (tx, input) = (slot.tx, slot.input);
            if let Some(f) = slot.buf.get_mut(..slot.len) {
                send(f, tx, input);
            }
        }
    }

    /// The neighbour of `queue` failed: its packets are counted as
    /// [`DropReason::NoNeighbour`] and wait for [`WaitSlots::take_failed`].
    pub(crate) fn fail(&mut self, queue: &mut Vec<usize>, stats: &mut Stats) {
        for si in queue.drain(..) {
            if let Some(slot) = self.slots.get_mut(si) {
                slot.state = SlotState::Failed;
                stats.drop(Some(slot.input), DropReason::NoNeighbour);
            }
        }
    }

    /// The next packet whose neighbour failed: its slot, the interface it came in by,
    /// the frame and its start as it arrived. Free it with [`WaitSlots::free_failed`].
    pub(crate) fn take_failed(&self) -> Option<(usize, IfId, &[u8], &[u8])> {
        self.slots
            .iter()
            .enumerate()
            .find(|(_, s)| s.state == SlotState::Failed)
            .and_then(|(i, s)| {
                Some((
                    i,
                    s.input,
                    s.buf.get(..s.len)?,
                    s.origin.get(..s.origin_len)?,
                ))
            })
    }

    /// See [`NeighTable::begin_packet`].
    #[inline]
    pub(crate) fn begin_packet(&mut self) {
        self.fresh.clear();
    }

    /// See [`NeighTable::note_origin`].
    #[inline]
    pub(crate) fn note_origin(&mut self, head: &[u8]) {
        let n = head.len().min(ORIGIN_LEN);
        for &si in &self.fresh {
            if let (Some(s), Some(h)) = (self.slots.get_mut(si), head.get(..n)) {
                if s.state == SlotState::Queued {
                    s.origin[..n].copy_from_slice(h);
                    s.origin_len = n;
                }
            }
        }
        self.fresh.clear();
    }

    /// Frees a slot returned by [`WaitSlots::take_failed`].
    pub(crate) fn free_failed(&mut self, slot: usize) {
        if let Some(s) = self.slots.get_mut(slot) {
            if s.state == SlotState::Failed {
                s.state = SlotState::Free;
            }
        }
    }

    /// Packets waiting.
    pub(crate) fn queued(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.state == SlotState::Queued)
            .count()
    }
}

/// What happened to a packet given to [`NeighTable::output`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// Sent with the neighbour's MAC.
    Sent,
    /// Copied into a wait queue until ARP answers.
    Queued,
}

/// The neighbour table.
#[derive(Debug)]
pub struct NeighTable {
    config: NeighConfig,
    entries: Vec<Entry>,
    /// (interface, address) of each entry in use, to its index in `entries`.
    index: BTreeMap<(IfId, Ipv4Addr), usize>,
    slots: WaitSlots,
}

impl NeighTable {
    /// A table with everything allocated now.
    pub fn new(config: NeighConfig) -> Self {
        let entries = (0..config.capacity)
            .map(|_| Entry {
                state: None,
                ip: Ipv4Addr::UNSPECIFIED,
                ifc: IfId(0),
                mac: EthernetAddress([0; 6]),
                updated: 0,
                probes: 0,
                next_probe: 0,
                // Allocated when a packet first waits (most entries never queue).
                queue: Vec::new(),
            })
            .collect();
        NeighTable {
            config,
            entries,
            index: BTreeMap::new(),
            slots: WaitSlots::new(config.queue_slots, config.slot_len),
        }
    }

    #[inline]
    fn find(&self, ifc: IfId, ip: Ipv4Addr) -> Option<usize> {
        self.index.get(&(ifc, ip)).copied()
    }

    /// An entry for `ip` on `ifc` (none found): a free one, or one evicted
    /// ([`NeighTable::alloc`]), indexed under its new key.
    fn claim(&mut self, ifc: IfId, ip: Ipv4Addr, now: Millis) -> Option<usize> {
        let i = self.alloc(now)?;
        let e = self.entries.get_mut(i)?;
        if e.state.is_some() {
            self.index.remove(&(e.ifc, e.ip));
        }
        e.ip = ip;
        e.ifc = ifc;
        self.index.insert((ifc, ip), i);
        Some(i)
    }

    /// The state and MAC of the entry for `ip` on `ifc`.
    pub fn lookup(&self, ifc: IfId, ip: Ipv4Addr) -> Option<(NeighState, EthernetAddress)> {
        let e = self.entries.get(self.find(ifc, ip)?)?;
        Some((e.state?, e.mac))
    }

    /// A free entry, evicting the oldest FAILED, else the oldest that is neither
    /// INCOMPLETE nor confirmed in the last [`KEEP_CONFIRMED_MS`].
    fn alloc(&mut self, now: Millis) -> Option<usize> {
        if self.index.len() < self.entries.len() {
            if let Some(i) = self.entries.iter().position(|e| e.state.is_none()) {
                return Some(i);
            }
        }
        let oldest = |want_failed: bool| {
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, e)| match e.state {
                    Some(NeighState::Failed) => true,
                    Some(NeighState::Incomplete) | None => false,
                    Some(_) => !want_failed && now.saturating_sub(e.updated) >= KEEP_CONFIRMED_MS,
                })
                .min_by_key(|(_, e)| e.updated)
                .map(|(i, _)| i)
        };
        oldest(true).or_else(|| oldest(false))
    }

    /// Sends `frame` (a whole Ethernet frame whose IP packet goes to `next_hop`) out of
    /// `ifc`, filling in the Ethernet addresses, or queues a copy while ARP resolves.
    #[allow(clippy::too_many_arguments)]
    pub fn output<O: Output>(
        &mut self,
        ifaces: &Interfaces,
        ifc: IfId,
        next_hop: Ipv4Addr,
        input: IfId,
        frame: &mut [u8],
        tx: TxMeta,
        now: Millis,
        out: &mut O,
        stats: &mut Stats,
    ) -> Result<Resolution, DropReason> {
        let iface = ifaces.get(ifc).ok_or(DropReason::NoRoute)?;
        if frame.len() < ETH_LEN {
            return Err(DropReason::Malformed);
        }
        let idx = match self.find(ifc, next_hop) {
            Some(i) => i,
            None => {
                let i = self
                    .claim(ifc, next_hop, now)
                    .ok_or(DropReason::NoNeighbour)?;
                let e = self.entries.get_mut(i).ok_or(DropReason::NoNeighbour)?;
                e.state = Some(NeighState::Failed); // restarted just below
                e.mac = EthernetAddress([0; 6]);
                e.updated = now;
                e.queue.clear();
                i
            }
        };
        let e = self.entries.get_mut(idx).ok_or(DropReason::NoNeighbour)?;
        if e.state == Some(NeighState::Reachable)
            && now.saturating_sub(e.updated) >= self.config.reachable_ms
        {
            e.state = Some(NeighState::Stale);
        }
        match e.state {
            Some(NeighState::Reachable) | Some(NeighState::Probe) => {
                let mac = e.mac;
                send(iface, ifc, mac, frame, tx, out, stats).map(|()| Resolution::Sent)
            }
            Some(NeighState::Stale) => {
                let mac = e.mac;
                e.state = Some(NeighState::Probe);
                e.probes = 1;
                e.next_probe = now.saturating_add(self.config.retrans_ms);
                send_request(iface, ifc, next_hop, Some(mac), out, stats);
                send(iface, ifc, mac, frame, tx, out, stats).map(|()| Resolution::Sent)
            }
            Some(NeighState::Failed) | None => {
                e.state = Some(NeighState::Incomplete);
                e.probes = 1;
                e.next_probe = now.saturating_add(self.config.retrans_ms);
                send_request(iface, ifc, next_hop, None, out, stats);
                self.enqueue(idx, iface, input, frame, tx, stats)
            }
            Some(NeighState::Incomplete) => self.enqueue(idx, iface, input, frame, tx, stats),
        }
    }

    fn enqueue(
        &mut self,
        idx: usize,
        iface: &Interface,
        input: IfId,
        frame: &[u8],
        tx: TxMeta,
        stats: &mut Stats,
    ) -> Result<Resolution, DropReason> {
        let e = self.entries.get_mut(idx).ok_or(DropReason::NoNeighbour)?;
        let mac = iface.mac();
        self.slots.enqueue(
            &mut e.queue,
            self.config.queue_per_entry,
            mac.as_bytes(),
            input,
            frame,
            tx,
        )?;
        stats.arp_queued = stats.arp_queued.wrapping_add(1);
        Ok(Resolution::Queued)
    }

    /// Learns from an ARP packet (the Ethernet payload) seen on `ifc`, sending the
    /// packets that were waiting for its sender.
    pub fn observe_arp<O: Output>(
        &mut self,
        ifaces: &Interfaces,
        ifc: IfId,
        arp: &[u8],
        now: Millis,
        out: &mut O,
        stats: &mut Stats,
    ) {
        let Some(iface) = ifaces.get(ifc) else { return };
        let Ok(pkt) = ArpPacket::new_checked(arp) else {
            return;
        };
        let Ok(ArpRepr::EthernetIpv4 {
            operation,
            source_hardware_addr: sha,
            source_protocol_addr: spa,
            target_protocol_addr: tpa,
            ..
        }) = ArpRepr::parse(&pkt)
        else {
            return;
        };
        // an ARP probe (RFC 5227) has no sender address; a multicast sender MAC or a
        // martian sender address is never a neighbour
        if spa.is_unspecified()
            || spa.is_broadcast()
            || spa.is_multicast()
            || !sha.is_unicast()
            || iface.has_addr(spa)
        {
            return;
        }
        let is_reply = operation == ArpOperation::Reply;
        let idx = match self.find(ifc, spa) {
            Some(i) => i,
            None if iface.has_addr(tpa) => {
                let Some(i) = self.claim(ifc, spa, now) else {
                    return;
                };
                let Some(e) = self.entries.get_mut(i) else {
                    return;
                };
                e.state = Some(if is_reply {
                    NeighState::Reachable
                } else {
                    NeighState::Stale
                });
                e.mac = sha;
                e.updated = now;
                e.probes = 0;
                e.queue.clear();
                return;
            }
            None => return,
        };
        let Some(e) = self.entries.get_mut(idx) else {
            return;
        };
        let was = e.state;
        let changed = e.mac != sha;
        e.mac = sha;
        e.probes = 0;
        if is_reply {
            e.state = Some(NeighState::Reachable);
            e.updated = now;
        } else if matches!(was, Some(NeighState::Incomplete) | Some(NeighState::Failed)) || changed
        {
            e.state = Some(NeighState::Stale);
            e.updated = now;
        }
        if was == Some(NeighState::Incomplete) {
            // release the queue oldest first
            self.slots.release(&mut e.queue, |f, tx, input| {
                if send(iface, ifc, sha, f, tx, out, stats).is_err() {
                    stats.drop(Some(input), DropReason::TxFull);
                }
            });
        }
    }

    /// Retries ARP requests, ages REACHABLE entries and fails unanswered ones; their
    /// waiting packets become available through [`NeighTable::take_failed`].
    pub fn poll<O: Output>(
        &mut self,
        ifaces: &Interfaces,
        now: Millis,
        out: &mut O,
        stats: &mut Stats,
    ) {
        for e in self.entries.iter_mut() {
            match e.state {
                Some(NeighState::Reachable)
                    if now.saturating_sub(e.updated) >= self.config.reachable_ms =>
                {
                    e.state = Some(NeighState::Stale);
                }
                Some(st @ (NeighState::Incomplete | NeighState::Probe)) if now >= e.next_probe => {
                    if e.probes >= self.config.max_probes {
                        e.state = Some(NeighState::Failed);
                        e.updated = now;
                        self.slots.fail(&mut e.queue, stats);
                    } else if let Some(iface) = ifaces.get(e.ifc) {
                        e.probes = e.probes.saturating_add(1);
                        e.next_probe = now.saturating_add(self.config.retrans_ms);
                        let unicast = (st == NeighState::Probe).then_some(e.mac);
                        send_request(iface, e.ifc, e.ip, unicast, out, stats);
                    }
                }
                _ => {}
            }
        }
    }

    /// The next packet whose neighbour failed: its slot, the interface it came in by
    /// and the frame. Free it with [`NeighTable::free_failed`] after use.
    pub fn take_failed(&self) -> Option<(usize, IfId, &[u8], &[u8])> {
        self.slots.take_failed()
    }

    /// A routed packet's output starts: what it queues is noted by
    /// [`NeighTable::note_origin`].
    #[inline]
    pub fn begin_packet(&mut self) {
        self.slots.begin_packet();
    }

    /// Keeps `head` (the packet's IP header and 8 bytes as it arrived, before NAT)
    /// with every slot the packet queued since [`NeighTable::begin_packet`]: the
    /// host-unreachable sent if its neighbour fails quotes that, not the translated
    /// packet (which would show the sender a LAN address).
    #[inline]
    pub fn note_origin(&mut self, head: &[u8]) {
        self.slots.note_origin(head);
    }

    /// Frees a slot returned by [`NeighTable::take_failed`].
    pub fn free_failed(&mut self, slot: usize) {
        self.slots.free_failed(slot);
    }

    /// Packets currently waiting for ARP.
    pub fn queued(&self) -> usize {
        self.slots.queued()
    }

    /// The entries as `ip neigh` prints them.
    pub fn lines<'a>(&'a self, ifaces: &'a Interfaces) -> impl Iterator<Item = NeighLine<'a>> {
        self.entries.iter().filter_map(move |e| {
            Some(NeighLine {
                ip: e.ip,
                ifname: ifaces.get(e.ifc).map_or("?", |i| i.name()),
                mac: e.mac,
                state: e.state?,
            })
        })
    }
}

/// Writes the Ethernet addresses and hands the frame to the link.
fn send<O: Output>(
    iface: &Interface,
    ifc: IfId,
    mac: EthernetAddress,
    frame: &mut [u8],
    tx: TxMeta,
    out: &mut O,
    stats: &mut Stats,
) -> Result<(), DropReason> {
    let mut eth = EthernetFrame::new_checked(&mut *frame).map_err(|_| DropReason::Malformed)?;
    eth.set_dst_addr(mac);
    eth.set_src_addr(iface.mac());
    match out.send(ifc, frame, tx) {
        Ok(()) => {
            stats.tx(ifc, frame.len().saturating_sub(ETH_LEN));
            Ok(())
        }
        Err(_) => {
            stats.tx_full(ifc);
            Err(DropReason::TxFull)
        }
    }
}

/// Sends an ARP request for `target`, broadcast or (re-probing) to `unicast`.
fn send_request<O: Output>(
    iface: &Interface,
    ifc: IfId,
    target: Ipv4Addr,
    unicast: Option<EthernetAddress>,
    out: &mut O,
    stats: &mut Stats,
) {
    let mut buf = [0u8; ARP_FRAME_LEN];
    let Some((eth_buf, arp_buf)) = buf.split_at_mut_checked(ETH_LEN) else {
        return;
    };
    let mut eth = EthernetFrame::new_unchecked(eth_buf);
    eth.set_dst_addr(unicast.unwrap_or(EthernetAddress::BROADCAST));
    eth.set_src_addr(iface.mac());
    eth.set_ethertype(EthernetProtocol::Arp);
    let repr = ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Request,
        source_hardware_addr: iface.mac(),
        source_protocol_addr: iface.source_for(target).unwrap_or(Ipv4Addr::UNSPECIFIED),
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: target,
    };
    repr.emit(&mut ArpPacket::new_unchecked(arp_buf));
    if out.send(ifc, &buf, TxMeta::default()).is_ok() {
        stats.arp_requests = stats.arp_requests.wrapping_add(1);
    } else {
        stats.tx_full(ifc);
    }
}

/// One neighbour as `ip neigh` prints it:
/// `192.168.1.100 dev eth0 lladdr 52:54:00:12:34:56 REACHABLE`.
pub struct NeighLine<'a> {
    /// Its address.
    pub ip: Ipv4Addr,
    /// The interface's name.
    pub ifname: &'a str,
    /// Its MAC (meaningless while INCOMPLETE or FAILED).
    pub mac: EthernetAddress,
    /// Its state.
    pub state: NeighState,
}

impl fmt::Display for NeighLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} dev {}", self.ip, self.ifname)?;
        if !matches!(self.state, NeighState::Incomplete | NeighState::Failed) {
            write!(f, " lladdr {}", MacDisplay(self.mac))?;
        }
        write!(f, " {}", self.state.name())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::ipnet::Ipv4Net;
    use crate::testutil::*;

    fn one_iface() -> Interfaces {
        let mut ifs = Interfaces::new(1);
        let id = ifs.add(ifconfig("eth0", [2, 0, 0, 0, 0, 1], 1500)).unwrap();
        ifs.add_addr(id, Ipv4Net::new(ip([10, 0, 0, 1]), 24).unwrap())
            .unwrap();
        ifs
    }

    #[test]
    fn global_slot_cap_and_oversize_frames() {
        let ifs = one_iface();
        let mut t = NeighTable::new(NeighConfig {
            queue_slots: 4,
            slot_len: 100,
            ..NeighConfig::default()
        });
        let mut st = Stats::new(1);
        let mut o = Recorder::default();
        let mut send = |t: &mut NeighTable, host: u8, len: usize| {
            let mut f = alloc::vec![0u8; len];
            t.output(
                &ifs,
                IfId(0),
                ip([10, 0, 0, host]),
                IfId(0),
                &mut f,
                TxMeta::default(),
                0,
                &mut o,
                &mut st,
            )
        };
        for _ in 0..3 {
            assert_eq!(send(&mut t, 5, 60), Ok(Resolution::Queued));
        }
        assert_eq!(send(&mut t, 6, 60), Ok(Resolution::Queued));
        assert_eq!(
            send(&mut t, 6, 60),
            Err(DropReason::NoNeighbour),
            "all 4 slots used"
        );
        assert_eq!(
            send(&mut t, 7, 101),
            Err(DropReason::NoNeighbour),
            "too big"
        );
        assert_eq!(send(&mut t, 7, 10), Err(DropReason::Malformed), "no header");
        assert_eq!(t.queued(), 4);
    }

    #[test]
    fn hostile_arp_never_panics_nor_learns_junk() {
        let ifs = one_iface();
        let mut t = NeighTable::new(NeighConfig::default());
        let mut st = Stats::new(1);
        let mut o = Recorder::default();
        let good = arp(
            2,
            [2, 0, 0, 0, 0, 9],
            [10, 0, 0, 9],
            [2, 0, 0, 0, 0, 1],
            [10, 0, 0, 1],
        );
        let mut rng = Rng(42);
        for _ in 0..5000 {
            let mut a = good.clone();
            rng.mangle(&mut a, 3, 0, good.len());
            t.observe_arp(&ifs, IfId(0), &a, 0, &mut o, &mut st);
        }
        for l in t.lines(&ifs) {
            assert!(!l.ip.is_unspecified() && !l.ip.is_multicast() && !l.ip.is_broadcast());
            assert!(l.mac.is_unicast());
        }
        // junk from another interface id is ignored
        t.observe_arp(&ifs, IfId(9), &good, 0, &mut o, &mut st);
        assert!(o.sent.is_empty());
    }
}
