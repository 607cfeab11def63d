//! `/etc/config/dhcp`: the DNS forwarder, DHCP pools and static leases, typed.
//!
//! The options OpenWrt's dnsmasq init script reads (openwrt/openwrt
//! `package/network/services/dnsmasq/files/dnsmasq.init`, `dhcp.conf`; OpenWrt wiki
//! "DNS and DHCP configuration"):
//!
//! - `dnsmasq`: `domainneeded`, `boguspriv`, `rebind_protection`, `rebind_localhost`,
//!   `local`, `domain`, `cachesize`, `server` (upstreams), `port`, ...;
//! - `dhcp` pools: `interface`, `start` (offset into the interface's subnet), `limit`
//!   (pool size), `leasetime` (`N` seconds or with a unit `s/m/h/d/w`, or `infinite`),
//!   `ignore`, `dhcp_option` (list, dnsmasq's `[tag:..,]code|option:name,value` kept as
//!   text), `dhcpv4` (`server`/`disabled`), `force`; odhcpd's IPv6 settings (`dhcpv6`,
//!   `ra`, `ra_flags`, ...) are read by [`crate::ra`] (`ndp` and others recognised,
//!   not used);
//! - `host` static leases: `name`, `mac` (list or space separated), `ip`, `leasetime`;
//! - `odhcpd`: recognised, ignored (Xenlet has no odhcpd).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr};
use core::str::FromStr;

use crate::model::Package;
use crate::network::mac_address;
use crate::ra::RaOptions;
use crate::validate::{parse_uint, Checked, ConfigError, Diagnostic, SectionReader};

/// A lease duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseTime {
    /// A number of seconds.
    Seconds(u32),
    /// `infinite`.
    Infinite,
}

/// `N`, `Ns`, `Nm`, `Nh`, `Nd`, `Nw` or `infinite` (dnsmasq's `--dhcp-range` lease time;
/// at least 2 minutes, which dnsmasq enforces).
pub fn parse_leasetime(v: &str) -> Option<LeaseTime> {
    if v == "infinite" {
        return Some(LeaseTime::Infinite);
    }
    let (num, mult) = match v.as_bytes().last()? {
        b's' => (v.get(..v.len() - 1)?, 1),
        b'm' => (v.get(..v.len() - 1)?, 60),
        b'h' => (v.get(..v.len() - 1)?, 3600),
        b'd' => (v.get(..v.len() - 1)?, 86400),
        b'w' => (v.get(..v.len() - 1)?, 604_800),
        _ => (v, 1),
    };
    let secs = parse_uint::<u32>(num)?.checked_mul(mult)?;
    (secs >= 120).then_some(LeaseTime::Seconds(secs))
}

/// The `dnsmasq` section (DNS forwarder and DHCP server settings).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dnsmasq {
    /// Never forward plain names (no dots) upstream.
    pub domainneeded: bool,
    /// Never forward reverse lookups of private ranges upstream.
    pub boguspriv: bool,
    /// Drop upstream answers that point into private ranges (DNS rebinding).
    pub rebind_protection: bool,
    /// Also treat 127.0.0.0/8 as private for rebind protection.
    pub rebind_localhost: bool,
    /// Answer with the address of the interface the query came in on.
    pub localise_queries: bool,
    /// Add the local domain to plain host names.
    pub expandhosts: bool,
    /// Authoritative DHCP server (NAK unknown leases at once).
    pub authoritative: bool,
    /// Only answer DNS from local subnets.
    pub localservice: bool,
    /// Bind only the configured interfaces.
    pub nonwildcard: bool,
    /// Do not cache negative answers.
    pub nonegcache: bool,
    /// Remove AAAA records from answers.
    pub filter_aaaa: bool,
    /// Remove A records from answers.
    pub filter_a: bool,
    /// Domain answered locally only (`/lan/`).
    pub local: Option<String>,
    /// Local DNS domain (`lan`).
    pub domain: Option<String>,
    /// DNS cache entries (dnsmasq's default 150).
    pub cachesize: u32,
    /// Upstream servers as written (`1.1.1.1`, `/example.com/10.0.0.1`).
    pub servers: Vec<String>,
    /// DNS port (default 53; 0 disables DNS).
    pub port: u16,
    /// Largest EDNS packet.
    pub ednspacket_max: Option<u16>,
    /// Lease file path.
    pub leasefile: Option<String>,
    /// Upstream resolv.conf path.
    pub resolvfile: Option<String>,
}

