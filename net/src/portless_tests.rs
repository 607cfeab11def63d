//! A port-less bridge (OpenWrt's `bridge_empty`) end to end on the host: two client
//! domains' vifs on the router's `br-guest`, which no vif of the router carries, and
//! a WAN on a vif; the router's own interface is the bridge (its own MAC).

use crate::bridge::Bridge;
use crate::config;
use crate::gateway::{Gateway, GatewaySpec, PortSpec, Routed};
use crate::iface::NetIf;
use crate::link::tests::{cable, Pipe};
use crate::link::Link;
use crate::netplan;
use alloc::vec::Vec;
use smoltcp::iface::SocketHandle;
use smoltcp::socket::udp;
use smoltcp::wire::IpAddress;

const VIF: [u8; 6] = [0x00, 0x16, 0x3e, 0, 0, 1];
const C1: [u8; 6] = [0x00, 0x16, 0x3e, 0, 0, 5];
const C2: [u8; 6] = [0x00, 0x16, 0x3e, 0, 0, 6];
const WAN_HOST: [u8; 6] = [0x02, 0x11, 0, 0, 0, 1];

type RouterIf = NetIf<Routed<Bridge<Pipe>>>;

struct Net {
    c1: NetIf<Pipe>,
    c2: NetIf<Pipe>,
    wan_host: NetIf<Pipe>,
    /// `eth1` (the WAN's vif), `br-guest` (port-less).
    router: Vec<RouterIf>,
    gw: Gateway,
}

fn net() -> Net {
    let (mut w1, mut w2) = cable();
    w1.mac = VIF;
    w2.mac = WAN_HOST;
    let (c1_port, mut c1_end) = cable();
    c1_end.mac = C1;
    let (c2_port, mut c2_end) = cable();
    c2_end.mac = C2;
    let mut guest = Bridge::portless("br-guest", netplan::portless_mac(VIF, 0));
    guest.add_port("vif5.0", c1_port, Some(C1)).ok().unwrap();
    guest.add_port("vif6.0", c2_port, Some(C2)).ok().unwrap();
    let host =
        |name, link, cfg: &str, seed| NetIf::new(name, link, &config::parse(cfg).unwrap(), 0, seed);
    let c1 = host("eth0", c1_end, "192.168.2.100/24,gw=192.168.2.1", 1);
    let c2 = host("eth0", c2_end, "192.168.2.101/24,gw=192.168.2.1", 2);
    let wan_host = host("eth0", w2, "10.0.0.1/24", 3);
    let mut router = alloc::vec![
        NetIf::new(
            "eth1",
            Routed::new(Bridge::plain("eth1", w1)),
            &config::parse("10.0.0.2/24,gw=10.0.0.1").unwrap(),
            0,
            4
        ),
        NetIf::new(
            "br-guest",
            Routed::new(guest),
            &config::parse("192.168.2.1/24").unwrap(),
            0,
            5
        ),
    ];
    let spec = GatewaySpec {
        ports: alloc::vec![PortSpec::wan("eth1"), PortSpec::lan("br-guest")],
        conntrack_max: 64,
        hash_seed: 7,
        firewall: None,
    };
    let gw = Gateway::new(&spec, &mut router).unwrap();
    Net {
        c1,
        c2,
        wan_host,
        router,
        gw,
    }
}

impl Net {
    fn step(&mut self, now: i64) {
        self.c1.poll(now);
        self.c2.poll(now);
        self.wan_host.poll(now);
        self.gw.poll(&mut self.router, now);
        for n in self.router.iter_mut() {
            n.poll(now);
        }
    }
}

fn bound(n: &mut NetIf<impl Link>, port: u16) -> SocketHandle {
    let mut s = crate::testnet::udp_socket(8, 2048);
    s.bind(port).unwrap();
    n.sockets.add(s)
}

fn send(n: &mut NetIf<impl Link>, h: SocketHandle, what: &[u8], to: (IpAddress, u16)) {
    n.sockets
        .get_mut::<udp::Socket>(h)
        .send_slice(what, to)
        .unwrap();
}

/// Steps the network until `got` gives something (at most 300 steps of 10 ms).
fn within(
    n: &mut Net,
    now: &mut i64,
    got: impl Fn(&mut Net) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    for _ in 0..300 {
        *now += 10;
        n.step(*now);
        if let Some(d) = got(n) {
            return Some(d);
        }
    }
    None
}

