//! Regular-file data: buffered (delayed-allocation) writes, reads, truncation, and
//! writing the data and the block map back.

use super::*;

impl<D: BlockDev> Ext<D> {
    /// The most logical blocks file `ino` can have (its map's kind says).
    pub(super) fn max_lblk(&mut self, ino: u32) -> Result<u64, FsError> {
        let extents = self.node(ino)?.inode.flags() & FL_EXTENTS != 0;
        Ok(if extents {
            1 << 32
        } else {
            blockmap::max_blocks(self.sb.block_size as usize)
        })
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

    /// Allocates the buffered runs of `ino` that have no home and writes them out,
    /// each piece from its run's own buffer (`pending.rs`); pieces that continue
    /// each other on the disk are gathered into one write of up to `max_io` (one
    /// copy then, for the pieces after the first).
    pub(super) fn flush_node(&mut self, ino: u32, n: &mut Node) -> Result<(), FsError> {
        let mut pending = core::mem::take(&mut n.pending);
        let bs = self.sb.block_size as u64;
        let max_blocks = (self.max_io as u64 / bs).max(1);
        let mut map = n.map.take().unwrap_or_default();
        let mut result = Ok(());
        let mut write_failed = false;
        let fallback_goal = self.group_start(self.group_of(ino));
        // The pieces waiting to go out as one write: physically contiguous.
        let mut out = Gather::default();
        // Logical ranges written (removed from `pending` at the end).
        let mut written: Vec<(u64, u64)> = Vec::new();
        'runs: for (first, data) in pending.runs() {
            let blocks = data.len() as u64 / bs;
            let mut i = 0u64;
            while i < blocks {
                let lblk = first + i;
                let left = blocks - i;
                // Where the piece goes (allocating a run if it has no home).
                let (p, uninit, len) = match map.find(lblk) {
                    // An unwritten block stays so until its write is accepted
                    // (unwritten.rs).
                    Some((p, uninit, l)) => (p, uninit, l.min(left)),
                    None => {
                        let hole = map.next_mapped(lblk).map_or(left, |m| m - lblk);
                        let want = hole.min(left).min(u64::from(extent::MAX_INIT_LEN)) as u32;
                        let goal = map.goal_for(lblk).unwrap_or(fallback_goal);
                        match self.alloc_blocks(goal, want) {
                            Ok((p, got)) => {
                                // Unwritten until its data is on the disk
                                // (unwritten.rs).
                                map.insert_unwritten(lblk, p, got);
                                self.reserved = self.reserved.saturating_sub(got as u64);
                                n.map_dirty = true;
                                (p, true, u64::from(got))
                            }
                            Err(e) => {
                                result = Err(e);
                                break 'runs;
                            }
                        }
                    }
                };
                let len = len.min(max_blocks);
                let piece = Piece {
                    lblk,
                    pblk: p,
                    uninit,
                    run: data,
                    at: (i * bs) as usize,
                    data: &data[(i * bs) as usize..((i + len) * bs) as usize],
                };
                if !out.extends(&piece, bs, max_blocks) {
                    match self.write_gathered(ino, &mut map, &mut out, &mut written) {
                        Ok(init) => n.map_dirty |= init,
                        Err(e) => {
                            // Pieces written before the error may have changed it.
                            n.map_dirty = true;
                            result = Err(e);
                            write_failed = true;
                            break 'runs;
                        }
                    }
                }
                out.pieces.push(piece);
                i += len;
            }
        }
        // What was gathered goes out even when an allocation stopped the loop (the
        // data that found a home is written; the rest waits).
        if !write_failed {
            match self.write_gathered(ino, &mut map, &mut out, &mut written) {
                Ok(init) => n.map_dirty |= init,
                Err(e) => {
                    n.map_dirty = true;
                    result = Err(e);
                }
            }
        }
        drop(out);
        // What was written leaves the buffer; whatever was not (an I/O error, or no
        // space) stays buffered: a later sync retries, and truncate or unlink drops it.
        let bsz = bs as usize;
        let cap = pending.cap();
        for (l, len) in written {
            let gone = pending.remove_range(l, l + len, bsz);
            self.pending_bytes = self.pending_bytes.saturating_sub(gone);
        }
        self.cap_changed(cap, pending.cap());
        n.pending = pending;
        // i_blocks as it will be (the tree blocks are recounted at sync).
        let acl = u64::from(n.inode.file_acl() != 0);
        n.inode
            .set_blocks_512((map.data_blocks() + map.meta.len() as u64 + acl) * (bs / 512));
        n.dirty = true;
        n.map = Some(map);
        result
    }

