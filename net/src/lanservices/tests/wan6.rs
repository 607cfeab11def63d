//! `wan6` through the router: a fake upstream router on the WAN advertises
//! 2001:db8:77::/64 and answers DHCPv6 with an address and a /56; the WAN gets its
//! addresses and default route (in the router's table too), the LAN its /64 of the
//! delegation at ::1, advertised to the LAN host with the delegation's lifetimes,
//! the DNS forwarder its IPv6 upstream; a new prefix deprecates the old /64.

use super::*;
use core::net::Ipv6Addr;
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, IpProtocol, Ipv6Packet,
    Ipv6Repr, UdpPacket, UdpRepr,
};
use xenlet_router::dhcp6c::message::{self as m, Builder, IaAddr, IaPrefix};
use xenlet_router::ra::{message as ram, RaConfig, RaPrefix};
use xenlet_router::route6::{Ipv6Net, Route6};

const UP_MAC: [u8; 6] = [2, 0, 0, 0, 9, 9];
const ROUTER_WAN_MAC: [u8; 6] = [2, 0, 0, 0, 2, 2];
const SERVER_DUID: &[u8] = &[0, 3, 0, 1, 2, 0, 0, 0, 9, 9];

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn net6(s: &str, l: u8) -> Ipv6Net {
    Ipv6Net::new(a(s), l).unwrap()
}

/// The upstream router's advertisement: 2001:db8:77::/64 on-link with SLAAC.
fn upstream_ra() -> Vec<u8> {
    upstream_ra_mtu(None)
}

/// [`upstream_ra`] with an MTU option of `mtu`.
fn upstream_ra_mtu(mtu: Option<u32>) -> Vec<u8> {
    let c = RaConfig {
        mtu,
        router_lifetime_secs: 1800,
        prefixes: vec![RaPrefix {
            prefix: net6("2001:db8:77::", 64),
            on_link: true,
            autonomous: true,
            valid_secs: 86400,
            preferred_secs: 14400,
        }],
        ..RaConfig::default()
    };
    let body = c.body(UP_MAC).unwrap();
    ram::frame(&body, UP_MAC, [0x33, 0x33, 0, 0, 0, 1], a("ff02::1"))
}

/// A UDP datagram from the upstream router's link-local address to the router's.
fn udp6_to_router(to: Ipv6Addr, payload: &[u8]) -> Vec<u8> {
    let src = xenlet_router::ipv6::link_local_of(UP_MAC);
    let udp = UdpRepr {
        src_port: 547,
        dst_port: 546,
    };
    let ip = Ipv6Repr {
        src_addr: src,
        dst_addr: to,
        next_header: IpProtocol::Udp,
        payload_len: 8 + payload.len(),
        hop_limit: 64,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(UP_MAC),
        dst_addr: EthernetAddress(ROUTER_WAN_MAC),
        ethertype: EthernetProtocol::Ipv6,
    };
    let mut f = vec![0u8; 14 + 40 + 8 + payload.len()];
    eth.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    ip.emit(&mut Ipv6Packet::new_unchecked(&mut f[14..]));
    udp.emit(
        &mut UdpPacket::new_unchecked(&mut f[54..]),
        &src.into(),
        &to.into(),
        payload.len(),
        |b| b.copy_from_slice(payload),
        &ChecksumCapabilities::default(),
    );
    f
}

/// The DHCPv6 messages the router sent on the WAN: (its source, the message).
fn dhcp6_from_router(n: &Net) -> Vec<(Ipv6Addr, m::Message)> {
    let mut out = Vec::new();
    for f in n.wan_host.link.rx.borrow_mut().drain(..) {
        if f.get(12..14) != Some(&[0x86, 0xdd][..]) || f.get(20) != Some(&17) {
            continue;
        }
        let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        if udp.dst_port() == 547 {
            assert_eq!(ip.dst_addr(), a("ff02::1:2"));
            out.push((ip.src_addr(), m::parse(udp.payload()).unwrap()));
        }
    }
    out
}

/// The fake server's answer of `kind` to `to` with `prefix` delegated.
fn answer(kind: u8, to: &m::Message, prefix: Ipv6Net) -> Vec<u8> {
    answer_with(kind, to, prefix, a("2001:db8:77::1234"))
}

/// [`answer`] giving address `addr`.
fn answer_with(kind: u8, to: &m::Message, prefix: Ipv6Net, addr: Ipv6Addr) -> Vec<u8> {
    let mut b = Builder::new(kind, to.xid);
    b.option(m::OPT_CLIENTID, to.client_id.as_deref().unwrap());
    b.option(m::OPT_SERVERID, SERVER_DUID);
    // the IAs asked for, each with T1 150 s and T2 240 s, its entry preferred
    // 300 s and valid 600 s
    let timed = |mut body: Vec<u8>| {
        body[4..12].copy_from_slice(&[0, 0, 0, 150, 0, 0, 0, 240]);
        body
    };
    if to.ia_na.is_some() {
        let entry = IaAddr {
            addr,
            preferred: 300,
            valid: 600,
        };
        b.option(m::OPT_IA_NA, &timed(m::ia_na_body(1, &[entry])));
    }
    if to.ia_pd.is_some() {
        let entry = IaPrefix {
            prefix,
            preferred: 300,
            valid: 600,
        };
        b.option(m::OPT_IA_PD, &timed(m::ia_pd_body(1, &[entry])));
    }
    b.option(m::OPT_DNS_SERVERS, &a("2001:db8:77::53").octets());
    b.finish()
}

