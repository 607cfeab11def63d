//! The on-disk jbd2 structures, parsed from untrusted blocks: the journal superblock,
//! the common block header, descriptor blocks and their block tags, commit blocks and
//! revoke blocks. Everything jbd2 writes is big-endian.
//!
//! Parsers never panic on any input of the length they document; lengths come from the
//! superblock's validated block size.

use crate::crc32c::crc32c;
use crate::error::FsError;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// `JBD2_MAGIC_NUMBER`, the first word of every journal metadata block.
pub const MAGIC: u32 = 0xc03b_3998;

/// Bytes of the common block header (`journal_header_t`).
pub const HEADER_BYTES: usize = 12;

/// Bytes of the descriptor/revoke block tail (`jbd2_journal_block_tail`) with csum v2/v3.
pub const TAIL_BYTES: usize = 4;

/// `s_checksum_type` for CRC-32C, the only one csum v2/v3 use.
pub const CHECKSUM_TYPE_CRC32C: u8 = 4;

/// Feature bits of the journal superblock.
pub mod feature {
    /// Compat: v1 commit-block checksums (crc32_be over the transaction).
    pub const COMPAT_CHECKSUM: u32 = 0x1;
    /// Incompat: revoke blocks.
    pub const INCOMPAT_REVOKE: u32 = 0x1;
    /// Incompat: 64-bit block numbers in tags and revoke records.
    pub const INCOMPAT_64BIT: u32 = 0x2;
    /// Incompat: commit blocks written without waiting for the data (async_commit).
    pub const INCOMPAT_ASYNC_COMMIT: u32 = 0x4;
    /// Incompat: checksums v2 (16-bit tag checksums).
    pub const INCOMPAT_CSUM_V2: u32 = 0x8;
    /// Incompat: checksums v3 (32-bit tag checksums, 16-byte tags).
    pub const INCOMPAT_CSUM_V3: u32 = 0x10;
    /// Incompat: fast commits (not handled here).
    pub const INCOMPAT_FAST_COMMIT: u32 = 0x20;
    /// The incompat features replay understands.
    pub const KNOWN_INCOMPAT: u32 = INCOMPAT_REVOKE
        | INCOMPAT_64BIT
        | INCOMPAT_ASYNC_COMMIT
        | INCOMPAT_CSUM_V2
        | INCOMPAT_CSUM_V3;
}

/// Tag flag bits (`JBD2_FLAG_*`).
pub mod tag_flag {
    /// The logged copy had the magic number in its first word, replaced by zeros.
    pub const ESCAPE: u32 = 1;
    /// The 16-byte UUID does not follow this tag.
    pub const SAME_UUID: u32 = 2;
    /// Unused by jbd2 (block deleted by this transaction).
    pub const DELETED: u32 = 4;
    /// The last tag of the descriptor block.
    pub const LAST_TAG: u32 = 8;
}

pub(crate) fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

pub(crate) fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

pub(crate) fn be64(b: &[u8], off: usize) -> u64 {
    (u64::from(be32(b, off)) << 32) | u64::from(be32(b, off + 4))
}

/// Writes `v` big-endian at `off` of `b`.
pub(crate) fn put_be32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

/// CRC-32C of `buf` as if the four bytes at `hole` were zero (how jbd2 checksums a
/// block that contains its own checksum).
pub(crate) fn crc_with_hole(seed: u32, buf: &[u8], hole: usize) -> u32 {
    let c = crc32c(seed, &buf[..hole]);
    let c = crc32c(c, &[0; 4]);
    crc32c(c, &buf[hole + 4..])
}

/// The kind of a journal block, from its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockType {
    /// 1: a descriptor block (tags of the data blocks that follow).
    Descriptor,
    /// 2: a commit block.
    Commit,
    /// 3: a v1 journal superblock.
    SuperblockV1,
    /// 4: a v2 journal superblock.
    SuperblockV2,
    /// 5: a revoke block.
    Revoke,
    /// Anything else.
    Other(u32),
}

impl From<u32> for BlockType {
    fn from(v: u32) -> Self {
        match v {
            1 => BlockType::Descriptor,
            2 => BlockType::Commit,
            3 => BlockType::SuperblockV1,
            4 => BlockType::SuperblockV2,
            5 => BlockType::Revoke,
            other => BlockType::Other(other),
        }
    }
}

