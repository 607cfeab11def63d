//! The WAN side of router discovery, as odhcp6c's `ra.c` does for `wan6`: Router
//! Solicitations to ff02::2 (RFC 4861 §6.3.7: after a random delay of up to 1 s,
//! three 4 s apart, then backing off to one an hour as RFC 7559 allows, until an
//! advertisement comes), and what the upstream router's advertisements say:
//!
//! - the default router (the RA's link-local source) for its Router Lifetime;
//! - the link MTU (from 1280 up to the link's own);
//! - on-link prefixes (L flag) for their valid lifetimes;
//! - one SLAAC address (RFC 4862 §5.5.3) of EUI-64 form in the first /64 with the A
//!   flag, its lifetimes following the two-hour rule (an advertisement may not
//!   shorten a valid lifetime under two hours);
//! - RDNSS servers for their lifetime.
//!
//! Everything is bounded ([`MAX_PREFIXES`]); bad advertisements are dropped and
//! counted ([`AdvertError`]). [`Upstream::take_changed`] tells the glue when to
//! redo its routes and addresses.

use alloc::vec::Vec;
use core::net::Ipv6Addr;

use crate::dns::Rng;
use crate::ipv6;
use crate::ra::advert::{self, AdvertError};
use crate::ra::message::{MAX_PREFIXES, MAX_RDNSS, MIN_MTU, NEXT_HEADER_ICMPV6};
use crate::ra::solicit::TYPE_ROUTER_SOLICIT;
use crate::route6::Ipv6Net;
use crate::Millis;

/// MAX_RTR_SOLICITATION_DELAY (1 s).
pub const MAX_RS_DELAY_MS: Millis = 1_000;
/// RTR_SOLICITATION_INTERVAL (4 s).
pub const RS_INTERVAL_MS: Millis = 4_000;
/// MAX_RTR_SOLICITATIONS before backing off.
pub const MAX_RS: u32 = 3;
/// The longest interval between solicitations after that (RFC 7559's MAX_RTR_SOLICITATION_INTERVAL).
pub const MAX_RS_INTERVAL_MS: Millis = 3_600_000;
/// ff02::2.
pub const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
/// The two hours of RFC 4862 §5.5.3 e).
pub const TWO_HOURS_SECS: u32 = 7200;

/// The default router learnt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefaultRouter {
    /// Its link-local address.
    pub addr: Ipv6Addr,
    /// Its MAC, if the advertisement said.
    pub lladdr: Option<[u8; 6]>,
    /// When its Router Lifetime ends.
    pub until: Millis,
}

/// An on-link prefix learnt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnLink {
    /// The prefix.
    pub prefix: Ipv6Net,
    /// When its valid lifetime ends (`Millis::MAX`: infinite).
    pub until: Millis,
}

/// The SLAAC address formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlaacAddr {
    /// The address, with its /64.
    pub addr: Ipv6Net,
    /// When it is no longer preferred.
    pub preferred_until: Millis,
    /// When it goes.
    pub valid_until: Millis,
}

/// What the upstream side did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpstreamCounters {
    /// Router Solicitations sent.
    pub solicitations: u64,
    /// Advertisements taken.
    pub adverts: u64,
    /// Advertisements dropped as invalid.
    pub bad_adverts: u64,
    /// Prefixes not kept for want of room.
    pub prefixes_full: u64,
}

/// Router discovery on the WAN.
#[derive(Clone, Debug)]
pub struct Upstream {
    mac: [u8; 6],
    link_mtu: u32,
    next_rs: Option<Millis>,
    rs_sent: u32,
    rs_interval: Millis,
    router: Option<DefaultRouter>,
    mtu: Option<u32>,
    prefixes: Vec<OnLink>,
    slaac: Option<SlaacAddr>,
    rdnss: Vec<(Ipv6Addr, Millis)>,
    managed: bool,
    changed: bool,
    counters: UpstreamCounters,
}

fn after(now: Millis, secs: u32) -> Millis {
    if secs == u32::MAX {
        Millis::MAX
    } else {
        now.saturating_add(Millis::from(secs) * 1000)
    }
}

/// The EUI-64 interface identifier of `mac` in `prefix` (a /64).
pub fn eui64_in(prefix: Ipv6Net, mac: [u8; 6]) -> Ipv6Addr {
    let ll = u128::from(ipv6::link_local_of(mac));
    let net = u128::from(prefix.network().addr());
    Ipv6Addr::from((net & !u128::from(u64::MAX)) | (ll & u128::from(u64::MAX)))
}

