//! Test support: one smoltcp interface on a loopback device, for the services' host
//! tests (a server and the test's client share it).

use alloc::vec::Vec;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::{Loopback, Medium};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

/// An interface with `addr`/24 on a fresh loopback device.
pub fn loopback(addr: IpAddress) -> (Interface, Loopback) {
    let mut dev = Loopback::new(Medium::Ethernet);
    let config = Config::new(EthernetAddress([2, 0, 0, 0, 0, 1]).into());
    let mut iface = Interface::new(config, &mut dev, Instant::from_millis(0));
    iface.update_ip_addrs(|a| a.push(IpCidr::new(addr, 24)).unwrap());
    (iface, dev)
}

/// A loopback interface and its sockets, polled at a simulated clock.
pub struct Loop {
    pub iface: Interface,
    pub dev: Loopback,
    pub sockets: SocketSet<'static>,
}

impl Loop {
    /// An interface with `addr`/24 on a fresh loopback device ([`loopback`]), no
    /// sockets yet.
    pub fn new(addr: IpAddress) -> Loop {
        let (iface, dev) = loopback(addr);
        Loop {
            iface,
            dev,
            sockets: SocketSet::new(Vec::new()),
        }
    }

    /// Polls the interface at `now_ms`.
    pub fn poll(&mut self, now_ms: i64) {
        self.iface.poll(
            Instant::from_millis(now_ms),
            &mut self.dev,
            &mut self.sockets,
        );
    }
}

/// A TCP socket with receive and send buffers of `bytes` each.
pub fn tcp_socket(bytes: usize) -> tcp::Socket<'static> {
    tcp::Socket::new(
        tcp::SocketBuffer::new(alloc::vec![0; bytes]),
        tcp::SocketBuffer::new(alloc::vec![0; bytes]),
    )
}

/// A UDP socket with room for `packets` datagrams and `bytes` of payload each way.
pub fn udp_socket(packets: usize, bytes: usize) -> udp::Socket<'static> {
    let buffer = || {
        udp::PacketBuffer::new(
            alloc::vec![udp::PacketMetadata::EMPTY; packets],
            alloc::vec![0; bytes],
        )
    };
    udp::Socket::new(buffer(), buffer())
}

/// An IPv4 packet carrying `l4` (protocol `proto`): a 20-byte header with TTL 64,
/// id `id`, DF if `df`, and its checksum right.
pub fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, id: u16, df: bool, l4: &[u8]) -> Vec<u8> {
    let len = (20 + l4.len()) as u16;
    let mut p = alloc::vec![0x45, 0];
    p.extend_from_slice(&len.to_be_bytes());
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[if df { 0x40 } else { 0 }, 0, 64, proto, 0, 0]);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    let c = xenlet_router::checksum::checksum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(l4);
    p
}

/// The checksum of the TCP or UDP segment `l4` (its checksum field 0) from `src`
/// to `dst`, pseudo-header included.
pub fn l4_checksum(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> u16 {
    use xenlet_router::checksum::{fold, sum};
    let s = sum(sum(0, &src), &dst) + u32::from(proto) + l4.len() as u32;
    !fold(sum(s, l4))
}

/// A UDP datagram (header and `data`) from `src` to `dst`, its checksum right.
pub fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(data);
    let c = l4_checksum(src, dst, 17, &u);
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}