/// The header every journal metadata block starts with (`journal_header_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// What the block is.
    pub block_type: BlockType,
    /// The transaction it belongs to.
    pub sequence: u32,
}

impl BlockHeader {
    /// The header of `buf`, or None if it is too short or lacks the jbd2 magic number
    /// (then it is not a journal metadata block: a data block, or the end of the log).
    pub fn parse(buf: &[u8]) -> Option<Self> {
        if buf.len() < HEADER_BYTES || be32(buf, 0) != MAGIC {
            return None;
        }
        Some(BlockHeader {
            block_type: BlockType::from(be32(buf, 4)),
            sequence: be32(buf, 8),
        })
    }
}

/// The journal superblock (`journal_superblock_t`, the first 1024 bytes of journal
/// block 0), as far as replay needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalSuperblock {
    /// 1 or 2 (v1 superblocks have no feature words: they read as zero).
    pub version: u8,
    /// `s_blocksize`.
    pub block_size: u32,
    /// `s_maxlen`: blocks in the journal, superblock included.
    pub max_len: u32,
    /// `s_first`: the first block of the log area.
    pub first: u32,
    /// `s_sequence`: the first transaction expected in the log.
    pub sequence: u32,
    /// `s_start`: the log block where the log starts; 0 = empty (clean).
    pub start: u32,
    /// `s_errno`: an error recorded by the kernel (0 = none).
    pub errno: i32,
    /// `s_feature_compat`.
    pub feature_compat: u32,
    /// `s_feature_incompat`.
    pub feature_incompat: u32,
    /// `s_feature_ro_compat`.
    pub feature_ro_compat: u32,
    /// `s_uuid`.
    pub uuid: [u8; 16],
    /// `s_nr_users`: filesystems sharing the journal (1 for an internal journal).
    pub nr_users: u32,
    /// `s_checksum_type` (4 = CRC-32C).
    pub checksum_type: u8,
    /// `s_num_fc_blks`: fast-commit blocks at the end of the journal.
    pub num_fc_blocks: u32,
    /// `s_checksum` as stored.
    pub checksum: u32,
}

impl JournalSuperblock {
    /// Bytes of the on-disk structure (the checksum covers all of them).
    pub const BYTES: usize = 1024;
    /// Offset of `s_checksum`.
    const CHECKSUM_OFFSET: usize = 0xfc;

    /// Parses the first [`Self::BYTES`] bytes of `buf`. Checks only the magic number,
    /// the block type and the length; see [`JournalSuperblock::validate`].
    pub fn parse(buf: &[u8]) -> Result<Self, FsError> {
        if buf.len() < Self::BYTES {
            return Err(FsError::Corrupt(String::from(
                "journal superblock too short",
            )));
        }
        let version = match BlockHeader::parse(buf).map(|h| h.block_type) {
            Some(BlockType::SuperblockV1) => 1,
            Some(BlockType::SuperblockV2) => 2,
            Some(t) => {
                return Err(FsError::Corrupt(format!(
                    "journal superblock has block type {t:?}"
                )))
            }
            None => {
                return Err(FsError::Corrupt(String::from(
                    "no jbd2 magic number in the journal superblock",
                )))
            }
        };
        let v2 = version == 2;
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(&buf[0x30..0x40]);
        Ok(JournalSuperblock {
            version,
            block_size: be32(buf, 0x0c),
            max_len: be32(buf, 0x10),
            first: be32(buf, 0x14),
            sequence: be32(buf, 0x18),
            start: be32(buf, 0x1c),
            errno: be32(buf, 0x20) as i32,
            feature_compat: if v2 { be32(buf, 0x24) } else { 0 },
            feature_incompat: if v2 { be32(buf, 0x28) } else { 0 },
            feature_ro_compat: if v2 { be32(buf, 0x2c) } else { 0 },
            uuid,
            nr_users: be32(buf, 0x40),
            checksum_type: buf[0x50],
            num_fc_blocks: be32(buf, 0x54),
            checksum: be32(buf, Self::CHECKSUM_OFFSET),
        })
    }

