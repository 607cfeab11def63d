//! `cargo xtask bench router`: Xenlet as the router of the test bed's router topology
//! against a Linux router domU.
//!
//! One test-bed session (see `xtask/testbed/README.md`, "Router topology") boots, N
//! times each and alternating, the Linux PVH router domU of `router-linux` (Debian's
//! kernel, nftables with firewall4's default ruleset, masquerade on the WAN; 256 MiB,
//! what its kernel and initramfs need) and Xenlet as the router (PVH, 32 MiB, its
//! image's OpenWrt `/etc/config`), both with one vCPU and the same two vifs (eth0 on
//! `brlan`, eth1 on `brwan`). Each run is a fresh boot in a fresh topology
//! (`bench-router-linux-i`, `bench-router-xenlet-i`), and measures from the namespace
//! `lan1` through the router to `wan` (the steps are `BENCH_ROUTER_STEPS` in
//! `testbed/scenarios.rs`):
//!
//! - TCP throughput, iperf3 `-t 3`, lan1 -> wan and wan -> lan1 (`-R`), 1 and 4 streams
//!   (`-P 4`): Mbit/s of iperf3's receiver summary (`[SUM]` with 4 streams);
//! - TCP over IPv6, iperf3 `-6 -t 3`, 1 stream each way (issue 31), routed, no NAT66:
//!   Xenlet's LAN /64 is the one its wan6 took by DHCPv6-PD from `wan`, lan1's
//!   address by SLAAC from its advertisements (OpenWrt's defaults); the Linux router
//!   and the ceiling, without a DHCPv6-PD client or RA daemon, have static addresses
//!   on the same path (`net/linux-router/router-up6`, `router.sh static6`). These are
//!   the scenarios' last measurements, after every IPv4 one: a failed IPv6 step
//!   leaves the run's IPv4 figures in the table and only its IPv6 cells empty;
//! - UDP packets per second: iperf3 `-u -l 64 -b 0 -t 3` (64-byte payloads, i.e.
//!   106-byte Ethernet frames, as fast as lan1 sends them): the datagrams wan received
//!   (total - lost of the receiver line) over its interval, and what lan1 offered
//!   (the total) beside it;
//! - new TCP connections per second through the NAT: `net/connrate.py`, 4 at a time
//!   for 5 s, each connection counted when the responder's greeting came back;
//! - ping round trips: 200 pings 10 ms apart, p50 and p99 by nearest rank of the
//!   answered ones;
//! - the domain's memory as `xl list` gives it;
//! - where the CPU goes (`net/cpucost.sh`): an 8 s TCP transfer each way under dom0's
//!   `perf record -a`, with dom0's and the router domain's CPU seconds (`xl list`)
//!   per GB received, and dom0's profile by command and by symbol;
//! - the 64-byte knee (`net/knee.sh`): the kernel's pktgen in lan1 offers 64-byte
//!   frames at a rate that doubles, then bisects, and wan counts them: the highest
//!   rate forwarded with less than 0.1 % lost, for one flow and for a new flow (a
//!   new conntrack entry and NAT mapping) every packet; then what pktgen offers with
//!   no limit and what wan receives of it.
//!
//! The table gives each measurement's median over the runs with its min..max, and the
//! ratio of Xenlet's median to Linux's against the goals (TCP >= 1.5 both
//! ways, TCP over IPv6 >= 1 (issue 31), the 64-byte knee >= 2, new connections and
//! flows per second >= 1.5), and to
//! the ceiling's. Everything runs
//! nested under QEMU's TCG, dom0 (the namespaces, iperf3, netback) and both routers
//! sharing its vCPUs: the absolute figures are far below bare metal, the ratios are
//! what compares. A benchmark, not a test: the scenario steps only check that each
//! measurement gave a figure.

use crate::bench::mbits;
use crate::report::{self, stats, Section};
use crate::testbed;
use crate::util::{step, Error, Result};
use std::collections::BTreeMap;

/// The runs of each router `--runs` allows (one scenario per run: `*-1` .. `*-5`).
const MAX_RUNS: usize = 5;

/// (label, scenario prefix): Linux first, the ratios are Xenlet / Linux; the
/// ceiling last (dom0 forwarding itself, no router domain: the path no domU can
/// beat), Xenlet's figures also given as a fraction of it.
const SYSTEMS: [(&str, &str); 3] = [
    ("Linux router", "bench-router-linux"),
    ("Xenlet router", "bench-router-xenlet"),
    ("ceiling (dom0 routes)", "bench-router-ceiling"),
];

/// The ceiling's index in [`SYSTEMS`].
const CEILING: usize = 2;

/// A scenario's `result.txt` (see [`testbed::result`]).
type Vars = BTreeMap<String, String>;

/// What the Xenlet / Linux ratio of a row should be.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Goal {
    /// The goal: at least this ratio.
    AtLeast(f64),
    /// No goal; a smaller figure is the better one (latency, memory).
    LowerIsBetter,
    /// Context for another row (e.g. the offered load).
    None,
}

/// One row of the table: how its figure is read from a run's results.
struct Row {
    label: &'static str,
    unit: &'static str,
    figure: fn(&Vars) -> Option<f64>,
    goal: Goal,
}

