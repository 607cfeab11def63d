//! IPv4 header helpers shared by the forwarding path: offsets (and the TCP header's,
//! [`tcp`]), address classes, header checksum, TCP/UDP pseudo-header sums.
//!
//! RFC 791 §3.1 (header layout), RFC 1122 §3.2.1.3 and RFC 1812 §5.3.7 (addresses a
//! router must not forward: Linux's `ipv4_is_zeronet`/`loopback`/`multicast`/
//! `lbcast` in `include/linux/in.h`, class E as `ipv4_is_reserved`-ish), RFC 793
//! §3.1/RFC 768 (the pseudo-header). Callers have checked the header with
//! `smoltcp::wire::Ipv4Packet::new_checked`; these helpers still use checked access.

use core::net::Ipv4Addr;

use crate::checksum;

/// Offset of the total length.
pub const TOTAL_LEN: usize = 2;
/// Offset of the identification.
pub const ID: usize = 4;
/// Offset of the word holding the flags and the fragment offset.
pub const FRAG: usize = 6;
/// Don't Fragment, in the [`FRAG`] word.
pub const DF: u16 = 0x4000;
/// More Fragments, in the [`FRAG`] word.
pub const MF: u16 = 0x2000;
/// The fragment offset (in 8-byte units), in the [`FRAG`] word.
pub const FRAG_OFFSET: u16 = 0x1fff;
/// Offset of the TTL byte.
pub const TTL: usize = 8;
/// Offset of the protocol byte.
pub const PROTO: usize = 9;
/// Offset of the header checksum.
pub const CHECKSUM: usize = 10;
/// Offset of the source address.
pub const SRC: usize = 12;
/// Offset of the destination address.
pub const DST: usize = 16;
/// Length of a header without options.
pub const MIN_HEADER_LEN: usize = 20;
/// IP protocol number of ICMP.
pub const PROTO_ICMP: u8 = 1;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

/// The TCP header (RFC 9293 section 3.1): offsets from its start.
pub mod tcp {
    /// Offset of the sequence number.
    pub const SEQ: usize = 4;
    /// Offset of the acknowledgment number.
    pub const ACK: usize = 8;
    /// Offset of the data offset (high nibble: the header length in 32-bit words).
    pub const DATA_OFFSET: usize = 12;
    /// Offset of the flags ([`crate::flow::tcp_flag`]).
    pub const FLAGS: usize = 13;
    /// Offset of the window.
    pub const WINDOW: usize = 14;
    /// Offset of the checksum.
    pub const CHECKSUM: usize = 16;
    /// Length of a header without options.
    pub const MIN_HEADER_LEN: usize = 20;

    /// The header length in bytes its data offset gives, if that byte is there.
    pub fn header_len(tcp: &[u8]) -> Option<usize> {
        Some(usize::from(tcp.get(DATA_OFFSET)? >> 4) * 4)
    }
}

/// The source and destination ports, the first four bytes of a TCP or UDP header (and
/// of the part of one an ICMP error quotes), if there.
#[inline]
pub fn ports(l4: &[u8]) -> Option<(u16, u16)> {
    Some((be16(l4, 0)?, be16(l4, 2)?))
}

/// Reads a big-endian u16 at `at`, if there.
#[inline]
pub fn be16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([*s.first()?, *s.get(1)?]))
}

/// Writes a big-endian u16 at `at`, if there.
#[inline]
pub fn put16(b: &mut [u8], at: usize, v: u16) {
    if let Some(s) = at.checked_add(2).and_then(|end| b.get_mut(at..end)) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

/// Reads a big-endian u32 at `at`, if there.
#[inline]
pub fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    let a: [u8; 4] = s.try_into().ok()?;
    Some(u32::from_be_bytes(a))
}

/// The header length in bytes (IHL × 4).
pub fn header_len(ip: &[u8]) -> usize {
    usize::from(ip.first().map_or(0, |b| b & 0x0f)) * 4
}