impl Default for Dnsmasq {
    fn default() -> Self {
        Dnsmasq {
            domainneeded: false,
            boguspriv: false,
            rebind_protection: false,
            rebind_localhost: false,
            localise_queries: false,
            expandhosts: false,
            authoritative: false,
            localservice: false,
            nonwildcard: false,
            nonegcache: false,
            filter_aaaa: false,
            filter_a: false,
            local: None,
            domain: None,
            cachesize: 150,
            servers: Vec::new(),
            port: 53,
            ednspacket_max: None,
            leasefile: None,
            resolvfile: None,
        }
    }
}

/// A `dhcp` section: the DHCPv4 pool of one interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DhcpPool {
    /// The section name (`lan`).
    pub name: String,
    /// The network interface (`/etc/config/network` section) it serves.
    pub interface: String,
    /// First address, as an offset into the interface's subnet (default 100).
    pub start: u32,
    /// Number of addresses (default 150).
    pub limit: u32,
    /// Lease time (default 12h).
    pub leasetime: LeaseTime,
    /// `ignore '1'` or `dhcpv4 'disabled'`: no DHCPv4 on this interface.
    pub ignore: bool,
    /// Serve even if another DHCP server is seen.
    pub force: bool,
    /// Extra DHCP options in dnsmasq syntax (`6,1.1.1.1`, `option:router,10.0.0.1`).
    pub dhcp_option: Vec<String>,
    /// odhcpd's router advertisement settings (`ra`, `ra_*`, `dhcpv6`).
    pub ra: RaOptions,
}

/// A `host` section: a static lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// Host name given to the client and put in DNS.
    pub name: Option<String>,
    /// MAC addresses it matches.
    pub macs: Vec<[u8; 6]>,
    /// The address it gets (`None`: only the name is fixed).
    pub ip: Option<Ipv4Addr>,
    /// Lease time override.
    pub leasetime: Option<LeaseTime>,
}

/// The typed `/etc/config/dhcp`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DhcpConfig {
    /// The dnsmasq section (defaults if absent).
    pub dnsmasq: Dnsmasq,
    /// DHCP pools in order.
    pub pools: Vec<DhcpPool>,
    /// Static leases.
    pub hosts: Vec<Host>,
}

impl DhcpConfig {
    /// The pool for network interface `iface`.
    pub fn pool_for(&self, iface: &str) -> Option<&DhcpPool> {
        self.pools.iter().find(|p| p.interface == iface)
    }
}

/// dnsmasq options OpenWrt's init script knows that Xenlet does not use.
const IGNORED_DNSMASQ: &[&str] = &[
    "filterwin2k",
    "readethers",
    "logqueries",
    "noresolv",
    "strictorder",
    "allservers",
    "quietdhcp",
    "sequential_ip",
    "boguspriv6",
    "dnsforwardmax",
    "queryport",
    "minport",
    "maxport",
    "dhcpleasemax",
    "dhcphostsfile",
    "dhcpscript",
    "addnhosts",
    "interface",
    "notinterface",
    "listen_address",
    "bogusnxdomain",
    "rebind_domain",
    "notinterface",
    "address",
    "ipset",
    "nftset",
    "fast_dns_retry",
    "tftp_root",
    "enable_tftp",
    "dhcp_boot",
    "serversfile",
    "localuse",
    "confdir",
    "addnmount",
    "dnssec",
    "dnsseccheck",
    "noping",
    "min_cache_ttl",
    "max_cache_ttl",
    "rapidcommit",
    "nonegcache_",
    "ignore_hosts_dir",
    "dns_redirect",
    "add_local_fqdn",
    "add_wan_fqdn",
    "logdhcp",
    "logfacility",
    "cache_rr",
];

/// dnsmasq extras of a dhcp section not used (odhcpd's are [`crate::ra`]'s).
const IGNORED_POOL: &[&str] = &["networkid", "tag", "instance", "dhcp_option_force"];

