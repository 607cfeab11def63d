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
//!    the newest transaction that revoked it), walking the log again.
//! 3. **Replay**: walking the log again, write each tagged block of each committed
//!    transaction home unless a transaction at least as new revoked it, or (csum
//!    v2/v3) its checksum is bad, in which case it is skipped and counted like Linux
//!    does.
//!
//! Then the device is flushed, the journal superblock is marked empty (`s_start` 0,
//! `s_sequence` one past the end of the log, like e2fsck) and flushed again. The ext4
//! superblock is not touched: the caller clears `needs_recovery` and recounts.
//!
//! Every walk is bounded by the journal's length, every block number is checked
//! against the journal and the device, and a corrupt journal gives [`FsError::Corrupt`],
//! never a panic, an endless loop or a write outside the device. All checks that can
//! refuse a log (superblock, block maps, revoke blocks, home blocks inside the device)
//! run before the first write, so a refused log leaves the device as it was.
//!
//! Memory does not grow with the log: like Linux's `do_one_pass`, each pass reads the
//! log again from the device instead of keeping its transactions and tags, so a pass
//! holds one block, the tags of one descriptor block and (replay) a buffer for runs of
//! logged blocks. What is kept is the revoke table, within a byte budget
//! ([`replay_within`]): half of it for the table (16 bytes a revoked block); when
//! the log's revoke records would not fit, only those for blocks the log holds enter
//! it (a sorted list of those, a quarter of the budget); a quarter for the run
//! buffer. A log whose tables do not fit is refused with [`FsError::NoMemory`]
//! before anything is written.
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
use crate::mem::zeroed;
use alloc::format;
use alloc::vec::Vec;
use core::fmt;

/// The most log data read at once in the replay pass.
const RUN_BYTES: usize = 256 * 1024;
/// The memory [`replay`] and [`check`] may use (see [`replay_within`]).
pub const DEFAULT_REPLAY_BYTES: usize = 16 << 20;

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
        let mut sb_raw = zeroed(block_size as usize)?;
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

/// What the scan pass found.
struct Scan {
    /// Transactions with a good commit block, from `s_sequence` on.
    committed: u32,
    /// Revoke records in them.
    revoke_records: u64,
    /// Why the log ended where it did.
    end: LogEnd,
}

/// The scan pass: how many transactions committed and why the log ended. Nothing of
/// a transaction is kept: later passes read the log again ([`walk`]).
fn scan<D: BlockDev>(j: &mut Journal<'_, D>) -> Result<Scan, FsError> {
    let seed = j.sb.csum_seed();
    let len = u64::from(j.sb.max_len - j.sb.first);
    let mut buf = zeroed(j.block_size as usize)?;
    let mut pos = j.sb.start;
    let mut walked = 0u64;
    let (mut committed, mut revoke_records) = (0u32, 0u64);
    let mut tid = j.sb.sequence;
    // The current transaction's revoke records, and a malformed revoke block in it:
    // an error if it turns out committed.
    let mut records = 0u64;
    let mut bad_revoke: Option<FsError> = None;
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
        if h.sequence != tid {
            break LogEnd::EndOfLog { block: here };
        }
        match h.block_type {
            BlockType::Descriptor => {
                if j.sb.has_csum() && !format::block_tail_ok(&buf, seed) {
                    break LogEnd::BadDescriptorChecksum { tid, block: here };
                }
                let d = DescriptorBlock::parse(&buf, &j.sb);
                for _ in &d.tags {
                    // Data blocks are read in the replay pass only: make sure now
                    // that they can be, so that replay never stops half way.
                    j.locate(pos)?;
                    pos = j.advance(pos, 1);
                    walked += 1;
                }
            }
            BlockType::Revoke => {
                if j.sb.has_csum() && !format::block_tail_ok(&buf, seed) {
                    break LogEnd::BadRevokeChecksum { tid, block: here };
                }
                match RevokeBlock::records(&buf, &j.sb) {
                    Ok(r) => records += r.count() as u64,
                    Err(e) => bad_revoke = Some(e),
                }
            }
            BlockType::Commit => {
                if j.sb.has_csum() && !CommitBlock::checksum_ok(&buf, seed) {
                    break LogEnd::BadCommitChecksum { tid, block: here };
                }
                // A log that reaches back into itself cannot hold this transaction.
                if walked > len {
                    break LogEnd::Wrapped;
                }
                if let Some(e) = bad_revoke.take() {
                    return Err(e);
                }
                committed += 1;
                revoke_records += core::mem::take(&mut records);
                tid = tid.wrapping_add(1);
            }
            _ => break LogEnd::EndOfLog { block: here },
        }
    };
    Ok(Scan {
        committed,
        revoke_records,
        end,
    })
}

