//! Forwarding counters: per interface, per drop reason, ICMP and ARP.
//!
//! What `ip -s link` shows for forwarded traffic (Linux's `rtnl_link_stats64`:
//! `rx_packets`/`rx_bytes`/`tx_packets`/`tx_bytes`/`rx_dropped`), plus one counter per
//! [`DropReason`] (as `nstat`'s `IpInHdrErrors`, `IpOutNoRoutes`, `IpInAddrErrors`
//! group Linux's drops) and the ICMP/ARP counters of `/proc/net/snmp`
//! (`IcmpOutErrors`, `IcmpOutRateLimitGlobal`). Sized when the router is built.

use alloc::vec::Vec;
use core::fmt;

use crate::{DropReason, IfId};

/// Every drop reason, in counter order.
pub const DROP_REASONS: [DropReason; 12] = [
    DropReason::Malformed,
    DropReason::TtlExpired,
    DropReason::NoRoute,
    DropReason::TooBig,
    DropReason::NoNeighbour,
    DropReason::ConntrackFull,
    DropReason::Invalid,
    DropReason::NatExhausted,
    DropReason::Filtered,
    DropReason::TxFull,
    DropReason::Unsupported,
    DropReason::Martian,
];

/// The counter index of a drop reason.
const fn index(r: DropReason) -> usize {
    match r {
        DropReason::Malformed => 0,
        DropReason::TtlExpired => 1,
        DropReason::NoRoute => 2,
        DropReason::TooBig => 3,
        DropReason::NoNeighbour => 4,
        DropReason::ConntrackFull => 5,
        DropReason::Invalid => 6,
        DropReason::NatExhausted => 7,
        DropReason::Filtered => 8,
        DropReason::TxFull => 9,
        DropReason::Unsupported => 10,
        DropReason::Martian => 11,
    }
}

/// A short name for a drop reason, for printing.
pub const fn drop_name(r: DropReason) -> &'static str {
    match r {
        DropReason::Malformed => "malformed",
        DropReason::TtlExpired => "ttl_expired",
        DropReason::NoRoute => "no_route",
        DropReason::TooBig => "too_big",
        DropReason::NoNeighbour => "no_neighbour",
        DropReason::ConntrackFull => "conntrack_full",
        DropReason::Invalid => "invalid",
        DropReason::NatExhausted => "nat_exhausted",
        DropReason::Filtered => "filtered",
        DropReason::TxFull => "tx_full",
        DropReason::Unsupported => "unsupported",
        DropReason::Martian => "martian",
    }
}

/// Forwarding counters of one interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IfStats {
    /// Packets received on it and forwarded (or queued for ARP) elsewhere.
    pub rx_packets: u64,
    /// Their bytes (IP total length).
    pub rx_bytes: u64,
    /// Packets received on it and dropped by the forwarding path.
    pub rx_dropped: u64,
    /// Forwarded frames sent on it (each fragment or segment counts).
    pub tx_packets: u64,
    /// Their bytes (IP total length).
    pub tx_bytes: u64,
    /// Frames the link refused ([`crate::forward::TxFull`]).
    pub tx_dropped: u64,
}

/// All counters of the router.
#[derive(Clone, Debug)]
pub struct Stats {
    ifaces: Vec<IfStats>,
    drops: [u64; DROP_REASONS.len()],
    /// ICMP errors sent.
    pub icmp_errors: u64,
    /// ICMP errors not sent because of the global rate limit.
    pub icmp_rate_limited: u64,
    /// ICMP errors not sent because their destination had used its allowance.
    pub icmp_peer_limited: u64,
    /// TCP resets sent for rejected segments.
    pub resets: u64,
    /// ARP requests sent.
    pub arp_requests: u64,
    /// Packets queued waiting for ARP.
    pub arp_queued: u64,
    /// Frames given to the local stack.
    pub local: u64,
    /// IPv6 packets forwarded.
    pub ipv6_forwarded: u64,
    /// IPv6 packets dropped because their extension header chain could not be
    /// walked (also counted as [`DropReason::Malformed`]).
    pub ipv6_bad_exthdr: u64,
    /// ICMPv6 errors sent.
    pub icmp6_errors: u64,
}

