//! DNS over TCP (RFC 1035 §4.2.2, RFC 7766): the two-byte length framing and one
//! connection's bounded state, sans-I/O.
//!
//! A [`StreamConn`] is one TCP connection carrying DNS messages, either way: a LAN
//! client's connection to port 53 or the forwarder's connection to an upstream
//! server. It holds at most one message being received ([`FrameReader`], at most
//! [`MAX_FRAME`] bytes, grown as bytes arrive rather than when a length is announced)
//! and at most [`MAX_OUTBOX`] bytes waiting to be written.
//!
//! Idle timeout (RFC 7766 §6.2.3): a connection's deadline moves on only when a
//! whole message is received or a whole answer is written, never for a part of a
//! message. A client that announces 65535 bytes and sends nothing, or drips one
//! byte a second, is closed at the deadline like an idle one; dnsmasq closes such
//! connections after its TCP timeout as well.
//!
//! The caller (the kernel's glue) owns the sockets, accepts at most a fixed number
//! of connections ([`TcpLimits`]) and counts what it refuses in [`TcpCounters`].

use crate::Millis;
use alloc::vec::Vec;

/// The largest DNS message (the length prefix is 16 bits).
pub const MAX_MESSAGE: usize = 65535;
/// A message with its length prefix.
pub const MAX_FRAME: usize = MAX_MESSAGE + 2;
/// Bytes of answers a connection may hold unwritten: one message of the largest
/// size and its prefix. An answer that does not fit closes the connection (counted):
/// the client reads too slowly or pipelines more than it reads.
pub const MAX_OUTBOX: usize = MAX_FRAME;

/// Bounds of the TCP service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpLimits {
    /// Client connections open at once (all served interfaces together); one more
    /// is accepted only to be reset and counted.
    pub max_conns: usize,
    /// Queries of one connection waiting for upstream at once; its next query is
    /// not read before one is answered (pipelining stays bounded and the UDP
    /// clients keep the rest of the forwarder's pending table).
    pub max_waiting: usize,
    /// Idle time (and the time one message may take to arrive).
    pub idle_ms: Millis,
}

/// dnsmasq's limit of TCP children (`MAX_PROCS`) is 20.
pub const DEFAULT_MAX_CONNS: usize = 20;
/// Queries one connection may have upstream at once.
pub const DEFAULT_MAX_WAITING: usize = 4;
/// RFC 7766 §6.2.3 suggests a few seconds; past the time two upstream servers
/// get (2 s each) for a query.
pub const DEFAULT_IDLE_MS: Millis = 10_000;

impl Default for TcpLimits {
    fn default() -> TcpLimits {
        TcpLimits {
            max_conns: DEFAULT_MAX_CONNS,
            max_waiting: DEFAULT_MAX_WAITING,
            idle_ms: DEFAULT_IDLE_MS,
        }
    }
}

/// What the TCP service did and refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCounters {
    /// Client connections accepted.
    pub accepted: u64,
    /// Client connections reset because [`TcpLimits::max_conns`] were open.
    pub refused_full: u64,
    /// Connections closed at their deadline (idle, or a message that did not
    /// arrive whole in time: slow or stalled senders).
    pub timed_out: u64,
    /// Of those, connections that had part of a message when they were closed.
    pub timed_out_partial: u64,
    /// Queries received whole.
    pub queries: u64,
    /// Answers queued to clients.
    pub answers: u64,
    /// Answers for a connection that had closed, dropped.
    pub answer_no_conn: u64,
    /// Connections closed because their unwritten answers were over [`MAX_OUTBOX`].
    pub outbox_full: u64,
    /// Connections from outside every served subnet (`localservice`), reset.
    pub not_local: u64,
    /// Half-open connections (SYN received, the handshake never finished) reset
    /// so that the listener listens again.
    pub half_open_dropped: u64,
    /// Upstream connections opened.
    pub upstream_opened: u64,
    /// Upstream connections that failed (refused, reset, timed out, unroutable).
    pub upstream_failed: u64,
    /// Upstream answers received whole.
    pub upstream_answers: u64,
}

/// Reassembles one length-prefixed message at a time from a byte stream.
#[derive(Debug, Default)]
pub struct FrameReader {
    /// The length prefix's bytes read so far (0..=2).
    prefix: [u8; 2],
    prefix_len: u8,
    /// The message's bytes so far.
    body: Vec<u8>,
    /// A whole message, waiting to be taken.
    ready: Option<Vec<u8>>,
}

