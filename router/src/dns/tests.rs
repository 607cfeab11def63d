//! The forwarder end to end: queries built as `dig` sends them (EDNS OPT with a
//! 1232-byte UDP size), upstream replies built byte by byte, and seeded random
//! mutations of both.

use super::message::{rcode, rtype, Message};
use super::*;
use crate::testutil::XorShift;
use alloc::vec::Vec;
use core::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

const LAN: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);
const MASK: Ipv4Addr = Ipv4Addr::new(255, 255, 255, 0);
const UP1: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(9, 9, 9, 9), 53));
const UP2: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(1, 1, 1, 1), 53));
const CLIENT: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(192, 168, 1, 100), 51234);

struct SeqRng(u32);
impl Rng for SeqRng {
    fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        self.0
    }
}

fn wire(name: &str) -> Vec<u8> {
    name::Name::from_dotted(name).unwrap().as_wire().to_vec()
}

/// A query like `dig NAME TYPE`: RD set, one question, an OPT record.
fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut q = Vec::new();
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x20, 0, 1, 0, 0, 0, 0, 0, 1]);
    q.extend_from_slice(&wire(name));
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&[0, 1]);
    q.extend_from_slice(&[0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0]);
    q
}

/// An upstream reply to `forwarded` with A records `addrs` of TTL `ttl`.
fn reply_a(forwarded: &[u8], addrs: &[[u8; 4]], ttl: u32) -> Vec<u8> {
    let rdata: Vec<&[u8]> = addrs.iter().map(|a| &a[..]).collect();
    let mut r = reply_records(forwarded, 1, ttl, &rdata);
    // Upstream's own OPT record (UDP size 1232), as resolvers send to EDNS queries.
    r[11] = 1;
    r.extend_from_slice(&[0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0]);
    r
}

/// An upstream reply to `forwarded` with an answer record of type `rtype` and
/// TTL `ttl` for each of `rdata`.
fn reply_records(forwarded: &[u8], rtype: u16, ttl: u32, rdata: &[&[u8]]) -> Vec<u8> {
    let m = Message::parse(forwarded).unwrap();
    let mut r = forwarded[..m.question_end].to_vec();
    r[2] = 0x81;
    r[3] = 0x80;
    r[6..8].copy_from_slice(&u16::try_from(rdata.len()).unwrap().to_be_bytes());
    r[10..12].copy_from_slice(&[0, 0]);
    for d in rdata {
        r.extend_from_slice(&[0xC0, 0x0C]);
        r.extend_from_slice(&rtype.to_be_bytes());
        r.extend_from_slice(&[0, 1]);
        r.extend_from_slice(&ttl.to_be_bytes());
        r.extend_from_slice(&u16::try_from(d.len()).unwrap().to_be_bytes());
        r.extend_from_slice(d);
    }
    r
}

/// The LAN's forwarder configuration with the two upstreams.
fn config() -> DnsConfig {
    let mut cfg = DnsConfig::new(LAN, MASK);
    cfg.upstreams = alloc::vec![UP1, UP2];
    cfg
}

fn forwarder() -> DnsForwarder {
    DnsForwarder::new(config())
}

/// What `f` does with `query(id, name, qtype)` from [`CLIENT`] at `now`, with no
/// host table.
fn ask(
    f: &mut DnsForwarder,
    id: u16,
    name: &str,
    qtype: u16,
    now: Millis,
    rng: &mut SeqRng,
) -> Vec<DnsAction> {
    f.handle_query(&query(id, name, qtype), CLIENT, now, rng, &())
}

fn upstream(actions: &[DnsAction]) -> (SocketAddr, u16, Vec<u8>) {
    match actions {
        [DnsAction::ToUpstream {
            upstream,
            source_port,
            packet,
        }] => (*upstream, *source_port, packet.clone()),
        other => panic!("expected one upstream send, got {other:?}"),
    }
}

fn to_client(actions: &[DnsAction]) -> Vec<u8> {
    match actions {
        [DnsAction::ToClient { client, packet }, ..] => {
            assert_eq!(*client, CLIENT.into());
            packet.clone()
        }
        other => panic!("expected a reply to the client, got {other:?}"),
    }
}

