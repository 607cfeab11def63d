//! Linear directory blocks: `ext4_dir_entry_2` records chained by `rec_len`, and under
//! metadata_csum a 12-byte tail record carrying the block's checksum.

use super::csum::{get16, get32, put16, put32};
use crate::crc32c::crc32c;
use crate::error::FsError;
use crate::types::FileType;
use alloc::format;
use alloc::vec::Vec;

/// Size of the checksum tail.
pub const TAIL: usize = 12;

/// One record in a block.
#[derive(Clone, Copy, Debug)]
pub struct Rec {
    /// Offset in the block.
    pub off: usize,
    /// Inode (0: unused record).
    pub inode: u32,
    /// Record length.
    pub rec_len: usize,
    /// Name length.
    pub name_len: usize,
    /// File type code.
    pub ftype: u8,
}

impl Rec {
    /// The name bytes.
    pub fn name<'a>(&self, block: &'a [u8]) -> &'a [u8] {
        block
            .get(self.off + 8..self.off + 8 + self.name_len)
            .unwrap_or(&[])
    }
    /// Bytes this record needs.
    pub fn used(&self) -> usize {
        if self.inode == 0 {
            0
        } else {
            rec_len_for(self.name_len)
        }
    }
}

/// Record length for a name of `n` bytes.
pub fn rec_len_for(n: usize) -> usize {
    (8 + n + 3) & !3
}

/// The directory file type code for an inode mode.
pub fn ftype_of_mode(mode: u16) -> u8 {
    match mode & 0o170000 {
        0o100000 => 1,
        0o040000 => 2,
        0o020000 => 3,
        0o060000 => 4,
        0o010000 => 5,
        0o140000 => 6,
        0o120000 => 7,
        _ => 0,
    }
}

/// The kind a file type code names.
pub fn ftype_kind(code: u8) -> Option<FileType> {
    match code {
        1 => Some(FileType::File),
        2 => Some(FileType::Dir),
        7 => Some(FileType::Symlink),
        3..=6 => Some(FileType::Special),
        _ => None,
    }
}

fn decode_rec_len(v: u16, bs: usize) -> usize {
    if v == 0 || v == 0xFFFF {
        // 64 KiB blocks encode a full-block record this way.
        if bs >= 65536 {
            return 65536;
        }
    }
    v as usize
}

fn encode_rec_len(n: usize) -> u16 {
    if n >= 65536 {
        0xFFFF
    } else {
        n as u16
    }
}

/// Whether the block ends in a checksum tail record.
pub fn has_tail(block: &[u8]) -> bool {
    let n = block.len();
    n >= TAIL
        && get32(block, n - 12) == 0
        && get16(block, n - 8) == 12
        && block[n - 6] == 0
        && block[n - 5] == 0xDE
}

/// Checksum of a block with a tail (under the inode's seed).
pub fn tail_csum(block: &[u8], seed: u32) -> u32 {
    crc32c(seed, &block[..block.len() - TAIL])
}

/// Whether the tail checksum is right.
pub fn tail_ok(block: &[u8], seed: u32) -> bool {
    has_tail(block) && tail_csum(block, seed) == get32(block, block.len() - 4)
}

/// Writes the tail record and its checksum.
pub fn set_tail(block: &mut [u8], seed: u32) {
    let n = block.len();
    if n < TAIL {
        return;
    }
    put32(block, n - 12, 0);
    put16(block, n - 8, 12);
    block[n - 6] = 0;
    block[n - 5] = 0xDE;
    let c = tail_csum(block, seed);
    put32(block, n - 4, c);
}

/// Parses the records in `block[..usable]`.
pub fn records(block: &[u8], usable: usize) -> Result<Vec<Rec>, FsError> {
    let mut v = Vec::new();
    for_each(block, usable, &mut |r| {
        v.push(r);
        false
    })?;
    Ok(v)
}

/// Calls `f` on each record in `block[..usable]` until it returns true (then returns
/// true). A malformed record ends the walk with an error.
pub fn for_each(
    block: &[u8],
    usable: usize,
    f: &mut dyn FnMut(Rec) -> bool,
) -> Result<bool, FsError> {
    let bs = block.len();
    let usable = usable.min(bs);
    let mut off = 0;
    while off < usable {
        let inode = get32(block, off);
        let rec_len = decode_rec_len(get16(block, off + 4), bs);
        let name_len = *block.get(off + 6).unwrap_or(&0) as usize;
        let ftype = *block.get(off + 7).unwrap_or(&0);
        if rec_len < 8
            || !rec_len.is_multiple_of(4)
            || off + rec_len > usable
            || (inode != 0 && 8 + name_len > rec_len)
        {
            return Err(FsError::Corrupt(format!(
                "directory entry at offset {off}: bad rec_len {rec_len}"
            )));
        }
        let r = Rec {
            off,
            inode,
            rec_len,
            name_len,
            ftype,
        };
        if f(r) {
            return Ok(true);
        }
        off += rec_len;
    }
    Ok(false)
}