impl FrameReader {
    /// An empty reader.
    pub fn new() -> FrameReader {
        FrameReader::default()
    }

    /// The announced length, once the prefix is read.
    fn want(&self) -> Option<usize> {
        (self.prefix_len == 2).then(|| usize::from(u16::from_be_bytes(self.prefix)))
    }

    /// Takes bytes from `data` until one message is whole (then stops: the rest is
    /// left for after [`Self::take`]); the number of bytes taken.
    pub fn feed(&mut self, data: &[u8]) -> usize {
        let mut used = 0;
        while self.ready.is_none() {
            let Some(rest) = data.get(used..) else {
                break;
            };
            match self.want() {
                None => {
                    let Some(&b) = rest.first() else {
                        break;
                    };
                    if let Some(slot) = self.prefix.get_mut(usize::from(self.prefix_len)) {
                        *slot = b;
                    }
                    self.prefix_len += 1;
                    used += 1;
                }
                Some(want) => {
                    let need = want.saturating_sub(self.body.len());
                    let n = need.min(rest.len());
                    if let Some(part) = rest.get(..n) {
                        // Grown by what arrived: an announced 64 KiB costs nothing
                        // until it is sent.
                        self.body.extend_from_slice(part);
                    }
                    used += n;
                    if self.body.len() >= want {
                        self.ready = Some(core::mem::take(&mut self.body));
                        self.prefix_len = 0;
                    } else if n == 0 {
                        break;
                    }
                }
            }
        }
        used
    }

    /// The whole message, if one is.
    pub fn take(&mut self) -> Option<Vec<u8>> {
        self.ready.take()
    }

    /// Whether a message is whole and waiting.
    pub fn has_message(&self) -> bool {
        self.ready.is_some()
    }

    /// Whether part of a message (or its prefix) has been read.
    pub fn partial(&self) -> bool {
        self.prefix_len > 0 || !self.body.is_empty()
    }

    /// Bytes held (the message being read and a whole one waiting).
    pub fn held(&self) -> usize {
        self.body.capacity() + self.ready.as_ref().map_or(0, Vec::capacity)
    }
}

/// `msg` with its length prefix; `None` if it is longer than [`MAX_MESSAGE`].
pub fn frame(msg: &[u8]) -> Option<Vec<u8>> {
    let len = u16::try_from(msg.len()).ok()?;
    let mut out = Vec::with_capacity(msg.len() + 2);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(msg);
    Some(out)
}

/// One connection's state: the message being read, the bytes to write, the
/// deadline.
#[derive(Debug)]
pub struct StreamConn {
    reader: FrameReader,
    out: Vec<u8>,
    deadline: Millis,
    idle_ms: Millis,
}

/// Why [`StreamConn::queue`] refused a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// The message is longer than [`MAX_MESSAGE`].
    TooLong,
    /// The unwritten bytes would be over [`MAX_OUTBOX`].
    OutboxFull,
}

impl StreamConn {
    /// A connection opened at `now`, closed when idle for `idle_ms`.
    pub fn new(now: Millis, idle_ms: Millis) -> StreamConn {
        StreamConn {
            reader: FrameReader::new(),
            out: Vec::new(),
            deadline: now.saturating_add(idle_ms),
            idle_ms,
        }
    }

    /// Feeds received bytes (see [`FrameReader::feed`]); a whole message moves the
    /// deadline on.
    pub fn feed(&mut self, data: &[u8], now: Millis) -> usize {
        let n = self.reader.feed(data);
        if self.reader.has_message() {
            self.touch(now);
        }
        n
    }

    /// The next whole message received.
    pub fn take(&mut self) -> Option<Vec<u8>> {
        self.reader.take()
    }

    /// Whether a whole message waits to be taken (no more bytes are read before).
    pub fn has_message(&self) -> bool {
        self.reader.has_message()
    }

    /// Queues `msg` (framed) to be written.
    pub fn queue(&mut self, msg: &[u8]) -> Result<(), QueueError> {
        let len = u16::try_from(msg.len()).map_err(|_| QueueError::TooLong)?;
        if self.out.len() + msg.len() + 2 > MAX_OUTBOX {
            return Err(QueueError::OutboxFull);
        }
        self.out.extend_from_slice(&len.to_be_bytes());
        self.out.extend_from_slice(msg);
        Ok(())
    }

    /// The bytes waiting to be written.
    pub fn unwritten(&self) -> &[u8] {
        &self.out
    }

