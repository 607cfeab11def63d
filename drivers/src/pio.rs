//! x86 port I/O as a trait, so drivers stay safe and testable.

/// Access to the x86 I/O port space.
pub trait PortIo {
    /// Reads one byte from `port`.
    fn inb(&mut self, port: u16) -> u8;
    /// Writes one byte to `port`.
    fn outb(&mut self, port: u16, value: u8);
}
