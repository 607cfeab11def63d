//! `ping`: ICMP/ICMPv6 echo over a smoltcp ICMP socket, with iputils-style output.
//!
//! A [`Ping`] lives on the interface that routes to the target; the caller polls the
//! interface and the ping alternately and prints the lines the ping returns. Each
//! request carries its send time in its payload (as iputils does) and a reply is
//! matched by identifier, sequence number and payload; duplicates are reported, not
//! counted twice. TTLs are not shown: smoltcp's ICMP socket does not report them.

use crate::iface::NetIf;
use crate::link::Link;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use smoltcp::iface::SocketHandle;
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::socket::icmp;
use smoltcp::wire::{Icmpv4Packet, Icmpv4Repr, Icmpv6Packet, Icmpv6Repr, IpAddress};

/// Options, as iputils names them.
#[derive(Clone, Copy, Debug)]
pub struct PingOptions {
    /// `-c`: stop after this many requests (None: until interrupted).
    pub count: Option<u32>,
    /// `-i`: interval between requests, ms.
    pub interval_ms: u64,
    /// `-s`: payload bytes (at least 8 for the timestamp).
    pub size: usize,
    /// `-W`: how long to wait for the last reply, ms.
    pub linger_ms: u64,
}

impl Default for PingOptions {
    fn default() -> Self {
        PingOptions {
            count: None,
            interval_ms: 1000,
            size: 56,
            linger_ms: 2000,
        }
    }
}

/// Parses `ping [-c COUNT] [-i SECONDS] [-s SIZE] [-W SECONDS] [-4|-6] ADDRESS`
/// (numeric addresses only: there is no resolver).
pub fn parse_args(args: &[&str]) -> Result<(PingOptions, IpAddress), String> {
    let mut o = PingOptions::default();
    let mut target = None;
    let mut it = args.iter();
    let secs_ms = |v: &str, what: &str| -> Result<u64, String> {
        let (int, frac) = v.split_once('.').unwrap_or((v, ""));
        let i: u64 = if int.is_empty() { Ok(0) } else { int.parse() }
            .map_err(|_| format!("ping: bad {what}: {v}"))?;
        let f = if frac.is_empty() {
            0
        } else {
            let digits: String = frac.chars().chain("000".chars()).take(3).collect();
            digits
                .parse::<u64>()
                .map_err(|_| format!("ping: bad {what}: {v}"))?
        };
        Ok(i.saturating_mul(1000).saturating_add(f))
    };
    while let Some(&a) = it.next() {
        let mut val = |flag: &str| {
            it.next()
                .copied()
                .ok_or_else(|| format!("ping: option requires an argument -- '{flag}'"))
        };
        match a {
            "-c" => {
                let v = val("c")?;
                o.count = Some(v.parse().ok().filter(|&n: &u32| n > 0).ok_or_else(|| {
                    format!("ping: invalid argument: '{v}': out of range: 1 <= value <= 4294967295")
                })?);
            }
            "-i" => {
                o.interval_ms = secs_ms(val("i")?, "timing interval")?;
                if o.interval_ms < 10 {
                    return Err(String::from(
                        "ping: cannot flood; minimal interval allowed is 10ms",
                    ));
                }
            }
            "-s" => {
                let v = val("s")?;
                o.size = v
                    .parse()
                    .map_err(|_| format!("ping: invalid argument: '{v}'"))?;
            }
            "-W" => o.linger_ms = secs_ms(val("W")?, "linger time")?,
            "-4" | "-6" => {}
            s if s.starts_with('-') => {
                return Err(format!("ping: invalid option -- '{}'", &s[1..]))
            }
            s => {
                if target.is_some() {
                    return Err(String::from(
                        "usage: ping [-c count] [-i interval] [-s size] [-W timeout] address",
                    ));
                }
                target = Some(
                    crate::config::parse_addr(s)
                        .map_err(|_| format!("ping: {s}: Name or service not known"))?,
                );
            }
        }
    }
    let t =
        target.ok_or_else(|| String::from("ping: usage error: Destination address required"))?;
    Ok((o, t))
}

