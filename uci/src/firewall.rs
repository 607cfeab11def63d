//! `/etc/config/firewall`: firewall4's defaults, zones, forwardings, rules, redirects.
//!
//! Follows openwrt/firewall4 `root/usr/share/ucode/fw4.uc`: `parse_defaults`,
//! `parse_zone`, `parse_forwarding`, `parse_rule`, `parse_redirect` for the options and
//! their defaults, and its value parsers (`parse_policy`/`parse_enum` accept any
//! case-insensitive prefix, `parse_family`, `parse_protocol`, `parse_port`,
//! `parse_icmptype` with the `ipv4_icmptypes`/`ipv6_icmptypes` tables, `parse_limit`).
//! Options that take lists accept `list` lines or a space-separated `option`, as fw4's
//! `PARSE_LIST` does. Rules and redirects default to `proto tcpudp`; rule `target`
//! defaults to DROP, redirect `target` to DNAT, zone policies to the defaults section's.
//!
//! A rule's `src_mac`, its negated (`!`) addresses, ports and MACs, and its time matches
//! ([`time`]: `start_date`, `stop_date`, `start_time`, `stop_time`, `weekdays`,
//! `monthdays`, `utc_time`) are matched. Not modelled: negation of other options,
//! mark/ipset/helper matches (and `src_mac` in a redirect), the
//! NOTRACK, HELPER, MARK, DSCP targets. An
//! ACCEPT rule or a redirect using one is left out with a warning (ignoring a match
//! would make it match more than it says); a DROP or REJECT rule using one refuses
//! the file (leaving it out would let through what it stops). `include` sections are
//! warned about and ignored. Other unknown options warn, as fw4 does.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr};
use core::str::FromStr;

pub mod time;

/// Port ranges (`1000-2000`; one port is `min == max`) and ICMP types with a code
/// range, as the router matches them.
pub use xenlet_router::firewall::ruleset::{IcmpMatch, PortRange};
/// A rule's time options (see [`time`]), as the router matches them.
pub use xenlet_router::firewall::timematch::{DaySet, TimeMatch};

use crate::model::Package;
use crate::validate::{parse_uint, Checked, ConfigError, Diagnostic, SectionReader};

/// A chain policy or rule verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Let it through.
    Accept,
    /// Drop with an ICMP/TCP-reset reply.
    Reject,
    /// Drop silently.
    Drop,
}

/// Address family restriction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Both (the default).
    Any,
    /// IPv4 only.
    Ipv4,
    /// IPv6 only.
    Ipv6,
}

/// Unit of a rate limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitUnit {
    /// Per second.
    Second,
    /// Per minute.
    Minute,
    /// Per hour.
    Hour,
    /// Per day.
    Day,
}

/// A rate limit, `10/second`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Events per unit.
    pub rate: u32,
    /// The unit.
    pub unit: LimitUnit,
}

/// `config defaults`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defaults {
    /// Input chain policy (default DROP).
    pub input: Policy,
    /// Output chain policy (default DROP).
    pub output: Policy,
    /// Forward chain policy (default DROP).
    pub forward: Policy,
    /// SYN flood protection (`syn_flood` or `synflood_protect`).
    pub syn_flood: bool,
    /// Drop packets conntrack calls invalid.
    pub drop_invalid: bool,
    /// SYN flood rate (default 25/second).
    pub synflood_rate: Limit,
    /// SYN flood burst (default 50).
    pub synflood_burst: u32,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            input: Policy::Drop,
            output: Policy::Drop,
            forward: Policy::Drop,
            syn_flood: false,
            drop_invalid: false,
            synflood_rate: Limit {
                rate: 25,
                unit: LimitUnit::Second,
            },
            synflood_burst: 50,
        }
    }
}

/// `config zone`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Zone {
    /// Zone name (`lan`), at most 11 characters as fw4 requires.
    pub name: String,
    /// The network interfaces (`/etc/config/network` section names) in the zone.
    pub networks: Vec<String>,
    /// Policy for traffic to the router from this zone.
    pub input: Policy,
    /// Policy for traffic from the router to this zone.
    pub output: Policy,
    /// Policy for traffic between interfaces of this zone / from it, unmatched.
    pub forward: Policy,
    /// Masquerade (source NAT) traffic leaving through this zone.
    pub masq: bool,
    /// Clamp TCP MSS to the path MTU.
    pub mtu_fix: bool,
    /// Family restriction.
    pub family: Family,
}

/// `config forwarding`: allow new connections from `src` zone to `dest` zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forwarding {
    /// Source zone.
    pub src: String,
    /// Destination zone.
    pub dest: String,
    /// Family restriction.
    pub family: Family,
}

/// A zone reference in a rule: a name or `*` (any zone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZoneRef {
    /// `*`.
    Any,
    /// A zone by name.
    Zone(String),
}

/// A protocol match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `all`, `any`, `*`: every protocol.
    All,
    /// A protocol number (6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6, ...).
    Number(u8),
}

/// TCP's protocol number.
pub const TCP: Protocol = Protocol::Number(6);
/// UDP's protocol number.
pub const UDP: Protocol = Protocol::Number(17);
/// ICMP's protocol number.
pub const ICMP: Protocol = Protocol::Number(1);

/// An address or prefix, IPv4 or IPv6.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpNet {
    /// The address.
    pub addr: IpAddr,
    /// Prefix length (32/128 for a host).
    pub prefix_len: u8,
}

/// An `icmp_type` value resolved for each family (a name may exist in one or both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpType {
    /// Meaning for ICMP (IPv4).
    pub v4: Option<IcmpMatch>,
    /// Meaning for ICMPv6.
    pub v6: Option<IcmpMatch>,
}

/// `config rule`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// `name`, for messages.
    pub name: Option<String>,
    /// Source zone (`None`: from the router itself).
    pub src: Option<ZoneRef>,
    /// Destination zone (`None`: to the router itself).
    pub dest: Option<ZoneRef>,
    /// Protocols (default TCP and UDP).
    pub proto: Vec<Protocol>,
    /// Source addresses (empty: any).
    pub src_ip: Vec<IpNet>,
    /// `src_ip`'s negated (`!`) items: no address of these (as fw4's `ip saddr !=`,
    /// next to the plain items' `ip saddr`).
    pub src_ip_not: Vec<IpNet>,
    /// Source Ethernet addresses (`src_mac`; empty: any).
    pub src_mac: Vec<[u8; 6]>,
    /// `src_mac`'s negated items.
    pub src_mac_not: Vec<[u8; 6]>,
    /// Destination addresses (empty: any).
    pub dest_ip: Vec<IpNet>,
    /// `dest_ip`'s negated items.
    pub dest_ip_not: Vec<IpNet>,
    /// Source ports (empty: any).
    pub src_port: Vec<PortRange>,
    /// `src_port`'s negated items.
    pub src_port_not: Vec<PortRange>,
    /// Destination ports (empty: any).
    pub dest_port: Vec<PortRange>,
    /// `dest_port`'s negated items.
    pub dest_port_not: Vec<PortRange>,
    /// ICMP types (empty: any).
    pub icmp_type: Vec<IcmpType>,
    /// Family restriction.
    pub family: Family,
    /// Verdict (default DROP).
    pub target: Policy,
    /// Rate limit.
    pub limit: Option<Limit>,
    /// Burst for the limit.
    pub limit_burst: Option<u32>,
    /// Time matches (`start_time`, `weekdays`, ...; none: any time).
    pub time: Option<TimeMatch>,
}

