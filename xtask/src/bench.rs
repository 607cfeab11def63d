//! `cargo xtask bench dd|net|fs`: block write, network and filesystem throughput on
//! the nested Xen test bed.
//!
//! `bench fs`: the report's experiment (see `fs`): mount a 3 GiB ext4 disk at /mnt,
//! `time dd bs=16k count=131072 if=/dev/zero of=/mnt/test`, sync; in Xenlet (PVH, to
//! the raw disk too, and HVM from its disk image) and the Linux domU with and without
//! its PV drivers; alternating runs, medians, the report's figures beside them.
//!
//! `bench net`: one session runs dom0's real `iperf3 -c` (5 s, TCP, one stream)
//! against an `iperf3 -s` in the Linux PVHVM domU (Debian's kernel and netfront,
//! iperf3 added to its initramfs; `bench-net-linux`) and in Xenlet, its netfront and
//! smoltcp, booted both as PVH (`bench-net-xenlet`) and as HVM from its disk image
//! like the Linux peer (`bench-net-xenlet-hvm`), both directions (`-R`: the guest
//! sends), each guest on the bridge xenbr0 through dom0's netback; the table gives
//! Mbit/s of the receiver line and Xenlet's ratios to Linux.
//!
//! `bench dd`:
//! One test-bed session (see `xtask/testbed/README.md`) writes the same 8 MiB
//! (`bs=16k count=512 conv=fsync`, zeros) three ways, each to a fresh 64 MiB file
//! behind a loop device in dom0:
//!
//! - dom0's own `dd` to the loop device (scenario `bench-linux`, first step),
//! - the Linux PVHVM domU (Debian's kernel, busybox `dd`) to its xvdb, `phy:` on that
//!   loop device, i.e. dom0's kernel blkback (`bench-linux`),
//! - Xenlet booted from its disk image as HVM, `dd` to its xvdb, `phy:` as well
//!   (`bench-xenlet`).
//!
//! Each `dd` summary line is captured by the runner (`var.DOM0`, `var.LINUX`,
//! `var.XENLET` in the scenario's `result.txt`); the table gives bytes, seconds, MB/s
//! (10^6 bytes per second, as dd prints it) and the ratios. Everything runs nested
//! under QEMU's TCG, so the absolute figures are far below bare metal; the ratios are
//! what compares. A benchmark, not a test: it fails only when a run fails.

use crate::testbed;
use crate::util::{step, Error, Result};

