//! The connection-tracking table: fixed capacity, no allocation per packet.
//!
//! Modelled on Linux netfilter (`net/netfilter/nf_conntrack_core.c`): each flow is one
//! entry holding its ORIGINAL tuple (as the first packet looked) and its REPLY tuple (as
//! answers look on the wire, after NAT), and both tuples point to the entry from one
//! hash index, so a packet of either direction finds it with one lookup. Entries live
//! in a slab preallocated by [`Conntrack::new`]; the index is an open-addressing table
//! (`index.rs`) sized for two values per entry.
//!
//! Timeouts are OpenWrt's (`/etc/sysctl.d/11-nf-conntrack.conf` of
//! openwrt/openwrt `package/kernel/linux/files/sysctl-nf-conntrack.conf`, and Linux's
//! defaults where OpenWrt keeps them), see [`Timeouts`]. Expired entries are reclaimed
//! when a lookup meets them and by [`Conntrack::expire`], which does bounded work.
//!
//! When the table is full, a new flow evicts the oldest entry that is not ASSURED
//! (preferring one that never saw a reply), as Linux's `early_drop` does; if every entry
//! is ASSURED the new flow is refused. A list of the non-ASSURED entries in the order
//! they were created makes that O(1).
//!
//! NAT mappings ([`crate::nat`]) are owned by the entries that use them: removing an
//! entry releases its mapping (Linux `nf_nat_cleanup_conntrack`).

mod tcp;
mod window;

use core::fmt;

use alloc::vec::Vec;

pub use tcp::TcpState;

use crate::flow::{Dotted, Proto, TcpInfo, Tuple};
use crate::index::{Hasher, Index};
use crate::nat::Mappings;
use crate::{IfId, Millis};

const NONE: u32 = u32::MAX;

/// How long an entry lives after its last packet, per protocol and TCP state
/// (milliseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP SYN_SENT (OpenWrt/Linux: 120 s).
    pub tcp_syn_sent: Millis,
    /// TCP SYN_RECV (60 s).
    pub tcp_syn_recv: Millis,
    /// TCP ESTABLISHED (OpenWrt: 7440 s; Linux: 5 days).
    pub tcp_established: Millis,
    /// TCP FIN_WAIT (120 s).
    pub tcp_fin_wait: Millis,
    /// TCP CLOSE_WAIT (60 s).
    pub tcp_close_wait: Millis,
    /// TCP LAST_ACK (30 s).
    pub tcp_last_ack: Millis,
    /// TCP TIME_WAIT (120 s).
    pub tcp_time_wait: Millis,
    /// TCP CLOSE (10 s).
    pub tcp_close: Millis,
    /// UDP before a reply and a further packet (60 s on OpenWrt).
    pub udp_unreplied: Millis,
    /// UDP once assured (180 s).
    pub udp_stream: Millis,
    /// ICMP echo (30 s).
    pub icmp: Millis,
    /// Other protocols (Linux generic: 600 s).
    pub generic: Millis,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        const S: Millis = 1000;
        Timeouts {
            tcp_syn_sent: 120 * S,
            tcp_syn_recv: 60 * S,
            tcp_established: 7440 * S,
            tcp_fin_wait: 120 * S,
            tcp_close_wait: 60 * S,
            tcp_last_ack: 30 * S,
            tcp_time_wait: 120 * S,
            tcp_close: 10 * S,
            udp_unreplied: 60 * S,
            udp_stream: 180 * S,
            icmp: 30 * S,
            generic: 600 * S,
        }
    }
}

impl Timeouts {
    /// The timeout of a TCP state.
    pub fn tcp(&self, s: TcpState) -> Millis {
        match s {
            TcpState::None | TcpState::SynSent | TcpState::SynSent2 => self.tcp_syn_sent,
            TcpState::SynRecv => self.tcp_syn_recv,
            TcpState::Established => self.tcp_established,
            TcpState::FinWait => self.tcp_fin_wait,
            TcpState::CloseWait => self.tcp_close_wait,
            TcpState::LastAck => self.tcp_last_ack,
            TcpState::TimeWait => self.tcp_time_wait,
            TcpState::Close => self.tcp_close,
        }
    }
}