const ROWS: &[Row] = &[
    Row {
        label: "TCP lan1 -> wan, 1 stream",
        unit: "Mbit/s",
        figure: |v| var(v, "TCP_UP_1").and_then(mbits),
        goal: Goal::AtLeast(1.5),
    },
    Row {
        label: "TCP lan1 -> wan, 4 streams",
        unit: "Mbit/s",
        figure: |v| var(v, "TCP_UP_4").and_then(mbits),
        goal: Goal::AtLeast(1.5),
    },
    Row {
        label: "TCP wan -> lan1, 1 stream",
        unit: "Mbit/s",
        figure: |v| var(v, "TCP_DOWN_1").and_then(mbits),
        goal: Goal::AtLeast(1.5),
    },
    Row {
        label: "TCP wan -> lan1, 4 streams",
        unit: "Mbit/s",
        figure: |v| var(v, "TCP_DOWN_4").and_then(mbits),
        goal: Goal::AtLeast(1.5),
    },
    Row {
        label: "TCP lan1 -> wan over IPv6, 1 stream",
        unit: "Mbit/s",
        figure: |v| var(v, "TCP6_UP_1").and_then(mbits),
        goal: Goal::AtLeast(1.0),
    },
    Row {
        label: "TCP wan -> lan1 over IPv6, 1 stream",
        unit: "Mbit/s",
        figure: |v| var(v, "TCP6_DOWN_1").and_then(mbits),
        goal: Goal::AtLeast(1.0),
    },
    Row {
        label: "UDP 64 B payload, wan received",
        unit: "packets/s",
        figure: |v| var(v, "UDP_64").and_then(udp_rates).map(|r| r.received_pps),
        goal: Goal::AtLeast(2.0),
    },
    Row {
        label: "  (lan1 offered)",
        unit: "packets/s",
        figure: |v| var(v, "UDP_64").and_then(udp_rates).map(|r| r.offered_pps),
        goal: Goal::None,
    },
    Row {
        label: "new TCP connections via NAT",
        unit: "per s",
        figure: |v| var(v, "CONNS").and_then(connections).map(|c| c.per_s()),
        goal: Goal::AtLeast(1.5),
    },
    Row {
        label: "64-byte knee (pktgen), one flow",
        unit: "packets/s",
        figure: |v| knee(var(v, "KNEE_FLOW")?).map(|k| k.0),
        goal: Goal::AtLeast(2.0),
    },
    Row {
        label: "  (no limit: pktgen offered)",
        unit: "packets/s",
        figure: |v| unlimited(var(v, "UNLIMITED_FLOW")?).map(|u| u.0),
        goal: Goal::None,
    },
    Row {
        label: "  (no limit: wan received)",
        unit: "packets/s",
        figure: |v| unlimited(var(v, "UNLIMITED_FLOW")?).map(|u| u.1),
        goal: Goal::AtLeast(2.0),
    },
    Row {
        label: "64-byte knee, a new NAT flow per packet",
        unit: "flows/s",
        figure: |v| knee(var(v, "KNEE_FLOWS")?).map(|k| k.0),
        goal: Goal::AtLeast(1.5),
    },
    Row {
        label: "  (no limit: pktgen offered)",
        unit: "flows/s",
        figure: |v| unlimited(var(v, "UNLIMITED_FLOWS")?).map(|u| u.0),
        goal: Goal::None,
    },
    Row {
        label: "  (no limit: wan received)",
        unit: "flows/s",
        figure: |v| unlimited(var(v, "UNLIMITED_FLOWS")?).map(|u| u.1),
        goal: Goal::AtLeast(1.5),
    },
    Row {
        label: "dom0 CPU per GB, TCP lan1 -> wan",
        unit: "s/GB",
        figure: |v| cpu_per_gb(v, "CPU_UP", Whose::Dom0),
        goal: Goal::LowerIsBetter,
    },
    Row {
        label: "router CPU per GB, TCP lan1 -> wan",
        unit: "s/GB",
        figure: |v| cpu_per_gb(v, "CPU_UP", Whose::Router),
        goal: Goal::LowerIsBetter,
    },
    Row {
        label: "dom0 CPU per GB, TCP wan -> lan1",
        unit: "s/GB",
        figure: |v| cpu_per_gb(v, "CPU_DOWN", Whose::Dom0),
        goal: Goal::LowerIsBetter,
    },
    Row {
        label: "router CPU per GB, TCP wan -> lan1",
        unit: "s/GB",
        figure: |v| cpu_per_gb(v, "CPU_DOWN", Whose::Router),
        goal: Goal::LowerIsBetter,
    },
    Row {
        label: "ping lan1 -> wan, p50",
        unit: "ms",
        figure: |v| percentile(&ping_times(var(v, "PING_MS")?), 50.0),
        goal: Goal::LowerIsBetter,
    },
    Row {
        label: "ping lan1 -> wan, p99",
        unit: "ms",
        figure: |v| percentile(&ping_times(var(v, "PING_MS")?), 99.0),
        goal: Goal::LowerIsBetter,
    },
    Row {
        label: "domain memory (xl list)",
        unit: "MiB",
        figure: |v| var(v, "MEM_MIB")?.parse::<u32>().ok().map(f64::from),
        goal: Goal::LowerIsBetter,
    },
];

/// A row only a router domain has a figure for (the ceiling has none on its path).
fn router_only(row: &Row) -> bool {
    row.unit == "MiB" || row.label.starts_with("router CPU")
}

/// Pings each run sends (`BENCH_ROUTER_STEPS`).
const PINGS: usize = 200;

/// A captured variable of a run.
fn var<'a>(v: &'a Vars, name: &str) -> Option<&'a str> {
    v.get(&format!("var.{name}")).map(String::as_str)
}

/// Packets per second of an iperf3 UDP test.
#[derive(Debug, PartialEq)]
struct UdpRates {
    /// Datagrams the receiver got, per second of its interval.
    received_pps: f64,
    /// Datagrams the sender numbered (the receiver's total), per second.
    offered_pps: f64,
}

/// The rates in iperf3's UDP receiver line:
/// `[  5]   0.00-3.04   sec  2.20 MBytes  6.07 Mbits/sec  0.052 ms  59597/95672 (62%)  receiver`
/// (the interval before `sec`, `lost/total` before the percentage).
fn udp_rates(line: &str) -> Option<UdpRates> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let seconds = interval_seconds(line)?;
    let pct = w
        .iter()
        .position(|x| x.starts_with('(') && x.ends_with("%)"))?;
    let (lost, total) = w.get(pct.checked_sub(1)?)?.split_once('/')?;
    let (lost, total): (u64, u64) = (lost.parse().ok()?, total.parse().ok()?);
    if lost > total {
        return None;
    }
    Some(UdpRates {
        received_pps: (total - lost) as f64 / seconds,
        offered_pps: total as f64 / seconds,
    })
}

/// `net/knee.sh`'s knee, `N pps (loss < 0.1 %)` or `N pps (loss < 0.1 %; bound by
/// the sender)`: (N, whether bound by the sender).
pub(crate) fn knee(s: &str) -> Option<(f64, bool)> {
    let (n, rest) = s.trim().split_once(" pps")?;
    let n: u32 = n.parse().ok()?;
    Some((f64::from(n), rest.contains("bound by the sender")))
}

/// `net/knee.sh`'s probe without a rate limit, `offered N pps, forwarded M pps`:
/// (offered, forwarded).
pub(crate) fn unlimited(s: &str) -> Option<(f64, f64)> {
    let rest = s.trim().strip_prefix("offered ")?;
    let (offered, rest) = rest.split_once(" pps, forwarded ")?;
    let forwarded = rest.strip_suffix(" pps")?;
    let (o, f): (u64, u64) = (offered.parse().ok()?, forwarded.parse().ok()?);
    Some((o as f64, f as f64))
}

/// Whose CPU seconds of `net/cpucost.sh`'s line.
#[derive(Clone, Copy)]
enum Whose {
    Dom0,
    Router,
}

