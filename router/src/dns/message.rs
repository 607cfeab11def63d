//! DNS messages: the checked reader of a whole message and the answer writer.
//!
//! RFC 1035 §4.1 (header, question, resource records), §4.1.1 (flags and
//! RCODEs), RFC 2308 §5 (negative answers carry the SOA whose MINIMUM bounds the
//! negative TTL), RFC 6891 §6.1 (the OPT pseudo-record: its class is the UDP size
//! the requester accepts, its TTL field is not a TTL).
//!
//! Parsing walks every section and records, for each resource record, where its
//! TTL field and RDATA are: the forwarder edits replies in place (id, TTLs)
//! instead of re-encoding them, so what goes back to a client is what upstream
//! sent. Counts larger than the data, truncated sections and bad names are errors.
//!
//! Heap: a parsed record keeps its owner name (up to 256 bytes) besides its place,
//! about 25 times the 12 bytes a compressed record can take on the wire. So a
//! message with more than [`MAX_QUESTIONS`] questions or [`MAX_RECORDS`] records
//! is checked whole but not kept: [`Message::parse`] refuses it as
//! [`MessageError::TooComplex`], [`Message::parse_head`] keeps its header and
//! questions only, and [`Message::record_refs`] walks any message's records
//! without allocating. (The forwarder passes such an upstream reply on uncached.)

use super::name::{Name, NameError};
use alloc::vec::Vec;
use core::ops::Range;

/// Header length.
pub const HEADER_LEN: usize = 12;
/// The classic UDP limit without EDNS (RFC 1035 §4.2.1).
pub const CLASSIC_UDP_LEN: usize = 512;
/// Most questions a message may have to be read (every real one has one).
pub const MAX_QUESTIONS: usize = 4;
/// Most resource records (all sections) kept from one message by
/// [`Message::parse`].
pub const MAX_RECORDS: usize = 64;

/// Record types used here.
pub mod rtype {
    /// IPv4 address.
    pub const A: u16 = 1;
    /// Name server.
    pub const NS: u16 = 2;
    /// Canonical name.
    pub const CNAME: u16 = 5;
    /// Start of authority.
    pub const SOA: u16 = 6;
    /// Pointer (reverse lookups).
    pub const PTR: u16 = 12;
    /// IPv6 address.
    pub const AAAA: u16 = 28;
    /// EDNS pseudo-record.
    pub const OPT: u16 = 41;
    /// Any type.
    pub const ANY: u16 = 255;
}

/// The Internet class.
pub const CLASS_IN: u16 = 1;

/// Response codes (RFC 1035 §4.1.1).
pub mod rcode {
    /// No error.
    pub const NOERROR: u8 = 0;
    /// Format error.
    pub const FORMERR: u8 = 1;
    /// Server failure.
    pub const SERVFAIL: u8 = 2;
    /// Name does not exist.
    pub const NXDOMAIN: u8 = 3;
    /// Not implemented.
    pub const NOTIMP: u8 = 4;
    /// Refused.
    pub const REFUSED: u8 = 5;
}

/// Flag bits of the header's second 16-bit word.
pub mod flag {
    /// Response.
    pub const QR: u16 = 0x8000;
    /// Authoritative answer.
    pub const AA: u16 = 0x0400;
    /// Truncated.
    pub const TC: u16 = 0x0200;
    /// Recursion desired.
    pub const RD: u16 = 0x0100;
    /// Recursion available.
    pub const RA: u16 = 0x0080;
    /// Checking disabled (RFC 4035).
    pub const CD: u16 = 0x0010;
}

/// Why a message could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageError {
    /// Shorter than the header, or a section runs past the end (including a
    /// count larger than the data).
    Truncated,
    /// A bad name.
    Name(NameError),
    /// Well formed, but more than [`MAX_QUESTIONS`] questions or (for
    /// [`Message::parse`]) more than [`MAX_RECORDS`] records.
    TooComplex,
}

impl From<NameError> for MessageError {
    fn from(e: NameError) -> Self {
        match e {
            NameError::Truncated => MessageError::Truncated,
            e => MessageError::Name(e),
        }
    }
}

