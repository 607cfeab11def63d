//! Typed views of the headers the offloads read and rewrite in an Ethernet frame.
//!
//! The transmit merger and segmenter ([`crate::tso`]), the receive checksum check and
//! the MSS rewriting ([`crate::mss`]) look at IPv4, IPv6 and TCP headers in frames
//! smoltcp wrote or the backend handed over. They read and write them through
//! smoltcp's own wire types ([`Ipv4Packet`], [`Ipv6Packet`], [`TcpPacket`]) placed at
//! their offsets in the frame. The views are `new_unchecked`: each caller checks the
//! lengths it relies on first (as before, and with the same outcome for every frame),
//! then no accessor panics. What smoltcp has no accessor for is named here: the TCP
//! flags byte (compared and tested whole) and the byte ranges of a header that two
//! segments of one flow share ([`field`]).

use smoltcp::wire::{EthernetFrame, EthernetProtocol, Ipv4Packet, Ipv6Packet, TcpPacket};

/// Length of the Ethernet header.
pub const ETH: usize = 14;
/// Length of an IPv4 header without options.
pub const IPV4: usize = 20;
/// Length of the IPv6 header (extension headers are not followed here).
pub const IPV6: usize = 40;
/// Length of a TCP header without options.
pub const TCP: usize = 20;
/// Length of the UDP header.
pub const UDP: usize = 8;

/// Byte ranges inside a header, for what is compared or summed as raw bytes.
pub mod field {
    use core::ops::Range;

    /// IPv4 (RFC 791 3.1).
    pub mod ipv4 {
        use super::Range;
        /// Version, IHL, DSCP and ECN.
        pub const VER_TOS: Range<usize> = 0..2;
        /// Flags and fragment offset, TTL, protocol.
        pub const FRAG_TTL_PROTO: Range<usize> = 6..10;
        /// Source and destination addresses (the pseudo-header's).
        pub const ADDRS: Range<usize> = 12..20;
    }

    /// IPv6 (RFC 8200 3).
    pub mod ipv6 {
        use super::Range;
        /// Source and destination addresses (the pseudo-header's).
        pub const ADDRS: Range<usize> = 8..40;
    }

    /// TCP (RFC 9293 3.1).
    pub mod tcp {
        use super::Range;
        /// Source and destination ports.
        pub const PORTS: Range<usize> = 0..4;
        /// Acknowledgment number and data offset.
        pub const ACK_OFFSET: Range<usize> = 8..13;
        /// The flags byte (CWR ... FIN).
        pub const FLAGS: usize = 13;
        /// Window.
        pub const WINDOW: Range<usize> = 14..16;
        /// Checksum.
        pub const CHECKSUM: Range<usize> = 16..18;
        /// Urgent pointer, then the options.
        pub const URGENT: usize = 18;
    }

    /// UDP (RFC 768).
    pub mod udp {
        use super::Range;
        /// Checksum.
        pub const CHECKSUM: Range<usize> = 6..8;
    }
}

/// Bits of the TCP flags byte ([`field::tcp::FLAGS`]).
pub mod tcp_flag {
    /// No more data from the sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Push.
    pub const PSH: u8 = 0x08;
    /// The acknowledgment number is significant.
    pub const ACK: u8 = 0x10;
}

/// The EtherType of a frame with a whole Ethernet header.
pub fn ethertype(f: &[u8]) -> Option<EthernetProtocol> {
    EthernetFrame::new_checked(f).ok().map(|e| e.ethertype())
}

/// Whether `f` carries IPv6 (by its EtherType).
pub fn is_ipv6(f: &[u8]) -> bool {
    f.get(12..14) == Some(&[0x86, 0xdd][..])
}

/// The IPv4 header of a frame at least [`ETH`] + [`IPV4`] bytes long.
pub fn ipv4(f: &[u8]) -> Ipv4Packet<&[u8]> {
    Ipv4Packet::new_unchecked(&f[ETH..])
}

