//! Packets through both hooks, built byte by byte, with every checksum recomputed and
//! compared after each rewrite.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::checksum::{checksum, fold, sum};
use crate::conntrack::TcpState;
use crate::flow::tcp_flag::{ACK, FIN, PSH, RST, SYN};
use crate::testutil::meta;

const LAN: IfId = IfId(0);
const WAN: IfId = IfId(1);
const WAN_ADDR: [u8; 4] = [203, 0, 113, 2];
const HOST1: [u8; 4] = [192, 168, 1, 100];
const HOST2: [u8; 4] = [192, 168, 1, 101];
const SERVER: [u8; 4] = [198, 51, 100, 10];
const SERVER2: [u8; 4] = [198, 51, 100, 20];
const ROUTER_UPSTREAM: [u8; 4] = [198, 51, 100, 254];
const S: Millis = 1000;

/// The flow from HOST1 port `sport` to SERVER port `dport`.
fn to_server(sport: u16, dport: u16, proto: Proto) -> Tuple {
    Tuple {
        src: HOST1,
        dst: SERVER,
        sport,
        dport,
        proto,
    }
}

/// Masquerading out of the WAN as WAN_ADDR.
fn wan_masquerade() -> Vec<Masquerade> {
    vec![Masquerade {
        iface: WAN,
        addr: Some(WAN_ADDR),
    }]
}

fn netfilter(capacity: usize) -> Netfilter {
    Netfilter::new(Config {
        capacity,
        masquerade: wan_masquerade(),
        hash_seed: 0x5eed,
        ..Config::default()
    })
}

/// A port forward WAN_ADDR:8022 -> HOST2:22 (TCP) on a masquerading WAN, for what
/// comes in on `input`; with `snat`, from that address rather than the client's
/// (NAT reflection).
fn port_forwarding_netfilter(input: IfId, snat: Option<[u8; 4]>) -> Netfilter {
    Netfilter::new(Config {
        capacity: 16,
        masquerade: wan_masquerade(),
        dnat: vec![Dnat {
            input,
            proto: Proto::Tcp,
            dst: Some(WAN_ADDR),
            dport: 8022,
            dport_max: 8022,
            to: (HOST2, 22),
            src_ip: vec![],
            snat,
            time: None,
        }],
        ..Config::default()
    })
}

// ---- packet building ----

fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, payload: &[u8]) -> Vec<u8> {
    let len = 20 + payload.len();
    let mut p = vec![
        0x45,
        0,
        (len >> 8) as u8,
        len as u8,
        0x1c,
        0x46,
        0x40,
        0,
        64,
        proto,
        0,
        0, //
        src[0],
        src[1],
        src[2],
        src[3],
        dst[0],
        dst[1],
        dst[2],
        dst[3],
    ];
    let c = checksum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// The TCP/UDP checksum over the pseudo-header and `seg` (its checksum field must be 0).
fn l4_checksum(src: [u8; 4], dst: [u8; 4], proto: u8, seg: &[u8]) -> u16 {
    let s = sum(sum(0, &src), &dst) + u32::from(proto) + seg.len() as u32;
    !fold(sum(s, seg))
}

fn pseudo_sum(src: [u8; 4], dst: [u8; 4], proto: u8, len: usize) -> u16 {
    fold(sum(sum(0, &src), &dst) + u32::from(proto) + len as u32)
}

/// A TCP segment whose sequence numbers fit one connection, as window tracking
/// wants them: the client (the higher port) starts at 0x1000_0000, the server at
/// 0x2000_0000; a SYN carries the initial number, anything later that plus one, and
/// an ACK acknowledges the other side's SYN (data repeats as retransmissions do).
fn tcp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, flags: u8, data: &[u8]) -> Vec<u8> {
    let (isn, peer) = if sport > dport {
        (0x1000_0000u32, 0x2000_0000u32)
    } else {
        (0x2000_0000, 0x1000_0000)
    };
    let seq = if flags & 0x02 != 0 { isn } else { isn + 1 };
    let ack = if flags & 0x10 != 0 { peer + 1 } else { 0 };
    tcp_seq(src, sport, dst, dport, flags, (seq, ack), data)
}

/// A TCP segment with the sequence and acknowledgement numbers given.
fn tcp_seq(
    src: [u8; 4],
    sport: u16,
    dst: [u8; 4],
    dport: u16,
    flags: u8,
    (seq, ack): (u32, u32),
    data: &[u8],
) -> Vec<u8> {
    let mut seg = Vec::new();
    seg.extend_from_slice(&sport.to_be_bytes());
    seg.extend_from_slice(&dport.to_be_bytes());
    seg.extend_from_slice(&seq.to_be_bytes());
    seg.extend_from_slice(&ack.to_be_bytes());
    seg.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    seg.extend_from_slice(data);
    let c = l4_checksum(src, dst, 6, &seg);
    seg[16..18].copy_from_slice(&c.to_be_bytes());
    ipv4(src, dst, 6, &seg)
}

fn udp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, data: &[u8]) -> Vec<u8> {
    let len = 8 + data.len();
    let mut seg = Vec::new();
    seg.extend_from_slice(&sport.to_be_bytes());
    seg.extend_from_slice(&dport.to_be_bytes());
    seg.extend_from_slice(&(len as u16).to_be_bytes());
    seg.extend_from_slice(&[0, 0]);
    seg.extend_from_slice(data);
    let mut c = l4_checksum(src, dst, 17, &seg);
    if c == 0 {
        c = 0xffff;
    }
    seg[6..8].copy_from_slice(&c.to_be_bytes());
    ipv4(src, dst, 17, &seg)
}

fn icmp(src: [u8; 4], dst: [u8; 4], ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(body);
    let c = checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    ipv4(src, dst, 1, &m)
}

fn echo(src: [u8; 4], dst: [u8; 4], ty: u8, id: u16, seq: u16) -> Vec<u8> {
    let [a, b] = id.to_be_bytes();
    let [c, d] = seq.to_be_bytes();
    icmp(src, dst, ty, 0, [a, b, c, d], b"ping payload")
}

/// An ICMP error from `from` to `to` quoting the first `quote` bytes after the IP
/// header of `about`.
fn icmp_error(from: [u8; 4], to: [u8; 4], ty: u8, code: u8, about: &[u8], quote: usize) -> Vec<u8> {
    let end = (20 + quote).min(about.len());
    icmp(from, to, ty, code, [0; 4], &about[..end])
}

// ---- checking ----

fn addr(p: &[u8], off: usize) -> [u8; 4] {
    [p[off], p[off + 1], p[off + 2], p[off + 3]]
}

fn word(p: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([p[off], p[off + 1]])
}

/// Every checksum of the packet verifies (a UDP checksum of 0 is "none"); for an ICMP
/// error, the quoted IP header's too.
fn checksums_ok(p: &[u8]) -> bool {
    let Some(ihl) = p.first().map(|b| usize::from(b & 0x0f) * 4) else {
        return false;
    };
    if ihl < 20 || p.len() < ihl || checksum(&p[..ihl]) != 0 {
        return false;
    }
    let (src, dst, proto) = (addr(p, 12), addr(p, 16), p[9]);
    let seg = &p[ihl..];
    let fragment = word(p, 6) & 0x3fff != 0;
    if fragment {
        return true;
    }
    match proto {
        6 if seg.len() >= 20 => {
            let mut s = seg.to_vec();
            s[16] = 0;
            s[17] = 0;
            word(seg, 16) == l4_checksum(src, dst, 6, &s)
        }
        17 if seg.len() >= 8 => {
            if word(seg, 6) == 0 {
                return true;
            }
            let mut s = seg.to_vec();
            s[6] = 0;
            s[7] = 0;
            let mut c = l4_checksum(src, dst, 17, &s);
            if c == 0 {
                c = 0xffff;
            }
            word(seg, 6) == c
        }
        1 if seg.len() >= 8 => {
            if checksum(seg) != 0 {
                return false;
            }
            if matches!(seg[0], 3 | 11 | 12) && seg.len() >= 28 {
                let qihl = usize::from(seg[8] & 0x0f) * 4;
                return qihl >= 20 && seg.len() >= 8 + qihl && checksum(&seg[8..8 + qihl]) == 0;
            }
            true
        }
        6 | 17 | 1 => false,
        _ => true,
    }
}

