//! The vif's counters: link statistics as `ip -s link` shows them, and per-queue
//! packet counts.

/// Link statistics, as `ip -s link` shows them.
#[derive(Clone, Copy, Debug, Default)]
pub struct NetStats {
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Received packets dropped (errors, oversize, no room).
    pub rx_dropped: u64,
    /// Receive errors reported by the backend, and packets with unusable extra info.
    pub rx_errors: u64,
    /// Packets received whole as GSO packets (not cut into MTU-sized frames by dom0).
    pub rx_gso: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Transmit errors reported by the backend.
    pub tx_errors: u64,
}

/// Packet counters of one queue ([`Netfront::queue_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Packets received on the queue.
    pub rx_packets: u64,
    /// Packets sent on the queue (answered OK by the backend).
    pub tx_packets: u64,
}
