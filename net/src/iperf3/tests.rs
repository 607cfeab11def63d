//! Host tests: the server against a test client that follows iperf3's client side
//! of the protocol, over smoltcp's loopback device with a simulated clock.

use super::json::{self, Value};
use super::*;
use crate::testnet::Loop;
use smoltcp::wire::IpAddress;

const SERVER: IpAddress = IpAddress::v4(10, 0, 0, 1);
const PORT: u16 = 5201;
/// Polls a wait may take before the test fails.
const MAX_STEPS: usize = 200_000;

struct Net {
    lo: Loop,
    now: u64,
    srv: Iperf3Server,
    next_port: u16,
    /// The heap the server's polls took and kept (bytes), and its highest point.
    srv_heap: isize,
    srv_peak: isize,
    /// When set, the server's polls may grow the heap by at most this much each.
    srv_limit: Option<usize>,
}

impl Net {
    fn new() -> Self {
        Self::with_memory(Iperf3Memory::default())
    }

    fn with_memory(mem: Iperf3Memory) -> Self {
        let mut lo = Loop::new(SERVER);
        let srv = Iperf3Server::with_memory(&mut lo.sockets, PORT, mem);
        Net {
            lo,
            now: 1,
            srv,
            next_port: 40000,
            srv_heap: 0,
            srv_peak: 0,
            srv_limit: None,
        }
    }

    /// One millisecond: the interface, then the server.
    fn step(&mut self) {
        self.now += 1;
        self.lo.poll(self.now as i64);
        let before = xenlet_testalloc::live();
        let (srv, sockets, now) = (&mut self.srv, &mut self.lo.sockets, self.now);
        let ((), rise) = match self.srv_limit {
            Some(limit) => xenlet_testalloc::peak_during(|| {
                xenlet_testalloc::limited(limit, || srv.poll(sockets, now)).0
            }),
            None => xenlet_testalloc::peak_during(|| srv.poll(sockets, now)),
        };
        self.srv_peak = self.srv_peak.max(self.srv_heap + rise as isize);
        self.srv_heap += xenlet_testalloc::live() - before;
    }

    /// Jumps the clock (no traffic in between), then steps.
    fn advance(&mut self, ms: u64) {
        self.now += ms;
        self.step();
    }

    fn until(&mut self, what: &str, mut cond: impl FnMut(&mut Self) -> bool) {
        for _ in 0..MAX_STEPS {
            if cond(self) {
                return;
            }
            self.step();
        }
        panic!("timed out waiting for {what}");
    }

    fn sock(&mut self, h: SocketHandle) -> &mut tcp::Socket<'static> {
        self.lo.sockets.get_mut::<tcp::Socket>(h)
    }

    fn connect(&mut self, rx: usize, tx: usize) -> SocketHandle {
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; rx]),
            tcp::SocketBuffer::new(vec![0; tx]),
        );
        self.next_port += 1;
        s.connect(self.lo.iface.context(), (SERVER, PORT), self.next_port)
            .unwrap();
        let h = self.lo.sockets.add(s);
        self.until("connection", |n| {
            let s = n.sock(h);
            s.may_send() || s.state() == tcp::State::Closed
        });
        h
    }

    fn send_all(&mut self, h: SocketHandle, data: &[u8]) {
        let mut off = 0;
        self.until("send", |n| {
            if let Ok(k) = n.sock(h).send_slice(&data[off..]) {
                off += k;
            }
            off == data.len()
        });
    }

    fn read_exact(&mut self, h: SocketHandle, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        let mut got = 0;
        self.until("read", |n| {
            let s = n.sock(h);
            if let Ok(k) = s.recv_slice(&mut out[got..]) {
                got += k;
            }
            assert!(
                got == len || s.may_recv(),
                "connection closed after {got} of {len} bytes"
            );
            got == len
        });
        out
    }

    fn read_state(&mut self, h: SocketHandle) -> u8 {
        self.read_exact(h, 1)[0]
    }

    fn read_json(&mut self, h: SocketHandle) -> Value {
        let len = self.read_exact(h, 4);
        let len = u32::from_be_bytes(len.try_into().unwrap()) as usize;
        let body = self.read_exact(h, len);
        json::parse(&body).expect("server JSON parses")
    }

    fn send_json(&mut self, h: SocketHandle, text: &str) {
        let mut msg = (text.len() as u32).to_be_bytes().to_vec();
        msg.extend_from_slice(text.as_bytes());
        self.send_all(h, &msg);
    }

    /// Waits until the peer has closed `h` and everything was read; the byte count.
    fn drain_to_eof(&mut self, h: SocketHandle) -> u64 {
        let mut total = 0;
        self.until("end of stream", |n| {
            let s = n.sock(h);
            while let Ok(k) = s.recv(|b| (b.len(), b.len())) {
                if k == 0 {
                    break;
                }
                total += k as u64;
            }
            !s.may_recv()
        });
        total
    }

    fn close(&mut self, h: SocketHandle) {
        self.sock(h).close();
    }

    fn events(&mut self) -> Vec<String> {
        std::iter::from_fn(|| self.srv.take_events()).collect()
    }

    /// Lets closing sockets finish; checks the server holds a bounded set.
    fn settle(&mut self) {
        for _ in 0..300 {
            self.step();
        }
    }
}

