//! The IPv6 forwarding path end to end, over the IPv4 tests' three interfaces with
//! IPv6 added: eth0 LAN 2001:db8:1::1/64, eth1 WAN 2001:db8:ff::2/64 (default via
//! fe80::1), eth2 2001:db8:2::1/64 with MTU 1280.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::fixture::*;
use super::*;
use crate::exthdr::Upper;
use crate::route6::{Ipv6Net, Route6};
use crate::testutil::*;
use crate::{HookVerdict, Meta, NoHook};
use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;
use core::net::Ipv6Addr;

const HOST: &str = "2001:db8:1::100";
const GW: &str = "fe80::1";
const DMZ_HOST: &str = "2001:db8:2::50";
const NET: &str = "2001:db8:99::5";

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// The interfaces with IPv4 only (what every deployment has today).
fn setup4() -> Router {
    setup4_gso(false)
}

/// [`setup4`], the WAN link taking GSO packets (TCPv4 and TCPv6) if `wan_gso`.
fn setup4_gso(wan_gso: bool) -> Router {
    let mut r = Router::new(RouterConfig::default());
    r.add_interface(ifcfg("eth0", MAC0, 1500, false, false))
        .unwrap();
    r.add_interface(ifcfg("eth1", MAC1, 1500, wan_gso, false))
        .unwrap();
    r.add_interface(ifcfg("eth2", MAC2, 1280, false, false))
        .unwrap();
    r.add_address(LAN, Ipv4Net::new(ip([192, 168, 1, 1]), 24).unwrap())
        .unwrap();
    r
}

fn setup() -> Router {
    setup_gso(false)
}

fn setup_gso(wan_gso: bool) -> Router {
    let mut r = setup4_gso(wan_gso);
    let net = |s: &str, p| Ipv6Net::new(a(s), p).unwrap();
    r.add_address6(LAN, net("2001:db8:1::1", 64)).unwrap();
    r.add_address6(WAN, net("2001:db8:ff::2", 64)).unwrap();
    r.add_address6(DMZ, net("2001:db8:2::1", 64)).unwrap();
    r.add_route6(Route6 {
        dest: net("::", 0),
        gateway: Some(a(GW)),
        ifc: WAN,
        mtu: None,
        metric: 1024,
        proto: RouteProto::Dhcp,
    })
    .unwrap();
    r
}

/// A neighbour solicitation from `src` (link-layer address `mac`) to the router.
fn ns_frame(mac: [u8; 6], src: &str, target: &str) -> Vec<u8> {
    let mut body = vec![0u8; 4];
    body.extend_from_slice(&a(target).octets());
    body.extend_from_slice(&[1, 1]);
    body.extend_from_slice(&mac);
    let dst = crate::ipv6::solicited_node(a(target)).to_string();
    let p = ipv6(src, &dst, 58, 255, &icmp6(src, &dst, 135, 0, &body));
    eth(crate::ipv6::multicast_mac(a(&dst)), mac, 0x86dd, &p)
}

/// Teaches the router a neighbour with a solicitation from it.
fn learn(r: &mut Router, ifc: IfId, addr: &str, mac: [u8; 6]) {
    let mut f = ns_frame(mac, addr, "fe80::ff");
    let mut o = Recorder::default();
    assert_eq!(
        r.input(ifc, &mut f, RxMeta::default(), 0, &mut NoHook, &mut o),
        Disposition::Local
    );
    assert!(o.sent.is_empty());
    assert_eq!(r.neighbour6(ifc, a(addr)), Some(mac));
}

fn learn_all(r: &mut Router) {
    learn(r, LAN, HOST, HOST_MAC);
    learn(r, WAN, GW, GW_MAC);
    learn(r, DMZ, DMZ_HOST, DMZ_MAC);
}

/// [`setup`] with every neighbour known.
fn learnt() -> Router {
    let mut r = setup();
    learn_all(&mut r);
    r
}

fn udp_frame(to_mac: [u8; 6], src: &str, dst: &str, hop: u8, len: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..len).map(|i| (i * 13 + 1) as u8).collect();
    let p = ipv6(src, dst, 17, hop, &udp(src, dst, 33000, 53, &payload));
    eth(to_mac, HOST_MAC, 0x86dd, &p)
}

/// The ICMPv6 messages sent: (interface, eth dst, type, code, ip) with a verified
/// checksum.
type Sent6 = (IfId, [u8; 6], u8, u8, Vec<u8>);

fn icmp6_sent(o: &Recorder) -> Vec<Sent6> {
    o.of_type(0x86dd)
        .into_iter()
        .filter(|(_, f, _)| f[14 + 6] == 58)
        .map(|(i, f, _)| {
            let ip = f[14..].to_vec();
            let h = crate::ipv6::parse(&ip).unwrap();
            assert!(
                crate::ipv6::l4_checksum_ok(h.src, h.dst, 58, &ip[40..]),
                "ICMPv6 checksum"
            );
            (*i, f[..6].try_into().unwrap(), ip[40], ip[41], ip)
        })
        .collect()
}

