//! odhcpd's router advertisement options of a `dhcp` section of `/etc/config/dhcp`
//! (openwrt/odhcpd `src/config.c`, `README.md`), with odhcpd's defaults:
//!
//! - `ra`: `server` (advertise), `disabled` (default when absent), `relay` and
//!   `hybrid` (recognised, not run: Xenlet does not relay);
//! - `dhcpv6`: the DHCPv6 mode (`server` runs the stateful DHCPv6 server;
//!   `relay` and `hybrid` are recognised, not run);
//! - `ra_slaac` (default 1): the A flag on announced prefixes;
//! - `ra_flags` (list, default `other-config`): `managed-config`, `other-config`,
//!   `home-agent`, `none`;
//! - `ra_default` (0, 1, 2): announce a default route even without an upstream
//!   (1), or even with only a ULA (2);
//! - `ra_maxinterval` (4..=1800, default 600), `ra_mininterval` (3 to 3/4 of the
//!   maximum, default a third of it), `ra_lifetime` (0..=9000, default 3 × the
//!   maximum interval), `ra_mtu` (1280..=65535), `ra_hoplimit` (0..=255),
//!   `ra_reachabletime` (ms, ≤ 3600000), `ra_retranstime` (ms, ≤ 60000), `ra_dns`
//!   (default 1: RDNSS and DNSSL naming the router).
//!
//! With `ra_maxinterval` set, the minimum interval and the lifetime default to
//! RFC 4861's a third and three times it (odhcpd keeps its 200 s and 1800 s, which
//! a short maximum interval makes inconsistent).

use alloc::format;

use crate::validate::{parse_uint, ConfigError, SectionReader};

/// A service mode of odhcpd (`ra`, `dhcpv6`, `ndp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Not run (absent or `disabled`).
    #[default]
    Disabled,
    /// `server`.
    Server,
    /// `relay`.
    Relay,
    /// `hybrid`.
    Hybrid,
}

fn mode(v: &str) -> Option<Mode> {
    match v {
        "disabled" => Some(Mode::Disabled),
        "server" => Some(Mode::Server),
        "relay" => Some(Mode::Relay),
        "hybrid" => Some(Mode::Hybrid),
        _ => None,
    }
}

/// The RA settings of one `dhcp` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaOptions {
    /// `ra`.
    pub ra: Mode,
    /// `dhcpv6`.
    pub dhcpv6: Mode,
    /// `ra_slaac`.
    pub slaac: bool,
    /// `ra_flags managed-config`: the M flag.
    pub managed: bool,
    /// `ra_flags other-config`: the O flag.
    pub other: bool,
    /// `ra_default`.
    pub default_route: u8,
    /// `ra_maxinterval` (s).
    pub max_interval: u32,
    /// `ra_mininterval` (s).
    pub min_interval: u32,
    /// `ra_lifetime` (s): the router lifetime when there is a default route.
    pub lifetime: u32,
    /// `ra_mtu`.
    pub mtu: Option<u32>,
    /// `ra_hoplimit` (0: unspecified).
    pub hop_limit: u8,
    /// `ra_reachabletime` (ms).
    pub reachable_ms: u32,
    /// `ra_retranstime` (ms).
    pub retrans_ms: u32,
    /// `ra_dns`.
    pub dns: bool,
}

impl Default for RaOptions {
    fn default() -> Self {
        RaOptions {
            ra: Mode::Disabled,
            dhcpv6: Mode::Disabled,
            slaac: true,
            managed: false,
            other: true,
            default_route: 0,
            max_interval: 600,
            min_interval: 200,
            lifetime: 1800,
            mtu: None,
            hop_limit: 0,
            reachable_ms: 0,
            retrans_ms: 0,
            dns: true,
        }
    }
}

