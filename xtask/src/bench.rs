//! `cargo xtask bench [seed|boot|dd|fs|net|router|all]`: Xenlet against what a user
//! would run instead, on the nested Xen test bed; `bench` alone (or `all`) runs every
//! bench in sequence and writes the whole report (`target/bench/report.md`, one SVG
//! chart per bench; see `report.rs`); `bench publish` copies that report and its
//! charts into `docs/bench/`, where the docs' figures come from.
//!
//! Each bench runs its scenarios in one test-bed session, N runs of each system
//! alternating (fresh boots; `NAME.i` is run `i` of a scenario), and returns a
//! [`report::Section`]: per measurement and system the figure of each run. The
//! report gives medians with min..max and the ratios to a baseline system.
//!
//! - `seed`, `fs`: the report's experiment (`bench_fs.rs`);
//! - `files`: 5,000 small files copied to ext4 and synced (`bench_files.rs`);
//! - `boot`: `xl create` to the first prompt, and the smallest `memory=` that works
//!   (`bench_boot.rs`);
//! - `router`: Xenlet as a router against a Linux router domU (`bench_router.rs`);
//! - `net`: dom0's real `iperf3 -c` (5 s, TCP, one stream) against an `iperf3 -s` in
//!   the Linux PVHVM domU (Debian's kernel and netfront, iperf3 added to its
//!   initramfs; `bench-net-linux`) and in Xenlet, its netfront and smoltcp, booted
//!   both as PVH (`bench-net-xenlet`) and as HVM from its disk image like the Linux
//!   peer (`bench-net-xenlet-hvm`), both directions (`-R`: the guest sends), each guest
//!   on the bridge xenbr0 through dom0's netback; Mbit/s of the receiver line;
//! - `dd`: the same 8 MiB (`bs=16k count=512 conv=fsync`, zeros) written three ways,
//!   each to a fresh 64 MiB file behind a loop device in dom0: dom0's own `dd` to the
//!   loop device (`bench-linux`, first step), the Linux PVHVM domU's busybox `dd` to
//!   its xvdb, `phy:` on that loop device, i.e. dom0's kernel blkback (`bench-linux`),
//!   and Xenlet booted from its disk image as HVM, `dd` to its xvdb, `phy:` as well
//!   (`bench-xenlet`); MB/s (10^6 bytes per second, as dd prints it).
//!
//! Everything runs nested under QEMU's TCG, so the absolute figures are far below bare
//! metal; the ratios are what compares. A benchmark, not a test: a bench fails only
//! when a run gives no figure (its section says so, the other sections stay, and the
//! command exits non-zero).

use crate::report::{self, Row, Section, Stamp};
use crate::testbed;
use crate::util::{step, Error, Result};
use std::time::Instant;

const USAGE: &str = "\
usage: cargo xtask bench [all|seed|boot|dd|fs|files|net|router|clients] [options] [testbed options]
       cargo xtask bench publish

  (none), all [--runs N]
        every bench below in sequence, each its own test-bed session, progress
        lines between them; fs runs with --no-ide --count 16384 (256 MiB: the
        emulated-IDE row is seed's); writes target/bench/report.md and one SVG
        chart per bench; exits non-zero when a bench failed (the others' sections
        stay in the report)
  seed [--runs N] [--count N] [--table]
        the report's table reproduced in one session: ext4 on a 3 GiB second disk at
        /mnt, `time dd bs=16k count=N if=/dev/zero of=/mnt/test`, then sync (N: the
        report's 131072, 2 GiB, by default); the Linux HVM domU on QEMU's emulated IDE, the same with PVHVM drivers, Xenlet HVM
        from its disk image, Xenlet PVH; m:ss per run beside the report's figures and
        the emulated/PV ratio beside the report's
  boot [--runs N] [--no-mem] [--table]
        xl create to the first shell prompt: Xenlet HVM (disk image), Xenlet PVH, the
        Linux PVHVM domU to its init's shell; then the smallest memory= (MiB) with
        which Xenlet PVH and the Linux domU boot and pass dd + ping (not with --no-mem)
  dd [--runs N] [--table]
        dom0's dd to a loop device, the Linux PVHVM domU's dd to xvdb (phy: on a loop
        device) and Xenlet's dd to xvdb (phy:), 8 MiB each (bs=16k count=512
        conv=fsync); MB/s
  fs [--runs N] [--count N] [--no-ide] [--xenlet-only] [--table]
        the report's experiment with the raw-disk row and Xenlet/Linux goals: Xenlet
        PVH (file and raw /dev/xvdb), Xenlet HVM from its disk image, the Linux PVHVM
        domU and the same domU on QEMU's emulated IDE (not with --no-ide; neither
        Linux row with --xenlet-only); N: 131072 (2 GiB) by default; m:ss per run,
        medians, ratios, the report's figures
  files [--runs N] [--table]
        5,000 small files (100-4,099 bytes) copied with cp -r from a read-only ext4
        disk to a fresh ext4 disk, then sync, in Xenlet PVH (a fresh boot per run)
        and the Linux PVHVM domU (its runs in one boot, caches dropped); then a
        10,000-entry directory the same way, created (cp -r + sync) and looked up
        (ls -l of the copy, mounted again); e2fsck -fn and every file's SHA-256
        checked in dom0 (also in target/testbed/bench-files.txt)
  net [--runs N] [--table]
        dom0's iperf3 -c (5 s, both directions) against iperf3 -s in the Linux PVHVM
        domU and in Xenlet (PVH, and HVM from its disk image); Mbit/s
  router [--runs N] [--table]
        the Linux PVH router domU (256 MiB, fw4's ruleset) and Xenlet as the router
        (PVH, 32 MiB), each a fresh boot in the router topology; from lan1 through the
        router to wan: iperf3 TCP both ways with 1 and 4 streams, 64-byte UDP packets
        per second, new TCP connections per second through the NAT, ping p50/p99, the
        domains' memory (also in target/bench/router.md)

  clients [--runs N] [--table]
        a Linux client VM behind the router runs iperf3 to wan, both ways, 1 and 4
        streams: its vif on dom0's bridge behind the Xenlet router (today's path),
        or served by the router itself as the driver domain: Xenlet's netback, or
        the Linux router domU's xen-netback and bridge; Mbit/s, with Xenlet's
        netback / Linux's netback

  publish
        no session: copies target/bench/report.md and its charts into docs/bench/,
        stamped with the date, the commit and this machine; the docs' figures are
        checked against that copy by `cargo xtask lint`

  --runs N   runs of each system, alternating, each a fresh boot (1-5, default 3;
             seed and fs: 1-3, the Linux domU does its 3 runs in one boot)
  --table    no session: the section again from the results in target/testbed/
  testbed options: --retries N, -v, --smp N, --xen-arg ARG, --xl KEY=VALUE
