//! Network ring entries (xen/include/public/io/netif.h), x86_64 layout, by copy.
//!
//! `netif_tx_request` (12 bytes): gref u32 @0, offset u16 @4, flags u16 @6, id u16 @8,
//! size u16 @10. `netif_tx_response` (4): id u16 @0, status i16 @2.
//! `netif_rx_request` (8): id u16 @0, gref u32 @4. `netif_rx_response` (8): id u16 @0,
//! offset u16 @2, flags u16 @4, status i16 @6 (bytes received when positive).
//! `netif_extra_info` (8): type u8 @0, flags u8 @1, gso {size u16 @2, type u8 @4,
//! features u16 @6}. Ring entries are 12 bytes (TX) and 8 bytes (RX).

/// TX ring entry size.
pub const TX_ENTRY_BYTES: usize = 12;
/// RX ring entry size.
pub const RX_ENTRY_BYTES: usize = 8;

/// `NETTXF_csum_blank`: the checksum is to be filled in (offload).
pub const NETTXF_CSUM_BLANK: u16 = 1;
/// `NETTXF_data_validated`: the checksum is known good.
pub const NETTXF_DATA_VALIDATED: u16 = 2;
/// `NETTXF_more_data`: the packet continues in the next request.
pub const NETTXF_MORE_DATA: u16 = 4;
/// `NETTXF_extra_info`: an extra-info slot follows.
pub const NETTXF_EXTRA_INFO: u16 = 8;

/// `NETRXF_data_validated`.
pub const NETRXF_DATA_VALIDATED: u16 = 1;
/// `NETRXF_csum_blank`.
pub const NETRXF_CSUM_BLANK: u16 = 2;
/// `NETRXF_more_data`.
pub const NETRXF_MORE_DATA: u16 = 4;
/// `NETRXF_extra_info`.
pub const NETRXF_EXTRA_INFO: u16 = 8;

/// `NETIF_RSP_OKAY`.
pub const RSP_OKAY: i16 = 0;
/// `NETIF_RSP_ERROR`.
pub const RSP_ERROR: i16 = -1;
/// `NETIF_RSP_DROPPED`.
pub const RSP_DROPPED: i16 = -2;
/// `NETIF_RSP_NULL` (padding response for an extra-info slot).
pub const RSP_NULL: i16 = 1;

/// `XEN_NETIF_EXTRA_TYPE_GSO`.
pub const EXTRA_TYPE_GSO: u8 = 1;
/// `XEN_NETIF_GSO_TYPE_TCPV4`.
pub const GSO_TYPE_TCPV4: u8 = 1;
/// `XEN_NETIF_GSO_TYPE_TCPV6`.
pub const GSO_TYPE_TCPV6: u8 = 2;
/// `XEN_NETIF_EXTRA_FLAG_MORE`: another extra-info slot follows.
pub const EXTRA_FLAG_MORE: u8 = 1;

/// A transmit request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxRequest {
    /// Grant of the page holding the data.
    pub gref: u32,
    /// Offset of the data in the page.
    pub offset: u16,
    /// `NETTXF_*`.
    pub flags: u16,
    /// Echoed in the response.
    pub id: u16,
    /// First slot: the whole packet's size; later slots: this slot's size.
    pub size: u16,
}

impl TxRequest {
    /// Encodes for the ring.
    pub fn encode(&self) -> [u8; TX_ENTRY_BYTES] {
        let mut e = [0u8; TX_ENTRY_BYTES];
        e[0..4].copy_from_slice(&self.gref.to_le_bytes());
        e[4..6].copy_from_slice(&self.offset.to_le_bytes());
        e[6..8].copy_from_slice(&self.flags.to_le_bytes());
        e[8..10].copy_from_slice(&self.id.to_le_bytes());
        e[10..12].copy_from_slice(&self.size.to_le_bytes());
        e
    }
}

