//! Flow keys: which connection an IPv4 packet belongs to.
//!
//! The tuple is netfilter's `struct nf_conntrack_tuple` (Linux
//! `include/net/netfilter/nf_conntrack_tuple.h`): addresses, protocol and two 16-bit
//! "ports". TCP and UDP use their ports; an ICMP echo uses its identifier as the port of
//! the side that chose it (the requester's source), and the tuple's [`Proto`] says
//! whether it is the request or the reply, so that inverting a tuple (Linux
//! `nf_ct_invert_tuple`) maps one onto the other. Other protocols are tracked by address
//! only (Linux `nf_conntrack_proto_generic.c`).
//!
//! ICMP errors (destination unreachable, source quench, redirect, time exceeded,
//! parameter problem: RFC 792) are not flows of their own: [`parse`] returns the tuple of
//! the packet they quote, so the caller can find the flow they are RELATED to
//! (Linux `nf_conntrack_proto_icmp.c`, `icmp_error_message`; RFC 5508 section 4).
//!
//! Every offset is checked against the slice: hostile bytes give
//! [`ParseError`], never a panic.

use core::fmt;

use crate::ipv4::{self, be16, be32, tcp};

/// IP protocol numbers used here (IANA "Assigned Internet Protocol Numbers").
pub mod ip_proto {
    /// ICMP (RFC 792).
    pub const ICMP: u8 = 1;
    /// TCP (RFC 9293).
    pub const TCP: u8 = 6;
    /// UDP (RFC 768).
    pub const UDP: u8 = 17;
}

/// ICMP types used here (RFC 792).
pub mod icmp_type {
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 0;
    /// Destination unreachable.
    pub const DEST_UNREACHABLE: u8 = 3;
    /// Source quench (deprecated by RFC 6633, still an error).
    pub const SOURCE_QUENCH: u8 = 4;
    /// Redirect.
    pub const REDIRECT: u8 = 5;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 8;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 11;
    /// Parameter problem.
    pub const PARAMETER_PROBLEM: u8 = 12;
}

/// The layer-4 protocol of a tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    /// TCP: ports are TCP ports.
    Tcp,
    /// UDP: ports are UDP ports.
    Udp,
    /// ICMP echo request: `sport` is the identifier, `dport` is 0.
    IcmpEchoRequest,
    /// ICMP echo reply: `sport` is 0, `dport` is the identifier.
    IcmpEchoReply,
    /// Any other IP protocol, tracked by addresses only (ports are 0).
    Other(u8),
}

impl Proto {
    /// The IP protocol number.
    pub fn number(self) -> u8 {
        match self {
            Proto::Tcp => ip_proto::TCP,
            Proto::Udp => ip_proto::UDP,
            Proto::IcmpEchoRequest | Proto::IcmpEchoReply => ip_proto::ICMP,
            Proto::Other(n) => n,
        }
    }

    /// The protocol of the inverted tuple (an echo request's answer is a reply).
    pub fn invert(self) -> Proto {
        match self {
            Proto::IcmpEchoRequest => Proto::IcmpEchoReply,
            Proto::IcmpEchoReply => Proto::IcmpEchoRequest,
            p => p,
        }
    }

    /// A small code that tells protocols apart in a hash key.
    pub(crate) fn code(self) -> u16 {
        match self {
            Proto::Tcp => 0x100,
            Proto::Udp => 0x200,
            Proto::IcmpEchoRequest => 0x300,
            Proto::IcmpEchoReply => 0x400,
            Proto::Other(n) => u16::from(n),
        }
    }
}

/// A connection tuple: one direction of a flow as its packets look on the wire.
/// `A` is the address: `[u8; 4]` for IPv4, `[u8; 16]` for IPv6 ([`Tuple6`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tuple<A = [u8; 4]> {
    /// Source address.
    pub src: A,
    /// Destination address.
    pub dst: A,
    /// Source port (TCP/UDP), or the echo identifier of a request.
    pub sport: u16,
    /// Destination port (TCP/UDP), or the echo identifier of a reply.
    pub dport: u16,
    /// Protocol.
    pub proto: Proto,
}

/// An IPv6 connection tuple (ICMPv6 echo uses [`Proto::IcmpEchoRequest`] and
/// [`Proto::IcmpEchoReply`] as ICMP echo does).
pub type Tuple6 = Tuple<[u8; 16]>;

impl<A: Copy> Tuple<A> {
    /// The tuple of the packets going the other way.
    pub fn invert(&self) -> Tuple<A> {
        Tuple {
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
            proto: self.proto.invert(),
        }
    }
}

/// One endpoint: an address and a port.
pub type Endpoint = ([u8; 4], u16);

/// An IPv4 address in dotted-quad form.
pub struct Dotted(pub [u8; 4]);

