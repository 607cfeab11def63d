//! The router's interfaces: name, MAC, MTU, IPv4 addresses and offload abilities.
//!
//! One entry per Ethernet link the kernel gives the router (a netfront each), by
//! [`IfId`] = index in the table. Addresses can change at run time (DHCP on the WAN);
//! the [`crate::forward::Router`] keeps the connected routes in step (Linux's
//! `fib_add_ifaddr`, `net/ipv4/fib_frontend.c`). A small fixed number of addresses per
//! interface ([`MAX_ADDRS`]), like smoltcp's `iface-max-addr-count`.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::net::Ipv4Addr;

use smoltcp::wire::EthernetAddress;

use crate::ipnet::Ipv4Net;
use crate::IfId;

/// How many IPv4 addresses one interface can hold.
pub const MAX_ADDRS: usize = 4;

/// What the kernel tells the router about a link when it adds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfConfig {
    /// Name shown by `ip link`/`ip route` (`eth0`).
    pub name: String,
    /// The link's MAC address (frames to it are for the router).
    pub mac: EthernetAddress,
    /// IP MTU of the link (1500 for Ethernet).
    pub mtu: u16,
    /// The link takes TCP/IPv4 GSO frames (netback's `feature-gso-tcpv4`).
    pub has_tx_gso: bool,
    /// The link takes TCP/IPv6 GSO frames (netback's `feature-gso-tcpv6`).
    pub has_tx_gso6: bool,
    /// The link completes partial checksums (netfront `csum_blank` on TX, the default
    /// unless `feature-no-csum-offload`); if not, the router completes them in software.
    pub has_tx_csum_offload: bool,
    /// Clamp the TCP MSS of SYNs leaving by this link to its path MTU (OpenWrt's
    /// per-zone `mtu_fix`).
    pub is_mss_clamped: bool,
}

/// An interface of the router.
#[derive(Clone, Debug)]
pub struct Interface {
    config: IfConfig,
    addrs: [Option<Ipv4Net>; MAX_ADDRS],
    /// The IPv6 link MTU a router advertisement gave (RFC 4861 §6.3.4's LinkMTU,
    /// Linux's `mtu6`), below [`IfConfig::mtu`]; `None`: the link's.
    mtu6: Option<u16>,
}

impl Interface {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.config.name
    }
    /// Its MAC address.
    pub fn mac(&self) -> EthernetAddress {
        self.config.mac
    }
    /// Its IP MTU.
    pub fn mtu(&self) -> u16 {
        self.config.mtu
    }
    /// Its IPv6 MTU: the link's, or less if a router advertisement said so.
    pub fn mtu6(&self) -> u16 {
        self.mtu6
            .map_or(self.config.mtu, |m| m.min(self.config.mtu))
    }
    /// Its configuration.
    pub fn config(&self) -> &IfConfig {
        &self.config
    }
    /// Its IPv4 addresses (with their prefix lengths).
    pub fn addrs(&self) -> impl Iterator<Item = Ipv4Net> + '_ {
        self.addrs.iter().flatten().copied()
    }
    /// Its first address: the source of ICMP errors it sends.
    pub fn primary_addr(&self) -> Option<Ipv4Addr> {
        self.addrs().next().map(|n| n.addr())
    }
    /// The address to use as source towards `peer`: one on the same subnet, else the
    /// first (Linux's `inet_select_addr`).
    pub fn source_for(&self, peer: Ipv4Addr) -> Option<Ipv4Addr> {
        self.addrs()
            .find(|n| n.contains(peer))
            .map(|n| n.addr())
            .or_else(|| self.primary_addr())
    }
    /// Whether `ip` is one of its addresses.
    pub fn has_addr(&self, ip: Ipv4Addr) -> bool {
        self.addrs().any(|n| n.addr() == ip)
    }
    /// Whether `ip` is the broadcast address of one of its subnets.
    #[inline]
    pub fn is_subnet_broadcast(&self, ip: Ipv4Addr) -> bool {
        self.addrs().any(|n| n.broadcast() == Some(ip))
    }
}

/// Why an interface or address change was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IfError {
    /// The table already holds as many interfaces as were configured.
    TableFull,
    /// The interface has [`MAX_ADDRS`] addresses already.
    TooManyAddrs,
    /// No such interface.
    NoSuchInterface,
    /// No such address on the interface.
    NoSuchAddr,
    /// The MTU is below IPv4's minimum of 68 (RFC 791).
    BadMtu,
    /// The routing table has no room for the connected route.
    RouteTableFull,
}