/// CPU seconds per GB (10^9 bytes) that dom0 or the router spent on `net/cpucost.sh`'s
/// transfer: its `cpu: dom0 X s, router Y s` line (`{key}`) over the bytes of its
/// iperf3 receiver line (`{key}_TCP`: Mbit/s times the interval).
fn cpu_per_gb(v: &Vars, key: &str, whose: Whose) -> Option<f64> {
    let (dom0, router) = cpu_seconds(var(v, key)?)?;
    let gb = transfer_gb(var(v, &format!("{key}_TCP"))?)?;
    let s = match whose {
        Whose::Dom0 => dom0,
        Whose::Router => router,
    };
    (gb > 0.0).then(|| s / gb)
}

/// `cpu: dom0 X s, router Y s`: (X, Y).
fn cpu_seconds(s: &str) -> Option<(f64, f64)> {
    let rest = s.trim().strip_prefix("cpu: dom0 ")?;
    let (d, rest) = rest.split_once(" s, router ")?;
    let r = rest.strip_suffix(" s")?;
    let (d, r): (f64, f64) = (d.parse().ok()?, r.parse().ok()?);
    (d.is_finite() && r.is_finite() && d >= 0.0 && r >= 0.0).then_some((d, r))
}

/// The seconds of an iperf3 summary line's interval (`0.00-3.04   sec`), if positive.
fn interval_seconds(line: &str) -> Option<f64> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let sec = w.iter().position(|x| *x == "sec")?;
    let (a, b) = w.get(sec.checked_sub(1)?)?.split_once('-')?;
    let seconds = b.parse::<f64>().ok()? - a.parse::<f64>().ok()?;
    (seconds.is_finite() && seconds > 0.0).then_some(seconds)
}

/// GB (10^9 bytes) of an iperf3 receiver line: its Mbit/s times its interval.
fn transfer_gb(line: &str) -> Option<f64> {
    let gb = mbits(line)? * interval_seconds(line)? / 8.0 / 1000.0;
    (gb.is_finite() && gb > 0.0).then_some(gb)
}

/// `net/connrate.py`'s summary.
#[derive(Debug, PartialEq)]
struct Connections {
    ok: u64,
    failed: u64,
    seconds: f64,
}

impl Connections {
    fn per_s(&self) -> f64 {
        self.ok as f64 / self.seconds
    }
}

/// `connections: ok=N failed=M seconds=S workers=W`.
fn connections(line: &str) -> Option<Connections> {
    let rest = line.trim().strip_prefix("connections:")?;
    let field = |k: &str| {
        rest.split_whitespace()
            .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
    };
    let c = Connections {
        ok: field("ok")?.parse().ok()?,
        failed: field("failed")?.parse().ok()?,
        seconds: field("seconds")?.parse().ok()?,
    };
    (c.seconds.is_finite() && c.seconds > 0.0).then_some(c)
}

/// The round-trip times (ms) of the `ping times:` line, one per answered ping.
fn ping_times(s: &str) -> Vec<f64> {
    s.split_whitespace()
        .filter_map(|t| t.parse::<f64>().ok())
        .filter(|t| t.is_finite() && *t >= 0.0)
        .collect()
}

/// The `p`th percentile (0 < p <= 100) by nearest rank: the smallest value with at
/// least p% of the values at or below it.
fn percentile(v: &[f64], p: f64) -> Option<f64> {
    if v.is_empty() || !(p > 0.0 && p <= 100.0) {
        return None;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = (p / 100.0 * v.len() as f64).ceil() as usize;
    v.get(rank.clamp(1, v.len()) - 1).copied()
}

/// Median, min and max of one system's figures for one row.
#[derive(Debug, PartialEq)]
struct Spread {
    median: f64,
    min: f64,
    max: f64,
    n: usize,
}

fn spread(v: &[f64]) -> Option<Spread> {
    Some(Spread {
        median: stats(v)?.median,
        min: v.iter().copied().min_by(f64::total_cmp)?,
        max: v.iter().copied().max_by(f64::total_cmp)?,
        n: v.len(),
    })
}

/// A figure with the precision its size deserves (a whole number as one).
fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 || (a >= 1.0 && x == x.round()) {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// `median (min..max)`, with `[n/runs]` when some runs gave no figure.
fn cell(s: Option<&Spread>, runs: usize) -> String {
    match s {
        None => "-".to_string(),
        Some(s) => {
            let mut c = if s.min == s.max {
                num(s.median)
            } else {
                format!("{} ({}..{})", num(s.median), num(s.min), num(s.max))
            };
            if s.n < runs {
                c.push_str(&format!(" [{}/{runs}]", s.n));
            }
            c
        }
    }
}

/// The ratio column and the goal column of a row.
fn ratio_and_goal(linux: Option<&Spread>, xenlet: Option<&Spread>, goal: Goal) -> (String, String) {
    let ratio = match (linux, xenlet) {
        (Some(l), Some(x)) if l.median > 0.0 => Some(x.median / l.median),
        _ => None,
    };
    let r = ratio.map_or("-".to_string(), |r| format!("{r:.2}"));
    let g = match (goal, ratio) {
        (Goal::AtLeast(g), Some(r)) => {
            format!(">= {g} ({})", if r >= g { "met" } else { "NOT met" })
        }
        (Goal::AtLeast(g), None) => format!(">= {g}"),
        (Goal::LowerIsBetter, _) => "lower is better".to_string(),
        (Goal::None, _) => String::new(),
    };
    (r, g)
}

/// One run's results: its scenario and `result.txt`.
struct Run {
    system: usize,
    scenario: String,
    vars: Vars,
}

/// The table (Markdown) from the runs' results, and the notes about runs that failed or
/// gave incomplete figures.
fn table(runs: usize, results: &[Run]) -> String {
    let mut spreads: Vec<[Option<Spread>; 3]> = Vec::new();
    for row in ROWS {
        let per = |sys: usize| {
            let v: Vec<f64> = results
                .iter()
                .filter(|r| r.system == sys)
                .filter_map(|r| (row.figure)(&r.vars))
                .filter(|x| x.is_finite())
                .collect();
            spread(&v)
        };
        let ceiling = if router_only(row) { None } else { per(CEILING) };
        spreads.push([per(0), per(1), ceiling]);
    }
    let mut t = format!(
        "## Xenlet vs Linux as the router (`cargo xtask bench router --runs {runs}`)\n\n\
         Router topology of the test bed: lan1 -> router (eth0 on brlan, eth1 on brwan, \
         NAT) -> wan; nested Xen 4.17 under QEMU TCG, dom0 and the router sharing its \
         vCPUs; each router 1 vCPU. Linux: Debian's kernel as a PVH domU, nftables with \
         firewall4's default ruleset. Xenlet: PVH, its image's /etc/config. {runs} \
         run(s) of each, alternating, each a fresh boot; median (min..max) of the runs, \
         `[n/{runs}]` when only n runs gave a figure. iperf3 runs 3 s; over IPv6 \
         (`-6`) routed, no NAT66: Xenlet's LAN /64 from its wan6 delegation, lan1's \
         address by SLAAC; Linux and the ceiling with static addresses. UDP: iperf3 \
         `-u -l 64 -b 0` (106-byte frames); connections: 4 clients for 5 s; ping: 200 \
         at 10 ms, nearest-rank percentiles. The knees: pktgen in lan1, 64-byte frames, the \
         highest rate with < 0.1 % lost (net/knee.sh). CPU per GB: `xl list` seconds \
         over an 8 s transfer (net/cpucost.sh). The ceiling: dom0 itself forwards \
         between brlan and brwan (a namespace with the same fw4 ruleset), no router \
         domain on the path.\n\n"
    );
    t.push_str(&format!(
        "| measurement | unit | {} | {} | {} | Xenlet / Linux | Xenlet / ceiling | goal |\n",
        SYSTEMS[0].0, SYSTEMS[1].0, SYSTEMS[2].0
    ));
    t.push_str("|---|---|--:|--:|--:|--:|--:|---|\n");
    for (row, [l, x, c]) in ROWS.iter().zip(&spreads) {
        let (r, g) = ratio_and_goal(l.as_ref(), x.as_ref(), row.goal);
        let (rc, _) = ratio_and_goal(c.as_ref(), x.as_ref(), Goal::None);
        t.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.label,
            row.unit,
            cell(l.as_ref(), runs),
            cell(x.as_ref(), runs),
            cell(c.as_ref(), runs),
            r,
            rc,
            g
        ));
    }
    t.push_str(&profiles(results));
    let notes = notes(results);
    if !notes.is_empty() {
        t.push_str("\nNotes:\n");
        for n in notes {
            t.push_str(&format!("- {n}\n"));
        }
    }
    t
}

