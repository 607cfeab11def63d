//! ext2/ext4 read-write, as Debian's `mke2fs` makes them (see the module files for
//! each on-disk structure).
//!
//! Public API: [`Ext::mount`] (a [`BlockDev`] and [`MountOptions`]) gives an [`Ext`]
//! that implements [`FileSystem`]; [`Ext::into_device`] returns the device after
//! [`FileSystem::unmount`]. Beyond the trait: [`Ext::symlink`], [`Ext::link`],
//! [`Ext::extents`] (a file's mapping, for tests and diagnostics) and [`Ext::stats`].
//!
//! What is handled: 1 KiB to 64 KiB blocks; 32- and 64-byte group descriptors; flex_bg;
//! sparse_super/sparse_super2; lazily initialised groups (`BLOCK_UNINIT`,
//! `INODE_UNINIT`, `bg_itable_unused`); extent trees of any depth and ext2/3 indirect
//! block maps; linear and htree directories (lookups follow the hash index; names are
//! added as Linux's `ext4_dx_add_entry`: leaf and index splits, a directory indexed
//! once it outgrows one block, see `htree.rs`);
//! metadata_csum (superblock, descriptors, bitmaps, inodes, extent blocks, directory
//! blocks and htree index blocks: an index failing its checksum is not followed,
//! lookups scan instead and changes to that directory are refused) and gdt_csum. Unknown incompatible features refuse the mount, unknown
//! read-only-compatible ones make it read-only. The filesystem is marked not-clean
//! while mounted read-write and clean at unmount; one that needs recovery has its
//! journal replayed at mount (`recover`); then, on a read-write mount, the orphan
//! list (files unlinked while open, interrupted truncates) is finished (`orphan.rs`).
//! Crash safety (`ordered.rs`, issue 14): with a journal every sync is one jbd2
//! transaction (ordered mode); without, metadata is written in ordered phases with
//! flushes.
//!
//! Design: metadata blocks go through a write-back (`cache.rs`); each inode in
//! use is kept parsed with its block map in memory (`extent::FileMap`); regular-file
//! data is buffered per inode and allocated late (delayed allocation), in runs of
//! contiguous blocks that each go to the device from their own buffer in one
//! request (`pending.rs`; up to 4 MiB, a quarter of the mount's budget); a
//! large write into a hole (256 KiB or more, as `dd` passes) is allocated at once and
//! written straight from the caller's buffer (`direct.rs`). Extent
//! trees and block maps are rebuilt from the in-memory map at sync. Every on-disk
//! value is checked before use: bad structures give [`FsError::Corrupt`], not a panic.

mod abort;
mod alloc;
mod blockmap;
mod cache;
mod csum;
mod dir;
mod direct;
mod extent;
mod file;
mod group;
mod htree;
mod inode;
mod namei;
mod ordered;
mod orphan;
mod pending;
mod restart;
mod superblock;
mod unwritten;
mod wberr;

pub use ordered::CrashStats;
pub use orphan::OrphanStats;

use crate::blockdev::BlockDev;
use crate::error::FsError;
use crate::journal::{self, ReplayStats};
use crate::readahead::ReadAhead;
use crate::types::{DirEntry, FileSystem, FileType, Ino, MountOptions, Stat, StatFs};
use ::alloc::collections::{BTreeMap, BTreeSet};
use ::alloc::format;
use ::alloc::string::String;
use ::alloc::vec;
use ::alloc::vec::Vec;
use cache::BlockCache;
use csum::{get32, put32};
use extent::{FileMap, MetaIo, TreeCtx};
use group::Gdt;
use inode::{
    Inode, FL_APPEND, FL_EXTENTS, FL_IMMUTABLE, FL_INDEX, FL_INLINE_DATA, S_IFDIR, S_IFLNK, S_IFMT,
    S_IFREG,
};
use superblock::*;

const ROOT_INO: u32 = 2;
/// Buffered file data that triggers writing it out.
const FLUSH_BYTES: usize = 4 << 20;
/// Largest single device write of file data.
const MAX_IO: usize = 4 << 20;
/// Bytes of metadata blocks cached before the cache writes back or evicts.
const CACHE_BYTES: usize = 16 << 20;
/// Parsed inodes kept before clean ones are dropped.
const INODE_CACHE: usize = 4096;
/// What a cached inode costs the heap besides its raw bytes, map and index (see
/// [`node_cost`]): its `Node` in a B-tree leaf slot, counted twice as a leaf may be
/// half empty.
const NODE_OVERHEAD: usize = 2 * core::mem::size_of::<(u32, Node)>();
/// What a cached inode costs the heap, about, for the count bound on the inode cache
/// (see [`Ext::set_cache_bytes`]).
const NODE_BYTES: usize = 1024;
/// Bytes of cached inodes (with their maps) kept by default (as 4,096 of 1 KiB).
const NODE_CACHE_BYTES: usize = INODE_CACHE * NODE_BYTES;
/// The least metadata reserve (`Ext::resv_blocks`), where the filesystem allows.
const META_MARGIN: u64 = 64;
/// Hard link limit (above it dir_nlink directories count 1).
const LINK_MAX: u16 = 65000;
/// The memory bound of a mount made by [`Ext::mount`] (as the default cache), for what
/// the disk sizes: directory listings, file maps, the group descriptors, replay.
const DEFAULT_BUDGET: usize = CACHE_BYTES;
/// Most names one [`FileSystem::read_dir`] lists, however large the budget: at about
/// 40 bytes and a name each, 64 Ki entries are a few MiB, more than any guest here
/// sorts and prints, and as many as a directory of subdirectories holds without
/// dir_nlink (65,000 links).
const MAX_LIST_ENTRIES: usize = 1 << 16;
/// Marks, in a listing being built, an entry whose kind the directory does not record
/// (ext2 without `filetype`): its inode is read once the directory scan is done.
const KIND_UNKNOWN: Ino = 1 << 63;

/// A file's mapping, as [`Ext::extents`] reports it.
#[derive(Clone, Debug)]
pub struct FileExtents {
    /// (first logical block, blocks, first physical block), in logical order.
    pub extents: Vec<(u64, u32, u64)>,
    /// Depth of the on-disk extent tree (0 for block-mapped files).
    pub depth: u16,
}

/// Counters a caller (or a test) can read.
#[derive(Clone, Debug, Default)]
pub struct ExtStats {
    /// File data writes issued to the device.
    pub data_writes: u64,
    /// File data bytes written.
    pub data_bytes: u64,
    /// htree index blocks found with a wrong `dx_tail` checksum (each makes its
    /// directory's index untrusted until the inode is dropped from the cache).
    pub dx_csum_errors: u64,
}

struct Node {
    inode: Inode,
    map: Option<FileMap>,
    dirty: bool,
    map_dirty: bool,
    /// Buffered data (`pending.rs`).
    pending: pending::Pending,
    /// An htree directory's index, flattened (see `htree::flatten`), once read.
    dx: Option<Vec<(u32, u32)>>,
    /// The index is too large to keep flattened ([`Ext::dx_max`]): lookups follow it
    /// from the root each time (`htree::walk_candidates`).
    dx_large: bool,
    /// An index block of this htree directory failed its checksum: lookups scan it
    /// linearly and changes to it are refused (see `htree`).
    dx_bad: bool,
}

impl Node {
    /// A cached inode with nothing buffered and no index read yet.
    fn new(inode: Inode, map: Option<FileMap>, dirty: bool) -> Node {
        Node {
            inode,
            map,
            dirty,
            map_dirty: false,
            pending: pending::Pending::default(),
            dx: None,
            dx_large: false,
            dx_bad: false,
        }
    }
}

/// Readahead's window for a mount of `bytes` (`readahead.rs`): the windows take a
/// sixteenth, each up to 64 KiB; none under 4 KiB (readahead off).
fn readahead_window(bytes: usize, bs: usize) -> usize {
    let window = (bytes / 16 / crate::readahead::STREAMS).min(64 * 1024) / bs * bs;
    if window >= 4096 {
        window
    } else {
        0
    }
}

