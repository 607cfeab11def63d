//! `hvm_start_info` parsing (xen/include/public/arch-x86/hvm/start_info.h).
//!
//! Layout (all little-endian): magic u32 @0 (0x336ec578), version u32 @4, flags u32 @8,
//! nr_modules u32 @12, modlist_paddr u64 @16, cmdline_paddr u64 @24, rsdp_paddr u64 @32;
//! version ≥ 1 adds memmap_paddr u64 @40, memmap_entries u32 @48, reserved u32 @52.
//! A memmap entry is addr u64, size u64, type u32, reserved u32 (24 bytes).
//! A module entry (`hvm_modlist_entry`) is paddr u64, size u64, cmdline u64, reserved u64.

use crate::le::{u32_at, u64_at};
use crate::{
    parse_rsdp, BootInfo, BootInfoError, BootProtocol, CmdLine, MemoryKind, MemoryMap,
    MemoryRegion, PhysMemory,
};

/// `XEN_HVM_START_MAGIC_VALUE`.
pub const START_MAGIC: u32 = 0x336e_c578;
const START_INFO_V0_BYTES: usize = 40;
const START_INFO_V1_BYTES: usize = 56;
const MEMMAP_ENTRY_BYTES: usize = 24;
const MODLIST_ENTRY_BYTES: usize = 32;
/// Refuse absurd tables instead of reading megabytes of junk.
const MAX_MEMMAP_ENTRIES: u32 = 1024;

/// Parses the `hvm_start_info` at `addr`.
pub fn parse(mem: &dyn PhysMemory, addr: u64) -> Result<BootInfo, BootInfoError> {
    let mut si = [0u8; START_INFO_V1_BYTES];
    mem.read(addr, &mut si[..START_INFO_V0_BYTES])
        .map_err(|()| BootInfoError::Unreadable(addr))?;
    let magic = u32_at(&si, 0).unwrap_or(0);
    if magic != START_MAGIC {
        return Err(BootInfoError::BadMagic(magic));
    }
    let version = u32_at(&si, 4).unwrap_or(0);
    // Version 0 has no memory map fields; version 1 may leave them empty. Either way
    // the map comes back empty and the kernel asks Xen (XENMEM_memory_map).
    if version >= 1 {
        mem.read(addr, &mut si)
            .map_err(|()| BootInfoError::Unreadable(addr))?;
    }
    let field = |off| u64_at(&si, off).unwrap_or(0);

    let mut memory = MemoryMap::new();
    let (map_addr, entries) = (field(40), u32_at(&si, 48).unwrap_or(0));
    let entries = if map_addr == 0 { 0 } else { entries };
    if entries > MAX_MEMMAP_ENTRIES {
        return Err(BootInfoError::Malformed("memmap_entries"));
    }
    for i in 0..u64::from(entries) {
        let mut e = [0u8; MEMMAP_ENTRY_BYTES];
        let at = map_addr + i * MEMMAP_ENTRY_BYTES as u64;
        mem.read(at, &mut e)
            .map_err(|()| BootInfoError::Unreadable(at))?;
        memory.push(MemoryRegion {
            start: u64_at(&e, 0).unwrap_or(0),
            len_bytes: u64_at(&e, 8).unwrap_or(0),
            kind: MemoryKind::from_e820(u32_at(&e, 16).unwrap_or(0)),
        });
    }

    let cmdline = match field(24) {
        0 => CmdLine::new(),
        p => read_cstr(mem, p),
    };
    let acpi = match field(32) {
        0 => None,
        p => {
            let mut r = [0u8; 36];
            // A revision-0 RSDP is only 20 bytes and may end a readable range.
            if mem.read(p, &mut r).is_err() {
                r = [0; 36];
                mem.read(p, &mut r[..20])
                    .map_err(|()| BootInfoError::Unreadable(p))?;
            }
            parse_rsdp(&r)
        }
    };

    let mut reserved_ranges = [(0u64, 0u64); 4];
    let nr_modules = u32_at(&si, 12).unwrap_or(0);
    let modlist = field(16);
    for (i, slot) in reserved_ranges
        .iter_mut()
        .enumerate()
        .take(nr_modules.min(4) as usize)
    {
        let mut m = [0u8; MODLIST_ENTRY_BYTES];
        let at = modlist + (i * MODLIST_ENTRY_BYTES) as u64;
        mem.read(at, &mut m)
            .map_err(|()| BootInfoError::Unreadable(at))?;
        let (p, s) = (u64_at(&m, 0).unwrap_or(0), u64_at(&m, 8).unwrap_or(0));
        *slot = (p, p.saturating_add(s));
    }

    Ok(BootInfo {
        protocol: BootProtocol::Pvh,
        memory,
        cmdline,
        acpi,
        reserved_ranges,
    })
}

