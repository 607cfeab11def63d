//! The answer cache: whole upstream replies keyed by question, LRU, TTL-aware.
//!
//! Sized like dnsmasq's (`cachesize`, default 1000 entries, `src/config.h`
//! `CACHESIZ`), with a byte budget too since entries here are whole messages.
//! Unlike dnsmasq, which caches each RRset, an entry is one reply: its lifetime is
//! the smallest TTL of its answer records, or for a negative answer the SOA's
//! negative TTL (RFC 2308 §5), capped. A hit returns the stored message with every
//! TTL lowered by the time spent in the cache (RFC 1035 §7.3: "the TTL ... should
//! be decremented"); the OPT pseudo-record is left alone.

use super::message::{rcode, rtype, Message, Question, Section};
use crate::Millis;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// What an entry holds in the heap, charged against `max_bytes`: the message, its
/// TTL table (a reply of 4 KiB can carry some 340 records: the table outweighs the
/// message), the question twice (map key and LRU), and the nodes around them.
fn entry_cost(packet: usize, records: usize, q: &Question) -> usize {
    packet + records * core::mem::size_of::<(usize, u32)>() + 2 * q.heap_bytes() + 128
}

/// dnsmasq's default `cachesize`.
pub const DEFAULT_ENTRIES: usize = 1000;
/// Default byte budget for all stored messages.
pub const DEFAULT_MAX_BYTES: usize = 1024 * 1024;
/// Largest message cached.
pub const MAX_ENTRY_BYTES: usize = 4096;

struct Entry {
    /// What the entry costs against `max_bytes` ([`entry_cost`]).
    cost: usize,
    packet: Vec<u8>,
    /// TTL field offsets and the TTL stored there when cached.
    ttls: Vec<(usize, u32)>,
    stored: Millis,
    expires: Millis,
    tick: u64,
}

/// Cache limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// Most entries (0 disables the cache).
    pub entries: usize,
    /// Most bytes over all entries.
    pub max_bytes: usize,
    /// Longest negative answer lifetime, seconds.
    pub neg_ttl_max_secs: u32,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            entries: DEFAULT_ENTRIES,
            max_bytes: DEFAULT_MAX_BYTES,
            neg_ttl_max_secs: 3600,
        }
    }
}

/// The cache.
pub struct Cache {
    cfg: CacheConfig,
    map: BTreeMap<Question, Entry>,
    lru: BTreeMap<u64, Question>,
    tick: u64,
    bytes: usize,
}

