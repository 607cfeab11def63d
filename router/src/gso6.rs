//! Software TCP segmentation of an IPv6 GSO packet (`XEN_NETIF_GSO_TYPE_TCPV6`).
//!
//! The IPv6 counterpart of [`crate::gso`], as Linux's `tcp6_gso_segment` and
//! `ipv6_gso_segment` (`net/ipv6/tcpv6_offload.c`, `ip6_offload.c`): each segment
//! gets the IPv6 header and every extension header, the TCP header (options
//! included), `mss` payload bytes (the last gets the rest), its own payload length,
//! the sequence number advanced by the bytes before it, FIN and PSH only on the last
//! segment, CWR only on the first, and a full TCP checksum. A packet leaves cut
//! only when its output link does not take TCPv6 GSO (`feature-gso-tcpv6`) or
//! complete checksums; otherwise it leaves whole (`forward::v6`).

use crate::checksum;
use crate::exthdr::Upper;
use crate::ipv4::{put16, tcp};
use crate::ipv6::{self, HEADER_LEN, PROTO_TCP};
use crate::link::ETH_LEN;
use crate::DropReason;

/// The length of the headers (IPv6, extension headers, TCP) of a TCP/IPv6 packet
/// whose chain ended at `upper`, if it is one and unfragmented.
pub fn tcp_headers_len(ip: &[u8], upper: &Upper) -> Option<usize> {
    if upper.proto != PROTO_TCP || upper.fragment.is_some() {
        return None;
    }
    let thl = tcp::header_len(ip.get(upper.offset..)?)?;
    let end = upper.offset + thl;
    (thl >= tcp::MIN_HEADER_LEN && end <= ip.len()).then_some(end)
}

/// Cuts `frame` (Ethernet header and exactly one TCP/IPv6 packet, its chain ending
/// at `upper`) into segments of at most `mss` payload bytes, each written to `buf`
/// and passed to `emit`.
pub fn segment6(
    frame: &[u8],
    upper: &Upper,
    mss: u16,
    buf: &mut [u8],
    emit: impl FnMut(&mut [u8]) -> Result<(), DropReason>,
) -> Result<(), DropReason> {
    let ip = frame.get(ETH_LEN..).ok_or(DropReason::Malformed)?;
    let headers = tcp_headers_len(ip, upper).ok_or(DropReason::Unsupported)?;
    let (src, dst) = (ipv6::src(ip), ipv6::dst(ip));
    let t = upper.offset;
    crate::gso::cut(
        frame,
        headers,
        t,
        mss,
        buf,
        |seg_ip, _| {
            let payload =
                u16::try_from(seg_ip.len() - HEADER_LEN).map_err(|_| DropReason::Malformed)?;
            put16(seg_ip, ipv6::PAYLOAD_LEN, payload);
            Ok(ipv6::pseudo_header_sum(
                src,
                dst,
                PROTO_TCP,
                seg_ip.len() - t,
            ))
        },
        emit,
    )
}

/// Completes the partial TCP/UDP checksum of `ip` (its field holds the
/// pseudo-header sum, a `csum_blank` frame) for a link that cannot. `false` if it
/// is neither TCP nor UDP or too short.
pub fn complete_partial6(ip: &mut [u8], upper: &Upper) -> bool {
    let at = match upper.proto {
        PROTO_TCP => tcp::CHECKSUM,
        ipv6::PROTO_UDP => 6,
        _ => return false,
    };
    if !upper.has_l4() {
        return false;
    }
    let Some(l4) = ip.get_mut(upper.offset..) else {
        return false;
    };
    if l4.len() < at + 2 {
        return false;
    }
    let mut c = !checksum::fold(checksum::sum(0, l4));
    if c == 0 && upper.proto == ipv6::PROTO_UDP {
        c = 0xffff;
    }
    put16(l4, at, c);
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::exthdr;
    use crate::testutil::*;
    use alloc::vec::Vec;

    const A: &str = "2001:db8:1::100";
    const B: &str = "2001:db8:99::7";

    #[test]
    fn segments_are_correct_tcp_over_ipv6() {
        let payload: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
        let t = tcp(
            A,
            B,
            443,
            50000,
            0xffff_f000,
            ACK | PSH | FIN | CWR,
            &[1, 1, 1, 1],
            &payload,
        );
        // behind a destination options header
        let mut rest = alloc::vec![6, 0, 1, 4, 0, 0, 0, 0];
        rest.extend_from_slice(&t);
        let p = ipv6(A, B, 60, 63, &rest);
        let u = exthdr::walk(&p, 60).unwrap();
        let f = eth([2; 6], [4; 6], 0x86dd, &p);
        let mut buf = alloc::vec![0u8; 2000];
        let segs = emitted(|emit| segment6(&f, &u, 1428, &mut buf, emit));
        assert_eq!(segs.len(), 3);
        let mut data = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let ip = &s[14..];
            let h = ipv6::parse(ip).unwrap();
            assert_eq!(h.total_len, ip.len());
            assert_eq!(h.hop_limit, 63);
            assert_eq!(
                &ip[40..48],
                &[6, 0, 1, 4, 0, 0, 0, 0],
                "the extension header"
            );
            let seg = &ip[48..];
            assert!(ipv6::l4_checksum_ok(h.src, h.dst, 6, seg), "segment {i}");
            let seq = u32::from_be_bytes(seg[4..8].try_into().unwrap());
            assert_eq!(seq, 0xffff_f000u32.wrapping_add(i as u32 * 1428));
            let fl = seg[13];
            assert_eq!(fl & (FIN | PSH) != 0, i == 2);
            assert_eq!(fl & CWR != 0, i == 0);
            data.extend_from_slice(&seg[24..]);
        }
        assert_eq!(data, payload);
    }

    #[test]
    fn a_partial_checksum_is_completed() {
        let mut p = ipv6(A, B, 17, 64, &udp(A, B, 1, 2, b"data"));
        let u = exthdr::walk(&p, 17).unwrap();
        // the field as a csum_blank sender leaves it: the pseudo-header sum
        let s = ipv6::pseudo_header_sum(A.parse().unwrap(), B.parse().unwrap(), 17, 12);
        p[46..48].copy_from_slice(&checksum::fold(s).to_be_bytes());
        assert!(complete_partial6(&mut p, &u));
        assert!(ipv6::l4_checksum_ok(
            A.parse().unwrap(),
            B.parse().unwrap(),
            17,
            &p[40..]
        ));
    }
}
