//! One network interface: a [`Link`], its smoltcp [`Interface`] and sockets, its
//! addresses (static, DHCPv4, IPv6 link-local) and routes, and the services that
//! listen on it.
//!
//! Each interface has its own socket set: smoltcp sends a socket's packets through
//! whichever interface polls it, so sockets are kept with the interface they belong
//! to.

use crate::config::{self, IfConfig};
use crate::dad::{Dad, Outcome as DadOutcome};
use crate::echo::EchoServer;
use crate::iperf3::{Iperf3Memory, Iperf3Server};
use crate::link::{emit_to, Link, LinkDevice, Neighbors};
use crate::tso::Coalescer;
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use smoltcp::iface::{Config, Interface, PollResult, SocketHandle, SocketSet};
use smoltcp::socket::dhcpv4;
use smoltcp::time::Instant;
use smoltcp::wire::{
    EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv4Address, Ipv4Cidr, Ipv6Address,
};

/// The next [`NetIf::instance`] number.
static NEXT_INSTANCE: AtomicU64 = AtomicU64::new(1);

/// Egress passes per poll at most (each sends up to one segment per socket).
const EGRESS_PASSES: usize = 64;
/// How long a poll waits, at most, for transmit room when smoltcp has something to
/// send and the link is full ([`NetIf::poll_at`]): the backend's completion event
/// normally comes first.
const TX_FULL_RECHECK_MS: i64 = 5;

/// Where an address came from (for `ip addr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Configured statically.
    Static,
    /// From a DHCPv4 lease.
    Dhcp,
    /// The IPv6 link-local address.
    LinkLocal,
}

/// A route as `ip route` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteView {
    /// Destination (prefix length 0 = default).
    pub cidr: IpCidr,
    /// Gateway, if not on-link.
    pub via: Option<IpAddress>,
    /// Source address for on-link routes.
    pub src: Option<IpAddress>,
    /// Installed by DHCP.
    pub dhcp: bool,
}

/// A network interface.
pub struct NetIf<L: Link> {
    /// Its name (eth0, eth1, …).
    pub name: String,
    instance: u64,
    /// The frontend under it.
    pub link: L,
    /// smoltcp's interface.
    pub iface: Interface,
    /// Sockets that use this interface.
    pub sockets: SocketSet<'static>,
    neighbors: Neighbors,
    scratch: Vec<u8>,
    tx_dropped: u64,
    rx_csum: crate::link::RxCsumStats,
    dhcp: Option<SocketHandle>,
    dhcp_addr: Option<Ipv4Cidr>,
    dhcp_gw: bool,
    dhcp_dns: Vec<Ipv4Address>,
    origins: Vec<(IpCidr, Origin)>,
    events: VecDeque<String>,
    iperf: Option<Iperf3Server>,
    echo: Option<EchoServer>,
    tso: Coalescer,
    dad: Dad,
    /// Addresses held back while duplicate address detection runs
    /// ([`Self::add_addr_tentative`]): not in smoltcp, so never a source, never
    /// answered for, until found unique.
    tentative: Vec<IpCidr>,
    /// Tentative addresses found duplicate, for their owner
    /// ([`Self::take_dad_failures`]; at most [`crate::dad::MAX_TENTATIVE`]).
    dad_failed: Vec<IpCidr>,
}

impl<L: Link> NetIf<L> {
    /// Brings up `link` as `name` with `config` (addresses, gateways, DHCP).
    pub fn new(name: &str, mut link: L, config: &IfConfig, now_ms: i64, seed: u64) -> Self {
        let mac = link.mac();
        let mut cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
        cfg.random_seed = seed;
        let mut neighbors = Neighbors::default();
        let mut scratch = Vec::new();
        let mut dropped = 0;
        let mut tso = Coalescer::default();
        // smoltcp keeps the device's capabilities (MTU, checksums) from here on
        let iface = {
            let mut dev = LinkDevice::new(&mut link, &mut neighbors, &mut scratch, &mut dropped)
                .with_tso(&mut tso);
            Interface::new(cfg, &mut dev, Instant::from_millis(now_ms))
        };
        let mut n = NetIf {
            name: String::from(name),
            instance: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            link,
            iface,
            sockets: SocketSet::new(Vec::new()),
            neighbors,
            scratch,
            tx_dropped: dropped,
            rx_csum: crate::link::RxCsumStats::default(),
            dhcp: None,
            dhcp_addr: None,
            dhcp_gw: false,
            dhcp_dns: Vec::new(),
            origins: Vec::new(),
            events: VecDeque::new(),
            iperf: None,
            echo: None,
            tso,
            dad: Dad::new(mac),
            tentative: Vec::new(),
            dad_failed: Vec::new(),
        };
        let ll = IpCidr::new(IpAddress::Ipv6(config::link_local(mac)), 64);
        let _ = n.add_addr_from(ll, Origin::LinkLocal);
        n.apply(config);
        n
    }

    /// A number no other interface made since boot has: a vif detached and
    /// attached again under the same name is a new instance, so a service holding
    /// handles into the old one's socket set can tell.
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// Applies a configuration on top of what is there.
    pub fn apply(&mut self, config: &IfConfig) {
        for a in &config.addrs {
            if let Err(e) = self.add_addr(*a) {
                self.event(format!("{}: {e}", self.name));
            }
        }
        if let Some(g) = config.gw4 {
            self.set_gateway(IpAddress::Ipv4(g));
        }
        if let Some(g) = config.gw6 {
            self.set_gateway(IpAddress::Ipv6(g));
        }
        let wants_dhcp = config.dhcp || (config.addrs.is_empty() && config.gw4.is_none());
        if wants_dhcp {
            self.start_dhcp();
        }
    }