    /// Checks that replay can trust and handle this superblock: `raw` is the block it
    /// was parsed from, `fs_block_size` the filesystem's block size. Unknown incompat or
    /// ro_compat features and fast commits give [`FsError::Unsupported`]; inconsistent
    /// fields and a bad checksum give [`FsError::Corrupt`].
    pub fn validate(&self, raw: &[u8], fs_block_size: u32) -> Result<(), FsError> {
        let corrupt = |what: String| Err(FsError::Corrupt(what));
        if self.block_size != fs_block_size {
            return corrupt(format!(
                "journal block size {} is not the filesystem's {fs_block_size}",
                self.block_size
            ));
        }
        let unknown = self.feature_incompat & !feature::KNOWN_INCOMPAT;
        if self.feature_incompat & feature::INCOMPAT_FAST_COMMIT != 0 {
            return Err(FsError::Unsupported(String::from("jbd2 fast commits")));
        }
        if unknown != 0 {
            return Err(FsError::Unsupported(format!(
                "jbd2 incompat features {unknown:#x}"
            )));
        }
        if self.feature_ro_compat != 0 {
            return Err(FsError::Unsupported(format!(
                "jbd2 ro_compat features {:#x}",
                self.feature_ro_compat
            )));
        }
        let v2 = self.feature_incompat & feature::INCOMPAT_CSUM_V2 != 0;
        let v3 = self.feature_incompat & feature::INCOMPAT_CSUM_V3 != 0;
        if v2 && v3 {
            return corrupt(String::from("journal has both checksum v2 and v3"));
        }
        if (v2 || v3) && self.feature_compat & feature::COMPAT_CHECKSUM != 0 {
            return corrupt(String::from("journal has both checksum v1 and v2/v3"));
        }
        if self.first == 0 || self.first >= self.max_len {
            return corrupt(format!(
                "journal s_first {} outside 1..{}",
                self.first, self.max_len
            ));
        }
        if self.start != 0 && (self.start < self.first || self.start >= self.max_len) {
            return corrupt(format!(
                "journal s_start {} outside {}..{}",
                self.start, self.first, self.max_len
            ));
        }
        if self.has_csum() {
            if self.checksum_type != CHECKSUM_TYPE_CRC32C {
                return corrupt(format!(
                    "journal checksum type {} is not crc32c",
                    self.checksum_type
                ));
            }
            let want = Self::compute_checksum(raw);
            if want != self.checksum {
                return corrupt(format!(
                    "journal superblock checksum {:#010x}, computed {want:#010x}",
                    self.checksum
                ));
            }
        }
        Ok(())
    }

    /// Checksums v2 or v3 (metadata blocks carry CRC-32C tails).
    pub fn has_csum(&self) -> bool {
        self.feature_incompat & (feature::INCOMPAT_CSUM_V2 | feature::INCOMPAT_CSUM_V3) != 0
    }

    /// Checksums v3.
    pub fn csum_v3(&self) -> bool {
        self.feature_incompat & feature::INCOMPAT_CSUM_V3 != 0
    }

    /// 64-bit block numbers.
    pub fn is_64bit(&self) -> bool {
        self.feature_incompat & feature::INCOMPAT_64BIT != 0
    }

    /// The seed of every journal checksum: CRC-32C of the UUID.
    pub fn csum_seed(&self) -> u32 {
        crc32c(!0, &self.uuid)
    }

    /// Bytes of one block tag, without the UUID that may follow (`journal_tag_bytes`).
    pub fn tag_bytes(&self) -> usize {
        if self.csum_v3() {
            return 16;
        }
        let mut sz = 12;
        if self.feature_incompat & feature::INCOMPAT_CSUM_V2 != 0 {
            sz += 2;
        }
        if self.is_64bit() {
            sz
        } else {
            sz - 4
        }
    }

    /// Bytes at the end of a descriptor or revoke block reserved for its checksum.
    pub fn tail_bytes(&self) -> usize {
        if self.has_csum() {
            TAIL_BYTES
        } else {
            0
        }
    }

    /// The superblock checksum of `raw` (its first [`Self::BYTES`] bytes, `s_checksum`
    /// taken as zero).
    pub fn compute_checksum(raw: &[u8]) -> u32 {
        crc_with_hole(!0, &raw[..Self::BYTES], Self::CHECKSUM_OFFSET)
    }

