//! The reconnect after the domain was restored or migrated (`xl restore`, `xl
//! migrate`), as Linux's `netfront_resume`: the queues' rings, grants and event
//! channels belong to a domain that is gone, and a new backend waits at InitWait.

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
}
