//! Router advertisements over the stack's interfaces: odhcpd's `ra 'server'`
//! ([`xenlet_router::ra`], sans-I/O) with its frames sent on the LAN link as they
//! are, and the Router Solicitations the routed link kept aside
//! ([`Link::take_solicitation`]) handed to it.
//!
//! An interface of the spec the stack does not have, or a configuration that cannot
//! be advertised, is reported in [`RaPorts::summary`] and skipped; an interface that
//! goes away stops its advertisements (it is found again by its
//! [`NetIf::instance`]).

use super::{reconcile, Change};
use crate::iface::NetIf;
use crate::lanconfig::RaSpec;
use crate::link::Link;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_router::dhcp6c::delegation::{DEPRECATE_MS, MAX_DEPRECATED};
use xenlet_router::dns::Rng;
use xenlet_router::ra::message::MAX_PREFIXES;
use xenlet_router::ra::{Advertiser, RaConfig, RaCounters, RaPrefix};
use xenlet_router::route6::Ipv6Net;
use xenlet_router::Millis;

/// Solicitations taken from one link per poll at most (the link keeps few anyway).
const RS_BUDGET: usize = 16;

/// The advertisements of one interface.
struct RaPort {
    vif: String,
    /// The interface's [`NetIf::instance`] and its advertiser, if it runs.
    run: Result<(u64, Advertiser), String>,
    /// What the files say to advertise (the link's MTU filled in); the upstream's
    /// delegated prefixes and router lifetime go on top ([`RaPorts::set_upstream`]).
    base: RaConfig,
    /// The upstream part last set: (prefixes, router lifetime).
    upstream: (Vec<RaPrefix>, u16),
    /// The file's prefixes a `reload` took away, announced with lifetimes 0 until
    /// the time given ([`DEPRECATE_MS`] after, at most [`MAX_DEPRECATED`]), as
    /// odhcpd withdraws a prefix the interface lost.
    withdrawn: Vec<(Ipv6Net, Millis)>,
    /// What the summary says of it (`fd12:3456:789a::/64 slaac`).
    what: String,
    send_failed: u64,
}

/// The MTU advertised on a link of MTU `link`: `ra_mtu` (or the interface's
/// `option mtu`) when given, never over the link's (as odhcpd takes `ra_mtu` only
/// up to the interface's MTU).
fn link_mtu(configured: Option<u32>, link: usize) -> Option<u32> {
    let link = u32::try_from(link).ok();
    match (configured, link) {
        (Some(c), Some(l)) => Some(c.min(l)),
        (c, l) => c.or(l),
    }
}

/// What the summary says of a configuration (`fd12:3456:789a::/64 slaac, router
/// lifetime 0s`).
fn describe(c: &RaConfig) -> String {
    let mut what: Vec<String> = c
        .prefixes
        .iter()
        .map(|p| {
            format!(
                "{}/{}{}",
                p.prefix.addr(),
                p.prefix.prefix_len(),
                if p.autonomous { " slaac" } else { "" }
            )
        })
        .collect();
    what.push(format!("router lifetime {}s", c.router_lifetime_secs));
    what.join(", ")
}

impl RaPort {
    /// The advertisements of `s` on its interface in `ifs`, started at `now`.
    fn start<L: Link>(s: &RaSpec, ifs: &mut [NetIf<L>], now: Millis) -> RaPort {
        let mut base = s.config.clone();
        let run = match ifs.iter_mut().find(|n| n.name == s.vif) {
            None => Err(String::from("not up")),
            Some(n) => {
                n.link.keep_solicitations(true);
                base.mtu = link_mtu(base.mtu, n.link.mtu());
                Advertiser::new(&base, n.link.mac(), now)
                    .map(|a| (n.instance(), a))
                    .map_err(|e| format!("{e}"))
            }
        };
        RaPort {
            vif: s.vif.clone(),
            run,
            upstream: (Vec::new(), 0),
            withdrawn: Vec::new(),
            what: describe(&s.config),
            base,
            send_failed: 0,
        }
    }

    /// What is advertised now: the file's configuration, the prefixes a reload
    /// took away with lifetimes 0, the upstream's prefixes and router lifetime.
    fn effective(&self) -> RaConfig {
        let mut c = self.base.clone();
        c.router_lifetime_secs = c.router_lifetime_secs.max(self.upstream.1);
        for (net, _) in &self.withdrawn {
            c.prefixes.push(RaPrefix {
                prefix: *net,
                on_link: true,
                autonomous: true,
                valid_secs: 0,
                preferred_secs: 0,
            });
        }
        c.prefixes.extend(self.upstream.0.iter().copied());
        c.prefixes.truncate(MAX_PREFIXES);
        c
    }

