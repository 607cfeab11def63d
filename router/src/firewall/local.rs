//! The router's own flows, for the input chain's `ct state established,related`.
//!
//! The router's sockets (smoltcp) send straight to the links, so conntrack never sees
//! their flows. Their packets are noted here on the way out, keyed by tuple in a
//! fixed two-way table (a bucket holds two flows; a third replaces the one expiring
//! first: the worst case is a reply judged as new by the zone's rules, never an
//! accepted stranger). A packet
//! arriving for the router whose inverted tuple is here answers one of them; an ICMP
//! error quoting one of them is related (Linux `nf_conntrack_icmp_error`).

use alloc::vec::Vec;

use crate::flow::{self, Kind, Proto, Tuple};
use crate::Millis;

/// Slots in the table.
const SLOTS: usize = 1024;
/// How long a flow stays without traffic out: TCP (established, OpenWrt's
/// `nf_conntrack_tcp_timeout_established` is far longer; the router's own TCP flows
/// send at least keep-alives or are shell sessions), UDP, ICMP.
const TCP_MS: Millis = 30 * 60 * 1000;
const UDP_MS: Millis = 3 * 60 * 1000;
const OTHER_MS: Millis = 60 * 1000;

/// The tuple of a packet that can start or continue a flow (`None` for ICMP errors,
/// later fragments, unparsable packets).
pub fn tuple_of(ip: &[u8]) -> Option<Tuple> {
    match flow::parse(ip).ok()?.kind {
        Kind::Flow(t, _) => Some(t),
        _ => None,
    }
}

/// The table.
pub struct LocalFlows {
    slots: Vec<Option<(Tuple, Millis)>>,
}

impl Default for LocalFlows {
    fn default() -> Self {
        LocalFlows::new()
    }
}

/// The first of the two slots of `t`'s bucket.
fn bucket_of(t: &Tuple) -> usize {
    // FNV-1a over the tuple: the table holds only the router's own flows, whose
    // tuples a remote host does not choose alone
    let mut h: u32 = 0x811c_9dc5;
    let mut eat = |b: u8| {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    };
    for b in t.src.iter().chain(t.dst.iter()) {
        eat(*b);
    }
    for b in t
        .sport
        .to_be_bytes()
        .iter()
        .chain(t.dport.to_be_bytes().iter())
    {
        eat(*b);
    }
    eat(t.proto.number());
    (h as usize) % (SLOTS / 2) * 2
}

impl LocalFlows {
    /// An empty table.
    pub fn new() -> LocalFlows {
        LocalFlows {
            slots: alloc::vec![None; SLOTS],
        }
    }

    /// Notes an IPv4 packet the router sends.
    pub fn note(&mut self, ip: &[u8], now: Millis) {
        if let Some(t) = tuple_of(ip) {
            self.note_tuple(t, now);
        }
    }

    /// Notes the flow of a packet the router sent (its tuple, from [`tuple_of`]).
    /// Echo replies are not noted: answering a ping starts nothing that comes back,
    /// and a ping flood (one reply each) used to overwrite the router's DNS and DHCP
    /// flows here, after which their answers were refused on the WAN. A flow takes
    /// one of its bucket's two slots: a free or expired one, else the one that
    /// expires first.
    pub fn note_tuple(&mut self, t: Tuple, now: Millis) {
        let life = match t.proto {
            Proto::Tcp => TCP_MS,
            Proto::Udp => UDP_MS,
            Proto::IcmpEchoReply => return,
            _ => OTHER_MS,
        };
        let until = now.saturating_add(life);
        let b = bucket_of(&t);
        let pick = match (self.slots.get(b), self.slots.get(b + 1)) {
            (Some(x), Some(y)) => {
                let expires = |s: &Option<(Tuple, Millis)>| match s {
                    Some((k, _)) if *k == t => 0, // this flow: refresh it in place
                    Some((_, u)) if *u > now => *u,
                    _ => 1, // free or expired
                };
                let (ex, ey) = (expires(x), expires(y));
                if ex <= ey {
                    b
                } else {
                    b + 1
                }
            }
            _ => return,
        };
        if let Some(s) = self.slots.get_mut(pick) {
            *s = Some((t, until));
        }
    }

    /// Removes every noted flow.
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = None);
    }

    fn has(&self, t: &Tuple, now: Millis) -> bool {
        let b = bucket_of(t);
        self.slots.get(b..b + 2).is_some_and(|p| {
            p.iter()
                .any(|s| matches!(s, Some((k, until)) if k == t && *until > now))
        })
    }

    /// Whether `ip` answers (or is an ICMP error about) a noted flow.
    pub fn is_reply(&self, ip: &[u8], now: Millis) -> bool {
        let Ok(p) = flow::parse(ip) else { return false };
        match p.kind {
            Kind::Flow(t, _) => self.has(&t.invert(), now),
            Kind::IcmpError(q) => self.has(&q.tuple, now),
            Kind::LaterFragment | Kind::Untracked => false,
        }
    }
}
