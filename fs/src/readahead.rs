//! Readahead for a mounted filesystem's small reads: a few windows of the device
//! kept in memory, filled by one request each, so that reading along the disk in
//! small pieces (an inode table block by block, the data of small files that
//! follow each other, a directory's blocks) costs one round trip to the backend per
//! window instead of one per piece. On a virtual disk the round trip, not the bytes,
//! is the cost: `cp -r` of 5,000 small files asked the source disk for 6,346 reads
//! before this (`shell/tests/cp_r_requests.rs`).
//!
//! The policy is Linux's readahead reduced to what a filesystem without a page cache
//! needs:
//! - only a *sequential* miss reads ahead: a small read that starts at or shortly
//!   after where an earlier read (one of a few streams remembered) ended; a random
//!   small read goes to the device as it is, so a lookup in a large directory or a
//!   random read of a big file pays no extra transfer;
//! - a large read (at least [`ReadAhead::window`]) goes straight to the device, into
//!   the caller's buffer;
//! - the windows are kept coherent with the device: every write through this layer
//!   updates the bytes it covers in a window (write-through), a failed write drops the
//!   windows it touched (what reached the disk is unknown); a window's read that
//!   fails is not an error: the read the caller asked for is sent as it is, and its
//!   result is the answer.
//!
//! Memory: at most [`STREAMS`] windows of the configured size (the mount gives it
//! from its budget, [`ReadAhead::set_window`]; 0 turns readahead off).

use crate::blockdev::{BlockDev, IoError};
use alloc::vec::Vec;

/// Streams (and windows) remembered at once: the inode table, a directory, file
/// data, and one more.
pub const STREAMS: usize = 4;

/// How far past a stream's end a read still counts as continuing it (a file's data
/// follows its predecessor's after a few blocks of metadata or a partial block).
const GAP: u64 = 64 * 1024;

/// A window of the device held in memory.
struct Window {
    off: u64,
    data: Vec<u8>,
    /// When it was last read from (for replacement).
    used: u64,
}

/// The readahead layer over a device.
pub struct ReadAhead<D: BlockDev> {
    dev: D,
    /// Bytes per window (a multiple of 512; 0: off).
    window: usize,
    windows: Vec<Window>,
    /// Where recent reads ended (the streams), with when.
    ends: Vec<(u64, u64)>,
    clock: u64,
    /// Reads answered from a window.
    pub hits: u64,
    /// Windows read.
    pub fills: u64,
}

impl<D: BlockDev> ReadAhead<D> {
    /// Over `dev`, with readahead off until [`ReadAhead::set_window`].
    pub fn new(dev: D) -> Self {
        ReadAhead {
            dev,
            window: 0,
            windows: Vec::new(),
            ends: Vec::new(),
            clock: 0,
            hits: 0,
            fills: 0,
        }
    }

    /// Sets the window size (rounded down to 512 bytes; 0 turns readahead off and
    /// frees the windows).
    pub fn set_window(&mut self, bytes: usize) {
        let bytes = bytes / 512 * 512;
        if bytes != self.window {
            self.windows.clear();
            self.window = bytes;
        }
    }

    /// The window size (0: off).
    pub fn window(&self) -> usize {
        self.window
    }

    /// The device.
    pub fn inner(&self) -> &D {
        &self.dev
    }

    /// The device, mutably: what the windows hold is dropped (something may write
    /// behind this layer's back).
    pub fn inner_mut(&mut self) -> &mut D {
        self.windows.clear();
        &mut self.dev
    }

    /// The device back.
    pub fn into_inner(self) -> D {
        self.dev
    }

