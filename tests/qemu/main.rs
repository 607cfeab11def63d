//! Boot the kernel in QEMU and drive its shell over the serial port.
//!
//! Run with `cargo xtask test` (it builds the kernel and provides QEMU).

mod boot;
mod dd;
mod faults;
mod files;
mod multiboot2;
mod power;
mod shell;
