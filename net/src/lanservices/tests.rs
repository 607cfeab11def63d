//! The LAN services over the test links: a LAN host runs smoltcp's DHCP client and
//! resolves names through the router; the WAN host plays the upstream DNS server.
//!
//! lan host (DHCP) -- eth0 192.168.1.1 [router] eth1 10.0.0.2 -- wan host 10.0.0.1
//! (the router's gateway and, by `list dns`, its upstream DNS server). The router's
//! interfaces, gateway and services come from the image's `/etc/config` files with
//! the WAN made static.

use super::*;
use crate::config;
use crate::gateway::{Gateway, Routed};
use crate::lanconfig::{spec_from_files, ServicesSpec};
use crate::link::tests::{cable, Pipe};
use crate::netplan;
use smoltcp::socket::{dhcpv4, AnySocket};
use smoltcp::wire::DhcpOption;
use smoltcp::wire::Ipv4Address;
use std::sync::{Arc, Mutex};

const NETWORK: &str = include_str!("../../../xtask/rootfs/etc/config/network");
const FIREWALL: &str = include_str!("../../../xtask/rootfs/etc/config/firewall");
const DHCP: &str = include_str!("../../../xtask/rootfs/etc/config/dhcp");

const LAN_HOST_MAC: [u8; 6] = [2, 0, 0, 0, 1, 0x64];
const HOST_NAME: &[DhcpOption<'static>] = &[DhcpOption {
    kind: 12,
    data: b"lan1",
}];

/// A lease file kept in memory, shared with the test.
#[derive(Clone, Default)]
struct MemStore(Arc<Mutex<Option<String>>>);

impl LeaseStore for MemStore {
    fn load(&mut self) -> Option<String> {
        self.0.lock().unwrap().clone()
    }
    fn save(&mut self, text: &str) -> Result<(), String> {
        *self.0.lock().unwrap() = Some(String::from(text));
        Ok(())
    }
}

fn udp_socket() -> udp::Socket<'static> {
    udp::Socket::new(
        udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 32], vec![0; 32768]),
        udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 32], vec![0; 32768]),
    )
}

struct Net {
    lan_host: NetIf<Pipe>,
    wan_host: NetIf<Pipe>,
    stack: NetStack<Routed<Pipe>>,
    gw: Gateway,
    services: LanServices,
    now: i64,
}

/// The image's network with the WAN static and the ULA prefix as the kernel
/// generates it at first boot (`auto` replaced).
fn wan_static_network() -> String {
    NETWORK.replace("'auto'", "'fd12:3456:789a::/48'").replace(
        "option proto 'dhcp'",
        "option proto 'static'\n\toption ipaddr '10.0.0.2'\n\toption netmask '255.255.255.0'\n\t\
         option gateway '10.0.0.1'\n\tlist dns '10.0.0.1'",
    )
}

/// Checks that `said` (what a `reload` said) has the line `line`.
#[track_caller]
fn assert_said(said: &[String], line: &str) {
    assert!(said.iter().any(|l| l == line), "{said:?}");
}

/// Checks that `said` (what a `reload` said) has a line starting with `start`.
#[track_caller]
fn assert_said_start(said: &[String], start: &str) {
    assert!(said.iter().any(|l| l.starts_with(start)), "{said:?}");
}

/// The router's stack as `plan` configures it: eth0 over `lan`, eth1 over `wan`.
fn routed_stack(plan: &netplan::Plan, lan: Pipe, wan: Pipe) -> NetStack<Routed<Pipe>> {
    let mut stack = NetStack::new();
    for (vif, pipe) in [("eth0", lan), ("eth1", wan)] {
        let c = plan.config_of(vif).unwrap();
        stack.ifs.push(NetIf::new(
            vif,
            Routed::new(pipe),
            c,
            0,
            3 + stack.ifs.len() as u64,
        ));
    }
    stack
}

/// The topology's two cables, as (LAN host, router's LAN, router's WAN, WAN host)
/// ends with their MACs.
fn cables() -> (Pipe, Pipe, Pipe, Pipe) {
    let (mut l1, mut l2) = cable();
    let (mut w1, mut w2) = cable();
    l1.mac = LAN_HOST_MAC;
    l2.mac = [2, 0, 0, 0, 1, 1];
    w1.mac = [2, 0, 0, 0, 2, 2];
    w2.mac = [2, 0, 0, 0, 2, 1];
    (l1, l2, w1, w2)
}