    fn event(&mut self, s: String) {
        if self.events.len() < 32 {
            self.events.push_back(s);
        }
    }

    /// A message for the console (DHCP lease gained or lost, …).
    pub fn take_event(&mut self) -> Option<String> {
        self.events.pop_front()
    }

    /// Starts the DHCPv4 client (if not running).
    pub fn start_dhcp(&mut self) {
        if self.dhcp.is_none() {
            self.dhcp = Some(self.sockets.add(dhcpv4::Socket::new()));
        }
    }

    /// Stops the DHCPv4 client (if running): its lease's address and default route
    /// taken off, its DNS servers forgotten (as netifd's `ifdown` of a `proto dhcp`
    /// interface; no DHCPRELEASE, as OpenWrt's udhcpc sends none unless asked to).
    /// The address it held, if any.
    pub fn stop_dhcp(&mut self) -> Option<Ipv4Cidr> {
        let h = self.dhcp.take()?;
        self.sockets.remove(h);
        self.dhcp_dns.clear();
        let held = self.dhcp_addr;
        if let Some(a) = held {
            let _ = self.del_addr(IpCidr::Ipv4(a));
        }
        if self.dhcp_gw {
            self.del_gateway(false);
        }
        held
    }

    /// Whether DHCPv4 runs.
    pub fn dhcp_running(&self) -> bool {
        self.dhcp.is_some()
    }

    /// Adds a static address.
    pub fn add_addr(&mut self, cidr: IpCidr) -> Result<(), String> {
        self.add_addr_from(cidr, Origin::Static)
    }

    fn add_addr_from(&mut self, cidr: IpCidr, origin: Origin) -> Result<(), String> {
        if self.iface.ip_addrs().contains(&cidr) {
            return Err(format!("address {cidr} already assigned"));
        }
        let mut full = false;
        self.iface.update_ip_addrs(|a| full = a.push(cidr).is_err());
        if full {
            return Err(String::from("too many addresses on the interface"));
        }
        self.origins.push((cidr, origin));
        if let IpCidr::Ipv6(c) = cidr {
            self.dad.start(c.address());
        }
        Ok(())
    }

    /// Adds an IPv6 address as RFC 4862 §5.4 says: tentative while duplicate
    /// address detection runs (not used as a source, not answered for: smoltcp
    /// does not have it yet), then taken and announced if unique; if duplicate,
    /// dropped and handed to [`Self::take_dad_failures`] (`wan6` declines a
    /// DHCPv6 one). If the prober is full (more than
    /// [`crate::dad::MAX_TENTATIVE`] at once) it is taken at once, unprobed.
    pub fn add_addr_tentative(&mut self, cidr: IpCidr) -> Result<(), String> {
        let IpCidr::Ipv6(c) = cidr else {
            return self.add_addr(cidr);
        };
        if self.iface.ip_addrs().contains(&cidr) || self.tentative.contains(&cidr) {
            return Err(format!("address {cidr} already assigned"));
        }
        if !self.dad.start(c.address()) {
            return self.add_addr(cidr);
        }
        self.tentative.push(cidr);
        Ok(())
    }

    /// Whether `cidr` waits on duplicate address detection
    /// ([`Self::add_addr_tentative`]).
    pub fn is_tentative(&self, cidr: IpCidr) -> bool {
        self.tentative.contains(&cidr)
    }

    /// The tentative addresses found duplicate since the last call.
    pub fn take_dad_failures(&mut self) -> Vec<IpCidr> {
        core::mem::take(&mut self.dad_failed)
    }

    /// Removes an address (static or DHCP's, or a tentative one).
    pub fn del_addr(&mut self, cidr: IpCidr) -> Result<(), String> {
        if let Some(i) = self.tentative.iter().position(|c| *c == cidr) {
            self.tentative.remove(i);
            if let IpCidr::Ipv6(c) = cidr {
                self.dad.cancel(c.address());
            }
            return Ok(());
        }
        if !self.iface.ip_addrs().contains(&cidr) {
            return Err(format!("address {cidr} not assigned"));
        }
        self.iface.update_ip_addrs(|a| a.retain(|c| *c != cidr));
        self.origins.retain(|(c, _)| *c != cidr);
        if let IpCidr::Ipv6(c) = cidr {
            self.dad.cancel(c.address());
        }
        if self.dhcp_addr.map(IpCidr::Ipv4) == Some(cidr) {
            self.dhcp_addr = None;
        }
        Ok(())
    }

    /// Announces every address of the interface after the domain moved
    /// ([`crate::garp`]): IPv4 by a gratuitous ARP, IPv6 by an unsolicited neighbour
    /// advertisement (with the Router flag if `router`: the domain routes); returns
    /// how many were sent of each (IPv4, IPv6).
    pub fn announce(&mut self, router: bool) -> (usize, usize) {
        let mac = self.link.mac();
        let mut sent = (0, 0);
        for (cidr, _) in self.addrs() {
            let (frame, count) = match cidr {
                IpCidr::Ipv4(c) => (crate::garp::announcement(mac, c.address()), &mut sent.0),
                IpCidr::Ipv6(c) => (
                    crate::garp::neighbour_advertisement(mac, c.address(), router),
                    &mut sent.1,
                ),
            };
            if self.link.send(&frame).is_ok() {
                *count += 1;
            }
        }
        sent
    }

    /// Addresses with their origin.
    pub fn addrs(&self) -> Vec<(IpCidr, Origin)> {
        self.iface
            .ip_addrs()
            .iter()
            .map(|c| {
                let o = self
                    .origins
                    .iter()
                    .find(|(x, _)| x == c)
                    .map_or(Origin::Static, |(_, o)| *o);
                (*c, o)
            })
            .collect()
    }

