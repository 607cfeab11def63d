//! An iperf3-compatible TCP throughput server over smoltcp sockets.
//!
//! It speaks the iperf3 control protocol (as in esnet/iperf 3.12, `iperf_server_api.c`
//! and `iperf_api.c`) well enough for the stock `iperf3 -c` client to run a test and
//! print its usual summary, in both directions:
//!
//! 1. The client opens the control connection and sends a 37-byte cookie.
//! 2. Server: `PARAM_EXCHANGE`; client: 4-byte big-endian length + parameters JSON.
//! 3. Server: `CREATE_STREAMS`; the client opens `parallel` data connections to the
//!    same port, each starting with the same cookie.
//! 4. Server: `TEST_START`, `TEST_RUNNING`. Data flows client → server, or with
//!    `-R` server → client (the server keeps the send buffers full).
//! 5. Client: `TEST_END`. Server: `EXCHANGE_RESULTS`; client sends its results JSON,
//!    the server answers with its own (`cpu_util_*`, `sender_has_retransmits`,
//!    `streams[]` with `id`, `bytes`, `retransmits`, `jitter`, `errors`, `packets`,
//!    `start_time`, `end_time`), then `DISPLAY_RESULTS`.
//! 6. Client: `IPERF_DONE`, and it closes everything.
//!
//! One test runs at a time; another client gets `ACCESS_DENIED` ("the server is busy
//! running a test"), as does a data connection with the wrong cookie. Each finished or
//! failed test leaves a one-line report for the console ([`Iperf3Server::take_events`]).
//! Everything from the network is untrusted: lengths are capped at [`MAX_JSON_LEN`]
//! (and a message's values at [`json::MAX_VALUES`]), every phase has a timeout, and
//! any protocol error, disconnect or timeout ends the test and puts the server back
//! to listening; nothing here panics on input.
//!
//! Memory: a data connection's bulk buffer is [`Iperf3Memory::data_buffer`] bytes
//! (the kernel sizes it from its heap, [`Iperf3Memory::for_heap`]), allocated
//! fallibly, and at most [`MAX_DATA_SOCKETS`] sockets with one exist at a time,
//! listening, accepted, streaming or closing: when they are all taken, new data
//! listeners wait for closing ones to go. If a buffer cannot be had (the allocation
//! fails, or [`Iperf3Memory::memory_low`] says so), the test is refused with
//! `SERVER_ERROR` and iperf3's "unable to create a new stream", and the server goes
//! on listening.
//!
//! Not supported, and refused with `SERVER_ERROR` and iperf3's "not implemented"
//! error so the client prints an error instead of hanging: UDP and SCTP tests,
//! `--bidir`, and more than [`MAX_STREAMS`] parallel streams. Accepted but ignored:
//! `-w`/`-M`/`-N`/`-C`/`--tos`/`--fq-rate`/`-Z` (smoltcp sockets have fixed buffers),
//! `--get-server-output` (no server output is sent back), CPU utilisation (reported
//! as 0), retransmit counts (reported as unknown). In reverse mode `-b`, `-n` and `-k`
//! are honoured. Reverse-mode payload is a fixed repeating pattern.

pub mod json;
#[cfg(test)]
mod tests;

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;

use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::tcp;
use smoltcp::wire::IpEndpoint;

use json::Value;

/// The port iperf3 uses by default.
pub const DEFAULT_PORT: u16 = 5201;
/// Length of the cookie that starts every connection (36 characters and a NUL).
pub const COOKIE_SIZE: usize = 37;
/// Most parallel streams (`-P`) a test may ask for.
pub const MAX_STREAMS: usize = 8;
/// Longest parameters or results JSON accepted from a client (iperf3's own are
/// well under 2 KiB).
pub const MAX_JSON_LEN: usize = 8 * 1024;
/// The default and largest size of the buffer a data stream moves its bulk data
/// through (receive buffer for normal tests, send buffer for `-R`): TCP's window,
/// so what bounds one stream at a few milliseconds' round trip (1 MiB: 1.34 / 1.07
/// Gbit/s in `bench net`, where 256 KiB gave 0.80 / 0.63; Linux autotunes its own up
/// to 4-6 MiB). See [`Iperf3Memory`].
pub const DATA_BUFFER: usize = 1024 * 1024;
/// The smallest data buffer [`Iperf3Memory::for_heap`] gives.
pub const MIN_DATA_BUFFER: usize = 16 * 1024;
/// Sockets with a data buffer held at once, at most: a full test's streams and the
/// listeners for them. Those of a finished test count until they are closed.
pub const MAX_DATA_SOCKETS: usize = MAX_STREAMS + DATA_LISTENERS;

