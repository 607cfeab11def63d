//! The bench report: each bench's figures as rows, written as a Markdown section and
//! an SVG chart, and `target/bench/report.md` assembled from the sections.
//!
//! A bench returns a [`Section`]: rows of (measurement, system, the figure of each
//! run, unit, which way is better). [`write`] stores the section
//! (`target/bench/sections/<bench>.md`, stamped with its date and commit) and its
//! chart (`target/bench/<bench>.svg`: one panel per measurement, a bar per system at
//! the median with a min..max whisker), then rebuilds `report.md` from every section
//! there, in [`ORDER`]: a bench run alone replaces its own section and keeps the
//! others, each saying when it was measured. The SVG is written by hand (a few
//! elements, no dependency); `tests` checks it in headless Chromium.

use crate::util::{workspace_root, Error, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The benches in the order of the report.
pub const ORDER: &[&str] = &[
    "seed", "boot", "dd", "fs", "files", "net", "router", "clients",
];

/// One system's figures for one measurement.
#[derive(Clone, Debug)]
pub struct Row {
    /// The measurement (a panel of the chart, a group of the table).
    pub label: String,
    /// Who was measured (a bar of the panel, a series of the chart).
    pub system: String,
    /// The figure of each run that gave one.
    pub runs: Vec<f64>,
    pub unit: String,
    pub higher_is_better: bool,
}

impl Row {
    pub fn new(label: &str, system: &str, runs: Vec<f64>, unit: &str, higher: bool) -> Row {
        Row {
            label: label.to_string(),
            system: system.to_string(),
            runs: runs.into_iter().filter(|x| x.is_finite()).collect(),
            unit: unit.to_string(),
            higher_is_better: higher,
        }
    }
}

/// A bench's part of the report.
#[derive(Clone, Debug, Default)]
pub struct Section {
    /// `dd`, `fs`, ...: the file names and the anchor.
    pub bench: String,
    pub title: String,
    /// The command that measured it.
    pub command: String,
    /// What was measured and how (Markdown).
    pub about: String,
    /// The system the ratios are to (e.g. the Linux domU).
    pub baseline: Option<String>,
    pub rows: Vec<Row>,
    /// The bench's own table (pre-formatted), e.g. the report's shape.
    pub text: Option<String>,
    pub notes: Vec<String>,
    /// Why the bench failed (its figures so far are kept).
    pub failed: Option<String>,
}

/// Median, min and max of some figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

pub fn stats(v: &[f64]) -> Option<Stats> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = match n {
        0 => return None,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    };
    Some(Stats {
        median,
        min: v[0],
        max: v[n - 1],
        n,
    })
}

/// A figure with the precision its size deserves.
pub fn num(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 {
        "0".to_string()
    } else if a >= 100.0 || (a >= 10.0 && x == x.round()) {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.1 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// When, at which commit and on which machine a section was measured.
#[derive(Clone, Debug)]
pub struct Stamp {
    pub date: String,
    pub commit: String,
    /// The host the test bed ran on: [`machine`].
    pub machine: String,
}

/// This host as a report names it: `HOSTNAME, CPU MODEL, N CPUs` (from
/// `/proc/sys/kernel/hostname` and `/proc/cpuinfo`; `?` for what cannot be read).
pub fn machine() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let (model, cpus) = cpu_model(&cpuinfo);
    format!("{host}, {model}, {cpus} CPUs")
}

/// The first `model name` of a `/proc/cpuinfo` text and the number of `processor`
/// lines.
fn cpu_model(cpuinfo: &str) -> (String, usize) {
    let field = |l: &str, k: &str| {
        l.split_once(':')
            .filter(|(key, _)| key.trim() == k)
            .map(|(_, v)| v.trim().to_string())
    };
    let model = cpuinfo
        .lines()
        .find_map(|l| field(l, "model name"))
        .unwrap_or_else(|| "?".into());
    let cpus = cpuinfo
        .lines()
        .filter(|l| field(l, "processor").is_some())
        .count();
    (model, cpus)
}

impl Stamp {
    /// Now (UTC), `git rev-parse --short HEAD` (`-dirty` with uncommitted changes to
    /// tracked files) and this [`machine`].
    pub fn now() -> Stamp {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .current_dir(workspace_root())
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let mut commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "?".into());
        if git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty()) {
            commit.push_str("-dirty");
        }
        Stamp {
            date: utc(secs),
            commit,
            machine: machine(),
        }
    }
}

