//! The superblock: 1024 bytes at byte 1024 of the device. Parsed into the values the
//! rest of the code needs (validated so that later arithmetic cannot overflow or divide
//! by zero), and kept raw so that writing it back preserves every field we do not know.

use super::csum::{get16, get32, get64, put16, put32};
use crate::crc32c::crc32c;
use crate::error::FsError;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Byte offset of the superblock on the device.
pub const SB_OFFSET: u64 = 1024;
/// Its size.
pub const SB_SIZE: usize = 1024;
const MAGIC: u16 = 0xEF53;

/// `s_state`: cleanly unmounted.
pub const STATE_VALID: u16 = 1;
/// `s_state`: errors were detected (e2fsck checks it in full).
pub const STATE_ERROR: u16 = 2;

/// compat: has a journal.
pub const COMPAT_HAS_JOURNAL: u32 = 0x4;
/// compat: hashed (htree) directory indexes (`dir_index`).
pub const COMPAT_DIR_INDEX: u32 = 0x20;
/// compat: sparse_super2 (backup groups listed in `s_backup_bgs`).
pub const COMPAT_SPARSE_SUPER2: u32 = 0x200;
/// compat: jbd2 fast commits (`fast_commit`).
pub const COMPAT_FAST_COMMIT: u32 = 0x400;

/// incompat: directory entries record the file type.
pub const INCOMPAT_FILETYPE: u32 = 0x2;
/// incompat: the journal needs replaying.
pub const INCOMPAT_RECOVER: u32 = 0x4;
/// incompat: extent trees.
pub const INCOMPAT_EXTENTS: u32 = 0x40;
/// incompat: 64-bit block numbers, large group descriptors.
pub const INCOMPAT_64BIT: u32 = 0x80;
/// incompat: flexible block groups.
pub const INCOMPAT_FLEX_BG: u32 = 0x200;
/// incompat: checksum seed stored in the superblock.
pub const INCOMPAT_CSUM_SEED: u32 = 0x2000;
/// incompat: 3-level htree, directories over 2 GiB.
pub const INCOMPAT_LARGEDIR: u32 = 0x4000;

/// Incompatible features this implementation handles (reading and writing). Not
/// among them: `ea_inode` (0x400, extended attribute values in inodes of their own,
/// which an unlink would have to release by reference count), so such a filesystem
/// is refused like any other unknown incompatible feature.
pub const INCOMPAT_KNOWN: u32 = INCOMPAT_FILETYPE
    | INCOMPAT_RECOVER
    | INCOMPAT_EXTENTS
    | INCOMPAT_64BIT
    | INCOMPAT_FLEX_BG
    | INCOMPAT_CSUM_SEED
    | INCOMPAT_LARGEDIR;

/// ro_compat: sparse superblock backups.
pub const RO_COMPAT_SPARSE_SUPER: u32 = 0x1;
/// ro_compat: files over 2 GiB.
pub const RO_COMPAT_LARGE_FILE: u32 = 0x2;
/// ro_compat: `i_blocks` may count filesystem blocks.
pub const RO_COMPAT_HUGE_FILE: u32 = 0x8;
/// ro_compat: group descriptor crc16 (uninit_bg).
pub const RO_COMPAT_GDT_CSUM: u32 = 0x10;
/// ro_compat: directories with more than 65000 subdirectories.
pub const RO_COMPAT_DIR_NLINK: u32 = 0x20;
/// ro_compat: large inodes carry extra fields.
pub const RO_COMPAT_EXTRA_ISIZE: u32 = 0x40;
/// ro_compat: crc32c metadata checksums.
pub const RO_COMPAT_METADATA_CSUM: u32 = 0x400;

/// ro_compat features we can write with.
pub const RO_COMPAT_KNOWN: u32 = RO_COMPAT_SPARSE_SUPER
    | RO_COMPAT_LARGE_FILE
    | RO_COMPAT_HUGE_FILE
    | RO_COMPAT_GDT_CSUM
    | RO_COMPAT_DIR_NLINK
    | RO_COMPAT_EXTRA_ISIZE
    | RO_COMPAT_METADATA_CSUM;

/// The parsed superblock.
#[derive(Clone, Debug)]
pub struct Superblock {
    /// The raw 1024 bytes.
    pub raw: Vec<u8>,
    /// Block size in bytes (1 KiB .. 64 KiB).
    pub block_size: u32,
    /// Blocks in the filesystem.
    pub blocks_count: u64,
    /// Blocks reserved for root.
    pub r_blocks_count: u64,
    /// First data block (1 for 1 KiB blocks, else 0).
    pub first_data_block: u32,
    /// Blocks per group.
    pub blocks_per_group: u32,
    /// Inodes per group.
    pub inodes_per_group: u32,
    /// Inodes in all.
    pub inodes_count: u32,
    /// Bytes per on-disk inode.
    pub inode_size: u16,
    /// First non-reserved inode.
    pub first_ino: u32,
    /// Bytes per group descriptor.
    pub desc_size: u16,
    /// Number of block groups.
    pub group_count: u32,
    /// Feature words.
    pub compat: u32,
    /// Feature words.
    pub incompat: u32,
    /// Feature words.
    pub ro_compat: u32,
    /// Reserved GDT blocks after each GDT copy (resize_inode).
    pub reserved_gdt_blocks: u32,
    /// `s_backup_bgs` for sparse_super2.
    pub backup_bgs: [u32; 2],
    /// Extra inode bytes new inodes should carry.
    pub want_extra_isize: u16,
    /// The checksum seed (metadata_csum).
    pub csum_seed: u32,
}

