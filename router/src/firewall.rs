//! OpenWrt's firewall (firewall4 semantics) in the fast path: zones, forwardings,
//! rules, port forwards, REJECT/DROP, SYN-flood and rule rate limits, counters, logs.
//!
//! The chains follow openwrt/firewall4 `root/usr/share/firewall4/templates/ruleset.uc`:
//!
//! - **forward**: `ct state established,related accept`; `ct state invalid drop` with
//!   `drop_invalid`; the rules with `src '*'` and a `dest`, then `forward_<src zone>`:
//!   the zone's rules (file order, first match wins), its forwardings (`jump
//!   accept_to_<dest>`), `ct status dnat accept` (port forwards), and `jump
//!   <forward policy>_to_<zone>`, which only matches traffic leaving by the same zone;
//!   everything else falls to the `defaults` forward policy.
//! - **input** (packets to the router itself): established/related accept,
//!   `drop_invalid`, the SYN-flood limit (`syn_flood`: pure SYNs over
//!   `synflood_rate`/`synflood_burst` are dropped), the rules with `src '*'` and no
//!   `dest`, then `input_<zone>`: its rules and its `input` policy; no zone: the
//!   `defaults` input policy.
//! - REJECT is fw4's `handle_reject`: `reject with tcp reset` for TCP, ICMP
//!   port-unreachable for the rest (the forwarding core sends them).
//!
//! A flow is decided on its first packet. The verdict is cached by conntrack itself:
//! only accepted flows get an entry (the filter runs before postrouting creates it),
//! so a packet of a known flow is "established" and no rule is looked at
//! ([`Firewall::stats`]`.rule_evaluations` proves it). Replacing the ruleset
//! ([`Firewall::replace`]) leaves conntrack alone: established flows stay, new ones
//! see the new rules.
//!
//! The router's own connections do not cross the forwarding core, so conntrack does
//! not see them; their packets are noted on the way out ([`Firewall::note_output`],
//! a small table, with a part of its own for the flows the router starts) so that
//! the replies count as established on input.
//! The `output` policies are not enforced (the router's own traffic is trusted).
//!
//! Time matches (`start_time`, `weekdays`, ...: [`timematch`]) are judged by the wall
//! clock the caller sets ([`Firewall::set_wall_clock`]); until it does, they fail
//! closed (a DROP or REJECT rule with one matches, an ACCEPT rule does not).
//!
//! Differences from fw4, on purpose: `forwarding` sections are matched after the
//! zone's rules (the typed configuration does not keep their place between rules);
//! only IPv4 is filtered (frames of other types reach the local stack only from
//! zones whose input policy is ACCEPT).

pub mod dnat;
pub mod local;
pub mod packet;
pub mod ratelimit;
pub mod reject;
pub mod reject6;
pub mod ruleset;
pub mod timematch;

use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::net::Ipv4Addr;

use crate::{IfId, Millis};
use dnat::Dnat;
use local::LocalFlows;
use packet::Packet;
use ratelimit::{Bucket, Limit};
use ruleset::{
    in_list, IcmpMatch, Rule, RuleFamily, Ruleset, RulesetError, Verdict, ZoneId, ZoneSel,
};
use timematch::WallClock;

/// What conntrack knows of a packet, when the filter looks at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtState {
    /// Part of (or an ICMP error about) a known flow: accepted without rules.
    Established,
    /// May start a flow.
    New,
    /// A new flow whose destination a port forward rewrote (`ct status dnat`).
    Dnat,
    /// Conntrack cannot place it (a bare ACK, an echo reply or an ICMP error for no
    /// flow).
    Invalid,
}

/// Packets and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counter {
    /// Packets.
    pub packets: u64,
    /// Bytes.
    pub bytes: u64,
}

impl Counter {
    fn add(&mut self, len: usize) {
        self.packets = self.packets.wrapping_add(1);
        self.bytes = self.bytes.wrapping_add(len as u64);
    }
}

/// Counters of a zone's chains (the packets its policies decided).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneCounters {
    /// Decided by the zone's input policy.
    pub input: Counter,
    /// Decided by the zone's forward policy.
    pub forward: Counter,
    /// Port-forwarded flows accepted from this zone.
    pub dnat: Counter,
}

