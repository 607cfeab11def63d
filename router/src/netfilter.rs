//! Connection tracking and NAT44 as the forwarding core's [`L4Hook`].
//!
//! [`Netfilter`] runs where Linux's netfilter hooks do (`nf_conntrack_in` and
//! `nf_nat_inet_fn` at PREROUTING and POSTROUTING, `net/netfilter/nf_nat_core.c`):
//!
//! - **prerouting**: the packet's flow is looked up and its state moved on; the
//!   destination side is translated (replies to masqueraded flows go back to the LAN
//!   host; a port forward, [`Dnat`], rewrites a new flow's destination). ICMP errors
//!   about a flow are translated with their quoted packet (RFC 5508 section 4), as
//!   Linux's `nf_nat_icmp_reply_translation`: in both hooks, for masqueraded flows
//!   and port forwards alike; an error whose ICMP checksum fails, or that is not
//!   addressed to the flow's end, is INVALID and untranslated; a redirect about a
//!   translated flow is dropped.
//! - **postrouting**: a new flow gets its entry; the source side is translated
//!   (masquerade on the way out; a port-forwarded flow's replies get the router's
//!   address back).
//!
//! Between the two hooks the entry found in prerouting is remembered, as Linux keeps it
//! in `skb->_nfct`: a reply whose destination prerouting rewrote no longer matches any
//! tuple, so postrouting checks that it sees the same packet (same tuple after the
//! rewrite) and uses the remembered entry.
//!
//! With a [`Firewall`] installed ([`Netfilter::set_firewall`]), the forward and input
//! hooks run its chains: a packet of a flow found in prerouting is established and
//! accepted without rules; a new one is judged before postrouting creates its entry,
//! so only accepted flows are ever tracked. The firewall's redirects replace the
//! [`Dnat`] rules.
//!
//! "Prevent NAT leakage" (openwrt/firewall4 `root/usr/share/firewall4/templates/
//! ruleset.uc`: `ct state invalid drop` on masquerading zones): a packet leaving a
//! masquerading interface that conntrack finds INVALID, or whose source is still not
//! the interface's address after translation, is dropped rather than sent with a
//! private source.

use alloc::vec::Vec;

use crate::checksum::checksum;
use crate::conntrack::{status, Conntrack, Dir, EntryView, Stats, Timeouts, Track};
use crate::exthdr::Upper;
use crate::firewall::packet::Packet;
use crate::firewall::ruleset::{Ruleset, RulesetError, Verdict};
use crate::firewall::{CtState, Firewall};
use crate::flow::{self, get_addr, Endpoint, Kind, Parsed, Proto, Quoted, TcpInfo, Tuple};
use crate::ipv4;
use crate::nat::{choose_port, Masquerade, PortRange};
use crate::rewrite::{self, Side};
use crate::{DropReason, HookVerdict, IfId, L4Hook, Meta, Millis};

pub use crate::firewall::dnat::Dnat;

/// How [`Netfilter`] is built.
#[derive(Clone, Debug)]
pub struct Config {
    /// Entries in the conntrack table (default 16,384).
    pub capacity: usize,
    /// Timeouts (default: OpenWrt's).
    pub timeouts: Timeouts,
    /// Masquerading interfaces.
    pub masquerade: Vec<Masquerade>,
    /// External ports (and ICMP ids) when the internal one is taken.
    pub ports: PortRange,
    /// Seed of the hash tables (give it entropy: a known seed lets a remote host pick
    /// colliding flows).
    pub hash_seed: u64,
    /// Port forwards.
    pub dnat: Vec<Dnat>,
    /// Entries in the IPv6 conntrack table (default 2,048).
    pub capacity6: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            capacity: 16_384,
            timeouts: Timeouts::default(),
            masquerade: Vec::new(),
            ports: PortRange::default(),
            hash_seed: 0,
            dnat: Vec::new(),
            capacity6: 2048,
        }
    }
}

/// What a packet looked like after prerouting, to recognise it in postrouting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Signature {
    Flow(Tuple),
    Related {
        outer_src: [u8; 4],
        outer_dst: [u8; 4],
        quoted: Tuple,
    },
}

fn signature(p: &Parsed, ip: &[u8]) -> Option<Signature> {
    match p.kind {
        Kind::Flow(t, _) => Some(Signature::Flow(t)),
        Kind::IcmpError(q) => Some(Signature::Related {
            outer_src: get_addr(ip, ipv4::SRC)?,
            outer_dst: get_addr(ip, ipv4::DST)?,
            quoted: q.tuple,
        }),
        Kind::LaterFragment | Kind::Untracked => None,
    }
}

