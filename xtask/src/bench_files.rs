//! `cargo xtask bench files`: the crash-safety issue's metadata-heavy work, 5,000
//! small files created on ext4 and synced (`cp -r` from a read-only source disk),
//! in Xenlet PVH against the Linux PVHVM domU, in one test-bed session (scenarios
//! `bench-files-xenlet-N` and `bench-files-linux`, see `testbed/scenarios.rs`).
//! A benchmark, not a test: it fails only when a run fails or checks bad (e2fsck
//! not clean, a file's SHA-256 different).

use crate::bench_fs::{median, mmss, time_real};
use crate::report::{Row, Section};
use crate::testbed;
use crate::util::{step, Result};
use std::collections::BTreeMap;

/// Runs of the Linux domU (one boot).
const LINUX_RUNS: usize = 3;

/// One run's figures: cp and sync seconds, and what the check in dom0 said.
#[derive(Debug, PartialEq)]
struct Run {
    cp: f64,
    sync: f64,
    note: String,
}

/// The figures of a run from a scenario's results (`n`: the Linux domU's run
/// number, whose variables carry it as a suffix).
fn run_of(v: &BTreeMap<String, String>, n: Option<usize>) -> Option<Run> {
    // captured variables are `var.NAME` in result.txt
    let key = |k: &str| match n {
        Some(i) => format!("var.{k}_{i}"),
        None => format!("var.{k}"),
    };
    let secs = |k: &str| -> Option<f64> {
        let s = v.get(&key(k))?;
        if n.is_some() {
            s.parse().ok()
        } else {
            time_real(s)
        }
    };
    let (cp, sync) = if n.is_some() {
        (secs("CP_S")?, secs("SYNC_S")?)
    } else {
        (secs("CP_REAL")?, secs("SYNC_REAL")?)
    };
    let mut notes = Vec::new();
    match v.get(&key("FSCK")).map(String::as_str) {
        Some("0") => {}
        Some(f) => notes.push(format!("e2fsck -fn exit {f}")),
        None => notes.push("no e2fsck".to_string()),
    }
    match v.get(&key("SAME")).map(String::as_str) {
        Some("same") => {}
        Some(_) => notes.push("the copy differs".to_string()),
        None => notes.push("no manifest".to_string()),
    }
    Some(Run {
        cp,
        sync,
        note: notes.join(", "),
    })
}

