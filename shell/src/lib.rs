//! Xenlet's serial-console shell: line editing, tokenizing and command dispatch.
//!
//! The shell knows nothing about the kernel: commands are a table of [`Command`]s over
//! a host type `H` the kernel supplies, and all output goes through `core::fmt::Write`.
//! That keeps the editor and the dispatcher testable on the host byte by byte.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod commands;
pub mod dd;
pub mod ddcopy;
mod editor;
pub mod files;
mod parse;
pub mod pipeline;

pub use editor::{LineEditor, LineEvent};
pub use parse::{parse_duration, parse_size, split_args, ParseError};

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

/// The prompt, as the test bed and users expect it.
pub const PROMPT: &str = "xenlet> ";

/// Why a command failed; printed as one line prefixed with the command name.
#[derive(Debug, PartialEq, Eq)]
pub enum CmdError {
    /// Wrong arguments; the shell appends the command's usage.
    Usage(String),
    /// The command ran and failed.
    Failed(String),
}

impl CmdError {
    /// A usage error with a message.
    pub fn usage(msg: impl Into<String>) -> Self {
        CmdError::Usage(msg.into())
    }
    /// A failure with a message.
    pub fn failed(msg: impl Into<String>) -> Self {
        CmdError::Failed(msg.into())
    }
}

impl From<fmt::Error> for CmdError {
    fn from(_: fmt::Error) -> Self {
        CmdError::Failed(String::from("output error"))
    }
}

/// What a command returns.
pub type CmdResult = Result<(), CmdError>;

/// One shell command over host state `H`.
pub struct Command<H: ?Sized> {
    /// Name typed at the prompt.
    pub name: &'static str,
    /// Argument synopsis, e.g. `"[-a] PATH"`.
    pub usage: &'static str,
    /// One-line description for `help`.
    pub help: &'static str,
    /// The implementation: host, arguments after the name, output.
    pub run: fn(&mut H, &[&str], &mut dyn Write) -> CmdResult,
}

/// What the shell needs from its host for `>`/`>>` and `time`.
pub struct Hooks<H: ?Sized> {
    /// Writes a command's output to a file: host, path, append, text.
    pub redirect: fn(&mut H, &str, bool, &str) -> Result<(), String>,
    /// (monotonic nanoseconds, nanoseconds the CPU spent running), for `time`.
    pub times: fn() -> (u64, u64),
}

/// The shell: a line editor plus a command table.
pub struct Shell<H: ?Sized + 'static> {
    editor: LineEditor,
    commands: &'static [Command<H>],
    hooks: Option<&'static Hooks<H>>,
}

