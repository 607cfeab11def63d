//! Announcing where the domain is after it moved (restored or migrated), so that
//! switches (dom0's bridge) and neighbours learn it, as Linux's netfront does with
//! `netdev_notify_peers` after a resume:
//! - each IPv4 address by a gratuitous ARP (RFC 5227 section 3, "ARP Announcement");
//! - each IPv6 address (the link-local one included: LAN hosts route through it) by
//!   an unsolicited neighbour advertisement to all nodes (RFC 4861 section 7.2.6),
//!   with the Override flag, and the Router flag when the domain routes (a
//!   neighbour that saw it clear would drop the router from its default router list,
//!   section 7.2.5).
//!
//! The local stack's own solicited advertisements (smoltcp's answers to neighbour
//! solicitations) carry no Router flag; a routing link sets it on them
//! ([`with_router_flag`]), or every LAN host's first reachability probe of its
//! IPv6 router (Linux: about 30 s after its advertisement) would answer "a host",
//! and Linux drops that router's default route (`rt6_clean_tohost`).

use alloc::vec;
use alloc::vec::Vec;
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    EthernetRepr, Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv4Address, Ipv6Address, Ipv6Packet,
    Ipv6Repr, NdiscNeighborFlags, NdiscRepr, RawHardwareAddress,
};

/// An ARP announcement of `ip` at `mac`: a broadcast request whose sender and target
/// protocol addresses are both `ip` (the form RFC 5227 prescribes, which every
/// neighbour cache updates from).
pub fn announcement(mac: [u8; 6], ip: Ipv4Address) -> Vec<u8> {
    let arp = ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Request,
        source_hardware_addr: EthernetAddress(mac),
        source_protocol_addr: ip,
        target_hardware_addr: EthernetAddress([0; 6]),
        target_protocol_addr: ip,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(mac),
        dst_addr: EthernetAddress::BROADCAST,
        ethertype: EthernetProtocol::Arp,
    };
    let mut buf = vec![0u8; eth.buffer_len() + arp.buffer_len()];
    let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
    eth.emit(&mut frame);
    arp.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
    buf
}

/// The longest neighbour advertisement [`with_router_flag`] rewrites (the stack's
/// are 86 bytes: Ethernet, IPv6, the message and its link-layer address option).
pub const NA_COPY: usize = 128;

/// Where the ICMPv6 message of an Ethernet frame of IPv6 without extension headers
/// begins.
const ICMP6_AT: usize = 14 + 40;

/// If `frame` is a neighbour advertisement (Ethernet, IPv6 with no extension
/// header, ICMPv6 type 136) of at most [`NA_COPY`] bytes whose Router flag is clear,
/// a copy in `buf` with the flag set and its checksum updated as RFC 1624 does;
/// else `None` (the frame goes as it is).
pub fn with_router_flag<'a>(frame: &[u8], buf: &'a mut [u8; NA_COPY]) -> Option<&'a [u8]> {
    let icmp = ICMP6_AT;
    if frame.len() > NA_COPY
        || frame.len() < icmp + 24
        || frame[12..14] != [0x86, 0xdd]
        || frame[14 + 6] != 58
        || frame[icmp] != 136
        || frame[icmp + 4] & 0x80 != 0
    {
        return None;
    }
    let b = &mut buf[..frame.len()];
    b.copy_from_slice(frame);
    let word = |b: &[u8], at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
    let old = word(b, icmp + 4);
    b[icmp + 4] |= 0x80;
    let new = word(b, icmp + 4);
    // HC' = ~(~HC + ~m + m')
    let mut sum = u32::from(!word(b, icmp + 2)) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    b[icmp + 2..icmp + 4].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    Some(b)
}

/// An unsolicited neighbour advertisement of `ip` at `mac`, to all nodes
/// (`ff02::1`, Ethernet `33:33:00:00:00:01`), from `ip` itself, hop limit 255, with
/// the target link-layer address option; Override set, Router set if `router`.
pub fn neighbour_advertisement(mac: [u8; 6], ip: Ipv6Address, router: bool) -> Vec<u8> {
    let mut flags = NdiscNeighborFlags::OVERRIDE;
    if router {
        flags |= NdiscNeighborFlags::ROUTER;
    }
    let na = Icmpv6Repr::Ndisc(NdiscRepr::NeighborAdvert {
        flags,
        target_addr: ip,
        lladdr: Some(RawHardwareAddress::from_bytes(&mac)),
    });
    ndisc_frame(mac, ip, Ipv6Address::new(0xff02, 0, 0, 0, 0, 0, 0, 1), &na)
}

