//! The LAN's share of a delegated prefix, as netifd and odhcpd give it on OpenWrt:
//! the /64 that `ip6assign` and `ip6hint` pick from the delegation (as the ULA's
//! subnet is picked), the router at `::1` in it, announced with the delegation's
//! remaining lifetimes (never more), and a prefix that goes (the delegation ended,
//! or a new prefix came after a reconnect) announced with lifetimes 0 for a while
//! so the hosts deprecate their addresses in it at once, as odhcpd does.

use alloc::vec::Vec;
use core::net::Ipv6Addr;

use crate::ra::message::RaPrefix;
use crate::route6::Ipv6Net;
use crate::Millis;

/// How long a prefix that went is announced with lifetimes 0 (odhcpd keeps them
/// for a few advertisements).
pub const DEPRECATE_MS: Millis = 2 * 3_600_000;
/// Old prefixes announced at most at once (the oldest is forgotten first).
pub const MAX_DEPRECATED: usize = 4;

/// The /64 of `delegated` for `ip6assign 'assign'` and `ip6hint`, and the router's
/// `::1` in it; `None` if the assignment does not fit the delegation (a /60 asked
/// of a /64, or a hint beyond the bits there are).
pub fn lan_subnet(
    delegated: Ipv6Net,
    assign: u8,
    hint: Option<u64>,
) -> Option<(Ipv6Net, Ipv6Addr)> {
    let plen = delegated.prefix_len();
    if assign < plen || assign > 64 {
        return None;
    }
    let bits = assign - plen;
    let hint = hint.unwrap_or(0);
    if bits < 64 && hint >> bits != 0 {
        return None;
    }
    let base = u128::from(delegated.network().addr());
    let subnet = base | (u128::from(hint) << (128 - u32::from(assign)));
    let net = Ipv6Net::new(Ipv6Addr::from(subnet), 64)?;
    Some((net, Ipv6Addr::from(subnet | 1)))
}

/// The delegated /64 of one LAN interface over time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LanPrefix {
    current: Option<Current>,
    deprecated: Vec<(Ipv6Net, Millis)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Current {
    net: Ipv6Net,
    router: Ipv6Addr,
    preferred_until: Millis,
    valid_until: Millis,
}

/// What [`LanPrefix::update`] changed, for the glue's addresses and routes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Change {
    /// The /64 and router address that went.
    pub removed: Option<(Ipv6Net, Ipv6Addr)>,
    /// The /64 and router address that came.
    pub added: Option<(Ipv6Net, Ipv6Addr)>,
}

fn after(now: Millis, secs: u32) -> Millis {
    if secs == u32::MAX {
        Millis::MAX
    } else {
        now.saturating_add(Millis::from(secs) * 1000)
    }
}

fn left(now: Millis, until: Millis) -> u32 {
    if until == Millis::MAX {
        u32::MAX
    } else {
        u32::try_from(until.saturating_sub(now) / 1000).unwrap_or(u32::MAX - 1)
    }
}

impl LanPrefix {
    /// The /64 announced now and the router's address in it.
    pub fn current(&self) -> Option<(Ipv6Net, Ipv6Addr)> {
        self.current.map(|c| (c.net, c.router))
    }

    /// The delegation is now `delegated` (prefix, preferred and valid seconds left
    /// at `now`), or none: the /64 follows it.
    pub fn update(
        &mut self,
        delegated: Option<(Ipv6Net, u32, u32)>,
        assign: u8,
        hint: Option<u64>,
        now: Millis,
    ) -> Change {
        let mut change = Change::default();
        let next = delegated.and_then(|(p, pref, valid)| {
            let (net, router) = lan_subnet(p, assign, hint)?;
            (valid > 0).then(|| Current {
                net,
                router,
                preferred_until: after(now, pref.min(valid)),
                valid_until: after(now, valid),
            })
        });
        match (self.current, next) {
            (Some(old), Some(new)) if old.net == new.net => {}
            (old, new) => {
                if let Some(o) = old {
                    change.removed = Some((o.net, o.router));
                    if self.deprecated.len() == MAX_DEPRECATED {
                        self.deprecated.remove(0);
                    }
                    self.deprecated.retain(|d| d.0 != o.net);
                    self.deprecated.push((o.net, now + DEPRECATE_MS));
                }
                if let Some(n) = new {
                    change.added = Some((n.net, n.router));
                    self.deprecated.retain(|d| d.0 != n.net);
                }
            }
        }
        self.current = next;
        change
    }

    /// Forgets deprecated prefixes announced long enough; whether one went.
    pub fn expire(&mut self, now: Millis) -> bool {
        let n = self.deprecated.len();
        self.deprecated.retain(|d| now < d.1);
        n != self.deprecated.len()
    }

    /// The Prefix Information options to announce at `now`: the current /64 with
    /// what is left of the delegation, the old ones with lifetimes 0.
    pub fn ra_prefixes(&self, now: Millis) -> Vec<RaPrefix> {
        let mut out = Vec::with_capacity(1 + self.deprecated.len());
        if let Some(c) = self.current {
            let valid_secs = left(now, c.valid_until);
            out.push(RaPrefix {
                prefix: c.net,
                on_link: true,
                autonomous: true,
                valid_secs,
                preferred_secs: left(now, c.preferred_until).min(valid_secs),
            });
        }
        for (net, _) in &self.deprecated {
            out.push(RaPrefix {
                prefix: *net,
                on_link: true,
                autonomous: true,
                valid_secs: 0,
                preferred_secs: 0,
            });
        }
        out
    }
}
