//! IPv4 and IPv6 networks: an address with a prefix length, as interfaces hold them
//! and routes match them.

use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};

/// A network of either family, as the routing table ([`crate::route::Table`]) matches
/// it.
pub trait IpNet: Copy + PartialEq {
    /// The family's address.
    type Addr: Copy;
    /// The prefix length.
    fn prefix_len(&self) -> u8;
    /// The network (host bits cleared).
    fn network(&self) -> Self;
    /// Whether `a` is in the network.
    fn contains(&self, a: Self::Addr) -> bool;
}

/// Defines `$name`, an `$addr` with a prefix length of at most `$max`, with the
/// accessors, `Display` and [`IpNet`] both families share; each family adds its own
/// `network` and `contains`.
macro_rules! ip_net {
    ($(#[$doc:meta])* $name:ident, $addr:ty, $max:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $name {
            addr: $addr,
            prefix_len: u8,
        }

        impl $name {
            #[doc = concat!("`addr/prefix_len`, or `None` if `prefix_len > ", stringify!($max), "`.")]
            pub const fn new(addr: $addr, prefix_len: u8) -> Option<Self> {
                if prefix_len > $max {
                    None
                } else {
                    Some($name { addr, prefix_len })
                }
            }
            /// The address.
            pub const fn addr(&self) -> $addr {
                self.addr
            }
            /// The prefix length.
            pub const fn prefix_len(&self) -> u8 {
                self.prefix_len
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}/{}", self.addr, self.prefix_len)
            }
        }

        impl IpNet for $name {
            type Addr = $addr;
            #[inline]
            fn prefix_len(&self) -> u8 {
                self.prefix_len
            }
            #[inline]
            fn network(&self) -> Self {
                $name::network(self)
            }
            #[inline]
            fn contains(&self, a: $addr) -> bool {
                $name::contains(self, a)
            }
        }
    };
}

ip_net!(
    /// An IPv4 address with a prefix length (`192.168.1.1/24`), checked: prefix ≤ 32.
    Ipv4Net,
    Ipv4Addr,
    32
);

ip_net!(
    /// An IPv6 address with a prefix length (`2001:db8::1/64`), checked: prefix ≤ 128.
    Ipv6Net,
    Ipv6Addr,
    128
);

impl Ipv4Net {
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

impl Ipv6Net {
    fn mask(&self) -> u128 {
        u128::MAX
            .checked_shl(128 - u32::from(self.prefix_len))
            .unwrap_or(0)
    }
    /// The network (host bits cleared).
    pub fn network(&self) -> Ipv6Net {
        Ipv6Net {
            addr: Ipv6Addr::from(u128::from(self.addr) & self.mask()),
            prefix_len: self.prefix_len,
        }
    }
    /// Whether `a` is in the network.
    pub fn contains(&self, a: Ipv6Addr) -> bool {
        (u128::from(a) ^ u128::from(self.addr)) & self.mask() == 0
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
