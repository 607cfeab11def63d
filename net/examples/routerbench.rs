//! Host harness of the router's forward path (issue 34): established TCP flows
//! pushed through the same code the kernel runs, timed per packet.
//!
//! The path is the kernel's: a [`Gateway`] over two stack interfaces whose links
//! are `Routed<Bridge<Mem>>` (a plain vif is a pass-through bridge of one port, as
//! `kernel/src/dev/network.rs` builds them), the router with the `Netfilter` hook,
//! masquerade and `mtu_fix` on the WAN, and the image's firewall
//! (`xtask/rootfs/etc/config/firewall` compiled by `fwconfig`). `Mem` is an
//! in-memory link: it hands out frames made beforehand (their allocation and the
//! netfront's copy are not timed, their free is) and counts the TCP frames sent;
//! it answers the router's ARP requests as the host would.
//!
//! Flows 192.168.1.100:40000.. -> 10.0.0.1:5201 are opened from the LAN (SYN,
//! SYN-ACK, ACK, window scaling on; every segment carries timestamps, as Linux's),
//! then rounds of data segments one way (checksum blank, as netback delivers the
//! host's TCP) and one ACK the other way per two MSS of data of a flow (a
//! delayed-ACK receiver), the flows taking turns. Each round feeds its frames and
//! polls the gateway until they are through; only the polling is timed.
//!
//! A workload is named `mss` (1448-byte segments, 1514-byte frames) or `gso` (45 x
//! 1448-byte segments with gso_size 1448, both links claiming GSO as the netfront
//! does when the backend offers it; the other link takes them whole), then `4` for
//! four concurrent flows, then `-in` for data wan -> lan1 (iperf3 `-R`: the LAN
//! client's flow, the WAN server sending; the ACKs go out) instead of lan1 -> wan:
//! `mss`, `mss-in`, `mss4`, `gso4-in`, ... `all` runs the eight (the bed's four TCP
//! rows at both segment sizes), `both` runs `mss` and `gso`. Both links take
//! partial checksums, as the netfront always does. Mode `idle` only times idle
//! turns (`rounds` thousand of them), for a profile.
//!
//! It prints ns per data segment (the data's direction), ns per ACK (the other
//! direction) and ns per data byte (medians over the rounds), and for a single
//! workload the fixed cost of a turn of the kernel's network loop with nothing
//! received (`Gateway::poll`, then the router's stack interfaces' polls), which
//! every wake-up pays however few frames it brings.
//!
//! Run (nice: the test bed shares the machine; compare builds alternately, several
//! runs, medians):
//!
//! ```text
//! CARGO_PROFILE_RELEASE_DEBUG=true CARGO_PROFILE_RELEASE_STRIP=false \
//!   nice -n 19 cargo run --release -p xenlet-net --example routerbench -- [WORKLOAD|all|both|idle] [rounds]
//! nice -n 19 perf record --call-graph dwarf target/release/examples/routerbench mss 4000
//! valgrind --tool=callgrind --toggle-collect='*Bench::through' \
//!   target/release/examples/routerbench mss 300
//! ```
//!
//! Callgrind's count of instructions in the timed part, divided by the packets
//! (330 rounds of 64 segments and 32 ACKs for `mss`), does not depend on the
//! machine's load (a closer proxy than the host's ns for a guest under QEMU's TCG,
//! which pays by the instruction);
//! `*Bench*data_through*` or `*Bench*acks_through*` count one direction.
//!
//! Against an older commit (ac9bfdc, before the bridge), in a worktree of it: copy
//! this file to its `net/examples/`, drop the `Bridge` import, and make the links
//! `Routed<Mem>` (`Ifs = Vec<NetIf<Routed<Mem>>>`, `Routed::new(lan)`, `mem()`
//! returning `&mut ifs[k].link.inner`), and spell out the `PortSpec`s
//! (`PortSpec::lan` is `masq: false, mss_clamp: false`, `wan` both true).

use std::collections::VecDeque;
use std::time::Instant;

use xenlet_net::bridge::Bridge;
use xenlet_net::gateway::{Gateway, GatewaySpec, PortSpec, Routed};
use xenlet_net::iface::NetIf;
use xenlet_net::link::{Link, LinkStats, RxChecksum};
use xenlet_net::{config, fwconfig};
use xenlet_router::{checksum, IfId};

