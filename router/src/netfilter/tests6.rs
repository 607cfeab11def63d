//! IPv6 through [`Netfilter`]'s hooks: conntrack (no NAT) and firewall4's default
//! IPv6 rules, as fwconfig compiles them.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::conntrack::TcpState;
use crate::exthdr;
use crate::firewall::ratelimit::Limit;
use crate::firewall::ruleset::{
    Defaults, Except, Forwarding, IcmpMatch, Net6, Rule, RuleFamily, Ruleset, Verdict, ZoneSel,
};
use crate::flow::tcp_flag::{ACK, SYN};
use crate::testutil::{self, icmp6, ipv6, meta, zone};

const LAN: IfId = IfId(0);
const WAN: IfId = IfId(1);
const HOST: &str = "2001:db8:1::100";
const HOST2: &str = "2001:db8:1::101";
const FAR: &str = "2001:db8:99::5";
const HOP: &str = "2001:db8:ff::1";

fn rule(name: &str, dest: Option<ZoneSel>, protos: Vec<u8>, family: RuleFamily) -> Rule {
    Rule {
        name: name.into(),
        src: ZoneSel::Zone(1),
        dest,
        protos,
        src_ip: vec![],
        src_mac: vec![],
        dest_ip: vec![],
        src_port: vec![],
        dest_port: vec![],
        except: Except::default(),
        time: None,
        icmp_type: vec![],
        family,
        src_ip6: vec![],
        dest_ip6: vec![],
        icmp6_type: vec![],
        target: Verdict::Accept,
        limit: None,
    }
}

fn types(t: &[u8]) -> Vec<IcmpMatch> {
    t.iter()
        .map(|&ty| IcmpMatch {
            ty,
            code_min: 0,
            code_max: 255,
        })
        .collect()
}

/// OpenWrt's default zones with firewall4's IPv6 rules (and IPv4's Allow-Ping).
fn ruleset() -> Ruleset {
    let mut dhcp6 = rule("Allow-DHCPv6", None, vec![17], RuleFamily::Ipv6);
    dhcp6.dest_port = vec![crate::firewall::ruleset::PortRange { min: 546, max: 546 }];
    let mut fe80 = [0u8; 16];
    fe80[..2].copy_from_slice(&[0xfe, 0x80]);
    dhcp6.dest_ip6 = vec![Net6 {
        addr: fe80,
        prefix_len: 10,
    }];
    let mut ping = rule("Allow-Ping", None, vec![1], RuleFamily::Ipv4);
    ping.icmp_type = types(&[8]);
    let mut input = rule("Allow-ICMPv6-Input", None, vec![1, 58], RuleFamily::Ipv6);
    input.icmp6_type = types(&[128, 129, 1, 2, 3, 4, 133, 135, 134, 136]);
    input.limit = Some(Limit::per_second(1000, 5));
    let mut fwd = rule(
        "Allow-ICMPv6-Forward",
        Some(ZoneSel::Any),
        vec![1, 58],
        RuleFamily::Ipv6,
    );
    fwd.icmp6_type = types(&[128, 129, 1, 2, 3, 4]);
    fwd.limit = Some(Limit::per_second(1000, 5));
    Ruleset {
        defaults: Defaults {
            input: Verdict::Reject,
            output: Verdict::Accept,
            forward: Verdict::Reject,
            syn_flood: None,
            drop_invalid: false,
        },
        zones: vec![
            zone("lan", LAN, Verdict::Accept, Verdict::Accept),
            zone("wan", WAN, Verdict::Reject, Verdict::Drop),
        ],
        forwardings: vec![Forwarding { src: 0, dest: 1 }],
        rules: vec![dhcp6, ping, input, fwd],
        redirects: vec![],
        iface_names: vec![(LAN, "eth0".into()), (WAN, "eth1".into())],
    }
}

fn nf() -> Netfilter {
    let mut n = Netfilter::new(Config {
        hash_seed: 0x5eed,
        ..Config::default()
    });
    n.set_firewall(Some(Firewall::new(ruleset()).unwrap()));
    n
}

