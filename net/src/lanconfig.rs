//! From OpenWrt's `/etc/config/dhcp` (and the addresses of `/etc/config/network`)
//! to what the LAN services run: one DHCP pool per served LAN interface and the DNS
//! forwarder's settings ([`ServicesSpec`]).
//!
//! The mapping follows OpenWrt's `package/network/services/dnsmasq/files/dnsmasq.init`
//! (openwrt/openwrt): a `config dhcp` section serves the `interface` it names unless
//! `ignore '1'` (the default files serve `lan`, ignore `wan`); `start`/`limit` are
//! offsets into that interface's subnet, `leasetime` its lease, `dhcp_option` extra
//! options; `config host` sections with an `ip` in the subnet are fixed leases; the
//! `dnsmasq` section's `domain`, `domainneeded`, `boguspriv`, `rebind_protection`,
//! `rebind_localhost`, `local`, `cachesize`, `authoritative` and `server` carry over.
//! Upstream DNS servers are dnsmasq's `server` entries and the `dns` options of
//! `/etc/config/network`'s interfaces; at run time the WAN's DHCP lease adds its own
//! (as netifd's `resolv.conf.auto` does).
//!
//! A DHCP server needs an address of its own: an interface configured by DHCP (or
//! not at all) is not served, with a warning.
//!
//! Router advertisements follow odhcpd (`src/router.c`, `src/config.c` in
//! openwrt/odhcpd): a `dhcp` section with `ra 'server'` advertises on its interface
//! the /64s of the interface's IPv6 addresses (the ULA subnet `ip6assign` gave it,
//! see [`crate::netplan`]) with the A flag per `ra_slaac` and odhcpd's lifetime caps
//! (valid 5400 s, preferred 2700 s); RDNSS naming the router's address on the link
//! (its ULA `::1`, where the DNS forwarder listens over IPv6) and DNSSL with
//! dnsmasq's `domain` when `ra_dns` (RDNSS only on an interface the DNS forwarder
//! serves: with dnsmasq's `port '0'`, or no DHCPv4 pool on it, a warning says it is
//! left out, as hosts would wait on a server that never answers); router lifetime 0
//! while there is no IPv6
//! upstream, unless `ra_default` is 1 or 2 (odhcpd's "no default route present,
//! setting ra_lifetime to 0"). The M and O flags of `ra_flags` are announced on an
//! interface whose DHCPv6 server runs, and not elsewhere (a warning says so): hosts
//! would ask a server that does not answer.
//!
//! DHCPv6 follows odhcpd's `dhcpv6 'server'`: a stateful server on the interface
//! ([`Dhcp6Spec`]) handing out addresses of its IPv6 /64 (the ULA's) with the
//! section's `leasetime`, the router's address as DNS server (where the forwarder
//! listens; none if it does not serve the interface) and dnsmasq's `domain` as the
//! search list; `config host` names are the names of the clients whose DUID
//! carries their MAC. `relay` and `hybrid` are not run (a warning says so).

use crate::config::IfConfig;
use crate::netplan::Plan;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr, SocketAddrV4};
use smoltcp::wire::IpCidr;
use xenlet_router::dhcp6d::{Dhcp6Config, NamedHost};
use xenlet_router::dhcpd::config::LEASE_HEAP_BYTES;
use xenlet_router::dhcpd::{ExtraOption, PoolConfig, StaticHost};
use xenlet_router::dns::{CacheConfig, DnsConfig};
use xenlet_router::ipv6;
use xenlet_router::ra::{RaConfig, RaPrefix};
use xenlet_router::route6::Ipv6Net;
use xenlet_uci::dhcp::{DhcpConfig, DhcpPool, Host, LeaseTime};
use xenlet_uci::network::NetworkConfig;
use xenlet_uci::ra::{Mode, RaOptions};

/// Where the leases are kept across reboots: dnsmasq's `/tmp/dhcp.leases` is on a
/// tmpfs here, so the file lives on the root filesystem.
pub const PERSISTENT_LEASE_FILE: &str = "/etc/dhcp.leases";
/// dnsmasq's (and OpenWrt's) lease file, kept as a copy for `cat` and scripts.
pub const VOLATILE_LEASE_FILE: &str = "/tmp/dhcp.leases";

/// One served LAN interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSpec {
    /// The stack's interface (`eth0`).
    pub vif: String,
    /// The pool.
    pub pool: PoolConfig,
}

/// odhcpd's cap on an announced prefix's valid lifetime (RFC 9096's ND_VALID_LIMIT).
pub const RA_VALID_LIMIT: u32 = 5400;
/// odhcpd's cap on its preferred lifetime (ND_PREFERRED_LIMIT).
pub const RA_PREFERRED_LIMIT: u32 = 2700;

/// Router advertisements on one interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaSpec {
    /// The stack's interface (`eth0`).
    pub vif: String,
    /// What is advertised (`mtu` `None`: the link's).
    pub config: RaConfig,
}

/// The DHCPv6 server of one interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dhcp6Spec {
    /// The stack's interface (`eth0`).
    pub vif: String,
    /// What it serves (`mac` is the interface's, filled in when it starts).
    pub config: Dhcp6Config,
}

