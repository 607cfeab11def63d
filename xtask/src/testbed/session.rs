//! `cargo xtask testbed run`: one QEMU session of Xen + dom0 running scenarios.
//!
//! The host writes a payload disk (a tar: `run.py`, `net/`, `scenarios.json`, `files/`) and a
//! blank results disk, boots Xen with the dom0 image under QEMU 7.2 (TCG, nested SVM),
//! and reads the serial console: lines starting with `TESTBED:` come from dom0 and
//! drive a watchdog (every step announces its timeout). dom0 writes `/results` back as
//! a tar onto the results disk and powers off; the host unpacks it into
//! `target/testbed/`, one directory per scenario, and prints the summary.
//!
//! QEMU 7.2's nested SVM is flaky: a session that dies (no results, a watchdog timeout,
//! a Xen or dom0 panic) or in which a domain hit the flake (it died before any sign of
//! life, or was found running on Xen's own register state; see `run.py`) is retried
//! whole, never a single step; every retry is counted and printed.

use super::build::{self, Bed};
use super::scenarios::{self, Need, Scenario};
use crate::util::{require_tool, run, step, workspace_root, Error, Result};
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The outer QEMU's vCPUs (and dom0's) unless `--smp` says otherwise: one. With two
/// (QEMU's MTTCG then runs a host thread per vCPU) nested SVM breaks: the guest's
/// saved state turns into Xen's, or a page walk misses a page mapped in memory, and
/// it gets far worse when dom0 is busy on the other vCPU (`exits-load-pvh`: 10 runs of
/// 10 died with two vCPUs, none with one; the README's test-bed section has the
/// table). One thread for two vCPUs (`--tcg-single`) avoids it too but crawls.
pub const DEFAULT_SMP: u32 = 1;
/// What the benches run with unless `--smp` says otherwise: one vCPU as well. With
/// two, dom0's backends had a CPU of their own, but a bench keeps dom0 busy for
/// minutes (blkback and the loop device behind a 2 GiB dd, iperf3), exactly the
/// condition under which `exits-load-pvh` died in every run: the first 2 GiB `bench
/// seed` session (2026-12-04, two vCPUs) lost three Xenlet dd runs of six that way
/// (stalled, one triple fault on Xen's state judged `intact`). Both systems of a
/// bench share the one CPU with dom0 alike, so the ratios still compare.
pub const BENCH_SMP: u32 = 1;

/// Options of `testbed run`.
pub struct Options {
    /// Whole-session retries after a session died or a domain crashed at once.
    pub retries: u32,
    /// Print every serial line, not only the test bed's own.
    pub verbose: bool,
    /// vCPUs of the outer QEMU and dom0.
    pub smp: u32,
    /// One host thread for all the outer QEMU's vCPUs (`-accel tcg,thread=single`)
    /// instead of one each (MTTCG, QEMU's default for x86).
    pub tcg_single: bool,
    /// Extra Xen command-line options.
    pub xen_args: Vec<String>,
    /// Extra `KEY=VALUE` lines for every domain's xl config (e.g. `tsc_mode="native"`).
    pub xl: Vec<String>,
    /// Print every line of the guests' consoles as it arrives (`cargo xtask demo`).
    pub live: bool,
    /// Extra files for the payload, `/payload/<name>` in dom0 (e.g. `bench fs`'s
    /// block count).
    pub payload: Vec<(String, String)>,
    /// QEMU's niceness (`--nice N`; the benches' default is [`BENCH_NICE`]).
    pub nice: i32,
}

/// The benches' QEMU niceness: the nested machine ahead of the host's other work.
pub const BENCH_NICE: i32 = -10;

/// Xen options for every session. `asid=0`: no SVM ASIDs (a full TLB flush on every
/// VMRUN), which avoids most of QEMU 7.2's nested-SVM triple faults in domU boots.
const XEN_CMDLINE: &str = "console=com1 com1=115200,8n1 dom0_mem=1G,max:1G loglvl=all \
                           guest_loglvl=all console_timestamps=boot asid=0";
/// `xen_netback.max_queues=2`: netback offers one queue per dom0 vCPU by default;
/// two whatever `--smp` is, so netfront's multi-queue path is always exercised.
const DOM0_CMDLINE: &str = "root=/dev/vda rw console=hvc0 earlyprintk=xen loglevel=4 \
                            init=/sbin/testbed-init xen_netback.max_queues=2";
/// Lines added to every domain's xl config (before `--xl`'s, which can override
/// them). `tsc_mode="native"`: the nested TSC is not marked reliable, so Xen's default
/// mode emulates RDTSC for every guest, a VM exit per read; the nested-SVM triple
/// fault (the guest found on Xen's RIP) strikes at VM exits, and with native TSC it
/// went from 2 in 8 HVM disk boots to none in 12 (`testbed soak`, README). On real
/// hardware with an invariant TSC, Xen's default mode does not emulate either.
const DOMAIN_XL: &[&str] = &["tsc_mode = \"native\""];
/// A scenario disk this big (MiB) gets the session a scratch disk in dom0.
const SCRATCH_FROM_MB: u32 = 1024;
/// The scratch disk's size (sparse on the host, under `target/testbed/.work/`).
const SCRATCH_GB: u64 = 16;
/// Seconds from starting QEMU to dom0's userspace.
const BOOT_TIMEOUT: u64 = 300;
/// Added to every step's own timeout (the dom0 runner enforces the step's timeout
/// itself; the host only steps in when dom0 is stuck).
const WATCHDOG_SLACK: u64 = 60;

pub fn out_dir() -> PathBuf {
    workspace_root().join("target/testbed")
}

