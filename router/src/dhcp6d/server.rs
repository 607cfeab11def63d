//! The DHCPv6 server state machine (RFC 8415 §18.3), sans-I/O, as odhcpd's
//! `dhcpv6 'server'` behaves (`src/dhcpv6.c`, `src/dhcpv6-ia.c` of openwrt/odhcpd):
//!
//! - Solicit → Advertise (or Reply with Rapid Commit when the client asks and the
//!   configuration allows); nothing is reserved at Solicit, as the DHCPv4 server
//!   reserves nothing at DISCOVER: the address is derived from the client's DUID and
//!   IAID, so the same client is offered the same one again, and a flood of Solicits
//!   from made-up DUIDs leaves no state at all.
//! - Request → Reply: the lease is made (one address per IA_NA, keyed by DUID and
//!   IAID); Renew / Rebind → Reply extending it (Renew without a binding:
//!   NoBinding; Rebind without one: the address is given again if it is on the
//!   link and free, else returned with lifetimes 0); Release / Decline → Reply
//!   (a declined address stays out of the pool a while); Confirm → Reply Success
//!   or NotOnLink; Information-Request → Reply with DNS servers and search list.
//! - Addresses: odhcpd's host ids `0x100..2^hostid_len` in the interface's /64,
//!   probed from a hash of the DUID and IAID, never a router address or a reserved
//!   interface identifier.
//! - Request, Renew, Release and Decline sent unicast are answered UseMulticast
//!   (this server never sends Server Unicast).
//!
//! Every message is checked: a bad header, an option running past its parent, an
//! IA or IA Address shorter than its fixed part, a missing client id, a server id
//! where none may be, or another server's id, drop the message (counted); unknown
//! options are ignored. The lease table is bounded ([`Dhcp6Config::max_leases`]),
//! as are the IAs served per message and the leases per client.

use super::config::{Dhcp6Config, MAX_IAS_PER_MESSAGE, MAX_LEASES_PER_CLIENT};
use super::lease::{Lease6, LeaseLine6, LeaseTable6, MAX_DUID};
use super::message::{msg, reply_frame, Frame, Message, ALL_SERVERS};
use super::options::{code, put, status, status_data, Options};
use crate::dhcpd::lease::{address_named, name_at, sanitize_hostname, NamedLease};
use crate::dhcpd::LoadReport;
use crate::Millis;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::Ipv6Addr;

/// Counters of one server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dhcp6Counters {
    /// Solicit received.
    pub solicit: u64,
    /// Request received.
    pub request: u64,
    /// Confirm received.
    pub confirm: u64,
    /// Renew received.
    pub renew: u64,
    /// Rebind received.
    pub rebind: u64,
    /// Release received.
    pub release: u64,
    /// Decline received.
    pub decline: u64,
    /// Information-request received.
    pub information_request: u64,
    /// Advertise sent.
    pub advertise: u64,
    /// Reply sent.
    pub reply: u64,
    /// Leases made or extended (Reply with an address).
    pub bound: u64,
    /// Dropped: not a readable frame or message.
    pub dropped_malformed: u64,
    /// Dropped: a server's or relay's message type, or an unknown one.
    pub dropped_wrong_type: u64,
    /// Dropped: client id missing or too long, a server id where none may be, IA
    /// options in an Information-request.
    pub dropped_invalid: u64,
    /// Ignored: addressed to another server (its server id), or a frame to another
    /// host (its MAC or IPv6 destination: a bridge or a flooded frame).
    pub other_server: u64,
    /// IAs answered NoAddrsAvail (pool or table full, per-client bound).
    pub no_addrs: u64,
    /// IAs answered NoBinding.
    pub no_binding: u64,
    /// Confirm answered NotOnLink.
    pub not_on_link: u64,
    /// Unicast messages answered UseMulticast.
    pub use_multicast: u64,
}

/// One IA_NA of a client message.
struct Ia<'a> {
    iaid: u32,
    raw_iaid: &'a [u8],
    addrs: Vec<Ipv6Addr>,
}

