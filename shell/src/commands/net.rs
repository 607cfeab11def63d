//! The network commands' arguments and the router's block of `ip -s link`: the
//! servers' `-p PORT` (iperf3's `-s [-p PORT] [-D]`, echod's `[-p PORT]`), udhcpc's
//! `[-i IFACE]` (busybox), the forwarding counters printed after iproute2's
//! per-link statistics, and `ethtool -S IFACE`'s arguments and driver statistics
//! (Linux's ethtool: `NIC statistics:` then one `name: value` a line).

use crate::CmdError;
use alloc::format;
use alloc::string::String;
use core::fmt::{self, Write};

/// `[-p PORT]`: the port (1..=65535), `default` without the option.
pub fn port_arg(args: &[&str], default: u16) -> Result<u16, CmdError> {
    match args {
        [] => Ok(default),
        ["-p", p] => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| CmdError::usage(format!("bad port '{p}'"))),
        [a, ..] => Err(CmdError::usage(format!("unknown option '{a}'"))),
    }
}

/// iperf3's `-s [-p PORT] [-D]` (`-D` anywhere: the server always runs in the
/// background): the port.
pub fn iperf3_port(args: &[&str], default: u16) -> Result<u16, CmdError> {
    let args: alloc::vec::Vec<&str> = args.iter().copied().filter(|a| *a != "-D").collect();
    let ["-s", rest @ ..] = args.as_slice() else {
        return Err(CmdError::usage("only the server (-s) is implemented"));
    };
    port_arg(rest, default)
}

/// udhcpc's `[-i IFACE]`: the interface, `eth0` by default.
pub fn udhcpc_iface<'a>(args: &[&'a str]) -> Result<&'a str, CmdError> {
    match args {
        [] => Ok("eth0"),
        ["-i", d] => Ok(d),
        _ => Err(CmdError::usage("unknown option")),
    }
}

/// `ethtool -S IFACE` (or `--statistics IFACE`): the interface. Only the driver
/// statistics are implemented.
pub fn ethtool_stats_iface<'a>(args: &[&'a str]) -> Result<&'a str, CmdError> {
    match args {
        ["-S" | "--statistics", d] if !d.starts_with('-') => Ok(d),
        ["-S" | "--statistics"] => Err(CmdError::usage("no interface given")),
        [] => Err(CmdError::usage("no option given")),
        _ => Err(CmdError::usage(
            "only the driver statistics (-S IFACE) are implemented",
        )),
    }
}

/// `ethtool -S`'s output as Linux's ethtool prints it: `NIC statistics:`, then each
/// counter as `     name: value`. A device without driver statistics (a bridge of
/// several ports, the loopback) is an error, as ethtool's `no stats available`.
pub fn write_ethtool_stats(
    out: &mut dyn Write,
    iface: &str,
    stats: &[(&str, u64)],
) -> Result<(), CmdError> {
    if stats.is_empty() {
        return Err(CmdError::failed(format!("{iface}: no stats available")));
    }
    writeln!(out, "NIC statistics:")?;
    for (name, value) in stats {
        writeln!(out, "     {name}: {value}")?;
    }
    Ok(())
}

/// `ethtool -S IFACE` for an interface that does not exist.
pub fn no_such_device(iface: &str) -> CmdError {
    CmdError::failed(format!("{iface}: no such device"))
}

/// Whether `ip` was asked for `-s link` (after which a router adds its counters).
pub fn wants_link_stats(args: &[&str]) -> bool {
    matches!(args, ["-s", "link", ..] | ["-s", "l", ..])
}

