//! Finding Xen through CPUID (xen/include/public/arch-x86/cpuid.h).
//!
//! Xen's leaves start at 0x40000000 + n·0x100 (n > 0 when it also offers Viridian
//! leaves for Windows): base+0 has the signature "XenVMMXenVMM" and the largest leaf,
//! base+1 the version, base+2 the hypercall-page MSR, base+4 the HVM features.

/// One CPUID result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    /// EAX.
    pub eax: u32,
    /// EBX.
    pub ebx: u32,
    /// ECX.
    pub ecx: u32,
    /// EDX.
    pub edx: u32,
}

/// What CPUID says about Xen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XenCpuid {
    /// Base leaf of Xen's range.
    pub base: u32,
    /// Largest Xen leaf.
    pub max_leaf: u32,
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Number of hypercall pages.
    pub hypercall_pages: u32,
    /// MSR to write the hypercall page address to.
    pub hypercall_msr: u32,
    /// HVM feature flags (base+4 EAX), when the leaf exists.
    pub hvm_features: u32,
    /// This vCPU's id (base+4 EBX) if XEN_HVM_CPUID_VCPU_ID_PRESENT.
    pub vcpu_id: Option<u32>,
}

/// `XEN_HVM_CPUID_VCPU_ID_PRESENT`.
const VCPU_ID_PRESENT: u32 = 1 << 3;

/// Scans for Xen's leaves with `cpuid(leaf)`.
pub fn detect(cpuid: impl Fn(u32) -> Regs) -> Option<XenCpuid> {
    (0x4000_0000u32..0x4001_0000)
        .step_by(0x100)
        .find_map(|base| {
            let r = cpuid(base);
            let mut sig = [0u8; 12];
            sig[0..4].copy_from_slice(&r.ebx.to_le_bytes());
            sig[4..8].copy_from_slice(&r.ecx.to_le_bytes());
            sig[8..12].copy_from_slice(&r.edx.to_le_bytes());
            if &sig != b"XenVMMXenVMM" || r.eax < base + 2 {
                return None;
            }
            let v = cpuid(base + 1);
            let h = cpuid(base + 2);
            let (hvm_features, vcpu_id) = if r.eax >= base + 4 {
                let f = cpuid(base + 4);
                (f.eax, (f.eax & VCPU_ID_PRESENT != 0).then_some(f.ebx))
            } else {
                (0, None)
            };
            Some(XenCpuid {
                base,
                max_leaf: r.eax,
                major: (v.eax >> 16) as u16,
                minor: v.eax as u16,
                hypercall_pages: h.eax,
                hypercall_msr: h.ebx,
                hvm_features,
                vcpu_id,
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(s: &[u8; 12], max: u32) -> Regs {
        let w = |i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap());
        Regs {
            eax: max,
            ebx: w(0),
            ecx: w(4),
            edx: w(8),
        }
    }

    /// What [`detect`] finds where leaf 0x4000_0000 alone answers, with signature
    /// `s` and 0x4000_0001 as its highest leaf.
    fn detect_one(s: &[u8; 12]) -> Option<XenCpuid> {
        detect(|l| {
            if l == 0x4000_0000 {
                sig(s, 0x4000_0001)
            } else {
                Regs::default()
            }
        })
    }

    #[test]
    fn finds_xen_after_viridian_leaves() {
        let found = detect(|leaf| match leaf {
            0x4000_0000 => sig(b"Microsoft Hv", 0x4000_0006),
            0x4000_0100 => sig(b"XenVMMXenVMM", 0x4000_0105),
            0x4000_0101 => Regs {
                eax: 4 << 16 | 17,
                ..Default::default()
            },
            0x4000_0102 => Regs {
                eax: 1,
                ebx: 0x4000_0000,
                ..Default::default()
            },
            0x4000_0104 => Regs {
                eax: 0x1f,
                ebx: 0,
                ..Default::default()
            },
            _ => Regs::default(),
        })
        .unwrap();
        assert_eq!(found.base, 0x4000_0100);
        assert_eq!((found.major, found.minor), (4, 17));
        assert_eq!(found.hypercall_msr, 0x4000_0000);
        assert_eq!(found.hypercall_pages, 1);
        assert_eq!(found.vcpu_id, Some(0));
    }

    #[test]
    fn no_xen_on_kvm_or_bare_metal() {
        assert_eq!(detect_one(b"KVMKVMKVM\0\0\0"), None);
        assert_eq!(detect(|_| Regs::default()), None);
        // a signature with a max leaf too small for the hypercall leaf is not usable
        assert_eq!(detect_one(b"XenVMMXenVMM"), None);
    }
}
