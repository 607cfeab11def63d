//! Unit tests of the firewall's parts: the chains on a hand-built ruleset, the TCP
//! reset bytes, the ruleset check, the router's own flows, and seeded mutation.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::ruleset::*;
use super::*;
use crate::testutil::{self as tu, zone, Rng};
use alloc::vec;
use alloc::vec::Vec;

fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> Vec<u8> {
    tu::ipv4(src, dst, proto, 64, 1, false, &[], l4)
}

fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8, data: &[u8]) -> Vec<u8> {
    ipv4(
        src,
        dst,
        6,
        &tu::tcp(src, dst, sport, dport, 1000, flags, &[], data),
    )
}

fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    ipv4(src, dst, 17, &tu::udp(src, dst, sport, dport, data))
}

const LAN: IfId = IfId(0);
const WAN: IfId = IfId(1);
const DMZ: IfId = IfId(2);

fn rule(name: &str, src: ZoneSel, dest: Option<ZoneSel>, target: Verdict) -> Rule {
    Rule {
        name: name.into(),
        src,
        dest,
        protos: vec![],
        src_ip: vec![],
        src_mac: vec![],
        dest_ip: vec![],
        src_port: vec![],
        dest_port: vec![],
        icmp_type: vec![],
        family: Default::default(),
        src_ip6: vec![],
        dest_ip6: vec![],
        icmp6_type: vec![],
        target,
        limit: None,
        except: Except::default(),
        time: None,
    }
}

/// A rule from lan (zone 0) to wan (zone 1).
fn lan_to_wan(name: &str, target: Verdict) -> Rule {
    rule(name, ZoneSel::Zone(0), Some(ZoneSel::Zone(1)), target)
}

fn ruleset() -> Ruleset {
    Ruleset {
        defaults: Defaults {
            input: Verdict::Reject,
            output: Verdict::Accept,
            forward: Verdict::Drop,
            syn_flood: Some(Limit::per_second(1, 2)),
            drop_invalid: false,
        },
        zones: vec![
            zone("lan", LAN, Verdict::Accept, Verdict::Accept),
            zone("wan", WAN, Verdict::Reject, Verdict::Reject),
        ],
        forwardings: vec![Forwarding { src: 0, dest: 1 }],
        rules: vec![],
        redirects: vec![],
        iface_names: vec![(LAN, "eth0".into()), (WAN, "eth1".into())],
    }
}

fn pkt(ip: &[u8]) -> Packet {
    Packet::parse(ip).unwrap()
}

/// `fw`'s verdict on `p` opening a new flow from lan to wan at `now`.
fn new_lan_to_wan(fw: &mut Firewall, p: &Packet, now: Millis) -> Verdict {
    fw.forward(p, LAN, WAN, CtState::New, now)
}

const H: [u8; 4] = [192, 168, 1, 10];
const R: [u8; 4] = [10, 0, 0, 2];
const X: [u8; 4] = [8, 8, 8, 8];

#[test]
fn zone_forward_policy_covers_only_traffic_back_into_the_zone() {
    let mut rs = ruleset();
    rs.zones[1].ifaces.push(DMZ);
    let mut fw = Firewall::new(rs).unwrap();
    let p = pkt(&udp(X, H, 1, 2, b"x"));
    // wan -> lan: no forwarding, not the same zone: the defaults (DROP)
    assert_eq!(fw.forward(&p, WAN, LAN, CtState::New, 0), Verdict::Drop);
    // wan -> wan (eth1 -> eth2 of the same zone): the zone's forward policy
    assert_eq!(fw.forward(&p, WAN, DMZ, CtState::New, 0), Verdict::Reject);
    // lan -> wan: the forwarding
    assert_eq!(new_lan_to_wan(&mut fw, &p, 0), Verdict::Accept);
    // a DNATed flow from wan: `ct status dnat accept` only with a redirect from wan
    assert_eq!(fw.forward(&p, WAN, LAN, CtState::Dnat, 0), Verdict::Drop);
    // established: accepted whatever the zones
    let before = fw.stats().rule_evaluations;
    assert_eq!(
        fw.forward(&p, WAN, LAN, CtState::Established, 0),
        Verdict::Accept
    );
    assert_eq!(fw.stats().rule_evaluations, before);
    assert_eq!(fw.zone_counters(1).unwrap().forward.packets, 1);
    assert_eq!(fw.stats().default_forward.packets, 2);
}