/// What prerouting found, for postrouting.
#[derive(Clone, Copy, Debug)]
enum Found {
    /// The flow in `slot`, whose tuple in `dir` is `tuple`.
    Known { slot: u32, dir: Dir, tuple: Tuple },
    /// INVALID for conntrack (already counted).
    Invalid,
    /// No flow yet and cannot start one (not counted yet: it may be for the router).
    NoFlow,
    /// No flow yet, and the packet may start one (postrouting creates it).
    New,
    /// A new flow whose destination a port forward rewrote; `original` is how it came,
    /// `snat` the source the port forward gives it (reflection).
    NewDnat {
        original: Tuple,
        snat: Option<[u8; 4]>,
    },
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    after: Signature,
    found: Found,
    related_counted: bool,
}

/// Connection tracking with NAT44 masquerade and port forwards: the router's
/// [`L4Hook`].
pub struct Netfilter {
    ct: Conntrack,
    ct6: Conntrack<[u8; 16]>,
    frags6: crate::fragcache6::FragCache6,
    masq: Vec<Masquerade>,
    ports: PortRange,
    dnat: Vec<Dnat>,
    pending: Option<Pending>,
    firewall: Option<Firewall>,
}

/// Whether a packet may start a flow (Linux: the protocols' `new` handlers): a TCP
/// SYN, any UDP, an echo request, any other protocol.
fn can_start<A>(t: &flow::Tuple<A>, tcp: Option<TcpInfo>) -> bool {
    match t.proto {
        Proto::Tcp => tcp.is_some_and(|i| {
            i.flags
                & (flow::tcp_flag::SYN
                    | flow::tcp_flag::ACK
                    | flow::tcp_flag::RST
                    | flow::tcp_flag::FIN)
                == flow::tcp_flag::SYN
        }),
        Proto::Udp | Proto::IcmpEchoRequest | Proto::Other(_) => true,
        Proto::IcmpEchoReply => false,
    }
}

/// Whether the NAT of a flow applies to a packet in `dir` on `side` (Linux
/// `nf_nat_packet`: a source manip in the original direction is SRC_NAT, in the reply
/// direction it undoes DST_NAT, and the other way round).
fn nat_applies(status_bits: u8, dir: Dir, side: Side) -> bool {
    let bit = match (dir, side) {
        (Dir::Original, Side::Source) | (Dir::Reply, Side::Destination) => status::SRC_NAT,
        (Dir::Original, Side::Destination) | (Dir::Reply, Side::Source) => status::DST_NAT,
    };
    status_bits & bit != 0
}

impl Netfilter {
    /// Builds the table (all allocation happens here).
    pub fn new(config: Config) -> Netfilter {
        Netfilter {
            ct: Conntrack::new(config.capacity, config.timeouts, config.hash_seed),
            ct6: Conntrack::new(
                config.capacity6,
                config.timeouts,
                config.hash_seed ^ 0x0006_0006_0006_0006,
            ),
            frags6: crate::fragcache6::FragCache6::new(config.hash_seed ^ 0x6672_6167),
            masq: config.masquerade,
            ports: config.ports,
            dnat: config.dnat,
            pending: None,
            firewall: None,
        }
    }

    /// The conntrack table.
    pub fn conntrack(&self) -> &Conntrack {
        &self.ct
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        self.ct.stats()
    }

    /// Live entries.
    pub fn count(&self) -> usize {
        self.ct.count()
    }

    /// Reclaims expired entries, looking at no more than `budget` slots (of each
    /// table).
    pub fn expire(&mut self, now: Millis, budget: usize) -> usize {
        self.ct.expire(now, budget) + self.ct6.expire(now, budget)
    }

    /// Removes every entry (and so every NAT mapping), IPv4 and IPv6.
    pub fn flush(&mut self) {
        self.pending = None;
        self.ct.flush();
        self.ct6.flush();
    }