pub fn run_scenarios(names: &[&str], opts: &Options) -> Result<()> {
    let xl: Vec<String> = DOMAIN_XL
        .iter()
        .map(|l| l.to_string())
        .chain(opts.xl.iter().cloned())
        .collect();
    let list = with_xl(select(names)?, &xl);
    let out = out_dir();
    let work = out.join(".work");
    if out.exists() {
        fs::remove_dir_all(&out)?;
    }
    fs::create_dir_all(&work)?;

    step("test bed image");
    let bed = build::ensure(false)?;
    step("QEMU 7.2");
    let qemu = crate::qemu::ensure()?;
    let (files, skipped) = payload_files(&list)?;
    for (name, why) in &skipped {
        println!("!!! {name} cannot run: {why}");
    }
    let all = list.clone();
    let list: Vec<&Scenario> = list
        .into_iter()
        .filter(|s| !skipped.iter().any(|(n, _)| *n == s.name))
        .collect();
    if list.is_empty() {
        return Err(Error::msg("no scenario can run (see above)"));
    }
    if opts.live {
        fs::create_dir_all(work.join("payload"))?;
        fs::write(work.join("payload/live"), "")?;
    }
    for (name, text) in &opts.payload {
        fs::create_dir_all(work.join("payload"))?;
        fs::write(work.join("payload").join(name), text)?;
    }
    // the same lines for the client domUs a dom0 step creates (run.py's `$DOMAIN_XL`):
    // without them a client ran with RDTSC emulated, a VM exit per read
    fs::create_dir_all(work.join("payload"))?;
    fs::write(work.join("payload/domain-xl"), xl_text(&xl))?;
    let payload = make_payload(&work, &list, &files)?;
    // dom0's root filesystem has about 1.5 GB free: a session with big scenario disks
    // gets a scratch disk for them (`run.py` mounts it)
    let scratch = list
        .iter()
        .any(|s| s.disks.iter().any(|d| d.size_mb >= SCRATCH_FROM_MB))
        .then(|| work.join("scratch.img"));

    let attempts = opts.retries + 1;
    let mut retries: Vec<String> = Vec::new();
    let mut last: Option<Attempt> = None;
    for n in 1..=attempts {
        let a = attempt(
            n,
            attempts,
            &qemu,
            &bed,
            &payload,
            &work,
            scratch.as_deref(),
            opts,
        )?;
        let why = a.retry_reason(&list);
        match why {
            Some(why) if n < attempts => {
                println!("!!! attempt {n}/{attempts} must be retried whole: {why}");
                retries.push(format!("attempt {n}: {why}"));
                let keep = out.join(format!("attempt-{n}"));
                fs::create_dir_all(&keep)?;
                let _ = fs::rename(out.join("serial.log"), keep.join("serial.log"));
                let _ = fs::rename(&a.results, keep.join("results"));
            }
            _ => {
                last = Some(a);
                break;
            }
        }
    }
    if let Some(s) = &scratch {
        let _ = fs::remove_file(s);
    }
    let a = last.expect("the last attempt is kept");
    let rows = collect(&all, &a, &skipped, &out)?;
    let ok = summary(&rows, &a, &retries, &out)?;
    if ok {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "test bed: {} of {} scenario(s) failed; logs in {}",
            rows.iter().filter(|r| r.status != "PASS").count(),
            rows.len(),
            out.display()
        )))
    }
}

/// `xl` lines as the text appended to a config: one line each, each ending in a newline.
fn xl_text(xl: &[String]) -> String {
    xl.iter().map(|l| format!("{l}\n")).collect()
}

/// The scenarios with `xl` lines added to their domain configs (later lines win in
/// xl's config parser, so a setting given here replaces the scenario's own).
fn with_xl(list: Vec<&'static Scenario>, xl: &[String]) -> Vec<&'static Scenario> {
    if xl.is_empty() {
        return list;
    }
    list.into_iter()
        .map(|s| {
            let config = format!("{}{}", s.config, xl_text(xl));
            let s = Scenario {
                config: Box::leak(config.into_boxed_str()),
                ..s.clone()
            };
            &*Box::leak(Box::new(s))
        })
        .collect()
}

fn select(names: &[&str]) -> Result<Vec<&'static Scenario>> {
    let mut list: Vec<&'static Scenario> = Vec::new();
    for n in names {
        if *n == "all" {
            list.extend(scenarios::SCENARIOS.iter());
            continue;
        }
        // `NAME*K`: K copies of a scenario in the session, named NAME.1 .. NAME.K
        // (`testbed soak`); each copy is a scenario of its own with its own domain.
        if let Some((base, k)) = n.split_once('*') {
            let k: u32 = k
                .parse()
                .map_err(|_| Error::msg(format!("'{n}': NAME*COUNT needs a number")))?;
            let s = scenarios::find(base)
                .ok_or_else(|| Error::msg(format!("unknown scenario '{base}'")))?;
            for i in 1..=k {
                let copy = Scenario {
                    name: Box::leak(format!("{base}.{i}").into_boxed_str()),
                    ..s.clone()
                };
                list.push(Box::leak(Box::new(copy)));
            }
            continue;
        }
        // `NAME.K`: run K of a scenario (a bench's alternating runs: `bench-linux.1`,
        // `bench-xenlet.1`, `bench-linux.2`, ...), a copy under that name with its own
        // results, run under the scenario's own domain name as the copies above
        if let Some((base, k)) = n.rsplit_once('.') {
            if let (Some(s), Ok(_)) = (scenarios::find(base), k.parse::<u32>()) {
                let copy = Scenario {
                    name: Box::leak(n.to_string().into_boxed_str()),
                    ..s.clone()
                };
                list.push(Box::leak(Box::new(copy)));
                continue;
            }
        }
        let s = scenarios::find(n).ok_or_else(|| {
            let known: Vec<&str> = scenarios::SCENARIOS.iter().map(|s| s.name).collect();
            Error::msg(format!(
                "unknown scenario '{n}'; known: {} (or all)",
                known.join(", ")
            ))
        })?;
        list.push(s);
    }
    let mut seen = Vec::new();
    list.retain(|s| {
        let new = !seen.contains(&s.name);
        seen.push(s.name);
        new
    });
    if list.is_empty() {
        return Err(Error::msg(
            "name at least one scenario (see `testbed list`)",
        ));
    }
    Ok(list)
}

