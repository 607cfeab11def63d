//! OpenWrt's `wan6` (`proto dhcpv6`, odhcp6c) over the stack: router discovery on
//! the WAN ([`Upstream`]: its Router Advertisements kept aside by the routed link,
//! [`Link::take_advert`], its solicitations sent on the link as they are) and the
//! DHCPv6 client ([`Client`], UDP 546 to `ff02::1:2` port 547 from the WAN's
//! link-local address), both sans-I/O in `xenlet_router`. What they give is put on
//! the stack's interfaces, which the router copies ([`crate::gateway`]):
//!
//! - the WAN: the DHCPv6 address (/128, as odhcp6c sets it), the SLAAC address
//!   (/64, its on-link prefix with it), the default route via the advertising
//!   router's link-local address;
//! - each LAN interface with `ip6assign`: its /64 of the delegated prefix with the
//!   router at `::1` ([`LanPrefix`]), advertised by the LAN's router advertisements
//!   with the delegation's remaining lifetimes (at most odhcpd's 5400/2700 s), a
//!   /64 that goes announced with lifetimes 0 ([`RaPorts::set_upstream`]), and the
//!   router lifetime not 0 once there is a default route upstream;
//! - the DNS servers of the lease and the advertisements: the forwarder's upstreams
//!   ([`Wan6::dns_servers`]).
//!
//! The LAN's addresses and routes follow the delegation, its advertised lifetimes
//! are refreshed every [`REFRESH_MS`].

use super::ra::RaPorts;
use super::Sock;
use crate::iface::NetIf;
use crate::lanconfig::{RA_PREFERRED_LIMIT, RA_VALID_LIMIT};
use crate::link::Link;
use crate::netplan::Wan6Plan;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::Ipv6Addr;
use smoltcp::wire::{IpAddress, IpCidr, IpEndpoint};
use xenlet_router::dhcp6c::{self, Client, ClientConfig, LanPrefix, State};
use xenlet_router::dns::Rng;
use xenlet_router::ipv6;
use xenlet_router::ra::Upstream;
use xenlet_router::Millis;

/// DHCPv6 client port.
pub const CLIENT_PORT: u16 = 546;
/// DHCPv6 server port.
pub const SERVER_PORT: u16 = 547;
/// All_DHCP_Relay_Agents_and_Servers.
pub const ALL_DHCP: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0x1, 0x2);
/// How often the advertised lifetimes of the delegated /64s are brought down to
/// what is left of the delegation.
pub const REFRESH_MS: Millis = 10_000;
/// The router lifetime the LAN's advertisements carry once there is an IPv6
/// default route upstream (odhcpd's: 3 × MaxRtrAdvInterval).
pub const ROUTER_LIFETIME_SECS: u16 = 1800;
/// Advertisements taken from the link per poll at most.
const RA_BUDGET: usize = 8;
/// Datagrams read from the DHCPv6 socket per poll at most.
const RX_BUDGET: usize = 8;
/// The DHCPv6 socket's buffers: (packets, bytes) each way.
const BUFFER: (usize, usize) = (4, 4 * 1500);

/// One LAN interface with `ip6assign`.
struct LanShare {
    vif: String,
    assign: u8,
    hint: Option<u64>,
    prefix: LanPrefix,
    /// `ip6assign` was taken off it (`reload`): its /64 goes (announced with
    /// lifetimes 0 until forgotten), then the share.
    gone: bool,
}

/// What the glue could not do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wan6Counters {
    /// Frames or datagrams the link or socket refused.
    pub send_failed: u64,
    /// DHCPv6 datagrams not from port 547, dropped.
    pub wrong_port: u64,
    /// Addresses the stack would not take (its table full).
    pub addr_refused: u64,
    /// Restarts because the WAN interface came back (a vif reattached): a new
    /// solicitation, as odhcp6c does on a link that went down and up.
    pub restarts: u64,
    /// DHCPv6 addresses duplicate address detection found in use (declined).
    pub dad_declined: u64,
    /// SLAAC addresses found in use (not used again for that prefix).
    pub dad_slaac: u64,
}