/// A mounted ext2/ext3/ext4 filesystem over a block device.
pub struct Ext<D: BlockDev> {
    /// The device, behind readahead for small sequential reads (`readahead.rs`).
    dev: ReadAhead<D>,
    sb: Superblock,
    gds: Gdt,
    dirty_groups: BTreeSet<u32>,
    /// Bitmap blocks changed since the last sync (their checksums are updated then).
    own_bitmaps: BTreeSet<u64>,
    cache: BlockCache,
    nodes: BTreeMap<u32, Node>,
    /// Clean inodes are dropped from `nodes` once it holds this many (see
    /// [`Ext::set_cache_bytes`]).
    max_nodes: usize,
    /// ... or once `node_bytes` reaches this (see [`Ext::set_cache_bytes`]).
    max_node_bytes: usize,
    /// What the cached inodes take on the heap, about ([`node_cost`]): added to as
    /// inodes, maps and indexes are loaded, recounted when clean ones are dropped.
    node_bytes: usize,
    opts: MountOptions,
    ro: bool,
    mounted: bool,
    free_blocks: u64,
    free_inodes: u64,
    reserved: u64,
    pending_bytes: usize,
    /// What the buffered data's run buffers hold of the heap (`pending.rs`): at
    /// least `pending_bytes`, with what growing runs reserved ahead; a run grows
    /// ahead only within `flush_bytes` of it.
    pending_cap: usize,
    /// The file and byte offset the last write call ended at: a call that goes on
    /// from there is a sequential writer's, whose run may grow ahead (`run_room`).
    stream: Option<(u32, u64)>,
    pool: Vec<u64>,
    meta_goal: u64,
    gen_state: u32,
    kind: &'static str,
    sb_dirty: bool,
    /// I/O counters.
    pub stats: ExtStats,
    /// File data held back before it is allocated and written (see
    /// [`Ext::set_cache_bytes`]).
    flush_bytes: usize,
    /// Largest single device write.
    max_io: usize,
    /// Journal replay at mount.
    replayed: Option<ReplayStats>,
    /// crash safety: journal writer, deferred frees (ordered.rs).
    crash: ordered::CrashState,
    /// What the orphan list processing at mount did (orphan.rs).
    orphan_stats: OrphanStats,
    /// The abort state (abort.rs).
    abort: abort::AbortState,
    /// File data written but not yet confirmed by a flush (unwritten.rs).
    unflushed: unwritten::Unflushed,
    /// Writeback errors per file and for the filesystem (wberr.rs).
    wb: wberr::WbErrors,
    /// The mount's memory bound in bytes ([`Ext::set_cache_bytes`]): what the disk
    /// sizes (a listing, a file's map) is held to a share of it, or refused with
    /// [`FsError::NoMemory`].
    budget: usize,
}

fn corrupt(what: String) -> FsError {
    FsError::Corrupt(what)
}

/// What cached inode `n` takes on the heap, about: [`NODE_OVERHEAD`], its raw bytes,
/// its map and its flattened htree index (buffered file data is counted apart, in
/// `pending_bytes`).
fn node_cost(n: &Node) -> usize {
    NODE_OVERHEAD
        + n.inode.raw.capacity()
        + n.map.as_ref().map_or(0, FileMap::heap_bytes)
        + n.dx.as_ref().map_or(0, crate::mem::vec_bytes)
}

/// One entry of a listing `read_dir` builds, its name allocated fallibly; an entry
/// whose kind the directory does not record is marked [`KIND_UNKNOWN`].
fn list_entry(name: &[u8], ino: u32, ft: u8) -> Result<DirEntry, FsError> {
    let text = String::from_utf8_lossy(name);
    let mut s = String::new();
    s.try_reserve_exact(text.len())
        .map_err(|_| FsError::NoMemory)?;
    s.push_str(&text);
    let (ino, kind) = match dir::ftype_kind(ft) {
        Some(k) => (ino as Ino, k),
        None => (ino as Ino | KIND_UNKNOWN, FileType::Special),
    };
    Ok(DirEntry { name: s, ino, kind })
}

fn check_name(name: &str) -> Result<&[u8], FsError> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(FsError::Invalid("bad file name"));
    }
    if name.len() > 255 {
        return Err(FsError::NameTooLong);
    }
    Ok(name.as_bytes())
}

impl<D: BlockDev> Ext<D> {
    /// Bounds the memory this mount uses for file data waiting to be written and
    /// for cached metadata to about `bytes` (the kernel gives a share of its heap; a
    /// 32 MiB guest has a heap of a few MiB). Streaming writes still reach the disk in
    /// runs of up to a quarter of it (at most 4 MiB).
    ///
    /// The same bound holds what the disk sizes: a directory listing may take half of
    /// it (see [`FileSystem::read_dir`]), a file's block map a quarter (`tree_ctx`),
    /// an htree index kept flattened an eighth (`dx_max`); [`Ext::mount_bounded`]
    /// holds the mount itself to it too.
    pub fn set_cache_bytes(&mut self, bytes: usize) {
        self.budget = bytes;
        let bs = self.sb.block_size as usize;
        self.max_io = (bytes / 4).clamp(64 * 1024, MAX_IO) / bs * bs;
        self.flush_bytes = (bytes / 4).clamp(64 * 1024, FLUSH_BYTES);
        // Readahead's windows (`readahead.rs`): a sixteenth, in windows of up to
        // 64 KiB (none under 4 KiB: readahead off).
        self.dev.set_window(readahead_window(bytes, bs));
        // The rest in equal shares for metadata blocks and for cached inodes, so
        // that the four add up to `bytes` (halves on top of the data's quarter made
        // a mount take 1.25 times its budget). Inodes are bounded twice: by count, at
        // 1 KiB each (a cached inode of 256 bytes with a small map, with room for
        // allocator slack: counting only bytes let `cp -r` keep twice as many and
        // the heap grow by a quarter), and by their counted bytes with their maps
        // and indexes, which holds where the count does not: large inodes, large
        // maps and htree indexes.
        self.cache.set_limit((bytes * 3 / 8 - bytes / 32) / bs);
        // The buffers that gather adjacent blocks for one write at sync (metadata
        // write-back, journal log blocks) are no larger than the data's runs.
        self.cache.run_bytes = self.max_io.min(1 << 20);
        self.size_journal_runs();
        self.max_node_bytes = bytes * 3 / 8 - bytes / 32;
        self.max_nodes = (self.max_node_bytes / NODE_BYTES).clamp(64, INODE_CACHE);
    }

    /// Mounts the filesystem on `dev`. Unknown incompatible features refuse the mount;
    /// unknown read-only-compatible ones (or a read-only device) mount read-only. A
    /// filesystem marked `needs_recovery` has its journal replayed first (as Linux
    /// does, even for a read-only mount); on a read-only device the mount is refused.
    /// A read-write mount then processes the orphan list ([`Ext::orphans`] tells
    /// what it did); a read-only one leaves it as it is.
    pub fn mount(dev: D, opts: MountOptions) -> Result<Ext<D>, FsError> {
        Self::mount_within(dev, opts, None)
    }

    /// Mounts as [`Ext::mount`] does, with the memory bound `bytes` from the start:
    /// the caches as [`Ext::set_cache_bytes`] sets them, and what the disk sizes at
    /// mount within it too: the group descriptor table (kept for the whole mount)
    /// may take half of it, or the mount is refused ([`FsError::Unsupported`]);
    /// journal replay's tables and buffer all of it (else [`FsError::Unsupported`]
    /// saying so, the device untouched); an orphan's block map a quarter (the orphan stays listed).
    /// [`Ext::mount`] bounds the same things by 16 MiB.
    pub fn mount_bounded(dev: D, opts: MountOptions, bytes: usize) -> Result<Ext<D>, FsError> {
        Self::mount_within(dev, opts, Some(bytes))
    }

    /// [`Ext::mount`] within `budget` bytes (`None`: the default caches, bounded
    /// by [`DEFAULT_BUDGET`]).
    fn mount_within(
        mut dev: D,
        opts: MountOptions,
        budget: Option<usize>,
    ) -> Result<Ext<D>, FsError> {
        let sb = Self::read_superblock(&mut dev)?;
        let mut replayed = None;
        if sb.incompat & INCOMPAT_RECOVER != 0 && sb.incompat & !INCOMPAT_KNOWN == 0 {
            let (d, stats) = Self::recover(dev, opts, budget)?;
            dev = d;
            replayed = Some(stats);
        }
        let mut fs = Self::mount_as_is(dev, opts, false, budget)?;
        fs.replayed = replayed;
        Ok(fs)
    }

    /// The primary superblock of `dev`, read and parsed.
    fn read_superblock(dev: &mut D) -> Result<Superblock, FsError> {
        let mut raw = vec![0u8; SB_SIZE];
        dev.read(SB_OFFSET, &mut raw)?;
        Superblock::parse(raw, dev.size_bytes())
    }

    /// EPERM if inode `ino` has any of `flags` (`FL_IMMUTABLE`, `FL_APPEND`), as
    /// Linux's `IS_IMMUTABLE`/`IS_APPEND` checks refuse the change.
    fn may_change(&mut self, ino: u32, flags: u32) -> Result<(), FsError> {
        if self.node(ino)?.inode.flags() & flags != 0 {
            return Err(FsError::NotPermitted);
        }
        Ok(())
    }

    /// Why a read-write mount came out read-only, if it did: an error aborted its
    /// running transaction (`abort.rs`, [`Ext::aborted`]), or its journal could not be
    /// used for writing.
    pub fn read_only_reason(&self) -> Option<String> {
        if let Some(why) = self.aborted() {
            return Some(String::from(why));
        }
        self.crash_stats()
            .journal_error
            .map(|e| format!("its journal cannot be written ({e})"))
    }