/// Counters of the whole firewall.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FwStats {
    /// Packets accepted as established/related (no rule looked at).
    pub established: Counter,
    /// Dropped by `drop_invalid`.
    pub invalid: Counter,
    /// SYNs dropped by the SYN-flood limit.
    pub syn_flood: Counter,
    /// Decided by the defaults' input policy.
    pub default_input: Counter,
    /// Decided by the defaults' forward policy.
    pub default_forward: Counter,
    /// Rules looked at (one per rule tested against a packet).
    pub rule_evaluations: u64,
    /// Log lines not written because of the log rate limit.
    pub log_suppressed: u64,
}

/// Log lines kept for the kernel (`logread`), oldest dropped first.
const LOG_LINES: usize = 64;
/// fw4's `log_limit` default: 10/minute, burst 5 (nftables' default burst).
const LOG_LIMIT: Limit = Limit {
    rate: 10,
    period_ms: 60_000,
    burst: 5,
};

/// Which chain decided, for the log prefix.
#[derive(Clone, Copy)]
enum Chain {
    Input,
    Forward,
}

/// The firewall: a compiled [`Ruleset`] and its counters, limits and log.
pub struct Firewall {
    rules: Ruleset,
    /// Zone of each interface, indexed by `IfId.0`.
    iface_zone: Vec<Option<ZoneId>>,
    fwd_global: Vec<usize>,
    fwd_zone: Vec<Vec<usize>>,
    in_global: Vec<usize>,
    in_zone: Vec<Vec<usize>>,
    zone_has_dnat: Vec<bool>,
    rule_counters: Vec<Counter>,
    rule_buckets: Vec<Option<Bucket>>,
    fwd_counters: Vec<Counter>,
    zone_counters: Vec<ZoneCounters>,
    syn_bucket: Option<Bucket>,
    stats: FwStats,
    log: VecDeque<String>,
    log_bucket: Bucket,
    local: LocalFlows,
    /// Interface addresses (for port-forward reflection).
    addrs: Vec<(IfId, [u8; 4])>,
    /// The wall clock, for time matches (None: not known).
    clock: Option<WallClock>,
}

fn zone_name(rs: &Ruleset, z: Option<ZoneId>) -> &str {
    z.and_then(|z| rs.zones.get(z))
        .map_or("-", |z| z.name.as_str())
}

impl Firewall {
    /// Compiles `rules` (checked with [`Ruleset::check`]).
    pub fn new(rules: Ruleset) -> Result<Firewall, RulesetError> {
        rules.check()?;
        let zones = rules.zones.len();
        let mut iface_zone = Vec::new();
        for (z, zone) in rules.zones.iter().enumerate() {
            for i in &zone.ifaces {
                let k = usize::from(i.0);
                if iface_zone.len() <= k {
                    iface_zone.resize(k + 1, None);
                }
                if let Some(slot) = iface_zone.get_mut(k) {
                    *slot = Some(z);
                }
            }
        }
        let (mut fwd_global, mut in_global) = (Vec::new(), Vec::new());
        let mut fwd_zone = alloc::vec![Vec::new(); zones];
        let mut in_zone = alloc::vec![Vec::new(); zones];
        for (k, r) in rules.rules.iter().enumerate() {
            let (global, per_zone) = match r.dest {
                Some(_) => (&mut fwd_global, &mut fwd_zone),
                None => (&mut in_global, &mut in_zone),
            };
            match r.src {
                ZoneSel::Any => global.push(k),
                ZoneSel::Zone(z) => {
                    if let Some(v) = per_zone.get_mut(z) {
                        v.push(k);
                    }
                }
            }
        }
        let mut zone_has_dnat = alloc::vec![false; zones];
        for r in &rules.redirects {
            for z in [Some(r.src), r.dest.filter(|_| r.reflection)]
                .into_iter()
                .flatten()
            {
                if let Some(f) = zone_has_dnat.get_mut(z) {
                    *f = true;
                }
            }
        }
        Ok(Firewall {
            rule_counters: alloc::vec![Counter::default(); rules.rules.len()],
            rule_buckets: rules
                .rules
                .iter()
                .map(|r| r.limit.map(Bucket::new))
                .collect(),
            fwd_counters: alloc::vec![Counter::default(); rules.forwardings.len()],
            zone_counters: alloc::vec![ZoneCounters::default(); zones],
            syn_bucket: rules.defaults.syn_flood.map(Bucket::new),
            iface_zone,
            fwd_global,
            fwd_zone,
            in_global,
            in_zone,
            zone_has_dnat,
            rules,
            stats: FwStats::default(),
            log: VecDeque::new(),
            log_bucket: Bucket::new(LOG_LIMIT),
            local: LocalFlows::new(),
            addrs: Vec::new(),
            clock: None,
        })
    }

