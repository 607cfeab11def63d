//! Synchronisation: the lock that interrupt handlers can share with normal code
//! (holds interrupts off while held), event counts (readiness per consumer), and the
//! one algorithm every wait follows (`wait`: serve the core, then halt). The lowest
//! layer: it imports nothing from the kernel above it.

pub mod eventcount;
#[cfg(target_os = "none")]
pub mod irqlock;
pub mod wait;