    /// What journal replay did at mount, if it ran.
    pub fn replayed(&self) -> Option<&ReplayStats> {
        self.replayed.as_ref()
    }

    /// Replays the journal: its blocks are found through a read-only mount that takes
    /// the on-disk metadata as it is (every block there is a complete old or new
    /// version; the journal inode itself is never journalled differently), then
    /// [`journal::replay_within`] the mount's budget writes the logged blocks home,
    /// and `needs_recovery` is cleared in the superblock (which replay may just have
    /// rewritten). A log that does not fit the budget refuses the mount
    /// ([`FsError::Unsupported`], saying so) with the device as it was.
    fn recover(
        dev: D,
        opts: MountOptions,
        budget: Option<usize>,
    ) -> Result<(D, ReplayStats), FsError> {
        if dev.read_only() {
            return Err(FsError::Unsupported(String::from(
                "needs journal recovery, and the device is read-only",
            )));
        }
        let probe_opts = MountOptions {
            read_only: true,
            ..opts
        };
        let mut probe = Self::mount_as_is(dev, probe_opts, true, budget)?;
        let j = probe.sb.journal_inum();
        if j == 0 {
            return Err(corrupt(String::from(
                "needs_recovery set but the filesystem has no journal inode",
            )));
        }
        let runs = probe.extents(Ino::from(j))?.extents;
        let bs = probe.sb.block_size;
        let mut dev = probe.into_device();
        // Runs in logical order: the one that starts last at or before `l`.
        let map = move |l: u64| {
            let i = runs.partition_point(|&(lb, _, _)| lb <= l).checked_sub(1)?;
            let (lb, len, pb) = runs[i];
            (l - lb < u64::from(len)).then(|| pb + (l - lb))
        };
        let budget = budget.unwrap_or(DEFAULT_BUDGET);
        let stats = journal::replay_within(&mut dev, bs, &map, budget).map_err(|e| match e {
            // Say why, for the boot report: the disk is as it was.
            FsError::NoMemory => FsError::Unsupported(format!(
                "journal replay needs more than this mount's {budget} bytes of memory \
                 (its revoke table); e2fsck -fy replays it"
            )),
            e => e,
        })?;
        let mut sb = Self::read_superblock(&mut dev)?;
        sb.incompat &= !INCOMPAT_RECOVER;
        put32(&mut sb.raw, 0x60, sb.incompat);
        // Blocks skipped for bad checksums leave the filesystem possibly
        // inconsistent: as Linux (jbd2 returns EFSBADCRC, "error loading journal")
        // the mount fails, and the superblock says it has errors so that e2fsck
        // checks it in full (as e2fsck itself marks it after such a replay).
        let bad = stats.data_csum_errors;
        if bad != 0 {
            let st = sb.state();
            sb.set_state(st | STATE_ERROR);
        }
        let b = sb.sealed_bytes().to_vec();
        dev.write(SB_OFFSET, &b)?;
        dev.flush()?;
        if bad != 0 {
            return Err(corrupt(format!(
                "journal replay skipped {bad} block(s) with bad checksums: the filesystem \
                 is marked as having errors; run e2fsck -fy"
            )));
        }
        Ok((dev, stats))
    }

    /// Mounts without replaying: `needs_recovery` refuses the mount unless
    /// `as_is` (the read-only probe [`Ext::recover`] makes). `budget` as for
    /// [`Ext::mount_within`].
    fn mount_as_is(
        mut dev: D,
        opts: MountOptions,
        as_is: bool,
        budget: Option<usize>,
    ) -> Result<Ext<D>, FsError> {
        let sb = Self::read_superblock(&mut dev)?;
        let unknown = sb.incompat & !INCOMPAT_KNOWN;
        if unknown != 0 {
            return Err(FsError::Unsupported(format!(
                "ext: incompatible features {unknown:#x}"
            )));
        }
        if sb.incompat & INCOMPAT_RECOVER != 0 && !as_is {
            return Err(FsError::Unsupported(String::from(
                "needs journal recovery, and replay did not clear it",
            )));
        }
        let bs = sb.block_size as usize;
        // Group descriptors: kept for the whole mount, in one buffer as on disk, and
        // at most half the mount's budget (at the small guest's 256 KiB, 4,096
        // 32-byte descriptors: a 32 GiB filesystem with 1 KiB blocks, 512 GiB with
        // 4 KiB, at mke2fs's default blocks per group). Their number comes from the
        // superblock: `mke2fs -g 256` on 1 GiB has 4,096 groups, and a hostile one
        // can claim millions.
        let limit = budget.unwrap_or(DEFAULT_BUDGET) / 2;
        let gdt_bytes = sb.gdt_blocks().saturating_mul(bs as u64);
        if gdt_bytes > limit as u64 {
            return Err(FsError::Unsupported(format!(
                "ext: {} group descriptors take {gdt_bytes} bytes, over the {limit} \
                 this mount may keep",
                sb.group_count
            )));
        }
        let mut gdt = crate::mem::zeroed(gdt_bytes as usize)?;
        dev.read((sb.first_data_block as u64 + 1) * bs as u64, &mut gdt)?;
        let gds = Gdt::new(gdt, &sb);
        let itb = (sb.inodes_per_group as u64 * sb.inode_size as u64).div_ceil(bs as u64);
        let (mut free_blocks, mut free_inodes) = (0u64, 0u64);
        for g in 0..sb.group_count {
            let gd = gds
                .get(g)
                .ok_or_else(|| corrupt(String::from("group descriptor table")))?;
            if !gd.csum_ok(&sb, g) {
                return Err(corrupt(format!("group descriptor {g} checksum mismatch")));
            }
            let ok = |b: u64, n: u64| {
                b > sb.first_data_block as u64
                    && b.checked_add(n).is_some_and(|e| e <= sb.blocks_count)
            };
            if !ok(gd.block_bitmap(), 1) || !ok(gd.inode_bitmap(), 1) || !ok(gd.inode_table(), itb)
            {
                return Err(corrupt(format!(
                    "group descriptor {g} points outside the filesystem"
                )));
            }
            // Linux's `ext4_check_descriptors`: a bitmap or inode table over the
            // primary superblock and descriptors (writing it would overwrite them),
            // and without flex_bg, outside its own group.
            let meta_end = sb.group_first_block(0) + sb.super_overhead(0);
            let own = (
                sb.group_first_block(g),
                sb.group_first_block(g) + u64::from(sb.blocks_in_group(g)),
            );
            let flex = sb.incompat & INCOMPAT_FLEX_BG != 0;
            for (what, b, n) in [
                ("block bitmap", gd.block_bitmap(), 1),
                ("inode bitmap", gd.inode_bitmap(), 1),
                ("inode table", gd.inode_table(), itb),
            ] {
                if b < meta_end {
                    return Err(corrupt(format!(
                        "group descriptor {g}: {what} at block {b} overlaps the superblock or the group descriptors"
                    )));
                }
                if !flex && (b < own.0 || b + n > own.1) {
                    return Err(corrupt(format!(
                        "group descriptor {g}: {what} at block {b} is outside its group ({}-{})",
                        own.0,
                        own.1 - 1
                    )));
                }
            }
            if gd.free_blocks() > sb.blocks_in_group(g) || gd.free_inodes() > sb.inodes_per_group {
                return Err(corrupt(format!("group descriptor {g}: bad free counts")));
            }
            free_blocks += gd.free_blocks() as u64;
            free_inodes += gd.free_inodes() as u64;
        }
        let ro = opts.read_only || dev.read_only() || sb.ro_compat & !RO_COMPAT_KNOWN != 0;
        let ext4ish = INCOMPAT_EXTENTS | INCOMPAT_64BIT | INCOMPAT_FLEX_BG;
        let kind = if sb.incompat & ext4ish != 0 || sb.has_csum() {
            "ext4"
        } else {
            "ext2"
        };
        let now = (opts.now)();
        let mut fs = Ext {
            dev: ReadAhead::new(dev),
            cache: BlockCache::new(bs, (CACHE_BYTES / bs).max(64)),
            gds,
            dirty_groups: BTreeSet::new(),
            own_bitmaps: BTreeSet::new(),
            nodes: BTreeMap::new(),
            max_nodes: INODE_CACHE,
            max_node_bytes: NODE_CACHE_BYTES,
            node_bytes: 0,
            opts,
            ro,
            mounted: true,
            free_blocks,
            free_inodes,
            reserved: 0,
            pending_bytes: 0,
            pending_cap: 0,
            stream: None,
            pool: Vec::new(),
            meta_goal: 0,
            gen_state: (now as u32) ^ 0x9E37_79B9 ^ get32(&sb.raw, 0x68),
            kind,
            sb_dirty: false,
            stats: ExtStats::default(),
            flush_bytes: FLUSH_BYTES,
            max_io: MAX_IO,
            replayed: None,
            crash: ordered::CrashState::default(),
            orphan_stats: OrphanStats::default(),
            abort: abort::AbortState::default(),
            unflushed: unwritten::Unflushed::default(),
            wb: wberr::WbErrors::default(),
            budget: DEFAULT_BUDGET,
            sb,
        };
        match budget {
            Some(b) => fs.set_cache_bytes(b),
            // readahead as a mount of the default budget has it (the other caches
            // keep their own defaults)
            None => fs.dev.set_window(readahead_window(DEFAULT_BUDGET, bs)),
        }
        if !fs.ro && fs.sb.incompat & INCOMPAT_RECOVER == 0 {
            fs.crash_mount()?; // crash safety (ordered.rs)
            if fs.crash_stats().journal_error.is_some() {
                // A journal it cannot use (v1, v1 checksums, a damaged superblock,
                // ...): Linux refuses the mount; here the filesystem is mounted
                // read-only, so that its files can be read and nothing is written
                // without the journal that makes it atomic, and the reason is kept
                // ([`Ext::read_only_reason`]).
                fs.ro = true;
                fs.cache.pinned = false;
                return Ok(fs);
            }
            let st = fs.sb.state();
            fs.sb.set_state(st & !STATE_VALID);
            fs.sb.note_mount(now);
            fs.write_super()?;
            fs.dev.flush()?;
            fs.process_orphans()?; // the orphan list (orphan.rs)
        } else if !as_is {
            fs.note_orphans_skipped();
        }
        Ok(fs)
    }

