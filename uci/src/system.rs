//! `/etc/config/system`'s time zone, as far as Xenlet uses it: the offset of local
//! time from UTC for the firewall's time matches.
//!
//! OpenWrt writes `option timezone` as a POSIX TZ string (`UTC`, `GMT0`, `<+03>-3`,
//! `CET-1CEST,M3.5.0,M10.5.0/3`) and `option zonename` as the zone's name, which
//! only a time zone database resolves. Xenlet has none: it understands a TZ string
//! without daylight saving (a name, then an offset, POSIX's sign: `UTC-3` is three
//! hours east of Greenwich); anything else leaves local time at UTC, with a note.

use alloc::format;
use alloc::string::String;

use crate::model::Package;
use crate::validate::parse_uint;

/// The time zone Xenlet takes from `/etc/config/system`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeZone {
    /// Local time minus UTC, in seconds (east positive).
    pub utc_offset_secs: i32,
    /// Why local time is taken as UTC although the file names a zone, if it does.
    pub note: Option<String>,
}

/// The name part of a POSIX TZ string: `<...>` or three or more letters; returns
/// what follows it.
fn skip_name(tz: &str) -> Option<&str> {
    if let Some(rest) = tz.strip_prefix('<') {
        let end = rest.find('>')?;
        return rest.get(end + 1..);
    }
    let n = tz.bytes().take_while(u8::is_ascii_alphabetic).count();
    (n >= 3).then(|| tz.get(n..)).flatten()
}

/// A POSIX TZ string without daylight saving: local time minus UTC in seconds.
/// `None` for a zone with daylight saving or a malformed string.
pub fn parse_tz(tz: &str) -> Option<i32> {
    let rest = skip_name(tz.trim())?;
    if rest.is_empty() {
        return Some(0); // `UTC`: POSIX wants an offset, OpenWrt writes none
    }
    let (sign, num) = match rest.as_bytes().first()? {
        b'-' => (-1, rest.get(1..)?),
        b'+' => (1, rest.get(1..)?),
        _ => (1, rest),
    };
    let mut parts = num.split(':');
    let mut secs: i32 = 0;
    for (i, max) in [(0usize, 24u32), (1, 59), (2, 59)] {
        let Some(p) = parts.next() else {
            if i == 0 {
                return None;
            }
            break;
        };
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        let v = parse_uint::<u32>(p).filter(|v| *v <= max)?;
        secs += i32::try_from(v).ok()? * [3600, 60, 1].get(i).copied()?;
    }
    if parts.next().is_some() {
        return None; // also a daylight-saving part, which would follow a name
    }
    // POSIX counts west of Greenwich as positive
    Some(-sign * secs)
}

/// The time zone of `/etc/config/system` (its first `system` section's `timezone`).
pub fn time_zone(p: &Package) -> TimeZone {
    let tz = p
        .sections
        .iter()
        .find(|s| s.section_type == "system")
        .and_then(|s| s.get("timezone"))
        .and_then(|v| v.items().next());
    match tz {
        None => TimeZone {
            utc_offset_secs: 0,
            note: None,
        },
        Some(tz) => match parse_tz(tz) {
            Some(off) => TimeZone {
                utc_offset_secs: off,
                note: None,
            },
            None => TimeZone {
                utc_offset_secs: 0,
                note: Some(format!(
                    "/etc/config/system: timezone '{tz}' is not a fixed offset (no zone database): local time is UTC"
                )),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    #[test]
    fn fixed_offsets_are_read_and_the_rest_is_utc_with_a_note() {
        for (tz, off) in [
            ("UTC", Some(0)),
            ("GMT0", Some(0)),
            ("UTC-3", Some(3 * 3600)),
            ("<+0530>-5:30", Some(5 * 3600 + 1800)),
            ("<-03>3", Some(-3 * 3600)),
            ("EST+5", Some(-5 * 3600)),
            ("CET-1CEST,M3.5.0,M10.5.0/3", None),
            ("CET-1CEST", None),
            ("UT", None),
            ("UTC-25", None),
            ("UTC-1:60", None),
            ("<+03", None),
            ("", None),
        ] {
            assert_eq!(parse_tz(tz), off, "{tz}");
        }
        let p = |text: &str| parse("/etc/config/system", "system", text).unwrap();
        let tz = time_zone(&p(
            "config system\n\toption hostname 'x'\n\toption timezone '<+03>-3'\n",
        ));
        assert_eq!((tz.utc_offset_secs, tz.note), (3 * 3600, None));
        assert_eq!(time_zone(&p("config system\n")).utc_offset_secs, 0);
        let tz = time_zone(&p(
            "config system\n\toption timezone 'CET-1CEST,M3.5.0,M10.5.0/3'\n",
        ));
        assert_eq!(tz.utc_offset_secs, 0);
        assert!(tz.note.is_some_and(|n| n.contains("local time is UTC")));
    }
}
