//! The traps to Xen the data plane makes per batch or per wakeup, counted and
//! timed: on the nested test bed (Xen under QEMU TCG) each is a costly VM exit. `xen` prints them
//! beside the parts of the network polls (`dev::netcost`); compare two `xen`s
//! around some traffic to see how much of the clients' part they are.

use core::sync::atomic::{AtomicU64, Ordering};

/// A trap counted.
#[derive(Clone, Copy, Debug)]
pub enum Trap {
    /// `GNTTABOP_copy` (netback's batches: other domains' grants).
    GrantCopy = 0,
    /// `EVTCHNOP_send`, any port's (netback's and netfront's notifies, blkfront's,
    /// the console's).
    Notify = 1,
    /// `VCPUOP_set_singleshot_timer`: the idle path arms the one-shot timer at a
    /// halt that has a deadline (not when that very deadline is set already).
    Timer = 2,
}

/// The traps' names, in [`Trap`] order.
pub const NAMES: [&str; 3] = ["grant copies", "event-channel sends", "timer settings"];

static CALLS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
static NS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
/// Grant-copy ops the [`Trap::GrantCopy`] calls carried.
static COPY_OPS: AtomicU64 = AtomicU64::new(0);

/// Runs `f` (the trap itself), counted and timed as `trap`. Lock-free: fit for
/// interrupt context.
pub fn timed<R>(trap: Trap, f: impl FnOnce() -> R) -> R {
    let t = crate::time::clock::now().as_nanos();
    let r = f();
    let ns = crate::time::clock::now().as_nanos().saturating_sub(t);
    CALLS[trap as usize].fetch_add(1, Ordering::Relaxed);
    NS[trap as usize].fetch_add(ns, Ordering::Relaxed);
    r
}

/// Counts `n` grant-copy ops (of a [`Trap::GrantCopy`] call).
pub fn count_copy_ops(n: usize) {
    COPY_OPS.fetch_add(n as u64, Ordering::Relaxed);
}

/// (calls, nanoseconds) of each trap in [`NAMES`] order, and the grant-copy ops,
/// since boot.
pub fn totals() -> ([(u64, u64); 3], u64) {
    (
        core::array::from_fn(|i| {
            (
                CALLS[i].load(Ordering::Relaxed),
                NS[i].load(Ordering::Relaxed),
            )
        }),
        COPY_OPS.load(Ordering::Relaxed),
    )
}
