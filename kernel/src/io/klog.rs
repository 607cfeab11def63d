//! The kernel message log behind `dmesg`: every line the kernel prints with
//! `println!` (the boot report, device and shutdown messages; not command output),
//! kept in a fixed ring with its time since boot, `[    1.234567] ` as Linux prints
//! it. The ring never allocates and its writer never waits: a line that finds the
//! ring busy (an interrupt during a write) is counted and left out.

/// Prints to the console.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => {{
        let _ = core::fmt::Write::write_fmt(&mut $crate::io::klog::LogWriter, format_args!($($arg)*));
    }};
}

/// Prints a line to the console.
#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => {{
        let _ = core::fmt::Write::write_fmt(&mut $crate::io::klog::LogWriter, format_args!("{}\n", format_args!($($arg)*)));
    }};
}

#[cfg(target_os = "none")]
pub use global::{dropped, log_only, read_log, LogWriter};

#[cfg(target_os = "none")]
mod global {
    use super::{LogRing, LOG_BYTES};
    use core::fmt::{self, Write};
    use core::sync::atomic::{AtomicU64, Ordering};
    use spin::Mutex;

    static KLOG: Mutex<LogRing<LOG_BYTES>> = Mutex::new(LogRing::new());
    static DROPPED: AtomicU64 = AtomicU64::new(0);

    /// Messages left out of the log because it was busy.
    pub fn dropped() -> u64 {
        DROPPED.load(Ordering::Relaxed)
    }

    /// Calls `f` with the kernel log's text, oldest first.
    pub fn read_log(f: impl FnMut(&[u8])) {
        x86_64::instructions::interrupts::without_interrupts(|| KLOG.lock().read(f));
    }

    /// Records a line in the log without printing it (a command printed it, or
    /// prints nothing on success, as `mount` does).
    pub fn log_only(line: &str) {
        let now = crate::time::clock::now().as_nanos();
        x86_64::instructions::interrupts::without_interrupts(|| {
            if let Some(mut log) = KLOG.try_lock() {
                log.write(now, line.as_bytes());
                log.write(now, b"\n");
            }
        });
    }

    /// `fmt::Write` for kernel messages (`println!`): the consoles and the `dmesg` ring.
    pub struct LogWriter;

    impl Write for LogWriter {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            crate::io::console::write_bytes(s.as_bytes());
            let now = crate::time::clock::now().as_nanos();
            x86_64::instructions::interrupts::without_interrupts(|| {
                // Never wait here: a writer this interrupted holds the lock.
                match KLOG.try_lock() {
                    Some(mut log) => log.write(now, s.as_bytes()),
                    None => {
                        DROPPED.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
            Ok(())
        }
    }
}

/// Bytes the ring keeps (the oldest lines go first).
pub const LOG_BYTES: usize = 32 * 1024;

/// A byte ring of whole lines.
pub struct LogRing<const N: usize> {
    buf: [u8; N],
    /// Bytes written since boot (the ring holds the last `min(len, N)`).
    len: u64,
    /// Whether the next byte starts a line (and gets a time stamp).
    at_line_start: bool,
}

impl<const N: usize> Default for LogRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> LogRing<N> {
    /// An empty ring.
    pub const fn new() -> Self {
        LogRing {
            buf: [0; N],
            len: 0,
            at_line_start: true,
        }
    }

    fn push(&mut self, b: u8) {
        self.buf[(self.len % N as u64) as usize] = b;
        self.len += 1;
    }

    /// Appends text printed at `uptime_ns`; a time stamp opens each new line.
    pub fn write(&mut self, uptime_ns: u64, text: &[u8]) {
        for &b in text {
            if self.at_line_start {
                if b == b'\n' {
                    continue; // blank lines carry nothing worth a stamp
                }
                let us = uptime_ns / 1000;
                let mut stamp = [0u8; 24];
                let n = stamp_into(&mut stamp, us / 1_000_000, us % 1_000_000);
                for &s in &stamp[..n] {
                    self.push(s);
                }
                self.at_line_start = false;
            }
            self.push(b);
            if b == b'\n' {
                self.at_line_start = true;
            }
        }
    }

    /// Calls `f` with the kept text in order, starting at a line boundary.
    pub fn read(&self, mut f: impl FnMut(&[u8])) {
        let kept = self.len.min(N as u64) as usize;
        let start = (self.len - kept as u64) % N as u64;
        let (a, b) = if kept < N {
            (&self.buf[..kept], &self.buf[..0])
        } else {
            (&self.buf[start as usize..], &self.buf[..start as usize])
        };
        // After a wrap the first line is cut: skip to the next one.
        let mut skip = if self.len > N as u64 {
            a.iter()
                .chain(b)
                .position(|&c| c == b'\n')
                .map_or(kept, |p| p + 1)
        } else {
            0
        };
        for part in [a, b] {
            let s = skip.min(part.len());
            skip -= s;
            if s < part.len() {
                f(&part[s..]);
            }
        }
    }
}

/// Writes `[%5u.%06u] ` into `out`; returns its length.
fn stamp_into(out: &mut [u8; 24], secs: u64, micros: u64) -> usize {
    let mut n = 0;
    let mut put = |b: u8| {
        out[n] = b;
        n += 1;
    };
    put(b'[');
    let mut digits = [0u8; 20];
    let mut k = 0;
    let mut s = secs;
    loop {
        digits[k] = b'0' + (s % 10) as u8;
        k += 1;
        s /= 10;
        if s == 0 || k == digits.len() {
            break;
        }
    }
    for _ in k..5 {
        put(b' ');
    }
    for i in (0..k).rev() {
        put(digits[i]);
    }
    put(b'.');
    let mut m = 100_000;
    for _ in 0..6 {
        put(b'0' + (micros / m % 10) as u8);
        m /= 10;
    }
    put(b']');
    put(b' ');
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::string::String;
    use std::vec::Vec;

    fn text<const N: usize>(r: &LogRing<N>) -> String {
        let mut v = Vec::new();
        r.read(|p| v.extend_from_slice(p));
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn lines_get_linux_stamps() {
        let mut r = LogRing::<4096>::new();
        r.write(1_234_567_000, b"blkfront: xvda\nnet");
        r.write(2_000_000_000, b"front: eth0\n\n");
        assert_eq!(
            text(&r),
            "[    1.234567] blkfront: xvda\n[    1.234567] netfront: eth0\n"
        );
    }

    #[test]
    fn wrapping_keeps_whole_recent_lines() {
        let mut r = LogRing::<64>::new();
        for i in 0..20 {
            r.write(i * 1_000_000_000, std::format!("line {i}\n").as_bytes());
        }
        let t = text(&r);
        assert!(t.ends_with("[   19.000000] line 19\n"), "{t}");
        assert!(t.starts_with('['), "starts at a line: {t}");
        assert!(t.len() <= 64);
    }
}
