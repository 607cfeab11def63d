//! The idle halt, `sti; hlt`, made safe against a lost wakeup.
//!
//! The idle path checks for work with interrupts off, then runs `sti; hlt`: the
//! one-instruction interrupt shadow of `sti` means an interrupt that became pending
//! meanwhile is taken only once `hlt` has started, and ends it. Under nested
//! virtualization (the test bed: Xen on QEMU's emulated SVM) that shadow is not
//! always honoured: the upcall was seen taken *before* the `hlt`, with the saved
//! RIP pointing at it, so the handler returned into the `hlt` and the vCPU slept
//! with the event already consumed — until some unrelated event came, seconds later
//! (dom0 → guest TCP streams stalled, retransmissions and all, for 1–12 s).
//!
//! The cure, as kernels do for their idle critical sections: the `hlt` lives at a
//! known address, and an interrupt that arrives with the saved RIP on it resumes
//! after it instead ([`resume_past_idle_hlt`], called by the trap dispatcher).

use core::sync::atomic::{AtomicU64, Ordering};

core::arch::global_asm!(
    ".pushsection .text.xenlet_idle,\"ax\"",
    ".global xenlet_sti_hlt",
    "xenlet_sti_hlt:",
    "    sti",
    ".global xenlet_idle_hlt",
    "xenlet_idle_hlt:",
    "    hlt",
    "    ret",
    ".popsection",
);

extern "C" {
    fn xenlet_sti_hlt();
    fn xenlet_idle_hlt();
}

/// Interrupts that arrived on the idle `hlt` and were resumed past it.
static RESCUED: AtomicU64 = AtomicU64::new(0);

/// Enables interrupts and halts until the next one (`sti; hlt`). Call with
/// interrupts disabled, after checking for work.
pub fn enable_and_hlt() {
    // SAFETY: the routine only enables interrupts, halts and returns; it touches no memory and follows the C ABI (no arguments, no callee-saved register used).
    unsafe { xenlet_sti_hlt() }
}

/// If `rip` (an interrupted context's) is the idle `hlt`, returns where to resume
/// instead: past it, so the halt ends as it would have had the interrupt come during
/// the `hlt`.
pub fn resume_past_idle_hlt(rip: u64) -> Option<u64> {
    let hlt = xenlet_idle_hlt as *const () as u64;
    (rip == hlt).then(|| {
        RESCUED.fetch_add(1, Ordering::Relaxed);
        hlt + 1 // `hlt` is one byte (F4)
    })
}

/// How many interrupts [`resume_past_idle_hlt`] moved past the idle `hlt`.
pub fn rescued() -> u64 {
    RESCUED.load(Ordering::Relaxed)
}
