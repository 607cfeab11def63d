//! Physical frame allocator: page-aligned, physically contiguous runs.
//!
//! Free memory is a sorted list of disjoint frame ranges in a fixed array (it works
//! before the heap exists). Allocation is first-fit with an alignment; freeing merges
//! neighbours and refuses a run that overlaps free memory (a double free) instead of
//! corrupting the list. Drivers will grant these runs to dom0, so a run is only ever
//! freed by its owner once the backend has let go.

use core::fmt;

/// Size of a frame (x86 small page).
pub const FRAME_BYTES: u64 = 4096;

/// A run of physically contiguous frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRun {
    /// Physical address of the first frame.
    pub addr: u64,
    /// Number of frames.
    pub count: u64,
}

impl FrameRun {
    /// Length in bytes.
    pub fn len_bytes(&self) -> u64 {
        self.count * FRAME_BYTES
    }
}

/// Why a free was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeError {
    /// Address not frame-aligned or run empty.
    Misaligned,
    /// Part of the run is already free.
    DoubleFree,
    /// The free list is full (memory too fragmented to track).
    TooFragmented,
}

impl fmt::Display for FreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FreeError::Misaligned => "misaligned or empty frame run",
            FreeError::DoubleFree => "frame run is already (partly) free",
            FreeError::TooFragmented => "free list full",
        })
    }
}

#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64, // frame numbers, [start, end)
    end: u64,
}

/// The allocator.
pub struct FrameAllocator {
    free: [Range; Self::SLOTS],
    len: usize,
    total_frames: u64,
    free_frames: u64,
}

impl FrameAllocator {
    /// Free ranges tracked at most.
    pub const SLOTS: usize = 128;

    /// An allocator with no memory.
    pub const fn new() -> Self {
        FrameAllocator {
            free: [Range { start: 0, end: 0 }; Self::SLOTS],
            len: 0,
            total_frames: 0,
            free_frames: 0,
        }
    }

    /// Adds usable memory `[start, end)` (bytes; rounded inward to whole frames).
    pub fn add_region(&mut self, start: u64, end: u64) {
        let s = start.div_ceil(FRAME_BYTES);
        let e = end / FRAME_BYTES;
        if s >= e {
            return;
        }
        let before = self.free_frames;
        if self.insert(s, e).is_ok() {
            self.total_frames += self.free_frames - before;
        }
    }

    /// Removes `[start, end)` (bytes; rounded outward) from free memory, e.g. the
    /// kernel image or loader data. Parts not free are ignored.
    pub fn reserve(&mut self, start: u64, end: u64) {
        let s = start / FRAME_BYTES;
        let e = end.div_ceil(FRAME_BYTES);
        let mut i = 0;
        while i < self.len {
            let r = self.free[i];
            if r.end <= s || r.start >= e {
                i += 1;
                continue;
            }
            let removed = r.end.min(e) - r.start.max(s);
            self.free_frames -= removed;
            self.total_frames -= removed;
            match (r.start < s, r.end > e) {
                (true, true) => {
                    self.free[i].end = s;
                    if self
                        .insert_slot(
                            i + 1,
                            Range {
                                start: e,
                                end: r.end,
                            },
                        )
                        .is_err()
                    {
                        // No slot for the upper part: drop it from the pool.
                        self.free_frames -= r.end - e;
                        self.total_frames -= r.end - e;
                    }
                    i += 2;
                }
                (true, false) => {
                    self.free[i].end = s;
                    i += 1;
                }
                (false, true) => {
                    self.free[i].start = e;
                    i += 1;
                }
                (false, false) => self.remove_slot(i),
            }
        }
    }

    /// Allocates `count` contiguous frames whose first frame number is a multiple of
    /// `align_frames` (a power of two, 1 for none).
    pub fn alloc(&mut self, count: u64, align_frames: u64) -> Option<FrameRun> {
        if count == 0 || !align_frames.is_power_of_two() {
            return None;
        }
        for i in 0..self.len {
            let r = self.free[i];
            let start = r.start.checked_next_multiple_of(align_frames)?;
            let Some(end) = start.checked_add(count) else {
                continue;
            };
            if end > r.end {
                continue;
            }
            if start > r.start && end < r.end {
                // Splits the range in two: needs a slot.
                if self.len == Self::SLOTS {
                    continue;
                }
                self.free[i].end = start;
                self.insert_slot(
                    i + 1,
                    Range {
                        start: end,
                        end: r.end,
                    },
                )
                .ok()?;
            } else if start > r.start {
                self.free[i].end = start;
            } else if end < r.end {
                self.free[i].start = end;
            } else {
                self.remove_slot(i);
            }
            self.free_frames -= count;
            return Some(FrameRun {
                addr: start * FRAME_BYTES,
                count,
            });
        }
        None
    }

    /// Returns a run to the allocator.
    pub fn free(&mut self, run: FrameRun) -> Result<(), FreeError> {
        if run.count == 0 || !run.addr.is_multiple_of(FRAME_BYTES) {
            return Err(FreeError::Misaligned);
        }
        let s = run.addr / FRAME_BYTES;
        let e = s.checked_add(run.count).ok_or(FreeError::Misaligned)?;
        self.insert(s, e)
    }

