//! `cargo xtask testbed`: Xenlet on real Xen.
//!
//! Debian's Xen 4.17 with a Debian dom0 runs nested under QEMU 7.2 (TCG, emulated AMD
//! SVM with NPT); domUs are made with the real toolstack (`xl`) and served by the real
//! dom0 backends (blkback, netback, QEMU-xen). See `xtask/testbed/README.md`.
//!
//! - `build.rs`: the dom0 image, cached outside the clone (`cpio.rs`: the Linux
//!   domU's initramfs),
//! - `scenarios.rs`: the scenario table, its scenarios in `scenarios/` one file a
//!   family (`elf32.rs`: the kernel for HVM `kernel=`),
//! - `session.rs`: one QEMU session running scenarios, with whole-session retries,
//! - `xtask/testbed/`: what runs inside dom0 (`dom0-init`, `run.py`) and the Linux
//!   domU's `/init`.

mod build;
mod cpio;
mod elf32;
mod scenarios;
mod session;
mod soak;

use crate::util::{Error, Result};
use std::collections::BTreeMap;

pub use scenarios::{MEM_PROBES_LINUX, MEM_PROBES_XENLET};
pub use session::Options;

/// Runs the named scenarios (those of `testbed list`, or `bench-*`/`demo`) in one
/// session, as `testbed run` does; their results are then read with [`result`].
pub fn run(names: &[&str], opts: &Options) -> Result<()> {
    session::run_scenarios(names, opts)
}

/// Whether a scenario of that name exists (in `testbed list`).
pub fn scenario_exists(name: &str) -> bool {
    scenarios::find(name).is_some()
}

/// A scenario's `result.txt` from the last run: `status`, `t_total`, `ended`, ... and
/// `var.NAME` for each captured variable.
pub fn result(name: &str) -> BTreeMap<String, String> {
    read_result(&session::out_dir().join(name))
}

/// The stalls the last session was woken from (`stalls.txt`, see `session.rs`'s
/// `StallWatch`): when, during which step, how idle QEMU was; empty when none.
pub fn stalls() -> Vec<String> {
    std::fs::read_to_string(session::out_dir().join("stalls.txt"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}

/// `result.txt` in a scenario's result directory (empty when there is none).
fn read_result(dir: &std::path::Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(dir.join("result.txt")).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| *k != "match")
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const USAGE: &str = "\
usage: cargo xtask testbed <command>

  build [--force]            build the dom0 image (Debian bookworm, Xen 4.17) into
                             $XENLET_CACHE/testbed (default ~/.cache/xenlet/testbed);
                             only when its recipe changed (or with --force)
  run [OPTIONS] SCENARIO...  boot Xen + dom0 under QEMU once, run the scenarios (or
                             `all`) with xl, print a PASS/FAIL table; logs in
                             target/testbed/<scenario>/
      --retries N            whole-session retries when the session dies or a domain
                             hits the nested-SVM flake (default 2)
      -v, --verbose          show the whole Xen/dom0 serial console
      --smp N                vCPUs of QEMU and dom0 (default 1, benches too)
      --nice N               QEMU's niceness (default 0; benches -10: ahead of builds)
      --tcg-single           one host thread for the outer QEMU's vCPUs (not MTTCG)
      --xen-arg ARG          extra Xen command-line option (repeatable)
      --xl KEY=VALUE         extra line for every domain's xl config, e.g.
                             --xl tsc_mode=native (repeatable)
  soak SCENARIO... [--runs N] [--per-session K] [--smp N] [--tcg-single]
       [--xen-arg ARG] [--xl K=V]
                             run scenarios N times each (default 10), K copies
                             per session (default 5 for one scenario, else 1), no
                             retries; a table of outcomes by signature (pass,
                             nested-SVM kinds, guest faults, hangs, test
                             failures) in target/testbed-soak/; `ci` is the set
                             `cargo xtask test` runs, and its table counts the
                             sessions in which every scenario passed
  list                       the scenarios
  shell [--smp N] [--xen-arg ARG]
                             boot Xen + dom0, start the toolstack, root shell on
                             this terminal (xenlet.elf/.img in /payload/files;
                             `exit` powers off, Ctrl-A X quits QEMU)
";

pub fn main(args: &[&str]) -> Result<()> {
    match args {
        ["build"] => build::ensure(false).map(|_| ()),
        ["build", "--force"] => build::ensure(true).map(|_| ()),
        ["list"] => {
            for s in scenarios::SCENARIOS {
                println!("{:<12} {:<7} {}", s.name, s.console.as_str(), s.about);
            }
            println!("\nrun by name only (not by `all`; used by `cargo xtask bench dd` / `demo`):");
            for s in scenarios::EXTRA {
                println!("{:<12} {:<7} {}", s.name, s.console.as_str(), s.about);
            }
            Ok(())
        }
        // not in the usage: every scenario's definition, to compare before and after
        // a change of the table's code
        ["dump"] => {
            print!("{}", scenarios::dump());
            Ok(())
        }
        ["run", rest @ ..] => {
            let (opts, names) = parse_options(rest)?;
            session::run_scenarios(&names, &opts)
        }
        ["soak", rest @ ..] => soak::soak(rest),
        ["shell", rest @ ..] => {
            let (opts, names) = parse_options(rest)?;
            if !names.is_empty() {
                return Err(Error::msg(USAGE));
            }
            session::shell(&opts)
        }
        ["help" | "-h" | "--help"] => {
            print!("{USAGE}");
            Ok(())
        }
        _ => Err(Error::msg(USAGE)),
    }
}

/// The options of `testbed run` (`--retries`, `-v`, `--smp`, `--xen-arg`) and the
/// other words, for tasks that run scenarios (`demo`, `soak`).
pub fn parse_options<'a>(args: &[&'a str]) -> Result<(session::Options, Vec<&'a str>)> {
    parse_options_smp(args, session::DEFAULT_SMP, 0)
}

