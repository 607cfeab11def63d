//! Unplugging QEMU's emulated disks and NICs (docs/misc/hvm-emulated-unplug.pandoc).
//!
//! An HVM domain sees its disks twice: as emulated IDE (QEMU in dom0) and as PV vbds.
//! Before the PV drivers take over, the guest tells the Xen platform device (I/O port
//! 0x10) to unplug the emulated copies, so nothing writes a disk through two paths.
//! PVH domains have no emulated devices and no platform device: the magic is absent.

use crate::arch::pio;
use crate::arch::pio::Pio;
use xenlet_drivers::pio::PortIo;

const MAGIC_PORT: u16 = 0x10;
const VERSION_PORT: u16 = 0x12;
const PRODUCT_PORT: u16 = 0x12;
const BUILD_PORT: u16 = 0x10;
const MAGIC: u16 = 0x49d2;
/// Product number: 0xffff is the registry's "experimental" entry.
const PRODUCT: u16 = 0xffff;
const UNPLUG_ALL_IDE_DISKS: u16 = 1;
const UNPLUG_ALL_NICS: u16 = 2;
const UNPLUG_AUX_IDE_DISKS: u16 = 4;

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unplug {
    /// No platform device (PVH, or not Xen HVM).
    NoPlatformDevice,
    /// The device model refused this product/build (blacklisted): use emulated devices.
    Blacklisted,
    /// Unplugged; `version` of the protocol, `mask` written.
    Done {
        /// Protocol version the device reported.
        version: u8,
        /// Mask written.
        mask: u16,
    },
}

/// Runs the unplug protocol for all emulated IDE disks and NICs.
pub fn unplug_emulated_devices() -> Unplug {
    if pio::inw(MAGIC_PORT) != MAGIC {
        return Unplug::NoPlatformDevice;
    }
    let mut io = Pio::new();
    let version = io.inb(VERSION_PORT);
    if version >= 1 {
        pio::outw(PRODUCT_PORT, PRODUCT);
        pio::outl(BUILD_PORT, 1);
        if pio::inw(MAGIC_PORT) != MAGIC {
            return Unplug::Blacklisted;
        }
    }
    let mask = UNPLUG_ALL_IDE_DISKS
        | UNPLUG_ALL_NICS
        | if version >= 1 {
            UNPLUG_AUX_IDE_DISKS
        } else {
            0
        };
    pio::outw(MAGIC_PORT, mask);
    Unplug::Done { version, mask }
}