/// A direction of a flow (Linux `enum ip_conntrack_dir`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// The way the first packet went.
    Original,
    /// The answers.
    Reply,
}

impl Dir {
    fn index(self) -> usize {
        match self {
            Dir::Original => 0,
            Dir::Reply => 1,
        }
    }

    /// The other direction.
    pub fn other(self) -> Dir {
        match self {
            Dir::Original => Dir::Reply,
            Dir::Reply => Dir::Original,
        }
    }
}

/// Entry status bits (Linux `enum ip_conntrack_status`).
pub mod status {
    /// A packet has been seen in the reply direction.
    pub const SEEN_REPLY: u8 = 1 << 0;
    /// The flow is established enough not to be evicted early.
    pub const ASSURED: u8 = 1 << 1;
    /// The source of the original direction is translated (masquerade).
    pub const SRC_NAT: u8 = 1 << 2;
    /// The destination of the original direction is translated (port forward).
    pub const DST_NAT: u8 = 1 << 3;
}

/// An address conntrack keys flows by: IPv4 (`[u8; 4]`) or IPv6 (`[u8; 16]`).
pub trait CtAddr: Copy + Eq + fmt::Debug {
    /// The all-zero address (free entries).
    const ZERO: Self;
    /// The first word of a tuple's hash key (the second holds ports and protocol).
    fn key(src: &Self, dst: &Self, hasher: &Hasher) -> u64;
    /// Prints the address as `conntrack -L` does.
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    /// Whether the address is IPv6.
    const IS_V6: bool;
}

impl CtAddr for [u8; 4] {
    const ZERO: Self = [0; 4];
    const IS_V6: bool = false;
    fn key(src: &Self, dst: &Self, _: &Hasher) -> u64 {
        (u64::from(u32::from_be_bytes(*src)) << 32) | u64::from(u32::from_be_bytes(*dst))
    }
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Dotted(*self))
    }
}

impl CtAddr for [u8; 16] {
    const ZERO: Self = [0; 16];
    const IS_V6: bool = true;
    /// Both addresses through the keyed hash: a fold of 256 bits into 64 an outsider
    /// could aim at one index slot with.
    fn key(src: &Self, dst: &Self, hasher: &Hasher) -> u64 {
        let (s, d) = (u128::from_be_bytes(*src), u128::from_be_bytes(*dst));
        let hs = hasher.hash((s >> 64) as u64, s as u64);
        let hd = hasher.hash((d >> 64) as u64, d as u64);
        hs ^ hd.rotate_left(32)
    }
    fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", core::net::Ipv6Addr::from(*self))
    }
}

/// One tracked flow.
#[derive(Clone, Copy, Debug)]
pub struct Entry<A = [u8; 4]> {
    tuples: [Tuple<A>; 2],
    tcp: TcpState,
    win: window::Window,
    deadline: Millis,
    status: u8,
    packets: [u64; 2],
    bytes: [u64; 2],
    masq: Option<IfId>,
    mapping: u32,
    in_use: bool,
    // the list of non-ASSURED entries, oldest first
    prev: u32,
    next: u32,
}

impl<A: CtAddr> Entry<A> {
    const UNUSED_TUPLE: Tuple<A> = Tuple {
        src: A::ZERO,
        dst: A::ZERO,
        sport: 0,
        dport: 0,
        proto: Proto::Other(0),
    };

    const FREE: Entry<A> = Entry {
        tuples: [Self::UNUSED_TUPLE; 2],
        tcp: TcpState::None,
        win: window::Window::NEW,
        deadline: 0,
        status: 0,
        packets: [0; 2],
        bytes: [0; 2],
        masq: None,
        mapping: NONE,
        in_use: false,
        prev: NONE,
        next: NONE,
    };

    /// The tuple of a direction: ORIGINAL as the first packet looked, REPLY as the
    /// answers look on the wire (after NAT).
    pub fn tuple(&self, dir: Dir) -> &Tuple<A> {
        &self.tuples[dir.index()]
    }

    /// The TCP state (None for other protocols).
    pub fn tcp_state(&self) -> Option<TcpState> {
        (self.tuples[0].proto == Proto::Tcp).then_some(self.tcp)
    }