    /// Swaps in a new ruleset, all or nothing: on error the running one stays. The
    /// counters restart; the router's own flows, the log and the interface addresses
    /// are kept (conntrack, outside, keeps the established flows).
    pub fn replace(&mut self, rules: Ruleset) -> Result<(), RulesetError> {
        let mut new = Firewall::new(rules)?;
        new.local = core::mem::take(&mut self.local);
        new.log = core::mem::take(&mut self.log);
        new.log_bucket = self.log_bucket.clone();
        new.addrs = core::mem::take(&mut self.addrs);
        new.clock = self.clock;
        new.stats.log_suppressed = self.stats.log_suppressed;
        *self = new;
        Ok(())
    }

    /// The ruleset.
    pub fn ruleset(&self) -> &Ruleset {
        &self.rules
    }

    /// The counters.
    pub fn stats(&self) -> &FwStats {
        &self.stats
    }

    /// The counter of rule `k` (in [`Ruleset::rules`] order).
    pub fn rule_counter(&self, k: usize) -> Option<Counter> {
        self.rule_counters.get(k).copied()
    }

    /// The counters of zone `z`.
    pub fn zone_counters(&self, z: ZoneId) -> Option<ZoneCounters> {
        self.zone_counters.get(z).copied()
    }

    /// The zone of an interface.
    pub fn zone_of(&self, ifc: IfId) -> Option<ZoneId> {
        self.iface_zone.get(usize::from(ifc.0)).copied().flatten()
    }

    /// Takes the log lines written since the last call.
    pub fn take_log(&mut self) -> Vec<String> {
        self.log.drain(..).collect()
    }

    /// Notes a packet the router itself sends (`ip`: its IPv4 packet), so that the
    /// replies are accepted as established on input.
    pub fn note_output(&mut self, ip: &[u8], now: Millis) {
        self.local.note(ip, now);
    }

    /// Notes the flow of a packet the router sends, by tuple ([`local::tuple_of`]):
    /// for a link that keeps tuples rather than packets until the firewall is at hand.
    pub fn note_output_tuple(&mut self, t: crate::flow::Tuple, now: Millis) {
        self.local.note_tuple(t, now);
    }

    /// Whether `ip`, arriving for the router, answers one of the router's own
    /// connections (or is an ICMP error about one).
    pub fn is_local_reply(&self, ip: &[u8], now: Millis) -> bool {
        self.local.is_reply(ip, now)
    }

    /// Sets (or clears) the wall clock time matches are judged by. Without one, a rule
    /// with a time match fails closed: a DROP or REJECT rule matches at any time, an
    /// ACCEPT rule never.
    pub fn set_wall_clock(&mut self, clock: Option<WallClock>) {
        self.clock = clock;
    }

    /// The wall clock, if known.
    pub fn wall_clock(&self) -> Option<WallClock> {
        self.clock
    }

    /// Whether a rule's time match (if any) holds at `now` by `clock`.
    fn time_ok(r: &Rule, clock: Option<WallClock>, now: Millis) -> bool {
        let Some(t) = r.time else {
            return true;
        };
        match clock {
            Some(c) => t.matches(c.unix_secs(now), c.utc_offset_secs),
            None => r.target != Verdict::Accept,
        }
    }

    /// Sets (or clears) the address of an interface, for port-forward reflection.
    pub fn set_iface_addr(&mut self, ifc: IfId, addr: Option<[u8; 4]>) {
        self.addrs.retain(|(i, _)| *i != ifc);
        if let Some(a) = addr {
            self.addrs.push((ifc, a));
        }
    }

    fn addr_of(&self, ifc: IfId) -> Option<[u8; 4]> {
        self.addrs.iter().find(|(i, _)| *i == ifc).map(|(_, a)| *a)
    }