/// The other direction's buffer of a data stream (it only carries the cookie).
const DATA_SMALL_BUFFER: usize = 4 * 1024;
/// Control connection buffers.
const CTRL_BUFFER: usize = 8 * 1024;
/// Listening sockets kept ready for control connections.
const CONTROL_LISTENERS: usize = 2;
/// Listening sockets kept ready for data connections while streams are created.
const DATA_LISTENERS: usize = 2;
/// Accepted connections still sending their cookie, at most.
const MAX_PENDING: usize = 8;
/// Closing sockets waited for, at most; beyond that the oldest is reset.
const MAX_CLOSING: usize = 16;
/// Console reports kept until taken, at most.
const MAX_EVENTS: usize = 16;
/// Time a new connection has to send its cookie.
const COOKIE_TIMEOUT_MS: u64 = 10_000;
/// Time for each set-up or tear-down step (parameters, streams, results, done).
const STEP_TIMEOUT_MS: u64 = 20_000;
/// Grace beyond the test's duration before the server gives up (iperf3 uses 40 s).
const GRACE_MS: u64 = 40_000;
/// Longest time without any progress in a test without a duration (`-n`/`-k`).
const IDLE_TIMEOUT_MS: u64 = 120_000;
/// Time a closed socket gets to finish its FIN handshake before it is reset.
const CLOSE_TIMEOUT_MS: u64 = 10_000;
/// The longest test accepted, in seconds (iperf3's MAX_TIME).
const MAX_TIME_S: u64 = 86_400;
/// Default and largest block length (`-l`).
const DEFAULT_LEN: u64 = 128 * 1024;
const MAX_LEN: u64 = 1024 * 1024;

/// Control protocol messages (one signed byte each, here as the byte on the wire).
mod msg {
    pub const TEST_START: u8 = 1;
    pub const TEST_RUNNING: u8 = 2;
    pub const TEST_END: u8 = 4;
    pub const PARAM_EXCHANGE: u8 = 9;
    pub const CREATE_STREAMS: u8 = 10;
    pub const CLIENT_TERMINATE: u8 = 12;
    pub const EXCHANGE_RESULTS: u8 = 13;
    pub const DISPLAY_RESULTS: u8 = 14;
    pub const IPERF_DONE: u8 = 16;
    /// -1
    pub const ACCESS_DENIED: u8 = 0xff;
    /// -2, followed by the iperf3 error number and an errno, both 32-bit big-endian.
    pub const SERVER_ERROR: u8 = 0xfe;
}

/// iperf3 error numbers (`i_errno`) sent after `SERVER_ERROR`.
mod ie {
    /// "number of parallel streams too large"
    pub const NUMSTREAMS: u32 = 6;
    /// "an option you are trying to set is not implemented yet"
    pub const UNIMP: u32 = 13;
    /// "unable to receive parameters from client"
    pub const RECVPARAMS: u32 = 114;
    /// "unable to create a new stream"
    pub const CREATESTREAM: u32 = 200;
}

/// What the server may take from the heap.
#[derive(Clone, Copy, Debug)]
pub struct Iperf3Memory {
    /// Bytes of a data connection's bulk buffer (the other direction gets 4 KiB).
    pub data_buffer: usize,
    /// Whether memory is low: no new data buffers then (the test is refused).
    pub memory_low: fn() -> bool,
}

fn never_low() -> bool {
    false
}

impl Default for Iperf3Memory {
    /// [`DATA_BUFFER`], and memory is never low.
    fn default() -> Self {
        Iperf3Memory {
            data_buffer: DATA_BUFFER,
            memory_low: never_low,
        }
    }
}

impl Iperf3Memory {
    /// For a server that may use about a quarter of a heap of `heap_bytes`: the
    /// [`MAX_DATA_SOCKETS`] data buffers fit in it (a power of two, from
    /// [`MIN_DATA_BUFFER`] to [`DATA_BUFFER`]; 32 KiB for a 1.25 MiB heap).
    pub fn for_heap(heap_bytes: usize, memory_low: fn() -> bool) -> Self {
        let share = heap_bytes / 4 / MAX_DATA_SOCKETS;
        let pow2 = match share.checked_next_power_of_two() {
            Some(p) if p == share => p,
            Some(p) => p / 2,
            None => DATA_BUFFER,
        };
        Iperf3Memory {
            data_buffer: pow2.clamp(MIN_DATA_BUFFER, DATA_BUFFER),
            memory_low,
        }
    }
}

/// The test parameters the server acts on, from the client's JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Params {
    reverse: bool,
    parallel: usize,
    time_s: u64,
    omit_s: u64,
    /// `-n`: total bytes, 0 for none.
    num: u64,
    /// `-k`: total blocks, 0 for none.
    blockcount: u64,
    len: u64,
    /// `-b`: bits per second per stream, 0 for unlimited.
    bandwidth: u64,
}

