//! Save, restore and live migration (`xl save`, `xl restore`, `xl save -c`,
//! `xl migrate`): the toolstack writes `suspend` into `control/shutdown`; Xenlet
//! acknowledges (`sys::shutdown`), quiesces, and calls
//! `SCHEDOP_shutdown(SHUTDOWN_suspend)`. The call returns in one of two worlds:
//!
//! - **cancelled** (returns 1: `xl save -c`, a failed migration): the same domain goes
//!   on, every ring, grant and channel still in place; nothing to redo.
//! - **resumed** (returns 0: `xl restore`, the far end of `xl migrate`): memory is as
//!   it was, everything Xen-side is new. In order, as Linux's `do_suspend` and
//!   Mini-OS's `kernel_suspend`: the platform (shared info, upcall vector,
//!   `VIRQ_TIMER`, the console's channel), the clock (pvclock's records are in the
//!   shared info page; nothing may read the time before it is adjusted), the grant
//!   table's frames, interrupts on, XenStore (its new channel, the
//!   watches set again), the emulated devices unplugged again (a new device model),
//!   then every frontend reconnects to its (new) backend and the network announces
//!   where it is now.
//!
//! The quiesce runs where the request is taken: the shell loop between commands, or
//! a long command's check-point (`sys::shutdown::checkpoint`: between two steps of a
//! `dd`, in `sleep`), where the command holds no disk, filesystem or network lock.
//! Every filesystem is written back and every disk lets its requests be answered
//! (the answers kept for whoever polls it next, the paused command included) before
//! the domain goes; what is still unanswered is sent again to the new backend.

use crate::time::clock;
use crate::xen::{gnttab, platform as xen, xenstore};
use core::sync::atomic::{AtomicU64, Ordering};
use spin::Once;

/// What the layers above do around a suspend (registered by `kmain`: this layer
/// sits below the devices and the file tree).
pub struct Hooks {
    /// Before the domain goes: write the filesystems back, let the disks answer
    /// what is in flight.
    pub quiesce: fn(),
    /// In a new domain, after the Xen layer is back: reconnect the frontends,
    /// announce the network.
    pub resumed: fn(),
}

static HOOKS: Once<Hooks> = Once::new();

/// Sets what runs around a suspend (once, from `kmain`).
pub fn set_hooks(h: Hooks) {
    HOOKS.call_once(|| h);
}

static SUSPENDS: AtomicU64 = AtomicU64::new(0);
static CANCELLED: AtomicU64 = AtomicU64::new(0);
static RESUMED: AtomicU64 = AtomicU64::new(0);
/// Milliseconds from the quiesce to the end of the last resume, as the guest's clock
/// saw it (the downtime on the same host; less after a migration to a host whose Xen
/// has run for less time).
static LAST_MS: AtomicU64 = AtomicU64::new(0);

/// Suspends counted by outcome, for the `xen` command.
#[derive(Clone, Copy, Debug)]
pub struct Stats {
    /// Suspends requested and carried out.
    pub suspends: u64,
    /// Of those, cancelled (the same domain went on).
    pub cancelled: u64,
    /// Of those, resumed in a new domain.
    pub resumed: u64,
    /// The last one's time away, in ms.
    pub last_ms: u64,
}

/// The counters.
pub fn stats() -> Stats {
    Stats {
        suspends: SUSPENDS.load(Ordering::Relaxed),
        cancelled: CANCELLED.load(Ordering::Relaxed),
        resumed: RESUMED.load(Ordering::Relaxed),
        last_ms: LAST_MS.load(Ordering::Relaxed),
    }
}

