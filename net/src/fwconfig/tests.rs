//! The default OpenWrt firewall file and hand-written ones, compiled and enforced by
//! the router's forwarding core with conntrack/NAT: every verdict below is what a
//! packet built byte by byte gets from `Router::input`.
//!
//! Topology: eth0 (IfId 0, zone lan) 192.168.1.1/24, eth1 (IfId 1, zone wan)
//! 10.0.0.2/24 with the default route via 10.0.0.1.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::*;
use crate::testnet;
use alloc::vec;
use xenlet_router::checksum;
use xenlet_router::forward::{Disposition, Output, Router, RouterConfig, RxMeta, TxFull, TxMeta};
use xenlet_router::iface::IfConfig;
use xenlet_router::nat::Masquerade;
use xenlet_router::netfilter::{self, Netfilter};
use xenlet_router::route::Ipv4Net;
use xenlet_router::DropReason;

const LAN: IfId = IfId(0);
const WAN: IfId = IfId(1);
const MAC_LAN: [u8; 6] = [2, 0, 0, 0, 0, 0xa0];
const MAC_WAN: [u8; 6] = [2, 0, 0, 0, 0, 0xa1];
const R_LAN: [u8; 4] = [192, 168, 1, 1];
const R_WAN: [u8; 4] = [10, 0, 0, 2];
const GW: [u8; 4] = [10, 0, 0, 1];
const GW_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 1];
const HOST: [u8; 4] = [192, 168, 1, 100];
const HOST_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 1, 100];
const HOST2: [u8; 4] = [192, 168, 1, 50];
const HOST2_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 1, 50];
const FAR: [u8; 4] = [198, 51, 100, 9];

const IMAGE_FIREWALL: &str = include_str!("../../../xtask/rootfs/etc/config/firewall");
const FIREWALL4: &str = include_str!("../../../uci/fixtures/firewall4.firewall");

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const RST: u8 = 0x04;

fn ifaces() -> Vec<NetworkIface> {
    vec![
        NetworkIface::new("lan", LAN, "eth0"),
        NetworkIface::new("wan", WAN, "eth1"),
        NetworkIface::new("wan6", WAN, "eth1"),
    ]
}

fn compile_ok(text: &str) -> Compiled {
    let (c, warnings) = compile_text(text, &ifaces()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    c
}

// ---- packets, byte by byte ----

/// An IPv4 packet as the tests send them: id 1, DF.
fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, l4: &[u8]) -> Vec<u8> {
    testnet::ipv4(src, dst, proto, 1, true, l4)
}

#[allow(clippy::too_many_arguments)]
fn tcp(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    data: &[u8],
) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[5 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(data);
    let c = testnet::l4_checksum(src, dst, 6, &t);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    ipv4(src, dst, 6, &t)
}

fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    ipv4(src, dst, 17, &testnet::udp(src, dst, sport, dport, data))
}

fn icmp(src: [u8; 4], dst: [u8; 4], ty: u8, code: u8, id: u16) -> Vec<u8> {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0, 1, b'p', b'i', b'n', b'g']);
    let c = checksum::checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    ipv4(src, dst, 1, &m)
}

fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn arp_reply(sha: [u8; 6], spa: [u8; 4], tha: [u8; 6], tpa: [u8; 4]) -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4, 0, 2];
    a.extend_from_slice(&sha);
    a.extend_from_slice(&spa);
    a.extend_from_slice(&tha);
    a.extend_from_slice(&tpa);
    eth(tha, sha, 0x0806, &a)
}

#[derive(Default)]
struct Wire {
    sent: Vec<(IfId, Vec<u8>)>,
}

impl Output for Wire {
    fn send(&mut self, ifc: IfId, frame: &[u8], _: TxMeta) -> Result<(), TxFull> {
        self.sent.push((ifc, frame.to_vec()));
        Ok(())
    }
}

impl Wire {
    fn ip(&self, k: usize) -> &[u8] {
        &self.sent[k].1[14..]
    }
}

struct Box4 {
    r: Router,
    nf: Netfilter,
    now: u64,
}

impl Box4 {
    /// Sets the firewall's wall clock so that `now` (1000 ms) is Monday 2025-06-02
    /// 12:00 UTC, local time UTC.
    fn set_clock_to_monday_noon(&mut self) {
        use xenlet_router::firewall::timematch::WallClock;
        let noon = (1_748_822_400 + 12 * 3600) * 1000;
        self.nf
            .firewall_mut()
            .unwrap()
            .set_wall_clock(Some(WallClock {
                unix_ms_at_zero: noon - 1000,
                utc_offset_secs: 0,
            }));
    }

    fn new(text: &str) -> Box4 {
        let mut r = Router::new(RouterConfig::default());
        let cfg = |name: &str, mac| IfConfig {
            name: String::from(name),
            mac: smoltcp::wire::EthernetAddress(mac),
            mtu: 1500,
            has_tx_gso: false,
            has_tx_gso6: false,
            has_tx_csum_offload: false,
            is_mss_clamped: false,
        };
        assert_eq!(r.add_interface(cfg("eth0", MAC_LAN)), Ok(LAN));
        assert_eq!(r.add_interface(cfg("eth1", MAC_WAN)), Ok(WAN));
        r.add_address(LAN, Ipv4Net::new(R_LAN.into(), 24).unwrap())
            .unwrap();
        r.add_address(WAN, Ipv4Net::new(R_WAN.into(), 24).unwrap())
            .unwrap();
        r.set_dhcp_default(Some((GW.into(), WAN))).unwrap();
        let c = compile_ok(text);
        let masq = c
            .ruleset
            .zones
            .iter()
            .filter(|z| z.masq)
            .flat_map(|z| z.ifaces.iter())
            .map(|&iface| Masquerade {
                iface,
                addr: Some(if iface == WAN { R_WAN } else { R_LAN }),
            })
            .collect();
        let mut nf = Netfilter::new(netfilter::Config {
            capacity: 256,
            masquerade: masq,
            hash_seed: 99,
            ..netfilter::Config::default()
        });
        nf.set_firewall(Some(
            xenlet_router::firewall::Firewall::new(c.ruleset).unwrap(),
        ));
        nf.set_iface_addr(LAN, Some(R_LAN));
        nf.set_iface_addr(WAN, Some(R_WAN));
        let mut b = Box4 { r, nf, now: 1000 };
        for (ifc, mac, ip, our_mac, our_ip) in [
            (WAN, GW_MAC, GW, MAC_WAN, R_WAN),
            (LAN, HOST_MAC, HOST, MAC_LAN, R_LAN),
            (LAN, HOST2_MAC, HOST2, MAC_LAN, R_LAN),
        ] {
            let d = b.send_frame(ifc, arp_reply(mac, ip, our_mac, our_ip)).0;
            assert_eq!(d, Disposition::Local);
        }
        b
    }