#[test]
fn forwarding_rewrites_the_id_and_restores_it() {
    let mut f = forwarder();
    let mut rng = SeqRng(7);
    let q = query(0x1234, "example.com", rtype::A);
    let (server, port, sent) = upstream(&f.handle_query(&q, CLIENT, 0, &mut rng, &()));
    assert_eq!(server, UP1);
    assert!(super::forwarder::PORT_RANGE.contains(&port));
    let new_id = u16::from_be_bytes([sent[0], sent[1]]);
    assert_ne!(new_id, 0x1234);
    assert_eq!(&sent[2..], &q[2..], "only the id changes");
    let r = reply_a(&sent, &[[93, 184, 216, 34]], 3600);
    let out = f.handle_upstream(&r, UP1, port, 50);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1], DnsAction::ClosePort(port));
    let back = to_client(&out);
    assert_eq!(&back[..2], &[0x12, 0x34]);
    assert_eq!(&back[2..], &r[2..]);
    assert_eq!(f.pending_len(), 0);
    let k = f.counters();
    assert_eq!((k.queries, k.forwarded, k.replies), (1, 1, 1));
}

#[test]
fn second_query_is_answered_from_the_cache_with_a_lower_ttl() {
    let mut f = forwarder();
    let mut rng = SeqRng(7);
    let q = query(1, "example.com", rtype::A);
    let (_, port, sent) = upstream(&f.handle_query(&q, CLIENT, 0, &mut rng, &()));
    f.handle_upstream(&reply_a(&sent, &[[93, 184, 216, 34]], 3600), UP1, port, 100);
    // 30 s later, another client asks with another id and a different case.
    let q2 = query(0x7777, "ExAmple.COM", rtype::A);
    let out = f.handle_query(&q2, CLIENT, 30_100, &mut rng, &());
    assert_eq!(out.len(), 1, "no upstream send: {out:?}");
    let hit = to_client(&out);
    let m = Message::parse(&hit).unwrap();
    assert_eq!(m.header.id, 0x7777);
    assert_eq!(m.header.arcount, 1, "an EDNS client keeps the OPT record");
    assert_eq!(m.records[0].ttl, 3570);
    assert_eq!(&hit[m.records[0].rdata.clone()], &[93, 184, 216, 34]);
    assert_eq!(&hit[12..25], &q2[12..25], "the client's spelling is kept");
    assert_eq!(f.counters().cache_hits, 1);
    assert_eq!(f.counters().forwarded, 1);
    // A client without EDNS gets no OPT record back from the cache.
    let mut plain = query(0x0808, "example.com", rtype::A);
    plain.truncate(plain.len() - 11);
    plain[11] = 0;
    let hit = to_client(&f.handle_query(&plain, CLIENT, 31_000, &mut rng, &()));
    let m = Message::parse(&hit).unwrap();
    assert_eq!((m.header.arcount, m.records.len()), (0, 1));
    // After the TTL the entry is gone and the query goes upstream again.
    let out = f.handle_query(&q2, CLIENT, 3_600_200, &mut rng, &());
    upstream(&out);
}

#[test]
fn local_names_are_answered_without_forwarding() {
    let mut f = forwarder();
    let mut rng = SeqRng(1);
    for (name, addr) in [
        ("router.lan", LAN),
        ("OpenWrt", LAN),
        ("openwrt.lan", LAN),
        ("localhost", Ipv4Addr::LOCALHOST),
    ] {
        let out = ask(&mut f, 5, name, rtype::A, 0, &mut rng);
        let r = to_client(&out);
        let m = Message::parse(&r).unwrap();
        assert_eq!(m.header.rcode(), rcode::NOERROR, "{name}");
        assert_eq!(&r[m.records[0].rdata.clone()], &addr.octets(), "{name}");
    }
    // domain-needed: a plain name is not forwarded (NXDOMAIN, as dnsmasq).
    let r = to_client(&ask(&mut f, 6, "printer", rtype::A, 0, &mut rng));
    assert_eq!(r[3] & 0xf, rcode::NXDOMAIN);
    // local=/lan/: an unknown name under .lan is not forwarded.
    let r = to_client(&ask(&mut f, 7, "nobody.lan", rtype::A, 0, &mut rng));
    assert_eq!(r[3] & 0xf, rcode::NXDOMAIN);
    // boguspriv: reverse lookups of private space stay here.
    let r = to_client(&ask(&mut f, 8, "5.0.16.172.in-addr.arpa", rtype::PTR, 0, &mut rng));
    assert_eq!(r[3] & 0xf, rcode::NXDOMAIN);
    // The router's own address has a PTR.
    let r = to_client(&ask(&mut f, 9, "1.1.168.192.in-addr.arpa", rtype::PTR, 0, &mut rng));
    let m = Message::parse(&r).unwrap();
    let (n, _) = name::Name::parse(&r, m.records[0].rdata.start).unwrap();
    assert_eq!(n.to_dotted(), "openwrt.lan");
    assert_eq!(f.counters().forwarded, 0);
    assert_eq!(f.counters().local_answers, 8);
    // A public reverse lookup is forwarded.
    upstream(&ask(&mut f, 10, "8.8.8.8.in-addr.arpa", rtype::PTR, 0, &mut rng));
}

