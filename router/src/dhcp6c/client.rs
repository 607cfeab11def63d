//! The client's exchanges (RFC 8415 §18), their retransmission (§15) and its lease.
//!
//! - Solicit (after a random delay of up to 1 s) and gather Advertises for the first
//!   retransmission time, then Request from the one of highest preference (at once
//!   for preference 255, or for the first that comes after that time). With Rapid
//!   Commit a Reply to the Solicit binds at once.
//! - Request, up to 10 times; then Solicit again.
//! - Bound: Renew at T1 (to the server), Rebind at T2 (to any), until the
//!   lifetimes end: then the lease is lost and the client solicits again.
//! - Release on shutdown ([`Client::release`]), sent once.
//! - Decline (§18.2.8) of an address duplicate address detection found in use
//!   ([`Client::decline`]): dropped from the lease at once, declined to the server
//!   (up to [`DEC`]'s 4 times), then a Request for a new one (a Solicit if nothing
//!   else is held). A declined address offered again within [`DECLINED_MS`] is
//!   taken as no address (a server that keeps offering a duplicate does not make
//!   the client loop).
//!
//! A message is taken only if it is an Advertise or a Reply of the exchange under
//! way (its transaction id), names our DUID as client and has a server DUID; the
//! rest is dropped and counted. An Advertise that offers nothing we asked for
//! (NoAddrsAvail, NoPrefixAvail, or `reqaddress force` without an address) is
//! ignored as §18.2.9 says. Retransmission times double from IRT up to MRT with
//! ±10 % randomness, so a silent server costs a bounded trickle of messages.

use alloc::vec::Vec;
use core::fmt;
use core::net::Ipv6Addr;

use alloc::string::String;

use crate::dhcp6c::message::{
    self, Builder, IaAddr, IaPrefix, Message, ADVERTISE, OPT_CLIENTID, OPT_DNS_SERVERS,
    OPT_DOMAIN_LIST, OPT_ELAPSED_TIME, OPT_IA_NA, OPT_IA_PD, OPT_ORO, OPT_RAPID_COMMIT,
    OPT_SERVERID, DECLINE, REBIND, RELEASE, RENEW, REPLY, REQUEST, SOLICIT, STATUS_NO_ADDRS_AVAIL,
    STATUS_NO_BINDING, STATUS_NO_PREFIX_AVAIL, STATUS_SUCCESS,
};
use crate::dns::Rng;
use crate::route6::Ipv6Net;
use crate::Millis;

/// The IAID of our IA_NA and of our IA_PD (odhcp6c's is 1 too).
pub const IAID: u32 = 1;
/// SOL_MAX_DELAY (1 s).
pub const SOL_MAX_DELAY_MS: Millis = 1_000;
/// Solicit: IRT 1 s, MRT 3600 s.
pub const SOL: Params = Params::new(1_000, 3_600_000, 0);
/// Request: IRT 1 s, MRT 30 s, MRC 10.
pub const REQ: Params = Params::new(1_000, 30_000, 10);
/// Renew: IRT 10 s, MRT 600 s (until T2).
pub const REN: Params = Params::new(10_000, 600_000, 0);
/// Rebind: IRT 10 s, MRT 600 s (until the lifetimes end).
pub const REB: Params = Params::new(10_000, 600_000, 0);
/// Decline: IRT 1 s (DEC_TIMEOUT), MRC 4 (DEC_MAX_RC).
pub const DEC: Params = Params::new(1_000, 0, 4);
/// How long a declined address is not taken again (as a server keeps one out of
/// its pool: 10 minutes).
pub const DECLINED_MS: Millis = 600_000;
/// Declined addresses remembered at most (the oldest forgotten first).
pub const MAX_DECLINED: usize = 4;
/// T1 and T2 are never under this (a server's 0 s would make us renew in a loop).
pub const MIN_T1_SECS: u32 = 10;

/// Retransmission parameters of one exchange (RFC 8415 §15).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Initial retransmission time (ms).
    pub irt: Millis,
    /// Maximum retransmission time (ms; 0: none).
    pub mrt: Millis,
    /// Maximum retransmission count (0: none).
    pub mrc: u32,
}

