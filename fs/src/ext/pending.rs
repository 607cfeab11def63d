//! A file's buffered data (delayed allocation, issue 30 "Speed"): runs of logically
//! contiguous whole blocks, each in one buffer, keyed by its first logical block.
//!
//! A sequential writer's blocks land in one run: one lookup and one copy from the
//! caller per write call, whatever its number of blocks, and the run goes to the
//! device from its own buffer (no second copy into a gathering buffer, no buffer per
//! block, no zero fill of a block the caller overwrites whole). A run is at most
//! the largest device write long (`max_io`), so each is one request.
//!
//! Whether a buffered block has a block reserved for it (`Ext::reserved`) is not
//! kept here: it is exactly the blocks that have no mapping in the file's map
//! (`Ext::unmapped_pending`), as a block is reserved when it is buffered into a
//! hole and the reservation is taken when the block is mapped.

use ::alloc::collections::BTreeMap;
use ::alloc::vec::Vec;

/// The buffered blocks of one file.
#[derive(Default)]
pub(super) struct Pending {
    /// First logical block -> the run's bytes (a whole number of blocks, never
    /// empty). Runs do not overlap; adjacent ones may be apart.
    runs: BTreeMap<u64, Vec<u8>>,
    /// The runs' buffers' capacity, in bytes (what they hold of the heap).
    cap: usize,
}

