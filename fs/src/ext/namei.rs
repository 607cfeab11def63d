//! Directories by name: reading and checking directory blocks, lookups (hashed in
//! htree directories), adding, removing and retargeting entries, de-indexing.

use super::*;

/// An edit of one directory block (its bytes, the usable length before any checksum
/// tail): the inode of the entry it changed, if it found it.
type EntryEdit<'a> = dyn FnMut(&mut [u8], usize) -> Result<Option<u32>, FsError> + 'a;

impl<D: BlockDev> Ext<D> {
    /// Reads logical block `lblk` of directory `dir` (checked); `None` for a hole.
    /// Returns the physical block and the usable length (before any tail).
    pub(super) fn dir_block(
        &mut self,
        dir: u32,
        lblk: u64,
    ) -> Result<Option<(u64, usize)>, FsError> {
        let n = self.map_of(dir)?;
        let indexed = n.inode.flags() & FL_INDEX != 0;
        let seed_inode = n.inode.clone();
        let Some((pblk, _, _)) = n.map.as_ref().and_then(|m| m.find(lblk)) else {
            return Ok(None);
        };
        let has_csum = self.sb.has_csum();
        let seed = self.inode_seed(dir, &seed_inode);
        let bs = self.sb.block_size as usize;
        let verified = self.cache.verified(pblk);
        let b = self.cache.get(&mut self.dev, pblk)?;
        if dir::has_tail(b) {
            if has_csum && !verified {
                if !dir::tail_ok(b, seed) {
                    return Err(corrupt(format!(
                        "directory {dir} block {lblk} checksum mismatch"
                    )));
                }
                self.cache.set_verified(pblk);
            }
            return Ok(Some((pblk, bs - dir::TAIL)));
        }
        if has_csum {
            let dx_root = lblk == 0 && indexed;
            let dx_node = get32(b, 0) == 0 && csum::get16(b, 4) as usize == bs.min(65535);
            if !dx_root && !dx_node {
                return Err(corrupt(format!(
                    "directory {dir} block {lblk} has no checksum tail"
                )));
            }
        }
        Ok(Some((pblk, bs)))
    }

    pub(super) fn dir_blocks(&mut self, dir: u32) -> Result<u64, FsError> {
        let bs = self.sb.block_size as u64;
        let max = self.sb.blocks_count;
        let n = self.node(dir)?;
        if n.inode.kind() != FileType::Dir {
            return Err(FsError::NotDir);
        }
        Ok((n.inode.size() / bs).min(max))
    }

