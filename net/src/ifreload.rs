//! `reload` of an interface's IPv4 settings from `/etc/config/network`: the
//! `ipaddr`/`netmask` and `gateway` of a `proto static` interface, applied to the
//! running interface as netifd applies an interface whose options changed after
//! `reload_config`: an address the files no longer give is taken off, a new one put
//! on, the static default route replaced. The rest follows from the interface:
//! the router takes the new address at its next poll ([`crate::gateway`]: its own
//! address and NAT's masquerading address, whose flows go with the old one), and the
//! LAN services' reload builds the DHCP pool and the DNS listener on the new subnet
//! ([`crate::lanservices::LanServices::reload`]).
//!
//! A change of `proto` between `static` and `dhcp` restarts the interface's IPv4
//! with the new protocol, as netifd does: the static addresses and gateway off and
//! the DHCPv4 client started, or the client stopped (its lease's address and route
//! off) and the static settings on. Only what the files configured is touched: an
//! address added by hand (`ip addr add`) stays.

use crate::config::IfConfig;
use crate::iface::NetIf;
use crate::link::Link;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use smoltcp::wire::{IpAddress, IpCidr, Ipv4Address, Ipv4Cidr};

/// An interface's IPv4 settings as the files give them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ipv4Files {
    /// `proto dhcp`.
    pub dhcp: bool,
    /// The static addresses (`ipaddr`/`netmask`), in the files' order.
    pub addrs: Vec<Ipv4Cidr>,
    /// The static default route (`gateway`).
    pub gateway: Option<Ipv4Address>,
}

impl Ipv4Files {
    /// The IPv4 part of an interface's configuration (DHCP when it gives no
    /// address, as [`NetIf::apply`] takes it).
    pub fn of(c: &IfConfig) -> Self {
        Ipv4Files {
            dhcp: c.dhcp || (c.addrs.is_empty() && c.gw4.is_none()),
            addrs: c
                .addrs
                .iter()
                .filter_map(|a| match a {
                    IpCidr::Ipv4(a) => Some(*a),
                    IpCidr::Ipv6(_) => None,
                })
                .collect(),
            gateway: c.gw4,
        }
    }
}

/// Applies `new` over `old` (what the files gave when the interface was last
/// configured) to `n`; a line for each change (`eth0: 192.168.1.1/24 removed`,
/// `eth0: 192.168.7.1/24 added`, `eth1: gateway 10.0.0.254`), none when nothing
/// changed. Returns the settings now in force (less an address that could not be
/// added).
pub fn reload_ipv4<L: Link>(
    n: &mut NetIf<L>,
    old: &Ipv4Files,
    new: &Ipv4Files,
) -> (Ipv4Files, Vec<String>) {
    let mut said = Vec::new();
    if old.dhcp != new.dhcp {
        let proto = |f: &Ipv4Files| if f.dhcp { "dhcp" } else { "static" };
        said.push(format!(
            "{}: proto {} -> {}",
            n.name,
            proto(old),
            proto(new)
        ));
    }
    let (now, lines) = apply(n, old, new);
    said.extend(lines);
    (now, said)
}

/// OpenWrt's `ifdown` of the interface's IPv4: what `now` (the settings in force)
/// put on taken off, the DHCPv4 client stopped. What changed, a line each.
pub fn down<L: Link>(n: &mut NetIf<L>, now: &Ipv4Files) -> Vec<String> {
    apply(n, now, &Ipv4Files::default()).1
}

/// OpenWrt's `ifup` of an interface that is down: `files` put on (the DHCPv4 client
/// started afresh for `proto dhcp`). The settings now in force, and what changed.
pub fn up<L: Link>(n: &mut NetIf<L>, files: &Ipv4Files) -> (Ipv4Files, Vec<String>) {
    apply(n, &Ipv4Files::default(), files)
}

/// `ifstatus NAME` of an interface's IPv4 (netifd says it in JSON; one line here):
/// `wan: eth1 up, proto dhcp, address 10.77.0.161/24, gateway 10.77.0.10, dns
/// 10.77.0.1`; `proto dhcp` with no lease yet says so; one taken down (`ifdown`)
/// is `down`.
pub fn status<L: Link>(network: &str, n: &mut NetIf<L>, files: &Ipv4Files, up: bool) -> String {
    let proto = if files.dhcp { "dhcp" } else { "static" };
    if !up {
        return format!("{network}: {} down, proto {proto}", n.name);
    }
    let mut s = format!("{network}: {} up, proto {proto}", n.name);
    let addrs: Vec<String> = n
        .addrs()
        .iter()
        .filter(|(c, _)| matches!(c, IpCidr::Ipv4(_)))
        .map(|(c, _)| format!("{c}"))
        .collect();
    if addrs.is_empty() {
        s.push_str(if files.dhcp {
            ", no lease yet"
        } else {
            ", no address"
        });
    } else {
        s.push_str(&format!(", address {}", addrs.join(" ")));
    }
    if let Some(g) = n.default_gw4() {
        s.push_str(&format!(", gateway {g}"));
    }
    let dns: Vec<String> = n
        .dhcp_dns_servers()
        .iter()
        .map(|d| format!("{d}"))
        .collect();
    if !dns.is_empty() {
        s.push_str(&format!(", dns {}", dns.join(" ")));
    }
    s
}

