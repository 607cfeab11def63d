//! One queue: a TX ring and an RX ring with their grants, one event channel, and
//! the buffers that stay granted to the backend for the life of the queue. Setting a
//! queue up takes every resource it needs (and gives all back on failure); releasing
//! it ends the grants and frees the pages (a page the backend still maps is kept).

use super::rx::RxPacket;
use super::xenbus::hs;
use super::NetError;
use crate::netif;
use crate::platform::{DmaPages, XenPlatform};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_xen::evtchn::Port;
use xenlet_xen::gnttab::{Access, Grant};
use xenlet_xen::ring::FrontRing;
use xenlet_xen::shared::PAGE_BYTES;

pub(super) struct RxBuf {
    pub(super) page: DmaPages,
    pub(super) grant: Grant,
    pub(super) posted: bool,
}

pub(super) struct TxSlot {
    pub(super) in_flight: bool,
    pub(super) page: DmaPages,
    pub(super) grant: Grant,
    /// Bytes of the packet this slot starts (0 for continuation slots).
    pub(super) packet_bytes: usize,
}

/// Why a queue did not take a packet.
pub(super) enum QueueError {
    /// No free slot now.
    Busy,
    /// A bad response or a ring failure: the vif is broken, for this reason.
    Broken(String),
}

/// One TX/RX ring pair with its event channel and buffers.
pub(super) struct Queue {
    pub(super) tx: FrontRing,
    pub(super) rx: FrontRing,
    /// The ring pages' grants (published as `tx-ring-ref` / `rx-ring-ref`), kept for
    /// the life of the queue ([`FrontRing`] holds the pages).
    pub(super) tx_ring_grant: Grant,
    pub(super) rx_ring_grant: Grant,
    pub(super) port: Port,
    pub(super) rx_bufs: Vec<RxBuf>,
    pub(super) tx_slots: Vec<TxSlot>,
    pub(super) tx_free: Vec<u16>,
    /// A multi-slot packet being assembled (its slots come in order on this ring).
    pub(super) partial: Option<RxPacket>,
    /// The buffer id posted at each RX ring position (index mod ring size): an
    /// extra-info slot overwrites the response's id, so its buffer is found here.
    pub(super) posted_ids: Vec<u16>,
    /// Packets received on this queue.
    pub(super) rx_packets: u64,
    /// Packets sent on this queue (answered OK).
    pub(super) tx_packets: u64,
    /// The RX response index at which `rsp_event` was last armed (it asks for an
    /// event at the next response): while no response was taken since, a poll
    /// that finds the ring empty leaves it as it is, instead of writing the
    /// ring header netback reads at every push again.
    pub(super) rx_armed_at: Option<u32>,
}

impl Queue {
    /// Grants the ring pages, allocates the event channel, grants one page per TX
    /// slot (read-only) and per RX slot (read-write), and posts every RX buffer. On
    /// failure everything taken so far is given back (a page whose grant cannot be
    /// ended stays allocated).
    pub(super) fn setup<P: XenPlatform>(
        p: &P,
        backend_id: u16,
        buffers: usize,
    ) -> Result<Self, NetError> {
        let mut held: Vec<(DmaPages, Grant)> = Vec::new();
        let mut port = None;
        match Self::take_resources(p, backend_id, buffers, &mut held, &mut port) {
            Ok(()) => {}
            Err(e) => {
                give_back(p, held, port);
                return Err(e);
            }
        }
        let port = port.ok_or_else(|| NetError::Handshake(String::from("no event channel")))?;
        // held: tx ring, rx ring, then the TX buffers, then the RX buffers.
        let mut it = held.into_iter();
        let (Some((tx_page, tx_ring_grant)), Some((rx_page, rx_ring_grant))) =
            (it.next(), it.next())
        else {
            return Err(NetError::Handshake(String::from("ring pages missing")));
        };
        let tx = FrontRing::init(tx_page, netif::TX_ENTRY_BYTES);
        let mut rx = FrontRing::init(rx_page, netif::RX_ENTRY_BYTES);
        let tx_slots: Vec<TxSlot> = it
            .by_ref()
            .take(buffers.min(tx.size() as usize))
            .map(|(page, grant)| TxSlot {
                in_flight: false,
                page,
                grant,
                packet_bytes: 0,
            })
            .collect();
        let mut rx_bufs = Vec::with_capacity(rx.size() as usize);
        for (i, (page, grant)) in it.enumerate() {
            // A fresh ring has room for every buffer: this cannot fail.
            let _ = rx.push_request(&netif::encode_rx_request(i as u16, grant.gref().0));
            rx_bufs.push(RxBuf {
                page,
                grant,
                posted: true,
            });
        }
        let _ = rx.push_requests_and_check_notify();
        // buffer i went to ring position i (positions past the buffers are written
        // as buffers are posted again)
        let rx_entries = rx.size() as usize;
        let mut posted_ids: Vec<u16> = (0..rx_bufs.len() as u16).collect();
        posted_ids.resize(rx_entries, 0);

        let entries = tx_slots.len();
        Ok(Queue {
            tx,
            rx,
            tx_ring_grant,
            rx_ring_grant,
            port,
            rx_bufs,
            tx_slots,
            tx_free: (0..entries as u16).rev().collect(),
            partial: None,
            posted_ids,
            rx_packets: 0,
            tx_packets: 0,
            rx_armed_at: None,
        })
    }

