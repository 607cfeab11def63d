//! DHCP options: the checked TLV parser and the reply option writer.
//!
//! RFC 2132 §2 (format: pad 0, end 255, code/length/value), §9.3 (option
//! overload: the `file` and `sname` fields carry more options), RFC 3396
//! (an option split into several instances with the same code is their
//! concatenation, in the order options, `file`, `sname`). RFC 2131 §4.1 says the
//! options field is read first, then `file`, then `sname`.
//!
//! smoltcp's `DhcpRepr` keeps only the options it knows and rejects client
//! identifiers that are not Ethernet ones, so the server reads the raw options
//! here: every length is checked against its field, a missing `end` at the end of
//! a field is tolerated (as dnsmasq and the ISC server do), an option that runs
//! past its field is an error, and the concatenated total is bounded.

use alloc::vec::Vec;

/// Option codes the server reads or writes (RFC 2132).
pub mod code {
    /// Padding.
    pub const PAD: u8 = 0;
    /// Subnet mask.
    pub const SUBNET_MASK: u8 = 1;
    /// Routers.
    pub const ROUTER: u8 = 3;
    /// DNS servers.
    pub const DNS_SERVER: u8 = 6;
    /// Host name.
    pub const HOST_NAME: u8 = 12;
    /// Domain name.
    pub const DOMAIN_NAME: u8 = 15;
    /// Broadcast address.
    pub const BROADCAST: u8 = 28;
    /// Requested IP address.
    pub const REQUESTED_IP: u8 = 50;
    /// IP address lease time.
    pub const LEASE_TIME: u8 = 51;
    /// Option overload.
    pub const OVERLOAD: u8 = 52;
    /// DHCP message type.
    pub const MESSAGE_TYPE: u8 = 53;
    /// Server identifier.
    pub const SERVER_ID: u8 = 54;
    /// Parameter request list.
    pub const PARAMETER_REQUEST_LIST: u8 = 55;
    /// Message (a NAK's reason).
    pub const MESSAGE: u8 = 56;
    /// Maximum DHCP message size.
    pub const MAX_MESSAGE_SIZE: u8 = 57;
    /// Renewal (T1) time.
    pub const RENEWAL_TIME: u8 = 58;
    /// Rebinding (T2) time.
    pub const REBINDING_TIME: u8 = 59;
    /// Client identifier.
    pub const CLIENT_ID: u8 = 61;
    /// End of options.
    pub const END: u8 = 255;
}

/// Largest concatenated value kept for one option code: the options field of a
/// 1500-byte frame plus `file` and `sname` cannot hold more.
const MAX_TOTAL_BYTES: usize = 1500;

/// Why the options could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionsError {
    /// An option's length byte is missing or its value runs past its field.
    Truncated,
    /// The overload option has a value other than 1, 2 or 3, or a bad length.
    BadOverload,
    /// More option bytes than any real packet carries.
    TooLong,
}

/// The options of one message, each code once (split instances concatenated).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    entries: Vec<(u8, Vec<u8>)>,
    total: usize,
}

impl Options {
    /// Reads the options field and, if option 52 says so, `file` then `sname`.
    pub fn parse(options: &[u8], file: &[u8], sname: &[u8]) -> Result<Options, OptionsError> {
        let mut out = Options::default();
        out.parse_field(options)?;
        // Option 52 only counts in the options field (RFC 2132 §9.3); it was just read.
        let overload = match out.get(code::OVERLOAD) {
            None => 0,
            Some([v @ 1..=3]) => *v,
            Some(_) => return Err(OptionsError::BadOverload),
        };
        // A second option 52 inside file/sname is meaningless: drop ours first so
        // that one found later cannot be confused with it, and ignore it there.
        out.entries.retain(|(c, _)| *c != code::OVERLOAD);
        if overload & 1 != 0 {
            out.parse_field(file)?;
        }
        if overload & 2 != 0 {
            out.parse_field(sname)?;
        }
        out.entries.retain(|(c, _)| *c != code::OVERLOAD);
        Ok(out)
    }

    fn parse_field(&mut self, field: &[u8]) -> Result<(), OptionsError> {
        let mut rest = field;
        while let Some((&c, tail)) = rest.split_first() {
            match c {
                code::PAD => rest = tail,
                code::END => return Ok(()),
                _ => {
                    let (&len, tail) = tail.split_first().ok_or(OptionsError::Truncated)?;
                    let len = usize::from(len);
                    let value = tail.get(..len).ok_or(OptionsError::Truncated)?;
                    rest = tail.get(len..).ok_or(OptionsError::Truncated)?;
                    self.push(c, value)?;
                }
            }
        }
        // No `end`: tolerated at the end of a field.
        Ok(())
    }

    fn push(&mut self, c: u8, value: &[u8]) -> Result<(), OptionsError> {
        self.total = self.total.saturating_add(value.len());
        if self.total > MAX_TOTAL_BYTES {
            return Err(OptionsError::TooLong);
        }
        match self.entries.iter_mut().find(|(k, _)| *k == c) {
            Some((_, v)) => v.extend_from_slice(value),
            None => self.entries.push((c, value.to_vec())),
        }
        Ok(())
    }