/// Files the scenarios need, built on the host; and the scenarios that cannot run,
/// with the reason.
type Skipped = Vec<(&'static str, String)>;
fn payload_files(list: &[&Scenario]) -> Result<(Vec<(Need, PathBuf)>, Skipped)> {
    let mut files = Vec::new();
    let needs = |n: Need| list.iter().any(|s| s.needs.contains(&n));
    let mut skipped = Vec::new();
    if needs(Need::XenletElf) || needs(Need::XenletElf32) {
        step("kernel build (release)");
        let elf = crate::build_kernel(crate::Profile::Release)?;
        if needs(Need::XenletElf32) {
            let bytes = fs::read(&elf)?;
            let e32 = elf.with_file_name("xenlet32.elf");
            fs::write(&e32, super::elf32::from_elf64(&bytes)?)?;
            files.push((Need::XenletElf32, e32));
            if let Err(why) = super::elf32::check_hvm_load_range(&bytes) {
                for s in list.iter().filter(|s| s.needs.contains(&Need::XenletElf32)) {
                    skipped.push((s.name, why.to_string()));
                }
            }
        }
        files.push((Need::XenletElf, elf));
    }
    if needs(Need::XenletImage) {
        files.push((Need::XenletImage, xenlet_image()?));
    }
    Ok((files, skipped))
}

/// `target/xenlet/xenlet.img`, made fresh by `cargo xtask image`'s code.
fn xenlet_image() -> Result<PathBuf> {
    step("disk image (cargo xtask image)");
    crate::image::build().map_err(|e| {
        Error::msg(format!(
            "the disk image (cargo xtask image) failed: {e}; the hvm-disk scenarios need it"
        ))
    })
}

/// The payload disk: a tar of run.py, scenarios.json and files/, padded to whole
/// sectors.
fn make_payload(work: &Path, list: &[&Scenario], files: &[(Need, PathBuf)]) -> Result<PathBuf> {
    require_tool("tar", "tar")?;
    let dir = work.join("payload");
    fs::create_dir_all(dir.join("files"))?;
    fs::copy(build::assets_dir().join("run.py"), dir.join("run.py"))?;
    // the triple-fault evidence (run.py imports it; a scenario step runs it live)
    fs::copy(
        build::assets_dir().join("pagewalk.py"),
        dir.join("pagewalk.py"),
    )?;
    // the topology scripts and the Linux router's files (`/payload/net` in dom0)
    copy_dir(&build::assets_dir().join("net"), &dir.join("net"))?;
    fs::write(dir.join("scenarios.json"), scenarios::to_json(list))?;
    for (need, path) in files {
        fs::copy(path, dir.join("files").join(need.file_name()))?;
    }
    let tar = work.join("payload.tar");
    run(
        Command::new("tar")
            .arg("-cf")
            .arg(&tar)
            .arg("-C")
            .arg(&dir)
            .arg("."),
        "tar (payload)",
    )?;
    let f = fs::OpenOptions::new().write(true).open(&tar)?;
    let len = f.metadata()?.len();
    f.set_len(len.div_ceil(1 << 20) << 20)?;
    Ok(tar)
}

/// Copies the directory tree `from` to `to` (files keep their permissions).
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for e in fs::read_dir(from)? {
        let e = e?;
        let dest = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &dest)?;
        } else {
            fs::copy(e.path(), dest)?;
        }
    }
    Ok(())
}

/// What one QEMU session left behind.
struct Attempt {
    /// Why the session died (no results / watchdog / panic), if it did.
    died: Option<String>,
    /// Unpacked results disk.
    results: PathBuf,
    /// Host seconds since QEMU started of the "TESTBED: ..." milestones.
    marks: BTreeMap<String, f64>,
    serial: PathBuf,
    seconds: f64,
    /// The stalls it was woken from (see [`StallWatch`]).
    stalls: Vec<String>,
}

impl Attempt {
    fn retry_reason(&self, list: &[&Scenario]) -> Option<String> {
        if let Some(d) = &self.died {
            return Some(d.clone());
        }
        if let Ok(t) = fs::read_to_string(self.results.join("toolstack-failed.txt")) {
            return Some(format!("the Xen toolstack did not start: {}", t.trim()));
        }
        // The scenarios (probes left out) whose `key` in result.txt passes `test`.
        let whose = |key: &str, test: fn(Option<&String>) -> bool| -> Vec<&str> {
            list.iter()
                .filter(|s| !scenarios::is_probe(s.name))
                .filter(|s| test(read_kv(&self.results.join(s.name).join("result.txt")).get(key)))
                .map(|s| s.name)
                .collect()
        };
        let flaky = whose("flake", |v| v.is_some_and(|v| v == "1"));
        if !self.stalls.is_empty() {
            // A woken stall can leave Xen's timers late for a while (after one woken
            // in 10 s, a domU's 1 s sleep took 13 s): a scenario that failed in such an
            // attempt is not trusted as a failure of its own.
            let failed = whose("status", |v| v.is_none_or(|v| v != "PASS"));
            if !failed.is_empty() {
                return Some(format!(
                    "{} failed after the nested machine stalled and was woken ({})",
                    failed.join(", "),
                    self.stalls.join("; ")
                ));
            }
        }
        if flaky.is_empty() {
            None
        } else {
            Some(format!(
                "nested-SVM flake in {} (the domain died before any sign of life, ran \
                 on Xen's register state, hung in real mode in its firmware, or \
                 triple-faulted with its page tables intact in memory; see its \
                 crash.txt)",
                flaky.join(", ")
            ))
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn attempt(
    n: u32,
    of: u32,
    qemu: &crate::qemu::Qemu,
    bed: &Bed,
    payload: &Path,
    work: &Path,
    scratch: Option<&Path>,
    opts: &Options,
) -> Result<Attempt> {
    let out = out_dir();
    let results_img = work.join("results.img");
    let _ = fs::remove_file(&results_img);
    fs::File::create(&results_img)?.set_len(512 << 20)?;
    let serial_path = out.join("serial.log");
    let mut serial = fs::File::create(&serial_path)?;

    let mut cmd = xen_qemu(qemu, bed, opts);
    cmd.args(["-drive", &drive(payload, "readonly=on")])
        .args(["-drive", &drive(&results_img, "cache=unsafe")]);
    if let Some(s) = scratch {
        // sparse, fresh for each attempt; dom0 sees it as /dev/vdd
        let _ = fs::remove_file(s);
        fs::File::create(s)?.set_len(SCRATCH_GB << 30)?;
        cmd.args(["-drive", &drive(s, "cache=unsafe,discard=unmap")]);
    }
    cmd.args(["-nographic", "-serial", "stdio", "-monitor", "none"])
        .args(["-no-reboot", "-nic", "none"])
        // the serial console's input: Xen's debug keys when a step hangs
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    writeln!(serial, "== xtask testbed attempt {n}/{of}: {cmd:?}")?;
    step(&format!(
        "attempt {n}/{of}: booting Xen 4.17 + dom0 under QEMU 7.2 (TCG, nested SVM); serial log: {}",
        serial_path.display()
    ));
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::msg(format!("cannot start QEMU: {e}")))?;

    let (tx, rx) = mpsc::channel::<String>();
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    let line = line.trim_end_matches(['\n', '\r']).replace('\r', "");
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });

