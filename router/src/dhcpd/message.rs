//! The BOOTP/DHCP message: a checked view of the fixed header and the reply writer.
//!
//! RFC 2131 §2 figure 1 (the 236-byte fixed part, then the magic cookie
//! 99.130.83.99 and the options), RFC 2131 §3.1/§4.3.1 (what a server sets in its
//! replies), RFC 1542 §3.2 (the broadcast flag). Field offsets are kept in one
//! place as in smoltcp's `wire` modules; the options are read by
//! [`super::options::Options`].

use super::options::{code, OptionWriter, Options, OptionsError};
use alloc::vec::Vec;
use core::net::Ipv4Addr;

mod field {
    use core::ops::Range;
    pub const OP: usize = 0;
    pub const HTYPE: usize = 1;
    pub const HLEN: usize = 2;
    pub const XID: Range<usize> = 4..8;
    pub const SECS: Range<usize> = 8..10;
    pub const FLAGS: Range<usize> = 10..12;
    pub const CIADDR: Range<usize> = 12..16;
    pub const YIADDR: Range<usize> = 16..20;
    pub const SIADDR: Range<usize> = 20..24;
    pub const GIADDR: Range<usize> = 24..28;
    pub const CHADDR: Range<usize> = 28..44;
    pub const SNAME: Range<usize> = 44..108;
    pub const FILE: Range<usize> = 108..236;
    pub const MAGIC: Range<usize> = 236..240;
    pub const OPTIONS: usize = 240;
}

/// The longest client id (option 61) taken: what the lease file keeps.
pub const MAX_CLIENT_ID: usize = 255;

/// The magic cookie that starts the options (RFC 2131 §3).
pub const MAGIC_COOKIE: [u8; 4] = [99, 130, 83, 99];
/// BOOTREQUEST.
pub const OP_REQUEST: u8 = 1;
/// BOOTREPLY.
pub const OP_REPLY: u8 = 2;
/// The broadcast bit of `flags` (RFC 1542 §3.2).
pub const FLAG_BROADCAST: u16 = 0x8000;
/// Smallest BOOTP message on the wire (RFC 1542 §2.1: 300 bytes); replies are
/// padded to it since some old clients drop shorter ones.
pub const MIN_REPLY_LEN: usize = 300;
/// The largest reply when the client does not say otherwise (RFC 2131 §2: 576-byte
/// datagrams, less 28 bytes of IPv4 and UDP headers).
pub const DEFAULT_MAX_MESSAGE: usize = 576 - 28;

/// DHCP message types (option 53, RFC 2132 §9.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageType {
    /// DHCPDISCOVER.
    Discover,
    /// DHCPOFFER.
    Offer,
    /// DHCPREQUEST.
    Request,
    /// DHCPDECLINE.
    Decline,
    /// DHCPACK.
    Ack,
    /// DHCPNAK.
    Nak,
    /// DHCPRELEASE.
    Release,
    /// DHCPINFORM.
    Inform,
}

impl MessageType {
    /// From option 53's value.
    pub fn from_u8(v: u8) -> Option<MessageType> {
        Some(match v {
            1 => MessageType::Discover,
            2 => MessageType::Offer,
            3 => MessageType::Request,
            4 => MessageType::Decline,
            5 => MessageType::Ack,
            6 => MessageType::Nak,
            7 => MessageType::Release,
            8 => MessageType::Inform,
            _ => return None,
        })
    }

    /// Option 53's value.
    pub fn to_u8(self) -> u8 {
        match self {
            MessageType::Discover => 1,
            MessageType::Offer => 2,
            MessageType::Request => 3,
            MessageType::Decline => 4,
            MessageType::Ack => 5,
            MessageType::Nak => 6,
            MessageType::Release => 7,
            MessageType::Inform => 8,
        }
    }
}

/// Why a packet is not a DHCP request the server can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageError {
    /// Shorter than the fixed header and cookie.
    Truncated,
    /// Not a BOOTREQUEST, no magic cookie, or `hlen` over 16.
    NotRequest,
    /// The options are malformed.
    Options(OptionsError),
    /// No option 53, or an unknown message type.
    NoMessageType,
}

impl From<OptionsError> for MessageError {
    fn from(e: OptionsError) -> Self {
        MessageError::Options(e)
    }
}

fn ipv4_at(b: &[u8], r: core::ops::Range<usize>) -> Ipv4Addr {
    let a: [u8; 4] = b.get(r).and_then(|s| s.try_into().ok()).unwrap_or([0; 4]);
    Ipv4Addr::from(a)
}