    /// Drops every window (memory is low).
    pub fn drop_windows(&mut self) {
        self.windows.clear();
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Whether a read at `off` continues a stream.
    fn sequential(&self, off: u64) -> bool {
        self.ends
            .iter()
            .any(|&(end, _)| off >= end && off - end <= GAP)
    }

    /// Notes that a read ended at `end` (continuing the nearest stream before it,
    /// or starting a new one in place of the oldest).
    fn note_end(&mut self, off: u64, end: u64) {
        let t = self.tick();
        if let Some(s) = self
            .ends
            .iter_mut()
            .find(|(e, _)| off >= *e && off - *e <= GAP)
        {
            *s = (end, t);
            return;
        }
        if self.ends.len() == STREAMS {
            if let Some(i) = (0..self.ends.len()).min_by_key(|&i| self.ends[i].1) {
                self.ends.swap_remove(i);
            }
        }
        self.ends.push((end, t));
    }

    /// Answers `buf` at `off` from a window that holds all of it.
    fn serve_from_window(&mut self, off: u64, buf: &mut [u8]) -> bool {
        let end = off + buf.len() as u64;
        let t = self.tick();
        for w in &mut self.windows {
            if off >= w.off && end <= w.off + w.data.len() as u64 {
                let at = (off - w.off) as usize;
                buf.copy_from_slice(&w.data[at..at + buf.len()]);
                w.used = t;
                return true;
            }
        }
        false
    }

    /// Reads a window starting at `off` (as much of [`ReadAhead::window`] as the
    /// device has); None if it cannot be had (no memory, a read error).
    fn fill(&mut self, off: u64) -> Option<usize> {
        let len = (self.window as u64).min(self.dev.size_bytes().saturating_sub(off)) as usize;
        if len == 0 {
            return None;
        }
        // The window's buffer: the oldest one's, reused, when all are taken.
        let mut data = if self.windows.len() == STREAMS {
            let i = (0..self.windows.len()).min_by_key(|&i| self.windows[i].used)?;
            self.windows.swap_remove(i).data
        } else {
            Vec::new()
        };
        data.clear();
        if data.try_reserve_exact(len).is_err() {
            return None;
        }
        data.resize(len, 0);
        if self.dev.read(off, &mut data).is_err() {
            return None;
        }
        self.fills += 1;
        let used = self.tick();
        self.windows.push(Window { off, data, used });
        Some(self.windows.len() - 1)
    }
}

impl<D: BlockDev> BlockDev for ReadAhead<D> {
    fn size_bytes(&self) -> u64 {
        self.dev.size_bytes()
    }

    fn read_only(&self) -> bool {
        self.dev.read_only()
    }

    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let end = offset.saturating_add(buf.len() as u64);
        if self.window == 0 || buf.len() >= self.window {
            self.note_end(offset, end);
            return self.dev.read(offset, buf);
        }
        if self.serve_from_window(offset, buf) {
            self.hits += 1;
            self.note_end(offset, end);
            return Ok(());
        }
        let ahead = self.sequential(offset);
        self.note_end(offset, end);
        if ahead && self.fill(offset).is_some() && self.serve_from_window(offset, buf) {
            return Ok(());
        }
        self.dev.read(offset, buf)
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        let r = self.dev.write(offset, data);
        let end = offset.saturating_add(data.len() as u64);
        let ok = r.is_ok();
        self.windows.retain_mut(|w| {
            let w_end = w.off + w.data.len() as u64;
            if end <= w.off || offset >= w_end {
                return true;
            }
            if !ok {
                return false;
            }
            // the overlap, copied in
            let from = offset.max(w.off);
            let to = end.min(w_end);
            let src = &data[(from - offset) as usize..(to - offset) as usize];
            w.data[(from - w.off) as usize..(to - w.off) as usize].copy_from_slice(src);
            true
        });
        r
    }

