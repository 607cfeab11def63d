//! The TCP reset that answers a rejected TCP segment (nftables' `reject with tcp
//! reset`, Linux `net/ipv4/netfilter/nf_reject_ipv4.c`: `nf_send_reset`).
//!
//! Sequence numbers as RFC 9293 §3.5.2 (RFC 793 "Reset Generation", case 1): if the
//! segment has ACK, the reset is `<SEQ=SEG.ACK><CTL=RST>`; otherwise
//! `<SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>`, where SEG.LEN counts SYN and FIN.
//! A reset is never answered.

use crate::checksum;
use crate::flow::get_addr;
use crate::flow::tcp_flag;
use crate::ipv4::{self, be16, be32, put16, tcp};

/// Length of the reset frame: Ethernet, a 20-byte IPv4 header, a 20-byte TCP header.
pub const RESET_FRAME_LEN: usize = 14 + 20 + 20;

/// What the reset is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpSegment {
    /// Source address of the segment.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Flags byte.
    pub flags: u8,
    /// Payload bytes.
    pub payload_len: u32,
}

impl TcpSegment {
    /// Reads a segment from `head` (its IPv4 header and first 8 TCP bytes as it
    /// arrived, before any NAT) and `now` (the whole packet as it is now: NAT changes
    /// addresses and ports, never the sequence numbers, flags or lengths).
    pub fn read(head: &[u8], now: &[u8]) -> Option<TcpSegment> {
        if head.get(ipv4::PROTO) != Some(&ipv4::PROTO_TCP) || ipv4::frag_offset(head) != 0 {
            return None;
        }
        let hl = ipv4::header_len(head);
        let hl_now = ipv4::header_len(now);
        let tcp_now = now.get(hl_now..)?;
        let doff = tcp::header_len(tcp_now)?;
        if doff < tcp::MIN_HEADER_LEN || tcp_now.len() < doff {
            return None;
        }
        Some(TcpSegment {
            src: get_addr(head, ipv4::SRC)?,
            dst: get_addr(head, ipv4::DST)?,
            sport: be16(head, hl)?,
            dport: be16(head, hl + 2)?,
            seq: be32(head, hl + tcp::SEQ)?,
            ack: be32(tcp_now, tcp::ACK)?,
            flags: *tcp_now.get(tcp::FLAGS)?,
            payload_len: u32::try_from(tcp_now.len() - doff).ok()?,
        })
    }
}

/// Zeroes `frame` and writes its Ethernet header: to `peer` from `mac`, carrying
/// `ethertype`.
pub(super) fn eth_header(
    frame: &mut [u8],
    peer: [u8; 6],
    mac: [u8; 6],
    ethertype: u16,
) -> Option<()> {
    frame.fill(0);
    frame.get_mut(0..6)?.copy_from_slice(&peer);
    frame.get_mut(6..12)?.copy_from_slice(&mac);
    put16(frame, 12, ethertype);
    Some(())
}

/// Writes into `buf` the Ethernet frame of the reset answering `seg` (from `mac` to
/// `peer`), with IP id `id`; returns its length, or `None` if `seg` is a reset
/// itself or `buf` is too short.
pub fn build(
    buf: &mut [u8],
    seg: &TcpSegment,
    mac: [u8; 6],
    peer: [u8; 6],
    id: u16,
) -> Option<usize> {
    if seg.flags & tcp_flag::RST != 0 {
        return None;
    }
    let frame = buf.get_mut(..RESET_FRAME_LEN)?;
    eth_header(frame, peer, mac, 0x0800)?;
    let ip = frame.get_mut(14..)?;
    ip[0] = 0x45;
    put16(ip, ipv4::TOTAL_LEN, 40);
    put16(ip, ipv4::ID, id);
    put16(ip, ipv4::FRAG, ipv4::DF); // as Linux's resets
    ip[ipv4::TTL] = 64;
    ip[ipv4::PROTO] = ipv4::PROTO_TCP;
    ip.get_mut(ipv4::SRC..ipv4::SRC + 4)?
        .copy_from_slice(&seg.dst);
    ip.get_mut(ipv4::DST..ipv4::DST + 4)?
        .copy_from_slice(&seg.src);
    ipv4::fill_header_checksum(ip);
    let (seq, ack, flags) = if seg.flags & tcp_flag::ACK != 0 {
        (seg.ack, 0, tcp_flag::RST)
    } else {
        let mut len = seg.payload_len;
        if seg.flags & tcp_flag::SYN != 0 {
            len = len.wrapping_add(1);
        }
        if seg.flags & tcp_flag::FIN != 0 {
            len = len.wrapping_add(1);
        }
        (0, seg.seq.wrapping_add(len), tcp_flag::RST | tcp_flag::ACK)
    };
    let rst = ip.get_mut(ipv4::MIN_HEADER_LEN..ipv4::MIN_HEADER_LEN + tcp::MIN_HEADER_LEN)?;
    put16(rst, 0, seg.dport);
    put16(rst, 2, seg.sport);
    rst.get_mut(tcp::SEQ..tcp::SEQ + 4)?
        .copy_from_slice(&seq.to_be_bytes());
    rst.get_mut(tcp::ACK..tcp::ACK + 4)?
        .copy_from_slice(&ack.to_be_bytes());
    rst[tcp::DATA_OFFSET] = 5 << 4;
    rst[tcp::FLAGS] = flags;
    let sum = ipv4::pseudo_header_sum(
        seg.dst.into(),
        seg.src.into(),
        ipv4::PROTO_TCP,
        tcp::MIN_HEADER_LEN,
    );
    let c = !checksum::fold(checksum::sum(sum, rst));
    put16(rst, tcp::CHECKSUM, c);
    Some(RESET_FRAME_LEN)
}
