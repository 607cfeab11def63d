//! netfront: the Xen PV network frontend (xen/include/public/io/netif.h), data path
//! and handshake.
//!
//! Handshake ([`Netfront::connect_with`], driven by the shared xenbus [`Frontend`]):
//! once the backend waits (InitWait), choose the number of queues N: the caller's
//! cap, no more than the backend's `multi-queue-max-queues` (a missing, malformed or
//! zero value counts as 1). Each queue is a TX ring, an RX ring and one event
//! channel. With N = 1 publish `tx-ring-ref`, `rx-ring-ref` and `event-channel` in
//! the frontend's directory, as a frontend that knows nothing of queues does, and no
//! `multi-queue-num-queues`; with N > 1 publish `multi-queue-num-queues` = N and
//! those three keys under `queue-0/` .. `queue-<N-1>/` instead (netif.h, "Multiple
//! transmit and receive queues"). Then, for the whole vif: `request-rx-copy` = 1,
//! `feature-rx-notify` = 1, `feature-sg` = 1, and go Connected when the backend is;
//! the MAC comes from the frontend's `mac` key and the MTU from the backend's `mtu`
//! key (libxl's `vif = [ "...,mtu=9000" ]`; 1500 when absent or malformed, and at
//! most 1500 without scatter-gather, as Linux's netfront does). TCPv4 and TCPv6 GSO
//! packets are sent when the backend offers `feature-gso-tcpv4`/`feature-gso-tcpv6`
//! (and scatter-gather), the extra slot typed by the frame's EtherType; with
//! scatter-gather the frontend also writes `feature-gso-tcpv4`/`feature-gso-tcpv6`,
//! so TCP packets of up to 64 KiB arrive whole: a first data slot flagged
//! `NETRXF_extra_info`, a GSO extra-info slot (written over a response), then the
//! remaining data slots. Every slot's buffer is the one posted at its ring position;
//! a data response naming another id breaks the vif.
//!
//! Queues: a frame is sent on the queue its flow hashes to (IPv4/IPv6 addresses and
//! TCP/UDP ports; anything else on queue 0), so one flow is never reordered across
//! queues; the backend picks the queue of each received packet, and the RX rings
//! are taken in turn (a bounded batch each), into one received queue.
//!
//! RX: a pool of pages stays granted to the backend (read-write) and posted on the RX
//! ring; a received packet's data is copied out of its page once and the page is
//! posted again. TX: every TX ring slot owns a page granted read-only for good; a
//! packet is copied into the pages of the slots it takes (several slots with
//! `NETTXF_more_data` when it is larger than a page) and the slots are free again on
//! the response (netback copies or maps the page only until it answers).
//! Checksums: receive checksum offload is on (the default of netif.h): a packet the
//! backend marks `NETRXF_csum_blank` comes with its TCP/UDP checksum left as the
//! pseudo-header sum, one marked `NETRXF_data_validated` was checked by it, and the
//! caller checks the others ([`Netfront::recv_flagged`], [`RxChecksum`]); for IPv6
//! too (`feature-ipv6-csum-offload` written). Packets sent carry full checksums,
//! except GSO packets and what is sent with [`Netfront::send_csum_blank`]
//! (`NETTXF_csum_blank`; IPv6 only to a backend that offers
//! `feature-ipv6-csum-offload`, [`Netfront::has_ipv6_csum_offload`]). Every response is checked (id in range and in flight,
//! data inside the page, status); a bad one marks the vif broken.
//!
//! The rings, the event channel and the buffers make up a queue; the received
//! frames, the counters and the broken state are the vif's: a bad response on any
//! queue breaks the whole vif.
//!
//! The files: `xenbus` holds the handshake and its undoing (`connect`,
//! `disconnect`), `queue` a queue's rings, event channel and buffers, `tx` and `rx`
//! the data path, `reconnect` the reconnect after a restore or to a backend that
//! came back, `flow` the choice of
//! transmit queue, `stats` the counters.

mod queue;
mod reconnect;
mod rx;
mod stats;
mod tx;
mod xenbus;

#[cfg(test)]
mod tests;

pub use crate::netif::{LinkStats, QueueStats, RxChecksum};
pub use rx::RX_FRAME_MAX;
pub use stats::NetfrontStats;
pub use xenbus::{mtu_from_backend, parse_mac, DEFAULT_MTU, MAX_MTU, MIN_MTU};

use crate::platform::XenPlatform;
use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Ethernet header bytes in front of the MTU's worth of packet.
pub const ETH_HEADER: usize = 14;

/// Queues a vif asks for by default ([`Netfront::connect`]; the kernel's
/// `xenlet.netqueues=` default too): two, so that dom0 can spread its netback work
/// over two threads. Fewer when the backend offers fewer. Each queue holds 2 ring
/// pages and 512 buffer pages (2 MiB).
pub const DEFAULT_MAX_QUEUES: usize = 2;

/// Network errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetError {
    /// The vif is broken (bad response); the reason is kept.
    Broken(String),
    /// No TX slot or buffer free now.
    Busy,
    /// The frame is empty or larger than 64 KiB.
    BadFrame,
    /// The handshake failed.
    Handshake(String),
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetError::Broken(w) => write!(f, "vif broken: {w}"),
            NetError::Busy => f.write_str("transmit queue full"),
            NetError::BadFrame => f.write_str("bad frame size"),
            NetError::Handshake(w) => write!(f, "handshake failed: {w}"),
        }
    }
}

