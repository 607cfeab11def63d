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

/// Parses a size the way GNU dd does: a decimal number with an optional suffix
/// `c`(1) `w`(2) `b`(512) `kB`(1000) `K`/`KiB`(1024) `MB` `M`/`MiB` `GB` `G`/`GiB`
/// `TB` `T`/`TiB`, and `x` products (`2x512`).
pub fn parse_size(s: &str) -> Result<u64, ParseError> {
    let mut total: u64 = 1;
    for part in s.split('x') {
        let digits_end = part
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(part.len());
        let (num, suffix) = part.split_at(digits_end);
        if num.is_empty() {
            return Err(ParseError::InvalidNumber(String::from(s)));
        }
        let n: u64 = num
            .parse()
            .map_err(|_| ParseError::Overflow(String::from(s)))?;
        let mult: u64 = match suffix {
            "" | "c" => 1,
            "w" => 2,
            "b" => 512,
            "kB" => 1000,
            "K" | "k" | "KiB" => 1 << 10,
            "MB" => 1_000_000,
            "M" | "MiB" => 1 << 20,
            "GB" => 1_000_000_000,
            "G" | "GiB" => 1 << 30,
            "TB" => 1_000_000_000_000,
            "T" | "TiB" => 1 << 40,
            _ => return Err(ParseError::InvalidNumber(String::from(s))),
        };
        total = n
            .checked_mul(mult)
            .and_then(|v| v.checked_mul(total))
            .ok_or_else(|| ParseError::Overflow(String::from(s)))?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(parse_size("16k").unwrap(), 16384);
        assert_eq!(parse_size("16K").unwrap(), 16384);
        assert_eq!(parse_size("1kB").unwrap(), 1000);
        assert_eq!(parse_size("2b").unwrap(), 1024);
        assert_eq!(parse_size("3w").unwrap(), 6);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MB").unwrap(), 1_000_000);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("2x512").unwrap(), 1024);
        assert!(matches!(
            parse_size("16q"),
            Err(ParseError::InvalidNumber(_))
        ));
        assert!(matches!(parse_size(""), Err(ParseError::InvalidNumber(_))));
        assert!(matches!(
            parse_size("-1"),
            Err(ParseError::InvalidNumber(_))
        ));
        assert!(matches!(
            parse_size("99999999999T"),
            Err(ParseError::Overflow(_))
        ));
    }
}
