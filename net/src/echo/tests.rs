//! Host tests of the echo server over smoltcp's loopback device.

use super::*;
use crate::testnet::Loop;
use smoltcp::wire::{IpAddress, IpEndpoint};

const SERVER: IpAddress = IpAddress::v4(10, 0, 0, 1);
const PORT: u16 = 7;

struct Net {
    lo: Loop,
    now: i64,
    srv: EchoServer,
}

impl Net {
    fn new() -> Self {
        let mut lo = Loop::new(SERVER);
        let srv = EchoServer::new(&mut lo.sockets, PORT);
        Net { lo, now: 0, srv }
    }

    fn step(&mut self) {
        self.now += 1;
        self.lo.poll(self.now);
        self.srv.poll(&mut self.lo.sockets);
    }

    fn tcp(&mut self, h: SocketHandle) -> &mut tcp::Socket<'static> {
        self.lo.sockets.get_mut::<tcp::Socket>(h)
    }

    fn connect(&mut self, local_port: u16) -> SocketHandle {
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; 4096]),
            tcp::SocketBuffer::new(vec![0; 4096]),
        );
        s.connect(self.lo.iface.context(), (SERVER, PORT), local_port)
            .unwrap();
        self.lo.sockets.add(s)
    }
}

fn pattern(seed: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 7 + seed * 13) % 251) as u8)
        .collect()
}

#[test]
fn tcp_echo_several_clients_at_once_and_after() {
    let mut net = Net::new();
    for round in 0..3 {
        let clients: Vec<SocketHandle> = (0..MAX_TCP_CONNECTIONS)
            .map(|i| net.connect(50000 + (round * 10 + i) as u16))
            .collect();
        let sent: Vec<Vec<u8>> = (0..clients.len())
            .map(|i| pattern(i + round, 5000 + 1000 * i))
            .collect();
        let mut off = vec![0usize; clients.len()];
        let mut got: Vec<Vec<u8>> = vec![Vec::new(); clients.len()];
        let mut buf = [0u8; 1024];
        for _ in 0..5000 {
            net.step();
            for (i, &h) in clients.iter().enumerate() {
                let s = net.tcp(h);
                if s.may_send() && off[i] < sent[i].len() {
                    off[i] += s.send_slice(&sent[i][off[i]..]).unwrap_or(0);
                    if off[i] == sent[i].len() {
                        s.close();
                    }
                }
                while let Ok(n @ 1..) = s.recv_slice(&mut buf) {
                    got[i].extend_from_slice(&buf[..n]);
                }
            }
            if clients.iter().all(|&h| !net.tcp(h).is_active()) {
                break;
            }
        }
        for i in 0..clients.len() {
            assert!(
                got[i] == sent[i],
                "round {round} client {i}: {} of {} bytes",
                got[i].len(),
                sent[i].len()
            );
            // The server closed its side after echoing everything.
            assert!(!net.tcp(clients[i]).is_active());
        }
        for h in clients {
            net.lo.sockets.remove(h);
        }
        net.step();
        assert_eq!(net.srv.tcp_connections(&net.lo.sockets), 0);
    }
}

#[test]
fn tcp_client_beyond_pool_is_refused() {
    let mut net = Net::new();
    let clients: Vec<SocketHandle> = (0..=MAX_TCP_CONNECTIONS)
        .map(|i| net.connect(51000 + i as u16))
        .collect();
    for _ in 0..50 {
        net.step();
    }
    let established = clients
        .iter()
        .filter(|&&h| net.tcp(h).state() == tcp::State::Established)
        .count();
    assert_eq!(established, MAX_TCP_CONNECTIONS);
    assert_eq!(
        net.srv.tcp_connections(&net.lo.sockets),
        MAX_TCP_CONNECTIONS
    );
}

#[test]
fn udp_echo_returns_each_datagram_to_its_sender() {
    let mut net = Net::new();
    let mut clients = Vec::new();
    for port in [6000u16, 6001] {
        let mut s = crate::testnet::udp_socket(8, 32 * 1024);
        s.bind(port).unwrap();
        clients.push(net.lo.sockets.add(s));
    }
    let to = IpEndpoint::new(SERVER, PORT);
    let msgs = [
        pattern(1, 1),
        pattern(2, 1400),
        pattern(3, UDP_MAX_DATAGRAM),
    ];
    for (i, &h) in clients.iter().enumerate() {
        let s = net.lo.sockets.get_mut::<udp::Socket>(h);
        for m in &msgs[i..] {
            s.send_slice(m, to).unwrap();
        }
        // Too large to echo: dropped, not truncated.
        s.send_slice(&pattern(4, UDP_MAX_DATAGRAM + 1), to).unwrap();
    }
    for _ in 0..20 {
        net.step();
    }
    for (i, &h) in clients.iter().enumerate() {
        let s = net.lo.sockets.get_mut::<udp::Socket>(h);
        let mut got = Vec::new();
        while let Ok((data, meta)) = s.recv() {
            assert_eq!(meta.endpoint, to);
            got.push(data.to_vec());
        }
        assert_eq!(got, msgs[i..].to_vec(), "client {i}");
    }
}