    /// Rewrites `raw` (the superblock's block) to say the journal is empty: `s_start`
    /// 0, `s_sequence` = `next_sequence`, and a fresh checksum if the journal has them.
    pub fn mark_empty(&self, raw: &mut [u8], next_sequence: u32) {
        put_be32(raw, 0x1c, 0);
        put_be32(raw, 0x18, next_sequence);
        if self.has_csum() {
            let c = Self::compute_checksum(raw);
            put_be32(raw, Self::CHECKSUM_OFFSET, c);
        }
    }
}

impl fmt::Display for JournalSuperblock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "jbd2 v{}: {} blocks of {} bytes, log from {}, ",
            self.version, self.max_len, self.block_size, self.first
        )?;
        if self.start == 0 {
            write!(f, "clean (next transaction {})", self.sequence)?;
        } else {
            write!(
                f,
                "needs recovery from block {} transaction {}",
                self.start, self.sequence
            )?;
        }
        f.write_str(", features:")?;
        let names: [(u32, u32, &str); 7] = [
            (self.feature_compat, feature::COMPAT_CHECKSUM, "checksum"),
            (self.feature_incompat, feature::INCOMPAT_REVOKE, "revoke"),
            (self.feature_incompat, feature::INCOMPAT_64BIT, "64bit"),
            (
                self.feature_incompat,
                feature::INCOMPAT_ASYNC_COMMIT,
                "async_commit",
            ),
            (self.feature_incompat, feature::INCOMPAT_CSUM_V2, "csum_v2"),
            (self.feature_incompat, feature::INCOMPAT_CSUM_V3, "csum_v3"),
            (
                self.feature_incompat,
                feature::INCOMPAT_FAST_COMMIT,
                "fast_commit",
            ),
        ];
        let mut any = false;
        for (word, bit, name) in names {
            if word & bit != 0 {
                write!(f, " {name}")?;
                any = true;
            }
        }
        if !any {
            f.write_str(" none")?;
        }
        if self.errno != 0 {
            write!(f, ", recorded error {}", self.errno)?;
        }
        Ok(())
    }
}

/// Checks a descriptor or revoke block's tail checksum (csum v2/v3): CRC-32C from
/// `seed` over the whole block with the last four bytes taken as zero.
pub fn block_tail_ok(buf: &[u8], seed: u32) -> bool {
    if buf.len() < HEADER_BYTES + TAIL_BYTES {
        return false;
    }
    let hole = buf.len() - TAIL_BYTES;
    crc_with_hole(seed, buf, hole) == be32(buf, hole)
}

/// The checksum of a logged data block (`jbd2_block_tag_csum`): CRC-32C from `seed`
/// over the big-endian transaction ID, then the block as logged (escaped).
pub fn data_block_csum(seed: u32, sequence: u32, data: &[u8]) -> u32 {
    crc32c(crc32c(seed, &sequence.to_be_bytes()), data)
}

/// One block tag of a descriptor block: where the next data block of the log belongs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockTag {
    /// The filesystem block the logged copy is written back to.
    pub block: u64,
    /// `JBD2_FLAG_*` bits ([`tag_flag`]).
    pub flags: u32,
    /// The data block's checksum (16 bits with csum v2, 32 with v3, 0 without).
    pub checksum: u32,
}

impl BlockTag {
    /// Whether `data` (as logged in transaction `sequence`) matches this tag's
    /// checksum, for a journal with `sb`'s features (always true without checksums).
    pub fn data_ok(&self, sb: &JournalSuperblock, seed: u32, sequence: u32, data: &[u8]) -> bool {
        if !sb.has_csum() {
            return true;
        }
        let c = data_block_csum(seed, sequence, data);
        if sb.csum_v3() {
            c == self.checksum
        } else {
            (c & 0xffff) == self.checksum
        }
    }
}

/// A descriptor block: the tags of the data blocks that follow it in the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DescriptorBlock {
    /// The transaction.
    pub sequence: u32,
    /// The tags in order; the n-th describes the n-th log block after this one.
    pub tags: Vec<BlockTag>,
}

