//! The DHCP server's plain configuration: one pool per LAN interface.
//!
//! Mirrors the fields OpenWrt's `/etc/config/dhcp` gives dnsmasq
//! (`package/network/services/dnsmasq/files/dnsmasq.init` in openwrt/openwrt):
//! `config dhcp 'lan'` with `start`, `limit`, `leasetime`, `dhcp_option`, `ignore`,
//! and `config host` with `name`, `mac`, `ip`. The lead maps the typed UCI sections
//! onto these structs; nothing here reads UCI text.

use alloc::string::String;
use alloc::vec::Vec;
use core::net::Ipv4Addr;

/// Default lease time: OpenWrt's `leasetime '12h'`.
pub const DEFAULT_LEASE_SECS: u32 = 12 * 3600;
/// Most leases one pool keeps by default: dnsmasq's default
/// `dhcp-lease-max`.
pub const DEFAULT_MAX_LEASES: usize = 1000;
/// The heap one lease takes at most: the record with a client id of up to 255 bytes
/// and a host name of up to 63 (for sizing [`PoolConfig::max_leases`] to a heap).
pub const LEASE_HEAP_BYTES: usize = 512;

/// A fixed address for one client (`config host`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticHost {
    /// Host name given to the client (and to DNS once it holds the lease).
    pub name: Option<String>,
    /// The client's Ethernet address.
    pub mac: [u8; 6],
    /// Its address.
    pub ip: Ipv4Addr,
}

/// One `dhcp_option` entry (`"6,192.168.1.2"`): a code and its encoded value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtraOption {
    /// Option code.
    pub code: u8,
    /// The value bytes as sent.
    pub value: Vec<u8>,
}

/// Why a `dhcp_option` string was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtraOptionError {
    /// Not `code,value[,value…]` with a numeric code 1..=254.
    BadCode,
    /// A value that is neither an IPv4 address, a number nor a plain string.
    BadValue,
}

impl ExtraOption {
    /// Parses dnsmasq's `dhcp-option` syntax as OpenWrt passes it: `code,v1,v2…`
    /// (an optional `option:` name form is not supported). Values that all parse
    /// as IPv4 addresses become a list of addresses; a single number becomes a
    /// 1/2/4-byte integer by size for the integer-valued options (dnsmasq looks
    /// the size up in its option table; we use the smallest width that holds it);
    /// anything else is sent as text.
    pub fn parse(s: &str) -> Result<ExtraOption, ExtraOptionError> {
        let mut parts = s.split(',');
        let code = parts
            .next()
            .map(str::trim)
            .and_then(|c| c.parse::<u8>().ok())
            .filter(|c| (1..=254).contains(c))
            .ok_or(ExtraOptionError::BadCode)?;
        let values: Vec<&str> = parts.map(str::trim).collect();
        if values.is_empty() || values.iter().all(|v| v.is_empty()) {
            // dnsmasq sends an empty option for `code,` alone.
            return Ok(ExtraOption {
                code,
                value: Vec::new(),
            });
        }
        if values.iter().all(|v| v.parse::<Ipv4Addr>().is_ok()) {
            let mut value = Vec::new();
            for v in &values {
                value.extend_from_slice(
                    &v.parse::<Ipv4Addr>()
                        .map_err(|_| ExtraOptionError::BadValue)?
                        .octets(),
                );
            }
            return Ok(ExtraOption { code, value });
        }
        if let [one] = values.as_slice() {
            if let Ok(n) = one.parse::<u32>() {
                let value = if let Ok(b) = u8::try_from(n) {
                    alloc::vec![b]
                } else if let Ok(w) = u16::try_from(n) {
                    w.to_be_bytes().to_vec()
                } else {
                    n.to_be_bytes().to_vec()
                };
                return Ok(ExtraOption { code, value });
            }
        }
        let text = values.join(",");
        if text.len() > 255 * 4 {
            return Err(ExtraOptionError::BadValue);
        }
        Ok(ExtraOption {
            code,
            value: text.into_bytes(),
        })
    }
}

