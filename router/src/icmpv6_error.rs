//! ICMPv6 error messages the router sends about packets it cannot forward.
//!
//! RFC 4443 §3 (formats), §2.4 (c) (quote as much of the packet as fits in the
//! minimum MTU, 1280 bytes), §2.4 (e) (never about an ICMPv6 error, nor about a
//! packet to a multicast address, nor from an address that is not one node's, but
//! packet-too-big and the unrecognised-option parameter problem may answer a
//! multicast), as Linux's `icmp6_send` and `is_ineligible` (`net/ipv6/icmp.c`).
//! Rate limiting is the router's (the global bucket the IPv4 errors use, Linux's
//! `icmp_global_allow` being shared by both families, then the per-destination
//! limit), except for packet-too-big, which is never limited (Linux's default
//! `icmpv6_ratemask` "0-1,3-127": path MTU discovery depends on it).

use core::net::Ipv6Addr;

use crate::exthdr;
use crate::ipv4::put16;
use crate::ipv6::{self, HEADER_LEN, PROTO_ICMPV6};
use crate::link::ETH_LEN;
use crate::DropReason;

/// Largest ICMPv6 error datagram (RFC 4443 §2.4 (c)).
pub const MAX_ERROR_LEN: usize = 1280;
/// The IPv6 + ICMPv6 headers of an error.
const HEADERS_LEN: usize = HEADER_LEN + 8;

/// Which error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Icmpv6Error {
    /// Type 1 code 0: no route to the destination.
    NoRoute,
    /// Type 1 code 1: administratively prohibited.
    AdminProhibited,
    /// Type 1 code 2: beyond the scope of the source address (a link-local source
    /// to a destination off its link).
    BeyondScope,
    /// Type 1 code 3: the neighbour did not answer.
    AddressUnreachable,
    /// Type 1 code 4: port unreachable (fw4's `reject`).
    PortUnreachable,
    /// Type 2: larger than the next hop's MTU.
    PacketTooBig {
        /// The MTU of the next hop.
        mtu: u16,
    },
    /// Type 3 code 0: hop limit exceeded in transit.
    HopLimitExceeded,
    /// Type 4 code 2: an unrecognised IPv6 option, at `pointer` in the packet.
    UnknownOption {
        /// Offset of the option in the packet.
        pointer: u32,
        /// The option's action bits were `10`: reported even to a multicast
        /// destination (RFC 4443 §2.4 (e.3)).
        to_multicast: bool,
    },
}

impl Icmpv6Error {
    /// Its type and code.
    pub fn type_code(self) -> (u8, u8) {
        match self {
            Icmpv6Error::NoRoute => (1, 0),
            Icmpv6Error::AdminProhibited => (1, 1),
            Icmpv6Error::BeyondScope => (1, 2),
            Icmpv6Error::AddressUnreachable => (1, 3),
            Icmpv6Error::PortUnreachable => (1, 4),
            Icmpv6Error::PacketTooBig { .. } => (2, 0),
            Icmpv6Error::HopLimitExceeded => (3, 0),
            Icmpv6Error::UnknownOption { .. } => (4, 2),
        }
    }

    /// Whether the rate limits apply to it (all but packet-too-big).
    pub fn is_rate_limited(self) -> bool {
        !matches!(self, Icmpv6Error::PacketTooBig { .. })
    }

    /// The drop reason that goes with it.
    pub fn reason(self) -> DropReason {
        match self {
            Icmpv6Error::NoRoute => DropReason::NoRoute,
            Icmpv6Error::AdminProhibited | Icmpv6Error::PortUnreachable => DropReason::Filtered,
            Icmpv6Error::BeyondScope => DropReason::Martian,
            Icmpv6Error::AddressUnreachable => DropReason::NoNeighbour,
            Icmpv6Error::PacketTooBig { .. } => DropReason::TooBig,
            Icmpv6Error::HopLimitExceeded => DropReason::TtlExpired,
            Icmpv6Error::UnknownOption { .. } => DropReason::Malformed,
        }
    }
}

/// Whether RFC 4443 §2.4 (e) allows an error of `kind` about the IPv6 packet `orig`
/// (as it arrived, at least its fixed header).
pub fn may_report(kind: Icmpv6Error, orig: &[u8]) -> bool {
    let Ok(h) = ipv6::parse_prefix(orig) else {
        return false;
    };
    if h.src.is_unspecified() || h.src.is_multicast() {
        return false; // not one node's address
    }
    let multicast_ok = matches!(
        kind,
        Icmpv6Error::PacketTooBig { .. }
            | Icmpv6Error::UnknownOption {
                to_multicast: true,
                ..
            }
    );
    if h.dst.is_multicast() && !multicast_ok {
        return false;
    }
    // never about an ICMPv6 error (Linux's `is_ineligible`: a chain it cannot walk
    // is not a reason to be silent, an unreadable ICMPv6 type is)
    match exthdr::walk(orig, h.next_header) {
        Ok(u) if u.proto == PROTO_ICMPV6 && u.has_l4() => {
            matches!(orig.get(u.offset), Some(&t) if t & 0x80 != 0)
        }
        _ => true,
    }
}