    /// Status bits ([`status`]).
    pub fn status(&self) -> u8 {
        self.status
    }

    /// When the entry expires.
    pub fn deadline(&self) -> Millis {
        self.deadline
    }

    /// Packets seen in a direction.
    pub fn packets(&self, dir: Dir) -> u64 {
        self.packets[dir.index()]
    }

    /// Bytes (IPv4 total length) seen in a direction.
    pub fn bytes(&self, dir: Dir) -> u64 {
        self.bytes[dir.index()]
    }

    /// The masquerading interface whose address the flow is mapped to.
    pub fn masquerade(&self) -> Option<IfId> {
        self.masq
    }

    pub(crate) fn has(&self, bits: u8) -> bool {
        self.status & bits == bits
    }
}

/// An entry with the time it is shown at: [`fmt::Display`] prints it as Linux's
/// `conntrack -L` does (with accounting on, as OpenWrt sets `nf_conntrack_acct=1`).
pub struct EntryView<'a, A = [u8; 4]> {
    /// The entry.
    pub entry: &'a Entry<A>,
    /// Now (for the seconds left).
    pub now: Millis,
}

fn fmt_tuple<A: CtAddr>(f: &mut fmt::Formatter<'_>, t: &Tuple<A>) -> fmt::Result {
    f.write_str("src=")?;
    t.src.show(f)?;
    f.write_str(" dst=")?;
    t.dst.show(f)?;
    f.write_str(" ")?;
    let (req, rep) = if A::IS_V6 { (128, 129) } else { (8, 0) };
    match t.proto {
        Proto::Tcp | Proto::Udp => write!(f, "sport={} dport={} ", t.sport, t.dport),
        Proto::IcmpEchoRequest => write!(f, "type={req} code=0 id={} ", t.sport),
        Proto::IcmpEchoReply => write!(f, "type={rep} code=0 id={} ", t.dport),
        Proto::Other(_) => Ok(()),
    }
}

impl<A: CtAddr> fmt::Display for EntryView<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = self.entry;
        let o = &e.tuples[0];
        let (name, number) = match o.proto {
            Proto::Tcp => ("tcp", 6),
            Proto::Udp => ("udp", 17),
            Proto::IcmpEchoRequest | Proto::IcmpEchoReply if A::IS_V6 => ("icmpv6", 58),
            Proto::IcmpEchoRequest | Proto::IcmpEchoReply => ("icmp", 1),
            Proto::Other(n) => ("unknown", n),
        };
        let secs = e.deadline.saturating_sub(self.now) / 1000;
        write!(f, "{name:<8} {number} {secs} ")?;
        if let Some(s) = e.tcp_state() {
            write!(f, "{} ", s.name())?;
        }
        fmt_tuple(f, o)?;
        write!(f, "packets={} bytes={} ", e.packets[0], e.bytes[0])?;
        if !e.has(status::SEEN_REPLY) {
            f.write_str("[UNREPLIED] ")?;
        }
        fmt_tuple(f, &e.tuples[1])?;
        write!(f, "packets={} bytes={} ", e.packets[1], e.bytes[1])?;
        if e.has(status::ASSURED) {
            f.write_str("[ASSURED] ")?;
        }
        f.write_str("mark=0 use=1")
    }
}