    fn send_frame(&mut self, ifc: IfId, mut f: Vec<u8>) -> (Disposition, Wire) {
        let mut w = Wire::default();
        let d = self.r.input(
            ifc,
            &mut f,
            RxMeta::default(),
            self.now,
            &mut self.nf,
            &mut w,
        );
        (d, w)
    }

    /// Sends an IPv4 or IPv6 packet (by its version) in on `ifc` from the usual
    /// neighbour there (on the LAN: HOST2 for its IPv4 address, else HOST).
    fn send(&mut self, ifc: IfId, ip: Vec<u8>) -> (Disposition, Wire) {
        let v6 = ip.first().is_some_and(|b| b >> 4 == 6);
        let (dst, src) = if ifc == WAN {
            (MAC_WAN, GW_MAC)
        } else {
            let from2 = !v6 && ip.get(12..16) == Some(&HOST2[..]);
            (MAC_LAN, if from2 { HOST2_MAC } else { HOST_MAC })
        };
        let ethertype = if v6 { 0x86dd } else { 0x0800 };
        self.send_frame(ifc, eth(dst, src, ethertype, &ip))
    }

    fn reload(&mut self, text: &str) {
        let c = compile_ok(text);
        self.nf.reload_firewall(c.ruleset).unwrap();
    }

