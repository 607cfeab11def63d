//! The router's egress queue: frames routed to a link whose TX ring is full wait
//! here instead of being dropped, and go out first when the ring has room again
//! (Linux's qdisc in front of a stopped netfront queue, `txqueuelen`), shared
//! fairly between flows as OpenWrt's default qdisc, fq_codel, shares it.
//!
//! Without it a burst larger than the ring (four TCP streams through the router,
//! 64 KiB GSO packets of 17 slots each in a 256-slot ring) loses packets that the
//! senders then retransmit. The queue is bounded in frames and bytes, so a link that
//! never drains (a dead backend) costs at most that much memory and then drops only
//! its own frames, as before.
//!
//! Fairness (fq_codel's flow queues and deficit round robin, RFC 8290 without the
//! CoDel drop law): a frame waits in one of [`FLOW_QUEUES`] queues, picked by a
//! keyed hash of its flow (addresses, protocol, ports: `xenlet_drivers::flow`), and
//! the queues take turns, each sending up to [`QUANTUM`] bytes a turn. A queue that
//! was empty starts on the list of new flows, served before the old ones, so a
//! sparse flow (a TCP ACK, DNS, ARP) passes a bulk one. When the backlog is full a
//! frame of the flow holding the most of it (frames at the frame bound, bytes at the
//! byte bound) is dropped: the arriving frame if it is that flow's, else the oldest
//! frame of that fattest flow (counted in [`Backlog::pushed_out`]). So a flow
//! flooding a link that drains slowly (a WAN whose backend is busy) fills its own
//! queue and loses its own frames, and another flow's frames still get in and out
//! in their turn; with one first-in first-out queue the flood's frames filled it and
//! the other flows' were the ones refused, and waited behind up to 256 of them.
//! Frames of one flow keep their order; frames that are not IP share queue 0.

use crate::link::Link;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use xenlet_drivers::flow::flow_hash_keyed;
use xenlet_router::forward::{TxFull, TxMeta};

/// Frames a port's backlog holds at most.
pub const BACKLOG_FRAMES: usize = 256;
/// Bytes a port's backlog holds at most: four 64 KiB GSO packets, or many small
/// frames (router-small's 8 MiB domain has room for it on each port).
pub const BACKLOG_BYTES: usize = 256 * 1024;
/// Flow queues per port (fq_codel has 1024; a port's backlog holds at most
/// [`BACKLOG_FRAMES`], and an empty queue costs a few words).
pub const FLOW_QUEUES: usize = 64;
/// Bytes a flow queue may send per turn while others wait: one full-size Ethernet
/// frame, fq_codel's default.
pub const QUANTUM: i64 = 1514;

/// Which round-robin list a flow queue is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Turns {
    Idle,
    New,
    Old,
}

/// One flow queue.
#[derive(Debug)]
struct FlowQueue {
    frames: VecDeque<(Vec<u8>, TxMeta)>,
    bytes: usize,
    /// Bytes it may still send this turn.
    deficit: i64,
    on: Turns,
}

impl FlowQueue {
    const fn new() -> Self {
        FlowQueue {
            frames: VecDeque::new(),
            bytes: 0,
            deficit: 0,
            on: Turns::Idle,
        }
    }
}

/// One link's queue of frames waiting for TX room, shared fairly between flows.
#[derive(Debug)]
pub struct Backlog {
    /// [`FLOW_QUEUES`] queues, made when a frame first waits.
    queues: Vec<FlowQueue>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    frames: usize,
    bytes: usize,
    key: u32,
    /// Frames that waited here (rather than being dropped).
    pub queued: u64,
    /// The most frames waiting at once.
    pub high_water: usize,
    /// Frames that had waited and were dropped to make room for another flow's.
    pub pushed_out: u64,
}

impl Default for Backlog {
    fn default() -> Self {
        Backlog::new(0)
    }
}