/// The client's hardware address: `htype`, `hlen` and `chaddr`'s first `hlen` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HwAddr {
    /// ARP hardware type (1 = Ethernet).
    pub htype: u8,
    len: u8,
    bytes: [u8; 16],
}

impl HwAddr {
    /// An address of type `htype`; `None` if longer than 16 bytes.
    pub fn new(htype: u8, addr: &[u8]) -> Option<HwAddr> {
        let len = u8::try_from(addr.len()).ok().filter(|l| *l <= 16)?;
        let mut bytes = [0; 16];
        bytes.get_mut(..addr.len())?.copy_from_slice(addr);
        Some(HwAddr { htype, len, bytes })
    }

    /// An Ethernet address.
    pub fn ethernet(mac: [u8; 6]) -> HwAddr {
        let mut bytes = [0; 16];
        if let Some(d) = bytes.get_mut(..6) {
            d.copy_from_slice(&mac);
        }
        HwAddr {
            htype: 1,
            len: 6,
            bytes,
        }
    }

    /// The address bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// The Ethernet address, if this is one.
    pub fn as_ethernet(&self) -> Option<[u8; 6]> {
        if self.htype != 1 {
            return None;
        }
        self.as_bytes().try_into().ok()
    }
}

/// A parsed client message (BOOTREQUEST with its DHCP options).
#[derive(Clone, Debug)]
pub struct Request {
    /// DHCP message type.
    pub kind: MessageType,
    /// Transaction id.
    pub xid: u32,
    /// Seconds since the client began.
    pub secs: u16,
    /// The flags field (broadcast bit).
    pub flags: u16,
    /// Client IP address (set when bound, renewing, rebinding, informing).
    pub ciaddr: Ipv4Addr,
    /// Relay agent address.
    pub giaddr: Ipv4Addr,
    /// Client hardware address.
    pub chaddr: HwAddr,
    /// The raw 16-byte `chaddr` field, echoed in replies.
    pub chaddr_field: [u8; 16],
    /// `hlen` as sent (echoed in replies).
    pub hlen: u8,
    /// All options.
    pub options: Options,
}

impl Request {
    /// Parses a UDP payload received on port 67.
    pub fn parse(b: &[u8]) -> Result<Request, MessageError> {
        if b.len() < field::OPTIONS {
            return Err(MessageError::Truncated);
        }
        let get = |i: usize| b.get(i).copied().unwrap_or(0);
        let arr2 = |r: core::ops::Range<usize>| -> [u8; 2] {
            b.get(r).and_then(|s| s.try_into().ok()).unwrap_or([0; 2])
        };
        if get(field::OP) != OP_REQUEST || b.get(field::MAGIC) != Some(&MAGIC_COOKIE[..]) {
            return Err(MessageError::NotRequest);
        }
        let htype = get(field::HTYPE);
        let hlen = get(field::HLEN);
        let chaddr_field: [u8; 16] = b
            .get(field::CHADDR)
            .and_then(|s| s.try_into().ok())
            .ok_or(MessageError::Truncated)?;
        let chaddr = chaddr_field
            .get(..usize::from(hlen))
            .and_then(|a| HwAddr::new(htype, a))
            .ok_or(MessageError::NotRequest)?;
        let options = Options::parse(
            b.get(field::OPTIONS..).unwrap_or(&[]),
            b.get(field::FILE).unwrap_or(&[]),
            b.get(field::SNAME).unwrap_or(&[]),
        )?;
        let kind = match options.get(code::MESSAGE_TYPE) {
            Some([t]) => MessageType::from_u8(*t).ok_or(MessageError::NoMessageType)?,
            _ => return Err(MessageError::NoMessageType),
        };
        let xid: [u8; 4] = b
            .get(field::XID)
            .and_then(|s| s.try_into().ok())
            .unwrap_or([0; 4]);
        Ok(Request {
            kind,
            xid: u32::from_be_bytes(xid),
            secs: u16::from_be_bytes(arr2(field::SECS)),
            flags: u16::from_be_bytes(arr2(field::FLAGS)),
            ciaddr: ipv4_at(b, field::CIADDR),
            giaddr: ipv4_at(b, field::GIADDR),
            chaddr,
            chaddr_field,
            hlen,
            options,
        })
    }