/// The fixed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Message id.
    pub id: u16,
    /// QR, opcode, AA, TC, RD, RA, Z, AD, CD, RCODE.
    pub flags: u16,
    /// Question count.
    pub qdcount: u16,
    /// Answer count.
    pub ancount: u16,
    /// Authority count.
    pub nscount: u16,
    /// Additional count.
    pub arcount: u16,
}

impl Header {
    /// Reads the header of `msg`.
    pub fn parse(msg: &[u8]) -> Result<Header, MessageError> {
        let w = |i: usize| -> Result<u16, MessageError> {
            let b: [u8; 2] = msg
                .get(i..i + 2)
                .and_then(|s| s.try_into().ok())
                .ok_or(MessageError::Truncated)?;
            Ok(u16::from_be_bytes(b))
        };
        Ok(Header {
            id: w(0)?,
            flags: w(2)?,
            qdcount: w(4)?,
            ancount: w(6)?,
            nscount: w(8)?,
            arcount: w(10)?,
        })
    }

    /// Whether this is a response.
    pub fn is_response(&self) -> bool {
        self.flags & flag::QR != 0
    }

    /// The opcode (0 = QUERY).
    pub fn opcode(&self) -> u8 {
        u8::try_from((self.flags >> 11) & 0xF).unwrap_or(0)
    }

    /// The response code (low 4 bits).
    pub fn rcode(&self) -> u8 {
        u8::try_from(self.flags & 0xF).unwrap_or(0)
    }
}

/// Sets the id of the message in `msg` (no-op if shorter than 2 bytes).
pub fn set_id(msg: &mut [u8], id: u16) {
    if let Some(d) = msg.get_mut(0..2) {
        d.copy_from_slice(&id.to_be_bytes());
    }
}

/// One question.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Question {
    /// The name (lower case).
    pub name: Name,
    /// QTYPE.
    pub qtype: u16,
    /// QCLASS.
    pub qclass: u16,
}

impl Question {
    /// Bytes it holds in the heap (its name's wire form, and itself).
    pub fn heap_bytes(&self) -> usize {
        self.name.as_wire().len() + core::mem::size_of::<Self>()
    }
}

/// Which section a record is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Answer.
    Answer,
    /// Authority.
    Authority,
    /// Additional.
    Additional,
}

/// Where one resource record is, and what it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its section.
    pub section: Section,
    /// Owner name.
    pub name: Name,
    /// TYPE.
    pub rtype: u16,
    /// CLASS (for OPT: the UDP payload size).
    pub class: u16,
    /// TTL (for OPT: extended RCODE and flags).
    pub ttl: u32,
    /// Offset of the 4-byte TTL field in the message.
    pub ttl_offset: usize,
    /// The RDATA's range in the message.
    pub rdata: Range<usize>,
}

/// A fully checked message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The header.
    pub header: Header,
    /// The questions.
    pub questions: Vec<Question>,
    /// Offset just past the question section.
    pub question_end: usize,
    /// All resource records, in order.
    pub records: Vec<Record>,
}

fn u16_at(msg: &[u8], i: usize) -> Result<u16, MessageError> {
    let b: [u8; 2] = msg
        .get(i..i + 2)
        .and_then(|s| s.try_into().ok())
        .ok_or(MessageError::Truncated)?;
    Ok(u16::from_be_bytes(b))
}

fn u32_at(msg: &[u8], i: usize) -> Result<u32, MessageError> {
    let b: [u8; 4] = msg
        .get(i..i + 4)
        .and_then(|s| s.try_into().ok())
        .ok_or(MessageError::Truncated)?;
    Ok(u32::from_be_bytes(b))
}

/// One resource record's place and fixed fields, read without allocating
/// ([`Message::record_refs`]): a [`Record`] without its owner name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordRef {
    /// Its section.
    pub section: Section,
    /// TYPE.
    pub rtype: u16,
    /// CLASS.
    pub class: u16,
    /// TTL.
    pub ttl: u32,
    /// Offset of the 4-byte TTL field in the message.
    pub ttl_offset: usize,
    /// The RDATA's range in the message.
    pub rdata: Range<usize>,
}

