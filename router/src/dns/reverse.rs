//! Reverse-lookup names: the address an `in-addr.arpa` (RFC 1035 §3.5) or
//! `ip6.arpa` (RFC 3596 §2.5) name stands for, if it names a whole address.

use super::name::Name;
use alloc::vec::Vec;
use core::net::{Ipv4Addr, Ipv6Addr};

/// The address of `d.c.b.a.in-addr.arpa` (decimal octets, no leading zeros).
pub fn reverse_v4(name: &Name) -> Option<Ipv4Addr> {
    let labels: Vec<&[u8]> = name.labels().collect();
    let [d, c, b, a, in_addr, arpa] = labels.as_slice() else {
        return None;
    };
    if !in_addr.eq_ignore_ascii_case(b"in-addr") || !arpa.eq_ignore_ascii_case(b"arpa") {
        return None;
    }
    let oct = |l: &[u8]| -> Option<u8> {
        let s = core::str::from_utf8(l).ok()?;
        if s.len() > 1 && s.starts_with('0') {
            return None;
        }
        s.parse().ok()
    };
    Some(Ipv4Addr::new(oct(a)?, oct(b)?, oct(c)?, oct(d)?))
}

/// The address of a 32-nibble `x.x. ... .x.ip6.arpa` name (lowest nibble first,
/// hexadecimal, either case); `None` for anything else (a shorter name is a
/// zone, not an address).
pub fn reverse_v6(name: &Name) -> Option<Ipv6Addr> {
    let labels: Vec<&[u8]> = name.labels().collect();
    let [nibbles @ .., ip6, arpa] = labels.as_slice() else {
        return None;
    };
    if nibbles.len() != 32
        || !ip6.eq_ignore_ascii_case(b"ip6")
        || !arpa.eq_ignore_ascii_case(b"arpa")
    {
        return None;
    }
    let mut bits: u128 = 0;
    for l in nibbles.iter().rev() {
        let [c] = l else {
            return None;
        };
        let v = char::from(*c).to_digit(16)?;
        bits = (bits << 4) | u128::from(v);
    }
    Some(Ipv6Addr::from(bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Name {
        Name::from_dotted(s).unwrap()
    }

    #[test]
    fn reverse_names_give_their_addresses_and_nothing_else() {
        assert_eq!(
            reverse_v4(&name("1.1.168.192.in-addr.arpa")),
            Some(Ipv4Addr::new(192, 168, 1, 1))
        );
        assert_eq!(reverse_v4(&name("01.1.168.192.in-addr.arpa")), None);
        assert_eq!(reverse_v4(&name("1.168.192.in-addr.arpa")), None);
        let ula: Ipv6Addr = "fd12:3456:789a::1".parse().unwrap();
        let full = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.A.9.8.7.6.5.4.3.2.1.d.f.IP6.arpa";
        assert_eq!(reverse_v6(&name(full)), Some(ula));
        // a zone (fewer nibbles), a two-character label, a non-hex nibble
        assert_eq!(reverse_v6(&name("d.f.ip6.arpa")), None);
        let two = full.replacen("1.0.", "10.", 1);
        assert_eq!(reverse_v6(&name(&two)), None);
        let bad = full.replacen("A", "g", 1);
        assert_eq!(reverse_v6(&name(&bad)), None);
        assert_eq!(reverse_v6(&name("example.com")), None);
    }
}
