//! The Xenlet kernel: from the boot stub to the shell.
//!
//! Data path: `boot` (entry, boot information) → `arch` (GDT, IDT, PIC, port I/O) →
//! `mm` (frames, heap) → `clock` → `console` → the shell (`commands`). The Xen
//! platform layer (hypercalls, event channels, grant tables, XenStore) slots in
//! between `mm` and the drivers.
//!
//! Pure logic (`mm::frame`, `time`, `acpi`) builds for the host too and is unit-tested
//! there; everything that touches hardware is compiled for `target_os = "none"` only.
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]

extern crate alloc;

// The layers, lowest first. Each may import only from the layers above it in this
// list (`cargo xtask lint` checks it: xtask/src/layers.rs holds the same order).
#[cfg(target_os = "none")]
pub mod arch;
#[cfg(target_os = "none")]
pub mod bootinfo;
#[cfg(target_os = "none")]
pub mod dev;
#[cfg(target_os = "none")]
pub mod fs;
pub mod io;
#[cfg(target_os = "none")]
pub mod kmain;
pub mod mm;
#[cfg(target_os = "none")]
pub mod shell;
#[cfg(target_os = "none")]
pub mod sync;
pub mod sys;
pub mod time;
#[cfg(target_os = "none")]
pub mod xen;

/// The Xenlet version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git revision the kernel was built from.
pub const GIT_REV: &str = env!("XENLET_GIT_REV");