fn verify(p: &[u8]) {
    assert!(checksums_ok(p), "checksums of {p:02x?}");
}

/// LAN -> WAN through both hooks.
fn out(nf: &mut Netfilter, p: &mut [u8], now: Millis) -> HookVerdict {
    match nf.prerouting(p, &meta(LAN, None, now)) {
        HookVerdict::Accept => nf.postrouting(p, &meta(LAN, Some(WAN), now)),
        d => d,
    }
}

/// WAN -> LAN through both hooks.
fn back(nf: &mut Netfilter, p: &mut [u8], now: Millis) -> HookVerdict {
    match nf.prerouting(p, &meta(WAN, None, now)) {
        HookVerdict::Accept => nf.postrouting(p, &meta(WAN, Some(LAN), now)),
        d => d,
    }
}

const OK: HookVerdict = HookVerdict::Accept;

fn sport(p: &[u8]) -> u16 {
    word(p, 22 - 2)
}

fn icmp_id(p: &[u8]) -> u16 {
    word(p, 24)
}

fn counters_add_up(nf: &Netfilter) {
    let s = nf.stats();
    assert_eq!(
        s.new,
        nf.count() as u64 + s.evicted + s.dropped_full + s.expired + s.flushed + s.reopened,
        "{s:?} live {}",
        nf.count()
    );
}

/// Segments of the TCP flow HOST1:`sport` -> SERVER:`dport`, each `(from the LAN,
/// flags, time)`: out from the LAN, or back from the WAN (to WAN_ADDR, the port
/// kept); each accepted.
fn tcp_exchange(nf: &mut Netfilter, sport: u16, dport: u16, steps: &[(bool, u8, Millis)]) {
    for &(lan, flags, now) in steps {
        let v = if lan {
            out(nf, &mut tcp(HOST1, sport, SERVER, dport, flags, b""), now)
        } else {
            back(
                nf,
                &mut tcp(SERVER, dport, WAN_ADDR, sport, flags, b""),
                now,
            )
        };
        assert_eq!(v, OK, "{flags:#x}");
    }
}

/// HOST2's UDP from `port` to SERVER:`dport`, out first: the WAN address's `port` is
/// taken when HOST1 sends from the same port.
fn host2_takes_udp_port(nf: &mut Netfilter, port: u16, dport: u16) {
    let mut x = udp(HOST2, port, SERVER, dport, b"");
    assert_eq!(out(nf, &mut x, 0), OK);
}

// ---- tests ----

#[test]
fn udp_masquerade_both_ways_restores_the_reply() {
    let mut nf = netfilter(64);
    let orig = udp(HOST1, 40000, SERVER, 53, b"query");
    let mut p = orig.clone();
    assert_eq!(out(&mut nf, &mut p, 0), OK);
    verify(&p);
    assert_eq!(addr(&p, 12), WAN_ADDR);
    assert_eq!(sport(&p), 40000, "port preserved when free");
    assert_eq!(&p[16..20], &SERVER);
    assert_eq!(&p[28..], b"query");

    // the server answers the external endpoint; the LAN host must get exactly what it
    // would have got without NAT
    let mut r = udp(SERVER, 53, WAN_ADDR, 40000, b"answer!");
    assert_eq!(back(&mut nf, &mut r, 10), OK);
    verify(&r);
    assert_eq!(r, udp(SERVER, 53, HOST1, 40000, b"answer!"));
    let e = nf
        .conntrack()
        .lookup_view(&to_server(40000, 53, Proto::Udp));
    assert!(e.is_some_and(|e| e.status() & status::SEEN_REPLY != 0));
}

#[test]
fn masquerade_never_hands_out_the_routers_own_ports() {
    let mut nf = netfilter(64);
    // A LAN host whose source port is one the router's DNS forwarder or stack may
    // use (or its DHCP client's 68) gets another port on the WAN address.
    for (i, sp) in [53000u16, 49152, 65535, 68].into_iter().enumerate() {
        let mut p = udp(HOST1, sp, SERVER, 53, b"q");
        assert_eq!(out(&mut nf, &mut p, i as u64), OK);
        let got = sport(&p);
        assert!(
            !crate::nat::is_router_port(got) && (1024..49152).contains(&got),
            "{sp} -> {got}"
        );
    }
    // a port outside is kept
    let mut p = udp(HOST1, 40000, SERVER, 53, b"q");
    assert_eq!(out(&mut nf, &mut p, 9), OK);
    assert_eq!(sport(&p), 40000);
}

#[test]
fn tcp_masquerade_both_ways_restores_the_reply() {
    let mut nf = netfilter(64);
    let mut p = tcp(HOST1, 41000, SERVER, 443, SYN, b"");
    assert_eq!(out(&mut nf, &mut p, 0), OK);
    verify(&p);
    assert_eq!((addr(&p, 12), sport(&p)), (WAN_ADDR, 41000));
    let mut r = tcp(SERVER, 443, WAN_ADDR, 41000, SYN | ACK, b"");
    assert_eq!(back(&mut nf, &mut r, 1), OK);
    assert_eq!(r, tcp(SERVER, 443, HOST1, 41000, SYN | ACK, b""));
    let mut p = tcp(
        HOST1,
        41000,
        SERVER,
        443,
        ACK | PSH,
        b"GET / HTTP/1.1\r\n\r\n",
    );
    assert_eq!(out(&mut nf, &mut p, 2), OK);
    verify(&p);
    assert_eq!(
        p,
        tcp(
            WAN_ADDR,
            41000,
            SERVER,
            443,
            ACK | PSH,
            b"GET / HTTP/1.1\r\n\r\n"
        )
    );
}

#[test]
fn two_hosts_same_source_port_get_distinct_external_ports() {
    let mut nf = netfilter(64);
    let mut a = udp(HOST1, 5000, SERVER, 3478, b"a");
    let mut b = udp(HOST2, 5000, SERVER, 3478, b"b");
    assert_eq!(out(&mut nf, &mut a, 0), OK);
    assert_eq!(out(&mut nf, &mut b, 0), OK);
    verify(&a);
    verify(&b);
    assert_eq!(sport(&a), 5000);
    assert_ne!(sport(&b), sport(&a));
    assert!((1024..=65535).contains(&sport(&b)));
    // each reply reaches its own host
    let mut ra = udp(SERVER, 3478, WAN_ADDR, sport(&a), b"ra");
    let mut rb = udp(SERVER, 3478, WAN_ADDR, sport(&b), b"rb");
    assert_eq!(back(&mut nf, &mut ra, 1), OK);
    assert_eq!(back(&mut nf, &mut rb, 1), OK);
    assert_eq!(ra, udp(SERVER, 3478, HOST1, 5000, b"ra"));
    assert_eq!(rb, udp(SERVER, 3478, HOST2, 5000, b"rb"));
}

