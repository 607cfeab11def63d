//! The local APIC, in x2APIC mode (MSRs, no MMIO mapping): only what a per-vCPU Xen
//! upcall vector (`HVMOP_set_evtchn_upcall_vector`) needs. Xen delivers that vector
//! through the vCPU's emulated local APIC, so the APIC must be software-enabled and
//! every such interrupt acknowledged with an EOI. Other LVT entries are left as the
//! firmware set them (LINT0 keeps carrying the 8259's ExtINT on HVM).

use core::sync::atomic::{AtomicBool, Ordering};
use x86_64::registers::model_specific::Msr;

const IA32_APIC_BASE: u32 = 0x1b;
const APIC_BASE_ENABLE: u64 = 1 << 11;
const APIC_BASE_X2APIC: u64 = 1 << 10;
const X2APIC_EOI: u32 = 0x80b;
const X2APIC_SVR: u32 = 0x80f;
/// SVR bit 8: APIC software enable.
const SVR_ENABLE: u64 = 1 << 8;
/// The spurious-interrupt vector (no handler: a spurious interrupt needs no EOI).
const SPURIOUS_VECTOR: u64 = 0xff;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Switches the APIC to x2APIC mode and software-enables it. False (nothing changed)
/// when the CPU has no x2APIC or the APIC is globally disabled.
pub fn enable_x2apic() -> bool {
    if crate::arch::cpu::cpuid(1).ecx & (1 << 21) == 0 {
        return false;
    }
    let mut base = Msr::new(IA32_APIC_BASE);
    // SAFETY: IA32_APIC_BASE exists on every x86_64 CPU; reading it has no side effect.
    let b = unsafe { base.read() };
    if b & APIC_BASE_ENABLE == 0 {
        return false;
    }
    // SAFETY: xAPIC-enabled to x2APIC-enabled is an architecturally allowed transition (CPUID says x2APIC exists); nothing in the kernel uses the xAPIC MMIO page.
    unsafe { base.write(b | APIC_BASE_X2APIC) };
    let mut svr = Msr::new(X2APIC_SVR);
    // SAFETY: the SVR MSR exists in x2APIC mode, just entered; enabling the APIC with a spurious vector that has an IDT stub is all that changes.
    unsafe {
        let v = svr.read();
        svr.write((v & !0xff) | SVR_ENABLE | SPURIOUS_VECTOR);
    }
    ENABLED.store(true, Ordering::SeqCst);
    true
}

/// Acknowledges the interrupt being served (only once [`enable_x2apic`] succeeded).
pub fn eoi() {
    if ENABLED.load(Ordering::Relaxed) {
        // SAFETY: in x2APIC mode writing 0 to the EOI MSR ends the highest in-service interrupt, the one being handled.
        unsafe { Msr::new(X2APIC_EOI).write(0) };
    }
}