const USAGE: &str = "\
usage: cargo xtask bench dd|net|fs|files|router [--retries N] [-v] [--smp N] [--xen-arg ARG]

  dd    one nested Xen test-bed session: dom0's dd to a loop device, the Linux PVHVM
        domU's dd to xvdb (phy: on a loop device) and Xenlet's dd to xvdb (phy:),
        8 MiB each (bs=16k count=512 conv=fsync); prints bytes, seconds, MB/s and
        the ratios to the Linux domU and to dom0 (also in target/testbed/bench-dd.txt)
  net   one session: dom0's iperf3 -c (5 s, both directions) against iperf3 -s in the
        Linux PVHVM domU and in Xenlet (PVH, and HVM from its disk image); Mbit/s and
        Xenlet/Linux ratios (also in target/testbed/bench-net.txt)
  fs [--runs N] [--count N] [--no-ide] [--xenlet-only] [--table]
        one session: the report's experiment, mount a 3 GiB ext4 disk at /mnt,
        `time dd bs=16k count=N if=/dev/zero of=/mnt/test`, then sync (N: 131072,
        2 GiB, by default), in Xenlet PVH (and to the raw disk), Xenlet HVM from its
        disk image, the Linux PVHVM domU and the same domU on QEMU's emulated IDE
        (not with --no-ide; neither Linux row with --xenlet-only); N runs of each
        Xenlet row (1-3, default 3), alternating, 3 per Linux boot; m:ss per run,
        medians, ratios, the report's figures (also in target/testbed/bench-fs.txt);
        --table: only the table, from the results in target/testbed/ (same options)
  files [--runs N] [--table]
        one session: 5,000 small files (100-4,099 bytes) copied with cp -r from a
        read-only ext4 disk to a fresh ext4 disk, then sync, in Xenlet PVH (a fresh
        boot per run) and the Linux PVHVM domU (its runs in one boot, caches
        dropped); e2fsck -fn and every file's SHA-256 checked in dom0; medians and
        the ratio (also in target/testbed/bench-files.txt)
  router [--runs N] [--table]
        one session: the Linux PVH router domU (256 MiB, fw4's ruleset) and Xenlet as
        the router (PVH, 32 MiB), N runs of each (1-5, default 3), alternating, each
        a fresh boot in the router topology; from lan1 through the router to wan:
        iperf3 TCP both ways with 1 and 4 streams, 64-byte UDP packets per second,
        new TCP connections per second through the NAT, ping p50/p99, the domains'
        memory; medians (min..max) and Xenlet/Linux ratios (also in
        target/bench/router.md); --table: only the table, from target/testbed/
";

pub fn main(args: &[&str]) -> Result<()> {
    match args {
        ["dd", rest @ ..] => dd(rest),
        ["net", rest @ ..] => net(rest),
        ["fs", rest @ ..] => fs(rest),
        ["router", rest @ ..] => crate::bench_router::router(rest),
        ["files", rest @ ..] => crate::bench_files::files(rest),
        ["help" | "-h" | "--help"] => {
            print!("{USAGE}");
            Ok(())
        }
        _ => Err(Error::msg(USAGE)),
    }
}

/// (who, scenario, captured variable)
const RUNS: &[(&str, &str, &str)] = &[
    ("dom0 (loop device)", "bench-linux", "DOM0"),
    ("Linux PVHVM domU", "bench-linux", "LINUX"),
    ("Xenlet (HVM)", "bench-xenlet", "XENLET"),
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

fn dd(args: &[&str]) -> Result<()> {
    let (opts, names) = testbed::parse_options(args)?;
    if !names.is_empty() {
        return Err(Error::msg(USAGE));
    }
    step("bench dd: 8 MiB (bs=16k count=512 conv=fsync) by dom0, the Linux domU and Xenlet");
    let ran = testbed::run(&["bench-linux", "bench-xenlet"], &opts);

    let mut table = String::from(
        "\ndd to a 64 MiB loop device in dom0 (bs=16k count=512 conv=fsync; nested Xen under TCG)\n\n",
    );
    table.push_str(&format!(
        "{:<20} {:>9} {:>9} {:>9} {:>10} {:>9}\n",
        "who", "bytes", "seconds", "MB/s", "/Linux domU", "/dom0"
    ));
    let figs: Vec<Option<Figure>> = RUNS
        .iter()
        .map(|(_, sc, var)| {
            testbed::result(sc)
                .get(&format!("var.{var}"))
                .and_then(|l| parse(l))
        })
        .collect();
    let rate = |i: usize| figs[i].as_ref().map(Figure::mb_s);
    for (i, (who, _, _)) in RUNS.iter().enumerate() {
        let ratio = |base: Option<f64>| match (rate(i), base) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "-".to_string(),
        };
        match &figs[i] {
            Some(f) => table.push_str(&format!(
                "{:<20} {:>9} {:>9.3} {:>9.2} {:>10} {:>9}\n",
                who,
                f.bytes,
                f.seconds,
                f.mb_s(),
                ratio(rate(1)),
                ratio(rate(0))
            )),
            None => table.push_str(&format!("{who:<20} (no result: see the run above)\n")),
        }
    }
    for (who, sc, var) in RUNS {
        if let Some(l) = testbed::result(sc).get(&format!("var.{var}")) {
            table.push_str(&format!("\n  {who}: {l}"));
        }
    }
    table.push('\n');
    print!("{table}");
    let _ = std::fs::write(
        crate::util::workspace_root().join("target/testbed/bench-dd.txt"),
        &table,
    );
    ran?;
    if figs.iter().any(Option::is_none) {
        return Err(Error::msg("bench dd: a run gave no dd figure"));
    }
    Ok(())
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

fn net(args: &[&str]) -> Result<()> {
    let (opts, names) = testbed::parse_options(args)?;
    if !names.is_empty() {
        return Err(Error::msg(USAGE));
    }
    step("bench net: dom0's iperf3 -c against the Linux domU and Xenlet, both directions");
    let ran = testbed::run(
        &[
            "bench-net-linux",
            "bench-net-xenlet",
            "bench-net-xenlet-hvm",
        ],
        &opts,
    );
    let get = |sc: &str, var: &str| {
        testbed::result(sc)
            .get(&format!("var.{var}"))
            .and_then(|l| mbits(l))
    };
    let linux = (get("bench-net-linux", "RX"), get("bench-net-linux", "TX"));
    let xenlet = (get("bench-net-xenlet", "RX"), get("bench-net-xenlet", "TX"));
    let hvm = (
        get("bench-net-xenlet-hvm", "RX"),
        get("bench-net-xenlet-hvm", "TX"),
    );
    let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
    let r = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".to_string(),
    };
    let mut table = String::from(
        "\niperf3 (TCP, 1 stream, 5 s) between dom0 and a guest on xenbr0; Mbit/s at the receiver (nested Xen under TCG)\n\n",
    );
    table.push_str(&format!(
        "{:<22} {:>16} {:>16}\n",
        "guest", "dom0 -> guest", "guest -> dom0"
    ));
    table.push_str(&format!(
        "{:<22} {:>16} {:>16}\n",
        "Linux PVHVM domU",
        f(linux.0),
        f(linux.1)
    ));
    table.push_str(&format!(
        "{:<22} {:>16} {:>16}\n",
        "Xenlet (PVH)",
        f(xenlet.0),
        f(xenlet.1)
    ));
    table.push_str(&format!(
        "{:<22} {:>16} {:>16}\n",
        "Xenlet (HVM)",
        f(hvm.0),
        f(hvm.1)
    ));
    table.push_str(&format!(
        "{:<22} {:>16} {:>16}\n",
        "Xenlet PVH / Linux",
        r(xenlet.0, linux.0),
        r(xenlet.1, linux.1)
    ));
    table.push_str(&format!(
        "{:<22} {:>16} {:>16}\n",
        "Xenlet HVM / Linux",
        r(hvm.0, linux.0),
        r(hvm.1, linux.1)
    ));
    table.push('\n');
    print!("{table}");
    let _ = std::fs::write(
        crate::util::workspace_root().join("target/testbed/bench-net.txt"),
        &table,
    );
    ran?;
    if [linux.0, linux.1, xenlet.0, xenlet.1, hvm.0, hvm.1]
        .iter()
        .any(Option::is_none)
    {
        return Err(Error::msg("bench net: a run gave no iperf3 figure"));
    }
    Ok(())
}

/// `bench fs` rows: (label, scenario, Linux). A Xenlet row's run `i` is scenario
/// `<scenario>-i` (one boot each); a Linux row's three runs are in one boot of its
/// scenario, the figures of run `i` captured as `DD_S_i` and `SYNC_S_i`.
const FS_ROWS: &[(&str, &str, bool)] = &[
    ("Xenlet PVH, file on ext4", "bench-fs-pvh", false),
    ("Xenlet PVH, raw /dev/xvdb", "bench-fs-raw", false),
    ("Xenlet PVH, file, no journal", "bench-fs-nojournal", false),
    ("Xenlet HVM (image), file", "bench-fs-hvm", false),
    ("Linux PVHVM (blkfront), file", "bench-fs-linux", true),
    ("Linux HVM, emulated IDE, file", "bench-fs-linux-ide", true),
];
/// Runs of a Linux row (one boot).
const LINUX_RUNS: usize = 3;

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
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// One run's figures: dd's and sync's seconds, and dom0's check of the disk after it.
struct FsRun {
    dd: f64,
    sync: f64,
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
    let note = match fsck {
        Some(f) if f != "0" => format!("e2fsck -fn exit {f}"),
        _ => String::new(),
    };
    Some(FsRun { dd, sync, note })
}

fn fs(args: &[&str]) -> Result<()> {
    let mut runs = 3usize;
    let mut count = 131072u64;
    let mut ide = true;
    let mut with_linux = true;
    let mut table_only = false;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let num = |v: Option<&&str>| -> Result<u64> {
            v.and_then(|v| v.parse().ok())
                .ok_or_else(|| Error::msg(format!("{a} needs a number\n{USAGE}")))
        };
        match *a {
            "--runs" => runs = num(it.next())? as usize,
            "--count" => count = num(it.next())?,
            "--no-ide" => ide = false,
            "--table" => table_only = true,
            "--xenlet-only" => {
                ide = false;
                with_linux = false;
            }
            o => rest.push(o),
        }
    }
    if !(1..=LINUX_RUNS).contains(&runs) || count == 0 || count * 16384 > 2560 << 20 {
        return Err(Error::msg(format!(
            "--runs is 1-3, --count 1-163840 (the disk is 3 GiB)\n{USAGE}"
        )));
    }
    let (mut opts, names) = testbed::parse_options(&rest)?;
    if !names.is_empty() {
        return Err(Error::msg(USAGE));
    }
    opts.payload
        .push(("bench-fs-count".to_string(), format!("{count}\n")));
    let rows: Vec<_> = FS_ROWS
        .iter()
        .filter(|r| (ide || r.1 != "bench-fs-linux-ide") && (with_linux || !r.2))
        .collect();
    // alternating: the Xenlet rows' runs one after the other, the Linux domU (three
    // runs in one boot) after the first, the emulated-IDE one after the second
    let mut names: Vec<String> = Vec::new();
    for i in 1..=runs {
        names.extend(rows.iter().filter(|r| !r.2).map(|r| format!("{}-{i}", r.1)));
        if i == 1 && with_linux {
            names.push("bench-fs-linux".to_string());
        }
        if i == 2.min(runs) && ide {
            names.push("bench-fs-linux-ide".to_string());
        }
    }
    let mib = (count * 16384) >> 20;
    step(&format!(
        "bench fs: time dd bs=16k count={count} ({mib} MiB) into /mnt/test + sync, {runs} run(s) of {} rows, alternating",
        rows.len()
    ));
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let ran = if table_only {
        Ok(())
    } else {
        testbed::run(&refs, &opts)
    };

    let mut table = format!(
        "\nThe report's experiment: mount /dev/xvdb /mnt; time dd bs=16k count={count} if=/dev/zero of=/mnt/test ({mib} MiB); sync\n\
         3 GiB data disk, ext4 made by dom0's mkfs.ext4 (4 KiB blocks), phy: on a loop device in dom0\n\
         nested Xen 4.17 under QEMU TCG; per run: dd + sync (dd alone), minutes:seconds\n\
         runs alternate between the systems: each Xenlet run is a fresh boot, the Linux domU does its runs in one boot\n\n"
    );
    table.push_str(&format!("{:<30}", "row"));
    for i in 1..=LINUX_RUNS {
        table.push_str(&format!(" {:>18}", format!("run {i}")));
    }
    table.push_str(&format!(" {:>9} {:>7}\n", "median", "MB/s"));
    let mut medians = std::collections::BTreeMap::new();
    let mut failed = false;
    for (label, prefix, linux) in &rows {
        let mut line = format!("{label:<30}");
        let mut totals = Vec::new();
        let mut notes = Vec::new();
        for i in 1..=LINUX_RUNS {
            if !*linux && i > runs {
                line.push_str(&format!(" {:>18}", ""));
                continue;
            }
            let (name, vars, r) = if *linux {
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
                    line.push_str(&format!(
                        " {:>18}",
                        format!("{} ({})", mmss(r.dd + r.sync), mmss(r.dd))
                    ));
                    totals.push(r.dd + r.sync);
                    if !r.note.is_empty() {
                        notes.push(format!("run {i}: {}", r.note));
                    }
                }
                None => {
                    failed = true;
                    let why = vars.get("status").map_or("not run", String::as_str);
                    println!("    {name}: no figure ({why})");
                    line.push_str(&format!(" {:>18}", "-"));
                    notes.push(format!("run {i}: {why}"));
                }
            }
        }
        match median(&totals) {
            Some(m) => {
                medians.insert(*prefix, m);
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
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "-".to_string(),
    };
    table.push_str("\nratios of the medians (dd + sync)\n");
    table.push_str(&format!(
        "  {:<52} {:>6}   goal >= 0.9\n",
        "Xenlet file / Xenlet raw, throughput (PVH)",
        ratio(m("bench-fs-raw"), m("bench-fs-pvh"))
    ));
    table.push_str(&format!(
        "  {:<52} {:>6}   goal >= 0.9\n",
        "Xenlet journalled / without a journal, throughput",
        ratio(m("bench-fs-nojournal"), m("bench-fs-pvh"))
    ));
    table.push_str(&format!(
        "  {:<52} {:>6}   goal >= 5\n",
        "Xenlet PVH / Linux PVHVM, throughput",
        ratio(m("bench-fs-linux"), m("bench-fs-pvh"))
    ));
    table.push_str(&format!(
        "  {:<52} {:>6}   goal >= 5\n",
        "Xenlet HVM / Linux PVHVM, throughput",
        ratio(m("bench-fs-linux"), m("bench-fs-hvm"))
    ));
    table.push_str(&format!(
        "  {:<52} {:>6}   the report: {:.1} (medians; {:.1}-{:.1} over its runs)\n",
        "Linux emulated IDE / PVHVM, time",
        ratio(m("bench-fs-linux-ide"), m("bench-fs-linux")),
        rq / rp,
        114.0 / 25.0,
        188.0 / 20.0
    ));
    table.push('\n');
    print!("{table}");
    let _ = std::fs::write(
        crate::util::workspace_root().join("target/testbed/bench-fs.txt"),
        &table,
    );
    ran?;
    if failed {
        return Err(Error::msg("bench fs: a run gave no figure"));
    }
    Ok(())
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
    }

    #[test]
    fn parses_iperf3_receiver_lines() {
        let l = "[  5]   0.00-3.07   sec  6.56 MBytes  17.9 Mbits/sec                  receiver";
        assert!((mbits(l).unwrap() - 17.9).abs() < 1e-9);
        let g = "[  5]   0.00-5.00   sec  1.10 GBytes  1.89 Gbits/sec                  receiver";
        assert!((mbits(g).unwrap() - 1890.0).abs() < 1e-6);
        assert!(mbits("iperf3: error - unable to connect").is_none());
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
}
