//! Xenlet's Xen platform layer, one Xen concept per file.
//!
//! - [`cpuid`]: finding Xen (the `XenVMMXenVMM` leaves) and its features;
//! - [`hypercall`]: the hypercall page and typed hypercalls (`xen_version`,
//!   `memory_op`, `hvm_op`, `event_channel_op`, `sched_op`, `console_io`);
//! - [`shared`]: a page shared with Xen or another domain, accessed by copy only;
//! - [`shared_info`]: the shared info page and `vcpu_info`;
//! - [`evtchn`]: 2-level event channels: the pending scan, notify, mask;
//! - [`console`]: the PV console ring (`io/console.h`);
//! - [`errno`]: Xen's error numbers by name.
//!
//! Constants and structs come from `xen-sys` where it has them (xen.h,
//! event_channel.h, sched.h); what it lacks (hvm/params.h, memory.h, io/console.h,
//! version.h) is defined in [`abi`], each with the header it follows. xen-sys's own
//! hypercall helpers are not used (arg 5 in r9, `call` under `nostack`, `sched_op`
//! passing the argument by value).
//!
//! `unsafe` is denied crate-wide; only `hypercall.rs` and `shared.rs` allow it.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod abi;
pub mod console;
pub mod cpuid;
pub mod errno;
pub mod evtchn;
#[cfg(target_os = "none")]
pub mod hypercall;
pub mod shared;
pub mod shared_info;

pub use errno::XenError;