#[test]
fn without_an_ipv6_route_nothing_is_forwarded_and_all_is_local() {
    let mut r = setup4();
    let mut o = Recorder::default();
    let c = udp_frame(MAC0, HOST, NET, 64, 10);
    let mut f = c.clone();
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Local);
    assert_eq!(f, c, "unchanged");
    // even garbage: not looked at
    let mut f = eth(MAC0, HOST_MAC, 0x86dd, &[0x60; 10]);
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Local);
    assert!(o.sent.is_empty());
    assert_eq!(r.stats().ipv6_forwarded, 0);
}

#[test]
fn a_packet_for_another_network_is_forwarded_with_the_hop_limit_decremented() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let c = udp_frame(MAC0, HOST, NET, 64, 100);
    let mut f = c.clone();
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Forwarded);
    assert_eq!(o.sent.len(), 1);
    let (ifc, out, _) = &o.sent[0];
    assert_eq!(*ifc, WAN);
    assert_eq!(&out[..6], &GW_MAC);
    assert_eq!(&out[6..12], &MAC1);
    assert_eq!(out[14 + 7], 63);
    let mut expect = c.clone();
    expect[14 + 7] = 63;
    assert_eq!(&out[12..], &expect[12..], "only the hop limit changed");
    // the other way, to an on-link host of the DMZ
    let mut f = udp_frame(MAC1, NET, DMZ_HOST, 2, 100);
    assert_eq!(run(&mut r, WAN, &mut f, 0, &mut o), Disposition::Forwarded);
    let (ifc, out, _) = &o.sent[1];
    assert_eq!((*ifc, &out[..6], out[14 + 7]), (DMZ, &DMZ_MAC[..], 1));
    assert_eq!(r.stats().ipv6_forwarded, 2);
    assert_eq!(r.stats().iface(WAN).tx_packets, 1);
    assert_eq!(r.stats().dropped_total(), 0);
}

/// An advertisement from `who` (`mac`) to the router on `ifc` (its MAC `to`).
fn na_frame(to: [u8; 6], who: &str, mac: [u8; 6]) -> Vec<u8> {
    let mut adv = vec![0x40u8, 0, 0, 0];
    adv.extend_from_slice(&a(who).octets());
    adv.extend_from_slice(&[2, 1]);
    adv.extend_from_slice(&mac);
    let me = crate::ipv6::link_local_of(to).to_string();
    let p = ipv6(who, &me, 58, 255, &icmp6(who, &me, 136, 0, &adv));
    eth(to, mac, 0x86dd, &p)
}

#[test]
fn an_unknown_next_hop_is_solicited_and_the_packets_wait_for_its_answer() {
    let mut r = setup();
    let mut o = Recorder::default();
    let first = udp_frame(MAC0, HOST, NET, 64, 10);
    let mut f = first.clone();
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Queued);
    assert_eq!(o.sent.len(), 1);
    let (ifc, ns, _) = &o.sent[0];
    assert_eq!(*ifc, WAN);
    assert_eq!(&ns[..6], &[0x33, 0x33, 0xff, 0, 0, 1]);
    let ip = &ns[14..];
    assert_eq!(crate::ipv6::src(ip), crate::ipv6::link_local_of(MAC1));
    assert_eq!(crate::ipv6::dst(ip), a("ff02::1:ff00:1"));
    assert_eq!((ip[40], &ip[48..64]), (135, &a(GW).octets()[..]));
    // not solicited again before a second has passed; the packet waits too
    let mut f = udp_frame(MAC0, HOST, NET, 64, 11);
    assert_eq!(run(&mut r, LAN, &mut f, 500, &mut o), Disposition::Queued);
    assert_eq!(o.sent.len(), 1);
    assert_eq!(r.ndp.queued(), 2);
    assert_eq!(r.stats().dropped_total(), 0);
    // the answer sends them, oldest first, to the learnt MAC
    let mut na = na_frame(MAC1, GW, GW_MAC);
    assert_eq!(run(&mut r, WAN, &mut na, 600, &mut o), Disposition::Local);
    assert_eq!(o.sent.len(), 3);
    for (k, (ifc, out, _)) in o.sent[1..].iter().enumerate() {
        assert_eq!(
            (*ifc, &out[..6], &out[6..12]),
            (WAN, &GW_MAC[..], &MAC1[..])
        );
        assert_eq!(out[14 + 7], 63);
        assert_eq!(out.len(), first.len() + k);
    }
    let mut expect = first.clone();
    expect[14 + 7] = 63;
    assert_eq!(&o.sent[1].1[12..], &expect[12..]);
    assert_eq!(r.ndp.queued(), 0);
    assert_eq!(r.stats().iface(WAN).tx_packets, 2, "the held packets");
    // the next packet goes straight away
    let mut f = udp_frame(MAC0, HOST, NET, 64, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 700, &mut o),
        Disposition::Forwarded
    );
}