    fn evaluations(&self) -> u64 {
        self.nf.firewall().unwrap().stats().rule_evaluations
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

// ---- the default file ----

#[test]
fn openwrt_default_files_compile_without_warnings_into_lan_and_wan() {
    // the image's file is OpenWrt's base-files default (wan forward REJECT); the
    // firewall4 package's own has wan forward DROP
    for (text, wan_forward) in [
        (IMAGE_FIREWALL, Verdict::Reject),
        (FIREWALL4, Verdict::Drop),
    ] {
        let c = compile_ok(text);
        let rs = &c.ruleset;
        assert_eq!(rs.zones.len(), 2);
        let (lan, wan) = (&rs.zones[0], &rs.zones[1]);
        assert_eq!(
            (lan.name.as_str(), lan.ifaces.as_slice()),
            ("lan", &[LAN][..])
        );
        assert_eq!(
            (wan.name.as_str(), wan.ifaces.as_slice()),
            ("wan", &[WAN][..])
        );
        assert_eq!(
            (lan.input, lan.forward, wan.input, wan.forward),
            (
                Verdict::Accept,
                Verdict::Accept,
                Verdict::Reject,
                wan_forward
            )
        );
        assert!(wan.masq && wan.mtu_fix && !lan.masq);
        assert_eq!(rs.forwardings, vec![Forwarding { src: 0, dest: 1 }]);
        assert_eq!(rs.defaults.input, Verdict::Reject);
        assert_eq!(rs.defaults.forward, Verdict::Reject);
        assert_eq!(rs.defaults.syn_flood, Some(Limit::per_second(25, 50)));
        let names: Vec<&str> = rs.rules.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(&names[..2], &["Allow-DHCP-Renew", "Allow-Ping"]);
        let ping = &rs.rules[1];
        assert_eq!(ping.family, RuleFamily::Ipv4);
        assert_eq!(ping.protos, vec![1], "an IPv4 rule: ICMP only");
        assert_eq!(ping.icmp_type.len(), 1);
        assert_eq!((ping.icmp_type[0].ty, ping.icmp_type[0].code_min), (8, 0));
        assert_eq!(port_flags(rs, WAN), (true, true));
        assert_eq!(port_flags(rs, LAN), (false, false));
        // firewall4's IPv6 rules, in both files
        let rule = |n: &str| rs.rules.iter().find(|r| r.name == n).unwrap();
        let fe80 = Net6 {
            addr: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            prefix_len: 10,
        };
        let dhcp6 = rule("Allow-DHCPv6");
        assert_eq!((dhcp6.family, dhcp6.dest), (RuleFamily::Ipv6, None));
        assert_eq!(dhcp6.protos, vec![17]);
        assert_eq!(dhcp6.dest_port[0].min, 546);
        let mld = rule("Allow-MLD");
        assert_eq!(
            (mld.family, mld.src_ip6.as_slice()),
            (RuleFamily::Ipv6, &[fe80][..])
        );
        assert_eq!(mld.protos, vec![1, 58], "proto icmp is ICMPv6 for IPv6");
        let types = |r: &Rule| r.icmp6_type.iter().map(|m| m.ty).collect::<Vec<_>>();
        assert_eq!(types(mld), vec![130, 131, 132, 143]);
        assert!(mld.icmp_type.is_empty());
        let input = rule("Allow-ICMPv6-Input");
        assert_eq!(
            types(input),
            vec![128, 129, 1, 2, 3, 4, 4, 133, 135, 134, 136]
        );
        assert_eq!(input.limit, Some(Limit::per_second(1000, 5)));
        assert_eq!(input.dest, None);
        let fwd = rule("Allow-ICMPv6-Forward");
        assert_eq!(types(fwd), vec![128, 129, 1, 2, 3, 4, 4]);
        assert_eq!(fwd.dest, Some(ZoneSel::Any));
        assert!(fwd.icmp_type.is_empty() && fwd.family == RuleFamily::Ipv6);
    }
}

// ---- the input chain from the WAN ----

#[test]
fn wan_tcp_to_the_router_gets_a_reset_built_per_rfc_793() {
    let mut b = Box4::new(IMAGE_FIREWALL);
    let syn = tcp(GW, R_WAN, 40000, 22, 1000, 0, SYN, &[]);
    let (d, w) = b.send(WAN, syn);
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    assert_eq!(w.sent.len(), 1);
    let (ifc, f) = &w.sent[0];
    assert_eq!(*ifc, WAN);
    assert_eq!(&f[0..6], &GW_MAC, "straight back to the sender");
    assert_eq!(&f[6..12], &MAC_WAN);
    let ip = w.ip(0);
    assert_eq!(checksum::checksum(&ip[..20]), 0);
    assert_eq!((&ip[12..16], &ip[16..20]), (&R_WAN[..], &GW[..]));
    let t = &ip[20..];
    assert_eq!((be16(t, 0), be16(t, 2)), (22, 40000));
    assert_eq!(be32(t, 4), 0, "no ACK in the SYN: SEQ=0");
    assert_eq!(be32(t, 8), 1001, "ACK = SEG.SEQ + 1 for the SYN");
    assert_eq!(t[13], RST | ACK);
    assert_eq!(
        testnet::l4_checksum(R_WAN, GW, 6, &{
            let mut c = t.to_vec();
            c[16] = 0;
            c[17] = 0;
            c
        }),
        be16(t, 16)
    );

    // a segment with ACK and 5 data bytes: SEQ = SEG.ACK, RST alone
    b.now += 5000;
    let (_, w) = b.send(WAN, tcp(GW, R_WAN, 40001, 22, 7, 123_456, ACK, b"hello"));
    // (an ACK for no flow is INVALID; drop_invalid is off: the zone rejects it)
    let t = &w.ip(0)[20..];
    assert_eq!((be32(t, 4), t[13]), (123_456, RST));
    // a reset is never answered
    let (d, w) = b.send(WAN, tcp(GW, R_WAN, 40002, 22, 7, 0, RST, &[]));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    assert!(w.sent.is_empty());
    let log = b.nf.firewall_mut().unwrap().take_log();
    assert!(
        log[0].starts_with(
            "reject wan in: IN=eth1 SRC=10.0.0.1 DST=10.0.0.2 LEN=40 PROTO=TCP SPT=40000 DPT=22"
        ),
        "{log:?}"
    );
}

#[test]
fn wan_udp_gets_port_unreachable_and_ping_follows_allow_ping_across_a_reload() {
    let mut b = Box4::new(IMAGE_FIREWALL);
    let q = udp(GW, R_WAN, 5353, 53, b"query");
    let (d, w) = b.send(WAN, q.clone());
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    assert_eq!(w.sent.len(), 1);
    let ip = w.ip(0);
    assert_eq!((ip[9], ip[20], ip[21]), (1, 3, 3), "ICMP port-unreachable");
    assert_eq!(&ip[16..20], &GW);
    assert_eq!(&ip[28..48], &q[..20], "quotes the datagram");

    // DHCP renewals are allowed
    let (d, _) = b.send(WAN, udp(GW, R_WAN, 67, 68, b"offer"));
    assert_eq!(d, Disposition::Local);

    let ping = icmp(GW, R_WAN, 8, 0, 77);
    assert_eq!(b.send(WAN, ping.clone()).0, Disposition::Local);
    let listing = b.nf.firewall().unwrap().listing();
    assert!(
        listing.contains(
            "# Allow-Ping -> router meta nfproto ipv4 proto [1] accept counter packets 1 bytes 32"
        ),
        "{listing}"
    );
    assert!(listing.contains("\t\tchain input_wan {\n"), "{listing}");
    let without = IMAGE_FIREWALL.replace(
        "option name 'Allow-Ping'",
        "option name 'Allow-Ping'\n\toption enabled '0'",
    );
    b.reload(&without);
    let (d, w) = b.send(WAN, icmp(GW, R_WAN, 8, 0, 78));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    assert_eq!((w.ip(0)[20], w.ip(0)[21]), (3, 3));
    b.reload(IMAGE_FIREWALL);
    assert_eq!(b.send(WAN, icmp(GW, R_WAN, 8, 0, 79)).0, Disposition::Local);
    // from the LAN everything reaches the router
    assert_eq!(
        b.send(LAN, tcp(HOST, R_LAN, 1234, 22, 1, 0, SYN, &[])).0,
        Disposition::Local
    );
    // IPv6 from the WAN is dropped (input REJECT), from the LAN it goes to the stack
    let v6 = eth(MAC_WAN, GW_MAC, 0x86dd, &[0x60; 40]);
    assert_eq!(
        b.send_frame(WAN, v6).0,
        Disposition::Dropped(DropReason::Filtered)
    );
    let v6 = eth(MAC_LAN, HOST_MAC, 0x86dd, &[0x60; 40]);
    assert_eq!(b.send_frame(LAN, v6).0, Disposition::Local);
    // broadcast from the WAN: through the input chain, never answered
    let bc = eth(
        [0xff; 6],
        GW_MAC,
        0x0800,
        &udp(GW, [255; 4], 1000, 137, b"x"),
    );
    let (d, w) = b.send_frame(WAN, bc);
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    assert!(w.sent.is_empty());
}

#[test]
fn replies_to_the_routers_own_connections_are_established() {
    let mut b = Box4::new(IMAGE_FIREWALL);
    let out = udp(R_WAN, [9, 9, 9, 9], 50000, 53, b"q");
    let reply = udp([9, 9, 9, 9], R_WAN, 53, 50000, b"a");
    assert_eq!(
        b.send(WAN, reply.clone()).0,
        Disposition::Dropped(DropReason::Filtered)
    );
    b.nf.firewall_mut().unwrap().note_output(&out, b.now);
    assert_eq!(b.send(WAN, reply).0, Disposition::Local);
    // another port is not
    let other = udp([9, 9, 9, 9], R_WAN, 53, 50001, b"a");
    assert_eq!(
        b.send(WAN, other).0,
        Disposition::Dropped(DropReason::Filtered)
    );
}

#[test]
fn syn_flood_gets_about_burst_plus_rate_times_t_answers() {
    let mut b = Box4::new(IMAGE_FIREWALL);
    let mut resets = 0;
    // 4 seconds of SYNs every 2 ms from different ports
    for k in 0..2000u32 {
        b.now = 1000 + u64::from(k) * 2;
        let (_, w) = b.send(WAN, tcp(GW, R_WAN, 1024 + k as u16, 80, k, 0, SYN, &[]));
        resets += w.sent.len();
    }
    let expected = 50 + 25 * 4;
    assert!((expected - 2..=expected + 2).contains(&resets), "{resets}");
    let st = b.nf.firewall().unwrap().stats();
    assert_eq!(st.syn_flood.packets as usize, 2000 - resets);
}

// ---- the forward chain ----

#[test]
fn wan_to_the_lan_subnet_is_refused_and_nothing_reaches_the_lan() {
    let mut b = Box4::new(IMAGE_FIREWALL);
    for p in [
        tcp(GW, HOST, 4000, 80, 1, 0, SYN, &[]),
        udp(GW, HOST, 4000, 53, b"x"),
        icmp(GW, HOST, 8, 0, 1),
    ] {
        let (d, w) = b.send(WAN, p);
        assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
        assert!(w.sent.iter().all(|(i, _)| *i == WAN), "nothing on the LAN");
    }
    assert_eq!(b.nf.count(), 0, "no conntrack entry for refused flows");
    assert_eq!(b.nf.firewall().unwrap().stats().default_forward.packets, 3);
}

#[test]
fn a_bare_ack_from_the_lan_never_leaves_on_the_wan() {
    let mut b = Box4::new(IMAGE_FIREWALL);
    let (d, w) = b.send(LAN, tcp(HOST, FAR, 5000, 80, 1, 1, ACK, &[]));
    assert!(matches!(d, Disposition::Dropped(_)), "{d:?}");
    assert!(w.sent.iter().all(|(i, _)| *i != WAN));
    // with drop_invalid it is the firewall that drops it
    let strict = IMAGE_FIREWALL.replace(
        "option syn_flood '1'",
        "option syn_flood '1'\n\toption drop_invalid '1'",
    );
    b.reload(&strict);
    let (d, _) = b.send(LAN, tcp(HOST, FAR, 5001, 80, 1, 1, ACK, &[]));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    assert_eq!(b.nf.firewall().unwrap().stats().invalid.packets, 1);
}

const PORT_FORWARD: &str = "
config redirect
	option name 'web'
	option src 'wan'
	option src_dport '8080'
	option dest 'lan'
	option dest_ip '192.168.1.100'
	option dest_port '80'
	option proto 'tcp'
	option target 'DNAT'
";

#[test]
fn port_forward_and_its_reflection_from_the_lan() {
    let text = format!("{IMAGE_FIREWALL}{PORT_FORWARD}");
    let mut b = Box4::new(&text);
    let (d, w) = b.send(WAN, tcp(FAR, R_WAN, 5555, 8080, 100, 0, SYN, &[]));
    assert_eq!(d, Disposition::Forwarded);
    let (ifc, f) = &w.sent[0];
    assert_eq!((*ifc, &f[0..6]), (LAN, &HOST_MAC[..]));
    let ip = &f[14..];
    assert_eq!((&ip[12..16], &ip[16..20]), (&FAR[..], &HOST[..]));
    assert_eq!(be16(&ip[20..], 2), 80);
    // the reply leaves with the WAN address and the external port
    let (d, w) = b.send(LAN, tcp(HOST, FAR, 80, 5555, 900, 101, SYN | ACK, &[]));
    assert_eq!(d, Disposition::Forwarded);
    let ip = w.ip(0);
    assert_eq!((&ip[12..16], be16(&ip[20..], 0)), (&R_WAN[..], 8080));
    // another port from the WAN is still refused
    let (d, _) = b.send(WAN, tcp(FAR, R_WAN, 5556, 8081, 100, 0, SYN, &[]));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));