/// What the LAN services run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServicesSpec {
    /// DHCP pools, one per served interface.
    pub pools: Vec<PoolSpec>,
    /// Router advertisements, one per interface with `ra 'server'`.
    pub ra: Vec<RaSpec>,
    /// DHCPv6 servers, one per interface with `dhcpv6 'server'` and an IPv6 /64.
    pub dhcp6: Vec<Dhcp6Spec>,
    /// The DNS forwarder's settings (its LAN address is the first pool's server),
    /// `None` when dnsmasq's `port` is 0 or no interface is served.
    pub dns: Option<DnsConfig>,
    /// Upstream servers from the files (dnsmasq `server`, network `dns`).
    pub upstreams: Vec<SocketAddrV4>,
    /// dnsmasq's `localservice`: DNS answers only clients on a served subnet.
    pub local_service: bool,
    /// The lease file on the root filesystem.
    pub lease_file: String,
    /// The lease file's copy on the tmpfs, where OpenWrt keeps it.
    pub lease_view: Option<String>,
    /// Settings not carried over, for the console.
    pub warnings: Vec<String>,
    /// `wan6` (`proto dhcpv6`), if configured.
    pub wan6: Option<crate::netplan::Wan6Plan>,
    /// The interfaces with `ip6assign` (vif, `ip6assign`, `ip6hint`): their share of
    /// a delegated prefix.
    pub ip6assign: Vec<(String, u8, Option<u64>)>,
    /// The IPv6 addresses the files give each interface (vif, address: the ULA
    /// `::1/64` of `ip6assign`), for `reload` to put on or take off.
    pub addrs6: Vec<(String, IpCidr)>,
}

impl ServicesSpec {
    /// Sizes the DNS forwarder's tables to a heap of `heap_bytes` (dnsmasq's
    /// defaults assume a machine, not a 1 MiB heap): each query waiting on an
    /// upstream holds a UDP socket of about 9 KiB, so at most an eighth of the heap
    /// goes to them (17 at memory = 8, dnsmasq's 150 from a 12 MiB heap); the cache
    /// gets at most a sixteenth (80 KiB there, its 1 MiB from 16 MiB). Further
    /// queries are dropped and counted as dnsmasq does past `dns-forward-max`.
    ///
    /// Each DHCP pool keeps at most as many leases as a sixteenth of the heap holds
    /// (shared by the pools; a lease takes up to [`LEASE_HEAP_BYTES`]): 160 for one
    /// pool in a 1.25 MiB heap, dnsmasq's 1000 from 8 MiB.
    pub fn fit_to_heap(&mut self, heap_bytes: usize) {
        let per_pool = heap_bytes / 16 / LEASE_HEAP_BYTES / self.pools.len().max(1);
        for p in &mut self.pools {
            p.pool.max_leases = p.pool.max_leases.min(per_pool.max(16));
        }
        // The DHCPv6 leases take as much again (a DUID is up to 130 bytes).
        let per_v6 = heap_bytes / 16 / LEASE_HEAP_BYTES / self.dhcp6.len().max(1);
        for d in &mut self.dhcp6 {
            d.config.max_leases = d.config.max_leases.min(per_v6.max(16));
        }
        if let Some(d) = self.dns.as_mut() {
            d.max_pending = d.max_pending.min((heap_bytes / 8 / (9 << 10)).max(8));
            d.cache.max_bytes = d.cache.max_bytes.min((heap_bytes / 16).max(32 << 10));
        }
    }
}

/// A dnsmasq `server` value: `ADDR` or `ADDR#PORT` (IPv4); domain-specific forms
/// (`/example.com/ADDR`) and IPv6 are not supported.
pub fn parse_server(s: &str) -> Option<SocketAddrV4> {
    let (addr, port) = match s.split_once('#') {
        Some((a, p)) => (a, p.parse::<u16>().ok().filter(|p| *p != 0)?),
        None => (s, 53),
    };
    Some(SocketAddrV4::new(
        addr.trim().parse::<Ipv4Addr>().ok()?,
        port,
    ))
}

/// The netmask of a prefix length (0..=32).
fn netmask(prefix: u8) -> Ipv4Addr {
    Ipv4Addr::from(
        u32::MAX
            .checked_shl(32 - u32::from(prefix.min(32)))
            .unwrap_or(0),
    )
}

