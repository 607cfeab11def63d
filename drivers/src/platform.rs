//! What the Xen frontends need from the kernel, as a trait: XenStore, grants, event
//! channels and grantable memory. The kernel implements it over its Xen layer; host
//! tests implement it over heap pages. Keeping drivers behind this seam keeps them
//! free of `unsafe` and of the kernel's globals.

use alloc::string::String;
use xenlet_xen::evtchn::Port;
use xenlet_xen::gnttab::{Access, Grant, GrantError};
use xenlet_xen::xenstore::XsError;
use xenlet_xen::XenError;

/// Grantable pages: owned and opaque, made only by the kernel (see
/// [`xenlet_xen::shared::DmaPages`]). A driver cannot forge them to name memory of
/// its choice: the fields are private,
///
/// ```compile_fail,E0451
/// fn forge(mem: xenlet_xen::shared::SharedPage) -> xenlet_drivers::platform::DmaPages {
///     xenlet_drivers::platform::DmaPages { mem, gfn: 0x100, count: 1 }
/// }
/// ```
///
/// and the constructor is `unsafe`, which the drivers forbid:
///
/// ```compile_fail
/// #![forbid(unsafe_code)]
/// fn forge(mem: xenlet_xen::shared::SharedPage) -> xenlet_drivers::platform::DmaPages {
///     // SAFETY: never compiled: the lint refuses it, which is the point.
///     unsafe { xenlet_drivers::platform::DmaPages::from_frames(mem, 0x100, 1) }
/// }
/// ```
///
/// (without the `forbid`, the same compiles: the failure above is the lint's)
///
/// ```
/// fn forge(mem: xenlet_xen::shared::SharedPage) -> xenlet_drivers::platform::DmaPages {
///     // SAFETY: not called; shows only that the path and types are right.
///     unsafe { xenlet_drivers::platform::DmaPages::from_frames(mem, 0x100, 1) }
/// }
/// ```
pub use xenlet_xen::shared::DmaPages;

/// A XenStore watch a frontend set with [`XenPlatform::xs_watch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watch {
    /// The watched path (the node and everything below it).
    pub path: String,
    /// The token its events carry.
    pub token: String,
}

/// Kernel services for frontends.
pub trait XenPlatform {
    /// XenStore read (paths relative to the domain's home, or absolute).
    fn xs_read(&self, path: &str) -> Result<String, XsError>;
    /// XenStore write.
    fn xs_write(&self, path: &str, value: &str) -> Result<(), XsError>;
    /// XenStore remove: the node and everything below it (a missing node is no
    /// error).
    fn xs_rm(&self, path: &str) -> Result<(), XsError>;
    /// Sets a XenStore watch on `path`. Like every XenStore watch it fires once when
    /// set, then after each change of the node or below it.
    fn xs_watch(&self, path: &str) -> Result<Watch, XsError>;
    /// Removes a watch (its pending events are dropped).
    fn xs_unwatch(&self, watch: Watch);
    /// Waits until `watch` fires (an event since the last call counts) or the clock
    /// ([`XenPlatform::now_ns`]) reaches `deadline_ns`; true if it fired.
    fn wait_watch(&self, watch: &Watch, deadline_ns: u64) -> bool;
    /// `count` physically contiguous, zeroed pages.
    fn alloc_pages(&self, count: usize) -> Option<DmaPages>;
    /// Gives pages back (only once no grant refers to them).
    fn free_pages(&self, pages: DmaPages);
    /// Grants `domid` access to page `index` of `pages` (pages the driver owns: it
    /// can name no other memory).
    fn grant(
        &self,
        domid: u16,
        pages: &DmaPages,
        index: usize,
        access: Access,
    ) -> Result<Grant, GrantError>;
    /// Ends a grant; hands it back if the backend still maps the frame.
    fn end_grant(&self, grant: Grant) -> Result<(), Grant>;
    /// A new event channel port for `remote` to bind to.
    fn alloc_unbound(&self, remote: u16) -> Result<Port, XenError>;
    /// Closes a port.
    fn close_port(&self, port: Port);
    /// Notifies the other end of `port`.
    fn notify(&self, port: Port);
    /// Events that came on `port` since it was allocated or bound (counted by its
    /// handler, for the drivers' statistics); 0 where the platform does not count.
    fn port_events(&self, _port: Port) -> u64 {
        0
    }
    /// Waits a little for an event (or just yields): used while polling a ring.
    fn wait(&self);
    /// Monotonic time in nanoseconds.
    fn now_ns(&self) -> u64;
    /// How many times the domain was restored or migrated (resumed in a new domain):
    /// every grant made before the last of them belongs to a grant table that is
    /// gone. 0 for a domain that never moved.
    fn resumes(&self) -> u32 {
        0
    }
}