    let mut console_in = child.stdin.take();
    let mut stall = StallWatch::new(child.id());
    let mut watch = Watchdog::new();
    let mut marks = BTreeMap::new();
    let mut died: Option<String> = None;
    let mut panic_at: Option<Instant> = None;
    // a hung step: when Xen was asked for its state, and how many lines it has
    // printed since
    let mut hang_at: Option<Instant> = None;
    let mut xen_answered = 0usize;
    let mut panic_lines: Vec<String> = Vec::new();
    let mut stalls: Vec<String> = Vec::new();
    let mut silence = SilenceWatch::new(Instant::now());
    loop {
        let line = match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(l) => Some(l),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let t = t0.elapsed().as_secs_f64();
        if let Some(line) = line {
            writeln!(serial, "[{t:7.1}] {line}")?;
            silence.heard(Instant::now());
            if hang_at.is_some() && line.starts_with("(XEN)") {
                xen_answered += 1;
            }
            if let Some(i) = line.find("TESTBED: ") {
                let msg = &line[i + 9..];
                println!("    [{t:6.1}s] {msg}");
                watch.mark(msg);
                let key = msg.split(" uptime").next().unwrap_or(msg).to_string();
                marks.entry(key).or_insert(t);
            } else if opts.verbose {
                println!("    [{t:6.1}s] | {line}");
            }
            if panic_at.is_some() {
                if panic_lines.len() < 6 && !line.trim().is_empty() {
                    panic_lines.push(line.clone());
                }
            } else if line.contains("Panic on CPU") || line.contains("Kernel panic - not syncing") {
                println!("    [{t:6.1}s] !!! {line}");
                panic_lines.push(line.clone());
                panic_at = Some(Instant::now());
            }
        }
        if let Some(p) = panic_at {
            if p.elapsed() > Duration::from_secs(15) {
                let _ = child.kill();
            }
            continue;
        }
        if let Some(h) = hang_at {
            if h.elapsed() > HANG_DUMP_WAIT {
                let d = died.get_or_insert_with(String::new);
                d.push_str(&hang_verdict(xen_answered));
                println!(
                    "!!! {}",
                    hang_verdict(xen_answered).trim_start_matches("; ")
                );
                let _ = child.kill();
            }
            continue;
        }
        if silence.due(Instant::now()) {
            // The stall with QEMU busy (2026-12-06, `bench-router-xenlet-q1-1`: QEMU at
            // 96 % CPU, nothing on the serial for 16 minutes, then Xen's debug keys: its
            // CPU idle, dom0's and the router's vCPUs blocked, the run queue empty and
            // "Platform timer appears to have unexpectedly wrapped 10 or more times"):
            // the same lost timer interrupt, which the CPU watch cannot see. Serial
            // input wakes it; in a healthy quiet step it costs two lines of Xen's log.
            let what = watch.current.0.clone();
            println!(
                "    [{t:6.1}s] no serial output for {} s during '{what}': nudging Xen with serial input",
                SILENCE_NUDGE.as_secs()
            );
            writeln!(
                serial,
                "== host: {} s silent during '{what}': CTRL-a x3 twice",
                SILENCE_NUDGE.as_secs()
            )?;
            if let Some(w) = console_in.as_mut() {
                let _ = nudge(w);
            }
        }
        match stall.check() {
            Some(Stall::Wake(cpu)) => {
                // Nested Xen idle with its next timer interrupt never delivered (see
                // `StallWatch`): serial input wakes it. A figure measured across a
                // stall includes it, so it is counted and listed.
                let what = watch.current.0.clone();
                let msg = format!(
                    "{t:.0}s during '{what}': QEMU used {cpu:.2} s of CPU in {} s",
                    STALL_WINDOW.as_secs()
                );
                println!("    [{t:6.1}s] !!! the nested machine stalled ({msg}); waking Xen with serial input");
                writeln!(serial, "== host: stall, {msg}: CTRL-a x3 twice to wake Xen")?;
                if let Some(w) = console_in.as_mut() {
                    let _ = nudge(w);
                }
                stalls.push(msg);
            }
            Some(Stall::GiveUp(cpu)) => {
                let what = watch.current.0.clone();
                died = Some(format!(
                    "the nested machine stalled during '{what}' and serial input did not wake it ({STALL_GIVE_UP} tries; QEMU used {cpu:.2} s of CPU in the last {} s)",
                    STALL_WINDOW.as_secs()
                ));
                println!("    [{t:6.1}s] !!! {}", died.as_deref().unwrap_or_default());
                ask_xen(
                    &mut serial,
                    &mut console_in,
                    "host: stall not woken;",
                    STALL_DEBUG_KEYS,
                )?;
                hang_at = Some(Instant::now());
                continue;
            }
            None => {}
        }
        if let Some(what) = watch.expired() {
            died = Some(format!("step '{what}' timed out (host watchdog)"));
            println!("!!! {}", died.as_deref().unwrap_or_default());
            // Is Xen alive? Its debug keys on the serial console tell, with its run
            // queues, domains and registers in the log (evidence for what hung).
            println!(
                "!!! asking Xen for its state (debug keys {HANG_DEBUG_KEYS}) before QEMU is stopped"
            );
            ask_xen(
                &mut serial,
                &mut console_in,
                "host watchdog:",
                HANG_DEBUG_KEYS,
            )?;
            hang_at = Some(Instant::now());
        }
    }
    drop(console_in);
    let status = child.wait()?;
    let _ = reader.join();
    let qemu_err = err_reader.join().unwrap_or_default();
    fs::write(out.join("qemu-stderr.log"), &qemu_err)?;
    // the stalls this attempt was woken from (none: no file), for the benches
    let stalls_file = out.join("stalls.txt");
    let _ = fs::remove_file(&stalls_file);
    if !stalls.is_empty() {
        fs::write(&stalls_file, stalls.join("\n") + "\n")?;
        println!(
            "    the nested machine stalled {} time(s) and was woken (a figure measured across a stall includes it): {}",
            stalls.len(),
            stalls_file.display()
        );
    }
    let seconds = t0.elapsed().as_secs_f64();
    writeln!(serial, "== QEMU exited ({status}) after {seconds:.1}s")?;
    println!("    [{seconds:6.1}s] QEMU exited ({status})");
    // dom0's init ends by triggering the power-off and sleeping; now and then the
    // `sleep` cannot start any more and init exits ("Attempted to kill init!"), a
    // dom0 kernel panic after every result was written: not a dead session.
    let after_results = marks.contains_key("results written")
        && marks.contains_key("dom0 powering off")
        && panic_lines
            .first()
            .is_some_and(|l| l.contains("Kernel panic - not syncing: Attempted to kill init"));
    if after_results {
        println!(
            "    dom0 panicked while powering off, after its results were written (not counted)"
        );
    }
    if !panic_lines.is_empty() && died.is_none() && !after_results {
        // "(XEN) [  68.57] Panic on CPU 0:", "(XEN) [  68.57] DOUBLE FAULT -- system
        // shutdown", then a line of stars
        let text: Vec<&str> = panic_lines
            .iter()
            .map(|l| match l.find("] ") {
                Some(i) if l.starts_with("(XEN)") => l[i + 2..].trim(),
                _ => l.trim(),
            })
            .take_while(|l| !l.starts_with('*'))
            .filter(|l| !l.is_empty())
            .collect();
        died = Some(format!("panic: {}", text.join(" ")));
    }

