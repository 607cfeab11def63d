//! Replay of an ext4 internal journal (jbd2), as Linux does at mount time and e2fsck
//! does before checking: fs/jbd2/recovery.c's three passes, over untrusted blocks.
//!
//! 1. **Scan**: from `s_start`, walk descriptor, revoke and commit blocks with
//!    consecutive transaction IDs (wrapping from the end of the journal back to
//!    `s_first`) to find the end of the log: the first block without the magic number
//!    or with another transaction ID, a bad commit checksum (csum v2/v3), a bad
//!    descriptor or revoke block checksum, or an unknown block type. Only transactions
//!    with a good commit block count.
//! 2. **Revoke**: collect the revoke records of the committed transactions (block ->
//!    the newest transaction that revoked it).
//! 3. **Replay**: write each tagged block of each committed transaction home unless a
//!    transaction at least as new revoked it, or (csum v2/v3) its checksum is bad, in
//!    which case it is skipped and counted like Linux does.
//!
//! Then the device is flushed, the journal superblock is marked empty (`s_start` 0,
//! `s_sequence` one past the end of the log, like e2fsck) and flushed again. The ext4
//! superblock is not touched: the caller clears `needs_recovery` and recounts.
//!
//! Every walk is bounded by the journal's length, every block number is checked
//! against the journal and the device, and a corrupt journal gives [`FsError::Corrupt`],
//! never a panic, an endless loop or a write outside the device. All checks that can
//! refuse a log (superblock, block maps, revoke blocks, home blocks inside the device)
//! run before the first write, so a refused log leaves the device as it was. Memory
//! is bounded by the journal's length (a few dozen bytes per log block), not by what
//! the blocks claim: revoke records only enter the table for blocks the log holds.
//!
//! Where this differs from Linux:
//! - A descriptor or revoke block with a bad checksum ends the log there (its
//!   transaction is not replayed; [`LogEnd`] says so). Linux keeps scanning and, if a
//!   newer-looking commit block follows, fails the whole recovery with EFSBADCRC.
//! - A bad commit checksum ends the log with `async_commit` too (Linux would go on
//!   scanning but replays no further either).
//! - v1 transaction checksums (`COMPAT_CHECKSUM`, crc32_be in the commit block) are not
//!   verified: the feature is compat, and mkfs/Linux use csum v3 instead.
//! - Fast commits (`INCOMPAT_FAST_COMMIT`) are refused as unsupported.
//! - Data blocks with bad checksums are skipped and counted
//!   ([`ReplayStats::data_csum_errors`]) instead of failing the call; the journal is
//!   still marked empty, as e2fsck does (which then flags the filesystem with errors).
//! - A log that comes all the way round the journal ends there ([`LogEnd::Wrapped`])
//!   rather than being walked again.

pub mod format;
pub mod writer;

pub use format::{
    BlockHeader, BlockTag, BlockType, CommitBlock, DescriptorBlock, JournalSuperblock, RevokeBlock,
};

use crate::blockdev::BlockDev;
use crate::error::FsError;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

/// The most log data read at once in the replay pass.
const RUN_BYTES: usize = 256 * 1024;

/// Transaction ID `a` is after `b` (wrapping arithmetic, jbd2's `tid_gt`).
pub fn tid_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// Why the scan stopped where it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogEnd {
    /// The journal was empty (`s_start` 0): nothing was read or written.
    Clean,
    /// The normal end: log block `block` is not a journal block of the expected
    /// transaction (no magic number, another ID, or an unknown block type).
    EndOfLog {
        /// Journal-relative block number.
        block: u32,
    },
    /// The log came all the way round the journal without ending.
    Wrapped,
    /// The commit block of transaction `tid` at log block `block` has a bad checksum.
    BadCommitChecksum {
        /// Transaction ID.
        tid: u32,
        /// Journal-relative block number.
        block: u32,
    },
    /// A descriptor block of transaction `tid` at log block `block` has a bad checksum.
    BadDescriptorChecksum {
        /// Transaction ID.
        tid: u32,
        /// Journal-relative block number.
        block: u32,
    },
    /// A revoke block of transaction `tid` at log block `block` has a bad checksum.
    BadRevokeChecksum {
        /// Transaction ID.
        tid: u32,
        /// Journal-relative block number.
        block: u32,
    },
}

