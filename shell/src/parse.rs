//! Command-line tokenizing and GNU-style number parsing.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Why a line or an operand could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// A quote was opened and never closed.
    UnterminatedQuote,
    /// A number was expected.
    InvalidNumber(String),
    /// The number does not fit.
    Overflow(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::UnterminatedQuote => f.write_str("unterminated quote"),
            ParseError::InvalidNumber(s) => write!(f, "invalid number: '{s}'"),
            ParseError::Overflow(s) => write!(f, "number too large: '{s}'"),
        }
    }
}

/// Splits a line into words at whitespace; `"…"` and `'…'` group words, and a
/// backslash outside single quotes escapes the next character.
pub fn split_args(line: &str) -> Result<Vec<String>, ParseError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => cur.push(c),
            (_, '\\') => {
                in_word = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(core::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(ParseError::UnterminatedQuote);
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// Parses a size the way GNU dd (coreutils 9.x) parses its numeric operands.
///
/// A number is a decimal integer (leading white space and a `+` are allowed, a `-` is
/// not) followed by an optional suffix: `c` (1), `w` (2), `b` (512), `K`/`k` (1024),
/// `M`, `G`, `T`, `P`, `E`, `Z`, `Y`, `R`, `Q` (powers of 1024); a power letter
/// followed by `iB` is the same power of 1024 and followed by `B` (or the obsolescent
/// `D`) the power of 1000, so `kB` is 1000, `KiB` 1024, `MB` 1000000. A suffix letter
/// alone stands for one of it (`K` is 1024). Any number may end in a `B` (`12B` is 12:
/// dd's marker for counting in bytes). Numbers multiply with `x` (`2x512`, `1Kx2`);
/// a zero factor makes the product zero even if another factor is too large.
///
/// Results above `i64::MAX` are [`ParseError::Overflow`], as in GNU dd (which keeps
/// them in `intmax_t`/`off_t`); so is an otherwise invalid number whose digits overflow
/// (`99999999999999999999q`), as GNU reports it.
pub fn parse_size(s: &str) -> Result<u64, ParseError> {
    const MAX: u64 = i64::MAX as u64;
    let invalid = || ParseError::InvalidNumber(String::from(s));
    let mut result: u64 = 1;
    let mut overflow = false;
    let mut rest = s;
    loop {
        let (n, f) = gnu_factor(rest);
        let mut n_overflow = f.overflow;
        let multiply = match f.end {
            FactorEnd::End => false,
            FactorEnd::Times(after) => {
                rest = after;
                true
            }
            FactorEnd::Invalid => {
                // GNU: an invalid number whose value overflowed is reported as
                // too large.
                if !f.overflow && n <= MAX {
                    return Err(invalid());
                }
                n_overflow = true;
                false
            }
        };
        if n == 0 {
            result = 0;
        } else if result != 0 {
            match result.checked_mul(n) {
                Some(p) if !n_overflow && !overflow && p <= MAX => result = p,
                _ => overflow = true,
            }
        }
        if !multiply {
            break;
        }
    }
    if result != 0 && overflow {
        return Err(ParseError::Overflow(String::from(s)));
    }
    Ok(result)
}

/// Parses a `sleep` operand: decimal seconds with an optional fraction (`1`, `0.25`,
/// `.5`) and an optional unit suffix `s`, `m`, `h` (GNU sleep's, `d` left out); up to
/// nanosecond precision (further digits are dropped). At most one day.
pub fn parse_duration(s: &str) -> Result<core::time::Duration, ParseError> {
    let invalid = || ParseError::InvalidNumber(String::from(s));
    let (num, unit) = match s.as_bytes().last() {
        Some(b's') => (&s[..s.len() - 1], 1),
        Some(b'm') => (&s[..s.len() - 1], 60),
        Some(b'h') => (&s[..s.len() - 1], 3600),
        _ => (s, 1),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(invalid());
    }
    let too_long = || ParseError::Overflow(String::from(s));
    let secs: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| too_long())?
    };
    let mut nanos: u64 = 0;
    for b in frac.bytes().chain(core::iter::repeat(b'0')).take(9) {
        nanos = nanos * 10 + u64::from(b - b'0');
    }
    let total = secs
        .checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(nanos))
        .and_then(|n| n.checked_mul(unit))
        .filter(|&n| n <= 86_400 * 1_000_000_000)
        .ok_or_else(too_long)?;
    Ok(core::time::Duration::from_nanos(total))
}

/// The suffix letters GNU dd accepts (`0` is gnulib's flag for `B`/`iB`/`D` second
/// suffixes).
const VALID_SUFFIXES: &[u8] = b"bcEGkKMPQRTwYZ0";

enum FactorEnd<'a> {
    /// The string ended.
    End,
    /// An `x` followed; the next factor starts here.
    Times(&'a str),
    /// Not a number, or a bad suffix.
    Invalid,
}

struct Factor<'a> {
    overflow: bool,
    end: FactorEnd<'a>,
}

