//! The IPv6 fixed header (RFC 8200 §3): field offsets, address classes, the
//! pseudo-header sum.
//!
//! The fixed header is read with smoltcp's [`Ipv6Packet::new_checked`] (version
//! aside, it checks that the buffer holds the 40 bytes and the payload length says);
//! the extension headers after it are walked by [`crate::exthdr`].

use core::net::Ipv6Addr;

use smoltcp::wire::Ipv6Packet;

use crate::DropReason;

/// Length of the fixed header.
pub const HEADER_LEN: usize = 40;
/// Offset of the payload length.
pub const PAYLOAD_LEN: usize = 4;
/// Offset of the next header.
pub const NEXT_HEADER: usize = 6;
/// Offset of the hop limit.
pub const HOP_LIMIT: usize = 7;
/// Offset of the source address.
pub const SRC: usize = 8;
/// Offset of the destination address.
pub const DST: usize = 24;
/// The minimum link MTU (RFC 8200 §5): every link carries 1280 bytes.
pub const MIN_MTU: u16 = 1280;

/// Protocol numbers.
pub const PROTO_TCP: u8 = 6;
/// UDP.
pub const PROTO_UDP: u8 = 17;
/// ICMPv6.
pub const PROTO_ICMPV6: u8 = 58;

/// What [`parse`] read of a packet's fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Header + payload: the packet's length without link padding.
    pub total_len: usize,
    /// The first next-header value.
    pub next_header: u8,
    /// The hop limit.
    pub hop_limit: u8,
    /// The source.
    pub src: Ipv6Addr,
    /// The destination.
    pub dst: Ipv6Addr,
}

/// Reads the fixed header of `ip` (which may carry link padding after the payload):
/// version 6, the payload within the buffer. A jumbogram (payload length 0 with a
/// hop-by-hop header, RFC 2675) is [`DropReason::Unsupported`]: no link here carries
/// one.
pub fn parse(ip: &[u8]) -> Result<Header, DropReason> {
    let p = Ipv6Packet::new_checked(ip).map_err(|_| DropReason::Malformed)?;
    if p.version() != 6 {
        return Err(DropReason::Malformed);
    }
    let payload = usize::from(p.payload_len());
    if payload == 0 && u8::from(p.next_header()) == 0 {
        return Err(DropReason::Unsupported);
    }
    Ok(Header {
        total_len: HEADER_LEN + payload,
        next_header: u8::from(p.next_header()),
        hop_limit: p.hop_limit(),
        src: p.src_addr(),
        dst: p.dst_addr(),
    })
}

/// Reads the fixed header of `ip`, which may be only the start of a packet (a
/// quote): version 6 and 40 bytes; `total_len` is what the header says.
pub fn parse_prefix(ip: &[u8]) -> Result<Header, DropReason> {
    let hdr = ip.get(..HEADER_LEN).ok_or(DropReason::Malformed)?;
    if hdr.first().map(|b| b >> 4) != Some(6) {
        return Err(DropReason::Malformed);
    }
    let payload = hdr
        .get(PAYLOAD_LEN..PAYLOAD_LEN + 2)
        .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])));
    Ok(Header {
        total_len: HEADER_LEN + payload,
        next_header: hdr.get(NEXT_HEADER).copied().unwrap_or(0),
        hop_limit: hdr.get(HOP_LIMIT).copied().unwrap_or(0),
        src: src(hdr),
        dst: dst(hdr),
    })
}

/// The address at `at` in `b` (unspecified if out of bounds).
pub fn addr_at(b: &[u8], at: usize) -> Ipv6Addr {
    b.get(at..at + 16)
        .and_then(|s| <[u8; 16]>::try_from(s).ok())
        .map_or(Ipv6Addr::UNSPECIFIED, Ipv6Addr::from)
}

/// The source of a packet (unspecified if too short).
pub fn src(ip: &[u8]) -> Ipv6Addr {
    addr_at(ip, SRC)
}

/// The destination of a packet (unspecified if too short).
pub fn dst(ip: &[u8]) -> Ipv6Addr {
    addr_at(ip, DST)
}

