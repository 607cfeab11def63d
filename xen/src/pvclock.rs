//! pvclock: Xen's system time from `vcpu_time_info` (xen/include/public/xen.h).
//!
//! `system_time` (ns) was valid at `tsc_timestamp`; now is
//! `system_time + ((tsc - tsc_timestamp) << tsc_shift) * tsc_to_system_mul >> 32`.
//! Xen bumps `version` to odd while it rewrites the record and to even after, so a
//! read is retried until it sees the same even version before and after.

/// One consistent copy of `vcpu_time_info`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeInfo {
    /// Record version (even when consistent).
    pub version: u32,
    /// TSC at the last update.
    pub tsc_timestamp: u64,
    /// System time (ns) at the last update.
    pub system_time: u64,
    /// TSC → ns multiplier (32.32 fixed point).
    pub tsc_to_system_mul: u32,
    /// TSC shift (positive: left).
    pub tsc_shift: i8,
    /// Flags (bit 0: TSC stable).
    pub flags: u8,
}

impl TimeInfo {
    /// Decodes the 32-byte record.
    pub fn decode(b: &[u8; 32]) -> Self {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | (u64::from(u32_at(o + 4)) << 32);
        TimeInfo {
            version: u32_at(0),
            tsc_timestamp: u64_at(8),
            system_time: u64_at(16),
            tsc_to_system_mul: u32_at(24),
            tsc_shift: b[28] as i8,
            flags: b[29],
        }
    }

    /// System time in ns at TSC value `tsc`.
    pub fn system_time_at(&self, tsc: u64) -> u64 {
        let delta = u128::from(tsc.saturating_sub(self.tsc_timestamp));
        let shifted = if self.tsc_shift >= 0 {
            delta << self.tsc_shift
        } else {
            delta >> (-i32::from(self.tsc_shift))
        };
        let ns = (shifted * u128::from(self.tsc_to_system_mul)) >> 32;
        self.system_time
            .saturating_add(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// TSC frequency implied by the multiplier and shift, in Hz.
    pub fn tsc_hz(&self) -> u64 {
        if self.tsc_to_system_mul == 0 {
            return 0;
        }
        let mut hz = (1_000_000_000u128 << 32) / u128::from(self.tsc_to_system_mul);
        if self.tsc_shift >= 0 {
            hz >>= self.tsc_shift;
        } else {
            hz <<= -i32::from(self.tsc_shift);
        }
        u64::try_from(hz).unwrap_or(u64::MAX)
    }
}

/// Reads a consistent record with `read` (copies the 32 bytes out of shared info)
/// and the TSC with `tsc` inside the same version window, retrying while Xen is
/// updating the record: (record, TSC). `None` after 1000 torn reads.
///
/// The TSC is read between the two copies, as Linux's `pvclock_clocksource_read`
/// reads it inside its version loop: a TSC read after the window could belong to a
/// newer record (the vCPU moved to another physical CPU and Xen rewrote the record
/// for it), and the time would then be computed against the wrong stamp.
pub fn read_consistent(
    read: impl Fn() -> [u8; 32],
    tsc: impl Fn() -> u64,
) -> Option<(TimeInfo, u64)> {
    for _ in 0..1000 {
        let a = TimeInfo::decode(&read());
        if a.version % 2 == 1 {
            core::hint::spin_loop();
            continue;
        }
        let now = tsc();
        let b = TimeInfo::decode(&read());
        if a == b {
            return Some((a, now));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;

    fn record(version: u32, tsc: u64, sys: u64, mul: u32, shift: i8) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&version.to_le_bytes());
        b[8..16].copy_from_slice(&tsc.to_le_bytes());
        b[16..24].copy_from_slice(&sys.to_le_bytes());
        b[24..28].copy_from_slice(&mul.to_le_bytes());
        b[28] = shift as u8;
        b
    }

    #[test]
    fn converts_like_xen() {
        // 2 GHz TSC: shift -1 halves ticks, mul 2^32-ish = 1.0 → 0.5 ns per tick
        let t = TimeInfo::decode(&record(2, 1000, 5_000_000, u32::MAX, -1));
        assert_eq!(t.system_time_at(1000), 5_000_000);
        assert_eq!(
            t.system_time_at(1000 + 2_000_000_000),
            5_000_000 + 999_999_999
        );
        assert!(t.tsc_hz().abs_diff(2_000_000_000) < 10);
        assert_eq!(
            t.system_time_at(10),
            5_000_000,
            "a TSC before the stamp does not go back"
        );
    }

    #[test]
    fn retries_torn_reads() {
        let n = Cell::new(0u32);
        let (t, tsc) = read_consistent(
            || {
                n.set(n.get() + 1);
                match n.get() {
                    1 => record(3, 0, 0, 1, 0),    // being updated
                    2 => record(4, 10, 100, 1, 0), // first half of a read…
                    3 => record(6, 20, 200, 1, 0), // …torn: version moved on
                    _ => record(6, 20, 200, 1, 0),
                }
            },
            || 1000 + u64::from(n.get()),
        )
        .unwrap();
        assert_eq!(t.version, 6);
        assert_eq!(t.system_time, 200);
        // the TSC of the window that held: read after the 4th copy, before the 5th
        assert_eq!(tsc, 1004);
        assert_eq!(read_consistent(|| record(1, 0, 0, 0, 0), || 0), None);
    }

    #[test]
    fn the_tsc_is_read_inside_the_window_it_is_used_with() {
        // Xen rewrites the record (a new stamp for another physical CPU) right after
        // the TSC was read: that window is torn, and the pair returned is the next
        // window's record with the next window's TSC.
        let copies = Cell::new(0);
        let reads = Cell::new(0);
        let (t, tsc) = read_consistent(
            || {
                copies.set(copies.get() + 1);
                if copies.get() <= 1 {
                    record(2, 100, 1_000, 1, 0)
                } else {
                    record(4, 5_000, 9_000, 1, 0)
                }
            },
            || {
                reads.set(reads.get() + 1);
                [0, 200, 5_100][reads.get()]
            },
        )
        .unwrap();
        assert_eq!((t.version, t.tsc_timestamp, tsc), (4, 5_000, 5_100));
    }
}