    /// Calls `f(name, inode, ftype)` for each entry until it returns true.
    pub(super) fn dir_scan(
        &mut self,
        dir: u32,
        f: &mut dyn FnMut(&[u8], u32, u8) -> bool,
    ) -> Result<(), FsError> {
        let nb = self.dir_blocks(dir)?;
        for lblk in 0..nb {
            let Some((pblk, usable)) = self.dir_block(dir, lblk)? else {
                continue;
            };
            let b = self.cache.get(&mut self.dev, pblk)?;
            let stop = dir::for_each(b, usable, &mut |r| {
                r.inode != 0 && f(r.name(b), r.inode, r.ftype)
            })?;
            if stop {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The htree hash of `name` in indexed directory `dir` whose root block is `root`.
    pub(super) fn dx_hash(&self, root: &[u8], name: &[u8]) -> Option<u32> {
        let mut version = *root.get(0x1C)?;
        if version <= 2 && get32(&self.sb.raw, 0x160) & htree::FLAGS_UNSIGNED_HASH != 0 {
            version += 3;
        }
        let seed = [0, 1, 2, 3].map(|i| get32(&self.sb.raw, 0xEC + 4 * i));
        htree::name_hash(name, version, seed)
    }

    /// Reads index block `lblk` of htree directory `dir` (the root when 0). On
    /// metadata_csum filesystems its `dx_tail` checksum must match (`htree::dx_csum`):
    /// a mismatch is counted, marks the directory's index untrusted (`Node::dx_bad`)
    /// and gives `FsError::Corrupt`. A hole reads as an empty block (no index there).
    pub(super) fn dx_read(&mut self, dir: u32, lblk: u32) -> Result<Vec<u8>, FsError> {
        let Some((pblk, _)) = self.dir_block(dir, lblk as u64)? else {
            return Ok(Vec::new());
        };
        let verified = self.cache.verified(pblk);
        let b = self.cache.get(&mut self.dev, pblk)?.to_vec();
        // A block verified as a leaf (it has a tail) is no index block.
        if !self.sb.has_csum() || (verified && !dir::has_tail(&b)) {
            return Ok(b);
        }
        let seed_inode = self.node(dir)?.inode.clone();
        let seed = self.inode_seed(dir, &seed_inode);
        if !htree::dx_csum_ok(&b, seed) {
            self.stats.dx_csum_errors += 1;
            self.node(dir)?.dx_bad = true;
            return Err(corrupt(format!(
                "directory {dir} index block {lblk} checksum mismatch"
            )));
        }
        self.cache.set_verified(pblk);
        Ok(b)
    }

    /// `r`, or `None` if it failed because the directory's index is untrusted (an
    /// index block failed its checksum): the caller then scans linearly.
    fn dx_unless_untrusted<T>(
        &mut self,
        dir: u32,
        r: Result<T, FsError>,
    ) -> Result<Option<T>, FsError> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(_) if self.node(dir)?.dx_bad => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Refuses to change htree directory `dir` once one of its index blocks failed
    /// its checksum (rewriting it would bless or destroy what it points to).
    pub(super) fn dx_refuse_untrusted(&mut self, dir: u32) -> Result<(), FsError> {
        if self.node(dir)?.dx_bad {
            return Err(corrupt(format!(
                "directory {dir}: htree index fails its checksum, not changing it \
                 (e2fsck -fD rebuilds it)"
            )));
        }
        Ok(())
    }

    /// Most (hash, leaf) pairs of an htree index kept flattened per directory: an
    /// eighth of the mount's budget (the inode cache's 3/8 holds it): 4,096 leaves of
    /// a 256 KiB budget, a directory of some 60,000 names in 1 KiB blocks. A larger
    /// index is followed from the root at each lookup instead, holding one index
    /// block per level.
    pub(super) fn dx_max(&self) -> usize {
        self.budget / 8 / core::mem::size_of::<(u32, u32)>()
    }

    /// For an htree directory, the leaf blocks that can hold `name`; `None` for a
    /// linear directory, an index we cannot follow, or one that fails its checksums.
    pub(super) fn dx_candidates(
        &mut self,
        dir: u32,
        name: &[u8],
    ) -> Result<Option<Vec<u32>>, FsError> {
        let n = self.node(dir)?;
        if n.inode.flags() & FL_INDEX == 0 || n.dx_bad {
            return Ok(None);
        }
        let nb = self.dir_blocks(dir)?;
        let root = self.dx_read(dir, 0);
        let Some(root) = self.dx_unless_untrusted(dir, root)? else {
            return Ok(None);
        };
        let Some(hash) = self.dx_hash(&root, name) else {
            return Ok(None);
        };
        let max = self.dx_max();
        let n = self.node(dir)?;
        if n.dx.is_none() && !n.dx_large {
            let flat = htree::flatten(&root, nb, max, &mut |l| self.dx_read(dir, l));
            match self.dx_unless_untrusted(dir, flat)? {
                None | Some(htree::Flat::Unusable) => return Ok(None),
                Some(htree::Flat::TooLarge) => self.node(dir)?.dx_large = true,
                Some(htree::Flat::Index(flat)) => {
                    self.node_bytes += crate::mem::vec_bytes(&flat);
                    self.node(dir)?.dx = Some(flat);
                }
            }
        }
        let n = self.node(dir)?;
        if let Some(f) = n.dx.as_ref() {
            return Ok(Some(htree::candidate_leaves(f, hash)));
        }
        // Collisions spill into following leaves only rarely; more than 64 of them
        // is no index worth following.
        let leaves = htree::walk_candidates(&root, hash, nb, 64, &mut |l| self.dx_read(dir, l));
        Ok(self.dx_unless_untrusted(dir, leaves)?.flatten())
    }

    pub(super) fn dir_lookup(&mut self, dir: u32, name: &[u8]) -> Result<Option<u32>, FsError> {
        let mut found = None;
        let mut look = |n: &[u8], ino: u32, _: u8| {
            if n == name {
                found = Some(ino);
                true
            } else {
                false
            }
        };
        if name != b"." && name != b".." {
            if let Some(leaves) = self.dx_candidates(dir, name)? {
                for l in leaves {
                    let Some((pblk, usable)) = self.dir_block(dir, l as u64)? else {
                        continue;
                    };
                    let b = self.cache.get(&mut self.dev, pblk)?;
                    if dir::for_each(b, usable, &mut |r| {
                        r.inode != 0 && look(r.name(b), r.inode, r.ftype)
                    })? {
                        break;
                    }
                }
                return self.check_found(dir, found);
            }
        }
        self.dir_scan(dir, &mut look)?;
        self.check_found(dir, found)
    }

    pub(super) fn check_found(&self, dir: u32, found: Option<u32>) -> Result<Option<u32>, FsError> {
        if let Some(i) = found {
            if i == 0 || i > self.sb.inodes_count {
                return Err(corrupt(format!("directory {dir}: entry with inode {i}")));
            }
        }
        Ok(found)
    }

    pub(super) fn touch_dir(&mut self, dir: u32) -> Result<(), FsError> {
        let now = self.now();
        let n = self.node(dir)?;
        n.inode.set_mtime(now);
        n.inode.set_ctime(now);
        n.dirty = true;
        Ok(())
    }

    /// Rewrites an htree directory as a linear one (see [`htree`]). Every index block
    /// is read (and, under metadata_csum, verified) before anything is written; only
    /// blocks shaped like interior index nodes are emptied, so an index pointing at a
    /// leaf never costs its names.
    pub(super) fn deindex(&mut self, dir: u32) -> Result<(), FsError> {
        let empty = self.dx_interior(dir)?;
        let Some((root_p, _)) = self.dir_block(dir, 0)? else {
            return Err(corrupt(format!("directory {dir}: no block 0")));
        };
        let parent = get32(self.cache.get(&mut self.dev, root_p)?, 12);
        let csum = self.sb.has_csum();
        let bs = self.sb.block_size as usize;
        let usable = if csum { bs - dir::TAIL } else { bs };
        let n = self.node(dir)?;
        let seed_inode = n.inode.clone();
        let seed = self.inode_seed(dir, &seed_inode);
        {
            let b = self.cache.get_mut(&mut self.dev, root_p)?;
            dir::init_empty(b, usable);
            dir::write_rec(b, 0, dir, 12, b".", 2);
            dir::write_rec(b, 12, parent, usable - 12, b"..", 2);
            if csum {
                dir::set_tail(b, seed);
            }
        }
        for l in empty {
            let p = self
                .map_of(dir)?
                .map
                .as_ref()
                .and_then(|m| m.find(l as u64));
            if let Some((p, _, _)) = p {
                let b = self.cache.get_mut(&mut self.dev, p)?;
                dir::init_empty(b, usable);
                if csum {
                    dir::set_tail(b, seed);
                }
            }
        }
        let n = self.node(dir)?;
        let f = n.inode.flags() & !FL_INDEX;
        n.inode.set_flags(f);
        n.dx = None;
        n.dx_large = false;
        n.dirty = true;
        Ok(())
    }

    /// Points the ".." of htree directory `dir` at `parent` in its root block and
    /// seals the root's `dx_tail` again (the root is read, and verified, first).
    /// Returns false, changing nothing, when the root is not shaped as one.
    pub(super) fn dx_set_dotdot(&mut self, dir: u32, parent: u32) -> Result<bool, FsError> {
        self.dx_refuse_untrusted(dir)?;
        let root = self.dx_read(dir, 0)?;
        if htree::countlimit_offset(&root) != Some(0x20) || root.get(18) != Some(&2) {
            return Ok(false);
        }
        let Some((pblk, _)) = self.dir_block(dir, 0)? else {
            return Ok(false);
        };
        let seed_inode = self.node(dir)?.inode.clone();
        let seed = self.inode_seed(dir, &seed_inode);
        let csum = self.sb.has_csum();
        if csum && htree::dx_csum(&root, seed).is_none() {
            return Ok(false);
        }
        let b = self.cache.get_mut(&mut self.dev, pblk)?;
        put32(b, 12, parent);
        if csum {
            if let Some((tail, c)) = htree::dx_csum(b, seed) {
                put32(b, tail + 4, c);
            }
        }
        Ok(true)
    }

    /// The interior index blocks of htree directory `dir` that `deindex` empties: read,
    /// with the root, and (under metadata_csum) verified; only blocks shaped like
    /// interior nodes. Fails, before anything is changed, if the index is untrusted.
    pub(super) fn dx_interior(&mut self, dir: u32) -> Result<Vec<u32>, FsError> {
        self.dx_refuse_untrusted(dir)?;
        let nb = self.dir_blocks(dir)?;
        let root = self.dx_read(dir, 0)?;
        let mut nodes = htree::index_nodes(&root, &mut |l| self.dx_read(dir, l))?;
        nodes.retain(|&l| l != 0 && (l as u64) < nb);
        let mut interior = Vec::with_capacity(nodes.len());
        for l in nodes {
            if htree::countlimit_offset(&self.dx_read(dir, l)?) == Some(8) {
                interior.push(l);
            }
        }
        Ok(interior)
    }

    /// Adds `name` to htree directory `dir` as Linux's `ext4_dx_add_entry`: into the
    /// leaf its hash selects; a full leaf is split (the upper half of its hashes
    /// moves to a new leaf, whose start hash goes into the index after the old one's,
    /// with the continuation bit when a hash spans both); a full index node is split
    /// first (its upper half to a new node, entered in its parent), and a full root
    /// gets a level below it, up to 2 index levels (3 with `large_dir`); past that
    /// the directory is full: ENOSPC, as Linux. The blocks all this needs are
    /// counted, and refused with ENOSPC, before anything changes; each step leaves
    /// a valid index. Returns false, changing nothing, for an index it does not
    /// follow (then the caller de-indexes).
    pub(super) fn htree_insert(
        &mut self,
        dir: u32,
        name: &[u8],
        ino: u32,
        ftype: u8,
    ) -> Result<bool, FsError> {
        self.dx_refuse_untrusted(dir)?;
        let bs = self.sb.block_size as usize;
        let csum = self.sb.has_csum();
        let seed_inode = self.node(dir)?.inode.clone();
        let iseed = self.inode_seed(dir, &seed_inode);
        let max_levels = if self.sb.incompat & INCOMPAT_LARGEDIR != 0 {
            3
        } else {
            2
        };
        let mut root = self.dx_read(dir, 0)?;
        let Some(hash) = self.dx_hash(&root, name) else {
            return Ok(false);
        };
        let mut room_checked = false;
        // A split makes room for any name (a leaf is at most half full after it);
        // growing the index takes one step per level: more rounds is a bad index.
        for _ in 0..8 {
            let nb = self.dir_blocks(dir)?;
            let path = htree::find_path(&root, hash, nb, &mut |l| self.dx_read(dir, l))?;
            let Some((frames, leaf)) = path else {
                return Ok(false);
            };
            let Some((pblk, usable)) = self.dir_block(dir, leaf as u64)? else {
                return Ok(false);
            };
            if csum && usable == bs {
                return Ok(false); // an index block where a leaf should be
            }
            let mut b = self.cache.get(&mut self.dev, pblk)?.to_vec();
            if dir::try_insert(&mut b, usable, name, ino, ftype)? {
                if csum {
                    dir::set_tail(&mut b, iseed);
                }
                self.cache.get_mut(&mut self.dev, pblk)?.copy_from_slice(&b);
                self.touch_dir(dir)?;
                return Ok(true);
            }
            // Every index block on the path must be one we can rewrite.
            let mut nodes = Vec::with_capacity(frames.len());
            for f in &frames {
                let blk = if f.lblk == 0 {
                    root.clone()
                } else {
                    self.dx_read(dir, f.lblk)?
                };
                if csum && htree::dx_csum(&blk, iseed).is_none() {
                    return Ok(false);
                }
                nodes.push(blk);
            }
            let full = frames.iter().rev().take_while(|f| f.full()).count();
            if full == frames.len() && frames.len() >= max_levels {
                return Err(FsError::NoSpace); // "Directory index full!"
            }
            if !room_checked {
                self.dir_room(dir, nb, 1 + full as u64)?;
                room_checked = true;
            }
            if full == frames.len() {
                // A level below the root: its entries move to a new node.
                let count = frames[0].count;
                let (lblk, p) = self.dir_append(dir)?;
                let mut node = vec![0u8; bs];
                htree::init_node(&mut node, csum);
                node[8..8 + 8 * count].copy_from_slice(&root[0x20..0x20 + 8 * count]);
                csum::put16(&mut node, 8, htree::node_limit(bs, csum) as u16);
                htree::set_count(&mut node, 8, count);
                if csum {
                    htree::seal(&mut node, iseed);
                }
                self.cache.get_mut(&mut self.dev, p)?.copy_from_slice(&node);
                htree::set_count(&mut root, 0x20, 1);
                put32(&mut root, 0x24, lblk);
                root[0x1E] += 1;
                self.dx_write(dir, 0, &mut root, iseed)?;
            } else if full > 0 {
                // Split the highest full node; its parent has room.
                let k = frames.len() - full;
                let f = frames[k];
                let (c1, c2) = (f.count / 2, f.count - f.count / 2);
                let mut old = core::mem::take(&mut nodes[k]);
                let hash2 = get32(&old, 8 + 8 * c1);
                let (lblk, p) = self.dir_append(dir)?;
                let mut node = vec![0u8; bs];
                htree::init_node(&mut node, csum);
                node[8..8 + 8 * c2].copy_from_slice(&old[8 + 8 * c1..8 + 8 * f.count]);
                csum::put16(&mut node, 8, htree::node_limit(bs, csum) as u16);
                htree::set_count(&mut node, 8, c2);
                if csum {
                    htree::seal(&mut node, iseed);
                }
                self.cache.get_mut(&mut self.dev, p)?.copy_from_slice(&node);
                htree::set_count(&mut old, 8, c1);
                self.dx_write(dir, f.lblk, &mut old, iseed)?;
                let pf = frames[k - 1];
                let mut parent = core::mem::take(&mut nodes[k - 1]);
                htree::insert_entry(&mut parent, pf.at, pf.idx + 1, hash2, lblk);
                self.dx_write(dir, pf.lblk, &mut parent, iseed)?;
                if pf.lblk == 0 {
                    root = parent;
                }
            } else {
                // Split the leaf.
                let mut recs = Vec::new();
                for r in dir::records(&b, usable)? {
                    if r.inode == 0 {
                        continue;
                    }
                    let Some(h) = self.dx_hash(&root, r.name(&b)) else {
                        return Ok(false);
                    };
                    recs.push((h, r.off, dir::rec_len_for(r.name_len)));
                }
                let Some(split) = htree::split_leaf(recs, bs) else {
                    return Ok(false);
                };
                let low: Vec<usize> = split.low.iter().map(|&(_, o)| o).collect();
                let high: Vec<usize> = split.high.iter().map(|&(_, o)| o).collect();
                let (lblk, p) = self.dir_append(dir)?;
                let mut nb2 = vec![0u8; bs];
                dir::pack(&mut nb2, usable, &b, &high);
                let mut nb1 = vec![0u8; bs];
                dir::pack(&mut nb1, usable, &b, &low);
                if csum {
                    dir::set_tail(&mut nb1, iseed);
                    dir::set_tail(&mut nb2, iseed);
                }
                self.cache.get_mut(&mut self.dev, p)?.copy_from_slice(&nb2);
                self.cache
                    .get_mut(&mut self.dev, pblk)?
                    .copy_from_slice(&nb1);
                let f = frames[frames.len() - 1];
                let mut parent = nodes.pop().unwrap_or_default();
                htree::insert_entry(&mut parent, f.at, f.idx + 1, split.hash2, lblk);
                self.dx_write(dir, f.lblk, &mut parent, iseed)?;
                if f.lblk == 0 {
                    root = parent;
                }
            }
            let n = self.node(dir)?;
            n.dx = None;
            n.dx_large = false;
        }
        Ok(false)
    }

    /// Writes index block `lblk` of `dir` (read and checked before), sealing its
    /// `dx_tail` under metadata_csum.
    fn dx_write(&mut self, dir: u32, lblk: u32, b: &mut [u8], seed: u32) -> Result<(), FsError> {
        if self.sb.has_csum() {
            htree::seal(b, seed);
        }
        let Some((p, _)) = self.dir_block(dir, lblk as u64)? else {
            return Err(corrupt(format!(
                "directory {dir}: index block {lblk} is a hole"
            )));
        };
        let dst = self.cache.get_mut(&mut self.dev, p)?;
        if dst.len() != b.len() {
            return Err(corrupt(format!("directory {dir}: index block {lblk}")));
        }
        dst.copy_from_slice(b);
        Ok(())
    }

    /// Fails with ENOSPC unless directory `dir` of `nb` blocks can grow by `n`
    /// blocks (checked before a change that needs them, so none is half done).
    fn dir_room(&mut self, dir: u32, nb: u64, n: u64) -> Result<(), FsError> {
        let bs = self.sb.block_size as usize;
        let is_ext = self.node(dir)?.inode.flags() & FL_EXTENTS != 0;
        if !is_ext && nb + n > blockmap::max_blocks(bs) || nb + n > 0x0FFF_FFFF {
            return Err(FsError::NoSpace);
        }
        if self.free_blocks.saturating_sub(self.reserved) < self.resv_blocks() / 2 + n + 1 {
            return Err(FsError::NoSpace);
        }
        Ok(())
    }

    /// Adds a block at the end of directory `dir` (its contents zero, for the caller
    /// to fill): its logical and physical block.
    fn dir_append(&mut self, dir: u32) -> Result<(u32, u64), FsError> {
        let nb = self.dir_blocks(dir)?;
        let bs = self.sb.block_size as usize;
        let is_ext = self.node(dir)?.inode.flags() & FL_EXTENTS != 0;
        if !is_ext && nb >= blockmap::max_blocks(bs) || nb >= 0x0FFF_FFFF {
            return Err(FsError::NoSpace);
        }
        let goal = {
            let g = self.group_start(self.group_of(dir));
            self.map_of(dir)?
                .map
                .as_ref()
                .and_then(|m| m.goal_for(nb))
                .unwrap_or(g)
        };
        let p = self.alloc_new_block(goal)?;
        self.cache.get_new(&mut self.dev, p)?.fill(0);
        let n = self.map_of(dir)?;
        if let Some(m) = n.map.as_mut() {
            m.insert(nb, p, 1);
        }
        n.map_dirty = true;
        n.inode.set_size((nb + 1) * bs as u64);
        n.dirty = true;
        Ok((nb as u32, p))
    }

    /// Makes linear directory `dir` of one full block indexed, as Linux's
    /// `make_indexed_dir`: its names move to a new block 1 and block 0 becomes a dx
    /// root pointing at it (the caller then inserts through the index, splitting
    /// block 1 if need be). Returns false, changing nothing, when the filesystem
    /// does not index directories (no `dir_index`, a hash we do not compute) or block
    /// 0 does not start with "." and "..".
    fn make_indexed(&mut self, dir: u32) -> Result<bool, FsError> {
        let version = self.sb.raw.get(0xFC).copied().unwrap_or(0xFF);
        let flags = self.node(dir)?.inode.flags();
        // EXT4_ENCRYPT_FL, EXT4_CASEFOLD_FL: names hashed otherwise.
        if self.sb.compat & COMPAT_DIR_INDEX == 0
            || version > 2
            || flags & (0x800 | 0x4000_0000 | FL_INLINE_DATA) != 0
        {
            return Ok(false);
        }
        let Some((p0, usable0)) = self.dir_block(dir, 0)? else {
            return Ok(false);
        };
        let b0 = self.cache.get(&mut self.dev, p0)?.to_vec();
        let recs = dir::records(&b0, usable0)?;
        if recs.len() < 2
            || recs[0].name(&b0) != b"."
            || recs[0].rec_len != 12
            || recs[1].name(&b0) != b".."
            || recs[1].off != 12
        {
            return Ok(false);
        }
        let parent = recs[1].inode;
        let live: Vec<usize> = recs[2..]
            .iter()
            .filter(|r| r.inode != 0)
            .map(|r| r.off)
            .collect();
        // Block 1 now, a split of it next.
        self.dir_room(dir, 1, 2)?;
        let csum = self.sb.has_csum();
        let bs = self.sb.block_size as usize;
        let usable = if csum { bs - dir::TAIL } else { bs };
        let seed_inode = self.node(dir)?.inode.clone();
        let seed = self.inode_seed(dir, &seed_inode);
        let (lblk, p1) = self.dir_append(dir)?;
        let mut b1 = vec![0u8; bs];
        dir::pack(&mut b1, usable, &b0, &live);
        if csum {
            dir::set_tail(&mut b1, seed);
        }
        self.cache.get_mut(&mut self.dev, p1)?.copy_from_slice(&b1);
        let mut root = vec![0u8; bs];
        htree::init_root(&mut root, dir, parent, version, lblk, csum);
        root[7] = recs[0].ftype;
        root[19] = recs[1].ftype;
        if csum {
            htree::seal(&mut root, seed);
        }
        self.cache
            .get_mut(&mut self.dev, p0)?
            .copy_from_slice(&root);
        let n = self.node(dir)?;
        n.inode.set_flags(flags | FL_INDEX);
        n.dx = None;
        n.dx_large = false;
        n.dirty = true;
        Ok(true)
    }

    pub(super) fn add_entry(
        &mut self,
        dir: u32,
        name: &[u8],
        ino: u32,
        ftype: u8,
    ) -> Result<(), FsError> {
        let ftype = if self.sb.incompat & INCOMPAT_FILETYPE != 0 {
            ftype
        } else {
            0
        };
        if self.node(dir)?.inode.flags() & FL_INDEX != 0 {
            if self.htree_insert(dir, name, ino, ftype)? {
                return Ok(());
            }
            self.deindex(dir)?;
        }
        let nb = self.dir_blocks(dir)?;
        let seed_inode = self.node(dir)?.inode.clone();
        let seed = self.inode_seed(dir, &seed_inode);
        let csum = self.sb.has_csum();
        for lblk in 0..nb {
            let Some((pblk, usable)) = self.dir_block(dir, lblk)? else {
                continue;
            };
            let b = self.cache.get_mut(&mut self.dev, pblk)?;
            if dir::try_insert(b, usable, name, ino, ftype)? {
                if csum {
                    dir::set_tail(b, seed);
                }
                return self.touch_dir(dir);
            }
        }
        // A directory of one full block is indexed (Linux `make_indexed_dir`).
        if nb == 1 && self.make_indexed(dir)? {
            if self.htree_insert(dir, name, ino, ftype)? {
                return Ok(());
            }
            self.deindex(dir)?;
            return self.add_entry(dir, name, ino, ftype);
        }
        // A new block at the end.
        let bs = self.sb.block_size as usize;
        let (_, p) = self.dir_append(dir)?;
        let usable = if csum { bs - dir::TAIL } else { bs };
        {
            let b = self.cache.get_mut(&mut self.dev, p)?;
            dir::init_empty(b, usable);
            dir::try_insert(b, usable, name, ino, ftype)?;
            if csum {
                dir::set_tail(b, seed);
            }
        }
        self.touch_dir(dir)
    }

    /// The blocks of `dir` in the order to look for `name`: the htree leaves its hash
    /// selects first (if indexed), then all blocks.
    /// An iterator, not a list: a directory's size comes from the disk, and a list
    /// of every block number cost 8 bytes a block on each unlink and rename (8 MiB
    /// for a sparse directory on a hostile 1 GiB disk).
    pub(super) fn search_order(
        &mut self,
        dir: u32,
        name: &[u8],
        nb: u64,
    ) -> Result<impl Iterator<Item = u64>, FsError> {
        let first: Vec<u64> = self
            .dx_candidates(dir, name)?
            .unwrap_or_default()
            .into_iter()
            .map(u64::from)
            .collect();
        let rest = first.clone();
        Ok(first
            .into_iter()
            .chain((0..nb).filter(move |b| !rest.contains(b))))
    }

    pub(super) fn remove_entry(&mut self, dir: u32, name: &[u8]) -> Result<u32, FsError> {
        self.edit_entry(dir, name, &mut |b, usable| dir::remove(b, usable, name))
    }

    pub(super) fn retarget_entry(
        &mut self,
        dir: u32,
        name: &[u8],
        ino: u32,
        ftype: u8,
    ) -> Result<u32, FsError> {
        let ftype = if self.sb.incompat & INCOMPAT_FILETYPE != 0 {
            ftype
        } else {
            0
        };
        self.edit_entry(dir, name, &mut |b, usable| {
            dir::retarget(b, usable, name, ino, ftype)
        })
    }

    /// Finds the block of directory `dir` that holds `name` and applies `edit` to it
    /// (which returns the inode the entry named, if it changed it); then reseals the
    /// block's checksum tail and touches the directory.
    fn edit_entry(
        &mut self,
        dir: u32,
        name: &[u8],
        edit: &mut EntryEdit<'_>,
    ) -> Result<u32, FsError> {
        let nb = self.dir_blocks(dir)?;
        let seed_inode = self.node(dir)?.inode.clone();
        let seed = self.inode_seed(dir, &seed_inode);
        let csum = self.sb.has_csum();
        let order = self.search_order(dir, name, nb)?;
        self.dx_refuse_untrusted(dir)?;
        for lblk in order {
            let Some((pblk, usable)) = self.dir_block(dir, lblk)? else {
                continue;
            };
            let b = self.cache.get(&mut self.dev, pblk)?;
            let present = dir::for_each(b, usable, &mut |r| r.inode != 0 && r.name(b) == name)?;
            if !present {
                continue;
            }
            let b = self.cache.get_mut(&mut self.dev, pblk)?;
            if let Some(ino) = edit(b, usable)? {
                if csum && usable < b.len() {
                    dir::set_tail(b, seed);
                }
                self.touch_dir(dir)?;
                return Ok(ino);
            }
        }
        Err(FsError::NotFound)
    }

    pub(super) fn dir_is_empty(&mut self, dir: u32) -> Result<bool, FsError> {
        let mut empty = true;
        self.dir_scan(dir, &mut |n, _, _| {
            if n != b"." && n != b".." {
                empty = false;
                true
            } else {
                false
            }
        })?;
        Ok(empty)
    }
}
