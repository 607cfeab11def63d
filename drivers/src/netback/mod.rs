//! netback: the Xen PV network *backend* (xen/include/public/io/netif.h), for a
//! Xenlet domain that serves other domains' netfronts as a driver domain does (a
//! client's xl config: `vif = [ 'backend=<this domain>,bridge=br-lan' ]`).
//!
//! # How the integrator uses it
//!
//! - The toolstack writes the backend directory under this domain's home,
//!   `backend/vif/<frontend domid>/<devid>` (`frontend`, `frontend-id`, `mac`,
//!   `handle`, `online`, `state` = 1, maybe `bridge`, `ip`), runs no hotplug script
//!   for a backend that is not dom0, and waits about 10 s for `state` = 2.
//!   [`Netback::probe`] reads it, writes the features (`feature-sg` = 1,
//!   `feature-gso-tcpv4` = 1, `feature-gso-tcpv6` = 1,
//!   `feature-ipv6-csum-offload` = 1, `feature-rx-copy` = 1, `feature-rx-flip` =
//!   0: nothing else is offered: no multi-queue, no split event channels) and goes
//!   InitWait (2). GSO goes to the client too when *it* wrote
//!   `feature-gso-tcpv4`/`-tcpv6` (with `feature-sg` and partial checksums):
//!   [`Netback::send_gso`].
//! - Watch [`Netback::watch_paths`] (the backend directory and the frontend's
//!   `state`) and call [`Netback::poll_xenbus`] whenever either fires: it connects
//!   when the frontend is Initialised or Connected (maps `tx-ring-ref` and
//!   `rx-ring-ref`, binds `event-channel`, goes Connected), follows a frontend that
//!   closes (unmaps, unbinds, goes Closed), a toolstack that asks for the device's
//!   removal (it writes the backend's `state` = 5: the backend unmaps and goes Closed
//!   before the toolstack removes the directory) and a frontend that starts over
//!   (Initialising again after Closed: InitWait again). It returns the
//!   [`BackState`]. On [`BackState::Gone`] (the toolstack removed the directory),
//!   or [`BackState::Closed`] with [`Netback::removal_requested`] (`online` = 0:
//!   `xl network-detach`, the client destroyed), [`Netback::close`] it and remove the
//!   backend directory: libxl waits for a driver domain to remove its own backend
//!   directory (the kernel's `dev::backends::release` does both). A Closed vif
//!   whose toolstack did not ask for removal may see its client start over
//!   (InitWait again): keep it. A vif dropped without `close` is closed all the
//!   same (unbound, unmapped, Closed).
//! - Data: [`Netback::port`] is the event channel; the kernel's handler wakes the
//!   data plane on it. Call [`Netback::poll`] then (and after a burst of
//!   [`Netback::send`]): it services both rings, a bounded batch each
//!   ([`TX_BUDGET`] packets from the client, [`RX_BUDGET`] to it), and returns true
//!   when it stopped at a bound with work left, so call it again soon: the frontend
//!   sends no event for work already published. [`Netback::service`] does that
//!   (one event to the frontend at its end, for both rings, when it asked for one;
//!   [`Netback::service_quiet`] leaves it owed for the next `service` of the same
//!   turn, [`Netback::flush_notify`]) and says whether the vif needs another turn at once (requests left in the
//!   ring, frames received and not yet taken): a data plane that then sleeps until
//!   the next event can wait forever (a client sending TCP in 64 KiB GSO packets
//!   fills the received queue's byte bound in 8 packets and stops when its ring is
//!   full; the iperf3 of `bench clients` never finished so). Take the client's frames with
//!   [`Netback::recv`] (or [`Netback::recv_meta`]); hand it frames with
//!   [`Netback::send`] (queued, copied into the buffers the client posted at the
//!   next poll; dropped and counted when the queue is full).
//! - [`Netback::mac`] is the *client's* MAC (the backend's `mac` key), and so is
//!   the MAC of the `Link` the router sees (`xenlet_net::netback`); a bridge learns
//!   it on that port.
//! - Counters are the vif's ([`NetbackStats`]), Linux's view of `vif<d>.<n>`: rx is
//!   what the client sent, tx what it was sent.
//! - The toolstack's limits, read when the client connects and again at
//!   [`Netback::poll_xenbus`] while it is connected (`guard`): the `ip` key
//!   restricts the client's source addresses ([`Netback::source_filter`]; frames
//!   from others are dropped and counted, [`NetbackStats::rx_spoofed`]), the `rate`
//!   key its transmit rate ([`Netback::rate`]): a packet over its credit waits in
//!   the ring, and [`Netback::rate_wakeup_ns`] says when to poll the vif again (no
//!   event comes for it: an integrator that sleeps past it leaves the client stalled).
//!
//! The API, in short:
//!
//! ```text
//! Netback::probe(platform, "backend/vif/<fe>/<devid>") -> Result<Netback, NetbackError>
//! poll_xenbus(&mut self) -> Result<BackState, NetbackError>   // on a watch firing
//! watch_paths(&self) -> [String; 2]; removal_requested(&self) -> bool
//! poll(&mut self) -> bool                     // on an event; true: call again soon
//! service(&mut self) -> bool                  // polls; true: another turn at once
//! recv(&mut self) -> Option<Vec<u8>>; recv_meta(&mut self) -> Option<ClientFrame>
//! can_send(&self) -> bool; send(&mut self, &[u8]) -> Result<(), NetbackError>
//! send_with(&mut self, &[u8], RxChecksum) -> Result<(), NetbackError>
//! send_gso(&mut self, &[u8], mss) -> Result<(), NetbackError>
//! client_takes_csum_blank(&self) -> bool; client_takes_gso(&self, &[u8]) -> bool
//! source_filter() -> Option<&SourceFilter>; rate() -> Option<(bytes, usec)>
//! rate_wakeup_ns() -> Option<u64>             // poll then: a packet waits for credit
//! name() "vif<fe>.<devid>"; mac() (the client's); bridge(); ip(); frontend_id();
//! devid(); path(); state(); stats() -> NetbackStats; broken() -> Option<&str>;
//! port() -> Option<Port>; is_connected(); close(self)
//! ```
//!
//! # The data path
//!
//! Client to us (TX ring, `tx`): a packet is a first request (`size` = the frame's
//! length), any extra-info slots (`NETTXF_extra_info`; consumed and answered
//! `NETIF_RSP_NULL`; a GSO extra's segment size is passed on), then further slots
//! while `NETTXF_more_data` is set (Linux's netfront splits a frame that crosses a
//! page into two slots even without scatter-gather). Up to [`MAX_SLOTS`] (18, Linux's
//! `XEN_NETBK_LEGACY_SLOTS_MAX`) slots are taken; a packet of more is dropped
//! (answered `NETIF_RSP_ERROR`), one of more than [`FATAL_SLOTS`] breaks the vif. The
//! slots' data is copied out with `GNTTABOP_copy` into pages of our own, many
//! packets per hypercall, then into the received queue; each slot is answered
//! (`NETIF_RSP_OKAY`, or `NETIF_RSP_ERROR` when a copy failed).
//!
//! Us to the client (RX ring, `rx`): each frame takes as many of the buffers the
//! client posted as it needs (one page each; several with `NETRXF_more_data` only
//! when the client wrote `feature-sg`), is copied into our pages then into its
//! buffers with `GNTTABOP_copy`, and each buffer is answered (id, offset 0, flags,
//! length; or `NETIF_RSP_ERROR` when the copy failed). A GSO packet (up to 64 KiB
//! of TCP with a partial checksum) takes one buffer more: its first response
//! carries `NETRXF_extra_info` and the next slot holds the GSO extra (segment
//! size and type) in place of a response, as Linux's `xenvif_rx_skb` places it;
//! its data goes on in the slots after.
//!
//! # What a frontend can get wrong
//!
//! Everything it writes is untrusted. These break *its* vif (the reason is kept,
//! [`Netback::broken`]; the rings are no longer touched; the other vifs go on): a
//! request producer more than a ring ahead, a packet whose slots are not all
//! published, more than [`FATAL_SLOTS`] slots, a slot that crosses its page, an
//! extra-info slot of an unknown type. These drop the packet alone (answered with
//! an error, counted): a slot larger than what remains of the frame, a frame shorter
//! than an Ethernet header, 19 or 20 slots, a grant that cannot be copied (bad or
//! revoked reference). A frontend that stops answering cannot make us queue without
//! bound: the client's frames are taken only while the received queue has room
//! ([`RECEIVED_MAX`] frames, [`RECEIVED_MAX_BYTES`]), frames to it wait in a queue
//! of [`TO_CLIENT_MAX`] frames and [`TO_CLIENT_MAX_BYTES`] (small ones beyond it by
//! [`TO_CLIENT_SMALL_RESERVE`]) and are dropped past it,
//! and each poll does a bounded batch. Frames queued for a client that stopped
//! posting buffers wait there (bounded) until it posts again or disconnects.
//!
//! # Files
//!
//! `xenbus` holds the handshake (probe, connect, disconnect, close), `tx` the
//! client's frames to us, `rx` ours to the client, `guard` the `ip` source filter
//! and the `rate` credit, `stats` the counters.

