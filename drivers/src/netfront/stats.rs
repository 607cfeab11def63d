//! The vif's per-packet driver counters (`ethtool -S`): what the data path costs in
//! ring slots, notifications, event-channel events and poll turns, so that the CPU a
//! backend spends per byte can be put against what this frontend asks of it. Plain
//! `u64` increments in the [`super::Netfront`] (summed over its queues), bumped by the
//! data path only (polled, never from an interrupt); the events are counted by the
//! platform's port handler ([`crate::platform::XenPlatform::port_events`]) and read
//! when the counters are.
//!
//! A packet costs this frontend no grant operation: its TX pages and RX buffers stay
//! granted for the life of the queue, and the data is copied in or out of them.

use alloc::vec::Vec;

/// Per-packet counters of a vif, in the order `ethtool -S` prints them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetfrontStats {
    /// Event-channel events on the vif's current queues' ports (since they were
    /// set up: a reconnect starts them again).
    pub events: u64,
    /// RX turns: a queue's responses looked at ([`super::Netfront::poll_rx`], per
    /// queue, per round).
    pub rx_polls: u64,
    /// RX turns that took at least one response (a batch).
    pub rx_batches: u64,
    /// RX responses taken (data and extra-info slots).
    pub rx_slots: u64,
    /// Received packets put together from their slots (delivered or dropped).
    pub rx_packets: u64,
    /// RX turns that stopped at the budget with responses maybe left.
    pub rx_budget_stops: u64,
    /// Times the RX ring was found empty and `rsp_event` re-armed.
    pub rx_rearms: u64,
    /// RX buffers posted again.
    pub rx_reposted: u64,
    /// Pushes of re-posted RX buffers (one per batch).
    pub rx_refills: u64,
    /// Refill pushes that notified the backend.
    pub rx_notify_sent: u64,
    /// Refill pushes that did not (its `req_event` asked for none).
    pub rx_notify_suppressed: u64,
    /// Packets queued on a TX ring.
    pub tx_packets: u64,
    /// TX request slots they took (data and extra-info).
    pub tx_slots: u64,
    /// TX pushes that notified the backend.
    pub tx_notify_sent: u64,
    /// TX pushes that did not (the backend was still working).
    pub tx_notify_suppressed: u64,
    /// Sends refused for want of a free TX slot (the caller waits).
    pub tx_ring_full: u64,
    /// TX turns: a queue's responses looked at.
    pub tx_reaps: u64,
    /// TX turns that took at least one response.
    pub tx_reap_batches: u64,
    /// TX responses taken (data and extra-info slots).
    pub tx_responses: u64,
    /// Times the TX ring was found empty and `rsp_event` re-armed.
    pub tx_rearms: u64,
}

impl NetfrontStats {
    /// `(name, value)` in `ethtool -S` order.
    pub fn entries(&self) -> Vec<(&'static str, u64)> {
        let s = self;
        alloc::vec![
            ("events", s.events),
            ("rx_polls", s.rx_polls),
            ("rx_batches", s.rx_batches),
            ("rx_slots", s.rx_slots),
            ("rx_packets", s.rx_packets),
            ("rx_budget_stops", s.rx_budget_stops),
            ("rx_rearms", s.rx_rearms),
            ("rx_reposted", s.rx_reposted),
            ("rx_refills", s.rx_refills),
            ("rx_notify_sent", s.rx_notify_sent),
            ("rx_notify_suppressed", s.rx_notify_suppressed),
            ("tx_packets", s.tx_packets),
            ("tx_slots", s.tx_slots),
            ("tx_notify_sent", s.tx_notify_sent),
            ("tx_notify_suppressed", s.tx_notify_suppressed),
            ("tx_ring_full", s.tx_ring_full),
            ("tx_reaps", s.tx_reaps),
            ("tx_reap_batches", s.tx_reap_batches),
            ("tx_responses", s.tx_responses),
            ("tx_rearms", s.tx_rearms),
        ]
    }

    /// Counts a push's notify decision in `sent` or `suppressed`; returns it.
    pub(super) fn notify(sent: &mut u64, suppressed: &mut u64, notify: bool) -> bool {
        if notify {
            *sent += 1;
        } else {
            *suppressed += 1;
        }
        notify
    }
}