/// Reads a NUL-terminated string of at most [`CmdLine::CAPACITY`] bytes.
pub(crate) fn read_cstr(mem: &dyn PhysMemory, addr: u64) -> CmdLine {
    let mut buf = [0u8; CmdLine::CAPACITY];
    let mut len = 0;
    while len < buf.len() {
        let mut b = [0u8; 1];
        if mem.read(addr + len as u64, &mut b).is_err() || b[0] == 0 {
            break;
        }
        buf[len] = b[0];
        len += 1;
    }
    CmdLine::from_bytes(&buf[..len])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testmem::{rsdp_v2, FakeMem};

    fn start_info(version: u32, cmdline: u64, rsdp: u64, map: u64, n: u32) -> Vec<u8> {
        let mut s = vec![0u8; 56];
        s[0..4].copy_from_slice(&START_MAGIC.to_le_bytes());
        s[4..8].copy_from_slice(&version.to_le_bytes());
        s[24..32].copy_from_slice(&cmdline.to_le_bytes());
        s[32..40].copy_from_slice(&rsdp.to_le_bytes());
        s[40..48].copy_from_slice(&map.to_le_bytes());
        s[48..52].copy_from_slice(&n.to_le_bytes());
        s
    }

    fn entry(addr: u64, size: u64, ty: u32) -> Vec<u8> {
        let mut e = vec![0u8; 24];
        e[0..8].copy_from_slice(&addr.to_le_bytes());
        e[8..16].copy_from_slice(&size.to_le_bytes());
        e[16..20].copy_from_slice(&ty.to_le_bytes());
        e
    }

    #[test]
    fn parses_qemu_like_start_info() {
        let mut m = FakeMem::default();
        m.put(0x6000, &start_info(1, 0x7000, 0xf0000, 0x8000, 3));
        m.put(0x7000, b"console=com1 xenlet.debug\0junk");
        let mut map = entry(0, 0x9fc00, 1);
        map.extend(entry(0xf0000, 0x10000, 2));
        map.extend(entry(0x100000, 0x7ee0000, 1));
        m.put(0x8000, &map);
        m.put(0xf0000, &rsdp_v2(0x7fe0000));
        let bi = parse(&m, 0x6000).unwrap();
        assert_eq!(bi.protocol, BootProtocol::Pvh);
        assert_eq!(bi.cmdline.as_str(), "console=com1 xenlet.debug");
        assert_eq!(bi.memory.regions().len(), 3);
        assert_eq!(bi.memory.usable_bytes(), 0x9fc00 + 0x7ee0000);
        assert_eq!(bi.memory.regions()[1].kind, MemoryKind::Reserved);
        assert_eq!(bi.acpi.unwrap().xsdt, Some(0x7fe0000));
    }

    #[test]
    fn rejects_bad_magic_and_huge_tables_and_takes_version0_without_a_map() {
        let mut m = FakeMem::default();
        let mut s = start_info(1, 0, 0, 0x8000, 1);
        s[0] ^= 0xff;
        m.put(0x1000, &s);
        assert!(matches!(parse(&m, 0x1000), Err(BootInfoError::BadMagic(_))));
        let mut m = FakeMem::default();
        // Version 0 (no map fields), and version 1 without entries or address: parsed,
        // with an empty map for the kernel to fill from XENMEM_memory_map.
        let mut v0 = start_info(0, 0x7000, 0, 0x8000, 3);
        v0.truncate(40);
        m.put(0x1000, &v0);
        m.put(0x7000, b"v0\0");
        let bi = parse(&m, 0x1000).unwrap();
        assert!(bi.memory.regions().is_empty());
        assert_eq!(bi.cmdline.as_str(), "v0");
        for (map, n) in [(0x8000, 0), (0, 3)] {
            let mut m = FakeMem::default();
            m.put(0x1000, &start_info(1, 0, 0, map, n));
            assert!(parse(&m, 0x1000).unwrap().memory.regions().is_empty());
        }
        let mut m = FakeMem::default();
        m.put(0x1000, &start_info(1, 0, 0, 0x8000, 100_000));
        assert!(matches!(
            parse(&m, 0x1000),
            Err(BootInfoError::Malformed(_))
        ));
        assert!(matches!(
            parse(&m, 0x5000),
            Err(BootInfoError::Unreadable(0x5000))
        ));
    }

    #[test]
    fn memory_map_pointing_nowhere_is_an_error_not_a_crash() {
        let mut m = FakeMem::default();
        m.put(0x1000, &start_info(1, 0, 0, 0xdead_0000, 4));
        assert_eq!(
            parse(&m, 0x1000).unwrap_err(),
            BootInfoError::Unreadable(0xdead_0000)
        );
    }
}