/// Steps the router; the fake upstream answers Solicits and Requests (and Renews)
/// with `prefix`, advertises itself once a second.
fn run(n: &mut Net, ms: i64, prefix: Ipv6Net) {
    run_mtu(n, ms, prefix, None)
}

/// A router whose wan6 ran 5 s against the upstream delegating
/// 2001:db8:7700:100::/56 (bound, the LAN's /64 taken from it), and that prefix.
fn bound() -> (Net, Ipv6Net) {
    let mut n = net("192.168.1.50/24", None);
    let pd = net6("2001:db8:7700:100::", 56);
    run(&mut n, 5_000, pd);
    (n, pd)
}

/// [`run`] with the upstream advertising MTU `mtu`.
fn run_mtu(n: &mut Net, ms: i64, prefix: Ipv6Net, mtu: Option<u32>) {
    for _ in 0..ms / 10 {
        n.now += 10;
        let now = n.now;
        if now % 1000 == 0 {
            n.wan_host
                .link
                .tx
                .borrow_mut()
                .push_back(upstream_ra_mtu(mtu));
        }
        for (src, msg) in dhcp6_from_router(n) {
            let kind = match msg.msg_type {
                m::SOLICIT => m::ADVERTISE,
                m::REQUEST | m::RENEW | m::REBIND => m::REPLY,
                _ => continue,
            };
            let f = udp6_to_router(src, &answer(kind, &msg, prefix));
            n.wan_host.link.tx.borrow_mut().push_back(f);
        }
        n.gw.poll(&mut n.stack.ifs, now);
        n.stack.poll(now);
        if n.services.poll(&mut n.stack, now) {
            n.stack.poll(now);
        }
        // as the kernel's poll does
        let d = n.services.delegated6();
        n.gw.set_delegated6(&n.stack.ifs, d.as_ref().map(|(p, v)| (*p, v.as_str())));
        if let Some((vif, mtu)) = n.services.wan6_mtu() {
            n.gw.set_mtu6(&n.stack.ifs, &vif, mtu);
        }
    }
}

fn has_addr(n: &Net, vif: usize, cidr: &str) -> bool {
    n.stack.ifs[vif]
        .addrs()
        .iter()
        .any(|(c, _)| c.to_string() == cidr)
}

/// The Prefix Information options of the last RA the LAN host received:
/// (prefix, valid, preferred), and its router lifetime.
/// A Prefix Information option read: (prefix, valid, preferred).
type PrefixInfo = (Ipv6Addr, u32, u32);

fn last_lan_ra(n: &Net) -> Option<(Vec<PrefixInfo>, u16)> {
    let rx = n.lan_host.link.rx.borrow();
    let f = rx.iter().rev().find(|f| {
        f.get(12..14) == Some(&[0x86, 0xdd][..])
            && f.get(20) == Some(&58)
            && f.get(54) == Some(&134)
    })?;
    let icmp = &f[54..];
    let lifetime = u16::from_be_bytes([icmp[6], icmp[7]]);
    let mut out = Vec::new();
    let mut i = 16;
    while i + 2 <= icmp.len() {
        let len = icmp[i + 1] as usize * 8;
        assert!(len > 0);
        if icmp[i] == 3 {
            let o = &icmp[i..i + len];
            let valid = u32::from_be_bytes(o[4..8].try_into().unwrap());
            let pref = u32::from_be_bytes(o[8..12].try_into().unwrap());
            out.push((
                Ipv6Addr::from(<[u8; 16]>::try_from(&o[16..32]).unwrap()),
                valid,
                pref,
            ));
        }
        i += len;
    }
    Some((out, lifetime))
}

