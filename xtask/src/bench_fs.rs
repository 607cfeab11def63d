//! `cargo xtask bench fs` and `bench seed`: the original report's experiment.
//!
//! The report (an OpenWrt HVM guest on Xen, 2017 bare metal) mounted its second disk
//! at /mnt and ran `time dd bs=16k count=131072 if=/dev/zero of=/mnt/test` (2 GiB),
//! then `sync`: 1:54-3:08 on QEMU's emulated IDE, 0:20-0:25 with the PV block driver.
//! Both benches run it in one test-bed session on a fresh 3 GiB disk per run (`phy:`
//! on a loop device) that dom0 formats with `mkfs.ext4`, the block count going to
//! dom0 as the payload file `bench-fs-count` (scenarios `bench-fs-*`, see
//! `testbed/scenarios.rs`): Xenlet runs are fresh boots and alternate with each
//! other; the Linux domU does its three runs in one boot (a nested Linux HVM boot
//! takes minutes), after Xenlet's first and second runs.
//!
//! - `seed`: the report's table reproduced: the Linux HVM domU on QEMU's emulated IDE
//!   (`xen_platform_pci = 0`), the same Linux with PVHVM drivers, Xenlet HVM from its
//!   disk image, Xenlet PVH; printed in the report's shape (m:ss per run) beside the
//!   report's figures, with the emulated/PV ratio measured here beside the report's.
//!   The default count is the report's, [`SEED_COUNT`] (2 GiB); a smaller `--count`
//!   is said in the table.
//! - `fs`: the same with Xenlet's raw-disk row (file / raw), the CPU seconds dom0 and
//!   the guest spent on each run (the bed's ceiling: dom0's own seconds are what the
//!   same bytes would take if the guest's part cost nothing) and the Xenlet / Linux
//!   goals; the report's 2 GiB by default, up to [`FS_MAX_RUNS`] runs a row
//!   (`--no-hvm` leaves out the HVM row, whose boots take a minute each).
//!
//! Why the ceiling is dom0's CPU and not a run of its own: dom0 writing the same 2 GiB
//! to the loop device from user space (1 MiB `O_DIRECT` writes, eight in flight, the
//! buffer filled once) took 18.3 s on 2026-12-07, against 13.9 s for Xenlet's raw
//! disk through blkback: a dom0 process pays for system calls and page pinning that
//! blkback, in dom0's kernel, does not, so it measured dom0's user space, not the
//! path.

use crate::bench::{bench_args, failure, failures};
use crate::report::{Row, Section};
use crate::testbed;
use crate::util::{step, Error, Result};

/// A row: (label, scenario, Linux). A Xenlet row's run `i` is scenario
/// `<scenario>-i` (one boot each); a Linux row's three runs are in one boot of its
/// scenario, the figures of run `i` captured as `DD_S_i` and `SYNC_S_i`.
type FsRow = (&'static str, &'static str, bool);

const FS_ROWS: &[FsRow] = &[
    ("Xenlet PVH, file on ext4", "bench-fs-pvh", false),
    ("Xenlet PVH, raw /dev/xvdb", "bench-fs-raw", false),
    ("Xenlet PVH, file, no journal", "bench-fs-nojournal", false),
    ("Xenlet HVM (image), file", "bench-fs-hvm", false),
    ("Linux PVHVM (blkfront), file", "bench-fs-linux", true),
    ("Linux HVM, emulated IDE, file", "bench-fs-linux-ide", true),
];

/// `seed`'s rows, in the report's order: emulated first, then PV.
const SEED_ROWS: &[FsRow] = &[
    ("Linux HVM, QEMU emulated IDE", "bench-fs-linux-ide", true),
    ("Linux PVHVM (blkfront)", "bench-fs-linux", true),
    ("Xenlet HVM (disk image)", "bench-fs-hvm", false),
    ("Xenlet PVH", "bench-fs-pvh", false),
];

/// `seed`'s default block count: the report's 2 GiB. (An early pilot on a loaded
/// machine saw the emulated IDE disk write 0.35 MB/s nested and the default was
/// 128 MiB; on 2026-12-04 the IDE row wrote 128 MiB, dd + sync, in 6.3-9.0 s, about
/// 16 MB/s, so 2 GiB takes minutes, not hours. Below 256 MiB the Linux domU's page
/// cache holds most of the file: its dd then fills memory more than the disk.)
const SEED_COUNT: u64 = 131072;

/// Runs of a Linux row (one boot), and of every row of `seed`.
const LINUX_RUNS: usize = 3;