#[test]
fn rebinding_answer_is_dropped_and_counted() {
    let mut f = forwarder();
    let mut rng = SeqRng(3);
    let q = query(0x4242, "evil.example", rtype::A);
    let (_, port, sent) = upstream(&f.handle_query(&q, CLIENT, 0, &mut rng, &()));
    let r = reply_a(&sent, &[[1, 2, 3, 4], [192, 168, 1, 10]], 60);
    let out = f.handle_upstream(&r, UP1, port, 10);
    let back = to_client(&out);
    let m = Message::parse(&back).unwrap();
    assert_eq!(m.header.id, 0x4242);
    assert_eq!(m.header.ancount, 0, "the private address is not passed on");
    assert_eq!(f.counters().dropped_rebind, 1);
    assert_eq!(f.cache_len(), 0, "nor cached");
    assert_eq!(out.last(), Some(&DnsAction::ClosePort(port)));
    // 127.0.0.0/8 is allowed (OpenWrt rebind_localhost).
    let (_, port, sent) = upstream(&ask(&mut f, 2, "rbl.example", rtype::A, 20, &mut rng));
    let back = to_client(&f.handle_upstream(&reply_a(&sent, &[[127, 0, 0, 2]], 60), UP1, port, 30));
    assert_eq!(Message::parse(&back).unwrap().header.ancount, 1);
}

#[test]
fn mismatched_replies_are_ignored() {
    let mut f = forwarder();
    let mut rng = SeqRng(11);
    let q = query(0x0101, "example.org", rtype::A);
    let (_, port, sent) = upstream(&f.handle_query(&q, CLIENT, 0, &mut rng, &()));
    let good = reply_a(&sent, &[[93, 184, 216, 34]], 60);
    // Wrong id.
    let mut bad = good.clone();
    bad[1] ^= 0x55;
    assert!(f.handle_upstream(&bad, UP1, port, 1).is_empty());
    // Wrong server (spoofed source), and a server we did not ask yet.
    let stranger = SocketAddrV4::new(Ipv4Addr::new(6, 6, 6, 6), 53);
    assert!(f.handle_upstream(&good, stranger, port, 1).is_empty());
    assert!(f.handle_upstream(&good, UP2, port, 1).is_empty());
    // Wrong port.
    assert!(f
        .handle_upstream(&good, UP1, port.wrapping_add(1), 1)
        .is_empty());
    // Wrong question (same id, port, server).
    let (_, _, other) = upstream(&ask(&mut f, 9, "example.net", rtype::A, 0, &mut SeqRng(99)));
    let mut wrong_q = reply_a(&other, &[[1, 1, 1, 1]], 60);
    wrong_q[..2].copy_from_slice(&sent[..2]);
    assert!(f.handle_upstream(&wrong_q, UP1, port, 1).is_empty());
    // A query (QR clear) echoed back.
    assert!(f.handle_upstream(&sent, UP1, port, 1).is_empty());
    assert_eq!(f.counters().dropped_no_pending_match, 6);
    // The real one still goes through.
    assert_eq!(
        &to_client(&f.handle_upstream(&good, UP1, port, 2))[..2],
        &[1, 1]
    );
    // And a late duplicate is now unmatched.
    assert!(f.handle_upstream(&good, UP1, port, 3).is_empty());
}

