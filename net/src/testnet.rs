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