mod guard;
mod rx;
mod stats;
mod tx;
mod xenbus;

#[cfg(test)]
mod tests;

pub use crate::netif::RxChecksum;
pub use guard::{parse_rate, Credit, SourceFilter, MIN_BURST};
pub use stats::NetbackStats;
pub use xenbus::BackState;

use crate::platform::{DmaPages, XenBackend};
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use xenlet_xen::evtchn::Port;
use xenlet_xen::ring::BackRing;

/// Packets taken from the client per [`Netback::poll`].
pub const TX_BUDGET: usize = 64;
/// Frames handed to the client per [`Netback::poll`].
pub const RX_BUDGET: usize = 64;
/// Polls per [`Netback::service`].
pub const SERVICE_POLLS: usize = 5;
/// Slots a packet from the client may take (`XEN_NETBK_LEGACY_SLOTS_MAX`).
pub const MAX_SLOTS: usize = 18;
/// Slots past which a packet breaks the vif (Linux's `fatal_skb_slots`).
pub const FATAL_SLOTS: usize = 20;
/// Frames from the client held for [`Netback::recv`]: past it, no more requests are
/// taken until some are.
pub const RECEIVED_MAX: usize = 256;
/// Bytes of the frames from the client held for [`Netback::recv`]: past it, no more
/// requests are taken (a packet may overshoot it by one frame).
pub const RECEIVED_MAX_BYTES: usize = 512 * 1024;
/// Frames queued for the client: past it, [`Netback::send`] drops.
pub const TO_CLIENT_MAX: usize = 256;
/// Bytes of the frames queued for the client: past it, [`Netback::send`] drops.
pub const TO_CLIENT_MAX_BYTES: usize = 512 * 1024;
/// Frames of at most [`SMALL_FRAME`] bytes are queued past [`TO_CLIENT_MAX`] and
/// [`TO_CLIENT_MAX_BYTES`] by up to this many frames (and as many KiB): a queue full
/// of a bulk flow's 64 KiB GSO packets still takes the router's ARP, neighbour
/// discovery, advertisements and ACKs, as a Linux qdisc's queue of 1,000 packets
/// or fq_codel's sparse flows would. Without it, a client's iperf3 from the WAN
/// starved the router's neighbour advertisements on the test bed: the client's
/// NUD for its IPv6 router failed and Linux dropped its default route.
pub const TO_CLIENT_SMALL_RESERVE: usize = 64;
/// The largest frame [`TO_CLIENT_SMALL_RESERVE`] serves.
pub const SMALL_FRAME: usize = 1024;
/// Our pages the client's packets are copied into, per batch.
pub const TX_STAGING_PAGES: usize = 24;
/// Our pages frames for the client are copied from, per batch (a 64 KiB frame
/// fits).
pub const RX_STAGING_PAGES: usize = 17;
/// Extra-info slots a packet may carry: one of each valid type (more breaks the
/// vif).
pub const MAX_EXTRAS: usize = crate::netif::EXTRA_TYPE_MAX as usize - 1;