    // reflection: a LAN client reaching the WAN address:8080
    let (d, w) = b.send(LAN, tcp(HOST2, R_WAN, 6000, 8080, 5, 0, SYN, &[]));
    assert_eq!(d, Disposition::Forwarded, "{:?}", b.nf.dnat());
    let (ifc, f) = &w.sent[0];
    assert_eq!(*ifc, LAN);
    let ip = &f[14..];
    assert_eq!(
        (&ip[12..16], &ip[16..20]),
        (&R_LAN[..], &HOST[..]),
        "DNAT + SNAT to the router's LAN address"
    );
    assert_eq!(be16(&ip[20..], 2), 80);
    let sport = be16(&ip[20..], 0);
    assert_eq!(
        testnet::l4_checksum(R_LAN, HOST, 6, &{
            let mut c = ip[20..].to_vec();
            c[16] = 0;
            c[17] = 0;
            c
        }),
        be16(&ip[20..], 16)
    );
    // the server's answer goes back to HOST2 from the WAN address:8080
    let (d, w) = b.send(LAN, tcp(HOST, R_LAN, 80, sport, 50, 6, SYN | ACK, &[]));
    assert_eq!(d, Disposition::Forwarded);
    let (ifc, f) = &w.sent[0];
    assert_eq!((*ifc, &f[0..6]), (LAN, &HOST2_MAC[..]));
    let ip = &f[14..];
    assert_eq!((&ip[12..16], &ip[16..20]), (&R_WAN[..], &HOST2[..]));
    assert_eq!((be16(&ip[20..], 0), be16(&ip[20..], 2)), (8080, 6000));
}

#[test]
fn a_port_forward_with_a_time_match_applies_only_in_its_hours() {
    let text = format!(
        "{IMAGE_FIREWALL}{}",
        PORT_FORWARD.replace(
            "config redirect\n",
            "config redirect\n\toption start_time '08:00'\n\toption stop_time '18:00'\n"
        )
    );
    assert_ne!(text, format!("{IMAGE_FIREWALL}{PORT_FORWARD}"));
    let mut b = Box4::new(&text);
    // no wall clock yet: the forward does not apply (the WAN zone refuses 8080)
    let (d, _) = b.send(WAN, tcp(FAR, R_WAN, 5555, 8080, 100, 0, SYN, &[]));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    // b.now (1000 ms) is 12:00 UTC
    b.set_clock_to_monday_noon();
    let (d, w) = b.send(WAN, tcp(FAR, R_WAN, 5556, 8080, 100, 0, SYN, &[]));
    assert_eq!(d, Disposition::Forwarded);
    assert_eq!(&w.ip(0)[16..20], &HOST[..]);
    // the reflection too
    let (d, _) = b.send(LAN, tcp(HOST2, R_WAN, 6000, 8080, 5, 0, SYN, &[]));
    assert_eq!(d, Disposition::Forwarded);
    // 20:00: neither
    b.now += 8 * 3_600_000;
    let (d, _) = b.send(WAN, tcp(FAR, R_WAN, 5557, 8080, 100, 0, SYN, &[]));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    let (d, _) = b.send(LAN, tcp(HOST2, R_WAN, 6001, 8080, 5, 0, SYN, &[]));
    assert_ne!(d, Disposition::Forwarded);
}

