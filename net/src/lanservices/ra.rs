//! Router advertisements over the stack's interfaces: odhcpd's `ra 'server'`
//! ([`xenlet_router::ra`], sans-I/O) with its frames sent on the LAN link as they
//! are, and the Router Solicitations the routed link kept aside
//! ([`Link::take_solicitation`]) handed to it.
//!
//! An interface of the spec the stack does not have, or a configuration that cannot
//! be advertised, is reported in [`RaPorts::summary`] and skipped; an interface that
//! goes away stops its advertisements (it is found again by its
//! [`NetIf::instance`]).

use crate::iface::NetIf;
use crate::lanconfig::RaSpec;
use crate::link::Link;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_router::dns::Rng;
use xenlet_router::ra::{Advertiser, RaConfig, RaCounters, RaPrefix};
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
    /// What the summary says of it (`fd12:3456:789a::/64 slaac`).
    what: String,
    send_failed: u64,
}

/// Every interface's router advertisements.
#[derive(Default)]
pub struct RaPorts {
    ports: Vec<RaPort>,
}

impl RaPorts {
    /// Starts the advertisements of `specs` on the stack's interfaces `ifs` at `now`.
    pub fn new<L: Link>(specs: &[RaSpec], ifs: &mut [NetIf<L>], now: Millis) -> RaPorts {
        let ports = specs
            .iter()
            .map(|s| {
                let mut what: Vec<String> = s
                    .config
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
                what.push(format!(
                    "router lifetime {}s",
                    s.config.router_lifetime_secs
                ));
                let mut base = s.config.clone();
                let run = match ifs.iter_mut().find(|n| n.name == s.vif) {
                    None => Err(String::from("not up")),
                    Some(n) => {
                        n.link.keep_solicitations(true);
                        if base.mtu.is_none() {
                            base.mtu = u32::try_from(n.link.mtu()).ok();
                        }
                        Advertiser::new(&base, n.link.mac(), now)
                            .map(|a| (n.instance(), a))
                            .map_err(|e| format!("{e}"))
                    }
                };
                RaPort {
                    vif: s.vif.clone(),
                    run,
                    upstream: (Vec::new(), base.router_lifetime_secs),
                    base,
                    what: what.join(", "),
                    send_failed: 0,
                }
            })
            .collect();
        RaPorts { ports }
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
            let Ok((instance, adv)) = p.run.as_mut() else {
                continue;
            };
            let Some(n) = ifs.iter_mut().find(|n| n.instance() == *instance) else {
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
        let Ok((_, adv)) = p.run.as_mut() else {
            return false;
        };
        let mut c = p.base.clone();
        c.router_lifetime_secs = c.router_lifetime_secs.max(router_lifetime_secs);
        let room = xenlet_router::ra::message::MAX_PREFIXES.saturating_sub(c.prefixes.len());
        c.prefixes.extend(prefixes.iter().take(room).copied());
        let urgent =
            p.upstream.1 != c.router_lifetime_secs
                || p.upstream.0.len() != prefixes.len()
                || p.upstream.0.iter().zip(prefixes).any(|(a, b)| {
                    a.prefix != b.prefix || (a.valid_secs == 0) != (b.valid_secs == 0)
                });
        p.upstream = (prefixes.to_vec(), c.router_lifetime_secs);
        adv.set_config(&c, now, urgent).is_ok()
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
