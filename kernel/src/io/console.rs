//! Kernel console: text output to every registered [`Console`], and serial input.
//!
//! COM1 is the console on PCs, QEMU and Xen HVM. Output is written with interrupts
//! off so an interrupt handler can never deadlock on the console lock. Input bytes are
//! moved by the COM1 interrupt handler from the UART FIFO into a 16 KiB ring, so a
//! pasted burst is not lost while the shell is busy running a command.
//!
//! Under Xen, the PV console ring (io/console.h, served by xenconsoled: `xl console`)
//! is a second console: output goes to both, input comes from both. Under PVH it is
//! the only one (no emulated UART).

use crate::arch::{pic, pio::Pio, trap};
use crate::sync::irqlock::IrqLock;
use core::fmt::{self, Write};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use xenlet_drivers::bytering::ByteRing;
use xenlet_drivers::console::{write_crlf, Console};
use xenlet_drivers::uart16550::{Uart16550, COM1, COM1_IRQ};
use xenlet_xen::console::ConsoleRing;
use xenlet_xen::evtchn::Port;

static COM1_UART: IrqLock<Option<Uart16550<Pio>>> = IrqLock::new(None);
static XEN_CONSOLE: IrqLock<Option<XenConsole>> = IrqLock::new(None);
/// A second handle on the PV console's ring for the fault path alone: used when the
/// fault interrupted a write that holds [`XEN_CONSOLE`] (under PVH the PV console is
/// the only console, and the report would be lost), as Linux's
/// `xen_raw_console_write` writes without the console's locks.
static XEN_CONSOLE_EMERGENCY: IrqLock<Option<XenConsole>> = IrqLock::new(None);

/// The Xen PV console: its ring and event channel.
struct XenConsole {
    ring: ConsoleRing,
    port: Port,
    hv: PvConsoleOps,
    /// The ring stayed full past [`PV_CONSOLE_WAIT`]: until it drains again,
    /// output that does not fit is dropped at once instead of waited for.
    congested: bool,
}

/// What the PV console needs from the Xen platform layer, which sits above this one
/// and registers them with [`attach_xen_console`]: both are single hypercalls that
/// neither allocate nor take a lock, so the fault path may call them.
#[derive(Clone, Copy)]
pub struct PvConsoleOps {
    /// Signals the console's event channel (`EVTCHNOP_send`).
    pub notify: fn(Port),
    /// Gives the CPU away while the backend catches up (`SCHEDOP_yield`).
    pub yield_cpu: fn(),
}

/// The longest the console waits for xenconsoled to make room in the ring, once per
/// stall. A write holds the console with interrupts off, so this bounds what a
/// console that stopped draining (dom0 busy, xenconsoled stalled) costs the vifs and
/// disks (their events wait meanwhile); output that does not fit by then is dropped
/// and counted, and so is all that does not fit until the ring drains again. (It
/// waited for up to 20,000 `SCHEDOP_yield`s per write before.)
const PV_CONSOLE_WAIT: core::time::Duration = core::time::Duration::from_millis(20);

/// Bytes of output the PV console dropped because its ring stayed full.
static PV_DROPPED: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Bytes the PV console dropped (its backend did not drain the ring in time).
pub fn pv_console_dropped() -> u64 {
    PV_DROPPED.load(core::sync::atomic::Ordering::Relaxed)
}

impl XenConsole {
    /// Queues all of `bytes`, waiting (at most [`PV_CONSOLE_WAIT`] in all) while
    /// xenconsoled drains the ring; what does not fit by then is dropped.
    fn write_all(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        let mut give_up = None;
        while !rest.is_empty() && !self.ring.is_broken() {
            let n = self.ring.write(rest);
            (self.hv.notify)(self.port);
            rest = &rest[n..];
            if n > 0 {
                self.congested = false;
            } else {
                let now = crate::time::clock::now();
                let end = *give_up.get_or_insert(now + PV_CONSOLE_WAIT);
                if self.congested || now >= end {
                    self.congested = true;
                    // the backend stopped reading: drop output rather than hold
                    // everything else up
                    PV_DROPPED.fetch_add(rest.len() as u64, core::sync::atomic::Ordering::Relaxed);
                    return;
                }
                (self.hv.yield_cpu)();
            }
        }
    }