/// `YYYY-MM-DD HH:MM UTC` of Unix seconds (days to civil date: H. Hinnant's
/// algorithm).
fn utc(secs: u64) -> String {
    let days = (secs / 86400) as i64;
    let (h, m) = (secs % 86400 / 3600, secs % 3600 / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02} UTC")
}

/// The measurements of a section in their first order, each with its rows.
fn groups(s: &Section) -> Vec<(&str, Vec<&Row>)> {
    let mut g: Vec<(&str, Vec<&Row>)> = Vec::new();
    for r in &s.rows {
        match g.iter_mut().find(|(l, _)| *l == r.label) {
            Some((_, v)) => v.push(r),
            None => g.push((&r.label, vec![r])),
        }
    }
    g
}

/// The systems of a section in their first order.
fn systems(s: &Section) -> Vec<&str> {
    let mut v: Vec<&str> = Vec::new();
    for r in &s.rows {
        if !v.contains(&r.system.as_str()) {
            v.push(&r.system);
        }
    }
    v
}

fn direction(r: &Row) -> &'static str {
    if r.higher_is_better {
        "higher is better"
    } else {
        "lower is better"
    }
}

/// The section in Markdown: heading, stamp, description, the table of medians
/// (min..max, n, ratio to the baseline), the chart, the bench's own table, notes.
pub fn markdown(s: &Section, stamp: &Stamp) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "## {}: {}\n", s.bench, s.title);
    let _ = writeln!(
        o,
        "Measured {} at commit `{}` on {} by `{}`.\n",
        stamp.date, stamp.commit, stamp.machine, s.command
    );
    if let Some(f) = &s.failed {
        let _ = writeln!(
            o,
            "**FAILED**: {}. The figures below are what the runs gave.\n",
            f.trim()
        );
    }
    if !s.about.is_empty() {
        let _ = writeln!(o, "{}\n", s.about.trim());
    }
    if s.rows.is_empty() {
        o.push_str("No figures.\n\n");
    } else {
        let ratio_head = s
            .baseline
            .as_ref()
            .map_or(String::new(), |b| format!(" ÷ {b} |"));
        let _ = writeln!(
            o,
            "| measurement | system | median | min..max | runs |{ratio_head}"
        );
        let _ = writeln!(
            o,
            "|---|---|--:|--:|--:|{}",
            if s.baseline.is_some() { "--:|" } else { "" }
        );
        for (label, rows) in groups(s) {
            let base = s
                .baseline
                .as_ref()
                .and_then(|b| rows.iter().find(|r| &r.system == b))
                .and_then(|r| stats(&r.runs));
            for (i, r) in rows.iter().enumerate() {
                let st = stats(&r.runs);
                let (med, range, n) = match st {
                    Some(st) => (
                        num(st.median),
                        format!("{}..{}", num(st.min), num(st.max)),
                        st.n.to_string(),
                    ),
                    None => ("-".into(), "-".into(), "0".into()),
                };
                let ratio = match (&s.baseline, st, base) {
                    (None, _, _) => String::new(),
                    (Some(_), Some(a), Some(b)) if b.median != 0.0 => {
                        format!(" {} |", num(a.median / b.median))
                    }
                    (Some(_), _, _) => " - |".to_string(),
                };
                // the measurement on its first row only
                let what = if i == 0 {
                    format!("{label} ({}, {})", r.unit, direction(r))
                } else {
                    String::new()
                };
                let _ = writeln!(
                    o,
                    "| {what} | {} | {med} | {range} | {n} |{ratio}",
                    r.system
                );
            }
        }
        let _ = writeln!(o, "\n![{} chart]({}.svg)\n", s.bench, s.bench);
    }
    if let Some(t) = &s.text {
        let _ = writeln!(o, "```text\n{}\n```\n", t.trim_matches('\n'));
    }
    if !s.notes.is_empty() {
        o.push_str("Notes:\n\n");
        for n in &s.notes {
            let _ = writeln!(o, "- {n}");
        }
        o.push('\n');
    }
    o
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// A round step for about `n` ticks up to `max`: 1, 2 or 5 times a power of ten.
fn tick_step(max: f64, n: f64) -> f64 {
    let raw = (max / n).max(f64::MIN_POSITIVE);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

/// A tick's value with as many decimals as its step needs (0, 0.5, 1.0 or 0, 50, 100).
fn tick_label(t: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil().max(0.0) as usize
    };
    format!("{t:.decimals$}")
}

