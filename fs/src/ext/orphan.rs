//! The orphan list, processed at a read-write mount (after journal replay, before
//! anything else is written).
//!
//! A file unlinked while still open, or a truncate that had not finished, is put by
//! Linux on a list that survives a crash: `s_last_orphan` in the superblock names the
//! first inode, and each inode's `i_dtime` names the next (0 ends the list). What a
//! crash leaves there is finished here, as Linux's `ext4_orphan_cleanup` and e2fsck's
//! `release_orphan_inodes` do: an inode with no links left is freed with everything it
//! holds (the final release of unlink: blocks, extended attribute block, bitmaps and
//! free counts, `i_dtime` set to the deletion time); one with links had a truncate
//! interrupted, so the blocks past `i_size` go and `i_dtime` is cleared. Each inode
//! is taken off the list as it is done (`s_last_orphan` moves on to the next), and
//! the changes go out like any others (with a journal, in jbd2 transactions that each
//! leave a consistent list), so a crash during the cleanup leaves a list that the next
//! mount (or e2fsck) finishes. Without a journal (ext2) the ordered writes leave,
//! as for any crash there, something e2fsck repairs, at worst with `-y`: an inode
//! already freed in its bitmap but still on the list, which the next mount reports
//! as below.
//!
//! Xenlet itself puts an inode on the list for the unlink of a file too large to
//! free in one transaction (`orphan_add`, `restart.rs`), and takes it off
//! (`orphan_del`) in the transaction that frees it; an orphan too large for
//! one transaction is freed here in steps as well, staying at the head of the list
//! until the last one.
//!
//! The list is on-disk data and is not trusted. An inode number below the first
//! non-reserved inode or past the inode count, an inode not allocated in its bitmap
//! or with no mode, one seen before (a cycle), or an inode whose structures are
//! corrupt stops the walk: the rest of the list is dropped (`s_last_orphan` = 0, as
//! Linux does on a "bad orphan inode"), the filesystem is marked as having errors
//! (`s_state` gets `EXT2_ERROR_FS`, so the next e2fsck checks it in full; what the
//! dropped rest of the list held may need `-y`), the mount goes on read-write
//! (Linux's default `errors=continue`), and [`Ext::orphans`] says what happened. The
//! walk visits each inode at most once, so it ends after at most `s_inodes_count`
//! steps: a cycle is found beforehand by Brent's algorithm over the links
//! (`orphan_cycle`), in constant memory (a set of the inodes seen took some 10 bytes
//! an inode, and the list's length comes from the disk). An orphan whose block map is over the mount's memory budget (see
//! `Ext::tree_ctx`) stops the walk without dropping anything: the list stays from
//! that inode on, for e2fsck or a mount with more memory, and [`Ext::orphans`] says
//! so. Only an I/O error fails the mount.
//!
//! Not processed: on a read-only mount nothing is written, so the list stays for the
//! next read-write mount (Linux cleans it up even on a read-only mount unless the
//! device itself is read-only; the orphans are unreachable by name, so reading is
//! not affected). On a filesystem already marked as having errors the list is left
//! to e2fsck (Linux and e2fsck do not trust it then either). The ext4 `orphan_file`
//! (compat 0x1000) is not used: Xenlet never puts anything there, and a filesystem
//! whose orphan file holds entries (ro_compat `orphan_present`, 0x10000) is an
//! unknown read-only-compatible feature, so it mounts read-only.

use super::*;

/// `s_last_orphan`: the first inode on the orphan list.
const SB_LAST_ORPHAN: usize = 0xE8;

/// What orphan processing did at mount ([`Ext::orphans`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrphanStats {
    /// Inodes with no links freed.
    pub deleted: u32,
    /// Inodes with links whose blocks past `i_size` were freed.
    pub truncated: u32,
    /// Why the walk stopped early (the list was dropped and the filesystem marked
    /// as having errors).
    pub error: Option<String>,
    /// Why a non-empty list was not processed (read-only mount, errors).
    pub skipped: Option<&'static str>,
}

impl<D: BlockDev> Ext<D> {
    /// What orphan processing did at mount.
    pub fn orphans(&self) -> &OrphanStats {
        &self.orphan_stats
    }

