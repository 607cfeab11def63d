//! The compiled ruleset: zones by interface id, rules with their matchers, policies.
//!
//! This is what firewall4 (openwrt/firewall4 `root/usr/share/ucode/fw4.uc`) makes of
//! `/etc/config/firewall` before it writes nftables, reduced to what the fast path
//! needs: names are resolved to indices ([`ZoneId`], [`IfId`]), `proto tcpudp` is a list
//! of numbers, ports are ranges. The `uci` crate's typed file is translated into this
//! elsewhere (the router does not depend on it); [`Ruleset::check`] refuses a ruleset
//! whose indices do not hold together, so a bad one never replaces a running one.

use alloc::string::String;
use alloc::vec::Vec;

use super::ratelimit::Limit;
use super::timematch::TimeMatch;
use crate::IfId;

/// A zone, by its index in [`Ruleset::zones`].
pub type ZoneId = usize;

/// A chain policy or a rule's target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Let it through.
    Accept,
    /// Refuse with a TCP reset or an ICMP port-unreachable (fw4's `handle_reject`).
    Reject,
    /// Drop silently.
    Drop,
}

impl Verdict {
    /// The nftables word (`accept`, `reject`, `drop`).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Accept => "accept",
            Verdict::Reject => "reject",
            Verdict::Drop => "drop",
        }
    }
}

/// An IPv4 prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Net4 {
    /// The address.
    pub addr: [u8; 4],
    /// Prefix length, 0..=32 (more is treated as 32).
    pub prefix_len: u8,
}

impl Net4 {
    /// Whether `ip` is inside.
    pub fn contains(&self, ip: [u8; 4]) -> bool {
        let len = u32::from(self.prefix_len.min(32));
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        u32::from_be_bytes(self.addr) & mask == u32::from_be_bytes(ip) & mask
    }
}

/// An IPv6 prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Net6 {
    /// The address.
    pub addr: [u8; 16],
    /// Prefix length, 0..=128 (more is treated as 128).
    pub prefix_len: u8,
}

impl Net6 {
    /// Whether `ip` is inside.
    pub fn contains(&self, ip: [u8; 16]) -> bool {
        let len = u32::from(self.prefix_len.min(128));
        let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
        u128::from_be_bytes(self.addr) & mask == u128::from_be_bytes(ip) & mask
    }
}

/// The IP versions a rule is for (fw4's `family`, narrowed by its addresses and
/// ICMP types as fw4 does).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RuleFamily {
    /// Both.
    #[default]
    Any,
    /// IPv4 only.
    Ipv4,
    /// IPv6 only.
    Ipv6,
}

/// An inclusive port range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    /// First port.
    pub min: u16,
    /// Last port.
    pub max: u16,
}

impl PortRange {
    /// Whether `p` is inside.
    pub fn contains(&self, p: u16) -> bool {
        self.min <= p && p <= self.max
    }
}

/// An ICMP type with a code range (`icmp_type echo-request`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpMatch {
    /// Type.
    pub ty: u8,
    /// Lowest code.
    pub code_min: u8,
    /// Highest code.
    pub code_max: u8,
}

/// A rule's `src` or `dest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneSel {
    /// `*`: any interface (and, for `src`, traffic from no zone too).
    Any,
    /// One zone.
    Zone(ZoneId),
}

