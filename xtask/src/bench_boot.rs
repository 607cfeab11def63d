//! `cargo xtask bench boot`: how fast and how small Xenlet boots, against the Linux
//! domU.
//!
//! One test-bed session, N runs alternating (each a fresh domain): Xenlet HVM from
//! its disk image (`bench-boot-hvm`, the `hvm-disk` configuration: SeaBIOS, GRUB,
//! multiboot2), Xenlet PVH (`bench-boot-pvh`) and the Linux PVHVM domU of
//! `linux-hvm` (`bench-boot-linux`, Debian's kernel and busybox initramfs, 256 MiB).
//! The time is the runner's `xl create -p` (`t_create`) plus unpause to the first
//! shell prompt (`t_first_prompt`): Xenlet's `xenlet> `, after its boot report; the
//! Linux domU's `domu# `, which its init prints right after its first line (`DOMU:
//! up`, once the PV front ends are probed). The runner's 1 s between the two (it
//! opens the console before unpausing) is not counted.
//!
//! Then, in the same session, the smallest `memory=` (MiB) with which each boots and
//! passes a check (8 MiB `dd ... conv=fsync` to xvdb, 3 pings to dom0 over netfront):
//! Xenlet PVH at each size of [`testbed::MEM_PROBES_XENLET`], the Linux domU at each
//! of [`testbed::MEM_PROBES_LINUX`], one probe scenario per size, smallest first. A
//! probe below the smallest working size fails by design (no whole-session retry for
//! it); the smallest is the smallest size that passed with every larger size tried
//! passing too.

use crate::bench::{bench_args, failure, failures};
use crate::report::{num, Row, Section};
use crate::testbed;
use crate::util::{step, Result};

/// (who, scenario): run `i` is `<scenario>.i`.
const SYSTEMS: &[(&str, &str)] = &[
    ("Xenlet HVM (disk image)", "bench-boot-hvm"),
    ("Xenlet PVH", "bench-boot-pvh"),
    ("Linux PVHVM domU", "bench-boot-linux"),
];