#[test]
fn timeout_tries_the_next_server_then_fails() {
    let mut f = forwarder();
    let mut rng = SeqRng(5);
    let (_, port, sent) = upstream(&ask(&mut f, 3, "slow.example", rtype::A, 0, &mut rng));
    assert_eq!(f.poll_at(), Some(2000));
    assert!(f.poll(1999).is_empty());
    let (server, port2, resent) = upstream(&f.poll(2000));
    assert_eq!((server, port2), (UP2, port));
    assert_eq!(resent, sent);
    // The first server answering late is still accepted (it was asked).
    let out = f.handle_upstream(&reply_a(&sent, &[[5, 6, 7, 8]], 60), UP1, port, 2500);
    assert_eq!(&to_client(&out)[..2], &[0, 3]);

    let (_, port, _) = upstream(&ask(&mut f, 4, "dead.example", rtype::A, 10_000, &mut rng));
    upstream(&f.poll(12_000));
    let out = f.poll(14_000);
    let r = to_client(&out);
    assert_eq!(&r[..2], &[0, 4]);
    assert_eq!(r[3] & 0xf, rcode::SERVFAIL);
    assert_eq!(out[1], DnsAction::ClosePort(port));
    assert_eq!(f.counters().timeouts, 1);
    assert_eq!(f.pending_len(), 0);
}

#[test]
fn servfail_moves_to_the_next_server_and_no_servers_means_servfail() {
    let mut f = forwarder();
    let mut rng = SeqRng(5);
    let (_, port, sent) = upstream(&ask(&mut f, 3, "x.example", rtype::A, 0, &mut rng));
    let mut fail = reply_a(&sent, &[], 0);
    fail[3] = 0x82;
    let (server, _, _) = upstream(&f.handle_upstream(&fail, UP1, port, 10));
    assert_eq!(server, UP2);
    f.set_upstreams(&[]);
    let r = to_client(&ask(&mut f, 4, "y.example", rtype::A, 0, &mut rng));
    assert_eq!(r[3] & 0xf, rcode::SERVFAIL);
}

#[test]
fn negative_answers_are_cached_per_soa_minimum() {
    let mut f = forwarder();
    let mut rng = SeqRng(5);
    let (_, port, sent) = upstream(&ask(&mut f, 3, "nope.com", rtype::A, 0, &mut rng));
    let m = Message::parse(&sent).unwrap();
    let mut r = sent[..m.question_end].to_vec();
    r[2] = 0x81;
    r[3] = 0x83;
    r[8..12].copy_from_slice(&[0, 1, 0, 0]);
    r.extend_from_slice(b"\xc0\x11\x00\x06\x00\x01\x00\x00\x03\x84");
    let rdata: &[u8] = b"\x01a\x04gtld\xc0\x11\x05nstld\xc0\x11\
        \x00\x00\x00\x01\x00\x00\x07\x08\x00\x00\x03\x84\x00\x09\x3a\x80\x00\x00\x01\x2c";
    r.extend_from_slice(&u16::try_from(rdata.len()).unwrap().to_be_bytes());
    r.extend_from_slice(rdata);
    f.handle_upstream(&r, UP1, port, 0);
    let hit = ask(&mut f, 8, "nope.com", rtype::A, 299_000, &mut rng);
    assert_eq!(to_client(&hit)[3] & 0xf, rcode::NXDOMAIN);
    // SOA minimum is 300 s.
    upstream(&ask(&mut f, 9, "nope.com", rtype::A, 300_000, &mut rng));
}

/// The one upstream send over TCP in `actions`.
fn upstream_tcp(actions: &[DnsAction]) -> (SocketAddr, u16, Vec<u8>) {
    match actions {
        [DnsAction::ToUpstreamTcp {
            upstream,
            source_port,
            packet,
        }] => (*upstream, *source_port, packet.clone()),
        other => panic!("expected one upstream send over TCP, got {other:?}"),
    }
}

/// The one answer to a TCP client in `actions`.
fn to_tcp_client(actions: &[DnsAction], client: SocketAddrV4) -> Vec<u8> {
    match actions {
        [DnsAction::ToTcpClient { client: c, packet }, ..] => {
            assert_eq!(*c, client.into());
            packet.clone()
        }
        other => panic!("expected an answer over TCP, got {other:?}"),
    }
}

