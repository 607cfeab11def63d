//! Duplicate address detection for the interface's own IPv6 addresses (RFC 4862
//! section 5.4), as Linux does on every address it adds (OpenWrt's defaults:
//! `dad_transmits` 1, `retrans_time_ms` 1000), then the unsolicited neighbour
//! advertisement of an address found unique (RFC 4861 section 7.2.6).
//!
//! - [`Dad::start`]: an address added (not a link-local one: the interface's own
//!   EUI-64 one is made of its MAC) is tentative; [`Dad::poll`] sends one neighbour
//!   solicitation for it from the unspecified address to its solicited-node
//!   multicast address, hop limit 255, no options (section 5.4.2).
//! - [`Dad::observe`]: each frame the interface receives. A solicitation from the
//!   unspecified address for a tentative address (another node probing it at the
//!   same time, 5.4.3) or an advertisement for it (a node that has it, 5.4.4) makes
//!   it a duplicate; a frame from our own MAC is our probe coming back (a looping
//!   link), not another node. A solicitation from a unicast address (address
//!   resolution) is not a sign of a duplicate.
//! - [`Dad::poll`] one retransmission time after the probe says: unique (the caller
//!   advertises it) or duplicate (the caller removes it and says so, as Linux's
//!   `IPv6: ... DAD failed`).
//!
//! Unlike Linux, the address is not held back while it is tentative: the stack
//! (smoltcp) has no tentative state, so it is used at once and withdrawn if found
//! duplicate (close to RFC 4429's Optimistic DAD, without its restrictions).

use alloc::vec::Vec;
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    EthernetFrame, EthernetProtocol, Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv6Address, Ipv6Packet,
    NdiscRepr,
};

/// RetransTimer: how long to wait for a sign of a duplicate after the probe (ms).
pub const RETRANS_MS: i64 = 1_000;
/// Addresses probed at once at most (a longer list waits its turn: each new
/// address beyond it is taken without a probe).
pub const MAX_TENTATIVE: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Probe {
    addr: Ipv6Address,
    /// When the solicitation went out.
    sent_at: Option<i64>,
    duplicate: bool,
}

/// What came of a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No other node has it: the address is kept (and advertised).
    Unique(Ipv6Address),
    /// Another node has it or probes it: the address must go.
    Duplicate(Ipv6Address),
}

/// What [`Dad`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DadCounters {
    /// Solicitations sent.
    pub probes: u64,
    /// Addresses found unique.
    pub unique: u64,
    /// Addresses found duplicate.
    pub duplicates: u64,
    /// Addresses taken without a probe (too many at once).
    pub unprobed: u64,
    /// Our own probes received back (ignored).
    pub looped: u64,
}

/// The tentative addresses of one interface.
#[derive(Clone, Debug)]
pub struct Dad {
    mac: [u8; 6],
    tentative: Vec<Probe>,
    counters: DadCounters,
}

/// `ff02::1:ffXX:XXXX` of `a`.
pub fn solicited_node(a: Ipv6Address) -> Ipv6Address {
    let o = a.octets();
    Ipv6Address::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(o[13]),
        u16::from_be_bytes([o[14], o[15]]),
    )
}

/// The duplicate address detection probe for `target`: a neighbour solicitation
/// from `::` to the target's solicited-node address (Ethernet `33:33:ff:XX:XX:XX`)
/// from `mac`, hop limit 255, without the source link-layer address option (the
/// unspecified source must not carry one, RFC 4861 section 7.1.1).
pub fn probe(mac: [u8; 6], target: Ipv6Address) -> Vec<u8> {
    let ns = Icmpv6Repr::Ndisc(NdiscRepr::NeighborSolicit {
        target_addr: target,
        lladdr: None,
    });
    crate::garp::ndisc_frame(mac, Ipv6Address::UNSPECIFIED, solicited_node(target), &ns)
}

/// The neighbour discovery message `frame` carries, if it is a valid one from the
/// link (hop limit 255, checksum right): (source MAC, IPv6 source, the message).
fn ndisc(frame: &[u8]) -> Option<([u8; 6], Ipv6Address, NdiscRepr<'_>)> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EthernetProtocol::Ipv6 {
        return None;
    }
    let src_mac = eth.src_addr().0;
    let ip = Ipv6Packet::new_checked(&frame[14..]).ok()?;
    if ip.next_header() != IpProtocol::Icmpv6 || ip.hop_limit() != 255 {
        return None;
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let len = usize::from(ip.payload_len());
    let payload = frame.get(14 + 40..14 + 40 + len)?;
    if !matches!(payload.first(), Some(135 | 136)) {
        return None;
    }
    let icmp = Icmpv6Packet::new_checked(payload).ok()?;
    match Icmpv6Repr::parse(&src, &dst, &icmp, &ChecksumCapabilities::default()).ok()? {
        Icmpv6Repr::Ndisc(nd) => Some((src_mac, src, nd)),
        _ => None,
    }
}