/// Encodes a GSO extra-info slot (segment size `mss`, `gso_type`
/// [`GSO_TYPE_TCPV4`] or [`GSO_TYPE_TCPV6`]).
pub fn encode_gso_extra(mss: u16, gso_type: u8) -> [u8; TX_ENTRY_BYTES] {
    let mut e = [0u8; TX_ENTRY_BYTES];
    e[0] = EXTRA_TYPE_GSO;
    e[2..4].copy_from_slice(&mss.to_le_bytes());
    e[4] = gso_type;
    e
}

/// Encodes a GSO extra-info slot as an RX *response* (the backend's side: it
/// follows a GSO packet's first data response, which carries `NETRXF_extra_info`).
pub fn encode_rx_gso_extra(mss: u16, gso_type: u8) -> [u8; RX_ENTRY_BYTES] {
    let mut e = [0u8; RX_ENTRY_BYTES];
    e.copy_from_slice(&encode_gso_extra(mss, gso_type)[..RX_ENTRY_BYTES]);
    e
}

/// The GSO type of a TCP packet in an Ethernet frame, from its EtherType: IPv4
/// ([`GSO_TYPE_TCPV4`]) or IPv6 ([`GSO_TYPE_TCPV6`]); `None` for anything else.
pub fn gso_type_of(frame: &[u8]) -> Option<u8> {
    match frame.get(12..14)? {
        [0x08, 0x00] => Some(GSO_TYPE_TCPV4),
        [0x86, 0xdd] => Some(GSO_TYPE_TCPV6),
        _ => None,
    }
}

/// A transmit response, decoded from a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxResponse {
    /// Request id.
    pub id: u16,
    /// `NETIF_RSP_*`.
    pub status: i16,
}

/// Decodes a transmit response.
pub fn decode_tx_response(b: &[u8; 4]) -> TxResponse {
    TxResponse {
        id: u16::from_le_bytes([b[0], b[1]]),
        status: i16::from_le_bytes([b[2], b[3]]),
    }
}

/// Encodes a receive request: buffer `id` in the page granted as `gref`.
pub fn encode_rx_request(id: u16, gref: u32) -> [u8; RX_ENTRY_BYTES] {
    let mut e = [0u8; RX_ENTRY_BYTES];
    e[0..2].copy_from_slice(&id.to_le_bytes());
    e[4..8].copy_from_slice(&gref.to_le_bytes());
    e
}

/// A receive response, decoded from a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxResponse {
    /// Buffer id.
    pub id: u16,
    /// Offset of the data in the buffer's page.
    pub offset: u16,
    /// `NETRXF_*`.
    pub flags: u16,
    /// Bytes received (> 0) or a negative `NETIF_RSP_*`.
    pub status: i16,
}

/// Decodes a receive response.
pub fn decode_rx_response(b: &[u8; RX_ENTRY_BYTES]) -> RxResponse {
    RxResponse {
        id: u16::from_le_bytes([b[0], b[1]]),
        offset: u16::from_le_bytes([b[2], b[3]]),
        flags: u16::from_le_bytes([b[4], b[5]]),
        status: i16::from_le_bytes([b[6], b[7]]),
    }
}

/// An extra-info slot of a received packet (`struct netif_extra_info`, written over
/// a response slot after the packet's first data slot), decoded from a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxExtra {
    /// `XEN_NETIF_EXTRA_TYPE_*`.
    pub kind: u8,
    /// Another extra-info slot follows.
    pub more: bool,
    /// GSO: the segment size the packet was built from.
    pub gso_size: u16,
    /// GSO: `XEN_NETIF_GSO_TYPE_*`.
    pub gso_type: u8,
}

/// Decodes an extra-info slot of the RX ring.
pub fn decode_rx_extra(b: &[u8; RX_ENTRY_BYTES]) -> RxExtra {
    RxExtra {
        kind: b[0],
        more: b[1] & EXTRA_FLAG_MORE != 0,
        gso_size: u16::from_le_bytes([b[2], b[3]]),
        gso_type: b[4],
    }
}

