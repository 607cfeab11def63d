//! What the firewall matches on, read once from an IPv4 packet's bytes.
//!
//! Offsets from RFC 791 §3.1 (IPv4), RFC 9293 §3.1 (TCP), RFC 768 (UDP), RFC 792
//! (ICMP). A packet too short for its transport header still gets a [`Packet`], with
//! no ports: a rule that matches ports then cannot match it (nftables' `tcp dport`
//! does not match a truncated header either).

use crate::flow::get_addr;
use crate::ipv4;

/// The fields rules match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// IP protocol number.
    pub proto: u8,
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// (source, destination) ports of TCP/UDP in a first fragment.
    pub ports: Option<(u16, u16)>,
    /// ICMP (type, code) of a first fragment.
    pub icmp: Option<(u8, u8)>,
    /// TCP flags byte.
    pub tcp_flags: Option<u8>,
    /// Total length.
    pub len: usize,
    /// The Ethernet source it came with, when the caller knows it.
    pub src_mac: Option<[u8; 6]>,
    /// An IPv6 packet's (source, destination); `src` and `dst` are then zero and
    /// `icmp` holds the ICMPv6 type and code.
    pub v6: Option<([u8; 16], [u8; 16])>,
}

impl Packet {
    /// Reads `ip` (an IPv4 packet whose header the caller checked); `None` if it is
    /// shorter than 20 bytes or its header length.
    pub fn parse(ip: &[u8]) -> Option<Packet> {
        let hl = ipv4::header_len(ip);
        if hl < ipv4::MIN_HEADER_LEN || ip.len() < hl {
            return None;
        }
        let proto = *ip.get(ipv4::PROTO)?;
        let src = get_addr(ip, ipv4::SRC)?;
        let dst = get_addr(ip, ipv4::DST)?;
        let first = ipv4::frag_offset(ip) == 0;
        let l4 = ip.get(hl..).unwrap_or(&[]);
        let mut p = Packet {
            proto,
            src,
            dst,
            ports: None,
            icmp: None,
            tcp_flags: None,
            len: ip.len(),
            src_mac: None,
            v6: None,
        };
        if first {
            match proto {
                ipv4::PROTO_TCP | ipv4::PROTO_UDP => {
                    if let Some(ports) = ipv4::ports(l4) {
                        p.ports = Some(ports);
                    }
                    if proto == ipv4::PROTO_TCP {
                        p.tcp_flags = l4.get(ipv4::tcp::FLAGS).copied();
                    }
                }
                ipv4::PROTO_ICMP => {
                    if let (Some(&t), Some(&c)) = (l4.first(), l4.get(1)) {
                        p.icmp = Some((t, c));
                    }
                }
                _ => {}
            }
        }
        Some(p)
    }

    /// Reads an IPv6 packet `ip` whose extension header chain ended at `upper`
    /// ([`crate::exthdr::walk`]); `None` if shorter than its fixed header.
    pub fn parse6(ip: &[u8], upper: &crate::exthdr::Upper) -> Option<Packet> {
        let addr = |at: usize| {
            ip.get(at..at + 16)
                .and_then(|b| <[u8; 16]>::try_from(b).ok())
        };
        let v6 = (addr(crate::ipv6::SRC)?, addr(crate::ipv6::DST)?);
        let mut p = Packet {
            proto: upper.proto,
            src: [0; 4],
            dst: [0; 4],
            ports: None,
            icmp: None,
            tcp_flags: None,
            len: ip.len(),
            src_mac: None,
            v6: Some(v6),
        };
        if upper.has_l4() {
            let l4 = ip.get(upper.offset..).unwrap_or(&[]);
            match upper.proto {
                ipv4::PROTO_TCP | ipv4::PROTO_UDP => {
                    if let Some(ports) = ipv4::ports(l4) {
                        p.ports = Some(ports);
                    }
                    if upper.proto == ipv4::PROTO_TCP {
                        p.tcp_flags = l4.get(ipv4::tcp::FLAGS).copied();
                    }
                }
                crate::ipv6::PROTO_ICMPV6 => {
                    if let (Some(&t), Some(&c)) = (l4.first(), l4.get(1)) {
                        p.icmp = Some((t, c));
                    }
                }
                _ => {}
            }
        }
        Some(p)
    }

    /// A TCP segment with SYN and none of ACK, RST, FIN (nftables'
    /// `tcp flags & (fin | syn | rst | ack) == syn`).
    pub fn is_tcp_syn(&self) -> bool {
        self.tcp_flags.is_some_and(|f| f & 0x17 == 0x02)
    }

    /// The protocol's name in log lines.
    pub fn proto_name(&self) -> &'static str {
        match self.proto {
            ipv4::PROTO_TCP => "TCP",
            ipv4::PROTO_UDP => "UDP",
            ipv4::PROTO_ICMP => "ICMP",
            crate::ipv6::PROTO_ICMPV6 => "ICMPv6",
            _ => "",
        }
    }
}
