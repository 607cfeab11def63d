//! The `ip` and `ifconfig` tools over a [`NetStack`], in the habits of iproute2 and
//! net-tools: `ip [-s] link [show [DEV]]`, `ip addr [show [dev] DEV]`,
//! `ip addr add|del ADDR/PREFIX dev DEV`, `ip route [show]`,
//! `ip route add default via ADDR [dev DEV]`, `ip route del default [via ADDR] [dev DEV]`,
//! `ip neigh [show]`, and `ifconfig [DEV]`. Errors read like iproute2's.

use crate::config::{parse_addr, parse_cidr};
use crate::iface::{NetIf, Origin};
use crate::link::{BridgeView, Link, PortView};
use crate::NetStack;
use alloc::format;
use alloc::string::String;
use core::fmt::Write;
use smoltcp::wire::{IpAddress, IpCidr};

type Out<'a> = &'a mut dyn Write;

fn w(out: Out, s: &str) -> Result<(), String> {
    out.write_str(s).map_err(|_| String::from("write error"))
}

fn mac(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

fn link_line<L: Link>(idx: usize, n: &NetIf<L>, stats: bool) -> String {
    let state = if n.link.broken().is_some() {
        "DOWN"
    } else {
        "UP"
    };
    let mut s = format!(
        "{idx}: {}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu {} qdisc noqueue state {state}\n    link/ether {} brd ff:ff:ff:ff:ff:ff\n",
        n.name,
        n.link.mtu(),
        mac(n.link.mac())
    );
    // a port-less bridge (OpenWrt's bridge_empty): the interface is the bridge
    if let Some(b) = n.link.bridge_view().filter(|b| b.portless) {
        let ports: alloc::vec::Vec<&str> = b.ports.iter().map(|p| p.name.as_str()).collect();
        s += &format!(
            "    bridge of client ports only (bridge_empty); ports {}\n",
            if ports.is_empty() {
                String::from("none yet")
            } else {
                ports.join(" ")
            }
        );
        if stats {
            s += &format!("    {}\n", b.counters);
        }
    }
    if stats {
        let st = n.link.stats();
        s += &format!(
            "    RX:  bytes packets errors dropped\n    {:>10} {:>7} {:>6} {:>7}\n    TX:  bytes packets errors dropped\n    {:>10} {:>7} {:>6} {:>7}\n",
            st.rx_bytes, st.rx_packets, st.rx_errors, st.rx_dropped,
            st.tx_bytes, st.tx_packets, st.tx_errors, n.tx_dropped()
        );
        let c = n.rx_csum();
        s += &format!(
            "    RX checksums: {} offloaded, {} verified, {} bad\n",
            c.offloaded, c.verified, c.bad
        );
        s += &format!("    RX GSO packets (received whole): {}\n", st.rx_gso);
        let queues = n.link.queue_stats();
        if !queues.is_empty() {
            s += &format!("    queues: {} (RX/TX packets:", queues.len());
            for (i, q) in queues.iter().enumerate() {
                s += &format!(" q{i} {}/{}", q.rx_packets, q.tx_packets);
            }
            s += ")\n";
        }
        if n.link.gso_tcpv4() {
            let t = n.tso();
            let (packets, segs) = t.merged;
            s += &format!(
                "    TSO: {} large segments, {packets} merged GSO packets of {segs} segments, {} refused, {} oversize; SYN MSS raised {}, unknown {}\n",
                t.large, t.dropped, t.oversize, t.peers.raised, t.peers.unknown
            );
        }
    }
    if let Some(why) = n.link.broken() {
        s += &format!("    broken: {why}\n");
    }
    s
}

fn broadcast(c: &IpCidr) -> Option<String> {
    match c {
        IpCidr::Ipv4(c) if c.prefix_len() < 31 => c.broadcast().map(|b| format!(" brd {b}")),
        _ => None,
    }
}

/// The address lines of `n`, only those of IP version `family` if given (`ip -4`,
/// `ip -6`).
fn addr_lines<L: Link>(n: &NetIf<L>, family: Option<u8>) -> String {
    let mut s = String::new();
    for (c, o) in n.addrs() {
        let v = match c.address() {
            IpAddress::Ipv4(_) => 4,
            IpAddress::Ipv6(_) => 6,
        };
        if family.is_some_and(|f| f != v) {
            continue;
        }
        let (fam, scope) = match (c.address(), o) {
            (IpAddress::Ipv4(_), _) => ("inet", "global"),
            (IpAddress::Ipv6(_), Origin::LinkLocal) => ("inet6", "link"),
            (IpAddress::Ipv6(_), _) => ("inet6", "global"),
        };
        let brd = broadcast(&c).unwrap_or_default();
        let dynamic = if o == Origin::Dhcp { " dynamic" } else { "" };
        let dev = if fam == "inet" {
            format!(" {}", n.name)
        } else {
            String::new()
        };
        s += &format!("    {fam} {c}{brd} scope {scope}{dynamic}{dev}\n");
    }
    s
}

/// What iproute2 says when asked to show a device that is not there.
fn no_such(dev: &str) -> String {
    format!("Device \"{dev}\" does not exist.")
}

fn find<'a, L: Link>(
    stack: &'a mut NetStack<L>,
    dev: &str,
) -> Result<(usize, &'a mut NetIf<L>), String> {
    stack
        .ifs
        .iter_mut()
        .enumerate()
        .find(|(_, n)| n.name == dev)
        .map(|(i, n)| (i + 1, n))
        .ok_or_else(|| format!("Cannot find device \"{dev}\""))
}

