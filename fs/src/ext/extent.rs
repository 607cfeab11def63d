//! A file's block map in memory ([`FileMap`]: sorted extents), and the ext4 extent tree
//! it is loaded from and written back to. The tree is rebuilt from the map when it
//! changed (at sync), packed as tightly as it can be (depth 0 for up to 4 extents, then
//! full leaves under as few index levels as needed), reusing the old tree's blocks.

use super::csum::{get16, get32, put16, put32};
use crate::crc32c::crc32c;
use crate::error::FsError;
use crate::mem::{reserve_one, vec_bytes};
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

const MAGIC: u16 = 0xF30A;
/// Longest initialised extent.
pub const MAX_INIT_LEN: u32 = 32768;
/// Longest uninitialised extent.
pub const MAX_UNINIT_LEN: u32 = 32767;
/// Deepest tree accepted.
pub const MAX_DEPTH: u16 = 5;

/// One mapped run: logical blocks `lblk..lblk+len` at physical `pblk..`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// First logical block.
    pub lblk: u64,
    /// Blocks.
    pub len: u32,
    /// First physical block.
    pub pblk: u64,
    /// Allocated but reads as zeros.
    pub uninit: bool,
}

impl Extent {
    fn end(&self) -> u64 {
        self.lblk + self.len as u64
    }
    /// The part of this extent before logical block `s`, if it starts before it
    /// (`s` within the extent).
    pub(super) fn head_before(&self, s: u64) -> Option<Extent> {
        (s > self.lblk).then(|| Extent {
            len: (s - self.lblk) as u32,
            ..*self
        })
    }
    /// The part of this extent from logical block `t` on, if it goes past it (`t`
    /// within the extent).
    pub(super) fn tail_from(&self, t: u64) -> Option<Extent> {
        (t < self.lblk + self.len as u64).then(|| Extent {
            lblk: t,
            len: (self.lblk + self.len as u64 - t) as u32,
            pblk: self.pblk + (t - self.lblk),
            uninit: self.uninit,
        })
    }
    fn max_len(&self) -> u32 {
        if self.uninit {
            MAX_UNINIT_LEN
        } else {
            MAX_INIT_LEN
        }
    }
}

/// Block-device I/O and allocation the tree code needs (implemented by the filesystem).
pub trait MetaIo {
    /// Reads a metadata block.
    fn read_meta(&mut self, blk: u64) -> Result<Vec<u8>, FsError>;
    /// Gets a block for a tree node (reusing a freed tree block first).
    fn alloc_meta(&mut self) -> Result<u64, FsError>;
    /// Writes a tree node.
    fn write_meta(&mut self, blk: u64, data: &[u8]) -> Result<(), FsError>;
}

/// What loading a tree needs to know.
pub struct TreeCtx {
    /// Block size.
    pub bs: usize,
    /// Blocks in the filesystem (every pointer must be below).
    pub blocks_count: u64,
    /// First data block (every pointer must be at or above).
    pub first_data_block: u64,
    /// The inode's checksum seed, if metadata_csum is on.
    pub csum_seed: Option<u32>,
    /// Most blocks (data and tree) the inode may have: bounds the walk.
    pub max_blocks: u64,
    /// Most heap bytes the loaded map may take ([`FileMap::heap_bytes`]): a larger
    /// one is [`FsError::NoMemory`] (the count of blocks bounds nothing useful: a
    /// fragmented or hostile 1 GiB file can have 262,144 extents, 6 MiB of map).
    pub max_map_bytes: usize,
}

impl TreeCtx {
    /// Whether `pblk..pblk+len` is inside the filesystem.
    pub fn valid_range(&self, pblk: u64, len: u64) -> bool {
        pblk >= self.first_data_block
            && pblk
                .checked_add(len)
                .is_some_and(|e| e <= self.blocks_count)
    }
}

/// A file's block map.
#[derive(Clone, Debug, Default)]
pub struct FileMap {
    /// Sorted, non-overlapping extents.
    pub ext: Vec<Extent>,
    /// The blocks the on-disk tree (extent nodes or indirect blocks) occupies.
    pub meta: Vec<u64>,
}

impl FileMap {
    fn index_of(&self, lblk: u64) -> Result<usize, usize> {
        self.ext.binary_search_by(|e| {
            if e.end() <= lblk {
                core::cmp::Ordering::Less
            } else if e.lblk > lblk {
                core::cmp::Ordering::Greater
            } else {
                core::cmp::Ordering::Equal
            }
        })
    }

