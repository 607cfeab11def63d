//! Block and inode allocation over the group bitmaps. Groups whose bitmaps are still
//! uninitialised (`BLOCK_UNINIT` / `INODE_UNINIT`) are initialised when first used;
//! inodes are taken lowest-first so the initialised part of the inode table
//! (`bg_itable_unused`) only grows by the inode handed out.

use super::group::{BG_BLOCK_UNINIT, BG_INODE_UNINIT};
use super::Ext;
use crate::blockdev::BlockDev;
use crate::crc32c::crc32c;
use crate::error::FsError;
use alloc::vec;
use alloc::vec::Vec;

fn bit(b: &[u8], i: usize) -> bool {
    b.get(i / 8).is_some_and(|x| x & (1 << (i % 8)) != 0)
}

fn set_bit(b: &mut [u8], i: usize, v: bool) {
    if let Some(x) = b.get_mut(i / 8) {
        if v {
            *x |= 1 << (i % 8);
        } else {
            *x &= !(1 << (i % 8));
        }
    }
}

impl<D: BlockDev> Ext<D> {
    /// Blocks of one group's inode table.
    pub(super) fn itable_blocks(&self) -> u64 {
        (self.sb.inodes_per_group as u64 * self.sb.inode_size as u64)
            .div_ceil(self.sb.block_size as u64)
    }

    /// The block bitmap an uninitialised group implicitly has.
    fn computed_block_bitmap(&self, g: u32) -> Vec<u8> {
        let bs = self.sb.block_size as usize;
        let mut b = vec![0u8; bs];
        let first = self.sb.group_first_block(g);
        let n = self.sb.blocks_in_group(g) as u64;
        let mut mark = |start: u64, len: u64| {
            for blk in start..start.saturating_add(len) {
                if blk >= first && blk < first + n {
                    set_bit(&mut b, (blk - first) as usize, true);
                }
            }
        };
        mark(first, self.sb.super_overhead(g));
        if let Some(gd) = self.gds.get(g) {
            mark(gd.block_bitmap(), 1);
            mark(gd.inode_bitmap(), 1);
            mark(gd.inode_table(), self.itable_blocks());
        }
        for i in n as usize..bs * 8 {
            set_bit(&mut b, i, true);
        }
        b
    }

    /// The block bitmap of group `g`, initialised on disk if it was not.
    fn block_bitmap_mut(&mut self, g: u32) -> Result<&mut [u8], FsError> {
        let gd = self.gds.get(g).ok_or(FsError::Invalid("group"))?;
        let blk = gd.block_bitmap();
        let uninit = gd.flags() & BG_BLOCK_UNINIT != 0;
        if uninit {
            let b = self.computed_block_bitmap(g);
            let mut gd = self.gds.get_mut(g).ok_or(FsError::Invalid("group"))?;
            gd.set_flags(gd.flags() & !BG_BLOCK_UNINIT);
            self.dirty_groups.insert(g);
            let dst = self.cache.get_new(&mut self.dev, blk)?;
            dst.copy_from_slice(&b);
        }
        self.own_bitmap(g, blk, uninit, false)
    }

    /// The inode bitmap of group `g`, initialised on disk if it was not.
    fn inode_bitmap_mut(&mut self, g: u32) -> Result<&mut [u8], FsError> {
        let gd = self.gds.get(g).ok_or(FsError::Invalid("group"))?;
        let blk = gd.inode_bitmap();
        let ipg = self.sb.inodes_per_group as usize;
        let uninit = gd.flags() & BG_INODE_UNINIT != 0;
        if uninit {
            let mut gd = self.gds.get_mut(g).ok_or(FsError::Invalid("group"))?;
            gd.set_flags(gd.flags() & !BG_INODE_UNINIT);
            let dst = self.cache.get_new(&mut self.dev, blk)?;
            for i in ipg..dst.len() * 8 {
                set_bit(dst, i, true);
            }
        }
        self.own_bitmap(g, blk, uninit, true)
    }

