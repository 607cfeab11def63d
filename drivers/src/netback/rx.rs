//! Our frames to the client (its RX ring): queued by [`Netback::send`], copied at
//! the next poll into our staging pages and from there, with batched grant copies,
//! into the buffers the client posted; every buffer answered.

use super::tx::{publish, split, Op};
use super::{
    ring_error, Netback, NetbackError, RxChecksum, RX_BUDGET, RX_STAGING_PAGES, SMALL_FRAME,
    TO_CLIENT_MAX, TO_CLIENT_MAX_BYTES, TO_CLIENT_SMALL_RESERVE,
};
use crate::netif::{self, RxResponse, RX_ENTRY_BYTES};
use crate::platform::XenBackend;
use alloc::vec::Vec;
use xenlet_xen::shared::PAGE_BYTES;

/// A frame queued for the client.
pub(super) struct Outgoing {
    frame: Vec<u8>,
    csum: RxChecksum,
    /// A GSO packet's segment size and `XEN_NETIF_GSO_TYPE_*`.
    gso: Option<(u16, u8)>,
}

impl Outgoing {
    /// The client's buffers it takes: one per page of data, and one for the GSO
    /// extra.
    fn slots(&self) -> usize {
        self.frame.len().div_ceil(PAGE_BYTES) + usize::from(self.gso.is_some())
    }
}

/// Frames gathered for a copy to the client, and their copy ops.
pub(super) type RxBatch = (Vec<Pending>, Vec<Op>);

/// A buffer the client posted, as a frame uses it.
#[derive(Clone, Copy)]
enum Slot {
    /// Data: the buffer's id and the bytes copied into it.
    Data(u16, u16),
    /// The GSO extra's slot (the buffer is not written: the frontend takes it back).
    Extra(u16, u8),
}

/// A frame waiting for its batch's copy: the client's buffers it takes.
pub(super) struct Pending {
    slots: Vec<Slot>,
    csum: RxChecksum,
    ops: core::ops::Range<usize>,
    /// A GSO packet's segment size (0: not GSO).
    gso_mss: u16,
}

fn ethertype(frame: &[u8]) -> u16 {
    match frame.get(12..14) {
        Some(t) => u16::from_be_bytes([t[0], t[1]]),
        None => 0,
    }
}

impl<P: XenBackend> Netback<P> {
    /// Whether [`Netback::send`] would queue a frame now.
    pub fn can_send(&self) -> bool {
        self.is_connected()
            && self.to_client.len() < TO_CLIENT_MAX
            && self.to_client_bytes + 65535 <= TO_CLIENT_MAX_BYTES
    }

    /// Frames queued for the client, not yet copied.
    pub fn queued_to_client(&self) -> usize {
        self.to_client.len()
    }