    fn flush(&mut self) -> Result<(), IoError> {
        self.dev.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blockdev::MemDisk;

    /// A disk whose bytes are their offset's low byte; counts reads.
    struct Counting {
        disk: MemDisk,
        reads: Vec<(u64, usize)>,
        fail_reads_longer_than: Option<usize>,
    }

    impl BlockDev for Counting {
        fn size_bytes(&self) -> u64 {
            self.disk.size_bytes()
        }
        fn read_only(&self) -> bool {
            false
        }
        fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
            self.reads.push((offset, buf.len()));
            if self.fail_reads_longer_than.is_some_and(|n| buf.len() > n) {
                return Err(IoError::Io);
            }
            self.disk.read(offset, buf)
        }
        fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
            self.disk.write(offset, data)
        }
        fn flush(&mut self) -> Result<(), IoError> {
            Ok(())
        }
    }

    fn dev(bytes: usize) -> ReadAhead<Counting> {
        let disk = MemDisk {
            bytes: (0..bytes).map(|i| (i / 512) as u8).collect(),
            read_only: false,
        };
        let mut ra = ReadAhead::new(Counting {
            disk,
            reads: Vec::new(),
            fail_reads_longer_than: None,
        });
        ra.set_window(32 * 1024);
        ra
    }

    fn read(ra: &mut ReadAhead<Counting>, off: u64, len: usize) -> Vec<u8> {
        let mut b = alloc::vec![0u8; len];
        ra.read(off, &mut b).unwrap();
        b
    }

    fn expect(off: u64, len: usize) -> Vec<u8> {
        (off as usize..off as usize + len)
            .map(|i| (i / 512) as u8)
            .collect()
    }

    #[test]
    fn sequential_small_reads_cost_one_request_per_window() {
        let mut ra = dev(1 << 20);
        // 64 reads of 1 KiB along the disk: the first is a plain read (no stream
        // yet), then one window of 32 KiB per 32 KiB
        for i in 0..64u64 {
            assert_eq!(read(&mut ra, i * 1024, 1024), expect(i * 1024, 1024));
        }
        let n = ra.inner().reads.len();
        assert!(n <= 4, "{n} requests: {:?}", ra.inner().reads);
        assert!(ra.hits >= 60);
    }

    #[test]
    fn small_files_a_few_blocks_apart_are_one_stream() {
        let mut ra = dev(1 << 20);
        // reads of 2 KiB every 3 KiB (a gap between files), then past the window
        for i in 0..40u64 {
            assert_eq!(read(&mut ra, i * 3072, 2048), expect(i * 3072, 2048));
        }
        assert!(ra.inner().reads.len() <= 6, "{:?}", ra.inner().reads);
    }

    #[test]
    fn random_small_reads_read_no_more_than_asked() {
        let mut ra = dev(4 << 20);
        let offs = [3u64 << 20, 1 << 20, 2 << 20, 512 * 1024, 3 << 19];
        for &o in &offs {
            assert_eq!(read(&mut ra, o, 1024), expect(o, 1024));
        }
        assert!(ra.inner().reads.iter().all(|&(_, l)| l == 1024));
        assert_eq!(ra.fills, 0);
    }

    #[test]
    fn large_reads_go_straight_to_the_device() {
        let mut ra = dev(1 << 20);
        assert_eq!(read(&mut ra, 0, 64 * 1024), expect(0, 64 * 1024));
        assert_eq!(ra.inner().reads, [(0, 64 * 1024)]);
    }

    #[test]
    fn a_write_updates_what_a_window_holds_and_a_failed_one_drops_it() {
        let mut ra = dev(1 << 20);
        read(&mut ra, 0, 1024);
        read(&mut ra, 1024, 1024); // a window from 1 KiB
        assert_eq!(ra.fills, 1);
        ra.write(4096, &[0xab; 1024]).unwrap();
        assert_eq!(read(&mut ra, 4096, 1024), alloc::vec![0xab; 1024]);
        // straddling the window's end: the part inside updated
        ra.write(1024 + 32 * 1024 - 512, &[0xcd; 1024]).unwrap();
        assert_eq!(
            read(&mut ra, 1024 + 32 * 1024 - 512, 512),
            alloc::vec![0xcd; 512]
        );
        let n = ra.inner().reads.len();
        // a write the device refuses: the window may no longer be what the disk holds
        ra.inner_mut().disk.read_only = true;
        assert!(ra.write(2048, &[0xee; 512]).is_err());
        ra.inner_mut().disk.read_only = false;
        read(&mut ra, 2048, 512);
        assert!(ra.inner().reads.len() > n, "read again from the device");
    }

    #[test]
    fn a_window_that_cannot_be_read_leaves_the_read_asked_for() {
        let mut ra = dev(1 << 20);
        ra.inner_mut().fail_reads_longer_than = Some(4096);
        read(&mut ra, 0, 1024);
        assert_eq!(read(&mut ra, 1024, 1024), expect(1024, 1024));
        assert_eq!(ra.fills, 0);
        // and an error of the read itself is the caller's
        let mut b = alloc::vec![0u8; 8192];
        assert_eq!(ra.read(0, &mut b), Err(IoError::Io));
    }

    #[test]
    fn a_window_ends_at_the_end_of_the_device() {
        let mut ra = dev(40 * 1024);
        read(&mut ra, 16 * 1024, 1024);
        assert_eq!(read(&mut ra, 17 * 1024, 1024), expect(17 * 1024, 1024));
        assert!(ra
            .inner()
            .reads
            .iter()
            .all(|&(o, l)| o + l as u64 <= 40 * 1024));
        assert_eq!(read(&mut ra, 39 * 1024, 1024), expect(39 * 1024, 1024));
    }

    #[test]
    fn off_reads_as_asked() {
        let mut ra = dev(1 << 20);
        ra.set_window(0);
        for i in 0..8u64 {
            read(&mut ra, i * 1024, 1024);
        }
        assert_eq!(ra.inner().reads.len(), 8);
    }
}