impl Backlog {
    /// An empty backlog whose flows are hashed with `key` (entropy, so that a
    /// sender cannot choose flows that share another's queue).
    pub fn new(key: u32) -> Self {
        Backlog {
            queues: Vec::new(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            frames: 0,
            bytes: 0,
            key,
            queued: 0,
            high_water: 0,
            pushed_out: 0,
        }
    }

    /// Frames waiting.
    pub fn len(&self) -> usize {
        self.frames
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.frames == 0
    }

    /// The flow queue of `frame`.
    fn queue_of(&self, frame: &[u8]) -> usize {
        flow_hash_keyed(frame, self.key).map_or(0, |h| h as usize % FLOW_QUEUES)
    }

    /// Sends `frame` on `link`, or makes it wait in its flow's queue when the ring
    /// has no room or others wait (copied). When the backlog is full the flow
    /// holding the most of it loses a frame: `TxFull` when that is `frame` itself
    /// (the caller counts the drop), else its oldest waiting frame goes.
    pub fn send<L: Link>(&mut self, link: &mut L, frame: &[u8], tx: TxMeta) -> Result<(), TxFull> {
        if self.frames == 0 && transmit(link, frame, tx).is_ok() {
            return Ok(());
        }
        if frame.len() > BACKLOG_BYTES {
            return Err(TxFull);
        }
        if self.queues.is_empty() {
            self.queues.resize_with(FLOW_QUEUES, FlowQueue::new);
        }
        let k = self.queue_of(frame);
        // room first: frames of the fattest flow go until this one fits, unless
        // this one's flow is the fattest (counting it), when it is refused
        loop {
            let fat = if self.frames + 1 > BACKLOG_FRAMES {
                self.fattest(|q| q.frames.len())
            } else if self.bytes + frame.len() > BACKLOG_BYTES {
                self.fattest(|q| q.bytes)
            } else {
                break;
            };
            if fat == k || self.queues[fat].frames.is_empty() {
                return Err(TxFull);
            }
            self.drop_oldest(fat);
        }
        let q = &mut self.queues[k];
        q.frames.push_back((frame.to_vec(), tx));
        q.bytes += frame.len();
        if q.on == Turns::Idle {
            q.on = Turns::New;
            q.deficit = QUANTUM;
            self.new_flows.push_back(k);
        }
        self.frames += 1;
        self.bytes += frame.len();
        self.queued += 1;
        self.high_water = self.high_water.max(self.frames);
        Ok(())
    }

    /// The queue holding the most of what `size` measures (frames when the frame
    /// bound is reached, bytes when the byte bound is: a flood of small frames
    /// pays for the frames it holds, a bulk flow of GSO packets for its bytes).
    fn fattest(&self, size: impl Fn(&FlowQueue) -> usize) -> usize {
        let mut best = 0;
        for (i, q) in self.queues.iter().enumerate() {
            if size(q) > size(&self.queues[best]) {
                best = i;
            }
        }
        best
    }

    /// Drops the oldest frame of queue `k` (it stays on its list; an empty queue
    /// leaves it at its turn).
    fn drop_oldest(&mut self, k: usize) {
        if let Some((f, _)) = self.queues[k].frames.pop_front() {
            self.queues[k].bytes -= f.len();
            self.frames -= 1;
            self.bytes -= f.len();
            self.pushed_out += 1;
        }
    }

    /// Sends what waits, the flows taking turns (new flows first, [`QUANTUM`] bytes
    /// a turn), until the ring is full again. Whether any frame went.
    pub fn flush<L: Link>(&mut self, link: &mut L) -> bool {
        let mut sent = false;
        loop {
            let (k, new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&k), _) => (k, true),
                (None, Some(&k)) => (k, false),
                (None, None) => break,
            };
            let list = if new {
                &mut self.new_flows
            } else {
                &mut self.old_flows
            };
            let q = &mut self.queues[k];
            if q.deficit <= 0 {
                // its turn is used up: to the end of the old flows with a new one
                q.deficit += QUANTUM;
                q.on = Turns::Old;
                list.pop_front();
                self.old_flows.push_back(k);
                continue;
            }
            let Some((frame, tx)) = q.frames.front() else {
                // emptied: a new flow goes to the old ones once (so that a flow
                // that keeps coming back empty cannot take every turn as new),
                // an old one leaves the lists
                list.pop_front();
                if new {
                    q.on = Turns::Old;
                    self.old_flows.push_back(k);
                } else {
                    q.on = Turns::Idle;
                }
                continue;
            };
            if transmit(link, frame, *tx).is_err() {
                break;
            }
            let len = frame.len();
            q.frames.pop_front();
            q.bytes -= len;
            q.deficit -= len as i64;
            self.frames -= 1;
            self.bytes -= len;
            sent = true;
        }
        sent
    }
}