#[test]
fn a_truncated_udp_answer_is_asked_again_over_tcp_and_the_udp_client_told_to_retry() {
    let mut f = forwarder();
    let mut rng = SeqRng(5);
    // Without EDNS: 512 bytes at most over UDP.
    let mut q = query(3, "big.example", rtype::A);
    q[11] = 0;
    q.truncate(q.len() - 11);
    let (_, port, sent) = upstream(&f.handle_query(&q, CLIENT, 0, &mut rng, &()));
    let mut r = reply_a(&sent, &[], 0);
    r[2] |= 0x02;
    // The TC answer goes nowhere: the same server is asked over TCP, same id, same
    // port.
    let (server, tcp_port, again) = upstream_tcp(&f.handle_upstream(&r, UP1, port, 1));
    assert_eq!((server, tcp_port, &again), (UP1, port, &sent));
    let k = f.counters();
    assert_eq!((k.tc_retries, k.tcp_forwarded, k.forwarded), (1, 1, 2));
    // A UDP reply on that port no longer answers it (an off-path forger's chance
    // ends with the switch).
    let forged = reply_a(&sent, &[[6, 6, 6, 6]], 300);
    assert!(f.handle_upstream(&forged, UP1, port, 2).is_empty());
    assert_eq!(f.counters().dropped_no_pending_match, 1);
    // The whole answer over TCP: 40 records, longer than the client's 512 bytes.
    let addrs: Vec<[u8; 4]> = (0..40).map(|i| [93, 184, 0, i]).collect();
    let whole = reply_a(&again, &addrs, 300);
    assert!(whole.len() > 512);
    let back = f.handle_upstream_tcp(&whole, UP1, port, 3);
    assert_eq!(back.last(), Some(&DnsAction::ClosePort(port)));
    let told = to_client(&back);
    assert_eq!(&told[..2], &[0, 3], "the client's id");
    assert!(super::forwarder::is_truncated(&told));
    let m = Message::parse(&told).unwrap();
    assert_eq!(m.header.ancount, 0, "the question only");
    assert_eq!(
        m.question().unwrap().name,
        name::Name::from_dotted("big.example").unwrap()
    );
    assert_eq!(f.counters().truncated_for_udp, 1);
    // The client asks over TCP as told and gets it all.
    let q2 = query(4, "big.example", rtype::A);
    let back = f.handle_tcp_query(&q2, CLIENT, 4, &mut rng, &());
    let got = to_tcp_client(&back, CLIENT);
    let m = Message::parse(&got).unwrap();
    assert_eq!(m.header.ancount, 40);
    assert!(!super::forwarder::is_truncated(&got));
    assert_eq!(f.counters().cache_hits, 1, "from the cache");
    assert_eq!(f.counters().tcp_queries, 1);
}

#[test]
fn a_query_over_tcp_goes_upstream_over_tcp_and_comes_back_over_tcp() {
    let mut f = forwarder();
    let mut rng = SeqRng(9);
    let q = query(0x4242, "example.org", rtype::A);
    let (server, port, sent) = upstream_tcp(&f.handle_tcp_query(&q, CLIENT, 0, &mut rng, &()));
    assert_eq!(server, UP1);
    assert_eq!(f.tcp_waiting(CLIENT), 1);
    // A UDP reply does not answer a query sent over TCP.
    let r = reply_a(&sent, &[[93, 184, 216, 34]], 60);
    assert!(f.handle_upstream(&r, UP1, port, 1).is_empty());
    let back = f.handle_upstream_tcp(&r, UP1, port, 1);
    let got = to_tcp_client(&back, CLIENT);
    assert_eq!(&got[..2], &[0x42, 0x42]);
    assert_eq!(f.tcp_waiting(CLIENT), 0);
    // Timeouts move to the next server over TCP too.
    let q = query(7, "example.net", rtype::A);
    let (_, port, _) = upstream_tcp(&f.handle_tcp_query(&q, CLIENT, 10, &mut rng, &()));
    let (server, port2, _) =
        upstream_tcp(&f.poll(10 + super::forwarder::DEFAULT_UPSTREAM_TIMEOUT_MS));
    assert_eq!((server, port2), (UP2, port));
    // Local names are answered over TCP at once.
    let back = f.handle_tcp_query(&query(8, "router.lan", rtype::A), CLIENT, 20, &mut rng, &());
    let got = to_tcp_client(&back, CLIENT);
    assert_eq!(Message::parse(&got).unwrap().header.ancount, 1);
}

