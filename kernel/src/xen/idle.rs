//! Waiting: every wait in the kernel serves the core first, then halts the CPU until
//! an event newer than the waiter's own mark, console input, or a deadline.
//!
//! The algorithm (and why a run-to-completion loop rather than an executor) is in
//! [`crate::sync::wait`]; this file is its kernel side: the CPU (`sti; hlt` on Xen's
//! one-shot timer), the one registered service (the data plane, from `kmain`), and
//! the kinds of wait the kernel has.
//!
//! Under Xen the deadline is vCPU 0's one-shot timer (`VCPUOP_set_singleshot_timer`,
//! delivered as `VIRQ_TIMER` through the event-channel upcall), so a halted vCPU is
//! blocked in Xen rather than spinning. Without Xen there is no timer to wake the
//! CPU: a deadline is then not slept towards (the call returns and the caller polls).

use crate::sync::eventcount::SharedSeen;
use crate::sync::wait::{Cpu, Service, ServiceFn, Waiter};
use crate::time::clock::{self, Instant};
use crate::{io::console, xen::platform as xen};
use x86_64::instructions::interrupts;

/// The data plane's turn at every wait ([`register_service`]).
static SERVICE: Service = Service::new();

/// Sets the service every wait runs first (the network, the router and the LAN
/// services: `dev::network::serve`). Called once by `kmain`.
pub fn register_service(f: ServiceFn) {
    SERVICE.register(f);
}

/// A check-point for code that computes for long without waiting (a `dd` block, a
/// hashed chunk): gives the data plane its turn if it wants one.
pub fn serve() {
    let _ = SERVICE.run();
}

/// How many turns the service has had (for `xen`).
pub fn service_turns() -> u64 {
    SERVICE.turns()
}

/// The kernel's CPU for [`crate::sync::wait`].
struct KernelCpu;

impl Cpu for KernelCpu {
    fn now_ns(&self) -> u64 {
        clock::now().as_nanos()
    }

    fn halt(&self, deadline_ns: Option<u64>, busy: &dyn Fn() -> bool) {
        if !interrupts::are_enabled() {
            // Early boot: the interrupt that would end a halt could not be taken.
            xen::yield_cpu();
            return;
        }
        interrupts::disable();
        // Checked with interrupts off: whatever arrives from here on raises an
        // interrupt that ends the `hlt` below (`sti; hlt` takes none in between).
        if busy() {
            interrupts::enable();
            return;
        }
        // Events Xen set pending without an upcall (its flag was already set, as
        // after a restore: events that came before the callback was registered)
        // would never end the halt: served now instead.
        if xen::upcall_pending() {
            xen::poll_events();
            interrupts::enable();
            return;
        }
        if let Some(d) = deadline_ns.map(Instant::from_nanos) {
            if clock::now() >= d {
                interrupts::enable();
                return;
            }
            let armed = xen::info().is_some() && xen::arm_timer(d);
            if !armed {
                interrupts::enable();
                // Nothing would wake us at the deadline: give the CPU away briefly.
                xen::yield_cpu();
                return;
            }
        }
        crate::arch::halt::enable_and_hlt();
    }
}

/// One waiting place: the shell loop, a command's loop, a handshake's. Made before
/// the first check of what it waits for; [`Wait::until`] after each check.
pub struct Wait {
    waiter: Waiter,
    /// Whether input already queued keeps it awake (the shell: yes; a command that
    /// only looks for Ctrl-C: no, the rest stays queued for the shell).
    wake_on_queued_input: bool,
}

impl Wait {
    /// A wait that queued console input ends (the shell loop's).
    pub fn new() -> Self {
        Wait {
            waiter: Waiter::new(xen::events()),
            wake_on_queued_input: true,
        }
    }

    /// A wait inside a command that runs for a while (`sleep`, `ping`): input already
    /// waiting does not keep it awake (the command looks for Ctrl-C with
    /// [`console::take_interrupt`]), but new input still ends the halt.
    pub fn in_command() -> Self {
        Wait {
            waiter: Waiter::new(xen::events()),
            wake_on_queued_input: false,
        }
    }

    /// Serves the core, then halts until an event newer than this wait's last
    /// return, console input (see above), `deadline`, or the core's next timer. May
    /// return early: the caller re-checks its condition.
    pub fn until(&mut self, deadline: Option<Instant>) {
        let input = self.wake_on_queued_input;
        self.waiter.wait(
            &KernelCpu,
            xen::events(),
            &SERVICE,
            deadline.map(Instant::as_nanos),
            &|| input && console::input_pending(),
        );
    }
}

impl Default for Wait {
    fn default() -> Self {
        Self::new()
    }
}

/// The longest a [`pause`] sleeps when no event comes.
///
/// Waits on a backend normally end with its event; the deadline only bounds what a
/// missed one costs (a backend that does not notify, a condition that raises no event
/// such as a polled XenStore key or a grant the backend still maps). 1 ms keeps such a
/// miss below a block request's round trip, and a wait that never sees an event wakes
/// at most a thousand times a second.
pub const PAUSE: core::time::Duration = core::time::Duration::from_millis(1);

/// The mark of the waits that keep no state between calls ([`pause`]: the drivers'
/// ring polls, XenStore's reply poll). Theirs alone: the shell loop's and the
/// network's marks are their own, so a pause never takes their wakeups.
static PAUSE_SEEN: SharedSeen = SharedSeen::new();

/// Waits for the next event, new console input, or [`PAUSE`], serving the core
/// first: what a loop polling a ring or XenStore calls between looks. Returns at
/// once if an event came since the last pause returned. Input already queued does
/// not keep it awake (it is the shell's, for after the command: a line typed ahead
/// during a long `dd` made every pause of its disk waits return at once, spinning
/// the vCPU); new input still ends the halt (its interrupt), and Ctrl-C is seen by
/// the command within a pause.
pub fn pause() {
    let mut waiter = Waiter::resume(PAUSE_SEEN.get());
    waiter.wait(
        &KernelCpu,
        xen::events(),
        &SERVICE,
        Some((clock::now() + PAUSE).as_nanos()),
        &|| false,
    );
    PAUSE_SEEN.set(waiter.seen());
}