/// The source address.
#[inline]
pub fn src(ip: &[u8]) -> Ipv4Addr {
    addr_at(ip, SRC)
}

/// The destination address.
#[inline]
pub fn dst(ip: &[u8]) -> Ipv4Addr {
    addr_at(ip, DST)
}

#[inline]
fn addr_at(ip: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::from_bits(be32(ip, at).unwrap_or(0))
}

/// The fragment offset in bytes.
pub fn frag_offset(ip: &[u8]) -> usize {
    usize::from(be16(ip, FRAG).unwrap_or(0) & FRAG_OFFSET) * 8
}

/// Recomputes the header checksum of `ip` (header length from its IHL).
pub fn fill_header_checksum(ip: &mut [u8]) {
    let hl = header_len(ip);
    put16(ip, CHECKSUM, 0);
    if let Some(h) = ip.get(..hl) {
        let c = checksum::checksum(h);
        put16(ip, CHECKSUM, c);
    }
}

/// Whether the options of `header` (a whole IPv4 header) are well formed TLVs
/// (RFC 791 §3.1: END, NOP, or type-length-value with length ≥ 2 inside the header),
/// the structural part of Linux's `ip_options_compile`.
#[inline]
pub fn options_ok(header: &[u8]) -> bool {
    let Some(opts) = header.get(MIN_HEADER_LEN..) else {
        return false;
    };
    let mut i = 0;
    while let Some(&kind) = opts.get(i) {
        match kind {
            0 => return true,
            1 => i += 1,
            _ => match opts.get(i + 1) {
                Some(&len) if len >= 2 && i + usize::from(len) <= opts.len() => {
                    i += usize::from(len)
                }
                _ => return false,
            },
        }
    }
    true
}

/// Whether a packet from `ip` can never be valid (RFC 1812 §5.3.7): 0/8, 127/8,
/// multicast, class E and limited broadcast.
pub fn is_martian_source(ip: Ipv4Addr) -> bool {
    let [a, ..] = ip.octets();
    a == 0 || a == 127 || a >= 224
}

/// Whether a packet to `ip` must never be forwarded: 0/8, 127/8, class E
/// (multicast and limited broadcast go to the local stack before this check).
pub fn is_martian_destination(ip: Ipv4Addr) -> bool {
    let [a, ..] = ip.octets();
    a == 0 || a == 127 || a >= 240
}

/// The unfolded one's-complement sum of the TCP/UDP pseudo-header.
pub fn pseudo_header_sum(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, l4_len: usize) -> u32 {
    let s = checksum::sum(0, &src.octets());
    let s = checksum::sum(s, &dst.octets());
    // the length field is 16 bits: a hostile length cannot be larger after the
    // header checks, but truncating is the on-the-wire meaning anyway
    let len = (l4_len & 0xffff) as u32;
    s + u32::from(proto) + len
}

/// Where the L4 checksum field of `proto` is, from the start of the L4 header.
pub fn l4_checksum_offset(proto: u8) -> Option<usize> {
    match proto {
        PROTO_TCP => Some(tcp::CHECKSUM),
        PROTO_UDP => Some(6),
        _ => None,
    }
}

/// Completes a partial (`csum_blank`) TCP/UDP checksum of `ip` in software: the field
/// holds the pseudo-header sum, so the sum over the segment *including* that field is
/// the full sum. Returns `false` if the packet is neither TCP nor UDP, is a
/// non-first fragment, or too short for its L4 header.
pub fn complete_partial_checksum(ip: &mut [u8]) -> bool {
    let hl = header_len(ip);
    let proto = ip.get(PROTO).copied().unwrap_or(0);
    let Some(off) = l4_checksum_offset(proto) else {
        return false;
    };
    if frag_offset(ip) != 0 {
        return false;
    }
    let Some(l4) = ip.get_mut(hl..) else {
        return false;
    };
    if l4.len() < off + 2 {
        return false;
    }
    let mut c = !checksum::fold(checksum::sum(0, l4));
    if proto == PROTO_UDP && c == 0 {
        c = 0xffff; // RFC 768: zero means "no checksum"
    }
    put16(l4, off, c);
    true
}

