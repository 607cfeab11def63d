//! The router's LAN services over the stack, dnsmasq's two jobs on OpenWrt: a DHCPv4
//! server on each served LAN interface and the DNS forwarder for the LAN.
//!
//! The protocol logic is [`xenlet_router::dhcpd`] and [`xenlet_router::dns`]
//! (sans-I/O); this file gives them smoltcp UDP sockets and a clock:
//! - DHCP: a socket on port 67 in each served interface's socket set. Replies go to
//!   port 68 (RFC 2131 §4.1): to 255.255.255.255 when the server says broadcast, and
//!   also for [`ReplyTo::UnicastNoArp`] (smoltcp cannot send to a MAC it has not
//!   resolved; broadcasting is what dnsmasq does when it cannot), to the client's
//!   address otherwise.
//! - DNS: a socket on port 53 on each served interface, bound to no address: it
//!   takes queries to the router's IPv4 address and to its IPv6 ones on that link
//!   (the ULA `::1` and the link-local address). With dnsmasq's `localservice`
//!   only clients on a served IPv4 subnet, or on one of the receiving interface's
//!   IPv6 prefixes (its ULA /64, link-local), are answered. An IPv6 client's
//!   answer goes out the interface that has it on link, from the address the
//!   stack picks for it (the ULA for a ULA client, link-local for link-local). The
//!   forwarder's upstream queries go out on the interface that routes to the server
//!   (the WAN), each from a socket bound to the source port the forwarder chose,
//!   closed when the forwarder says so. Upstream servers are the files' (see
//!   [`crate::lanconfig`]) and those of the DHCP leases of interfaces that are not
//!   served (the WAN), followed as leases change: IPv4 ones (the forwarder and the
//!   sockets take IPv6 servers, routed like any address, but nothing gives one
//!   until the WAN has a DHCPv6 client). The DHCP servers' leases are the
//!   forwarder's host table, so `NAME.lan` resolves to a LAN client.
//! - DNS over TCP ([`dnstcp`]): port 53 listens for TCP on each served interface
//!   too, with bounded connections; queries that came over TCP, and those whose UDP
//!   answer was truncated, go upstream over TCP.
//! - Router advertisements ([`ra`]): odhcpd's `ra 'server'` on each interface the
//!   spec names, its frames sent on the link, the Router Solicitations the routed
//!   link keeps aside handed to it.
//! - DHCPv6 ([`dhcp6`]): odhcpd's `dhcpv6 'server'` on each interface the spec
//!   names, fed the frames to UDP port 547 the routed link keeps aside, answering
//!   on the link. Its leases are the forwarder's IPv6 host table (AAAA and
//!   `ip6.arpa` names for `NAME.lan`).
//! - Leases persist through a [`LeaseStore`] the kernel gives (the file I/O stays
//!   out of this crate): loaded at start, saved in dnsmasq's format when they
//!   changed, at most every [`SAVE_INTERVAL_MS`]: the DHCPv4 lines, then, as
//!   dnsmasq writes them, a `duid SERVER-DUID` line and the DHCPv6 lines.
//!
//! Sockets are found again through the interface's [`NetIf::instance`]: if an
//! interface goes away, its services stop (counted) instead of touching another
//! interface's socket set.

use crate::iface::NetIf;
use crate::lanconfig::{PoolSpec, ServicesSpec};
use crate::link::Link;
use crate::NetStack;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use smoltcp::iface::SocketHandle;
use smoltcp::socket::udp;
use smoltcp::wire::{IpAddress, IpEndpoint};
use xenlet_router::dhcpd::lease::BoundedText;
use xenlet_router::dhcpd::{DhcpCounters, DhcpServer, LoadReport, PoolConfig, ReplyTo};
use xenlet_router::dns::tcp::{TcpCounters, TcpLimits};
use xenlet_router::dns::{DnsAction, DnsCounters, DnsForwarder, HostTable, Rng};

pub mod dhcp6;
mod dnstcp;
pub mod ra;
use dhcp6::Dhcp6Ports;
pub mod wan6;
use dnstcp::DnsTcp;
use ra::RaPorts;
use wan6::Wan6;
use xenlet_router::Millis;

/// The DHCP server's port.
pub const DHCP_SERVER_PORT: u16 = 67;
/// The DHCP client's port.
pub const DHCP_CLIENT_PORT: u16 = 68;
/// DNS.
pub const DNS_PORT: u16 = 53;
/// Leases are written at most this often (ms).
pub const SAVE_INTERVAL_MS: i64 = 5_000;
/// Datagrams taken from one socket per poll at most (a flood of queries cannot hold
/// the idle loop).
const RX_BUDGET: usize = 64;
/// A listening socket (port 67, 53): datagrams and bytes held each way.
const LISTEN_BUFFER: (usize, usize) = (16, 16 * 1024);
/// An upstream socket carries one query and its answer (a few if the server
/// repeats itself); up to the forwarder's `max_pending` of them are open, so they
/// stay small (DNS over UDP with EDNS stays under 4 KiB).
const UPSTREAM_BUFFER: (usize, usize) = (4, 4 * 1024);
/// The largest lease file read at start.
pub const MAX_LEASE_FILE: usize = 256 * 1024;

/// Where the lease file lives; the kernel implements it over its file tree.
pub trait LeaseStore {
    /// The saved lease file's text, if there is one.
    fn load(&mut self) -> Option<String>;
    /// Replaces the saved lease file with `text` (atomically).
    fn save(&mut self, text: &str) -> Result<(), String>;
}

/// Counters of the glue itself (the protocol counters are the server's and the
/// forwarder's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlueCounters {
    /// DNS queries from outside every served subnet (`localservice`), dropped.
    pub dns_not_local: u64,
    /// DNS queries over UDP from IPv6 clients (answered as IPv4 ones are).
    pub dns_ipv6_queries: u64,
    /// Datagrams a socket refused to send (buffer full, no route).
    pub send_failed: u64,
    /// Upstream queries with no interface routing to the server.
    pub upstream_unroutable: u64,
    /// Upstream sockets that could not be bound.
    pub upstream_bind_failed: u64,
    /// Times the upstream server list changed.
    pub upstream_changes: u64,
    /// Lease files written.
    pub lease_saves: u64,
    /// Lease file writes that failed.
    pub lease_save_errors: u64,
    /// Lease files not written because the text would be over [`MAX_LEASE_FILE`]
    /// or the heap had no room for it.
    pub lease_file_refused: u64,
    /// Services stopped because their interface went away.
    pub lost_interface: u64,
}

/// A UDP socket in one interface's socket set.
#[derive(Clone, Copy, Debug)]
struct Sock {
    /// The interface's [`NetIf::instance`].
    instance: u64,
    handle: SocketHandle,
}