/// dom0's profile (`net/cpucost.sh`'s perf lines) of each system's last run that has
/// one, for both directions.
fn profiles(results: &[Run]) -> String {
    let mut t = String::from(
        "\ndom0's CPU during each system's last profiled 4 s TCP transfer (`perf record \
         -a -g`, cpu-clock; swapper is idle, xen_hypercall_* is time in Xen for dom0):\n\n",
    );
    let mut any = false;
    for (s, (who, _)) in SYSTEMS.iter().enumerate() {
        let Some(r) = results
            .iter()
            .rev()
            .find(|r| r.system == s && var(&r.vars, "PERF_UP_SYM").is_some())
        else {
            continue;
        };
        any = true;
        for (dir, key) in [("lan1 -> wan", "PERF_UP"), ("wan -> lan1", "PERF_DOWN")] {
            let v = |what: &str| var(&r.vars, &format!("{key}_{what}")).unwrap_or("-");
            t.push_str(&format!(
                "- {who}, {dir} ({}): by command: {}; by symbol: {}; including callees: {}\n",
                r.scenario,
                v("COMM"),
                v("SYM"),
                v("INCL")
            ));
        }
    }
    if any {
        t
    } else {
        String::new()
    }
}

/// What is odd about the runs: failed scenarios, measurements without a figure,
/// unanswered pings, failed connections, UDP loss.
fn notes(results: &[Run]) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        let status = r.vars.get("status").map_or("not run", String::as_str);
        if status != "PASS" {
            let why = [r.vars.get("failed_step"), r.vars.get("message")]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join(": ");
            out.push(
                format!("{}: {status} {why}", r.scenario)
                    .trim_end()
                    .to_string(),
            );
        }
        let missing: Vec<&str> = ROWS
            .iter()
            .filter(|row| !(r.system == CEILING && router_only(row)))
            .filter(|row| (row.figure)(&r.vars).is_none())
            .map(|row| row.label.trim())
            .collect();
        if !missing.is_empty() && status == "PASS" {
            out.push(format!(
                "{}: no figure for {}",
                r.scenario,
                missing.join(", ")
            ));
        }
        if let Some(p) = var(&r.vars, "PING_MS") {
            let n = ping_times(p).len();
            if n < PINGS {
                out.push(format!("{}: {n} of {PINGS} pings answered", r.scenario));
            }
        }
        for (key, what) in [
            ("KNEE_FLOW", "one flow"),
            ("KNEE_FLOWS", "a new flow per packet"),
        ] {
            if let Some((pps, true)) = var(&r.vars, key).and_then(knee) {
                out.push(format!(
                    "{}: the knee of {what} is {} pps, bound by the sender (pktgen fell short of the next rate without loss: the router's is higher)",
                    r.scenario,
                    num(pps)
                ));
            }
        }
        if let Some(c) = var(&r.vars, "CONNS").and_then(connections) {
            if c.failed > 0 {
                out.push(format!(
                    "{}: {} of {} connections failed",
                    r.scenario,
                    c.failed,
                    c.ok + c.failed
                ));
            }
        }
    }
    out
}

/// One progress line per run: its figures in the rows' order.
fn run_line(r: &Run) -> String {
    let figs: Vec<String> = ROWS
        .iter()
        .map(|row| (row.figure)(&r.vars).map_or("-".to_string(), num))
        .collect();
    let status = r.vars.get("status").map_or("not run", String::as_str);
    format!("    {}: {status}: {}", r.scenario, figs.join(" / "))
}

/// The scenario names of `runs` alternating runs: Linux 1, Xenlet 1, Linux 2, ...
/// `BENCH_ROUTER_XENLET=PREFIX` puts another Xenlet variant in Xenlet's column
/// (`bench-router-xenlet-q1`: one queue a vif), for an A/B in one session.
fn scenario_names(runs: usize) -> Vec<(usize, String)> {
    let xenlet = std::env::var("BENCH_ROUTER_XENLET").ok();
    scenario_names_with(runs, xenlet.as_deref())
}

fn scenario_names_with(runs: usize, xenlet: Option<&str>) -> Vec<(usize, String)> {
    let prefix = |s: usize| match (s, xenlet) {
        (1, Some(x)) => x,
        _ => SYSTEMS[s].1,
    };
    (1..=runs)
        .flat_map(|i| (0..SYSTEMS.len()).map(move |s| (s, format!("{}-{i}", prefix(s)))))
        .collect()
}

const USAGE: &str = "usage: cargo xtask bench router [--runs N] [--table] [testbed options]\n\
                     (see `cargo xtask bench help`)";

