//! The UCI file syntax, read the way libuci reads it.
//!
//! Follows openwrt/uci `file.c` (`uci_parse_line`, `next_arg`, `parse_str`,
//! `parse_single_quote`, `parse_double_quote`, `parse_backslash`, `assert_eol`) in its
//! strict mode (the `uci` command's default) and the OpenWrt wiki's "The UCI system":
//!
//! - a line is `package NAME`, `config TYPE ['NAME']`, `option NAME [VALUE]` or
//!   `list NAME [VALUE]` (`p`, `c`, `o`, `l` also work); `;` separates commands on a line;
//! - an argument is made of unquoted text, `'single-quoted'` text (no escapes, may span
//!   lines) and `"double-quoted"` text (a backslash takes the next character literally,
//!   may span lines), concatenated as the shell does (`'a'"b"c` is `abc`);
//! - outside quotes a backslash also takes the next character literally, `#` ends the
//!   line (a comment), and a backslash before the end of the line joins the next line;
//! - names are `[A-Za-z0-9_]`, types printable ASCII, package names also allow `-`;
//! - `option x ''` (an empty value) is ignored, `list x ''` adds an empty item; a second
//!   `config` with an existing name reopens that section (an error if the type differs);
//!   `package` is checked and otherwise ignored (the file name is the package name,
//!   as `uci_file_load` imports in single-package mode).
//!
//! CRLF files work because `\r` is white space outside quotes. Errors carry the file
//! name, the 1-based line and column, and what was expected. Nothing here panics or
//! indexes unchecked; the input is untrusted.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use crate::model::{
    anonymous_name, valid_name, valid_package, valid_type, Package, Section, Value,
};

/// A syntax error in a config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The file name given to [`parse`] (e.g. `/etc/config/network`).
    pub file: String,
    /// 1-based line of the error.
    pub line: u32,
    /// 1-based column (byte offset in the line + 1).
    pub column: u32,
    /// What was wrong or expected.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.column, self.message
        )
    }
}

impl core::error::Error for ParseError {}

/// Most sections one file may hold (a parsed section takes 5–10 times its text;
/// OpenWrt's largest configs have a few hundred).
pub const MAX_SECTIONS: usize = 1024;
/// Most options (and lists) one section may hold.
pub const MAX_OPTIONS: usize = 256;
/// Most items one list may hold.
pub const MAX_LIST_ITEMS: usize = 256;

/// Parses one config file's `text` into the package `package`; `file` names it in
/// errors. A file past [`MAX_SECTIONS`], [`MAX_OPTIONS`] or [`MAX_LIST_ITEMS`] is
/// an error at the line that goes past it.
pub fn parse(file: &str, package: &str, text: &str) -> Result<Package, ParseError> {
    let mut p = Parser {
        file,
        text: text.as_bytes(),
        pos: 0,
        pkg: Package::new(package),
        section: None,
    };
    if !valid_package(package) {
        return Err(p.error_at(0, "invalid package name (expected [A-Za-z0-9_-]+)".into()));
    }
    if let Some(nul) = p.text.iter().position(|&c| c == 0) {
        return Err(p.error_at(nul, "NUL byte in config text".into()));
    }
    p.parse_all()?;
    Ok(p.pkg)
}

/// Parses bytes that may not be UTF-8 (a file straight off the disk).
pub fn parse_bytes(file: &str, package: &str, bytes: &[u8]) -> Result<Package, ParseError> {
    match core::str::from_utf8(bytes) {
        Ok(text) => parse(file, package, text),
        Err(e) => {
            let good = bytes.get(..e.valid_up_to()).unwrap_or(&[]);
            let (line, column) = line_col(good, good.len());
            Err(ParseError {
                file: file.to_string(),
                line,
                column,
                message: "invalid UTF-8".into(),
            })
        }
    }
}

