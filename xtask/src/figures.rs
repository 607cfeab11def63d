//! The lint check that the docs' figures come from the committed bench report.
//!
//! Checked: every number in the body cells of the Markdown tables of
//! `docs/benchmarks.md` and of the `## Figures` section of `README.md`, except the
//! first column (the measurement's name: "`dd` 8 MiB", "5,000 small files"), the
//! header row, the `---` row and code spans (`` `memory=` ``). A number is a decimal
//! (`726`, `0.52`, `3801`, `5,000`, the `2.52` of `2.52×`) or a time in m:ss
//! (`0:19.7`, `2:15.5`); a digit run that starts inside a word (`lan1`, `p99`,
//! `ext4`) is not one. A figure passes when `docs/bench/report.md` holds the same
//! value of the same kind anywhere: decimals compare by value (`3.4` matches the
//! report's `3.40`), times by their seconds. Units are not compared, and prose outside
//! the tables (dates, commits, goals, ratios in sentences) is not checked.

use std::collections::HashSet;

/// One number found in a text.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Figure {
    /// A decimal, its value.
    Number(f64),
    /// m:ss(.s), in seconds.
    Time(f64),
}

impl Figure {
    /// The value in a form that can be hashed: thousandths.
    fn key(self) -> (bool, i64) {
        match self {
            Figure::Number(v) => (false, (v * 1000.0).round() as i64),
            Figure::Time(v) => (true, (v * 1000.0).round() as i64),
        }
    }
}

/// The numbers of `text` with their spelling, left to right.
fn numbers(text: &str) -> Vec<(String, Figure)> {
    let b = text.as_bytes();
    let digits = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'));
        if !starts {
            // skip the rest of a word or number so that `lan1`, `x86` are not numbers
            if b[i].is_ascii_alphanumeric() || b[i] == b'_' {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            } else {
                i += 1;
            }
            continue;
        }
        let start = i;
        let mut end = digits(i);
        // thousands: `5,000` (exactly three digits, then no digit)
        while end + 4 <= b.len()
            && b[end] == b','
            && b[end + 1..end + 4].iter().all(u8::is_ascii_digit)
            && b.get(end + 4).is_none_or(|c| !c.is_ascii_digit())
        {
            end += 4;
        }
        let mut time = false;
        // m:ss
        if end + 3 <= b.len()
            && b[end] == b':'
            && b[end + 1..end + 3].iter().all(u8::is_ascii_digit)
            && b.get(end + 3).is_none_or(|c| !c.is_ascii_digit())
        {
            time = true;
            end += 3;
        }
        // a decimal part (not the `..` of a range)
        if end + 1 < b.len() && b[end] == b'.' && b[end + 1].is_ascii_digit() {
            end = digits(end + 1);
        }
        let spelled = &text[start..end];
        let figure = if time {
            let (m, s) = spelled.split_once(':').unwrap_or(("0", spelled));
            m.parse::<f64>()
                .ok()
                .zip(s.parse::<f64>().ok())
                .map(|(m, s)| Figure::Time(m * 60.0 + s))
        } else {
            spelled.replace(',', "").parse().ok().map(Figure::Number)
        };
        if let Some(f) = figure {
            out.push((spelled.to_string(), f));
        }
        i = end;
    }
    out
}

/// `text` without its code spans.
fn without_code(text: &str) -> String {
    text.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, s)| s)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The figures to check in a Markdown text: (line number, the cell, the number's
/// spelling, its value) for every number in a table body cell after the first column.
fn table_figures(text: &str) -> Vec<(usize, String, String, Figure)> {
    let mut out = Vec::new();
    let mut in_table = false;
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if !l.starts_with('|') {
            in_table = false;
            continue;
        }
        if !in_table {
            // the header row
            in_table = true;
            continue;
        }
        let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
        if cells.iter().all(|c| c.chars().all(|ch| "-: ".contains(ch))) {
            continue;
        }
        for cell in cells.iter().skip(1) {
            for (spelled, f) in numbers(&without_code(cell)) {
                out.push((n + 1, cell.to_string(), spelled, f));
            }
        }
    }
    out
}

/// The part of `readme` under its `## Figures` heading, with the line number its
/// first line has in `readme`.
fn figures_section(readme: &str) -> (usize, String) {
    let mut start = None;
    let mut lines = Vec::new();
    for (n, l) in readme.lines().enumerate() {
        match start {
            None if l.trim() == "## Figures" => start = Some(n),
            None => {}
            Some(_) if l.starts_with("## ") => break,
            Some(_) => lines.push(l),
        }
    }
    (start.map_or(0, |s| s + 1), lines.join("\n"))
}

