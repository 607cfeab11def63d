//! Xenlet device drivers, in safe Rust over typed hardware abstractions.
//!
//! Drivers never touch hardware directly: they get a [`pio::PortIo`] (and, for the Xen
//! frontends to come, shared rings and grant handles) from the kernel, which holds the
//! few `unsafe` lines. That keeps every driver testable on the host against a fake.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

// Host tests count their heap (blkfront's slot table).
#[cfg(test)]
xenlet_testalloc::count_test_heap!();

pub mod blkfront;
pub mod blkif;
pub mod blocksync;
pub mod bytering;
pub mod console;
pub mod flow;
pub mod netback;
pub mod netfront;
pub mod netif;
pub mod pio;
pub mod platform;
#[cfg(test)]
mod testplatform;
pub mod uart16550;
