//! ext2/ext3 block maps: 12 direct pointers, then single, double and triple indirect
//! blocks. Loaded into a [`FileMap`] and rebuilt from it when it changed.

use super::csum::{get32, put32};
use super::extent::{FileMap, MetaIo, TreeCtx, MAX_INIT_LEN};
use crate::error::FsError;
use alloc::format;
use alloc::vec;
use alloc::vec::Vec;

const NDIR: u64 = 12;

fn corrupt(what: &str) -> FsError {
    FsError::Corrupt(format!("block map: {what}"))
}

/// Logical blocks a block map can address.
pub fn max_blocks(bs: usize) -> u64 {
    let p = (bs / 4) as u64;
    NDIR + p + p * p + p * p * p
}

/// Loads the map rooted in `i_block`.
pub fn load(i_block: &[u8], ctx: &TreeCtx, io: &mut dyn MetaIo) -> Result<FileMap, FsError> {
    let mut map = FileMap::default();
    let mut budget = ctx.max_blocks;
    let p = (ctx.bs / 4) as u64;
    for i in 0..NDIR {
        let b = get32(i_block, i as usize * 4) as u64;
        if b != 0 {
            add(&mut map, ctx, &mut budget, i, b)?;
        }
    }
    let mut base = NDIR;
    let mut span = p;
    for level in 1..=3u32 {
        let b = get32(i_block, (NDIR as usize + level as usize - 1) * 4) as u64;
        if b != 0 {
            walk(b, level, base, ctx, io, &mut map, &mut budget)?;
        }
        base += span;
        span *= p;
    }
    Ok(map)
}

fn add(
    map: &mut FileMap,
    ctx: &TreeCtx,
    budget: &mut u64,
    lblk: u64,
    pblk: u64,
) -> Result<(), FsError> {
    if !ctx.valid_range(pblk, 1) {
        return Err(corrupt("pointer outside the filesystem"));
    }
    *budget = budget
        .checked_sub(1)
        .ok_or_else(|| corrupt("more blocks than i_blocks"))?;
    // Blocks arrive in increasing logical order: extend the last extent or push.
    if !map.ext.last().is_some_and(|e| {
        !e.uninit
            && e.len < MAX_INIT_LEN
            && e.lblk + u64::from(e.len) == lblk
            && e.pblk + u64::from(e.len) == pblk
    }) {
        map.reserve(true, ctx.max_map_bytes)?;
    }
    map.insert(lblk, pblk, 1);
    Ok(())
}

fn walk(
    blk: u64,
    level: u32,
    base: u64,
    ctx: &TreeCtx,
    io: &mut dyn MetaIo,
    map: &mut FileMap,
    budget: &mut u64,
) -> Result<(), FsError> {
    if !ctx.valid_range(blk, 1) {
        return Err(corrupt("indirect block outside the filesystem"));
    }
    *budget = budget
        .checked_sub(1)
        .ok_or_else(|| corrupt("more blocks than i_blocks"))?;
    map.reserve(false, ctx.max_map_bytes)?;
    map.meta.push(blk);
    let data = io.read_meta(blk)?;
    let p = (ctx.bs / 4) as u64;
    let span = p.pow(level - 1);
    for i in 0..p {
        let b = get32(&data, i as usize * 4) as u64;
        if b == 0 {
            continue;
        }
        let lblk = base + i * span;
        if level == 1 {
            add(map, ctx, budget, lblk, b)?;
        } else {
            walk(b, level - 1, lblk, ctx, io, map, budget)?;
        }
    }
    Ok(())
}