const LAN_HOST: [u8; 4] = [192, 168, 1, 100];
const LAN_ROUTER: [u8; 4] = [192, 168, 1, 1];
const WAN_HOST: [u8; 4] = [10, 0, 0, 1];
const WAN_ROUTER: [u8; 4] = [10, 0, 0, 2];
const LAN_HOST_MAC: [u8; 6] = [2, 0, 0, 0, 1, 100];
const LAN_ROUTER_MAC: [u8; 6] = [2, 0, 0, 0, 1, 1];
const WAN_HOST_MAC: [u8; 6] = [2, 0, 0, 0, 2, 1];
const WAN_ROUTER_MAC: [u8; 6] = [2, 0, 0, 0, 2, 2];
const SPORT: u16 = 40000;
const DPORT: u16 = 5201;
const MSS: usize = 1448;
/// The timestamps option (NOP, NOP, TS) every segment of a Linux flow carries.
const TS: [u8; 12] = [1, 1, 8, 10, 0, 0, 0, 2, 0, 0, 0, 1];

/// An in-memory link: frames to hand out, counters of what was sent.
struct Mem {
    mac: [u8; 6],
    /// The host at the other end (MAC, address).
    host: ([u8; 6], [u8; 4]),
    rx: VecDeque<(Vec<u8>, RxChecksum, Option<u16>)>,
    /// Takes GSO packets (the netfront's `feature-gso-tcpv4`).
    offload: bool,
    tx_frames: u64,
    tx_bytes: u64,
    /// Keep the frames sent (set up only).
    keep: bool,
    sent: Vec<Vec<u8>>,
}

impl Mem {
    fn new(mac: [u8; 6], offload: bool, host: ([u8; 6], [u8; 4])) -> Self {
        Mem {
            mac,
            host,
            rx: VecDeque::new(),
            offload,
            tx_frames: 0,
            tx_bytes: 0,
            keep: true,
            sent: Vec::new(),
        }
    }

    fn take(&mut self, frame: &[u8]) -> Result<(), String> {
        // the host answers the router's ARP requests (a neighbour gone stale)
        if frame.len() >= 42 && frame[12..14] == [8, 6] && frame[20..22] == [0, 1] {
            let (mac, ip) = self.host;
            let mut r = arp(mac, ip, [0; 4]);
            r[..6].copy_from_slice(&frame[6..12]);
            r[21] = 2;
            r[32..42].copy_from_slice(&frame[22..32]);
            self.rx.push_back((r, RxChecksum::Unknown, None));
            return Ok(());
        }
        self.tx_frames += 1;
        self.tx_bytes += frame.len() as u64;
        if self.keep {
            self.sent.push(frame.to_vec());
        }
        Ok(())
    }
}

impl Link for Mem {
    fn mac(&self) -> [u8; 6] {
        self.mac
    }
    fn recv(&mut self) -> Option<Vec<u8>> {
        self.rx.pop_front().map(|(f, _, _)| f)
    }
    fn recv_flagged(&mut self) -> Option<(Vec<u8>, RxChecksum)> {
        self.rx.pop_front().map(|(f, c, _)| (f, c))
    }
    fn recv_meta(&mut self) -> Option<(Vec<u8>, RxChecksum, Option<u16>)> {
        self.rx.pop_front()
    }
    fn tx_csum_blank(&self) -> bool {
        true // as the netfront: it always sends partial checksums
    }
    fn send_csum_blank(&mut self, frame: &[u8]) -> Result<(), String> {
        self.take(frame)
    }
    fn can_send(&mut self) -> bool {
        true
    }
    fn send(&mut self, frame: &[u8]) -> Result<(), String> {
        self.take(frame)
    }
    fn stats(&self) -> LinkStats {
        LinkStats::default()
    }
    fn broken(&self) -> Option<&str> {
        None
    }
    fn gso_tcpv4(&self) -> bool {
        self.offload
    }
    fn send_gso(&mut self, frame: &[u8], _mss: u16) -> Result<(), String> {
        self.take(frame)
    }
    fn tx_free_slots(&self) -> usize {
        256
    }
    fn mtu(&self) -> usize {
        1500
    }
}

type Ifs = Vec<NetIf<Routed<Bridge<Mem>>>>;

fn mem(ifs: &mut Ifs, k: usize) -> &mut Mem {
    ifs[k].link.inner.ports_mut()[0].link_mut()
}

struct Seg<'a> {
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    options: &'a [u8],
    payload: usize,
    /// Checksum blank (pseudo-header sum only) rather than complete.
    blank: bool,
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;

