//! The DNS forwarder: local answers, the cache, and queries relayed upstream.
//!
//! Behaves like dnsmasq with OpenWrt's defaults (`/etc/config/dhcp`'s `config
//! dnsmasq`: `domainneeded`, `boguspriv`, `localise_queries`, `rebind_protection`,
//! `rebind_localhost`, `local '/lan/'`, `domain 'lan'`, `cachesize 1000`) and
//! dnsmasq's `src/forward.c`: each forwarded query gets a fresh random id and a
//! random source port (RFC 5452 §9.2), a reply is accepted only if its id, source
//! address, destination port and question all match, then the client's id is put
//! back. Sans-I/O: the caller owns the sockets and the clock and passes a [`Rng`].
//!
//! TCP (RFC 7766, [`super::tcp`] frames it): a query that came over TCP
//! ([`DnsForwarder::handle_tcp_query`]) is forwarded over TCP, as dnsmasq does;
//! an upstream UDP answer with TC set is asked again of the same server over TCP
//! (same id and source port, [`DnsAction::ToUpstreamTcp`]); UDP replies on that port
//! are no longer accepted for it. An answer that came over TCP and is longer than a
//! UDP client's limit (512 bytes, or its EDNS size) reaches it as a truncated answer
//! (TC set, the question only): it retries over TCP and gets the whole answer
//! (from the cache if it fits there). Clients over TCP and over
//! UDP asking the same question share one upstream query.
//!
//! Large messages ([`MessageError::TooComplex`], see [`super::message`]): a client
//! query with more than [`MAX_RECORDS`](super::message::MAX_RECORDS) records or
//! [`MAX_QUESTIONS`](super::message::MAX_QUESTIONS) questions is dropped as
//! malformed. An upstream reply with more than `MAX_RECORDS` records
//! is matched by its header and question, checked for rebinding over all its
//! records (read without allocating), and passed to the client as it is but not
//! cached (counted as `uncached_large`); one with more than `MAX_QUESTIONS`
//! questions matches no query (each has one) and is dropped, so the client gets
//! SERVFAIL when the query times out.

use super::cache::{Cache, CacheConfig};
use super::message::{
    build_response, flag, rcode, rtype, set_id, strip_final_opt, Answer, Message, MessageError,
    Question, Section, CLASS_IN,
};
use super::name::Name;
use super::private::{is_bogus_reverse, is_private_v4, is_private_v6};
use super::reverse::{reverse_v4, reverse_v6};
use super::{HostTable, Rng};
use crate::Millis;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

/// dnsmasq's `dns-forward-max` default.
pub const DEFAULT_MAX_PENDING: usize = 150;
/// How long to wait for one upstream server before trying the next.
pub const DEFAULT_UPSTREAM_TIMEOUT_MS: Millis = 2_000;
/// Most upstream servers kept.
pub const MAX_UPSTREAMS: usize = 8;
/// Source ports are drawn from the IANA dynamic range (RFC 6335).
pub const PORT_RANGE: core::ops::RangeInclusive<u16> = 49152..=65535;

/// The forwarder's plain configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsConfig {
    /// The local domain (`lan`): DHCP clients are `NAME.lan`.
    pub domain: String,
    /// The router's host name (`OpenWrt`), answered as itself and `NAME.lan`.
    pub hostname: String,
    /// More names for the router's LAN address (`router`).
    pub router_aliases: Vec<String>,
    /// The router's LAN address.
    pub lan_addr: Ipv4Addr,
    /// The router's LAN IPv6 address (its ULA `::1`), if it has one: the AAAA
    /// answer for its own names.
    pub lan_addr6: Option<Ipv6Addr>,
    /// The LAN netmask (PTR answers for leases are given inside this subnet).
    pub lan_netmask: Ipv4Addr,
    /// Upstream servers (the WAN's DNS from DHCP or config).
    pub upstreams: Vec<SocketAddr>,
    /// `domainneeded`: names without a dot are never forwarded.
    pub domain_needed: bool,
    /// `boguspriv`: reverse lookups of private ranges are never forwarded.
    pub bogus_priv: bool,
    /// `local '/lan/'`: names under the local domain are never forwarded.
    pub local_domain_only: bool,
    /// `rebind_protection`: upstream answers with private addresses are dropped.
    pub rebind_protection: bool,
    /// `rebind_localhost`: 127/8 answers are allowed despite rebind protection.
    pub rebind_localhost: bool,
    /// `rebind_domain`: domains whose answers may be private.
    pub rebind_allow: Vec<String>,
    /// TTL of local answers (dnsmasq's `local-ttl`, default 0).
    pub local_ttl_secs: u32,
    /// Cache limits.
    pub cache: CacheConfig,
    /// Most queries waiting for upstream.
    pub max_pending: usize,
    /// Time given to each upstream server.
    pub upstream_timeout_ms: Millis,
}

