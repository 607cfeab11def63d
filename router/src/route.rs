//! The IPv4 routing table: longest-prefix match over a fixed number of routes.
//!
//! Connected routes come from interface addresses (`proto kernel scope link`, Linux's
//! `fib_add_ifaddr` in `net/ipv4/fib_frontend.c`), static routes from the configuration
//! (OpenWrt's `config route` in `/etc/config/network`) and the default route from DHCP
//! (`proto dhcp`). Lookup is the longest matching prefix (RFC 1812 §5.2.4.3), lowest
//! metric among equals. A router appliance has a handful of routes, so the table is a
//! linear scan over a `Vec` allocated once, never grown.

use alloc::vec::Vec;
use core::fmt;
use core::net::Ipv4Addr;

use crate::iface::Interfaces;
use crate::IfId;

pub use crate::ipnet::{IpNet, Ipv4Net};

/// Where a route came from (`proto` in `ip route`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteProto {
    /// From an interface address (`proto kernel scope link`).
    Kernel,
    /// Configured (`proto static`, shown without `proto` like iproute2 does for boot
    /// routes).
    Static,
    /// From a DHCP lease (`proto dhcp`).
    Dhcp,
}

/// One route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The destination network (host bits clear; `/0` is the default route).
    pub dest: Ipv4Net,
    /// The next hop; `None` for a directly connected network.
    pub gateway: Option<Ipv4Addr>,
    /// The interface it leaves by.
    pub ifc: IfId,
    /// A path MTU smaller than the interface's (`ip route ... mtu 1400`).
    pub mtu: Option<u16>,
    /// The preferred source address (`src`).
    pub src: Option<Ipv4Addr>,
    /// Lower wins among routes with the same prefix length.
    pub metric: u32,
    /// Where it came from.
    pub proto: RouteProto,
}

/// Why a route change was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteError {
    /// The table holds as many routes as it was built for.
    TableFull,
    /// No such route.
    NotFound,
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RouteError::TableFull => "routing table full",
            RouteError::NotFound => "no such route",
        })
    }
}

impl core::error::Error for RouteError {}

/// A route as the table sees it: [`Route`] (IPv4) and [`crate::route6::Route6`].
pub trait RouteEntry: Copy {
    /// Its destination's type.
    type Net: IpNet;
    /// The destination network.
    fn dest(&self) -> &Self::Net;
    /// The destination network, to clear its host bits.
    fn dest_mut(&mut self) -> &mut Self::Net;
    /// Lower wins among routes with the same prefix length.
    fn metric(&self) -> u32;
    /// Where it came from.
    fn proto(&self) -> RouteProto;
}

/// Implements [`RouteEntry`] for a route struct with `dest`, `metric` and `proto`
/// fields.
macro_rules! route_entry {
    ($route:ty, $net:ty) => {
        impl $crate::route::RouteEntry for $route {
            type Net = $net;
            #[inline]
            fn dest(&self) -> &$net {
                &self.dest
            }
            #[inline]
            fn dest_mut(&mut self) -> &mut $net {
                &mut self.dest
            }
            #[inline]
            fn metric(&self) -> u32 {
                self.metric
            }
            #[inline]
            fn proto(&self) -> $crate::route::RouteProto {
                self.proto
            }
        }
    };
}
pub(crate) use route_entry;

route_entry!(Route, Ipv4Net);

/// A routing table of either family: a fixed number of routes, longest-prefix match.
#[derive(Clone, Debug)]
pub struct Table<R> {
    routes: Vec<R>,
    capacity: usize,
}

/// The IPv4 routing table.
pub type RouteTable = Table<Route>;

impl<R: RouteEntry> Table<R> {
    /// An empty table for at most `capacity` routes.
    pub fn new(capacity: usize) -> Self {
        Table {
            routes: Vec::with_capacity(capacity),
            capacity,
        }
    }