";

/// A bench: its name and what runs it.
type BenchFn = fn(&[&str]) -> Result<Section>;
const BENCHES: &[(&str, BenchFn)] = &[
    ("seed", crate::bench_fs::seed),
    ("boot", crate::bench_boot::boot),
    ("dd", dd),
    ("fs", crate::bench_fs::fs),
    ("files", crate::bench_files::files),
    ("net", net),
    ("router", crate::bench_router::router),
    ("clients", clients),
];

/// The most runs a bench takes (`seed`, `fs` and `files`: the Linux domU's three
/// runs in one boot).
fn max_runs(bench: &str) -> usize {
    match bench {
        "seed" | "fs" | "files" => 3,
        _ => 5,
    }
}

/// What `all` adds to a bench's arguments.
fn all_defaults(bench: &str) -> &'static [&'static str] {
    match bench {
        "fs" => &["--no-ide", "--count", "16384"],
        _ => &[],
    }
}

pub fn main(args: &[&str]) -> Result<()> {
    match args {
        [] => all(&[]),
        ["all", rest @ ..] => all(rest),
        ["help" | "-h" | "--help"] => {
            print!("{USAGE}");
            Ok(())
        }
        ["publish"] => {
            let path = report::publish(&report::dir(), &report::docs_dir(), &Stamp::now())?;
            println!("published: {}", path.display());
            Ok(())
        }
        [name, rest @ ..] => match BENCHES.iter().find(|(n, _)| n == name) {
            Some((_, f)) => {
                let section = f(rest)?;
                finish(&section).map(|_| ())
            }
            None => Err(Error::msg(USAGE)),
        },
    }
}

/// Writes the section and its chart, rebuilds the report and prints the section;
/// an error when the bench failed.
fn finish(s: &Section) -> Result<std::path::PathBuf> {
    // the test bed's stalls in this bench's (last) session: a run measured across one
    // includes the seconds before it was woken
    let mut s = s.clone();
    for st in testbed::stalls() {
        s.notes.push(format!(
            "The nested machine stalled and the test bed woke it ({st}; Xen's timer interrupt lost, see the README's test-bed section): a figure measured across it includes the stall."
        ));
    }
    let s = &s;
    let stamp = Stamp::now();
    let dir = report::dir();
    let path = report::write(&dir, s, &stamp)?;
    println!("\n{}", report::markdown(s, &stamp));
    println!(
        "report: {} (chart: {})",
        path.display(),
        dir.join(format!("{}.svg", s.bench)).display()
    );
    match &s.failed {
        Some(f) => Err(Error::msg(format!("bench {}: {f}", s.bench))),
        None => Ok(path),
    }
}

