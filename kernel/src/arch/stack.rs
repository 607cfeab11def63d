//! The boot stack the kernel runs on (`boot/src/entry.rs`): where it is, its unmapped
//! guard page, and how deep it has ever been.
//!
//! The entry code zeroes the stack with the rest of `.bss`, so the lowest non-zero
//! word is the deepest the stack has reached (a lower bound: a frame that only ever
//! stored zeros at its bottom is not seen).

/// Bytes of one page.
const PAGE: u64 = 4096;

/// The boot stack: `[bottom, top)`, with the guard page at `bottom - 4096`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootStack {
    /// Lowest address of the stack (the guard page ends here).
    pub bottom: u64,
    /// One past its highest address (the initial stack pointer).
    pub top: u64,
}

impl BootStack {
    /// Whether `addr` lies in the unmapped page below the stack (or within a page
    /// under it: a large frame can skip past the guard).
    pub fn overflowed_at(&self, addr: u64) -> bool {
        addr < self.bottom && addr >= self.bottom.saturating_sub(2 * PAGE)
    }

    /// Size of the stack.
    pub fn bytes(&self) -> u64 {
        self.top - self.bottom
    }
}

#[cfg(target_os = "none")]
mod imp {
    use super::BootStack;

    extern "C" {
        static xenlet_boot_stack: u8;
        static xenlet_boot_stack_top: u8;
    }

    /// The boot stack, from the entry code's symbols.
    pub fn boot_stack() -> BootStack {
        BootStack {
            bottom: (&raw const xenlet_boot_stack) as u64,
            top: (&raw const xenlet_boot_stack_top) as u64,
        }
    }

    /// Bytes from the top down to the deepest non-zero word.
    pub fn high_water() -> u64 {
        let s = boot_stack();
        let mut at = s.bottom;
        while at < s.top {
            // Only this CPU writes the stack, and the words below the current stack
            // pointer are dead: reading them races with nothing.
            // SAFETY: `at` is 8-byte aligned inside the boot stack, mapped read-write (identity) for the kernel's life.
            let w = unsafe { core::ptr::read_volatile(at as *const u64) };
            if w != 0 {
                break;
            }
            at += 8;
        }
        s.top - at
    }
}

#[cfg(not(target_os = "none"))]
mod imp {
    use super::BootStack;

    /// Host builds (unit tests) have no boot stack.
    pub fn boot_stack() -> BootStack {
        BootStack { bottom: 0, top: 0 }
    }

    pub fn high_water() -> u64 {
        0
    }
}

pub use imp::{boot_stack, high_water};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_is_the_two_pages_below_the_bottom() {
        let s = BootStack {
            bottom: 0x37_0000,
            top: 0x38_0000,
        };
        assert_eq!(s.bytes(), 0x1_0000);
        assert!(s.overflowed_at(0x36_ffff));
        assert!(s.overflowed_at(0x36_e000));
        assert!(!s.overflowed_at(0x36_dfff));
        assert!(!s.overflowed_at(0x37_0000));
        assert!(!s.overflowed_at(0x37_fff8));
        let low = BootStack {
            bottom: 0x1000,
            top: 0x2000,
        };
        assert!(low.overflowed_at(0));
    }
}
