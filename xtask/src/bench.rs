//! `cargo xtask bench dd|net`: block write and network throughput on the nested Xen
//! test bed.
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
usage: cargo xtask bench dd|net [--retries N] [-v] [--smp N] [--xen-arg ARG]

  dd    one nested Xen test-bed session: dom0's dd to a loop device, the Linux PVHVM
        domU's dd to xvdb (phy: on a loop device) and Xenlet's dd to xvdb (phy:),
        8 MiB each (bs=16k count=512 conv=fsync); prints bytes, seconds, MB/s and
        the ratios to the Linux domU and to dom0 (also in target/testbed/bench-dd.txt)
  net   one session: dom0's iperf3 -c (5 s, both directions) against iperf3 -s in the
        Linux PVHVM domU and in Xenlet (PVH, and HVM from its disk image); Mbit/s and
        Xenlet/Linux ratios (also in target/testbed/bench-net.txt)
";

pub fn main(args: &[&str]) -> Result<()> {
    match args {
        ["dd", rest @ ..] => dd(rest),
        ["net", rest @ ..] => net(rest),
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
fn mbits(line: &str) -> Option<f64> {
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
    fn parses_gnu_and_busybox() {
        let g = parse("8388608 bytes (8.4 MB, 8.0 MiB) copied, 0.5 s, 16.8 MB/s").unwrap();
        assert_eq!(g.bytes, 8388608);
        assert!((g.mb_s() - 16.777216).abs() < 1e-6);
        let b = parse("8388608 bytes (8.0MB) copied, 5.103 seconds, 1.6MB/s").unwrap();
        assert!((b.seconds - 5.103).abs() < 1e-9);
        assert!(parse("dd: error").is_none());
    }
}
