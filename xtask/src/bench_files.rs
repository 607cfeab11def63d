//! `cargo xtask bench files`: the crash-safety issue's metadata-heavy work, 5,000
//! small files created on ext4 and synced (`cp -r` from a read-only source disk),
//! and issue 30's 10,000-entry directory (created the same way, then every name
//! looked up by `ls -l`), in Xenlet PVH against the Linux PVHVM domU, in one test-bed
//! session (scenarios `bench-files-xenlet-N`, `bench-files-linux`,
//! `bench-dir-xenlet-N` and `bench-dir-linux`, see `testbed/scenarios.rs`).
//! A benchmark, not a test: it fails only when a run fails or checks bad (e2fsck
//! not clean, a file's SHA-256 different).

use crate::bench_fs::{median, mmss, time_real};
use crate::report::{Row, Section};
use crate::testbed;
use crate::util::{step, Result};
use std::collections::BTreeMap;

/// Runs of the Linux domU (one boot).
const LINUX_RUNS: usize = 3;

/// One run's figures: cp and sync seconds, the lookup's (`ls -l` of the directory
/// after the copy, `bench-dir-*` only), and what the check in dom0 said.
#[derive(Debug, PartialEq)]
struct Run {
    cp: f64,
    sync: f64,
    lookup: Option<f64>,
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
    // the Linux domU's seconds by /proc/uptime (NAME_S), Xenlet's `time` (NAME_REAL)
    let secs = |k: &str| -> Option<f64> {
        if n.is_some() {
            v.get(&key(&format!("{k}_S")))?.parse().ok()
        } else {
            time_real(v.get(&key(&format!("{k}_REAL")))?)
        }
    };
    let (cp, sync) = (secs("CP")?, secs("SYNC")?);
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
        lookup: secs("LS"),
        note: notes.join(", "),
    })
}

