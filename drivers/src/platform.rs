//! What the Xen frontends need from the kernel, as a trait: XenStore, grants, event
//! channels and grantable memory. The kernel implements it over its Xen layer; host
//! tests implement it over heap pages. Keeping drivers behind this seam keeps them
//! free of `unsafe` and of the kernel's globals.

use alloc::string::String;
use xenlet_xen::evtchn::Port;
use xenlet_xen::gnttab::{Access, Grant, GrantError};
use xenlet_xen::shared::SharedPage;
use xenlet_xen::xenstore::XsError;
use xenlet_xen::XenError;

/// Physically contiguous pages that may be granted to another domain. Their contents
/// are reached only by copy (the other domain may change them at any time).
pub struct DmaPages {
    /// The memory.
    pub mem: SharedPage,
    /// Guest frame number of the first page.
    pub gfn: u64,
    /// Number of pages.
    pub count: usize,
}

/// Kernel services for frontends.
pub trait XenPlatform {
    /// XenStore read (paths relative to the domain's home, or absolute).
    fn xs_read(&self, path: &str) -> Result<String, XsError>;
    /// XenStore write.
    fn xs_write(&self, path: &str, value: &str) -> Result<(), XsError>;
    /// `count` physically contiguous, zeroed pages.
    fn alloc_pages(&self, count: usize) -> Option<DmaPages>;
    /// Gives pages back (only once no grant refers to them).
    fn free_pages(&self, pages: DmaPages);
    /// Grants `domid` access to frame `gfn`.
    fn grant(&self, domid: u16, gfn: u64, access: Access) -> Result<Grant, GrantError>;
    /// Ends a grant; hands it back if the backend still maps the frame.
    fn end_grant(&self, grant: Grant) -> Result<(), Grant>;
    /// A new event channel port for `remote` to bind to.
    fn alloc_unbound(&self, remote: u16) -> Result<Port, XenError>;
    /// Closes a port.
    fn close_port(&self, port: Port);
    /// Notifies the other end of `port`.
    fn notify(&self, port: Port);
    /// Waits a little for an event (or just yields): used while polling a ring.
    fn wait(&self);
    /// Monotonic time in nanoseconds.
    fn now_ns(&self) -> u64;
}

/// Reads a xenbus state key (e.g. `<backend>/state`).
pub fn read_state<P: XenPlatform>(p: &P, path: &str) -> Option<xenlet_xen::xenbus::XenbusState> {
    xenlet_xen::xenbus::XenbusState::parse(&p.xs_read(path).ok()?)
}

/// Waits (polling XenStore) until the shared frontend state machine asks for `want`
/// given the backend's state at `path`; a closing backend or `timeout_ns` ends it.
pub fn wait_for_action<P: XenPlatform>(
    p: &P,
    path: &str,
    fe: &xenlet_xen::xenbus::Frontend,
    want: xenlet_xen::xenbus::Action,
    timeout_ns: u64,
) -> Result<(), String> {
    use xenlet_xen::xenbus::Action;
    let start = p.now_ns();
    loop {
        if let Some(s) = read_state(p, path) {
            match fe.on_backend(s) {
                a if a == want => return Ok(()),
                Action::Close => return Err(alloc::format!("backend closed ({path} = {s})")),
                _ => {}
            }
        }
        if p.now_ns().saturating_sub(start) > timeout_ns {
            return Err(alloc::format!(
                "timed out waiting on {path} (frontend {})",
                fe.state()
            ));
        }
        p.wait();
    }
}
