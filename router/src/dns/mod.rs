//! The LAN's DNS forwarder (RFC 1035), sans-I/O, behaving like dnsmasq.
//!
//! - [`name`]: domain names, the bounded decompressing reader.
//! - [`message`]: the checked message reader and the local answer writer.
//! - [`private`]: private address ranges (`boguspriv`, rebind protection).
//! - [`reverse`]: the addresses `in-addr.arpa` and `ip6.arpa` names stand for.
//! - [`cache`]: the LRU, TTL-aware answer cache.
//! - [`forwarder`]: local answers, the cache and upstream forwarding
//!   ([`DnsForwarder`]).
//! - [`tcp`]: DNS over TCP's framing and one connection's bounded state.
//!
//! Clients may be IPv4 or IPv6 (`SocketAddr`): an IPv6 client's query is
//! forwarded, merged, cached and checked for rebinding as an IPv4 client's is, and
//! its answer goes back to its address. Upstream servers may be IPv4 or IPv6
//! addresses too; the configuration gives IPv4 ones only (IPv6 servers come with
//! the WAN's DHCPv6 client, not built).
//!
//! The kernel owns the UDP socket on port 53 of the LAN addresses, the TCP
//! connections to it, and one socket (UDP, or a TCP connection) per pending
//! upstream query (on the random port the forwarder picks); it feeds messages in
//! and carries out the returned [`DnsAction`]s.

pub mod cache;
pub mod forwarder;
pub mod message;
pub mod name;
pub mod private;
pub mod reverse;
pub mod tcp;

pub use cache::CacheConfig;
pub use forwarder::{DnsAction, DnsConfig, DnsCounters, DnsDrop, DnsForwarder};

use crate::Millis;
use core::net::{Ipv4Addr, Ipv6Addr};

/// Randomness for query ids and source ports, from the caller.
pub trait Rng {
    /// The next 32 random bits.
    fn next_u32(&mut self) -> u32;
}

/// The names the LAN's hosts go by (the DHCP server's leases).
pub trait HostTable {
    /// The address of host `name` (no domain, case-insensitive).
    fn address_of(&self, name: &str, now: Millis) -> Option<Ipv4Addr>;
    /// The host name of the host at `ip`.
    fn name_of(&self, ip: Ipv4Addr, now: Millis) -> Option<&str>;
    /// The IPv6 address of host `name` (its DHCPv6 lease), if any.
    fn address6_of(&self, _name: &str, _now: Millis) -> Option<Ipv6Addr> {
        None
    }
    /// The host name of the host at IPv6 address `ip`.
    fn name6_of(&self, _ip: Ipv6Addr, _now: Millis) -> Option<&str> {
        None
    }
}

/// No hosts.
impl HostTable for () {
    fn address_of(&self, _: &str, _: Millis) -> Option<Ipv4Addr> {
        None
    }
    fn name_of(&self, _: Ipv4Addr, _: Millis) -> Option<&str> {
        None
    }
}

impl HostTable for crate::dhcpd::DhcpServer {
    fn address_of(&self, name: &str, now: Millis) -> Option<Ipv4Addr> {
        crate::dhcpd::DhcpServer::address_of(self, name, now)
    }
    fn name_of(&self, ip: Ipv4Addr, now: Millis) -> Option<&str> {
        crate::dhcpd::DhcpServer::name_of(self, ip, now)
    }
}

#[cfg(test)]
mod tests;
