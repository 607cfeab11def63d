//! ICMP error messages the router sends about packets it cannot forward.
//!
//! RFC 792 (formats), RFC 1812 §4.3.2.3 (quote as much of the offending datagram as
//! fits in 576 bytes), §4.3.2.7 (never about an ICMP error, a non-first fragment, a
//! broadcast/multicast destination, or a source that is not a unique host), RFC 1191
//! §4 (the next-hop MTU in fragmentation-needed), as Linux's `__icmp_send`
//! (`net/ipv4/icmp.c`). Rate limited by a global token bucket like Linux's
//! `icmp_global_allow` (`net.ipv4.icmp_msgs_per_sec` 1000, `icmp_msgs_burst` 50).

use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr};

use crate::checksum;
use crate::ipv4::{self, put16, PROTO_ICMP};
use crate::link::ETH_LEN;
use crate::{DropReason, Millis};

/// Largest ICMP error datagram (RFC 1812 §4.3.2.3).
pub const MAX_ERROR_LEN: usize = 576;
/// Length of the IP + ICMP headers of an error.
const HEADERS_LEN: usize = 20 + 8;

/// Which error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcmpError {
    /// Type 11 code 0: TTL exceeded in transit.
    TimeExceeded,
    /// Type 3 code 0: no route to the network.
    NetUnreachable,
    /// Type 3 code 1: the host did not answer ARP.
    HostUnreachable,
    /// Type 3 code 3.
    PortUnreachable,
    /// Type 3 code 4: fragmentation needed and DF set, with the next-hop MTU.
    FragNeeded {
        /// The MTU of the next hop.
        mtu: u16,
    },
}

impl IcmpError {
    fn type_code(self) -> (u8, u8) {
        match self {
            IcmpError::TimeExceeded => (11, 0),
            IcmpError::NetUnreachable => (3, 0),
            IcmpError::HostUnreachable => (3, 1),
            IcmpError::PortUnreachable => (3, 3),
            IcmpError::FragNeeded { .. } => (3, 4),
        }
    }

    /// The drop reason that goes with it.
    pub fn reason(self) -> DropReason {
        match self {
            IcmpError::TimeExceeded => DropReason::TtlExpired,
            IcmpError::NetUnreachable => DropReason::NoRoute,
            IcmpError::HostUnreachable => DropReason::NoNeighbour,
            IcmpError::PortUnreachable => DropReason::Filtered,
            IcmpError::FragNeeded { .. } => DropReason::TooBig,
        }
    }
}

/// Whether RFC 1812 §4.3.2.7 allows an error about the IPv4 packet starting with
/// `head` (its header and at least the first bytes of its payload).
pub fn may_report(head: &[u8]) -> bool {
    let hl = ipv4::header_len(head);
    if hl < 20 || head.len() < hl || ipv4::frag_offset(head) != 0 {
        return false;
    }
    let (src, dst) = (ipv4::src(head), ipv4::dst(head));
    if ipv4::is_martian_source(src) || dst.is_broadcast() || dst.is_multicast() {
        return false;
    }
    if head.get(ipv4::PROTO) == Some(&PROTO_ICMP) {
        // Linux: an unreadable or unknown type, or an error type, gets no error
        return match head.get(hl) {
            Some(&t) => t <= 18 && !matches!(t, 3 | 4 | 5 | 11 | 12),
            None => false,
        };
    }
    true
}

/// Builds, after a 14-byte Ethernet header whose addresses the caller fills in, an
/// ICMP error from `src` about the packet whose first bytes are `head` followed by
/// `rest` (so the original header can come from a copy taken before the packet was
/// edited). The quote is cut so that the datagram fits `max_len` (at most
/// [`MAX_ERROR_LEN`]). `id` is the IP identification. Returns the frame length, or
/// `None` if `buf` is too small or `head` has no IPv4 header.
pub fn build(
    buf: &mut [u8],
    kind: IcmpError,
    src: Ipv4Addr,
    id: u16,
    head: &[u8],
    rest: &[u8],
    max_len: usize,
) -> Option<usize> {
    if ipv4::header_len(head) < 20 || head.len() < 20 {
        return None;
    }
    let dst = ipv4::src(head);
    let max_len = max_len.min(MAX_ERROR_LEN);
    let quote_len = (head.len() + rest.len()).min(max_len.checked_sub(HEADERS_LEN)?);
    let ip_len = HEADERS_LEN + quote_len;
    let frame = buf.get_mut(..ETH_LEN + ip_len)?;
    frame.fill(0);
    put16(frame, 12, 0x0800);
    let ip = frame.get_mut(ETH_LEN..)?;
    let (hdr, icmp) = ip.split_at_mut(20);
    hdr.copy_from_slice(&[
        0x45, 0, 0, 0, 0, 0, 0, 0, 64, PROTO_ICMP, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ]);
    put16(hdr, ipv4::TOTAL_LEN, u16::try_from(ip_len).ok()?);
    put16(hdr, ipv4::ID, id);
    hdr.get_mut(ipv4::SRC..ipv4::SRC + 4)?
        .copy_from_slice(&src.octets());
    hdr.get_mut(ipv4::DST..ipv4::DST + 4)?
        .copy_from_slice(&dst.octets());
    ipv4::fill_header_checksum(hdr);
    let (t, c) = kind.type_code();
    *icmp.first_mut()? = t;
    *icmp.get_mut(1)? = c;
    if let IcmpError::FragNeeded { mtu } = kind {
        put16(icmp, 6, mtu);
    }
    let quote = icmp.get_mut(8..)?;
    let from_head = quote_len.min(head.len());
    quote
        .get_mut(..from_head)?
        .copy_from_slice(head.get(..from_head)?);
    let from_rest = quote_len - from_head;
    quote
        .get_mut(from_head..)?
        .copy_from_slice(rest.get(..from_rest)?);
    let c = checksum::checksum(icmp);
    put16(icmp, 2, c);
    Some(ETH_LEN + ip_len)
}