/// `new` over `old`: the client stopped, the addresses and gateway that differ
/// taken off and put on, the client started.
fn apply<L: Link>(n: &mut NetIf<L>, old: &Ipv4Files, new: &Ipv4Files) -> (Ipv4Files, Vec<String>) {
    let mut said = Vec::new();
    if old.dhcp && !new.dhcp {
        said.push(match n.stop_dhcp() {
            Some(a) => format!("{}: DHCPv4 stopped, lease {a} dropped", n.name),
            None => format!("{}: DHCPv4 stopped", n.name),
        });
    }
    // off first: a new address in the old one's subnet then becomes the first
    // (the router's and the DHCP pool's)
    for a in old.addrs.iter().filter(|a| !new.addrs.contains(a)) {
        if n.del_addr(IpCidr::Ipv4(*a)).is_ok() {
            said.push(format!("{}: {a} removed", n.name));
        }
    }
    let mut now = new.clone();
    for a in new.addrs.iter().filter(|a| !old.addrs.contains(a)) {
        match n.add_addr(IpCidr::Ipv4(*a)) {
            Ok(()) => said.push(format!("{}: {a} added", n.name)),
            Err(e) => {
                said.push(format!("{}: {a} not added ({e})", n.name));
                now.addrs.retain(|x| x != a);
            }
        }
    }
    if old.gateway != new.gateway {
        match new.gateway {
            Some(g) => {
                n.set_gateway(IpAddress::Ipv4(g));
                said.push(format!("{}: gateway {g}", n.name));
            }
            None => {
                n.del_gateway(false);
                said.push(format!("{}: gateway removed", n.name));
            }
        }
    }
    if new.dhcp && !old.dhcp {
        n.start_dhcp();
        said.push(format!("{}: DHCPv4 started", n.name));
    }
    (now, said)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;
    use crate::iface::NetIf;
    use crate::link::tests::{cable, Pipe};

    fn files(s: &str) -> Ipv4Files {
        Ipv4Files::of(&config::parse(s).unwrap())
    }

    /// An interface `name` configured by `cfg` (as at boot).
    fn netif(name: &str, cfg: &str) -> NetIf<Pipe> {
        NetIf::new(name, cable().0, &config::parse(cfg).unwrap(), 0, 1)
    }

    fn v4(n: &NetIf<Pipe>) -> Vec<String> {
        n.addrs()
            .iter()
            .filter(|(c, _)| matches!(c, IpCidr::Ipv4(_)))
            .map(|(c, _)| format!("{c}"))
            .collect()
    }

    #[test]
    fn a_new_address_replaces_the_old_and_an_added_one_stays() {
        let old = files("192.168.1.1/24");
        let mut n = netif("eth0", "192.168.1.1/24");
        n.add_addr("10.9.0.1/16".parse().unwrap()).unwrap(); // `ip addr add`
        let new = files("192.168.7.1/24");
        let (now, said) = reload_ipv4(&mut n, &old, &new);
        assert_eq!(
            said,
            ["eth0: 192.168.1.1/24 removed", "eth0: 192.168.7.1/24 added"]
        );
        assert_eq!(now, new);
        assert_eq!(v4(&n), ["10.9.0.1/16", "192.168.7.1/24"]);
        // the same again: nothing
        let (_, said) = reload_ipv4(&mut n, &now, &new);
        assert!(said.is_empty(), "{said:?}");
    }

    #[test]
    fn the_static_gateway_is_replaced_and_removed() {
        let old = files("10.0.0.2/24 gw=10.0.0.1");
        let mut n = netif("eth1", "10.0.0.2/24 gw=10.0.0.1");
        let (now, said) = reload_ipv4(&mut n, &old, &files("10.0.0.2/24 gw=10.0.0.254"));
        assert_eq!(said, ["eth1: gateway 10.0.0.254"]);
        assert_eq!(n.default_gw4(), Some(Ipv4Address::new(10, 0, 0, 254)));
        let (_, said) = reload_ipv4(&mut n, &now, &files("10.0.0.2/24"));
        assert_eq!(said, ["eth1: gateway removed"]);
        assert_eq!(n.default_gw4(), None);
    }

    #[test]
    fn static_to_dhcp_and_back_restarts_the_interfaces_ipv4() {
        let old = files("10.0.0.2/24 gw=10.0.0.1");
        let mut n = netif("eth1", "10.0.0.2/24 gw=10.0.0.1");
        let (now, said) = reload_ipv4(&mut n, &old, &files("dhcp"));
        assert_eq!(
            said,
            [
                "eth1: proto static -> dhcp",
                "eth1: 10.0.0.2/24 removed",
                "eth1: gateway removed",
                "eth1: DHCPv4 started"
            ]
        );
        assert_eq!(now, files("dhcp"));
        assert!(v4(&n).is_empty() && n.dhcp_running());
        assert_eq!(n.default_gw4(), None);
        let (now, said) = reload_ipv4(&mut n, &now, &old);
        assert_eq!(
            said,
            [
                "eth1: proto dhcp -> static",
                "eth1: DHCPv4 stopped",
                "eth1: 10.0.0.2/24 added",
                "eth1: gateway 10.0.0.1"
            ]
        );
        assert_eq!(now, old);
        assert!(!n.dhcp_running());
        assert_eq!(v4(&n), ["10.0.0.2/24"]);
        assert_eq!(n.default_gw4(), Some(Ipv4Address::new(10, 0, 0, 1)));
    }

    #[test]
    fn an_address_that_does_not_fit_is_said_and_not_counted_as_in_force() {
        let old = files("192.168.1.1/24");
        let mut n = netif("eth0", "192.168.1.1/24");
        // already there by hand: the files' new one cannot be added again
        n.add_addr("192.168.9.1/24".parse().unwrap()).unwrap();
        let (now, said) = reload_ipv4(&mut n, &old, &files("192.168.9.1/24"));
        assert_eq!(
            said,
            [
                "eth0: 192.168.1.1/24 removed",
                "eth0: 192.168.9.1/24 not added (address 192.168.9.1/24 already assigned)"
            ]
        );
        assert!(now.addrs.is_empty());
    }

    #[test]
    fn down_takes_off_what_the_files_put_on_and_up_puts_it_back() {
        let files4 = files("10.0.0.2/24 gw=10.0.0.1");
        let mut n = netif("eth1", "10.0.0.2/24 gw=10.0.0.1");
        n.add_addr("10.9.0.1/16".parse().unwrap()).unwrap(); // `ip addr add`
        assert_eq!(
            down(&mut n, &files4),
            ["eth1: 10.0.0.2/24 removed", "eth1: gateway removed"]
        );
        assert_eq!(v4(&n), ["10.9.0.1/16"], "the hand-added one stays");
        assert_eq!(n.default_gw4(), None);
        let (now, said) = up(&mut n, &files4);
        assert_eq!(said, ["eth1: 10.0.0.2/24 added", "eth1: gateway 10.0.0.1"]);
        assert_eq!(now, files4);
        assert_eq!(n.default_gw4(), Some(Ipv4Address::new(10, 0, 0, 1)));
        // DHCP: down stops the client, up starts a new one
        let dhcp = files("dhcp");
        let mut n = netif("eth1", "dhcp");
        assert_eq!(down(&mut n, &dhcp), ["eth1: DHCPv4 stopped"]);
        assert!(!n.dhcp_running());
        assert_eq!(up(&mut n, &dhcp).1, ["eth1: DHCPv4 started"]);
        assert!(n.dhcp_running());
    }

    #[test]
    fn the_status_line_says_up_or_down_the_protocol_and_what_is_on() {
        let f = files("10.0.0.2/24 gw=10.0.0.1");
        let mut n = netif("eth1", "10.0.0.2/24 gw=10.0.0.1");
        assert_eq!(
            status("wan", &mut n, &f, true),
            "wan: eth1 up, proto static, address 10.0.0.2/24, gateway 10.0.0.1"
        );
        let _ = down(&mut n, &f);
        assert_eq!(
            status("wan", &mut n, &f, false),
            "wan: eth1 down, proto static"
        );
        let dhcp = files("dhcp");
        let mut n = netif("eth1", "dhcp");
        assert_eq!(
            status("wan", &mut n, &dhcp, true),
            "wan: eth1 up, proto dhcp, no lease yet"
        );
    }
}
