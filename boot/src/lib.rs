//! Xenlet boot path: entry code and the boot information loaders hand over.
//!
//! `entry` holds the 32-bit entry points and the long-mode switch (assembly). The rest
//! parses what the loader left in memory — `hvm_start_info` for PVH
//! (xen/include/public/arch-x86/hvm/start_info.h) and the multiboot2 information
//! structure — into one owned [`BootInfo`]. Parsing reads guest memory only through
//! the [`PhysMemory`] trait, so it is safe code and is unit-tested on the host with
//! hostile inputs; the kernel supplies the one unsafe reader.
#![cfg_attr(not(test), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod e820;
pub mod entry;
mod info;
pub mod multiboot2;
pub mod pvh;

pub use info::{
    AcpiRoot, BootInfo, BootInfoError, BootProtocol, CmdLine, MemoryKind, MemoryMap, MemoryRegion,
};

/// Read access to physical memory as the loader left it.
pub trait PhysMemory {
    /// Fills `buf` from physical address `addr`; `Err(())` if any byte is out of reach.
    #[allow(clippy::result_unit_err)]
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), ()>;
}

/// Little-endian field readers over a byte slice; `None` when out of bounds.
pub(crate) mod le {
    pub fn u32_at(b: &[u8], off: usize) -> Option<u32> {
        Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
    }
    pub fn u64_at(b: &[u8], off: usize) -> Option<u64> {
        Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
    }
}

/// Parses an ACPI RSDP (ACPI 6.4 §5.2.5.3) from its bytes, checksums included.
pub fn parse_rsdp(bytes: &[u8]) -> Option<AcpiRoot> {
    let v1 = bytes.get(..20)?;
    if &v1[..8] != b"RSD PTR " || v1.iter().fold(0u8, |a, b| a.wrapping_add(*b)) != 0 {
        return None;
    }
    let revision = *v1.get(15)?;
    let rsdt = le::u32_at(v1, 16)?;
    let mut xsdt = None;
    if revision >= 2 {
        let len = le::u32_at(bytes, 20)? as usize;
        if let Some(full) = bytes.get(..len.max(36)) {
            if full.iter().fold(0u8, |a, b| a.wrapping_add(*b)) == 0 {
                xsdt = le::u64_at(full, 24).filter(|&x| x != 0);
            }
        }
    }
    Some(AcpiRoot {
        revision,
        rsdt,
        xsdt,
    })
}

#[cfg(test)]
pub(crate) mod testmem {
    //! A sparse fake physical memory for the parser tests.
    use super::PhysMemory;

    #[derive(Default)]
    pub struct FakeMem {
        chunks: Vec<(u64, Vec<u8>)>,
    }

    impl FakeMem {
        pub fn put(&mut self, addr: u64, bytes: &[u8]) {
            self.chunks.push((addr, bytes.to_vec()));
        }
    }

    impl PhysMemory for FakeMem {
        fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), ()> {
            for (base, data) in &self.chunks {
                let end = base + data.len() as u64;
                if addr >= *base && addr + buf.len() as u64 <= end {
                    let off = (addr - base) as usize;
                    buf.copy_from_slice(&data[off..off + buf.len()]);
                    return Ok(());
                }
            }
            Err(())
        }
    }

    pub fn rsdp_v2(xsdt: u64) -> Vec<u8> {
        let mut r = vec![0u8; 36];
        r[..8].copy_from_slice(b"RSD PTR ");
        r[9..15].copy_from_slice(b"XENLET");
        r[15] = 2;
        r[16..20].copy_from_slice(&0x1234u32.to_le_bytes());
        r[20..24].copy_from_slice(&36u32.to_le_bytes());
        r[24..32].copy_from_slice(&xsdt.to_le_bytes());
        let s1 = r[..20].iter().fold(0u8, |a, b| a.wrapping_add(*b));
        r[8] = 0u8.wrapping_sub(s1);
        let s2 = r.iter().fold(0u8, |a, b| a.wrapping_add(*b));
        r[32] = 0u8.wrapping_sub(s2);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsdp_checksums_are_checked() {
        let good = testmem::rsdp_v2(0xdead_b000);
        let root = parse_rsdp(&good).unwrap();
        assert_eq!(root.revision, 2);
        assert_eq!(root.rsdt, 0x1234);
        assert_eq!(root.xsdt, Some(0xdead_b000));
        let mut bad = good.clone();
        bad[16] ^= 1;
        assert_eq!(parse_rsdp(&bad), None);
        let mut bad_ext = good.clone();
        bad_ext[25] ^= 1; // only the extended checksum breaks: keep the RSDT
        let r = parse_rsdp(&bad_ext).unwrap();
        assert_eq!(r.xsdt, None);
        assert_eq!(parse_rsdp(&good[..10]), None);
    }
}