/// Runs of a Xenlet row of `fs` at the most (scenarios `bench-fs-*-1` to
/// `-5`).
const FS_MAX_RUNS: usize = 5;

/// The report's runs (LEDE x86 HVM guests, Xen, 2017 bare metal; `time dd` of 2 GiB,
/// seconds): the three QEMU builds twice each, and the PVHVM build twice.
const REPORT_QEMU: &[f64] = &[188.0, 158.0, 143.0, 117.0, 114.0, 122.0];
const REPORT_PV: &[f64] = &[25.0, 20.0];

/// Seconds from bash's `time` format, `0m12.345s` (Xenlet's `time`).
pub(crate) fn time_real(s: &str) -> Option<f64> {
    let (m, rest) = s.trim().split_once('m')?;
    let sec: f64 = rest.strip_suffix('s')?.parse().ok()?;
    let min: f64 = m.parse().ok()?;
    Some(min * 60.0 + sec)
}

/// `m:ss.s`, the report's minutes:seconds with a tenth.
pub(crate) fn mmss(secs: f64) -> String {
    let tenths = (secs * 10.0).round() as u64;
    format!("{}:{:02}.{}", tenths / 600, tenths / 10 % 60, tenths % 10)
}

pub(crate) fn median(v: &[f64]) -> Option<f64> {
    crate::report::stats(v).map(|s| s.median)
}

/// One run's figures: dd's and sync's seconds, the CPU seconds dom0 and the guest
/// used meanwhile (runs before 2026-12-07 have none), and dom0's check of the disk
/// after it.
struct FsRun {
    dd: f64,
    sync: f64,
    cpu: Option<(f64, f64)>,
    note: String,
}

/// Run `n`'s figures from a scenario's `result.txt` variables: a Xenlet run's
/// (`n` = None: `DD_REAL`, `SYNC_REAL`, `FSCK`) or run `n` of a Linux boot
/// (`DD_S_n`, `SYNC_S_n`, `FSCK_n`).
fn fs_run(vars: &std::collections::BTreeMap<String, String>, n: Option<usize>) -> Option<FsRun> {
    let get = |k: &str| vars.get(&format!("var.{k}"));
    let (dd, sync, fsck) = match n {
        Some(n) => (
            get(&format!("DD_S_{n}"))?.parse().ok()?,
            get(&format!("SYNC_S_{n}"))?.parse().ok()?,
            get(&format!("FSCK_{n}")),
        ),
        None => (
            time_real(get("DD_REAL")?)?,
            time_real(get("SYNC_REAL")?)?,
            get("FSCK"),
        ),
    };
    let suffix = n.map_or(String::new(), |n| format!("_{n}"));
    let secs = |k: &str| get(&format!("{k}{suffix}")).and_then(|v| v.parse::<f64>().ok());
    let cpu = secs("DOM0_CPU").zip(secs("GUEST_CPU"));
    let note = match fsck {
        Some(f) if f != "0" => format!("e2fsck -fn exit {f}"),
        _ => String::new(),
    };
    Some(FsRun {
        dd,
        sync,
        cpu,
        note,
    })
}

/// A row's runs: for each run `i`, its figures or why there are none.
struct RowRuns {
    row: FsRow,
    runs: Vec<(usize, std::result::Result<FsRun, String>)>,
}

impl RowRuns {
    fn totals(&self) -> Vec<f64> {
        self.runs
            .iter()
            .filter_map(|(_, r)| r.as_ref().ok().map(|r| r.dd + r.sync))
            .collect()
    }
    fn dd(&self) -> Vec<f64> {
        self.runs
            .iter()
            .filter_map(|(_, r)| r.as_ref().ok().map(|r| r.dd))
            .collect()
    }
    /// dom0's CPU seconds per run (`guest` false) or the guest's.
    fn cpu(&self, guest: bool) -> Vec<f64> {
        self.runs
            .iter()
            .filter_map(|(_, r)| r.as_ref().ok()?.cpu.map(|c| if guest { c.1 } else { c.0 }))
            .collect()
    }
}

/// What the options ask for.
struct Plan {
    runs: usize,
    count: u64,
    rows: Vec<FsRow>,
    names: Vec<String>,
}

impl Plan {
    fn mib(&self) -> u64 {
        (self.count * 16384) >> 20
    }
}

