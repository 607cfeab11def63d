//! Writeback errors kept per file and per filesystem (issue 30), as Linux keeps an
//! `errseq_t` in each inode's mapping (`mapping->wb_err`) and in the superblock
//! (`sb->s_wb_err`), see [`crate::errseq`].
//!
//! A flush that reports a lost data write (`settle_data`, unwritten.rs) records the
//! error in the sequence of every file whose data went out since the last good
//! flush (the device cannot say which write it was) and in the filesystem's. Then:
//!
//! - `fsync` of a file reports its file's error, once: every later `fsync` of that
//!   file that has not seen it gets EIO, then Ok; another file's `fsync` does not get
//!   it;
//! - `sync` and `umount` report the filesystem's error, once, whether or not an
//!   `fsync` reported it to its file (two sequences, two "seen" flags, as `syncfs`);
//! - a read never consumes one.
//!
//! The sampling point. Linux samples at `open` (`file->f_wb_err`, `f_sb_err`) and
//! checks at `fsync`/`syncfs`. Xenlet has no open-file table: no file stays open
//! between two shell commands, and within one command nothing else runs between its
//! open and its sync. So the sample is taken at the start of each `fsync`, `sync`
//! and `umount` call; as `errseq_sample` does, an error that no caller has seen
//! yet is taken as after the sample (the first caller gets it), and one that some
//! caller has seen is not reported to a caller that starts after that. An error
//! found by this call's own flush is after its sample and is reported.
//!
//! A file's sequence is dropped once its error is seen (a later sample would start
//! after it, which is what no sequence gives too) and when the inode is freed (its
//! number may name a new file), so the table holds only files with an error not yet
//! reported.

use super::*;
use crate::errseq::{ErrSeq, ErrSince};

/// The writeback error sequences of a mount.
#[derive(Default)]
pub(super) struct WbErrors {
    /// The filesystem's (`s_wb_err`).
    fs: ErrSeq,
    /// Each file's with an error not yet seen.
    files: BTreeMap<u32, ErrSeq>,
}

impl WbErrors {
    /// A flush failed with `e` after data of `inos` was written: recorded for each of
    /// them and for the filesystem.
    pub fn record(&mut self, inos: impl IntoIterator<Item = u32>, e: &FsError) {
        for ino in inos {
            self.files.entry(ino).or_default().set(e.clone());
        }
        self.fs.set(e.clone());
    }

    /// A sample of file `ino`'s sequence (see the module doc).
    pub fn sample_file(&self, ino: u32) -> ErrSince {
        self.files.get(&ino).map(ErrSeq::sample).unwrap_or_default()
    }

    /// The error of file `ino` since `since`, once.
    pub fn check_file(&mut self, ino: u32, since: &mut ErrSince) -> Result<(), FsError> {
        let Some(s) = self.files.get_mut(&ino) else {
            return Ok(());
        };
        let r = s.check_and_advance(since);
        if !s.unseen() {
            self.files.remove(&ino);
        }
        r
    }

    /// A sample of the filesystem's sequence.
    pub fn sample_fs(&self) -> ErrSince {
        self.fs.sample()
    }

    /// The filesystem's error since `since`, once.
    pub fn check_fs(&mut self, since: &mut ErrSince) -> Result<(), FsError> {
        self.fs.check_and_advance(since)
    }

    /// Inode `ino` is freed: its sequence goes.
    pub fn forget(&mut self, ino: u32) {
        self.files.remove(&ino);
    }
}

impl<D: BlockDev> Ext<D> {
    /// Whether a writeback error is waiting for a `sync` (the filesystem's sequence
    /// holds one no `sync` or `umount` has reported): for tests and diagnostics.
    /// Asking does not consume it.
    pub fn writeback_error_pending(&self) -> bool {
        self.wb.fs.unseen()
    }
}