fn take(n: &mut NetIf<impl Link>, h: SocketHandle) -> Option<Vec<u8>> {
    n.sockets
        .get_mut::<udp::Socket>(h)
        .recv()
        .ok()
        .map(|(d, _)| d.to_vec())
}

#[test]
fn clients_on_a_portless_bridge_reach_each_other_the_router_and_the_wan() {
    let mut n = net();
    let mut now = 0;
    let guest = &n.router[1];
    assert_eq!(guest.link.mac(), [0x06, 0x16, 0x3e, 0, 0, 1], "its own MAC");
    let c1 = bound(&mut n.c1, 5000);
    let c2 = bound(&mut n.c2, 5001);
    // client to client: ARP flooded, then switched by the bridge, never routed
    send(
        &mut n.c1,
        c1,
        b"to c2",
        (IpAddress::v4(192, 168, 2, 101), 5001),
    );
    let got = within(&mut n, &mut now, |n| take(&mut n.c2, c2));
    assert_eq!(got.as_deref(), Some(&b"to c2"[..]));
    let st = n.router[1].link.inner.bridge_stats();
    assert!(st.forwarded >= 1, "switched between the clients: {st:?}");
    // to the router's own address on the bridge: its ARP answered with the bridge's
    // MAC, the datagram delivered to the router's stack
    let own = bound(&mut n.router[1], 7777);
    send(
        &mut n.c2,
        c2,
        b"to router",
        (IpAddress::v4(192, 168, 2, 1), 7777),
    );
    let got = within(&mut n, &mut now, |n| take(&mut n.router[1], own));
    assert_eq!(got.as_deref(), Some(&b"to router"[..]));
    let router_at =
        n.c2.neighbors()
            .iter()
            .find(|(ip, _)| **ip == IpAddress::v4(192, 168, 2, 1))
            .map(|(_, nb)| nb.mac);
    assert_eq!(
        router_at,
        Some([0x06, 0x16, 0x3e, 0, 0, 1]),
        "the router's address is at the bridge's MAC"
    );
    // forwarded to the WAN (masqueraded) and the answer back to the client
    let wh = bound(&mut n.wan_host, 6000);
    send(&mut n.c1, c1, b"out", (IpAddress::v4(10, 0, 0, 1), 6000));
    let got = within(&mut n, &mut now, |n| {
        n.wan_host
            .sockets
            .get_mut::<udp::Socket>(wh)
            .recv()
            .ok()
            .map(|(d, meta)| {
                let mut v = d.to_vec();
                v.extend_from_slice(alloc::format!(" from {}", meta.endpoint).as_bytes());
                v
            })
    });
    assert_eq!(got.as_deref(), Some(&b"out from 10.0.0.2:5000"[..]));
    send(
        &mut n.wan_host,
        wh,
        b"back",
        (IpAddress::v4(10, 0, 0, 2), 5000),
    );
    let got = within(&mut n, &mut now, |n| take(&mut n.c1, c1));
    assert_eq!(got.as_deref(), Some(&b"back"[..]));
    // the other client saw none of it
    assert_eq!(take(&mut n.c2, c2), None);
}

#[test]
fn a_client_leaving_the_portless_bridge_leaves_the_router_running() {
    let mut n = net();
    let mut now = 0;
    let c2 = bound(&mut n.c2, 5001);
    // the first client (the bridge's first port) leaves: nothing breaks
    let first = n.router[1].link.inner.ports()[0].id();
    assert!(n.router[1].link.inner.remove_port(first).is_some());
    let wh = bound(&mut n.wan_host, 6000);
    send(&mut n.c2, c2, b"still", (IpAddress::v4(10, 0, 0, 1), 6000));
    let got = within(&mut n, &mut now, |n| take(&mut n.wan_host, wh));
    assert_eq!(got.as_deref(), Some(&b"still"[..]));
    // and with no client at all the router's sends on it go nowhere, counted
    let last = n.router[1].link.inner.ports()[0].id();
    assert!(n.router[1].link.inner.remove_port(last).is_some());
    for _ in 0..5 {
        now += 10;
        n.step(now);
    }
    assert!(n.router[1].link.inner.ports().is_empty());
    assert_eq!(n.router[1].link.broken(), None);
}