impl RxExtra {
    /// Whether the extra is one this frontend asked for: GSO of TCP over IPv4 or
    /// IPv6 with a segment size. Anything else makes the packet unusable.
    pub fn check(&self) -> Result<(), &'static str> {
        match self.kind {
            EXTRA_TYPE_GSO if self.gso_size == 0 => Err("GSO extra with segment size 0"),
            EXTRA_TYPE_GSO if matches!(self.gso_type, GSO_TYPE_TCPV4 | GSO_TYPE_TCPV6) => Ok(()),
            EXTRA_TYPE_GSO => Err("GSO extra of an unknown type"),
            _ => Err("extra info of a type not requested"),
        }
    }
}

impl RxResponse {
    /// Checks a response against the buffer it names: the data must lie within the
    /// 4 KiB page. Returns the (offset, length) of the data.
    pub fn data_range(&self) -> Result<(usize, usize), &'static str> {
        if self.status < 0 {
            return Err("error status");
        }
        let (off, len) = (usize::from(self.offset), self.status as usize);
        if off + len > 4096 {
            return Err("data beyond the buffer");
        }
        Ok((off, len))
    }
}

/// `XEN_NETIF_EXTRA_TYPE_MAX`: extra-info types are 1 up to this, exclusive.
pub const EXTRA_TYPE_MAX: u8 = 6;

// The backend's side: requests decoded, responses encoded.

/// Decodes a transmit request (the backend's side).
pub fn decode_tx_request(b: &[u8; TX_ENTRY_BYTES]) -> TxRequest {
    TxRequest {
        gref: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        offset: u16::from_le_bytes([b[4], b[5]]),
        flags: u16::from_le_bytes([b[6], b[7]]),
        id: u16::from_le_bytes([b[8], b[9]]),
        size: u16::from_le_bytes([b[10], b[11]]),
    }
}

/// Encodes a transmit response.
pub fn encode_tx_response(id: u16, status: i16) -> [u8; 4] {
    let mut e = [0u8; 4];
    e[0..2].copy_from_slice(&id.to_le_bytes());
    e[2..4].copy_from_slice(&status.to_le_bytes());
    e
}

/// An extra-info slot of a transmitted packet (`struct netif_extra_info` in a TX
/// request slot), decoded from a copy.
pub fn decode_tx_extra(b: &[u8; TX_ENTRY_BYTES]) -> RxExtra {
    let mut e = [0u8; RX_ENTRY_BYTES];
    e.copy_from_slice(&b[..RX_ENTRY_BYTES]);
    decode_rx_extra(&e)
}

/// Decodes a receive request: (buffer id, grant reference).
pub fn decode_rx_request(b: &[u8; RX_ENTRY_BYTES]) -> (u16, u32) {
    (
        u16::from_le_bytes([b[0], b[1]]),
        u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
    )
}

