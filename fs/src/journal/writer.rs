//! Writing jbd2 transactions (the other half of [`crate::journal::replay`]), as Linux
//! lays them out: a descriptor block of tags (checksum v3 tags when the journal has
//! `csum_v3`, 64-bit block numbers with `64bit`), the logged copies (escaped when they
//! start with the jbd2 magic number), then a commit block (checksummed, commit time).
//!
//! The scheme is the simplest one that is correct without revoke records: **one
//! transaction in the log at a time**. A transaction is written from where the
//! previous one ended (so the log goes round the journal and wraps from `s_maxlen - 1`
//! back to `s_first`), the journal superblock is pointed at it (`s_start`,
//! `s_sequence`), the device is flushed, the commit block is written and flushed;
//! then the caller writes the blocks home (checkpoint), flushes, and calls
//! [`JournalWriter::checkpointed`], which marks the journal empty again (`s_start` 0,
//! `s_sequence` the next ID). A crash before the commit block is on stable storage
//! leaves the old metadata (nothing to replay); after it, replay (ours or e2fsck's)
//! writes the new metadata home, however much of the checkpoint had reached the disk.
//!
//! The empty mark needs no flush of its own: the next transaction rewrites the
//! journal superblock and flushes before its commit block, and blocks freed by a
//! committed transaction are not reused for file data before the next commit (see
//! the ext code), so replaying an already checkpointed transaction again is harmless.

use super::format::{crc_with_hole, feature, put_be32, tag_flag, JournalSuperblock, MAGIC};
use crate::blockdev::BlockDev;
use crate::crc32c::crc32c;
use crate::error::FsError;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Block types as written.
const DESCRIPTOR: u32 = 1;
const COMMIT: u32 = 2;

/// Largest run of journal blocks written with one device write.
const RUN_BYTES: usize = 256 * 1024;

fn put_be64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_be_bytes());
}

/// Where the journal's blocks are: (first journal block, blocks, first filesystem
/// block) runs, in journal order (an inode's extents).
#[derive(Clone, Debug, Default)]
pub struct JournalMap {
    /// The runs.
    pub runs: Vec<(u64, u32, u64)>,
}

impl JournalMap {
    /// The filesystem block of journal block `j`.
    pub fn lookup(&self, j: u64) -> Option<u64> {
        self.runs
            .iter()
            .find(|&&(l, n, _)| j >= l && j - l < u64::from(n))
            .map(|&(l, _, p)| p + (j - l))
    }
}

/// Counters for tests and `dmesg`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Transactions committed.
    pub commits: u64,
    /// Metadata blocks logged.
    pub blocks_logged: u64,
    /// Times the log wrapped from the end of the journal to `s_first`.
    pub wraps: u64,
}

/// Writes transactions into an internal jbd2 journal (see the module doc).
pub struct JournalWriter {
    map: JournalMap,
    bs: u32,
    sb: JournalSuperblock,
    /// Journal block 0 as on disk (the superblock in its first 1024 bytes).
    sb_raw: Vec<u8>,
    /// The ID of the next transaction.
    next_tid: u32,
    /// The journal block the next transaction starts at.
    head: u32,
    /// Most bytes of log blocks gathered for one device write
    /// ([`JournalWriter::set_run_bytes`]).
    run_bytes: usize,
    /// Aborted ([`JournalWriter::abort`]): nothing more is written.
    aborted: bool,
    /// `s_errno` as found at open ([`JournalWriter::recorded_errno`]).
    recorded_errno: i32,
    /// Counters.
    pub stats: WriterStats,
}

