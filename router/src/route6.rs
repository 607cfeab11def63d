//! The IPv6 routing table and the router's own IPv6 addresses.
//!
//! The same shape as the IPv4 table ([`crate::route`]): a fixed number of routes,
//! longest-prefix match (`::/0` is the default route), lowest metric among equals.
//! Connected routes come from the addresses given to
//! [`crate::forward::Router::add_address6`]; the default route and delegated prefixes
//! are for the later slices (an RA on the WAN gives `default via fe80::... dev wan`,
//! DHCPv6-PD a prefix whose /64s go to the LAN interfaces). The table starts empty:
//! with no route the router forwards no IPv6 at all (it used to fail closed, and
//! today's deployments keep doing so).

use alloc::vec::Vec;
use core::net::Ipv6Addr;

pub use crate::ipnet::Ipv6Net;
use crate::route::{route_entry, RouteProto, Table};
use crate::IfId;

/// One IPv6 route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route6 {
    /// The destination (host bits clear; `::/0` is the default route).
    pub dest: Ipv6Net,
    /// The next hop (usually a router's link-local address); `None` for an on-link
    /// prefix.
    pub gateway: Option<Ipv6Addr>,
    /// The interface it leaves by.
    pub ifc: IfId,
    /// A path MTU smaller than the interface's.
    pub mtu: Option<u16>,
    /// Lower wins among routes with the same prefix length.
    pub metric: u32,
    /// Where it came from (`Dhcp` for RA/DHCPv6-learnt routes).
    pub proto: RouteProto,
}

route_entry!(Route6, Ipv6Net);

/// The IPv6 routing table (with no route, no IPv6 is forwarded).
pub type Route6Table = Table<Route6>;

/// How many IPv6 addresses (besides its link-local one) the router holds in all.
pub const MAX_ADDRS6: usize = 32;

/// The router's own IPv6 addresses, by interface (a fixed number). Every interface
/// also has its modified-EUI-64 link-local address ([`crate::ipv6::link_local_of`]),
/// which is not listed here.
#[derive(Clone, Debug, Default)]
pub struct Addrs6 {
    list: Vec<(IfId, Ipv6Net)>,
}

impl Addrs6 {
    /// Adds `net` to `ifc` (again: no change). `false` if the table is full.
    pub fn add(&mut self, ifc: IfId, net: Ipv6Net) -> bool {
        if self.list.contains(&(ifc, net)) {
            return true;
        }
        if self.list.len() >= MAX_ADDRS6 {
            return false;
        }
        if self.list.capacity() == 0 {
            self.list.reserve_exact(MAX_ADDRS6);
        }
        self.list.push((ifc, net));
        true
    }

    /// Removes `addr` from `ifc`, returning its network.
    pub fn remove(&mut self, ifc: IfId, addr: Ipv6Addr) -> Option<Ipv6Net> {
        let i = self
            .list
            .iter()
            .position(|(i, n)| *i == ifc && n.addr() == addr)?;
        Some(self.list.remove(i).1)
    }

    /// Whether `a` is one of them.
    pub fn contains(&self, a: Ipv6Addr) -> bool {
        self.list.iter().any(|(_, n)| n.addr() == a)
    }

    /// The addresses of `ifc`.
    pub fn of(&self, ifc: IfId) -> impl Iterator<Item = Ipv6Net> + '_ {
        self.list
            .iter()
            .filter(move |(i, _)| *i == ifc)
            .map(|(_, n)| *n)
    }

    /// The first of them (on any interface).
    pub fn any(&self) -> Option<Ipv6Addr> {
        self.list.first().map(|(_, n)| n.addr())
    }

    /// The source for a packet from `ifc` to `peer`: an address of `ifc` on the
    /// peer's prefix, else its first global one (RFC 6724 simplified).
    pub fn source_for(&self, ifc: IfId, peer: Ipv6Addr) -> Option<Ipv6Addr> {
        self.of(ifc)
            .find(|n| n.contains(peer))
            .or_else(|| self.of(ifc).next())
            .map(|n| n.addr())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::route::RouteError;
    use alloc::string::ToString;

    fn net(s: &str, p: u8) -> Ipv6Net {
        Ipv6Net::new(s.parse().unwrap(), p).unwrap()
    }

    fn route(dest: Ipv6Net, ifc: u8, metric: u32) -> Route6 {
        Route6 {
            dest,
            gateway: None,
            ifc: IfId(ifc),
            mtu: None,
            metric,
            proto: RouteProto::Static,
        }
    }

    #[test]
    fn longest_prefix_then_metric_and_the_default() {
        let mut t = Route6Table::new(8);
        assert!(t.lookup("2001:db8::1".parse().unwrap()).is_none());
        t.add(route(net("::", 0), 0, 0)).unwrap();
        t.add(route(net("2001:db8:1::5", 48), 1, 10)).unwrap();
        t.add(route(net("2001:db8:1::", 48), 2, 5)).unwrap();
        t.add(route(net("2001:db8:1:2::", 64), 3, 0)).unwrap();
        let l = |a: &str| t.lookup(a.parse().unwrap()).unwrap().ifc.0;
        assert_eq!(l("2001:db8:1:2::9"), 3);
        assert_eq!(l("2001:db8:1:3::9"), 2, "lower metric of the /48s");
        assert_eq!(l("2001:db9::1"), 0, "default");
        assert_eq!(t.iter().nth(1).unwrap().dest, net("2001:db8:1::", 48));
    }

    #[test]
    fn capacity_is_fixed() {
        let mut t = Route6Table::new(1);
        t.add(route(net("fd00::", 8), 0, 0)).unwrap();
        t.add(route(net("fd00::", 8), 1, 0)).unwrap(); // replaced
        assert_eq!(
            t.add(route(net("fd01::", 16), 0, 0)),
            Err(RouteError::TableFull)
        );
        assert_eq!(t.remove_where(|r| r.ifc == IfId(1)), 1);
        assert!(t.is_empty());
    }

    #[test]
    fn prefixes() {
        assert!(Ipv6Net::new(Ipv6Addr::UNSPECIFIED, 129).is_none());
        let n = net("2001:db8::1", 64);
        assert!(n.contains("2001:db8::ffff".parse().unwrap()));
        assert!(!n.contains("2001:db8:0:1::".parse().unwrap()));
        assert!(net("::", 0).contains("ff02::1".parse().unwrap()));
        assert_eq!(n.network().to_string(), "2001:db8::/64");
        let mut a = Addrs6::default();
        assert!(a.add(IfId(1), n));
        assert_eq!(
            a.source_for(IfId(1), "2001:db9::1".parse().unwrap()),
            Some(n.addr())
        );
        assert!(a.contains(n.addr()));
        assert_eq!(a.remove(IfId(1), n.addr()), Some(n));
        assert!(!a.contains(n.addr()));
    }
}
