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
//! `pagewalk.py`), `damaged-image` (Xenlet found its code or constants in memory not
//! the ones built, `kernel/src/mm/image.rs`), the guest's own faults
//! (`triple-fault-in-guest`, `guest-crash`),
//! `hang`, `toolstack` and `test-failure`. A session that dies leaves its unfinished
//! runs as `session-died` (or `xen-panic` when Xen's panic is on the serial log); the
//! run whose step the host watchdog gave up on is a `hang`, and the runs that never
//! started are `not-run`, counted in the table but not in the failure rate.
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
    let mut table_only = false;
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
            "--table" => table_only = true,
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
    if !table_only {
        if keep.exists() {
            fs::remove_dir_all(&keep)?;
        }
        fs::create_dir_all(&keep)?;
    }
    let mut all: Vec<Run> = Vec::new();
    let mut session_secs = Vec::new();
    let mut clean = 0u32;
    let sessions = runs.div_ceil(per);
    for n in 1..=sessions {
        let k = per.min(runs - (n - 1) * per);
        let dest = keep.join(format!("session-{n}"));
        let (runs, secs) = if table_only {
            // the table again from a soak's saved sessions, as they are classified now
            let summary = fs::read_to_string(dest.join("summary.txt")).map_err(|e| {
                Error::msg(format!("{}: {e} (no such soak session)", dest.display()))
            })?;
            let secs = summary
                .split_once("QEMU session ")
                .and_then(|(_, r)| r.split_once('s'))
                .and_then(|(v, _)| v.parse().ok())
                .unwrap_or(0.0);
            (session_runs(&dest, &names, k, ""), secs)
        } else {
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
            let secs = t.elapsed().as_secs_f64();
            let out = session::out_dir();
            let why = outcome.err().map(|e| e.to_string()).unwrap_or_default();
            let runs = session_runs(&out, &names, k, &why);
            copy_dir(&out, &dest)?;
            (runs, secs)
        };
        session_secs.push(secs);
        clean += u32::from(runs.iter().all(|r| r.signature == "pass"));
        for run in runs {
            println!(
                "    run {} ({}): {}{}",
                all.len() + 1,
                run.scenario,
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
    let mut text = table(&label, &all, &session_secs, &opts);
    if names.len() > 1 {
        text.push_str(&by_scenario(&names, &all, clean, sessions));
    }
    print!("{text}");
    fs::write(keep.join("soak.md"), &text)?;
    println!("table and every session's logs: {}", keep.display());
    Ok(())
}

const USAGE: &str = "usage: cargo xtask testbed soak SCENARIO...|ci [--runs N] [--per-session K] [--table] [--smp N] [--tcg-single] [--xen-arg ARG] [--xl K=V]";

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

/// How each run of a session's `names` (`k` copies each) ended, from the session's
/// logs in `out`; `failed` is the error the session ended with, if any.
fn session_runs(out: &Path, names: &[&str], k: u32, failed: &str) -> Vec<Run> {
    let serial = fs::read_to_string(out.join("serial.log")).unwrap_or_default();
    // how the session ended: the reason its summary gives the runs it lost (the
    // session's error only says how many failed)
    let summary = fs::read_to_string(out.join("summary.txt")).unwrap_or_default();
    let why = summary
        .lines()
        .find_map(|l| l.split_once("not run: ").map(|(_, w)| w.trim()))
        .unwrap_or(failed);
    let died = if serial.contains("Panic on CPU") {
        "xen-panic"
    } else {
        "session-died"
    };
    let mut runs = Vec::new();
    for name in names {
        for i in 1..=k {
            let kv = super::read_result(&out.join(format!("{name}.{i}")));
            runs.push(match kv.get("signature") {
                Some(sig) => Run {
                    scenario: name.to_string(),
                    signature: sig.clone(),
                    seconds: kv.get("t_total").and_then(|v| v.parse().ok()),
                    detail: kv.get("message").cloned().unwrap_or_default(),
                },
                // the session died later: the run's end line on the serial log says
                // how it went
                None if let Some(r) = from_serial(&serial, name, i) => r,
                None => unfinished(&serial, why, died, name, i),
            });
        }
    }
    runs
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

/// A run without a result when the session ended: `hang` when it is the step the
/// host watchdog gave up on, `not-run` when it never started (another run ended the
/// session), else `died` (`session-died`, or `xen-panic`).
fn unfinished(serial: &str, why: &str, died: &str, scenario: &str, copy: u32) -> Run {
    let me = format!("{scenario}.{copy}");
    let signature = if why.contains(&format!("step 'scenario:{me}' timed out (host watchdog)")) {
        "hang"
    } else if !serial.contains(&format!("TESTBED: [{me}] ")) {
        "not-run"
    } else {
        died
    };
    Run {
        scenario: scenario.to_string(),
        signature: signature.to_string(),
        seconds: None,
        detail: why.to_string(),
    }
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
                clip(&ex.replace('|', "/").replace('\n', " "), 100)
            }
        ));
    }
    // a run that never started (another run ended its session) is not a failure of
    // its own: counted in the table, not in the rate
    let ran = all.iter().filter(|r| r.signature != "not-run").count();
    let fails = all
        .iter()
        .filter(|r| r.signature != "pass" && r.signature != "not-run")
        .count();
    t.push_str(&format!(
        "\nfailure rate {fails}/{ran} ({:.1} %); sessions took {:.0} s on average\n",
        fails as f64 * 100.0 / ran.max(1) as f64,
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

    /// The options of a plain soak: the default vCPUs, no Xen or xl options.
    fn plain() -> Options {
        Options {
            retries: 0,
            verbose: false,
            smp: session::DEFAULT_SMP,
            tcg_single: false,
            xen_args: Vec::new(),
            xl: Vec::new(),
            live: false,
            payload: Vec::new(),
            nice: 0,
        }
    }

    fn run(sig: &str, s: Option<f64>) -> Run {
        Run {
            scenario: "xen-hvm".into(),
            signature: sig.into(),
            seconds: s,
            detail: "why | it failed".into(),
        }
    }

    #[test]
    fn a_session_ended_by_the_watchdog_names_the_hung_run_and_the_ones_not_run() {
        let serial = "[  409.5] TESTBED: [router-xenlet.1] wan$ ping -c 2\n\
                      [  415.2] TESTBED: [router-xenlet.1] lan1$ python3 -c ...\n";
        let why = "test bed: 9 of 9 scenario(s) failed: step 'scenario:router-xenlet.1' \
                   timed out (host watchdog)";
        let hung = unfinished(serial, why, "session-died", "router-xenlet", 1);
        assert_eq!(hung.signature, "hang");
        let later = unfinished(serial, why, "session-died", "triple-pvh", 1);
        assert_eq!(later.signature, "not-run");
        // a run that had started when something else ended the session
        let serial2 = format!("{serial}[  420.0] TESTBED: [triple-pvh.1] dom0$ xl create\n");
        let died = unfinished(&serial2, "QEMU exited", "session-died", "triple-pvh", 1);
        assert_eq!(died.signature, "session-died");
        // a copy's name is not a prefix match for another copy
        let r = unfinished(serial, why, "xen-panic", "router-xenlet", 11);
        assert_eq!(r.signature, "not-run");
        // not-run is in the table but not in the failure rate
        let mut all = vec![hung, later];
        all.push(run("pass", Some(10.0)));
        let t = table("ci", &all, &[500.0], &plain());
        assert!(t.contains("| not-run | 1 |"), "{t}");
        assert!(t.contains("failure rate 1/2 (50.0 %)"), "{t}");
    }

    #[test]
    fn a_saved_session_is_read_again_from_its_summary_and_logs() {
        let dir = std::env::temp_dir().join(format!("xenlet-soak-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("xen-hvm.1")).unwrap();
        fs::write(
            dir.join("serial.log"),
            "[  300.0] TESTBED: scenario xen-hvm.1 end PASS in 99.5s [pass]\n\
             [  400.0] TESTBED: [router-xenlet.1] lan1$ python3\n",
        )
        .unwrap();
        fs::write(
            dir.join("summary.txt"),
            "scenario result time detail\n\
             xen-hvm.1 FAIL - not run: step 'scenario:router-xenlet.1' timed out (host watchdog)\n",
        )
        .unwrap();
        let runs = session_runs(
            &dir,
            &["xen-hvm", "router-xenlet", "triple-pvh"],
            1,
            "test bed: 3 of 3 scenario(s) failed",
        );
        let sigs: Vec<&str> = runs.iter().map(|r| r.signature.as_str()).collect();
        assert_eq!(sigs, ["pass", "hang", "not-run"]);
        assert_eq!(runs[0].seconds, Some(99.5));
        fs::remove_dir_all(&dir).unwrap();
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
        let mut opts = plain();
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
            nice: 0,
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
