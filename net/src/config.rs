//! Interface configuration: what a boot configuration or `ip addr add` says.
//!
//! One interface's configuration is a list of words separated by commas or spaces:
//! `dhcp` (DHCPv4), `ADDR/PREFIX` (an IPv4 or IPv6 address), `gw=ADDR` (a default
//! route, IPv4 or IPv6). Examples: `dhcp`, `10.99.0.2/24,gw=10.99.0.1`,
//! `10.99.0.2/24 fd00:99::2/64 gw=10.99.0.1`. It comes from the kernel command line
//! (`xenlet.eth0=...`) or from XenStore (`data/xenlet/net/eth0`, written by dom0
//! before the domain is unpaused); without either an interface runs DHCPv4.
//! Every interface also gets its IPv6 link-local address (from the MAC, EUI-64).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use smoltcp::wire::{IpAddress, IpCidr, Ipv4Address, Ipv6Address};

/// An interface's configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IfConfig {
    /// Run the DHCPv4 client.
    pub dhcp: bool,
    /// Static addresses.
    pub addrs: Vec<IpCidr>,
    /// IPv4 default gateway.
    pub gw4: Option<Ipv4Address>,
    /// IPv6 default gateway.
    pub gw6: Option<Ipv6Address>,
}

/// Parses `ADDR/PREFIX` (IPv4 or IPv6; the prefix is required).
pub fn parse_cidr(s: &str) -> Result<IpCidr, String> {
    let (a, p) = s
        .split_once('/')
        .ok_or_else(|| format!("'{s}': missing /PREFIX"))?;
    let addr = parse_addr(a)?;
    let max = match addr {
        IpAddress::Ipv4(_) => 32,
        IpAddress::Ipv6(_) => 128,
    };
    let plen: u8 = p
        .parse()
        .ok()
        .filter(|&n| n <= max)
        .ok_or_else(|| format!("'{s}': bad prefix length '{p}'"))?;
    if addr.is_unspecified() || addr.is_multicast() {
        return Err(format!("'{s}': not a unicast address"));
    }
    Ok(IpCidr::new(addr, plen))
}

/// Parses an IPv4 or IPv6 address.
pub fn parse_addr(s: &str) -> Result<IpAddress, String> {
    if let Ok(a) = s.parse::<Ipv4Address>() {
        return Ok(IpAddress::Ipv4(a));
    }
    s.parse::<Ipv6Address>()
        .map(IpAddress::Ipv6)
        .map_err(|_| format!("'{s}': not an IP address"))
}

/// Parses one interface's configuration.
pub fn parse(s: &str) -> Result<IfConfig, String> {
    let mut c = IfConfig::default();
    let words = s
        .split(|ch: char| ch == ',' || ch.is_ascii_whitespace())
        .filter(|w| !w.is_empty());
    for w in words {
        if w == "dhcp" {
            c.dhcp = true;
        } else if let Some(g) = w.strip_prefix("gw=") {
            match parse_addr(g)? {
                IpAddress::Ipv4(a) if c.gw4.is_none() => c.gw4 = Some(a),
                IpAddress::Ipv6(a) if c.gw6.is_none() => c.gw6 = Some(a),
                _ => return Err(format!("'{w}': a second gateway of the same family")),
            }
        } else if w.contains('/') {
            if c.addrs.len() >= 4 {
                return Err(String::from("at most 4 static addresses"));
            }
            c.addrs.push(parse_cidr(w)?);
        } else {
            return Err(format!("'{w}': expected dhcp, ADDR/PREFIX or gw=ADDR"));
        }
    }
    Ok(c)
}

/// Finds `xenlet.<ifname>=VALUE` on a kernel command line.
pub fn from_cmdline<'a>(cmdline: &'a str, ifname: &str) -> Option<&'a str> {
    cmdline.split_ascii_whitespace().find_map(|w| {
        w.strip_prefix("xenlet.")?
            .strip_prefix(ifname)?
            .strip_prefix('=')
    })
}

/// Queues a vif asks its backend for by default (netfront's default).
pub use xenlet_drivers::netfront::DEFAULT_MAX_QUEUES as DEFAULT_QUEUES;
/// The most `xenlet.netqueues=` accepts.
pub const MAX_QUEUES: usize = 8;