    /// Adds a route (its destination's host bits are cleared). A route with the same
    /// destination, metric and protocol is replaced (`ip route replace`).
    pub fn add(&mut self, mut route: R) -> Result<(), RouteError> {
        *route.dest_mut() = route.dest().network();
        if let Some(r) = self.routes.iter_mut().find(|r| {
            r.dest() == route.dest() && r.metric() == route.metric() && r.proto() == route.proto()
        }) {
            *r = route;
            return Ok(());
        }
        if self.routes.len() >= self.capacity {
            return Err(RouteError::TableFull);
        }
        self.routes.push(route);
        Ok(())
    }

    /// Removes the routes for which `pred` holds, returning how many.
    pub fn remove_where(&mut self, mut pred: impl FnMut(&R) -> bool) -> usize {
        let before = self.routes.len();
        self.routes.retain(|r| !pred(r));
        before - self.routes.len()
    }

    /// The best route to `dst`: longest prefix, then lowest metric, then the first added.
    #[inline]
    pub fn lookup(&self, dst: <R::Net as IpNet>::Addr) -> Option<&R> {
        let mut best: Option<&R> = None;
        for r in self.routes.iter().filter(|r| r.dest().contains(dst)) {
            best = match best {
                Some(b)
                    if b.dest().prefix_len() > r.dest().prefix_len()
                        || (b.dest().prefix_len() == r.dest().prefix_len()
                            && b.metric() <= r.metric()) =>
                {
                    Some(b)
                }
                _ => Some(r),
            };
        }
        best
    }

    /// Whether the table has no route.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The routes, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = &R> {
        self.routes.iter()
    }
}

impl Table<Route> {
    /// Sets (or with `None` removes) the default route learnt from DHCP.
    pub fn set_dhcp_default(
        &mut self,
        via: Option<(Ipv4Addr, IfId)>,
        src: Option<Ipv4Addr>,
    ) -> Result<(), RouteError> {
        self.remove_where(|r| r.proto == RouteProto::Dhcp && r.dest.prefix_len() == 0);
        if let Some((gw, ifc)) = via {
            self.add(Route {
                dest: Ipv4Net::new(Ipv4Addr::UNSPECIFIED, 0).ok_or(RouteError::NotFound)?,
                gateway: Some(gw),
                ifc,
                mtu: None,
                src,
                metric: 0,
                proto: RouteProto::Dhcp,
            })?;
        }
        Ok(())
    }

    /// The routes as `ip route` prints them, with interface names from `ifaces`.
    pub fn lines<'a>(&'a self, ifaces: &'a Interfaces) -> impl Iterator<Item = RouteLine<'a>> {
        self.routes
            .iter()
            .map(move |route| RouteLine { route, ifaces })
    }
}

/// One route formatted like `ip route`:
/// `default via 10.0.0.1 dev eth1 proto dhcp`,
/// `192.168.1.0/24 dev eth0 proto kernel scope link src 192.168.1.1`.
pub struct RouteLine<'a> {
    route: &'a Route,
    ifaces: &'a Interfaces,
}