fn hms(secs: u64) -> String {
    format!("{}h{:02}m{:02}s", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Every bench in sequence, with progress lines; the report is rebuilt after each.
fn all(args: &[&str]) -> Result<()> {
    let mut runs: Option<usize> = None;
    let mut rest: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "--runs" => {
                runs = Some(
                    it.next()
                        .and_then(|v| v.parse::<usize>().ok())
                        .filter(|n| (1..=5).contains(n))
                        .ok_or_else(|| Error::msg(format!("--runs is 1-5\n{USAGE}")))?,
                )
            }
            "--table" => rest.push(a),
            o => rest.push(o),
        }
    }
    // the test-bed options are checked once, before hours of benches
    testbed::parse_bench_options(
        &rest
            .iter()
            .copied()
            .filter(|a| *a != "--table")
            .collect::<Vec<_>>(),
    )?;
    let names: Vec<&str> = BENCHES.iter().map(|(n, _)| *n).collect();
    step(&format!(
        "bench all: {} in sequence, each its own test-bed session; report: {}",
        names.join(", "),
        report::dir().join("report.md").display()
    ));
    let t0 = Instant::now();
    let mut outcome: Vec<(&str, String, u64)> = Vec::new();
    for (i, (name, f)) in BENCHES.iter().enumerate() {
        let mut a: Vec<String> = all_defaults(name).iter().map(|s| s.to_string()).collect();
        if let Some(r) = runs {
            a.push("--runs".into());
            a.push(r.min(max_runs(name)).to_string());
        }
        a.extend(rest.iter().map(|s| s.to_string()));
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        step(&format!(
            "[bench {}/{}: {name}] started after {}: cargo xtask bench {name} {}",
            i + 1,
            BENCHES.len(),
            hms(t0.elapsed().as_secs()),
            a.join(" ")
        ));
        let t = Instant::now();
        let result = f(&a).and_then(|s| finish(&s));
        let secs = t.elapsed().as_secs();
        let status = match &result {
            Ok(_) => "ok".to_string(),
            Err(e) => format!("FAILED: {e}"),
        };
        step(&format!(
            "[bench {}/{}: {name}] {status} in {}",
            i + 1,
            BENCHES.len(),
            hms(secs)
        ));
        outcome.push((name, status, secs));
    }
    println!("\nbench all: {}", hms(t0.elapsed().as_secs()));
    for (n, s, secs) in &outcome {
        println!("  {n:<7} {:>10}  {s}", hms(*secs));
    }
    println!("report: {}", report::dir().join("report.md").display());
    println!("into docs/bench/ (the figures the docs cite): cargo xtask bench publish");
    let failed: Vec<&str> = outcome
        .iter()
        .filter(|(_, s, _)| s != "ok")
        .map(|(n, _, _)| *n)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "bench all: {} failed (see the report)",
            failed.join(", ")
        )))
    }
}

/// The options every bench takes: `--runs N` (1..=max), `--table`, and the test-bed
/// options; the remaining words for the bench itself.
pub(crate) struct BenchArgs<'a> {
    pub runs: usize,
    pub table_only: bool,
    pub opts: testbed::Options,
    pub words: Vec<&'a str>,
}

/// Parses [`BenchArgs`]; `own` are the bench's own flags (kept in `words`, with the
/// value after each of `own_values`).
pub(crate) fn bench_args<'a>(
    args: &[&'a str],
    max_runs: usize,
    own: &[&str],
    own_values: &[&str],
) -> Result<BenchArgs<'a>> {
    let mut runs = 3usize.min(max_runs);
    let mut table_only = false;
    let mut rest = Vec::new();
    let mut words = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "--runs" => {
                runs = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|n| (1..=max_runs).contains(n))
                    .ok_or_else(|| Error::msg(format!("--runs is 1-{max_runs}\n{USAGE}")))?
            }
            "--table" => table_only = true,
            o if own.contains(&o) => words.push(o),
            o if own_values.contains(&o) => {
                words.push(o);
                words.push(
                    it.next()
                        .ok_or_else(|| Error::msg(format!("{o} needs a value")))?,
                );
            }
            o => rest.push(o),
        }
    }
    let (opts, names) = testbed::parse_bench_options(&rest)?;
    if !names.is_empty() {
        return Err(Error::msg(format!("unexpected '{}'\n{USAGE}", names[0])));
    }
    Ok(BenchArgs {
        runs,
        table_only,
        opts,
        words,
    })
}