impl Upstream {
    /// Router discovery from an interface with MAC `mac` and MTU `link_mtu`,
    /// starting at `now`.
    pub fn new(mac: [u8; 6], link_mtu: u32, now: Millis, rng: &mut dyn Rng) -> Self {
        Upstream {
            mac,
            link_mtu,
            next_rs: Some(now + Millis::from(rng.next_u32()) % (MAX_RS_DELAY_MS + 1)),
            rs_sent: 0,
            rs_interval: RS_INTERVAL_MS,
            router: None,
            mtu: None,
            prefixes: Vec::new(),
            slaac: None,
            rdnss: Vec::new(),
            managed: false,
            changed: false,
            counters: UpstreamCounters::default(),
        }
    }

    /// The counters.
    pub fn counters(&self) -> UpstreamCounters {
        self.counters
    }

    /// The default router, if one advertises itself as such.
    pub fn router(&self) -> Option<DefaultRouter> {
        self.router
    }

    /// The MTU advertised (within 1280 and the link's).
    pub fn mtu(&self) -> Option<u32> {
        self.mtu
    }

    /// The on-link prefixes.
    pub fn prefixes(&self) -> &[OnLink] {
        &self.prefixes
    }

    /// The SLAAC address, if one was formed.
    pub fn slaac(&self) -> Option<SlaacAddr> {
        self.slaac
    }