    /// Sets the default gateway of the address's family.
    pub fn set_gateway(&mut self, gw: IpAddress) {
        let r = match gw {
            IpAddress::Ipv4(a) => self
                .iface
                .routes_mut()
                .add_default_ipv4_route(a)
                .map(|_| ()),
            IpAddress::Ipv6(a) => self
                .iface
                .routes_mut()
                .add_default_ipv6_route(a)
                .map(|_| ()),
        };
        if r.is_err() {
            self.event(format!("{}: route table full", self.name));
        }
        if matches!(gw, IpAddress::Ipv4(_)) {
            self.dhcp_gw = false;
        }
    }

    /// Removes the default gateway of one family; whether there was one.
    pub fn del_gateway(&mut self, v6: bool) -> bool {
        if v6 {
            self.iface
                .routes_mut()
                .remove_default_ipv6_route()
                .is_some()
        } else {
            self.dhcp_gw = false;
            self.iface
                .routes_mut()
                .remove_default_ipv4_route()
                .is_some()
        }
    }

    /// Routes: on-link prefixes of the addresses, then the default routes.
    pub fn routes(&mut self) -> Vec<RouteView> {
        let mut v: Vec<RouteView> = Vec::new();
        for c in self.iface.ip_addrs() {
            if let IpAddress::Ipv6(a) = c.address() {
                if a.is_unicast_link_local() {
                    continue;
                }
            }
            let net = match c {
                IpCidr::Ipv4(c) => IpCidr::Ipv4(c.network()),
                IpCidr::Ipv6(c) => {
                    let bits = c.address().to_bits();
                    let mask = u128::MAX
                        .checked_shl(128 - u32::from(c.prefix_len()))
                        .unwrap_or(0);
                    IpCidr::new(
                        IpAddress::Ipv6(Ipv6Address::from_bits(bits & mask)),
                        c.prefix_len(),
                    )
                }
            };
            if !v.iter().any(|r| r.cidr == net) {
                v.push(RouteView {
                    cidr: net,
                    via: None,
                    src: Some(c.address()),
                    dhcp: false,
                });
            }
        }
        let dhcp_gw = self.dhcp_gw;
        let mut defaults = Vec::new();
        self.iface.routes_mut().update(|t| {
            for r in t.iter() {
                defaults.push(RouteView {
                    cidr: r.cidr,
                    via: Some(r.via_router),
                    src: None,
                    dhcp: dhcp_gw && matches!(r.via_router, IpAddress::Ipv4(_)),
                });
            }
        });
        defaults.extend(v);
        defaults
    }

    /// Whether `dst` is on one of this interface's subnets.
    pub fn on_link(&self, dst: IpAddress) -> bool {
        self.iface.ip_addrs().iter().any(|c| c.contains_addr(&dst))
    }

    /// Whether this interface has a default route for `dst`'s family.
    pub fn has_default_for(&mut self, dst: IpAddress) -> bool {
        let mut found = false;
        self.iface.routes_mut().update(|t| {
            found = t.iter().any(|r| {
                r.cidr.prefix_len() == 0
                    && matches!(
                        (r.via_router, dst),
                        (IpAddress::Ipv4(_), IpAddress::Ipv4(_))
                            | (IpAddress::Ipv6(_), IpAddress::Ipv6(_))
                    )
            })
        });
        found
    }

    /// The source address for `dst`.
    pub fn source_for(&self, dst: IpAddress) -> Option<IpAddress> {
        self.iface.get_source_address(&dst)
    }

    /// Learned neighbours.
    pub fn neighbors(&self) -> &Neighbors {
        &self.neighbors
    }

    /// Frames the link refused.
    pub fn tx_dropped(&self) -> u64 {
        self.tx_dropped
    }

    /// Starts the iperf3 server on `port` (it stays up) with the memory of `mem`;
    /// false if one runs.
    pub fn start_iperf3(&mut self, port: u16, mem: Iperf3Memory) -> bool {
        if self.iperf.is_some() {
            return false;
        }
        self.iperf = Some(Iperf3Server::with_memory(&mut self.sockets, port, mem));
        // its data connections move bulk: large segments ([`crate::mss`])
        self.tso.peers.bulk_port(port);
        true
    }

    /// Starts the TCP/UDP echo server on `port` (it stays up); false if one runs.
    pub fn start_echo(&mut self, port: u16) -> bool {
        if self.echo.is_some() {
            return false;
        }
        self.echo = Some(EchoServer::new(&mut self.sockets, port));
        true
    }

    /// Whether an iperf3 test is running.
    pub fn iperf3_busy(&self) -> bool {
        self.iperf.as_ref().is_some_and(|i| i.busy())
    }

    /// Whether smoltcp could send a frame now ([`LinkDevice::tx_room`]).
    fn tx_room(&mut self) -> bool {
        LinkDevice::new(
            &mut self.link,
            &mut self.neighbors,
            &mut self.scratch,
            &mut self.tx_dropped,
        )
        .with_tso(&mut self.tso)
        .tx_room()
    }

    fn poll_iface(&mut self, now: Instant) -> bool {
        let mut dev = LinkDevice::new(
            &mut self.link,
            &mut self.neighbors,
            &mut self.scratch,
            &mut self.tx_dropped,
        )
        .with_tso(&mut self.tso)
        .with_dad(&mut self.dad);
        let mut changed =
            self.iface.poll(now, &mut dev, &mut self.sockets) == PollResult::SocketStateChanged;
        // smoltcp sends at most one segment per socket per egress pass: keep passing
        // while something goes out (bounded), so a TCP sender fills the ring in one
        // poll rather than one segment per trip through the idle loop.
        for _ in 0..EGRESS_PASSES {
            if self.iface.poll_egress(now, &mut dev, &mut self.sockets)
                != PollResult::SocketStateChanged
            {
                break;
            }
            changed = true;
        }
        self.rx_csum += dev.rx_csum;
        self.tso.flush(&mut emit_to(&mut self.link));
        changed
    }

