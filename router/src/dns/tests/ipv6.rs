//! IPv6 clients: queries from the LAN's IPv6 hosts are forwarded (to the IPv4
//! upstreams), merged with identical IPv4 ones, cached and checked for rebinding as
//! IPv4 clients' are; local names answer AAAA from their DHCPv6 lease, NODATA
//! without one (the router's own names with its ULA address).

use super::*;
use core::net::{Ipv6Addr, SocketAddrV6};

const ULA1: Ipv6Addr = Ipv6Addr::new(0xfd12, 0x3456, 0x789a, 0, 0, 0, 0, 1);
const CLIENT6: SocketAddrV6 = SocketAddrV6::new(
    Ipv6Addr::new(0xfd12, 0x3456, 0x789a, 0, 0, 0, 0, 0x100),
    51000,
    0,
    0,
);
const LL_CLIENT6: SocketAddrV6 =
    SocketAddrV6::new(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0x100), 51001, 0, 0);

/// One LAN host, `lan1` at 192.168.1.100.
struct OneHost;

impl HostTable for OneHost {
    fn address_of(&self, name: &str, _: Millis) -> Option<Ipv4Addr> {
        name.eq_ignore_ascii_case("lan1")
            .then_some(Ipv4Addr::new(192, 168, 1, 100))
    }
    fn name_of(&self, ip: Ipv4Addr, _: Millis) -> Option<&str> {
        (ip == Ipv4Addr::new(192, 168, 1, 100)).then_some("lan1")
    }
}

fn forwarder6(ula: Option<Ipv6Addr>) -> DnsForwarder {
    let mut cfg = config();
    cfg.lan_addr6 = ula;
    DnsForwarder::new(cfg)
}

/// The one reply in `actions`, checked to go to `client` over UDP.
fn to(actions: &[DnsAction], client: impl Into<SocketAddr>) -> Vec<u8> {
    let client = client.into();
    match actions {
        [DnsAction::ToClient { client: c, packet }, ..] if *c == client => packet.clone(),
        other => panic!("expected a reply to {client}, got {other:?}"),
    }
}

/// An upstream reply to `forwarded` with AAAA records `addrs` (TTL 300).
fn reply_aaaa(forwarded: &[u8], addrs: &[Ipv6Addr]) -> Vec<u8> {
    let octets: Vec<[u8; 16]> = addrs.iter().map(|a| a.octets()).collect();
    let rdata: Vec<&[u8]> = octets.iter().map(|a| &a[..]).collect();
    reply_records(forwarded, 28, 300, &rdata)
}

fn answers(r: &[u8], rtype: u16) -> Vec<Vec<u8>> {
    let m = Message::parse(r).unwrap();
    m.records
        .iter()
        .filter(|x| x.section == super::message::Section::Answer && x.rtype == rtype)
        .map(|x| r[x.rdata.clone()].to_vec())
        .collect()
}

#[test]
fn an_ipv6_clients_query_goes_to_the_ipv4_upstream_and_the_answer_back_to_it() {
    let mut f = forwarder6(Some(ULA1));
    let mut rng = SeqRng(11);
    let public: Ipv6Addr = "2606:2800:220:1::248".parse().unwrap();
    let q = query(0xabcd, "example.com", rtype::AAAA);
    let (server, port, sent) = upstream(&f.handle_query(&q, CLIENT6, 0, &mut rng, &()));
    assert_eq!(server, UP1, "IPv4 upstream");
    assert_ne!(&sent[..2], &q[..2], "a new id upstream");
    let out = f.handle_upstream(&reply_aaaa(&sent, &[public]), UP1, port, 5);
    let r = to(&out, CLIENT6);
    assert_eq!(&r[..2], &[0xab, 0xcd], "the client's id back");
    assert_eq!(answers(&r, rtype::AAAA), [public.octets().to_vec()]);
    assert!(out.contains(&DnsAction::ClosePort(port)));
    // another IPv6 host (link-local) gets it from the cache
    let out = f.handle_query(
        &query(0x0101, "example.com", rtype::AAAA),
        LL_CLIENT6,
        10,
        &mut rng,
        &(),
    );
    let r = to(&out, LL_CLIENT6);
    assert_eq!(answers(&r, rtype::AAAA), [public.octets().to_vec()]);
    let c = f.counters();
    assert_eq!(
        (c.queries, c.forwarded, c.replies, c.cache_hits),
        (2, 1, 1, 1)
    );
}

