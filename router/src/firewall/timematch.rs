//! Time matches of a rule: firewall4's `start_date`/`stop_date` (nft `meta time`),
//! `start_time`/`stop_time` (`meta hour`), `weekdays` (`meta day`), and `monthdays`
//! (fw3's `xt_time --monthdays`; fw4 warns it unsupported and ignores it), judged
//! against the wall clock.
//!
//! Times are civil: a date or time of day means that reading of a clock in UTC, or
//! in local time (UTC plus [`WallClock::utc_offset_secs`]) unless the rule says
//! `utc_time`. Xenlet has no time zone database: the offset is a fixed one (no
//! daylight saving; the kernel takes it from `/etc/config/system`), 0 when none is
//! known, so local time is UTC then.
//!
//! Ranges are inclusive, as nft's are. A time-of-day range whose start is after its
//! stop (`22:00`-`06:00`) wraps past midnight: before the stop or from the start on,
//! as nft (which turns it into `!=` the range between) and `xt_time` do. A date
//! without a time is its midnight (`stop_date 2025-12-31` ends at 00:00:00 that day,
//! as fw4's `meta time <= "2025-12-31"` does).
//!
//! Nothing here allocates: a match is a few integer operations.

use crate::Millis;

const DAY: i64 = 86_400;

/// The wall clock: the Unix time at which the router's clock ([`Millis`]) read 0,
/// and the local time's offset from UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallClock {
    /// Unix time in milliseconds when the monotonic clock read 0.
    pub unix_ms_at_zero: i64,
    /// Local time minus UTC, in seconds (east positive; `UTC-3` in POSIX TZ form is
    /// +3 h).
    pub utc_offset_secs: i32,
}

impl WallClock {
    /// Unix seconds at `now`.
    pub fn unix_secs(&self, now: Millis) -> i64 {
        let now = i64::try_from(now).unwrap_or(i64::MAX);
        self.unix_ms_at_zero.saturating_add(now).div_euclid(1000)
    }
}

/// A set of days with fw4's `!` (any day but these).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DaySet {
    /// Bit `n` set: day `n` is in the set (weekdays: 0 Monday .. 6 Sunday; month
    /// days: 1..=31).
    pub days: u32,
    /// Negated (`!`: any day but these).
    pub invert: bool,
}

impl DaySet {
    fn matches(&self, day: u32) -> bool {
        let has = day < 32 && self.days & (1 << day) != 0;
        has != self.invert
    }
}

/// A rule's time conditions (all that are present must hold), one field an option.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeMatch {
    /// `utc_time`: judge in UTC rather than local time.
    pub utc: bool,
    /// `start_date`: from this civil time (seconds since 1970-01-01 00:00:00 of the
    /// clock used).
    pub start_date: Option<i64>,
    /// `stop_date`: until this civil time (inclusive).
    pub stop_date: Option<i64>,
    /// `start_time`: from this second of the day (0..86400).
    pub start_time: Option<u32>,
    /// `stop_time`: until this second of the day (inclusive).
    pub stop_time: Option<u32>,
    /// `weekdays`: days of the week.
    pub weekdays: Option<DaySet>,
    /// `monthdays`: days of the month.
    pub monthdays: Option<DaySet>,
}

/// (year, month 1..=12, day 1..=31) of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m as u32, d as u32)
}

