//! A fixed-size byte FIFO: the serial receive buffer filled from the interrupt handler.

/// Fixed-capacity byte queue; pushing into a full queue drops the byte and counts it.
pub struct ByteRing<const N: usize> {
    buf: [u8; N],
    head: usize,
    len: usize,
    dropped: u64,
}

impl<const N: usize> ByteRing<N> {
    /// An empty ring.
    pub const fn new() -> Self {
        ByteRing {
            buf: [0; N],
            head: 0,
            len: 0,
            dropped: 0,
        }
    }

    /// Appends a byte; returns false (and counts a drop) when full.
    pub fn push(&mut self, b: u8) -> bool {
        if self.len == N {
            self.dropped += 1;
            return false;
        }
        self.buf[(self.head + self.len) % N] = b;
        self.len += 1;
        true
    }

    /// Removes the oldest byte.
    pub fn pop(&mut self) -> Option<u8> {
        if self.len == 0 {
            return None;
        }
        let b = self.buf[self.head];
        self.head = (self.head + 1) % N;
        self.len -= 1;
        Some(b)
    }

    /// If `b` waits in the ring, drops everything up to and including its first
    /// occurrence and returns true (Ctrl-C during a command: what was typed before it
    /// is cancelled with it, what follows stays for the shell).
    pub fn take_through(&mut self, b: u8) -> bool {
        let Some(pos) = (0..self.len).find(|i| self.buf[(self.head + i) % N] == b) else {
            return false;
        };
        self.head = (self.head + pos + 1) % N;
        self.len -= pos + 1;
        true
    }

    /// Bytes waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes dropped because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl<const N: usize> Default for ByteRing<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_through_drops_up_to_the_byte_and_keeps_the_rest() {
        let mut r = ByteRing::<4>::new();
        for b in [7, 8, 9] {
            r.push(b);
        }
        assert!(!r.take_through(3));
        assert_eq!(r.len(), 3);
        r.pop();
        r.push(3);
        r.push(5); // wraps around
        assert!(r.take_through(3));
        assert_eq!(r.pop(), Some(5));
        assert_eq!(r.pop(), None);
    }

    #[test]
    fn fifo_order_wraparound_and_overflow() {
        let mut r = ByteRing::<4>::new();
        for b in 1..=4 {
            assert!(r.push(b));
        }
        assert!(!r.push(5));
        assert_eq!(r.dropped(), 1);
        assert_eq!(r.pop(), Some(1));
        assert_eq!(r.pop(), Some(2));
        assert!(r.push(6));
        assert!(r.push(7));
        let got: Vec<u8> = std::iter::from_fn(|| r.pop()).collect();
        assert_eq!(got, vec![3, 4, 6, 7]);
        assert!(r.is_empty());
        assert_eq!(r.pop(), None);
    }
}