/// The topology; the LAN host is configured by `lan_cfg` (`""` = DHCP, with host
/// name `lan1`).
fn net(lan_cfg: &str, store: Option<MemStore>) -> Net {
    let (l1, l2, w1, w2) = cables();
    let mut lan_host = NetIf::new("eth0", l1, &config::parse(lan_cfg).unwrap(), 0, 1);
    for (_, s) in lan_host.sockets.iter_mut() {
        if let Some(d) = dhcpv4::Socket::downcast_mut(s) {
            d.set_outgoing_options(HOST_NAME);
        }
    }
    let wan_host = NetIf::new("eth0", w2, &config::parse("10.0.0.1/24").unwrap(), 0, 2);
    let network = wan_static_network();
    let plan = netplan::plan(&network, Some(FIREWALL), &["eth0", "eth1"], 64, 5).unwrap();
    let mut stack = routed_stack(&plan, l2, w1);
    let gw = Gateway::new(plan.gateway.as_ref().unwrap(), &mut stack.ifs).unwrap();
    let spec = spec_from_files(DHCP, &network, &plan).unwrap();
    let store = store.map(|s| Box::new(s) as Box<dyn LeaseStore + Send>);
    let services = LanServices::new(&spec, &mut stack, store, 1_700_000_000, [42; 32], 0);
    Net {
        lan_host,
        wan_host,
        stack,
        gw,
        services,
        now: 0,
    }
}

impl Net {
    fn step(&mut self) {
        step_without_services(self);
        let now = self.now;
        if self.services.poll(&mut self.stack, now) {
            self.stack.poll(now);
        }
    }

    /// Steps until `f` gives something, at most `steps` times.
    fn until<T>(&mut self, steps: usize, mut f: impl FnMut(&mut Net) -> Option<T>) -> Option<T> {
        for _ in 0..steps {
            self.step();
            if let Some(t) = f(self) {
                return Some(t);
            }
        }
        None
    }
}

/// A standard query (RD set) for `name`, type `qtype`, class IN.
fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut q = Vec::new();
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.') {
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&[0, 1]);
    q
}

/// The upstream's answer to `q`: QR RD RA, one A record `addr` with TTL 300,
/// the name as a pointer to the question (offset 12).
fn answer(q: &[u8], addr: [u8; 4]) -> Vec<u8> {
    let mut r = q.to_vec();
    r[2] = 0x81;
    r[3] = 0x80;
    r[7] = 1; // ANCOUNT
    r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4]);
    r.extend_from_slice(&addr);
    r
}

/// The A records' addresses in a response (answers only; names compressed or not).
fn a_records(r: &[u8]) -> Vec<[u8; 4]> {
    let ancount = u16::from_be_bytes([r[6], r[7]]);
    let skip_name = |mut i: usize| loop {
        match r[i] {
            0 => return i + 1,
            l if l & 0xc0 == 0xc0 => return i + 2,
            l => i += 1 + l as usize,
        }
    };
    let mut i = skip_name(12) + 4;
    let mut out = Vec::new();
    for _ in 0..ancount {
        i = skip_name(i);
        let (t, len) = (
            u16::from_be_bytes([r[i], r[i + 1]]),
            u16::from_be_bytes([r[i + 8], r[i + 9]]) as usize,
        );
        i += 10;
        if t == 1 && len == 4 {
            out.push([r[i], r[i + 1], r[i + 2], r[i + 3]]);
        }
        i += len;
    }
    out
}

/// Runs the LAN host's DHCP client to a lease; the address.
fn lease(n: &mut Net) -> Ipv4Address {
    n.until(2000, |n| n.lan_host.ipv4())
        .expect("the LAN host got a lease from the router")
}