fn line_col(text: &[u8], pos: usize) -> (u32, u32) {
    let before = text.get(..pos).unwrap_or(text);
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |i| i + 1);
    let col = pos.saturating_sub(start) + 1;
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(col).unwrap_or(u32::MAX),
    )
}

/// C's `isspace` in the "C" locale.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// White space inside a line (everything `isspace` but the newline that ends it).
fn is_inline_space(c: u8) -> bool {
    is_space(c) && c != b'\n'
}

struct Parser<'a> {
    file: &'a str,
    text: &'a [u8],
    pos: usize,
    pkg: Package,
    /// Index of the section `option`/`list` lines go to.
    section: Option<usize>,
}

/// One argument as `next_arg` returns it.
struct Arg {
    value: Vec<u8>,
    /// Where it started, for error columns.
    start: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn peek_at(&self, off: usize) -> Option<u8> {
        self.text.get(self.pos.checked_add(off)?).copied()
    }

    fn error_at(&self, pos: usize, message: String) -> ParseError {
        let (line, column) = line_col(self.text, pos);
        ParseError {
            file: self.file.to_string(),
            line,
            column,
            message,
        }
    }

    fn skip_inline_space(&mut self) {
        while self.peek().is_some_and(is_inline_space) {
            self.pos += 1;
        }
    }

    /// Skips to the newline ending this line (not past it).
    fn skip_to_eol(&mut self) {
        while self.peek().is_some_and(|c| c != b'\n') {
            self.pos += 1;
        }
    }

    fn parse_all(&mut self) -> Result<(), ParseError> {
        while self.pos < self.text.len() {
            self.parse_line()?;
            // The line ends here: at its newline or at the end of the text.
            if self.peek() == Some(b'\n') {
                self.pos += 1;
            }
        }
        Ok(())
    }

    /// `uci_parse_line`: commands separated by `;` up to the end of the line.
    fn parse_line(&mut self) -> Result<(), ParseError> {
        loop {
            self.skip_inline_space();
            let start = self.pos;
            // `strtok(" \t")`: the command word runs to a blank or the end of the line.
            while self
                .peek()
                .is_some_and(|c| c != b' ' && c != b'\t' && c != b'\n')
            {
                self.pos += 1;
            }
            let word = self.text.get(start..self.pos).unwrap_or(&[]);
            match word {
                [] => return Ok(()),
                [b'#', ..] => {
                    self.skip_to_eol();
                    return Ok(());
                }
                b"p" | b"package" => self.parse_package()?,
                b"c" | b"config" => self.parse_config()?,
                b"o" | b"option" => self.parse_option(false, start)?,
                b"l" | b"list" => self.parse_option(true, start)?,
                _ => {
                    return Err(self.error_at(
                        start,
                        format!(
                        "invalid command '{}' (expected 'package', 'config', 'option' or 'list')",
                        String::from_utf8_lossy(word)
                    ),
                    ))
                }
            }
            // The command consumed its arguments (and a `;` if one ended it).
            if matches!(self.peek(), None | Some(b'\n')) {
                return Ok(());
            }
        }
    }

    /// `next_arg`: skip blanks, then one (possibly empty) argument. A `;` here is an
    /// empty argument that ends the command.
    fn next_arg(&mut self) -> Result<Arg, ParseError> {
        self.skip_inline_space();
        let start = self.pos;
        let mut value = Vec::new();
        if self.peek() == Some(b';') {
            self.pos += 1;
            return Ok(Arg { value, start });
        }
        self.parse_str(&mut value)?;
        Ok(Arg { value, start })
    }