/// Builds the services for `plan`'s interfaces from the typed `/etc/config/dhcp` and
/// `/etc/config/network`.
pub fn spec(dhcp: &DhcpConfig, network: &NetworkConfig, plan: &Plan) -> ServicesSpec {
    let d = &dhcp.dnsmasq;
    let mut warnings = Vec::new();
    let mut pools = Vec::new();
    let domain = d.domain.clone().unwrap_or_else(|| String::from("lan"));
    for (vif, uci_name, ifc) in &plan.ifaces {
        let Some(p) = dhcp.pool_for(uci_name) else {
            continue;
        };
        if p.ignore {
            continue;
        }
        let Some(cidr) = ifc.addrs.iter().find_map(|c| match c {
            IpCidr::Ipv4(c) => Some(*c),
            IpCidr::Ipv6(_) => None,
        }) else {
            warnings.push(format!(
                "dhcp: pool '{}': interface '{uci_name}' has no static IPv4 address; not served",
                p.name
            ));
            continue;
        };
        let mut pool = PoolConfig::new(uci_name, cidr.address(), netmask(cidr.prefix_len()));
        pool.start = p.start;
        pool.limit = p.limit;
        pool.lease_secs = match p.leasetime {
            LeaseTime::Seconds(s) => s,
            // RFC 2132 §9.2: 0xffffffff is an infinite lease.
            LeaseTime::Infinite => u32::MAX,
        };
        pool.domain = domain.clone();
        pool.authoritative = d.authoritative;
        for o in &p.dhcp_option {
            match ExtraOption::parse(o) {
                Ok(e) => pool.extra.push(e),
                Err(e) => warnings.push(format!(
                    "dhcp: pool '{}': dhcp_option '{o}' not supported ({e:?}); skipped",
                    p.name
                )),
            }
        }
        for h in &dhcp.hosts {
            let Some(ip) = h.ip.filter(|ip| pool.in_subnet(*ip)) else {
                continue;
            };
            for mac in &h.macs {
                pool.hosts.push(StaticHost {
                    name: h.name.clone(),
                    mac: *mac,
                    ip,
                });
            }
        }
        if pool.range().is_none() {
            warnings.push(format!(
                "dhcp: pool '{}': start {} limit {} leave no address in {}; only fixed hosts served",
                p.name, p.start, p.limit, cidr
            ));
        }
        pools.push(PoolSpec {
            vif: vif.clone(),
            pool,
        });
    }
    let mut ra = Vec::new();
    let mut dhcp6 = Vec::new();
    for (vif, uci_name, ifc) in &plan.ifaces {
        let Some(p) = dhcp.pool_for(uci_name) else {
            continue;
        };
        // The forwarder listens (IPv4 and IPv6) on the interfaces with a pool.
        let dns_here = d.port != 0 && pools.iter().any(|s| s.vif == *vif);
        let v6 = match dhcp6_config(p, ifc, &domain, dns_here, &dhcp.hosts) {
            Ok(c) => c,
            Err(e) => {
                warnings.push(format!("dhcp: '{}': {e}; no DHCPv6 server", p.name));
                None
            }
        };
        let v6_runs = v6.is_some();
        if let Some(config) = v6 {
            dhcp6.push(Dhcp6Spec {
                vif: vif.clone(),
                config,
            });
        }
        match ra_config(&p.ra, ifc, &domain, dns_here) {
            Ok(Some(mut config)) => {
                // the interface's `option mtu` when `ra_mtu` does not say
                if config.mtu.is_none() {
                    config.mtu = plan.mtu_of(vif).map(u32::from);
                }
                if p.ra.dns && !dns_here {
                    warnings.push(format!(
                        "dhcp: '{}': ra_dns: no RDNSS announced: the DNS forwarder does not serve this interface (dnsmasq port 0, or no DHCPv4 pool)",
                        p.name
                    ));
                }
                if v6_runs {
                    config.managed = p.ra.managed;
                    config.other = p.ra.other;
                } else if p.ra.managed || p.ra.other {
                    warnings.push(format!(
                        "dhcp: '{}': ra_flags managed-config/other-config not announced: no DHCPv6 server on this interface (dhcpv6 'server' not set; SLAAC and RDNSS serve the LAN)",
                        p.name
                    ));
                }
                ra.push(RaSpec {
                    vif: vif.clone(),
                    config,
                });
            }
            Ok(None) => {}
            Err(e) => warnings.push(format!("dhcp: '{}': {e}; no router advertisements", p.name)),
        }
    }
    let mut upstreams: Vec<SocketAddrV4> = Vec::new();
    for s in &d.servers {
        match parse_server(s) {
            Some(a) if !upstreams.contains(&a) => upstreams.push(a),
            Some(_) => {}
            None => warnings.push(format!(
                "dhcp: dnsmasq server '{s}' not supported (plain IPv4 servers only); skipped"
            )),
        }
    }
    for i in network.interfaces.iter().filter(|i| !i.disabled) {
        for a in &i.dns {
            if let IpAddr::V4(a) = a {
                let a = SocketAddrV4::new(*a, 53);
                if !upstreams.contains(&a) {
                    upstreams.push(a);
                }
            }
        }
    }
    let dns = match pools.first() {
        Some(first) if d.port != 0 => {
            if d.port != 53 {
                warnings.push(format!(
                    "dhcp: dnsmasq port {} not supported; DNS on port 53",
                    d.port
                ));
            }
            let mut c = DnsConfig::new(first.pool.server, first.pool.netmask);
            // The router's IPv6 address on that LAN (its ULA ::1), for AAAA.
            c.lan_addr6 = plan.config_of(&first.vif).and_then(|ifc| {
                ifc.addrs.iter().find_map(|a| match a {
                    IpCidr::Ipv6(c) if !ipv6::is_link_local(c.address()) => Some(c.address()),
                    _ => None,
                })
            });
            c.domain = domain.clone();
            c.domain_needed = d.domainneeded;
            c.bogus_priv = d.boguspriv;
            c.rebind_protection = d.rebind_protection;
            c.rebind_localhost = d.rebind_localhost;
            c.local_domain_only = d
                .local
                .as_deref()
                .is_some_and(|l| l.trim_matches('/').eq_ignore_ascii_case(&domain));
            c.cache = CacheConfig {
                entries: usize::try_from(d.cachesize).unwrap_or(0),
                ..CacheConfig::default()
            };
            c.upstreams = upstreams.iter().map(|&a| a.into()).collect();
            Some(c)
        }
        _ => None,
    };
    let lease_file = match d.leasefile.as_deref() {
        Some(p) if p.starts_with('/') && !p.starts_with("/tmp/") => String::from(p),
        _ => String::from(PERSISTENT_LEASE_FILE),
    };
    let lease_view = match d.leasefile.as_deref() {
        Some(p) if p.starts_with("/tmp/") => Some(String::from(p)),
        Some(_) => None,
        None => Some(String::from(VOLATILE_LEASE_FILE)),
    };
    ServicesSpec {
        pools,
        ra,
        dhcp6,
        dns,
        upstreams,
        local_service: d.localservice,
        lease_file,
        lease_view,
        warnings,
        wan6: plan.wan6.clone(),
        ip6assign: plan.ip6assign.clone(),
        addrs6: plan
            .ifaces
            .iter()
            .flat_map(|(vif, _, ifc)| {
                ifc.addrs
                    .iter()
                    .filter(|a| matches!(a, IpCidr::Ipv6(c) if !ipv6::is_link_local(c.address())))
                    .map(move |a| (vif.clone(), *a))
            })
            .collect(),
    }
}

