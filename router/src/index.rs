//! A fixed-size open-addressing hash index from keys to `u32` slot numbers.
//!
//! Linear probing with backward-shift deletion (no tombstones, so lookups stay short
//! after churn; Knuth TAOCP vol. 3, 6.4 Algorithm R). The index stores only values;
//! the caller compares keys through a closure, so one index type serves the conntrack
//! tuples and the NAT mappings. It is sized at construction to at least twice the
//! values it will ever hold (load at most 1/2) and never grows: no allocation per
//! packet, and every probe loop is bounded by the table size.
//!
//! Keys are hashed with a seeded folded-multiply hash (the construction of wyhash and
//! foldhash): without the seed, a remote host cannot choose ports that collide
//! (Linux seeds `hash_conntrack_raw` with `get_random_once` for the same reason).

use alloc::vec;
use alloc::vec::Vec;

const EMPTY: u32 = u32::MAX;

/// A keyed hash over two 64-bit words.
#[derive(Clone, Copy, Debug)]
pub struct Hasher {
    k: [u64; 3],
}

/// splitmix64's output function: spreads a seed into independent-looking keys.
fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The 128-bit product of `a` and `b`, folded to 64 bits.
#[inline]
fn folded_multiply(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

impl Hasher {
    /// A hasher keyed from `seed` (the caller supplies entropy: the crate reads no clock
    /// or RNG).
    pub(crate) fn new(mut seed: u64) -> Hasher {
        Hasher {
            k: [
                splitmix(&mut seed),
                splitmix(&mut seed),
                splitmix(&mut seed),
            ],
        }
    }

    /// Hash of the key `(a, b)`.
    #[inline]
    pub(crate) fn hash(&self, a: u64, b: u64) -> u64 {
        let h = folded_multiply(a ^ self.k[0], b ^ self.k[1]);
        folded_multiply(h ^ self.k[2], 0x9e37_79b9_7f4a_7c15)
    }
}

/// An open-addressing index of `u32` values.
#[derive(Debug)]
pub(crate) struct Index {
    slots: Vec<u32>,
    mask: usize,
    len: usize,
}

impl Index {
    /// An index able to hold `max_values` values at load 1/2 or less.
    pub(crate) fn new(max_values: usize) -> Index {
        let size = max_values.saturating_mul(2).max(16).next_power_of_two();
        Index {
            slots: vec![EMPTY; size],
            mask: size - 1,
            len: 0,
        }
    }

    #[inline]
    fn home(&self, hash: u64) -> usize {
        // the high bits of a multiplicative hash are the well-mixed ones
        (hash.rotate_left(32) as usize) & self.mask
    }

    /// The first value whose key `is_key` accepts, among those stored under `hash`.
    #[inline]
    pub(crate) fn find(&self, hash: u64, mut is_key: impl FnMut(u32) -> bool) -> Option<u32> {
        let mut i = self.home(hash);
        for _ in 0..self.slots.len() {
            let v = self.slots[i];
            if v == EMPTY {
                return None;
            }
            if is_key(v) {
                return Some(v);
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// Stores `value` under `hash`. Returns false if the index is full (the callers
    /// size it so that this cannot happen).
    pub(crate) fn insert(&mut self, hash: u64, value: u32) -> bool {
        debug_assert_ne!(value, EMPTY);
        if self.len >= self.slots.len() - 1 {
            return false;
        }
        let mut i = self.home(hash);
        for _ in 0..self.slots.len() {
            if self.slots[i] == EMPTY {
                self.slots[i] = value;
                self.len += 1;
                return true;
            }
            i = (i + 1) & self.mask;
        }
        false
    }

    /// Removes `value` stored under `hash`; `hash_of` gives the hash of any other
    /// stored value (to shift the probe chain back over the hole). Returns whether
    /// the value was there.
    pub(crate) fn remove(
        &mut self,
        hash: u64,
        value: u32,
        mut hash_of: impl FnMut(u32) -> u64,
    ) -> bool {
        let mut i = self.home(hash);
        let mut found = false;
        for _ in 0..self.slots.len() {
            let v = self.slots[i];
            if v == EMPTY {
                break;
            }
            if v == value {
                found = true;
                break;
            }
            i = (i + 1) & self.mask;
        }
        if !found {
            return false;
        }
        self.slots[i] = EMPTY;
        self.len -= 1;
        // backward shift: move later members of the cluster into the hole when their
        // home position does not lie cyclically in (hole, j]
        let mut hole = i;
        let mut j = (i + 1) & self.mask;
        for _ in 0..self.slots.len() {
            let v = self.slots[j];
            if v == EMPTY {
                break;
            }
            let home = self.home(hash_of(v));
            let dist_home = j.wrapping_sub(home) & self.mask;
            let dist_hole = j.wrapping_sub(hole) & self.mask;
            if dist_home >= dist_hole {
                self.slots[hole] = v;
                self.slots[j] = EMPTY;
                hole = j;
            }
            j = (j + 1) & self.mask;
        }
        true
    }

    /// Number of stored values.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Forgets every value.
    pub(crate) fn clear(&mut self) {
        self.slots.fill(EMPTY);
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_find_remove_against_a_model() {
        // values with deliberately colliding hashes (few distinct homes) exercise the
        // backward shift; a plain array is the model
        let keys: Vec<u64> = (0..200u64).map(|v| v % 7).collect();
        let h = |v: u32| keys[v as usize] << 32;
        let mut ix = Index::new(256);
        let mut present = [false; 200];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = (x % 200) as u32;
            if present[v as usize] {
                assert!(ix.remove(h(v), v, h));
                present[v as usize] = false;
            } else {
                assert!(ix.insert(h(v), v));
                present[v as usize] = true;
            }
            // every present value is findable, every absent one is not
            for (k, &p) in present.iter().enumerate() {
                let k = k as u32;
                assert_eq!(ix.find(h(k), |s| s == k).is_some(), p, "value {k}");
            }
        }
        assert_eq!(ix.len(), present.iter().filter(|p| **p).count());
    }

    #[test]
    fn seeds_give_different_hashes() {
        let a = Hasher::new(1).hash(0x0a00_0002_0a00_0001, 80);
        let b = Hasher::new(2).hash(0x0a00_0002_0a00_0001, 80);
        assert_ne!(a, b);
    }
}
