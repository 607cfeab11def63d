//! DHCPv6 messages (RFC 8415 §8, §21) between client and server: the checked
//! parser and the builder.
//!
//! Every option length is checked against what holds it, nested options (IA_NA's
//! IAADDR, IA_PD's IAPREFIX, their status codes) are read within their parent only,
//! and every list is bounded ([`MAX_OPTIONS`], [`MAX_IA_ENTRIES`], [`MAX_DNS`],
//! [`MAX_DOMAINS`], [`MAX_DUID`]): a message beyond them is refused, never grown
//! into.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::net::Ipv6Addr;

use crate::dhcp6d::options::{put, OptionError, Options};
use crate::route6::Ipv6Net;

// The message types, option codes and status codes are the server's, under the
// names the client has always had for them.
pub use crate::dhcp6d::message::msg::{
    ADVERTISE, DECLINE, REBIND, RELEASE, RENEW, REPLY, REQUEST, SOLICIT,
};
pub use crate::dhcp6d::options::code::{
    CLIENTID as OPT_CLIENTID, DNS_SERVERS as OPT_DNS_SERVERS, DOMAIN_LIST as OPT_DOMAIN_LIST,
    ELAPSED_TIME as OPT_ELAPSED_TIME, IAADDR as OPT_IAADDR, IAPREFIX as OPT_IAPREFIX,
    IA_NA as OPT_IA_NA, IA_PD as OPT_IA_PD, ORO as OPT_ORO, PREFERENCE as OPT_PREFERENCE,
    RAPID_COMMIT as OPT_RAPID_COMMIT, SERVERID as OPT_SERVERID, STATUS_CODE as OPT_STATUS_CODE,
};
pub use crate::dhcp6d::options::status::{
    NOT_ON_LINK as STATUS_NOT_ON_LINK, NO_ADDRS_AVAIL as STATUS_NO_ADDRS_AVAIL,
    NO_BINDING as STATUS_NO_BINDING, NO_PREFIX_AVAIL as STATUS_NO_PREFIX_AVAIL,
    SUCCESS as STATUS_SUCCESS, UNSPEC_FAIL as STATUS_UNSPEC_FAIL,
    USE_MULTICAST as STATUS_USE_MULTICAST,
};
/// Options read in one message (or one IA) at most, and the longest DUID: the
/// server's bounds.
pub use crate::dhcp6d::{lease::MAX_DUID, options::MAX_OPTIONS};

/// Addresses of one IA_NA, prefixes of one IA_PD, kept at most.
pub const MAX_IA_ENTRIES: usize = 4;
/// DNS servers kept at most.
pub const MAX_DNS: usize = 8;
/// Search domains kept at most.
pub const MAX_DOMAINS: usize = 8;
/// The longest message read (a DHCPv6 message fits an unfragmented IPv6 packet).
pub const MAX_MESSAGE: usize = 1452;

/// Why a message was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Under the 4 bytes of type and transaction id, or over [`MAX_MESSAGE`].
    Length,
    /// An option whose length runs past what holds it.
    Truncated,
    /// An option too short or too long for its kind (a DUID over [`MAX_DUID`], a
    /// DNS server list not a multiple of 16 bytes, a prefix length over 128...).
    BadOption(u16),
    /// More than [`MAX_OPTIONS`] options in a message or an IA.
    TooManyOptions,
    /// The same option twice where only one may be.
    Duplicate(u16),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Length => write!(f, "bad message length"),
            ParseError::Truncated => write!(f, "truncated option"),
            ParseError::BadOption(o) => write!(f, "bad option {o}"),
            ParseError::TooManyOptions => write!(f, "too many options"),
            ParseError::Duplicate(o) => write!(f, "option {o} twice"),
        }
    }
}

/// An address of an IA_NA (IAADDR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IaAddr {
    /// The address.
    pub addr: Ipv6Addr,
    /// Preferred lifetime (s).
    pub preferred: u32,
    /// Valid lifetime (s).
    pub valid: u32,
}

