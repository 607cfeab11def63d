//! x86_64 hardware layer: CPU identification, GDT/TSS, traps and interrupts, the
//! idle halt, the legacy PIC, the local APIC (x2APIC, for the Xen upcall), port I/O,
//! the null guard (paging). This is one of the few places with `unsafe` code.

pub mod cpu;
pub mod gdt;
pub mod halt;
pub mod lapic;
pub mod paging;
pub mod pic;
pub mod pio;
pub mod stack;
pub mod trap;
