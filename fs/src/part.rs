//! MBR partition tables (the layout OpenWrt's x86 combined image and `fdisk` use)
//! and [`Partition`], a block device that is a window on another.

use crate::blockdev::{BlockDev, IoError, SECTOR};
use alloc::vec::Vec;

/// One primary partition from the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MbrEntry {
    /// Its number, 1-4 (`xvda1` ...).
    pub number: u8,
    /// Marked active.
    pub bootable: bool,
    /// MBR type byte (0x83: Linux).
    pub kind: u8,
    /// First sector.
    pub start_lba: u64,
    /// Sectors.
    pub sectors: u64,
}

/// MBR type of a Linux filesystem partition.
pub const LINUX: u8 = 0x83;

/// The primary partitions of an MBR (empty entries skipped). None if the sector has
/// no boot signature, or is a GPT protective MBR, or an entry is malformed (a bad
/// status byte, a partition outside `disk_sectors`, or two that overlap).
pub fn parse_mbr(sector0: &[u8; 512], disk_sectors: u64) -> Option<Vec<MbrEntry>> {
    if sector0[510] != 0x55 || sector0[511] != 0xaa {
        return None;
    }
    let mut out: Vec<MbrEntry> = Vec::new();
    for i in 0..4 {
        let e = &sector0[0x1be + 16 * i..0x1be + 16 * (i + 1)];
        let kind = e[4];
        let start = u64::from(u32::from_le_bytes([e[8], e[9], e[10], e[11]]));
        let sectors = u64::from(u32::from_le_bytes([e[12], e[13], e[14], e[15]]));
        if kind == 0 || sectors == 0 {
            continue;
        }
        if kind == 0xee || (e[0] != 0 && e[0] != 0x80) || start == 0 {
            return None;
        }
        if start.checked_add(sectors)? > disk_sectors {
            return None;
        }
        if out
            .iter()
            .any(|o| start < o.start_lba + o.sectors && o.start_lba < start + sectors)
        {
            return None;
        }
        out.push(MbrEntry {
            number: i as u8 + 1,
            bootable: e[0] == 0x80,
            kind,
            start_lba: start,
            sectors,
        });
    }
    Some(out)
}

/// A block device covering `sectors` sectors of `inner` from `start_lba`.
pub struct Partition<D: BlockDev> {
    inner: D,
    offset: u64,
    len: u64,
}

impl<D: BlockDev> Partition<D> {
    /// The window; None if it does not lie inside `inner`.
    pub fn new(inner: D, start_lba: u64, sectors: u64) -> Option<Self> {
        let offset = start_lba.checked_mul(SECTOR)?;
        let len = sectors.checked_mul(SECTOR)?;
        if offset.checked_add(len)? > inner.size_bytes() {
            return None;
        }
        Some(Partition { inner, offset, len })
    }

    fn check(&self, offset: u64, n: usize) -> Result<u64, IoError> {
        let end = offset.checked_add(n as u64).ok_or(IoError::OutOfRange)?;
        if end > self.len {
            return Err(IoError::OutOfRange);
        }
        Ok(self.offset + offset)
    }
}

impl<D: BlockDev> BlockDev for Partition<D> {
    fn size_bytes(&self) -> u64 {
        self.len
    }
    fn read_only(&self) -> bool {
        self.inner.read_only()
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let at = self.check(offset, buf.len())?;
        self.inner.read(at, buf)
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        let at = self.check(offset, data.len())?;
        self.inner.write(at, data)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blockdev::MemDisk;

    fn mbr(entries: &[(u8, u8, u32, u32)]) -> [u8; 512] {
        let mut s = [0u8; 512];
        for (i, &(status, kind, start, n)) in entries.iter().enumerate() {
            let e = &mut s[0x1be + 16 * i..0x1be + 16 * (i + 1)];
            e[0] = status;
            e[4] = kind;
            e[8..12].copy_from_slice(&start.to_le_bytes());
            e[12..16].copy_from_slice(&n.to_le_bytes());
        }
        s[510] = 0x55;
        s[511] = 0xaa;
        s
    }

    #[test]
    fn openwrt_like_table() {
        let t = parse_mbr(&mbr(&[(0x80, LINUX, 2048, 30720)]), 32768).unwrap();
        assert_eq!(
            t,
            [MbrEntry {
                number: 1,
                bootable: true,
                kind: LINUX,
                start_lba: 2048,
                sectors: 30720
            }]
        );
        // The second slot empty, the third used: numbers follow the slots.
        let t = parse_mbr(
            &mbr(&[(0, LINUX, 2048, 100), (0, 0, 0, 0), (0, 0x0c, 4096, 100)]),
            8192,
        )
        .unwrap();
        assert_eq!(t.iter().map(|e| e.number).collect::<Vec<_>>(), [1, 3]);
    }

    #[test]
    fn hostile_tables_are_refused() {
        let mut no_sig = mbr(&[(0x80, LINUX, 2048, 100)]);
        no_sig[511] = 0;
        assert_eq!(parse_mbr(&no_sig, 8192), None);
        assert_eq!(
            parse_mbr(&mbr(&[(0, LINUX, 2048, 10_000)]), 8192),
            None,
            "past the end"
        );
        assert_eq!(
            parse_mbr(&mbr(&[(0, LINUX, u32::MAX, u32::MAX)]), 8192),
            None,
            "huge"
        );
        assert_eq!(
            parse_mbr(&mbr(&[(0, LINUX, 2048, 100), (0, LINUX, 2100, 100)]), 8192),
            None,
            "overlap"
        );
        assert_eq!(
            parse_mbr(&mbr(&[(0x17, LINUX, 2048, 100)]), 8192),
            None,
            "bad status"
        );
        assert_eq!(parse_mbr(&mbr(&[(0, 0xee, 1, 100)]), 8192), None, "GPT");
    }

    #[test]
    fn window_stays_inside() {
        let mut d = MemDisk {
            bytes: alloc::vec![0; 8192],
            read_only: false,
        };
        d.bytes[2048] = 7;
        let mut p = Partition::new(&mut d, 4, 8).unwrap();
        assert_eq!(p.size_bytes(), 4096);
        let mut b = [0u8; 512];
        p.read(0, &mut b).unwrap();
        assert_eq!(b[0], 7);
        assert_eq!(p.read(4096, &mut b), Err(IoError::OutOfRange));
        assert_eq!(p.read(u64::MAX - 100, &mut b), Err(IoError::OutOfRange));
        p.write(3584, &[9u8; 512]).unwrap();
        assert_eq!(d.bytes[2048 + 3584], 9);
        assert!(Partition::new(
            MemDisk {
                bytes: alloc::vec![0; 4096],
                read_only: false
            },
            4,
            8
        )
        .is_none());
    }
}