#[test]
fn a_lan_host_gets_an_address_gateway_and_dns_by_dhcp_and_the_lease_is_saved() {
    let store = MemStore::default();
    let mut n = net("", Some(store.clone()));
    assert_eq!(
        n.services.summary(),
        "dhcpd: eth0 192.168.1.100-249, lease 12h; \
         ra: eth0 fd12:3456:789a::/64 slaac, router lifetime 0s; \
         dhcpv6: eth0 fd12:3456:789a::/64, lease 12h; \
         wan6: eth1 router discovery and dhcpv6, prefixes for eth0; \
         dns: OpenWrt.lan on 192.168.1.1 fd12:3456:789a::1, forwarding to 10.0.0.1:53"
    );
    let ip = lease(&mut n);
    let o = ip.octets();
    assert_eq!(&o[..3], &[192, 168, 1]);
    assert!((100..=249).contains(&o[3]), "{ip} in the pool");
    assert_eq!(
        n.lan_host.ipv4_cidr().unwrap().prefix_len(),
        24,
        "subnet mask from the router"
    );
    assert_eq!(
        n.lan_host.default_gw4(),
        Some(Ipv4Address::new(192, 168, 1, 1))
    );
    assert_eq!(
        n.lan_host.dhcp_dns_servers(),
        [Ipv4Address::new(192, 168, 1, 1)],
        "the router is the LAN's DNS server"
    );
    let c = *n.services.dhcp_counters()[0].1;
    assert_eq!((c.discover, c.offer, c.request, c.ack), (1, 1, 1, 1));
    let mut text = String::new();
    assert_eq!(n.services.write_leases(&mut text, n.now), Ok(1));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with(&format!("eth0   {ip}"))
            && lines[0].contains("02:00:00:00:01:64")
            && lines[0].ends_with(" lan1"),
        "{lines:?}"
    );
    // The file: written once the leases changed, not again until they change.
    assert_eq!(n.services.save_at(), Some(0), "a first save is due at once");
    assert!(n.services.save_leases(n.now));
    assert_eq!(n.services.save_at(), None, "saved");
    let saved = store.0.lock().unwrap().clone().unwrap();
    let expiry = 1_700_000_000 + (n.now as u64 / 1000) + 12 * 3600;
    let fields: Vec<&str> = saved.split_whitespace().collect();
    assert_eq!(fields.len(), 5, "{saved}");
    assert!(
        fields[0].parse::<u64>().unwrap().abs_diff(expiry) <= 1,
        "{saved}"
    );
    assert_eq!(
        &fields[1..4],
        &["02:00:00:00:01:64", &ip.to_string(), "lan1"]
    );
    assert!(!n.services.save_leases(n.now + 60_000), "unchanged");
    assert_eq!(n.services.counters().lease_saves, 1);
    // After a reboot the lease is loaded back.
    let m = net("192.168.1.50/24", Some(store.clone()));
    assert_eq!(m.services.load_report().loaded, 1);
    let mut text = String::new();
    assert_eq!(m.services.write_leases(&mut text, 0), Ok(1));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains(&ip.to_string()), "{lines:?}");
}

/// A LAN host with a fixed address and a UDP socket; the WAN host's DNS socket.
fn dns_net() -> (Net, SocketHandle, SocketHandle) {
    let mut n = net("192.168.1.50/24,gw=192.168.1.1", None);
    let mut c = udp_socket();
    c.bind(40000).unwrap();
    let hc = n.lan_host.sockets.add(c);
    let mut u = udp_socket();
    u.bind(53).unwrap();
    let hu = n.wan_host.sockets.add(u);
    (n, hc, hu)
}

fn ask(n: &mut Net, hc: SocketHandle, q: &[u8]) {
    n.lan_host
        .sockets
        .get_mut::<udp::Socket>(hc)
        .send_slice(q, (IpAddress::v4(192, 168, 1, 1), 53))
        .unwrap();
}

/// An IPv6 packet (hop limit `hops`) in an Ethernet frame.
fn ip6_frame(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: core::net::Ipv6Addr,
    dst: core::net::Ipv6Addr,
    proto: smoltcp::wire::IpProtocol,
    hops: u8,
    l4: &[u8],
) -> Vec<u8> {
    use smoltcp::wire::{EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr};
    use smoltcp::wire::{Ipv6Packet, Ipv6Repr};
    let ip = Ipv6Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: proto,
        payload_len: l4.len(),
        hop_limit: hops,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(src_mac),
        dst_addr: EthernetAddress(dst_mac),
        ethertype: EthernetProtocol::Ipv6,
    };
    let mut f = vec![0u8; 14 + 40 + l4.len()];
    eth.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    ip.emit(&mut Ipv6Packet::new_unchecked(&mut f[14..]));
    f[54..].copy_from_slice(l4);
    f
}

fn lan(n: &mut Net) -> &mut NetIf<Pipe> {
    &mut n.lan_host
}