/// Runs the scenarios in one session, unless `--table`.
pub(crate) fn session(names: &[String], a: &BenchArgs) -> Result<()> {
    if a.table_only {
        return Ok(());
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    testbed::run(&refs, &a.opts)
}

/// A note for each scenario that did not pass: its status, step and message.
pub(crate) fn failures(names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for n in names {
        let v = testbed::result(n);
        let status = v.get("status").map_or("not run", String::as_str);
        if status != "PASS" {
            let why = [v.get("failed_step"), v.get("message")]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .map(|s| s.chars().take(200).collect::<String>())
                .collect::<Vec<_>>()
                .join(": ");
            out.push(format!("{n}: {status} {why}").trim_end().to_string());
        }
    }
    out
}

/// Why a bench failed: the session's error, or rows with fewer figures than runs.
pub(crate) fn failure(ran: Result<()>, rows: &[Row], runs: usize) -> Option<String> {
    let mut short: Vec<String> = rows
        .iter()
        .filter(|r| r.runs.len() < runs)
        .map(|r| format!("{} / {}: {} of {runs}", r.label, r.system, r.runs.len()))
        .collect();
    if short.len() > 3 {
        let more = short.len() - 3;
        short.truncate(3);
        short.push(format!("{more} more"));
    }
    match (ran, short.is_empty()) {
        (Ok(()), true) => None,
        (Err(e), true) => Some(e.to_string()),
        (ran, false) => Some(format!(
            "{}runs without a figure: {}",
            ran.err().map_or(String::new(), |e| format!("{e}; ")),
            short.join(", ")
        )),
    }
}

/// (who, scenario, captured variable)
const DD_RUNS: &[(&str, &str, &str)] = &[
    ("dom0 (loop device)", "bench-linux", "DOM0"),
    ("Linux PVHVM domU", "bench-linux", "LINUX"),
    ("Xenlet HVM (disk image)", "bench-xenlet", "XENLET"),
];

struct Figure {
    bytes: u64,
    seconds: f64,
}

impl Figure {
    fn mb_s(&self) -> f64 {
        self.bytes as f64 / self.seconds / 1e6
    }
}

/// Bytes and seconds from a dd summary: GNU `8388608 bytes (8.4 MB, 8.0 MiB) copied,
/// 0.52 s, 16.1 MB/s` or busybox `8388608 bytes (8.0MB) copied, 5.10 seconds, 1.6MB/s`.
fn parse(line: &str) -> Option<Figure> {
    let bytes = line.split_whitespace().next()?.parse().ok()?;
    let after = line.split_once("copied, ")?.1;
    let seconds: f64 = after.split_whitespace().next()?.parse().ok()?;
    (seconds > 0.0).then_some(Figure { bytes, seconds })
}

/// `NAME.1`, `NAME.2`, ...: the alternating runs of the scenarios, run 1 of each
/// first.
fn alternating(scenarios: &[&str], runs: usize) -> Vec<String> {
    (1..=runs)
        .flat_map(|i| scenarios.iter().map(move |s| format!("{s}.{i}")))
        .collect()
}

/// Runs `a.runs` of each of `scenarios`, alternating, in one session after saying
/// `what` they do; -> (the runs' names, how the session went).
fn run_alternating(a: &BenchArgs, scenarios: &[&str], what: &str) -> (Vec<String>, Result<()>) {
    let names = alternating(scenarios, a.runs);
    step(&format!(
        "{what}, {} run(s) each: {}",
        a.runs,
        names.join(", ")
    ));
    let ran = session(&names, a);
    (names, ran)
}

pub fn dd(args: &[&str]) -> Result<Section> {
    let a = bench_args(args, 5, &[], &[])?;
    let (names, ran) = run_alternating(
        &a,
        &["bench-linux", "bench-xenlet"],
        "bench dd: 8 MiB (bs=16k count=512 conv=fsync) by dom0, the Linux domU and Xenlet",
    );
    let rows: Vec<Row> = DD_RUNS
        .iter()
        .map(|(who, sc, var)| {
            let figs = (1..=a.runs)
                .filter_map(|i| {
                    testbed::result(&format!("{sc}.{i}"))
                        .get(&format!("var.{var}"))
                        .and_then(|l| parse(l))
                        .map(|f| f.mb_s())
                })
                .collect();
            Row::new(
                "dd 8 MiB to a loop device (bs=16k conv=fsync)",
                who,
                figs,
                "MB/s",
                true,
            )
        })
        .collect();
    let mut notes = failures(&names);
    for i in 1..=a.runs {
        for (who, sc, var) in DD_RUNS {
            if let Some(l) = testbed::result(&format!("{sc}.{i}")).get(&format!("var.{var}")) {
                notes.push(format!("run {i}, {who}: `{l}`"));
            }
        }
    }
    Ok(Section {
        bench: "dd".into(),
        title: "block writes to a loop device: dom0, the Linux domU, Xenlet".into(),
        command: format!("cargo xtask bench dd --runs {}", a.runs),
        about: "The same 8 MiB (`dd bs=16k count=512 conv=fsync`, zeros), each time to a \
                fresh 64 MiB file behind a loop device in dom0: dom0's own `dd` to the loop \
                device, the Linux PVHVM domU's busybox `dd` to its xvdb (`phy:` on the loop \
                device, dom0's kernel blkback; timed by `/proc/uptime`) and Xenlet's `dd` to \
                its xvdb (`phy:`, booted as HVM from its disk image). Each run boots the Linux \
                domU (whose run also has dom0's) and Xenlet afresh, alternating."
            .into(),
        baseline: Some("Linux PVHVM domU".into()),
        failed: failure(ran, &rows, a.runs),
        rows,
        text: None,
        notes,
    })
}

/// Mbit/s from an iperf3 summary line (`... 10.3 MBytes  17.3 Mbits/sec ... receiver`).
pub(crate) fn mbits(line: &str) -> Option<f64> {
    let w: Vec<&str> = line.split_whitespace().collect();
    let i = w.iter().position(|x| x.ends_with("bits/sec"))?;
    let v: f64 = w.get(i.checked_sub(1)?)?.parse().ok()?;
    let scale = match w[i] {
        "bits/sec" => 1e-6,
        "Kbits/sec" => 1e-3,
        "Mbits/sec" => 1.0,
        "Gbits/sec" => 1e3,
        _ => return None,
    };
    Some(v * scale)
}

/// (who, scenario)
const NET_SYSTEMS: &[(&str, &str)] = &[
    ("Linux PVHVM domU", "bench-net-linux"),
    ("Xenlet PVH", "bench-net-xenlet"),
    ("Xenlet HVM (disk image)", "bench-net-xenlet-hvm"),
];

pub fn net(args: &[&str]) -> Result<Section> {
    let a = bench_args(args, 5, &[], &[])?;
    let scenarios: Vec<&str> = NET_SYSTEMS.iter().map(|s| s.1).collect();
    let (names, ran) = run_alternating(
        &a,
        &scenarios,
        "bench net: dom0's iperf3 -c against the Linux domU and Xenlet, both directions",
    );
    let mut rows = iperf_rows(
        &[
            ("RX", "iperf3 TCP dom0 -> guest (5 s, 1 stream)"),
            ("TX", "iperf3 TCP guest -> dom0 (5 s, 1 stream, -R)"),
        ],
        NET_SYSTEMS,
        a.runs,
    );
    // CPU seconds used during each 5 s test (one vCPU: guest + dom0 <= 5 s when the
    // CPU is the limit)
    for (var, dir) in [("RX", "dom0 -> guest"), ("TX", "guest -> dom0")] {
        for (whose, key) in [("guest", "GUEST_CPU"), ("dom0", "DOM0_CPU")] {
            for (who, sc) in NET_SYSTEMS {
                let figs = (1..=a.runs)
                    .filter_map(|i| {
                        testbed::result(&format!("{sc}.{i}"))
                            .get(&format!("var.{var}_{key}"))
                            .and_then(|v| v.trim().parse::<f64>().ok())
                    })
                    .collect();
                let label = format!("{whose} CPU seconds during {dir} (xl list)");
                rows.push(Row::new(&label, who, figs, "s", false));
            }
        }
    }
    // what crosses the vif per packet (`net/vifcount.sh`: dom0's counters of the
    // guest's vif over a further 4 s each way): how large the sender's packets are on
    // the ring, and how many packets (ACKs) the receiver sends back per MB
    for (label, var, unit, higher, f) in VIF_ROWS {
        for (who, sc) in NET_SYSTEMS {
            let figs = (1..=a.runs)
                .filter_map(|i| {
                    testbed::result(&format!("{sc}.{i}"))
                        .get(&format!("var.VIF_{var}"))
                        .and_then(|l| vif_counts(l))
                        .and_then(f)
                })
                .collect();
            rows.push(Row::new(label, who, figs, unit, higher));
        }
    }
    // the reflector (Xenlet PVH only: `reflect eth0 on`, pktgen in dom0 to its MAC
    // and back): the vif's own cost, the ceiling of any packet path through it
    let sc = NET_SYSTEMS[1].1;
    let reflect = |f: fn(&str) -> Option<f64>, key: &str| -> Vec<f64> {
        (1..=a.runs)
            .filter_map(|i| {
                testbed::result(&format!("{sc}.{i}"))
                    .get(&format!("var.{key}"))
                    .and_then(|v| f(v))
            })
            .collect()
    };
    rows.push(Row::new(
        "reflector: 64-byte frames dom0 -> vif -> dom0, knee (< 0.1 % lost)",
        NET_SYSTEMS[1].0,
        reflect(
            |v| crate::bench_router::knee(v).map(|k| k.0),
            "REFLECT_KNEE",
        ),
        "frames/s",
        true,
    ));
    rows.push(Row::new(
        "reflector: pktgen with no limit, frames back",
        NET_SYSTEMS[1].0,
        reflect(
            |v| crate::bench_router::unlimited(v).map(|u| u.1),
            "REFLECT_UNLIMITED",
        ),
        "frames/s",
        true,
    ));
    Ok(Section {
        bench: "net".into(),
        title: "TCP throughput between dom0 and a guest: the Linux domU, Xenlet".into(),
        command: format!("cargo xtask bench net --runs {}", a.runs),
        about: "dom0's `iperf3 -c` (TCP, one stream, 5 s; `-R`: the guest sends) against an \
                `iperf3 -s` in the guest on the bridge xenbr0, through dom0's netback: the \
                Linux PVHVM domU (Debian's kernel, netfront; iperf3 in its initramfs; 256 \
                MiB), Xenlet as PVH and Xenlet booted as HVM from its disk image (64 MiB \
                each: iperf3's data buffers, TCP's window, are 1 MiB a stream). Mbit/s of iperf3's \
                receiver line, and the CPU seconds dom0 and the guest used during each test \
                (`xl list` before and after; with one vCPU the two together reach the test's \
                length when the CPU is what limits). The vif's counters in dom0 over a \
                further 4 s each way (net/vifcount.sh): the mean packet the sender's \
                netfront puts on the ring (a GSO packet counts once) and the packets the \
                receiver sends back (its ACKs) per MB. The reflector: Xenlet's `reflect eth0 \
                on` sends every unicast frame back, and pktgen in a dom0 namespace on xenbr0 \
                offers it 64-byte frames (net/reflect.sh): the highest rate that comes back \
                with < 0.1 % lost, the vif's own ceiling. Each run is a fresh boot of each \
                guest, alternating."
            .into(),
        baseline: Some("Linux PVHVM domU".into()),
        failed: failure(ran, &rows, a.runs),
        rows,
        text: net_profiles(a.runs),
        notes: failures(&names),
    })
}

/// dom0's counters of a guest's vif over a transfer (`net/vifcount.sh`'s line):
/// packets and bytes from the guest, then to it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct VifCounts {
    from_packets: f64,
    from_bytes: f64,
    to_packets: f64,
    to_bytes: f64,
}