/// Checks `fw`'s verdict on a new lan-to-wan flow from each frame source of `cases`
/// (`None`: the frame's source not known).
fn verdicts_by_src_mac(fw: &mut Firewall, cases: &[(Option<[u8; 6]>, Verdict)]) {
    let mut p = pkt(&udp(H, X, 40000, 443, b"x"));
    for &(mac, want) in cases {
        p.src_mac = mac;
        assert_eq!(new_lan_to_wan(fw, &p, 0), want, "{mac:02x?}");
    }
}

#[test]
fn a_src_mac_rule_matches_by_the_frames_source() {
    // OpenWrt's "block this device": a DROP rule from lan to wan with src_mac.
    let mut rs = ruleset();
    let mut r = lan_to_wan("kid-tablet", Verdict::Drop);
    r.src_mac = vec![[0x02, 0, 0, 0, 0, 0x42]];
    rs.rules = vec![r];
    let mut fw = Firewall::new(rs).unwrap();
    // a packet whose link source is not known never matches a src_mac rule
    verdicts_by_src_mac(
        &mut fw,
        &[
            (Some([0x02, 0, 0, 0, 0, 0x42]), Verdict::Drop),
            (Some([0x02, 0, 0, 0, 0, 0x43]), Verdict::Accept),
            (None, Verdict::Accept),
        ],
    );
    assert_eq!(fw.rule_counter(0).unwrap().packets, 1);
    // negated (`src_mac '!...'`, fw4's `ether saddr !=`): every device but that one
    let mut rs = ruleset();
    let mut r = lan_to_wan("only-the-admin", Verdict::Drop);
    r.except.src_mac = vec![[0x02, 0, 0, 0, 0, 0x01]];
    rs.rules = vec![r];
    let mut fw = Firewall::new(rs).unwrap();
    verdicts_by_src_mac(
        &mut fw,
        &[
            (Some([0x02, 0, 0, 0, 0, 0x01]), Verdict::Accept),
            (Some([0x02, 0, 0, 0, 0, 0x42]), Verdict::Drop),
            (None, Verdict::Accept),
        ],
    );
}

#[test]
fn a_time_rule_matches_only_in_its_hours_by_the_wall_clock() {
    // "no internet for the kids' tablet at night, on school days": DROP from lan to
    // wan 22:00-06:00, Monday to Friday (local time, UTC+2)
    use super::timematch::{DaySet, TimeMatch, WallClock};
    let mut rs = ruleset();
    let mut r = lan_to_wan("bedtime", Verdict::Drop);
    r.time = Some(TimeMatch {
        start_time: Some(22 * 3600),
        stop_time: Some(6 * 3600),
        weekdays: Some(DaySet {
            days: 0b1_1111,
            invert: false,
        }),
        ..TimeMatch::default()
    });
    rs.rules = vec![r.clone()];
    let mut fw = Firewall::new(rs.clone()).unwrap();
    let p = pkt(&udp(H, X, 40000, 443, b"x"));
    // the clock is unknown: a DROP rule with a time match fails closed
    assert_eq!(new_lan_to_wan(&mut fw, &p, 0), Verdict::Drop);
    // Monday 2025-06-02 00:00 UTC at our clock's 0; local time is UTC+2
    let monday = 1_748_822_400_i64;
    let clock = WallClock {
        unix_ms_at_zero: monday * 1000,
        utc_offset_secs: 7200,
    };
    fw.set_wall_clock(Some(clock));
    let at = |h: u64, m: u64| ((h * 60 + m) * 60) * 1000; // ms since Monday 00:00 UTC
                                                          // 12:00 local (10:00 UTC): allowed
    assert_eq!(new_lan_to_wan(&mut fw, &p, at(10, 0)), Verdict::Accept);
    // 22:30 local Monday (20:30 UTC): dropped; 05:59 local Tuesday too (06:00:00 is
    // the inclusive end; 06:01 is past it)
    assert_eq!(new_lan_to_wan(&mut fw, &p, at(20, 30)), Verdict::Drop);
    assert_eq!(new_lan_to_wan(&mut fw, &p, at(27, 59)), Verdict::Drop);
    assert_eq!(new_lan_to_wan(&mut fw, &p, at(28, 1)), Verdict::Accept);
    // Saturday 23:00 local: not a school day
    assert_eq!(
        new_lan_to_wan(&mut fw, &p, at(5 * 24 + 21, 0)),
        Verdict::Accept
    );
    // a reload keeps the clock
    fw.replace(rs).unwrap();
    assert_eq!(new_lan_to_wan(&mut fw, &p, at(10, 0)), Verdict::Accept);
    // an ACCEPT rule with a time match never matches while the clock is unknown
    r.target = Verdict::Accept;
    let mut rs = ruleset();
    rs.defaults.forward = Verdict::Drop;
    rs.forwardings.clear();
    rs.rules = vec![r];
    let mut fw = Firewall::new(rs).unwrap();
    assert_eq!(new_lan_to_wan(&mut fw, &p, at(20, 30)), Verdict::Drop);
    fw.set_wall_clock(Some(clock));
    assert_eq!(new_lan_to_wan(&mut fw, &p, at(20, 30)), Verdict::Accept);
}