impl Params {
    /// IRT, MRT (ms) and MRC, in the order of RFC 8415's tables.
    pub const fn new(irt: Millis, mrt: Millis, mrc: u32) -> Params {
        Params { irt, mrt, mrc }
    }
}

/// `reqaddress` (of a `proto dhcpv6` interface in /etc/config/network).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqAddress {
    /// Ask for an address, take a binding without one (`try`, the default).
    Try,
    /// Only a server that gives an address will do (`force`).
    Force,
    /// No address (IA_NA) asked (`none`).
    None,
}

/// `reqprefix` (of a `proto dhcpv6` interface in /etc/config/network).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqPrefix {
    /// Ask for a prefix of any length (`auto`, the default).
    Auto,
    /// No prefix (IA_PD) asked (`no`).
    No,
    /// Ask for a prefix of this length (a hint; the server decides).
    Len(u8),
}

/// As the file spells it (`try`, `force`, `none`).
impl fmt::Display for ReqAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReqAddress::Try => "try",
            ReqAddress::Force => "force",
            ReqAddress::None => "none",
        })
    }
}

/// As the file spells it (`auto`, `no`, a length).
impl fmt::Display for ReqPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReqPrefix::Auto => f.write_str("auto"),
            ReqPrefix::No => f.write_str("no"),
            ReqPrefix::Len(n) => write!(f, "{n}"),
        }
    }
}

/// What the client asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// The WAN interface's MAC (our DUID-LL is made of it).
    pub mac: [u8; 6],
    /// `reqaddress`.
    pub reqaddress: ReqAddress,
    /// `reqprefix`.
    pub reqprefix: ReqPrefix,
    /// Ask for Rapid Commit (two messages instead of four).
    pub rapid_commit: bool,
}

/// Where the client is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Asking for nothing (`reqaddress none` and `reqprefix no`), or stopped.
    Idle,
    /// Soliciting.
    Soliciting,
    /// Requesting from the chosen server.
    Requesting,
    /// Bound.
    Bound,
    /// Renewing with the server.
    Renewing,
    /// Rebinding with any server.
    Rebinding,
    /// Declining a duplicate address to the server.
    Declining,
}

/// What the client did and what it dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dhcp6Counters {
    /// Messages sent (first transmissions and retransmissions).
    pub sent: u64,
    /// Of those, retransmissions.
    pub retransmits: u64,
    /// Advertises taken.
    pub advertises: u64,
    /// Replies taken.
    pub replies: u64,
    /// Messages that did not parse ([`message::ParseError`]).
    pub malformed: u64,
    /// Messages of another transaction, or of a type we do not expect now.
    pub wrong_xid: u64,
    /// Messages naming another client, or none.
    pub wrong_client: u64,
    /// Messages without a server DUID, or from another server than the one asked.
    pub wrong_server: u64,
    /// NoAddrsAvail seen.
    pub no_addrs_avail: u64,
    /// NoPrefixAvail seen.
    pub no_prefix_avail: u64,
    /// Advertises offering nothing we asked for.
    pub unusable: u64,
    /// Other failing status codes seen (UnspecFail, UseMulticast, NoBinding...).
    pub other_status: u64,
    /// Exchanges given up (Request after MRC, Rebind at the end of the lease).
    pub gave_up: u64,
    /// Leases obtained or renewed.
    pub bound: u64,
    /// Leases lost (lifetimes ended).
    pub lost: u64,
    /// Addresses declined (duplicate address detection found them in use).
    pub declines: u64,
    /// Offers of an address declined shortly before, taken as no address.
    pub declined_offers: u64,
}

/// What the client holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The server's DUID.
    pub server_id: Vec<u8>,
    /// The address (IA_NA), if any.
    pub address: Option<IaAddr>,
    /// The delegated prefix (IA_PD), if any.
    pub prefix: Option<IaPrefix>,
    /// DNS servers.
    pub dns: Vec<Ipv6Addr>,
    /// Search domains.
    pub domains: Vec<String>,
    /// When the lifetimes started (the Reply).
    pub at: Millis,
    /// T1 (s).
    pub t1: u32,
    /// T2 (s).
    pub t2: u32,
}

