//! A rule's time options: `utc_time`, `start_date`, `stop_date`, `start_time`,
//! `stop_time`, `weekdays`, `monthdays`.
//!
//! Value forms are fw4's (`root/usr/share/ucode/fw4.uc`): `parse_date`
//! (`YYYY[-MM[-DD[Thh[:mm[:ss]]]]]`, years 1970-2038), `parse_time`
//! (`hh[:mm[:ss]]`), `parse_weekdays` (day names or any case-insensitive prefix of
//! them, `Mon Tue`, the whole value negated by a leading `!`), `parse_monthdays`
//! (1..31, the same `!`). Unlike fw4, a date that does not exist (`2025-02-30`) is
//! an error rather than left for nft to refuse, and `monthdays` is matched (fw4
//! warns it unsupported and drops it; fw3 matched it with `xt_time`).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::validate::{parse_uint, ConfigError, SectionReader};
use xenlet_router::firewall::timematch::{DaySet, TimeMatch};

/// Days since 1970-01-01 of a civil date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// 1 or 2 digits (`max` the largest allowed).
fn small(v: &str, max: u32) -> Option<u32> {
    if v.is_empty() || v.len() > 2 {
        return None;
    }
    parse_uint::<u32>(v).filter(|n| *n <= max)
}

/// fw4's `parse_time`: `hh[:mm[:ss]]`, as seconds since midnight.
pub fn parse_time(v: &str) -> Option<u32> {
    let mut it = v.split(':');
    let h = small(it.next()?, 23)?;
    let m = it.next().map_or(Some(0), |m| small(m, 59))?;
    let s = it.next().map_or(Some(0), |s| small(s, 59))?;
    if it.next().is_some() {
        return None;
    }
    Some(h * 3600 + m * 60 + s)
}

/// fw4's `parse_date`: `YYYY[-MM[-DD[Thh[:mm[:ss]]]]]`, as civil seconds since 1970.
pub fn parse_date(v: &str) -> Option<i64> {
    let (date, time) = match v.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (v, None),
    };
    let mut it = date.split('-');
    let y = it.next()?;
    if y.len() != 4 {
        return None;
    }
    let y = i64::from(parse_uint::<u32>(y)?);
    if !(1970..=2038).contains(&y) {
        return None;
    }
    // fw4 takes a month or day of 0 (or none) as 1
    let m = it.next().map_or(Some(0), |m| small(m, 12))?.max(1);
    let d = match it.next() {
        Some(d) => small(d, 31)?.max(1),
        None if time.is_some() => return None,
        None => 1,
    };
    if it.next().is_some() || d > days_in_month(y, m) {
        return None;
    }
    let secs = match time {
        Some(t) => i64::from(parse_time(t)?),
        None => 0,
    };
    Some(days_from_civil(y, m, d) * 86_400 + secs)
}

/// A leading `!` on the whole value, then its words.
fn inverted(items: &[&str]) -> (bool, Vec<String>) {
    let joined = items.join(" ");
    let t = joined.trim_start();
    let (invert, rest) = match t.strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, t),
    };
    (
        invert,
        rest.split_ascii_whitespace().map(String::from).collect(),
    )
}

const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// fw4's `parse_weekdays` on the words of the value.
fn parse_weekdays(invert: bool, words: &[String]) -> Option<DaySet> {
    let mut days = 0;
    for w in words {
        let w = w.to_ascii_lowercase();
        let n = WEEKDAYS.iter().position(|d| d.starts_with(w.as_str()))?;
        days |= 1 << n;
    }
    (days != 0).then_some(DaySet { days, invert })
}

/// fw4's `parse_monthdays`.
fn parse_monthdays(invert: bool, words: &[String]) -> Option<DaySet> {
    let mut days = 0;
    for w in words {
        let n = small(w, 31).filter(|n| *n >= 1)?;
        days |= 1 << n;
    }
    (days != 0).then_some(DaySet { days, invert })
}

