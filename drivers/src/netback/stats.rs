//! The vif's counters, from the vif's side as Linux counts `vif<d>.<n>`: rx is what
//! the client sent us, tx what we sent it.

use crate::netif::LinkStats;

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
    /// Their bytes.
    pub tx_bytes: u64,
    /// Frames for the client dropped: its queue full (it posted no buffers), not
    /// connected, or still queued when it disconnected.
    pub tx_dropped: u64,
    /// Frames whose copy into the client's buffers failed (answered with an error).
    pub tx_errors: u64,
    /// Grant-copy hypercalls made (batches).
    pub copy_batches: u64,
    /// Notifications sent to the frontend.
    pub notifies: u64,
    /// Times the frontend broke the vif (0 or 1 per connection).
    pub fatal: u64,
    /// Ring pages Xen refused to unmap (their memory is never reused).
    pub unmap_failures: u64,
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
