//! Crash safety (issue 14): how a sync puts metadata on the disk so that a crash at
//! any point leaves a filesystem that mounts and that e2fsck can repair without
//! questions, with everything synced before intact.
//!
//! - **ext4 with a journal** (ordered mode, like Linux's `data=ordered`): file data is
//!   written first; all metadata a sync changed (the block cache's dirty blocks:
//!   bitmaps, group descriptors, inode tables, directory, extent and index blocks;
//!   plus the superblock's block) goes into one jbd2 transaction
//!   ([`crate::journal::writer`]); flush (data and log together), commit block, flush;
//!   then the blocks are written home, flushed, and the journal is marked empty. A
//!   crash leaves the old or the new metadata after replay (ours at mount, or
//!   e2fsck's). `needs_recovery` is set while mounted read-write, cleared at unmount.
//! - **without a journal** (ext2, or a journal we cannot write): ordered writes with
//!   flushes between the phases: data; bitmaps, group descriptors, the block-map
//!   blocks of files and every block new since the last sync (new directory blocks);
//!   directory blocks (and the rest); inode tables; then the superblock. A crash
//!   between phases leaves what `e2fsck -p` repairs on its own (bitmap and count
//!   differences, entries naming a not-yet-written inode, which it clears), except
//!   one case: an inode whose last entry was removed (unlink, or the old file of a
//!   rename-over) before the inode itself was written free is an "unattached inode",
//!   which needs `e2fsck -y` (it goes to lost+found). Writing inodes before entries
//!   instead trades that for directories pointing at uninitialised inodes and lost
//!   rename targets (measured by the crash sweep: 33 of 218 crash points needed -y,
//!   against 18 of 217 this way). Without a journal no order makes rename-over
//!   atomic. An extent tree (ext4 without a journal) is written to new blocks at
//!   each sync that changes it (`store_map`), so the inode, written last, switches
//!   from a whole old tree to a whole new one: rewritten in place, a leaf reaching
//!   past the old inode's size was "end of extent exceeds allowed value" for
//!   `e2fsck -p` (issue 30, defect 7).
//! - In both, blocks freed since the last sync stay allocated on disk until the next
//!   sync has written its file data: a block the committed metadata still points to
//!   is never overwritten by new file data before that metadata is replaced.
//! - The block cache is pinned: dirty metadata never reaches the device outside a
//!   sync; a mutating call starts with a sync when too much metadata is dirty (so a
//!   transaction stays a fraction of the journal).
//! - An operation larger than the log (one write call of many megabytes, the
//!   truncate of a large file, the unlink of one through the orphan list) commits
//!   in several transactions, each consistent (`restart.rs`). A transaction larger than the journal still (a journal too
//!   small for one operation's metadata) falls back to the ordered writes of the
//!   unjournalled case, which are not atomic ([`Ext::crash_stats`] counts these).
//!
//! - A failed write is reported by the device at the next flush (write-behind). Any
//!   error after the file data (writing the log, the commit block, the checkpoint,
//!   the journal superblock, the flushes) aborts the journal and the mount
//!   (`abort.rs`), as jbd2 does on a checkpoint error: the journal's tail is moved
//!   ([`JournalWriter::checkpointed`]) only after the flush that follows the home
//!   writes succeeded, so a committed transaction whose checkpoint failed stays in
//!   the log for replay, and no later transaction is written over it.
//!
//! The orphan list a crashed Linux (or a crashed unlink in steps) leaves is finished
//! at mount (`orphan.rs`), through the same transactions. Not done: putting an
//! unlinked file still open on the orphan list (it is freed at unlink: Xenlet has
//! no open-file table yet), revoke records (not needed with one transaction in the
//! log at a time), fast commits.

use super::*;
use crate::journal::writer::{JournalMap, JournalWriter};

/// Counters of the crash-safety code, for tests and `dmesg`.
#[derive(Clone, Debug, Default)]
pub struct CrashStats {
    /// Journal transactions committed.
    pub commits: u64,
    /// Times the log wrapped round the end of the journal.
    pub journal_wraps: u64,
    /// Syncs that wrote metadata in ordered phases without the journal.
    pub ordered_syncs: u64,
    /// Syncs whose metadata did not fit in the journal (written in ordered phases).
    pub oversized: u64,
    /// Why the journal is not used, if the filesystem has one.
    pub journal_error: Option<String>,
}

