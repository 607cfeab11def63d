//! The few ACPI facts the kernel needs: how to power off and how to reset.
//!
//! From the RSDP (boot information, or a scan of the BIOS area) to the RSDT/XSDT, the
//! FADT ("FACP": PM1a/PM1b control blocks, reset register) and the DSDT, where the
//! `\_S5` package gives SLP_TYPa/b for soft-off (ACPI 6.4 §5.2.9, §7.4.2). All table
//! memory is read through [`PhysMemory`] and checksummed: firmware tables are input.

use xenlet_boot::{parse_rsdp, AcpiRoot, PhysMemory};

/// How to enter S5 and how to reset, from the FADT and DSDT.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PowerInfo {
    /// PM1a control block I/O port.
    pub pm1a_cnt: u16,
    /// PM1b control block I/O port (0 if none).
    pub pm1b_cnt: u16,
    /// SLP_TYPa/SLP_TYPb values for S5, when `\_S5` was found.
    pub s5: Option<(u8, u8)>,
    /// Reset register (I/O port) and value, when the FADT advertises one.
    pub reset: Option<(u16, u8)>,
}

const HEADER_BYTES: usize = 36;
/// Tables larger than this are refused rather than read.
const MAX_TABLE_BYTES: usize = 256 * 1024;

fn le32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}
fn le64(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// Scans the BIOS read-only area (0xE0000–0xFFFFF) for an RSDP.
pub fn scan_for_rsdp(mem: &dyn PhysMemory) -> Option<AcpiRoot> {
    let mut buf = [0u8; 36];
    (0xe0000u64..0x100000).step_by(16).find_map(|a| {
        mem.read(a, &mut buf[..8]).ok()?;
        if &buf[..8] != b"RSD PTR " {
            return None;
        }
        mem.read(a, &mut buf)
            .or_else(|()| mem.read(a, &mut buf[..20]))
            .ok()?;
        parse_rsdp(&buf)
    })
}

/// Reads the table at `addr` into `buf`, checking length and checksum; returns its length.
fn read_table(mem: &dyn PhysMemory, addr: u64, buf: &mut [u8]) -> Option<usize> {
    let mut h = [0u8; HEADER_BYTES];
    mem.read(addr, &mut h).ok()?;
    let len = le32(&h, 4)? as usize;
    if !(HEADER_BYTES..=buf.len()).contains(&len) {
        return None;
    }
    let t = buf.get_mut(..len)?;
    mem.read(addr, t).ok()?;
    (t.iter().fold(0u8, |a, b| a.wrapping_add(*b)) == 0).then_some(len)
}

/// Finds a table by signature through the XSDT (preferred) or RSDT.
fn find_table(mem: &dyn PhysMemory, root: &AcpiRoot, sig: &[u8; 4]) -> Option<u64> {
    let mut sdt = [0u8; 4096];
    let (addr, entry) = match root.xsdt {
        Some(x) => (x, 8),
        None => (u64::from(root.rsdt), 4),
    };
    let len = read_table(mem, addr, &mut sdt)?;
    (HEADER_BYTES..len).step_by(entry).find_map(|off| {
        let p = if entry == 8 {
            le64(&sdt, off)?
        } else {
            u64::from(le32(&sdt, off)?)
        };
        let mut s = [0u8; 4];
        mem.read(p, &mut s).ok()?;
        (&s == sig).then_some(p)
    })
}

/// Reads power-off and reset facts from the ACPI tables; `scratch` holds the DSDT
/// while it is searched (it must be as large as the DSDT, up to 256 KiB).
pub fn power_info(mem: &dyn PhysMemory, root: &AcpiRoot, scratch: &mut [u8]) -> Option<PowerInfo> {
    let fadt_addr = find_table(mem, root, b"FACP")?;
    let mut fadt = [0u8; 512];
    let flen = read_table(mem, fadt_addr, &mut fadt)?;
    let fadt = &fadt[..flen];
    let pm1a_cnt = u16::try_from(le32(fadt, 64)?).ok()?;
    let pm1b_cnt = u16::try_from(le32(fadt, 68).unwrap_or(0)).unwrap_or(0);
    // RESET_REG (GAS at 116) in system I/O space (0x01) with RESET_REG_SUP (flags bit 10).
    let flags = le32(fadt, 112).unwrap_or(0);
    let reset = (flen >= 129 && flags & (1 << 10) != 0 && fadt.get(116) == Some(&1))
        .then(|| Some((u16::try_from(le64(fadt, 120)?).ok()?, *fadt.get(128)?)))
        .flatten();
    let dsdt = match le64(fadt, 140).filter(|&x| flen >= 148 && x != 0) {
        Some(x) => x,
        None => u64::from(le32(fadt, 40)?),
    };
    let limit = scratch.len().min(MAX_TABLE_BYTES);
    let s5 = read_table(mem, dsdt, &mut scratch[..limit]).and_then(|n| find_s5(&scratch[..n]));
    Some(PowerInfo {
        pm1a_cnt,
        pm1b_cnt,
        s5,
        reset,
    })
}

/// Finds `Name(_S5, Package(){a, b, ...})` in AML and returns (SLP_TYPa, SLP_TYPb).
pub fn find_s5(aml: &[u8]) -> Option<(u8, u8)> {
    let mut from = 0;
    while let Some(pos) = aml.get(from..)?.windows(4).position(|w| w == b"_S5_") {
        let at = from + pos;
        from = at + 4;
        // NameOp (0x08), optionally with a root prefix '\'.
        let named = at >= 1
            && (aml[at - 1] == 0x08 || (at >= 2 && aml[at - 1] == b'\\' && aml[at - 2] == 0x08));
        if !named || aml.get(at + 4) != Some(&0x12) {
            continue;
        }
        // PackageOp PkgLength NumElements elements…
        let lead = *aml.get(at + 5)?;
        let mut p = at + 5 + 1 + usize::from(lead >> 6) + 1;
        let mut vals = [0u8; 2];
        for v in &mut vals {
            match *aml.get(p)? {
                0x0a => {
                    *v = *aml.get(p + 1)?;
                    p += 2;
                }
                0x00 => {
                    *v = 0;
                    p += 1;
                }
                0x01 => {
                    *v = 1;
                    p += 1;
                }
                0xff => {
                    *v = 0xff;
                    p += 1;
                }
                _ => return None,
            }
        }
        return Some((vals[0], vals[1]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Mem(Vec<(u64, Vec<u8>)>);
    impl PhysMemory for Mem {
        fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), ()> {
            for (b, d) in &self.0 {
                if addr >= *b && addr + buf.len() as u64 <= b + d.len() as u64 {
                    let o = (addr - b) as usize;
                    buf.copy_from_slice(&d[o..o + buf.len()]);
                    return Ok(());
                }
            }
            Err(())
        }
    }

    fn table(sig: &[u8; 4], len: usize, body: &[(usize, &[u8])]) -> Vec<u8> {
        let mut t = vec![0u8; len];
        t[..4].copy_from_slice(sig);
        t[4..8].copy_from_slice(&(len as u32).to_le_bytes());
        for (off, bytes) in body {
            t[*off..off + bytes.len()].copy_from_slice(bytes);
        }
        let sum = t.iter().fold(0u8, |a, b| a.wrapping_add(*b));
        t[9] = 0u8.wrapping_sub(sum);
        t
    }

    fn machine(dsdt_aml: &[u8]) -> (Mem, AcpiRoot) {
        let rsdt = table(
            b"RSDT",
            36 + 8,
            &[
                (36, &0x2000u32.to_le_bytes()),
                (40, &0x3000u32.to_le_bytes()),
            ],
        );
        let apic = table(b"APIC", 44, &[]);
        let mut fadt_fields: Vec<(usize, &[u8])> = vec![];
        let dsdt_ptr = 0x4000u32.to_le_bytes();
        let pm1a = 0x604u32.to_le_bytes();
        let reset_addr = 0xcf9u64.to_le_bytes();
        let flags = (1u32 << 10).to_le_bytes();
        fadt_fields.push((40, &dsdt_ptr));
        fadt_fields.push((64, &pm1a));
        fadt_fields.push((112, &flags));
        fadt_fields.push((116, &[1, 8, 0, 1]));
        fadt_fields.push((120, &reset_addr));
        fadt_fields.push((128, &[6]));
        let fadt = table(b"FACP", 244, &fadt_fields);
        let mut body = vec![0u8; 0];
        body.extend_from_slice(dsdt_aml);
        let dsdt = table(b"DSDT", 36 + body.len(), &[(36, &body)]);
        let mem = Mem(vec![
            (0x1000, rsdt),
            (0x2000, apic),
            (0x3000, fadt),
            (0x4000, dsdt),
        ]);
        (
            mem,
            AcpiRoot {
                revision: 0,
                rsdt: 0x1000,
                xsdt: None,
            },
        )
    }

    #[test]
    fn finds_pm1a_s5_and_reset() {
        // QEMU's DSDT: Name (_S5, Package (0x04) { Zero, Zero, Zero, Zero })
        let aml = [
            0x10, 0x08, b'_', b'S', b'5', b'_', 0x12, 0x06, 0x04, 0x00, 0x00, 0x00, 0x00,
        ];
        let (mem, root) = machine(&aml);
        let mut scratch = vec![0u8; 4096];
        let p = power_info(&mem, &root, &mut scratch).unwrap();
        assert_eq!(p.pm1a_cnt, 0x604);
        assert_eq!(p.pm1b_cnt, 0);
        assert_eq!(p.s5, Some((0, 0)));
        assert_eq!(p.reset, Some((0xcf9, 6)));
    }

    #[test]
    fn s5_with_byte_prefix_and_root_prefix() {
        let aml = [
            0x08, b'\\', b'_', b'S', b'5', b'_', 0x12, 0x08, 0x04, 0x0a, 0x05, 0x0a, 0x07, 0, 0,
        ];
        assert_eq!(find_s5(&aml), Some((5, 7)));
        // "_S5_" inside a method name or string is skipped
        let aml = [b'x', b'_', b'S', b'5', b'_', 0x12, 0x06, 0x04, 0x0a, 0x09];
        assert_eq!(find_s5(&aml), None);
        // truncated package
        let aml = [0x08, b'_', b'S', b'5', b'_', 0x12, 0x06, 0x04, 0x0a];
        assert_eq!(find_s5(&aml), None);
    }

    #[test]
    fn corrupt_tables_are_refused() {
        let (mut mem, root) = machine(&[]);
        mem.0[2].1[64] ^= 0xff; // FADT checksum now wrong
        let mut scratch = vec![0u8; 4096];
        assert_eq!(power_info(&mem, &root, &mut scratch), None);
        let (mem, root) = machine(&[]);
        let p = power_info(&mem, &root, &mut scratch).unwrap();
        assert_eq!(p.s5, None, "no _S5 in an empty DSDT");
    }
}
