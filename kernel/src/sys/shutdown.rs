//! The toolstack's shutdown requests: Xenlet advertises `control/feature-poweroff`,
//! `control/feature-reboot` and `control/feature-suspend` and watches
//! `control/shutdown`, so `xl shutdown` and `xl reboot` end the domain cleanly and
//! `xl save`/`xl migrate` suspend it (`sys::suspend`) (the protocol: xen/include/public/io/xs_wire.h
//! and Linux's drivers/xen/manage.c, `shutdown_handler`).
//!
//! The watch is registered in XenStore's callback table; its callback runs where
//! watches are dispatched (the shell's idle loop), never in interrupt context.

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
    xenstore::watch("control/shutdown", "xenlet-shutdown", on_shutdown_request)
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
