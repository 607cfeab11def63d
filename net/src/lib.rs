//! Xenlet networking: the smoltcp TCP/IP stack over the PV network frontends, the
//! interface configuration (static or DHCPv4), and the network services and tools
//! the shell drives (ping, an iperf3-compatible server, TCP/UDP echo).
//!
//! Everything here is safe Rust over the [`smoltcp`] socket API and the frontends'
//! frame interface, so it is tested on the host.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod echo;
pub mod iperf3;
