//! The E820 table Xen returns for `XENMEM_memory_map` (xen/include/public/memory.h):
//! entries "in the same format as returned by the BIOS INT 0x15 EAX=0xE820 call",
//! i.e. Xen's packed `struct e820entry`: addr u64, size u64, type u32 (20 bytes).
//! Used when a PVH start info carries no memory map (version 0, or no entries).

use crate::le::{u32_at, u64_at};
use crate::{MemoryKind, MemoryMap, MemoryRegion};

/// Bytes per entry.
pub const ENTRY_BYTES: usize = 20;

/// Parses the first `entries` entries of `buf` (as many as it holds, if fewer).
/// Empty regions are skipped; entries past [`MemoryMap::CAPACITY`] are counted as
/// dropped.
pub fn parse(buf: &[u8], entries: usize) -> MemoryMap {
    let mut map = MemoryMap::new();
    for e in buf.chunks_exact(ENTRY_BYTES).take(entries) {
        map.push(MemoryRegion {
            start: u64_at(e, 0).unwrap_or(0),
            len_bytes: u64_at(e, 8).unwrap_or(0),
            kind: MemoryKind::from_e820(u32_at(e, 16).unwrap_or(0)),
        });
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(addr: u64, size: u64, ty: u32) -> Vec<u8> {
        let mut e = Vec::new();
        e.extend(addr.to_le_bytes());
        e.extend(size.to_le_bytes());
        e.extend(ty.to_le_bytes());
        e
    }

    #[test]
    fn packed_20_byte_entries_as_xen_writes_them() {
        // What Xen 4.17 gives a 32 MiB PVH guest: RAM, the reserved special pages.
        let mut b = entry(0, 0x200_0000, 1);
        b.extend(entry(0xfc00_0000, 0x400_0000, 2));
        b.extend(entry(0x1000_0000, 0, 1)); // empty: skipped
        b.extend(entry(0x2000_0000, 0x1000, 3));
        b.extend([0xee; ENTRY_BYTES]); // beyond `entries`: ignored
        let m = parse(&b, 4);
        let r = m.regions();
        assert_eq!(r.len(), 3);
        assert_eq!(
            (r[0].start, r[0].len_bytes, r[0].kind),
            (0, 0x200_0000, MemoryKind::Usable)
        );
        assert_eq!(
            (r[1].start, r[1].len_bytes, r[1].kind),
            (0xfc00_0000, 0x400_0000, MemoryKind::Reserved)
        );
        assert_eq!(r[2].kind, MemoryKind::AcpiReclaimable);
        assert_eq!(m.usable_bytes(), 0x200_0000);
    }

    #[test]
    fn a_count_larger_than_the_buffer_and_a_torn_entry_are_cut() {
        let mut b = entry(0x10_0000, 0x10_0000, 1);
        b.extend(&entry(0x20_0000, 0x10_0000, 1)[..12]);
        let m = parse(&b, 1000);
        assert_eq!(m.regions().len(), 1);
        assert_eq!(m.usable_bytes(), 0x10_0000);
    }

    #[test]
    fn more_entries_than_the_map_holds_are_counted_as_dropped() {
        let n = MemoryMap::CAPACITY + 3;
        let b: Vec<u8> = (0..n as u64)
            .flat_map(|i| entry(i << 21, 0x1000, 1))
            .collect();
        let m = parse(&b, n);
        assert_eq!(m.regions().len(), MemoryMap::CAPACITY);
        assert_eq!(m.dropped(), 3);
    }
}
