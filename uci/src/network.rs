//! `/etc/config/network`: interfaces, devices, static routes, globals, typed.
//!
//! What netifd reads (OpenWrt wiki "Network configuration", netifd `proto.c`
//! `proto_apply_static_ip_settings`, `device.c`, `bridge.c`, `config.c`), the IPv4 part
//! that Xenlet's router uses:
//!
//! - `interface` sections: `device` (or the pre-21.02 `ifname`), `proto` `static`, `dhcp` or
//!   `none` (IPv6 and tunnel protocols such as `dhcpv6`, `pppoe` are recognised and left
//!   out with a note), `ipaddr` (a dotted address with `netmask`, or `a.b.c.d/len`, or a
//!   list of either), `gateway`, `dns` (list), `mtu`, `metric`, `disabled`/`auto`;
//! - `device` sections: `name`, `type bridge` with `ports`; an interface whose device is a
//!   bridge is resolved to the bridge's ports;
//! - `route` sections (`interface`, `target`, `netmask`, `gateway`, `metric`, `mtu`);
//! - `globals` (`ula_prefix`: `auto` or a prefix, see [`crate::ula`]; `packet_steering`);
//! - the IPv6 LAN options `ip6assign` and `ip6hint` (the interface's subnet of the ULA
//!   prefix).
//!
//! Unknown options and sections are warnings; a bad value is an error naming file,
//! section and option.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::net::{IpAddr, Ipv4Addr};
use core::str::FromStr;

use crate::model::Package;
use crate::ula::{parse_hint, parse_ula, UlaPrefix};
use crate::validate::{parse_uint, Checked, ConfigError, Diagnostic, SectionReader};

/// `reqaddress` and `reqprefix` of a `proto dhcpv6` interface: the DHCPv6 client's own
/// types.
pub use xenlet_router::dhcp6c::{ReqAddress, ReqPrefix};

/// An IPv4 address with its prefix length (`192.168.1.1/24`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    /// The address (host bits kept).
    pub addr: Ipv4Addr,
    /// Prefix length, 0..=32.
    pub prefix_len: u8,
}

impl Ipv4Cidr {
    /// The netmask of the prefix.
    pub fn netmask(&self) -> Ipv4Addr {
        Ipv4Addr::from(prefix_to_mask(self.prefix_len))
    }

    /// The network address (host bits cleared).
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) & prefix_to_mask(self.prefix_len))
    }

    /// Whether `ip` is inside the prefix.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let m = prefix_to_mask(self.prefix_len);
        u32::from(ip) & m == u32::from(self.addr) & m
    }
}

impl fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix_len)
    }
}

fn prefix_to_mask(len: u8) -> u32 {
    match len {
        0 => 0,
        n => u32::MAX << (32 - u32::from(n.min(32))),
    }
}

/// The prefix length of a contiguous netmask (`255.255.255.0` → 24).
pub fn netmask_to_prefix(mask: Ipv4Addr) -> Option<u8> {
    let m = u32::from(mask);
    let len = m.leading_ones();
    (m.checked_shl(len).unwrap_or(0) == 0).then(|| u8::try_from(len).ok())?
}

/// `a.b.c.d` or `a.b.c.d/len`.
pub fn parse_ipv4_cidr(s: &str) -> Option<(Ipv4Addr, Option<u8>)> {
    match s.split_once('/') {
        Some((a, l)) => {
            let len: u8 = parse_uint(l)?;
            (len <= 32).then_some(())?;
            Some((Ipv4Addr::from_str(a).ok()?, Some(len)))
        }
        None => Some((Ipv4Addr::from_str(s).ok()?, None)),
    }
}

/// An interface's addressing protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// Addresses from `ipaddr`/`netmask`.
    Static,
    /// DHCPv4 client.
    Dhcp,
    /// Up, no address.
    None,
    /// DHCPv6 client and router discovery (`wan6`, odhcp6c): an IPv6 interface on
    /// the device of another (the WAN's), no IPv4.
    Dhcpv6,
}