fn secs_after(at: Millis, secs: u32) -> Millis {
    if secs == u32::MAX {
        Millis::MAX
    } else {
        at.saturating_add(Millis::from(secs) * 1000)
    }
}

impl Lease {
    /// When the address's and the prefix's valid lifetimes end (the later one).
    pub fn ends_at(&self) -> Millis {
        let a = self.address.map_or(0, |a| secs_after(self.at, a.valid));
        let p = self.prefix.map_or(0, |p| secs_after(self.at, p.valid));
        a.max(p)
    }

    /// What is left at `now` of a lifetime of `secs` from the Reply (s,
    /// `u32::MAX` stays infinite).
    pub fn left(&self, secs: u32, now: Millis) -> u32 {
        if secs == u32::MAX {
            return u32::MAX;
        }
        let end = secs_after(self.at, secs);
        u32::try_from(end.saturating_sub(now) / 1000).unwrap_or(u32::MAX)
    }

    /// The prefix's (preferred, valid) lifetimes left at `now`.
    pub fn prefix_left(&self, now: Millis) -> Option<(IaPrefix, u32, u32)> {
        let p = self.prefix?;
        Some((p, self.left(p.preferred, now), self.left(p.valid, now)))
    }

    fn t1_at(&self) -> Millis {
        secs_after(self.at, self.t1)
    }

    fn t2_at(&self) -> Millis {
        secs_after(self.at, self.t2)
    }
}

/// The DHCPv6 client of one interface.
#[derive(Clone, Debug)]
pub struct Client {
    cfg: ClientConfig,
    duid: Vec<u8>,
    state: State,
    xid: u32,
    params: Params,
    /// When the exchange's first message went out (elapsed time counts from it).
    started: Option<Millis>,
    next_send: Millis,
    rt: Millis,
    count: u32,
    /// Solicit: when the first retransmission time ends.
    collect_until: Option<Millis>,
    /// Solicit: the best Advertise so far.
    best: Option<Message>,
    /// Request: what is asked (the chosen Advertise).
    offer: Option<Message>,
    lease: Option<Lease>,
    /// Declining: the address.
    declining: Option<Ipv6Addr>,
    /// Addresses declined and until when they are not taken again.
    declined: Vec<(Ipv6Addr, Millis)>,
    changed: bool,
    counters: Dhcp6Counters,
}

/// RAND in [-0.1, 0.1] times `base`, as a signed offset in ms.
fn jitter(base: Millis, rng: &mut dyn Rng) -> i64 {
    let r = i64::from(rng.next_u32() % 201) - 100;
    i64::try_from(base).unwrap_or(i64::MAX) / 1000 * r
}

fn add(base: Millis, off: i64) -> Millis {
    base.saturating_add_signed(off)
}

impl Client {
    /// A client asking for what `cfg` says, starting at `now`.
    pub fn new(cfg: ClientConfig, now: Millis, rng: &mut dyn Rng) -> Self {
        let mut c = Client {
            cfg,
            duid: message::duid_ll(cfg.mac),
            state: State::Idle,
            xid: 0,
            params: SOL,
            started: None,
            next_send: now,
            rt: 0,
            count: 0,
            collect_until: None,
            best: None,
            offer: None,
            lease: None,
            declining: None,
            declined: Vec::new(),
            changed: false,
            counters: Dhcp6Counters::default(),
        };
        if cfg.reqaddress != ReqAddress::None || cfg.reqprefix != ReqPrefix::No {
            c.solicit(now, rng);
        }
        c
    }

    /// Our DUID (DUID-LL of the MAC).
    pub fn duid(&self) -> &[u8] {
        &self.duid
    }

    /// Where the client is.
    pub fn state(&self) -> State {
        self.state
    }

    /// The counters.
    pub fn counters(&self) -> Dhcp6Counters {
        self.counters
    }

    /// The lease held, if any.
    pub fn lease(&self) -> Option<&Lease> {
        self.lease.as_ref()
    }