/// The client message, checked.
struct Request<'a> {
    kind: u8,
    xid: [u8; 3],
    options: Options<'a>,
    client_id: Option<&'a [u8]>,
    ias: Vec<Ia<'a>>,
    /// IAID bytes of the IA_PD options (answered NoPrefixAvail).
    pds: Vec<&'a [u8]>,
    hostname: Option<String>,
}

/// The DHCPv6 server of one interface.
#[derive(Clone, Debug)]
pub struct Dhcp6Server {
    cfg: Dhcp6Config,
    duid: Vec<u8>,
    leases: LeaseTable6,
    counters: Dhcp6Counters,
}

/// FNV-1a over the DUID and IAID: where the probe for a new client starts.
fn start_hash(duid: &[u8], iaid: u32) -> u64 {
    duid.iter()
        .chain(iaid.to_be_bytes().iter())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// RFC 5453's reserved interface identifiers (odhcpd's `is_reserved_ipv6_iid`).
fn reserved_iid(iid: u64) -> bool {
    iid == 0
        || iid & 0xFFFF_FFFF_FF00_0000 == 0x0200_5EFF_FE00_0000
        || iid & 0xFFFF_FFFF_FFFF_FF80 == 0xFDFF_FFFF_FFFF_FF80
}

/// The MAC in a DUID-LLT (type 1) or DUID-LL (type 3) of Ethernet (type 1).
pub fn duid_mac(duid: &[u8]) -> Option<[u8; 6]> {
    let ll = match duid {
        [0, 1, 0, 1, _, _, _, _, rest @ ..] | [0, 3, 0, 1, rest @ ..] => rest,
        _ => return None,
    };
    <[u8; 6]>::try_from(ll).ok()
}

/// The host name in a Client FQDN option (RFC 4704): its first label, cleaned.
fn fqdn_hostname(data: &[u8]) -> Option<String> {
    let (&len, rest) = data.get(1..)?.split_first()?;
    let label = rest.get(..usize::from(len))?;
    if len == 0 || len > 63 {
        return None;
    }
    sanitize_hostname(label)
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .and_then(|x| <[u8; 4]>::try_from(x).ok())
        .map(u32::from_be_bytes)
}

impl Dhcp6Server {
    /// A server for `cfg` with no leases.
    pub fn new(cfg: Dhcp6Config) -> Dhcp6Server {
        Dhcp6Server {
            duid: cfg.duid(),
            leases: LeaseTable6::new(cfg.max_leases),
            cfg,
            counters: Dhcp6Counters::default(),
        }
    }

    /// Serves `cfg` from now on (`reload` of `/etc/config/dhcp`): the leases still
    /// in its prefix and pool are kept (with their lifetimes: a new `leasetime`
    /// applies at the client's next renewal), the others dropped (their clients
    /// get NoBinding at their next Renew, NotOnLink at a Confirm, and a new
    /// address); the counters stay. The number of leases dropped.
    pub fn reconfigure(&mut self, cfg: Dhcp6Config, now: Millis) -> usize {
        let fits = |l: &Lease6| cfg.host_id(l.addr).is_some() && !cfg.router_addrs.contains(&l.addr);
        let before = self.leases.iter().count();
        if cfg.max_leases == self.leases.capacity() {
            self.leases.retain(fits);
        } else {
            let mut t = LeaseTable6::new(cfg.max_leases);
            for l in self.leases.iter().filter(|l| fits(l) && l.is_active(now)) {
                t.upsert(l.clone(), now);
            }
            self.leases = t;
        }
        let dropped = before.saturating_sub(self.leases.iter().count());
        self.duid = cfg.duid();
        self.cfg = cfg;
        dropped
    }

    /// Its configuration.
    pub fn config(&self) -> &Dhcp6Config {
        &self.cfg
    }

    /// The server DUID.
    pub fn duid(&self) -> &[u8] {
        &self.duid
    }

    /// The counters.
    pub fn counters(&self) -> &Dhcp6Counters {
        &self.counters
    }

    /// The active leases.
    pub fn leases(&self, now: Millis) -> impl Iterator<Item = &Lease6> {
        self.leases.iter().filter(move |l| l.is_active(now))
    }

    /// The address of the client named `name` (case-insensitive), if bound.
    pub fn address_of(&self, name: &str, now: Millis) -> Option<Ipv6Addr> {
        address_named(self.leases(now), name)
    }

    /// The host name of the client holding `addr`.
    pub fn name_of(&self, addr: Ipv6Addr, now: Millis) -> Option<&str> {
        name_at(self.leases(now), addr)
    }

    /// The leases as dnsmasq's IPv6 lease lines (after `duid ...`).
    pub fn write_lease_file(
        &self,
        out: &mut dyn core::fmt::Write,
        now: Millis,
        epoch_offset_secs: u64,
    ) -> core::fmt::Result {
        self.leases
            .write_text(out, &self.duid, now, epoch_offset_secs)
    }

    /// Loads IPv6 lease lines (the `duid` line and anything else that does not
    /// parse are counted corrupt; a line outside the prefix, on a router address,
    /// or colliding with a lease already loaded too; an ended lease expired).
    pub fn load_lease_lines<'a>(
        &mut self,
        lines: impl Iterator<Item = &'a str>,
        now: Millis,
        epoch_offset_secs: u64,
    ) -> LoadReport {
        let parse = |s: &str| LeaseLine6::parse(s).map(|l| (l.expiry_epoch, l));
        LoadReport::load(lines, now, epoch_offset_secs, parse, |l, expires| {
            if self.cfg.host_id(l.addr).is_none()
                || self.cfg.router_addrs.contains(&l.addr)
                || self.leases.find_addr(l.addr, now).is_some()
                || self.leases.find(&l.duid, l.iaid).is_some()
            {
                return false;
            }
            self.leases.upsert(l.into_lease(expires), now)
        })
    }

    /// Handles one Ethernet frame the link kept aside; returns the frame to send.
    pub fn handle_frame(&mut self, frame: &[u8], now: Millis) -> Option<Vec<u8>> {
        let Ok(f) = Frame::parse(frame) else {
            self.counters.dropped_malformed += 1;
            return None;
        };
        let to_us =
            f.dst_mac == self.cfg.mac || f.dst_mac == crate::ipv6::multicast_mac(ALL_SERVERS);
        let for_us = f.dst == ALL_SERVERS
            || f.dst == crate::ipv6::link_local_of(self.cfg.mac)
            || self.cfg.router_addrs.contains(&f.dst);
        if !to_us || !for_us {
            self.counters.other_server += 1;
            return None;
        }
        let reply = self.handle(f.payload, f.dst == ALL_SERVERS, now)?;
        Some(reply_frame(&reply, self.cfg.mac, f.src_mac, f.src))
    }

    /// Handles one DHCPv6 message (`multicast`: it was sent to ff02::1:2);
    /// returns the reply's UDP payload.
    pub fn handle(&mut self, payload: &[u8], multicast: bool, now: Millis) -> Option<Vec<u8>> {
        let Ok(m) = Message::parse(payload) else {
            self.counters.dropped_malformed += 1;
            return None;
        };
        let c = &mut self.counters;
        match m.kind {
            msg::SOLICIT => c.solicit += 1,
            msg::REQUEST => c.request += 1,
            msg::CONFIRM => c.confirm += 1,
            msg::RENEW => c.renew += 1,
            msg::REBIND => c.rebind += 1,
            msg::RELEASE => c.release += 1,
            msg::DECLINE => c.decline += 1,
            msg::INFORMATION_REQUEST => c.information_request += 1,
            _ => {
                c.dropped_wrong_type += 1;
                return None;
            }
        }
        let req = match self.check(m) {
            Ok(r) => r,
            Err(other) => {
                if other {
                    self.counters.other_server += 1;
                } else {
                    self.counters.dropped_invalid += 1;
                }
                return None;
            }
        };
        if !multicast
            && matches!(
                req.kind,
                msg::REQUEST | msg::RENEW | msg::RELEASE | msg::DECLINE
            )
        {
            self.counters.use_multicast += 1;
            let mut out = self.start(msg::REPLY, &req);
            put(
                &mut out,
                code::STATUS_CODE,
                &status_data(status::USE_MULTICAST, "use multicast"),
            );
            self.counters.reply += 1;
            return Some(out);
        }
        self.leases.expire(now);
        let out = match req.kind {
            msg::SOLICIT => self.solicit(&req, now),
            msg::REQUEST => Some(self.request(&req, now)),
            msg::RENEW => self.renew(&req, false, now),
            msg::REBIND => self.renew(&req, true, now),
            msg::RELEASE => Some(self.release(&req, false, now)),
            msg::DECLINE => Some(self.release(&req, true, now)),
            msg::CONFIRM => self.confirm(&req),
            _ => Some(self.information(&req)),
        }?;
        if out.first() == Some(&msg::ADVERTISE) {
            self.counters.advertise += 1;
        } else {
            self.counters.reply += 1;
        }
        Some(out)
    }

    /// RFC 8415 §16's checks; `Err(true)` for another server's message,
    /// `Err(false)` for an invalid one.
    fn check<'a>(&self, m: Message<'a>) -> Result<Request<'a>, bool> {
        let client_id = m.options.get(code::CLIENTID);
        if client_id.is_some_and(|d| d.len() < 2 || d.len() > MAX_DUID) {
            return Err(false);
        }
        let server_id = m.options.get(code::SERVERID);
        let must_have_client = m.kind != msg::INFORMATION_REQUEST;
        if must_have_client && client_id.is_none() {
            return Err(false);
        }
        match m.kind {
            msg::SOLICIT | msg::CONFIRM | msg::REBIND if server_id.is_some() => return Err(false),
            msg::REQUEST | msg::RENEW | msg::RELEASE | msg::DECLINE if server_id.is_none() => {
                return Err(false)
            }
            _ => {}
        }
        if server_id.is_some_and(|s| s != self.duid.as_slice()) {
            return Err(true);
        }
        let mut ias = Vec::new();
        // IA_NA: IAID, T1, T2, options; IA_TA (RFC 8415 §21.5): IAID, options. An
        // IA_TA is only read for Confirm: it is never leased (odhcpd serves none).
        let tas = m
            .options
            .all(code::IA_TA)
            .filter(|_| m.kind == msg::CONFIRM);
        for (d, fixed) in m
            .options
            .all(code::IA_NA)
            .map(|d| (d, 12))
            .chain(tas.map(|d| (d, 4)))
        {
            let iaid = u32_at(d, 0).ok_or(false)?;
            let inner = Options::parse(d.get(fixed..).ok_or(false)?).map_err(|_| false)?;
            let mut addrs = Vec::new();
            for a in inner.all(code::IAADDR) {
                if a.len() < 24 {
                    return Err(false);
                }
                let b: [u8; 16] = a.get(..16).and_then(|b| b.try_into().ok()).ok_or(false)?;
                addrs.push(Ipv6Addr::from(b));
            }
            ias.push(Ia {
                iaid,
                raw_iaid: d.get(..4).unwrap_or(&[]),
                addrs,
            });
        }
        let mut pds = Vec::new();
        for d in m.options.all(code::IA_PD) {
            pds.push(d.get(..4).ok_or(false)?);
        }
        if m.kind == msg::INFORMATION_REQUEST
            && (!ias.is_empty() || !pds.is_empty() || m.options.has(code::IA_TA))
        {
            return Err(false);
        }
        let hostname = client_id
            .and_then(duid_mac)
            .and_then(|mac| self.cfg.hosts.iter().find(|h| h.mac == mac))
            .map(|h| h.name.clone())
            .or_else(|| m.options.get(code::CLIENT_FQDN).and_then(fqdn_hostname));
        Ok(Request {
            kind: m.kind,
            xid: m.xid,
            options: m.options,
            client_id,
            ias,
            pds,
            hostname,
        })
    }

    /// A reply's header, client id and server id.
    fn start(&self, kind: u8, req: &Request) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        out.push(kind);
        out.extend_from_slice(&req.xid);
        if let Some(c) = req.client_id {
            put(&mut out, code::CLIENTID, c);
        }
        put(&mut out, code::SERVERID, &self.duid);
        out
    }

    /// DNS servers and the search list, as odhcpd always sends them.
    fn dns_options(&self, out: &mut Vec<u8>) {
        if !self.cfg.dns.is_empty() {
            let d: Vec<u8> = self.cfg.dns.iter().flat_map(|a| a.octets()).collect();
            put(out, code::DNS_SERVERS, &d);
        }
        if !self.cfg.domain.is_empty() {
            let mut d = Vec::new();
            if crate::ra::message::encode_name(&self.cfg.domain, &mut d).is_ok() {
                put(out, code::DOMAIN_LIST, &d);
            }
        }
    }

    fn lifetimes(&self) -> (u32, u32, u32) {
        let valid = self.cfg.lease_secs;
        if valid == u32::MAX {
            return (u32::MAX, u32::MAX, valid);
        }
        (valid / 2, valid / 5 * 4, valid)
    }

    /// An IA_NA option: the IAID, T1/T2, then `inner`.
    fn put_ia(out: &mut Vec<u8>, raw_iaid: &[u8], t1: u32, t2: u32, inner: &[u8]) {
        let mut d = Vec::with_capacity(12 + inner.len());
        d.extend_from_slice(raw_iaid);
        d.extend_from_slice(&t1.to_be_bytes());
        d.extend_from_slice(&t2.to_be_bytes());
        d.extend_from_slice(inner);
        put(out, code::IA_NA, &d);
    }

    fn iaaddr(inner: &mut Vec<u8>, a: Ipv6Addr, preferred: u32, valid: u32) {
        let mut d = Vec::with_capacity(24);
        d.extend_from_slice(&a.octets());
        d.extend_from_slice(&preferred.to_be_bytes());
        d.extend_from_slice(&valid.to_be_bytes());
        put(inner, code::IAADDR, &d);
    }

    fn ia_status(out: &mut Vec<u8>, raw_iaid: &[u8], code_: u16, text: &str) {
        let mut inner = Vec::new();
        put(&mut inner, code::STATUS_CODE, &status_data(code_, text));
        Self::put_ia(out, raw_iaid, 0, 0, &inner);
    }

    fn pd_status(out: &mut Vec<u8>, req: &Request) {
        for raw in &req.pds {
            let mut d = Vec::new();
            d.extend_from_slice(raw);
            d.extend_from_slice(&[0; 8]);
            put(
                &mut d,
                code::STATUS_CODE,
                &status_data(status::NO_PREFIX_AVAIL, "no prefixes"),
            );
            put(out, code::IA_PD, &d);
        }
    }

    /// Whether client (`duid`, `iaid`) may hold `a` now.
    fn acceptable(&self, a: Ipv6Addr, duid: &[u8], iaid: u32, now: Millis) -> bool {
        let Some(id) = self.cfg.host_id(a) else {
            return false;
        };
        !reserved_iid(id)
            && !self.cfg.router_addrs.contains(&a)
            && !self.leases.is_declined(a, now)
            && self
                .leases
                .find_addr(a, now)
                .is_none_or(|l| l.is_for(duid, iaid))
    }

    /// The address for IA `ia` of `duid`: its lease's, its hint, or the probe's.
    fn pick(&self, duid: &[u8], ia: &Ia, now: Millis) -> Option<Ipv6Addr> {
        if let Some(l) = self.leases.find(duid, ia.iaid) {
            if self.acceptable(l.addr, duid, ia.iaid, now) {
                return Some(l.addr);
            }
        }
        if !self.leases.has_room(duid, ia.iaid, now)
            || (self.leases.find(duid, ia.iaid).is_none()
                && self.leases.count_for(duid) >= MAX_LEASES_PER_CLIENT)
        {
            return None;
        }
        if let Some(&a) = ia
            .addrs
            .iter()
            .find(|a| self.acceptable(**a, duid, ia.iaid, now))
        {
            return Some(a);
        }
        let (first, last) = self.cfg.pool();
        let size = last - first + 1;
        let start = start_hash(duid, ia.iaid) % size;
        (0..size)
            .map(|i| self.cfg.address(first + (start + i) % size))
            .find(|a| self.acceptable(*a, duid, ia.iaid, now))
    }

    /// Makes (or extends) the lease of IA `ia` on `a`; whether it is held.
    fn commit(&mut self, req: &Request, duid: &[u8], ia: &Ia, a: Ipv6Addr, now: Millis) -> bool {
        let (_, _, valid) = self.lifetimes();
        let expires = (valid != u32::MAX).then(|| now.saturating_add(u64::from(valid) * 1000));
        // A name the client gave before is kept when it gives none now.
        let hostname = req.hostname.clone().or_else(|| {
            self.leases
                .find(duid, ia.iaid)
                .and_then(|l| l.hostname.clone())
        });
        if let Some(h) = &hostname {
            self.leases.clear_hostname(h, duid);
        }
        let ok = self.leases.upsert(
            Lease6 {
                duid: duid.to_vec(),
                iaid: ia.iaid,
                addr: a,
                hostname,
                expires,
            },
            now,
        );
        if ok {
            self.counters.bound += 1;
        }
        ok
    }

    /// Solicit and Request: an address per IA_NA (committed when `commit`).
    fn assign(&mut self, req: &Request, out: &mut Vec<u8>, commit: bool, now: Millis) -> usize {
        let duid = req.client_id.unwrap_or(&[]);
        let (t1, t2, valid) = self.lifetimes();
        let mut given = 0;
        for (k, ia) in req.ias.iter().enumerate() {
            let picked = if k < MAX_IAS_PER_MESSAGE {
                self.pick(duid, ia, now)
            } else {
                None
            };
            let held = match picked {
                Some(a) if commit => self.commit(req, duid, ia, a, now).then_some(a),
                other => other,
            };
            match held {
                Some(a) => {
                    let mut inner = Vec::new();
                    Self::iaaddr(&mut inner, a, valid, valid);
                    Self::put_ia(out, ia.raw_iaid, t1, t2, &inner);
                    given += 1;
                }
                None => {
                    self.counters.no_addrs += 1;
                    Self::ia_status(out, ia.raw_iaid, status::NO_ADDRS_AVAIL, "no addresses");
                }
            }
        }
        given
    }

    fn solicit(&mut self, req: &Request, now: Millis) -> Option<Vec<u8>> {
        let rapid = self.cfg.rapid_commit && req.options.has(code::RAPID_COMMIT);
        let mut out = self.start(if rapid { msg::REPLY } else { msg::ADVERTISE }, req);
        if rapid {
            put(&mut out, code::RAPID_COMMIT, &[]);
        }
        let given = self.assign(req, &mut out, rapid, now);
        Self::pd_status(&mut out, req);
        if given == 0 {
            put(
                &mut out,
                code::STATUS_CODE,
                &status_data(status::NO_ADDRS_AVAIL, "no addresses"),
            );
        }
        self.dns_options(&mut out);
        Some(out)
    }

    fn request(&mut self, req: &Request, now: Millis) -> Vec<u8> {
        let mut out = self.start(msg::REPLY, req);
        self.assign(req, &mut out, true, now);
        Self::pd_status(&mut out, req);
        self.dns_options(&mut out);
        out
    }

    /// Renew (`rebind` false) and Rebind.
    fn renew(&mut self, req: &Request, rebind: bool, now: Millis) -> Option<Vec<u8>> {
        let duid = req.client_id.unwrap_or(&[]);
        let (t1, t2, valid) = self.lifetimes();
        let mut out = self.start(msg::REPLY, req);
        let mut any = false;
        for ia in req.ias.iter().take(MAX_IAS_PER_MESSAGE) {
            let bound = self
                .leases
                .find(duid, ia.iaid)
                .map(|l| l.addr)
                .filter(|a| self.acceptable(*a, duid, ia.iaid, now));
            let bound = match bound {
                Some(a) => Some(a),
                // Rebind without a binding (the lease was lost): the address
                // again if it is this link's and free.
                None if rebind => ia.addrs.iter().copied().find(|a| {
                    self.acceptable(*a, duid, ia.iaid, now)
                        && self.leases.has_room(duid, ia.iaid, now)
                        && self.leases.count_for(duid) < MAX_LEASES_PER_CLIENT
                }),
                None => None,
            };
            let held = bound.filter(|a| self.commit(req, duid, ia, *a, now));
            let mut inner = Vec::new();
            if let Some(a) = held {
                Self::iaaddr(&mut inner, a, valid, valid);
            }
            // Addresses the client holds that are not (or no longer) its: lifetimes 0.
            for a in ia.addrs.iter().filter(|a| Some(**a) != held) {
                if held.is_some() || rebind {
                    Self::iaaddr(&mut inner, *a, 0, 0);
                }
            }
            if held.is_none() && !rebind {
                self.counters.no_binding += 1;
                Self::ia_status(&mut out, ia.raw_iaid, status::NO_BINDING, "no binding");
                any = true;
                continue;
            }
            if held.is_none() && inner.is_empty() {
                continue;
            }
            let (a, b) = if held.is_some() { (t1, t2) } else { (0, 0) };
            Self::put_ia(&mut out, ia.raw_iaid, a, b, &inner);
            any = true;
        }
        if !any && req.pds.is_empty() {
            // Nothing to say (RFC 8415 §18.3.5: a Rebind for unknown IAs with no
            // address to refuse gets no Reply).
            return None;
        }
        Self::pd_status(&mut out, req);
        self.dns_options(&mut out);
        Some(out)
    }

    /// Release (`decline` false) and Decline.
    fn release(&mut self, req: &Request, decline: bool, now: Millis) -> Vec<u8> {
        let duid = req.client_id.unwrap_or(&[]);
        let mut out = self.start(msg::REPLY, req);
        for ia in req.ias.iter().take(MAX_IAS_PER_MESSAGE) {
            let ours = self
                .leases
                .find(duid, ia.iaid)
                .is_some_and(|l| ia.addrs.contains(&l.addr));
            match self.leases.find(duid, ia.iaid).map(|l| l.addr) {
                Some(a) if ours => {
                    if decline {
                        self.leases.decline(a, now);
                    } else {
                        self.leases.remove(duid, ia.iaid);
                    }
                }
                _ => {
                    self.counters.no_binding += 1;
                    Self::ia_status(&mut out, ia.raw_iaid, status::NO_BINDING, "no binding");
                }
            }
        }
        put(
            &mut out,
            code::STATUS_CODE,
            &status_data(
                status::SUCCESS,
                if decline { "declined" } else { "released" },
            ),
        );
        out
    }

    fn confirm(&mut self, req: &Request) -> Option<Vec<u8>> {
        let mut addrs = req.ias.iter().flat_map(|ia| ia.addrs.iter()).peekable();
        addrs.peek()?;
        let on_link = addrs.all(|a| self.cfg.prefix.contains(*a));
        let mut out = self.start(msg::REPLY, req);
        let (s, text) = if on_link {
            (status::SUCCESS, "all on link")
        } else {
            self.counters.not_on_link += 1;
            (status::NOT_ON_LINK, "not on link")
        };
        put(&mut out, code::STATUS_CODE, &status_data(s, text));
        Some(out)
    }

    fn information(&self, req: &Request) -> Vec<u8> {
        let mut out = self.start(msg::REPLY, req);
        self.dns_options(&mut out);
        out
    }
}
