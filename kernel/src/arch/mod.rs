//! x86_64 hardware layer: CPU identification, GDT/TSS, traps and interrupts, the
//! legacy PIC, port I/O. This is one of the few places with `unsafe` code.

pub mod cpu;
pub mod gdt;
pub mod pic;
pub mod pio;
pub mod trap;
