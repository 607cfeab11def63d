//! DNS over TCP on the stack: smoltcp TCP sockets for the forwarder's TCP side
//! ([`xenlet_router::dns::tcp`] frames the messages and bounds each connection).
//!
//! - **Clients**: each served interface keeps a socket listening on port 53 of
//!   every address it has, IPv4 and IPv6 (a few more while handshakes are under
//!   way, at most [`MAX_HALF_OPEN`] per interface; a handshake not finished in
//!   [`SYN_TIMEOUT_MS`] is reset). Under `localservice` an IPv4 client must be on
//!   a served subnet, an IPv6 one on a prefix of the interface it connected on
//!   (its ULA /64, link-local), else it is reset (`not_local`). A finished handshake
//!   becomes a connection if fewer than [`TcpLimits::max_conns`] are open, else it
//!   is reset and counted (`refused_full`). Queries are read one whole message at a
//!   time, at most [`TcpLimits::max_waiting`] of one connection upstream at once
//!   (the next is read when one is answered); answers queue in the connection's
//!   bounded outbox. A connection is reset at its deadline (idle, or a message
//!   that did not arrive whole in time), unless it waits for upstream.
//! - **Upstream**: one connection per query sent over TCP, from the source port the
//!   forwarder chose, closed when the forwarder closes that port.
//!
//! Sockets are removed once their reset or close has gone out: a closing socket
//! stays in the set until it is closed, at most [`CLOSE_MS`] (then it is reset),
//! and at most [`MAX_CLOSING`] of them are kept.
//!
//! The UDP side is not touched by any of this: a hostile TCP client holds at most
//! one connection's buffers and [`TcpLimits::max_waiting`] pending queries.

use super::NetIf;
use crate::link::Link;
use crate::NetStack;
use alloc::vec;
use alloc::vec::Vec;
use core::net::{IpAddr, SocketAddr};
use smoltcp::iface::SocketHandle;
use smoltcp::socket::tcp;
use smoltcp::wire::{IpAddress, IpEndpoint, IpListenEndpoint};
use xenlet_router::dns::tcp::{QueueError, StreamConn, TcpCounters, TcpLimits};
use xenlet_router::dns::DnsForwarder;
use xenlet_router::Millis;

/// Sockets per served interface in the listening or handshake states.
pub const MAX_HALF_OPEN: usize = 4;
/// Time a handshake may take.
pub const SYN_TIMEOUT_MS: Millis = 3_000;
/// Time a closing socket may take to close before it is reset.
pub const CLOSE_MS: Millis = 2_000;
/// Closing sockets kept at most (more: the oldest is dropped at once).
pub const MAX_CLOSING: usize = 64;
/// A client connection's smoltcp buffers (receive, send): queries are small and are
/// taken out at each poll; answers go out of the outbox as room frees.
const CLIENT_BUFFER: (usize, usize) = (2048, 4096);
/// An upstream connection's buffers (receive, send).
const UPSTREAM_BUFFER: (usize, usize) = (4096, 2048);
/// The DNS port.
const PORT: u16 = 53;
/// Upstream connections are reset when the forwarder has given up on them; this
/// only bounds a stuck one whose port was never closed.
const UPSTREAM_IDLE_MS: Millis = 60_000;

/// A TCP socket in one interface's socket set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TcpSock {
    instance: u64,
    handle: SocketHandle,
}

impl TcpSock {
    fn new<L: Link>(n: &mut NetIf<L>, (rx, tx): (usize, usize)) -> TcpSock {
        let s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; rx]),
            tcp::SocketBuffer::new(vec![0; tx]),
        );
        TcpSock {
            instance: n.instance(),
            handle: n.sockets.add(s),
        }
    }

    fn get<'a, L: Link>(&self, ifs: &'a mut [NetIf<L>]) -> Option<&'a mut tcp::Socket<'static>> {
        let n = ifs.iter_mut().find(|n| n.instance() == self.instance)?;
        Some(n.sockets.get_mut::<tcp::Socket>(self.handle))
    }

    fn remove<L: Link>(self, ifs: &mut [NetIf<L>]) {
        if let Some(n) = ifs.iter_mut().find(|n| n.instance() == self.instance) {
            n.sockets.remove(self.handle);
        }
    }
}

