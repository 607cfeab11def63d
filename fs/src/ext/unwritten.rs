//! Unwritten extents for new file data (issue 30, defect 3), as Linux's ext4 does it:
//! a block allocated for file data is mapped *unwritten* (the extent length's high
//! bit, [`extent::MAX_INIT_LEN`]; it reads as zeros) until its data is known to be on
//! the disk, so that a write that fails never exposes what the block held before
//! (a deleted file's bytes).
//!
//! The device takes writes behind the filesystem's back and reports a failed one at
//! the next flush. So the conversion has two steps: when a run's write is accepted,
//! its unwritten blocks are marked initialised in the map and the run is listed
//! ([`Unflushed`]); before any metadata is committed (`commit_inner`), the device is
//! flushed ([`Ext::settle_data`]): if the flush succeeds the list is dropped (the
//! initialised extents are safe to commit), and if it fails every listed run goes
//! back to unwritten (on a block-mapped file, which has no unwritten state, the
//! blocks are unmapped and freed: a hole), the filesystem is not aborted, and the
//! error is recorded for every file whose data went out since the last good flush
//! (a rewrite of initialised blocks too) and for the filesystem, for their later
//! `fsync`s and `sync`s to report (`wberr.rs`). The lost data reads as
//! zeros, as on Linux after a failed write-back. Committed metadata therefore never
//! maps an initialised block whose data write was not confirmed.
//!
//! The map operation ([`FileMap::set_state`]) splits extents at the range's ends,
//! keeps unwritten extents within [`extent::MAX_UNINIT_LEN`], and merges neighbours
//! of the same state again.

use super::extent::{Extent, FileMap, MAX_INIT_LEN, MAX_UNINIT_LEN};
use super::*;

/// Most runs listed before the data is flushed early (the list stays small).
const MAX_RUNS: usize = 256;

/// Blocks whose write the device accepted but no flush has confirmed yet: one
/// logically and physically contiguous run of an inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Run {
    ino: u32,
    lblk: u64,
    pblk: u64,
    len: u64,
}

/// The runs written since the last flush that were unwritten before, and the files
/// whose data went out since then.
#[derive(Default)]
pub(super) struct Unflushed {
    runs: Vec<Run>,
    /// Inodes with data written since the last flush (the error of a failed flush
    /// goes to each: `wberr.rs`).
    written: BTreeSet<u32>,
}

fn max_len(uninit: bool) -> u64 {
    if uninit {
        MAX_UNINIT_LEN as u64
    } else {
        MAX_INIT_LEN as u64
    }
}

/// Appends `e` to `out`, merging with the last extent when they continue each other
/// in the same state, and splitting it where it is longer than its state allows.
fn push_piece(out: &mut Vec<Extent>, mut e: Extent) {
    let max = max_len(e.uninit);
    if let Some(p) = out.last_mut() {
        if p.uninit == e.uninit
            && p.lblk + p.len as u64 == e.lblk
            && p.pblk + p.len as u64 == e.pblk
            && (p.len as u64) < max
        {
            let take = (max - p.len as u64).min(e.len as u64) as u32;
            p.len += take;
            e.lblk += take as u64;
            e.pblk += take as u64;
            e.len -= take;
        }
    }
    while e.len > 0 {
        let take = (e.len as u64).min(max) as u32;
        out.push(Extent { len: take, ..e });
        e.lblk += take as u64;
        e.pblk += take as u64;
        e.len -= take;
    }
}

impl FileMap {
    /// Maps the hole `lblk..lblk+len` to `pblk..` as unwritten (new file data, before
    /// its write).
    pub fn insert_unwritten(&mut self, lblk: u64, pblk: u64, len: u32) {
        let i = self.ext.partition_point(|e| e.lblk < lblk);
        self.ext.insert(
            i,
            Extent {
                lblk,
                len,
                pblk,
                uninit: true,
            },
        );
        // Split to the unwritten length limit, merged with its neighbours.
        self.normalise(i.saturating_sub(1), i + 2);
    }