impl Dad {
    /// No address tentative on the interface of `mac`.
    pub fn new(mac: [u8; 6]) -> Dad {
        Dad {
            mac,
            tentative: Vec::new(),
            counters: DadCounters::default(),
        }
    }

    /// The counters.
    pub fn counters(&self) -> DadCounters {
        self.counters
    }

    /// Whether `addr` is being probed.
    pub fn is_tentative(&self, addr: Ipv6Address) -> bool {
        self.tentative.iter().any(|p| p.addr == addr)
    }

    /// `addr` was added: probe it (at the next [`Self::poll`]). Link-local,
    /// multicast and unspecified addresses are not probed; whether it is.
    pub fn start(&mut self, addr: Ipv6Address) -> bool {
        if addr.is_unicast_link_local() || addr.is_multicast() || addr.is_unspecified() {
            return false;
        }
        self.cancel(addr);
        if self.tentative.len() >= MAX_TENTATIVE {
            self.counters.unprobed += 1;
            return false;
        }
        self.tentative.push(Probe {
            addr,
            sent_at: None,
            duplicate: false,
        });
        true
    }

    /// `addr` was removed: no verdict on it.
    pub fn cancel(&mut self, addr: Ipv6Address) {
        self.tentative.retain(|p| p.addr != addr);
    }

    /// A frame the interface received.
    pub fn observe(&mut self, frame: &[u8]) {
        if self.tentative.is_empty() {
            return;
        }
        let Some((mac, src, nd)) = ndisc(frame) else {
            return;
        };
        let target = match nd {
            NdiscRepr::NeighborSolicit { target_addr, .. } if src.is_unspecified() => target_addr,
            NdiscRepr::NeighborAdvert { target_addr, .. } => target_addr,
            _ => return,
        };
        let Some(p) = self.tentative.iter_mut().find(|p| p.addr == target) else {
            return;
        };
        if mac == self.mac {
            self.counters.looped += 1;
            return;
        }
        p.duplicate = true;
    }

    /// When [`Self::poll`] next has something to do.
    pub fn poll_at(&self) -> Option<i64> {
        self.tentative
            .iter()
            .map(|p| match p.sent_at {
                _ if p.duplicate => i64::MIN,
                None => i64::MIN,
                Some(t) => t.saturating_add(RETRANS_MS),
            })
            .min()
            .map(|t| t.max(0))
    }

