//! IPv6 neighbour discovery for forwarded packets (RFC 4861 §7): the next hop's MAC.
//!
//! The router's own neighbour discovery (answering solicitations for its addresses,
//! its own traffic) stays with the local stack, which sees every ND frame. This table
//! serves the forwarding path: it learns from the ND messages that arrive (a
//! solicitation's source link-layer option, an advertisement's target link-layer
//! option, a router advertisement's source option), accepted only as RFC 4861 §7.1
//! validates them (hop limit 255, so from the link itself; code 0; valid checksum;
//! options with a non-zero length within the message); and for a next hop it does not
//! know it sends a solicitation to the solicited-node multicast address (from the
//! interface's link-local address, with its source link-layer option), at most one
//! every [`NeighConfig::retrans_ms`] and [`NeighConfig::max_probes`] times before the
//! entry is FAILED (Linux's `retrans_time_ms` and `mcast_solicit`). An entry not
//! confirmed for [`NeighConfig::reachable_ms`] is still used but re-confirmed with
//! unicast solicitations; unanswered, it is resolved afresh. A packet whose
//! next hop is not resolved yet waits ([`Ndp::hold`]) in the ARP table's preallocated
//! slots ([`crate::neigh`]'s wait queue, shared code): at most
//! [`NeighConfig::queue_per_entry`] for one neighbour (Linux's `unres_qlen`) and
//! [`NeighConfig::queue_slots`] in all, beyond that dropped
//! ([`DropReason::NoNeighbour`]). While packets wait, [`Ndp::poll`] retries the
//! solicitation; the message that resolves the entry sends them with the learnt MAC;
//! after [`NeighConfig::max_probes`] unanswered they are dropped, counted, and handed
//! back ([`Ndp::take_failed`]) for an ICMPv6 address-unreachable.
//! Advertisements overwrite the MAC (the override flag is not needed for an entry
//! this table only caches); entries are never aged, only replaced by newer messages
//! or evicted when the table is full: unresolved ones first (never one packets wait
//! for), then the oldest resolved one not confirmed in the last 5 s (as the ARP
//! table).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::net::Ipv6Addr;

use crate::exthdr::Upper;
use crate::icmp_error::RateLimiter;
use crate::ipv4::put16;
use crate::ipv6::{self, HEADER_LEN, PROTO_ICMPV6};
use crate::link::ETH_LEN;
use crate::link::{Output, TxMeta};
use crate::neigh::{NeighConfig, WaitSlots};
use crate::stats::Stats;
use crate::{DropReason, IfId, Millis};

/// Router solicitation... ND message types.
pub const ROUTER_SOLICIT: u8 = 133;
/// Router advertisement.
pub const ROUTER_ADVERT: u8 = 134;
/// Neighbour solicitation.
pub const NEIGHBOUR_SOLICIT: u8 = 135;
/// Neighbour advertisement.
pub const NEIGHBOUR_ADVERT: u8 = 136;

/// An entry confirmed this recently is never evicted for a new one.
const KEEP_CONFIRMED_MS: Millis = 5_000;

/// Length of the solicitation this table sends: ICMPv6 header, target, one option.
const NS_LEN: usize = 8 + 16 + 8;
/// Length of a whole solicitation frame.
pub const NS_FRAME_LEN: usize = ETH_LEN + HEADER_LEN + NS_LEN;

/// Sizes and timers: the ARP table's ([`NeighConfig`], with solicitations for its
/// requests), and a rate for the solicitations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NdpConfig {
    /// The table's sizes and timers, as the ARP table's.
    pub table: NeighConfig,
    /// Solicitations a second in all (a flood of packets to unknown addresses of an
    /// on-link /64 must not become a flood of multicast solicitations).
    pub solicits_per_sec: u32,
}

impl Default for NdpConfig {
    fn default() -> Self {
        NdpConfig {
            table: NeighConfig {
                capacity: 256,
                ..NeighConfig::default()
            },
            solicits_per_sec: 100,
        }
    }
}