    /// Sets blocks `lblk..lblk+len` unwritten (`uninit`) or initialised where they
    /// are mapped to `pblk..` (`None`: whatever they are mapped to); other blocks are
    /// left alone. Returns the number of blocks whose state changed.
    pub fn set_state(&mut self, lblk: u64, pblk: Option<u64>, len: u64, uninit: bool) -> u64 {
        let end = lblk.saturating_add(len);
        let first = self.ext.partition_point(|e| e.lblk + e.len as u64 <= lblk);
        let last = self.ext.partition_point(|e| e.lblk < end);
        if first >= last {
            return 0;
        }
        let mut changed = 0;
        let mut pieces = Vec::with_capacity(last - first + 2);
        for e in &self.ext[first..last] {
            let s = e.lblk.max(lblk);
            let t = (e.lblk + e.len as u64).min(end);
            let same_home = pblk.is_none_or(|p| e.pblk + (s - e.lblk) == p + (s - lblk));
            if e.uninit == uninit || !same_home || s >= t {
                pieces.push(*e);
                continue;
            }
            changed += t - s;
            pieces.extend(e.head_before(s));
            pieces.push(Extent {
                lblk: s,
                len: (t - s) as u32,
                pblk: e.pblk + (s - e.lblk),
                uninit,
            });
            pieces.extend(e.tail_from(t));
        }
        if changed == 0 {
            return 0;
        }
        let n = pieces.len();
        self.ext.splice(first..last, pieces);
        self.normalise(first.saturating_sub(1), first + n + 1);
        changed
    }

    /// Unmaps blocks `lblk..lblk+len` where they are mapped to `pblk..`; returns the
    /// physical runs unmapped (a block-mapped file's lost data becomes a hole).
    pub fn punch(&mut self, lblk: u64, pblk: u64, len: u64) -> Vec<(u64, u64)> {
        let end = lblk.saturating_add(len);
        let mut freed = Vec::new();
        let mut out = Vec::with_capacity(self.ext.len() + 1);
        for e in self.ext.drain(..) {
            let s = e.lblk.max(lblk);
            let t = (e.lblk + e.len as u64).min(end);
            if s >= t || e.pblk + (s - e.lblk) != pblk + (s - lblk) {
                out.push(e);
                continue;
            }
            out.extend(e.head_before(s));
            freed.push((e.pblk + (s - e.lblk), t - s));
            out.extend(e.tail_from(t));
        }
        self.ext = out;
        freed
    }

    /// Re-merges (and splits to the length limits) the extents `from..to`.
    fn normalise(&mut self, from: usize, to: usize) {
        let to = to.min(self.ext.len());
        if from >= to {
            return;
        }
        let mut out = Vec::with_capacity(to - from + 1);
        for e in &self.ext[from..to] {
            push_piece(&mut out, *e);
        }
        self.ext.splice(from..to, out);
    }
}

impl<D: BlockDev> Ext<D> {
    /// A run of `ino` whose write the device accepted: its unwritten blocks
    /// (`was_uninit`) are initialised in the map and listed until a flush confirms
    /// them. Called with the node taken (`map` is its map).
    pub(super) fn note_written(
        &mut self,
        ino: u32,
        map: &mut FileMap,
        lblk: u64,
        pblk: u64,
        len: u64,
    ) {
        if map.set_state(lblk, Some(pblk), len, false) == 0 {
            return;
        }
        let runs = &mut self.unflushed.runs;
        if let Some(r) = runs.last_mut() {
            if r.ino == ino && r.lblk + r.len == lblk && r.pblk + r.len == pblk {
                r.len += len;
                return;
            }
        }
        runs.push(Run {
            ino,
            lblk,
            pblk,
            len,
        });
    }

    /// File data of `ino` went to the device (a write it accepted).
    pub(super) fn note_data_out(&mut self, ino: u32) {
        self.unflushed.written.insert(ino);
    }

    /// Inode `ino` is freed: a failed flush is no longer its to report (its
    /// number may name a new file), and any error it has goes (`wberr.rs`).
    pub(super) fn forget_writeback(&mut self, ino: u32) {
        self.unflushed.written.remove(&ino);
        self.wb.forget(ino);
    }

    /// Whether the list of unconfirmed runs (or of files written) is long enough to
    /// flush early.
    pub(super) fn unflushed_full(&self) -> bool {
        self.unflushed.runs.len() >= MAX_RUNS || self.unflushed.written.len() >= MAX_RUNS
    }

    /// Flushes the device if file data was written since the last flush: confirms
    /// the runs written (their extents may be committed initialised), or, if the
    /// flush fails, turns them back into unwritten extents (holes on a block-mapped
    /// file) and records the error for the files written and the filesystem
    /// (`wberr.rs`). Errors returned are those of reading a map back (the caller
    /// aborts); the flush's own is not one.
    pub(super) fn settle_data(&mut self) -> Result<(), FsError> {
        if self.unflushed.runs.is_empty() && self.unflushed.written.is_empty() {
            return Ok(());
        }
        let written = core::mem::take(&mut self.unflushed.written);
        let err = match self.dev.flush() {
            Ok(()) => {
                self.unflushed.runs.clear();
                return Ok(());
            }
            Err(e) => FsError::from(e),
        };
        let runs = core::mem::take(&mut self.unflushed.runs);
        self.wb.record(written, &err);
        for r in runs {
            self.unwrite(r)?;
        }
        Ok(())
    }