#[test]
fn reload_keeps_established_flows_and_new_flows_see_the_new_rules() {
    let mut b = Box4::new(IMAGE_FIREWALL);
    assert_eq!(
        b.send(LAN, tcp(HOST, FAR, 5000, 443, 1, 0, SYN, &[])).0,
        Disposition::Forwarded
    );
    let w = b
        .send(WAN, tcp(FAR, R_WAN, 443, 5000, 9, 2, SYN | ACK, &[]))
        .1;
    assert_eq!(w.sent[0].0, LAN);
    assert_eq!(
        b.send(LAN, tcp(HOST, FAR, 5000, 443, 2, 10, ACK, &[])).0,
        Disposition::Forwarded
    );
    // lan -> wan no longer allowed
    let closed = IMAGE_FIREWALL.replace(
        "config forwarding\n\toption src 'lan'\n\toption dest 'wan'\n",
        "",
    );
    assert_ne!(closed, IMAGE_FIREWALL);
    b.reload(&closed);
    assert_eq!(
        b.send(LAN, tcp(HOST, FAR, 5000, 443, 2, 10, ACK, b"data"))
            .0,
        Disposition::Forwarded
    );
    assert_eq!(
        b.send(WAN, tcp(FAR, R_WAN, 443, 5000, 10, 6, ACK, b"resp"))
            .0,
        Disposition::Forwarded
    );
    let (d, w) = b.send(LAN, tcp(HOST, FAR, 5001, 443, 1, 0, SYN, &[]));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    assert_eq!(w.sent[0].0, LAN, "the reset goes back to the LAN host");
    // a bad file is refused and the running rules stay
    let bad = format!("{closed}\nconfig rule\n\toption src 'nowhere'\n\toption target 'ACCEPT'\n");
    let e = compile_text(&bad, &ifaces()).unwrap_err();
    assert!(
        e.contains("/etc/config/firewall")
            && e.contains("@rule[")
            && e.contains("'src'")
            && e.contains("nowhere"),
        "{e}"
    );
}

#[test]
fn plain_and_negated_items_of_one_option_both_hold_as_fw4() {
    // `src_ip '192.168.1.0/24 !192.168.1.50'`: fw4's `ip saddr 192.168.1.0/24 ip
    // saddr != 192.168.1.50`; the ports likewise
    let text = format!(
        "{IMAGE_FIREWALL}\nconfig rule\n\toption src 'lan'\n\toption dest 'wan'\n\toption proto 'tcp'\n\toption src_ip '192.168.1.0/24 !192.168.1.50'\n\toption dest_port '1-1023 !443'\n\toption target 'REJECT'\n"
    );
    let mut b = Box4::new(&text);
    let filt = Disposition::Dropped(DropReason::Filtered);
    for (host, sport, port, want) in [
        (HOST, 5000, 80, filt),
        (HOST, 5001, 443, Disposition::Forwarded),
        (HOST, 5002, 8080, Disposition::Forwarded),
        (HOST2, 5003, 80, Disposition::Forwarded),
    ] {
        let (d, _) = b.send(LAN, tcp(host, FAR, sport, port, 1, 0, SYN, &[]));
        assert_eq!(d, want, "{host:?} -> {port}");
    }
}

#[test]
fn negated_addresses_narrow_the_family_as_fw4() {
    // fw4 infers a rule's family from its addresses, negated ones too: "ssh from the
    // WAN but not from 203.0.113.0/24" is an IPv4 rule (`ip saddr != ...`), and
    // accepts no IPv6 at all.
    let c = compile_ok(concat!(
        "config zone\n\toption name 'wan'\n\tlist network 'wan'\n\toption input 'REJECT'\n",
        "config rule\n\toption src 'wan'\n\toption proto 'tcp'\n\toption dest_port '22'\n",
        "\toption src_ip '!203.0.113.0/24'\n\toption target 'ACCEPT'\n",
        "config rule\n\toption src 'wan'\n\toption proto 'tcp'\n\toption dest_port '23'\n",
        "\tlist src_ip '!203.0.113.0/24'\n\tlist src_ip '!2001:db8::/32'\n\toption target 'ACCEPT'\n",
        "config rule\n\toption src 'wan'\n\toption proto 'tcp'\n\toption dest_port '24'\n",
        "\toption dest_ip '!2001:db8::1'\n\toption target 'ACCEPT'\n",
    ));
    let fam: Vec<RuleFamily> = c.ruleset.rules.iter().map(|r| r.family).collect();
    assert_eq!(
        fam,
        [RuleFamily::Ipv4, RuleFamily::Any, RuleFamily::Ipv6],
        "{:?}",
        c.ruleset.rules
    );
    assert!(c
        .ruleset
        .rules
        .iter()
        .all(|r| !r.except.src_ip.is_empty() || !r.except.dest_ip6.is_empty()));
}

#[test]
fn a_bedtime_rule_from_the_file_rejects_new_flows_only_in_its_hours() {
    let text = format!(
        "{IMAGE_FIREWALL}\nconfig rule\n\toption name 'bedtime'\n\toption src 'lan'\n\toption dest 'wan'\n\toption src_ip '192.168.1.100'\n\toption start_time '22:00'\n\toption stop_time '06:00'\n\toption weekdays 'mon tue wed thu fri'\n\toption target 'REJECT'\n"
    );
    let mut b = Box4::new(&text);
    // the clock not known yet: the REJECT rule with a time match fails closed
    let (d, _) = b.send(LAN, tcp(HOST, FAR, 5000, 443, 1, 0, SYN, &[]));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    // b.now (1000 ms) is Monday 2025-06-02 12:00 UTC; local time is UTC
    b.set_clock_to_monday_noon();
    let (d, _) = b.send(LAN, tcp(HOST, FAR, 5001, 443, 1, 0, SYN, &[]));
    assert_eq!(d, Disposition::Forwarded);
    // 23:00: a new flow is refused, the one opened at noon goes on (established)
    b.now += 11 * 3_600_000;
    let (d, w) = b.send(LAN, tcp(HOST, FAR, 5002, 443, 1, 0, SYN, &[]));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    assert_eq!(w.sent[0].0, LAN, "the reset goes back to the LAN host");
    let (d, _) = b.send(LAN, tcp(HOST2, FAR, 5002, 443, 1, 0, SYN, &[]));
    assert_eq!(d, Disposition::Forwarded, "another host is not in the rule");
    // Saturday 23:00: not a school night
    b.now += 5 * 86_400_000;
    let (d, _) = b.send(LAN, tcp(HOST, FAR, 5003, 443, 1, 0, SYN, &[]));
    assert_eq!(d, Disposition::Forwarded);
}