    /// Writes the gathered pieces of `ino` as one device write (from their run's
    /// buffer if they follow each other in it, else gathered into a buffer, or each
    /// on its own if that buffer cannot be had), initialises those that were unwritten
    /// (unwritten.rs) and records their logical ranges in `written`. Returns
    /// whether the map changed (an unwritten piece was initialised).
    fn write_gathered(
        &mut self,
        ino: u32,
        map: &mut FileMap,
        out: &mut Gather<'_>,
        written: &mut Vec<(u64, u64)>,
    ) -> Result<bool, FsError> {
        let Some(head) = out.pieces.first() else {
            return Ok(false);
        };
        let init = out.pieces.iter().any(|p| p.uninit);
        let bs = self.sb.block_size as u64;
        let at = head.pblk * bs;
        if out.pieces.len() == 1 {
            self.dev.write(at, head.data)?;
            self.note_pieces_out(ino, map, out, written, head.data.len());
            return Ok(init);
        }
        let total: usize = out.pieces.iter().map(|p| p.data.len()).sum();
        // Pieces that follow each other in one run's buffer (an allocation cut in
        // two that landed together): one write from the run, no copy.
        let one_run = out
            .pieces
            .windows(2)
            .all(|w| core::ptr::eq(w[0].run, w[1].run) && w[0].at + w[0].data.len() == w[1].at);
        if one_run {
            let span = &head.run[head.at..head.at + total];
            self.dev.write(at, span)?;
            self.note_pieces_out(ino, map, out, written, total);
            return Ok(init);
        }
        out.buf.clear();
        if out.buf.try_reserve_exact(total).is_ok() {
            for p in &out.pieces {
                out.buf.extend_from_slice(p.data);
            }
            self.dev.write(at, &out.buf)?;
            self.note_pieces_out(ino, map, out, written, total);
            return Ok(init);
        }
        // No buffer: piece by piece, each recorded as it goes.
        let pieces = core::mem::take(&mut out.pieces);
        for p in pieces {
            self.dev.write(p.pblk * bs, p.data)?;
            out.pieces.push(p);
            self.note_pieces_out(ino, map, out, written, p.data.len());
        }
        Ok(init)
    }