/// Why parameters were refused: iperf3 error number and a reason for the console.
type Refusal = (u32, &'static str);

fn nonneg(v: &Value, key: &str) -> u64 {
    v.get(key)
        .and_then(Value::as_i64)
        .map_or(0, |n| u64::try_from(n).unwrap_or(0))
}

/// Reads the parameters JSON as iperf3's `get_parameters` does: flags count by their
/// presence, unknown keys are ignored.
fn parse_params(text: &[u8]) -> Result<Params, Refusal> {
    let v = json::parse(text).map_err(|_| (ie::RECVPARAMS, "malformed parameters JSON"))?;
    if !matches!(v, Value::Object(_)) {
        return Err((ie::RECVPARAMS, "parameters are not a JSON object"));
    }
    if v.get("udp").is_some() {
        return Err((ie::UNIMP, "UDP tests are not supported"));
    }
    if v.get("sctp").is_some() {
        return Err((ie::UNIMP, "SCTP tests are not supported"));
    }
    if v.get("bidirectional").is_some() {
        return Err((ie::UNIMP, "bidirectional tests are not supported"));
    }
    let parallel = v.get("parallel").and_then(Value::as_i64).unwrap_or(1);
    let parallel = match usize::try_from(parallel) {
        Ok(p) if (1..=MAX_STREAMS).contains(&p) => p,
        _ => return Err((ie::NUMSTREAMS, "unsupported number of parallel streams")),
    };
    let len = match nonneg(&v, "len") {
        0 => DEFAULT_LEN,
        l => l.min(MAX_LEN),
    };
    Ok(Params {
        reverse: v.get("reverse").is_some(),
        parallel,
        time_s: nonneg(&v, "time").min(MAX_TIME_S),
        omit_s: nonneg(&v, "omit").min(MAX_TIME_S),
        num: nonneg(&v, "num"),
        blockcount: nonneg(&v, "blockcount"),
        len,
        bandwidth: nonneg(&v, "bandwidth"),
    })
}

/// One data connection of the running test.
struct Stream {
    handle: SocketHandle,
    /// iperf3's stream id: 1, 3, 4, 5, … in the order the streams were accepted.
    id: u32,
    /// Bytes received (normal) or queued for sending (reverse) since TEST_RUNNING.
    bytes: u64,
    /// `bytes` when the omit period ended; those are not reported.
    bytes_omit: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Sent PARAM_EXCHANGE, waiting for the parameters.
    Params,
    /// Sent CREATE_STREAMS, accepting data connections.
    CreateStreams,
    /// Sent TEST_START and TEST_RUNNING; data flowing until TEST_END.
    Running,
    /// Sent EXCHANGE_RESULTS, waiting for the client's results.
    Results,
    /// Sent our results and DISPLAY_RESULTS, waiting for IPERF_DONE.
    Display,
}

/// The test in progress (there is at most one).
struct Test {
    ctrl: SocketHandle,
    peer: Option<IpEndpoint>,
    cookie: [u8; COOKIE_SIZE],
    phase: Phase,
    phase_since: u64,
    params: Params,
    streams: Vec<Stream>,
    data_listeners: Vec<SocketHandle>,
    /// Control bytes received and not yet consumed.
    rx: Vec<u8>,
    /// Control bytes to send (the socket may not take them all at once).
    tx: Vec<u8>,
    /// Whether CREATE_STREAMS was queued (once the first data listener is up).
    announced: bool,
    /// Set when a data buffer could not be had: the test is refused.
    refusal: Option<Refusal>,
    /// When TEST_RUNNING was sent; moved to the end of the omit period once over.
    start_ms: u64,
    omitting: bool,
    end_ms: u64,
    last_progress_ms: u64,
}

/// How a test ended, for the console report.
enum Outcome {
    Done,
    Failed(&'static str),
    Refused(&'static str),
}

/// An accepted connection that has not yet sent its whole cookie.
struct Pending {
    handle: SocketHandle,
    cookie: [u8; COOKIE_SIZE],
    got: usize,
    since: u64,
}

/// A socket we closed, kept in the set until its handshake ends.
struct Closing {
    handle: SocketHandle,
    deadline: u64,
    /// Reset this poll: keep it one more poll so the RST goes out.
    fresh: bool,
}

/// The iperf3 server: owns its sockets in the caller's [`SocketSet`] (at most a few
/// listeners, [`MAX_STREAMS`] streams, one control connection and a bounded number of
/// pending and closing sockets; at most [`MAX_DATA_SOCKETS`] of them with a data
/// buffer). Its handles must not be removed by anyone else.
pub struct Iperf3Server {
    port: u16,
    mem: Iperf3Memory,
    /// The sockets in the set that have a data buffer.
    data: Vec<SocketHandle>,
    listeners: Vec<SocketHandle>,
    pending: Vec<Pending>,
    closing: Vec<Closing>,
    test: Option<Test>,
    events: VecDeque<String>,
}

/// `len` bytes, zero or (`pattern`) the reverse-mode payload; `None` if the heap
/// cannot give them.
fn buffer(len: usize, pattern: bool) -> Option<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).ok()?;
    if pattern {
        // Reverse-mode payload: the send ring keeps this pattern, so data is queued
        // without copying (see `fill_stream`).
        v.extend(b"0123456789".iter().copied().cycle().take(len));
    } else {
        v.resize(len, 0);
    }
    Some(v)
}

/// A socket with `rx` and `tx` bytes of buffer; `None` if the heap cannot give them.
fn new_socket(rx: usize, tx: usize, tx_fill: bool) -> Option<tcp::Socket<'static>> {
    let rx = buffer(rx, false)?;
    let tx = buffer(tx, tx_fill)?;
    Some(tcp::Socket::new(
        tcp::SocketBuffer::new(rx),
        tcp::SocketBuffer::new(tx),
    ))
}

