//! The LAN's DHCPv4 server (RFC 2131/2132), sans-I/O, behaving like dnsmasq.
//!
//! - [`options`]: the checked option parser and writer (RFC 2132, RFC 3396).
//! - [`message`]: the BOOTP header view and reply builder (RFC 2131 §2).
//! - [`config`]: the pool configuration OpenWrt's `/etc/config/dhcp` maps onto.
//! - [`lease`]: the bounded lease table and dnsmasq's lease file.
//! - [`server`]: the protocol state machine ([`DhcpServer`]).
//!
//! The kernel owns the UDP socket on port 67 of the LAN interface; it passes each
//! payload to [`DhcpServer::handle`] with the monotonic time and sends the
//! [`Reply`] to the address [`ReplyTo`] names, on port 68.

pub mod config;
pub mod lease;
pub mod message;
pub mod options;
pub mod server;

pub use config::{ExtraOption, PoolConfig, StaticHost};
pub use lease::{Lease, LoadReport};
pub use message::{HwAddr, MessageType};
pub use server::{DhcpCounters, DhcpServer, Reply, ReplyTo};

#[cfg(test)]
mod tests;