impl Cache {
    /// An empty cache.
    pub fn new(cfg: CacheConfig) -> Cache {
        Cache {
            cfg,
            map: BTreeMap::new(),
            lru: BTreeMap::new(),
            tick: 0,
            bytes: 0,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Drops everything (new upstream servers, SIGHUP in dnsmasq).
    pub fn clear(&mut self) {
        self.map.clear();
        self.lru.clear();
        self.bytes = 0;
    }

    fn remove(&mut self, q: &Question) {
        if let Some(e) = self.map.remove(q) {
            self.lru.remove(&e.tick);
            self.bytes = self.bytes.saturating_sub(e.cost);
        }
    }

    /// How long `msg` may be cached, in seconds; `None` if not cacheable
    /// (truncated, an error other than NXDOMAIN, no TTL, negative without SOA).
    pub fn lifetime(&self, packet: &[u8], msg: &Message) -> Option<u32> {
        if msg.header.flags & super::message::flag::TC != 0 || msg.question().is_none() {
            return None;
        }
        let answers = msg.records.iter().filter(|r| r.section == Section::Answer);
        let min_answer = answers.map(|r| r.ttl).min();
        let ttl = match (msg.header.rcode(), min_answer) {
            (rcode::NOERROR, Some(t)) => t,
            (rcode::NOERROR | rcode::NXDOMAIN, None) | (rcode::NXDOMAIN, Some(_)) => {
                msg.soa_negative_ttl(packet)?.min(self.cfg.neg_ttl_max_secs)
            }
            _ => return None,
        };
        (ttl > 0).then_some(ttl)
    }

    /// Stores `packet` (already parsed as `msg`) under its question; returns
    /// whether it was stored.
    pub fn insert(&mut self, packet: &[u8], msg: &Message, now: Millis) -> bool {
        if self.cfg.entries == 0 || packet.len() > MAX_ENTRY_BYTES.min(self.cfg.max_bytes) {
            return false;
        }
        let (Some(ttl), Some(q)) = (self.lifetime(packet, msg), msg.question()) else {
            return false;
        };
        let q = q.clone();
        let ttls: Vec<(usize, u32)> = msg
            .records
            .iter()
            .filter(|r| r.rtype != rtype::OPT)
            .map(|r| (r.ttl_offset, r.ttl))
            .collect();
        let cost = entry_cost(packet.len(), ttls.len(), &q);
        if cost > self.cfg.max_bytes {
            return false;
        }
        self.remove(&q);
        while self.map.len() >= self.cfg.entries || self.bytes + cost > self.cfg.max_bytes {
            let Some((_, oldest)) = self.lru.pop_first() else {
                break;
            };
            if let Some(e) = self.map.remove(&oldest) {
                self.bytes = self.bytes.saturating_sub(e.cost);
            }
        }
        self.tick += 1;
        self.lru.insert(self.tick, q.clone());
        self.bytes += cost;
        self.map.insert(
            q,
            Entry {
                cost,
                packet: packet.to_vec(),
                ttls,
                stored: now,
                expires: now.saturating_add(u64::from(ttl) * 1000),
                tick: self.tick,
            },
        );
        true
    }

    /// The cached reply for `q` with TTLs lowered by the time it spent here (the
    /// id is the original upstream one: the caller sets it). Marks it used.
    pub fn lookup(&mut self, q: &Question, now: Millis) -> Option<Vec<u8>> {
        let expired = self.map.get(q)?.expires <= now;
        if expired {
            self.remove(q);
            return None;
        }
        self.tick += 1;
        let tick = self.tick;
        let e = self.map.get_mut(q)?;
        self.lru.remove(&e.tick);
        e.tick = tick;
        self.lru.insert(tick, q.clone());
        let elapsed = u32::try_from((now.saturating_sub(e.stored)) / 1000).unwrap_or(u32::MAX);
        let mut out = e.packet.clone();
        for &(off, ttl) in &e.ttls {
            if let Some(f) = out.get_mut(off..off + 4) {
                f.copy_from_slice(&ttl.saturating_sub(elapsed).to_be_bytes());
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::name::Name;

    fn reply(name: &str, ttl: u32) -> Vec<u8> {
        let mut r = alloc::vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0];
        r.extend_from_slice(Name::from_dotted(name).unwrap().as_wire());
        r.extend_from_slice(&[0, 1, 0, 1, 0xC0, 0x0C, 0, 1, 0, 1]);
        r.extend_from_slice(&ttl.to_be_bytes());
        r.extend_from_slice(&[0, 4, 93, 184, 216, 34]);
        r
    }

    fn q(name: &str) -> Question {
        Question {
            name: Name::from_dotted(name).unwrap(),
            qtype: 1,
            qclass: 1,
        }
    }

    #[test]
    fn ttl_counts_down_and_entries_expire() {
        let mut c = Cache::new(CacheConfig::default());
        let r = reply("example.com", 300);
        assert!(c.insert(&r, &Message::parse(&r).unwrap(), 1_000));
        let hit = c.lookup(&q("EXAMPLE.com"), 101_000).unwrap();
        assert_eq!(Message::parse(&hit).unwrap().records[0].ttl, 200);
        assert!(c.lookup(&q("example.com"), 301_000).is_none());
        assert!(c.is_empty());
    }

    /// A reply to `name` with `n` A records (each 16 bytes on the wire).
    fn many_records(name: &str, n: u16) -> Vec<u8> {
        let mut r = alloc::vec![0x12, 0x34, 0x81, 0x80, 0, 1];
        r.extend_from_slice(&n.to_be_bytes());
        r.extend_from_slice(&[0, 0, 0, 0]);
        r.extend_from_slice(Name::from_dotted(name).unwrap().as_wire());
        r.extend_from_slice(&[0, 1, 0, 1]);
        for i in 0..n {
            r.extend_from_slice(&[0xC0, 0x0C, 0, 1, 0, 1, 0, 0, 1, 0, 0, 4, 10, 0]);
            r.extend_from_slice(&i.to_be_bytes());
        }
        r
    }

    #[test]
    fn the_budget_counts_what_an_entry_holds_not_just_its_message() {
        // 64 records (the most a cached message may have, MAX_RECORDS) in 1 KiB:
        // the TTL table is 1 KiB more. A budget of 5 KiB holds two such entries,
        // not the four their messages alone would fit.
        let mut c = Cache::new(CacheConfig {
            max_bytes: 5 << 10,
            ..CacheConfig::default()
        });
        for (i, n) in ["a.com", "b.com", "c.com", "d.com", "e.com"]
            .iter()
            .enumerate()
        {
            let r = many_records(n, 64);
            assert!(4 * r.len() <= 5 << 10);
            assert!(c.insert(&r, &Message::parse(&r).unwrap(), i as u64), "{n}");
        }
        assert_eq!(c.len(), 2, "the oldest went to keep within the budget");
        assert!(c.lookup(&q("e.com"), 10).is_some());
        assert!(c.lookup(&q("a.com"), 10).is_none());
        // An entry that alone costs more than the budget is not stored.
        let mut small = Cache::new(CacheConfig {
            max_bytes: 2 << 10,
            ..CacheConfig::default()
        });
        let r = many_records("a.com", 64);
        assert!(r.len() < 2 << 10);
        assert!(!small.insert(&r, &Message::parse(&r).unwrap(), 0));
        assert!(small.is_empty());
    }

    #[test]
    fn least_recently_used_is_evicted() {
        let mut c = Cache::new(CacheConfig {
            entries: 2,
            ..CacheConfig::default()
        });
        for n in ["a.com", "b.com"] {
            let r = reply(n, 60);
            assert!(c.insert(&r, &Message::parse(&r).unwrap(), 0));
        }
        assert!(c.lookup(&q("a.com"), 0).is_some());
        let r = reply("c.com", 60);
        assert!(c.insert(&r, &Message::parse(&r).unwrap(), 0));
        assert_eq!(c.len(), 2);
        assert!(c.lookup(&q("b.com"), 0).is_none());
        assert!(c.lookup(&q("a.com"), 0).is_some());
        assert!(c.lookup(&q("c.com"), 0).is_some());
    }

    #[test]
    fn zero_ttl_servfail_and_truncated_are_not_cached() {
        let mut c = Cache::new(CacheConfig::default());
        let r = reply("a.com", 0);
        assert!(!c.insert(&r, &Message::parse(&r).unwrap(), 0));
        let mut r = reply("a.com", 60);
        r[3] = 0x82;
        assert!(!c.insert(&r, &Message::parse(&r).unwrap(), 0));
        let mut r = reply("a.com", 60);
        r[2] |= 0x02;
        assert!(!c.insert(&r, &Message::parse(&r).unwrap(), 0));
        // NXDOMAIN without SOA: not cached.
        let mut r = reply("a.com", 60);
        r[3] = 0x83;
        assert!(!c.insert(&r, &Message::parse(&r).unwrap(), 0));
    }
}