/// Runs `ip ARGS`.
pub fn ip<L: Link>(stack: &mut NetStack<L>, args: &[&str], out: Out) -> Result<(), String> {
    let mut stats = false;
    let mut family = None;
    let mut args = args;
    while let Some((first, rest)) = args.split_first() {
        match *first {
            "-s" | "-stats" => stats = true,
            "-4" => family = Some(4),
            "-6" => family = Some(6),
            _ => break,
        }
        args = rest;
    }
    let Some((obj, rest)) = args.split_first() else {
        return Err(String::from(
            "Usage: ip [ -s ] [ -4 | -6 ] { link | addr | route | neigh } [ COMMAND ]",
        ));
    };
    let obj = *obj;
    if "link".starts_with(obj) && !obj.is_empty() {
        link(stack, rest, stats, out)
    } else if "address".starts_with(obj) && !obj.is_empty() {
        addr(stack, rest, family, out)
    } else if "route".starts_with(obj) && !obj.is_empty() {
        route(stack, rest, out)
    } else if "neighbour".starts_with(obj) || "neighbor".starts_with(obj) {
        neigh(stack, rest, out)
    } else {
        Err(format!("Object \"{obj}\" is unknown, try \"ip help\"."))
    }
}

fn show_dev<'a>(rest: &[&'a str]) -> Result<Option<&'a str>, String> {
    match rest {
        [] | ["show"] | ["list"] => Ok(None),
        ["show" | "list", "dev", d] | ["show" | "list", d] | ["dev", d] => Ok(Some(d)),
        [cmd, ..] => Err(format!("Command \"{cmd}\" is unknown, try \"ip help\".")),
    }
}

fn link<L: Link>(
    stack: &mut NetStack<L>,
    rest: &[&str],
    stats: bool,
    out: Out,
) -> Result<(), String> {
    match show_dev(rest)? {
        Some(d) => {
            let (i, n) = find(stack, d).map_err(|_| no_such(d))?;
            w(out, &link_line(i, n, stats))
        }
        None => {
            for (i, n) in stack.ifs.iter().enumerate() {
                w(out, &link_line(i + 1, n, stats))?;
            }
            // bridges and their ports after the interfaces, numbered on
            let mut idx = stack.ifs.len();
            for n in &stack.ifs {
                if let Some(b) = n.link.bridge_view() {
                    // a port-less bridge is the interface listed above; every port
                    // is a client's
                    let carrier = usize::from(!b.portless);
                    if !b.portless {
                        idx += 1;
                        w(out, &bridge_lines(idx, &n.name, &b, stats))?;
                    }
                    for p in b.ports.iter().skip(carrier) {
                        idx += 1;
                        w(out, &port_line(idx, &b.name, p, stats))?;
                    }
                }
            }
            Ok(())
        }
    }
}

