//! Hashed (htree) directories. Listing scans every block linearly (index blocks look
//! like one empty record spanning the block); a lookup hashes the name and reads only
//! the leaves the index selects for it (`flatten` once, then `candidate_leaves`; or,
//! for an index too large to keep flattened, `walk_candidates` each time), falling
//! back to a linear scan when the index cannot be followed.
//!
//! Changes keep the index, as Linux's `ext4_dx_add_entry` (`Ext::htree_insert`): a
//! new name goes into the leaf its hash selects (`find_path`); a full leaf is split
//! (`split_leaf`: sorted by hash, the upper half size-wise moves to a new block at the
//! end of the directory, whose start hash, with the continuation bit when one hash
//! spans both leaves, is inserted after the old leaf's in the index); a full index
//! node is split first (its upper half to a new node entered in its parent), and a
//! full root moves its entries to a new node below it (one more indirect level): up
//! to 2 index levels, 3 with `large_dir`; past that the directory is full (ENOSPC,
//! as Linux's "Directory index full!"). The blocks a name needs are counted and
//! refused with ENOSPC before anything changes, and each step leaves a valid index.
//! A linear directory of one full block is indexed (`make_indexed_dir`): its names
//! move to a new block 1 and block 0 becomes the dx root. Removing a name only edits
//! its leaf; a moved directory's ".." is changed in the root and the root's
//! `dx_tail` sealed again (`dx_set_dotdot`). Only an index `find_path` does not
//! follow (a hash it does not compute, a node not shaped as one) makes the directory
//! linear first (`deindex`): the root becomes a plain "."/".." block and interior
//! index blocks become empty blocks (each with a checksum tail), then
//! `EXT4_INDEX_FL` is cleared; e2fsck accepts the result as a linear directory
//! (`e2fsck -D` indexes it again).
//!
//! Under metadata_csum every index block (the root and interior nodes) ends its entry
//! array with a `dx_tail` whose checksum ([`dx_csum`]) is checked whenever the index
//! is followed. An index that fails it is not trusted: lookups scan the directory
//! linearly (each leaf has its own checked tail), and changes to the directory are
//! refused with `FsError::Corrupt` rather than growing or de-indexing a damaged index
//! (Linux refuses both with EFSBADCRC; `e2fsck -fD` rebuilds the index). Every
//! index block written gets its `dx_tail` sealed again (`seal`); leaves get theirs.

use super::csum::{get16, get32, put16, put32};
use crate::crc32c::crc32c;
use crate::error::FsError;
use alloc::vec::Vec;

/// Size of the `dx_tail` (`dt_reserved`, `dt_checksum`) after an index block's
/// entries under metadata_csum.
pub const DX_TAIL: usize = 8;

/// Where an index block's count/limit header is, as Linux's `get_dx_countlimit`: 8 in
/// an interior node (one unused record spanning the block), 0x20 in a root ("." of 12
/// bytes, ".." over the rest of the block, then an 8-byte `dx_root_info` with
/// `reserved_zero` 0 and `info_length` 8); `None` if the block is neither.
pub fn countlimit_offset(b: &[u8]) -> Option<usize> {
    let bs = b.len();
    let rec_len = |off: usize| {
        let v = get16(b, off) as usize;
        if bs >= 65536 && (v == 0 || v == 0xFFFF) {
            65536
        } else {
            v
        }
    };
    let first = rec_len(4);
    if first == bs {
        Some(8)
    } else if first == 12 {
        if rec_len(12 + 4) != bs.wrapping_sub(12) || get32(b, 0x18) != 0 || b.get(0x1D) != Some(&8)
        {
            return None;
        }
        Some(0x20)
    } else {
        None
    }
}

/// The checksum an index block's `dx_tail` should carry (Linux `ext4_dx_csum`):
/// crc32c, from the directory's per-inode seed, over the block up to the last used
/// entry (`count_offset + count * 8` bytes), then `dt_reserved`, then a zero word for
/// `dt_checksum`. Returns `(offset of the dx_tail, checksum)`, or `None` when the
/// header cannot be found, `count` exceeds `limit`, or there is no room for the tail
/// (Linux then fails the block's verification too).
pub fn dx_csum(b: &[u8], seed: u32) -> Option<(usize, u32)> {
    let at = countlimit_offset(b)?;
    let limit = get16(b, at) as usize;
    let count = get16(b, at + 2) as usize;
    let tail = at + 8 * limit;
    if count > limit || tail + DX_TAIL > b.len() {
        return None;
    }
    let c = crc32c(seed, &b[..at + 8 * count]);
    let c = crc32c(c, &b[tail..tail + 4]);
    Some((tail, crc32c(c, &[0; 4])))
}

/// Whether an index block's `dx_tail` checksum is right (see [`dx_csum`]).
pub fn dx_csum_ok(b: &[u8], seed: u32) -> bool {
    dx_csum(b, seed).is_some_and(|(tail, c)| get32(b, tail + 4) == c)
}

/// Most interior index nodes [`index_nodes`] lists (and the most child pointers it
/// holds for the next level): 4,096 nodes of a 2-level tree index 2 million leaves,
/// more than any directory here has; a frontier of every child of 4,096 nodes of
/// 64 KiB would hold 33 million.
const MAX_NODES: usize = 4096;