    /// Whether the lease changed (obtained, renewed, lost) since the last call.
    pub fn take_changed(&mut self) -> bool {
        core::mem::take(&mut self.changed)
    }

    fn begin(&mut self, state: State, params: Params, first_at: Millis, rng: &mut dyn Rng) {
        self.state = state;
        self.params = params;
        self.xid = rng.next_u32() & 0x00ff_ffff;
        self.started = None;
        self.next_send = first_at;
        self.count = 0;
        self.rt = 0;
    }

    fn solicit(&mut self, now: Millis, rng: &mut dyn Rng) {
        let delay = Millis::from(rng.next_u32()) % (SOL_MAX_DELAY_MS + 1);
        self.best = None;
        self.offer = None;
        self.collect_until = None;
        self.begin(State::Soliciting, SOL, now + delay, rng);
    }

    fn lose(&mut self, now: Millis, rng: &mut dyn Rng) {
        if self.lease.take().is_some() {
            self.counters.lost += 1;
            self.changed = true;
        }
        self.solicit(now, rng);
    }

    /// When [`Self::poll`] next has something to do.
    pub fn poll_at(&self) -> Option<Millis> {
        let mut t = match self.state {
            State::Idle => return None,
            State::Bound => Millis::MAX,
            _ => self.next_send,
        };
        if let (Some(c), Some(_)) = (self.collect_until, &self.best) {
            t = t.min(c);
        }
        if let Some(l) = self
            .lease
            .as_ref()
            .filter(|l| l.address.is_some() || l.prefix.is_some())
        {
            t = t.min(l.ends_at());
            if self.state == State::Bound {
                t = t.min(l.t1_at());
            }
            if self.state == State::Renewing {
                t = t.min(l.t2_at());
            }
            for end in [
                l.address.map(|a| secs_after(l.at, a.valid)),
                l.prefix.map(|p| secs_after(l.at, p.valid)),
            ]
            .into_iter()
            .flatten()
            {
                t = t.min(end);
            }
        }
        (t != Millis::MAX).then_some(t)
    }

    /// Timers: the payload of a message to send to `ff02::1:2` port 547 now, if
    /// one is due.
    pub fn poll(&mut self, now: Millis, rng: &mut dyn Rng) -> Option<Vec<u8>> {
        if self.state == State::Idle {
            return None;
        }
        self.expire(now, rng);
        if let Some(l) = &self.lease {
            if self.state == State::Bound && now >= l.t1_at() {
                self.begin(State::Renewing, REN, now, rng);
            } else if self.state == State::Renewing && now >= l.t2_at() {
                self.begin(State::Rebinding, REB, now, rng);
            }
        }
        if self.state == State::Soliciting
            && self.collect_until.is_some_and(|c| now >= c)
            && self.best.is_some()
        {
            let best = self.best.take();
            self.request(best, now, rng);
        }
        if self.state == State::Bound || now < self.next_send {
            return None;
        }
        if self.params.mrc != 0 && self.count >= self.params.mrc {
            if self.state == State::Declining {
                // no Reply to the Decline: done with it all the same (§18.2.8)
                self.declined_done(now, rng);
                return None;
            }
            // Request unanswered: solicit again
            self.counters.gave_up += 1;
            self.solicit(now, rng);
            return None;
        }
        let first = self.started.is_none();
        let started = *self.started.get_or_insert(now);
        if first {
            let p = self.params;
            self.rt = if self.state == State::Soliciting {
                // RAND > 0 for the first Solicit (§18.2.1)
                p.irt + p.irt * Millis::from(1 + rng.next_u32() % 100) / 1000
            } else {
                add(p.irt, jitter(p.irt, rng))
            };
            if self.state == State::Soliciting {
                self.collect_until = Some(now + self.rt);
            }
        } else {
            self.counters.retransmits += 1;
            let p = self.params;
            let mut rt = add(2 * self.rt, jitter(self.rt, rng));
            if p.mrt != 0 && rt > p.mrt {
                rt = add(p.mrt, jitter(p.mrt, rng));
            }
            self.rt = rt;
        }
        self.count = self.count.saturating_add(1);
        self.next_send = now + self.rt;
        self.counters.sent += 1;
        let elapsed = u16::try_from((now - started) / 10).unwrap_or(u16::MAX);
        Some(self.build(elapsed))
    }

