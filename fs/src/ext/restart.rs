//! Operations larger than the log (issue 30, defect 5): split into several
//! transactions, each leaving a consistent filesystem, as Linux's ext4 restarts its
//! journal handle (`ext4_truncate` removing extents in steps, a large write
//! allocating in pieces) instead of one transaction the journal cannot hold, which
//! would go out unjournalled.
//!
//! - A write call: file data is written out whenever the buffered data reaches
//!   its bound (not only at the end of the call), the file's size then covering
//!   what was written, and the transaction is committed when it is as large as it
//!   should get ([`Ext::commit_due`]). A crash leaves a prefix of the write.
//! - A truncate: the blocks are freed from the end, at most a group's worth of one
//!   extent at a time, the size following down to where the freeing is; the
//!   transaction is committed between steps when due. A crash leaves the file cut
//!   to some size between the old and the new one, its data below intact.
//!
//! - An unlink (or a rename over) of a file's last name: as Linux's
//!   `ext4_evict_inode`, the inode goes on the orphan list (`orphan.rs`) in the
//!   transaction that removes the name, its blocks are freed in steps as a truncate's
//!   (committing between them when due), and the last step frees the inode and takes
//!   it off the list, in one transaction. A crash between leaves a nameless inode on
//!   the list, cut to some size, which the next read-write mount (or e2fsck) frees.
//!   A file whose freeing fits in one transaction (`release_too_big`) is
//!   freed at once, as before, without the list.

use super::*;

impl<D: BlockDev> Ext<D> {
    /// Within a write call, with `end` bytes of the file written so far: the size
    /// covers them, the buffered data goes out, and the transaction commits if due.
    pub(super) fn restart_write(&mut self, ino: u32, end: u64) -> Result<(), FsError> {
        let n = self.node(ino)?;
        if end > n.inode.size() {
            n.inode.set_size(end);
            n.dirty = true;
            self.note_size(end);
        }
        self.flush_all_data()?;
        if self.journalled() && self.commit_due() {
            self.sync_all()?;
        }
        Ok(())
    }

    /// Frees the blocks of `ino` past `size` bytes in steps, committing between them
    /// when the transaction is due, down to the block that holds `size` (the caller
    /// cuts the rest). The size follows down.
    pub(super) fn truncate_in_steps(&mut self, ino: u32, size: u64) -> Result<(), FsError> {
        if !self.journalled() {
            return Ok(());
        }
        let bs = u64::from(self.sb.block_size);
        let keep = size.div_ceil(bs);
        let step = u64::from(self.sb.blocks_per_group).max(1);
        self.ensure_map(ino)?;
        loop {
            let n = self.node(ino)?;
            let Some(last) = n.map.as_ref().and_then(|m| m.ext.last().copied()) else {
                return Ok(());
            };
            let end = last.lblk + u64::from(last.len);
            if end <= keep {
                return Ok(());
            }
            let from = last.lblk.max(end.saturating_sub(step)).max(keep);
            if from == keep {
                // The last step is the caller's (with the tail of the last block).
                return Ok(());
            }
            self.drop_blocks(ino, from)?;
            let n = self.node(ino)?;
            if from * bs < n.inode.size() {
                n.inode.set_size(from * bs);
                n.dirty = true;
            }
            if self.commit_due() {
                self.sync_all()?;
            }
        }
    }

    /// Whether freeing every block of `ino` at once may outgrow a transaction: the
    /// running one's estimate, two blocks for each group its extents are in (bitmap
    /// and descriptor, as the deferred frees count them) and its tree blocks, over
    /// half the journal. Always false without a journal or for a non-file.
    pub(super) fn release_too_big(&mut self, ino: u32) -> Result<bool, FsError> {
        let Some(half) = self.journal_half() else {
            return Ok(false);
        };
        if self.node(ino)?.inode.kind() != FileType::File {
            return Ok(false);
        }
        self.ensure_map(ino)?;
        let fdb = u64::from(self.sb.first_data_block);
        let bpg = u64::from(self.sb.blocks_per_group).max(1);
        let base = self.txn_estimate();
        let n = self.node(ino)?;
        let Some(map) = n.map.as_ref() else {
            return Ok(false);
        };
        let mut blocks = base + map.meta.len();
        for e in &map.ext {
            let g0 = e.pblk.saturating_sub(fdb) / bpg;
            let g1 = (e.pblk + u64::from(e.len.max(1)) - 1).saturating_sub(fdb) / bpg;
            blocks += 2 * (g1 - g0 + 1) as usize;
            if blocks > half {
                return Ok(true);
            }
        }
        Ok(blocks > half)
    }

    /// The last link of `ino` went: frees it and everything it holds; a file too
    /// large for one transaction through the orphan list, in steps (see the module
    /// doc).
    pub(super) fn release_unlinked(&mut self, ino: u32) -> Result<(), FsError> {
        if !self.release_too_big(ino)? {
            return self.release(ino);
        }
        // Its buffered data is never written (a commit between the steps would).
        let mut n = self.take(ino)?;
        self.drop_pending(&mut n, 0);
        self.put(ino, n);
        self.orphan_add(ino)?;
        self.truncate_in_steps(ino, 0)?;
        self.orphan_del(ino)?;
        self.release(ino)
    }
}
