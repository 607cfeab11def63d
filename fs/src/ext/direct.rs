//! Large writes straight from the caller's buffer (issue 30, "Speed"): the whole
//! blocks of a write call of at least [`DIRECT_MIN`] bytes that land in a hole of
//! the file (nothing mapped, nothing buffered there) are allocated as one extent per
//! call (per free run the allocator finds) and written to the device from the
//! caller's slice, with no copy, no zero-filled block buffer and no per-block
//! bookkeeping. The data then reaches the device in requests as large as the call
//! (`dd of=FILE` passes 256 KiB chunks; the raw disk's `dd` sends 1 MiB).
//!
//! Everything else is as for buffered data written out (`file.rs`'s `flush_node`):
//! the blocks are mapped unwritten before their write and initialised once the
//! device accepted it, listed until a flush confirms it (`unwritten.rs`), so ordered
//! mode holds (the commit flushes the data before the metadata that exposes it);
//! ENOSPC is the buffered path's (a call the free blocks cannot take whole, with the
//! metadata reserve kept, goes the buffered way, which stops at the exact block); a
//! write the device refuses ends the direct part, and the rest of the call, that
//! block on, is buffered for a retry at the next sync as before (its blocks stay
//! mapped unwritten, so the buffered data goes to them). Nothing is allocated on the
//! heap in proportion to the data.

use super::extent::MAX_INIT_LEN;
use super::*;

/// Smallest whole-block part of a write that goes straight to the device: as large
/// as the chunks the kernel's `dd of=FILE` passes, and the data runs of a small
/// mount. Smaller writes are gathered into runs (delayed allocation) instead.
pub(super) const DIRECT_MIN: usize = 256 << 10;

impl<D: BlockDev> Ext<D> {
    /// Writes the leading blocks of `data` (a multiple of the block size, at the
    /// block-aligned `offset`) that fall in a hole of `ino` straight to the device,
    /// as far as one free run reaches; the caller calls again for the rest, so that
    /// a long write commits between pieces (restart.rs). Returns the bytes written
    /// (0: the caller buffers them all); the size then covers them. Errors only where the buffered path's would end the call (an
    /// abort in a commit).
    pub(super) fn write_direct(
        &mut self,
        ino: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<usize, FsError> {
        let bs = self.sb.block_size as u64;
        let lblk0 = offset / bs;
        let mut want = data.len() as u64 / bs;
        {
            let n = self.nodes.get(&ino).ok_or(FsError::NotFound)?;
            let Some(map) = n.map.as_ref() else {
                return Ok(0);
            };
            if let Some(next) = map.next_mapped(lblk0) {
                want = want.min(next.saturating_sub(lblk0));
            }
            if let Some(k) = n.pending.next_from(lblk0, bs as usize) {
                want = want.min(k - lblk0);
            }
        }
        if want * bs < DIRECT_MIN as u64 {
            return Ok(0);
        }
        // The buffered path's space check for `want` more blocks (file data never
        // takes the metadata reserve).
        let per = bs / 4;
        let after = self.reserved + want;
        if self.free_blocks < after + after / per + self.resv_blocks() {
            return Ok(0);
        }
        let fallback_goal = self.group_start(self.group_of(ino));
        let mut n = self.take(ino)?;
        let mut map = n.map.take().unwrap_or_default();
        let mut done = 0u64;
        let goal = map.goal_for(lblk0).unwrap_or(fallback_goal);
        let ask = want.min(u64::from(MAX_INIT_LEN)) as u32;
        // Whatever stops the allocation (no space, a bitmap that cannot be read)
        // meets the buffered path again, which reports it.
        if let Ok((p, got)) = self.alloc_blocks(goal, ask) {
            // Unwritten until its data is on the disk (unwritten.rs).
            map.insert_unwritten(lblk0, p, got);
            n.map_dirty = true;
            let bytes = (u64::from(got) * bs) as usize;
            // A refused write leaves the blocks mapped unwritten; the buffered path
            // keeps the data for them and the next sync retries.
            if self.dev.write(p * bs, &data[..bytes]).is_ok() {
                self.stats.data_writes += 1;
                self.stats.data_bytes += bytes as u64;
                self.note_data_out(ino); // wberr.rs
                self.note_written(ino, &mut map, lblk0, p, u64::from(got));
                done = u64::from(got);
            }
        }
        // i_blocks as it will be (the tree blocks are recounted at sync).
        let acl = u64::from(n.inode.file_acl() != 0);
        n.inode
            .set_blocks_512((map.data_blocks() + map.meta.len() as u64 + acl) * (bs / 512));
        n.map = Some(map);
        let end = offset + done * bs;
        if done > 0 && end > n.inode.size() {
            n.inode.set_size(end);
        }
        n.dirty = true;
        self.put(ino, n);
        if done == 0 {
            return Ok(0);
        }
        self.note_size(end);
        if self.unflushed_full() {
            self.settle_data()?;
        }
        // A long write commits in pieces (restart.rs). A failed commit that did not
        // abort is reported by the next sync, as for buffered data.
        if self.journalled() && self.commit_due() {
            if let Err(e) = self.sync_all() {
                if self.aborted().is_some() {
                    return Err(e);
                }
            }
        }
        Ok((done * bs) as usize)
    }
}