#[test]
fn same_internal_endpoint_keeps_its_external_port_for_every_destination() {
    let mut nf = netfilter(64);
    // HOST2 takes 7000 first, so HOST1's 7000 cannot be preserved
    host2_takes_udp_port(&mut nf, 7000, 1);
    let mut a = udp(HOST1, 7000, SERVER, 1, b"");
    let mut b = udp(HOST1, 7000, SERVER2, 2, b"");
    let mut c = udp(HOST1, 7000, SERVER2, 3, b"");
    for p in [&mut a, &mut b, &mut c] {
        assert_eq!(out(&mut nf, p, 0), OK);
        verify(p);
    }
    assert_ne!(sport(&a), 7000);
    assert_eq!(
        sport(&a),
        sport(&b),
        "EIM: same mapping towards another host"
    );
    assert_eq!(
        sport(&a),
        sport(&c),
        "EIM: same mapping towards another port"
    );
    // TCP mappings are separate from UDP ones: TCP 7000 is free
    let mut t = tcp(HOST1, 7000, SERVER, 80, SYN, b"");
    assert_eq!(out(&mut nf, &mut t, 0), OK);
    assert_eq!(sport(&t), 7000);
}

#[test]
fn icmp_echo_ids_translated_and_replies_restored() {
    let mut nf = netfilter(64);
    let mut a = echo(HOST1, SERVER, 8, 0x1234, 1);
    let mut b = echo(HOST2, SERVER, 8, 0x1234, 1);
    assert_eq!(out(&mut nf, &mut a, 0), OK);
    assert_eq!(out(&mut nf, &mut b, 0), OK);
    verify(&a);
    verify(&b);
    assert_eq!(addr(&a, 12), WAN_ADDR);
    assert_eq!(addr(&b, 12), WAN_ADDR);
    assert_eq!(icmp_id(&a), 0x1234);
    assert_ne!(icmp_id(&b), 0x1234);
    let mut rb = echo(SERVER, WAN_ADDR, 0, icmp_id(&b), 1);
    assert_eq!(back(&mut nf, &mut rb, 1), OK);
    assert_eq!(rb, echo(SERVER, HOST2, 0, 0x1234, 1));
    let mut ra = echo(SERVER, WAN_ADDR, 0, 0x1234, 1);
    assert_eq!(back(&mut nf, &mut ra, 1), OK);
    assert_eq!(ra, echo(SERVER, HOST1, 0, 0x1234, 1));
    // an echo reply for no request is INVALID: not forwarded to the LAN, and untouched
    let mut stray = echo(SERVER, WAN_ADDR, 0, 0x9999, 1);
    let before = stray.clone();
    assert_eq!(
        back(&mut nf, &mut stray, 1),
        OK,
        "goes to the router itself"
    );
    assert_eq!(stray, before);
    // an echo request from outside to the router is not a masqueraded flow either
    let mut req = echo(SERVER, WAN_ADDR, 8, icmp_id(&b), 7);
    let before = req.clone();
    assert_eq!(nf.prerouting(&mut req, &meta(WAN, None, 2)), OK);
    assert_eq!(req, before);
}

#[test]
fn icmp_port_unreachable_reaches_the_lan_host_with_its_own_header() {
    let mut nf = netfilter(64);
    // make 6000 taken so the port is translated too
    host2_takes_udp_port(&mut nf, 6000, 9);
    let orig = udp(HOST1, 6000, SERVER, 9999, b"datagram payload");
    let mut p = orig.clone();
    assert_eq!(out(&mut nf, &mut p, 0), OK);
    let ext = sport(&p);
    assert_ne!(ext, 6000);
    for (from, quote) in [(SERVER, 8), (ROUTER_UPSTREAM, 8), (SERVER, 1000)] {
        // the server (or a router on the way) quotes what it received
        let mut err = icmp_error(from, WAN_ADDR, 3, 3, &p, quote);
        verify(&err);
        assert_eq!(back(&mut nf, &mut err, 1), OK);
        verify(&err);
        assert_eq!(addr(&err, 12), from, "outer source untouched");
        assert_eq!(addr(&err, 16), HOST1);
        let q = &err[28..];
        let n = q.len();
        assert_eq!(
            q,
            &orig[..n],
            "the host sees its own packet quoted ({quote} bytes)"
        );
    }
    let s = *nf.stats();
    assert_eq!(s.icmp_related, 3);
}

#[test]
fn an_icmp_error_about_a_flow_sent_to_another_host_is_invalid() {
    // A server knows its client's flow as the router's WAN address and port: it
    // must not get "related" errors, with a payload, delivered to another LAN host
    // by addressing them there (Linux: nf_conntrack_inet_error, outer daddr check).
    let mut nf = netfilter(64);
    let mut p = udp(HOST1, 6300, SERVER, 9999, b"datagram");
    assert_eq!(out(&mut nf, &mut p, 0), OK);
    for to in [HOST2, HOST1, [10, 0, 0, 1]] {
        let before = *nf.stats();
        let mut err = icmp_error(SERVER, to, 3, 3, &p, 8);
        let sent = err.clone();
        let _ = back(&mut nf, &mut err, 1);
        let s = *nf.stats();
        assert_eq!(s.icmp_misdirected, before.icmp_misdirected + 1, "to {to:?}");
        assert_eq!(s.icmp_related, before.icmp_related, "not RELATED");
        assert_eq!(err, sent, "not translated");
    }
    // addressed to the flow's end (the WAN address), it is
    let mut err = icmp_error(SERVER, WAN_ADDR, 3, 3, &p, 8);
    assert_eq!(back(&mut nf, &mut err, 1), OK);
    assert_eq!(addr(&err, 16), HOST1);
    assert_eq!(nf.stats().icmp_related, 1);
}

/// A SYN from HOST1 port `port` to SERVER:80 sent out after HOST2's SYN from the same
/// port took that port on the WAN address: (the SYN, as sent by HOST1 and as it
/// left, with another source port).
fn syn_with_its_port_taken(nf: &mut Netfilter, port: u16) -> (Vec<u8>, Vec<u8>) {
    let mut x = tcp(HOST2, port, SERVER, 80, SYN, b"");
    assert_eq!(out(nf, &mut x, 0), OK);
    let orig = tcp(HOST1, port, SERVER, 80, SYN, b"");
    let mut p = orig.clone();
    assert_eq!(out(nf, &mut p, 0), OK);
    assert_ne!(sport(&p), port);
    (orig, p)
}

#[test]
fn icmp_error_about_tcp_and_echo_flows() {
    let mut nf = netfilter(64);
    let (orig, p) = syn_with_its_port_taken(&mut nf, 6100);
    // time exceeded from a router on the way, quoting the whole segment (RFC 1812):
    // the quoted TCP checksum is restored too
    let mut err = icmp_error(ROUTER_UPSTREAM, WAN_ADDR, 11, 0, &p, 40);
    assert_eq!(back(&mut nf, &mut err, 1), OK);
    verify(&err);
    assert_eq!(&err[28..], &orig[..]);

    let orig = echo(HOST1, SERVER, 8, 77, 1);
    let mut x = echo(HOST2, SERVER, 8, 77, 1);
    assert_eq!(out(&mut nf, &mut x, 0), OK);
    let mut p = orig.clone();
    assert_eq!(out(&mut nf, &mut p, 0), OK);
    assert_ne!(icmp_id(&p), 77);
    let mut err = icmp_error(ROUTER_UPSTREAM, WAN_ADDR, 3, 1, &p, 8);
    assert_eq!(back(&mut nf, &mut err, 1), OK);
    verify(&err);
    assert_eq!(&err[28..], &orig[..28]);
}