/// What replay did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayStats {
    /// Committed transactions found (and replayed).
    pub transactions: u32,
    /// The first transaction of the log (`s_sequence` before replay).
    pub first_tid: u32,
    /// The first transaction *not* replayed: the log ended there.
    pub end_tid: u32,
    /// Blocks written to their home location (by [`check`]: that would be).
    pub blocks_replayed: u64,
    /// Tagged blocks skipped because a transaction at least as new revoked them.
    pub revoked: u64,
    /// Revoke records read from committed transactions.
    pub revoke_records: u64,
    /// Tagged blocks skipped because their data checksum (csum v2/v3) is bad. Linux
    /// fails the mount after replaying the rest, e2fsck marks the filesystem as having
    /// errors: nonzero means the filesystem needs a check.
    pub data_csum_errors: u64,
    /// Why the log ended where it did.
    pub log_end: LogEnd,
}

impl ReplayStats {
    /// The last transaction replayed, if any.
    pub fn last_tid(&self) -> Option<u32> {
        (self.transactions > 0).then(|| self.end_tid.wrapping_sub(1))
    }

    /// Replay found nothing suspicious: no bad data block and no bad checksum at the
    /// end of the log (a bad checksum there is how an interrupted commit looks, too,
    /// so it is not an error by itself; Linux and e2fsck report it as a warning).
    pub fn is_clean(&self) -> bool {
        self.data_csum_errors == 0
            && matches!(
                self.log_end,
                LogEnd::Clean | LogEnd::EndOfLog { .. } | LogEnd::Wrapped
            )
    }
}

impl fmt::Display for ReplayStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.log_end == LogEnd::Clean {
            return write!(f, "journal clean, next transaction {}", self.first_tid);
        }
        write!(
            f,
            "replayed {} transactions ({}..{}): {} blocks, {} revoked ({} revoke records)",
            self.transactions,
            self.first_tid,
            self.end_tid,
            self.blocks_replayed,
            self.revoked,
            self.revoke_records
        )?;
        if self.data_csum_errors != 0 {
            write!(
                f,
                ", {} blocks with bad checksums skipped",
                self.data_csum_errors
            )?;
        }
        match self.log_end {
            LogEnd::BadCommitChecksum { tid, block } => {
                write!(
                    f,
                    ", log ended at bad commit checksum of {tid} (block {block})"
                )
            }
            LogEnd::BadDescriptorChecksum { tid, block } => write!(
                f,
                ", log ended at bad descriptor checksum of {tid} (block {block})"
            ),
            LogEnd::BadRevokeChecksum { tid, block } => write!(
                f,
                ", log ended at bad revoke block checksum of {tid} (block {block})"
            ),
            _ => Ok(()),
        }
    }
}

/// The journal on a device: its validated superblock and how to reach its blocks.
struct Journal<'a, D: BlockDev> {
    dev: &'a mut D,
    map: &'a dyn Fn(u64) -> Option<u64>,
    block_size: u32,
    sb: JournalSuperblock,
    /// The superblock's whole block as read.
    sb_raw: Vec<u8>,
}

fn check_block_size(block_size: u32) -> Result<(), FsError> {
    if !(1024..=65536).contains(&block_size) || !block_size.is_power_of_two() {
        return Err(FsError::Invalid("block size"));
    }
    Ok(())
}

/// The byte offset of filesystem block `block`, if the whole block is on the device.
fn block_offset<D: BlockDev>(dev: &D, block_size: u32, block: u64) -> Option<u64> {
    let off = block.checked_mul(u64::from(block_size))?;
    let end = off.checked_add(u64::from(block_size))?;
    (end <= dev.size_bytes()).then_some(off)
}

/// The byte offset of journal block `jblock` on the device, through `map`.
fn locate<D: BlockDev>(
    dev: &D,
    map: &dyn Fn(u64) -> Option<u64>,
    block_size: u32,
    jblock: u64,
) -> Result<u64, FsError> {
    let phys = map(jblock)
        .ok_or_else(|| FsError::Corrupt(format!("journal block {jblock} is not mapped")))?;
    block_offset(dev, block_size, phys).ok_or_else(|| {
        FsError::Corrupt(format!(
            "journal block {jblock} maps to block {phys}, outside the device"
        ))
    })
}

