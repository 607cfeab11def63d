//! 16550A UART driver (COM1 at 0x3f8, 115200 8N1, receive interrupt, FIFOs on).
//!
//! Register map (offsets from the base port): 0 RBR/THR (DLL with DLAB), 1 IER (DLM
//! with DLAB), 2 IIR/FCR, 3 LCR, 4 MCR, 5 LSR, 7 SCR. Under Xen HVM every port access
//! is an exit to QEMU in dom0, so transmit fills the 16-byte FIFO per LSR poll instead
//! of polling before every byte.

use crate::console::{write_crlf, Console};
use crate::pio::PortIo;

const RBR_THR: u16 = 0;
const IER: u16 = 1;
const FCR: u16 = 2;
const LCR: u16 = 3;
const MCR: u16 = 4;
const LSR: u16 = 5;
const SCR: u16 = 7;

const LSR_DATA_READY: u8 = 1 << 0;
const LSR_OVERRUN: u8 = 1 << 1;
const LSR_THR_EMPTY: u8 = 1 << 5;

/// The 16550's transmit FIFO depth.
const TX_FIFO_BYTES: usize = 16;
/// LSR polls before transmit gives up on a stuck or absent UART.
const TX_SPIN_LIMIT: u32 = 1_000_000;

/// Base port of COM1.
pub const COM1: u16 = 0x3f8;
/// ISA IRQ line of COM1.
pub const COM1_IRQ: u8 = 4;

/// A 16550 UART at a base port, over a port-I/O implementation.
pub struct Uart16550<P: PortIo> {
    io: P,
    base: u16,
    present: bool,
    overruns: u64,
}

impl<P: PortIo> Uart16550<P> {
    /// Probes and programs the UART for 115200 8N1 with FIFOs and the receive
    /// interrupt on. A missing UART (scratch register does not hold a value, as under
    /// Xen PVH) leaves the driver inert: writes are dropped, nothing is read.
    pub fn new(mut io: P, base: u16) -> Self {
        io.outb(base + SCR, 0xa5);
        let present = io.inb(base + SCR) == 0xa5;
        if present {
            io.outb(base + IER, 0x00);
            io.outb(base + LCR, 0x80); // DLAB on
            io.outb(base + RBR_THR, 0x01); // divisor 1 = 115200 baud
            io.outb(base + IER, 0x00);
            io.outb(base + LCR, 0x03); // 8N1, DLAB off
            io.outb(base + FCR, 0xc7); // FIFOs on, cleared, 14-byte RX trigger
            io.outb(base + MCR, 0x0b); // DTR, RTS, OUT2 (routes the IRQ)
            io.outb(base + IER, 0x01); // interrupt on received data
        }
        Uart16550 {
            io,
            base,
            present,
            overruns: 0,
        }
    }

    /// Whether a UART answered the probe.
    pub fn is_present(&self) -> bool {
        self.present
    }

    /// Receive overruns seen in LSR (bytes the hardware lost before we read them).
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    /// Reads every byte waiting in the receive FIFO into `sink`.
    pub fn drain_rx(&mut self, mut sink: impl FnMut(u8)) {
        if !self.present {
            return;
        }
        // Bounded: a device that always says "data ready" cannot wedge the kernel.
        for _ in 0..4096 {
            let lsr = self.io.inb(self.base + LSR);
            if lsr & LSR_OVERRUN != 0 {
                self.overruns += 1;
            }
            if lsr & LSR_DATA_READY == 0 {
                break;
            }
            sink(self.io.inb(self.base + RBR_THR));
        }
    }

    /// Sends raw bytes (no newline translation).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        if !self.present {
            return;
        }
        for chunk in bytes.chunks(TX_FIFO_BYTES) {
            let mut spins = 0;
            while self.io.inb(self.base + LSR) & LSR_THR_EMPTY == 0 {
                spins += 1;
                if spins == TX_SPIN_LIMIT {
                    self.present = false; // a transmitter that never drains: stop using it
                    return;
                }
                core::hint::spin_loop();
            }
            for &b in chunk {
                self.io.outb(self.base + RBR_THR, b);
            }
        }
    }
}

impl<P: PortIo + Send> Console for Uart16550<P> {
    fn name(&self) -> &'static str {
        "com1"
    }

    fn write_bytes(&mut self, bytes: &[u8]) {
        write_crlf(bytes, |piece| self.send_raw(piece));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A fake UART: records transmitted bytes and serves a receive queue.
    #[derive(Default)]
    struct FakeUart {
        scratch: u8,
        absent: bool,
        tx: Vec<u8>,
        rx: VecDeque<u8>,
        lsr_reads: usize,
        writes: Vec<(u16, u8)>,
    }

    impl PortIo for &mut FakeUart {
        fn inb(&mut self, port: u16) -> u8 {
            if self.absent {
                return 0xff;
            }
            match port - COM1 {
                SCR => self.scratch,
                LSR => {
                    self.lsr_reads += 1;
                    LSR_THR_EMPTY
                        | if self.rx.is_empty() {
                            0
                        } else {
                            LSR_DATA_READY
                        }
                }
                RBR_THR => self.rx.pop_front().unwrap_or(0),
                _ => 0,
            }
        }
        fn outb(&mut self, port: u16, value: u8) {
            self.writes.push((port, value));
            match port - COM1 {
                SCR => self.scratch = value,
                RBR_THR if self.writes.len() > 9 => self.tx.push(value),
                _ => {}
            }
        }
    }

    #[test]
    fn programs_115200_8n1_and_translates_newlines() {
        let mut f = FakeUart::default();
        let mut u = Uart16550::new(&mut f, COM1);
        assert!(u.is_present());
        u.write_bytes(b"a\nb");
        let _ = u;
        assert_eq!(f.tx, b"a\r\nb");
        assert!(f.writes.contains(&(COM1 + LCR, 0x03)));
        assert!(f.writes.contains(&(COM1 + RBR_THR, 0x01)));
        assert!(f.writes.contains(&(COM1 + IER, 0x01)));
    }

    #[test]
    fn transmit_polls_once_per_fifo_load() {
        let mut f = FakeUart::default();
        let mut u = Uart16550::new(&mut f, COM1);
        u.send_raw(&[b'x'; 64]);
        let _ = u;
        assert_eq!(f.tx.len(), 64);
        assert_eq!(f.lsr_reads, 4);
    }

    #[test]
    fn drains_receive_fifo_in_order() {
        let mut f = FakeUart::default();
        f.rx.extend(b"hello");
        let mut u = Uart16550::new(&mut f, COM1);
        let mut got = Vec::new();
        u.drain_rx(|b| got.push(b));
        assert_eq!(got, b"hello");
    }

    #[test]
    fn absent_uart_is_inert() {
        let mut f = FakeUart {
            absent: true,
            ..Default::default()
        };
        let mut u = Uart16550::new(&mut f, COM1);
        assert!(!u.is_present());
        u.write_bytes(b"dropped");
        let mut n = 0;
        u.drain_rx(|_| n += 1);
        assert_eq!(n, 0);
        let _ = u;
        assert!(f.tx.is_empty());
    }
}
