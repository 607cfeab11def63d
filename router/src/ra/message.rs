//! The Router Advertisement message (RFC 4861 §4.2) with odhcpd's options: source
//! link-layer address, MTU, prefix information (§4.6.2), RDNSS and DNSSL (RFC 8106
//! §5.1, §5.2) and the advertisement interval (RFC 6275 §7.3), and the Ethernet
//! frame that carries it from the router's link-local address with hop limit 255.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::net::Ipv6Addr;

use crate::ipv6;
use crate::route6::Ipv6Net;

/// ICMPv6 type of a Router Advertisement (the neighbour discovery table's).
pub use crate::ndp::ROUTER_ADVERT as TYPE_ROUTER_ADVERT;
/// ICMPv6's IPv6 next-header value.
pub const NEXT_HEADER_ICMPV6: u8 = 58;
/// The M flag (addresses from DHCPv6).
pub const FLAG_MANAGED: u8 = 0x80;
/// The O flag (other configuration from DHCPv6).
pub const FLAG_OTHER: u8 = 0x40;
/// Prefix information: on-link (L).
pub const PREFIX_ON_LINK: u8 = 0x80;
/// Prefix information: autonomous address configuration (A).
pub const PREFIX_AUTONOMOUS: u8 = 0x40;
/// Prefixes announced at most (odhcpd announces each address of the interface).
pub const MAX_PREFIXES: usize = 8;
/// DNS servers announced at most.
pub const MAX_RDNSS: usize = 8;
/// Search domains announced at most.
pub const MAX_DNSSL: usize = 8;
/// The IPv6 minimum MTU: the MTU option is never below it (odhcpd's `RA_MTU_MIN`).
pub const MIN_MTU: u32 = 1280;

const OPT_SOURCE_LLADDR: u8 = 1;
const OPT_PREFIX_INFO: u8 = 3;
const OPT_MTU: u8 = 5;
const OPT_ADV_INTERVAL: u8 = 7;
const OPT_RDNSS: u8 = 25;
const OPT_DNSSL: u8 = 31;

/// One Prefix Information option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaPrefix {
    /// The prefix (host bits are cleared when written); a /64 for SLAAC.
    pub prefix: Ipv6Net,
    /// L: hosts treat the prefix as on-link.
    pub on_link: bool,
    /// A: hosts form addresses in it (SLAAC; only meaningful for a /64).
    pub autonomous: bool,
    /// Valid lifetime (s; `u32::MAX` is infinite).
    pub valid_secs: u32,
    /// Preferred lifetime (s), at most the valid one.
    pub preferred_secs: u32,
}

/// What the router advertises on one interface (odhcpd's `ra_*` options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaConfig {
    /// M flag (`ra_flags managed-config`).
    pub managed: bool,
    /// O flag (`ra_flags other-config`).
    pub other: bool,
    /// Cur Hop Limit for hosts (`ra_hoplimit`; 0: unspecified).
    pub cur_hop_limit: u8,
    /// Router Lifetime (s): 0 says "not a default router" (no IPv6 upstream).
    pub router_lifetime_secs: u16,
    /// Reachable Time (ms; 0: unspecified).
    pub reachable_ms: u32,
    /// Retrans Timer (ms; 0: unspecified).
    pub retrans_ms: u32,
    /// The link MTU announced (`ra_mtu`, else the interface's), if any.
    pub mtu: Option<u32>,
    /// Prefix Information options.
    pub prefixes: Vec<RaPrefix>,
    /// Recursive DNS servers (the router's own address).
    pub rdnss: Vec<Ipv6Addr>,
    /// DNS search list (`lan`).
    pub dnssl: Vec<String>,
    /// Lifetime of the RDNSS and DNSSL options (s).
    pub dns_lifetime_secs: u32,
    /// MinRtrAdvInterval (s, ≥ 3).
    pub min_interval_secs: u32,
    /// MaxRtrAdvInterval (s, 4..=1800).
    pub max_interval_secs: u32,
}

