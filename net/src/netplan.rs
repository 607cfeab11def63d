//! From OpenWrt's `/etc/config/network` (and the zones of `/etc/config/firewall`) to
//! what the stack runs: each vif's addresses (static or DHCP) and, when two or more
//! vifs are configured, the router over them ([`GatewaySpec`]: which ports masquerade
//! and clamp the MSS, from the zones' `masq` and `mtu_fix`).
//!
//! The mapping follows OpenWrt: an `interface` section names a `device` (`eth0`, or a
//! bridge such as `br-lan` whose `ports` are the vifs); `proto static` takes `ipaddr`/
//! `netmask` (or CIDR) and `gateway`, `proto dhcp` runs the DHCPv4 client. Xenlet does
//! not bridge its own vifs: a bridge's first port that is a vif of this domain carries
//! the interface, and the others are named in a warning. `loopback` and interfaces on
//! devices this domain does not have are skipped.
//!
//! A bridge with no port that is a vif of this domain and `option bridge_empty '1'`
//! (netifd's `force_active`: OpenWrt brings such a bridge up with no member present)
//! is port-less ([`Plan::portless`]): the interface is the bridge itself, named as it
//! (`br-guest`), with a MAC of its own ([`portless_mac`]), and only client vifs
//! (netback) join it. Without `bridge_empty` netifd does not bring up a bridge none
//! of whose ports is present (`bridge_set_up`: `-ENOENT`), so neither does Xenlet:
//! the interface is skipped with a warning.
//!
//! IPv6: an interface with `ip6assign` gets its subnet of the ULA prefix
//! (`globals.ula_prefix`, see `xenlet_uci::ula`), `::1/64` in it, as netifd gives
//! `br-lan` (the kernel has replaced `auto` by a generated prefix before this runs;
//! a prefix still `auto`, or an assignment that does not fit, is a warning and the
//! interface has IPv4 only).

use crate::config::IfConfig;
use crate::fwconfig::{self, NetworkIface};
use crate::gateway::{GatewaySpec, PortSpec};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use smoltcp::wire::{IpAddress, IpCidr};
use xenlet_router::IfId;
use xenlet_uci::network::{DeviceKind, Proto, ReqAddress, ReqPrefix};
use xenlet_uci::ula::{self, UlaPrefix};

/// What the configuration files say the stack should run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Each configured vif (or port-less bridge, `br-guest`): its name, the UCI
    /// interface it carries (`lan`), and its addressing.
    pub ifaces: Vec<(String, String, IfConfig)>,
    /// The router, when two or more vifs are configured.
    pub gateway: Option<GatewaySpec>,
    /// Warnings for the console (unknown options, ports that are not vifs, ...).
    pub warnings: Vec<String>,
    /// Each interface on a bridge device: (the bridge, `br-lan`; the vif carrying
    /// it, its first port). A client domU's vif this domain serves (netback) joins
    /// the bridge its backend's `bridge` key names.
    pub bridges: Vec<(String, String)>,
    /// `proto dhcpv6` (`wan6`) on one of the vifs, if configured.
    pub wan6: Option<Wan6Plan>,
    /// Each vif with `ip6assign`: (vif, `ip6assign`, `ip6hint`), for the subnets of
    /// a delegated prefix.
    pub ip6assign: Vec<(String, u8, Option<u64>)>,
    /// Each vif whose interface (or its `config device`) sets `mtu`: (vif, MTU).
    pub mtus: Vec<(String, u16)>,
    /// Each port-less bridge (`bridge_empty`, no port a vif of this domain) an
    /// interface is on: (its name, which is the interface's in [`Plan::ifaces`]; its
    /// `macaddr` option). It is in [`Plan::bridges`] too, carried by itself.
    pub portless: Vec<(String, Option<[u8; 6]>)>,
}

