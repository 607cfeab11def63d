//! Flow keys of IPv6 packets: which connection a forwarded IPv6 packet belongs to.
//!
//! The IPv6 counterpart of [`crate::flow::parse`], after the extension header walk
//! ([`crate::exthdr`]) found the upper layer, as Linux's `nf_conntrack_proto_*.c`
//! with `ipv6_skip_exthdr`: TCP and UDP by ports, ICMPv6 echo (128/129) by
//! identifier, any other protocol by addresses; ICMPv6 errors (types 1 to 4) give the
//! tuple of the packet they quote (`nf_conntrack_proto_icmpv6.c`,
//! `icmpv6_error_message`), so they can be matched to the flow they are RELATED to;
//! neighbour discovery, MLD and the other informational messages are not tracked
//! (Linux marks them untracked). A fragment that is not the first has no ports
//! (Linux reassembles first, `nf_defrag_ipv6`; this router does not reassemble IPv6).

use crate::exthdr::{self, Upper};
use crate::flow::{Proto, TcpInfo, Tuple6};
use crate::ipv4::{be16, ports, tcp};
use crate::ipv6::{self, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP};

/// ICMPv6 echo request.
pub const ECHO_REQUEST: u8 = 128;
/// ICMPv6 echo reply.
pub const ECHO_REPLY: u8 = 129;

/// What an IPv6 packet is, for connection tracking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind6 {
    /// A packet of a flow.
    Flow(Tuple6, Option<TcpInfo>),
    /// An ICMPv6 error about the quoted packet, whose tuple (as it was sent) this is.
    IcmpError(Tuple6),
    /// A fragment other than the first.
    LaterFragment,
    /// ICMPv6 that is neither echo nor a readable error (ND, MLD, ...).
    Untracked,
}

/// The packet is shorter than its headers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseError6;

fn addrs(ip: &[u8]) -> Result<([u8; 16], [u8; 16]), ParseError6> {
    let get = |at: usize| {
        ip.get(at..at + 16)
            .and_then(|b| <[u8; 16]>::try_from(b).ok())
            .ok_or(ParseError6)
    };
    Ok((get(ipv6::SRC)?, get(ipv6::DST)?))
}

/// Parses `ip` (exactly the packet) whose chain ended at `upper`.
pub fn parse(ip: &[u8], upper: &Upper) -> Result<Kind6, ParseError6> {
    let (src, dst) = addrs(ip)?;
    if upper.fragment.is_some_and(|f| f.offset != 0) {
        return Ok(Kind6::LaterFragment);
    }
    let flow = |proto, sport, dport| Tuple6 {
        src,
        dst,
        sport,
        dport,
        proto,
    };
    let l4 = ip.get(upper.offset..).ok_or(ParseError6)?;
    Ok(match upper.proto {
        PROTO_TCP => {
            let flags = *l4.get(tcp::FLAGS).ok_or(ParseError6)?;
            let doff = tcp::header_len(l4).ok_or(ParseError6)?;
            if doff < tcp::MIN_HEADER_LEN || doff > l4.len() {
                return Err(ParseError6);
            }
            let (sport, dport) = ports(l4).ok_or(ParseError6)?;
            let t = flow(Proto::Tcp, sport, dport);
            let payload = u32::try_from(l4.len() - doff).unwrap_or(u32::MAX);
            let info = TcpInfo::read(l4, flags, doff, payload).ok_or(ParseError6)?;
            Kind6::Flow(t, Some(info))
        }
        PROTO_UDP => {
            if l4.len() < 8 {
                return Err(ParseError6);
            }
            let (sport, dport) = ports(l4).ok_or(ParseError6)?;
            let t = flow(Proto::Udp, sport, dport);
            Kind6::Flow(t, None)
        }
        PROTO_ICMPV6 => {
            let (&ty, &code) = (
                l4.first().ok_or(ParseError6)?,
                l4.get(1).ok_or(ParseError6)?,
            );
            match ty {
                ECHO_REQUEST | ECHO_REPLY if code == 0 => {
                    let id = be16(l4, 4).ok_or(ParseError6)?;
                    if ty == ECHO_REQUEST {
                        Kind6::Flow(flow(Proto::IcmpEchoRequest, id, 0), None)
                    } else {
                        Kind6::Flow(flow(Proto::IcmpEchoReply, 0, id), None)
                    }
                }
                1..=4 => parse_quoted(l4.get(8..).unwrap_or(&[])),
                _ => Kind6::Untracked,
            }
        }
        exthdr::ESP | exthdr::NO_NEXT => Kind6::Flow(flow(Proto::Other(upper.proto), 0, 0), None),
        other => Kind6::Flow(flow(Proto::Other(other), 0, 0), None),
    })
}

