//! Fault and panic reports: every CPU exception and every panic prints what happened
//! on the console and stops the machine cleanly — no silent scroll, no reboot loop.

use crate::arch::cpu;
use crate::arch::trap::{exception_name, TrapFrame};
use crate::io::console::EmergencyWriter;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, Ordering};

static STOPPING: AtomicBool = AtomicBool::new(false);

/// Prints the fault report for a CPU exception and stops.
pub fn report_and_stop(f: &TrapFrame) -> ! {
    if STOPPING.swap(true, Ordering::SeqCst) {
        // A fault while reporting a fault: say nothing more, stop.
        cpu::halt_forever();
    }
    let w = &mut EmergencyWriter;
    let _ = write!(
        w,
        "\n*** XENLET FAULT: {} (vector {}), error code {:#x}\n\
         ***   rip {:#018x}  cs {:#06x}  rflags {:#010x}\n\
         ***   rsp {:#018x}  ss {:#06x}  cr2 {:#018x}\n\
         ***   rax {:#018x}  rbx {:#018x}  rcx {:#018x}  rdx {:#018x}\n\
         ***   rsi {:#018x}  rdi {:#018x}  rbp {:#018x}\n\
         ***   r8  {:#018x}  r9  {:#018x}  r10 {:#018x}  r11 {:#018x}\n\
         ***   r12 {:#018x}  r13 {:#018x}  r14 {:#018x}  r15 {:#018x}\n",
        exception_name(f.vector),
        f.vector,
        f.error_code,
        f.rip,
        f.cs,
        f.rflags,
        f.rsp,
        f.ss,
        cpu::cr2(),
        f.rax,
        f.rbx,
        f.rcx,
        f.rdx,
        f.rsi,
        f.rdi,
        f.rbp,
        f.r8,
        f.r9,
        f.r10,
        f.r11,
        f.r12,
        f.r13,
        f.r14,
        f.r15,
    );
    let stack = crate::arch::stack::boot_stack();
    let cr2 = cpu::cr2();
    if f.vector == 14 {
        let _ = writeln!(
            w,
            "***   {}",
            crate::sys::pagefault::cause(f.error_code, cr2)
        );
    }
    if stack.overflowed_at(f.rsp) || (f.vector == 14 && stack.overflowed_at(cr2)) {
        let _ = writeln!(
            w,
            "***   the kernel stack overflowed: {} KiB at {:#x}-{:#x}, the guard page below it was hit",
            stack.bytes() / 1024,
            stack.bottom,
            stack.top
        );
    }
    crate::sys::power::stop_after_fault()
}

/// The panic handler: message and location, then stop.
#[cfg(not(test))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    if STOPPING.swap(true, Ordering::SeqCst) {
        cpu::halt_forever();
    }
    let w = &mut EmergencyWriter;
    let _ = write!(w, "\n*** XENLET PANIC");
    if let Some(l) = info.location() {
        let _ = write!(w, " at {}:{}:{}", l.file(), l.line(), l.column());
    }
    let _ = writeln!(w, ": {}", info.message());
    crate::sys::power::stop_after_fault()
}

/// What the `crash` shell command can provoke, to show the reports work.
#[derive(Clone, Copy, Debug)]
pub enum Deliberate {
    /// Read an unmapped address (#PF).
    PageFault,
    /// Read address 0: page 0 is not mapped (#PF).
    NullPointer,
    /// Write the kernel's own code, which is mapped read-only (#PF).
    WriteCode,
    /// Jump into data, which is mapped no-execute (#PF).
    ExecuteData,
    /// Execute `ud2` (#UD).
    InvalidOpcode,
    /// Divide by zero in hardware (#DE).
    DivideError,
    /// Load a non-canonical address (#GP).
    GeneralProtection,
    /// `panic!`.
    Panic,
    /// `panic!` while a console write holds the consoles' locks: the fault path
    /// must still reach Xen's `SHUTDOWN_crash`.
    PanicInConsoleWrite,
    /// Recurse until the boot stack runs into its guard page (#PF that cannot be
    /// delivered on the same stack, so a #DF on its own stack).
    StackOverflow,
    /// A #PF with an empty IDT: no report, the CPU shuts down (a triple fault).
    TripleFault,
}

/// A `ret` instruction in writable data (`crash nx`): mapped no-execute.
static mut RET_IN_DATA: [u8; 16] = [0xc3; 16];

/// One KiB of stack per call, without end: only the guard page stops it.
#[inline(never)]
#[allow(unconditional_recursion)]
fn deeper(depth: u64) -> u64 {
    let mut frame = [0u8; 1024];
    frame[0] = depth as u8;
    core::hint::black_box(&mut frame);
    deeper(depth + 1).wrapping_add(u64::from(core::hint::black_box(&frame)[0]))
}

/// Provokes the fault `kind`; does not return.
pub fn provoke(kind: Deliberate) -> ! {
    match kind {
        // Each instruction below faults before it changes any state; the handler reports
        // and stops the machine, so execution never continues past it.
        Deliberate::PageFault => {
            // SAFETY: a load from 16 TiB, far above the 4 GiB identity map: not present, so it faults (see above) and nothing is read.
            unsafe {
                core::arch::asm!("mov {0}, [{1}]", out(reg) _, in(reg) 0x1000_0000_0000u64, options(nostack))
            };
        }
        // SAFETY: a load from address 0: page 0 is not mapped (boot/src/entry.rs), so it faults and nothing is read.
        Deliberate::NullPointer => unsafe {
            core::arch::asm!("mov {0}, [{1}]", out(reg) _, in(reg) 0u64, options(nostack));
        },
        // SAFETY: writes the first byte of this function back with its own value: the write faults (code is read-only), and were it to go through it would change nothing.
        Deliberate::WriteCode => unsafe {
            core::arch::asm!("mov {b}, byte ptr [{a}]", "mov byte ptr [{a}], {b}",
                a = in(reg) provoke as *const () as u64, b = out(reg_byte) _, options(nostack));
        },
        // SAFETY: calls a `ret` instruction kept in writable data: the fetch faults (data is no-execute); were it to run, it would return at once having changed nothing.
        Deliberate::ExecuteData => unsafe {
            core::arch::asm!("call {0}", in(reg) core::ptr::addr_of!(RET_IN_DATA) as u64,
                clobber_abi("C"));
        },
        // SAFETY: see above.
        Deliberate::InvalidOpcode => unsafe { core::arch::asm!("ud2", options(nostack)) },
        // SAFETY: see above.
        Deliberate::DivideError => unsafe {
            core::arch::asm!("xor edx, edx", "xor eax, eax", "xor ecx, ecx", "div ecx",
                out("eax") _, out("edx") _, out("ecx") _, options(nostack));
        },
        // SAFETY: see above.
        Deliberate::GeneralProtection => unsafe {
            core::arch::asm!("mov {0}, [{1}]", out(reg) _, in(reg) 0x8000_0000_0000_0000u64, options(nostack));
        },
        Deliberate::Panic => panic!("deliberate panic from the shell"),
        Deliberate::PanicInConsoleWrite => {
            crate::io::console::while_writing(|| panic!("deliberate panic during a console write"))
        }
        Deliberate::StackOverflow => {
            core::hint::black_box(deeper(0));
        }
        Deliberate::TripleFault => crate::arch::trap::triple_fault(),
    }
    panic!("the deliberate {kind:?} did not fault");
}
