//! The kernel image's check of itself: are its code and constants in memory the bytes
//! that were built?
//!
//! GRUB reads `xenlet.elf` through the firmware's disk driver and copies it into RAM
//! (or the toolstack, or QEMU, does for PVH); nothing checks that copy. A damaged
//! constant table (CRC-32C's, say) then shows up far away, as "superblock checksum
//! mismatch" on a healthy disk. So `cargo xtask build` stamps the image with a digest
//! of its code and read-only data (the bytes from `__kernel_start` to `__ro_end` in
//! `linker.ld`), and the kernel recomputes it first thing at boot.
//!
//! The digest is FNV-1a over little-endian 64-bit words (the last one padded with
//! zeros), seeded with the length: any change of one word changes it (xor and the
//! multiply by an odd prime are both one-to-one), it needs no table of its own in the
//! bytes it checks, and 1.5 MiB take a few milliseconds even under nested emulation.
//! It finds damage, it is no defence against an attacker (who could restamp).

use core::sync::atomic::AtomicU64;

/// What `xtask` finds in the ELF file to stamp (unique in the image).
pub const STAMP_MAGIC: [u8; 16] = *b"XENLET:IMAGE:FNV";

/// The stamp: the magic, then the length and digest `xtask` writes over the zeros.
/// Atomics make it writable data (in `.data`, outside the bytes it covers) and keep
/// the compiler from folding the zeros into the code.
#[repr(C)]
pub struct Stamp {
    magic: [u8; 16],
    len: AtomicU64,
    digest: AtomicU64,
}

#[used]
#[no_mangle]
static XENLET_IMAGE_STAMP: Stamp = Stamp {
    magic: STAMP_MAGIC,
    len: AtomicU64::new(0),
    digest: AtomicU64::new(0),
};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The digest of `bytes` (see the module's doc; `xtask` computes the same).
pub fn digest(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET ^ bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        h = (h ^ w).wrapping_mul(FNV_PRIME);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(last)).wrapping_mul(FNV_PRIME);
    }
    h
}

/// How the check came out (`len`: bytes of code and constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The bytes are the ones built.
    Intact {
        /// Bytes checked.
        len: u64,
    },
    /// A kernel not stamped by `xtask` (a bare `cargo build`): nothing to compare.
    NotStamped {
        /// Bytes left unchecked.
        len: u64,
    },
    /// The stamp was made for another layout: stale or damaged.
    OtherLength {
        /// The length in the stamp.
        stamped: u64,
        /// The length the running image was linked with.
        linked: u64,
    },
    /// Damaged in memory.
    Damaged {
        /// Bytes checked.
        len: u64,
        /// The digest `xtask` stamped.
        stamped: u64,
        /// The digest of the bytes in memory now.
        computed: u64,
    },
}

impl core::fmt::Display for Verdict {
    /// The boot line's words after "image: ".
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Verdict::Intact { len } => {
                write!(f, "code and constants intact ({} KiB)", len >> 10)
            }
            Verdict::NotStamped { len } => write!(
                f,
                "not stamped by `cargo xtask build`; {} KiB of code and constants unchecked",
                len >> 10
            ),
            Verdict::OtherLength { stamped, linked } => write!(
                f,
                "DAMAGED: stamped for {stamped} bytes of code and constants, linked with {linked}"
            ),
            Verdict::Damaged {
                len,
                stamped,
                computed,
            } => write!(
                f,
                "DAMAGED in memory: {len} bytes of code and constants digest {computed:#018x}, built {stamped:#018x}"
            ),
        }
    }
}

/// Compares `bytes` (the image's code and constants) with the stamp.
pub fn judge(bytes: &[u8], stamped_len: u64, stamped: u64) -> Verdict {
    let len = bytes.len() as u64;
    if stamped_len == 0 && stamped == 0 {
        return Verdict::NotStamped { len };
    }
    if stamped_len != len {
        return Verdict::OtherLength {
            stamped: stamped_len,
            linked: len,
        };
    }
    let computed = digest(bytes);
    if computed == stamped {
        Verdict::Intact { len }
    } else {
        Verdict::Damaged {
            len,
            stamped,
            computed,
        }
    }
}

/// Checks the running image against its stamp.
#[cfg(target_os = "none")]
pub fn check() -> Verdict {
    use core::sync::atomic::Ordering;
    extern "C" {
        static __kernel_start: u8;
        static __ro_end: u8;
    }
    let start = core::ptr::addr_of!(__kernel_start);
    let end = core::ptr::addr_of!(__ro_end);
    let len = end as usize - start as usize;
    // SAFETY: [__kernel_start, __ro_end) is the image's code and read-only data (linker.ld), loaded and identity-mapped before Rust runs, never written by the kernel, so a shared slice over it aliases no `&mut`.
    let bytes = unsafe { core::slice::from_raw_parts(start, len) };
    let s = &XENLET_IMAGE_STAMP;
    judge(
        bytes,
        s.len.load(Ordering::Relaxed),
        s.digest.load(Ordering::Relaxed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_changed_word_or_byte_is_found() {
        let mut image: [u8; 1003] = core::array::from_fn(|i| (i * 7 + 3) as u8);
        let good = digest(&image);
        assert_eq!(judge(&image, 1003, good), Verdict::Intact { len: 1003 });
        for at in [0, 8, 500, 999, 1002] {
            image[at] ^= 0x10;
            match judge(&image, 1003, good) {
                Verdict::Damaged {
                    computed, stamped, ..
                } => {
                    assert_eq!(stamped, good);
                    assert_ne!(computed, good, "byte {at}");
                }
                v => panic!("byte {at}: {v:?}"),
            }
            image[at] ^= 0x10;
        }
        assert_eq!(judge(&image, 1003, good), Verdict::Intact { len: 1003 });
    }

    #[test]
    fn unstamped_and_other_layouts_are_told_apart() {
        let image = [0u8; 64];
        assert_eq!(judge(&image, 0, 0), Verdict::NotStamped { len: 64 });
        assert_eq!(
            judge(&image, 128, digest(&image)),
            Verdict::OtherLength {
                stamped: 128,
                linked: 64
            }
        );
        // zeros of another length are not the same image
        assert_ne!(digest(&[0u8; 64]), digest(&[0u8; 72]));
    }

    #[test]
    fn matches_the_value_xtask_is_tested_against() {
        // the same vector is in xtask/src/stamp.rs's tests
        assert_eq!(digest(b"Xenlet"), 0xda07_8fbd_b99b_c301);
    }
}
