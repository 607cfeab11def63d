//! DHCPv6 messages (RFC 8415 §8) and the Ethernet frames that carry them between
//! a client on the link and this server.
//!
//! The server takes whole frames from the LAN link (the glue keeps them aside
//! before the local stack sees them, as it does Router Solicitations) and answers
//! with whole frames: to the client's MAC and source address, from the router's
//! link-local address, UDP 547 → 546. No neighbour lookup is needed and the local
//! stack is not asked to join ff02::1:2.
//!
//! [`Frame::parse`] checks: IPv6 carrying UDP directly (an extension header is not
//! read), lengths consistent, the UDP checksum (mandatory in IPv6), destination port
//! 547, a unicast source. [`Message::parse`] checks the DHCPv6 header and options.

use super::options::{OptionError, Options};
use crate::ipv6;
use crate::link::ETH_LEN;
use alloc::vec::Vec;
use core::net::Ipv6Addr;

/// The server's UDP port.
pub const SERVER_PORT: u16 = 547;
/// The client's UDP port.
pub const CLIENT_PORT: u16 = 546;
/// All_DHCP_Relay_Agents_and_Servers (RFC 8415 §7.1).
pub const ALL_SERVERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 1, 2);
const UDP_LEN: usize = 8;

/// Message types (RFC 8415 §7.3).
pub mod msg {
    /// Solicit.
    pub const SOLICIT: u8 = 1;
    /// Advertise.
    pub const ADVERTISE: u8 = 2;
    /// Request.
    pub const REQUEST: u8 = 3;
    /// Confirm.
    pub const CONFIRM: u8 = 4;
    /// Renew.
    pub const RENEW: u8 = 5;
    /// Rebind.
    pub const REBIND: u8 = 6;
    /// Reply.
    pub const REPLY: u8 = 7;
    /// Release.
    pub const RELEASE: u8 = 8;
    /// Decline.
    pub const DECLINE: u8 = 9;
    /// Reconfigure.
    pub const RECONFIGURE: u8 = 10;
    /// Information-request.
    pub const INFORMATION_REQUEST: u8 = 11;
    /// Relay-forward.
    pub const RELAY_FORW: u8 = 12;
    /// Relay-reply.
    pub const RELAY_REPL: u8 = 13;
}

/// Why a frame is not a DHCPv6 message for this server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Not IPv6 + UDP to port 547.
    NotDhcp,
    /// Shorter than its headers say.
    Truncated,
    /// The UDP checksum does not verify (or is 0).
    Checksum,
    /// From a multicast or the unspecified address.
    BadSource,
}

/// Whether `frame` (Ethernet) looks like UDP over IPv6 to port 547: the cheap test
/// of the receive path; [`Frame::parse`] checks it.
pub fn is_to_server(frame: &[u8]) -> bool {
    frame.get(12..14) == Some(&[0x86, 0xdd][..])
        && frame.get(ETH_LEN + ipv6::NEXT_HEADER) == Some(&ipv6::PROTO_UDP)
        && frame.get(ETH_LEN + ipv6::HEADER_LEN + 2..ETH_LEN + ipv6::HEADER_LEN + 4)
            == Some(&SERVER_PORT.to_be_bytes()[..])
}

