//! Router Solicitations (RFC 4861 §4.1), checked as §6.1.1 asks before a router
//! answers: hop limit 255 (it came from the link itself), a correct ICMPv6
//! checksum, code 0, at least 8 bytes, every option with a non-zero length inside
//! the message, and no source link-layer address option from the unspecified
//! address. Anything else is not answered (the caller counts it).

use core::fmt;
use core::net::Ipv6Addr;

use crate::ipv6;
use crate::link::ETH_LEN;
use crate::ra::message::NEXT_HEADER_ICMPV6;

/// ICMPv6 type of a Router Solicitation (the neighbour discovery table's).
pub use crate::ndp::ROUTER_SOLICIT as TYPE_ROUTER_SOLICIT;
const OPT_SOURCE_LLADDR: u8 = 1;

/// A valid Router Solicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Solicitation {
    /// Its source (unspecified from a host that has no address yet).
    pub src: Ipv6Addr,
    /// The host's MAC, from its source link-layer address option.
    pub lladdr: Option<[u8; 6]>,
}

/// Why a frame is not a Router Solicitation to answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RsError {
    /// Not IPv6 carrying ICMPv6 type 133 directly (extension headers included).
    NotSolicitation,
    /// Shorter than its headers say, or under 8 bytes of ICMPv6.
    Truncated,
    /// Hop limit other than 255: it was routed, not sent on this link.
    HopLimit,
    /// ICMPv6 code other than 0.
    Code,
    /// The ICMPv6 checksum does not verify.
    Checksum,
    /// An option of length 0 or running past the message.
    BadOption,
    /// A source link-layer address option from the unspecified address.
    LladdrFromUnspecified,
}

impl fmt::Display for RsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RsError::NotSolicitation => "not a router solicitation",
            RsError::Truncated => "truncated",
            RsError::HopLimit => "hop limit not 255",
            RsError::Code => "code not 0",
            RsError::Checksum => "bad checksum",
            RsError::BadOption => "bad option length",
            RsError::LladdrFromUnspecified => "link-layer address from the unspecified address",
        })
    }
}

/// Whether `frame` (Ethernet) looks like a Router Solicitation: IPv6, next header
/// ICMPv6, type 133. A cheap test for the receive path; [`parse`] checks it.
pub fn is_solicitation(frame: &[u8]) -> bool {
    frame.get(12..14) == Some(&[0x86, 0xdd][..])
        && frame.get(ETH_LEN + 6) == Some(&NEXT_HEADER_ICMPV6)
        && frame.get(ETH_LEN + 40) == Some(&TYPE_ROUTER_SOLICIT)
}

/// Checks the Router Solicitation in Ethernet frame `frame`.
pub fn parse(frame: &[u8]) -> Result<Solicitation, RsError> {
    if !is_solicitation(frame) {
        return Err(RsError::NotSolicitation);
    }
    let ip = frame.get(ETH_LEN..).ok_or(RsError::Truncated)?;
    let h = ipv6::parse(ip).map_err(|_| RsError::Truncated)?;
    let icmp = ip.get(40..h.total_len).ok_or(RsError::Truncated)?;
    if icmp.len() < 8 {
        return Err(RsError::Truncated);
    }
    if h.hop_limit != 255 {
        return Err(RsError::HopLimit);
    }
    if icmp.get(1) != Some(&0) {
        return Err(RsError::Code);
    }
    if !ipv6::l4_checksum_ok(h.src, h.dst, NEXT_HEADER_ICMPV6, icmp) {
        return Err(RsError::Checksum);
    }
    let mut lladdr = None;
    let mut opts = icmp.get(8..).unwrap_or(&[]);
    while !opts.is_empty() {
        let (&ty, len) = match opts {
            [ty, len, ..] => (ty, usize::from(*len) * 8),
            _ => return Err(RsError::BadOption),
        };
        if len == 0 || len > opts.len() {
            return Err(RsError::BadOption);
        }
        if ty == OPT_SOURCE_LLADDR {
            lladdr = opts.get(2..8).and_then(|m| <[u8; 6]>::try_from(m).ok());
        }
        opts = opts.get(len..).unwrap_or(&[]);
    }
    if h.src.is_unspecified() && lladdr.is_some() {
        return Err(RsError::LladdrFromUnspecified);
    }
    Ok(Solicitation { src: h.src, lladdr })
}