    /// `n` of [`Self::unwritten`]'s bytes were written; when the last is, the
    /// deadline moves on.
    pub fn wrote(&mut self, n: usize, now: Millis) {
        let n = n.min(self.out.len());
        self.out.drain(..n);
        if n > 0 && self.out.is_empty() {
            self.out = Vec::new();
            self.touch(now);
        }
    }

    /// Moves the deadline on from `now`.
    pub fn touch(&mut self, now: Millis) {
        self.deadline = now.saturating_add(self.idle_ms);
    }

    /// When the connection is closed unless a message comes or goes.
    pub fn deadline(&self) -> Millis {
        self.deadline
    }

    /// Whether the deadline has passed.
    pub fn expired(&self, now: Millis) -> bool {
        now >= self.deadline
    }

    /// Whether part of a message has been read.
    pub fn partial(&self) -> bool {
        self.reader.partial()
    }

    /// Bytes held by the connection's buffers.
    pub fn held(&self) -> usize {
        self.reader.held() + self.out.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_cut_at_their_length_prefix_even_when_split_anywhere() {
        let a = [1u8, 2, 3];
        let b = [9u8; 300];
        let mut stream = frame(&a).unwrap();
        stream.extend(frame(&b).unwrap());
        for split in 0..stream.len() {
            let mut r = FrameReader::new();
            let mut got = Vec::new();
            for part in [&stream[..split], &stream[split..]] {
                let mut at = 0;
                loop {
                    at += r.feed(&part[at..]);
                    match r.take() {
                        Some(m) => got.push(m),
                        None => break,
                    }
                }
                assert_eq!(at, part.len());
            }
            assert_eq!(got, [a.to_vec(), b.to_vec()], "split at {split}");
            assert!(!r.partial());
        }
    }

    #[test]
    fn a_reader_stops_at_a_whole_message_and_takes_no_more() {
        let mut stream = frame(&[1]).unwrap();
        stream.extend(frame(&[2]).unwrap());
        let mut r = FrameReader::new();
        assert_eq!(r.feed(&stream), 3);
        assert_eq!(r.feed(&stream[3..]), 0, "nothing while a message waits");
        assert_eq!(r.take(), Some(alloc::vec![1]));
        assert_eq!(r.feed(&stream[3..]), 3);
        assert_eq!(r.take(), Some(alloc::vec![2]));
        let mut r = FrameReader::new();
        r.feed(&[0, 0]);
        assert_eq!(r.take(), Some(Vec::new()), "an empty message is a message");
    }

    #[test]
    fn an_announced_64k_costs_only_what_arrived() {
        let mut c = StreamConn::new(0, 10_000);
        c.feed(&[0xff, 0xff, 1, 2, 3], 5);
        assert!(c.partial() && !c.has_message());
        assert!(c.held() < 64, "{} bytes held", c.held());
        // The whole message still fits: 65535 bytes are taken.
        let body = alloc::vec![7u8; 65532];
        assert_eq!(c.feed(&body, 6), 65532);
        assert_eq!(c.take().map(|m| m.len()), Some(65535));
    }

    #[test]
    fn a_slow_drip_does_not_move_the_deadline_a_whole_message_does() {
        let mut c = StreamConn::new(0, 10_000);
        c.feed(&[0, 20], 1_000);
        for t in 0..18 {
            c.feed(&[0], 1_000 + t * 500);
        }
        assert_eq!(c.deadline(), 10_000, "bytes of a message are not activity");
        assert!(c.expired(10_000));
        c.feed(&[0, 0], 9_999);
        assert!(c.has_message());
        assert_eq!(c.deadline(), 19_999);
    }

    #[test]
    fn the_outbox_is_bounded_and_writing_it_out_moves_the_deadline() {
        let mut c = StreamConn::new(0, 1_000);
        assert_eq!(
            c.queue(&alloc::vec![0; 65536]),
            Err(QueueError::TooLong),
            "longer than a message"
        );
        c.queue(&alloc::vec![1; 40_000]).unwrap();
        assert_eq!(
            c.queue(&alloc::vec![2; 40_000]),
            Err(QueueError::OutboxFull)
        );
        assert_eq!(c.unwritten().len(), 40_002);
        c.wrote(40_000, 500);
        assert_eq!(c.deadline(), 1_000, "not all written");
        c.wrote(2, 700);
        assert_eq!(c.deadline(), 1_700);
        assert!(c.unwritten().is_empty());
    }
}