/// The MAC of the `k`-th port-less bridge (from 0) of a domain whose first vif's MAC
/// is `first_vif`, when its device sets no `macaddr`: a Linux bridge takes its first
/// port's MAC (netifd's `bridge_reset_primary`), and one with no port a random one;
/// Xenlet's is the first vif's with the locally administered bit set and bits 2-7 of
/// the first octet XORed with `k + 1`, so it is stable across reboots (clients'
/// neighbour caches stay right), never the vif's own nor another bridge's, and
/// unicast. `00:16:3e:12:34:56` gives `06:16:3e:12:34:56`, then `0a:16:3e:...`.
pub fn portless_mac(first_vif: [u8; 6], k: usize) -> [u8; 6] {
    let mut m = first_vif;
    let n = u8::try_from(k % 63 + 1).unwrap_or(1);
    m[0] = ((m[0] | 0x02) & !0x01) ^ (n << 2);
    m
}

/// `proto dhcpv6` on a vif: OpenWrt's `wan6` (odhcp6c).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wan6Plan {
    /// The UCI interface (`wan6`).
    pub name: String,
    /// The vif it runs on (the WAN's).
    pub vif: String,
    /// `reqaddress`.
    pub reqaddress: ReqAddress,
    /// `reqprefix`.
    pub reqprefix: ReqPrefix,
}

impl Plan {
    /// The vif carrying bridge `bridge` (`br-lan` -> `eth0`), if an interface is on it
    /// (a port-less bridge carries itself: `br-guest` -> `br-guest`).
    pub fn bridge_carrier(&self, bridge: &str) -> Option<&str> {
        self.bridges
            .iter()
            .find(|(b, _)| b == bridge)
            .map(|(_, v)| v.as_str())
    }

    /// The MTU the files set for vif `name` (`option mtu` of its interface or of
    /// its device), if any.
    pub fn mtu_of(&self, name: &str) -> Option<u16> {
        self.mtus.iter().find(|(n, _)| n == name).map(|(_, m)| *m)
    }

    /// The configuration of vif `name`, if the files configure it.
    pub fn config_of(&self, name: &str) -> Option<&IfConfig> {
        self.ifaces
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, _, c)| c)
    }
}