/// `config redirect` (a DNAT port forward, or SNAT).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// `name`, for messages.
    pub name: Option<String>,
    /// Zone the traffic comes from.
    pub src: Option<String>,
    /// External destination ports matched.
    pub src_dport: Vec<PortRange>,
    /// External destination address matched (`src_dip`).
    pub src_dip: Option<Ipv4Addr>,
    /// Source addresses matched.
    pub src_ip: Vec<IpNet>,
    /// Zone the traffic is sent to.
    pub dest: Option<String>,
    /// Internal address to rewrite to.
    pub dest_ip: Option<Ipv4Addr>,
    /// Internal port (range) to rewrite to.
    pub dest_port: Option<PortRange>,
    /// Protocols (default TCP and UDP).
    pub proto: Vec<Protocol>,
    /// DNAT (default) or SNAT.
    pub target: RedirectTarget,
    /// NAT loopback for internal clients (default on).
    pub reflection: bool,
    /// Time matches (none: any time).
    pub time: Option<TimeMatch>,
    /// Family restriction.
    pub family: Family,
}

/// A redirect's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectTarget {
    /// Destination NAT (port forward).
    Dnat,
    /// Source NAT.
    Snat,
}

/// The typed `/etc/config/firewall`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FirewallConfig {
    /// Global defaults.
    pub defaults: Defaults,
    /// Zones, in order.
    pub zones: Vec<Zone>,
    /// Forwardings, in order.
    pub forwardings: Vec<Forwarding>,
    /// Rules, in order (the order they match in).
    pub rules: Vec<Rule>,
    /// Redirects, in order.
    pub redirects: Vec<Redirect>,
}

impl FirewallConfig {
    /// The zone called `name`.
    pub fn zone(&self, name: &str) -> Option<&Zone> {
        self.zones.iter().find(|z| z.name == name)
    }
}

/// fw4's `parse_enum`: the first choice that `val` is a case-insensitive prefix of.
fn parse_enum<T: Copy>(val: &str, choices: &[(&str, T)]) -> Option<T> {
    if val.is_empty() {
        return None;
    }
    let val = val.to_ascii_lowercase();
    choices
        .iter()
        .find(|(c, _)| c.starts_with(val.as_str()))
        .map(|&(_, t)| t)
}

fn parse_policy(v: &str) -> Option<Policy> {
    parse_enum(
        v,
        &[
            ("accept", Policy::Accept),
            ("reject", Policy::Reject),
            ("drop", Policy::Drop),
        ],
    )
}

/// fw4's `parse_family`.
fn parse_family(v: &str) -> Option<Family> {
    match v {
        "any" | "all" | "*" => Some(Family::Any),
        _ if v == "inet" || v.contains('4') => Some(Family::Ipv4),
        _ if v.contains('6') => Some(Family::Ipv6),
        _ => None,
    }
}

/// fw4's `parse_limit`: `N[/unit]`, unit a prefix of second/minute/hour/day.
fn parse_limit(v: &str) -> Option<Limit> {
    let (n, unit) = match v.split_once('/') {
        Some((n, u)) => {
            if u.is_empty() || !u.bytes().all(|c| c.is_ascii_lowercase()) {
                return None;
            }
            let unit = parse_enum(
                u,
                &[
                    ("second", LimitUnit::Second),
                    ("minute", LimitUnit::Minute),
                    ("hour", LimitUnit::Hour),
                    ("day", LimitUnit::Day),
                ],
            )?;
            (n, unit)
        }
        None => (v, LimitUnit::Second),
    };
    Some(Limit {
        rate: parse_uint(n)?,
        unit,
    })
}

/// Protocol names from `/etc/protocols` that firewall configs use.
const PROTOCOL_NAMES: &[(&str, u8)] = &[
    ("icmp", 1),
    ("igmp", 2),
    ("ipip", 4),
    ("tcp", 6),
    ("egp", 8),
    ("udp", 17),
    ("ipv6", 41),
    ("rsvp", 46),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("icmpv6", 58),
    ("ipv6-icmp", 58),
    ("ospf", 89),
    ("ospfigp", 89),
    ("pim", 103),
    ("vrrp", 112),
    ("l2tp", 115),
    ("sctp", 132),
    ("udplite", 136),
];

/// fw4's `parse_protocol` for one word; `tcpudp` is two protocols.
fn parse_protocols(v: &str) -> Option<Vec<Protocol>> {
    let v = v.to_ascii_lowercase();
    match v.as_str() {
        "all" | "any" | "*" => Some(alloc::vec![Protocol::All]),
        "tcpudp" => Some(alloc::vec![TCP, UDP]),
        n => match parse_uint::<u8>(n) {
            Some(num) => Some(alloc::vec![Protocol::Number(num)]),
            None => PROTOCOL_NAMES
                .iter()
                .find(|(name, _)| *name == n)
                .map(|&(_, num)| alloc::vec![Protocol::Number(num)]),
        },
    }
}

/// fw4's `parse_port`: `N`, `N-M` or `N:M`.
fn parse_port(v: &str) -> Option<PortRange> {
    let (a, b) = match v.split_once(['-', ':']) {
        Some((a, b)) => (a, b),
        None => (v, v),
    };
    let (min, max) = (parse_uint::<u16>(a)?, parse_uint::<u16>(b)?);
    (min <= max).then_some(PortRange { min, max })
}

/// An address or `addr/len` (IPv4 also `addr/netmask`), either family.
fn parse_ipnet(v: &str) -> Option<IpNet> {
    let (a, len) = match v.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (v, None),
    };
    let addr = IpAddr::from_str(a).ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix_len = match len {
        None => max,
        Some(l) => match parse_uint::<u8>(l) {
            Some(n) => n,
            None => match (addr, Ipv4Addr::from_str(l)) {
                (IpAddr::V4(_), Ok(mask)) => crate::network::netmask_to_prefix(mask)?,
                _ => return None,
            },
        },
    };
    (prefix_len <= max).then_some(IpNet { addr, prefix_len })
}