    let results = work.join(format!("results-{n}"));
    let _ = fs::remove_dir_all(&results);
    fs::create_dir_all(&results)?;
    let unpacked = Command::new("tar")
        .arg("-xf")
        .arg(&results_img)
        .arg("-C")
        .arg(&results)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if died.is_none() && (!unpacked || !results.join("payload.rc").is_file()) {
        let last = watch.current.0.clone();
        died = Some(format!(
            "no results came back (QEMU {status}; last step: {last}){}",
            if qemu_err.trim().is_empty() {
                String::new()
            } else {
                format!("; QEMU said: {}", qemu_err.trim())
            }
        ));
    }
    Ok(Attempt {
        died,
        results,
        marks,
        serial: serial_path,
        seconds,
        stalls,
    })
}

/// How long the outer QEMU must stay idle before the machine counts as stalled:
/// well inside the 43 s in which the 100 MHz HPET, Xen's platform timer, wraps (a
/// stall longer than that broke Xen's clock for good).
const STALL_WINDOW: Duration = Duration::from_secs(10);
/// CPU seconds QEMU uses in [`STALL_WINDOW`] below which it counts as stalled: none
/// at all (under one 10 ms tick). A stalled machine used 0 ticks in 10 s and in 30 s;
/// a live, busy one at least 54 ticks a second; a healthy machine with nothing to do
/// (`hang-probe`: dom0's runner stopped, the domU idle) 3-4 ticks in 5 s, which a
/// 5 s window with a 0.05 s bar took for a stall. A false alarm costs two lines in
/// Xen's log, six in a row the attempt.
const STALL_CPU_S: f64 = 0.005;
/// Windows in a row still stalled after each wake-up that end the attempt.
const STALL_GIVE_UP: u32 = 6;

/// Watches the outer QEMU's CPU time for the test bed's stall: on 2026-12-04 a
/// `bench seed` session stopped dead in the middle of a Linux domU's dd, QEMU at
/// 0 % CPU for 13 minutes. Xen's state then (debug keys): its CPU idle with the
/// domU's vCPU runnable in the run queue, its timers due within 2 ms but never fired:
/// Xen halted and its timer interrupt never came from the outer QEMU. Serial input
/// (an interrupt) woke it. After 13 minutes Xen's clock was broken for good ("Platform
/// timer appears to have unexpectedly wrapped 10 or more times", then timestamps
/// jumping by 881 million seconds in 12 s); woken after about a minute, the next
/// time, it was right and the session went on. So a stall is woken within seconds:
/// the console-input switch (CTRL-a three times, twice) is two interrupts that run
/// no debug key. One that does not wake ends the attempt (retried whole).
struct StallWatch {
    pid: u32,
    /// (when, QEMU's CPU seconds then), oldest first, spanning the window.
    samples: Vec<(Instant, f64)>,
    /// Stalled windows in a row.
    in_a_row: u32,
}

/// What the watch saw in the last window.
#[derive(Debug, PartialEq)]
enum Stall {
    /// Stalled (the CPU seconds QEMU used): wake it.
    Wake(f64),
    /// Still stalled after [`STALL_GIVE_UP`] wake-ups: the attempt is dead.
    GiveUp(f64),
}

impl StallWatch {
    fn new(pid: u32) -> Self {
        StallWatch {
            pid,
            samples: Vec::new(),
            in_a_row: 0,
        }
    }

    /// Samples QEMU's CPU time (every second at most) and judges the last window.
    fn check(&mut self) -> Option<Stall> {
        let now = Instant::now();
        if self
            .samples
            .last()
            .is_some_and(|(t, _)| now.duration_since(*t) < Duration::from_secs(1))
        {
            return None;
        }
        let cpu = qemu_cpu_seconds(self.pid)?;
        self.samples.push((now, cpu));
        self.judge(now)
    }

    fn judge(&mut self, now: Instant) -> Option<Stall> {
        let full = self
            .samples
            .first()
            .is_some_and(|f| now.duration_since(f.0) >= STALL_WINDOW);
        match stalled(&mut self.samples, now) {
            Some(used) => {
                // a fresh window after each verdict
                self.samples.drain(..self.samples.len() - 1);
                self.in_a_row += 1;
                Some(if self.in_a_row > STALL_GIVE_UP {
                    Stall::GiveUp(used)
                } else {
                    Stall::Wake(used)
                })
            }
            None => {
                if full {
                    self.in_a_row = 0;
                }
                None
            }
        }
    }
}

/// Drops samples older than the window; the CPU used over a full window when it is
/// under [`STALL_CPU_S`].
fn stalled(samples: &mut Vec<(Instant, f64)>, now: Instant) -> Option<f64> {
    while samples.len() > 1 && now.duration_since(samples[1].0) >= STALL_WINDOW {
        samples.remove(0);
    }
    let (first, last) = (samples.first()?, samples.last()?);
    if now.duration_since(first.0) < STALL_WINDOW {
        return None;
    }
    let used = last.1 - first.1;
    (used < STALL_CPU_S).then_some(used)
}

/// Wakes a stalled Xen: switches the serial console's input to Xen and back
/// (CTRL-a three times, twice): two interrupts, no debug key.
fn nudge(w: &mut impl Write) -> std::io::Result<()> {
    w.write_all(b"\x01\x01\x01")?;
    w.flush()?;
    std::thread::sleep(Duration::from_millis(300));
    w.write_all(b"\x01\x01\x01")?;
    w.flush()
}

/// Serial silence after which the host nudges Xen (the console-input switch):
/// inside the 43 s in which Xen's platform timer (the 100 MHz HPET) wraps, and
/// longer than the bench's quiet steps (`cpucost.sh`: about 23 s without a line).
const SILENCE_NUDGE: Duration = Duration::from_secs(30);

/// Watches the serial console for silence: the stall in which Xen idles with its
/// timer interrupt lost while the outer QEMU stays busy. Every [`SILENCE_NUDGE`]
/// without a line it asks for a nudge. Whether a nudge ended a stall or came in a
/// step that was merely quiet cannot be told from here (dom0 speaking a few
/// seconds later is both), so nudges are listed in the log and not counted as
/// stalls (a quiet step with a 23 s transfer was, at a 20 s bar).
struct SilenceWatch {
    /// The last line, or the last nudge.
    last: Instant,
}

impl SilenceWatch {
    fn new(now: Instant) -> Self {
        SilenceWatch { last: now }
    }