/// A page of another domain mapped into this one ([`XenBackend::map_grant`]): owned,
/// opaque, reached by copy, and let go of only through [`XenBackend::unmap_grant`].
pub use xenlet_xen::shared::ForeignPage;

/// Which way a [`CopyOp`] copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyDir {
    /// From the other domain's granted page into ours.
    FromRemote,
    /// From ours into the other domain's granted page (which must be granted
    /// read-write).
    ToRemote,
}

/// One grant copy (`GNTTABOP_copy`) between a page of ours, named by the
/// [`DmaPages`] that own it, and a page another domain granted us. Neither side may
/// cross its page: `offset + len` and `remote_offset + len` are at most 4096 (the
/// platform refuses the op otherwise, with `GNTST_bad_copy_arg`).
#[derive(Debug)]
pub struct CopyOp<'a> {
    /// Our pages.
    pub local: &'a DmaPages,
    /// The page of `local`.
    pub page: usize,
    /// The offset in that page.
    pub offset: u16,
    /// The other domain.
    pub domid: u16,
    /// Its grant reference.
    pub gref: u32,
    /// The offset in its page.
    pub remote_offset: u16,
    /// Bytes to copy.
    pub len: u16,
    /// The direction.
    pub dir: CopyDir,
    /// `GNTST_*` once done (0 is success; [`xenlet_xen::gnttab::status_name`]).
    pub status: i16,
}

impl CopyOp<'_> {
    /// Whether both sides lie within their pages and the local page exists.
    pub fn in_bounds(&self) -> bool {
        let page = xenlet_xen::shared::PAGE_BYTES;
        self.page < self.local.count()
            && usize::from(self.offset) + usize::from(self.len) <= page
            && usize::from(self.remote_offset) + usize::from(self.len) <= page
    }
}