    /// The device back (after [`FileSystem::unmount`], or to abandon the mount).
    pub fn into_device(self) -> D {
        self.dev.into_inner()
    }

    /// The device, for inspection.
    pub fn device(&self) -> &D {
        self.dev.inner()
    }

    /// The device, mutably (tests inject faults through it; writing to it behind the
    /// filesystem's back is undefined).
    pub fn device_mut(&mut self) -> &mut D {
        self.dev.inner_mut()
    }

    /// Sets how many metadata blocks the cache holds before it writes back and evicts
    /// (default: 16 MiB worth; at least 4).
    pub fn set_cache_blocks(&mut self, blocks: usize) {
        self.cache.set_limit(blocks);
    }

    /// Block size in bytes.
    pub fn block_size(&self) -> u32 {
        self.sb.block_size
    }

    /// The extents of a file as (logical block, length, physical block), plus the depth
    /// of its extent tree (after a sync), for tests and diagnostics.
    pub fn extents(&mut self, ino: Ino) -> Result<FileExtents, FsError> {
        let i = self.ino32(ino)?;
        self.ensure_map(i)?;
        let n = self.node(i)?;
        let depth = if n.inode.flags() & FL_EXTENTS != 0 {
            csum::get16(n.inode.i_block(), 6)
        } else {
            0
        };
        let v = n
            .map
            .as_ref()
            .map(|m| m.ext.iter().map(|e| (e.lblk, e.len, e.pblk)).collect())
            .unwrap_or_default();
        Ok(FileExtents { extents: v, depth })
    }

    /// Creates a symbolic link `name` in `dir` pointing at `target` (fast symlinks,
    /// stored in the inode, below 60 bytes; otherwise one data block).
    pub fn symlink(&mut self, dir: Ino, name: &str, target: &str) -> Result<Ino, FsError> {
        self.operation("symlink", |fs| {
            let bs = fs.sb.block_size as usize;
            if target.is_empty() || target.len() >= bs.min(4096) {
                return Err(FsError::NameTooLong);
            }
            let (dir, name) = fs.check_new_entry(dir, name)?;
            let ino = fs.new_inode(dir, S_IFLNK | 0o777)?;
            let r = fs.fill_symlink(ino, target.as_bytes());
            let r = r.and_then(|()| fs.add_entry(dir, name, ino, 7));
            if let Err(e) = r {
                fs.release(ino)?; // undone (or the operation aborts, abort.rs)
                return Err(e);
            }
            Ok(ino as Ino)
        })
    }

    fn fill_symlink(&mut self, ino: u32, target: &[u8]) -> Result<(), FsError> {
        if target.len() < 60 {
            let n = self.node(ino)?;
            let f = n.inode.flags() & !FL_EXTENTS;
            n.inode.set_flags(f);
            let ib = n.inode.i_block_mut();
            ib.fill(0);
            ib[..target.len()].copy_from_slice(target);
            n.inode.set_size(target.len() as u64);
            n.map = Some(FileMap::default());
            return Ok(());
        }
        let goal = self.group_start(self.group_of(ino));
        let p = self.alloc_new_block(goal)?;
        let b = self.cache.get_new(&mut self.dev, p)?;
        b[..target.len()].copy_from_slice(target);
        let n = self.node(ino)?;
        let mut m = FileMap::default();
        m.insert(0, p, 1);
        n.map = Some(m);
        n.map_dirty = true;
        n.inode.set_size(target.len() as u64);
        n.dirty = true;
        Ok(())
    }

    /// Adds a hard link `name` in `dir` to the non-directory `ino`.
    pub fn link(&mut self, ino: Ino, dir: Ino, name: &str) -> Result<(), FsError> {
        self.operation("link", |fs| {
            let ino = fs.ino32(ino)?;
            let (dir, name) = fs.check_new_entry(dir, name)?;
            let n = fs.node(ino)?;
            if n.inode.kind() == FileType::Dir {
                return Err(FsError::IsDir);
            }
            if n.inode.links() == 0 {
                return Err(FsError::NotFound);
            }
            if n.inode.links() >= LINK_MAX {
                return Err(FsError::Invalid("too many links"));
            }
            let ft = dir::ftype_of_mode(n.inode.mode());
            fs.add_entry(dir, name, ino, ft)?;
            fs.link_inc(ino)
        })
    }

