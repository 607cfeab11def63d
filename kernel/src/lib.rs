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

pub mod acpi;
pub mod klog;
pub mod mm;
pub mod time;

#[cfg(target_os = "none")]
pub mod arch;
#[cfg(target_os = "none")]
pub mod clock;
#[cfg(target_os = "none")]
pub mod commands;
#[cfg(target_os = "none")]
pub mod console;
#[cfg(target_os = "none")]
pub mod dd;
#[cfg(target_os = "none")]
pub mod ddfile;
#[cfg(target_os = "none")]
pub mod fault;
#[cfg(target_os = "none")]
pub mod frontends;
#[cfg(target_os = "none")]
pub mod fscmds;
#[cfg(target_os = "none")]
pub mod gnttab;
#[cfg(target_os = "none")]
pub mod idle;
#[cfg(target_os = "none")]
pub mod kmain;
#[cfg(target_os = "none")]
pub mod network;
#[cfg(target_os = "none")]
pub mod physmem;
#[cfg(target_os = "none")]
pub mod power;
#[cfg(target_os = "none")]
pub mod unplug;
#[cfg(target_os = "none")]
pub mod vfs;
#[cfg(target_os = "none")]
pub mod xen;
#[cfg(target_os = "none")]
pub mod xenbus;
#[cfg(target_os = "none")]
pub mod xenstore;

/// The Xenlet version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git revision the kernel was built from.
pub const GIT_REV: &str = env!("XENLET_GIT_REV");