/// Counters, in the spirit of `conntrack -S`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Packets that found their flow (including ICMP errors that found theirs).
    pub found: u64,
    /// New flows asked for: inserted, or refused because the table was full. So
    /// `new = count + evicted + dropped_full + expired + flushed + reopened`.
    pub new: u64,
    /// Packets INVALID for conntrack (no flow and cannot start one, or not valid in
    /// their flow's state).
    pub invalid: u64,
    /// New flows refused: table full and nothing evictable.
    pub dropped_full: u64,
    /// Entries evicted to make room (not ASSURED).
    pub evicted: u64,
    /// Entries reclaimed after their timeout.
    pub expired: u64,
    /// Entries removed by [`Conntrack::flush`] or a masquerade address change.
    pub flushed: u64,
    /// New masqueraded flows refused: no free port/id (or the interface has no address).
    pub nat_exhausted: u64,
    /// ICMP errors translated for the flow they quote (RELATED).
    pub icmp_related: u64,
    /// ICMP errors that quote a flow but are addressed to another host than the
    /// flow's end (INVALID, counted in `invalid` too).
    pub icmp_misdirected: u64,
    /// ICMP errors about a flow whose ICMP checksum does not verify (INVALID,
    /// counted in `invalid` too; Linux's conntrack checks it, `nf_conntrack_checksum`):
    /// never translated.
    pub icmp_bad_checksum: u64,
    /// ICMP redirects about a translated flow, dropped (as Linux's
    /// `nf_nat_icmp_reply_translation`): nobody outside redirects a LAN host.
    pub icmp_redirect_dropped: u64,
    /// Port forwards to the router itself, tracked when the input chain accepted
    /// their first packet.
    pub local_dnat: u64,
    /// Packets dropped on their way out of a masquerading interface, INVALID or with
    /// a source that is not the interface's address ("prevent NAT leakage").
    pub leak_blocked: u64,
    /// Packets whose transport header was cut short.
    pub malformed: u64,
    /// New flows whose reply tuple was already taken by another flow (clash).
    pub clash: u64,
    /// TCP segments outside their flow's sequence window (INVALID, counted in
    /// `invalid` too by the caller).
    pub out_of_window: u64,
    /// Flows ended by a SYN over TIME_WAIT or CLOSE (the SYN is then judged new).
    pub reopened: u64,
}

/// What conntrack makes of a packet of a known flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Track {
    /// Valid for the flow.
    Valid,
    /// Not valid in the flow's state.
    Invalid,
    /// A new SYN over a flow in TIME_WAIT or CLOSE: the old flow is gone, and the
    /// SYN is to be judged as a new connection (Linux kills the entry and looks the
    /// packet up again), whichever side sends it.
    Reopen,
}

/// The connection-tracking table.
pub struct Conntrack<A = [u8; 4]> {
    entries: Vec<Entry<A>>,
    free: Vec<u32>,
    index: Index,
    hasher: Hasher,
    age_head: u32,
    age_tail: u32,
    live: usize,
    cursor: usize,
    timeouts: Timeouts,
    pub(crate) maps: Mappings,
    pub(crate) stats: Stats,
    /// Linux's `nf_conntrack_tcp_be_liberal`: off (OpenWrt's setting) checks every
    /// TCP segment against its flow's sequence window.
    tcp_be_liberal: bool,
}

/// How many of the oldest non-ASSURED entries eviction looks at for one that never
/// saw a reply, and how many slots a full table's insert scans for expired ones.
const EVICT_LOOKAHEAD: usize = 8;
const INSERT_EXPIRE_BUDGET: usize = 32;

#[inline]
fn tuple_key<A: CtAddr>(t: &Tuple<A>, hasher: &Hasher) -> (u64, u64) {
    let a = A::key(&t.src, &t.dst, hasher);
    let b = (u64::from(t.sport) << 32) | (u64::from(t.dport) << 16) | u64::from(t.proto.code());
    (a, b)
}

impl<A: CtAddr> Conntrack<A> {
    /// A table of `capacity` entries (at least 1), its index keyed by `hash_seed`.
    pub fn new(capacity: usize, timeouts: Timeouts, hash_seed: u64) -> Conntrack<A> {
        let capacity = capacity.clamp(1, (u32::MAX / 4) as usize);
        let mut entries = Vec::with_capacity(capacity);
        entries.resize(capacity, Entry::FREE);
        // pop() hands out slot 0 first
        let free = (0..capacity as u32).rev().collect();
        Conntrack {
            entries,
            free,
            index: Index::new(capacity * 2),
            hasher: Hasher::new(hash_seed),
            age_head: NONE,
            age_tail: NONE,
            live: 0,
            cursor: 0,
            timeouts,
            // no NAT66: an IPv6 table holds no mapping
            maps: Mappings::new(
                if A::IS_V6 { 0 } else { capacity },
                hash_seed ^ 0x6e61_7434_3400_0000,
            ),
            stats: Stats::default(),
            tcp_be_liberal: false,
        }
    }