#[test]
fn a_hundred_rules_cost_nothing_on_the_established_path() {
    let mut text = String::from(IMAGE_FIREWALL);
    for k in 0..100 {
        text.push_str(&format!(
            "\nconfig rule\n\toption name 'r{k}'\n\toption src 'lan'\n\toption dest 'wan'\n\toption proto 'udp'\n\toption dest_port '{}'\n\toption target 'DROP'\n",
            10000 + k
        ));
    }
    let mut b = Box4::new(&text);
    assert_eq!(b.nf.firewall().unwrap().ruleset().rules.len(), 106);
    assert_eq!(
        b.send(LAN, tcp(HOST, FAR, 5000, 443, 1, 0, SYN, &[])).0,
        Disposition::Forwarded
    );
    let first = b.evaluations();
    assert!(
        first >= 100,
        "the first packet went through the rules: {first}"
    );
    b.send(WAN, tcp(FAR, R_WAN, 443, 5000, 9, 2, SYN | ACK, &[]));
    for k in 0..50 {
        assert_eq!(
            b.send(LAN, tcp(HOST, FAR, 5000, 443, 2 + k, 10, ACK, b"x"))
                .0,
            Disposition::Forwarded
        );
    }
    assert_eq!(
        b.evaluations(),
        first,
        "no rule looked at for established packets"
    );
    assert!(b.nf.firewall().unwrap().stats().established.packets >= 50);
    // a matching rule drops a new UDP flow and counts it
    let (d, _) = b.send(LAN, udp(HOST, FAR, 1, 10042, b"x"));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    let fw = b.nf.firewall().unwrap();
    assert_eq!(fw.rule_counter(6 + 42).unwrap().packets, 1);
    assert!(fw.listing().contains("r42"));
}

// ---- every option, one table ----

const OPTIONS: &str = "
config defaults
	option input 'DROP'
	option output 'ACCEPT'
	option forward 'DROP'

config zone
	option name 'lan'
	list network 'lan'
	option input 'ACCEPT'
	option output 'ACCEPT'
	option forward 'ACCEPT'

config zone
	option name 'wan'
	list network 'wan'
	option input 'DROP'
	option output 'ACCEPT'
	option forward 'DROP'
	option masq '1'

config forwarding
	option src 'lan'
	option dest 'wan'

config rule
	option name 'ssh-from-one-net'
	option src 'wan'
	option proto 'tcp'
	option src_ip '198.51.100.0/24'
	option dest_port '22'
	option target 'ACCEPT'

config rule
	option name 'range'
	option src 'wan'
	option proto 'udp'
	option dest_port '5000-5010'
	option src_port '53'
	option target 'REJECT'

config rule
	option name 'dest-ip'
	option src 'wan'
	option proto 'all'
	option dest_ip '10.0.0.2'
	option src_ip '203.0.113.7'
	option target 'ACCEPT'

config rule
	option name 'unreach-only'
	option src 'wan'
	option proto 'icmp'
	option icmp_type 'destination-unreachable'
	option target 'ACCEPT'

config rule
	option name 'limited-ping'
	option src 'wan'
	option proto 'icmp'
	option icmp_type 'echo-request'
	option limit '2/second'
	option limit_burst '2'
	option target 'ACCEPT'

config rule
	option name 'no-smtp-out'
	option src 'lan'
	option dest 'wan'
	option proto 'tcp'
	option dest_port '25'
	option target 'REJECT'

config rule
	option name 'any-src-block'
	option src '*'
	option dest '*'
	option proto 'udp'
	option dest_ip '198.51.100.66'
	option target 'DROP'

config rule
	option name 'off'
	option src 'wan'
	option proto 'tcp'
	option dest_port '23'
	option target 'ACCEPT'
	option enabled '0'
";

#[test]
fn a_table_of_packets_and_verdicts_covers_every_option() {
    let mut b = Box4::new(OPTIONS);
    let acc = Disposition::Local;
    let fwd = Disposition::Forwarded;
    let filt = Disposition::Dropped(DropReason::Filtered);
    // (what, iface, packet, verdict, answered)
    let cases: Vec<(&str, IfId, Vec<u8>, Disposition, bool)> = vec![
        (
            "src_ip + dest_port accept",
            WAN,
            tcp(FAR, R_WAN, 1000, 22, 1, 0, SYN, &[]),
            acc,
            false,
        ),
        (
            "src_ip outside",
            WAN,
            tcp([203, 0, 113, 1], R_WAN, 1000, 22, 1, 0, SYN, &[]),
            filt,
            false,
        ),
        (
            "port range + src_port reject",
            WAN,
            udp(GW, R_WAN, 53, 5005, b"x"),
            filt,
            true,
        ),
        ("range end", WAN, udp(GW, R_WAN, 53, 5010, b"x"), filt, true),
        (
            "past the range: zone DROP, silent",
            WAN,
            udp(GW, R_WAN, 53, 5011, b"x"),
            filt,
            false,
        ),
        (
            "wrong src_port: silent",
            WAN,
            udp(GW, R_WAN, 54, 5005, b"x"),
            filt,
            false,
        ),
        (
            "proto all + dest_ip + src_ip",
            WAN,
            udp([203, 0, 113, 7], R_WAN, 9, 9, b"x"),
            acc,
            false,
        ),
        (
            "proto all matches gre",
            WAN,
            ipv4([203, 0, 113, 7], R_WAN, 47, &[0; 8]),
            acc,
            false,
        ),
        ("icmp_type match", WAN, icmp(GW, R_WAN, 3, 1, 0), acc, false),
        (
            "icmp_type mismatch",
            WAN,
            icmp(GW, R_WAN, 13, 0, 0),
            filt,
            false,
        ),
        ("limit 1", WAN, icmp(GW, R_WAN, 8, 0, 1), acc, false),
        ("limit 2", WAN, icmp(GW, R_WAN, 8, 0, 2), acc, false),
        ("limit exceeded", WAN, icmp(GW, R_WAN, 8, 0, 3), filt, false),
        (
            "enabled 0",
            WAN,
            tcp(GW, R_WAN, 1000, 23, 1, 0, SYN, &[]),
            filt,
            false,
        ),
        (
            "lan->wan rule reject",
            LAN,
            tcp(HOST, FAR, 1000, 25, 1, 0, SYN, &[]),
            filt,
            true,
        ),
        (
            "lan->wan forwarding",
            LAN,
            tcp(HOST, FAR, 1000, 80, 1, 0, SYN, &[]),
            fwd,
            true,
        ),
        (
            "src * dest * drop",
            LAN,
            udp(HOST, [198, 51, 100, 66], 1, 2, b"x"),
            filt,
            false,
        ),
        (
            "wan->lan: default forward DROP",
            WAN,
            udp(GW, HOST, 1, 2, b"x"),
            filt,
            false,
        ),
        (
            "lan input accept",
            LAN,
            udp(HOST, R_LAN, 1, 53, b"x"),
            acc,
            false,
        ),
    ];
    for (what, ifc, p, want, answered) in cases {
        let (d, w) = b.send(ifc, p);
        assert_eq!(d, want, "{what}");
        assert_eq!(!w.sent.is_empty(), answered, "{what}: {:?}", w.sent);
    }
    // the limit refills: 2/second
    b.now += 1000;
    assert_eq!(b.send(WAN, icmp(GW, R_WAN, 8, 0, 4)).0, acc);
    let listing = b.nf.firewall().unwrap().listing();
    assert!(
        listing.contains("ssh-from-one-net") && listing.contains("chain forward_lan"),
        "{listing}"
    );
}