#[test]
fn the_wan_gets_its_addresses_and_route_and_the_lan_its_64_of_the_delegation() {
    let mut n = net("192.168.1.50/24", None);
    assert_eq!(n.stack.ifs[1].link.mac(), ROUTER_WAN_MAC);
    let pd = net6("2001:db8:7700:100::", 56);
    run(&mut n, 8_000, pd);
    // the WAN: the DHCPv6 address (/128), the SLAAC address, the default route
    assert!(
        has_addr(&n, 1, "2001:db8:77::1234/128"),
        "{:?}",
        n.stack.ifs[1].addrs()
    );
    assert!(
        has_addr(&n, 1, "2001:db8:77::ff:fe00:202/64"),
        "{:?}",
        n.stack.ifs[1].addrs()
    );
    let up_ll = xenlet_router::ipv6::link_local_of(UP_MAC);
    assert_eq!(n.stack.ifs[1].default_gw6(), Some(up_ll));
    // ... in the router's table: default via the upstream's link-local on the WAN,
    // the LAN's /64 on the LAN
    let wan = n.gw.port_of(1).unwrap();
    let lan = n.gw.port_of(0).unwrap();
    let r = route6(&n, a("2001:db8:99::1"));
    assert_eq!((r.gateway, r.ifc), (Some(up_ll), wan));
    let r = route6(&n, a("2001:db8:7700:100::42"));
    assert_eq!((r.gateway, r.ifc), (None, lan));
    // the rest of the /56 goes to the LAN too, not back upstream
    let r = route6(&n, a("2001:db8:7700:1ff::1"));
    assert_eq!((r.gateway, r.ifc, r.dest), (None, lan, pd));
    // the LAN: ip6assign 60 of a /56: its first /64, the router at ::1
    assert!(
        has_addr(&n, 0, "2001:db8:7700:100::1/64"),
        "{:?}",
        n.stack.ifs[0].addrs()
    );
    // advertised to the LAN with the delegation's lifetimes (600/300 s, a few
    // seconds gone), and as a default router now
    let (prefixes, lifetime) = last_lan_ra(&n).expect("an RA on the LAN");
    assert_eq!(lifetime, 1800);
    let p = prefixes
        .iter()
        .find(|p| p.0 == a("2001:db8:7700:100::"))
        .expect("the /64 announced");
    assert!(
        p.1 <= 600 && p.1 >= 590 && p.2 <= 300 && p.2 >= 290,
        "{p:?}"
    );
    // the ULA stays
    assert!(prefixes.iter().any(|p| p.0 == a("fd12:3456:789a::")));
    // DNS: the lease's server is an upstream of the forwarder
    assert!(
        n.services
            .upstreams()
            .contains(&SocketAddr::from((a("2001:db8:77::53"), 53))),
        "{:?}",
        n.services.upstreams()
    );
    let lines = n.services.wan6_lines(n.now).unwrap();
    assert!(
        lines[0].starts_with("wan6: eth1 bound address 2001:db8:77::1234/128 "),
        "{lines:?}"
    );
    assert!(
        lines[0].contains(" prefix 2001:db8:7700:100::/56 preferred "),
        "{lines:?}"
    );
    assert!(
        lines[0].ends_with("; lan eth0 2001:db8:7700:100::/64"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with(&format!("wan6: router {up_ll} lifetime ")),
        "{lines:?}"
    );
    assert_eq!(lines[2], "wan6: dns 2001:db8:77::53");
}

#[test]
fn a_new_prefix_at_renewal_replaces_the_lans_64_and_the_old_is_deprecated() {
    let (mut n, _) = bound();
    assert!(has_addr(&n, 0, "2001:db8:7700:100::1/64"));
    // T1 is 150 s: the server gives another prefix at the Renew
    run(&mut n, 150_000, net6("2001:db8:7700:200::", 56));
    assert!(
        has_addr(&n, 0, "2001:db8:7700:200::1/64"),
        "{:?}",
        n.stack.ifs[0].addrs()
    );
    assert!(!has_addr(&n, 0, "2001:db8:7700:100::1/64"));
    let (prefixes, _) = last_lan_ra(&n).unwrap();
    let old = prefixes
        .iter()
        .find(|p| p.0 == a("2001:db8:7700:100::"))
        .expect("the old /64 still announced");
    assert_eq!((old.1, old.2), (0, 0), "deprecated: lifetimes 0");
    let new = prefixes
        .iter()
        .find(|p| p.0 == a("2001:db8:7700:200::"))
        .unwrap();
    assert!(new.1 > 0);
    // the old /56 is no longer routed to the LAN: the new one is
    let r = n.gw.router.routes6().lookup(a("2001:db8:7700:100::42"));
    assert!(
        r.is_none_or(|r| r.gateway.is_some()),
        "no route to the LAN for the old prefix: {r:?}"
    );
    let r = route6(&n, a("2001:db8:7700:2ff::1"));
    assert_eq!(r.dest, net6("2001:db8:7700:200::", 56));
}

/// The router's IPv6 route to `dst` (there must be one).
fn route6(n: &Net, dst: Ipv6Addr) -> Route6 {
    n.gw.router.routes6().lookup(dst).copied().unwrap()
}

fn udp6(src: Ipv6Addr, dst: Ipv6Addr, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 8 + payload.len()];
    UdpRepr {
        src_port: sport,
        dst_port: dport,
    }
    .emit(
        &mut UdpPacket::new_unchecked(&mut b[..]),
        &src.into(),
        &dst.into(),
        payload.len(),
        |p| p.copy_from_slice(payload),
        &ChecksumCapabilities::default(),
    );
    b
}

/// A TCP SYN (no options) with its checksum.
fn syn6(src: Ipv6Addr, dst: Ipv6Addr, sport: u16, dport: u16) -> Vec<u8> {
    let mut t = vec![0u8; 20];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&1u32.to_be_bytes());
    t[12] = 5 << 4;
    t[13] = 0x02;
    t[14..16].copy_from_slice(&65535u16.to_be_bytes());
    let s = xenlet_router::ipv6::pseudo_header_sum(src, dst, 6, t.len());
    let c = !xenlet_router::checksum::fold(xenlet_router::checksum::sum(s, &t));
    t[16..18].copy_from_slice(&c.to_be_bytes());
    t
}