    /// The RDNSS servers still valid.
    pub fn rdnss(&self) -> impl Iterator<Item = Ipv6Addr> + '_ {
        self.rdnss.iter().map(|(a, _)| *a)
    }

    /// Whether the last advertisement had the M flag (addresses by DHCPv6).
    pub fn managed(&self) -> bool {
        self.managed
    }

    /// Whether the router, prefixes or address changed since the last call.
    pub fn take_changed(&mut self) -> bool {
        core::mem::take(&mut self.changed)
    }

    /// When [`Self::poll`] next has something to do.
    pub fn poll_at(&self) -> Option<Millis> {
        let ends = self
            .router
            .map(|r| r.until)
            .into_iter()
            .chain(self.prefixes.iter().map(|p| p.until))
            .chain(self.slaac.map(|s| s.valid_until))
            .chain(self.rdnss.iter().map(|r| r.1));
        self.next_rs
            .into_iter()
            .chain(ends)
            .filter(|t| *t != Millis::MAX)
            .min()
    }

    /// Expires what ran out; the Router Solicitation frame to send now, if due.
    pub fn poll(&mut self, now: Millis, rng: &mut dyn Rng) -> Option<Vec<u8>> {
        if self.router.is_some_and(|r| now >= r.until) {
            self.router = None;
            self.changed = true;
            // look for another
            self.rs_sent = 0;
            self.rs_interval = RS_INTERVAL_MS;
            self.next_rs = Some(now);
        }
        let n = self.prefixes.len();
        self.prefixes.retain(|p| now < p.until);
        if self.slaac.is_some_and(|s| now >= s.valid_until) {
            self.slaac = None;
            self.changed = true;
        }
        self.changed |= self.prefixes.len() != n;
        self.rdnss.retain(|r| now < r.1);
        let due = self.next_rs.is_some_and(|t| now >= t);
        if !due {
            return None;
        }
        self.rs_sent = self.rs_sent.saturating_add(1);
        if self.rs_sent >= MAX_RS {
            self.rs_interval = (self.rs_interval * 2).min(MAX_RS_INTERVAL_MS);
        }
        let jitter = Millis::from(rng.next_u32()) % (self.rs_interval / 10 + 1);
        self.next_rs = Some(now + self.rs_interval + jitter);
        self.counters.solicitations += 1;
        Some(self.solicitation())
    }

    /// A Router Solicitation from our link-local address with our link-layer address.
    pub fn solicitation(&self) -> Vec<u8> {
        let src = ipv6::link_local_of(self.mac);
        let mut body = Vec::with_capacity(16);
        body.extend_from_slice(&[TYPE_ROUTER_SOLICIT, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
        body.extend_from_slice(&self.mac);
        let mut f = Vec::with_capacity(14 + 40 + body.len());
        f.extend_from_slice(&ipv6::multicast_mac(ALL_ROUTERS));
        f.extend_from_slice(&self.mac);
        f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
        f.extend_from_slice(&u16::try_from(body.len()).unwrap_or(0).to_be_bytes());
        f.extend_from_slice(&[NEXT_HEADER_ICMPV6, 255]);
        f.extend_from_slice(&src.octets());
        f.extend_from_slice(&ALL_ROUTERS.octets());
        let s = ipv6::pseudo_header_sum(src, ALL_ROUTERS, NEXT_HEADER_ICMPV6, body.len());
        let csum = !crate::checksum::fold(crate::checksum::sum(s, &body));
        if let Some(c) = body.get_mut(2..4) {
            c.copy_from_slice(&csum.to_be_bytes());
        }
        f.extend_from_slice(&body);
        f
    }

    /// A frame received on the WAN that [`advert::is_advert`]: taken if valid.
    pub fn received(&mut self, frame: &[u8], now: Millis) -> Result<(), AdvertError> {
        let a = advert::parse(frame).inspect_err(|_| self.counters.bad_adverts += 1)?;
        self.counters.adverts += 1;
        self.next_rs = None;
        self.managed = a.managed;
        let router = (a.router_lifetime_secs != 0).then(|| DefaultRouter {
            addr: a.src,
            lladdr: a.lladdr,
            until: now + Millis::from(a.router_lifetime_secs) * 1000,
        });
        match (self.router, router) {
            (_, Some(r)) => {
                if self.router.map(|o| o.addr) != Some(r.addr) {
                    self.changed = true;
                }
                self.router = Some(r);
            }
            // lifetime 0 from our router: it is no longer a default router
            (Some(o), None) if o.addr == a.src => {
                self.router = None;
                self.changed = true;
            }
            _ => {}
        }
        if let Some(m) = a.mtu {
            if (MIN_MTU..=self.link_mtu).contains(&m) && self.mtu != Some(m) {
                self.mtu = Some(m);
                self.changed = true;
            }
        }
        for p in &a.prefixes {
            if p.on_link {
                let until = after(now, p.valid_secs);
                let full = self.prefixes.len() >= MAX_PREFIXES;
                match self.prefixes.iter_mut().find(|o| o.prefix == p.prefix) {
                    Some(o) => o.until = until,
                    None if p.valid_secs == 0 => {}
                    None if !full => {
                        self.prefixes.push(OnLink {
                            prefix: p.prefix,
                            until,
                        });
                        self.changed = true;
                    }
                    None => self.counters.prefixes_full += 1,
                }
            }
            if p.autonomous && p.prefix.prefix_len() == 64 {
                self.slaac_from(p.prefix, p.valid_secs, p.preferred_secs, now);
            }
        }
        let n = self.prefixes.len();
        self.prefixes.retain(|p| now < p.until);
        self.changed |= self.prefixes.len() != n;
        for s in &a.rdnss {
            let until = after(now, a.rdnss_lifetime_secs);
            let full = self.rdnss.len() >= MAX_RDNSS;
            match self.rdnss.iter_mut().find(|r| r.0 == *s) {
                Some(r) => r.1 = until,
                None if !full => self.rdnss.push((*s, until)),
                None => {}
            }
        }
        self.rdnss.retain(|r| now < r.1);
        Ok(())
    }

    /// RFC 4862 §5.5.3 d) and e) for the prefix of our address (or a first one).
    fn slaac_from(&mut self, prefix: Ipv6Net, valid: u32, preferred: u32, now: Millis) {
        let addr = eui64_in(prefix, self.mac);
        match self.slaac.as_mut() {
            Some(s) if s.addr.network() == prefix.network() => {
                let remaining = s.valid_until.saturating_sub(now);
                let two_hours = Millis::from(TWO_HOURS_SECS) * 1000;
                let new = after(now, valid);
                if valid > TWO_HOURS_SECS || new > s.valid_until {
                    s.valid_until = new;
                } else if remaining > two_hours {
                    s.valid_until = now + two_hours;
                }
                s.preferred_until = after(now, preferred).min(s.valid_until);
            }
            Some(_) => {}
            None if valid > 0 => {
                if let Some(net) = Ipv6Net::new(addr, 64) {
                    self.slaac = Some(SlaacAddr {
                        addr: net,
                        preferred_until: after(now, preferred),
                        valid_until: after(now, valid),
                    });
                    self.changed = true;
                }
            }
            None => {}
        }
    }
}