    /// Writes with "\n" sent as "\r\n" (a terminal on the other end).
    fn write_translated(&mut self, bytes: &[u8]) {
        write_crlf(bytes, |piece| self.write_all(piece));
    }
}

/// Adds the Xen PV console (`HVM_PARAM_CONSOLE_PFN`) as a console and input source;
/// `emergency` is a second handle on the same ring, written only by the fault path
/// when a fault interrupted a console write (see [`emergency_write`]).
pub fn attach_xen_console(ring: ConsoleRing, emergency: ConsoleRing, port: Port, hv: PvConsoleOps) {
    x86_64::instructions::interrupts::without_interrupts(|| {
        *XEN_CONSOLE.lock() = Some(XenConsole {
            ring,
            port,
            hv,
            congested: false,
        });
        *XEN_CONSOLE_EMERGENCY.lock() = Some(XenConsole {
            ring: emergency,
            port,
            hv,
            congested: false,
        });
    });
}

/// The PV console's event channel changed (the domain was restored or migrated: the
/// ring page is the same, its channel is new).
pub fn set_xen_console_port(port: Port) {
    x86_64::instructions::interrupts::without_interrupts(|| {
        for c in [&XEN_CONSOLE, &XEN_CONSOLE_EMERGENCY] {
            if let Some(c) = c.lock().as_mut() {
                c.port = port;
                c.congested = false;
            }
        }
    });
}

/// Whether a PV console is attached (and not broken).
pub fn has_xen_console() -> bool {
    x86_64::instructions::interrupts::without_interrupts(|| {
        XEN_CONSOLE
            .lock()
            .as_ref()
            .is_some_and(|c| !c.ring.is_broken())
    })
}

/// Moves PV console input into the input ring.
pub fn poll_xen_console() {
    x86_64::instructions::interrupts::without_interrupts(|| {
        if let Some(c) = XEN_CONSOLE.lock().as_mut() {
            let mut rx = RX.lock();
            if c.ring.read(|b| {
                rx.push(b);
            }) > 0
            {
                (c.hv.notify)(c.port);
            }
        }
    });
}

/// Waits (bounded) until the PV console backend has taken all output, so the last
/// lines before a shutdown are not lost.
pub fn flush() {
    flush_with(|| Some(XEN_CONSOLE.lock()));
}

/// [`flush`] for the fault path: never waits for the console lock (the fault may
/// have interrupted its holder); a console it cannot take is not flushed.
pub fn flush_emergency() {
    flush_with(|| XEN_CONSOLE.try_lock());
}

fn flush_with<'a>(
    mut lock: impl FnMut() -> Option<crate::sync::irqlock::IrqGuard<'a, Option<XenConsole>>>,
) {
    for _ in 0..20_000 {
        let Some(g) = lock() else { return };
        let (pending, yield_cpu) = g.as_ref().map_or((0, None), |c| {
            let pending = if c.ring.is_broken() {
                0
            } else {
                c.ring.out_pending()
            };
            (pending, Some(c.hv.yield_cpu))
        });
        drop(g);
        let Some(yield_cpu) = yield_cpu.filter(|_| pending > 0) else {
            return;
        };
        yield_cpu();
    }
}
static RX: IrqLock<ByteRing<16384>> = IrqLock::new(ByteRing::new());

/// Brings up COM1 (probe + program). Returns whether a UART answered.
pub fn init_serial() -> bool {
    let uart = Uart16550::new(Pio::new(), COM1);
    let present = uart.is_present();
    *COM1_UART.lock() = Some(uart);
    present
}

/// Routes the COM1 receive interrupt through the PIC to [`on_com1_irq`].
pub fn enable_serial_irq() -> bool {
    let ok = trap::register(pic::vector_of(COM1_IRQ), on_com1_irq);
    if ok {
        pic::unmask(COM1_IRQ);
        SERIAL_IRQ_ON.store(true, Ordering::SeqCst);
    }
    ok
}

/// COM1's receive interrupt is routed: input comes with it, and the loops need not
/// read the UART's line status at every turn.
static SERIAL_IRQ_ON: AtomicBool = AtomicBool::new(false);
/// When the UART was last polled without its interrupt (ns since boot).
static SERIAL_POLLED_NS: AtomicU64 = AtomicU64::new(0);
/// How often a loop still polls the UART when its interrupt is routed: only a
/// backstop for a lost interrupt.
const SERIAL_BACKSTOP_NS: u64 = 100_000_000;