impl DnsConfig {
    /// OpenWrt's defaults for a router at `lan_addr`/`lan_netmask`.
    pub fn new(lan_addr: Ipv4Addr, lan_netmask: Ipv4Addr) -> DnsConfig {
        DnsConfig {
            domain: String::from("lan"),
            hostname: String::from("OpenWrt"),
            router_aliases: alloc::vec![String::from("router")],
            lan_addr,
            lan_addr6: None,
            lan_netmask,
            upstreams: Vec::new(),
            domain_needed: true,
            bogus_priv: true,
            local_domain_only: true,
            rebind_protection: true,
            rebind_localhost: true,
            rebind_allow: Vec::new(),
            local_ttl_secs: 0,
            cache: CacheConfig::default(),
            max_pending: DEFAULT_MAX_PENDING,
            upstream_timeout_ms: DEFAULT_UPSTREAM_TIMEOUT_MS,
        }
    }
}

/// What the caller does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DnsAction {
    /// Send `packet` from port 53 of the LAN address to the client.
    ToClient {
        /// The client's address and port (IPv4 or IPv6).
        client: SocketAddr,
        /// The reply.
        packet: Vec<u8>,
    },
    /// Send `packet` to `upstream` from a UDP socket bound to `source_port`
    /// (open it if it is not open yet); replies on it go to
    /// [`DnsForwarder::handle_upstream`].
    ToUpstream {
        /// The server.
        upstream: SocketAddr,
        /// The local port.
        source_port: u16,
        /// The query, with its new id.
        packet: Vec<u8>,
    },
    /// The query using `source_port` is finished: close its socket (UDP and TCP).
    ClosePort(u16),
    /// Send `packet` (unframed) on the TCP connection from `client` to port 53.
    ToTcpClient {
        /// The client's address and port (its connection, IPv4 or IPv6).
        client: SocketAddr,
        /// The reply.
        packet: Vec<u8>,
    },
    /// Send `packet` (unframed) to `upstream` over a TCP connection from local port
    /// `source_port` (close any connection that port has and open a new one); the
    /// answer read from it goes to [`DnsForwarder::handle_upstream_tcp`].
    ToUpstreamTcp {
        /// The server.
        upstream: SocketAddr,
        /// The local port.
        source_port: u16,
        /// The query, with its new id.
        packet: Vec<u8>,
    },
}

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DnsDrop {
    /// Not a readable DNS message, a response on the query port, or not exactly
    /// one question.
    Malformed,
    /// An upstream reply that matches no pending query (id, server, port or
    /// question differ), or arrives after the query timed out.
    NoPendingMatch,
    /// Too many queries waiting for upstream.
    PendingFull,
    /// No free random source port found.
    NoPort,
}

/// Counters (dnsmasq's `dump stats` lines, plus drops by reason).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DnsCounters {
    /// Queries received from clients.
    pub queries: u64,
    /// Queries sent upstream (including retries to the next server).
    pub forwarded: u64,
    /// Answered from the cache.
    pub cache_hits: u64,
    /// Queries that joined an identical one already sent upstream (no query of
    /// their own: DNSpooq).
    pub merged: u64,
    /// Answered locally (router names, DHCP hosts, localhost, PTR, refusals by
    /// `domainneeded`/`boguspriv`/local domain).
    pub local_answers: u64,
    /// Upstream replies relayed to clients.
    pub replies: u64,
    /// Of those, replies with too many records to parse whole, relayed uncached.
    pub uncached_large: u64,
    /// Queries that timed out on every server (SERVFAIL sent).
    pub timeouts: u64,
    /// Dropped: a malformed client query (or a response sent to port 53).
    pub dropped_malformed: u64,
    /// Dropped: a malformed upstream reply.
    pub dropped_malformed_upstream: u64,
    /// Dropped: upstream answer with a private address (rebind protection).
    pub dropped_rebind: u64,
    /// Dropped: reply matching no pending query.
    pub dropped_no_pending_match: u64,
    /// Dropped: pending table full.
    pub dropped_pending_full: u64,
    /// Dropped: no source port.
    pub dropped_no_port: u64,
    /// Queries received over TCP (also counted in `queries`).
    pub tcp_queries: u64,
    /// Queries sent upstream over TCP (also counted in `forwarded`).
    pub tcp_forwarded: u64,
    /// Truncated UDP answers asked again over TCP.
    pub tc_retries: u64,
    /// Answers too long for a UDP client, sent to it truncated.
    pub truncated_for_udp: u64,
}

