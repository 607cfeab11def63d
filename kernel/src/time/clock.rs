//! The clock source behind [`Instant::now`]: the TSC, calibrated against PIT
//! channel 2 at boot; under Xen, pvclock (`vcpu_time_info`) once the platform layer
//! is up. The switch keeps time continuous and `now()` never goes backwards.

use crate::arch::cpu::rdtsc;
use crate::arch::pio::Pio;
pub use crate::time::instant::Instant;
use crate::time::instant::{tsc_hz_from_pit, TickScale};
use spin::Once;
use xenlet_drivers::pio::PortIo;

impl Instant {
    /// The current time.
    pub fn now() -> Instant {
        now()
    }

    /// Time since this instant.
    pub fn elapsed(self) -> core::time::Duration {
        now().saturating_duration_since(self)
    }
}

/// How the clock was set up, for the boot report.
#[derive(Clone, Copy, Debug)]
pub struct ClockInfo {
    /// TSC frequency in Hz.
    pub tsc_hz: u64,
    /// Where the frequency came from.
    pub source: &'static str,
}

struct Clock {
    scale: TickScale,
    origin_tsc: u64,
    info: ClockInfo,
}

static CLOCK: Once<Clock> = Once::new();

/// A pvclock reader: Xen system time in ns, `None` if no consistent record.
pub type SystemTimeFn = fn() -> Option<u64>;

struct Pv {
    read: SystemTimeFn,
}

static PVCLOCK: Once<Pv> = Once::new();
/// Xen system time at our time zero, wrapping (after a migration to a host whose Xen
/// has run for less time than our clock shows, system time is below our time: the
/// offset is then "negative").
static PV_OFFSET_NS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);
/// Last value returned by `now()`, so the clock is monotonic across sources.
static LAST_NS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Switches the clock to pvclock: `read` returns Xen system time. Time continues
/// from the TSC clock's current value.
pub fn use_pvclock(read: SystemTimeFn) -> bool {
    let Some(sys) = read() else { return false };
    let ours = tsc_now().as_nanos();
    PV_OFFSET_NS.store(sys.wrapping_sub(ours), core::sync::atomic::Ordering::SeqCst);
    PVCLOCK.call_once(|| Pv { read });
    true
}

/// After the domain was restored or migrated, Xen system time is another host's (or
/// the same host's, later). On the same host it went on through the save: time keeps
/// its meaning, the downtime shows as time passed (timers that fell due meanwhile
/// fire, as Linux's do after a resume). Behind our clock (another host, up for less
/// time), the clock goes on from where it stood: `now()` never goes backwards, and
/// the downtime is not seen. Returns the step from the last time read before the
/// suspend to the first after, in ns.
pub fn resume_pvclock() -> u64 {
    let Some(p) = PVCLOCK.get() else { return 0 };
    let Some(sys) = (p.read)() else { return 0 };
    let last = LAST_NS.load(core::sync::atomic::Ordering::SeqCst);
    let offset = PV_OFFSET_NS.load(core::sync::atomic::Ordering::SeqCst);
    let (offset, step) = crate::time::instant::resumed_offset(sys, offset, last);
    PV_OFFSET_NS.store(offset, core::sync::atomic::Ordering::SeqCst);
    step
}

/// Our time for Xen system time `sys` (0 for a system time before our time zero).
fn from_system_time(sys: u64) -> u64 {
    crate::time::instant::from_system_time(
        sys,
        PV_OFFSET_NS.load(core::sync::atomic::Ordering::Relaxed),
    )
}

/// Xen system time (what `VCPUOP_set_singleshot_timer` takes) at `t`, when pvclock
/// is the clock source.
pub fn to_system_time(t: Instant) -> Option<u64> {
    PVCLOCK.get().map(|_| {
        crate::time::instant::to_system_time(
            t.as_nanos(),
            PV_OFFSET_NS.load(core::sync::atomic::Ordering::Relaxed),
        )
    })
}

/// Whether pvclock is the clock source.
pub fn is_pvclock() -> bool {
    PVCLOCK.get().is_some()
}

fn tsc_now() -> Instant {
    match CLOCK.get() {
        Some(c) => Instant::from_nanos(c.scale.ticks_to_ns(rdtsc().saturating_sub(c.origin_tsc))),
        None => Instant::ZERO,
    }
}