fn wan(n: &mut Net) -> &mut NetIf<Pipe> {
    &mut n.wan_host
}

/// The next datagram to UDP socket `h` of `host` (the LAN or the WAN host) and
/// what came with it (stepping).
fn datagram(
    n: &mut Net,
    host: fn(&mut Net) -> &mut NetIf<Pipe>,
    h: SocketHandle,
) -> Option<(Vec<u8>, udp::UdpMetadata)> {
    n.until(300, |n| {
        host(n)
            .sockets
            .get_mut::<udp::Socket>(h)
            .recv()
            .ok()
            .map(|(d, m)| (d.to_vec(), m))
    })
}

fn reply_to(n: &mut Net, hc: SocketHandle) -> Option<Vec<u8>> {
    datagram(n, lan, hc).map(|(d, m)| {
        assert_eq!(
            m.endpoint,
            IpEndpoint::new(IpAddress::v4(192, 168, 1, 1), 53)
        );
        d
    })
}

/// The next query to reach the WAN host's DNS socket `hu`, and where it came
/// from (stepping).
fn upstream_query(n: &mut Net, hu: SocketHandle) -> Option<(Vec<u8>, IpEndpoint)> {
    datagram(n, wan, hu).map(|(d, m)| (d, m.endpoint))
}

/// The WAN host's DNS socket `hu` sends `r` to `to`.
fn upstream_reply(n: &mut Net, hu: SocketHandle, r: &[u8], to: IpEndpoint) {
    n.wan_host
        .sockets
        .get_mut::<udp::Socket>(hu)
        .send_slice(r, to)
        .unwrap();
}

/// Whether nothing waits at the WAN host's DNS socket `hu`.
fn upstream_idle(n: &mut Net, hu: SocketHandle) -> bool {
    n.wan_host
        .sockets
        .get_mut::<udp::Socket>(hu)
        .recv()
        .is_err()
}

#[test]
fn a_query_is_forwarded_to_the_wan_upstream_then_answered_from_the_cache() {
    let (mut n, hc, hu) = dns_net();
    let q1 = query(0x1234, "example.com", 1);
    ask(&mut n, hc, &q1);
    let (up, from) = upstream_query(&mut n, hu).expect("the query went out the WAN");
    assert_eq!(
        from.addr,
        IpAddress::v4(10, 0, 0, 2),
        "from the router's WAN address"
    );
    assert!(from.port >= 49152, "a random source port: {}", from.port);
    assert_eq!(&up[2..], &q1[2..], "the same question");
    assert_ne!(&up[..2], &q1[..2], "under a new id");
    upstream_reply(&mut n, hu, &answer(&up, [93, 184, 216, 34]), from);
    let r = reply_to(&mut n, hc).expect("the answer came back");
    assert_eq!(&r[..2], &[0x12, 0x34], "under the client's id");
    assert_eq!(a_records(&r), [[93, 184, 216, 34]]);
    // The second query: the cache answers, nothing goes upstream.
    let q2 = query(0x5678, "example.com", 1);
    ask(&mut n, hc, &q2);
    let r = reply_to(&mut n, hc).expect("answered from the cache");
    assert_eq!(&r[..2], &[0x56, 0x78]);
    assert_eq!(a_records(&r), [[93, 184, 216, 34]]);
    for _ in 0..50 {
        n.step();
    }
    assert!(upstream_idle(&mut n, hu), "no second upstream query");
    let d = n.services.dns_counters().unwrap();
    assert_eq!(
        (d.queries, d.forwarded, d.replies, d.cache_hits),
        (2, 1, 1, 1)
    );
    assert!(n.services.upstream.is_empty(), "the upstream socket closed");
}

#[test]
fn a_dhcp_clients_name_resolves_under_lan_locally() {
    let mut n = net("", None);
    let ip = lease(&mut n);
    let mut c = udp_socket();
    c.bind(40001).unwrap();
    let hc = n.lan_host.sockets.add(c);
    ask(&mut n, hc, &query(7, "lan1.lan", 1));
    let r = reply_to(&mut n, hc).expect("answered");
    assert_eq!(a_records(&r), [ip.octets()]);
    ask(&mut n, hc, &query(8, "OpenWrt.lan", 1));
    let r = reply_to(&mut n, hc).expect("answered");
    assert_eq!(a_records(&r), [[192, 168, 1, 1]], "the router's own name");
    let d = n.services.dns_counters().unwrap();
    assert_eq!((d.local_answers, d.forwarded), (2, 0));
}