impl fmt::Display for IfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IfError::TableFull => "interface table full",
            IfError::TooManyAddrs => "too many addresses on the interface",
            IfError::NoSuchInterface => "no such interface",
            IfError::NoSuchAddr => "no such address",
            IfError::BadMtu => "MTU below 68",
            IfError::RouteTableFull => "routing table full",
        })
    }
}

impl core::error::Error for IfError {}

/// The interface table, with a capacity fixed when built.
#[derive(Clone, Debug)]
pub struct Interfaces {
    list: Vec<Interface>,
    capacity: usize,
    /// Every interface's addresses, and their subnets' broadcast addresses, in one
    /// flat list each (kept by [`Self::add_addr`] and [`Self::remove_addr`]): the
    /// forward path asks of every packet's source and destination.
    local: Vec<Ipv4Addr>,
    broadcast: Vec<Ipv4Addr>,
}

impl Interfaces {
    /// An empty table for at most `capacity` interfaces (at most 256: [`IfId`] is a `u8`).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.min(256);
        Interfaces {
            list: Vec::with_capacity(capacity),
            capacity,
            local: Vec::new(),
            broadcast: Vec::new(),
        }
    }

    /// Adds an interface, returning its id.
    pub fn add(&mut self, config: IfConfig) -> Result<IfId, IfError> {
        if config.mtu < 68 {
            return Err(IfError::BadMtu);
        }
        if self.list.len() >= self.capacity {
            return Err(IfError::TableFull);
        }
        let id = u8::try_from(self.list.len()).map_err(|_| IfError::TableFull)?;
        self.list.push(Interface {
            config,
            addrs: [None; MAX_ADDRS],
            mtu6: None,
        });
        Ok(IfId(id))
    }

    /// The interface `id`.
    pub fn get(&self, id: IfId) -> Option<&Interface> {
        self.list.get(usize::from(id.0))
    }

    /// All interfaces with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (IfId, &Interface)> {
        self.list
            .iter()
            .enumerate()
            .filter_map(|(i, ifc)| Some((IfId(u8::try_from(i).ok()?), ifc)))
    }

    /// How many interfaces there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Changes the MTU of `id`.
    pub fn set_mtu(&mut self, id: IfId, mtu: u16) -> Result<(), IfError> {
        if mtu < 68 {
            return Err(IfError::BadMtu);
        }
        let ifc = self
            .list
            .get_mut(usize::from(id.0))
            .ok_or(IfError::NoSuchInterface)?;
        ifc.config.mtu = mtu;
        Ok(())
    }

    /// Sets the IPv6 MTU of `id` (a router advertisement's MTU option; `None`:
    /// the link's). Under IPv6's minimum of 1280 it is refused.
    pub fn set_mtu6(&mut self, id: IfId, mtu: Option<u16>) -> Result<(), IfError> {
        if mtu.is_some_and(|m| m < 1280) {
            return Err(IfError::BadMtu);
        }
        let ifc = self
            .list
            .get_mut(usize::from(id.0))
            .ok_or(IfError::NoSuchInterface)?;
        ifc.mtu6 = mtu;
        Ok(())
    }

    /// Adds `net` (address and prefix) to `id`. Adding an address it has already
    /// replaces its prefix.
    pub fn add_addr(&mut self, id: IfId, net: Ipv4Net) -> Result<(), IfError> {
        let ifc = self
            .list
            .get_mut(usize::from(id.0))
            .ok_or(IfError::NoSuchInterface)?;
        if let Some(slot) = ifc
            .addrs
            .iter_mut()
            .flatten()
            .find(|n| n.addr() == net.addr())
        {
            *slot = net;
            self.reindex();
            return Ok(());
        }
        let slot = ifc
            .addrs
            .iter_mut()
            .find(|s| s.is_none())
            .ok_or(IfError::TooManyAddrs)?;
        *slot = Some(net);
        self.reindex();
        Ok(())
    }

    /// Removes the address `addr` from `id`, returning it with its prefix.
    pub fn remove_addr(&mut self, id: IfId, addr: Ipv4Addr) -> Result<Ipv4Net, IfError> {
        let ifc = self
            .list
            .get_mut(usize::from(id.0))
            .ok_or(IfError::NoSuchInterface)?;
        let slot = ifc
            .addrs
            .iter_mut()
            .find(|s| s.is_some_and(|n| n.addr() == addr))
            .ok_or(IfError::NoSuchAddr)?;
        let net = slot.take().ok_or(IfError::NoSuchAddr)?;
        self.reindex();
        Ok(net)
    }

    /// Rebuilds the flat lists of addresses and broadcast addresses.
    fn reindex(&mut self) {
        self.local.clear();
        self.broadcast.clear();
        for n in self.list.iter().flat_map(Interface::addrs) {
            self.local.push(n.addr());
            self.broadcast.extend(n.broadcast());
        }
    }

    /// Whether `ip` is an address of any interface (a packet to it is for the router).
    #[inline]
    pub fn is_local_addr(&self, ip: Ipv4Addr) -> bool {
        self.local.contains(&ip)
    }

    /// Whether `ip` is the broadcast address of any connected subnet.
    #[inline]
    pub fn is_any_subnet_broadcast(&self, ip: Ipv4Addr) -> bool {
        self.broadcast.contains(&ip)
    }
}