/// Parses `from guest P packets, B bytes, ...; to guest P packets, B bytes, ...`.
fn vif_counts(line: &str) -> Option<VifCounts> {
    let (from, to) = line.split_once("; to guest ")?;
    let from = from.split("from guest ").nth(1)?;
    let two = |s: &str| -> Option<(f64, f64)> {
        let mut w = s.split(", ");
        let p = w.next()?.strip_suffix(" packets")?.parse().ok()?;
        let b = w.next()?.strip_suffix(" bytes")?.parse().ok()?;
        Some((p, b))
    };
    let ((from_packets, from_bytes), (to_packets, to_bytes)) = (two(from)?, two(to)?);
    Some(VifCounts {
        from_packets,
        from_bytes,
        to_packets,
        to_bytes,
    })
}

/// Packets one way per MB (2^20 bytes) the other way; `None` when nothing moved.
fn per_mb(packets: f64, bytes: f64) -> Option<f64> {
    (bytes > 0.0).then(|| packets / (bytes / 1_048_576.0))
}

/// `bench net`'s rows from the vif's counters: (label, `VIF_` capture, unit, higher
/// is better, figure).
type VifRow = (
    &'static str,
    &'static str,
    &'static str,
    bool,
    fn(VifCounts) -> Option<f64>,
);
const VIF_ROWS: [VifRow; 3] = [
    (
        "guest -> dom0: bytes per packet the guest puts on the ring (GSO)",
        "TX",
        "B",
        true,
        |c| (c.from_packets > 0.0).then(|| c.from_bytes / c.from_packets),
    ),
    (
        "guest -> dom0: packets (ACKs) dom0 sends back per MB",
        "TX",
        "per MB",
        false,
        |c| per_mb(c.to_packets, c.from_bytes),
    ),
    (
        "dom0 -> guest: packets (ACKs) the guest sends back per MB",
        "RX",
        "per MB",
        false,
        |c| per_mb(c.from_packets, c.to_bytes),
    ),
];

