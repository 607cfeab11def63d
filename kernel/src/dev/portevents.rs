//! Events counted per event-channel port, for the drivers' statistics (`ethtool -S`:
//! [`xenlet_drivers::platform::XenPlatform::port_events`]): a vif's port handler
//! bumps its port's counter in interrupt context, so the table is fixed-size atomics
//! (no allocation, no lock). A port's counter starts at 0 when the port is allocated
//! or bound ([`reset`]); ports past the table are not counted (0).

use core::sync::atomic::{AtomicU64, Ordering};
use xenlet_xen::evtchn::Port;

/// Ports counted: 0 .. this (a domain's vifs take ports in the tens).
pub const PORTS: usize = 256;

static EVENTS: [AtomicU64; PORTS] = [const { AtomicU64::new(0) }; PORTS];

/// An event on `port` (interrupt context).
pub fn count(port: Port) {
    if let Some(c) = EVENTS.get(port.0 as usize) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// `port` is new (allocated or bound): its count starts again.
pub fn reset(port: Port) {
    if let Some(c) = EVENTS.get(port.0 as usize) {
        c.store(0, Ordering::Relaxed);
    }
}

/// Events on `port` since it was allocated or bound.
pub fn get(port: Port) -> u64 {
    EVENTS
        .get(port.0 as usize)
        .map_or(0, |c| c.load(Ordering::Relaxed))
}
