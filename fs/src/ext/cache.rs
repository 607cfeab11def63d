//! A write-back cache of metadata blocks (bitmaps, inode tables, directory, extent and
//! indirect blocks), keyed by physical block number. Dirty blocks reach the device at
//! sync (sorted, adjacent ones in one write) or when the cache overflows.

use crate::blockdev::BlockDev;
use crate::error::FsError;
use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;

struct Entry {
    data: Vec<u8>,
    dirty: bool,
    verified: bool,
    stamp: u64,
    /// crash safety: made by `get_new` since the last write-back (a new block that
    /// something will point to, written before what points to it).
    fresh: bool,
}

/// The fewest blocks the cache keeps before it evicts, whatever it is told: enough
/// that one operation's few blocks (an inode table block, a bitmap, a directory
/// block) stay between its steps. A count, not bytes, only this far: 4 blocks of
/// 64 KiB are 256 KiB, where a floor of 16 was a whole small heap.
pub const MIN_BLOCKS: usize = 4;

/// The cache.
pub struct BlockCache {
    bs: usize,
    map: BTreeMap<u64, Entry>,
    limit: usize,
    clock: u64,
    /// Bytes written to the device by this cache.
    pub written: u64,
    /// Blocks taken for modification ([`BlockCache::get_mut`], [`BlockCache::get_new`])
    /// or forgotten so far: the abort state (`abort.rs`) tells by it whether a failed
    /// operation had changed anything.
    pub changes: u64,
    /// crash safety (see `ordered.rs`): when set, dirty blocks reach the device only
    /// through [`BlockCache::write_back`]/[`BlockCache::write_back_where`] at sync,
    /// never on eviction (the cache grows instead until the next sync).
    pub pinned: bool,
    /// Most bytes of adjacent dirty blocks gathered for one device write at write-back
    /// (default 1 MiB; a mount sizes it to its budget). Taken fallibly, for at most the
    /// dirty blocks; without it, blocks are written one by one.
    pub run_bytes: usize,
}

impl BlockCache {
    /// A cache of up to `limit` blocks of `bs` bytes (at least [`MIN_BLOCKS`]).
    pub fn new(bs: usize, limit: usize) -> BlockCache {
        BlockCache {
            bs,
            map: BTreeMap::new(),
            limit: limit.max(MIN_BLOCKS),
            clock: 0,
            written: 0,
            changes: 0,
            pinned: false,
            run_bytes: 1 << 20,
        }
    }

    /// Changes the number of blocks kept (at least [`MIN_BLOCKS`]); takes effect as
    /// blocks are next evicted.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(MIN_BLOCKS);
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Drops every clean block (memory is low); dirty ones stay until written.
    pub fn drop_clean(&mut self) {
        self.map.retain(|_, e| e.dirty);
    }

    /// Reads block `blk` (through the cache).
    pub fn get<D: BlockDev>(&mut self, dev: &mut D, blk: u64) -> Result<&[u8], FsError> {
        self.load(dev, blk)?;
        let t = self.tick();
        match self.map.get_mut(&blk) {
            Some(e) => {
                e.stamp = t;
                Ok(&e.data)
            }
            None => Err(FsError::Corrupt(alloc::string::String::from("cache"))),
        }
    }

    /// Block `blk` for modification (marked dirty).
    pub fn get_mut<D: BlockDev>(&mut self, dev: &mut D, blk: u64) -> Result<&mut [u8], FsError> {
        self.load(dev, blk)?;
        self.changes = self.changes.wrapping_add(1);
        let t = self.tick();
        match self.map.get_mut(&blk) {
            Some(e) => {
                e.stamp = t;
                e.dirty = true;
                Ok(&mut e.data)
            }
            None => Err(FsError::Corrupt(alloc::string::String::from("cache"))),
        }
    }

    /// Block `blk` for complete overwrite: zeroed, not read, marked dirty.
    pub fn get_new<D: BlockDev>(&mut self, dev: &mut D, blk: u64) -> Result<&mut [u8], FsError> {
        self.make_room(dev)?;
        self.changes = self.changes.wrapping_add(1);
        let t = self.tick();
        let bs = self.bs;
        let e = self.map.entry(blk).or_insert_with(|| Entry {
            data: vec![0; bs],
            dirty: true,
            verified: false,
            stamp: t,
            fresh: true,
        });
        e.data.fill(0);
        e.fresh = true;
        e.dirty = true;
        e.verified = false;
        e.stamp = t;
        Ok(&mut e.data)
    }

    /// Whether the block's checksum was checked since it was read (blocks we modify
    /// keep the flag: we re-seal what we change).
    pub fn verified(&self, blk: u64) -> bool {
        self.map.get(&blk).is_some_and(|e| e.verified)
    }

    /// Records that the block's checksum is good.
    pub fn set_verified(&mut self, blk: u64) {
        if let Some(e) = self.map.get_mut(&blk) {
            e.verified = true;
        }
    }