    /// Drops what has run out: an address or prefix past its valid lifetime, the
    /// whole lease when nothing is left.
    fn expire(&mut self, now: Millis, rng: &mut dyn Rng) {
        let Some(l) = self.lease.as_mut() else {
            return;
        };
        if l.address.is_some_and(|a| now >= secs_after(l.at, a.valid)) {
            l.address = None;
            self.changed = true;
        }
        if l.prefix.is_some_and(|p| now >= secs_after(l.at, p.valid)) {
            l.prefix = None;
            self.changed = true;
        }
        // (declining the only address: the lease names the server until it is done)
        if l.address.is_none() && l.prefix.is_none() && self.state != State::Declining {
            if self.state != State::Soliciting {
                self.counters.gave_up += u64::from(self.state == State::Rebinding);
                self.lose(now, rng);
            } else {
                self.lease = None;
                self.counters.lost += 1;
            }
        }
    }

    fn request(&mut self, offer: Option<Message>, now: Millis, rng: &mut dyn Rng) {
        self.collect_until = None;
        self.offer = offer;
        self.begin(State::Requesting, REQ, now, rng);
    }

    fn common(&self, b: &mut Builder, elapsed: u16) {
        b.option(OPT_CLIENTID, &self.duid);
        b.option(OPT_ELAPSED_TIME, &elapsed.to_be_bytes());
        let mut oro = Vec::with_capacity(4);
        oro.extend_from_slice(&OPT_DNS_SERVERS.to_be_bytes());
        oro.extend_from_slice(&OPT_DOMAIN_LIST.to_be_bytes());
        b.option(OPT_ORO, &oro);
    }

    fn ias(&self, b: &mut Builder, addrs: &[IaAddr], prefixes: &[IaPrefix]) {
        if self.cfg.reqaddress != ReqAddress::None {
            b.option(OPT_IA_NA, &message::ia_na_body(IAID, addrs));
        }
        if self.cfg.reqprefix != ReqPrefix::No {
            b.option(OPT_IA_PD, &message::ia_pd_body(IAID, prefixes));
        }
    }

    fn build(&self, elapsed: u16) -> Vec<u8> {
        let kind = match self.state {
            State::Soliciting => SOLICIT,
            State::Requesting => REQUEST,
            State::Renewing => RENEW,
            State::Rebinding => REBIND,
            State::Declining => DECLINE,
            State::Idle | State::Bound => RELEASE,
        };
        let mut b = Builder::new(kind, self.xid);
        if self.state == State::Declining {
            // the server, and the IA_NA with the address (lifetimes 0); no ORO
            b.option(OPT_CLIENTID, &self.duid);
            b.option(OPT_ELAPSED_TIME, &elapsed.to_be_bytes());
            if let Some(l) = &self.lease {
                b.option(OPT_SERVERID, &l.server_id);
            }
            let a: Vec<IaAddr> = self
                .declining
                .map(|addr| IaAddr {
                    addr,
                    preferred: 0,
                    valid: 0,
                })
                .into_iter()
                .collect();
            b.option(OPT_IA_NA, &message::ia_na_body(IAID, &a));
            return b.finish();
        }
        self.common(&mut b, elapsed);
        let held = |l: &Lease| -> (Vec<IaAddr>, Vec<IaPrefix>) {
            (
                l.address.into_iter().collect(),
                l.prefix.into_iter().collect(),
            )
        };
        match self.state {
            State::Soliciting => {
                let hint: Vec<IaPrefix> = match self.cfg.reqprefix {
                    ReqPrefix::Len(len) => Ipv6Net::new(Ipv6Addr::UNSPECIFIED, len)
                        .map(|prefix| IaPrefix {
                            prefix,
                            preferred: 0,
                            valid: 0,
                        })
                        .into_iter()
                        .collect(),
                    _ => Vec::new(),
                };
                self.ias(&mut b, &[], &hint);
                if self.cfg.rapid_commit {
                    b.option(OPT_RAPID_COMMIT, &[]);
                }
            }
            State::Requesting => {
                // after NoBinding in a Renew the offer is gone: ask for the lease's
                let (sid, addrs, prefixes) = match (&self.offer, &self.lease) {
                    (Some(o), _) => (
                        o.server_id.clone().unwrap_or_default(),
                        o.ia_na
                            .as_ref()
                            .map(|i| i.entries.clone())
                            .unwrap_or_default(),
                        o.ia_pd
                            .as_ref()
                            .map(|i| i.entries.clone())
                            .unwrap_or_default(),
                    ),
                    (None, Some(l)) => {
                        let (a, p) = held(l);
                        (l.server_id.clone(), a, p)
                    }
                    (None, None) => (Vec::new(), Vec::new(), Vec::new()),
                };
                b.option(OPT_SERVERID, &sid);
                self.ias(&mut b, &addrs, &prefixes);
            }
            State::Renewing | State::Rebinding => {
                if let Some(l) = &self.lease {
                    if self.state == State::Renewing {
                        b.option(OPT_SERVERID, &l.server_id);
                    }
                    let (a, p) = held(l);
                    self.ias(&mut b, &a, &p);
                }
            }
            State::Idle | State::Bound | State::Declining => {}
        }
        b.finish()
    }