/// A delegated prefix of an IA_PD (IAPREFIX).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IaPrefix {
    /// The prefix.
    pub prefix: Ipv6Net,
    /// Preferred lifetime (s).
    pub preferred: u32,
    /// Valid lifetime (s).
    pub valid: u32,
}

/// An IA_NA or IA_PD: its times, its status, its addresses or prefixes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ia<T> {
    /// IAID.
    pub iaid: u32,
    /// T1 (s).
    pub t1: u32,
    /// T2 (s).
    pub t2: u32,
    /// The IA's status code, if it has one.
    pub status: Option<u16>,
    /// Its addresses or prefixes (at most [`MAX_IA_ENTRIES`]; entries whose own
    /// status is not Success, or whose preferred lifetime is over the valid one,
    /// are left out as RFC 8415 §21.6/§21.22 say).
    pub entries: Vec<T>,
}

/// A message received by the client (Advertise, Reply), read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    /// msg-type.
    pub msg_type: u8,
    /// transaction-id (24 bits).
    pub xid: u32,
    /// Client Identifier (the DUID), if any.
    pub client_id: Option<Vec<u8>>,
    /// Server Identifier, if any.
    pub server_id: Option<Vec<u8>>,
    /// The message's own status code, if any.
    pub status: Option<u16>,
    /// Preference (0 without the option).
    pub preference: u8,
    /// Whether Rapid Commit is present.
    pub rapid_commit: bool,
    /// The first IA_NA.
    pub ia_na: Option<Ia<IaAddr>>,
    /// The first IA_PD.
    pub ia_pd: Option<Ia<IaPrefix>>,
    /// DNS servers.
    pub dns: Vec<Ipv6Addr>,
    /// Domain search list.
    pub domains: Vec<String>,
}

/// The options of `b`: (code, body), each checked to lie within `b` (the server's
/// reader).
fn options(b: &[u8]) -> Result<Vec<Opt<'_>>, ParseError> {
    match Options::parse(b) {
        Ok(o) => Ok(o.into_items()),
        Err(OptionError::Truncated) => Err(ParseError::Truncated),
        Err(OptionError::TooMany) => Err(ParseError::TooManyOptions),
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2)
        .and_then(|s| <[u8; 2]>::try_from(s).ok())
        .map(u16::from_be_bytes)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map_or(0, u32::from_be_bytes)
}

fn addr_at(b: &[u8], at: usize) -> Option<Ipv6Addr> {
    b.get(at..at + 16)
        .and_then(|s| <[u8; 16]>::try_from(s).ok())
        .map(Ipv6Addr::from)
}

fn status(body: &[u8]) -> Result<u16, ParseError> {
    be16(body, 0).ok_or(ParseError::BadOption(OPT_STATUS_CODE))
}

/// An option's code and body.
type Opt<'a> = (u16, &'a [u8]);

/// An IA_NA or IA_PD body: IAID, T1, T2, then options.
fn ia_head(code: u16, body: &[u8]) -> Result<(u32, u32, u32, Vec<Opt<'_>>), ParseError> {
    let opts = body.get(12..).ok_or(ParseError::BadOption(code))?;
    Ok((
        u32_at(body, 0),
        u32_at(body, 4),
        u32_at(body, 8),
        options(opts)?,
    ))
}

/// The status inside an IAADDR's or IAPREFIX's options: Success without one.
fn inner_status(b: &[u8]) -> Result<u16, ParseError> {
    let mut s = STATUS_SUCCESS;
    for (code, body) in options(b)? {
        if code == OPT_STATUS_CODE {
            s = status(body)?;
        }
    }
    Ok(s)
}

/// An IA of `code` whose entries are options `entry_code`: its status, and the
/// entries `entry` reads as usable (at most [`MAX_IA_ENTRIES`]).
fn ia<T>(
    code: u16,
    body: &[u8],
    entry_code: u16,
    entry: impl Fn(&[u8]) -> Result<Option<T>, ParseError>,
) -> Result<Ia<T>, ParseError> {
    let (iaid, t1, t2, opts) = ia_head(code, body)?;
    let mut ia = Ia {
        iaid,
        t1,
        t2,
        status: None,
        entries: Vec::new(),
    };
    for (c, b) in opts {
        if c == OPT_STATUS_CODE {
            ia.status = Some(status(b)?);
        } else if c == entry_code {
            if let Some(e) = entry(b)? {
                if ia.entries.len() < MAX_IA_ENTRIES {
                    ia.entries.push(e);
                }
            }
        }
    }
    Ok(ia)
}