impl fmt::Display for Dotted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.0;
        write!(f, "{a}.{b}.{c}.{d}")
    }
}

/// TCP header fields conntrack looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpInfo {
    /// The flags byte (byte 13: CWR ECE URG ACK PSH RST SYN FIN).
    pub flags: u8,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgement number.
    pub ack: u32,
    /// The window field (unscaled).
    pub window: u16,
    /// Bytes of data after the header.
    pub payload: u32,
    /// The window-scale option's shift, on a SYN.
    pub wscale: Option<u8>,
    /// SACK permitted (option 4), on a SYN.
    pub sack_perm: bool,
    /// The highest right edge of the SACK blocks (option 5), if any.
    pub sack_edge: Option<u32>,
}

impl TcpInfo {
    /// What the TCP header at the start of `l4` says: flags `flags`, `doff` bytes
    /// long (within `l4`), carrying `payload` bytes of data.
    pub(crate) fn read(l4: &[u8], flags: u8, doff: usize, payload: u32) -> Option<TcpInfo> {
        let (wscale, sack_perm, sack_edge) = if doff > tcp::MIN_HEADER_LEN {
            tcp_options(
                l4.get(tcp::MIN_HEADER_LEN..doff)?,
                flags & tcp_flag::SYN != 0,
            )
        } else {
            (None, false, None)
        };
        Some(TcpInfo {
            flags,
            seq: be32(l4, tcp::SEQ)?,
            ack: be32(l4, tcp::ACK)?,
            window: be16(l4, tcp::WINDOW)?,
            payload,
            wscale,
            sack_perm,
            sack_edge,
        })
    }
}

/// What the TCP options of a segment say to window tracking: (window scale on a
/// SYN, SACK permitted on a SYN, highest SACK right edge). A malformed option list
/// ends the walk (what was read counts), as Linux's `tcp_options`.
pub(crate) fn tcp_options(opts: &[u8], syn: bool) -> (Option<u8>, bool, Option<u32>) {
    let (mut wscale, mut sack_perm, mut edge) = (None, false, None::<u32>);
    // NOP, NOP, timestamps: how Linux starts every segment's options after the SYN
    // (RFC 7323 appendix A's layout), and nothing in them counts here
    let mut i = if opts.len() >= 12 && opts[..4] == [1, 1, 8, 10] {
        12
    } else {
        0
    };
    while let Some(&kind) = opts.get(i) {
        match kind {
            0 => break,
            1 => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let Some(&len) = opts.get(i + 1) else { break };
        let len = usize::from(len);
        if len < 2 || i + len > opts.len() {
            break;
        }
        let body = &opts[i + 2..i + len];
        match (kind, len) {
            (3, 3) if syn => wscale = Some(body[0]),
            (4, 2) if syn => sack_perm = true,
            (5, l) if l >= 10 && (l - 2) % 8 == 0 => {
                for b in body.chunks_exact(8) {
                    let right = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                    if edge.is_none_or(|e| (right.wrapping_sub(e) as i32) > 0) {
                        edge = Some(right);
                    }
                }
            }
            _ => {}
        }
        i += len;
    }
    (wscale, sack_perm, edge)
}

/// TCP flag bits in byte 13 of the header (RFC 9293 section 3.1).
pub mod tcp_flag {
    /// No more data from sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset the connection.
    pub const RST: u8 = 0x04;
    /// Push.
    pub const PSH: u8 = 0x08;
    /// Acknowledgment field significant.
    pub const ACK: u8 = 0x10;
    /// Urgent pointer significant.
    pub const URG: u8 = 0x20;
    /// ECN echo (RFC 3168).
    pub const ECE: u8 = 0x40;
    /// Congestion window reduced (RFC 3168).
    pub const CWR: u8 = 0x80;
}

/// Where the packet quoted by an ICMP error sits in the outer packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quoted {
    /// The quoted packet's tuple, as it was sent (before the error came back).
    pub tuple: Tuple,
    /// Offset of the ICMP header in the outer packet.
    pub icmp: usize,
    /// Offset of the quoted IPv4 header.
    pub ip: usize,
    /// Offset of the quoted transport header (at least 8 bytes of it are present).
    pub l4: usize,
}

/// What a packet is, for connection tracking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A packet of a flow (TCP, UDP, ICMP echo, other protocols by address).
    Flow(Tuple, Option<TcpInfo>),
    /// An ICMP error about the quoted packet.
    IcmpError(Quoted),
    /// A fragment other than the first: no transport header, addresses only.
    LaterFragment,
    /// ICMP that is neither echo nor a well-formed error (timestamp, router
    /// advertisement, an error quoting a fragment or another error, ...): not tracked.
    Untracked,
}