/// What a ring error means from the backend's side: the frontend's doing.
fn ring_error(ring: &str, e: xenlet_xen::ring::RingError) -> String {
    use xenlet_xen::ring::RingError;
    match e {
        RingError::Corrupt => format!("{ring} ring: the frontend's request index is impossible"),
        RingError::Full => format!("{ring} ring: more answers than requests"),
        RingError::BadEntry => format!("{ring} ring: entry size mismatch"),
    }
}

/// Netback errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetbackError {
    /// The backend directory is unusable (a key missing or malformed).
    Probe(String),
    /// The frontend's connection details are unusable, or mapping or binding them
    /// failed; the backend went Closing.
    Handshake(String),
    /// XenStore failed.
    XenStore(String),
    /// Not connected to the frontend (the frame was dropped and counted).
    NotConnected,
    /// The vif is broken (the reason is kept).
    Broken(String),
    /// The queue to the client is full (the frame was dropped and counted).
    Busy,
    /// An empty frame, one larger than 65535 bytes, one larger than a page to a
    /// client without `feature-sg`, or a partial checksum the client does not take.
    BadFrame,
}

impl fmt::Display for NetbackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetbackError::Probe(w) => write!(f, "backend directory unusable: {w}"),
            NetbackError::Handshake(w) => write!(f, "connect failed: {w}"),
            NetbackError::XenStore(w) => write!(f, "xenstore: {w}"),
            NetbackError::NotConnected => f.write_str("not connected"),
            NetbackError::Broken(w) => write!(f, "vif broken: {w}"),
            NetbackError::Busy => f.write_str("queue to the client full"),
            NetbackError::BadFrame => f.write_str("bad frame"),
        }
    }
}