/// The records of a message in order, read without allocating; ends at the first
/// error (after giving it).
pub struct RecordRefs<'a> {
    msg: &'a [u8],
    pos: usize,
    /// Records left in each section: answer, authority, additional.
    left: [(Section, u16); 3],
    failed: bool,
}

impl Iterator for RecordRefs<'_> {
    type Item = Result<RecordRef, MessageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let slot = self.left.iter_mut().find(|(_, n)| *n > 0)?;
        slot.1 -= 1;
        let section = slot.0;
        let r = record_at(self.msg, self.pos, section);
        match &r {
            Ok((_, next)) => self.pos = *next,
            Err(_) => self.failed = true,
        }
        Some(r.map(|(r, _)| r))
    }
}

/// The record at `pos`, and the offset after it.
fn record_at(msg: &[u8], pos: usize, section: Section) -> Result<(RecordRef, usize), MessageError> {
    let end = Name::skip(msg, pos)?;
    let rtype = u16_at(msg, end)?;
    let class = u16_at(msg, end + 2)?;
    let ttl = u32_at(msg, end + 4)?;
    let rdlen = usize::from(u16_at(msg, end + 8)?);
    let start = end + 10;
    let stop = start + rdlen;
    if stop > msg.len() {
        return Err(MessageError::Truncated);
    }
    let r = RecordRef {
        section,
        rtype,
        class,
        ttl,
        ttl_offset: end + 4,
        rdata: start..stop,
    };
    Ok((r, stop))
}

impl Message {
    /// Reads and checks every section of `msg`. Bytes after the last record are
    /// ignored (as most resolvers do). A well-formed message with more than
    /// [`MAX_QUESTIONS`] questions or [`MAX_RECORDS`] records is
    /// [`MessageError::TooComplex`] (what it holds is not kept: see
    /// [`Self::parse_head`]).
    pub fn parse(msg: &[u8]) -> Result<Message, MessageError> {
        Self::read(msg, true)
    }

    /// [`Self::parse`] without the records (`records` is empty): the header and
    /// the questions, every record checked but none kept. Only more than
    /// [`MAX_QUESTIONS`] questions make it [`MessageError::TooComplex`].
    pub fn parse_head(msg: &[u8]) -> Result<Message, MessageError> {
        Self::read(msg, false)
    }

    fn read(msg: &[u8], keep_records: bool) -> Result<Message, MessageError> {
        let header = Header::parse(msg)?;
        let mut pos = HEADER_LEN;
        let mut questions = Vec::new();
        let mut too_complex = usize::from(header.qdcount) > MAX_QUESTIONS;
        for _ in 0..header.qdcount {
            if too_complex {
                // Checked, not kept.
                pos = Name::skip(msg, pos)? + 4;
                u16_at(msg, pos - 2)?;
                continue;
            }
            let (name, end) = Name::parse(msg, pos)?;
            let qtype = u16_at(msg, end)?;
            let qclass = u16_at(msg, end + 2)?;
            pos = end + 4;
            questions.push(Question {
                name,
                qtype,
                qclass,
            });
        }
        let question_end = pos;
        let mut records = Vec::new();
        let total =
            usize::from(header.ancount) + usize::from(header.nscount) + usize::from(header.arcount);
        let keep = keep_records && total <= MAX_RECORDS && !too_complex;
        too_complex |= keep_records && total > MAX_RECORDS;
        let refs = RecordRefs {
            msg,
            pos: question_end,
            left: [
                (Section::Answer, header.ancount),
                (Section::Authority, header.nscount),
                (Section::Additional, header.arcount),
            ],
            failed: false,
        };
        for r in refs {
            let r = r?;
            if keep {
                // Its owner name, read again from where the record began.
                let (name, _) = Name::parse(msg, pos)?;
                records.push(Record {
                    section: r.section,
                    name,
                    rtype: r.rtype,
                    class: r.class,
                    ttl: r.ttl,
                    ttl_offset: r.ttl_offset,
                    rdata: r.rdata.clone(),
                });
            }
            pos = r.rdata.end;
        }
        if too_complex {
            return Err(MessageError::TooComplex);
        }
        Ok(Message {
            header,
            questions,
            question_end,
            records,
        })
    }