/// The listening sockets of one served interface.
struct Listener {
    vif_instance: u64,
    /// Each socket and when it was first seen in a handshake.
    socks: Vec<(TcpSock, Option<Millis>)>,
}

/// A client's connection.
struct ClientConn {
    sock: TcpSock,
    client: SocketAddr,
    stream: StreamConn,
    /// Reset by [`DnsTcp`] (outbox full): removed at the next poll.
    dead: bool,
}

/// A connection to an upstream server for one query.
struct UpConn {
    sock: TcpSock,
    port: u16,
    server: SocketAddr,
    stream: StreamConn,
    /// Answered or given up by the forwarder: closed at the next poll.
    done: bool,
}

/// The TCP side of the DNS service.
pub(super) struct DnsTcp {
    limits: TcpLimits,
    listeners: Vec<Listener>,
    conns: Vec<ClientConn>,
    upstream: Vec<UpConn>,
    /// Sockets closing or reset: (socket, when they are reset if still open).
    closing: Vec<(TcpSock, Millis)>,
    counters: TcpCounters,
}

impl Default for DnsTcp {
    fn default() -> Self {
        DnsTcp::new(TcpLimits::default())
    }
}

/// Whether a smoltcp socket in `state` is done (nothing more will come or go).
fn finished(state: tcp::State) -> bool {
    matches!(state, tcp::State::Closed | tcp::State::TimeWait)
}

impl DnsTcp {
    pub(super) fn new(limits: TcpLimits) -> DnsTcp {
        DnsTcp {
            limits,
            listeners: Vec::new(),
            conns: Vec::new(),
            upstream: Vec::new(),
            closing: Vec::new(),
            counters: TcpCounters::default(),
        }
    }

    pub(super) fn counters(&self) -> TcpCounters {
        self.counters
    }

    pub(super) fn limits(&self) -> TcpLimits {
        self.limits
    }

    /// Client connections open.
    pub(super) fn conn_count(&self) -> usize {
        self.conns.len()
    }

    /// Sockets this service has in the stack (listening, connected, closing).
    pub(super) fn socket_count(&self) -> usize {
        self.listeners.iter().map(|l| l.socks.len()).sum::<usize>()
            + self.conns.len()
            + self.upstream.len()
            + self.closing.len()
    }