#[test]
fn at_most_queue_per_entry_packets_wait_for_one_neighbour() {
    let mut r = setup();
    let mut o = Recorder::default();
    let got: Vec<Disposition> = (0..5)
        .map(|i| {
            let mut f = udp_frame(MAC0, HOST, NET, 64, 10 + i);
            run(&mut r, LAN, &mut f, 0, &mut o)
        })
        .collect();
    let held = Disposition::Queued;
    let drop = Disposition::Dropped(DropReason::NoNeighbour);
    assert_eq!(got, [held, held, held, drop, drop]);
    assert_eq!(r.ndp.queued(), 3);
    assert_eq!(r.stats().dropped(DropReason::NoNeighbour), 2);
    assert_eq!(r.ndp_stats().queued, 3);
    let mut na = na_frame(MAC1, GW, GW_MAC);
    run(&mut r, WAN, &mut na, 100, &mut o);
    assert_eq!(o.sent.len(), 1 + 3, "the solicitation and the 3 held");
}

#[test]
fn a_failed_resolution_drops_the_packets_with_address_unreachable() {
    let mut r = setup();
    learn(&mut r, LAN, HOST, HOST_MAC);
    let mut o = Recorder::default();
    let to = "2001:db8:2::77"; // on the DMZ's link, never answers
    let c = udp_frame(MAC0, HOST, to, 64, 10);
    let mut f = c.clone();
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Queued);
    // solicited again by the timer (no further packet), three times in all
    for t in [300, 1000, 1500, 2000] {
        r.poll(t, &mut o);
    }
    assert_eq!(o.sent.len(), 3);
    assert!(o
        .sent
        .iter()
        .all(|(i, f, _)| *i == DMZ && f[14 + 40] == 135));
    assert_eq!(r.ndp.queued(), 1);
    r.poll(3000, &mut o);
    assert_eq!(r.ndp.queued(), 0);
    assert_eq!(r.stats().dropped(DropReason::NoNeighbour), 1);
    let errs = icmp6_sent(&o);
    let errs: Vec<_> = errs.iter().filter(|e| e.2 == 1).collect();
    assert_eq!(errs.len(), 1);
    let (ifc, mac, _, code, ip) = errs[0];
    assert_eq!((*ifc, *mac, *code), (LAN, HOST_MAC, 3));
    assert_eq!(crate::ipv6::dst(ip), a(HOST));
    assert_eq!(&ip[48..48 + c.len() - 14], &c[14..], "quoted as it arrived");
    // and nothing else is left to send
    let n = o.sent.len();
    r.poll(3500, &mut o);
    assert_eq!(o.sent.len(), n);
}

#[test]
fn a_flood_to_an_on_link_prefix_holds_no_more_than_the_slots() {
    let mut r = setup();
    let mut o = Recorder::default();
    let mut held = 0;
    for i in 0..2000u16 {
        let to = Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 1, i).to_string();
        let mut f = udp_frame(MAC0, HOST, &to, 64, 10);
        if run(&mut r, LAN, &mut f, Millis::from(i), &mut o) == Disposition::Queued {
            held += 1;
        }
        assert!(r.ndp.queued() <= NdpConfig::default().table.queue_slots);
    }
    assert_eq!(held, 32);
    assert_eq!(r.stats().dropped(DropReason::NoNeighbour), 2000 - 32);
    // failing them frees every slot (their address-unreachable errors wait on
    // the LAN host, not resolved in this setup, then fail with it)
    for t in 1..10 {
        r.poll(2000 + t * 1000, &mut o);
    }
    assert_eq!(r.ndp.queued(), 0);
}

#[test]
fn hop_limit_1_gets_time_exceeded_quoting_the_packet() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let c = udp_frame(MAC0, HOST, NET, 1, 100);
    let mut f = c.clone();
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::TtlExpired)
    );
    let sent = icmp6_sent(&o);
    assert_eq!(sent.len(), 1);
    let (ifc, mac, t, code, ip) = &sent[0];
    assert_eq!((*ifc, *mac, *t, *code), (LAN, HOST_MAC, 3, 0));
    assert_eq!(crate::ipv6::src(ip), a("2001:db8:1::1"));
    assert_eq!(crate::ipv6::dst(ip), a(HOST));
    assert_eq!(&ip[48..], &c[14..], "the whole packet, as it arrived");
    assert_eq!(r.stats().icmp6_errors, 1);
}