/// A bridge in `ip link`: named as OpenWrt's (`br-lan`), the interface it carries.
fn bridge_lines(idx: usize, carrier: &str, b: &BridgeView, stats: bool) -> String {
    let mtu = b.ports.iter().map(|p| p.mtu).min().unwrap_or(0);
    let mac0 = b.mac;
    let ports: alloc::vec::Vec<&str> = b.ports.iter().map(|p| p.name.as_str()).collect();
    let mut s = format!(
        "{idx}: {}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu {mtu} qdisc noqueue state UP\n    link/ether {} brd ff:ff:ff:ff:ff:ff\n    bridge for {carrier}'s addresses; ports {}\n",
        b.name,
        mac(mac0),
        ports.join(" ")
    );
    if stats {
        s += &format!("    {}\n", b.counters);
    }
    s
}

/// A port of a bridge other than the one carrying the interface (a client's vif).
fn port_line(idx: usize, bridge: &str, p: &PortView, stats: bool) -> String {
    let state = if p.broken.is_some() { "DOWN" } else { "UP" };
    let mut s = format!(
        "{idx}: {}: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu {} master {bridge} state {state}\n    link/ether {} brd ff:ff:ff:ff:ff:ff{}\n",
        p.name,
        p.mtu,
        mac(p.mac),
        if p.lock.is_some() { " (source locked)" } else { "" }
    );
    if let Some(g) = &p.guard {
        s += &format!("    {g}\n");
    }
    if stats {
        let st = &p.stats;
        s += &format!(
            "    RX:  bytes packets errors dropped\n    {:>10} {:>7} {:>6} {:>7}\n    TX:  bytes packets errors dropped\n    {:>10} {:>7} {:>6} {:>7}\n",
            st.rx_bytes, st.rx_packets, st.rx_errors, st.rx_dropped,
            st.tx_bytes, st.tx_packets, st.tx_errors, 0
        );
    }
    if let Some(why) = &p.broken {
        s += &format!("    broken: {why}\n");
    }
    s
}

/// `brctl show` and `brctl showmacs BRIDGE` (busybox's brctl) over the stack's
/// bridges.
pub fn brctl<L: Link>(stack: &NetStack<L>, args: &[&str], out: Out) -> Result<(), String> {
    let bridges: alloc::vec::Vec<BridgeView> = stack
        .ifs
        .iter()
        .filter_map(|n| n.link.bridge_view())
        .collect();
    match args {
        [] | ["show"] => {
            w(out, "bridge name\tbridge id\t\tSTP enabled\tinterfaces\n")?;
            for b in &bridges {
                let m = b.mac;
                let id = format!(
                    "8000.{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                    m[0], m[1], m[2], m[3], m[4], m[5]
                );
                let mut names = b.ports.iter().map(|p| p.name.as_str());
                w(
                    out,
                    &format!("{}\t\t{id}\tno\t\t{}\n", b.name, names.next().unwrap_or("")),
                )?;
                for n in names {
                    w(out, &format!("\t\t\t\t\t\t\t{n}\n"))?;
                }
            }
            Ok(())
        }
        ["showmacs", name] => {
            let b = bridges
                .iter()
                .find(|b| b.name == *name)
                .ok_or_else(|| format!("bridge {name} does not exist"))?;
            w(out, "port\tmac addr\t\tis local?\tageing timer\n")?;
            for (m, port, age_ms, fixed) in &b.fdb {
                w(
                    out,
                    &format!(
                        "{port}\t{}\t{}\t\t{:>4}.{:02}\n",
                        mac(*m),
                        if *fixed { "locked" } else { "no" },
                        age_ms / 1000,
                        (age_ms % 1000) / 10
                    ),
                )?;
            }
            w(out, &format!("({})\n", b.counters))
        }
        _ => Err(String::from("Usage: brctl [show | showmacs BRIDGE]")),
    }
}