/// `cargo xtask bench router [--runs N] [--table] [testbed options]`.
pub fn router(args: &[&str]) -> Result<Section> {
    let a = crate::bench::bench_args(args, MAX_RUNS, &[], &[])?;
    let runs = a.runs;
    let plan = scenario_names(runs);
    if let Some((_, n)) = plan.iter().find(|(_, n)| !testbed::scenario_exists(n)) {
        return Err(Error::msg(format!(
            "bench router: no scenario {n}\n{USAGE}"
        )));
    }
    step(&format!(
        "bench router: {runs} run(s) each of the Linux router domU, the Xenlet router and the ceiling (dom0 routing), alternating ({})",
        plan.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(", ")
    ));
    let names: Vec<String> = plan.iter().map(|(_, n)| n.clone()).collect();
    let ran = crate::bench::session(&names, &a);
    let results: Vec<Run> = plan
        .into_iter()
        .map(|(system, scenario)| Run {
            system,
            vars: testbed::result(&scenario),
            scenario,
        })
        .collect();
    println!(
        "\n    per run: {}",
        ROWS.iter()
            .map(|r| format!("{} ({})", r.label.trim(), r.unit))
            .collect::<Vec<_>>()
            .join(" / ")
    );
    for r in &results {
        println!("{}", run_line(r));
    }
    let t = table(runs, &results);
    println!("\n{t}");
    let dir = crate::util::workspace_root().join("target/bench");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("router.md"), &t)?;
    println!("(also in {})", dir.join("router.md").display());
    let rows = section_rows(&results);
    let failed = crate::bench::failure(ran, &rows, 1);
    Ok(Section {
        bench: "router".into(),
        title: "Xenlet vs a Linux router domU as the router of the test bed's router topology"
            .into(),
        command: format!("cargo xtask bench router --runs {runs}"),
        about: "lan1 -> router (eth0 on brlan, eth1 on brwan, NAT) -> wan, every packet inside \
                the nested machine, dom0 and the router sharing its vCPUs; each router 1 vCPU. \
                Linux: Debian's kernel as a PVH domU, nftables with firewall4's default \
                ruleset. Xenlet: PVH, its image's /etc/config. Runs alternate, each a fresh \
                boot in a fresh topology. iperf3 runs 3 s; over IPv6 routed, no NAT66 \
                (Xenlet: its wan6 delegation, lan1 by SLAAC; Linux and the ceiling: static \
                addresses). UDP: iperf3 `-u -l 64 -b 0` \
                (106-byte frames); connections: 4 clients for 5 s; ping: 200 at 10 ms, \
                nearest-rank percentiles; knees from pktgen (64-byte frames, < 0.1 % lost); \
                CPU per GB from `xl list` over an 8 s transfer. The issue's goals for \
                Xenlet / Linux: TCP >= 1.5, TCP over IPv6 >= 1, the 64-byte knee >= 2, \
                new connections and \
                flows per second >= 1.5 (see the table below)."
            .into(),
        baseline: Some(SYSTEMS[0].0.to_string()),
        failed,
        rows,
        text: Some(t),
        notes: Vec::new(),
    })
}

