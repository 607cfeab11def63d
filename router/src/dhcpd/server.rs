//! The DHCPv4 server state machine: one pool, sans-I/O, behaving like dnsmasq.
//!
//! RFC 2131 §4.3 (server behaviour: DISCOVER §4.3.1, REQUEST in the SELECTING,
//! INIT-REBOOT, RENEWING and REBINDING states §4.3.2, DECLINE §4.3.3, RELEASE
//! §4.3.4, INFORM §4.3.5), §4.1 (where a reply is sent), RFC 2132 (options), and
//! dnsmasq's `src/rfc2131.c` for the choices the RFC leaves open: the address of a
//! new client is a hash of its hardware address probed linearly through the pool
//! (`address_allocate` in `src/dhcp.c`), T1/T2 are 50 % / 87.5 % of the lease, an
//! authoritative server NAKs unknown addresses instead of staying silent.
//!
//! The kernel hands [`DhcpServer::handle`] each UDP payload received on port 67 of
//! the LAN interface and sends the returned [`Reply`] as told by its [`ReplyTo`].
//! It never reads a clock: `now` is the caller's monotonic time.

use super::config::PoolConfig;
use super::lease::{
    NamedLease,
    address_named, name_at, sanitize_hostname, Lease, LeaseLine, LeaseTable, LoadReport,
};
use super::message::{build_reply, HwAddr, MessageType, Request};
use super::options::{code, OptionWriter};
use crate::Millis;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::Ipv4Addr;

/// Shortest lease granted when a client asks for a shorter one (dnsmasq: 120 s).
pub const MIN_LEASE_SECS: u32 = 120;

/// Where to send a reply (RFC 2131 §4.1), always to UDP port 68.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyTo {
    /// IP 255.255.255.255, Ethernet broadcast.
    Broadcast,
    /// To `ip` at Ethernet address `mac` without ARP: the client has no address
    /// yet and cannot answer ARP (the kernel adds a neighbour entry or builds the
    /// frame itself; if it cannot, broadcasting is always correct).
    UnicastNoArp {
        /// The address being given (yiaddr).
        ip: Ipv4Addr,
        /// The client's hardware address.
        mac: [u8; 6],
    },
    /// To the client's configured address (ciaddr) by ordinary routing and ARP.
    Unicast(Ipv4Addr),
}

/// A reply to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The UDP payload.
    pub packet: Vec<u8>,
    /// Where it goes.
    pub to: ReplyTo,
    /// Its DHCP message type.
    pub kind: MessageType,
}

/// Counters, `dhcp` section of the router's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DhcpCounters {
    /// DHCPDISCOVER received.
    pub discover: u64,
    /// DHCPREQUEST received.
    pub request: u64,
    /// DHCPDECLINE received.
    pub decline: u64,
    /// DHCPRELEASE received.
    pub release: u64,
    /// DHCPINFORM received.
    pub inform: u64,
    /// DHCPOFFER sent.
    pub offer: u64,
    /// DHCPACK sent.
    pub ack: u64,
    /// DHCPNAK sent.
    pub nak: u64,
    /// Dropped: not a readable BOOTREQUEST (short, bad cookie, bad options).
    pub dropped_malformed: u64,
    /// Dropped: relayed (giaddr set); this server serves its own link only.
    pub dropped_relayed: u64,
    /// Dropped: a server's message type (OFFER, ACK, NAK) sent to us.
    pub dropped_wrong_type: u64,
    /// Dropped (also counted under its type): a REQUEST with neither requested
    /// address nor ciaddr, a DECLINE without an address, an INFORM from outside
    /// the subnet.
    pub dropped_invalid: u64,
    /// Ignored: the client chose another server, or we have no record of it
    /// and are not authoritative, or the pool is disabled.
    pub ignored: u64,
    /// No free address (or the lease table was full).
    pub pool_exhausted: u64,
}

/// The DHCP server for one pool.
#[derive(Clone, Debug)]
pub struct DhcpServer {
    cfg: PoolConfig,
    leases: LeaseTable,
    counters: DhcpCounters,
}

/// dnsmasq's hash of the hardware address (`address_allocate`, `src/dhcp.c`):
/// `j = byte + (j << 6) + (j << 16) - j` over the bytes, in 32-bit arithmetic.
pub fn hw_hash(hw: &[u8]) -> u32 {
    hw.iter().fold(0u32, |j, &b| {
        u32::from(b)
            .wrapping_add(j << 6)
            .wrapping_add(j << 16)
            .wrapping_sub(j)
    })
}