    /// The records of `msg` (the message this was parsed from), read again
    /// without allocating, whether or not [`Self::records`] kept them.
    pub fn record_refs<'a>(&self, msg: &'a [u8]) -> RecordRefs<'a> {
        RecordRefs {
            msg,
            pos: self.question_end,
            left: [
                (Section::Answer, self.header.ancount),
                (Section::Authority, self.header.nscount),
                (Section::Additional, self.header.arcount),
            ],
            failed: false,
        }
    }

    /// The only question, if there is exactly one.
    pub fn question(&self) -> Option<&Question> {
        match self.questions.as_slice() {
            [q] => Some(q),
            _ => None,
        }
    }

    /// The largest UDP reply the sender accepts: the OPT record's class if
    /// present (at least 512), else 512.
    pub fn udp_limit(&self) -> usize {
        self.records
            .iter()
            .find(|r| r.rtype == rtype::OPT && r.section == Section::Additional)
            .map_or(CLASSIC_UDP_LEN, |r| {
                usize::from(r.class).max(CLASSIC_UDP_LEN)
            })
    }

    /// The negative-caching TTL of a NXDOMAIN/NODATA answer: the SOA in the
    /// authority section, min(its TTL, its MINIMUM) (RFC 2308 §5).
    pub fn soa_negative_ttl(&self, msg: &[u8]) -> Option<u32> {
        let soa = self
            .records
            .iter()
            .find(|r| r.section == Section::Authority && r.rtype == rtype::SOA)?;
        let after_mname = Name::skip(msg, soa.rdata.start).ok()?;
        let after_rname = Name::skip(msg, after_mname).ok()?;
        // serial, refresh, retry, expire, minimum.
        if after_rname + 20 > soa.rdata.end {
            return None;
        }
        let minimum = u32_at(msg, after_rname + 16).ok()?;
        Some(soa.ttl.min(minimum))
    }
}

/// Removes the OPT record at the end of `packet`, if there is one, and lowers
/// ARCOUNT: a cached reply obtained for an EDNS query must not carry OPT to a
/// client that sent none (RFC 6891 §7). Nothing changes unless the message
/// parses and its last record is a root-owned OPT ending the packet.
pub fn strip_final_opt(packet: &mut Vec<u8>) {
    let Ok(m) = Message::parse(packet) else {
        return;
    };
    let Some(last) = m.records.last() else {
        return;
    };
    // Root name (1 byte), TYPE, CLASS, then TTL: the record starts 5 bytes before it.
    let Some(start) = last.ttl_offset.checked_sub(5) else {
        return;
    };
    if last.rtype != rtype::OPT
        || last.section != Section::Additional
        || last.rdata.end != packet.len()
        || packet.get(start) != Some(&0)
    {
        return;
    }
    packet.truncate(start);
    let ar = m.header.arcount.saturating_sub(1);
    if let Some(d) = packet.get_mut(10..12) {
        d.copy_from_slice(&ar.to_be_bytes());
    }
}

/// One answer record for [`build_response`]: its owner is the question's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// TYPE.
    pub rtype: u16,
    /// TTL in seconds.
    pub ttl: u32,
    /// RDATA, uncompressed.
    pub rdata: Vec<u8>,
}