/// What a backend (a driver domain serving other domains' frontends) needs on top
/// of a frontend's services: mapping and copying the pages other domains granted,
/// and binding to their event channels. Every input names the other domain's
/// objects (its domain id, grant references, ports), which may be wrong or hostile:
/// the implementation turns every failure into an error value, never a fault.
pub trait XenBackend: XenPlatform {
    /// Maps grant `gref` of domain `domid` (read-write if `writable`); Xen's
    /// `GNTST_*` status when it cannot (a bad reference, domain or permission).
    fn map_grant(&self, domid: u16, gref: u32, writable: bool) -> Result<ForeignPage, i16>;
    /// Unmaps a page mapped by [`XenBackend::map_grant`]; false if Xen refused
    /// (the memory behind it is then never reused).
    fn unmap_grant(&self, page: ForeignPage) -> bool;
    /// Performs every op in one batch (one hypercall on Xen), setting each op's
    /// `status`; an op out of bounds ([`CopyOp::in_bounds`]) fails alone with
    /// `GNTST_bad_copy_arg`.
    fn grant_copy(&self, ops: &mut [CopyOp<'_>]);
    /// Binds a local port to `remote_port` of domain `remote`
    /// (`EVTCHNOP_bind_interdomain`); closed with [`XenPlatform::close_port`]. Its
    /// events wake the data plane as a vif's do.
    fn bind_interdomain(&self, remote: u16, remote_port: u32) -> Result<Port, XenError>;
}

/// Reads a xenbus state key (e.g. `<backend>/state`).
pub fn read_state<P: XenPlatform>(p: &P, path: &str) -> Option<xenlet_xen::xenbus::XenbusState> {
    xenlet_xen::xenbus::XenbusState::parse(&p.xs_read(path).ok()?)
}

/// Watches the xenbus state at `path` until `check` returns a value or `timeout_ns`
/// passes (then `None`). `start` runs once the watch is set: a change it causes
/// still fires the watch. The state is re-read each time the watch fires (or, if the
/// watch cannot be set, after each [`XenPlatform::wait`]).
fn watch_state<P: XenPlatform, R>(
    p: &P,
    path: &str,
    timeout_ns: u64,
    start: impl FnOnce(),
    mut check: impl FnMut(Option<xenlet_xen::xenbus::XenbusState>) -> Option<R>,
) -> Option<R> {
    let deadline = p.now_ns().saturating_add(timeout_ns);
    // Watch first, read after: a change in between still fires the watch.
    let watch = p.xs_watch(path).ok();
    start();
    let result = loop {
        if let Some(r) = check(read_state(p, path)) {
            break Some(r);
        }
        if p.now_ns() >= deadline {
            break None;
        }
        match &watch {
            Some(w) => {
                p.wait_watch(w, deadline);
            }
            None => p.wait(),
        }
    };
    if let Some(w) = watch {
        p.xs_unwatch(w);
    }
    result
}

/// Waits until the shared frontend state machine asks for `want` given the backend's
/// state at `path`; a closing backend or `timeout_ns` ends it.
pub fn wait_for_action<P: XenPlatform>(
    p: &P,
    path: &str,
    fe: &xenlet_xen::xenbus::Frontend,
    want: xenlet_xen::xenbus::Action,
    timeout_ns: u64,
) -> Result<(), String> {
    use xenlet_xen::xenbus::Action;
    watch_state(
        p,
        path,
        timeout_ns,
        || {},
        |s| {
            let s = s?;
            match fe.on_backend(s) {
                a if a == want => Some(Ok(())),
                Action::Close => Some(Err(alloc::format!("backend closed ({path} = {s})"))),
                _ => None,
            }
        },
    )
    .unwrap_or_else(|| {
        Err(alloc::format!(
            "timed out waiting on {path} (frontend {})",
            fe.state()
        ))
    })
}

/// Closes a connected device the xenbus way before the domain goes away: the frontend
/// (`<fe>/state`) goes Closing, the backend (`be_state`) is given until `timeout_ns`
/// to follow to Closing or Closed, then the frontend goes Closed and the backend is
/// given as long again to reach Closed: Linux's backends unmap the rings and grants
/// when they see the frontend Closed, so after that the pages can be ended and
/// reused (and the toolstack's teardown after shutdown does not wait on them).
/// Whether the backend followed both steps in time.
pub fn close_device<P: XenPlatform>(p: &P, fe: &str, be_state: &str, timeout_ns: u64) -> bool {
    use xenlet_xen::xenbus::XenbusState;
    let state_key = alloc::format!("{fe}/state");
    let followed = watch_state(
        p,
        be_state,
        timeout_ns,
        || {
            let _ = p.xs_write(&state_key, "5");
        },
        |s| matches!(s, Some(XenbusState::Closing | XenbusState::Closed) | None).then_some(()),
    )
    .is_some();
    let _ = p.xs_write(&state_key, "6");
    // The backend unmaps this domain's pages when it sees Closed, then goes Closed
    // itself (or its directory goes): only then may the frontend end its grants and
    // reuse the pages.
    let closed = watch_state(
        p,
        be_state,
        timeout_ns,
        || {},
        |s| matches!(s, Some(XenbusState::Closed) | None).then_some(()),
    )
    .is_some();
    followed && closed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testplatform::FakeXen;
    use xenlet_xen::xenbus::{Action, Frontend, XenbusState};

    const BE_DIR: &str = "/local/domain/0/backend/vbd/1/51712";
    const BE: &str = "/local/domain/0/backend/vbd/1/51712/state";

    /// A backend at `BE` that starts in state `first` and moves through `script`,
    /// one state per watch firing (or per `wait` when watches fail, `watch_ok`
    /// false); the clock moves only while the frontend waits.
    fn fake(first: &'static str, script: &[&'static str], watch_ok: bool) -> FakeXen {
        let f = FakeXen::with_device("device/vbd/51712", BE_DIR, "");
        f.set(BE, first);
        f.script(script);
        f.watch_fails.set(!watch_ok);
        f
    }

    /// Every watch set was on the backend's state.
    fn only_the_state_watched(f: &FakeXen) {
        assert!(f.watched().iter().all(|p| p == BE), "{:?}", f.watched());
    }

    #[test]
    fn close_waits_for_the_backend_then_goes_closed() {
        let f = &fake("4", &["4", "5", "6"], true);
        assert!(close_device(&f, "device/vbd/51712", BE, 1_000_000_000));
        assert_eq!(f.xs.borrow()["device/vbd/51712/state"], "6");
        assert_eq!(f.unwatched().len(), 2, "both waits remove their watch");
        // a backend that follows to Closing but never reaches Closed: not done
        let h = &fake("4", &["5"], true);
        assert!(!close_device(&h, "device/vbd/51712", BE, 5_000_000));
        assert_eq!(h.xs.borrow()["device/vbd/51712/state"], "6");
        // a backend that never follows: bounded, and the frontend still ends Closed
        let g = &fake("4", &[], true);
        assert!(!close_device(&g, "device/vbd/51712", BE, 5_000_000));
        assert_eq!(g.xs.borrow()["device/vbd/51712/state"], "6");
        for x in [f, g, h] {
            only_the_state_watched(x);
        }
    }

    #[test]
    fn state_is_reread_once_per_watch_firing_and_the_watch_removed() {
        let f = &fake("1", &["2"], true);
        let fe = Frontend::new();
        wait_for_action(&f, BE, &fe, Action::Setup, 10_000_000_000).unwrap();
        assert_eq!(f.watched(), [BE]);
        assert_eq!(f.watch_waits.get(), 1);
        assert_eq!(
            f.reads.get(),
            2,
            "one read before the watch fired, one after"
        );
        assert_eq!(f.plain_waits.get(), 0, "no polling while a watch is set");
        assert_eq!(f.unwatched().len(), 1);
        assert_eq!(f.unwatched()[0], BE);
    }

    #[test]
    fn a_silent_backend_times_out_at_the_deadline_and_the_watch_goes() {
        let f = &fake("1", &[], true);
        let fe = Frontend::new();
        let e = wait_for_action(&f, BE, &fe, Action::Setup, 5_000_000_000).unwrap_err();
        assert!(e.contains("timed out waiting on"), "{e}");
        assert_eq!(
            f.now_ns(),
            5_000_000_000,
            "slept to the deadline, no further"
        );
        assert_eq!(f.watch_waits.get(), 1);
        assert_eq!(f.unwatched().len(), 1);
        only_the_state_watched(f);
    }

    #[test]
    fn a_closing_backend_ends_the_wait_and_the_watch_goes() {
        let f = &fake("1", &["2", "5"], true);
        let mut fe = Frontend::new();
        wait_for_action(&f, BE, &fe, Action::Setup, 10_000_000_000).unwrap();
        fe.switched(XenbusState::Initialised);
        let e = wait_for_action(&f, BE, &fe, Action::Connect, 10_000_000_000).unwrap_err();
        assert!(e.contains("backend closed"), "{e}");
        assert_eq!(f.unwatched().len(), 2);
        only_the_state_watched(f);
    }

    #[test]
    fn without_watches_the_state_is_polled() {
        let f = &fake("1", &["1", "1", "2"], false);
        let fe = Frontend::new();
        wait_for_action(&f, BE, &fe, Action::Setup, 10_000_000_000).unwrap();
        assert_eq!(f.plain_waits.get(), 3);
        assert_eq!(f.reads.get(), 4);
        assert!(f.unwatched().is_empty());
    }
}