    /// Calls `f` on each live entry (`conntrack -L`: format it with `{}`).
    pub fn for_each(&self, now: Millis, f: impl FnMut(EntryView<'_>)) {
        self.ct.for_each(now, f);
    }

    /// Sets the address of a masquerading interface (making it one if it was not).
    /// If the address changes, the flows mapped to the old one are flushed; returns
    /// how many.
    pub fn set_masquerade_address(&mut self, iface: IfId, addr: Option<[u8; 4]>) -> usize {
        self.pending = None;
        match self.masq.iter_mut().find(|m| m.iface == iface) {
            Some(m) if m.addr == addr => 0,
            Some(m) => {
                m.addr = addr;
                self.ct.flush_masquerade(iface)
            }
            None => {
                self.masq.push(Masquerade { iface, addr });
                0
            }
        }
    }

    /// Stops masquerading on an interface; its flows are flushed. Returns how many.
    pub fn remove_masquerade(&mut self, iface: IfId) -> usize {
        self.pending = None;
        self.masq.retain(|m| m.iface != iface);
        self.ct.flush_masquerade(iface)
    }

    /// The masquerading interfaces.
    pub fn masquerade(&self) -> &[Masquerade] {
        &self.masq
    }

    /// Installs a firewall (or removes it: then everything is accepted); its port
    /// forwards replace the DNAT rules.
    pub fn set_firewall(&mut self, fw: Option<Firewall>) {
        self.pending = None;
        self.firewall = fw;
        self.refresh_dnat();
    }

    /// Replaces the running ruleset, all or nothing (installs a firewall if there was
    /// none). Conntrack is untouched: established flows stay, new flows see `rules`.
    pub fn reload_firewall(&mut self, rules: Ruleset) -> Result<(), RulesetError> {
        match self.firewall.as_mut() {
            Some(fw) => fw.replace(rules)?,
            None => self.firewall = Some(Firewall::new(rules)?),
        }
        self.pending = None;
        self.refresh_dnat();
        Ok(())
    }

    /// The firewall, if one is installed.
    pub fn firewall(&self) -> Option<&Firewall> {
        self.firewall.as_ref()
    }

    /// The firewall, to read its log or note the router's own packets.
    pub fn firewall_mut(&mut self) -> Option<&mut Firewall> {
        self.firewall.as_mut()
    }

    /// Tells the firewall an interface's address (port-forward reflection needs the
    /// WAN and LAN addresses); the DNAT rules are rebuilt.
    pub fn set_iface_addr(&mut self, ifc: IfId, addr: Option<[u8; 4]>) {
        if let Some(fw) = self.firewall.as_mut() {
            fw.set_iface_addr(ifc, addr);
            self.refresh_dnat();
        }
    }

    /// The port forwards in force.
    pub fn dnat(&self) -> &[Dnat] {
        &self.dnat
    }

    fn refresh_dnat(&mut self) {
        if let Some(fw) = self.firewall.as_ref() {
            self.dnat = fw.dnat_rules();
        }
    }

    fn masquerade_of(&self, out: Option<IfId>) -> Option<Masquerade> {
        let out = out?;
        self.masq.iter().find(|m| m.iface == out).copied()
    }

    fn dnat_for(&self, input: IfId, t: &Tuple, now: Millis) -> Option<(Endpoint, Option<[u8; 4]>)> {
        let clock = self.firewall.as_ref().and_then(|f| f.wall_clock());
        // a port forward with a time match applies inside it only, and not at all
        // while the wall clock is unknown (fail closed: nothing is forwarded)
        let in_time = |r: &Dnat| match (r.time, clock) {
            (None, _) => true,
            (Some(tm), Some(c)) => tm.matches(c.unix_secs(now), c.utc_offset_secs),
            (Some(_), None) => false,
        };
        self.dnat
            .iter()
            .find(|r| {
                r.input == input
                    && r.proto == t.proto
                    && r.dport <= t.dport
                    && t.dport <= r.dport_max
                    && r.dst.is_none_or(|d| d == t.dst)
                    && (r.src_ip.is_empty() || r.src_ip.iter().any(|n| n.contains(t.src)))
                    && in_time(r)
            })
            .map(|r| {
                let port = r.to.1.wrapping_add(t.dport.wrapping_sub(r.dport));
                ((r.to.0, port), r.snat)
            })
    }

    /// What prerouting finds for the flow packet `ip` (tuple `t`), and the
    /// destination (address, port) it rewrote the packet to, if it did.
    fn prerouting_flow(
        &mut self,
        ip: &mut [u8],
        ihl: usize,
        t: Tuple,
        tcp: Option<TcpInfo>,
        meta: &Meta,
    ) -> Result<(Found, Option<Endpoint>), DropReason> {
        let now = meta.now;
        let mut known = None;
        if let Some((slot, dir)) = self.ct.lookup(&t, now) {
            // what is read of the entry, as it was before this packet (not the
            // whole entry: its windows and counters are copied for nothing)
            let e = self
                .ct
                .get(slot)
                .map(|e| (e.status(), *e.tuple(dir), *e.tuple(dir.other())));
            match self.ct.track(slot, dir, tcp, ip.len(), now) {
                // the old flow is gone: the SYN goes on as a new connection
                Track::Reopen => self.ct.end_for_reopen(slot),
                r => known = Some((slot, dir, e, r)),
            }
        }
        if let Some((slot, dir, e, r)) = known {
            let Some((e_status, e_tuple, other)) = e else {
                return Ok((Found::NoFlow, None));
            };
            if r == Track::Invalid {
                self.ct.stats.invalid += 1;
                // a translated flow's packet cannot go on untranslated
                if e_status & (status::SRC_NAT | status::DST_NAT) != 0 {
                    return Err(DropReason::Invalid);
                }
                return Ok((Found::Invalid, None));
            }
            self.ct.stats.found += 1;
            let mut rewritten = None;
            if nat_applies(e_status, dir, Side::Destination) {
                let to = (other.src, other.sport);
                if (t.dst, t.dport) != to {
                    rewritten = Some(to);
                    rewrite::rewrite_flow(
                        ip,
                        ihl,
                        t.proto,
                        Side::Destination,
                        to,
                        meta.csum_partial,
                    )
                    .map_err(|_| DropReason::Malformed)?;
                }
            }
            return Ok((
                Found::Known {
                    slot,
                    dir,
                    tuple: e_tuple,
                },
                rewritten,
            ));
        }
        if !can_start(&t, tcp) {
            return Ok((Found::NoFlow, None));
        }
        if let Some((to, snat)) = self.dnat_for(meta.input, &t, now) {
            rewrite::rewrite_flow(ip, ihl, t.proto, Side::Destination, to, meta.csum_partial)
                .map_err(|_| DropReason::Malformed)?;
            return Ok((Found::NewDnat { original: t, snat }, Some(to)));
        }
        // postrouting creates the entry once the packet is known to be forwarded
        Ok((Found::New, None))
    }

    /// Looks up the flow an ICMP error is about; its direction is the error's.
    fn related(&mut self, q: &Quoted, now: Millis) -> Option<(u32, Dir)> {
        self.ct.lookup(&q.tuple.invert(), now)
    }

    /// Translates an ICMP error on `side` for the flow in `slot`; returns whether
    /// anything changed.
    fn translate_related(
        &mut self,
        ip: &mut [u8],
        q: &Quoted,
        slot: u32,
        dir: Dir,
        side: Side,
    ) -> Result<bool, DropReason> {
        let Some(e) = self.ct.get(slot).copied() else {
            return Ok(false);
        };
        // a redirect about a translated flow is dropped, in either hook (Linux's
        // nf_nat_icmp_reply_translation): its gateway would be one the LAN host
        // cannot reach, or one a WAN host picked for it
        if ip.get(q.icmp) == Some(&flow::icmp_type::REDIRECT)
            && e.status() & (status::SRC_NAT | status::DST_NAT) != 0
        {
            self.ct.stats.icmp_redirect_dropped += 1;
            return Err(DropReason::Invalid);
        }
        if !nat_applies(e.status(), dir, side) {
            return Ok(false);
        }
        let other = e.tuple(dir.other());
        let (to, outer_at, quoted_end) = match side {
            // the error goes back to the quoted packet's source
            Side::Destination => ((other.src, other.sport), 16, (q.tuple.src, q.tuple.sport)),
            Side::Source => ((other.dst, other.dport), 12, (q.tuple.dst, q.tuple.dport)),
        };
        if get_addr(ip, outer_at) == Some(to.0) && quoted_end == to {
            return Ok(false);
        }
        rewrite::rewrite_icmp_error(ip, q, side, to).map_err(|_| DropReason::Malformed)?;
        Ok(true)
    }

    /// Creates the entry of a new flow whose first packet now looks like `current`
    /// (`original` before a port forward) and leaves by `masq` if that is set (else
    /// gets the source `snat`, keeping its port unless that would clash with another
    /// flow or is one of the router's, if that is set).
    #[allow(clippy::too_many_arguments)]
    fn create(
        &mut self,
        original: Tuple,
        current: Tuple,
        tcp: Option<TcpInfo>,
        len: usize,
        masq: Option<Masquerade>,
        snat: Option<[u8; 4]>,
        now: Millis,
    ) -> Result<u32, DropReason> {
        if !self.ct.make_room(now) {
            self.ct.stats.new += 1;
            self.ct.stats.dropped_full += 1;
            return Err(DropReason::ConntrackFull);
        }
        let mut reply = current.invert();
        let mut nat = 0;
        if current.dst != original.dst || current.dport != original.dport {
            nat |= status::DST_NAT;
        }
        let mut mapping = None;
        if let Some(m) = masq {
            let Some(addr) = m.addr else {
                self.ct.stats.nat_exhausted += 1;
                return Err(DropReason::NatExhausted);
            };
            nat |= status::SRC_NAT;
            reply.dst = addr;
            match current.proto {
                Proto::Tcp | Proto::Udp | Proto::IcmpEchoRequest => {
                    let pn = current.proto.number();
                    let internal = (current.src, current.sport);
                    if let Some(id) = self.ct.maps.find_internal(pn, m.iface, internal) {
                        // endpoint-independent: the mapping's port for every destination
                        reply.dport = self.ct.maps.external(id).1;
                        if self.ct.contains(&reply) {
                            self.ct.stats.clash += 1;
                            return Err(DropReason::Invalid);
                        }
                        self.ct.maps.acquire(id);
                        mapping = Some(id);
                    } else {
                        let ct = &self.ct;
                        let start = ct.maps.search_start(internal, (current.dst, current.dport));
                        let port = choose_port(current.sport, self.ports, start, |p| {
                            !crate::nat::is_router_port(p)
                                && !ct.maps.external_used(pn, (addr, p))
                                && !ct.contains(&Tuple { dport: p, ..reply })
                        });
                        let Some(port) = port else {
                            self.ct.stats.nat_exhausted += 1;
                            return Err(DropReason::NatExhausted);
                        };
                        reply.dport = port;
                        let Some(id) = self.ct.maps.create(pn, m.iface, internal, (addr, port))
                        else {
                            self.ct.stats.nat_exhausted += 1;
                            return Err(DropReason::NatExhausted);
                        };
                        mapping = Some(id);
                    }
                }
                Proto::IcmpEchoReply | Proto::Other(_) => {}
            }
        } else if let Some(a) = snat {
            nat |= status::SRC_NAT;
            reply.dst = a;
            // Linux's nf_nat_unique_tuple: the client's port if the reply tuple it
            // makes is unique, else another one (two LAN clients reflected from the
            // same port to the same server would otherwise clash), never one of the
            // router's own
            if matches!(current.proto, Proto::Tcp | Proto::Udp) {
                let ct = &self.ct;
                let start = ct
                    .maps
                    .search_start((current.src, current.sport), (current.dst, current.dport));
                let port = choose_port(current.sport, self.ports, start, |p| {
                    !crate::nat::is_router_port(p) && !ct.contains(&Tuple { dport: p, ..reply })
                });
                let Some(port) = port else {
                    self.ct.stats.nat_exhausted += 1;
                    return Err(DropReason::NatExhausted);
                };
                reply.dport = port;
            }
        }
        if self.ct.contains(&reply) || self.ct.contains(&original) {
            if let Some(id) = mapping {
                self.ct.maps.release(id);
            }
            self.ct.stats.clash += 1;
            return Err(DropReason::Invalid);
        }
        let masq_iface = masq.map(|m| m.iface);
        let Some(slot) = self
            .ct
            .insert(original, reply, nat, masq_iface, mapping, now)
        else {
            self.ct.stats.new += 1;
            self.ct.stats.dropped_full += 1;
            return Err(DropReason::ConntrackFull);
        };
        self.ct.stats.new += 1;
        let _ = self.ct.track(slot, Dir::Original, tcp, len, now);
        Ok(slot)
    }

    fn postrouting_flow(
        &mut self,
        ip: &mut [u8],
        (ihl, t): (usize, Tuple),
        found: Option<Found>,
        masq: Option<Masquerade>,
        meta: &Meta,
    ) -> Result<(), DropReason> {
        let now = meta.now;
        let verified = |ct: &Conntrack, slot: u32, dir: Dir, tuple: &Tuple| {
            ct.get(slot).is_some_and(|e| e.tuple(dir) == tuple)
        };
        let (slot, dir) = match found {
            Some(Found::Known { slot, dir, tuple }) if verified(&self.ct, slot, dir, &tuple) => {
                (slot, dir)
            }
            Some(Found::Invalid) => return self.invalid_out(masq, false),
            Some(Found::NoFlow) => return self.invalid_out(masq, true),
            Some(Found::NewDnat { original, snat }) => (
                self.create(original, t, tcp_of(ip), ip.len(), masq, snat, now)?,
                Dir::Original,
            ),
            // not seen by prerouting (e.g. sent by the router itself)
            _ => match self.ct.lookup(&t, now) {
                Some((slot, dir)) => match self.ct.track(slot, dir, tcp_of(ip), ip.len(), now) {
                    Track::Invalid => return self.invalid_out(masq, true),
                    Track::Reopen => {
                        self.ct.end_for_reopen(slot);
                        (
                            self.create(t, t, tcp_of(ip), ip.len(), masq, None, now)?,
                            Dir::Original,
                        )
                    }
                    Track::Valid => {
                        self.ct.stats.found += 1;
                        (slot, dir)
                    }
                },
                None if can_start(&t, tcp_of(ip)) => (
                    self.create(t, t, tcp_of(ip), ip.len(), masq, None, now)?,
                    Dir::Original,
                ),
                None => return self.invalid_out(masq, true),
            },
        };
        let Some(e) = self.ct.get(slot) else {
            return Err(DropReason::Invalid);
        };
        if nat_applies(e.status(), dir, Side::Source) {
            let other = e.tuple(dir.other());
            let to = (other.dst, other.dport);
            if (t.src, t.sport) != to {
                rewrite::rewrite_flow(ip, ihl, t.proto, Side::Source, to, meta.csum_partial)
                    .map_err(|_| DropReason::Malformed)?;
            }
        }
        Ok(())
    }

    /// A packet INVALID for conntrack on its way out: dropped if it leaves a
    /// masquerading interface, let through untracked otherwise.
    fn invalid_out(&mut self, masq: Option<Masquerade>, count: bool) -> Result<(), DropReason> {
        if count {
            self.ct.stats.invalid += 1;
        }
        if masq.is_some() {
            self.ct.stats.leak_blocked += 1;
            return Err(DropReason::Invalid);
        }
        Ok(())
    }

    fn prerouting_inner(&mut self, ip: &mut [u8], meta: &Meta) -> Result<(), DropReason> {
        let parsed = flow::parse_with::<true>(ip).map_err(|_| {
            self.ct.stats.malformed += 1;
            DropReason::Malformed
        })?;
        let mut related_counted = false;
        // What the packet looks like after this hook, for postrouting to recognise
        // it: as parsed, or with the destination rewritten (TCP and UDP: the
        // address and the destination port), or read again (anything else changed).
        let mut after = None;
        let found = match parsed.kind {
            Kind::Flow(t, tcp) => {
                let (found, to) = self.prerouting_flow(ip, parsed.ihl, t, tcp, meta)?;
                after = match to {
                    None => Some(Signature::Flow(t)),
                    Some((dst, dport)) if matches!(t.proto, Proto::Tcp | Proto::Udp) => {
                        Some(Signature::Flow(Tuple { dst, dport, ..t }))
                    }
                    Some(_) => None,
                };
                found
            }
            Kind::IcmpError(q) => match self.related(&q, meta.now) {
                // Linux's conntrack verifies the ICMP checksum first
                // (nf_conntrack_icmpv4_error): a corrupt error is INVALID, and never
                // translated into (or out of) a LAN host's
                Some(_) if !meta.csum_partial && !icmp_checksum_ok(ip, &q) => {
                    self.ct.stats.invalid += 1;
                    self.ct.stats.icmp_bad_checksum += 1;
                    Found::Invalid
                }
                // An error about a flow goes to that flow's end: the outer
                // destination is the quoted packet's source, as the flow's tuple has
                // it (Linux's nf_conntrack_inet_error). Else a host that knows a
                // flow's tuple (its server does) could send "related" errors, with a
                // packet's worth of payload, to any other host behind the router.
                Some(_) if !addressed_to_flow_end(ip, &q) => {
                    self.ct.stats.invalid += 1;
                    self.ct.stats.icmp_misdirected += 1;
                    Found::Invalid
                }
                Some((slot, dir)) => {
                    self.ct.stats.found += 1;
                    if self.translate_related(ip, &q, slot, dir, Side::Destination)? {
                        self.ct.stats.icmp_related += 1;
                        related_counted = true;
                    }
                    let tuple = self.ct.get(slot).map_or(q.tuple, |e| *e.tuple(dir));
                    Found::Known { slot, dir, tuple }
                }
                None => Found::NoFlow,
            },
            Kind::LaterFragment | Kind::Untracked => return Ok(()),
        };
        let after = after.or_else(|| flow::parse(ip).ok().and_then(|p| signature(&p, ip)));
        if let Some(after) = after {
            self.pending = Some(Pending {
                after,
                found,
                related_counted,
            });
        }
        Ok(())
    }

    fn postrouting_inner(
        &mut self,
        ip: &mut [u8],
        meta: &Meta,
        masq: Option<Masquerade>,
    ) -> Result<(), DropReason> {
        let pending = self.pending.take();
        // which flow only: the TCP fields are read again where a flow is looked up
        // or made here, not for the one prerouting found (every forwarded packet)
        let parsed = flow::parse_with::<false>(ip).map_err(|_| {
            self.ct.stats.malformed += 1;
            DropReason::Malformed
        })?;
        let sig = signature(&parsed, ip);
        let pending = pending.filter(|p| Some(p.after) == sig);
        let found = pending.map(|p| p.found);
        match parsed.kind {
            Kind::Flow(t, _) => self.postrouting_flow(ip, (parsed.ihl, t), found, masq, meta),
            Kind::IcmpError(q) => {
                let (slot, dir) = match found {
                    Some(Found::Known { slot, dir, .. }) => (slot, dir),
                    Some(Found::Invalid) => return self.invalid_out(masq, false),
                    _ => match self.related(&q, meta.now) {
                        Some(x) => {
                            self.ct.stats.found += 1;
                            x
                        }
                        None => return self.invalid_out(masq, true),
                    },
                };
                if self.translate_related(ip, &q, slot, dir, Side::Source)?
                    && !pending.is_some_and(|p| p.related_counted)
                {
                    self.ct.stats.icmp_related += 1;
                }
                Ok(())
            }
            Kind::LaterFragment => {
                // no ports: the address is all that can be translated (the first
                // fragment, which has them, went through the flow path)
                match masq {
                    Some(Masquerade { addr: Some(a), .. }) => {
                        rewrite::rewrite_address(ip, Side::Source, a)
                            .map_err(|_| DropReason::Malformed)
                    }
                    _ => Ok(()),
                }
            }
            Kind::Untracked => self.invalid_out(masq, true),
        }
    }
}

/// The TCP fields of the packet `ip` (whose tuple [`flow::parse_with`] parsed), if it is
/// TCP.
fn tcp_of(ip: &[u8]) -> Option<TcpInfo> {
    match flow::parse(ip) {
        Ok(Parsed {
            kind: Kind::Flow(_, tcp),
            ..
        }) => tcp,
        _ => None,
    }
}

fn verdict(r: Result<(), DropReason>) -> HookVerdict {
    match r {
        Ok(()) => HookVerdict::Accept,
        Err(reason) => HookVerdict::Drop(reason),
    }
}

/// Whether the ICMP error in `ip` goes to the end of the flow it quotes: its outer
/// destination is the quoted packet's source (the found tuple's destination, as
/// Linux's `nf_conntrack_inet_error` checks it).
fn addressed_to_flow_end(ip: &[u8], q: &Quoted) -> bool {
    get_addr(ip, ipv4::DST) == Some(q.tuple.src)
}

/// Whether the ICMP message of the error in `ip` (from its header to the end of the
/// packet, which the core cut to its total length) has a valid checksum.
fn icmp_checksum_ok(ip: &[u8], q: &Quoted) -> bool {
    ip.get(q.icmp..).is_some_and(|m| checksum(m) == 0)
}

fn filtered(v: Verdict) -> HookVerdict {
    match v {
        Verdict::Accept => HookVerdict::Accept,
        Verdict::Drop => HookVerdict::Drop(DropReason::Filtered),
        Verdict::Reject => HookVerdict::Reject,
    }
}

impl Netfilter {
    /// The input chain's verdict on `ip`, whose prerouting found `found`.
    fn input_judged(&mut self, ip: &[u8], meta: &Meta, found: Option<Found>) -> HookVerdict {
        let Netfilter { firewall, ct, .. } = self;
        let Some(fw) = firewall.as_mut() else {
            return HookVerdict::Accept;
        };
        let Some(mut p) = Packet::parse(ip) else {
            return HookVerdict::Drop(DropReason::Malformed);
        };
        p.src_mac = meta.src_mac;
        let state = if matches!(found, Some(Found::Known { .. })) || fw.is_local_reply(ip, meta.now)
        {
            CtState::Established
        } else if matches!(found, Some(Found::NewDnat { .. })) {
            CtState::Dnat
        } else {
            match flow::parse(ip).map(|x| x.kind) {
                Ok(Kind::Flow(t, tcp)) => {
                    if ct.lookup_view(&t).is_some() {
                        CtState::Established
                    } else if can_start(&t, tcp) {
                        CtState::New
                    } else {
                        CtState::Invalid
                    }
                }
                Ok(Kind::IcmpError(q)) => {
                    if ct.lookup_view(&q.tuple.invert()).is_some()
                        && addressed_to_flow_end(ip, &q)
                        && (meta.csum_partial || icmp_checksum_ok(ip, &q))
                    {
                        CtState::Established
                    } else {
                        CtState::Invalid
                    }
                }
                Ok(Kind::LaterFragment) | Ok(Kind::Untracked) => CtState::New,
                Err(_) => CtState::Invalid,
            }
        };
        filtered(fw.input(&p, meta.input, state, meta.now))
    }

