//! When one interface advertises (RFC 4861 §6.2.4, §6.2.6), as odhcpd does:
//!
//! - The first advertisement goes out at once; then one every random interval in
//!   `[MinRtrAdvInterval, MaxRtrAdvInterval]`, the first
//!   [`MAX_INITIAL_ADVERTISEMENTS`] intervals at most
//!   [`MAX_INITIAL_INTERVAL_MS`].
//! - A valid solicitation is answered after a random delay of up to
//!   [`MAX_RA_DELAY_MS`], to all nodes (the usual case of §6.2.6): one answer serves
//!   every solicitation that came while it waited (counted as coalesced), and a
//!   solicitation shortly before a periodic advertisement is served by it.
//! - Two advertisements to all nodes are never less than [`MIN_DELAY_BETWEEN_MS`]
//!   apart, however many solicitations come: that bounds what a flood of them can
//!   make the router send. Every advertisement restarts the periodic interval.
//! - Invalid solicitations ([`crate::ra::solicit`]) are dropped and counted.
//!
//! The message is built once, at [`Advertiser::new`]; each send only copies it into
//! a frame and checksums it.

use alloc::vec::Vec;
use core::net::Ipv6Addr;

use crate::dns::Rng;
use crate::ipv6;
use crate::ra::message::{self, RaConfig, RaError};
use crate::ra::solicit::{self, RsError};
use crate::Millis;

/// MAX_INITIAL_RTR_ADVERTISEMENTS.
pub const MAX_INITIAL_ADVERTISEMENTS: u32 = 3;
/// MAX_INITIAL_RTR_ADVERT_INTERVAL (16 s).
pub const MAX_INITIAL_INTERVAL_MS: Millis = 16_000;
/// MIN_DELAY_BETWEEN_RAS (3 s).
pub const MIN_DELAY_BETWEEN_MS: Millis = 3_000;
/// MAX_RA_DELAY_TIME (0.5 s).
pub const MAX_RA_DELAY_MS: Millis = 500;
/// ff02::1.
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// What an advertiser did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RaCounters {
    /// Unsolicited (periodic) advertisements sent.
    pub unsolicited: u64,
    /// Advertisements sent in answer to solicitations.
    pub solicited: u64,
    /// Valid solicitations received.
    pub solicitations: u64,
    /// Solicitations served by an advertisement already on its way.
    pub coalesced: u64,
    /// Solicitations dropped as invalid (see [`RsError`]).
    pub bad_solicitations: u64,
    /// Of those, with a bad checksum.
    pub bad_checksum: u64,
    /// Of those, with a hop limit other than 255.
    pub bad_hop_limit: u64,
}

/// The advertisements of one interface.
#[derive(Clone, Debug)]
pub struct Advertiser {
    body: Vec<u8>,
    mac: [u8; 6],
    min_ms: Millis,
    max_ms: Millis,
    /// When the next periodic advertisement is due.
    next_periodic: Millis,
    /// When the answer to solicitations is due, if one waits.
    answer_at: Option<Millis>,
    last_sent: Option<Millis>,
    sent: u32,
    counters: RaCounters,
}

impl Advertiser {
    /// Advertises `config` from an interface with MAC `mac` (its link-local address
    /// is the EUI-64 one, [`ipv6::link_local_of`]), starting at `now`.
    pub fn new(config: &RaConfig, mac: [u8; 6], now: Millis) -> Result<Self, RaError> {
        let body = config.body(mac)?;
        Ok(Advertiser {
            body,
            mac,
            min_ms: Millis::from(config.min_interval_secs) * 1000,
            max_ms: Millis::from(config.max_interval_secs) * 1000,
            next_periodic: now,
            answer_at: None,
            last_sent: None,
            sent: 0,
            counters: RaCounters::default(),
        })
    }

    /// Advertises `config` from now on (a delegated prefix came, went, or its
    /// lifetimes went down), keeping the timers; with `urgent` (the prefixes or the
    /// router lifetime changed, not only the lifetimes counting down) an
    /// advertisement whose message changed goes out at once (at most every 3 s), as
    /// odhcpd sends one when the interface's prefixes change. A configuration that
    /// cannot be advertised leaves the old one.
    pub fn set_config(
        &mut self,
        config: &RaConfig,
        now: Millis,
        urgent: bool,
    ) -> Result<(), RaError> {
        let body = config.body(self.mac)?;
        if body != self.body {
            self.body = body;
            if urgent {
                self.next_periodic = self.next_periodic.min(now);
            }
        }
        self.min_ms = Millis::from(config.min_interval_secs) * 1000;
        self.max_ms = Millis::from(config.max_interval_secs) * 1000;
        Ok(())
    }