#[derive(Debug)]
struct Entry {
    ifc: IfId,
    ip: Ipv6Addr,
    mac: Option<[u8; 6]>,
    updated: Millis,
    probes: u8,
    last_probe: Option<Millis>,
    /// Slots of the packets waiting for it, oldest first (allocated when one first
    /// waits).
    queue: Vec<usize>,
}

/// What [`Ndp::resolve`] says of a next hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Its MAC.
    Known([u8; 6]),
    /// Not known: send a solicitation now (and [`Ndp::hold`] the packet).
    Solicit,
    /// Known but not confirmed lately: send the packet to this MAC, and a unicast
    /// solicitation to it.
    Probe([u8; 6]),
    /// Not known, a solicitation is out (or it failed): [`Ndp::hold`] the packet.
    Waiting,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NdpStats {
    /// Solicitations sent.
    pub solicits: u64,
    /// ND messages learnt from.
    pub learnt: u64,
    /// ND messages refused by the RFC 4861 §7.1 checks.
    pub invalid: u64,
    /// Solicitations not sent because of [`NdpConfig::solicits_per_sec`].
    pub limited: u64,
    /// Packets held until their next hop answered (or failed).
    pub queued: u64,
}

/// The table.
#[derive(Debug)]
pub struct Ndp {
    config: NdpConfig,
    entries: Vec<Entry>,
    index: BTreeMap<(IfId, Ipv6Addr), usize>,
    stats: NdpStats,
    limit: RateLimiter,
    slots: WaitSlots,
}

impl Ndp {
    /// An empty table (its entries allocated now).
    pub fn new(config: NdpConfig) -> Self {
        Ndp {
            config,
            entries: Vec::with_capacity(config.table.capacity),
            index: BTreeMap::new(),
            stats: NdpStats::default(),
            limit: RateLimiter::new(config.solicits_per_sec, config.solicits_per_sec),
            slots: WaitSlots::new(config.table.queue_slots, config.table.slot_len),
        }
    }

    /// The counters.
    pub fn stats(&self) -> NdpStats {
        self.stats
    }

    /// Learns from an ICMPv6 packet `ip` that arrived on `ifc` (`upper` from its
    /// extension header walk), sending the packets that were waiting for the
    /// neighbour it resolves. Anything but a valid RS/RA/NS/NA is ignored.
    pub fn observe<O: Output>(
        &mut self,
        ifc: IfId,
        ip: &[u8],
        upper: &Upper,
        now: Millis,
        out: &mut O,
        stats: &mut Stats,
    ) {
        if upper.proto != PROTO_ICMPV6 || !upper.has_l4() {
            return;
        }
        let Some(msg) = ip.get(upper.offset..) else {
            return;
        };
        let Some(&ty) = msg.first() else { return };
        let opts_at = match ty {
            ROUTER_SOLICIT => 8,
            ROUTER_ADVERT => 16,
            NEIGHBOUR_SOLICIT | NEIGHBOUR_ADVERT => 24,
            _ => return,
        };
        let (src, dst) = (ipv6::src(ip), ipv6::dst(ip));
        let valid = ip.get(ipv6::HOP_LIMIT) == Some(&255)
            && msg.get(1) == Some(&0)
            && msg.len() >= opts_at
            && ipv6::l4_checksum_ok(src, dst, PROTO_ICMPV6, msg);
        let opts = msg.get(opts_at..).unwrap_or(&[]);
        let Some(opts) = valid.then_some(opts).filter(|o| options_ok(o)) else {
            self.stats.invalid += 1;
            return;
        };
        let (who, opt) = match ty {
            NEIGHBOUR_ADVERT => (ipv6::addr_at(msg, 8), 2), // target link-layer address
            _ if src.is_unspecified() => return,            // DAD: nobody to learn
            _ => (src, 1),                                  // source link-layer address
        };
        if who.is_unspecified() || who.is_multicast() {
            self.stats.invalid += 1;
            return;
        }
        if let Some(mac) = find_lladdr(opts, opt) {
            self.stats.learnt += 1;
            self.learn(ifc, who, mac, now, out, stats);
        }
    }

