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
//! Not split: an unlink (or rename over) of a large file, whose blocks go in one
//! transaction (Linux keeps the inode on the orphan list while it truncates in
//! steps; Xenlet does not put inodes on the orphan list yet).

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
}