#[test]
fn identical_queries_from_ipv4_and_ipv6_clients_share_one_upstream_query() {
    let mut f = forwarder6(Some(ULA1));
    let mut rng = SeqRng(12);
    let q = query(1, "example.com", rtype::A);
    let (_, port, sent) = upstream(&f.handle_query(&q, CLIENT6, 0, &mut rng, &()));
    assert!(ask(&mut f, 2, "example.com", rtype::A, 1, &mut rng).is_empty());
    assert!(f
        .handle_tcp_query(
            &query(3, "example.com", rtype::A),
            LL_CLIENT6,
            1,
            &mut rng,
            &()
        )
        .is_empty());
    assert_eq!(f.counters().merged, 2);
    assert_eq!(f.tcp_waiting(LL_CLIENT6), 1);
    assert_eq!(f.tcp_waiting(CLIENT6), 0, "its UDP query is not a TCP one");
    let out = f.handle_upstream(&reply_a(&sent, &[[93, 184, 216, 34]], 300), UP1, port, 2);
    let mut got: Vec<(SocketAddr, bool, u16)> = out
        .iter()
        .filter_map(|a| match a {
            DnsAction::ToClient { client, packet } => {
                Some((*client, false, u16::from_be_bytes([packet[0], packet[1]])))
            }
            DnsAction::ToTcpClient { client, packet } => {
                Some((*client, true, u16::from_be_bytes([packet[0], packet[1]])))
            }
            _ => None,
        })
        .collect();
    got.sort();
    let mut want: Vec<(SocketAddr, bool, u16)> = alloc::vec![
        (CLIENT6.into(), false, 1),
        (CLIENT.into(), false, 2),
        (LL_CLIENT6.into(), true, 3),
    ];
    want.sort();
    assert_eq!(got, want);
    assert_eq!(f.tcp_waiting(LL_CLIENT6), 0);
}

#[test]
fn a_private_aaaa_from_upstream_is_not_given_to_an_ipv6_client() {
    let mut f = forwarder6(Some(ULA1));
    let mut rng = SeqRng(13);
    let q = query(7, "evil.example", rtype::AAAA);
    let (_, port, sent) = upstream(&f.handle_query(&q, CLIENT6, 0, &mut rng, &()));
    let out = f.handle_upstream(&reply_aaaa(&sent, &[ULA1]), UP1, port, 1);
    let r = to(&out, CLIENT6);
    assert_eq!(r[3] & 0xf, rcode::NOERROR);
    assert!(answers(&r, rtype::AAAA).is_empty(), "stripped");
    assert_eq!(f.counters().dropped_rebind, 1);
    assert_eq!(f.cache_len(), 0);
}