/// Logical blocks of interior index nodes, read from the root block (`root`) with a
/// reader for logical blocks; capped at 3 levels and [`MAX_NODES`].
pub fn index_nodes(
    root: &[u8],
    read: &mut dyn FnMut(u32) -> Result<Vec<u8>, FsError>,
) -> Result<Vec<u32>, FsError> {
    let levels = *root.get(0x1E).unwrap_or(&0);
    let mut nodes = Vec::new();
    if levels == 0 {
        return Ok(nodes);
    }
    if levels > 3 {
        return Err(FsError::Corrupt(alloc::string::String::from(
            "htree: too many levels",
        )));
    }
    let info_len = *root.get(0x1D).unwrap_or(&8) as usize;
    let mut frontier = entries(root, 0x18 + info_len);
    for level in 1..=levels {
        let mut next = Vec::new();
        for b in frontier {
            if nodes.contains(&b) || nodes.len() > MAX_NODES {
                continue;
            }
            nodes.push(b);
            if level < levels && next.len() <= MAX_NODES {
                let blk = read(b)?;
                let more = entries(&blk, 8);
                next.extend(more.into_iter().take(MAX_NODES + 1 - next.len()));
            }
        }
        frontier = next;
    }
    Ok(nodes)
}

/// Child block numbers of an index node whose count/limit header is at `at`.
fn entries(b: &[u8], at: usize) -> Vec<u32> {
    let limit = get16(b, at) as usize;
    let count = (get16(b, at + 2) as usize).min(limit);
    let mut v = Vec::new();
    for i in 0..count {
        let off = at + 4 + i * 8;
        if off + 4 > b.len() {
            break;
        }
        v.push(get32(b, off) & 0x0FFF_FFFF);
    }
    v
}

/// `s_flags`: directory hashes use unsigned chars.
pub const FLAGS_UNSIGNED_HASH: u32 = 0x2;

const DEFAULT_SEED: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

fn tea_transform(buf: &mut [u32; 4], inp: &[u32]) {
    let mut sum = 0u32;
    let (mut b0, mut b1) = (buf[0], buf[1]);
    let (a, b, c, d) = (inp[0], inp[1], inp[2], inp[3]);
    for _ in 0..16 {
        sum = sum.wrapping_add(0x9E37_79B9);
        b0 = b0.wrapping_add(
            (b1 << 4).wrapping_add(a) ^ b1.wrapping_add(sum) ^ (b1 >> 5).wrapping_add(b),
        );
        b1 = b1.wrapping_add(
            (b0 << 4).wrapping_add(c) ^ b0.wrapping_add(sum) ^ (b0 >> 5).wrapping_add(d),
        );
    }
    buf[0] = buf[0].wrapping_add(b0);
    buf[1] = buf[1].wrapping_add(b1);
}

fn half_md4_transform(buf: &mut [u32; 4], x: &[u32]) {
    let f = |x: u32, y: u32, z: u32| z ^ (x & (y ^ z));
    let g = |x: u32, y: u32, z: u32| (x & y).wrapping_add((x ^ y) & z);
    let h = |x: u32, y: u32, z: u32| x ^ y ^ z;
    let (mut a, mut b, mut c, mut d) = (buf[0], buf[1], buf[2], buf[3]);
    macro_rules! r {
        ($f:expr, $a:ident, $b:ident, $c:ident, $d:ident, $x:expr, $s:expr) => {
            $a = $a
                .wrapping_add($f($b, $c, $d))
                .wrapping_add($x)
                .rotate_left($s);
        };
    }
    const K2: u32 = 0o13240474631;
    const K3: u32 = 0o15666365641;
    r!(f, a, b, c, d, x[0], 3);
    r!(f, d, a, b, c, x[1], 7);
    r!(f, c, d, a, b, x[2], 11);
    r!(f, b, c, d, a, x[3], 19);
    r!(f, a, b, c, d, x[4], 3);
    r!(f, d, a, b, c, x[5], 7);
    r!(f, c, d, a, b, x[6], 11);
    r!(f, b, c, d, a, x[7], 19);
    r!(g, a, b, c, d, x[1].wrapping_add(K2), 3);
    r!(g, d, a, b, c, x[3].wrapping_add(K2), 5);
    r!(g, c, d, a, b, x[5].wrapping_add(K2), 9);
    r!(g, b, c, d, a, x[7].wrapping_add(K2), 13);
    r!(g, a, b, c, d, x[0].wrapping_add(K2), 3);
    r!(g, d, a, b, c, x[2].wrapping_add(K2), 5);
    r!(g, c, d, a, b, x[4].wrapping_add(K2), 9);
    r!(g, b, c, d, a, x[6].wrapping_add(K2), 13);
    r!(h, a, b, c, d, x[3].wrapping_add(K3), 3);
    r!(h, d, a, b, c, x[7].wrapping_add(K3), 9);
    r!(h, c, d, a, b, x[2].wrapping_add(K3), 11);
    r!(h, b, c, d, a, x[6].wrapping_add(K3), 15);
    r!(h, a, b, c, d, x[1].wrapping_add(K3), 3);
    r!(h, d, a, b, c, x[5].wrapping_add(K3), 9);
    r!(h, c, d, a, b, x[0].wrapping_add(K3), 11);
    r!(h, b, c, d, a, x[4].wrapping_add(K3), 15);
    buf[0] = buf[0].wrapping_add(a);
    buf[1] = buf[1].wrapping_add(b);
    buf[2] = buf[2].wrapping_add(c);
    buf[3] = buf[3].wrapping_add(d);
}