/// The DHCPv6 server of an interface configured `ifc` for `dhcp` section `p`:
/// `None` unless `dhcpv6 'server'`; an error when it cannot run. `dns`: whether the
/// router's address may be announced as a DNS server.
fn dhcp6_config(
    p: &DhcpPool,
    ifc: &IfConfig,
    domain: &str,
    dns: bool,
    hosts: &[Host],
) -> Result<Option<Dhcp6Config>, String> {
    if !serves("dhcpv6", p.ra.dhcpv6)? {
        return Ok(None);
    }
    let own = own_prefixes(ifc);
    let Some(first) = own.iter().find(|n| n.prefix_len() <= 64) else {
        return Err(String::from(
            "dhcpv6 'server' but the interface has no IPv6 /64 (ula_prefix, ip6assign)",
        ));
    };
    let prefix = Ipv6Net::new(first.addr(), 64).unwrap_or(*first);
    let mut c = Dhcp6Config::new(&p.interface, prefix, [0; 6]);
    c.router_addrs = own.iter().map(|n| n.addr()).collect();
    if dns {
        c.dns = alloc::vec![first.addr()];
    }
    c.domain = String::from(domain);
    c.lease_secs = match p.leasetime {
        LeaseTime::Seconds(s) => s,
        LeaseTime::Infinite => u32::MAX,
    };
    for h in hosts {
        if let Some(name) = &h.name {
            for mac in &h.macs {
                c.hosts.push(NamedHost {
                    mac: *mac,
                    name: name.clone(),
                });
            }
        }
    }
    Ok(Some(c))
}

/// Whether odhcpd's `what` (`ra`, `dhcpv6`) in mode `m` is served: not when
/// disabled; an error for a relay, which there is not.
fn serves(what: &str, m: Mode) -> Result<bool, String> {
    match m {
        Mode::Disabled => Ok(false),
        Mode::Relay | Mode::Hybrid => {
            Err(format!("{what} '{m:?}' not supported (no relay)").to_lowercase())
        }
        Mode::Server => Ok(true),
    }
}

/// The interface's own IPv6 prefixes but link-local ones, as configured.
fn own_prefixes(ifc: &IfConfig) -> Vec<Ipv6Net> {
    ifc.addrs
        .iter()
        .filter_map(|c| match c {
            IpCidr::Ipv6(c) if !ipv6::is_link_local(c.address()) => {
                Ipv6Net::new(c.address(), c.prefix_len())
            }
            _ => None,
        })
        .collect()
}

/// The advertisements of an interface configured `ifc` with odhcpd's options `o`:
/// `None` unless `ra 'server'`; an error when there is nothing to advertise.
/// `rdnss`: whether the router's address may be announced as a DNS server.
fn ra_config(
    o: &RaOptions,
    ifc: &IfConfig,
    domain: &str,
    rdnss: bool,
) -> Result<Option<RaConfig>, String> {
    if !serves("ra", o.ra)? {
        return Ok(None);
    }
    let own = own_prefixes(ifc);
    let Some(first) = own.first() else {
        return Err(String::from(
            "ra 'server' but the interface has no IPv6 prefix (ula_prefix, ip6assign)",
        ));
    };
    // odhcpd's calc_ra_lifetime: ra_lifetime (0: the preferred limit), at least the
    // maximum interval, at most 5400 s
    let mut lifetime = if o.lifetime > 0 {
        o.lifetime
    } else {
        RA_PREFERRED_LIMIT
    };
    if lifetime < o.max_interval {
        lifetime = o.max_interval;
    }
    lifetime = lifetime.min(RA_VALID_LIMIT);
    let prefixes = own
        .iter()
        .filter(|n| n.prefix_len() <= 64)
        .take(xenlet_router::ra::message::MAX_PREFIXES)
        .filter_map(|n| Ipv6Net::new(n.addr(), 64.max(n.prefix_len())))
        .map(|n| RaPrefix {
            prefix: n.network(),
            on_link: true,
            autonomous: o.slaac,
            valid_secs: RA_VALID_LIMIT,
            preferred_secs: RA_PREFERRED_LIMIT,
        })
        .collect();
    let c = RaConfig {
        managed: false,
        other: false,
        cur_hop_limit: if o.hop_limit == 0 { 64 } else { o.hop_limit },
        // no IPv6 upstream yet: not a default router unless ra_default says so
        router_lifetime_secs: if o.default_route >= 1 {
            u16::try_from(lifetime).unwrap_or(u16::MAX)
        } else {
            0
        },
        reachable_ms: o.reachable_ms,
        retrans_ms: o.retrans_ms,
        mtu: o.mtu,
        prefixes,
        rdnss: if o.dns && rdnss {
            alloc::vec![first.addr()]
        } else {
            Vec::new()
        },
        dnssl: if o.dns && !domain.is_empty() {
            alloc::vec![String::from(domain)]
        } else {
            Vec::new()
        },
        dns_lifetime_secs: lifetime,
        min_interval_secs: o.min_interval,
        max_interval_secs: o.max_interval,
    };
    c.check().map_err(|e| format!("{e}"))?;
    Ok(Some(c))
}