    /// `parse_str`: one argument of unquoted and quoted parts.
    fn parse_str(&mut self, out: &mut Vec<u8>) -> Result<(), ParseError> {
        loop {
            match self.peek() {
                None | Some(b'\n') => return Ok(()),
                Some(b'\'') => self.parse_single_quote(out)?,
                Some(b'"') => self.parse_double_quote(out)?,
                Some(b'#') => {
                    // A comment ends the whole line.
                    self.skip_to_eol();
                    return Ok(());
                }
                Some(b';') => return Ok(()),
                Some(b'\\') => {
                    self.pos += 1;
                    if self.line_continuation() {
                        // Like libuci, the argument ends if the next line starts blank.
                    } else if let Some(c) = self.peek() {
                        out.push(c);
                        self.pos += 1;
                    }
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
            match self.peek() {
                None => return Ok(()),
                Some(c) if is_space(c) => {
                    // Eat one blank (libuci overwrites it); a newline stays to end the line.
                    if c != b'\n' {
                        self.pos += 1;
                    }
                    return Ok(());
                }
                Some(_) => {}
            }
        }
    }

    /// After a backslash: if the line ends here (`\n`, `\r\n`), skips the line break and
    /// returns true (`parse_backslash` fetching the next line).
    fn line_continuation(&mut self) -> bool {
        match (self.peek(), self.peek_at(1)) {
            (Some(b'\n'), _) => {
                self.pos += 1;
                true
            }
            (Some(b'\r'), Some(b'\n')) => {
                self.pos += 2;
                true
            }
            _ => false,
        }
    }

    fn parse_single_quote(&mut self, out: &mut Vec<u8>) -> Result<(), ParseError> {
        let open = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => {
                    return Err(self.error_at(open, "unterminated ' (expected a closing ')".into()))
                }
                Some(b'\'') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn parse_double_quote(&mut self, out: &mut Vec<u8>) -> Result<(), ParseError> {
        let open = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => {
                    return Err(
                        self.error_at(open, "unterminated \" (expected a closing \")".into())
                    )
                }
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.pos += 1;
                    if !self.line_continuation() {
                        if let Some(c) = self.peek() {
                            out.push(c);
                            self.pos += 1;
                        }
                    }
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// `assert_eol` in strict mode: nothing but blanks, a comment or `;` may follow.
    fn assert_eol(&mut self) -> Result<(), ParseError> {
        let arg = self.next_arg()?;
        if arg.value.is_empty() {
            Ok(())
        } else {
            Err(self.error_at(
                arg.start,
                "too many arguments (expected the end of the line, ';' or '#')".into(),
            ))
        }
    }

    fn text_of(&self, arg: Arg) -> Result<String, ParseError> {
        String::from_utf8(arg.value).map_err(|_| self.error_at(arg.start, "invalid UTF-8".into()))
    }

    fn required(&mut self, what: &str) -> Result<(String, usize), ParseError> {
        let arg = self.next_arg()?;
        if arg.value.is_empty() {
            return Err(self.error_at(
                arg.start,
                format!("insufficient arguments (expected {what})"),
            ));
        }
        let start = arg.start;
        Ok((self.text_of(arg)?, start))
    }

    fn parse_package(&mut self) -> Result<(), ParseError> {
        let (name, at) = self.required("a package name")?;
        if !valid_package(&name) {
            return Err(self.error_at(
                at,
                "invalid character in package name (expected [A-Za-z0-9_-])".into(),
            ));
        }
        self.assert_eol()
    }

    fn parse_config(&mut self) -> Result<(), ParseError> {
        let (ty, at) = self.required("a section type")?;
        if !valid_type(&ty) {
            return Err(self.error_at(
                at,
                "invalid character in type field (expected printable ASCII)".into(),
            ));
        }
        let arg = self.next_arg()?;
        let name_at = arg.start;
        let name = self.text_of(arg)?;
        if !name.is_empty() && !valid_name(&name) {
            return Err(self.error_at(
                name_at,
                "invalid character in name field (expected [A-Za-z0-9_])".into(),
            ));
        }
        self.assert_eol()?;
        let new = name.is_empty() || !self.pkg.sections.iter().any(|s| s.name == name);
        if new && self.pkg.sections.len() >= MAX_SECTIONS {
            return Err(self.error_at(at, format!("too many sections (more than {MAX_SECTIONS})")));
        }
        let pkg = &mut self.pkg;
        if name.is_empty() {
            pkg.allocated = pkg.allocated.saturating_add(1);
            pkg.sections.push(Section {
                name: anonymous_name(pkg.allocated, &ty, &[]),
                section_type: ty,
                anonymous: true,
                options: Vec::new(),
            });
            self.section = Some(pkg.sections.len() - 1);
            return Ok(());
        }
        if let Some(i) = pkg.sections.iter().position(|s| s.name == name) {
            if pkg.sections.get(i).is_some_and(|s| s.section_type != ty) {
                return Err(self.error_at(
                    name_at,
                    format!(
                        "section of different type overwrites prior section with same name '{name}'"
                    ),
                ));
            }
            self.section = Some(i);
        } else {
            // Cannot fail: the type and name were validated above.
            let _ = pkg.set_section(&name, &ty);
            self.section = Some(pkg.sections.len() - 1);
        }
        Ok(())
    }

    fn parse_option(&mut self, list: bool, start: usize) -> Result<(), ParseError> {
        let Some(sec) = self.section else {
            return Err(self.error_at(
                start,
                "option/list command found before the first section (expected 'config')".into(),
            ));
        };
        let (name, at) = self.required("an option name")?;
        if !valid_name(&name) {
            return Err(self.error_at(
                at,
                "invalid character in name field (expected [A-Za-z0-9_])".into(),
            ));
        }
        let arg = self.next_arg()?;
        let value = self.text_of(arg)?;
        self.assert_eol()?;
        let options = self
            .pkg
            .sections
            .get(sec)
            .map_or(&[][..], |s| &s.options[..]);
        match options.iter().find(|o| o.name == name).map(|o| &o.value) {
            None if options.len() >= MAX_OPTIONS => {
                return Err(self.error_at(
                    at,
                    format!("too many options in one section (more than {MAX_OPTIONS})"),
                ));
            }
            Some(Value::List(items)) if list && items.len() >= MAX_LIST_ITEMS => {
                return Err(self.error_at(
                    at,
                    format!("too many items in list '{name}' (more than {MAX_LIST_ITEMS})"),
                ));
            }
            _ => {}
        }
        // Cannot fail: the name is valid, the section exists and the text has no NUL.
        if list {
            let _ = self.pkg.add_list(sec, &name, &value);
        } else if !value.is_empty() {
            // libuci's parser calls uci_set with an incomplete lookup, which returns
            // early on an empty value: `option x ''` neither sets nor deletes.
            let _ = self.pkg.set_option(sec, &name, &value);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Value;
    use alloc::vec;

    fn one(text: &str) -> Package {
        parse("/etc/config/test", "test", text).unwrap()
    }

    fn err(text: &str) -> ParseError {
        parse("/etc/config/test", "test", text).unwrap_err()
    }

    fn opt(p: &Package, sec: usize, name: &str) -> Value {
        p.sections[sec].get(name).cloned().unwrap()
    }

    fn single(s: &str) -> Value {
        Value::Single(s.into())
    }

    #[test]
    fn sections_options_and_list_items_are_bounded_with_an_error_at_the_line() {
        // MAX_SECTIONS anonymous sections parse; one more is an error on its line.
        let many = "config a\n".repeat(MAX_SECTIONS);
        assert_eq!(one(&many).sections.len(), MAX_SECTIONS);
        let e = err(&format!("{many}config a\n"));
        assert_eq!(e.line, MAX_SECTIONS as u32 + 1);
        assert!(e.message.contains("too many sections"), "{e}");
        // Naming an existing section again is not a new one.
        let named = format!("{many}config a 'x'\n").replacen("config a\n", "", 1);
        assert_eq!(one(&named).sections.len(), MAX_SECTIONS);
        // Options of one section.
        let mut text = String::from("config a 's'\n");
        for i in 0..MAX_OPTIONS {
            text.push_str(&format!("\toption o{i} v\n"));
        }
        assert_eq!(one(&text).sections[0].options.len(), MAX_OPTIONS);
        // Setting an existing one again is fine, a new one is not.
        assert!(parse("f", "p", &format!("{text}\toption o0 w\n")).is_ok());
        let e = err(&format!("{text}\toption extra v\n"));
        assert_eq!(e.line, MAX_OPTIONS as u32 + 2);
        assert!(e.message.contains("too many options"), "{e}");
        // Items of one list.
        let text = format!("config a 's'\n{}", "\tlist l x\n".repeat(MAX_LIST_ITEMS));
        assert!(matches!(opt(&one(&text), 0, "l"), Value::List(v) if v.len() == MAX_LIST_ITEMS));
        let e = err(&format!("{text}\tlist l x\n"));
        assert_eq!(e.line, MAX_LIST_ITEMS as u32 + 2);
        assert!(e.message.contains("too many items in list 'l'"), "{e}");
    }

    #[test]
    fn a_config_of_empty_sections_is_refused_before_it_grows_far() {
        // 28 k lines of `config a` (the audit's 3.4 MiB): refused at line 1025,
        // having built at most MAX_SECTIONS sections.
        let text = "config a\n".repeat(28_000);
        let (r, rise) = xenlet_testalloc::peak_during(|| parse("f", "p", &text));
        assert!(r.is_err());
        assert!(rise < 256 * 1024, "parsing took {rise} bytes");
    }

    #[test]
    fn basic_sections_and_options() {
        let p = one("\nconfig interface 'lan'\n\toption proto 'static'\n\tlist dns 1.1.1.1\n\tlist dns \"8.8.8.8\"\n\nconfig zone\n\toption name wan\n");
        assert_eq!(p.sections.len(), 2);
        assert_eq!(p.sections[0].name, "lan");
        assert!(!p.sections[0].anonymous);
        assert_eq!(opt(&p, 0, "proto"), single("static"));
        assert_eq!(
            opt(&p, 0, "dns"),
            Value::List(vec!["1.1.1.1".into(), "8.8.8.8".into()])
        );
        assert!(p.sections[1].anonymous);
        assert_eq!(p.sections[1].name, "cfg02dc81");
        assert_eq!(opt(&p, 1, "name"), single("wan"));
    }

    #[test]
    fn quoting_as_the_shell_does() {
        let p = one(concat!(
            "config t\n",
            "option a 'x'\"y\"z\n",
            "option b 'it'\\''s'\n",
            "option c \"a\\\"b\\\\c\\n\"\n",
            "option d un\\ quoted\n",
            "option e 'multi\nline'\n",
            "option f \"dq\\\ncont\"\n",
            "option g 'no \\ escapes \"here\"'\n",
            "option h \"has 'single' and #hash; semi\"\n",
        ));
        assert_eq!(opt(&p, 0, "a"), single("xyz"));
        assert_eq!(opt(&p, 0, "b"), single("it's"));
        assert_eq!(opt(&p, 0, "c"), single("a\"b\\cn"));
        assert_eq!(opt(&p, 0, "d"), single("un quoted"));
        assert_eq!(opt(&p, 0, "e"), single("multi\nline"));
        assert_eq!(opt(&p, 0, "f"), single("dqcont"));
        assert_eq!(opt(&p, 0, "g"), single("no \\ escapes \"here\""));
        assert_eq!(opt(&p, 0, "h"), single("has 'single' and #hash; semi"));
    }

    #[test]
    fn comments_semicolons_crlf_and_short_keywords() {
        let p = one("# head\r\nconfig t 'n' # trailing\r\n\toption a 1  # why\r\n\toption b x#y z\r\n\r\n  c t2 'm'; o k v; l l1 a; l l1 b\r\np pkg\r\n");
        assert_eq!(opt(&p, 0, "a"), single("1"));
        assert_eq!(opt(&p, 0, "b"), single("x"));
        assert_eq!(p.sections[1].section_type, "t2");
        assert_eq!(opt(&p, 1, "k"), single("v"));
        assert_eq!(opt(&p, 1, "l1"), Value::List(vec!["a".into(), "b".into()]));
    }

    #[test]
    fn unquoted_continuation_like_libuci() {
        // A backslash-newline joins lines; a blank at the start of the next line then
        // ends the argument (libuci's do-while checks for white space), so the rest is a
        // surplus argument.
        let p = one("config t\noption a foo\\\nbar\n");
        assert_eq!(opt(&p, 0, "a"), single("foobar"));
        let e = err("config t\noption a foo\\\n  bar\n");
        assert!(e.message.starts_with("too many arguments"), "{e}");
        assert_eq!((e.line, e.column), (3, 3));
    }

    #[test]
    fn empty_values_and_merging() {
        let p = one("config t 'n'\noption a 'x'\noption a ''\nlist l ''\noption s one\nlist s two\nconfig t 'n'\noption b 2\noption s three\n");
        assert_eq!(p.sections.len(), 1);
        // `option a ''` is ignored by libuci's parser (uci_set with an empty value on an
        // incomplete lookup returns early).
        assert_eq!(opt(&p, 0, "a"), single("x"));
        assert_eq!(opt(&p, 0, "l"), Value::List(vec![String::new()]));
        assert_eq!(opt(&p, 0, "s"), single("three"));
        assert_eq!(opt(&p, 0, "b"), single("2"));
        let e = err("config t 'n'\nconfig u 'n'\n");
        assert_eq!((e.line, e.column), (2, 10));
        assert!(e.message.contains("different type"));
    }

    #[test]
    fn errors_name_what_was_expected() {
        let cases: &[(&str, u32, u32, &str)] = &[
            ("option a b\n", 1, 1, "before the first section"),
            (
                "config\n",
                1,
                7,
                "insufficient arguments (expected a section type)",
            ),
            (
                "config t 'bad-name'\n",
                1,
                10,
                "invalid character in name field",
            ),
            (
                "config t\n\toption 'a b' c\n",
                2,
                9,
                "invalid character in name field",
            ),
            ("config t\noption\n", 2, 7, "expected an option name"),
            ("config t\noption a 'open\n", 2, 10, "unterminated '"),
            ("config t\noption a \"open\\", 2, 10, "unterminated \""),
            ("config t\noption a b c\n", 2, 12, "too many arguments"),
            ("config t n extra\n", 1, 12, "too many arguments"),
            ("frobnicate x\n", 1, 1, "invalid command 'frobnicate'"),
            ("config t\n  optionx a b\n", 2, 3, "invalid command"),
            ("package 'a.b'\n", 1, 9, "invalid character in package name"),
            ("config 'a b'\n", 1, 8, "invalid character in type field"),
            ("config t\noption a x\0y\n", 2, 11, "NUL byte"),
        ];
        for &(text, line, column, msg) in cases {
            let e = err(text);
            assert_eq!((e.line, e.column), (line, column), "{text:?}: {e}");
            assert!(e.message.contains(msg), "{text:?}: {e}");
            assert_eq!(e.file, "/etc/config/test");
        }
        assert_eq!(
            err("config t\noption a b c\n").to_string(),
            "/etc/config/test:2:12: too many arguments (expected the end of the line, ';' or '#')"
        );
    }

    #[test]
    fn bytes_entry_point_reports_bad_utf8() {
        let e = parse_bytes("f", "p", b"config t\noption a \xff\n").unwrap_err();
        assert_eq!(
            (e.line, e.column, e.message.as_str()),
            (2, 10, "invalid UTF-8")
        );
        assert!(parse_bytes("f", "p", b"config t\n").is_ok());
    }
}