/// Xenlet's series in warm colours, the others in cool ones.
fn colours(systems: &[&str]) -> Vec<&'static str> {
    const WARM: [&str; 4] = ["#d95f02", "#e6ab02", "#a6761d", "#e7298a"];
    const COOL: [&str; 4] = ["#1b9e77", "#7570b3", "#666666", "#66a61e"];
    let (mut w, mut c) = (0, 0);
    systems
        .iter()
        .map(|s| {
            if s.contains("Xenlet") {
                w += 1;
                WARM[(w - 1) % WARM.len()]
            } else {
                c += 1;
                COOL[(c - 1) % COOL.len()]
            }
        })
        .collect()
}

/// Splits a label into lines of at most `width` characters at spaces.
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for w in s.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + w.chars().count() <= width => {
                l.push(' ');
                l.push_str(w);
            }
            _ => lines.push(w.to_string()),
        }
    }
    lines
}

const PANEL_W: f64 = 330.0;
const PANEL_H: f64 = 270.0;
const COLS: usize = 3;

/// The chart: a legend of the systems, then one panel per measurement with its own
/// scale, a bar per system at the median and a whisker from min to max.
pub fn svg(s: &Section) -> String {
    let groups = groups(s);
    let systems = systems(s);
    let colours = colours(&systems);
    let cols = groups.len().clamp(1, COLS);
    let rows = groups.len().div_ceil(COLS).max(1);
    let legend_rows = systems.len().div_ceil(3).max(1);
    let top = 40.0 + 20.0 * legend_rows as f64 + if s.failed.is_some() { 18.0 } else { 0.0 };
    let width = 20.0 + PANEL_W * cols as f64;
    let height = top + PANEL_H * rows as f64 + 10.0;
    let mut o = String::new();
    let _ = writeln!(o, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(o, "<title>{}</title>", esc(&s.title));
    let _ = writeln!(
        o,
        r#"<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>"#
    );
    let _ = writeln!(
        o,
        r#"<text class="title" x="10" y="22" font-size="15" font-weight="bold">{}</text>"#,
        esc(&format!("{}: {}", s.bench, s.title))
    );
    for (i, (sys, col)) in systems.iter().zip(&colours).enumerate() {
        let x = 10.0 + (i % 3) as f64 * (width - 20.0) / 3.0;
        let y = 36.0 + (i / 3) as f64 * 20.0;
        let _ = writeln!(
            o,
            r#"<g class="legend" data-series="{0}"><rect x="{x}" y="{y}" width="12" height="12" fill="{col}"/><text x="{1}" y="{2}">{0}</text></g>"#,
            esc(sys),
            x + 17.0,
            y + 10.5
        );
    }
    if let Some(f) = &s.failed {
        let _ = writeln!(
            o,
            r##"<text class="failed" x="10" y="{:.1}" fill="#a00">FAILED: {}</text>"##,
            top - 12.0,
            esc(&f.chars().take(140).collect::<String>())
        );
    }
    for (gi, (label, grows)) in groups.iter().enumerate() {
        let px = 10.0 + (gi % COLS) as f64 * PANEL_W;
        let py = top + (gi / COLS) as f64 * PANEL_H;
        let unit = grows.first().map_or("", |r| r.unit.as_str());
        let dir = grows.first().map_or("", |r| direction(r));
        let _ = writeln!(o, r#"<g class="panel" data-group="{}">"#, esc(label));
        let mut ty = py + 14.0;
        for l in wrap(label, 44).iter().take(2) {
            let _ = writeln!(
                o,
                r#"<text class="label" x="{px}" y="{ty}" font-weight="bold">{}</text>"#,
                esc(l)
            );
            ty += 15.0;
        }
        let _ = writeln!(
            o,
            r##"<text class="unit" x="{px}" y="{ty}" fill="#555">{}</text>"##,
            esc(&format!("{unit}, {dir}"))
        );
        // plot area
        let (x0, x1) = (px + 48.0, px + PANEL_W - 20.0);
        let (y0, y1) = (py + 60.0, py + PANEL_H - 30.0);
        let max = grows
            .iter()
            .filter_map(|r| stats(&r.runs))
            .map(|st| st.max)
            .fold(0.0f64, f64::max);
        let step = tick_step(if max > 0.0 { max } else { 1.0 }, 4.0);
        let top_v = ((if max > 0.0 { max } else { 1.0 }) / step).ceil() * step;
        let y_of = |v: f64| y1 - (v / top_v) * (y1 - y0);
        let mut t = 0.0;
        while t <= top_v * 1.0001 {
            let y = y_of(t);
            let _ = writeln!(
                o,
                r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#ddd"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end" font-size="10">{}</text>"##,
                x0 - 4.0,
                y + 3.5,
                tick_label(t, step)
            );
            t += step;
        }
        let _ = writeln!(
            o,
            r##"<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="#333"/>"##
        );
        let slot = (x1 - x0) / systems.len().max(1) as f64;
        let bw = (slot * 0.7).min(60.0);
        for (si, sys) in systems.iter().enumerate() {
            let Some(r) = grows.iter().find(|r| r.system == *sys) else {
                continue;
            };
            let cx = x0 + slot * (si as f64 + 0.5);
            match stats(&r.runs) {
                Some(st) => {
                    let (yt, ymin, ymax) = (y_of(st.median), y_of(st.min), y_of(st.max));
                    let _ = writeln!(
                        o,
                        r#"<rect class="bar" data-series="{0}" data-group="{1}" x="{2:.1}" y="{yt:.1}" width="{bw:.1}" height="{3:.1}" fill="{4}"><title>{0}: median {5} {6} (min {7}, max {8}, {9} run(s))</title></rect>"#,
                        esc(sys),
                        esc(label),
                        cx - bw / 2.0,
                        (y1 - yt).max(0.5),
                        colours[si],
                        num(st.median),
                        esc(unit),
                        num(st.min),
                        num(st.max),
                        st.n
                    );
                    let _ = writeln!(
                        o,
                        r##"<path class="whisker" d="M{cx:.1} {ymin:.1}V{ymax:.1}M{:.1} {ymin:.1}h10M{:.1} {ymax:.1}h10" stroke="#000" stroke-width="1.2" fill="none"/>"##,
                        cx - 5.0,
                        cx - 5.0
                    );
                    let _ = writeln!(
                        o,
                        r#"<text class="value" x="{cx:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"#,
                        ymax.min(yt) - 5.0,
                        num(st.median)
                    );
                }
                None => {
                    let _ = writeln!(
                        o,
                        r##"<text class="missing" data-series="{}" x="{cx:.1}" y="{:.1}" text-anchor="middle" font-size="10" fill="#a00">no figure</text>"##,
                        esc(sys),
                        y1 - 6.0
                    );
                }
            }
        }
        o.push_str("</g>\n");
    }
    o.push_str("</svg>\n");
    o
}

/// `target/bench/`.
pub fn dir() -> PathBuf {
    workspace_root().join("target/bench")
}

/// Stores the section and its chart under `dir` and rebuilds `dir/report.md`;
/// returns the report's path.
pub fn write(dir: &Path, s: &Section, stamp: &Stamp) -> Result<PathBuf> {
    std::fs::create_dir_all(dir.join("sections"))?;
    std::fs::write(dir.join(format!("{}.svg", s.bench)), svg(s))?;
    std::fs::write(
        dir.join("sections").join(format!("{}.md", s.bench)),
        markdown(s, stamp),
    )?;
    assemble(dir, stamp)
}

/// `report.md` from the sections in `dir/sections/`, in [`ORDER`].
pub fn assemble(dir: &Path, stamp: &Stamp) -> Result<PathBuf> {
    let mut o = String::from("# Xenlet benchmark report\n\n");
    let _ = writeln!(
        o,
        "Written {} at commit `{}` on {} by `cargo xtask bench`; each section says when, \
         at which commit and on which machine it was measured (`cargo xtask bench NAME` \
         replaces its own section).\n",
        stamp.date, stamp.commit, stamp.machine
    );
    o.push_str(
        "Everything runs on the test bed (`xtask/testbed/README.md`): Xen 4.17 with a Debian \
         dom0, nested under QEMU TCG on the development machine, so absolute figures are far \
         below bare metal and only the comparisons mean something. A figure is the median of \
         its runs, with min..max and the number of runs; the runs alternate between the \
         systems compared, in one test-bed session per bench. The ratio column divides a \
         median by the baseline system's median of the same measurement.\n\n",
    );
    let mut missing = Vec::new();
    let mut body = String::new();
    for b in ORDER {
        match std::fs::read_to_string(dir.join("sections").join(format!("{b}.md"))) {
            Ok(t) => {
                let failed = t.contains("**FAILED**");
                let _ = writeln!(o, "- [{b}](#{b}){}", if failed { " (FAILED)" } else { "" });
                let _ = writeln!(body, "<a id=\"{b}\"></a>\n\n{t}");
            }
            Err(_) => missing.push(*b),
        }
    }
    if !missing.is_empty() {
        let _ = writeln!(o, "- not measured yet: {}", missing.join(", "));
    }
    o.push('\n');
    o.push_str(&body);
    let path = dir.join("report.md");
    std::fs::write(&path, o)?;
    Ok(path)
}

/// `docs/bench/`: the committed report the docs' figures come from (`cargo xtask
/// lint` checks them against it, see `figures.rs`).
pub fn docs_dir() -> PathBuf {
    workspace_root().join("docs/bench")
}

/// The charts a report links to (`![NAME chart](NAME.svg)`), in order.
fn charts(report: &str) -> Vec<&str> {
    report
        .match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &report[i + 2..];
            let name = &rest[..rest.find(')')?];
            (name.ends_with(".svg") && !name.contains(['/', ' '])).then_some(name)
        })
        .collect()
}

