//! IPv4 networks: an address with a prefix length, as interfaces hold them and routes
//! match them.

use core::fmt;
use core::net::Ipv4Addr;

/// An IPv4 address with a prefix length (`192.168.1.1/24`), checked: prefix ≤ 32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Net {
    addr: Ipv4Addr,
    prefix_len: u8,
}

impl Ipv4Net {
    /// `addr/prefix_len`, or `None` if `prefix_len > 32`.
    pub const fn new(addr: Ipv4Addr, prefix_len: u8) -> Option<Self> {
        if prefix_len > 32 {
            None
        } else {
            Some(Ipv4Net { addr, prefix_len })
        }
    }
    /// The address.
    pub const fn addr(&self) -> Ipv4Addr {
        self.addr
    }
    /// The prefix length.
    pub const fn prefix_len(&self) -> u8 {
        self.prefix_len
    }
    /// The netmask as a number.
    pub const fn mask(&self) -> u32 {
        if self.prefix_len == 0 {
            0
        } else {
            u32::MAX << (32 - self.prefix_len)
        }
    }
    /// The network (host bits cleared).
    pub const fn network(&self) -> Ipv4Net {
        Ipv4Net {
            addr: Ipv4Addr::from_bits(self.addr.to_bits() & self.mask()),
            prefix_len: self.prefix_len,
        }
    }
    /// Whether `ip` is in this network.
    pub const fn contains(&self, ip: Ipv4Addr) -> bool {
        ip.to_bits() & self.mask() == self.addr.to_bits() & self.mask()
    }
    /// The subnet broadcast address (none for /31 and /32, RFC 3021).
    pub const fn broadcast(&self) -> Option<Ipv4Addr> {
        if self.prefix_len >= 31 {
            None
        } else {
            Some(Ipv4Addr::from_bits(self.addr.to_bits() | !self.mask()))
        }
    }
}

impl fmt::Display for Ipv4Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_arithmetic() {
        let n = Ipv4Net::new(Ipv4Addr::new(192, 168, 1, 77), 24).unwrap();
        assert_eq!(n.network().addr(), Ipv4Addr::new(192, 168, 1, 0));
        assert_eq!(n.broadcast(), Some(Ipv4Addr::new(192, 168, 1, 255)));
        assert!(n.contains(Ipv4Addr::new(192, 168, 1, 3)));
        assert!(!n.contains(Ipv4Addr::new(192, 168, 2, 3)));
        assert_eq!(
            Ipv4Net::new(Ipv4Addr::new(10, 0, 0, 0), 31)
                .unwrap()
                .broadcast(),
            None
        );
        assert!(Ipv4Net::new(Ipv4Addr::UNSPECIFIED, 0)
            .unwrap()
            .contains(Ipv4Addr::new(1, 2, 3, 4)));
        assert!(Ipv4Net::new(Ipv4Addr::UNSPECIFIED, 33).is_none());
    }
}