/// The queue count from `xenlet.netqueues=N` (1 to [`MAX_QUEUES`]) on the kernel
/// command line, [`DEFAULT_QUEUES`] without it; an error names a malformed value.
pub fn queues_from_cmdline(cmdline: &str) -> Result<usize, String> {
    let Some(v) = cmdline
        .split_ascii_whitespace()
        .find_map(|w| w.strip_prefix("xenlet.netqueues="))
    else {
        return Ok(DEFAULT_QUEUES);
    };
    match v.parse::<usize>() {
        Ok(n) if (1..=MAX_QUEUES).contains(&n) => Ok(n),
        _ => Err(alloc::format!(
            "xenlet.netqueues={v}: expected a number from 1 to {MAX_QUEUES}"
        )),
    }
}

/// The IPv6 link-local address for `mac` (modified EUI-64).
pub fn link_local(mac: [u8; 6]) -> Ipv6Address {
    Ipv6Address::new(
        0xfe80,
        0,
        0,
        0,
        u16::from_be_bytes([mac[0] ^ 2, mac[1]]),
        u16::from_be_bytes([mac[2], 0xff]),
        u16::from_be_bytes([0xfe, mac[3]]),
        u16::from_be_bytes([mac[4], mac[5]]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_static_dhcp_and_gateways() {
        let c = parse("10.99.0.2/24,gw=10.99.0.1 fd00:99::2/64").unwrap();
        assert!(!c.dhcp);
        assert_eq!(c.addrs.len(), 2);
        assert_eq!(c.addrs[0], IpCidr::new(IpAddress::v4(10, 99, 0, 2), 24));
        assert_eq!(c.gw4, Some(Ipv4Address::new(10, 99, 0, 1)));
        assert_eq!(c.addrs[1].prefix_len(), 64);
        let d = parse("dhcp").unwrap();
        assert!(d.dhcp && d.addrs.is_empty());
        let g6 = parse("fd00::2/64,gw=fd00::1").unwrap();
        assert_eq!(g6.gw6, Some("fd00::1".parse().unwrap()));
        assert_eq!(parse("").unwrap(), IfConfig::default());
    }

    #[test]
    fn rejects_malformed_configuration() {
        for bad in [
            "10.99.0.2",
            "10.99.0.2/33",
            "10.99.0/24",
            "300.1.1.1/8",
            "fd00::1/129",
            "gw=banana",
            "0.0.0.0/0",
            "224.0.0.1/4",
            "gw=10.0.0.1,gw=10.0.0.2",
            "static",
            "1.1.1.1/8,1.1.1.2/8,1.1.1.3/8,1.1.1.4/8,1.1.1.5/8",
        ] {
            assert!(parse(bad).is_err(), "{bad} accepted");
        }
        assert!(parse("10.0.0.1/x").unwrap_err().contains("prefix"));
    }

    #[test]
    fn finds_interface_on_cmdline() {
        let cl = "console=hvc0 xenlet.eth0=10.0.0.2/24,gw=10.0.0.1 xenlet.eth1=dhcp";
        assert_eq!(from_cmdline(cl, "eth0"), Some("10.0.0.2/24,gw=10.0.0.1"));
        assert_eq!(from_cmdline(cl, "eth1"), Some("dhcp"));
        assert_eq!(from_cmdline(cl, "eth2"), None);
        assert_eq!(from_cmdline("xenlet.eth10=dhcp", "eth1"), None);
    }

    #[test]
    fn link_local_is_modified_eui64() {
        // Linux: 00:16:3e:01:02:03 -> fe80::216:3eff:fe01:203
        let ll = link_local([0x00, 0x16, 0x3e, 1, 2, 3]);
        assert_eq!(
            ll,
            "fe80::216:3eff:fe01:203".parse::<Ipv6Address>().unwrap()
        );
    }

    #[test]
    fn queue_count_from_the_command_line() {
        assert_eq!(queues_from_cmdline(""), Ok(DEFAULT_QUEUES));
        assert_eq!(queues_from_cmdline("xenlet.eth0=dhcp"), Ok(DEFAULT_QUEUES));
        assert_eq!(queues_from_cmdline("a xenlet.netqueues=1 b"), Ok(1));
        assert_eq!(queues_from_cmdline("xenlet.netqueues=8"), Ok(8));
        for bad in ["0", "9", "-1", "two", ""] {
            let e = queues_from_cmdline(&alloc::format!("xenlet.netqueues={bad}")).unwrap_err();
            assert!(e.contains("expected a number from 1 to 8"), "{e}");
        }
    }
}
