//! IPv4 reassembly before connection tracking, as Linux's `nf_defrag_ipv4` does for a
//! router (`net/ipv4/ip_fragment.c`, `net/ipv4/inet_fragment.c`): conntrack, NAT
//! and the firewall then see whole datagrams, so the later fragments of a
//! masqueraded or port-forwarded flow are translated like the first (they used to
//! skip NAT and end in the input chain), and port rules see every fragment's ports.
//! The output stage fragments again to the outgoing MTU.
//!
//! Bounded as Linux bounds it: a datagram is at most 65,535 bytes; all datagrams
//! being reassembled hold at most [`DefragConfig::max_bytes`] (Linux's
//! `ipfrag_high_thresh`: past it new fragments are refused, not old ones evicted) in
//! at most [`DefragConfig::max_datagrams`] queues; a queue not completed within
//! [`DefragConfig::timeout_ms`] (Linux's `ipfrag_time`, 30 s) is dropped. Overlaps
//! (RFC 5722's rule, which Linux applies to IPv4 too since 4.19): a duplicate (a
//! piece inside what came already, Linux's IPFRAG_DUP) is dropped alone, any other
//! overlap drops the whole datagram, so
//! overlapping fragments cannot make the router see one datagram and a host another.
//! Every drop is counted.

use crate::ipv4::{self, put16};
use crate::link::ETH_LEN;
use crate::Millis;
use alloc::vec::Vec;

/// The largest IPv4 datagram.
const MAX_DATAGRAM: usize = 65_535;
/// Fragments one datagram may arrive in (64 KiB in 8-byte pieces would be 8192;
/// real senders use a few).
const MAX_FRAGMENTS: usize = 64;

/// Limits of the reassembler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefragConfig {
    /// Bytes all incomplete datagrams may hold.
    pub max_bytes: usize,
    /// Datagrams being reassembled at once.
    pub max_datagrams: usize,
    /// How long a datagram may take to arrive whole.
    pub timeout_ms: Millis,
}

impl Default for DefragConfig {
    fn default() -> Self {
        DefragConfig {
            max_bytes: 256 * 1024,
            max_datagrams: 64,
            timeout_ms: 30_000,
        }
    }
}

/// What the reassembler counted (Linux's `ReasmReqds`, `ReasmOKs`, `ReasmFails`,
/// `ReasmTimeout`, `ReasmOverlaps`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefragStats {
    /// Fragments taken.
    pub fragments: u64,
    /// Datagrams reassembled.
    pub reassembled: u64,
    /// Datagrams dropped for overlapping fragments.
    pub overlaps: u64,
    /// Exact duplicate fragments dropped.
    pub duplicates: u64,
    /// Datagrams not completed in time.
    pub timeouts: u64,
    /// Fragments refused: the memory or queue limit, too many pieces, no memory.
    pub refused: u64,
    /// Fragments that cannot be part of a datagram (beyond 65,535 bytes, a middle
    /// piece not a multiple of 8, past the end the last piece set, ...).
    pub malformed: u64,
}

/// What a fragment did.
#[derive(Debug, PartialEq, Eq)]
pub enum Defrag {
    /// Kept: the datagram is not whole yet (or the fragment was dropped and
    /// counted).
    Held,
    /// The last piece: the whole datagram as one frame (the last fragment's
    /// Ethernet header, the first's IP header with MF and offset cleared).
    Whole(Vec<u8>),
}

struct Queue {
    key: (u32, u32, u16, u8),
    /// The first fragment's IP header, once it came.
    header: Vec<u8>,
    /// The payload, placed at its offset.
    data: Vec<u8>,
    /// Received byte ranges of the payload, sorted, disjoint.
    have: Vec<(usize, usize)>,
    /// The payload's length, once the last fragment came.
    total: Option<usize>,
    /// Fragments placed.
    pieces: usize,
    deadline: Millis,
}

impl Queue {
    fn bytes(&self) -> usize {
        self.data.capacity() + self.header.capacity() + self.have.capacity() * 16 + 64
    }

    fn complete(&self) -> bool {
        match (self.total, self.have.as_slice(), self.header.is_empty()) {
            (Some(t), [(0, e)], false) => *e == t,
            _ => false,
        }
    }
}

/// The reassembler.
pub struct Reassembler {
    cfg: DefragConfig,
    queues: Vec<Queue>,
    bytes: usize,
    stats: DefragStats,
}

/// Whether `ip` (a checked IPv4 header and payload) is a fragment.
#[inline]
pub fn is_fragment(ip: &[u8]) -> bool {
    ipv4::be16(ip, ipv4::FRAG).is_some_and(|w| w & (ipv4::MF | ipv4::FRAG_OFFSET) != 0)
}