#[test]
fn icmp_error_from_the_lan_about_a_reply_is_masqueraded() {
    let mut nf = netfilter(64);
    host2_takes_udp_port(&mut nf, 6200, 9);
    let mut p = udp(HOST1, 6200, SERVER, 5353, b"hello");
    assert_eq!(out(&mut nf, &mut p, 0), OK);
    let ext = sport(&p);
    let wire_reply = udp(SERVER, 5353, WAN_ADDR, ext, b"reply");
    let mut r = wire_reply.clone();
    assert_eq!(back(&mut nf, &mut r, 1), OK);
    // the host's socket is gone: it sends port unreachable quoting what it got
    let mut err = icmp_error(HOST1, SERVER, 3, 3, &r, 8);
    assert_eq!(out(&mut nf, &mut err, 2), OK);
    verify(&err);
    assert_eq!(addr(&err, 12), WAN_ADDR);
    assert_eq!(
        &err[28..],
        &wire_reply[..28],
        "the server sees what it sent"
    );
}

#[test]
fn invalid_packets_never_leave_the_masquerading_interface() {
    let mut nf = netfilter(64);
    for flags in [ACK, FIN | ACK, RST, ACK | PSH, SYN | ACK, SYN | FIN, 0] {
        let mut p = tcp(HOST1, 33000, SERVER, 80, flags, b"x");
        assert_eq!(
            out(&mut nf, &mut p, 0),
            HookVerdict::Drop(DropReason::Invalid),
            "flags {flags:#x}"
        );
        // routed between two non-masquerading interfaces it goes on untouched
        let mut q = tcp(HOST1, 33000, SERVER, 80, flags, b"x");
        let before = q.clone();
        assert_eq!(nf.prerouting(&mut q, &meta(LAN, None, 0)), OK);
        assert_eq!(nf.postrouting(&mut q, &meta(LAN, Some(IfId(2)), 0)), OK);
        assert_eq!(q, before);
    }
    // an ICMP error about no flow, an echo reply, a timestamp request
    let about = udp(SERVER, 53, HOST1, 1234, b"");
    for mut p in [
        icmp_error(HOST1, SERVER, 3, 3, &about, 8),
        echo(HOST1, SERVER, 0, 5, 5),
        icmp(HOST1, SERVER, 13, 0, [0, 1, 0, 1], &[0; 12]),
    ] {
        assert_eq!(
            out(&mut nf, &mut p, 0),
            HookVerdict::Drop(DropReason::Invalid)
        );
    }
    assert_eq!(nf.count(), 0);
    assert_eq!(nf.stats().leak_blocked, 10);
}

#[test]
fn tcp_lifecycle_through_fin_with_its_timeouts() {
    let mut nf = netfilter(64);
    let t = *nf.conntrack().timeouts();
    let key = to_server(40000, 5201, Proto::Tcp);
    let state = |nf: &Netfilter| {
        let e = nf.conntrack().lookup_view(&key).unwrap();
        (
            e.tcp_state().unwrap(),
            e.deadline(),
            e.status() & status::ASSURED != 0,
        )
    };
    let mut now = 1000;
    let steps: [(bool, u8, TcpState, Millis, bool); 7] = [
        (false, SYN, TcpState::SynSent, t.tcp_syn_sent, false),
        (true, SYN | ACK, TcpState::SynRecv, t.tcp_syn_recv, false),
        (false, ACK, TcpState::Established, t.tcp_established, true),
        (false, FIN | ACK, TcpState::FinWait, t.tcp_fin_wait, true),
        (true, ACK, TcpState::CloseWait, t.tcp_close_wait, true),
        (true, FIN | ACK, TcpState::LastAck, t.tcp_last_ack, true),
        (false, ACK, TcpState::TimeWait, t.tcp_time_wait, true),
    ];
    for (is_reply, flags, want, timeout, assured) in steps {
        now += 100;
        let v = if is_reply {
            let mut p = tcp(SERVER, 5201, WAN_ADDR, 40000, flags, b"");
            back(&mut nf, &mut p, now)
        } else {
            let mut p = tcp(HOST1, 40000, SERVER, 5201, flags, b"");
            out(&mut nf, &mut p, now)
        };
        assert_eq!(v, OK, "{want:?}");
        assert_eq!(
            state(&nf),
            (want, now + timeout, assured),
            "after flags {flags:#x}"
        );
    }
    assert_eq!(t.tcp_established, 7440 * S);
    assert_eq!(t.tcp_time_wait, 120 * S);
    // TIME_WAIT lasts 120 s, then the entry is gone and its mapping with it
    assert_eq!(nf.expire(now + 120 * S - 1, 64), 0);
    assert_eq!(nf.expire(now + 120 * S, 64), 1);
    assert_eq!(nf.count(), 0);
    let mut late = tcp(SERVER, 5201, WAN_ADDR, 40000, ACK, b"");
    let before = late.clone();
    assert_eq!(
        nf.prerouting(&mut late, &meta(WAN, None, now + 121 * S)),
        OK
    );
    assert_eq!(late, before, "no flow: not translated");
    counters_add_up(&nf);
}

#[test]
fn blind_segments_do_not_touch_a_flow_and_a_syn_in_time_wait_is_a_new_connection() {
    let mut nf = netfilter(64);
    let key = to_server(40001, 22, Proto::Tcp);
    let state = |nf: &Netfilter| nf.conntrack().lookup_view(&key).map(|e| e.tcp_state());
    tcp_exchange(
        &mut nf,
        40001,
        22,
        &[(true, SYN, 1), (false, SYN | ACK, 1), (true, ACK, 1)],
    );
    assert_eq!(state(&nf), Some(Some(TcpState::Established)));
    // A RST or FIN from the WAN with a guessed sequence number: INVALID, and a
    // translated flow's packet cannot go on untranslated: dropped. The flow lives.
    for (flags, seq) in [
        (RST, 0x7777_0000),
        (RST | ACK, 0x2000_0001 + 0x4000_0000),
        (FIN | ACK, 0x6000_0000),
    ] {
        let mut r = tcp_seq(SERVER, 22, WAN_ADDR, 40001, flags, (seq, 0x1000_0001), b"");
        assert_eq!(
            back(&mut nf, &mut r, 2),
            HookVerdict::Drop(DropReason::Invalid),
            "flags {flags:#x} seq {seq:#x}"
        );
    }
    assert_eq!(state(&nf), Some(Some(TcpState::Established)));
    assert_eq!(nf.stats().out_of_window, 3);
    // Closed with FINs, into TIME_WAIT.
    tcp_exchange(
        &mut nf,
        40001,
        22,
        &[(true, FIN | ACK, 3), (false, FIN | ACK, 3), (true, ACK, 3)],
    );
    assert_eq!(state(&nf), Some(Some(TcpState::TimeWait)));
    // A SYN from the server's side now is not part of the old flow: the flow ends
    // and the SYN is a new connection to the router's own address, not translated
    // to the LAN host.
    let mut s = tcp(SERVER, 22, WAN_ADDR, 40001, SYN, b"");
    let _ = back(&mut nf, &mut s, 4);
    assert_eq!(s[16..20], WAN_ADDR, "not sent on to {HOST1:?}");
    assert_eq!(nf.stats().reopened, 1);
    assert_eq!(state(&nf), None);
    counters_add_up(&nf);
}