    /// A line came.
    fn heard(&mut self, now: Instant) {
        self.last = now;
    }

    /// Whether to nudge now (and note that it was).
    fn due(&mut self, now: Instant) -> bool {
        if now.duration_since(self.last) < SILENCE_NUDGE {
            return false;
        }
        self.last = now;
        true
    }
}

/// User + system CPU seconds of process `pid` (`/proc/PID/stat`, 100 ticks a second).
fn qemu_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_cpu_ticks(&stat).map(|t| t as f64 / 100.0)
}

/// utime + stime (fields 14 and 15) from a `/proc/PID/stat` line; the command name
/// (field 2, in parentheses) may hold spaces.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14, stime 15
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Xen's debug keys sent when a step hangs: `r` run queues, `q` domains and their
/// vCPUs, `d` every CPU's registers and stack.
const HANG_DEBUG_KEYS: &str = "r q d";
/// How long Xen gets to answer them before QEMU is stopped.
const HANG_DUMP_WAIT: Duration = Duration::from_secs(20);

/// Xen's debug keys sent when the machine stalls: `a` timer queues (which timers
/// are due and never fired), `r` run queues, `q` domains and their vCPUs.
const STALL_DEBUG_KEYS: &str = "a r q";

/// Notes in the serial log that (`why`) Xen's debug keys `keys` are sent, and sends
/// them on the console's input while it is open.
fn ask_xen(
    serial: &mut fs::File,
    console_in: &mut Option<std::process::ChildStdin>,
    why: &str,
    keys: &str,
) -> std::io::Result<()> {
    writeln!(serial, "== {why} sending Xen's debug keys {keys}")?;
    if let Some(w) = console_in.as_mut() {
        let _ = send_keys(w, keys);
    }
    Ok(())
}

/// Switches the serial console's input from dom0 to Xen (CTRL-a three times) and
/// types `keys` (space-separated), a second apart so that each dump can finish.
fn send_keys(w: &mut impl Write, keys: &str) -> std::io::Result<()> {
    w.write_all(b"\x01\x01\x01")?;
    w.flush()?;
    for key in keys.split(' ') {
        std::thread::sleep(Duration::from_secs(1));
        w.write_all(key.as_bytes())?;
        w.flush()?;
    }
    Ok(())
}

/// What the hang's message adds: whether Xen answered its debug keys.
fn hang_verdict(xen_lines: usize) -> String {
    if xen_lines == 0 {
        format!(
            "; Xen did not answer its debug keys in {} s (Xen or the outer QEMU hung)",
            HANG_DUMP_WAIT.as_secs()
        )
    } else {
        format!("; Xen answered its debug keys ({xen_lines} lines in serial.log: Xen ran, a domain hung)")
    }
}

/// QEMU booting Xen with dom0 on the test-bed image (snapshot: it is never written).
fn xen_qemu(qemu: &crate::qemu::Qemu, bed: &Bed, opts: &Options) -> Command {
    let mut xen_cmd = format!("{XEN_CMDLINE} dom0_max_vcpus={}", opts.smp);
    for a in &opts.xen_args {
        xen_cmd.push(' ');
        xen_cmd.push_str(a);
    }
    // in QEMU's -initrd list ',' separates modules: a literal one is written ',,'
    let modules = format!(
        "{} {},{}",
        bed.vmlinuz.display(),
        DOM0_CMDLINE.replace(',', ",,"),
        bed.initrd.display()
    );
    let mut cmd = qemu.command_niced(opts.nice);
    let accel = if opts.tcg_single {
        "tcg,thread=single"
    } else {
        "tcg"
    };
    cmd.args([
        "-accel",
        accel,
        "-machine",
        "q35",
        "-cpu",
        "qemu64,+svm,+npt",
    ])
    .args(["-m", "6G", "-smp", &opts.smp.to_string()])
    .arg("-kernel")
    .arg(&bed.xen)
    .args(["-append", &xen_cmd, "-initrd", &modules])
    .args(["-drive", &drive(&bed.image, "cache=unsafe,snapshot=on")]);
    cmd
}

fn drive(p: &Path, extra: &str) -> String {
    format!(
        "file={},if=virtio,format=raw,{extra}",
        p.display().to_string().replace(',', ",,")
    )
}

/// The host's deadline for the step dom0 is in.
struct Watchdog {
    current: (String, Instant),
}

impl Watchdog {
    fn new() -> Watchdog {
        Watchdog {
            current: (
                "boot Xen and dom0 to its userspace".to_string(),
                Instant::now() + Duration::from_secs(BOOT_TIMEOUT),
            ),
        }
    }

    fn set(&mut self, what: &str, secs: u64) {
        self.current = (
            what.to_string(),
            Instant::now() + Duration::from_secs(secs + WATCHDOG_SLACK),
        );
    }

    fn mark(&mut self, msg: &str) {
        if msg.starts_with("dom0 up") {
            self.set("dom0: start the payload runner", 60);
        } else if let Some(rest) = msg.strip_prefix("step ") {
            let (what, t) = rest.rsplit_once(" timeout=").unwrap_or((rest, "120"));
            self.set(what, t.trim().parse().unwrap_or(120));
        } else if msg.starts_with("payload finished") || msg.starts_with("all scenarios done") {
            self.set("dom0: write the results and power off", 120);
        }
    }

    fn expired(&self) -> Option<String> {
        (Instant::now() > self.current.1).then(|| self.current.0.clone())
    }
}

fn read_kv(p: &Path) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for l in fs::read_to_string(p).unwrap_or_default().lines() {
        if let Some((k, v)) = l.split_once('=') {
            if k == "match" {
                let e = m.entry("matches".to_string()).or_insert_with(String::new);
                e.push_str(v);
                e.push('\n');
            } else {
                m.insert(k.to_string(), v.to_string());
            }
        }
    }
    m
}

struct Row {
    name: &'static str,
    status: String,
    detail: String,
    kv: BTreeMap<String, String>,
}

