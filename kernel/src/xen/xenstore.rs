//! The kernel's XenStore connection: requests, transactions and watches over the
//! ring in `xenlet_xen::xenstore`. Watches are a callback table ([`watch`]): the
//! shutdown policy (`sys::shutdown`) registers its `control/shutdown` watch here.
//!
//! Requests are synchronous and made from thread context (shell, drivers' setup);
//! while waiting the CPU halts until the store's event (or a short deadline). Watch events are queued by the protocol
//! layer and dispatched to callbacks from the idle loop, never in interrupt context.

use crate::{time::clock, xen::platform as xen};
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::time::Duration;
use spin::Mutex;
use xenlet_xen::abi::*;
use xenlet_xen::evtchn::Port;
use xenlet_xen::hypercall;
use xenlet_xen::shared::SharedPage;
use xenlet_xen::xenstore::{
    self, check_path, list, text, Message, MsgType, Ring, Transport, WatchEvent, XsError,
};

struct Conn {
    ring: Ring,
    port: Port,
}

static CONN: Mutex<Option<Conn>> = Mutex::new(None);

/// A watch callback: gets the event (path, token).
pub type WatchFn = fn(&WatchEvent);

/// The watches set: (token, path, callback); the path is for setting them again after
/// a restore ([`resume`]).
static WATCHES: Mutex<Vec<(String, String, WatchFn)>> = Mutex::new(Vec::new());
/// Watches set at once (the kernel's own take a handful).
const MAX_WATCHES: usize = 64;

/// How long a request may wait for xenstored (nested emulation is slow).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Connects to XenStore through `HVM_PARAM_STORE_PFN`/`_EVTCHN`.
pub fn init() -> Result<Port, XsError> {
    let pfn = hypercall::hvm_get_param(HVM_PARAM_STORE_PFN)
        .map_err(|_| XsError::Protocol("no HVM_PARAM_STORE_PFN"))?;
    let port = hypercall::hvm_get_param(HVM_PARAM_STORE_EVTCHN)
        .map_err(|_| XsError::Protocol("no HVM_PARAM_STORE_EVTCHN"))?;
    if pfn == 0 || pfn >= crate::mm::heap::MAPPED_LIMIT >> 12 {
        return Err(XsError::Protocol("store page missing or out of reach"));
    }
    // SAFETY: HVM_PARAM_STORE_PFN names this domain's XenStore ring page, set up by the toolstack in reserved memory below the identity-map limit; only this module uses it, through the SharedPage.
    let page = unsafe { SharedPage::new((pfn << 12) as *mut u8) };
    let port = Port(u32::try_from(port).map_err(|_| XsError::Protocol("bad store event channel"))?);
    *CONN.lock() = Some(Conn {
        ring: Ring::new(page),
        port,
    });
    // Replies are polled by the waiting request; the event only needs to wake the CPU.
    xen::register_port(port, |_| {});
    Ok(port)
}

/// What [`resume`] did.
#[derive(Clone, Copy, Debug)]
pub struct Resumed {
    /// The store's new event channel.
    pub port: Port,
    /// Watches set again.
    pub watches: usize,
    /// Of those, how many xenstored refused.
    pub refused: usize,
    /// The request ring still held requests the old xenstored never read.
    pub unread_requests: bool,
}

/// Connects again after the domain was restored or migrated: the ring page is the
/// same (restored with the rest of memory), its event channel is new
/// (`HVM_PARAM_STORE_EVTCHN`), the old connection's leftovers are dropped, and every
/// watch is set again (the new xenstored knows none; each fires once when set, which
/// makes its owner look again).
pub fn resume() -> Result<Resumed, XsError> {
    let port = hypercall::hvm_get_param(HVM_PARAM_STORE_EVTCHN)
        .map_err(|_| XsError::Protocol("no HVM_PARAM_STORE_EVTCHN"))?;
    let port = Port(u32::try_from(port).map_err(|_| XsError::Protocol("bad store event channel"))?);
    let unread_requests = {
        let mut g = CONN.lock();
        let conn = g
            .as_mut()
            .ok_or(XsError::Protocol("XenStore not connected"))?;
        xen::unregister_port(conn.port);
        conn.port = port;
        conn.ring.resume()
    };
    xen::register_port(port, |_| {});
    let list: Vec<(String, String)> = WATCHES
        .lock()
        .iter()
        .map(|(t, p, _)| (t.clone(), p.clone()))
        .collect();
    let mut refused = 0;
    for (token, path) in &list {
        if request(
            MsgType::Watch,
            0,
            &[path_bytes(path)?, token.as_bytes()],
            true,
        )
        .is_err()
        {
            refused += 1;
        }
    }
    Ok(Resumed {
        port,
        watches: list.len(),
        refused,
        unread_requests,
    })
}