/// [`nf`] after HOST's DNS query (UDP 5353 to FAR:53) went out at time 0.
fn nf_after_dns_query() -> Netfilter {
    let mut n = nf();
    assert_eq!(
        fwd(&mut n, LAN, &udp(HOST, FAR, 5353, 53), 0),
        HookVerdict::Accept
    );
    n
}

/// The forward hook on `p` from `input` to the other interface.
fn fwd(n: &mut Netfilter, input: IfId, p: &[u8], now: Millis) -> HookVerdict {
    let mut p = p.to_vec();
    let u = exthdr::walk(&p, p[6]).unwrap();
    let out = if input == LAN { WAN } else { LAN };
    n.forward6(&mut p, &u, &meta(input, Some(out), now))
}

fn tcp(src: &str, dst: &str, sp: u16, dp: u16, seq: u32, flags: u8) -> Vec<u8> {
    ipv6(
        src,
        dst,
        6,
        64,
        &testutil::tcp(src, dst, sp, dp, seq, flags, &[], &[]),
    )
}

/// [`tcp`] with its acknowledgement number.
fn tcp_ack(src: &str, dst: &str, sp: u16, dp: u16, seq: u32, ack: u32, flags: u8) -> Vec<u8> {
    let mut t = testutil::tcp(src, dst, sp, dp, seq, flags, &[], &[]);
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[16..18].copy_from_slice(&[0, 0]);
    let s = crate::ipv6::pseudo_header_sum(src.parse().unwrap(), dst.parse().unwrap(), 6, t.len());
    let c = !crate::checksum::fold(crate::checksum::sum(s, &t));
    t[16..18].copy_from_slice(&c.to_be_bytes());
    ipv6(src, dst, 6, 64, &t)
}

fn udp(src: &str, dst: &str, sp: u16, dp: u16) -> Vec<u8> {
    ipv6(src, dst, 17, 64, &testutil::udp(src, dst, sp, dp, b"hello"))
}

fn icmp(src: &str, dst: &str, ty: u8, body: &[u8]) -> Vec<u8> {
    ipv6(src, dst, 58, 64, &icmp6(src, dst, ty, 0, body))
}

/// The defaults' forward policy (REJECT) for what no zone or rule accepts from the WAN.
const REFUSED: HookVerdict = HookVerdict::Reject;

#[test]
fn a_tcp_flow_from_the_lan_is_tracked_and_its_replies_are_established() {
    let mut n = nf();
    assert_eq!(
        fwd(&mut n, WAN, &tcp(FAR, HOST, 443, 5000, 0x2000_0000, SYN), 0),
        REFUSED
    );
    assert_eq!(n.count6(), 0, "refused flows are not tracked");
    let syn = tcp(HOST, FAR, 5000, 443, 0x1000_0000, SYN);
    assert_eq!(fwd(&mut n, LAN, &syn, 0), HookVerdict::Accept);
    assert_eq!(n.count6(), 1);
    let synack = tcp_ack(FAR, HOST, 443, 5000, 0x2000_0000, 0x1000_0001, SYN | ACK);
    assert_eq!(fwd(&mut n, WAN, &synack, 1), HookVerdict::Accept);
    let ack = tcp_ack(HOST, FAR, 5000, 443, 0x1000_0001, 0x2000_0001, ACK);
    assert_eq!(fwd(&mut n, LAN, &ack, 1), HookVerdict::Accept);
    assert_eq!(n.stats6().found, 2);
    let e = n.ct6.lookup_view(&crate::flow::Tuple6 {
        src: HOST.parse::<core::net::Ipv6Addr>().unwrap().octets(),
        dst: FAR.parse::<core::net::Ipv6Addr>().unwrap().octets(),
        sport: 5000,
        dport: 443,
        proto: crate::flow::Proto::Tcp,
    });
    assert_eq!(e.unwrap().tcp_state(), Some(TcpState::Established));
    // a segment far outside the window is INVALID: judged, and from the WAN dropped
    let stray = tcp_ack(FAR, HOST, 443, 5000, 0x7000_0000, 0x1000_0001, ACK);
    assert_eq!(fwd(&mut n, WAN, &stray, 2), REFUSED);
    assert_eq!(n.stats6().out_of_window, 1);
    // a bare ACK for no flow from the WAN
    assert_eq!(
        fwd(&mut n, WAN, &tcp(FAR, HOST2, 443, 5000, 1, ACK), 2),
        REFUSED
    );
    // the IPv4 table saw none of it
    assert_eq!(n.count(), 0);
    let mut shown = Vec::new();
    n.for_each6(3, |e| shown.push(alloc::format!("{e}")));
    assert!(shown[0].contains("src=2001:db8:1::100 dst=2001:db8:99::5 sport=5000 dport=443"));
}