    /// Bitmap block `blk` of group `g` (of inodes or blocks), made ours and marked
    /// for the next sync: one just initialised in the cache (`fresh`) is taken as
    /// verified, another has its checksum checked the first time it is read.
    fn own_bitmap(
        &mut self,
        g: u32,
        blk: u64,
        fresh: bool,
        inodes: bool,
    ) -> Result<&mut [u8], FsError> {
        if fresh {
            self.cache.set_verified(blk);
        } else {
            self.check_bitmap(g, blk, inodes)?;
        }
        self.own_bitmaps.insert(blk);
        self.dirty_groups.insert(g);
        self.cache.get_mut(&mut self.dev, blk)
    }

    /// Verifies a bitmap's checksum the first time it is read.
    fn check_bitmap(&mut self, g: u32, blk: u64, inodes: bool) -> Result<(), FsError> {
        // A group changed since the last sync has its descriptor's checksum brought up
        // to date only at the next sync: its bitmap (perhaps written back and evicted
        // meanwhile) is ours, not to be checked against the stale value.
        if !self.sb.has_csum() || self.cache.verified(blk) || self.own_bitmaps.contains(&blk) {
            return Ok(());
        }
        let gd = self.gds.get(g).ok_or(FsError::Invalid("group"))?;
        let want = if inodes { gd.ib_csum() } else { gd.bb_csum() };
        let mask = if self.sb.desc_size >= 64 {
            u32::MAX
        } else {
            0xFFFF
        };
        let c = self.bitmap_csum(blk, inodes)?;
        if c & mask != want & mask {
            let what = if inodes { "inode" } else { "block" };
            return Err(FsError::Corrupt(alloc::format!(
                "group {g}: {what} bitmap checksum mismatch"
            )));
        }
        self.cache.set_verified(blk);
        Ok(())
    }

    /// The checksum of bitmap block `blk` (of inodes or of blocks) as a group
    /// descriptor holds it: crc32c over the bits a group uses.
    fn bitmap_csum(&mut self, blk: u64, inodes: bool) -> Result<u32, FsError> {
        let bits = if inodes {
            self.sb.inodes_per_group
        } else {
            self.sb.blocks_per_group
        };
        let n = bits as usize / 8;
        let seed = self.sb.csum_seed;
        let b = self.cache.get(&mut self.dev, blk)?;
        Ok(crc32c(seed, b.get(..n).unwrap_or(b)))
    }

    /// The reserved metadata pool (issue 30), as Linux's `s_resv_clusters`: 2 % of
    /// the blocks, at most 4,096, and at least `META_MARGIN` (64) where that is
    /// under an eighth of the filesystem. Buffered file data never takes it
    /// (`write_file`), a new directory or symlink block half of it
    /// (`alloc_new_block`); tree blocks (extent and index blocks, indirect blocks),
    /// which a sync must find, take the rest. `statfs` counts it out of the
    /// available blocks, as Linux does.
    pub(super) fn resv_blocks(&self) -> u64 {
        let blocks = self.sb.blocks_count;
        (blocks / 50)
            .min(4096)
            .max(super::META_MARGIN.min(blocks / 8))
    }