/// The report's rows: each measurement's figure per run and system.
fn section_rows(results: &[Run]) -> Vec<report::Row> {
    let mut out = Vec::new();
    for row in ROWS {
        for (s, (who, _)) in SYSTEMS.iter().enumerate() {
            // the ceiling has no router domain: no memory or router CPU figure, by design
            if s == CEILING && router_only(row) {
                continue;
            }
            let v: Vec<f64> = results
                .iter()
                .filter(|r| r.system == s)
                .filter_map(|r| (row.figure)(&r.vars))
                .collect();
            out.push(report::Row::new(
                row.label.trim(),
                who,
                v,
                row.unit,
                !matches!(row.goal, Goal::LowerIsBetter),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// iperf3 3.12's UDP summary as printed by the client (the receiver line is the
    /// server's).
    const UDP_RECEIVER: &str =
        "[  5]   0.00-3.04   sec  2.20 MBytes  6.07 Mbits/sec  0.052 ms  59597/95672 (62%)  receiver";
    const UDP_SENDER: &str =
        "[  5]   0.00-3.00   sec  5.84 MBytes  16.3 Mbits/sec  0.000 ms  0/95672 (0%)  sender";

    #[test]
    fn udp_rates_from_the_receiver_line() {
        let r = udp_rates(UDP_RECEIVER).unwrap();
        assert!((r.received_pps - (95672.0 - 59597.0) / 3.04).abs() < 1e-6);
        assert!((r.offered_pps - 95672.0 / 3.04).abs() < 1e-6);
        let s = udp_rates(UDP_SENDER).unwrap();
        assert!((s.received_pps - 95672.0 / 3.0).abs() < 1e-6);
        // more lost than sent, a zero interval, no counts: no figure
        assert!(udp_rates(
            "[  5]   0.00-3.00   sec  1 KBytes  1 Kbits/sec  0.1 ms  9/5 (180%)  receiver"
        )
        .is_none());
        assert!(udp_rates(
            "[  5]   3.00-3.00   sec  1 KBytes  1 Kbits/sec  0.1 ms  0/5 (0%)  receiver"
        )
        .is_none());
        assert!(udp_rates("[  5]   0.00-3.00   sec  1 KBytes  1 Kbits/sec  receiver").is_none());
        assert!(udp_rates("iperf3: error - unable to connect to server").is_none());
    }

    #[test]
    fn knee_and_cpu_lines() {
        assert_eq!(
            unlimited("offered 41234 pps, forwarded 9876 pps"),
            Some((41234.0, 9876.0))
        );
        assert_eq!(unlimited("offered  pps, forwarded 9876 pps"), None);
        assert_eq!(unlimited("offered 1 pps"), None);
        assert_eq!(knee("4000 pps (loss < 0.1 %)"), Some((4000.0, false)));
        assert_eq!(
            knee("11000 pps (loss < 0.1 %; bound by the sender)"),
            Some((11000.0, true))
        );
        assert_eq!(knee("pps (loss < 0.1 %)"), None);
        assert_eq!(
            cpu_seconds("cpu: dom0 7.9 s, router 2.0 s"),
            Some((7.9, 2.0))
        );
        assert_eq!(cpu_seconds("cpu: dom0 -1 s, router 2.0 s"), None);
        assert_eq!(cpu_seconds("cpu: dom0 s, router 2.0 s"), None);
        let line = "[  5]   0.00-8.00   sec   500 MBytes   500 Mbits/sec                  receiver";
        assert!((transfer_gb(line).unwrap() - 0.5).abs() < 1e-9);
        let mut v = Vars::new();
        v.insert("var.CPU_UP".into(), "cpu: dom0 4.0 s, router 1.0 s".into());
        v.insert("var.CPU_UP_TCP".into(), line.into());
        assert_eq!(cpu_per_gb(&v, "CPU_UP", Whose::Dom0), Some(8.0));
        assert_eq!(cpu_per_gb(&v, "CPU_UP", Whose::Router), Some(2.0));
        // no transfer: no figure (not a division by zero)
        v.insert(
            "var.CPU_UP_TCP".into(),
            "[  5]   0.00-8.00   sec   0 Bytes   0.00 bits/sec   receiver".into(),
        );
        assert_eq!(cpu_per_gb(&v, "CPU_UP", Whose::Dom0), None);
        assert_eq!(cpu_per_gb(&v, "CPU_DOWN", Whose::Dom0), None);
    }

    #[test]
    fn the_ceiling_has_no_router_rows() {
        let mut v = Vars::new();
        v.insert("status".into(), "PASS".into());
        v.insert("var.CPU_UP".into(), "cpu: dom0 4.0 s, router 0.1 s".into());
        v.insert(
            "var.CPU_UP_TCP".into(),
            "[  5]   0.00-8.00   sec   500 MBytes   500 Mbits/sec   receiver".into(),
        );
        let runs = [Run {
            system: CEILING,
            scenario: "bench-router-ceiling-1".into(),
            vars: v,
        }];
        let t = table(1, &runs);
        let row = |label: &str| {
            t.lines()
                .find(|l| l.starts_with(&format!("| {label} |")))
                .unwrap()
                .to_string()
        };
        assert!(row("dom0 CPU per GB, TCP lan1 -> wan").contains("| 8 |"));
        assert!(!row("router CPU per GB, TCP lan1 -> wan").contains("| 0.20 |"));
        let n = notes(&runs).join("\n");
        assert!(
            !n.contains("router CPU") && !n.contains("domain memory"),
            "{n}"
        );
        assert!(n.contains("TCP lan1 -> wan, 1 stream"), "{n}");
    }

    #[test]
    fn tcp_sum_line_of_four_streams() {
        let l = "[SUM]   0.00-3.05   sec   105 MBytes   289 Mbits/sec                  receiver";
        assert!((mbits(l).unwrap() - 289.0).abs() < 1e-9);
    }

    #[test]
    fn connrate_summary() {
        let c = connections("connections: ok=412 failed=3 seconds=5.02 workers=4").unwrap();
        assert_eq!((c.ok, c.failed), (412, 3));
        assert!((c.per_s() - 412.0 / 5.02).abs() < 1e-9);
        assert!(connections("connections: ok=1 failed=0 seconds=0.00 workers=4").is_none());
        assert!(connections("connections: ok=x failed=0 seconds=1 workers=4").is_none());
        assert!(connections("connections: failed=0 seconds=1").is_none());
        // `okay=` is not `ok=`
        assert!(connections("connections: okay=5 failed=0 seconds=1 workers=1").is_none());
    }

    #[test]
    fn ping_percentiles_by_nearest_rank() {
        // 200 answers: 1..=200 ms, shuffled; p50 is the 100th, p99 the 198th
        let mut v: Vec<String> = (1..=200)
            .map(|i| format!("{}.0", (i * 7) % 200 + 1))
            .collect();
        v.push("junk".to_string());
        let t = ping_times(&v.join(" "));
        assert_eq!(t.len(), 200);
        assert_eq!(percentile(&t, 50.0), Some(100.0));
        assert_eq!(percentile(&t, 99.0), Some(198.0));
        assert_eq!(percentile(&t, 100.0), Some(200.0));
        assert_eq!(percentile(&[0.5, 9.0, 0.7], 50.0), Some(0.7));
        assert_eq!(percentile(&[3.0], 99.0), Some(3.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[1.0], 0.0), None);
        assert_eq!(
            ping_times(" 0.412 0.388 -1 NaN inf 1.5"),
            vec![0.412, 0.388, 1.5]
        );
    }

    #[test]
    fn spread_and_cells() {
        let s = spread(&[291.0, 280.0, 305.5]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (291.0, 280.0, 305.5, 3));
        assert_eq!(cell(Some(&s), 3), "291 (280..306)");
        let two = spread(&[8.44, 5.86]).unwrap();
        assert_eq!(cell(Some(&two), 3), "7.15 (5.86..8.44) [2/3]");
        assert_eq!(cell(spread(&[12.34]).as_ref(), 1), "12.3");
        assert_eq!(cell(None, 3), "-");
        assert!(spread(&[]).is_none());
    }

    #[test]
    fn ratios_against_the_goals() {
        let l = spread(&[10.0]).unwrap();
        let x = spread(&[14.0]).unwrap();
        assert_eq!(
            ratio_and_goal(Some(&l), Some(&x), Goal::AtLeast(1.5)),
            ("1.40".to_string(), ">= 1.5 (NOT met)".to_string())
        );
        assert_eq!(
            ratio_and_goal(Some(&l), Some(&x), Goal::AtLeast(1.0)),
            ("1.40".to_string(), ">= 1 (met)".to_string())
        );
        assert_eq!(
            ratio_and_goal(None, Some(&x), Goal::AtLeast(2.0)),
            ("-".to_string(), ">= 2".to_string())
        );
        assert_eq!(
            ratio_and_goal(Some(&x), Some(&l), Goal::LowerIsBetter).0,
            "0.71"
        );
    }

    #[test]
    fn alternating_scenarios_exist() {
        let names = scenario_names(2);
        let n: Vec<&str> = names.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(
            n,
            [
                "bench-router-linux-1",
                "bench-router-xenlet-1",
                "bench-router-ceiling-1",
                "bench-router-linux-2",
                "bench-router-xenlet-2",
                "bench-router-ceiling-2"
            ]
        );
        assert_eq!(names[1].0, 1);
        for (_, n) in scenario_names(MAX_RUNS) {
            assert!(testbed::scenario_exists(&n), "{n}");
        }
        assert!(!testbed::scenario_exists(&format!(
            "bench-router-linux-{}",
            MAX_RUNS + 1
        )));
    }

    /// A run's `result.txt` as the runner writes it (captures from a real session's
    /// output formats).
    fn vars(pairs: &[(&str, &str)]) -> Vars {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn full_run(tcp: &str, conns_ok: u32, mem: &str) -> Vars {
        let ping: Vec<String> = (0..200)
            .map(|i| format!("{:.3}", 1.0 + i as f64 / 100.0))
            .collect();
        vars(&[
            ("status", "PASS"),
            ("var.MEM_MIB", mem),
            ("var.PING_MS", &ping.join(" ")),
            (
                "var.TCP_UP_1",
                &format!("[  5]   0.00-3.00   sec  3.2 MBytes  {tcp} Mbits/sec                  receiver"),
            ),
            (
                "var.TCP_UP_4",
                &format!("[SUM]   0.00-3.00   sec  3.2 MBytes  {tcp} Mbits/sec                  receiver"),
            ),
            (
                "var.TCP_DOWN_1",
                &format!("[  5]   0.00-3.00   sec  3.2 MBytes  {tcp} Mbits/sec                  receiver"),
            ),
            (
                "var.TCP_DOWN_4",
                &format!("[SUM]   0.00-3.00   sec  3.2 MBytes  {tcp} Mbits/sec                  receiver"),
            ),
            (
                "var.TCP6_UP_1",
                &format!("[  5]   0.00-3.00   sec  3.2 MBytes  {tcp} Mbits/sec                  receiver"),
            ),
            (
                "var.TCP6_DOWN_1",
                &format!("[  5]   0.00-3.00   sec  3.2 MBytes  {tcp} Mbits/sec                  receiver"),
            ),
            ("var.UDP_64", UDP_RECEIVER),
            (
                "var.CONNS",
                &format!("connections: ok={conns_ok} failed=0 seconds=5.00 workers=4"),
            ),
            ("var.KNEE_FLOW", "12000 pps (loss < 0.1 %)"),
            ("var.UNLIMITED_FLOW", "offered 90000 pps, forwarded 15000 pps"),
            ("var.KNEE_FLOWS", "6000 pps (loss < 0.1 %)"),
            ("var.UNLIMITED_FLOWS", "offered 90000 pps, forwarded 7000 pps"),
            ("var.CPU_UP", "cpu: dom0 4.0 s, router 2.0 s"),
            (
                "var.CPU_UP_TCP",
                &format!("[  5]   0.00-8.00   sec  3.2 MBytes  {tcp} Mbits/sec   receiver"),
            ),
            ("var.CPU_DOWN", "cpu: dom0 4.0 s, router 2.0 s"),
            (
                "var.CPU_DOWN_TCP",
                &format!("[  5]   0.00-8.00   sec  3.2 MBytes  {tcp} Mbits/sec   receiver"),
            ),
        ])
    }

    #[test]
    fn a_xenlet_variant_takes_xenlets_column_only() {
        let names = |x| {
            scenario_names_with(2, x)
                .into_iter()
                .map(|(s, n)| format!("{s}:{n}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            names(None),
            "0:bench-router-linux-1 1:bench-router-xenlet-1 2:bench-router-ceiling-1 \
             0:bench-router-linux-2 1:bench-router-xenlet-2 2:bench-router-ceiling-2"
        );
        assert_eq!(
            names(Some("bench-router-xenlet-q1")),
            "0:bench-router-linux-1 1:bench-router-xenlet-q1-1 2:bench-router-ceiling-1 \
             0:bench-router-linux-2 1:bench-router-xenlet-q1-2 2:bench-router-ceiling-2"
        );
    }

    #[test]
    fn table_of_alternating_runs() {
        let results = vec![
            Run {
                system: 0,
                scenario: "bench-router-linux-1".into(),
                vars: full_run("8.00", 100, "256"),
            },
            Run {
                system: 1,
                scenario: "bench-router-xenlet-1".into(),
                vars: full_run("200", 500, "32"),
            },
            Run {
                system: 0,
                scenario: "bench-router-linux-2".into(),
                vars: full_run("10.0", 150, "256"),
            },
            Run {
                system: 1,
                scenario: "bench-router-xenlet-2".into(),
                vars: vars(&[
                    ("status", "FAIL"),
                    ("failed_step", "netns lan1 9 (iperf3)"),
                    ("message", "no figure"),
                    ("var.MEM_MIB", "32"),
                ]),
            },
            // the ceiling: no domain on the path, so no memory figure
            Run {
                system: 2,
                scenario: "bench-router-ceiling-1".into(),
                vars: {
                    let mut v = full_run("400", 1000, "0");
                    v.remove("var.MEM_MIB");
                    v
                },
            },
        ];
        let t = table(2, &results);
        assert!(t.contains("| TCP lan1 -> wan, 1 stream | Mbit/s | 9 (8..10) | 200 [1/2] | 400 [1/2] | 22.22 | 0.50 | >= 1.5 (met) |"), "{t}");
        assert!(t.contains("| new TCP connections via NAT | per s | 25 (20..30) | 100 [1/2] | 200 [1/2] | 4.00 | 0.50 | >= 1.5 (met) |"), "{t}");
        assert!(
            t.contains(
                "| domain memory (xl list) | MiB | 256 | 32 | - | 0.12 | - | lower is better |"
            ),
            "{t}"
        );
        // the UDP row: the same receiver line for all, ratio 1
        assert!(t.contains("| 1.00 | 1.00 | >= 2 (NOT met) |"), "{t}");
        // ping: 1.00..2.99 ms, p50 the 100th = 1.99, p99 the 198th = 2.97
        assert!(
            t.contains("| ping lan1 -> wan, p50 | ms | 1.99 | 1.99 [1/2] | 1.99 [1/2] |"),
            "{t}"
        );
        assert!(t.contains("| ping lan1 -> wan, p99 | ms | 2.97 |"), "{t}");
        assert!(
            t.contains("- bench-router-xenlet-2: FAIL netns lan1 9 (iperf3): no figure\n"),
            "{t}"
        );
        assert!(!t.contains("bench-router-linux-1:"), "{t}");
        assert_eq!(
            t.lines().filter(|l| l.starts_with("| ")).count(),
            ROWS.len() + 1
        );
    }

    /// A run whose IPv6 setup or transfer failed (the scenario's last measurements)
    /// keeps its IPv4 figures: its IPv6 cells are empty (`[n/runs]` beside the other
    /// runs' figures), the note says which step failed, and the bench is a failure only
    /// when a row has no figure at all.
    #[test]
    fn a_failed_ipv6_step_keeps_the_runs_ipv4_figures() {
        let failed = || {
            let mut v = full_run("300", 100, "32");
            v.remove("var.TCP6_UP_1");
            v.remove("var.TCP6_DOWN_1");
            v.insert("status".into(), "FAIL".into());
            v.insert(
                "failed_step".into(),
                "netns lan1 27 (iperf3 -6 -c 2001:db8:77::10 -t 3)".into(),
            );
            v.insert(
                "message".into(),
                "nothing to capture into ${TCP6_UP_1}".into(),
            );
            v
        };
        let run = |system: usize, i: usize, vars: Vars| Run {
            system,
            scenario: format!("{}-{i}", SYSTEMS[system].1),
            vars,
        };
        let results = vec![
            run(0, 1, full_run("100", 100, "256")),
            run(1, 1, failed()),
            run(2, 1, full_run("400", 100, "0")),
            run(0, 2, full_run("100", 100, "256")),
            run(1, 2, full_run("200", 100, "32")),
            run(2, 2, full_run("400", 100, "0")),
        ];
        let t = table(2, &results);
        let row = |label: &str| {
            t.lines()
                .find(|l| l.starts_with(&format!("| {label} |")))
                .unwrap_or_else(|| panic!("no row {label}: {t}"))
                .to_string()
        };
        // the failed run's IPv4 figure counts, its IPv6 one is missing
        assert!(row("TCP lan1 -> wan, 1 stream")
            .starts_with("| TCP lan1 -> wan, 1 stream | Mbit/s | 100 | 250 (200..300) | 400 |"));
        assert_eq!(
            row("TCP lan1 -> wan over IPv6, 1 stream"),
            "| TCP lan1 -> wan over IPv6, 1 stream | Mbit/s | 100 | 200 [1/2] | 400 | 2.00 | 0.50 | >= 1 (met) |"
        );
        assert!(row("TCP wan -> lan1 over IPv6, 1 stream").contains("| 200 [1/2] |"));
        assert!(
            t.contains("- bench-router-xenlet-1: FAIL netns lan1 27 (iperf3 -6 -c 2001:db8:77::10 -t 3): nothing to capture into ${TCP6_UP_1}\n"),
            "{t}"
        );
        assert_eq!(
            crate::bench::failure(Ok(()), &section_rows(&results), 1),
            None
        );
        // a single run whose IPv6 failed: the IPv6 row is empty for Xenlet, the rest
        // filled, and the bench says which rows have no figure
        let one = [
            run(0, 1, full_run("100", 100, "256")),
            run(1, 1, failed()),
            run(2, 1, full_run("400", 100, "0")),
        ];
        let t1 = table(1, &one);
        assert!(
            t1.contains(
                "| TCP lan1 -> wan over IPv6, 1 stream | Mbit/s | 100 | - | 400 | - | - | >= 1 |"
            ),
            "{t1}"
        );
        assert!(
            t1.contains("| TCP lan1 -> wan, 1 stream | Mbit/s | 100 | 300 | 400 |"),
            "{t1}"
        );
        let why = crate::bench::failure(Ok(()), &section_rows(&one), 1).unwrap();
        assert!(
            why.contains("TCP lan1 -> wan over IPv6, 1 stream / Xenlet router: 0 of 1"),
            "{why}"
        );
        assert!(!why.contains("TCP lan1 -> wan, 1 stream"), "{why}");
    }

    #[test]
    fn the_ceiling_has_no_memory_row_and_is_no_failure_for_it() {
        let mut ceiling = full_run("400", 1000, "0");
        ceiling.remove("var.MEM_MIB");
        let results: Vec<Run> = [full_run("8", 100, "256"), full_run("9", 100, "32"), ceiling]
            .into_iter()
            .enumerate()
            .map(|(system, vars)| Run {
                system,
                scenario: format!("{}-1", SYSTEMS[system].1),
                vars,
            })
            .collect();
        let rows = section_rows(&results);
        assert!(!rows
            .iter()
            .any(|r| r.system == SYSTEMS[CEILING].0 && r.unit == "MiB"));
        let router_rows = ROWS.iter().filter(|r| router_only(r)).count();
        assert_eq!(router_rows, 3);
        assert_eq!(rows.len(), ROWS.len() * 3 - router_rows);
        assert_eq!(crate::bench::failure(Ok(()), &rows, 1), None);
        // a ceiling run that lost a throughput figure is still a failure
        let mut results = results;
        results[2].vars.remove("var.TCP_UP_1");
        assert!(crate::bench::failure(Ok(()), &section_rows(&results), 1).is_some());
    }

    #[test]
    fn notes_on_lost_pings_and_failed_connections() {
        let mut v = full_run("8.0", 10, "256");
        v.insert("var.PING_MS".into(), "1.0 2.0 3.0".into());
        v.insert(
            "var.CONNS".into(),
            "connections: ok=10 failed=2 seconds=5.00 workers=4".into(),
        );
        v.remove("var.UDP_64");
        v.insert(
            "var.KNEE_FLOWS".into(),
            "6000 pps (loss < 0.1 %; bound by the sender)".into(),
        );
        let n = notes(&[Run {
            system: 0,
            scenario: "bench-router-linux-1".into(),
            vars: v,
        }]);
        assert_eq!(
            n,
            [
                "bench-router-linux-1: no figure for UDP 64 B payload, wan received, (lan1 offered)",
                "bench-router-linux-1: 3 of 200 pings answered",
                "bench-router-linux-1: the knee of a new flow per packet is 6000 pps, bound by the sender (pktgen fell short of the next rate without loss: the router's is higher)",
                "bench-router-linux-1: 2 of 12 connections failed",
            ]
        );
    }

    /// The parsers read what dom0's tools printed: mutated lines (seeded xorshift,
    /// thousands of cases) give a figure or none, never a panic, and a figure is finite.
    #[test]
    fn mutated_lines_never_panic() {
        let seeds = [
            UDP_RECEIVER,
            "[SUM]   0.00-3.05   sec   105 MBytes   289 Mbits/sec                  receiver",
            "connections: ok=412 failed=3 seconds=5.02 workers=4",
            " 0.412 0.388 1.5 2.25",
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = b" -/()%.=0123456789eE+[]SUMsecokfailedreceiverbits";
        for i in 0..20_000 {
            let mut b: Vec<u8> = seeds[i % seeds.len()].as_bytes().to_vec();
            for _ in 0..(next() % 6 + 1) {
                let pos = (next() as usize) % (b.len() + 1);
                match next() % 3 {
                    0 if pos < b.len() => {
                        b.remove(pos);
                    }
                    1 if pos < b.len() => b[pos] = alphabet[(next() as usize) % alphabet.len()],
                    _ => b.insert(pos, alphabet[(next() as usize) % alphabet.len()]),
                }
            }
            let line = String::from_utf8_lossy(&b);
            if let Some(r) = udp_rates(&line) {
                assert!(
                    r.received_pps.is_finite() && r.received_pps >= 0.0,
                    "{line}"
                );
                assert!(r.received_pps <= r.offered_pps, "{line}");
            }
            if let Some(c) = connections(&line) {
                assert!(c.per_s().is_finite(), "{line}");
            }
            let _ = mbits(&line);
            let t = ping_times(&line);
            for p in [50.0, 99.0] {
                if let Some(v) = percentile(&t, p) {
                    assert!(t.contains(&v), "{line}");
                }
            }
        }
    }
}