type IcmpEntry = (&'static str, u8, u8, u8);

/// fw4's `ipv4_icmptypes`: name, type, code min, code max.
const IPV4_ICMP: &[IcmpEntry] = &[
    ("any", 0xFF, 0, 0xFF),
    ("echo-reply", 0, 0, 0xFF),
    ("pong", 0, 0, 0xFF),
    ("destination-unreachable", 3, 0, 0xFF),
    ("network-unreachable", 3, 0, 0),
    ("host-unreachable", 3, 1, 1),
    ("protocol-unreachable", 3, 2, 2),
    ("port-unreachable", 3, 3, 3),
    ("fragmentation-needed", 3, 4, 4),
    ("source-route-failed", 3, 5, 5),
    ("network-unknown", 3, 6, 6),
    ("host-unknown", 3, 7, 7),
    ("network-prohibited", 3, 9, 9),
    ("host-prohibited", 3, 10, 10),
    ("TOS-network-unreachable", 3, 11, 11),
    ("TOS-host-unreachable", 3, 12, 12),
    ("communication-prohibited", 3, 13, 13),
    ("host-precedence-violation", 3, 14, 14),
    ("precedence-cutoff", 3, 15, 15),
    ("source-quench", 4, 0, 0xFF),
    ("redirect", 5, 0, 0xFF),
    ("network-redirect", 5, 0, 0),
    ("host-redirect", 5, 1, 1),
    ("TOS-network-redirect", 5, 2, 2),
    ("TOS-host-redirect", 5, 3, 3),
    ("echo-request", 8, 0, 0xFF),
    ("ping", 8, 0, 0xFF),
    ("router-advertisement", 9, 0, 0xFF),
    ("router-solicitation", 10, 0, 0xFF),
    ("time-exceeded", 11, 0, 0xFF),
    ("ttl-exceeded", 11, 0, 0xFF),
    ("ttl-zero-during-transit", 11, 0, 0),
    ("ttl-zero-during-reassembly", 11, 1, 1),
    ("parameter-problem", 12, 0, 0xFF),
    ("ip-header-bad", 12, 0, 0),
    ("required-option-missing", 12, 1, 1),
    ("timestamp-request", 13, 0, 0xFF),
    ("timestamp-reply", 14, 0, 0xFF),
    ("address-mask-request", 17, 0, 0xFF),
    ("address-mask-reply", 18, 0, 0xFF),
];

/// fw4's `ipv6_icmptypes`.
const IPV6_ICMP: &[IcmpEntry] = &[
    ("destination-unreachable", 1, 0, 0xFF),
    ("no-route", 1, 0, 0),
    ("communication-prohibited", 1, 1, 1),
    ("address-unreachable", 1, 3, 3),
    ("port-unreachable", 1, 4, 4),
    ("packet-too-big", 2, 0, 0xFF),
    ("time-exceeded", 3, 0, 0xFF),
    ("ttl-exceeded", 3, 0, 0xFF),
    ("ttl-zero-during-transit", 3, 0, 0),
    ("ttl-zero-during-reassembly", 3, 1, 1),
    ("parameter-problem", 4, 0, 0xFF),
    ("bad-header", 4, 0, 0),
    ("unknown-header-type", 4, 1, 1),
    ("unknown-option", 4, 2, 2),
    ("echo-request", 128, 0, 0xFF),
    ("ping", 128, 0, 0xFF),
    ("echo-reply", 129, 0, 0xFF),
    ("pong", 129, 0, 0xFF),
    ("multicast-listener-query", 130, 0, 0xFF),
    ("multicast-listener-report", 131, 0, 0xFF),
    ("multicast-listener-done", 132, 0, 0xFF),
    ("router-solicitation", 133, 0, 0xFF),
    ("router-advertisement", 134, 0, 0xFF),
    ("neighbour-solicitation", 135, 0, 0xFF),
    ("neighbor-solicitation", 135, 0, 0xFF),
    ("neighbour-advertisement", 136, 0, 0xFF),
    ("neighbor-advertisement", 136, 0, 0xFF),
    ("redirect", 137, 0, 0xFF),
    ("router-renumbering", 138, 0, 0xFF),
    ("node-info-query", 139, 0, 0xFF),
    ("node-info-response", 140, 0, 0xFF),
    (
        "inverse-neighbour-discovery-solicitation-message",
        141,
        0,
        0xFF,
    ),
    (
        "inverse-neighbor-discovery-solicitation-message",
        141,
        0,
        0xFF,
    ),
    (
        "inverse-neighbour-discovery-advertisement-message",
        142,
        0,
        0xFF,
    ),
    (
        "inverse-neighbor-discovery-advertisement-message",
        142,
        0,
        0xFF,
    ),
    ("v2-multicast-listener-report", 143, 0, 0xFF),
    ("home-agent-address-discovery-request-message", 144, 0, 0xFF),
    ("home-agent-address-discovery-reply-message", 145, 0, 0xFF),
];

/// fw4's `parse_icmptype`: a name from either table, or `type[/code]`.
fn parse_icmp_type(v: &str) -> Option<IcmpType> {
    let find = |t: &[IcmpEntry]| {
        t.iter()
            .find(|e| e.0 == v)
            .map(|&(_, ty, code_min, code_max)| IcmpMatch {
                ty,
                code_min,
                code_max,
            })
    };
    let (v4, v6) = (find(IPV4_ICMP), find(IPV6_ICMP));
    if v4.is_some() || v6.is_some() {
        return Some(IcmpType { v4, v6 });
    }
    let (ty, code) = match v.split_once('/') {
        Some((t, c)) => (parse_uint::<u8>(t)?, Some(parse_uint::<u8>(c)?)),
        None => (parse_uint::<u8>(v)?, None),
    };
    let m = IcmpMatch {
        ty,
        code_min: code.unwrap_or(0),
        code_max: code.unwrap_or(0xFF),
    };
    Some(IcmpType {
        v4: Some(m),
        v6: Some(m),
    })
}

/// fw4 requires zone names of at most 11 characters, `[A-Za-z0-9_]`.
fn parse_zone_name(v: &str) -> Option<String> {
    (!v.is_empty() && v.len() <= 11 && v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_'))
        .then(|| v.to_string())
}

/// Match options fw4 supports that Xenlet does not: a rule or redirect using one is left
/// out rather than made to match more than it says.
const UNSUPPORTED_MATCHES: &[&str] = &[
    "src_mac",
    "mark",
    "ipset",
    "helper",
    "dscp",
    "device",
    "direction",
    "extra",
    "set_mark",
    "set_xmark",
    "set_dscp",
    "set_helper",
    "src_dip",
    "reflection_src",
    "reflection_zone",
];

/// Options with no effect on matching that Xenlet accepts and does not use.
const COSMETIC: &[&str] = &["log", "log_limit", "counter"];

/// Reads `/etc/config/firewall`.
pub fn firewall(p: &Package) -> Result<Checked<FirewallConfig>, ConfigError> {
    let mut cfg = FirewallConfig::default();
    let mut warnings: Vec<Diagnostic> = Vec::new();
    let mut notes: Vec<Diagnostic> = Vec::new();
    let mut seen_defaults = false;
    // fw4 reads defaults first (zone policies default to them), then the rest in order.
    for (idx, s) in p.sections.iter().enumerate() {
        if s.section_type != "defaults" {
            continue;
        }
        let mut r = SectionReader::new(p, idx, s);
        if seen_defaults {
            warnings.push(r.about_section("ignoring duplicate defaults section".into()));
            continue;
        }
        seen_defaults = true;
        let d = &mut cfg.defaults;
        d.input = r
            .parse("input", "a policy (ACCEPT, REJECT, DROP)", parse_policy)?
            .unwrap_or(d.input);
        d.output = r
            .parse("output", "a policy (ACCEPT, REJECT, DROP)", parse_policy)?
            .unwrap_or(d.output);
        d.forward = r
            .parse("forward", "a policy (ACCEPT, REJECT, DROP)", parse_policy)?
            .unwrap_or(d.forward);
        d.drop_invalid = r.boolean("drop_invalid", false)?;
        let syn_flood = r.boolean("syn_flood", false)?;
        d.syn_flood = r.boolean("synflood_protect", syn_flood)?;
        d.synflood_rate = r
            .parse("synflood_rate", "a rate limit (N/second)", parse_limit)?
            .unwrap_or(d.synflood_rate);
        d.synflood_burst = r
            .parse("synflood_burst", "a number", parse_uint::<u32>)?
            .unwrap_or(d.synflood_burst);
        r.ignore(&[
            "tcp_reject_code",
            "any_reject_code",
            "tcp_syncookies",
            "tcp_ecn",
            "tcp_window_scaling",
            "accept_redirects",
            "accept_source_route",
            "auto_helper",
            "custom_chains",
            "disable_ipv6",
            "flow_offloading",
            "flow_offloading_hw",
            "auto_includes",
        ]);
        r.finish(&mut warnings);
    }
    for (idx, s) in p.sections.iter().enumerate() {
        let mut r = SectionReader::new(p, idx, s);
        match s.section_type.as_str() {
            "defaults" => {}
            "zone" => {
                if !r.boolean("enabled", true)? {
                    notes.push(r.about_section("is disabled, ignoring section".into()));
                    continue;
                }
                let Some(name) = r.parse(
                    "name",
                    "a zone name (at most 11 of [A-Za-z0-9_])",
                    parse_zone_name,
                )?
                else {
                    return Err(r.error("name", "missing (a zone needs a name)".into()));
                };
                let d = &cfg.defaults;
                let zone = Zone {
                    name,
                    networks: r.items("network").into_iter().map(str::to_string).collect(),
                    input: r
                        .parse("input", "a policy (ACCEPT, REJECT, DROP)", parse_policy)?
                        .unwrap_or(d.input),
                    output: r
                        .parse("output", "a policy (ACCEPT, REJECT, DROP)", parse_policy)?
                        .unwrap_or(d.output),
                    forward: r
                        .parse("forward", "a policy (ACCEPT, REJECT, DROP)", parse_policy)?
                        .unwrap_or(d.forward),
                    masq: r.boolean("masq", false)?,
                    mtu_fix: r.boolean("mtu_fix", false)?,
                    family: r
                        .parse("family", "a family (ipv4, ipv6, any)", parse_family)?
                        .unwrap_or(Family::Any),
                };
                r.ignore(&[
                    "log",
                    "log_limit",
                    "auto_helper",
                    "counter",
                    "masq_allow_invalid",
                    "masq6",
                ]);
                r.finish(&mut warnings);
                cfg.zones.push(zone);
            }
            "forwarding" => {
                if !r.boolean("enabled", true)? {
                    continue;
                }
                let (Some(src), Some(dest)) = (r.single("src")?, r.single("dest")?) else {
                    return Err(r.about_section("a forwarding needs 'src' and 'dest'".into()));
                };
                let fwd = Forwarding {
                    src: src.to_string(),
                    dest: dest.to_string(),
                    family: r
                        .parse("family", "a family (ipv4, ipv6, any)", parse_family)?
                        .unwrap_or(Family::Any),
                };
                r.ignore(&["name", "log", "log_limit"]);
                r.finish(&mut warnings);
                cfg.forwardings.push(fwd);
            }
            "rule" => {
                if !r.boolean("enabled", true)? {
                    notes.push(r.about_section("is disabled, ignoring section".into()));
                } else if let Some(rule) = read_rule(&mut r, &mut warnings)? {
                    r.ignore(COSMETIC);
                    r.finish(&mut warnings);
                    cfg.rules.push(rule);
                }
            }
            "redirect" => {
                if !r.boolean("enabled", true)? {
                    notes.push(r.about_section("is disabled, ignoring section".into()));
                } else if let Some(redir) = read_redirect(&mut r, &mut warnings)? {
                    r.ignore(COSMETIC);
                    r.finish(&mut warnings);
                    cfg.redirects.push(redir);
                }
            }
            "include" => {
                warnings.push(r.about_section("includes are not supported, ignored".into()))
            }
            t @ ("ipset" | "nat" | "helper" | "snat") => {
                warnings.push(r.about_section(format!("'{t}' sections are not supported, ignored")))
            }
            t => warnings.push(r.about_section(format!("unknown section type '{t}', ignored"))),
        }
    }
    for z in &cfg.zones {
        if cfg.zones.iter().filter(|o| o.name == z.name).count() > 1 {
            return Err(ConfigError {
                file: crate::validate::file_of(p),
                section: format!("zone '{}'", z.name),
                option: Some("name".into()),
                message: "duplicate zone name".into(),
            });
        }
    }
    Ok(Checked {
        config: cfg,
        warnings,
        notes,
    })
}

/// Whether any option uses negation or an unsupported match (other than `allowed`);
/// warns and returns true.
fn unsupported(
    r: &mut SectionReader<'_>,
    warnings: &mut Vec<Diagnostic>,
    allowed: &[&str],
) -> bool {
    match unsupported_option(r, allowed) {
        Some((name, what)) => {
            warnings.push(r.error(
                &name,
                format!("{what} not supported by Xenlet, section ignored"),
            ));
            true
        }
        None => false,
    }
}

/// The first option that uses an unsupported match (other than `allowed`) or
/// negation (other than in `allowed`, which a rule allows for its addresses and
/// ports), and what it is.
fn unsupported_option(r: &SectionReader<'_>, allowed: &[&str]) -> Option<(String, &'static str)> {
    let s = r.section();
    let is_unsupported = |n: &str| UNSUPPORTED_MATCHES.contains(&n) && !allowed.contains(&n);
    if let Some(o) = s.options.iter().find(|o| is_unsupported(&o.name)) {
        return Some((o.name.clone(), "match"));
    }
    s.options
        .iter()
        .filter(|o| !allowed.contains(&o.name.as_str()))
        .find(|o| o.value.items().any(|v| v.trim_start().starts_with('!')))
        .map(|o| (o.name.clone(), "negation ('!')"))
}

/// What a redirect allows beyond the plain matches: `src_dip`, and negation of its
/// days.
const REDIRECT_ALLOWS: &[&str] = &["src_dip", "weekdays", "monthdays"];

/// What a rule allows beyond the plain matches: `src_mac`, and negation (`!`) of its
/// addresses, ports, MAC addresses and days.
const RULE_ALLOWS: &[&str] = &[
    "src_mac",
    "src_ip",
    "dest_ip",
    "src_port",
    "dest_port",
    "weekdays",
    "monthdays",
];

/// The items of `name`, split as fw4's `filter_pos`/`filter_neg` do: (plain items,
/// negated items). An item is negated by one leading `!` (fw4's `parse_invert`); the
/// option matches what is in a plain item (if there is one) and in no negated one.
fn negatable<T>(
    r: &mut SectionReader<'_>,
    name: &str,
    what: &str,
    f: impl Fn(&str) -> Option<T>,
) -> Result<(Vec<T>, Vec<T>), ConfigError> {
    let (mut plain, mut negated) = (Vec::new(), Vec::new());
    for v in r.items(name) {
        let t = v.trim_start();
        let (list, item) = match t.strip_prefix('!') {
            Some(rest) => (&mut negated, rest),
            None => (&mut plain, t),
        };
        match f(item.trim()) {
            Some(x) => list.push(x),
            None => return Err(r.error(name, format!("'{v}' is not {what}"))),
        }
    }
    Ok((plain, negated))
}

fn zone_ref(v: &str) -> Option<ZoneRef> {
    match v {
        "*" => Some(ZoneRef::Any),
        z => parse_zone_name(z).map(ZoneRef::Zone),
    }
}

fn protocols(r: &mut SectionReader<'_>) -> Result<Vec<Protocol>, ConfigError> {
    let mut out = Vec::new();
    for p in r.parse_items(
        "proto",
        "a protocol (tcp, udp, icmp, all, a number or a name from /etc/protocols)",
        parse_protocols,
    )? {
        out.extend(p);
    }
    if out.is_empty() {
        out = alloc::vec![TCP, UDP];
    }
    if out.contains(&Protocol::All) {
        out = alloc::vec![Protocol::All];
    }
    Ok(out)
}

/// `None` if the rule is disabled or ignored.
fn read_rule(
    r: &mut SectionReader<'_>,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Rule>, ConfigError> {
    let target = match r.single("target")? {
        None => Policy::Drop,
        Some(t) => match parse_enum(
            t,
            &[
                ("accept", Some(Policy::Accept)),
                ("reject", Some(Policy::Reject)),
                ("drop", Some(Policy::Drop)),
                ("notrack", None),
                ("helper", None),
                ("mark", None),
                ("dscp", None),
            ],
        ) {
            Some(Some(p)) => p,
            Some(None) => {
                warnings.push(r.error(
                    "target",
                    format!("target '{t}' not supported by Xenlet, rule ignored"),
                ));
                return Ok(None);
            }
            None => {
                return Err(r.error(
                    "target",
                    format!("'{t}' is not a rule target (ACCEPT, REJECT, DROP)"),
                ))
            }
        },
    };
    // Fail closed: an ACCEPT rule left out lets less through, but a DROP or REJECT
    // rule left out would let through what it stops, so such a file is refused
    // (as a syntax error is: `reload` keeps the rules in force).
    // `src_mac` is supported in rules (not in redirects).
    if target != Policy::Accept {
        if let Some((name, what)) = unsupported_option(r, RULE_ALLOWS) {
            return Err(r.error(
                &name,
                format!(
                    "{what} not supported by Xenlet in a {} rule: leaving the rule out would let through what it stops",
                    if target == Policy::Reject { "REJECT" } else { "DROP" }
                ),
            ));
        }
    } else if unsupported(r, warnings, RULE_ALLOWS) {
        return Ok(None);
    }
    let (src_ip, src_ip_not) = negatable(r, "src_ip", "an IP address or prefix", parse_ipnet)?;
    let (dest_ip, dest_ip_not) = negatable(r, "dest_ip", "an IP address or prefix", parse_ipnet)?;
    let (src_port, src_port_not) = negatable(r, "src_port", "a port or port range", parse_port)?;
    let (dest_port, dest_port_not) = negatable(r, "dest_port", "a port or port range", parse_port)?;
    let (src_mac, src_mac_not) = negatable(
        r,
        "src_mac",
        "a MAC address (aa:bb:cc:dd:ee:ff)",
        crate::network::mac_address,
    )?;
    Ok(Some(Rule {
        name: r.single("name")?.map(str::to_string),
        src: r.parse("src", "a zone name or '*'", zone_ref)?,
        dest: r.parse("dest", "a zone name or '*'", zone_ref)?,
        proto: protocols(r)?,
        src_ip,
        src_ip_not,
        src_mac,
        src_mac_not,
        dest_ip,
        dest_ip_not,
        src_port,
        src_port_not,
        dest_port,
        dest_port_not,
        icmp_type: r.parse_items(
            "icmp_type",
            "an ICMP type (a name or type[/code])",
            parse_icmp_type,
        )?,
        family: r
            .parse("family", "a family (ipv4, ipv6, any)", parse_family)?
            .unwrap_or(Family::Any),
        target,
        limit: r.parse(
            "limit",
            "a rate limit (N/second, N/minute, ...)",
            parse_limit,
        )?,
        limit_burst: r.parse("limit_burst", "a number", parse_uint::<u32>)?,
        time: time::read(r)?,
    }))
}

fn read_redirect(
    r: &mut SectionReader<'_>,
    warnings: &mut Vec<Diagnostic>,
) -> Result<Option<Redirect>, ConfigError> {
    // src_dip is supported on redirects (it is a rule-only match in UNSUPPORTED_MATCHES).
    let src_dip = r.parse("src_dip", "an IPv4 address", |v| Ipv4Addr::from_str(v).ok())?;
    if unsupported(r, warnings, REDIRECT_ALLOWS) {
        return Ok(None);
    }
    let target = match r.single("target")? {
        None => RedirectTarget::Dnat,
        Some(t) => parse_enum(
            t,
            &[
                ("dnat", RedirectTarget::Dnat),
                ("snat", RedirectTarget::Snat),
            ],
        )
        .ok_or_else(|| {
            r.error(
                "target",
                format!("'{t}' is not a redirect target (DNAT, SNAT)"),
            )
        })?,
    };
    Ok(Some(Redirect {
        name: r.single("name")?.map(str::to_string),
        src: r.parse("src", "a zone name", parse_zone_name)?,
        src_dport: r.parse_items("src_dport", "a port or port range", parse_port)?,
        src_dip,
        src_ip: r.parse_items("src_ip", "an IP address or prefix", parse_ipnet)?,
        dest: r.parse("dest", "a zone name", parse_zone_name)?,
        dest_ip: r.parse("dest_ip", "an IPv4 address", |v| Ipv4Addr::from_str(v).ok())?,
        dest_port: r.parse("dest_port", "a port or port range", parse_port)?,
        proto: protocols(r)?,
        target,
        reflection: r.boolean("reflection", true)?,
        time: time::read(r)?,
        family: r
            .parse("family", "a family (ipv4, ipv6, any)", parse_family)?
            .unwrap_or(Family::Any),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::parse::parse;

    fn fw(text: &str) -> Result<Checked<FirewallConfig>, ConfigError> {
        firewall(&parse("/etc/config/firewall", "firewall", text).unwrap())
    }

    #[test]
    fn defaults_parse_without_warnings() {
        for text in [fixtures::IMAGE_FIREWALL, fixtures::FIREWALL4] {
            let c = fw(text).unwrap();
            assert_eq!(c.warnings, []);
            assert_eq!(c.notes, []);
            let f = &c.config;
            assert_eq!(f.defaults.input, Policy::Reject);
            assert_eq!(f.defaults.output, Policy::Accept);
            assert!(f.defaults.syn_flood);
            assert_eq!(
                f.defaults.synflood_rate,
                Limit {
                    rate: 25,
                    unit: LimitUnit::Second
                }
            );
            let wan = f.zone("wan").unwrap();
            assert_eq!(wan.networks, ["wan", "wan6"]);
            assert!(wan.masq && wan.mtu_fix);
            assert_eq!(
                f.forwardings,
                [Forwarding {
                    src: "lan".into(),
                    dest: "wan".into(),
                    family: Family::Any
                }]
            );
            let renew = &f.rules[0];
            assert_eq!(renew.name.as_deref(), Some("Allow-DHCP-Renew"));
            assert_eq!(
                (renew.proto.as_slice(), renew.dest_port.as_slice()),
                (&[UDP][..], &[PortRange { min: 68, max: 68 }][..])
            );
            assert_eq!((renew.family, renew.target), (Family::Ipv4, Policy::Accept));
            let ping = &f.rules[1];
            assert_eq!(
                ping.icmp_type[0].v4,
                Some(IcmpMatch {
                    ty: 8,
                    code_min: 0,
                    code_max: 0xFF
                })
            );
            assert_eq!(ping.icmp_type[0].v6.map(|m| m.ty), Some(128));
        }
        let f = fw(fixtures::FIREWALL4).unwrap().config;
        assert_eq!(f.zone("wan").unwrap().forward, Policy::Drop);
        assert_eq!(f.rules.len(), 9);
        let mld = f
            .rules
            .iter()
            .find(|r| r.name.as_deref() == Some("Allow-MLD"))
            .unwrap();
        assert_eq!(mld.src_ip[0].prefix_len, 10);
        assert_eq!(
            mld.icmp_type[0].v6,
            Some(IcmpMatch {
                ty: 130,
                code_min: 0,
                code_max: 0
            })
        );
        let icmp6 = f
            .rules
            .iter()
            .find(|r| r.name.as_deref() == Some("Allow-ICMPv6-Forward"))
            .unwrap();
        assert_eq!(icmp6.dest, Some(ZoneRef::Any));
        assert_eq!(
            icmp6.limit,
            Some(Limit {
                rate: 1000,
                unit: LimitUnit::Second
            })
        );
        let esp = f
            .rules
            .iter()
            .find(|r| r.name.as_deref() == Some("Allow-IPSec-ESP"))
            .unwrap();
        assert_eq!(esp.proto, [Protocol::Number(50)]);
        // No proto: tcp and udp.
        let isakmp = f
            .rules
            .iter()
            .find(|r| r.name.as_deref() == Some("Allow-ISAKMP"))
            .unwrap();
        assert_eq!(isakmp.proto, [UDP]);
    }

    #[test]
    fn value_forms() {
        let c = fw(concat!(
            "config rule\n\toption src 'wan'\n\toption dest_port '80 443 1000-2000'\n\toption proto 'tcp udp'\n\toption src_ip '10.0.0.0/255.0.0.0'\n\toption limit '10/min'\n\toption limit_burst '5'\n\toption target 'acc'\n",
            "config rule\n\toption proto 'all'\n\tlist icmp_type '3/4'\n\toption target 'REJECT'\n",
            "config redirect\n\toption src 'wan'\n\toption src_dport '8080'\n\toption dest 'lan'\n\toption dest_ip '192.168.1.10'\n\toption dest_port '80'\n\toption proto 'tcp'\n\toption reflection '0'\n",
            "config zone\n\toption name 'lan'\n",
        ))
        .unwrap();
        assert_eq!(c.warnings, []);
        let r = &c.config.rules[0];
        assert_eq!(
            r.dest_port,
            [
                PortRange { min: 80, max: 80 },
                PortRange { min: 443, max: 443 },
                PortRange {
                    min: 1000,
                    max: 2000
                }
            ]
        );
        assert_eq!(r.proto, [TCP, UDP]);
        assert_eq!(r.src_ip[0].prefix_len, 8);
        assert_eq!(
            r.limit,
            Some(Limit {
                rate: 10,
                unit: LimitUnit::Minute
            })
        );
        assert_eq!((r.limit_burst, r.target), (Some(5), Policy::Accept));
        let r = &c.config.rules[1];
        assert_eq!(
            (r.proto.as_slice(), r.target),
            (&[Protocol::All][..], Policy::Reject)
        );
        assert_eq!(
            r.icmp_type[0].v4,
            Some(IcmpMatch {
                ty: 3,
                code_min: 4,
                code_max: 4
            })
        );
        let d = &c.config.redirects[0];
        assert_eq!(
            (d.target, d.reflection, d.dest_ip),
            (
                RedirectTarget::Dnat,
                false,
                Some(Ipv4Addr::new(192, 168, 1, 10))
            )
        );
        // Zone policies default to the defaults section (DROP when there is none).
        assert_eq!(c.config.zone("lan").unwrap().input, Policy::Drop);
    }

    #[test]
    fn bad_values_are_located_errors() {
        let cases = [
            (
                "config defaults\n\toption input 'MAYBE'\n",
                "@defaults[0]: option 'input': 'MAYBE' is not a policy",
            ),
            (
                "config defaults\n\toption synflood_rate '25/fortnight'\n",
                "@defaults[0]: option 'synflood_rate': '25/fortnight' is not a rate limit",
            ),
            (
                "config zone\n\toption name 'much_too_long_name'\n",
                "@zone[0]: option 'name': 'much_too_long_name' is not a zone name",
            ),
            (
                "config zone\n\toption input 'DROP'\n",
                "@zone[0]: option 'name': missing",
            ),
            (
                "config zone\n\toption name 'a'\n\toption masq 'sometimes'\n",
                "@zone[0]: option 'masq': 'sometimes' is not a boolean",
            ),
            (
                "config zone\n\toption name 'a'\n\toption family 'ipx'\n",
                "@zone[0]: option 'family': 'ipx' is not a family",
            ),
            (
                "config rule\n\toption proto 'tcpp'\n",
                "@rule[0]: option 'proto': 'tcpp' is not a protocol",
            ),
            (
                "config rule\n\toption dest_port '70000'\n",
                "@rule[0]: option 'dest_port': '70000' is not a port",
            ),
            (
                "config rule\n\toption dest_port '20-10'\n",
                "@rule[0]: option 'dest_port': '20-10' is not a port",
            ),
            (
                "config rule\n\toption src_ip '10.0.0.1/33'\n",
                "@rule[0]: option 'src_ip': '10.0.0.1/33' is not an IP address",
            ),
            (
                "config rule\n\toption icmp_type 'echo-banana'\n",
                "@rule[0]: option 'icmp_type': 'echo-banana' is not an ICMP type",
            ),
            (
                "config rule\n\toption icmp_type '300'\n",
                "@rule[0]: option 'icmp_type': '300' is not an ICMP type",
            ),
            (
                "config rule\n\toption target 'LAUNCH'\n",
                "@rule[0]: option 'target': 'LAUNCH' is not a rule target",
            ),
            (
                "config rule\n\toption limit 'fast'\n",
                "@rule[0]: option 'limit': 'fast' is not a rate limit",
            ),
            (
                "config rule\n\toption limit_burst '-1'\n",
                "@rule[0]: option 'limit_burst': '-1' is not a number",
            ),
            (
                "config redirect\n\toption dest_ip '192.168.1'\n",
                "@redirect[0]: option 'dest_ip': '192.168.1' is not an IPv4 address",
            ),
            (
                "config redirect\n\toption target 'masquerade'\n",
                "@redirect[0]: option 'target': 'masquerade' is not a redirect target",
            ),
            (
                "config forwarding\n\toption src 'lan'\n",
                "@forwarding[0]: a forwarding needs 'src' and 'dest'",
            ),
            (
                "config zone\n\toption name 'a'\nconfig zone\n\toption name 'a'\n",
                "zone 'a': option 'name': duplicate zone name",
            ),
        ];
        for (text, msg) in cases {
            let e = fw(text).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("/etc/config/firewall: {msg}")),
                "{e}"
            );
        }
    }

    #[test]
    fn negated_addresses_and_ports_are_read_plain_and_negated_items_apart() {
        let c = fw(concat!(
            "config rule\n\toption src 'lan'\n\toption dest 'wan'\n",
            "\toption src_ip '!192.168.1.10'\n\tlist dest_port '!80'\n\tlist dest_port '!443'\n",
            "\toption target 'REJECT'\n",
            // fw4 takes both in one option: `ip saddr 10.0.0.0/8 ip saddr != 10.0.0.1`
            "config rule\n\toption src 'lan'\n\toption src_ip '10.0.0.0/8 !10.0.0.1'\n",
            "\tlist dest_port '1000-2000'\n\tlist dest_port '! 1500'\n\toption target 'DROP'\n",
        ))
        .unwrap();
        let r = &c.config.rules[0];
        assert_eq!((r.src_ip.len(), r.src_ip_not.len()), (0, 1));
        assert_eq!((r.dest_port.len(), r.dest_port_not.len()), (0, 2));
        assert!(r.dest_ip_not.is_empty() && r.src_port_not.is_empty());
        let r = &c.config.rules[1];
        assert_eq!(
            (r.src_ip[0].prefix_len, r.src_ip_not[0].prefix_len),
            (8, 32)
        );
        assert_eq!(
            (r.dest_port.as_slice(), r.dest_port_not.as_slice()),
            (
                &[PortRange {
                    min: 1000,
                    max: 2000
                }][..],
                &[PortRange {
                    min: 1500,
                    max: 1500
                }][..]
            )
        );
        // one `!` negates; a second is a bad value, as in fw4
        let e = fw("config rule\n\toption src 'lan'\n\toption src_ip '!!10.0.0.1'\n\toption target 'DROP'\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'!!10.0.0.1' is not an IP address"), "{e}");
    }

    #[test]
    fn src_mac_is_read_into_the_rule() {
        let c = fw(concat!(
            "config rule\n\toption src 'lan'\n\toption dest 'wan'\n",
            "\tlist src_mac '02:00:00:00:00:42'\n\tlist src_mac '02-00-00-00-00-43'\n",
            "\toption target 'DROP'\n",
        ))
        .unwrap();
        assert_eq!(
            c.config.rules[0].src_mac,
            [[2, 0, 0, 0, 0, 0x42], [2, 0, 0, 0, 0, 0x43]]
        );
        let e = fw(
            "config rule\n\toption src 'lan'\n\toption src_mac 'nope'\n\toption target 'DROP'\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("src_mac"), "{e}");
        // fw4's `ether saddr != ...`: every device but the admin's
        let c = fw(concat!(
            "config rule\n\toption src 'lan'\n\toption dest 'wan'\n",
            "\toption src_mac '!02:00:00:00:00:01'\n\toption target 'REJECT'\n",
        ))
        .unwrap();
        let r = &c.config.rules[0];
        assert!(r.src_mac.is_empty() && r.src_ip_not.is_empty());
        assert_eq!(r.src_mac_not, [[2, 0, 0, 0, 0, 1]]);
    }

    #[test]
    fn a_deny_rule_with_an_unsupported_match_refuses_the_file() {
        for (rule, msg) in [
            (
                "config rule\n\toption src 'wan'\n\toption ipset 'blocklist'\n\toption target 'DROP'\n",
                "@rule[0]: option 'ipset': match not supported by Xenlet in a DROP rule",
            ),
            (
                "config rule\n\toption src 'lan'\n\toption mark '0x1/0xff'\n\toption target 'REJECT'\n",
                "@rule[0]: option 'mark': match not supported by Xenlet in a REJECT rule",
            ),
            (
                "config rule\n\toption src 'lan'\n\toption proto '!icmp'\n",
                "@rule[0]: option 'proto': negation ('!') not supported by Xenlet in a DROP rule",
            ),
            // fw4 reads `!` on these too but either ignores it (proto, limit) or
            // refuses the value (icmp_type, zones): either way not what it says
            (
                "config rule\n\toption src 'wan'\n\toption proto 'icmp'\n\toption icmp_type '!echo-request'\n\toption target 'REJECT'\n",
                "@rule[0]: option 'icmp_type': negation ('!') not supported by Xenlet in a REJECT rule",
            ),
            (
                "config rule\n\toption src 'lan'\n\toption dest '!wan'\n\toption target 'DROP'\n",
                "@rule[0]: option 'dest': negation ('!') not supported by Xenlet in a DROP rule",
            ),
            (
                "config rule\n\toption src 'lan'\n\toption limit '!10/second'\n\toption target 'DROP'\n",
                "@rule[0]: option 'limit': negation ('!') not supported by Xenlet in a DROP rule",
            ),
        ] {
            let e = fw(rule).unwrap_err().to_string();
            assert!(e.starts_with(&format!("/etc/config/firewall: {msg}")), "{e}");
        }
    }

    #[test]
    fn time_matches_are_read_and_bad_ones_are_located_errors() {
        let c = fw(concat!(
            "config rule\n\toption src 'lan'\n\toption dest 'wan'\n",
            "\toption start_time '22:00'\n\toption stop_time '06:30:15'\n",
            "\toption weekdays '! Sat Sun'\n\tlist monthdays '1'\n\tlist monthdays '15'\n",
            "\toption start_date '2025-06-02'\n\toption stop_date '2025-06-30T23:59:59'\n",
            "\toption utc_time '1'\n\toption target 'DROP'\n",
            "config rule\n\toption src 'lan'\n\toption utc_time '1'\n\toption target 'ACCEPT'\n",
        ))
        .unwrap();
        assert_eq!(c.warnings, []);
        assert_eq!(
            c.config.rules[0].time,
            Some(TimeMatch {
                utc: true,
                start_date: Some(1_748_822_400),
                stop_date: Some(1_748_822_400 + 29 * 86_400 - 1),
                start_time: Some(22 * 3600),
                stop_time: Some(6 * 3600 + 30 * 60 + 15),
                weekdays: Some(DaySet {
                    days: 0b110_0000,
                    invert: true
                }),
                monthdays: Some(DaySet {
                    days: (1 << 1) | (1 << 15),
                    invert: false
                }),
            })
        );
        // utc_time alone is no time match
        assert_eq!(c.config.rules[1].time, None);
        for (opt, val, msg) in [
            ("start_time", "25:00", "'25:00' is not a time of day"),
            ("stop_time", "noon", "'noon' is not a time of day"),
            ("start_date", "2025-02-29", "'2025-02-29' is not a date"),
            ("stop_date", "2039-01-01", "'2039-01-01' is not a date"),
            (
                "weekdays",
                "Mon Funday",
                "'Mon Funday' is not a list of weekdays",
            ),
            (
                "weekdays",
                "Mon !Tue",
                "'Mon !Tue' is not a list of weekdays",
            ),
            (
                "monthdays",
                "0 1",
                "'0 1' is not a list of days of the month",
            ),
            ("utc_time", "sometimes", "'sometimes' is not a boolean"),
        ] {
            for target in ["ACCEPT", "DROP"] {
                let e = fw(&format!(
                    "config rule\n\toption src 'lan'\n\toption {opt} '{val}'\n\toption target '{target}'\n"
                ))
                .unwrap_err()
                .to_string();
                assert!(
                    e.starts_with(&format!(
                        "/etc/config/firewall: @rule[0]: option '{opt}': {msg}"
                    )),
                    "{e}"
                );
            }
        }
        // a redirect takes them too
        let c = fw("config redirect\n\toption src 'wan'\n\toption src_dport '22'\n\toption dest_ip '192.168.1.2'\n\toption weekdays '!Sat'\n").unwrap();
        assert_eq!(c.warnings, []);
        assert_eq!(
            c.config.redirects[0].time.and_then(|t| t.weekdays),
            Some(DaySet {
                days: 1 << 5,
                invert: true
            })
        );
    }

    #[test]
    fn unsupported_things_warn_and_skip() {
        let c = fw(concat!(
            "config rule\n\toption src 'lan'\n\toption mark '0x1'\n\toption target 'ACCEPT'\n",
            "config rule\n\toption src '!lan'\n\toption target 'ACCEPT'\n",
            "config rule\n\toption target 'NOTRACK'\n",
            "config rule\n\toption enabled '0'\n",
            "config include\n\toption path '/etc/firewall.user'\n",
            "config rule\n\toption target 'ACCEPT'\n\toption frob '1'\n",
        ))
        .unwrap();
        assert_eq!(c.config.rules.len(), 1);
        let w: Vec<String> = c.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            w,
            [
                "/etc/config/firewall: @rule[0]: option 'mark': match not supported by Xenlet, section ignored",
                "/etc/config/firewall: @rule[1]: option 'src': negation ('!') not supported by Xenlet, section ignored",
                "/etc/config/firewall: @rule[2]: option 'target': target 'NOTRACK' not supported by Xenlet, rule ignored",
                "/etc/config/firewall: @include[0]: includes are not supported, ignored",
                "/etc/config/firewall: @rule[4]: option 'frob': unknown option, ignored",
            ]
        );
    }
}