fn cookie(tag: u8) -> [u8; COOKIE_SIZE] {
    let mut c = [b'a' + tag % 26; COOKIE_SIZE];
    c[COOKIE_SIZE - 1] = 0;
    c
}

fn params(reverse: bool, parallel: usize, time: u64) -> String {
    format!(
        "{{\"tcp\":true,\"omit\":0,\"time\":{time},\"num\":0,\"blockcount\":0,\"parallel\":{parallel},{}\
         \"len\":131072,\"pacing_timer\":1000,\"client_version\":\"3.12\"}}",
        if reverse { "\"reverse\":true," } else { "" }
    )
}

/// A client connected through CREATE_STREAMS.
struct Client {
    ctrl: SocketHandle,
    cookie: [u8; COOKIE_SIZE],
}

fn open_control(net: &mut Net, tag: u8) -> Client {
    let ctrl = net.connect(8192, 8192);
    let cookie = cookie(tag);
    net.send_all(ctrl, &cookie);
    Client { ctrl, cookie }
}

fn start(net: &mut Net, tag: u8, params_json: &str) -> Client {
    let c = open_control(net, tag);
    assert_eq!(net.read_state(c.ctrl), msg::PARAM_EXCHANGE);
    net.send_json(c.ctrl, params_json);
    assert_eq!(net.read_state(c.ctrl), msg::CREATE_STREAMS);
    c
}

fn open_streams(net: &mut Net, c: &Client, n: usize) -> Vec<SocketHandle> {
    let streams: Vec<SocketHandle> = (0..n)
        .map(|_| {
            let h = net.connect(DATA_BUFFER, DATA_BUFFER);
            net.send_all(h, &c.cookie);
            h
        })
        .collect();
    assert_eq!(net.read_state(c.ctrl), msg::TEST_START);
    assert_eq!(net.read_state(c.ctrl), msg::TEST_RUNNING);
    streams
}

/// A whole test of one stream sending `bytes` (as client `id`), from the
/// parameters to the results: the server runs it normally.
fn one_stream_test(net: &mut Net, id: u8, bytes: usize) {
    let c = start(net, id, &params(false, 1, 5));
    let streams = open_streams(net, &c, 1);
    send_data(net, &streams, bytes);
    let server = finish(net, &c, &streams, &[bytes as u64], false);
    assert_eq!(stream_bytes(&server, 1), bytes as u64);
}