/// Crash-safety state of a mount.
#[derive(Default)]
pub(super) struct CrashState {
    journal: Option<JournalWriter>,
    /// Freed block ranges waiting for the next sync.
    deferred: Vec<(u64, u64)>,
    /// Applying `deferred` (frees go through).
    applying: bool,
    /// Groups the ranges in `deferred` span, counted per range (an upper bound of
    /// the bitmaps their frees will change).
    deferred_groups: usize,
    stats: CrashStats,
}

impl<D: BlockDev> Ext<D> {
    /// Crash-safety counters.
    pub fn crash_stats(&self) -> CrashStats {
        let mut s = self.crash.stats.clone();
        if let Some(w) = &self.crash.journal {
            s.commits = w.stats.commits;
            s.journal_wraps = w.stats.wraps;
        }
        s
    }

    /// Aborts the journal, if there is one (`abort.rs`): nothing more is written to
    /// it, and `errno` is recorded in its superblock (best effort).
    pub(super) fn abort_journal(&mut self, errno: i32) -> Result<(), FsError> {
        match self.crash.journal.as_mut() {
            Some(w) => w.abort(&mut self.dev, errno),
            None => Ok(()),
        }
    }

    /// Whether metadata goes through the journal.
    pub fn journalled(&self) -> bool {
        self.crash.journal.is_some()
    }

    /// The journal writer gathers log blocks for a write in runs no larger than the
    /// data's (`max_io`, from the mount's budget), and at most 256 KiB.
    pub(super) fn size_journal_runs(&mut self) {
        let bytes = self.max_io.min(256 << 10);
        if let Some(w) = self.crash.journal.as_mut() {
            w.set_run_bytes(bytes);
        }
    }

    /// At a read-write mount: pins the cache, opens the journal if the filesystem has
    /// one and sets `needs_recovery` (the caller writes the superblock and flushes).
    pub(super) fn crash_mount(&mut self) -> Result<(), FsError> {
        self.cache.pinned = true;
        let j = self.sb.journal_inum();
        // Journals it cannot write (issue 30, defect 5): Linux fails such a mount;
        // here it is read-only with the reason (the caller), never written
        // unjournalled behind the journal's back.
        if self.sb.compat & COMPAT_HAS_JOURNAL != 0 && j == 0 {
            self.crash.stats.journal_error = Some(format!(
                "an external journal (device {:#x}), which Xenlet cannot open",
                get32(&self.sb.raw, 0xE4)
            ));
            return Ok(());
        }
        if j == 0 {
            return Ok(());
        }
        if self.sb.compat & COMPAT_FAST_COMMIT != 0 {
            self.crash.stats.journal_error = Some(String::from(
                "the filesystem's fast_commit feature: jbd2 fast commits are not written",
            ));
            return Ok(());
        }
        let opened = (|| {
            let runs = self.extents(Ino::from(j))?.extents;
            let map = JournalMap { runs };
            JournalWriter::open(
                &mut self.dev,
                self.sb.block_size,
                map,
                self.sb.incompat & INCOMPAT_64BIT != 0,
                self.sb.has_csum(),
            )
        })();
        match opened {
            Ok(w) => {
                // An error an aborted mount recorded in the journal (abort.rs): the
                // filesystem has errors (replay may have written a superblock from
                // before them), as Linux's ext4_clear_journal_err.
                if w.recorded_errno() != 0 {
                    let st = self.sb.state();
                    self.sb.set_state(st | STATE_ERROR);
                }
                self.crash.journal = Some(w);
                self.size_journal_runs();
                self.sb.incompat |= INCOMPAT_RECOVER;
                put32(&mut self.sb.raw, 0x60, self.sb.incompat);
            }
            Err(e) => self.crash.stats.journal_error = Some(format!("{e}")),
        }
        Ok(())
    }

    /// At a clean unmount (after the last sync): the journal is empty, so
    /// `needs_recovery` goes (the caller writes the superblock).
    pub(super) fn crash_unmount(&mut self) {
        if self.crash.journal.is_some() {
            self.sb.incompat &= !INCOMPAT_RECOVER;
            put32(&mut self.sb.raw, 0x60, self.sb.incompat);
        }
    }