/// Hands a frame to the link as its metadata says.
fn transmit<L: Link>(link: &mut L, frame: &[u8], tx: TxMeta) -> Result<(), alloc::string::String> {
    match (tx.gso_size, tx.csum_partial) {
        (Some(mss), _) => link.send_gso(frame, mss),
        (None, true) => link.send_csum_blank(frame),
        (None, false) => link.send(frame),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkStats;
    use alloc::string::String;

    /// A link with a TX ring of `free` slots that the test completes by hand.
    struct RingLink {
        free: usize,
        /// Each frame sent, with how it was sent.
        sent: Vec<(Vec<u8>, String)>,
    }

    impl RingLink {
        fn new(free: usize) -> Self {
            RingLink {
                free,
                sent: Vec::new(),
            }
        }
        fn complete(&mut self, n: usize) {
            self.free += n;
        }
        fn sent_firsts(&self) -> Vec<u8> {
            self.sent.iter().map(|s| s.0[0]).collect()
        }
        fn kinds(&self) -> Vec<&str> {
            self.sent.iter().map(|s| s.1.as_str()).collect()
        }
        /// (UDP source port, payload number: [`udp4`]) of each frame sent.
        fn sent(&self) -> Vec<(u16, u16)> {
            self.sent
                .iter()
                .map(|(f, _)| {
                    (
                        u16::from_be_bytes([f[34], f[35]]),
                        u16::from_be_bytes([f[42], f[43]]),
                    )
                })
                .collect()
        }
        /// The payload numbers of flow `sport`'s frames, in the order sent.
        fn numbers(&self, sport: u16) -> Vec<u16> {
            self.sent()
                .iter()
                .filter(|s| s.0 == sport)
                .map(|s| s.1)
                .collect()
        }
        fn take(&mut self, frame: &[u8], kind: String) -> Result<(), String> {
            if self.free == 0 {
                return Err(String::from("tx ring full"));
            }
            self.free -= 1;
            self.sent.push((frame.to_vec(), kind));
            Ok(())
        }
    }

    impl Link for RingLink {
        fn mac(&self) -> [u8; 6] {
            [2, 0, 0, 0, 0, 1]
        }
        fn recv(&mut self) -> Option<Vec<u8>> {
            None
        }
        fn can_send(&mut self) -> bool {
            self.free > 0
        }
        fn send(&mut self, frame: &[u8]) -> Result<(), String> {
            self.take(frame, String::from("plain"))
        }
        fn send_csum_blank(&mut self, frame: &[u8]) -> Result<(), String> {
            self.take(frame, String::from("csum_blank"))
        }
        fn send_gso(&mut self, frame: &[u8], mss: u16) -> Result<(), String> {
            self.take(frame, alloc::format!("gso {mss}"))
        }
        fn stats(&self) -> LinkStats {
            LinkStats::default()
        }
        fn broken(&self) -> Option<&str> {
            None
        }
    }

    fn plain() -> TxMeta {
        TxMeta {
            csum_partial: false,
            gso_size: None,
        }
    }

    #[test]
    fn a_full_ring_queues_in_order_and_the_queue_drains_first() {
        let mut link = RingLink::new(2);
        let mut b = Backlog::default();
        for i in 0..5u8 {
            b.send(&mut link, &[i; 60], plain()).unwrap();
        }
        assert_eq!(link.sent_firsts(), [0, 1], "two fit the ring");
        assert_eq!((b.len(), b.queued, b.high_water), (3, 3, 3));
        // room for one: the oldest waiting goes, a new frame waits behind the rest
        link.complete(1);
        b.send(&mut link, &[9; 60], plain()).unwrap();
        assert_eq!(link.sent_firsts(), [0, 1], "nothing overtakes the queue");
        assert!(b.flush(&mut link));
        assert_eq!(link.sent_firsts(), [0, 1, 2]);
        link.complete(9);
        assert!(b.flush(&mut link));
        assert_eq!(link.sent_firsts(), [0, 1, 2, 3, 4, 9]);
        assert!(b.is_empty());
        assert!(!b.flush(&mut link), "nothing left to send");
    }

    #[test]
    fn the_queue_is_bounded_in_frames_and_bytes() {
        let mut link = RingLink::new(0);
        let mut b = Backlog::default();
        for _ in 0..BACKLOG_FRAMES {
            b.send(&mut link, &[1; 60], plain()).unwrap();
        }
        assert_eq!(
            b.send(&mut link, &[1; 60], plain()),
            Err(TxFull),
            "frames bound"
        );
        let mut b = Backlog::default();
        for _ in 0..BACKLOG_BYTES / 65536 {
            b.send(&mut link, &[1; 65536], plain()).unwrap();
        }
        assert_eq!(
            b.send(&mut link, &[1; 60], plain()),
            Err(TxFull),
            "bytes bound"
        );
        assert_eq!(b.len(), BACKLOG_BYTES / 65536);
        // a dead link: what waits stays bounded, nothing is sent
        assert!(!b.flush(&mut link));
        assert_eq!(b.len(), BACKLOG_BYTES / 65536);
    }

    #[test]
    fn gso_and_checksum_metadata_wait_with_their_frame() {
        let mut link = RingLink::new(0);
        let mut b = Backlog::default();
        let gso = TxMeta::gso(1448);
        let blank = TxMeta {
            csum_partial: true,
            gso_size: None,
        };
        b.send(&mut link, &[1; 3000], gso).unwrap();
        b.send(&mut link, &[2; 100], blank).unwrap();
        b.send(&mut link, &[3; 100], plain()).unwrap();
        link.complete(3);
        assert!(b.flush(&mut link));
        assert_eq!(link.kinds(), ["gso 1448", "csum_blank", "plain"]);
    }

    /// An IPv4 UDP frame of `len` bytes (at least 44) from source port `sport`,
    /// its payload's first two bytes numbered `n`.
    fn udp4(sport: u16, len: usize, n: u16) -> Vec<u8> {
        let mut f = alloc::vec![0u8; len.max(44)];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[14 + 9] = 17;
        f[14 + 12..14 + 20].copy_from_slice(&[10, 77, 0, 2, 10, 77, 0, 10]);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&5202u16.to_be_bytes());
        f[42..44].copy_from_slice(&n.to_be_bytes());
        f
    }

    /// Source ports of two flows that hash to different queues under `key`.
    fn two_flows(key: u32) -> (u16, u16) {
        let b = Backlog::new(key);
        let a = b.queue_of(&udp4(1000, 60, 0));
        let other = (1001..)
            .find(|&p| b.queue_of(&udp4(p, 60, 0)) != a)
            .unwrap();
        (1000, other)
    }

    /// A flood that fills the backlog loses its own frames, and another flow's
    /// frames still get in (pushing out the flood's oldest) and out, in their turn.
    #[test]
    fn a_flood_fills_its_own_queue_and_another_flow_still_passes() {
        let (flood, tcp) = two_flows(7);
        let mut link = RingLink::new(0);
        let mut b = Backlog::new(7);
        let mut refused = 0;
        for i in 0..300 {
            if b.send(&mut link, &udp4(flood, 106, i), plain()).is_err() {
                refused += 1;
            }
        }
        assert_eq!((b.len(), refused), (BACKLOG_FRAMES, 300 - BACKLOG_FRAMES));
        for i in 0..10 {
            assert_eq!(
                b.send(&mut link, &udp4(tcp, 1514, i), plain()),
                Ok(()),
                "frame {i}"
            );
        }
        assert_eq!((b.len(), b.pushed_out), (BACKLOG_FRAMES, 10));
        // the flood's oldest ten went: its first frame out is its eleventh
        link.free = 40;
        assert!(b.flush(&mut link));
        let sent = link.sent();
        assert_eq!(sent[0], (flood, 10));
        // byte for byte the turns are even: a quantum of the flood's small frames
        // (15 of 106 bytes), one of the other flow's 1514-byte frames, and again
        assert_eq!(link.numbers(tcp), [0, 1], "{sent:?}");
        assert_eq!(sent[15], (tcp, 0));
    }

    /// A flow that had nothing waiting (a TCP ACK behind a bulk flow) goes out
    /// before the bulk flow's next frames.
    #[test]
    fn a_sparse_flow_goes_before_a_backlogged_one() {
        let (bulk, sparse) = two_flows(3);
        let mut link = RingLink::new(0);
        let mut b = Backlog::new(3);
        for i in 0..100 {
            b.send(&mut link, &udp4(bulk, 1514, i), plain()).unwrap();
        }
        link.free = 3;
        b.flush(&mut link);
        b.send(&mut link, &udp4(sparse, 66, 0), plain()).unwrap();
        link.free = 2;
        b.flush(&mut link);
        assert_eq!(link.sent()[3..], [(sparse, 0), (bulk, 3)]);
    }

    /// At the byte bound the flow holding the most bytes pays: a bulk flow of GSO
    /// packets is refused, small frames of another still get in.
    #[test]
    fn at_the_byte_bound_the_flow_with_the_most_bytes_pays() {
        let (bulk, small) = two_flows(11);
        let mut link = RingLink::new(0);
        let mut b = Backlog::new(11);
        for i in 0..4 {
            b.send(&mut link, &udp4(bulk, 65_000, i), plain()).unwrap();
        }
        assert_eq!(
            b.send(&mut link, &udp4(bulk, 65_000, 9), plain()),
            Err(TxFull)
        );
        for i in 0..20 {
            b.send(&mut link, &udp4(small, 1000, i), plain()).unwrap();
        }
        assert_eq!(
            b.pushed_out, 1,
            "one GSO packet made room for 20 small frames"
        );
        link.free = 100;
        b.flush(&mut link);
        let sent = link.sent();
        assert_eq!(sent.len(), 23);
        assert_eq!(link.numbers(bulk), [1, 2, 3]);
        assert_eq!(link.numbers(small), (0..20).collect::<Vec<u16>>());
    }

    /// Any mix of flows, sizes and ring room: the bounds hold, each flow's frames
    /// leave in their order, and every frame is sent, refused or pushed out, once.
    #[test]
    fn any_mix_keeps_the_bounds_the_order_and_the_count() {
        let mut rng = xenlet_testrng::XorShift(0x5eed);
        for round in 0..50 {
            let mut link = RingLink::new(0);
            let mut b = Backlog::new(round);
            let (mut accepted, mut refused) = (0u64, 0u64);
            let mut next = [0u16; 8];
            for _ in 0..2000 {
                if rng.below(4) == 0 {
                    link.free += rng.index(20);
                    b.flush(&mut link);
                } else {
                    let flow = rng.index(8);
                    let len = rng.pick(&[60, 106, 1514, 9000, 65_000]);
                    let f = udp4(2000 + flow as u16, len, next[flow]);
                    next[flow] += 1;
                    match b.send(&mut link, &f, plain()) {
                        Ok(()) => accepted += 1,
                        Err(TxFull) => refused += 1,
                    }
                }
                assert!(b.len() <= BACKLOG_FRAMES && b.bytes <= BACKLOG_BYTES);
            }
            link.free = usize::MAX;
            b.flush(&mut link);
            assert!(b.is_empty());
            assert_eq!(
                link.sent.len() as u64 + b.pushed_out,
                accepted,
                "round {round}"
            );
            let made: u64 = next.iter().map(|&n| u64::from(n)).sum();
            assert_eq!(refused + accepted, made);
            for flow in 0..8u16 {
                let nums = link.numbers(2000 + flow);
                assert!(
                    nums.windows(2).all(|w| w[0] < w[1]),
                    "flow {flow} of round {round} out of order: {nums:?}"
                );
            }
        }
    }
}