    /// A run whose write failed: unwritten again (or unmapped and freed).
    fn unwrite(&mut self, r: Run) -> Result<(), FsError> {
        // An inode since deleted (its blocks freed) has nothing to undo.
        let live = self
            .node(r.ino)
            .is_ok_and(|n| n.inode.links() > 0 && Self::has_map(&n.inode));
        if !live {
            return Ok(());
        }
        self.ensure_map(r.ino)?;
        let bs = self.sb.block_size as usize;
        let n = self.node(r.ino)?;
        let extents = n.inode.flags() & FL_EXTENTS != 0;
        let before = Self::unmapped_pending(n, r.lblk, r.lblk + r.len, bs);
        let Some(map) = n.map.as_mut() else {
            return Ok(());
        };
        if extents {
            if map.set_state(r.lblk, Some(r.pblk), r.len, true) > 0 {
                n.map_dirty = true;
                n.dirty = true;
            }
            return Ok(());
        }
        let freed = map.punch(r.lblk, r.pblk, r.len);
        if freed.is_empty() {
            return Ok(());
        }
        // Data buffered again over the blocks now unmapped takes a reservation, as
        // data buffered into a hole does (`pending.rs`).
        let n = self.nodes.get(&r.ino).ok_or(FsError::NotFound)?;
        let after = Self::unmapped_pending(n, r.lblk, r.lblk + r.len, bs);
        self.reserved += after.saturating_sub(before);
        let n = self.node(r.ino)?;
        n.map_dirty = true;
        n.dirty = true;
        for (s, l) in freed {
            self.free_blocks_range(s, l)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(lblk: u64, len: u32, pblk: u64, uninit: bool) -> Extent {
        Extent {
            lblk,
            len,
            pblk,
            uninit,
        }
    }

    #[test]
    fn unwritten_insert_then_initialise_merges() {
        let mut m = FileMap::default();
        m.insert(0, 100, 10);
        m.insert_unwritten(10, 110, 10);
        assert_eq!(m.ext, vec![ext(0, 10, 100, false), ext(10, 10, 110, true)]);
        assert_eq!(m.set_state(10, Some(110), 10, false), 10);
        assert_eq!(m.ext, vec![ext(0, 20, 100, false)]);
    }

    #[test]
    fn middle_of_an_extent_splits_in_three() {
        let mut m = FileMap::default();
        m.insert(0, 100, 20);
        assert_eq!(m.set_state(5, Some(105), 4, true), 4);
        assert_eq!(
            m.ext,
            vec![
                ext(0, 5, 100, false),
                ext(5, 4, 105, true),
                ext(9, 11, 109, false)
            ]
        );
        // Another home: nothing changes.
        assert_eq!(m.set_state(0, Some(999), 20, true), 0);
        // Over several extents, whatever their home.
        assert_eq!(m.set_state(3, None, 10, true), 6);
        assert_eq!(
            m.ext,
            vec![
                ext(0, 3, 100, false),
                ext(3, 10, 103, true),
                ext(13, 7, 113, false)
            ]
        );
    }

    #[test]
    fn unwritten_extents_keep_their_length_limit() {
        let mut m = FileMap::default();
        m.insert(0, 1000, MAX_INIT_LEN);
        assert_eq!(
            m.set_state(0, None, MAX_INIT_LEN as u64, true),
            MAX_INIT_LEN as u64
        );
        assert_eq!(
            m.ext,
            vec![
                ext(0, MAX_UNINIT_LEN, 1000, true),
                ext(MAX_UNINIT_LEN as u64, 1, 1000 + MAX_UNINIT_LEN as u64, true)
            ]
        );
        assert_eq!(
            m.set_state(0, None, MAX_INIT_LEN as u64, false),
            MAX_INIT_LEN as u64
        );
        assert_eq!(m.ext, vec![ext(0, MAX_INIT_LEN, 1000, false)]);
        let mut u = FileMap::default();
        u.insert_unwritten(0, 5000, MAX_INIT_LEN);
        assert_eq!(u.ext.len(), 2);
        assert!(u.ext.iter().all(|e| e.uninit && e.len <= MAX_UNINIT_LEN));
    }

    #[test]
    fn punch_unmaps_only_the_home_given() {
        let mut m = FileMap::default();
        m.insert(0, 100, 20);
        assert_eq!(m.punch(5, 105, 5), vec![(105, 5)]);
        assert_eq!(m.ext, vec![ext(0, 5, 100, false), ext(10, 10, 110, false)]);
        assert!(m.punch(10, 500, 5).is_empty());
        assert_eq!(m.data_blocks(), 15);
    }
}