impl Sock {
    /// Opens a socket bound to `port` on `n` with `(packets, bytes)` of buffer
    /// each way.
    fn open<L: Link>(n: &mut NetIf<L>, port: u16, buffer: (usize, usize)) -> Option<Sock> {
        let (packets, bytes) = buffer;
        let mut s = udp::Socket::new(
            udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; packets], vec![0; bytes]),
            udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; packets], vec![0; bytes]),
        );
        s.bind(port).ok()?;
        Some(Sock {
            instance: n.instance(),
            handle: n.sockets.add(s),
        })
    }

    /// The interface it lives on, if it is still there.
    fn netif<'a, L: Link>(&self, ifs: &'a mut [NetIf<L>]) -> Option<&'a mut NetIf<L>> {
        ifs.iter_mut().find(|n| n.instance() == self.instance)
    }

    /// The next datagram: payload, sender, and the address it was sent to.
    fn recv<L: Link>(
        &self,
        ifs: &mut [NetIf<L>],
    ) -> Option<(Vec<u8>, IpEndpoint, Option<IpAddress>)> {
        let n = self.netif(ifs)?;
        let s = n.sockets.get_mut::<udp::Socket>(self.handle);
        s.recv()
            .ok()
            .map(|(d, m)| (d.to_vec(), m.endpoint, m.local_address))
    }

    /// Queues `data` to `to` from `from` (or the stack's choice); whether it was
    /// taken.
    fn send<L: Link>(
        &self,
        ifs: &mut [NetIf<L>],
        data: &[u8],
        to: IpEndpoint,
        from: Option<IpAddress>,
    ) -> bool {
        let Some(n) = self.netif(ifs) else {
            return false;
        };
        let s = n.sockets.get_mut::<udp::Socket>(self.handle);
        let mut meta = udp::UdpMetadata::from(to);
        meta.local_address = from;
        s.send_slice(data, meta).is_ok()
    }

    /// Removes the socket (if its interface is still there).
    fn close<L: Link>(self, ifs: &mut [NetIf<L>]) {
        if let Some(n) = self.netif(ifs) {
            n.sockets.remove(self.handle);
        }
    }
}

/// The DHCP server of one interface.
struct DhcpPort {
    vif: String,
    sock: Option<Sock>,
    server: DhcpServer,
}

/// The DNS listener of one interface.
struct DnsListener {
    vif: String,
    sock: Option<Sock>,
    addr: Ipv4Addr,
    netmask: Ipv4Addr,
}

impl DnsListener {
    fn serves(&self, ip: Ipv4Addr) -> bool {
        let m = u32::from(self.netmask);
        u32::from(ip) & m == u32::from(self.addr) & m
    }
}

/// The DHCP servers' leases (v4 and v6), as the forwarder's host table.
struct Leases<'a>(&'a [DhcpPort], &'a Dhcp6Ports);

impl HostTable for Leases<'_> {
    fn address_of(&self, name: &str, now: Millis) -> Option<Ipv4Addr> {
        self.0.iter().find_map(|p| p.server.address_of(name, now))
    }
    fn name_of(&self, ip: Ipv4Addr, now: Millis) -> Option<&str> {
        self.0.iter().find_map(|p| p.server.name_of(ip, now))
    }
    fn address6_of(&self, name: &str, now: Millis) -> Option<Ipv6Addr> {
        self.1.address_of(name, now)
    }
    fn name6_of(&self, ip: Ipv6Addr, now: Millis) -> Option<&str> {
        self.1.name_of(ip, now)
    }
}

/// A lease file's DHCPv4 part (before the first `duid` line) and its DHCPv6 lines
/// (after it, `duid` lines left out).
/// What [`reconcile`] hands over: a running port whose interface is still
/// configured (with its new spec), one whose interface is no longer, a spec with no
/// port yet.
enum Change<'s, P, S> {
    Kept(P, &'s S),
    Gone(P),
    New(&'s S),
}

/// The `reload` of a per-interface service: each of the running `ports` and then
/// each of the `specs` with no port yet goes through `step` ([`Change`]), which
/// returns the port to keep (`None`: none). `same` says whether a port serves a
/// spec's interface.
fn reconcile<'s, P, S>(
    ports: Vec<P>,
    specs: &'s [S],
    same: impl Fn(&P, &S) -> bool,
    mut step: impl FnMut(Change<'s, P, S>) -> Option<P>,
) -> Vec<P> {
    let mut kept = Vec::with_capacity(specs.len());
    for p in ports {
        let change = match specs.iter().find(|s| same(&p, s)) {
            Some(s) => Change::Kept(p, s),
            None => Change::Gone(p),
        };
        kept.extend(step(change));
    }
    for s in specs {
        if !kept.iter().any(|p| same(p, s)) {
            kept.extend(step(Change::New(s)));
        }
    }
    kept
}

fn split_lease_file(text: &str) -> (&str, impl Iterator<Item = &str>) {
    let at = text
        .match_indices("duid ")
        .find(|(i, _)| *i == 0 || text.as_bytes().get(i - 1) == Some(&b'\n'))
        .map_or(text.len(), |(i, _)| i);
    let (v4, v6) = text.split_at(at);
    (v4, v6.lines().filter(|l| !l.starts_with("duid ")))
}

/// Query ids and source ports: ChaCha20 (`rand_chacha`) keyed by the caller with 32
/// bytes from the kernel's generator. An xorshift stream before gave its whole state
/// away to anyone who saw a few ids and ports (DNS spoofing, DNSpooq).
struct QueryRng(ChaCha20Rng);

impl Rng for QueryRng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
}

/// A lease write taken out of the services ([`LanServices::take_lease_save`]).
pub struct LeaseSave {
    /// Where the leases go.
    pub store: Box<dyn LeaseStore + Send>,
    /// dnsmasq's lease file text.
    pub text: String,
    mark: u64,
}