    /// The port forwards as conntrack's DNAT rules: one per (source-zone interface,
    /// protocol); with reflection, one more per interface of the destination zone
    /// for each external address, SNATed to that interface's address.
    pub fn dnat_rules(&self) -> Vec<Dnat> {
        let mut v = Vec::new();
        for r in &self.rules.redirects {
            let Some(src_zone) = self.rules.zones.get(r.src) else {
                continue;
            };
            for &proto in &r.protos {
                let proto = match proto {
                    6 => crate::flow::Proto::Tcp,
                    17 => crate::flow::Proto::Udp,
                    _ => continue,
                };
                let rule = |input, dst, to, snat| Dnat {
                    input,
                    proto,
                    dst,
                    dport: r.src_dport.min,
                    dport_max: r.src_dport.max,
                    to: (to, r.dest_port.min),
                    src_ip: r.src_ip.clone(),
                    snat,
                    time: r.time,
                };
                // A forward to the router itself goes to the input interface's own
                // address (its stack's services), once that address is known.
                let to_router =
                    r.dest_ip == [0; 4] || self.addrs.iter().any(|(_, a)| *a == r.dest_ip);
                for &i in &src_zone.ifaces {
                    let to = if to_router {
                        self.addr_of(i)
                    } else {
                        Some(r.dest_ip)
                    };
                    if let Some(to) = to {
                        v.push(rule(i, r.src_dip, to, None));
                    }
                }
                let Some(dz) = r.dest.filter(|_| r.reflection && !to_router) else {
                    continue;
                };
                let Some(dest_zone) = self.rules.zones.get(dz) else {
                    continue;
                };
                for &lan in &dest_zone.ifaces {
                    let Some(lan_addr) = self.addr_of(lan) else {
                        continue;
                    };
                    let externals: Vec<[u8; 4]> = match r.src_dip {
                        Some(a) => alloc::vec![a],
                        None => src_zone
                            .ifaces
                            .iter()
                            .filter_map(|&i| self.addr_of(i))
                            .collect(),
                    };
                    for ext in externals {
                        v.push(rule(lan, Some(ext), r.dest_ip, Some(lan_addr)));
                    }
                }
            }
        }
        v
    }

    fn rule_matches(r: &Rule, p: &Packet) -> bool {
        if !r.protos.is_empty() && !r.protos.contains(&p.proto) {
            return false;
        }
        if let Some(v6) = p.v6 {
            return Self::rule_matches6(r, p, v6);
        }
        let x = &r.except;
        // IPv6 addresses only: an IPv6 rule (fw4 narrows the family so)
        if r.family == RuleFamily::Ipv6
            || other_family_only((&r.src_ip, &x.src_ip), (&r.src_ip6, &x.src_ip6))
            || other_family_only((&r.dest_ip, &x.dest_ip), (&r.dest_ip6, &x.dest_ip6))
        {
            return false;
        }
        in_list(&r.src_ip, &x.src_ip, |n| n.contains(p.src))
            && in_list(&r.dest_ip, &x.dest_ip, |n| n.contains(p.dst))
            && Self::mac_matches(r, p)
            && Self::ports_match(r, p)
            && icmp_matches(&r.icmp_type, p.icmp)
    }

    /// A rule's `src_mac` (plain and negated items) against the frame's source; a
    /// packet whose link source is unknown matches only a rule without `src_mac`.
    fn mac_matches(r: &Rule, p: &Packet) -> bool {
        if r.src_mac.is_empty() && r.except.src_mac.is_empty() {
            return true;
        }
        p.src_mac
            .is_some_and(|m| in_list(&r.src_mac, &r.except.src_mac, |k| *k == m))
    }

    /// A rule's ports (plain and negated) against the packet's; a rule with any port
    /// match never matches a packet without ports.
    fn ports_match(r: &Rule, p: &Packet) -> bool {
        let x = &r.except;
        if r.src_port.is_empty()
            && r.dest_port.is_empty()
            && x.src_port.is_empty()
            && x.dest_port.is_empty()
        {
            return true;
        }
        let Some((s, d)) = p.ports else {
            return false;
        };
        in_list(&r.src_port, &x.src_port, |pr| pr.contains(s))
            && in_list(&r.dest_port, &x.dest_port, |pr| pr.contains(d))
    }