/// A token bucket: `per_sec` tokens a second, at most `burst` saved.
#[derive(Clone, Debug)]
pub struct RateLimiter {
    per_sec: u64,
    burst: u64,
    tokens: u64,
    last: Millis,
}

impl RateLimiter {
    /// A full bucket.
    pub fn new(per_sec: u32, burst: u32) -> Self {
        RateLimiter {
            per_sec: u64::from(per_sec),
            burst: u64::from(burst),
            tokens: u64::from(burst),
            last: 0,
        }
    }

    /// Takes a token if there is one at `now`.
    pub fn allow(&mut self, now: Millis) -> bool {
        let elapsed = now.saturating_sub(self.last);
        let add = elapsed.saturating_mul(self.per_sec) / 1000;
        if add > 0 {
            self.tokens = self.tokens.saturating_add(add).min(self.burst);
            self.last = now;
        } else if now < self.last {
            self.last = now; // a clock that went back: restart from here
        }
        if self.tokens > 0 {
            self.tokens -= 1;
            true
        } else {
            false
        }
    }
}

/// Peers whose ICMP errors are limited one by one (direct-mapped by address).
const PEER_SLOTS: usize = 256;
/// One ICMP error a second to a peer (Linux `icmp_ratelimit`, 1000 ms) ...
const PEER_INTERVAL_MS: Millis = 1000;
/// ... with six saved up (Linux's `XRLIM_BURST_FACTOR`).
const PEER_BURST: u32 = 6;

/// Linux's per-destination limit on ICMP errors (`inet_peer_xrlim_allow`): each
/// peer gets [`PEER_BURST`] at once and then one a second, so a host probing closed
/// ports or sending TTL-1 packets fast uses up its own allowance, not everybody's
/// (the global bucket alone let one host stop them for all). Peers live in a fixed,
/// direct-mapped table: a peer that loses its slot to another starts again with a
/// full allowance, so the table can only make the limit looser, never deny a peer.
#[derive(Clone, Debug)]
pub struct PeerLimiter {
    slots: Vec<Option<(IpAddr, RateLimiter)>>,
    seed: u32,
}

impl PeerLimiter {
    /// An empty table; `seed` keys the slot choice (an outsider should not be able to
    /// aim at another peer's slot).
    pub fn new(seed: u32) -> Self {
        PeerLimiter {
            slots: alloc::vec![None; PEER_SLOTS],
            seed,
        }
    }

    /// Whether an ICMP (or ICMPv6) error may go to `peer` at `now`.
    pub fn allow(&mut self, peer: impl Into<IpAddr>, now: Millis) -> bool {
        self.allow_every(peer, now, PEER_INTERVAL_MS)
    }