/// The session's scenarios: the Xenlet rows' runs one after the other, the Linux domU
/// (three runs in one boot) after the first, the emulated-IDE one after the second.
fn plan(rows: Vec<FsRow>, runs: usize, count: u64) -> Plan {
    let ide = rows.iter().any(|r| r.1 == "bench-fs-linux-ide");
    let linux = rows.iter().any(|r| r.1 == "bench-fs-linux");
    let mut names: Vec<String> = Vec::new();
    for i in 1..=runs {
        names.extend(rows.iter().filter(|r| !r.2).map(|r| format!("{}-{i}", r.1)));
        if i == 1 && linux {
            names.push("bench-fs-linux".to_string());
        }
        if i == 2.min(runs) && ide {
            names.push("bench-fs-linux-ide".to_string());
        }
    }
    Plan {
        runs,
        count,
        rows,
        names,
    }
}

/// Each row's runs from the results in `target/testbed/`, with a progress line per run.
fn collect(p: &Plan) -> Vec<RowRuns> {
    let mut out = Vec::new();
    for &row in &p.rows {
        let (_, prefix, linux) = row;
        let n = if linux { LINUX_RUNS } else { p.runs };
        let mut runs = Vec::new();
        for i in 1..=n {
            let (name, vars, r) = if linux {
                let v = testbed::result(prefix);
                let r = fs_run(&v, Some(i));
                (format!("{prefix} run {i}"), v, r)
            } else {
                let v = testbed::result(&format!("{prefix}-{i}"));
                let r = fs_run(&v, None);
                (format!("{prefix}-{i}"), v, r)
            };
            match r {
                Some(r) => {
                    println!(
                        "    {name}: dd {} + sync {} = {}{}",
                        mmss(r.dd),
                        mmss(r.sync),
                        mmss(r.dd + r.sync),
                        if r.note.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", r.note)
                        }
                    );
                    runs.push((i, Ok(r)));
                }
                None => {
                    let why = vars.get("status").map_or("not run", String::as_str);
                    println!("    {name}: no figure ({why})");
                    runs.push((i, Err(why.to_string())));
                }
            }
        }
        out.push(RowRuns { row, runs });
    }
    out
}

/// A row's figures, one per run ([`RowRuns::totals`], [`RowRuns::dd`]).
type RowFigures = fn(&RowRuns) -> Vec<f64>;

/// The section's rows: dd + sync and dd alone, seconds, per row.
fn section_rows(rr: &[RowRuns], mib: u64) -> Vec<Row> {
    let figures: [(&str, RowFigures); 2] = [
        ("time dd + sync", RowRuns::totals),
        ("time dd alone", RowRuns::dd),
    ];
    let mut v = Vec::new();
    for (what, of) in figures {
        for r in rr {
            v.push(Row::new(
                &format!("{what}, {mib} MiB"),
                r.row.0,
                of(r),
                "s",
                false,
            ));
        }
    }
    v
}

/// What `fs` and `seed` are asked: the bench options, the block count, and which
/// rows to leave out.
struct FsArgs<'a> {
    a: crate::bench::BenchArgs<'a>,
    count: u64,
    ide: bool,
    linux: bool,
    hvm: bool,
}

/// `--runs` (1-`max_runs`), `--count`, the rows left out and the test-bed options of
/// `fs` and `seed`.
fn parse<'a>(args: &[&'a str], default_count: u64, max_runs: usize) -> Result<FsArgs<'a>> {
    let mut a = bench_args(
        args,
        max_runs,
        &["--no-ide", "--no-hvm", "--xenlet-only"],
        &["--count"],
    )?;
    let mut count = default_count;
    let (mut ide, mut linux, mut hvm) = (true, true, true);
    let mut it = a.words.iter();
    while let Some(w) = it.next() {
        match *w {
            "--count" => {
                count = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| Error::msg("--count needs a number"))?
            }
            "--no-ide" => ide = false,
            "--no-hvm" => hvm = false,
            _ => {
                ide = false;
                linux = false;
            }
        }
    }
    if count == 0 || count * 16384 > 2560 << 20 {
        return Err(Error::msg("--count is 1-163840 (the disk is 3 GiB)"));
    }
    // dom0 reads the block count from /payload/bench-fs-count (`${COUNT}` in the
    // scenarios' commands; the report's 131072 without it)
    a.opts
        .payload
        .push(("bench-fs-count".to_string(), format!("{count}\n")));
    Ok(FsArgs {
        a,
        count,
        ide,
        linux,
        hvm,
    })
}

