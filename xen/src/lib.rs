//! Xenlet's Xen platform layer, one Xen concept per file.
//!
//! - [`cpuid`]: finding Xen (the `XenVMMXenVMM` leaves) and its features;
//! - [`hypercall`]: the hypercall page and typed hypercalls (`xen_version`,
//!   `memory_op`, `hvm_op`, `event_channel_op`, `sched_op`, `console_io`);
//! - [`shared`]: a page shared with Xen or another domain, accessed by copy only;
//! - [`shared_info`]: the shared info page and `vcpu_info`;
//! - [`ring`]: the io/ring.h request/response ring, frontend side;
//! - [`pvclock`]: system time from `vcpu_time_info`;
//! - [`evtchn`]: 2-level event channels: the pending scan, notify, mask;
//! - [`gnttab`]: grant table v1 entries, the reference allocator, grant handles;
//! - [`console`]: the PV console ring (`io/console.h`);
//! - [`xenstore`]: the XenStore wire protocol and ring (`io/xs_wire.h`);
//! - [`xenbus`]: frontend/backend states and the shared frontend state machine;
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

extern crate alloc;

pub mod abi;
pub mod console;
pub mod cpuid;
pub mod errno;
pub mod evtchn;
pub mod gnttab;
#[cfg(target_os = "none")]
pub mod hypercall;
pub mod pvclock;
pub mod ring;
pub mod shared;
pub mod shared_info;
pub mod xenbus;
pub mod xenstore;

pub use errno::XenError;