    /// A packet the router's own stack sends (IPv4, no link header): if it belongs
    /// to a port forward to the router itself, its source gets the forwarded
    /// address and port back (the reply direction of the entry [`L4Hook::input`]
    /// made). Whether it was rewritten; `csum_partial` as [`Meta::csum_partial`].
    pub fn local_output(
        &mut self,
        ip: &mut [u8],
        now: Millis,
        csum_partial: bool,
    ) -> Result<bool, DropReason> {
        let parsed = flow::parse(ip).map_err(|_| DropReason::Malformed)?;
        let Kind::Flow(t, tcp) = parsed.kind else {
            return Ok(false);
        };
        let Some((slot, dir)) = self.ct.lookup(&t, now) else {
            return Ok(false);
        };
        let Some(e) = self.ct.get(slot).copied() else {
            return Ok(false);
        };
        if e.status() & status::DST_NAT == 0 || !nat_applies(e.status(), dir, Side::Source) {
            return Ok(false);
        }
        if self.ct.track(slot, dir, tcp, ip.len(), now) == Track::Invalid {
            self.ct.stats.invalid += 1;
            return Err(DropReason::Invalid);
        }
        let other = e.tuple(dir.other());
        let to = (other.dst, other.dport);
        if (t.src, t.sport) == to {
            return Ok(false);
        }
        rewrite::rewrite_flow(ip, parsed.ihl, t.proto, Side::Source, to, csum_partial)
            .map_err(|_| DropReason::Malformed)?;
        Ok(true)
    }