    /// [`Self::rule_matches`] for an IPv6 packet (protocols already matched).
    fn rule_matches6(r: &Rule, p: &Packet, (src, dst): ([u8; 16], [u8; 16])) -> bool {
        let x = &r.except;
        // IPv4 addresses only: an IPv4 rule (fw4 narrows the family so)
        if r.family == RuleFamily::Ipv4
            || other_family_only((&r.src_ip6, &x.src_ip6), (&r.src_ip, &x.src_ip))
            || other_family_only((&r.dest_ip6, &x.dest_ip6), (&r.dest_ip, &x.dest_ip))
        {
            return false;
        }
        // a rule with ICMP (IPv4) types only matches no IPv6 packet
        let icmp_ok = if r.icmp6_type.is_empty() {
            r.icmp_type.is_empty()
        } else {
            icmp_matches(&r.icmp6_type, p.icmp)
        };
        in_list(&r.src_ip6, &x.src_ip6, |n| n.contains(src))
            && in_list(&r.dest_ip6, &x.dest_ip6, |n| n.contains(dst))
            && Self::mac_matches(r, p)
            && Self::ports_match(r, p)
            && icmp_ok
    }

    /// Tests the rules `list` (indices) in order; the first that matches (and is
    /// under its limit) decides.
    fn run_rules(
        &mut self,
        list: ListRef,
        p: &Packet,
        dest_zone: Option<ZoneId>,
        now: Millis,
    ) -> Option<Verdict> {
        let len = self.list(list).len();
        for n in 0..len {
            let Some(&k) = self.list(list).get(n) else {
                break;
            };
            let Some(r) = self.rules.rules.get(k) else {
                continue;
            };
            self.stats.rule_evaluations = self.stats.rule_evaluations.wrapping_add(1);
            let dest_ok = match r.dest {
                None | Some(ZoneSel::Any) => true,
                Some(ZoneSel::Zone(z)) => dest_zone == Some(z),
            };
            if !dest_ok || !Self::rule_matches(r, p) || !Self::time_ok(r, self.clock, now) {
                continue;
            }
            let target = r.target;
            if let Some(Some(b)) = self.rule_buckets.get_mut(k) {
                if !b.allow(now) {
                    continue;
                }
            }
            if let Some(c) = self.rule_counters.get_mut(k) {
                c.add(p.len);
            }
            return Some(target);
        }
        None
    }

    fn list(&self, l: ListRef) -> &[usize] {
        match l {
            ListRef::FwdGlobal => &self.fwd_global,
            ListRef::InGlobal => &self.in_global,
            ListRef::FwdZone(z) => self.fwd_zone.get(z).map_or(&[], |v| v.as_slice()),
            ListRef::InZone(z) => self.in_zone.get(z).map_or(&[], |v| v.as_slice()),
        }
    }

    /// A packet of a flow conntrack knows (established or related): accepted, counted,
    /// no rule looked at.
    pub fn forward_established(&mut self, len: usize) -> Verdict {
        self.stats.established.add(len);
        Verdict::Accept
    }

    /// What conntrack's state alone decides, counted: an established flow's packet is
    /// accepted, an invalid one dropped with `drop_invalid`; `None`: the rules decide.
    fn by_state(&mut self, p: &Packet, ct: CtState) -> Option<Verdict> {
        if ct == CtState::Established {
            self.stats.established.add(p.len);
            return Some(Verdict::Accept);
        }
        if ct == CtState::Invalid && self.rules.defaults.drop_invalid {
            self.stats.invalid.add(p.len);
            return Some(Verdict::Drop);
        }
        None
    }

    /// The forward chain for a packet from `input` to `output`.
    pub fn forward(
        &mut self,
        p: &Packet,
        input: IfId,
        output: IfId,
        ct: CtState,
        now: Millis,
    ) -> Verdict {
        if let Some(v) = self.by_state(p, ct) {
            return v;
        }
        let (sz, dz) = (self.zone_of(input), self.zone_of(output));
        let v = self.forward_rules(p, sz, dz, ct, now);
        if v != Verdict::Accept {
            self.log_line(v, sz, Chain::Forward, p, input, Some(output), now);
        }
        v
    }