    /// Shutdown: the Release of the lease held (sent once, not retransmitted; the
    /// lease is dropped), if there is one. The client is idle after it.
    pub fn release(&mut self, rng: &mut dyn Rng) -> Option<Vec<u8>> {
        self.state = State::Idle;
        self.collect_until = None;
        let l = self.lease.take()?;
        self.changed = true;
        self.xid = rng.next_u32() & 0x00ff_ffff;
        let mut b = Builder::new(RELEASE, self.xid);
        self.common(&mut b, 0);
        b.option(OPT_SERVERID, &l.server_id);
        let a: Vec<IaAddr> = l.address.into_iter().collect();
        let p: Vec<IaPrefix> = l.prefix.into_iter().collect();
        self.ias(&mut b, &a, &p);
        self.counters.sent += 1;
        Some(b.finish())
    }

    /// Duplicate address detection found `addr`, the lease's address, in use on
    /// the link (RFC 8415 §18.2.8): it is dropped from the lease at once (the
    /// caller takes it off the interface), declined to the server, and a new
    /// address asked for. Whether it was the lease's address.
    pub fn decline(&mut self, addr: Ipv6Addr, now: Millis, rng: &mut dyn Rng) -> bool {
        let Some(l) = self.lease.as_mut() else {
            return false;
        };
        if l.address.map(|a| a.addr) != Some(addr) {
            return false;
        }
        l.address = None;
        self.changed = true;
        self.counters.declines += 1;
        self.declined.retain(|(a, until)| *a != addr && *until > now);
        if self.declined.len() >= MAX_DECLINED {
            self.declined.remove(0);
        }
        self.declined.push((addr, now.saturating_add(DECLINED_MS)));
        self.declining = Some(addr);
        self.offer = None;
        self.best = None;
        self.collect_until = None;
        self.begin(State::Declining, DEC, now, rng);
        true
    }

    /// The Decline was answered, or given up: ask for a new address from the
    /// server (a Request holding the prefix), or Solicit if nothing is held.
    fn declined_done(&mut self, now: Millis, rng: &mut dyn Rng) {
        self.declining = None;
        if self.lease.as_ref().is_some_and(|l| l.prefix.is_some()) {
            self.begin(State::Requesting, REQ, now, rng);
        } else {
            self.lease = None;
            self.solicit(now, rng);
        }
    }

    /// Whether `addr` was declined less than [`DECLINED_MS`] before `now`.
    fn is_declined(&self, addr: Ipv6Addr, now: Millis) -> bool {
        self.declined.iter().any(|(a, until)| *a == addr && now < *until)
    }