    /// Whether the router's own stack sending a packet of flow `t` (as it sends
    /// it) must pass [`Self::local_output`] first: a port forward to the router.
    pub fn is_local_dnat_reply(&self, t: &Tuple) -> bool {
        self.ct
            .lookup_view(t)
            .is_some_and(|e| e.status() & status::DST_NAT != 0)
    }
}

impl L4Hook for Netfilter {
    fn forward(&mut self, ip: &mut [u8], meta: &Meta) -> HookVerdict {
        let Some(fw) = self.firewall.as_mut() else {
            return HookVerdict::Accept;
        };
        let Some(out) = meta.output else {
            return HookVerdict::Accept;
        };
        let ct = match self.pending.map(|p| p.found) {
            Some(Found::Known { .. }) => CtState::Established,
            Some(Found::NewDnat { .. }) => CtState::Dnat,
            Some(Found::New) | None => CtState::New,
            Some(Found::Invalid) | Some(Found::NoFlow) => CtState::Invalid,
        };
        if ct == CtState::Established {
            // the cached verdict: the flow exists only because it was accepted
            return filtered(fw.forward_established(ip.len()));
        }
        let Some(mut p) = Packet::parse(ip) else {
            return HookVerdict::Drop(DropReason::Malformed);
        };
        p.src_mac = meta.src_mac;
        filtered(fw.forward(&p, meta.input, out, ct, meta.now))
    }