/// [`parse_options`] for the benches, whose default `--smp` is
/// [`session::BENCH_SMP`].
pub fn parse_bench_options<'a>(args: &[&'a str]) -> Result<(session::Options, Vec<&'a str>)> {
    parse_options_smp(args, session::BENCH_SMP, session::BENCH_NICE)
}

fn parse_options_smp<'a>(
    args: &[&'a str],
    smp: u32,
    nice: i32,
) -> Result<(session::Options, Vec<&'a str>)> {
    let mut opts = session::Options {
        retries: 2,
        verbose: false,
        smp,
        tcg_single: false,
        xen_args: Vec::new(),
        xl: Vec::new(),
        live: false,
        payload: Vec::new(),
        nice,
    };
    let mut names = Vec::new();
    let mut it = args.iter();
    let number = |v: Option<&&str>, what: &str| -> Result<u32> {
        v.and_then(|v| v.parse().ok())
            .ok_or_else(|| Error::msg(format!("{what} needs a number\n{USAGE}")))
    };
    while let Some(a) = it.next() {
        match *a {
            "--retries" => opts.retries = number(it.next(), "--retries")?,
            "--smp" => opts.smp = number(it.next(), "--smp")?.max(1),
            "--nice" => {
                opts.nice = it
                    .next()
                    .and_then(|v| v.parse::<i32>().ok())
                    .filter(|n| (-20..=19).contains(n))
                    .ok_or_else(|| Error::msg(format!("--nice needs -20..19\n{USAGE}")))?
            }
            "-v" | "--verbose" => opts.verbose = true,
            "--tcg-single" => opts.tcg_single = true,
            "--xen-arg" => opts.xen_args.push(
                it.next()
                    .ok_or_else(|| Error::msg("--xen-arg needs a value"))?
                    .to_string(),
            ),
            "--xl" => {
                let v = it
                    .next()
                    .filter(|v| v.contains('='))
                    .ok_or_else(|| Error::msg("--xl needs KEY=VALUE (an xl config line)"))?;
                opts.xl.push(v.to_string());
            }
            o if o.starts_with('-') => {
                return Err(Error::msg(format!("unknown option {o}\n{USAGE}")))
            }
            name => names.push(name),
        }
    }
    Ok((opts, names))
}
