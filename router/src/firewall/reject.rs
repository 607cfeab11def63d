//! The TCP reset that answers a rejected TCP segment (nftables' `reject with tcp
//! reset`, Linux `net/ipv4/netfilter/nf_reject_ipv4.c`: `nf_send_reset`).
//!
//! Sequence numbers as RFC 9293 §3.5.2 (RFC 793 "Reset Generation", case 1): if the
//! segment has ACK, the reset is `<SEQ=SEG.ACK><CTL=RST>`; otherwise
//! `<SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>`, where SEG.LEN counts SYN and FIN.
//! A reset is never answered.

use crate::checksum;
use crate::flow::tcp_flag;
use crate::ipv4::{self, be16, be32, put16};

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
        let doff = usize::from(tcp_now.get(12)? >> 4) * 4;
        if doff < 20 || tcp_now.len() < doff {
            return None;
        }
        Some(TcpSegment {
            src: head.get(12..16)?.try_into().ok()?,
            dst: head.get(16..20)?.try_into().ok()?,
            sport: be16(head, hl)?,
            dport: be16(head, hl + 2)?,
            seq: be32(head, hl + 4)?,
            ack: be32(tcp_now, 8)?,
            flags: *tcp_now.get(13)?,
            payload_len: u32::try_from(tcp_now.len() - doff).ok()?,
        })
    }
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
    frame.fill(0);
    frame.get_mut(0..6)?.copy_from_slice(&peer);
    frame.get_mut(6..12)?.copy_from_slice(&mac);
    put16(frame, 12, 0x0800);
    let ip = frame.get_mut(14..)?;
    ip[0] = 0x45;
    put16(ip, 2, 40);
    put16(ip, 4, id);
    put16(ip, 6, 0x4000); // DF, as Linux's resets
    ip[ipv4::TTL] = 64;
    ip[ipv4::PROTO] = ipv4::PROTO_TCP;
    ip.get_mut(12..16)?.copy_from_slice(&seg.dst);
    ip.get_mut(16..20)?.copy_from_slice(&seg.src);
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
    let tcp = ip.get_mut(20..40)?;
    put16(tcp, 0, seg.dport);
    put16(tcp, 2, seg.sport);
    tcp.get_mut(4..8)?.copy_from_slice(&seq.to_be_bytes());
    tcp.get_mut(8..12)?.copy_from_slice(&ack.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = flags;
    let sum = ipv4::pseudo_header_sum(seg.dst.into(), seg.src.into(), ipv4::PROTO_TCP, 20);
    let c = !checksum::fold(checksum::sum(sum, tcp));
    put16(tcp, 16, c);
    Some(RESET_FRAME_LEN)
}