#[test]
fn too_big_gets_packet_too_big_which_is_never_rate_limited() {
    let mut r = learnt();
    let mut o = Recorder::default();
    // 1300 bytes to the DMZ (MTU 1280), 200 times at once
    for _ in 0..200 {
        let mut f = udp_frame(MAC0, HOST, DMZ_HOST, 64, 1300 - 48);
        assert_eq!(
            run(&mut r, LAN, &mut f, 0, &mut o),
            Disposition::Dropped(DropReason::TooBig)
        );
    }
    let sent = icmp6_sent(&o);
    assert_eq!(sent.len(), 200);
    let ip = &sent[0].4;
    assert_eq!((ip[40], ip[41]), (2, 0));
    assert_eq!(&ip[44..48], &1280u32.to_be_bytes());
    assert_eq!(ip.len(), 1280, "the quote fills the minimum MTU");
    // time-exceeded is limited: the per-peer burst
    let mut o = Recorder::default();
    for _ in 0..200 {
        let mut f = udp_frame(MAC0, HOST, NET, 1, 10);
        run(&mut r, LAN, &mut f, 0, &mut o);
    }
    assert_eq!(icmp6_sent(&o).len(), 6);
    assert_eq!(r.stats().icmp_peer_limited, 194);
    // then one every 250 ms (HOST is behind a /64: 1000 ms >> 2), as Linux
    let mut o = Recorder::default();
    for t in 1..=1000 {
        let mut f = udp_frame(MAC0, HOST, NET, 1, 10);
        run(&mut r, LAN, &mut f, t, &mut o);
    }
    assert_eq!(icmp6_sent(&o).len(), 4);
}

#[test]
fn no_error_about_an_error_nor_from_an_unspecified_source() {
    let mut r = learnt();
    let mut o = Recorder::default();
    // a destination-unreachable with hop limit 1
    let err = icmp6(HOST, NET, 1, 0, &[0; 52]);
    let mut f = eth(MAC0, HOST_MAC, 0x86dd, &ipv6(HOST, NET, 58, 1, &err));
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::TtlExpired)
    );
    // an echo request with hop limit 1 does get one
    let echo = icmp6(HOST, NET, 128, 0, &[0, 1, 0, 1]);
    let mut f = eth(MAC0, HOST_MAC, 0x86dd, &ipv6(HOST, NET, 58, 1, &echo));
    run(&mut r, LAN, &mut f, 0, &mut o);
    assert_eq!(icmp6_sent(&o).len(), 1);
    // from :: (not forwarded, no error)
    let mut f = udp_frame(MAC0, "::", NET, 64, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::Martian)
    );
    assert_eq!(o.sent.len(), 1);
}

#[test]
fn link_local_addresses_are_never_forwarded() {
    let mut r = learnt();
    learn(&mut r, LAN, "fe80::5", HOST_MAC);
    let mut o = Recorder::default();
    // to a link-local address: the local stack's, even with a route for it
    let mut f = udp_frame(MAC0, HOST, "fe80::99", 64, 10);
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Local);
    // from one, off the link: dropped, "beyond scope of source address"
    let mut f = udp_frame(MAC0, "fe80::5", NET, 64, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::Martian)
    );
    let sent = icmp6_sent(&o);
    assert_eq!(sent.len(), 1);
    let (ifc, mac, t, code, ip) = &sent[0];
    assert_eq!((*ifc, *mac, *t, *code), (LAN, HOST_MAC, 1, 2));
    assert_eq!(crate::ipv6::src(ip), crate::ipv6::link_local_of(MAC0));
    assert_eq!(r.stats().ipv6_forwarded, 0);
}

#[test]
fn no_route_gets_destination_unreachable() {
    let mut r = learnt();
    r.routes6_mut().remove_where(|r| r.dest.prefix_len() == 0);
    let mut o = Recorder::default();
    let mut f = udp_frame(MAC0, HOST, NET, 64, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::NoRoute)
    );
    let sent = icmp6_sent(&o);
    assert_eq!((sent.len(), sent[0].2, sent[0].3), (1, 1, 0));
}

#[test]
fn a_broken_extension_header_chain_is_dropped_and_counted() {
    let mut r = learnt();
    let mut o = Recorder::default();
    // a routing header claiming 64 bytes in a 16-byte payload
    let p = ipv6(
        HOST,
        NET,
        43,
        64,
        &[17, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    );
    let mut f = eth(MAC0, HOST_MAC, 0x86dd, &p);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::Malformed)
    );
    assert_eq!(r.stats().ipv6_bad_exthdr, 1);
    assert!(o.sent.is_empty());
    // an unknown hop-by-hop option with action 10: a parameter problem pointing at it
    let mut rest = vec![17, 0, 1, 0, 0x9e, 2, 0, 0];
    rest.extend_from_slice(&udp(HOST, NET, 1, 2, &[0; 4]));
    let p = ipv6(HOST, NET, 0, 64, &rest);
    let mut f = eth(MAC0, HOST_MAC, 0x86dd, &p);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::Malformed)
    );
    let sent = icmp6_sent(&o);
    assert_eq!(sent.len(), 1);
    let ip = &sent[0].4;
    assert_eq!((ip[40], ip[41], &ip[44..48]), (4, 2, &[0u8, 0, 0, 44][..]));
    // action 01: dropped without a word
    let mut rest = vec![17, 0, 1, 0, 0x5e, 2, 0, 0];
    rest.extend_from_slice(&udp(HOST, NET, 1, 2, &[0; 4]));
    let mut f = eth(MAC0, HOST_MAC, 0x86dd, &ipv6(HOST, NET, 0, 64, &rest));
    let mut o = Recorder::default();
    run(&mut r, LAN, &mut f, 0, &mut o);
    assert!(o.sent.is_empty());
    // a well-formed chain goes through
    let mut rest = vec![17, 0, 1, 4, 0, 0, 0, 0];
    rest.extend_from_slice(&udp(HOST, NET, 1, 2, &[0; 4]));
    let p = ipv6(HOST, NET, 60, 64, &rest);
    let mut f = eth(MAC0, HOST_MAC, 0x86dd, &p);
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Forwarded);
}