/// [`spec`] from the files' text; a file that does not parse or holds a bad value
/// is an error naming it.
pub fn spec_from_files(dhcp: &str, network: &str, plan: &Plan) -> Result<ServicesSpec, String> {
    let pkg = xenlet_uci::parse("/etc/config/dhcp", "dhcp", dhcp).map_err(|e| format!("{e}"))?;
    let d = xenlet_uci::dhcp::dhcp(&pkg).map_err(|e| format!("{e}"))?;
    let pkg =
        xenlet_uci::parse("/etc/config/network", "network", network).map_err(|e| format!("{e}"))?;
    let n = xenlet_uci::network::network(&pkg).map_err(|e| format!("{e}"))?;
    let mut s = spec(&d.config, &n.config, plan);
    let mut w: Vec<String> = d.warnings.iter().map(|w| format!("{w}")).collect();
    w.append(&mut s.warnings);
    s.warnings = w;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netplan;

    const NETWORK: &str = include_str!("../../xtask/rootfs/etc/config/network");
    const FIREWALL: &str = include_str!("../../xtask/rootfs/etc/config/firewall");
    const DHCP: &str = include_str!("../../xtask/rootfs/etc/config/dhcp");
    const NO_RDNSS: &str = "dhcp: 'lan': ra_dns: no RDNSS announced: the DNS forwarder does not serve this interface (dnsmasq port 0, or no DHCPv4 pool)";
    const NO_DHCPV6: &str = "dhcp: 'lan': ra_flags managed-config/other-config not announced: no DHCPv6 server on this interface (dhcpv6 'server' not set; SLAAC and RDNSS serve the LAN)";

    #[test]
    fn an_interface_mtu_is_the_routers_and_its_advertisements() {
        // `option mtu` on lan (its device br-lan) and wan
        let network = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'").replace(
            "\toption ip6assign '60'",
            "\toption ip6assign '60'\n\toption mtu '1400'",
        );
        let network = network.replace(
            "\toption proto 'dhcp'\n",
            "\toption proto 'dhcp'\n\toption mtu '1492'\n",
        );
        let plan = router_plan(&network);
        assert_eq!(
            (plan.mtu_of("eth0"), plan.mtu_of("eth1")),
            (Some(1400), Some(1492))
        );
        let ports = &plan.gateway.as_ref().unwrap().ports;
        assert_eq!(
            ports.iter().map(|p| p.mtu).collect::<Vec<_>>(),
            [Some(1400), Some(1492)]
        );
        let s = spec_from_files(DHCP, &network, &plan).unwrap();
        assert_eq!(s.ra[0].config.mtu, Some(1400), "the LAN announces its MTU");
        // ra_mtu wins
        let dhcp = DHCP.replace(
            "option ra_slaac '1'",
            "option ra_slaac '1'\n\toption ra_mtu '1300'",
        );
        let s = spec_from_files(&dhcp, &network, &plan).unwrap();
        assert_eq!(s.ra[0].config.mtu, Some(1300));
        // a device section's mtu counts when the interface has none
        let dev = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'").replace(
            "\toption type 'bridge'",
            "\toption type 'bridge'\n\toption mtu '1450'",
        );
        assert_eq!(router_plan(&dev).mtu_of("eth0"), Some(1450));
    }

    #[test]
    fn the_lan_advertises_its_ula_64_as_odhcpd_does() {
        let network = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'");
        let s = spec_from_files(DHCP, &network, &router_plan(&network)).unwrap();
        assert_eq!(s.ra.len(), 1, "lan only");
        let r = &s.ra[0];
        assert_eq!(r.vif, "eth0");
        let c = &r.config;
        let ula1: core::net::Ipv6Addr = "fd12:3456:789a::1".parse().unwrap();
        assert_eq!(
            c.prefixes,
            [RaPrefix {
                prefix: Ipv6Net::new("fd12:3456:789a::".parse().unwrap(), 64).unwrap(),
                on_link: true,
                autonomous: true,
                valid_secs: 5400,
                preferred_secs: 2700,
            }]
        );
        assert_eq!(
            (c.managed, c.other),
            (true, true),
            "ra_flags managed-config other-config: the DHCPv6 server runs"
        );
        assert_eq!(c.router_lifetime_secs, 0, "no IPv6 upstream");
        assert_eq!(
            c.rdnss,
            [ula1],
            "the DNS forwarder at the router's ULA address"
        );
        assert_eq!(c.dnssl, ["lan"]);
        // without DNS on the interface: no RDNSS
        let d =
            xenlet_uci::dhcp::dhcp(&xenlet_uci::parse("/etc/config/dhcp", "dhcp", DHCP).unwrap())
                .unwrap()
                .config;
        let plan = router_plan(&network);
        let no_dns = ra_config(
            &d.pools[0].ra,
            plan.config_of("eth0").unwrap(),
            "lan",
            false,
        )
        .unwrap()
        .unwrap();
        assert!(no_dns.rdnss.is_empty());
        let port0 = DHCP.replace("config dnsmasq", "config dnsmasq\n\toption port '0'");
        let s = spec_from_files(&port0, &network, &router_plan(&network)).unwrap();
        assert!(s.dns.is_none() && s.ra[0].config.rdnss.is_empty());
        assert_eq!(s.warnings, [NO_RDNSS]);
        // without a DNS forwarder on the interface DHCPv6 announces no DNS server
        assert!(s.dhcp6[0].config.dns.is_empty());
        assert_eq!(
            (
                c.min_interval_secs,
                c.max_interval_secs,
                c.dns_lifetime_secs
            ),
            (200, 600, 1800)
        );
        assert_eq!((c.cur_hop_limit, c.mtu), (64, None));

        // ra_default 1: a default router even with only the ULA; no SLAAC; no DNS
        let dhcp = DHCP.replace(
            "option ra_slaac '1'",
            "option ra_slaac '0'\n\toption ra_default '1'\n\toption ra_dns '0'\n\toption ra_maxinterval '60'\n\toption ra_mtu '1400'",
        );
        let s = spec_from_files(&dhcp, &network, &router_plan(&network)).unwrap();
        let c = &s.ra[0].config;
        assert_eq!(
            c.router_lifetime_secs, 180,
            "3 × ra_maxinterval (RFC 4861's AdvDefaultLifetime)"
        );
        assert!(!c.prefixes[0].autonomous);
        assert!(c.rdnss.is_empty() && c.dnssl.is_empty());
        assert_eq!(
            (c.min_interval_secs, c.max_interval_secs, c.mtu),
            (20, 60, Some(1400))
        );

        // no ULA: no advertisements and no DHCPv6 server, each said once
        let s = spec_from_files(DHCP, NETWORK, &router_plan(NETWORK)).unwrap();
        assert!(s.ra.is_empty() && s.dhcp6.is_empty());
        assert_eq!(
            s.warnings,
            [
                "dhcp: 'lan': dhcpv6 'server' but the interface has no IPv6 /64 (ula_prefix, ip6assign); no DHCPv6 server",
                "dhcp: 'lan': ra 'server' but the interface has no IPv6 prefix (ula_prefix, ip6assign); no router advertisements"
            ]
        );
        assert_eq!(s.pools.len(), 1, "DHCPv4 and DNS go on");
        // relay is not run; ra absent or disabled is silent
        let relay = DHCP.replace("option ra 'server'", "option ra 'relay'");
        let s = spec_from_files(&relay, &network, &router_plan(&network)).unwrap();
        assert!(s.ra.is_empty());
        assert_eq!(
            s.warnings,
            ["dhcp: 'lan': ra 'relay' not supported (no relay); no router advertisements"]
        );
        let off = DHCP.replace("option ra 'server'", "option ra 'disabled'");
        let s = spec_from_files(&off, &network, &router_plan(&network)).unwrap();
        assert!(s.ra.is_empty() && s.warnings.is_empty());
    }

    #[test]
    fn the_lan_runs_odhcpds_dhcpv6_server_on_its_ula_64() {
        let network = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'");
        let dhcp = DHCP.replace("option leasetime '12h'", "option leasetime '2h'")
            + "\nconfig host\n\toption name 'nas'\n\toption mac '00:11:22:33:44:55'\n";
        let s = spec_from_files(&dhcp, &network, &router_plan(&network)).unwrap();
        assert_eq!(s.dhcp6.len(), 1, "lan only");
        let d = &s.dhcp6[0];
        assert_eq!(d.vif, "eth0");
        let c = &d.config;
        let ula1: core::net::Ipv6Addr = "fd12:3456:789a::1".parse().unwrap();
        assert_eq!(
            c.prefix,
            Ipv6Net::new("fd12:3456:789a::".parse().unwrap(), 64).unwrap()
        );
        assert_eq!(c.router_addrs, [ula1]);
        assert_eq!(c.dns, [ula1]);
        assert_eq!((c.domain.as_str(), c.lease_secs), ("lan", 7200));
        assert_eq!(
            c.hosts,
            [NamedHost {
                mac: [0, 0x11, 0x22, 0x33, 0x44, 0x55],
                name: String::from("nas")
            }]
        );
        // dhcpv6 disabled: no server, and the M/O flags are not announced
        let off = DHCP.replace("option dhcpv6 'server'", "option dhcpv6 'disabled'");
        let s = spec_from_files(&off, &network, &router_plan(&network)).unwrap();
        assert!(s.dhcp6.is_empty());
        assert_eq!(
            (s.ra[0].config.managed, s.ra[0].config.other),
            (false, false)
        );
        assert_eq!(s.warnings, [NO_DHCPV6]);
        // relay: not run, said so
        let relay = DHCP.replace("option dhcpv6 'server'", "option dhcpv6 'relay'");
        let s = spec_from_files(&relay, &network, &router_plan(&network)).unwrap();
        assert!(s.dhcp6.is_empty());
        assert_eq!(
            s.warnings[0],
            "dhcp: 'lan': dhcpv6 'relay' not supported (no relay); no DHCPv6 server"
        );
        // the tables fit the heap
        let mut s = spec_from_files(DHCP, &network, &router_plan(&network)).unwrap();
        s.fit_to_heap(1 << 20);
        assert_eq!(s.dhcp6[0].config.max_leases, 128);
    }

    /// A guest network on a port-less bridge (`bridge_empty`): its DHCP pool and
    /// its advertisements are the bridge's own interface's, as a vif's would be.
    #[test]
    fn a_portless_bridge_is_served_as_a_vifs_interface() {
        let network = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'")
            + "\nconfig device\n\toption name 'br-guest'\n\toption type 'bridge'\n\toption bridge_empty '1'\n\n\
               config interface 'guest'\n\toption device 'br-guest'\n\toption proto 'static'\n\t\
               option ipaddr '192.168.2.1/24'\n\toption ip6assign '64'\n\toption ip6hint '2'\n";
        let dhcp = String::from(DHCP)
            + "\nconfig dhcp 'guest'\n\toption interface 'guest'\n\toption start '100'\n\toption limit '50'\n\t\
               option ra 'server'\n\toption ra_slaac '1'\n";
        let plan = router_plan(&network);
        assert_eq!(plan.portless.len(), 1);
        let s = spec_from_files(&dhcp, &network, &plan).unwrap();
        let pools: Vec<&str> = s.pools.iter().map(|p| p.vif.as_str()).collect();
        assert_eq!(pools, ["eth0", "br-guest"]);
        let guest = &s.pools[1].pool;
        assert_eq!(
            guest.range().map(|(a, _)| a),
            Some(u32::from_be_bytes([192, 168, 2, 100]))
        );
        let ra: Vec<&str> = s.ra.iter().map(|r| r.vif.as_str()).collect();
        assert_eq!(ra, ["eth0", "br-guest"]);
        assert_eq!(
            s.ra[1].config.prefixes[0].prefix,
            Ipv6Net::new("fd12:3456:789a:2::".parse().unwrap(), 64).unwrap(),
            "the guest's ULA /64 (ip6hint 2) advertised on the bridge"
        );
    }

    fn router_plan(network: &str) -> Plan {
        netplan::plan(network, Some(FIREWALL), &["eth0", "eth1"], 64, 1).unwrap()
    }

    #[test]
    fn the_images_files_serve_lan_and_ignore_wan() {
        let network = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'");
        let s = spec_from_files(DHCP, &network, &router_plan(&network)).unwrap();
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.pools.len(), 1, "wan is ignore '1'");
        let p = &s.pools[0];
        assert_eq!(p.vif, "eth0");
        assert_eq!(p.pool.server, Ipv4Addr::new(192, 168, 1, 1));
        assert_eq!(p.pool.netmask, Ipv4Addr::new(255, 255, 255, 0));
        let (a, b) = p.pool.range().unwrap();
        assert_eq!(
            (Ipv4Addr::from(a), Ipv4Addr::from(b)),
            (
                Ipv4Addr::new(192, 168, 1, 100),
                Ipv4Addr::new(192, 168, 1, 249)
            )
        );
        assert_eq!(p.pool.lease_secs, 12 * 3600);
        assert!(p.pool.authoritative);
        assert_eq!(p.pool.domain, "lan");
        let dns = s.dns.expect("DNS on the LAN");
        assert_eq!(dns.lan_addr, Ipv4Addr::new(192, 168, 1, 1));
        assert_eq!(
            dns.lan_addr6,
            Some("fd12:3456:789a::1".parse().unwrap()),
            "the LAN's ULA address, for the router's AAAA"
        );
        assert!(dns.domain_needed && dns.bogus_priv && dns.rebind_protection);
        assert!(dns.rebind_localhost && dns.local_domain_only);
        assert_eq!(dns.cache.entries, 150, "dnsmasq's default cachesize");
        assert!(s.local_service);
        assert_eq!(s.lease_file, "/etc/dhcp.leases");
        assert_eq!(s.lease_view.as_deref(), Some("/tmp/dhcp.leases"));
    }

    #[test]
    fn options_hosts_servers_and_dns_map_over() {
        let dhcp = "config dnsmasq\n\toption domain 'home'\n\toption cachesize '0'\n\t\
                    list server '9.9.9.9'\n\tlist server '1.1.1.1#5353'\n\t\
                    list server '/corp/10.0.0.53'\n\toption leasefile '/var/lib/leases'\n\n\
                    config dhcp 'lan'\n\toption interface 'lan'\n\toption start '10'\n\t\
                    option limit '5'\n\toption leasetime '1h'\n\t\
                    list dhcp_option '6,192.168.1.2'\n\tlist dhcp_option 'option:router,1.2.3.4'\n\n\
                    config host\n\toption name 'nas'\n\toption mac '02:00:00:00:00:99'\n\t\
                    option ip '192.168.1.50'\n\n\
                    config host\n\toption name 'far'\n\toption mac '02:00:00:00:00:98'\n\t\
                    option ip '10.9.9.9'\n";
        let network = NETWORK.replace(
            "option proto 'dhcp'",
            "option proto 'dhcp'\n\tlist dns '8.8.4.4'",
        );
        let s = spec_from_files(dhcp, &network, &router_plan(&network)).unwrap();
        let p = &s.pools[0].pool;
        assert_eq!((p.start, p.limit, p.lease_secs), (10, 5, 3600));
        assert_eq!(p.domain, "home");
        assert!(!p.authoritative, "not set in this file");
        assert_eq!(
            p.extra,
            [ExtraOption {
                code: 6,
                value: alloc::vec![192, 168, 1, 2]
            }]
        );
        assert_eq!(
            p.hosts,
            [StaticHost {
                name: Some("nas".into()),
                mac: [2, 0, 0, 0, 0, 0x99],
                ip: Ipv4Addr::new(192, 168, 1, 50)
            }],
            "the host outside the subnet is not this pool's"
        );
        assert_eq!(
            s.upstreams,
            [
                "9.9.9.9:53".parse().unwrap(),
                "1.1.1.1:5353".parse().unwrap(),
                "8.8.4.4:53".parse().unwrap()
            ]
        );
        let dns = s.dns.unwrap();
        assert_eq!(dns.domain, "home");
        assert_eq!(dns.cache.entries, 0);
        assert!(!dns.local_domain_only && !dns.domain_needed);
        assert_eq!(
            dns.upstreams,
            s.upstreams
                .iter()
                .map(|&a| a.into())
                .collect::<Vec<std::net::SocketAddr>>()
        );
        assert_eq!(s.lease_file, "/var/lib/leases");
        assert_eq!(s.lease_view, None);
        assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
        assert!(s.warnings[0].contains("option:router"), "{:?}", s.warnings);
        assert!(s.warnings[1].contains("/corp/"), "{:?}", s.warnings);
    }

    #[test]
    fn a_dhcp_configured_lan_or_port_zero_runs_no_server() {
        let network = NETWORK.replace("option proto 'static'", "option proto 'dhcp'");
        let s = spec_from_files(DHCP, &network, &router_plan(&network)).unwrap();
        assert!(s.pools.is_empty() && s.dns.is_none());
        assert!(
            s.warnings.iter().any(|w| w.contains("no static IPv4")),
            "{:?}",
            s.warnings
        );
        let dhcp = DHCP.replace("config dnsmasq", "config dnsmasq\n\toption port '0'");
        let s = spec_from_files(&dhcp, NETWORK, &router_plan(NETWORK)).unwrap();
        assert_eq!(s.pools.len(), 1);
        assert!(s.dns.is_none(), "port 0 switches DNS off");
    }

    #[test]
    fn the_dns_tables_fit_the_heap() {
        let sized = |heap: usize| {
            let mut s = spec_from_files(DHCP, NETWORK, &router_plan(NETWORK)).unwrap();
            s.fit_to_heap(heap);
            let d = s.dns.unwrap();
            (d.max_pending, d.cache.max_bytes)
        };
        // memory = 8: a 1.25 MiB heap
        assert_eq!(sized(1280 << 10), (17, 80 << 10));
        // a large heap keeps dnsmasq's defaults
        assert_eq!(sized(64 << 20), (150, 1 << 20));
        // the floor
        assert_eq!(sized(64 << 10), (8, 32 << 10));
    }

    #[test]
    fn the_lease_tables_fit_the_heap() {
        let max = |heap: usize| {
            let mut s = spec_from_files(DHCP, NETWORK, &router_plan(NETWORK)).unwrap();
            s.fit_to_heap(heap);
            s.pools[0].pool.max_leases
        };
        // memory = 8: a 1.25 MiB heap, at most 80 KiB of leases
        assert_eq!(max(1280 << 10), 160);
        // a large heap keeps dnsmasq's dhcp-lease-max
        assert_eq!(max(64 << 20), 1000);
        // the floor
        assert_eq!(max(64 << 10), 16);
    }

    #[test]
    fn server_values() {
        assert_eq!(parse_server("1.2.3.4"), Some("1.2.3.4:53".parse().unwrap()));
        assert_eq!(
            parse_server("1.2.3.4#99"),
            Some("1.2.3.4:99".parse().unwrap())
        );
        assert_eq!(parse_server("1.2.3.4#0"), None);
        assert_eq!(parse_server("/lan/"), None);
        assert_eq!(parse_server("::1"), None);
        assert_eq!(netmask(24), Ipv4Addr::new(255, 255, 255, 0));
        assert_eq!(netmask(0), Ipv4Addr::UNSPECIFIED);
        assert_eq!(netmask(32), Ipv4Addr::BROADCAST);
    }
}