    fn forward_rules(
        &mut self,
        p: &Packet,
        sz: Option<ZoneId>,
        dz: Option<ZoneId>,
        ct: CtState,
        now: Millis,
    ) -> Verdict {
        if let Some(v) = self.run_rules(ListRef::FwdGlobal, p, dz, now) {
            return v;
        }
        if let Some(s) = sz {
            if let Some(v) = self.run_rules(ListRef::FwdZone(s), p, dz, now) {
                return v;
            }
            if let Some(d) = dz {
                let hit = self
                    .rules
                    .forwardings
                    .iter()
                    .position(|f| f.src == s && f.dest == d);
                if let Some(k) = hit {
                    if let Some(c) = self.fwd_counters.get_mut(k) {
                        c.add(p.len);
                    }
                    return Verdict::Accept;
                }
            }
            if ct == CtState::Dnat && self.zone_has_dnat.get(s).copied().unwrap_or(false) {
                if let Some(c) = self.zone_counters.get_mut(s) {
                    c.dnat.add(p.len);
                }
                return Verdict::Accept;
            }
            if dz == Some(s) {
                if let (Some(z), Some(c)) = (self.rules.zones.get(s), self.zone_counters.get_mut(s))
                {
                    c.forward.add(p.len);
                    return z.forward;
                }
            }
        }
        self.stats.default_forward.add(p.len);
        self.rules.defaults.forward
    }

    /// The input chain for a packet to the router arriving by `input`.
    pub fn input(&mut self, p: &Packet, input: IfId, ct: CtState, now: Millis) -> Verdict {
        if let Some(v) = self.by_state(p, ct) {
            return v;
        }
        if p.is_tcp_syn() {
            if let Some(b) = self.syn_bucket.as_mut() {
                if !b.allow(now) {
                    self.stats.syn_flood.add(p.len);
                    return Verdict::Drop;
                }
            }
        }
        let sz = self.zone_of(input);
        let v = self.input_rules(p, sz, ct, now);
        if v != Verdict::Accept {
            self.log_line(v, sz, Chain::Input, p, input, None, now);
        }
        v
    }

    fn input_rules(&mut self, p: &Packet, sz: Option<ZoneId>, ct: CtState, now: Millis) -> Verdict {
        if let Some(v) = self.run_rules(ListRef::InGlobal, p, None, now) {
            return v;
        }
        if let Some(s) = sz {
            if let Some(v) = self.run_rules(ListRef::InZone(s), p, None, now) {
                return v;
            }
            // fw4's `ct status dnat accept` after the zone's input rules: a port
            // forward to the router itself.
            if ct == CtState::Dnat && self.zone_has_dnat.get(s).copied().unwrap_or(false) {
                if let Some(c) = self.zone_counters.get_mut(s) {
                    c.dnat.add(p.len);
                }
                return Verdict::Accept;
            }
            if let (Some(z), Some(c)) = (self.rules.zones.get(s), self.zone_counters.get_mut(s)) {
                c.input.add(p.len);
                return z.input;
            }
        }
        self.stats.default_input.add(p.len);
        self.rules.defaults.input
    }

    /// Whether frames that are not IPv4 (IPv6, ...) from `input` may reach the local
    /// stack: only from a zone whose input policy is ACCEPT (or from no zone when
    /// the defaults' is).
    pub fn allows_non_ipv4(&self, input: IfId) -> bool {
        let v = match self.zone_of(input).and_then(|z| self.rules.zones.get(z)) {
            Some(z) => z.input,
            None => self.rules.defaults.input,
        };
        v == Verdict::Accept
    }