/// The neighbour advertisement answering the solicitation `f` from `mac`.
fn answer_ns(f: &[u8], mac: [u8; 6], to_mac: [u8; 6]) -> Vec<u8> {
    use smoltcp::wire::{
        Icmpv6Packet, Icmpv6Repr, NdiscNeighborFlags, NdiscRepr, RawHardwareAddress,
    };
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    let target = Ipv6Addr::from(<[u8; 16]>::try_from(&f[62..78]).unwrap());
    let repr = Icmpv6Repr::Ndisc(NdiscRepr::NeighborAdvert {
        flags: NdiscNeighborFlags::SOLICITED | NdiscNeighborFlags::OVERRIDE,
        target_addr: target,
        lladdr: Some(RawHardwareAddress::from_bytes(&mac)),
    });
    let mut b = vec![0u8; repr.buffer_len()];
    repr.emit(
        &target,
        &ip.src_addr(),
        &mut Icmpv6Packet::new_unchecked(&mut b[..]),
        &ChecksumCapabilities::default(),
    );
    let mut na = ip6_frame(
        mac,
        to_mac,
        target,
        ip.src_addr(),
        IpProtocol::Icmpv6,
        64,
        &b,
    );
    na[14 + 7] = 255;
    na
}

fn is_ns(f: &[u8]) -> bool {
    f.get(12..14) == Some(&[0x86, 0xdd][..]) && f.get(20) == Some(&58) && f.get(54) == Some(&135)
}

/// Answers the router's neighbour solicitations on the LAN as the LAN host.
fn lan_answers_ns(n: &mut Net) {
    let lan_router_mac = n.stack.ifs[0].link.mac();
    let ns: Vec<Vec<u8>> = n
        .lan_host
        .link
        .rx
        .borrow()
        .iter()
        .filter(|f| is_ns(f))
        .cloned()
        .collect();
    n.lan_host.link.rx.borrow_mut().retain(|f| !is_ns(f));
    for f in ns {
        let na = answer_ns(&f, LAN_HOST_MAC, lan_router_mac);
        n.lan_host.link.tx.borrow_mut().push_back(na);
    }
}

/// Answers the router's neighbour solicitations on the WAN for any target with
/// the upstream's MAC; returns the other frames the router sent there.
fn wan_frames(n: &mut Net) -> Vec<Vec<u8>> {
    let mut other = Vec::new();
    let frames: Vec<Vec<u8>> = n.wan_host.link.rx.borrow_mut().drain(..).collect();
    for f in frames {
        if is_ns(&f) {
            let na = answer_ns(&f, UP_MAC, ROUTER_WAN_MAC);
            n.wan_host.link.tx.borrow_mut().push_back(na);
        } else {
            other.push(f);
        }
    }
    other
}

#[test]
fn lan_and_wan_talk_ipv6_through_the_router_unnatted_and_the_wan_cannot_open_to_the_lan() {
    let (mut n, _) = bound();
    let host = a("2001:db8:7700:100::100");
    let far = a("2001:db8:99::10");
    let lan_router_mac = n.stack.ifs[0].link.mac();
    n.lan_host.link.rx.borrow_mut().clear();
    // lan -> far (off-link: via the upstream router), UDP
    let out = ip6_frame(
        LAN_HOST_MAC,
        lan_router_mac,
        host,
        far,
        IpProtocol::Udp,
        64,
        &udp6(host, far, 40000, 7777, b"hello"),
    );
    n.lan_host.link.tx.borrow_mut().push_back(out);
    let mut seen = None;
    for _ in 0..100 {
        n.now += 10;
        let now = n.now;
        n.gw.poll(&mut n.stack.ifs, now);
        n.stack.poll(now);
        for f in wan_frames(&mut n) {
            if f.get(20) == Some(&17) && f[14 + 24..14 + 40] == far.octets() {
                seen = Some(f);
            }
        }
        if seen.is_some() {
            break;
        }
    }
    let f = seen.expect("the datagram left on the WAN");
    assert_eq!(&f[0..6], &UP_MAC, "to the upstream router");
    assert_eq!(
        f[14 + 8..14 + 24],
        host.octets(),
        "from the LAN host's own address: no NAT66"
    );
    assert_eq!(f[14 + 7], 63, "hop limit decremented");
    // far -> host, a new TCP connection: refused by fw4's rules (wan zone input
    // and forward REJECT), nothing reaches the LAN
    let syn = ip6_frame(
        UP_MAC,
        ROUTER_WAN_MAC,
        far,
        host,
        IpProtocol::Tcp,
        64,
        &syn6(far, host, 5000, 22),
    );
    n.wan_host.link.tx.borrow_mut().push_back(syn);
    // the reply to the UDP flow does come back
    let back = ip6_frame(
        UP_MAC,
        ROUTER_WAN_MAC,
        far,
        host,
        IpProtocol::Udp,
        64,
        &udp6(far, host, 7777, 40000, b"back"),
    );
    n.wan_host.link.tx.borrow_mut().push_back(back.clone());
    // (the first reply waits on the router's neighbour solicitation for the host and
    // is dropped, as the forwarding core does; the second goes through)
    for round in 0..2 {
        if round == 1 {
            n.wan_host.link.tx.borrow_mut().push_back(back.clone());
        }
        for _ in 0..100 {
            n.now += 10;
            let now = n.now;
            n.gw.poll(&mut n.stack.ifs, now);
            n.stack.poll(now);
            let _ = wan_frames(&mut n);
            lan_answers_ns(&mut n);
        }
    }
    assert_eq!(
        n.gw.router
            .stats()
            .dropped(xenlet_router::DropReason::Filtered),
        1,
        "the SYN"
    );
    let to_lan: Vec<Vec<u8>> = n
        .lan_host
        .link
        .rx
        .borrow()
        .iter()
        .filter(|f| {
            f.get(12..14) == Some(&[0x86, 0xdd][..]) && f[14 + 24..14 + 40] == host.octets()
        })
        .cloned()
        .collect();
    assert!(
        to_lan.iter().any(|f| f[20] == 17),
        "the UDP reply reached the LAN host"
    );
    assert!(
        !to_lan.iter().any(|f| f[20] == 6),
        "no TCP from the WAN reached the LAN host"
    );
}