    /// Checks that `name` may be created in `dir`.
    fn check_new_entry<'a>(&mut self, dir: Ino, name: &'a str) -> Result<(u32, &'a [u8]), FsError> {
        let dir = self.ino32(dir)?;
        let name = check_name(name)?;
        if self.kind_of(dir)? != FileType::Dir {
            return Err(FsError::NotDir);
        }
        if self.node(dir)?.inode.links() == 0 {
            return Err(FsError::NotFound);
        }
        if self.dir_lookup(dir, name)?.is_some() {
            return Err(FsError::Exists);
        }
        // Refused before anything changes (abort.rs), not when the entry goes in.
        self.dx_refuse_untrusted(dir)?;
        Ok((dir, name))
    }

    /// Finds the entry `name` of `dir` that an unlink or rmdir removes, neither the
    /// directory nor its inode immutable or append-only: the directory, the name,
    /// the entry's inode and its kind.
    fn check_old_entry<'a>(
        &mut self,
        dir: Ino,
        name: &'a str,
    ) -> Result<(u32, &'a [u8], u32, FileType), FsError> {
        let dir = self.ino32(dir)?;
        let name = check_name(name)?;
        let ino = self.dir_lookup(dir, name)?.ok_or(FsError::NotFound)?;
        self.may_change(dir, FL_IMMUTABLE | FL_APPEND)?;
        self.may_change(ino, FL_IMMUTABLE | FL_APPEND)?;
        Ok((dir, name, ino, self.kind_of(ino)?))
    }

    /// A block for a new directory or symlink block: refused (NoSpace) when only the
    /// blocks promised to buffered file data and half the metadata reserve are left
    /// (the other half is for tree blocks).
    fn alloc_new_block(&mut self, goal: u64) -> Result<u64, FsError> {
        if self.free_blocks.saturating_sub(self.reserved) <= self.resv_blocks() / 2 {
            return Err(FsError::NoSpace);
        }
        Ok(self.alloc_blocks(goal, 1)?.0)
    }

    fn write_super(&mut self) -> Result<(), FsError> {
        let b = self.sb.sealed_bytes().to_vec();
        self.dev.write(SB_OFFSET, &b)?;
        self.sb_dirty = false;
        Ok(())
    }

    fn now(&self) -> i64 {
        (self.opts.now)()
    }

    fn check_rw(&mut self) -> Result<(), FsError> {
        if !self.mounted {
            return Err(FsError::Invalid("unmounted"));
        }
        if self.ro {
            return Err(FsError::ReadOnly);
        }
        self.maybe_commit() // crash safety (ordered.rs)
    }

    fn check_mounted(&self) -> Result<(), FsError> {
        if self.mounted {
            Ok(())
        } else {
            Err(FsError::Invalid("unmounted"))
        }
    }

    fn ino32(&self, ino: Ino) -> Result<u32, FsError> {
        if ino == 0 || ino > self.sb.inodes_count as u64 {
            return Err(FsError::Invalid("inode number"));
        }
        Ok(ino as u32)
    }

    fn next_generation(&mut self) -> u32 {
        let mut x = self.gen_state;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.gen_state = x;
        x
    }

    /// Where inode `ino` lives: (block, offset in block).
    fn inode_loc(&self, ino: u32) -> Result<(u64, usize), FsError> {
        let ipg = self.sb.inodes_per_group;
        let g = (ino - 1) / ipg;
        let idx = ((ino - 1) % ipg) as u64;
        let gd = self.gds.get(g).ok_or(FsError::Invalid("inode number"))?;
        let byte = idx * self.sb.inode_size as u64;
        let bs = self.sb.block_size as u64;
        Ok((gd.inode_table() + byte / bs, (byte % bs) as usize))
    }

    fn read_inode(&mut self, ino: u32) -> Result<Inode, FsError> {
        let (blk, off) = self.inode_loc(ino)?;
        let isz = self.sb.inode_size as usize;
        let b = self.cache.get(&mut self.dev, blk)?;
        let slot = b.get(off..off + isz).ok_or(FsError::Invalid("inode"))?;
        // Up to a block (64 KiB) an inode, as the superblock says: fallibly.
        let mut raw = Vec::new();
        raw.try_reserve_exact(isz).map_err(|_| FsError::NoMemory)?;
        raw.extend_from_slice(slot);
        let inode = Inode { raw };
        if self.sb.has_csum() && !inode.csum_ok(self.sb.csum_seed, ino) {
            return Err(corrupt(format!("inode {ino} checksum mismatch")));
        }
        Ok(inode)
    }

    fn store_inode(&mut self, ino: u32, inode: &mut Inode) -> Result<(), FsError> {
        if self.sb.has_csum() {
            inode.set_csum(self.sb.csum_seed, ino);
        }
        let (blk, off) = self.inode_loc(ino)?;
        let b = self.cache.get_mut(&mut self.dev, blk)?;
        if let Some(d) = b.get_mut(off..off + inode.raw.len()) {
            d.copy_from_slice(&inode.raw);
        }
        Ok(())
    }

    fn evict_nodes(&mut self) {
        if self.nodes.len() < self.max_nodes && self.node_bytes < self.max_node_bytes {
            return;
        }
        self.drop_clean_nodes();
    }

    /// Drops every clean inode (with its map) and recounts what the rest take.
    fn drop_clean_nodes(&mut self) {
        self.nodes
            .retain(|_, n| n.dirty || n.map_dirty || !n.pending.is_empty());
        self.node_bytes = self.nodes.values().map(node_cost).sum();
    }

    fn node(&mut self, ino: u32) -> Result<&mut Node, FsError> {
        if !self.nodes.contains_key(&ino) {
            self.evict_nodes();
            let inode = self.read_inode(ino)?;
            let n = Node::new(inode, None, false);
            self.node_bytes += node_cost(&n);
            self.nodes.insert(ino, n);
        }
        self.nodes.get_mut(&ino).ok_or(FsError::NotFound)
    }

    fn take(&mut self, ino: u32) -> Result<Node, FsError> {
        self.node(ino)?;
        self.nodes.remove(&ino).ok_or(FsError::NotFound)
    }

    fn put(&mut self, ino: u32, n: Node) {
        self.nodes.insert(ino, n);
    }

    /// Whether the inode's `i_block` holds a block map (not a fast symlink or device).
    fn has_map(inode: &Inode) -> bool {
        match inode.mode() & S_IFMT {
            S_IFREG | S_IFDIR => true,
            S_IFLNK => inode.size() >= 60 || inode.flags() & FL_EXTENTS != 0,
            _ => false,
        }
    }

    /// How to load or store the map of `ino`. A map may take a quarter of the mount's
    /// budget (`max_map_bytes`; the inode cache's 3/8 holds it beside others):
    /// 10,000 extents of a 1 MiB budget, 2,700 of the small guest's 256 KiB. Files
    /// written here have extents of up to 32,768 blocks; a map past that bound comes
    /// from a badly fragmented or hostile file, and reading, truncating or deleting it fails
    /// with [`FsError::NoMemory`] before anything changes.
    fn tree_ctx(&self, ino: u32, inode: &Inode) -> TreeCtx {
        let bs = self.sb.block_size as u64;
        let blocks = inode.blocks_512(
            self.sb.ro_compat & RO_COMPAT_HUGE_FILE != 0,
            self.sb.block_size,
        ) / (bs / 512);
        TreeCtx {
            bs: bs as usize,
            blocks_count: self.sb.blocks_count,
            first_data_block: self.sb.first_data_block as u64,
            csum_seed: self
                .sb
                .has_csum()
                .then(|| csum::inode_seed(self.sb.csum_seed, ino, inode.generation())),
            max_blocks: blocks.min(self.sb.blocks_count),
            max_map_bytes: self.budget / 4,
        }
    }

    fn ensure_map(&mut self, ino: u32) -> Result<(), FsError> {
        if self.node(ino)?.map.is_some() {
            return Ok(());
        }
        let mut n = self.take(ino)?;
        let r = self.load_map(ino, &n.inode);
        match r {
            Ok(m) => {
                self.node_bytes += m.heap_bytes();
                n.map = Some(m);
                self.put(ino, n);
                Ok(())
            }
            Err(e) => {
                self.put(ino, n);
                Err(e)
            }
        }
    }

    fn load_map(&mut self, ino: u32, inode: &Inode) -> Result<FileMap, FsError> {
        if !Self::has_map(inode) {
            return Ok(FileMap::default());
        }
        if inode.flags() & FL_INLINE_DATA != 0 {
            return Err(FsError::Unsupported(String::from("inline data")));
        }
        let ctx = self.tree_ctx(ino, inode);
        let ib = inode.i_block().to_vec();
        if inode.flags() & FL_EXTENTS != 0 {
            extent::load(&ib, &ctx, self)
        } else {
            blockmap::load(&ib, &ctx, self)
        }
    }

    fn map_of(&mut self, ino: u32) -> Result<&mut Node, FsError> {
        self.ensure_map(ino)?;
        self.node(ino)
    }

    fn group_of(&self, ino: u32) -> u32 {
        (ino - 1) / self.sb.inodes_per_group
    }

    fn group_start(&self, g: u32) -> u64 {
        self.sb.group_first_block(g)
    }

    fn inode_seed(&self, ino: u32, inode: &Inode) -> u32 {
        csum::inode_seed(self.sb.csum_seed, ino, inode.generation())
    }

    // ---- inodes ----

    fn new_inode(&mut self, dir: u32, mode: u16) -> Result<u32, FsError> {
        let is_dir = mode & S_IFMT == S_IFDIR;
        let ino = self.alloc_inode(self.group_of(dir), is_dir)?;
        let now = self.now();
        let isz = self.sb.inode_size as usize;
        let mut inode = Inode { raw: vec![0; isz] };
        if isz > 128 {
            csum::put16(&mut inode.raw, 0x80, self.sb.want_extra_isize);
        }
        inode.set_mode(mode);
        inode.set_links(if is_dir { 2 } else { 1 });
        inode.set_atime(now);
        inode.set_ctime(now);
        inode.set_mtime(now);
        inode.set_crtime(now);
        let gen = self.next_generation();
        csum::put32(&mut inode.raw, 0x64, gen);
        if self.sb.incompat & INCOMPAT_EXTENTS != 0 {
            inode.set_flags(FL_EXTENTS);
            let ctx = self.tree_ctx(ino, &inode);
            let mut ib = [0u8; 60];
            extent::store(&[], &mut ib, &ctx, self)?;
            inode.i_block_mut().copy_from_slice(&ib);
        }
        // A new inode joins the cache as `node` does for one read from disk: clean
        // ones go first when it is full (a copy that only creates files never reads
        // an inode, and `cp -r` of 5,000 of them kept every one, 5 MiB of heap).
        self.evict_nodes();
        let n = Node::new(inode, Some(FileMap::default()), true);
        self.node_bytes += node_cost(&n);
        self.put(ino, n);
        Ok(ino)
    }

    /// Frees every block of `ino` at or after logical block `from`, and its buffered
    /// data there.
    fn drop_blocks(&mut self, ino: u32, from: u64) -> Result<(), FsError> {
        self.ensure_map(ino)?;
        self.touch(); // abort.rs
        let mut n = self.take(ino)?;
        self.drop_pending(&mut n, from);
        let freed = n.map.as_mut().map(|m| m.truncate(from)).unwrap_or_default();
        if !freed.is_empty() {
            n.map_dirty = true;
            n.dirty = true;
        }
        let mut r = Ok(());
        for (p, l) in freed {
            if let Err(e) = self.free_blocks_range(p, l) {
                r = Err(e);
            }
        }
        self.put(ino, n);
        r
    }

    /// Drops the buffered data of inode `n` at or after logical block `from`.
    fn drop_pending(&mut self, n: &mut Node, from: u64) {
        let bs = self.sb.block_size as usize;
        let resv = Self::unmapped_pending(n, from, u64::MAX, bs);
        self.reserved = self.reserved.saturating_sub(resv);
        let cap = n.pending.cap();
        let gone = n.pending.remove_range(from, u64::MAX, bs);
        self.pending_bytes = self.pending_bytes.saturating_sub(gone);
        self.cap_changed(cap, n.pending.cap());
    }

    /// A file's run buffers went from `before` to `after` bytes of capacity.
    fn cap_changed(&mut self, before: usize, after: usize) {
        self.pending_cap = (self.pending_cap + after).saturating_sub(before);
    }

    /// How far a run buffer may grow ahead of `add` more bytes: for a sequential
    /// writer (`streaming`), what is left of `flush_bytes` after every run buffer's
    /// capacity; for others nothing (their runs at most double).
    fn run_room(&self, add: usize, streaming: bool) -> usize {
        if !streaming {
            return 0;
        }
        self.flush_bytes
            .saturating_sub(self.pending_cap.max(self.pending_bytes) + add)
    }

    /// The buffered blocks of `n` in `from..to` that have no mapping: those a block
    /// is reserved for (`pending.rs`).
    fn unmapped_pending(n: &Node, from: u64, to: u64, bs: usize) -> u64 {
        let mut count = 0;
        for (s, len) in n.pending.ranges_from(from, bs) {
            if s >= to {
                break;
            }
            let end = (s + len).min(to);
            let mut l = s;
            while l < end {
                match n.map.as_ref().and_then(|m| m.find(l)) {
                    Some((_, _, left)) => l += left,
                    None => {
                        let next = n.map.as_ref().and_then(|m| m.next_mapped(l));
                        let stop = next.unwrap_or(u64::MAX).min(end);
                        count += stop - l;
                        l = stop;
                    }
                }
            }
        }
        count
    }

    /// Frees the inode and everything it holds (its last link is gone).
    fn release(&mut self, ino: u32) -> Result<(), FsError> {
        let is_dir = self.node(ino)?.inode.kind() == FileType::Dir;
        if Self::has_map(&self.node(ino)?.inode) {
            self.drop_blocks(ino, 0)?;
            self.sync_map(ino)?;
        }
        let now = self.now();
        let mut n = self.take(ino)?;
        let acl = n.inode.file_acl();
        if acl != 0 {
            self.release_xattr_block(acl)?;
            csum::put32(&mut n.inode.raw, 0x68, 0);
            csum::put16(&mut n.inode.raw, 0x76, 0);
        }
        n.inode.set_links(0);
        n.inode.set_size(0);
        n.inode.set_dtime(now);
        n.inode.set_blocks_512(0);
        self.store_inode(ino, &mut n.inode)?;
        self.forget_writeback(ino); // its number may name a new file (wberr.rs)
        self.free_inode(ino, is_dir)
    }

    fn release_xattr_block(&mut self, blk: u64) -> Result<(), FsError> {
        if blk < self.sb.first_data_block as u64 || blk >= self.sb.blocks_count {
            return Ok(());
        }
        let b = self.cache.get(&mut self.dev, blk)?;
        if get32(b, 0) != 0xEA02_0000 {
            return Ok(());
        }
        let refs = get32(b, 4);
        if refs > 1 {
            let seed = self.sb.csum_seed;
            let csum = self.sb.has_csum();
            let b = self.cache.get_mut(&mut self.dev, blk)?;
            csum::put32(b, 4, refs - 1);
            if csum {
                csum::put32(b, 0x10, 0);
                let c = crate::crc32c::crc32c(crate::crc32c::crc32c(seed, &blk.to_le_bytes()), b);
                csum::put32(b, 0x10, c);
            }
            Ok(())
        } else {
            self.free_blocks_range(blk, 1)
        }
    }

    /// Puts everything on the disk: the file data, then the running transaction
    /// (journalled, or in ordered phases).
    ///
    /// A data write error leaves the data buffered for a retry (no abort). ENOSPC
    /// for the data with frees waiting (issue 30): what is allocated is committed with
    /// the frees, which the data then gets. After the data, an error aborts the
    /// running transaction (`abort.rs`), but ENOSPC and ENOMEM, which leave it to be
    /// committed by a later sync.
    fn sync_all(&mut self) -> Result<(), FsError> {
        if self.aborted().is_some() {
            return Err(FsError::ReadOnly);
        }
        if self.ro {
            return Ok(());
        }
        match self.flush_all_data() {
            Ok(()) => {}
            Err(FsError::NoSpace) if self.frees_deferred() => {
                self.commit_running()?;
                self.flush_all_data()?;
            }
            Err(e) => return Err(e),
        }
        self.commit_running()
    }

    /// The part of a sync after the file data: aborts on an error (see `sync_all`).
    fn commit_running(&mut self) -> Result<(), FsError> {
        let r = self.commit_inner();
        if let Err(e) = &r {
            if !matches!(e, FsError::NoSpace | FsError::NoMemory) {
                self.abort("sync", e);
            }
        }
        r
    }

    fn commit_inner(&mut self) -> Result<(), FsError> {
        // Data before the metadata that maps it initialised (unwritten.rs).
        self.settle_data()?;
        let inos: Vec<u32> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.map_dirty || n.dirty)
            .map(|(k, _)| *k)
            .collect();
        for i in &inos {
            match self.sync_map(*i) {
                // ENOSPC for a tree block (issue 30): the blocks freed in this
                // transaction may take it (metadata reaches its home only after the
                // commit, so it cannot overwrite what the committed metadata uses).
                Err(FsError::NoSpace) if self.frees_deferred() => {
                    self.apply_deferred_frees()?;
                    self.sync_map(*i)?;
                }
                r => r?,
            }
        }
        self.apply_deferred_frees()?; // crash safety (ordered.rs)
        for i in inos {
            if let Some(mut n) = self.nodes.remove(&i) {
                let r = self.store_inode(i, &mut n.inode);
                n.dirty = r.is_err();
                self.nodes.insert(i, n);
                r?;
            }
        }
        let had_groups = !self.dirty_groups.is_empty();
        self.finish_groups()?;
        let dirty = self.cache.dirty_count() as u64;
        if had_groups || dirty > 0 || self.sb_dirty {
            self.sb.set_free_blocks(self.free_blocks);
            self.sb.set_free_inodes(self.free_inodes as u32);
            let now = self.now();
            self.sb.note_write(now);
            let kb = (self.stats.data_bytes + self.cache.written) / 1024;
            self.sb.add_kbytes_written(kb);
            self.stats.data_bytes = 0;
            self.cache.written = 0;
            self.commit_metadata()?; // crash safety (ordered.rs): journal or ordered
        }
        self.dev.flush()?;
        Ok(())
    }

    fn kind_of(&mut self, ino: u32) -> Result<FileType, FsError> {
        Ok(self.node(ino)?.inode.kind())
    }

    fn link_inc(&mut self, ino: u32) -> Result<(), FsError> {
        self.touch(); // abort.rs
        let dir_nlink = self.sb.ro_compat & RO_COMPAT_DIR_NLINK != 0;
        let now = self.now();
        let n = self.node(ino)?;
        let l = n.inode.links();
        if l >= LINK_MAX || l == 1 && n.inode.kind() == FileType::Dir {
            if n.inode.kind() == FileType::Dir && dir_nlink {
                n.inode.set_links(1);
            } else {
                return Err(FsError::Invalid("too many links"));
            }
        } else {
            n.inode.set_links(l + 1);
        }
        n.inode.set_ctime(now);
        n.dirty = true;
        Ok(())
    }

    fn link_dec(&mut self, ino: u32) -> Result<u16, FsError> {
        self.touch(); // abort.rs
        let now = self.now();
        let n = self.node(ino)?;
        let l = n.inode.links();
        let is_dir = n.inode.kind() == FileType::Dir;
        let nl = if is_dir && l <= 1 {
            l
        } else {
            l.saturating_sub(1)
        };
        n.inode.set_links(nl);
        n.inode.set_ctime(now);
        n.dirty = true;
        Ok(nl)
    }

    /// Whether `anc` is `ino` or one of its ancestors.
    fn is_ancestor(&mut self, anc: u32, mut ino: u32) -> Result<bool, FsError> {
        for _ in 0..self.sb.inodes_count.min(1 << 16) {
            if ino == anc {
                return Ok(true);
            }
            if ino == ROOT_INO {
                return Ok(false);
            }
            let parent = self
                .dir_lookup(ino, b"..")?
                .ok_or_else(|| corrupt(format!("directory {ino} has no ..")))?;
            if parent == ino {
                return Ok(false);
            }
            ino = parent;
        }
        Err(corrupt(String::from("directory loop")))
    }

    fn set_dotdot(&mut self, dir: u32, parent: u32) -> Result<(), FsError> {
        // An htree root: ".." changed there and the root's dx_tail sealed again (the
        // index stays, as on Linux); a root not shaped as one is made linear.
        if self.node(dir)?.inode.flags() & FL_INDEX != 0 {
            if self.dx_set_dotdot(dir, parent)? {
                return Ok(());
            }
            self.deindex(dir)?;
        }
        let Some((pblk, usable)) = self.dir_block(dir, 0)? else {
            return Err(corrupt(format!("directory {dir}: no block 0")));
        };
        let seed_inode = self.node(dir)?.inode.clone();
        let seed = self.inode_seed(dir, &seed_inode);
        let csum = self.sb.has_csum();
        let b = self.cache.get_mut(&mut self.dev, pblk)?;
        let recs = dir::records(b, usable)?;
        let Some(r) = recs.get(1).filter(|r| r.name(b) == b"..") else {
            return Err(corrupt(format!("directory {dir}: no .. entry")));
        };
        csum::put32(b, r.off, parent);
        if csum && usable < b.len() {
            dir::set_tail(b, seed);
        }
        Ok(())
    }

    fn make(&mut self, dir: Ino, name: &str, mode: u16) -> Result<Ino, FsError> {
        self.check_rw()?;
        let (dir, name) = self.check_new_entry(dir, name)?;
        let is_dir = mode & S_IFMT == S_IFDIR;
        if is_dir {
            self.link_inc(dir)?;
        }
        let ino = match self.new_inode(dir, mode) {
            Ok(i) => i,
            Err(e) => {
                if is_dir {
                    self.link_dec(dir)?;
                }
                return Err(e);
            }
        };
        let r = (|| {
            if is_dir {
                self.init_dir_block(ino, dir)?;
            }
            self.add_entry(dir, name, ino, if is_dir { 2 } else { 1 })
        })();
        if let Err(e) = r {
            // Undone (a failure to undo aborts the operation, abort.rs).
            self.release(ino)?;
            if is_dir {
                self.link_dec(dir)?;
            }
            return Err(e);
        }
        Ok(ino as Ino)
    }

    fn init_dir_block(&mut self, ino: u32, parent: u32) -> Result<(), FsError> {
        let goal = self.group_start(self.group_of(ino));
        let p = self.alloc_new_block(goal)?;
        let bs = self.sb.block_size as usize;
        let csum = self.sb.has_csum();
        let usable = if csum { bs - dir::TAIL } else { bs };
        let ft = if self.sb.incompat & INCOMPAT_FILETYPE != 0 {
            2
        } else {
            0
        };
        let seed_inode = self.node(ino)?.inode.clone();
        let seed = self.inode_seed(ino, &seed_inode);
        {
            let b = self.cache.get_new(&mut self.dev, p)?;
            dir::init_empty(b, usable);
            dir::write_rec(b, 0, ino, 12, b".", ft);
            dir::write_rec(b, 12, parent, usable - 12, b"..", ft);
            if csum {
                dir::set_tail(b, seed);
            }
        }
        let n = self.node(ino)?;
        let mut m = FileMap::default();
        m.insert(0, p, 1);
        n.map = Some(m);
        n.map_dirty = true;
        n.inode.set_size(bs as u64);
        n.dirty = true;
        Ok(())
    }

    fn stat_of(&mut self, ino: u32) -> Result<Stat, FsError> {
        let huge = self.sb.ro_compat & RO_COMPAT_HUGE_FILE != 0;
        let bs = self.sb.block_size;
        let n = self.node(ino)?;
        let extra = Self::unmapped_pending(n, 0, u64::MAX, bs as usize) * (bs as u64 / 512);
        let i = &n.inode;
        Ok(Stat {
            ino: ino as Ino,
            kind: i.kind(),
            mode: i.mode(),
            nlink: i.links() as u32,
            uid: i.uid(),
            gid: i.gid(),
            size: i.size(),
            blocks: i.blocks_512(huge, bs) + extra,
            atime: i.atime(),
            mtime: i.mtime(),
            ctime: i.ctime(),
        })
    }
}