/// How a client asked: over UDP (with its answer size limit) or TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    Udp { limit: usize },
    Tcp,
}

impl Via {
    fn is_tcp(self) -> bool {
        self == Via::Tcp
    }
}

/// A client waiting for an answer: its address, query id and transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Waiter {
    addr: SocketAddr,
    id: u16,
    via: Via,
}

impl Waiter {
    fn same_client(&self, other: &Waiter) -> bool {
        self.addr == other.addr && self.id == other.id && self.via.is_tcp() == other.via.is_tcp()
    }
}

struct Pending {
    client: Waiter,
    /// Other clients asking the same question meanwhile: answered from the same
    /// upstream reply (dnsmasq 2.83's fix for DNSpooq, CVE-2020-25686: parallel
    /// identical queries each made an upstream query, and a forged answer had to
    /// match only one of them to be cached for all).
    also: Vec<Waiter>,
    /// Whether the query goes upstream over TCP.
    tcp: bool,
    query: Vec<u8>,
    question: Question,
    upstream_id: u16,
    port: u16,
    tried: Vec<SocketAddr>,
    current: SocketAddr,
    deadline: Millis,
}

/// The forwarder.
pub struct DnsForwarder {
    cfg: DnsConfig,
    domain: Option<Name>,
    cache: Cache,
    pending: Vec<Pending>,
    counters: DnsCounters,
}

fn name_rdata(name: &str) -> Option<Vec<u8>> {
    Name::from_dotted(name).map(|n| n.as_wire().to_vec())
}