    /// Bytes the connections' own buffers hold (smoltcp's are fixed and not
    /// counted).
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.conns
            .iter()
            .map(|c| c.stream.held())
            .chain(self.upstream.iter().map(|u| u.stream.held()))
            .sum()
    }

    /// Starts listening on port 53 of `n`.
    pub(super) fn listen_on<L: Link>(&mut self, n: &mut NetIf<L>) {
        let mut l = Listener {
            vif_instance: n.instance(),
            socks: Vec::new(),
        };
        if let Some(s) = listening_socket(n) {
            l.socks.push((s, None));
        }
        self.listeners.push(l);
    }

    /// Stops listening on port 53 of the interface `vif_instance` (its pool is
    /// gone); connections already taken run to their end.
    pub(super) fn stop_on<L: Link>(&mut self, vif_instance: u64, ifs: &mut [NetIf<L>]) {
        let (gone, kept): (Vec<Listener>, Vec<Listener>) = core::mem::take(&mut self.listeners)
            .into_iter()
            .partition(|l| l.vif_instance == vif_instance);
        self.listeners = kept;
        for (s, _) in gone.into_iter().flat_map(|l| l.socks) {
            s.remove(ifs);
        }
    }

    fn close_later(&mut self, s: TcpSock, now: Millis, ifs: &mut [NetIf<impl Link>]) {
        if self.closing.len() >= MAX_CLOSING && !self.closing.is_empty() {
            let (old, _) = self.closing.remove(0);
            old.remove(ifs);
        }
        self.closing.push((s, now.saturating_add(CLOSE_MS)));
    }

    fn reset<L: Link>(&mut self, s: TcpSock, ifs: &mut [NetIf<L>], now: Millis) {
        if let Some(sock) = s.get(ifs) {
            sock.abort();
        }
        self.close_later(s, now, ifs);
    }

    /// The housekeeping of one poll: closed sockets removed, finished handshakes
    /// accepted or refused, deadlines, listeners replenished. `local` says whether
    /// a client address may use the service (`localservice`), given whether it is
    /// on link on the interface it connected on.
    pub(super) fn maintain<L: Link>(
        &mut self,
        ifs: &mut [NetIf<L>],
        now: Millis,
        d: &DnsForwarder,
        local: &dyn Fn(IpAddr, bool) -> bool,
    ) {
        // Closing sockets: gone when closed (their reset or FIN went out in the
        // stack's poll since they were closed), reset when late.
        let mut i = 0;
        while let Some(&(s, reset_at)) = self.closing.get(i) {
            match s.get(ifs) {
                Some(sock) if !finished(sock.state()) => {
                    if now >= reset_at {
                        sock.abort();
                    }
                    i += 1;
                }
                _ => {
                    s.remove(ifs);
                    self.closing.swap_remove(i);
                }
            }
        }
        self.accept(ifs, now, local);
        // Client connections.
        let mut i = 0;
        while let Some(c) = self.conns.get(i) {
            let (sock, client) = (c.sock, c.client);
            let waiting = d.tcp_waiting(client);
            let quiet = c.stream.unwritten().is_empty() && !c.stream.has_message();
            let expired = c.stream.expired(now) && waiting == 0;
            let (dead, partial) = (c.dead, c.stream.partial());
            let Some(s) = sock.get(ifs) else {
                self.conns.swap_remove(i);
                continue;
            };
            if finished(s.state()) {
                self.conns.swap_remove(i);
                sock.remove(ifs);
                continue;
            }
            if dead || expired {
                if expired && !dead {
                    self.counters.timed_out += 1;
                    if partial {
                        self.counters.timed_out_partial += 1;
                    }
                }
                s.abort();
            } else if s.state() == tcp::State::CloseWait
                && quiet
                && waiting == 0
                && s.recv_queue() == 0
            {
                // The client is done and so are we.
                s.close();
            } else {
                i += 1;
                continue;
            }
            self.conns.swap_remove(i);
            self.close_later(sock, now, ifs);
        }
        // Upstream connections.
        let mut i = 0;
        while let Some(u) = self.upstream.get(i) {
            let sock = u.sock;
            let state = sock.get(ifs).map(|s| s.state());
            if u.done || u.stream.expired(now) {
                if let Some(s) = sock.get(ifs) {
                    s.close();
                }
                self.upstream.swap_remove(i);
                self.close_later(sock, now, ifs);
            } else if state.is_none_or(finished) {
                // Refused or reset before its answer: the forwarder's timer tries
                // the next server.
                self.counters.upstream_failed += 1;
                self.upstream.swap_remove(i);
                sock.remove(ifs);
            } else {
                i += 1;
            }
        }
    }

    /// Finished handshakes become connections (or are refused); handshakes that
    /// take too long are reset; each interface gets a listening socket again.
    fn accept<L: Link>(
        &mut self,
        ifs: &mut [NetIf<L>],
        now: Millis,
        local: &dyn Fn(IpAddr, bool) -> bool,
    ) {
        let mut accepted = Vec::new();
        let mut reset = Vec::new();
        let mut gone = Vec::new();
        for l in self.listeners.iter_mut() {
            let mut i = 0;
            while let Some((s, since)) = l.socks.get_mut(i) {
                let s = *s;
                let Some(sock) = s.get(ifs) else {
                    l.socks.swap_remove(i);
                    continue;
                };
                match sock.state() {
                    tcp::State::Listen => i += 1,
                    tcp::State::SynReceived => {
                        let t = *since.get_or_insert(now);
                        if now.saturating_sub(t) >= SYN_TIMEOUT_MS {
                            reset.push(s);
                            l.socks.swap_remove(i);
                        } else {
                            i += 1;
                        }
                    }
                    st if finished(st) => {
                        // Reset during the handshake.
                        gone.push(s);
                        l.socks.swap_remove(i);
                    }
                    _ => {
                        accepted.push((s, sock.remote_endpoint(), l.vif_instance));
                        l.socks.swap_remove(i);
                    }
                }
            }
        }
        for s in gone {
            s.remove(ifs);
        }
        for s in reset {
            self.counters.half_open_dropped += 1;
            self.reset(s, ifs, now);
        }
        for (s, remote, vif) in accepted {
            let on_link = |a: IpAddress| {
                ifs.iter()
                    .find(|n| n.instance() == vif)
                    .is_some_and(|n| n.on_link(a))
            };
            let client = match remote {
                Some(IpEndpoint { addr, port }) if local(IpAddr::from(addr), on_link(addr)) => {
                    SocketAddr::new(IpAddr::from(addr), port)
                }
                _ => {
                    self.counters.not_local += 1;
                    self.reset(s, ifs, now);
                    continue;
                }
            };
            if self.conns.len() >= self.limits.max_conns {
                self.counters.refused_full += 1;
                self.reset(s, ifs, now);
                continue;
            }
            self.counters.accepted += 1;
            self.conns.push(ClientConn {
                sock: s,
                client,
                stream: StreamConn::new(now, self.limits.idle_ms),
                dead: false,
            });
        }
        // A listening socket on each interface that has none (and is not at its
        // bound of handshakes).
        for l in self.listeners.iter_mut() {
            let listening = l
                .socks
                .iter()
                .any(|(s, _)| s.get(ifs).is_some_and(|x| x.state() == tcp::State::Listen));
            if listening || l.socks.len() >= MAX_HALF_OPEN {
                continue;
            }
            if let Some(n) = ifs.iter_mut().find(|n| n.instance() == l.vif_instance) {
                if let Some(s) = listening_socket(n) {
                    l.socks.push((s, None));
                }
            }
        }
    }

    /// The next whole query of client connection `k`, if it has one and fewer than
    /// [`TcpLimits::max_waiting`] of its queries wait for upstream.
    pub(super) fn read_query<L: Link>(
        &mut self,
        k: usize,
        ifs: &mut [NetIf<L>],
        now: Millis,
        d: &DnsForwarder,
    ) -> Option<(SocketAddr, Vec<u8>)> {
        let c = self.conns.get_mut(k).filter(|c| !c.dead)?;
        let sock = c.sock.get(ifs)?;
        while !c.stream.has_message() && sock.can_recv() {
            let stream = &mut c.stream;
            match sock.recv(|buf| (stream.feed(buf, now), ())) {
                Ok(()) => {}
                Err(_) => break,
            }
        }
        if !c.stream.has_message() || d.tcp_waiting(c.client) >= self.limits.max_waiting {
            return None;
        }
        let q = c.stream.take()?;
        self.counters.queries += 1;
        Some((c.client, q))
    }

    /// The whole answer on upstream connection `k`, if it has one: (local port,
    /// server, answer).
    pub(super) fn read_upstream<L: Link>(
        &mut self,
        k: usize,
        ifs: &mut [NetIf<L>],
        now: Millis,
    ) -> Option<(u16, SocketAddr, Vec<u8>)> {
        let u = self.upstream.get_mut(k).filter(|u| !u.done)?;
        let sock = u.sock.get(ifs)?;
        while !u.stream.has_message() && sock.can_recv() {
            let stream = &mut u.stream;
            if sock.recv(|buf| (stream.feed(buf, now), ())).is_err() {
                break;
            }
        }
        let a = u.stream.take()?;
        self.counters.upstream_answers += 1;
        Some((u.port, u.server, a))
    }

    /// Upstream connections open.
    pub(super) fn upstream_count(&self) -> usize {
        self.upstream.len()
    }

    /// Queues `packet` to the connection of `client`.
    pub(super) fn send_to_client(&mut self, client: SocketAddr, packet: &[u8]) {
        let Some(c) = self
            .conns
            .iter_mut()
            .find(|c| c.client == client && !c.dead)
        else {
            self.counters.answer_no_conn += 1;
            return;
        };
        match c.stream.queue(packet) {
            Ok(()) => self.counters.answers += 1,
            Err(QueueError::OutboxFull | QueueError::TooLong) => {
                self.counters.outbox_full += 1;
                c.dead = true;
            }
        }
    }

    /// Opens a connection from `port` to `server` and queues `packet` on it (a
    /// connection the port already has is closed).
    pub(super) fn send_upstream<L: Link>(
        &mut self,
        stack: &mut NetStack<L>,
        server: SocketAddr,
        port: u16,
        packet: &[u8],
        now: Millis,
    ) {
        self.close_port(port);
        let Some(i) = stack.route(server.ip().into()) else {
            self.counters.upstream_failed += 1;
            return;
        };
        let Some(n) = stack.ifs.get_mut(i) else {
            self.counters.upstream_failed += 1;
            return;
        };
        let s = TcpSock::new(n, UPSTREAM_BUFFER);
        let remote = IpEndpoint::new(server.ip().into(), server.port());
        let ok = {
            let sock = n.sockets.get_mut::<tcp::Socket>(s.handle);
            sock.connect(n.iface.context(), remote, port).is_ok()
        };
        let mut stream = StreamConn::new(now, UPSTREAM_IDLE_MS);
        if !ok || stream.queue(packet).is_err() {
            self.counters.upstream_failed += 1;
            n.sockets.remove(s.handle);
            return;
        }
        self.counters.upstream_opened += 1;
        self.upstream.push(UpConn {
            sock: s,
            port,
            server,
            stream,
            done: false,
        });
    }

    /// The forwarder is done with `port`: its connection closes at the next poll.
    pub(super) fn close_port(&mut self, port: u16) {
        for u in self.upstream.iter_mut().filter(|u| u.port == port) {
            u.done = true;
        }
    }

    /// Moves queued bytes into the sockets.
    pub(super) fn flush<L: Link>(&mut self, ifs: &mut [NetIf<L>], now: Millis) {
        let streams = self
            .conns
            .iter_mut()
            .filter(|c| !c.dead)
            .map(|c| (c.sock, &mut c.stream))
            .chain(
                self.upstream
                    .iter_mut()
                    .filter(|u| !u.done)
                    .map(|u| (u.sock, &mut u.stream)),
            );
        for (s, stream) in streams {
            if stream.unwritten().is_empty() {
                continue;
            }
            let Some(sock) = s.get(ifs) else {
                continue;
            };
            if let Ok(n) = sock.send_slice(stream.unwritten()) {
                stream.wrote(n, now);
            }
        }
    }

    /// When a deadline of this service passes, if one is set.
    pub(super) fn poll_at(&self) -> Option<Millis> {
        let conns = self.conns.iter().map(|c| c.stream.deadline());
        let ups = self.upstream.iter().map(|u| u.stream.deadline());
        let closing = self.closing.iter().map(|(_, t)| *t);
        let syn = self
            .listeners
            .iter()
            .flat_map(|l| l.socks.iter())
            .filter_map(|(_, since)| since.map(|t| t.saturating_add(SYN_TIMEOUT_MS)));
        conns.chain(ups).chain(closing).chain(syn).min()
    }

    /// Removes every socket.
    pub(super) fn shutdown<L: Link>(self, ifs: &mut [NetIf<L>]) {
        let socks = self
            .listeners
            .iter()
            .flat_map(|l| l.socks.iter().map(|(s, _)| *s))
            .chain(self.conns.iter().map(|c| c.sock))
            .chain(self.upstream.iter().map(|u| u.sock))
            .chain(self.closing.iter().map(|(s, _)| *s))
            .collect::<Vec<_>>();
        for s in socks {
            s.remove(ifs);
        }
    }
}

/// A socket listening on port 53 of `n`.
fn listening_socket<L: Link>(n: &mut NetIf<L>) -> Option<TcpSock> {
    let s = TcpSock::new(n, CLIENT_BUFFER);
    let ok = n
        .sockets
        .get_mut::<tcp::Socket>(s.handle)
        .listen(IpListenEndpoint {
            addr: None,
            port: PORT,
        })
        .is_ok();
    if ok {
        Some(s)
    } else {
        n.sockets.remove(s.handle);
        None
    }
}