fn add_listener(
    sockets: &mut SocketSet<'static>,
    port: u16,
    mut socket: tcp::Socket<'static>,
) -> SocketHandle {
    // Cannot fail: the socket is fresh (closed) and the port is not 0 (checked in new).
    let _ = socket.listen(port);
    sockets.add(socket)
}

/// Moves everything the socket has received to `out`, at most `max` bytes in all.
/// Returns false if `out` would exceed `max`.
fn read_into(socket: &mut tcp::Socket<'static>, out: &mut Vec<u8>, max: usize) -> bool {
    while socket.can_recv() {
        let room = max.saturating_sub(out.len());
        if room == 0 {
            return false;
        }
        let got = socket.recv(|buf| {
            let n = buf.len().min(room);
            out.extend_from_slice(buf.get(..n).unwrap_or_default());
            (n, n)
        });
        if !matches!(got, Ok(n) if n > 0) {
            break;
        }
    }
    true
}

/// Discards everything received on a data stream; returns the byte count.
fn drain_stream(socket: &mut tcp::Socket<'static>) -> u64 {
    let mut total = 0u64;
    // The ring may wrap: at most two contiguous pieces.
    for _ in 0..2 {
        match socket.recv(|buf| (buf.len(), buf.len())) {
            Ok(n) if n > 0 => total += n as u64,
            _ => break,
        }
    }
    total
}

/// Queues up to `budget` bytes of pattern on a data stream; returns the byte count.
fn fill_stream(socket: &mut tcp::Socket<'static>, budget: u64) -> u64 {
    let mut total = 0u64;
    for _ in 0..2 {
        let left = budget.saturating_sub(total);
        if left == 0 {
            break;
        }
        // The ring's contents are the pattern it was created with and nothing else is
        // ever written into it, so queuing is just advancing the ring.
        let queued = socket.send(|buf| {
            let n = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
            (n, n)
        });
        match queued {
            Ok(n) if n > 0 => total += n as u64,
            _ => break,
        }
    }
    total
}

impl Iperf3Server {
    /// Creates the server and adds its listening sockets for `port` (0 means
    /// [`DEFAULT_PORT`]) to `sockets`; [`DATA_BUFFER`]s, memory never low.
    pub fn new(sockets: &mut SocketSet<'static>, port: u16) -> Self {
        Self::with_memory(sockets, port, Iperf3Memory::default())
    }

    /// [`Self::new`] with data buffers and a low-memory check of `mem`.
    pub fn with_memory(sockets: &mut SocketSet<'static>, port: u16, mem: Iperf3Memory) -> Self {
        let port = if port == 0 { DEFAULT_PORT } else { port };
        let mut server = Iperf3Server {
            port,
            mem,
            data: Vec::new(),
            listeners: Vec::new(),
            pending: Vec::new(),
            closing: Vec::new(),
            test: None,
            events: VecDeque::new(),
        };
        server.manage_listeners(sockets);
        server
    }

    /// Drives the protocol; call after every `Interface::poll`. `now_ms` is a
    /// monotonic time in milliseconds.
    pub fn poll(&mut self, sockets: &mut SocketSet<'static>, now_ms: u64) {
        self.harvest_listeners(sockets, now_ms);
        self.process_pending(sockets, now_ms);
        self.drive_test(sockets, now_ms);
        self.reap_closing(sockets, now_ms);
        self.manage_listeners(sockets);
    }

    /// The next report of a finished, failed or refused test, one console line each,
    /// such as `iperf3: 10.99.0.1:41234 sent 52428800 bytes in 5.00 s = 83.9 Mbit/s (reverse)`.
    pub fn take_events(&mut self) -> Option<String> {
        self.events.pop_front()
    }

    /// Whether a test is in progress (the kernel polls harder then).
    pub fn busy(&self) -> bool {
        self.test.is_some()
    }

    /// Sockets with a data buffer held now (at most [`MAX_DATA_SOCKETS`]).
    pub fn data_sockets(&self) -> usize {
        self.data.len()
    }

    /// Takes `handle` out of the set (and out of the data sockets' count).
    fn remove_socket(&mut self, sockets: &mut SocketSet<'static>, handle: SocketHandle) {
        sockets.remove(handle);
        self.data.retain(|&h| h != handle);
    }

