//! The router's own flows, for the input chain's `ct state established,related`.
//!
//! The router's sockets (smoltcp) send straight to the links, so conntrack never sees
//! their flows. Their packets are noted here on the way out, keyed by tuple in a
//! fixed table of buckets (a bucket holds two flows, four for those the router
//! starts; one more replaces the one expiring first: the worst case is a reply judged as new by the zone's rules, never an
//! accepted stranger). A packet
//! arriving for the router whose inverted tuple is here answers one of them; an ICMP
//! error quoting one of them is related (Linux `nf_conntrack_icmp_error`).
//!
//! The flows the router starts itself, from its own ports ([`is_own_client`]: its DNS
//! forwarder's upstream queries, its DHCP client, its TCP/IP stack's connections and
//! pings), have a part of the table to themselves. What a remote host can make the
//! router send (answers of its DNS server, SYN-ACKs of its services, resets, echo
//! replies) comes from other ports or is not noted at all, so no flood of those can
//! push them out, and their replies are never refused for want of a slot: the table
//! stands in for Linux's conntrack entries of the router's own sockets, which no
//! remote host can evict either.

use alloc::vec::Vec;

use crate::flow::{self, Kind, Proto, Tuple};
use crate::Millis;

/// Slots for the flows the router serves (answers of its services).
const SLOTS: usize = 1024;
/// Slots for the flows the router starts ([`is_own_client`]): its DNS forwarder has
/// at most a few hundred queries in flight, its other clients a handful of flows.
const OWN_SLOTS: usize = 1024;
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

/// The tuple to note of a packet the router sends: [`tuple_of`], but `None` for a TCP
/// reset (it ends or refuses a flow: nothing comes back to accept; a host probing the
/// router's closed ports would otherwise fill the table with the resets' flows).
pub fn sent_tuple_of(ip: &[u8]) -> Option<Tuple> {
    match flow::parse(ip).ok()?.kind {
        Kind::Flow(_, Some(tcp)) if tcp.flags & flow::tcp_flag::RST != 0 => None,
        Kind::Flow(t, _) => Some(t),
        _ => None,
    }
}

/// Whether the router started the flow of `t` (a tuple it sent): TCP or UDP from one
/// of its own ports ([`crate::nat::is_router_port`]: its stack's ephemeral ports, its
/// DNS forwarder's upstream ports, its DHCP client's 68), or its own ping.
pub fn is_own_client(t: &Tuple) -> bool {
    match t.proto {
        Proto::Tcp | Proto::Udp => crate::nat::is_router_port(t.sport),
        Proto::IcmpEchoRequest => true,
        Proto::IcmpEchoReply | Proto::Other(_) => false,
    }
}

/// The table: the flows the router serves in `slots`, those it starts in `own`.
pub struct LocalFlows {
    slots: Vec<Option<(Tuple, Millis)>>,
    own: Vec<Option<(Tuple, Millis)>>,
}

impl Default for LocalFlows {
    fn default() -> Self {
        LocalFlows::new()
    }
}

/// Slots of a bucket in the part for the flows the router serves.
const WAYS: usize = 2;
/// Slots of a bucket in the part for the flows it starts: its DNS forwarder's
/// queries come from random ports, so a few may share a bucket while in flight.
const OWN_WAYS: usize = 4;

/// The first of the `ways` slots of `t`'s bucket in a part of `slots` slots.
fn bucket_of(t: &Tuple, slots: usize, ways: usize) -> usize {
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
    (h as usize) % (slots / ways).max(1) * ways
}

impl LocalFlows {
    /// An empty table.
    pub fn new() -> LocalFlows {
        LocalFlows {
            slots: alloc::vec![None; SLOTS],
            own: alloc::vec![None; OWN_SLOTS],
        }
    }

    /// Notes an IPv4 packet the router sends.
    pub fn note(&mut self, ip: &[u8], now: Millis) {
        if let Some(t) = sent_tuple_of(ip) {
            self.note_tuple(t, now);
        }
    }

    /// Notes the flow of a packet the router sent (its tuple, from [`sent_tuple_of`]).
    /// Echo replies are not noted: answering a ping starts nothing that comes back,
    /// and a ping flood (one reply each) used to overwrite the router's DNS and DHCP
    /// flows here, after which their answers were refused on the WAN. A flow takes
    /// one of its bucket's slots (two, or four for the flows the router starts): a
    /// free or expired one, else the one that
    /// expires first (in the part of the table for the flows the router starts,
    /// if it started it).
    pub fn note_tuple(&mut self, t: Tuple, now: Millis) {
        let life = match t.proto {
            Proto::Tcp => TCP_MS,
            Proto::Udp => UDP_MS,
            Proto::IcmpEchoReply => return,
            _ => OTHER_MS,
        };
        let until = now.saturating_add(life);
        let (slots, ways) = self.part_mut(&t);
        let b = bucket_of(&t, slots.len(), ways);
        let Some(bucket) = slots.get(b..b + ways) else {
            return;
        };
        let expires = |s: &Option<(Tuple, Millis)>| match s {
            Some((k, _)) if *k == t => 0, // this flow: refresh it in place
            Some((_, u)) if *u > now => *u,
            _ => 1, // free or expired
        };
        // the first slot of those that expire first
        let mut pick = b;
        let mut first = Millis::MAX;
        for (i, slot) in bucket.iter().enumerate() {
            let e = expires(slot);
            if e < first {
                (pick, first) = (b + i, e);
            }
        }
        if let Some(s) = slots.get_mut(pick) {
            *s = Some((t, until));
        }
    }

    /// The part of the table the flow of `t` (as sent) belongs in.
    /// (its slots, the slots of a bucket).
    fn part(&self, t: &Tuple) -> (&[Option<(Tuple, Millis)>], usize) {
        if is_own_client(t) {
            (&self.own, OWN_WAYS)
        } else {
            (&self.slots, WAYS)
        }
    }

    fn part_mut(&mut self, t: &Tuple) -> (&mut [Option<(Tuple, Millis)>], usize) {
        if is_own_client(t) {
            (&mut self.own, OWN_WAYS)
        } else {
            (&mut self.slots, WAYS)
        }
    }

    /// Removes every noted flow.
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = None);
        self.own.iter_mut().for_each(|s| *s = None);
    }

    fn has(&self, t: &Tuple, now: Millis) -> bool {
        let (slots, ways) = self.part(t);
        let b = bucket_of(t, slots.len(), ways);
        slots.get(b..b + ways).is_some_and(|p| {
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
