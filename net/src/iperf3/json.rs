//! A small JSON reader and writer: just what the iperf3 control protocol needs.
//!
//! Reads objects, arrays, strings (with all escapes, `\u` surrogate pairs included),
//! numbers, booleans and `null`, tolerating any whitespace and unknown keys. Numbers
//! are kept as their validated source text and converted on demand, so no float
//! formatting is needed on the kernel target. Input is untrusted: every error is a
//! [`JsonError`], never a panic, nesting is limited to [`MAX_DEPTH`] so a hostile
//! document cannot exhaust the stack, and a document holds at most [`MAX_VALUES`]
//! values so that its tree stays within a few times its text (a `Value` is 32 bytes
//! and each number or string has its own allocation: `[0,0,…]` grows about 30×).
//!
//! Not supported: duplicate-key detection (the first key wins on lookup), numbers
//! beyond what `i64`/`f64` hold (they saturate).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

/// Deepest nesting of arrays and objects accepted.
pub const MAX_DEPTH: usize = 32;
/// Most values (of any kind, object members and array elements counted) in one
/// document: iperf3's parameters and results hold about a hundred.
pub const MAX_VALUES: usize = 1024;

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
    /// A number, as its (validated) source text.
    Number(Number),
    /// A string, unescaped.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, keys in document order.
    Object(Vec<(String, Value)>),
}

/// A JSON number kept as validated text (`-?int(.frac)?([eE][+-]?exp)?`).
#[derive(Debug, Clone, PartialEq)]
pub struct Number(String);

/// Why a document was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonError {
    /// Input ended inside a value.
    Eof,
    /// An unexpected byte at this offset.
    Unexpected(usize),
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
    /// A string is not valid UTF-8 or has a bad escape.
    BadString(usize),
    /// Something other than whitespace follows the value.
    Trailing(usize),
    /// More than [`MAX_VALUES`] values.
    TooMany,
}

impl Number {
    /// The number's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The number as an integer: fractions truncate toward zero, out-of-range saturates.
    pub fn as_i64(&self) -> i64 {
        let s = self.0.as_str();
        if let Ok(v) = s.parse::<i64>() {
            return v;
        }
        if !s.contains(['e', 'E']) {
            // An integer too large, or one with a fraction: use the integer part.
            let int = s.split('.').next().unwrap_or("0");
            return int.parse::<i64>().unwrap_or(if int.starts_with('-') {
                i64::MIN
            } else {
                i64::MAX
            });
        }
        // `as` saturates and maps NaN to 0.
        self.as_f64() as i64
    }

    /// The number as a float (0.0 if it cannot be represented).
    pub fn as_f64(&self) -> f64 {
        self.0.parse::<f64>().unwrap_or(0.0)
    }

    /// An integer.
    pub fn from_i64(v: i64) -> Self {
        let mut s = String::new();
        let _ = write!(s, "{v}");
        Number(s)
    }

    /// A non-negative integer.
    pub fn from_u64(v: u64) -> Self {
        let mut s = String::new();
        let _ = write!(s, "{v}");
        Number(s)
    }

    /// `ms` milliseconds written as seconds with three decimals (`5001` → `5.001`).
    pub fn from_millis_as_secs(ms: u64) -> Self {
        let mut s = String::new();
        let _ = write!(s, "{}.{:03}", ms / 1000, ms % 1000);
        Number(s)
    }
}