/// A frame from the client, with what it said of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientFrame {
    /// The Ethernet frame.
    pub frame: Vec<u8>,
    /// Its checksum state.
    pub csum: RxChecksum,
    /// The segment size of a GSO packet (a GSO extra-info slot), if it had one.
    pub gso: Option<u16>,
}

/// What the connection to the frontend is: the mapped rings, the bound port, what
/// the frontend said it takes, and our staging pages.
struct Conn {
    tx: BackRing,
    rx: BackRing,
    port: Port,
    /// The frontend takes multi-slot frames (`feature-sg`).
    fe_sg: bool,
    /// The frontend takes partial checksums (not `feature-no-csum-offload`).
    fe_csum_blank: bool,
    /// ... of IPv6 too (`feature-ipv6-csum-offload`).
    fe_ipv6_csum_blank: bool,
    /// The frontend takes TCP/IPv4 GSO packets (`feature-gso-tcpv4`; only with
    /// `feature-sg` and partial checksums, as Linux's netback).
    fe_gso_tcpv4: bool,
    /// ... TCP/IPv6 (`feature-gso-tcpv6`, with IPv6 partial checksums).
    fe_gso_tcpv6: bool,
    tx_staging: DmaPages,
    rx_staging: DmaPages,
    /// A packet taken off the TX ring that waits for its transmit credit (`rate`):
    /// not copied, not answered; the requests after it stay in the ring.
    held: Option<tx::Packet>,
    /// Responses were published on either ring that the frontend asked an event
    /// for, and none was sent yet ([`Netback::flush_notify`]).
    owed: bool,
}

