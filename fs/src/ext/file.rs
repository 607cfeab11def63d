//! Regular-file data: buffered (delayed-allocation) writes, reads, truncation, and
//! writing the data and the block map back.

use super::*;

impl<D: BlockDev> Ext<D> {
    pub(super) fn max_lblk(&self, inode: &Inode) -> u64 {
        if inode.flags() & FL_EXTENTS != 0 {
            1 << 32
        } else {
            blockmap::max_blocks(self.sb.block_size as usize)
        }
    }

    /// Allocates and writes out the buffered data of `ino`.
    pub(super) fn flush_data(&mut self, ino: u32) -> Result<(), FsError> {
        if self.nodes.get(&ino).is_none_or(|n| n.pending.is_empty()) {
            return Ok(());
        }
        self.ensure_map(ino)?;
        let mut n = self.take(ino)?;
        let r = self.flush_node(ino, &mut n);
        self.put(ino, n);
        if self.unflushed_full() {
            self.settle_data()?;
        }
        r
    }

    pub(super) fn flush_node(&mut self, ino: u32, n: &mut Node) -> Result<(), FsError> {
        let mut pending = core::mem::take(&mut n.pending);
        let bs = self.sb.block_size as u64;
        let max_io = self.max_io;
        let mut run_start = 0u64;
        // The run buffer is the one large allocation here: fallible (the data stays
        // buffered and the caller gets ENOMEM), and never grown past what it got.
        let mut run: Vec<u8> = Vec::new();
        if run
            .try_reserve_exact((pending.len() * bs as usize).min(max_io).max(bs as usize))
            .is_err()
        {
            n.pending = pending;
            return Err(FsError::NoMemory);
        }
        let max_io = run.capacity() / bs as usize * bs as usize;
        let mut map = n.map.take().unwrap_or_default();
        // (logical, physical, unwritten before) of each block in the run.
        let mut run_keys: Vec<(u64, u64, bool)> = Vec::new();
        let mut result = Ok(());
        let keys: Vec<u64> = pending.keys().copied().collect();
        let mut idx = 0;
        let fallback_goal = self.group_start(self.group_of(ino));
        loop {
            // Where the next buffered block goes (allocating a run if it has no home).
            let next = match keys.get(idx) {
                None => None,
                Some(&lblk) => match map.find(lblk) {
                    // An unwritten block stays so until its write is accepted
                    // (unwritten.rs).
                    Some((p, uninit, _)) => Some((lblk, p, uninit)),
                    None => {
                        let mut want = 1u32;
                        while (idx + want as usize) < keys.len()
                            && keys[idx + want as usize] == lblk + want as u64
                            && want < extent::MAX_INIT_LEN
                            && map.find(lblk + want as u64).is_none()
                        {
                            want += 1;
                        }
                        let goal = map.goal_for(lblk).unwrap_or(fallback_goal);
                        match self.alloc_blocks(goal, want) {
                            Ok((p, got)) => {
                                // Unwritten until its data is on the disk
                                // (unwritten.rs).
                                map.insert_unwritten(lblk, p, got);
                                self.reserved = self.reserved.saturating_sub(got as u64);
                                n.map_dirty = true;
                                for k in lblk..lblk + got as u64 {
                                    if let Some(b) = pending.get_mut(&k) {
                                        b.reserved = false;
                                    }
                                }
                                Some((lblk, p, true))
                            }
                            Err(e) => {
                                result = Err(e);
                                None
                            }
                        }
                    }
                },
            };
            // Write the run out when the next block does not extend it (or at the end).
            let extends = next.is_some_and(|(_, p, _)| {
                !run.is_empty() && p == run_start + run.len() as u64 / bs && run.len() < max_io
            });
            if !extends && !run.is_empty() {
                if let Err(e) = self.dev.write(run_start * bs, &run) {
                    result = Err(e.into());
                    break;
                }
                self.stats.data_writes += 1;
                self.stats.data_bytes += run.len() as u64;
                self.note_data_out(ino); // wberr.rs
                                         // The unwritten blocks written, in logically contiguous pieces.
                let mut i = 0;
                while i < run_keys.len() {
                    let (l, p, was_uninit) = run_keys[i];
                    let mut j = i + 1;
                    while j < run_keys.len()
                        && run_keys[j].2 == was_uninit
                        && run_keys[j].0 == l + (j - i) as u64
                    {
                        j += 1;
                    }
                    if was_uninit {
                        self.note_written(ino, &mut map, l, p, (j - i) as u64);
                        n.map_dirty = true;
                    }
                    i = j;
                }
                for (k, _, _) in run_keys.drain(..) {
                    if let Some(b) = pending.remove(&k) {
                        self.pending_bytes = self.pending_bytes.saturating_sub(b.data.len());
                    }
                }
                run.clear();
            }
            let Some((lblk, p, was_uninit)) = next else {
                break;
            };
            if run.is_empty() {
                run_start = p;
            }
            if let Some(b) = pending.get(&lblk) {
                run.extend_from_slice(&b.data);
            }
            run_keys.push((lblk, p, was_uninit));
            idx += 1;
        }
        // Whatever was not written (an I/O error, or no space) stays buffered: a later
        // sync retries, and truncate or unlink drops it.
        n.pending = pending;
        // i_blocks as it will be (the tree blocks are recounted at sync).
        let acl = u64::from(n.inode.file_acl() != 0);
        n.inode
            .set_blocks_512((map.data_blocks() + map.meta.len() as u64 + acl) * (bs / 512));
        n.dirty = true;
        n.map = Some(map);
        result
    }

