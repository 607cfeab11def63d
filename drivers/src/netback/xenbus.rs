//! The backend's side of the xenbus handshake: probe (read what the toolstack wrote,
//! advertise, InitWait), connect (map the rings the frontend granted, bind its event
//! channel, Connected), disconnect (unbind, unmap) and close (Closed), following
//! the frontend's and the toolstack's states.

use super::guard::{parse_rate, Credit, SourceFilter};
use super::{Conn, Netback, NetbackError, NetbackStats, RX_STAGING_PAGES, TX_STAGING_PAGES};
use crate::netfront::parse_mac;
use crate::netif::{RX_ENTRY_BYTES, TX_ENTRY_BYTES};
use crate::platform::{read_state, XenBackend};
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::{String, ToString};
use xenlet_xen::gnttab::status_name;
use xenlet_xen::ring::BackRing;
use xenlet_xen::xenbus::XenbusState;
use xenlet_xen::xenstore::XsError;

/// Where the backend is in the handshake (what it last wrote to its `state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackState {
    /// Waiting for the frontend to publish its rings (2).
    InitWait,
    /// Rings mapped, event channel bound (4).
    Connected,
    /// The frontend is closing; rings unmapped (5).
    Closing,
    /// Closed (6): rings unmapped. The frontend may start over (then InitWait).
    Closed,
    /// The backend directory is gone (the toolstack removed it).
    Gone,
}

impl BackState {
    fn number(self) -> Option<u32> {
        Some(match self {
            BackState::InitWait => 2,
            BackState::Connected => 4,
            BackState::Closing => 5,
            BackState::Closed => 6,
            BackState::Gone => return None,
        })
    }
}

/// The features this backend offers, written at probe: only what it implements.
/// `feature-gso-tcpv4`/`-tcpv6`: the client may send TCP packets of up to 64 KiB
/// with a GSO extra (its segment size goes on with the frame,
/// [`super::ClientFrame::gso`]); the router forwards them whole to a link that
/// takes GSO and cuts them for one that does not. `feature-ipv6-csum-offload`: it
/// may send IPv6 TCP/UDP with a partial checksum (`NETTXF_csum_blank`), as it may
/// IPv4's by default. What goes *to* the client follows what the client wrote.
pub(super) const FEATURES: [(&str, &str); 6] = [
    ("feature-sg", "1"),
    ("feature-gso-tcpv4", "1"),
    ("feature-gso-tcpv6", "1"),
    ("feature-ipv6-csum-offload", "1"),
    ("feature-rx-copy", "1"),
    ("feature-rx-flip", "0"),
];

fn is_enoent(e: &XsError) -> bool {
    matches!(e, XsError::Remote(x) if x == "ENOENT")
}