#[test]
fn shutdown_releases_the_lease_and_takes_back_what_wan6_set() {
    let (n, _) = bound();
    assert!(has_addr(&n, 0, "2001:db8:7700:100::1/64"));
    let Net {
        services,
        mut stack,
        mut wan_host,
        ..
    } = n;
    services.shutdown(&mut stack);
    assert!(!has_addr_in(&stack, 0, "2001:db8:7700:100::1/64"));
    assert!(!has_addr_in(&stack, 1, "2001:db8:77::1234/128"));
    assert!(!has_addr_in(&stack, 1, "2001:db8:77::ff:fe00:202/64"));
    assert_eq!(stack.ifs[1].default_gw6(), None);
    // the Release went out before the socket closed
    let released = wan_host.link.rx.borrow_mut().drain(..).any(|f| {
        f.get(20) == Some(&17)
            && Ipv6Packet::new_checked(&f[14..])
                .ok()
                .and_then(|ip| {
                    UdpPacket::new_checked(ip.payload())
                        .ok()
                        .map(|u| u.payload().first() == Some(&m::RELEASE))
                })
                .unwrap_or(false)
    });
    assert!(released, "a Release was sent");
    let _ = &mut wan_host;
}

fn has_addr_in(stack: &NetStack<Routed<Pipe>>, vif: usize, cidr: &str) -> bool {
    stack.ifs[vif]
        .addrs()
        .iter()
        .any(|(c, _)| c.to_string() == cidr)
}

#[test]
fn a_wan_interface_that_comes_back_as_a_new_one_starts_over() {
    let (mut n, _) = bound();
    assert!(n.services.wan6_lines(n.now).unwrap()[0].contains(" bound "));
    // eth1 replaced by a new interface of the same name (a vif attached again)
    let (mut w1, mut w2) = cable();
    w1.mac = ROUTER_WAN_MAC;
    w2.mac = [2, 0, 0, 0, 2, 1];
    let cfg = config::parse("10.0.0.2/24").unwrap();
    n.stack.ifs[1] = NetIf::new("eth1", Routed::new(w1), &cfg, n.now, 99);
    n.wan_host = NetIf::new(
        "eth0",
        w2,
        &config::parse("10.0.0.1/24").unwrap(),
        n.now,
        98,
    );
    let mut solicited = false;
    for _ in 0..300 {
        n.now += 10;
        let now = n.now;
        n.stack.poll(now);
        if n.services.poll(&mut n.stack, now) {
            n.stack.poll(now);
        }
        solicited |= dhcp6_from_router(&n)
            .iter()
            .any(|(_, msg)| msg.msg_type == m::SOLICIT);
    }
    assert!(solicited, "a new Solicit on the new interface");
    let lines = n.services.wan6_lines(n.now).unwrap();
    assert!(lines[0].starts_with("wan6: eth1 soliciting"), "{lines:?}");
    assert!(lines.last().unwrap().contains(" restarts 1 "), "{lines:?}");
    // the LAN's /64 of the old lease went with it
    assert!(!has_addr(&n, 0, "2001:db8:7700:100::1/64"));
}