impl TimeMatch {
    /// Whether the conditions hold at Unix time `unix` with local time `offset`
    /// seconds ahead of UTC.
    pub fn matches(&self, unix: i64, offset: i32) -> bool {
        let t = if self.utc {
            unix
        } else {
            unix.saturating_add(i64::from(offset))
        };
        if self.start_date.is_some_and(|s| t < s) || self.stop_date.is_some_and(|s| t > s) {
            return false;
        }
        let days = t.div_euclid(DAY);
        let sod = t.rem_euclid(DAY) as u32;
        let time_ok = match (self.start_time, self.stop_time) {
            (None, None) => true,
            (Some(a), None) => sod >= a,
            (None, Some(b)) => sod <= b,
            (Some(a), Some(b)) if a <= b => a <= sod && sod <= b,
            (Some(a), Some(b)) => sod >= a || sod <= b,
        };
        if !time_ok {
            return false;
        }
        // 1970-01-01 was a Thursday (3 with Monday 0)
        let wday = (days + 3).rem_euclid(7) as u32;
        if self.weekdays.is_some_and(|w| !w.matches(wday)) {
            return false;
        }
        if let Some(m) = self.monthdays {
            if !m.matches(civil_from_days(days).2) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2025-06-02 was a Monday.
    const MON_2025_06_02: i64 = 1_748_822_400;

    fn at(days: i64, h: i64, m: i64) -> i64 {
        MON_2025_06_02 + days * DAY + h * 3600 + m * 60
    }

    #[test]
    fn civil_dates_and_weekdays() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(MON_2025_06_02 / DAY), (2025, 6, 2));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        let mon = TimeMatch {
            weekdays: Some(DaySet {
                days: 1,
                invert: false,
            }),
            ..TimeMatch::default()
        };
        assert!(mon.matches(at(0, 0, 0), 0));
        assert!(mon.matches(at(0, 23, 59) + 59, 0));
        // the last second of Sunday and the first of Tuesday are not Monday
        assert!(!mon.matches(at(0, 0, 0) - 1, 0));
        assert!(!mon.matches(at(1, 0, 0), 0));
        // Monday 23:30 UTC is Tuesday 01:30 at UTC+2, unless the rule says utc_time
        assert!(!mon.matches(at(0, 23, 30), 7200));
        let mon_utc = TimeMatch { utc: true, ..mon };
        assert!(mon_utc.matches(at(0, 23, 30), 7200));
    }

    #[test]
    fn time_of_day_ranges_including_past_midnight() {
        let office = TimeMatch {
            start_time: Some(8 * 3600),
            stop_time: Some(17 * 3600),
            ..TimeMatch::default()
        };
        assert!(office.matches(at(0, 8, 0), 0));
        assert!(office.matches(at(0, 17, 0), 0));
        assert!(!office.matches(at(0, 17, 0) + 1, 0));
        assert!(!office.matches(at(0, 7, 59), 0));
        let night = TimeMatch {
            start_time: Some(22 * 3600),
            stop_time: Some(6 * 3600),
            ..TimeMatch::default()
        };
        assert!(night.matches(at(0, 23, 0), 0));
        assert!(night.matches(at(1, 5, 59), 0));
        assert!(!night.matches(at(1, 12, 0), 0));
        let from = TimeMatch {
            start_time: Some(20 * 3600),
            ..TimeMatch::default()
        };
        assert!(from.matches(at(0, 21, 0), 0) && !from.matches(at(0, 19, 0), 0));
    }

    #[test]
    fn dates_negation_and_month_days() {
        let june = TimeMatch {
            start_date: Some(MON_2025_06_02),
            stop_date: Some(at(28, 0, 0)),
            ..TimeMatch::default()
        };
        assert!(june.matches(at(0, 0, 0), 0) && june.matches(at(28, 0, 0), 0));
        assert!(!june.matches(at(0, 0, 0) - 1, 0) && !june.matches(at(28, 0, 0) + 1, 0));
        let not_weekend = TimeMatch {
            weekdays: Some(DaySet {
                days: (1 << 5) | (1 << 6),
                invert: true,
            }),
            ..TimeMatch::default()
        };
        assert!(not_weekend.matches(at(4, 12, 0), 0)); // Friday
        assert!(!not_weekend.matches(at(5, 12, 0), 0)); // Saturday
        let first = TimeMatch {
            monthdays: Some(DaySet {
                days: 1 << 1,
                invert: false,
            }),
            ..TimeMatch::default()
        };
        assert!(first.matches(at(29, 10, 0), 0)); // 2025-07-01
        assert!(!first.matches(at(0, 10, 0), 0));
        let not_first = TimeMatch {
            monthdays: first.monthdays.map(|d| DaySet { invert: true, ..d }),
            ..TimeMatch::default()
        };
        assert!(!not_first.matches(at(29, 10, 0), 0) && not_first.matches(at(0, 10, 0), 0));
    }

    #[test]
    fn the_wall_clock_counts_from_its_zero() {
        let c = WallClock {
            unix_ms_at_zero: MON_2025_06_02 * 1000,
            utc_offset_secs: 0,
        };
        assert_eq!(c.unix_secs(90_500), MON_2025_06_02 + 90);
        assert_eq!(c.unix_secs(u64::MAX), i64::MAX / 1000);
    }
}