/// Whether XenStore is connected.
pub fn connected() -> bool {
    CONN.lock().is_some()
}

/// Watch events merged into a queued one or dropped for room (the queue is
/// bounded: `xenlet_xen::xenstore::MAX_QUEUED_EVENTS`); None if not connected.
pub fn events_dropped() -> Option<u64> {
    CONN.lock().as_ref().map(|c| c.ring.events_dropped())
}

/// Waiting for xenstored: notify through the store's event channel, halt until an
/// event (or a short deadline), give up at the request's deadline.
struct Waiter {
    port: Port,
    deadline: clock::Instant,
}

impl Transport for Waiter {
    fn notify(&mut self) {
        xen::notify(self.port);
    }
    fn wait(&mut self) -> Result<(), XsError> {
        if clock::now() > self.deadline {
            return Err(XsError::Timeout);
        }
        crate::xen::idle::pause();
        Ok(())
    }
}

fn with_conn<T>(
    f: impl FnOnce(&mut Ring, &mut Waiter) -> Result<T, XsError>,
) -> Result<T, XsError> {
    let mut guard = CONN.lock();
    let conn = guard
        .as_mut()
        .ok_or(XsError::Protocol("XenStore not connected"))?;
    let mut w = Waiter {
        port: conn.port,
        deadline: clock::now() + REQUEST_TIMEOUT,
    };
    f(&mut conn.ring, &mut w)
}

fn request(kind: MsgType, tx: u32, parts: &[&[u8]], nul_last: bool) -> Result<Message, XsError> {
    with_conn(|ring, w| ring.request(kind, tx, parts, nul_last, w))
}

fn path_bytes(path: &str) -> Result<&[u8], XsError> {
    check_path(path)?;
    Ok(path.as_bytes())
}

/// `XS_READ` (inside transaction `tx`, 0 for none).
pub fn read_tx(tx: u32, path: &str) -> Result<String, XsError> {
    text(&request(MsgType::Read, tx, &[path_bytes(path)?], true)?.payload)
}

/// `XS_READ`.
pub fn read(path: &str) -> Result<String, XsError> {
    read_tx(0, path)
}

/// `XS_WRITE` (inside transaction `tx`, 0 for none).
pub fn write_tx(tx: u32, path: &str, value: &str) -> Result<(), XsError> {
    request(
        MsgType::Write,
        tx,
        &[path_bytes(path)?, value.as_bytes()],
        false,
    )
    .map(|_| ())
}

/// `XS_WRITE`.
pub fn write(path: &str, value: &str) -> Result<(), XsError> {
    write_tx(0, path, value)
}

/// `XS_DIRECTORY`: the children's names (paged with `XS_DIRECTORY_PART` when the
/// listing is longer than one message).
pub fn directory(path: &str) -> Result<Vec<String>, XsError> {
    with_conn(|ring, w| ring.directory(0, path, w))
}

/// `XS_MKDIR`.
pub fn mkdir(path: &str) -> Result<(), XsError> {
    request(MsgType::Mkdir, 0, &[path_bytes(path)?], true).map(|_| ())
}

/// `XS_RM`.
pub fn rm(path: &str) -> Result<(), XsError> {
    request(MsgType::Rm, 0, &[path_bytes(path)?], true).map(|_| ())
}

/// `XS_GET_PERMS`: permission strings such as `n0`, `r5`.
pub fn get_perms(path: &str) -> Result<Vec<String>, XsError> {
    list(&request(MsgType::GetPerms, 0, &[path_bytes(path)?], true)?.payload)
}

/// `XS_SET_PERMS`.
pub fn set_perms(path: &str, perms: &[&str]) -> Result<(), XsError> {
    let mut parts: Vec<&[u8]> = Vec::with_capacity(perms.len() + 1);
    parts.push(path_bytes(path)?);
    for p in perms {
        let ok = p.len() >= 2
            && matches!(p.as_bytes()[0], b'n' | b'r' | b'w' | b'b')
            && p[1..].parse::<u16>().is_ok();
        if !ok {
            return Err(XsError::Protocol(
                "permission must be n|r|w|b followed by a domain id",
            ));
        }
        parts.push(p.as_bytes());
    }
    request(MsgType::SetPerms, 0, &parts, true).map(|_| ())
}

/// `XS_GET_DOMAIN_PATH` for `domid`.
pub fn domain_path(domid: u16) -> Result<String, XsError> {
    let d = domid.to_string();
    text(&request(MsgType::GetDomainPath, 0, &[d.as_bytes()], true)?.payload)
}

