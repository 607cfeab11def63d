//! Connecting a live vif again, to a backend it did not start with:
//! - after the domain was restored or migrated (`xl restore`, `xl migrate`), as
//!   Linux's `netfront_resume`: the queues' rings, grants and event channels belong
//!   to a domain that is gone, and a new backend waits at InitWait ([`Netfront::resume`]);
//! - after its backend went away and came back (`xl network-detach` and
//!   `network-attach` with the same MAC, a driver domain restarted): the queues are
//!   given back when it goes ([`Netfront::detach`]) and set up anew with the new
//!   backend ([`Netfront::reattach`]), the vif (its owner's interface, addresses,
//!   counters) kept meanwhile.

use super::{xenbus, NetError, Netfront};
use crate::platform::XenPlatform;

impl<P: XenPlatform> Netfront<P> {
    /// After the domain was restored or migrated (`xl restore`, `xl migrate`): the
    /// old rings, grants and event channels are gone with the old domain, and the
    /// vif's backend (a new one, possibly in another domain) waits at InitWait. The
    /// old queues are forgotten (their pages freed, their grant references free again),
    /// the handshake runs again and new queues take their place; frames received and
    /// not yet taken, and the counters, are kept. Returns the sends that were in
    /// flight (lost: TCP sends them again). If the handshake fails the vif is broken,
    /// with the reason.
    pub fn resume(&mut self) -> Result<usize, NetError> {
        // What the old backend answered before the domain went is in the old rings'
        // memory: sends it completed are not lost.
        self.reap_tx();
        let mut lost = 0;
        for q in core::mem::take(&mut self.link.queues) {
            lost += q.forget(&self.platform);
        }
        self.rx_next = 0;
        match xenbus::connect(&self.platform, self.id, self.max_queues) {
            Ok(link) => {
                // The toolstack keeps a vif's MAC across a save; a new one is taken
                // as it is (the stack learns it at the next frame).
                self.link = link;
                self.broken = None;
                self.stats.tx_errors += lost as u64;
                Ok(lost)
            }
            Err(e) => {
                self.broken = Some(alloc::format!("not reconnected after a restore: {e}"));
                Err(e)
            }
        }
    }

    /// The backend went away (it is closing, or its device directory is gone): the
    /// queues are given back as at a release ([`Netfront::release_after`]: with
    /// `backend_closed` every grant ended and page freed, without it every grant and
    /// page kept for good) and the vif is broken until [`Netfront::reattach`].
    /// Returns the (buffer, ring) pages freed.
    pub fn detach(&mut self, backend_closed: bool) -> (usize, usize) {
        let queues = core::mem::take(&mut self.link.queues);
        self.rx_next = 0;
        if self.broken.is_none() || !self.detached {
            self.broken = Some(alloc::string::String::from(
                "the backend went away; waiting for it to come back",
            ));
        }
        self.detached = true;
        xenbus::disconnect(&self.platform, queues, backend_closed)
    }

    /// Whether the vif lost its backend ([`Netfront::detach`]) and waits for one.
    pub fn is_detached(&self) -> bool {
        self.detached
    }

    /// Connects a detached vif to the device `device/vif/<id>` (a backend that came
    /// back, possibly under another device id) with the same MAC. Fails, leaving the
    /// vif detached, if the handshake fails or the device's MAC is another.
    pub fn reattach(&mut self, id: u32) -> Result<(), NetError> {
        if !self.detached {
            return Err(NetError::Handshake(alloc::string::String::from(
                "not detached",
            )));
        }
        let mac = self
            .platform
            .xs_read(&alloc::format!("device/vif/{id}/mac"))
            .ok()
            .and_then(|m| xenbus::parse_mac(&m));
        if mac != Some(self.link.mac) {
            return Err(NetError::Handshake(alloc::format!(
                "device {id} has another MAC"
            )));
        }
        self.link = xenbus::connect(&self.platform, id, self.max_queues)?;
        self.id = id;
        self.broken = None;
        self.detached = false;
        Ok(())
    }
}