    /// [`PeerLimiter::allow`] with one error every `interval_ms` for a peer new to
    /// its slot (Linux's `inet_peer_xrlim_allow` timeout; ICMPv6 scales it by the
    /// route's prefix length).
    pub fn allow_every(
        &mut self,
        peer: impl Into<IpAddr>,
        now: Millis,
        interval_ms: Millis,
    ) -> bool {
        let peer = peer.into();
        let key = match peer {
            IpAddr::V4(a) => u32::from(a),
            IpAddr::V6(a) => {
                let b = u128::from(a);
                (b as u32) ^ ((b >> 32) as u32) ^ ((b >> 64) as u32) ^ ((b >> 96) as u32)
            }
        };
        let h = (key ^ self.seed).wrapping_mul(0x9e37_79b1) >> 24;
        let Some(slot) = self.slots.get_mut(h as usize % PEER_SLOTS) else {
            return true;
        };
        match slot {
            Some((ip, r)) if *ip == peer => r.allow(now),
            _ => {
                let per_sec = u32::try_from(1000 / interval_ms.max(1)).unwrap_or(1000);
                let mut r = RateLimiter::new(per_sec, PEER_BURST);
                r.last = now;
                let ok = r.allow(now);
                *slot = Some((peer, r));
                ok
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::testutil::*;

    #[test]
    fn time_exceeded_quotes_and_checksums() {
        let orig = ipv4(
            A,
            B,
            17,
            1,
            0x1234,
            false,
            &[],
            &udp(A, B, 9, 53, &[0xab; 30]),
        );
        let mut buf = [0u8; 700];
        let n = build(
            &mut buf,
            IcmpError::TimeExceeded,
            ip([192, 168, 1, 1]),
            5,
            &orig[..28],
            &orig[28..],
            576,
        )
        .unwrap();
        let ipk = &buf[14..n];
        assert!(header_ok(ipk));
        assert_eq!(ipv4::src(ipk), ip([192, 168, 1, 1]));
        assert_eq!(ipv4::dst(ipk), ip(A));
        assert_eq!(ipk[9], 1);
        let icmp = &ipk[20..];
        assert_eq!((icmp[0], icmp[1]), (11, 0));
        assert_eq!(checksum::checksum(icmp), 0);
        assert_eq!(&icmp[8..], &orig[..], "whole (short) datagram quoted");
    }

    #[test]
    fn quote_is_cut_at_576_and_mtu_is_carried() {
        let orig = ipv4(A, B, 17, 9, 1, true, &[], &udp(A, B, 9, 53, &[7; 1400]));
        let mut buf = [0u8; 700];
        let n = build(
            &mut buf,
            IcmpError::FragNeeded { mtu: 1400 },
            ip([10, 0, 0, 2]),
            5,
            &orig[..28],
            &orig[28..],
            1500,
        )
        .unwrap();
        assert_eq!(n - 14, 576);
        let icmp = &buf[14 + 20..n];
        assert_eq!((icmp[0], icmp[1]), (3, 4));
        assert_eq!(u16::from_be_bytes([icmp[6], icmp[7]]), 1400);
        assert_eq!(checksum::checksum(icmp), 0);
        assert_eq!(&icmp[8..], &orig[..548]);
    }

    #[test]
    fn never_about_errors_fragments_or_broadcast() {
        let echo = ipv4(A, B, 1, 9, 1, false, &[], &[8, 0, 0, 0, 0, 1, 0, 1]);
        assert!(may_report(&echo));
        let err = ipv4(A, B, 1, 9, 1, false, &[], &[3, 1, 0, 0, 0, 0, 0, 0]);
        assert!(!may_report(&err));
        let mut frag = ipv4(A, B, 17, 9, 1, false, &[], &[0; 8]);
        frag[7] = 1;
        assert!(!may_report(&frag));
        let bcast = ipv4(A, [255; 4], 17, 9, 1, false, &[], &[0; 8]);
        assert!(!may_report(&bcast));
        let mcast = ipv4([224, 0, 0, 5], B, 17, 9, 1, false, &[], &[0; 8]);
        assert!(!may_report(&mcast));
        assert!(!may_report(&echo[..20]), "ICMP type unreadable");
    }

    #[test]
    fn each_peer_has_its_own_allowance() {
        let mut p = PeerLimiter::new(0x1234_5678);
        let a = Ipv4Addr::new(203, 0, 113, 9);
        let b = Ipv4Addr::new(192, 168, 1, 100);
        // a host probing fast gets six at once, then one a second
        let sent = (0..1000).filter(|i| p.allow(a, 10_000 + i / 10)).count();
        assert_eq!(sent, 6);
        assert!(p.allow(a, 11_000));
        assert!(!p.allow(a, 11_500));
        // and another host is not affected
        assert_eq!((0..6).filter(|_| p.allow(b, 11_500)).count(), 6);
        assert!(!p.allow(b, 11_500));
    }

    #[test]
    fn bucket_burst_then_rate() {
        let mut r = RateLimiter::new(1000, 50);
        let sent = (0..100).filter(|_| r.allow(10_000)).count();
        assert_eq!(sent, 50, "the burst");
        assert!(!r.allow(10_000));
        assert!(r.allow(10_001), "one token a millisecond");
        assert!(!r.allow(10_001));
        let sent = (0..100).filter(|_| r.allow(10_011)).count();
        assert_eq!(sent, 10);
        let mut slow = RateLimiter::new(3, 1);
        assert!(slow.allow(0));
        assert!(!slow.allow(300));
        assert!(slow.allow(334), "a token per 333 ms");
    }
}