    fn input(&mut self, ip: &[u8], meta: &Meta) -> HookVerdict {
        // What prerouting found for this very packet (not for an earlier one: the
        // broadcast path comes here without prerouting).
        let parsed = flow::parse(ip).ok();
        let sig = parsed.as_ref().and_then(|p| signature(p, ip));
        let found = self
            .pending
            .take()
            .filter(|p| sig.is_some() && Some(p.after) == sig)
            .map(|p| p.found);
        let verdict = self.input_judged(ip, meta, found);
        // A port forward to the router itself, accepted: tracked now (Linux
        // confirms the entry when the packet is delivered), so that the replies of
        // the local stack get the forwarded address and port back
        // ([`Self::local_output`]) and the flow's next packets are established.
        if let (HookVerdict::Accept, Some(Found::NewDnat { original, snat })) = (verdict, found) {
            if let Some(Parsed {
                kind: Kind::Flow(t, tcp),
                ..
            }) = parsed
            {
                if let Err(r) = self.create(original, t, tcp, ip.len(), None, snat, meta.now) {
                    return HookVerdict::Drop(r);
                }
                self.ct.stats.local_dnat += 1;
            }
        }
        verdict
    }

    fn forward6(&mut self, ip: &mut [u8], upper: &Upper, meta: &Meta) -> HookVerdict {
        self.forward6_inner(ip, upper, meta)
    }

