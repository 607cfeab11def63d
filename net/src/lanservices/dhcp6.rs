//! The DHCPv6 servers over the stack's interfaces: odhcpd's `dhcpv6 'server'`
//! ([`xenlet_router::dhcp6d`], sans-I/O) fed the frames to UDP port 547 the routed
//! link kept aside ([`Link::take_dhcpv6`]: smoltcp does not receive on the
//! ff02::1:2 group, and the answer goes straight back to the client's MAC and
//! link-local address without a neighbour lookup), its answers sent on the link.
//!
//! An interface of the spec the stack does not have is reported in
//! [`Dhcp6Ports::summary`] and skipped; an interface that goes away stops its
//! server (it is found again by its [`NetIf::instance`]).

use super::{reconcile, Change};
use crate::iface::NetIf;
use crate::lanconfig::Dhcp6Spec;
use crate::link::Link;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::Ipv6Addr;
use xenlet_router::dhcp6d::{Dhcp6Counters, Dhcp6Server};
use xenlet_router::dhcpd::LoadReport;
use xenlet_router::Millis;

/// Frames taken from one link per poll at most (the link keeps few anyway).
const RX_BUDGET: usize = 16;

/// The DHCPv6 server of one interface.
pub struct Dhcp6Port {
    /// The stack's interface.
    pub vif: String,
    /// The interface's [`NetIf::instance`], if it was there at start.
    instance: Option<u64>,
    /// The server.
    pub server: Dhcp6Server,
    send_failed: u64,
}

impl Dhcp6Port {
    /// The server of `s` on its interface in `ifs` (if it is there).
    fn start<L: Link>(s: &Dhcp6Spec, ifs: &mut [NetIf<L>]) -> Dhcp6Port {
        let mut c = s.config.clone();
        let instance = ifs.iter_mut().find(|n| n.name == s.vif).map(|n| {
            n.link.keep_dhcpv6(true);
            c.mac = n.link.mac();
            n.instance()
        });
        Dhcp6Port {
            vif: s.vif.clone(),
            instance,
            server: Dhcp6Server::new(c),
            send_failed: 0,
        }
    }
}

/// Every interface's DHCPv6 server.
#[derive(Default)]
pub struct Dhcp6Ports {
    /// The servers.
    pub ports: Vec<Dhcp6Port>,
    /// Leases dropped by reloads (a server stopped, or its prefix changed): the
    /// lease file is written again.
    reload_dropped: u64,
}

impl Dhcp6Ports {
    /// Starts the servers of `specs` on the stack's interfaces `ifs`.
    pub fn new<L: Link>(specs: &[Dhcp6Spec], ifs: &mut [NetIf<L>]) -> Dhcp6Ports {
        Dhcp6Ports {
            ports: specs.iter().map(|s| Dhcp6Port::start(s, ifs)).collect(),
            reload_dropped: 0,
        }
    }

    /// The files were read again (`reload`): a server of `specs` already running
    /// serves its new configuration (keeping the leases that are still in its
    /// prefix), one no longer in them stops (its leases dropped, as odhcpd's
    /// `dhcpv6 'disabled'`), a new one starts. What changed, a line each.
    pub fn reload<L: Link>(
        &mut self,
        specs: &[Dhcp6Spec],
        ifs: &mut [NetIf<L>],
        now: Millis,
    ) -> Vec<String> {
        let mut said = Vec::new();
        let running = core::mem::take(&mut self.ports);
        let same = |p: &Dhcp6Port, s: &Dhcp6Spec| p.vif == s.vif;
        self.ports = reconcile(running, specs, same, |change| match change {
            Change::Gone(p) => {
                let n = p.server.leases(now).count();
                self.reload_dropped += n as u64;
                if let Some(netif) = p
                    .instance
                    .and_then(|i| ifs.iter_mut().find(|n| n.instance() == i))
                {
                    netif.link.keep_dhcpv6(false);
                }
                said.push(format!("dhcpv6: {} stopped ({n} leases dropped)", p.vif));
                None
            }
            Change::Kept(mut p, s) => {
                let mut c = s.config.clone();
                c.mac = p.server.config().mac;
                if p.instance.is_none() {
                    p = Dhcp6Port::start(s, ifs);
                    if p.instance.is_some() {
                        said.push(format!("dhcpv6: {} started", p.vif));
                    }
                } else if c != *p.server.config() {
                    let dropped = p.server.reconfigure(c, now);
                    self.reload_dropped += dropped as u64;
                    said.push(format!(
                        "dhcpv6: {} now {}/{}, lease {} ({dropped} leases dropped)",
                        p.vif,
                        p.server.config().prefix.addr(),
                        p.server.config().prefix.prefix_len(),
                        super::lease_time(p.server.config().lease_secs)
                    ));
                }
                Some(p)
            }
            Change::New(s) => {
                let p = Dhcp6Port::start(s, ifs);
                said.push(format!(
                    "dhcpv6: {} started{}",
                    p.vif,
                    if p.instance.is_none() {
                        " (not up)"
                    } else {
                        ""
                    }
                ));
                Some(p)
            }
        });
        said
    }

