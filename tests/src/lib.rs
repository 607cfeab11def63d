//! Harness for the end-to-end tests: boot the Xenlet kernel in QEMU, type into its
//! serial shell, and read what it prints.
//!
//! `cargo xtask test` builds the kernel, fetches QEMU and passes both in through
//! environment variables (`XENLET_KERNEL`, `XENLET_QEMU`, …). Each guest's serial
//! output is also written to `target/qemu-tests/<name>.log` for post-mortems.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The shell prompt.
pub const PROMPT: &str = "xenlet> ";
/// Generous per-step timeout: TCG without KVM is slow.
pub const TIMEOUT: Duration = Duration::from_secs(60);

fn env_path(var: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(v) => PathBuf::from(v),
        None => panic!("{var} is not set: run the QEMU tests with `cargo xtask test`"),
    }
}

/// How to start the guest.
pub enum Boot {
    /// `-kernel xenlet.elf` (PVH entry).
    Kernel,
    /// A raw disk image booted by SeaBIOS (GRUB → multiboot2).
    Disk(PathBuf),
    /// `-kernel` with another ELF (a modified copy of xenlet.elf).
    KernelFile(PathBuf),
}

#[derive(Default)]
struct Shared {
    out: Vec<u8>,
    eof: bool,
}

/// A running guest.
pub struct Guest {
    child: Child,
    stdin: ChildStdin,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    /// Offset in the output up to which `expect` has consumed.
    cursor: usize,
    name: String,
}

/// Whether KVM can run the guest.
/// Whether KVM is usable: `/dev/kvm` opens and QEMU 7.2 starts a `-cpu host` guest
/// on it (on some hosts it aborts setting MSR 0x10a); probed once, else TCG.
fn kvm() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| {
        if std::env::var_os("XENLET_NO_KVM").is_some()
            || std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/kvm")
                .is_err()
        {
            return false;
        }
        let mut cmd = Command::new(env_path("XENLET_QEMU"));
        if let Some(p) = std::env::var_os("XENLET_QEMU_LD_LIBRARY_PATH") {
            cmd.env("LD_LIBRARY_PATH", p);
        }
        if let Some(p) = std::env::var_os("XENLET_QEMU_MODULE_DIR") {
            cmd.env("QEMU_MODULE_DIR", p);
        }
        cmd.args([
            "-accel", "kvm", "-cpu", "host", "-machine", "pc", "-m", "16M",
        ])
        .args(["-nodefaults", "-display", "none", "-monitor", "none", "-S"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        let Ok(mut child) = cmd.spawn() else {
            return false;
        };
        // A host where KVM cannot run this CPU model makes QEMU abort at once.
        std::thread::sleep(Duration::from_millis(1500));
        let alive = matches!(child.try_wait(), Ok(None));
        let _ = child.kill();
        let _ = child.wait();
        alive
    })
}

impl Guest {
    /// Boots the kernel with default options.
    pub fn boot(name: &str) -> Guest {
        Guest::start(name, Boot::Kernel, &[])
    }