    /// `fw` / `nft list ruleset`-style listing: the chains in the order they are
    /// evaluated, each rule with its packet and byte counters.
    pub fn listing(&self) -> String {
        let rs = &self.rules;
        let mut s = String::new();
        let d = &rs.defaults;
        let c = |c: Counter| format!("counter packets {} bytes {}", c.packets, c.bytes);
        let rule_line = |s: &mut String, k: usize, indent: &str| {
            let Some(r) = rs.rules.get(k) else { return };
            let dest = match r.dest {
                None => String::from("router"),
                Some(ZoneSel::Any) => String::from("*"),
                Some(ZoneSel::Zone(z)) => String::from(zone_name(rs, Some(z))),
            };
            let _ = write!(s, "{indent}# {} -> {}", r.name, dest);
            match r.family {
                RuleFamily::Any => {}
                RuleFamily::Ipv4 => s.push_str(" meta nfproto ipv4"),
                RuleFamily::Ipv6 => s.push_str(" meta nfproto ipv6"),
            }
            if !r.protos.is_empty() {
                let _ = write!(s, " proto {:?}", r.protos);
            }
            if !r.dest_port.is_empty() {
                let _ = write!(s, " dport");
                for p in &r.dest_port {
                    let _ = write!(s, " {}-{}", p.min, p.max);
                }
            }
            if !r.except.dest_port.is_empty() {
                let _ = write!(s, " dport !=");
                for p in &r.except.dest_port {
                    let _ = write!(s, " {}-{}", p.min, p.max);
                }
            }
            if r.time.is_some() {
                s.push_str(" meta time");
            }
            if let Some(l) = r.limit {
                let _ = write!(s, " limit {}/{}ms burst {}", l.rate, l.period_ms, l.burst);
            }
            let _ = writeln!(
                s,
                " {} {}",
                r.target.name(),
                c(self.rule_counters.get(k).copied().unwrap_or_default())
            );
        };
        let _ = writeln!(s, "table inet fw4 {{");
        let _ = writeln!(s, "\tchain input {{ # policy {}", d.input.name());
        let _ = writeln!(
            s,
            "\t\tct state established,related accept # shared with forward: {}",
            c(self.stats.established)
        );
        if d.drop_invalid {
            let _ = writeln!(s, "\t\tct state invalid drop {}", c(self.stats.invalid));
        }
        if let Some(l) = d.syn_flood {
            let _ = writeln!(
                s,
                "\t\tsyn_flood limit {}/{}ms burst {}: over it drop {}",
                l.rate,
                l.period_ms,
                l.burst,
                c(self.stats.syn_flood)
            );
        }
        for &k in &self.in_global {
            rule_line(&mut s, k, "\t\t");
        }
        for (z, zone) in rs.zones.iter().enumerate() {
            let _ = writeln!(s, "\t\tchain input_{} {{", zone.name);
            for &k in self.in_zone.get(z).map_or(&[][..], |v| v.as_slice()) {
                rule_line(&mut s, k, "\t\t\t");
            }
            let zc = self.zone_counters.get(z).copied().unwrap_or_default();
            let _ = writeln!(s, "\t\t\t{} {}", zone.input.name(), c(zc.input));
            let _ = writeln!(s, "\t\t}}");
        }
        let _ = writeln!(s, "\t\t{} {}", d.input.name(), c(self.stats.default_input));
        let _ = writeln!(s, "\t}}");
        let _ = writeln!(s, "\tchain forward {{ # policy {}", d.forward.name());
        if d.drop_invalid {
            let _ = writeln!(s, "\t\tct state invalid drop");
        }
        for &k in &self.fwd_global {
            rule_line(&mut s, k, "\t\t");
        }
        for (z, zone) in rs.zones.iter().enumerate() {
            let _ = writeln!(s, "\t\tchain forward_{} {{", zone.name);
            for &k in self.fwd_zone.get(z).map_or(&[][..], |v| v.as_slice()) {
                rule_line(&mut s, k, "\t\t\t");
            }
            for (k, f) in rs.forwardings.iter().enumerate() {
                if f.src == z {
                    let _ = writeln!(
                        s,
                        "\t\t\tjump accept_to_{} {}",
                        zone_name(rs, Some(f.dest)),
                        c(self.fwd_counters.get(k).copied().unwrap_or_default())
                    );
                }
            }
            let zc = self.zone_counters.get(z).copied().unwrap_or_default();
            if self.zone_has_dnat.get(z).copied().unwrap_or(false) {
                let _ = writeln!(s, "\t\t\tct status dnat accept {}", c(zc.dnat));
            }
            let _ = writeln!(
                s,
                "\t\t\tjump {}_to_{} {}",
                zone.forward.name(),
                zone.name,
                c(zc.forward)
            );
            let _ = writeln!(s, "\t\t}}");
        }
        let _ = writeln!(
            s,
            "\t\t{} {}",
            d.forward.name(),
            c(self.stats.default_forward)
        );
        let _ = writeln!(s, "\t}}");
        let _ = writeln!(s, "\tchain dstnat {{");
        for r in &rs.redirects {
            let _ = writeln!(
                s,
                "\t\t# {} from {} proto {:?} dport {}-{} dnat to {}:{}-{}{}",
                r.name,
                zone_name(rs, Some(r.src)),
                r.protos,
                r.src_dport.min,
                r.src_dport.max,
                Ipv4Addr::from(r.dest_ip),
                r.dest_port.min,
                r.dest_port.max,
                if r.reflection { " (reflection)" } else { "" }
            );
        }
        let _ = writeln!(s, "\t}}");
        for zone in &rs.zones {
            let names: Vec<&str> = zone.ifaces.iter().map(|&i| self.iface_name(i)).collect();
            let _ = writeln!(
                s,
                "\t# zone {}: devices {:?} input {} output {} forward {}{}{}",
                zone.name,
                names,
                zone.input.name(),
                zone.output.name(),
                zone.forward.name(),
                if zone.masq { " masq" } else { "" },
                if zone.mtu_fix { " mtu_fix" } else { "" }
            );
        }
        let _ = writeln!(s, "}}");
        s
    }

