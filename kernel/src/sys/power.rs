//! Power off, reboot, and stopping after a fault.
//!
//! Order of attempts: ACPI (S5 through PM1a/PM1b control, reset register from the
//! FADT), then legacy resets; QEMU's `isa-debug-exit` device (port 0xf4, present only
//! when the test harness adds it) turns a failed power-off into a distinct exit status.
//! Under Xen, `SCHEDOP_shutdown` comes first, after the PV console is flushed.

use crate::arch::pio::Pio;
use crate::arch::{cpu, pio};
use crate::sys::acpi::PowerInfo;
use spin::Once;
use xenlet_drivers::pio::PortIo;

static ACPI: Once<Option<PowerInfo>> = Once::new();

/// QEMU isa-debug-exit port; QEMU exits with status `(value << 1) | 1`.
const DEBUG_EXIT_PORT: u16 = 0xf4;
/// Status 3: stopped after a fault or panic.
pub const DEBUG_EXIT_FAULT: u32 = 1;
/// Status 33: ACPI power-off did not work.
pub const DEBUG_EXIT_POWEROFF_FAILED: u32 = 0x10;

/// Records the ACPI power facts found at boot.
pub fn set_acpi(info: Option<PowerInfo>) {
    ACPI.call_once(|| info);
}

/// The ACPI power facts, if any.
pub fn acpi() -> Option<PowerInfo> {
    ACPI.get().copied().flatten()
}

fn settle() {
    // Give the device model a moment (each port write is an exit under Xen).
    let start = crate::time::clock::now();
    while crate::time::clock::now()
        .saturating_duration_since(start)
        .as_millis()
        < 200
    {
        core::hint::spin_loop();
    }
}

/// What runs before an orderly power-off or reboot (the file systems' write-back),
/// registered by `kmain` so this layer does not reach up into the file tree.
static BEFORE_SHUTDOWN: spin::Once<fn()> = spin::Once::new();

/// Registers the orderly-shutdown hook (once).
pub fn on_orderly_shutdown(f: fn()) {
    BEFORE_SHUTDOWN.call_once(|| f);
}

/// What closes the PV devices before Xen ends the domain (`dev::frontends::close_all`:
/// how many devices, how many backends followed), registered by `kmain`; not called on
/// the crash path.
static CLOSE_DEVICES: spin::Once<fn() -> (usize, usize)> = spin::Once::new();

/// Registers what closes the PV devices before an orderly Xen shutdown (once).
pub fn on_xen_shutdown(close_devices: fn() -> (usize, usize)) {
    CLOSE_DEVICES.call_once(|| close_devices);
}

fn orderly_shutdown() {
    if let Some(f) = BEFORE_SHUTDOWN.get() {
        f();
    }
}

/// Under Xen: flushes the PV console and asks Xen to end the domain with `reason`;
/// returns only if there is no Xen or Xen refused.
fn xen_shutdown(reason: u32) {
    if crate::xen::platform::info().is_none() {
        return;
    }
    if let Some(close) = CLOSE_DEVICES
        .get()
        .filter(|_| reason != xenlet_xen::abi::SHUTDOWN_crash)
    {
        let (n, followed) = close();
        if n > 0 {
            crate::println!("xenlet: closed {n} PV device(s), {followed} backend(s) followed");
        }
    }
    if reason == xenlet_xen::abi::SHUTDOWN_crash {
        // The fault path: the fault may have hit inside a console write (lock held)
        // or the allocator, so no waiting on locks and no allocation here.
        crate::io::console::flush_emergency();
    } else {
        crate::io::console::flush();
    }
    if let Err(e) = crate::xen::platform::shutdown(reason) {
        use core::fmt::Write;
        let _ = writeln!(
            crate::io::console::EmergencyWriter,
            "xenlet: SCHEDOP_shutdown failed: {e}"
        );
    }
}

/// Powers the machine off.
pub fn poweroff() -> ! {
    crate::println!("xenlet: powering off");
    orderly_shutdown();
    xen_shutdown(xenlet_xen::abi::SHUTDOWN_poweroff);
    x86_64::instructions::interrupts::disable();
    if let Some(p) = acpi() {
        let (a, b) = p.s5.unwrap_or((0, 0));
        const SLP_EN: u16 = 1 << 13;
        pio::outw(p.pm1a_cnt, (u16::from(a & 7) << 10) | SLP_EN);
        if p.pm1b_cnt != 0 {
            pio::outw(p.pm1b_cnt, (u16::from(b & 7) << 10) | SLP_EN);
        }
        settle();
    }
    pio::outl(DEBUG_EXIT_PORT, DEBUG_EXIT_POWEROFF_FAILED);
    crate::io::console::emergency_write(b"xenlet: power-off failed (no ACPI S5); halted\n");
    cpu::halt_forever()
}

/// Resets the machine.
pub fn reboot() -> ! {
    crate::println!("xenlet: rebooting");
    orderly_shutdown();
    xen_shutdown(xenlet_xen::abi::SHUTDOWN_reboot);
    x86_64::instructions::interrupts::disable();
    let mut io = Pio::new();
    if let Some((port, value)) = acpi().and_then(|p| p.reset) {
        io.outb(port, value);
        settle();
    }
    io.outb(0x64, 0xfe); // keyboard controller: pulse reset
    settle();
    io.outb(0xcf9, 0x06); // PCI reset control: hard reset
    settle();
    crate::io::console::emergency_write(b"xenlet: reset failed; halted\n");
    cpu::halt_forever()
}

/// Ends the machine after a fault report: QEMU test runs exit with status 3,
/// elsewhere the CPU halts with the report on screen.
pub fn stop_after_fault() -> ! {
    crate::io::console::emergency_write(b"*** system halted\n");
    xen_shutdown(xenlet_xen::abi::SHUTDOWN_crash);
    pio::outl(DEBUG_EXIT_PORT, DEBUG_EXIT_FAULT);
    cpu::halt_forever()
}