impl DescriptorBlock {
    /// Parses the tags of descriptor block `buf` (one whole journal block) the way jbd2
    /// counts them: until the tag with `LAST_TAG` or until the next tag would not fit
    /// before the checksum tail. At most `(block size - 12) / tag bytes` tags.
    pub fn parse(buf: &[u8], sb: &JournalSuperblock) -> Self {
        let sequence = if buf.len() >= HEADER_BYTES {
            be32(buf, 8)
        } else {
            0
        };
        let tag_bytes = sb.tag_bytes();
        let end = buf.len().saturating_sub(sb.tail_bytes());
        let v3 = sb.csum_v3();
        let wide = sb.is_64bit();
        let mut tags = Vec::new();
        let mut off = HEADER_BYTES;
        while off + tag_bytes <= end {
            let low = u64::from(be32(buf, off));
            let (flags, high, checksum) = if v3 {
                (be32(buf, off + 4), be32(buf, off + 8), be32(buf, off + 12))
            } else {
                let high = if wide { be32(buf, off + 8) } else { 0 };
                (
                    u32::from(be16(buf, off + 6)),
                    high,
                    u32::from(be16(buf, off + 4)),
                )
            };
            let block = if wide {
                low | (u64::from(high) << 32)
            } else {
                low
            };
            tags.push(BlockTag {
                block,
                flags,
                checksum,
            });
            off += tag_bytes;
            // jbd2 tests the 16-bit flags field (the low half of tag3's 32-bit one).
            if flags & tag_flag::SAME_UUID == 0 {
                off += 16;
            }
            if flags & tag_flag::LAST_TAG != 0 {
                break;
            }
        }
        DescriptorBlock { sequence, tags }
    }
}

/// A commit block (`struct commit_header`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitBlock {
    /// The transaction it commits.
    pub sequence: u32,
    /// `h_chksum_type` (v1 checksums only).
    pub checksum_type: u8,
    /// `h_chksum_size` (v1 checksums only).
    pub checksum_size: u8,
    /// `h_chksum[0]`: the block's own CRC-32C with csum v2/v3.
    pub checksum: u32,
    /// `h_commit_sec`.
    pub commit_sec: u64,
    /// `h_commit_nsec`.
    pub commit_nsec: u32,
}

impl CommitBlock {
    const CHECKSUM_OFFSET: usize = 16;

    /// Parses commit block `buf` (at least 64 bytes, else None).
    pub fn parse(buf: &[u8]) -> Option<Self> {
        if buf.len() < 64 {
            return None;
        }
        Some(CommitBlock {
            sequence: be32(buf, 8),
            checksum_type: buf[12],
            checksum_size: buf[13],
            checksum: be32(buf, Self::CHECKSUM_OFFSET),
            commit_sec: be64(buf, 48),
            commit_nsec: be32(buf, 56),
        })
    }

    /// Checks the csum v2/v3 checksum of commit block `buf` (one whole journal block):
    /// CRC-32C from `seed` over the block with `h_chksum[0]` taken as zero.
    pub fn checksum_ok(buf: &[u8], seed: u32) -> bool {
        if buf.len() < 64 {
            return false;
        }
        crc_with_hole(seed, buf, Self::CHECKSUM_OFFSET) == be32(buf, Self::CHECKSUM_OFFSET)
    }
}

/// A revoke block: filesystem blocks whose earlier logged copies must not be replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RevokeBlock {
    /// The transaction that revokes them.
    pub sequence: u32,
    /// The revoked filesystem blocks.
    pub blocks: Vec<u64>,
}

impl RevokeBlock {
    const HEADER: usize = 16;

    /// Parses revoke block `buf` (one whole journal block). A byte count (`r_count`)
    /// reaching into the checksum tail or past the block is [`FsError::Corrupt`], as
    /// jbd2 refuses it.
    pub fn parse(buf: &[u8], sb: &JournalSuperblock) -> Result<Self, FsError> {
        let blocks = Self::records(buf, sb)?.collect();
        Ok(RevokeBlock {
            sequence: be32(buf, 8),
            blocks,
        })
    }