/// `config rule`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// `name` (or a made-up `@rule[N]`), for listings and logs.
    pub name: String,
    /// Where the traffic comes from.
    pub src: ZoneSel,
    /// Where it goes: `None` is the router itself (the input chain).
    pub dest: Option<ZoneSel>,
    /// IP protocol numbers (empty: all).
    pub protos: Vec<u8>,
    /// Source prefixes (empty: any).
    pub src_ip: Vec<Net4>,
    /// Source Ethernet addresses (empty: any; never matches a packet whose link
    /// source is unknown).
    pub src_mac: Vec<[u8; 6]>,
    /// Destination prefixes (empty: any).
    pub dest_ip: Vec<Net4>,
    /// Source ports (empty: any; a port match never matches a packet without ports).
    pub src_port: Vec<PortRange>,
    /// Destination ports (same).
    pub dest_port: Vec<PortRange>,
    /// The negated (`!`) items of `src_ip`, `dest_ip`, `src_port`, `dest_port`,
    /// `src_mac` (and their IPv6 lists): a packet matching one of them does not
    /// match the rule.
    pub except: Except,
    /// ICMP types (empty: any; never matches anything but ICMP).
    pub icmp_type: Vec<IcmpMatch>,
    /// The IP versions it is for.
    pub family: RuleFamily,
    /// IPv6 source prefixes (empty: any; an IPv6 packet is matched against these,
    /// an IPv4 one against `src_ip`).
    pub src_ip6: Vec<Net6>,
    /// IPv6 destination prefixes.
    pub dest_ip6: Vec<Net6>,
    /// ICMPv6 types (an IPv6 packet is matched against these, never `icmp_type`).
    pub icmp6_type: Vec<IcmpMatch>,
    /// What to do with a match.
    pub target: Verdict,
    /// `limit`/`limit_burst`: above it the rule does not match.
    pub limit: Option<Limit>,
    /// `start_time`, `weekdays`, ...: outside them the rule does not match.
    pub time: Option<TimeMatch>,
}

/// The negated items of a [`Rule`]'s options (fw4's `!`: `ip saddr != { ... }`,
/// next to `ip saddr { ... }` of the option's plain items when it has both). A field
/// matches a packet that is in its plain list (or that list is empty) and in none of
/// these; a negated port match still needs ports, a negated `src_mac` a known link
/// source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Except {
    /// Source prefixes.
    pub src_ip: Vec<Net4>,
    /// IPv6 source prefixes.
    pub src_ip6: Vec<Net6>,
    /// Destination prefixes.
    pub dest_ip: Vec<Net4>,
    /// IPv6 destination prefixes.
    pub dest_ip6: Vec<Net6>,
    /// Source ports.
    pub src_port: Vec<PortRange>,
    /// Destination ports.
    pub dest_port: Vec<PortRange>,
    /// Source Ethernet addresses.
    pub src_mac: Vec<[u8; 6]>,
}

/// A field of a rule: in `plain` (if that is not empty) and in none of `except`.
pub fn in_list<T>(plain: &[T], except: &[T], hit: impl Fn(&T) -> bool) -> bool {
    (plain.is_empty() || plain.iter().any(&hit)) && !except.iter().any(&hit)
}

/// `config zone`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone {
    /// Name (`lan`).
    pub name: String,
    /// The router interfaces in the zone.
    pub ifaces: Vec<IfId>,
    /// Traffic to the router.
    pub input: Verdict,
    /// Traffic from the router (not enforced: see the module docs of `firewall`).
    pub output: Verdict,
    /// Traffic between interfaces of this zone.
    pub forward: Verdict,
    /// Masquerade what leaves by it.
    pub masq: bool,
    /// Clamp the TCP MSS of what crosses it.
    pub mtu_fix: bool,
}

/// `config forwarding`: new flows from `src` to `dest` are accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Forwarding {
    /// Source zone.
    pub src: ZoneId,
    /// Destination zone.
    pub dest: ZoneId,
}

/// `config redirect` with `target DNAT`: a port forward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// `name`.
    pub name: String,
    /// The zone the traffic arrives from.
    pub src: ZoneId,
    /// Protocols (6 and/or 17).
    pub protos: Vec<u8>,
    /// The external port(s).
    pub src_dport: PortRange,
    /// The external address (`src_dip`; none: any address arriving from `src`).
    pub src_dip: Option<[u8; 4]>,
    /// Source prefixes allowed (empty: any).
    pub src_ip: Vec<Net4>,
    /// The zone of the internal host (for reflection: the zone whose clients get NAT
    /// loopback).
    pub dest: Option<ZoneId>,
    /// The internal host; the router itself if it is one of the router's addresses
    /// or 0.0.0.0 (fw4's `redirect` without `dest_ip`): the flow is then delivered
    /// locally, at the address of the interface it came in on (the router's
    /// services listen per interface), and accepted by the input chain as fw4's
    /// `ct status dnat accept` does.
    pub dest_ip: [u8; 4],
    /// The internal port(s): the first maps to `src_dport.min`, the rest in step.
    pub dest_port: PortRange,
    /// NAT reflection for clients in `dest`.
    pub reflection: bool,
    /// Time match (the forward and its reflection apply only inside it).
    pub time: Option<TimeMatch>,
}