    /// Received TCP/UDP checksums: offloaded to the backend, checked here, bad.
    pub fn rx_csum(&self) -> crate::link::RxCsumStats {
        self.rx_csum
    }

    /// The transmit merger and its counters (large segments, SYNs raised).
    pub fn tso(&self) -> &Coalescer {
        &self.tso
    }

    /// Processes received frames and sends what sockets have queued, runs the
    /// services (which may queue more, sent at once), then applies a DHCP lease
    /// change. Whether anything happened that sockets should look at.
    pub fn poll(&mut self, now_ms: i64) -> bool {
        let now = Instant::from_millis(now_ms);
        let mut changed = self.poll_iface(now);
        if self.iperf.is_some() || self.echo.is_some() {
            let ms = u64::try_from(now_ms).unwrap_or(0);
            if let Some(i) = self.iperf.as_mut() {
                i.poll(&mut self.sockets, ms);
            }
            if let Some(e) = self.echo.as_mut() {
                e.poll(&mut self.sockets);
            }
            changed |= self.poll_iface(now);
            while let Some(e) = self.iperf.as_mut().and_then(|i| i.take_events()) {
                self.event(e);
            }
        }
        self.poll_dhcp();
        self.poll_dad(now_ms);
        changed
    }

    /// Duplicate address detection ([`crate::dad`]): sends the probes due; an
    /// address found unique is advertised (an unsolicited neighbour advertisement
    /// to all nodes, the Router flag if the link routes), one found duplicate is
    /// removed and said so (Linux: `IPv6: eth0: IPv6 duplicate address ... used by
    /// ... detected!`).
    fn poll_dad(&mut self, now_ms: i64) {
        if self.dad.poll_at().is_none_or(|t| t > now_ms) {
            return;
        }
        let (probes, done) = self.dad.poll(now_ms);
        for f in probes {
            if self.link.send(&f).is_err() {
                self.tx_dropped += 1;
            }
        }
        let mac = self.link.mac();
        for o in done {
            match o {
                DadOutcome::Unique(a) => {
                    // a tentative one is taken now
                    let held = self.take_tentative(a);
                    for c in held {
                        let mut full = false;
                        self.iface.update_ip_addrs(|l| full = l.push(c).is_err());
                        if full {
                            let name = self.name.clone();
                            self.event(format!("{name}: {c}: too many addresses on the interface"));
                        } else {
                            self.origins.push((c, Origin::Static));
                        }
                    }
                    let na = crate::garp::neighbour_advertisement(mac, a, self.link.routes());
                    if self.link.send(&na).is_err() {
                        self.tx_dropped += 1;
                    }
                }
                DadOutcome::Duplicate(a) => {
                    let held = self.take_tentative(a);
                    for c in held {
                        if self.dad_failed.len() < crate::dad::MAX_TENTATIVE {
                            self.dad_failed.push(c);
                        }
                    }
                    let gone: Vec<IpCidr> = self
                        .iface
                        .ip_addrs()
                        .iter()
                        .filter(|c| c.address() == IpAddress::Ipv6(a))
                        .copied()
                        .collect();
                    for c in gone {
                        let _ = self.del_addr(c);
                    }
                    let name = self.name.clone();
                    self.event(format!("ipv6: {a} duplicate on {name}, not used"));
                }
            }
        }
    }

    /// Takes the tentative addresses (with their prefixes) whose address is `a` off
    /// the list: DAD has decided about them.
    fn take_tentative(&mut self, a: Ipv6Address) -> Vec<IpCidr> {
        let held: Vec<IpCidr> = self
            .tentative
            .iter()
            .filter(|c| c.address() == IpAddress::Ipv6(a))
            .copied()
            .collect();
        self.tentative.retain(|c| c.address() != IpAddress::Ipv6(a));
        held
    }

    /// Duplicate address detection's counters, and whether `a` is still tentative.
    pub fn dad(&self) -> &Dad {
        &self.dad
    }