    /// Turns sequence-window checking off (`true`) or on, as Linux's
    /// `nf_conntrack_tcp_be_liberal`.
    pub fn set_tcp_be_liberal(&mut self, liberal: bool) {
        self.tcp_be_liberal = liberal;
    }

    /// The entries the table can hold.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Live entries (including expired ones not reclaimed yet).
    pub fn count(&self) -> usize {
        self.live
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The timeouts in force.
    pub fn timeouts(&self) -> &Timeouts {
        &self.timeouts
    }

    fn hash(&self, t: &Tuple<A>) -> u64 {
        let (a, b) = tuple_key(t, &self.hasher);
        self.hasher.hash(a, b)
    }

    /// The live entry and direction a tuple belongs to, reclaiming it instead if it
    /// has expired.
    #[inline]
    pub fn lookup(&mut self, t: &Tuple<A>, now: Millis) -> Option<(u32, Dir)> {
        let h = self.hash(t);
        let entries = &self.entries;
        let v = self.index.find(h, |v| {
            entries[(v >> 1) as usize].tuples[(v & 1) as usize] == *t
        })?;
        let slot = v >> 1;
        if self.entries[slot as usize].deadline <= now {
            self.remove(slot);
            self.stats.expired += 1;
            return None;
        }
        Some((
            slot,
            if v & 1 == 0 {
                Dir::Original
            } else {
                Dir::Reply
            },
        ))
    }

    /// Whether an entry (live, or expired and not reclaimed yet) has this tuple in
    /// either direction.
    pub(crate) fn contains(&self, t: &Tuple<A>) -> bool {
        let entries = &self.entries;
        self.index
            .find(self.hash(t), |v| {
                entries[(v >> 1) as usize].tuples[(v & 1) as usize] == *t
            })
            .is_some()
    }

    /// The entry a tuple belongs to (either direction), without reclaiming it if it
    /// has expired.
    pub fn lookup_view(&self, t: &Tuple<A>) -> Option<&Entry<A>> {
        let entries = &self.entries;
        let v = self.index.find(self.hash(t), |v| {
            entries[(v >> 1) as usize].tuples[(v & 1) as usize] == *t
        })?;
        self.entries.get((v >> 1) as usize)
    }

    /// The entry in `slot`, if it is in use.
    pub fn get(&self, slot: u32) -> Option<&Entry<A>> {
        self.entries.get(slot as usize).filter(|e| e.in_use)
    }

    fn age_unlink(&mut self, slot: u32) {
        let (prev, next) = {
            let e = &self.entries[slot as usize];
            (e.prev, e.next)
        };
        if prev == NONE {
            self.age_head = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NONE {
            self.age_tail = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
        let e = &mut self.entries[slot as usize];
        e.prev = NONE;
        e.next = NONE;
    }

    fn age_push(&mut self, slot: u32) {
        let tail = self.age_tail;
        {
            let e = &mut self.entries[slot as usize];
            e.prev = tail;
            e.next = NONE;
        }
        if tail == NONE {
            self.age_head = slot;
        } else {
            self.entries[tail as usize].next = slot;
        }
        self.age_tail = slot;
    }

    fn set_assured(&mut self, slot: u32) {
        if !self.entries[slot as usize].has(status::ASSURED) {
            self.entries[slot as usize].status |= status::ASSURED;
            self.age_unlink(slot);
        }
    }

    /// Removes an entry: both index values, the age list, its NAT mapping.
    /// Ends the flow in `slot` for a SYN that reopens its tuple ([`Track::Reopen`]).
    pub(crate) fn end_for_reopen(&mut self, slot: u32) {
        if self.entries.get(slot as usize).is_some_and(|e| e.in_use) {
            self.remove(slot);
            self.stats.reopened += 1;
        }
    }

    fn remove(&mut self, slot: u32) {
        let Some(e) = self.get(slot).copied() else {
            return;
        };
        for dir in 0..2u32 {
            let h = self.hash(&e.tuples[dir as usize]);
            let (entries, hasher) = (&self.entries, &self.hasher);
            let hash_of = |v: u32| {
                let (a, b) =
                    tuple_key(&entries[(v >> 1) as usize].tuples[(v & 1) as usize], hasher);
                hasher.hash(a, b)
            };
            let removed = self.index.remove(h, (slot << 1) | dir, hash_of);
            debug_assert!(removed);
        }
        if !e.has(status::ASSURED) {
            self.age_unlink(slot);
        }
        if e.mapping != NONE {
            self.maps.release(e.mapping);
        }
        self.entries[slot as usize] = Entry::FREE;
        self.free.push(slot);
        self.live -= 1;
    }

    /// Reclaims expired entries, looking at no more than `budget` slots (round robin).
    /// Returns how many were reclaimed.
    pub fn expire(&mut self, now: Millis, budget: usize) -> usize {
        let mut n = 0;
        let len = self.entries.len();
        for _ in 0..budget.min(len) {
            let slot = self.cursor;
            self.cursor = (self.cursor + 1) % len;
            let e = &self.entries[slot];
            if e.in_use && e.deadline <= now {
                self.remove(slot as u32);
                self.stats.expired += 1;
                n += 1;
            }
        }
        n
    }

    /// Makes sure one slot is free: reclaims expired entries (bounded), then evicts
    /// the oldest non-ASSURED entry, preferring one that never saw a reply. False if
    /// every entry is ASSURED and live.
    pub(crate) fn make_room(&mut self, now: Millis) -> bool {
        if !self.free.is_empty() {
            return true;
        }
        // the oldest non-assured entry is the likeliest to have expired
        if self.age_head != NONE && self.entries[self.age_head as usize].deadline <= now {
            self.remove(self.age_head);
            self.stats.expired += 1;
            return true;
        }
        if self.expire(now, INSERT_EXPIRE_BUDGET) > 0 {
            return true;
        }
        let mut victim = self.age_head;
        let mut s = self.age_head;
        for _ in 0..EVICT_LOOKAHEAD {
            if s == NONE {
                break;
            }
            if !self.entries[s as usize].has(status::SEEN_REPLY) {
                victim = s;
                break;
            }
            s = self.entries[s as usize].next;
        }
        if victim == NONE {
            return false;
        }
        self.remove(victim);
        self.stats.evicted += 1;
        true
    }

    /// Inserts a flow (the caller has checked that neither tuple is in the table and
    /// called [`Conntrack::make_room`]). `mapping` is a NAT mapping already acquired
    /// for it. Returns the slot, or None if there was no room (the mapping is then
    /// released).
    pub(crate) fn insert(
        &mut self,
        original: Tuple<A>,
        reply: Tuple<A>,
        nat: u8,
        masq: Option<IfId>,
        mapping: Option<u32>,
        now: Millis,
    ) -> Option<u32> {
        let Some(slot) = self.free.pop() else {
            if let Some(m) = mapping {
                self.maps.release(m);
            }
            return None;
        };
        let timeout = match original.proto {
            Proto::Tcp => self.timeouts.tcp_syn_sent,
            Proto::Udp => self.timeouts.udp_unreplied,
            Proto::IcmpEchoRequest | Proto::IcmpEchoReply => self.timeouts.icmp,
            Proto::Other(_) => self.timeouts.generic,
        };
        self.entries[slot as usize] = Entry {
            tuples: [original, reply],
            // the first packet's `track` moves it on
            tcp: TcpState::None,
            win: window::Window::NEW,
            deadline: now.saturating_add(timeout),
            status: nat & (status::SRC_NAT | status::DST_NAT),
            packets: [0; 2],
            bytes: [0; 2],
            masq,
            mapping: mapping.unwrap_or(NONE),
            in_use: true,
            prev: NONE,
            next: NONE,
        };
        for dir in 0..2u32 {
            let h = self.hash(&self.entries[slot as usize].tuples[dir as usize]);
            let ok = self.index.insert(h, (slot << 1) | dir);
            debug_assert!(ok, "the index is sized for two values per entry");
        }
        self.age_push(slot);
        self.live += 1;
        Some(slot)
    }

    /// Accounts a packet of `len` bytes in `dir` of the flow in `slot` and moves its
    /// state on (Linux `nf_conntrack_in` → the protocol's `packet` handler).
    pub(crate) fn track(
        &mut self,
        slot: u32,
        dir: Dir,
        tcp: Option<TcpInfo>,
        len: usize,
        now: Millis,
    ) -> Track {
        let t = &self.timeouts;
        let Some(e) = self.entries.get_mut(slot as usize).filter(|e| e.in_use) else {
            return Track::Invalid;
        };
        let is_reply = dir == Dir::Reply;
        let had_reply = e.has(status::SEEN_REPLY);
        let mut assure = false;
        match e.tuples[0].proto {
            Proto::Tcp => {
                let Some(info) = tcp else {
                    return Track::Invalid;
                };
                let flags = info.flags;
                let d = dir.index();
                match tcp::transition(is_reply, flags, e.tcp) {
                    tcp::Transition::Invalid => return Track::Invalid,
                    tcp::Transition::Ignore => {}
                    tcp::Transition::To(new) => {
                        let old = e.tcp;
                        // a new SYN over TIME_WAIT/CLOSE reuses the tuple: a new
                        // connection, judged as one (Linux kills the old entry and
                        // looks the SYN up again)
                        if (new == TcpState::SynSent || new == TcpState::SynSent2)
                            && old >= TcpState::TimeWait
                            && flags & crate::flow::tcp_flag::ACK == 0
                        {
                            return Track::Reopen;
                        }
                        if !self.tcp_be_liberal {
                            if flags & crate::flow::tcp_flag::RST != 0
                                && e.win.rst_is_stale(d, info.seq)
                            {
                                return Track::Invalid;
                            }
                            let restartable = (old == TcpState::SynSent && !is_reply)
                                || (old == TcpState::SynRecv && is_reply);
                            if !e.win.in_window(d, &info, restartable) {
                                self.stats.out_of_window += 1;
                                return Track::Invalid;
                            }
                        }
                        e.tcp = new;
                        e.deadline = now.saturating_add(t.tcp(new));
                        if had_reply
                            && new == TcpState::Established
                            && (old == TcpState::SynRecv || old == TcpState::Established)
                        {
                            assure = true;
                        }
                    }
                }
            }
            Proto::Udp => {
                // Linux nf_conntrack_proto_udp.c: once a reply has been seen, a further
                // packet makes the flow a stream
                if had_reply {
                    assure = true;
                    e.deadline = now.saturating_add(t.udp_stream);
                } else {
                    e.deadline = now.saturating_add(t.udp_unreplied);
                }
            }
            Proto::IcmpEchoRequest | Proto::IcmpEchoReply => {
                e.deadline = now.saturating_add(t.icmp);
            }
            Proto::Other(_) => {
                e.deadline = now.saturating_add(t.generic);
            }
        }
        let d = dir.index();
        e.packets[d] = e.packets[d].saturating_add(1);
        e.bytes[d] = e.bytes[d].saturating_add(len as u64);
        if is_reply {
            e.status |= status::SEEN_REPLY;
        }
        if assure {
            self.set_assured(slot);
        }
        Track::Valid
    }

    /// Removes every entry.
    pub fn flush(&mut self) {
        for slot in 0..self.entries.len() as u32 {
            if self.entries[slot as usize].in_use {
                self.remove(slot);
                self.stats.flushed += 1;
            }
        }
        debug_assert_eq!(self.live, 0);
        self.index.clear();
        self.maps.clear();
    }

    /// Removes the entries masqueraded to interface `iface` (its address changed).
    pub(crate) fn flush_masquerade(&mut self, iface: IfId) -> usize {
        let mut n = 0;
        for slot in 0..self.entries.len() as u32 {
            let e = &self.entries[slot as usize];
            if e.in_use && e.masq == Some(iface) {
                self.remove(slot);
                self.stats.flushed += 1;
                n += 1;
            }
        }
        n
    }

    /// Calls `f` on each live entry (expired ones not yet reclaimed are skipped), in
    /// slot order.
    pub fn for_each(&self, now: Millis, mut f: impl FnMut(EntryView<'_, A>)) {
        for e in self.entries.iter().filter(|e| e.in_use && e.deadline > now) {
            f(EntryView { entry: e, now });
        }
    }
}