    /// Option 61 if present and non-empty (any type, RFC 2132 §9.14).
    ///
    /// One longer than 255 bytes (pieces joined as RFC 3396 allows) is ignored, and
    /// the client is known by its hardware address: every lease keeps its client id,
    /// and the lease file (which holds at most 255) would not take it back.
    pub fn client_id(&self) -> Option<&[u8]> {
        self.options
            .get(code::CLIENT_ID)
            .filter(|v| !v.is_empty() && v.len() <= MAX_CLIENT_ID)
    }

    /// Option 50.
    pub fn requested_ip(&self) -> Option<Ipv4Addr> {
        self.options.get_ipv4(code::REQUESTED_IP)
    }

    /// Option 54.
    pub fn server_id(&self) -> Option<Ipv4Addr> {
        self.options.get_ipv4(code::SERVER_ID)
    }

    /// Whether the client asked for broadcast replies.
    pub fn wants_broadcast(&self) -> bool {
        self.flags & FLAG_BROADCAST != 0
    }

    /// The largest reply the client accepts (option 57, at least 576-28 bytes).
    pub fn max_message_size(&self) -> usize {
        match self.options.get_u16(code::MAX_MESSAGE_SIZE) {
            // Option 57 counts the IP and UDP headers too; cap at a 1500-byte MTU.
            Some(v) => usize::from(v)
                .saturating_sub(28)
                .clamp(DEFAULT_MAX_MESSAGE, 1500 - 28),
            None => DEFAULT_MAX_MESSAGE,
        }
    }
}

/// Writes a BOOTREPLY for `req`: the fixed header, the cookie, and the options
/// written by `fill`, padded to [`MIN_REPLY_LEN`].
pub fn build_reply(
    req: &Request,
    yiaddr: Ipv4Addr,
    ciaddr: Ipv4Addr,
    options: OptionWriter,
) -> Vec<u8> {
    let mut b = alloc::vec![0u8; field::OPTIONS];
    let mut set = |r: core::ops::Range<usize>, v: &[u8]| {
        if let Some(d) = b.get_mut(r) {
            d.copy_from_slice(v);
        }
    };
    set(field::OP..field::OP + 1, &[OP_REPLY]);
    set(field::HTYPE..field::HTYPE + 1, &[req.chaddr.htype]);
    set(field::HLEN..field::HLEN + 1, &[req.hlen]);
    set(field::XID, &req.xid.to_be_bytes());
    set(field::FLAGS, &(req.flags & FLAG_BROADCAST).to_be_bytes());
    set(field::CIADDR, &ciaddr.octets());
    set(field::YIADDR, &yiaddr.octets());
    // siaddr is the next server for booting; we serve no boot files.
    set(field::SIADDR, &[0; 4]);
    set(field::GIADDR, &req.giaddr.octets());
    set(field::CHADDR, &req.chaddr_field);
    set(field::MAGIC, &MAGIC_COOKIE);
    b.extend_from_slice(&options.finish());
    if b.len() < MIN_REPLY_LEN {
        b.resize(MIN_REPLY_LEN, 0);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u8) -> Vec<u8> {
        let mut b = alloc::vec![0u8; 240];
        b[0] = 1;
        b[1] = 1;
        b[2] = 6;
        b[4..8].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        b[10] = 0x80;
        b[28..34].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        b[236..240].copy_from_slice(&MAGIC_COOKIE);
        b.extend_from_slice(&[53, 1, kind, 255]);
        b
    }

    #[test]
    fn parses_the_fixed_header() {
        let r = Request::parse(&header(1)).unwrap();
        assert_eq!(r.kind, MessageType::Discover);
        assert_eq!(r.xid, 0xdeadbeef);
        assert!(r.wants_broadcast());
        assert_eq!(r.chaddr.as_ethernet(), Some([2, 0, 0, 0, 0, 1]));
    }

    #[test]
    fn rejects_non_requests() {
        let mut b = header(1);
        b[0] = 2;
        assert_eq!(Request::parse(&b).unwrap_err(), MessageError::NotRequest);
        let mut b = header(1);
        b[236] = 0;
        assert_eq!(Request::parse(&b).unwrap_err(), MessageError::NotRequest);
        let mut b = header(1);
        b[2] = 17;
        assert_eq!(Request::parse(&b).unwrap_err(), MessageError::NotRequest);
        assert_eq!(
            Request::parse(&header(1)[..239]).unwrap_err(),
            MessageError::Truncated
        );
        assert_eq!(
            Request::parse(&header(9)).unwrap_err(),
            MessageError::NoMessageType
        );
    }
}
