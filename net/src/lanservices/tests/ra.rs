//! Router advertisements through the router: the LAN host hears the periodic ones
//! and an answer to its solicitation, reaches the router's ULA address over IPv6,
//! and bad solicitations are counted.

use super::*;
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    Icmpv6Packet, Icmpv6Repr, IpProtocol, Ipv6Address, Ipv6Packet, NdiscRepr, RawHardwareAddress,
};

const ROUTER_LAN_MAC: [u8; 6] = [2, 0, 0, 0, 1, 1];

fn ula(s: &str) -> Ipv6Address {
    s.parse().unwrap()
}

/// An ICMPv6 message in an Ethernet frame from the LAN host.
fn icmp6_frame(src: Ipv6Address, dst: Ipv6Address, dst_mac: [u8; 6], repr: &Icmpv6Repr) -> Vec<u8> {
    let mut m = vec![0u8; repr.buffer_len()];
    repr.emit(
        &src,
        &dst,
        &mut Icmpv6Packet::new_unchecked(&mut m[..]),
        &ChecksumCapabilities::default(),
    );
    ip6_frame(LAN_HOST_MAC, dst_mac, src, dst, IpProtocol::Icmpv6, 255, &m)
}

/// The ICMPv6 messages waiting for the LAN host (not taken: it still gets them).
fn icmp6_to_host(n: &Net) -> Vec<(Ipv6Address, Ipv6Address, Vec<u8>)> {
    n.lan_host
        .link
        .rx
        .borrow()
        .iter()
        .filter(|f| f.get(12..14) == Some(&[0x86, 0xdd][..]) && f.get(20) == Some(&58))
        .map(|f| {
            let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
            (ip.src_addr(), ip.dst_addr(), ip.payload().to_vec())
        })
        .collect()
}

/// The addresses of an RA's RDNSS options (type 25, RFC 8106), read from its bytes.
fn rdnss(ra: &[u8]) -> Vec<Ipv6Address> {
    let mut out = Vec::new();
    let mut i = 16;
    while i + 2 <= ra.len() {
        let len = ra[i + 1] as usize * 8;
        assert!(len > 0 && i + len <= ra.len(), "a well-formed option");
        if ra[i] == 25 {
            for a in ra[i + 8..i + len].chunks_exact(16) {
                out.push(Ipv6Address::from(<[u8; 16]>::try_from(a).unwrap()));
            }
        }
        i += len;
    }
    out
}

fn is_ra(icmp: &[u8]) -> bool {
    icmp.first() == Some(&134)
}

/// Steps, collecting what reaches the LAN host; until `f` is satisfied.
fn collect(
    n: &mut Net,
    steps: usize,
    mut f: impl FnMut(&[(i64, Ipv6Address, Ipv6Address, Vec<u8>)]) -> bool,
) -> Vec<(i64, Ipv6Address, Ipv6Address, Vec<u8>)> {
    let mut got = Vec::new();
    for _ in 0..steps {
        n.now += 10;
        let now = n.now;
        n.wan_host.poll(now);
        n.gw.poll(&mut n.stack.ifs, now);
        n.stack.poll(now);
        if n.services.poll(&mut n.stack, now) {
            n.stack.poll(now);
        }
        for (s, d, m) in icmp6_to_host(n) {
            got.push((now, s, d, m));
        }
        n.lan_host.poll(now);
        if f(&got) {
            break;
        }
    }
    got
}

