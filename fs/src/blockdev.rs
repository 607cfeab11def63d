//! The block device a filesystem sits on: synchronous, byte-addressed in multiples of
//! 512, any length. The kernel implements it over blkfront (splitting a long transfer
//! into large requests kept in flight together); host tests implement it over a file
//! or a `Vec<u8>`, and wrap it to fail, stall or crash on purpose.

use alloc::string::String;
use core::fmt;

/// Bytes per addressing unit: offsets and lengths are multiples of this.
pub const SECTOR: u64 = 512;

/// What a block device can report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IoError {
    /// The device reported an I/O error.
    Io,
    /// The device is read-only.
    ReadOnly,
    /// Outside the device, or not a multiple of [`SECTOR`].
    OutOfRange,
    /// The device has failed for good (the reason is kept).
    Broken(String),
    /// The operation was interrupted (Ctrl-C); nothing is known of what reached the disk.
    Interrupted,
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IoError::Io => f.write_str("Input/output error"),
            IoError::ReadOnly => f.write_str("Read-only file system"),
            IoError::OutOfRange => f.write_str("Invalid argument (outside the device)"),
            IoError::Broken(why) => write!(f, "device broken: {why}"),
            IoError::Interrupted => f.write_str("Interrupted"),
        }
    }
}

/// A synchronous block device.
pub trait BlockDev {
    /// Size in bytes (a multiple of [`SECTOR`]).
    fn size_bytes(&self) -> u64;
    /// Whether writes are refused.
    fn read_only(&self) -> bool;
    /// Reads `buf.len()` bytes at byte `offset` (both multiples of [`SECTOR`]).
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError>;
    /// Writes `data` at byte `offset` (both multiples of [`SECTOR`]). Returning Ok means
    /// the device accepted it, not that it is on stable storage: see [`BlockDev::flush`].
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError>;
    /// Returns once everything written before is on stable storage.
    fn flush(&mut self) -> Result<(), IoError>;
}

impl<T: BlockDev + ?Sized> BlockDev for &mut T {
    fn size_bytes(&self) -> u64 {
        (**self).size_bytes()
    }
    fn read_only(&self) -> bool {
        (**self).read_only()
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        (**self).read(offset, buf)
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        (**self).write(offset, data)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        (**self).flush()
    }
}

/// A device in memory (host tests, and the kernel's RAM-backed disks).
#[derive(Clone, Debug, Default)]
pub struct MemDisk {
    /// The bytes.
    pub bytes: alloc::vec::Vec<u8>,
    /// Refuse writes.
    pub read_only: bool,
}

fn range(len: usize, offset: u64, n: usize) -> Result<core::ops::Range<usize>, IoError> {
    if !offset.is_multiple_of(SECTOR) || !(n as u64).is_multiple_of(SECTOR) {
        return Err(IoError::OutOfRange);
    }
    let start = usize::try_from(offset).map_err(|_| IoError::OutOfRange)?;
    let end = start.checked_add(n).ok_or(IoError::OutOfRange)?;
    if end > len {
        return Err(IoError::OutOfRange);
    }
    Ok(start..end)
}

impl BlockDev for MemDisk {
    fn size_bytes(&self) -> u64 {
        self.bytes.len() as u64 / SECTOR * SECTOR
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let r = range(self.bytes.len(), offset, buf.len())?;
        buf.copy_from_slice(&self.bytes[r]);
        Ok(())
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        if self.read_only {
            return Err(IoError::ReadOnly);
        }
        let r = range(self.bytes.len(), offset, data.len())?;
        self.bytes[r].copy_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memdisk_checks_alignment_and_bounds() {
        let mut d = MemDisk {
            bytes: alloc::vec![0; 4096],
            read_only: false,
        };
        let mut b = [0u8; 512];
        assert_eq!(d.read(4096, &mut b), Err(IoError::OutOfRange));
        assert_eq!(d.read(100, &mut b), Err(IoError::OutOfRange));
        assert_eq!(d.read(u64::MAX - 511, &mut b), Err(IoError::OutOfRange));
        d.write(512, &[7u8; 512]).unwrap();
        d.read(512, &mut b).unwrap();
        assert_eq!(b, [7u8; 512]);
        d.read_only = true;
        assert_eq!(d.write(0, &[0u8; 512]), Err(IoError::ReadOnly));
    }
}