#[test]
fn an_unanswered_query_times_out_with_servfail_and_its_socket_closes() {
    let (mut n, hc, hu) = dns_net();
    ask(&mut n, hc, &query(9, "slow.example", 1));
    upstream_query(&mut n, hu).expect("sent upstream");
    assert_eq!(n.services.upstream.len(), 1);
    assert!(n.services.poll_at().is_some(), "a timer runs");
    let r = reply_to(&mut n, hc).expect("a failure after the timeout");
    assert_eq!(r[3] & 0x0f, 2, "SERVFAIL");
    assert_eq!(n.services.dns_counters().unwrap().timeouts, 1);
    assert!(n.services.upstream.is_empty());
}

/// The router with the image's files unchanged (WAN by DHCP) behind an "ISP": the
/// WAN host runs these services too, serving 10.0.0.0/24 with itself as DNS.
#[test]
fn the_wan_leases_dns_server_becomes_the_upstream() {
    let (l1, l2, w1, w2) = cables();
    let mut lan_host = NetIf::new(
        "eth0",
        l1,
        &config::parse("192.168.1.50/24,gw=192.168.1.1").unwrap(),
        0,
        1,
    );
    let mut isp = NetStack::new();
    isp.ifs.push(NetIf::new(
        "eth0",
        w2,
        &config::parse("10.0.0.1/24").unwrap(),
        0,
        2,
    ));
    let mut isp_pool = xenlet_router::dhcpd::PoolConfig::new(
        "isp",
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(255, 255, 255, 0),
    );
    isp_pool.dns = Some(vec![Ipv4Addr::new(10, 0, 0, 1)]);
    let isp_spec = ServicesSpec {
        pools: vec![crate::lanconfig::PoolSpec {
            vif: "eth0".into(),
            pool: isp_pool,
        }],
        ra: Vec::new(),
        dhcp6: Vec::new(),
        dns: None,
        upstreams: Vec::new(),
        local_service: false,
        lease_file: String::new(),
        lease_view: None,
        warnings: Vec::new(),
        wan6: None,
        ip6assign: Vec::new(),
        addrs6: Vec::new(),
    };
    let mut isp_services = LanServices::new(&isp_spec, &mut isp, None, 0, [3; 32], 0);
    let mut u = udp_socket();
    u.bind(53).unwrap();
    let hu = isp.ifs[0].sockets.add(u);
    let plan = netplan::plan(NETWORK, Some(FIREWALL), &["eth0", "eth1"], 64, 5).unwrap();
    let mut stack = routed_stack(&plan, l2, w1);
    let mut gw = Gateway::new(plan.gateway.as_ref().unwrap(), &mut stack.ifs).unwrap();
    let spec = spec_from_files(DHCP, NETWORK, &plan).unwrap();
    assert!(spec.upstreams.is_empty(), "the files name no server");
    let mut services = LanServices::new(&spec, &mut stack, None, 0, [4; 32], 0);
    let mut c = udp_socket();
    c.bind(40000).unwrap();
    let hc = lan_host.sockets.add(c);
    let q = query(0x4242, "example.org", 1);
    let mut got = None;
    let mut asked = false;
    for step in 1..3000 {
        if !asked && !services.upstreams().is_empty() {
            // Asked once the WAN has its lease (before, with no upstream server,
            // the forwarder can only fail the query).
            lan_host
                .sockets
                .get_mut::<udp::Socket>(hc)
                .send_slice(&q, (IpAddress::v4(192, 168, 1, 1), 53))
                .unwrap();
            asked = true;
        }
        let now = step * 10;
        lan_host.poll(now);
        isp.poll(now);
        if isp_services.poll(&mut isp, now) {
            isp.poll(now);
        }
        gw.poll(&mut stack.ifs, now);
        stack.poll(now);
        if services.poll(&mut stack, now) {
            stack.poll(now);
        }
        let s = isp.ifs[0].sockets.get_mut::<udp::Socket>(hu);
        if let Ok((up, from)) = s.recv().map(|(d, m)| (d.to_vec(), m.endpoint)) {
            s.send_slice(&answer(&up, [93, 184, 216, 35]), from)
                .unwrap();
        }
        if let Ok((d, _)) = lan_host.sockets.get_mut::<udp::Socket>(hc).recv() {
            got = Some(d.to_vec());
            break;
        }
    }
    let r = got.expect("answered through the upstream the WAN lease named");
    assert_eq!(a_records(&r), [[93, 184, 216, 35]]);
    assert_eq!(services.upstreams(), ["10.0.0.1:53".parse().unwrap()]);
    assert_eq!(services.counters().upstream_changes, 1);
    let wan = stack.by_name("eth1").unwrap();
    assert_eq!(wan.dhcp_dns_servers(), [Ipv4Address::new(10, 0, 0, 1)]);
    let d = services.dns_counters().unwrap();
    assert!(d.forwarded >= 1 && d.replies == 1, "{d:?}");
}