    /// Takes `new` (from the files again, `reload`) at `now`: the file's prefixes
    /// no longer in it are withdrawn, the advertisement goes out at once if it
    /// changed. What changed, for the console.
    fn reload<L: Link>(
        &mut self,
        new: &RaSpec,
        ifs: &mut [NetIf<L>],
        now: Millis,
    ) -> Option<String> {
        let mut base = new.config.clone();
        if let Some(n) = ifs.iter().find(|n| n.name == self.vif) {
            base.mtu = link_mtu(base.mtu, n.link.mtu());
        }
        for gone in self
            .base
            .prefixes
            .iter()
            .filter(|p| !base.prefixes.iter().any(|q| q.prefix == p.prefix))
        {
            self.withdrawn.retain(|w| w.0 != gone.prefix);
            if self.withdrawn.len() >= MAX_DEPRECATED {
                self.withdrawn.remove(0);
            }
            self.withdrawn.push((gone.prefix, now + DEPRECATE_MS));
        }
        self.withdrawn
            .retain(|w| !base.prefixes.iter().any(|q| q.prefix == w.0));
        let old = core::mem::replace(&mut self.base, base);
        self.what = describe(&new.config);
        let c = self.effective();
        match self.run.as_mut() {
            Ok((_, adv)) => match adv.reconfigure(&c, now) {
                Ok(true) => Some(format!("ra: {} now {}", self.vif, self.what)),
                Ok(false) => None,
                Err(e) => {
                    self.base = old;
                    Some(format!("ra: {} unchanged ({e})", self.vif))
                }
            },
            Err(_) => {
                // not running (its interface was not up, or the old configuration
                // could not be advertised): start it as new
                let (vif, withdrawn) = (self.vif.clone(), core::mem::take(&mut self.withdrawn));
                *self = RaPort::start(new, ifs, now);
                self.withdrawn = withdrawn;
                Some(match &self.run {
                    Ok(_) => format!("ra: {vif} started, {}", self.what),
                    Err(e) => format!("ra: {vif} not started ({e})"),
                })
            }
        }
    }

    /// Stops at `now` (`ra` no longer `server` after a `reload`): the final
    /// advertisement (router lifetime 0, every prefix with lifetimes 0: RFC 4861
    /// §6.2.5) goes out, and the link no longer keeps solicitations aside.
    fn stop<L: Link>(self, ifs: &mut [NetIf<L>]) -> String {
        let Ok((instance, adv)) = &self.run else {
            return format!("ra: {} stopped", self.vif);
        };
        let Some(n) = ifs.iter_mut().find(|n| n.instance() == *instance) else {
            return format!("ra: {} stopped", self.vif);
        };
        n.link.keep_solicitations(false);
        let sent = adv
            .final_frame(&self.effective())
            .is_ok_and(|f| n.link.send(&f).is_ok());
        format!(
            "ra: {} stopped{}",
            self.vif,
            if sent {
                " (final advertisement sent)"
            } else {
                ""
            }
        )
    }
}

/// Every interface's router advertisements.
#[derive(Default)]
pub struct RaPorts {
    ports: Vec<RaPort>,
}

impl RaPorts {
    /// Starts the advertisements of `specs` on the stack's interfaces `ifs` at `now`.
    pub fn new<L: Link>(specs: &[RaSpec], ifs: &mut [NetIf<L>], now: Millis) -> RaPorts {
        RaPorts {
            ports: specs.iter().map(|s| RaPort::start(s, ifs, now)).collect(),
        }
    }

    /// `ra: eth0 fd12:3456:789a::/64 slaac, router lifetime 0s`, one part per
    /// interface; `None` without any.
    pub fn summary(&self) -> Option<String> {
        super::dhcp6::ports_summary("ra", &self.ports, |p| match &p.run {
            Ok(_) => format!("{} {}", p.vif, p.what),
            Err(e) => format!("{} not started ({e})", p.vif),
        })
    }

    /// Each running interface's counters and the sends its link refused.
    pub fn counters(&self) -> Vec<(&str, RaCounters, u64)> {
        self.ports
            .iter()
            .filter_map(|p| {
                let (_, a) = p.run.as_ref().ok()?;
                Some((p.vif.as_str(), a.counters(), p.send_failed))
            })
            .collect()
    }

