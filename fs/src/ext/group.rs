//! Block group descriptors, 32 bytes (ext2, ext4 without 64bit) or 64 bytes, with their
//! checksum (crc32c under metadata_csum, crc16 under gdt_csum).

use super::csum::{crc16, get16, get32, put16};
use super::superblock::{Superblock, INCOMPAT_64BIT, RO_COMPAT_GDT_CSUM};
use crate::crc32c::crc32c;
use alloc::vec::Vec;

/// bg_flags: the inode bitmap and table are not initialised.
pub const BG_INODE_UNINIT: u16 = 1;
/// bg_flags: the block bitmap is not initialised.
pub const BG_BLOCK_UNINIT: u16 = 2;

/// One group descriptor, raw (`desc_size` bytes): a view into the [`Gdt`].
#[derive(Debug)]
pub struct GroupDesc<B> {
    raw: B,
    wide: bool,
}

/// Every group descriptor in one buffer, as the primary table is on disk (a
/// descriptor apiece cost a vector of its own: about 100 bytes a group instead of
/// 32 or 64, and group counts come from the disk).
pub struct Gdt {
    raw: Vec<u8>,
    ds: usize,
    count: u32,
    wide: bool,
}

impl Gdt {
    /// The table read from disk: `raw` holds at least `group_count` descriptors.
    pub fn new(raw: Vec<u8>, sb: &Superblock) -> Gdt {
        let ds = sb.desc_size as usize;
        Gdt {
            count: (raw.len() / ds).min(sb.group_count as usize) as u32,
            raw,
            ds,
            wide: sb.incompat & INCOMPAT_64BIT != 0 && ds >= 64,
        }
    }

    /// The descriptor of group `g`.
    pub fn get(&self, g: u32) -> Option<GroupDesc<&[u8]>> {
        let at = (g < self.count).then_some(g as usize * self.ds)?;
        Some(GroupDesc {
            raw: self.raw.get(at..at + self.ds)?,
            wide: self.wide,
        })
    }

    /// The descriptor of group `g`, to change.
    pub fn get_mut(&mut self, g: u32) -> Option<GroupDesc<&mut [u8]>> {
        let at = (g < self.count).then_some(g as usize * self.ds)?;
        Some(GroupDesc {
            raw: self.raw.get_mut(at..at + self.ds)?,
            wide: self.wide,
        })
    }

    /// Every descriptor, in group order.
    pub fn iter(&self) -> impl Iterator<Item = GroupDesc<&[u8]>> {
        self.raw
            .chunks_exact(self.ds)
            .take(self.count as usize)
            .map(|raw| GroupDesc {
                raw,
                wide: self.wide,
            })
    }
}

macro_rules! split_field {
    ($get:ident, $lo:expr, $hi:expr, $lo_get:ident, $bits:expr, $t:ty) => {
        /// Field accessor (lo and, on 64-byte descriptors, hi halves).
        pub fn $get(&self) -> $t {
            let raw = self.raw.as_ref();
            let mut v = $lo_get(raw, $lo) as $t;
            if self.wide {
                v |= ($lo_get(raw, $hi) as $t) << $bits;
            }
            v
        }
    };
}

macro_rules! split_setter {
    ($set:ident, $lo:expr, $hi:expr, $lo_put:ident, $bits:expr, $t:ty) => {
        /// Field setter.
        pub fn $set(&mut self, v: $t) {
            let wide = self.wide;
            let raw = self.raw.as_mut();
            $lo_put(raw, $lo, v as _);
            if wide {
                $lo_put(raw, $hi, (v >> $bits) as _);
            }
        }
    };
}

impl<B: AsRef<[u8]>> GroupDesc<B> {
    /// The raw bytes.
    pub fn raw(&self) -> &[u8] {
        self.raw.as_ref()
    }