/// The LAN services over a [`NetStack`].
pub struct LanServices {
    dhcp: Vec<DhcpPort>,
    dns: Option<DnsForwarder>,
    listeners: Vec<DnsListener>,
    /// DNS over TCP: its listeners, client and upstream connections.
    tcp: DnsTcp,
    /// Router advertisements.
    ra: RaPorts,
    /// DHCPv6 servers.
    dhcp6: Dhcp6Ports,
    /// `wan6`: router discovery and the DHCPv6 client on the WAN.
    wan6: Option<Wan6>,
    /// The IPv6 addresses the files gave the interfaces ([`ServicesSpec::addrs6`]),
    /// for [`Self::reload`].
    addrs6: Vec<(String, smoltcp::wire::IpCidr)>,
    /// Open upstream sockets by source port.
    upstream: Vec<(u16, Sock)>,
    configured_upstreams: Vec<SocketAddrV4>,
    local_service: bool,
    rng: QueryRng,
    store: Option<Box<dyn LeaseStore + Send>>,
    epoch_offset_secs: u64,
    /// The servers' (ack, release, decline) sums at the last save.
    saved_mark: u64,
    /// The lease marks of DHCPv4 servers `reload` replaced or stopped, plus one for
    /// each such change and each server started: with it the mark only grows, so a
    /// new server's counters never bring it back to a value already saved.
    dhcp_retired: u64,
    last_save: Option<i64>,
    load_report: LoadReport,
    counters: GlueCounters,
}

fn ms(now_ms: i64) -> Millis {
    u64::try_from(now_ms).unwrap_or(0)
}

impl LanServices {
    /// Starts the services of `spec` on `stack`'s interfaces: opens the sockets,
    /// loads the leases from `store`. `epoch_offset_secs` is the Unix time at which
    /// the stack's clock read 0 (the lease file holds wall-clock expiries; 0 if the
    /// wall clock is unknown). An interface of `spec` the stack does not have is
    /// skipped (see [`Self::status_lines`]). `seed` keys the generator of DNS query
    /// ids and source ports.
    pub fn new<L: Link>(
        spec: &ServicesSpec,
        stack: &mut NetStack<L>,
        mut store: Option<Box<dyn LeaseStore + Send>>,
        epoch_offset_secs: u64,
        seed: [u8; 32],
        now_ms: i64,
    ) -> LanServices {
        let now = ms(now_ms);
        let mut dhcp = Vec::new();
        let mut listeners = Vec::new();
        let mut tcp = DnsTcp::new(TcpLimits::default());
        let mut load_report = LoadReport::default();
        let saved = store.as_mut().and_then(|s| s.load());
        for p in &spec.pools {
            let mut server = DhcpServer::new(p.pool.clone());
            if let Some(text) = saved.as_deref() {
                let (text, _) = split_lease_file(text);
                let r = server.load_lease_file(text, now, epoch_offset_secs);
                load_report.loaded += r.loaded;
                load_report.expired += r.expired;
                // A line of another pool's subnet is "corrupt" to this one.
                load_report.corrupt = load_report.corrupt.max(r.corrupt);
            }
            let n = stack.by_name(&p.vif);
            dhcp.push(DhcpPort {
                vif: p.vif.clone(),
                sock: n.and_then(|n| Sock::open(n, DHCP_SERVER_PORT, LISTEN_BUFFER)),
                server,
            });
            if spec.dns.is_some() {
                listeners.push(DnsListener {
                    vif: p.vif.clone(),
                    sock: stack
                        .by_name(&p.vif)
                        .and_then(|n| Sock::open(n, DNS_PORT, LISTEN_BUFFER)),
                    addr: p.pool.server,
                    netmask: p.pool.netmask,
                });
                if let Some(n) = stack.by_name(&p.vif) {
                    tcp.listen_on(n);
                }
            }
        }
        let mut rng = QueryRng(ChaCha20Rng::from_seed(seed));
        let ra = RaPorts::new(&spec.ra, &mut stack.ifs, now);
        let mut dhcp6 = Dhcp6Ports::new(&spec.dhcp6, &mut stack.ifs);
        if let Some(text) = saved.as_deref() {
            let (_, v6) = split_lease_file(text);
            let v6: String = v6.flat_map(|l| [l, "\n"]).collect();
            let r = dhcp6.load(&v6, now, epoch_offset_secs);
            load_report.loaded += r.loaded;
            load_report.expired += r.expired;
            load_report.corrupt += r.corrupt;
        }
        let wan6 = spec
            .wan6
            .as_ref()
            .and_then(|p| Wan6::new(p, &spec.ip6assign, &mut stack.ifs, now, &mut rng));
        let saved_mark = dhcp
            .iter()
            .map(|p| lease_mark(p.server.counters()))
            .fold(dhcp6.lease_mark(), u64::wrapping_add);
        LanServices {
            dhcp,
            dns: spec.dns.clone().map(DnsForwarder::new),
            listeners,
            tcp,
            ra,
            dhcp6,
            wan6,
            addrs6: spec.addrs6.clone(),
            upstream: Vec::new(),
            configured_upstreams: spec.upstreams.clone(),
            local_service: spec.local_service,
            rng,
            store,
            epoch_offset_secs,
            saved_mark,
            dhcp_retired: 0,
            last_save: None,
            load_report,
            counters: GlueCounters::default(),
        }
    }

    /// `reload`: the IPv6 part of `spec` (the files read again) replaces what
    /// runs. The interfaces' addresses from the files (the ULA `::1/64` of
    /// `ip6assign`/`ip6hint`) are put on or taken off (a new one probed by DAD);
    /// router advertisements are rebuilt and a changed one goes out at once, a
    /// prefix no longer announced with lifetimes 0, an interface whose `ra` is no
    /// longer `server` with a final advertisement; DHCPv6 servers take their new
    /// configuration (leases still in their prefix kept), stop or start; `wan6`'s
    /// LAN shares follow `ip6assign`. A DHCPv4 pool that changed starts afresh with
    /// the leases that fit it, as dnsmasq restarted over its lease file
    /// ([`Self::reload_dhcp4`]); changed DNS settings take a new forwarder (its cache
    /// emptied, as dnsmasq's restart does); `wan6` follows its settings
    /// ([`Self::reload_wan6`]). What changed, a line each.
    pub fn reload<L: Link>(
        &mut self,
        spec: &ServicesSpec,
        stack: &mut NetStack<L>,
        now_ms: i64,
    ) -> Vec<String> {
        let now = ms(now_ms);
        let mut said = Vec::new();
        for (vif, a) in &self.addrs6 {
            if spec.addrs6.contains(&(vif.clone(), *a)) {
                continue;
            }
            if let Some(n) = stack.by_name(vif) {
                if n.del_addr(*a).is_ok() {
                    said.push(format!("{vif}: {a} removed"));
                }
            }
        }
        for (vif, a) in &spec.addrs6 {
            if self.addrs6.contains(&(vif.clone(), *a)) {
                continue;
            }
            if let Some(n) = stack.by_name(vif) {
                match n.add_addr(*a) {
                    Ok(()) => said.push(format!("{vif}: {a} added")),
                    Err(e) => said.push(format!("{vif}: {a} not added ({e})")),
                }
            }
        }
        self.addrs6 = spec.addrs6.clone();
        said.extend(self.reload_dhcp4(spec, stack, now));
        said.extend(self.reload_dns(spec, stack));
        said.extend(self.ra.reload(&spec.ra, &mut stack.ifs, now));
        said.extend(self.dhcp6.reload(&spec.dhcp6, &mut stack.ifs, now));
        self.reload_wan6(spec, stack, now, &mut said);
        said
    }