/// TEST_END → results exchange → IPERF_DONE, as the iperf3 client does it. Returns
/// the server's results.
fn finish(
    net: &mut Net,
    c: &Client,
    streams: &[SocketHandle],
    client_bytes: &[u64],
    reverse: bool,
) -> Value {
    net.send_all(c.ctrl, &[msg::TEST_END]);
    // The client keeps reading data streams until the state changes (reverse mode).
    let mut extra = vec![0u64; streams.len()];
    let mut got = None;
    net.until("EXCHANGE_RESULTS", |n| {
        for (i, &h) in streams.iter().enumerate() {
            while let Ok(k) = n.sock(h).recv(|b| (b.len(), b.len())) {
                if k == 0 {
                    break;
                }
                extra[i] += k as u64;
            }
        }
        let mut b = [0u8; 1];
        if let Ok(1) = n.sock(c.ctrl).recv_slice(&mut b) {
            got = Some(b[0]);
        }
        got.is_some()
    });
    assert_eq!(got, Some(msg::EXCHANGE_RESULTS));
    let stream_json: Vec<String> = client_bytes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let id = if i == 0 { 1 } else { i + 2 };
            format!(
                "{{\"id\":{id},\"bytes\":{b},\"retransmits\":0,\"jitter\":0,\"errors\":0,\
                 \"packets\":0,\"start_time\":0,\"end_time\":5.0001}}"
            )
        })
        .collect();
    let results = format!(
        "{{\"cpu_util_total\":1.5,\"cpu_util_user\":0.5,\"cpu_util_system\":1.0,\
         \"sender_has_retransmits\":{},\"congestion_used\":\"cubic\",\"streams\":[{}]}}",
        if reverse { -1 } else { 1 },
        stream_json.join(",")
    );
    net.send_json(c.ctrl, &results);
    let server = net.read_json(c.ctrl);
    assert_eq!(net.read_state(c.ctrl), msg::DISPLAY_RESULTS);
    net.send_all(c.ctrl, &[msg::IPERF_DONE]);
    if reverse {
        // Count what was still in flight: the server closes the streams after TEST_END.
        for (i, &h) in streams.iter().enumerate() {
            extra[i] += net.drain_to_eof(h);
        }
        for (i, e) in extra.iter().enumerate() {
            let id = if i == 0 { 1 } else { i as i64 + 2 };
            let reported = stream_bytes(&server, id);
            assert_eq!(
                client_bytes[i] + e,
                reported,
                "stream {id}: bytes received == bytes the server sent"
            );
        }
    }
    net.close(c.ctrl);
    for &h in streams {
        net.close(h);
    }
    net.until("server idle", |n| !n.srv.busy());
    server
}

/// Checks the keys iperf3's `get_results` requires.
fn check_results_shape(v: &Value, streams: usize, reverse: bool) {
    for k in ["cpu_util_total", "cpu_util_user", "cpu_util_system"] {
        assert!(v.get(k).and_then(Value::as_i64).is_some(), "{k}");
    }
    let shr = v.get("sender_has_retransmits").and_then(Value::as_i64);
    assert_eq!(shr, Some(if reverse { 0 } else { -1 }));
    let s = v.get("streams").and_then(Value::as_array).expect("streams");
    assert_eq!(s.len(), streams);
    for st in s {
        for k in [
            "id",
            "bytes",
            "retransmits",
            "jitter",
            "errors",
            "packets",
            "start_time",
            "end_time",
        ] {
            assert!(
                st.get(k).and_then(Value::as_i64).is_some(),
                "stream key {k}"
            );
        }
    }
}

fn stream_bytes(v: &Value, id: i64) -> u64 {
    v.get("streams")
        .and_then(Value::as_array)
        .and_then(|s| {
            s.iter()
                .find(|st| st.get("id").and_then(Value::as_i64) == Some(id))
        })
        .and_then(|st| st.get("bytes"))
        .and_then(Value::as_i64)
        .expect("stream in results") as u64
}

fn stream_ids(v: &Value) -> Vec<i64> {
    v.get("streams")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .filter_map(|st| st.get("id").and_then(Value::as_i64))
        .collect()
}