/// The options odhcpd reads that this module does not (no warning).
pub const IGNORED: &[&str] = &[
    "ra_management",
    "ra_preference",
    "ra_useleasetime",
    "ra_advrouter",
    "ra_pref64",
    "ndp",
    "master",
    "dns",
    "dns_service",
    "domain",
    "ndproxy_routing",
    "ndproxy_slave",
    "prefix_filter",
    "preferred_lifetime",
    "max_preferred_lifetime",
    "max_valid_lifetime",
    "dhcpv6_na",
    "dhcpv6_pd",
    "dhcpv6_pd_min_len",
];

/// Reads the RA options of the section `r` reads.
pub fn read(r: &mut SectionReader<'_>) -> Result<RaOptions, ConfigError> {
    let d = RaOptions::default();
    let modes = "a mode (server, relay, hybrid, disabled)";
    let ra = r.parse("ra", modes, mode)?.unwrap_or(d.ra);
    let dhcpv6 = r.parse("dhcpv6", modes, mode)?.unwrap_or(d.dhcpv6);
    let slaac = r.boolean("ra_slaac", d.slaac)?;
    let (mut managed, mut other) = (d.managed, d.other);
    let flags = r.items("ra_flags");
    if !flags.is_empty() {
        (managed, other) = (false, false);
        for f in flags {
            match f {
                "managed-config" => managed = true,
                "other-config" => other = true,
                "home-agent" | "none" => {}
                v => {
                    return Err(r.error(
                        "ra_flags",
                        format!(
                            "'{v}' is not a flag (managed-config, other-config, home-agent, none)"
                        ),
                    ))
                }
            }
        }
    }
    let default_route = r
        .parse("ra_default", "0, 1 or 2", |v| {
            parse_uint::<u8>(v).filter(|&n| n <= 2)
        })?
        .unwrap_or(0);
    let max_interval = r
        .parse("ra_maxinterval", "an interval (4-1800 s)", |v| {
            parse_uint::<u32>(v).filter(|n| (4..=1800).contains(n))
        })?
        .unwrap_or(d.max_interval);
    let min_default = max_interval / 3;
    let min_interval = match r.single("ra_mininterval")? {
        None => min_default.max(3),
        Some(v) => match parse_uint::<u32>(v) {
            Some(n) if n >= 3 && u64::from(n) * 4 <= u64::from(max_interval) * 3 => n,
            _ => {
                return Err(r.error(
                    "ra_mininterval",
                    format!(
                    "'{v}' is not an interval from 3 s to 3/4 of ra_maxinterval ({max_interval} s)"
                ),
                ))
            }
        },
    };
    let lifetime = r
        .parse("ra_lifetime", "a lifetime (0-9000 s)", |v| {
            parse_uint::<u32>(v).filter(|&n| n <= 9000)
        })?
        .unwrap_or(3 * max_interval);
    let mtu = r.parse("ra_mtu", "an MTU (1280-65535)", |v| {
        parse_uint::<u32>(v).filter(|n| (1280..=65535).contains(n))
    })?;
    let hop_limit = r
        .parse("ra_hoplimit", "a hop limit (0-255)", parse_uint::<u8>)?
        .unwrap_or(0);
    let reachable_ms = r
        .parse("ra_reachabletime", "a time (0-3600000 ms)", |v| {
            parse_uint::<u32>(v).filter(|&n| n <= 3_600_000)
        })?
        .unwrap_or(0);
    let retrans_ms = r
        .parse("ra_retranstime", "a time (0-60000 ms)", |v| {
            parse_uint::<u32>(v).filter(|&n| n <= 60_000)
        })?
        .unwrap_or(0);
    let dns = r.boolean("ra_dns", d.dns)?;
    r.ignore(IGNORED);
    Ok(RaOptions {
        ra,
        dhcpv6,
        slaac,
        managed,
        other,
        default_route,
        max_interval,
        min_interval,
        lifetime,
        mtu,
        hop_limit,
        reachable_ms,
        retrans_ms,
        dns,
    })
}