#[test]
fn a_lost_interface_stops_its_services_without_touching_another() {
    let mut n = net("192.168.1.50/24", None);
    let lan = n.stack.ifs.remove(0);
    // A new interface under the same name (a vif attached again).
    n.stack.ifs.insert(
        0,
        NetIf::new(
            "eth0",
            lan.link,
            &config::parse("192.168.1.1/24").unwrap(),
            0,
            9,
        ),
    );
    n.step();
    n.step();
    assert_eq!(
        n.services.counters().lost_interface,
        3,
        "DHCP, DHCPv6 and DNS"
    );
    assert!(n.services.summary().contains("(not up)"));
}

/// A DHCPDISCOVER from `mac` (RFC 2131 §2, options 53 and 55).
fn discover(mac: [u8; 6]) -> Vec<u8> {
    let mut p = vec![0u8; 240];
    p[0] = 1;
    p[1] = 1;
    p[2] = 6;
    p[4..8].copy_from_slice(&[1, 2, 3, 4]);
    p[28..34].copy_from_slice(&mac);
    p[236..240].copy_from_slice(&[99, 130, 83, 99]);
    p.extend_from_slice(&[53, 1, 1, 55, 3, 1, 3, 6, 12, 4, b'h', b'o', b's', b't', 255]);
    p
}

fn mutate(rng: &mut xenlet_testrng::XorShift, base: &[u8]) -> Vec<u8> {
    let mut p = base.to_vec();
    match rng.next() % 4 {
        0 => {
            let len = (rng.next() % 600) as usize;
            p = (0..len).map(|_| rng.next() as u8).collect();
        }
        1 => {
            let cut = (rng.next() as usize) % (p.len() + 1);
            p.truncate(cut);
        }
        _ => {
            for _ in 0..1 + rng.next() % 8 {
                if p.is_empty() {
                    break;
                }
                let i = (rng.next() as usize) % p.len();
                p[i] = rng.next() as u8;
            }
        }
    }
    p
}

#[test]
fn random_datagrams_to_the_dhcp_and_dns_ports_never_panic() {
    let (mut n, hc, hu) = dns_net();
    let mut rng = xenlet_testrng::XorShift(0x9e37_79b9_7f4a_7c15);
    let mut c = udp_socket();
    c.bind(68).unwrap();
    let hd = n.lan_host.sockets.add(c);
    let q = query(1, "example.com", 1);
    let d = discover([2, 0, 0, 0, 9, 9]);
    let mut sent = 0;
    for round in 0..400u32 {
        for _ in 0..6 {
            let (h, base, to) = if rng.next().is_multiple_of(2) {
                (hc, &q, IpEndpoint::new(IpAddress::v4(192, 168, 1, 1), 53))
            } else {
                (
                    hd,
                    &d,
                    IpEndpoint::new(IpAddress::v4(255, 255, 255, 255), 67),
                )
            };
            let p = mutate(&mut rng, base);
            if n.lan_host
                .sockets
                .get_mut::<udp::Socket>(h)
                .send_slice(&p, to)
                .is_ok()
            {
                sent += 1;
            }
        }
        // The upstream answers whatever reaches it with garbage, half the time
        // on the right port.
        while let Ok((up, from)) = n
            .wan_host
            .sockets
            .get_mut::<udp::Socket>(hu)
            .recv()
            .map(|(d, m)| (d.to_vec(), m.endpoint))
        {
            let r = mutate(&mut rng, &answer(&up, [1, 2, 3, 4]));
            let _ = n
                .wan_host
                .sockets
                .get_mut::<udp::Socket>(hu)
                .send_slice(&r, from);
        }
        n.step();
        n.step();
        if round.is_multiple_of(50) {
            // drain what came back
            while n.lan_host.sockets.get_mut::<udp::Socket>(hc).recv().is_ok() {}
            while n.lan_host.sockets.get_mut::<udp::Socket>(hd).recv().is_ok() {}
        }
    }
    for _ in 0..500 {
        n.step();
    }
    assert!(sent > 2000, "{sent} datagrams sent");
    let dc = n.services.dhcp_counters()[0].1;
    let dns = *n.services.dns_counters().unwrap();
    assert!(dc.dropped_malformed > 100, "{dc:?}");
    assert!(dns.dropped_malformed > 100, "{dns:?}");
    assert!(dns.queries > 100, "some survived as queries: {dns:?}");
    assert!(
        n.services.upstream.len() <= dns.queries as usize,
        "upstream sockets are bounded by pending queries"
    );
    // Still serving: a clean query is answered (locally).
    while n.lan_host.sockets.get_mut::<udp::Socket>(hc).recv().is_ok() {}
    ask(&mut n, hc, &query(77, "OpenWrt.lan", 1));
    let r = reply_to(&mut n, hc).expect("still answering");
    assert_eq!(a_records(&r), [[192, 168, 1, 1]]);
}