/// A running ping.
pub struct Ping {
    handle: SocketHandle,
    target: IpAddress,
    src: IpAddress,
    ident: u16,
    opts: PingOptions,
    next_seq: u16,
    next_send_us: u64,
    start_us: u64,
    last_send_us: u64,
    transmitted: u32,
    received: u32,
    /// Which sequence numbers have been answered, one bit each: all 65536 of the
    /// 16-bit space (iputils' `rcvd_tbl`), a bit cleared when its number is sent.
    seen: Vec<u64>,
    rtts: RttStats,
    done: bool,
}

/// Sequence numbers: the 16-bit space.
const SEQ_SPACE: usize = 1 << 16;

/// Running RTT statistics (what the summary line needs, whatever the count).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttStats {
    n: u64,
    min: u64,
    max: u64,
    sum: u128,
    sum2: u128,
}

impl RttStats {
    /// Counts one RTT (ns).
    pub fn add(&mut self, ns: u64) {
        self.min = if self.n == 0 { ns } else { self.min.min(ns) };
        self.max = self.max.max(ns);
        self.n += 1;
        self.sum += u128::from(ns);
        self.sum2 += u128::from(ns) * u128::from(ns);
    }

    /// The iputils `rtt min/avg/max/mdev` line; `None` without RTTs.
    pub fn summary(&self) -> Option<String> {
        if self.n == 0 {
            return None;
        }
        let n = u128::from(self.n);
        let avg = self.sum / n;
        let var = (self.sum2 / n).saturating_sub(avg * avg);
        let mdev = var.isqrt() as u64;
        Some(format!(
            "rtt min/avg/max/mdev = {}/{}/{}/{} ms",
            ms3(self.min),
            ms3(avg as u64),
            ms3(self.max),
            ms3(mdev)
        ))
    }
}

fn fill(payload: &mut [u8], seq: u16, now_us: u64) {
    payload[..8].copy_from_slice(&now_us.to_le_bytes());
    for (i, b) in payload[8..].iter_mut().enumerate() {
        *b = (i as u8).wrapping_add(seq as u8);
    }
}