/// The figures of `docs` (name, text) not in `report`: `name:line: ...` each.
pub fn check(docs: &[(&str, &str)], report: &str) -> Vec<String> {
    let have: HashSet<(bool, i64)> = numbers(report).into_iter().map(|(_, f)| f.key()).collect();
    let mut missing = Vec::new();
    for (name, text) in docs {
        let (offset, body) = if name.ends_with("README.md") {
            figures_section(text)
        } else {
            (0, text.to_string())
        };
        for (line, cell, spelled, f) in table_figures(&body) {
            if !have.contains(&f.key()) {
                missing.push(format!(
                    "{name}:{}: {spelled} (in `{cell}`) is not in docs/bench/report.md",
                    line + offset
                ));
            }
        }
    }
    missing
}

/// The files whose figures are checked, relative to the workspace root.
pub const DOCS: &[&str] = &["README.md", "docs/benchmarks.md"];

/// The lint step: every figure of [`DOCS`] is in `docs/bench/report.md`.
pub fn lint() -> crate::util::Result<()> {
    let root = crate::util::workspace_root();
    let read = |p: &str| {
        std::fs::read_to_string(root.join(p))
            .map_err(|e| crate::util::Error::msg(format!("{p}: {e}")))
    };
    let report = read("docs/bench/report.md")?;
    let texts = DOCS
        .iter()
        .map(|p| read(p).map(|t| (*p, t)))
        .collect::<crate::util::Result<Vec<_>>>()?;
    let docs: Vec<(&str, &str)> = texts.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let missing = check(&docs, &report);
    let checked: usize = docs
        .iter()
        .map(|(p, t)| {
            let body = if p.ends_with("README.md") {
                figures_section(t).1
            } else {
                t.to_string()
            };
            table_figures(&body).len()
        })
        .sum();
    if missing.is_empty() {
        println!(
            "figures: {checked} in the tables of {} all in docs/bench/report.md",
            DOCS.join(" and ")
        );
        return Ok(());
    }
    for m in &missing {
        eprintln!("{m}");
    }
    Err(crate::util::Error::msg(format!(
        "{} figure(s) in the docs are not in docs/bench/report.md (copy them from the \
         report `cargo xtask bench publish` wrote)",
        missing.len()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelled(text: &str) -> Vec<String> {
        numbers(text).into_iter().map(|(s, _)| s).collect()
    }

    #[test]
    fn numbers_times_and_words() {
        assert_eq!(
            spelled("726 (667..729), 1.01× and 0:19.7 / 2:15.5, lan1 p99 x86_64 5,000 files"),
            ["726", "667", "729", "1.01", "0:19.7", "2:15.5", "5,000"]
        );
        assert_eq!(
            numbers("0:20 1:54-3:08 3.40 12,5")
                .into_iter()
                .map(|(_, f)| f)
                .collect::<Vec<_>>(),
            [
                Figure::Time(20.0),
                Figure::Time(114.0),
                Figure::Time(188.0),
                Figure::Number(3.4),
                Figure::Number(12.0),
                Figure::Number(5.0)
            ]
        );
        assert_eq!(without_code("8 MiB (`netfront: eth0`)"), "8 MiB ( )");
    }

    const README: &str = "\
# X

| not | checked |
| --- | --- |
| 1 | 999 |

## Figures

| measurement | Xenlet | Linux |
| --- | --: | --: |
| `dd` 8 MiB, 5 s | 3.4 s PVH, `memory=77` | 0:44.7 |
| boot | 726 / 583 Mbit/s | 2.52× |

## Next

| a | b |
| --- | --- |
| 1 | 888 |
";

    #[test]
    fn figures_of_the_readme_section_only() {
        let (offset, body) = figures_section(README);
        let found: Vec<(usize, String)> = table_figures(&body)
            .into_iter()
            .map(|(l, _, s, _)| (l + offset, s))
            .collect();
        assert_eq!(
            found,
            [
                (11, "3.4".into()),
                (11, "0:44.7".into()),
                (12, "726".into()),
                (12, "583".into()),
                (12, "2.52".into())
            ]
        );
    }

    #[test]
    fn check_names_the_line_of_a_missing_figure() {
        let report = "| x | 3.40 | 726 | 583 | 2.52 | 0:44.70 |";
        assert!(check(&[("README.md", README)], report).is_empty());
        let report = "| x | 3.40 | 726 | 2.52 | 44.7 s |";
        assert_eq!(
            check(&[("README.md", README)], report),
            [
                "README.md:11: 0:44.7 (in `0:44.7`) is not in docs/bench/report.md",
                "README.md:12: 583 (in `726 / 583 Mbit/s`) is not in docs/bench/report.md"
            ]
        );
        // a doc other than the README: every table, the first column skipped
        let bench = "text 12345\n\n| row 42 | a |\n|---|---|\n| ping 7 | 1.5 ms |\n";
        assert_eq!(
            check(&[("docs/benchmarks.md", bench)], "1.5"),
            Vec::<String>::new()
        );
        assert_eq!(
            check(&[("docs/benchmarks.md", bench)], "15"),
            ["docs/benchmarks.md:5: 1.5 (in `1.5 ms`) is not in docs/bench/report.md"]
        );
    }

    /// The committed docs pass (what `cargo xtask lint` runs).
    #[test]
    fn committed_docs_are_in_the_committed_report() {
        lint().unwrap();
    }
}