    /// The revoked block numbers of revoke block `buf`, without allocating; errors as
    /// [`RevokeBlock::parse`].
    pub fn records<'a>(
        buf: &'a [u8],
        sb: &JournalSuperblock,
    ) -> Result<impl Iterator<Item = u64> + 'a, FsError> {
        if buf.len() < Self::HEADER {
            return Err(FsError::Corrupt(String::from(
                "journal revoke block too short",
            )));
        }
        let count = be32(buf, 12) as usize;
        let limit = buf.len() - sb.tail_bytes();
        if count > limit {
            return Err(FsError::Corrupt(format!(
                "journal revoke block uses {count} bytes of {limit}"
            )));
        }
        let record = if sb.is_64bit() { 8 } else { 4 };
        let n = count.saturating_sub(Self::HEADER) / record;
        Ok((0..n).map(move |i| {
            let off = Self::HEADER + i * record;
            if record == 8 {
                be64(buf, off)
            } else {
                u64::from(be32(buf, off))
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sb_with(incompat: u32) -> JournalSuperblock {
        let mut raw = alloc::vec![0u8; 1024];
        raw[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        raw[4..8].copy_from_slice(&4u32.to_be_bytes());
        raw[0x0c..0x10].copy_from_slice(&1024u32.to_be_bytes());
        raw[0x10..0x14].copy_from_slice(&1024u32.to_be_bytes());
        raw[0x14..0x18].copy_from_slice(&1u32.to_be_bytes());
        raw[0x28..0x2c].copy_from_slice(&incompat.to_be_bytes());
        raw[0x50] = CHECKSUM_TYPE_CRC32C;
        let c = JournalSuperblock::compute_checksum(&raw);
        raw[0xfc..0x100].copy_from_slice(&c.to_be_bytes());
        let sb = JournalSuperblock::parse(&raw).unwrap();
        sb.validate(&raw, 1024).unwrap();
        sb
    }

    #[test]
    fn tag_sizes_follow_journal_tag_bytes() {
        use feature::*;
        for (incompat, bytes) in [
            (0, 8),
            (INCOMPAT_64BIT, 12),
            (INCOMPAT_CSUM_V2, 10),
            (INCOMPAT_CSUM_V2 | INCOMPAT_64BIT, 14),
            (INCOMPAT_CSUM_V3, 16),
            (INCOMPAT_CSUM_V3 | INCOMPAT_64BIT, 16),
        ] {
            assert_eq!(sb_with(incompat).tag_bytes(), bytes, "{incompat:#x}");
        }
    }

    #[test]
    fn v1_superblock_has_no_features() {
        let mut raw = alloc::vec![0xffu8; 1024];
        raw[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        raw[4..8].copy_from_slice(&3u32.to_be_bytes());
        let sb = JournalSuperblock::parse(&raw).unwrap();
        assert_eq!(sb.version, 1);
        assert_eq!(
            (sb.feature_compat, sb.feature_incompat, sb.feature_ro_compat),
            (0, 0, 0)
        );
        assert!(JournalSuperblock::parse(&raw[..1000]).is_err());
    }

    #[test]
    fn descriptor_tags_v2_32bit() {
        let sb = sb_with(feature::INCOMPAT_CSUM_V2);
        let mut b = alloc::vec![0u8; 1024];
        b[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&1u32.to_be_bytes());
        b[8..12].copy_from_slice(&9u32.to_be_bytes());
        // Tag 1 (10 bytes) + UUID (16), tag 2 (10 bytes, SAME_UUID | LAST_TAG).
        b[12..16].copy_from_slice(&100u32.to_be_bytes());
        b[16..18].copy_from_slice(&0xabcdu16.to_be_bytes());
        b[18..20].copy_from_slice(&1u16.to_be_bytes()); // ESCAPE
        b[38..42].copy_from_slice(&200u32.to_be_bytes());
        b[44..46].copy_from_slice(&10u16.to_be_bytes());
        let d = DescriptorBlock::parse(&b, &sb);
        assert_eq!(d.sequence, 9);
        assert_eq!(
            d.tags,
            [
                BlockTag {
                    block: 100,
                    flags: tag_flag::ESCAPE,
                    checksum: 0xabcd
                },
                BlockTag {
                    block: 200,
                    flags: tag_flag::SAME_UUID | tag_flag::LAST_TAG,
                    checksum: 0
                },
            ]
        );
        // Without LAST_TAG the tags run to the tail: zeroed tags have no SAME_UUID, so
        // each takes 10 + 16 bytes from offset 48 while one more fits before 1020.
        b[44..46].copy_from_slice(&2u16.to_be_bytes());
        let d = DescriptorBlock::parse(&b, &sb);
        assert_eq!(d.tags.len(), 2 + (1020 - 10 - 48) / 26 + 1);
        // 16-bit data checksums compare the low half.
        let data = [7u8; 1024];
        let seed = sb.csum_seed();
        let tag = BlockTag {
            block: 1,
            flags: 0,
            checksum: data_block_csum(seed, 9, &data) & 0xffff,
        };
        assert!(tag.data_ok(&sb, seed, 9, &data));
        assert!(!tag.data_ok(&sb, seed, 10, &data));
    }

    #[test]
    fn revoke_records_and_counts() {
        let sb32 = sb_with(0);
        let sb64 = sb_with(feature::INCOMPAT_64BIT | feature::INCOMPAT_CSUM_V3);
        let mut b = alloc::vec![0u8; 1024];
        for i in 0..8u32 {
            b[16 + 4 * i as usize..20 + 4 * i as usize].copy_from_slice(&(i + 1).to_be_bytes());
        }
        let set = |b: &mut [u8], n: u32| b[12..16].copy_from_slice(&n.to_be_bytes());
        set(&mut b, 16 + 12);
        assert_eq!(RevokeBlock::parse(&b, &sb32).unwrap().blocks, [1, 2, 3]);
        assert_eq!(
            RevokeBlock::parse(&b, &sb64).unwrap().blocks,
            [(1 << 32) | 2]
        );
        set(&mut b, 3);
        assert!(RevokeBlock::parse(&b, &sb32).unwrap().blocks.is_empty());
        set(&mut b, 1024);
        assert_eq!(RevokeBlock::parse(&b, &sb32).unwrap().blocks.len(), 252);
        assert!(RevokeBlock::parse(&b, &sb64).is_err()); // into the csum tail
        set(&mut b, u32::MAX);
        assert!(RevokeBlock::parse(&b, &sb32).is_err());
        assert!(RevokeBlock::parse(&b[..10], &sb32).is_err());
    }

    #[test]
    fn checksummed_blocks_round_trip() {
        let seed = 0x1234_5678;
        let mut b = alloc::vec![0x5au8; 1024];
        let c = crc_with_hole(seed, &b, 1020);
        b[1020..].copy_from_slice(&c.to_be_bytes());
        assert!(block_tail_ok(&b, seed));
        b[3] ^= 1;
        assert!(!block_tail_ok(&b, seed));
        assert!(!block_tail_ok(&b[..8], seed));
        let c = crc_with_hole(seed, &b, 16);
        b[16..20].copy_from_slice(&c.to_be_bytes());
        assert!(CommitBlock::checksum_ok(&b, seed));
        assert!(!CommitBlock::checksum_ok(&b, seed ^ 1));
        let cb = CommitBlock::parse(&b).unwrap();
        assert_eq!(cb.checksum, c);
        assert!(CommitBlock::parse(&b[..63]).is_none());
    }

    #[test]
    fn headers() {
        assert_eq!(BlockHeader::parse(&[0u8; 12]), None);
        assert_eq!(BlockHeader::parse(&MAGIC.to_be_bytes()), None);
        let mut b = [0u8; 12];
        b[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        b[4..8].copy_from_slice(&77u32.to_be_bytes());
        b[8..12].copy_from_slice(&3u32.to_be_bytes());
        assert_eq!(
            BlockHeader::parse(&b),
            Some(BlockHeader {
                block_type: BlockType::Other(77),
                sequence: 3
            })
        );
    }

    #[test]
    fn display() {
        let sb = sb_with(feature::INCOMPAT_64BIT | feature::INCOMPAT_CSUM_V3);
        let s = alloc::format!("{sb}");
        assert_eq!(
            s,
            "jbd2 v2: 1024 blocks of 1024 bytes, log from 1, clean (next transaction 0), \
             features: 64bit csum_v3"
        );
    }
}