    pub(super) fn flush_all_data(&mut self) -> Result<(), FsError> {
        let inos: Vec<u32> = self
            .nodes
            .iter()
            .filter(|(_, n)| !n.pending.is_empty())
            .map(|(k, _)| *k)
            .collect();
        for i in inos {
            self.flush_data(i)?;
        }
        Ok(())
    }

    /// Rewrites the on-disk tree of `ino` from its map if it changed.
    pub(super) fn sync_map(&mut self, ino: u32) -> Result<(), FsError> {
        if !self.nodes.get(&ino).is_some_and(|n| n.map_dirty) {
            return Ok(());
        }
        let mut n = self.take(ino)?;
        let r = self.store_map(ino, &mut n);
        self.put(ino, n);
        r
    }

    /// `count` newly allocated blocks for a tree (from `meta_goal` on), or `None`
    /// if the disk does not have them (what was taken is given back).
    fn fresh_tree_blocks(&mut self, count: usize) -> Option<Vec<u64>> {
        let mut got = Vec::new();
        if got.try_reserve_exact(count).is_err() {
            return None;
        }
        for _ in 0..count {
            match self.alloc_blocks(self.meta_goal, 1) {
                Ok((b, _)) => {
                    self.meta_goal = b + 1;
                    got.push(b);
                }
                Err(_) => {
                    for b in got {
                        let _ = self.free_blocks_range(b, 1);
                    }
                    return None;
                }
            }
        }
        Some(got)
    }

    pub(super) fn store_map(&mut self, ino: u32, n: &mut Node) -> Result<(), FsError> {
        let Some(map) = n.map.as_mut() else {
            return Ok(());
        };
        let ctx = self.tree_ctx(ino, &n.inode);
        let extents = n.inode.flags() & FL_EXTENTS != 0;
        self.meta_goal = map
            .ext
            .first()
            .map(|e| e.pblk)
            .unwrap_or_else(|| self.group_start(self.group_of(ino)));
        let old = core::mem::take(&mut map.meta);
        // Without a journal an extent tree goes to new blocks (issue 30, defect 7):
        // written in the first ordered phase, flushed before the inode that points
        // to them, while the old tree the inode on disk points to stays whole until
        // then (its blocks are freed with this sync, reused only by a later one). A
        // disk too full for a second tree rewrites it in place, as before.
        let fresh = if extents && !self.journalled() && !old.is_empty() {
            self.fresh_tree_blocks(extent::tree_blocks(map.ext.len(), ctx.bs))
        } else {
            None
        };
        let moved = fresh.is_some();
        self.pool = fresh.unwrap_or_else(|| old.clone());
        self.pool.sort_unstable_by(|a, b| b.cmp(a));
        let mut ib = [0u8; 60];
        let r = if extents {
            extent::store(&map.ext, &mut ib, &ctx, self)
        } else {
            blockmap::store(map, &mut ib, &ctx, self)
        };
        let mut leftover = core::mem::take(&mut self.pool);
        if moved {
            // The old tree is no longer this inode's once the new one is written.
            leftover.extend_from_slice(&old);
        }
        let used = match r {
            Ok(u) => u,
            Err(e) => {
                // Keep what the tree still owns; the old tree is gone.
                map.meta = leftover;
                return Err(e);
            }
        };
        for b in leftover {
            self.free_blocks_range(b, 1)?;
        }
        n.inode.i_block_mut().copy_from_slice(&ib);
        let bs = self.sb.block_size as u64;
        let acl = u64::from(n.inode.file_acl() != 0);
        let total = map.data_blocks() + used.len() as u64 + acl;
        map.meta = used;
        n.inode.set_blocks_512(total * (bs / 512));
        n.map_dirty = false;
        n.dirty = true;
        Ok(())
    }

