//! Record accounting: the reads and writes GNU dd counts.

/// What GNU dd counts: records (blocks) read and written, full and partial, and
/// bytes written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Reads that filled `ibs`.
    pub full_in: u64,
    /// Reads shorter than `ibs`.
    pub partial_in: u64,
    /// Writes of a full output block.
    pub full_out: u64,
    /// Writes shorter than a full output block.
    pub partial_out: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Records truncated by `conv=block` (never, as it is not implemented; printed
    /// as GNU does when nonzero).
    pub truncated: u64,
}

impl Stats {
    /// No records yet.
    pub const fn new() -> Self {
        Stats {
            full_in: 0,
            partial_in: 0,
            full_out: 0,
            partial_out: 0,
            bytes_out: 0,
            truncated: 0,
        }
    }

    /// Counts a read that returned `n` bytes with input block size `ibs`: full if
    /// `n >= ibs`, else partial (a `count_bytes` tail read is partial too). Do not call
    /// it at EOF (a read of 0); do call it with 0 for a failed read that
    /// `conv=noerror,sync` replaces by zeros: GNU counts that as a partial record.
    pub fn record_read(&mut self, n: u64, ibs: u64) {
        if n >= ibs {
            self.full_in += 1;
        } else {
            self.partial_in += 1;
        }
    }

    /// Counts a write of `n` bytes (what the device took) where a full block is `obs`
    /// bytes (`ibs` too when `bs=` is given): full if `n >= obs`, partial if `0 < n <
    /// obs`, nothing if 0. For a failed or short write pass the bytes that were
    /// written: a partial write counts as a partial record (coreutils 9.11+).
    pub fn record_write(&mut self, n: u64, obs: u64) {
        self.bytes_out += n;
        if n >= obs {
            self.full_out += 1;
        } else if n > 0 {
            self.partial_out += 1;
        }
    }

    /// Records read so far, full and partial (what `count=` limits).
    pub fn records_in(&self) -> u64 {
        self.full_in + self.partial_in
    }
}