#[test]
fn lease_times_read_as_openwrt_writes_them() {
    assert_eq!(lease_time(43200), "12h");
    assert_eq!(lease_time(86400 * 2), "2d");
    assert_eq!(lease_time(120), "2m");
    assert_eq!(lease_time(61), "61s");
    assert_eq!(lease_time(u32::MAX), "infinite");
    // the time left, as `leases` shows it
    assert_eq!(time_left(43182), "11h59m42s");
    assert_eq!(time_left(3600), "1h0m0s");
    assert_eq!(time_left(90), "1m30s");
    assert_eq!(time_left(7), "7s");
    assert_eq!(time_left(86400 + 5), "1d0h0m5s");
    assert_eq!(time_left(u32::MAX), "infinite");
}

/// A query like [`query`] with an EDNS OPT record offering `udp` bytes.
fn query_edns(id: u16, name: &str, qtype: u16, udp: u16) -> Vec<u8> {
    let mut q = query(id, name, qtype);
    q[11] = 1; // ARCOUNT
    q.extend_from_slice(&[0, 0, 41]);
    q.extend_from_slice(&udp.to_be_bytes());
    q.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    q
}

/// The upstream's answer to `q` with `n` TXT records of `len` bytes each (TTL 300).
fn big_answer(q: &[u8], n: u8, len: u16) -> Vec<u8> {
    let mut r = q.to_vec();
    r[2] = 0x81;
    r[3] = 0x80;
    r[7] = n; // ANCOUNT
    r[11] = 0; // no OPT in the reply
    let qend = r.len() - 11; // the query's OPT record is cut
    r.truncate(qend);
    for _ in 0..n {
        r.extend_from_slice(&[0xc0, 12, 0, 16, 0, 1, 0, 0, 1, 44]);
        r.extend_from_slice(&len.to_be_bytes());
        r.extend(core::iter::repeat_n(b'x', usize::from(len)));
    }
    r
}

/// The network half of [`Net::step`]: frames move, the services do not run.
fn step_without_services(n: &mut Net) {
    n.now += 10;
    let now = n.now;
    n.lan_host.poll(now);
    n.wan_host.poll(now);
    n.gw.poll(&mut n.stack.ifs, now);
    n.stack.poll(now);
}

#[test]
fn a_burst_of_cached_answers_is_sent_one_by_one_not_gathered() {
    let (mut n, hc, hu) = dns_net();
    // Fill the cache with a 1.3 KB answer.
    let q = query_edns(1, "big.example", 16, 4096);
    ask(&mut n, hc, &q);
    let (up, from) = upstream_query(&mut n, hu).expect("the query went out the WAN");
    let big = big_answer(&up, 5, 250);
    assert!(big.len() > 1300 && big.len() < 1472, "{}", big.len());
    upstream_reply(&mut n, hu, &big, from);
    let r = reply_to(&mut n, hc).expect("the answer came back");
    assert_eq!(r.len(), big.len());
    // 16 clients' worth of queries for it reach the listener in one poll.
    for id in 0..16 {
        ask(&mut n, hc, &query_edns(100 + id, "big.example", 16, 4096));
    }
    for _ in 0..20 {
        step_without_services(&mut n);
    }
    let before = n.services.dns_counters().unwrap().cache_hits;
    let now = n.now;
    let (_, rise) = xenlet_testalloc::peak_during(|| n.services.poll(&mut n.stack, now));
    let hits = n.services.dns_counters().unwrap().cache_hits - before;
    assert_eq!(hits, 16, "every query was answered from the cache");
    // Gathering the 16 answers before sending any held 16 x 1.3 KB; one at a time
    // holds one answer (and its query) at once.
    assert!(rise < 8 * 1024, "the poll's heap rose by {rise} bytes");
}