impl<P: XenBackend> Netback<P> {
    /// Takes on the backend directory `backend_path` (`backend/vif/<fe>/<devid>`,
    /// relative to this domain's home or absolute): reads `frontend-id`, `frontend`,
    /// `mac` (the client's), `bridge` and `ip`, writes the features and goes
    /// InitWait. Nothing is mapped or allocated until the frontend connects.
    pub fn probe(platform: P, backend_path: &str) -> Result<Self, NetbackError> {
        let path = backend_path.trim_end_matches('/').to_string();
        let read = |k: &str| platform.xs_read(&format!("{path}/{k}"));
        let need = |k: &str| read(k).map_err(|e| NetbackError::Probe(format!("{path}/{k}: {e:?}")));
        let fe_id: u16 = need("frontend-id")?
            .trim()
            .parse()
            .map_err(|_| NetbackError::Probe(format!("{path}/frontend-id is not a domain id")))?;
        let devid: u32 = path
            .rsplit('/')
            .next()
            .and_then(|d| d.parse().ok())
            .ok_or_else(|| NetbackError::Probe(format!("{path}: no device id at its end")))?;
        let fe_path = need("frontend")?.trim().to_string();
        // The toolstack writes it, but it names where we read the frontend's ring
        // references from: it must be that frontend domain's own directory.
        let fe_home = format!("/local/domain/{fe_id}/");
        if !fe_path.starts_with(&fe_home) || fe_path.contains("..") {
            return Err(NetbackError::Probe(format!(
                "{path}/frontend = {fe_path} is not under {fe_home}"
            )));
        }
        let mac = read("mac")
            .ok()
            .and_then(|m| parse_mac(&m))
            .or_else(|| {
                platform
                    .xs_read(&format!("{fe_path}/mac"))
                    .ok()
                    .and_then(|m| parse_mac(&m))
            })
            .ok_or_else(|| NetbackError::Probe(format!("{path}/mac missing or malformed")))?;
        let nb = Netback {
            bridge: read("bridge").ok().filter(|b| !b.is_empty()),
            ip: read("ip").ok().filter(|b| !b.is_empty()),
            filter: None,
            credit: None,
            platform,
            path,
            fe_path,
            fe_id,
            devid,
            mac,
            state: BackState::InitWait,
            conn: None,
            received: VecDeque::new(),
            received_bytes: 0,
            to_client: VecDeque::new(),
            to_client_bytes: 0,
            broken: None,
            stats: NetbackStats::default(),
        };
        nb.advertise()?;
        Ok(nb)
    }

    /// Writes the features and state InitWait.
    fn advertise(&self) -> Result<(), NetbackError> {
        for (k, v) in FEATURES {
            self.write(k, v)?;
        }
        self.write("state", "2")
    }

    fn write(&self, key: &str, value: &str) -> Result<(), NetbackError> {
        self.platform
            .xs_write(&format!("{}/{key}", self.path), value)
            .map_err(|e| NetbackError::XenStore(format!("{}/{key}: {e:?}", self.path)))
    }

    /// Writes the state, unless the directory is gone (a write would create it
    /// again: the toolstack removes it once we are Closed). Linux checks the same
    /// inside a transaction; without one the window is only narrowed.
    fn set_state(&mut self, s: BackState) -> Result<(), NetbackError> {
        let Some(n) = s.number() else {
            self.state = s;
            return Ok(());
        };
        match self.platform.xs_read(&format!("{}/state", self.path)) {
            Err(e) if is_enoent(&e) => {
                self.state = BackState::Gone;
                Ok(())
            }
            _ => {
                self.state = s;
                self.write("state", &format!("{n}"))
            }
        }
    }