    /// Where `lblk` is: `Some((pblk, uninit, blocks left in this extent))`, or `None`
    /// for a hole.
    pub fn find(&self, lblk: u64) -> Option<(u64, bool, u64)> {
        let i = self.index_of(lblk).ok()?;
        let e = self.ext.get(i)?;
        Some((e.pblk + (lblk - e.lblk), e.uninit, e.end() - lblk))
    }

    /// The first mapped block at or after `lblk`, if any.
    pub fn next_mapped(&self, lblk: u64) -> Option<u64> {
        match self.index_of(lblk) {
            Ok(_) => Some(lblk),
            Err(i) => self.ext.get(i).map(|e| e.lblk),
        }
    }

    /// The physical block just after the extent ending at or before `lblk` (an
    /// allocation goal for `lblk`).
    pub fn goal_for(&self, lblk: u64) -> Option<u64> {
        let i = match self.index_of(lblk) {
            Ok(i) => i,
            Err(i) => i.checked_sub(1)?,
        };
        let e = self.ext.get(i)?;
        Some(e.pblk + e.len as u64 + lblk.saturating_sub(e.end()))
    }

    /// Maps the hole `lblk..lblk+len` to `pblk..`, merging with neighbours.
    pub fn insert(&mut self, lblk: u64, pblk: u64, len: u32) {
        let new = Extent {
            lblk,
            len,
            pblk,
            uninit: false,
        };
        let i = match self.index_of(lblk) {
            Ok(i) | Err(i) => i,
        };
        // Merge with the previous extent?
        if let Some(p) = i.checked_sub(1).and_then(|j| self.ext.get_mut(j)) {
            if !p.uninit
                && p.end() == lblk
                && p.pblk + p.len as u64 == pblk
                && p.len as u64 + len as u64 <= MAX_INIT_LEN as u64
            {
                p.len += len;
                self.merge_next(i - 1);
                return;
            }
        }
        self.ext.insert(i, new);
        self.merge_next(i);
    }

    fn merge_next(&mut self, i: usize) {
        let (Some(a), Some(b)) = (self.ext.get(i).copied(), self.ext.get(i + 1).copied()) else {
            return;
        };
        if a.uninit == b.uninit
            && a.end() == b.lblk
            && a.pblk + a.len as u64 == b.pblk
            && a.len as u64 + b.len as u64 <= a.max_len() as u64
        {
            self.ext[i].len += b.len;
            self.ext.remove(i + 1);
        }
    }

    /// Unmaps every block at or after `lblk`; returns the freed physical runs.
    pub fn truncate(&mut self, lblk: u64) -> Vec<(u64, u64)> {
        let mut freed = Vec::new();
        while let Some(e) = self.ext.last_mut() {
            if e.end() <= lblk {
                break;
            }
            if e.lblk >= lblk {
                freed.push((e.pblk, e.len as u64));
                self.ext.pop();
            } else {
                let keep = (lblk - e.lblk) as u32;
                freed.push((e.pblk + keep as u64, (e.len - keep) as u64));
                e.len = keep;
                break;
            }
        }
        freed
    }

    /// Data blocks mapped.
    pub fn data_blocks(&self) -> u64 {
        self.ext.iter().map(|e| e.len as u64).sum()
    }

    /// What the map's two vectors take on the heap.
    pub fn heap_bytes(&self) -> usize {
        vec_bytes(&self.ext) + vec_bytes(&self.meta)
    }

    /// While loading: room for one more extent (`extent`) or tree block, grown
    /// fallibly and with both vectors within `max_bytes`, else [`FsError::NoMemory`].
    pub fn reserve(&mut self, extent: bool, max_bytes: usize) -> Result<(), FsError> {
        let (mine, other) = if extent {
            (core::mem::size_of::<Extent>(), vec_bytes(&self.meta))
        } else {
            (core::mem::size_of::<u64>(), vec_bytes(&self.ext))
        };
        let room = max_bytes.saturating_sub(other) / mine;
        if extent {
            reserve_one(&mut self.ext, room)?;
        } else {
            reserve_one(&mut self.meta, room)?;
        }
        if self.heap_bytes() > max_bytes {
            return Err(FsError::NoMemory);
        }
        Ok(())
    }
}

fn corrupt(what: &str) -> FsError {
    FsError::Corrupt(format!("extent tree: {what}"))
}