/// An Ethernet frame of one TCP segment.
fn frame(s: &Seg) -> Vec<u8> {
    let tcp_len = 20 + s.options.len() + s.payload;
    let ip_len = 20 + tcp_len;
    let mut f = vec![0u8; 14 + ip_len];
    f[..6].copy_from_slice(&s.dst_mac);
    f[6..12].copy_from_slice(&s.src_mac);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..];
    ip[0] = 0x45;
    // an IP length over 65535 (a GSO packet of 64 KiB) is written as 0, as Linux does
    let l = u16::try_from(ip_len).unwrap_or(0);
    ip[2..4].copy_from_slice(&l.to_be_bytes());
    ip[6] = 0x40; // DF
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&s.src);
    ip[16..20].copy_from_slice(&s.dst);
    let c = checksum::checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let t = &mut ip[20..];
    t[0..2].copy_from_slice(&s.sport.to_be_bytes());
    t[2..4].copy_from_slice(&s.dport.to_be_bytes());
    t[4..8].copy_from_slice(&s.seq.to_be_bytes());
    t[8..12].copy_from_slice(&s.ack.to_be_bytes());
    t[12] = u8::try_from((20 + s.options.len()) / 4 * 16).unwrap();
    t[13] = s.flags;
    t[14..16].copy_from_slice(&s.window.to_be_bytes());
    t[20..20 + s.options.len()].copy_from_slice(s.options);
    for (i, b) in t[20 + s.options.len()..].iter_mut().enumerate() {
        *b = i as u8;
    }
    let mut ps = checksum::sum(checksum::sum(0, &s.src), &s.dst) + 6 + tcp_len as u32;
    if s.blank {
        let c = checksum::fold(ps);
        t[16..18].copy_from_slice(&c.to_be_bytes());
    } else {
        ps = checksum::sum(ps, t);
        let c = !checksum::fold(ps);
        t[16..18].copy_from_slice(&c.to_be_bytes());
    }
    f
}

/// An ARP request from `mac`/`ip` for the router's `target`.
fn arp(mac: [u8; 6], ip: [u8; 4], target: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&mac);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    let a = &mut f[14..];
    a[..8].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    a[8..14].copy_from_slice(&mac);
    a[14..18].copy_from_slice(&ip);
    a[24..28].copy_from_slice(&target);
    f
}

fn firewall() -> xenlet_router::firewall::ruleset::Ruleset {
    let text = include_str!("../../xtask/rootfs/etc/config/firewall");
    let n = fwconfig::NetworkIface::new;
    let ifaces = [
        n("lan", IfId(0), "eth0"),
        n("wan", IfId(1), "eth1"),
        n("wan6", IfId(1), "eth1"),
    ];
    let (c, _) = fwconfig::compile_text(text, &ifaces).expect("the image's firewall");
    c.ruleset
}

/// One TCP flow LAN host -> WAN host (opened from the LAN, as iperf3's client).
struct Flow {
    sport: u16,
    /// Its masqueraded port on the WAN.
    nat_port: u16,
    /// Next sequence number of the LAN host, next of the WAN host.
    seq: u32,
    peer_seq: u32,
    /// Data the receiver acknowledged so far (the WAN host's of `seq` when the
    /// data goes out, the LAN host's of `peer_seq` when it comes in).
    acked: u32,
}

/// Which way the data goes: `Out` lan1 -> wan (iperf3), `In` wan -> lan1 (`-R`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Out,
    In,
}

struct Bench {
    ifs: Ifs,
    gw: Gateway,
    now: i64,
    flows: Vec<Flow>,
    blank: bool,
}

/// Link 0 is the LAN, link 1 the WAN.
const LAN: usize = 0;
const WAN: usize = 1;