/// Out of memory for a buffer (the caller's data stays with the caller).
#[derive(Debug)]
pub(super) struct NoRoom;

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The bytes the runs' buffers hold of the heap (their capacity: a run that
    /// grows reserves ahead).
    pub fn cap(&self) -> usize {
        self.cap
    }

    fn put(&mut self, lblk: u64, d: Vec<u8>) {
        self.cap += d.capacity();
        self.runs.insert(lblk, d);
    }

    fn take(&mut self, lblk: u64) -> Option<Vec<u8>> {
        let d = self.runs.remove(&lblk)?;
        self.cap = self.cap.saturating_sub(d.capacity());
        Some(d)
    }

    /// The run holding `lblk`: (first block, its bytes).
    fn run_of(&self, lblk: u64, bs: usize) -> Option<(u64, &Vec<u8>)> {
        let (&k, d) = self.runs.range(..=lblk).next_back()?;
        (lblk < k + (d.len() / bs) as u64).then_some((k, d))
    }

    /// The buffered bytes from block `lblk` to the end of its run.
    pub fn at(&self, lblk: u64, bs: usize) -> Option<&[u8]> {
        let (k, d) = self.run_of(lblk, bs)?;
        d.get((lblk - k) as usize * bs..)
    }

    /// As [`Pending::at`], for modification.
    pub fn at_mut(&mut self, lblk: u64, bs: usize) -> Option<&mut [u8]> {
        let (&k, d) = self.runs.range_mut(..=lblk).next_back()?;
        if lblk >= k + (d.len() / bs) as u64 {
            return None;
        }
        d.get_mut((lblk - k) as usize * bs..)
    }

    /// Whether block `lblk` is buffered.
    pub fn contains(&self, lblk: u64, bs: usize) -> bool {
        self.run_of(lblk, bs).is_some()
    }

    /// The first buffered block at or after `lblk`.
    pub fn next_from(&self, lblk: u64, bs: usize) -> Option<u64> {
        if self.contains(lblk, bs) {
            return Some(lblk);
        }
        self.runs.range(lblk..).next().map(|(&k, _)| k)
    }

    /// The runs, in logical order: (first block, bytes).
    pub fn runs(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.runs.iter().map(|(&k, d)| (k, d.as_slice()))
    }

    /// The runs overlapping blocks `from..`, each as (first block, blocks) clipped
    /// to `from..`.
    pub fn ranges_from(&self, from: u64, bs: usize) -> impl Iterator<Item = (u64, u64)> + '_ {
        let first = self.run_of(from, bs).map_or(from, |(k, _)| k);
        self.runs.range(first..).map(move |(&k, d)| {
            let s = k.max(from);
            (s, k + (d.len() / bs) as u64 - s)
        })
    }

    /// The buffer that `add` bytes at block `lblk` (where nothing is buffered) go
    /// to the end of: the run that ends there if it stays within `max_run` bytes
    /// (its buffer then grows by `room` bytes more than it needs, or to twice its
    /// length if that is more, so that a sequential writer's next calls append
    /// without reallocating), else a new run with room for exactly `add`.
    fn grow(
        &mut self,
        lblk: u64,
        add: usize,
        bs: usize,
        max_run: usize,
        room: usize,
    ) -> Result<&mut Vec<u8>, NoRoom> {
        let joins =
            self.runs.range(..lblk).next_back().is_some_and(|(&k, d)| {
                k + (d.len() / bs) as u64 == lblk && d.len() + add <= max_run
            });
        if joins {
            let Some((_, d)) = self.runs.range_mut(..lblk).next_back() else {
                return Err(NoRoom);
            };
            let need = d.len() + add;
            if d.capacity() < need {
                // Ahead by `room`, and at least doubling (a run that keeps
                // growing is not copied at every call).
                let want = need
                    .saturating_add(room)
                    .max(2 * d.len())
                    .min(max_run)
                    .max(need);
                let old = d.capacity();
                d.try_reserve_exact(want - d.len()).map_err(|_| NoRoom)?;
                self.cap += d.capacity() - old;
            }
            return Ok(d);
        }
        let mut d = Vec::new();
        d.try_reserve_exact(add).map_err(|_| NoRoom)?;
        self.cap += d.capacity();
        Ok(self.runs.entry(lblk).or_insert(d))
    }

    /// Buffers `data` (whole blocks) at block `lblk`, where nothing is buffered yet
    /// (see [`Pending::grow`]).
    pub fn append(
        &mut self,
        lblk: u64,
        data: &[u8],
        bs: usize,
        max_run: usize,
        room: usize,
    ) -> Result<(), NoRoom> {
        self.grow(lblk, data.len(), bs, max_run, room)?
            .extend_from_slice(data);
        Ok(())
    }

    /// Buffers a block of zeros at `lblk`, where nothing is buffered yet (see
    /// [`Pending::grow`]); returns it, for the caller's part of it.
    pub fn append_zeroed(
        &mut self,
        lblk: u64,
        bs: usize,
        max_run: usize,
        room: usize,
    ) -> Result<&mut [u8], NoRoom> {
        let d = self.grow(lblk, bs, bs, max_run, room)?;
        let at = d.len();
        d.resize(at + bs, 0);
        Ok(&mut d[at..])
    }

    /// Buffers one block `blk` (already filled) at `lblk`, where nothing is buffered:
    /// appended to the run that ends there if it stays within `max_run` and its
    /// buffer can grow, else a run of its own (the buffer taken as it is).
    pub fn insert_block(
        &mut self,
        lblk: u64,
        blk: Vec<u8>,
        bs: usize,
        max_run: usize,
        room: usize,
    ) {
        let joins = self.runs.range(..lblk).next_back().is_some_and(|(&k, d)| {
            k + (d.len() / bs) as u64 == lblk && d.len() + blk.len() <= max_run
        });
        if joins {
            if let Ok(d) = self.grow(lblk, blk.len(), bs, max_run, room) {
                d.extend_from_slice(&blk);
                return;
            }
        }
        self.put(lblk, blk);
    }

    /// Drops the buffered blocks in `from..to`; returns the bytes dropped. A run cut
    /// in the middle is split (its tail gets a buffer of its own).
    pub fn remove_range(&mut self, from: u64, to: u64, bs: usize) -> usize {
        if from >= to {
            return 0;
        }
        let keys: Vec<u64> = self
            .ranges_from(from, bs)
            .take_while(|&(s, _)| s < to)
            .map(|(s, _)| s)
            .collect();
        let mut gone = 0;
        for s in keys {
            // The run's own key is at or before `s` (`s` is clipped to `from`).
            let Some((&k, _)) = self.runs.range(..=s).next_back() else {
                continue;
            };
            let Some(mut d) = self.take(k) else {
                continue;
            };
            let blocks = (d.len() / bs) as u64;
            let (cut0, cut1) = (from.max(k), to.min(k + blocks));
            let (i0, i1) = ((cut0 - k) as usize * bs, (cut1 - k) as usize * bs);
            gone += i1 - i0;
            if i1 < d.len() {
                if i0 == 0 {
                    d.drain(..i1);
                    self.put(cut1, d);
                    continue;
                }
                let tail = d.split_off(i1);
                self.put(cut1, tail);
            }
            if i0 > 0 {
                d.truncate(i0);
                self.put(k, d);
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BS: usize = 4;

    fn blocks(first: u8, n: usize) -> Vec<u8> {
        (0..n)
            .flat_map(|i| [first + i as u8; BS])
            .collect::<Vec<u8>>()
    }

    fn shape(p: &Pending) -> Vec<(u64, usize)> {
        p.runs().map(|(k, d)| (k, d.len() / BS)).collect()
    }

    #[test]
    fn appends_join_a_run_up_to_its_limit() {
        let mut p = Pending::default();
        p.append(10, &blocks(1, 2), BS, 4 * BS, 64).unwrap();
        assert_eq!(p.cap(), 2 * BS);
        // Growing reserves ahead, up to the run's limit.
        p.append(12, &blocks(3, 1), BS, 4 * BS, 64).unwrap();
        assert_eq!(p.cap(), 4 * BS);
        p.append(13, &blocks(4, 1), BS, 4 * BS, 64).unwrap();
        assert_eq!(p.cap(), 4 * BS);
        assert_eq!(shape(&p), vec![(10, 4)]);
        // Past the limit: a run of its own.
        p.append(14, &blocks(5, 1), BS, 4 * BS, 64).unwrap();
        assert_eq!(shape(&p), vec![(10, 4), (14, 1)]);
        // Not adjacent: its own.
        p.append(20, &blocks(9, 1), BS, 4 * BS, 64).unwrap();
        assert_eq!(shape(&p), vec![(10, 4), (14, 1), (20, 1)]);
        assert_eq!(p.at(11, BS).unwrap(), &blocks(2, 3)[..]);
        assert_eq!(p.at(14, BS).unwrap(), &blocks(5, 1)[..]);
        assert!(p.at(15, BS).is_none() && p.at(9, BS).is_none());
        assert_eq!(p.next_from(15, BS), Some(20));
        assert_eq!(p.next_from(12, BS), Some(12));
        assert_eq!(p.next_from(21, BS), None);
        p.at_mut(13, BS).unwrap()[0] = 99;
        assert_eq!(p.at(13, BS).unwrap()[0], 99);
    }

    #[test]
    fn a_block_joins_the_run_before_or_stands_alone() {
        let mut p = Pending::default();
        p.insert_block(5, blocks(1, 1), BS, 2 * BS, 0);
        p.insert_block(6, blocks(2, 1), BS, 2 * BS, 0);
        p.insert_block(7, blocks(3, 1), BS, 2 * BS, 0);
        p.insert_block(3, blocks(4, 1), BS, 2 * BS, 0);
        assert_eq!(shape(&p), vec![(3, 1), (5, 2), (7, 1)]);
        assert_eq!(p.at(6, BS).unwrap(), &blocks(2, 1)[..]);
        // Zeros for a part: joining the run before, or a run of their own.
        p.append_zeroed(4, BS, 2 * BS, 0).unwrap()[0] = 7;
        p.append_zeroed(8, BS, 2 * BS, 0).unwrap()[1] = 8;
        p.append_zeroed(9, BS, 2 * BS, 0).unwrap()[2] = 9;
        assert_eq!(shape(&p), vec![(3, 2), (5, 2), (7, 2), (9, 1)]);
        assert_eq!(p.at(9, BS).unwrap(), &[0, 0, 9, 0][..]);
        assert_eq!(p.at(3, BS).unwrap(), &[4, 4, 4, 4, 7, 0, 0, 0][..]);
        assert_eq!(p.at(8, BS).unwrap(), &[0, 8, 0, 0][..]);
    }

    #[test]
    fn removal_cuts_runs_at_both_ends_and_in_the_middle() {
        let mut p = Pending::default();
        p.append(0, &blocks(0, 10), BS, 64 * BS, 0).unwrap();
        p.append(20, &blocks(20, 5), BS, 64 * BS, 0).unwrap();
        // The middle of the first run.
        assert_eq!(p.remove_range(3, 5, BS), 2 * BS);
        assert_eq!(shape(&p), vec![(0, 3), (5, 5), (20, 5)]);
        assert_eq!(p.at(5, BS).unwrap(), &blocks(5, 5)[..]);
        // A prefix, across a gap, and a suffix.
        assert_eq!(p.remove_range(8, 22, BS), 4 * BS);
        assert_eq!(shape(&p), vec![(0, 3), (5, 3), (22, 3)]);
        assert_eq!(p.at(22, BS).unwrap(), &blocks(22, 3)[..]);
        assert_eq!(p.at(5, BS).unwrap(), &blocks(5, 3)[..]);
        // Whole runs, and nothing.
        assert!(p.cap() >= 9 * BS);
        assert_eq!(p.remove_range(0, 100, BS), 9 * BS);
        assert!(p.is_empty());
        assert_eq!(p.cap(), 0);
        assert_eq!(p.remove_range(0, 100, BS), 0);
    }

    #[test]
    fn ranges_are_clipped_to_the_start() {
        let mut p = Pending::default();
        p.append(0, &blocks(0, 4), BS, 64 * BS, 0).unwrap();
        p.append(10, &blocks(0, 2), BS, 64 * BS, 0).unwrap();
        let r: Vec<_> = p.ranges_from(2, BS).collect();
        assert_eq!(r, vec![(2, 2), (10, 2)]);
        let r: Vec<_> = p.ranges_from(5, BS).collect();
        assert_eq!(r, vec![(10, 2)]);
    }
}