#[test]
fn local_names_answer_aaaa_with_nodata_and_the_router_with_its_ula() {
    let mut f = forwarder6(Some(ULA1));
    let mut rng = SeqRng(14);
    let mut ask = |f: &mut DnsForwarder, name: &str, t: u16| {
        to(
            &f.handle_query(&query(9, name, t), CLIENT6, 0, &mut rng, &OneHost),
            CLIENT6,
        )
    };
    // a DHCP host: A answered, AAAA NODATA (NOERROR, no answer), not NXDOMAIN
    let r = ask(&mut f, "lan1.lan", rtype::A);
    assert_eq!(answers(&r, rtype::A), [alloc::vec![192, 168, 1, 100]]);
    for name in ["lan1.lan", "lan1", "LAN1.lan"] {
        let r = ask(&mut f, name, rtype::AAAA);
        assert_eq!(r[3] & 0xf, rcode::NOERROR, "{name}");
        assert_eq!(&r[6..8], &[0, 0], "{name}: no answer");
    }
    // the router's names: AAAA is its ULA address; ANY gives both
    for name in ["OpenWrt.lan", "openwrt", "router.lan"] {
        let r = ask(&mut f, name, rtype::AAAA);
        assert_eq!(answers(&r, rtype::AAAA), [ULA1.octets().to_vec()], "{name}");
    }
    let r = ask(&mut f, "openwrt.lan", rtype::ANY);
    assert_eq!(answers(&r, rtype::A), [LAN.octets().to_vec()]);
    assert_eq!(answers(&r, rtype::AAAA), [ULA1.octets().to_vec()]);
    // an unknown name under .lan is still NXDOMAIN
    let r = ask(&mut f, "nobody.lan", rtype::AAAA);
    assert_eq!(r[3] & 0xf, rcode::NXDOMAIN);
    assert_eq!(f.counters().forwarded, 0);
    // without a ULA the router's AAAA is NODATA too
    let mut g = forwarder6(None);
    let r = ask(&mut g, "openwrt.lan", rtype::AAAA);
    assert_eq!((r[3] & 0xf, &r[6..8]), (rcode::NOERROR, &[0u8, 0][..]));
}

#[test]
fn bad_queries_from_ipv6_clients_are_dropped_and_counted() {
    let mut f = forwarder6(Some(ULA1));
    let mut rng = SeqRng(15);
    let q = query(1, "example.com", rtype::A);
    assert!(f
        .handle_query(&q[..7], CLIENT6, 0, &mut rng, &())
        .is_empty());
    let mut response = q.clone();
    response[2] |= 0x80;
    assert!(f
        .handle_tcp_query(&response, LL_CLIENT6, 0, &mut rng, &())
        .is_empty());
    assert_eq!(f.counters().dropped_malformed, 2);
    assert_eq!(f.pending_len(), 0);
}

/// `ip6.arpa` name of `a`.
fn reverse6(a: Ipv6Addr) -> alloc::string::String {
    let mut s = alloc::string::String::new();
    for b in a.octets().iter().rev() {
        s.push_str(&alloc::format!("{:x}.{:x}.", b & 0xf, b >> 4));
    }
    s.push_str("ip6.arpa");
    s
}

#[test]
fn ipv6_reverse_lookups_of_the_router_and_private_ranges_stay_local() {
    let mut f = forwarder6(Some(ULA1));
    let mut rng = SeqRng(16);
    // the router's ULA address is OpenWrt.lan
    let q = query(1, &reverse6(ULA1), rtype::PTR);
    let r = to(&f.handle_query(&q, CLIENT6, 0, &mut rng, &()), CLIENT6);
    let m = Message::parse(&r).unwrap();
    let (n, _) = name::Name::parse(&r, m.records[0].rdata.start).unwrap();
    assert_eq!(n.to_dotted(), "openwrt.lan");
    // boguspriv: another ULA address, a link-local one: NXDOMAIN, not forwarded
    for a in [*CLIENT6.ip(), *LL_CLIENT6.ip()] {
        let q = query(2, &reverse6(a), rtype::PTR);
        let r = to(&f.handle_query(&q, CLIENT6, 0, &mut rng, &()), CLIENT6);
        assert_eq!(r[3] & 0xf, rcode::NXDOMAIN, "{a}");
    }
    assert_eq!(f.counters().forwarded, 0);
    // a public address's reverse name is forwarded
    let public: Ipv6Addr = "2606:4700::1111".parse().unwrap();
    upstream(&f.handle_query(
        &query(3, &reverse6(public), rtype::PTR),
        CLIENT6,
        0,
        &mut rng,
        &(),
    ));
}