    /// `reload` of `wan6`: the same settings run on (the LAN shares following
    /// `ip6assign`); new `reqaddress`/`reqprefix` restart it (the lease released,
    /// a new one asked for: [`Wan6::reconfigure`]); taken off the files, it stops,
    /// its LAN /64s announced with lifetimes 0 ([`Wan6::stop`]); on another
    /// interface, or new, it starts there. What changed goes to `said`.
    fn reload_wan6<L: Link>(
        &mut self,
        spec: &ServicesSpec,
        stack: &mut NetStack<L>,
        now: Millis,
        said: &mut Vec<String>,
    ) {
        match (self.wan6.as_mut(), spec.wan6.as_ref()) {
            (Some(w), Some(p)) if w.vif() == p.vif => {
                said.extend(w.reconfigure(p, &mut stack.ifs, now, &mut self.rng));
                said.extend(w.set_lans(&spec.ip6assign, now));
            }
            (Some(w), None) => {
                if !w.stopped() {
                    said.push(w.stop(&mut stack.ifs, now, &mut self.rng));
                }
            }
            (_, p) => {
                if let Some(w) = self.wan6.take() {
                    said.push(format!("{}: {} stopped", w.name(), w.vif()));
                    w.shutdown(&mut stack.ifs, &mut self.rng);
                }
                if let Some(p) = p {
                    self.wan6 = Wan6::new(p, &spec.ip6assign, &mut stack.ifs, now, &mut self.rng);
                    said.push(match &self.wan6 {
                        Some(w) => w.summary(),
                        None => format!("{}: no interface {}, not started", p.name, p.vif),
                    });
                }
            }
        }
    }

    /// `reload` of the DHCPv4 servers: a pool whose settings are unchanged runs on;
    /// a changed one is replaced by a server with the new settings and the leases of
    /// the old that fit them (through the lease file's text, as dnsmasq restarted
    /// loads its file: a lease out of the new subnet, or on an address a static host
    /// now holds, is dropped); a pool gone stops (its socket closed, its leases
    /// dropped), a new one starts.
    fn reload_dhcp4<L: Link>(
        &mut self,
        spec: &ServicesSpec,
        stack: &mut NetStack<L>,
        now: Millis,
    ) -> Vec<String> {
        let mut said = Vec::new();
        let running = core::mem::take(&mut self.dhcp);
        let same = |p: &DhcpPort, q: &PoolSpec| p.vif == q.vif;
        self.dhcp = reconcile(running, &spec.pools, same, |change| match change {
            Change::Kept(p, q) if q.pool == *p.server.config() => Some(p),
            Change::Kept(p, q) => {
                let held = p.server.leases(now).count();
                self.retire(p.server.counters());
                let text = p.server.lease_file(now, self.epoch_offset_secs);
                let mut server = DhcpServer::new(q.pool.clone());
                let r = server.load_lease_file(&text, now, self.epoch_offset_secs);
                said.push(format!(
                    "dhcpd: {} now {} ({} leases kept, {} dropped)",
                    p.vif,
                    pool_summary(&q.pool),
                    r.loaded,
                    held.saturating_sub(r.loaded)
                ));
                Some(DhcpPort { server, ..p })
            }
            Change::Gone(p) => {
                let held = p.server.leases(now).count();
                self.retire(p.server.counters());
                if let Some(s) = p.sock {
                    s.close(&mut stack.ifs);
                }
                said.push(format!("dhcpd: {} stopped ({held} leases dropped)", p.vif));
                None
            }
            Change::New(q) => {
                let sock = stack
                    .by_name(&q.vif)
                    .and_then(|n| Sock::open(n, DHCP_SERVER_PORT, LISTEN_BUFFER));
                self.retire(&DhcpCounters::default());
                said.push(format!(
                    "dhcpd: {} started, {}",
                    q.vif,
                    pool_summary(&q.pool)
                ));
                Some(DhcpPort {
                    vif: q.vif.clone(),
                    sock,
                    server: DhcpServer::new(q.pool.clone()),
                })
            }
        });
        said
    }

    /// Notes a DHCPv4 server replaced, stopped or started by `reload` (see
    /// `dhcp_retired`): the lease file is written again.
    fn retire(&mut self, c: &DhcpCounters) {
        self.dhcp_retired = self
            .dhcp_retired
            .wrapping_add(lease_mark(c))
            .wrapping_add(1);
    }

    /// `reload` of the DNS forwarder: its UDP and TCP listeners follow the pools
    /// (one on each served interface, at the pool's address); settings that changed
    /// (`domain`, `rebind_protection`, the cache, ...: not the upstreams, which
    /// follow the files and the leases at every turn) take a new forwarder; DNS
    /// turned off stops it, turned on starts it.
    fn reload_dns<L: Link>(&mut self, spec: &ServicesSpec, stack: &mut NetStack<L>) -> Vec<String> {
        let mut said = Vec::new();
        let wanted: Vec<&PoolSpec> = if spec.dns.is_some() {
            spec.pools.iter().collect()
        } else {
            Vec::new()
        };
        let mut listeners = Vec::new();
        for l in core::mem::take(&mut self.listeners) {
            match wanted.iter().find(|q| q.vif == l.vif) {
                Some(q) => listeners.push(DnsListener {
                    addr: q.pool.server,
                    netmask: q.pool.netmask,
                    ..l
                }),
                None => {
                    if let Some(s) = l.sock {
                        s.close(&mut stack.ifs);
                    }
                    if let Some(n) = stack.by_name(&l.vif) {
                        let instance = n.instance();
                        self.tcp.stop_on(instance, &mut stack.ifs);
                    }
                    said.push(format!("dns: {} no longer served", l.vif));
                }
            }
        }
        for q in wanted {
            if listeners.iter().any(|l| l.vif == q.vif) {
                continue;
            }
            let n = stack.by_name(&q.vif);
            let sock = n.and_then(|n| Sock::open(n, DNS_PORT, LISTEN_BUFFER));
            if let Some(n) = stack.by_name(&q.vif) {
                self.tcp.listen_on(n);
            }
            listeners.push(DnsListener {
                vif: q.vif.clone(),
                sock,
                addr: q.pool.server,
                netmask: q.pool.netmask,
            });
            said.push(format!("dns: {} served", q.vif));
        }
        self.listeners = listeners;
        self.configured_upstreams = spec.upstreams.clone();
        self.local_service = spec.local_service;
        match (self.dns.as_ref(), spec.dns.as_ref()) {
            (Some(d), Some(new)) => {
                let mut old = d.config().clone();
                old.upstreams = new.upstreams.clone();
                old.lan_addr6 = new.lan_addr6;
                if old != *new {
                    let mut cfg = new.clone();
                    cfg.upstreams = d.config().upstreams.clone();
                    self.dns = Some(DnsForwarder::new(cfg));
                    said.push(String::from("dns: new settings (cache emptied)"));
                } else if d.config().lan_addr6 != new.lan_addr6 {
                    if let Some(d) = self.dns.as_mut() {
                        d.set_lan_addr6(new.lan_addr6);
                    }
                }
            }
            (Some(_), None) => {
                self.dns = None;
                said.push(String::from("dns: stopped"));
            }
            (None, Some(new)) => {
                self.dns = Some(DnsForwarder::new(new.clone()));
                said.push(String::from("dns: started"));
            }
            (None, None) => {}
        }
        said
    }