#[test]
fn udp_and_tcp_clients_asking_the_same_share_one_query_each_answered_its_way() {
    let mut f = forwarder();
    let mut rng = SeqRng(11);
    let tcp_client = SocketAddrV4::new(Ipv4Addr::new(192, 168, 1, 101), 40000);
    let q = query(1, "shared.example", rtype::A);
    let (_, port, sent) = upstream(&f.handle_query(&q, CLIENT, 0, &mut rng, &()));
    let q2 = query(2, "shared.example", rtype::A);
    assert!(f
        .handle_tcp_query(&q2, tcp_client, 0, &mut rng, &())
        .is_empty());
    assert_eq!(f.tcp_waiting(tcp_client), 1);
    let r = reply_a(&sent, &[[1, 2, 3, 4]], 60);
    let back = f.handle_upstream(&r, UP1, port, 1);
    assert!(back.iter().any(
        |a| matches!(a, DnsAction::ToClient { client, packet } if *client == CLIENT.into() && packet[..2] == [0, 1])
    ));
    assert!(back.iter().any(
        |a| matches!(a, DnsAction::ToTcpClient { client, packet } if *client == tcp_client.into() && packet[..2] == [0, 2])
    ));
}

#[test]
fn identical_queries_in_flight_share_one_upstream_query() {
    // DNSpooq (CVE-2020-25686): 150 parallel identical queries used to make 150
    // upstream queries, and a forged answer matching any one was cached for all.
    let mut f = forwarder();
    let mut rng = SeqRng(11);
    let (_, port, sent) = upstream(&ask(&mut f, 1, "bank.example", rtype::A, 0, &mut rng));
    let others: Vec<SocketAddrV4> = (0..20u16)
        .map(|i| SocketAddrV4::new(Ipv4Addr::new(192, 168, 1, 101), 40000 + i))
        .collect();
    for (i, c) in others.iter().enumerate() {
        let a = f.handle_query(
            &query(100 + i as u16, "bank.example", rtype::A),
            *c,
            1,
            &mut rng,
            &(),
        );
        assert!(a.is_empty(), "no second upstream query: {a:?}");
    }
    // a retransmission by a waiting client adds nothing
    assert!(f
        .handle_query(
            &query(100, "bank.example", rtype::A),
            others[0],
            2,
            &mut rng,
            &()
        )
        .is_empty());
    assert_eq!(f.pending_len(), 1);
    assert_eq!(
        f.counters().merged,
        16,
        "16 wait with the first; more are dropped"
    );
    assert_eq!(f.counters().forwarded, 1);
    // A guess at the id that misses is dropped; the real answer goes to all 17,
    // each with its own id.
    let mut forged = reply_a(&sent, &[[6, 6, 6, 6]], 86400);
    forged[0] ^= 0x55;
    assert!(f.handle_upstream(&forged, UP1, port, 3).is_empty());
    let r = reply_a(&sent, &[[93, 184, 216, 34]], 300);
    let out = f.handle_upstream(&r, UP1, port, 4);
    let replies: Vec<(SocketAddr, u16)> = out
        .iter()
        .filter_map(|a| match a {
            DnsAction::ToClient { client, packet } => {
                Some((*client, u16::from_be_bytes([packet[0], packet[1]])))
            }
            _ => None,
        })
        .collect();
    assert_eq!(replies.len(), 17);
    assert_eq!(replies[0], (CLIENT.into(), 1));
    for (i, c) in others.iter().take(16).enumerate() {
        assert_eq!(replies[i + 1], ((*c).into(), 100 + i as u16));
    }
    // a different type is a different question
    let a = ask(&mut f, 2, "bank.example", rtype::AAAA, 5, &mut rng);
    assert_eq!(upstream(&a).0, UP1);
}