impl Stats {
    /// Counters for `ifaces` interfaces, all zero.
    pub fn new(ifaces: usize) -> Self {
        Stats {
            ifaces: alloc::vec![IfStats::default(); ifaces],
            drops: [0; DROP_REASONS.len()],
            icmp_errors: 0,
            icmp_rate_limited: 0,
            icmp_peer_limited: 0,
            resets: 0,
            arp_requests: 0,
            arp_queued: 0,
            local: 0,
            ipv6_forwarded: 0,
            ipv6_bad_exthdr: 0,
            icmp6_errors: 0,
        }
    }

    /// The counters of `ifc` (zero for an unknown interface).
    pub fn iface(&self, ifc: IfId) -> IfStats {
        self.ifaces
            .get(usize::from(ifc.0))
            .copied()
            .unwrap_or_default()
    }

    /// Packets dropped for `reason`.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.drops.get(index(reason)).copied().unwrap_or(0)
    }

    /// All drops, whatever the reason.
    pub fn dropped_total(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// Each drop reason with its count.
    pub fn drops(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DROP_REASONS.iter().map(|&r| (r, self.dropped(r)))
    }

    pub(crate) fn drop(&mut self, input: Option<IfId>, reason: DropReason) {
        if let Some(c) = self.drops.get_mut(index(reason)) {
            *c = c.wrapping_add(1);
        }
        if let Some(s) = input.and_then(|i| self.ifaces.get_mut(usize::from(i.0))) {
            s.rx_dropped = s.rx_dropped.wrapping_add(1);
        }
    }

    pub(crate) fn rx(&mut self, ifc: IfId, bytes: usize) {
        if let Some(s) = self.ifaces.get_mut(usize::from(ifc.0)) {
            s.rx_packets = s.rx_packets.wrapping_add(1);
            s.rx_bytes = s.rx_bytes.wrapping_add(bytes as u64);
        }
    }

    pub(crate) fn tx(&mut self, ifc: IfId, bytes: usize) {
        if let Some(s) = self.ifaces.get_mut(usize::from(ifc.0)) {
            s.tx_packets = s.tx_packets.wrapping_add(1);
            s.tx_bytes = s.tx_bytes.wrapping_add(bytes as u64);
        }
    }

    pub(crate) fn tx_full(&mut self, ifc: IfId) {
        if let Some(s) = self.ifaces.get_mut(usize::from(ifc.0)) {
            s.tx_dropped = s.tx_dropped.wrapping_add(1);
        }
    }

    /// The counters of `ifc` formatted like the statistics block of `ip -s link`.
    pub fn link_display(&self, ifc: IfId) -> LinkStatsDisplay {
        LinkStatsDisplay(self.iface(ifc))
    }
}

/// The `RX:`/`TX:` lines of `ip -s link` for one interface.
pub struct LinkStatsDisplay(IfStats);

impl fmt::Display for LinkStatsDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.0;
        writeln!(f, "    RX:  bytes packets dropped")?;
        writeln!(
            f,
            "    {:>10} {:>7} {:>7}",
            s.rx_bytes, s.rx_packets, s.rx_dropped
        )?;
        writeln!(f, "    TX:  bytes packets dropped")?;
        write!(
            f,
            "    {:>10} {:>7} {:>7}",
            s.tx_bytes, s.tx_packets, s.tx_dropped
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn every_reason_has_its_own_counter() {
        let mut s = Stats::new(2);
        for (i, r) in DROP_REASONS.iter().enumerate() {
            assert_eq!(index(*r), i);
            for _ in 0..=i {
                s.drop(Some(IfId(1)), *r);
            }
        }
        for (i, r) in DROP_REASONS.iter().enumerate() {
            assert_eq!(s.dropped(*r), i as u64 + 1, "{}", drop_name(*r));
        }
        assert_eq!(s.iface(IfId(1)).rx_dropped, s.dropped_total());
        assert_eq!(s.iface(IfId(0)).rx_dropped, 0);
        // an unknown interface is ignored, not a panic
        s.rx(IfId(200), 10);
        assert_eq!(s.iface(IfId(200)), IfStats::default());
    }

    #[test]
    fn link_display() {
        let mut s = Stats::new(1);
        s.rx(IfId(0), 100);
        s.tx(IfId(0), 60);
        s.tx(IfId(0), 40);
        let t = s.link_display(IfId(0)).to_string();
        assert!(t.contains("       100       1       0"), "{t}");
        assert!(t.contains("       100       2       0"), "{t}");
    }
}