impl Bench {
    fn new(offload: bool, nflows: usize) -> Self {
        let lan = Mem::new(LAN_ROUTER_MAC, offload, (LAN_HOST_MAC, LAN_HOST));
        let wan = Mem::new(WAN_ROUTER_MAC, offload, (WAN_HOST_MAC, WAN_HOST));
        let mut ifs: Ifs = vec![
            NetIf::new(
                "eth0",
                Routed::new(Bridge::plain("eth0", lan)),
                &config::parse("192.168.1.1/24").unwrap(),
                0,
                3,
            ),
            NetIf::new(
                "eth1",
                Routed::new(Bridge::plain("eth1", wan)),
                &config::parse("10.0.0.2/24,gw=10.0.0.1").unwrap(),
                0,
                4,
            ),
        ];
        let spec = GatewaySpec {
            ports: vec![PortSpec::lan("eth0"), PortSpec::wan("eth1")],
            conntrack_max: 16384,
            hash_seed: 7,
            firewall: Some(firewall()),
        };
        let gw = Gateway::new(&spec, &mut ifs).unwrap();
        let mut b = Bench {
            ifs,
            gw,
            now: 1000,
            flows: Vec::new(),
            blank: true,
        };
        b.feed(LAN, arp(LAN_HOST_MAC, LAN_HOST, LAN_ROUTER), None);
        b.feed(WAN, arp(WAN_HOST_MAC, WAN_HOST, WAN_ROUTER), None);
        for _ in 0..20 {
            b.step();
        }
        for k in 0..nflows {
            b.open(
                SPORT + k as u16,
                1_000_000 * (k as u32 + 1),
                5_000_000 * (k as u32 + 1),
            );
        }
        for k in [LAN, WAN] {
            let m = mem(&mut b.ifs, k);
            m.keep = false;
            m.sent.clear();
        }
        b
    }

    fn step(&mut self) {
        self.now += 1;
        self.gw.poll(&mut self.ifs, self.now);
        for n in self.ifs.iter_mut() {
            n.poll(self.now);
        }
    }

    fn feed(&mut self, k: usize, f: Vec<u8>, gso: Option<u16>) {
        let c = if self.blank {
            RxChecksum::Blank
        } else {
            RxChecksum::Unknown
        };
        mem(&mut self.ifs, k).rx.push_back((f, c, gso));
    }

    /// A segment of flow `f` from the LAN host, acknowledging `ack`.
    fn lan_seg(&self, f: usize, flags: u8, options: &[u8], payload: usize, ack: u32) -> Vec<u8> {
        self.seg(true, f, flags, options, payload, ack)
    }

    /// A segment of flow `f` from the WAN host, acknowledging `ack`.
    fn wan_seg(&self, f: usize, flags: u8, options: &[u8], payload: usize, ack: u32) -> Vec<u8> {
        self.seg(false, f, flags, options, payload, ack)
    }

    /// A segment of flow `f` from the LAN host (`from_lan`) to the WAN host through
    /// the router, or from the WAN host to the router's masqueraded port.
    fn seg(
        &self,
        from_lan: bool,
        f: usize,
        flags: u8,
        options: &[u8],
        payload: usize,
        ack: u32,
    ) -> Vec<u8> {
        let fl = &self.flows[f];
        let ((src_mac, src, sport, seq), (dst_mac, dst, dport)) = if from_lan {
            let to = (LAN_ROUTER_MAC, WAN_HOST, DPORT);
            ((LAN_HOST_MAC, LAN_HOST, fl.sport, fl.seq), to)
        } else {
            let to = (WAN_ROUTER_MAC, WAN_ROUTER, fl.nat_port);
            ((WAN_HOST_MAC, WAN_HOST, DPORT, fl.peer_seq), to)
        };
        frame(&Seg {
            src_mac,
            dst_mac,
            src,
            dst,
            sport,
            dport,
            seq,
            ack,
            flags,
            window: 0xffff,
            options,
            payload,
            blank: self.blank && payload > 0,
        })
    }

    /// The three-way handshake of a new flow through the router.
    fn open(&mut self, sport: u16, seq: u32, peer_seq: u32) {
        let f = self.flows.len();
        self.flows.push(Flow {
            sport,
            nat_port: 0,
            seq,
            peer_seq,
            acked: 0,
        });
        // MSS 1460, SACK permitted, timestamps, window scale 7 (Linux's SYN)
        let opts = [
            2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
        ];
        let syn = self.lan_seg(f, SYN, &opts, 0, 0);
        mem(&mut self.ifs, WAN).sent.clear();
        self.feed(LAN, syn, None);
        for _ in 0..20 {
            self.step();
        }
        let out = mem(&mut self.ifs, WAN)
            .sent
            .iter()
            .find(|f| f.len() > 34 && f[12..14] == [8, 0] && f[23] == 6)
            .cloned()
            .expect("the SYN left on the WAN");
        assert_eq!(out[26..30], WAN_ROUTER, "masqueraded");
        self.flows[f].nat_port = u16::from_be_bytes([out[34], out[35]]);
        self.flows[f].seq = seq.wrapping_add(1);
        let synack = self.wan_seg(f, SYN | ACK, &opts, 0, seq.wrapping_add(1));
        self.flows[f].peer_seq = peer_seq.wrapping_add(1);
        mem(&mut self.ifs, LAN).sent.clear();
        self.feed(WAN, synack, None);
        for _ in 0..20 {
            self.step();
        }
        assert!(
            mem(&mut self.ifs, LAN)
                .sent
                .iter()
                .any(|f| f.len() > 47 && f[23] == 6 && f[47] == SYN | ACK),
            "the SYN-ACK reached the LAN"
        );
        let ack = self.lan_seg(f, ACK, &[], 0, self.flows[f].peer_seq);
        self.feed(LAN, ack, None);
        for _ in 0..20 {
            self.step();
        }
        // the receiver's window, scaled now: 8 MiB
        let update = self.wan_seg(f, ACK, &[], 0, self.flows[f].seq);
        self.feed(WAN, update, None);
        for _ in 0..20 {
            self.step();
        }
    }