    fn iface_name(&self, ifc: IfId) -> &str {
        self.rules
            .iface_names
            .iter()
            .find(|(i, _)| *i == ifc)
            .map_or("?", |(_, n)| n.as_str())
    }

    #[allow(clippy::too_many_arguments)]
    fn log_line(
        &mut self,
        v: Verdict,
        zone: Option<ZoneId>,
        chain: Chain,
        p: &Packet,
        input: IfId,
        output: Option<IfId>,
        now: Millis,
    ) {
        if !self.log_bucket.allow(now) {
            self.stats.log_suppressed = self.stats.log_suppressed.wrapping_add(1);
            return;
        }
        let mut s = String::new();
        let chain = match chain {
            Chain::Input => "in",
            Chain::Forward => "forward",
        };
        let _ = write!(
            s,
            "{} {} {}: IN={}",
            v.name(),
            zone_name(&self.rules, zone),
            chain,
            self.iface_name(input)
        );
        if let Some(o) = output {
            let _ = write!(s, " OUT={}", self.iface_name(o));
        }
        let _ = match p.v6 {
            Some((a, b)) => write!(
                s,
                " SRC={} DST={} LEN={}",
                core::net::Ipv6Addr::from(a),
                core::net::Ipv6Addr::from(b),
                p.len
            ),
            None => write!(
                s,
                " SRC={} DST={} LEN={}",
                Ipv4Addr::from(p.src),
                Ipv4Addr::from(p.dst),
                p.len
            ),
        };
        match p.proto_name() {
            "" => {
                let _ = write!(s, " PROTO={}", p.proto);
            }
            n => {
                let _ = write!(s, " PROTO={n}");
            }
        }
        if let Some((sp, dp)) = p.ports {
            let _ = write!(s, " SPT={sp} DPT={dp}");
        }
        if let Some((t, c)) = p.icmp {
            let _ = write!(s, " TYPE={t} CODE={c}");
        }
        if self.log.len() >= LOG_LINES {
            self.log.pop_front();
        }
        self.log.push_back(s);
    }
}

/// One of the precomputed rule lists.
#[derive(Clone, Copy)]
enum ListRef {
    FwdGlobal,
    FwdZone(ZoneId),
    InGlobal,
    InZone(ZoneId),
}

/// Whether a rule's plain and negated address lists of one family (`own`) are empty
/// while those of the other family (`other`) are not: fw4 then narrows the rule to
/// the other family.
fn other_family_only<A, B>(own: (&[A], &[A]), other: (&[B], &[B])) -> bool {
    own.0.is_empty() && own.1.is_empty() && !(other.0.is_empty() && other.1.is_empty())
}

/// A rule's ICMP (or ICMPv6) types against the packet's type and code; an empty list
/// matches every packet, a non-empty one no packet without them.
fn icmp_matches(list: &[IcmpMatch], icmp: Option<(u8, u8)>) -> bool {
    if list.is_empty() {
        return true;
    }
    let Some((t, c)) = icmp else {
        return false;
    };
    list.iter()
        .any(|m| m.ty == t && m.code_min <= c && c <= m.code_max)
}

#[cfg(test)]
mod tests;