    fn event(&mut self, line: String) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(line);
    }

    fn in_create_streams(&self) -> bool {
        matches!(&self.test, Some(t) if t.phase == Phase::CreateStreams)
    }

    /// Moves listening sockets that got a connection to the pending list.
    fn harvest_listeners(&mut self, sockets: &mut SocketSet<'static>, now: u64) {
        let mut harvested = Vec::new();
        self.listeners.retain(|&h| {
            let listening = sockets.get::<tcp::Socket>(h).is_listening();
            if !listening {
                harvested.push(h);
            }
            listening
        });
        if let Some(t) = &mut self.test {
            t.data_listeners.retain(|&h| {
                let listening = sockets.get::<tcp::Socket>(h).is_listening();
                if !listening {
                    harvested.push(h);
                }
                listening
            });
        }
        for handle in harvested {
            self.pending.push(Pending {
                handle,
                cookie: [0; COOKIE_SIZE],
                got: 0,
                since: now,
            });
        }
    }

    /// Keeps the right listening sockets: control ones unless streams are being
    /// created, data ones (sized for the test's direction) while they are.
    fn manage_listeners(&mut self, sockets: &mut SocketSet<'static>) {
        let port = self.port;
        let room = self.pending.len() < MAX_PENDING;
        let want_ctrl = if self.in_create_streams() || !room {
            0
        } else {
            CONTROL_LISTENERS
        };
        while self.listeners.len() > want_ctrl {
            if let Some(h) = self.listeners.pop() {
                sockets.remove(h);
            }
        }
        while self.listeners.len() < want_ctrl {
            // Without memory for it, no listener this time (the next poll tries again).
            let Some(socket) = new_socket(CTRL_BUFFER, CTRL_BUFFER, false) else {
                break;
            };
            let h = add_listener(sockets, port, socket);
            self.listeners.push(h);
        }
        let data_buffer = self.mem.data_buffer;
        if let Some(t) = &mut self.test {
            let want_data = if t.phase == Phase::CreateStreams && room && t.refusal.is_none() {
                DATA_LISTENERS.min(t.params.parallel.saturating_sub(t.streams.len()))
            } else {
                0
            };
            while t.data_listeners.len() > want_data {
                if let Some(h) = t.data_listeners.pop() {
                    sockets.remove(h);
                    self.data.retain(|&d| d != h);
                }
            }
            // Past MAX_DATA_SOCKETS (a finished test's sockets still closing), wait.
            while t.data_listeners.len() < want_data && self.data.len() < MAX_DATA_SOCKETS {
                let socket = if (self.mem.memory_low)() {
                    None
                } else if t.params.reverse {
                    new_socket(DATA_SMALL_BUFFER, data_buffer, true)
                } else {
                    new_socket(data_buffer, DATA_SMALL_BUFFER, false)
                };
                let Some(socket) = socket else {
                    t.refusal = Some((ie::CREATESTREAM, "no memory for the data buffers"));
                    break;
                };
                let h = add_listener(sockets, port, socket);
                self.data.push(h);
                t.data_listeners.push(h);
            }
            if t.phase == Phase::CreateStreams && !t.announced && !t.data_listeners.is_empty() {
                // The client may connect now.
                t.tx.push(msg::CREATE_STREAMS);
                t.announced = true;
            }
        }
    }

    /// Closes a socket gracefully (or resets it), keeping it until it is done.
    fn retire(
        &mut self,
        sockets: &mut SocketSet<'static>,
        handle: SocketHandle,
        now: u64,
        reset: bool,
    ) {
        let socket = sockets.get_mut::<tcp::Socket>(handle);
        if reset {
            socket.abort();
        } else {
            socket.close();
        }
        if self.closing.len() >= MAX_CLOSING {
            let oldest = self.closing.remove(0);
            self.remove_socket(sockets, oldest.handle);
        }
        self.closing.push(Closing {
            handle,
            deadline: now + CLOSE_TIMEOUT_MS,
            fresh: true,
        });
    }

    fn reap_closing(&mut self, sockets: &mut SocketSet<'static>, now: u64) {
        let mut i = 0;
        while let Some(c) = self.closing.get_mut(i) {
            let socket = sockets.get_mut::<tcp::Socket>(c.handle);
            let done =
                !c.fresh && matches!(socket.state(), tcp::State::Closed | tcp::State::TimeWait);
            if done {
                let c = self.closing.swap_remove(i);
                sockets.remove(c.handle);
                self.data.retain(|&h| h != c.handle);
                continue;
            }
            if now >= c.deadline && socket.state() != tcp::State::Closed {
                socket.abort();
                c.fresh = true;
            } else {
                c.fresh = false;
            }
            i += 1;
        }
    }

    /// Refuses a connection with ACCESS_DENIED.
    fn deny(&mut self, sockets: &mut SocketSet<'static>, handle: SocketHandle, now: u64) {
        let socket = sockets.get_mut::<tcp::Socket>(handle);
        let peer = socket.remote_endpoint();
        let _ = socket.send_slice(&[msg::ACCESS_DENIED]);
        self.retire(sockets, handle, now, false);
        let mut line = String::new();
        let _ = write!(line, "iperf3: ");
        push_peer(&mut line, peer);
        let _ = write!(line, " refused: the server is busy or the cookie is wrong");
        self.event(line);
    }

    /// Reads cookies in accept order (`remove`, not `swap_remove`), so stream ids
    /// follow the order in which the client opened its data connections.
    fn process_pending(&mut self, sockets: &mut SocketSet<'static>, now: u64) {
        let mut i = 0;
        while i < self.pending.len() {
            let Some(p) = self.pending.get_mut(i) else {
                break;
            };
            let handle = p.handle;
            let socket = sockets.get_mut::<tcp::Socket>(handle);
            match socket.state() {
                // Back to listening (handshake reset) or gone: drop it.
                tcp::State::Listen | tcp::State::Closed => {
                    self.pending.remove(i);
                    self.remove_socket(sockets, handle);
                    continue;
                }
                tcp::State::SynReceived => {
                    if now.saturating_sub(p.since) > COOKIE_TIMEOUT_MS {
                        self.pending.remove(i);
                        self.retire(sockets, handle, now, true);
                        continue;
                    }
                    i += 1;
                    continue;
                }
                _ => {}
            }
            let busy = matches!(&self.test, Some(t) if t.phase != Phase::CreateStreams);
            if busy {
                // Like iperf3: don't read from it, just say no.
                self.pending.remove(i);
                self.deny(sockets, handle, now);
                continue;
            }
            if socket.can_recv() {
                if let Some(rest) = p.cookie.get_mut(p.got..) {
                    if let Ok(n) = socket.recv_slice(rest) {
                        p.got += n;
                    }
                }
            }
            if p.got < COOKIE_SIZE {
                if !socket.may_recv() || now.saturating_sub(p.since) > COOKIE_TIMEOUT_MS {
                    self.pending.remove(i);
                    self.retire(sockets, handle, now, true);
                    continue;
                }
                i += 1;
                continue;
            }
            let p = self.pending.remove(i);
            self.classify(sockets, p, now);
        }
    }

    /// A connection sent its whole cookie: a new control connection, a data stream
    /// of the test being set up, or one to refuse.
    fn classify(&mut self, sockets: &mut SocketSet<'static>, p: Pending, now: u64) {
        match &mut self.test {
            None => {
                let socket = sockets.get_mut::<tcp::Socket>(p.handle);
                socket.set_nagle_enabled(false);
                let peer = socket.remote_endpoint();
                self.test = Some(Test {
                    ctrl: p.handle,
                    peer,
                    cookie: p.cookie,
                    phase: Phase::Params,
                    phase_since: now,
                    params: Params {
                        reverse: false,
                        parallel: 1,
                        time_s: 0,
                        omit_s: 0,
                        num: 0,
                        blockcount: 0,
                        len: DEFAULT_LEN,
                        bandwidth: 0,
                    },
                    streams: Vec::new(),
                    data_listeners: Vec::new(),
                    rx: Vec::new(),
                    tx: vec![msg::PARAM_EXCHANGE],
                    announced: false,
                    refusal: None,
                    start_ms: now,
                    omitting: false,
                    end_ms: now,
                    last_progress_ms: now,
                });
            }
            Some(t)
                if t.phase == Phase::CreateStreams
                    && t.cookie == p.cookie
                    && t.streams.len() < t.params.parallel =>
            {
                // iperf3 numbers streams 1, 3, 4, … (2 is skipped, for compatibility).
                let id = match t.streams.len() {
                    0 => 1,
                    n => u32::try_from(n).map_or(u32::MAX, |n| n.saturating_add(2)),
                };
                t.streams.push(Stream {
                    handle: p.handle,
                    id,
                    bytes: 0,
                    bytes_omit: 0,
                });
            }
            Some(_) => self.deny(sockets, p.handle, now),
        }
    }

    fn drive_test(&mut self, sockets: &mut SocketSet<'static>, now: u64) {
        let Some(mut t) = self.test.take() else {
            return;
        };
        let outcome = step_test(&mut t, sockets, now);
        // Send what is queued on the control connection.
        let ctrl = sockets.get_mut::<tcp::Socket>(t.ctrl);
        if !t.tx.is_empty() {
            if let Ok(n) = ctrl.send_slice(&t.tx) {
                t.tx.drain(..n.min(t.tx.len()));
            }
        }
        match outcome {
            None => self.test = Some(t),
            Some(outcome) => self.finish(sockets, t, outcome, now),
        }
    }

    /// Ends the test: closes its sockets and reports.
    fn finish(&mut self, sockets: &mut SocketSet<'static>, t: Test, outcome: Outcome, now: u64) {
        let reset = matches!(outcome, Outcome::Failed(_));
        // A refusal's SERVER_ERROR is already queued; close after it.
        self.retire(sockets, t.ctrl, now, reset);
        for s in &t.streams {
            self.retire(sockets, s.handle, now, reset);
        }
        for &h in &t.data_listeners {
            self.remove_socket(sockets, h);
        }
        let mut line = String::from("iperf3: ");
        push_peer(&mut line, t.peer);
        match outcome {
            Outcome::Done => {
                let bytes: u64 = t
                    .streams
                    .iter()
                    .map(|s| s.bytes.saturating_sub(s.bytes_omit))
                    .sum();
                let ms = t.end_ms.saturating_sub(t.start_ms);
                let verb = if t.params.reverse { "sent" } else { "received" };
                let _ = write!(line, " {verb} {bytes} bytes in ");
                push_rate(&mut line, bytes, ms);
                match (t.params.reverse, t.streams.len()) {
                    (false, 1) => {}
                    (true, 1) => line.push_str(" (reverse)"),
                    (false, n) => {
                        let _ = write!(line, " ({n} streams)");
                    }
                    (true, n) => {
                        let _ = write!(line, " (reverse, {n} streams)");
                    }
                }
            }
            Outcome::Failed(why) => {
                let _ = write!(line, " test failed: {why}");
            }
            Outcome::Refused(why) => {
                let _ = write!(line, " refused: {why}");
            }
        }
        self.event(line);
    }
}