    /// What `m` offers of what we ask: (address, prefix), with the statuses that
    /// refused the rest counted. An address declined shortly before is no address.
    fn offered(&mut self, m: &Message, now: Millis) -> (Option<IaAddr>, Option<IaPrefix>) {
        let mut addr = None;
        let mut prefix = None;
        if self.cfg.reqaddress != ReqAddress::None {
            match &m.ia_na {
                // the first still valid: a server moving us to another address
                // names the old one with lifetimes 0 (RFC 8415 §18.3.4)
                Some(ia) if ia.status.unwrap_or(STATUS_SUCCESS) == STATUS_SUCCESS => {
                    addr = ia.entries.iter().find(|e| e.valid > 0).copied();
                    if addr.is_some_and(|a| self.is_declined(a.addr, now)) {
                        self.counters.declined_offers += 1;
                        addr = None;
                    }
                }
                Some(ia) => self.count_status(ia.status),
                None => self.count_status(m.status),
            }
        }
        if self.cfg.reqprefix != ReqPrefix::No {
            match &m.ia_pd {
                Some(ia) if ia.status.unwrap_or(STATUS_SUCCESS) == STATUS_SUCCESS => {
                    prefix = ia.entries.iter().find(|e| e.valid > 0).copied();
                }
                Some(ia) => self.count_status(ia.status),
                None => {}
            }
        }
        (addr, prefix)
    }

    fn count_status(&mut self, s: Option<u16>) {
        match s {
            Some(STATUS_NO_ADDRS_AVAIL) => self.counters.no_addrs_avail += 1,
            Some(STATUS_NO_PREFIX_AVAIL) => self.counters.no_prefix_avail += 1,
            Some(STATUS_SUCCESS) | None => {}
            Some(_) => self.counters.other_status += 1,
        }
    }

    fn usable(&self, addr: Option<IaAddr>, prefix: Option<IaPrefix>) -> bool {
        match self.cfg.reqaddress {
            ReqAddress::Force => addr.is_some(),
            _ => addr.is_some() || prefix.is_some(),
        }
    }

    /// A DHCPv6 payload received on port 546: taken if it belongs to the exchange
    /// under way, else dropped and counted.
    pub fn received(&mut self, payload: &[u8], now: Millis, rng: &mut dyn Rng) {
        let m = match message::parse(payload) {
            Ok(m) => m,
            Err(_) => {
                self.counters.malformed += 1;
                return;
            }
        };
        let expected = match self.state {
            State::Soliciting => m.msg_type == ADVERTISE || m.msg_type == REPLY,
            State::Requesting | State::Renewing | State::Rebinding | State::Declining => {
                m.msg_type == REPLY
            }
            State::Idle | State::Bound => false,
        };
        if !expected || m.xid != self.xid || self.started.is_none() {
            self.counters.wrong_xid += 1;
            return;
        }
        if m.client_id.as_deref() != Some(self.duid.as_slice()) {
            self.counters.wrong_client += 1;
            return;
        }
        let Some(sid) = m.server_id.clone() else {
            self.counters.wrong_server += 1;
            return;
        };
        let asked = match (self.state, &self.offer, &self.lease) {
            (State::Requesting, Some(o), _) => o.server_id.clone(),
            (State::Requesting | State::Renewing | State::Declining, None, Some(l)) => {
                Some(l.server_id.clone())
            }
            _ => None,
        };
        if asked.is_some_and(|a| a != sid) {
            self.counters.wrong_server += 1;
            return;
        }
        if m.msg_type == ADVERTISE {
            self.advertised(m, now, rng);
        } else if self.state == State::Soliciting {
            // a Reply to a Solicit: Rapid Commit, if we asked for it
            if self.cfg.rapid_commit && m.rapid_commit {
                self.replied(m, sid, now, rng);
            } else {
                self.counters.wrong_xid += 1;
            }
        } else {
            self.replied(m, sid, now, rng);
        }
    }