impl<H: ?Sized + 'static> Shell<H> {
    /// A shell over `commands`.
    pub fn new(commands: &'static [Command<H>]) -> Self {
        Shell {
            editor: LineEditor::new(),
            commands,
            hooks: None,
        }
    }

    /// A shell over `commands` with redirection and `time` served by `hooks`.
    pub fn with_hooks(commands: &'static [Command<H>], hooks: &'static Hooks<H>) -> Self {
        Shell {
            editor: LineEditor::new(),
            commands,
            hooks: Some(hooks),
        }
    }

    /// The command table.
    pub fn commands(&self) -> &'static [Command<H>] {
        self.commands
    }

    /// Prints the prompt.
    pub fn prompt(&self, out: &mut dyn Write) {
        let _ = out.write_str(PROMPT);
    }

    /// Feeds one input byte: echoes, edits, and on Enter runs the line and prints the
    /// next prompt.
    pub fn feed(&mut self, host: &mut H, byte: u8, out: &mut dyn Write) {
        match self.editor.feed(byte, out) {
            None => {}
            Some(LineEvent::Cancel) => self.prompt(out),
            Some(LineEvent::Submit { overflowed }) => {
                if overflowed {
                    let _ = writeln!(
                        out,
                        "xenlet: line too long (at most {} characters); ignored",
                        LineEditor::CAPACITY
                    );
                } else {
                    let line = String::from(self.editor.line());
                    self.run_line(host, &line, out);
                }
                self.editor.clear();
                self.prompt(out);
            }
        }
    }

    /// Runs one command line (without editing), printing its output and any error:
    /// `time`, pipes into filters and `>`/`>>` are handled here.
    pub fn run_line(&self, host: &mut H, line: &str, out: &mut dyn Write) {
        let mut words = match split_args(line) {
            Ok(w) => w,
            Err(e) => {
                let _ = writeln!(out, "xenlet: {e}");
                return;
            }
        };
        if words.first().map(String::as_str) == Some("time") {
            let Some(h) = self.hooks else {
                let _ = writeln!(out, "xenlet: time: not available");
                return;
            };
            words.remove(0);
            let (t0, c0) = (h.times)();
            self.run_words(host, words, out);
            let (t1, c1) = (h.times)();
            let _ = out.write_str(&pipeline::time_report(
                t1.saturating_sub(t0),
                0,
                c1.saturating_sub(c0),
            ));
            return;
        }
        self.run_words(host, words, out);
    }

    fn run_words(&self, host: &mut H, words: Vec<String>, out: &mut dyn Write) {
        let line = match pipeline::parse(words) {
            Ok(l) => l,
            Err(e) => {
                let _ = writeln!(out, "xenlet: {e}");
                return;
            }
        };
        if line.command.is_empty() {
            return;
        }
        if line.filters.is_empty() && line.redirect.is_none() {
            if let Some(err) = self.dispatch(host, &line.command, out) {
                let _ = writeln!(out, "{err}");
            }
            return;
        }
        let mut cap = Captured::default();
        if let Some(err) = self.dispatch(host, &line.command, &mut cap) {
            let _ = writeln!(out, "{err}");
        }
        if cap.overflowed {
            let _ = writeln!(
                out,
                "xenlet: output too large for a pipe or redirect (more than {} KiB, or no memory); nothing passed on",
                PIPE_MAX / 1024
            );
            return;
        }
        let mut buf = cap.text;
        for f in &line.filters {
            match pipeline::filter(f, &buf) {
                Ok(b) => buf = b,
                Err(e) => {
                    let _ = writeln!(out, "xenlet: {e}");
                    return;
                }
            }
        }
        match (line.redirect, self.hooks) {
            (None, _) => {
                let _ = out.write_str(&buf);
            }
            (Some((path, append)), Some(h)) => {
                if let Err(e) = (h.redirect)(host, &path, append, &buf) {
                    let _ = writeln!(out, "xenlet: {path}: {e}");
                }
            }
            (Some(_), None) => {
                let _ = writeln!(out, "xenlet: redirection not available");
            }
        }
    }

    /// Runs one command; returns the error line to print, if any.
    fn dispatch(&self, host: &mut H, words: &[String], out: &mut dyn Write) -> Option<String> {
        let (name, rest) = words.split_first()?;
        let mut args: Vec<&str> = rest.iter().map(String::as_str).collect();
        // OpenWrt's init scripts: `/etc/init.d/NAME ACTION` is `service NAME ACTION`
        let init = name
            .strip_prefix("/etc/init.d/")
            .filter(|s| !s.is_empty() && !s.contains('/'));
        let name = match init {
            Some(service) if self.commands.iter().any(|c| c.name == "service") => {
                args.insert(0, service);
                "service"
            }
            _ => name.as_str(),
        };
        if name == "help" {
            let _ = self.help(&args, out);
            return None;
        }
        let Some(cmd) = self.commands.iter().find(|c| c.name == name) else {
            return Some(alloc::format!(
                "xenlet: {name}: command not found (try 'help')"
            ));
        };
        match (cmd.run)(host, &args, out) {
            Ok(()) => None,
            Err(CmdError::Usage(msg)) => Some(alloc::format!(
                "{}: {msg} (usage: {} {})",
                cmd.name,
                cmd.name,
                cmd.usage
            )),
            // Already reported line by line (a failing operand of several).
            Err(CmdError::Failed(msg)) if msg.is_empty() => None,
            Err(CmdError::Failed(msg)) => Some(alloc::format!("{}: {msg}", cmd.name)),
        }
    }

    fn help(&self, args: &[&str], out: &mut dyn Write) -> fmt::Result {
        match args {
            [] => {
                writeln!(out, "help       list commands, or show one: help [COMMAND]")?;
                for c in self.commands {
                    writeln!(out, "{:<10} {}", c.name, c.help)?;
                }
                Ok(())
            }
            [name] => match self.commands.iter().find(|c| c.name == *name) {
                Some(c) => writeln!(out, "usage: {} {}\n{}", c.name, c.usage, c.help),
                None => writeln!(out, "help: no such command '{name}'"),
            },
            _ => writeln!(out, "help: too many arguments (usage: help [COMMAND])"),
        }
    }
}

/// `echo [-n] WORDS…`: prints its arguments, as the shell builtin does.
pub fn echo<H: ?Sized>(_: &mut H, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (newline, words) = match args.first() {
        Some(&"-n") => (false, &args[1..]),
        _ => (true, args),
    };
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.write_char(' ')?;
        }
        out.write_str(w)?;
    }
    if newline {
        out.write_char('\n')?;
    }
    Ok(())
}