/// One DHCP pool: what `config dhcp 'lan'` plus its `config interface` say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// Interface name (`lan`), for logs and the lead's wiring.
    pub interface: String,
    /// The router's address on that interface (server id, default router and DNS).
    pub server: Ipv4Addr,
    /// The interface's netmask.
    pub netmask: Ipv4Addr,
    /// First address, as an offset from the network address (OpenWrt `start`).
    pub start: u32,
    /// Number of addresses (OpenWrt `limit`).
    pub limit: u32,
    /// Lease time in seconds.
    pub lease_secs: u32,
    /// Routers sent in option 3 (default: `server`).
    pub routers: Option<Vec<Ipv4Addr>>,
    /// DNS servers sent in option 6 (default: `server`).
    pub dns: Option<Vec<Ipv4Addr>>,
    /// Domain sent in option 15 and appended to host names in DNS.
    pub domain: String,
    /// Fixed addresses.
    pub hosts: Vec<StaticHost>,
    /// Extra options; one with the code of a built-in option replaces it.
    pub extra: Vec<ExtraOption>,
    /// `ignore '1'`: no DHCP service on this interface.
    pub ignore: bool,
    /// dnsmasq's `dhcp-authoritative` (OpenWrt's default `authoritative '1'`):
    /// REQUESTs from clients we have no record of are answered (ACK if the address
    /// is free, NAK otherwise) instead of being ignored.
    pub authoritative: bool,
    /// Most leases kept (dnsmasq's `dhcp-lease-max`): the table
    /// is the smaller of this and the pool plus the static hosts. When it is full
    /// of bound leases, new clients get no offer (counted as `pool_exhausted`).
    pub max_leases: usize,
}

impl PoolConfig {
    /// OpenWrt's defaults for an interface: start 100, limit 150, 12 h, `lan`.
    pub fn new(interface: &str, server: Ipv4Addr, netmask: Ipv4Addr) -> PoolConfig {
        PoolConfig {
            interface: String::from(interface),
            server,
            netmask,
            start: 100,
            limit: 150,
            lease_secs: DEFAULT_LEASE_SECS,
            routers: None,
            dns: None,
            domain: String::from("lan"),
            hosts: Vec::new(),
            extra: Vec::new(),
            ignore: false,
            authoritative: true,
            max_leases: DEFAULT_MAX_LEASES,
        }
    }

    /// The network address.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.server) & u32::from(self.netmask))
    }

    /// The subnet's broadcast address.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.server) | !u32::from(self.netmask))
    }

    /// Whether `ip` is in the interface's subnet (network and broadcast excluded).
    pub fn in_subnet(&self, ip: Ipv4Addr) -> bool {
        let m = u32::from(self.netmask);
        u32::from(ip) & m == u32::from(self.server) & m
            && ip != self.network()
            && ip != self.broadcast()
    }

    /// The dynamic range, first and last inclusive, clipped to the subnet as
    /// OpenWrt's init script does; `None` if empty.
    pub fn range(&self) -> Option<(u32, u32)> {
        let net = u32::from(self.network());
        let bcast = u32::from(self.broadcast());
        let first = net.checked_add(self.start.max(1))?;
        let last = first
            .checked_add(self.limit.checked_sub(1)?)?
            .min(bcast.checked_sub(1)?);
        (first <= last && first < bcast).then_some((first, last))
    }

    /// Number of addresses in the dynamic range.
    pub fn pool_size(&self) -> u32 {
        self.range().map_or(0, |(a, b)| b - a + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openwrt_start_and_limit() {
        let c = PoolConfig::new(
            "lan",
            Ipv4Addr::new(192, 168, 1, 1),
            Ipv4Addr::new(255, 255, 255, 0),
        );
        let (a, b) = c.range().unwrap();
        assert_eq!(Ipv4Addr::from(a), Ipv4Addr::new(192, 168, 1, 100));
        assert_eq!(Ipv4Addr::from(b), Ipv4Addr::new(192, 168, 1, 249));
        assert_eq!(c.pool_size(), 150);
        let mut c2 = c.clone();
        c2.limit = 1000;
        assert_eq!(
            Ipv4Addr::from(c2.range().unwrap().1),
            Ipv4Addr::new(192, 168, 1, 254)
        );
        c2.limit = 0;
        assert_eq!(c2.range(), None);
    }

    #[test]
    fn dhcp_option_strings() {
        assert_eq!(
            ExtraOption::parse("6,192.168.1.2,8.8.8.8").unwrap(),
            ExtraOption {
                code: 6,
                value: alloc::vec![192, 168, 1, 2, 8, 8, 8, 8]
            }
        );
        assert_eq!(
            ExtraOption::parse("26,1400").unwrap(),
            ExtraOption {
                code: 26,
                value: alloc::vec![0x05, 0x78]
            }
        );
        assert_eq!(
            ExtraOption::parse("15,home").unwrap().value,
            b"home".to_vec()
        );
        assert_eq!(ExtraOption::parse("x,1"), Err(ExtraOptionError::BadCode));
        assert_eq!(ExtraOption::parse("255,1"), Err(ExtraOptionError::BadCode));
    }
}
