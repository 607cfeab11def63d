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
//! The list is on-disk data and is not trusted. An inode number below the first
//! non-reserved inode or past the inode count, an inode not allocated in its bitmap
//! or with no mode, one seen before (a cycle), or an inode whose structures are
//! corrupt stops the walk: the rest of the list is dropped (`s_last_orphan` = 0, as
//! Linux does on a "bad orphan inode"), the filesystem is marked as having errors
//! (`s_state` gets `EXT2_ERROR_FS`, so the next e2fsck checks it in full; what the
//! dropped rest of the list held may need `-y`), the mount goes on read-write
//! (Linux's default `errors=continue`), and [`Ext::orphans`] says what happened. The
//! walk visits each inode at most once, so it ends after at most `s_inodes_count`
//! steps. An orphan whose block map is over the mount's memory budget (see
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
        let mut seen = BTreeSet::new();
        while ino != 0 {
            let next = match self.orphan_next(ino, &seen) {
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
            seen.insert(ino);
            // Off the list: the next transaction has this inode done and the rest
            // of the list still linked.
            self.set_last_orphan(next);
            ino = next;
            self.maybe_commit()?;
        }
        self.sync_all()
    }

    /// Checks that `ino` is a plausible orphan and returns the next one on the list.
    fn orphan_next(&mut self, ino: u32, seen: &BTreeSet<u32>) -> Result<u32, FsError> {
        let (first, count) = (self.sb.first_ino, self.sb.inodes_count);
        let in_range = |i: u32| i >= first && i <= count;
        if !in_range(ino) {
            return Err(corrupt(format!("orphan list: inode {ino} out of range")));
        }
        if seen.contains(&ino) {
            return Err(corrupt(format!("orphan list: inode {ino} twice (a cycle)")));
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

    /// A bad list: the rest of it is dropped and the filesystem marked with errors.
    fn orphan_error(&mut self, why: String) {
        self.set_last_orphan(0);
        let st = self.sb.state();
        self.sb.set_state(st | STATE_ERROR);
        self.orphan_stats.error = Some(why);
    }
}