/// `wan6` on the WAN interface.
pub struct Wan6 {
    name: String,
    vif: String,
    /// The WAN interface's [`NetIf::instance`] it runs on.
    instance: u64,
    cfg: ClientConfig,
    upstream: Option<Upstream>,
    client: Client,
    sock: Option<Sock>,
    lans: Vec<LanShare>,
    /// Applied to the WAN interface: the DHCPv6 address, the SLAAC address, the
    /// default gateway.
    wan_addr: Option<IpCidr>,
    slaac: Option<IpCidr>,
    /// A SLAAC address found duplicate: not formed again (RFC 4862 §5.4.5).
    slaac_dup: Option<IpCidr>,
    gw: Option<Ipv6Addr>,
    next_refresh: Millis,
    /// The time of the last poll (the Release at shutdown goes out at it).
    last_now: Millis,
    /// Taken off the files (`reload`): asks for nothing, its LAN /64s announced
    /// with lifetimes 0 until forgotten ([`Self::finished`]).
    stopped: bool,
    counters: Wan6Counters,
}

fn client_config(p: &Wan6Plan, mac: [u8; 6]) -> ClientConfig {
    ClientConfig {
        mac,
        reqaddress: p.reqaddress,
        reqprefix: p.reqprefix,
        rapid_commit: false,
    }
}

fn secs(ms: Millis) -> u64 {
    ms / 1000
}

impl Wan6 {
    /// Starts `wan6` of `plan` on the stack's interfaces `ifs` at `now`, the LAN
    /// interfaces `ip6assign` lists taking their share of a delegated prefix.
    /// `None` if the WAN interface is not there.
    pub fn new<L: Link>(
        plan: &Wan6Plan,
        ip6assign: &[(String, u8, Option<u64>)],
        ifs: &mut [NetIf<L>],
        now: Millis,
        rng: &mut dyn Rng,
    ) -> Option<Wan6> {
        let n = ifs.iter_mut().find(|n| n.name == plan.vif)?;
        let mac = n.link.mac();
        n.link.keep_adverts(true);
        let mtu = u32::try_from(n.link.mtu()).unwrap_or(1500);
        let sock = Sock::open(n, CLIENT_PORT, BUFFER);
        let cfg = client_config(plan, mac);
        Some(Wan6 {
            name: plan.name.clone(),
            vif: plan.vif.clone(),
            instance: n.instance(),
            cfg,
            upstream: Some(Upstream::new(mac, mtu, now, rng)),
            client: Client::new(cfg, now, rng),
            sock,
            lans: ip6assign
                .iter()
                .filter(|(v, _, _)| *v != plan.vif)
                .map(|(vif, assign, hint)| LanShare {
                    vif: vif.clone(),
                    assign: *assign,
                    hint: *hint,
                    prefix: LanPrefix::default(),
                    gone: false,
                })
                .collect(),
            wan_addr: None,
            slaac: None,
            slaac_dup: None,
            gw: None,
            next_refresh: now,
            last_now: now,
            stopped: false,
            counters: Wan6Counters::default(),
        })
    }

