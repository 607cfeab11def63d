//! Our frames to the client (its RX ring): queued by [`Netback::send`], copied at
//! the next poll into our staging pages and from there, with batched grant copies,
//! into the buffers the client posted; every buffer answered.

use super::tx::{copy_batch, publish, split, Op};
use super::{
    ring_error, Netback, NetbackError, RxChecksum, RX_BUDGET, RX_STAGING_PAGES, TO_CLIENT_MAX,
    TO_CLIENT_MAX_BYTES,
};
use crate::netif::{self, RxResponse, RX_ENTRY_BYTES};
use crate::platform::{CopyDir, XenBackend};
use alloc::vec::Vec;
use xenlet_xen::shared::PAGE_BYTES;

/// A frame waiting for its batch's copy: the client's buffers it takes (id, bytes).
struct Pending {
    slots: Vec<(u16, u16)>,
    csum: RxChecksum,
    ops: core::ops::Range<usize>,
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

    /// Queues a frame for the client (checksums complete, or at least not vouched
    /// for: it checks them). Copied at the next [`Netback::poll`].
    pub fn send(&mut self, frame: &[u8]) -> Result<(), NetbackError> {
        self.send_with(frame, RxChecksum::Unknown)
    }

    /// Queues a frame for the client, saying what is known of its checksum:
    /// `Validated` (`NETRXF_data_validated`), or `Blank` (`NETRXF_csum_blank`: only
    /// for a client that takes them, IPv4, or IPv6 when it wrote
    /// `feature-ipv6-csum-offload`). A frame refused is dropped and counted.
    pub fn send_with(&mut self, frame: &[u8], csum: RxChecksum) -> Result<(), NetbackError> {
        let r = self.check_send(frame, csum);
        match r {
            Ok(()) => {
                self.to_client_bytes += frame.len();
                self.to_client.push_back((frame.to_vec(), csum));
            }
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
        if self.to_client.len() >= TO_CLIENT_MAX
            || self.to_client_bytes + frame.len() > TO_CLIENT_MAX_BYTES
        {
            return Err(NetbackError::Busy);
        }
        Ok(())
    }

    /// Hands up to [`RX_BUDGET`] queued frames to the client; true if frames are
    /// left that buffers are posted for.
    pub(super) fn poll_rx(&mut self) -> bool {
        let staging_bytes = RX_STAGING_PAGES * PAGE_BYTES;
        let mut batch: Vec<Pending> = Vec::new();
        let mut ops: Vec<Op> = Vec::new();
        let mut cursor = 0usize;
        let mut done = 0;
        self.stats.tx_polls += 1;
        while done < RX_BUDGET {
            let Some(len) = self.to_client.front().map(|f| f.0.len()) else {
                break;
            };
            let need = len.div_ceil(PAGE_BYTES) as u32;
            let Some(conn) = self.conn.as_mut() else {
                return false;
            };
            let avail = match conn.rx.unconsumed() {
                Ok(n) if n >= need => n,
                // Too few buffers: ask for an event when the client posts more
                // (it writes `feature-rx-notify`), then look once more.
                Ok(_) => match conn.rx.final_check_for_requests() {
                    Ok(_) => conn.rx.unconsumed().unwrap_or(0),
                    Err(e) => {
                        self.fail(ring_error("rx", e));
                        return false;
                    }
                },
                Err(e) => {
                    self.fail(ring_error("rx", e));
                    return false;
                }
            };
            if avail < need {
                self.stats.tx_no_buffers += 1;
                break;
            }
            if cursor + len > staging_bytes {
                self.flush_rx(core::mem::take(&mut batch), core::mem::take(&mut ops));
                cursor = 0;
            }
            let Some((frame, csum)) = self.to_client.pop_front() else {
                break;
            };
            self.to_client_bytes -= frame.len();
            let Some(conn) = self.conn.as_mut() else {
                return false;
            };
            conn.rx_staging.mem().write_bytes(cursor, &frame);
            let first = ops.len();
            let mut slots = Vec::new();
            let mut raw = [0u8; RX_ENTRY_BYTES];
            for chunk in 0..need as usize {
                match conn.rx.take_request(&mut raw) {
                    Ok(true) => {}
                    Ok(false) | Err(_) => {
                        self.fail("rx ring: buffers vanished".into());
                        return false;
                    }
                }
                let (id, gref) = netif::decode_rx_request(&raw);
                let start = chunk * PAGE_BYTES;
                let n = (len - start).min(PAGE_BYTES) as u16;
                split(&mut ops, cursor + start, gref, 0, n);
                slots.push((id, n));
            }
            batch.push(Pending {
                slots,
                csum,
                ops: first..ops.len(),
            });
            cursor += len;
            done += 1;
            self.stats.tx_handed += 1;
            self.stats.tx_slots += u64::from(need);
        }
        self.stats.tx_batches += u64::from(done > 0);
        self.flush_rx(batch, ops);
        done >= RX_BUDGET && !self.to_client.is_empty()
    }

    /// Copies a batch into the client's buffers (one grant-copy call) and answers
    /// every buffer.
    fn flush_rx(&mut self, batch: Vec<Pending>, ops: Vec<Op>) {
        if batch.is_empty() {
            return;
        }
        let Netback {
            platform,
            conn,
            fe_id,
            stats,
            ..
        } = self;
        let Some(conn) = conn.as_mut() else { return };
        let statuses = copy_batch(
            platform,
            &conn.rx_staging,
            *fe_id,
            CopyDir::ToRemote,
            &ops,
            stats,
        );
        let mut broken = None;
        for p in batch {
            let ok = statuses[p.ops.clone()].iter().all(|&s| s == 0);
            let bytes: usize = p.slots.iter().map(|s| usize::from(s.1)).sum();
            if ok {
                stats.tx_packets += 1;
                stats.tx_bytes += bytes as u64;
            } else {
                stats.tx_errors += 1;
            }
            let last = p.slots.len() - 1;
            for (i, &(id, n)) in p.slots.iter().enumerate() {
                let mut flags = if i < last { netif::NETRXF_MORE_DATA } else { 0 };
                if i == 0 {
                    flags |= match p.csum {
                        RxChecksum::Unknown => 0,
                        RxChecksum::Validated => netif::NETRXF_DATA_VALIDATED,
                        RxChecksum::Blank => {
                            netif::NETRXF_CSUM_BLANK | netif::NETRXF_DATA_VALIDATED
                        }
                    };
                }
                let rsp = if ok {
                    RxResponse {
                        id,
                        offset: 0,
                        flags,
                        status: n as i16,
                    }
                } else {
                    RxResponse {
                        id,
                        offset: 0,
                        flags: 0,
                        status: netif::RSP_ERROR,
                    }
                };
                if let Err(e) = conn.rx.push_response(&netif::encode_rx_response(&rsp)) {
                    broken = Some(ring_error("rx", e));
                }
            }
        }
        publish(
            platform,
            &mut conn.rx,
            conn.port,
            &mut stats.notifies,
            [&mut stats.tx_notify_sent, &mut stats.tx_notify_suppressed],
        );
        if let Some(why) = broken {
            self.fail(why);
        }
    }
}
