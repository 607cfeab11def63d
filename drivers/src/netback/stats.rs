//! The vif's counters, from the vif's side as Linux counts `vif<d>.<n>`: rx is what
//! the client sent us (its TX ring), tx what we sent it (its RX ring). Besides the
//! packets and bytes, the per-packet costs `ethtool -S` shows: slots, poll batches,
//! grant copies and their hypercalls, notifications sent and suppressed, events.
//! Plain `u64` increments by the data path (polled, never from an interrupt); the
//! events are the platform's count on the vif's port, read with the counters.

use crate::netif::LinkStats;
use alloc::vec::Vec;

/// Netback counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetbackStats {
    /// Frames taken from the client.
    pub rx_packets: u64,
    /// Their bytes.
    pub rx_bytes: u64,
    /// Client packets dropped: malformed but harmless (a slot larger than the frame,
    /// too short, too many slots), answered with an error.
    pub rx_dropped: u64,
    /// Client packets whose copy failed (a bad or revoked grant), answered with an
    /// error.
    pub rx_errors: u64,
    /// Client frames dropped by the source filter (the `ip` key): a source address
    /// not listed, or a frame the filter cannot vouch for. Answered OKAY.
    pub rx_spoofed: u64,
    /// Times a client packet had to wait for its transmit credit (the `rate` key).
    pub rate_waits: u64,
    /// Client packets that came with a GSO extra.
    pub rx_gso: u64,
    /// Frames delivered to the client.
    pub tx_packets: u64,
    /// ... of them as GSO packets (a GSO extra-info slot with them).
    pub tx_gso: u64,
    /// Their bytes.
    pub tx_bytes: u64,
    /// Frames for the client dropped: its queue full (it posted no buffers), not
    /// connected, or still queued when it disconnected.
    pub tx_dropped: u64,
    /// Frames whose copy into the client's buffers failed (answered with an error).
    pub tx_errors: u64,
    /// Grant-copy hypercalls made (batches: a poll's last copies of both rings go
    /// in one).
    pub copy_batches: u64,
    /// Grant-copy operations they carried (one per slot and page touched).
    pub copy_ops: u64,
    /// Notifications sent to the frontend (at most one a [`Netback::service`] for
    /// both rings, however many publishes asked for it).
    ///
    /// [`Netback::service`]: super::Netback::service
    pub notifies: u64,
    /// Event-channel events on the vif's port (since it was bound).
    pub events: u64,
    /// Turns at the client's TX ring.
    pub rx_polls: u64,
    /// Turns that took at least one packet from it (a batch).
    pub rx_batches: u64,
    /// Packets taken from it (good, dropped or spoofed).
    pub rx_taken: u64,
    /// Request slots those packets took (data and extra-info).
    pub rx_slots: u64,
    /// Turns that stopped at the budget.
    pub rx_budget_stops: u64,
    /// Publishes of TX responses (the client's sends answered) that it asked an
    /// event for (sent with the other ring's, `notifies`).
    pub rx_notify_sent: u64,
    /// ... that did not (its `rsp_event` asked for none).
    pub rx_notify_suppressed: u64,
    /// Turns at the client's RX ring (frames queued for it).
    pub tx_polls: u64,
    /// Turns that handed it at least one frame.
    pub tx_batches: u64,
    /// Frames handed to it (copied or failed).
    pub tx_handed: u64,
    /// Buffers (RX request slots) those frames took.
    pub tx_slots: u64,
    /// Turns that stopped because the client had posted too few buffers.
    pub tx_no_buffers: u64,
    /// Publishes of RX responses that it asked an event for.
    pub tx_notify_sent: u64,
    /// ... that did not.
    pub tx_notify_suppressed: u64,
    /// Times the frontend broke the vif (0 or 1 per connection).
    pub fatal: u64,
    /// Ring pages Xen refused to unmap (their memory is never reused).
    pub unmap_failures: u64,
}

impl NetbackStats {
    /// `(name, value)` in `ethtool -S` order: the packets and bytes, then the
    /// per-packet costs.
    pub fn entries(&self) -> Vec<(&'static str, u64)> {
        let s = self;
        alloc::vec![
            ("rx_packets", s.rx_packets),
            ("rx_bytes", s.rx_bytes),
            ("rx_dropped", s.rx_dropped),
            ("rx_errors", s.rx_errors),
            ("rx_spoofed", s.rx_spoofed),
            ("rx_gso", s.rx_gso),
            ("rate_waits", s.rate_waits),
            ("tx_packets", s.tx_packets),
            ("tx_bytes", s.tx_bytes),
            ("tx_gso", s.tx_gso),
            ("tx_dropped", s.tx_dropped),
            ("tx_errors", s.tx_errors),
            ("events", s.events),
            ("notifies", s.notifies),
            ("copy_batches", s.copy_batches),
            ("copy_ops", s.copy_ops),
            ("rx_polls", s.rx_polls),
            ("rx_batches", s.rx_batches),
            ("rx_taken", s.rx_taken),
            ("rx_slots", s.rx_slots),
            ("rx_budget_stops", s.rx_budget_stops),
            ("rx_notify_sent", s.rx_notify_sent),
            ("rx_notify_suppressed", s.rx_notify_suppressed),
            ("tx_polls", s.tx_polls),
            ("tx_batches", s.tx_batches),
            ("tx_handed", s.tx_handed),
            ("tx_slots", s.tx_slots),
            ("tx_no_buffers", s.tx_no_buffers),
            ("tx_notify_sent", s.tx_notify_sent),
            ("tx_notify_suppressed", s.tx_notify_suppressed),
            ("fatal", s.fatal),
            ("unmap_failures", s.unmap_failures),
        ]
    }
}

/// The link's view, as the network stack reads it: a frame for the client that was
/// dropped counts as a transmit error (the client never got it), a frame the source
/// filter dropped as a dropped one.
impl From<NetbackStats> for LinkStats {
    fn from(s: NetbackStats) -> Self {
        LinkStats {
            rx_packets: s.rx_packets,
            rx_bytes: s.rx_bytes,
            rx_dropped: s.rx_dropped + s.rx_spoofed,
            rx_errors: s.rx_errors,
            rx_gso: s.rx_gso,
            tx_packets: s.tx_packets,
            tx_bytes: s.tx_bytes,
            tx_errors: s.tx_errors + s.tx_dropped,
        }
    }
}
