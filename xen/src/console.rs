//! The PV console ring (xen/include/public/io/console.h, `struct xencons_interface`).
//!
//! `out` (2048 bytes) carries guest output to xenconsoled, `in` (1024 bytes) carries
//! keystrokes back; producer/consumer indexes are free-running u32s. The backend is
//! untrusted: an index pair further apart than the ring size marks the ring broken,
//! and a broken ring is never touched again.

use crate::abi::*;
use crate::shared::SharedPage;
use core::sync::atomic::{fence, Ordering};

/// The console ring in its shared page.
pub struct ConsoleRing {
    page: SharedPage,
    broken: bool,
}

impl ConsoleRing {
    /// Wraps the page at `HVM_PARAM_CONSOLE_PFN`.
    pub fn new(page: SharedPage) -> Self {
        ConsoleRing {
            page,
            broken: false,
        }
    }

    /// Whether the backend corrupted the indexes.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Queues as much of `bytes` as fits; returns how many were queued.
    pub fn write(&mut self, bytes: &[u8]) -> usize {
        if self.broken {
            return 0;
        }
        let cons = self.page.load_u32(XENCONS_OUT_CONS);
        let prod = self.page.load_u32(XENCONS_OUT_PROD);
        let used = prod.wrapping_sub(cons);
        if used > XENCONS_OUT_SIZE {
            self.broken = true;
            return 0;
        }
        let space = (XENCONS_OUT_SIZE - used) as usize;
        let n = bytes.len().min(space);
        for (i, &b) in bytes[..n].iter().enumerate() {
            let idx = prod.wrapping_add(i as u32) % XENCONS_OUT_SIZE;
            self.page.write_bytes(XENCONS_OUT + idx as usize, &[b]);
        }
        // Data before the index: pairs with the backend's read of out_prod.
        fence(Ordering::SeqCst);
        self.page
            .store_u32(XENCONS_OUT_PROD, prod.wrapping_add(n as u32));
        n
    }

    /// Bytes queued for output that the backend has not taken yet.
    pub fn out_pending(&self) -> u32 {
        let cons = self.page.load_u32(XENCONS_OUT_CONS);
        self.page
            .load_u32(XENCONS_OUT_PROD)
            .wrapping_sub(cons)
            .min(XENCONS_OUT_SIZE)
    }

    /// Takes every waiting input byte into `sink`; returns how many.
    pub fn read(&mut self, mut sink: impl FnMut(u8)) -> usize {
        if self.broken {
            return 0;
        }
        let prod = self.page.load_u32(XENCONS_IN_PROD);
        let cons = self.page.load_u32(XENCONS_IN_CONS);
        let avail = prod.wrapping_sub(cons);
        if avail > XENCONS_IN_SIZE {
            self.broken = true;
            return 0;
        }
        // Index before data: pairs with the backend's write of in_prod.
        fence(Ordering::SeqCst);
        for i in 0..avail {
            let idx = cons.wrapping_add(i) % XENCONS_IN_SIZE;
            let mut b = [0u8; 1];
            self.page.read_bytes(XENCONS_IN + idx as usize, &mut b);
            sink(b[0]);
        }
        fence(Ordering::SeqCst);
        self.page.store_u32(XENCONS_IN_CONS, prod);
        avail as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::testpage::page;

    #[test]
    fn output_wraps_and_stops_when_full() {
        let mut r = ConsoleRing::new(page());
        // start near the u32 wrap to exercise free-running indexes
        r.page.store_u32(XENCONS_OUT_PROD, u32::MAX - 2);
        r.page.store_u32(XENCONS_OUT_CONS, u32::MAX - 2);
        assert_eq!(r.write(b"hello"), 5);
        assert_eq!(r.page.load_u32(XENCONS_OUT_PROD), 2);
        assert_eq!(r.out_pending(), 5);
        let big = vec![b'x'; 4000];
        assert_eq!(r.write(&big), (XENCONS_OUT_SIZE - 5) as usize);
        assert_eq!(r.write(b"more"), 0, "full");
        // the backend consumes 4 bytes
        r.page.store_u32(XENCONS_OUT_CONS, 1);
        assert_eq!(r.write(b"more"), 4);
        let mut b = [0u8; 2];
        r.page
            .read_bytes(XENCONS_OUT + (XENCONS_OUT_SIZE as usize - 3), &mut b);
        assert_eq!(&b, b"mo", "the freed slots are reused in ring order");
    }

    #[test]
    fn input_is_read_in_order_and_consumed() {
        let mut r = ConsoleRing::new(page());
        r.page.write_bytes(XENCONS_IN + 1022, b"ab");
        r.page.write_bytes(XENCONS_IN, b"cd");
        r.page.store_u32(XENCONS_IN_CONS, 1022);
        r.page.store_u32(XENCONS_IN_PROD, 1026);
        let mut got = Vec::new();
        assert_eq!(r.read(|b| got.push(b)), 4);
        assert_eq!(got, b"abcd");
        assert_eq!(r.page.load_u32(XENCONS_IN_CONS), 1026);
        assert_eq!(r.read(|_| panic!("nothing left")), 0);
    }

    #[test]
    fn hostile_indexes_break_the_ring_without_panicking() {
        let mut r = ConsoleRing::new(page());
        r.page.store_u32(XENCONS_IN_PROD, 5000);
        assert_eq!(r.read(|_| panic!("must not read")), 0);
        assert!(r.is_broken());
        assert_eq!(r.write(b"x"), 0);
        let mut r = ConsoleRing::new(page());
        r.page.store_u32(XENCONS_OUT_CONS, 10);
        r.page.store_u32(XENCONS_OUT_PROD, 5); // consumer ahead of producer
        assert_eq!(r.write(b"x"), 0);
        assert!(r.is_broken());
    }
}