impl JournalWriter {
    /// Opens the journal for writing: reads and validates its superblock, which must
    /// say the journal is empty (replay first). Like Linux at mount, turns on the
    /// `64bit` journal feature for a 64-bit filesystem and checksums v3 for a
    /// `metadata_csum` one (unless the journal already has v2), and writes the
    /// superblock back if that changed anything (not flushed: the caller flushes
    /// before the first transaction). A v1 superblock or v1 (`COMPAT_CHECKSUM`)
    /// checksums give [`FsError::Unsupported`].
    pub fn open<D: BlockDev>(
        dev: &mut D,
        bs: u32,
        map: JournalMap,
        fs_64bit: bool,
        fs_csum: bool,
    ) -> Result<JournalWriter, FsError> {
        let p0 = map
            .lookup(0)
            .ok_or_else(|| FsError::Corrupt(String::from("journal block 0 not mapped")))?;
        let mut sb_raw = vec![0u8; bs as usize];
        dev.read(p0 * u64::from(bs), &mut sb_raw)?;
        let sb = JournalSuperblock::parse(&sb_raw)?;
        sb.validate(&sb_raw, bs)?;
        if sb.version != 2 {
            return Err(FsError::Unsupported(String::from(
                "writing a v1 jbd2 journal",
            )));
        }
        if sb.feature_compat & feature::COMPAT_CHECKSUM != 0 {
            return Err(FsError::Unsupported(String::from(
                "writing jbd2 v1 checksums",
            )));
        }
        if sb.num_fc_blocks != 0 {
            return Err(FsError::Unsupported(format!(
                "a jbd2 fast commit area ({} blocks)",
                sb.num_fc_blocks
            )));
        }
        if sb.start != 0 {
            return Err(FsError::Invalid("journal not empty: replay it first"));
        }
        let last = u64::from(sb.max_len) - 1;
        if map
            .lookup(last)
            .is_none_or(|p| (p + 1) * u64::from(bs) > dev.size_bytes())
        {
            return Err(FsError::Corrupt(format!(
                "journal s_maxlen {} is longer than the journal",
                sb.max_len
            )));
        }
        if sb.max_len - sb.first < 8 {
            return Err(FsError::Unsupported(String::from("journal too small")));
        }
        let mut w = JournalWriter {
            map,
            bs,
            next_tid: sb.sequence,
            head: sb.first,
            sb: sb.clone(),
            sb_raw,
            run_bytes: RUN_BYTES,
            aborted: false,
            recorded_errno: 0,
            stats: WriterStats::default(),
        };
        let mut incompat = sb.feature_incompat;
        if fs_64bit {
            incompat |= feature::INCOMPAT_64BIT;
        }
        if fs_csum && incompat & feature::INCOMPAT_CSUM_V2 == 0 {
            incompat |= feature::INCOMPAT_CSUM_V3;
        }
        // An error an aborted journal recorded (s_errno): kept for the caller (which
        // marks the filesystem as having errors, as Linux's ext4_clear_journal_err)
        // and cleared, so that it is reported once.
        w.recorded_errno = sb.errno;
        if sb.errno != 0 {
            put_be32(&mut w.sb_raw, 0x20, 0);
        }
        if incompat != sb.feature_incompat || sb.errno != 0 {
            put_be32(&mut w.sb_raw, 0x28, incompat);
            if incompat & (feature::INCOMPAT_CSUM_V2 | feature::INCOMPAT_CSUM_V3) != 0 {
                w.sb_raw[0x50] = super::format::CHECKSUM_TYPE_CRC32C;
            }
            w.write_sb(dev, 0, sb.sequence)?;
        }
        Ok(w)
    }

    /// The journal superblock as last written.
    pub fn superblock(&self) -> &JournalSuperblock {
        &self.sb
    }

    /// The ID the next transaction gets.
    pub fn next_tid(&self) -> u32 {
        self.next_tid
    }

    /// Where the next transaction starts (journal block).
    pub fn head(&self) -> u32 {
        self.head
    }

    /// Log blocks between `s_first` and `s_maxlen`.
    fn log_len(&self) -> u32 {
        self.sb.max_len - self.sb.first
    }

    fn tag_size(&self) -> usize {
        self.sb.tag_bytes()
    }

    /// Tags that fit in one descriptor block: the first carries the 16-byte UUID.
    fn tags_per_descriptor(&self) -> usize {
        let room = self.bs as usize - 12 - self.sb.tail_bytes();
        (room - 16) / self.tag_size()
    }

    /// Log blocks a transaction of `n` metadata blocks takes (descriptors, copies,
    /// commit block).
    pub fn blocks_needed(&self, n: usize) -> usize {
        n + n.div_ceil(self.tags_per_descriptor()).max(1) + 1
    }

    /// The most metadata blocks one transaction can hold (the log minus room for its
    /// descriptor and commit blocks).
    pub fn max_blocks(&self) -> usize {
        let log = self.log_len() as usize;
        let per = self.tags_per_descriptor();
        // n + ceil(n / per) + 1 <= log
        let mut n = (log - 1) * per / (per + 1);
        while n > 0 && self.blocks_needed(n) > log {
            n -= 1;
        }
        n
    }

    fn write_sb<D: BlockDev>(&mut self, dev: &mut D, start: u32, seq: u32) -> Result<(), FsError> {
        put_be32(&mut self.sb_raw, 0x1c, start);
        put_be32(&mut self.sb_raw, 0x18, seq);
        self.store_sb(dev)
    }

    /// Seals the raw superblock as edited (its checksum, where the journal has
    /// one), takes it as the current one and writes it to the journal's first block.
    fn store_sb<D: BlockDev>(&mut self, dev: &mut D) -> Result<(), FsError> {
        let parsed = JournalSuperblock::parse(&self.sb_raw)?;
        if parsed.has_csum() {
            let c = JournalSuperblock::compute_checksum(&self.sb_raw);
            put_be32(&mut self.sb_raw, 0xfc, c);
        }
        self.sb = JournalSuperblock::parse(&self.sb_raw)?;
        let p0 = self.map.lookup(0).ok_or(FsError::Invalid("journal map"))?;
        dev.write(p0 * u64::from(self.bs), &self.sb_raw)?;
        Ok(())
    }