/// Writes `map` as a block map: pointers into `i_block`, indirect blocks through `io`.
/// Returns the indirect blocks used.
pub fn store(
    map: &FileMap,
    i_block: &mut [u8],
    ctx: &TreeCtx,
    io: &mut dyn MetaIo,
) -> Result<Vec<u64>, FsError> {
    i_block.fill(0);
    let p = (ctx.bs / 4) as u64;
    let mut used = Vec::new();
    // (offset in its subtree, pblk) for each of the three subtrees.
    let mut trees: [Vec<(u64, u64)>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let bounds = [
        NDIR,
        NDIR + p,
        NDIR + p + p * p,
        NDIR + p + p * p + p * p * p,
    ];
    for e in &map.ext {
        for k in 0..e.len as u64 {
            let l = e.lblk + k;
            let pb = e.pblk + k;
            if l < NDIR {
                put32(i_block, l as usize * 4, pb as u32);
            } else if l < bounds[1] {
                trees[0].push((l - bounds[0], pb));
            } else if l < bounds[2] {
                trees[1].push((l - bounds[1], pb));
            } else if l < bounds[3] {
                trees[2].push((l - bounds[2], pb));
            } else {
                return Err(FsError::TooBig);
            }
        }
    }
    for (i, t) in trees.iter().enumerate() {
        if !t.is_empty() {
            let b = build(t, i as u32 + 1, p, ctx, io, &mut used)?;
            put32(i_block, (NDIR as usize + i) * 4, b as u32);
        }
    }
    Ok(used)
}

fn build(
    entries: &[(u64, u64)],
    level: u32,
    p: u64,
    ctx: &TreeCtx,
    io: &mut dyn MetaIo,
    used: &mut Vec<u64>,
) -> Result<u64, FsError> {
    let blk = io.alloc_meta()?;
    used.push(blk);
    let mut buf = vec![0u8; ctx.bs];
    let span = p.pow(level - 1);
    let mut i = 0;
    while i < entries.len() {
        let slot = entries[i].0 / span;
        let mut j = i;
        while j < entries.len() && entries[j].0 / span == slot {
            j += 1;
        }
        let ptr = if level == 1 {
            entries[i].1
        } else {
            let sub: Vec<(u64, u64)> = entries[i..j].iter().map(|&(o, b)| (o % span, b)).collect();
            build(&sub, level - 1, p, ctx, io, used)?
        };
        put32(&mut buf, slot as usize * 4, ptr as u32);
        i = j;
    }
    io.write_meta(blk, &buf)?;
    Ok(blk)
}

#[cfg(test)]
mod tests {
    use super::super::extent::test_io::MemIo;
    use super::*;
    use alloc::collections::BTreeMap;

    #[test]
    fn store_then_load_through_triple_indirect() {
        let bs = 1024;
        let p = 256u64;
        let ctx = TreeCtx {
            bs,
            blocks_count: 1 << 31,
            first_data_block: 1,
            csum_seed: None,
            max_blocks: u64::MAX,
            max_map_bytes: usize::MAX,
        };
        let mut map = FileMap::default();
        // Direct, single, double and triple indirect ranges, with holes between.
        let starts = [
            0u64,
            11,
            12 + 5,
            12 + p + 3,
            12 + p + p * p + 1000,
            12 + p + p * p + 7 * p * p,
        ];
        for (i, s) in starts.iter().enumerate() {
            map.insert(*s, 100_000 + i as u64 * 1000, 3);
        }
        let mut io = MemIo {
            blocks: BTreeMap::new(),
            next: 10,
        };
        let mut ib = [0u8; 60];
        let used = store(&map, &mut ib, &ctx, &mut io).unwrap();
        let back = load(&ib, &ctx, &mut io).unwrap();
        assert_eq!(back.ext, map.ext);
        assert_eq!(back.meta.len(), used.len());
        // 1 single + (1 double + 1) + (1 triple + 2 double-level + 2 single-level).
        assert_eq!(used.len(), 1 + 2 + 5);
        let mut too_far = FileMap::default();
        too_far.insert(max_blocks(bs), 5, 1);
        assert_eq!(
            store(&too_far, &mut ib, &ctx, &mut io),
            Err(FsError::TooBig)
        );
    }
}
