//! `cargo xtask testbed soak`: how often a scenario fails, and how.
//!
//! Runs one scenario many times, `--per-session` copies in each QEMU session (the
//! copies `NAME.1 .. NAME.K` run one after the other, each with its own domain), never
//! retried, and sorts every run by the signature `run.py` read from the logs (see its
//! `signature()`): a pass, the nested-SVM signatures (`guest-on-xen-state`,
//! `triple-fault-before-prompt`, `silent`, `stuck-in-firmware`, `died-in-firmware`,
//! `silent-pvh-boot` (a PVH kernel that never printed its banner),
//! `xen-panic`, and `spurious-page-fault`: a triple fault that began with a #PF while
//! the guest's page tables in memory map everything its deliveries touch, judged by
//! `pagewalk.py`), the guest's own faults (`triple-fault-in-guest`, `guest-crash`),
//! `hang`, `toolstack` and `test-failure`. A session that dies leaves its unfinished
//! runs as `session-died` (or `xen-panic` when Xen's panic is on the serial log).
//! Every session's logs are kept under `target/testbed-soak/NAME/session-N/`, and the
//! table is written to `target/testbed-soak/NAME/soak.md`.
//!
//! Several scenarios soak together (each session runs K copies of every one), and
//! `ci` names the set `cargo xtask test` runs: one copy each per session, so a
//! session in which every run passed is a CI run that needed no retry, which is what
//! issue 19 counts.

use super::session::{self, Options};
use crate::util::{step, workspace_root, Error, Result};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Instant;

/// What one run ended as.
struct Run {
    scenario: String,
    signature: String,
    seconds: Option<f64>,
    detail: String,
}

pub fn soak(args: &[&str]) -> Result<()> {
    let mut runs = 10u32;
    let mut per: Option<u32> = None;
    let mut rest: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = |what: &str| -> Result<u32> {
            it.next()
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| Error::msg(format!("{what} needs a positive number")))
        };
        match *a {
            "--runs" => runs = num("--runs")?,
            "--per-session" => per = Some(num("--per-session")?),
            _ => rest.push(a),
        }
    }
    let (mut opts, names) = super::parse_options(&rest)?;
    // `ci`: the scenarios `cargo xtask test` runs, each once per session, so that a
    // session without a failure is a CI run that needed no retry
    let (label, names): (String, Vec<&str>) = match names[..] {
        [] => return Err(Error::msg(USAGE)),
        ["ci"] => ("ci".to_string(), crate::XEN_TEST_SCENARIOS.to_vec()),
        [one] => (one.to_string(), vec![one]),
        _ => (names.join(","), names),
    };
    let per = per.unwrap_or(if names.len() > 1 { 1 } else { 5 });
    opts.retries = 0;
    let keep = workspace_root()
        .join("target/testbed-soak")
        .join(format!("{label}{}", variant(&opts)));
    if keep.exists() {
        fs::remove_dir_all(&keep)?;
    }
    fs::create_dir_all(&keep)?;
    let mut all: Vec<Run> = Vec::new();
    let mut session_secs = Vec::new();
    let mut clean = 0u32;
    let sessions = runs.div_ceil(per);
    for n in 1..=sessions {
        let k = per.min(runs - (n - 1) * per);
        step(&format!(
            "soak {label}: session {n}/{sessions}, {k} run(s) of {} scenario(s); {} run(s) done, {} passed; {clean} clean session(s)",
            names.len(),
            all.len(),
            all.iter().filter(|r| r.signature == "pass").count()
        ));
        let t = Instant::now();
        let copies: Vec<String> = names.iter().map(|name| format!("{name}*{k}")).collect();
        let copies: Vec<&str> = copies.iter().map(String::as_str).collect();
        let outcome = session::run_scenarios(&copies, &opts);
        session_secs.push(t.elapsed().as_secs_f64());
        let out = session::out_dir();
        let serial = fs::read_to_string(out.join("serial.log")).unwrap_or_default();
        let died = if serial.contains("Panic on CPU") {
            "xen-panic"
        } else {
            "session-died"
        };
        let mut session_clean = true;
        for name in &names {
            for i in 1..=k {
                let kv = super::read_result(&out.join(format!("{name}.{i}")));
                let run = match kv.get("signature") {
                    Some(sig) => Run {
                        scenario: name.to_string(),
                        signature: sig.clone(),
                        seconds: kv.get("t_total").and_then(|v| v.parse().ok()),
                        detail: kv.get("message").cloned().unwrap_or_default(),
                    },
                    // the session died later: the run's end line on the serial log
                    // says how it went
                    None if let Some(r) = from_serial(&serial, name, i) => r,
                    None => Run {
                        scenario: name.to_string(),
                        signature: died.to_string(),
                        seconds: None,
                        detail: outcome
                            .as_ref()
                            .err()
                            .map(|e| e.to_string())
                            .unwrap_or_default(),
                    },
                };
                session_clean &= run.signature == "pass";
                println!(
                    "    run {} ({name}): {}{}",
                    all.len() + 1,
                    run.signature,
                    if run.detail.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", clip(&run.detail, 150))
                    }
                );
                all.push(run);
            }
        }
        clean += u32::from(session_clean);
        let dest = keep.join(format!("session-{n}"));
        copy_dir(&out, &dest)?;
    }
    let mut text = table(&label, &all, &session_secs, &opts);
    if names.len() > 1 {
        text.push_str(&by_scenario(&names, &all, clean, sessions));
    }
    print!("{text}");
    fs::write(keep.join("soak.md"), &text)?;
    println!("table and every session's logs: {}", keep.display());
    Ok(())
}