    fn input6(&mut self, ip: &[u8], upper: Option<&Upper>, meta: &Meta) -> HookVerdict {
        match upper {
            Some(u) => self.input6_inner(ip, u, meta),
            // the core is not routing IPv6 and did not parse it: as before
            None => self.input_other(0x86dd, meta),
        }
    }

    fn input_other(&mut self, _ethertype: u16, meta: &Meta) -> HookVerdict {
        match self.firewall.as_ref() {
            Some(fw) if !fw.allows_non_ipv4(meta.input) => HookVerdict::Drop(DropReason::Filtered),
            _ => HookVerdict::Accept,
        }
    }

    fn prerouting(&mut self, ip: &mut [u8], meta: &Meta) -> HookVerdict {
        self.pending = None;
        verdict(self.prerouting_inner(ip, meta))
    }

    fn postrouting(&mut self, ip: &mut [u8], meta: &Meta) -> HookVerdict {
        let masq = self.masquerade_of(meta.output);
        let r = self.postrouting_inner(ip, meta, masq);
        if r.is_ok() {
            if let Some(m) = masq {
                // whatever happened above, nothing leaves a masquerading interface
                // with a source other than its address
                if m.addr.is_none() || get_addr(ip, ipv4::SRC) != m.addr {
                    self.ct.stats.leak_blocked += 1;
                    return HookVerdict::Drop(if m.addr.is_none() {
                        DropReason::NatExhausted
                    } else {
                        DropReason::Invalid
                    });
                }
            }
        }
        verdict(r)
    }
}

mod v6;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests6;
