//! The IPv6 ULA prefix of `/etc/config/network` (`globals.ula_prefix`) and the LAN
//! subnets taken from it (`ip6assign`, `ip6hint`), as OpenWrt does:
//!
//! - OpenWrt's `config_generate` writes `ula_prefix 'auto'`; at first boot
//!   `/etc/init.d/network` replaces it with a random RFC 4193 prefix
//!   `fdXX:XXXX:XXXX::/48` (a 40-bit Global ID) and commits it, so it stays the same
//!   from then on: [`assign_auto`] does that edit on a [`Package`].
//! - netifd gives each interface with `ip6assign 'N'` a /N of the prefix, the one
//!   `ip6hint` (hexadecimal subnet id) names, first otherwise; odhcpd announces it
//!   as /64s and the router's address is `::1` in it: [`lan_subnet`].

use alloc::format;
use core::fmt;
use core::net::Ipv6Addr;
use core::str::FromStr;

use crate::model::{Package, Value};
use crate::validate::parse_uint;

/// An IPv6 prefix (`fd12:3456:789a::/48`), host bits cleared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv6Prefix {
    /// The network address.
    pub addr: Ipv6Addr,
    /// Prefix length, 0..=128.
    pub prefix_len: u8,
}

impl Ipv6Prefix {
    /// `addr/prefix_len` with the host bits cleared, `None` past 128.
    pub fn new(addr: Ipv6Addr, prefix_len: u8) -> Option<Self> {
        (prefix_len <= 128).then(|| Ipv6Prefix {
            addr: Ipv6Addr::from(u128::from(addr) & mask(prefix_len)),
            prefix_len,
        })
    }
}

impl fmt::Display for Ipv6Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix_len)
    }
}

fn mask(len: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0)
}

/// `ula_prefix` as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UlaPrefix {
    /// `auto`: to be generated at boot ([`assign_auto`]).
    Auto,
    /// A fixed prefix, used as it is.
    Fixed(Ipv6Prefix),
}

/// The longest ULA prefix accepted: a LAN needs a /64 inside it.
pub const MAX_ULA_LEN: u8 = 64;

/// `auto` or an IPv6 prefix of length ≤ 64 (`fd00:ab:cd::/48`); `None` otherwise.
pub fn parse_ula(v: &str) -> Option<UlaPrefix> {
    if v == "auto" {
        return Some(UlaPrefix::Auto);
    }
    let (a, l) = v.split_once('/')?;
    let len: u8 = parse_uint(l)?;
    if len > MAX_ULA_LEN {
        return None;
    }
    Ipv6Prefix::new(Ipv6Addr::from_str(a).ok()?, len).map(UlaPrefix::Fixed)
}

/// The RFC 4193 prefix of Global ID `global_id` (40 random bits): `fdXX:XXXX:XXXX::/48`.
pub fn generate(global_id: [u8; 5]) -> Ipv6Prefix {
    let mut o = [0u8; 16];
    o[0] = 0xfd;
    o[1..6].copy_from_slice(&global_id);
    Ipv6Prefix {
        addr: Ipv6Addr::from(o),
        prefix_len: 48,
    }
}

/// If `network`'s `globals` section says `ula_prefix 'auto'`, replaces it with the
/// prefix of `global_id` (see [`generate`]) and returns that prefix: the caller
/// writes the package back (`uci commit`). `None` when there is nothing to do.
pub fn assign_auto(network: &mut Package, global_id: [u8; 5]) -> Option<Ipv6Prefix> {
    let idx = network.sections.iter().position(|s| {
        s.section_type == "globals"
            && matches!(s.get("ula_prefix"), Some(Value::Single(v)) if v == "auto")
    })?;
    let prefix = generate(global_id);
    network
        .set_option(idx, "ula_prefix", &format!("{prefix}"))
        .ok()?;
    Some(prefix)
}

/// Why an interface gets no subnet of the ULA prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AssignError {
    /// `ip6assign` shorter than the prefix, or longer than 64.
    Length {
        /// The prefix.
        prefix: Ipv6Prefix,
        /// `ip6assign`.
        assign: u8,
    },
    /// `ip6hint` does not fit in the bits between the prefix and `ip6assign`.
    Hint {
        /// `ip6hint`.
        hint: u64,
        /// How many bits there are for it.
        bits: u8,
    },
}

impl fmt::Display for AssignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssignError::Length { prefix, assign } => write!(
                f,
                "ip6assign '{assign}' does not fit ULA prefix {prefix} (needs {} to 64)",
                prefix.prefix_len
            ),
            AssignError::Hint { hint, bits } => {
                write!(f, "ip6hint '{hint:x}' does not fit in {bits} bits")
            }
        }
    }
}