impl DhcpServer {
    /// A server for `cfg` with an empty lease table sized to the pool plus the
    /// static hosts, at most [`PoolConfig::max_leases`].
    pub fn new(cfg: PoolConfig) -> DhcpServer {
        let cap = usize::try_from(cfg.pool_size())
            .unwrap_or(usize::MAX)
            .saturating_add(cfg.hosts.len())
            .min(cfg.max_leases);
        DhcpServer {
            leases: LeaseTable::new(cap),
            cfg,
            counters: DhcpCounters::default(),
        }
    }

    /// The pool's configuration.
    pub fn config(&self) -> &PoolConfig {
        &self.cfg
    }

    /// The counters.
    pub fn counters(&self) -> &DhcpCounters {
        &self.counters
    }

    /// Unexpired leases (the `leases` listing).
    pub fn leases(&self, now: Millis) -> impl Iterator<Item = &Lease> {
        self.leases.iter().filter(move |l| l.is_active(now))
    }

    /// The lease file text (dnsmasq format); see [`super::lease`].
    pub fn lease_file(&self, now: Millis, epoch_offset_secs: u64) -> String {
        self.leases.to_text(now, epoch_offset_secs)
    }

    /// Writes the lease file text to `out`, line by line; stops at the first
    /// error `out` gives (e.g. a [`super::lease::BoundedText`] that is full).
    pub fn write_lease_file(
        &self,
        out: &mut dyn core::fmt::Write,
        now: Millis,
        epoch_offset_secs: u64,
    ) -> core::fmt::Result {
        self.leases.write_text(out, now, epoch_offset_secs)
    }

    /// Loads leases from a lease file written by [`Self::lease_file`] (or by
    /// dnsmasq). Lines that do not parse, lie outside the subnet, collide with
    /// another lease or do not fit are skipped and counted as corrupt; ended
    /// leases are skipped and counted as expired.
    pub fn load_lease_file(
        &mut self,
        text: &str,
        now: Millis,
        epoch_offset_secs: u64,
    ) -> LoadReport {
        let parse = |s: &str| LeaseLine::parse(s).map(|l| (l.expiry_epoch, l));
        LoadReport::load(text.lines(), now, epoch_offset_secs, parse, |l, expires| {
            let cid = l.client_id.as_deref();
            if !self.cfg.in_subnet(l.ip)
                || l.ip == self.cfg.server
                || self.leases.find_ip(l.ip, now).is_some()
                || self.leases.find_client(&l.hw, cid).is_some()
            {
                return false;
            }
            self.leases.upsert(l.into_lease(expires), now)
        })
    }

    /// The address of the client that gave host name `name` (case-insensitive),
    /// if its lease is bound and active.
    pub fn address_of(&self, name: &str, now: Millis) -> Option<Ipv4Addr> {
        address_named(self.leases(now), name)
    }

    /// The host name of the client holding `ip`, if any.
    pub fn name_of(&self, ip: Ipv4Addr, now: Millis) -> Option<&str> {
        name_at(self.leases(now), ip)
    }

    /// Handles one packet received on port 67; returns the reply to send, if any.
    pub fn handle(&mut self, packet: &[u8], now: Millis) -> Option<Reply> {
        let req = match Request::parse(packet) {
            Ok(r) => r,
            Err(_) => {
                self.counters.dropped_malformed += 1;
                return None;
            }
        };
        if self.cfg.ignore {
            self.counters.ignored += 1;
            return None;
        }
        if !req.giaddr.is_unspecified() {
            self.counters.dropped_relayed += 1;
            return None;
        }
        self.leases.expire(now);
        match req.kind {
            MessageType::Discover => {
                self.counters.discover += 1;
                self.discover(&req, now)
            }
            MessageType::Request => {
                self.counters.request += 1;
                self.request(&req, now)
            }
            MessageType::Decline => {
                self.counters.decline += 1;
                self.decline(&req, now);
                None
            }
            MessageType::Release => {
                self.counters.release += 1;
                self.release(&req);
                None
            }
            MessageType::Inform => {
                self.counters.inform += 1;
                self.inform(&req)
            }
            MessageType::Offer | MessageType::Ack | MessageType::Nak => {
                self.counters.dropped_wrong_type += 1;
                None
            }
        }
    }

    fn static_for(&self, hw: &HwAddr) -> Option<&super::config::StaticHost> {
        let mac = hw.as_ethernet()?;
        self.cfg.hosts.iter().find(|h| h.mac == mac)
    }