/// Makes `block` an empty directory block (one unused record over `usable` bytes).
pub fn init_empty(block: &mut [u8], usable: usize) {
    block.fill(0);
    put16(block, 4, encode_rec_len(usable));
}

/// Writes a record at `off`.
pub fn write_rec(block: &mut [u8], off: usize, inode: u32, rec_len: usize, name: &[u8], ftype: u8) {
    put32(block, off, inode);
    put16(block, off + 4, encode_rec_len(rec_len));
    if let Some(b) = block.get_mut(off + 6) {
        *b = name.len() as u8;
    }
    if let Some(b) = block.get_mut(off + 7) {
        *b = ftype;
    }
    if let Some(d) = block.get_mut(off + 8..off + 8 + name.len()) {
        d.copy_from_slice(name);
    }
}

/// Adds `name` to the block if it has room; returns whether it did.
pub fn try_insert(
    block: &mut [u8],
    usable: usize,
    name: &[u8],
    inode: u32,
    ftype: u8,
) -> Result<bool, FsError> {
    let need = rec_len_for(name.len());
    for r in records(block, usable)? {
        if r.inode == 0 && r.rec_len >= need {
            write_rec(block, r.off, inode, r.rec_len, name, ftype);
            return Ok(true);
        }
        let used = r.used();
        if r.inode != 0 && r.rec_len >= used + need {
            put16(block, r.off + 4, encode_rec_len(used));
            write_rec(block, r.off + used, inode, r.rec_len - used, name, ftype);
            return Ok(true);
        }
    }
    Ok(false)
}

/// Rewrites `dst` as a block holding the live records of `src` at offsets `offs`,
/// in that order, packed from the start; the last one spans to `usable` (an empty
/// list gives an empty block). The caller checked that they fit.
pub fn pack(dst: &mut [u8], usable: usize, src: &[u8], offs: &[usize]) {
    init_empty(dst, usable);
    let mut at = 0;
    for (i, &o) in offs.iter().enumerate() {
        let name_len = *src.get(o + 6).unwrap_or(&0) as usize;
        let name = src.get(o + 8..o + 8 + name_len).unwrap_or(&[]);
        let len = if i + 1 == offs.len() {
            usable - at
        } else {
            rec_len_for(name_len)
        };
        write_rec(
            dst,
            at,
            get32(src, o),
            len,
            name,
            *src.get(o + 7).unwrap_or(&0),
        );
        at += len;
    }
}

/// Removes `name` from the block; returns its inode if it was there.
pub fn remove(block: &mut [u8], usable: usize, name: &[u8]) -> Result<Option<u32>, FsError> {
    let recs = records(block, usable)?;
    for (i, r) in recs.iter().enumerate() {
        if r.inode != 0 && r.name(block) == name {
            if i == 0 {
                put32(block, r.off, 0);
            } else {
                let p = recs[i - 1];
                put16(block, p.off + 4, encode_rec_len(p.rec_len + r.rec_len));
            }
            return Ok(Some(r.inode));
        }
    }
    Ok(None)
}

/// Points the existing record `name` at another inode; returns the old inode.
pub fn retarget(
    block: &mut [u8],
    usable: usize,
    name: &[u8],
    inode: u32,
    ftype: u8,
) -> Result<Option<u32>, FsError> {
    for r in records(block, usable)? {
        if r.inode != 0 && r.name(block) == name {
            put32(block, r.off, inode);
            if let Some(b) = block.get_mut(r.off + 7) {
                *b = ftype;
            }
            return Ok(Some(r.inode));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_round_trip() {
        let mut b = alloc::vec![0u8; 1024];
        let usable = 1024 - TAIL;
        init_empty(&mut b, usable);
        set_tail(&mut b, 7);
        assert!(tail_ok(&b, 7));
        assert!(try_insert(&mut b, usable, b"a", 12, 1).unwrap());
        assert!(try_insert(&mut b, usable, b"bb", 13, 2).unwrap());
        let r = records(&b, usable).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].name(&b), b"bb");
        assert_eq!(remove(&mut b, usable, b"a").unwrap(), Some(12));
        assert_eq!(remove(&mut b, usable, b"a").unwrap(), None);
        assert_eq!(remove(&mut b, usable, b"bb").unwrap(), Some(13));
        // Fill it up: 1012 bytes / 12-byte records = 84 names of 1..4 bytes.
        let mut n = 0;
        while try_insert(
            &mut b,
            usable,
            &[b'x', (n % 250) as u8 + 1, (n / 250) as u8 + 1],
            20,
            1,
        )
        .unwrap()
        {
            n += 1;
        }
        assert_eq!(n, 84);
    }

    #[test]
    fn corrupt_rec_len_is_an_error() {
        let mut b = alloc::vec![0u8; 1024];
        put16(&mut b, 4, 3);
        assert!(records(&b, 1024).is_err());
        put16(&mut b, 4, 2000);
        assert!(records(&b, 1024).is_err());
    }
}
