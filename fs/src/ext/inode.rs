//! On-disk inodes: raw `inode_size` bytes with typed accessors, times with the extra
//! epoch bits, and the metadata_csum inode checksum (lo 16 bits at 0x7C, hi at 0x82).

use super::csum::{get16, get32, put16, put32};
use crate::crc32c::crc32c;
use crate::types::FileType;
use alloc::vec::Vec;

/// i_flags: directory is htree-indexed.
pub const FL_INDEX: u32 = 0x1000;
/// `chattr +i`: no change at all (data, name, times, links).
pub const FL_IMMUTABLE: u32 = 0x10;
/// `chattr +a`: data only appended; no truncate, no unlink or rename.
pub const FL_APPEND: u32 = 0x20;
/// i_flags: `i_blocks` counts filesystem blocks, not sectors.
pub const FL_HUGE_FILE: u32 = 0x40000;
/// i_flags: `i_block` holds an extent tree.
pub const FL_EXTENTS: u32 = 0x80000;
/// i_flags: data is inline in the inode.
pub const FL_INLINE_DATA: u32 = 0x1000_0000;

/// Mode type bits.
pub const S_IFMT: u16 = 0o170000;
/// Directory.
pub const S_IFDIR: u16 = 0o040000;
/// Regular file.
pub const S_IFREG: u16 = 0o100000;
/// Symbolic link.
pub const S_IFLNK: u16 = 0o120000;

/// An inode's bytes.
#[derive(Clone, Debug)]
pub struct Inode {
    /// Raw bytes (`inode_size` long).
    pub raw: Vec<u8>,
}

fn encode_time(t: i64) -> (u32, u32) {
    let lo = t as i32;
    let epoch = ((t - lo as i64) >> 32) as u32 & 3;
    (lo as u32, epoch)
}

fn decode_time(lo: u32, extra: Option<u32>) -> i64 {
    let mut t = lo as i32 as i64;
    if let Some(x) = extra {
        t += ((x & 3) as i64) << 32;
    }
    t
}

impl Inode {
    /// Mode.
    pub fn mode(&self) -> u16 {
        get16(&self.raw, 0)
    }
    /// Sets the mode.
    pub fn set_mode(&mut self, m: u16) {
        put16(&mut self.raw, 0, m)
    }
    /// The kind, from the mode.
    pub fn kind(&self) -> FileType {
        match self.mode() & S_IFMT {
            S_IFDIR => FileType::Dir,
            S_IFREG => FileType::File,
            S_IFLNK => FileType::Symlink,
            _ => FileType::Special,
        }
    }
    /// Owner (with the high 16 bits).
    pub fn uid(&self) -> u32 {
        get16(&self.raw, 2) as u32 | (get16(&self.raw, 0x78) as u32) << 16
    }
    /// Group (with the high 16 bits).
    pub fn gid(&self) -> u32 {
        get16(&self.raw, 0x18) as u32 | (get16(&self.raw, 0x7A) as u32) << 16
    }
    /// Size in bytes.
    ///
    /// The high 32 bits count for regular files only, as Linux's `ext4_isize`
    /// reads them without `large_dir` (a directory of 4 GiB is not something this
    /// appliance meets; ext2 used the field as `i_dir_acl` for directories, and a
    /// stray value there made a directory "terabytes" long).
    pub fn size(&self) -> u64 {
        let lo = get32(&self.raw, 4) as u64;
        if self.mode() & S_IFMT == S_IFREG {
            lo | (get32(&self.raw, 0x6C) as u64) << 32
        } else {
            lo
        }
    }
    /// Sets the size.
    pub fn set_size(&mut self, s: u64) {
        put32(&mut self.raw, 4, s as u32);
        put32(&mut self.raw, 0x6C, (s >> 32) as u32);
    }
    /// Link count.
    pub fn links(&self) -> u16 {
        get16(&self.raw, 0x1A)
    }
    /// Sets the link count.
    pub fn set_links(&mut self, n: u16) {
        put16(&mut self.raw, 0x1A, n)
    }
    /// i_flags.
    pub fn flags(&self) -> u32 {
        get32(&self.raw, 0x20)
    }
    /// Sets i_flags.
    pub fn set_flags(&mut self, f: u32) {
        put32(&mut self.raw, 0x20, f)
    }
    /// i_generation.
    pub fn generation(&self) -> u32 {
        get32(&self.raw, 0x64)
    }
    /// The 60 bytes of `i_block`.
    pub fn i_block(&self) -> &[u8] {
        self.raw.get(0x28..0x64).unwrap_or(&[])
    }
    /// `i_block`, writable.
    pub fn i_block_mut(&mut self) -> &mut [u8] {
        self.raw.get_mut(0x28..0x64).unwrap_or(&mut [])
    }
    /// The extended attribute block.
    pub fn file_acl(&self) -> u64 {
        get32(&self.raw, 0x68) as u64 | (get16(&self.raw, 0x76) as u64) << 32
    }
    /// i_blocks in 512-byte units.
    pub fn blocks_512(&self, huge_file: bool, bs: u32) -> u64 {
        let mut n = get32(&self.raw, 0x1C) as u64;
        if huge_file {
            n |= (get16(&self.raw, 0x74) as u64) << 32;
            if self.flags() & FL_HUGE_FILE != 0 {
                n = n.saturating_mul(bs as u64 / 512);
            }
        }
        n
    }
    /// Sets i_blocks from a count of 512-byte units.
    pub fn set_blocks_512(&mut self, n: u64) {
        put32(&mut self.raw, 0x1C, n as u32);
        put16(&mut self.raw, 0x74, (n >> 32) as u16);
        let f = self.flags() & !FL_HUGE_FILE;
        self.set_flags(f);
    }
    /// i_extra_isize (0 for 128-byte inodes).
    pub fn extra_isize(&self) -> usize {
        if self.raw.len() <= 128 {
            return 0;
        }
        let x = get16(&self.raw, 0x80) as usize;
        if 128 + x > self.raw.len() {
            0
        } else {
            x
        }
    }
    fn has_extra(&self, field_end: usize) -> bool {
        128 + self.extra_isize() >= field_end
    }
    /// Access time.
    pub fn atime(&self) -> i64 {
        decode_time(
            get32(&self.raw, 0x8),
            self.has_extra(0x90).then(|| get32(&self.raw, 0x8C)),
        )
    }
    /// Change time.
    pub fn ctime(&self) -> i64 {
        decode_time(
            get32(&self.raw, 0xC),
            self.has_extra(0x88).then(|| get32(&self.raw, 0x84)),
        )
    }
    /// Modification time.
    pub fn mtime(&self) -> i64 {
        decode_time(
            get32(&self.raw, 0x10),
            self.has_extra(0x8C).then(|| get32(&self.raw, 0x88)),
        )
    }
    fn set_time(&mut self, lo: usize, extra: usize, t: i64) {
        let (l, e) = encode_time(t);
        put32(&mut self.raw, lo, l);
        if self.has_extra(extra + 4) {
            put32(&mut self.raw, extra, e);
        }
    }
    /// Sets the access time.
    pub fn set_atime(&mut self, t: i64) {
        self.set_time(0x8, 0x8C, t)
    }
    /// Sets the change time.
    pub fn set_ctime(&mut self, t: i64) {
        self.set_time(0xC, 0x84, t)
    }
    /// Sets the modification time.
    pub fn set_mtime(&mut self, t: i64) {
        self.set_time(0x10, 0x88, t)
    }
    /// Sets the creation time (if the inode has room for it).
    pub fn set_crtime(&mut self, t: i64) {
        if self.has_extra(0x94) {
            self.set_time(0x90, 0x94, t)
        }
    }
    /// The deletion time (for an inode on the orphan list: the next one there).
    pub fn dtime(&self) -> u32 {
        get32(&self.raw, 0x14)
    }
    /// Sets the deletion time.
    pub fn set_dtime(&mut self, t: i64) {
        put32(&mut self.raw, 0x14, t as u32)
    }