    /// The first inode on the orphan list (0 if empty).
    fn last_orphan(&self) -> u32 {
        get32(&self.sb.raw, SB_LAST_ORPHAN)
    }

    fn set_last_orphan(&mut self, ino: u32) {
        put32(&mut self.sb.raw, SB_LAST_ORPHAN, ino);
        self.sb_dirty = true;
    }

    /// At mount: a non-empty list on a mount that will not write is left alone.
    pub(super) fn note_orphans_skipped(&mut self) {
        if self.last_orphan() != 0 {
            self.orphan_stats.skipped = Some("read-only mount: the orphan list is left as it is");
        }
    }

    /// At a read-write mount, after the superblock was marked not clean: walks the
    /// orphan list (see the module doc) and syncs. Only I/O errors fail the mount.
    pub(super) fn process_orphans(&mut self) -> Result<(), FsError> {
        let mut ino = self.last_orphan();
        if ino == 0 {
            return Ok(());
        }
        if self.sb.state() & STATE_ERROR != 0 {
            self.orphan_stats.skipped =
                Some("filesystem has errors: the orphan list is left to e2fsck");
            return Ok(());
        }
        // Inodes the walk may visit before one comes round again, if the list cycles.
        let mut left = self.orphan_cycle(ino)?;
        while ino != 0 {
            if left == Some(0) {
                self.orphan_error(format!("orphan list: inode {ino} twice (a cycle)"));
                break;
            }
            left = left.map(|n| n - 1);
            let next = match self.orphan_next(ino) {
                Ok(next) => next,
                Err(FsError::Corrupt(why)) => {
                    self.orphan_error(why);
                    break;
                }
                Err(e) => return Err(e),
            };
            match self.release_orphan(ino) {
                Ok(()) => {}
                Err(FsError::Corrupt(why)) => {
                    self.orphan_error(format!("orphan inode {ino}: {why}"));
                    break;
                }
                Err(FsError::NoMemory) => {
                    // Its map is over this mount's budget (see `Ext::tree_ctx`): the
                    // list is sound, so it stays, from this inode on, for e2fsck or
                    // a mount with more memory.
                    self.orphan_stats.skipped = Some(
                        "an orphan's block map is over this mount's memory budget: \
                         the list is left from there on",
                    );
                    break;
                }
                Err(e) => return Err(e),
            }
            // Off the list: the next transaction has this inode done and the rest
            // of the list still linked.
            self.set_last_orphan(next);
            ino = next;
            self.maybe_commit()?;
        }
        self.sync_all()
    }

    /// The link of `ino` on the orphan list as the disk has it (`i_dtime`, read from
    /// its inode table block without checks: the walk checks what it visits), or
    /// `None` for the end of the list or an inode out of range.
    fn orphan_link(&mut self, ino: u32) -> Result<Option<u32>, FsError> {
        if ino == 0 || ino < self.sb.first_ino || ino > self.sb.inodes_count {
            return Ok(None);
        }
        let (blk, off) = self.inode_loc(ino)?;
        let b = self.cache.get(&mut self.dev, blk)?;
        Ok(b.get(off + 0x14..off + 0x18)
            .map(|d| get32(d, 0))
            .filter(|&n| n != 0))
    }

    /// If the orphan list from `start` comes back to an inode it has been through,
    /// how many inodes it has before that (`mu + lambda` of Brent's cycle detection,
    /// which keeps two inode numbers, not a set of them); `None` if it ends. Takes up
    /// to three walks of the list, through the block cache.
    fn orphan_cycle(&mut self, start: u32) -> Result<Option<u64>, FsError> {
        // Phase 1: the cycle's length, `lam`, with power-of-two checkpoints.
        let (mut power, mut lam) = (1u64, 1u64);
        let mut tortoise = start;
        let Some(mut hare) = self.orphan_link(start)? else {
            return Ok(None);
        };
        while tortoise != hare {
            if power == lam {
                tortoise = hare;
                power *= 2;
                lam = 0;
            }
            let Some(next) = self.orphan_link(hare)? else {
                return Ok(None);
            };
            hare = next;
            lam += 1;
        }
        // Phase 2: where it starts, `mu`: two walkers `lam` apart meet there.
        let (mut tortoise, mut hare) = (start, start);
        for _ in 0..lam {
            hare = self.orphan_link(hare)?.unwrap_or(0);
        }
        let mut mu = 0u64;
        while tortoise != hare {
            tortoise = self.orphan_link(tortoise)?.unwrap_or(0);
            hare = self.orphan_link(hare)?.unwrap_or(0);
            mu += 1;
        }
        Ok(Some(mu + lam))
    }