    /// The probes to send now, and the verdicts reached.
    pub fn poll(&mut self, now: i64) -> (Vec<Vec<u8>>, Vec<Outcome>) {
        let mut send = Vec::new();
        let mut done = Vec::new();
        let mac = self.mac;
        let counters = &mut self.counters;
        self.tentative.retain_mut(|p| {
            if p.duplicate {
                counters.duplicates += 1;
                done.push(Outcome::Duplicate(p.addr));
                return false;
            }
            match p.sent_at {
                None => {
                    send.push(probe(mac, p.addr));
                    counters.probes += 1;
                    p.sent_at = Some(now);
                    true
                }
                Some(t) if now >= t.saturating_add(RETRANS_MS) => {
                    counters.unique += 1;
                    done.push(Outcome::Unique(p.addr));
                    false
                }
                Some(_) => true,
            }
        });
        (send, done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::garp::neighbour_advertisement;

    const MAC: [u8; 6] = [0x00, 0x16, 0x3e, 0x01, 0x00, 0x02];
    const OTHER: [u8; 6] = [0x52, 0x54, 0, 0, 0, 7];

    fn a(s: &str) -> Ipv6Address {
        s.parse().unwrap()
    }

    #[test]
    fn the_probe_is_a_solicitation_from_unspecified_to_the_solicited_node_address() {
        let f = probe(MAC, a("2001:db8:1::1"));
        assert_eq!(&f[..6], &[0x33, 0x33, 0xff, 0, 0, 1]);
        assert_eq!(&f[6..12], &MAC);
        let (mac, src, nd) = ndisc(&f).expect("a valid ND message");
        assert_eq!((mac, src), (MAC, Ipv6Address::UNSPECIFIED));
        let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
        assert_eq!(ip.dst_addr(), a("ff02::1:ff00:1"));
        assert_eq!(ip.hop_limit(), 255);
        assert_eq!(
            nd,
            NdiscRepr::NeighborSolicit {
                target_addr: a("2001:db8:1::1"),
                lladdr: None
            }
        );
        assert_eq!(
            solicited_node(a("fd12::ab:cdef:1234")),
            a("ff02::1:ffef:1234")
        );
    }

    #[test]
    fn an_address_nobody_answers_for_is_unique_after_one_second() {
        let mut d = Dad::new(MAC);
        assert!(d.start(a("2001:db8:1::1")));
        assert!(
            !d.start(a("fe80::216:3eff:fe01:2")),
            "link-local: not probed"
        );
        assert_eq!(d.poll_at(), Some(0));
        let (send, done) = d.poll(5_000);
        assert_eq!((send.len(), done.len()), (1, 0));
        assert_eq!(d.poll_at(), Some(6_000));
        assert_eq!(d.poll(5_999), (vec![], vec![]));
        // our own probe coming back is not another node
        d.observe(&send[0]);
        assert_eq!(
            d.poll(6_000),
            (vec![], vec![Outcome::Unique(a("2001:db8:1::1"))])
        );
        assert_eq!(d.poll_at(), None);
        let c = d.counters();
        assert_eq!((c.probes, c.unique, c.duplicates, c.looped), (1, 1, 0, 1));
    }

    #[test]
    fn an_advertisement_for_the_address_makes_it_a_duplicate() {
        let mut d = Dad::new(MAC);
        d.start(a("2001:db8:1::1"));
        d.start(a("2001:db8:2::1"));
        d.poll(0);
        // another node defends 2001:db8:1::1 (its advertisement to all nodes)
        d.observe(&neighbour_advertisement(OTHER, a("2001:db8:1::1"), false));
        assert!(d.poll_at() == Some(0));
        let (_, done) = d.poll(10);
        assert_eq!(done, vec![Outcome::Duplicate(a("2001:db8:1::1"))]);
        assert!(
            d.is_tentative(a("2001:db8:2::1")),
            "the other one still waits"
        );
        assert_eq!(d.poll(1_000).1, vec![Outcome::Unique(a("2001:db8:2::1"))]);
    }

    /// A [`Dad`] checking 2001:db8:1::1, polled once at time 0.
    fn probing() -> Dad {
        let mut d = Dad::new(MAC);
        d.start(a("2001:db8:1::1"));
        d.poll(0);
        d
    }

    #[test]
    fn another_node_probing_the_same_address_makes_it_a_duplicate() {
        let mut d = probing();
        d.observe(&probe(OTHER, a("2001:db8:1::1")));
        assert_eq!(d.poll(1).1, vec![Outcome::Duplicate(a("2001:db8:1::1"))]);
        assert_eq!(d.counters().duplicates, 1);
    }

    #[test]
    fn address_resolution_and_other_targets_are_not_duplicates() {
        let mut d = probing();
        // a solicitation from a unicast source (a host resolving the address): no
        let mut ns = probe(OTHER, a("2001:db8:1::1"));
        set_source(&mut ns, a("2001:db8:1::99"));
        assert!(ndisc(&ns).is_some(), "a valid solicitation");
        d.observe(&ns);
        // an advertisement for another address; one with a bad hop limit (not from
        // the link); one with a broken checksum
        d.observe(&neighbour_advertisement(OTHER, a("2001:db8:1::2"), false));
        let mut far = neighbour_advertisement(OTHER, a("2001:db8:1::1"), false);
        far[14 + 7] = 64;
        d.observe(&far);
        let mut bad = neighbour_advertisement(OTHER, a("2001:db8:1::1"), false);
        bad[14 + 40 + 2] ^= 0xff;
        d.observe(&bad);
        assert_eq!(d.poll(1_000).1, vec![Outcome::Unique(a("2001:db8:1::1"))]);
    }

    #[test]
    fn a_removed_address_gets_no_verdict_and_a_readded_one_is_probed_again() {
        let mut d = probing();
        d.cancel(a("2001:db8:1::1"));
        assert_eq!(d.poll(5_000), (vec![], vec![]));
        d.start(a("2001:db8:1::1"));
        assert_eq!(d.poll(6_000).0.len(), 1);
    }

    #[test]
    fn too_many_at_once_are_taken_without_a_probe() {
        let mut d = Dad::new(MAC);
        for i in 0..MAX_TENTATIVE + 2 {
            let ok = d.start(Ipv6Address::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i as u16 + 1));
            assert_eq!(ok, i < MAX_TENTATIVE);
        }
        assert_eq!(d.counters().unprobed, 2);
        assert_eq!(d.poll(0).0.len(), MAX_TENTATIVE);
    }

    #[test]
    fn garbage_never_panics() {
        let mut d = Dad::new(MAC);
        d.start(a("2001:db8:1::1"));
        let good = neighbour_advertisement(OTHER, a("2001:db8:1::1"), false);
        for len in 0..good.len() {
            d.observe(&good[..len]);
        }
        let mut x: u32 = 1;
        for _ in 0..2000 {
            let mut f = good.clone();
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let i = (x as usize) % f.len();
            f[i] ^= (x >> 8) as u8 | 1;
            d.observe(&f);
        }
    }

    /// Rewrites the IPv6 source of an ND frame and its ICMPv6 checksum.
    fn set_source(f: &mut [u8], src: Ipv6Address) {
        f[14 + 8..14 + 24].copy_from_slice(&src.octets());
        let dst = Ipv6Packet::new_checked(&f[14..]).unwrap().dst_addr();
        let len = f.len() - 54;
        let mut icmp = Icmpv6Packet::new_unchecked(&mut f[54..54 + len]);
        icmp.fill_checksum(&src, &dst);
    }
}
