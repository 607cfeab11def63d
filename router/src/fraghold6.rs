//! Later IPv6 fragments that came before their datagram's first.
//!
//! Linux reassembles IPv6 before conntrack (`nf_defrag_ipv6`, at PREROUTING): a
//! later fragment waits, in the reassembly queue, for the rest of its datagram, and
//! goes on only with it; one whose datagram never comes whole is dropped after 60 s
//! (IPv6's reassembly time, RFC 8200 §4.5), with no ICMPv6 error when the first
//! fragment never came (§4.5: Time Exceeded only if it did). This router forwards
//! IPv6 fragments as they come (it never reassembles them), so the forwarding core
//! keeps the (source, destination, identification) of each first fragment the
//! forward chain accepted ([`crate::fragcache6::FragCache6`]) and a later fragment
//! of no such datagram is held here until its first is accepted (then it goes on
//! after it), or dropped when it has waited 60 s. Bounded in bytes and fragments;
//! past either bound a new one is refused (dropped and counted), as Linux's
//! `ip6frag_high_thresh`.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::{IfId, Millis};

/// How long a later fragment waits for its first.
pub const WAIT_MS: Millis = 60_000;

/// What the store counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HoldStats {
    /// Later fragments held.
    pub held: u64,
    /// Held fragments sent on after their first fragment.
    pub released: u64,
    /// Held fragments dropped after waiting [`WAIT_MS`].
    pub timeouts: u64,
    /// Later fragments refused: the store was full.
    pub refused: u64,
}

/// The datagram a fragment belongs to: (source, destination, identification).
pub type DatagramKey = ([u8; 16], [u8; 16], u32);

struct Held {
    key: DatagramKey,
    input: IfId,
    until: Millis,
    frame: Vec<u8>,
}

/// The held fragments, oldest first.
pub struct FragHold6 {
    held: VecDeque<Held>,
    bytes: usize,
    max_bytes: usize,
    max_fragments: usize,
    stats: HoldStats,
}

impl FragHold6 {
    /// An empty store holding at most `max_bytes` of frames and `max_fragments`.
    pub fn new(max_bytes: usize, max_fragments: usize) -> Self {
        FragHold6 {
            held: VecDeque::new(),
            bytes: 0,
            max_bytes,
            max_fragments,
            stats: HoldStats::default(),
        }
    }

    /// Holds a copy of `frame` (a later fragment of datagram `key`, received on
    /// `input`) until its first fragment is accepted or [`WAIT_MS`] pass; whether
    /// it was taken (not: the store is full, counted).
    pub fn hold(&mut self, key: DatagramKey, input: IfId, frame: &[u8], now: Millis) -> bool {
        if self.held.len() >= self.max_fragments
            || self.bytes.saturating_add(frame.len()) > self.max_bytes
        {
            self.stats.refused += 1;
            return false;
        }
        self.bytes += frame.len();
        self.held.push_back(Held {
            key,
            input,
            until: now.saturating_add(WAIT_MS),
            frame: frame.to_vec(),
        });
        self.stats.held += 1;
        true
    }

    /// The first fragment of datagram `key` was accepted: its held fragments, in
    /// the order they came, each with the interface it came in on.
    pub fn release(&mut self, key: &DatagramKey) -> Vec<(IfId, Vec<u8>)> {
        if self.held.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut kept = VecDeque::with_capacity(self.held.len());
        for h in self.held.drain(..) {
            if h.key == *key {
                self.bytes -= h.frame.len();
                out.push((h.input, h.frame));
            } else {
                kept.push_back(h);
            }
        }
        self.held = kept;
        self.stats.released += out.len() as u64;
        out
    }

    /// Drops the fragments that have waited [`WAIT_MS`].
    pub fn expire(&mut self, now: Millis) {
        // held in arrival order, all with the same wait: the oldest first
        while self.held.front().is_some_and(|h| now >= h.until) {
            if let Some(h) = self.held.pop_front() {
                self.bytes -= h.frame.len();
                self.stats.timeouts += 1;
            }
        }
    }

    /// What it counted.
    pub fn stats(&self) -> HoldStats {
        self.stats
    }

    /// Fragments held now.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: DatagramKey = ([1; 16], [2; 16], 7);
    const B: DatagramKey = ([1; 16], [2; 16], 8);

    #[test]
    fn held_fragments_go_with_their_first_in_order_the_others_stay() {
        let mut h = FragHold6::new(10_000, 8);
        assert!(h.hold(A, IfId(0), &[1; 100], 0));
        assert!(h.hold(B, IfId(1), &[2; 100], 1));
        assert!(h.hold(A, IfId(1), &[3; 50], 2));
        let out = h.release(&A);
        assert_eq!(
            out,
            [
                (IfId(0), alloc::vec![1; 100]),
                (IfId(1), alloc::vec![3; 50])
            ]
        );
        assert_eq!(h.len(), 1);
        assert_eq!(h.bytes, 100);
        assert!(h.release(&A).is_empty(), "released once");
        assert_eq!(h.release(&B).len(), 1);
        assert_eq!(h.stats().released, 3);
        assert!(h.is_empty());
        assert_eq!(h.bytes, 0);
    }

    #[test]
    fn a_fragment_that_waits_60_s_is_dropped() {
        let mut h = FragHold6::new(10_000, 8);
        h.hold(A, IfId(0), &[1; 10], 0);
        h.hold(B, IfId(0), &[1; 10], 30_000);
        h.expire(59_999);
        assert_eq!(h.len(), 2);
        h.expire(60_000);
        assert_eq!(h.len(), 1);
        assert!(h.release(&A).is_empty(), "gone before its first came");
        h.expire(90_000);
        assert!(h.is_empty());
        assert_eq!(h.stats().timeouts, 2);
        assert_eq!(h.bytes, 0);
    }

    #[test]
    fn past_its_bounds_a_new_fragment_is_refused() {
        let mut h = FragHold6::new(250, 3);
        assert!(h.hold(A, IfId(0), &[0; 100], 0));
        assert!(h.hold(A, IfId(0), &[0; 100], 0));
        assert!(!h.hold(A, IfId(0), &[0; 100], 0), "bytes");
        assert!(h.hold(A, IfId(0), &[0; 50], 0));
        assert!(!h.hold(A, IfId(0), &[0; 1], 0), "fragments");
        assert_eq!(h.stats().refused, 2);
        assert_eq!(h.stats().held, 3);
        h.release(&A);
        assert!(h.hold(A, IfId(0), &[0; 250], 0), "room again");
    }
}