    fn in_range(&self, ip: Ipv4Addr) -> bool {
        self.cfg
            .range()
            .is_some_and(|(a, b)| (a..=b).contains(&u32::from(ip)))
    }

    /// Whether the client (`hw`, `cid`) may hold `ip` now.
    fn acceptable(&self, ip: Ipv4Addr, hw: &HwAddr, cid: Option<&[u8]>, now: Millis) -> bool {
        if !self.cfg.in_subnet(ip) || ip == self.cfg.server || self.leases.is_declined(ip, now) {
            return false;
        }
        if self
            .leases
            .find_ip(ip, now)
            .is_some_and(|l| !l.is_for(hw, cid))
        {
            return false;
        }
        match self.static_for(hw) {
            Some(h) => h.ip == ip,
            None => self.in_range(ip) && !self.cfg.hosts.iter().any(|h| h.ip == ip),
        }
    }

    fn pick_address(&self, req: &Request, now: Millis) -> Option<Ipv4Addr> {
        let cid = req.client_id();
        if let Some(h) = self.static_for(&req.chaddr) {
            return self.acceptable(h.ip, &req.chaddr, cid, now).then_some(h.ip);
        }
        if let Some(l) = self.leases.find_client(&req.chaddr, cid) {
            if self.acceptable(l.ip, &req.chaddr, cid, now) {
                return Some(l.ip);
            }
        }
        if let Some(ip) = req.requested_ip() {
            if self.acceptable(ip, &req.chaddr, cid, now) {
                return Some(ip);
            }
        }
        let (first, last) = self.cfg.range()?;
        let size = last - first + 1;
        let start = hw_hash(req.chaddr.as_bytes()) % size;
        (0..size)
            .map(|i| Ipv4Addr::from(first + (start + i) % size))
            .find(|ip| self.acceptable(*ip, &req.chaddr, cid, now))
    }

    fn lease_secs(&self, req: &Request) -> u32 {
        let wanted = req
            .options
            .get(code::LEASE_TIME)
            .and_then(|v| <[u8; 4]>::try_from(v).ok())
            .map(u32::from_be_bytes);
        match wanted {
            Some(w) if w < self.cfg.lease_secs => w.max(MIN_LEASE_SECS).min(self.cfg.lease_secs),
            _ => self.cfg.lease_secs,
        }
    }

    fn discover(&mut self, req: &Request, now: Millis) -> Option<Reply> {
        let Some(ip) = self.pick_address(req, now) else {
            self.counters.pool_exhausted += 1;
            return None;
        };
        // Nothing is reserved at DISCOVER (dnsmasq's way): the address is picked
        // from the client's hardware address, so the same client is offered the
        // same one again, and it is checked once more at its REQUEST. Holding
        // offers let a flood of DISCOVERs from made-up MACs empty the pool for a
        // minute.
        if !self.leases.has_room(&req.chaddr, req.client_id(), now) {
            self.counters.pool_exhausted += 1;
            return None;
        }
        self.counters.offer += 1;
        let secs = self.lease_secs(req);
        Some(self.reply(req, MessageType::Offer, ip, Some(secs)))
    }

    fn hostname_for(&self, req: &Request, previous: Option<&str>) -> Option<String> {
        if let Some(name) = self.static_for(&req.chaddr).and_then(|h| h.name.clone()) {
            return Some(name);
        }
        // A client's own name never takes a configured host's (dnsmasq: "not giving
        // name X to the DHCP lease of Y because the name exists with address Z"):
        // a laptop calling itself `nas` would take `nas.lan` from the NAS.
        let taken = |n: &str| {
            self.cfg
                .hosts
                .iter()
                .filter_map(|h| h.name.as_deref())
                .any(|h| h.eq_ignore_ascii_case(n))
        };
        match req.options.get(code::HOST_NAME).and_then(sanitize_hostname) {
            Some(n) if taken(&n) => previous.filter(|p| !taken(p)).map(String::from),
            Some(n) => Some(n),
            None => previous.map(String::from),
        }
    }