#[test]
fn tcp_rst_closes_with_the_close_timeout() {
    let mut nf = netfilter(64);
    let key = to_server(40001, 22, Proto::Tcp);
    tcp_exchange(
        &mut nf,
        40001,
        22,
        &[(true, SYN, 0), (false, SYN | ACK, 1), (true, ACK, 2)],
    );
    let mut r = tcp(SERVER, 22, WAN_ADDR, 40001, RST | ACK, b"");
    assert_eq!(back(&mut nf, &mut r, 5000), OK);
    assert_eq!(
        r,
        tcp(SERVER, 22, HOST1, 40001, RST | ACK, b""),
        "the RST is delivered"
    );
    let e = nf.conntrack().lookup_view(&key).unwrap();
    assert_eq!(e.tcp_state(), Some(TcpState::Close));
    assert_eq!(e.deadline(), 5000 + 10 * S);
    // an ACK after the RST is still recognised (CLOSE), but the entry dies at 10 s
    let mut p = tcp(HOST1, 40001, SERVER, 22, ACK, b"");
    assert_eq!(out(&mut nf, &mut p, 6000), OK);
    let mut p = tcp(HOST1, 40001, SERVER, 22, ACK, b"");
    assert_eq!(
        out(&mut nf, &mut p, 6000 + 10 * S),
        HookVerdict::Drop(DropReason::Invalid)
    );
    assert_eq!(nf.count(), 0);
    // a new SYN on the same ports opens a new connection
    let mut p = tcp(HOST1, 40001, SERVER, 22, SYN, b"");
    assert_eq!(out(&mut nf, &mut p, 20 * S), OK);
    assert_eq!(sport(&p), 40001);
    counters_add_up(&nf);
}

#[test]
fn udp_expiry_and_stream_timeout() {
    let mut nf = netfilter(64);
    let key = to_server(1111, 53, Proto::Udp);
    let mut p = udp(HOST1, 1111, SERVER, 53, b"q");
    assert_eq!(out(&mut nf, &mut p, 0), OK);
    let e = nf.conntrack().lookup_view(&key).unwrap();
    assert_eq!(e.deadline(), 60 * S);
    let mut r = udp(SERVER, 53, WAN_ADDR, 1111, b"a");
    assert_eq!(back(&mut nf, &mut r, 59 * S), OK);
    assert_eq!(addr(&r, 16), HOST1, "alive at 59 s");
    let e = nf.conntrack().lookup_view(&key).unwrap();
    assert_eq!(
        e.status() & status::ASSURED,
        0,
        "one exchange is not a stream"
    );
    // a further packet after the reply: stream, assured, 180 s
    let mut p = udp(HOST1, 1111, SERVER, 53, b"q2");
    assert_eq!(out(&mut nf, &mut p, 60 * S), OK);
    let e = nf.conntrack().lookup_view(&key).unwrap();
    assert_eq!(e.deadline(), 240 * S);
    assert_ne!(e.status() & status::ASSURED, 0);
    // lazily reclaimed by the lookup of a late reply, which is then not translated
    let mut r = udp(SERVER, 53, WAN_ADDR, 1111, b"late");
    let before = r.clone();
    assert_eq!(nf.prerouting(&mut r, &meta(WAN, None, 240 * S)), OK);
    assert_eq!(r, before);
    assert_eq!(nf.count(), 0);
    assert_eq!(nf.stats().expired, 1);
    counters_add_up(&nf);
}

#[test]
fn flood_of_new_flows_keeps_the_table_full_and_established_flows_alive() {
    const N: usize = 64;
    let mut nf = netfilter(N);
    // a few established TCP connections and UDP streams
    let mut established = Vec::new();
    for i in 0..6u16 {
        let port = 20000 + i;
        let mut p = tcp(HOST1, port, SERVER, 443, SYN, b"");
        assert_eq!(out(&mut nf, &mut p, 0), OK);
        let mut r = tcp(SERVER, 443, WAN_ADDR, port, SYN | ACK, b"");
        assert_eq!(back(&mut nf, &mut r, 0), OK);
        let mut p = tcp(HOST1, port, SERVER, 443, ACK, b"");
        assert_eq!(out(&mut nf, &mut p, 0), OK);
        established.push((Proto::Tcp, port));
    }
    for i in 0..4u16 {
        let port = 30000 + i;
        let mut p = udp(HOST1, port, SERVER, 4500, b"");
        assert_eq!(out(&mut nf, &mut p, 0), OK);
        let mut r = udp(SERVER, 4500, WAN_ADDR, port, b"");
        assert_eq!(back(&mut nf, &mut r, 0), OK);
        let mut p = udp(HOST1, port, SERVER, 4500, b"");
        assert_eq!(out(&mut nf, &mut p, 0), OK);
        established.push((Proto::Udp, port));
    }
    // 10 x N new flows, unanswered
    let mut x = 0x1234_5678u32;
    for i in 0..10 * N as u32 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let host = [10, 9, (i >> 8) as u8, i as u8];
        let mut p = udp(host, (x as u16) | 1024, SERVER2, 53, b"flood");
        assert_eq!(out(&mut nf, &mut p, 1 + u64::from(i)), OK);
        assert!(nf.count() <= N);
    }
    assert_eq!(nf.count(), N);
    let s = *nf.stats();
    assert_eq!(s.new, 10 + 10 * N as u64);
    assert_eq!(s.evicted, 10 * N as u64 - (N as u64 - 10));
    counters_add_up(&nf);
    // the established flows still translate
    for (proto, port) in established {
        let mut r = match proto {
            Proto::Tcp => tcp(SERVER, 443, WAN_ADDR, port, ACK, b"data"),
            _ => udp(SERVER, 4500, WAN_ADDR, port, b"data"),
        };
        assert_eq!(back(&mut nf, &mut r, 10_000), OK);
        assert_eq!(addr(&r, 16), HOST1, "{proto:?} {port}");
        verify(&r);
    }
}

#[test]
fn a_table_of_assured_flows_refuses_new_ones() {
    let mut nf = netfilter(4);
    for port in 1..=4u16 {
        let mut p = udp(HOST1, port + 100, SERVER, 9, b"");
        assert_eq!(out(&mut nf, &mut p, 0), OK);
        let mut r = udp(SERVER, 9, WAN_ADDR, port + 100, b"");
        assert_eq!(back(&mut nf, &mut r, 0), OK);
        let mut p = udp(HOST1, port + 100, SERVER, 9, b"");
        assert_eq!(out(&mut nf, &mut p, 0), OK);
    }
    let mut p = udp(HOST2, 999, SERVER, 9, b"");
    assert_eq!(
        out(&mut nf, &mut p, 1),
        HookVerdict::Drop(DropReason::ConntrackFull)
    );
    assert_eq!(nf.stats().dropped_full, 1);
    counters_add_up(&nf);
    // once they expire, room comes back by itself
    let mut p = udp(HOST2, 999, SERVER, 9, b"");
    assert_eq!(out(&mut nf, &mut p, 180 * S), OK);
    counters_add_up(&nf);
}

#[test]
fn address_change_flushes_the_old_mappings() {
    let mut nf = netfilter(64);
    let mut p = udp(HOST1, 4444, SERVER, 9, b"");
    assert_eq!(out(&mut nf, &mut p, 0), OK);
    let mut q = tcp(HOST2, 4445, SERVER, 9, SYN, b"");
    assert_eq!(out(&mut nf, &mut q, 0), OK);
    // a flow that does not leave by the WAN survives
    let mut lan = udp(HOST1, 4446, [10, 1, 1, 1], 9, b"");
    assert_eq!(nf.prerouting(&mut lan, &meta(LAN, None, 0)), OK);
    assert_eq!(nf.postrouting(&mut lan, &meta(LAN, Some(IfId(2)), 0)), OK);
    assert_eq!(nf.count(), 3);
    assert_eq!(
        nf.set_masquerade_address(WAN, Some(WAN_ADDR)),
        0,
        "same address"
    );
    let new_addr = [100, 64, 0, 9];
    assert_eq!(nf.set_masquerade_address(WAN, Some(new_addr)), 2);
    assert_eq!(nf.count(), 1);
    let mut r = udp(SERVER, 9, WAN_ADDR, 4444, b"");
    let before = r.clone();
    assert_eq!(nf.prerouting(&mut r, &meta(WAN, None, 1)), OK);
    assert_eq!(r, before, "old mapping gone");
    let mut p = udp(HOST1, 4444, SERVER, 9, b"");
    assert_eq!(out(&mut nf, &mut p, 2), OK);
    verify(&p);
    assert_eq!(addr(&p, 12), new_addr);
    // no address (DHCP lease lost): nothing leaves
    assert_eq!(nf.set_masquerade_address(WAN, None), 1);
    let mut p = udp(HOST1, 4444, SERVER, 9, b"");
    assert_eq!(
        out(&mut nf, &mut p, 3),
        HookVerdict::Drop(DropReason::NatExhausted)
    );
    counters_add_up(&nf);
}

