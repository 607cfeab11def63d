//! What one DHCPv6 server serves: odhcpd's `dhcpv6 'server'` on one interface of
//! OpenWrt's `/etc/config/dhcp`.

use crate::route6::Ipv6Net;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::Ipv6Addr;

/// odhcpd's `dhcpv6_hostid_len` default: host ids of 12 bits.
pub const HOSTID_LEN: u8 = 12;
/// odhcpd's first host id: `::1`..`::ff` are never handed out.
pub const POOL_START: u64 = 0x100;
/// The most IA_NA options one message is served for (more get NoAddrsAvail).
pub const MAX_IAS_PER_MESSAGE: usize = 8;
/// The most leases one client (DUID) holds: its IAs, bounded.
pub const MAX_LEASES_PER_CLIENT: usize = 4;

/// A fixed host name for a client, by the MAC its DUID carries (`config host`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedHost {
    /// The MAC.
    pub mac: [u8; 6],
    /// The name.
    pub name: String,
}

/// The server of one interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dhcp6Config {
    /// The interface's UCI name (`lan`), for the listings.
    pub interface: String,
    /// The /64 the addresses come from (the LAN's ULA /64).
    pub prefix: Ipv6Net,
    /// The router's own addresses (never handed out).
    pub router_addrs: Vec<Ipv6Addr>,
    /// The interface's MAC: the server's DUID-LL and the replies' source.
    pub mac: [u8; 6],
    /// DNS servers announced (the router's ULA).
    pub dns: Vec<Ipv6Addr>,
    /// The domain search list (`lan`); empty for none.
    pub domain: String,
    /// Valid (and preferred) lifetime of an address, s (`leasetime`, 12 h by default;
    /// `u32::MAX` for infinite).
    pub lease_secs: u32,
    /// The bounded lease table's size.
    pub max_leases: usize,
    /// Whether a Solicit with Rapid Commit is answered by a Reply (odhcpd does).
    pub rapid_commit: bool,
    /// Configured host names (they win over the client's FQDN).
    pub hosts: Vec<NamedHost>,
    /// Bits of host id (odhcpd's `dhcpv6_hostid_len`, 12..=32 here).
    pub hostid_len: u8,
}

impl Dhcp6Config {
    /// odhcpd's defaults for `prefix` on an interface with `mac`: 12 h leases, DNS
    /// and domain none until set, rapid commit, 12-bit host ids, 1000 leases.
    pub fn new(interface: &str, prefix: Ipv6Net, mac: [u8; 6]) -> Dhcp6Config {
        Dhcp6Config {
            interface: String::from(interface),
            prefix: prefix.network(),
            router_addrs: Vec::new(),
            mac,
            dns: Vec::new(),
            domain: String::new(),
            lease_secs: 43_200,
            max_leases: crate::dhcpd::config::DEFAULT_MAX_LEASES,
            rapid_commit: true,
            hosts: Vec::new(),
            hostid_len: HOSTID_LEN,
        }
    }

    /// The host ids handed out: `POOL_START..=2^hostid_len - 1`.
    pub fn pool(&self) -> (u64, u64) {
        let bits = self.hostid_len.clamp(HOSTID_LEN, 32);
        (POOL_START, (1u64 << bits) - 1)
    }

    /// The address of host id `id` in the prefix.
    pub fn address(&self, id: u64) -> Ipv6Addr {
        Ipv6Addr::from(u128::from(self.prefix.addr()) | u128::from(id))
    }

    /// The host id of `a` if it is in the prefix and the pool.
    pub fn host_id(&self, a: Ipv6Addr) -> Option<u64> {
        if !self.prefix.contains(a) {
            return None;
        }
        let id = u64::try_from(u128::from(a) & u128::from(u64::MAX)).ok()?;
        let (first, last) = self.pool();
        (first..=last).contains(&id).then_some(id)
    }

    /// The server's DUID: DUID-LL (type 3, hardware type 1) of the MAC.
    pub fn duid(&self) -> Vec<u8> {
        let mut d = alloc::vec![0, 3, 0, 1];
        d.extend_from_slice(&self.mac);
        d
    }
}
