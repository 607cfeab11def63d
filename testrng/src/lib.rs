//! Host tests only: xorshift64 (Marsaglia's shifts 13, 7, 17), the pseudo-random
//! numbers of the seeded tests (fuzzing the parsers, hostile frontends, crash and
//! fault sweeps). A seed gives a fixed sequence, so a failure replays from its seed;
//! the tests of every crate draw from this one generator rather than a copy each.

/// The generator: its state is the last number drawn (a seed of 0 stays 0).
#[derive(Clone, Debug)]
pub struct XorShift(pub u64);

impl XorShift {
    /// The next number.
    #[allow(clippy::should_implement_trait)] // a generator, not an iterator
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index below `n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// One of `items` (which must not be empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.index(items.len())]
    }

    /// `n` bytes, the low byte of a number each.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_marsaglias_xorshift64() {
        // the 13, 7, 17 triple from seed 1, worked by hand
        let mut r = XorShift(1);
        assert_eq!(r.next(), 0x4082_2041);
        assert_eq!(r.next(), 0x1000_4106_0c01_1441);
        let mut a = XorShift(0x5eed);
        let mut b = XorShift(0x5eed);
        assert_eq!(a.bytes(64), b.bytes(64), "a seed replays");
        assert_eq!(XorShift(0).next(), 0, "0 is a fixed point");
    }

    #[test]
    fn below_and_index_stay_in_range_and_take_0() {
        let mut r = XorShift(7);
        for n in 1..50u64 {
            assert!(r.below(n) < n);
            assert!(r.index(n as usize) < n as usize);
        }
        assert_eq!(r.below(0), 0);
        assert_eq!(r.index(0), 0);
        assert_eq!(r.pick(&[5u8]), 5);
    }
}
