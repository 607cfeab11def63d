//! DNS over IPv6 through the router: a LAN host with a ULA address (and its
//! link-local one) asks the router's ULA `::1` and link-local address over UDP and
//! TCP; answers come forwarded from the IPv4 upstream (the WAN host) or from the
//! router's own names and the DHCP leases; bad queries are dropped and counted.

use super::*;
use smoltcp::socket::tcp;
use smoltcp::wire::Ipv6Address;
use xenlet_router::dns::tcp::{frame, FrameReader};

const ROUTER_LAN_MAC: [u8; 6] = [2, 0, 0, 0, 1, 1];
/// The LAN host: DHCPv4 (host name `lan1`) and a ULA address of the LAN's /64.
const LAN_HOST_V6: &str = "dhcp fd12:3456:789a::100/64";

fn ula(s: &str) -> Ipv6Address {
    s.parse().unwrap()
}

fn router_ula() -> IpAddress {
    IpAddress::Ipv6(ula("fd12:3456:789a::1"))
}

fn router_ll() -> IpAddress {
    IpAddress::Ipv6(config::link_local(ROUTER_LAN_MAC))
}

/// A UDP socket of the LAN host on `port`.
fn lan_udp(n: &mut Net, port: u16) -> SocketHandle {
    let mut c = udp_socket();
    c.bind(port).unwrap();
    n.lan_host.sockets.add(c)
}

fn ask6(n: &mut Net, hc: SocketHandle, to: IpAddress, q: &[u8]) {
    n.lan_host
        .sockets
        .get_mut::<udp::Socket>(hc)
        .send_slice(q, (to, 53))
        .unwrap();
}

/// The next datagram to `hc` and who sent it (stepping; the first query may wait
/// while the router resolves the host's address).
fn reply6(n: &mut Net, hc: SocketHandle) -> Option<(Vec<u8>, IpEndpoint, IpAddress)> {
    datagram(n, lan, hc).map(|(d, m)| (d, m.endpoint, m.local_address.unwrap()))
}

/// The RDATA of the answer records of type `t`.
fn records(r: &[u8], t: u16) -> Vec<Vec<u8>> {
    let m = xenlet_router::dns::message::Message::parse(r).unwrap();
    m.records
        .iter()
        .filter(|x| x.section == xenlet_router::dns::message::Section::Answer && x.rtype == t)
        .map(|x| r[x.rdata.clone()].to_vec())
        .collect()
}

/// The WAN host's DNS socket on UDP port 53.
fn wan_dns(n: &mut Net) -> SocketHandle {
    let mut u = udp_socket();
    u.bind(53).unwrap();
    n.wan_host.sockets.add(u)
}