/// Encodes a receive response.
pub fn encode_rx_response(r: &RxResponse) -> [u8; RX_ENTRY_BYTES] {
    let mut e = [0u8; RX_ENTRY_BYTES];
    e[0..2].copy_from_slice(&r.id.to_le_bytes());
    e[2..4].copy_from_slice(&r.offset.to_le_bytes());
    e[4..6].copy_from_slice(&r.flags.to_le_bytes());
    e[6..8].copy_from_slice(&r.status.to_le_bytes());
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_layout() {
        let r = TxRequest {
            gref: 0x0a0b0c0d,
            offset: 0x10,
            flags: NETTXF_CSUM_BLANK | NETTXF_MORE_DATA,
            id: 7,
            size: 1514,
        };
        assert_eq!(
            r.encode(),
            [0x0d, 0x0c, 0x0b, 0x0a, 0x10, 0, 5, 0, 7, 0, 0xea, 0x05]
        );
        assert_eq!(
            decode_tx_response(&[7, 0, 0xff, 0xff]),
            TxResponse {
                id: 7,
                status: RSP_ERROR
            }
        );
        let g = encode_gso_extra(1448, GSO_TYPE_TCPV4);
        assert_eq!((g[0], g[4]), (EXTRA_TYPE_GSO, GSO_TYPE_TCPV4));
        assert_eq!(u16::from_le_bytes([g[2], g[3]]), 1448);
    }

    #[test]
    fn rx_layout_and_range_checks() {
        assert_eq!(encode_rx_request(3, 99), [3, 0, 0, 0, 99, 0, 0, 0]);
        let r = decode_rx_response(&[3, 0, 0x10, 0, 1, 0, 0xdc, 0x05]);
        assert_eq!(
            r,
            RxResponse {
                id: 3,
                offset: 16,
                flags: NETRXF_DATA_VALIDATED,
                status: 1500
            }
        );
        assert_eq!(r.data_range(), Ok((16, 1500)));
        let bad = RxResponse {
            id: 0,
            offset: 4000,
            flags: 0,
            status: 200,
        };
        assert_eq!(bad.data_range(), Err("data beyond the buffer"));
        let err = RxResponse {
            id: 0,
            offset: 0,
            flags: 0,
            status: RSP_DROPPED,
        };
        assert!(err.data_range().is_err());
    }

    #[test]
    fn backend_side_round_trips_with_the_frontend_side() {
        let r = TxRequest {
            gref: 77,
            offset: 12,
            flags: NETTXF_MORE_DATA,
            id: 300,
            size: 9000,
        };
        assert_eq!(decode_tx_request(&r.encode()), r);
        assert_eq!(
            decode_tx_response(&encode_tx_response(300, RSP_DROPPED)),
            TxResponse {
                id: 300,
                status: RSP_DROPPED
            }
        );
        assert_eq!(
            decode_rx_request(&encode_rx_request(5, 0xdead)),
            (5, 0xdead)
        );
        let rsp = RxResponse {
            id: 5,
            offset: 0,
            flags: NETRXF_MORE_DATA,
            status: 4096,
        };
        assert_eq!(decode_rx_response(&encode_rx_response(&rsp)), rsp);
        let x = decode_tx_extra(&encode_gso_extra(1448, GSO_TYPE_TCPV4));
        assert_eq!(
            (x.kind, x.gso_size, x.gso_type, x.more),
            (EXTRA_TYPE_GSO, 1448, GSO_TYPE_TCPV4, false)
        );
    }
}

/// What a received frame's sender vouches for of its TCP/UDP checksum: the
/// `NETRXF_*` flags a backend puts on the frames it gives a frontend, and the
/// `NETTXF_*` flags a frontend puts on the frames it gives a backend (receive
/// checksum offload, on by default in netif.h). Both drivers hand it over as it is,
/// and the network stack takes it as its own (`xenlet_net::link::RxChecksum`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxChecksum {
    /// Nothing: the receiver checks it.
    Unknown,
    /// Checked and right (`data_validated`).
    Validated,
    /// Never computed (`csum_blank`): the field holds only the pseudo-header sum; the
    /// data is good (it comes from the sender's own stack) and the checksum must be
    /// completed before the packet leaves the host.
    Blank,
}

impl RxChecksum {
    /// From a first RX slot's `NETRXF_*` flags.
    pub fn from_flags(flags: u16) -> Self {
        if flags & NETRXF_CSUM_BLANK != 0 {
            RxChecksum::Blank
        } else if flags & NETRXF_DATA_VALIDATED != 0 {
            RxChecksum::Validated
        } else {
            RxChecksum::Unknown
        }
    }
}

/// A network link's counters, as `ip -s link` shows them: what the netfront keeps and
/// what the network stack reads of any link (`xenlet_net::link::LinkStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Received packets dropped (errors, oversize, no room).
    pub rx_dropped: u64,
    /// Receive errors reported by the link (the backend), and packets with unusable
    /// extra info.
    pub rx_errors: u64,
    /// Packets received whole as GSO packets (not cut into MTU-sized frames by the
    /// sender).
    pub rx_gso: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Transmit errors reported by the link (the backend).
    pub tx_errors: u64,
}

/// Packet counters of one of a link's queues.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Packets received on the queue.
    pub rx_packets: u64,
    /// Packets sent on the queue (answered OK by the backend).
    pub tx_packets: u64,
}