    /// Takes the solicitations each interface received, sends what is due; whether
    /// anything was received or sent.
    pub fn poll<L: Link>(&mut self, ifs: &mut [NetIf<L>], now: Millis, rng: &mut dyn Rng) -> bool {
        let mut busy = false;
        for p in self.ports.iter_mut() {
            let Ok((instance, _)) = p.run.as_ref() else {
                continue;
            };
            let instance = *instance;
            let Some(n) = ifs.iter_mut().find(|n| n.instance() == instance) else {
                continue;
            };
            if p.withdrawn.iter().any(|w| now >= w.1) {
                p.withdrawn.retain(|w| now < w.1);
                let c = p.effective();
                if let Ok((_, adv)) = p.run.as_mut() {
                    let _ = adv.set_config(&c, now, false);
                }
            }
            let Ok((_, adv)) = p.run.as_mut() else {
                continue;
            };
            for _ in 0..RS_BUDGET {
                let Some(f) = n.link.take_solicitation() else {
                    break;
                };
                busy = true;
                // a bad one is counted by the advertiser
                let _ = adv.solicited(&f, now, rng);
            }
            if let Some(frame) = adv.poll(now, rng) {
                busy = true;
                if n.link.send(&frame).is_err() {
                    p.send_failed += 1;
                }
            }
        }
        busy
    }

    /// What `vif` advertises besides its own prefixes: the subnets of a delegated
    /// prefix (`prefixes`, current and deprecated) and the router lifetime (not 0
    /// once there is an IPv6 default route upstream, as odhcpd does). A change of
    /// the prefixes or of the lifetime is advertised at once; lifetimes counting
    /// down at the next advertisement. Whether `vif` advertises.
    pub fn set_upstream(
        &mut self,
        vif: &str,
        prefixes: &[RaPrefix],
        router_lifetime_secs: u16,
        now: Millis,
    ) -> bool {
        let Some(p) = self.ports.iter_mut().find(|p| p.vif == vif) else {
            return false;
        };
        if p.run.is_err() {
            return false;
        }
        let urgent =
            p.upstream.1 != router_lifetime_secs
                || p.upstream.0.len() != prefixes.len()
                || p.upstream.0.iter().zip(prefixes).any(|(a, b)| {
                    a.prefix != b.prefix || (a.valid_secs == 0) != (b.valid_secs == 0)
                });
        p.upstream = (prefixes.to_vec(), router_lifetime_secs);
        let c = p.effective();
        let Ok((_, adv)) = p.run.as_mut() else {
            return false;
        };
        adv.set_config(&c, now, urgent).is_ok()
    }

    /// The files were read again (`reload`): each interface of `specs` advertises
    /// its new configuration (at once if it changed, a prefix that went with
    /// lifetimes 0), one no longer in them stops with a final advertisement, a new
    /// one starts. What changed, a line each.
    pub fn reload<L: Link>(
        &mut self,
        specs: &[RaSpec],
        ifs: &mut [NetIf<L>],
        now: Millis,
    ) -> Vec<String> {
        let mut said = Vec::new();
        let running = core::mem::take(&mut self.ports);
        let same = |p: &RaPort, s: &RaSpec| p.vif == s.vif;
        self.ports = reconcile(running, specs, same, |change| match change {
            Change::Kept(mut p, s) => {
                said.extend(p.reload(s, ifs, now));
                Some(p)
            }
            Change::Gone(p) => {
                said.push(p.stop(ifs));
                None
            }
            Change::New(s) => {
                let p = RaPort::start(s, ifs, now);
                said.push(match &p.run {
                    Ok(_) => format!("ra: {} started, {}", p.vif, p.what),
                    Err(e) => format!("ra: {} not started ({e})", p.vif),
                });
                Some(p)
            }
        });
        said
    }

    /// Stops: the links no longer keep solicitations aside.
    pub fn shutdown<L: Link>(self, ifs: &mut [NetIf<L>]) {
        for p in self.ports {
            if let Ok((instance, _)) = p.run {
                if let Some(n) = ifs.iter_mut().find(|n| n.instance() == instance) {
                    n.link.keep_solicitations(false);
                }
            }
        }
    }

    /// When [`Self::poll`] next has something to send.
    pub fn poll_at(&self) -> Option<Millis> {
        self.ports
            .iter()
            .filter_map(|p| p.run.as_ref().ok().map(|(_, a)| a.poll_at()))
            .min()
    }
}