/// Formats a MAC address the way `ip` does: `52:54:00:12:34:56`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacDisplay(pub EthernetAddress);

impl fmt::Display for MacDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0 .0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn cfg(name: &str) -> IfConfig {
        crate::testutil::ifconfig(name, [0x52, 0x54, 0, 0, 0, 1], 1500)
    }

    #[test]
    fn add_addresses_and_query() {
        let mut t = Interfaces::new(2);
        let a = t.add(cfg("eth0")).unwrap();
        let b = t.add(cfg("eth1")).unwrap();
        assert_eq!(t.add(cfg("eth2")), Err(IfError::TableFull));
        assert_eq!((a, b), (IfId(0), IfId(1)));
        t.add_addr(a, Ipv4Net::new(Ipv4Addr::new(192, 168, 1, 1), 24).unwrap())
            .unwrap();
        t.add_addr(a, Ipv4Net::new(Ipv4Addr::new(10, 9, 0, 1), 16).unwrap())
            .unwrap();
        let ifc = t.get(a).unwrap();
        assert!(ifc.has_addr(Ipv4Addr::new(192, 168, 1, 1)));
        assert!(ifc.is_subnet_broadcast(Ipv4Addr::new(192, 168, 1, 255)));
        assert_eq!(
            ifc.source_for(Ipv4Addr::new(10, 9, 3, 3)),
            Some(Ipv4Addr::new(10, 9, 0, 1))
        );
        assert_eq!(
            ifc.source_for(Ipv4Addr::new(8, 8, 8, 8)),
            Some(Ipv4Addr::new(192, 168, 1, 1))
        );
        assert!(t.is_local_addr(Ipv4Addr::new(10, 9, 0, 1)));
        assert!(!t.is_local_addr(Ipv4Addr::new(10, 9, 0, 2)));
        assert!(t.is_any_subnet_broadcast(Ipv4Addr::new(192, 168, 1, 255)));
        assert!(t.is_any_subnet_broadcast(Ipv4Addr::new(10, 9, 255, 255)));
        // a new prefix for an address it has: the old broadcast is no longer one
        t.add_addr(a, Ipv4Net::new(Ipv4Addr::new(10, 9, 0, 1), 24).unwrap())
            .unwrap();
        assert!(!t.is_any_subnet_broadcast(Ipv4Addr::new(10, 9, 255, 255)));
        assert!(t.is_any_subnet_broadcast(Ipv4Addr::new(10, 9, 0, 255)));
        let n = t.remove_addr(a, Ipv4Addr::new(192, 168, 1, 1)).unwrap();
        assert_eq!(n.prefix_len(), 24);
        assert!(!t.is_local_addr(Ipv4Addr::new(192, 168, 1, 1)));
        assert!(!t.is_any_subnet_broadcast(Ipv4Addr::new(192, 168, 1, 255)));
        assert!(t.is_local_addr(Ipv4Addr::new(10, 9, 0, 1)));
        assert_eq!(
            t.remove_addr(a, Ipv4Addr::new(192, 168, 1, 1)),
            Err(IfError::NoSuchAddr)
        );
        for i in 0..MAX_ADDRS as u8 - 1 {
            t.add_addr(b, Ipv4Net::new(Ipv4Addr::new(10, i, 0, 1), 8).unwrap())
                .unwrap();
        }
        t.add_addr(b, Ipv4Net::new(Ipv4Addr::new(11, 0, 0, 1), 8).unwrap())
            .unwrap();
        assert_eq!(
            t.add_addr(b, Ipv4Net::new(Ipv4Addr::new(12, 0, 0, 1), 8).unwrap()),
            Err(IfError::TooManyAddrs)
        );
        assert_eq!(t.set_mtu(b, 67), Err(IfError::BadMtu));
    }

    #[test]
    fn mac_formats_like_ip() {
        let m = MacDisplay(EthernetAddress([0x52, 0x54, 0, 0x12, 0x34, 0x56]));
        assert_eq!(m.to_string(), "52:54:00:12:34:56");
    }
}
