//! TCP and UDP echo service (RFC 862) on one port.
//!
//! TCP: a fixed pool of [`MAX_TCP_CONNECTIONS`] sockets, each listening; several
//! clients are served at once, each getting back exactly the bytes it sent. When a
//! client closes, its socket finishes the close and listens again. A client beyond the
//! pool's size is refused by the stack (RST) until a socket frees up.
//!
//! UDP: every datagram is sent back to its source from the address it was sent to.
//! Datagrams larger than [`UDP_MAX_DATAGRAM`], or arriving when the send buffer is
//! full, are dropped (UDP is lossy anyway).
//!
//! Not supported: per-connection idle timeouts (an idle client keeps its socket).

use alloc::vec;
use alloc::vec::Vec;

use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::{tcp, udp};

/// The echo service's well-known port.
pub const DEFAULT_PORT: u16 = 7;
/// TCP clients served at once.
pub const MAX_TCP_CONNECTIONS: usize = 4;
/// Largest UDP datagram echoed.
pub const UDP_MAX_DATAGRAM: usize = 8 * 1024;

const TCP_BUFFER: usize = 8 * 1024;
const UDP_PACKETS: usize = 16;
const UDP_BUFFER: usize = 32 * 1024;
/// Bytes moved from receive to send buffer per copy.
const CHUNK: usize = 2048;

/// The echo server: owns its sockets in the caller's [`SocketSet`].
pub struct EchoServer {
    port: u16,
    tcp: Vec<SocketHandle>,
    udp: SocketHandle,
    scratch: Vec<u8>,
}

impl EchoServer {
    /// Creates the server and adds its TCP and UDP sockets for `port` (0 means
    /// [`DEFAULT_PORT`]) to `sockets`.
    pub fn new(sockets: &mut SocketSet<'static>, port: u16) -> Self {
        let port = if port == 0 { DEFAULT_PORT } else { port };
        let tcp = (0..MAX_TCP_CONNECTIONS)
            .map(|_| {
                let mut s = tcp::Socket::new(
                    tcp::SocketBuffer::new(vec![0; TCP_BUFFER]),
                    tcp::SocketBuffer::new(vec![0; TCP_BUFFER]),
                );
                // Cannot fail: fresh socket, non-zero port.
                let _ = s.listen(port);
                sockets.add(s)
            })
            .collect();
        let mut u = udp::Socket::new(
            udp::PacketBuffer::new(
                vec![udp::PacketMetadata::EMPTY; UDP_PACKETS],
                vec![0; UDP_BUFFER],
            ),
            udp::PacketBuffer::new(
                vec![udp::PacketMetadata::EMPTY; UDP_PACKETS],
                vec![0; UDP_BUFFER],
            ),
        );
        let _ = u.bind(port);
        let udp = sockets.add(u);
        EchoServer {
            port,
            tcp,
            udp,
            scratch: vec![0; UDP_MAX_DATAGRAM.max(CHUNK)],
        }
    }

    /// Echoes whatever arrived; call after every `Interface::poll`.
    pub fn poll(&mut self, sockets: &mut SocketSet<'static>) {
        for &h in &self.tcp {
            let socket = sockets.get_mut::<tcp::Socket>(h);
            echo_tcp(socket, &mut self.scratch, self.port);
        }
        let socket = sockets.get_mut::<udp::Socket>(self.udp);
        echo_udp(socket, &mut self.scratch);
    }

    /// TCP connections currently open (not listening or closed).
    pub fn tcp_connections(&self, sockets: &SocketSet<'static>) -> usize {
        self.tcp
            .iter()
            .filter(|&&h| {
                let s = sockets.get::<tcp::Socket>(h);
                !matches!(s.state(), tcp::State::Listen | tcp::State::Closed)
            })
            .count()
    }
}

fn echo_tcp(socket: &mut tcp::Socket<'static>, scratch: &mut [u8], port: u16) {
    match socket.state() {
        tcp::State::Closed => {
            let _ = socket.listen(port);
            return;
        }
        // The client has what it needs; free the socket for the next one now rather
        // than after TIME-WAIT.
        tcp::State::TimeWait => {
            socket.abort();
            let _ = socket.listen(port);
            return;
        }
        _ => {}
    }
    while socket.can_recv() && socket.can_send() {
        let room = socket.send_capacity().saturating_sub(socket.send_queue());
        let n = room.min(scratch.len()).min(CHUNK);
        let Some(buf) = scratch.get_mut(..n) else {
            break;
        };
        let got = socket.recv_slice(buf).unwrap_or(0);
        if got == 0 {
            break;
        }
        // Fits: at most `room` bytes were taken.
        let _ = socket.send_slice(buf.get(..got).unwrap_or_default());
    }
    // Client finished sending and everything is echoed: close our side too.
    if socket.state() == tcp::State::CloseWait
        && socket.recv_queue() == 0
        && socket.send_queue() == 0
    {
        socket.close();
    }
}

fn echo_udp(socket: &mut udp::Socket<'static>, scratch: &mut [u8]) {
    while socket.can_recv() {
        match socket.recv_slice(scratch) {
            Ok((n, meta)) => {
                let Some(data) = scratch.get(..n) else {
                    continue;
                };
                // Dropped if the send buffer is full.
                let _ = socket.send_slice(data, meta);
            }
            // A datagram too large for `scratch` is dropped by recv_slice.
            Err(udp::RecvError::Truncated) => continue,
            Err(_) => break,
        }
    }
}

#[cfg(test)]
mod tests;