// ---- hostile input ----

use xenlet_testrng::XorShift as Rng;

#[test]
fn mutated_packets_never_panic() {
    let text = format!("{IMAGE_FIREWALL}{PORT_FORWARD}");
    let mut b = Box4::new(&text);
    let seeds = [
        tcp(FAR, R_WAN, 5555, 8080, 100, 0, SYN, &[]),
        tcp(GW, R_WAN, 4000, 22, 1, 0, SYN, b"abc"),
        udp(GW, R_WAN, 67, 68, b"x"),
        icmp(GW, R_WAN, 8, 0, 9),
        icmp(GW, R_WAN, 3, 3, 9),
        tcp(HOST, FAR, 5000, 80, 1, 0, SYN, &[]),
        tcp(HOST2, R_WAN, 6000, 8080, 5, 0, SYN, &[]),
    ];
    let mut rng = Rng(0x5eed_f00d);
    for n in 0..20_000 {
        let mut p = seeds[rng.index(seeds.len())].clone();
        for _ in 0..1 + rng.index(4) {
            let k = rng.index(p.len());
            p[k] = rng.next() as u8;
        }
        if rng.index(8) == 0 {
            p.truncate(rng.index(p.len() + 1));
        }
        if rng.index(4) != 0 {
            // keep the header checksum right so the mutation gets past the core
            if p.len() >= 20 {
                p[10] = 0;
                p[11] = 0;
                let hl = usize::from(p[0] & 0xf) * 4;
                if hl >= 20 && hl <= p.len() {
                    let c = checksum::checksum(&p[..hl]);
                    p[10..12].copy_from_slice(&c.to_be_bytes());
                }
            }
        }
        b.now += rng.index(50) as u64;
        let ifc = if n % 2 == 0 { WAN } else { LAN };
        let _ = b.send(ifc, p);
    }
    let _ = b.nf.firewall().unwrap().listing();
}

#[test]
fn mutated_configs_never_panic_and_errors_name_the_place() {
    let base = format!("{IMAGE_FIREWALL}{PORT_FORWARD}{OPTIONS}");
    let words = [
        "REJECT",
        "drop",
        "'*'",
        "'lan'",
        "'wan'",
        "'nowhere'",
        "'1-0'",
        "'65535'",
        "'0'",
        "'99999'",
        "'1/minute'",
        "'tcp udp'",
        "'all'",
        "'icmp'",
        "'::1'",
        "'10.0.0.0/33'",
        "'echo-request'",
        "\nconfig rule\n",
        "\nconfig redirect\n",
        "\nconfig zone\n",
        "option dest_port",
        "option src",
        "",
    ];
    let mut rng = Rng(0xc0ff_ee11);
    let mut errors = 0;
    for _ in 0..3000 {
        let mut t: Vec<String> = base.split(' ').map(String::from).collect();
        for _ in 0..1 + rng.index(3) {
            let k = rng.index(t.len());
            t[k] = String::from(words[rng.index(words.len())]);
        }
        let text = t.join(" ");
        match compile_text(&text, &ifaces()) {
            Ok((c, _)) => {
                let fw = xenlet_router::firewall::Firewall::new(c.ruleset).unwrap();
                let _ = fw.listing();
                let _ = fw.dnat_rules();
            }
            Err(e) => {
                assert!(e.starts_with("/etc/config/firewall"), "{e}");
                errors += 1;
            }
        }
    }
    assert!(errors > 0, "some mutations are errors");
}

// ---- IPv6 through the image's firewall ----

fn a6(s: &str) -> core::net::Ipv6Addr {
    s.parse().unwrap()
}

/// An IPv6 packet carrying the upper-layer message `l4` of protocol `nh`, whose
/// checksum (at `csum`) is filled in.
fn ip6(src: &str, dst: &str, nh: u8, hop: u8, mut l4: Vec<u8>, csum: usize) -> Vec<u8> {
    let s = xenlet_router::ipv6::pseudo_header_sum(a6(src), a6(dst), nh, l4.len());
    let c = !checksum::fold(checksum::sum(s, &l4));
    l4[csum..csum + 2].copy_from_slice(&c.to_be_bytes());
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    p.extend_from_slice(&[nh, hop]);
    p.extend_from_slice(&a6(src).octets());
    p.extend_from_slice(&a6(dst).octets());
    p.extend_from_slice(&l4);
    p
}

fn udp6(src: &str, dst: &str, sport: u16, dport: u16) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&[0, 10, 0, 0, b'h', b'i']);
    ip6(src, dst, 17, 64, u, 6)
}

fn icmp6(src: &str, dst: &str, ty: u8, hop: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, 0, 0, 0];
    m.extend_from_slice(body);
    ip6(src, dst, 58, hop, m, 2)
}

/// A neighbour solicitation from `src` with its link-layer address.
fn ns6(src: &str, mac: [u8; 6]) -> Vec<u8> {
    let mut body = vec![0u8; 4];
    body.extend_from_slice(&a6("fe80::ff").octets());
    body.extend_from_slice(&[1, 1]);
    body.extend_from_slice(&mac);
    eth(
        [0x33, 0x33, 0xff, 0, 0, 0xff],
        mac,
        0x86dd,
        &icmp6(src, "ff02::1:ff00:ff", 135, 255, &body),
    )
}