    /// Boots with a boot method and extra QEMU arguments.
    pub fn start(name: &str, boot: Boot, extra: &[&str]) -> Guest {
        let mut cmd = Command::new(env_path("XENLET_QEMU"));
        if let Some(p) = std::env::var_os("XENLET_QEMU_LD_LIBRARY_PATH") {
            cmd.env("LD_LIBRARY_PATH", p);
        }
        if let Some(p) = std::env::var_os("XENLET_QEMU_MODULE_DIR") {
            cmd.env("QEMU_MODULE_DIR", p);
        }
        if let Some(dirs) = std::env::var_os("XENLET_QEMU_DATADIRS") {
            for d in std::env::split_paths(&dirs) {
                cmd.arg("-L").arg(d);
            }
        }
        // `extra` naming an accelerator (`-accel ...`, with its `-cpu`) replaces the default.
        if !extra.contains(&"-accel") {
            if kvm() {
                cmd.args(["-accel", "kvm", "-cpu", "host"]);
            } else {
                cmd.args(["-accel", "tcg", "-cpu", "qemu64"]);
            }
        }
        cmd.args(["-machine", "pc", "-m", "128M", "-no-reboot", "-nic", "none"])
            .args(["-display", "none", "-monitor", "none", "-serial", "stdio"])
            .args(["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]);
        match boot {
            Boot::Kernel => {
                cmd.arg("-kernel").arg(env_path("XENLET_KERNEL"));
            }
            Boot::KernelFile(elf) => {
                cmd.arg("-kernel").arg(elf);
            }
            Boot::Disk(img) => {
                cmd.arg("-drive").arg(format!(
                    "file={},format=raw,if=ide,snapshot=on",
                    img.display()
                ));
            }
        }
        cmd.args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start QEMU: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let mut stdout = child.stdout.take().expect("piped stdout");
        let shared = Arc::new((Mutex::new(Shared::default()), Condvar::new()));
        let s2 = Arc::clone(&shared);
        let log_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/qemu-tests");
        let _ = std::fs::create_dir_all(&log_dir);
        let mut log = std::fs::File::create(log_dir.join(format!("{name}.log"))).ok();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = stdout.read(&mut buf).unwrap_or(0);
                let (lock, cv) = &*s2;
                let mut s = lock.lock().unwrap();
                if n == 0 {
                    s.eof = true;
                    cv.notify_all();
                    return;
                }
                if let Some(l) = log.as_mut() {
                    let _ = l.write_all(&buf[..n]);
                }
                // Matching works on text with CRs removed (the console sends CR LF).
                s.out
                    .extend(buf[..n].iter().copied().filter(|&b| b != b'\r'));
                cv.notify_all();
            }
        });
        Guest {
            child,
            stdin,
            shared,
            cursor: 0,
            name: name.to_string(),
        }
    }

    /// Everything the guest printed so far (CRs removed).
    pub fn transcript(&self) -> String {
        let s = self.shared.0.lock().unwrap();
        String::from_utf8_lossy(&s.out).into_owned()
    }

    /// Waits until `needle` appears after the cursor; returns the text from the cursor
    /// to the end of `needle` and moves the cursor past it. Panics with the transcript
    /// on timeout or end of output.
    pub fn expect_within(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        let (lock, cv) = &*self.shared;
        let mut s = lock.lock().unwrap();
        loop {
            let hay = &s.out[self.cursor.min(s.out.len())..];
            if let Some(pos) = find(hay, needle.as_bytes()) {
                let got = String::from_utf8_lossy(&hay[..pos + needle.len()]).into_owned();
                self.cursor += pos + needle.len();
                return got;
            }
            let now = Instant::now();
            if s.eof || now >= deadline {
                let why = if s.eof {
                    "the guest ended"
                } else {
                    "timed out"
                };
                let tail = String::from_utf8_lossy(&s.out).into_owned();
                drop(s);
                panic!(
                    "[{}] waiting for {needle:?}: {why}. Transcript:\n{tail}",
                    self.name
                );
            }
            s = cv.wait_timeout(s, deadline - now).unwrap().0;
        }
    }

    /// [`Guest::expect_within`] with the default timeout.
    pub fn expect(&mut self, needle: &str) -> String {
        self.expect_within(needle, TIMEOUT)
    }

    /// Sends raw bytes to the serial port.
    pub fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("write to QEMU");
        self.stdin.flush().expect("flush to QEMU");
    }

    /// Types a command and Enter, waits for the next prompt, and returns the output
    /// between the echoed command line and that prompt.
    pub fn run(&mut self, line: &str) -> String {
        self.send(line.as_bytes());
        self.send(b"\r");
        let got = self.expect(PROMPT);
        let body = got.strip_suffix(PROMPT).unwrap_or(&got);
        match body.split_once('\n') {
            Some((echo, rest)) => {
                assert!(
                    echo.ends_with(line),
                    "[{}] echo {echo:?} does not end with {line:?}",
                    self.name
                );
                rest.to_string()
            }
            None => String::new(),
        }
    }

    /// Waits for the first prompt; returns the boot output.
    pub fn wait_prompt(&mut self) -> String {
        self.expect_within(PROMPT, Duration::from_secs(120))
    }

    /// Waits for QEMU to exit and returns its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                return st;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "[{}] QEMU did not exit within {timeout:?}. Transcript:\n{}",
                    self.name,
                    self.transcript()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The usable MiB in the boot report's `memory:` line.
pub fn usable_mib(boot_output: &str) -> u64 {
    let line = boot_output
        .lines()
        .find(|l| l.starts_with("memory: "))
        .unwrap_or_else(|| panic!("no memory line in:\n{boot_output}"));
    line["memory: ".len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bad memory line: {line}"))
}
