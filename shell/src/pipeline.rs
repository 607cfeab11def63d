//! What the shell does around a command: `CMD | FILTER | ...` (filters: `grep [-i]
//! [-v] [-c] PATTERN`, `head [-n N]`, `tail [-n N]`, `wc [-l]`), `CMD > FILE` and
//! `CMD >> FILE`, and `time CMD`. Commands run one at a time; a pipe hands the whole
//! output of one stage to the next.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// A parsed command line.
#[derive(Debug, PartialEq, Eq)]
pub struct Line {
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Filters after `|`, each with its arguments.
    pub filters: Vec<Vec<String>>,
    /// `> FILE` (false) or `>> FILE` (true).
    pub redirect: Option<(String, bool)>,
}

/// Splits words into command, filters and redirection. `>`, `>>` and `|` are
/// operators as separate words or glued to a word's front (`>FILE`, `>>FILE`).
pub fn parse(words: Vec<String>) -> Result<Line, String> {
    let mut stages: Vec<Vec<String>> = alloc::vec![Vec::new()];
    let mut redirect = None;
    let mut it = words.into_iter().peekable();
    while let Some(w) = it.next() {
        if w == "|" {
            if stages.last().is_some_and(Vec::is_empty) || redirect.is_some() {
                return Err(String::from("syntax error near unexpected token '|'"));
            }
            stages.push(Vec::new());
        } else if let Some(rest) = w.strip_prefix('>') {
            let (append, rest) = match rest.strip_prefix('>') {
                Some(r) => (true, r),
                None => (false, rest),
            };
            let target = if rest.is_empty() {
                it.next().filter(|t| t != "|" && !t.starts_with('>'))
            } else {
                Some(String::from(rest))
            };
            let Some(t) = target else {
                return Err(String::from("syntax error near unexpected token 'newline'"));
            };
            if redirect.is_some() {
                return Err(String::from("only one redirection per line"));
            }
            redirect = Some((t, append));
        } else if redirect.is_some() {
            return Err(format!("unexpected word '{w}' after the redirection"));
        } else if let Some(s) = stages.last_mut() {
            s.push(w);
        }
    }
    if stages.len() > 1 && stages.last().is_some_and(Vec::is_empty) {
        return Err(String::from("syntax error: nothing after '|'"));
    }
    let mut stages = stages.into_iter();
    let command = stages.next().unwrap_or_default();
    if command.is_empty() && redirect.is_some() {
        return Err(String::from("syntax error: redirection without a command"));
    }
    Ok(Line {
        command,
        filters: stages.collect(),
        redirect,
    })
}

fn number(s: &str, what: &str) -> Result<usize, String> {
    s.parse()
        .map_err(|_| format!("{what}: invalid number of lines: '{s}'"))
}

/// Runs one filter over `input`.
pub fn filter(args: &[String], input: &str) -> Result<String, String> {
    let Some((name, rest)) = args.split_first() else {
        return Err(String::from("empty filter"));
    };
    let lines = input.lines();
    let mut out = String::new();
    match name.as_str() {
        "grep" => {
            let (mut icase, mut invert, mut count) = (false, false, false);
            let mut pattern = None;
            for a in rest {
                match a.as_str() {
                    "-i" => icase = true,
                    "-v" => invert = true,
                    "-c" => count = true,
                    s if s.starts_with('-') && s.len() > 1 && pattern.is_none() => {
                        return Err(format!("grep: invalid option -- '{}'", &s[1..]))
                    }
                    _ if pattern.is_some() => {
                        return Err(String::from("grep: reads only its input (one PATTERN)"))
                    }
                    _ => pattern = Some(a.clone()),
                }
            }
            let Some(p) = pattern else {
                return Err(String::from("usage: grep [-i] [-v] [-c] PATTERN"));
            };
            let m = Matcher::new(&p, icase);
            let mut n = 0;
            for l in lines {
                if m.matches(l) != invert {
                    n += 1;
                    if !count {
                        out.push_str(l);
                        out.push('\n');
                    }
                }
            }
            if count {
                out = format!("{n}\n");
            }
        }
        "head" | "tail" => {
            let n = match rest.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                [] => 10,
                ["-n", n] => number(n, name)?,
                [n] if n.starts_with('-') => number(&n[1..], name)?,
                _ => return Err(format!("usage: {name} [-n N]")),
            };
            let all: Vec<&str> = lines.collect();
            let pick = if name == "head" {
                &all[..n.min(all.len())]
            } else {
                &all[all.len().saturating_sub(n)..]
            };
            for l in pick {
                out.push_str(l);
                out.push('\n');
            }
        }
        "wc" => match rest.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["-l"] => out = format!("{}\n", lines.count()),
            [] => {
                out = format!(
                    "{:>7} {:>7} {:>7}\n",
                    input.lines().count(),
                    input.split_whitespace().count(),
                    input.len()
                )
            }
            _ => return Err(String::from("usage: wc [-l]")),
        },
        other => return Err(format!("{other}: not a filter (grep, head, tail, wc)")),
    }
    Ok(out)
}

