//! DHCPv6 options (RFC 8415 §21): the checked reader and the writer.
//!
//! An option is `code (2) | length (2) | data`. [`Options::parse`] reads a run of
//! them and refuses the whole run when one runs past the end, or when there are
//! more than [`MAX_OPTIONS`] (a message is at most a few dozen); an unknown code is
//! kept and ignored by the caller. Encapsulated options (inside IA_NA) are read the
//! same way, one level deep only: the server never looks inside anything else.

use alloc::vec::Vec;

/// Option codes used here (RFC 8415 §21, RFC 3646, RFC 4704).
pub mod code {
    /// Client Identifier (the client's DUID).
    pub const CLIENTID: u16 = 1;
    /// Server Identifier.
    pub const SERVERID: u16 = 2;
    /// Identity Association for Non-temporary Addresses.
    pub const IA_NA: u16 = 3;
    /// Identity Association for Temporary Addresses.
    pub const IA_TA: u16 = 4;
    /// IA Address (inside IA_NA / IA_TA).
    pub const IAADDR: u16 = 5;
    /// Option Request.
    pub const ORO: u16 = 6;
    /// Preference.
    pub const PREFERENCE: u16 = 7;
    /// Elapsed Time.
    pub const ELAPSED_TIME: u16 = 8;
    /// Relay Message (only in relay messages).
    pub const RELAY_MSG: u16 = 9;
    /// Status Code.
    pub const STATUS_CODE: u16 = 13;
    /// Rapid Commit.
    pub const RAPID_COMMIT: u16 = 14;
    /// DNS Recursive Name Server (RFC 3646).
    pub const DNS_SERVERS: u16 = 23;
    /// Domain Search List (RFC 3646).
    pub const DOMAIN_LIST: u16 = 24;
    /// Identity Association for Prefix Delegation.
    pub const IA_PD: u16 = 25;
    /// IA Prefix (inside IA_PD).
    pub const IAPREFIX: u16 = 26;
    /// Client FQDN (RFC 4704).
    pub const CLIENT_FQDN: u16 = 39;
}

/// Status codes (RFC 8415 §21.13).
pub mod status {
    /// Success.
    pub const SUCCESS: u16 = 0;
    /// Failure, reason unspecified.
    pub const UNSPEC_FAIL: u16 = 1;
    /// The server has no addresses available to assign to the IA(s).
    pub const NO_ADDRS_AVAIL: u16 = 2;
    /// The client record (binding) is unavailable.
    pub const NO_BINDING: u16 = 3;
    /// The prefix for the address is not appropriate for the link.
    pub const NOT_ON_LINK: u16 = 4;
    /// The client must use the multicast address.
    pub const USE_MULTICAST: u16 = 5;
    /// No prefixes available for delegation.
    pub const NO_PREFIX_AVAIL: u16 = 6;
}

/// The most options read from one run (a message's, an IA's).
pub const MAX_OPTIONS: usize = 64;

/// Why a run of options is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionError {
    /// An option header or its data runs past the end.
    Truncated,
    /// More than [`MAX_OPTIONS`].
    TooMany,
}

/// A checked run of options, borrowing the message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options<'a> {
    items: Vec<(u16, &'a [u8])>,
}

impl<'a> Options<'a> {
    /// Reads `b` as options, all or nothing.
    pub fn parse(mut b: &'a [u8]) -> Result<Options<'a>, OptionError> {
        let mut items = Vec::new();
        while !b.is_empty() {
            let (hdr, rest) = b.split_at_checked(4).ok_or(OptionError::Truncated)?;
            let [c0, c1, l0, l1] = <[u8; 4]>::try_from(hdr).map_err(|_| OptionError::Truncated)?;
            let code = u16::from_be_bytes([c0, c1]);
            let len = usize::from(u16::from_be_bytes([l0, l1]));
            let (data, rest) = rest.split_at_checked(len).ok_or(OptionError::Truncated)?;
            if items.len() >= MAX_OPTIONS {
                return Err(OptionError::TooMany);
            }
            items.push((code, data));
            b = rest;
        }
        Ok(Options { items })
    }

    /// The first option `code`'s data.
    pub fn get(&self, code: u16) -> Option<&'a [u8]> {
        self.items.iter().find(|(c, _)| *c == code).map(|(_, d)| *d)
    }

    /// Every option `code`'s data, in order.
    pub fn all(&self, code: u16) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.items
            .iter()
            .filter(move |(c, _)| *c == code)
            .map(|(_, d)| *d)
    }

    /// All of them in order: (code, data).
    pub fn into_items(self) -> Vec<(u16, &'a [u8])> {
        self.items
    }

    /// Whether option `code` is present.
    pub fn has(&self, code: u16) -> bool {
        self.items.iter().any(|(c, _)| *c == code)
    }
}

/// Appends option `code` with `data` to `out` (data longer than 65535 bytes is
/// cut: nothing this server writes comes near it).
pub fn put(out: &mut Vec<u8>, code: u16, data: &[u8]) {
    let data = data.get(..usize::from(u16::MAX)).unwrap_or(data);
    let len = u16::try_from(data.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(data);
}

/// A Status Code option's data: the code and a UTF-8 message.
pub fn status_data(code: u16, message: &str) -> Vec<u8> {
    let mut d = Vec::with_capacity(2 + message.len());
    d.extend_from_slice(&code.to_be_bytes());
    d.extend_from_slice(message.as_bytes());
    d
}
