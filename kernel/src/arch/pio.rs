//! Port I/O for the drivers' [`PortIo`] trait.

use x86_64::instructions::port::Port;
use xenlet_drivers::pio::PortIo;

/// The machine's I/O port space. Only the kernel creates it, for devices it owns.
#[derive(Clone, Copy)]
pub struct Pio(());

impl Pio {
    /// Port access for a kernel-owned device.
    pub(crate) const fn new() -> Self {
        Pio(())
    }
}

impl PortIo for Pio {
    fn inb(&mut self, port: u16) -> u8 {
        // SAFETY: reading an I/O port has no memory-safety effect in a kernel that identity-maps RAM and uses no port-mapped DMA engines; callers own the device.
        unsafe { Port::<u8>::new(port).read() }
    }
    fn outb(&mut self, port: u16, value: u8) {
        // SAFETY: as for `inb`; Xenlet drives no device whose ports can make it DMA into memory it does not own.
        unsafe { Port::<u8>::new(port).write(value) }
    }
}

/// Writes a 16-bit value to a port (ACPI PM1 control, Xen platform device).
pub(crate) fn outw(port: u16, value: u16) {
    // SAFETY: used only for the ACPI PM1 control block found in the FADT, which powers the machine off, and the Xen platform device's unplug registers, which detach emulated disks/NICs the kernel has no driver for; no memory is affected.
    unsafe { Port::<u16>::new(port).write(value) }
}

/// Writes a 32-bit value to a port (QEMU isa-debug-exit, the Xen platform device).
pub(crate) fn outl(port: u16, value: u32) {
    // SAFETY: used only for QEMU's isa-debug-exit port, which ends the emulator, and the Xen platform device's unplug registers; neither affects memory.
    unsafe { Port::<u32>::new(port).write(value) }
}

/// Reads a 16-bit value from a port (the Xen platform device).
pub(crate) fn inw(port: u16) -> u16 {
    // SAFETY: used only for the Xen platform device's magic/unplug register; reading it has no memory effect.
    unsafe { Port::<u16>::new(port).read() }
}