#[test]
fn a_lan_host_asks_over_ipv6_udp_and_gets_forwarded_cached_and_local_answers() {
    let mut n = net(LAN_HOST_V6, None);
    let ip4 = lease(&mut n);
    let hu = wan_dns(&mut n);
    let hc = lan_udp(&mut n, 40000);
    let host = IpAddress::Ipv6(ula("fd12:3456:789a::100"));

    // forwarded to the IPv4 upstream, answered to the IPv6 host
    let q = query(0x6161, "example.com", 1);
    ask6(&mut n, hc, router_ula(), &q);
    let (up, from) = upstream_query(&mut n, hu).expect("the query went out the WAN");
    assert_eq!(from.addr, IpAddress::v4(10, 0, 0, 2), "over IPv4 upstream");
    assert_eq!(&up[2..], &q[2..]);
    upstream_reply(&mut n, hu, &answer(&up, [93, 184, 216, 34]), from);
    let (r, src, dst) = reply6(&mut n, hc).expect("the answer came back over IPv6");
    assert_eq!(
        src,
        IpEndpoint::new(router_ula(), 53),
        "from the address asked"
    );
    assert_eq!(dst, host);
    assert_eq!(&r[..2], &[0x61, 0x61]);
    assert_eq!(a_records(&r), [[93, 184, 216, 34]]);

    // again: from the cache
    ask6(&mut n, hc, router_ula(), &query(0x6262, "example.com", 1));
    let (r, _, _) = reply6(&mut n, hc).expect("cached answer");
    assert_eq!(a_records(&r), [[93, 184, 216, 34]]);

    // the router's own name: its ULA for AAAA; the DHCP client lan1: A from its
    // lease, AAAA NODATA (NOERROR, no answer)
    ask6(&mut n, hc, router_ula(), &query(3, "OpenWrt.lan", 28));
    let (r, _, _) = reply6(&mut n, hc).expect("answered");
    assert_eq!(
        records(&r, 28),
        [ula("fd12:3456:789a::1").octets().to_vec()]
    );
    ask6(&mut n, hc, router_ula(), &query(4, "lan1.lan", 1));
    let (r, _, _) = reply6(&mut n, hc).expect("answered");
    assert_eq!(a_records(&r), [ip4.octets()]);
    ask6(&mut n, hc, router_ula(), &query(5, "lan1.lan", 28));
    let (r, _, _) = reply6(&mut n, hc).expect("answered");
    assert_eq!((r[3] & 0xf, &r[6..8]), (0, &[0u8, 0][..]), "NODATA");

    // the router's link-local address answers too, from itself
    ask6(&mut n, hc, router_ll(), &query(6, "router.lan", 1));
    let (r, src, dst) = reply6(&mut n, hc).expect("answered on link-local");
    assert_eq!(src, IpEndpoint::new(router_ll(), 53));
    assert!(matches!(dst, IpAddress::Ipv6(a) if a.is_unicast_link_local()));
    assert_eq!(a_records(&r), [[192, 168, 1, 1]]);

    let d = n.services.dns_counters().unwrap();
    assert_eq!(
        (d.queries, d.forwarded, d.cache_hits, d.local_answers),
        (6, 1, 1, 4)
    );
    let g = n.services.counters();
    assert_eq!(
        (g.dns_ipv6_queries, g.dns_not_local, g.send_failed),
        (6, 0, 0)
    );
}

#[test]
fn bad_and_oversized_ipv6_queries_are_dropped_and_counted() {
    let mut n = net("192.168.1.50/24 fd12:3456:789a::100/64", None);
    let hc = lan_udp(&mut n, 40002);
    // too short, a response, and a 1400-byte datagram of junk after a header
    ask6(&mut n, hc, router_ula(), &[0x12, 0x34, 1]);
    let mut resp = query(1, "example.com", 1);
    resp[2] |= 0x80;
    ask6(&mut n, hc, router_ula(), &resp);
    let mut big = query(2, "example.com", 1);
    big[5] = 200; // 200 questions claimed
    big.resize(1400, 0xc0);
    ask6(&mut n, hc, router_ula(), &big);
    n.until(300, |n| {
        (n.services.dns_counters().unwrap().dropped_malformed == 3).then_some(())
    })
    .expect("all three counted");
    assert!(reply6(&mut n, hc).is_none(), "no answer to any");
    assert_eq!(n.services.dns_counters().unwrap().queries, 0);
    assert_eq!(n.services.counters().dns_ipv6_queries, 3);
    // a good one still works afterwards
    ask6(&mut n, hc, router_ula(), &query(3, "openwrt.lan", 28));
    let (r, _, _) = reply6(&mut n, hc).expect("answered");
    assert_eq!(records(&r, 28).len(), 1);
}

#[test]
fn an_ipv6_client_off_the_lans_prefixes_is_not_answered() {
    // localservice: a source on none of the interface's prefixes (the ULA /64,
    // link-local) is dropped and counted
    let mut n = net(
        "192.168.1.50/24 fd12:3456:789a::100/64 2001:db8::5/64",
        None,
    );
    let mut c = udp_socket();
    c.bind((IpAddress::Ipv6(ula("2001:db8::5")), 40003))
        .unwrap();
    let hc = n.lan_host.sockets.add(c);
    ask6(&mut n, hc, router_ula(), &query(1, "openwrt.lan", 1));
    n.until(300, |n| {
        (n.services.counters().dns_not_local == 1).then_some(())
    })
    .expect("counted as not local");
    assert!(reply6(&mut n, hc).is_none());
    assert_eq!(n.services.dns_counters().unwrap().queries, 0);
}

