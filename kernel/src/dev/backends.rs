//! Xenlet as a driver domain: the PV network *backends* it serves to client domains
//! whose xl config says `vif = [ 'backend=<this domain>,...' ]` (issue 33), and the
//! kernel's side of the backend seam ([`XenBackend`] for [`KernelXen`]: other
//! domains' grants mapped onto ballooned frames and copied with `GNTTABOP_copy`, their
//! event channels bound; see `xen::gnttab`).
//!
//! How the network layer takes them:
//! - [`watch_backends`] (kmain, once XenStore is up) watches `backend/vif` under this
//!   domain's home (`/local/domain/<domid>/backend/vif`); the toolstack writes a
//!   `<fe domid>/<devid>` directory there for each client vif.
//! - [`poll`] (the shell loop, after `dispatch_watches`) probes each new directory
//!   ([`Netback::probe`]: features, InitWait), watches the client's `state`, and keeps
//!   the vif in a list until the network layer takes it with
//!   [`take_new_netbacks`]; meanwhile it follows the handshake of the vifs not yet
//!   taken ([`Netback::poll_xenbus`]), so a client connects before anyone takes its
//!   vif (frames then wait in the vif's bounded queues).
//! - The network layer owns the vifs it took: when [`xenbus_changed`] says so (a
//!   watch fired: the toolstack or a client changed something) it calls
//!   [`Netback::poll_xenbus`] on each; on [`BackState::Gone`], or
//!   [`BackState::Closed`] with [`Netback::removal_requested`], it hands the vif
//!   to [`release`] (closes it, removes the directory when the toolstack asked,
//!   forgets it so that a new directory at the same place is probed again).
//! - Data: a backend vif's event channel signals [`NET_EVENTS`], as a frontend vif's
//!   does, so the data plane's turn ([`crate::dev::network::serve`]) runs at the next
//!   wait; it must call [`Netback::service`] on each backend vif and take its next
//!   turn at once when that says work is left (no event comes for it), and take one
//!   at [`Netback::rate_wakeup_ns`] when a client's packet waits for its transmit
//!   credit (the `rate` key; no event comes for that either).
//!
//! XenStore permissions: the toolstack creates the backend directory owned by this
//! domain (so it may write `state`, the features and `error`, and remove the
//! directory) and makes the client's frontend directory readable to it (the ring
//! references and event channel are read there); nothing else is needed. Xen must let
//! this domain map and copy the client's grants: an unprivileged domain may, for
//! grants made to it.

use crate::dev::frontends::{KernelXen, NET_EVENTS};
use crate::xen::{gnttab, platform as xen, xenstore};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use spin::Mutex;
use xenlet_drivers::netback::{BackState, Netback};
use xenlet_drivers::platform::{CopyOp, ForeignPage, XenBackend};
use xenlet_xen::evtchn::Port;
use xenlet_xen::hypercall;
use xenlet_xen::xenstore::WatchEvent;
use xenlet_xen::XenError;

/// A vif this domain serves to a client domain.
pub type Vifback = Netback<KernelXen>;

/// Client vifs served at once.
pub const MAX_BACKENDS: usize = 16;

/// Events on backend vifs' channels (for `xen`/statistics).
static BACKEND_EVENTS: AtomicU64 = AtomicU64::new(0);

/// A backend vif's event: the data plane has work (interrupt context: atomics only).
fn on_backend_event(port: Port) {
    BACKEND_EVENTS.fetch_add(1, Ordering::Relaxed);
    crate::dev::portevents::count(port);
    NET_EVENTS.signal();
}

/// Events counted on backend vifs' channels.
pub fn backend_events() -> u64 {
    BACKEND_EVENTS.load(Ordering::Relaxed)
}