fn push_peer(line: &mut String, peer: Option<IpEndpoint>) {
    match peer {
        Some(p) => {
            let _ = write!(line, "{p}");
        }
        None => line.push('?'),
    }
}

/// "`5.00 s = 83.9 Mbit/s`" in integer arithmetic.
fn push_rate(line: &mut String, bytes: u64, ms: u64) {
    let _ = write!(line, "{}.{:02} s = ", ms / 1000, (ms % 1000) / 10);
    // Tenths of Mbit/s, rounded: bytes * 8 / (ms * 1000) * 10.
    let tenths = (u128::from(bytes) * 8 + u128::from(ms) * 50)
        .checked_div(u128::from(ms) * 100)
        .unwrap_or(0);
    let _ = write!(line, "{}.{} Mbit/s", tenths / 10, tenths % 10);
}

/// Takes a length-prefixed JSON message off the front of `rx`: `Ok(None)` while
/// incomplete, `Err` if the announced length is over [`MAX_JSON_LEN`].
fn take_json(rx: &mut Vec<u8>) -> Result<Option<Vec<u8>>, ()> {
    let Some(&[a, b, c, d]) = rx.get(..4) else {
        return Ok(None);
    };
    let len = usize::try_from(u32::from_be_bytes([a, b, c, d])).map_err(|_| ())?;
    if len > MAX_JSON_LEN {
        return Err(());
    }
    if rx.len() < 4 + len {
        return Ok(None);
    }
    let body = rx.get(4..4 + len).map(<[u8]>::to_vec).unwrap_or_default();
    rx.drain(..4 + len);
    Ok(Some(body))
}