/// A hook that records what it sees and answers as told.
#[derive(Default)]
struct Hook6 {
    input: Vec<Option<Upper>>,
    forward: Vec<(Upper, Option<IfId>, u8)>,
    verdict: Option<HookVerdict>,
}

impl L4Hook for Hook6 {
    fn prerouting(&mut self, _: &mut [u8], _: &Meta) -> HookVerdict {
        HookVerdict::Accept
    }
    fn postrouting(&mut self, _: &mut [u8], _: &Meta) -> HookVerdict {
        HookVerdict::Accept
    }
    fn input6(&mut self, _: &[u8], upper: Option<&Upper>, _: &Meta) -> HookVerdict {
        self.input.push(upper.copied());
        self.verdict.unwrap_or(HookVerdict::Accept)
    }
    fn forward6(&mut self, ip: &mut [u8], upper: &Upper, meta: &Meta) -> HookVerdict {
        self.forward.push((*upper, meta.output, ip[7]));
        self.verdict.unwrap_or(HookVerdict::Accept)
    }
}

#[test]
fn the_router_s_own_packets_go_through_the_input_hook_to_the_local_stack() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let mut h = Hook6::default();
    for dst in ["2001:db8:1::1", "2001:db8:ff::2", "ff02::1", "fe80::1"] {
        let mut f = udp_frame(MAC0, HOST, dst, 64, 10);
        assert_eq!(
            r.input(LAN, &mut f, RxMeta::default(), 0, &mut h, &mut o),
            Disposition::Local,
            "{dst}"
        );
    }
    assert_eq!(h.input.len(), 4);
    assert_eq!(h.input[0].unwrap().proto, 17);
    assert!(h.forward.is_empty());
    h.verdict = Some(HookVerdict::Drop(DropReason::Filtered));
    let mut f = udp_frame(MAC0, HOST, "2001:db8:1::1", 64, 10);
    assert_eq!(
        r.input(LAN, &mut f, RxMeta::default(), 0, &mut h, &mut o),
        Disposition::Dropped(DropReason::Filtered)
    );
    assert!(o.sent.is_empty());
}

#[test]
fn the_forward_hook_sees_the_routed_packet_and_a_reject_answers_port_unreachable() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let mut h = Hook6::default();
    let mut f = udp_frame(MAC0, HOST, NET, 64, 10);
    assert_eq!(
        r.input(LAN, &mut f, RxMeta::default(), 0, &mut h, &mut o),
        Disposition::Forwarded
    );
    let (u, out, hop) = h.forward[0];
    assert_eq!((u.proto, u.offset, out, hop), (17, 40, Some(WAN), 63));
    h.verdict = Some(HookVerdict::Reject);
    let c = udp_frame(MAC0, HOST, NET, 64, 10);
    let mut f = c.clone();
    let mut o = Recorder::default();
    assert_eq!(
        r.input(LAN, &mut f, RxMeta::default(), 0, &mut h, &mut o),
        Disposition::Dropped(DropReason::Filtered)
    );
    let sent = icmp6_sent(&o);
    assert_eq!(sent.len(), 1);
    let (ifc, _, t, code, ip) = &sent[0];
    assert_eq!((*ifc, *t, *code), (LAN, 1, 4));
    let mut quoted = c[14..].to_vec();
    quoted[7] = 63;
    assert_eq!(
        &ip[48..],
        &quoted[..],
        "quoted with its hop limit decremented, as Linux's forward hook sees it"
    );
    // TCP gets a reset, straight back to the sender
    let seg = tcp(HOST, NET, 40000, 443, 77, SYN, &[], &[]);
    let mut f = eth(MAC0, HOST_MAC, 0x86dd, &ipv6(HOST, NET, 6, 64, &seg));
    let mut o = Recorder::default();
    assert_eq!(
        r.input(LAN, &mut f, RxMeta::default(), 0, &mut h, &mut o),
        Disposition::Dropped(DropReason::Filtered)
    );
    assert_eq!(o.sent.len(), 1);
    let (ifc, rst, _) = &o.sent[0];
    assert_eq!(
        (*ifc, &rst[..6], &rst[6..12]),
        (LAN, &HOST_MAC[..], &MAC0[..])
    );
    assert_eq!(rst[14 + 6], 6);
    assert_eq!(rst[54 + 13], RST | ACK);
    assert_eq!(r.stats().resets, 1);
    // the input chain's reject of a packet for the router answers too
    let mut f = udp_frame(MAC0, HOST, "2001:db8:1::1", 64, 10);
    let mut o = Recorder::default();
    assert_eq!(
        r.input(LAN, &mut f, RxMeta::default(), 0, &mut h, &mut o),
        Disposition::Dropped(DropReason::Filtered)
    );
    assert_eq!(icmp6_sent(&o).len(), 1);
    // but never to a multicast destination
    let mut f = udp_frame(MAC0, HOST, "ff02::1", 64, 10);
    let mut o = Recorder::default();
    r.input(LAN, &mut f, RxMeta::default(), 0, &mut h, &mut o);
    assert!(o.sent.is_empty());
}