/// `config defaults`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Defaults {
    /// Input policy when no zone decides.
    pub input: Verdict,
    /// Output policy (not enforced).
    pub output: Verdict,
    /// Forward policy when no zone/forwarding/rule decides.
    pub forward: Verdict,
    /// `syn_flood`: the SYN limit on input.
    pub syn_flood: Option<Limit>,
    /// `drop_invalid`.
    pub drop_invalid: bool,
}

impl Default for Defaults {
    fn default() -> Defaults {
        Defaults {
            input: Verdict::Drop,
            output: Verdict::Drop,
            forward: Verdict::Drop,
            syn_flood: None,
            drop_invalid: false,
        }
    }
}

/// A whole firewall.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ruleset {
    /// Defaults.
    pub defaults: Defaults,
    /// Zones.
    pub zones: Vec<Zone>,
    /// Forwardings.
    pub forwardings: Vec<Forwarding>,
    /// Rules in file order.
    pub rules: Vec<Rule>,
    /// Port forwards.
    pub redirects: Vec<Redirect>,
    /// Interface names, for logs (`IN=eth1`).
    pub iface_names: Vec<(IfId, String)>,
}

/// Why a [`Ruleset`] was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RulesetError {
    /// An interface is in two zones.
    IfaceInTwoZones(IfId),
    /// A zone index out of range (in the named rule/forwarding/redirect).
    NoSuchZone(String),
    /// A redirect's internal port range is not as wide as its external one.
    RedirectPortRange(String),
    /// Too many of something (each list is capped to keep the tables small).
    TooMany(&'static str),
}

/// Most rules, zones, redirects a ruleset may have.
pub const MAX_ENTRIES: usize = 4096;

impl Ruleset {
    /// The zone `ifc` is in.
    pub fn zone_of(&self, ifc: IfId) -> Option<ZoneId> {
        self.zones.iter().position(|z| z.ifaces.contains(&ifc))
    }

    /// The zone called `name`.
    pub fn zone_named(&self, name: &str) -> Option<ZoneId> {
        self.zones.iter().position(|z| z.name == name)
    }

    /// Checks that every index is in range and each interface is in one zone.
    pub fn check(&self) -> Result<(), RulesetError> {
        let n = self.zones.len();
        for (what, len) in [
            ("zones", n),
            ("rules", self.rules.len()),
            ("forwardings", self.forwardings.len()),
            ("redirects", self.redirects.len()),
        ] {
            if len > MAX_ENTRIES {
                return Err(RulesetError::TooMany(what));
            }
        }
        let mut seen: Vec<IfId> = Vec::new();
        for z in &self.zones {
            for i in &z.ifaces {
                if seen.contains(i) {
                    return Err(RulesetError::IfaceInTwoZones(*i));
                }
                seen.push(*i);
            }
        }
        let ok = |s: ZoneSel| match s {
            ZoneSel::Any => true,
            ZoneSel::Zone(z) => z < n,
        };
        for r in &self.rules {
            if !ok(r.src) || !r.dest.is_none_or(ok) {
                return Err(RulesetError::NoSuchZone(r.name.clone()));
            }
        }
        for f in &self.forwardings {
            if f.src >= n || f.dest >= n {
                return Err(RulesetError::NoSuchZone(alloc::format!(
                    "forwarding {}->{}",
                    f.src,
                    f.dest
                )));
            }
        }
        for r in &self.redirects {
            if r.src >= n || r.dest.is_some_and(|d| d >= n) {
                return Err(RulesetError::NoSuchZone(r.name.clone()));
            }
            if r.src_dport.min > r.src_dport.max
                || r.dest_port.min > r.dest_port.max
                || r.dest_port.max - r.dest_port.min != r.src_dport.max - r.src_dport.min
            {
                return Err(RulesetError::RedirectPortRange(r.name.clone()));
            }
        }
        Ok(())
    }
}