    /// Checks that `ino` is a plausible orphan and returns the next one on the list.
    fn orphan_next(&mut self, ino: u32) -> Result<u32, FsError> {
        let (first, count) = (self.sb.first_ino, self.sb.inodes_count);
        let in_range = |i: u32| i >= first && i <= count;
        if !in_range(ino) {
            return Err(corrupt(format!("orphan list: inode {ino} out of range")));
        }
        if !self.inode_in_use(ino)? {
            return Err(corrupt(format!("orphan list: inode {ino} is not in use")));
        }
        let inode = &self.node(ino)?.inode;
        if inode.mode() == 0 {
            return Err(corrupt(format!("orphan list: inode {ino} has no mode")));
        }
        let next = inode.dtime();
        if next != 0 && !in_range(next) {
            return Err(corrupt(format!(
                "orphan list: inode {ino} links to inode {next}, out of range"
            )));
        }
        Ok(next)
    }

    /// Finishes one orphan: frees it if it has no links, else frees its blocks past
    /// `i_size` and clears `i_dtime` (the list link).
    fn release_orphan(&mut self, ino: u32) -> Result<(), FsError> {
        let inode = self.node(ino)?.inode.clone();
        if inode.links() == 0 {
            // A large file in several transactions (restart.rs): it stays at the
            // head of the list until its last blocks go with the inode.
            if self.release_too_big(ino)? {
                self.truncate_in_steps(ino, 0)?;
            }
            self.release(ino)?;
            self.orphan_stats.deleted += 1;
            return Ok(());
        }
        if inode.kind() == FileType::File {
            self.cut_to(ino, inode.size())?;
        }
        let n = self.node(ino)?;
        n.inode.set_dtime(0);
        n.dirty = true;
        self.orphan_stats.truncated += 1;
        Ok(())
    }

    /// Puts `ino` at the head of the orphan list (`ext4_orphan_add`): its `i_dtime`
    /// names the old head, `s_last_orphan` names it. In the running transaction.
    pub(super) fn orphan_add(&mut self, ino: u32) -> Result<(), FsError> {
        let head = self.last_orphan();
        let n = self.node(ino)?;
        n.inode.set_dtime(i64::from(head));
        n.dirty = true;
        self.set_last_orphan(ino);
        Ok(())
    }

    /// Takes `ino` off the orphan list (`ext4_orphan_del`): whatever points to it
    /// (`s_last_orphan`, or the inode before it on the list) then points to the
    /// inode after it, and its `i_dtime` is cleared. In the running transaction.
    pub(super) fn orphan_del(&mut self, ino: u32) -> Result<(), FsError> {
        let next = self.node(ino)?.inode.dtime();
        let mut at = self.last_orphan();
        if at == ino {
            self.set_last_orphan(next);
        } else {
            // Not the head (another orphan came after it): found by walking the
            // list, at most once round the inodes.
            for _ in 0..self.sb.inodes_count {
                if at == 0 {
                    return Err(corrupt(format!("orphan list: inode {ino} not on it")));
                }
                let n = self.node(at)?;
                let after = n.inode.dtime();
                if after == ino {
                    n.inode.set_dtime(i64::from(next));
                    n.dirty = true;
                    break;
                }
                at = after;
            }
        }
        let n = self.node(ino)?;
        n.inode.set_dtime(0);
        n.dirty = true;
        Ok(())
    }

    /// A bad list: the rest of it is dropped and the filesystem marked with errors.
    fn orphan_error(&mut self, why: String) {
        self.set_last_orphan(0);
        let st = self.sb.state();
        self.sb.set_state(st | STATE_ERROR);
        self.orphan_stats.error = Some(why);
    }
}