    /// Whether the client takes frames with a partial checksum (IPv4 at least; see
    /// [`Netback::send_with`]): it did not write `feature-no-csum-offload`.
    pub fn client_takes_csum_blank(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| c.fe_csum_blank)
    }

    /// Whether the client takes IPv6 frames with a partial checksum too: it wrote
    /// `feature-ipv6-csum-offload`.
    pub fn client_takes_ipv6_csum_blank(&self) -> bool {
        self.conn
            .as_ref()
            .is_some_and(|c| c.fe_csum_blank && c.fe_ipv6_csum_blank)
    }

    /// Whether the client takes `frame` (Ethernet, by its EtherType: TCP over IPv4
    /// or IPv6) as a GSO packet ([`Netback::send_gso`]): it wrote
    /// `feature-gso-tcpv4` (or `-tcpv6`), `feature-sg`, and takes partial checksums.
    pub fn client_takes_gso(&self, frame: &[u8]) -> bool {
        netif::gso_type_of(frame).is_some_and(|t| self.client_takes_gso_type(t))
    }

    /// Whether the client takes GSO packets of `XEN_NETIF_GSO_TYPE_*` `kind`.
    pub fn client_takes_gso_type(&self, kind: u8) -> bool {
        self.conn.as_ref().is_some_and(|c| match kind {
            netif::GSO_TYPE_TCPV4 => c.fe_gso_tcpv4,
            netif::GSO_TYPE_TCPV6 => c.fe_gso_tcpv6,
            _ => false,
        })
    }

    /// Queues a frame for the client (checksums complete, or at least not vouched
    /// for: it checks them). Copied at the next [`Netback::poll`].
    pub fn send(&mut self, frame: &[u8]) -> Result<(), NetbackError> {
        self.send_with(frame, RxChecksum::Unknown)
    }

    /// Queues a TCP packet of up to 64 KiB for the client as one GSO packet, its
    /// TCP checksum field holding the pseudo-header sum (`NETRXF_csum_blank`): the
    /// client cuts it into `mss`-byte segments if it must (Linux hands it to its
    /// stack whole, as GRO would). Only for a client that takes it
    /// ([`Netback::client_takes_gso`]); else [`NetbackError::BadFrame`], counted.
    pub fn send_gso(&mut self, frame: &[u8], mss: u16) -> Result<(), NetbackError> {
        let r = self.check_send(frame, RxChecksum::Blank).and_then(|()| {
            match netif::gso_type_of(frame) {
                Some(t) if mss > 0 && self.client_takes_gso(frame) => Ok(t),
                _ => Err(NetbackError::BadFrame),
            }
        });
        match r {
            Ok(t) => {
                self.queue(frame, RxChecksum::Blank, Some((mss, t)));
                Ok(())
            }
            Err(e) => {
                self.stats.tx_dropped += 1;
                Err(e)
            }
        }
    }

    fn queue(&mut self, frame: &[u8], csum: RxChecksum, gso: Option<(u16, u8)>) {
        self.to_client_bytes += frame.len();
        self.to_client.push_back(Outgoing {
            frame: frame.to_vec(),
            csum,
            gso,
        });
    }

    /// Queues a frame for the client, saying what is known of its checksum:
    /// `Validated` (`NETRXF_data_validated`), or `Blank` (`NETRXF_csum_blank`: only
    /// for a client that takes them, IPv4, or IPv6 when it wrote
    /// `feature-ipv6-csum-offload`). A frame refused is dropped and counted.
    pub fn send_with(&mut self, frame: &[u8], csum: RxChecksum) -> Result<(), NetbackError> {
        let r = self.check_send(frame, csum);
        match r {
            Ok(()) => self.queue(frame, csum, None),
            Err(_) => self.stats.tx_dropped += 1,
        }
        r
    }

    fn check_send(&self, frame: &[u8], csum: RxChecksum) -> Result<(), NetbackError> {
        if let Some(w) = &self.broken {
            return Err(NetbackError::Broken(w.clone()));
        }
        let Some(c) = self.conn.as_ref() else {
            return Err(NetbackError::NotConnected);
        };
        if frame.is_empty() || frame.len() > 65535 || (frame.len() > PAGE_BYTES && !c.fe_sg) {
            return Err(NetbackError::BadFrame);
        }
        if csum == RxChecksum::Blank {
            let ok = match ethertype(frame) {
                0x0800 => c.fe_csum_blank,
                0x86dd => c.fe_csum_blank && c.fe_ipv6_csum_blank,
                _ => false,
            };
            if !ok {
                return Err(NetbackError::BadFrame);
            }
        }
        let reserve = if frame.len() <= SMALL_FRAME {
            TO_CLIENT_SMALL_RESERVE
        } else {
            0
        };
        if self.to_client.len() >= TO_CLIENT_MAX + reserve
            || self.to_client_bytes + frame.len() > TO_CLIENT_MAX_BYTES + reserve * 1024
        {
            return Err(NetbackError::Busy);
        }
        Ok(())
    }

    /// Hands up to [`RX_BUDGET`] queued frames to the client: whether frames are
    /// left that buffers are posted for, and the last batch, whose copy is still to
    /// be made ([`Netback::flush`], with the client's packets').
    pub(super) fn gather_rx(&mut self) -> (bool, RxBatch) {
        let staging_bytes = RX_STAGING_PAGES * PAGE_BYTES;
        let mut batch: Vec<Pending> = Vec::new();
        let mut ops: Vec<Op> = Vec::new();
        let mut cursor = 0usize;
        let mut done = 0;
        self.stats.tx_polls += 1;
        while done < RX_BUDGET {
            let Some((len, need)) = self
                .to_client
                .front()
                .map(|f| (f.frame.len(), f.slots() as u32))
            else {
                break;
            };
            let Some(conn) = self.conn.as_mut() else {
                return (false, RxBatch::default());
            };
            let avail = match conn.rx.unconsumed() {
                Ok(n) if n >= need => n,
                // Too few buffers: ask for an event when the client posts more
                // (it writes `feature-rx-notify`), then look once more.
                Ok(_) => match conn.rx.final_check_for_requests() {
                    Ok(_) => conn.rx.unconsumed().unwrap_or(0),
                    Err(e) => {
                        self.fail(ring_error("rx", e));
                        return (false, RxBatch::default());
                    }
                },
                Err(e) => {
                    self.fail(ring_error("rx", e));
                    return (false, RxBatch::default());
                }
            };
            if avail < need {
                self.stats.tx_no_buffers += 1;
                break;
            }
            if cursor + len > staging_bytes {
                let full = (core::mem::take(&mut batch), core::mem::take(&mut ops));
                self.flush(Default::default(), full);
                cursor = 0;
            }
            let Some(out) = self.to_client.pop_front() else {
                break;
            };
            self.to_client_bytes -= len;
            let Some(conn) = self.conn.as_mut() else {
                return (false, RxBatch::default());
            };
            conn.rx_staging.mem().write_bytes(cursor, &out.frame);
            let first = ops.len();
            let mut slots = Vec::new();
            let mut raw = [0u8; RX_ENTRY_BYTES];
            let mut chunk = 0;
            for slot in 0..need as usize {
                match conn.rx.take_request(&mut raw) {
                    Ok(true) => {}
                    Ok(false) | Err(_) => {
                        self.fail("rx ring: buffers vanished".into());
                        return (false, RxBatch::default());
                    }
                }
                let (id, gref) = netif::decode_rx_request(&raw);
                // The extra goes right after the first data slot.
                if let (1, Some((_, kind))) = (slot, out.gso) {
                    slots.push(Slot::Extra(id, kind));
                    continue;
                }
                let start = chunk * PAGE_BYTES;
                let n = (len - start).min(PAGE_BYTES) as u16;
                split(&mut ops, cursor + start, gref, 0, n);
                slots.push(Slot::Data(id, n));
                chunk += 1;
            }
            self.stats.tx_gso += u64::from(out.gso.is_some());
            batch.push(Pending {
                slots,
                csum: out.csum,
                ops: first..ops.len(),
                gso_mss: out.gso.map_or(0, |g| g.0),
            });
            cursor += len;
            done += 1;
            self.stats.tx_handed += 1;
            self.stats.tx_slots += u64::from(need);
        }
        self.stats.tx_batches += u64::from(done > 0);
        let more = done >= RX_BUDGET && !self.to_client.is_empty();
        (more, (batch, ops))
    }

    /// After a batch's copy into the client's buffers (`statuses`: its ops'):
    /// answers every buffer.
    pub(super) fn finish_rx(&mut self, batch: Vec<Pending>, statuses: &[i16]) {
        if batch.is_empty() {
            return;
        }
        let Netback { conn, stats, .. } = self;
        let Some(conn) = conn.as_mut() else { return };
        let mut broken = None;
        for p in batch {
            let ok = statuses
                .get(p.ops.clone())
                .is_some_and(|s| s.iter().all(|&s| s == 0));
            let data = |s: &Slot| match *s {
                Slot::Data(_, n) => usize::from(n),
                Slot::Extra(..) => 0,
            };
            let bytes: usize = p.slots.iter().map(data).sum();
            if ok {
                stats.tx_packets += 1;
                stats.tx_bytes += bytes as u64;
            } else {
                stats.tx_errors += 1;
            }
            let last_data = p.slots.iter().rposition(|s| matches!(s, Slot::Data(..)));
            for (i, slot) in p.slots.iter().enumerate() {
                let raw = match *slot {
                    // A failed frame's slots are all answered as errors, each on its
                    // own (no flags): the frontend drops them one by one.
                    Slot::Extra(id, _) | Slot::Data(id, _) if !ok => {
                        netif::encode_rx_response(&RxResponse {
                            id,
                            offset: 0,
                            flags: 0,
                            status: netif::RSP_ERROR,
                        })
                    }
                    Slot::Extra(_, kind) => netif::encode_rx_gso_extra(p.gso_mss, kind),
                    Slot::Data(id, n) => {
                        let mut flags = if Some(i) != last_data {
                            netif::NETRXF_MORE_DATA
                        } else {
                            0
                        };
                        if i == 0 {
                            flags |= match p.csum {
                                RxChecksum::Unknown => 0,
                                RxChecksum::Validated => netif::NETRXF_DATA_VALIDATED,
                                RxChecksum::Blank => {
                                    netif::NETRXF_CSUM_BLANK | netif::NETRXF_DATA_VALIDATED
                                }
                            };
                            if p.gso_mss != 0 {
                                flags |= netif::NETRXF_EXTRA_INFO;
                            }
                        }
                        netif::encode_rx_response(&RxResponse {
                            id,
                            offset: 0,
                            flags,
                            status: n as i16,
                        })
                    }
                };
                if let Err(e) = conn.rx.push_response(&raw) {
                    broken = Some(ring_error("rx", e));
                }
            }
        }
        publish(
            &mut conn.rx,
            &mut conn.owed,
            [&mut stats.tx_notify_sent, &mut stats.tx_notify_suppressed],
        );
        if let Some(why) = broken {
            self.fail(why);
        }
    }
}