/// Runs the plan's session (unless `--table`) and reads the runs.
fn measure(p: &Plan, a: &crate::bench::BenchArgs, what: &str) -> (Result<()>, Vec<RowRuns>) {
    step(&format!(
        "bench {what}: time dd bs=16k count={} ({} MiB) into /mnt/test + sync, {} run(s) of {} rows, alternating: {}",
        p.count,
        p.mib(),
        p.runs,
        p.rows.len(),
        p.names.join(", ")
    ));
    let ran = crate::bench::session(&p.names, a);
    (ran, collect(p))
}

/// Ratio of two optional figures, as text.
fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".to_string(),
    }
}

/// `cargo xtask bench fs`.
pub fn fs(args: &[&str]) -> Result<Section> {
    let FsArgs {
        a,
        count,
        ide,
        linux: with_linux,
        hvm,
    } = parse(args, 131072, FS_MAX_RUNS)?;
    let rows: Vec<FsRow> = FS_ROWS
        .iter()
        .copied()
        .filter(|r| {
            (ide || r.1 != "bench-fs-linux-ide")
                && (hvm || r.1 != "bench-fs-hvm")
                && (with_linux || !r.2)
        })
        .collect();
    let p = plan(rows, a.runs, count);
    let (ran, rr) = measure(&p, &a, "fs");
    let mib = p.mib();

    let mut table = format!(
        "The report's experiment: mount /dev/xvdb /mnt; time dd bs=16k count={count} if=/dev/zero of=/mnt/test ({mib} MiB); sync\n\
         3 GiB data disk, ext4 made by dom0's mkfs.ext4 (4 KiB blocks), phy: on a loop device in dom0\n\
         nested Xen 4.17 under QEMU TCG; per run: dd + sync (dd alone), minutes:seconds\n\
         runs alternate between the systems: each Xenlet run is a fresh boot, the Linux domU does its runs in one boot\n\n"
    );
    let columns = p.runs.max(LINUX_RUNS);
    table.push_str(&format!("{:<38}", "row"));
    for i in 1..=columns {
        table.push_str(&format!(" {:>18}", format!("run {i}")));
    }
    table.push_str(&format!(" {:>9} {:>7}\n", "median", "MB/s"));
    let mut medians = std::collections::BTreeMap::new();
    for r in &rr {
        let mut line = format!("{:<38}", r.row.0);
        let mut notes = Vec::new();
        for i in 1..=columns {
            match r.runs.iter().find(|(n, _)| *n == i) {
                None => line.push_str(&format!(" {:>18}", "")),
                Some((_, Ok(f))) => {
                    line.push_str(&format!(
                        " {:>18}",
                        format!("{} ({})", mmss(f.dd + f.sync), mmss(f.dd))
                    ));
                    if !f.note.is_empty() {
                        notes.push(format!("run {i}: {}", f.note));
                    }
                }
                Some((_, Err(why))) => {
                    line.push_str(&format!(" {:>18}", "-"));
                    notes.push(format!("run {i}: {why}"));
                }
            }
        }
        match median(&r.totals()) {
            Some(m) => {
                medians.insert(r.row.1, m);
                line.push_str(&format!(
                    " {:>9} {:>7.1}",
                    mmss(m),
                    (count * 16384) as f64 / m / 1e6
                ));
            }
            None => line.push_str(&format!(" {:>9} {:>7}", "-", "-")),
        }
        if !notes.is_empty() {
            line.push_str(&format!("  [{}]", notes.join("; ")));
        }
        table.push_str(&line);
        table.push('\n');
    }
    let cpu_medians = cpu_table(&mut table, &rr, &medians, count);
    let rq = median(REPORT_QEMU).unwrap_or(0.0);
    let rp = median(REPORT_PV).unwrap_or(1.0);
    table.push_str(&format!(
        "\nthe report (LEDE x86 HVM guest, Xen, 2017 bare metal; time dd of 2 GiB, count=131072):\n\
         {:<30} 3:08 / 2:38, 2:23 / 1:57, 1:54 / 2:02   median {}\n\
         {:<30} 0:25 / 0:20                              median {}\n",
        "QEMU emulated IDE",
        mmss(rq),
        "PVHVM (blkfront)",
        mmss(rp)
    ));
    let m = |k: &str| medians.get(k).copied();
    table.push_str("\nratios of the medians (dd + sync)\n");
    // (what, the scenarios whose medians divide, the goal)
    let goals = [
        (
            "Xenlet file / Xenlet raw, throughput (PVH)",
            ("bench-fs-raw", "bench-fs-pvh"),
            "0.9",
        ),
        (
            "Xenlet journalled / without a journal, throughput",
            ("bench-fs-nojournal", "bench-fs-pvh"),
            "0.9",
        ),
        (
            "Xenlet PVH / Linux PVHVM, throughput",
            ("bench-fs-linux", "bench-fs-pvh"),
            "3",
        ),
        (
            "Xenlet HVM / Linux PVHVM, throughput",
            ("bench-fs-linux", "bench-fs-hvm"),
            "3",
        ),
    ];
    for (what, (a, b), goal) in goals {
        table.push_str(&format!(
            "  {:<52} {:>6}   goal >= {goal}\n",
            what,
            ratio(m(a), m(b))
        ));
    }
    // The bed's ceiling: any guest's dd + sync takes at least dom0's CPU seconds for
    // the same bytes (one CPU runs both), so Linux's time over the seconds dom0 spent
    // on Xenlet's path is the most Xenlet could be against Linux here.
    let dom0_pvh = cpu_medians.get("bench-fs-pvh").map(|c| c.0);
    table.push_str(&format!(
        "  {:<52} {:>6}   (dom0's CPU for Xenlet's file: the ceiling)\n",
        "the most a guest could be: Linux / that ceiling",
        ratio(m("bench-fs-linux"), dom0_pvh)
    ));
    table.push_str(&format!(
        "  {:<52} {:>6}   the report: {:.1} (medians; {:.1}-{:.1} over its runs)\n",
        "Linux emulated IDE / PVHVM, time",
        ratio(m("bench-fs-linux-ide"), m("bench-fs-linux")),
        rq / rp,
        114.0 / 25.0,
        188.0 / 20.0
    ));
    println!("\n{table}");
    let _ = std::fs::write(
        crate::util::workspace_root().join("target/testbed/bench-fs.txt"),
        &table,
    );
    let rows = section_rows(&rr, mib);
    let mut cmd = format!("cargo xtask bench fs --runs {} --count {count}", p.runs);
    if !ide && with_linux {
        cmd.push_str(" --no-ide");
    }
    if !with_linux {
        cmd.push_str(" --xenlet-only");
    }
    if !hvm {
        cmd.push_str(" --no-hvm");
    }
    Ok(Section {
        bench: "fs".into(),
        title: format!("the report's experiment, {mib} MiB into ext4: Xenlet and the Linux domU"),
        command: cmd,
        about: format!(
            "`mount /dev/xvdb /mnt; time dd bs=16k count={count} if=/dev/zero of=/mnt/test; \
             sync` on a fresh 3 GiB disk formatted by dom0's `mkfs.ext4` (`phy:` on a loop \
             device), dd + sync in seconds; Xenlet PVH into a file and to the raw \
             `/dev/xvdb`, Xenlet HVM from its disk image, the Linux PVHVM domU{}. Each Xenlet \
             run is a fresh boot; the Linux domU does its three runs in one boot. The \
             report's own table is `seed`.",
            if ide {
                " and the same domU on QEMU's emulated IDE"
            } else {
                ""
            }
        ),
        baseline: with_linux.then(|| "Linux PVHVM (blkfront), file".to_string()),
        failed: failed(ran, &rows, &rr),
        rows,
        text: Some(table),
        notes: failures(&p.names),
    })
}