    /// Called by `free_blocks_range`: true if the free waits for the next sync.
    pub(super) fn defer_free(&mut self, start: u64, len: u64) -> bool {
        if self.crash.applying || !self.cache.pinned {
            return false;
        }
        self.cache.forget(start, len);
        self.crash.deferred.push((start, len));
        let fdb = u64::from(self.sb.first_data_block);
        let bpg = u64::from(self.sb.blocks_per_group).max(1);
        let (g0, g1) = (
            start.saturating_sub(fdb) / bpg,
            (start + len.max(1) - 1).saturating_sub(fdb) / bpg,
        );
        self.crash.deferred_groups += (g1 - g0 + 1) as usize;
        self.touch(); // abort.rs: a change to the running transaction
        true
    }

    /// Whether frees are waiting (a full filesystem may find room after a sync).
    pub(super) fn frees_deferred(&self) -> bool {
        !self.crash.deferred.is_empty()
    }

    /// Before a write of `bytes`: if the filesystem is short of free blocks and frees
    /// are waiting, sync so that they count.
    pub(super) fn room_for_write(&mut self, bytes: usize) -> Result<(), FsError> {
        if self.frees_deferred() {
            let bs = u64::from(self.sb.block_size);
            let need =
                (bytes as u64).div_ceil(bs) + self.reserved + self.resv_blocks() + META_MARGIN;
            if self.free_blocks < need {
                self.sync_all()?;
            }
        }
        Ok(())
    }

    /// In sync, after file data is written: the frees go to the bitmaps.
    pub(super) fn apply_deferred_frees(&mut self) -> Result<(), FsError> {
        let list = core::mem::take(&mut self.crash.deferred);
        self.crash.deferred_groups = 0;
        self.crash.applying = true;
        let mut r = Ok(());
        for (s, l) in list {
            if let Err(e) = self.free_blocks_range(s, l) {
                r = Err(e);
            }
        }
        self.crash.applying = false;
        r
    }

    /// At the start of each mutating call: sync if the dirty metadata could outgrow
    /// a transaction (or the cache).
    pub(super) fn maybe_commit(&mut self) -> Result<(), FsError> {
        if self.commit_due() {
            match self.sync_all() {
                // A full disk (file data or tree blocks without room): the operation
                // goes on in the running transaction; it may be the one that frees.
                Err(FsError::NoSpace) => {}
                r => r?,
            }
        }
        Ok(())
    }

    /// Whether the running transaction is as large as it should get: the dirty
    /// metadata, the inodes and groups changed and the bitmaps the deferred frees
    /// will change could outgrow half the journal (or the cache).
    pub(super) fn commit_due(&self) -> bool {
        if !self.cache.pinned {
            return false;
        }
        // Half the cache (at least 64 blocks, so a small budget does not make every
        // call a sync, but no more than 256 KiB of them: 64 blocks of 64 KiB pinned
        // until the commit were 4 MiB), and at most half the journal.
        let floor = (256 << 10) / self.sb.block_size as usize;
        let cache = (self.cache.limit() / 2).max(floor.clamp(cache::MIN_BLOCKS, 64));
        let limit = match self.journal_half() {
            Some(j) => j.min(cache),
            None => cache,
        };
        self.txn_estimate() > limit
    }

    /// Half the journal's capacity in blocks (what a transaction should stay
    /// within), if metadata goes through a journal.
    pub(super) fn journal_half(&self) -> Option<usize> {
        self.crash.journal.as_ref().map(|w| w.max_blocks() / 2)
    }

    /// An upper bound of the blocks the running transaction would commit: the dirty
    /// metadata, the inodes and groups changed and the bitmaps the deferred frees
    /// will change.
    pub(super) fn txn_estimate(&self) -> usize {
        self.cache.dirty_count()
            + self
                .nodes
                .values()
                .filter(|n| n.dirty || n.map_dirty)
                .count()
            + 3 * self.dirty_groups.len()
            + 2 * self.crash.deferred_groups
            + 8
    }

    /// The superblock's block: (block number, contents with the superblock sealed).
    fn super_block_image(&mut self) -> Result<(u64, Vec<u8>), FsError> {
        let bs = self.sb.block_size as u64;
        let blk = SB_OFFSET / bs;
        let mut b = vec![0u8; bs as usize];
        self.dev.read(blk * bs, &mut b)?;
        let off = (SB_OFFSET - blk * bs) as usize;
        let s = self.sb.sealed_bytes().to_vec();
        b[off..off + s.len()].copy_from_slice(&s);
        Ok((blk, b))
    }