impl Reassembler {
    /// An empty reassembler.
    pub fn new(cfg: DefragConfig) -> Self {
        Reassembler {
            cfg,
            queues: Vec::new(),
            bytes: 0,
            stats: DefragStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> DefragStats {
        self.stats
    }

    /// Datagrams being reassembled now.
    pub fn pending(&self) -> usize {
        self.queues.len()
    }

    /// Drops the datagrams whose time is up.
    pub fn expire(&mut self, now: Millis) {
        let before = self.queues.len();
        let mut freed = 0;
        self.queues.retain(|q| {
            let keep = q.deadline > now;
            if !keep {
                freed += q.bytes();
            }
            keep
        });
        self.bytes = self.bytes.saturating_sub(freed);
        self.stats.timeouts += (before - self.queues.len()) as u64;
    }

    fn drop_queue(&mut self, i: usize) {
        let q = self.queues.swap_remove(i);
        self.bytes = self.bytes.saturating_sub(q.bytes());
    }

    /// Takes a fragment: `frame` is the Ethernet frame, `ip` its IPv4 packet (header
    /// checked, exactly its total length).
    pub fn add(&mut self, frame: &[u8], ip: &[u8], now: Millis) -> Defrag {
        self.expire(now);
        self.stats.fragments += 1;
        let hl = ipv4::header_len(ip);
        let (Some(word), Some(payload)) = (ipv4::be16(ip, ipv4::FRAG), ip.get(hl..)) else {
            self.stats.malformed += 1;
            return Defrag::Held;
        };
        let more = word & ipv4::MF != 0;
        let start = usize::from(word & ipv4::FRAG_OFFSET) * 8;
        let end = start + payload.len();
        if end > MAX_DATAGRAM - hl || (more && payload.len() % 8 != 0) || payload.is_empty() {
            self.stats.malformed += 1;
            return Defrag::Held;
        }
        let key = (
            u32::from(ipv4::src(ip)),
            u32::from(ipv4::dst(ip)),
            ipv4::be16(ip, ipv4::ID).unwrap_or(0),
            ip.get(ipv4::PROTO).copied().unwrap_or(0),
        );
        let i = match self.queues.iter().position(|q| q.key == key) {
            Some(i) => i,
            None => {
                if self.queues.len() >= self.cfg.max_datagrams || self.bytes >= self.cfg.max_bytes {
                    self.stats.refused += 1;
                    return Defrag::Held;
                }
                self.queues.push(Queue {
                    key,
                    header: Vec::new(),
                    data: Vec::new(),
                    have: Vec::new(),
                    total: None,
                    pieces: 0,
                    deadline: now.saturating_add(self.cfg.timeout_ms),
                });
                self.bytes += self.queues.last().map_or(0, Queue::bytes);
                self.queues.len() - 1
            }
        };
        match self.place(i, ip, hl, payload, start, end, more) {
            Ok(true) => {}
            Ok(false) => return Defrag::Held,
            Err(()) => {
                self.drop_queue(i);
                return Defrag::Held;
            }
        }
        if !self.queues[i].complete() {
            return Defrag::Held;
        }
        let q = self.queues.swap_remove(i);
        self.bytes = self.bytes.saturating_sub(q.bytes());
        let mut out = Vec::new();
        let len = ETH_LEN + q.header.len() + q.data.len();
        if out.try_reserve_exact(len).is_err() {
            self.stats.refused += 1;
            return Defrag::Held;
        }
        out.extend_from_slice(frame.get(..ETH_LEN).unwrap_or(&[0; ETH_LEN]));
        out.extend_from_slice(&q.header);
        out.extend_from_slice(&q.data);
        let ip = &mut out[ETH_LEN..];
        let total = (q.header.len() + q.data.len()) as u16;
        put16(ip, ipv4::TOTAL_LEN, total);
        let flags = ipv4::be16(ip, ipv4::FRAG).unwrap_or(0) & ipv4::DF; // DF as the first had it
        put16(ip, ipv4::FRAG, flags);
        ipv4::fill_header_checksum(ip);
        self.stats.reassembled += 1;
        Defrag::Whole(out)
    }

    /// Puts a piece in queue `i`: Ok(true) placed, Ok(false) dropped alone (a
    /// duplicate, or no room), Err the datagram is to be dropped (an overlap or an
    /// inconsistent end).
    #[allow(clippy::too_many_arguments)]
    fn place(
        &mut self,
        i: usize,
        ip: &[u8],
        hl: usize,
        payload: &[u8],
        start: usize,
        end: usize,
        more: bool,
    ) -> Result<bool, ()> {
        let budget = self.cfg.max_bytes;
        let bytes_now = self.bytes;
        let q = &mut self.queues[i];
        // inside what came already (the ranges merge as pieces touch): a duplicate,
        // as Linux's inet_frag_queue_insert has it (IPFRAG_DUP: the offset and end
        // within one run), dropped alone; the first copy's bytes stay
        if q.have.iter().any(|&(s, e)| s <= start && end <= e) {
            self.stats.duplicates += 1;
            return Ok(false);
        }
        if q.have.iter().any(|&(s, e)| start < e && s < end) {
            self.stats.overlaps += 1;
            return Err(());
        }
        // the last piece fixes the length; nothing may lie past it, and no second
        // last piece may say otherwise
        match (more, q.total) {
            (false, Some(t)) if t != end => {
                self.stats.malformed += 1;
                return Err(());
            }
            (false, _) if q.have.iter().any(|&(_, e)| e > end) => {
                self.stats.malformed += 1;
                return Err(());
            }
            (true, Some(t)) if end > t => {
                self.stats.malformed += 1;
                return Err(());
            }
            _ => {}
        }
        if q.pieces >= MAX_FRAGMENTS {
            self.stats.refused += 1;
            return Err(());
        }
        q.pieces += 1;
        let before = q.bytes();
        let grow = end.saturating_sub(q.data.len());
        if bytes_now + grow > budget || (grow > 0 && q.data.try_reserve_exact(grow).is_err()) {
            self.stats.refused += 1;
            return Err(());
        }
        if q.data.len() < end {
            q.data.resize(end, 0);
        }
        q.data[start..end].copy_from_slice(payload);
        if start == 0 {
            q.header.clear();
            if q.header.try_reserve_exact(hl).is_err() {
                self.stats.refused += 1;
                return Err(());
            }
            q.header.extend_from_slice(&ip[..hl]);
        }
        if !more {
            q.total = Some(end);
        }
        let at = q.have.partition_point(|&(s, _)| s < start);
        q.have.insert(at, (start, end));
        // merge neighbours that touch
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(q.have.len());
        for &(s, e) in &q.have {
            match merged.last_mut() {
                Some(last) if last.1 == s => last.1 = e,
                _ => merged.push((s, e)),
            }
        }
        q.have = merged;
        let after = q.bytes();
        self.bytes = self.bytes + after - before.min(after);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    const A: [u8; 4] = [203, 0, 113, 9];
    const B: [u8; 4] = [192, 168, 1, 100];

    /// An IPv4 datagram of `len` payload bytes (proto UDP-ish 17), id `id`.
    fn datagram(id: u16, len: usize) -> Vec<u8> {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        ipv4(A, B, 17, 64, id, false, &[], &payload)
    }

    /// The fragments of `ip` with `piece` payload bytes each, as Ethernet frames.
    fn fragments(ip: &[u8], piece: usize) -> Vec<Vec<u8>> {
        let hl = ipv4::header_len(ip);
        let data = &ip[hl..];
        let mut out = Vec::new();
        let mut off = 0;
        while off < data.len() {
            let end = (off + piece).min(data.len());
            let mut f = ip[..hl].to_vec();
            f.extend_from_slice(&data[off..end]);
            let n = f.len() as u16;
            put16(&mut f, 2, n);
            let mf = if end < data.len() { 0x2000 } else { 0 };
            put16(&mut f, 6, mf | (off / 8) as u16);
            ipv4::fill_header_checksum(&mut f);
            let mut frame = alloc::vec![0xee; ETH_LEN];
            frame.extend_from_slice(&f);
            out.push(frame);
            off = end;
        }
        out
    }

    fn feed(r: &mut Reassembler, frames: &[Vec<u8>], now: Millis) -> Option<Vec<u8>> {
        let mut whole = None;
        for f in frames {
            if let Defrag::Whole(w) = r.add(f, &f[ETH_LEN..], now) {
                assert!(whole.is_none(), "one datagram, once");
                whole = Some(w);
            }
        }
        whole
    }

    #[test]
    fn fragments_in_any_order_give_back_the_datagram() {
        let ip = datagram(7, 3000);
        let mut frags = fragments(&ip, 1480);
        assert_eq!(frags.len(), 3);
        let mut r = Reassembler::new(DefragConfig::default());
        let whole = feed(&mut r, &frags, 0).unwrap();
        assert_eq!(&whole[ETH_LEN..], &ip[..]);
        // reversed, and shuffled
        frags.reverse();
        assert_eq!(&feed(&mut r, &frags, 1).unwrap()[ETH_LEN..], &ip[..]);
        frags.swap(0, 1);
        assert_eq!(&feed(&mut r, &frags, 2).unwrap()[ETH_LEN..], &ip[..]);
        assert_eq!(r.pending(), 0);
        assert_eq!(r.stats().reassembled, 3);
        // in 8-byte pieces, more than a datagram may have: refused, not assembled
        assert!(feed(&mut r, &fragments(&ip, 8), 3).is_none());
        assert!(r.stats().refused >= 1);
        // the header of what comes out is whole: MF and offset clear, checksum right
        let w = feed(&mut r, &fragments(&datagram(8, 3000), 1480), 4).unwrap();
        assert_eq!(ipv4::be16(&w[ETH_LEN..], 6), Some(0));
        assert_eq!(crate::checksum::checksum(&w[ETH_LEN..ETH_LEN + 20]), 0);
    }

    #[test]
    fn duplicates_are_dropped_alone_and_overlaps_drop_the_datagram() {
        let ip = datagram(9, 2000);
        let frags = fragments(&ip, 800);
        let mut r = Reassembler::new(DefragConfig::default());
        // a duplicate of the first piece: ignored, the datagram still completes; then
        // a duplicate of a middle piece after its neighbours merged into one range
        // (the router differential's fragments-duplicate: Linux forwards it)
        for (order, duplicates) in [([0, 0, 1, 2], 1), ([0, 1, 1, 2], 2)] {
            let pieces: Vec<Vec<u8>> = order.iter().map(|&i| frags[i].clone()).collect();
            assert_eq!(&feed(&mut r, &pieces, 0).unwrap()[ETH_LEN..], &ip[..]);
            assert_eq!(r.stats().duplicates, duplicates);
        }
        // a piece inside one that came (bytes 400..800 of the first, different
        // bytes): a duplicate too, as Linux's IPFRAG_DUP; the first copy stays
        let other = fragments(&ip, 400);
        let mut inside = other[1].clone();
        let n = inside.len();
        inside[n - 1] ^= 0xff;
        let mixed = alloc::vec![frags[0].clone(), inside, frags[1].clone(), frags[2].clone()];
        assert_eq!(&feed(&mut r, &mixed, 1).unwrap()[ETH_LEN..], &ip[..]);
        assert_eq!(r.stats().duplicates, 3);
        // a piece reaching past one that came (the second piece moved to 400..1200):
        // an overlap, all gone
        let mut evil = frags[1].clone();
        put16(&mut evil[ETH_LEN..], 6, 0x2000 | (400 / 8));
        ipv4::fill_header_checksum(&mut evil[ETH_LEN..]);
        assert!(feed(&mut r, &[frags[0].clone(), evil], 1).is_none());
        assert_eq!(r.stats().overlaps, 1);
        assert_eq!(r.pending(), 0, "the datagram was dropped");
        // the rest of it now starts a new datagram that never completes alone
        assert!(feed(&mut r, &frags[1..], 2).is_none());
        assert_eq!(r.pending(), 1);
    }

    #[test]
    fn bad_pieces_are_refused_and_incomplete_datagrams_time_out() {
        let mut r = Reassembler::new(DefragConfig::default());
        let ip = datagram(11, 2000);
        let frags = fragments(&ip, 1000);
        // a middle piece that is not a multiple of 8
        let mut odd = frags[0].clone();
        let n = odd.len();
        odd.truncate(n - 1);
        let l = (odd.len() - ETH_LEN) as u16;
        put16(&mut odd[ETH_LEN..], 2, l);
        assert_eq!(r.add(&odd, &odd[ETH_LEN..], 0), Defrag::Held);
        assert_eq!(r.stats().malformed, 1);
        // only the first piece: held, then dropped after 30 s
        assert!(feed(&mut r, &frags[..1], 0).is_none());
        assert_eq!(r.pending(), 1);
        r.expire(29_999);
        assert_eq!(r.pending(), 1);
        r.expire(30_000);
        assert_eq!((r.pending(), r.stats().timeouts), (0, 1));
        assert_eq!(r.bytes, 0, "everything given back");
    }

    #[test]
    fn memory_and_queue_limits_refuse_new_fragments() {
        let mut r = Reassembler::new(DefragConfig {
            max_bytes: 16 * 1024,
            max_datagrams: 4,
            timeout_ms: 30_000,
        });
        // first pieces of many datagrams: only 4 are kept
        for id in 0..10u16 {
            let ip = datagram(id, 3000);
            feed(&mut r, &fragments(&ip, 1480)[..1], 0);
        }
        assert_eq!(r.pending(), 4);
        assert_eq!(r.stats().refused, 6);
        // a datagram of 60 KB does not fit 16 KiB
        let mut r = Reassembler::new(DefragConfig {
            max_bytes: 16 * 1024,
            max_datagrams: 4,
            timeout_ms: 30_000,
        });
        let big = datagram(1, 60_000);
        assert!(feed(&mut r, &fragments(&big, 1480), 0).is_none());
        assert!(r.stats().refused >= 1);
        assert!(r.bytes <= 16 * 1024 + 4096);
        // and a small one still goes through afterwards
        r.expire(40_000);
        let ip = datagram(2, 3000);
        assert!(feed(&mut r, &fragments(&ip, 1480), 40_001).is_some());
    }
}