#[test]
fn the_wans_advertised_mtu_gets_packet_too_big_for_larger_packets_from_the_lan() {
    let mut n = net("192.168.1.50/24", None);
    run_mtu(&mut n, 5_000, net6("2001:db8:7700:100::", 56), Some(1400));
    assert!(
        n.services.wan6_lines(n.now).unwrap()[1].contains("mtu 1400"),
        "{:?}",
        n.services.wan6_lines(n.now)
    );
    let wan = n.gw.port_of(1).unwrap();
    assert_eq!(n.gw.router.interfaces().get(wan).unwrap().mtu6(), 1400);
    assert_eq!(
        n.gw.router.interfaces().get(wan).unwrap().mtu(),
        1500,
        "IPv4: the link's"
    );
    // the LAN's advertisements still announce the LAN's MTU
    let lan_ra = n
        .lan_host
        .link
        .rx
        .borrow()
        .iter()
        .rev()
        .find(|f| f.get(20) == Some(&58) && f.get(54) == Some(&134))
        .cloned()
        .unwrap();
    let at = 54
        + lan_ra[54 + 16..]
            .windows(2)
            .position(|w| w == [5, 1])
            .unwrap()
        + 16;
    assert_eq!(&lan_ra[at + 4..at + 8], &1500u32.to_be_bytes());
    let host = a("2001:db8:7700:100::100");
    let far = a("2001:db8:99::10");
    let lan_router_mac = n.stack.ifs[0].link.mac();
    n.lan_host.link.rx.borrow_mut().clear();
    // a UDP datagram of `len` bytes of IPv6 from the LAN host to `far`
    let to_far = |len: usize| {
        ip6_frame(
            LAN_HOST_MAC,
            lan_router_mac,
            host,
            far,
            IpProtocol::Udp,
            64,
            &udp6(host, far, 40000, 7777, &alloc::vec![7u8; len - 48]),
        )
    };
    // 10 ms of the router: what it sent on the WAN
    let turn = |n: &mut Net| {
        n.now += 10;
        let now = n.now;
        n.gw.poll(&mut n.stack.ifs, now);
        n.stack.poll(now);
        wan_frames(n)
    };
    // 1401 bytes of IPv6 to the WAN: packet-too-big with 1400, back to the host
    // (the error waits while the router resolves the host, which answers)
    n.lan_host.link.tx.borrow_mut().push_back(to_far(1401));
    let mut ptb = None;
    for _ in 0..50 {
        let _ = turn(&mut n);
        lan_answers_ns(&mut n);
        ptb = n
            .lan_host
            .link
            .rx
            .borrow()
            .iter()
            .find(|f| f.get(20) == Some(&58) && f.get(54) == Some(&2))
            .cloned();
        if ptb.is_some() {
            break;
        }
    }
    let ptb = ptb.expect("packet-too-big to the LAN host");
    assert_eq!(&ptb[14 + 24..14 + 40], &host.octets());
    assert_eq!(
        &ptb[54 + 4..54 + 8],
        &1400u32.to_be_bytes(),
        "the WAN's IPv6 MTU"
    );
    // 1400 bytes go out on the WAN
    n.lan_host.link.tx.borrow_mut().push_back(to_far(1400));
    let mut out = false;
    for _ in 0..50 {
        out |= turn(&mut n)
            .iter()
            .any(|f| f.get(20) == Some(&17) && f.len() == 14 + 1400);
        if out {
            break;
        }
    }
    assert!(out, "the 1400-byte datagram left on the WAN");
    // the upstream stops announcing an MTU: the link's again
    run_mtu(&mut n, 2_000, net6("2001:db8:7700:100::", 56), None);
    assert_eq!(
        n.gw.router.interfaces().get(wan).unwrap().mtu6(),
        1400,
        "kept until it says otherwise (RFC 4861: the last value received)"
    );
}

/// Whether `f` is a duplicate address detection probe (a solicitation from ::)
/// for `target`.
fn is_dad_probe(f: &[u8], target: Ipv6Addr) -> bool {
    is_ns(f) && f[14 + 8..14 + 24] == [0; 16] && f[62..78] == target.octets()
}