#[test]
fn mutated_ipv6_frames_never_panic() {
    let mut r = learnt();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut rest = vec![43, 0, 1, 4, 0, 0, 0, 0]; // HBH
    rest.extend_from_slice(&[44, 0, 0, 0, 0, 0, 0, 0]); // routing
    rest.extend_from_slice(&[58, 0, 0, 1, 0, 0, 0, 7]); // fragment
    rest.extend_from_slice(&icmp6(HOST, NET, 128, 0, &[0, 1, 0, 1, 9, 9]));
    let base = eth(MAC0, HOST_MAC, 0x86dd, &ipv6(HOST, NET, 0, 64, &rest));
    for i in 0..20_000 {
        let mut f = base.clone();
        for _ in 0..1 + rng.below(4) {
            let at = 14 + rng.below(f.len() - 14);
            f[at] = rng.next() as u8;
        }
        if i % 7 == 0 {
            let n = 14 + rng.below(f.len() - 14);
            f.truncate(n);
        }
        let mut o = Recorder::default();
        let _ = run(&mut r, LAN, &mut f, i, &mut o);
    }
}

#[test]
fn an_ipv6_gso_packet_leaves_cut_to_the_mtu_or_gets_packet_too_big() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    let seg = tcp(HOST, NET, 40000, 443, 1, ACK | PSH, &[], &payload);
    let mut f = eth(MAC0, HOST_MAC, 0x86dd, &ipv6(HOST, NET, 6, 64, &seg));
    let rx = RxMeta::gso(1440);
    assert_eq!(
        r.input(LAN, &mut f, rx, 0, &mut NoHook, &mut o),
        Disposition::Forwarded
    );
    assert_eq!(o.sent.len(), 3);
    let mut data = Vec::new();
    for (ifc, s, tx) in &o.sent {
        assert_eq!((*ifc, tx.gso_size, tx.csum_partial), (WAN, None, false));
        let ip = &s[14..];
        let h = crate::ipv6::parse(ip).unwrap();
        assert!(h.total_len <= 1500 && h.hop_limit == 63);
        assert!(crate::ipv6::l4_checksum_ok(h.src, h.dst, 6, &ip[40..]));
        data.extend_from_slice(&ip[60..]);
    }
    assert_eq!(data, payload);
    // segments of 1300 bytes do not fit the DMZ's 1280
    let seg = tcp(HOST, DMZ_HOST, 40000, 443, 1, ACK, &[], &payload);
    let mut f = eth(MAC0, HOST_MAC, 0x86dd, &ipv6(HOST, DMZ_HOST, 6, 64, &seg));
    let rx = RxMeta::gso(1240);
    let mut o = Recorder::default();
    assert_eq!(
        r.input(LAN, &mut f, rx, 0, &mut NoHook, &mut o),
        Disposition::Dropped(DropReason::TooBig)
    );
    let sent = icmp6_sent(&o);
    assert_eq!(
        (sent[0].2, &sent[0].4[44..48]),
        (2, &1280u32.to_be_bytes()[..])
    );
}

#[test]
fn an_ipv6_gso_packet_leaves_whole_to_a_link_that_takes_tcpv6_gso() {
    let mut r = setup_gso(true);
    learn_all(&mut r);
    let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    let seg = tcp(HOST, NET, 40000, 443, 1, ACK | PSH, &[], &payload);
    let frame = eth(MAC0, HOST_MAC, 0x86dd, &ipv6(HOST, NET, 6, 64, &seg));
    let mut f = frame.clone();
    let rx = RxMeta::gso(1440);
    let mut o = Recorder::default();
    assert_eq!(
        r.input(LAN, &mut f, rx, 0, &mut NoHook, &mut o),
        Disposition::Forwarded
    );
    assert_eq!(o.sent.len(), 1, "not cut");
    let (ifc, s, tx) = &o.sent[0];
    let h = crate::ipv6::parse(&s[14..]).unwrap();
    assert_eq!((*ifc, &s[0..6], h.hop_limit), (WAN, &GW_MAC[..], 63));
    let whole = TxMeta::gso(1440);
    assert_eq!(
        (*tx, s.len(), &s[14 + 60..]),
        (whole, frame.len(), &payload[..])
    );
}