pub fn files(args: &[&str]) -> Result<Section> {
    let a = crate::bench::bench_args(args, LINUX_RUNS, &[], &[])?;
    let runs = a.runs;
    // alternating: Xenlet run 1, the Linux domU's runs, Xenlet runs 2..
    let mut order = vec![
        "bench-files-xenlet-1".to_string(),
        "bench-files-linux".to_string(),
    ];
    order.extend((2..=runs).map(|i| format!("bench-files-xenlet-{i}")));
    step(&format!(
        "bench files: cp -r of 5,000 small files + sync, Xenlet PVH {runs} run(s) alternating with the Linux PVHVM domU ({LINUX_RUNS} runs in one boot)"
    ));
    let ran = crate::bench::session(&order, &a);

    let mut table = String::from(
        "\n5,000 small files (100-4,099 bytes, 5 directories, 10.3 MB) copied with cp -r from a\n\
         read-only ext4 disk to a fresh ext4 disk (256 MiB, 1 KiB blocks, mkfs.ext4 in dom0), then sync;\n\
         nested Xen 4.17 under QEMU TCG; per run: cp + sync (cp alone), minutes:seconds\n\n",
    );
    table.push_str(&format!("{:<26}", "row"));
    for i in 1..=LINUX_RUNS {
        table.push_str(&format!(" {:>18}", format!("run {i}")));
    }
    table.push_str(&format!(" {:>9} {:>8}\n", "median", "files/s"));
    let mut medians = BTreeMap::new();
    let mut failed = false;
    let mut report_rows = Vec::new();
    let rows: [(&str, &str, bool); 2] = [
        ("Xenlet PVH", "bench-files-xenlet", false),
        ("Linux PVHVM (blkfront)", "bench-files-linux", true),
    ];
    for (label, prefix, linux) in rows {
        let mut line = format!("{label:<26}");
        let mut totals = Vec::new();
        let mut notes = Vec::new();
        let n_runs = if linux { LINUX_RUNS } else { runs };
        for i in 1..=LINUX_RUNS {
            if i > n_runs {
                line.push_str(&format!(" {:>18}", ""));
                continue;
            }
            let (v, r) = if linux {
                let v = testbed::result(prefix);
                let r = run_of(&v, Some(i));
                (v, r)
            } else {
                let v = testbed::result(&format!("{prefix}-{i}"));
                let r = run_of(&v, None);
                (v, r)
            };
            match r {
                Some(r) => {
                    line.push_str(&format!(
                        " {:>18}",
                        format!("{} ({})", mmss(r.cp + r.sync), mmss(r.cp))
                    ));
                    if r.note.is_empty() {
                        totals.push(r.cp + r.sync);
                    } else {
                        failed = true;
                        notes.push(format!("run {i}: {}", r.note));
                    }
                }
                None => {
                    failed = true;
                    let why = v.get("status").map_or("not run", String::as_str);
                    line.push_str(&format!(" {:>18}", "-"));
                    notes.push(format!("run {i}: {why}"));
                }
            }
        }
        report_rows.push(Row::new(
            "cp -r of 5,000 small files + sync",
            label,
            totals.clone(),
            "s",
            false,
        ));
        match median(&totals) {
            Some(m) => {
                medians.insert(prefix, m);
                line.push_str(&format!(" {:>9} {:>8.0}", mmss(m), 5000.0 / m));
            }
            None => line.push_str(&format!(" {:>9} {:>8}", "-", "-")),
        }
        if !notes.is_empty() {
            line.push_str(&format!("  [{}]", notes.join("; ")));
        }
        table.push_str(&line);
        table.push('\n');
    }
    if let (Some(x), Some(l)) = (
        medians.get("bench-files-xenlet"),
        medians.get("bench-files-linux"),
    ) {
        table.push_str(&format!(
            "\nXenlet / Linux, files per second (medians): {:.2}   goal >= 2\n",
            l / x
        ));
    }
    print!("{table}");
    let _ = std::fs::write(
        crate::util::workspace_root().join("target/testbed/bench-files.txt"),
        &table,
    );
    let failed = match (ran, failed) {
        (Ok(()), false) => None,
        (Err(e), _) => Some(e.to_string()),
        (Ok(()), true) => Some("a run gave no figure or checked bad".to_string()),
    };
    Ok(Section {
        bench: "files".into(),
        title: "5,000 small files copied to ext4 and synced: Xenlet PVH, the Linux domU".into(),
        command: format!("cargo xtask bench files --runs {runs}"),
        about: "`cp -r` of 5,000 small files (100-4,099 bytes, 5 directories, 10.3 MB) from a \
                read-only ext4 disk to a fresh ext4 disk (256 MiB, 1 KiB blocks, `mkfs.ext4` \
                in dom0), then `sync`; cp + sync in seconds. Xenlet PVH (a fresh boot per \
                run) alternating with the Linux PVHVM domU (its 3 runs in one boot, caches \
                dropped); dom0 checks each run (`e2fsck -fn`, every file's SHA-256), and a \
                run that checks bad gives no figure."
            .into(),
        baseline: Some("Linux PVHVM (blkfront)".into()),
        failed,
        rows: report_rows,
        text: Some(table),
        notes: crate::bench::failures(&order),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn reads_xenlet_and_linux_runs() {
        let x = vars(&[
            ("var.CP_REAL", "0m12.500s"),
            ("var.SYNC_REAL", "0m1.250s"),
            ("var.FSCK", "0"),
            ("var.SAME", "same"),
        ]);
        assert_eq!(
            run_of(&x, None),
            Some(Run {
                cp: 12.5,
                sync: 1.25,
                note: String::new()
            })
        );
        let l = vars(&[
            ("var.CP_S_2", "30.10"),
            ("var.SYNC_S_2", "4.00"),
            ("var.FSCK_2", "4"),
            ("var.SAME_2", "different"),
        ]);
        let r = run_of(&l, Some(2)).unwrap();
        assert!((r.cp - 30.1).abs() < 1e-9 && (r.sync - 4.0).abs() < 1e-9);
        assert_eq!(r.note, "e2fsck -fn exit 4, the copy differs");
        assert_eq!(
            run_of(&l, Some(1)),
            None,
            "another run's figures are not taken"
        );
        assert_eq!(run_of(&vars(&[("var.CP_REAL", "12s")]), None), None);
        // the keys of result.txt: captured variables are var.NAME
        assert_eq!(
            run_of(
                &vars(&[("CP_REAL", "0m1.0s"), ("SYNC_REAL", "0m1.0s")]),
                None
            ),
            None
        );
    }
}