    /// `reload` with `wan6`'s settings `plan` (on the same WAN interface): the same
    /// as running, nothing; other `reqaddress`/`reqprefix` (or `wan6` put back after
    /// [`Self::stop`]), a restart as netifd's of an interface whose options changed
    /// (odhcp6c stopped and started): the lease released (a Release sent), what it
    /// gave taken back at the next poll (the WAN's DHCPv6 address; the LAN's /64s
    /// announced with lifetimes 0), a new Solicit with the new options. Router
    /// discovery, independent of them, runs on. What it did, if anything.
    pub fn reconfigure<L: Link>(
        &mut self,
        plan: &Wan6Plan,
        ifs: &mut [NetIf<L>],
        now: Millis,
        rng: &mut dyn Rng,
    ) -> Option<String> {
        let cfg = client_config(plan, self.cfg.mac);
        if cfg == self.cfg && !self.stopped {
            return None;
        }
        let released = self.send_release(ifs, rng);
        self.cfg = cfg;
        self.client = Client::new(cfg, now, rng);
        if self.stopped {
            self.stopped = false;
            if let Some(n) = ifs.iter_mut().find(|n| n.name == self.vif) {
                n.link.keep_adverts(true);
                let mtu = u32::try_from(n.link.mtu()).unwrap_or(1500);
                self.upstream = Some(Upstream::new(self.cfg.mac, mtu, now, rng));
            }
        }
        self.counters.restarts += 1;
        self.next_refresh = now;
        Some(format!(
            "{}: {} restarted (address {}, prefix {}){}",
            self.name,
            self.vif,
            plan.reqaddress,
            plan.reqprefix,
            if released { ", lease released" } else { "" }
        ))
    }

    /// `wan6` taken off the files (`reload`), as netifd's `ifdown`: the lease
    /// released, router discovery stopped (the WAN's addresses and default route
    /// taken off at the next poll), the LAN's /64s announced with lifetimes 0 until
    /// they are forgotten; then [`Self::finished`]. What it did.
    pub fn stop<L: Link>(
        &mut self,
        ifs: &mut [NetIf<L>],
        now: Millis,
        rng: &mut dyn Rng,
    ) -> String {
        let released = self.send_release(ifs, rng);
        self.cfg.reqaddress = dhcp6c::ReqAddress::None;
        self.cfg.reqprefix = dhcp6c::ReqPrefix::No;
        self.client = Client::new(self.cfg, now, rng);
        self.upstream = None;
        if let Some(n) = ifs.iter_mut().find(|n| n.name == self.vif) {
            n.link.keep_adverts(false);
        }
        for lan in self.lans.iter_mut() {
            lan.gone = true;
        }
        self.stopped = true;
        self.next_refresh = now;
        format!(
            "{}: {} stopped{}",
            self.name,
            self.vif,
            if released { ", lease released" } else { "" }
        )
    }

    /// Stopped and nothing left to announce: it can go ([`Self::shutdown`]).
    pub fn finished(&self) -> bool {
        self.stopped && self.lans.is_empty() && self.wan_addr.is_none() && self.gw.is_none()
    }

    /// The boot line's part: `wan6: eth1 dhcpv6 (address try, prefix auto) for eth0`.
    pub fn summary(&self) -> String {
        let lans: Vec<&str> = self.lans.iter().map(|l| l.vif.as_str()).collect();
        format!(
            "{}: {} router discovery and dhcpv6{}{}",
            self.name,
            self.vif,
            if self.sock.is_none() {
                " (no socket)"
            } else {
                ""
            },
            if lans.is_empty() {
                String::new()
            } else {
                format!(", prefixes for {}", lans.join(" "))
            }
        )
    }

    /// The delegated prefix held and the first LAN interface with a share of it:
    /// the router routes the whole prefix there (netifd's route for a delegation,
    /// so that its unused /64s are not sent back upstream by the default route).
    pub fn delegated(&self) -> Option<(xenlet_router::route6::Ipv6Net, &str)> {
        let p = self.client.lease()?.prefix?;
        let lan = self.lans.iter().find(|l| !l.gone)?;
        Some((p.prefix, lan.vif.as_str()))
    }