/// The CPU seconds dom0 and the guest used during each row's dd + sync (medians),
/// added to `table`: the bed runs both on one CPU, so dom0's seconds are the row's
/// ceiling (its time if the guest's part cost nothing), and the two against the wall
/// time say whether the CPU was the bound. Returns the rows' (dom0, guest) medians.
fn cpu_table(
    table: &mut String,
    rr: &[RowRuns],
    medians: &std::collections::BTreeMap<&str, f64>,
    count: u64,
) -> std::collections::BTreeMap<&'static str, (f64, f64)> {
    let mut out = std::collections::BTreeMap::new();
    let bytes = (count * 16384) as f64;
    table.push_str(&format!(
        "\nCPU seconds during dd + sync (xl list), medians; one CPU runs dom0 and the guest\n{:<38} {:>7} {:>7} {:>6} {:>13} {:>13}\n",
        "row", "dom0", "guest", "busy", "ceiling MB/s", "row/ceiling"
    ));
    for r in rr {
        let (Some(d), Some(g)) = (median(&r.cpu(false)), median(&r.cpu(true))) else {
            continue;
        };
        out.insert(r.row.1, (d, g));
        let wall = medians.get(r.row.1).copied();
        let busy = wall.map_or("-".to_string(), |w| format!("{:.2}", (d + g) / w));
        table.push_str(&format!(
            "{:<38} {:>7.1} {:>7.1} {:>6} {:>13.1} {:>13}\n",
            r.row.0,
            d,
            g,
            busy,
            bytes / d / 1e6,
            ratio(Some(d), wall)
        ));
    }
    out
}