    /// Polls the gateway until link `from` has handed out all its frames and
    /// checks that `n` TCP frames left by the other link; the ns it took.
    fn through(&mut self, from: usize, n: usize, what: &str) -> u128 {
        let to = 1 - from;
        let tx0 = mem(&mut self.ifs, to).tx_frames;
        let t = Instant::now();
        while !mem(&mut self.ifs, from).rx.is_empty() {
            self.now += 1;
            self.gw.poll(&mut self.ifs, self.now);
        }
        let ns = t.elapsed().as_nanos();
        assert_eq!(
            mem(&mut self.ifs, to).tx_frames - tx0,
            n as u64,
            "every {what} forwarded: {:?}",
            self.gw.router.stats().drops().collect::<Vec<_>>()
        );
        ns
    }

    /// [`Self::through`] for the data, apart for callgrind
    /// (`--toggle-collect='*Bench*data_through*'`: the data's direction alone).
    #[inline(never)]
    fn data_through(&mut self, from: usize, n: usize) -> u128 {
        self.through(from, n, "segment")
    }

    /// [`Self::through`] for the ACKs (`'*Bench*acks_through*'`).
    #[inline(never)]
    fn acks_through(&mut self, from: usize, n: usize) -> u128 {
        self.through(from, n, "ACK")
    }

    /// One round: `n` data segments of `seg` bytes (GSO packets if `gso`) going
    /// `dir`, the flows taking turns, then the receivers' ACKs (one per two MSS of
    /// data, the last of a flow acknowledging all of it), the flows taking turns;
    /// the ns the data took, the ns the ACKs took, the number of ACKs.
    fn round(&mut self, dir: Dir, n: usize, seg: usize, gso: bool) -> (u128, u128, usize) {
        let nf = self.flows.len();
        let mut frames = Vec::with_capacity(n);
        for i in 0..n {
            let f = i % nf;
            let fr = match dir {
                Dir::Out => {
                    let fr = self.lan_seg(f, ACK | PSH, &TS, seg, self.flows[f].peer_seq);
                    self.flows[f].seq = self.flows[f].seq.wrapping_add(seg as u32);
                    fr
                }
                Dir::In => {
                    let fr = self.wan_seg(f, ACK | PSH, &TS, seg, self.flows[f].seq);
                    self.flows[f].peer_seq = self.flows[f].peer_seq.wrapping_add(seg as u32);
                    fr
                }
            };
            frames.push(fr);
        }
        let (src, dst) = match dir {
            Dir::Out => (LAN, WAN),
            Dir::In => (WAN, LAN),
        };
        let gso_size = gso.then_some(MSS as u16);
        for f in frames {
            self.feed(src, f, gso_size);
        }
        let data_ns = self.data_through(src, n);
        let mut per_flow: Vec<Vec<Vec<u8>>> = Vec::new();
        for f in 0..nf {
            let mut acks = Vec::new();
            loop {
                let fl = &self.flows[f];
                let sent = if dir == Dir::Out { fl.seq } else { fl.peer_seq };
                if fl.acked == sent {
                    break;
                }
                let left = sent.wrapping_sub(fl.acked);
                let a = fl.acked.wrapping_add(left.min(2 * MSS as u32));
                acks.push(match dir {
                    Dir::Out => self.wan_seg(f, ACK, &TS, 0, a),
                    Dir::In => self.lan_seg(f, ACK, &TS, 0, a),
                });
                self.flows[f].acked = a;
            }
            per_flow.push(acks);
        }
        let mut nacks = 0;
        let most = per_flow.iter().map(Vec::len).max().unwrap_or(0);
        let mut its: Vec<_> = per_flow.into_iter().map(Vec::into_iter).collect();
        for _ in 0..most {
            for it in its.iter_mut() {
                if let Some(a) = it.next() {
                    self.feed(dst, a, None);
                    nacks += 1;
                }
            }
        }
        let ack_ns = self.acks_through(dst, nacks);
        (data_ns, ack_ns, nacks)
    }

