//! The Xen platform, one concept per file (as Mini-OS lays it out): bring-up,
//! shared info and event channels ([`platform`]), blocking until an event or the
//! one-shot timer ([`idle`]), the grant table ([`gnttab`]), XenStore ([`xenstore`]),
//! xenbus device enumeration ([`xenbus`]) and the emulated-device unplug ([`unplug`]).
//! Everything here runs only on `target_os = "none"`.

pub mod gnttab;
pub mod idle;
pub mod platform;
pub mod unplug;
pub mod xenbus;
pub mod xenstore;
