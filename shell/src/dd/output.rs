//! Statistics lines: the final summary and `status=progress`, as GNU prints them.

use alloc::format;
use alloc::string::String;
use core::fmt::Write;

use super::args::Status;
use super::human::{format_g, human_bytes, human_readable};
use super::stats::Stats;

/// Nanoseconds per second.
const NS_PER_S: u64 = 1_000_000_000;

/// The statistics GNU prints at the end (each line ends in `\n`): the record lines,
/// truncated records if any, and the transfer line; only the record lines with
/// `status=noxfer`; nothing with `status=none`. With `status=progress`, print
/// [`Progress::finish`] first.
pub fn summary(stats: &Stats, elapsed_ns: u64, status: Status) -> String {
    let mut s = String::new();
    if status == Status::None {
        return s;
    }
    let _ = write!(
        s,
        "{}+{} records in\n{}+{} records out\n",
        stats.full_in, stats.partial_in, stats.full_out, stats.partial_out
    );
    if stats.truncated != 0 {
        let plural = if stats.truncated == 1 { "" } else { "s" };
        let _ = writeln!(s, "{} truncated record{plural}", stats.truncated);
    }
    if status != Status::NoXfer {
        s.push_str(&transfer_line(stats.bytes_out, elapsed_ns, false));
        s.push('\n');
    }
    s
}

/// One `status=progress` line: `\r` then, e.g., `123456 bytes (123 kB, 121 KiB)
/// copied, 1 s, 123 kB/s` (whole seconds), without a newline. GNU also pads the line
/// with spaces to cover a longer previous one; [`Progress`] does that.
pub fn progress_line(bytes: u64, elapsed_ns: u64) -> String {
    let mut s = String::from("\r");
    s.push_str(&transfer_line(bytes, elapsed_ns, true));
    s
}

/// GNU's once-a-second `status=progress` output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Elapsed time at which the next line is due (GNU's `next_time`).
    next_ns: u64,
    /// Length of the last line printed, without the `\r` (GNU's `progress_len`).
    len: usize,
}

impl Progress {
    /// Nothing printed yet; the first line is due after one second.
    pub const fn new() -> Self {
        Progress {
            next_ns: NS_PER_S,
            len: 0,
        }
    }

    /// Call before each read with the bytes written so far and the time since the
    /// copy started: once a line is due, returns it (`\r`, the transfer line, and
    /// spaces to erase a longer previous line) and schedules the next one a second
    /// later, as GNU does (a slow copy catches up one line per call).
    pub fn poll(&mut self, bytes: u64, elapsed_ns: u64) -> Option<String> {
        if elapsed_ns < self.next_ns {
            return None;
        }
        self.next_ns = self.next_ns.saturating_add(NS_PER_S);
        let line = transfer_line(bytes, elapsed_ns, true);
        let mut s = String::with_capacity(line.len().max(self.len) + 1);
        s.push('\r');
        s.push_str(&line);
        for _ in line.len()..self.len {
            s.push(' ');
        }
        self.len = line.len();
        Some(s)
    }

    /// What to print before the final statistics: `\n` if a progress line is on
    /// the screen, else nothing.
    pub fn finish(&mut self) -> &'static str {
        if core::mem::take(&mut self.len) > 0 {
            "\n"
        } else {
            ""
        }
    }
}

/// GNU's `print_xfer_stats` text, without `\r` or newline.
pub(super) fn transfer_line(bytes: u64, elapsed_ns: u64, progress: bool) -> String {
    let si = human_bytes(bytes, false);
    let iec = human_bytes(bytes, true);
    let (secs, rate) = if elapsed_ns > 0 {
        // GNU: delta_s = delta_xtime / 1e9 in double.
        let delta_s = elapsed_ns as f64 / NS_PER_S as f64;
        let secs = if progress {
            format!("{delta_s:.0}")
        } else {
            format_g(delta_s)
        };
        (
            secs,
            human_readable(bytes, NS_PER_S, elapsed_ns, false) + "/s",
        )
    } else {
        (String::from("0"), String::from("Infinity B/s"))
    };
    if lacks_prefix(&si) {
        let unit = if bytes == 1 { "byte" } else { "bytes" };
        format!("{bytes} {unit} copied, {secs} s, {rate}")
    } else if lacks_prefix(&iec) {
        format!("{bytes} bytes ({si}) copied, {secs} s, {rate}")
    } else {
        format!("{bytes} bytes ({si}, {iec}) copied, {secs} s, {rate}")
    }
}

/// GNU's `abbreviation_lacks_prefix`: `"512 B"` has no SI prefix.
fn lacks_prefix(s: &str) -> bool {
    s.len() >= 2 && s.as_bytes()[s.len() - 2] == b' '
}
