//! The [`Link`] over Xen's PV network *backend* ([`Netback`]): a vif this domain
//! serves to a client domain, as the router sees it (a port of a bridge, say).
//!
//! Directions are the link's, as for any link: what the link *receives* is what the
//! client sent (its netfront's TX ring), what is *sent* on it goes to the client.
//! [`Link::mac`] is the **client's** MAC address (the backend's `mac` key), not one
//! of ours: a backend vif has no address of its own, as a Linux `vif<d>.<n>` has
//! none worth using (`fe:ff:ff:ff:ff:ff`); a bridge learns the client's address on
//! that port, and a router that answers on the vif itself needs an address of its
//! own for it.
//!
//! Checksums: a frame the client sent with `NETTXF_csum_blank` comes as
//! [`RxChecksum::Blank`] (complete it before it leaves the host), one with
//! `NETTXF_data_validated` as [`RxChecksum::Validated`]. Expect Blank often: a Linux
//! client offloads IPv4 TCP/UDP checksums to any backend (netif.h makes that the
//! default; IPv6's needs `feature-ipv6-csum-offload`, which netback offers too),
//! so a forwarded copy must have its checksum completed, or be passed on with
//! [`Link::send_csum_blank`] to a link that takes it. Frames sent carry full
//! checksums, or a partial one through [`Link::send_csum_blank`] when the client
//! takes them ([`Link::tx_csum_blank`]). GSO both ways: a TCP packet of up to 64 KiB
//! from the client comes with its segment size ([`Link::recv_meta`]), and one goes
//! to the client whole ([`Link::send_gso`]) when it wrote `feature-gso-tcpv4`
//! (`-tcpv6`) ([`Link::gso_tcpv4`], [`Link::gso_tcpv6`]), as a Linux client does.
//!
//! Sending queues the frame; the copy into the client's buffers happens at the next
//! [`Netback::poll`], which the caller runs when the vif's event channel fires and
//! after a burst of sends. Counters: [`LinkStats::tx_errors`] counts the frames the
//! client never got (copy errors and drops: no buffers posted, queue full);
//! [`LinkStats::rx_dropped`] counts the client's frames dropped, malformed or from
//! a source its `ip` key does not list ([`Link::guard`] shows the filter).

use crate::link::{Link, LinkStats, RxChecksum};
use crate::{headers, tso};
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_drivers::netback::{Netback, NetbackError, TO_CLIENT_MAX};
use xenlet_drivers::netif;
use xenlet_drivers::platform::XenBackend;

fn text(e: NetbackError) -> String {
    alloc::format!("{e}")
}

impl<P: XenBackend> Link for Netback<P> {
    /// The client's MAC (see the module doc).
    fn mac(&self) -> [u8; 6] {
        Netback::mac(self)
    }
    fn recv(&mut self) -> Option<Vec<u8>> {
        Netback::recv(self)
    }
    fn recv_flagged(&mut self) -> Option<(Vec<u8>, RxChecksum)> {
        self.recv_meta().map(|f| (f.frame, f.csum))
    }
    fn recv_meta(&mut self) -> Option<(Vec<u8>, RxChecksum, Option<u16>)> {
        Netback::recv_meta(self).map(|f| (f.frame, f.csum, f.gso))
    }
    fn tx_csum_blank(&self) -> bool {
        self.client_takes_csum_blank()
    }
    fn send_csum_blank(&mut self, frame: &[u8]) -> Result<(), String> {
        if headers::is_ipv6(frame) && !self.client_takes_ipv6_csum_blank() {
            return self.send(&tso::with_l4_checksum(frame)).map_err(text);
        }
        self.send_with(frame, RxChecksum::Blank).map_err(text)
    }
    fn gso_tcpv4(&self) -> bool {
        self.client_takes_gso_type(netif::GSO_TYPE_TCPV4)
    }
    fn gso_tcpv6(&self) -> bool {
        self.client_takes_gso_type(netif::GSO_TYPE_TCPV6)
    }
    fn send_gso(&mut self, frame: &[u8], mss: u16) -> Result<(), String> {
        Netback::send_gso(self, frame, mss).map_err(text)
    }
    fn can_send(&mut self) -> bool {
        Netback::can_send(self)
    }
    fn send(&mut self, frame: &[u8]) -> Result<(), String> {
        Netback::send(self, frame).map_err(text)
    }
    fn stats(&self) -> LinkStats {
        Netback::stats(self).into()
    }
    fn driver_stats(&self) -> Vec<(&'static str, u64)> {
        Netback::stats(self).entries()
    }
    fn broken(&self) -> Option<&str> {
        Netback::broken(self)
    }
    /// `source ip A B (N spoofed dropped); rate B bytes per U us (N waits)`: the
    /// `ip` and `rate` keys in force (read at the client's connect).
    fn guard(&self) -> Option<String> {
        let s = Netback::stats(self);
        let ip = self
            .source_filter()
            .map(|f| alloc::format!("source ip {} ({} spoofed dropped)", f.text(), s.rx_spoofed));
        let rate = self.rate().map(|(bytes, usec)| {
            alloc::format!("rate {bytes} bytes per {usec} us ({} waits)", s.rate_waits)
        });
        match (ip, rate) {
            (None, None) => None,
            (Some(a), Some(b)) => Some(alloc::format!("{a}; {b}")),
            (a, b) => a.or(b),
        }
    }
    fn tx_free_slots(&self) -> usize {
        if self.is_connected() {
            TO_CLIENT_MAX.saturating_sub(self.queued_to_client())
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xenlet_drivers::netback::NetbackStats;

    #[test]
    fn every_counter_lands_in_its_own_field_drops_count_as_errors_spoofed_as_dropped() {
        let s = NetbackStats {
            rx_packets: 1,
            rx_bytes: 2,
            rx_dropped: 3,
            rx_errors: 4,
            rx_gso: 5,
            rx_spoofed: 30,
            tx_packets: 6,
            tx_bytes: 7,
            tx_errors: 8,
            tx_dropped: 100,
            ..NetbackStats::default()
        };
        let l = LinkStats::from(s);
        assert_eq!(
            [
                l.rx_packets,
                l.rx_bytes,
                l.rx_dropped,
                l.rx_errors,
                l.rx_gso,
                l.tx_packets,
                l.tx_bytes,
                l.tx_errors
            ],
            [1, 2, 33, 4, 5, 6, 7, 108]
        );
    }

    #[test]
    fn checksum_states_map_one_to_one() {
        // the stack's checksum state is the driver's own type: nothing to convert
        let c = |c: xenlet_drivers::netback::RxChecksum| -> RxChecksum { c };
        assert_eq!(c(RxChecksum::Unknown), RxChecksum::Unknown);
        assert_eq!(c(RxChecksum::Validated), RxChecksum::Validated);
        assert_eq!(c(RxChecksum::Blank), RxChecksum::Blank);
    }

    #[test]
    fn driver_errors_become_their_text() {
        assert_eq!(text(NetbackError::Busy), "queue to the client full");
        assert_eq!(text(NetbackError::NotConnected), "not connected");
    }
}