#[test]
fn partial_checksum_packets_get_only_the_pseudo_header_adjusted() {
    let mut nf = netfilter(64);
    // take 8080 so the port changes too
    let mut x = tcp(HOST2, 8080, SERVER, 80, SYN, b"");
    assert_eq!(out(&mut nf, &mut x, 0), OK);
    for proto in [6u8, 17] {
        let mut p = if proto == 6 {
            tcp(HOST1, 8080, SERVER, 80, SYN, b"abc")
        } else {
            udp(HOST1, 8080, SERVER, 80, b"abc")
        };
        let off = if proto == 6 { 36 } else { 26 };
        let l4len = p.len() - 20;
        // what a csum_blank packet from a netfront carries: the pseudo-header sum
        let partial = pseudo_sum(HOST1, SERVER, proto, l4len);
        p[off..off + 2].copy_from_slice(&partial.to_be_bytes());
        let m = |o| Meta {
            input: LAN,
            output: o,
            csum_partial: true,
            now: 0,
            src_mac: None,
        };
        assert_eq!(nf.prerouting(&mut p, &m(None)), OK);
        assert_eq!(nf.postrouting(&mut p, &m(Some(WAN))), OK);
        assert_eq!(checksum(&p[..20]), 0);
        assert_eq!(addr(&p, 12), WAN_ADDR);
        if proto == 6 {
            assert_ne!(sport(&p), 8080, "the port was translated");
        }
        assert_eq!(
            word(&p, off),
            pseudo_sum(WAN_ADDR, SERVER, proto, l4len),
            "proto {proto}"
        );
    }
}

#[test]
fn port_forward_rewrites_the_destination_and_the_replies_source() {
    let mut nf = port_forwarding_netfilter(WAN, None);
    let mut p = tcp(SERVER, 50000, WAN_ADDR, 8022, SYN, b"");
    assert_eq!(nf.prerouting(&mut p, &meta(WAN, None, 0)), OK);
    assert_eq!(p, tcp(SERVER, 50000, HOST2, 22, SYN, b""));
    assert_eq!(nf.postrouting(&mut p, &meta(WAN, Some(LAN), 0)), OK);
    let mut r = tcp(HOST2, 22, SERVER, 50000, SYN | ACK, b"");
    assert_eq!(out(&mut nf, &mut r, 1), OK);
    assert_eq!(r, tcp(WAN_ADDR, 8022, SERVER, 50000, SYN | ACK, b""));
    let mut listing = String::new();
    nf.for_each(1, |v| listing.push_str(&format!("{v}")));
    assert!(
        listing.contains("src=198.51.100.10 dst=203.0.113.2 sport=50000 dport=8022"),
        "{listing}"
    );
    assert!(
        listing.contains("src=192.168.1.101 dst=198.51.100.10 sport=22 dport=50000"),
        "{listing}"
    );
}

#[test]
fn reflected_clients_with_the_same_port_get_their_own_source_port() {
    // NAT reflection: LAN clients reaching WAN_ADDR:8022 are sent to HOST2:22 from
    // the router's LAN address. Two clients using the same source port would make
    // the same reply tuple (HOST2:22 -> R_LAN:40000): the second flow gets another
    // port, as Linux's nf_nat_unique_tuple picks one.
    const R_LAN: [u8; 4] = [192, 168, 1, 1];
    const HOST3: [u8; 4] = [192, 168, 1, 102];
    let mut nf = port_forwarding_netfilter(LAN, Some(R_LAN));
    let lan_to_lan = |nf: &mut Netfilter, p: &mut [u8]| match nf.prerouting(p, &meta(LAN, None, 0))
    {
        HookVerdict::Accept => nf.postrouting(p, &meta(LAN, Some(LAN), 0)),
        d => d,
    };
    let mut a = tcp(HOST1, 40000, WAN_ADDR, 8022, SYN, b"");
    assert_eq!(lan_to_lan(&mut nf, &mut a), OK);
    // the first keeps its port
    assert_eq!(a, tcp(R_LAN, 40000, HOST2, 22, SYN, b""));
    let mut b = tcp(HOST3, 40000, WAN_ADDR, 8022, SYN, b"");
    assert_eq!(lan_to_lan(&mut nf, &mut b), OK, "the second client's flow");
    let port_b = sport(&b);
    assert_ne!(port_b, 40000);
    assert!(!crate::nat::is_router_port(port_b));
    assert_eq!(b, tcp(R_LAN, port_b, HOST2, 22, SYN, b""));
    // each server reply goes back to its own client, from the forwarded address
    for (port, client) in [(40000, HOST1), (port_b, HOST3)] {
        let mut r = tcp(HOST2, 22, R_LAN, port, SYN | ACK, b"");
        assert_eq!(lan_to_lan(&mut nf, &mut r), OK);
        assert_eq!(r, tcp(WAN_ADDR, 8022, client, 40000, SYN | ACK, b""));
    }
    // a client port that is one of the router's own is not kept either
    let mut c = tcp(HOST1, 53000, WAN_ADDR, 8022, SYN, b"");
    assert_eq!(lan_to_lan(&mut nf, &mut c), OK);
    assert!(!crate::nat::is_router_port(sport(&c)));
    assert_eq!(nf.stats().clash, 0);
    counters_add_up(&nf);
}

#[test]
fn conntrack_listing_looks_like_linux() {
    let mut nf = netfilter(64);
    tcp_exchange(
        &mut nf,
        40000,
        5201,
        &[(true, SYN, 0), (false, SYN | ACK, 0), (true, ACK, 1000)],
    );
    let mut u = udp(HOST2, 5353, SERVER2, 53, b"");
    assert_eq!(out(&mut nf, &mut u, 1000), OK);
    let mut e = echo(HOST2, SERVER2, 8, 42, 1);
    assert_eq!(out(&mut nf, &mut e, 1000), OK);
    let mut lines = Vec::new();
    nf.for_each(1500, |v| lines.push(format!("{v}")));
    lines.sort();
    assert_eq!(
        lines,
        [
            "icmp     1 29 src=192.168.1.101 dst=198.51.100.20 type=8 code=0 id=42 packets=1 bytes=40 [UNREPLIED] \
             src=198.51.100.20 dst=203.0.113.2 type=0 code=0 id=42 packets=0 bytes=0 mark=0 use=1",
            "tcp      6 7439 ESTABLISHED src=192.168.1.100 dst=198.51.100.10 sport=40000 dport=5201 packets=2 \
             bytes=80 src=198.51.100.10 dst=203.0.113.2 sport=5201 dport=40000 packets=1 bytes=40 [ASSURED] mark=0 use=1",
            "udp      17 59 src=192.168.1.101 dst=198.51.100.20 sport=5353 dport=53 packets=1 bytes=28 [UNREPLIED] \
             src=198.51.100.20 dst=203.0.113.2 sport=53 dport=5353 packets=0 bytes=0 mark=0 use=1",
        ]
    );
    nf.flush();
    assert_eq!(nf.count(), 0);
    assert_eq!(nf.stats().flushed, 3);
    counters_add_up(&nf);
}