    fn request(&mut self, req: &Request, now: Millis) -> Option<Reply> {
        let cid = req.client_id();
        let ours = self
            .leases
            .find_client(&req.chaddr, cid)
            .filter(|l| l.is_active(now))
            .cloned();
        if let Some(sid) = req.server_id() {
            // SELECTING (RFC 2131 §4.3.2).
            if sid != self.cfg.server {
                // The client took another server's offer (ours held nothing).
                self.counters.ignored += 1;
                return None;
            }
            let Some(ip) = req
                .requested_ip()
                .or(Some(req.ciaddr).filter(|a| !a.is_unspecified()))
            else {
                self.counters.dropped_invalid += 1;
                return None;
            };
            // What DISCOVER would offer this client now, or the address it holds.
            let offered = ours.as_ref().is_some_and(|l| l.ip == ip)
                || self.pick_address(req, now) == Some(ip);
            if offered && self.acceptable(ip, &req.chaddr, cid, now) {
                return self.ack(req, ip, ours.as_ref(), now);
            }
            return Some(self.nak(req, "address not available"));
        }
        // INIT-REBOOT has option 50 and no ciaddr; RENEWING/REBINDING have ciaddr.
        let (ip, is_renewing) = match (req.requested_ip(), req.ciaddr.is_unspecified()) {
            (Some(ip), true) => (ip, false),
            (_, false) => (req.ciaddr, true),
            (None, true) => {
                self.counters.dropped_invalid += 1;
                return None;
            }
        };
        if !self.cfg.in_subnet(ip) {
            return Some(self.nak(req, "wrong network"));
        }
        match &ours {
            Some(l) if l.ip == ip => {
                if self.acceptable(ip, &req.chaddr, cid, now) {
                    self.ack(req, ip, ours.as_ref(), now)
                } else {
                    Some(self.nak(req, "address not available"))
                }
            }
            Some(_) => Some(self.nak(req, "wrong address")),
            None => {
                if !self.cfg.authoritative {
                    // RFC 2131 §4.3.2: no record of the client, stay silent.
                    self.counters.ignored += 1;
                    return None;
                }
                if self.acceptable(ip, &req.chaddr, cid, now) {
                    self.ack(req, ip, None, now)
                } else if is_renewing
                    && self.leases.find_ip(ip, now).is_none()
                    && !self.in_range(ip)
                {
                    // A renewing client outside our dynamic range that nobody
                    // holds: dnsmasq NAKs it so the client restarts.
                    Some(self.nak(req, "address not available"))
                } else {
                    Some(self.nak(req, "address in use"))
                }
            }
        }
    }

    fn ack(
        &mut self,
        req: &Request,
        ip: Ipv4Addr,
        prev: Option<&Lease>,
        now: Millis,
    ) -> Option<Reply> {
        let secs = self.lease_secs(req);
        let hostname = self.hostname_for(req, prev.and_then(|l| l.hostname.as_deref()));
        let lease = Lease {
            hw: req.chaddr,
            client_id: req.client_id().map(<[u8]>::to_vec),
            ip,
            hostname,
            expires: Some(now.saturating_add(u64::from(secs) * 1000)),
        };
        if !self.leases.upsert(lease.clone(), now) {
            self.counters.pool_exhausted += 1;
            return None;
        }
        // A host name belongs to one lease: the newest one takes it (dnsmasq
        // `lease_set_hostname` drops it from the older lease).
        if let Some(name) = &lease.hostname {
            self.leases.clear_hostname(name, ip);
        }
        self.counters.ack += 1;
        Some(self.reply(req, MessageType::Ack, ip, Some(secs)))
    }

    fn decline(&mut self, req: &Request, now: Millis) {
        if req.server_id().is_some_and(|s| s != self.cfg.server) {
            self.counters.ignored += 1;
            return;
        }
        let cid = req.client_id();
        let Some(ip) = req.requested_ip() else {
            self.counters.dropped_invalid += 1;
            return;
        };
        // Only the client we gave the address to can decline it.
        if self
            .leases
            .find_client(&req.chaddr, cid)
            .is_some_and(|l| l.ip == ip)
        {
            self.leases.remove_client(&req.chaddr, cid);
            self.leases.decline(ip, now);
        } else {
            self.counters.ignored += 1;
        }
    }

    fn release(&mut self, req: &Request) {
        let cid = req.client_id();
        if req.server_id().is_some_and(|s| s != self.cfg.server) {
            self.counters.ignored += 1;
            return;
        }
        if self
            .leases
            .find_client(&req.chaddr, cid)
            .is_some_and(|l| l.ip == req.ciaddr)
        {
            self.leases.remove_client(&req.chaddr, cid);
        } else {
            self.counters.ignored += 1;
        }
    }

    fn inform(&mut self, req: &Request) -> Option<Reply> {
        if req.ciaddr.is_unspecified() || !self.cfg.in_subnet(req.ciaddr) {
            self.counters.dropped_invalid += 1;
            return None;
        }
        self.counters.ack += 1;
        Some(self.reply(req, MessageType::Ack, Ipv4Addr::UNSPECIFIED, None))
    }

