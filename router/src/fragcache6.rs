//! Which IPv6 fragments belong to a datagram whose first fragment was let through.
//!
//! Linux reassembles IPv6 before conntrack (`nf_defrag_ipv6`), so a later fragment
//! is judged with its datagram. This router forwards IPv6 fragments as they come
//! (a router never reassembles IPv6, RFC 8200 §4.5), so the forward hook remembers
//! the (source, destination, identification) of each first fragment it accepted, for
//! 60 s (IPv6's reassembly time, RFC 8200 §4.5), and lets the later fragments of that
//! datagram through as part of its flow. The forwarding core keeps a table of its
//! own and holds a later fragment of no accepted datagram until its first comes
//! ([`crate::fraghold6`]); one that reaches the hook all the same (the two tables'
//! slots taken by other datagrams) is judged by the rules alone (from the WAN:
//! refused). A fixed, direct-mapped table
//! keyed by a seeded hash: a datagram whose slot was taken by another loses its
//! later fragments (they are then judged by the rules), memory never grows.

use alloc::vec::Vec;

use crate::Millis;

/// How long a first fragment vouches for the rest.
const LIFETIME_MS: Millis = 60_000;
/// Slots.
const SLOTS: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    src: [u8; 16],
    dst: [u8; 16],
    id: u32,
}

/// The table.
#[derive(Clone, Debug)]
pub struct FragCache6 {
    slots: Vec<Option<(Key, Millis)>>,
    seed: u64,
}

impl FragCache6 {
    /// An empty table; `seed` keys the slot choice.
    pub fn new(seed: u64) -> Self {
        FragCache6 {
            slots: alloc::vec![None; SLOTS],
            seed,
        }
    }

    fn slot(&self, k: &Key) -> usize {
        let (s, d) = (u128::from_be_bytes(k.src), u128::from_be_bytes(k.dst));
        let mut h = self.seed ^ u64::from(k.id).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for w in [s as u64, (s >> 64) as u64, d as u64, (d >> 64) as u64] {
            h = (h ^ w).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            h ^= h >> 31;
        }
        (h >> 32) as usize % SLOTS
    }

    /// Remembers an accepted first fragment.
    pub fn note(&mut self, src: [u8; 16], dst: [u8; 16], id: u32, now: Millis) {
        let k = Key { src, dst, id };
        let i = self.slot(&k);
        if let Some(s) = self.slots.get_mut(i) {
            *s = Some((k, now.saturating_add(LIFETIME_MS)));
        }
    }

    /// Whether a later fragment belongs to an accepted datagram.
    pub fn allows(&self, src: [u8; 16], dst: [u8; 16], id: u32, now: Millis) -> bool {
        let k = Key { src, dst, id };
        matches!(self.slots.get(self.slot(&k)), Some(Some((key, until))) if *key == k && now < *until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_rest_of_an_accepted_datagram_within_60_s() {
        let mut c = FragCache6::new(7);
        let (a, b) = ([1; 16], [2; 16]);
        assert!(!c.allows(a, b, 9, 0));
        c.note(a, b, 9, 0);
        assert!(c.allows(a, b, 9, 59_999));
        assert!(!c.allows(a, b, 9, 60_000));
        assert!(!c.allows(a, b, 10, 1), "another datagram");
        assert!(!c.allows(b, a, 9, 1), "the other way");
        // bounded: a thousand datagrams later the table has not grown
        for id in 0..1000 {
            c.note(a, b, id, 1);
        }
        assert_eq!(c.slots.len(), SLOTS);
    }
}