    fn advertised(&mut self, m: Message, now: Millis, rng: &mut dyn Rng) {
        self.counters.advertises += 1;
        let (a, p) = self.offered(&m, now);
        if !self.usable(a, p) {
            self.counters.unusable += 1;
            return;
        }
        let late = self.collect_until.is_some_and(|c| now >= c);
        if m.preference == 255 || late {
            self.request(Some(m), now, rng);
            return;
        }
        if self
            .best
            .as_ref()
            .is_none_or(|b| m.preference > b.preference)
        {
            self.best = Some(m);
        }
    }

    fn replied(&mut self, m: Message, sid: Vec<u8>, now: Millis, rng: &mut dyn Rng) {
        self.counters.replies += 1;
        if self.state == State::Declining {
            // whatever its status says, the Decline is done (§18.2.10.1)
            self.declined_done(now, rng);
            return;
        }
        if let Some(s) = m.status.filter(|s| *s != STATUS_SUCCESS) {
            // UnspecFail, UseMulticast...: keep retransmitting (§18.2.10)
            self.count_status(Some(s));
            return;
        }
        let no_binding = m.ia_na.as_ref().and_then(|i| i.status) == Some(STATUS_NO_BINDING)
            || m.ia_pd.as_ref().and_then(|i| i.status) == Some(STATUS_NO_BINDING);
        if no_binding && matches!(self.state, State::Renewing | State::Rebinding) {
            self.counters.other_status += 1;
            self.offer = None;
            self.begin(State::Requesting, REQ, now, rng);
            return;
        }
        let (addr, prefix) = self.offered(&m, now);
        let renewing = matches!(self.state, State::Renewing | State::Rebinding);
        let old = self.lease.take();
        // a Renew's Reply without an IA leaves that IA as it was (§18.2.10.1)
        let addr = match (&m.ia_na, &old) {
            (None, Some(o)) if renewing => o.address,
            _ => addr,
        };
        let prefix = match (&m.ia_pd, &old) {
            (None, Some(o)) if renewing => o.prefix,
            _ => prefix,
        };
        let (addr, prefix) = (addr.filter(|a| a.valid > 0), prefix.filter(|p| p.valid > 0));
        if !self.usable(addr, prefix) {
            self.counters.unusable += 1;
            if old.is_some() {
                self.counters.lost += 1;
                self.changed = true;
            }
            self.solicit(now, rng);
            return;
        }
        let (t1, t2) = times(&m, addr, prefix);
        self.lease = Some(Lease {
            server_id: sid,
            address: addr,
            prefix,
            dns: if m.dns.is_empty() {
                old.as_ref().map(|o| o.dns.clone()).unwrap_or_default()
            } else {
                m.dns
            },
            domains: if m.domains.is_empty() {
                old.map(|o| o.domains).unwrap_or_default()
            } else {
                m.domains
            },
            at: now,
            t1,
            t2,
        });
        self.counters.bound += 1;
        self.changed = true;
        self.state = State::Bound;
        self.offer = None;
        self.best = None;
        self.collect_until = None;
    }
}

/// T1 and T2 (s): the IAs' (the shortest that is not 0), else 0.5 and 0.8 of the
/// shortest preferred lifetime (§21.4), at least [`MIN_T1_SECS`], T2 ≥ T1.
fn times(m: &Message, addr: Option<IaAddr>, prefix: Option<IaPrefix>) -> (u32, u32) {
    let mut t1 = u32::MAX;
    let mut t2 = u32::MAX;
    let na = m.ia_na.as_ref().map(|i| (i.t1, i.t2));
    let pd = m.ia_pd.as_ref().map(|i| (i.t1, i.t2));
    for (a, b) in [na, pd].into_iter().flatten() {
        if a != 0 && b != 0 && a <= b {
            t1 = t1.min(a);
            t2 = t2.min(b);
        }
    }
    let pref = [addr.map(|a| a.preferred), prefix.map(|p| p.preferred)]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(0);
    if t1 == u32::MAX && pref != u32::MAX {
        t1 = pref / 2;
        t2 = u32::try_from(u64::from(pref) * 4 / 5).unwrap_or(u32::MAX);
    }
    let t1 = t1.max(MIN_T1_SECS);
    (t1, t2.max(t1))
}