    /// Loads the IPv6 part of a lease file (the lines after `duid ...`) into every
    /// server; a line of another server's prefix is "corrupt" to the others.
    pub fn load(&mut self, text: &str, now: Millis, epoch_offset_secs: u64) -> LoadReport {
        let mut r = LoadReport::default();
        for p in &mut self.ports {
            let x = p
                .server
                .load_lease_lines(text.lines(), now, epoch_offset_secs);
            r.loaded += x.loaded;
            r.expired = r.expired.max(x.expired);
            r.corrupt = r.corrupt.max(x.corrupt);
        }
        r
    }

    /// `dhcpv6: eth0 fd12:3456:789a::/64, lease 12h`; `None` without any.
    pub fn summary(&self) -> Option<String> {
        ports_summary("dhcpv6", &self.ports, |p| {
            let c = p.server.config();
            let down = if p.instance.is_none() {
                " (not up)"
            } else {
                ""
            };
            format!(
                "{} {}/{}, lease {}{down}",
                p.vif,
                c.prefix.addr(),
                c.prefix.prefix_len(),
                super::lease_time(c.lease_secs)
            )
        })
    }

    /// Each server's interface, counters and the sends its link refused.
    pub fn counters(&self) -> Vec<(&str, &Dhcp6Counters, u64)> {
        self.ports
            .iter()
            .map(|p| (p.vif.as_str(), p.server.counters(), p.send_failed))
            .collect()
    }

    /// The address of the client named `name`, from any server.
    pub fn address_of(&self, name: &str, now: Millis) -> Option<Ipv6Addr> {
        self.ports
            .iter()
            .find_map(|p| p.server.address_of(name, now))
    }

    /// The host name of the client holding `addr`.
    pub fn name_of(&self, addr: Ipv6Addr, now: Millis) -> Option<&str> {
        self.ports.iter().find_map(|p| p.server.name_of(addr, now))
    }

    /// What changes the lease file: leases made or extended, releases, declines.
    pub fn lease_mark(&self) -> u64 {
        self.ports
            .iter()
            .map(|p| {
                let c = p.server.counters();
                c.bound.wrapping_add(c.release).wrapping_add(c.decline)
            })
            .fold(self.reload_dropped, u64::wrapping_add)
    }

    /// Takes the frames each interface kept aside, answers them; whether anything
    /// was received. An interface that went away stops its server (counted in
    /// `lost`).
    pub fn poll<L: Link>(&mut self, ifs: &mut [NetIf<L>], now: Millis, lost: &mut u64) -> bool {
        let mut busy = false;
        for p in self.ports.iter_mut() {
            let Some(instance) = p.instance else {
                continue;
            };
            let Some(n) = ifs.iter_mut().find(|n| n.instance() == instance) else {
                p.instance = None;
                *lost += 1;
                continue;
            };
            for _ in 0..RX_BUDGET {
                let Some(f) = n.link.take_dhcpv6() else {
                    break;
                };
                busy = true;
                // a bad one is counted by the server
                if let Some(reply) = p.server.handle_frame(&f, now) {
                    if n.link.send(&reply).is_err() {
                        p.send_failed += 1;
                    }
                }
            }
        }
        busy
    }

    /// Stops: the links no longer keep DHCPv6 frames aside.
    pub fn shutdown<L: Link>(self, ifs: &mut [NetIf<L>]) {
        for p in self.ports {
            if let Some(n) = p
                .instance
                .and_then(|i| ifs.iter_mut().find(|n| n.instance() == i))
            {
                n.link.keep_dhcpv6(false);
            }
        }
    }
}

/// `LABEL: PART; PART` with a part per port (as `part` writes it); `None`
/// without any port. For the DHCPv6 servers and the RA senders.
pub(super) fn ports_summary<P>(
    label: &str,
    ports: &[P],
    part: impl Fn(&P) -> String,
) -> Option<String> {
    if ports.is_empty() {
        return None;
    }
    let parts: Vec<String> = ports.iter().map(part).collect();
    Some(format!("{label}: {}", parts.join("; ")))
}