fn bad(what: &str) -> FsError {
    FsError::Unsupported(format!("ext superblock: {what}"))
}

impl Superblock {
    /// Parses and validates the 1024 raw bytes.
    pub fn parse(raw: Vec<u8>, dev_bytes: u64) -> Result<Superblock, FsError> {
        if raw.len() != SB_SIZE {
            return Err(bad("short read"));
        }
        if get16(&raw, 0x38) != MAGIC {
            return Err(FsError::Unsupported(String::from(
                "not an ext2/3/4 filesystem",
            )));
        }
        let incompat = get32(&raw, 0x60);
        let ro_compat = get32(&raw, 0x64);
        let compat = get32(&raw, 0x5C);
        if ro_compat & RO_COMPAT_METADATA_CSUM != 0 {
            if raw[0x175] != 1 {
                return Err(FsError::Corrupt(String::from(
                    "superblock: unknown checksum type",
                )));
            }
            let want = crc32c(!0, &raw[..0x3FC]);
            let stored = get32(&raw, 0x3FC);
            if want != stored {
                // both figures: dom0's `dumpe2fs -h` shows the stored one, which
                // tells a bad read from a bad computation
                return Err(FsError::Corrupt(format!(
                    "superblock checksum mismatch (stored {stored:#010x}, computed {want:#010x})"
                )));
            }
        }
        let log = get32(&raw, 0x18);
        if log > 6 {
            return Err(bad("block size over 64 KiB"));
        }
        let block_size = 1024u32 << log;
        if get32(&raw, 0x1C) != log {
            return Err(bad("bigalloc (cluster size != block size)"));
        }
        let is64 = incompat & INCOMPAT_64BIT != 0;
        let mut blocks_count = get32(&raw, 0x4) as u64;
        let mut r_blocks_count = get32(&raw, 0x8) as u64;
        if is64 {
            blocks_count |= (get32(&raw, 0x150) as u64) << 32;
            r_blocks_count |= (get32(&raw, 0x154) as u64) << 32;
        }
        let first_data_block = get32(&raw, 0x14);
        let blocks_per_group = get32(&raw, 0x20);
        let inodes_per_group = get32(&raw, 0x28);
        let inodes_count = get32(&raw, 0x0);
        let rev = get32(&raw, 0x4C);
        let (inode_size, first_ino) = if rev == 0 {
            (128u16, 11u32)
        } else {
            (get16(&raw, 0x58), get32(&raw, 0x54))
        };
        if blocks_per_group == 0
            || blocks_per_group > block_size * 8
            || !blocks_per_group.is_multiple_of(8)
        {
            return Err(bad("blocks per group"));
        }
        if inodes_per_group == 0
            || inodes_per_group > block_size * 8
            || !inodes_per_group.is_multiple_of(8)
        {
            return Err(bad("inodes per group"));
        }
        if inode_size < 128 || !inode_size.is_power_of_two() || inode_size as u32 > block_size {
            return Err(bad("inode size"));
        }
        if first_data_block != u32::from(block_size == 1024) {
            return Err(bad("first data block"));
        }
        if blocks_count <= first_data_block as u64
            || blocks_count > dev_bytes / block_size as u64
            || blocks_count >= 1 << 48
        {
            return Err(bad("block count (larger than the device?)"));
        }
        let groups = (blocks_count - first_data_block as u64).div_ceil(blocks_per_group as u64);
        if groups == 0 || groups > u32::MAX as u64 / inodes_per_group as u64 {
            return Err(bad("group count"));
        }
        let group_count = groups as u32;
        if inodes_count as u64 != groups * inodes_per_group as u64 {
            return Err(bad("inode count"));
        }
        if first_ino < 11 || first_ino >= inodes_count {
            return Err(bad("first inode"));
        }
        let desc_size = if is64 { get16(&raw, 0xFE) } else { 32 };
        if desc_size < 32
            || !desc_size.is_power_of_two()
            || desc_size > 1024
            || (is64 && desc_size < 64)
        {
            return Err(bad("group descriptor size"));
        }
        let reserved_gdt_blocks = get16(&raw, 0xCE) as u32;
        if reserved_gdt_blocks > block_size / 4 {
            return Err(bad("reserved GDT blocks"));
        }
        let csum_seed = if incompat & INCOMPAT_CSUM_SEED != 0 {
            get32(&raw, 0x270)
        } else {
            crc32c(!0, &raw[0x68..0x78])
        };
        let want_extra_isize = get16(&raw, 0x15E).max(get16(&raw, 0x15C));
        let want_extra_isize = if ro_compat & RO_COMPAT_EXTRA_ISIZE != 0 && want_extra_isize != 0 {
            want_extra_isize
        } else {
            32
        };
        let want_extra_isize = if inode_size as usize >= 128 + want_extra_isize as usize {
            want_extra_isize & !3
        } else {
            0
        };
        Ok(Superblock {
            block_size,
            blocks_count,
            r_blocks_count,
            first_data_block,
            blocks_per_group,
            inodes_per_group,
            inodes_count,
            inode_size,
            first_ino,
            desc_size,
            group_count,
            compat,
            incompat,
            ro_compat,
            reserved_gdt_blocks,
            backup_bgs: [get32(&raw, 0x24C), get32(&raw, 0x250)],
            want_extra_isize,
            csum_seed,
            raw,
        })
    }

