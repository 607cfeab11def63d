//! Domain names on the wire: the bounded decompressing reader and the writer.
//!
//! RFC 1035 §3.1 (labels of at most 63 bytes, names of at most 255 bytes on the
//! wire), §4.1.4 (message compression: a two-byte pointer `11xxxxxx xxxxxxxx` to
//! an earlier occurrence), RFC 6891 §5 (label types 01 and 10 are not in use:
//! they are refused here).
//!
//! Hostile input: a pointer must point strictly before the lowest offset read so
//! far for this name, so every jump goes further back and a chain ends after at
//! most as many jumps as there are bytes before it (loops and forward pointers
//! are refused); the number of jumps is also capped. The decoded name is bounded
//! by 255 bytes whatever the pointers do.

use alloc::string::String;
use alloc::vec::Vec;

/// Longest name on the wire (RFC 1035 §2.3.4).
pub const MAX_NAME_LEN: usize = 255;
/// Longest label.
pub const MAX_LABEL_LEN: usize = 63;
/// Most compression pointers followed in one name.
pub const MAX_POINTERS: usize = 64;

/// Why a name could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameError {
    /// The name runs past the end of the message.
    Truncated,
    /// A label type other than plain (00) or pointer (11).
    BadLabelType,
    /// A pointer that does not go strictly backwards, or too many pointers.
    BadPointer,
    /// Longer than 255 bytes decoded.
    TooLong,
}

/// A domain name in uncompressed wire form (length-prefixed labels ending with
/// the empty root label), ASCII letters folded to lower case so that equal names
/// compare equal (RFC 1035 §2.3.3, RFC 4343).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name {
    wire: Vec<u8>,
}

impl Name {
    /// The root name.
    pub fn root() -> Name {
        Name {
            wire: alloc::vec![0],
        }
    }

    /// Reads the name at `pos` in `msg`; returns it and the offset just past it
    /// where it appears (after the first pointer, if any).
    pub fn parse(msg: &[u8], pos: usize) -> Result<(Name, usize), NameError> {
        let mut wire = Vec::new();
        let end = walk(msg, pos, |label| {
            wire.push(u8::try_from(label.len()).unwrap_or(0));
            wire.extend(label.iter().map(u8::to_ascii_lowercase));
        })?;
        wire.push(0);
        Ok((Name { wire }, end))
    }

    /// Skips the name at `pos` (checked as [`Name::parse`] does, without
    /// allocating).
    pub fn skip(msg: &[u8], pos: usize) -> Result<usize, NameError> {
        walk(msg, pos, |_| {})
    }

    /// From dotted text (`lan1.lan`, an optional final dot); `None` if a label is
    /// empty or over 63 bytes, or the name over 255.
    pub fn from_dotted(s: &str) -> Option<Name> {
        let s = s.strip_suffix('.').unwrap_or(s);
        let mut wire = Vec::new();
        if !s.is_empty() {
            for label in s.split('.') {
                let n = u8::try_from(label.len())
                    .ok()
                    .filter(|n| (1..=63).contains(n))?;
                wire.push(n);
                wire.extend(label.bytes().map(|b| b.to_ascii_lowercase()));
            }
        }
        wire.push(0);
        (wire.len() <= MAX_NAME_LEN).then_some(Name { wire })
    }

    /// The uncompressed wire form.
    pub fn as_wire(&self) -> &[u8] {
        &self.wire
    }

    /// The labels, first (leftmost) first.
    pub fn labels(&self) -> impl Iterator<Item = &[u8]> {
        let mut rest = self.wire.as_slice();
        core::iter::from_fn(move || {
            let (&n, tail) = rest.split_first()?;
            let label = tail.get(..usize::from(n))?;
            if label.is_empty() {
                return None;
            }
            rest = tail.get(usize::from(n)..)?;
            Some(label)
        })
    }

    /// Number of labels (0 for the root).
    pub fn label_count(&self) -> usize {
        self.labels().count()
    }

    /// Whether this name is `suffix` or below it.
    pub fn is_under(&self, suffix: &Name) -> bool {
        let n = self.label_count();
        let m = suffix.label_count();
        n >= m && self.labels().skip(n - m).eq(suffix.labels())
    }

    /// Dotted text without the final dot (`""` for the root); bytes outside
    /// printable ASCII, dots and backslashes inside labels are escaped `\DDD`
    /// (RFC 1035 §5.1).
    pub fn to_dotted(&self) -> String {
        let mut s = String::new();
        for (i, label) in self.labels().enumerate() {
            if i > 0 {
                s.push('.');
            }
            for &b in label {
                if b.is_ascii_graphic() && b != b'.' && b != b'\\' {
                    s.push(char::from(b));
                } else {
                    s.push('\\');
                    s.push(char::from(b'0' + b / 100));
                    s.push(char::from(b'0' + b / 10 % 10));
                    s.push(char::from(b'0' + b % 10));
                }
            }
        }
        s
    }
}