    pub(super) fn read_file(
        &mut self,
        ino: u32,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<usize, FsError> {
        let n = self.node(ino)?;
        let size = n.inode.size();
        match n.inode.kind() {
            FileType::Dir => return Err(FsError::IsDir),
            FileType::Special => return Err(FsError::Invalid("special file")),
            FileType::Symlink if !Self::has_map(&n.inode) => {
                let n = self.node(ino)?;
                let ib = n.inode.i_block();
                let size = (size as usize).min(ib.len());
                if offset >= size as u64 {
                    return Ok(0);
                }
                let src = &ib[offset as usize..size];
                let k = src.len().min(buf.len());
                buf[..k].copy_from_slice(&src[..k]);
                return Ok(k);
            }
            _ => {}
        }
        if offset >= size {
            return Ok(0);
        }
        let total = (buf.len() as u64).min(size - offset) as usize;
        self.ensure_map(ino)?;
        let n = self.node(ino)?;
        if n.inode.kind() == FileType::Symlink {
            // A slow symlink: one block, through the metadata cache that wrote it.
            let Some((p, _, _)) = n.map.as_ref().and_then(|m| m.find(0)) else {
                return Err(corrupt(format!("symlink {ino} has no block")));
            };
            let b = self.cache.get(&mut self.dev, p)?;
            let end = (offset as usize + total).min(b.len());
            let src = b.get(offset as usize..end).unwrap_or(&[]);
            buf[..src.len()].copy_from_slice(src);
            return Ok(src.len());
        }
        let bs = self.sb.block_size as u64;
        let max_io = self.max_io as u64;
        let mut done = 0usize;
        while done < total {
            let pos = offset + done as u64;
            let lblk = pos / bs;
            let boff = (pos % bs) as usize;
            let n = self.node(ino)?;
            if let Some(p) = n.pending.get(&lblk) {
                let k = (bs as usize - boff).min(total - done);
                buf[done..done + k].copy_from_slice(&p.data[boff..boff + k]);
                done += k;
                continue;
            }
            let map = n.map.as_ref();
            match map.and_then(|m| m.find(lblk)) {
                Some((pblk, false, left)) => {
                    // Read a physically contiguous run (stopping at buffered blocks).
                    let want_blocks = ((boff + total - done) as u64).div_ceil(bs);
                    let mut nblk = left.min(want_blocks).min(max_io / bs).max(1);
                    if let Some((&k, _)) = n.pending.range(lblk + 1..).next() {
                        nblk = nblk.min(k - lblk);
                    }
                    let bytes = (nblk * bs) as usize;
                    if boff == 0 && bytes <= total - done {
                        // Whole blocks: straight into the caller's buffer.
                        self.dev.read(pblk * bs, &mut buf[done..done + bytes])?;
                        done += bytes;
                        continue;
                    }
                    let mut tmp = vec![0u8; bytes];
                    self.dev.read(pblk * bs, &mut tmp)?;
                    let k = (tmp.len() - boff).min(total - done);
                    buf[done..done + k].copy_from_slice(&tmp[boff..boff + k]);
                    done += k;
                }
                other => {
                    // A hole or an uninitialised extent: zeros up to the next mapping.
                    let next = match other {
                        Some((_, _, left)) => lblk + left,
                        None => map
                            .and_then(|m| m.next_mapped(lblk + 1))
                            .unwrap_or(u64::MAX),
                    };
                    let next = match n.pending.range(lblk + 1..).next() {
                        Some((&k, _)) => next.min(k),
                        None => next,
                    };
                    let span = next
                        .saturating_sub(lblk)
                        .saturating_mul(bs)
                        .saturating_sub(boff as u64);
                    let k = (span.min((total - done) as u64) as usize).max(1);
                    buf[done..done + k].fill(0);
                    done += k;
                }
            }
        }
        Ok(total)
    }

    /// The node of regular file `ino` (a directory is `IsDir`, anything else not a
    /// regular file).
    fn file_node(&mut self, ino: u32) -> Result<&mut Node, FsError> {
        let n = self.node(ino)?;
        match n.inode.kind() {
            FileType::File => Ok(n),
            FileType::Dir => Err(FsError::IsDir),
            _ => Err(FsError::Invalid("not a regular file")),
        }
    }

    pub(super) fn write_file(
        &mut self,
        ino: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<usize, FsError> {
        let now = self.now();
        self.file_node(ino)?;
        if data.is_empty() {
            return Ok(0);
        }
        let bs = self.sb.block_size as u64;
        let inode = self.node(ino)?.inode.clone();
        let max = self.max_lblk(&inode).saturating_mul(bs);
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or(FsError::TooBig)?;
        if end > max {
            return Err(FsError::TooBig);
        }
        self.ensure_map(ino)?;
        let per = bs / 4;
        let mut done = 0usize;
        let mut err = None;
        let mut restart_failed = false;
        let mut direct = true;
        while done < data.len() {
            let pos = offset + done as u64;
            let lblk = pos / bs;
            let boff = (pos % bs) as usize;
            // Large whole-block parts into a hole go straight out (direct.rs).
            let whole = (data.len() - done) / bs as usize * bs as usize;
            if direct && boff == 0 && whole >= direct::DIRECT_MIN {
                match self.write_direct(ino, pos, &data[done..done + whole]) {
                    Ok(0) => direct = false,
                    Ok(k) => {
                        done += k;
                        continue;
                    }
                    Err(e) => {
                        err = Some(e);
                        break;
                    }
                }
            }
            let k = (bs as usize - boff).min(data.len() - done);
            let n = self.nodes.get_mut(&ino).ok_or(FsError::NotFound)?;
            let mut copied = false;
            if !n.pending.contains_key(&lblk) {
                let mapped = n.map.as_ref().and_then(|m| m.find(lblk));
                let reserved = mapped.is_none();
                if reserved {
                    // File data never takes the metadata reserve (issue 30).
                    let need = self.reserved + 1 + self.reserved / per + self.resv_blocks();
                    if self.free_blocks < need {
                        err = Some(FsError::NoSpace);
                        break;
                    }
                }
                // A whole block is taken from the caller as it is (no zero fill,
                // one copy); a part goes into zeros or what the disk holds.
                let whole = k == bs as usize;
                let mut blk = if whole {
                    data[done..done + k].to_vec()
                } else {
                    vec![0u8; bs as usize]
                };
                if !whole {
                    if let Some((p, false, _)) = mapped {
                        // A read error ends the write here: what was buffered
                        // before it counts (its size is recorded below).
                        if let Err(e) = self.dev.read(p * bs, &mut blk) {
                            err = Some(e.into());
                            break;
                        }
                    }
                }
                if reserved {
                    self.reserved += 1;
                }
                self.pending_bytes += bs as usize;
                let n = self.nodes.get_mut(&ino).ok_or(FsError::NotFound)?;
                n.pending.insert(
                    lblk,
                    PBlock {
                        data: blk,
                        reserved,
                    },
                );
                copied = whole;
            }
            if !copied {
                let n = self.nodes.get_mut(&ino).ok_or(FsError::NotFound)?;
                if let Some(p) = n.pending.get_mut(&lblk) {
                    p.data[boff..boff + k].copy_from_slice(&data[done..done + k]);
                }
            }
            done += k;
            // A long call goes out (and commits) in pieces (restart.rs). If that
            // fails, the rest is buffered as before and the write-out at the end
            // reports it (an abort ends the call).
            if self.pending_bytes >= self.flush_bytes && done < data.len() && !restart_failed {
                if let Err(e) = self.restart_write(ino, offset + done as u64) {
                    if self.aborted().is_some() {
                        err = Some(e);
                        break;
                    }
                    restart_failed = true;
                }
            }
        }
        let n = self.nodes.get_mut(&ino).ok_or(FsError::NotFound)?;
        if done > 0 {
            let end = offset + done as u64;
            if end > n.inode.size() {
                n.inode.set_size(end);
            }
            n.inode.set_mtime(now);
            n.inode.set_ctime(now);
            n.dirty = true;
            self.note_size(end);
        }
        if self.pending_bytes >= self.flush_bytes {
            self.flush_all_data()?;
        }
        match (done, err) {
            (0, Some(e)) => Err(e),
            _ => Ok(done),
        }
    }

    /// As Linux does: the first file over 2 GiB turns large_file on.
    pub(super) fn note_size(&mut self, size: u64) {
        if size > i32::MAX as u64 && self.sb.ro_compat & RO_COMPAT_LARGE_FILE == 0 {
            self.sb.ro_compat |= RO_COMPAT_LARGE_FILE;
            csum::put32(&mut self.sb.raw, 0x64, self.sb.ro_compat);
            self.sb_dirty = true;
        }
    }

    pub(super) fn truncate_file(&mut self, ino: u32, size: u64) -> Result<(), FsError> {
        let now = self.now();
        let n = self.file_node(ino)?;
        let old = n.inode.size();
        let bs = self.sb.block_size as u64;
        let inode = self.node(ino)?.inode.clone();
        if size > self.max_lblk(&inode).saturating_mul(bs) {
            return Err(FsError::TooBig);
        }
        if size < old {
            self.truncate_in_steps(ino, size)?; // restart.rs
            self.cut_to(ino, size)?;
        }
        self.note_size(size);
        let n = self.node(ino)?;
        n.inode.set_size(size);
        n.inode.set_mtime(now);
        n.inode.set_ctime(now);
        n.dirty = true;
        Ok(())
    }

    /// Frees the blocks of `ino` past `size` bytes and zeroes the tail of its last
    /// block (so that growing the file later reads zeros); the size is not changed.
    pub(super) fn cut_to(&mut self, ino: u32, size: u64) -> Result<(), FsError> {
        let bs = self.sb.block_size as u64;
        // The last block's tail, read before anything changes (abort.rs: a read
        // error then leaves the file as it was).
        let mut tail = None;
        if !size.is_multiple_of(bs) {
            let lblk = size / bs;
            let n = self.map_of(ino)?;
            if !n.pending.contains_key(&lblk) {
                if let Some((p, false, _)) = n.map.as_ref().and_then(|m| m.find(lblk)) {
                    let mut blk = vec![0u8; bs as usize];
                    self.dev.read(p * bs, &mut blk)?;
                    tail = Some(blk);
                }
            }
        }
        self.drop_blocks(ino, size.div_ceil(bs))?;
        if !size.is_multiple_of(bs) {
            // Zero the tail of the last block, so growing later reads zeros.
            let lblk = size / bs;
            let boff = (size % bs) as usize;
            let n = self.map_of(ino)?;
            if let Some(p) = n.pending.get_mut(&lblk) {
                p.data[boff..].fill(0);
            } else if let Some(mut blk) = tail {
                blk[boff..].fill(0);
                self.pending_bytes += bs as usize;
                let n = self.node(ino)?;
                n.pending.insert(
                    lblk,
                    PBlock {
                        data: blk,
                        reserved: false,
                    },
                );
            }
        }
        Ok(())
    }
}