/// A packet parsed for connection tracking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// IPv4 header length in bytes.
    pub ihl: usize,
    /// What it is.
    pub kind: Kind,
}

/// The packet is shorter than its headers say or has an impossible header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError;

/// Reads an IPv4 address at `off`, if it is inside `b`.
pub(crate) fn get_addr(b: &[u8], off: usize) -> Option<[u8; 4]> {
    let s = b.get(off..off.checked_add(4)?)?;
    Some([s[0], s[1], s[2], s[3]])
}

/// IPv4 header length of the header at the start of `ip`, checked against `ip`.
fn header_len(ip: &[u8]) -> Result<usize, ParseError> {
    let first = *ip.first().ok_or(ParseError)?;
    if first >> 4 != 4 {
        return Err(ParseError);
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < ipv4::MIN_HEADER_LEN || ip.len() < ihl {
        return Err(ParseError);
    }
    Ok(ihl)
}

/// The fragment offset field (in 8-byte units) of the IPv4 header at the start of `ip`.
fn fragment_offset(ip: &[u8]) -> Option<u16> {
    be16(ip, ipv4::FRAG).map(|w| w & ipv4::FRAG_OFFSET)
}

/// The flow of a TCP or UDP header `l4` (its ports first) from `src` to `dst`.
fn ports_tuple(src: [u8; 4], dst: [u8; 4], l4: &[u8], proto: Proto) -> Result<Tuple, ParseError> {
    let (sport, dport) = ipv4::ports(l4).ok_or(ParseError)?;
    Ok(Tuple {
        src,
        dst,
        sport,
        dport,
        proto,
    })
}

/// Parses an IPv4 packet (header and payload) for connection tracking.
pub fn parse(ip: &[u8]) -> Result<Parsed, ParseError> {
    parse_with::<true>(ip)
}

/// [`parse`], inlined where the hooks parse every packet (its result is then built
/// in place). Without `TCP_INFO`, a TCP flow's [`TcpInfo`] is `None`: the same tuple,
/// kind and errors, for a caller that needs only which flow a packet is of (a
/// segment's fields cannot fail to parse once its header has).
#[inline(always)]
pub(crate) fn parse_with<const TCP_INFO: bool>(ip: &[u8]) -> Result<Parsed, ParseError> {
    let ihl = header_len(ip)?;
    let proto = *ip.get(ipv4::PROTO).ok_or(ParseError)?;
    let src = get_addr(ip, ipv4::SRC).ok_or(ParseError)?;
    let dst = get_addr(ip, ipv4::DST).ok_or(ParseError)?;
    if fragment_offset(ip).ok_or(ParseError)? != 0 {
        return Ok(Parsed {
            ihl,
            kind: Kind::LaterFragment,
        });
    }
    let l4 = ip.get(ihl..).ok_or(ParseError)?;
    let kind = match proto {
        ip_proto::TCP => {
            // the fixed header must be there, and the data offset must fit
            let flags = *l4.get(tcp::FLAGS).ok_or(ParseError)?;
            let doff = tcp::header_len(l4).ok_or(ParseError)?;
            if doff < tcp::MIN_HEADER_LEN || doff > l4.len() {
                return Err(ParseError);
            }
            let t = ports_tuple(src, dst, l4, Proto::Tcp)?;
            if !TCP_INFO {
                return Ok(Parsed {
                    ihl,
                    kind: Kind::Flow(t, None),
                });
            }
            // The IP total length bounds the data (Ethernet padding is not data); a
            // GSO packet's field may be 0, then the buffer is the packet.
            let total = match usize::from(be16(ip, ipv4::TOTAL_LEN).ok_or(ParseError)?) {
                0 => ip.len(),
                n => n.min(ip.len()),
            };
            let payload = total.saturating_sub(ihl + doff) as u32;
            let info = TcpInfo::read(l4, flags, doff, payload).ok_or(ParseError)?;
            Kind::Flow(t, Some(info))
        }
        ip_proto::UDP => {
            if l4.len() < 8 {
                return Err(ParseError);
            }
            let t = ports_tuple(src, dst, l4, Proto::Udp)?;
            Kind::Flow(t, None)
        }
        ip_proto::ICMP => {
            if l4.len() < 8 {
                return Err(ParseError);
            }
            let (ty, code) = (l4[0], l4[1]);
            let id = be16(l4, 4).ok_or(ParseError)?;
            match ty {
                icmp_type::ECHO_REQUEST if code == 0 => Kind::Flow(
                    Tuple {
                        src,
                        dst,
                        sport: id,
                        dport: 0,
                        proto: Proto::IcmpEchoRequest,
                    },
                    None,
                ),
                icmp_type::ECHO_REPLY if code == 0 => Kind::Flow(
                    Tuple {
                        src,
                        dst,
                        sport: 0,
                        dport: id,
                        proto: Proto::IcmpEchoReply,
                    },
                    None,
                ),
                icmp_type::DEST_UNREACHABLE
                | icmp_type::SOURCE_QUENCH
                | icmp_type::REDIRECT
                | icmp_type::TIME_EXCEEDED
                | icmp_type::PARAMETER_PROBLEM => parse_quoted(ip, ihl),
                _ => Kind::Untracked,
            }
        }
        other => Kind::Flow(
            Tuple {
                src,
                dst,
                sport: 0,
                dport: 0,
                proto: Proto::Other(other),
            },
            None,
        ),
    };
    Ok(Parsed { ihl, kind })
}

/// The packet quoted by the ICMP error at `ip[ihl..]`. RFC 792 quotes the IP header and
/// the first 8 bytes of its payload (RFC 1812 section 4.3.2.3 allows more): enough for
/// ports, an UDP checksum and an echo identifier, not for a TCP checksum.
/// Netfilter checks the outer destination against the flow the quote finds (it must
/// be that flow's end, as Linux's `nf_conntrack_inet_error` has it).
fn parse_quoted(ip: &[u8], ihl: usize) -> Kind {
    let icmp = ihl;
    let Some(inner_at) = icmp.checked_add(8) else {
        return Kind::Untracked;
    };
    let Some(inner) = ip.get(inner_at..) else {
        return Kind::Untracked;
    };
    let Ok(inner_ihl) = header_len(inner) else {
        return Kind::Untracked;
    };
    // a quoted fragment other than the first has no ports to find the flow by
    if fragment_offset(inner) != Some(0) {
        return Kind::Untracked;
    }
    let l4_off = inner_ihl;
    let Some(l4) = inner.get(l4_off..) else {
        return Kind::Untracked;
    };
    if l4.len() < 8 {
        return Kind::Untracked;
    }
    let (Some(src), Some(dst), Some(&proto)) = (
        get_addr(inner, ipv4::SRC),
        get_addr(inner, ipv4::DST),
        inner.get(ipv4::PROTO),
    ) else {
        return Kind::Untracked;
    };
    let (p0, p1) = (be16(l4, 0).unwrap_or(0), be16(l4, 2).unwrap_or(0));
    let tuple = match proto {
        ip_proto::TCP => Tuple {
            src,
            dst,
            sport: p0,
            dport: p1,
            proto: Proto::Tcp,
        },
        ip_proto::UDP => Tuple {
            src,
            dst,
            sport: p0,
            dport: p1,
            proto: Proto::Udp,
        },
        ip_proto::ICMP => {
            let id = be16(l4, 4).unwrap_or(0);
            match (l4[0], l4[1]) {
                (icmp_type::ECHO_REQUEST, 0) => Tuple {
                    src,
                    dst,
                    sport: id,
                    dport: 0,
                    proto: Proto::IcmpEchoRequest,
                },
                (icmp_type::ECHO_REPLY, 0) => Tuple {
                    src,
                    dst,
                    sport: 0,
                    dport: id,
                    proto: Proto::IcmpEchoReply,
                },
                // never an error about an error (RFC 1122 3.2.2)
                _ => return Kind::Untracked,
            }
        }
        other => Tuple {
            src,
            dst,
            sport: 0,
            dport: 0,
            proto: Proto::Other(other),
        },
    };
    Kind::IcmpError(Quoted {
        tuple,
        icmp,
        ip: inner_at,
        l4: inner_at + l4_off,
    })
}

#[cfg(test)]
mod tests {
    use super::tcp_options;

    const TS: [u8; 12] = [1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9];

    #[test]
    fn options_after_linuxs_timestamps_are_still_read() {
        assert_eq!(tcp_options(&TS, false), (None, false, None));
        // NOP NOP TS, NOP NOP SACK (two blocks): the highest right edge
        let mut o = TS.to_vec();
        o.extend_from_slice(&[1, 1, 5, 18, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 9, 0, 0, 0, 20]);
        assert_eq!(tcp_options(&o, false), (None, false, Some(20)));
        // a SYN's: timestamps first, then window scale and SACK permitted
        let mut o = TS.to_vec();
        o.extend_from_slice(&[1, 3, 3, 7, 4, 2, 0, 0]);
        assert_eq!(tcp_options(&o, true), (Some(7), true, None));
        // cut short: what was read counts
        assert_eq!(
            tcp_options(&[1, 1, 8, 10, 0, 0, 0, 7], true),
            (None, false, None)
        );
        assert_eq!(tcp_options(&[1, 1, 3, 3, 7], true), (Some(7), false, None));
    }
}
