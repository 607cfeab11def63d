//! The toolstack's shutdown requests: Xenlet advertises `control/feature-poweroff`,
//! `control/feature-reboot` and `control/feature-suspend` and watches
//! `control/shutdown`, so `xl shutdown` and `xl reboot` end the domain cleanly and
//! `xl save`/`xl migrate` suspend it (`sys::suspend`) (the protocol: xen/include/public/io/xs_wire.h
//! and Linux's drivers/xen/manage.c, `shutdown_handler`).
//!
//! The watch is registered in XenStore's callback table; its callback runs where
//! watches are dispatched (the shell's idle loop), never in interrupt context, and
//! at the check-points of long commands ([`checkpoint`]: a `dd`, `sleep`), so a save
//! or a shutdown does not wait for the command to end.

use crate::sync::eventcount::SharedSeen;
use crate::sys::power;
use crate::xen::xenstore;
use alloc::string::String;
use xenlet_xen::xenstore::{WatchEvent, XsError};

/// Advertises shutdown support and watches `control/shutdown`, so `xl shutdown` and
/// `xl reboot` end the domain cleanly.
pub fn watch_shutdown() -> Result<(), XsError> {
    for f in [
        "control/feature-poweroff",
        "control/feature-reboot",
        "control/feature-suspend",
    ] {
        xenstore::write(f, "1")?;
    }
    xenstore::watch("control/shutdown", TOKEN, on_shutdown_request)
}

/// The watch's token.
const TOKEN: &str = "xenlet-shutdown";

/// The events [`checkpoint`] has looked past: it reads XenStore's ring only when
/// an event came since (a `dd` calls it for every batch of answers from its disk; a
/// `sleep` at every wake-up, which an event from xenstored causes).
static LOOKED: SharedSeen = SharedSeen::new();

/// A check-point of a long command, called where it holds no disk, filesystem or
/// network lock (between two steps of a `dd`, in `sleep`): a request the toolstack
/// wrote meanwhile is carried out here, as the shell loop would between commands. A
/// suspend then returns here with the disks and vifs reconnected (the command's
/// requests in flight answered, or sent again to the new backend) and the command
/// goes on; a poweroff does not return. Returns whether the domain was suspended
/// (the clock jumped by the time it was away: a command's deadlines start again).
pub fn checkpoint() -> bool {
    if !LOOKED.take(crate::xen::platform::events()) {
        return false;
    }
    if !xenstore::take_fired(TOKEN) {
        return false;
    }
    let before = crate::sys::suspend::stats().suspends;
    on_shutdown_request(&WatchEvent {
        path: String::from("control/shutdown"),
        token: String::from(TOKEN),
    });
    crate::sys::suspend::stats().suspends != before
}

fn on_shutdown_request(_: &WatchEvent) {
    // Read and acknowledge (write "") in one transaction, as Linux's xenbus does.
    let req = xenstore::transaction(|tx| {
        let v = match xenstore::read_tx(tx, "control/shutdown") {
            Ok(v) => v,
            Err(e) if e.is_enoent() => String::new(),
            Err(e) => return Err(e),
        };
        if !v.is_empty() {
            xenstore::write_tx(tx, "control/shutdown", "")?;
        }
        Ok(v)
    });
    match req.as_deref() {
        Ok("poweroff") | Ok("halt") => {
            crate::println!("\nxenlet: shutdown requested by the toolstack");
            power::poweroff();
        }
        Ok("reboot") => {
            crate::println!("\nxenlet: reboot requested by the toolstack");
            power::reboot();
        }
        Ok("suspend") => crate::sys::suspend::suspend(),
        Ok("") => {}
        Ok(other) => crate::println!("\nxenlet: unsupported shutdown request '{other}' ignored"),
        Err(e) => crate::println!("\nxenlet: reading control/shutdown failed: {e}"),
    }
}
