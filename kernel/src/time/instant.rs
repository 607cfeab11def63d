//! The monotonic clock: one `Instant` type for the shell, `dd` and smoltcp.
//!
//! Time is nanoseconds since boot from a [`ClockSource`]. Today that is the TSC,
//! calibrated against the PIT at boot; under Xen, pvclock (`vcpu_time_info`) slots in
//! behind the same API. The conversion math is pure and tested on the host.

use core::fmt;
use core::ops::{Add, Sub};
use core::time::Duration;

/// A point on the monotonic clock, in nanoseconds since the clock started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant {
    ns: u64,
}

impl Instant {
    /// The clock's origin (boot).
    pub const ZERO: Instant = Instant { ns: 0 };

    /// From nanoseconds since boot.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant { ns }
    }

    /// Nanoseconds since boot.
    pub const fn as_nanos(self) -> u64 {
        self.ns
    }

    /// Microseconds since boot (smoltcp's unit).
    pub const fn as_micros(self) -> u64 {
        self.ns / 1000
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.ns.saturating_sub(earlier.ns))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant {
            ns: self
                .ns
                .saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        }
    }
}

impl Sub for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:06}",
            self.ns / 1_000_000_000,
            (self.ns % 1_000_000_000) / 1000
        )
    }
}

/// Fixed-point conversion of counter ticks to nanoseconds: `ns = ticks * mul >> 32`,
/// the same scheme as Xen's `vcpu_time_info` (`tsc_to_system_mul`, `tsc_shift`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickScale {
    mul: u64,
    shift: i8,
}

impl TickScale {
    /// Scale for a counter running at `hz` ticks per second (`hz` > 0).
    pub fn from_hz(hz: u64) -> Self {
        // Pick shift so that mul = 1e9 << 32 >> shift fits comfortably in 32 bits.
        // Xen's convention: a positive shift multiplies the ticks, a negative one divides.
        let mut shift: i8 = 0;
        let mut f = hz.max(1);
        while f > 2_000_000_000 {
            f /= 2;
            shift -= 1;
        }
        while f < 1_000_000_000 / 2 {
            f *= 2;
            shift += 1;
        }
        let mul = ((1_000_000_000u128 << 32) / u128::from(f)) as u64;
        TickScale { mul, shift }
    }

    /// From Xen's pvclock fields (`tsc_to_system_mul`, `tsc_shift`).
    pub const fn from_pvclock(mul: u32, shift: i8) -> Self {
        TickScale {
            mul: mul as u64,
            shift,
        }
    }

    /// Converts a tick count to nanoseconds.
    pub fn ticks_to_ns(self, ticks: u64) -> u64 {
        let t = if self.shift >= 0 {
            u128::from(ticks) << self.shift
        } else {
            u128::from(ticks) >> (-self.shift)
        };
        u64::try_from((t * u128::from(self.mul)) >> 32).unwrap_or(u64::MAX)
    }

    /// The counter frequency this scale implies, in Hz.
    pub fn hz(self) -> u64 {
        let ns_per_2e9 = self.ticks_to_ns(2_000_000_000);
        if ns_per_2e9 == 0 {
            return 0;
        }
        u64::try_from(2_000_000_000u128 * 1_000_000_000 / u128::from(ns_per_2e9)).unwrap_or(0)
    }
}

/// TSC frequency from a calibration window: `tsc_delta` ticks during
/// `pit_ticks` of the 1.193182 MHz PIT.
pub fn tsc_hz_from_pit(tsc_delta: u64, pit_ticks: u64) -> Option<u64> {
    const PIT_HZ: u128 = 1_193_182;
    if pit_ticks == 0 || tsc_delta == 0 {
        return None;
    }
    u64::try_from(u128::from(tsc_delta) * PIT_HZ / u128::from(pit_ticks)).ok()
}

/// Xenlet's time for Xen system time `sys` when Xen system time stood at `offset`
/// (two's complement: it may be "negative", see [`resumed_offset`]) at our time zero;
/// 0 for a system time before it.
pub fn from_system_time(sys: u64, offset: u64) -> u64 {
    (i128::from(sys) - i128::from(offset as i64)).clamp(0, i128::from(u64::MAX)) as u64
}