/// grep's patterns: a fixed string, with `^` and `$` anchors and `.` matching any
/// character (the part of basic regular expressions that log searches use).
struct Matcher {
    pat: Vec<char>,
    start: bool,
    end: bool,
    icase: bool,
}

impl Matcher {
    fn new(p: &str, icase: bool) -> Self {
        let start = p.starts_with('^');
        let body = p.strip_prefix('^').unwrap_or(p);
        let end = body.ends_with('$') && !body.ends_with("\\$");
        let body = if end { &body[..body.len() - 1] } else { body };
        let fold = |c: char| if icase { c.to_ascii_lowercase() } else { c };
        Matcher {
            pat: body.chars().map(fold).collect(),
            start,
            end,
            icase,
        }
    }

    fn at(&self, text: &[char], i: usize) -> bool {
        text.len() >= i + self.pat.len()
            && self
                .pat
                .iter()
                .zip(&text[i..])
                .all(|(p, t)| *p == '.' || *p == *t)
            && (!self.end || i + self.pat.len() == text.len())
    }

    fn matches(&self, line: &str) -> bool {
        let text: Vec<char> = line
            .chars()
            .map(|c| {
                if self.icase {
                    c.to_ascii_lowercase()
                } else {
                    c
                }
            })
            .collect();
        if self.start {
            return self.at(&text, 0);
        }
        (0..=text.len()).any(|i| self.at(&text, i))
    }
}

/// bash's `time` report: real, user, sys in `XmY.ZZZs`.
pub fn time_report(real_ns: u64, user_ns: u64, sys_ns: u64) -> String {
    let f = |ns: u64| {
        let ms = ns / 1_000_000;
        format!("{}m{}.{:03}s", ms / 60_000, ms / 1000 % 60, ms % 1000)
    };
    format!(
        "\nreal\t{}\nuser\t{}\nsys\t{}\n",
        f(real_ns),
        f(user_ns),
        f(sys_ns)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        crate::split_args(s).unwrap()
    }

    #[test]
    fn parses_pipes_and_redirections() {
        let l = parse(words("dmesg | grep -i front | head -n 2")).unwrap();
        assert_eq!(l.command, ["dmesg"]);
        assert_eq!(
            l.filters,
            [
                alloc::vec!["grep", "-i", "front"],
                alloc::vec!["head", "-n", "2"]
            ]
        );
        let l = parse(words("echo hi >> /tmp/x")).unwrap();
        assert_eq!(l.redirect, Some((String::from("/tmp/x"), true)));
        let l = parse(words("echo hi >/tmp/x")).unwrap();
        assert_eq!(l.redirect, Some((String::from("/tmp/x"), false)));
        assert!(parse(words("echo hi >")).is_err());
        assert!(parse(words("| grep x")).is_err());
        assert!(parse(words("ls |")).is_err());
        assert!(parse(words("echo > a b")).is_err());
        assert!(parse(words("> a")).is_err());
        // Quoted operators are words (split_args keeps no quotes, so "a>b" stays one word).
        assert_eq!(parse(words("echo a>b")).unwrap().command, ["echo", "a>b"]);
    }

    #[test]
    fn filters() {
        let text = "blkfront: xvda\nnetfront: eth0\nclock: pvclock\nNetfront: eth1\n";
        let g = |a: &str| filter(&words(a), text).unwrap();
        assert_eq!(
            g("grep front"),
            "blkfront: xvda\nnetfront: eth0\nNetfront: eth1\n"
        );
        assert_eq!(g("grep -v front"), "clock: pvclock\n");
        assert_eq!(g("grep -c -i netfront"), "2\n");
        assert_eq!(g("grep ^net"), "netfront: eth0\n");
        assert_eq!(g("grep eth.$"), "netfront: eth0\nNetfront: eth1\n");
        assert_eq!(g("head -n 1"), "blkfront: xvda\n");
        assert_eq!(g("tail -1"), "Netfront: eth1\n");
        assert_eq!(g("wc -l"), "4\n");
        assert!(filter(&words("sort"), text).is_err());
        assert!(filter(&words("grep"), text).is_err());
        assert!(filter(&words("head -n x"), text).is_err());
    }

    #[test]
    fn time_format_is_bash_s() {
        assert_eq!(
            time_report(83_456_000_000, 0, 1_500_000),
            "\nreal\t1m23.456s\nuser\t0m0.000s\nsys\t0m0.001s\n"
        );
    }
}
