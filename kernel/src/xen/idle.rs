//! Idling: halt the CPU until the next interrupt, console input or a deadline.
//!
//! Under Xen the deadline is vCPU 0's one-shot timer (`VCPUOP_set_singleshot_timer`,
//! delivered as `VIRQ_TIMER` through the event-channel upcall), so a halted vCPU is
//! blocked in Xen rather than spinning. Without Xen there is no timer to wake the
//! CPU: a deadline is then not slept towards (the call returns and the caller polls).

use crate::time::clock::{self, Instant};
use crate::{io::console, xen::platform as xen};
use x86_64::instructions::interrupts;

/// Halts until an interrupt (console input, an event channel, the timer) or
/// `deadline`, whichever is first; returns at once if console input or an event
/// arrived since the last halt, or the deadline has passed. May return early: callers
/// re-check their condition in a loop.
///
/// With interrupts disabled on entry (early boot) it only yields the CPU to Xen: the
/// interrupt that would end the halt could not be taken.
pub fn halt_until(deadline: Option<Instant>) {
    halt(deadline, true)
}

/// As [`halt_until`] for a command that runs for a while (`sleep`, `ping`): input
/// already waiting does not keep it awake (the command only looks for Ctrl-C with
/// [`console::take_interrupt`], the rest stays queued for the shell), but new input
/// still ends the halt.
pub fn halt_in_command(deadline: Option<Instant>) {
    halt(deadline, false)
}

fn halt(deadline: Option<Instant>, wake_on_queued_input: bool) {
    if !interrupts::are_enabled() {
        xen::yield_cpu();
        return;
    }
    interrupts::disable();
    // Checked with interrupts off: whatever arrives from here on raises an interrupt
    // that ends the `hlt` below (`sti; hlt` takes no interrupt in between).
    if (wake_on_queued_input && console::input_pending()) || xen::take_event_seen() {
        interrupts::enable();
        return;
    }
    if let Some(d) = deadline {
        if clock::now() >= d {
            interrupts::enable();
            return;
        }
        let armed = xen::info().is_some() && xen::arm_timer(d);
        if !armed {
            interrupts::enable();
            // Nothing would wake us at the deadline: give the CPU away briefly instead.
            xen::yield_cpu();
            return;
        }
    }
    crate::arch::halt::enable_and_hlt();
}

/// The longest a [`pause`] sleeps when no event comes.
///
/// Waits on a backend normally end with its event; the deadline only bounds what a
/// missed one costs (a backend that does not notify, a condition that raises no event
/// such as a polled XenStore key or a grant the backend still maps). 1 ms keeps such a
/// miss below a block request's round trip, and a wait that never sees an event wakes
/// at most a thousand times a second.
pub const PAUSE: core::time::Duration = core::time::Duration::from_millis(1);

/// Waits for the next event, console input, or [`PAUSE`]: what a loop polling a ring
/// or XenStore calls between looks.
pub fn pause() {
    halt_until(Some(clock::now() + PAUSE));
}