#[test]
fn pending_table_is_bounded() {
    let mut cfg = DnsConfig::new(LAN, MASK);
    cfg.upstreams = alloc::vec![UP1];
    cfg.max_pending = 3;
    let mut f = DnsForwarder::new(cfg);
    let mut rng = SeqRng(5);
    for i in 0..5u16 {
        ask(&mut f, i, &alloc::format!("h{i}.example"), rtype::A, 0, &mut rng);
    }
    assert_eq!(f.pending_len(), 3);
    assert_eq!(f.counters().dropped_pending_full, 2);
}

#[test]
fn hostile_names_are_dropped() {
    let mut f = forwarder();
    let mut rng = SeqRng(5);
    let header = [0u8, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    let cases: [&[u8]; 5] = [
        // Compression loop: the name is a pointer to itself.
        &[0xC0, 0x0C, 0, 1, 0, 1],
        // Forward pointer.
        &[0xC0, 0x0E, 0, 1, 0, 1, 0],
        // Label of 64 bytes (0x40 is an extended label type).
        &[0x40, b'a', 0, 0, 1, 0, 1],
        // Label length past the end.
        &[0x3f, b'a', b'b'],
        // No type/class.
        &[1, b'a', 0],
    ];
    for c in cases {
        let mut q = header.to_vec();
        q.extend_from_slice(c);
        assert!(f.handle_query(&q, CLIENT, 0, &mut rng, &()).is_empty());
    }
    // A 256-byte name of 63-byte labels.
    let mut q = header.to_vec();
    for _ in 0..4 {
        q.push(63);
        q.extend_from_slice(&[b'x'; 63]);
    }
    q.extend_from_slice(&[0, 0, 1, 0, 1]);
    assert!(f.handle_query(&q, CLIENT, 0, &mut rng, &()).is_empty());
    assert_eq!(f.counters().dropped_malformed, 6);
    assert_eq!(f.counters().queries, 0);
}


fn mutate(rng: &mut XorShift, p: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(6) {
        if p.is_empty() {
            return;
        }
        match rng.below(6) {
            0 => {
                let at = rng.below(p.len());
                p[at] ^= 1 << rng.below(8);
            }
            1 => {
                let at = rng.below(p.len());
                p[at] = rng.byte();
            }
            2 => p.truncate(rng.below(p.len() + 1)),
            3 => {
                // A compression pointer to a random offset.
                let at = rng.below(p.len());
                p[at] = 0xC0 | (rng.byte() % 2);
                if at + 1 < p.len() {
                    p[at + 1] = rng.byte();
                }
            }
            4 => {
                // Inflate a count.
                let at = 4 + 2 * rng.below(4);
                if at + 1 < p.len() {
                    p[at + 1] = rng.byte();
                }
            }
            _ => {
                let n = rng.below(80);
                p.extend((0..n).map(|_| rng.byte()));
            }
        }
    }
}

/// Random mutations of queries and upstream replies: no panic, every query
/// counted once, every reply sent to a client parses.
#[test]
fn random_mutations_never_panic() {
    let mut rng = XorShift(0x9e37_79b9);
    let mut ids = SeqRng(1);
    let mut f = forwarder();
    let names = [
        "example.com",
        "a.b.c.example.org",
        "lan1.lan",
        "printer",
        "1.1.168.192.in-addr.arpa",
    ];
    let mut now = 0;
    let mut queries_sent = 0u64;
    for i in 0..30_000u32 {
        now += 10;
        let name = names[rng.below(names.len())];
        let mut q = query(
            u16::try_from(i & 0xffff).unwrap(),
            name,
            [rtype::A, rtype::AAAA, rtype::PTR][rng.below(3)],
        );
        let mutate_query = rng.below(3) == 0;
        if mutate_query {
            mutate(&mut rng, &mut q);
        }
        queries_sent += 1;
        let actions = if rng.below(4) == 0 {
            f.handle_tcp_query(&q, CLIENT, now, &mut ids, &())
        } else {
            f.handle_query(&q, CLIENT, now, &mut ids, &())
        };
        for a in &actions {
            match a {
                DnsAction::ToClient { packet, .. } | DnsAction::ToTcpClient { packet, .. } => {
                    assert!(Message::parse(packet).is_ok());
                }
                DnsAction::ToUpstream {
                    source_port,
                    packet,
                    upstream,
                }
                | DnsAction::ToUpstreamTcp {
                    source_port,
                    packet,
                    upstream,
                } => {
                    let mut r = reply_a(
                        packet,
                        &[[rng.byte(), 2, 3, 4]],
                        u32::try_from(rng.below(100)).unwrap(),
                    );
                    if rng.below(2) == 0 {
                        mutate(&mut rng, &mut r);
                    }
                    let tcp = matches!(a, DnsAction::ToUpstreamTcp { .. });
                    let back = if tcp {
                        f.handle_upstream_tcp(&r, *upstream, *source_port, now + 1)
                    } else {
                        f.handle_upstream(&r, *upstream, *source_port, now + 1)
                    };
                    for a in back {
                        if let DnsAction::ToClient { packet, .. }
                        | DnsAction::ToTcpClient { packet, .. } = a
                        {
                            assert!(Message::parse(&packet).is_ok());
                        }
                    }
                }
                DnsAction::ClosePort(_) => {}
            }
        }
        if i % 100 == 0 {
            f.poll(now + 5000);
        }
    }
    let k = f.counters();
    assert_eq!(k.queries + k.dropped_malformed, queries_sent, "{k:?}");
    assert!(k.dropped_malformed_upstream > 100, "{k:?}");
    assert!(k.dropped_malformed > 500, "{k:?}");
    assert!(
        k.cache_hits > 100 && k.forwarded > 100 && k.local_answers > 100,
        "{k:?}"
    );
    assert!(f.pending_len() <= super::forwarder::DEFAULT_MAX_PENDING);
    assert!(f.cache_len() <= 1000);
}

#[test]
fn a_reply_with_more_records_than_kept_is_relayed_uncached() {
    let mut f = forwarder();
    let mut rng = SeqRng(21);
    let q = query(0x7777, "many.example", rtype::A);
    let (_, port, sent) = upstream(&f.handle_query(&q, CLIENT, 0, &mut rng, &()));
    let addrs: Vec<[u8; 4]> = (0..100u8).map(|i| [93, 184, 1, i]).collect();
    let r = reply_a(&sent, &addrs, 300);
    assert_eq!(Message::parse(&r), Err(message::MessageError::TooComplex));
    let out = f.handle_upstream(&r, UP1, port, 10);
    let back = to_client(&out);
    assert_eq!(&back[..2], &[0x77, 0x77], "under the client's id");
    assert_eq!(&back[2..], &r[2..], "as upstream sent it");
    assert_eq!(out.last(), Some(&DnsAction::ClosePort(port)));
    let k = f.counters();
    assert_eq!((k.replies, k.uncached_large), (1, 1));
    assert_eq!(f.cache_len(), 0, "not cached");
    // So the next query for it goes upstream again.
    let q = query(0x7778, "many.example", rtype::A);
    upstream(&f.handle_query(&q, CLIENT, 20, &mut rng, &()));
}

#[test]
fn rebinding_is_found_past_the_records_a_parse_keeps() {
    let mut f = forwarder();
    let mut rng = SeqRng(22);
    let q = query(0x7779, "evil-many.example", rtype::A);
    let (_, port, sent) = upstream(&f.handle_query(&q, CLIENT, 0, &mut rng, &()));
    let mut addrs: Vec<[u8; 4]> = (0..100u8).map(|i| [93, 184, 1, i]).collect();
    addrs[90] = [10, 0, 0, 1];
    let out = f.handle_upstream(&reply_a(&sent, &addrs, 300), UP1, port, 10);
    let back = to_client(&out);
    assert_eq!(Message::parse(&back).unwrap().header.ancount, 0);
    assert_eq!(f.counters().dropped_rebind, 1);
}

#[test]
fn a_query_with_too_many_records_is_dropped_as_malformed() {
    let mut f = forwarder();
    let mut rng = SeqRng(23);
    let mut q = query(0x7780, "example.com", rtype::A);
    // 65 more OPT-like additional records.
    let n = message::MAX_RECORDS as u16 + 1;
    q[10..12].copy_from_slice(&(n + 1).to_be_bytes());
    for _ in 0..n {
        q.extend_from_slice(&[0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0]);
    }
    assert!(f.handle_query(&q, CLIENT, 0, &mut rng, &()).is_empty());
    assert_eq!(f.counters().dropped_malformed, 1);
}

mod ipv6;