/// Carries out a suspend the toolstack asked for (already acknowledged). Prints what
/// happened; returns when the domain runs again (in the same domain or a new one).
pub fn suspend() {
    let Some(_) = xen::info() else {
        crate::println!("\nxenlet: suspend requested, but not on Xen");
        return;
    };
    crate::println!("\nxenlet: suspending (save or migration requested by the toolstack)");
    let start = clock::now();
    // Written back: a restored domain's disks are served by new backends, which know
    // nothing of requests the old ones had not answered.
    if let Some(h) = HOOKS.get() {
        (h.quiesce)();
    }
    crate::io::console::flush();
    SUSPENDS.fetch_add(1, Ordering::Relaxed);

    let outcome = x86_64::instructions::interrupts::without_interrupts(|| {
        match xenlet_xen::hypercall::sched_suspend() {
            Ok(true) => Outcome::Cancelled,
            Err(e) => Outcome::Refused(e),
            Ok(false) => {
                // The shared info page first: until it is mapped again, the page at
                // its frame holds the old domain's time records. Then the clock,
                // before anything reads the time (it may be another host's now).
                let p = xen::resume();
                clock::resume_pvclock();
                // Events pending in the new shared info before the callback was
                // registered left the upcall flag set, and Xen raises no upcall while
                // it is: a scan clears it (Mini-OS's force_evtchn_callback).
                xen::poll_events();
                Outcome::Resumed(clock::now(), p, gnttab::resume())
            }
        }
    });
    match outcome {
        Outcome::Cancelled => {
            CANCELLED.fetch_add(1, Ordering::Relaxed);
            let ms = clock::now().saturating_duration_since(start).as_millis() as u64;
            LAST_MS.store(ms, Ordering::Relaxed);
            crate::println!("xenlet: suspend cancelled after {ms} ms: the same domain goes on (checkpoint taken)");
        }
        Outcome::Refused(e) => {
            crate::println!("xenlet: Xen refused the suspend: {e}; running on");
        }
        Outcome::Resumed(back, p, g) => {
            RESUMED.fetch_add(1, Ordering::Relaxed);
            match p {
                Ok(r) => crate::println!(
                    "xenlet: resumed in a new domain: shared info, upcall and timer (port {}) set up again{}",
                    r.timer_port.map_or(alloc::string::String::from("none"), |p| alloc::format!("{}", p.0)),
                    r.console_port.map_or(alloc::string::String::new(), |p| alloc::format!(", console on port {}", p.0))
                ),
                Err(e) => crate::println!("xenlet: resumed, but the platform could not be set up again: {e}"),
            }
            match g {
                Ok(n) => crate::println!("xenlet: grant table: {n} frame(s) mapped again"),
                Err(e) => crate::println!("xenlet: grant table not mapped again: {e}"),
            }
            let t = clock::now();
            let xs = xenstore::resume();
            let xs_ms = t.elapsed().as_millis();
            match xs {
                Ok(r) => crate::println!(
                    "xenlet: xenstore: reconnected on event channel {}, {} watch(es) set again in {xs_ms} ms{}{}",
                    r.port.0,
                    r.watches,
                    if r.refused > 0 {
                        alloc::format!(" ({} refused)", r.refused)
                    } else {
                        alloc::string::String::new()
                    },
                    if r.unread_requests {
                        "; requests were left unread in the ring"
                    } else {
                        ""
                    }
                ),
                Err(e) => crate::println!("xenlet: xenstore: not reconnected: {e}"),
            }
            let _ = crate::xen::unplug::unplug_emulated_devices();
            if let Some(h) = HOOKS.get() {
                (h.resumed)();
            }
            // the devices' new ports may have fired before their handlers were in
            xen::poll_events();
            let now = clock::now();
            let ms = now.saturating_duration_since(start).as_millis() as u64;
            let own = now.saturating_duration_since(back).as_millis();
            LAST_MS.store(ms, Ordering::Relaxed);
            crate::println!(
                "xenlet: resumed ({ms} ms since the suspend began, on this domain's clock; {own} ms of it setting up again after the domain ran)"
            );
        }
    }
}

/// How `SCHEDOP_shutdown(SHUTDOWN_suspend)` came back.
enum Outcome {
    /// Returned 1: the same domain goes on.
    Cancelled,
    /// Xen refused the call: nothing happened.
    Refused(xenlet_xen::XenError),
    /// Returned 0 in a new domain (at that time); the platform and grant table set
    /// up again.
    Resumed(
        clock::Instant,
        Result<xen::Resumed, xen::XenInitError>,
        Result<u32, xenlet_xen::XenError>,
    ),
}