#[test]
fn a_dhcpv6_address_in_use_on_the_wan_is_declined_and_a_new_one_taken_after_dad() {
    let mut n = net("192.168.1.50/24", None);
    let taken = a("2001:db8:77::1234");
    let fresh = a("2001:db8:77::5678");
    let prefix = net6("2001:db8:7700:100::", 56);
    let wan_cidr = |x: Ipv6Addr| smoltcp::wire::IpCidr::new(x.into(), 128);
    let mut declined = None;
    let mut probed_fresh = false;
    let mut tentative_seen = false;
    for _ in 0..800 {
        n.now += 10;
        let now = n.now;
        if now % 1000 == 0 {
            n.wan_host.link.tx.borrow_mut().push_back(upstream_ra());
        }
        let frames: Vec<Vec<u8>> = n.wan_host.link.rx.borrow_mut().drain(..).collect();
        for f in frames {
            // another node holds `taken` and defends it
            if is_dad_probe(&f, taken) {
                let na = crate::garp::neighbour_advertisement(UP_MAC, taken, false);
                n.wan_host.link.tx.borrow_mut().push_back(na);
                continue;
            }
            probed_fresh |= is_dad_probe(&f, fresh);
            if f.get(20) != Some(&17) {
                continue;
            }
            let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
            let udp = UdpPacket::new_checked(ip.payload()).unwrap();
            if udp.dst_port() != 547 {
                continue;
            }
            let msg = m::parse(udp.payload()).unwrap();
            // the server gives `taken` until it is declined, then `fresh`
            let addr = if declined.is_some() { fresh } else { taken };
            let kind = match msg.msg_type {
                m::SOLICIT => m::ADVERTISE,
                m::REQUEST | m::RENEW | m::REBIND => m::REPLY,
                m::DECLINE => {
                    declined = Some(msg.clone());
                    m::REPLY
                }
                _ => continue,
            };
            let r = udp6_to_router(ip.src_addr(), &answer_with(kind, &msg, prefix, addr));
            n.wan_host.link.tx.borrow_mut().push_back(r);
        }
        n.gw.poll(&mut n.stack.ifs, now);
        n.stack.poll(now);
        if n.services.poll(&mut n.stack, now) {
            n.stack.poll(now);
        }
        // while it is probed, the address is not the interface's (RFC 4862 §5.4)
        if n.stack.ifs[1].is_tentative(wan_cidr(fresh)) {
            tentative_seen = true;
            assert!(
                !has_addr(&n, 1, "2001:db8:77::5678/128"),
                "not used while tentative"
            );
        }
    }
    let d = declined.expect("a Decline");
    assert_eq!(d.server_id.as_deref(), Some(SERVER_DUID));
    assert_eq!(d.ia_na.unwrap().entries[0].addr, taken);
    assert!(
        !has_addr(&n, 1, "2001:db8:77::1234/128"),
        "the duplicate is not used"
    );
    assert!(probed_fresh && tentative_seen);
    assert!(
        has_addr(&n, 1, "2001:db8:77::5678/128"),
        "the new one, after its probe"
    );
    let lines = n.services.wan6_lines(n.now).unwrap();
    assert!(
        lines[0].contains("address 2001:db8:77::5678/128"),
        "{lines:?}"
    );
    assert!(lines.last().unwrap().contains(" declined 1;"), "{lines:?}");
    // the delegation was kept all along: the LAN's /64 is there
    assert!(has_addr(&n, 0, "2001:db8:7700:100::1/64"));
}

#[test]
fn a_reload_moves_the_lans_share_of_the_delegation_and_takes_it_away() {
    let (mut n, pd) = bound();
    assert!(has_addr(&n, 0, "2001:db8:7700:100::1/64"));
    // ip6hint 3: the LAN's /64 is the fourth /60 of the /56 (and of the ULA)
    let hinted = wan_static_network().replace(
        "option ip6assign '60'",
        "option ip6assign '60'\n\toption ip6hint '3'",
    );
    reload_saying(&mut n, &hinted, "wan6: eth0 ip6assign 60 ip6hint 3");
    // (the advertisement of the change at most 3 s after the reload's own)
    run(&mut n, 4_000, pd);
    assert!(!has_addr(&n, 0, "2001:db8:7700:100::1/64"));
    assert!(
        has_addr(&n, 0, "2001:db8:7700:130::1/64"),
        "{:?}",
        n.stack.ifs[0].addrs()
    );
    let (prefixes, _) = last_lan_ra(&n).unwrap();
    assert!(
        prefixes
            .iter()
            .any(|p| p.0 == a("2001:db8:7700:130::") && p.1 > 0),
        "{prefixes:?}"
    );
    assert!(
        prefixes.contains(&(a("2001:db8:7700:100::"), 0, 0)),
        "the old /64 with lifetimes 0: {prefixes:?}"
    );
    assert_eq!(
        n.services.delegated6().map(|d| d.1),
        Some(String::from("eth0"))
    );
    // ip6assign taken off the LAN: its share goes, announced with lifetimes 0, and
    // the delegation is no longer routed to it
    let none = wan_static_network().replace("\toption ip6assign '60'\n", "");
    reload_saying(&mut n, &none, "wan6: eth0 no longer takes a prefix");
    run(&mut n, 1_000, pd);
    assert!(!has_addr(&n, 0, "2001:db8:7700:130::1/64"));
    assert_eq!(n.services.delegated6(), None);
}

/// Reads `network` (with the image's `dhcp`) as the shell's `reload` does and
/// applies it.
fn reload(n: &mut Net, network: &str) -> Vec<String> {
    let plan = netplan::plan(network, Some(FIREWALL), &["eth0", "eth1"], 64, 5).unwrap();
    let spec = spec_from_files(DHCP, network, &plan).unwrap();
    n.services.reload(&spec, &mut n.stack, n.now)
}

/// [`reload`], which must say `line`.
#[track_caller]
fn reload_saying(n: &mut Net, network: &str, line: &str) {
    assert_said(&reload(n, network), line);
}

/// The DHCPv6 messages the router sent since the last run (taken).
fn sent_by_router(n: &Net) -> Vec<m::Message> {
    dhcp6_from_router(n).into_iter().map(|(_, m)| m).collect()
}