    fn learn<O: Output>(
        &mut self,
        ifc: IfId,
        ip: Ipv6Addr,
        mac: [u8; 6],
        now: Millis,
        out: &mut O,
        stats: &mut Stats,
    ) {
        let i = self.slot(ifc, ip, now);
        let Some(e) = i.and_then(|i| self.entries.get_mut(i)) else {
            return;
        };
        e.mac = Some(mac);
        e.updated = now;
        e.probes = 0;
        // the packets held for it go out, oldest first, with the learnt MAC
        self.slots.release(&mut e.queue, |f, tx, input| {
            if let Some(d) = f.get_mut(..6) {
                d.copy_from_slice(&mac);
            }
            if out.send(ifc, f, tx).is_ok() {
                stats.tx(ifc, f.len().saturating_sub(ETH_LEN));
            } else {
                stats.tx_full(ifc);
                stats.drop(Some(input), DropReason::TxFull);
            }
        });
    }

    /// Holds a copy of `frame` (to `next_hop` on `ifc`, from `input`) until
    /// [`Ndp::resolve`] has found its MAC; its source MAC is set to `src_mac`. Fails
    /// ([`DropReason::NoNeighbour`]) beyond [`NeighConfig::queue_per_entry`] packets for
    /// that neighbour or [`NeighConfig::queue_slots`] in all.
    #[allow(clippy::too_many_arguments)]
    pub fn hold(
        &mut self,
        ifc: IfId,
        next_hop: Ipv6Addr,
        input: IfId,
        src_mac: [u8; 6],
        frame: &[u8],
        tx: TxMeta,
    ) -> Result<(), DropReason> {
        let i = self
            .index
            .get(&(ifc, next_hop))
            .copied()
            .ok_or(DropReason::NoNeighbour)?;
        let e = self.entries.get_mut(i).ok_or(DropReason::NoNeighbour)?;
        if e.mac.is_some() {
            return Err(DropReason::NoNeighbour);
        }
        let per = self.config.table.queue_per_entry;
        self.slots
            .enqueue(&mut e.queue, per, &src_mac, input, frame, tx)?;
        self.stats.queued += 1;
        Ok(())
    }

    /// Retries the solicitations of unresolved entries packets wait for (`solicit`
    /// sends one, within [`NdpConfig::solicits_per_sec`]); after
    /// [`NeighConfig::max_probes`] unanswered, the entry fails and its packets are
    /// counted as [`DropReason::NoNeighbour`] and wait for [`Ndp::take_failed`].
    pub fn poll(
        &mut self,
        now: Millis,
        stats: &mut Stats,
        mut solicit: impl FnMut(IfId, Ipv6Addr, &mut Stats),
    ) {
        let (retrans, max) = (self.config.table.retrans_ms, self.config.table.max_probes);
        for e in self.entries.iter_mut() {
            if e.mac.is_some() || e.queue.is_empty() {
                continue;
            }
            if e.last_probe
                .is_some_and(|t| now < t.saturating_add(retrans))
            {
                continue;
            }
            if e.probes >= max {
                // FAILED (as in `resolve`: tried again a retransmit time later)
                e.probes = 0;
                e.last_probe = Some(now);
                self.slots.fail(&mut e.queue, stats);
            } else if self.limit.allow(now) {
                e.probes += 1;
                e.last_probe = Some(now);
                self.stats.solicits += 1;
                solicit(e.ifc, e.ip, stats);
            } else {
                self.stats.limited += 1;
            }
        }
    }

    /// The next packet whose next hop failed: its slot, the interface it came in by
    /// and the frame. Free it with [`Ndp::free_failed`] after use.
    pub fn take_failed(&self) -> Option<(usize, IfId, &[u8])> {
        self.slots.take_failed().map(|(i, ifc, f, _)| (i, ifc, f))
    }

    /// Frees a slot returned by [`Ndp::take_failed`].
    pub fn free_failed(&mut self, slot: usize) {
        self.slots.free_failed(slot);
    }

    /// Packets currently waiting for their next hop.
    pub fn queued(&self) -> usize {
        self.slots.queued()
    }

