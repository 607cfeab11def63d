//! DNS over TCP through the router: a LAN host's TCP client, the WAN host's TCP
//! (and UDP) server playing the upstream, the router's firewall and stack between.

use super::*;
use smoltcp::socket::tcp;
use xenlet_router::dns::tcp::{frame, FrameReader, TcpLimits};

const ROUTER_DNS: (IpAddress, u16) = (IpAddress::v4(192, 168, 1, 1), 53);

fn tcp_socket() -> tcp::Socket<'static> {
    tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; 8192]),
        tcp::SocketBuffer::new(vec![0; 8192]),
    )
}

/// A LAN host connection to the router's port 53 from `port`.
fn connect(n: &mut Net, port: u16) -> SocketHandle {
    let h = n.lan_host.sockets.add(tcp_socket());
    let cx = n.lan_host.iface.context();
    n.lan_host
        .sockets
        .get_mut::<tcp::Socket>(h)
        .connect(cx, ROUTER_DNS, port)
        .unwrap();
    h
}

fn lan_tcp(n: &mut Net, h: SocketHandle) -> &mut tcp::Socket<'static> {
    n.lan_host.sockets.get_mut::<tcp::Socket>(h)
}

fn wan_tcp(n: &mut Net, h: SocketHandle) -> &mut tcp::Socket<'static> {
    n.wan_host.sockets.get_mut::<tcp::Socket>(h)
}

/// Steps until the LAN connection is established.
fn established(n: &mut Net, h: SocketHandle) {
    n.until(300, |n| {
        (lan_tcp(n, h).state() == tcp::State::Established).then_some(())
    })
    .expect("the router accepted the connection");
}

/// The next whole message on `sock` (stepping the network).
fn read_msg(
    n: &mut Net,
    r: &mut FrameReader,
    mut sock: impl FnMut(&mut Net) -> &mut tcp::Socket<'static>,
) -> Option<Vec<u8>> {
    n.until(600, |n| {
        let s = sock(n);
        while !r.has_message() && s.can_recv() {
            s.recv(|b| (r.feed(b), ())).unwrap();
        }
        r.take()
    })
}

/// A socket of the WAN host listening on TCP port 53.
fn wan_listen(n: &mut Net) -> SocketHandle {
    let mut s = tcp_socket();
    s.listen(53).unwrap();
    n.wan_host.sockets.add(s)
}

/// The upstream's answer to `q` with `count` A records (TTL 300).
fn answer_n(q: &[u8], count: u8) -> Vec<u8> {
    let mut r = q.to_vec();
    r[2] = 0x81;
    r[3] = 0x80;
    r[7] = count;
    for i in 0..count {
        r.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4]);
        r.extend_from_slice(&[93, 184, 0, i]);
    }
    r
}