#[test]
fn a_reload_with_new_reqprefix_releases_the_lease_and_asks_again() {
    let (mut n, pd) = bound();
    assert!(has_addr(&n, 0, "2001:db8:7700:100::1/64"));
    // the same files: wan6 runs on untouched
    let same = reload(&mut n, &wan_static_network());
    assert!(!same.iter().any(|l| l.starts_with("wan6:")), "{same:?}");
    assert!(sent_by_router(&n).is_empty());
    // reqprefix no: a restart, as netifd's of an interface whose options changed
    let no_prefix = wan_static_network().replace(
        "option proto 'dhcpv6'",
        "option proto 'dhcpv6'\n\toption reqprefix 'no'",
    );
    reload_saying(
        &mut n,
        &no_prefix,
        "wan6: eth1 restarted (address try, prefix no), lease released",
    );
    // the Release of both IAs went out at once
    let sent = sent_by_router(&n);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].msg_type, m::RELEASE);
    assert_eq!(
        sent[0].ia_pd.as_ref().map(|ia| ia.entries[0].prefix),
        Some(pd)
    );
    assert_eq!(sent[0].server_id.as_deref(), Some(SERVER_DUID));
    run(&mut n, 5_000, pd);
    // bound again with an address only: the LAN's /64 goes, announced with
    // lifetimes 0, and the delegation is no longer routed
    let lines = n.services.wan6_lines(n.now).unwrap();
    assert!(
        lines[0].starts_with("wan6: eth1 bound address 2001:db8:77::1234/128 "),
        "{lines:?}"
    );
    assert!(!lines[0].contains(" prefix "), "{lines:?}");
    assert!(has_addr(&n, 1, "2001:db8:77::1234/128"));
    assert!(!has_addr(&n, 0, "2001:db8:7700:100::1/64"));
    let (prefixes, _) = last_lan_ra(&n).unwrap();
    assert!(
        prefixes.contains(&(a("2001:db8:7700:100::"), 0, 0)),
        "the old /64 with lifetimes 0: {prefixes:?}"
    );
    assert_eq!(n.services.delegated6(), None);
    // back to auto: a prefix again, the LAN's /64 back
    reload_saying(
        &mut n,
        &wan_static_network(),
        "wan6: eth1 restarted (address try, prefix auto), lease released",
    );
    run(&mut n, 5_000, net6("2001:db8:7700:200::", 56));
    assert!(
        has_addr(&n, 0, "2001:db8:7700:200::1/64"),
        "{:?}",
        n.stack.ifs[0].addrs()
    );
    assert_eq!(
        n.services.delegated6().map(|d| d.1),
        Some(String::from("eth0"))
    );
}

#[test]
fn wan6_taken_off_the_files_stops_and_put_back_starts_again() {
    let (mut n, pd) = bound();
    let up_ll = xenlet_router::ipv6::link_local_of(UP_MAC);
    assert_eq!(n.stack.ifs[1].default_gw6(), Some(up_ll));
    // proto none: netifd's ifdown
    let off = wan_static_network().replace("option proto 'dhcpv6'", "option proto 'none'");
    reload_saying(&mut n, &off, "wan6: eth1 stopped, lease released");
    assert_eq!(sent_by_router(&n)[0].msg_type, m::RELEASE);
    run(&mut n, 3_000, pd);
    // nothing more asked; the WAN's addresses and default route gone, the LAN's
    // /64 announced with lifetimes 0 and no longer routed
    assert!(sent_by_router(&n).is_empty());
    assert!(!has_addr(&n, 1, "2001:db8:77::1234/128"));
    assert!(!has_addr(&n, 1, "2001:db8:77::ff:fe00:202/64"));
    assert_eq!(n.stack.ifs[1].default_gw6(), None);
    assert!(!has_addr(&n, 0, "2001:db8:7700:100::1/64"));
    let (prefixes, lifetime) = last_lan_ra(&n).unwrap();
    assert!(
        prefixes.contains(&(a("2001:db8:7700:100::"), 0, 0)),
        "{prefixes:?}"
    );
    assert_eq!(lifetime, 0, "no longer a default router");
    assert_eq!(n.services.delegated6(), None);
    let lines = n.services.wan6_lines(n.now).unwrap();
    assert!(lines[0].starts_with("wan6: eth1 stopped"), "{lines:?}");
    // a second reload without it says nothing more
    assert!(!reload(&mut n, &off).iter().any(|l| l.starts_with("wan6:")));
    // back in the files: it starts again
    reload_saying(
        &mut n,
        &wan_static_network(),
        "wan6: eth1 restarted (address try, prefix auto)",
    );
    run(&mut n, 5_000, pd);
    assert!(has_addr(&n, 1, "2001:db8:77::1234/128"));
    assert_eq!(n.stack.ifs[1].default_gw6(), Some(up_ll));
    assert!(has_addr(&n, 0, "2001:db8:7700:100::1/64"));
}

#[test]
fn a_stopped_wan6_goes_once_its_old_prefixes_are_forgotten() {
    let (mut n, pd) = bound();
    let off = wan_static_network().replace("option proto 'dhcpv6'", "option proto 'none'");
    reload(&mut n, &off);
    run(&mut n, 1_000, pd);
    assert!(n.services.wan6_lines(n.now).is_some());
    // (a deprecated /64 is announced for 2 hours)
    for _ in 0..8 {
        n.now += 1_000_000;
        run(&mut n, 1_000, pd);
    }
    assert!(n.services.wan6_lines(n.now).is_none());
}
