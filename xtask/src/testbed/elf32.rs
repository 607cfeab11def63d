//! The kernel as an ELF32 for `kernel=` in an HVM guest.
//!
//! What QEMU-xen (Xen 4.17, Debian's QEMU 7.2) needs to boot a kernel from `kernel=` in
//! an HVM guest through its PVH note (measured in the test bed):
//! - the machine `xenfv-4.2`: libxl asks for `xenfv`, an alias of `xenfv-3.1`, which
//!   has QEMU's PVH loader off; the scenario adds `-machine xenfv-4.2` (the last
//!   `-machine` wins);
//! - an ELF32: the device model is `qemu-system-i386`, whose ELF loader takes only
//!   `EM_386` ("Error while loading elf kernel"); the PVH entry is 32-bit code and the
//!   image lives below 4 GiB, so the same segments behind an ELF32 header boot the same
//!   way (what `objcopy -O elf32-i386` does, without needing binutils): [`from_elf64`];
//! - segments clear of hvmloader: QEMU writes the ELF's segments into guest RAM when it
//!   starts, before the guest runs, and hvmloader is already there at
//!   [`HVMLOADER_START`]..[`HVMLOADER_END`] (with its firmware module and start info):
//!   a kernel at 1 MiB overwrites it, and the guest triple-faults in hvmloader's first
//!   instructions. A probe linked at 4 MiB booted fine: [`check_hvm_load_range`].

use crate::util::{Error, Result};

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
/// Where the original file starts in the output: page-aligned, so every segment keeps
/// its file offset modulo the page size.
const BODY: usize = 0x1000;
/// Guest-physical range the domain builder fills before QEMU starts (hvmloader at
/// 0x100000, its SeaBIOS module and the HVM start info up to ~0x175000), rounded up.
pub const HVMLOADER_START: u64 = 0x10_0000;
pub const HVMLOADER_END: u64 = 0x20_0000;

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

fn small(v: u64, what: &str) -> Result<u32> {
    u32::try_from(v)
        .map_err(|_| Error::msg(format!("ELF64 -> ELF32: {what} {v:#x} is above 4 GiB")))
}