    /// The interfaces with `ip6assign` are now `ip6assign` (`reload`): a new one
    /// takes its share of the delegation, one whose `ip6assign` or `ip6hint`
    /// changed moves to its new /64 (the old one announced with lifetimes 0), one
    /// no longer listed gives its /64 up the same way; applied at the next
    /// [`Self::poll`]. What changed, a line each.
    pub fn set_lans(
        &mut self,
        ip6assign: &[(String, u8, Option<u64>)],
        now: Millis,
    ) -> Vec<String> {
        let mut said = Vec::new();
        for lan in self.lans.iter_mut() {
            match ip6assign.iter().find(|(v, _, _)| *v == lan.vif) {
                Some((_, assign, hint)) => {
                    if (lan.assign, lan.hint, lan.gone) != (*assign, *hint, false) {
                        said.push(format!(
                            "{}: {} ip6assign {assign}{}",
                            self.name,
                            lan.vif,
                            hint.map(|h| format!(" ip6hint {h:x}")).unwrap_or_default()
                        ));
                    }
                    (lan.assign, lan.hint, lan.gone) = (*assign, *hint, false);
                }
                None if !lan.gone => {
                    lan.gone = true;
                    said.push(format!(
                        "{}: {} no longer takes a prefix",
                        self.name, lan.vif
                    ));
                }
                None => {}
            }
        }
        for (vif, assign, hint) in ip6assign {
            if *vif == self.vif || self.lans.iter().any(|l| l.vif == *vif) {
                continue;
            }
            said.push(format!(
                "{}: {vif} takes a prefix (ip6assign {assign})",
                self.name
            ));
            self.lans.push(LanShare {
                vif: vif.clone(),
                assign: *assign,
                hint: *hint,
                prefix: LanPrefix::default(),
                gone: false,
            });
        }
        self.next_refresh = now;
        said
    }

    /// The WAN interface it runs on.
    pub fn vif(&self) -> &str {
        &self.vif
    }

    /// The UCI interface's name (`wan6`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Stopped by [`Self::stop`] (still announcing its old /64s with lifetimes 0).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The IPv6 link MTU the upstream router advertises (its MTU option, 1280 up
    /// to the link's), if it does.
    pub fn mtu(&self) -> Option<u32> {
        self.upstream.as_ref().and_then(Upstream::mtu)
    }

    /// The glue's counters.
    pub fn counters(&self) -> Wan6Counters {
        self.counters
    }

    /// The DNS servers the lease and the WAN's advertisements give.
    pub fn dns_servers(&self) -> Vec<Ipv6Addr> {
        let mut v: Vec<Ipv6Addr> = self
            .client
            .lease()
            .map(|l| l.dns.clone())
            .unwrap_or_default();
        for a in self.upstream.iter().flat_map(|u| u.rdnss()) {
            if !v.contains(&a) {
                v.push(a);
            }
        }
        v
    }