#[test]
fn an_ipv6_upstream_is_asked_and_only_its_own_address_is_believed() {
    // The forwarder takes IPv6 servers (the glue configures IPv4 ones only until
    // the WAN has IPv6: see `net`'s lanconfig).
    let v6: SocketAddr = "[2620:fe::fe]:53".parse().unwrap();
    let mut cfg = DnsConfig::new(LAN, MASK);
    cfg.upstreams = alloc::vec![v6, UP1];
    let mut f = DnsForwarder::new(cfg);
    let mut rng = SeqRng(17);
    let (server, port, sent) = upstream(&ask(&mut f, 5, "example.com", rtype::A, 0, &mut rng));
    assert_eq!(server, v6);
    let r = reply_a(&sent, &[[93, 184, 216, 34]], 300);
    // the same bytes from the IPv4 server, or from another IPv6 address: no match
    assert!(f.handle_upstream(&r, UP1, port, 1).is_empty());
    let other: SocketAddr = "[2620:fe::9]:53".parse().unwrap();
    assert!(f.handle_upstream(&r, other, port, 1).is_empty());
    assert_eq!(f.counters().dropped_no_pending_match, 2);
    let out = f.handle_upstream(&r, v6, port, 2);
    assert_eq!(to_client(&out)[..2], [0, 5]);
}

/// `lan1` with a DHCPv4 and a DHCPv6 lease, `v6only` with a DHCPv6 lease only.
struct DualHosts;

const LAN1_6: Ipv6Addr = Ipv6Addr::new(0xfd12, 0x3456, 0x789a, 0, 0, 0, 0, 0x123);
const V6ONLY: Ipv6Addr = Ipv6Addr::new(0xfd12, 0x3456, 0x789a, 0, 0, 0, 0, 0x456);

impl HostTable for DualHosts {
    fn address_of(&self, name: &str, now: Millis) -> Option<Ipv4Addr> {
        OneHost.address_of(name, now)
    }
    fn name_of(&self, ip: Ipv4Addr, now: Millis) -> Option<&str> {
        OneHost.name_of(ip, now)
    }
    fn address6_of(&self, name: &str, _: Millis) -> Option<Ipv6Addr> {
        if name.eq_ignore_ascii_case("lan1") {
            Some(LAN1_6)
        } else if name.eq_ignore_ascii_case("v6only") {
            Some(V6ONLY)
        } else {
            None
        }
    }
    fn name6_of(&self, ip: Ipv6Addr, _: Millis) -> Option<&str> {
        match ip {
            LAN1_6 => Some("lan1"),
            V6ONLY => Some("v6only"),
            _ => None,
        }
    }
}

#[test]
fn dhcpv6_hosts_answer_aaaa_and_their_reverse_names() {
    let mut f = forwarder6(Some(ULA1));
    let mut rng = SeqRng(17);
    let mut ask = |f: &mut DnsForwarder, name: &str, t: u16| {
        to(
            &f.handle_query(&query(9, name, t), CLIENT6, 0, &mut rng, &DualHosts),
            CLIENT6,
        )
    };
    let r = ask(&mut f, "lan1.lan", rtype::AAAA);
    assert_eq!(answers(&r, rtype::AAAA), [LAN1_6.octets().to_vec()]);
    assert!(answers(&r, rtype::A).is_empty());
    let r = ask(&mut f, "LAN1", rtype::ANY);
    assert_eq!(answers(&r, rtype::A), [alloc::vec![192, 168, 1, 100]]);
    assert_eq!(answers(&r, rtype::AAAA), [LAN1_6.octets().to_vec()]);
    // a host with only a DHCPv6 lease: AAAA, and A is NODATA (not NXDOMAIN)
    let r = ask(&mut f, "v6only.lan", rtype::AAAA);
    assert_eq!(answers(&r, rtype::AAAA), [V6ONLY.octets().to_vec()]);
    let r = ask(&mut f, "v6only.lan", rtype::A);
    assert_eq!((r[3] & 0xf, &r[6..8]), (rcode::NOERROR, &[0u8, 0][..]));
    // the reverse name of a DHCPv6 address
    let r = ask(&mut f, &reverse6(LAN1_6), rtype::PTR);
    let m = Message::parse(&r).unwrap();
    let (n, _) = name::Name::parse(&r, m.records[0].rdata.start).unwrap();
    assert_eq!(n.to_dotted(), "lan1.lan");
    assert_eq!(f.counters().forwarded, 0);
}