fn tail_off(max: usize) -> usize {
    12 + 12 * max
}

/// Loads an extent tree rooted in `i_block` (60 bytes).
pub fn load(i_block: &[u8], ctx: &TreeCtx, io: &mut dyn MetaIo) -> Result<FileMap, FsError> {
    let mut map = FileMap::default();
    let mut budget = ctx.max_blocks;
    walk(i_block, None, ctx, io, &mut map, &mut budget, 0)?;
    Ok(map)
}

fn walk(
    node: &[u8],
    want_depth: Option<u16>,
    ctx: &TreeCtx,
    io: &mut dyn MetaIo,
    map: &mut FileMap,
    budget: &mut u64,
    level: u16,
) -> Result<(), FsError> {
    if get16(node, 0) != MAGIC {
        return Err(corrupt("bad magic"));
    }
    let entries = get16(node, 2) as usize;
    let max = get16(node, 4) as usize;
    let depth = get16(node, 6);
    if 12 + 12 * max > node.len() || entries > max {
        return Err(corrupt("bad header"));
    }
    if depth > MAX_DEPTH || level > MAX_DEPTH || want_depth.is_some_and(|d| d != depth) {
        return Err(corrupt("bad depth"));
    }
    for i in 0..entries {
        let e = 12 + 12 * i;
        let lblk = get32(node, e) as u64;
        if depth == 0 {
            let raw_len = get16(node, e + 4);
            let pblk = get32(node, e + 8) as u64 | (get16(node, e + 6) as u64) << 32;
            let (len, uninit) = if raw_len > MAX_INIT_LEN as u16 {
                (raw_len as u32 - MAX_INIT_LEN, true)
            } else {
                (raw_len as u32, false)
            };
            if len == 0 || !ctx.valid_range(pblk, len as u64) {
                return Err(corrupt("extent outside the filesystem"));
            }
            if map.ext.last().is_some_and(|p| p.end() > lblk) {
                return Err(corrupt("extents out of order"));
            }
            *budget = budget
                .checked_sub(len as u64)
                .ok_or_else(|| corrupt("more blocks than i_blocks"))?;
            map.reserve(true, ctx.max_map_bytes)?;
            map.ext.push(Extent {
                lblk,
                len,
                pblk,
                uninit,
            });
        } else {
            let child = get32(node, e + 4) as u64 | (get16(node, e + 8) as u64) << 32;
            if !ctx.valid_range(child, 1) {
                return Err(corrupt("index outside the filesystem"));
            }
            *budget = budget
                .checked_sub(1)
                .ok_or_else(|| corrupt("more blocks than i_blocks"))?;
            let blk = io.read_meta(child)?;
            if let Some(seed) = ctx.csum_seed {
                let cmax = get16(&blk, 4) as usize;
                let off = tail_off(cmax);
                if off + 4 > blk.len() || crc32c(seed, &blk[..off]) != get32(&blk, off) {
                    return Err(corrupt("checksum mismatch"));
                }
            }
            map.reserve(false, ctx.max_map_bytes)?;
            map.meta.push(child);
            walk(&blk, Some(depth - 1), ctx, io, map, budget, level + 1)?;
        }
    }
    Ok(())
}

fn write_header(b: &mut [u8], entries: usize, max: usize, depth: u16) {
    put16(b, 0, MAGIC);
    put16(b, 2, entries as u16);
    put16(b, 4, max as u16);
    put16(b, 6, depth);
    put32(b, 8, 0);
}

fn write_extent(b: &mut [u8], off: usize, e: &Extent) {
    put32(b, off, e.lblk as u32);
    let len = if e.uninit {
        e.len + MAX_INIT_LEN
    } else {
        e.len
    };
    put16(b, off + 4, len as u16);
    put16(b, off + 6, (e.pblk >> 32) as u16);
    put32(b, off + 8, e.pblk as u32);
}

fn write_index(b: &mut [u8], off: usize, lblk: u64, child: u64) {
    put32(b, off, lblk as u32);
    put32(b, off + 4, child as u32);
    put16(b, off + 8, (child >> 32) as u16);
    put16(b, off + 10, 0);
}

/// How many node blocks [`store`] takes for `n` extents with blocks of `bs` bytes.
pub fn tree_blocks(n: usize, bs: usize) -> usize {
    if n <= 4 {
        return 0;
    }
    let per = (bs - 12) / 12;
    let mut level = n.div_ceil(per);
    let mut total = level;
    while level > 4 {
        level = level.div_ceil(per);
        total += level;
    }
    total
}