/// (who, probe scenario prefix, sizes)
fn probes() -> [(&'static str, &'static str, &'static [u32]); 2] {
    [
        (
            "Xenlet PVH",
            "bench-mem-xenlet-",
            testbed::MEM_PROBES_XENLET,
        ),
        (
            "Linux PVHVM domU",
            "bench-mem-linux-",
            testbed::MEM_PROBES_LINUX,
        ),
    ]
}

/// The smallest size that passed with every larger size passing too, from
/// (size, passed) smallest first.
fn smallest(outcomes: &[(u32, bool)]) -> Option<u32> {
    let mut best = None;
    for &(m, ok) in outcomes.iter().rev() {
        if !ok {
            break;
        }
        best = Some(m);
    }
    best
}

fn secs(v: &std::collections::BTreeMap<String, String>, k: &str) -> Option<f64> {
    v.get(k).and_then(|s| s.parse().ok())
}

pub fn boot(args: &[&str]) -> Result<Section> {
    let a = bench_args(args, 5, &["--no-mem"], &[])?;
    let mem = !a.words.contains(&"--no-mem");
    let mut names: Vec<String> = (1..=a.runs)
        .flat_map(|i| SYSTEMS.iter().map(move |(_, s)| format!("{s}.{i}")))
        .collect();
    let timed = names.clone();
    if mem {
        for (_, prefix, sizes) in probes() {
            names.extend(sizes.iter().map(|m| format!("{prefix}{m}")));
        }
    }
    step(&format!(
        "bench boot: xl create to the first prompt, {} run(s) each, alternating{}: {}",
        a.runs,
        if mem {
            "; then the memory= probes (those below the smallest size fail by design)"
        } else {
            ""
        },
        names.join(", ")
    ));
    let ran = crate::bench::session(&names, &a);

    let mut rows = Vec::new();
    for (label, f) in [
        (
            "xl create to the first shell prompt",
            (|v| Some(secs(v, "t_create")? + secs(v, "t_first_prompt")?))
                as fn(&std::collections::BTreeMap<String, String>) -> Option<f64>,
        ),
        ("of which xl create -p (domain built, paused)", |v| {
            secs(v, "t_create")
        }),
        ("of which unpause to the first shell prompt", |v| {
            secs(v, "t_first_prompt")
        }),
    ] {
        for (who, sc) in SYSTEMS {
            let figs = (1..=a.runs)
                .map(|i| testbed::result(&format!("{sc}.{i}")))
                .filter(|v| v.get("status").is_some_and(|s| s == "PASS"))
                .filter_map(|v| f(&v))
                .collect();
            rows.push(Row::new(label, who, figs, "s", false));
        }
    }
    let ran = if mem {
        // a failing probe is a result; only the timed runs must pass
        let bad = failures(&timed);
        match ran {
            Err(e) if !bad.is_empty() || testbed::result(&names[0]).is_empty() => Err(e),
            _ => Ok(()),
        }
    } else {
        ran
    };
    let mut notes = failures(&timed);
    let mut text = String::new();
    let mut mem_failed = Vec::new();
    if mem {
        text.push_str(
            "memory= probes (MiB): boot, 8 MiB dd with conv=fsync to xvdb, 3 pings to dom0\n",
        );
        for (who, prefix, sizes) in probes() {
            let outcomes: Vec<(u32, bool, String)> = sizes
                .iter()
                .map(|m| {
                    let v = testbed::result(&format!("{prefix}{m}"));
                    let st = v.get("status").map_or("not run", String::as_str);
                    let why = match st {
                        "PASS" => "pass".to_string(),
                        "not run" => "not run".to_string(),
                        _ => format!(
                            "{st} at {}: {}",
                            v.get("failed_step").map_or("?", String::as_str),
                            v.get("message")
                                .map_or("", String::as_str)
                                .chars()
                                .take(110)
                                .collect::<String>()
                        ),
                    };
                    (*m, st == "PASS", why)
                })
                .collect();
            // a size not run in this session (e.g. the session died first) is unknown
            let pass: Vec<(u32, bool)> = outcomes
                .iter()
                .filter(|(_, _, why)| why != "not run")
                .map(|(m, ok, _)| (*m, *ok))
                .collect();
            let min = smallest(&pass);
            text.push_str(&format!(
                "  {who}: smallest {}\n",
                min.map_or("- (none passed)".to_string(), |m| format!("{m} MiB"))
            ));
            for (m, _, why) in &outcomes {
                text.push_str(&format!("    {m:>4} MiB  {why}\n"));
            }
            if min.is_none() {
                mem_failed.push(who);
            }
            rows.push(Row::new(
                "smallest memory= that boots and passes dd + ping",
                who,
                min.map(f64::from).into_iter().collect(),
                "MiB",
                false,
            ));
        }
    }
    let timed_rows: Vec<Row> = rows.iter().filter(|r| r.unit == "s").cloned().collect();
    let mut failed = failure(ran, &timed_rows, a.runs);
    if !mem_failed.is_empty() {
        let m = format!(
            "no memory= size passed for {} (see the probes)",
            mem_failed.join(", ")
        );
        failed = Some(failed.map_or(m.clone(), |f| format!("{f}; {m}")));
    }
    for (who, sc) in SYSTEMS {
        for i in 1..=a.runs {
            let v = testbed::result(&format!("{sc}.{i}"));
            if let (Some(c), Some(p)) = (secs(&v, "t_create"), secs(&v, "t_first_prompt")) {
                notes.push(format!(
                    "run {i}, {who}: xl create -p {} s + unpause to prompt {} s",
                    num(c),
                    num(p)
                ));
            }
        }
    }
    if !text.is_empty() {
        println!("\n{text}");
    }
    Ok(Section {
        bench: "boot".into(),
        title: "boot time and the smallest memory: Xenlet HVM and PVH, the Linux domU".into(),
        command: format!(
            "cargo xtask bench boot --runs {}{}",
            a.runs,
            if mem { "" } else { " --no-mem" }
        ),
        about: "`xl create` to the first shell prompt, measured in dom0 by the test bed's \
                runner: `xl create -p` plus unpause to the prompt (the runner's 1 s between \
                them, to attach the console, is not counted). Xenlet HVM boots from its disk \
                image (SeaBIOS, GRUB, multiboot2; the `hvm-disk` configuration, 32 MiB), \
                Xenlet PVH from its ELF (32 MiB); the Linux PVHVM domU (Debian's kernel, \
                busybox initramfs, 256 MiB) to its init's shell, whose prompt follows init's \
                first line (`DOMU: up`, PV front ends probed) at once. Runs alternate, each a \
                fresh domain. Then the smallest `memory=` with which each boots and passes \
                an 8 MiB `dd conv=fsync` to xvdb and 3 pings to dom0: one probe per size, \
                smallest first (the Linux probes use the same config with only `memory` \
                changed; Xenlet's is the PVH config plus a vif)."
            .into(),
        baseline: Some("Linux PVHVM domU".into()),
        failed,
        rows,
        text: (!text.is_empty()).then_some(text),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_size_with_every_larger_passing() {
        assert_eq!(smallest(&[(2, false), (4, true), (8, true)]), Some(4));
        assert_eq!(smallest(&[(2, true), (4, false), (8, true)]), Some(8));
        assert_eq!(smallest(&[(2, false), (4, false)]), None);
        assert_eq!(smallest(&[]), None);
    }

    #[test]
    fn scenarios_exist() {
        for (_, s) in SYSTEMS {
            assert!(testbed::scenario_exists(s), "{s}");
        }
        for (_, prefix, sizes) in probes() {
            for m in sizes {
                assert!(testbed::scenario_exists(&format!("{prefix}{m}")));
            }
        }
    }
}