    /// The entry for (ifc, ip), made (evicting the oldest) if there is none.
    fn slot(&mut self, ifc: IfId, ip: Ipv6Addr, now: Millis) -> Option<usize> {
        if let Some(&i) = self.index.get(&(ifc, ip)) {
            return Some(i);
        }
        let mut e = Entry {
            ifc,
            ip,
            mac: None,
            updated: now,
            probes: 0,
            last_probe: None,
            queue: Vec::new(),
        };
        if self.entries.len() < self.config.table.capacity {
            self.entries.push(e);
            let i = self.entries.len() - 1;
            self.index.insert((ifc, ip), i);
            return Some(i);
        }
        // a full table fails new resolutions, never working ones (the ARP table's
        // rule): unresolved entries go first, oldest first; a resolved one only if
        // not confirmed in the last 5 s. A sweep of a /64 cannot push the gateway out.
        // One packets wait for stays (as the ARP table's INCOMPLETE entries).
        let (i, old) = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.queue.is_empty())
            .filter(|(_, e)| e.mac.is_none() || now.saturating_sub(e.updated) >= KEEP_CONFIRMED_MS)
            .min_by_key(|(_, e)| (e.mac.is_some(), e.updated))
            .map(|(i, e)| (i, (e.ifc, e.ip)))?;
        self.index.remove(&old);
        let slot = self.entries.get_mut(i)?;
        e.queue = core::mem::take(&mut slot.queue); // empty; keeps its capacity
        *slot = e;
        self.index.insert((ifc, ip), i);
        Some(i)
    }

    /// The MAC of `next_hop` on `ifc`, or whether to solicit it now.
    pub fn resolve(&mut self, ifc: IfId, next_hop: Ipv6Addr, now: Millis) -> Lookup {
        let Some(i) = self.slot(ifc, next_hop, now) else {
            return Lookup::Waiting;
        };
        let (retrans, max) = (self.config.table.retrans_ms, self.config.table.max_probes);
        let reachable = self.config.table.reachable_ms;
        let Some(e) = self.entries.get_mut(i) else {
            return Lookup::Waiting;
        };
        if let Some(mac) = e.mac {
            // confirmed lately: REACHABLE
            if now.saturating_sub(e.updated) < reachable {
                return Lookup::Known(mac);
            }
            // STALE: used, and re-confirmed by unicast solicitations (Linux's
            // PROBE, without the DELAY no upper layer here could cut short); no
            // answer to `max` of them and the entry is resolved afresh
            let due = e
                .last_probe
                .is_none_or(|t| now >= t.saturating_add(retrans));
            if !due {
                return Lookup::Known(mac);
            }
            if e.probes >= max {
                e.mac = None;
                e.probes = 0;
                e.last_probe = None;
                return self.resolve(ifc, next_hop, now);
            }
            if !self.limit.allow(now) {
                self.stats.limited += 1;
                return Lookup::Known(mac);
            }
            e.probes += 1;
            e.last_probe = Some(now);
            self.stats.solicits += 1;
            return Lookup::Probe(mac);
        }
        let due = e
            .last_probe
            .is_none_or(|t| now >= t.saturating_add(retrans));
        if !due {
            return Lookup::Waiting;
        }
        if e.probes >= max {
            // FAILED: tried again only a while later (Linux restarts resolution on
            // the next packet after the entry failed; here after a retransmit time)
            e.probes = 0;
            e.last_probe = Some(now);
            return Lookup::Waiting;
        }
        if !self.limit.allow(now) {
            self.stats.limited += 1;
            return Lookup::Waiting; // tried again on the next packet
        }
        e.probes += 1;
        e.last_probe = Some(now);
        self.stats.solicits += 1;
        Lookup::Solicit
    }

    /// The MAC known for `ip` on `ifc`.
    pub fn get(&self, ifc: IfId, ip: Ipv6Addr) -> Option<[u8; 6]> {
        self.index
            .get(&(ifc, ip))
            .and_then(|&i| self.entries.get(i))
            .and_then(|e| e.mac)
    }
}

/// ND options (RFC 4861 §4.6): each with a non-zero length, within the message.
fn options_ok(mut o: &[u8]) -> bool {
    while !o.is_empty() {
        let len = usize::from(o.get(1).copied().unwrap_or(0)) * 8;
        if len == 0 || len > o.len() {
            return false;
        }
        o = o.get(len..).unwrap_or(&[]);
    }
    true
}