    /// Bounds the buffer that gathers adjacent log blocks into one device write to
    /// `bytes` (default 256 KiB; at least a block): a mount sizes it to its memory
    /// budget. The buffer is taken fallibly, for at most the transaction; without
    /// it, blocks are written one by one.
    pub fn set_run_bytes(&mut self, bytes: usize) {
        self.run_bytes = bytes;
    }

    /// Journal block after `j` (wrapping to `s_first`).
    fn next(&self, j: u32) -> u32 {
        if j + 1 >= self.sb.max_len {
            self.sb.first
        } else {
            j + 1
        }
    }

    /// Writes transaction `blocks` ((home block, contents of one block)) and commits
    /// it: log blocks, journal superblock pointing at them, flush, commit block
    /// (`commit_sec` as its time), flush. On return the transaction survives a crash;
    /// write the blocks home, flush, then call [`JournalWriter::checkpointed`].
    /// More blocks than [`JournalWriter::max_blocks`] give [`FsError::NoSpace`]
    /// (nothing is written). Home blocks must be distinct.
    pub fn commit<D: BlockDev>(
        &mut self,
        dev: &mut D,
        blocks: &[(u64, &[u8])],
        commit_sec: u64,
    ) -> Result<u32, FsError> {
        let bs = self.bs as usize;
        if self.aborted {
            return Err(FsError::ReadOnly);
        }
        if blocks.len() > self.max_blocks() {
            return Err(FsError::NoSpace);
        }
        if blocks.iter().any(|(_, d)| d.len() != bs) {
            return Err(FsError::Invalid("journal block size"));
        }
        let tid = self.next_tid;
        let start = self.head;
        let seed = self.sb.csum_seed();
        let v3 = self.sb.csum_v3();
        let csum = self.sb.has_csum();
        let wide = self.sb.is_64bit();
        let per = self.tags_per_descriptor();
        let tag_size = self.tag_size();
        // Descriptors, copies and the commit block, gathered up to `run_bytes`.
        let log_bytes = self.blocks_needed(blocks.len()).saturating_mul(bs);
        let mut out = RunWriter::new(bs, self.run_bytes.min(log_bytes));
        let mut j = start;
        for chunk in blocks.chunks(per.max(1)) {
            // Descriptor.
            let mut d = vec![0u8; bs];
            put_be32(&mut d, 0, MAGIC);
            put_be32(&mut d, 4, DESCRIPTOR);
            put_be32(&mut d, 8, tid);
            let mut off = 12;
            let mut escaped: Vec<Option<Vec<u8>>> = Vec::with_capacity(chunk.len());
            for (i, &(home, data)) in chunk.iter().enumerate() {
                if !wide && home > u64::from(u32::MAX) {
                    return Err(FsError::Invalid("64-bit block in a 32-bit journal"));
                }
                let mut flags = 0u32;
                let esc = if u32::from_be_bytes([data[0], data[1], data[2], data[3]]) == MAGIC {
                    flags |= tag_flag::ESCAPE;
                    let mut c = data.to_vec();
                    c[..4].fill(0);
                    Some(c)
                } else {
                    None
                };
                let logged: &[u8] = esc.as_deref().unwrap_or(data);
                let c = if csum {
                    crc32c(crc32c(seed, &tid.to_be_bytes()), logged)
                } else {
                    0
                };
                if i > 0 {
                    flags |= tag_flag::SAME_UUID;
                }
                if i + 1 == chunk.len() {
                    flags |= tag_flag::LAST_TAG;
                }
                put_be32(&mut d, off, home as u32);
                if v3 {
                    put_be32(&mut d, off + 4, flags);
                    put_be32(&mut d, off + 8, (home >> 32) as u32);
                    put_be32(&mut d, off + 12, c);
                } else {
                    d[off + 4..off + 6].copy_from_slice(&(c as u16).to_be_bytes());
                    d[off + 6..off + 8].copy_from_slice(&(flags as u16).to_be_bytes());
                    if wide {
                        put_be32(&mut d, off + 8, (home >> 32) as u32);
                    }
                }
                off += tag_size;
                if i == 0 {
                    d[off..off + 16].copy_from_slice(&self.sb.uuid);
                    off += 16;
                }
                escaped.push(esc);
            }
            if csum {
                let hole = bs - 4;
                let c = crc_with_hole(seed, &d, hole);
                put_be32(&mut d, hole, c);
            }
            j = self.emit(dev, &mut out, j, &d)?;
            for (i, &(_, data)) in chunk.iter().enumerate() {
                let logged: &[u8] = escaped[i].as_deref().unwrap_or(data);
                j = self.emit(dev, &mut out, j, logged)?;
            }
        }
        out.finish(dev)?;
        // Point the superblock at the transaction; everything before the commit block
        // must be on stable storage before it is written.
        self.write_sb(dev, start, tid)?;
        dev.flush()?;
        let mut c = vec![0u8; bs];
        put_be32(&mut c, 0, MAGIC);
        put_be32(&mut c, 4, COMMIT);
        put_be32(&mut c, 8, tid);
        put_be64(&mut c, 48, commit_sec);
        if csum {
            // As Linux: h_chksum_type/size stay 0 with v2/v3 (they describe v1 sums).
            let k = crc_with_hole(seed, &c, 16);
            put_be32(&mut c, 16, k);
        }
        j = self.emit(dev, &mut out, j, &c)?;
        out.finish(dev)?;
        dev.flush()?;
        self.head = j;
        self.next_tid = tid.wrapping_add(1);
        self.stats.commits += 1;
        self.stats.blocks_logged += blocks.len() as u64;
        Ok(tid)
    }