fn ia_na(body: &[u8]) -> Result<Ia<IaAddr>, ParseError> {
    ia(OPT_IA_NA, body, OPT_IAADDR, |b| {
        let addr = addr_at(b, 0).ok_or(ParseError::BadOption(OPT_IAADDR))?;
        if b.len() < 24 {
            return Err(ParseError::BadOption(OPT_IAADDR));
        }
        let (preferred, valid) = (u32_at(b, 16), u32_at(b, 20));
        let st = inner_status(b.get(24..).unwrap_or(&[]))?;
        Ok(
            (st == STATUS_SUCCESS && preferred <= valid).then_some(IaAddr {
                addr,
                preferred,
                valid,
            }),
        )
    })
}

fn ia_pd(body: &[u8]) -> Result<Ia<IaPrefix>, ParseError> {
    ia(OPT_IA_PD, body, OPT_IAPREFIX, |b| {
        if b.len() < 25 {
            return Err(ParseError::BadOption(OPT_IAPREFIX));
        }
        let (preferred, valid) = (u32_at(b, 0), u32_at(b, 4));
        let len = b.get(8).copied().unwrap_or(0);
        let addr = addr_at(b, 9).ok_or(ParseError::BadOption(OPT_IAPREFIX))?;
        let prefix = Ipv6Net::new(addr, len)
            .ok_or(ParseError::BadOption(OPT_IAPREFIX))?
            .network();
        let st = inner_status(b.get(25..).unwrap_or(&[]))?;
        // a prefix of length 0 (or longer than a /64) cannot be used
        Ok(
            (st == STATUS_SUCCESS && preferred <= valid && (1..=64).contains(&len)).then_some(
                IaPrefix {
                    prefix,
                    preferred,
                    valid,
                },
            ),
        )
    })
}

/// RFC 1035 names, uncompressed (RFC 8415 §10), as dotted text; a bad one refuses
/// the option.
fn domains(b: &[u8]) -> Result<Vec<String>, ParseError> {
    let bad = ParseError::BadOption(OPT_DOMAIN_LIST);
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let mut name = String::new();
        loop {
            let len = usize::from(*b.get(at).ok_or(bad)?);
            at += 1;
            if len == 0 {
                break;
            }
            if len > 63 {
                return Err(bad);
            }
            let label = b.get(at..at + len).ok_or(bad)?;
            if !label.iter().all(|c| c.is_ascii_graphic() && *c != b'.') {
                return Err(bad);
            }
            if !name.is_empty() {
                name.push('.');
            }
            name.extend(label.iter().map(|c| char::from(*c)));
            at += len;
            if name.len() > 253 {
                return Err(bad);
            }
        }
        if !name.is_empty() && out.len() < MAX_DOMAINS {
            out.push(name);
        }
    }
    Ok(out)
}

