//! The Xenlet kernel: from the boot stub to the shell.
//!
//! Layers, lowest first; a module imports only from layers below its own (and from
//! its own layer without a cycle), which `cargo xtask lint` checks
//! (xtask/src/layers.rs): `sync` (the interrupt-safe lock) → `mm` (frames, heap) →
//! `arch` (CPU, GDT, IDT and trap stubs, PIC, LAPIC, port I/O, halt) → `time`
//! (`Instant`, the clock source) → `bootinfo` → `io` (console, `dmesg` log,
//! `println!`) → `xen` (platform, idle, grant table, XenStore, xenbus, unplug) →
//! `sys` (power, shutdown requests, fault reports, ACPI) → `dev` (PV frontends,
//! network) → `fs` (VFS) → `shell` (commands) → `kmain` (wiring and init order).
//! What a lower layer needs from a higher one is registered at init by `kmain`: the
//! exception handler (`arch::trap::init`), the PV console's hypercalls
//! (`io::console::attach_xen_console`), pvclock (`time::clock::use_pvclock`), the
//! shutdown hooks (`sys::power::on_orderly_shutdown`, `on_xen_shutdown`), XenStore
//! watch callbacks (`xen::xenstore::watch`).
//!
//! Pure logic (`mm::frame`, `time::instant`, `sys::acpi`, `io::klog`'s ring) builds for
//! the host too and is unit-tested there; the shell commands' parsing and reports are
//! in `xenlet_shell::commands` (and the dd engine in `xenlet_shell::ddcopy`), tested
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
pub mod router;
#[cfg(target_os = "none")]
pub mod shell;
pub mod sync;
pub mod sys;
pub mod time;
#[cfg(target_os = "none")]
pub mod xen;

/// The Xenlet version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The git revision the kernel was built from.
pub const GIT_REV: &str = env!("XENLET_GIT_REV");
