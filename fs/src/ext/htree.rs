//! Hashed (htree) directories. Reading scans every block linearly (index blocks look
//! like one empty record spanning the block). Before adding a name to an indexed
//! directory we de-index it: the root becomes a plain "."/".." block and interior index
//! blocks become empty blocks (each with a checksum tail), then `EXT4_INDEX_FL` is
//! cleared; e2fsck accepts the result as a linear directory.

use super::csum::{get16, get32};
use crate::error::FsError;
use alloc::vec::Vec;

/// Logical blocks of interior index nodes, read from the root block (`root`) with a
/// reader for logical blocks; capped at 3 levels.
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
            if nodes.contains(&b) || nodes.len() > 4096 {
                continue;
            }
            nodes.push(b);
            if level < levels {
                let blk = read(b)?;
                next.extend(entries(&blk, 8));
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
