//! Private and special addresses, for `boguspriv` and `rebind_protection`.
//!
//! The ranges are dnsmasq's `private_net()` / `private_net6()` (`src/rfc1035.c`):
//! RFC 1918 (10/8, 172.16/12, 192.168/16), loopback 127/8, link-local
//! 169.254/16, "this network" 0/8, the documentation nets of RFC 5737, the
//! limited broadcast; for IPv6 the unspecified and loopback addresses, link-local
//! fe80::/10, unique-local fc00::/7 (RFC 4193) and IPv4-mapped private addresses.
//! OpenWrt's `rebind_localhost '1'` (the default) lets 127/8 through, for DNS
//! block lists that answer with loopback addresses.

use core::net::{Ipv4Addr, Ipv6Addr};

/// Whether `a` is in one of the private or special IPv4 ranges.
pub fn is_private_v4(a: Ipv4Addr) -> bool {
    let o = a.octets();
    a.is_private()
        || a.is_loopback()
        || a.is_link_local()
        || o[0] == 0
        || a.is_broadcast()
        || a.is_documentation()
}

/// Whether `a` is in one of the private or special IPv6 ranges.
pub fn is_private_v6(a: Ipv6Addr) -> bool {
    let s = a.segments();
    a.is_unspecified()
        || a.is_loopback()
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xfe00) == 0xfc00
        || a.to_ipv4_mapped().is_some_and(is_private_v4)
}

/// Whether a reverse lookup of `a` stays local under `boguspriv`: RFC 1918,
/// link-local and the other special ranges above (not the loopback net, which
/// the forwarder answers itself).
pub fn is_bogus_reverse(a: Ipv4Addr) -> bool {
    is_private_v4(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_addresses() {
        for p in [
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "127.0.0.1",
            "169.254.9.9",
            "0.1.2.3",
        ] {
            assert!(is_private_v4(p.parse().unwrap()), "{p}");
        }
        for p in ["8.8.8.8", "172.32.0.1", "93.184.216.34", "100.64.0.1"] {
            assert!(!is_private_v4(p.parse().unwrap()), "{p}");
        }
        for p in ["::1", "fe80::1", "fd00::5", "::ffff:192.168.1.1"] {
            assert!(is_private_v6(p.parse().unwrap()), "{p}");
        }
        for p in ["2001:4860:4860::8888", "::ffff:8.8.8.8"] {
            assert!(!is_private_v6(p.parse().unwrap()), "{p}");
        }
    }
}