impl DnsForwarder {
    /// A forwarder for `cfg` (upstreams beyond [`MAX_UPSTREAMS`] are ignored).
    pub fn new(mut cfg: DnsConfig) -> DnsForwarder {
        cfg.upstreams.truncate(MAX_UPSTREAMS);
        DnsForwarder {
            domain: Name::from_dotted(&cfg.domain).filter(|n| n.label_count() > 0),
            cache: Cache::new(cfg.cache),
            pending: Vec::new(),
            counters: DnsCounters::default(),
            cfg,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &DnsConfig {
        &self.cfg
    }

    /// The router's IPv6 address on the LAN (answered for its own name) is now
    /// `a` (`reload` of an `ip6assign`/`ip6hint` change).
    pub fn set_lan_addr6(&mut self, a: Option<Ipv6Addr>) {
        self.cfg.lan_addr6 = a;
    }

    /// The counters.
    pub fn counters(&self) -> &DnsCounters {
        &self.counters
    }

    /// Entries in the cache.
    pub fn cache_len(&self) -> usize {
        self.cache.len()
    }

    /// Queries waiting for upstream.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Replaces the upstream servers (e.g. a new WAN DHCP lease). The cache is
    /// kept, as dnsmasq does when it rereads `resolv.conf`; waiting queries go on
    /// with their current server and then try the new ones.
    pub fn set_upstreams(&mut self, servers: &[SocketAddr]) {
        self.cfg.upstreams = servers.iter().take(MAX_UPSTREAMS).copied().collect();
    }

    /// When [`Self::poll`] next has work, if ever.
    pub fn poll_at(&self) -> Option<Millis> {
        self.pending.iter().map(|p| p.deadline).min()
    }

    /// Handles a query from a LAN client (IPv4 or IPv6) received on UDP port 53.
    pub fn handle_query(
        &mut self,
        packet: &[u8],
        client: impl Into<SocketAddr>,
        now: Millis,
        rng: &mut dyn Rng,
        hosts: &dyn HostTable,
    ) -> Vec<DnsAction> {
        self.query(packet, client.into(), false, now, rng, hosts)
    }

    /// Handles a query (unframed) read from a LAN client's TCP connection to port
    /// 53; its answer is a [`DnsAction::ToTcpClient`].
    pub fn handle_tcp_query(
        &mut self,
        packet: &[u8],
        client: impl Into<SocketAddr>,
        now: Millis,
        rng: &mut dyn Rng,
        hosts: &dyn HostTable,
    ) -> Vec<DnsAction> {
        self.counters.tcp_queries += 1;
        self.query(packet, client.into(), true, now, rng, hosts)
    }

    /// Queries of the TCP client `client` waiting for upstream.
    pub fn tcp_waiting(&self, client: impl Into<SocketAddr>) -> usize {
        let client = client.into();
        self.pending
            .iter()
            .flat_map(|p| core::iter::once(&p.client).chain(p.also.iter()))
            .filter(|w| w.via.is_tcp() && w.addr == client)
            .count()
    }

    fn query(
        &mut self,
        packet: &[u8],
        client: SocketAddr,
        tcp: bool,
        now: Millis,
        rng: &mut dyn Rng,
        hosts: &dyn HostTable,
    ) -> Vec<DnsAction> {
        let Ok(msg) = Message::parse(packet) else {
            self.counters.dropped_malformed += 1;
            return Vec::new();
        };
        if msg.header.is_response() {
            self.counters.dropped_malformed += 1;
            return Vec::new();
        }
        let client = Waiter {
            addr: client,
            id: msg.header.id,
            via: if tcp {
                Via::Tcp
            } else {
                Via::Udp {
                    limit: msg.udp_limit(),
                }
            },
        };
        if msg.header.opcode() != 0 {
            self.counters.queries += 1;
            self.counters.local_answers += 1;
            return self.reply_local(packet, &msg, client, rcode::NOTIMP, &[]);
        }
        let Some(q) = msg.question().cloned() else {
            self.counters.dropped_malformed += 1;
            return Vec::new();
        };
        self.counters.queries += 1;
        if let Some((rc, answers)) = self.local_answer(&q, now, hosts) {
            self.counters.local_answers += 1;
            return self.reply_local(packet, &msg, client, rc, &answers);
        }
        if let Some(mut hit) = self.cache.lookup(&q, now) {
            if !msg.records.iter().any(|r| r.rtype == rtype::OPT) {
                strip_final_opt(&mut hit);
            }
            if tcp || hit.len() <= msg.udp_limit() {
                self.counters.cache_hits += 1;
                set_id(&mut hit, msg.header.id);
                // Give the client its own spelling of the name back (0x20 case).
                if let (Some(src), Some(dst)) = (
                    packet.get(super::message::HEADER_LEN..msg.question_end),
                    hit.get_mut(super::message::HEADER_LEN..msg.question_end),
                ) {
                    dst.copy_from_slice(src);
                }
                return alloc::vec![to_client(client, hit)];
            }
        }
        self.forward(packet, &msg, q, client, now, rng)
    }

    fn reply_local(
        &self,
        packet: &[u8],
        msg: &Message,
        client: Waiter,
        rc: u8,
        answers: &[Answer],
    ) -> Vec<DnsAction> {
        alloc::vec![to_client(
            client,
            build_response(packet, msg, rc, true, answers)
        )]
    }

    fn is_router_name(&self, label: &str) -> bool {
        label.eq_ignore_ascii_case(&self.cfg.hostname)
            || self
                .cfg
                .router_aliases
                .iter()
                .any(|a| a.eq_ignore_ascii_case(label))
    }

    fn in_lan(&self, a: Ipv4Addr) -> bool {
        let m = u32::from(self.cfg.lan_netmask);
        u32::from(a) & m == u32::from(self.cfg.lan_addr) & m
    }

    /// The local answer for `q`, if it is one of ours: (rcode, answers).
    fn local_answer(
        &self,
        q: &Question,
        now: Millis,
        hosts: &dyn HostTable,
    ) -> Option<(u8, Vec<Answer>)> {
        let ttl = self.cfg.local_ttl_secs;
        let a = |ip: Ipv4Addr| Answer {
            rtype: rtype::A,
            ttl,
            rdata: ip.octets().to_vec(),
        };
        let labels: Vec<&[u8]> = q.name.labels().collect();
        let under_domain = self.domain.as_ref().is_some_and(|d| q.name.is_under(d));
        // The host part: `name` alone or `name.<domain>`.
        let host = match (labels.as_slice(), under_domain) {
            ([one], _) => core::str::from_utf8(one).ok(),
            ([one, ..], true)
                if self
                    .domain
                    .as_ref()
                    .is_some_and(|d| labels.len() == d.label_count() + 1) =>
            {
                core::str::from_utf8(one).ok()
            }
            _ => None,
        };
        let is_in = q.qclass == CLASS_IN || q.qclass == rtype::ANY;
        let wants = |t: u16| is_in && (q.qtype == t || q.qtype == rtype::ANY);
        if labels
            .first()
            .is_some_and(|l| l.eq_ignore_ascii_case(b"localhost"))
            && labels.len() == 1
        {
            let mut ans = Vec::new();
            if wants(rtype::A) {
                ans.push(a(Ipv4Addr::LOCALHOST));
            }
            if wants(rtype::AAAA) {
                ans.push(Answer {
                    rtype: rtype::AAAA,
                    ttl,
                    rdata: Ipv6Addr::LOCALHOST.octets().to_vec(),
                });
            }
            return Some((rcode::NOERROR, ans));
        }
        if let Some(h) = host {
            let (addr, addr6) = if self.is_router_name(h) {
                (Some(self.cfg.lan_addr), self.cfg.lan_addr6)
            } else {
                (hosts.address_of(h, now), hosts.address6_of(h, now))
            };
            if addr.is_some() || addr6.is_some() {
                // A known name: its A (DHCPv4 lease) and AAAA (DHCPv6 lease)
                // answered; a type it has no record of is NODATA (NOERROR, no
                // answer), as dnsmasq answers, never NXDOMAIN: that would tell a
                // host asking A and AAAA at once that the name does not exist at all.
                let mut ans = Vec::new();
                if let Some(ip) = addr.filter(|_| wants(rtype::A)) {
                    ans.push(a(ip));
                }
                if let Some(ip6) = addr6.filter(|_| wants(rtype::AAAA)) {
                    ans.push(Answer {
                        rtype: rtype::AAAA,
                        ttl,
                        rdata: ip6.octets().to_vec(),
                    });
                }
                return Some((rcode::NOERROR, ans));
            }
        }
        if let Some(ip) = reverse_v4(&q.name) {
            let name = if ip == self.cfg.lan_addr {
                Some(self.fqdn(&self.cfg.hostname))
            } else if ip.is_loopback() {
                Some(String::from("localhost"))
            } else if self.in_lan(ip) {
                hosts.name_of(ip, now).map(|n| self.fqdn(n))
            } else {
                None
            };
            if let Some(n) = name {
                return Some((rcode::NOERROR, ptr_answer(&n, wants(rtype::PTR), ttl)));
            }
            if self.cfg.bogus_priv && is_bogus_reverse(ip) {
                return Some((rcode::NXDOMAIN, Vec::new()));
            }
        }
        if let Some(ip) = reverse_v6(&q.name) {
            let name = if Some(ip) == self.cfg.lan_addr6 {
                Some(self.fqdn(&self.cfg.hostname))
            } else if ip.is_loopback() {
                Some(String::from("localhost"))
            } else {
                hosts.name6_of(ip, now).map(|n| self.fqdn(n))
            };
            if let Some(n) = name {
                return Some((rcode::NOERROR, ptr_answer(&n, wants(rtype::PTR), ttl)));
            }
            // boguspriv covers IPv6's private ranges too (RFC 6303: ULA,
            // link-local, unspecified): the LAN's addresses are not asked upstream.
            if self.cfg.bogus_priv && is_private_v6(ip) {
                return Some((rcode::NXDOMAIN, Vec::new()));
            }
        }
        if self.cfg.local_domain_only && under_domain {
            return Some((rcode::NXDOMAIN, Vec::new()));
        }
        // dnsmasq `domain-needed`: simple names are not forwarded (`check_for_bogus`
        // in forward.c answers NXDOMAIN); the root name and NS queries still are.
        if self.cfg.domain_needed && labels.len() == 1 && q.qtype != rtype::NS {
            return Some((rcode::NXDOMAIN, Vec::new()));
        }
        None
    }

    fn fqdn(&self, host: &str) -> String {
        let mut s = String::from(host);
        if !self.cfg.domain.is_empty() {
            s.push('.');
            s.push_str(&self.cfg.domain);
        }
        s
    }

    fn forward(
        &mut self,
        packet: &[u8],
        msg: &Message,
        q: Question,
        client: Waiter,
        now: Millis,
        rng: &mut dyn Rng,
    ) -> Vec<DnsAction> {
        // A client retransmission while we wait: send it again, same id and port.
        if let Some(p) = self
            .pending
            .iter()
            .find(|p| p.client.same_client(&client) && p.question == q)
        {
            self.counters.forwarded += 1;
            if p.tcp {
                self.counters.tcp_forwarded += 1;
            }
            let mut out = p.query.clone();
            set_id(&mut out, p.upstream_id);
            return alloc::vec![to_upstream(p.tcp, p.current, p.port, out)];
        }
        // The same question already on its way upstream (with the same RD and CD
        // bits): this client waits for that answer too.
        let bits = |p: &[u8]| (p.get(2).map(|b| b & 0x01), p.get(3).map(|b| b & 0x10));
        if let Some(p) = self
            .pending
            .iter_mut()
            .find(|p| p.question == q && bits(&p.query) == bits(packet))
        {
            if !p.also.iter().any(|w| w.same_client(&client)) {
                if p.also.len() >= MERGE_MAX {
                    self.counters.dropped_pending_full += 1;
                    return Vec::new();
                }
                p.also.push(client);
                self.counters.merged += 1;
            }
            return Vec::new();
        }
        let Some(&server) = self.cfg.upstreams.first() else {
            self.counters.local_answers += 1;
            return self.reply_local(packet, msg, client, rcode::SERVFAIL, &[]);
        };
        if self.pending.len() >= self.cfg.max_pending {
            self.counters.dropped_pending_full += 1;
            return Vec::new();
        }
        let Some(port) = self.free_port(rng) else {
            self.counters.dropped_no_port += 1;
            return Vec::new();
        };
        let upstream_id = (rng.next_u32() >> 16) as u16;
        let mut out = packet.to_vec();
        set_id(&mut out, upstream_id);
        let tcp = client.via.is_tcp();
        self.pending.push(Pending {
            client,
            also: Vec::new(),
            tcp,
            query: packet.to_vec(),
            question: q,
            upstream_id,
            port,
            tried: alloc::vec![server],
            current: server,
            deadline: now.saturating_add(self.cfg.upstream_timeout_ms),
        });
        self.counters.forwarded += 1;
        if tcp {
            self.counters.tcp_forwarded += 1;
        }
        alloc::vec![to_upstream(tcp, server, port, out)]
    }

    fn free_port(&self, rng: &mut dyn Rng) -> Option<u16> {
        let span = u32::from(PORT_RANGE.end() - PORT_RANGE.start()) + 1;
        // A bounded number of draws: with at most `max_pending` ports in use out
        // of 16384, a free one is found almost always on the first try.
        (0..16).find_map(|_| {
            let port =
                u16::try_from(u32::from(*PORT_RANGE.start()) + rng.next_u32() % span).ok()?;
            (!self.pending.iter().any(|p| p.port == port)).then_some(port)
        })
    }

    fn next_server(&self, p: &Pending) -> Option<SocketAddr> {
        self.cfg
            .upstreams
            .iter()
            .copied()
            .find(|s| !p.tried.contains(s))
    }

    /// Handles a UDP reply from `from` received on local port `local_port`.
    pub fn handle_upstream(
        &mut self,
        packet: &[u8],
        from: impl Into<SocketAddr>,
        local_port: u16,
        now: Millis,
    ) -> Vec<DnsAction> {
        self.upstream_reply(packet, from.into(), local_port, false, now)
    }

    /// Handles a reply (unframed) read from the TCP connection from local port
    /// `local_port` to `from` (opened for a [`DnsAction::ToUpstreamTcp`]).
    pub fn handle_upstream_tcp(
        &mut self,
        packet: &[u8],
        from: impl Into<SocketAddr>,
        local_port: u16,
        now: Millis,
    ) -> Vec<DnsAction> {
        self.upstream_reply(packet, from.into(), local_port, true, now)
    }

    fn upstream_reply(
        &mut self,
        packet: &[u8],
        from: SocketAddr,
        local_port: u16,
        tcp: bool,
        now: Millis,
    ) -> Vec<DnsAction> {
        let (msg, whole) = match Message::parse(packet) {
            Ok(m) => (m, true),
            // Too many records to keep: the header and question are enough to match
            // and relay it (uncached).
            Err(MessageError::TooComplex) => match Message::parse_head(packet) {
                Ok(m) => (m, false),
                Err(_) => {
                    self.counters.dropped_malformed_upstream += 1;
                    return Vec::new();
                }
            },
            Err(_) => {
                self.counters.dropped_malformed_upstream += 1;
                return Vec::new();
            }
        };
        let found = self.pending.iter().position(|p| {
            p.port == local_port
                && p.tcp == tcp
                && p.upstream_id == msg.header.id
                && p.tried.contains(&from)
                && msg.question() == Some(&p.question)
        });
        let Some(i) = found.filter(|_| msg.header.is_response()) else {
            self.counters.dropped_no_pending_match += 1;
            return Vec::new();
        };
        if !tcp && msg.header.flags & flag::TC != 0 {
            // Truncated: the same server again over TCP (dnsmasq 2.87+).
            return self.retry_over_tcp(i, from, now).unwrap_or_default();
        }
        let rc = msg.header.rcode();
        if rc == rcode::SERVFAIL || rc == rcode::REFUSED {
            if let Some(retry) = self.retry(i, now) {
                return retry;
            }
        }
        let p = self.pending.swap_remove(i);
        let mut actions = Vec::new();
        if self.is_rebind(packet, &msg, &p.question) {
            self.counters.dropped_rebind += 1;
            // dnsmasq strips the addresses: the client gets an empty answer.
            if let Ok(q) = Message::parse(&p.query) {
                let empty = build_response(&p.query, &q, rcode::NOERROR, false, &[]);
                self.answer_every_client(&p, &empty, &mut actions);
            }
        } else {
            if whole {
                self.cache.insert(packet, &msg, now);
            } else {
                self.counters.uncached_large += 1;
            }
            self.counters.replies += 1 + p.also.len() as u64;
            self.answer_every_client(&p, packet, &mut actions);
        }
        actions.push(DnsAction::ClosePort(p.port));
        actions
    }

    /// Resends pending query `i` to the next untried server; `None` if none is left.
    fn retry(&mut self, i: usize, now: Millis) -> Option<Vec<DnsAction>> {
        let next = self.next_server(self.pending.get(i)?)?;
        let timeout = self.cfg.upstream_timeout_ms;
        let p = self.pending.get_mut(i)?;
        p.tried.push(next);
        p.current = next;
        p.deadline = now.saturating_add(timeout);
        let mut out = p.query.clone();
        set_id(&mut out, p.upstream_id);
        let (port, tcp) = (p.port, p.tcp);
        self.counters.forwarded += 1;
        if tcp {
            self.counters.tcp_forwarded += 1;
        }
        Some(alloc::vec![to_upstream(tcp, next, port, out)])
    }

    /// Asks pending query `i` again of `server` over TCP (its UDP answer was
    /// truncated).
    fn retry_over_tcp(
        &mut self,
        i: usize,
        server: SocketAddr,
        now: Millis,
    ) -> Option<Vec<DnsAction>> {
        let timeout = self.cfg.upstream_timeout_ms;
        let p = self.pending.get_mut(i)?;
        p.tcp = true;
        p.current = server;
        p.deadline = now.saturating_add(timeout);
        let mut out = p.query.clone();
        set_id(&mut out, p.upstream_id);
        let port = p.port;
        self.counters.forwarded += 1;
        self.counters.tcp_forwarded += 1;
        self.counters.tc_retries += 1;
        Some(alloc::vec![to_upstream(true, server, port, out)])
    }

    /// `answer` to the client of `p` and to every client waiting with it, each with
    /// its own query id. An answer that came over TCP and is longer than a UDP
    /// client's limit reaches it truncated (one that came over UDP was sized by the
    /// server for the client's own query and options, and is relayed as it is).
    fn answer_every_client(&mut self, p: &Pending, answer: &[u8], actions: &mut Vec<DnsAction>) {
        for w in core::iter::once(p.client).chain(p.also.iter().copied()) {
            let mut out = match w.via {
                Via::Udp { limit } if p.tcp && answer.len() > limit => {
                    let Some(t) = truncated(answer) else {
                        continue;
                    };
                    self.counters.truncated_for_udp += 1;
                    t
                }
                _ => answer.to_vec(),
            };
            set_id(&mut out, w.id);
            actions.push(to_client(w, out));
        }
    }

    /// Whether an upstream answer points a public name at a private address.
    fn is_rebind(&self, packet: &[u8], msg: &Message, q: &Question) -> bool {
        if !self.cfg.rebind_protection {
            return false;
        }
        if self
            .cfg
            .rebind_allow
            .iter()
            .filter_map(|d| Name::from_dotted(d))
            .any(|d| q.name.is_under(&d))
        {
            return false;
        }
        // Every record, also those of a reply too large for `msg.records`; a record
        // that cannot be read counts as rebinding (the reply was checked whole
        // when it was parsed, so this does not happen).
        msg.record_refs(packet).any(|r| {
            let Ok(r) = r else {
                return true;
            };
            if r.section != Section::Answer {
                return false;
            }
            match (r.rtype, packet.get(r.rdata.clone())) {
                (rtype::A, Some(b)) => <[u8; 4]>::try_from(b).is_ok_and(|o| {
                    let a = Ipv4Addr::from(o);
                    is_private_v4(a) && !(self.cfg.rebind_localhost && a.is_loopback())
                }),
                (rtype::AAAA, Some(b)) => <[u8; 16]>::try_from(b).is_ok_and(|o| {
                    let a = Ipv6Addr::from(o);
                    is_private_v6(a) && !(self.cfg.rebind_localhost && a.is_loopback())
                }),
                _ => false,
            }
        })
    }

    /// Retries or fails the queries whose server did not answer in time.
    pub fn poll(&mut self, now: Millis) -> Vec<DnsAction> {
        let mut actions = Vec::new();
        loop {
            let mut a = self.poll_one(now);
            if a.is_empty() {
                return actions;
            }
            actions.append(&mut a);
        }
    }

    /// [`Self::poll`] one query at a time: retries or fails the first query whose
    /// server did not answer in time and returns what to send for it; empty when no
    /// query is due. A caller that carries out each batch before asking for the
    /// next holds one query's packets at a time, not every due query's.
    pub fn poll_one(&mut self, now: Millis) -> Vec<DnsAction> {
        let Some(i) = self.pending.iter().position(|p| p.deadline <= now) else {
            return Vec::new();
        };
        if let Some(a) = self.retry(i, now) {
            return a;
        }
        let p = self.pending.swap_remove(i);
        self.counters.timeouts += 1;
        let mut actions = Vec::new();
        if let Ok(q) = Message::parse(&p.query) {
            let fail = build_response(&p.query, &q, rcode::SERVFAIL, false, &[]);
            self.answer_every_client(&p, &fail, &mut actions);
        }
        actions.push(DnsAction::ClosePort(p.port));
        actions
    }
}

/// Most clients waiting on one upstream query besides the first.
const MERGE_MAX: usize = 16;

/// `packet` to `w` over its transport.
fn to_client(w: Waiter, packet: Vec<u8>) -> DnsAction {
    match w.via {
        Via::Tcp => DnsAction::ToTcpClient {
            client: w.addr,
            packet,
        },
        Via::Udp { .. } => DnsAction::ToClient {
            client: w.addr,
            packet,
        },
    }
}

/// `packet` to `upstream` from `source_port` over TCP or UDP.
fn to_upstream(tcp: bool, upstream: SocketAddr, source_port: u16, packet: Vec<u8>) -> DnsAction {
    if tcp {
        DnsAction::ToUpstreamTcp {
            upstream,
            source_port,
            packet,
        }
    } else {
        DnsAction::ToUpstream {
            upstream,
            source_port,
            packet,
        }
    }
}

/// `answer` cut to its header and question with TC set (RFC 2181 §9: a client
/// that sees TC asks again over TCP); `None` if it has no readable question.
fn truncated(answer: &[u8]) -> Option<Vec<u8>> {
    let m = Message::parse_head(answer).ok()?;
    let mut out = answer.get(..m.question_end)?.to_vec();
    if let Some(b) = out.get_mut(2) {
        *b |= (flag::TC >> 8) as u8;
    }
    if let Some(counts) = out.get_mut(6..super::message::HEADER_LEN) {
        counts.fill(0);
    }
    Some(out)
}

/// Whether `packet` is a reply whose TC bit is set (the client will retry over TCP).
pub fn is_truncated(packet: &[u8]) -> bool {
    super::message::Header::parse(packet).is_ok_and(|h| h.flags & flag::TC != 0)
}

/// The answer to a reverse query for a name we know: its PTR record when the
/// question asks for one (else none: NOERROR, no data).
fn ptr_answer(name: &str, wanted: bool, ttl: u32) -> Vec<Answer> {
    match (wanted, name_rdata(name)) {
        (true, Some(rdata)) => alloc::vec![Answer {
            rtype: rtype::PTR,
            ttl,
            rdata,
        }],
        _ => Vec::new(),
    }
}
