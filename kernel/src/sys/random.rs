//! The kernel's random numbers: ChaCha20 (`rand_chacha`, a well-kept crate) keyed
//! from the CPU's RDRAND when it has one, the jitter of timestamp-counter reads
//! around a timer (what Linux's `jitterentropy` and its TSC mixing rely on), the
//! boot time and Xen's wall clock, all hashed together (SHA-256). Rekeyed the same
//! way every 2^20 outputs or minute, so a state read out once does not give away
//! the future. DNS query ids and source ports, NAT and conntrack hash seeds and the
//! TCP/IP stack's seed come from here (a one-off TSC read seeded xorshift before:
//! guessable to anyone who can estimate the boot time).
//!
//! `sources()` says what went in at boot, for the boot report.

use sha2::{Digest, Sha256};

/// A seed from entropy samples: SHA-256 over all of them (each sample may carry
/// little entropy; hashing keeps whatever there is and spreads it over the key).
pub fn derive_seed(samples: &[u64]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"xenlet random v1");
    for s in samples {
        h.update(s.to_le_bytes());
    }
    h.finalize().into()
}

/// Samples of timing jitter: `reads` times, the low bits of the delta between two
/// successive reads of `clock` around a computation whose duration varies with
/// caches, interrupts and the hypervisor's scheduling.
pub fn jitter_samples(
    mut clock: impl FnMut() -> u64,
    reads: usize,
    out: &mut alloc::vec::Vec<u64>,
) {
    let mut acc = 0u64;
    let mut last = clock();
    for i in 0..reads {
        // Work whose time depends on memory and branch state.
        for k in 0..(16 + (acc as usize & 63)) {
            acc = acc.rotate_left(7) ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ last;
        }
        let now = clock();
        out.push(now.wrapping_sub(last) ^ (acc << 32) ^ i as u64);
        last = now;
    }
}

#[cfg(target_os = "none")]
mod kernel {
    use super::{derive_seed, jitter_samples};
    use crate::arch::cpu;
    use alloc::vec::Vec;
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};
    use spin::Mutex;

    /// Outputs (64-bit) between rekeyings.
    const REKEY_OUTPUTS: u64 = 1 << 20;
    /// Time between rekeyings.
    const REKEY_NS: u64 = 60_000_000_000;

    struct State {
        rng: ChaCha20Rng,
        outputs: u64,
        keyed_ns: u64,
    }

    static STATE: Mutex<Option<State>> = Mutex::new(None);
    /// What the boot key came from.
    static SOURCES: Mutex<&'static str> = Mutex::new("not yet seeded");

    fn gather() -> (Vec<u64>, bool) {
        let mut s = Vec::with_capacity(160);
        s.push(cpu::rdtsc());
        let mut hw = false;
        for _ in 0..8 {
            if let Some(v) = cpu::rdrand() {
                s.push(v);
                hw = true;
            }
        }
        jitter_samples(cpu::rdtsc, 128, &mut s);
        s.push(crate::time::clock::now().as_nanos());
        if let Some(w) = crate::xen::platform::wallclock_secs() {
            s.push(w as u64);
        }
        (s, hw)
    }

    fn key(old: Option<&mut ChaCha20Rng>) -> (ChaCha20Rng, bool) {
        let (mut s, hw) = gather();
        if let Some(r) = old {
            // The old state goes in too: a rekey never loses entropy.
            s.push(r.next_u64());
            s.push(r.next_u64());
        }
        (ChaCha20Rng::from_seed(derive_seed(&s)), hw)
    }

    /// Keys the generator (at boot, once the clock runs).
    pub fn init() {
        let (rng, hw) = key(None);
        *STATE.lock() = Some(State {
            rng,
            outputs: 0,
            keyed_ns: crate::time::clock::now().as_nanos(),
        });
        *SOURCES.lock() = if hw {
            "RDRAND, TSC jitter, clocks"
        } else {
            "TSC jitter, clocks (no RDRAND)"
        };
    }

    /// What the boot key came from.
    pub fn sources() -> &'static str {
        *SOURCES.lock()
    }

    /// 64 random bits.
    pub fn u64() -> u64 {
        let mut g = STATE.lock();
        if g.is_none() {
            drop(g);
            init();
            g = STATE.lock();
        }
        let Some(st) = g.as_mut() else {
            return cpu::rdtsc();
        };
        let now = crate::time::clock::now().as_nanos();
        if st.outputs >= REKEY_OUTPUTS || now.saturating_sub(st.keyed_ns) >= REKEY_NS {
            st.rng = key(Some(&mut st.rng)).0;
            st.outputs = 0;
            st.keyed_ns = now;
        }
        st.outputs += 1;
        st.rng.next_u64()
    }

    /// A 32-byte key for a subsystem's own generator.
    pub fn seed() -> [u8; 32] {
        let mut k = [0u8; 32];
        for c in k.chunks_mut(8) {
            c.copy_from_slice(&u64().to_le_bytes());
        }
        k
    }
}

#[cfg(target_os = "none")]
pub use kernel::{init, seed, sources, u64};

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn every_sample_changes_the_seed() {
        let base = [1u64, 2, 3, 4];
        let s0 = derive_seed(&base);
        for i in 0..base.len() {
            let mut m = base;
            m[i] ^= 1;
            assert_ne!(derive_seed(&m), s0, "sample {i}");
        }
        assert_eq!(derive_seed(&base), s0, "deterministic");
        assert_ne!(derive_seed(&base[..3]), s0);
    }

    #[test]
    fn jitter_samples_follow_the_clock() {
        // A clock with irregular steps gives samples that differ.
        let mut t = 1000u64;
        let mut steps = [3u64, 17, 5, 250, 9, 41].into_iter().cycle();
        let mut out = Vec::new();
        jitter_samples(
            || {
                t += steps.next().unwrap_or(1);
                t
            },
            6,
            &mut out,
        );
        assert_eq!(out.len(), 6);
        let mut sorted = out.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 6);
    }
}