    /// What loading the lease file did.
    pub fn load_report(&self) -> LoadReport {
        self.load_report
    }

    /// The glue's counters.
    pub fn counters(&self) -> GlueCounters {
        self.counters
    }

    /// Each DHCP server's interface and counters.
    pub fn dhcp_counters(&self) -> Vec<(&str, &DhcpCounters)> {
        self.dhcp
            .iter()
            .map(|p| (p.vif.as_str(), p.server.counters()))
            .collect()
    }

    /// Each DHCPv6 server's interface, counters and the sends its link refused.
    pub fn dhcp6_counters(&self) -> Vec<(&str, &xenlet_router::dhcp6d::Dhcp6Counters, u64)> {
        self.dhcp6.counters()
    }

    /// The forwarder's counters, if DNS runs.
    pub fn dns_counters(&self) -> Option<&DnsCounters> {
        self.dns.as_ref().map(DnsForwarder::counters)
    }

    /// Each advertising interface's counters and the sends its link refused.
    pub fn ra_counters(&self) -> Vec<(&str, xenlet_router::ra::RaCounters, u64)> {
        self.ra.counters()
    }

    /// The DNS over TCP service's counters.
    pub fn dns_tcp_counters(&self) -> TcpCounters {
        self.tcp.counters()
    }

    /// The DNS over TCP service's bounds.
    pub fn dns_tcp_limits(&self) -> TcpLimits {
        self.tcp.limits()
    }

    /// The forwarder's current upstream servers.
    pub fn upstreams(&self) -> &[SocketAddr] {
        self.dns.as_ref().map_or(&[], |d| &d.config().upstreams)
    }