/// The shell loop's look at the UART: every turn while its interrupt is not routed,
/// else at most once per [`SERIAL_BACKSTOP_NS`] of turns (no timer of its own: a
/// lost interrupt's bytes are taken at the first turn after that). Under HVM every read of the line status is a
/// trap to the device model in dom0 (QEMU): read at each of the loop's turns, that
/// was 56-63 % of dom0's CPU samples while `bench net` moved a GB/s through the
/// guest (the turns follow the vif's events).
pub fn poll_serial_backstop(now_ns: u64) {
    if SERIAL_IRQ_ON.load(Ordering::SeqCst)
        && now_ns.saturating_sub(SERIAL_POLLED_NS.load(Ordering::SeqCst)) < SERIAL_BACKSTOP_NS
    {
        return;
    }
    SERIAL_POLLED_NS.store(now_ns, Ordering::SeqCst);
    poll_serial();
}

fn on_com1_irq(_vector: u8) {
    poll_serial();
}

/// Moves waiting bytes from the UART into the input ring (also used by polling).
pub fn poll_serial() {
    x86_64::instructions::interrupts::without_interrupts(|| {
        if let Some(u) = COM1_UART.lock().as_mut() {
            let mut rx = RX.lock();
            u.drain_rx(|b| {
                rx.push(b);
            });
        }
    });
}

/// Takes the next input byte, if any.
pub fn read_byte() -> Option<u8> {
    x86_64::instructions::interrupts::without_interrupts(|| RX.lock().pop())
}

/// Whether Ctrl-C was typed: takes it (and what was typed before it) off the input.
pub fn take_interrupt() -> bool {
    x86_64::instructions::interrupts::without_interrupts(|| RX.lock().take_through(3))
}

/// Whether input bytes wait in the ring.
pub fn input_pending() -> bool {
    x86_64::instructions::interrupts::without_interrupts(|| !RX.lock().is_empty())
}

/// Input statistics: (bytes dropped because the ring was full, UART overruns).
pub fn input_losses() -> (u64, u64) {
    x86_64::instructions::interrupts::without_interrupts(|| {
        let dropped = RX.lock().dropped();
        let overruns = COM1_UART.lock().as_ref().map_or(0, |u| u.overruns());
        (dropped, overruns)
    })
}

/// Writes bytes to every console.
pub fn write_bytes(bytes: &[u8]) {
    x86_64::instructions::interrupts::without_interrupts(|| {
        if let Some(u) = COM1_UART.lock().as_mut() {
            u.write_bytes(bytes);
        }
        if let Some(c) = XEN_CONSOLE.lock().as_mut() {
            c.write_translated(bytes);
        }
    });
}

/// Writes from a context that may have interrupted a console writer (fault or panic):
/// takes the lock if free, else uses a fresh handle on COM1.
pub fn emergency_write(bytes: &[u8]) {
    match COM1_UART.try_lock() {
        Some(mut g) => {
            if let Some(u) = g.as_mut() {
                u.write_bytes(bytes);
            }
        }
        None => Uart16550::new(Pio::new(), COM1).write_bytes(bytes),
    }
    // The PV console: its own lock if free, else (the fault interrupted a console
    // write, which never resumes: the fault path ends the domain) the second handle.
    let mut g = XEN_CONSOLE.try_lock();
    let mut e = None;
    if g.is_none() {
        e = XEN_CONSOLE_EMERGENCY.try_lock();
    }
    if let Some(c) = g
        .as_deref_mut()
        .or(e.as_deref_mut())
        .and_then(Option::as_mut)
    {
        c.write_translated(bytes);
    }
}

/// Runs `f` holding the consoles' locks as a console write does (for the `crash
/// console` test of the fault path).
pub fn while_writing<R>(f: impl FnOnce() -> R) -> R {
    let _uart = COM1_UART.lock();
    let _xen = XEN_CONSOLE.lock();
    f()
}

/// `fmt::Write` into the consoles.
pub struct ConsoleWriter;

impl Write for ConsoleWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        write_bytes(s.as_bytes());
        Ok(())
    }
}

/// `fmt::Write` for fault and panic reports.
pub struct EmergencyWriter;

impl Write for EmergencyWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        emergency_write(s.as_bytes());
        Ok(())
    }
}