/// Sends `per_stream` bytes on each stream and waits until all are acknowledged.
fn send_data(net: &mut Net, streams: &[SocketHandle], per_stream: usize) {
    let block = vec![0x5au8; 64 * 1024];
    let mut sent = vec![0usize; streams.len()];
    net.until("data sent and acknowledged", |n| {
        let mut done = true;
        for (i, &h) in streams.iter().enumerate() {
            let s = n.sock(h);
            let want = (per_stream - sent[i]).min(block.len());
            if want > 0 {
                sent[i] += s.send_slice(&block[..want]).unwrap_or(0);
            }
            done &= sent[i] == per_stream && s.send_queue() == 0;
        }
        done
    });
}

/// Reads from the streams for `ms` simulated milliseconds; bytes per stream.
fn receive_for(net: &mut Net, streams: &[SocketHandle], ms: u64) -> Vec<u64> {
    let mut got = vec![0u64; streams.len()];
    for _ in 0..ms {
        net.step();
        for (i, &h) in streams.iter().enumerate() {
            while let Ok(k) = net.sock(h).recv(|b| (b.len(), b.len())) {
                if k == 0 {
                    break;
                }
                got[i] += k as u64;
            }
        }
    }
    got
}

#[test]
fn forward_test_counts_every_byte() {
    let mut net = Net::new();
    assert!(!net.srv.busy());
    let c = start(&mut net, 0, &params(false, 1, 5));
    assert!(net.srv.busy());
    let streams = open_streams(&mut net, &c, 1);
    const N: usize = 3 * 1024 * 1024 + 123;
    send_data(&mut net, &streams, N);
    let server = finish(&mut net, &c, &streams, &[N as u64], false);
    check_results_shape(&server, 1, false);
    assert_eq!(stream_bytes(&server, 1), N as u64);
    let events = net.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(events[0].starts_with("iperf3: 10.0.0.1:"), "{}", events[0]);
    assert!(
        events[0].contains(&format!(" received {N} bytes in ")),
        "{}",
        events[0]
    );
    assert!(events[0].ends_with(" Mbit/s"), "{}", events[0]);
}

#[test]
fn reverse_test_sends_and_reports_matching_bytes() {
    let mut net = Net::new();
    let c = start(&mut net, 1, &params(true, 1, 2));
    let streams = open_streams(&mut net, &c, 1);
    let got = receive_for(&mut net, &streams, 300);
    assert!(
        got[0] > 1024 * 1024,
        "client received only {} bytes",
        got[0]
    );
    let server = finish(&mut net, &c, &streams, &got, true);
    check_results_shape(&server, 1, true);
    assert!(stream_bytes(&server, 1) >= got[0]);
    let ev = net.events();
    assert!(
        ev[0].contains(" sent ") && ev[0].ends_with("(reverse)"),
        "{ev:?}"
    );
}

#[test]
fn two_parallel_streams_both_directions() {
    let mut net = Net::new();
    let c = start(&mut net, 2, &params(false, 2, 5));
    let streams = open_streams(&mut net, &c, 2);
    send_data(&mut net, &streams, 1_000_000);
    let server = finish(&mut net, &c, &streams, &[1_000_000, 1_000_000], false);
    check_results_shape(&server, 2, false);
    assert_eq!(stream_ids(&server), vec![1, 3]);
    assert_eq!(stream_bytes(&server, 1), 1_000_000);
    assert_eq!(stream_bytes(&server, 3), 1_000_000);
    assert!(net.events()[0].contains("received 2000000 bytes"));

    net.settle();
    let c = start(&mut net, 3, &params(true, 2, 5));
    let streams = open_streams(&mut net, &c, 2);
    let got = receive_for(&mut net, &streams, 200);
    assert!(got.iter().all(|&g| g > 0), "{got:?}");
    let server = finish(&mut net, &c, &streams, &got, true);
    check_results_shape(&server, 2, true);
    assert_eq!(stream_ids(&server), vec![1, 3]);
    assert!(net.events()[0].ends_with("(reverse, 2 streams)"));
}