/// The Ethernet address in the first option of type `ty` (1: source, 2: target).
fn find_lladdr(mut o: &[u8], ty: u8) -> Option<[u8; 6]> {
    while o.len() >= 8 {
        let len = usize::from(*o.get(1)?) * 8;
        if *o.first()? == ty && len == 8 {
            return o.get(2..8).and_then(|m| m.try_into().ok());
        }
        o = o.get(len.max(8)..)?;
    }
    None
}

/// Builds into `buf` a neighbour solicitation for `target` from `src` (link-local)
/// and `mac` to the target's solicited-node address. Returns the frame length.
pub fn build_solicit(
    buf: &mut [u8],
    mac: [u8; 6],
    src: Ipv6Addr,
    target: Ipv6Addr,
    unicast: Option<[u8; 6]>,
) -> Result<usize, DropReason> {
    // to the solicited-node group, or straight to the MAC being re-confirmed
    let (dst, dst_mac) = match unicast {
        Some(m) => (target, m),
        None => {
            let g = ipv6::solicited_node(target);
            (g, ipv6::multicast_mac(g))
        }
    };
    let f = buf.get_mut(..NS_FRAME_LEN).ok_or(DropReason::Malformed)?;
    f.fill(0);
    let (eth, ip) = f.split_at_mut(ETH_LEN);
    eth.get_mut(..6)
        .ok_or(DropReason::Malformed)?
        .copy_from_slice(&dst_mac);
    eth.get_mut(6..12)
        .ok_or(DropReason::Malformed)?
        .copy_from_slice(&mac);
    put16(eth, 12, 0x86dd);
    let (hdr, icmp) = ip.split_at_mut(HEADER_LEN);
    if let Some(b) = hdr.first_mut() {
        *b = 0x60;
    }
    put16(hdr, ipv6::PAYLOAD_LEN, NS_LEN as u16);
    if let Some(b) = hdr.get_mut(ipv6::NEXT_HEADER..=ipv6::HOP_LIMIT) {
        b.copy_from_slice(&[PROTO_ICMPV6, 255]);
    }
    if let Some(b) = hdr.get_mut(ipv6::SRC..ipv6::SRC + 16) {
        b.copy_from_slice(&src.octets());
    }
    if let Some(b) = hdr.get_mut(ipv6::DST..ipv6::DST + 16) {
        b.copy_from_slice(&dst.octets());
    }
    if let Some(b) = icmp.first_mut() {
        *b = NEIGHBOUR_SOLICIT;
    }
    if let Some(b) = icmp.get_mut(8..24) {
        b.copy_from_slice(&target.octets());
    }
    if let Some(b) = icmp.get_mut(24..32) {
        b.copy_from_slice(&[1, 1, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]]);
    }
    let s = ipv6::pseudo_header_sum(src, dst, PROTO_ICMPV6, NS_LEN);
    let c = !crate::checksum::fold(crate::checksum::sum(s, icmp));
    put16(icmp, 2, c);
    Ok(NS_FRAME_LEN)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::exthdr;
    use crate::testutil::{icmp6, ipv6 as packet, Recorder};

    const MAC: [u8; 6] = [2, 0, 0, 0, 0, 9];

    fn observe(n: &mut Ndp, p: &[u8], now: Millis) {
        let u = exthdr::walk(p, p[6]).unwrap();
        let (mut o, mut st) = (Recorder::default(), Stats::new(2));
        n.observe(IfId(1), p, &u, now, &mut o, &mut st);
    }

    /// A table of `capacity` entries, the other sizes and timers the default.
    fn with_capacity(capacity: usize) -> Ndp {
        let mut config = NdpConfig::default();
        config.table.capacity = capacity;
        Ndp::new(config)
    }

    fn learn(n: &mut Ndp, ifc: IfId, ip: Ipv6Addr, mac: [u8; 6], now: Millis) {
        let (mut o, mut st) = (Recorder::default(), Stats::new(2));
        n.learn(ifc, ip, mac, now, &mut o, &mut st);
    }

    /// A solicited, overriding advertisement from `src` to fe80::1 for target `src`
    /// with the one option `option`.
    fn na(src: &str, option: [u8; 8]) -> Vec<u8> {
        let mut body = alloc::vec![0x60, 0, 0, 0];
        body.extend_from_slice(&src.parse::<Ipv6Addr>().unwrap().octets());
        body.extend_from_slice(&option);
        packet(
            src,
            "fe80::1",
            58,
            255,
            &icmp6(src, "fe80::1", NEIGHBOUR_ADVERT, 0, &body),
        )
    }

    fn ns(src: &str, target: &str, hop: u8) -> Vec<u8> {
        let mut body = alloc::vec![0u8; 4];
        body.extend_from_slice(&target.parse::<Ipv6Addr>().unwrap().octets());
        body.extend_from_slice(&[1, 1]);
        body.extend_from_slice(&MAC);
        let dst = "ff02::1:ff00:1";
        packet(
            src,
            dst,
            58,
            hop,
            &icmp6(src, dst, NEIGHBOUR_SOLICIT, 0, &body),
        )
    }

    #[test]
    fn solicitations_and_advertisements_are_learnt_when_valid() {
        let mut n = Ndp::new(NdpConfig::default());
        let host: Ipv6Addr = "2001:db8::5".parse().unwrap();
        // hop limit 254: not from the link
        observe(&mut n, &ns("2001:db8::5", "2001:db8::1", 254), 0);
        assert_eq!(n.get(IfId(1), host), None);
        assert_eq!(n.stats().invalid, 1);
        // a bad checksum
        let mut p = ns("2001:db8::5", "2001:db8::1", 255);
        p[42] ^= 1;
        observe(&mut n, &p, 0);
        assert_eq!(n.get(IfId(1), host), None);
        observe(&mut n, &ns("2001:db8::5", "2001:db8::1", 255), 0);
        assert_eq!(n.get(IfId(1), host), Some(MAC));
        assert_eq!(n.resolve(IfId(1), host, 1), Lookup::Known(MAC));
        // an advertisement's target option
        let target: Ipv6Addr = "2001:db8::7".parse().unwrap();
        observe(&mut n, &na("2001:db8::7", [2, 1, 2, 0, 0, 0, 0, 7]), 0);
        assert_eq!(n.get(IfId(1), target), Some([2, 0, 0, 0, 0, 7]));
        // a zero-length option
        observe(&mut n, &na("2001:db8::7", [2, 0, 2, 0, 0, 0, 0, 8]), 0);
        assert_eq!(n.get(IfId(1), target), Some([2, 0, 0, 0, 0, 7]));
    }

    #[test]
    fn an_unknown_next_hop_is_solicited_at_most_once_a_second_three_times() {
        let mut n = Ndp::new(NdpConfig::default());
        let h: Ipv6Addr = "2001:db8::9".parse().unwrap();
        assert_eq!(n.resolve(IfId(0), h, 0), Lookup::Solicit);
        assert_eq!(n.resolve(IfId(0), h, 500), Lookup::Waiting);
        assert_eq!(n.resolve(IfId(0), h, 1000), Lookup::Solicit);
        assert_eq!(n.resolve(IfId(0), h, 2000), Lookup::Solicit);
        assert_eq!(n.resolve(IfId(0), h, 3000), Lookup::Waiting, "failed");
        assert_eq!(n.resolve(IfId(0), h, 4000), Lookup::Solicit, "retried");
        assert_eq!(n.stats().solicits, 4);
    }

    #[test]
    fn the_table_is_bounded_and_evicts_the_oldest() {
        let mut n = with_capacity(4);
        for i in 0..10u16 {
            let a = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i);
            learn(&mut n, IfId(0), a, MAC, Millis::from(i) * 10_000);
        }
        assert_eq!(n.entries.len(), 4);
        assert_eq!(n.index.len(), 4);
        let last = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 9);
        assert_eq!(n.get(IfId(0), last), Some(MAC));
        let first = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0);
        assert_eq!(n.get(IfId(0), first), None);
    }

    #[test]
    fn a_sweep_of_unknown_addresses_does_not_push_out_a_working_neighbour() {
        let mut n = with_capacity(4);
        let gw: Ipv6Addr = "fe80::1".parse().unwrap();
        learn(&mut n, IfId(0), gw, MAC, 0);
        for i in 0..1000u16 {
            let a = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 1, i);
            n.resolve(IfId(0), a, 1000 + Millis::from(i));
        }
        assert_eq!(
            n.get(IfId(0), gw),
            Some(MAC),
            "confirmed in the last 5 s: kept"
        );
        // an old resolved entry goes before a table of fresh ones refuses
        let mut n = with_capacity(2);
        learn(&mut n, IfId(0), gw, MAC, 0);
        learn(&mut n, IfId(0), "fe80::2".parse().unwrap(), MAC, 100);
        let new: Ipv6Addr = "fe80::3".parse().unwrap();
        assert_eq!(
            n.resolve(IfId(0), new, 200),
            Lookup::Waiting,
            "all fresh: refused"
        );
        assert_eq!(n.resolve(IfId(0), new, 10_000), Lookup::Solicit);
        assert_eq!(n.get(IfId(0), gw), None, "the oldest went");
    }

    #[test]
    fn an_entry_not_confirmed_for_30_s_is_probed_by_unicast_then_dropped() {
        let mut n = Ndp::new(NdpConfig::default());
        let h: Ipv6Addr = "2001:db8::9".parse().unwrap();
        learn(&mut n, IfId(0), h, MAC, 0);
        assert_eq!(n.resolve(IfId(0), h, 29_999), Lookup::Known(MAC));
        assert_eq!(n.resolve(IfId(0), h, 30_000), Lookup::Probe(MAC));
        assert_eq!(
            n.resolve(IfId(0), h, 30_500),
            Lookup::Known(MAC),
            "still used"
        );
        // an answer makes it reachable again
        learn(&mut n, IfId(0), h, MAC, 30_600);
        assert_eq!(n.resolve(IfId(0), h, 31_000), Lookup::Known(MAC));
        // three unanswered probes and it is solicited afresh (multicast)
        assert_eq!(n.resolve(IfId(0), h, 61_000), Lookup::Probe(MAC));
        assert_eq!(n.resolve(IfId(0), h, 62_000), Lookup::Probe(MAC));
        assert_eq!(n.resolve(IfId(0), h, 63_000), Lookup::Probe(MAC));
        assert_eq!(n.resolve(IfId(0), h, 64_000), Lookup::Solicit);
        assert_eq!(n.get(IfId(0), h), None);
    }

    #[test]
    fn solicitations_are_limited_in_all() {
        let mut n = Ndp::new(NdpConfig::default());
        let sent = (0..1000u16)
            .filter(|&i| {
                let a = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 1, i);
                n.resolve(IfId(0), a, 5000) == Lookup::Solicit
            })
            .count();
        assert_eq!(sent, 100);
        assert_eq!(n.stats().limited, 900);
    }

    #[test]
    fn the_solicitation_is_well_formed() {
        let mut buf = [0u8; NS_FRAME_LEN];
        let src = ipv6::link_local_of(MAC);
        let t: Ipv6Addr = "2001:db8::1:2345:6789".parse().unwrap();
        let n = build_solicit(&mut buf, MAC, src, t, None).unwrap();
        let ip = &buf[ETH_LEN..n];
        assert_eq!(&buf[..6], &[0x33, 0x33, 0xff, 0x45, 0x67, 0x89]);
        let h = ipv6::parse(ip).unwrap();
        assert_eq!(h.hop_limit, 255);
        assert_eq!(h.dst, "ff02::1:ff45:6789".parse::<Ipv6Addr>().unwrap());
        assert!(ipv6::l4_checksum_ok(h.src, h.dst, 58, &ip[40..]));
        // and it is what the table learns from
        let mut table = Ndp::new(NdpConfig::default());
        observe(&mut table, ip, 0);
        assert_eq!(table.get(IfId(1), src), Some(MAC));
    }
}