fn addr<L: Link>(
    stack: &mut NetStack<L>,
    rest: &[&str],
    family: Option<u8>,
    out: Out,
) -> Result<(), String> {
    match rest {
        [op @ ("add" | "del" | "delete"), a, "dev", d]
        | [op @ ("add" | "del" | "delete"), "dev", d, a] => {
            let c = parse_cidr(a)
                .map_err(|e| format!("Error: any valid prefix is expected rather than {e}."))?;
            let (_, n) = find(stack, d)?;
            if *op == "add" {
                n.add_addr(c)
                    .map_err(|_| String::from("RTNETLINK answers: File exists"))
            } else {
                n.del_addr(c)
                    .map_err(|_| String::from("RTNETLINK answers: Cannot assign requested address"))
            }
        }
        ["add" | "del" | "delete", ..] => {
            Err(String::from("Usage: ip addr {add|del} IFADDR dev IFNAME"))
        }
        _ => {
            let only = show_dev(rest)?;
            if let Some(d) = only {
                find(stack, d).map_err(|_| no_such(d))?;
            }
            for (i, n) in stack.ifs.iter().enumerate() {
                if only.is_some_and(|d| d != n.name) {
                    continue;
                }
                let lines = addr_lines(n, family);
                // with a family, interfaces without an address of it are left out
                if family.is_some() && lines.is_empty() {
                    continue;
                }
                w(out, &link_line(i + 1, n, false))?;
                w(out, &lines)?;
            }
            Ok(())
        }
    }
}

fn route<L: Link>(stack: &mut NetStack<L>, rest: &[&str], out: Out) -> Result<(), String> {
    match rest {
        [] | ["show"] | ["list"] => {
            for n in stack.ifs.iter_mut() {
                let name = n.name.clone();
                for r in n.routes() {
                    let line = match (r.cidr.prefix_len(), r.via) {
                        (0, Some(v)) => format!(
                            "default via {v} dev {name}{}",
                            if r.dhcp { " proto dhcp" } else { "" }
                        ),
                        _ => format!(
                            "{} dev {name} proto kernel scope link{}",
                            r.cidr,
                            r.src.map(|s| format!(" src {s}")).unwrap_or_default()
                        ),
                    };
                    w(out, &line)?;
                    w(out, "\n")?;
                }
            }
            Ok(())
        }
        ["add" | "replace", "default", "via", gw, tail @ ..] => {
            let gw = parse_addr(gw)
                .map_err(|e| format!("Error: inet address is expected rather than {e}."))?;
            let idx = match tail {
                [] => stack
                    .ifs
                    .iter()
                    .position(|n| n.on_link(gw))
                    .ok_or_else(|| String::from("Error: Nexthop has invalid gateway."))?,
                ["dev", d] => find(stack, d)?.0 - 1,
                _ => {
                    return Err(String::from(
                        "Usage: ip route add default via ADDR [dev IFNAME]",
                    ))
                }
            };
            let n = &mut stack.ifs[idx];
            if !n.on_link(gw) && !matches!(gw, IpAddress::Ipv6(a) if a.is_unicast_link_local()) {
                return Err(String::from("Error: Nexthop has invalid gateway."));
            }
            n.set_gateway(gw);
            Ok(())
        }
        ["del" | "delete", "default", tail @ ..] => {
            let v6 = matches!(tail, ["via", g, ..] if g.contains(':'));
            let mut any = false;
            for n in stack.ifs.iter_mut() {
                if let ["dev", d] | ["via", _, "dev", d] = tail {
                    if n.name != *d {
                        continue;
                    }
                }
                any |= n.del_gateway(v6);
            }
            if any {
                Ok(())
            } else {
                Err(String::from("RTNETLINK answers: No such process"))
            }
        }
        [cmd, ..] => Err(format!(
            "Command \"{cmd}\" is unknown or not supported (show, add default, del default)."
        )),
    }
}