/// The /64 an interface with `ip6assign 'assign'` (and `ip6hint`) announces from
/// `prefix`, and the router's address `::1` in it.
pub fn lan_subnet(
    prefix: Ipv6Prefix,
    assign: u8,
    hint: Option<u64>,
) -> Result<(Ipv6Prefix, Ipv6Addr), AssignError> {
    if assign < prefix.prefix_len || assign > 64 {
        return Err(AssignError::Length { prefix, assign });
    }
    let bits = assign - prefix.prefix_len;
    let hint_v = hint.unwrap_or(0);
    if bits < 64 && hint_v >> bits != 0 {
        return Err(AssignError::Hint { hint: hint_v, bits });
    }
    let subnet = u128::from(prefix.addr) | (u128::from(hint_v) << (128 - u32::from(assign)));
    let net = Ipv6Prefix {
        addr: Ipv6Addr::from(subnet),
        prefix_len: 64,
    };
    Ok((net, Ipv6Addr::from(subnet | 1)))
}

/// `ip6hint`: hexadecimal, at most 16 digits.
pub fn parse_hint(v: &str) -> Option<u64> {
    if v.is_empty() || v.len() > 16 {
        return None;
    }
    u64::from_str_radix(v, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;
    use crate::write::write;

    fn p(s: &str) -> Ipv6Prefix {
        match parse_ula(s) {
            Some(UlaPrefix::Fixed(p)) => p,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn auto_fixed_and_malformed_prefixes() {
        assert_eq!(parse_ula("auto"), Some(UlaPrefix::Auto));
        assert_eq!(p("fd00:ab:cd::/48").to_string(), "fd00:ab:cd::/48");
        // host bits cleared
        assert_eq!(p("fd00:ab:cd::1/48").to_string(), "fd00:ab:cd::/48");
        for bad in [
            "",
            "fd00::",
            "fd00::/",
            "fd00::/65",
            "fd00::/-1",
            "zz::/48",
            "10.0.0.0/8",
            "Auto",
        ] {
            assert_eq!(parse_ula(bad), None, "{bad}");
        }
    }

    #[test]
    fn auto_becomes_a_random_rfc4193_prefix_written_back_once() {
        let text =
            "config globals 'globals'\n\toption ula_prefix 'auto'\n\toption packet_steering '1'\n";
        let mut pkg = parse("/etc/config/network", "network", text).unwrap();
        let got = assign_auto(&mut pkg, [0x12, 0x34, 0x56, 0x78, 0x9a]).unwrap();
        assert_eq!(got.to_string(), "fd12:3456:789a::/48");
        let out = write(&pkg);
        assert!(
            out.contains("option ula_prefix 'fd12:3456:789a::/48'"),
            "{out}"
        );
        assert!(out.contains("option packet_steering '1'"));
        // kept from then on
        let mut again = parse("/etc/config/network", "network", &out).unwrap();
        assert_eq!(assign_auto(&mut again, [0xff; 5]), None);
        // a fixed prefix or none: nothing to do
        let mut fixed = parse(
            "/etc/config/network",
            "network",
            "config globals 'globals'\n\toption ula_prefix 'fd00:ab:cd::/48'\n",
        )
        .unwrap();
        assert_eq!(assign_auto(&mut fixed, [1; 5]), None);
        let mut none = parse("/etc/config/network", "network", "config interface 'lan'\n").unwrap();
        assert_eq!(assign_auto(&mut none, [1; 5]), None);
        assert_eq!(generate([0, 0, 0, 0, 1]).to_string(), "fd00:0:1::/48");
    }

    #[test]
    fn a_lan_takes_its_subnet_by_hint_and_the_router_is_1() {
        let ula = p("fd12:3456:789a::/48");
        let (net, addr) = lan_subnet(ula, 60, None).unwrap();
        assert_eq!(net.to_string(), "fd12:3456:789a::/64");
        assert_eq!(addr.to_string(), "fd12:3456:789a::1");
        let (net, addr) = lan_subnet(ula, 60, Some(0x2)).unwrap();
        assert_eq!(net.to_string(), "fd12:3456:789a:20::/64");
        assert_eq!(addr.to_string(), "fd12:3456:789a:20::1");
        let (net, _) = lan_subnet(ula, 64, Some(0xbeef)).unwrap();
        assert_eq!(net.to_string(), "fd12:3456:789a:beef::/64");
        assert_eq!(
            lan_subnet(ula, 60, Some(0x1000)),
            Err(AssignError::Hint {
                hint: 0x1000,
                bits: 12
            })
        );
        assert!(matches!(
            lan_subnet(ula, 40, None),
            Err(AssignError::Length { .. })
        ));
        assert!(matches!(
            lan_subnet(ula, 65, None),
            Err(AssignError::Length { .. })
        ));
        let e = lan_subnet(ula, 40, None).unwrap_err().to_string();
        assert_eq!(
            e,
            "ip6assign '40' does not fit ULA prefix fd12:3456:789a::/48 (needs 48 to 64)"
        );
        assert_eq!(parse_hint("ff"), Some(0xff));
        assert_eq!(parse_hint("xyz"), None);
        assert_eq!(parse_hint(""), None);
        // a /64 ULA with ip6assign 64: the prefix itself
        let (net, _) = lan_subnet(p("fd00:1:2:3::/64"), 64, None).unwrap();
        assert_eq!(net.to_string(), "fd00:1:2:3::/64");
    }
}