/// Reads journal block `jblock` into `buf` without knowing the superblock yet.
fn read_mapped<D: BlockDev>(
    dev: &mut D,
    map: &dyn Fn(u64) -> Option<u64>,
    block_size: u32,
    jblock: u64,
    buf: &mut [u8],
) -> Result<(), FsError> {
    let off = locate(dev, map, block_size, jblock)?;
    dev.read(off, buf)?;
    Ok(())
}

impl<'a, D: BlockDev> Journal<'a, D> {
    fn open(
        dev: &'a mut D,
        block_size: u32,
        map: &'a dyn Fn(u64) -> Option<u64>,
    ) -> Result<Self, FsError> {
        check_block_size(block_size)?;
        let mut sb_raw = vec![0u8; block_size as usize];
        read_mapped(dev, map, block_size, 0, &mut sb_raw)?;
        let sb = JournalSuperblock::parse(&sb_raw)?;
        sb.validate(&sb_raw, block_size)?;
        // The whole journal must be mapped and on the device (checking the last block
        // is enough for an inode's map; each block read is checked again).
        let last = u64::from(sb.max_len - 1);
        match map(last) {
            Some(phys) if block_offset(dev, block_size, phys).is_some() => {}
            _ => {
                return Err(FsError::Corrupt(format!(
                    "journal s_maxlen {} is longer than the journal",
                    sb.max_len
                )))
            }
        }
        Ok(Journal {
            dev,
            map,
            block_size,
            sb,
            sb_raw,
        })
    }

    /// The byte offset of log block `jblock` (checked against `s_maxlen`, the map and
    /// the device).
    fn locate(&self, jblock: u32) -> Result<u64, FsError> {
        if jblock >= self.sb.max_len {
            return Err(FsError::Corrupt(format!(
                "journal block {jblock} past s_maxlen {}",
                self.sb.max_len
            )));
        }
        locate(self.dev, self.map, self.block_size, u64::from(jblock))
    }

    fn read(&mut self, jblock: u32, buf: &mut [u8]) -> Result<(), FsError> {
        let off = self.locate(jblock)?;
        self.dev.read(off, buf)?;
        Ok(())
    }

    /// `pos` moved on by `n` log blocks, wrapping from `s_maxlen` to `s_first`.
    fn advance(&self, pos: u32, n: u64) -> u32 {
        let first = u64::from(self.sb.first);
        let len = u64::from(self.sb.max_len) - first;
        let rel = (u64::from(pos) - first + n) % len;
        (first + rel) as u32
    }
}

/// A committed (or, while scanning, the current) transaction.
struct Transaction {
    tid: u32,
    /// Tags with the journal block of the data each describes.
    tags: Vec<(BlockTag, u32)>,
    /// Log blocks of its revoke blocks (read again in the revoke pass: keeping the
    /// records themselves could take far more memory than the journal has blocks).
    revoke_blocks: Vec<u32>,
    /// A malformed revoke block: an error if the transaction turns out committed.
    bad_revoke: Option<FsError>,
}

impl Transaction {
    fn new(tid: u32) -> Self {
        Transaction {
            tid,
            tags: Vec::new(),
            revoke_blocks: Vec::new(),
            bad_revoke: None,
        }
    }
}

