//! Router Advertisements received (RFC 4861 §4.2), checked as §6.1.2 asks before a
//! host takes one: from a link-local source, hop limit 255, code 0, a correct
//! ICMPv6 checksum, at least 16 bytes, every option with a non-zero length inside
//! the message. What is kept of the options is bounded ([`MAX_PREFIXES`],
//! [`MAX_RDNSS`]); the rest is skipped.

use alloc::vec::Vec;
use core::fmt;
use core::net::Ipv6Addr;

use crate::ipv6;
use crate::link::ETH_LEN;
use crate::ra::message::{
    RaPrefix, MAX_PREFIXES, MAX_RDNSS, NEXT_HEADER_ICMPV6, PREFIX_AUTONOMOUS, PREFIX_ON_LINK,
    TYPE_ROUTER_ADVERT,
};
use crate::route6::Ipv6Net;

const OPT_SOURCE_LLADDR: u8 = 1;
const OPT_PREFIX_INFO: u8 = 3;
const OPT_MTU: u8 = 5;
const OPT_RDNSS: u8 = 25;

/// A Router Advertisement, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Advert {
    /// The router's link-local address (its source).
    pub src: Ipv6Addr,
    /// Its MAC, from the source link-layer address option.
    pub lladdr: Option<[u8; 6]>,
    /// M flag.
    pub managed: bool,
    /// O flag.
    pub other: bool,
    /// Router Lifetime (s; 0: not a default router).
    pub router_lifetime_secs: u16,
    /// The MTU option, if any.
    pub mtu: Option<u32>,
    /// Prefix Information options (at most [`MAX_PREFIXES`]).
    pub prefixes: Vec<RaPrefix>,
    /// RDNSS servers (at most [`MAX_RDNSS`]) and their lifetime (s).
    pub rdnss: Vec<Ipv6Addr>,
    /// The RDNSS lifetime (s).
    pub rdnss_lifetime_secs: u32,
}

/// Why a frame is not a Router Advertisement to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdvertError {
    /// Not IPv6 carrying ICMPv6 type 134 directly.
    NotAdvert,
    /// Shorter than its headers say, or under 16 bytes of ICMPv6.
    Truncated,
    /// Hop limit other than 255.
    HopLimit,
    /// A source that is not link-local.
    Source,
    /// ICMPv6 code other than 0.
    Code,
    /// The ICMPv6 checksum does not verify.
    Checksum,
    /// An option of length 0, running past the message, or too short for its kind.
    BadOption,
}

impl fmt::Display for AdvertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AdvertError::NotAdvert => "not a router advertisement",
            AdvertError::Truncated => "truncated",
            AdvertError::HopLimit => "hop limit not 255",
            AdvertError::Source => "source not link-local",
            AdvertError::Code => "code not 0",
            AdvertError::Checksum => "bad checksum",
            AdvertError::BadOption => "bad option",
        })
    }
}

/// Whether `frame` (Ethernet) looks like a Router Advertisement: IPv6, next header
/// ICMPv6, type 134. A cheap test for the receive path; [`parse`] checks it.
pub fn is_advert(frame: &[u8]) -> bool {
    frame.get(12..14) == Some(&[0x86, 0xdd][..])
        && frame.get(ETH_LEN + 6) == Some(&NEXT_HEADER_ICMPV6)
        && frame.get(ETH_LEN + 40) == Some(&TYPE_ROUTER_ADVERT)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map_or(0, u32::from_be_bytes)
}

/// Checks the Router Advertisement in Ethernet frame `frame`.
pub fn parse(frame: &[u8]) -> Result<Advert, AdvertError> {
    if !is_advert(frame) {
        return Err(AdvertError::NotAdvert);
    }
    let ip = frame.get(ETH_LEN..).ok_or(AdvertError::Truncated)?;
    let h = ipv6::parse(ip).map_err(|_| AdvertError::Truncated)?;
    let icmp = ip.get(40..h.total_len).ok_or(AdvertError::Truncated)?;
    let Some(&[_, code, _, _, _, flags, l0, l1]) = icmp.first_chunk::<8>() else {
        return Err(AdvertError::Truncated);
    };
    if icmp.len() < 16 {
        return Err(AdvertError::Truncated);
    }
    if h.hop_limit != 255 {
        return Err(AdvertError::HopLimit);
    }
    if !ipv6::is_link_local(h.src) {
        return Err(AdvertError::Source);
    }
    if code != 0 {
        return Err(AdvertError::Code);
    }
    if !ipv6::l4_checksum_ok(h.src, h.dst, NEXT_HEADER_ICMPV6, icmp) {
        return Err(AdvertError::Checksum);
    }
    let mut a = Advert {
        src: h.src,
        lladdr: None,
        managed: flags & 0x80 != 0,
        other: flags & 0x40 != 0,
        router_lifetime_secs: u16::from_be_bytes([l0, l1]),
        mtu: None,
        prefixes: Vec::new(),
        rdnss: Vec::new(),
        rdnss_lifetime_secs: 0,
    };
    let mut opts = icmp.get(16..).unwrap_or(&[]);
    while !opts.is_empty() {
        let (&ty, len) = match opts {
            [ty, len, ..] => (ty, usize::from(*len) * 8),
            _ => return Err(AdvertError::BadOption),
        };
        if len == 0 || len > opts.len() {
            return Err(AdvertError::BadOption);
        }
        let o = opts.get(..len).unwrap_or(&[]);
        match ty {
            OPT_SOURCE_LLADDR => {
                a.lladdr = o.get(2..8).and_then(|m| <[u8; 6]>::try_from(m).ok());
            }
            OPT_MTU => a.mtu = Some(u32_at(o, 4)),
            OPT_PREFIX_INFO => {
                if len != 32 {
                    return Err(AdvertError::BadOption);
                }
                let plen = o.get(2).copied().unwrap_or(0);
                let pflags = o.get(3).copied().unwrap_or(0);
                let addr = o
                    .get(16..32)
                    .and_then(|s| <[u8; 16]>::try_from(s).ok())
                    .map(Ipv6Addr::from)
                    .ok_or(AdvertError::BadOption)?;
                let (valid_secs, preferred_secs) = (u32_at(o, 4), u32_at(o, 8));
                // a prefix over /128, link-local, or preferred over valid: skipped
                // (RFC 4862 §5.5.3 a, c)
                if let Some(p) = Ipv6Net::new(addr, plen) {
                    if !ipv6::is_link_local(addr)
                        && preferred_secs <= valid_secs
                        && a.prefixes.len() < MAX_PREFIXES
                    {
                        a.prefixes.push(RaPrefix {
                            prefix: p.network(),
                            on_link: pflags & PREFIX_ON_LINK != 0,
                            autonomous: pflags & PREFIX_AUTONOMOUS != 0,
                            valid_secs,
                            preferred_secs,
                        });
                    }
                }
            }
            OPT_RDNSS => {
                if len < 24 {
                    return Err(AdvertError::BadOption);
                }
                a.rdnss_lifetime_secs = u32_at(o, 4);
                for c in o.get(8..).unwrap_or(&[]).chunks_exact(16) {
                    if a.rdnss.len() < MAX_RDNSS {
                        if let Ok(b) = <[u8; 16]>::try_from(c) {
                            a.rdnss.push(Ipv6Addr::from(b));
                        }
                    }
                }
            }
            _ => {}
        }
        opts = opts.get(len..).unwrap_or(&[]);
    }
    Ok(a)
}