#[test]
fn the_lan_hears_advertisements_of_the_ula_64_and_an_answer_to_its_solicitation() {
    let mut n = net("192.168.1.50/24 fd12:3456:789a::100/64", None);
    assert!(
        n.services
            .summary()
            .contains("ra: eth0 fd12:3456:789a::/64 slaac, router lifetime 0s"),
        "{}",
        n.services.summary()
    );
    // the first one at once, from the router's link-local address to all nodes
    let got = collect(&mut n, 100, |g| g.iter().any(|m| is_ra(&m.3)));
    let ra = got.iter().find(|m| is_ra(&m.3)).expect("an RA");
    let router_ll = config::link_local(ROUTER_LAN_MAC);
    assert_eq!((ra.1, ra.2), (router_ll, ula("ff02::1")));
    let icmp = Icmpv6Packet::new_checked(&ra.3[..]).unwrap();
    let repr = Icmpv6Repr::parse(&ra.1, &ra.2, &icmp, &ChecksumCapabilities::default()).unwrap();
    let Icmpv6Repr::Ndisc(NdiscRepr::RouterAdvert {
        router_lifetime,
        lladdr,
        mtu,
        prefix_info,
        flags,
        ..
    }) = repr
    else {
        panic!("{repr:?}")
    };
    assert_eq!(router_lifetime, smoltcp::time::Duration::from_secs(0));
    assert_eq!(
        flags,
        smoltcp::wire::NdiscRouterFlags::MANAGED | smoltcp::wire::NdiscRouterFlags::OTHER,
        "ra_flags managed-config other-config: the DHCPv6 server runs"
    );
    assert_eq!(
        lladdr,
        Some(RawHardwareAddress::from_bytes(&ROUTER_LAN_MAC))
    );
    assert_eq!(mtu, Some(1500));
    let p = prefix_info.unwrap();
    assert_eq!((p.prefix, p.prefix_len), (ula("fd12:3456:789a::"), 64));
    assert_eq!(
        rdnss(&ra.3),
        [ula("fd12:3456:789a::1")],
        "RDNSS: the router's ULA address, where DNS answers over IPv6"
    );

    // the next periodic one is seconds away (initial: at most 16 s); a
    // solicitation is answered within half a second (after the 3 s minimum gap)
    n.until(400, |_| None::<()>); // 4 s on
    let sent_at = n.now;
    let rs = icmp6_frame(
        ula("fe80::100"),
        ula("ff02::2"),
        [0x33, 0x33, 0, 0, 0, 2],
        &Icmpv6Repr::Ndisc(NdiscRepr::RouterSolicit {
            lladdr: Some(RawHardwareAddress::from_bytes(&LAN_HOST_MAC)),
        }),
    );
    n.lan_host.link.send(&rs).unwrap();
    let got = collect(&mut n, 100, |g| g.iter().any(|m| is_ra(&m.3)));
    let answer = got.iter().find(|m| is_ra(&m.3)).expect("an answer");
    assert!(answer.0 - sent_at <= 520, "{} ms", answer.0 - sent_at);
    let c = n.services.ra_counters();
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].0, c[0].1.solicitations, c[0].2), ("eth0", 1, 0));
    assert!(c[0].1.solicited + c[0].1.coalesced >= 1);

    // a bad one (hop limit 64: not from this link) is dropped and counted
    let mut bad = rs.clone();
    bad[14 + 7] = 64;
    n.lan_host.link.send(&bad).unwrap();
    n.until(10, |_| None::<()>);
    assert_eq!(n.services.ra_counters()[0].1.bad_hop_limit, 1);
}

#[test]
fn a_lan_host_reaches_the_routers_ula_address() {
    let mut n = net("192.168.1.50/24 fd12:3456:789a::100/64", None);
    let addrs: Vec<_> = n.gw.router.addresses6(xenlet_router::IfId(0)).collect();
    n.step();
    let addrs_after: Vec<_> = n.gw.router.addresses6(xenlet_router::IfId(0)).collect();
    assert!(addrs.is_empty() || addrs == addrs_after);
    assert_eq!(
        addrs_after,
        [xenlet_router::route6::Ipv6Net::new(ula("fd12:3456:789a::1"), 64).unwrap()],
        "the LAN's ULA address is the router's"
    );
    // an echo request to fd12:3456:789a::1; smoltcp drops the reply of the first
    // while it resolves the host (its solicitation is answered), as ping repeats
    let src = ula("fd12:3456:789a::100");
    let dst = ula("fd12:3456:789a::1");
    let echo = Icmpv6Repr::EchoRequest {
        ident: 0x4242,
        seq_no: 1,
        data: b"hello",
    };
    n.lan_host
        .link
        .send(&icmp6_frame(src, dst, ROUTER_LAN_MAC, &echo))
        .unwrap();
    let got = collect(&mut n, 100, |_| false);
    assert!(
        got.iter().any(|m| m.3.first() == Some(&135) && m.1 == dst),
        "the router resolves the host from its ULA address"
    );
    n.lan_host
        .link
        .send(&icmp6_frame(src, dst, ROUTER_LAN_MAC, &echo))
        .unwrap();
    let got = collect(&mut n, 300, |g| g.iter().any(|m| m.3.first() == Some(&129)));
    let reply = got
        .iter()
        .find(|m| m.3.first() == Some(&129))
        .unwrap_or_else(|| {
            panic!(
                "no echo reply: {:?}\nrouter {:?}\nlocal {}",
                got.iter().map(|m| (m.1, m.2, m.3[0])).collect::<Vec<_>>(),
                n.gw.router.stats(),
                n.gw.local
            )
        });
    assert_eq!((reply.1, reply.2), (dst, src));
}