/// A neighbour discovery message `msg` from `src` at `mac` to the multicast `dst`
/// (Ethernet `33:33` and its last four octets), hop limit 255 (RFC 4861 7.1: a
/// message with any other is ignored), its checksum set.
pub(crate) fn ndisc_frame(
    mac: [u8; 6],
    src: Ipv6Address,
    dst: Ipv6Address,
    msg: &Icmpv6Repr<'_>,
) -> Vec<u8> {
    let ip6 = Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Icmpv6,
        payload_len: msg.buffer_len(),
        hop_limit: 255,
    };
    let d = dst.octets();
    let eth = EthernetRepr {
        src_addr: EthernetAddress(mac),
        dst_addr: EthernetAddress([0x33, 0x33, d[12], d[13], d[14], d[15]]),
        ethertype: EthernetProtocol::Ipv6,
    };
    let mut buf = vec![0u8; eth.buffer_len() + ip6.buffer_len() + msg.buffer_len()];
    let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
    eth.emit(&mut frame);
    let mut packet = Ipv6Packet::new_unchecked(frame.payload_mut());
    ip6.emit(&mut packet);
    msg.emit(
        &src,
        &dst,
        &mut Icmpv6Packet::new_unchecked(packet.payload_mut()),
        &ChecksumCapabilities::default(),
    );
    buf
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags of the NA in `f`, its checksum checked by the parse.
    fn na_flags(f: &[u8]) -> NdiscNeighborFlags {
        let eth = EthernetFrame::new_checked(f).unwrap();
        let p = Ipv6Packet::new_checked(eth.payload()).unwrap();
        let ip6 = Ipv6Repr::parse(&p).unwrap();
        let icmp = Icmpv6Packet::new_checked(p.payload()).unwrap();
        match Icmpv6Repr::parse(
            &ip6.src_addr,
            &ip6.dst_addr,
            &icmp,
            &ChecksumCapabilities::default(),
        ) {
            Ok(Icmpv6Repr::Ndisc(NdiscRepr::NeighborAdvert { flags, .. })) => flags,
            other => panic!("not a valid NA: {other:?}"),
        }
    }

    #[test]
    fn the_stacks_advertisements_get_the_router_flag_and_a_checksum_still_right() {
        let mac = [0x00, 0x16, 0x3e, 0x01, 0x00, 0x02];
        let mut buf = [0u8; NA_COPY];
        for n in 0..300u16 {
            // many addresses: every carry of the checksum update is met
            let ip = Ipv6Address::new(0xfe80, 0, 0, 0, 0x216, 0x3eff, n, n.wrapping_mul(977));
            let f = neighbour_advertisement(mac, ip, false);
            assert_eq!(na_flags(&f), NdiscNeighborFlags::OVERRIDE);
            let r = with_router_flag(&f, &mut buf).expect("rewritten").to_vec();
            assert_eq!(
                na_flags(&r),
                NdiscNeighborFlags::OVERRIDE | NdiscNeighborFlags::ROUTER
            );
            assert_eq!(r.len(), f.len());
            assert!(with_router_flag(&r, &mut buf).is_none(), "already set");
        }
        // not an NA: a solicitation, an ARP, a runt
        let ip = Ipv6Address::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
        let mut ns = neighbour_advertisement(mac, ip, false);
        ns[ICMP6_AT] = 135;
        assert!(with_router_flag(&ns, &mut buf).is_none());
        let arp = announcement(mac, Ipv4Address::new(192, 168, 1, 1));
        assert!(with_router_flag(&arp, &mut buf).is_none());
        assert!(with_router_flag(&ns[..60], &mut buf).is_none());
    }

    #[test]
    fn announces_the_address_as_both_sender_and_target_to_everyone() {
        let mac = [0x00, 0x16, 0x3e, 0x12, 0x34, 0x56];
        let ip = Ipv4Address::new(192, 168, 1, 1);
        let f = announcement(mac, ip);
        assert_eq!(f.len(), 42);
        let eth = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(eth.dst_addr(), EthernetAddress::BROADCAST);
        assert_eq!(eth.src_addr(), EthernetAddress(mac));
        assert_eq!(eth.ethertype(), EthernetProtocol::Arp);
        let arp = ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).unwrap()).unwrap();
        assert_eq!(
            arp,
            ArpRepr::EthernetIpv4 {
                operation: ArpOperation::Request,
                source_hardware_addr: EthernetAddress(mac),
                source_protocol_addr: ip,
                target_hardware_addr: EthernetAddress([0; 6]),
                target_protocol_addr: ip,
            }
        );
    }

    #[test]
    fn advertises_the_ipv6_address_to_all_nodes_overriding_with_the_router_flag_as_asked() {
        let mac = [0x00, 0x16, 0x3e, 0x12, 0x34, 0x56];
        let ip = Ipv6Address::new(0xfe80, 0, 0, 0, 0x216, 0x3eff, 0xfe12, 0x3456);
        for router in [true, false] {
            let f = neighbour_advertisement(mac, ip, router);
            let eth = EthernetFrame::new_checked(&f[..]).unwrap();
            assert_eq!(eth.dst_addr(), EthernetAddress([0x33, 0x33, 0, 0, 0, 1]));
            assert_eq!(eth.src_addr(), EthernetAddress(mac));
            assert_eq!(eth.ethertype(), EthernetProtocol::Ipv6);
            let p = Ipv6Packet::new_checked(eth.payload()).unwrap();
            let ip6 = Ipv6Repr::parse(&p).unwrap();
            assert_eq!(ip6.src_addr, ip);
            assert_eq!(ip6.dst_addr, Ipv6Address::new(0xff02, 0, 0, 0, 0, 0, 0, 1));
            assert_eq!(ip6.hop_limit, 255, "RFC 4861 7.1.2: else it is ignored");
            let icmp = Icmpv6Packet::new_checked(p.payload()).unwrap();
            // the checksum is checked by the parse
            let repr = Icmpv6Repr::parse(
                &ip6.src_addr,
                &ip6.dst_addr,
                &icmp,
                &ChecksumCapabilities::default(),
            )
            .unwrap();
            let mut flags = NdiscNeighborFlags::OVERRIDE;
            if router {
                flags |= NdiscNeighborFlags::ROUTER;
            }
            assert_eq!(
                repr,
                Icmpv6Repr::Ndisc(NdiscRepr::NeighborAdvert {
                    flags,
                    target_addr: ip,
                    lladdr: Some(RawHardwareAddress::from_bytes(&mac)),
                })
            );
        }
    }
}