#[test]
fn busy_server_denies_second_client() {
    let mut net = Net::new();
    let c = open_control(&mut net, 4);
    assert_eq!(net.read_state(c.ctrl), msg::PARAM_EXCHANGE);
    // While waiting for parameters: denied without reading the cookie.
    let other = net.connect(1024, 1024);
    assert_eq!(net.read_state(other), msg::ACCESS_DENIED);
    net.send_json(c.ctrl, &params(false, 1, 5));
    assert_eq!(net.read_state(c.ctrl), msg::CREATE_STREAMS);
    // While waiting for streams, a stranger's connection gets ACCESS_DENIED after its
    // cookie (it lands where data connections are expected).
    let other = open_control(&mut net, 5);
    assert_eq!(net.read_state(other.ctrl), msg::ACCESS_DENIED);
    let streams = open_streams(&mut net, &c, 1);
    // While running: denied right away.
    let other = open_control(&mut net, 6);
    assert_eq!(net.read_state(other.ctrl), msg::ACCESS_DENIED);
    net.until("denied connection closed", |n| {
        !n.sock(other.ctrl).may_recv()
    });
    send_data(&mut net, &streams, 100_000);
    let server = finish(&mut net, &c, &streams, &[100_000], false);
    assert_eq!(stream_bytes(&server, 1), 100_000);
    let ev = net.events();
    assert_eq!(
        ev.iter().filter(|e| e.contains("refused")).count(),
        3,
        "{ev:?}"
    );
}

#[test]
fn client_vanishing_mid_test_frees_the_server() {
    let mut net = Net::new();
    let c = start(&mut net, 7, &params(false, 2, 5));
    let streams = open_streams(&mut net, &c, 2);
    send_data(&mut net, &streams, 200_000);
    for &h in streams.iter().chain([&c.ctrl]) {
        net.sock(h).abort();
    }
    net.until("server idle", |n| !n.srv.busy());
    assert!(net.events()[0].contains("test failed"));
    net.settle();
    // A new test runs normally afterwards.
    one_stream_test(&mut net, 8, 50_000);
}

#[test]
fn client_closing_control_during_params_frees_the_server() {
    let mut net = Net::new();
    let c = open_control(&mut net, 9);
    assert_eq!(net.read_state(c.ctrl), msg::PARAM_EXCHANGE);
    // Half a length prefix, then goodbye.
    net.send_all(c.ctrl, &[0, 0]);
    net.close(c.ctrl);
    net.until("server idle", |n| !n.srv.busy());
    assert!(net.events()[0].contains("closed the control connection"));
}

#[test]
fn silent_client_times_out() {
    let mut net = Net::new();
    let c = start(&mut net, 10, &params(false, 1, 1));
    let _streams = open_streams(&mut net, &c, 1);
    // Never sends TEST_END: the server gives up after the duration and a grace period.
    net.advance(1000 + GRACE_MS - 100);
    assert!(net.srv.busy());
    net.advance(200);
    assert!(!net.srv.busy());
    assert!(net.events()[0].contains("timed out"));
    // And a connection that never sends its cookie is dropped.
    let h = net.connect(1024, 1024);
    net.advance(COOKIE_TIMEOUT_MS + 1);
    net.until("reset", |n| n.sock(h).state() == tcp::State::Closed);
    assert!(!net.srv.busy());
}

#[test]
fn wrong_cookie_on_data_connection_is_denied() {
    let mut net = Net::new();
    let c = start(&mut net, 11, &params(false, 1, 5));
    let bad = net.connect(4096, 4096);
    net.send_all(bad, &cookie(12));
    assert_eq!(net.read_state(bad), msg::ACCESS_DENIED);
    // The test goes on with the right cookie.
    let streams = open_streams(&mut net, &c, 1);
    send_data(&mut net, &streams, 77_777);
    let server = finish(&mut net, &c, &streams, &[77_777], false);
    assert_eq!(stream_bytes(&server, 1), 77_777);
}