    /// Starts the acknowledged counts where the data of `dir` begins.
    fn direction(&mut self, dir: Dir) {
        for fl in self.flows.iter_mut() {
            fl.acked = match dir {
                Dir::Out => fl.seq,
                Dir::In => fl.peer_seq,
            };
        }
    }
}

impl Bench {
    /// The fixed cost of one turn of the kernel's network loop with nothing
    /// received: ns of `Gateway::poll`, ns of the router's stack interfaces' polls.
    fn idle_turns(&mut self, turns: usize) -> (f64, f64) {
        let (mut gw_ns, mut stack_ns) = (0u128, 0u128);
        for _ in 0..turns {
            self.now += 1;
            let t = Instant::now();
            self.gw.poll(&mut self.ifs, self.now);
            let u = Instant::now();
            for n in self.ifs.iter_mut() {
                n.poll(self.now);
            }
            gw_ns += (u - t).as_nanos();
            stack_ns += u.elapsed().as_nanos();
        }
        (gw_ns as f64 / turns as f64, stack_ns as f64 / turns as f64)
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// A workload: `mss`/`gso` (segment size), then `4` for four flows, then `-in`
/// for data wan -> lan (`mss`, `gso4-in`, ...).
fn run(mode: &str, rounds: usize, idle: bool) {
    let (base, dir) = match mode.strip_suffix("-in") {
        Some(b) => (b, Dir::In),
        None => (mode, Dir::Out),
    };
    let (base, nflows) = match base.strip_suffix('4') {
        Some(b) => (b, 4),
        None => (base, 1),
    };
    let (gso, seg, n) = match base {
        "gso" => (true, 45 * MSS, 16),
        "mss" => (false, MSS, 64),
        _ => panic!("unknown mode {mode}"),
    };
    let mut b = Bench::new(gso, nflows);
    b.direction(dir);
    // warm up
    for _ in 0..rounds.div_ceil(10) {
        b.round(dir, n, seg, gso);
    }
    let (mut per_seg, mut per_ack, mut per_byte) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (d, a, nacks) = b.round(dir, n, seg, gso);
        per_seg.push(d as f64 / n as f64);
        per_ack.push(a as f64 / nacks as f64);
        per_byte.push((d + a) as f64 / (n * seg) as f64);
    }
    let st = b.gw.router.stats();
    let dropped = st.dropped_total();
    println!(
        "{mode:8} {:7.0} ns/segment ({seg} B), {:5.0} ns/ACK, {:.3} ns/byte (medians of {rounds} rounds of {n}; dropped {dropped})",
        median(&mut per_seg),
        median(&mut per_ack),
        median(&mut per_byte),
    );
    if idle {
        let (mut idle_gw, mut idle_stack) = (Vec::new(), Vec::new());
        for _ in 0..9 {
            let (g, s) = b.idle_turns(1000);
            idle_gw.push(g);
            idle_stack.push(s);
        }
        println!(
            "{mode}: a turn with nothing received: {:.0} ns Gateway::poll, {:.0} ns the stack's polls (medians of 9 x 1000)",
            median(&mut idle_gw),
            median(&mut idle_stack),
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("both", String::as_str);
    let rounds = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(50);
    match mode {
        "both" => {
            run("mss", rounds, true);
            run("gso", rounds, true);
        }
        // the real bench's four TCP rows, at MSS and with GSO
        "all" => {
            for m in [
                "mss", "mss-in", "mss4", "mss4-in", "gso", "gso-in", "gso4", "gso4-in",
            ] {
                run(m, rounds, false);
            }
        }
        // for a profile of the idle turn alone
        "idle" => {
            let mut b = Bench::new(false, 1);
            let (g, s) = b.idle_turns(rounds * 1000);
            println!("idle: {g:.0} ns Gateway::poll, {s:.0} ns the stack's polls");
        }
        m => run(m, rounds, true),
    }
}
