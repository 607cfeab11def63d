//! `/etc/config/firewall` (typed by `xenlet-uci`) compiled into the router's
//! [`Ruleset`].
//!
//! Zone `network`s are `/etc/config/network` interface names; the caller says which
//! router interface ([`IfId`]) and device each one is ([`NetworkIface`]). The rest
//! follows openwrt/firewall4 `root/usr/share/ucode/fw4.uc`: policies, `syn_flood`
//! with `synflood_rate`/`synflood_burst`, rules of both families (a rule's family is
//! its `family`, narrowed by its addresses and ICMP type names as fw4 does; `proto
//! icmp` is ICMPv6 too for IPv6; forwardings and redirects are IPv4's: `family
//! ipv6` ones are left out), `limit`/`limit_burst`
//! (nftables' default burst is 5), redirects with `target DNAT` (`dest_port`
//! defaults to `src_dport`; `reflection` defaults on). What cannot be enforced is
//! reported as a note, never silently widened: rules without `src` are output-chain
//! rules (the router's own traffic is not filtered), SNAT redirects are not done.
//!
//! A redirect without `dest_ip`, or to one of the router's addresses, forwards to
//! the router itself (fw4's `redirect`; the input chain accepts it as fw4's
//! `ct status dnat accept` does).
//!
//! A rule's or redirect's time matches (`start_time`, `weekdays`, ...) go to the router as they
//! are; it judges them by the wall clock the kernel gives it (local time is UTC
//! unless the kernel knows an offset).
//!
//! Compiling is all or nothing: a reference to a zone that does not exist, a
//! redirect without `src_dport` or with port ranges of different widths is
//! an error naming the file, section and option, and the running ruleset stays.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::net::IpAddr;

use xenlet_router::firewall::ratelimit::Limit;
use xenlet_router::firewall::ruleset::{
    Defaults, Except, Forwarding, IcmpMatch, Net4, Net6, Redirect, Rule, RuleFamily, Ruleset,
    Verdict, Zone, ZoneSel,
};
use xenlet_router::IfId;
use xenlet_uci::firewall::{
    self as fw, Family, FirewallConfig, LimitUnit, Policy, Protocol, RedirectTarget, ZoneRef,
};
use xenlet_uci::validate::ConfigError;

/// The file errors name.
const FILE: &str = "/etc/config/firewall";

/// One `/etc/config/network` interface the router routes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkIface {
    /// The network's name (`lan`, `wan`, `wan6`).
    pub network: String,
    /// The router interface it is on.
    pub ifc: IfId,
    /// Its device (`eth0`), for logs.
    pub device: String,
}

impl NetworkIface {
    /// Network `network` on router interface `ifc`, device `device`.
    pub fn new(network: &str, ifc: IfId, device: &str) -> NetworkIface {
        NetworkIface {
            network: network.into(),
            ifc,
            device: device.into(),
        }
    }
}

/// A compiled firewall and what was left out of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiled {
    /// The ruleset.
    pub ruleset: Ruleset,
    /// What could not be enforced, one line each (`@rule[3] 'x': ...`).
    pub notes: Vec<String>,
}

fn err(section: String, option: Option<&str>, message: String) -> ConfigError {
    ConfigError {
        file: FILE.to_string(),
        section,
        option: option.map(ToString::to_string),
        message,
    }
}

fn label(kind: &str, i: usize, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("@{kind}[{i}] '{n}'"),
        None => format!("@{kind}[{i}]"),
    }
}

fn verdict(p: Policy) -> Verdict {
    match p {
        Policy::Accept => Verdict::Accept,
        Policy::Reject => Verdict::Reject,
        Policy::Drop => Verdict::Drop,
    }
}

fn limit(l: fw::Limit, burst: u32) -> Limit {
    let period_ms = match l.unit {
        LimitUnit::Second => 1000,
        LimitUnit::Minute => 60_000,
        LimitUnit::Hour => 3_600_000,
        LimitUnit::Day => 86_400_000,
    };
    Limit {
        rate: l.rate,
        period_ms,
        burst,
    }
}