/// Expects SERVER_ERROR with iperf3 error `code`, then the connection closing.
fn expect_server_error(net: &mut Net, c: &Client, code: u32) {
    assert_eq!(net.read_state(c.ctrl), msg::SERVER_ERROR);
    let e = net.read_exact(c.ctrl, 8);
    assert_eq!(u32::from_be_bytes(e[..4].try_into().unwrap()), code);
    assert_eq!(u32::from_be_bytes(e[4..].try_into().unwrap()), 0);
    net.until("server closes", |n| !n.sock(c.ctrl).may_recv());
    net.close(c.ctrl);
    net.until("server idle", |n| !n.srv.busy());
}

#[test]
fn bad_parameters_are_refused_and_server_recovers() {
    let mut net = Net::new();
    let cases: Vec<(Vec<u8>, u32, &str)> = vec![
        (0x0010_0000u32.to_be_bytes().to_vec(), 114, "too long"),
        (u32::MAX.to_be_bytes().to_vec(), 114, "too long"),
        (
            {
                let mut m = 12u32.to_be_bytes().to_vec();
                m.extend_from_slice(b"{\"tcp\":true,");
                m
            },
            114,
            "malformed",
        ),
        (
            {
                let mut m = 5u32.to_be_bytes().to_vec();
                m.extend_from_slice(b"[1,2]");
                m
            },
            114,
            "not a JSON object",
        ),
    ];
    for (i, (wire, code, why)) in cases.into_iter().enumerate() {
        let c = open_control(&mut net, 13 + i as u8);
        assert_eq!(net.read_state(c.ctrl), msg::PARAM_EXCHANGE);
        net.send_all(c.ctrl, &wire);
        expect_server_error(&mut net, &c, code);
        let ev = net.events();
        assert!(ev[0].contains(why), "{ev:?}");
        net.settle();
    }
    let unsupported = [
        (
            "{\"udp\":true,\"time\":5,\"parallel\":1,\"len\":1460}",
            ie::UNIMP,
            "UDP",
        ),
        (
            "{\"tcp\":true,\"bidirectional\":true,\"parallel\":1}",
            ie::UNIMP,
            "bidirectional",
        ),
        ("{\"tcp\":true,\"parallel\":9}", ie::NUMSTREAMS, "parallel"),
        ("{\"tcp\":true,\"parallel\":0}", ie::NUMSTREAMS, "parallel"),
    ];
    for (i, (p, code, why)) in unsupported.into_iter().enumerate() {
        let c = open_control(&mut net, 20 + i as u8);
        assert_eq!(net.read_state(c.ctrl), msg::PARAM_EXCHANGE);
        net.send_json(c.ctrl, p);
        expect_server_error(&mut net, &c, code);
        let ev = net.events();
        assert!(ev[0].contains(why), "{ev:?}");
        net.settle();
    }
    // Still serving.
    one_stream_test(&mut net, 25, 1000);
}

#[test]
fn garbage_control_message_ends_test() {
    let mut net = Net::new();
    let c = start(&mut net, 0, &params(false, 1, 5));
    let _streams = open_streams(&mut net, &c, 1);
    net.send_all(c.ctrl, &[99]);
    net.until("server idle", |n| !n.srv.busy());
    assert!(net.events()[0].contains("unexpected control message"));
}

#[test]
fn reverse_byte_limit_is_honoured() {
    let mut net = Net::new();
    let p = "{\"tcp\":true,\"reverse\":true,\"num\":100000,\"parallel\":1,\"len\":1000,\"time\":0}";
    let c = start(&mut net, 0, p);
    let streams = open_streams(&mut net, &c, 1);
    let got = receive_for(&mut net, &streams, 200);
    assert_eq!(got[0], 100_000);
    let server = finish(&mut net, &c, &streams, &got, true);
    assert_eq!(stream_bytes(&server, 1), 100_000);
}