impl Box4 {
    /// IPv6 as well: 2001:db8:1::1/64 on the LAN, 2001:db8:ff::2/64 on the WAN, a
    /// default route (as DHCPv6/RA gave it) via fe80::1 there.
    fn add_ipv6(&mut self) {
        use xenlet_router::route::RouteProto;
        use xenlet_router::route6::{Ipv6Net, Route6};
        let net = |s: &str, p| Ipv6Net::new(a6(s), p).unwrap();
        self.r.add_address6(LAN, net("2001:db8:1::1", 64)).unwrap();
        self.r.add_address6(WAN, net("2001:db8:ff::2", 64)).unwrap();
        self.r
            .add_route6(Route6 {
                dest: net("::", 0),
                gateway: Some(a6("fe80::1")),
                ifc: WAN,
                mtu: None,
                metric: 1024,
                proto: RouteProto::Dhcp,
            })
            .unwrap();
    }
}

#[test]
fn ipv6_is_forwarded_and_filtered_by_the_image_firewall() {
    const H6: &str = "2001:db8:1::100";
    const FAR6: &str = "2001:db8:99::9";
    let mut b = Box4::new(IMAGE_FIREWALL);
    b.add_ipv6();
    // the neighbours introduce themselves (from the WAN: Allow-ICMPv6-Input)
    assert_eq!(
        b.send_frame(WAN, ns6("fe80::1", GW_MAC)).0,
        Disposition::Local
    );
    assert_eq!(b.send_frame(LAN, ns6(H6, HOST_MAC)).0, Disposition::Local);
    // LAN -> internet and back
    let (d, w) = b.send(LAN, udp6(H6, FAR6, 5000, 53));
    assert_eq!(d, Disposition::Forwarded);
    assert_eq!((w.sent[0].0, &w.sent[0].1[..6]), (WAN, &GW_MAC[..]));
    assert_eq!(w.ip(0)[7], 63);
    let (d, w) = b.send(WAN, udp6(FAR6, H6, 53, 5000));
    assert_eq!(d, Disposition::Forwarded);
    assert_eq!((w.sent[0].0, &w.sent[0].1[..6]), (LAN, &HOST_MAC[..]));
    assert_eq!(b.nf.count6(), 1);
    assert_eq!(b.nf.count(), 0, "no IPv4 entry for it");
    // a new flow from the WAN: the zone's REJECT, answered with port-unreachable
    let (d, w) = b.send(WAN, udp6(FAR6, H6, 53, 5001));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    assert_eq!(w.sent.len(), 1);
    assert_eq!((w.ip(0)[6], w.ip(0)[40], w.ip(0)[41]), (58, 1, 4));
    // an echo request from the WAN: Allow-ICMPv6-Forward
    let ping = icmp6(FAR6, H6, 128, 64, &[0, 1, 0, 1]);
    let (d, _) = b.send(WAN, ping);
    assert_eq!(d, Disposition::Forwarded);
    // UDP to the router itself from the WAN: the input chain's REJECT
    let (d, _) = b.send(WAN, udp6(FAR6, "2001:db8:ff::2", 1, 22));
    assert_eq!(d, Disposition::Dropped(DropReason::Filtered));
    // DHCPv6 replies to the router's link-local address: Allow-DHCPv6
    let (d, _) = b.send(WAN, udp6("fe80::1", "fe80::a1", 547, 546));
    assert_eq!(d, Disposition::Local);
}

fn tcp6_syn(src: &str, dst: &str, sport: u16, dport: u16) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&1000u32.to_be_bytes());
    t.extend_from_slice(&0u32.to_be_bytes());
    t.extend_from_slice(&[0x50, SYN, 0xff, 0xff, 0, 0, 0, 0]);
    ip6(src, dst, 6, 64, t, 16)
}

/// The v6 rule `router-ipv6` adds with uci on real Xen: wan -> one LAN host's
/// address, TCP port 80, as OpenWrt's `config rule` with `family ipv6`.
const ALLOW_HTTP_LAN1: &str = "
config rule
	option name 'Allow-HTTP-lan1'
	option src 'wan'
	option dest 'lan'
	option family 'ipv6'
	option proto 'tcp'
	option dest_ip '2001:db8:1::100'
	option dest_port '80'
	option target 'ACCEPT'
";

#[test]
fn a_v6_rule_from_the_wan_opens_one_port_of_one_lan_host_and_nothing_else() {
    const H6: &str = "2001:db8:1::100";
    const H6B: &str = "2001:db8:1::101";
    const FAR6: &str = "2001:db8:99::9";
    let text = alloc::format!("{IMAGE_FIREWALL}{ALLOW_HTTP_LAN1}");
    let mut b = Box4::new(&text);
    b.add_ipv6();
    b.send_frame(WAN, ns6("fe80::1", GW_MAC));
    b.send_frame(LAN, ns6(H6, HOST_MAC));
    b.send_frame(LAN, ns6(H6B, HOST2_MAC));
    let from_wan =
        |b: &mut Box4, dst: &str, port: u16| b.send(WAN, tcp6_syn(FAR6, dst, 40000, port));
    // the rule's host and port: through to the LAN host
    let (d, w) = from_wan(&mut b, H6, 80);
    assert_eq!(d, Disposition::Forwarded);
    assert_eq!((w.sent[0].0, &w.sent[0].1[..6]), (LAN, &HOST_MAC[..]));
    // another port of that host, the same port of another host: the wan zone's
    // REJECT (a TCP reset back to the WAN, nothing on the LAN)
    for (dst, port) in [(H6, 81), (H6B, 80)] {
        let (d, w) = from_wan(&mut b, dst, port);
        assert_eq!(
            d,
            Disposition::Dropped(DropReason::Filtered),
            "{dst} {port}"
        );
        assert!(w.sent.iter().all(|s| s.0 == WAN), "{dst} {port}");
        assert_eq!(w.ip(0)[6], 6, "a reset");
        assert_eq!(w.ip(0)[40 + 13] & RST, RST);
    }
    // IPv4 is not touched by an IPv6 rule: it compiled into IPv6 addresses only
    let c = compile_ok(&text);
    let r = c
        .ruleset
        .rules
        .iter()
        .find(|r| r.name == "Allow-HTTP-lan1")
        .unwrap();
    assert!(r.dest_ip.is_empty());
    assert_eq!(r.dest_ip6.len(), 1);
}