/// dom0's profile of each system's last run that has one (`net/dom0prof.sh` over a
/// further 4 s transfer each way), as a list for the report.
fn net_profiles(runs: usize) -> Option<String> {
    let mut t = String::from(
        "dom0's CPU during a further 4 s transfer each way (`perf record -a -g`, cpu-clock; \
         swapper is idle, xen_hypercall_* is time in Xen for dom0), each system's last run:\n\n",
    );
    let mut any = false;
    for (who, sc) in NET_SYSTEMS {
        let Some((i, v)) = (1..=runs)
            .rev()
            .map(|i| (i, testbed::result(&format!("{sc}.{i}"))))
            .find(|(_, v)| v.contains_key("var.PROF_TX_INCL"))
        else {
            continue;
        };
        any = true;
        for (dir, key) in [("dom0 -> guest", "RX"), ("guest -> dom0", "TX")] {
            let f = |what: &str| {
                v.get(&format!("var.PROF_{key}_{what}"))
                    .map_or("-", String::as_str)
                    .to_string()
            };
            t.push_str(&format!(
                "- {who}, {dir} ({sc}.{i}): by command: {}; by symbol: {}; including callees: {}\n",
                f("COMM"),
                f("SYM"),
                f("INCL")
            ));
        }
    }
    any.then_some(t)
}