/// The packet an ICMPv6 error quotes (`inner`: from its IPv6 header on).
fn parse_quoted(inner: &[u8]) -> Kind6 {
    let Ok(h) = ipv6::parse_prefix(inner) else {
        return Kind6::Untracked;
    };
    // the quote may be cut short: walk the chain within what is there
    let Ok(u) = exthdr::walk(inner, h.next_header) else {
        return Kind6::Untracked;
    };
    match parse(inner, &u) {
        // a quoted TCP header may be cut after its ports: only the tuple matters
        Ok(Kind6::Flow(t, _)) => Kind6::IcmpError(t),
        Err(_) if u.proto == PROTO_TCP && u.has_l4() => {
            let l4 = inner.get(u.offset..).unwrap_or(&[]);
            match (ports(l4), addrs(inner)) {
                (Some((s, d)), Ok((src, dst))) => Kind6::IcmpError(Tuple6 {
                    src,
                    dst,
                    sport: s,
                    dport: d,
                    proto: Proto::Tcp,
                }),
                _ => Kind6::Untracked,
            }
        }
        _ => Kind6::Untracked,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::testutil::{icmp6, ipv6 as packet, tcp, udp};

    const A: &str = "2001:db8:1::10";
    const B: &str = "2001:db8:2::20";

    fn kind(p: &[u8]) -> Result<Kind6, ParseError6> {
        let u = exthdr::walk(p, p[6]).unwrap();
        parse(p, &u)
    }

    fn o(s: &str) -> [u8; 16] {
        s.parse::<core::net::Ipv6Addr>().unwrap().octets()
    }

    #[test]
    fn tcp_udp_and_echo_tuples() {
        let p = packet(
            A,
            B,
            6,
            64,
            &tcp(A, B, 1000, 80, 7, 0x02, &[3, 3, 7, 1], b"x"),
        );
        let Kind6::Flow(t, Some(i)) = kind(&p).unwrap() else {
            panic!()
        };
        assert_eq!((t.src, t.dst, t.sport, t.dport), (o(A), o(B), 1000, 80));
        assert_eq!((i.seq, i.flags, i.wscale, i.payload), (7, 0x02, Some(7), 1));
        let p = packet(A, B, 17, 64, &udp(A, B, 5, 53, &[]));
        assert!(matches!(kind(&p), Ok(Kind6::Flow(t, None)) if t.proto == Proto::Udp));
        let p = packet(A, B, 58, 64, &icmp6(A, B, 128, 0, &[0, 9, 0, 1]));
        let Kind6::Flow(t, None) = kind(&p).unwrap() else {
            panic!()
        };
        assert_eq!((t.proto, t.sport), (Proto::IcmpEchoRequest, 9));
        let p = packet(A, B, 58, 64, &icmp6(A, B, 129, 0, &[0, 9, 0, 1]));
        let Kind6::Flow(r, None) = kind(&p).unwrap() else {
            panic!()
        };
        assert_eq!(r.invert().proto, Proto::IcmpEchoRequest);
        // ND is not tracked
        let p = packet(A, B, 58, 255, &icmp6(A, B, 135, 0, &[0; 20]));
        assert_eq!(kind(&p), Ok(Kind6::Untracked));
        // a truncated TCP header
        let p = packet(A, B, 6, 64, &[0; 10]);
        assert_eq!(kind(&p), Err(ParseError6));
    }

    #[test]
    fn an_error_gives_the_quoted_tuple_even_cut_short() {
        let inner = packet(B, A, 6, 64, &tcp(B, A, 80, 1000, 7, 0x12, &[], &[]));
        let err = icmp6(A, B, 1, 4, &[&[0u8; 4][..], &inner[..48]].concat());
        let p = packet(A, B, 58, 64, &err);
        let Kind6::IcmpError(q) = kind(&p).unwrap() else {
            panic!()
        };
        assert_eq!((q.src, q.dst, q.sport, q.dport), (o(B), o(A), 80, 1000));
        // an error about an error is not related to anything
        let inner = packet(B, A, 58, 64, &icmp6(B, A, 3, 0, &[0; 4]));
        let err = icmp6(A, B, 1, 4, &[&[0u8; 4][..], &inner[..]].concat());
        let p = packet(A, B, 58, 64, &err);
        assert_eq!(kind(&p), Ok(Kind6::Untracked));
    }
}
