//! CPU identification, timestamp counter and control registers.

use core::arch::x86_64::{__cpuid, _rdtsc, CpuidResult};
use xenlet_xen::cpuid::{self as xen_leaves, Regs, XenCpuid};

/// Executes CPUID for `leaf` (subleaf 0).
pub fn cpuid(leaf: u32) -> CpuidResult {
    // A safe intrinsic on current Rust: CPUID exists on every x86_64 CPU.
    __cpuid(leaf)
}

/// Xen's CPUID leaves (the `XenVMMXenVMM` signature at 0x4000_0000 + n×0x100), if
/// this runs on Xen: CPUID only, nothing is touched. Here rather than in the Xen
/// layer because the clock reads Xen's TSC leaf before that layer is up.
pub fn xen_cpuid() -> Option<XenCpuid> {
    xen_leaves::detect(|leaf| {
        let r = cpuid(leaf);
        Regs {
            eax: r.eax,
            ebx: r.ebx,
            ecx: r.ecx,
            edx: r.edx,
        }
    })
}

/// Reads the timestamp counter.
pub fn rdtsc() -> u64 {
    // SAFETY: RDTSC is unprivileged by default and only reads a counter.
    unsafe { _rdtsc() }
}

/// Reads the timestamp counter after every earlier load has completed (LFENCE then
/// RDTSC, Linux's `rdtsc_ordered`): the pvclock reader takes the TSC between two
/// copies of its record, and a TSC read hoisted above the first copy would pair an
/// older count with the record.
pub fn rdtsc_ordered() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: LFENCE orders loads and RDTSC reads a counter: no memory is written, no stack used, no flags changed (no `nomem`, so the compiler keeps earlier loads before it too).
    unsafe {
        core::arch::asm!(
            "lfence",
            "rdtsc",
            out("eax") lo,
            out("edx") hi,
            options(nostack, preserves_flags)
        );
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// The 12-byte vendor string of CPUID leaf 0.
pub fn vendor() -> [u8; 12] {
    let r = cpuid(0);
    let mut v = [0u8; 12];
    v[0..4].copy_from_slice(&r.ebx.to_le_bytes());
    v[4..8].copy_from_slice(&r.edx.to_le_bytes());
    v[8..12].copy_from_slice(&r.ecx.to_le_bytes());
    v
}

/// The hypervisor signature at CPUID 0x40000000 when the hypervisor bit is set.
/// Xen may also place its leaves at 0x40000100.. (viridian), which the Xen layer scans.
pub fn hypervisor_signature() -> Option<[u8; 12]> {
    if cpuid(1).ecx & (1 << 31) == 0 {
        return None;
    }
    let r = cpuid(0x4000_0000);
    let mut v = [0u8; 12];
    v[0..4].copy_from_slice(&r.ebx.to_le_bytes());
    v[4..8].copy_from_slice(&r.ecx.to_le_bytes());
    v[8..12].copy_from_slice(&r.edx.to_le_bytes());
    Some(v)
}

/// CR2: the faulting address of the last page fault.
pub fn cr2() -> u64 {
    x86_64::registers::control::Cr2::read_raw()
}

/// Stops this CPU for good: interrupts off, halt forever.
pub fn halt_forever() -> ! {
    loop {
        x86_64::instructions::interrupts::disable();
        x86_64::instructions::hlt();
    }
}

/// 64 bits from the CPU's random number generator (RDRAND), when it has one and it
/// delivers (a few retries, as Intel advises for an underflowing DRNG); None on a
/// CPU without it (CPUID.1:ECX.RDRAND, checked by `x86_64`'s `RdRand::new`).
pub fn rdrand() -> Option<u64> {
    let r = x86_64::instructions::random::RdRand::new()?;
    (0..10).find_map(|_| r.get_u64())
}