/// One row per (captured iperf3 receiver line, label) and system (label, scenario):
/// Mbit/s of runs `scenario.1` .. `scenario.runs`.
fn iperf_rows(vars: &[(&str, &str)], systems: &[(&str, &str)], runs: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    for (var, label) in vars {
        for (who, sc) in systems {
            let figs = (1..=runs)
                .filter_map(|i| {
                    testbed::result(&format!("{sc}.{i}"))
                        .get(&format!("var.{var}"))
                        .and_then(|l| mbits(l))
                })
                .collect();
            rows.push(Row::new(label, who, figs, "Mbit/s", true));
        }
    }
    rows
}

/// `bench clients`' systems: (label, scenario), today's path first (the baseline),
/// then the two driver domains, Xenlet's and Linux's.
const CLIENT_SYSTEMS: [(&str, &str); 3] = [
    ("client via dom0's bridge", "bench-clients-dom0"),
    ("client via Xenlet's netback", "bench-clients-netback"),
    ("client via Linux's netback", "bench-clients-linux"),
];

/// `bench clients`' measurements: (captured iperf3 receiver line, label).
const CLIENT_MEASUREMENTS: [(&str, &str); 4] = [
    ("UP_1", "TCP client -> wan, 1 stream"),
    ("UP_4", "TCP client -> wan, 4 streams"),
    ("DOWN_1", "TCP wan -> client, 1 stream"),
    ("DOWN_4", "TCP wan -> client, 4 streams"),
];

/// The driver domains compared: per measurement, the median of Xenlet's netback over
/// the median of the Linux driver domain's (the report's ratio column is to the dom0
/// path).
fn netback_ratios(rows: &[Row]) -> Option<String> {
    let median = |what: &str, who: &str| {
        rows.iter()
            .find(|r| r.label == what && r.system == who)
            .and_then(|r| report::stats(&r.runs))
            .map(|s| s.median)
    };
    let mut t = String::from(
        "Xenlet's netback / Linux's netback (driver domain against driver domain, medians):\n",
    );
    let mut any = false;
    for (_, what) in CLIENT_MEASUREMENTS {
        let x = median(what, CLIENT_SYSTEMS[1].0);
        let l = median(what, CLIENT_SYSTEMS[2].0);
        let ratio = match (x, l) {
            (Some(x), Some(l)) if l > 0.0 => {
                any = true;
                format!(
                    "{:.2}x ({} / {} Mbit/s)",
                    x / l,
                    report::num(x),
                    report::num(l)
                )
            }
            _ => "-".to_string(),
        };
        t.push_str(&format!("  {what}: {ratio}\n"));
    }
    any.then_some(t)
}

