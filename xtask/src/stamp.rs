//! Stamps the kernel ELF with the digest of its code and constants, which the kernel
//! checks at boot (`kernel/src/mm/image.rs`, where the digest is described): the bytes
//! of the allocated, read-only sections, from the first one's address to the last
//! one's end, as the single `PT_LOAD` segment puts them in memory
//! (`__kernel_start..__ro_end` in `linker.ld`). The stamp is found by its magic in
//! `.data` (the release kernel has no symbol table).

use crate::util::{Error, Result};

const MAGIC: &[u8; 16] = b"XENLET:IMAGE:FNV";
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const SHT_NOBITS: u32 = 8;

fn u16_at(b: &[u8], o: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], o: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], o: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
}

/// The kernel's digest (`mm::image::digest`): FNV-1a over little-endian 64-bit words,
/// seeded with the length, the last word padded with zeros.
pub fn digest(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ bytes.len() as u64;
    for w in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..w.len()].copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(word)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The file range of the image's code and constants: from the lowest allocated
/// read-only section's address to the highest one's end, mapped to file offsets
/// through the section headers (which must agree with one linear mapping).
fn read_only_range(elf: &[u8]) -> Option<(usize, usize)> {
    if elf.get(..4)? != b"\x7fELF" || *elf.get(4)? != 2 {
        return None;
    }
    let shoff = usize::try_from(u64_at(elf, 0x28)?).ok()?;
    let shentsize = usize::from(u16_at(elf, 0x3A)?);
    let shnum = usize::from(u16_at(elf, 0x3C)?);
    let mut lo: Option<(u64, u64)> = None; // (address, file offset)
    let mut hi = 0u64; // end address
    for i in 0..shnum {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        let ty = u32_at(elf, h + 4)?;
        let flags = u64_at(elf, h + 8)?;
        let addr = u64_at(elf, h + 0x10)?;
        let off = u64_at(elf, h + 0x18)?;
        let size = u64_at(elf, h + 0x20)?;
        if flags & SHF_ALLOC == 0 || flags & SHF_WRITE != 0 || ty == SHT_NOBITS || size == 0 {
            continue;
        }
        match lo {
            Some((a, o)) if addr >= a => {
                // every read-only section at the same address-to-offset distance
                if addr - a != off.checked_sub(o)? {
                    return None;
                }
            }
            Some((a, o)) => {
                if a - addr != o.checked_sub(off)? {
                    return None;
                }
                lo = Some((addr, off));
            }
            None => lo = Some((addr, off)),
        }
        hi = hi.max(addr.checked_add(size)?);
    }
    let (a, o) = lo?;
    let start = usize::try_from(o).ok()?;
    let end = start.checked_add(usize::try_from(hi - a).ok()?)?;
    (end <= elf.len()).then_some((start, end))
}