#[test]
fn negated_matches_take_anything_but_their_list() {
    // "lan may reach the WAN only on the web ports": REJECT anything but 80/443,
    // except from the admin's host
    let mut rs = ruleset();
    let mut r = lan_to_wan("web-only", Verdict::Reject);
    r.except.dest_port = vec![
        PortRange { min: 80, max: 80 },
        PortRange { min: 443, max: 443 },
    ];
    r.except.src_ip = vec![Net4 {
        addr: [192, 168, 1, 2],
        prefix_len: 32,
    }];
    rs.rules = vec![r];
    let mut fw = Firewall::new(rs).unwrap();
    let v = |fw: &mut Firewall, src: [u8; 4], port: u16| {
        fw.forward(
            &pkt(&tcp(src, X, 40000, port, 0x02, b"")),
            LAN,
            WAN,
            CtState::New,
            0,
        )
    };
    assert_eq!(v(&mut fw, H, 443), Verdict::Accept);
    assert_eq!(v(&mut fw, H, 22), Verdict::Reject);
    assert_eq!(
        v(&mut fw, [192, 168, 1, 2], 22),
        Verdict::Accept,
        "the admin"
    );
    // a negated port match still needs ports: ICMP is not "a port but 80/443"
    let ping = pkt(&ipv4(H, X, 1, &[8, 0, 0, 0, 0, 1, 0, 1]));
    assert_eq!(new_lan_to_wan(&mut fw, &ping, 0), Verdict::Accept);
}

#[test]
fn global_rules_come_before_zone_rules_and_first_match_wins() {
    let mut rs = ruleset();
    let mut a = rule("zone-accept", ZoneSel::Zone(1), None, Verdict::Accept);
    a.protos = vec![17];
    let mut g = rule("global-drop", ZoneSel::Any, None, Verdict::Drop);
    g.dest_port = vec![PortRange { min: 53, max: 53 }];
    let mut b = rule("zone-reject", ZoneSel::Zone(1), None, Verdict::Reject);
    b.protos = vec![17];
    rs.rules = vec![a, g, b];
    let mut fw = Firewall::new(rs).unwrap();
    assert_eq!(
        fw.input(&pkt(&udp(X, R, 1, 53, b"")), WAN, CtState::New, 0),
        Verdict::Drop
    );
    assert_eq!(
        fw.input(&pkt(&udp(X, R, 1, 54, b"")), WAN, CtState::New, 0),
        Verdict::Accept
    );
    assert_eq!(fw.rule_counter(0).unwrap().packets, 1);
    assert_eq!(fw.rule_counter(1).unwrap().packets, 1);
    assert_eq!(fw.rule_counter(2).unwrap().packets, 0);
    // a rule's zone is not another zone's
    assert_eq!(
        fw.input(&pkt(&udp(H, R, 1, 54, b"")), LAN, CtState::New, 0),
        Verdict::Accept
    );
    assert_eq!(fw.rule_counter(0).unwrap().packets, 1);
    // an interface in no zone: the defaults
    assert_eq!(
        fw.input(&pkt(&udp(H, R, 1, 54, b"")), DMZ, CtState::New, 0),
        Verdict::Reject
    );
}