impl XenBackend for KernelXen {
    fn map_grant(&self, domid: u16, gref: u32, writable: bool) -> Result<ForeignPage, i16> {
        gnttab::map_foreign(domid, gref, writable)
    }
    fn unmap_grant(&self, page: ForeignPage) -> bool {
        gnttab::unmap_foreign(page)
    }
    fn grant_copy(&self, ops: &mut [CopyOp<'_>]) {
        gnttab::copy(ops)
    }
    fn bind_interdomain(&self, remote: u16, remote_port: u32) -> Result<Port, XenError> {
        let port = Port(hypercall::evtchn_bind_interdomain(remote, remote_port)?);
        crate::dev::portevents::reset(port);
        // Without its handler the port's events would not wake the data plane.
        if !xen::register_port(port, on_backend_event) {
            let _ = hypercall::evtchn_close(port.0);
            return Err(XenError::NoSpc);
        }
        Ok(port)
    }
}

const TOKEN: &str = "xenlet-vif-backends";
/// A watch under `backend/vif` fired: look for new directories.
static RESCAN: AtomicBool = AtomicBool::new(false);
/// A watch of the backends' or their clients' fired: the owners of backend vifs
/// call `poll_xenbus`.
static XENBUS: AtomicBool = AtomicBool::new(false);
/// The same news for the vifs not yet taken (followed by [`poll`]).
static XENBUS_NEW: AtomicBool = AtomicBool::new(false);
/// Backend directories probed and not released: (client domid, devid).
static KNOWN: Mutex<Vec<(u16, u32)>> = Mutex::new(Vec::new());
/// Directories whose probe failed (reported once; tried again when they change).
static FAILED: Mutex<Vec<(u16, u32)>> = Mutex::new(Vec::new());
/// Vifs probed, not yet taken by the network layer.
static NEW: Mutex<Vec<Vifback>> = Mutex::new(Vec::new());

fn on_watch(_: &WatchEvent) {
    RESCAN.store(true, Ordering::SeqCst);
    XENBUS.store(true, Ordering::SeqCst);
    XENBUS_NEW.store(true, Ordering::SeqCst);
    NET_EVENTS.signal();
}

fn client_token(fe: u16, devid: u32) -> String {
    format!("xenlet-vifback-{fe}-{devid}")
}

/// This domain's id (`domid` in its home), when XenStore says.
pub fn domid() -> Option<u16> {
    xenstore::read("domid").ok()?.trim().parse().ok()
}

/// Starts serving client vifs: watches `backend/vif` under this domain's home (it
/// may not exist yet: a watch on a missing node fires when it appears).
pub fn watch_backends() -> Result<(), xenstore::Error> {
    RESCAN.store(true, Ordering::SeqCst);
    xenstore::watch("backend/vif", TOKEN, on_watch)
}

/// Whether a watch fired since the last call: the network layer then calls
/// [`Netback::poll_xenbus`] on the backend vifs it holds.
pub fn xenbus_changed() -> bool {
    XENBUS.swap(false, Ordering::SeqCst)
}

/// The vifs probed since the last call, for the network layer.
pub fn take_new_netbacks() -> Vec<Vifback> {
    core::mem::take(&mut *NEW.lock())
}

/// From the shell loop: after a watch fired, probes the backend directories that
/// appeared and follows the handshake of the vifs not yet taken (a client that
/// connects, closes, or a toolstack that removes one: such a vif is released here).
pub fn poll() {
    if RESCAN.swap(false, Ordering::SeqCst) {
        rescan();
    }
    // XenStore is read only when a watch fired, not at every turn of the loop.
    if !XENBUS_NEW.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut gone = Vec::new();
    {
        let mut new = NEW.lock();
        let mut i = 0;
        while i < new.len() {
            let nb = &mut new[i];
            match nb.poll_xenbus() {
                Ok(BackState::Gone) => gone.push(new.remove(i)),
                Ok(BackState::Closed) if nb.removal_requested() => gone.push(new.remove(i)),
                Err(e) => {
                    crate::println!("netback: {}: {e}", nb.name());
                    i += 1;
                }
                Ok(_) => i += 1,
            }
        }
    }
    for nb in gone {
        release(nb);
    }
}

/// Looks through `backend/vif/<fe>/<devid>` for directories not probed yet.
fn rescan() {
    let Ok(fes) = xenstore::directory("backend/vif") else {
        return;
    };
    for fe in fes {
        let Ok(fe_id) = fe.parse::<u16>() else {
            continue;
        };
        let Ok(devs) = xenstore::directory(&format!("backend/vif/{fe}")) else {
            continue;
        };
        for dev in devs {
            let Ok(devid) = dev.parse::<u32>() else {
                continue;
            };
            let key = (fe_id, devid);
            if KNOWN.lock().contains(&key) {
                continue;
            }
            let path = format!("backend/vif/{fe}/{dev}");
            // The toolstack writes the directory in one transaction, `state` = 1
            // with it: anything else is not a new device.
            if xenstore::read(&format!("{path}/state")).ok().as_deref() != Some("1") {
                continue;
            }
            if KNOWN.lock().len() >= MAX_BACKENDS {
                if !FAILED.lock().contains(&key) {
                    FAILED.lock().push(key);
                    crate::println!("netback: {path} refused: {MAX_BACKENDS} client vifs already");
                }
                continue;
            }
            match Netback::probe(KernelXen::NET, &path) {
                Ok(nb) => {
                    FAILED.lock().retain(|k| *k != key);
                    let fe_state = nb.watch_paths()[1].clone();
                    let _ = xenstore::watch(&fe_state, &client_token(fe_id, devid), on_watch);
                    crate::println!(
                        "netback: {} for domain {fe_id}, client {}{}{}",
                        nb.name(),
                        super::Mac(nb.mac()),
                        nb.bridge()
                            .map(|b| format!(", bridge {b}"))
                            .unwrap_or_default(),
                        nb.ip()
                            .map(|ip| format!(", ip {ip} (sources filtered)"))
                            .unwrap_or_default()
                    );
                    KNOWN.lock().push(key);
                    NEW.lock().push(nb);
                }
                Err(e) => {
                    if !FAILED.lock().contains(&key) {
                        FAILED.lock().push(key);
                        crate::println!("netback: {path}: {e}");
                    }
                }
            }
        }
    }
}

/// Lets a backend vif go (its directory gone, or Closed with the toolstack asking
/// for removal): closes it (unbound, unmapped, Closed), removes its directory when
/// the toolstack asked (a driver domain removes its own backend directories), stops
/// watching its client, and forgets it, so a new directory at that place is probed.
pub fn release(nb: Vifback) {
    let (fe, devid) = (nb.frontend_id(), nb.devid());
    let path = String::from(nb.path());
    let remove = nb.state() != BackState::Gone && nb.removal_requested();
    let fe_state = nb.watch_paths()[1].clone();
    let name = nb.name();
    nb.close();
    let _ = xenstore::unwatch(&fe_state, &client_token(fe, devid));
    if remove {
        let _ = xenstore::rm(&path);
        // the client's directory, once it has no device left
        let parent = format!("backend/vif/{fe}");
        if xenstore::directory(&parent).is_ok_and(|d| d.is_empty()) {
            let _ = xenstore::rm(&parent);
        }
    }
    KNOWN.lock().retain(|k| *k != (fe, devid));
    crate::println!("netback: {name} released");
}

/// Before the domain shuts down: closes the vifs not taken by the network layer
/// (unbound, unmapped, Closed, so their clients see the backend go); returns how
/// many. The network layer closes the ones it holds ([`Netback::close`]).
pub fn close_untaken() -> usize {
    let all = take_new_netbacks();
    let n = all.len();
    for nb in all {
        nb.close();
    }
    n
}