/// A piece of the committed log, as [`walk`] reads it again.
enum Piece<'b> {
    /// A descriptor block's tags: the data of the `k`-th is `k` log blocks after
    /// `data` (wrapping).
    Tags {
        tid: u32,
        data: u32,
        tags: &'b [BlockTag],
    },
    /// A revoke block.
    Revoke { tid: u32, block: &'b [u8] },
}

fn changed(block: u32) -> FsError {
    FsError::Corrupt(format!(
        "journal block {block} changed between the passes of replay"
    ))
}

/// Reads the `committed` transactions the scan found again, from the start of the
/// log, giving `f` each descriptor's tags and each revoke block. The scan checked
/// them; what does not read back the same (a device that changed under us) is
/// [`FsError::Corrupt`], and the walk never goes further than one lap.
fn walk<'a, D: BlockDev, F>(
    j: &mut Journal<'a, D>,
    committed: u32,
    f: &mut F,
) -> Result<(), FsError>
where
    F: FnMut(&mut Journal<'a, D>, Piece<'_>) -> Result<(), FsError>,
{
    let len = u64::from(j.sb.max_len - j.sb.first);
    let mut buf = zeroed(j.block_size as usize)?;
    let mut pos = j.sb.start;
    let mut tid = j.sb.sequence;
    let (mut left, mut walked) = (committed, 0u64);
    while left > 0 {
        let here = pos;
        if walked >= len {
            return Err(changed(here));
        }
        j.read(here, &mut buf)?;
        pos = j.advance(pos, 1);
        walked += 1;
        let h = BlockHeader::parse(&buf)
            .filter(|h| h.sequence == tid)
            .ok_or_else(|| changed(here))?;
        match h.block_type {
            BlockType::Descriptor => {
                let d = DescriptorBlock::parse(&buf, &j.sb);
                f(
                    j,
                    Piece::Tags {
                        tid,
                        data: pos,
                        tags: &d.tags,
                    },
                )?;
                pos = j.advance(pos, d.tags.len() as u64);
                walked += d.tags.len() as u64;
            }
            BlockType::Revoke => f(j, Piece::Revoke { tid, block: &buf })?,
            BlockType::Commit => {
                tid = tid.wrapping_add(1);
                left -= 1;
            }
            _ => return Err(changed(here)),
        }
    }
    Ok(())
}

/// A sorted list of block numbers, with duplicates, grown fallibly up to `max`
/// entries: appended to, sorted and deduplicated whenever it fills.
struct BlockSet {
    v: Vec<u64>,
    max: usize,
}

impl BlockSet {
    fn add(&mut self, b: u64) -> Result<(), FsError> {
        if self.v.len() == self.v.capacity() {
            self.v.sort_unstable();
            self.v.dedup();
            grow(&mut self.v, self.max)?;
        }
        self.v.push(b);
        Ok(())
    }
    fn seal(&mut self) {
        self.v.sort_unstable();
        self.v.dedup();
    }
    fn contains(&self, b: u64) -> bool {
        self.v.binary_search(&b).is_ok()
    }
}

/// The revoke table: (block, the newest transaction that revoked it, as an offset from
/// the log's first) sorted by block once sealed; grown as [`BlockSet`] is.
struct Revoked {
    v: Vec<(u64, u32)>,
    max: usize,
    first_tid: u32,
}

impl Revoked {
    fn add(&mut self, block: u64, tid: u32) -> Result<(), FsError> {
        if self.v.len() == self.v.capacity() {
            self.seal();
            grow(&mut self.v, self.max)?;
        }
        self.v.push((block, tid.wrapping_sub(self.first_tid)));
        Ok(())
    }
    /// Sorted by block, the newest revocation of each only (the offsets grow along
    /// the log).
    fn seal(&mut self) {
        self.v
            .sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        self.v.dedup_by_key(|e| e.0);
    }
    /// Whether a transaction at least as new as `tid` revoked `block` (sealed).
    fn revokes(&self, block: u64, tid: u32) -> bool {
        self.v
            .binary_search_by_key(&block, |e| e.0)
            .is_ok_and(|i| self.v[i].1 >= tid.wrapping_sub(self.first_tid))
    }
}

/// Room for more in `v` after it was compacted: doubled when it is still more than
/// three quarters full (so that compacting stays rare), never past `max` entries;
/// [`FsError::NoMemory`] when it is full at `max` or the heap refuses.
fn grow<T>(v: &mut Vec<T>, max: usize) -> Result<(), FsError> {
    let cap = v.capacity();
    if v.len() * 4 >= cap * 3 {
        let want = cap.saturating_mul(2).max(64).min(max);
        if want > v.len() {
            v.try_reserve_exact(want - v.len())
                .map_err(|_| FsError::NoMemory)?;
        }
    }
    if v.len() == v.capacity() {
        return Err(FsError::NoMemory);
    }
    Ok(())
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
    run(dev, block_size, map, true, DEFAULT_REPLAY_BYTES)
}