#[test]
fn syn_flood_limits_only_pure_syns_and_drop_invalid_drops() {
    let mut rs = ruleset();
    rs.defaults.drop_invalid = true;
    let mut fw = Firewall::new(rs).unwrap();
    let syn = pkt(&tcp(X, R, 1, 22, 0x02, b""));
    let synack = pkt(&tcp(X, R, 1, 22, 0x12, b""));
    let v: Vec<Verdict> = (0..4)
        .map(|_| fw.input(&syn, LAN, CtState::New, 0))
        .collect();
    assert_eq!(
        v,
        [
            Verdict::Accept,
            Verdict::Accept,
            Verdict::Drop,
            Verdict::Drop
        ]
    );
    assert_eq!(fw.input(&synack, LAN, CtState::New, 0), Verdict::Accept);
    assert_eq!(fw.input(&syn, LAN, CtState::New, 1000), Verdict::Accept);
    assert_eq!(fw.stats().syn_flood.packets, 2);
    assert_eq!(fw.input(&synack, LAN, CtState::Invalid, 0), Verdict::Drop);
    assert_eq!(
        fw.forward(&synack, LAN, WAN, CtState::Invalid, 0),
        Verdict::Drop
    );
    assert_eq!(fw.stats().invalid.packets, 2);
}

#[test]
fn non_ipv4_follows_the_zone_input_policy() {
    let fw = Firewall::new(ruleset()).unwrap();
    assert!(fw.allows_non_ipv4(LAN));
    assert!(!fw.allows_non_ipv4(WAN));
    assert!(!fw.allows_non_ipv4(DMZ), "no zone: defaults REJECT");
}

#[test]
fn the_ruleset_check_refuses_what_does_not_hold_together() {
    let mut rs = ruleset();
    rs.zones[1].ifaces.push(LAN);
    assert_eq!(
        Firewall::new(rs).err(),
        Some(RulesetError::IfaceInTwoZones(LAN))
    );
    let mut rs = ruleset();
    rs.rules
        .push(rule("bad", ZoneSel::Zone(7), None, Verdict::Accept));
    assert!(matches!(Firewall::new(rs).err(), Some(RulesetError::NoSuchZone(n)) if n == "bad"));
    let mut rs = ruleset();
    rs.forwardings.push(Forwarding { src: 0, dest: 9 });
    assert!(Firewall::new(rs).is_err());
    let mut rs = ruleset();
    rs.redirects.push(Redirect {
        name: "r".into(),
        src: 1,
        protos: vec![6],
        src_dport: PortRange { min: 10, max: 20 },
        src_dip: None,
        src_ip: vec![],
        dest: Some(0),
        dest_ip: H,
        dest_port: PortRange { min: 10, max: 15 },
        reflection: true,
        time: None,
    });
    assert_eq!(
        Firewall::new(rs.clone()).err(),
        Some(RulesetError::RedirectPortRange("r".into()))
    );
    // a failed replace keeps the running rules
    let mut fw = Firewall::new(ruleset()).unwrap();
    assert!(fw.replace(rs).is_err());
    assert_eq!(fw.ruleset(), &ruleset());
}