/// A checked frame to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The destination MAC.
    pub dst_mac: [u8; 6],
    /// The sender's MAC.
    pub src_mac: [u8; 6],
    /// Its IPv6 source.
    pub src: Ipv6Addr,
    /// Where it was sent (ff02::1:2, or one of the router's addresses).
    pub dst: Ipv6Addr,
    /// Its UDP source port.
    pub src_port: u16,
    /// The DHCPv6 message.
    pub payload: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Checks Ethernet frame `frame`.
    pub fn parse(frame: &'a [u8]) -> Result<Frame<'a>, FrameError> {
        if !is_to_server(frame) {
            return Err(FrameError::NotDhcp);
        }
        let dst_mac: [u8; 6] = frame
            .get(0..6)
            .and_then(|m| m.try_into().ok())
            .ok_or(FrameError::Truncated)?;
        let src_mac: [u8; 6] = frame
            .get(6..12)
            .and_then(|m| m.try_into().ok())
            .ok_or(FrameError::Truncated)?;
        let ip = frame.get(ETH_LEN..).ok_or(FrameError::Truncated)?;
        let h = ipv6::parse(ip).map_err(|_| FrameError::Truncated)?;
        let udp = ip
            .get(ipv6::HEADER_LEN..h.total_len)
            .ok_or(FrameError::Truncated)?;
        let [s0, s1, _, _, l0, l1, c0, c1] = udp
            .get(..UDP_LEN)
            .and_then(|h| <[u8; UDP_LEN]>::try_from(h).ok())
            .ok_or(FrameError::Truncated)?;
        if usize::from(u16::from_be_bytes([l0, l1])) != udp.len() {
            return Err(FrameError::Truncated);
        }
        if [c0, c1] == [0, 0] || !ipv6::l4_checksum_ok(h.src, h.dst, ipv6::PROTO_UDP, udp) {
            return Err(FrameError::Checksum);
        }
        if h.src.is_multicast() || h.src.is_unspecified() || src_mac[0] & 1 != 0 {
            return Err(FrameError::BadSource);
        }
        Ok(Frame {
            dst_mac,
            src_mac,
            src: h.src,
            dst: h.dst,
            src_port: u16::from_be_bytes([s0, s1]),
            payload: udp.get(UDP_LEN..).unwrap_or(&[]),
        })
    }
}

/// A client message: type, transaction id, options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message<'a> {
    /// Its type ([`msg`]).
    pub kind: u8,
    /// The transaction id.
    pub xid: [u8; 3],
    /// Its options.
    pub options: Options<'a>,
}

impl<'a> Message<'a> {
    /// Reads a DHCPv6 message (not a relay message: those have another layout).
    pub fn parse(b: &'a [u8]) -> Result<Message<'a>, OptionError> {
        let (hdr, rest) = b.split_at_checked(4).ok_or(OptionError::Truncated)?;
        let [kind, x0, x1, x2] = <[u8; 4]>::try_from(hdr).map_err(|_| OptionError::Truncated)?;
        Ok(Message {
            kind,
            xid: [x0, x1, x2],
            options: Options::parse(rest)?,
        })
    }
}

/// The Ethernet frame carrying DHCPv6 message `payload` from the router (`mac`,
/// its link-local address) to `dst` at `dst_mac`, UDP 547 → 546.
pub fn reply_frame(payload: &[u8], mac: [u8; 6], dst_mac: [u8; 6], dst: Ipv6Addr) -> Vec<u8> {
    let src = ipv6::link_local_of(mac);
    let ulen = UDP_LEN + payload.len();
    let len = u16::try_from(ulen).unwrap_or(u16::MAX);
    let mut f = Vec::with_capacity(ETH_LEN + ipv6::HEADER_LEN + ulen);
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&len.to_be_bytes());
    f.extend_from_slice(&[ipv6::PROTO_UDP, 255]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    let udp_at = f.len();
    f.extend_from_slice(&SERVER_PORT.to_be_bytes());
    f.extend_from_slice(&CLIENT_PORT.to_be_bytes());
    f.extend_from_slice(&len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    let s = ipv6::pseudo_header_sum(src, dst, ipv6::PROTO_UDP, ulen);
    let mut csum = !crate::checksum::fold(crate::checksum::sum(s, f.get(udp_at..).unwrap_or(&[])));
    if csum == 0 {
        csum = 0xffff;
    }
    if let Some(c) = f.get_mut(udp_at + 6..udp_at + 8) {
        c.copy_from_slice(&csum.to_be_bytes());
    }
    f
}