fn neigh<L: Link>(stack: &mut NetStack<L>, rest: &[&str], out: Out) -> Result<(), String> {
    show_dev(rest)?;
    let now = stack.now_ms;
    for n in &stack.ifs {
        for (ip, e) in n.neighbors().iter() {
            let state = if now - e.seen_ms < 30_000 {
                "REACHABLE"
            } else {
                "STALE"
            };
            w(
                out,
                &format!("{ip} dev {} lladdr {} {state}\n", n.name, mac(e.mac)),
            )?;
        }
    }
    Ok(())
}

fn human(bytes: u64) -> String {
    let (v, u) = match bytes {
        b if b >= 1 << 30 => (b as f64 / (1u64 << 30) as f64, "GiB"),
        b if b >= 1 << 20 => (b as f64 / (1u64 << 20) as f64, "MiB"),
        b if b >= 1 << 10 => (b as f64 / 1024.0, "KiB"),
        b => (b as f64, "B"),
    };
    format!("{v:.1} {u}")
}

/// Runs `ifconfig [DEV]` (net-tools layout).
pub fn ifconfig<L: Link>(stack: &mut NetStack<L>, args: &[&str], out: Out) -> Result<(), String> {
    let only = match args {
        [] | ["-a"] => None,
        [d] => Some(*d),
        _ => return Err(String::from("usage: ifconfig [-a] [INTERFACE]")),
    };
    if let Some(d) = only {
        find(stack, d)?;
    }
    for n in &stack.ifs {
        if only.is_some_and(|d| d != n.name) {
            continue;
        }
        let st = n.link.stats();
        let mut s = format!(
            "{}: flags=4163<UP,BROADCAST,RUNNING,MULTICAST>  mtu {}\n",
            n.name,
            n.link.mtu()
        );
        for (c, o) in n.addrs() {
            match c {
                IpCidr::Ipv4(c4) => {
                    s += &format!("        inet {}  netmask {}", c4.address(), c4.netmask());
                    if let Some(b) = c4.broadcast() {
                        s += &format!("  broadcast {b}");
                    }
                    s += "\n";
                }
                IpCidr::Ipv6(c6) => {
                    let scope = if o == Origin::LinkLocal {
                        "0x20<link>"
                    } else {
                        "0x0<global>"
                    };
                    s += &format!(
                        "        inet6 {}  prefixlen {}  scopeid {scope}\n",
                        c6.address(),
                        c6.prefix_len()
                    );
                }
            }
        }
        s += &format!(
            "        ether {}  txqueuelen 256  (Ethernet)\n        RX packets {}  bytes {} ({})\n        RX errors {}  dropped {}  overruns 0  frame 0\n        TX packets {}  bytes {} ({})\n        TX errors {}  dropped {} overruns 0  carrier 0  collisions 0\n\n",
            mac(n.link.mac()),
            st.rx_packets, st.rx_bytes, human(st.rx_bytes),
            st.rx_errors, st.rx_dropped,
            st.tx_packets, st.tx_bytes, human(st.tx_bytes),
            st.tx_errors, n.tx_dropped()
        );
        w(out, &s)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iface::tests::pair;
    use crate::link::QueueStats;
    use alloc::vec::Vec;

    fn stack(cfg: &str) -> NetStack<crate::link::tests::Pipe> {
        let (a, _) = pair(cfg, "10.0.0.9/24");
        let mut s = NetStack::new();
        s.ifs.push(a);
        s
    }

    fn run(s: &mut NetStack<crate::link::tests::Pipe>, line: &str) -> Result<String, String> {
        let args: Vec<&str> = line.split_whitespace().collect();
        let mut out = String::new();
        ip(s, &args, &mut out).map(|_| out)
    }

    #[test]
    fn a_client_port_shows_its_guard_under_its_address() {
        let p = PortView {
            name: String::from("vif5.0"),
            mac: [0, 0x16, 0x3e, 0, 0, 5],
            lock: Some([0, 0x16, 0x3e, 0, 0, 5]),
            stats: crate::link::LinkStats::default(),
            rx_frames: 0,
            tx_frames: 0,
            broken: None,
            mtu: 1500,
            guard: Some(String::from("source ip 10.0.0.5 (3 spoofed dropped)")),
            driver_stats: alloc::vec::Vec::new(),
        };
        assert_eq!(
            port_line(4, "br-lan", &p, false),
            "4: vif5.0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 master br-lan state UP\n    link/ether 00:16:3e:00:00:05 brd ff:ff:ff:ff:ff:ff (source locked)\n    source ip 10.0.0.5 (3 spoofed dropped)\n"
        );
    }

    /// `ip link`, `ip addr` and `brctl show` of a port-less bridge (OpenWrt's
    /// bridge_empty): the interface is the bridge, named as it, with its own MAC, and
    /// its ports are clients'.
    #[test]
    fn a_portless_bridge_is_the_interface_and_lists_its_client_ports() {
        use crate::bridge::Bridge;
        use crate::link::tests::cable;
        const OWN: [u8; 6] = [0x02, 0x16, 0x3e, 0, 0, 0x10];
        let n = crate::iface::NetIf::new(
            "br-guest",
            Bridge::portless("br-guest", OWN),
            &crate::config::parse("192.168.2.1/24").unwrap(),
            0,
            1,
        );
        let mut s = NetStack::new();
        s.ifs.push(n);
        let l = run_b(&mut s, "ip link").unwrap();
        assert_eq!(
            l,
            "1: br-guest: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP\n    link/ether 02:16:3e:00:00:10 brd ff:ff:ff:ff:ff:ff\n    bridge of client ports only (bridge_empty); ports none yet\n"
        );
        let (c, _far) = cable();
        s.ifs[0]
            .link
            .add_port("vif5.0", c, Some([0, 0x16, 0x3e, 0, 0, 5]))
            .ok()
            .unwrap();
        let l = run_b(&mut s, "ip link").unwrap();
        assert!(l.contains("ports vif5.0\n"), "{l}");
        assert!(
            l.contains(
                "2: vif5.0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 master br-guest state UP"
            ),
            "{l}"
        );
        assert!(!l.contains("3:"), "no separate bridge line: {l}");
        let a = run_b(&mut s, "ip addr show dev br-guest").unwrap();
        assert!(
            a.contains("    inet 192.168.2.1/24 brd 192.168.2.255 scope global br-guest"),
            "{a}"
        );
        let mut out = String::new();
        brctl(&s, &[], &mut out).unwrap();
        assert_eq!(
            out,
            "bridge name\tbridge id\t\tSTP enabled\tinterfaces\nbr-guest\t\t8000.02163e000010\tno\t\tvif5.0\n"
        );
    }

    fn run_b(
        s: &mut NetStack<crate::bridge::Bridge<crate::link::tests::Pipe>>,
        line: &str,
    ) -> Result<String, String> {
        let args: Vec<&str> = line.split_whitespace().skip(1).collect();
        let mut out = String::new();
        ip(s, &args, &mut out).map(|_| out)
    }

    #[test]
    fn shows_addresses_routes_links() {
        let mut s = stack("10.0.0.2/24,gw=10.0.0.1");
        let a = run(&mut s, "addr").unwrap();
        assert!(
            a.contains("1: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500"),
            "{a}"
        );
        assert!(a.contains("    link/ether 02:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff"));
        assert!(
            a.contains("    inet 10.0.0.2/24 brd 10.0.0.255 scope global eth0"),
            "{a}"
        );
        assert!(a.contains("    inet6 fe80::ff:fe00:1/64 scope link"), "{a}");
        assert_eq!(run(&mut s, "a show dev eth0").unwrap(), a);
        // a family: only its addresses (the ULA a router's LAN gets, its link-local)
        run(&mut s, "addr add fd12:3456:789a::1/64 dev eth0").unwrap();
        let six = run(&mut s, "-6 addr").unwrap();
        assert!(
            six.contains("    inet6 fd12:3456:789a::1/64 scope global"),
            "{six}"
        );
        assert!(
            six.contains("    inet6 fe80::ff:fe00:1/64 scope link"),
            "{six}"
        );
        assert!(!six.contains("inet "), "{six}");
        let four = run(&mut s, "-4 a").unwrap();
        assert!(
            four.contains("    inet 10.0.0.2/24") && !four.contains("inet6"),
            "{four}"
        );
        run(&mut s, "addr del fd12:3456:789a::1/64 dev eth0").unwrap();
        let r = run(&mut s, "route").unwrap();
        assert_eq!(
            r,
            "default via 10.0.0.1 dev eth0\n10.0.0.0/24 dev eth0 proto kernel scope link src 10.0.0.2\n"
        );
        let l = run(&mut s, "-s link show eth0").unwrap();
        assert!(l.contains("RX:  bytes packets errors dropped"));
        assert!(!l.contains("queues:"), "one queue: no queue line\n{l}");
        assert!(
            l.contains("    RX GSO packets (received whole): 0\n"),
            "{l}"
        );
        s.ifs[0].link.queues = alloc::vec![
            QueueStats {
                rx_packets: 5,
                tx_packets: 2
            },
            QueueStats {
                rx_packets: 7,
                tx_packets: 0
            },
        ];
        let l = run(&mut s, "-s link show eth0").unwrap();
        assert!(
            l.contains("    queues: 2 (RX/TX packets: q0 5/2 q1 7/0)\n"),
            "{l}"
        );
        let mut o = String::new();
        ifconfig(&mut s, &[], &mut o).unwrap();
        assert!(
            o.contains("inet 10.0.0.2  netmask 255.255.255.0  broadcast 10.0.0.255"),
            "{o}"
        );
    }

    #[test]
    fn changes_addresses_and_routes() {
        let mut s = stack("10.0.0.2/24");
        run(&mut s, "addr add 192.168.5.5/16 dev eth0").unwrap();
        assert!(run(&mut s, "addr").unwrap().contains("inet 192.168.5.5/16"));
        assert_eq!(
            run(&mut s, "addr add 192.168.5.5/16 dev eth0").unwrap_err(),
            "RTNETLINK answers: File exists"
        );
        run(&mut s, "addr del 192.168.5.5/16 dev eth0").unwrap();
        assert!(!run(&mut s, "addr").unwrap().contains("192.168"));
        run(&mut s, "route add default via 10.0.0.1").unwrap();
        assert!(run(&mut s, "route")
            .unwrap()
            .starts_with("default via 10.0.0.1 dev eth0"));
        assert!(run(&mut s, "route add default via 172.16.0.1")
            .unwrap_err()
            .contains("Nexthop"));
        run(&mut s, "route del default").unwrap();
        assert!(run(&mut s, "route del default")
            .unwrap_err()
            .contains("No such process"));
    }

    #[test]
    fn malformed_commands_get_iproute2_errors() {
        let mut s = stack("10.0.0.2/24");
        assert!(run(&mut s, "").unwrap_err().starts_with("Usage: ip"));
        assert_eq!(
            run(&mut s, "bogus").unwrap_err(),
            "Object \"bogus\" is unknown, try \"ip help\"."
        );
        assert_eq!(
            run(&mut s, "link show eth7").unwrap_err(),
            "Device \"eth7\" does not exist."
        );
        assert_eq!(
            run(&mut s, "addr show dev eth7").unwrap_err(),
            "Device \"eth7\" does not exist."
        );
        assert!(run(&mut s, "addr add 10.1.1.1 dev eth0")
            .unwrap_err()
            .contains("prefix"));
        assert!(run(&mut s, "addr add 10.1.1.1/8 dev eth9")
            .unwrap_err()
            .contains("Cannot find"));
        assert!(run(&mut s, "addr add").unwrap_err().starts_with("Usage"));
        assert!(run(&mut s, "route add default via banana").is_err());
        assert!(run(&mut s, "neigh flush").is_err());
    }
}