    /// The gathered pieces went to the device (`bytes` of them in one write).
    fn note_pieces_out(
        &mut self,
        ino: u32,
        map: &mut FileMap,
        out: &mut Gather<'_>,
        written: &mut Vec<(u64, u64)>,
        bytes: usize,
    ) {
        let bs = self.sb.block_size as u64;
        self.stats.data_writes += 1;
        self.stats.data_bytes += bytes as u64;
        self.note_data_out(ino); // wberr.rs
        for p in out.pieces.drain(..) {
            let len = p.data.len() as u64 / bs;
            if p.uninit {
                self.note_written(ino, map, p.lblk, p.pblk, len);
            }
            match written.last_mut() {
                Some((l, n)) if *l + *n == p.lblk => *n += len,
                _ => written.push((p.lblk, len)),
            }
        }
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
            if let Some(p) = n.pending.at(lblk, bs as usize) {
                // Buffered: as far as its run goes, in one copy.
                let k = (p.len() - boff).min(total - done);
                buf[done..done + k].copy_from_slice(&p[boff..boff + k]);
                done += k;
                continue;
            }
            let map = n.map.as_ref();
            match map.and_then(|m| m.find(lblk)) {
                Some((pblk, false, left)) => {
                    // Read a physically contiguous run (stopping at buffered blocks).
                    let want_blocks = ((boff + total - done) as u64).div_ceil(bs);
                    let mut nblk = left.min(want_blocks).min(max_io / bs).max(1);
                    if let Some(k) = n.pending.next_from(lblk + 1, bs as usize) {
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
                    let next = match n.pending.next_from(lblk + 1, bs as usize) {
                        Some(k) => next.min(k),
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
        let max = self.max_lblk(ino)?.saturating_mul(bs);
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or(FsError::TooBig)?;
        if end > max {
            return Err(FsError::TooBig);
        }
        self.ensure_map(ino)?;
        let per = bs / 4;
        // A call that goes on where the last one ended (`run_room`).
        let streaming = self.stream == Some((ino, offset));
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
            let bsz = bs as usize;
            let n = self.nodes.get_mut(&ino).ok_or(FsError::NotFound)?;
            if let Some(p) = n.pending.at_mut(lblk, bsz) {
                // Buffered already: overwritten in place, as far as its run goes.
                let k = (p.len() - boff).min(data.len() - done);
                p[boff..boff + k].copy_from_slice(&data[done..done + k]);
                done += k;
            } else if boff == 0 && data.len() - done >= bsz {
                // Whole blocks, in one piece (`pending.rs`): as many as are in one
                // state (mapped, or a hole) with nothing buffered, up to where a long
                // call goes out (below), each taking a reservation in a hole as it
                // would one by one. One copy, no fill.
                let map = n.map.as_ref();
                let mut nb = ((data.len() - done) / bsz) as u64;
                let mapped = map.and_then(|m| m.find(lblk));
                nb = match mapped {
                    Some((_, _, left)) => nb.min(left),
                    None => nb.min(
                        map.and_then(|m| m.next_mapped(lblk))
                            .map_or(u64::MAX, |m| m - lblk),
                    ),
                };
                if let Some(k) = n.pending.next_from(lblk, bsz) {
                    nb = nb.min(k - lblk);
                }
                let to_flush = self.flush_bytes.saturating_sub(self.pending_bytes);
                nb = nb.min(to_flush.div_ceil(bsz).max(1) as u64);
                if mapped.is_none() {
                    // File data never takes the metadata reserve (issue 30).
                    let resv = self.resv_blocks();
                    let mut ok = 0;
                    while ok < nb {
                        let r = self.reserved + ok;
                        if self.free_blocks < r + 1 + r / per + resv {
                            break;
                        }
                        ok += 1;
                    }
                    if ok == 0 {
                        err = Some(FsError::NoSpace);
                        break;
                    }
                    nb = ok;
                }
                let bytes = nb as usize * bsz;
                let room = self.run_room(bytes, streaming);
                let max_run = self.max_io;
                let n = self.nodes.get_mut(&ino).ok_or(FsError::NotFound)?;
                let cap = n.pending.cap();
                let r = n
                    .pending
                    .append(lblk, &data[done..done + bytes], bsz, max_run, room);
                let now = n.pending.cap();
                self.cap_changed(cap, now);
                if r.is_err() {
                    err = Some(FsError::NoMemory);
                    break;
                }
                if mapped.is_none() {
                    self.reserved += nb;
                }
                self.pending_bytes += bytes;
                done += bytes;
            } else {
                // A part of a block: into zeros or what the disk holds.
                let k = (bsz - boff).min(data.len() - done);
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
                let room = self.run_room(bsz, streaming);
                let max_run = self.max_io;
                if let Some((p, false, _)) = mapped {
                    let mut blk = vec![0u8; bsz];
                    // A read error ends the write here: what was buffered before it
                    // counts (its size is recorded below).
                    if let Err(e) = self.dev.read(p * bs, &mut blk) {
                        err = Some(e.into());
                        break;
                    }
                    blk[boff..boff + k].copy_from_slice(&data[done..done + k]);
                    let n = self.nodes.get_mut(&ino).ok_or(FsError::NotFound)?;
                    let cap = n.pending.cap();
                    n.pending.insert_block(lblk, blk, bsz, max_run, room);
                    let now = n.pending.cap();
                    self.cap_changed(cap, now);
                } else {
                    // A hole or unwritten: zeros, straight in the run's buffer.
                    let n = self.nodes.get_mut(&ino).ok_or(FsError::NotFound)?;
                    let cap = n.pending.cap();
                    let r = match n.pending.append_zeroed(lblk, bsz, max_run, room) {
                        Ok(b) => {
                            b[boff..boff + k].copy_from_slice(&data[done..done + k]);
                            Ok(())
                        }
                        Err(e) => Err(e),
                    };
                    let now = n.pending.cap();
                    self.cap_changed(cap, now);
                    if r.is_err() {
                        err = Some(FsError::NoMemory);
                        break;
                    }
                }
                if reserved {
                    self.reserved += 1;
                }
                self.pending_bytes += bsz;
                done += k;
            }
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
        if done > 0 {
            let end = offset + done as u64;
            self.stream = Some((ino, end));
            let n = self.nodes.get_mut(&ino).ok_or(FsError::NotFound)?;
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
        if size > self.max_lblk(ino)?.saturating_mul(bs) {
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
            if !n.pending.contains(lblk, bs as usize) {
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
            if let Some(p) = n.pending.at_mut(lblk, bs as usize) {
                p[boff..bs as usize].fill(0);
            } else if let Some(mut blk) = tail {
                blk[boff..].fill(0);
                let max_run = self.max_io;
                let room = self.run_room(bs as usize, false);
                let n = self.node(ino)?;
                let cap = n.pending.cap();
                n.pending
                    .insert_block(lblk, blk, bs as usize, max_run, room);
                let now = n.pending.cap();
                self.cap_changed(cap, now);
                self.pending_bytes += bs as usize;
            }
        }
        Ok(())
    }
}

/// A piece of a buffered run and where it goes.
#[derive(Clone, Copy)]
struct Piece<'a> {
    lblk: u64,
    pblk: u64,
    /// Mapped unwritten (initialised once its write is accepted).
    uninit: bool,
    /// The run it is in, and where in it.
    run: &'a [u8],
    at: usize,
    data: &'a [u8],
}

/// Pieces that continue each other on the disk, for one write, and the buffer that
/// gathers more than one.
#[derive(Default)]
struct Gather<'a> {
    pieces: Vec<Piece<'a>>,
    buf: Vec<u8>,
}

impl Gather<'_> {
    /// Whether `p` continues the gathered pieces on the disk within `max_blocks`.
    fn extends(&self, p: &Piece<'_>, bs: u64, max_blocks: u64) -> bool {
        let Some(first) = self.pieces.first() else {
            return true;
        };
        let blocks: u64 = self.pieces.iter().map(|q| q.data.len() as u64 / bs).sum();
        first.pblk + blocks == p.pblk && blocks + p.data.len() as u64 / bs <= max_blocks
    }
}
