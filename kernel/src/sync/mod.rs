//! Synchronisation that interrupt handlers can share with normal code: the lock that
//! holds interrupts off while it is held. The lowest layer: it imports nothing from
//! the kernel.

pub mod irqlock;