/// The IPv4 and the IPv6 prefixes of a list, each `None` if the list had entries and
/// none of that family (the rule is for the other family only).
fn nets(list: &[fw::IpNet]) -> (Option<Vec<Net4>>, Option<Vec<Net6>>) {
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    for n in list {
        match n.addr {
            IpAddr::V4(a) => v4.push(Net4 {
                addr: a.octets(),
                prefix_len: n.prefix_len.min(32),
            }),
            IpAddr::V6(a) => v6.push(Net6 {
                addr: a.octets(),
                prefix_len: n.prefix_len.min(128),
            }),
        }
    }
    let kept = |empty: bool| !empty || list.is_empty();
    (
        kept(v4.is_empty()).then_some(v4),
        kept(v6.is_empty()).then_some(v6),
    )
}

fn protos(list: &[Protocol]) -> Vec<u8> {
    if list.contains(&Protocol::All) {
        return Vec::new();
    }
    list.iter()
        .filter_map(|p| match p {
            Protocol::Number(n) => Some(*n),
            Protocol::All => None,
        })
        .collect()
}

/// Compiles `cfg` for the interfaces `ifaces`.
pub fn compile(cfg: &FirewallConfig, ifaces: &[NetworkIface]) -> Result<Compiled, ConfigError> {
    let mut notes = Vec::new();
    let d = &cfg.defaults;
    let defaults = Defaults {
        input: verdict(d.input),
        output: verdict(d.output),
        forward: verdict(d.forward),
        syn_flood: d
            .syn_flood
            .then(|| limit(d.synflood_rate, d.synflood_burst)),
        drop_invalid: d.drop_invalid,
    };
    let mut zones = Vec::new();
    for (i, z) in cfg.zones.iter().enumerate() {
        let mut members = Vec::new();
        for n in &z.networks {
            for ni in ifaces.iter().filter(|x| &x.network == n) {
                if !members.contains(&ni.ifc) {
                    members.push(ni.ifc);
                }
            }
        }
        if let Some(other) = zones
            .iter()
            .position(|o: &Zone| o.ifaces.iter().any(|x| members.contains(x)))
        {
            return Err(err(
                label("zone", i, Some(&z.name)),
                Some("network"),
                format!(
                    "an interface is already in zone '{}'",
                    cfg.zones.get(other).map_or("", |o| o.name.as_str())
                ),
            ));
        }
        zones.push(Zone {
            name: z.name.clone(),
            ifaces: members,
            input: verdict(z.input),
            output: verdict(z.output),
            forward: verdict(z.forward),
            masq: z.masq,
            mtu_fix: z.mtu_fix,
        });
    }
    let zone_id = |name: &str, section: String, option: &str| {
        cfg.zones
            .iter()
            .position(|z| z.name == name)
            .ok_or_else(|| err(section, Some(option), format!("no zone '{name}'")))
    };
    let mut forwardings = Vec::new();
    for (i, f) in cfg.forwardings.iter().enumerate() {
        if f.family == Family::Ipv6 {
            continue;
        }
        forwardings.push(Forwarding {
            src: zone_id(&f.src, label("forwarding", i, None), "src")?,
            dest: zone_id(&f.dest, label("forwarding", i, None), "dest")?,
        });
    }
    let mut rules = Vec::new();
    for (i, r) in cfg.rules.iter().enumerate() {
        let lbl = label("rule", i, r.name.as_deref());
        let sel = |z: &ZoneRef, option: &str| -> Result<ZoneSel, ConfigError> {
            Ok(match z {
                ZoneRef::Any => ZoneSel::Any,
                ZoneRef::Zone(n) => ZoneSel::Zone(zone_id(n, lbl.clone(), option)?),
            })
        };
        let dest = r.dest.as_ref().map(|d| sel(d, "dest")).transpose()?;
        let Some(src) = r.src.as_ref().map(|s| sel(s, "src")).transpose()? else {
            notes.push(format!(
                "{lbl}: no src: an output rule, not enforced (the router's own traffic is not filtered)"
            ));
            continue;
        };
        // The family, narrowed as fw4 does: addresses of one family only, or ICMP
        // type names that exist in one family only, make the rule that family's
        // (and a rule whose addresses are all of the other family is left out).
        // negated addresses count as fw4's `subnets_split_af` counts them: a rule
        // whose addresses, negated or not, are all IPv4 is an IPv4 rule (`ip saddr !=
        // ...`), and matches no IPv6 packet at all
        let both = |a: &[fw::IpNet], b: &[fw::IpNet]| -> Vec<fw::IpNet> {
            a.iter().chain(b.iter()).copied().collect()
        };
        let (all_src, all_dest) = (
            both(&r.src_ip, &r.src_ip_not),
            both(&r.dest_ip, &r.dest_ip_not),
        );
        let (src4, src6) = nets(&all_src);
        let (dest4, dest6) = nets(&all_dest);
        let icmp_of = |f: fn(&fw::IcmpType) -> Option<fw::IcmpMatch>| -> Vec<IcmpMatch> {
            r.icmp_type.iter().filter_map(f).collect()
        };
        let icmp_type = icmp_of(|t| t.v4);
        let icmp6_type = icmp_of(|t| t.v6);
        let has_icmp = !r.icmp_type.is_empty();
        let may4 = r.family != Family::Ipv6
            && src4.is_some()
            && dest4.is_some()
            && (!has_icmp || !icmp_type.is_empty());
        let may6 = r.family != Family::Ipv4
            && src6.is_some()
            && dest6.is_some()
            && (!has_icmp || !icmp6_type.is_empty());
        let family = match (may4, may6) {
            (true, true) => RuleFamily::Any,
            (true, false) => RuleFamily::Ipv4,
            (false, true) => RuleFamily::Ipv6,
            (false, false) => continue,
        };
        // each family's part only
        let icmp_type = if family == RuleFamily::Ipv6 {
            Vec::new()
        } else {
            icmp_type
        };
        let icmp6_type = if family == RuleFamily::Ipv4 {
            Vec::new()
        } else {
            icmp6_type
        };
        // each list's part of each family (`None`, none of that family: empty)
        let v4 = |l: &[fw::IpNet]| nets(l).0.unwrap_or_default();
        let v6 = |l: &[fw::IpNet]| nets(l).1.unwrap_or_default();
        let except = Except {
            src_ip: v4(&r.src_ip_not),
            src_ip6: v6(&r.src_ip_not),
            dest_ip: v4(&r.dest_ip_not),
            dest_ip6: v6(&r.dest_ip_not),
            src_port: r.src_port_not.clone(),
            dest_port: r.dest_port_not.clone(),
            src_mac: r.src_mac_not.clone(),
        };
        // fw4: `proto icmp` is ICMPv6 too for a rule that applies to IPv6
        let mut protos = protos(&r.proto);
        if family != RuleFamily::Ipv4 && protos.contains(&1) && !protos.contains(&58) {
            protos.push(58);
        }
        rules.push(Rule {
            name: r.name.clone().unwrap_or_else(|| format!("@rule[{i}]")),
            src,
            dest,
            protos,
            src_ip: v4(&r.src_ip),
            src_mac: r.src_mac.clone(),
            dest_ip: v4(&r.dest_ip),
            src_port: r.src_port.clone(),
            dest_port: r.dest_port.clone(),
            icmp_type,
            family,
            src_ip6: v6(&r.src_ip),
            dest_ip6: v6(&r.dest_ip),
            icmp6_type,
            target: verdict(r.target),
            limit: r.limit.map(|l| limit(l, r.limit_burst.unwrap_or(5))),
            except,
            time: r.time,
        });
    }
    let mut redirects = Vec::new();
    for (i, r) in cfg.redirects.iter().enumerate() {
        let lbl = label("redirect", i, r.name.as_deref());
        if r.target == RedirectTarget::Snat {
            notes.push(format!("{lbl}: SNAT redirects are not done"));
            continue;
        }
        if r.family == Family::Ipv6 {
            continue;
        }
        let src = match &r.src {
            Some(s) => zone_id(s, lbl.clone(), "src")?,
            None => {
                return Err(err(
                    lbl,
                    Some("src"),
                    "a port forward needs a src zone".into(),
                ))
            }
        };
        let dest = r
            .dest
            .as_ref()
            .map(|d| zone_id(d, lbl.clone(), "dest"))
            .transpose()?;
        // No dest_ip: fw4 writes `redirect to :port`, the router itself (the
        // address of the interface the flow comes in on).
        let dest_ip = r.dest_ip.unwrap_or(core::net::Ipv4Addr::UNSPECIFIED);
        let src_dport = match r.src_dport.as_slice() {
            [p] => *p,
            _ => {
                return Err(err(
                    lbl,
                    Some("src_dport"),
                    "a port forward needs one src_dport (port or range)".into(),
                ))
            }
        };
        let dest_port = r.dest_port.unwrap_or(src_dport);
        if dest_port.max - dest_port.min != src_dport.max - src_dport.min {
            return Err(err(
                lbl,
                Some("dest_port"),
                "the range is not as wide as src_dport's".into(),
            ));
        }
        let mut pr = protos(&r.proto);
        if pr.is_empty() {
            pr = alloc::vec![6, 17];
        }
        pr.retain(|p| *p == 6 || *p == 17);
        let (Some(src_ip), _) = nets(&r.src_ip) else {
            continue;
        };
        if r.reflection && dest.is_none() {
            notes.push(format!("{lbl}: no dest zone: no NAT reflection"));
        }
        redirects.push(Redirect {
            name: r.name.clone().unwrap_or_else(|| format!("@redirect[{i}]")),
            src,
            protos: pr,
            src_dport,
            src_dip: r.src_dip.map(|a| a.octets()),
            src_ip,
            dest,
            dest_ip: dest_ip.octets(),
            dest_port,
            reflection: r.reflection,
            time: r.time,
        });
    }
    let mut iface_names: Vec<(IfId, String)> = Vec::new();
    for ni in ifaces {
        if !iface_names.iter().any(|(i, _)| *i == ni.ifc) {
            iface_names.push((ni.ifc, ni.device.clone()));
        }
    }
    let ruleset = Ruleset {
        defaults,
        zones,
        forwardings,
        rules,
        redirects,
        iface_names,
    };
    ruleset
        .check()
        .map_err(|e| err("firewall".into(), None, format!("{e:?}")))?;
    Ok(Compiled { ruleset, notes })
}

/// Parses and compiles the text of `/etc/config/firewall`: the whole `reload`.
/// Warnings (unknown options, as fw4 prints them) come back with the notes.
pub fn compile_text(
    text: &str,
    ifaces: &[NetworkIface],
) -> Result<(Compiled, Vec<String>), String> {
    let pkg = xenlet_uci::parse::parse(FILE, "firewall", text).map_err(|e| format!("{e}"))?;
    let checked = fw::firewall(&pkg).map_err(|e| format!("{e}"))?;
    let warnings = checked.warnings.iter().map(|w| format!("{w}")).collect();
    let c = compile(&checked.config, ifaces).map_err(|e| format!("{e}"))?;
    Ok((c, warnings))
}

/// Whether the zone of `ifc` masquerades and clamps the MSS (`masq`, `mtu_fix`), for
/// the gateway's [`crate::gateway::PortSpec`].
pub fn port_flags(rs: &Ruleset, ifc: IfId) -> (bool, bool) {
    rs.zone_of(ifc)
        .and_then(|z| rs.zones.get(z))
        .map_or((false, false), |z| (z.masq, z.mtu_fix))
}

#[cfg(test)]
mod tests;