#[test]
fn server_socket_count_stays_bounded() {
    let mut net = Net::new();
    let base = net.lo.sockets.iter().count();
    for i in 0..5 {
        let c = start(&mut net, i, &params(i % 2 == 1, 2, 5));
        let streams = open_streams(&mut net, &c, 2);
        let got = if i % 2 == 1 {
            receive_for(&mut net, &streams, 20)
        } else {
            send_data(&mut net, &streams, 10_000);
            vec![10_000, 10_000]
        };
        finish(&mut net, &c, &streams, &got, i % 2 == 1);
        for h in streams.into_iter().chain([c.ctrl]) {
            net.lo.sockets.remove(h);
        }
        net.settle();
    }
    // Client sockets were removed; the server's closed ones must be gone too.
    net.advance(CLOSE_TIMEOUT_MS + 1);
    net.settle();
    assert_eq!(net.lo.sockets.iter().count(), base);
}

#[test]
fn params_parser_reads_what_matters() {
    let p = parse_params(params(true, 2, 7).as_bytes()).unwrap();
    assert_eq!(
        p,
        Params {
            reverse: true,
            parallel: 2,
            time_s: 7,
            omit_s: 0,
            num: 0,
            blockcount: 0,
            len: 131072,
            bandwidth: 0
        }
    );
    let p = parse_params(b"{}").unwrap();
    assert_eq!((p.parallel, p.reverse, p.len), (1, false, DEFAULT_LEN));
    let p = parse_params(b"{\"time\":-5,\"len\":99999999999,\"extra\":{\"x\":[1]}}").unwrap();
    assert_eq!((p.time_s, p.len), (0, MAX_LEN));
}

#[test]
fn rate_line_formatting() {
    let mut s = String::new();
    push_rate(&mut s, 52_428_800, 5_000);
    assert_eq!(s, "5.00 s = 83.9 Mbit/s");
    let mut s = String::new();
    push_rate(&mut s, 1, 0);
    assert_eq!(s, "0.00 s = 0.0 Mbit/s");
    let mut s = String::new();
    push_rate(&mut s, u64::MAX, 1);
    assert!(s.starts_with("0.00 s = "), "{s}");
}

#[test]
fn omitted_seconds_are_not_reported() {
    let mut net = Net::new();
    let p = "{\"tcp\":true,\"omit\":1,\"time\":2,\"parallel\":1,\"len\":131072}";
    let c = start(&mut net, 0, p);
    let streams = open_streams(&mut net, &c, 1);
    send_data(&mut net, &streams, 50_000);
    net.advance(1000);
    send_data(&mut net, &streams, 70_000);
    let server = finish(&mut net, &c, &streams, &[120_000], false);
    assert_eq!(stream_bytes(&server, 1), 70_000);
}

#[test]
fn malformed_client_results_end_the_test() {
    let mut net = Net::new();
    let c = start(&mut net, 0, &params(false, 1, 5));
    let streams = open_streams(&mut net, &c, 1);
    net.send_all(c.ctrl, &[msg::TEST_END]);
    assert_eq!(net.read_state(c.ctrl), msg::EXCHANGE_RESULTS);
    net.send_json(c.ctrl, "{\"streams\":[");
    net.until("server idle", |n| !n.srv.busy());
    assert!(net.events()[0].contains("malformed client results"));
    net.sock(streams[0]).abort();
    net.settle();
    // Length over the cap: also ends it, without waiting for 4 GiB.
    let c = start(&mut net, 1, &params(false, 1, 5));
    let _streams = open_streams(&mut net, &c, 1);
    net.send_all(c.ctrl, &[msg::TEST_END]);
    assert_eq!(net.read_state(c.ctrl), msg::EXCHANGE_RESULTS);
    net.send_all(c.ctrl, &u32::MAX.to_be_bytes());
    net.until("server idle", |n| !n.srv.busy());
    assert!(net.events()[0].contains("too long"));
}