/// A logical interface (`config interface 'lan'`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// The section name (`lan`), which firewall zones and DHCP pools refer to.
    pub name: String,
    /// The `device` option as written (`br-lan`, `eth0`).
    pub device: Option<String>,
    /// The physical ports behind `device`: a bridge's `ports`, else the device itself.
    pub ports: Vec<String>,
    /// Addressing protocol.
    pub proto: Proto,
    /// Static addresses (empty unless `proto static`).
    pub addrs: Vec<Ipv4Cidr>,
    /// Default gateway (static only).
    pub gateway: Option<Ipv4Addr>,
    /// DNS servers.
    pub dns: Vec<IpAddr>,
    /// MTU override.
    pub mtu: Option<u16>,
    /// Route metric.
    pub metric: Option<u32>,
    /// `disabled '1'` or `auto '0'`: configured but not brought up.
    pub disabled: bool,
    /// `ip6assign`: the length of the subnet of the ULA prefix (and, later, of
    /// delegated prefixes) the interface gets, announced as /64s.
    pub ip6assign: Option<u8>,
    /// `ip6hint`: which subnet (hexadecimal subnet id), the first otherwise.
    pub ip6hint: Option<u64>,
    /// `reqaddress` (`proto dhcpv6`; `try` otherwise).
    pub reqaddress: ReqAddress,
    /// `reqprefix` (`proto dhcpv6`; `auto` otherwise).
    pub reqprefix: ReqPrefix,
}

/// The kind of a `device` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// Settings for an existing device (`macaddr`, `mtu`).
    Plain,
    /// `type 'bridge'`.
    Bridge,
}

/// A `config device` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// Device name (`br-lan`).
    pub name: String,
    /// Plain or bridge.
    pub kind: DeviceKind,
    /// Bridge ports.
    pub ports: Vec<String>,
    /// MTU override.
    pub mtu: Option<u16>,
    /// MAC address override.
    pub macaddr: Option<[u8; 6]>,
    /// `bridge_empty`: the bridge comes up without any port present (netifd's
    /// `force_active`); without it netifd brings up no bridge whose ports are all
    /// missing.
    pub bridge_empty: bool,
}

/// A static IPv4 route (`config route`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The interface it goes out of.
    pub interface: String,
    /// Destination prefix.
    pub target: Ipv4Cidr,
    /// Next hop.
    pub gateway: Option<Ipv4Addr>,
    /// Metric.
    pub metric: Option<u32>,
    /// MTU.
    pub mtu: Option<u16>,
}

/// `config globals`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Globals {
    /// IPv6 ULA prefix (`auto` until the kernel generated one at boot); `None`
    /// without one, or when it is malformed (a warning says so: IPv4 still comes up).
    pub ula_prefix: Option<UlaPrefix>,
    /// Spread packet processing over CPUs.
    pub packet_steering: bool,
}

/// The typed `/etc/config/network`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetworkConfig {
    /// IPv4 interfaces, in file order (IPv6-only and tunnel protocols left out).
    pub interfaces: Vec<Interface>,
    /// Device sections.
    pub devices: Vec<Device>,
    /// Static routes.
    pub routes: Vec<Route>,
    /// Globals.
    pub globals: Globals,
}

impl NetworkConfig {
    /// The interface called `name`.
    pub fn interface(&self, name: &str) -> Option<&Interface> {
        self.interfaces.iter().find(|i| i.name == name)
    }
}

/// Protocols netifd knows that Xenlet does not run (IPv6, tunnels, modems).
const IGNORED_PROTOS: &[&str] = &[
    "6in4",
    "6to4",
    "6rd",
    "dslite",
    "map",
    "pppoe",
    "pppoa",
    "ppp",
    "pptp",
    "l2tp",
    "gre",
    "gretap",
    "grev6",
    "vxlan",
    "wireguard",
    "qmi",
    "ncm",
    "mbim",
    "3g",
    "modemmanager",
    "relay",
    "batadv",
    "openvpn",
    "vti",
    "xfrm",
    "464xlat",
];