/// Reads `/etc/config/dhcp`.
pub fn dhcp(p: &Package) -> Result<Checked<DhcpConfig>, ConfigError> {
    let mut cfg = DhcpConfig::default();
    let mut warnings: Vec<Diagnostic> = Vec::new();
    let mut notes: Vec<Diagnostic> = Vec::new();
    let mut seen_dnsmasq = false;
    for (idx, s) in p.sections.iter().enumerate() {
        let mut r = SectionReader::new(p, idx, s);
        match s.section_type.as_str() {
            "dnsmasq" => {
                if seen_dnsmasq {
                    warnings.push(
                        r.about_section("second dnsmasq instance not supported, ignored".into()),
                    );
                    continue;
                }
                seen_dnsmasq = true;
                let d = &mut cfg.dnsmasq;
                d.domainneeded = r.boolean("domainneeded", false)?;
                d.boguspriv = r.boolean("boguspriv", false)?;
                d.rebind_protection = r.boolean("rebind_protection", false)?;
                d.rebind_localhost = r.boolean("rebind_localhost", false)?;
                d.localise_queries = r.boolean("localise_queries", false)?;
                d.expandhosts = r.boolean("expandhosts", false)?;
                d.authoritative = r.boolean("authoritative", false)?;
                d.localservice = r.boolean("localservice", false)?;
                d.nonwildcard = r.boolean("nonwildcard", false)?;
                d.nonegcache = r.boolean("nonegcache", false)?;
                d.filter_aaaa = r.boolean("filter_aaaa", false)?;
                d.filter_a = r.boolean("filter_a", false)?;
                d.local = r.single("local")?.map(str::to_string);
                d.domain = r.single("domain")?.map(str::to_string);
                d.cachesize = r
                    .parse("cachesize", "a cache size (0-10000)", |v| {
                        parse_uint::<u32>(v).filter(|&n| n <= 10000)
                    })?
                    .unwrap_or(150);
                d.servers = r
                    .raw_items("server")
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                d.port = r.parse("port", "a port", parse_uint::<u16>)?.unwrap_or(53);
                d.ednspacket_max = r.parse("ednspacket_max", "a packet size (512-65535)", |v| {
                    parse_uint::<u16>(v).filter(|&n| n >= 512)
                })?;
                d.leasefile = r.single("leasefile")?.map(str::to_string);
                d.resolvfile = r.single("resolvfile")?.map(str::to_string);
                r.ignore(IGNORED_DNSMASQ);
                r.finish(&mut warnings);
            }
            "dhcp" => {
                let name = s.name.clone();
                let interface = match r.single("interface")? {
                    Some(i) => i.to_string(),
                    None => name.clone(),
                };
                let dhcpv4_off = match r.single("dhcpv4")? {
                    None | Some("server") => false,
                    Some("disabled") => true,
                    Some(v) => {
                        return Err(
                            r.error("dhcpv4", format!("'{v}' is not a mode (server, disabled)"))
                        )
                    }
                };
                let pool = DhcpPool {
                    name,
                    interface,
                    start: r
                        .parse("start", "an address offset", parse_uint::<u32>)?
                        .unwrap_or(100),
                    limit: r
                        .parse("limit", "a pool size (1 or more)", |v| {
                            parse_uint::<u32>(v).filter(|&n| n > 0)
                        })?
                        .unwrap_or(150),
                    leasetime: r
                        .parse(
                            "leasetime",
                            "a lease time (N[smhdw] of at least 2m, or infinite)",
                            parse_leasetime,
                        )?
                        .unwrap_or(LeaseTime::Seconds(12 * 3600)),
                    ignore: r.boolean("ignore", false)? || dhcpv4_off,
                    force: r.boolean("force", false)?,
                    dhcp_option: r.parse_items(
                        "dhcp_option",
                        "a DHCP option (code,value or option:name,value)",
                        |v| v.contains(',').then(|| v.to_string()),
                    )?,
                    ra: crate::ra::read(&mut r)?,
                };
                r.ignore(IGNORED_POOL);
                r.finish(&mut warnings);
                cfg.pools.push(pool);
            }
            "host" => {
                let host = Host {
                    name: r.single("name")?.map(str::to_string),
                    macs: r.parse_items("mac", "a MAC address", mac_address)?,
                    ip: r.parse("ip", "an IPv4 address", |v| match IpAddr::from_str(v) {
                        Ok(IpAddr::V4(a)) => Some(a),
                        _ => None,
                    })?,
                    leasetime: r.parse(
                        "leasetime",
                        "a lease time (N[smhdw] of at least 2m, or infinite)",
                        parse_leasetime,
                    )?,
                };
                if host.macs.is_empty() && host.name.is_none() {
                    return Err(r.about_section("a host needs a 'mac' or a 'name'".into()));
                }
                r.ignore(&[
                    "dns",
                    "hostid",
                    "duid",
                    "tag",
                    "broadcast",
                    "instance",
                    "match_tag",
                ]);
                r.finish(&mut warnings);
                cfg.hosts.push(host);
            }
            "odhcpd" => notes.push(r.about_section("odhcpd is not part of Xenlet, ignored".into())),
            t @ ("domain" | "cname" | "mxhost" | "srvhost" | "boot" | "mac" | "tag"
            | "vendorclass" | "userclass" | "circuitid" | "remoteid" | "subscrid"
            | "match" | "relay" | "ipset") => {
                warnings.push(r.about_section(format!("'{t}' sections are not supported, ignored")))
            }
            t => warnings.push(r.about_section(format!("unknown section type '{t}', ignored"))),
        }
    }
    Ok(Checked {
        config: cfg,
        warnings,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::parse::parse;
    use crate::ra::Mode;

    fn d(text: &str) -> Result<Checked<DhcpConfig>, ConfigError> {
        dhcp(&parse("/etc/config/dhcp", "dhcp", text).unwrap())
    }

    #[test]
    fn defaults_parse_without_warnings() {
        for text in [fixtures::IMAGE_DHCP, fixtures::DNSMASQ_DHCP] {
            let c = d(text).unwrap();
            assert_eq!(c.warnings, []);
            let m = &c.config.dnsmasq;
            assert!(m.domainneeded && m.boguspriv && m.rebind_protection && m.authoritative);
            assert_eq!(
                (m.local.as_deref(), m.domain.as_deref()),
                (Some("/lan/"), Some("lan"))
            );
            let lan = c.config.pool_for("lan").unwrap();
            assert_eq!(
                (lan.start, lan.limit, lan.leasetime, lan.ignore),
                (100, 150, LeaseTime::Seconds(43200), false)
            );
            assert!(c.config.pool_for("wan").unwrap().ignore);
        }
        // the image's lan: odhcpd's defaults as odhcpd.defaults writes them
        let lan = d(fixtures::IMAGE_DHCP).unwrap().config.pools[0].ra;
        assert_eq!(
            (lan.ra, lan.dhcpv6, lan.slaac, lan.managed, lan.other),
            (Mode::Server, Mode::Server, true, true, true)
        );
        assert_eq!(
            (
                lan.max_interval,
                lan.min_interval,
                lan.lifetime,
                lan.default_route,
                lan.dns
            ),
            (600, 200, 1800, 0, true)
        );
        assert_eq!(
            d(fixtures::IMAGE_DHCP).unwrap().config.pools[1].ra.ra,
            Mode::Disabled
        );
        assert_eq!(
            d(fixtures::DNSMASQ_DHCP).unwrap().config.dnsmasq.cachesize,
            1000
        );
        assert_eq!(
            d(fixtures::DNSMASQ_DHCP)
                .unwrap()
                .config
                .dnsmasq
                .ednspacket_max,
            Some(1232)
        );
    }

    #[test]
    fn router_advertisement_options() {
        let c = d(concat!(
            "config dhcp 'lan'\n\toption ra 'server'\n\toption ra_slaac '0'\n\tlist ra_flags 'none'\n",
            "\toption ra_default '1'\n\toption ra_maxinterval '60'\n\toption ra_mtu '1400'\n\toption ra_hoplimit '32'\n",
            "\toption ra_dns '0'\n\toption ra_lifetime '0'\n\toption ndp 'disabled'\n",
            "config dhcp 'guest'\n\toption ra_flags 'managed-config'\n\toption ra_mininterval '10'\n",
        ))
        .unwrap();
        assert_eq!(c.warnings, []);
        let lan = c.config.pools[0].ra;
        assert_eq!(
            (lan.ra, lan.slaac, lan.managed, lan.other, lan.default_route),
            (Mode::Server, false, false, false, 1)
        );
        assert_eq!(
            (
                lan.max_interval,
                lan.min_interval,
                lan.lifetime,
                lan.mtu,
                lan.hop_limit,
                lan.dns
            ),
            (60, 20, 0, Some(1400), 32, false)
        );
        let g = c.config.pools[1].ra;
        assert_eq!(
            (g.ra, g.managed, g.other, g.min_interval, g.lifetime),
            (Mode::Disabled, true, false, 10, 1800)
        );
        for (opt, msg) in [
            ("option ra 'sever'", "option 'ra': 'sever' is not a mode (server, relay, hybrid, disabled)"),
            ("list ra_flags 'managed'", "option 'ra_flags': 'managed' is not a flag (managed-config, other-config, home-agent, none)"),
            ("option ra_maxinterval '2'", "option 'ra_maxinterval': '2' is not an interval (4-1800 s)"),
            ("option ra_mininterval '500'", "option 'ra_mininterval': '500' is not an interval from 3 s to 3/4 of ra_maxinterval (600 s)"),
            ("option ra_mtu '1000'", "option 'ra_mtu': '1000' is not an MTU (1280-65535)"),
            ("option ra_default '3'", "option 'ra_default': '3' is not 0, 1 or 2"),
        ] {
            let e = d(&format!("config dhcp 'lan'\n\t{opt}\n")).unwrap_err();
            assert_eq!(e.to_string(), format!("/etc/config/dhcp: dhcp 'lan': {msg}"));
        }
    }

    #[test]
    fn hosts_leasetimes_options() {
        let c = d(concat!(
            "config dhcp 'guest'\n\toption interface 'guest'\n\toption leasetime 'infinite'\n\tlist dhcp_option '6,1.1.1.1'\n\tlist dhcp_option 'option:router,10.0.0.1'\n\toption dhcpv4 'disabled'\n",
            "config host\n\toption name 'nas'\n\toption mac '00:11:22:33:44:55 66-77-88-99-aa-bb'\n\toption ip '192.168.1.20'\n\toption leasetime '1w'\n",
            "config odhcpd 'odhcpd'\n\toption maindhcp '0'\n",
        ))
        .unwrap();
        assert_eq!(c.warnings, []);
        assert_eq!(c.notes.len(), 1);
        let g = &c.config.pools[0];
        assert_eq!(
            (g.leasetime, g.ignore, g.dhcp_option.len()),
            (LeaseTime::Infinite, true, 2)
        );
        let h = &c.config.hosts[0];
        assert_eq!(
            h.macs,
            [
                [0, 0x11, 0x22, 0x33, 0x44, 0x55],
                [0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb]
            ]
        );
        assert_eq!(
            (h.ip, h.leasetime),
            (
                Some(Ipv4Addr::new(192, 168, 1, 20)),
                Some(LeaseTime::Seconds(604_800))
            )
        );
        for (v, secs) in [
            ("120", 120),
            ("2m", 120),
            ("12h", 43200),
            ("1d", 86400),
            ("90s", 0),
        ] {
            assert_eq!(
                parse_leasetime(v),
                (secs > 0).then_some(LeaseTime::Seconds(secs)),
                "{v}"
            );
        }
        assert_eq!(parse_leasetime("99999999w"), None);
        assert_eq!(parse_leasetime("h"), None);
    }

    #[test]
    fn bad_values_are_located_errors() {
        let cases = [
            (
                "config dhcp 'lan'\n\toption leasetime '12y'\n",
                "dhcp 'lan': option 'leasetime': '12y' is not a lease time",
            ),
            (
                "config dhcp 'lan'\n\toption start '-5'\n",
                "dhcp 'lan': option 'start': '-5' is not an address offset",
            ),
            (
                "config dhcp 'lan'\n\toption limit '0'\n",
                "dhcp 'lan': option 'limit': '0' is not a pool size",
            ),
            (
                "config dhcp 'lan'\n\toption ignore 'kinda'\n",
                "dhcp 'lan': option 'ignore': 'kinda' is not a boolean",
            ),
            (
                "config dhcp 'lan'\n\tlist dhcp_option 'garbage'\n",
                "dhcp 'lan': option 'dhcp_option': 'garbage' is not a DHCP option",
            ),
            (
                "config dhcp 'lan'\n\toption dhcpv4 'hybrid'\n",
                "dhcp 'lan': option 'dhcpv4': 'hybrid' is not a mode",
            ),
            (
                "config host\n\toption mac '00:11:22:33:44:zz'\n",
                "@host[0]: option 'mac': '00:11:22:33:44:zz' is not a MAC address",
            ),
            (
                "config host\n\toption mac '00:11:22:33:44:55'\n\toption ip 'fe80::1'\n",
                "@host[0]: option 'ip': 'fe80::1' is not an IPv4 address",
            ),
            (
                "config host\n\toption ip '10.0.0.1'\n",
                "@host[0]: a host needs a 'mac' or a 'name'",
            ),
            (
                "config dnsmasq\n\toption cachesize 'lots'\n",
                "@dnsmasq[0]: option 'cachesize': 'lots' is not a cache size",
            ),
            (
                "config dnsmasq\n\toption port '65536'\n",
                "@dnsmasq[0]: option 'port': '65536' is not a port",
            ),
        ];
        for (text, msg) in cases {
            let e = d(text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("/etc/config/dhcp: {msg}")), "{e}");
        }
        let c = d("config dnsmasq\n\toption bogus '1'\nconfig mystery\n").unwrap();
        assert_eq!(c.warnings.len(), 2);
    }
}
