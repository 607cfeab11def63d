//! The abort state (issue 30), as Linux's `ext4_handle_error` over a jbd2 journal
//! abort (`jbd2_journal_abort`).
//!
//! The running transaction is everything changed in memory since the last sync (the
//! pinned block cache, the cached inodes, the deferred frees: see `ordered.rs`). An
//! error in the middle of a metadata-changing operation, or anywhere in a sync after
//! the file data (a commit, a checkpoint, a flush), aborts it:
//!
//! - nothing of it reaches the home locations: the mount turns read-only at once, so
//!   no later sync writes it (later changes give EROFS, `sync` and `fsync` too; reads
//!   still work, from what is in memory);
//! - the journal is aborted ([`JournalWriter::abort`]): a committed transaction whose
//!   checkpoint failed stays in the log (its tail never moved past it), and the error
//!   is recorded in the journal superblock's `s_errno` for replay and e2fsck;
//! - the superblock *as on disk* (not ours, whose counts belong to the aborted
//!   transaction) gets `ERROR_FS` in `s_state` and the error count and times, and is
//!   flushed, where the device still takes writes;
//! - [`Ext::read_only_reason`] says what failed, why the mount is read-only, and what
//!   to run (`e2fsck -fy`).
//!
//! The superblock's `s_errors` is honoured as far as a transaction that cannot be
//! committed half done allows: `remount-ro` is what is done; `panic` is treated as
//! remount-ro (a guest's filesystem is no reason to stop the kernel), and
//! `continue` too (continuing would commit the half-done operation), each saying so.
//!
//! "In the middle": an operation (`Ext::operation`) that fails after it changed
//! something (a block taken for modification, an inode's links, a free) aborts; one
//! that fails before its first change leaves everything as it was, and operations
//! look up and read what they need before they change anything. ENOSPC and ENOMEM
//! do not abort: the operations that can meet them undo what they did (a new
//! inode is released) and the caller may free space or memory and retry.
//! File data write errors before the commit (the data stays buffered, see
//! `write_errors_keep_data_for_a_retry`) do not abort either.

use super::*;

/// `s_errors`: continue, remount read-only, panic.
const ERRORS_CONTINUE: u16 = 1;
const ERRORS_PANIC: u16 = 3;
/// EIO, recorded negated in the journal's `s_errno` as jbd2 does.
const EIO: i32 = 5;

/// The abort state of a mount.
#[derive(Default)]
pub(super) struct AbortState {
    /// Why the running transaction was aborted (once it was).
    reason: Option<String>,
    /// Changes made outside the block cache (inodes in memory, deferred frees), to
    /// tell an operation that failed before its first change from one that did not.
    touched: u64,
}

impl<D: BlockDev> Ext<D> {
    /// Why the running transaction was aborted and the mount made read-only, if it
    /// was (see the module doc); also in [`Ext::read_only_reason`].
    pub fn aborted(&self) -> Option<&str> {
        self.abort.reason.as_deref()
    }

    /// Notes a change made outside the block cache.
    pub(super) fn touch(&mut self) {
        self.abort.touched = self.abort.touched.wrapping_add(1);
    }

    /// A count that moves with every change to the running transaction.
    fn changes(&self) -> u64 {
        self.abort.touched.wrapping_add(self.cache.changes)
    }

    /// Runs the metadata-changing operation `what`: refused with EROFS when read-only;
    /// aborted if it fails after its first change (see the module doc). ENOSPC with
    /// frees waiting for a commit is retried once after one (issue 30: the frees
    /// are then usable); what failed with ENOSPC undid what it had done.
    pub(super) fn operation<T>(
        &mut self,
        what: &str,
        mut f: impl FnMut(&mut Self) -> Result<T, FsError>,
    ) -> Result<T, FsError> {
        self.check_rw()?;
        let before = self.changes();
        let mut r = f(self);
        if matches!(r, Err(FsError::NoSpace)) && self.frees_deferred() {
            self.sync_all()?;
            r = f(self);
        }
        if let Err(e) = &r {
            if !matches!(e, FsError::NoSpace | FsError::NoMemory) && self.changes() != before {
                self.abort(what, e);
            }
        }
        r
    }

    /// Aborts the running transaction because `during` failed with `e` (see the
    /// module doc). Once only: later calls keep the first reason.
    pub(super) fn abort(&mut self, during: &str, e: &FsError) {
        if self.abort.reason.is_some() || !self.mounted {
            return;
        }
        let mode = match csum::get16(&self.sb.raw, 0x3C) {
            ERRORS_CONTINUE => {
                "errors=continue, but a transaction cannot be committed half done: remount-ro"
            }
            ERRORS_PANIC => "errors=panic, treated as remount-ro",
            _ => "errors=remount-ro",
        };
        self.ro = true;
        let mut reason = format!(
            "{during} failed ({e}): the running transaction is aborted (nothing of it is \
             written) and the filesystem is read-only ({mode})"
        );
        if let Err(je) = self.abort_journal(-EIO) {
            reason.push_str(&format!(
                "; recording the error in the journal failed ({je})"
            ));
        }
        match self.mark_error_on_disk() {
            Ok(()) => reason.push_str("; marked as having errors: run e2fsck -fy"),
            Err(se) => reason.push_str(&format!(
                "; marking the superblock as having errors failed too ({se}): run e2fsck -fy"
            )),
        }
        let st = self.sb.state();
        self.sb.set_state(st | STATE_ERROR);
        self.abort.reason = Some(reason);
    }

    /// Sets `ERROR_FS`, the error count and times in the superblock as it is on
    /// disk, and flushes (as `ext4_handle_error` commits the superblock).
    fn mark_error_on_disk(&mut self) -> Result<(), FsError> {
        let mut raw = vec![0u8; SB_SIZE];
        self.dev.read(SB_OFFSET, &mut raw)?;
        let mut sb = Superblock::parse(raw, self.dev.size_bytes())?;
        let st = sb.state();
        sb.set_state(st | STATE_ERROR);
        let now = self.now().max(0) as u32;
        let count = get32(&sb.raw, 0x194);
        put32(&mut sb.raw, 0x194, count.saturating_add(1));
        if get32(&sb.raw, 0x198) == 0 {
            put32(&mut sb.raw, 0x198, now); // s_first_error_time
        }
        put32(&mut sb.raw, 0x1CC, now); // s_last_error_time
        let b = sb.sealed_bytes().to_vec();
        self.dev.write(SB_OFFSET, &b)?;
        self.dev.flush()?;
        Ok(())
    }
}
