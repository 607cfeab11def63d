//! The Xen platform, one concept per file (as Mini-OS lays it out): bring-up,
//! shared info and event channels ([`platform`]), blocking until an event or the
//! one-shot timer ([`idle`]), the grant table ([`gnttab`]), XenStore ([`xenstore`]),
//! xenbus device enumeration ([`xenbus`]), the emulated-device unplug ([`unplug`]) and
//! the count and time of the data plane's traps to Xen ([`traps`]).
//! Everything here runs only on `target_os = "none"`.

pub mod gnttab;
pub mod idle;
pub mod platform;
pub mod traps;
pub mod unplug;
pub mod xenbus;
pub mod xenstore;