/// One vif served to a frontend in another domain.
pub struct Netback<P: XenBackend> {
    platform: P,
    /// The backend directory, as given to [`Netback::probe`].
    path: String,
    /// The frontend's directory (`/local/domain/<fe>/device/vif/<devid>`).
    fe_path: String,
    fe_id: u16,
    devid: u32,
    mac: [u8; 6],
    bridge: Option<String>,
    ip: Option<String>,
    /// The sources the client may use (the `ip` key, read at connect).
    filter: Option<SourceFilter>,
    /// The client's transmit credit (the `rate` key, read at connect).
    credit: Option<Credit>,
    state: BackState,
    conn: Option<Conn>,
    received: VecDeque<ClientFrame>,
    /// Bytes of the frames in `received`.
    received_bytes: usize,
    to_client: VecDeque<rx::Outgoing>,
    /// Bytes of the frames in `to_client`.
    to_client_bytes: usize,
    broken: Option<String>,
    stats: NetbackStats,
}

impl<P: XenBackend> Netback<P> {
    /// The interface's name, as Linux names a backend vif: `vif<fe domid>.<devid>`.
    pub fn name(&self) -> String {
        format!("vif{}.{}", self.fe_id, self.devid)
    }

    /// The client's MAC address (the backend's `mac` key): the address the client's
    /// frames come from.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// The bridge the toolstack named (`bridge` key), if any.
    pub fn bridge(&self) -> Option<&str> {
        self.bridge.as_deref()
    }

    /// The addresses the toolstack named (`ip` key: space-separated), if any.
    pub fn ip(&self) -> Option<&str> {
        self.ip.as_deref()
    }

    /// The source filter in force (the `ip` key as read at connect), if any.
    pub fn source_filter(&self) -> Option<&SourceFilter> {
        self.filter.as_ref()
    }

    /// The transmit rate in force, `(bytes, usec)` per window (the `rate` key as
    /// read at connect), if limited.
    pub fn rate(&self) -> Option<(u64, u64)> {
        self.credit.as_ref().map(|c| (c.bytes, c.usec))
    }

    /// When a packet of the client waiting for its transmit credit may go (ns on
    /// the platform's clock, [`crate::platform::XenPlatform::now_ns`]): poll the vif
    /// then, no event comes for it. `None` when nothing waits.
    pub fn rate_wakeup_ns(&self) -> Option<u64> {
        if !self.is_connected() {
            return None;
        }
        self.credit.as_ref().and_then(Credit::wakeup_ns)
    }

    /// The frontend's domain id.
    pub fn frontend_id(&self) -> u16 {
        self.fe_id
    }

    /// The device id (`<devid>` in the paths; the client's `eth<devid>` usually).
    pub fn devid(&self) -> u32 {
        self.devid
    }

    /// The backend directory.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The state this backend last wrote.
    pub fn state(&self) -> BackState {
        self.state
    }

    /// Counters, with the events on the vif's port while it is connected.
    pub fn stats(&self) -> NetbackStats {
        let events = self
            .conn
            .as_ref()
            .map_or(0, |c| self.platform.port_events(c.port));
        NetbackStats {
            events,
            ..self.stats
        }
    }

    /// Why the vif is broken, if it is (a misbehaving frontend; it stays broken
    /// until the frontend connects again).
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// The event channel to the frontend while connected: its events mean "poll".
    pub fn port(&self) -> Option<Port> {
        self.conn.as_ref().map(|c| c.port)
    }

    /// Whether the rings are mapped and the vif is not broken.
    pub fn is_connected(&self) -> bool {
        self.conn.is_some() && self.broken.is_none()
    }

    /// The paths to watch: the backend directory (the toolstack's changes) and the
    /// frontend's state; call [`Netback::poll_xenbus`] when one fires.
    pub fn watch_paths(&self) -> [String; 2] {
        [self.path.clone(), format!("{}/state", self.fe_path)]
    }