#[test]
fn data_buffers_stay_within_their_budget_under_a_flood_of_wrong_cookies() {
    let mut net = Net::new();
    let base = net.srv_heap;
    let _c = start(&mut net, 0, &params(false, MAX_STREAMS, 5));
    // Connections to the data port with the wrong cookie, never closed by their
    // side: each is denied and waits in the closing list with its buffers.
    for i in 0..40u8 {
        let h = net.connect(1024, 1024);
        if net.sock(h).may_send() {
            let _ = net.sock(h).send_slice(&cookie(100 + i));
        }
        for _ in 0..5 {
            net.step();
        }
    }
    let held = usize::try_from(net.srv_peak - base).unwrap();
    let budget = MAX_DATA_SOCKETS * (DATA_BUFFER + DATA_SMALL_BUFFER) + 64 * 1024;
    assert!(
        held <= budget,
        "the server held {held} bytes, over {budget}: data buffers beyond the budget"
    );
}

std::thread_local! {
    static LOW: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

fn low() -> bool {
    LOW.with(core::cell::Cell::get)
}

#[test]
fn low_memory_refuses_the_test_then_it_runs_with_small_buffers() {
    let mut net = Net::with_memory(Iperf3Memory {
        data_buffer: 32 * 1024,
        memory_low: low,
    });
    LOW.with(|l| l.set(true));
    let c = open_control(&mut net, 1);
    assert_eq!(net.read_state(c.ctrl), msg::PARAM_EXCHANGE);
    net.send_json(c.ctrl, &params(false, 2, 5));
    // SERVER_ERROR instead of CREATE_STREAMS: iperf3 prints "unable to create a
    // new stream".
    expect_server_error(&mut net, &c, ie::CREATESTREAM);
    assert!(net.events()[0].contains("no memory"));
    net.settle();
    assert_eq!(net.srv.data_sockets(), 0);
    LOW.with(|l| l.set(false));
    let c = start(&mut net, 2, &params(true, 2, 5));
    let streams = open_streams(&mut net, &c, 2);
    let got = receive_for(&mut net, &streams, 50);
    assert!(got.iter().all(|&g| g > 0), "{got:?}");
    let server = finish(&mut net, &c, &streams, &got, true);
    check_results_shape(&server, 2, true);
}

#[test]
fn a_data_buffer_the_heap_cannot_give_refuses_the_test() {
    let mut net = Net::new();
    let c = open_control(&mut net, 3);
    assert_eq!(net.read_state(c.ctrl), msg::PARAM_EXCHANGE);
    // Room for the parameters and the control sockets, not for a 256 KiB buffer.
    net.srv_limit = Some(64 * 1024);
    net.send_json(c.ctrl, &params(false, 1, 5));
    expect_server_error(&mut net, &c, ie::CREATESTREAM);
    net.srv_limit = None;
    assert!(net.events()[0].contains("no memory"));
    net.settle();
    // Still serving.
    one_stream_test(&mut net, 4, 1000);
}

#[test]
fn data_buffers_are_sized_from_the_heap() {
    let never = || false;
    let buf = |heap: usize| Iperf3Memory::for_heap(heap, never).data_buffer;
    assert_eq!(buf(1280 * 1024), 32 * 1024, "the 8 MiB guest's heap");
    assert_eq!(buf(640 * 1024), MIN_DATA_BUFFER);
    assert_eq!(buf(64 << 20), DATA_BUFFER);
    assert_eq!(buf(0), MIN_DATA_BUFFER);
    assert_eq!(buf(usize::MAX), DATA_BUFFER);
    // The data buffers of a small heap's server take at most about a quarter of it.
    let heap = 1280 * 1024;
    assert!(MAX_DATA_SOCKETS * (buf(heap) + DATA_SMALL_BUFFER) <= heap * 3 / 10);
}