fn tcp_socket() -> tcp::Socket<'static> {
    tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; 8192]),
        tcp::SocketBuffer::new(vec![0; 8192]),
    )
}

fn lan_tcp(n: &mut Net, h: SocketHandle) -> &mut tcp::Socket<'static> {
    n.lan_host.sockets.get_mut::<tcp::Socket>(h)
}

/// The next whole message on the LAN host's connection `h`.
fn read_lan(n: &mut Net, r: &mut FrameReader, h: SocketHandle) -> Option<Vec<u8>> {
    n.until(600, |n| {
        let s = lan_tcp(n, h);
        while !r.has_message() && s.can_recv() {
            s.recv(|b| (r.feed(b), ())).unwrap();
        }
        r.take()
    })
}

#[test]
fn a_lan_host_asks_over_ipv6_tcp_and_gets_local_and_forwarded_answers() {
    let mut n = net(LAN_HOST_V6, None);
    let ip4 = lease(&mut n);
    let hu = wan_dns(&mut n);
    let h = n.lan_host.sockets.add(tcp_socket());
    let cx = n.lan_host.iface.context();
    n.lan_host
        .sockets
        .get_mut::<tcp::Socket>(h)
        .connect(cx, (router_ula(), 53), 41000)
        .unwrap();
    n.until(300, |n| {
        (lan_tcp(n, h).state() == tcp::State::Established).then_some(())
    })
    .expect("the router accepted the IPv6 connection");
    let mut rd = FrameReader::new();
    // a local name: the DHCP client's lease
    let q = frame(&query(0x0707, "lan1.lan", 1)).unwrap();
    lan_tcp(&mut n, h).send_slice(&q).unwrap();
    let r = read_lan(&mut n, &mut rd, h).expect("local answer over TCP");
    assert_eq!(&r[..2], &[7, 7]);
    assert_eq!(a_records(&r), [ip4.octets()]);
    // forwarded (upstream over TCP as the client asked over TCP; the WAN host
    // listens on TCP 53)
    let mut ls = tcp_socket();
    ls.listen(53).unwrap();
    let up = n.wan_host.sockets.add(ls);
    let q = frame(&query(0x0808, "example.org", 1)).unwrap();
    lan_tcp(&mut n, h).send_slice(&q).unwrap();
    let mut from_router = FrameReader::new();
    let sent = n
        .until(600, |n| {
            let s = n.wan_host.sockets.get_mut::<tcp::Socket>(up);
            while !from_router.has_message() && s.can_recv() {
                s.recv(|b| (from_router.feed(b), ())).unwrap();
            }
            from_router.take()
        })
        .expect("the query went upstream over TCP");
    let a = frame(&answer(&sent, [93, 184, 216, 35])).unwrap();
    n.wan_host
        .sockets
        .get_mut::<tcp::Socket>(up)
        .send_slice(&a)
        .unwrap();
    let r = read_lan(&mut n, &mut rd, h).expect("forwarded answer over TCP");
    assert_eq!(&r[..2], &[8, 8]);
    assert_eq!(a_records(&r), [[93, 184, 216, 35]]);
    // junk in a whole frame: dropped and counted, the connection stays
    let junk = frame(&[0xff; 40]).unwrap();
    lan_tcp(&mut n, h).send_slice(&junk).unwrap();
    n.until(300, |n| {
        (n.services.dns_counters().unwrap().dropped_malformed == 1).then_some(())
    })
    .expect("counted");
    let t = n.services.dns_tcp_counters();
    assert_eq!(
        (t.accepted, t.not_local, t.queries, t.answers),
        (1, 0, 3, 2)
    );
    let d = n.services.dns_counters().unwrap();
    assert_eq!((d.tcp_queries, d.tcp_forwarded), (3, 1), "the junk one too");
    assert!(upstream_idle(&mut n, hu), "nothing upstream over UDP");
}