/// One figure of a table: its report row's label, the figure of a run and its
/// cell, the rate column (its heading, the items), its name (the table's first
/// column, the ratio line) and goal.
struct Measure {
    label: &'static str,
    figure: fn(&Run) -> Option<f64>,
    cell: fn(&Run) -> Option<String>,
    rate: Option<(&'static str, f64)>,
    name: &'static str,
    goal: &'static str,
}

/// One table of the bench: its scenarios' prefixes (`PREFIX-xenlet-N`,
/// `PREFIX-linux`), its heading, its figures.
struct Table {
    prefix: &'static str,
    heading: &'static str,
    measures: &'static [Measure],
}

const TABLES: &[Table] = &[
    Table {
        prefix: "bench-files",
        heading: "5,000 small files (100-4,099 bytes, 5 directories, 10.3 MB) copied with cp -r from a\n\
                  read-only ext4 disk to a fresh ext4 disk (256 MiB, 1 KiB blocks, mkfs.ext4 in dom0), then sync;\n\
                  nested Xen 4.17 under QEMU TCG; per run: cp + sync (cp alone), minutes:seconds",
        measures: &[Measure {
            label: "cp -r of 5,000 small files + sync",
            figure: |r| Some(r.cp + r.sync),
            cell: |r| Some(format!("{} ({})", mmss(r.cp + r.sync), mmss(r.cp))),
            rate: Some(("files/s", 5000.0)),
            name: "cp + sync",
            goal: "2",
        }],
    },
    Table {
        prefix: "bench-dir",
        heading: "a 10,000-entry directory (files of 0-64 bytes named entry-NNNNN-XXXXXXXX, XXXXXXXX random)\n\
                  on the same disks: create = cp -r of it + sync (cp alone); lookup = ls -l of the copy\n\
                  (every name looked up by its path and stat'ed) after the data disk is mounted again\n\
                  (the Linux domU: caches dropped); minutes:seconds",
        measures: &[
            Measure {
                label: "10,000-entry directory: create (cp -r + sync)",
                figure: |r| Some(r.cp + r.sync),
                cell: |r| Some(format!("{} ({})", mmss(r.cp + r.sync), mmss(r.cp))),
                rate: Some(("files/s", 10000.0)),
                name: "create",
                goal: "1",
            },
            Measure {
                label: "10,000-entry directory: lookup (ls -l)",
                figure: |r| r.lookup,
                cell: |r| r.lookup.map(mmss),
                rate: Some(("names/s", 10000.0)),
                name: "lookup",
                goal: "1",
            },
        ],
    },
];

/// The scenarios of a `runs`-run session, alternating: each table's Xenlet run 1
/// and Linux domU, then the Xenlet runs 2...
fn order(runs: usize) -> Vec<String> {
    let mut order = Vec::new();
    for t in TABLES {
        order.push(format!("{}-xenlet-1", t.prefix));
        order.push(format!("{}-linux", t.prefix));
    }
    for i in 2..=runs {
        order.extend(TABLES.iter().map(|t| format!("{}-xenlet-{i}", t.prefix)));
    }
    order
}

/// One measure's table from the results: its text, report rows, whether a run
/// gave no figure or checked bad.
fn table(t: &Table, m: &Measure, runs: usize) -> (String, Vec<Row>, bool) {
    let mut table = format!("{:<26}", m.name);
    for i in 1..=LINUX_RUNS {
        table.push_str(&format!(" {:>18}", format!("run {i}")));
    }
    let rate = m.rate.map_or("", |(h, _)| h);
    table.push_str(&format!(" {:>9} {:>8}\n", "median", rate));
    let mut medians = Vec::new();
    let mut failed = false;
    let mut report_rows = Vec::new();
    for (label, linux) in [("Xenlet PVH", false), ("Linux PVHVM (blkfront)", true)] {
        let mut line = format!("{label:<26}");
        let mut figures = Vec::new();
        let mut notes = Vec::new();
        let n_runs = if linux { LINUX_RUNS } else { runs };
        for i in 1..=LINUX_RUNS {
            if i > n_runs {
                line.push_str(&format!(" {:>18}", ""));
                continue;
            }
            let (v, r) = if linux {
                let v = testbed::result(&format!("{}-linux", t.prefix));
                let r = run_of(&v, Some(i));
                (v, r)
            } else {
                let v = testbed::result(&format!("{}-xenlet-{i}", t.prefix));
                let r = run_of(&v, None);
                (v, r)
            };
            match r
                .as_ref()
                .and_then(|r| Some((r, (m.figure)(r)?, (m.cell)(r)?)))
            {
                Some((r, figure, cell)) => {
                    line.push_str(&format!(" {cell:>18}"));
                    if r.note.is_empty() {
                        figures.push(figure);
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
        report_rows.push(Row::new(m.label, label, figures.clone(), "s", false));
        let median = median(&figures);
        medians.push(median);
        match (median, m.rate) {
            (Some(md), Some((_, items))) => {
                line.push_str(&format!(" {:>9} {:>8.0}", mmss(md), items / md))
            }
            (Some(md), None) => line.push_str(&format!(" {:>9} {:>8}", mmss(md), "")),
            (None, _) => line.push_str(&format!(" {:>9} {:>8}", "-", "-")),
        }
        if !notes.is_empty() {
            line.push_str(&format!("  [{}]", notes.join("; ")));
        }
        table.push_str(&line);
        table.push('\n');
    }
    if let [Some(x), Some(l)] = medians[..] {
        table.push_str(&format!(
            "Xenlet / Linux, {} (speed: Linux's median time / Xenlet's): {:.2}   goal >= {}\n",
            m.name,
            l / x,
            m.goal
        ));
    }
    (table, report_rows, failed)
}

pub fn files(args: &[&str]) -> Result<Section> {
    let a = crate::bench::bench_args(args, LINUX_RUNS, &[], &[])?;
    let runs = a.runs;
    let order = order(runs);
    step(&format!(
        "bench files: cp -r of 5,000 small files + sync, and a 10,000-entry directory's cp -r + sync and ls -l, Xenlet PVH {runs} run(s) alternating with the Linux PVHVM domU ({LINUX_RUNS} runs in one boot)"
    ));
    let ran = crate::bench::session(&order, &a);

    let mut text = String::new();
    let mut failed = false;
    let mut report_rows = Vec::new();
    for t in TABLES {
        text.push_str(&format!("\n{}\n", t.heading));
        for m in t.measures {
            let (s, rows, f) = table(t, m, runs);
            text.push('\n');
            text.push_str(&s);
            report_rows.extend(rows);
            failed |= f;
        }
    }
    print!("{text}");
    let _ = std::fs::write(
        crate::util::workspace_root().join("target/testbed/bench-files.txt"),
        &text,
    );
    let failed = match (ran, failed) {
        (Ok(()), false) => None,
        (Err(e), _) => Some(e.to_string()),
        (Ok(()), true) => Some("a run gave no figure or checked bad".to_string()),
    };
    Ok(Section {
        bench: "files".into(),
        title: "5,000 small files copied to ext4 and synced, a 10,000-entry directory created and looked up: Xenlet PVH, the Linux domU".into(),
        command: format!("cargo xtask bench files --runs {runs}"),
        about: "`cp -r` of 5,000 small files (100-4,099 bytes, 5 directories, 10.3 MB) from a \
                read-only ext4 disk to a fresh ext4 disk (256 MiB, 1 KiB blocks, `mkfs.ext4` \
                in dom0), then `sync`; cp + sync in seconds. Then a 10,000-entry directory \
                (files of 0-64 bytes, names with a random part): create = its `cp -r` + \
                `sync`, lookup = `ls -l` of the copy (every name looked up and stat'ed) with \
                the data disk mounted again. Xenlet PVH (a fresh boot per \
                run) alternating with the Linux PVHVM domU (its 3 runs in one boot, caches \
                dropped); dom0 checks each run (`e2fsck -fn`, every file's SHA-256), and a \
                run that checks bad gives no figure."
            .into(),
        baseline: Some("Linux PVHVM (blkfront)".into()),
        failed,
        rows: report_rows,
        text: Some(text),
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
                lookup: None,
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
        assert_eq!(r.lookup, None);
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

    #[test]
    fn reads_the_directory_runs_lookup() {
        let x = vars(&[
            ("var.CP_REAL", "1m2.000s"),
            ("var.SYNC_REAL", "0m3.000s"),
            ("var.LS_REAL", "0m4.500s"),
            ("var.FSCK", "0"),
            ("var.SAME", "same"),
        ]);
        assert_eq!(run_of(&x, None).unwrap().lookup, Some(4.5));
        let l = vars(&[
            ("var.CP_S_3", "10.00"),
            ("var.SYNC_S_3", "1.00"),
            ("var.LS_S_3", "0.75"),
            ("var.LS_S_1", "9.00"),
            ("var.FSCK_3", "0"),
            ("var.SAME_3", "same"),
        ]);
        let r = run_of(&l, Some(3)).unwrap();
        assert_eq!((r.lookup, r.note.as_str()), (Some(0.75), ""));
        // a lookup not timed: the run's copy figures stand, the lookup has none
        let l = vars(&[
            ("var.CP_S_1", "1"),
            ("var.SYNC_S_1", "1"),
            ("var.LS_1", "2"),
        ]);
        assert_eq!(run_of(&l, Some(1)).unwrap().lookup, None);
        // the lookup's cell and figure come from the lookup, not the copy
        let lookup = &TABLES[1].measures[1];
        let r = run_of(&x, None).unwrap();
        assert_eq!(
            ((lookup.figure)(&r), (lookup.cell)(&r).is_some()),
            (Some(4.5), true)
        );
    }

    #[test]
    fn the_session_alternates_both_tables() {
        assert_eq!(
            order(2),
            [
                "bench-files-xenlet-1",
                "bench-files-linux",
                "bench-dir-xenlet-1",
                "bench-dir-linux",
                "bench-files-xenlet-2",
                "bench-dir-xenlet-2"
            ]
        );
        // every scenario of a 3-run session is registered
        for name in order(3) {
            assert!(
                crate::testbed::scenario_exists(&name),
                "{name} is not a scenario"
            );
        }
    }
}