    /// Follows the frontend's state and the toolstack's: connects, disconnects,
    /// closes, starts over. Returns the state now. A connect that fails leaves the
    /// backend Closing (the frontend then closes too) and returns the reason.
    pub fn poll_xenbus(&mut self) -> Result<BackState, NetbackError> {
        if self.state == BackState::Gone {
            return Ok(BackState::Gone);
        }
        let be = match self.platform.xs_read(&format!("{}/state", self.path)) {
            Ok(s) => XenbusState::parse(&s),
            Err(e) if is_enoent(&e) => {
                // The toolstack removed the directory: nothing left to write to.
                self.disconnect();
                self.state = BackState::Gone;
                return Ok(BackState::Gone);
            }
            Err(e) => {
                return Err(NetbackError::XenStore(format!(
                    "{}/state: {e:?}",
                    self.path
                )))
            }
        };
        // The toolstack asks for the device's removal by writing Closing itself
        // (libxl's device remove, `online` = 0): unmap and go Closed, which it
        // waits for before it removes the directory.
        if be == Some(XenbusState::Closing)
            && !matches!(self.state, BackState::Closing | BackState::Closed)
        {
            self.disconnect();
            self.set_state(BackState::Closed)?;
            return Ok(self.state);
        }
        let online = self
            .platform
            .xs_read(&format!("{}/online", self.path))
            .map(|v| v.trim() != "0")
            .unwrap_or(true);
        let fe = read_state(&self.platform, &format!("{}/state", self.fe_path));
        match fe {
            None | Some(XenbusState::Unknown | XenbusState::Closed) => {
                self.disconnect();
                if self.state != BackState::Closed {
                    self.set_state(BackState::Closed)?;
                }
            }
            Some(XenbusState::Closing) => {
                self.disconnect();
                if !matches!(self.state, BackState::Closing | BackState::Closed) {
                    self.set_state(BackState::Closing)?;
                }
            }
            Some(XenbusState::Initialised | XenbusState::Connected) => {
                if self.state == BackState::Connected && self.conn.is_some() {
                    // the toolstack may have changed `ip` or `rate`
                    self.read_limits();
                }
                if self.state == BackState::InitWait {
                    if let Err(why) = self.connect() {
                        let _ = self.write("error", &why);
                        self.set_state(BackState::Closing)?;
                        return Err(NetbackError::Handshake(why));
                    }
                    // a failure of an earlier attempt is history now
                    let _ = self.platform.xs_rm(&format!("{}/error", self.path));
                    self.set_state(BackState::Connected)?;
                }
            }
            Some(XenbusState::Initialising | XenbusState::InitWait) => match self.state {
                // The frontend starts over (its driver reloaded, or it rebooted
                // without closing): drop the old rings, wait for the new ones.
                BackState::Connected => {
                    self.disconnect();
                    self.advertise()?;
                    self.state = BackState::InitWait;
                }
                BackState::Closed | BackState::Closing if online => {
                    self.advertise()?;
                    self.state = BackState::InitWait;
                }
                _ => {}
            },
            Some(XenbusState::Reconfiguring | XenbusState::Reconfigured) => {}
        }
        Ok(self.state)
    }

    /// Reads the frontend's keys, maps its rings, binds its event channel and
    /// allocates the staging pages; undoes all of it on any failure.
    fn connect(&mut self) -> Result<(), String> {
        let p = &self.platform;
        let fe = &self.fe_path;
        let read = |k: &str| p.xs_read(&format!("{fe}/{k}")).ok();
        let num = |k: &str| -> Result<u32, String> {
            read(k)
                .ok_or_else(|| format!("{fe}/{k} missing"))?
                .trim()
                .parse()
                .map_err(|_| format!("{fe}/{k} is not a number"))
        };
        let flag = |k: &str| read(k).is_some_and(|v| v.trim() == "1");
        if read("multi-queue-num-queues").is_some_and(|v| v.trim() != "1") {
            return Err("frontend asks for several queues; none offered".into());
        }
        if !flag("request-rx-copy") {
            return Err("frontend does not ask for rx-copy (flipping is not offered)".into());
        }
        if read("event-channel").is_none()
            && (read("event-channel-tx").is_some() || read("event-channel-rx").is_some())
        {
            return Err("frontend uses split event channels; not offered".into());
        }
        let tx_ref = num("tx-ring-ref")?;
        let rx_ref = num("rx-ring-ref")?;
        let evtchn = num("event-channel")?;
        let fe_sg = flag("feature-sg");
        let fe_csum_blank = !flag("feature-no-csum-offload");
        let fe_ipv6_csum_blank = flag("feature-ipv6-csum-offload");
        let fe_gso_tcpv4 = fe_sg && fe_csum_blank && flag("feature-gso-tcpv4");
        let fe_gso_tcpv6 =
            fe_sg && fe_csum_blank && fe_ipv6_csum_blank && flag("feature-gso-tcpv6");
        let id = self.fe_id;
        let tx_page = p
            .map_grant(id, tx_ref, true)
            .map_err(|s| format!("mapping tx-ring-ref {tx_ref}: {}", status_name(s)))?;
        let rx_page = match p.map_grant(id, rx_ref, true) {
            Ok(pg) => pg,
            Err(s) => {
                self.unmap(tx_page);
                return Err(format!("mapping rx-ring-ref {rx_ref}: {}", status_name(s)));
            }
        };
        let tx_staging = p.alloc_pages(TX_STAGING_PAGES);
        let rx_staging = p.alloc_pages(RX_STAGING_PAGES);
        let port = p.bind_interdomain(id, evtchn);
        match (tx_staging, rx_staging, port) {
            (Some(tx_staging), Some(rx_staging), Ok(port)) => {
                self.conn = Some(Conn {
                    tx: BackRing::attach(tx_page, TX_ENTRY_BYTES),
                    rx: BackRing::attach(rx_page, RX_ENTRY_BYTES),
                    port,
                    fe_sg,
                    fe_csum_blank,
                    fe_ipv6_csum_blank,
                    fe_gso_tcpv4,
                    fe_gso_tcpv6,
                    tx_staging,
                    rx_staging,
                    held: None,
                    owed: false,
                });
                self.broken = None;
                self.credit = None;
                self.read_limits();
                Ok(())
            }
            (tx_staging, rx_staging, port) => {
                let why = match &port {
                    Err(e) => format!("binding event-channel {evtchn}: {e}"),
                    Ok(_) => "no memory for the staging pages".into(),
                };
                if let Ok(port) = port {
                    self.platform.close_port(port);
                }
                for pages in [tx_staging, rx_staging].into_iter().flatten() {
                    self.platform.free_pages(pages);
                }
                self.unmap(tx_page);
                self.unmap(rx_page);
                Err(why)
            }
        }
    }