impl Default for RaConfig {
    /// odhcpd's defaults (`config.c`): O flag, interval 200-600 s, router lifetime 0
    /// until there is an IPv6 upstream, RDNSS/DNSSL lifetime 1800 s (3 × the
    /// maximum interval).
    fn default() -> Self {
        RaConfig {
            managed: false,
            other: true,
            cur_hop_limit: 64,
            router_lifetime_secs: 0,
            reachable_ms: 0,
            retrans_ms: 0,
            mtu: None,
            prefixes: Vec::new(),
            rdnss: Vec::new(),
            dnssl: Vec::new(),
            dns_lifetime_secs: 1800,
            min_interval_secs: 200,
            max_interval_secs: 600,
        }
    }
}

/// A configuration that cannot be advertised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RaError {
    /// More than [`MAX_PREFIXES`], [`MAX_RDNSS`] or [`MAX_DNSSL`] entries.
    TooMany(&'static str),
    /// A search domain that is not a DNS name (empty label, a label over 63
    /// bytes, over 253 bytes in all).
    BadDomain(String),
    /// Intervals outside RFC 4861 §6.2.1's bounds (max 4..=1800, 3 ≤ min ≤ 0.75 × max).
    BadInterval {
        /// MinRtrAdvInterval.
        min: u32,
        /// MaxRtrAdvInterval.
        max: u32,
    },
    /// A prefix whose preferred lifetime is over its valid one.
    BadLifetimes(Ipv6Net),
}

impl fmt::Display for RaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RaError::TooMany(what) => write!(f, "too many {what}"),
            RaError::BadDomain(d) => write!(f, "'{d}' is not a domain name"),
            RaError::BadInterval { min, max } => write!(
                f,
                "advertisement interval {min}-{max} s out of bounds (max 4-1800, min 3 to 3/4 of max)"
            ),
            RaError::BadLifetimes(p) => write!(
                f,
                "prefix {}/{}: preferred lifetime over the valid one",
                p.addr(),
                p.prefix_len()
            ),
        }
    }
}

/// A domain name in DNS wire format (RFC 1035 §3.1), without compression.
pub fn encode_name(name: &str, out: &mut Vec<u8>) -> Result<(), RaError> {
    let bad = || RaError::BadDomain(String::from(name));
    let trimmed = name.strip_suffix('.').unwrap_or(name);
    if trimmed.is_empty() || trimmed.len() > 253 {
        return Err(bad());
    }
    for label in trimmed.split('.') {
        let len = u8::try_from(label.len()).map_err(|_| bad())?;
        if len == 0 || len > 63 || !label.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad());
        }
        out.push(len);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    Ok(())
}

impl RaConfig {
    /// Checks the configuration against RFC 4861's and this module's bounds.
    pub fn check(&self) -> Result<(), RaError> {
        if self.prefixes.len() > MAX_PREFIXES {
            return Err(RaError::TooMany("prefixes"));
        }
        if self.rdnss.len() > MAX_RDNSS {
            return Err(RaError::TooMany("DNS servers"));
        }
        if self.dnssl.len() > MAX_DNSSL {
            return Err(RaError::TooMany("search domains"));
        }
        let (min, max) = (self.min_interval_secs, self.max_interval_secs);
        if !(4..=1800).contains(&max) || min < 3 || u64::from(min) * 4 > u64::from(max) * 3 {
            return Err(RaError::BadInterval { min, max });
        }
        for p in &self.prefixes {
            if p.preferred_secs > p.valid_secs {
                return Err(RaError::BadLifetimes(p.prefix));
            }
        }
        let mut scratch = Vec::new();
        for d in &self.dnssl {
            encode_name(d, &mut scratch)?;
        }
        Ok(())
    }