    /// The configuration was changed by the administrator (`reload` of
    /// `/etc/config/dhcp` or `network`): `config` is advertised from now on and, if
    /// the message changed, at once (at most every 3 s) and then as at start, the
    /// next [`MAX_INITIAL_ADVERTISEMENTS`] at most 16 s apart, as RFC 4861 §6.2.4
    /// allows when "a router's configuration changes", so a host that missed one
    /// learns the new flags soon. A configuration that cannot be advertised leaves
    /// the old one.
    pub fn reconfigure(&mut self, config: &RaConfig, now: Millis) -> Result<bool, RaError> {
        let body = config.body(self.mac)?;
        let changed = body != self.body;
        self.set_config(config, now, true)?;
        if changed {
            self.sent = 0;
        }
        Ok(changed)
    }

    /// The final advertisement of RFC 4861 §6.2.5 when the interface stops
    /// advertising (`ra` no longer `server`): `config` with router lifetime 0 and
    /// every prefix with lifetimes 0, so hosts drop the router as default at once
    /// and deprecate their addresses in its prefixes (odhcpd withdraws a prefix
    /// the same way).
    pub fn final_frame(&self, config: &RaConfig) -> Result<Vec<u8>, RaError> {
        let mut c = config.clone();
        c.router_lifetime_secs = 0;
        for p in &mut c.prefixes {
            p.valid_secs = 0;
            p.preferred_secs = 0;
        }
        let body = c.body(self.mac)?;
        Ok(message::frame(
            &body,
            self.mac,
            ipv6::multicast_mac(ALL_NODES),
            ALL_NODES,
        ))
    }

    /// The counters.
    pub fn counters(&self) -> RaCounters {
        self.counters
    }

    /// The router's link-local address the advertisements come from.
    pub fn source(&self) -> Ipv6Addr {
        ipv6::link_local_of(self.mac)
    }

    /// The ICMPv6 message advertised (checksum 0).
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// A frame received on the interface that [`solicit::is_solicitation`]: checked,
    /// and an answer scheduled if it is valid (else dropped and counted).
    pub fn solicited(
        &mut self,
        frame: &[u8],
        now: Millis,
        rng: &mut dyn Rng,
    ) -> Result<(), RsError> {
        let r = solicit::parse(frame);
        if let Err(e) = r {
            self.counters.bad_solicitations += 1;
            match e {
                RsError::Checksum => self.counters.bad_checksum += 1,
                RsError::HopLimit => self.counters.bad_hop_limit += 1,
                _ => {}
            }
            return Err(e);
        }
        self.counters.solicitations += 1;
        let at = now + Millis::from(rng.next_u32()) % (MAX_RA_DELAY_MS + 1);
        if self.answer_at.is_some() || self.earliest(self.next_periodic) <= at {
            // an advertisement already on its way serves this one too
            self.counters.coalesced += 1;
        } else {
            self.answer_at = Some(at);
        }
        Ok(())
    }

    /// `t`, or later if the last advertisement was under 3 s before it.
    fn earliest(&self, t: Millis) -> Millis {
        self.last_sent
            .map_or(t, |l| t.max(l.saturating_add(MIN_DELAY_BETWEEN_MS)))
    }

    /// When [`Self::poll`] next has something to send.
    pub fn poll_at(&self) -> Millis {
        let due = self
            .answer_at
            .map_or(self.next_periodic, |a| a.min(self.next_periodic));
        self.earliest(due)
    }

    /// The advertisement frame to send on the interface now, if one is due.
    pub fn poll(&mut self, now: Millis, rng: &mut dyn Rng) -> Option<Vec<u8>> {
        if now < self.poll_at() {
            return None;
        }
        if self.answer_at.take().is_some_and(|a| a <= now) && self.next_periodic > now {
            self.counters.solicited += 1;
        } else {
            self.counters.unsolicited += 1;
        }
        self.last_sent = Some(now);
        self.sent = self.sent.saturating_add(1);
        let span = self.max_ms.saturating_sub(self.min_ms);
        let mut interval = self.min_ms + Millis::from(rng.next_u32()) % (span + 1);
        if self.sent < MAX_INITIAL_ADVERTISEMENTS {
            interval = interval.min(MAX_INITIAL_INTERVAL_MS);
        }
        self.next_periodic = now + interval;
        Some(message::frame(
            &self.body,
            self.mac,
            ipv6::multicast_mac(ALL_NODES),
            ALL_NODES,
        ))
    }
}