    /// The value of option `c`, if present.
    pub fn get(&self, c: u8) -> Option<&[u8]> {
        self.entries
            .iter()
            .find(|(k, _)| *k == c)
            .map(|(_, v)| v.as_slice())
    }

    /// The value of option `c` as an IPv4 address (exactly 4 bytes).
    pub fn get_ipv4(&self, c: u8) -> Option<core::net::Ipv4Addr> {
        let b: [u8; 4] = self.get(c)?.try_into().ok()?;
        Some(core::net::Ipv4Addr::from(b))
    }

    /// The value of option `c` as a big-endian u16 (exactly 2 bytes).
    pub fn get_u16(&self, c: u8) -> Option<u16> {
        let b: [u8; 2] = self.get(c)?.try_into().ok()?;
        Some(u16::from_be_bytes(b))
    }

    /// The codes present, in the order first seen.
    pub fn codes(&self) -> impl Iterator<Item = u8> + '_ {
        self.entries.iter().map(|(c, _)| *c)
    }
}

/// Writes options into a reply's options field, never past `limit` bytes (the
/// `end` byte is always kept room for).
pub struct OptionWriter {
    buf: Vec<u8>,
    limit: usize,
    written: Vec<u8>,
}

impl OptionWriter {
    /// A writer that will not produce more than `limit` bytes (including `end`).
    pub fn new(limit: usize) -> OptionWriter {
        OptionWriter {
            buf: Vec::new(),
            limit,
            written: Vec::new(),
        }
    }

    /// Appends option `c` unless it was already written, splitting values over
    /// 255 bytes into several instances (RFC 3396). Returns false if it did not
    /// fit (nothing is written then).
    pub fn put(&mut self, c: u8, value: &[u8]) -> bool {
        if self.written.contains(&c) || c == code::PAD || c == code::END {
            return false;
        }
        let pieces = value.len().div_ceil(255).max(1);
        let need = value.len() + 2 * pieces;
        if self.buf.len() + need + 1 > self.limit {
            return false;
        }
        if value.is_empty() {
            self.buf.extend_from_slice(&[c, 0]);
        }
        for chunk in value.chunks(255) {
            self.buf.push(c);
            // chunks(255) guarantees the length fits a byte.
            self.buf.push(u8::try_from(chunk.len()).unwrap_or(u8::MAX));
            self.buf.extend_from_slice(chunk);
        }
        self.written.push(c);
        true
    }

    /// Whether option `c` has been written.
    pub fn has(&self, c: u8) -> bool {
        self.written.contains(&c)
    }

    /// The option bytes with `end` appended.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(code::END);
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_in_any_order_and_concatenates_split_options() {
        let opts = [
            53, 1, 3, 0, 0, 12, 3, b'a', b'b', b'c', 12, 2, b'd', b'e', 50, 4, 192, 168, 1, 7, 255,
            99, 99,
        ];
        let o = Options::parse(&opts, &[], &[]).unwrap();
        assert_eq!(o.get(53), Some(&[3u8][..]));
        assert_eq!(o.get(12), Some(&b"abcde"[..]));
        assert_eq!(
            o.get_ipv4(50),
            Some(core::net::Ipv4Addr::new(192, 168, 1, 7))
        );
        // Bytes after `end` are not options.
        assert_eq!(o.get(99), None);
    }

    #[test]
    fn truncated_option_is_an_error() {
        assert_eq!(
            Options::parse(&[53, 1, 1, 12, 5, b'a'], &[], &[]),
            Err(OptionsError::Truncated)
        );
        assert_eq!(
            Options::parse(&[53, 1, 1, 12], &[], &[]),
            Err(OptionsError::Truncated)
        );
    }

    #[test]
    fn overload_reads_file_then_sname() {
        let file = [12, 2, b'h', b'1', 255];
        let sname = [12, 1, b'2', 255];
        let o = Options::parse(&[53, 1, 1, 52, 1, 3, 255], &file, &sname).unwrap();
        assert_eq!(o.get(12), Some(&b"h12"[..]));
        assert_eq!(o.get(52), None);
        let o = Options::parse(&[53, 1, 1, 52, 1, 1, 255], &file, &sname).unwrap();
        assert_eq!(o.get(12), Some(&b"h1"[..]));
        assert_eq!(
            Options::parse(&[52, 1, 9], &file, &sname),
            Err(OptionsError::BadOverload)
        );
        // Without option 52 the sname/file bytes are not options.
        let o = Options::parse(&[53, 1, 1], &file, &sname).unwrap();
        assert_eq!(o.get(12), None);
    }

    #[test]
    fn writer_splits_long_values_and_respects_the_limit() {
        let mut w = OptionWriter::new(300);
        let long = [7u8; 260];
        assert!(w.put(120, &long));
        assert!(!w.put(120, &[1]), "a code is written once");
        assert!(!w.put(121, &[0; 40]), "no room left");
        let bytes = w.finish();
        assert_eq!(bytes.len(), 2 + 255 + 2 + 5 + 1);
        let o = Options::parse(&bytes, &[], &[]).unwrap();
        assert_eq!(o.get(120), Some(&long[..]));
    }
}