    /// Reads the toolstack's `ip` and `rate` keys (see `guard`): at connect (a
    /// full credit, as Linux's connect gives), and again whenever the backend
    /// directory changes while connected (Linux watches `rate` so): a new filter
    /// applies to the next frame, a new rate starts a new credit, the same rate
    /// keeps the credit it has.
    pub(super) fn read_limits(&mut self) {
        let read = |k: &str| self.platform.xs_read(&format!("{}/{k}", self.path)).ok();
        self.ip = read("ip").filter(|v| !v.trim().is_empty());
        self.filter = self.ip.as_deref().and_then(SourceFilter::parse);
        let now = self.platform.now_ns();
        let rate = read("rate").and_then(|r| parse_rate(r.trim()));
        if rate != self.rate() {
            self.credit = rate.map(|(bytes, usec)| Credit::new(bytes, usec, now));
        }
    }

    fn unmap(&mut self, page: crate::platform::ForeignPage) {
        if !self.platform.unmap_grant(page) {
            self.stats.unmap_failures += 1;
        }
    }

    /// Unbinds the event channel, unmaps the rings and frees the staging pages (no
    /// grant of ours names them: copies only ever ran inside a poll). Frames still
    /// queued for the client are dropped and counted; those received stay for
    /// [`Netback::recv`].
    pub(super) fn disconnect(&mut self) {
        let Some(c) = self.conn.take() else { return };
        self.platform.close_port(c.port);
        self.unmap(c.tx.into_page());
        self.unmap(c.rx.into_page());
        self.platform.free_pages(c.tx_staging);
        self.platform.free_pages(c.rx_staging);
        self.stats.tx_dropped += self.to_client.len() as u64;
        self.to_client.clear();
        self.to_client_bytes = 0;
    }

    /// Whether the toolstack took the device offline (`online` = 0: `xl
    /// network-detach`, or the client domain destroyed): once Closed, the driver
    /// domain removes the backend directory itself (libxl leaves that to it).
    pub fn removal_requested(&self) -> bool {
        self.platform
            .xs_read(&format!("{}/online", self.path))
            .is_ok_and(|v| v.trim() == "0")
    }

    /// Unbinds, unmaps and goes Closed (if the directory is still there).
    pub fn close(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        self.disconnect();
        if !matches!(self.state, BackState::Closed | BackState::Gone) {
            let _ = self.set_state(BackState::Closed);
        }
    }
}

impl<P: XenBackend> Drop for Netback<P> {
    /// A vif dropped without [`Netback::close`] is closed all the same: its rings
    /// are never left mapped.
    fn drop(&mut self) {
        self.shut();
    }
}