/// The report's table in its own shape: m:ss per run (dd + sync), the median, MB/s,
/// and the report's figures beside them; the emulated/PV ratio here and there.
fn seed_table(rr: &[RowRuns], count: u64) -> String {
    let mib = (count * 16384) >> 20;
    let mut t = format!(
        "The report's table, reproduced: time dd bs=16k count={count} if=/dev/zero of=/mnt/test ({mib} MiB{}), then sync\n\
         ext4 on a 3 GiB second disk at /mnt; nested Xen 4.17 under QEMU TCG; per run: dd + sync, minutes:seconds\n\n",
        if count == 131072 {
            ", the report's 2 GiB".to_string()
        } else {
            format!("; the report wrote 2 GiB, times here are for {mib} MiB (--count)")
        }
    );
    t.push_str(&format!(
        "{:<30} {:<30} {:>7} {:>6}   {}\n",
        "", "here, per run", "median", "MB/s", "the report (2017 bare metal, 2 GiB, time dd)"
    ));
    let report = |prefix: &str| match prefix {
        "bench-fs-linux-ide" => "3:08 / 2:38, 2:23 / 1:57, 1:54 / 2:02 (QEMU)",
        "bench-fs-linux" => "0:25 / 0:20 (PVHVM)",
        _ => "-",
    };
    let mut medians = std::collections::BTreeMap::new();
    for r in rr {
        let per: Vec<String> = r
            .runs
            .iter()
            .map(|(_, x)| match x {
                Ok(f) => mmss(f.dd + f.sync),
                Err(_) => "-".to_string(),
            })
            .collect();
        let m = median(&r.totals());
        if let Some(m) = m {
            medians.insert(r.row.1, m);
        }
        t.push_str(&format!(
            "{:<30} {:<30} {:>7} {:>6}   {}\n",
            r.row.0,
            per.join(" / "),
            m.map_or("-".to_string(), mmss),
            m.map_or("-".to_string(), |m| format!(
                "{:.1}",
                (count * 16384) as f64 / m / 1e6
            )),
            report(r.row.1)
        ));
    }
    let rq = median(REPORT_QEMU).unwrap_or(0.0);
    let rp = median(REPORT_PV).unwrap_or(1.0);
    let m = |k: &str| medians.get(k).copied();
    t.push_str(&format!(
        "\nratio emulated IDE / PV (time, medians): here {}   the report {:.1} ({:.1}-{:.1} over its runs)\n",
        ratio(m("bench-fs-linux-ide"), m("bench-fs-linux")),
        rq / rp,
        114.0 / 25.0,
        188.0 / 20.0
    ));
    t.push_str(&format!(
        "Xenlet / Linux PVHVM (time, medians): HVM {}, PVH {}\n",
        ratio(m("bench-fs-hvm"), m("bench-fs-linux")),
        ratio(m("bench-fs-pvh"), m("bench-fs-linux"))
    ));
    t
}

/// Why the bench failed, if it did: a row short of runs (or the session failing),
/// else a run that gave no figure.
fn failed(ran: Result<()>, rows: &[Row], rr: &[RowRuns]) -> Option<String> {
    failure(ran, rows, 1).or_else(|| {
        rr.iter()
            .any(|r| r.runs.iter().any(|(_, x)| x.is_err()))
            .then(|| "a run gave no figure".to_string())
    })
}