    /// The boot line: `dhcpd: eth0 192.168.1.100-249, lease 12h; dns: forwarding to ...`.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = self
            .dhcp
            .iter()
            .map(|p| {
                let down = if p.sock.is_none() { " (not up)" } else { "" };
                format!("dhcpd: {} {}{down}", p.vif, pool_summary(p.server.config()))
            })
            .collect();
        parts.extend(self.ra.summary());
        parts.extend(self.dhcp6.summary());
        if let Some(w) = &self.wan6 {
            parts.push(w.summary());
        }
        if let Some(d) = &self.dns {
            let ups: Vec<String> = d
                .config()
                .upstreams
                .iter()
                .map(|u| format!("{u}"))
                .collect();
            let v6 = d
                .config()
                .lan_addr6
                .map(|a| format!(" {a}"))
                .unwrap_or_default();
            parts.push(format!(
                "dns: {}.{} on {}{v6}, forwarding to {}",
                d.config().hostname,
                d.config().domain,
                d.config().lan_addr,
                if ups.is_empty() {
                    String::from("the WAN's DHCP servers")
                } else {
                    ups.join(" ")
                }
            ));
        }
        parts.join("; ")
    }

    /// The width of `leases`' IFACE column: the longest name of an interface with a
    /// DHCP server (`br-guest`), and at least the heading's 6.
    pub fn lease_iface_width(&self) -> usize {
        let v4 = self.dhcp.iter().map(|p| p.vif.as_str());
        let v6 = self.dhcp6.ports.iter().map(|p| p.vif.as_str());
        column_width(v4.chain(v6), "IFACE".len() + 1)
    }

    /// Bound leases, one line each, DHCPv4 then DHCPv6: interface, address, MAC (for
    /// DHCPv6 the one the client's DUID carries, else the DUID), expiry (time left
    /// or `never`), host name; written to `out` as they are read (nothing is
    /// gathered); the number written. After `out`'s first error nothing more is
    /// written and the error is returned.
    pub fn write_leases(
        &self,
        out: &mut dyn core::fmt::Write,
        now_ms: i64,
    ) -> Result<usize, core::fmt::Error> {
        let now = ms(now_ms);
        let w = self.lease_iface_width();
        let left = |expires: Option<Millis>| {
            expires.map_or(String::from("never"), |e| {
                time_left(u32::try_from(e.saturating_sub(now) / 1000).unwrap_or(u32::MAX))
            })
        };
        let mut n = 0;
        for p in &self.dhcp {
            for l in p.server.leases(now) {
                let row = LeaseRow {
                    addr: &l.ip,
                    hw: l.hw.as_bytes(),
                    hw_width: 17,
                    left: left(l.expires),
                    hostname: l.hostname.as_deref(),
                };
                row.write(out, &p.vif, w)?;
                n += 1;
            }
        }
        // DHCPv6: the MAC the client's DUID carries, else the DUID itself.
        for p in &self.dhcp6.ports {
            for l in p.server.leases(now) {
                let mac = xenlet_router::dhcp6d::server::duid_mac(&l.duid);
                let row = LeaseRow {
                    addr: &l.addr,
                    hw: mac.as_ref().map_or(&l.duid[..], |m| &m[..]),
                    hw_width: if mac.is_some() { 17 } else { 0 },
                    left: left(l.expires),
                    hostname: l.hostname.as_deref(),
                };
                row.write(out, &p.vif, w)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Every pool's leases as dnsmasq's lease file; `None` if it would be longer
    /// than [`MAX_LEASE_FILE`] (what is read back at start) or the heap has no room
    /// for it. It is built in one bounded, fallibly grown text.
    pub fn lease_file(&self, now_ms: i64) -> Option<String> {
        let now = ms(now_ms);
        let mut text = BoundedText::new(MAX_LEASE_FILE);
        for p in &self.dhcp {
            p.server
                .write_lease_file(&mut text, now, self.epoch_offset_secs)
                .ok()?;
        }
        for p in &self.dhcp6.ports {
            p.server
                .write_lease_file(&mut text, now, self.epoch_offset_secs)
                .ok()?;
        }
        Some(text.into_string())
    }

    /// Follows the upstream servers: the files', then those of the DHCP leases of
    /// interfaces that are not served.
    fn sync_upstreams<L: Link>(&mut self, ifs: &[NetIf<L>]) {
        let Some(d) = self.dns.as_mut() else {
            return;
        };
        let mut want: Vec<SocketAddr> = self
            .configured_upstreams
            .iter()
            .map(|&a| a.into())
            .collect();
        for n in ifs
            .iter()
            .filter(|n| !self.listeners.iter().any(|l| l.vif == n.name))
        {
            for a in n.dhcp_dns_servers() {
                let a = SocketAddr::from((*a, DNS_PORT));
                if !want.contains(&a) {
                    want.push(a);
                }
            }
        }
        // wan6's servers (DHCPv6 option 23, the WAN's RDNSS) after the IPv4 ones
        for a in self.wan6.iter().flat_map(Wan6::dns_servers) {
            let a = SocketAddr::from((a, DNS_PORT));
            if !want.contains(&a) {
                want.push(a);
            }
        }
        want.truncate(xenlet_router::dns::forwarder::MAX_UPSTREAMS);
        if d.config().upstreams != want {
            d.set_upstreams(&want);
            self.counters.upstream_changes += 1;
        }
    }

    /// Receives on the services' sockets, answers, forwards, and runs the
    /// forwarder's timers; whether anything was sent or received (the caller polls
    /// the stack again to send it at once).
    pub fn poll<L: Link>(&mut self, stack: &mut NetStack<L>, now_ms: i64) -> bool {
        let now = ms(now_ms);
        let mut busy = false;
        busy |= self.poll_dhcp(&mut stack.ifs, now);
        if let Some(w) = self.wan6.as_mut() {
            busy |= w.poll(&mut stack.ifs, &mut self.ra, now, &mut self.rng);
            if w.finished() {
                if let Some(w) = self.wan6.take() {
                    w.shutdown(&mut stack.ifs, &mut self.rng);
                }
            }
        }
        busy |= self.ra.poll(&mut stack.ifs, now, &mut self.rng);
        busy |= self
            .dhcp6
            .poll(&mut stack.ifs, now, &mut self.counters.lost_interface);
        if self.dns.is_some() {
            self.sync_upstreams(&stack.ifs);
            busy |= self.poll_dns(stack, now);
        }
        busy
    }

    fn poll_dhcp<L: Link>(&mut self, ifs: &mut [NetIf<L>], now: Millis) -> bool {
        let mut busy = false;
        for p in self.dhcp.iter_mut() {
            let Some(sock) = p.sock else { continue };
            if sock.netif(ifs).is_none() {
                p.sock = None;
                self.counters.lost_interface += 1;
                continue;
            }
            for _ in 0..RX_BUDGET {
                let Some((data, _from, _to)) = sock.recv(ifs) else {
                    break;
                };
                busy = true;
                let Some(reply) = p.server.handle(&data, now) else {
                    continue;
                };
                let dst = match reply.to {
                    ReplyTo::Broadcast | ReplyTo::UnicastNoArp { .. } => Ipv4Addr::BROADCAST,
                    ReplyTo::Unicast(ip) => ip,
                };
                let to = IpEndpoint::new(IpAddress::Ipv4(dst), DHCP_CLIENT_PORT);
                let from = Some(IpAddress::Ipv4(p.server.config().server));
                if !sock.send(ifs, &reply.packet, to, from) {
                    self.counters.send_failed += 1;
                }
            }
        }
        busy
    }

    /// Each query or reply is answered (its actions carried out) before the next
    /// datagram is taken: a poll holds one datagram and its answers at a time, not
    /// up to [`RX_BUDGET`] answers per listener plus every upstream reply.
    fn poll_dns<L: Link>(&mut self, stack: &mut NetStack<L>, now: Millis) -> bool {
        // Out of `self` while the poll runs, so that `act` can borrow the rest.
        let Some(mut d) = self.dns.take() else {
            return false;
        };
        let mut t = core::mem::take(&mut self.tcp);
        let mut busy = false;
        // Queries from the LAN.
        for k in 0..self.listeners.len() {
            let Some(sock) = self.listeners.get(k).and_then(|l| l.sock) else {
                continue;
            };
            if sock.netif(&mut stack.ifs).is_none() {
                if let Some(l) = self.listeners.get_mut(k) {
                    l.sock = None;
                }
                self.counters.lost_interface += 1;
                continue;
            }
            for _ in 0..RX_BUDGET {
                let Some((data, from, _)) = sock.recv(&mut stack.ifs) else {
                    break;
                };
                busy = true;
                let client = match from.addr {
                    IpAddress::Ipv4(ip) => {
                        if self.local_service && !self.listeners.iter().any(|l| l.serves(ip)) {
                            self.counters.dns_not_local += 1;
                            continue;
                        }
                        SocketAddr::from((ip, from.port))
                    }
                    IpAddress::Ipv6(ip) => {
                        self.counters.dns_ipv6_queries += 1;
                        // The socket is the receiving interface's: the client must
                        // be on one of its prefixes (ULA /64, link-local).
                        let on_link = sock
                            .netif(&mut stack.ifs)
                            .is_some_and(|n| n.on_link(from.addr));
                        if self.local_service && !on_link {
                            self.counters.dns_not_local += 1;
                            continue;
                        }
                        SocketAddr::from((ip, from.port))
                    }
                };
                let actions = d.handle_query(
                    &data,
                    client,
                    now,
                    &mut self.rng,
                    &Leases(&self.dhcp, &self.dhcp6),
                );
                drop(data);
                for a in actions {
                    self.act(&mut t, stack, a, now);
                }
            }
        }
        // Replies from upstream.
        let mut k = 0;
        while let Some(&(port, sock)) = self.upstream.get(k) {
            k += 1;
            for _ in 0..RX_BUDGET {
                let Some((data, from, _)) = sock.recv(&mut stack.ifs) else {
                    break;
                };
                busy = true;
                let server = SocketAddr::new(from.addr.into(), from.port);
                let actions = d.handle_upstream(&data, server, port, now);
                drop(data);
                for a in actions {
                    self.act(&mut t, stack, a, now);
                }
                if !self.upstream.iter().any(|(p, _)| *p == port) {
                    // The reply finished its query and the socket closed: the last
                    // socket took its place (`swap_remove`), read that one next.
                    k -= 1;
                    break;
                }
            }
        }
        // Timers, one due query at a time.
        if d.poll_at().is_some_and(|t| t <= now) {
            loop {
                let actions = d.poll_one(now);
                if actions.is_empty() {
                    break;
                }
                busy = true;
                for a in actions {
                    self.act(&mut t, stack, a, now);
                }
            }
        }
        busy |= self.poll_dns_tcp(&mut d, &mut t, stack, now);
        self.tcp = t;
        self.dns = Some(d);
        busy
    }

    /// DNS over TCP: connections accepted and closed, one whole query (or upstream
    /// answer) handled at a time, answers written out.
    fn poll_dns_tcp<L: Link>(
        &mut self,
        d: &mut DnsForwarder,
        t: &mut DnsTcp,
        stack: &mut NetStack<L>,
        now: Millis,
    ) -> bool {
        let mut busy = false;
        let local_service = self.local_service;
        let listeners = &self.listeners;
        // An IPv4 client on a served subnet; an IPv6 one on a prefix of the
        // interface it connected on (`on_link`).
        let local = |ip: IpAddr, on_link: bool| {
            !local_service
                || match ip {
                    IpAddr::V4(ip) => listeners.iter().any(|l| l.serves(ip)),
                    IpAddr::V6(_) => on_link,
                }
        };
        let before = t.socket_count();
        t.maintain(&mut stack.ifs, now, d, &local);
        busy |= t.socket_count() != before;
        for k in 0..t.conn_count() {
            for _ in 0..RX_BUDGET {
                let Some((client, q)) = t.read_query(k, &mut stack.ifs, now, d) else {
                    break;
                };
                busy = true;
                let actions = d.handle_tcp_query(
                    &q,
                    client,
                    now,
                    &mut self.rng,
                    &Leases(&self.dhcp, &self.dhcp6),
                );
                drop(q);
                for a in actions {
                    self.act(t, stack, a, now);
                }
            }
        }
        for k in 0..t.upstream_count() {
            let Some((port, server, answer)) = t.read_upstream(k, &mut stack.ifs, now) else {
                continue;
            };
            busy = true;
            let actions = d.handle_upstream_tcp(&answer, server, port, now);
            drop(answer);
            for a in actions {
                self.act(t, stack, a, now);
            }
        }
        t.flush(&mut stack.ifs, now);
        busy
    }

    /// Carries out one of the forwarder's actions.
    fn act<L: Link>(&mut self, t: &mut DnsTcp, stack: &mut NetStack<L>, a: DnsAction, now: Millis) {
        match a {
            DnsAction::ToTcpClient { client, packet } => t.send_to_client(client, &packet),
            DnsAction::ToUpstreamTcp {
                upstream,
                source_port,
                packet,
            } => t.send_upstream(stack, upstream, source_port, &packet, now),
            DnsAction::ToClient { client, packet } => {
                let sent = match client {
                    SocketAddr::V4(c) => self.send_v4(stack, c, &packet),
                    SocketAddr::V6(c) => {
                        let to = IpEndpoint::new(IpAddress::Ipv6(*c.ip()), c.port());
                        // The interface with the client on link (a link-local
                        // client: the first served one that has the socket).
                        let sock = self.listeners.iter().find_map(|l| {
                            let s = l.sock?;
                            s.netif(&mut stack.ifs)
                                .is_some_and(|n| n.on_link(to.addr))
                                .then_some(s)
                        });
                        sock.is_some_and(|s| s.send(&mut stack.ifs, &packet, to, None))
                    }
                };
                if !sent {
                    self.counters.send_failed += 1;
                }
            }
            DnsAction::ToUpstream {
                upstream,
                source_port,
                packet,
            } => {
                let sock = match self.upstream.iter().find(|(p, _)| *p == source_port) {
                    Some((_, s)) => Some(*s),
                    None => self.open_upstream(stack, upstream.ip().into(), source_port),
                };
                let to = IpEndpoint::new(upstream.ip().into(), upstream.port());
                if let Some(s) = sock {
                    if !s.send(&mut stack.ifs, &packet, to, None) {
                        self.counters.send_failed += 1;
                    }
                }
            }
            DnsAction::ClosePort(port) => {
                t.close_port(port);
                if let Some(i) = self.upstream.iter().position(|(p, _)| *p == port) {
                    let (_, s) = self.upstream.swap_remove(i);
                    s.close(&mut stack.ifs);
                }
            }
        }
    }

    /// An answer to IPv4 client `client`, from the listener of its subnet (or the
    /// first one); whether it was queued.
    fn send_v4<L: Link>(
        &self,
        stack: &mut NetStack<L>,
        client: SocketAddrV4,
        packet: &[u8],
    ) -> bool {
        let ip = *client.ip();
        let l = self
            .listeners
            .iter()
            .find(|l| l.sock.is_some() && l.serves(ip))
            .or_else(|| self.listeners.iter().find(|l| l.sock.is_some()));
        let to = IpEndpoint::new(IpAddress::Ipv4(ip), client.port());
        l.and_then(|l| l.sock.map(|s| (s, l.addr)))
            .is_some_and(|(s, addr)| {
                s.send(&mut stack.ifs, packet, to, Some(IpAddress::Ipv4(addr)))
            })
    }

    fn open_upstream<L: Link>(
        &mut self,
        stack: &mut NetStack<L>,
        server: IpAddress,
        port: u16,
    ) -> Option<Sock> {
        let Some(i) = stack.route(server) else {
            self.counters.upstream_unroutable += 1;
            return None;
        };
        let s = stack
            .ifs
            .get_mut(i)
            .and_then(|n| Sock::open(n, port, UPSTREAM_BUFFER));
        match s {
            Some(s) => self.upstream.push((port, s)),
            None => self.counters.upstream_bind_failed += 1,
        }
        s
    }

    /// When [`Self::poll`] next has timer work (ms), if ever.
    pub fn poll_at(&self) -> Option<i64> {
        let dns = self.dns.as_ref().and_then(DnsForwarder::poll_at);
        let tcp = self.tcp.poll_at();
        dns.into_iter()
            .chain(tcp)
            .chain(self.ra.poll_at())
            .chain(self.wan6.as_ref().and_then(Wan6::poll_at))
            .min()
            .and_then(|t| i64::try_from(t).ok())
    }

    /// When [`Self::save_leases`] has a changed lease table to write (ms), if it
    /// has one: the idle loop wakes for it.
    pub fn save_at(&self) -> Option<i64> {
        self.store.as_ref()?;
        (self.lease_mark() != self.saved_mark).then(|| {
            self.last_save
                .map_or(0, |t| t.saturating_add(SAVE_INTERVAL_MS))
        })
    }

    fn lease_mark(&self) -> u64 {
        self.dhcp
            .iter()
            .map(|p| lease_mark(p.server.counters()))
            .fold(
                self.dhcp6.lease_mark().wrapping_add(self.dhcp_retired),
                u64::wrapping_add,
            )
    }

    /// Writes the lease file if the leases changed and the last write is at least
    /// [`SAVE_INTERVAL_MS`] old; whether it wrote. Call it where file I/O may block
    /// (the kernel's idle loop), not inside a network poll.
    pub fn save_leases(&mut self, now_ms: i64) -> bool {
        let Some(mut save) = self.take_lease_save(now_ms) else {
            return false;
        };
        let r = save.store.save(&save.text);
        self.lease_saved(save, r.is_ok())
    }

    /// [`Self::save_leases`] in two halves, so that the write runs without the
    /// services (they go on answering meanwhile): the store and the text to write,
    /// if the leases changed and the last write is old enough. The store is out of
    /// the services until [`Self::lease_saved`] gives it back.
    pub fn take_lease_save(&mut self, now_ms: i64) -> Option<LeaseSave> {
        let mark = self.lease_mark();
        if mark == self.saved_mark
            || self
                .last_save
                .is_some_and(|t| now_ms < t.saturating_add(SAVE_INTERVAL_MS))
        {
            return None;
        }
        self.store.as_ref()?;
        self.last_save = Some(now_ms);
        let Some(text) = self.lease_file(now_ms) else {
            // Tried again after SAVE_INTERVAL_MS; the file keeps its last text.
            self.counters.lease_file_refused += 1;
            return None;
        };
        let store = self.store.take()?;
        Some(LeaseSave { store, text, mark })
    }

    /// Gives the store back after the write of [`Self::take_lease_save`]'s text;
    /// `ok` is whether it was written. Returns `ok`.
    pub fn lease_saved(&mut self, save: LeaseSave, ok: bool) -> bool {
        self.store = Some(save.store);
        if ok {
            self.saved_mark = save.mark;
            self.counters.lease_saves += 1;
        } else {
            self.counters.lease_save_errors += 1;
        }
        ok
    }

    /// Closes every socket (the services stop).
    pub fn shutdown<L: Link>(self, stack: &mut NetStack<L>) {
        for p in self.dhcp {
            if let Some(s) = p.sock {
                s.close(&mut stack.ifs);
            }
        }
        for l in self.listeners {
            if let Some(s) = l.sock {
                s.close(&mut stack.ifs);
            }
        }
        for (_, s) in self.upstream {
            s.close(&mut stack.ifs);
        }
        self.tcp.shutdown(&mut stack.ifs);
        self.ra.shutdown(&mut stack.ifs);
        self.dhcp6.shutdown(&mut stack.ifs);
        if let Some(w) = self.wan6 {
            let mut rng = self.rng;
            w.shutdown(&mut stack.ifs, &mut rng);
        }
    }

    /// `wan6`'s delegated prefix and the LAN interface it is routed to, for
    /// [`crate::gateway::Gateway::set_delegated6`].
    pub fn delegated6(&self) -> Option<(xenlet_router::route6::Ipv6Net, String)> {
        self.wan6
            .as_ref()
            .and_then(Wan6::delegated)
            .map(|(p, v)| (p, String::from(v)))
    }

    /// `wan6`'s WAN interface and the IPv6 MTU its upstream router advertises
    /// (`None`: none advertised), for [`crate::gateway::Gateway::set_mtu6`].
    pub fn wan6_mtu(&self) -> Option<(String, Option<u32>)> {
        self.wan6.as_ref().map(|w| (String::from(w.vif()), w.mtu()))
    }

    /// `ifstatus wan6`'s lines, if `wan6` runs.
    pub fn wan6_lines(&self, now_ms: i64) -> Option<Vec<String>> {
        self.wan6.as_ref().map(|w| w.status_lines(ms(now_ms)))
    }
}

/// What changes a lease file's content: ACKs (new leases, renewals), releases,
/// declines.
fn lease_mark(c: &DhcpCounters) -> u64 {
    c.ack.wrapping_add(c.release).wrapping_add(c.decline)
}

/// A pool as `summary` and `reload` show it: `192.168.1.100-249, lease 12h`.
fn pool_summary(c: &PoolConfig) -> String {
    let range = match c.range() {
        Some((a, b)) => format!("{}-{}", Ipv4Addr::from(a), Ipv4Addr::from(b).octets()[3]),
        None => String::from("no dynamic range"),
    };
    format!("{range}, lease {}", lease_time(c.lease_secs))
}

/// A text column's width: its longest entry's, and at least `min`.
fn column_width<'a>(entries: impl Iterator<Item = &'a str>, min: usize) -> usize {
    entries.map(str::len).fold(min, usize::max)
}

/// One row of `leases`.
struct LeaseRow<'a> {
    addr: &'a dyn core::fmt::Display,
    /// The MAC (or a DUID), written as `xx:xx:...`.
    hw: &'a [u8],
    /// The column's width for it (17 for a MAC, 0 for a DUID: as long as it is).
    hw_width: usize,
    left: String,
    hostname: Option<&'a str>,
}