    /// When [`Self::poll`] next has something to do.
    pub fn poll_at(&self) -> Option<Millis> {
        let lease_due = self
            .client
            .lease()
            .filter(|l| l.prefix.is_some())
            .map(|_| self.next_refresh);
        [
            self.client.poll_at(),
            self.upstream.as_ref().and_then(Upstream::poll_at),
            lease_due,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Takes the WAN's advertisements and DHCPv6 replies, sends what is due, and
    /// applies what changed; whether anything was received or sent.
    pub fn poll<L: Link>(
        &mut self,
        ifs: &mut [NetIf<L>],
        ra: &mut RaPorts,
        now: Millis,
        rng: &mut dyn Rng,
    ) -> bool {
        let mut busy = false;
        self.last_now = now;
        self.follow_interface(ifs, now, rng);
        if let (Some(up), Some(n)) = (
            self.upstream.as_mut(),
            ifs.iter_mut().find(|n| n.name == self.vif),
        ) {
            for _ in 0..RA_BUDGET {
                let Some(f) = n.link.take_advert() else { break };
                busy = true;
                // a bad one is counted by the upstream side
                let _ = up.received(&f, now);
            }
            if let Some(f) = up.poll(now, rng) {
                busy = true;
                if n.link.send(&f).is_err() {
                    self.counters.send_failed += 1;
                }
            }
        }
        if let Some(sock) = self.sock {
            for _ in 0..RX_BUDGET {
                let Some((data, from, _)) = sock.recv(ifs) else {
                    break;
                };
                busy = true;
                if from.port != SERVER_PORT {
                    self.counters.wrong_port += 1;
                    continue;
                }
                self.client.received(&data, now, rng);
            }
            if let Some(msg) = self.client.poll(now, rng) {
                busy = true;
                self.send(sock, ifs, &msg);
            }
        }
        // addresses duplicate address detection found in use: a DHCPv6 one is
        // declined (a new one asked for), a SLAAC one given up
        let failed = ifs
            .iter_mut()
            .find(|n| n.name == self.vif)
            .map(NetIf::take_dad_failures)
            .unwrap_or_default();
        for c in failed {
            if Some(c) == self.wan_addr {
                self.wan_addr = None;
                self.counters.dad_declined += 1;
                if let IpAddress::Ipv6(a) = c.address() {
                    self.client.decline(a, now, rng);
                }
            } else if Some(c) == self.slaac {
                self.slaac = None;
                self.slaac_dup = Some(c);
                self.counters.dad_slaac += 1;
            }
        }
        let changed =
            self.client.take_changed() | self.upstream.as_mut().is_some_and(Upstream::take_changed);
        if changed || now >= self.next_refresh {
            self.apply(ifs, ra, now);
            self.next_refresh = now + REFRESH_MS;
        }
        busy
    }

    /// The WAN interface came back as a new one (a vif reattached): what was set on
    /// the old one went with it; start again on the new one (its advertisements
    /// kept aside, a socket, a new solicitation). The LAN's share follows the new
    /// lease (a new prefix deprecates the old /64).
    fn follow_interface<L: Link>(&mut self, ifs: &mut [NetIf<L>], now: Millis, rng: &mut dyn Rng) {
        let Some(n) = ifs.iter_mut().find(|n| n.name == self.vif) else {
            return;
        };
        if n.instance() == self.instance {
            return;
        }
        self.instance = n.instance();
        if self.stopped {
            // asks for nothing: what it had went with the old interface
            (self.wan_addr, self.slaac, self.gw) = (None, None, None);
            return;
        }
        self.counters.restarts += 1;
        n.link.keep_adverts(true);
        let mtu = u32::try_from(n.link.mtu()).unwrap_or(1500);
        let mac = n.link.mac();
        self.cfg.mac = mac;
        self.sock = Sock::open(n, CLIENT_PORT, BUFFER);
        self.upstream = Some(Upstream::new(mac, mtu, now, rng));
        self.client = Client::new(self.cfg, now, rng);
        self.wan_addr = None;
        self.slaac = None;
        self.slaac_dup = None;
        self.gw = None;
        // the lease is gone: the next apply takes the LAN's /64 back
        self.next_refresh = now;
    }

    /// Puts the addresses, the default route and the LAN's prefixes on the
    /// interfaces, and the LAN's /64s with their lifetimes left in its
    /// advertisements.
    fn apply<L: Link>(&mut self, ifs: &mut [NetIf<L>], ra: &mut RaPorts, now: Millis) {
        let lease = self.client.lease();
        let want_addr = lease
            .and_then(|l| l.address)
            .map(|a| IpCidr::new(IpAddress::Ipv6(a.addr), 128));
        let want_slaac = self
            .upstream
            .as_ref()
            .and_then(Upstream::slaac)
            .map(|s| IpCidr::new(IpAddress::Ipv6(s.addr.addr()), 64))
            .filter(|c| Some(*c) != self.slaac_dup);
        let want_gw = self
            .upstream
            .as_ref()
            .and_then(Upstream::router)
            .map(|r| r.addr);
        let delegated = lease
            .and_then(|l| l.prefix_left(now))
            .map(|(p, pref, valid)| (p.prefix, pref, valid));
        if let Some(n) = ifs.iter_mut().find(|n| n.name == self.vif) {
            for (have, want) in [
                (&mut self.wan_addr, want_addr),
                (&mut self.slaac, want_slaac),
            ] {
                if *have != want {
                    if let Some(old) = have.take() {
                        let _ = n.del_addr(old);
                    }
                    if let Some(new) = want {
                        // tentative until duplicate address detection passes
                        if n.add_addr_tentative(new).is_ok() {
                            *have = Some(new);
                        } else {
                            self.counters.addr_refused += 1;
                        }
                    }
                }
            }
            if self.gw != want_gw {
                match want_gw {
                    Some(g) => n.set_gateway(IpAddress::Ipv6(g)),
                    None => {
                        n.del_gateway(true);
                    }
                }
                self.gw = want_gw;
            }
        }
        let router_lifetime = if self.gw.is_some() {
            ROUTER_LIFETIME_SECS
        } else {
            0
        };
        for lan in self.lans.iter_mut() {
            let delegated = if lan.gone { None } else { delegated };
            let change = lan.prefix.update(delegated, lan.assign, lan.hint, now);
            lan.prefix.expire(now);
            if let Some(n) = ifs.iter_mut().find(|n| n.name == lan.vif) {
                if let Some((net, router)) = change.removed {
                    let _ = n.del_addr(IpCidr::new(IpAddress::Ipv6(router), net.prefix_len()));
                }
                if let Some((net, router)) = change.added {
                    if n.add_addr(IpCidr::new(IpAddress::Ipv6(router), net.prefix_len()))
                        .is_err()
                    {
                        self.counters.addr_refused += 1;
                    }
                }
            }
            let prefixes: Vec<_> = lan
                .prefix
                .ra_prefixes(now)
                .into_iter()
                .map(|mut p| {
                    p.valid_secs = p.valid_secs.min(RA_VALID_LIMIT);
                    p.preferred_secs = p.preferred_secs.min(RA_PREFERRED_LIMIT).min(p.valid_secs);
                    p
                })
                .collect();
            ra.set_upstream(&lan.vif, &prefixes, router_lifetime, now);
        }
        self.lans
            .retain(|l| !l.gone || !l.prefix.ra_prefixes(now).is_empty());
    }

    /// `ifstatus wan6`: the state, the address and delegated prefix with their
    /// lifetimes left, the LAN's /64s, the default router, the DNS servers.
    pub fn status_lines(&self, now: Millis) -> Vec<String> {
        let state = match self.client.state() {
            _ if self.stopped => "stopped",
            State::Idle => "idle",
            State::Soliciting => "soliciting",
            State::Requesting => "requesting",
            State::Bound => "bound",
            State::Renewing => "renewing",
            State::Rebinding => "rebinding",
            State::Declining => "declining",
        };
        let mut first = format!("{}: {} {state}", self.name, self.vif);
        if let Some(l) = self.client.lease() {
            if let Some(a) = l.address {
                first.push_str(&format!(
                    " address {}/128 preferred {}s valid {}s",
                    a.addr,
                    l.left(a.preferred, now),
                    l.left(a.valid, now)
                ));
            }
            if let Some((p, pref, valid)) = l.prefix_left(now) {
                first.push_str(&format!(
                    " prefix {} preferred {pref}s valid {valid}s",
                    p.prefix
                ));
            }
            first.push_str(&format!(
                " renew in {}s",
                secs(l.at + Millis::from(l.t1) * 1000).saturating_sub(secs(now))
            ));
        }
        for lan in &self.lans {
            if let Some((net, _)) = lan.prefix.current() {
                first.push_str(&format!("; lan {} {net}", lan.vif));
            }
        }
        let mut lines = alloc::vec![first];
        let mut second = format!("{}: ", self.name);
        match self.upstream.as_ref().and_then(Upstream::router) {
            Some(r) => second.push_str(&format!(
                "router {} lifetime {}s",
                r.addr,
                secs(r.until.saturating_sub(now))
            )),
            None => second.push_str("no router"),
        }
        if let Some(m) = self.upstream.as_ref().and_then(Upstream::mtu) {
            second.push_str(&format!(" mtu {m}"));
        }
        if let Some(s) = self.slaac {
            second.push_str(&format!("; slaac {s}"));
        }
        lines.push(second);
        let dns = self.dns_servers();
        if !dns.is_empty() {
            let list: Vec<String> = dns.iter().map(|a| format!("{a}")).collect();
            let mut l = format!("{}: dns {}", self.name, list.join(" "));
            if let Some(d) = self.client.lease().filter(|l| !l.domains.is_empty()) {
                l.push_str(&format!("; domains {}", d.domains.join(" ")));
            }
            lines.push(l);
        }
        let c = self.client.counters();
        let u = self
            .upstream
            .as_ref()
            .map(Upstream::counters)
            .unwrap_or_default();
        lines.push(format!(
            "{}: dhcpv6 sent {} (retransmits {}) advertise {} reply {} dropped {} (malformed {}, other transaction {}, other client {}, other server {}) NoAddrsAvail {} NoPrefixAvail {} lost {} declined {}; rs {} ra {} bad ra {}; send failed {} restarts {} slaac duplicate {}",
            self.name,
            c.sent,
            c.retransmits,
            c.advertises,
            c.replies,
            c.malformed + c.wrong_xid + c.wrong_client + c.wrong_server + self.counters.wrong_port,
            c.malformed,
            c.wrong_xid,
            c.wrong_client,
            c.wrong_server,
            c.no_addrs_avail,
            c.no_prefix_avail,
            c.lost,
            c.declines,
            u.solicitations,
            u.adverts,
            u.bad_adverts,
            self.counters.send_failed,
            self.counters.restarts,
            self.counters.dad_slaac
        ));
        lines
    }

    /// Shutdown: the Release of the lease (sent once, if simple: the socket is
    /// there), the addresses and default route it set removed, the links no longer
    /// keep advertisements aside.
    pub fn shutdown<L: Link>(mut self, ifs: &mut [NetIf<L>], rng: &mut dyn Rng) {
        self.send_release(ifs, rng);
        // what it put on the interfaces goes with it
        if let Some(n) = ifs.iter_mut().find(|n| n.name == self.vif) {
            n.link.keep_adverts(false);
            for a in [self.wan_addr.take(), self.slaac.take()]
                .into_iter()
                .flatten()
            {
                let _ = n.del_addr(a);
            }
            if self.gw.take().is_some() {
                n.del_gateway(true);
            }
        }
        for lan in &self.lans {
            if let (Some((net, router)), Some(n)) = (
                lan.prefix.current(),
                ifs.iter_mut().find(|n| n.name == lan.vif),
            ) {
                let _ = n.del_addr(IpCidr::new(IpAddress::Ipv6(router), net.prefix_len()));
            }
        }
        if let Some(s) = self.sock.take() {
            s.close(ifs);
        }
    }

    /// The Release of the lease held, sent now (once, not retransmitted, as
    /// odhcp6c's at its stop); the client idle after it. Whether one went out.
    fn send_release<L: Link>(&mut self, ifs: &mut [NetIf<L>], rng: &mut dyn Rng) -> bool {
        let (Some(sock), Some(msg)) = (self.sock, self.client.release(rng)) else {
            return false;
        };
        if !self.send(sock, ifs, &msg) {
            return false;
        }
        // out now, before the socket may close
        if let Some(n) = ifs.iter_mut().find(|n| n.name == self.vif) {
            n.poll(i64::try_from(self.last_now).unwrap_or(i64::MAX));
        }
        true
    }

    /// Sends the client's `msg` to All_DHCP_Relay_Agents_and_Servers from the WAN's
    /// link-local address (a refusal counted); whether it was taken.
    fn send<L: Link>(&mut self, sock: Sock, ifs: &mut [NetIf<L>], msg: &[u8]) -> bool {
        let from = ifs
            .iter()
            .find(|n| n.name == self.vif)
            .map(|n| IpAddress::Ipv6(ipv6::link_local_of(n.link.mac())));
        let to = IpEndpoint::new(IpAddress::Ipv6(ALL_DHCP), SERVER_PORT);
        let sent = sock.send(ifs, msg, to, from);
        if !sent {
            self.counters.send_failed += 1;
        }
        sent
    }
}