/// Moves the last attempt's logs into place and reads each scenario's result.
fn collect(list: &[&Scenario], a: &Attempt, skipped: &Skipped, out: &Path) -> Result<Vec<Row>> {
    let serial = fs::read_to_string(&a.serial).unwrap_or_default();
    for f in [
        "run.log",
        "xl-info.txt",
        "xl-dmesg-boot.txt",
        "xl-dmesg.txt",
    ] {
        let _ = fs::copy(a.results.join(f), out.join(f));
    }
    let mut rows = Vec::new();
    for s in list {
        let dir = out.join(s.name);
        fs::create_dir_all(&dir)?;
        let src = a.results.join(s.name);
        if let Ok(entries) = fs::read_dir(&src) {
            for e in entries.flatten() {
                let _ = fs::copy(e.path(), dir.join(e.file_name()));
            }
        }
        // this scenario's part of the Xen/dom0 serial console
        let begin = format!("TESTBED: scenario {} begin", s.name);
        let end = format!("TESTBED: scenario {} end", s.name);
        let mut inside = false;
        let mut part = String::new();
        for l in serial.lines() {
            if l.contains(&begin) {
                inside = true;
            }
            if inside {
                part.push_str(l);
                part.push('\n');
            }
            if l.contains(&end) {
                inside = false;
            }
        }
        fs::write(dir.join("serial.log"), part)?;
        let kv = read_kv(&dir.join("result.txt"));
        let skip = skipped.iter().find(|(n, _)| *n == s.name);
        let (status, detail) = match kv.get("status") {
            _ if skip.is_some() => (
                "FAIL".to_string(),
                format!("not run: {}", skip.map_or("", |(_, w)| w.as_str())),
            ),
            Some(st) if st == "PASS" => ("PASS".to_string(), pass_detail(&kv)),
            Some(_) => (
                "FAIL".to_string(),
                format!(
                    "step {}: {}",
                    kv.get("failed_step").map_or("?", String::as_str),
                    kv.get("message").map_or("?", String::as_str)
                ),
            ),
            None => (
                "FAIL".to_string(),
                format!(
                    "not run: {}",
                    a.died.as_deref().unwrap_or("no result from dom0")
                ),
            ),
        };
        rows.push(Row {
            name: s.name,
            status,
            detail,
            kv,
        });
    }
    Ok(rows)
}

fn pass_detail(kv: &BTreeMap<String, String>) -> String {
    let mut d = format!(
        "create {}s, first prompt {}s after unpause, ended {}",
        kv.get("t_create").map_or("?", String::as_str),
        kv.get("t_first_prompt").map_or("?", String::as_str),
        kv.get("ended").map_or("?", String::as_str)
    );
    if d.len() > 200 {
        d.truncate(200);
    }
    d
}

fn summary(rows: &[Row], a: &Attempt, retries: &[String], out: &Path) -> Result<bool> {
    let mut s = String::new();
    let mark = |k: &str| {
        a.marks
            .iter()
            .find(|(m, _)| m.starts_with(k))
            .map_or("-".to_string(), |(_, t)| format!("{t:.0}s"))
    };
    s.push_str(&format!(
        "\nXenlet test bed: QEMU session {:.0}s (dom0 up at {}, toolstack up at {}); \
         whole-session retries: {}\n",
        a.seconds,
        mark("dom0 up"),
        mark("toolstack up"),
        retries.len()
    ));
    for r in retries {
        s.push_str(&format!("  retried: {r}\n"));
    }
    s.push_str(&format!(
        "\n{:<12} {:<6} {:>7}  {}\n",
        "scenario", "result", "time", "detail"
    ));
    for r in rows {
        let t =
            r.kv.get("t_total")
                .map_or("-".to_string(), |t| format!("{t}s"));
        s.push_str(&format!(
            "{:<12} {:<6} {:>7}  {}\n",
            r.name, r.status, t, r.detail
        ));
        if let Some(m) = r.kv.get("matches") {
            for l in m.lines() {
                let l: String = l.chars().take(120).collect();
                s.push_str(&format!("{:<28}{}\n", "", l));
            }
        }
    }
    s.push_str(&format!("\nlogs: {}/<scenario>/\n", out.display()));
    print!("{s}");
    fs::write(out.join("summary.txt"), &s)?;
    Ok(rows.iter().all(|r| r.status == "PASS"))
}

/// `testbed shell`: Xen + dom0 with the toolstack started and a root shell on this
/// terminal; the Xenlet kernel and disk image (when built) are in /payload/files.
pub fn shell(opts: &Options) -> Result<()> {
    let bed = build::ensure(false)?;
    let qemu = crate::qemu::ensure()?;
    let work = out_dir().join(".work");
    let _ = fs::remove_dir_all(work.join("payload"));
    fs::create_dir_all(&work)?;
    step("kernel build (release)");
    let mut files = vec![(
        Need::XenletElf,
        crate::build_kernel(crate::Profile::Release)?,
    )];
    let img = workspace_root().join("target/xenlet/xenlet.img");
    if img.is_file() {
        files.push((Need::XenletImage, img));
    }
    fs::create_dir_all(work.join("payload"))?;
    fs::write(work.join("payload/interactive"), "")?;
    let payload = make_payload(&work, &[], &files)?;
    let results = work.join("results.img");
    let _ = fs::remove_file(&results);
    fs::File::create(&results)?.set_len(64 << 20)?;
    let mut cmd = xen_qemu(&qemu, &bed, opts);
    cmd.args(["-drive", &drive(&payload, "readonly=on")])
        .args(["-drive", &drive(&results, "cache=unsafe")])
        .args(["-nographic", "-serial", "mon:stdio", "-monitor", "none"])
        .args(["-no-reboot", "-nic", "none"]);
    step("booting Xen + dom0: a root shell once the toolstack is up (~40 s); Ctrl-A X quits");
    run(&mut cmd, "QEMU")
}

#[cfg(test)]
mod xl_tests {
    use super::*;

    #[test]
    fn cpu_ticks_come_from_fields_14_and_15_even_with_spaces_in_the_name() {
        let line = "19798 (qemu-system (x86)) S 18813 19798 18812 0 -1 4194560 1916590 0 0 0 75300 2300 0 0 20 0 3 0 4757 8932560896 1904043";
        assert_eq!(parse_cpu_ticks(line), Some(77_600));
        assert_eq!(parse_cpu_ticks("garbage"), None);
        assert_eq!(parse_cpu_ticks("1 (x) S 1 2"), None);
    }