    /// Forgets blocks `start..start+len` (freed blocks: their stale contents must
    /// never be written over whatever reuses them).
    pub fn forget(&mut self, start: u64, len: u64) {
        self.changes = self.changes.wrapping_add(1);
        let end = start.saturating_add(len);
        let keys: Vec<u64> = self.map.range(start..end).map(|(k, _)| *k).collect();
        for k in keys {
            self.map.remove(&k);
        }
    }

    fn load<D: BlockDev>(&mut self, dev: &mut D, blk: u64) -> Result<(), FsError> {
        if self.map.contains_key(&blk) {
            return Ok(());
        }
        self.make_room(dev)?;
        let mut data = vec![0; self.bs];
        let off = blk
            .checked_mul(self.bs as u64)
            .ok_or(FsError::Invalid("block number"))?;
        dev.read(off, &mut data)?;
        let t = self.tick();
        self.map.insert(
            blk,
            Entry {
                data,
                dirty: false,
                verified: false,
                stamp: t,
                fresh: false,
            },
        );
        Ok(())
    }

    fn make_room<D: BlockDev>(&mut self, dev: &mut D) -> Result<(), FsError> {
        if self.map.len() < self.limit {
            return Ok(());
        }
        // Drop the older half of the clean blocks; if too few are clean, write back.
        let clean = self.map.values().filter(|e| !e.dirty).count();
        if clean < self.limit / 4 && !self.pinned {
            self.write_back(dev)?;
        }
        let mut stamps: Vec<u64> = self
            .map
            .values()
            .filter(|e| !e.dirty)
            .map(|e| e.stamp)
            .collect();
        stamps.sort_unstable();
        if let Some(&cut) = stamps.get(stamps.len() / 2) {
            self.map.retain(|_, e| e.dirty || e.stamp > cut);
        }
        Ok(())
    }

    /// Writes every dirty block (adjacent blocks coalesced), leaving them cached
    /// clean: for eviction outside a sync (an unpinned cache). A sync uses
    /// [`BlockCache::write_back_where`] and [`BlockCache::settle`] instead.
    pub fn write_back<D: BlockDev>(&mut self, dev: &mut D) -> Result<(), FsError> {
        self.write_back_where(dev, &|_| true)?;
        self.settle(&|_| true);
        Ok(())
    }

    /// Marks the dirty blocks `pick` selects clean: call once the flush after their
    /// write ([`BlockCache::write_back_where`]) succeeded. A device reports a failed
    /// write at that flush (write-behind), so a block is clean only once it is known
    /// to be home (issue 30); until then it stays dirty, pinned in the cache, and
    /// what reads it (after an abort, `abort.rs`) sees it, not the disk.
    pub fn settle(&mut self, pick: &dyn Fn(u64) -> bool) {
        for (&b, e) in self.map.iter_mut() {
            if e.dirty && pick(b) {
                e.dirty = false;
                e.fresh = false;
            }
        }
    }

    /// crash safety: the dirty blocks, for a journal transaction.
    pub fn dirty_blocks(&self) -> impl Iterator<Item = (u64, &[u8])> {
        self.map
            .iter()
            .filter(|(_, e)| e.dirty)
            .map(|(&b, e)| (b, e.data.as_slice()))
    }

    /// crash safety: whether block `blk` was made by `get_new` and not written since.
    pub fn is_fresh(&self, blk: u64) -> bool {
        self.map.get(&blk).is_some_and(|e| e.fresh)
    }

    /// The number of blocks kept before eviction.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Writes the dirty blocks `pick` selects (adjacent blocks coalesced); they stay
    /// dirty until [`BlockCache::settle`] (after a flush) says they are home.
    pub fn write_back_where<D: BlockDev>(
        &mut self,
        dev: &mut D,
        pick: &dyn Fn(u64) -> bool,
    ) -> Result<(), FsError> {
        let bs = self.bs as u64;
        let mut run_start = 0u64;
        let mut run: Vec<u8> = Vec::new();
        let want = self
            .dirty_count()
            .saturating_mul(self.bs)
            .min(self.run_bytes);
        if want >= 2 * self.bs {
            let _ = run.try_reserve_exact(want / self.bs * self.bs);
        }
        // Without a buffer of two blocks, each block goes from the cache as it is.
        let gather = run.capacity() >= 2 * self.bs;
        let mut next = u64::MAX;
        for (&blk, e) in self.map.iter() {
            if !e.dirty || !pick(blk) {
                continue;
            }
            if !gather {
                dev.write(blk * bs, &e.data)?;
                self.written += bs;
                continue;
            }
            if blk != next || run.len() + self.bs > run.capacity() {
                if !run.is_empty() {
                    dev.write(run_start * bs, &run)?;
                    self.written += run.len() as u64;
                    run.clear();
                }
                run_start = blk;
            }
            run.extend_from_slice(&e.data);
            next = blk + 1;
        }
        if !run.is_empty() {
            dev.write(run_start * bs, &run)?;
            self.written += run.len() as u64;
        }
        Ok(())
    }

    /// Number of dirty blocks.
    pub fn dirty_count(&self) -> usize {
        self.map.values().filter(|e| e.dirty).count()
    }
}