/// Xen system time at our time `t` (the inverse of [`from_system_time`]).
pub fn to_system_time(t: u64, offset: u64) -> u64 {
    (i128::from(t) + i128::from(offset as i64)).clamp(0, i128::from(u64::MAX)) as u64
}

/// After a restore or migration: Xen system time now is `sys`, our clock last read
/// `last` under `offset`. On the same host system time went on through the save, and
/// the offset stays (the downtime shows as time passed); on a host whose Xen has run
/// for less time our time would go backwards, so the offset moves to continue from
/// `last`. Returns (the offset to use, the step our time takes from `last`).
pub fn resumed_offset(sys: u64, offset: u64, last: u64) -> (u64, u64) {
    let ours = from_system_time(sys, offset);
    if ours >= last {
        (offset, ours - last)
    } else {
        (sys.wrapping_sub(last), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restore_keeps_time_going_forward_on_any_host() {
        use super::{from_system_time, resumed_offset, to_system_time};
        // booted when Xen's system time was 100 s; our clock stood at 50 s
        let off = 100_000_000_000u64;
        let last = 50_000_000_000u64;
        // the same host, 30 s later: system time 180 s, the offset stays and the
        // 30 s of downtime show
        assert_eq!(
            resumed_offset(180_000_000_000, off, last),
            (off, 30_000_000_000)
        );
        // another host up for 10 s only: our time goes on from 50 s, not back to 0
        let (o, step) = resumed_offset(10_000_000_000, off, last);
        assert_eq!(step, 0);
        assert_eq!(from_system_time(10_000_000_000, o), last);
        assert_eq!(from_system_time(11_000_000_000, o), last + 1_000_000_000);
        // and the one-shot timer's deadlines convert back to that host's time
        assert_eq!(to_system_time(last + 2_000_000_000, o), 12_000_000_000);
        // a system time before our zero reads as 0, not as a huge wrapped value
        assert_eq!(from_system_time(5, 100), 0);
    }

    #[test]
    fn scale_converts_common_frequencies() {
        for hz in [
            1_000_000u64,
            1_193_182,
            999_999_999,
            2_893_000_000,
            3_600_000_000,
            5_000_000_000,
        ] {
            let s = TickScale::from_hz(hz);
            let ns = s.ticks_to_ns(hz); // one second of ticks
            assert!(
                (999_999_000..=1_000_001_000).contains(&ns),
                "{hz} Hz -> {ns} ns"
            );
            let back = s.hz();
            assert!(back.abs_diff(hz) * 100_000 <= hz, "{hz} vs {back}");
        }
    }

    #[test]
    fn scale_survives_a_year_of_ticks_at_5ghz() {
        let s = TickScale::from_hz(5_000_000_000);
        let year_ticks = 5_000_000_000u64 * 3600 * 24 * 365;
        let ns = s.ticks_to_ns(year_ticks);
        let want = 1_000_000_000u64 * 3600 * 24 * 365;
        assert!(ns.abs_diff(want) < want / 100_000);
    }

    #[test]
    fn pvclock_scale_matches_xen_formula() {
        // Xen: ns = ((tsc << shift) * mul) >> 32 with shift = -1, mul = 2^32 => tsc/2
        let s = TickScale::from_pvclock(u32::MAX, -1);
        assert_eq!(s.ticks_to_ns(2_000), 999);
    }

    #[test]
    fn pit_calibration_math() {
        assert_eq!(tsc_hz_from_pit(1_000_000, 1_193_182), Some(1_000_000));
        // 10 ms window (11932 PIT ticks) on a 2.9 GHz TSC
        assert_eq!(tsc_hz_from_pit(29_000_000, 11_932), Some(2_899_956_252));
        assert_eq!(tsc_hz_from_pit(0, 100), None);
        assert_eq!(tsc_hz_from_pit(100, 0), None);
    }

    #[test]
    fn instant_arithmetic_saturates() {
        let a = Instant::from_nanos(1_500_000_000);
        let b = a + Duration::from_millis(500);
        assert_eq!(b.as_nanos(), 2_000_000_000);
        assert_eq!(b - a, Duration::from_millis(500));
        assert_eq!(a - b, Duration::ZERO);
        assert_eq!(format!("{b}"), "2.000000");
        assert_eq!(
            (Instant::from_nanos(u64::MAX - 1) + Duration::from_secs(5)).as_nanos(),
            u64::MAX
        );
    }
}