/// A lease file of `n` leases in 192.168.1.100.., each with a 63-byte host name and
/// a 255-byte client id (about 870 bytes a line), never expiring.
fn big_lease_file(n: usize) -> String {
    let mut text = String::new();
    for i in 0..n {
        let host = format!("h{i:03}-{}", "x".repeat(58));
        let cid: Vec<String> = (0..255).map(|b| format!("{:02x}", (b + i) % 256)).collect();
        text.push_str(&format!(
            "0 52:54:00:00:00:{i:02x} 192.168.1.{} {host} {}\n",
            100 + i,
            cid.join(":")
        ));
    }
    text
}

#[test]
fn the_lease_file_is_built_fallibly_and_a_refused_one_is_counted() {
    let store = MemStore(Arc::new(Mutex::new(Some(big_lease_file(140)))));
    let mut n = net("", Some(store.clone()));
    assert_eq!(n.services.load_report().loaded, 140);
    lease(&mut n);
    let now = n.now;
    // The text is about 120 KB: with 32 KiB of heap left it cannot be built, and
    // the save is refused, counted, and the services go on.
    let (save, refused) =
        xenlet_testalloc::limited(32 * 1024, || n.services.take_lease_save(now).is_some());
    assert!(!save);
    assert!(refused > 0);
    assert_eq!(n.services.counters().lease_file_refused, 1);
    assert_eq!(
        store.0.lock().unwrap().as_ref().unwrap().lines().count(),
        140
    );
    // With the heap back, the next try (SAVE_INTERVAL_MS later) writes it.
    assert!(n.services.save_leases(now + SAVE_INTERVAL_MS));
    let saved = store.0.lock().unwrap().clone().unwrap();
    assert_eq!(saved.lines().count(), 141);
    assert!(saved.len() > 120_000 && saved.len() <= MAX_LEASE_FILE);
}

/// A writer that only counts what it is given (a console that prints it).
struct Sink(usize, usize);

impl core::fmt::Write for Sink {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0 += s.len();
        self.1 += s.matches('\n').count();
        Ok(())
    }
}

#[test]
fn the_lease_listing_is_written_line_by_line_not_gathered() {
    let store = MemStore(Arc::new(Mutex::new(Some(big_lease_file(140)))));
    let n = net("192.168.1.50/24", Some(store));
    let mut sink = Sink(0, 0);
    let (r, rise) = xenlet_testalloc::peak_during(|| n.services.write_leases(&mut sink, 0));
    assert_eq!(r, Ok(140));
    assert_eq!(sink.1, 140);
    assert!(sink.0 > 140 * 100, "{}", sink.0);
    // One line's pieces at a time, not 140 lines at once.
    assert!(rise < 1024, "listing the leases took {rise} bytes");
    // The columns, as before.
    let mut text = String::new();
    n.services.write_leases(&mut text, 0).unwrap();
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "eth0   192.168.1.100   52:54:00:00:00:00 never     h000-{}",
            "x".repeat(58)
        )
    );
}

mod dns6;
mod ra;
mod reload;
mod tcp;

mod dhcp6;
mod wan6;

/// `leases`' IFACE column fits the longest interface name (a port-less bridge's
/// `br-guest`), and never narrows below its heading.
#[test]
fn the_lease_iface_column_fits_its_longest_name() {
    assert_eq!(column_width(["eth0", "br-guest"].into_iter(), 6), 8);
    assert_eq!(column_width(["eth0", "eth1"].into_iter(), 6), 6);
    assert_eq!(column_width(core::iter::empty(), 6), 6);
    let n = net("192.168.1.50/24", None);
    assert_eq!(n.services.lease_iface_width(), 6, "eth0 only");
}