/// Builds, after a 14-byte Ethernet header whose addresses the caller fills in, an
/// ICMPv6 error from `src` to `orig`'s source quoting `orig` (cut to fit `max_len`,
/// at most [`MAX_ERROR_LEN`]). Returns the frame length, or `None` if `buf` is too
/// small or `orig` is not an IPv6 packet.
pub fn build(
    buf: &mut [u8],
    kind: Icmpv6Error,
    src: Ipv6Addr,
    orig: &[u8],
    max_len: usize,
) -> Option<usize> {
    if orig.len() < HEADER_LEN {
        return None;
    }
    let dst = ipv6::src(orig);
    let max_len = max_len.clamp(usize::from(ipv6::MIN_MTU), MAX_ERROR_LEN);
    let quote_len = orig.len().min(max_len.checked_sub(HEADERS_LEN)?);
    let l4_len = 8 + quote_len;
    let frame = buf.get_mut(..ETH_LEN + HEADER_LEN + l4_len)?;
    frame.fill(0);
    put16(frame, 12, 0x86dd);
    let ip = frame.get_mut(ETH_LEN..)?;
    let (hdr, icmp) = ip.split_at_mut(HEADER_LEN);
    *hdr.first_mut()? = 0x60;
    put16(hdr, ipv6::PAYLOAD_LEN, u16::try_from(l4_len).ok()?);
    *hdr.get_mut(ipv6::NEXT_HEADER)? = PROTO_ICMPV6;
    *hdr.get_mut(ipv6::HOP_LIMIT)? = 64;
    hdr.get_mut(ipv6::SRC..ipv6::SRC + 16)?
        .copy_from_slice(&src.octets());
    hdr.get_mut(ipv6::DST..ipv6::DST + 16)?
        .copy_from_slice(&dst.octets());
    let (t, c) = kind.type_code();
    *icmp.first_mut()? = t;
    *icmp.get_mut(1)? = c;
    match kind {
        Icmpv6Error::PacketTooBig { mtu } => icmp
            .get_mut(4..8)?
            .copy_from_slice(&u32::from(mtu).to_be_bytes()),
        Icmpv6Error::UnknownOption { pointer, .. } => {
            icmp.get_mut(4..8)?.copy_from_slice(&pointer.to_be_bytes())
        }
        _ => {}
    }
    icmp.get_mut(8..)?.copy_from_slice(orig.get(..quote_len)?);
    let s = ipv6::pseudo_header_sum(src, dst, PROTO_ICMPV6, l4_len);
    let c = !crate::checksum::fold(crate::checksum::sum(s, icmp));
    put16(icmp, 2, c);
    Some(ETH_LEN + HEADER_LEN + l4_len)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::testutil::ipv6 as packet;

    const A: &str = "2001:db8:1::10";
    const B: &str = "2001:db8:2::20";

    #[test]
    fn errors_about_errors_and_multicast_are_never_sent() {
        let te = Icmpv6Error::HopLimitExceeded;
        let ptb = Icmpv6Error::PacketTooBig { mtu: 1280 };
        let udp = packet(A, B, 17, 64, &[0; 16]);
        assert!(may_report(te, &udp));
        let echo = packet(A, B, 58, 64, &[128, 0, 0, 0, 0, 1, 0, 1]);
        assert!(may_report(te, &echo), "an echo request is informational");
        let err = packet(A, B, 58, 64, &[1, 0, 0, 0, 0, 0, 0, 0]);
        assert!(!may_report(te, &err), "about an error");
        assert!(!may_report(ptb, &err));
        let short = packet(A, B, 58, 64, &[]);
        assert!(!may_report(te, &short), "unreadable ICMPv6 type");
        let mc = packet(A, "ff0e::1", 17, 64, &[0; 16]);
        assert!(!may_report(te, &mc));
        assert!(may_report(ptb, &mc), "packet-too-big answers multicast");
        let unspec = packet("::", B, 17, 64, &[0; 16]);
        assert!(!may_report(ptb, &unspec));
    }

    #[test]
    fn the_error_quotes_up_to_1280_bytes_with_a_valid_checksum() {
        let big = packet(A, B, 17, 64, &[7; 1400]);
        let mut buf = alloc::vec![0u8; ETH_LEN + MAX_ERROR_LEN];
        let from: Ipv6Addr = "2001:db8:2::1".parse().unwrap();
        let kind = Icmpv6Error::PacketTooBig { mtu: 1400 };
        let n = build(&mut buf, kind, from, &big, 1500).unwrap();
        assert_eq!(n, ETH_LEN + 1280);
        let ip = &buf[ETH_LEN..n];
        let h = ipv6::parse(ip).unwrap();
        assert_eq!((h.src, h.dst), (from, A.parse().unwrap()));
        assert_eq!(h.total_len, 1280);
        assert_eq!(&ip[40..42], &[2, 0]);
        assert_eq!(&ip[44..48], &[0, 0, 0x05, 0x78]);
        assert_eq!(&ip[48..], &big[..1232]);
        assert!(ipv6::l4_checksum_ok(h.src, h.dst, 58, &ip[40..]));
        // a small packet is quoted whole
        let small = packet(A, B, 17, 1, &[1; 20]);
        let n = build(&mut buf, Icmpv6Error::HopLimitExceeded, from, &small, 1500).unwrap();
        assert_eq!(n, ETH_LEN + 48 + 60);
        assert_eq!(&buf[ETH_LEN + 40..ETH_LEN + 42], &[3, 0]);
    }
}