/// [`replay`] within `bytes` of heap (see the module doc): a log whose revoke table
/// does not fit is refused with [`FsError::NoMemory`] before anything is written.
pub fn replay_within<D: BlockDev>(
    dev: &mut D,
    block_size: u32,
    map: &dyn Fn(u64) -> Option<u64>,
    bytes: usize,
) -> Result<ReplayStats, FsError> {
    run(dev, block_size, map, true, bytes)
}

/// What [`replay`] would do, without writing anything (all three passes, data
/// checksums included): for a read-only mount that has to say the filesystem needs
/// recovery, or for `dmesg`. Works on a read-only device.
pub fn check<D: BlockDev>(
    dev: &mut D,
    block_size: u32,
    map: &dyn Fn(u64) -> Option<u64>,
) -> Result<ReplayStats, FsError> {
    run(dev, block_size, map, false, DEFAULT_REPLAY_BYTES)
}

fn run<D: BlockDev>(
    dev: &mut D,
    block_size: u32,
    map: &dyn Fn(u64) -> Option<u64>,
    write: bool,
    budget: usize,
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
    let found = scan(&mut j)?;
    stats.log_end = found.end;
    stats.transactions = found.committed;
    stats.end_tid = j.sb.sequence.wrapping_add(found.committed);
    stats.revoke_records = found.revoke_records;
    let committed = found.committed;

    // Pass 2: the revoke table, newest revoking transaction per block, in half the
    // budget. When the records would not fit, only blocks that some transaction
    // logs enter it (a revoke of anything else changes nothing), which bounds it by
    // the log's size however many records the revoke blocks hold.
    let entry = core::mem::size_of::<(u64, u32)>();
    let mut revoked = Revoked {
        v: Vec::new(),
        max: budget / 2 / entry,
        first_tid: j.sb.sequence,
    };
    if found.revoke_records > 0 {
        let logged = if found.revoke_records > revoked.max as u64 {
            let mut logged = BlockSet {
                v: Vec::new(),
                max: budget / 4 / core::mem::size_of::<u64>(),
            };
            walk(&mut j, committed, &mut |_, piece| match piece {
                Piece::Tags { tags, .. } => tags.iter().try_for_each(|t| logged.add(t.block)),
                Piece::Revoke { .. } => Ok(()),
            })?;
            logged.seal();
            Some(logged)
        } else {
            None
        };
        walk(&mut j, committed, &mut |j, piece| match piece {
            Piece::Revoke { tid, block } => {
                for b in RevokeBlock::records(block, &j.sb)? {
                    if logged.as_ref().is_none_or(|l| l.contains(b)) {
                        revoked.add(b, tid)?;
                    }
                }
                Ok(())
            }
            Piece::Tags { .. } => Ok(()),
        })?;
        revoked.seal();
    }
    let revoked = &revoked;

    // Every block that will be written must be on the device: refuse before writing.
    walk(&mut j, committed, &mut |j, piece| {
        let Piece::Tags { tid, tags, .. } = piece else {
            return Ok(());
        };
        for tag in tags {
            if !revoked.revokes(tag.block, tid)
                && block_offset(j.dev, block_size, tag.block).is_none()
            {
                return Err(FsError::Corrupt(format!(
                    "journal transaction {tid} logs block {}, outside the device",
                    tag.block
                )));
            }
        }
        Ok(())
    })?;

    // Pass 3: replay. Logged copies that follow each other on the device are read
    // together, in a buffer of up to RUN_BYTES and a quarter of the budget (at
    // least a block), as the journal is usually one extent.
    let seed = j.sb.csum_seed();
    let bsz = block_size as usize;
    let max_run = (RUN_BYTES.min(budget / 4) / bsz).max(1);
    let mut run = zeroed(max_run * bsz).or_else(|_| zeroed(bsz))?;
    let max_run = run.len() / bsz;
    walk(&mut j, committed, &mut |j, piece| {
        let Piece::Tags { tid, data, tags } = piece else {
            return Ok(());
        };
        let mut i = 0;
        while i < tags.len() {
            let (tag, jblock) = (tags[i], j.advance(data, i as u64));
            if revoked.revokes(tag.block, tid) {
                stats.revoked += 1;
                i += 1;
                continue;
            }
            let first = j.locate(jblock)?;
            let mut n = 1;
            while i + n < tags.len() && n < max_run {
                let (next, nj) = (tags[i + n], j.advance(data, (i + n) as u64));
                if revoked.revokes(next.block, tid)
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
                let tag = tags[i + k];
                if !tag.data_ok(&j.sb, seed, tid, data) {
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
        Ok(())
    })?;
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