    /// The ICMPv6 message (checksum left 0: it depends on the destination) sent
    /// from an interface with MAC `mac`.
    pub fn body(&self, mac: [u8; 6]) -> Result<Vec<u8>, RaError> {
        self.check()?;
        let mut b = Vec::with_capacity(128);
        let flags =
            if self.managed { FLAG_MANAGED } else { 0 } | if self.other { FLAG_OTHER } else { 0 };
        b.extend_from_slice(&[TYPE_ROUTER_ADVERT, 0, 0, 0, self.cur_hop_limit, flags]);
        b.extend_from_slice(&self.router_lifetime_secs.to_be_bytes());
        b.extend_from_slice(&self.reachable_ms.to_be_bytes());
        b.extend_from_slice(&self.retrans_ms.to_be_bytes());
        b.extend_from_slice(&[OPT_SOURCE_LLADDR, 1]);
        b.extend_from_slice(&mac);
        if let Some(mtu) = self.mtu {
            b.extend_from_slice(&[OPT_MTU, 1, 0, 0]);
            b.extend_from_slice(&mtu.max(MIN_MTU).to_be_bytes());
        }
        for p in &self.prefixes {
            let flags = if p.on_link { PREFIX_ON_LINK } else { 0 }
                | if p.autonomous { PREFIX_AUTONOMOUS } else { 0 };
            b.extend_from_slice(&[OPT_PREFIX_INFO, 4, p.prefix.prefix_len(), flags]);
            b.extend_from_slice(&p.valid_secs.to_be_bytes());
            b.extend_from_slice(&p.preferred_secs.to_be_bytes());
            b.extend_from_slice(&[0; 4]);
            b.extend_from_slice(&p.prefix.network().addr().octets());
        }
        if !self.rdnss.is_empty() {
            // 1 + 2n units of 8 bytes; n ≤ MAX_RDNSS keeps it in a byte
            let units = u8::try_from(1 + 2 * self.rdnss.len()).unwrap_or(u8::MAX);
            b.extend_from_slice(&[OPT_RDNSS, units, 0, 0]);
            b.extend_from_slice(&self.dns_lifetime_secs.to_be_bytes());
            for a in &self.rdnss {
                b.extend_from_slice(&a.octets());
            }
        }
        if !self.dnssl.is_empty() {
            let mut names = Vec::new();
            for d in &self.dnssl {
                encode_name(d, &mut names)?;
            }
            while (8 + names.len()) % 8 != 0 {
                names.push(0);
            }
            // at most 8 names of 255 bytes: 2048 bytes, 256 units; refused beyond
            let units = u8::try_from((8 + names.len()) / 8)
                .map_err(|_| RaError::TooMany("search domain bytes"))?;
            b.extend_from_slice(&[OPT_DNSSL, units, 0, 0]);
            b.extend_from_slice(&self.dns_lifetime_secs.to_be_bytes());
            b.extend_from_slice(&names);
        }
        b.extend_from_slice(&[OPT_ADV_INTERVAL, 1, 0, 0]);
        let ival_ms = self.max_interval_secs.saturating_mul(1000);
        b.extend_from_slice(&ival_ms.to_be_bytes());
        Ok(b)
    }
}

/// The Ethernet frame carrying `body` (from [`RaConfig::body`]) from `mac` and its
/// link-local address to `dst_ip` at `dst_mac`, hop limit 255, checksummed.
pub fn frame(body: &[u8], mac: [u8; 6], dst_mac: [u8; 6], dst_ip: Ipv6Addr) -> Vec<u8> {
    let src = ipv6::link_local_of(mac);
    let len = u16::try_from(body.len()).unwrap_or(u16::MAX);
    let mut f = Vec::with_capacity(14 + 40 + body.len());
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&len.to_be_bytes());
    f.extend_from_slice(&[NEXT_HEADER_ICMPV6, 255]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst_ip.octets());
    let icmp_at = f.len();
    f.extend_from_slice(body);
    let s = ipv6::pseudo_header_sum(src, dst_ip, NEXT_HEADER_ICMPV6, body.len());
    let csum = !crate::checksum::fold(crate::checksum::sum(s, body));
    if let Some(c) = f.get_mut(icmp_at + 2..icmp_at + 4) {
        c.copy_from_slice(&csum.to_be_bytes());
    }
    f
}