fn char_val(c: u8, unsigned: bool) -> u32 {
    if unsigned {
        c as u32
    } else {
        c as i8 as i32 as u32
    }
}

fn str2hashbuf(msg: &[u8], num: usize, unsigned: bool) -> [u32; 8] {
    let mut out = [0u32; 8];
    let len = msg.len();
    let mut pad = (len as u32) | ((len as u32) << 8);
    pad |= pad << 16;
    let mut val = pad;
    let take = len.min(num * 4);
    let mut k = 0;
    for (i, &c) in msg[..take].iter().enumerate() {
        val = char_val(c, unsigned).wrapping_add(val << 8);
        if i % 4 == 3 {
            out[k] = val;
            k += 1;
            val = pad;
        }
    }
    if k < num {
        out[k] = val;
        k += 1;
    }
    while k < num {
        out[k] = pad;
        k += 1;
    }
    out
}

fn dx_hack_hash(name: &[u8], unsigned: bool) -> u32 {
    let (mut hash0, mut hash1) = (0x12a3_fe2du32, 0x37ab_e8f9u32);
    for &c in name {
        let mut hash = hash1.wrapping_add(hash0 ^ char_val(c, unsigned).wrapping_mul(7_152_373));
        if hash & 0x8000_0000 != 0 {
            hash = hash.wrapping_sub(0x7fff_ffff);
        }
        hash1 = hash0;
        hash0 = hash;
    }
    hash0 << 1
}

/// The major htree hash of `name` (`version` as in the dx root, already adjusted for
/// unsigned-char filesystems: 0-2 signed, 3-5 unsigned); `None` for versions we do not
/// know (siphash, casefolded directories).
pub fn name_hash(name: &[u8], version: u8, seed: [u32; 4]) -> Option<u32> {
    let mut buf = if seed.iter().any(|&s| s != 0) {
        seed
    } else {
        DEFAULT_SEED
    };
    let unsigned = version >= 3;
    let hash = match version {
        0 | 3 => dx_hack_hash(name, unsigned),
        1 | 4 => {
            let mut p = name;
            loop {
                let inp = str2hashbuf(p, 8, unsigned);
                half_md4_transform(&mut buf, &inp);
                if p.len() <= 32 {
                    break;
                }
                p = &p[32..];
            }
            buf[1]
        }
        2 | 5 => {
            let mut p = name;
            loop {
                let inp = str2hashbuf(p, 4, unsigned);
                tea_transform(&mut buf, &inp[..4]);
                if p.len() <= 16 {
                    break;
                }
                p = &p[16..];
            }
            buf[0]
        }
        _ => return None,
    };
    let hash = hash & !1;
    Some(if hash == 0x7fff_ffff << 1 {
        (0x7fff_ffff - 1) << 1
    } else {
        hash
    })
}

/// One index block on the path from the root to a leaf ([`find_path`]): its logical
/// block (0 for the root), where its count/limit header is, its count and limit, and
/// the entry taken.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// Logical block of the index block.
    pub lblk: u32,
    /// Offset of its count/limit header (0x20 in the root, 8 in a node).
    pub at: usize,
    /// Entries used.
    pub count: usize,
    /// Entries it has room for.
    pub limit: usize,
    /// The entry followed.
    pub idx: usize,
}

impl Frame {
    /// Whether it has no room for another entry.
    pub fn full(&self) -> bool {
        self.count >= self.limit
    }
}

