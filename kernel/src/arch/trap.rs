//! IDT, trap entry stubs and the interrupt-handler registry.
//!
//! Stable Rust has no `extern "x86-interrupt"`, so each of the 256 vectors gets a
//! 16-byte assembly stub that pushes a dummy error code (where the CPU pushes none)
//! and the vector number, then a common path that saves the general registers and
//! calls [`trap_dispatch`] with a [`TrapFrame`]. CPU exceptions (0–31) go to the
//! exception handler given to [`init`] (the fault report, which lives in a higher
//! layer: `sys::fault`); other vectors go to the handler registered with
//! [`register`] — the seam the Xen event-channel upcall uses.

use crate::arch::{gdt, pic};
use crate::sync::irqlock::IrqLock;
use spin::Once;

/// Saved state of the interrupted context, in stack order.
#[repr(C)]
#[derive(Debug)]
#[allow(missing_docs)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    pub vector: u64,
    pub error_code: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

core::arch::global_asm!(
    r#"
    .section .text
    .balign 16
    .global xenlet_trap_stubs
xenlet_trap_stubs:
    .set vec, 0
    .rept 256
    .balign 16
    .if (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
    .else
    pushq $0
    .endif
    pushq $vec
    jmp xenlet_trap_common
    .set vec, vec + 1
    .endr

xenlet_trap_common:
    push %rax
    push %rbx
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %rbp
    push %r8
    push %r9
    push %r10
    push %r11
    push %r12
    push %r13
    push %r14
    push %r15
    cld
    mov %rsp, %rdi
    call {dispatch}
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rbp
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rbx
    pop %rax
    add $16, %rsp
    iretq
    "#,
    dispatch = sym trap_dispatch,
    options(att_syntax)
);

extern "C" {
    static xenlet_trap_stubs: u8;
}

/// Bytes between consecutive stubs (each is `.balign 16`).
const STUB_BYTES: u64 = 16;

/// An interrupt handler: gets the vector it was called for.
pub type Handler = fn(u8);

/// What a CPU exception ends in: report it and stop (never returns). It runs in
/// fault context, so it must not allocate nor wait on a lock normal code holds.
pub type ExceptionHandler = fn(&TrapFrame) -> !;

static HANDLERS: IrqLock<[Option<Handler>; 256]> = IrqLock::new([None; 256]);
/// Set once by [`init`], before the IDT is loaded; read with one atomic load.
static ON_EXCEPTION: Once<ExceptionHandler> = Once::new();
static IDT: Once<[u128; 256]> = Once::new();

#[repr(C, packed)]
struct IdtPointer {
    limit: u16,
    base: u64,
}

/// Encodes a 64-bit interrupt gate (type 0xE, present, DPL 0).
fn gate(handler: u64, selector: u16, ist: u8) -> u128 {
    let low = (handler & 0xffff)
        | (u64::from(selector) << 16)
        | (u64::from(ist & 7) << 32)
        | (0x8e << 40)
        | ((handler >> 16) & 0xffff) << 48;
    u128::from(low) | (u128::from(handler >> 32) << 64)
}

/// Builds and loads the IDT; CPU exceptions go to `on_exception` from then on.
/// Interrupts stay disabled.
pub fn init(on_exception: ExceptionHandler) {
    ON_EXCEPTION.call_once(|| on_exception);
    let base = core::ptr::addr_of!(xenlet_trap_stubs) as u64;
    let cs = gdt::code_selector();
    let idt = IDT.call_once(|| {
        let mut idt = [0u128; 256];
        for (v, g) in idt.iter_mut().enumerate() {
            let ist = match v {
                8 => gdt::IST_DOUBLE_FAULT,
                2 | 18 => gdt::IST_NMI,
                _ => 0,
            };
            *g = gate(base + v as u64 * STUB_BYTES, cs, ist);
        }
        idt
    });
    let ptr = IdtPointer {
        limit: (core::mem::size_of_val(idt) - 1) as u16,
        base: idt.as_ptr() as u64,
    };
    // SAFETY: the IDT lives in a static for the life of the kernel and every gate points at a stub of `xenlet_trap_stubs`, which saves state and calls `trap_dispatch` with a valid frame.
    unsafe {
        core::arch::asm!("lidt [{}]", in(reg) &ptr, options(readonly, nostack, preserves_flags))
    };
}

/// Triple-faults on purpose (`crash triple`): interrupts off, an IDT with no gate
/// (limit 0), then a read of an unmapped address. The #PF cannot be delivered (its
/// gate is beyond the limit: #GP), nor the #GP (#DF), nor the #DF: the CPU shuts
/// down, which Xen reports as a triple fault. The test bed's evidence reader must
/// then blame the guest (the IDT's limit), not the emulated nested SVM.
pub fn triple_fault() -> ! {
    let ptr = IdtPointer { limit: 0, base: 0 };
    // The load at 16 TiB (beyond the 4 GiB identity map) faults before it reads anything.
    // SAFETY: interrupts go off first, so nothing else goes through the empty IDT; the load faults and the shutdown that follows ends the vCPU: no code runs after it.
    unsafe {
        core::arch::asm!(
            "cli",
            "lidt [{ptr}]",
            "mov {tmp}, [{addr}]",
            ptr = in(reg) &ptr,
            addr = in(reg) 0x1000_0000_0000u64,
            tmp = out(reg) _,
            options(nostack)
        )
    };
    crate::arch::cpu::halt_forever()
}

/// Registers `handler` for `vector` (32–255). Returns false if the vector is a CPU
/// exception or already taken.
pub fn register(vector: u8, handler: Handler) -> bool {
    if vector < 32 {
        return false;
    }
    let mut h = HANDLERS.lock();
    let slot = &mut h[usize::from(vector)];
    if slot.is_some() {
        return false;
    }
    *slot = Some(handler);
    true
}

/// Names of the CPU exception vectors, for the fault report.
pub fn exception_name(vector: u64) -> &'static str {
    const NAMES: [&str; 32] = [
        "divide error (#DE)",
        "debug (#DB)",
        "NMI",
        "breakpoint (#BP)",
        "overflow (#OF)",
        "bound range (#BR)",
        "invalid opcode (#UD)",
        "device not available (#NM)",
        "double fault (#DF)",
        "coprocessor segment overrun",
        "invalid TSS (#TS)",
        "segment not present (#NP)",
        "stack fault (#SS)",
        "general protection (#GP)",
        "page fault (#PF)",
        "reserved 15",
        "x87 floating point (#MF)",
        "alignment check (#AC)",
        "machine check (#MC)",
        "SIMD floating point (#XM)",
        "virtualization (#VE)",
        "control protection (#CP)",
        "reserved 22",
        "reserved 23",
        "reserved 24",
        "reserved 25",
        "reserved 26",
        "reserved 27",
        "hypervisor injection (#HV)",
        "VMM communication (#VC)",
        "security (#SX)",
        "reserved 31",
    ];
    usize::try_from(vector)
        .ok()
        .and_then(|v| NAMES.get(v))
        .copied()
        .unwrap_or("interrupt")
}