/// One factor of a dd number, as gnulib's `xstrtoumax(s, &end, 10, &n,
/// "bcEGkKMPQRTwYZ0")` followed by dd's `B` and `x` handling. Returns the value
/// (saturated at `u64::MAX` on overflow) and how the factor ended.
fn gnu_factor(s: &str) -> (u64, Factor<'_>) {
    let b = s.as_bytes();
    let bad = |n, overflow| {
        (
            n,
            Factor {
                overflow,
                end: FactorEnd::Invalid,
            },
        )
    };
    // xstrtoumax refuses a minus sign after leading white space (C isspace).
    let is_space = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let ws = b.iter().take_while(|c| is_space(c)).count();
    if b.get(ws) == Some(&b'-') {
        return bad(0, false);
    }
    // strtoumax: white space, an optional '+', decimal digits.
    let mut i = ws;
    if b.get(i) == Some(&b'+') {
        i += 1;
    }
    let digits = i;
    let mut n: u64 = 0;
    let mut overflow = false;
    while let Some(&c) = b.get(i).filter(|c| c.is_ascii_digit()) {
        match n
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
        {
            Some(v) if !overflow => n = v,
            _ => {
                overflow = true;
                n = u64::MAX;
            }
        }
        i += 1;
    }
    let mut p = i;
    if i == digits {
        // No number: a valid suffix letter at the very start stands for 1 of it.
        match b.first() {
            Some(c) if VALID_SUFFIXES.contains(c) => {
                n = 1;
                p = 0;
            }
            _ => return bad(0, false),
        }
    }
    if let Some(&c) = b.get(p) {
        let (mut base, mut len) = (1024u64, 1);
        if b"EGkKMPQRTYZ".contains(&c) {
            match (b.get(p + 1), b.get(p + 2)) {
                (Some(b'i'), Some(b'B')) => len = 3,
                (Some(b'B' | b'D'), _) => {
                    base = 1000;
                    len = 2;
                }
                _ => {}
            }
        }
        let (factor, power) = match c {
            b'c' => (1, 1),
            b'w' => (2, 1),
            b'b' => (512, 1),
            b'k' | b'K' => (base, 1),
            b'M' => (base, 2),
            b'G' => (base, 3),
            b'T' => (base, 4),
            b'P' => (base, 5),
            b'E' => (base, 6),
            b'Z' => (base, 7),
            b'Y' => (base, 8),
            b'R' => (base, 9),
            b'Q' => (base, 10),
            _ => (1, 0), // not a suffix: the number ends here
        };
        if power > 0 {
            for _ in 0..power {
                n = n.checked_mul(factor).unwrap_or_else(|| {
                    overflow = true;
                    u64::MAX
                });
            }
            p += len;
        }
        // dd accepts a trailing 'B' after anything but another 'B' ("12B", "1cB").
        if b.get(p) == Some(&b'B') && p > 0 && b[p - 1] != b'B' {
            p += 1;
        }
        match b.get(p) {
            None => {}
            Some(b'x') => {
                return (
                    n,
                    Factor {
                        overflow,
                        end: FactorEnd::Times(&s[p + 1..]),
                    },
                )
            }
            Some(_) => return bad(n, overflow),
        }
    }
    (
        n,
        Factor {
            overflow,
            end: FactorEnd::End,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_gnu_sleep_takes_them() {
        use core::time::Duration;
        for (s, d) in [
            ("1", Duration::from_secs(1)),
            ("0.25", Duration::from_millis(250)),
            (".5s", Duration::from_millis(500)),
            ("2.", Duration::from_secs(2)),
            ("1.5m", Duration::from_secs(90)),
            ("1h", Duration::from_secs(3600)),
            ("0.1234567891", Duration::from_nanos(123_456_789)),
        ] {
            assert_eq!(parse_duration(s), Ok(d), "{s:?}");
        }
        for bad in ["", ".", "s", "-1", "1x", "1.2.3", "a", "1 "] {
            assert!(
                matches!(parse_duration(bad), Err(ParseError::InvalidNumber(_))),
                "{bad:?}"
            );
        }
        for big in ["25h", "99999999999999999999"] {
            assert!(
                matches!(parse_duration(big), Err(ParseError::Overflow(_))),
                "{big:?}"
            );
        }
    }

    #[test]
    fn splits_words_quotes_and_escapes() {
        assert_eq!(split_args("  a  b\tc ").unwrap(), ["a", "b", "c"]);
        assert_eq!(
            split_args(r#"echo "a  b" 'c "d"' e\ f"#).unwrap(),
            ["echo", "a  b", "c \"d\"", "e f"]
        );
        assert_eq!(split_args(r#"x "" y"#).unwrap(), ["x", "", "y"]);
        assert!(split_args("").unwrap().is_empty());
        assert_eq!(
            split_args("a 'b").unwrap_err(),
            ParseError::UnterminatedQuote
        );
    }

    #[test]
    fn gnu_size_suffixes() {
        for (s, v) in [
            ("16k", 16384),
            ("16K", 16384),
            ("1kB", 1000),
            ("2b", 1024),
            ("3w", 6),
            ("1MiB", 1 << 20),
            ("1MB", 1_000_000),
            ("2G", 2 << 30),
            ("2x512", 1024),
        ] {
            assert_eq!(parse_size(s).unwrap(), v, "{s:?}");
        }
        for bad in ["16q", "", "-1"] {
            assert!(
                matches!(parse_size(bad), Err(ParseError::InvalidNumber(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse_size("99999999999T"),
            Err(ParseError::Overflow(_))
        ));
    }

    /// Cases checked against GNU dd 9.1 (`dd bs=VALUE count=1`), except the `R`/`Q`
    /// suffixes (9.2+) and products of more than two factors or with a `B` after the
    /// `x` (9.4+), which follow the newer parser.
    #[test]
    fn gnu_dd_number_forms() {
        let ok = |s: &str, v: u64| assert_eq!(parse_size(s), Ok(v), "{s:?}");
        let invalid = |s: &str| {
            assert_eq!(
                parse_size(s),
                Err(ParseError::InvalidNumber(String::from(s))),
                "{s:?}"
            )
        };
        let overflow = |s: &str| {
            assert_eq!(
                parse_size(s),
                Err(ParseError::Overflow(String::from(s))),
                "{s:?}"
            )
        };
        // Every suffix.
        ok("7", 7);
        ok("7c", 7);
        ok("7w", 14);
        ok("7b", 3584);
        ok("1k", 1024);
        ok("1K", 1024);
        ok("1KiB", 1024);
        ok("1kiB", 1024);
        ok("1kB", 1000);
        ok("1KB", 1000);
        ok("1KD", 1000);
        // The larger suffixes: alone and with `iB` a power of 1024, with `B` of 1000.
        for (unit, binary, decimal) in [
            ("M", 1 << 20, 1_000_000),
            ("G", 1 << 30, 1_000_000_000),
            ("T", 1 << 40, 1_000_000_000_000),
            ("P", 1 << 50, 1_000_000_000_000_000),
            ("E", 1 << 60, 1_000_000_000_000_000_000),
        ] {
            ok(&format!("1{unit}"), binary);
            ok(&format!("1{unit}iB"), binary);
            ok(&format!("1{unit}B"), decimal);
        }
        ok("7E", 7 << 60);
        overflow("8E");
        overflow("16E");
        overflow("1Z");
        overflow("1ZB");
        overflow("1Y");
        overflow("1R");
        overflow("1Q");
        ok("0Q", 0);
        // A suffix alone is one of it; white space and '+' are accepted.
        ok("K", 1024);
        ok("KB", 1000);
        ok("KiB", 1024);
        ok("kiB", 1024);
        ok("KD", 1000);
        ok("b", 512);
        ok("c", 1);
        ok("+5", 5);
        ok(" 5", 5);
        ok("\t+5K", 5120);
        // A trailing 'B' (dd's "count in bytes" marker).
        ok("3B", 3);
        ok("1cB", 1);
        ok("1bB", 512);
        ok("1wB", 2);
        ok("1KDB", 1000);
        invalid("1BB");
        invalid("1KiBB");
        invalid("1MBB");
        invalid("B");
        invalid("iB");
        invalid("1iB");
        // Products.
        ok("4xK", 4096);
        ok("1Kx2", 2048);
        ok("1KiBx2", 2048);
        ok("2xb", 1024);
        ok("Kx2", 2048);
        ok("1Bx2", 2);
        ok("2x3x4", 24);
        ok("1x2B", 2);
        ok("0x512", 0);
        ok("00x512", 0);
        ok("2x0x9", 0);
        invalid("2x");
        invalid("x2");
        invalid("1x");
        invalid("1xx2");
        invalid("2x-1");
        // Not numbers; GNU's lower-case m, g, t and e are not dd suffixes.
        for s in [
            "", " ", "+", "-1", " -0", "+-1", "1m", "1g", "1t", "1e", "12q", "1K2", "0x", "5 ",
        ] {
            invalid(s);
        }
        // Limits: i64::MAX, as dd keeps numbers in intmax_t.
        ok("9223372036854775807", i64::MAX as u64);
        overflow("9223372036854775808");
        overflow("18446744073709551615");
        overflow("99999999999999999999");
        overflow("4611686018427387904x2");
        ok("4611686018427387903x2", 9_223_372_036_854_775_806);
        overflow("8Ex1");
        overflow("2x8E");
        // A zero factor wins over an overflowing one, as in GNU.
        ok("99999999999999999999x0", 0);
        ok("0x99999999999999999999", 0);
        ok("16Ex0", 0);
        // An invalid number whose digits overflowed is reported as too large.
        overflow("99999999999999999999q");
        overflow("18446744073709551615q");
    }
}