impl fmt::Display for RouteLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.route;
        if r.dest.prefix_len() == 0 {
            f.write_str("default")?;
        } else {
            write!(f, "{}", r.dest)?;
        }
        if let Some(gw) = r.gateway {
            write!(f, " via {gw}")?;
        }
        match self.ifaces.get(r.ifc) {
            Some(i) => write!(f, " dev {}", i.name())?,
            None => write!(f, " dev if{}", r.ifc.0)?,
        }
        match r.proto {
            RouteProto::Kernel => f.write_str(" proto kernel scope link")?,
            RouteProto::Dhcp => f.write_str(" proto dhcp")?,
            RouteProto::Static => {}
        }
        if let Some(src) = r.src {
            write!(f, " src {src}")?;
        }
        if r.metric != 0 {
            write!(f, " metric {}", r.metric)?;
        }
        if let Some(mtu) = r.mtu {
            write!(f, " mtu {mtu}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::ifconfig;
    use alloc::string::ToString;

    fn net(a: [u8; 4], p: u8) -> Ipv4Net {
        Ipv4Net::new(Ipv4Addr::from(a), p).unwrap()
    }

    fn route(dest: Ipv4Net, gw: Option<[u8; 4]>, ifc: u8, metric: u32) -> Route {
        Route {
            dest,
            gateway: gw.map(Ipv4Addr::from),
            ifc: IfId(ifc),
            mtu: None,
            src: None,
            metric,
            proto: RouteProto::Static,
        }
    }

    #[test]
    fn longest_prefix_then_metric() {
        let mut t = RouteTable::new(8);
        t.add(route(net([0, 0, 0, 0], 0), Some([10, 0, 0, 1]), 1, 0))
            .unwrap();
        t.add(route(net([10, 0, 0, 0], 8), Some([10, 0, 0, 9]), 1, 0))
            .unwrap();
        t.add(route(net([10, 1, 0, 0], 16), None, 2, 10)).unwrap();
        t.add(route(net([10, 1, 0, 0], 16), None, 3, 5)).unwrap();
        let l = |t: &RouteTable, a: [u8; 4]| t.lookup(Ipv4Addr::from(a)).map(|r| r.ifc.0);
        assert_eq!(l(&t, [8, 8, 8, 8]), Some(1));
        assert_eq!(
            t.lookup(Ipv4Addr::new(10, 2, 0, 0)).unwrap().gateway,
            Some(Ipv4Addr::new(10, 0, 0, 9))
        );
        assert_eq!(
            l(&t, [10, 1, 2, 3]),
            Some(3),
            "same prefix: lower metric wins"
        );
        assert_eq!(t.remove_where(|r| r.dest.prefix_len() == 0), 1);
        assert_eq!(l(&t, [8, 8, 8, 8]), None);
    }

    #[test]
    fn capacity_is_fixed_and_replace_does_not_grow() {
        let mut t = RouteTable::new(2);
        t.add(route(net([10, 0, 0, 0], 8), None, 0, 0)).unwrap();
        t.add(route(net([10, 0, 0, 0], 8), None, 1, 0)).unwrap();
        assert_eq!(t.iter().count(), 1, "same dest/metric/proto replaced");
        t.add(route(net([11, 0, 0, 0], 8), None, 0, 0)).unwrap();
        assert_eq!(
            t.add(route(net([12, 0, 0, 0], 8), None, 0, 0)),
            Err(RouteError::TableFull)
        );
        // host bits are cleared on insert
        t.remove_where(|_| true);
        t.add(route(net([192, 168, 1, 1], 24), None, 0, 0)).unwrap();
        assert_eq!(t.iter().next().unwrap().dest, net([192, 168, 1, 0], 24));
    }

    #[test]
    fn formats_like_ip_route() {
        let mut ifs = Interfaces::new(2);
        for n in ["eth0", "eth1"] {
            ifs.add(ifconfig(n, [2, 0, 0, 0, 0, 1], 1500)).unwrap();
        }
        let mut t = RouteTable::new(4);
        t.set_dhcp_default(Some((Ipv4Addr::new(10, 0, 0, 1), IfId(1))), None)
            .unwrap();
        t.add(Route {
            dest: net([192, 168, 1, 1], 24),
            gateway: None,
            ifc: IfId(0),
            mtu: None,
            src: Some(Ipv4Addr::new(192, 168, 1, 1)),
            metric: 0,
            proto: RouteProto::Kernel,
        })
        .unwrap();
        let mut r = route(net([172, 16, 0, 0], 12), Some([10, 0, 0, 1]), 1, 0);
        r.mtu = Some(1400);
        t.add(r).unwrap();
        let lines: Vec<_> = t.lines(&ifs).map(|l| l.to_string()).collect();
        assert_eq!(
            lines,
            [
                "default via 10.0.0.1 dev eth1 proto dhcp",
                "192.168.1.0/24 dev eth0 proto kernel scope link src 192.168.1.1",
                "172.16.0.0/12 via 10.0.0.1 dev eth1 mtu 1400",
            ]
        );
        // a new lease replaces the old default
        t.set_dhcp_default(Some((Ipv4Addr::new(10, 0, 0, 254), IfId(1))), None)
            .unwrap();
        assert_eq!(t.iter().filter(|r| r.proto == RouteProto::Dhcp).count(), 1);
        t.set_dhcp_default(None, None).unwrap();
        assert!(t.lookup(Ipv4Addr::new(8, 8, 8, 8)).is_none());
    }
}
