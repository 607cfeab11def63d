//! Where the data plane's time goes: the nanoseconds each part of a network poll
//! ([`crate::dev::network::poll_stack`]) took, summed since boot, for `xen` to
//! print. A turn's parts: the client vifs' rings (netback, twice a turn), the
//! router's forwarding, the local stack (smoltcp) and the LAN services. Compared
//! before and after some traffic they say what that traffic cost the router (the
//! fairness measurement of `router-netback`: a flood of datagrams to the router's
//! address against a client's TCP through it).

use core::sync::atomic::{AtomicU64, Ordering};

/// A part of a network poll.
#[derive(Clone, Copy, Debug)]
pub enum Part {
    /// The client vifs' rings (netback).
    Clients = 0,
    /// The router's forwarding (and its own queues).
    Router = 1,
    /// The local stack (smoltcp).
    Stack = 2,
    /// The LAN services (DHCP, DNS, router advertisements), with the stack's poll
    /// that sends their answers.
    Services = 3,
}

/// The parts' names, in [`Part`] order.
pub const NAMES: [&str; 4] = ["clients", "router", "stack", "services"];

static NS: [AtomicU64; 4] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];
static POLLS: AtomicU64 = AtomicU64::new(0);

/// Adds `ns` to `part`.
pub fn add(part: Part, ns: u64) {
    NS[part as usize].fetch_add(ns, Ordering::Relaxed);
}

/// Counts one network poll.
pub fn count_poll() {
    POLLS.fetch_add(1, Ordering::Relaxed);
}

/// (polls, the nanoseconds of each part in [`NAMES`] order) since boot.
pub fn totals() -> (u64, [u64; 4]) {
    (
        POLLS.load(Ordering::Relaxed),
        core::array::from_fn(|i| NS[i].load(Ordering::Relaxed)),
    )
}
