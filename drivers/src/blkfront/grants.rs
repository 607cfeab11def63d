//! Per-request grants and the pages behind them: ending them when a request
//! completes, quarantining a page the backend still maps (never reused, as Linux
//! does since XSA-396), keeping an unanswered request's grants until the teardown,
//! and the teardown itself ([`Blkfront::release`]).

use super::{xenbus, Blkfront, IoBuf};
use crate::platform::XenPlatform;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_xen::gnttab::Grant;

/// The page a per-request grant is for: a data buffer or an indirect page of the
/// request (index into its `bufs` / `indirect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Held {
    Buf(usize),
    Indirect(usize),
}

/// A page the backend still maps after its grant was to end: kept with the grant
/// for good, never reused (as Linux does since XSA-396).
pub(super) struct Quarantined {
    pub(super) _page: Option<IoBuf>,
    pub(super) _grant: Option<Grant>,
}

/// One abandoned request's grants and pages (see `Blkfront::abandoned`).
pub(super) struct Abandoned {
    pub(super) grants: Vec<(Grant, Held)>,
    pub(super) bufs: Vec<IoBuf>,
    pub(super) indirect: Vec<IoBuf>,
}

impl<P: XenPlatform> Blkfront<P> {
    /// Gives the device up (the backend is closing, or the disk was detached):
    /// in-flight requests fail with `why`, every grant is ended, and the pages whose
    /// grant ended (buffers, indirect pages, the ring) go back to the platform; a page
    /// the backend still maps is never freed (it is leaked with its grant, as Linux
    /// does since XSA-396), and the event channel is closed. Returns (pages freed,
    /// pages kept back).
    pub fn release(self, why: String) -> (usize, usize) {
        self.release_after(why, true)
    }

    /// As [`Blkfront::release`], saying whether the backend closed (followed the
    /// frontend to Closed). If it did not (the close timed out: a backend that is
    /// stuck, or hostile), it may still consume the requests it never answered:
    /// their grants are never ended and their pages never freed (quarantined for
    /// good), so no stale request can reach a reused reference.
    pub fn release_after(mut self, why: String, backend_closed: bool) -> (usize, usize) {
        self.fail(why);
        if !backend_closed {
            for a in core::mem::take(&mut self.abandoned) {
                let Abandoned {
                    grants,
                    bufs,
                    indirect,
                } = a;
                self.stats.quarantined_pages += (bufs.len() + indirect.len()) as u64;
                for (g, _) in grants {
                    self.quarantine.push(Quarantined {
                        _page: None,
                        _grant: Some(g),
                    });
                }
                for b in bufs.into_iter().chain(indirect) {
                    // its persistent grant (if any) stays with it
                    self.quarantine.push(Quarantined {
                        _page: Some(b),
                        _grant: None,
                    });
                }
            }
        }
        // The backend is gone: the requests it never answered end their grants
        // now (a page it still maps is quarantined, never reused).
        let from_abandoned = self.end_abandoned();
        let mut freed = 0;
        let mut kept = self.quarantine.len();
        let mut bufs: Vec<IoBuf> = core::mem::take(&mut self.pool);
        bufs.extend(from_abandoned);
        for c in core::mem::take(&mut self.done) {
            bufs.extend(c.bufs);
        }
        for b in bufs {
            let IoBuf { page, grant } = b;
            let ended = match grant {
                Some((g, _)) => self.platform.end_grant(g).map_err(|g| {
                    self.quarantine.push(Quarantined {
                        _page: None,
                        _grant: Some(g),
                    })
                }),
                None => Ok(()),
            };
            if ended.is_ok() {
                self.platform.free_pages(page);
                freed += 1;
            } else {
                // Still mapped: the page is not given back (a DmaPages that is not
                // freed leaves its frames allocated), so it is never reused.
                kept += 1;
            }
        }
        let Blkfront {
            platform,
            link,
            quarantine,
            ..
        } = self;
        let (ring_freed, ring_kept) = xenbus::disconnect(&platform, link);
        freed += ring_freed;
        kept += ring_kept;
        // Quarantined pages stay allocated for good (dropping them frees nothing).
        drop(quarantine);
        (freed, kept)
    }

    /// Ends the grants of the requests abandoned when the device broke (no backend
    /// holds them any more: it closed, or the domain moved); a page one still maps
    /// is quarantined. Returns their pages.
    pub(super) fn end_abandoned(&mut self) -> Vec<IoBuf> {
        let mut pages = Vec::new();
        for a in core::mem::take(&mut self.abandoned) {
            let Abandoned {
                grants,
                mut bufs,
                mut indirect,
            } = a;
            self.end_grants(grants, &mut bufs, &mut indirect);
            pages.extend(bufs);
            pages.extend(indirect);
        }
        pages
    }

    /// Ends per-request `grants`. A page whose grant the backend still maps is
    /// taken out of `bufs` / `indirect` and quarantined with its grant. Returns how
    /// many pages were quarantined.
    pub(super) fn end_grants(
        &mut self,
        grants: Vec<(Grant, Held)>,
        bufs: &mut Vec<IoBuf>,
        indirect: &mut Vec<IoBuf>,
    ) -> usize {
        let mut held: Vec<(Grant, Held)> = Vec::new();
        for (g, h) in grants {
            if let Err(g) = self.platform.end_grant(g) {
                held.push((g, h));
            }
        }
        // Take pages out from the highest index down, so the lower ones stay put.
        held.sort_by_key(|(_, h)| core::cmp::Reverse(*h));
        let mut n = 0;
        for (g, h) in held {
            self.stats.leaked_grants += 1;
            let page = match h {
                Held::Buf(i) if i < bufs.len() => Some(bufs.remove(i)),
                Held::Indirect(i) if i < indirect.len() => Some(indirect.remove(i)),
                // Not reachable (indexes come from `start`); the grant is kept.
                _ => None,
            };
            self.quarantine.push(Quarantined {
                _page: page,
                _grant: Some(g),
            });
            self.stats.quarantined_pages += 1;
            n += 1;
        }
        n
    }
}