    fn nak(&mut self, req: &Request, why: &str) -> Reply {
        self.counters.nak += 1;
        let mut w = OptionWriter::new(req.max_message_size() - 240);
        w.put(code::MESSAGE_TYPE, &[MessageType::Nak.to_u8()]);
        w.put(code::SERVER_ID, &self.cfg.server.octets());
        w.put(code::MESSAGE, why.as_bytes());
        if let Some(c) = req.client_id() {
            w.put(code::CLIENT_ID, c);
        }
        Reply {
            packet: build_reply(req, Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED, w),
            // RFC 2131 §4.1: without a relay, a NAK is broadcast.
            to: ReplyTo::Broadcast,
            kind: MessageType::Nak,
        }
    }

    /// The pool's options, code and value, built-ins replaced by `extra` entries.
    fn pool_options(&self) -> Vec<(u8, Vec<u8>)> {
        let addrs = |v: &Option<Vec<Ipv4Addr>>| -> Vec<u8> {
            match v {
                Some(list) => list.iter().flat_map(|a| a.octets()).collect(),
                None => self.cfg.server.octets().to_vec(),
            }
        };
        let mut out: Vec<(u8, Vec<u8>)> = alloc::vec![
            (code::SUBNET_MASK, self.cfg.netmask.octets().to_vec()),
            (code::ROUTER, addrs(&self.cfg.routers)),
            (code::DNS_SERVER, addrs(&self.cfg.dns)),
            (code::DOMAIN_NAME, self.cfg.domain.as_bytes().to_vec()),
            (code::BROADCAST, self.cfg.broadcast().octets().to_vec()),
        ];
        for e in &self.cfg.extra {
            match out.iter_mut().find(|(c, _)| *c == e.code) {
                Some(slot) => slot.1 = e.value.clone(),
                None => out.push((e.code, e.value.clone())),
            }
        }
        // Empty values for built-ins (e.g. `dhcp_option '3'`) mean "do not send".
        out.retain(|(c, v)| !v.is_empty() || *c > code::BROADCAST);
        out
    }

    fn reply(
        &self,
        req: &Request,
        kind: MessageType,
        yiaddr: Ipv4Addr,
        lease_secs: Option<u32>,
    ) -> Reply {
        let mut w = OptionWriter::new(req.max_message_size() - 240);
        w.put(code::MESSAGE_TYPE, &[kind.to_u8()]);
        w.put(code::SERVER_ID, &self.cfg.server.octets());
        if let Some(secs) = lease_secs {
            w.put(code::LEASE_TIME, &secs.to_be_bytes());
            w.put(code::RENEWAL_TIME, &(secs / 2).to_be_bytes());
            w.put(code::REBINDING_TIME, &(secs / 8 * 7).to_be_bytes());
        }
        let pool = self.pool_options();
        match req.options.get(code::PARAMETER_REQUEST_LIST) {
            Some(prl) => {
                // In the client's order (RFC 2132 §9.8), then the basics it forgot.
                for c in prl {
                    if let Some((_, v)) = pool.iter().find(|(k, _)| k == c) {
                        w.put(*c, v);
                    }
                }
                for (c, v) in pool
                    .iter()
                    .filter(|(c, _)| matches!(*c, code::SUBNET_MASK | code::ROUTER))
                {
                    if !w.has(*c) {
                        w.put(*c, v);
                    }
                }
            }
            None => {
                for (c, v) in &pool {
                    w.put(*c, v);
                }
            }
        }
        if let Some(c) = req.client_id() {
            // RFC 6842: echo the client identifier.
            w.put(code::CLIENT_ID, c);
        }
        let ciaddr = if kind == MessageType::Ack {
            req.ciaddr
        } else {
            Ipv4Addr::UNSPECIFIED
        };
        let to = if !req.ciaddr.is_unspecified() {
            ReplyTo::Unicast(req.ciaddr)
        } else if req.wants_broadcast() {
            ReplyTo::Broadcast
        } else {
            match req.chaddr.as_ethernet() {
                Some(mac) if !yiaddr.is_unspecified() => ReplyTo::UnicastNoArp { ip: yiaddr, mac },
                _ => ReplyTo::Broadcast,
            }
        };
        Reply {
            packet: build_reply(req, yiaddr, ciaddr, w),
            to,
            kind,
        }
    }
}