    fn csum_calc(&self, seed: u32, ino: u32) -> u32 {
        let gen = self.generation();
        let mut c = crc32c(seed, &ino.to_le_bytes());
        c = crc32c(c, &gen.to_le_bytes());
        let hi = self.raw.len() > 128 && self.has_extra(0x84);
        let r = &self.raw;
        c = crc32c(c, &r[..0x7C]);
        c = crc32c(c, &[0, 0]);
        c = crc32c(c, &r[0x7E..0x80]);
        if r.len() > 128 {
            c = crc32c(c, &r[0x80..0x82]);
            if hi {
                c = crc32c(c, &[0, 0]);
            } else {
                c = crc32c(c, &r[0x82..0x84]);
            }
            c = crc32c(c, &r[0x84..]);
        }
        c
    }

    /// Whether the checksum matches (`seed` is the filesystem's).
    pub fn csum_ok(&self, seed: u32, ino: u32) -> bool {
        let c = self.csum_calc(seed, ino);
        let stored_lo = get16(&self.raw, 0x7C) as u32;
        if self.raw.len() > 128 && self.has_extra(0x84) {
            c == stored_lo | (get16(&self.raw, 0x82) as u32) << 16
        } else {
            c & 0xFFFF == stored_lo
        }
    }

    /// Stores a fresh checksum.
    pub fn set_csum(&mut self, seed: u32, ino: u32) {
        let c = self.csum_calc(seed, ino);
        put16(&mut self.raw, 0x7C, c as u16);
        if self.raw.len() > 128 && self.has_extra(0x84) {
            put16(&mut self.raw, 0x82, (c >> 16) as u16);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_past_2038() {
        let mut i = Inode {
            raw: alloc::vec![0; 256],
        };
        put16(&mut i.raw, 0x80, 32);
        for t in [0i64, 1, 0x7fff_ffff, 0x8000_0000, 0x1_2345_6789, -5] {
            i.set_mtime(t);
            assert_eq!(i.mtime(), t);
        }
    }

    #[test]
    fn checksum_detects_flip() {
        let mut i = Inode {
            raw: alloc::vec![0; 256],
        };
        put16(&mut i.raw, 0x80, 32);
        i.set_csum(1234, 12);
        assert!(i.csum_ok(1234, 12));
        i.raw[200] ^= 1;
        assert!(!i.csum_ok(1234, 12));
    }
}