impl<D: BlockDev> MetaIo for Ext<D> {
    fn read_meta(&mut self, blk: u64) -> Result<Vec<u8>, FsError> {
        Ok(self.cache.get(&mut self.dev, blk)?.to_vec())
    }

    fn alloc_meta(&mut self) -> Result<u64, FsError> {
        if let Some(b) = self.pool.pop() {
            return Ok(b);
        }
        let (b, _) = self.alloc_blocks(self.meta_goal, 1)?;
        self.meta_goal = b + 1;
        Ok(b)
    }

    fn write_meta(&mut self, blk: u64, data: &[u8]) -> Result<(), FsError> {
        let b = self.cache.get_new(&mut self.dev, blk)?;
        b.copy_from_slice(data);
        Ok(())
    }
}

impl<D: BlockDev> FileSystem for Ext<D> {
    fn kind(&self) -> &'static str {
        self.kind
    }

    fn root(&self) -> Ino {
        ROOT_INO as Ino
    }

    fn read_only(&self) -> bool {
        self.ro
    }

    fn error(&self) -> Option<String> {
        self.aborted().and_then(|_| self.read_only_reason())
    }

    fn statfs(&mut self) -> Result<StatFs, FsError> {
        // As Linux's ext4_statfs: free excludes the blocks promised to buffered data;
        // available also the root reserve and the metadata reserve (issue 30).
        let free = self.free_blocks.saturating_sub(self.reserved);
        Ok(StatFs {
            kind: self.kind,
            block_size: self.sb.block_size,
            blocks: self.sb.blocks_count,
            free_blocks: free,
            avail_blocks: free
                .saturating_sub(self.sb.r_blocks_count)
                .saturating_sub(self.resv_blocks()),
            inodes: self.sb.inodes_count as u64,
            free_inodes: self.free_inodes,
        })
    }

    fn lookup(&mut self, dir: Ino, name: &str) -> Result<Ino, FsError> {
        self.check_mounted()?;
        let dir = self.ino32(dir)?;
        if name.len() > 255 {
            return Err(FsError::NameTooLong);
        }
        match self.dir_lookup(dir, name.as_bytes())? {
            Some(i) => Ok(i as Ino),
            None => Err(FsError::NotFound),
        }
    }

    fn stat(&mut self, ino: Ino) -> Result<Stat, FsError> {
        self.check_mounted()?;
        let ino = self.ino32(ino)?;
        self.stat_of(ino)
    }

    /// The directory is scanned twice: first to count its names and their bytes, then
    /// to list them into a vector of exactly that many, allocated fallibly. The
    /// listing is held to half the mount's budget ([`Ext::set_cache_bytes`]: the
    /// caches may hold the other half meanwhile) and to `MAX_LIST_ENTRIES` names; a
    /// larger directory (its size comes from the disk) gives [`FsError::NoMemory`]
    /// before anything is allocated. (Building it as one scan goes costs up to twice
    /// the listing in spare capacity, which a caller keeps for as long as it walks
    /// the listing, as `cp -r` does.)
    fn read_dir(&mut self, dir: Ino) -> Result<Vec<DirEntry>, FsError> {
        self.check_mounted()?;
        let dir = self.ino32(dir)?;
        let max = self.sb.inodes_count;
        let listed = |n: &[u8], ino: u32| n != b"." && n != b".." && ino <= max;
        let (mut count, mut names) = (0usize, 0usize);
        self.dir_scan(dir, &mut |n, ino, _| {
            if listed(n, ino) {
                count += 1;
                // A name that is not UTF-8 grows by up to 3 bytes a byte when made one.
                names += if core::str::from_utf8(n).is_ok() {
                    n.len()
                } else {
                    3 * n.len()
                };
            }
            false
        })?;
        let bytes = count
            .saturating_mul(core::mem::size_of::<DirEntry>())
            .saturating_add(names);
        if count > MAX_LIST_ENTRIES || bytes > self.budget / 2 {
            return Err(FsError::NoMemory);
        }
        let mut out: Vec<DirEntry> = Vec::new();
        out.try_reserve_exact(count)
            .map_err(|_| FsError::NoMemory)?;
        let mut failed = None;
        self.dir_scan(dir, &mut |n, ino, ft| {
            if !listed(n, ino) {
                return false;
            }
            match list_entry(n, ino, ft) {
                // Never past the count (the blocks are the same, read again).
                Ok(e) if out.len() < count => {
                    out.push(e);
                    false
                }
                Ok(_) => true,
                Err(e) => {
                    failed = Some(e);
                    true
                }
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        for e in out.iter_mut().filter(|e| e.ino & KIND_UNKNOWN != 0) {
            e.ino &= !KIND_UNKNOWN;
            e.kind = self
                .node(e.ino as u32)
                .map(|n| n.inode.kind())
                .unwrap_or(FileType::Special);
        }
        Ok(out)
    }

    fn read(&mut self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize, FsError> {
        self.check_mounted()?;
        let ino = self.ino32(ino)?;
        self.read_file(ino, offset, buf)
    }

    fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize, FsError> {
        self.check_rw()?;
        let ino = self.ino32(ino)?;
        let (flags, size) = {
            let n = self.node(ino)?;
            (n.inode.flags(), n.inode.size())
        };
        if flags & FL_IMMUTABLE != 0 || (flags & FL_APPEND != 0 && offset != size) {
            return Err(FsError::NotPermitted);
        }
        self.room_for_write(data.len())?; // crash safety (ordered.rs)
        match self.write_file(ino, offset, data) {
            // crash safety (ordered.rs): freed blocks come back at sync.
            Err(FsError::NoSpace) if self.frees_deferred() => {
                self.sync_all()?;
                self.write_file(ino, offset, data)
            }
            r => r,
        }
    }

    fn truncate(&mut self, ino: Ino, size: u64) -> Result<(), FsError> {
        self.operation("truncate", |fs| {
            let ino = fs.ino32(ino)?;
            fs.may_change(ino, FL_IMMUTABLE | FL_APPEND)?;
            fs.truncate_file(ino, size)
        })
    }

    fn create(&mut self, dir: Ino, name: &str, perm: u16) -> Result<Ino, FsError> {
        self.operation("create", |fs| {
            fs.may_change(fs.ino32(dir)?, FL_IMMUTABLE)?;
            fs.make(dir, name, S_IFREG | (perm & 0o7777))
        })
    }

    fn mkdir(&mut self, dir: Ino, name: &str, perm: u16) -> Result<Ino, FsError> {
        self.operation("mkdir", |fs| {
            fs.may_change(fs.ino32(dir)?, FL_IMMUTABLE)?;
            fs.make(dir, name, S_IFDIR | (perm & 0o7777))
        })
    }

    fn unlink(&mut self, dir: Ino, name: &str) -> Result<(), FsError> {
        self.operation("unlink", |fs| {
            let (dir, name, ino, kind) = fs.check_old_entry(dir, name)?;
            if kind == FileType::Dir {
                return Err(FsError::IsDir);
            }
            if fs.node(ino)?.inode.links() <= 1 {
                fs.ensure_map(ino)?; // NoMemory before the name goes, not after
            }
            fs.dx_refuse_untrusted(dir)?; // before the first change (abort.rs)
            fs.remove_entry(dir, name)?;
            if fs.link_dec(ino)? == 0 {
                fs.release_unlinked(ino)?; // in steps (restart.rs)
            }
            Ok(())
        })
    }

    fn rmdir(&mut self, dir: Ino, name: &str) -> Result<(), FsError> {
        self.operation("rmdir", |fs| {
            let (dir, name, ino, kind) = fs.check_old_entry(dir, name)?;
            if kind != FileType::Dir {
                return Err(FsError::NotDir);
            }
            if ino == ROOT_INO {
                return Err(FsError::Busy);
            }
            if !fs.dir_is_empty(ino)? {
                return Err(FsError::NotEmpty);
            }
            fs.ensure_map(ino)?; // NoMemory before the name goes, not after
            fs.dx_refuse_untrusted(dir)?; // before the first change (abort.rs)
            fs.remove_entry(dir, name)?;
            fs.link_dec(dir)?;
            fs.release(ino)
        })
    }

    fn rename(&mut self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<(), FsError> {
        self.operation("rename", |fs| {
            let fd = fs.ino32(from_dir)?;
            let td = fs.ino32(to_dir)?;
            let from = check_name(from)?;
            let to = check_name(to)?;
            if fs.kind_of(td)? != FileType::Dir || fs.kind_of(fd)? != FileType::Dir {
                return Err(FsError::NotDir);
            }
            let src = fs.dir_lookup(fd, from)?.ok_or(FsError::NotFound)?;
            fs.may_change(fd, FL_IMMUTABLE | FL_APPEND)?;
            fs.may_change(td, FL_IMMUTABLE)?;
            fs.may_change(src, FL_IMMUTABLE | FL_APPEND)?;
            if let Some(d) = fs.dir_lookup(td, to)? {
                fs.may_change(d, FL_IMMUTABLE | FL_APPEND)?;
            }
            let src_kind = fs.kind_of(src)?;
            let src_dir = src_kind == FileType::Dir;
            let dst = fs.dir_lookup(td, to)?;
            if dst == Some(src) {
                return Ok(());
            }
            if src_dir && fd != td && fs.is_ancestor(src, td)? {
                return Err(FsError::Invalid("cannot move a directory below itself"));
            }
            if src_dir && fd != td && fs.node(src)?.inode.flags() & FL_INDEX != 0 {
                // Its ".." will change, which de-indexes it: fail now, not half-way, if
                // its index cannot be trusted.
                fs.dx_interior(src)?;
            }
            // Directories whose index is untrusted: refused before the first change.
            fs.dx_refuse_untrusted(fd)?;
            fs.dx_refuse_untrusted(td)?;
            let ft = dir::ftype_of_mode(fs.node(src)?.inode.mode());
            let dk = match dst {
                Some(d) => Some(fs.kind_of(d)?),
                None => None,
            };
            let cross = src_dir && fd != td;
            if let (Some(d), Some(dk)) = (dst, dk) {
                match (src_dir, dk == FileType::Dir) {
                    (true, false) => return Err(FsError::NotDir),
                    (false, true) => return Err(FsError::IsDir),
                    (true, true) if !fs.dir_is_empty(d)? => return Err(FsError::NotEmpty),
                    _ => {}
                }
                if dk == FileType::Dir || fs.node(d)?.inode.links() <= 1 {
                    fs.ensure_map(d)?; // NoMemory before anything changes
                }
                // The first change.
                fs.retarget_entry(td, to, src, ft)?;
            } else {
                if cross {
                    fs.link_inc(td)?;
                }
                if let Err(e) = fs.add_entry(td, to, src, ft) {
                    if cross {
                        fs.link_dec(td)?;
                    }
                    return Err(e);
                }
            }
            fs.remove_entry(fd, from)?;
            if cross {
                // ".." moves from `fd` to `td` (which, over a directory, loses the old
                // one's "..": no change to its count then).
                fs.set_dotdot(src, td)?;
                fs.link_dec(fd)?;
            }
            // The old target goes last, once both names are right (as Linux drops it
            // after the rename): an error before here leaves it whole, never two names
            // on one inode with one link (and any error after the first change aborts
            // the transaction, abort.rs).
            if let (Some(d), Some(dk)) = (dst, dk) {
                if dk == FileType::Dir {
                    if !cross {
                        fs.link_dec(td)?;
                    }
                    fs.release(d)?;
                } else if fs.link_dec(d)? == 0 {
                    fs.release_unlinked(d)?; // in steps (restart.rs)
                }
            }
            let now = fs.now();
            let n = fs.node(src)?;
            n.inode.set_ctime(now);
            n.dirty = true;
            Ok(())
        })
    }

    fn set_times(&mut self, ino: Ino, atime: i64, mtime: i64) -> Result<(), FsError> {
        self.operation("set_times", |fs| {
            let ino = fs.ino32(ino)?;
            fs.may_change(ino, FL_IMMUTABLE)?;
            let now = fs.now();
            let n = fs.node(ino)?;
            n.inode.set_atime(atime);
            n.inode.set_mtime(mtime);
            n.inode.set_ctime(now);
            n.dirty = true;
            Ok(())
        })
    }

    /// Syncs, then reports the file's writeback error if this caller has not seen it
    /// (sampled at the start of the call: wberr.rs).
    fn fsync(&mut self, ino: Ino) -> Result<(), FsError> {
        self.check_mounted()?;
        let ino = self.ino32(ino)?;
        let mut since = self.wb.sample_file(ino);
        let r = self.sync_all();
        let wb = self.wb.check_file(ino, &mut since);
        r.and(wb)
    }

    /// Syncs, then reports the filesystem's writeback error if this caller has not
    /// seen it (as `syncfs`: wberr.rs).
    fn sync(&mut self) -> Result<(), FsError> {
        self.check_mounted()?;
        let mut since = self.wb.sample_fs();
        let r = self.sync_all();
        let wb = self.wb.check_fs(&mut since);
        r.and(wb)
    }

    fn shrink(&mut self) -> Result<(), FsError> {
        self.check_mounted()?;
        // What stays after a failed write-out is what it could not write: dirty
        // blocks and inodes, and buffered data, which only a later sync may drop.
        let r = self.sync_all();
        self.cache.drop_clean();
        self.drop_clean_nodes();
        self.dev.drop_windows();
        r
    }

    fn unmount(&mut self) -> Result<(), FsError> {
        self.check_mounted()?;
        if !self.ro {
            // A writeback error no `sync` has reported fails this unmount once (the
            // filesystem stays mounted, everything synced; wberr.rs): the next one
            // goes through.
            let mut since = self.wb.sample_fs();
            self.sync_all()?;
            self.wb.check_fs(&mut since)?;
            self.crash_unmount(); // crash safety (ordered.rs)
            let st = self.sb.state();
            self.sb.set_state(st | STATE_VALID);
            if let Err(e) = self.write_super().and_then(|()| Ok(self.dev.flush()?)) {
                self.abort("unmount", &e); // abort.rs
                return Err(e);
            }
        }
        self.mounted = false;
        self.nodes.clear();
        self.node_bytes = 0;
        Ok(())
    }
}