    /// Queues log block `data` at journal block `j`; returns the next journal block.
    fn emit<D: BlockDev>(
        &mut self,
        dev: &mut D,
        out: &mut RunWriter,
        j: u32,
        data: &[u8],
    ) -> Result<u32, FsError> {
        let p = self
            .map
            .lookup(u64::from(j))
            .ok_or_else(|| FsError::Corrupt(format!("journal block {j} not mapped")))?;
        out.push(dev, p, data)?;
        let n = self.next(j);
        if n < j {
            self.stats.wraps += 1;
        }
        Ok(n)
    }

    /// The committed transaction is home (written and flushed): marks the journal
    /// empty. Not flushed (see the module doc). Call it only once every home write of
    /// the transaction is known to have succeeded (the flush after them returned Ok):
    /// the tail never moves past a transaction whose checkpoint is not complete.
    pub fn checkpointed<D: BlockDev>(&mut self, dev: &mut D) -> Result<(), FsError> {
        if self.aborted {
            return Err(FsError::ReadOnly);
        }
        self.write_sb(dev, 0, self.next_tid)
    }

    /// Aborts the journal, as jbd2's `jbd2_journal_abort`: nothing more is written to
    /// it ([`JournalWriter::commit`] and [`JournalWriter::checkpointed`] give
    /// [`FsError::ReadOnly`]), and the error `errno` (negative, as Linux's) is recorded
    /// in the journal superblock's `s_errno`, which keeps `s_start`: a committed
    /// transaction whose checkpoint failed stays in the log for replay (ours or
    /// e2fsck's, which also marks the filesystem as having errors). Recording the
    /// error is best effort (the device may be failing): its error is returned.
    pub fn abort<D: BlockDev>(&mut self, dev: &mut D, errno: i32) -> Result<(), FsError> {
        if self.aborted {
            return Ok(());
        }
        self.aborted = true;
        put_be32(&mut self.sb_raw, 0x20, errno as u32);
        self.store_sb(dev)?;
        dev.flush()?;
        Ok(())
    }

    /// The error an earlier abort recorded in the journal (`s_errno`, 0 for none), as
    /// found at [`JournalWriter::open`] (which clears it on disk).
    pub fn recorded_errno(&self) -> i32 {
        self.recorded_errno
    }

    /// Whether [`JournalWriter::abort`] was called.
    pub fn is_aborted(&self) -> bool {
        self.aborted
    }
}

/// Coalesces log blocks that are adjacent on the device into one write, in a buffer
/// of at most `cap` bytes taken once (fallibly: without it, each block is written
/// as it comes).
struct RunWriter {
    bs: usize,
    start: u64,
    buf: Vec<u8>,
}

impl RunWriter {
    fn new(bs: usize, cap: usize) -> RunWriter {
        let mut buf = Vec::new();
        if cap >= 2 * bs {
            let _ = buf.try_reserve_exact(cap / bs * bs);
        }
        RunWriter { bs, start: 0, buf }
    }

    fn push<D: BlockDev>(&mut self, dev: &mut D, blk: u64, data: &[u8]) -> Result<(), FsError> {
        if self.buf.capacity() < 2 * self.bs {
            return Ok(dev.write(blk * self.bs as u64, data)?);
        }
        let next = self.start + (self.buf.len() / self.bs) as u64;
        if !self.buf.is_empty()
            && (blk != next || self.buf.len() + data.len() > self.buf.capacity())
        {
            self.finish(dev)?;
        }
        if self.buf.is_empty() {
            self.start = blk;
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    fn finish<D: BlockDev>(&mut self, dev: &mut D) -> Result<(), FsError> {
        if !self.buf.is_empty() {
            dev.write(self.start * self.bs as u64, &self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}
