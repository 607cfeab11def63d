//! The DHCPv6 client of the WAN (RFC 8415), sans-I/O, as odhcp6c runs for OpenWrt's
//! `wan6` (`proto dhcpv6`): Solicit/Advertise/Request/Reply for an address (IA_NA,
//! `reqaddress try|force|none`) and a delegated prefix (IA_PD, `reqprefix
//! auto|no|<length>`), optional Rapid Commit, Renew at T1, Rebind at T2, Release on
//! shutdown, the retransmission of RFC 8415 §15, DNS servers (option 23) and the
//! domain search list (option 24).
//!
//! - [`message`]: the checked parser (every length, a bounded number of options,
//!   addresses, prefixes, servers and domains) and the builder.
//! - [`client`]: when to send what ([`Client`]), what a message received does to it.
//! - [`delegation`]: the LAN's /64 of the delegated prefix ([`LanPrefix`]), its
//!   announced lifetimes, and the deprecation of one that went.
//!
//! The glue sends the payloads [`Client::poll`] returns from UDP port 546 to
//! `ff02::1:2` port 547 on the WAN link and hands what comes back to port 546 to
//! [`Client::received`]; [`Client::lease`] says what was obtained.

pub mod client;
pub mod delegation;
pub mod message;

pub use client::{Client, ClientConfig, Dhcp6Counters, Lease, ReqAddress, ReqPrefix, State};
pub use delegation::{lan_subnet, LanPrefix};
pub use message::{Message, ParseError};

#[cfg(test)]
mod tests;
