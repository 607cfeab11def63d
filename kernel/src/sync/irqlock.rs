//! The lock for everything an interrupt handler touches: a spin lock that holds
//! interrupts off (on this CPU) for as long as it is held, and restores them as
//! they were when it is released. A handler can then never interrupt a holder and
//! spin on the lock forever (there is one vCPU).

use core::ops::{Deref, DerefMut};
use spin::{Mutex, MutexGuard};
use x86_64::instructions::interrupts;

/// A spin lock held with interrupts off.
pub struct IrqLock<T> {
    inner: Mutex<T>,
}

/// Access to an [`IrqLock`]'s value; interrupts are off while it lives.
pub struct IrqGuard<'a, T> {
    guard: Option<MutexGuard<'a, T>>,
    /// Interrupts were on before the lock was taken.
    restore: bool,
}

impl<T> IrqLock<T> {
    /// A lock holding `value`.
    pub const fn new(value: T) -> Self {
        IrqLock {
            inner: Mutex::new(value),
        }
    }

    /// Turns interrupts off, then takes the lock (spinning while another holder has
    /// it: only code on another CPU, or code this one interrupted, could).
    pub fn lock(&self) -> IrqGuard<'_, T> {
        let restore = interrupts::are_enabled();
        interrupts::disable();
        IrqGuard {
            guard: Some(self.inner.lock()),
            restore,
        }
    }

    /// Takes the lock if it is free (fault and panic paths, which may have
    /// interrupted its holder).
    pub fn try_lock(&self) -> Option<IrqGuard<'_, T>> {
        let restore = interrupts::are_enabled();
        interrupts::disable();
        match self.inner.try_lock() {
            Some(g) => Some(IrqGuard {
                guard: Some(g),
                restore,
            }),
            None => {
                if restore {
                    interrupts::enable();
                }
                None
            }
        }
    }
}

impl<T> Deref for IrqGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("held until dropped")
    }
}

impl<T> DerefMut for IrqGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("held until dropped")
    }
}

impl<T> Drop for IrqGuard<'_, T> {
    fn drop(&mut self) {
        // Release first, then let interrupts in again.
        self.guard = None;
        if self.restore {
            interrupts::enable();
        }
    }
}