/// fe80::/10.
pub fn is_link_local(a: Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// A source no router forwards from (Linux `ip6_forward`'s "security critical"
/// check, RFC 4291 §2.5.2/§2.5.3/§2.7): unspecified, loopback, multicast, or
/// link-local (which never leaves its link, RFC 4291 §2.5.6).
pub fn is_unforwardable_source(a: Ipv6Addr) -> bool {
    a.is_unspecified() || a.is_loopback() || a.is_multicast() || is_link_local(a)
}

/// A destination no router forwards to: unspecified, loopback, link-local, and any
/// multicast (the router does no multicast routing: those are the local stack's).
pub fn is_unforwardable_destination(a: Ipv6Addr) -> bool {
    a.is_unspecified() || a.is_loopback() || a.is_multicast() || is_link_local(a)
}

/// The solicited-node multicast address of `a` (RFC 4291 §2.7.1): ff02::1:ffXX:XXXX.
pub fn solicited_node(a: Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::from([
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, o[13], o[14], o[15],
    ])
}

/// The Ethernet address of an IPv6 multicast address (RFC 2464 §7): 33:33 + its last
/// four bytes.
pub fn multicast_mac(a: Ipv6Addr) -> [u8; 6] {
    let o = a.octets();
    [0x33, 0x33, o[12], o[13], o[14], o[15]]
}

/// The modified EUI-64 link-local address of a MAC (RFC 4291 appendix A), as the
/// local stack configures on each interface.
pub fn link_local_of(mac: [u8; 6]) -> Ipv6Addr {
    Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ])
}

/// The one's-complement sum of the IPv6 pseudo-header (RFC 8200 §8.1), not folded.
pub fn pseudo_header_sum(src: Ipv6Addr, dst: Ipv6Addr, proto: u8, l4_len: usize) -> u32 {
    let mut s = crate::checksum::sum(0, &src.octets());
    s = crate::checksum::sum(s, &dst.octets());
    let len = u32::try_from(l4_len).unwrap_or(u32::MAX);
    s = crate::checksum::sum(s, &len.to_be_bytes());
    crate::checksum::sum(s, &[0, 0, 0, proto])
}

/// Whether the ICMPv6/TCP/UDP checksum of the upper-layer message `l4` verifies.
pub fn l4_checksum_ok(src: Ipv6Addr, dst: Ipv6Addr, proto: u8, l4: &[u8]) -> bool {
    let s = pseudo_header_sum(src, dst, proto, l4.len());
    crate::checksum::fold(crate::checksum::sum(s, l4)) == 0xffff
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn the_fixed_header_is_checked() {
        let mut p = alloc::vec![0u8; 48];
        p[0] = 0x60;
        p[5] = 8;
        p[6] = 59;
        p[7] = 64;
        let h = parse(&p).unwrap();
        assert_eq!(h.total_len, 48);
        assert_eq!(h.hop_limit, 64);
        assert_eq!(h.next_header, 59);
        // payload length beyond the buffer
        p[5] = 9;
        assert_eq!(parse(&p), Err(DropReason::Malformed));
        p[5] = 8;
        // version 4 in an IPv6 frame
        p[0] = 0x40;
        assert_eq!(parse(&p), Err(DropReason::Malformed));
        // too short for the fixed header
        assert_eq!(parse(&p[..39]), Err(DropReason::Malformed));
        // a jumbogram
        p[0] = 0x60;
        p[4..6].copy_from_slice(&[0, 0]);
        p[6] = 0;
        assert_eq!(parse(&p), Err(DropReason::Unsupported));
    }

    #[test]
    fn address_classes() {
        assert!(is_link_local(a("fe80::1")));
        assert!(is_link_local(a("febf::1")));
        assert!(!is_link_local(a("fec0::1")));
        assert!(is_unforwardable_source(a("ff02::1")));
        assert!(is_unforwardable_source(a("::1")));
        assert!(is_unforwardable_source(a("::")));
        assert!(is_unforwardable_source(a("fe80::2")));
        assert!(!is_unforwardable_source(a("2001:db8::1")));
        assert!(!is_unforwardable_destination(a("fd00::1")));
        assert_eq!(
            solicited_node(a("2001:db8::1:2345:6789")),
            a("ff02::1:ff45:6789")
        );
        assert_eq!(
            multicast_mac(a("ff02::1:ff45:6789")),
            [0x33, 0x33, 0xff, 0x45, 0x67, 0x89]
        );
        assert_eq!(
            link_local_of([0x00, 0x16, 0x3e, 1, 2, 3]),
            a("fe80::216:3eff:fe01:203")
        );
    }
}
