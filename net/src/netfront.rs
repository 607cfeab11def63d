//! The [`Link`] over Xen's PV network frontend ([`Netfront`], netif.h): the one place
//! the stack meets that driver. Its counters, per-queue counters and receive checksum
//! flags are already the stack's [`LinkStats`], [`QueueStats`] and [`RxChecksum`]
//! (both are `xenlet_drivers::netif`'s); its errors become text here, so that the
//! stack, the router glue
//! ([`crate::gateway`]) and the LAN services ([`crate::lanservices`]) depend on the
//! [`Link`] trait only.
//!
//! Checksum flags: xen/include/public/io/netif.h, `NETRXF_data_validated` (the backend
//! checked it) and `NETRXF_csum_blank` (never computed, the pseudo-header sum only).

use crate::link::{Link, LinkStats, QueueStats, RxChecksum};
use crate::{headers, tso};
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_drivers::netfront::{NetError, Netfront};
use xenlet_drivers::platform::XenPlatform;

fn text(e: NetError) -> String {
    alloc::format!("{e}")
}

impl<P: XenPlatform> Link for Netfront<P> {
    fn mac(&self) -> [u8; 6] {
        Netfront::mac(self)
    }
    fn recv(&mut self) -> Option<Vec<u8>> {
        Netfront::recv(self)
    }
    fn recv_flagged(&mut self) -> Option<(Vec<u8>, RxChecksum)> {
        Netfront::recv_flagged(self)
    }
    fn recv_meta(&mut self) -> Option<(Vec<u8>, RxChecksum, Option<u16>)> {
        Netfront::recv_meta(self)
    }
    fn tx_csum_blank(&self) -> bool {
        true
    }
    fn send_csum_blank(&mut self, frame: &[u8]) -> Result<(), String> {
        if headers::is_ipv6(frame) && !self.has_ipv6_csum_offload() {
            return Netfront::send(self, &tso::with_l4_checksum(frame)).map_err(text);
        }
        Netfront::send_csum_blank(self, frame).map_err(text)
    }
    fn can_send(&mut self) -> bool {
        self.reap_tx();
        Netfront::can_send(self)
    }
    fn send(&mut self, frame: &[u8]) -> Result<(), String> {
        Netfront::send(self, frame).map_err(text)
    }
    fn stats(&self) -> LinkStats {
        Netfront::stats(self)
    }
    fn broken(&self) -> Option<&str> {
        Netfront::broken(self)
    }
    fn gso_tcpv4(&self) -> bool {
        self.has_gso_tcpv4()
    }
    fn gso_tcpv6(&self) -> bool {
        self.has_gso_tcpv6()
    }
    fn send_gso(&mut self, frame: &[u8], mss: u16) -> Result<(), String> {
        Netfront::send_gso(self, frame, mss).map_err(text)
    }
    fn tx_free_slots(&self) -> usize {
        Netfront::tx_free_slots(self)
    }
    fn mtu(&self) -> usize {
        Netfront::mtu(self)
    }
    fn driver_stats(&self) -> Vec<(&'static str, u64)> {
        Netfront::driver_stats(self).entries()
    }
    fn queue_stats(&self) -> Vec<QueueStats> {
        if self.queues() > 1 {
            Netfront::queue_stats(self)
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xenlet_drivers::netfront as nf;
    use xenlet_drivers::netif;

    #[test]
    fn every_counter_lands_in_its_own_field() {
        let s = nf::LinkStats {
            rx_packets: 1,
            rx_bytes: 2,
            rx_dropped: 3,
            rx_errors: 4,
            rx_gso: 5,
            tx_packets: 6,
            tx_bytes: 7,
            tx_errors: 8,
        };
        // the stack's counters are the driver's own: nothing to convert
        let l: LinkStats = s;
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
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        let q: QueueStats = nf::QueueStats {
            rx_packets: 10,
            tx_packets: 20,
        };
        assert_eq!((q.rx_packets, q.tx_packets), (10, 20));
    }

    #[test]
    fn rx_flags_become_the_stacks_checksum_state() {
        let c = |flags: u16| -> RxChecksum { nf::RxChecksum::from_flags(flags) };
        assert_eq!(c(0), RxChecksum::Unknown);
        assert_eq!(c(netif::NETRXF_DATA_VALIDATED), RxChecksum::Validated);
        // csum_blank wins: the data is good but the field must still be completed
        assert_eq!(c(netif::NETRXF_CSUM_BLANK), RxChecksum::Blank);
        assert_eq!(
            c(netif::NETRXF_CSUM_BLANK | netif::NETRXF_DATA_VALIDATED),
            RxChecksum::Blank
        );
    }

    #[test]
    fn driver_errors_become_their_text() {
        assert_eq!(text(NetError::Busy), "transmit queue full");
        assert_eq!(
            text(NetError::Broken("bad id".into())),
            "vif broken: bad id"
        );
    }
}