/// Interface options netifd knows that Xenlet does not use (no warning).
const IGNORED_INTERFACE_OPTIONS: &[&str] = &[
    "ip6class",
    "ip6addr",
    "ip6gw",
    "ip6prefix",
    "ip6ifaceid",
    "ip6deprecated",
    "ip6weight",
    "ip6table",
    "ip4table",
    "delegate",
    "force_link",
    "peerdns",
    "defaultroute",
    "broadcast",
    "macaddr",
    "hostname",
    "clientid",
    "vendorid",
    "reqopts",
    "sendopts",
    "ipv6",
    "type",
    "multipath",
    "dns_metric",
    "dns_search",
    "layer",
    "zone",
    "classlessroute",
    "norelease",
    "username",
    "password",
    "pdptype",
    "apn",
    "ifname",
];

const IGNORED_DEVICE_OPTIONS: &[&str] = &[
    "ipv6",
    "mtu6",
    "igmp_snooping",
    "multicast_querier",
    "stp",
    "forward_delay",
    "hello_time",
    "max_age",
    "priority",
    "vlan_filtering",
    "txqueuelen",
    "promisc",
    "vid",
    "ifname",
    "acceptlocal",
    "sendredirects",
    "rpfilter",
    "multicast",
    "macaddr_random",
    "rxpause",
    "txpause",
    "autoneg",
    "speed",
    "duplex",
];

