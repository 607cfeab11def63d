//! Block I/O ring entries (xen/include/public/io/blkif.h), x86_64 layout, encoded
//! and decoded by copy: requests are built in a local buffer and copied into the
//! ring; responses are copied out once and then checked.
//!
//! `blkif_request` (112 bytes): operation u8 @0, nr_segments u8 @1, handle u16 @2,
//! id u64 @8, sector_number u64 @16, seg[11] @24 (gref u32, first_sect u8,
//! last_sect u8, pad u16). `blkif_request_indirect` (64 bytes): operation u8 @0,
//! indirect_op u8 @1, nr_segments u16 @2, id u64 @8, sector_number u64 @16, handle
//! u16 @24, indirect_grefs[8] u32 @28. `blkif_request_discard`: operation @0,
//! flag @1, handle @2, id @8, sector_number @16, nr_sectors u64 @24.
//! `blkif_response` (16 bytes): id u64 @0, operation u8 @8, status i16 @10.

/// `BLKIF_OP_READ`.
pub const OP_READ: u8 = 0;
/// `BLKIF_OP_WRITE`.
pub const OP_WRITE: u8 = 1;
/// `BLKIF_OP_WRITE_BARRIER`.
pub const OP_WRITE_BARRIER: u8 = 2;
/// `BLKIF_OP_FLUSH_DISKCACHE`.
pub const OP_FLUSH_DISKCACHE: u8 = 3;
/// `BLKIF_OP_DISCARD`.
pub const OP_DISCARD: u8 = 5;
/// `BLKIF_OP_INDIRECT`.
pub const OP_INDIRECT: u8 = 6;
/// `BLKIF_MAX_SEGMENTS_PER_REQUEST`.
pub const MAX_SEGMENTS: usize = 11;
/// `BLKIF_MAX_INDIRECT_PAGES_PER_REQUEST`.
pub const MAX_INDIRECT_PAGES: usize = 8;
/// Segments per indirect page (4096 / sizeof(blkif_request_segment)).
pub const SEGMENTS_PER_INDIRECT_PAGE: usize = 512;
/// Ring entry size (the request union's largest member).
pub const ENTRY_BYTES: usize = 112;
/// Response size.
pub const RESPONSE_BYTES: usize = 16;
/// `BLKIF_RSP_OKAY`.
pub const RSP_OKAY: i16 = 0;
/// `BLKIF_RSP_ERROR`.
pub const RSP_ERROR: i16 = -1;
/// `BLKIF_RSP_EOPNOTSUPP`.
pub const RSP_EOPNOTSUPP: i16 = -2;
/// `VDISK_READONLY` in the backend's `info`.
pub const VDISK_READONLY: u32 = 0x4;
/// `VDISK_REMOVABLE`.
pub const VDISK_REMOVABLE: u32 = 0x2;
/// `VDISK_CDROM`.
pub const VDISK_CDROM: u32 = 0x1;

/// One segment: a granted page and the 512-byte sectors of it to transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Grant reference of the page.
    pub gref: u32,
    /// First sector in the page (0–7).
    pub first_sect: u8,
    /// Last sector in the page, inclusive (first–7).
    pub last_sect: u8,
}

impl Segment {
    fn encode(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.gref.to_le_bytes());
        out[4] = self.first_sect;
        out[5] = self.last_sect;
        out[6] = 0;
        out[7] = 0;
    }
}

/// Encodes a direct read/write request (at most [`MAX_SEGMENTS`] segments).
pub fn encode_rw(op: u8, handle: u16, id: u64, sector: u64, segs: &[Segment]) -> [u8; ENTRY_BYTES] {
    debug_assert!(segs.len() <= MAX_SEGMENTS);
    let mut e = [0u8; ENTRY_BYTES];
    e[0] = op;
    e[1] = segs.len().min(MAX_SEGMENTS) as u8;
    e[2..4].copy_from_slice(&handle.to_le_bytes());
    e[8..16].copy_from_slice(&id.to_le_bytes());
    e[16..24].copy_from_slice(&sector.to_le_bytes());
    for (i, s) in segs.iter().take(MAX_SEGMENTS).enumerate() {
        s.encode(&mut e[24 + i * 8..32 + i * 8]);
    }
    e
}