#[test]
fn a_next_hop_not_confirmed_for_30_s_is_probed_by_unicast_as_the_packet_goes() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let mut f = udp_frame(MAC0, HOST, NET, 64, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 31_000, &mut o),
        Disposition::Forwarded
    );
    assert_eq!(o.sent.len(), 2);
    let (ifc, ns, _) = &o.sent[0];
    assert_eq!((*ifc, &ns[..6], ns[14 + 40]), (WAN, &GW_MAC[..], 135));
    assert_eq!(
        crate::ipv6::dst(&ns[14..]),
        a(GW),
        "unicast to the neighbour"
    );
    assert_eq!(&o.sent[1].1[..6], &GW_MAC);
}

#[test]
fn an_advertised_ipv6_mtu_on_the_wan_gets_packet_too_big_for_larger_packets() {
    let mut r = learnt();
    // the upstream router's advertisements say 1400 (a PPPoE or tunnel link)
    r.set_mtu6(WAN, Some(1400)).unwrap();
    assert_eq!(r.interfaces().get(WAN).unwrap().mtu6(), 1400);
    assert_eq!(
        r.interfaces().get(WAN).unwrap().mtu(),
        1500,
        "IPv4 keeps the link's"
    );
    let mut o = Recorder::default();
    let mut f = udp_frame(MAC0, HOST, NET, 64, 1401 - 48);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::TooBig)
    );
    let sent = icmp6_sent(&o);
    assert_eq!(sent.len(), 1);
    let ip = &sent[0].4;
    assert_eq!((sent[0].0, ip[40], ip[41]), (LAN, 2, 0));
    assert_eq!(&ip[44..48], &1400u32.to_be_bytes(), "the advertised MTU");
    // exactly 1400 goes through
    let mut o = Recorder::default();
    let mut f = udp_frame(MAC0, HOST, NET, 64, 1400 - 48);
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Forwarded);
    // an MTU over the link's is the link's; under 1280 is refused, the old kept
    r.set_mtu6(WAN, Some(9000)).unwrap();
    assert_eq!(r.interfaces().get(WAN).unwrap().mtu6(), 1500);
    assert!(r.set_mtu6(WAN, Some(1000)).is_err());
    assert_eq!(r.interfaces().get(WAN).unwrap().mtu6(), 1500);
    // back to the link's: 1500 goes
    r.set_mtu6(WAN, None).unwrap();
    let mut o = Recorder::default();
    let mut f = udp_frame(MAC0, HOST, NET, 64, 1500 - 48);
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Forwarded);
}

#[test]
fn an_error_to_a_source_not_resolved_yet_waits_for_its_advertisement() {
    // the WAN's router and the DMZ host are known, the LAN host is not
    let mut r = setup();
    learn(&mut r, WAN, GW, GW_MAC);
    let mut o = Recorder::default();
    let mut f = udp_frame(MAC0, HOST, NET, 1, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::TtlExpired)
    );
    // the router solicits the host; the time-exceeded waits
    assert!(
        icmp6_sent(&o).iter().all(|e| e.2 == 135),
        "only a solicitation"
    );
    assert_eq!(r.ndp.queued(), 1);
    // the host answers: the error goes to it at once
    let mut o = Recorder::default();
    let mut na = na_frame(MAC0, HOST, HOST_MAC);
    run(&mut r, LAN, &mut na, 10, &mut o);
    let errs: Vec<_> = icmp6_sent(&o).into_iter().filter(|e| e.2 == 3).collect();
    assert_eq!(errs.len(), 1, "{:?}", o.sent.len());
    let (ifc, mac, _, code, ip) = &errs[0];
    assert_eq!((*ifc, *mac, *code), (LAN, HOST_MAC, 0));
    assert_eq!(crate::ipv6::dst(ip), a(HOST));
    assert_eq!(r.ndp.queued(), 0);
    // one that never answers: the error is dropped with the entry, and no error
    // about the error comes of it
    let mut r = setup();
    learn(&mut r, WAN, GW, GW_MAC);
    let mut o = Recorder::default();
    let mut f = udp_frame(MAC0, HOST, NET, 1, 10);
    run(&mut r, LAN, &mut f, 0, &mut o);
    for t in [1000, 2000, 3000, 4000] {
        r.poll(t, &mut o);
    }
    assert_eq!(r.ndp.queued(), 0);
    assert!(icmp6_sent(&o).iter().all(|e| e.2 == 135));
}

