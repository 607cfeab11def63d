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

/// One group descriptor, kept raw (`desc_size` bytes).
#[derive(Clone, Debug)]
pub struct GroupDesc {
    /// The raw descriptor.
    pub raw: Vec<u8>,
    wide: bool,
}

macro_rules! split_field {
    ($get:ident, $lo:expr, $hi:expr, $lo_get:ident, $bits:expr, $t:ty) => {
        /// Field accessor (lo and, on 64-byte descriptors, hi halves).
        pub fn $get(&self) -> $t {
            let mut v = $lo_get(&self.raw, $lo) as $t;
            if self.wide {
                v |= ($lo_get(&self.raw, $hi) as $t) << $bits;
            }
            v
        }
    };
    ($get:ident, $set:ident, $lo:expr, $hi:expr, $lo_get:ident, $lo_put:ident, $bits:expr, $t:ty) => {
        /// Field accessor (lo and, on 64-byte descriptors, hi halves).
        pub fn $get(&self) -> $t {
            let mut v = $lo_get(&self.raw, $lo) as $t;
            if self.wide {
                v |= ($lo_get(&self.raw, $hi) as $t) << $bits;
            }
            v
        }
        /// Field setter.
        pub fn $set(&mut self, v: $t) {
            $lo_put(&mut self.raw, $lo, v as _);
            if self.wide {
                $lo_put(&mut self.raw, $hi, (v >> $bits) as _);
            }
        }
    };
}

impl GroupDesc {
    /// Wraps raw bytes.
    pub fn new(raw: Vec<u8>, sb: &Superblock) -> GroupDesc {
        let wide = sb.incompat & INCOMPAT_64BIT != 0 && raw.len() >= 64;
        GroupDesc { raw, wide }
    }

    split_field!(block_bitmap, 0x0, 0x20, get32, 32, u64);
    split_field!(inode_bitmap, 0x4, 0x24, get32, 32, u64);
    split_field!(inode_table, 0x8, 0x28, get32, 32, u64);
    split_field!(
        free_blocks,
        set_free_blocks,
        0xC,
        0x2C,
        get16,
        put16,
        16,
        u32
    );
    split_field!(
        free_inodes,
        set_free_inodes,
        0xE,
        0x2E,
        get16,
        put16,
        16,
        u32
    );
    split_field!(used_dirs, set_used_dirs, 0x10, 0x30, get16, put16, 16, u32);
    split_field!(
        itable_unused,
        set_itable_unused,
        0x1C,
        0x32,
        get16,
        put16,
        16,
        u32
    );
    /// The block bitmap checksum (16 bits on 32-byte descriptors).
    pub fn bb_csum(&self) -> u32 {
        let mut v = get16(&self.raw, 0x18) as u32;
        if self.wide {
            v |= (get16(&self.raw, 0x38) as u32) << 16;
        }
        v
    }

    /// The inode bitmap checksum.
    pub fn ib_csum(&self) -> u32 {
        let mut v = get16(&self.raw, 0x1A) as u32;
        if self.wide {
            v |= (get16(&self.raw, 0x3A) as u32) << 16;
        }
        v
    }

    /// Stores the block bitmap checksum (hi half only on 64-byte descriptors).
    pub fn set_bb_csum(&mut self, c: u32) {
        put16(&mut self.raw, 0x18, c as u16);
        if self.wide {
            put16(&mut self.raw, 0x38, (c >> 16) as u16);
        }
    }

    /// Stores the inode bitmap checksum.
    pub fn set_ib_csum(&mut self, c: u32) {
        put16(&mut self.raw, 0x1A, c as u16);
        if self.wide {
            put16(&mut self.raw, 0x3A, (c >> 16) as u16);
        }
    }

    /// bg_flags.
    pub fn flags(&self) -> u16 {
        get16(&self.raw, 0x12)
    }

    /// Sets bg_flags.
    pub fn set_flags(&mut self, f: u16) {
        put16(&mut self.raw, 0x12, f);
    }

    /// The checksum this descriptor should carry, if the filesystem has one.
    pub fn compute_csum(&self, sb: &Superblock, group: u32) -> Option<u16> {
        let n = self.raw.len().min(sb.desc_size as usize);
        if sb.has_csum() {
            let mut c = crc32c(sb.csum_seed, &group.to_le_bytes());
            c = crc32c(c, &self.raw[..0x1E]);
            c = crc32c(c, &[0, 0]);
            if n > 0x20 {
                c = crc32c(c, &self.raw[0x20..n]);
            }
            Some(c as u16)
        } else if sb.ro_compat & RO_COMPAT_GDT_CSUM != 0 {
            let mut c = crc16(!0, &sb.raw[0x68..0x78]);
            c = crc16(c, &group.to_le_bytes());
            c = crc16(c, &self.raw[..0x1E]);
            if n > 0x20 {
                c = crc16(c, &self.raw[0x20..n]);
            }
            Some(c)
        } else {
            None
        }
    }

    /// Whether the stored checksum is right (or there is none).
    pub fn csum_ok(&self, sb: &Superblock, group: u32) -> bool {
        match self.compute_csum(sb, group) {
            Some(c) => c == get16(&self.raw, 0x1E),
            None => true,
        }
    }

    /// Stores a fresh checksum.
    pub fn update_csum(&mut self, sb: &Superblock, group: u32) {
        if let Some(c) = self.compute_csum(sb, group) {
            put16(&mut self.raw, 0x1E, c);
        }
    }
}
