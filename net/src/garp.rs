//! Gratuitous ARP (RFC 5227 section 3, "ARP Announcement"): after the domain moved
//! (restored or migrated), each of its IPv4 addresses is announced from its
//! interface so that switches (dom0's bridge) and neighbours learn where it is now,
//! as Linux's netfront does with `netdev_notify_peers` after a resume.

use alloc::vec;
use alloc::vec::Vec;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    EthernetRepr, Ipv4Address,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
