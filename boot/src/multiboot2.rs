//! multiboot2 boot information parsing (The Multiboot2 Specification, §3.6).
//!
//! The structure starts with `total_size` u32 and a reserved u32, followed by tags,
//! each 8-byte aligned: `type` u32, `size` u32, payload. Tags used here: 1 (command
//! line), 6 (memory map: entry_size u32, entry_version u32, entries of base u64,
//! length u64, type u32, reserved u32), 14/15 (copies of the ACPI 1.0/2.0 RSDP),
//! 0 (end).

use crate::le::{u32_at, u64_at};
use crate::{
    parse_rsdp, BootInfo, BootInfoError, BootProtocol, CmdLine, MemoryKind, MemoryMap,
    MemoryRegion, PhysMemory,
};

/// Value of `%eax` when a multiboot2 loader enters the kernel.
pub const LOADER_MAGIC: u32 = 0x36d7_6289;
/// Refuse absurd structures; GRUB's are a few KiB.
const MAX_INFO_BYTES: u64 = 1024 * 1024;

/// A byte slice seen as physical memory starting at address 0.
struct SliceMem<'a>(&'a [u8]);

impl PhysMemory for SliceMem<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), ()> {
        let start = usize::try_from(addr).map_err(|_| ())?;
        let src = self
            .0
            .get(start..start.checked_add(buf.len()).ok_or(())?)
            .ok_or(())?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// Parses a multiboot2 information structure already copied into `info`.
pub fn parse_bytes(info: &[u8]) -> Result<BootInfo, BootInfoError> {
    parse(&SliceMem(info), 0)
}

/// Parses the multiboot2 information structure at `addr`, one tag at a time (no
/// large buffers: this runs on the boot stack).
pub fn parse(mem: &dyn PhysMemory, addr: u64) -> Result<BootInfo, BootInfoError> {
    let read = |at: u64, buf: &mut [u8]| {
        mem.read(at, buf)
            .map_err(|()| BootInfoError::Unreadable(at))
    };
    let mut head = [0u8; 8];
    read(addr, &mut head)?;
    let total = u64::from(u32_at(&head, 0).unwrap_or(0));
    if !(16..=MAX_INFO_BYTES).contains(&total) {
        return Err(BootInfoError::Malformed("total_size"));
    }
    let mut memory = MemoryMap::new();
    let mut cmdline = CmdLine::new();
    let mut acpi = None;
    let mut saw_map = false;
    let mut off = 8u64;
    loop {
        if off + 8 > total {
            return Err(BootInfoError::Malformed("tag past the end"));
        }
        read(addr + off, &mut head)?;
        let ty = u32_at(&head, 0).unwrap_or(0);
        let size = u64::from(u32_at(&head, 4).unwrap_or(0));
        if size < 8 || off + size > total {
            return Err(BootInfoError::Malformed("tag size"));
        }
        let payload_at = addr + off + 8;
        let payload_len = size - 8;
        match ty {
            0 => break,
            1 => {
                let mut buf = [0u8; CmdLine::CAPACITY];
                let n = payload_len.min(buf.len() as u64) as usize;
                read(payload_at, &mut buf[..n])?;
                cmdline = CmdLine::from_bytes(&buf[..n]);
            }
            6 => {
                saw_map = true;
                let mut h = [0u8; 8];
                if payload_len < 8 {
                    return Err(BootInfoError::Malformed("mmap tag size"));
                }
                read(payload_at, &mut h)?;
                let esize = u64::from(u32_at(&h, 0).unwrap_or(0));
                if esize < 24 {
                    return Err(BootInfoError::Malformed("mmap entry_size"));
                }
                let mut at = 8;
                while at + esize <= payload_len {
                    let mut e = [0u8; 24];
                    read(payload_at + at, &mut e)?;
                    memory.push(MemoryRegion {
                        start: u64_at(&e, 0).unwrap_or(0),
                        len_bytes: u64_at(&e, 8).unwrap_or(0),
                        kind: MemoryKind::from_e820(u32_at(&e, 16).unwrap_or(0)),
                    });
                    at += esize;
                }
            }
            // A 2.0 RSDP (tag 15) wins over the 1.0 copy (tag 14).
            14 | 15 => {
                let mut r = [0u8; 36];
                let n = payload_len.min(36) as usize;
                read(payload_at, &mut r[..n])?;
                let parsed = parse_rsdp(&r[..n]);
                if ty == 15 || acpi.is_none() {
                    acpi = parsed.or(acpi);
                }
            }
            _ => {}
        }
        off = (off + size + 7) & !7;
    }
    if !saw_map {
        return Err(BootInfoError::NoMemoryMap);
    }
    Ok(BootInfo {
        protocol: BootProtocol::Multiboot2,
        memory,
        cmdline,
        acpi,
        reserved_ranges: [(0, 0); 4],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmem::{rsdp_v2, FakeMem};

    fn tag(ty: u32, payload: &[u8]) -> Vec<u8> {
        let mut t = Vec::new();
        t.extend(ty.to_le_bytes());
        t.extend(((8 + payload.len()) as u32).to_le_bytes());
        t.extend(payload);
        while t.len() % 8 != 0 {
            t.push(0);
        }
        t
    }

    fn info(tags: &[Vec<u8>]) -> Vec<u8> {
        let mut body: Vec<u8> = tags.concat();
        body.extend(tag(0, &[]));
        let mut v = Vec::new();
        v.extend(((body.len() + 8) as u32).to_le_bytes());
        v.extend(0u32.to_le_bytes());
        v.extend(body);
        v
    }

    fn mmap(entries: &[(u64, u64, u32)]) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend(24u32.to_le_bytes());
        p.extend(0u32.to_le_bytes());
        for (b, l, t) in entries {
            p.extend(b.to_le_bytes());
            p.extend(l.to_le_bytes());
            p.extend(t.to_le_bytes());
            p.extend(0u32.to_le_bytes());
        }
        p
    }

    #[test]
    fn parses_grub_like_info() {
        let i = info(&[
            tag(1, b"xenlet.console=com1\0"),
            tag(2, b"GRUB 2.06\0"),
            tag(
                6,
                &mmap(&[
                    (0, 0x9fc00, 1),
                    (0x100000, 0x3ff00000, 1),
                    (0xfc000000, 0x4000000, 2),
                ]),
            ),
            tag(15, &rsdp_v2(0xfc009000)),
        ]);
        let mut m = FakeMem::default();
        m.put(0x10000, &i);
        let bi = parse(&m, 0x10000).unwrap();
        assert_eq!(bi.protocol, BootProtocol::Multiboot2);
        assert_eq!(bi.cmdline.as_str(), "xenlet.console=com1");
        assert_eq!(bi.memory.regions().len(), 3);
        assert_eq!(bi.memory.usable_bytes(), 0x9fc00 + 0x3ff00000);
        assert_eq!(bi.acpi.unwrap().xsdt, Some(0xfc009000));
    }

    #[test]
    fn malformed_structures_are_errors() {
        // no end tag: runs off the end
        let mut i = info(&[tag(6, &mmap(&[(0, 0x1000, 1)]))]);
        let n = i.len();
        i.truncate(n - 8);
        assert!(parse_bytes(&i).is_err());
        // a tag claiming to be longer than the structure
        let mut i = info(&[tag(1, b"x\0")]);
        i[12..16].copy_from_slice(&0x1000u32.to_le_bytes());
        assert_eq!(
            parse_bytes(&i).unwrap_err(),
            BootInfoError::Malformed("tag size")
        );
        // zero-size tag would loop forever
        let mut i = info(&[tag(1, b"x\0")]);
        i[12..16].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            parse_bytes(&i).unwrap_err(),
            BootInfoError::Malformed("tag size")
        );
        // no memory map
        assert_eq!(
            parse_bytes(&info(&[tag(1, b"x\0")])).unwrap_err(),
            BootInfoError::NoMemoryMap
        );
        // total_size out of range
        let mut m = FakeMem::default();
        m.put(0, &[4, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            parse(&m, 0).unwrap_err(),
            BootInfoError::Malformed("total_size")
        );
    }

    #[test]
    fn memory_map_overflow_is_counted_not_fatal() {
        let many: Vec<_> = (0..80u64).map(|i| (i * 0x10000, 0x1000, 1)).collect();
        let bi = parse_bytes(&info(&[tag(6, &mmap(&many))])).unwrap();
        assert_eq!(bi.memory.regions().len(), MemoryMap::CAPACITY);
        assert_eq!(bi.memory.dropped(), 80 - MemoryMap::CAPACITY);
    }
}