/// Copies `from/report.md` and the charts it links to into `to`, the report stamped
/// under its title with when, at which commit and on which machine it was published;
/// returns the copy's path. Charts in `to` that the new report does not link to are
/// removed.
pub fn publish(from: &Path, to: &Path, stamp: &Stamp) -> Result<PathBuf> {
    let src = from.join("report.md");
    let report = std::fs::read_to_string(&src).map_err(|e| {
        Error::msg(format!(
            "{}: {e} (run `cargo xtask bench` first)",
            src.display()
        ))
    })?;
    let names = charts(&report);
    for n in &names {
        if !from.join(n).is_file() {
            return Err(Error::msg(format!(
                "{} links to {n}, which is not in {}",
                src.display(),
                from.display()
            )));
        }
    }
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(to)? {
        let p = e?.path();
        let stale = p.extension().is_some_and(|x| x == "svg")
            && p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| !names.contains(&f));
        if stale {
            std::fs::remove_file(&p)?;
        }
    }
    for n in &names {
        std::fs::copy(from.join(n), to.join(n))?;
    }
    let (title, body) = report.split_once('\n').unwrap_or((&report, ""));
    let out = format!(
        "{title}\n\nPublished {} at commit `{}` on {} by `cargo xtask bench publish`, \
         from `target/bench/report.md`.\n{body}",
        stamp.date, stamp.commit, stamp.machine
    );
    let path = to.join("report.md");
    std::fs::write(&path, out)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Section {
        let mut rows = Vec::new();
        for (sys, a, b) in [
            ("Linux PVHVM", [30.0, 34.0, 29.0], [1.2, 1.1, 1.3]),
            ("Xenlet PVH", [4.0, 4.5, 3.9], [0.2, 0.25, 0.21]),
            ("Xenlet HVM <disk>", [60.0, 90.0, 75.0], [0.5, 0.4, 0.45]),
        ] {
            rows.push(Row::new(
                "xl create to first prompt",
                sys,
                a.to_vec(),
                "s",
                false,
            ));
            rows.push(Row::new(
                "dd & sync throughput",
                sys,
                b.to_vec(),
                "MB/s",
                true,
            ));
        }
        rows.push(Row::new(
            "smallest memory=",
            "Linux PVHVM",
            vec![],
            "MiB",
            false,
        ));
        rows.push(Row::new(
            "smallest memory=",
            "Xenlet PVH",
            vec![4.0],
            "MiB",
            false,
        ));
        Section {
            bench: "sample".into(),
            title: "a fixed sample for the writer's test".into(),
            command: "cargo test".into(),
            about: "Sample data.".into(),
            baseline: Some("Linux PVHVM".into()),
            rows,
            text: Some("run 1  0:20.0".into()),
            notes: vec!["a note".into()],
            failed: None,
        }
    }

    #[test]
    fn stats_and_dates() {
        let s = stats(&[3.0, 1.0, 2.0, f64::NAN]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(stats(&[1.0, 4.0]).unwrap().median, 2.5);
        assert!(stats(&[]).is_none());
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_796_320_800), "2026-12-03 18:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(tick_step(34.0, 4.0), 10.0);
        assert_eq!(tick_step(0.3, 4.0), 0.1);
        assert_eq!(num(132.5), "132");
        assert_eq!(
            (num(4.0), num(16.0)),
            ("4.00".to_string(), "16".to_string())
        );
        assert_eq!(tick_label(50.0, 50.0), "50");
        assert_eq!(tick_label(0.5, 0.5), "0.5");
        assert_eq!(tick_label(0.04, 0.02), "0.04");
        assert_eq!(num(0.045), "0.045");
    }

    #[test]
    fn markdown_table_has_medians_ranges_and_ratios() {
        let stamp = Stamp {
            date: "2026-12-03 18:00 UTC".into(),
            commit: "abc1234".into(),
            machine: "bench-host, Some CPU, 2 CPUs".into(),
        };
        let md = markdown(&sample(), &stamp);
        assert!(md.starts_with("## sample: a fixed sample"));
        assert!(md.contains(
            "Measured 2026-12-03 18:00 UTC at commit `abc1234` on bench-host, Some CPU, 2 CPUs"
        ));
        assert!(md.contains("| measurement | system | median | min..max | runs | ÷ Linux PVHVM |"));
        assert!(md.contains(
            "| xl create to first prompt (s, lower is better) | Linux PVHVM | 30 | 29..34 | 3 | 1.00 |\n\
             |  | Xenlet PVH | 4.00 | 3.90..4.50 | 3 | 0.13 |\n"
        ));
        assert!(md
            .contains("| smallest memory= (MiB, lower is better) | Linux PVHVM | - | - | 0 | - |"));
        assert!(md.contains("![sample chart](sample.svg)"));
        assert!(!md.contains("FAILED"));
        let mut f = sample();
        f.failed = Some("a run gave no figure".into());
        assert!(markdown(&f, &stamp).contains("**FAILED**: a run gave no figure."));

        // the report keeps the sections of earlier runs, in ORDER, failed ones marked
        let dir = std::env::temp_dir().join(format!("xenlet-report-md-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for b in ["net", "dd"] {
            let mut s = sample();
            s.bench = b.into();
            s.failed = (b == "net").then(|| "session died".into());
            write(&dir, &s, &stamp).unwrap();
        }
        let r = std::fs::read_to_string(dir.join("report.md")).unwrap();
        let (dd, net) = (r.find("## dd:").unwrap(), r.find("## net:").unwrap());
        assert!(dd < net);
        assert!(r.contains("- [net](#net) (FAILED)"));
        assert!(r.contains("- not measured yet: seed, boot, fs, files, router"));
        assert!(dir.join("dd.svg").is_file());

        // publishing copies the report, stamped, and its charts, and drops stale charts
        let docs = dir.join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("old.svg"), "stale").unwrap();
        let p = publish(&dir, &docs, &stamp).unwrap();
        let published = std::fs::read_to_string(p).unwrap();
        assert!(published.starts_with(
            "# Xenlet benchmark report\n\nPublished 2026-12-03 18:00 UTC at commit `abc1234` \
             on bench-host, Some CPU, 2 CPUs by `cargo xtask bench publish`"
        ));
        assert!(published.ends_with(&r[r.find('\n').unwrap()..]));
        assert_eq!(charts(&published), ["dd.svg", "net.svg"]);
        assert!(docs.join("dd.svg").is_file() && docs.join("net.svg").is_file());
        assert!(!docs.join("old.svg").exists());
        std::fs::remove_file(dir.join("net.svg")).unwrap();
        assert!(publish(&dir, &docs, &stamp).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn machine_from_cpuinfo() {
        let info = "processor\t: 0\nmodel name\t: Some CPU @ 2GHz\n\nprocessor\t: 1\nmodel name\t: Some CPU @ 2GHz\n";
        assert_eq!(cpu_model(info), ("Some CPU @ 2GHz".to_string(), 2));
        assert_eq!(cpu_model(""), ("?".to_string(), 0));
        assert!(machine().contains(" CPUs"));
    }

    /// A minimal well-formedness check: tags balance, attributes are quoted, `&` starts
    /// an entity. Returns the element names in document order.
    fn xml_elements(x: &str) -> std::result::Result<Vec<String>, String> {
        let mut stack: Vec<String> = Vec::new();
        let mut names = Vec::new();
        let mut rest = x;
        while let Some(i) = rest.find(['<', '&']) {
            let (text, tail) = rest.split_at(i);
            if text.contains('>') {
                return Err(format!("a bare '>' in text: {text:?}"));
            }
            if tail.starts_with('&') {
                let end = tail.find(';').ok_or("an '&' without ';'")?;
                let ent = &tail[1..end];
                if !["amp", "lt", "gt", "quot", "apos"].contains(&ent) {
                    return Err(format!("unknown entity &{ent};"));
                }
                rest = &tail[end + 1..];
                continue;
            }
            let end = tail.find('>').ok_or("unterminated tag")?;
            let tag = &tail[1..end];
            rest = &tail[end + 1..];
            if tag.starts_with('?') || tag.starts_with("!--") {
                continue;
            }
            if let Some(name) = tag.strip_prefix('/') {
                match stack.pop() {
                    Some(open) if open == name.trim() => continue,
                    o => return Err(format!("</{name}> closes {o:?}")),
                }
            }
            let self_closing = tag.ends_with('/');
            let body = tag.trim_end_matches('/');
            let name = body
                .split_whitespace()
                .next()
                .ok_or("empty tag")?
                .to_string();
            // attributes: name="value" pairs, values without '<' or '"'
            let mut attrs = body[name.len()..].trim();
            while !attrs.is_empty() {
                let (k, v) = attrs
                    .split_once("=\"")
                    .ok_or(format!("attribute in <{tag}>"))?;
                if k.trim().contains(char::is_whitespace) || k.trim().is_empty() {
                    return Err(format!("attribute name {k:?} in <{name}>"));
                }
                let close = v.find('"').ok_or("unterminated attribute")?;
                if v[..close].contains('<') {
                    return Err("'<' in an attribute".into());
                }
                attrs = v[close + 1..].trim_start();
            }
            names.push(name.clone());
            if !self_closing {
                stack.push(name);
            }
        }
        if !rest.trim().is_empty() || !stack.is_empty() {
            return Err(format!("unclosed: {stack:?}"));
        }
        Ok(names)
    }

    /// Chromium's binary, if installed.
    fn chromium() -> Option<PathBuf> {
        let path = std::env::var_os("PATH")?;
        [
            "chromium",
            "chromium-browser",
            "google-chrome-stable",
            "google-chrome",
        ]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
    }

    /// Runs Chromium headless with a timeout; its stdout.
    fn headless(bin: &Path, profile: &Path, args: &[String]) -> String {
        let mut child = std::process::Command::new(bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-dev-shm-usage",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start chromium");
        let mut out = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut out, &mut s);
            s
        });
        let t0 = std::time::Instant::now();
        loop {
            if child.try_wait().expect("wait").is_some() {
                break;
            }
            if t0.elapsed() > std::time::Duration::from_secs(120) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within 120 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        reader.join().unwrap_or_default()
    }

    /// The chart of fixed sample data is well-formed SVG with the series, the
    /// measurements and a bar per figure, and headless Chromium parses and renders it.
    /// Without Chromium the test is skipped with a note, unless
    /// `XENLET_REQUIRE_CHROMIUM=1` (`cargo xtask test` sets it): then it fails.
    #[test]
    fn svg_chart_renders_in_chromium() {
        let s = sample();
        let text = svg(&s);
        let names = xml_elements(&text).unwrap_or_else(|e| panic!("not well-formed: {e}"));
        assert_eq!(names[0], "svg");
        assert!(text.contains(r#"xmlns="http://www.w3.org/2000/svg""#));
        // 3 systems x 2 measurements + Xenlet's memory figure; Linux's memory has none
        assert_eq!(text.matches(r#"<rect class="bar""#).count(), 7);
        assert_eq!(text.matches(r#"class="whisker""#).count(), 7);
        assert_eq!(text.matches(r#"<text class="missing""#).count(), 1);
        for sys in ["Linux PVHVM", "Xenlet PVH", "Xenlet HVM &lt;disk&gt;"] {
            assert!(
                text.contains(&format!(r#"<g class="legend" data-series="{sys}">"#)),
                "{sys}"
            );
        }
        assert_eq!(text.matches(r#"<g class="panel""#).count(), 3);

        let dir = std::env::temp_dir().join(format!("xenlet-report-svg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("sample.svg");
        std::fs::write(&file, &text).unwrap();

        let Some(bin) = chromium() else {
            if std::env::var("XENLET_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1") {
                panic!(
                    "XENLET_REQUIRE_CHROMIUM=1 but no chromium in PATH \
                     (Debian: apt-get install chromium)"
                );
            }
            eprintln!("note: chromium not found; the SVG was not checked in a browser");
            let _ = std::fs::remove_dir_all(&dir);
            return;
        };
        let url = format!("file://{}", file.display());
        let dom = headless(
            &bin,
            &dir.join("profile"),
            &["--dump-dom".into(), url.clone()],
        );
        assert!(!dom.contains("parsererror"), "Chromium: {dom}");
        assert!(dom.contains("<svg"), "Chromium's DOM: {dom:.400}");
        for label in [
            "xl create to first prompt",
            "dd &amp; sync throughput",
            "smallest memory=",
            "Xenlet HVM &lt;disk&gt;",
            "Linux PVHVM",
            "no figure",
        ] {
            assert!(dom.contains(label), "{label} not in Chromium's DOM");
        }
        assert_eq!(dom.matches("class=\"bar\"").count(), 7);
        // and it renders: a PNG screenshot (not compared, only made)
        let png = dir.join("shot.png");
        headless(
            &bin,
            &dir.join("profile"),
            &[
                format!("--screenshot={}", png.display()),
                "--window-size=1010,700".into(),
                url,
            ],
        );
        let bytes = std::fs::read(&png).expect("chromium wrote no screenshot");
        assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 2000);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