/// The router's block after `ip -s link`: each routed interface's forwarding
/// counters (`name`, its `RX:`/`TX:` lines), then the drop reasons that counted.
pub fn write_router_counters(
    out: &mut dyn Write,
    links: &[(&str, String)],
    drops: &[(String, u64)],
) -> fmt::Result {
    writeln!(out, "forwarding (router):")?;
    for (name, counters) in links {
        writeln!(out, "  {name}:\n{counters}")?;
    }
    let drops: alloc::vec::Vec<String> = drops
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(r, n)| format!("{r} {n}"))
        .collect();
    writeln!(
        out,
        "  dropped: {}",
        if drops.is_empty() {
            String::from("none")
        } else {
            drops.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::fuzz::{args, XorShift};
    use alloc::vec;
    use alloc::vec::Vec;

    #[test]
    fn ports_are_1_to_65535() {
        assert_eq!(port_arg(&[], 7), Ok(7));
        assert_eq!(port_arg(&["-p", "5201"], 7), Ok(5201));
        assert_eq!(port_arg(&["-p", "65535"], 7), Ok(65535));
        assert_eq!(
            port_arg(&["-p", "0"], 7),
            Err(CmdError::usage("bad port '0'"))
        );
        assert_eq!(
            port_arg(&["-p", "65536"], 7),
            Err(CmdError::usage("bad port '65536'"))
        );
        assert_eq!(
            port_arg(&["-p", "-1"], 7),
            Err(CmdError::usage("bad port '-1'"))
        );
        assert_eq!(
            port_arg(&["-x"], 7),
            Err(CmdError::usage("unknown option '-x'"))
        );
        // -p without a value, or a value and more
        assert!(port_arg(&["-p"], 7).is_err());
        assert!(port_arg(&["-p", "80", "-p", "81"], 7).is_err());
    }

    #[test]
    fn iperf3_is_a_server_with_d_anywhere() {
        assert_eq!(iperf3_port(&["-s"], 5201), Ok(5201));
        assert_eq!(iperf3_port(&["-s", "-D"], 5201), Ok(5201));
        assert_eq!(iperf3_port(&["-D", "-s", "-p", "9"], 5201), Ok(9));
        assert_eq!(iperf3_port(&["-s", "-p", "-D", "9"], 5201), Ok(9));
        assert_eq!(
            iperf3_port(&["-c", "10.0.0.1"], 5201),
            Err(CmdError::usage("only the server (-s) is implemented"))
        );
        assert!(iperf3_port(&[], 5201).is_err());
        assert!(iperf3_port(&["-p", "9", "-s"], 5201).is_err());
    }

    #[test]
    fn udhcpc_takes_eth0_or_dash_i() {
        assert_eq!(udhcpc_iface(&[]), Ok("eth0"));
        assert_eq!(udhcpc_iface(&["-i", "eth2"]), Ok("eth2"));
        assert!(udhcpc_iface(&["-i"]).is_err());
        assert!(udhcpc_iface(&["eth1"]).is_err());
    }

    #[test]
    fn ethtool_takes_dash_s_and_an_interface_only() {
        assert_eq!(ethtool_stats_iface(&["-S", "eth0"]), Ok("eth0"));
        assert_eq!(ethtool_stats_iface(&["--statistics", "eth1"]), Ok("eth1"));
        assert_eq!(
            ethtool_stats_iface(&["-S"]),
            Err(CmdError::usage("no interface given"))
        );
        assert_eq!(
            ethtool_stats_iface(&[]),
            Err(CmdError::usage("no option given"))
        );
        for bad in [
            &["eth0"][..],
            &["-i", "eth0"],
            &["-S", "eth0", "eth1"],
            &["-S", "-x"],
        ] {
            assert_eq!(
                ethtool_stats_iface(bad),
                Err(CmdError::usage(
                    "only the driver statistics (-S IFACE) are implemented"
                )),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn ethtool_prints_as_linux_and_refuses_what_has_no_stats() {
        let mut out = String::new();
        write_ethtool_stats(&mut out, "eth0", &[("events", 12), ("tx_slots", 3)]).unwrap();
        assert_eq!(out, "NIC statistics:\n     events: 12\n     tx_slots: 3\n");
        let mut out = String::new();
        assert_eq!(
            write_ethtool_stats(&mut out, "br-lan", &[]),
            Err(CmdError::failed("br-lan: no stats available"))
        );
        assert!(out.is_empty());
        assert_eq!(
            no_such_device("eth9"),
            CmdError::failed("eth9: no such device")
        );
    }

    #[test]
    fn link_stats_only_for_dash_s_link() {
        assert!(wants_link_stats(&["-s", "link"]));
        assert!(wants_link_stats(&["-s", "l", "show", "eth0"]));
        assert!(!wants_link_stats(&["link"]));
        assert!(!wants_link_stats(&["-s", "addr"]));
        assert!(!wants_link_stats(&[]));
    }

    #[test]
    fn router_block_lists_links_and_only_the_drops_that_counted() {
        let mut s = String::new();
        let links = [
            ("eth0", String::from("    RX: a\n    1")),
            ("eth1", String::from("    RX: b\n    2")),
        ];
        write_router_counters(
            &mut s,
            &links,
            &[
                ("NoRoute".into(), 3),
                ("TtlExceeded".into(), 0),
                ("Firewall".into(), 12),
            ],
        )
        .unwrap();
        assert_eq!(
            s,
            "forwarding (router):\n  eth0:\n    RX: a\n    1\n  eth1:\n    RX: b\n    2\n\
             \x20 dropped: NoRoute 3, Firewall 12\n"
        );
        let mut s = String::new();
        write_router_counters(&mut s, &[], &[("NoRoute".into(), 0)]).unwrap();
        assert_eq!(s, "forwarding (router):\n  dropped: none\n");
    }

    #[test]
    fn random_arguments_never_panic() {
        let mut r = XorShift(0x9e37_79b9_7f4a_7c15);
        let vocab = [
            "-s", "-D", "-p", "-i", "5201", "0", "65536", "eth0", "link", "l", "-S",
        ];
        for _ in 0..5000 {
            let owned = args(&mut r, &vocab);
            let a: Vec<&str> = owned.iter().map(String::as_str).collect();
            if let Ok(p) = port_arg(&a, 7) {
                assert_ne!(p, 0);
            }
            if let Ok(p) = iperf3_port(&a, 5201) {
                assert_ne!(p, 0);
                assert!(a.contains(&"-s"));
            }
            if let Ok(i) = udhcpc_iface(&a) {
                assert!(a.is_empty() || a == vec!["-i", i]);
            }
            let _ = wants_link_stats(&a);
            if let Ok(d) = ethtool_stats_iface(&a) {
                assert!(!d.starts_with('-') && a.len() == 2, "{a:?}");
            }
        }
    }
}