/// xorshift64*: small, seeded, good enough to pick bytes to break.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Makes a mutated packet look like what the core hands over: version 4, a header
/// length that fits, total length = slice length, a valid header checksum.
fn fix_ip_header(p: &mut Vec<u8>) {
    if p.len() < 20 {
        p.resize(20, 0);
    }
    let ihl = usize::from(p[0] & 0x0f).clamp(5, p.len() / 4).min(15);
    p[0] = 0x40 | ihl as u8;
    let len = p.len().min(65535);
    p.truncate(len);
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p[10] = 0;
    p[11] = 0;
    let c = checksum(&p[..ihl * 4]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
}

#[test]
fn random_mutations_never_panic_and_never_leak() {
    let mut nf = netfilter(128);
    let mut rng = Rng(0x00c0_ffee_d00d_f00d);
    let base: Vec<Vec<u8>> = {
        let out_tcp = tcp(HOST1, 1000, SERVER, 80, SYN, b"hello");
        let mut translated = out_tcp.clone();
        let mut nf2 = netfilter(8);
        assert_eq!(out(&mut nf2, &mut translated, 0), OK);
        vec![
            out_tcp,
            tcp(HOST1, 1000, SERVER, 80, ACK, b"hello"),
            udp(HOST1, 1001, SERVER, 53, b"query"),
            udp(SERVER, 53, WAN_ADDR, 1001, b"reply"),
            echo(HOST1, SERVER, 8, 9, 9),
            echo(SERVER, WAN_ADDR, 0, 9, 9),
            icmp_error(
                ROUTER_UPSTREAM,
                WAN_ADDR,
                3,
                3,
                &udp(WAN_ADDR, 1001, SERVER, 53, b"q"),
                8,
            ),
            icmp_error(HOST1, SERVER, 3, 3, &udp(SERVER, 53, HOST1, 1001, b"r"), 8),
            icmp_error(ROUTER_UPSTREAM, WAN_ADDR, 11, 0, &translated, 28),
            ipv4(HOST1, SERVER, 47, b"gre-ish payload"),
        ]
    };
    let mut accepted_out = 0;
    for case in 0..20_000u64 {
        let mut p = base[rng.below(base.len())].clone();
        // mutate a few bytes, sometimes the length
        for _ in 0..rng.below(6) {
            let i = rng.below(p.len());
            p[i] = rng.next() as u8;
        }
        match rng.below(8) {
            0 => p.truncate(rng.below(p.len() + 1)),
            1 => p.extend((0..rng.below(40)).map(|_| rng.next() as u8)),
            _ => {}
        }
        if rng.below(16) != 0 {
            fix_ip_header(&mut p);
        }
        let now = case * 10;
        let valid_before = p.len() >= 20 && checksums_ok(&p);
        let outbound = rng.below(2) == 0;
        let v = if outbound {
            out(&mut nf, &mut p, now)
        } else {
            back(&mut nf, &mut p, now)
        };
        if rng.below(4) == 0 {
            // prerouting alone (the packet went to the router itself)
            let mut q = p.clone();
            let _ = nf.prerouting(&mut q, &meta(WAN, None, now));
        }
        if outbound && v == OK {
            accepted_out += 1;
            assert_eq!(
                addr(&p, 12),
                WAN_ADDR,
                "case {case}: untranslated source leaked: {p:02x?}"
            );
        }
        if v == OK && valid_before {
            assert!(
                checksums_ok(&p),
                "case {case}: checksums broken by translation: {p:02x?}"
            );
        }
        if case % 1000 == 0 {
            nf.expire(now, 64);
        }
        assert!(nf.count() <= 128);
    }
    assert!(
        accepted_out > 1000,
        "the mutations left enough valid packets ({accepted_out})"
    );
    counters_add_up(&nf);
}

/// lan (accept) and wan (reject) zones with a port forward from the WAN's port
/// 8022 to `dest_ip` port 22.
fn firewall_forwarding_8022_to(dest_ip: [u8; 4]) -> crate::firewall::Firewall {
    use crate::firewall::ruleset::{self as rs, Defaults, Redirect, Ruleset, Verdict, Zone};
    let zone = |name: &str, ifc, input| Zone {
        name: name.into(),
        ifaces: vec![ifc],
        input,
        output: Verdict::Accept,
        forward: input,
        masq: false,
        mtu_fix: false,
    };
    let rules = Ruleset {
        defaults: Defaults {
            input: Verdict::Reject,
            output: Verdict::Accept,
            forward: Verdict::Drop,
            syn_flood: None,
            drop_invalid: false,
        },
        zones: vec![
            zone("lan", LAN, Verdict::Accept),
            zone("wan", WAN, Verdict::Reject),
        ],
        forwardings: vec![],
        rules: vec![],
        redirects: vec![Redirect {
            name: "ssh-to-router".into(),
            src: 1,
            protos: vec![6],
            src_dport: rs::PortRange {
                min: 8022,
                max: 8022,
            },
            src_dip: None,
            src_ip: vec![],
            dest: None,
            dest_ip,
            dest_port: rs::PortRange { min: 22, max: 22 },
            reflection: true,
            time: None,
        }],
        iface_names: vec![(LAN, "eth0".into()), (WAN, "eth1".into())],
    };
    let mut fw = crate::firewall::Firewall::new(rules).unwrap();
    fw.set_iface_addr(WAN, Some(WAN_ADDR));
    fw.set_iface_addr(LAN, Some([192, 168, 1, 1]));
    fw
}

#[test]
fn a_port_forward_to_the_router_itself_is_delivered_and_its_replies_translated() {
    // To the router's LAN address, as `dest_ip` names it, or without `dest_ip`.
    for dest_ip in [[192, 168, 1, 1], [0, 0, 0, 0]] {
        let mut nf = Netfilter::new(Config {
            capacity: 16,
            masquerade: wan_masquerade(),
            ..Config::default()
        });
        nf.set_firewall(Some(firewall_forwarding_8022_to(dest_ip)));
        // Without the forward, the WAN's input policy rejects port 22.
        let mut direct = tcp(SERVER, 40000, WAN_ADDR, 22, SYN, b"");
        assert_eq!(nf.prerouting(&mut direct, &meta(WAN, None, 0)), OK);
        assert_eq!(nf.input(&direct, &meta(WAN, None, 0)), HookVerdict::Reject);
        // The forwarded SYN reaches the router's own port 22 at the address of the
        // interface it came in on (where its stack listens), and is accepted.
        let mut p = tcp(SERVER, 50000, WAN_ADDR, 8022, SYN, b"");
        assert_eq!(nf.prerouting(&mut p, &meta(WAN, None, 0)), OK);
        assert_eq!(p, tcp(SERVER, 50000, WAN_ADDR, 22, SYN, b""));
        assert_eq!(
            nf.input(&p, &meta(WAN, None, 0)),
            OK,
            "ct status dnat accept"
        );
        assert_eq!(nf.stats().local_dnat, 1);
        // The local stack's reply leaves with the forwarded port.
        let mut r = tcp(WAN_ADDR, 22, SERVER, 50000, SYN | ACK, b"");
        let rt = crate::firewall::local::tuple_of(&r).unwrap();
        assert!(nf.is_local_dnat_reply(&rt));
        assert_eq!(nf.local_output(&mut r, 1, false), Ok(true));
        assert_eq!(r, tcp(WAN_ADDR, 8022, SERVER, 50000, SYN | ACK, b""));
        verify(&r);
        // The flow's next packet is established (and translated again).
        let mut a = tcp(SERVER, 50000, WAN_ADDR, 8022, ACK, b"");
        assert_eq!(nf.prerouting(&mut a, &meta(WAN, None, 2)), OK);
        assert_eq!(a, tcp(SERVER, 50000, WAN_ADDR, 22, ACK, b""));
        assert_eq!(nf.input(&a, &meta(WAN, None, 2)), OK);
        // Other packets of the router are left alone.
        let mut other = udp(WAN_ADDR, 68, SERVER, 67, b"");
        let before = other.clone();
        assert_eq!(nf.local_output(&mut other, 3, false), Ok(false));
        assert_eq!(other, before);
    }
}

// ---- ICMP errors: reverse translation as Linux's nf_nat_icmp_reply_translation ----

#[test]
fn icmp_error_from_the_wan_about_a_port_forward_reaches_the_lan_server_byte_for_byte() {
    let mut nf = port_forwarding_netfilter(WAN, None);
    let mut syn = tcp(SERVER, 50000, WAN_ADDR, 8022, SYN, b"");
    assert_eq!(back(&mut nf, &mut syn, 0), OK);
    let sent = tcp(HOST2, 22, SERVER, 50000, SYN | ACK, b"");
    let mut wire = sent.clone();
    assert_eq!(out(&mut nf, &mut wire, 1), OK);
    assert_eq!(wire, tcp(WAN_ADDR, 8022, SERVER, 50000, SYN | ACK, b""));
    // a router on the way: time exceeded (whole segment) and frag-needed (8 bytes)
    for (ty, code, quote) in [(11, 0, 40), (3, 4, 8), (12, 0, 28)] {
        let mut err = icmp_error(ROUTER_UPSTREAM, WAN_ADDR, ty, code, &wire, quote);
        assert_eq!(back(&mut nf, &mut err, 2), OK, "type {ty}");
        assert_eq!(
            err,
            icmp_error(ROUTER_UPSTREAM, HOST2, ty, code, &sent, quote),
            "type {ty}: the server sees its own segment quoted"
        );
    }
}

#[test]
fn icmp_error_from_the_lan_about_a_port_forward_leaves_as_the_wan_address_byte_for_byte() {
    let mut nf = port_forwarding_netfilter(WAN, None);
    let wire = tcp(SERVER, 50000, WAN_ADDR, 8022, SYN, b"");
    let mut syn = wire.clone();
    assert_eq!(back(&mut nf, &mut syn, 0), OK);
    // the LAN server (or a LAN router) answers with an error quoting what it got
    for (ty, code, quote) in [(3, 3, 8), (3, 4, 40), (11, 0, 28)] {
        let mut err = icmp_error(HOST2, SERVER, ty, code, &syn, quote);
        assert_eq!(out(&mut nf, &mut err, 1), OK, "type {ty}");
        assert_eq!(
            err,
            icmp_error(WAN_ADDR, SERVER, ty, code, &wire, quote),
            "type {ty}: the client sees what it sent"
        );
    }
}

#[test]
fn icmp_error_with_a_bad_checksum_is_not_translated() {
    // Linux's conntrack verifies the ICMP checksum (nf_conntrack_checksum) and
    // nf_nat_icmp_reply_translation drops what fails: a corrupt error is never
    // translated into a LAN host's (nor out of the WAN with a LAN address quoted)
    let mut nf = netfilter(64);
    let mut p = udp(HOST1, 6400, SERVER, 9999, b"datagram");
    assert_eq!(out(&mut nf, &mut p, 0), OK);
    let mut err = icmp_error(SERVER, WAN_ADDR, 3, 3, &p, 8);
    err[22] ^= 0x40;
    let sent = err.clone();
    let _ = back(&mut nf, &mut err, 1);
    assert_eq!(err, sent, "not translated");
    let s = *nf.stats();
    assert_eq!((s.icmp_bad_checksum, s.icmp_related), (1, 0));
    // from the LAN, about a reply: INVALID, so it never leaves the WAN
    let mut r = udp(SERVER, 9999, WAN_ADDR, sport(&p), b"reply");
    assert_eq!(back(&mut nf, &mut r, 2), OK);
    let mut err = icmp_error(HOST1, SERVER, 3, 3, &r, 8);
    err[23] ^= 0x01;
    assert_eq!(
        out(&mut nf, &mut err, 3),
        HookVerdict::Drop(DropReason::Invalid)
    );
    assert_eq!(nf.stats().icmp_bad_checksum, 2);
    assert_eq!(nf.stats().icmp_related, 0);
}

#[test]
fn icmp_redirect_about_a_translated_flow_is_dropped() {
    // nf_nat_icmp_reply_translation drops a redirect about a NATed flow: a WAN host
    // must not redirect a LAN host's traffic
    let mut nf = netfilter(64);
    let mut p = udp(HOST1, 6500, SERVER, 9999, b"datagram");
    assert_eq!(out(&mut nf, &mut p, 0), OK);
    let gw = ROUTER_UPSTREAM;
    let mut redirect = icmp(ROUTER_UPSTREAM, WAN_ADDR, 5, 1, gw, &p[..28]);
    assert_eq!(
        back(&mut nf, &mut redirect, 1),
        HookVerdict::Drop(DropReason::Invalid)
    );
    assert_eq!(nf.stats().icmp_redirect_dropped, 1);
    assert_eq!(nf.stats().icmp_related, 0);
    // about a flow routed without NAT, it goes on as RELATED, untouched
    let other = IfId(2);
    let mut q = udp(HOST1, 6501, SERVER2, 9999, b"plain");
    assert_eq!(nf.prerouting(&mut q, &meta(LAN, None, 2)), OK);
    assert_eq!(nf.postrouting(&mut q, &meta(LAN, Some(other), 2)), OK);
    let mut redirect = icmp(ROUTER_UPSTREAM, HOST1, 5, 1, gw, &q[..28]);
    let sent = redirect.clone();
    assert_eq!(nf.prerouting(&mut redirect, &meta(other, None, 3)), OK);
    assert_eq!(
        nf.postrouting(&mut redirect, &meta(other, Some(LAN), 3)),
        OK
    );
    assert_eq!(redirect, sent);
    assert_eq!(nf.stats().icmp_redirect_dropped, 1);
}

#[test]
fn icmp_error_quoting_a_cut_tcp_header_leaves_its_checksum_as_linux() {
    // tcp_manip_pkt updates the quoted TCP checksum only when the whole 20-byte
    // header is quoted; with less, the ports change and the checksum stays
    let mut nf = netfilter(64);
    let (orig, p) = syn_with_its_port_taken(&mut nf, 6600);
    for quote in [18, 19] {
        let mut err = icmp_error(ROUTER_UPSTREAM, WAN_ADDR, 11, 0, &p, quote);
        assert_eq!(back(&mut nf, &mut err, 1), OK);
        let mut want = orig[..20 + quote].to_vec();
        want[36..38].copy_from_slice(&p[36..38]);
        assert_eq!(icmp_error(ROUTER_UPSTREAM, HOST1, 11, 0, &want, quote), err);
    }
    // with the whole header it is restored
    let mut err = icmp_error(ROUTER_UPSTREAM, WAN_ADDR, 11, 0, &p, 20);
    assert_eq!(back(&mut nf, &mut err, 2), OK);
    assert_eq!(err, icmp_error(ROUTER_UPSTREAM, HOST1, 11, 0, &orig, 20));
}