/// PIT ticks in the calibration window (10 ms at 1.193182 MHz).
const CALIBRATION_PIT_TICKS: u16 = 11_932;
/// Used when neither CPUID nor the PIT give a frequency (keeps time moving).
const FALLBACK_TSC_HZ: u64 = 1_000_000_000;

/// Measures the TSC against PIT channel 2 (gate via port 0x61, mode 0 one-shot).
fn calibrate_with_pit() -> Option<u64> {
    let mut io = Pio::new();
    let gate = io.inb(0x61);
    // No PIT/port 0x61 at all (Xen PVH): the port reads as all ones, and OUT2 would
    // look set at once.
    if gate == 0xff {
        return None;
    }
    io.outb(0x61, (gate & !0x02) | 0x01); // gate on, speaker off
    io.outb(0x43, 0xb0); // channel 2, lobyte/hibyte, mode 0, binary
    let [lo, hi] = CALIBRATION_PIT_TICKS.to_le_bytes();
    io.outb(0x42, lo);
    io.outb(0x42, hi);
    // Restart the count: gate low then high.
    let g = io.inb(0x61);
    io.outb(0x61, g & !0x01);
    io.outb(0x61, g | 0x01);
    let start = rdtsc();
    // OUT2 (bit 5 of port 0x61) goes high at terminal count. Bounded: a machine with
    // no PIT (Xen PVH) must not hang here.
    let mut spins: u64 = 0;
    while io.inb(0x61) & 0x20 == 0 {
        spins += 1;
        if spins > 50_000_000 {
            io.outb(0x61, gate);
            return None;
        }
    }
    let end = rdtsc();
    io.outb(0x61, gate);
    tsc_hz_from_pit(end.wrapping_sub(start), u64::from(CALIBRATION_PIT_TICKS))
        .filter(|&hz| hz > 10_000_000)
}

/// CPUID leaf 0x15 (TSC/crystal ratio) when it states the crystal frequency.
fn cpuid_tsc_hz() -> Option<u64> {
    use crate::arch::cpu::cpuid;
    if cpuid(0).eax < 0x15 {
        return None;
    }
    let r = cpuid(0x15);
    (r.eax != 0 && r.ebx != 0 && r.ecx != 0)
        .then(|| u64::from(r.ecx) * u64::from(r.ebx) / u64::from(r.eax))
}

/// Xen's TSC leaf (base + 3, subleaf 0): ECX is the guest TSC frequency in kHz.
fn xen_tsc_hz() -> Option<u64> {
    let x = crate::arch::cpu::xen_cpuid()?;
    if x.max_leaf < x.base + 3 {
        return None;
    }
    let khz = u64::from(crate::arch::cpu::cpuid(x.base + 3).ecx);
    (khz > 0).then_some(khz * 1000)
}

/// Calibrates the TSC and starts the clock; `origin_tsc` is time zero (kernel entry).
pub fn init(origin_tsc: u64) -> ClockInfo {
    CLOCK
        .call_once(|| {
            let (tsc_hz, source) = match xen_tsc_hz()
                .map(|hz| (hz, "TSC, Xen CPUID leaf"))
                .or_else(|| cpuid_tsc_hz().map(|hz| (hz, "TSC, CPUID 0x15")))
            {
                Some(found) => found,
                // The shortest of three windows: a window stretched by a slow exit
                // (a loaded host, nested virtualisation) overstates the frequency.
                None => match (0..3).filter_map(|_| calibrate_with_pit()).min() {
                    Some(hz) => (hz, "TSC, PIT-calibrated"),
                    None => (
                        FALLBACK_TSC_HZ,
                        "TSC, uncalibrated (no PIT): times are approximate",
                    ),
                },
            };
            Clock {
                scale: TickScale::from_hz(tsc_hz),
                origin_tsc,
                info: ClockInfo { tsc_hz, source },
            }
        })
        .info
}

/// Now, on the monotonic clock (zero before [`init`]).
pub fn now() -> Instant {
    let raw = match PVCLOCK.get().and_then(|p| (p.read)().map(from_system_time)) {
        Some(ns) => ns,
        None => tsc_now().as_nanos(),
    };
    let prev = LAST_NS.fetch_max(raw, core::sync::atomic::Ordering::Relaxed);
    Instant::from_nanos(raw.max(prev))
}

/// The clock setup, once initialised.
pub fn info() -> Option<ClockInfo> {
    CLOCK.get().map(|c| c.info)
}