    split_field!(block_bitmap, 0x0, 0x20, get32, 32, u64);
    split_field!(inode_bitmap, 0x4, 0x24, get32, 32, u64);
    split_field!(inode_table, 0x8, 0x28, get32, 32, u64);
    split_field!(free_blocks, 0xC, 0x2C, get16, 16, u32);
    split_field!(free_inodes, 0xE, 0x2E, get16, 16, u32);
    split_field!(used_dirs, 0x10, 0x30, get16, 16, u32);
    split_field!(itable_unused, 0x1C, 0x32, get16, 16, u32);
    /// The block bitmap checksum (16 bits on 32-byte descriptors).
    pub fn bb_csum(&self) -> u32 {
        let raw = self.raw.as_ref();
        let mut v = get16(raw, 0x18) as u32;
        if self.wide {
            v |= (get16(raw, 0x38) as u32) << 16;
        }
        v
    }

    /// The inode bitmap checksum.
    pub fn ib_csum(&self) -> u32 {
        let raw = self.raw.as_ref();
        let mut v = get16(raw, 0x1A) as u32;
        if self.wide {
            v |= (get16(raw, 0x3A) as u32) << 16;
        }
        v
    }

    /// bg_flags.
    pub fn flags(&self) -> u16 {
        get16(self.raw.as_ref(), 0x12)
    }

    /// The checksum this descriptor should carry, if the filesystem has one.
    pub fn compute_csum(&self, sb: &Superblock, group: u32) -> Option<u16> {
        let raw = self.raw.as_ref();
        let n = raw.len().min(sb.desc_size as usize);
        if sb.has_csum() {
            let mut c = crc32c(sb.csum_seed, &group.to_le_bytes());
            c = crc32c(c, &raw[..0x1E]);
            c = crc32c(c, &[0, 0]);
            if n > 0x20 {
                c = crc32c(c, &raw[0x20..n]);
            }
            Some(c as u16)
        } else if sb.ro_compat & RO_COMPAT_GDT_CSUM != 0 {
            let mut c = crc16(!0, &sb.raw[0x68..0x78]);
            c = crc16(c, &group.to_le_bytes());
            c = crc16(c, &raw[..0x1E]);
            if n > 0x20 {
                c = crc16(c, &raw[0x20..n]);
            }
            Some(c)
        } else {
            None
        }
    }

    /// Whether the stored checksum is right (or there is none).
    pub fn csum_ok(&self, sb: &Superblock, group: u32) -> bool {
        match self.compute_csum(sb, group) {
            Some(c) => c == get16(self.raw.as_ref(), 0x1E),
            None => true,
        }
    }
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> GroupDesc<B> {
    split_setter!(set_free_blocks, 0xC, 0x2C, put16, 16, u32);
    split_setter!(set_free_inodes, 0xE, 0x2E, put16, 16, u32);
    split_setter!(set_used_dirs, 0x10, 0x30, put16, 16, u32);
    split_setter!(set_itable_unused, 0x1C, 0x32, put16, 16, u32);

    /// Stores the block bitmap checksum (hi half only on 64-byte descriptors).
    pub fn set_bb_csum(&mut self, c: u32) {
        split_put(self, 0x18, 0x38, c);
    }

    /// Stores the inode bitmap checksum.
    pub fn set_ib_csum(&mut self, c: u32) {
        split_put(self, 0x1A, 0x3A, c);
    }

    /// Sets bg_flags.
    pub fn set_flags(&mut self, f: u16) {
        put16(self.raw.as_mut(), 0x12, f);
    }

    /// Stores a fresh checksum.
    pub fn update_csum(&mut self, sb: &Superblock, group: u32) {
        if let Some(c) = self.compute_csum(sb, group) {
            put16(self.raw.as_mut(), 0x1E, c);
        }
    }
}

/// A 32-bit value in 16-bit halves: the low one at `lo`, the high one at `hi` on
/// 64-byte descriptors only.
fn split_put<B: AsMut<[u8]>>(gd: &mut GroupDesc<B>, lo: usize, hi: usize, v: u32) {
    let wide = gd.wide;
    let raw = gd.raw.as_mut();
    put16(raw, lo, v as u16);
    if wide {
        put16(raw, hi, (v >> 16) as u16);
    }
}