/// Reads a message from a server.
pub fn parse(b: &[u8]) -> Result<Message, ParseError> {
    let (Some(&[msg_type, x1, x2, x3]), true) = (b.first_chunk::<4>(), b.len() <= MAX_MESSAGE)
    else {
        return Err(ParseError::Length);
    };
    let mut m = Message {
        msg_type,
        xid: u32::from_be_bytes([0, x1, x2, x3]),
        ..Message::default()
    };
    for (code, body) in options(b.get(4..).unwrap_or(&[]))? {
        match code {
            OPT_CLIENTID | OPT_SERVERID => {
                if body.len() < 2 || body.len() > MAX_DUID {
                    return Err(ParseError::BadOption(code));
                }
                let slot = if code == OPT_CLIENTID {
                    &mut m.client_id
                } else {
                    &mut m.server_id
                };
                if slot.is_some() {
                    return Err(ParseError::Duplicate(code));
                }
                *slot = Some(body.to_vec());
            }
            OPT_STATUS_CODE => m.status = Some(status(body)?),
            OPT_PREFERENCE => {
                m.preference = *body.first().ok_or(ParseError::BadOption(code))?;
            }
            OPT_RAPID_COMMIT => m.rapid_commit = true,
            OPT_IA_NA => {
                let ia = ia_na(body)?;
                if m.ia_na.is_none() {
                    m.ia_na = Some(ia);
                }
            }
            OPT_IA_PD => {
                let ia = ia_pd(body)?;
                if m.ia_pd.is_none() {
                    m.ia_pd = Some(ia);
                }
            }
            OPT_DNS_SERVERS => {
                if body.len() % 16 != 0 {
                    return Err(ParseError::BadOption(code));
                }
                for c in body.chunks_exact(16).take(MAX_DNS) {
                    if let Some(a) = addr_at(c, 0) {
                        m.dns.push(a);
                    }
                }
            }
            OPT_DOMAIN_LIST => m.domains = domains(body)?,
            _ => {}
        }
    }
    Ok(m)
}

/// Writes a message: type, transaction id, then options appended one by one.
#[derive(Clone, Debug)]
pub struct Builder(Vec<u8>);

impl Builder {
    /// A message of `msg_type` with transaction id `xid` (its low 24 bits).
    pub fn new(msg_type: u8, xid: u32) -> Self {
        let x = xid.to_be_bytes();
        let mut b = Vec::with_capacity(128);
        b.extend_from_slice(&[msg_type, x[1], x[2], x[3]]);
        Builder(b)
    }

    /// Appends option `code` with `body` (cut at 65535 bytes).
    pub fn option(&mut self, code: u16, body: &[u8]) -> &mut Self {
        put(&mut self.0, code, body);
        self
    }

    /// The message.
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// An IA_NA body: IAID, T1 0, T2 0 (the server chooses), and `addrs` as IAADDRs.
pub fn ia_na_body(iaid: u32, addrs: &[IaAddr]) -> Vec<u8> {
    let mut b = Vec::with_capacity(12 + 28 * addrs.len());
    b.extend_from_slice(&iaid.to_be_bytes());
    b.extend_from_slice(&[0; 8]);
    for a in addrs {
        b.extend_from_slice(&OPT_IAADDR.to_be_bytes());
        b.extend_from_slice(&24u16.to_be_bytes());
        b.extend_from_slice(&a.addr.octets());
        b.extend_from_slice(&a.preferred.to_be_bytes());
        b.extend_from_slice(&a.valid.to_be_bytes());
    }
    b
}

/// An IA_PD body: IAID, T1 0, T2 0, and `prefixes` as IAPREFIXes (a hint is a
/// prefix of `::` with the length wanted and lifetimes 0).
pub fn ia_pd_body(iaid: u32, prefixes: &[IaPrefix]) -> Vec<u8> {
    let mut b = Vec::with_capacity(12 + 29 * prefixes.len());
    b.extend_from_slice(&iaid.to_be_bytes());
    b.extend_from_slice(&[0; 8]);
    for p in prefixes {
        b.extend_from_slice(&OPT_IAPREFIX.to_be_bytes());
        b.extend_from_slice(&25u16.to_be_bytes());
        b.extend_from_slice(&p.preferred.to_be_bytes());
        b.extend_from_slice(&p.valid.to_be_bytes());
        b.push(p.prefix.prefix_len());
        b.extend_from_slice(&p.prefix.network().addr().octets());
    }
    b
}

/// DUID-LL (RFC 8415 §11.4) of an Ethernet interface with MAC `mac`, as odhcp6c
/// makes it from the interface's address.
pub fn duid_ll(mac: [u8; 6]) -> Vec<u8> {
    let mut d = Vec::with_capacity(10);
    d.extend_from_slice(&[0, 3, 0, 1]);
    d.extend_from_slice(&mac);
    d
}
