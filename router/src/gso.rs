//! Software TCP segmentation of a GSO packet for a link that cannot take it whole.
//!
//! A netfront may hand over one large TCP/IPv4 packet with a segment size
//! (`XEN_NETIF_GSO_TYPE_TCPV4`, `xen/include/public/io/netif.h` "Guest transmit"); if
//! the output link does not do GSO, or the segments would not fit its MTU, it is cut
//! here the way Linux's `tcp_gso_segment` (`net/ipv4/tcp_offload.c`) and
//! `inet_gso_segment` (`net/ipv4/af_inet.c`) do: each segment gets the IP and TCP
//! headers (options included), `mss` payload bytes (the last gets the rest), IP
//! identification incremented per segment, its own total length and header
//! checksum, the TCP sequence number advanced by the bytes before it, FIN and PSH
//! only on the last segment, CWR only on the first, and a full TCP checksum (a GSO
//! packet arrives with a partial one; the segments leave complete).

use crate::checksum;
use crate::flow::tcp_flag;
use crate::ipv4::{self, be16, be32, put16, tcp, PROTO_TCP};
use crate::link::ETH_LEN;
use crate::DropReason;

/// The IP + TCP header length of a TCP/IPv4 packet, if it is one and well formed
/// (an unfragmented packet, TCP data offset within it).
pub fn tcp_headers_len(ip: &[u8]) -> Option<usize> {
    if ip.get(ipv4::PROTO) != Some(&PROTO_TCP)
        || ipv4::frag_offset(ip) != 0
        || be16(ip, ipv4::FRAG)? & ipv4::MF != 0
    {
        return None;
    }
    let hl = ipv4::header_len(ip);
    let thl = tcp::header_len(ip.get(hl..)?)?;
    (thl >= tcp::MIN_HEADER_LEN && hl + thl <= ip.len()).then_some(hl + thl)
}

/// Cuts `frame` (Ethernet header and exactly one TCP/IPv4 packet) into segments of
/// at most `mss` payload bytes, each written to `buf` and passed to `emit`. The input
/// TCP checksum is ignored (partial); each segment gets a full one.
pub fn segment(
    frame: &[u8],
    mss: u16,
    buf: &mut [u8],
    emit: impl FnMut(&mut [u8]) -> Result<(), DropReason>,
) -> Result<(), DropReason> {
    let ip = frame.get(ETH_LEN..).ok_or(DropReason::Malformed)?;
    let headers = tcp_headers_len(ip).ok_or(DropReason::Unsupported)?;
    let hl = ipv4::header_len(ip);
    let id = be16(ip, ipv4::ID).ok_or(DropReason::Malformed)?;
    let (src, dst) = (ipv4::src(ip), ipv4::dst(ip));
    cut(
        frame,
        headers,
        hl,
        mss,
        buf,
        |seg_ip, i| {
            let total = u16::try_from(seg_ip.len()).map_err(|_| DropReason::Malformed)?;
            put16(seg_ip, ipv4::TOTAL_LEN, total);
            // i < 65536 since a packet is at most 64 KiB and mss >= 1
            put16(seg_ip, ipv4::ID, id.wrapping_add((i & 0xffff) as u16));
            ipv4::fill_header_checksum(seg_ip);
            Ok(ipv4::pseudo_header_sum(
                src,
                dst,
                PROTO_TCP,
                seg_ip.len() - hl,
            ))
        },
        emit,
    )
}

/// Cuts `frame` (Ethernet header and one TCP packet of either family whose IP and TCP
/// headers are `headers` bytes, its TCP header at `tcp_at` in the IP packet) into
/// segments of at most `mss` payload bytes, each written to `buf` and passed to
/// `emit`. The family's part is `fix_ip`: it sets segment `i`'s IP header (lengths,
/// ID, header checksum) and returns the pseudo-header sum of its TCP segment.
pub(crate) fn cut(
    frame: &[u8],
    headers: usize,
    tcp_at: usize,
    mss: u16,
    buf: &mut [u8],
    mut fix_ip: impl FnMut(&mut [u8], usize) -> Result<u32, DropReason>,
    mut emit: impl FnMut(&mut [u8]) -> Result<(), DropReason>,
) -> Result<(), DropReason> {
    let ip = frame.get(ETH_LEN..).ok_or(DropReason::Malformed)?;
    let mss = usize::from(mss);
    if mss == 0 {
        return Err(DropReason::Malformed);
    }
    let hdr = frame
        .get(..ETH_LEN + headers)
        .ok_or(DropReason::Malformed)?;
    let data = ip.get(headers..).ok_or(DropReason::Malformed)?;
    let seq = be32(ip, tcp_at + tcp::SEQ).ok_or(DropReason::Malformed)?;
    let flags = *ip.get(tcp_at + tcp::FLAGS).ok_or(DropReason::Malformed)?;

    let count = data.len().div_ceil(mss).max(1);
    for i in 0..count {
        let off = i * mss;
        let chunk = data
            .get(off..(off + mss).min(data.len()))
            .ok_or(DropReason::Malformed)?;
        let out = buf
            .get_mut(..hdr.len() + chunk.len())
            .ok_or(DropReason::TooBig)?;
        let (h, d) = out.split_at_mut(hdr.len());
        h.copy_from_slice(hdr);
        d.copy_from_slice(chunk);
        let seg_ip = out.get_mut(ETH_LEN..).ok_or(DropReason::Malformed)?;
        let pseudo = fix_ip(seg_ip, i)?;
        let seg = seg_ip.get_mut(tcp_at..).ok_or(DropReason::Malformed)?;
        finish_tcp_segment(seg, seq, off, flags, (i, count), pseudo);
        emit(out)?;
    }
    Ok(())
}