#[test]
fn redirects_become_dnat_rules_with_reflection_once_addresses_are_known() {
    let mut rs = ruleset();
    rs.redirects.push(Redirect {
        name: "web".into(),
        src: 1,
        protos: vec![6, 17],
        src_dport: PortRange {
            min: 8080,
            max: 8081,
        },
        src_dip: None,
        src_ip: vec![],
        dest: Some(0),
        dest_ip: H,
        dest_port: PortRange { min: 80, max: 81 },
        reflection: true,
        time: None,
    });
    let mut fw = Firewall::new(rs).unwrap();
    let d = fw.dnat_rules();
    assert_eq!(
        d.len(),
        2,
        "tcp and udp from wan; no reflection without addresses"
    );
    assert!(d
        .iter()
        .all(|r| r.input == WAN && r.dst.is_none() && r.snat.is_none()));
    fw.set_iface_addr(WAN, Some(R));
    fw.set_iface_addr(LAN, Some([192, 168, 1, 1]));
    let d = fw.dnat_rules();
    assert_eq!(d.len(), 4);
    let refl: Vec<_> = d.iter().filter(|r| r.input == LAN).collect();
    assert_eq!(refl.len(), 2);
    assert!(refl
        .iter()
        .all(|r| r.dst == Some(R) && r.snat == Some([192, 168, 1, 1]) && r.dport_max == 8081));
    // the wan zone now accepts DNATed flows
    let p = pkt(&tcp(X, H, 1, 80, 0x02, b""));
    assert_eq!(fw.forward(&p, WAN, LAN, CtState::Dnat, 0), Verdict::Accept);
    assert_eq!(fw.zone_counters(1).unwrap().dnat.packets, 1);
}

#[test]
fn a_reset_answers_per_rfc_793() {
    // SYN with 3 bytes of data and FIN: ACK = SEQ + 3 + SYN + FIN
    let seg = tcp(X, R, 4000, 22, 0x03, b"abc");
    let mut ip = seg.clone();
    ip[24..28].copy_from_slice(&1000u32.to_be_bytes());
    let s = reject::TcpSegment::read(&ip[..28], &ip).unwrap();
    assert_eq!((s.seq, s.payload_len, s.flags), (1000, 3, 0x03));
    let mut buf = [0u8; 64];
    let n = reject::build(&mut buf, &s, [2; 6], [4; 6], 9).unwrap();
    assert_eq!(n, 54);
    let f = &buf[..n];
    assert_eq!(
        (&f[0..6], &f[6..12], &f[12..14]),
        (&[4u8; 6][..], &[2u8; 6][..], &[8u8, 0][..])
    );
    assert_eq!(
        &f[14..34],
        &[0x45, 0, 0, 40, 0, 9, 0x40, 0, 64, 6, f[24], f[25], 10, 0, 0, 2, 8, 8, 8, 8]
    );
    assert_eq!(crate::checksum::checksum(&f[14..34]), 0);
    let t = &f[34..54];
    assert_eq!(&t[0..4], &[0, 22, 0x0f, 0xa0]);
    assert_eq!(&t[4..8], &[0, 0, 0, 0]);
    assert_eq!(&t[8..12], &1005u32.to_be_bytes());
    assert_eq!((t[12], t[13]), (0x50, 0x14));
    let ps = crate::ipv4::pseudo_header_sum(R.into(), X.into(), 6, 20);
    assert_eq!(crate::checksum::fold(crate::checksum::sum(ps, t)), 0xffff);
    // an ACK segment: SEQ = SEG.ACK, RST only
    let mut a = tcp(X, R, 4000, 22, 0x10, b"");
    a[28..32].copy_from_slice(&77u32.to_be_bytes());
    let s = reject::TcpSegment::read(&a[..28], &a).unwrap();
    reject::build(&mut buf, &s, [2; 6], [4; 6], 9).unwrap();
    assert_eq!(
        (&buf[38..42], &buf[42..46], buf[47]),
        (&77u32.to_be_bytes()[..], &[0u8; 4][..], 0x04)
    );
    // never a reset for a reset, nor into a short buffer
    let r = reject::TcpSegment::read(
        &tcp(X, R, 1, 2, 0x04, b"")[..28],
        &tcp(X, R, 1, 2, 0x04, b""),
    )
    .unwrap();
    assert_eq!(reject::build(&mut buf, &r, [2; 6], [4; 6], 1), None);
    assert_eq!(reject::build(&mut [0u8; 53], &s, [2; 6], [4; 6], 1), None);
    assert_eq!(
        reject::TcpSegment::read(&udp(X, R, 1, 2, b"")[..28], &udp(X, R, 1, 2, b"")),
        None
    );
}