/// The scan pass: the committed transactions and why the log ended.
fn scan<D: BlockDev>(j: &mut Journal<'_, D>) -> Result<(Vec<Transaction>, LogEnd), FsError> {
    let seed = j.sb.csum_seed();
    let len = u64::from(j.sb.max_len - j.sb.first);
    let mut buf = vec![0u8; j.block_size as usize];
    let mut pos = j.sb.start;
    let mut walked = 0u64;
    let mut done = Vec::new();
    let mut cur = Transaction::new(j.sb.sequence);
    let end = loop {
        if walked >= len {
            break LogEnd::Wrapped;
        }
        let here = pos;
        j.read(here, &mut buf)?;
        pos = j.advance(pos, 1);
        walked += 1;
        let Some(h) = BlockHeader::parse(&buf) else {
            break LogEnd::EndOfLog { block: here };
        };
        if h.sequence != cur.tid {
            break LogEnd::EndOfLog { block: here };
        }
        match h.block_type {
            BlockType::Descriptor => {
                if j.sb.has_csum() && !format::block_tail_ok(&buf, seed) {
                    break LogEnd::BadDescriptorChecksum {
                        tid: cur.tid,
                        block: here,
                    };
                }
                let d = DescriptorBlock::parse(&buf, &j.sb);
                for tag in d.tags {
                    // Data blocks are read in the replay pass only: make sure now
                    // that they can be, so that replay never stops half way.
                    j.locate(pos)?;
                    cur.tags.push((tag, pos));
                    pos = j.advance(pos, 1);
                    walked += 1;
                }
            }
            BlockType::Revoke => {
                if j.sb.has_csum() && !format::block_tail_ok(&buf, seed) {
                    break LogEnd::BadRevokeChecksum {
                        tid: cur.tid,
                        block: here,
                    };
                }
                match RevokeBlock::records(&buf, &j.sb) {
                    Ok(_) => cur.revoke_blocks.push(here),
                    Err(e) => cur.bad_revoke = Some(e),
                }
            }
            BlockType::Commit => {
                if j.sb.has_csum() && !CommitBlock::checksum_ok(&buf, seed) {
                    break LogEnd::BadCommitChecksum {
                        tid: cur.tid,
                        block: here,
                    };
                }
                // A log that reaches back into itself cannot hold this transaction.
                if walked > len {
                    break LogEnd::Wrapped;
                }
                if let Some(e) = cur.bad_revoke.take() {
                    return Err(e);
                }
                let next = Transaction::new(cur.tid.wrapping_add(1));
                done.push(core::mem::replace(&mut cur, next));
            }
            _ => break LogEnd::EndOfLog { block: here },
        }
    };
    Ok((done, end))
}

/// Reads and validates the journal superblock (journal block 0 through `map`), e.g. to
/// print it: see its `Display`. Errors as [`replay`] gives them for a bad superblock.
pub fn read_superblock<D: BlockDev>(
    dev: &mut D,
    block_size: u32,
    map: &dyn Fn(u64) -> Option<u64>,
) -> Result<JournalSuperblock, FsError> {
    Ok(Journal::open(dev, block_size, map)?.sb)
}

/// Replays the internal journal whose blocks are found through `map` (journal-relative
/// block number -> filesystem block number, None if unmapped) on a filesystem with
/// `block_size`-byte blocks, writes the replayed blocks to their home locations,
/// flushes, then marks the journal empty (`s_start` 0, `s_sequence` one past the last
/// transaction in the log, as Linux and e2fsck do) and flushes again. Does not touch
/// the ext4 superblock (the caller clears `needs_recovery` and recomputes free counts).
///
/// A journal that is already empty is left alone (nothing is written). Unknown
/// incompatible journal features give [`FsError::Unsupported`]; a corrupt superblock
/// or log, [`FsError::Corrupt`], before anything is written unless the device fails.
/// Check [`ReplayStats::is_clean`]: skipped blocks with bad checksums are not errors.
pub fn replay<D: BlockDev>(
    dev: &mut D,
    block_size: u32,
    map: &dyn Fn(u64) -> Option<u64>,
) -> Result<ReplayStats, FsError> {
    run(dev, block_size, map, true)
}

/// What [`replay`] would do, without writing anything (all three passes, data
/// checksums included): for a read-only mount that has to say the filesystem needs
/// recovery, or for `dmesg`. Works on a read-only device.
pub fn check<D: BlockDev>(
    dev: &mut D,
    block_size: u32,
    map: &dyn Fn(u64) -> Option<u64>,
) -> Result<ReplayStats, FsError> {
    run(dev, block_size, map, false)
}