fn queue_json(tx: &mut Vec<u8>, v: &Value) {
    let text = v.to_json();
    let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
    tx.extend_from_slice(&len.to_be_bytes());
    tx.extend_from_slice(text.as_bytes());
}

/// The server's results, as iperf3's `send_results` writes them.
fn results_json(t: &Test) -> Value {
    let secs = json::Number::from_millis_as_secs(t.end_ms.saturating_sub(t.start_ms));
    let streams = t
        .streams
        .iter()
        .map(|s| {
            Value::Object(vec![
                ("id".into(), Value::uint(u64::from(s.id))),
                (
                    "bytes".into(),
                    Value::uint(s.bytes.saturating_sub(s.bytes_omit)),
                ),
                ("retransmits".into(), Value::int(-1)),
                ("jitter".into(), Value::int(0)),
                ("errors".into(), Value::int(0)),
                ("packets".into(), Value::int(0)),
                ("start_time".into(), Value::int(0)),
                ("end_time".into(), Value::Number(secs.clone())),
            ])
        })
        .collect();
    Value::Object(vec![
        ("cpu_util_total".into(), Value::int(0)),
        ("cpu_util_user".into(), Value::int(0)),
        ("cpu_util_system".into(), Value::int(0)),
        // -1 when the server is the receiver; as sender it has no retransmit counts.
        (
            "sender_has_retransmits".into(),
            Value::int(if t.params.reverse { 0 } else { -1 }),
        ),
        ("streams".into(), Value::Array(streams)),
    ])
}

/// Queues SERVER_ERROR with an iperf3 error number (errno 0) and reports a refusal.
fn refuse(t: &mut Test, (code, why): Refusal) -> Option<Outcome> {
    t.tx.push(msg::SERVER_ERROR);
    t.tx.extend_from_slice(&code.to_be_bytes());
    t.tx.extend_from_slice(&0u32.to_be_bytes());
    Some(Outcome::Refused(why))
}