/// Section types netifd knows that Xenlet does not use.
const IGNORED_SECTIONS: &[&str] = &[
    "switch",
    "switch_vlan",
    "switch_port",
    "bridge-vlan",
    "route6",
    "rule",
    "rule6",
    "atm-bridge",
    "dsl",
    "alias",
];

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split([':', '-']);
    for b in out.iter_mut() {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// MAC address parser shared with `dhcp.rs` (`aa:bb:cc:dd:ee:ff` or with `-`).
pub fn mac_address(s: &str) -> Option<[u8; 6]> {
    parse_mac(s)
}

fn parse_mtu(s: &str) -> Option<u16> {
    parse_uint::<u16>(s).filter(|&m| m >= 68)
}

/// Reads `/etc/config/network`.
pub fn network(p: &Package) -> Result<Checked<NetworkConfig>, ConfigError> {
    let mut cfg = NetworkConfig::default();
    let mut warnings: Vec<Diagnostic> = Vec::new();
    let mut notes: Vec<Diagnostic> = Vec::new();
    // Devices first: interfaces anywhere in the file may refer to them.
    for (idx, s) in p.sections.iter().enumerate() {
        if s.section_type == "device" {
            let mut r = SectionReader::new(p, idx, s);
            let name = match r.single("name")? {
                Some(n) => n.to_string(),
                None => return Err(r.error("name", "missing (a device needs a name)".into())),
            };
            let kind = match r.single("type")? {
                None => DeviceKind::Plain,
                Some("bridge") => DeviceKind::Bridge,
                Some(other) => {
                    notes.push(
                        r.about_section(format!("device type '{other}' not supported, ignored")),
                    );
                    r.ignore(&["ports", "mtu", "macaddr", "bridge_empty"]);
                    r.ignore(IGNORED_DEVICE_OPTIONS);
                    r.finish(&mut warnings);
                    continue;
                }
            };
            let ports: Vec<String> = r.items("ports").into_iter().map(str::to_string).collect();
            if kind == DeviceKind::Plain && !ports.is_empty() {
                return Err(r.error("ports", "only a 'bridge' device has ports".into()));
            }
            let mtu = r.parse("mtu", "an MTU (68-65535)", parse_mtu)?;
            let macaddr = r.parse("macaddr", "a MAC address", parse_mac)?;
            let bridge_empty = r.boolean("bridge_empty", false)?;
            r.ignore(IGNORED_DEVICE_OPTIONS);
            r.finish(&mut warnings);
            cfg.devices.push(Device {
                name,
                kind,
                ports,
                mtu,
                macaddr,
                bridge_empty,
            });
        }
    }
    for (idx, s) in p.sections.iter().enumerate() {
        let mut r = SectionReader::new(p, idx, s);
        match s.section_type.as_str() {
            "device" => continue,
            "interface" => {
                if let Some(i) = read_interface(&mut r, &cfg.devices, &mut warnings, &mut notes)? {
                    cfg.interfaces.push(i);
                    r.finish(&mut warnings);
                }
            }
            "route" => {
                let interface = match r.single("interface")? {
                    Some(i) => i.to_string(),
                    None => return Err(r.error("interface", "missing".into())),
                };
                let (addr, len) =
                    match r.parse("target", "an IPv4 address or prefix", parse_ipv4_cidr)? {
                        Some(t) => t,
                        None => return Err(r.error("target", "missing".into())),
                    };
                let mask_len = r.parse("netmask", "a netmask", |m| {
                    Ipv4Addr::from_str(m).ok().and_then(netmask_to_prefix)
                })?;
                let prefix_len = len.or(mask_len).unwrap_or(32);
                let gateway =
                    r.parse("gateway", "an IPv4 address", |g| Ipv4Addr::from_str(g).ok())?;
                let metric = r.parse("metric", "a metric", parse_uint::<u32>)?;
                let mtu = r.parse("mtu", "an MTU (68-65535)", parse_mtu)?;
                r.ignore(&["type", "table", "source", "onlink", "proto", "disabled"]);
                r.finish(&mut warnings);
                cfg.routes.push(Route {
                    interface,
                    target: Ipv4Cidr { addr, prefix_len },
                    gateway,
                    metric,
                    mtu,
                });
            }
            "globals" => {
                cfg.globals.ula_prefix = match r.single("ula_prefix")? {
                    None => None,
                    Some(v) => match parse_ula(v) {
                        Some(u) => Some(u),
                        None => {
                            warnings.push(r.error(
                                "ula_prefix",
                                format!("'{v}' is not 'auto' or an IPv6 prefix (fdXX:XXXX:XXXX::/48); no IPv6 ULA"),
                            ));
                            None
                        }
                    },
                };
                cfg.globals.packet_steering = r.boolean("packet_steering", false)?;
                r.ignore(&["steering_flows"]);
                r.finish(&mut warnings);
            }
            t if IGNORED_SECTIONS.contains(&t) => {
                notes.push(r.about_section(format!("'{t}' sections are not used, ignored")));
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

fn read_interface(
    r: &mut SectionReader<'_>,
    devices: &[Device],
    warnings: &mut Vec<Diagnostic>,
    notes: &mut Vec<Diagnostic>,
) -> Result<Option<Interface>, ConfigError> {
    let name = r.section().name.clone();
    let proto = match r.single("proto")? {
        Some("static") => Proto::Static,
        Some("dhcp") => Proto::Dhcp,
        Some("none") => Proto::None,
        Some("dhcpv6") => Proto::Dhcpv6,
        Some(p) if IGNORED_PROTOS.contains(&p) => {
            notes.push(r.about_section(format!("proto '{p}' is not supported, interface ignored")));
            return Ok(None);
        }
        Some(p) => {
            warnings.push(r.about_section(format!("unknown proto '{p}', interface ignored")));
            return Ok(None);
        }
        None => return Err(r.error("proto", "missing (expected static, dhcp or none)".into())),
    };
    let device = match r.single("device")? {
        Some(d) => Some(d.to_string()),
        None => {
            let legacy = r.single("ifname")?;
            if legacy.is_some() {
                warnings.push(r.error(
                    "ifname",
                    "deprecated since OpenWrt 21.02, use 'device'".into(),
                ));
            }
            legacy.map(str::to_string)
        }
    };
    let ports = match &device {
        None => Vec::new(),
        Some(d) if d.starts_with('@') => {
            notes.push(r.error("device", format!("alias '{d}' not supported")));
            Vec::new()
        }
        Some(d) => match devices.iter().find(|x| &x.name == d) {
            Some(dev) if dev.kind == DeviceKind::Bridge => dev.ports.clone(),
            _ => alloc::vec![d.clone()],
        },
    };
    let mut addrs = Vec::new();
    let mut gateway = None;
    if proto == Proto::Static {
        let netmask = r.parse("netmask", "a netmask", |m| {
            Ipv4Addr::from_str(m).ok().and_then(netmask_to_prefix)
        })?;
        let given = r.parse_items("ipaddr", "an IPv4 address", parse_ipv4_cidr)?;
        if given.is_empty() {
            return Err(r.error("ipaddr", "missing (required for proto 'static')".into()));
        }
        for (addr, len) in given {
            let prefix_len = match (len, netmask) {
                (Some(l), _) => l,
                (None, Some(l)) => l,
                (None, None) => 32,
            };
            addrs.push(Ipv4Cidr { addr, prefix_len });
        }
        gateway = r.parse("gateway", "an IPv4 address", |g| Ipv4Addr::from_str(g).ok())?;
    } else {
        r.ignore(&["ipaddr", "netmask", "gateway"]);
    }
    let dns = r.parse_items("dns", "an IP address", |d| IpAddr::from_str(d).ok())?;
    let mtu = r.parse("mtu", "an MTU (68-65535)", parse_mtu)?;
    let metric = r.parse("metric", "a metric", parse_uint::<u32>)?;
    let disabled = r.boolean("disabled", false)? || !r.boolean("auto", true)?;
    // IPv6 settings: a bad value costs the interface its IPv6, not its IPv4
    let ip6assign = match r.single("ip6assign")? {
        None => None,
        Some(v) => match parse_uint::<u8>(v).filter(|&n| n <= 64) {
            Some(n) => Some(n),
            None => {
                warnings.push(r.error(
                    "ip6assign",
                    format!("'{v}' is not a prefix length (0-64); no IPv6 on this interface"),
                ));
                None
            }
        },
    };
    let ip6hint = match r.single("ip6hint")? {
        None => None,
        Some(v) => match parse_hint(v) {
            Some(n) => Some(n),
            None => {
                warnings.push(r.error(
                    "ip6hint",
                    format!("'{v}' is not a hexadecimal subnet id; the first subnet is used"),
                ));
                None
            }
        },
    };
    let reqaddress = match r.single("reqaddress")? {
        None | Some("try") => ReqAddress::Try,
        Some("force") => ReqAddress::Force,
        Some("none") => ReqAddress::None,
        Some(v) => {
            warnings.push(r.error(
                "reqaddress",
                format!("'{v}' is not try, force or none; 'try' is used"),
            ));
            ReqAddress::Try
        }
    };
    let reqprefix = match r.single("reqprefix")? {
        None | Some("auto") => ReqPrefix::Auto,
        Some("no") => ReqPrefix::No,
        Some(v) => match parse_uint::<u8>(v).filter(|&n| (1..=64).contains(&n)) {
            Some(n) => ReqPrefix::Len(n),
            None => {
                warnings.push(r.error(
                    "reqprefix",
                    format!("'{v}' is not auto, no or a prefix length (1-64); 'auto' is used"),
                ));
                ReqPrefix::Auto
            }
        },
    };
    r.ignore(IGNORED_INTERFACE_OPTIONS);
    Ok(Some(Interface {
        name,
        device,
        ports,
        proto,
        addrs,
        gateway,
        dns,
        mtu,
        metric,
        disabled,
        ip6assign,
        ip6hint,
        reqaddress,
        reqprefix,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use crate::parse::parse;

    fn net(text: &str) -> Result<Checked<NetworkConfig>, ConfigError> {
        network(&parse("/etc/config/network", "network", text).unwrap())
    }

    fn cidr(s: &str) -> Ipv4Cidr {
        let (addr, l) = parse_ipv4_cidr(s).unwrap();
        Ipv4Cidr {
            addr,
            prefix_len: l.unwrap(),
        }
    }

    #[test]
    fn image_default_parses_without_warnings() {
        let c = net(fixtures::IMAGE_NETWORK).unwrap();
        assert_eq!(c.warnings, []);
        assert_eq!(c.notes.len(), 0, "{:?}", c.notes);
        let n = &c.config;
        assert_eq!(n.interfaces.len(), 4);
        let wan6 = n.interface("wan6").unwrap();
        assert_eq!(wan6.proto, Proto::Dhcpv6);
        assert_eq!(wan6.ports, ["eth1"]);
        assert_eq!(
            (wan6.reqaddress, wan6.reqprefix),
            (ReqAddress::Try, ReqPrefix::Auto)
        );
        let lo = n.interface("loopback").unwrap();
        assert_eq!(lo.addrs, [cidr("127.0.0.1/8")]);
        let lan = n.interface("lan").unwrap();
        assert_eq!(lan.proto, Proto::Static);
        assert_eq!(lan.ports, ["eth0"]);
        assert_eq!(lan.addrs, [cidr("192.168.1.1/24")]);
        assert_eq!(lan.addrs[0].network(), Ipv4Addr::new(192, 168, 1, 0));
        let wan = n.interface("wan").unwrap();
        assert_eq!(
            (wan.proto, wan.ports.as_slice()),
            (Proto::Dhcp, &["eth1".to_string()][..])
        );
        assert_eq!(n.globals.ula_prefix, Some(UlaPrefix::Auto));
        assert_eq!((lan.ip6assign, lan.ip6hint), (Some(60), None));
        assert_eq!(wan.ip6assign, None);
    }

    #[test]
    fn bridge_empty_is_read() {
        let c = net(concat!(
            "config device 'guest_dev'\n\toption name 'br-guest'\n\toption type 'bridge'\n\toption bridge_empty '1'\n",
            "config device\n\toption name 'br-lan'\n\toption type 'bridge'\n\tlist ports 'eth0'\n",
            "config interface 'guest'\n\toption device 'br-guest'\n\toption proto 'static'\n\toption ipaddr '192.168.2.1/24'\n",
        ))
        .unwrap();
        assert_eq!(c.warnings, []);
        let d = |n: &str| c.config.devices.iter().find(|d| d.name == n).unwrap();
        assert!(d("br-guest").bridge_empty);
        assert!(!d("br-lan").bridge_empty);
        assert!(c.config.interface("guest").unwrap().ports.is_empty());
        let e = net("config device\n\toption name 'b'\n\toption type 'bridge'\n\toption bridge_empty 'maybe'\n")
            .unwrap_err();
        assert_eq!(e.option.as_deref(), Some("bridge_empty"));
    }

    #[test]
    fn bridge_ports_resolved_and_cidr_list_forms() {
        let c = net(concat!(
            "config interface 'lan'\n\toption device 'br-lan'\n\toption proto 'static'\n",
            "\tlist ipaddr '10.0.0.1/8'\n\tlist ipaddr '172.16.0.1'\n\toption netmask '255.255.0.0'\n",
            "\tlist dns '1.1.1.1'\n\tlist dns '2606:4700::1111'\n\toption mtu '1400'\n\toption gateway '10.0.0.254'\n",
            "config device\n\toption name 'br-lan'\n\toption type 'bridge'\n\tlist ports 'eth0'\n\tlist ports 'eth2'\n",
            "config interface 'guest'\n\toption device 'eth3'\n\toption proto 'none'\n\toption disabled 'yes'\n",
            "config route\n\toption interface 'lan'\n\toption target '192.168.50.0'\n\toption netmask '255.255.255.0'\n\toption gateway '10.0.0.2'\n",
        ))
        .unwrap();
        assert_eq!(c.warnings, []);
        let lan = c.config.interface("lan").unwrap();
        assert_eq!(lan.ports, ["eth0", "eth2"]);
        assert_eq!(lan.addrs, [cidr("10.0.0.1/8"), cidr("172.16.0.1/16")]);
        assert_eq!(lan.dns.len(), 2);
        assert_eq!(lan.mtu, Some(1400));
        assert_eq!(lan.gateway, Some(Ipv4Addr::new(10, 0, 0, 254)));
        assert!(c.config.interface("guest").unwrap().disabled);
        assert_eq!(c.config.routes[0].target, cidr("192.168.50.0/24"));
    }

    #[test]
    fn bad_values_are_errors_naming_file_section_option() {
        let base = "config interface 'lan'\n\toption device 'eth0'\n\toption proto 'static'\n\toption ipaddr '192.168.1.1'\n";
        let cases = [
            (
                "\toption netmask '255.0.255.0'\n",
                "option 'netmask': '255.0.255.0' is not a netmask",
            ),
            (
                "\toption netmask 'banana'\n",
                "option 'netmask': 'banana' is not a netmask",
            ),
            (
                "\tlist ipaddr '10.0.0.1/33'\n",
                "option 'ipaddr': '10.0.0.1/33' is not an IPv4 address",
            ),
            (
                "\toption gateway '1.2.3'\n",
                "option 'gateway': '1.2.3' is not an IPv4 address",
            ),
            (
                "\toption mtu '40'\n",
                "option 'mtu': '40' is not an MTU (68-65535)",
            ),
            (
                "\toption mtu '70000'\n",
                "option 'mtu': '70000' is not an MTU (68-65535)",
            ),
            (
                "\tlist dns 'dns.google'\n",
                "option 'dns': 'dns.google' is not an IP address",
            ),
            (
                "\toption disabled 'perhaps'\n",
                "option 'disabled': 'perhaps' is not a boolean",
            ),
            (
                "\toption metric '-1'\n",
                "option 'metric': '-1' is not a metric",
            ),
        ];
        for (extra, msg) in cases {
            let e = net(&format!("{base}{extra}")).unwrap_err();
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("/etc/config/network: interface 'lan': {msg}")),
                "{text}"
            );
        }
        let e = net("config interface 'x'\n\toption proto 'static'\n").unwrap_err();
        assert_eq!(e.to_string(), "/etc/config/network: interface 'x': option 'ipaddr': missing (required for proto 'static')");
        let e = net("config device\n\toption type 'bridge'\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/etc/config/network: @device[0]: option 'name': missing (a device needs a name)"
        );
        let e = net("config device\n\toption name 'x'\n\toption macaddr '00:11:22:33:44'\n")
            .unwrap_err();
        assert_eq!(e.option.as_deref(), Some("macaddr"));
    }

    #[test]
    fn unknown_things_warn() {
        let c = net("config interface 'lan'\n\toption proto 'dhcp'\n\toption frobnicate '1'\n\toption ifname 'eth0'\nconfig bogus\nconfig interface 'x'\n\toption proto 'carrier-pigeon'\n").unwrap();
        let w: Vec<String> = c.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            w,
            [
                "/etc/config/network: interface 'lan': option 'ifname': deprecated since OpenWrt 21.02, use 'device'",
                "/etc/config/network: interface 'lan': option 'frobnicate': unknown option, ignored",
                "/etc/config/network: @bogus[0]: unknown section type 'bogus', ignored",
                "/etc/config/network: interface 'x': unknown proto 'carrier-pigeon', interface ignored",
            ]
        );
        assert_eq!(c.config.interface("lan").unwrap().ports, ["eth0"]);
    }

    #[test]
    fn wan6_reqaddress_and_reqprefix() {
        let c = net("config interface 'wan6'\n\toption device 'eth1'\n\toption proto 'dhcpv6'\n\toption reqaddress 'none'\n\toption reqprefix '56'\n").unwrap();
        let w = c.config.interface("wan6").unwrap();
        assert_eq!(
            (w.reqaddress, w.reqprefix),
            (ReqAddress::None, ReqPrefix::Len(56))
        );
        let c = net("config interface 'wan6'\n\toption device 'eth1'\n\toption proto 'dhcpv6'\n\toption reqaddress 'force'\n\toption reqprefix 'no'\n").unwrap();
        let w = c.config.interface("wan6").unwrap();
        assert_eq!(
            (w.reqaddress, w.reqprefix),
            (ReqAddress::Force, ReqPrefix::No)
        );
        let c = net("config interface 'wan6'\n\toption device 'eth1'\n\toption proto 'dhcpv6'\n\toption reqaddress 'maybe'\n\toption reqprefix '65'\n").unwrap();
        let w = c.config.interface("wan6").unwrap();
        assert_eq!(
            (w.reqaddress, w.reqprefix),
            (ReqAddress::Try, ReqPrefix::Auto)
        );
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    }

    #[test]
    fn a_bad_ula_prefix_or_ip6assign_is_a_warning_and_ipv4_stays() {
        let c = net(concat!(
            "config globals 'globals'\n\toption ula_prefix 'fd00:zz::/48'\n",
            "config interface 'lan'\n\toption device 'eth0'\n\toption proto 'static'\n",
            "\toption ipaddr '192.168.1.1/24'\n\toption ip6assign '65'\n\toption ip6hint 'xyz'\n",
        ))
        .unwrap();
        let w: Vec<String> = c.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            w,
            [
                "/etc/config/network: globals 'globals': option 'ula_prefix': 'fd00:zz::/48' is not 'auto' or an IPv6 prefix (fdXX:XXXX:XXXX::/48); no IPv6 ULA",
                "/etc/config/network: interface 'lan': option 'ip6assign': '65' is not a prefix length (0-64); no IPv6 on this interface",
                "/etc/config/network: interface 'lan': option 'ip6hint': 'xyz' is not a hexadecimal subnet id; the first subnet is used",
            ]
        );
        assert_eq!(c.config.globals.ula_prefix, None);
        let lan = c.config.interface("lan").unwrap();
        assert_eq!(lan.addrs, [cidr("192.168.1.1/24")]);
        assert_eq!((lan.ip6assign, lan.ip6hint), (None, None));
        let c = net("config globals 'globals'\n\toption ula_prefix 'fd00:ab:cd::/48'\nconfig interface 'lan'\n\toption proto 'none'\n\toption ip6assign '64'\n\toption ip6hint '1f'\n").unwrap();
        assert_eq!(c.warnings, []);
        assert!(
            matches!(c.config.globals.ula_prefix, Some(UlaPrefix::Fixed(p)) if p.to_string() == "fd00:ab:cd::/48")
        );
        let lan = c.config.interface("lan").unwrap();
        assert_eq!((lan.ip6assign, lan.ip6hint), (Some(64), Some(0x1f)));
    }

    #[test]
    fn netmask_math() {
        assert_eq!(netmask_to_prefix(Ipv4Addr::new(255, 255, 255, 0)), Some(24));
        assert_eq!(
            netmask_to_prefix(Ipv4Addr::new(255, 255, 255, 255)),
            Some(32)
        );
        assert_eq!(netmask_to_prefix(Ipv4Addr::new(0, 0, 0, 0)), Some(0));
        assert_eq!(netmask_to_prefix(Ipv4Addr::new(255, 0, 255, 0)), None);
        assert!(cidr("10.1.2.3/8").contains(Ipv4Addr::new(10, 200, 0, 1)));
        assert!(!cidr("10.1.2.3/8").contains(Ipv4Addr::new(11, 0, 0, 1)));
        assert!(cidr("0.0.0.0/0").contains(Ipv4Addr::new(1, 2, 3, 4)));
        assert_eq!(
            cidr("10.1.2.3/20").netmask(),
            Ipv4Addr::new(255, 255, 240, 0)
        );
    }
}
