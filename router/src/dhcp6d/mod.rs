//! The LAN's stateful DHCPv6 server (RFC 8415), sans-I/O, as odhcpd's
//! `dhcpv6 'server'` runs on OpenWrt.
//!
//! - [`options`]: the checked option reader and the writer (RFC 8415 §21).
//! - [`message`]: the message header, and the Ethernet frames between a client
//!   on the link and the server.
//! - [`config`]: what one interface serves (its /64, DNS, lease time).
//! - [`lease`]: the bounded lease table (DUID + IAID → address) and its lines in
//!   dnsmasq's lease file.
//! - [`server`]: the protocol state machine ([`Dhcp6Server`]).
//!
//! The glue (`xenlet_net::lanservices`) hands [`Dhcp6Server::handle_frame`] the
//! frames to UDP port 547 the LAN link kept aside and sends back the frame it
//! returns on that link.

pub mod config;
pub mod lease;
pub mod message;
pub mod options;
pub mod server;

pub use config::{Dhcp6Config, NamedHost};
pub use lease::Lease6;
pub use server::{Dhcp6Counters, Dhcp6Server};

#[cfg(test)]
mod tests;