#[test]
fn the_routers_own_flows_make_their_replies_established() {
    let mut fw = Firewall::new(ruleset()).unwrap();
    let out = udp(R, X, 50000, 53, b"q");
    let back = udp(X, R, 53, 50000, b"a");
    assert!(!fw.is_local_reply(&back, 0));
    fw.note_output(&out, 0);
    assert!(fw.is_local_reply(&back, 1000));
    assert!(!fw.is_local_reply(&udp(X, R, 53, 50001, b"a"), 1000));
    assert!(
        !fw.is_local_reply(&back, 4 * 60 * 1000),
        "expired after 3 minutes"
    );
    // a reload keeps them
    fw.note_output(&out, 0);
    fw.replace(ruleset()).unwrap();
    assert!(fw.is_local_reply(&back, 1000));
}

#[test]
fn a_ping_flood_does_not_push_the_routers_dns_flow_out() {
    let mut fw = Firewall::new(ruleset()).unwrap();
    let query = udp(R, X, 50000, 53, b"q");
    let answer = udp(X, R, 53, 50000, b"a");
    fw.note_output(&query, 0);
    // the router answers 20,000 pings from 5,000 hosts
    for i in 0..20_000u32 {
        let host = [100, 64, (i >> 8) as u8 % 20, i as u8];
        let mut reply = ipv4(R, host, 1, &[0, 0, 0, 0, (i >> 8) as u8, i as u8, 0, 1]);
        let c = crate::checksum::checksum(&reply[20..]);
        reply[22..24].copy_from_slice(&c.to_be_bytes());
        fw.note_output(&reply, 10);
    }
    assert!(
        fw.is_local_reply(&answer, 20),
        "the DNS answer is still expected"
    );
    // and other flows of the router's own share buckets without losing each other
    for p in 0..2_000u16 {
        fw.note_output(&udp(R, X, 40000 + p, 123, b"n"), 30);
    }
    let kept = (0..2_000u16)
        .filter(|p| fw.is_local_reply(&udp(X, R, 123, 40000 + p, b"a"), 40))
        .count();
    assert!(kept >= 900, "{kept} of 2,000 kept in 1,024 slots");
}

#[test]
fn a_flood_of_the_routers_answers_and_resets_does_not_push_its_own_flows_out() {
    // The router's DNS forwarder asks upstream from one of its own ports, and its DHCP
    // client renews; then LAN hosts make it send 20,000 DNS answers (from port 53 to
    // their ports), 20,000 resets (probing closed ports, its own range too) and
    // 20,000 echo replies, all noted after the query and so expiring later.
    let mut fw = Firewall::new(ruleset()).unwrap();
    let query = udp(R, X, 50000, 53, b"q");
    let renew = udp(R, X, 68, 67, b"r");
    fw.note_output(&query, 0);
    fw.note_output(&renew, 0);
    for i in 0..20_000u32 {
        let host = [192, 168, (i >> 8) as u8 % 20, i as u8];
        let port = 1024 + (i % 60_000) as u16;
        fw.note_output(&udp(H, host, 53, port, b"a"), 10);
        let rst = tcp(H, host, 49152 + (i % 16_000) as u16, port, 0x14, b"");
        fw.note_output(&rst, 10);
        let mut reply = ipv4(H, host, 1, &[0, 0, 0, 0, (i >> 8) as u8, i as u8, 0, 1]);
        let c = crate::checksum::checksum(&reply[20..]);
        reply[22..24].copy_from_slice(&c.to_be_bytes());
        fw.note_output(&reply, 10);
    }
    assert!(
        fw.is_local_reply(&udp(X, R, 53, 50000, b"a"), 20),
        "the upstream DNS answer is still expected"
    );
    assert!(
        fw.is_local_reply(&udp(X, R, 67, 68, b"a"), 20),
        "the DHCP ack"
    );
    // the forwarder's 150 queries in flight (random ports) are all kept as well
    let ports: Vec<u16> = (0..150u32)
        .map(|i| 49152 + (i.wrapping_mul(2_654_435_761) >> 18) as u16)
        .collect();
    for &p in &ports {
        fw.note_output(&udp(R, X, p, 53, b"q"), 30);
    }
    let kept = ports
        .iter()
        .filter(|&&p| fw.is_local_reply(&udp(X, R, 53, p, b"a"), 40))
        .count();
    assert_eq!(kept, 150);
    // a reset is not noted: nothing that answers it is established
    let host = [192, 168, 0, 1];
    let rst = tcp(H, host, 49153, 1025, 0x14, b"");
    let mut fresh = Firewall::new(ruleset()).unwrap();
    fresh.note_output(&rst, 0);
    assert!(!fresh.is_local_reply(&tcp(host, H, 1025, 49153, 0x10, b""), 1));
    // the flows the router serves still work as before
    fresh.note_output(&udp(H, host, 53, 40000, b"a"), 0);
    assert!(fresh.is_local_reply(&udp(host, H, 40000, 53, b"q"), 1));
}