    /// Allocates up to `want` contiguous blocks at or after `goal` (wrapping); returns
    /// the first block and how many.
    pub(super) fn alloc_blocks(&mut self, goal: u64, want: u32) -> Result<(u64, u32), FsError> {
        if self.free_blocks == 0 || want == 0 {
            return Err(FsError::NoSpace);
        }
        let bpg = self.sb.blocks_per_group as u64;
        let fdb = self.sb.first_data_block as u64;
        let goal = if goal < fdb || goal >= self.sb.blocks_count {
            fdb
        } else {
            goal
        };
        let g0 = ((goal - fdb) / bpg) as u32;
        let groups = self.sb.group_count;
        for k in 0..=groups {
            let g = (g0 + k) % groups;
            let start = if k == 0 { (goal - fdb) % bpg } else { 0 } as usize;
            let free = self.gds.get(g).map_or(0, |gd| gd.free_blocks());
            if free == 0 {
                continue;
            }
            let n = self.sb.blocks_in_group(g) as usize;
            if start >= n {
                continue;
            }
            let bm = self.block_bitmap_mut(g)?;
            // First free bit at or after start.
            let mut i = start;
            while i < n {
                if i.is_multiple_of(8) && bm.get(i / 8) == Some(&0xFF) {
                    i += 8;
                    continue;
                }
                if !bit(bm, i) {
                    break;
                }
                i += 1;
            }
            if i >= n {
                continue;
            }
            let mut len = 0usize;
            while i + len < n && len < want as usize && !bit(bm, i + len) {
                set_bit(bm, i + len, true);
                len += 1;
            }
            let mut gd = self.gds.get_mut(g).ok_or(FsError::Invalid("group"))?;
            gd.set_free_blocks(gd.free_blocks().saturating_sub(len as u32));
            self.free_blocks = self.free_blocks.saturating_sub(len as u64);
            let first = self.sb.group_first_block(g) + i as u64;
            self.cache.forget(first, len as u64);
            return Ok((first, len as u32));
        }
        Err(FsError::NoSpace)
    }

    /// Frees blocks `start..start+len`.
    pub(super) fn free_blocks_range(&mut self, start: u64, len: u64) -> Result<(), FsError> {
        // crash safety (ordered.rs): frees wait for the next sync.
        if self.defer_free(start, len) {
            return Ok(());
        }
        let bpg = self.sb.blocks_per_group as u64;
        let fdb = self.sb.first_data_block as u64;
        if start < fdb || start.saturating_add(len) > self.sb.blocks_count {
            return Err(FsError::Corrupt(alloc::string::String::from(
                "freeing blocks outside the filesystem",
            )));
        }
        self.cache.forget(start, len);
        let mut b = start;
        let end = start + len;
        while b < end {
            let g = ((b - fdb) / bpg) as u32;
            let gend = (self.sb.group_first_block(g) + bpg).min(end);
            let base = self.sb.group_first_block(g);
            let bm = self.block_bitmap_mut(g)?;
            let mut cleared = 0u32;
            for x in b..gend {
                let i = (x - base) as usize;
                if bit(bm, i) {
                    set_bit(bm, i, false);
                    cleared += 1;
                }
            }
            let mut gd = self.gds.get_mut(g).ok_or(FsError::Invalid("group"))?;
            gd.set_free_blocks(gd.free_blocks() + cleared);
            self.free_blocks += cleared as u64;
            b = gend;
        }
        Ok(())
    }

    /// Allocates an inode, preferring group `pref`.
    pub(super) fn alloc_inode(&mut self, pref: u32, dir: bool) -> Result<u32, FsError> {
        let groups = self.sb.group_count;
        let ipg = self.sb.inodes_per_group;
        for k in 0..groups {
            let g = (pref % groups + k) % groups;
            let Some(gd) = self.gds.get(g) else { continue };
            if gd.free_inodes() == 0 {
                continue;
            }
            // Linux initialises the block bitmap of a group it puts inodes in.
            if gd.flags() & BG_BLOCK_UNINIT != 0 {
                self.block_bitmap_mut(g)?;
            }
            let first_ino = self.sb.first_ino;
            let bm = self.inode_bitmap_mut(g)?;
            let mut found = None;
            for i in 0..ipg as usize {
                let ino = g as u64 * ipg as u64 + i as u64 + 1;
                if ino < first_ino as u64 {
                    continue;
                }
                if !bit(bm, i) {
                    set_bit(bm, i, true);
                    found = Some(i as u32);
                    break;
                }
            }
            let Some(i) = found else { continue };
            let mut gd = self.gds.get_mut(g).ok_or(FsError::Invalid("group"))?;
            gd.set_free_inodes(gd.free_inodes().saturating_sub(1));
            if dir {
                gd.set_used_dirs(gd.used_dirs() + 1);
            }
            if self.sb.has_csum() || self.sb.ro_compat & super::superblock::RO_COMPAT_GDT_CSUM != 0
            {
                let unused = gd.itable_unused();
                if i + unused >= ipg {
                    gd.set_itable_unused(ipg - i - 1);
                }
            }
            self.free_inodes = self.free_inodes.saturating_sub(1);
            return Ok(g * ipg + i + 1);
        }
        Err(FsError::NoSpace)
    }