impl Ping {
    /// Starts pinging `target` from `netif`.
    pub fn start<L: Link>(
        netif: &mut NetIf<L>,
        target: IpAddress,
        opts: PingOptions,
        ident: u16,
        now_us: u64,
    ) -> Result<Ping, String> {
        // One unfragmented packet: the payload, the ICMP header (8) and the IP header
        // (20 for IPv4, 40 for IPv6) within the interface's MTU.
        let ip_header = if matches!(target, IpAddress::Ipv4(_)) {
            20
        } else {
            40
        };
        let max = netif.link.mtu().saturating_sub(ip_header + 8);
        if opts.size < 8 || opts.size > max {
            return Err(format!(
                "invalid packet size {}: 8 to {max} (the MTU of {}, {}, less headers)",
                opts.size,
                netif.name,
                netif.link.mtu()
            ));
        }
        if target.is_unspecified() || target.is_multicast() {
            return Err(format!("{target}: not a unicast address"));
        }
        let link_local = matches!(target, IpAddress::Ipv6(a) if a.is_unicast_link_local());
        if !(link_local || netif.on_link(target) || netif.has_default_for(target)) {
            return Err(format!("connect: Network is unreachable ({target})"));
        }
        let src = netif
            .source_for(target)
            .ok_or_else(|| format!("connect: Network is unreachable ({target})"))?;
        let packet = opts.size + 8;
        let rx =
            icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 16], vec![0; 16 * packet]);
        let tx = icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 4], vec![0; 4 * packet]);
        let mut s = icmp::Socket::new(rx, tx);
        s.bind(icmp::Endpoint::Ident(ident))
            .map_err(|e| format!("bind: {e}"))?;
        let handle = netif.sockets.add(s);
        Ok(Ping {
            handle,
            target,
            src,
            ident,
            opts,
            next_seq: 1,
            next_send_us: now_us,
            start_us: now_us,
            last_send_us: now_us,
            transmitted: 0,
            received: 0,
            seen: vec![0; SEQ_SPACE / 64],
            rtts: RttStats::default(),
            done: false,
        })
    }

    /// The first line iputils prints.
    pub fn header(&self) -> String {
        match self.target {
            IpAddress::Ipv4(_) => format!(
                "PING {t} ({t}) {}({}) bytes of data.",
                self.opts.size,
                self.opts.size + 28,
                t = self.target
            ),
            IpAddress::Ipv6(_) => format!(
                "PING {t} ({t}) {} data bytes",
                self.opts.size,
                t = self.target
            ),
        }
    }

    /// Sends what is due and takes replies; returns lines to print.
    pub fn poll<L: Link>(&mut self, netif: &mut NetIf<L>, now_us: u64) -> Vec<String> {
        let mut out = Vec::new();
        if self.done {
            return out;
        }
        let caps = ChecksumCapabilities::default();
        let s = netif.sockets.get_mut::<icmp::Socket>(self.handle);
        // Replies.
        while let Ok((data, from)) = s.recv() {
            let parsed = match (from, self.src) {
                (IpAddress::Ipv4(_), IpAddress::Ipv4(_)) => Icmpv4Packet::new_checked(data)
                    .ok()
                    .and_then(|p| match Icmpv4Repr::parse(&p, &caps) {
                        Ok(Icmpv4Repr::EchoReply {
                            ident,
                            seq_no,
                            data,
                        }) => Some((ident, seq_no, data.to_vec())),
                        _ => None,
                    }),
                (IpAddress::Ipv6(f), IpAddress::Ipv6(me)) => Icmpv6Packet::new_checked(data)
                    .ok()
                    .and_then(|p| match Icmpv6Repr::parse(&f, &me, &p, &caps) {
                        Ok(Icmpv6Repr::EchoReply {
                            ident,
                            seq_no,
                            data,
                        }) => Some((ident, seq_no, data.to_vec())),
                        _ => None,
                    }),
                _ => None,
            };
            let Some((ident, seq, payload)) = parsed else {
                continue;
            };
            if ident != self.ident || from != self.target || payload.len() != self.opts.size {
                continue;
            }
            let mut expect = vec![0u8; self.opts.size];
            let sent_us = u64::from_le_bytes(payload[..8].try_into().unwrap_or([0; 8]));
            fill(&mut expect, seq, sent_us);
            if expect != payload || !self.was_sent(seq) {
                out.push(format!(
                    "{} bytes from {}: icmp_seq={seq} (corrupted reply)",
                    payload.len() + 8,
                    from
                ));
                continue;
            }
            let (word, bit) = (usize::from(seq) / 64, 1u64 << (seq % 64));
            let dup = self.seen.get(word).is_some_and(|w| w & bit != 0);
            let rtt_ns = now_us.saturating_sub(sent_us) * 1000;
            if dup {
                out.push(format!(
                    "{} bytes from {from}: icmp_seq={seq} time={} ms (DUP!)",
                    payload.len() + 8,
                    ms3(rtt_ns)
                ));
                continue;
            }
            if let Some(w) = self.seen.get_mut(word) {
                *w |= bit;
            }
            self.received += 1;
            self.rtts.add(rtt_ns);
            out.push(format!(
                "{} bytes from {from}: icmp_seq={seq} time={} ms",
                payload.len() + 8,
                ms3(rtt_ns)
            ));
        }
        // Requests.
        let more = self.opts.count.is_none_or(|c| self.transmitted < c);
        if more && now_us >= self.next_send_us && s.can_send() {
            let seq = self.next_seq;
            let mut payload = vec![0u8; self.opts.size];
            fill(&mut payload, seq, now_us);
            let sent = match (self.target, self.src) {
                (IpAddress::Ipv4(_), _) => {
                    let r = Icmpv4Repr::EchoRequest {
                        ident: self.ident,
                        seq_no: seq,
                        data: &payload,
                    };
                    s.send(r.buffer_len(), self.target).map(|buf| {
                        r.emit(&mut Icmpv4Packet::new_unchecked(buf), &caps);
                    })
                }
                (IpAddress::Ipv6(t), IpAddress::Ipv6(me)) => {
                    let r = Icmpv6Repr::EchoRequest {
                        ident: self.ident,
                        seq_no: seq,
                        data: &payload,
                    };
                    s.send(r.buffer_len(), self.target).map(|buf| {
                        r.emit(&me, &t, &mut Icmpv6Packet::new_unchecked(buf), &caps);
                    })
                }
                _ => {
                    self.done = true;
                    out.push(String::from("ping: address family mismatch"));
                    return out;
                }
            };
            match sent {
                Ok(()) => {
                    self.transmitted = self.transmitted.saturating_add(1);
                    if let Some(w) = self.seen.get_mut(usize::from(seq) / 64) {
                        *w &= !(1u64 << (seq % 64));
                    }
                    self.next_seq = self.next_seq.wrapping_add(1);
                    self.last_send_us = now_us;
                    self.next_send_us = now_us + self.opts.interval_ms * 1000;
                }
                Err(e) => out.push(format!("ping: sendmsg: {e}")),
            }
        }
        let all_sent = self.opts.count.is_some_and(|c| self.transmitted >= c);
        if all_sent
            && (self.received >= self.transmitted
                || now_us >= self.last_send_us + self.opts.linger_ms * 1000)
        {
            self.done = true;
        }
        out
    }

    /// Whether the ping has finished (count reached and replies in or given up).
    pub fn done(&self) -> bool {
        self.done
    }

    /// When the ping next needs polling (µs).
    pub fn next_deadline_us(&self) -> u64 {
        if self.opts.count.is_some_and(|c| self.transmitted >= c) {
            self.last_send_us + self.opts.linger_ms * 1000
        } else {
            self.next_send_us
        }
    }

    /// Whether a request with sequence number `seq` went out (1, 2, … wrapping
    /// through 0 after 65535).
    fn was_sent(&self, seq: u16) -> bool {
        let t = usize::try_from(self.transmitted).unwrap_or(usize::MAX);
        t >= SEQ_SPACE || (seq != 0 && usize::from(seq) <= t)
    }

    /// Requests sent and replies received.
    pub fn counts(&self) -> (u32, u32) {
        (self.transmitted, self.received)
    }

    /// Closes the socket and returns the summary lines.
    pub fn finish<L: Link>(self, netif: &mut NetIf<L>, now_us: u64) -> Vec<String> {
        netif.sockets.remove(self.handle);
        let (t, r) = (self.transmitted, self.received);
        let loss = ((t - r) * 100).checked_div(t).unwrap_or(0);
        let time_ms = now_us.min(self.last_send_us).saturating_sub(self.start_us) / 1000;
        let mut v = vec![
            format!("--- {} ping statistics ---", self.target),
            format!("{t} packets transmitted, {r} received, {loss}% packet loss, time {time_ms}ms"),
        ];
        if let Some(s) = self.rtts.summary() {
            v.push(s);
        }
        v
    }
}