    /// In sync, once the superblock fields are final: puts the dirty metadata and the
    /// superblock on the disk (journalled, or in ordered phases). The caller flushes.
    pub(super) fn commit_metadata(&mut self) -> Result<(), FsError> {
        if self.crash.journal.is_some() {
            let (sb_blk, sb_img) = self.super_block_image()?;
            let now = self.now().max(0) as u64;
            let Some(w) = self.crash.journal.as_mut() else {
                return Ok(());
            };
            let mut blocks: Vec<(u64, &[u8])> = self
                .cache
                .dirty_blocks()
                .filter(|&(b, _)| b != sb_blk)
                .collect();
            blocks.push((sb_blk, &sb_img));
            if blocks.len() <= w.max_blocks() {
                w.commit(&mut self.dev, &blocks, now)?;
                drop(blocks);
                // Checkpoint: an error here or at the flush aborts (the caller), and
                // the tail stays on this transaction.
                self.cache.write_back_where(&mut self.dev, &|_| true)?;
                self.write_super()?;
                self.dev.flush()?;
                self.cache.settle(&|_| true); // home, now that the flush said so
                if let Some(w) = self.crash.journal.as_mut() {
                    w.checkpointed(&mut self.dev)?;
                }
                return Ok(());
            }
            self.crash.stats.oversized += 1;
        }
        self.crash.stats.ordered_syncs += 1;
        self.write_ordered()
    }

    /// Ordered phases without a journal (see the module doc).
    fn write_ordered(&mut self) -> Result<(), FsError> {
        // File data first.
        self.dev.flush()?;
        let itb = self.itable_blocks();
        let fdb = self.sb.first_data_block as u64;
        let gdt = (fdb + 1, fdb + 1 + self.sb.gdt_blocks());
        // The dirty blocks (in block order), each marked if it is a bitmap or a tree
        // block (`FIRST`) or in an inode table (`TABLE`): found by looking each
        // group's blocks up in this list, not by sets of every group's blocks, which
        // cost some 50 bytes a group at each sync (the group count comes from disk).
        const FIRST: u8 = 1;
        const TABLE: u8 = 2;
        let mut dirty: Vec<(u64, u8)> = self.cache.dirty_blocks().map(|(b, _)| (b, 0)).collect();
        let mut mark = |start: u64, end: u64, class: u8| {
            let i = dirty.partition_point(|&(b, _)| b < start);
            for e in dirty[i..].iter_mut().take_while(|e| e.0 < end) {
                e.1 |= class;
            }
        };
        for gd in self.gds.iter() {
            mark(gd.block_bitmap(), gd.block_bitmap() + 1, FIRST);
            mark(gd.inode_bitmap(), gd.inode_bitmap() + 1, FIRST);
            mark(gd.inode_table(), gd.inode_table() + itb, TABLE);
        }
        for n in self.nodes.values() {
            if let Some(m) = &n.map {
                for &b in &m.meta {
                    mark(b, b + 1, FIRST);
                }
            }
        }
        // Bitmaps, group descriptors, block-map blocks, new blocks.
        const PHASE1: u8 = 4;
        for e in dirty.iter_mut() {
            let fresh = self.cache.is_fresh(e.0) && e.1 & TABLE == 0;
            if e.1 & FIRST != 0 || fresh || (e.0 >= gdt.0 && e.0 < gdt.1) {
                e.1 |= PHASE1;
            }
        }
        let class = |b: u64| {
            dirty
                .binary_search_by_key(&b, |&(d, _)| d)
                .map_or(0, |i| dirty[i].1)
        };
        // Each phase's blocks are clean once the flush after them succeeded.
        let phase1 = |b| class(b) & PHASE1 != 0;
        self.cache.write_back_where(&mut self.dev, &phase1)?;
        self.dev.flush()?;
        self.cache.settle(&phase1);
        // Directory entries and the rest.
        let phase2 = |b| class(b) & TABLE == 0;
        self.cache.write_back_where(&mut self.dev, &phase2)?;
        self.dev.flush()?;
        self.cache.settle(&phase2);
        // Inodes.
        self.cache.write_back_where(&mut self.dev, &|_| true)?;
        self.dev.flush()?;
        self.cache.settle(&|_| true);
        self.write_super()
    }
}