/// A fragment of datagram `id` from the LAN host to [`NET`]: the fragment header
/// (`offset` in 8-byte units, `more`) and `payload`.
fn frag_frame(id: u32, offset: u16, more: bool, payload: &[u8]) -> Vec<u8> {
    let mut rest = vec![17, 0];
    rest.extend_from_slice(&((offset << 3) | u16::from(more)).to_be_bytes());
    rest.extend_from_slice(&id.to_be_bytes());
    rest.extend_from_slice(payload);
    eth(MAC0, HOST_MAC, 0x86dd, &ipv6(HOST, NET, 44, 64, &rest))
}

/// The fragment offset (8-byte units) and identification of a sent frame.
fn frag_of(f: &[u8]) -> (u16, u32) {
    let h = 14 + 40;
    (
        u16::from_be_bytes([f[h + 2], f[h + 3]]) >> 3,
        u32::from_be_bytes(f[h + 4..h + 8].try_into().unwrap()),
    )
}

#[test]
fn a_later_fragment_waits_for_its_first_and_a_lone_one_is_dropped_after_60_s() {
    let mut r = learnt();
    let mut h = Hook6::default();
    let mut o = Recorder::default();
    let first_payload = udp(HOST, NET, 33000, 53, &[7; 40])[..24].to_vec();
    // the later fragment first (out of order): held, nothing sent, nothing judged
    let mut later = frag_frame(9, 3, false, &[1; 24]);
    assert_eq!(
        r.input(LAN, &mut later, RxMeta::default(), 0, &mut h, &mut o),
        Disposition::Held
    );
    assert!(o.sent.is_empty());
    assert!(h.forward.is_empty());
    // its first: both go out on the WAN, the first then the held one, each judged
    // by the forward chain
    let mut first = frag_frame(9, 0, true, &first_payload);
    assert_eq!(
        r.input(LAN, &mut first, RxMeta::default(), 1_000, &mut h, &mut o),
        Disposition::Forwarded
    );
    let sent: Vec<(IfId, (u16, u32))> = o.sent.iter().map(|(i, f, _)| (*i, frag_of(f))).collect();
    assert_eq!(sent, [(WAN, (0, 9)), (WAN, (3, 9))]);
    assert_eq!(o.sent[1].1[14 + 7], 63, "hop limit decremented");
    assert_eq!(h.forward.len(), 2);
    assert_eq!(r.frag_hold6_stats().released, 1);
    assert_eq!(r.stats().ipv6_forwarded, 2);
    // a later fragment of that datagram now goes straight on
    let mut o = Recorder::default();
    let mut more = frag_frame(9, 6, false, &[2; 8]);
    assert_eq!(
        r.input(LAN, &mut more, RxMeta::default(), 2_000, &mut h, &mut o),
        Disposition::Forwarded
    );
    assert_eq!(o.sent.len(), 1);
    // a lone later fragment: held, then dropped when it has waited 60 s, with no
    // ICMPv6 error (its first never came: RFC 8200 §4.5)
    let mut lone = frag_frame(10, 3, false, &[1; 24]);
    let mut o = Recorder::default();
    assert_eq!(
        r.input(LAN, &mut lone, RxMeta::default(), 3_000, &mut h, &mut o),
        Disposition::Held
    );
    r.poll(62_999, &mut o);
    assert_eq!(r.frag_hold6_stats().timeouts, 0);
    r.poll(63_000, &mut o);
    assert_eq!(r.frag_hold6_stats().timeouts, 1);
    assert!(o.sent.iter().all(|(_, f, _)| f[14 + 6] != 58 || f[54] != 3));
    let mut first = frag_frame(10, 0, true, &first_payload);
    let mut o = Recorder::default();
    assert_eq!(
        r.input(LAN, &mut first, RxMeta::default(), 64_000, &mut h, &mut o),
        Disposition::Forwarded
    );
    let frags: Vec<_> = o.sent.iter().filter(|(_, f, _)| f[14 + 6] == 44).collect();
    assert_eq!(frags.len(), 1, "the first alone: its later one is gone");
    // a first fragment the forward chain drops opens nothing: its later ones wait
    h.verdict = Some(HookVerdict::Drop(DropReason::Filtered));
    let mut first = frag_frame(11, 0, true, &first_payload);
    let mut o = Recorder::default();
    assert_eq!(
        r.input(LAN, &mut first, RxMeta::default(), 65_000, &mut h, &mut o),
        Disposition::Dropped(DropReason::Filtered)
    );
    let mut later = frag_frame(11, 3, false, &[1; 24]);
    assert_eq!(
        r.input(LAN, &mut later, RxMeta::default(), 65_001, &mut h, &mut o),
        Disposition::Held
    );
    assert!(o.sent.is_empty());
    assert_eq!(r.frag_hold6_stats().held, 3);
}