/// Runs `body` in a transaction, retrying on `EAGAIN` (up to 10 times).
pub fn transaction<T>(mut body: impl FnMut(u32) -> Result<T, XsError>) -> Result<T, XsError> {
    for _ in 0..10 {
        let m = request(MsgType::TransactionStart, 0, &[b""], true)?;
        let tx: u32 = text(&m.payload)?
            .parse()
            .map_err(|_| XsError::Protocol("transaction id"))?;
        match body(tx) {
            Ok(v) => match request(MsgType::TransactionEnd, tx, &[b"T"], true) {
                Ok(_) => return Ok(v),
                Err(e) if e.is_eagain() => continue,
                Err(e) => return Err(e),
            },
            Err(e) => {
                let _ = request(MsgType::TransactionEnd, tx, &[b"F"], true);
                if !e.is_eagain() {
                    return Err(e);
                }
            }
        }
    }
    Err(XsError::Remote("EAGAIN".into()))
}

/// Sets a watch on `path`; `callback` runs from the idle loop for each event.
/// One entry per token (a second watch with a token already set replaces its
/// callback: the kernel re-watches a device's backend under the same token after a
/// detach whose unwatch could not be sent), and at most [`MAX_WATCHES`] (ENOSPC):
/// the console's `xenstore watch` cannot grow the table. A watch xenstored refuses
/// (EEXIST for the same path and token) leaves an earlier registration as it was.
pub fn watch(path: &str, token: &str, callback: WatchFn) -> Result<(), XsError> {
    check_path(token)?;
    let added = {
        let mut w = WATCHES.lock();
        let full = w.len() >= MAX_WATCHES;
        match w.iter_mut().find(|(t, _, _)| t == token) {
            Some(e) => {
                e.1 = path.to_string();
                e.2 = callback;
                false
            }
            None if full => return Err(XsError::Remote("ENOSPC".into())),
            None => {
                w.push((token.to_string(), path.to_string(), callback));
                true
            }
        }
    };
    request(
        MsgType::Watch,
        0,
        &[path_bytes(path)?, token.as_bytes()],
        true,
    )
    .map(|_| ())
    .inspect_err(|_| {
        if added {
            WATCHES.lock().retain(|(t, _, _)| t != token);
        }
    })
}

/// Removes a watch.
pub fn unwatch(path: &str, token: &str) -> Result<(), XsError> {
    WATCHES.lock().retain(|(t, _, _)| t != token);
    request(
        MsgType::Unwatch,
        0,
        &[path_bytes(path)?, token.as_bytes()],
        true,
    )
    .map(|_| ())
}

/// Token of the next [`watch_for_wait`] watch.
static NEXT_WAIT_TOKEN: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(1);

/// Sets a watch on `path` to be waited on with [`take_fired`] (its events are not
/// dispatched to a callback); returns its token.
pub fn watch_for_wait(path: &str) -> Result<String, XsError> {
    let n = NEXT_WAIT_TOKEN.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    let token = alloc::format!("xenlet-wait-{n}");
    // Events the idle loop finds for it (after the waiter is gone) are dropped.
    watch(path, &token, |_| {})?;
    Ok(token)
}

/// Whether the watch `token` fired since the last call: reads the ring and takes that
/// watch's queued events (other watches' events stay queued for
/// [`dispatch_watches`]).
pub fn take_fired(token: &str) -> bool {
    let mut g = CONN.lock();
    let Some(conn) = g.as_mut() else { return false };
    if !conn.ring.is_broken() {
        let port = conn.port;
        let _ = conn.ring.read_and_notify(|| xen::notify(port));
        let _ = conn.ring.take_reply(0); // ids start at 1: only queues events
    }
    conn.ring.take_events_for(token) > 0
}

/// Reads pending watch events from the ring and runs their callbacks (idle loop).
pub fn dispatch_watches() {
    loop {
        let ev = {
            let mut g = CONN.lock();
            let Some(conn) = g.as_mut() else { return };
            if !conn.ring.is_broken() {
                let port = conn.port;
                let _ = conn.ring.read_and_notify(|| xen::notify(port));
                let _ = conn.ring.take_reply(0); // ids start at 1: only queues events
            }
            conn.ring.pop_event()
        };
        let Some(ev) = ev else { return };
        let cb = WATCHES
            .lock()
            .iter()
            .find(|(t, _, _)| *t == ev.token)
            .map(|(_, _, f)| *f);
        if let Some(f) = cb {
            f(&ev);
        }
    }
}

pub use xenstore::XsError as Error;