/// Walks the name at `pos` in `msg`, giving each label (without its length byte)
/// to `label` in order; returns the offset just past the name where it appears
/// (after the first pointer, if any). Every check of [`Name::parse`] is here.
fn walk(msg: &[u8], pos: usize, mut label: impl FnMut(&[u8])) -> Result<usize, NameError> {
    let mut pos = pos;
    let mut lowest = pos;
    let mut end = None;
    let mut jumps = 0;
    // The decoded length so far (labels and their length bytes).
    let mut len_so_far = 0;
    loop {
        let len = *msg.get(pos).ok_or(NameError::Truncated)?;
        match len & 0xC0 {
            0x00 => {
                let n = usize::from(len);
                if len_so_far + n + 1 > MAX_NAME_LEN {
                    return Err(NameError::TooLong);
                }
                if n == 0 {
                    return Ok(end.unwrap_or(pos + 1));
                }
                let l = msg.get(pos + 1..pos + 1 + n).ok_or(NameError::Truncated)?;
                label(l);
                len_so_far += 1 + n;
                pos += 1 + n;
            }
            0xC0 => {
                let low = *msg.get(pos + 1).ok_or(NameError::Truncated)?;
                let target = usize::from(len & 0x3F) << 8 | usize::from(low);
                jumps += 1;
                if target >= lowest || jumps > MAX_POINTERS {
                    return Err(NameError::BadPointer);
                }
                end.get_or_insert(pos + 2);
                lowest = target;
                pos = target;
            }
            _ => return Err(NameError::BadLabelType),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_plain_and_compressed_names() {
        // 12 bytes of header, then "www.Example.com" and a pointer to "example.com".
        let mut m = alloc::vec![0u8; 12];
        m.extend_from_slice(b"\x03www\x07Example\x03com\x00");
        m.extend_from_slice(b"\x04mail\xc0\x10");
        let (n, end) = Name::parse(&m, 12).unwrap();
        assert_eq!(n.to_dotted(), "www.example.com");
        assert_eq!(end, 29);
        let (n, end) = Name::parse(&m, 29).unwrap();
        assert_eq!(n.to_dotted(), "mail.example.com");
        assert_eq!(end, m.len());
        assert!(n.is_under(&Name::from_dotted("Example.COM").unwrap()));
        assert!(!n.is_under(&Name::from_dotted("ample.com").unwrap()));
    }

    #[test]
    fn refuses_loops_forward_pointers_and_bad_labels() {
        // A pointer to itself.
        let m = [0u8, 0, 0xC0, 0x02];
        assert_eq!(Name::parse(&m, 2), Err(NameError::BadPointer));
        // A label followed by a pointer back to that label: a loop.
        let m = [1u8, b'a', 0xC0, 0x00];
        assert_eq!(Name::parse(&m, 0), Err(NameError::BadPointer));
        // A forward pointer.
        let m = [0xC0u8, 0x02, 0x00];
        assert_eq!(Name::parse(&m, 0), Err(NameError::BadPointer));
        // Two pointers each going back to the other's region.
        let m = [0xC0u8, 0x02, 0xC0, 0x00];
        assert_eq!(Name::parse(&m, 2), Err(NameError::BadPointer));
        // 0x40 and 0x80 label types.
        assert_eq!(Name::parse(&[0x41, 0], 0), Err(NameError::BadLabelType));
        assert_eq!(Name::parse(&[0x80, 0], 0), Err(NameError::BadLabelType));
        // Truncated label and missing root.
        assert_eq!(Name::parse(&[5, b'a', b'b'], 0), Err(NameError::Truncated));
        assert_eq!(Name::parse(&[1, b'a'], 0), Err(NameError::Truncated));
        assert_eq!(Name::parse(&[0xC0], 0), Err(NameError::Truncated));
    }

    #[test]
    fn refuses_names_over_255_bytes() {
        // Four 63-byte labels: 4 * 64 + 1 = 257 bytes.
        let mut m = Vec::new();
        for _ in 0..4 {
            m.push(63);
            m.extend_from_slice(&[b'x'; 63]);
        }
        m.push(0);
        assert_eq!(Name::parse(&m, 0), Err(NameError::TooLong));
        // Built from pointers too: each pointer re-reads an earlier 63-byte label.
        let mut m = Vec::new();
        m.extend_from_slice(&[63]);
        m.extend_from_slice(&[b'y'; 63]);
        m.push(0);
        let mut p = Vec::new();
        p.extend_from_slice(&[63]);
        p.extend_from_slice(&[b'z'; 63]);
        p.extend_from_slice(&[0xC0, 0x00]);
        let second = m.len();
        m.extend_from_slice(&p);
        let mut q = alloc::vec![63u8];
        q.extend_from_slice(&[b'w'; 63]);
        q.extend_from_slice(&[63]);
        q.extend_from_slice(&[b'v'; 63]);
        q.extend_from_slice(&[0xC0, u8::try_from(second).unwrap()]);
        let third = m.len();
        m.extend_from_slice(&q);
        assert_eq!(Name::parse(&m, third), Err(NameError::TooLong));
        assert!(Name::from_dotted(&"a".repeat(64)).is_none());
        assert!(Name::from_dotted("a..b").is_none());
    }

    #[test]
    fn escapes_odd_bytes() {
        let (n, _) = Name::parse(b"\x03a.b\x02\x00z\x00", 0).unwrap();
        assert_eq!(n.to_dotted(), "a\\046b.\\000z");
    }
}