/// Whether the TCP/UDP checksum of `ip` (a whole, unfragmented packet) verifies.
pub fn l4_checksum_ok(ip: &[u8]) -> bool {
    let hl = header_len(ip);
    let proto = ip.get(PROTO).copied().unwrap_or(0);
    let Some(l4) = ip.get(hl..) else { return false };
    let s = pseudo_header_sum(src(ip), dst(ip), proto, l4.len());
    checksum::fold(checksum::sum(s, l4)) == 0xffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn martians() {
        for a in [
            [0, 1, 2, 3],
            [127, 0, 0, 1],
            [224, 0, 0, 1],
            [240, 0, 0, 1],
            [255; 4],
        ] {
            assert!(is_martian_source(Ipv4Addr::from(a)), "{a:?}");
        }
        assert!(!is_martian_source(Ipv4Addr::new(192, 168, 1, 2)));
        assert!(is_martian_destination(Ipv4Addr::new(127, 0, 0, 1)));
        assert!(is_martian_destination(Ipv4Addr::new(0, 0, 0, 0)));
        assert!(is_martian_destination(Ipv4Addr::new(250, 0, 0, 1)));
        assert!(!is_martian_destination(Ipv4Addr::new(8, 8, 8, 8)));
    }

    #[test]
    fn partial_checksum_completion_matches_full() {
        // UDP 10.0.0.2:1234 -> 192.0.2.1:53, 4 bytes of payload
        let mut ip = [
            0x45, 0, 0, 32, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 2, 192, 0, 2, 1, // IP
            0x04, 0xd2, 0x00, 0x35, 0x00, 0x0c, 0x00, 0x00, // UDP
            0xde, 0xad, 0xbe, 0xef,
        ];
        fill_header_checksum(&mut ip);
        let partial = checksum::fold(pseudo_header_sum(
            Ipv4Addr::new(10, 0, 0, 2),
            Ipv4Addr::new(192, 0, 2, 1),
            17,
            12,
        ));
        put16(&mut ip, 26, partial);
        assert!(!l4_checksum_ok(&ip));
        assert!(complete_partial_checksum(&mut ip));
        assert!(l4_checksum_ok(&ip));
        // ICMP has no pseudo-header checksum to complete
        ip[PROTO] = 1;
        assert!(!complete_partial_checksum(&mut ip));
    }

    #[test]
    fn options_structure() {
        let h = |o: &[u8]| {
            let mut v = alloc::vec![0x45u8; 20];
            v.extend_from_slice(o);
            v
        };
        assert!(options_ok(&h(&[])));
        assert!(options_ok(&h(&[1, 1, 1, 0])));
        assert!(options_ok(&h(&[0x83, 7, 4, 1, 2, 3, 4, 0])));
        assert!(options_ok(&h(&[0, 0xff, 0xff, 0xff])), "after END: padding");
        assert!(
            !options_ok(&h(&[0x83, 9, 4, 1, 2, 3, 4, 0])),
            "runs past the header"
        );
        assert!(!options_ok(&h(&[0x83, 1, 1, 1])), "length below 2");
        assert!(!options_ok(&h(&[1, 1, 1, 0x44])), "length missing");
    }

    #[test]
    fn accessors_are_total() {
        assert_eq!(be16(&[1], 0), None);
        assert_eq!(be16(&[1, 2], usize::MAX), None);
        assert_eq!(header_len(&[]), 0);
        assert_eq!(src(&[0x45]), Ipv4Addr::UNSPECIFIED);
        let mut b = [0u8; 3];
        put16(&mut b, 2, 0xffff);
        assert_eq!(b, [0; 3]);
    }
}