/// Writes the length and digest of the code and constants into the stamp; returns
/// them.
pub fn stamp(elf: &mut [u8]) -> Result<(u64, u64)> {
    let (start, end) = read_only_range(elf)
        .ok_or_else(|| Error::msg("kernel ELF: no readable code/constants range to stamp"))?;
    let mut found = elf
        .windows(MAGIC.len())
        .enumerate()
        .filter(|(_, w)| w == MAGIC);
    let at = match (found.next(), found.next()) {
        (Some((at, _)), None) => at,
        (None, _) => return Err(Error::msg("kernel ELF: no image stamp (mm/image.rs)")),
        (Some(_), Some(_)) => return Err(Error::msg("kernel ELF: two image stamps")),
    };
    if (start..end).contains(&at) {
        return Err(Error::msg(
            "kernel ELF: the image stamp lies in the bytes it covers",
        ));
    }
    let len = (end - start) as u64;
    let d = digest(&elf[start..end]);
    let slot = elf
        .get_mut(at + 16..at + 32)
        .ok_or_else(|| Error::msg("kernel ELF: image stamp cut short"))?;
    slot[..8].copy_from_slice(&len.to_le_bytes());
    slot[8..].copy_from_slice(&d.to_le_bytes());
    Ok((len, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_matches_the_kernels_vector() {
        // the same vector is in kernel/src/mm/image.rs's tests
        assert_eq!(digest(b"Xenlet"), 0xda07_8fbd_b99b_c301);
    }

    /// A minimal ELF64: `.text` (AX) at 0x200000/offset 0x100, `.rodata` (A) after a
    /// gap, `.data` (WA) holding the stamp.
    fn elf() -> Vec<u8> {
        let mut f = vec![0u8; 0x400];
        f[..5].copy_from_slice(b"\x7fELF\x02");
        let shoff = 0x300u64;
        f[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        f[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        f[0x3C..0x3E].copy_from_slice(&4u16.to_le_bytes());
        let sec =
            |f: &mut Vec<u8>, i: usize, ty: u32, flags: u64, addr: u64, off: u64, size: u64| {
                let h = shoff as usize + i * 64;
                f[h + 4..h + 8].copy_from_slice(&ty.to_le_bytes());
                f[h + 8..h + 16].copy_from_slice(&flags.to_le_bytes());
                f[h + 0x10..h + 0x18].copy_from_slice(&addr.to_le_bytes());
                f[h + 0x18..h + 0x20].copy_from_slice(&off.to_le_bytes());
                f[h + 0x20..h + 0x28].copy_from_slice(&size.to_le_bytes());
            };
        sec(&mut f, 1, 1, SHF_ALLOC | 4, 0x200000, 0x100, 0x30); // .text
        sec(&mut f, 2, 1, SHF_ALLOC, 0x200040, 0x140, 0x20); // .rodata
        sec(&mut f, 3, 1, SHF_ALLOC | SHF_WRITE, 0x200080, 0x180, 0x40); // .data
        for (i, b) in f[0x100..0x160].iter_mut().enumerate() {
            *b = i as u8 ^ 0x5a;
        }
        f[0x180..0x190].copy_from_slice(MAGIC);
        f
    }

    #[test]
    fn stamps_code_and_constants_only() {
        let mut f = elf();
        let (len, d) = stamp(&mut f).unwrap();
        assert_eq!(len, 0x60); // 0x200000..0x200060: .text, the gap, .rodata
        assert_eq!(d, digest(&f[0x100..0x160]));
        assert_eq!(u64_at(&f, 0x190), Some(0x60));
        assert_eq!(u64_at(&f, 0x198), Some(d));
        // stamping again gives the same (the stamp is outside what it covers)
        let again = f.clone();
        assert_eq!(stamp(&mut f).unwrap(), (len, d));
        assert_eq!(f, again);
        // writable data does not change it
        f[0x1a0] ^= 1;
        assert_eq!(stamp(&mut f).unwrap().1, d);
        // a constant does
        f[0x150] ^= 1;
        assert_ne!(stamp(&mut f).unwrap().1, d);
    }

    #[test]
    fn refuses_what_it_cannot_stamp_truly() {
        let mut f = elf();
        f[0x180] = b'x';
        assert!(stamp(&mut f).is_err(), "no stamp");
        let mut f = elf();
        f[0x1c0..0x1d0].copy_from_slice(MAGIC);
        assert!(stamp(&mut f).is_err(), "two stamps");
        let mut f = elf();
        f[0x120..0x130].copy_from_slice(MAGIC);
        f[0x180] = b'x';
        assert!(stamp(&mut f).is_err(), "a stamp inside the covered bytes");
        let mut f = elf();
        // .rodata's file offset no longer matches its address
        let h = 0x300 + 2 * 64;
        f[h + 0x18..h + 0x20].copy_from_slice(&0x148u64.to_le_bytes());
        assert!(stamp(&mut f).is_err(), "sections not linearly placed");
        assert!(stamp(&mut [0u8; 64]).is_err(), "not an ELF");
    }
}