/// One connected virtual network interface.
pub struct Netfront<P: XenPlatform> {
    platform: P,
    /// `device/vif/<id>`.
    id: u32,
    /// The caller's cap on queues, for a reconnect.
    max_queues: usize,
    /// What the handshake set up (the backend, the address, the features and the
    /// queues): all of it is replaced when the handshake runs again.
    link: xenbus::Link,
    /// The queue whose RX responses are taken first at the next poll.
    rx_next: usize,
    /// Frames received and copied out, not yet taken, with their first slot's flags.
    received: VecDeque<(Vec<u8>, u16, Option<u16>)>,
    /// Bytes of the frames in `received`.
    received_bytes: usize,
    broken: Option<String>,
    /// The backend went away ([`Netfront::detach`]); waiting for one to come back.
    detached: bool,
    stats: LinkStats,
    /// The per-packet counters ([`Netfront::driver_stats`]), all but the events.
    driver_stats: NetfrontStats,
}

impl<P: XenPlatform> Netfront<P> {
    /// Connects to `device/vif/<id>` with up to [`DEFAULT_MAX_QUEUES`] queues (as
    /// many as the backend offers, no more).
    pub fn connect(platform: P, id: u32) -> Result<Self, NetError> {
        Self::connect_with(platform, id, DEFAULT_MAX_QUEUES)
    }

    /// Connects to `device/vif/<id>` with up to `max_queues` queues: as many as the
    /// backend offers (`multi-queue-max-queues`), no more, and at least one (also for
    /// `max_queues` = 0). Each queue costs 514 pages; when the pages or grants for
    /// another queue cannot be had, the vif makes do with the queues it has.
    pub fn connect_with(platform: P, id: u32, max_queues: usize) -> Result<Self, NetError> {
        let link = xenbus::connect(&platform, id, max_queues)?;
        Ok(Netfront {
            platform,
            id,
            max_queues,
            link,
            rx_next: 0,
            received: VecDeque::new(),
            received_bytes: 0,
            broken: None,
            detached: false,
            stats: LinkStats::default(),
            driver_stats: NetfrontStats::default(),
        })
    }

    /// Gives back every queue's RX and TX buffers and ring pages (grants ended,
    /// pages freed) and closes the event channels, once the backend has closed (`xl
    /// network-detach`). A page the backend still maps keeps its grant and stays
    /// allocated. Returns the buffer pages and the ring pages freed (512 and 2 per
    /// queue when all are).
    pub fn release(self) -> (usize, usize) {
        self.release_after(true)
    }

    /// As [`Netfront::release`], saying whether the backend closed. If it did not
    /// (the close timed out), netback may still hold RX requests it will grant-copy
    /// packets into, and TX requests it will copy from: their grants are never ended
    /// and no page is freed (a reference ended and reused could carry a packet into
    /// another device's page). Only the event channels are closed. Returns (0, 0).
    pub fn release_after(self, backend_closed: bool) -> (usize, usize) {
        let Netfront { platform, link, .. } = self;
        xenbus::disconnect(&platform, link.queues, backend_closed)
    }

    /// The device id (`device/vif/<id>`) it is connected to.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The MAC address from XenStore.
    pub fn mac(&self) -> [u8; 6] {
        self.link.mac
    }

    /// The backend's domain id.
    pub fn backend_id(&self) -> u16 {
        self.link.backend_id
    }

    /// Link statistics.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// The per-packet driver counters (`ethtool -S`), with the events on the
    /// current queues' ports.
    pub fn driver_stats(&self) -> NetfrontStats {
        let events = self
            .link
            .queues
            .iter()
            .map(|q| self.platform.port_events(q.port))
            .sum();
        NetfrontStats {
            events,
            ..self.driver_stats
        }
    }

    /// The number of queues (TX/RX ring pairs) in use.
    pub fn queues(&self) -> usize {
        self.link.queues.len()
    }

    /// RX buffers of the first queue: one per ring slot (256), or fewer in a domain
    /// short of memory.
    pub fn rx_buffers(&self) -> usize {
        self.link.queues.first().map_or(0, |q| q.rx_bufs.len())
    }

    /// Packet counters per queue, queue 0 first.
    pub fn queue_stats(&self) -> Vec<QueueStats> {
        self.link
            .queues
            .iter()
            .map(|q| QueueStats {
                rx_packets: q.rx_packets,
                tx_packets: q.tx_packets,
            })
            .collect()
    }

    /// Why the vif is broken, if it is.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Whether scatter-gather is on.
    pub fn has_sg(&self) -> bool {
        self.link.sg
    }

    /// The MTU (from the backend's `mtu` key, see [`mtu_from_backend`]).
    pub fn mtu(&self) -> usize {
        self.link.mtu
    }

    /// The largest frame sent or expected without GSO: the MTU plus the Ethernet header.
    pub fn max_frame(&self) -> usize {
        self.link.mtu + ETH_HEADER
    }

    /// Marks the vif broken (every queue's rings), keeping the first reason.
    fn fail(&mut self, why: String) {
        if self.broken.is_none() {
            for q in &mut self.link.queues {
                q.mark_broken();
            }
            self.broken = Some(why);
        }
    }

    /// Whether the backend takes TCPv4 GSO packets ([`Netfront::send_gso`]).
    pub fn has_gso_tcpv4(&self) -> bool {
        self.link.gso
    }

    /// Whether the backend takes TCPv6 GSO packets ([`Netfront::send_gso`]).
    pub fn has_gso_tcpv6(&self) -> bool {
        self.link.gso6
    }

    /// Whether the backend completes partial checksums of IPv6 packets
    /// (`feature-ipv6-csum-offload`): without it an IPv6 frame must leave with its
    /// checksum whole.
    pub fn has_ipv6_csum_offload(&self) -> bool {
        self.link.ipv6_csum
    }
}