const USAGE: &str = "usage: cargo xtask testbed soak SCENARIO...|ci [--runs N] [--per-session K] [--smp N] [--tcg-single] [--xen-arg ARG] [--xl K=V]";

/// The soak's directory suffix: runs with other outer-QEMU, Xen or xl options are kept
/// apart from the plain ones (`+smp1`, `+asid_0`, `+tsc_mode__native_`, `+tcg_single`).
fn variant(opts: &Options) -> String {
    let smp = (opts.smp != session::DEFAULT_SMP).then(|| format!("+smp{}", opts.smp));
    smp.into_iter()
        .chain(opts.xen_args.iter().chain(&opts.xl).map(|o| {
            let o: String = o
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            format!("+{o}")
        }))
        .chain(opts.tcg_single.then(|| "+tcg_single".to_string()))
        .collect()
}

/// Several scenarios soaked together: each one's passes and failures, and how many
/// sessions ended with every run passed (what a CI run without a retry needs).
fn by_scenario(names: &[&str], all: &[Run], clean: u32, sessions: u32) -> String {
    let mut t = String::from("\n| scenario | runs | pass | failures |\n|---|---:|---:|---|\n");
    for name in names {
        let runs: Vec<&Run> = all.iter().filter(|r| r.scenario == *name).collect();
        let mut fails: BTreeMap<&str, u32> = BTreeMap::new();
        for r in runs.iter().filter(|r| r.signature != "pass") {
            *fails.entry(&r.signature).or_default() += 1;
        }
        let fails: Vec<String> = fails.iter().map(|(s, n)| format!("{s} ×{n}")).collect();
        t.push_str(&format!(
            "| {name} | {} | {} | {} |\n",
            runs.len(),
            runs.iter().filter(|r| r.signature == "pass").count(),
            if fails.is_empty() {
                "-".to_string()
            } else {
                fails.join(", ")
            }
        ));
    }
    t.push_str(&format!(
        "\nsessions with every run passed: {clean} of {sessions}\n"
    ));
    t
}