/// [`ipv4`], writable.
pub fn ipv4_mut(f: &mut [u8]) -> Ipv4Packet<&mut [u8]> {
    Ipv4Packet::new_unchecked(&mut f[ETH..])
}

/// The IPv6 header of a frame at least [`ETH`] + [`IPV6`] bytes long.
pub fn ipv6(f: &[u8]) -> Ipv6Packet<&[u8]> {
    Ipv6Packet::new_unchecked(&f[ETH..])
}

/// The TCP header at `at` in a frame at least `at` + [`TCP`] bytes long.
pub fn tcp(f: &[u8], at: usize) -> TcpPacket<&[u8]> {
    TcpPacket::new_unchecked(&f[at..])
}

/// [`tcp`], writable.
pub fn tcp_mut(f: &mut [u8], at: usize) -> TcpPacket<&mut [u8]> {
    TcpPacket::new_unchecked(&mut f[at..])
}

/// The flags byte of the TCP header at `at` (see [`tcp_flag`]).
pub fn tcp_flags(f: &[u8], at: usize) -> u8 {
    f[at + field::tcp::FLAGS]
}

/// Whether an IPv4 datagram is a piece of a larger one: more fragments follow, or it
/// has a fragment offset.
pub fn is_fragment(ip: &Ipv4Packet<&[u8]>) -> bool {
    ip.more_frags() || ip.frag_offset() != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use smoltcp::wire::IpProtocol;

    /// The views read the fields at the offsets the RFCs give, from literal bytes.
    #[test]
    fn views_read_the_rfc_offsets() {
        let mut f = [0u8; ETH + IPV4 + TCP];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[ETH..ETH + IPV4].copy_from_slice(&[
            0x45, 0, 0, 40, 0x12, 0x34, 0x20, 0x00, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        let t = ETH + IPV4;
        f[t..t + TCP].copy_from_slice(&[
            0x9c, 0x40, 0x14, 0x51, 0, 0, 0, 7, 0, 0, 0, 9, 0x50, 0x18, 0xff, 0xff, 0xab, 0xcd, 0,
            0,
        ]);
        assert_eq!(ethertype(&f), Some(EthernetProtocol::Ipv4));
        assert_eq!(ethertype(&f[..13]), None);
        let ip = ipv4(&f);
        assert_eq!((ip.version(), ip.header_len(), ip.total_len()), (4, 20, 40));
        assert_eq!((ip.ident(), ip.next_header()), (0x1234, IpProtocol::Tcp));
        assert!(is_fragment(&ip) && ip.more_frags());
        assert_eq!(&f[ETH..][field::ipv4::ADDRS], &[10, 0, 0, 1, 10, 0, 0, 2]);
        let tc = tcp(&f, t);
        assert_eq!(
            (tc.src_port(), tc.dst_port(), tc.header_len()),
            (40000, 5201, 20)
        );
        assert_eq!(tc.seq_number().0, 7);
        assert_eq!(tcp_flags(&f, t), tcp_flag::PSH | tcp_flag::ACK);
        assert_eq!(tc.checksum(), 0xabcd);
        assert_eq!(&f[t..][field::tcp::CHECKSUM], &[0xab, 0xcd]);

        ipv4_mut(&mut f).set_more_frags(false);
        assert!(!is_fragment(&ipv4(&f)));
        ipv4_mut(&mut f).set_frag_offset(8);
        assert!(is_fragment(&ipv4(&f)));
        tcp_mut(&mut f, t).set_psh(false);
        assert_eq!(tcp_flags(&f, t), tcp_flag::ACK);

        let mut g = [0u8; ETH + IPV6];
        g[12..14].copy_from_slice(&[0x86, 0xdd]);
        g[ETH] = 0x60;
        g[ETH + 4..ETH + 7].copy_from_slice(&[0, 20, 17]);
        assert_eq!(ethertype(&g), Some(EthernetProtocol::Ipv6));
        let ip6 = ipv6(&g);
        assert_eq!(
            (ip6.payload_len(), ip6.next_header()),
            (20, IpProtocol::Udp)
        );
    }
}