/// Fails with a usage error when any argument is given.
pub fn no_args(args: &[&str]) -> CmdResult {
    match args.first() {
        None => Ok(()),
        Some(a) => Err(CmdError::usage(alloc::format!("extra operand '{a}'"))),
    }
}

/// Most bytes of a command's output kept for a pipe or a redirect.
pub const PIPE_MAX: usize = 1 << 20;

/// A command's output for a pipe or a redirect: held whole (the filters and the
/// file write take it at once), so bounded ([`PIPE_MAX`]) and grown fallibly: past
/// either, the command's writes fail and nothing is passed on.
#[derive(Default)]
struct Captured {
    text: String,
    overflowed: bool,
}

impl Write for Captured {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        if self.overflowed
            || self.text.len() + s.len() > PIPE_MAX
            || self.text.try_reserve(s.len()).is_err()
        {
            self.overflowed = true;
            self.text = String::new();
            return Err(core::fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Host {
        count: u32,
        file: String,
    }

    fn count(h: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
        no_args(args)?;
        h.count += 1;
        writeln!(out, "count={}", h.count)?;
        Ok(())
    }

    /// 6.4 MB of output.
    fn flood(_: &mut Host, _: &[&str], out: &mut dyn Write) -> CmdResult {
        for i in 0..100_000u32 {
            writeln!(out, "{i:063}")?;
        }
        Ok(())
    }

    fn fails(_: &mut Host, _: &[&str], _: &mut dyn Write) -> CmdResult {
        Err(CmdError::failed("it broke"))
    }

    static COMMANDS: &[Command<Host>] = &[
        Command {
            name: "echo",
            usage: "[-n] [WORD]...",
            help: "print words",
            run: echo,
        },
        Command {
            name: "count",
            usage: "",
            help: "count calls",
            run: count,
        },
        Command {
            name: "flood",
            usage: "",
            help: "too much output",
            run: flood,
        },
        Command {
            name: "fails",
            usage: "",
            help: "always fails",
            run: fails,
        },
        Command {
            name: "service",
            usage: "NAME ACTION",
            help: "init scripts",
            run: echo,
        },
    ];

    fn type_in(sh: &mut Shell<Host>, host: &mut Host, input: &[u8]) -> String {
        let mut out = String::new();
        for &b in input {
            sh.feed(host, b, &mut out);
        }
        out
    }

    static HOOKS: Hooks<Host> = Hooks {
        redirect: |h, path, append, text| {
            if path == "/full" {
                return Err(String::from("No space left on device"));
            }
            h.count += 100;
            if !append {
                h.file.clear();
            }
            h.file.push_str(path);
            h.file.push(':');
            h.file.push_str(text);
            Ok(())
        },
        times: || (2_000_000_000, 1_000_000),
    };

    #[test]
    fn an_init_script_path_runs_the_service_command() {
        let sh = Shell::new(COMMANDS);
        let mut h = Host::default();
        let mut out = String::new();
        sh.run_line(&mut h, "/etc/init.d/network reload", &mut out);
        assert_eq!(out, "network reload\n");
        out.clear();
        sh.run_line(&mut h, "/etc/init.d/", &mut out);
        assert_eq!(
            out,
            "xenlet: /etc/init.d/: command not found (try 'help')\n"
        );
        out.clear();
        sh.run_line(&mut h, "/etc/init.d/a/b x", &mut out);
        assert_eq!(
            out,
            "xenlet: /etc/init.d/a/b: command not found (try 'help')\n"
        );
    }

    #[test]
    fn pipes_redirections_and_time() {
        let sh = Shell::with_hooks(COMMANDS, &HOOKS);
        let mut h = Host::default();
        let mut out = String::new();
        sh.run_line(&mut h, "echo one two | grep two", &mut out);
        assert_eq!(out, "one two\n");
        out.clear();
        sh.run_line(&mut h, "echo hi > /f", &mut out);
        assert_eq!((out.as_str(), h.file.as_str()), ("", "/f:hi\n"));
        sh.run_line(&mut h, "echo more >> /f", &mut out);
        assert_eq!(h.file, "/f:hi\n/f:more\n");
        sh.run_line(&mut h, "echo x > /full", &mut out);
        assert_eq!(out, "xenlet: /full: No space left on device\n");
        out.clear();
        // Errors go to the terminal, not into the pipe or the file.
        sh.run_line(&mut h, "fails > /f", &mut out);
        assert_eq!(out, "fails: it broke\n");
        assert_eq!(h.file, "/f:");
        out.clear();
        sh.run_line(&mut h, "nope | grep x", &mut out);
        assert_eq!(out, "xenlet: nope: command not found (try 'help')\n");
        out.clear();
        sh.run_line(&mut h, "time echo a", &mut out);
        assert_eq!(out, "a\n\nreal\t0m0.000s\nuser\t0m0.000s\nsys\t0m0.000s\n");
        out.clear();
        sh.run_line(&mut h, "echo a | sort", &mut out);
        assert_eq!(out, "xenlet: sort: not a filter (grep, head, tail, wc)\n");
        // Output past PIPE_MAX is not passed on, and the shell says so.
        out.clear();
        let before = h.file.clone();
        for line in ["flood | grep 1", "flood > /f"] {
            sh.run_line(&mut h, line, &mut out);
            assert!(
                out.ends_with("xenlet: output too large for a pipe or redirect (more than 1024 KiB, or no memory); nothing passed on\n"),
                "{line}: {}",
                &out[out.len().saturating_sub(200)..]
            );
            assert!(out.len() < 200, "{line}: nothing passed on");
            out.clear();
        }
        assert_eq!(h.file, before);
        // Without hooks, redirection is refused rather than printed.
        out.clear();
        Shell::new(COMMANDS).run_line(&mut h, "echo a > /f", &mut out);
        assert_eq!(out, "xenlet: redirection not available\n");
    }

    #[test]
    fn runs_commands_and_reprompts() {
        let mut sh = Shell::new(COMMANDS);
        let mut h = Host::default();
        let out = type_in(&mut sh, &mut h, b"echo hello   world\r");
        assert_eq!(out, "echo hello   world\nhello world\nxenlet> ");
        let out = type_in(&mut sh, &mut h, b"count\r\ncount\n");
        assert!(out.contains("count=1\n"));
        assert!(out.contains("count=2\n"));
        assert_eq!(out.matches(PROMPT).count(), 2, "CRLF is one Enter: {out:?}");
    }

    #[test]
    fn errors_are_one_line_and_the_shell_goes_on() {
        let mut sh = Shell::new(COMMANDS);
        let mut h = Host::default();
        let out = type_in(&mut sh, &mut h, b"frobnicate now\r");
        assert!(out.contains("xenlet: frobnicate: command not found (try 'help')\n"));
        let out = type_in(&mut sh, &mut h, b"count extra\r");
        assert!(out.contains("count: extra operand 'extra' (usage: count )\n"));
        assert_eq!(h.count, 0);
        let out = type_in(&mut sh, &mut h, b"fails\r");
        assert!(out.contains("fails: it broke\n"));
        let out = type_in(&mut sh, &mut h, b"echo \"unterminated\r");
        assert!(out.contains("xenlet: unterminated quote\n"));
        let out = type_in(&mut sh, &mut h, b"count\r");
        assert!(out.contains("count=1"));
    }

    #[test]
    fn help_lists_and_describes() {
        let mut sh = Shell::new(COMMANDS);
        let mut h = Host::default();
        let out = type_in(&mut sh, &mut h, b"help\r");
        for c in ["help", "echo", "count", "fails"] {
            assert!(out.contains(c), "{c} missing from {out}");
        }
        let out = type_in(&mut sh, &mut h, b"help echo\r");
        assert!(out.contains("usage: echo [-n] [WORD]..."));
        let out = type_in(&mut sh, &mut h, b"help nope\r");
        assert!(out.contains("help: no such command 'nope'"));
    }

    #[test]
    fn ctrl_c_cancels_and_overlong_lines_are_refused() {
        let mut sh = Shell::new(COMMANDS);
        let mut h = Host::default();
        let out = type_in(&mut sh, &mut h, b"count\x03");
        assert!(out.ends_with("^C\nxenlet> "));
        assert_eq!(h.count, 0);
        let mut long = vec![b'a'; LineEditor::CAPACITY + 10];
        long.push(b'\r');
        let out = type_in(&mut sh, &mut h, &long);
        assert!(out.contains("line too long"));
        let out = type_in(&mut sh, &mut h, b"count\r");
        assert!(out.contains("count=1"));
    }

    #[test]
    fn echo_n_and_empty_lines() {
        let mut sh = Shell::new(COMMANDS);
        let mut h = Host::default();
        let out = type_in(&mut sh, &mut h, b"echo -n a b\r");
        assert_eq!(out, "echo -n a b\na bxenlet> ");
        let out = type_in(&mut sh, &mut h, b"\r   \r");
        assert_eq!(out, "\nxenlet>    \nxenlet> ");
    }
}