#[test]
fn rule_limits_and_log_limit() {
    let mut rs = ruleset();
    let mut r = rule("limited", ZoneSel::Zone(1), None, Verdict::Accept);
    r.limit = Some(Limit::per_second(1, 1));
    rs.rules.push(r);
    let mut fw = Firewall::new(rs).unwrap();
    let p = pkt(&udp(X, R, 1, 2, b""));
    assert_eq!(fw.input(&p, WAN, CtState::New, 0), Verdict::Accept);
    assert_eq!(fw.input(&p, WAN, CtState::New, 10), Verdict::Reject);
    assert_eq!(fw.input(&p, WAN, CtState::New, 1010), Verdict::Accept);
    for _ in 0..20 {
        fw.input(&p, WAN, CtState::New, 1020);
    }
    let log = fw.take_log();
    assert_eq!(log.len(), 5, "burst 5 of fw4's 10/minute");
    assert_eq!(
        log[0],
        "reject wan in: IN=eth1 SRC=8.8.8.8 DST=10.0.0.2 LEN=28 PROTO=UDP SPT=1 DPT=2"
    );
    assert_eq!(fw.stats().log_suppressed, 21 - 5, "1 + 20 rejects");
    assert!(fw.take_log().is_empty());
}

#[test]
fn mutated_packets_through_both_chains_never_panic() {
    let mut rs = ruleset();
    let mut r = rule("icmp", ZoneSel::Any, Some(ZoneSel::Any), Verdict::Accept);
    r.icmp_type = vec![IcmpMatch {
        ty: 8,
        code_min: 0,
        code_max: 0,
    }];
    r.src_port = vec![PortRange { min: 1, max: 100 }];
    rs.rules.push(r);
    let mut fw = Firewall::new(rs).unwrap();
    let seeds = [
        tcp(X, R, 1, 22, 0x02, b"ab"),
        udp(X, R, 1, 2, b"x"),
        ipv4(X, R, 1, &[8, 0, 0, 0, 0, 1]),
    ];
    let mut rng = Rng(0xfeed);
    for n in 0..20_000u64 {
        let mut p = seeds[rng.below(seeds.len())].clone();
        let len = p.len();
        rng.mangle(&mut p, 4, 0, len);
        let ct = [
            CtState::New,
            CtState::Invalid,
            CtState::Dnat,
            CtState::Established,
        ][rng.below(4)];
        if let Some(pk) = Packet::parse(&p) {
            fw.input(&pk, IfId(rng.below(4) as u8), ct, n);
            fw.forward(
                &pk,
                IfId(rng.below(4) as u8),
                IfId(rng.below(4) as u8),
                ct,
                n,
            );
        }
        fw.note_output(&p, n);
        let _ = fw.is_local_reply(&p, n);
        let _ = reject::TcpSegment::read(&p, &p);
    }
    assert!(fw.stats().rule_evaluations > 0);
}

#[test]
fn a_lan_source_from_the_wan_is_judged_by_the_wan_zone_as_openwrt() {
    // OpenWrt sets no rp_filter (base-files' sysctl.d/10-default.conf; fw4 has no
    // fib rule): a spoofed LAN source arriving on the WAN is not dropped by a
    // reverse-path check but judged by the zone it came in by, as any WAN packet
    let mut fw = Firewall::new(ruleset()).unwrap();
    let spoofed = pkt(&udp([192, 168, 1, 99], H, 1, 2, b"x"));
    assert_eq!(
        fw.forward(&spoofed, WAN, LAN, CtState::New, 0),
        Verdict::Drop
    );
    assert_eq!(fw.input(&spoofed, WAN, CtState::New, 0), Verdict::Reject);
}