    /// Whether inode `ino` is allocated in its group's bitmap (read, not changed).
    pub(super) fn inode_in_use(&mut self, ino: u32) -> Result<bool, FsError> {
        let ipg = self.sb.inodes_per_group;
        let Some(i) = ino.checked_sub(1) else {
            return Ok(false);
        };
        let (g, i) = (i / ipg, (i % ipg) as usize);
        let gd = self.gds.get(g).ok_or(FsError::Invalid("group"))?;
        if gd.flags() & BG_INODE_UNINIT != 0 {
            return Ok(false);
        }
        let blk = gd.inode_bitmap();
        self.check_bitmap(g, blk, true)?;
        Ok(bit(self.cache.get(&mut self.dev, blk)?, i))
    }

    /// Frees inode `ino`.
    pub(super) fn free_inode(&mut self, ino: u32, dir: bool) -> Result<(), FsError> {
        let ipg = self.sb.inodes_per_group;
        let g = (ino - 1) / ipg;
        let i = ((ino - 1) % ipg) as usize;
        let bm = self.inode_bitmap_mut(g)?;
        if !bit(bm, i) {
            return Ok(());
        }
        set_bit(bm, i, false);
        let mut gd = self.gds.get_mut(g).ok_or(FsError::Invalid("group"))?;
        gd.set_free_inodes(gd.free_inodes() + 1);
        if dir {
            gd.set_used_dirs(gd.used_dirs().saturating_sub(1));
        }
        self.free_inodes += 1;
        Ok(())
    }

    /// Stores bitmap checksums and descriptor checksums of the groups touched.
    pub(super) fn finish_groups(&mut self) -> Result<(), FsError> {
        let groups: Vec<u32> = self.dirty_groups.iter().copied().collect();
        for g in groups {
            let Some(gd) = self.gds.get(g) else {
                continue;
            };
            if self.sb.has_csum() {
                let (bb, ib) = (gd.block_bitmap(), gd.inode_bitmap());
                let bflags = gd.flags();
                if bflags & BG_BLOCK_UNINIT == 0 {
                    let c = self.bitmap_csum(bb, false)?;
                    if let Some(mut gd) = self.gds.get_mut(g) {
                        gd.set_bb_csum(c);
                    }
                }
                if bflags & BG_INODE_UNINIT == 0 {
                    let c = self.bitmap_csum(ib, true)?;
                    if let Some(mut gd) = self.gds.get_mut(g) {
                        gd.set_ib_csum(c);
                    }
                }
            }
            let sb = &self.sb;
            let Some(mut gd) = self.gds.get_mut(g) else {
                continue;
            };
            gd.update_csum(sb, g);
            // Into the primary GDT.
            let ds = sb.desc_size as usize;
            let bs = sb.block_size as usize;
            let off = g as usize * ds;
            let blk = sb.first_data_block as u64 + 1 + (off / bs) as u64;
            let b = self.cache.get_mut(&mut self.dev, blk)?;
            if let (Some(d), Some(gd)) = (b.get_mut(off % bs..off % bs + ds), self.gds.get(g)) {
                d.copy_from_slice(gd.raw());
            }
        }
        self.dirty_groups.clear();
        self.own_bitmaps.clear();
        Ok(())
    }
}