/// Writes `map.ext` as a tree: the root into `i_block`, nodes through `io`. Returns the
/// node blocks used (the caller frees old ones not reused).
pub fn store(
    ext: &[Extent],
    i_block: &mut [u8],
    ctx: &TreeCtx,
    io: &mut dyn MetaIo,
) -> Result<Vec<u64>, FsError> {
    i_block.fill(0);
    if ext.len() <= 4 {
        write_header(i_block, ext.len(), 4, 0);
        for (i, e) in ext.iter().enumerate() {
            write_extent(i_block, 12 + 12 * i, e);
        }
        return Ok(Vec::new());
    }
    let per = (ctx.bs - 12) / 12;
    let mut used = Vec::new();
    let finish = |b: &mut Vec<u8>, io: &mut dyn MetaIo| -> Result<u64, FsError> {
        if let Some(seed) = ctx.csum_seed {
            let off = tail_off(per);
            let c = crc32c(seed, &b[..off]);
            put32(b, off, c);
        }
        let blk = io.alloc_meta()?;
        io.write_meta(blk, b)?;
        Ok(blk)
    };
    // Leaves.
    let mut level: Vec<(u64, u64)> = Vec::new();
    for chunk in ext.chunks(per) {
        let mut b = vec![0u8; ctx.bs];
        write_header(&mut b, chunk.len(), per, 0);
        for (i, e) in chunk.iter().enumerate() {
            write_extent(&mut b, 12 + 12 * i, e);
        }
        let blk = finish(&mut b, io)?;
        used.push(blk);
        level.push((chunk[0].lblk, blk));
    }
    let mut depth = 1u16;
    while level.len() > 4 {
        let mut up = Vec::new();
        for chunk in level.chunks(per) {
            let mut b = vec![0u8; ctx.bs];
            write_header(&mut b, chunk.len(), per, depth);
            for (i, (l, c)) in chunk.iter().enumerate() {
                write_index(&mut b, 12 + 12 * i, *l, *c);
            }
            let blk = finish(&mut b, io)?;
            used.push(blk);
            up.push((chunk[0].0, blk));
        }
        level = up;
        depth += 1;
    }
    write_header(i_block, level.len(), 4, depth);
    for (i, (l, c)) in level.iter().enumerate() {
        write_index(i_block, 12 + 12 * i, *l, *c);
    }
    Ok(used)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_caps_length() {
        let mut m = FileMap::default();
        m.insert(0, 100, 10);
        m.insert(10, 110, 5);
        assert_eq!(m.ext.len(), 1);
        assert_eq!(m.ext[0].len, 15);
        m.insert(20, 200, 1);
        m.insert(15, 115, 5);
        assert_eq!(m.ext.len(), 2);
        assert_eq!(m.find(17), Some((117, false, 3)));
        assert_eq!(m.find(20), Some((200, false, 1)));
        assert_eq!(m.find(21), None);
        let mut big = FileMap::default();
        big.insert(0, 1000, MAX_INIT_LEN);
        big.insert(MAX_INIT_LEN as u64, 1000 + MAX_INIT_LEN as u64, 1);
        assert_eq!(big.ext.len(), 2);
    }

    #[test]
    fn truncate_returns_freed_runs() {
        let mut m = FileMap::default();
        m.insert(0, 100, 10);
        m.insert(20, 300, 10);
        let freed = m.truncate(5);
        assert_eq!(freed, alloc::vec![(300, 10), (105, 5)]);
        assert_eq!(m.data_blocks(), 5);
    }

    #[test]
    fn set_init_splits() {
        let mut m = FileMap::default();
        m.ext.push(Extent {
            lblk: 0,
            len: 10,
            pblk: 50,
            uninit: true,
        });
        m.set_state(4, None, 1, false);
        assert_eq!(m.ext.len(), 3);
        assert_eq!(m.find(4), Some((54, false, 1)));
        assert_eq!(m.find(5), Some((55, true, 5)));
        m.set_state(5, None, 1, false);
        assert_eq!(m.ext.len(), 3);
        assert_eq!(m.find(4), Some((54, false, 2)));
    }
}

#[cfg(test)]
pub(crate) mod test_io {
    use super::*;
    use alloc::collections::BTreeMap;