/// Builds a response to `query` (already parsed as `parsed`, with exactly one
/// question): the query's id, opcode, RD and CD, RA set, AA when `authoritative`,
/// the question copied, and `answers` owned by the question name (compressed as a
/// pointer to offset 12). The query's OPT record is not echoed.
pub fn build_response(
    query: &[u8],
    parsed: &Message,
    rcode: u8,
    authoritative: bool,
    answers: &[Answer],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(CLASSIC_UDP_LEN);
    let h = &parsed.header;
    let mut flags = flag::QR | flag::RA | (h.flags & (0x7800 | flag::RD | flag::CD));
    if authoritative {
        flags |= flag::AA;
    }
    flags |= u16::from(rcode & 0xF);
    let question = query.get(HEADER_LEN..parsed.question_end).unwrap_or(&[]);
    let qdcount: u16 = if question.is_empty() { 0 } else { 1 };
    let ancount = u16::try_from(answers.len()).unwrap_or(0);
    for w in [h.id, flags, qdcount, ancount, 0, 0] {
        out.extend_from_slice(&w.to_be_bytes());
    }
    out.extend_from_slice(question);
    if ancount > 0 {
        for a in answers {
            out.extend_from_slice(&[0xC0, 0x0C]);
            out.extend_from_slice(&a.rtype.to_be_bytes());
            out.extend_from_slice(&CLASS_IN.to_be_bytes());
            out.extend_from_slice(&a.ttl.to_be_bytes());
            out.extend_from_slice(&u16::try_from(a.rdata.len()).unwrap_or(0).to_be_bytes());
            out.extend_from_slice(&a.rdata);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply for example.com A with one answer, compressed, and an OPT record.
    const REPLY: &[u8] = &[
        0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 1, // header
        7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm', 0, 0, 1, 0, 1, // q
        0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 93, 184, 216, 34, // answer
        0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0, // OPT, 1232 bytes
    ];

    #[test]
    fn parses_a_real_reply() {
        let m = Message::parse(REPLY).unwrap();
        assert_eq!(m.header.id, 0x1234);
        assert!(m.header.is_response());
        let q = m.question().unwrap();
        assert_eq!(q.name.to_dotted(), "example.com");
        assert_eq!((q.qtype, q.qclass), (rtype::A, CLASS_IN));
        assert_eq!(m.records.len(), 2);
        assert_eq!(m.records[0].ttl, 3600);
        assert_eq!(&REPLY[m.records[0].rdata.clone()], &[93, 184, 216, 34]);
        assert_eq!(m.udp_limit(), 1232);
    }

    #[test]
    fn counts_larger_than_the_data_are_refused() {
        let mut r = REPLY.to_vec();
        r[7] = 2; // two answers, one present
        assert_eq!(Message::parse(&r), Err(MessageError::Truncated));
        let mut r = REPLY.to_vec();
        r[5] = 0xff;
        assert_eq!(Message::parse(&r), Err(MessageError::Truncated));
        for cut in 0..REPLY.len() {
            assert!(Message::parse(&REPLY[..cut]).is_err(), "cut at {cut}");
        }
    }

    /// A reply for example.com A with `n` answers (compressed, 16 bytes each).
    fn many(n: u16) -> Vec<u8> {
        let mut r = REPLY[..29].to_vec();
        r[6..8].copy_from_slice(&n.to_be_bytes());
        r[10..12].copy_from_slice(&[0, 0]);
        for i in 0..n {
            r.extend_from_slice(&[0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 93, 184]);
            r.extend_from_slice(&i.to_be_bytes());
        }
        r
    }

    #[test]
    fn a_message_with_too_many_records_is_checked_but_not_kept() {
        let m = Message::parse(&many(MAX_RECORDS as u16)).unwrap();
        assert_eq!(m.records.len(), MAX_RECORDS);
        let r = many(MAX_RECORDS as u16 + 1);
        assert_eq!(Message::parse(&r), Err(MessageError::TooComplex));
        // The head: header and question, no records, all of them still readable.
        let h = Message::parse_head(&r).unwrap();
        assert_eq!(h.question().unwrap().name.to_dotted(), "example.com");
        assert!(h.records.is_empty());
        let refs: Vec<RecordRef> = h.record_refs(&r).map(Result::unwrap).collect();
        assert_eq!(refs.len(), MAX_RECORDS + 1);
        assert_eq!(&r[refs[MAX_RECORDS].rdata.clone()], &[93, 184, 0, 64]);
        assert_eq!(refs[0].ttl, 3600);
        // A broken one is still an error of its own kind, not "too complex".
        for cut in [r.len() - 1, r.len() - 20, 40] {
            assert_eq!(Message::parse(&r[..cut]), Err(MessageError::Truncated));
            assert_eq!(Message::parse_head(&r[..cut]), Err(MessageError::Truncated));
        }
        // More than MAX_QUESTIONS questions (the same one, compressed).
        let mut q = REPLY[..29].to_vec();
        q[4..6].copy_from_slice(&(MAX_QUESTIONS as u16 + 1).to_be_bytes());
        q[6..12].copy_from_slice(&[0; 6]);
        for _ in 0..MAX_QUESTIONS {
            q.extend_from_slice(&[0xC0, 0x0C, 0, 1, 0, 1]);
        }
        assert_eq!(Message::parse(&q), Err(MessageError::TooComplex));
        assert_eq!(Message::parse_head(&q), Err(MessageError::TooComplex));
    }

    #[test]
    fn parsing_a_large_message_keeps_little_of_it() {
        // 4 KiB of 16-byte records: 254 of them, each ~300 bytes once parsed.
        let r = many(254);
        assert!(r.len() <= 4096);
        let (m, rise) = xenlet_testalloc::peak_during(|| Message::parse(&r));
        assert_eq!(m, Err(MessageError::TooComplex));
        assert!(rise < 8 * 1024, "parsing took {rise} bytes at once");
        let (m, rise) = xenlet_testalloc::peak_during(|| Message::parse_head(&r));
        assert!(m.is_ok());
        assert!(rise < 1024, "{rise}");
    }

    #[test]
    fn negative_ttl_is_min_of_soa_ttl_and_minimum() {
        let mut r = alloc::vec![0xab, 0xcd, 0x81, 0x83, 0, 1, 0, 0, 0, 1, 0, 0];
        r.extend_from_slice(b"\x04nope\x03com\x00\x00\x01\x00\x01");
        r.extend_from_slice(b"\xc0\x11\x00\x06\x00\x01\x00\x00\x03\x84"); // com SOA, TTL 900
        let rdata: &[u8] = b"\x01a\x04gtld\xc0\x11\x05nstld\xc0\x11\
            \x00\x00\x00\x01\x00\x00\x07\x08\x00\x00\x03\x84\x00\x09\x3a\x80\x00\x00\x01\x2c";
        r.extend_from_slice(&u16::try_from(rdata.len()).unwrap().to_be_bytes());
        r.extend_from_slice(rdata);
        let m = Message::parse(&r).unwrap();
        assert_eq!(m.header.rcode(), rcode::NXDOMAIN);
        assert_eq!(m.soa_negative_ttl(&r), Some(300));
    }

    #[test]
    fn strips_a_final_opt() {
        let mut r = REPLY.to_vec();
        strip_final_opt(&mut r);
        assert_eq!(r.len(), REPLY.len() - 11);
        let m = Message::parse(&r).unwrap();
        assert_eq!(m.header.arcount, 0);
        assert_eq!(m.records.len(), 1);
        // Without OPT nothing changes.
        let before = r.clone();
        strip_final_opt(&mut r);
        assert_eq!(r, before);
    }

    #[test]
    fn builds_an_answer() {
        let query: &[u8] = &[
            0x55, 0x66, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 4, b'l', b'a', b'n', b'1', 3, b'l',
            b'a', b'n', 0, 0, 1, 0, 1,
        ];
        let q = Message::parse(query).unwrap();
        let a = Answer {
            rtype: rtype::A,
            ttl: 0,
            rdata: alloc::vec![192, 168, 1, 100],
        };
        let out = build_response(query, &q, rcode::NOERROR, true, &[a]);
        let m = Message::parse(&out).unwrap();
        assert_eq!(m.header.id, 0x5566);
        assert_eq!(m.header.flags, 0x8580);
        assert_eq!(m.records[0].name.to_dotted(), "lan1.lan");
        assert_eq!(&out[m.records[0].rdata.clone()], &[192, 168, 1, 100]);
    }
}
