//! The TCP reset fw4's `reject` answers a refused IPv6 TCP segment with (Linux's
//! `nf_send_reset6`, `net/ipv6/netfilter/nf_reject_ipv6.c`, RFC 9293 §3.10.7.1):
//! sent straight back to the sender's MAC, from the address it was sent to. A
//! segment with ACK gets `SEQ = SEG.ACK`, RST; one without gets `SEQ = 0`,
//! `ACK = SEG.SEQ + SEG.LEN` (SYN and FIN count one each), RST+ACK. Never for a RST,
//! nor to or from a multicast or unspecified address.

use core::net::Ipv6Addr;

use crate::checksum;
use crate::exthdr::Upper;
use crate::flow::tcp_flag;
use crate::ipv4::{self, be32, put16, tcp};
use crate::ipv6::{self, HEADER_LEN, PROTO_TCP};

/// Length of a reset frame: Ethernet, IPv6, TCP headers.
pub const RESET6_FRAME_LEN: usize = 14 + HEADER_LEN + tcp::MIN_HEADER_LEN;

/// Builds into `buf` the reset for the IPv6 TCP segment `ip` (its chain ended at
/// `upper`), from `mac` to `peer`. Returns the frame length, or `None` if no reset
/// is due.
pub fn build6(
    buf: &mut [u8],
    ip: &[u8],
    upper: &Upper,
    mac: [u8; 6],
    peer: [u8; 6],
) -> Option<usize> {
    if upper.proto != PROTO_TCP || !upper.has_l4() {
        return None;
    }
    let (src, dst) = (ipv6::src(ip), ipv6::dst(ip));
    let bad = |a: Ipv6Addr| a.is_multicast() || a.is_unspecified();
    if bad(src) || bad(dst) {
        return None;
    }
    let seg = ip.get(upper.offset..)?;
    let doff = tcp::header_len(seg)?;
    if doff < tcp::MIN_HEADER_LEN || seg.len() < doff {
        return None;
    }
    let flags = *seg.get(tcp::FLAGS)?;
    if flags & tcp_flag::RST != 0 {
        return None;
    }
    let (seq, ack, rflags) = if flags & tcp_flag::ACK != 0 {
        (be32(seg, tcp::ACK)?, 0, tcp_flag::RST)
    } else {
        let mut len = u32::try_from(seg.len() - doff).ok()?;
        if flags & tcp_flag::SYN != 0 {
            len = len.wrapping_add(1);
        }
        if flags & tcp_flag::FIN != 0 {
            len = len.wrapping_add(1);
        }
        let s = be32(seg, tcp::SEQ)?;
        (0, s.wrapping_add(len), tcp_flag::RST | tcp_flag::ACK)
    };
    let (sport, dport) = ipv4::ports(seg)?;
    let frame = buf.get_mut(..RESET6_FRAME_LEN)?;
    super::reject::eth_header(frame, peer, mac, 0x86dd)?;
    let ip6 = frame.get_mut(14..)?;
    let (hdr, rst) = ip6.split_at_mut(HEADER_LEN);
    *hdr.first_mut()? = 0x60;
    put16(hdr, ipv6::PAYLOAD_LEN, tcp::MIN_HEADER_LEN as u16);
    *hdr.get_mut(ipv6::NEXT_HEADER)? = PROTO_TCP;
    *hdr.get_mut(ipv6::HOP_LIMIT)? = 64;
    hdr.get_mut(ipv6::SRC..ipv6::SRC + 16)?
        .copy_from_slice(&dst.octets());
    hdr.get_mut(ipv6::DST..ipv6::DST + 16)?
        .copy_from_slice(&src.octets());
    put16(rst, 0, dport);
    put16(rst, 2, sport);
    rst.get_mut(tcp::SEQ..tcp::SEQ + 4)?
        .copy_from_slice(&seq.to_be_bytes());
    rst.get_mut(tcp::ACK..tcp::ACK + 4)?
        .copy_from_slice(&ack.to_be_bytes());
    *rst.get_mut(tcp::DATA_OFFSET)? = 5 << 4;
    *rst.get_mut(tcp::FLAGS)? = rflags;
    let s = ipv6::pseudo_header_sum(dst, src, PROTO_TCP, tcp::MIN_HEADER_LEN);
    let c = !checksum::fold(checksum::sum(s, rst));
    put16(rst, tcp::CHECKSUM, c);
    Some(RESET6_FRAME_LEN)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::exthdr;
    use crate::testutil::{ipv6 as packet, tcp};

    const A: &str = "2001:db8:2::20";
    const B: &str = "2001:db8:1::10";

    fn reset(p: &[u8]) -> Option<Vec<u8>> {
        let u = exthdr::walk(p, p[6]).unwrap();
        let mut buf = [0u8; RESET6_FRAME_LEN];
        let n = build6(&mut buf, p, &u, [2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])?;
        Some(buf[..n].to_vec())
    }

    use alloc::vec::Vec;

    #[test]
    fn a_syn_gets_rst_ack_for_its_sequence_plus_one() {
        let p = packet(A, B, 6, 64, &tcp(A, B, 40000, 22, 1000, 0x02, &[], &[]));
        let f = reset(&p).unwrap();
        let ip = &f[14..];
        assert_eq!(&f[..6], &[2, 0, 0, 0, 0, 2]);
        assert_eq!(ipv6::src(ip), B.parse::<Ipv6Addr>().unwrap());
        assert_eq!(ipv6::dst(ip), A.parse::<Ipv6Addr>().unwrap());
        let t = &ip[40..];
        assert_eq!(ipv4::ports(t), Some((22, 40000)));
        assert_eq!(be32(t, 4), Some(0));
        assert_eq!(be32(t, 8), Some(1001));
        assert_eq!(t[13], tcp_flag::RST | tcp_flag::ACK);
        assert!(ipv6::l4_checksum_ok(ipv6::src(ip), ipv6::dst(ip), 6, t));
        // with ACK: SEQ = SEG.ACK (the helper acks 0x10000000)
        let p = packet(A, B, 6, 64, &tcp(A, B, 40000, 22, 1000, 0x10, &[], b"ab"));
        let f = reset(&p).unwrap();
        assert_eq!(be32(&f[54..], 4), Some(0x1000_0000));
        assert_eq!(f[54 + 13], tcp_flag::RST);
        // never for a reset, nor to a multicast address
        let p = packet(A, B, 6, 64, &tcp(A, B, 40000, 22, 1000, 0x04, &[], &[]));
        assert!(reset(&p).is_none());
        let p = packet(
            A,
            "ff02::1",
            6,
            64,
            &tcp(A, "ff02::1", 1, 2, 3, 0x02, &[], &[]),
        );
        assert!(reset(&p).is_none());
    }
}