/// `cargo xtask bench seed`: the report's table.
pub fn seed(args: &[&str]) -> Result<Section> {
    let FsArgs { a, count, .. } = parse(args, SEED_COUNT, LINUX_RUNS)?;
    let p = plan(SEED_ROWS.to_vec(), a.runs, count);
    let (ran, rr) = measure(&p, &a, "seed");
    let table = seed_table(&rr, count);
    println!("\n{table}");
    let rows = section_rows(&rr, p.mib());
    Ok(Section {
        bench: "seed".into(),
        title: format!(
            "the report's table: {} MiB with time dd into ext4, emulated IDE vs PV",
            p.mib()
        ),
        command: format!("cargo xtask bench seed --runs {} --count {count}", p.runs),
        about: format!(
            "The report's commands in one test-bed session: a fresh 3 GiB second disk (`phy:` \
             on a loop device), `mkfs.ext4` by dom0, mounted at /mnt, `time dd bs=16k \
             count={count} if=/dev/zero of=/mnt/test` ({} MiB; the report's 2 GiB is \
             count=131072), then `sync`; dd + sync in seconds. Rows: Debian's Linux as an \
             HVM domU without PV drivers (`xen_platform_pci = 0`: QEMU's emulated IDE disk), \
             the same Linux with its PVHVM drivers (blkfront), Xenlet HVM booted from its \
             disk image, Xenlet PVH. The report's figures (1:54-3:08 emulated, 0:20-0:25 PV) \
             are from 2017 bare metal and 2 GiB; compare the ratios.",
            p.mib()
        ),
        baseline: Some("Linux PVHVM (blkfront)".into()),
        failed: failed(ran, &rows, &rr),
        rows,
        text: Some(table),
        notes: failures(&p.names),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fs_times() {
        assert!((time_real("0m12.345s").unwrap() - 12.345).abs() < 1e-9);
        assert!((time_real("2m3.000s").unwrap() - 123.0).abs() < 1e-9);
        assert!(time_real("12.3").is_none());
        assert_eq!(mmss(114.0), "1:54.0");
        assert_eq!(mmss(20.44), "0:20.4");
        assert_eq!(mmss(59.96), "1:00.0");
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(REPORT_QEMU), Some(132.5));
        assert_eq!(median(&[]), None);
        let mut v = std::collections::BTreeMap::new();
        v.insert("var.DD_REAL".to_string(), "0m10.500s".to_string());
        v.insert("var.SYNC_REAL".to_string(), "0m1.250s".to_string());
        v.insert("var.FSCK".to_string(), "0".to_string());
        let r = fs_run(&v, None).unwrap();
        assert!((r.dd + r.sync - 11.75).abs() < 1e-9 && r.note.is_empty());
        assert!(fs_run(&v, Some(2)).is_none());
        v.insert("var.DD_S_2".to_string(), "95.20".to_string());
        v.insert("var.SYNC_S_2".to_string(), "3.10".to_string());
        v.insert("var.FSCK_2".to_string(), "4".to_string());
        let r = fs_run(&v, Some(2)).unwrap();
        assert!((r.dd - 95.2).abs() < 1e-9 && r.note == "e2fsck -fn exit 4");
        assert!(r.cpu.is_none());
        v.insert("var.DOM0_CPU_2".to_string(), "30.5".to_string());
        v.insert("var.GUEST_CPU_2".to_string(), "12.0".to_string());
        assert_eq!(fs_run(&v, Some(2)).unwrap().cpu, Some((30.5, 12.0)));
        // a Xenlet run's are unnumbered; another run's are not its own
        assert!(fs_run(&v, None).unwrap().cpu.is_none());
        v.insert("var.DOM0_CPU".to_string(), "9.0".to_string());
        v.insert("var.GUEST_CPU".to_string(), "2.5".to_string());
        assert_eq!(fs_run(&v, None).unwrap().cpu, Some((9.0, 2.5)));
    }

    #[test]
    fn the_cpu_table_gives_each_row_its_ceiling() {
        let run = |dd: f64, cpu: Option<(f64, f64)>| {
            Ok(FsRun {
                dd,
                sync: 0.0,
                cpu,
                note: String::new(),
            })
        };
        let rr = vec![
            RowRuns {
                row: FS_ROWS[0],
                runs: vec![
                    (1, run(16.0, Some((10.0, 4.0)))),
                    (2, run(14.0, Some((9.0, 3.0)))),
                    (3, run(18.0, Some((11.0, 5.0)))),
                ],
            },
            // no CPU figures (an older run): no line
            RowRuns {
                row: FS_ROWS[1],
                runs: vec![(1, run(14.0, None))],
            },
        ];
        let mut medians = std::collections::BTreeMap::new();
        medians.insert("bench-fs-pvh", 16.0);
        medians.insert("bench-fs-raw", 14.0);
        let mut t = String::new();
        // 1 GiB: 1073.7 MB over dom0's 10 s
        let c = cpu_table(&mut t, &rr, &medians, 65536);
        assert_eq!(c.get("bench-fs-pvh"), Some(&(10.0, 4.0)));
        assert!(!c.contains_key("bench-fs-raw"));
        let line = t.lines().find(|l| l.starts_with(FS_ROWS[0].0)).unwrap();
        let cols: Vec<&str> = line[38..].split_whitespace().collect();
        assert_eq!(cols, ["10.0", "4.0", "0.88", "107.4", "0.62"], "{t}");
        assert!(!t.contains(FS_ROWS[1].0), "{t}");
    }

    #[test]
    fn the_count_goes_to_dom0() {
        let f = parse(&["--count", "256", "--runs", "1"], SEED_COUNT, LINUX_RUNS).unwrap();
        assert_eq!(
            (f.count, f.ide, f.linux, f.hvm, f.a.runs),
            (256, true, true, true, 1)
        );
        assert_eq!(
            f.a.opts.payload,
            [("bench-fs-count".to_string(), "256\n".to_string())]
        );
        let f = parse(&["--no-ide", "--no-hvm"], 131072, FS_MAX_RUNS).unwrap();
        assert_eq!(
            (f.count, f.ide, f.hvm, f.linux),
            (131072, false, false, true)
        );
        assert_eq!(f.a.opts.payload[0].1, "131072\n");
        assert!(parse(&["--count", "0"], 1, LINUX_RUNS).is_err());
        // seed's rows have three runs each; fs's up to five
        assert!(parse(&["--runs", "4"], SEED_COUNT, LINUX_RUNS).is_err());
        assert_eq!(
            parse(&["--runs", "5"], 131072, FS_MAX_RUNS).unwrap().a.runs,
            5
        );
        assert!(parse(&["--runs", "6"], 131072, FS_MAX_RUNS).is_err());
    }

    #[test]
    fn fs_plan_runs_every_row_five_times() {
        let rows: Vec<FsRow> = FS_ROWS
            .iter()
            .copied()
            .filter(|r| r.1 != "bench-fs-linux-ide" && r.1 != "bench-fs-hvm")
            .collect();
        let p = plan(rows, FS_MAX_RUNS, 131072);
        assert_eq!(p.names.len(), 3 * 5 + 1);
        assert_eq!(
            &p.names[..5],
            [
                "bench-fs-pvh-1",
                "bench-fs-raw-1",
                "bench-fs-nojournal-1",
                "bench-fs-linux",
                "bench-fs-pvh-2"
            ]
        );
        assert!(p.names.contains(&"bench-fs-nojournal-5".to_string()));
        // every run has its scenario, including the HVM row's fifth
        assert!(p.names.iter().all(|n| testbed::scenario_exists(n)));
        assert!(testbed::scenario_exists("bench-fs-hvm-5"));
    }

    #[test]
    fn seed_plan_and_table() {
        let p = plan(SEED_ROWS.to_vec(), 2, 256);
        assert_eq!(
            p.names,
            [
                "bench-fs-hvm-1",
                "bench-fs-pvh-1",
                "bench-fs-linux",
                "bench-fs-hvm-2",
                "bench-fs-pvh-2",
                "bench-fs-linux-ide"
            ]
        );
        assert!(p.names.iter().all(|n| testbed::scenario_exists(n)));
        let run = |dd: f64, sync: f64| FsRun {
            dd,
            sync,
            cpu: None,
            note: String::new(),
        };
        let rr = vec![
            RowRuns {
                row: SEED_ROWS[0],
                runs: vec![
                    (1, Ok(run(100.0, 14.0))),
                    (2, Ok(run(120.0, 8.0))),
                    (3, Ok(run(110.0, 10.0))),
                ],
            },
            RowRuns {
                row: SEED_ROWS[1],
                runs: vec![
                    (1, Ok(run(20.0, 4.0))),
                    (2, Ok(run(18.0, 2.0))),
                    (3, Err("FAIL".into())),
                ],
            },
        ];
        let t = seed_table(&rr, 256);
        assert!(t.contains("count=256 if=/dev/zero of=/mnt/test (4 MiB; the report wrote 2 GiB"));
        assert!(t.contains("1:54.0 / 2:08.0 / 2:00.0"), "{t}");
        assert!(t.contains("0:24.0 / 0:20.0 / -"), "{t}");
        assert!(t.contains("3:08 / 2:38, 2:23 / 1:57, 1:54 / 2:02 (QEMU)"));
        // medians 120 and 22: 5.45 here, 132.5 / 22.5 = 5.9 in the report
        assert!(
            t.contains("ratio emulated IDE / PV (time, medians): here 5.45   the report 5.9"),
            "{t}"
        );
        let rows = section_rows(&rr, 4);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[1].runs, [24.0, 20.0]);
    }
}