#[test]
fn a_query_over_tcp_is_forwarded_over_tcp_and_two_pipelined_queries_are_answered() {
    let (mut n, _, _) = dns_net();
    let up = wan_listen(&mut n);
    let c = connect(&mut n, 41000);
    established(&mut n, c);
    // Two queries in one write: one for upstream, one the router answers itself.
    let mut both = frame(&query(0x1111, "example.com", 1)).unwrap();
    both.extend(frame(&query(0x2222, "openwrt.lan", 1)).unwrap());
    lan_tcp(&mut n, c).send_slice(&both).unwrap();
    let mut from_lan = FrameReader::new();
    // The local answer comes first (answers may come in any order, RFC 7766 §7).
    let local = read_msg(&mut n, &mut from_lan, |n| lan_tcp(n, c)).expect("local answer");
    assert_eq!(&local[..2], &[0x22, 0x22]);
    assert_eq!(a_records(&local), [[192, 168, 1, 1]]);
    // The other went upstream over TCP, from the router's WAN address and a
    // random port, under a new id.
    let mut from_router = FrameReader::new();
    let q = read_msg(&mut n, &mut from_router, |n| wan_tcp(n, up)).expect("upstream query");
    let remote = wan_tcp(&mut n, up).remote_endpoint().unwrap();
    assert_eq!(remote.addr, IpAddress::v4(10, 0, 0, 2));
    assert!(remote.port >= 49152);
    assert_ne!(&q[..2], &[0x11, 0x11]);
    let a = frame(&answer(&q, [93, 184, 216, 34])).unwrap();
    wan_tcp(&mut n, up).send_slice(&a).unwrap();
    let r = read_msg(&mut n, &mut from_lan, |n| lan_tcp(n, c)).expect("forwarded answer");
    assert_eq!(&r[..2], &[0x11, 0x11]);
    assert_eq!(a_records(&r), [[93, 184, 216, 34]]);
    // The upstream connection is closed by the router once answered.
    n.until(300, |n| {
        matches!(
            wan_tcp(n, up).state(),
            tcp::State::CloseWait | tcp::State::Closed
        )
        .then_some(())
    })
    .expect("the router closed its upstream connection");
    let t = n.services.dns_tcp_counters();
    assert_eq!((t.accepted, t.queries, t.answers), (1, 2, 2));
    assert_eq!((t.upstream_opened, t.upstream_answers), (1, 1));
    let d = n.services.dns_counters().unwrap();
    assert_eq!((d.tcp_queries, d.tcp_forwarded), (2, 1));
    // The client closes; so does the router, and its socket goes.
    lan_tcp(&mut n, c).close();
    n.until(300, |n| (n.services.tcp.conn_count() == 0).then_some(()))
        .expect("the connection closed");
}

#[test]
fn a_truncated_udp_answer_is_asked_again_over_tcp_and_the_client_retries_over_tcp() {
    let (mut n, hc, hu) = dns_net();
    let up = wan_listen(&mut n);
    let q = query(0x3333, "big.example", 1); // no EDNS: 512 bytes over UDP
    ask(&mut n, hc, &q);
    let (sent, from) = upstream_query(&mut n, hu).expect("the query went out over UDP");
    let mut tc = answer(&sent, [1, 2, 3, 4]);
    tc[2] |= 0x02; // TC
    upstream_reply(&mut n, hu, &tc, from);
    // Asked again over TCP, from the same port, same id.
    let mut from_router = FrameReader::new();
    let again = read_msg(&mut n, &mut from_router, |n| wan_tcp(n, up)).expect("TCP retry");
    assert_eq!(again, sent);
    assert_eq!(
        wan_tcp(&mut n, up).remote_endpoint().unwrap().port,
        from.port
    );
    let whole = answer_n(&again, 40);
    assert!(whole.len() > 512);
    wan_tcp(&mut n, up)
        .send_slice(&frame(&whole).unwrap())
        .unwrap();
    // The UDP client is told to use TCP ...
    let r = reply_to(&mut n, hc).expect("an answer over UDP");
    assert_eq!(&r[..2], &[0x33, 0x33]);
    assert_eq!(r[2] & 0x02, 0x02, "TC set");
    assert!(r.len() <= 512);
    assert_eq!(n.services.dns_counters().unwrap().tc_retries, 1);
    // ... and gets the whole answer there.
    let c = connect(&mut n, 41001);
    established(&mut n, c);
    let q2 = query(0x4444, "big.example", 1);
    lan_tcp(&mut n, c).send_slice(&frame(&q2).unwrap()).unwrap();
    let mut from_lan = FrameReader::new();
    let r = read_msg(&mut n, &mut from_lan, |n| lan_tcp(n, c)).expect("the whole answer");
    assert_eq!(&r[..2], &[0x44, 0x44]);
    assert_eq!(a_records(&r).len(), 40);
    assert_eq!(n.services.dns_counters().unwrap().cache_hits, 1);
}