    /// When smoltcp next wants to be polled (ms), if it has a timer running.
    ///
    /// smoltcp asks for a poll at once only to send (data, an ACK, a window
    /// update). While the link has no room for a frame that waits for the
    /// backend's transmit completions, which come with the vif's event: polling
    /// again at once would spin (a 1 MiB send buffer filled the ring and the guest
    /// polled it millions of times, 3.4 s of CPU for 5 s of `iperf3 -R`). The
    /// [`TX_FULL_RECHECK_MS`] timer only backs the event up.
    pub fn poll_at(&mut self, now_ms: i64) -> Option<i64> {
        let smol = self
            .iface
            .poll_at(Instant::from_millis(now_ms), &self.sockets)
            .map(|t| t.total_millis());
        let smol = match smol {
            Some(t) if t <= now_ms && !self.tx_room() => Some(now_ms + TX_FULL_RECHECK_MS),
            s => s,
        };
        match (smol, self.dad.poll_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_dhcp(&mut self) {
        let Some(h) = self.dhcp else { return };
        let ev = match self.sockets.get_mut::<dhcpv4::Socket>(h).poll() {
            None => return,
            Some(dhcpv4::Event::Configured(c)) => {
                self.dhcp_dns = c.dns_servers.iter().copied().collect();
                Some((c.address, c.router))
            }
            Some(dhcpv4::Event::Deconfigured) => {
                self.dhcp_dns.clear();
                None
            }
        };
        if let Some(old) = self.dhcp_addr.take() {
            let _ = self.del_addr(IpCidr::Ipv4(old));
            if self.dhcp_gw {
                self.del_gateway(false);
            }
        }
        match ev {
            Some((addr, router)) => {
                let _ = self.add_addr_from(IpCidr::Ipv4(addr), Origin::Dhcp);
                self.dhcp_addr = Some(addr);
                if let Some(r) = router {
                    let _ = self.iface.routes_mut().add_default_ipv4_route(r);
                    self.dhcp_gw = true;
                }
                let via = router.map(|r| format!(" via {r}")).unwrap_or_default();
                self.event(format!("{}: DHCP lease {addr}{via}", self.name));
            }
            None => self.event(format!("{}: DHCP lease lost", self.name)),
        }
    }

    /// The DNS servers the DHCP lease named (option 6), empty without a lease.
    pub fn dhcp_dns_servers(&self) -> &[Ipv4Address] {
        &self.dhcp_dns
    }

    /// The DHCP lease's address, if there is one.
    pub fn dhcp_address(&self) -> Option<Ipv4Cidr> {
        self.dhcp_addr
    }

    /// The IPv4 address, if any.
    pub fn ipv4(&self) -> Option<Ipv4Address> {
        self.iface.ipv4_addr()
    }

    /// The first IPv4 address with its prefix, if any.
    pub fn ipv4_cidr(&self) -> Option<Ipv4Cidr> {
        self.iface.ip_addrs().iter().find_map(|c| match c {
            IpCidr::Ipv4(c) => Some(*c),
            IpCidr::Ipv6(_) => None,
        })
    }

    /// The gateway of the first default route that `pick` takes (by its family).
    fn default_via<T>(&mut self, pick: impl Fn(IpAddress) -> Option<T>) -> Option<T> {
        let mut gw = None;
        self.iface.routes_mut().update(|t| {
            gw = t
                .iter()
                .filter(|r| r.cidr.prefix_len() == 0)
                .find_map(|r| pick(r.via_router))
        });
        gw
    }

    /// The IPv4 default gateway, if there is one.
    pub fn default_gw4(&mut self) -> Option<Ipv4Address> {
        self.default_via(|a| match a {
            IpAddress::Ipv4(a) => Some(a),
            _ => None,
        })
    }

    /// The IPv6 default gateway, if any.
    pub fn default_gw6(&mut self) -> Option<Ipv6Address> {
        self.default_via(|a| match a {
            IpAddress::Ipv6(a) => Some(a),
            _ => None,
        })
    }

    /// A global IPv6 address, if any.
    pub fn ipv6_global(&self) -> Option<Ipv6Address> {
        self.iface
            .ip_addrs()
            .iter()
            .find_map(|c| match c.address() {
                IpAddress::Ipv6(a) if !a.is_unicast_link_local() => Some(a),
                _ => None,
            })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::link::tests::{cable, Pipe};

    pub fn pair(a: &str, b: &str) -> (NetIf<Pipe>, NetIf<Pipe>) {
        let (pa, pb) = cable();
        (
            NetIf::new("eth0", pa, &config::parse(a).unwrap(), 0, 1),
            NetIf::new("eth0", pb, &config::parse(b).unwrap(), 0, 2),
        )
    }

    /// Appends all that TCP socket `s` has received to `got`.
    fn recv_all(s: &mut smoltcp::socket::tcp::Socket, got: &mut Vec<u8>) {
        while let Ok(n) = s.recv(|buf| {
            got.extend_from_slice(buf);
            (buf.len(), buf.len())
        }) {
            if n == 0 {
                break;
            }
        }
    }

    /// A UDP datagram of `len` bytes from a to b over links of `mtu`; the largest
    /// frame that crossed the cable, if the datagram arrived.
    fn udp_across(mtu: usize, len: usize) -> Option<usize> {
        use smoltcp::socket::udp;
        let (pa, pb) = cable();
        let wire = pa.tx.clone();
        let (mut pa, mut pb) = (pa, pb);
        pa.mtu = mtu;
        pb.mtu = mtu;
        let mut a = NetIf::new("eth0", pa, &config::parse("10.0.0.1/24").unwrap(), 0, 1);
        let mut b = NetIf::new("eth0", pb, &config::parse("10.0.0.2/24").unwrap(), 0, 2);
        let sock = || crate::testnet::udp_socket(4, 65536);
        let (mut sa, mut sb) = (sock(), sock());
        sa.bind(5000).unwrap();
        sb.bind(6000).unwrap();
        let ha = a.sockets.add(sa);
        let hb = b.sockets.add(sb);
        let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
        a.sockets
            .get_mut::<udp::Socket>(ha)
            .send_slice(&payload, (IpAddress::v4(10, 0, 0, 2), 6000))
            .unwrap();
        let mut biggest = 0;
        for now in 0..50 {
            a.poll(now);
            biggest = biggest.max(wire.borrow().iter().map(Vec::len).max().unwrap_or(0));
            b.poll(now);
            if let Ok((data, _)) = b.sockets.get_mut::<udp::Socket>(hb).recv() {
                assert_eq!(data, &payload[..]);
                return Some(biggest);
            }
        }
        None
    }

    #[test]
    fn jumbo_mtu_carries_a_datagram_in_one_frame() {
        // 8000 bytes of UDP: one 8042-byte frame with a 9000 MTU
        assert_eq!(udp_across(9000, 8000), Some(8042));
        // the default MTU takes 1472 bytes in one 1514-byte frame, not 8000 (no
        // IPv4 fragmentation in this stack)
        assert_eq!(udp_across(1500, 1472), Some(1514));
        assert_eq!(udp_across(1500, 8000), None);
    }

    fn v6(s: &str) -> Ipv6Address {
        s.parse().unwrap()
    }

    /// The unsolicited neighbour advertisement (no Router flag) that `mac` sends for
    /// `addr`.
    fn na(mac: [u8; 6], addr: &str) -> Vec<u8> {
        crate::garp::neighbour_advertisement(mac, v6(addr), false)
    }

    /// The node `b` defends `addr` as its own: it advertises it.
    fn defend(b: &mut NetIf<Pipe>, addr: &str) {
        let na = na(b.link.mac(), addr);
        b.link.send(&na).unwrap();
    }

    #[test]
    fn an_ipv6_address_is_probed_then_advertised_the_link_local_one_is_not() {
        // the configured ULA at boot and one added later (as wan6 adds the
        // delegated /64's ::1)
        let (mut a, _b) = pair("10.0.0.1/24,fd00::1/64", "10.0.0.2/24");
        let wire = a.link.tx.clone();
        let mac = a.link.mac();
        let added = IpCidr::new(IpAddress::Ipv6(v6("2001:db8:1::1")), 64);
        a.add_addr(added).unwrap();
        assert!(a.dad().is_tentative(v6("fd00::1")));
        assert!(a.dad().is_tentative(v6("2001:db8:1::1")));
        a.poll(0);
        let sent: Vec<Vec<u8>> = wire.borrow_mut().drain(..).collect();
        for t in ["fd00::1", "2001:db8:1::1"] {
            assert!(
                sent.contains(&crate::dad::probe(mac, v6(t))),
                "probe for {t}"
            );
        }
        let ll = config::link_local(mac);
        assert!(
            !sent.contains(&crate::dad::probe(mac, ll)),
            "the link-local address is not probed"
        );
        assert!(a.poll_at(1).is_some_and(|t| t <= 1_000));
        a.poll(999);
        assert!(!wire.borrow().contains(&na(mac, "fd00::1")));
        // a second later nobody objected: each is advertised (no Router flag: this
        // link does not route) and kept
        a.poll(1_000);
        let sent: Vec<Vec<u8>> = wire.borrow_mut().drain(..).collect();
        for t in ["fd00::1", "2001:db8:1::1"] {
            assert!(sent.contains(&na(mac, t)), "advertisement of {t}");
            assert!(a
                .addrs()
                .iter()
                .any(|(c, _)| c.address() == IpAddress::Ipv6(v6(t))));
        }
        assert!(!a.dad().is_tentative(v6("fd00::1")));
        assert_eq!(a.dad().counters().unique, 2);
        assert_eq!(a.take_event(), None);
    }

    #[test]
    fn an_address_another_node_has_is_removed_and_said() {
        let (mut a, mut b) = pair("10.0.0.1/24", "10.0.0.2/24");
        let wire = a.link.tx.clone();
        let mac = a.link.mac();
        let dup = IpCidr::new(IpAddress::Ipv6(v6("2001:db8:1::1")), 64);
        let ok = IpCidr::new(IpAddress::Ipv6(v6("2001:db8:1::2")), 64);
        a.add_addr(dup).unwrap();
        a.add_addr(ok).unwrap();
        a.poll(0);
        // the node on the other end has 2001:db8:1::1 and defends it
        defend(&mut b, "2001:db8:1::1");
        a.poll(10);
        assert!(!a.addrs().iter().any(|(c, _)| *c == dup), "removed");
        assert_eq!(
            a.take_event().as_deref(),
            Some("ipv6: 2001:db8:1::1 duplicate on eth0, not used")
        );
        wire.borrow_mut().clear();
        a.poll(1_000);
        let sent: Vec<Vec<u8>> = wire.borrow_mut().drain(..).collect();
        assert!(sent.contains(&na(mac, "2001:db8:1::2")));
        assert!(
            !sent.contains(&na(mac, "2001:db8:1::1")),
            "the duplicate is never advertised"
        );
        assert!(
            a.addrs().iter().any(|(c, _)| *c == ok),
            "the other one stays"
        );
        let c = a.dad().counters();
        assert_eq!((c.duplicates, c.unique), (1, 1));
    }

    #[test]
    fn a_tentative_address_is_not_used_until_its_probe_passes_and_a_duplicate_is_handed_back() {
        let (mut a, mut b) = pair("10.0.0.1/24", "10.0.0.2/24");
        let wire = a.link.tx.clone();
        let mac = a.link.mac();
        let good = IpCidr::new(IpAddress::Ipv6(v6("2001:db8:1::10")), 128);
        let dup = IpCidr::new(IpAddress::Ipv6(v6("2001:db8:1::11")), 128);
        a.add_addr_tentative(good).unwrap();
        a.add_addr_tentative(dup).unwrap();
        assert!(a.add_addr_tentative(good).is_err(), "already there");
        for c in [good, dup] {
            assert!(a.is_tentative(c));
            assert!(!a.iface.ip_addrs().contains(&c), "not the stack's yet");
        }
        assert_eq!(
            a.source_for(IpAddress::Ipv6(v6("2001:db8:1::99"))),
            Some(IpAddress::Ipv6(config::link_local(mac))),
            "never a source while tentative"
        );
        a.poll(0);
        let sent: Vec<Vec<u8>> = wire.borrow_mut().drain(..).collect();
        assert!(sent.contains(&crate::dad::probe(mac, v6("2001:db8:1::10"))));
        // the other node defends ::11
        defend(&mut b, "2001:db8:1::11");
        a.poll(10);
        assert_eq!(a.take_dad_failures(), [dup]);
        assert!(!a.is_tentative(dup) && !a.iface.ip_addrs().contains(&dup));
        assert!(a.is_tentative(good));
        a.poll(1_000);
        assert!(!a.is_tentative(good));
        assert!(a.iface.ip_addrs().contains(&good), "taken once unique");
        assert!(a.take_dad_failures().is_empty());
        // removing a tentative one stops its probe
        let gone = IpCidr::new(IpAddress::Ipv6(v6("2001:db8:1::12")), 128);
        a.add_addr_tentative(gone).unwrap();
        a.del_addr(gone).unwrap();
        assert!(!a.is_tentative(gone) && !a.dad().is_tentative(v6("2001:db8:1::12")));
        a.poll(5_000);
        assert!(!a.iface.ip_addrs().contains(&gone));
    }

    #[test]
    fn static_addresses_routes_and_link_local() {
        let (mut a, _) = pair("10.0.0.1/24,gw=10.0.0.254,fd00::1/64", "10.0.0.2/24");
        let addrs = a.addrs();
        assert_eq!(addrs.len(), 3);
        assert!(addrs
            .iter()
            .any(|(c, o)| *o == Origin::LinkLocal && c.to_string() == "fe80::ff:fe00:1/64"));
        assert!(!a.dhcp_running(), "static config runs no DHCP");
        let r = a.routes();
        assert_eq!(r[0].cidr.prefix_len(), 0);
        assert_eq!(r[0].via, Some(IpAddress::v4(10, 0, 0, 254)));
        assert!(r
            .iter()
            .any(|x| x.cidr.to_string() == "10.0.0.0/24"
                && x.src == Some(IpAddress::v4(10, 0, 0, 1))));
        assert!(r.iter().any(|x| x.cidr.to_string() == "fd00::/64"));
        assert!(a.on_link(IpAddress::v4(10, 0, 0, 77)));
        assert!(!a.on_link(IpAddress::v4(10, 0, 1, 77)));
        assert!(a.has_default_for(IpAddress::v4(8, 8, 8, 8)));
        assert!(!a.has_default_for("2001:db8::1".parse::<IpAddress>().unwrap()));
        let c = config::parse_cidr("10.0.0.1/24").unwrap();
        assert!(a.add_addr(c).unwrap_err().contains("already"));
        a.del_addr(c).unwrap();
        assert!(a.del_addr(c).unwrap_err().contains("not assigned"));
        assert!(a.del_gateway(false));
        assert!(!a.del_gateway(false));
    }

    #[test]
    fn a_corrupted_segment_is_dropped_and_the_stream_recovers() {
        use smoltcp::socket::tcp;
        let (mut a, mut b) = pair("10.0.0.1/24", "10.0.0.2/24");
        let wire = a.link.tx.clone();
        let sock = || crate::testnet::tcp_socket(65536);
        let mut server = sock();
        server.listen(9000).unwrap();
        let hs = b.sockets.add(server);
        let mut client = sock();
        client
            .connect(a.iface.context(), (IpAddress::v4(10, 0, 0, 2), 9000), 40000)
            .unwrap();
        let hc = a.sockets.add(client);
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 241) as u8).collect();
        let (mut sent, mut got, mut corrupted) = (0usize, Vec::new(), false);
        let mut now = 0i64;
        while got.len() < data.len() && now < 100_000 {
            let c = a.sockets.get_mut::<tcp::Socket>(hc);
            if c.can_send() && sent < data.len() {
                sent += c.send_slice(&data[sent..]).unwrap();
            }
            a.poll(now);
            if !corrupted {
                // flip one payload bit of the first data segment on the wire
                if let Some(f) = wire
                    .borrow_mut()
                    .iter_mut()
                    .find(|f| f.len() > 14 + 20 + 20 + 100)
                {
                    let last = f.len() - 1;
                    f[last] ^= 0x10;
                    corrupted = true;
                }
            }
            b.poll(now);
            recv_all(b.sockets.get_mut::<tcp::Socket>(hs), &mut got);
            now += 1;
        }
        assert!(corrupted);
        assert_eq!(b.rx_csum().bad, 1, "the corrupted segment was dropped");
        assert!(
            b.rx_csum().verified > 10,
            "the others were checked and passed"
        );
        assert!(
            got == data,
            "stream intact: {} of {} bytes",
            got.len(),
            data.len()
        );
    }

    /// 10.0.0.1 over `pa` and 10.0.0.2 over `pb`, with 256 KiB TCP sockets: b's
    /// listening on port 9000, a's connecting to it from port 40000.
    fn tcp_pair(pa: Pipe, pb: Pipe) -> (NetIf<Pipe>, NetIf<Pipe>, SocketHandle, SocketHandle) {
        let mut a = NetIf::new("eth0", pa, &config::parse("10.0.0.1/24").unwrap(), 0, 1);
        let mut b = NetIf::new("eth0", pb, &config::parse("10.0.0.2/24").unwrap(), 0, 2);
        let sock = crate::testnet::tcp_socket;
        let mut server = sock(256 * 1024);
        server.listen(9000).unwrap();
        let hs = b.sockets.add(server);
        let mut client = sock(256 * 1024);
        client
            .connect(a.iface.context(), (IpAddress::v4(10, 0, 0, 2), 9000), 40000)
            .unwrap();
        let hc = a.sockets.add(client);
        (a, b, hs, hc)
    }

    /// A sender whose link is full (a ring waiting for the backend's completions)
    /// does not ask for a poll at once, which would spin: only after the backup
    /// timer, or as soon as the link has room again.
    #[test]
    fn a_full_link_defers_the_sender_until_it_has_room() {
        use smoltcp::socket::tcp;
        let (mut pa, pb) = cable();
        pa.tx_limit = 8;
        let (mut a, mut b, hs, hc) = tcp_pair(pa, pb);
        let mut now = 0i64;
        while !a.sockets.get::<tcp::Socket>(hc).may_send() && now < 100 {
            a.poll(now);
            b.poll(now);
            now += 1;
        }
        assert!(a.sockets.get::<tcp::Socket>(hc).may_send(), "connected");
        let data = alloc::vec![7u8; 100_000];
        let queued = a
            .sockets
            .get_mut::<tcp::Socket>(hc)
            .send_slice(&data)
            .unwrap();
        assert!(queued > 8 * 1460, "more queued than the link takes");
        // the receiver does not take anything: the link fills
        a.poll(now);
        assert_eq!(a.link.tx.borrow().len(), 8, "the link is full");
        assert_eq!(a.poll_at(now), Some(now + TX_FULL_RECHECK_MS));
        // the receiver takes the frames (the completions): room, a poll at once
        b.poll(now);
        assert!(a.poll_at(now).is_some_and(|t| t <= now));
        a.poll(now);
        assert_eq!(a.link.tx.borrow().len(), 8, "filled again");
        let mut got = Vec::new();
        while got.len() < queued && now < 10_000 {
            b.poll(now);
            recv_all(b.sockets.get_mut::<tcp::Socket>(hs), &mut got);
            a.poll(now);
            now += 1;
        }
        assert_eq!(got.len(), queued, "everything arrives");
    }

    #[test]
    fn tcp_stream_through_gso_arrives_intact() {
        stream_through_gso(false, 1500);
    }

    #[test]
    fn tcp_stream_in_large_segments_arrives_intact() {
        stream_through_gso(true, 1500);
    }

    #[test]
    fn large_segments_are_cut_for_a_peer_with_a_smaller_mtu() {
        stream_through_gso(true, 1400);
    }

    /// Moves 600 kB and then 5000 bytes with the FIN from a (GSO; TCP checksums
    /// completed by the link and large segments when `blank`) to b (MTU
    /// `peer_mtu`, dropping larger frames), which checks every checksum in software.
    fn stream_through_gso(blank: bool, peer_mtu: usize) {
        use smoltcp::socket::tcp;
        let (mut pa, mut pb) = cable();
        pa.gso = true;
        pa.csum_blank = blank;
        pb.mtu = peer_mtu;
        let (mut a, mut b, hs, hc) = tcp_pair(pa, pb);
        a.tso.peers.bulk_port(40000);
        let mut data: Vec<u8> = (0..600_000u32).map(|i| (i % 251) as u8).collect();
        let (mut sent, mut got) = (0usize, Vec::new());
        let mut now = 0i64;
        while got.len() < data.len() && now < 200_000 {
            let c = a.sockets.get_mut::<tcp::Socket>(hc);
            if c.can_send() && sent < data.len() {
                sent += c.send_slice(&data[sent..]).unwrap();
            }
            a.poll(now);
            b.poll(now);
            recv_all(b.sockets.get_mut::<tcp::Socket>(hs), &mut got);
            now += 1;
        }
        assert_eq!(sent, data.len());
        assert!(
            got == data,
            "stream corrupted: {} of {} bytes",
            got.len(),
            data.len()
        );
        let ((packets, segs), dropped) = (a.tso().merged, a.tso().dropped);
        if blank {
            // smoltcp built segments larger than the MTU, each sent whole (GSO)
            assert!(a.tso.large > 0 && a.tso.peers.raised > 0);
            assert_eq!((a.tso.oversize, a.tso.peers.unknown), (0, 0));
        } else {
            assert!(
                packets > 0 && segs > packets,
                "segments merged: {packets} packets, {segs} segments"
            );
        }
        assert_eq!(a.link.gso_packets, packets + a.tso.large);
        assert_eq!(dropped, 0);
        // a short write goes out alone (for the link to complete its checksum when
        // `blank`); then 5000 bytes and the FIN, in one large segment when `blank`
        let c = a.sockets.get_mut::<tcp::Socket>(hc);
        assert_eq!(c.send_slice(b"tail"), Ok(4));
        data.extend_from_slice(b"tail");
        for i in 0..40 {
            if i == 5 {
                let c = a.sockets.get_mut::<tcp::Socket>(hc);
                let last: Vec<u8> = (0..5000u32).map(|i| (i % 13) as u8).collect();
                assert_eq!(c.send_slice(&last), Ok(5000));
                data.extend_from_slice(&last);
                c.close();
            }
            a.poll(now);
            b.poll(now);
            recv_all(b.sockets.get_mut::<tcp::Socket>(hs), &mut got);
            now += 1;
        }
        assert!(got == data, "the tail and the last 5000 bytes arrived");
        assert!(
            !b.sockets.get_mut::<tcp::Socket>(hs).may_recv(),
            "the FIN arrived"
        );
        assert_eq!(a.tso().dropped, 0);
        assert_eq!(b.rx_csum().bad, 0, "every checksum right");
        assert!(b.rx_csum().verified > 0);
        assert_eq!(b.link.rx_too_big, 0, "nothing over the peer's MTU");
        if blank {
            assert!(a.link.blank_frames > 0, "lone segments offloaded");
        } else {
            assert_eq!(a.link.blank_frames, 0);
        }
    }

    #[test]
    fn no_configuration_means_dhcp() {
        let (a, _) = pair("", "10.0.0.2/24");
        assert!(a.dhcp_running());
    }
}