    /// Frames currently free.
    pub fn free_frames(&self) -> u64 {
        self.free_frames
    }

    /// Frames managed in all.
    pub fn total_frames(&self) -> u64 {
        self.total_frames
    }

    /// Number of free ranges (fragmentation).
    pub fn free_ranges(&self) -> usize {
        self.len
    }

    fn insert(&mut self, s: u64, e: u64) -> Result<(), FreeError> {
        let pos = self.free[..self.len].partition_point(|r| r.start < s);
        if pos > 0 && self.free[pos - 1].end > s {
            return Err(FreeError::DoubleFree);
        }
        if pos < self.len && self.free[pos].start < e {
            return Err(FreeError::DoubleFree);
        }
        let merge_prev = pos > 0 && self.free[pos - 1].end == s;
        let merge_next = pos < self.len && self.free[pos].start == e;
        match (merge_prev, merge_next) {
            (true, true) => {
                self.free[pos - 1].end = self.free[pos].end;
                self.remove_slot(pos);
            }
            (true, false) => self.free[pos - 1].end = e,
            (false, true) => self.free[pos].start = s,
            (false, false) => self.insert_slot(pos, Range { start: s, end: e })?,
        }
        self.free_frames += e - s;
        Ok(())
    }

    fn insert_slot(&mut self, at: usize, r: Range) -> Result<(), FreeError> {
        if self.len == Self::SLOTS {
            return Err(FreeError::TooFragmented);
        }
        self.free.copy_within(at..self.len, at + 1);
        self.free[at] = r;
        self.len += 1;
        Ok(())
    }

    fn remove_slot(&mut self, at: usize) {
        self.free.copy_within(at + 1..self.len, at);
        self.len -= 1;
    }
}

impl Default for FrameAllocator {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const P: u64 = FRAME_BYTES;

    fn alloc_with(regions: &[(u64, u64)]) -> FrameAllocator {
        let mut a = FrameAllocator::new();
        for &(s, e) in regions {
            a.add_region(s, e);
        }
        a
    }

    #[test]
    fn regions_are_rounded_inward_and_counted() {
        let a = alloc_with(&[(0x100000 + 1, 0x200000 - 1), (0x300000, 0x300000 + 3 * P)]);
        assert_eq!(a.total_frames(), (0x100000 / P - 2) + 3);
        assert_eq!(a.free_frames(), a.total_frames());
    }

    #[test]
    fn contiguous_aligned_runs_do_not_overlap() {
        let mut a = alloc_with(&[(0x101000, 0x900000)]);
        let x = a.alloc(3, 1).unwrap();
        let y = a.alloc(4, 4).unwrap(); // 16 KiB aligned
        let z = a.alloc(1, 512).unwrap(); // 2 MiB aligned
        assert_eq!(x.addr, 0x101000);
        assert_eq!(y.addr % (4 * P), 0);
        assert_eq!(z.addr % 0x200000, 0);
        let mut runs = [x, y, z];
        runs.sort_by_key(|r| r.addr);
        for w in runs.windows(2) {
            assert!(w[0].addr + w[0].len_bytes() <= w[1].addr);
        }
        assert_eq!(a.free_frames(), a.total_frames() - 8);
    }

    #[test]
    fn free_merges_and_double_free_is_refused() {
        let mut a = alloc_with(&[(0x100000, 0x200000)]);
        let total = a.free_frames();
        let runs: Vec<_> = (0..10).map(|_| a.alloc(5, 1).unwrap()).collect();
        for r in runs.iter().step_by(2) {
            a.free(*r).unwrap();
        }
        assert_eq!(a.free(runs[0]), Err(FreeError::DoubleFree));
        assert_eq!(
            a.free(FrameRun {
                addr: runs[0].addr + P,
                count: 1
            }),
            Err(FreeError::DoubleFree)
        );
        for r in runs.iter().skip(1).step_by(2) {
            a.free(*r).unwrap();
        }
        assert_eq!(a.free_frames(), total);
        assert_eq!(a.free_ranges(), 1, "everything merged back");
        assert_eq!(
            a.free(FrameRun {
                addr: 0x1234,
                count: 1
            }),
            Err(FreeError::Misaligned)
        );
    }

    #[test]
    fn reserve_punches_holes() {
        let mut a = alloc_with(&[(0, 0x400000)]);
        a.reserve(0x100000, 0x180000); // kernel image
        a.reserve(0x3ff000, 0x500000); // past the end
        assert_eq!(a.total_frames(), 0x400 - 0x80 - 1);
        let big = a.alloc(0x100, 1).unwrap();
        assert!(big.addr >= 0x180000 || big.addr + big.len_bytes() <= 0x100000);
        assert!(a.alloc(0x1000, 1).is_none(), "more than exists");
        assert!(a.alloc(0, 1).is_none());
        assert!(a.alloc(1, 3).is_none(), "alignment must be a power of two");
    }
}