fn days(
    r: &mut SectionReader<'_>,
    name: &str,
    what: &str,
    f: fn(bool, &[String]) -> Option<DaySet>,
) -> Result<Option<DaySet>, ConfigError> {
    let items = r.items(name);
    if items.is_empty() {
        return Ok(None);
    }
    let (invert, words) = inverted(&items);
    match f(invert, &words) {
        Some(d) => Ok(Some(d)),
        None => Err(r.error(name, format!("'{}' is not {what}", items.join(" ")))),
    }
}

/// Reads the time options of a rule or redirect; `None` if it has none (a lone
/// `utc_time` changes nothing).
pub fn read(r: &mut SectionReader<'_>) -> Result<Option<TimeMatch>, ConfigError> {
    let t = TimeMatch {
        utc: r.boolean("utc_time", false)?,
        start_date: r.parse(
            "start_date",
            "a date (YYYY-MM-DD or YYYY-MM-DDThh:mm:ss, 1970-2038)",
            parse_date,
        )?,
        stop_date: r.parse(
            "stop_date",
            "a date (YYYY-MM-DD or YYYY-MM-DDThh:mm:ss, 1970-2038)",
            parse_date,
        )?,
        start_time: r.parse("start_time", "a time of day (hh:mm:ss)", parse_time)?,
        stop_time: r.parse("stop_time", "a time of day (hh:mm:ss)", parse_time)?,
        weekdays: days(
            r,
            "weekdays",
            "a list of weekdays (Mon Tue ..., '!' first to negate)",
            parse_weekdays,
        )?,
        monthdays: days(
            r,
            "monthdays",
            "a list of days of the month (1..31, '!' first to negate)",
            parse_monthdays,
        )?,
    };
    let none = TimeMatch {
        utc: t.utc,
        ..TimeMatch::default()
    };
    Ok((t != none).then_some(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_forms() {
        assert_eq!(parse_time("7"), Some(7 * 3600));
        assert_eq!(parse_time("07:30"), Some(7 * 3600 + 1800));
        assert_eq!(parse_time("23:59:59"), Some(86_399));
        for bad in ["24:00", "12:60", "1:2:3:4", "", "a", "123", "12:", "-1"] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2025-06-02"), Some(1_748_822_400));
        assert_eq!(
            parse_date("2025-06-02T01:02:03"),
            Some(1_748_822_400 + 3723)
        );
        assert_eq!(parse_date("2025"), parse_date("2025-01-01"));
        assert_eq!(parse_date("2024-02-29"), Some(1_709_164_800));
        for bad in [
            "2025-02-29",
            "2025-13-01",
            "1969-12-31",
            "2039-01-01",
            "25-01-01",
            "2025-01-01T25:00",
            "2025-01T10:00",
            "2025/01/01",
            "2025-01-01-01",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
        let w = |s: &[&str]| {
            let (i, words) = inverted(s);
            parse_weekdays(i, &words)
        };
        assert_eq!(
            w(&["Mon", "tue", "SUNDAY"]),
            Some(DaySet {
                days: 0b100_0011,
                invert: false
            })
        );
        assert_eq!(
            w(&["!", "Sat", "Sun"]),
            Some(DaySet {
                days: 0b110_0000,
                invert: true
            })
        );
        assert_eq!(w(&["!Sat"]).map(|d| d.invert), Some(true));
        assert_eq!(w(&["Mon", "!Tue"]), None);
        assert_eq!(w(&["Moon"]), None);
        assert_eq!(w(&["!"]), None);
        let (i, words) = inverted(&["!1", "15", "31"]);
        assert_eq!(
            parse_monthdays(i, &words),
            Some(DaySet {
                days: (1 << 1) | (1 << 15) | (1 << 31),
                invert: true
            })
        );
        let (i, words) = inverted(&["0"]);
        assert_eq!(parse_monthdays(i, &words), None);
        let (i, words) = inverted(&["32"]);
        assert_eq!(parse_monthdays(i, &words), None);
    }
}