    #[test]
    fn thirty_seconds_of_silence_is_nudged_then_every_thirty_more() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut w = SilenceWatch::new(t0);
        assert!(!w.due(at(29)), "29 s of silence is a quiet step");
        w.heard(at(29));
        assert!(!w.due(at(58)));
        assert!(w.due(at(59)), "30 s of silence is nudged");
        assert!(!w.due(at(60)), "one nudge, then another 30 s");
        assert!(w.due(at(89)), "a long silence gets a nudge every 30 s");
        w.heard(at(90));
        assert!(!w.due(at(119)), "a line starts the count again");
        assert!(w.due(at(120)));
    }

    #[test]
    fn a_stall_is_a_full_window_of_no_cpu() {
        let t0 = Instant::now();
        let w = STALL_WINDOW.as_millis() as u64;
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // busy
        let mut busy = vec![(at(0), 100.0), (at(w / 2), 102.5), (at(w), 105.0)];
        assert_eq!(stalled(&mut busy, at(w)), None);
        // a healthy machine with nothing to do (hang-probe: 3 ticks in 5 s)
        let mut quiet = vec![(at(0), 100.0), (at(w / 2), 100.03), (at(w), 100.06)];
        assert_eq!(stalled(&mut quiet, at(w)), None);
        // idle, but not yet for a whole window
        let mut short = vec![(at(0), 100.0), (at(w - 1000), 100.0)];
        assert_eq!(stalled(&mut short, at(w - 1000)), None);
        // no CPU for the window: a stall
        let mut idle = vec![(at(0), 100.0), (at(w / 2), 100.0), (at(w + 100), 100.0)];
        assert_eq!(stalled(&mut idle, at(w + 100)), Some(0.0));
        // old samples are dropped: busy long ago, nothing for the last window
        let mut was_busy = vec![
            (at(0), 50.0),
            (at(1000), 100.0),
            (at(w + 1000), 100.0),
            (at(w + 1500), 100.0),
        ];
        assert_eq!(stalled(&mut was_busy, at(w + 1500)), Some(0.0));
        assert_eq!(was_busy.first().map(|s| s.0), Some(at(1000)));
    }

    #[test]
    fn a_failure_after_a_woken_stall_retries_the_session() {
        let dir = std::env::temp_dir().join(format!("xenlet-stall-retry-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for (name, status) in [("xen-hvm", "FAIL"), ("xen-pvh", "PASS")] {
            fs::create_dir_all(dir.join(name)).unwrap();
            fs::write(
                dir.join(name).join("result.txt"),
                format!("status={status}\n"),
            )
            .unwrap();
        }
        let list: Vec<&Scenario> = ["xen-hvm", "xen-pvh"]
            .iter()
            .map(|n| scenarios::find(n).unwrap())
            .collect();
        let mut a = Attempt {
            died: None,
            results: dir.clone(),
            marks: BTreeMap::new(),
            serial: dir.join("serial.log"),
            seconds: 1.0,
            stalls: Vec::new(),
        };
        // without a stall a failure is the scenario's own
        assert_eq!(a.retry_reason(&list), None);
        a.stalls.push("92s during 'scenario:xen-hvm'".into());
        let why = a.retry_reason(&list).unwrap();
        assert!(
            why.starts_with("xen-hvm failed after the nested machine stalled"),
            "{why}"
        );
        // a stall with everything passing keeps the results
        fs::write(dir.join("xen-hvm/result.txt"), "status=PASS\n").unwrap();
        assert_eq!(a.retry_reason(&list), None);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stall_is_woken_and_one_that_stays_gives_up() {
        let t0 = Instant::now();
        let w = STALL_WINDOW.as_secs();
        let mut watch = StallWatch::new(0);
        let mut cpu = 10.0;
        let mut verdicts = Vec::new();
        // busy for 10 s, then no CPU at all, a sample a second
        for s in 0..=(10 + 8 * w) {
            if s <= 10 {
                cpu += 1.0;
            }
            watch.samples.push((t0 + Duration::from_secs(s), cpu));
            if let Some(v) = watch.judge(t0 + Duration::from_secs(s)) {
                verdicts.push((s, v));
            }
        }
        let wakes: Vec<u64> = verdicts
            .iter()
            .filter(|(_, v)| matches!(v, Stall::Wake(_)))
            .map(|(s, _)| *s)
            .collect();
        // a window after the last busy second, then one per window
        let want: Vec<u64> = (1..=u64::from(STALL_GIVE_UP)).map(|k| 10 + k * w).collect();
        assert_eq!(wakes, want);
        assert!(matches!(
            verdicts[STALL_GIVE_UP as usize],
            (s, Stall::GiveUp(_)) if s == 10 + u64::from(STALL_GIVE_UP + 1) * w
        ));
        // woken: busy again, and the count starts over
        let mut watch = StallWatch::new(0);
        for (s, c) in [
            (0, 1.0),
            (w, 1.0),
            (w + 1, 2.0),
            (2 * w + 1, 7.0),
            (3 * w + 1, 7.0),
        ] {
            watch.samples.push((t0 + Duration::from_secs(s), c));
            let v = watch.judge(t0 + Duration::from_secs(s));
            if s == w || s == 3 * w + 1 {
                assert!(matches!(v, Some(Stall::Wake(_))), "{s}: {v:?}");
            } else {
                assert_eq!(v, None, "{s}");
            }
        }
        assert_eq!(watch.in_a_row, 1);
    }

    #[test]
    fn a_hang_switches_the_console_to_xen_and_types_its_debug_keys() {
        let mut typed = Vec::new();
        send_keys(&mut typed, HANG_DEBUG_KEYS).unwrap();
        assert_eq!(typed, b"\x01\x01\x01rqd");
        let mut typed = Vec::new();
        send_keys(&mut typed, STALL_DEBUG_KEYS).unwrap();
        assert_eq!(typed, b"\x01\x01\x01arq");
        assert!(hang_verdict(0).contains("did not answer"));
        assert!(hang_verdict(12).contains("answered its debug keys (12 lines"));
    }

    #[test]
    fn xl_lines_end_every_config() {
        let list = with_xl(
            select(&["flood-pvh", "xen-pvh"]).unwrap(),
            &["tsc_mode=\"native\"".to_string()],
        );
        assert_eq!(list.len(), 2);
        for s in &list {
            assert!(
                s.config.ends_with("\ntsc_mode=\"native\"\n"),
                "{}",
                s.config
            );
            assert!(s.config.starts_with("name    = \"@NAME@\""));
        }
        let runs = select(&["bench-linux.1", "bench-xenlet.1", "bench-linux.2"]).unwrap();
        let names: Vec<&str> = runs.iter().map(|s| s.name).collect();
        assert_eq!(names, ["bench-linux.1", "bench-xenlet.1", "bench-linux.2"]);
        assert_eq!(
            runs[2].config,
            scenarios::find("bench-linux").unwrap().config
        );
        assert!(select(&["bench-linux.x"]).is_err());
        let plain = with_xl(select(&["xen-pvh"]).unwrap(), &[]);
        assert_eq!(plain[0].config, scenarios::find("xen-pvh").unwrap().config);
        // run.py's `$DOMAIN_XL` for the client domUs: the same lines, as appended
        let xl = ["tsc_mode=\"native\"".to_string(), "a=1".to_string()];
        assert_eq!(xl_text(&xl), "tsc_mode=\"native\"\na=1\n");
        assert_eq!(xl_text(&[]), "");
    }
}