#[test]
fn hostile_tcp_clients_are_bounded_counted_and_udp_is_still_served() {
    let (mut n, hc, _) = dns_net();
    let TcpLimits {
        max_conns, idle_ms, ..
    } = n.services.dns_tcp_limits();
    // One announces 65535 bytes and sends nothing more.
    let stall = connect(&mut n, 42000);
    established(&mut n, stall);
    lan_tcp(&mut n, stall).send_slice(&[0xff, 0xff, 0]).unwrap();
    // One drips a query a byte every 500 ms.
    let drip = connect(&mut n, 42001);
    established(&mut n, drip);
    let slow = frame(&query(0x5555, "example.com", 1)).unwrap();
    // Then more connections than allowed.
    let mut others = Vec::new();
    for i in 0..max_conns + 4 {
        others.push(connect(&mut n, 43000 + i as u16));
        for _ in 0..5 {
            n.step();
        }
    }
    for _ in 0..100 {
        n.step();
    }
    let t = n.services.dns_tcp_counters();
    assert_eq!(t.accepted as usize, max_conns, "{t:?}");
    assert!(t.refused_full >= 4, "{t:?}");
    assert_eq!(n.services.tcp.conn_count(), max_conns);
    let refused = others
        .iter()
        .filter(|&&h| lan_tcp(&mut n, h).state() == tcp::State::Closed)
        .count();
    assert!(refused >= 4, "the extra connections were reset: {refused}");
    // UDP is answered meanwhile.
    ask(&mut n, hc, &query(0x6666, "openwrt.lan", 1));
    let r = reply_to(&mut n, hc).expect("UDP still answered");
    assert_eq!(a_records(&r), [[192, 168, 1, 1]]);
    // The drip goes on past the idle time; the stalled one holds a few bytes, not
    // 64 KiB.
    let start = n.now;
    let mut sent = 0;
    while n.now - start < idle_ms as i64 + 1000 {
        if (n.now - start) % 500 == 0 && sent < slow.len() - 1 && lan_tcp(&mut n, drip).can_send() {
            lan_tcp(&mut n, drip)
                .send_slice(&slow[sent..sent + 1])
                .unwrap();
            sent += 1;
        }
        n.step();
        assert!(n.services.tcp.held() < 4096, "{}", n.services.tcp.held());
    }
    assert!(sent > 10, "the drip was sending");
    for h in [stall, drip] {
        assert_eq!(
            lan_tcp(&mut n, h).state(),
            tcp::State::Closed,
            "reset at the deadline"
        );
    }
    let t = n.services.dns_tcp_counters();
    assert!(t.timed_out_partial >= 2, "{t:?}");
    assert_eq!(n.services.tcp.conn_count(), 0, "the idle ones went too");
    assert_eq!(n.services.dns_counters().unwrap().tcp_queries, 0);
    // Room again: a new client is served.
    let c = connect(&mut n, 44000);
    established(&mut n, c);
    lan_tcp(&mut n, c)
        .send_slice(&frame(&query(0x7777, "openwrt.lan", 1)).unwrap())
        .unwrap();
    let mut r = FrameReader::new();
    let a = read_msg(&mut n, &mut r, |n| lan_tcp(n, c)).expect("answered");
    assert_eq!(&a[..2], &[0x77, 0x77]);
    // Sockets: the listener, this connection, nothing left over.
    for _ in 0..300 {
        n.step();
    }
    assert!(
        n.services.tcp.socket_count() <= 2,
        "{}",
        n.services.tcp.socket_count()
    );
}

#[test]
fn tcp_53_from_the_wan_is_refused_by_the_firewall() {
    let (mut n, _, _) = dns_net();
    let h = n.wan_host.sockets.add(tcp_socket());
    let cx = n.wan_host.iface.context();
    n.wan_host
        .sockets
        .get_mut::<tcp::Socket>(h)
        .connect(cx, (IpAddress::v4(10, 0, 0, 2), 53), 45000)
        .unwrap();
    for _ in 0..300 {
        n.step();
    }
    assert_ne!(wan_tcp(&mut n, h).state(), tcp::State::Established);
    assert_eq!(n.services.dns_tcp_counters().accepted, 0);
}