/// A run's outcome from its `TESTBED: scenario NAME end STATUS in Ns [SIGNATURE]: why`
/// line on the serial log.
fn from_serial(serial: &str, scenario: &str, copy: u32) -> Option<Run> {
    let head = format!("TESTBED: scenario {scenario}.{copy} end ");
    let line = serial
        .lines()
        .find_map(|l| l.split_once(&head).map(|(_, r)| r))?;
    let (_status, rest) = line.split_once(" in ")?;
    let (secs, rest) = rest.split_once("s [")?;
    let (sig, why) = rest.split_once(']')?;
    Some(Run {
        scenario: scenario.to_string(),
        signature: sig.to_string(),
        seconds: secs.parse().ok(),
        detail: why.trim_start_matches(": ").to_string(),
    })
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(n).collect();
        c.push('…');
        c
    }
}

/// The soak's table in Markdown: each signature's count and share, with the mean time
/// of the runs that got that far.
fn table(name: &str, all: &[Run], session_secs: &[f64], opts: &Options) -> String {
    let mut by: BTreeMap<&str, (u32, f64, u32, &str)> = BTreeMap::new();
    for r in all {
        let e = by.entry(&r.signature).or_insert((0, 0.0, 0, &r.detail));
        e.0 += 1;
        if let Some(s) = r.seconds {
            e.1 += s;
            e.2 += 1;
        }
    }
    let total = all.len().max(1) as f64;
    let mut t = format!(
        "\n## soak: {name}, {} runs in {} session(s), no retries{}\n\n\
         | outcome | runs | share | mean s | example |\n|---|---:|---:|---:|---|\n",
        all.len(),
        session_secs.len(),
        if opts.xen_args.is_empty() {
            String::new()
        } else {
            format!(", Xen options {}", opts.xen_args.join(" "))
        } + &if opts.xl.is_empty() {
            String::new()
        } else {
            format!(", xl config {}", opts.xl.join(" "))
        } + &if opts.smp == session::DEFAULT_SMP {
            String::new()
        } else {
            format!(", outer QEMU and dom0 with {} vCPU(s)", opts.smp)
        } + if opts.tcg_single {
            ", outer QEMU with one TCG thread"
        } else {
            ""
        }
    );
    for (sig, (n, secs, timed, ex)) in &by {
        let mean = if *timed > 0 {
            format!("{:.1}", secs / f64::from(*timed))
        } else {
            "-".to_string()
        };
        t.push_str(&format!(
            "| {sig} | {n} | {:.0} % | {mean} | {} |\n",
            f64::from(*n) * 100.0 / total,
            if *sig == "pass" {
                String::new()
            } else {
                clip(&ex.replace('|', "/"), 100)
            }
        ));
    }
    let fails = all.iter().filter(|r| r.signature != "pass").count();
    t.push_str(&format!(
        "\nfailure rate {fails}/{} ({:.1} %); sessions took {:.0} s on average\n",
        all.len(),
        fails as f64 * 100.0 / total,
        session_secs.iter().sum::<f64>() / session_secs.len().max(1) as f64
    ));
    t
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for e in fs::read_dir(from)? {
        let e = e?;
        let name = e.file_name();
        if name == ".work" {
            continue; // disks and payload: big, and rebuilt every session
        }
        let ty = e.file_type()?;
        if ty.is_dir() {
            copy_dir(&e.path(), &to.join(&name))?;
        } else if ty.is_file() {
            fs::copy(e.path(), to.join(&name))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(sig: &str, s: Option<f64>) -> Run {
        Run {
            scenario: "xen-hvm".into(),
            signature: sig.into(),
            seconds: s,
            detail: "why | it failed".into(),
        }
    }

    #[test]
    fn outcome_from_the_serial_log_when_the_session_died() {
        let serial = "[  303.0] TESTBED: scenario xen-hvm.1 end FAIL in 227.8s [stuck-in-firmware]: boot: no prompt\n\
                      [  400.0] TESTBED: scenario xen-hvm.2 end PASS in 99.5s [pass]\n";
        let r = from_serial(serial, "xen-hvm", 1).unwrap();
        assert_eq!(r.signature, "stuck-in-firmware");
        assert_eq!(r.seconds, Some(227.8));
        assert_eq!(r.detail, "boot: no prompt");
        let r = from_serial(serial, "xen-hvm", 2).unwrap();
        assert_eq!((r.signature.as_str(), r.seconds), ("pass", Some(99.5)));
        assert!(from_serial(serial, "xen-hvm", 3).is_none());
    }

    #[test]
    fn several_scenarios_are_counted_each_and_clean_sessions_told() {
        let mut all = vec![run("pass", Some(10.0)), run("hang", None)];
        all.push(Run {
            scenario: "xen-pvh".into(),
            ..run("pass", Some(5.0))
        });
        all.push(Run {
            scenario: "xen-pvh".into(),
            ..run("spurious-page-fault", None)
        });
        all.push(run("hang", None));
        let t = by_scenario(&["xen-hvm", "xen-pvh"], &all, 1, 2);
        assert!(t.contains("| xen-hvm | 3 | 1 | hang ×2 |"), "{t}");
        assert!(
            t.contains("| xen-pvh | 2 | 1 | spurious-page-fault ×1 |"),
            "{t}"
        );
        assert!(t.contains("every run passed: 1 of 2"), "{t}");
    }

    #[test]
    fn variants_keep_their_soaks_apart() {
        let mut opts = Options {
            retries: 0,
            verbose: false,
            smp: session::DEFAULT_SMP,
            tcg_single: false,
            xen_args: Vec::new(),
            xl: Vec::new(),
            live: false,
            payload: Vec::new(),
        };
        assert_eq!(variant(&opts), "");
        opts.smp = 3;
        opts.xl.push("tsc_mode=\"native\"".into());
        opts.tcg_single = true;
        assert_eq!(variant(&opts), "+smp3+tsc_mode__native_+tcg_single");
    }

    #[test]
    fn table_counts_each_signature() {
        let opts = Options {
            retries: 0,
            verbose: false,
            smp: 2,
            tcg_single: false,
            xen_args: vec!["asid=0".into()],
            xl: Vec::new(),
            live: false,
            payload: Vec::new(),
        };
        let all = [
            run("pass", Some(10.0)),
            run("pass", Some(20.0)),
            run("guest-on-xen-state", None),
            run("pass", Some(30.0)),
        ];
        let t = table("xen-hvm", &all, &[100.0, 50.0], &opts);
        assert!(t.contains("| pass | 3 | 75 % | 20.0 |  |"), "{t}");
        assert!(
            t.contains("| guest-on-xen-state | 1 | 25 % | - | why / it failed |"),
            "{t}"
        );
        assert!(t.contains("failure rate 1/4 (25.0 %)"), "{t}");
        assert!(t.contains("Xen options asid=0"), "{t}");
        assert!(t.contains("sessions took 75 s"), "{t}");
    }
}

/// The dom0 side of the classification, run on the host: `pagewalk.py`'s own
/// checks (synthetic guests with intact and broken page tables, IDT gates and IST
/// stacks, and a VMCB dump read back), and
/// `run.py`, which imports it, at least compiles.
#[cfg(test)]
mod pagewalk_tests {
    use std::process::Command;

    #[test]
    fn pagewalk_judges_synthetic_dumps_right() {
        let dir = super::super::build::assets_dir();
        let out = Command::new("python3")
            .arg(dir.join("pagewalk.py"))
            .arg("self-test")
            .output()
            .expect("python3 runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("pagewalk self-test: 0 failure(s)"), "{text}");
        let out = Command::new("python3")
            .args(["-m", "py_compile"])
            .arg(dir.join("run.py"))
            .arg(dir.join("pagewalk.py"))
            .env(
                "PYTHONPYCACHEPREFIX",
                std::env::temp_dir().join("xenlet-pycache"),
            )
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