    /// Takes a queue's pages, grants and port, in [`Queue::setup`]'s order, into
    /// `held` and `port` (which the caller gives back on failure).
    fn take_resources<P: XenPlatform>(
        p: &P,
        backend_id: u16,
        buffers: usize,
        held: &mut Vec<(DmaPages, Grant)>,
        port: &mut Option<Port>,
    ) -> Result<(), NetError> {
        let mut take = |what: &str, access: Access| -> Result<(), NetError> {
            let page = p
                .alloc_pages(1)
                .ok_or_else(|| NetError::Handshake(format!("no memory for {what}")))?;
            match p.grant(backend_id, &page, 0, access) {
                Ok(g) => {
                    held.push((page, g));
                    Ok(())
                }
                Err(e) => {
                    p.free_pages(page);
                    Err(NetError::Handshake(format!("{what} grant: {e}")))
                }
            }
        };
        take("tx ring", Access::ReadWrite)?;
        take("rx ring", Access::ReadWrite)?;
        let tx_entries = xenlet_xen::ring::ring_entries(PAGE_BYTES, netif::TX_ENTRY_BYTES);
        let rx_entries = xenlet_xen::ring::ring_entries(PAGE_BYTES, netif::RX_ENTRY_BYTES);
        // TX buffers: one page per TX ring slot (or `buffers`, fewer), granted
        // read-only for good.
        for _ in 0..(tx_entries as usize).min(buffers) {
            take("TX buffers", Access::ReadOnly)?;
        }
        // RX buffers: one per RX ring slot (or fewer), granted for good.
        for _ in 0..(rx_entries as usize).min(buffers) {
            take("RX buffers", Access::ReadWrite)?;
        }
        *port = Some(hs("event channel", p.alloc_unbound(backend_id))?);
        Ok(())
    }

    /// Ends the buffers' and the rings' grants and frees their pages (a page the
    /// backend still maps keeps its grant and stays allocated), closes the event
    /// channel. Returns the (buffer, ring) pages freed.
    pub(super) fn release<P: XenPlatform>(self, p: &P) -> (usize, usize) {
        let mut freed = 0;
        let pages = self
            .rx_bufs
            .into_iter()
            .map(|b| (b.page, b.grant))
            .chain(self.tx_slots.into_iter().map(|t| (t.page, t.grant)));
        for (page, grant) in pages {
            if p.end_grant(grant).is_ok() {
                p.free_pages(page);
                freed += 1;
            }
        }
        let rings = [
            (self.tx.into_pages(), self.tx_ring_grant),
            (self.rx.into_pages(), self.rx_ring_grant),
        ];
        let mut rings_freed = 0;
        for (pages, grant) in rings {
            if p.end_grant(grant).is_ok() {
                p.free_pages(pages);
                rings_freed += 1;
            }
        }
        p.close_port(self.port);
        (freed, rings_freed)
    }

    /// After the domain was restored or migrated: the rings, grants and event
    /// channel belong to the old domain (no backend maps a page of the new one's
    /// empty grant table). Ends the grant handles (their entries are empty now, so
    /// they end, and the references are free again) and frees the pages; the port is
    /// not closed (its number may already be a new channel's). Returns the TX packets
    /// that were in flight (lost: the old backend never answered).
    pub(super) fn forget<P: XenPlatform>(self, p: &P) -> usize {
        let lost = self
            .tx_slots
            .iter()
            .filter(|t| t.in_flight && t.packet_bytes > 0)
            .count();
        let pages = self
            .rx_bufs
            .into_iter()
            .map(|b| (b.page, b.grant))
            .chain(self.tx_slots.into_iter().map(|t| (t.page, t.grant)))
            .chain([
                (self.tx.into_pages(), self.tx_ring_grant),
                (self.rx.into_pages(), self.rx_ring_grant),
            ]);
        for (page, grant) in pages {
            if p.end_grant(grant).is_ok() {
                p.free_pages(page);
            }
        }
        lost
    }

    pub(super) fn mark_broken(&mut self) {
        self.tx.mark_broken();
        self.rx.mark_broken();
    }
}

/// Releases `queues`: (buffer pages, ring pages) freed.
pub(super) fn release_all<P: XenPlatform>(p: &P, queues: Vec<Queue>) -> (usize, usize) {
    queues
        .into_iter()
        .map(|q| q.release(p))
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

/// Gives back what a failed setup took: grants ended and pages freed (a page whose
/// grant the backend maps is kept), the port closed.
fn give_back<P: XenPlatform>(p: &P, held: Vec<(DmaPages, Grant)>, port: Option<Port>) {
    for (page, grant) in held {
        if p.end_grant(grant).is_ok() {
            p.free_pages(page);
        }
    }
    if let Some(port) = port {
        p.close_port(port);
    }
}