/// `cargo xtask bench clients`: a client VM behind the Xenlet router, its vif on
/// dom0's bridge or served by the router itself (the driver domain).
pub fn clients(args: &[&str]) -> Result<Section> {
    let a = bench_args(args, 5, &[], &[])?;
    let scenarios: Vec<&str> = CLIENT_SYSTEMS.iter().map(|s| s.1).collect();
    let (names, ran) = run_alternating(
        &a,
        &scenarios,
        "bench clients: a client VM's iperf3 to wan, its vif on dom0's bridge behind the Xenlet router or served by the router (Xenlet's netback, the Linux driver domain's)",
    );
    let rows = iperf_rows(&CLIENT_MEASUREMENTS, &CLIENT_SYSTEMS, a.runs);
    Ok(Section {
        bench: "clients".into(),
        title: "A client VM behind the router: its vif through dom0, or served by the router (driver domain: Xenlet's or Linux's)".into(),
        command: format!("cargo xtask bench clients --runs {}", a.runs),
        about: "A Linux PVH client domU (Debian's kernel, netfront, 160 MiB, native TSC as \
                every domain of the test bed) behind Xenlet as the router (PVH, 32 MiB, its \
                image's /etc/config) runs iperf3 (10 s) to wan both ways, 1 and 4 streams. Its vif is either on dom0's brlan, so every \
                packet crosses dom0's netback and bridge and the router's netfront, or \
                served by the router itself (`backend=`: Xenlet's netback and its br-lan): \
                no dom0 on the LAN side. The Linux driver domain's row: the same client \
                served by the Linux router domU (Debian's kernel, PVH, 256 MiB, fw4's \
                ruleset) as a driver domain: its xen-netback and a bridge br-lan holding \
                its LAN vif, a devd of its init standing in for `xl devd` and the vif \
                hotplug script. Each run is a fresh boot of router and client, the three \
                paths alternating. The issue's goal: the netback path >= 2x the dom0 path; \
                the ratio column is to the dom0 path, Xenlet's netback over Linux's below."
            .into(),
        baseline: Some(CLIENT_SYSTEMS[0].0.into()),
        failed: failure(ran, &rows, a.runs),
        text: netback_ratios(&rows),
        rows,
        notes: failures(&names),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_iperf3_receiver_lines() {
        let l = "[  5]   0.00-3.07   sec  6.56 MBytes  17.9 Mbits/sec                  receiver";
        assert!((mbits(l).unwrap() - 17.9).abs() < 1e-9);
        let g = "[  5]   0.00-5.00   sec  1.10 GBytes  1.89 Gbits/sec                  receiver";
        assert!((mbits(g).unwrap() - 1890.0).abs() < 1e-6);
        assert!(mbits("iperf3: error - unable to connect").is_none());
    }

    #[test]
    fn vif_counts_parse_vifcount_lines() {
        let l = "from guest 9037 packets, 557116137 bytes, 61648 B/packet; to guest 1348 packets, 73510 bytes, 54 B/packet";
        let c = vif_counts(l).unwrap();
        assert_eq!(
            c,
            VifCounts {
                from_packets: 9037.0,
                from_bytes: 557116137.0,
                to_packets: 1348.0,
                to_bytes: 73510.0
            }
        );
        let [size, acks, _] = VIF_ROWS.map(|r| r.4(c));
        assert_eq!(size.map(f64::round), Some(61648.0));
        assert_eq!(acks.map(|v| (v * 10.0).round()), Some(25.0));
        assert_eq!(VIF_ROWS[2].4(c), per_mb(9037.0, 73510.0));
        assert_eq!(
            vif_counts("from guest x packets, 1 bytes; to guest 1 packets, 1 bytes"),
            None
        );
        assert_eq!(vif_counts("vif: nothing"), None);
        assert_eq!(per_mb(5.0, 0.0), None);
    }

    #[test]
    fn netback_ratios_divide_xenlet_by_linux() {
        let (what, x, l) = (
            CLIENT_MEASUREMENTS[0].1,
            CLIENT_SYSTEMS[1].0,
            CLIENT_SYSTEMS[2].0,
        );
        let rows = [
            Row::new(what, CLIENT_SYSTEMS[0].0, vec![50.0], "Mbit/s", true),
            Row::new(what, x, vec![100.0, 120.0, 110.0], "Mbit/s", true),
            Row::new(what, l, vec![50.0, 60.0, 40.0], "Mbit/s", true),
        ];
        let t = netback_ratios(&rows).unwrap();
        assert!(t.contains("TCP client -> wan, 1 stream: 2.20x (110 / 50 Mbit/s)"));
        assert!(t.contains("TCP wan -> client, 4 streams: -"));
        assert!(netback_ratios(&rows[..2]).is_none());
    }

    #[test]
    fn parses_gnu_and_busybox() {
        let g = parse("8388608 bytes (8.4 MB, 8.0 MiB) copied, 0.5 s, 16.8 MB/s").unwrap();
        assert_eq!(g.bytes, 8388608);
        assert!((g.mb_s() - 16.777216).abs() < 1e-6);
        let b = parse("8388608 bytes (8.0MB) copied, 5.103 seconds, 1.6MB/s").unwrap();
        assert!((b.seconds - 5.103).abs() < 1e-9);
        assert!(parse("dd: error").is_none());
    }

    #[test]
    fn runs_alternate_and_options_parse() {
        assert_eq!(
            alternating(&["bench-linux", "bench-xenlet"], 2),
            [
                "bench-linux.1",
                "bench-xenlet.1",
                "bench-linux.2",
                "bench-xenlet.2"
            ]
        );
        let a = bench_args(
            &[
                "--runs",
                "2",
                "--count",
                "256",
                "--no-ide",
                "--retries",
                "1",
            ],
            3,
            &["--no-ide"],
            &["--count"],
        )
        .unwrap();
        assert_eq!((a.runs, a.table_only, a.opts.retries), (2, false, 1));
        assert_eq!(a.words, ["--count", "256", "--no-ide"]);
        assert!(bench_args(&["--runs", "4"], 3, &[], &[]).is_err());
        assert!(bench_args(&["extra"], 3, &[], &[]).is_err());
        assert_eq!(bench_args(&[], 5, &[], &[]).unwrap().runs, 3);
        let rows = [Row::new("m", "a", vec![1.0, 2.0], "s", false)];
        assert!(failure(Ok(()), &rows, 2).is_none());
        assert!(failure(Ok(()), &rows, 3).unwrap().contains("m / a: 2 of 3"));
        assert!(BENCHES
            .iter()
            .map(|b| b.0)
            .eq(report::ORDER.iter().copied()));
    }
}
