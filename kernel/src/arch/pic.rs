//! The legacy 8259A interrupt controllers, remapped to vectors 0x20–0x2f.
//!
//! Xenlet uses them for the COM1 receive interrupt on plain PCs and Xen HVM (both
//! emulate a PIC). All lines start masked; [`unmask`] enables one.

use crate::arch::pio::Pio;
use spin::Mutex;
use xenlet_drivers::pio::PortIo;

/// First vector of the master PIC.
pub const VECTOR_BASE: u8 = 0x20;
const MASTER_CMD: u16 = 0x20;
const MASTER_DATA: u16 = 0x21;
const SLAVE_CMD: u16 = 0xa0;
const SLAVE_DATA: u16 = 0xa1;
const EOI: u8 = 0x20;

static MASKS: Mutex<(u8, u8)> = Mutex::new((0xff, 0xff));

/// Remaps both PICs and masks every line.
pub fn init() {
    let mut io = Pio::new();
    io.outb(MASTER_CMD, 0x11); // ICW1: init, expect ICW4
    io.outb(SLAVE_CMD, 0x11);
    io.outb(MASTER_DATA, VECTOR_BASE); // ICW2: vector offsets
    io.outb(SLAVE_DATA, VECTOR_BASE + 8);
    io.outb(MASTER_DATA, 4); // ICW3: slave on IRQ2
    io.outb(SLAVE_DATA, 2);
    io.outb(MASTER_DATA, 0x01); // ICW4: 8086 mode
    io.outb(SLAVE_DATA, 0x01);
    io.outb(MASTER_DATA, 0xff);
    io.outb(SLAVE_DATA, 0xff);
}

/// Enables ISA IRQ `irq` (0–15).
pub fn unmask(irq: u8) {
    let mut io = Pio::new();
    let mut m = MASKS.lock();
    if irq < 8 {
        m.0 &= !(1 << irq);
    } else if irq < 16 {
        m.1 &= !(1 << (irq - 8));
        m.0 &= !(1 << 2); // cascade
    }
    io.outb(MASTER_DATA, m.0);
    io.outb(SLAVE_DATA, m.1);
}

/// The vector an ISA IRQ arrives on.
pub const fn vector_of(irq: u8) -> u8 {
    VECTOR_BASE + irq
}

/// Kind of a PIC interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Irq {
    /// A real request: handle it, then [`end_of_interrupt`].
    Real,
    /// A spurious IRQ 7/15 (in-service bit clear): do not handle, do not acknowledge.
    Spurious,
}

/// `None` if `vector` is not a PIC vector; otherwise whether it is real or spurious.
pub fn end_of_interrupt_needed(vector: u8) -> Option<Irq> {
    let irq = vector.checked_sub(VECTOR_BASE).filter(|&i| i < 16)?;
    if irq == 7 || irq == 15 {
        let mut io = Pio::new();
        let cmd = if irq == 7 { MASTER_CMD } else { SLAVE_CMD };
        io.outb(cmd, 0x0b); // OCW3: read the in-service register
        if io.inb(cmd) & 0x80 == 0 {
            if irq == 15 {
                io.outb(MASTER_CMD, EOI); // the master did see the cascade
            }
            return Some(Irq::Spurious);
        }
    }
    Some(Irq::Real)
}

/// Acknowledges a real PIC interrupt on `vector`.
pub fn end_of_interrupt(vector: u8) {
    let Some(irq) = vector.checked_sub(VECTOR_BASE).filter(|&i| i < 16) else {
        return;
    };
    let mut io = Pio::new();
    if irq >= 8 {
        io.outb(SLAVE_CMD, EOI);
    }
    io.outb(MASTER_CMD, EOI);
}
