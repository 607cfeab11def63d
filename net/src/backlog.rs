//! The router's egress queue: frames routed to a link whose TX ring is full wait
//! here, in order, instead of being dropped, and go out first when the ring has
//! room again (Linux's qdisc in front of a stopped netfront queue, `txqueuelen`).
//!
//! Without it a burst larger than the ring (four TCP streams through the router,
//! 64 KiB GSO packets of 17 slots each in a 256-slot ring) loses packets that the
//! senders then retransmit. The queue is bounded in frames and bytes, so a link that
//! never drains (a dead backend) costs at most that much memory and then drops only
//! its own frames, as before.

use crate::link::Link;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use xenlet_router::forward::{TxFull, TxMeta};

/// Frames a port's backlog holds at most.
pub const BACKLOG_FRAMES: usize = 256;
/// Bytes a port's backlog holds at most: four 64 KiB GSO packets, or many small
/// frames (router-small's 8 MiB domain has room for it on each port).
pub const BACKLOG_BYTES: usize = 256 * 1024;

/// One link's queue of frames waiting for TX room.
#[derive(Debug, Default)]
pub struct Backlog {
    frames: VecDeque<(Vec<u8>, TxMeta)>,
    bytes: usize,
    /// Frames that waited here (rather than being dropped).
    pub queued: u64,
    /// The most frames waiting at once.
    pub high_water: usize,
}

impl Backlog {
    /// Frames waiting.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Sends `frame` on `link`, behind what already waits; a frame the ring has no
    /// room for waits (copied). `TxFull` when it could neither go nor wait: the
    /// queue is full, the caller counts the drop.
    pub fn send<L: Link>(&mut self, link: &mut L, frame: &[u8], tx: TxMeta) -> Result<(), TxFull> {
        if self.frames.is_empty() && transmit(link, frame, tx).is_ok() {
            return Ok(());
        }
        if self.frames.len() >= BACKLOG_FRAMES || self.bytes + frame.len() > BACKLOG_BYTES {
            return Err(TxFull);
        }
        self.bytes += frame.len();
        self.frames.push_back((frame.to_vec(), tx));
        self.queued += 1;
        self.high_water = self.high_water.max(self.frames.len());
        Ok(())
    }

    /// Sends what waits, oldest first, until the ring is full again. Whether any
    /// frame went.
    pub fn flush<L: Link>(&mut self, link: &mut L) -> bool {
        let mut sent = false;
        while let Some((frame, tx)) = self.frames.front() {
            if transmit(link, frame, *tx).is_err() {
                break;
            }
            self.bytes -= frame.len();
            self.frames.pop_front();
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
        sent: Vec<(u8, String)>,
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
            self.sent.iter().map(|s| s.0).collect()
        }
        fn kinds(&self) -> Vec<&str> {
            self.sent.iter().map(|s| s.1.as_str()).collect()
        }
        fn take(&mut self, frame: &[u8], kind: String) -> Result<(), String> {
            if self.free == 0 {
                return Err(String::from("tx ring full"));
            }
            self.free -= 1;
            self.sent.push((frame[0], kind));
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
        let gso = TxMeta {
            csum_partial: true,
            gso_size: Some(1448),
        };
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
}