/// Builds the plan for a domain whose vifs are `vifs` (`eth0`, `eth1`, ...).
/// `firewall` is the text of `/etc/config/firewall` if there is one (compiled into the
/// router's ruleset; without it the router forwards everything and masquerades
/// nothing). A file that does not parse or holds a bad value is an error naming the
/// file, section and option.
pub fn plan(
    network: &str,
    firewall: Option<&str>,
    vifs: &[&str],
    conntrack_max: usize,
    hash_seed: u64,
) -> Result<Plan, String> {
    let pkg =
        xenlet_uci::parse("/etc/config/network", "network", network).map_err(|e| format!("{e}"))?;
    let net = xenlet_uci::network::network(&pkg).map_err(|e| format!("{e}"))?;
    let mut out = Plan::default();
    out.warnings
        .extend(net.warnings.iter().map(|w| format!("{w}")));
    for i in net.config.interfaces.iter().filter(|i| !i.disabled) {
        let mut on_vifs = i.ports.iter().filter(|p| vifs.contains(&p.as_str()));
        let bridge = i
            .device
            .as_ref()
            .and_then(|d| net.config.devices.iter().find(|x| x.name == *d))
            .filter(|d| d.kind == DeviceKind::Bridge);
        let mut portless = None;
        let port = match (on_vifs.next(), bridge) {
            (Some(p), _) => p,
            // a bridge of client vifs only: the interface is the bridge
            (None, Some(b)) if b.bridge_empty => {
                portless = Some(b.macaddr);
                &b.name
            }
            (None, Some(b)) => {
                out.warnings.push(format!(
                    "network: interface '{}': bridge '{}' has no port that is a vif of this domain{} and no option bridge_empty '1' (netifd does not bring it up); skipped, and client vifs naming it are refused",
                    i.name,
                    b.name,
                    if b.ports.is_empty() {
                        String::new()
                    } else {
                        format!(" (ports {})", b.ports.join(", "))
                    }
                ));
                continue;
            }
            (None, None) => continue, // loopback, or a device this domain does not have
        };
        if i.proto == Proto::Dhcpv6 {
            // on the device of another interface (the WAN's), IPv6 only
            if out.wan6.is_some() {
                out.warnings.push(format!(
                    "network: interface '{}': only one proto 'dhcpv6' interface runs; skipped",
                    i.name
                ));
            } else {
                out.wan6 = Some(Wan6Plan {
                    name: i.name.clone(),
                    vif: port.clone(),
                    reqaddress: i.reqaddress,
                    reqprefix: i.reqprefix,
                });
            }
            continue;
        }
        let rest: Vec<&str> = on_vifs.map(String::as_str).collect();
        if !rest.is_empty() {
            out.warnings.push(format!(
                "network: interface '{}': Xenlet does not bridge; it runs on {port} only, not on {}",
                i.name,
                rest.join(", ")
            ));
        }
        if out.ifaces.iter().any(|(n, _, _)| n == port) {
            out.warnings.push(format!(
                "network: interface '{}': {port} already carries another interface; skipped",
                i.name
            ));
            continue;
        }
        let device_mtu = i
            .device
            .as_ref()
            .and_then(|d| net.config.devices.iter().find(|x| x.name == *d))
            .and_then(|d| d.mtu);
        if let Some(m) = i.mtu.or(device_mtu) {
            out.mtus.push((port.clone(), m));
        }
        let mut c = IfConfig::default();
        match i.proto {
            Proto::Static => {
                for a in &i.addrs {
                    c.addrs
                        .push(IpCidr::new(IpAddress::Ipv4(a.addr), a.prefix_len));
                }
                c.gw4 = i.gateway;
            }
            Proto::Dhcp => c.dhcp = true,
            Proto::None | Proto::Dhcpv6 => {}
        }
        if let Some(assign) = i.ip6assign {
            out.ip6assign.push((port.clone(), assign, i.ip6hint));
            match net.config.globals.ula_prefix {
                Some(UlaPrefix::Fixed(prefix)) => match ula::lan_subnet(prefix, assign, i.ip6hint) {
                    Ok((_, addr)) => c.addrs.push(IpCidr::new(IpAddress::Ipv6(addr), 64)),
                    Err(e) => out
                        .warnings
                        .push(format!("network: interface '{}': {e}; no IPv6 ULA", i.name)),
                },
                Some(UlaPrefix::Auto) => out.warnings.push(format!(
                    "network: interface '{}': ula_prefix is still 'auto' (not generated); no IPv6 ULA",
                    i.name
                )),
                None => {}
            }
        }
        if let Some(mac) = portless {
            out.bridges.push((port.clone(), port.clone()));
            out.portless.push((port.clone(), mac));
        } else if let Some(dev) = i.device.as_ref().filter(|d| *d != port) {
            out.bridges.push((dev.clone(), port.clone()));
        }
        out.ifaces.push((port.clone(), i.name.clone(), c));
    }
    if out.ifaces.len() >= 2 {
        // the router numbers its interfaces in this order (Gateway::new)
        let ids: Vec<NetworkIface> = out
            .ifaces
            .iter()
            .enumerate()
            .map(|(k, (vif, uci_name, _))| NetworkIface {
                network: uci_name.clone(),
                ifc: IfId(u8::try_from(k).unwrap_or(u8::MAX)),
                device: vif.clone(),
            })
            .collect();
        let ruleset = match firewall {
            Some(text) => {
                let (c, warnings) = fwconfig::compile_text(text, &ids)?;
                out.warnings.extend(warnings);
                Some(c.ruleset)
            }
            None => None,
        };
        let ports = ids
            .iter()
            .map(|n| {
                let (masq, mss_clamp) = ruleset
                    .as_ref()
                    .map_or((false, false), |r| fwconfig::port_flags(r, n.ifc));
                PortSpec {
                    name: n.device.clone(),
                    masq,
                    mss_clamp,
                    mtu: out.mtu_of(&n.device),
                }
            })
            .collect();
        out.gateway = Some(GatewaySpec {
            ports,
            conntrack_max,
            hash_seed,
            firewall: ruleset,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use smoltcp::wire::Ipv4Address;

    const NETWORK: &str = include_str!("../../xtask/rootfs/etc/config/network");
    const FIREWALL: &str = include_str!("../../xtask/rootfs/etc/config/firewall");

    #[test]
    fn the_images_files_make_a_lan_wan_router_on_two_vifs() {
        let p = plan(
            &NETWORK.replace("'auto'", "'fd12:3456:789a::/48'"),
            Some(FIREWALL),
            &["eth0", "eth1"],
            16384,
            9,
        )
        .unwrap();
        assert_eq!(p.warnings, Vec::<String>::new());
        let w = p.wan6.as_ref().unwrap();
        assert_eq!((w.name.as_str(), w.vif.as_str()), ("wan6", "eth1"));
        assert_eq!(
            (w.reqaddress, w.reqprefix),
            (ReqAddress::Try, ReqPrefix::Auto)
        );
        assert_eq!(p.ip6assign, [(String::from("eth0"), 60, None)]);
        let lan = p.config_of("eth0").unwrap();
        assert_eq!(
            lan.addrs[0],
            IpCidr::new(IpAddress::v4(192, 168, 1, 1), 24),
            "OpenWrt's lan: 192.168.1.1/24"
        );
        assert!(!lan.dhcp);
        assert!(p.config_of("eth1").unwrap().dhcp, "wan by DHCP");
        let g = p.gateway.expect("two vifs: a router");
        assert_eq!(
            g.ports,
            [PortSpec::lan("eth0"), PortSpec::wan("eth1"),],
            "fw4 defaults: the wan zone masquerades with mtu_fix"
        );
        assert_eq!((g.conntrack_max, g.hash_seed), (16384, 9));
        let fw = g.firewall.expect("the firewall file compiled");
        assert_eq!(fw.zones.len(), 2, "lan and wan");
    }

    #[test]
    fn the_lan_gets_its_ula_subnet_router_address() {
        let fixed = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'");
        let p = plan(&fixed, Some(FIREWALL), &["eth0", "eth1"], 16, 1).unwrap();
        assert_eq!(p.warnings, Vec::<String>::new());
        let ula1: smoltcp::wire::Ipv6Address = "fd12:3456:789a::1".parse().unwrap();
        assert_eq!(
            p.config_of("eth0").unwrap().addrs,
            [
                IpCidr::new(IpAddress::v4(192, 168, 1, 1), 24),
                IpCidr::new(IpAddress::Ipv6(ula1), 64)
            ]
        );
        assert_eq!(p.config_of("eth1").unwrap().addrs, [], "wan: no ip6assign");
        // a hint picks the /60
        let hinted = fixed.replace(
            "option ip6assign '60'",
            "option ip6assign '60'\n\toption ip6hint '3'",
        );
        let p = plan(&hinted, None, &["eth0", "eth1"], 16, 1).unwrap();
        let ula: smoltcp::wire::Ipv6Address = "fd12:3456:789a:30::1".parse().unwrap();
        assert_eq!(
            p.config_of("eth0").unwrap().addrs[1],
            IpCidr::new(IpAddress::Ipv6(ula), 64)
        );
        // not generated, or malformed: IPv4 only, with a warning
        let p = plan(NETWORK, None, &["eth0", "eth1"], 16, 1).unwrap();
        assert_eq!(
            p.warnings,
            ["network: interface 'lan': ula_prefix is still 'auto' (not generated); no IPv6 ULA"]
        );
        assert_eq!(p.config_of("eth0").unwrap().addrs.len(), 1);
        let bad = NETWORK.replace("'auto'", "'fd12::/80'");
        let p = plan(&bad, None, &["eth0", "eth1"], 16, 1).unwrap();
        assert_eq!(p.config_of("eth0").unwrap().addrs.len(), 1);
        assert!(p.warnings[0].contains("ula_prefix"), "{:?}", p.warnings);
        let p = plan(
            &fixed.replace("'60'", "'40'"),
            None,
            &["eth0", "eth1"],
            16,
            1,
        )
        .unwrap();
        assert_eq!(
            p.warnings,
            ["network: interface 'lan': ip6assign '40' does not fit ULA prefix fd12:3456:789a::/48 (needs 48 to 64); no IPv6 ULA"]
        );
    }

    #[test]
    fn one_vif_is_an_end_host_and_bridges_take_their_first_vif() {
        let p = plan(NETWORK, Some(FIREWALL), &["eth0"], 16, 1).unwrap();
        assert!(p.gateway.is_none());
        assert_eq!(p.ifaces.len(), 1);
        let bridged = "config device\n\toption name 'br-lan'\n\toption type 'bridge'\n\t\
                       list ports 'eth0'\n\tlist ports 'eth2'\n\n\
                       config interface 'lan'\n\toption device 'br-lan'\n\toption proto 'static'\n\t\
                       option ipaddr '10.1.0.1/16'\n\toption gateway '10.1.0.254'\n";
        let p = plan(bridged, None, &["eth0", "eth2"], 16, 1).unwrap();
        assert_eq!(p.bridge_carrier("br-lan"), Some("eth0"));
        assert_eq!(p.bridge_carrier("br-wan"), None);
        let c = p.config_of("eth0").unwrap();
        assert_eq!(c.addrs, [IpCidr::new(IpAddress::v4(10, 1, 0, 1), 16)]);
        assert_eq!(c.gw4, Some(Ipv4Address::new(10, 1, 0, 254)));
        assert!(p.config_of("eth2").is_none());
        assert_eq!(
            p.warnings,
            ["network: interface 'lan': Xenlet does not bridge; it runs on eth0 only, not on eth2"]
        );
    }

    /// OpenWrt's guest network on a bridge of client vifs only (`bridge_empty`), as
    /// `router-zones` sets it up with `uci`.
    const GUEST: &str = "\nconfig device 'guest_dev'\n\toption name 'br-guest'\n\toption type 'bridge'\n\toption bridge_empty '1'\n\n\
        config interface 'guest'\n\toption device 'br-guest'\n\toption proto 'static'\n\toption ipaddr '192.168.2.1'\n\toption netmask '255.255.255.0'\n";
    const GUEST_FW: &str = "\nconfig zone 'guest'\n\toption name 'guest'\n\tlist network 'guest'\n\toption input 'REJECT'\n\toption output 'ACCEPT'\n\toption forward 'REJECT'\n\n\
        config forwarding 'guest_wan'\n\toption src 'guest'\n\toption dest 'wan'\n";

    #[test]
    fn a_bridge_empty_bridge_of_no_vif_is_an_interface_of_its_own() {
        let network = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'") + GUEST;
        let firewall = String::from(FIREWALL) + GUEST_FW;
        let p = plan(&network, Some(&firewall), &["eth0", "eth1"], 16, 1).unwrap();
        assert_eq!(p.warnings, Vec::<String>::new());
        let names: Vec<(&str, &str)> = p
            .ifaces
            .iter()
            .map(|(v, n, _)| (v.as_str(), n.as_str()))
            .collect();
        assert_eq!(
            names,
            [("eth0", "lan"), ("eth1", "wan"), ("br-guest", "guest")],
            "the interface is the bridge, named as it"
        );
        assert_eq!(
            p.config_of("br-guest").unwrap().addrs,
            [IpCidr::new(IpAddress::v4(192, 168, 2, 1), 24)]
        );
        assert_eq!(p.bridge_carrier("br-lan"), Some("eth0"));
        assert_eq!(p.bridge_carrier("br-guest"), Some("br-guest"));
        assert_eq!(p.portless, [(String::from("br-guest"), None)]);
        let g = p.gateway.expect("a router over three interfaces");
        assert_eq!(
            g.ports,
            [
                PortSpec::lan("eth0"),
                PortSpec::wan("eth1"),
                PortSpec::lan("br-guest")
            ],
            "guest: no masquerade, no MSS clamp"
        );
        let fw = g.firewall.unwrap();
        let guest = fw.zones.iter().find(|z| z.name == "guest").unwrap();
        assert_eq!(
            guest.ifaces,
            [IfId(2)],
            "the guest zone is the bridge's IfId"
        );
        // `option macaddr` on the device is the bridge's, as netifd's
        let with_mac = network.replace(
            "option bridge_empty '1'",
            "option bridge_empty '1'\n\toption macaddr '02:00:00:aa:bb:cc'",
        );
        let p = plan(&with_mac, None, &["eth0", "eth1"], 16, 1).unwrap();
        assert_eq!(
            p.portless,
            [(String::from("br-guest"), Some([2, 0, 0, 0xaa, 0xbb, 0xcc]))]
        );
        // ports that name nothing this domain has: still port-less
        let absent = network.replace(
            "option bridge_empty '1'",
            "option bridge_empty '1'\n\tlist ports 'eth7'",
        );
        let p = plan(&absent, None, &["eth0", "eth1"], 16, 1).unwrap();
        assert_eq!(p.portless.len(), 1);
        assert_eq!(p.warnings, Vec::<String>::new());
    }

    #[test]
    fn a_bridge_of_no_vif_without_bridge_empty_is_skipped_with_a_warning() {
        let network = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'")
            + &GUEST.replace("\toption bridge_empty '1'\n", "\tlist ports 'eth2'\n");
        let firewall = String::from(FIREWALL) + GUEST_FW;
        let p = plan(&network, Some(&firewall), &["eth0", "eth1"], 16, 1).unwrap();
        assert_eq!(
            p.warnings,
            ["network: interface 'guest': bridge 'br-guest' has no port that is a vif of this domain (ports eth2) and no option bridge_empty '1' (netifd does not bring it up); skipped, and client vifs naming it are refused"]
        );
        assert!(p.portless.is_empty());
        assert_eq!(p.bridge_carrier("br-guest"), None);
        assert!(p.config_of("br-guest").is_none());
        // the rest runs: lan and wan routed, the guest zone empty
        let g = p.gateway.expect("lan and wan still routed");
        assert_eq!(g.ports, [PortSpec::lan("eth0"), PortSpec::wan("eth1")]);
        // no ports at all
        let bare = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'")
            + &GUEST.replace("\toption bridge_empty '1'\n", "");
        let p = plan(&bare, None, &["eth0", "eth1"], 16, 1).unwrap();
        assert_eq!(
            p.warnings,
            ["network: interface 'guest': bridge 'br-guest' has no port that is a vif of this domain and no option bridge_empty '1' (netifd does not bring it up); skipped, and client vifs naming it are refused"]
        );
    }

    #[test]
    fn a_second_interface_on_a_portless_bridge_is_skipped_with_a_warning() {
        let network = NETWORK.replace("'auto'", "'fd12:3456:789a::/48'")
            + GUEST
            + "\nconfig interface 'guest2'\n\toption device 'br-guest'\n\toption proto 'static'\n\toption ipaddr '192.168.3.1/24'\n";
        let p = plan(&network, None, &["eth0", "eth1"], 16, 1).unwrap();
        assert_eq!(
            p.warnings,
            ["network: interface 'guest2': br-guest already carries another interface; skipped"]
        );
        assert_eq!(p.portless.len(), 1);
        assert_eq!(
            p.config_of("br-guest").unwrap().addrs,
            [IpCidr::new(IpAddress::v4(192, 168, 2, 1), 24)],
            "the first one's"
        );
        assert_eq!(p.gateway.unwrap().ports.len(), 3);
    }

    #[test]
    fn a_portless_bridges_mac_is_the_first_vifs_made_local_and_distinct() {
        let vif = [0x00, 0x16, 0x3e, 0x12, 0x34, 0x56];
        assert_eq!(portless_mac(vif, 0), [0x06, 0x16, 0x3e, 0x12, 0x34, 0x56]);
        assert_eq!(portless_mac(vif, 1), [0x0a, 0x16, 0x3e, 0x12, 0x34, 0x56]);
        // a locally administered vif MAC: still another address
        let local = [0x06, 0x16, 0x3e, 0x12, 0x34, 0x56];
        assert_eq!(portless_mac(local, 0), [0x02, 0x16, 0x3e, 0x12, 0x34, 0x56]);
        for k in 0..8 {
            let m = portless_mac(vif, k);
            assert_eq!(m[0] & 0x03, 0x02, "unicast, locally administered");
            assert_ne!(m, vif);
            for j in 0..k {
                assert_ne!(m, portless_mac(vif, j));
            }
        }
    }

    #[test]
    fn a_bad_value_names_the_file_section_and_option() {
        let bad = NETWORK.replace("255.255.255.0", "255.0.255.0");
        let e = plan(&bad, None, &["eth0", "eth1"], 16, 1).unwrap_err();
        assert!(
            e.contains("/etc/config/network") && e.contains("'lan'") && e.contains("netmask"),
            "{e}"
        );
        let e = plan("config interface 'x\n", None, &["eth0"], 16, 1).unwrap_err();
        assert!(e.starts_with("/etc/config/network:1:"), "{e}");
    }
}