/// Called by the common stub with the saved frame.
extern "C" fn trap_dispatch(frame: &mut TrapFrame) {
    let vector = frame.vector as u8;
    if frame.vector < 32 {
        match ON_EXCEPTION.get() {
            Some(report) => report(frame),
            None => crate::arch::cpu::halt_forever(), // unreachable: set before `lidt`
        }
    }
    if let Some(rip) = crate::arch::halt::resume_past_idle_hlt(frame.rip) {
        frame.rip = rip;
    }
    let handler = HANDLERS.lock()[usize::from(vector)];
    // Nothing reachable from an interrupt may allocate: the heap's lock may be held
    // by the code this interrupted. A handler that does panics (loudly) here.
    let _no_alloc = crate::mm::heap::forbid_allocation();
    match pic::end_of_interrupt_needed(vector) {
        Some(pic::Irq::Spurious) => {}
        Some(pic::Irq::Real) => {
            if let Some(h) = handler {
                h(vector);
            }
            pic::end_of_interrupt(vector);
        }
        None => {
            if let Some(h) = handler {
                h(vector);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::gate;

    #[test]
    fn gate_encoding_matches_the_sdm() {
        let g = gate(0x1122_3344_5566_7788, 0x08, 1);
        assert_eq!(g & 0xffff, 0x7788);
        assert_eq!((g >> 16) & 0xffff, 0x08);
        assert_eq!((g >> 32) & 0xff, 1);
        assert_eq!((g >> 40) & 0xff, 0x8e);
        assert_eq!((g >> 48) & 0xffff, 0x5566);
        assert_eq!((g >> 64) & 0xffff_ffff, 0x1122_3344);
        assert_eq!(g >> 96, 0);
    }
}