/// An ELF64 program header.
struct Phdr {
    kind: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    paddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

fn phdrs64(elf64: &[u8]) -> Result<Vec<Phdr>> {
    if elf64.len() < 64 || &elf64[..4] != b"\x7fELF" || elf64[4] != 2 || elf64[5] != 1 {
        return Err(Error::msg("not a little-endian ELF64 file"));
    }
    let phoff = usize::try_from(u64_at(elf64, 32)).map_err(|_| Error::msg("bad e_phoff"))?;
    let phentsize = usize::from(u16_at(elf64, 54));
    let phnum = usize::from(u16_at(elf64, 56));
    let mut v = Vec::new();
    for i in 0..phnum {
        let o = phoff + i * phentsize;
        if o + 56 > elf64.len() {
            return Err(Error::msg("ELF64 program header out of the file"));
        }
        v.push(Phdr {
            kind: u32_at(elf64, o),
            flags: u32_at(elf64, o + 4),
            offset: u64_at(elf64, o + 8),
            vaddr: u64_at(elf64, o + 16),
            paddr: u64_at(elf64, o + 24),
            filesz: u64_at(elf64, o + 32),
            memsz: u64_at(elf64, o + 40),
            align: u64_at(elf64, o + 48),
        });
    }
    Ok(v)
}

/// Err with an explanation when a loadable segment overlaps hvmloader's range.
pub fn check_hvm_load_range(elf64: &[u8]) -> Result<()> {
    for p in phdrs64(elf64)?.iter().filter(|p| p.kind == PT_LOAD) {
        let (start, end) = (p.paddr, p.paddr + p.memsz);
        if start < HVMLOADER_END && end > HVMLOADER_START {
            return Err(Error::msg(format!(
                "the kernel loads at {start:#x}-{end:#x}, over hvmloader \
                 ({HVMLOADER_START:#x}-{HVMLOADER_END:#x}): QEMU-xen's PVH loader would \
                 overwrite it; link the kernel at 2 MiB or above for kernel= in HVM"
            )));
        }
    }
    Ok(())
}

/// An ELF32 (`EM_386`, program headers only) with the PT_LOAD and PT_NOTE segments of
/// `elf64`, an x86-64 ELF64 executable.
pub fn from_elf64(elf64: &[u8]) -> Result<Vec<u8>> {
    let segments = phdrs64(elf64)?; // checks the header first
    let entry = small(u64_at(elf64, 24), "entry")?;
    let mut phdrs: Vec<[u32; 8]> = Vec::new();
    for p in segments {
        if p.kind != PT_LOAD && p.kind != PT_NOTE {
            continue;
        }
        phdrs.push([
            p.kind,
            small(p.offset + BODY as u64, "p_offset")?,
            small(p.vaddr, "p_vaddr")?,
            small(p.paddr, "p_paddr")?,
            small(p.filesz, "p_filesz")?,
            small(p.memsz, "p_memsz")?,
            p.flags,
            small(p.align, "p_align")?,
        ]);
    }
    if !phdrs.iter().any(|p| p[0] == PT_NOTE) {
        return Err(Error::msg(
            "the kernel has no PT_NOTE segment (the PVH entry note)",
        ));
    }
    let mut out = Vec::with_capacity(BODY + elf64.len());
    out.extend_from_slice(b"\x7fELF\x01\x01\x01");
    out.resize(16, 0);
    out.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    out.extend_from_slice(&3u16.to_le_bytes()); // EM_386
    out.extend_from_slice(&1u32.to_le_bytes()); // EV_CURRENT
    out.extend_from_slice(&entry.to_le_bytes());
    out.extend_from_slice(&52u32.to_le_bytes()); // e_phoff
    out.extend_from_slice(&0u32.to_le_bytes()); // e_shoff: no section headers
    out.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    out.extend_from_slice(&52u16.to_le_bytes()); // e_ehsize
    out.extend_from_slice(&32u16.to_le_bytes()); // e_phentsize
    out.extend_from_slice(&(phdrs.len() as u16).to_le_bytes());
    out.extend_from_slice(&[0; 6]); // e_shentsize, e_shnum, e_shstrndx
    for p in &phdrs {
        for f in p {
            out.extend_from_slice(&f.to_le_bytes());
        }
    }
    if out.len() > BODY {
        return Err(Error::msg("too many program headers"));
    }
    out.resize(BODY, 0);
    out.extend_from_slice(elf64);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 with one PT_LOAD at `base` and one PT_NOTE.
    fn elf64(base: u64) -> Vec<u8> {
        let mut e = vec![0u8; 0x2000];
        e[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
        e[16..18].copy_from_slice(&2u16.to_le_bytes());
        e[18..20].copy_from_slice(&62u16.to_le_bytes());
        e[24..32].copy_from_slice(&(base + 0x43).to_le_bytes());
        e[32..40].copy_from_slice(&64u64.to_le_bytes());
        e[54..56].copy_from_slice(&56u16.to_le_bytes());
        e[56..58].copy_from_slice(&2u16.to_le_bytes());
        let ph = |e: &mut Vec<u8>, o: usize, t: u32, off: u64, addr: u64, sz: u64| {
            e[o..o + 4].copy_from_slice(&t.to_le_bytes());
            e[o + 8..o + 16].copy_from_slice(&off.to_le_bytes());
            e[o + 16..o + 24].copy_from_slice(&addr.to_le_bytes());
            e[o + 24..o + 32].copy_from_slice(&addr.to_le_bytes());
            e[o + 32..o + 40].copy_from_slice(&sz.to_le_bytes());
            e[o + 40..o + 48].copy_from_slice(&sz.to_le_bytes());
        };
        ph(&mut e, 64, PT_LOAD, 0x1000, base, 0x1000);
        ph(&mut e, 120, PT_NOTE, 0x1028, base + 0x28, 0x14);
        e
    }

    #[test]
    fn converts_headers_and_keeps_segments() {
        let src = elf64(0x40_0000);
        let out = from_elf64(&src).unwrap();
        assert_eq!(out[4], 1, "ELFCLASS32");
        assert_eq!(u16_at(&out, 18), 3, "EM_386");
        assert_eq!(u32_at(&out, 24), 0x40_0043, "entry");
        assert_eq!(u16_at(&out, 44), 2, "phnum");
        let note = 52 + 32;
        assert_eq!(u32_at(&out, note), PT_NOTE);
        assert_eq!(u32_at(&out, note + 4), 0x1028 + BODY as u32);
        assert_eq!(&out[BODY..], &src[..]);
    }

    #[test]
    fn load_range_against_hvmloader() {
        assert!(check_hvm_load_range(&elf64(0x10_0000)).is_err());
        assert!(check_hvm_load_range(&elf64(0x40_0000)).is_ok());
    }

    #[test]
    fn rejects_non_elf64() {
        assert!(from_elf64(b"\x7fELF\x01\x01\x01").is_err());
    }
}