#[test]
fn udp_and_echo_replies_come_back_and_nothing_else_does() {
    let mut n = nf_after_dns_query();
    assert_eq!(
        fwd(&mut n, WAN, &udp(FAR, HOST, 53, 5353), 1),
        HookVerdict::Accept
    );
    assert_eq!(fwd(&mut n, WAN, &udp(FAR, HOST, 53, 5354), 1), REFUSED);
    let req = icmp(HOST, FAR, 128, &[0, 7, 0, 1]);
    assert_eq!(fwd(&mut n, LAN, &req, 0), HookVerdict::Accept);
    assert_eq!(n.count6(), 2);
    // the reply is established; a request from the WAN is Allow-ICMPv6-Forward's
    let rep = icmp(FAR, HOST, 129, &[0, 7, 0, 1]);
    assert_eq!(fwd(&mut n, WAN, &rep, 1), HookVerdict::Accept);
    assert_eq!(n.stats6().found, 2);
    let fw = n.firewall().unwrap();
    assert_eq!(fw.rule_counter(3).unwrap().packets, 0);
    let req = icmp(FAR, HOST, 128, &[0, 8, 0, 1]);
    assert_eq!(fwd(&mut n, WAN, &req, 1), HookVerdict::Accept);
    assert_eq!(n.firewall().unwrap().rule_counter(3).unwrap().packets, 1);
    // router advertisements are not forwarded from the WAN (not in the rule)
    let ra = icmp(FAR, HOST, 134, &[0; 12]);
    assert_eq!(fwd(&mut n, WAN, &ra, 1), REFUSED);
}

#[test]
fn an_icmpv6_error_about_a_flow_is_related_when_it_goes_to_the_flow_s_end() {
    let mut n = nf();
    let out = udp(HOST, FAR, 5353, 53);
    assert_eq!(fwd(&mut n, LAN, &out, 0), HookVerdict::Accept);
    let body = |quoted: &[u8]| [&[0u8; 4][..], quoted].concat();
    // destination unreachable from a router on the way, to the host: RELATED
    let err = icmp(HOP, HOST, 1, &body(&out));
    assert_eq!(fwd(&mut n, WAN, &err, 1), HookVerdict::Accept);
    assert_eq!(n.stats6().icmp_related, 1);
    // the same, to another host than the flow's end: INVALID
    let err = icmp(HOP, HOST2, 1, &body(&out));
    assert_eq!(
        fwd(&mut n, WAN, &err, 1),
        HookVerdict::Drop(DropReason::Invalid)
    );
    assert_eq!(n.stats6().icmp_misdirected, 1);
    // with a bad checksum: INVALID
    let mut err = icmp(HOP, HOST, 1, &body(&out));
    err[42] ^= 0xff;
    assert_eq!(
        fwd(&mut n, WAN, &err, 1),
        HookVerdict::Drop(DropReason::Invalid)
    );
    assert_eq!(n.stats6().icmp_bad_checksum, 1);
}

#[test]
fn rules_apply_to_their_family_only() {
    // a rule accepting all UDP from the WAN, IPv4 only: IPv6 UDP stays dropped
    let mut rs = ruleset();
    let mut r = rule("udp4", Some(ZoneSel::Any), vec![17], RuleFamily::Ipv4);
    r.dest_port = vec![];
    rs.rules.insert(0, r);
    let mut n = Netfilter::new(Config::default());
    n.set_firewall(Some(Firewall::new(rs.clone()).unwrap()));
    assert_eq!(fwd(&mut n, WAN, &udp(FAR, HOST, 1, 2), 0), REFUSED);
    // the same rule for any family accepts it
    rs.rules[0].family = RuleFamily::Any;
    n.set_firewall(Some(Firewall::new(rs).unwrap()));
    assert_eq!(
        fwd(&mut n, WAN, &udp(FAR, HOST, 1, 2), 0),
        HookVerdict::Accept
    );
}