impl LeaseRow<'_> {
    /// Writes the row, its interface `vif` in a column `w` wide.
    fn write(&self, out: &mut dyn core::fmt::Write, vif: &str, w: usize) -> core::fmt::Result {
        write!(
            out,
            "{vif:<w$} {:<15} ",
            alloc::string::ToString::to_string(self.addr)
        )?;
        for (i, b) in self.hw.iter().enumerate() {
            if i > 0 {
                out.write_char(':')?;
            }
            write!(out, "{b:02x}")?;
        }
        // padded to the column: 3 characters a byte, less one
        for _ in (self.hw.len() * 3).saturating_sub(1)..self.hw_width {
            out.write_char(' ')?;
        }
        writeln!(out, " {:<9} {}", self.left, self.hostname.unwrap_or("*"))
    }
}

/// A lease's time left as LuCI shows it, without its spaces (a column of
/// `leases`): `11h59m42s`, `1d2h0m5s`, `42s`; `infinite` for 0xffffffff.
pub fn time_left(secs: u32) -> String {
    if secs == u32::MAX {
        return String::from("infinite");
    }
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m{s}s"),
        (0, _, _) => format!("{h}h{m}m{s}s"),
        _ => format!("{d}d{h}h{m}m{s}s"),
    }
}

/// `12h`, `90m`, `45s`, `2d`, as OpenWrt writes lease times; `infinite` for
/// 0xffffffff.
pub fn lease_time(secs: u32) -> String {
    match secs {
        u32::MAX => String::from("infinite"),
        s if s >= 86400 && s % 86400 == 0 => format!("{}d", s / 86400),
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests;