/// Encodes an indirect read/write request whose segments live in the pages
/// `indirect_grefs` refer to.
pub fn encode_indirect(
    op: u8,
    handle: u16,
    id: u64,
    sector: u64,
    nr_segments: u16,
    indirect_grefs: &[u32],
) -> [u8; ENTRY_BYTES] {
    let mut e = [0u8; ENTRY_BYTES];
    e[0] = OP_INDIRECT;
    e[1] = op;
    e[2..4].copy_from_slice(&nr_segments.to_le_bytes());
    e[8..16].copy_from_slice(&id.to_le_bytes());
    e[16..24].copy_from_slice(&sector.to_le_bytes());
    e[24..26].copy_from_slice(&handle.to_le_bytes());
    for (i, g) in indirect_grefs.iter().take(MAX_INDIRECT_PAGES).enumerate() {
        e[28 + i * 4..32 + i * 4].copy_from_slice(&g.to_le_bytes());
    }
    e
}

/// Encodes the segment array of an indirect page.
pub fn encode_indirect_segments(segs: &[Segment], out: &mut [u8]) {
    for (i, s) in segs.iter().enumerate() {
        if let Some(slot) = out.get_mut(i * 8..i * 8 + 8) {
            s.encode(slot);
        }
    }
}

/// Encodes a flush (or barrier) request: no segments.
pub fn encode_flush(op: u8, handle: u16, id: u64) -> [u8; ENTRY_BYTES] {
    encode_rw(op, handle, id, 0, &[])
}

/// Encodes a discard of `nr_sectors` from `sector`.
pub fn encode_discard(handle: u16, id: u64, sector: u64, nr_sectors: u64) -> [u8; ENTRY_BYTES] {
    let mut e = [0u8; ENTRY_BYTES];
    e[0] = OP_DISCARD;
    e[2..4].copy_from_slice(&handle.to_le_bytes());
    e[8..16].copy_from_slice(&id.to_le_bytes());
    e[16..24].copy_from_slice(&sector.to_le_bytes());
    e[24..32].copy_from_slice(&nr_sectors.to_le_bytes());
    e
}

/// A decoded response (not yet validated against the request it claims to answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response {
    /// Echoed request id.
    pub id: u64,
    /// Echoed operation.
    pub operation: u8,
    /// `BLKIF_RSP_*`.
    pub status: i16,
}

/// Decodes a response copied out of the ring.
pub fn decode_response(b: &[u8; RESPONSE_BYTES]) -> Response {
    Response {
        id: u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        operation: b[8],
        status: i16::from_le_bytes([b[10], b[11]]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_layout_matches_blkif_h() {
        let segs = [
            Segment {
                gref: 0x0102_0304,
                first_sect: 0,
                last_sect: 7,
            },
            Segment {
                gref: 9,
                first_sect: 2,
                last_sect: 3,
            },
        ];
        let e = encode_rw(OP_WRITE, 51712, 0xdead_beef, 2048, &segs);
        assert_eq!(e[0], OP_WRITE);
        assert_eq!(e[1], 2);
        assert_eq!(u16::from_le_bytes([e[2], e[3]]), 51712);
        assert_eq!(&e[8..16], &0xdead_beefu64.to_le_bytes());
        assert_eq!(&e[16..24], &2048u64.to_le_bytes());
        assert_eq!(&e[24..32], &[4, 3, 2, 1, 0, 7, 0, 0]);
        assert_eq!(&e[32..38], &[9, 0, 0, 0, 2, 3]);
        assert!(e[40..].iter().all(|&b| b == 0));
    }

    #[test]
    fn indirect_and_discard_layouts() {
        let e = encode_indirect(OP_READ, 768, 7, 100, 300, &[11, 12]);
        assert_eq!((e[0], e[1]), (OP_INDIRECT, OP_READ));
        assert_eq!(u16::from_le_bytes([e[2], e[3]]), 300);
        assert_eq!(u16::from_le_bytes([e[24], e[25]]), 768);
        assert_eq!(&e[28..36], &[11, 0, 0, 0, 12, 0, 0, 0]);
        let d = encode_discard(768, 1, 8, 16);
        assert_eq!(d[0], OP_DISCARD);
        assert_eq!(&d[24..32], &16u64.to_le_bytes());
        let mut page = [0u8; 24];
        encode_indirect_segments(
            &[Segment {
                gref: 5,
                first_sect: 0,
                last_sect: 7,
            }; 4],
            &mut page,
        );
        assert_eq!(&page[16..24], &[5, 0, 0, 0, 0, 7, 0, 0]); // the 4th does not fit: ignored
    }

    #[test]
    fn response_decoding() {
        let mut b = [0u8; 16];
        b[0..8].copy_from_slice(&42u64.to_le_bytes());
        b[8] = OP_READ;
        b[10..12].copy_from_slice(&(-1i16).to_le_bytes());
        assert_eq!(
            decode_response(&b),
            Response {
                id: 42,
                operation: OP_READ,
                status: RSP_ERROR
            }
        );
    }
}