    /// An in-memory MetaIo: blocks handed out from `next` up.
    pub struct MemIo {
        pub blocks: BTreeMap<u64, Vec<u8>>,
        pub next: u64,
    }

    impl MetaIo for MemIo {
        fn read_meta(&mut self, blk: u64) -> Result<Vec<u8>, FsError> {
            self.blocks
                .get(&blk)
                .cloned()
                .ok_or(FsError::Invalid("unwritten block"))
        }
        fn alloc_meta(&mut self) -> Result<u64, FsError> {
            self.next += 1;
            Ok(self.next - 1)
        }
        fn write_meta(&mut self, blk: u64, data: &[u8]) -> Result<(), FsError> {
            self.blocks.insert(blk, data.to_vec());
            Ok(())
        }
    }

    /// `ext` stored as a tree through a fresh [`MemIo`] (its blocks from 10 up): the
    /// inode's `i_block` bytes, the device, and the blocks the tree took.
    pub fn stored(ext: &[Extent], ctx: &TreeCtx) -> ([u8; 60], MemIo, Vec<u64>) {
        let mut io = MemIo {
            blocks: BTreeMap::new(),
            next: 10,
        };
        let mut ib = [0u8; 60];
        let used = store(ext, &mut ib, ctx, &mut io).unwrap();
        (ib, io, used)
    }
}

#[cfg(test)]
mod tree_tests {
    use super::test_io::stored;
    use super::*;

    fn ctx(bs: usize) -> TreeCtx {
        TreeCtx {
            bs,
            blocks_count: 1 << 40,
            first_data_block: 1,
            csum_seed: Some(0x1234_5678),
            max_blocks: u64::MAX,
            max_map_bytes: usize::MAX,
        }
    }

    #[test]
    fn tree_blocks_counts_what_store_takes() {
        for bs in [1024usize, 4096] {
            for n in [0u64, 4, 5, 84, 85, 340, 341, 5000, 30_000] {
                let (_, _, used) = stored(&fragmented(n), &ctx(bs));
                assert_eq!(used.len(), tree_blocks(n as usize, bs), "{n} extents, {bs}");
            }
        }
    }

    fn fragmented(n: u64) -> Vec<Extent> {
        (0..n)
            .map(|i| Extent {
                lblk: i * 3,
                len: 2,
                pblk: 1000 + i * 7,
                uninit: i % 5 == 0,
            })
            .collect()
    }

    #[test]
    fn store_then_load_at_every_depth() {
        for (n, depth) in [(0u64, 0u16), (4, 0), (5, 1), (336, 1), (337, 2), (30000, 3)] {
            let c = ctx(1024);
            let ext = fragmented(n);
            let (ib, mut io, used) = stored(&ext, &c);
            assert_eq!(get16(&ib, 6), depth, "{n} extents");
            let m = load(&ib, &c, &mut io).unwrap();
            assert_eq!(m.ext, ext, "{n} extents");
            let mut a = m.meta.clone();
            let mut b = used.clone();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn corrupt_node_checksum_is_detected() {
        let c = ctx(1024);
        let ext = fragmented(20);
        let (ib, mut io, used) = stored(&ext, &c);
        io.blocks.get_mut(&used[0]).unwrap()[30] ^= 1;
        assert!(matches!(load(&ib, &c, &mut io), Err(FsError::Corrupt(_))));
    }

    #[test]
    fn block_budget_bounds_the_walk() {
        let mut c = ctx(1024);
        let ext = fragmented(20);
        let (ib, mut io, _) = stored(&ext, &c);
        c.max_blocks = 10;
        assert!(matches!(load(&ib, &c, &mut io), Err(FsError::Corrupt(_))));
    }

    #[test]
    fn byte_budget_bounds_the_map() {
        let mut c = ctx(1024);
        let ext = fragmented(1000);
        let (ib, mut io, _) = stored(&ext, &c);
        let m = load(&ib, &c, &mut io).unwrap();
        c.max_map_bytes = m.heap_bytes();
        let m2 = load(&ib, &c, &mut io).unwrap();
        assert!(m2.heap_bytes() <= c.max_map_bytes);
        assert_eq!(m2.ext, ext);
        // Less than the items themselves take cannot hold them.
        c.max_map_bytes = m.ext.len() * core::mem::size_of::<Extent>() + 8 * m.meta.len() - 1;
        assert_eq!(load(&ib, &c, &mut io).unwrap_err(), FsError::NoMemory);
    }
}