    /// Whether metadata_csum is on.
    pub fn has_csum(&self) -> bool {
        self.ro_compat & RO_COMPAT_METADATA_CSUM != 0
    }

    /// Whether group `g` holds a superblock backup (and a GDT copy).
    pub fn group_has_super(&self, g: u32) -> bool {
        if g == 0 {
            return true;
        }
        if self.compat & COMPAT_SPARSE_SUPER2 != 0 {
            return g == self.backup_bgs[0] || g == self.backup_bgs[1];
        }
        if g <= 1 || self.ro_compat & RO_COMPAT_SPARSE_SUPER == 0 {
            return true;
        }
        if g & 1 == 0 {
            return false;
        }
        for base in [3u32, 5, 7] {
            let mut p = base;
            while p < g {
                match p.checked_mul(base) {
                    Some(n) => p = n,
                    None => break,
                }
            }
            if p == g {
                return true;
            }
        }
        false
    }

    /// Blocks holding the group descriptor table.
    pub fn gdt_blocks(&self) -> u64 {
        (self.group_count as u64 * self.desc_size as u64).div_ceil(self.block_size as u64)
    }

    /// First block of group `g`.
    pub fn group_first_block(&self, g: u32) -> u64 {
        self.first_data_block as u64 + g as u64 * self.blocks_per_group as u64
    }

    /// Blocks in group `g` (the last group may be short).
    pub fn blocks_in_group(&self, g: u32) -> u32 {
        let first = self.group_first_block(g);
        (self.blocks_count - first).min(self.blocks_per_group as u64) as u32
    }

    /// Blocks at the start of group `g` taken by a superblock backup, the GDT and the
    /// reserved GDT blocks.
    pub fn super_overhead(&self, g: u32) -> u64 {
        if self.group_has_super(g) {
            1 + self.gdt_blocks() + self.reserved_gdt_blocks as u64
        } else {
            0
        }
    }

    /// Free block count recorded in the superblock.
    pub fn set_free_blocks(&mut self, n: u64) {
        put32(&mut self.raw, 0xC, n as u32);
        if self.incompat & INCOMPAT_64BIT != 0 {
            put32(&mut self.raw, 0x158, (n >> 32) as u32);
        }
    }

    /// Free inode count.
    pub fn set_free_inodes(&mut self, n: u32) {
        put32(&mut self.raw, 0x10, n);
    }

    /// `s_state`.
    pub fn state(&self) -> u16 {
        get16(&self.raw, 0x3A)
    }

    /// Sets `s_state`.
    pub fn set_state(&mut self, s: u16) {
        put16(&mut self.raw, 0x3A, s);
    }

    /// Mount time, mount count.
    pub fn note_mount(&mut self, now: i64) {
        put32(&mut self.raw, 0x2C, now as u32);
        let c = get16(&self.raw, 0x34);
        put16(&mut self.raw, 0x34, c.wrapping_add(1));
        // s_mtime_hi: the high byte of the mount time.
        self.raw[0x275] = (now >> 32) as u8;
    }

    /// Write time.
    pub fn note_write(&mut self, now: i64) {
        put32(&mut self.raw, 0x30, now as u32);
        self.raw[0x274] = (now >> 32) as u8;
    }

    /// Kilobytes written over the filesystem's lifetime.
    pub fn add_kbytes_written(&mut self, kb: u64) {
        let v = get64(&self.raw, 0x178).wrapping_add(kb);
        put32(&mut self.raw, 0x178, v as u32);
        put32(&mut self.raw, 0x17C, (v >> 32) as u32);
    }

    /// The raw bytes with a fresh checksum.
    pub fn sealed_bytes(&mut self) -> &[u8] {
        if self.has_csum() {
            let c = crc32c(!0, &self.raw[..0x3FC]);
            put32(&mut self.raw, 0x3FC, c);
        }
        &self.raw
    }

    /// Journal inode number (0 if none).
    pub fn journal_inum(&self) -> u32 {
        if self.compat & COMPAT_HAS_JOURNAL != 0 {
            get32(&self.raw, 0xE0)
        } else {
            0
        }
    }
}