/// Moves the test's data; runs its control protocol. `Some` when the test is over.
fn step_test(t: &mut Test, sockets: &mut SocketSet<'static>, now: u64) -> Option<Outcome> {
    if let Some(r) = t.refusal.take() {
        return refuse(t, r);
    }
    if t.phase == Phase::CreateStreams && t.streams.len() == t.params.parallel {
        t.phase = Phase::Running;
        t.phase_since = now;
        t.start_ms = now;
        t.last_progress_ms = now;
        t.omitting = t.params.omit_s > 0;
        t.tx.extend_from_slice(&[msg::TEST_START, msg::TEST_RUNNING]);
    }
    if t.phase == Phase::Running {
        if let Some(outcome) = move_data(t, sockets, now) {
            return Some(outcome);
        }
    }

    let ctrl = sockets.get_mut::<tcp::Socket>(t.ctrl);
    if !read_into(ctrl, &mut t.rx, 4 + MAX_JSON_LEN) {
        return match t.phase {
            Phase::Params => refuse(t, (ie::RECVPARAMS, "parameters too long")),
            _ => Some(Outcome::Failed("control message too long")),
        };
    }
    let ctrl_state = ctrl.state();
    let peer_closed = !ctrl.may_recv();

    // Consume complete messages.
    loop {
        match t.phase {
            Phase::Params => match take_json(&mut t.rx) {
                Err(()) => return refuse(t, (ie::RECVPARAMS, "parameters too long")),
                Ok(None) => break,
                Ok(Some(body)) => match parse_params(&body) {
                    Err(refusal) => return refuse(t, refusal),
                    Ok(params) => {
                        // CREATE_STREAMS goes out once a data listener is up
                        // (`manage_listeners`).
                        t.params = params;
                        t.phase = Phase::CreateStreams;
                        t.phase_since = now;
                    }
                },
            },
            Phase::Results => match take_json(&mut t.rx) {
                Err(()) => return Some(Outcome::Failed("client results too long")),
                Ok(None) => break,
                Ok(Some(body)) => {
                    if !matches!(json::parse(&body), Ok(Value::Object(_))) {
                        return Some(Outcome::Failed("malformed client results"));
                    }
                    let ours = results_json(t);
                    queue_json(&mut t.tx, &ours);
                    t.tx.push(msg::DISPLAY_RESULTS);
                    t.phase = Phase::Display;
                    t.phase_since = now;
                }
            },
            Phase::CreateStreams | Phase::Running | Phase::Display => {
                let Some(&m) = t.rx.first() else {
                    break;
                };
                t.rx.remove(0);
                match (t.phase, m) {
                    (Phase::Running, msg::TEST_END) => {
                        end_streams(t, sockets, now);
                        t.tx.push(msg::EXCHANGE_RESULTS);
                        t.phase = Phase::Results;
                        t.phase_since = now;
                    }
                    // Harmless echoes of our own states.
                    (_, msg::TEST_START | msg::TEST_RUNNING) => {}
                    (Phase::Display, msg::IPERF_DONE) => return Some(Outcome::Done),
                    (_, msg::CLIENT_TERMINATE) => {
                        return Some(Outcome::Failed("the client terminated the test"))
                    }
                    _ => return Some(Outcome::Failed("unexpected control message")),
                }
            }
        }
    }

    if ctrl_state == tcp::State::Closed {
        return Some(Outcome::Failed("control connection reset"));
    }
    if peer_closed {
        // Closing right after the results is how some clients say goodbye.
        return Some(if t.phase == Phase::Display {
            Outcome::Done
        } else {
            Outcome::Failed("the client closed the control connection")
        });
    }
    let limit = match t.phase {
        Phase::Running if t.params.time_s > 0 => {
            (t.params.time_s + t.params.omit_s) * 1000 + GRACE_MS
        }
        Phase::Running => IDLE_TIMEOUT_MS,
        _ => STEP_TIMEOUT_MS,
    };
    let since = if t.phase == Phase::Running && t.params.time_s == 0 {
        t.last_progress_ms
    } else {
        t.phase_since
    };
    if now.saturating_sub(since) > limit {
        return Some(Outcome::Failed("timed out"));
    }
    None
}

/// Receives (normal) or sends (reverse) on every data stream while the test runs.
fn move_data(t: &mut Test, sockets: &mut SocketSet<'static>, now: u64) -> Option<Outcome> {
    if t.omitting && now >= t.start_ms + t.params.omit_s * 1000 {
        // iperf3 resets its statistics when the omit period ends.
        t.omitting = false;
        t.start_ms = now;
        for s in &mut t.streams {
            s.bytes_omit = s.bytes;
        }
    }
    let p = &t.params;
    let mut total: u64 = t.streams.iter().map(|s| s.bytes).sum();
    let total_limit = match (p.num, p.blockcount) {
        (0, 0) => u64::MAX,
        (0, k) => k.saturating_mul(p.len),
        (n, _) => n,
    };
    for s in &mut t.streams {
        let socket = sockets.get_mut::<tcp::Socket>(s.handle);
        if socket.state() == tcp::State::Closed {
            return Some(Outcome::Failed("data connection reset"));
        }
        let moved = if p.reverse {
            let mut budget = total_limit.saturating_sub(total);
            if p.bandwidth > 0 {
                // -b is per stream: allow what the rate permits so far, plus a block.
                let elapsed = now.saturating_sub(t.start_ms);
                let allowed =
                    u128::from(p.bandwidth) * u128::from(elapsed) / 8000 + u128::from(p.len);
                let sent = u128::from(s.bytes.saturating_sub(s.bytes_omit));
                let left = u64::try_from(allowed.saturating_sub(sent)).unwrap_or(u64::MAX);
                budget = budget.min(left);
            }
            fill_stream(socket, budget)
        } else {
            drain_stream(socket)
        };
        s.bytes += moved;
        total += moved;
        if moved > 0 {
            t.last_progress_ms = now;
        }
    }
    None
}

/// TEST_END: stop sending and close the streams. (What arrived before TEST_END was
/// counted by `move_data` earlier in the same poll.)
fn end_streams(t: &mut Test, sockets: &mut SocketSet<'static>, now: u64) {
    t.end_ms = now;
    for s in &t.streams {
        // FIN after whatever is still queued; the sockets are retired in `finish`.
        sockets.get_mut::<tcp::Socket>(s.handle).close();
    }
}