/// `n` ns as milliseconds with three decimals.
fn ms3(ns: u64) -> String {
    let us = ns / 1000;
    format!("{}.{:03}", us / 1000, us % 1000)
}

/// The iputils `rtt min/avg/max/mdev` line, from RTTs in ns.
pub fn rtt_summary(rtts_ns: &[u64]) -> Option<String> {
    let mut s = RttStats::default();
    for &ns in rtts_ns {
        s.add(ns);
    }
    s.summary()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iface::tests::pair;

    fn run(
        a: &mut NetIf<crate::link::tests::Pipe>,
        b: &mut NetIf<crate::link::tests::Pipe>,
        p: &mut Ping,
        lines: &mut Vec<String>,
    ) {
        let mut now_us = 0u64;
        for _ in 0..2000 {
            a.poll((now_us / 1000) as i64);
            b.poll((now_us / 1000) as i64);
            a.poll((now_us / 1000) as i64);
            lines.extend(p.poll(a, now_us));
            if p.done() {
                break;
            }
            now_us += 10_000;
        }
    }

    #[test]
    fn pings_ipv4_and_ipv6_peers_with_summary() {
        for (ca, cb, target) in [
            ("10.0.0.1/24", "10.0.0.2/24", "10.0.0.2"),
            ("fd00::1/64", "fd00::2/64", "fd00::2"),
        ] {
            let (mut a, mut b) = pair(ca, cb);
            let t: IpAddress = target.parse().unwrap();
            let opts = PingOptions {
                count: Some(3),
                interval_ms: 100,
                ..PingOptions::default()
            };
            let mut p = Ping::start(&mut a, t, opts, 0x1234, 0).unwrap();
            assert!(p
                .header()
                .starts_with(&format!("PING {target} ({target}) 56")));
            if target.contains('.') {
                assert_eq!(
                    p.header(),
                    format!("PING {target} ({target}) 56(84) bytes of data.")
                );
            }
            let mut lines = Vec::new();
            run(&mut a, &mut b, &mut p, &mut lines);
            assert!(p.done());
            assert_eq!(p.counts(), (3, 3), "{lines:?}");
            assert_eq!(lines.len(), 3, "{lines:?}");
            assert!(lines[0].starts_with(&format!("64 bytes from {target}: icmp_seq=1 time=")));
            assert!(lines[2].contains("icmp_seq=3"));
            let s = p.finish(&mut a, 300_000);
            assert_eq!(
                s[1],
                "3 packets transmitted, 3 received, 0% packet loss, time 200ms"
            );
            assert!(s[2].starts_with("rtt min/avg/max/mdev = "));
        }
    }

    #[test]
    fn unanswered_ping_reports_full_loss() {
        let (mut a, mut b) = pair("10.0.0.1/24", "10.0.0.2/24");
        *a.link.cut.borrow_mut() = true;
        let opts = PingOptions {
            count: Some(2),
            interval_ms: 100,
            linger_ms: 500,
            ..PingOptions::default()
        };
        let mut p = Ping::start(&mut a, IpAddress::v4(10, 0, 0, 2), opts, 7, 0).unwrap();
        let mut lines = Vec::new();
        run(&mut a, &mut b, &mut p, &mut lines);
        assert!(p.done());
        let s = p.finish(&mut a, 700_000);
        assert!(
            s[1].starts_with("2 packets transmitted, 0 received, 100% packet loss"),
            "{s:?}"
        );
        assert_eq!(s.len(), 2, "no rtt line without replies");
    }

    #[test]
    fn refuses_unroutable_and_bad_sizes() {
        let (mut a, _) = pair("10.0.0.1/24", "10.0.0.2/24");
        let e = Ping::start(
            &mut a,
            IpAddress::v4(192, 168, 1, 1),
            PingOptions::default(),
            1,
            0,
        );
        assert!(e.err().unwrap().contains("unreachable"));
        let sized = |size| PingOptions {
            size,
            ..PingOptions::default()
        };
        let e = Ping::start(&mut a, IpAddress::v4(10, 0, 0, 2), sized(1473), 1, 0);
        assert_eq!(
            e.err().unwrap(),
            "invalid packet size 1473: 8 to 1472 (the MTU of eth0, 1500, less headers)"
        );
        assert!(Ping::start(&mut a, IpAddress::v4(10, 0, 0, 2), sized(1472), 1, 0).is_ok());
        assert!(Ping::start(&mut a, IpAddress::v4(10, 0, 0, 2), sized(7), 1, 0).is_err());
        a.link.mtu = 9000;
        assert!(Ping::start(&mut a, IpAddress::v4(10, 0, 0, 2), sized(8972), 1, 0).is_ok());
    }

    #[test]
    fn parses_iputils_options() {
        let (o, t) = parse_args(&["-c", "3", "-i", "0.2", "-s", "100", "10.0.0.1"]).unwrap();
        assert_eq!((o.count, o.interval_ms, o.size), (Some(3), 200, 100));
        assert_eq!(t, IpAddress::v4(10, 0, 0, 1));
        let (_, t6) = parse_args(&["-6", "fd00::1"]).unwrap();
        assert_eq!(t6, "fd00::1".parse::<IpAddress>().unwrap());
        assert!(parse_args(&[])
            .unwrap_err()
            .contains("Destination address required"));
        assert!(parse_args(&["-c"])
            .unwrap_err()
            .contains("requires an argument"));
        assert!(parse_args(&["-c", "0", "1.1.1.1"]).is_err());
        assert!(parse_args(&["-i", "0.001", "1.1.1.1"])
            .unwrap_err()
            .contains("flood"));
        assert!(parse_args(&["example.org"])
            .unwrap_err()
            .contains("Name or service not known"));
        assert!(parse_args(&["-x", "1.1.1.1"])
            .unwrap_err()
            .contains("invalid option"));
    }

    /// A ping from `a` to 10.0.0.2 every 10 ms with no count, with identifier `id`.
    fn endless_ping<L: Link>(a: &mut NetIf<L>, id: u16) -> Ping {
        let opts = PingOptions {
            count: None,
            interval_ms: 10,
            ..PingOptions::default()
        };
        let t: IpAddress = "10.0.0.2".parse().unwrap();
        Ping::start(a, t, opts, id, 0).unwrap()
    }

    #[test]
    fn a_ping_without_a_count_keeps_a_fixed_state() {
        let (mut a, mut b) = pair("10.0.0.1/24", "10.0.0.2/24");
        let mut p = endless_ping(&mut a, 0x4321);
        let mut now_us = 0u64;
        let mut heap_at = |p: &mut Ping, a: &mut NetIf<_>, b: &mut NetIf<_>, until: u64| {
            while now_us < until {
                a.poll((now_us / 1000) as i64);
                b.poll((now_us / 1000) as i64);
                a.poll((now_us / 1000) as i64);
                for l in p.poll(a, now_us) {
                    assert!(l.contains(" time=") && !l.contains("DUP"), "{l}");
                }
                now_us += 10_000;
            }
            xenlet_testalloc::live()
        };
        let early = heap_at(&mut p, &mut a, &mut b, 2_000_000);
        let late = heap_at(&mut p, &mut a, &mut b, 40_000_000);
        let (sent, got) = p.counts();
        assert!(sent >= 3_999 && got + 1 >= sent, "{sent} {got}");
        // 3800 more replies: no more heap (every RTT and a flag per probe, before).
        assert!(
            late - early < 1024,
            "the ping grew by {} bytes",
            late - early
        );
        let s = p.finish(&mut a, now_us);
        assert!(s[1].contains(&format!("{sent} packets transmitted, {got} received")));
        assert!(s[2].starts_with("rtt min/avg/max/mdev = "), "{s:?}");
    }

    #[test]
    fn replies_past_the_sequence_wrap_are_neither_corrupted_nor_duplicates() {
        let (mut a, mut b) = pair("10.0.0.1/24", "10.0.0.2/24");
        let mut p = endless_ping(&mut a, 0x4322);
        let mut now_us = 0u64;
        while p.counts().0 < 65_536 + 100 {
            a.poll((now_us / 1000) as i64);
            b.poll((now_us / 1000) as i64);
            a.poll((now_us / 1000) as i64);
            for l in p.poll(&mut a, now_us) {
                assert!(l.contains(" time=") && !l.contains("DUP"), "{l}");
            }
            now_us += 10_000;
        }
        let (sent, got) = p.counts();
        assert!(got + 1 >= sent, "{sent} {got}");
    }

    #[test]
    fn rtt_summary_matches_iputils_arithmetic() {
        // 1, 2, 3 ms: avg 2, mdev sqrt(2/3) = 0.816
        let s = rtt_summary(&[1_000_000, 2_000_000, 3_000_000]).unwrap();
        assert_eq!(s, "rtt min/avg/max/mdev = 1.000/2.000/3.000/0.816 ms");
        assert!(rtt_summary(&[]).is_none());
    }
}