impl Value {
    /// Member `key` of an object (first match), `None` for other values.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The integer value of a number (`None` for other values).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => Some(n.as_i64()),
            _ => None,
        }
    }

    /// The string value (`None` for other values).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The elements of an array (`None` for other values).
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// Shorthand for a number value from an integer.
    pub fn int(v: i64) -> Value {
        Value::Number(Number::from_i64(v))
    }

    /// Shorthand for a number value from an unsigned integer.
    pub fn uint(v: u64) -> Value {
        Value::Number(Number::from_u64(v))
    }

    /// Appends the compact JSON text of this value to `out`.
    pub fn write_to(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Number(n) => out.push_str(n.as_str()),
            Value::String(s) => write_string(s, out),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_to(out);
                }
                out.push(']');
            }
            Value::Object(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(k, out);
                    out.push(':');
                    v.write_to(out);
                }
                out.push('}');
            }
        }
    }

    /// The compact JSON text of this value.
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        self.write_to(&mut s);
        s
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Parses one JSON document (surrounding whitespace allowed).
pub fn parse(input: &[u8]) -> Result<Value, JsonError> {
    let mut p = Parser {
        s: input,
        i: 0,
        values: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i < p.s.len() {
        return Err(JsonError::Trailing(p.i));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// Values begun so far.
    values: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), JsonError> {
        match self.peek() {
            Some(c) if c == b => {
                self.i += 1;
                Ok(())
            }
            Some(_) => Err(JsonError::Unexpected(self.i)),
            None => Err(JsonError::Eof),
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> Result<Value, JsonError> {
        match self.s.get(self.i..self.i + word.len()) {
            Some(w) if w == word => {
                self.i += word.len();
                Ok(v)
            }
            Some(_) => Err(JsonError::Unexpected(self.i)),
            None => Err(JsonError::Eof),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        if depth >= MAX_DEPTH {
            return Err(JsonError::TooDeep);
        }
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(JsonError::TooMany);
        }
        self.ws();
        match self.peek() {
            None => Err(JsonError::Eof),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.literal(b"true", Value::Bool(true)),
            Some(b'f') => self.literal(b"false", Value::Bool(false)),
            Some(b'n') => self.literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(JsonError::Unexpected(self.i)),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, JsonError> {
        let members = self.sequence(b'{', b'}', |p| {
            p.ws();
            if p.peek() != Some(b'"') {
                return Err(p.unexpected());
            }
            let key = p.string()?;
            p.ws();
            p.expect(b':')?;
            Ok((key, p.value(depth + 1)?))
        })?;
        Ok(Value::Object(members))
    }

    fn array(&mut self, depth: usize) -> Result<Value, JsonError> {
        let items = self.sequence(b'[', b']', |p| p.value(depth + 1))?;
        Ok(Value::Array(items))
    }

    /// The comma-separated items between `open` and `close` (an object's members,
    /// an array's values), each read by `item`.
    fn sequence<T>(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<T, JsonError>,
    ) -> Result<Vec<T>, JsonError> {
        self.expect(open)?;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(c) if c == close => {
                    self.i += 1;
                    return Ok(items);
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn unexpected(&self) -> JsonError {
        if self.i >= self.s.len() {
            JsonError::Eof
        } else {
            JsonError::Unexpected(self.i)
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.unexpected()),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(self.unexpected());
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(self.unexpected());
            }
        }
        let text = self.s.get(start..self.i).ok_or(JsonError::Eof)?;
        // Only ASCII digits, signs, '.', 'e' were accepted above.
        let text = core::str::from_utf8(text).map_err(|_| JsonError::Unexpected(start))?;
        Ok(Value::Number(Number(String::from(text))))
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let at = self.i;
        let h = self.s.get(self.i..self.i + 4).ok_or(JsonError::Eof)?;
        let mut v = 0u32;
        for &b in h {
            let d = (b as char).to_digit(16).ok_or(JsonError::BadString(at))?;
            v = v * 16 + d;
        }
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            // Copy the run of plain bytes up to the next quote, backslash or control.
            let start = self.i;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.i += 1;
            }
            let run = self.s.get(start..self.i).ok_or(JsonError::Eof)?;
            out.push_str(core::str::from_utf8(run).map_err(|_| JsonError::BadString(start))?);
            match self.peek() {
                None => return Err(JsonError::Eof),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let at = self.i;
                    self.i += 1;
                    let esc = self.peek().ok_or(JsonError::Eof)?;
                    self.i += 1;
                    let c = match esc {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape(at)?,
                        _ => return Err(JsonError::BadString(at)),
                    };
                    out.push(c);
                }
                Some(_) => return Err(JsonError::BadString(self.i)),
            }
        }
    }

    /// After `\u`: one code point, joining a surrogate pair.
    fn unicode_escape(&mut self, at: usize) -> Result<char, JsonError> {
        let hi = self.hex4()?;
        let cp = if (0xD800..0xDC00).contains(&hi) {
            if self.s.get(self.i..self.i + 2) != Some(b"\\u") {
                return Err(JsonError::BadString(at));
            }
            self.i += 2;
            let lo = self.hex4()?;
            if !(0xDC00..0xE000).contains(&lo) {
                return Err(JsonError::BadString(at));
            }
            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
        } else {
            hi
        };
        char::from_u32(cp).ok_or(JsonError::BadString(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn parses_iperf3_params() {
        let doc = br#"{"tcp":true,"omit":0,"time":5,"num":0,"blockcount":0,"parallel":2,
            "reverse":true,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
        let v = parse(doc).unwrap();
        assert_eq!(v.get("tcp"), Some(&Value::Bool(true)));
        assert_eq!(v.get("parallel").and_then(Value::as_i64), Some(2));
        assert_eq!(v.get("len").and_then(Value::as_i64), Some(131072));
        assert_eq!(
            v.get("client_version").and_then(Value::as_str),
            Some("3.12")
        );
        assert_eq!(v.get("udp"), None);
    }

    #[test]
    fn parses_nested_results_with_whitespace_and_floats() {
        let doc =
            b" {\n \"cpu_util_total\" : 12.5e0 , \"streams\": [ {\"id\":1,\"bytes\":5000000000,\
            \"end_time\":5.000123, \"jitter\": 0, \"x\": null, \"neg\": -3.9}, [] ] }\t";
        let v = parse(doc).unwrap();
        assert_eq!(v.get("cpu_util_total").and_then(Value::as_i64), Some(12));
        let streams = v.get("streams").and_then(Value::as_array).unwrap();
        assert_eq!(streams.len(), 2);
        assert_eq!(
            streams[0].get("bytes").and_then(Value::as_i64),
            Some(5_000_000_000)
        );
        assert_eq!(streams[0].get("neg").and_then(Value::as_i64), Some(-3));
        assert_eq!(streams[0].get("x"), Some(&Value::Null));
        match streams[0].get("end_time") {
            Some(Value::Number(n)) => assert!((n.as_f64() - 5.000123).abs() < 1e-9),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn strings_and_escapes_round_trip() {
        let v = parse(br#""a\"b\\c\/d\n\t\u00e9\ud83d\ude00 z""#).unwrap();
        assert_eq!(v, Value::String("a\"b\\c/d\n\t\u{e9}\u{1F600} z".into()));
        let text = Value::Object(vec![
            ("k\"".into(), v.clone()),
            ("ctl".into(), Value::String("\u{1}".into())),
            ("n".into(), Value::int(-7)),
            (
                "t".into(),
                Value::Number(Number::from_millis_as_secs(5_001)),
            ),
            (
                "a".into(),
                Value::Array(vec![Value::Bool(false), Value::Null]),
            ),
        ])
        .to_json();
        assert_eq!(
            text,
            "{\"k\\\"\":\"a\\\"b\\\\c/d\\n\\t\u{e9}\u{1F600} z\",\"ctl\":\"\\u0001\",\
             \"n\":-7,\"t\":5.001,\"a\":[false,null]}"
        );
        let back = parse(text.as_bytes()).unwrap();
        assert_eq!(back.get("k\""), Some(&v));
        assert_eq!(back.get("t").and_then(Value::as_i64), Some(5));
    }

    #[test]
    fn huge_and_exponent_numbers_saturate() {
        let v =
            parse(b"[1e400, -1e400, 99999999999999999999, -99999999999999999999, 2.5E+3]").unwrap();
        let a = v.as_array().unwrap();
        let ints: Vec<i64> = a.iter().filter_map(Value::as_i64).collect();
        assert_eq!(ints, vec![i64::MAX, i64::MIN, i64::MAX, i64::MIN, 2500]);
    }

    #[test]
    fn rejects_malformed_documents() {
        let bad: &[&[u8]] = &[
            b"",
            b"   ",
            b"{",
            b"{\"a\"",
            b"{\"a\":}",
            b"{\"a\":1,}",
            b"{a:1}",
            b"[1,]",
            b"[1 2]",
            b"\"abc",
            b"\"a\\x\"",
            b"\"\\u12\"",
            b"\"\\ud800\"",
            b"\"\\ud800\\u0041\"",
            b"\"tab\there\"",
            b"\"\xff\"",
            b"01",
            b"-",
            b"1.",
            b"1e",
            b"tru",
            b"nul",
            b"{} x",
            b"{\"a\":1}}",
            b"\x00",
        ];
        for doc in bad {
            assert!(
                parse(doc).is_err(),
                "accepted {:?}",
                core::str::from_utf8(doc)
            );
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let mut deep = Vec::new();
        deep.resize(MAX_DEPTH + 1, b'[');
        deep.resize(2 * MAX_DEPTH + 2, b']');
        assert_eq!(parse(&deep), Err(JsonError::TooDeep));
        let ok = [b'['; MAX_DEPTH]
            .iter()
            .chain([b']'; MAX_DEPTH].iter())
            .copied();
        assert!(parse(&ok.collect::<Vec<u8>>()).is_ok());
        // A hostile 64 KiB of brackets fails cleanly rather than recursing.
        assert_eq!(parse(&[b'['; 65536]), Err(JsonError::TooDeep));
    }

    #[test]
    fn the_value_count_is_bounded_and_so_is_the_tree() {
        // MAX_VALUES values in all (the array itself and MAX_VALUES - 1 numbers).
        let doc = |n: usize| {
            let mut d = String::from("[");
            for i in 0..n {
                d.push_str(if i == 0 { "0" } else { ",0" });
            }
            d.push(']');
            d
        };
        assert!(parse(doc(MAX_VALUES - 1).as_bytes()).is_ok());
        assert_eq!(parse(doc(MAX_VALUES).as_bytes()), Err(JsonError::TooMany));
        // The largest message the iperf3 server takes, all small numbers: refused
        // after MAX_VALUES, its tree never more than about 64 bytes a value.
        let big = doc(crate::iperf3::MAX_JSON_LEN / 2 - 1);
        assert!(big.len() <= crate::iperf3::MAX_JSON_LEN);
        let (r, rise) = xenlet_testalloc::peak_during(|| parse(big.as_bytes()));
        assert_eq!(r, Err(JsonError::TooMany));
        assert!(rise <= MAX_VALUES * 64 * 2, "{rise}");
    }

    #[test]
    fn truncated_prefixes_never_panic() {
        let doc = br#"{"a":[1,-2.5e3,"x\u00e9\ud83d\ude00",true,false,null,{"b":{}}]}"#;
        assert!(parse(doc).is_ok());
        for n in 0..doc.len() {
            assert!(parse(&doc[..n]).is_err(), "prefix {n} accepted");
        }
    }
}