    /// Services both rings, a bounded batch each, and notifies the frontend as the
    /// ring protocol asks (once for both). True when work is left (a bound was hit):
    /// call it again.
    pub fn poll(&mut self) -> bool {
        let more = self.poll_rings();
        self.flush_notify();
        more
    }

    /// Both rings' batches, their last copies in one grant-copy call; the event the
    /// frontend asked for is owed, not sent.
    fn poll_rings(&mut self) -> bool {
        if !self.is_connected() {
            return false;
        }
        let (tx_more, tx) = self.gather_tx();
        let (rx_more, rx) = self.gather_rx();
        self.flush(tx, rx);
        self.is_connected() && (tx_more || rx_more)
    }

    /// Copies what was gathered, the client's packets out and frames to it in, in
    /// one grant-copy call (none when there is nothing to copy), then answers both
    /// rings' slots (the event the frontend asks for owed).
    fn flush(&mut self, tx: tx::TxBatch, rx: rx::RxBatch) {
        if tx.0.is_empty() && rx.0.is_empty() {
            return;
        }
        let statuses = {
            let Netback {
                platform,
                conn,
                fe_id,
                stats,
                ..
            } = self;
            let Some(conn) = conn.as_ref() else { return };
            tx::copy_batch(
                platform,
                *fe_id,
                [(&conn.tx_staging, &tx.1), (&conn.rx_staging, &rx.1)],
                stats,
            )
        };
        let (tx_status, rx_status) = statuses.split_at(tx.1.len().min(statuses.len()));
        self.finish_tx(tx.0, tx_status);
        self.finish_rx(rx.0, rx_status);
    }

    /// Sends the frontend the event it asked for, if one is owed: responses
    /// published since the last ([`Netback::service_quiet`] leaves it owed).
    pub fn flush_notify(&mut self) {
        if let Some(c) = self.conn.as_mut() {
            if core::mem::take(&mut c.owed) {
                self.platform.notify(c.port);
                self.stats.notifies += 1;
            }
        }
    }

    /// One turn of the integrator's data plane on this vif: [`Netback::poll`] again
    /// while it stops at a bound (at most [`SERVICE_POLLS`] polls), then whether the
    /// vif needs another turn *soon*, with no event to come for it: requests left
    /// in the client's ring (the received queue was full; a client that published
    /// them sends no event for them, and stops sending once its ring is full) or
    /// frames taken and not yet received ([`Netback::recv`]: the client waits for
    /// what they carry). A data plane that sleeps until the next event while this is
    /// true can wait forever: run its turn again at once. One event to the frontend
    /// at the end, for both rings and every poll, when it asked for one.
    pub fn service(&mut self) -> bool {
        let more = self.service_quiet();
        self.flush_notify();
        more
    }

    /// [`Netback::service`] without the event at the end: it stays owed, for the
    /// next [`Netback::service`] (or [`Netback::flush_notify`]) to send with its
    /// own. A data plane that takes the clients' packets, routes, then hands the
    /// clients what came of them in the same turn sends one event, not two (the
    /// kernel's `poll_stack` does). Never let an owed event wait for a later turn:
    /// the frontend waits for it.
    pub fn service_quiet(&mut self) -> bool {
        let mut polls = 1;
        let mut more = self.poll_rings();
        while more && polls < SERVICE_POLLS {
            more = self.poll_rings();
            polls += 1;
        }
        self.is_connected() && (more || !self.received.is_empty())
    }

    /// Marks the vif broken (a misbehaving frontend), keeping the first reason; the
    /// rings are not touched again.
    fn fail(&mut self, why: String) {
        if self.broken.is_none() {
            if let Some(c) = self.conn.as_mut() {
                c.tx.mark_broken();
                c.rx.mark_broken();
            }
            self.stats.fatal += 1;
            self.broken = Some(why);
        }
    }
}