fn run<D: BlockDev>(
    dev: &mut D,
    block_size: u32,
    map: &dyn Fn(u64) -> Option<u64>,
    write: bool,
) -> Result<ReplayStats, FsError> {
    let mut j = Journal::open(dev, block_size, map)?;
    let mut stats = ReplayStats {
        transactions: 0,
        first_tid: j.sb.sequence,
        end_tid: j.sb.sequence,
        blocks_replayed: 0,
        revoked: 0,
        revoke_records: 0,
        data_csum_errors: 0,
        log_end: LogEnd::Clean,
    };
    if j.sb.start == 0 {
        return Ok(stats);
    }
    if write && j.dev.read_only() {
        return Err(FsError::ReadOnly);
    }

    // Pass 1: find the end of the log.
    let (txns, end) = scan(&mut j)?;
    stats.log_end = end;
    stats.transactions = txns.len() as u32;
    stats.end_tid = j.sb.sequence.wrapping_add(stats.transactions);

    // Pass 2: the revoke table, newest revoking transaction per block. Only blocks
    // that some transaction logs matter, which bounds the table by the journal's size
    // however many records the revoke blocks hold.
    let logged: BTreeSet<u64> = txns
        .iter()
        .flat_map(|t| t.tags.iter().map(|(tag, _)| tag.block))
        .collect();
    let mut revoked: BTreeMap<u64, u32> = BTreeMap::new();
    let mut buf = vec![0u8; block_size as usize];
    for t in &txns {
        for &rb in &t.revoke_blocks {
            j.read(rb, &mut buf)?;
            for b in RevokeBlock::records(&buf, &j.sb)? {
                stats.revoke_records += 1;
                if !logged.contains(&b) {
                    continue;
                }
                revoked
                    .entry(b)
                    .and_modify(|tid| {
                        if tid_gt(t.tid, *tid) {
                            *tid = t.tid
                        }
                    })
                    .or_insert(t.tid);
            }
        }
    }
    let is_revoked = |block: u64, tid: u32| revoked.get(&block).is_some_and(|&r| !tid_gt(tid, r));

    // Every block that will be written must be on the device: refuse before writing.
    for t in &txns {
        for (tag, _) in &t.tags {
            if !is_revoked(tag.block, t.tid) && block_offset(j.dev, block_size, tag.block).is_none()
            {
                return Err(FsError::Corrupt(format!(
                    "journal transaction {} logs block {}, outside the device",
                    t.tid, tag.block
                )));
            }
        }
    }

    // Pass 3: replay. Logged copies that follow each other on the device are read
    // together (up to RUN_BYTES), as the journal is usually one extent.
    let seed = j.sb.csum_seed();
    let bsz = block_size as usize;
    let max_run = (RUN_BYTES / bsz).max(1);
    let mut run = vec![0u8; max_run * bsz];
    for t in &txns {
        let tags = &t.tags;
        let mut i = 0;
        while i < tags.len() {
            let (tag, jblock) = tags[i];
            if is_revoked(tag.block, t.tid) {
                stats.revoked += 1;
                i += 1;
                continue;
            }
            let first = j.locate(jblock)?;
            let mut n = 1;
            while i + n < tags.len() && n < max_run {
                let (next, nj) = tags[i + n];
                if is_revoked(next.block, t.tid)
                    || u64::from(nj) != u64::from(jblock) + n as u64
                    || j.locate(nj)? != first + (n * bsz) as u64
                {
                    break;
                }
                n += 1;
            }
            let run = &mut run[..n * bsz];
            j.dev.read(first, run)?;
            for (k, data) in run.chunks_exact_mut(bsz).enumerate() {
                let tag = tags[i + k].0;
                if !tag.data_ok(&j.sb, seed, t.tid, data) {
                    stats.data_csum_errors += 1;
                    continue;
                }
                if tag.flags & format::tag_flag::ESCAPE != 0 {
                    data[..4].copy_from_slice(&format::MAGIC.to_be_bytes());
                }
                let off = block_offset(j.dev, block_size, tag.block)
                    .ok_or(FsError::Invalid("replayed block outside the device"))?;
                if write {
                    j.dev.write(off, data)?;
                }
                stats.blocks_replayed += 1;
            }
            i += n;
        }
    }
    if !write {
        return Ok(stats);
    }
    j.dev.flush()?;

    // The log is on its home blocks: mark the journal empty.
    let mut sb_raw = core::mem::take(&mut j.sb_raw);
    j.sb.mark_empty(&mut sb_raw, stats.end_tid.wrapping_add(1));
    let phys = (j.map)(0).ok_or(FsError::Invalid("journal superblock unmapped"))?;
    let off = block_offset(j.dev, block_size, phys)
        .ok_or(FsError::Invalid("journal superblock outside the device"))?;
    j.dev.write(off, &sb_raw)?;
    j.dev.flush()?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tid_order_wraps() {
        assert!(tid_gt(1, 0));
        assert!(!tid_gt(0, 0));
        assert!(tid_gt(0, u32::MAX));
        assert!(!tid_gt(u32::MAX, 0));
        assert!(tid_gt(0x8000_0000 - 1 + 5, 5));
    }
}