/// The TCP header of segment `i` of `count` cut from one GSO packet (`at` = (i,
/// count)): its sequence number (`seq` + `off`), FIN and PSH only on the last, CWR
/// only on the first, and its full checksum over `seg` from the pseudo-header sum
/// `pseudo` (IPv4's or IPv6's).
fn finish_tcp_segment(
    seg: &mut [u8],
    seq: u32,
    off: usize,
    flags: u8,
    (i, count): (usize, usize),
    pseudo: u32,
) {
    let s = seq.wrapping_add((off & 0xffff_ffff) as u32);
    if let Some(f) = seg.get_mut(tcp::SEQ..tcp::SEQ + 4) {
        f.copy_from_slice(&s.to_be_bytes());
    }
    let mut fl = flags;
    if i + 1 < count {
        fl &= !(tcp_flag::FIN | tcp_flag::PSH);
    }
    if i > 0 {
        fl &= !tcp_flag::CWR;
    }
    if let Some(f) = seg.get_mut(tcp::FLAGS) {
        *f = fl;
    }
    put16(seg, tcp::CHECKSUM, 0);
    let c = !checksum::fold(checksum::sum(pseudo, seg));
    put16(seg, tcp::CHECKSUM, c);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::testutil::*;
    use alloc::vec::Vec;

    #[test]
    fn segments_are_correct_tcp() {
        let payload: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
        // timestamps option: copied into every segment
        let opts = [1, 1, 8, 10, 0, 0, 0, 5, 0, 0, 0, 6];
        let t = tcp(
            A,
            B,
            443,
            50000,
            0xffff_f000,
            ACK | PSH | FIN | CWR,
            &opts,
            &payload,
        );
        let p = ipv4(A, B, 6, 63, 0xfffe, true, &[], &t);
        let f = eth([2; 6], [4; 6], 0x0800, &p);
        let mut buf = alloc::vec![0u8; 2000];
        let segs = emitted(|emit| segment(&f, 1448, &mut buf, emit));
        assert_eq!(segs.len(), 3);
        let mut data = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let ip = &s[14..];
            assert!(header_ok(ip));
            assert!(ipv4::l4_checksum_ok(ip), "segment {i} TCP checksum");
            assert_eq!(usize::from(u16::from_be_bytes([ip[2], ip[3]])), ip.len());
            assert_eq!(
                u16::from_be_bytes([ip[4], ip[5]]),
                0xfffeu16.wrapping_add(i as u16)
            );
            assert_eq!(ip[6] & 0x40, 0x40, "DF kept");
            let tcp = &ip[20..];
            assert_eq!(
                u32::from_be_bytes(tcp[4..8].try_into().unwrap()),
                0xffff_f000u32.wrapping_add(i as u32 * 1448)
            );
            assert_eq!(&tcp[20..32], &opts);
            let fl = tcp[13];
            assert_eq!(fl & (FIN | PSH) != 0, i == 2, "FIN/PSH only last");
            assert_eq!(fl & CWR != 0, i == 0, "CWR only first");
            assert!(fl & ACK != 0);
            data.extend_from_slice(&tcp[32..]);
            assert!(tcp.len() - 32 <= 1448);
        }
        assert_eq!(data, payload);
    }

    #[test]
    fn not_tcp_is_unsupported() {
        let p = ipv4(A, B, 17, 63, 1, true, &[], &udp(A, B, 1, 2, &[0; 100]));
        let f = eth([2; 6], [4; 6], 0x0800, &p);
        let mut buf = [0u8; 200];
        assert_eq!(
            segment(&f, 50, &mut buf, |_| Ok(())),
            Err(DropReason::Unsupported)
        );
    }

    #[test]
    fn hostile_never_panics() {
        let mut rng = Rng(77);
        let t = tcp(A, B, 1, 2, 3, ACK, &[], &[9; 600]);
        let base = eth([2; 6], [4; 6], 0x0800, &ipv4(A, B, 6, 9, 1, true, &[], &t));
        let mut buf = alloc::vec![0u8; 700];
        for _ in 0..5000 {
            let mut f = base.clone();
            rng.mangle(&mut f, 3, 14, 40);
            let _ = segment(&f, rng.below(700) as u16, &mut buf, |_| Ok(()));
        }
    }
}
