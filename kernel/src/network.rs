//! The network stack as the kernel runs it: every connected vif becomes an
//! interface of one [`NetStack`], configured from the kernel command line
//! (`xenlet.eth0=...`), else from XenStore (`data/xenlet/net/eth0`), else DHCPv4
//! (see `xenlet_net::config`). The idle loop and the network commands poll it.

use crate::frontends::Vif;
use crate::{arch::cpu, clock, xenstore};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use spin::Mutex;
use xenlet_net::iface::NetIf;
use xenlet_net::{config, NetStack};

/// The stack.
pub static NET: Mutex<NetStack<Vif>> = Mutex::new(NetStack::new());

/// Milliseconds since boot (smoltcp's clock).
pub fn now_ms() -> i64 {
    (clock::now().as_micros() / 1000) as i64
}

/// Microseconds since boot.
pub fn now_us() -> u64 {
    clock::now().as_micros()
}

fn config_for(name: &str, cmdline: &str) -> (String, &'static str) {
    if let Some(c) = config::from_cmdline(cmdline, name) {
        return (String::from(c), "command line");
    }
    if let Ok(c) = xenstore::read(&format!("data/xenlet/net/{name}")) {
        return (c, "xenstore");
    }
    (String::from("dhcp"), "default")
}

/// Makes an interface of every connected vif; returns boot report lines.
pub fn init(cmdline: &str) -> Vec<String> {
    let mut report = Vec::new();
    let mut stack = NET.lock();
    for (name, vif) in crate::frontends::take_vifs() {
        let (text, source) = config_for(&name, cmdline);
        let cfg = match config::parse(&text) {
            Ok(c) => c,
            Err(e) => {
                report.push(format!(
                    "{name}: bad configuration \"{text}\" ({source}): {e}; using DHCP"
                ));
                config::IfConfig {
                    dhcp: true,
                    ..config::IfConfig::default()
                }
            }
        };
        let n: NetIf<Vif> = NetIf::new(&name, vif, &cfg, now_ms(), cpu::rdtsc());
        let addrs: Vec<String> = n.addrs().iter().map(|(c, _)| format!("{c}")).collect();
        report.push(format!(
            "{name}: {}{} ({source})",
            addrs.join(" "),
            if n.dhcp_running() {
                ", DHCPv4 running"
            } else {
                ""
            }
        ));
        stack.ifs.push(n);
    }
    report
}

/// Polls the stack (unless a command holds it) and prints its messages; returns
/// when it next wants to be polled (ms since boot).
pub fn poll() -> Option<i64> {
    let mut stack = NET.try_lock()?;
    if stack.ifs.is_empty() {
        return None;
    }
    let now = now_ms();
    stack.poll(now);
    for e in stack.take_events() {
        crate::println!("{e}");
    }
    stack.poll_at(now)
}

/// Whether there is any interface.
pub fn present() -> bool {
    !NET.lock().ifs.is_empty()
}

/// The clock instant of `ms` milliseconds since boot (smoltcp's time).
pub fn instant_of_ms(ms: i64) -> clock::Instant {
    clock::Instant::from_nanos(u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000))
}

/// Waits for an event (a packet, a key) or until `deadline_us` (µs since boot).
pub fn wait_until_us(deadline_us: u64) {
    crate::idle::halt_until(Some(clock::Instant::from_nanos(
        deadline_us.saturating_mul(1000),
    )));
}