#[test]
fn the_input_chain_takes_dhcpv6_to_a_link_local_address_from_the_wan() {
    let mut n = nf();
    let input = |n: &mut Netfilter, p: &[u8]| {
        let u = exthdr::walk(p, p[6]).unwrap();
        n.input6(p, Some(&u), &meta(WAN, None, 0))
    };
    let reply = udp("fe80::1", "fe80::2", 547, 546);
    assert_eq!(input(&mut n, &reply), HookVerdict::Accept);
    // to a global address: the zone's REJECT
    let stray = udp("fe80::1", "2001:db8:ff::2", 547, 546);
    assert_eq!(input(&mut n, &stray), HookVerdict::Reject);
    // neighbour discovery from the WAN: Allow-ICMPv6-Input
    let ns = ipv6(
        "fe80::1",
        "ff02::1:ff00:2",
        58,
        255,
        &icmp6("fe80::1", "ff02::1:ff00:2", 135, 0, &[0; 20]),
    );
    assert_eq!(input(&mut n, &ns), HookVerdict::Accept);
    // not parsed by the core (not routing IPv6): the old all-or-nothing check
    assert_eq!(
        n.input6(&reply, None, &meta(WAN, None, 0)),
        HookVerdict::Drop(DropReason::Filtered)
    );
    assert_eq!(
        n.input6(&reply, None, &meta(LAN, None, 0)),
        HookVerdict::Accept
    );
}

#[test]
fn later_fragments_follow_their_accepted_first_fragment() {
    // a DNS query out, then a reply in two fragments
    let mut n = nf_after_dns_query();
    let reply = testutil::udp(FAR, HOST, 53, 5353, &[7; 1400]);
    let frag = |offset: u16, more: bool, id: u32, data: &[u8]| {
        let mut rest = vec![17, 0];
        rest.extend_from_slice(&((offset << 3) | u16::from(more)).to_be_bytes());
        rest.extend_from_slice(&id.to_be_bytes());
        rest.extend_from_slice(data);
        ipv6(FAR, HOST, 44, 64, &rest)
    };
    let first = frag(0, true, 0xabcd, &reply[..1200]);
    let second = frag(150, false, 0xabcd, &reply[1200..]);
    assert_eq!(fwd(&mut n, WAN, &first, 1), HookVerdict::Accept);
    assert_eq!(fwd(&mut n, WAN, &second, 2), HookVerdict::Accept);
    // a later fragment of a datagram nobody let in: the rules (REJECT from the WAN)
    let stray = frag(150, false, 0x1234, &reply[1200..]);
    assert_eq!(fwd(&mut n, WAN, &stray, 2), REFUSED);
    // nor once 60 s have passed
    assert_eq!(fwd(&mut n, WAN, &second, 60_001), REFUSED);
}

#[test]
fn mutated_ipv6_packets_never_panic_the_hooks() {
    let mut n = nf();
    let mut rng = crate::testutil::Rng(0x0bad_cafe_f00d_1234);
    let inner = udp(HOST, FAR, 5353, 53);
    let bases = [
        tcp_ack(HOST, FAR, 5000, 443, 0x1000_0000, 0, SYN),
        udp(HOST, FAR, 5353, 53),
        icmp(HOST, FAR, 128, &[0, 7, 0, 1]),
        icmp(HOP, HOST, 1, &[&[0u8; 4][..], &inner[..]].concat()),
    ];
    for i in 0..20_000u64 {
        let mut p = bases[rng.below(bases.len())].clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(p.len());
            p[at] = rng.next() as u8;
        }
        if i % 5 == 0 {
            let keep = 40 + rng.below(p.len() - 40);
            p.truncate(keep);
        }
        let Ok(u) = exthdr::walk(&p, p[6]) else {
            continue;
        };
        let input = if i % 2 == 0 { LAN } else { WAN };
        let out = if input == LAN { WAN } else { LAN };
        let _ = n.forward6(&mut p, &u, &meta(input, Some(out), i));
        let _ = n.input6(&p, Some(&u), &meta(input, None, i));
    }
    assert!(n.count6() <= 2048);
}