/// Follows the index from the root block to the leaf whose hash range holds `hash`:
/// `read` gives a logical block's bytes. Returns the index blocks on the way (root
/// first) and the leaf's logical block, or `None` if the index is not one we can
/// follow (up to 3 levels, as Linux with `large_dir`; every node shaped as one).
pub fn find_path(
    root: &[u8],
    hash: u32,
    nblocks: u64,
    read: &mut dyn FnMut(u32) -> Result<Vec<u8>, FsError>,
) -> Result<Option<(Vec<Frame>, u32)>, FsError> {
    let levels = *root.get(0x1E).unwrap_or(&0);
    let info_len = *root.get(0x1D).unwrap_or(&0) as usize;
    if levels > 2 || info_len != 8 || *root.get(0x1C).unwrap_or(&0xFF) > 5 {
        return Ok(None);
    }
    if countlimit_offset(root) != Some(0x20) {
        return Ok(None);
    }
    let mut frames: Vec<Frame> = Vec::with_capacity(levels as usize + 1);
    let mut block: Vec<u8>;
    let mut node: &[u8] = root;
    let mut at = 0x18 + info_len;
    let mut lblk = 0u32;
    for level in 0..=levels {
        let limit = get16(node, at) as usize;
        let count = get16(node, at + 2) as usize;
        if count == 0 || count > limit || at + 8 * limit > node.len() {
            return Ok(None);
        }
        // The last entry whose hash is <= hash (entry 0 covers everything below).
        let (mut lo, mut hi) = (1usize, count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if get32(node, at + 8 * mid) > hash {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let idx = lo - 1;
        frames.push(Frame {
            lblk,
            at,
            count,
            limit,
            idx,
        });
        let child = get32(node, at + 8 * idx + 4) & 0x0FFF_FFFF;
        if child as u64 >= nblocks || child == 0 || frames.iter().any(|f| f.lblk == child) {
            return Ok(None);
        }
        if level == levels {
            return Ok(Some((frames, child)));
        }
        block = read(child)?;
        if countlimit_offset(&block) != Some(8) {
            return Ok(None);
        }
        node = &block;
        at = 8;
        lblk = child;
    }
    Ok(None)
}

/// Entries a dx root has room for (Linux `dx_root_limit`): after the "." and ".."
/// records and the `dx_root_info`, less the `dx_tail` under metadata_csum.
pub fn root_limit(bs: usize, csum: bool) -> usize {
    (bs - 0x20 - if csum { DX_TAIL } else { 0 }) / 8
}

/// Entries an interior dx node has room for (Linux `dx_node_limit`).
pub fn node_limit(bs: usize, csum: bool) -> usize {
    (bs - 8 - if csum { DX_TAIL } else { 0 }) / 8
}

/// Makes `b` an empty interior index node: one unused record over the whole block
/// (a 64 KiB block encodes its length as 0xFFFF), count 0 and the node limit.
pub fn init_node(b: &mut [u8], csum: bool) {
    let bs = b.len();
    b.fill(0);
    put16(b, 4, if bs >= 65536 { 0xFFFF } else { bs as u16 });
    put16(b, 8, node_limit(bs, csum) as u16);
}

/// Makes `b` a dx root for directory `dir` whose parent is `parent`, with hash
/// `version` and one entry pointing at `leaf` (Linux `make_indexed_dir`).
pub fn init_root(b: &mut [u8], dir: u32, parent: u32, version: u8, leaf: u32, csum: bool) {
    let bs = b.len();
    b.fill(0);
    put32(b, 0, dir);
    put16(b, 4, 12);
    b[6] = 1;
    b[7] = 2;
    b[8] = b'.';
    put32(b, 12, parent);
    put16(b, 16, (bs - 12).min(0xFFFF) as u16);
    b[18] = 2;
    b[19] = 2;
    b[20] = b'.';
    b[21] = b'.';
    b[0x1C] = version;
    b[0x1D] = 8;
    put16(b, 0x20, root_limit(bs, csum) as u16);
    put16(b, 0x22, 1);
    put32(b, 0x24, leaf);
}

/// Sets the count of the index block whose header is at `at`.
pub fn set_count(b: &mut [u8], at: usize, count: usize) {
    put16(b, at + 2, count as u16);
}

/// Inserts entry (`hash`, `blk`) at position `pos` (> 0) of the index block whose
/// header is at `at`, shifting the later ones up (Linux `dx_insert_block`). The
/// caller checked that it has room.
pub fn insert_entry(b: &mut [u8], at: usize, pos: usize, hash: u32, blk: u32) {
    let count = get16(b, at + 2) as usize;
    let from = at + 8 * pos;
    let to = at + 8 * count;
    b.copy_within(from..to, from + 8);
    put32(b, from, hash);
    put32(b, from + 4, blk);
    set_count(b, at, count + 1);
}

/// Writes the `dx_tail` of an index block: `dt_reserved` zero and the checksum
/// (see [`dx_csum`]); nothing when the block has no room for one.
pub fn seal(b: &mut [u8], seed: u32) {
    if let Some((tail, _)) = dx_csum(b, seed) {
        put32(b, tail, 0);
        if let Some((tail, c)) = dx_csum(b, seed) {
            put32(b, tail + 4, c);
        }
    }
}

/// How a full leaf is split ([`split_leaf`]): the records, in hash order, that stay
/// and those that move, and the start hash of the new leaf (with the continuation
/// bit when its first hash is also the last of the old one).
pub struct Split {
    /// (hash, offset of the record in the old block) that stay.
    pub low: Vec<(u32, usize)>,
    /// Those that move to the new leaf.
    pub high: Vec<(u32, usize)>,
    /// The new index entry's hash.
    pub hash2: u32,
}

/// Splits the live records of a leaf, given as (hash, offset, bytes needed), in the
/// middle size-wise as Linux's `do_split`: records are sorted by hash and moved to
/// the new leaf from the top while less than half of the next one would cross half
/// the block. `None` with fewer than two records.
pub fn split_leaf(mut recs: Vec<(u32, usize, usize)>, bs: usize) -> Option<Split> {
    let count = recs.len();
    if count < 2 {
        return None;
    }
    recs.sort_by_key(|&(h, off, _)| (h, off));
    let (mut size, mut moved) = (0usize, 0usize);
    let mut i = count;
    while i > 0 {
        let r = recs[i - 1].2;
        if size + r / 2 > bs / 2 {
            break;
        }
        size += r;
        moved += 1;
        i -= 1;
    }
    let mut split = if i > 0 { count - moved } else { count / 2 };
    split = split.clamp(1, count - 1);
    let hash2 = recs[split].0;
    let continued = hash2 == recs[split - 1].0;
    let low = recs[..split].iter().map(|&(h, o, _)| (h, o)).collect();
    let high = recs[split..].iter().map(|&(h, o, _)| (h, o)).collect();
    Some(Split {
        low,
        high,
        hash2: hash2 | continued as u32,
    })
}

/// What [`flatten`] made of an index.
pub enum Flat {
    /// The whole index as (start hash, leaf block) pairs in hash order.
    Index(Vec<(u32, u32)>),
    /// More than the entries asked for: follow it per lookup ([`walk_candidates`]).
    TooLarge,
    /// Not an index we can follow (the directory is scanned linearly).
    Unusable,
}

/// The whole index as (start hash, leaf block) pairs in hash order, read from the root
/// block and (for 1- or 2-level trees) its index nodes, up to `max` pairs (grown
/// fallibly; past it or when the heap refuses, [`Flat::TooLarge`]).
pub fn flatten(
    root: &[u8],
    nblocks: u64,
    max: usize,
    read: &mut dyn FnMut(u32) -> Result<Vec<u8>, FsError>,
) -> Result<Flat, FsError> {
    let levels = *root.get(0x1E).unwrap_or(&0);
    let info_len = *root.get(0x1D).unwrap_or(&0) as usize;
    if levels > 2 || info_len != 8 {
        return Ok(Flat::Unusable);
    }
    let mut cur = match node_entries(root, 0x18 + info_len, 0, nblocks) {
        Some(v) => v,
        None => return Ok(Flat::Unusable),
    };
    for _ in 0..levels {
        let mut next: Vec<(u32, u32)> = Vec::new();
        for (h, b) in cur {
            let node = read(b)?;
            let Some(v) = node_entries(&node, 8, h, nblocks) else {
                return Ok(Flat::Unusable);
            };
            if (next.len() as u64 + v.len() as u64) > nblocks.saturating_mul(2) {
                return Ok(Flat::Unusable);
            }
            if next.len() + v.len() > max || next.try_reserve(v.len()).is_err() {
                return Ok(Flat::TooLarge);
            }
            next.extend(v);
        }
        cur = next;
    }
    if cur.len() > max {
        return Ok(Flat::TooLarge);
    }
    Ok(Flat::Index(cur))
}

/// (hash, block) entries of one index node whose count/limit header is at `at`; the
/// first entry takes `first_hash`.
fn node_entries(b: &[u8], at: usize, first_hash: u32, nblocks: u64) -> Option<Vec<(u32, u32)>> {
    let limit = get16(b, at) as usize;
    let count = get16(b, at + 2) as usize;
    if count == 0 || count > limit || at + 8 * limit > b.len() {
        return None;
    }
    let mut v = Vec::new();
    v.try_reserve_exact(count).ok()?;
    for i in 0..count {
        let h = if i == 0 {
            first_hash
        } else {
            get32(b, at + 8 * i)
        };
        let blk = get32(b, at + 8 * i + 4) & 0x0FFF_FFFF;
        if blk == 0 || blk as u64 >= nblocks {
            return None;
        }
        v.push((h, blk));
    }
    Some(v)
}

/// The leaves that may hold a name hashing to `hash`: the one whose range holds it,
/// then following ones while their start hash continues the same value (collisions).
pub fn candidate_leaves(flat: &[(u32, u32)], hash: u32) -> Vec<u32> {
    // The last entry whose start hash is <= hash (entry 0 starts at 0).
    let idx = flat.partition_point(|&(h, _)| h <= hash).saturating_sub(1);
    let mut v = Vec::new();
    if let Some(&(_, b)) = flat.get(idx) {
        v.push(b);
    }
    let mut i = idx + 1;
    while let Some(&(h, b)) = flat.get(i) {
        if h & !1 != hash {
            break;
        }
        v.push(b);
        i += 1;
    }
    v
}

/// One level of the path [`walk_candidates`] follows: an index node, where its
/// count/limit header is, its entry count, and the entry taken.
struct Step {
    node: Vec<u8>,
    at: usize,
    count: usize,
    idx: usize,
}

impl Step {
    /// The node at `at` of `node`, checked as [`node_entries`] checks it.
    fn new(node: Vec<u8>, at: usize) -> Option<Step> {
        let limit = get16(&node, at) as usize;
        let count = get16(&node, at + 2) as usize;
        if count == 0 || count > limit || at + 8 * limit > node.len() {
            return None;
        }
        Some(Step {
            node,
            at,
            count,
            idx: 0,
        })
    }
    /// The start hash of entry `idx` (entry 0 has none of its own).
    fn hash(&self, idx: usize) -> u32 {
        get32(&self.node, self.at + 8 * idx)
    }
    /// The block the entry taken points at, if inside the directory.
    fn child(&self, nblocks: u64) -> Option<u32> {
        let blk = get32(&self.node, self.at + 8 * self.idx + 4) & 0x0FFF_FFFF;
        (blk != 0 && (blk as u64) < nblocks).then_some(blk)
    }
}

/// What [`candidate_leaves`] gives from the flattened index, found by following it
/// from the root block instead: the leaf whose range holds `hash`, then following
/// leaves while their start hash continues the same value (collisions), reading the
/// index nodes on the way with `read`. Holds one node per level, not the index; at
/// most `max` leaves (more, or an index we cannot follow: `None`, scan linearly).
pub fn walk_candidates(
    root: &[u8],
    hash: u32,
    nblocks: u64,
    max: usize,
    read: &mut dyn FnMut(u32) -> Result<Vec<u8>, FsError>,
) -> Result<Option<Vec<u32>>, FsError> {
    let levels = *root.get(0x1E).unwrap_or(&0) as usize;
    let info_len = *root.get(0x1D).unwrap_or(&0) as usize;
    if levels > 2 || info_len != 8 {
        return Ok(None);
    }
    // Down to the leaf: at each level the last entry whose start hash is <= hash.
    let mut path: Vec<Step> = Vec::with_capacity(levels + 1);
    let mut node = root.to_vec();
    let mut at = 0x18 + info_len;
    loop {
        let Some(mut step) = Step::new(node, at) else {
            return Ok(None);
        };
        let (mut lo, mut hi) = (1usize, step.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if step.hash(mid) > hash {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        step.idx = lo - 1;
        let Some(child) = step.child(nblocks) else {
            return Ok(None);
        };
        path.push(step);
        if path.len() > levels {
            break;
        }
        node = read(child)?;
        at = 8;
    }
    let mut out = Vec::new();
    loop {
        let Some(leaf) = path.last().and_then(|s| s.child(nblocks)) else {
            return Ok(None);
        };
        if out.len() >= max {
            return Ok(None);
        }
        out.push(leaf);
        // The next entry in hash order: at the deepest level that has one.
        let Some(k) = path.iter().rposition(|s| s.idx + 1 < s.count) else {
            return Ok(Some(out));
        };
        path.truncate(k + 1);
        let step = &mut path[k];
        step.idx += 1;
        if step.hash(step.idx) & !1 != hash {
            return Ok(Some(out));
        }
        // Its leftmost leaf: entry 0 of each node below (which starts at that hash).
        while path.len() <= levels {
            let Some(child) = path.last().and_then(|s| s.child(nblocks)) else {
                return Ok(None);
            };
            let Some(step) = Step::new(read(child)?, 8) else {
                return Ok(None);
            };
            path.push(step);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn str2hashbuf_pads_like_e2fsprogs() {
        // "ab": pad = 0x02020202; val = 'a' + (pad << 8), then 'b' + (val << 8).
        let b = str2hashbuf(b"ab", 4, true);
        let pad = 0x0202_0202u32;
        let v = 0x62u32.wrapping_add((0x61u32.wrapping_add(pad << 8)) << 8);
        assert_eq!(b[..4], [v, pad, pad, pad]);
    }

    /// An interior node: one unused record over the block, count/limit at 8, the
    /// dx_tail after `limit` entries.
    fn node(bs: usize, count: u16) -> Vec<u8> {
        let mut b = alloc::vec![0u8; bs];
        b[4..6].copy_from_slice(&(bs as u16).to_le_bytes());
        let limit = ((bs - 8 - DX_TAIL) / 8) as u16;
        b[8..10].copy_from_slice(&limit.to_le_bytes());
        b[10..12].copy_from_slice(&count.to_le_bytes());
        for i in 0..count as usize {
            b[12 + 8 * i..16 + 8 * i].copy_from_slice(&(i as u32 + 1).to_le_bytes());
            if i > 0 {
                b[8 + 8 * i..12 + 8 * i].copy_from_slice(&(i as u32 * 0x1000).to_le_bytes());
            }
        }
        b
    }

    #[test]
    fn dx_csum_covers_used_entries_and_reserved_word() {
        let seed = 0x1234_5678;
        let mut b = node(1024, 3);
        let (tail, c) = dx_csum(&b, seed).unwrap();
        assert_eq!(tail, 8 + 126 * 8);
        // crc32c(seed, used part), then dt_reserved, then a zero dt_checksum.
        let want = crc32c(crc32c(seed, &b[..8 + 3 * 8]), &[0; 8]);
        assert_eq!(c, want);
        assert!(!dx_csum_ok(&b, seed));
        b[tail + 4..tail + 8].copy_from_slice(&c.to_le_bytes());
        assert!(dx_csum_ok(&b, seed));
        assert!(!dx_csum_ok(&b, seed ^ 1));
        // Unused entry slots are not covered; used ones, count and dt_reserved are.
        let mut u = b.clone();
        u[8 + 5 * 8] ^= 1;
        assert!(dx_csum_ok(&u, seed));
        for off in [4, 10, 8 + 2 * 8 + 4, tail, tail + 4] {
            let mut x = b.clone();
            x[off] ^= 0x40;
            assert!(!dx_csum_ok(&x, seed), "byte {off}");
        }
        // count > limit, a limit leaving no room for the tail: never verified.
        let mut x = b.clone();
        x[10..12].copy_from_slice(&200u16.to_le_bytes());
        assert_eq!(dx_csum(&x, seed), None);
        let mut x = b.clone();
        x[8..10].copy_from_slice(&127u16.to_le_bytes());
        assert_eq!(dx_csum(&x, seed), None);
        assert_eq!(dx_csum(&[0u8; 4], seed), None);
        assert_eq!(dx_csum(&[], seed), None);
    }

    #[test]
    fn countlimit_offset_of_root_and_node() {
        let bs = 1024;
        assert_eq!(countlimit_offset(&node(bs, 1)), Some(8));
        let mut r = alloc::vec![0u8; bs];
        r[4] = 12;
        r[12 + 4..12 + 6].copy_from_slice(&((bs - 12) as u16).to_le_bytes());
        r[0x1D] = 8;
        assert_eq!(countlimit_offset(&r), Some(0x20));
        r[0x18] = 1; // reserved_zero
        assert_eq!(countlimit_offset(&r), None);
        r[0x18] = 0;
        r[0x1D] = 16; // info_length
        assert_eq!(countlimit_offset(&r), None);
        r[0x1D] = 8;
        r[12 + 4] = 0; // ".." not over the rest of the block
        assert_eq!(countlimit_offset(&r), None);
        let mut leaf = alloc::vec![0u8; bs];
        leaf[4..6].copy_from_slice(&((bs - 12) as u16).to_le_bytes());
        assert_eq!(countlimit_offset(&leaf), None);
    }

    #[test]
    fn hashes_are_even_and_not_eof() {
        for v in 0..6 {
            let h = name_hash(b"some-name", v, [0; 4]).unwrap();
            assert_eq!(h & 1, 0);
            assert_ne!(h, 0x7fff_ffff << 1);
        }
        assert_eq!(name_hash(b"x", 6, [0; 4]), None);
    }
    /// A synthetic 2-level index over 1 KiB blocks: the root (block 0) points at
    /// `fan` interior nodes (blocks 1..=fan), each at `per` leaves, numbered from
    /// 100 on; start hashes from `hashes` (sorted, with runs of equal values and
    /// collision bits), shared between a node's first entry and its parent's.
    fn synthetic(fan: usize, per: usize) -> (Vec<u8>, alloc::collections::BTreeMap<u32, Vec<u8>>) {
        let bs = 1024;
        let total = fan * per;
        // Hashes: sorted, every fifth repeating the last (with the collision bit).
        let mut hashes = Vec::new();
        let mut h = 0u32;
        for i in 0..total {
            if i % 5 == 4 {
                hashes.push(h | 1);
            } else {
                h += 0x0010_0000;
                hashes.push(h);
            }
        }
        hashes[0] = 0;
        let entry = |b: &mut [u8], at: usize, i: usize, hash: u32, blk: u32| {
            if i > 0 {
                b[at + 8 * i..at + 8 * i + 4].copy_from_slice(&hash.to_le_bytes());
            }
            b[at + 8 * i + 4..at + 8 * i + 8].copy_from_slice(&blk.to_le_bytes());
        };
        let mut root = alloc::vec![0u8; bs];
        root[4] = 12;
        root[16..18].copy_from_slice(&((bs - 12) as u16).to_le_bytes());
        root[0x1D] = 8;
        root[0x1E] = 1;
        root[0x20..0x22].copy_from_slice(&120u16.to_le_bytes());
        root[0x22..0x24].copy_from_slice(&(fan as u16).to_le_bytes());
        let mut nodes = alloc::collections::BTreeMap::new();
        for n in 0..fan {
            entry(&mut root, 0x20, n, hashes[n * per], n as u32 + 1);
            let mut b = node(bs, per as u16);
            for k in 0..per {
                entry(
                    &mut b,
                    8,
                    k,
                    hashes[n * per + k],
                    100 + (n * per + k) as u32,
                );
            }
            nodes.insert(n as u32 + 1, b);
        }
        (root, nodes)
    }

    #[test]
    fn walking_the_index_finds_what_the_flattened_one_does() {
        for (fan, per) in [(1, 1), (1, 7), (3, 5), (7, 11), (20, 100)] {
            let (root, nodes) = synthetic(fan, per);
            let mut read = |b: u32| Ok(nodes.get(&b).cloned().unwrap_or_default());
            let nblocks = 100 + (fan * per) as u64;
            let Flat::Index(flat) = flatten(&root, nblocks, usize::MAX, &mut read).unwrap() else {
                panic!("not flattened");
            };
            assert_eq!(flat.len(), fan * per);
            assert!(matches!(
                flatten(&root, nblocks, flat.len() - 1, &mut read).unwrap(),
                Flat::TooLarge
            ));
            let mut probes: Vec<u32> = flat
                .iter()
                .flat_map(|&(h, _)| [h & !1, h.wrapping_sub(2), h + 2])
                .collect();
            probes.extend([0, 2, u32::MAX - 1]);
            for hash in probes {
                let want = candidate_leaves(&flat, hash);
                let got = walk_candidates(&root, hash, nblocks, 64, &mut read).unwrap();
                assert_eq!(got.as_ref(), Some(&want), "{fan}x{per} hash {hash:#x}");
                if want.len() > 1 {
                    let capped = walk_candidates(&root, hash, nblocks, want.len() - 1, &mut read);
                    assert_eq!(capped.unwrap(), None);
                }
            }
        }
    }

    #[test]
    fn leaf_split_halves_by_size_and_marks_collisions() {
        // Distinct hashes: the upper half moves, its first hash starts the new leaf.
        let recs: Vec<(u32, usize, usize)> = (0..40)
            .map(|i| ((40 - i) as u32 * 0x100, i * 24, 24))
            .collect();
        let s = split_leaf(recs, 1024).unwrap();
        assert_eq!(s.low.len() + s.high.len(), 40);
        assert!(s.low.len() >= 18 && s.high.len() >= 18, "{}", s.high.len());
        assert!(s.low.iter().all(|&(h, _)| h < s.hash2));
        assert!(s.high.iter().all(|&(h, _)| h >= s.hash2));
        assert_eq!(s.hash2 & 1, 0);
        // One hash for every name: both leaves hold it, the continuation bit says so.
        let recs: Vec<(u32, usize, usize)> = (0..40).map(|i| (0x5000, i * 24, 24)).collect();
        let s = split_leaf(recs, 1024).unwrap();
        assert!(!s.low.is_empty() && !s.high.is_empty());
        assert_eq!(s.hash2, 0x5001);
        // A name of that hash is looked for in both.
        let flat = [(0, 7), (0x5001, 9)];
        assert_eq!(candidate_leaves(&flat, 0x5000), [7, 9]);
        assert_eq!(split_leaf(alloc::vec![(1, 0, 12)], 1024).map(|_| ()), None);
    }

    #[test]
    fn index_entries_insert_in_order() {
        let mut b = node(1024, 3);
        insert_entry(&mut b, 8, 2, 0x1800, 50);
        assert_eq!(get16(&b, 10), 4);
        let got: Vec<(u32, u32)> = (1..4)
            .map(|i| (get32(&b, 8 + 8 * i), get32(&b, 12 + 8 * i)))
            .collect();
        assert_eq!(got, [(0x1000, 2), (0x1800, 50), (0x2000, 3)]);
        seal(&mut b, 9);
        assert!(dx_csum_ok(&b, 9));
        let mut n = alloc::vec![0u8; 4096];
        init_node(&mut n, true);
        assert_eq!(countlimit_offset(&n), Some(8));
        assert_eq!(get16(&n, 8) as usize, node_limit(4096, true));
        let mut r = alloc::vec![0xAAu8; 1024];
        init_root(&mut r, 12, 2, 1, 1, true);
        assert_eq!(countlimit_offset(&r), Some(0x20));
        assert_eq!(get16(&r, 0x20), 123);
        seal(&mut r, 3);
        assert!(dx_csum_ok(&r, 3));
        let path = find_path(&r, 0x1234, 2, &mut |_| Ok(Vec::new())).unwrap();
        let (frames, leaf) = path.unwrap();
        assert_eq!((frames.len(), leaf, frames[0].full()), (1, 1, false));
    }

    #[test]
    fn interior_frontier_is_capped() {
        // A 3-level tree whose every node claims 126 children: the walk stops at
        // MAX_NODES nodes, reading no more than that many.
        let bs = 1024;
        let mut root = alloc::vec![0u8; bs];
        root[0x1D] = 8;
        root[0x1E] = 3;
        root[0x20..0x22].copy_from_slice(&123u16.to_le_bytes());
        root[0x22..0x24].copy_from_slice(&123u16.to_le_bytes());
        for i in 0..123 {
            root[0x24 + 8 * i..0x28 + 8 * i].copy_from_slice(&(i as u32 + 1).to_le_bytes());
        }
        let mut reads = 0usize;
        let full = node(bs, 126);
        let nodes = index_nodes(&root, &mut |_| {
            reads += 1;
            Ok(full.clone())
        })
        .unwrap();
        assert!(nodes.len() <= MAX_NODES + 1, "{}", nodes.len());
        assert!(reads <= MAX_NODES + 1, "{reads}");
    }
}

#[cfg(test)]
mod vectors {
    use super::name_hash;

    /// Values from e2fsprogs: `debugfs -R "dx_hash -h ALG NAME"` (zero seed).
    #[test]
    fn match_debugfs_dx_hash() {
        assert_eq!(name_hash(b"abc", 0, [0; 4]), Some(0x75af_d992));
        assert_eq!(
            name_hash(b"1f-nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn", 0, [0; 4]),
            Some(0x2a2a_fec0)
        );
        assert_eq!(name_hash(b"abc", 1, [0; 4]), Some(0xd196_a868));
        assert_eq!(name_hash(b"abc", 2, [0; 4]), Some(0xb143_5ec4));
    }
}
