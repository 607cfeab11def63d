//! Shared machinery of the typed configs: reading a section's options with checks.
//!
//! [`SectionReader`] hands out a section's options by name, converting and validating
//! them, and remembers which ones were read; whatever is left at the end is an unknown
//! option and becomes a warning, as fw4 warns `Section @rule[3] (x) specifies unknown
//! option 'y'` (openwrt/firewall4 `fw4.uc`, `parse_options`). A value that does not
//! convert is a [`ConfigError`] naming the file, the section and the option.
//!
//! Booleans accept what OpenWrt's shell library (`config_get_bool` in
//! `/lib/functions.sh`) accepts: `0/no/off/false/disabled` and `1/yes/on/true/enabled`.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use crate::model::{Package, Section, Value};

/// A bad value in a typed config: where it is and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (`/etc/config/network`).
    pub file: String,
    /// The section, as `interface 'lan'` or `@zone[1]` for an anonymous one.
    pub section: String,
    /// The option, if the error is about one.
    pub option: Option<String>,
    /// What is wrong (`'255.0.255.0' is not a netmask`).
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: ", self.file, self.section)?;
        if let Some(o) = &self.option {
            write!(f, "option '{o}': ")?;
        }
        f.write_str(&self.message)
    }
}

impl core::error::Error for ConfigError {}

/// A warning or a note about a config: same shape and format as a [`ConfigError`].
pub type Diagnostic = ConfigError;

/// A typed config with what was noticed while reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked<T> {
    /// The config.
    pub config: T,
    /// Things that are probably mistakes but were skipped (unknown options or sections).
    pub warnings: Vec<Diagnostic>,
    /// Things recognised and deliberately ignored (IPv6 protocols, unsupported features).
    pub notes: Vec<Diagnostic>,
}

/// `/etc/config/<package>`.
pub fn file_of(p: &Package) -> String {
    format!("/etc/config/{}", p.name)
}

/// How a section is named in messages: `interface 'lan'`, or `@zone[1]` if anonymous.
pub fn section_label(p: &Package, idx: usize) -> String {
    match p.sections.get(idx) {
        Some(s) if !s.anonymous => format!("{} '{}'", s.section_type, s.name),
        Some(_) => p.extended_ref(idx).unwrap_or_default(),
        None => String::new(),
    }
}

/// OpenWrt's boolean spellings.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "yes" | "on" | "true" | "enabled" => Some(true),
        "0" | "no" | "off" | "false" | "disabled" => Some(false),
        _ => None,
    }
}

/// A decimal integer with no sign or junk, within `T`.
pub fn parse_uint<T: TryFrom<u64>>(v: &str) -> Option<T> {
    if v.is_empty() || v.len() > 19 || !v.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut n: u64 = 0;
    for c in v.bytes() {
        n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    T::try_from(n).ok()
}

/// Reads one section's options, tracking which were used.
pub struct SectionReader<'a> {
    file: String,
    label: String,
    section: &'a Section,
    used: Vec<bool>,
}

impl<'a> SectionReader<'a> {
    /// A reader for section `idx` of `p`.
    pub fn new(p: &'a Package, idx: usize, section: &'a Section) -> Self {
        SectionReader {
            file: file_of(p),
            label: section_label(p, idx),
            section,
            used: alloc::vec![false; section.options.len()],
        }
    }

    /// The section being read.
    pub fn section(&self) -> &'a Section {
        self.section
    }

    /// An error about `option`.
    pub fn error(&self, option: &str, message: String) -> ConfigError {
        ConfigError {
            file: self.file.clone(),
            section: self.label.clone(),
            option: Some(option.to_string()),
            message,
        }
    }

    /// A diagnostic about the whole section.
    pub fn about_section(&self, message: String) -> Diagnostic {
        ConfigError {
            file: self.file.clone(),
            section: self.label.clone(),
            option: None,
            message,
        }
    }

    fn take(&mut self, name: &str) -> Option<&'a Value> {
        let i = self.section.options.iter().position(|o| o.name == name)?;
        if let Some(u) = self.used.get_mut(i) {
            *u = true;
        }
        self.section.options.get(i).map(|o| &o.value)
    }

    /// Marks options as known but not used (no warning).
    pub fn ignore(&mut self, names: &[&str]) {
        for n in names {
            let _ = self.take(n);
        }
    }

    /// Whether the option is present (without using it).
    pub fn has(&self, name: &str) -> bool {
        self.section.get(name).is_some()
    }

    /// A single value; a list here is an error.
    pub fn single(&mut self, name: &str) -> Result<Option<&'a str>, ConfigError> {
        match self.take(name) {
            None => Ok(None),
            Some(Value::Single(v)) => Ok(Some(v.as_str())),
            Some(Value::List(_)) => {
                Err(self.error(name, "expected a single value, found a list".into()))
            }
        }
    }

    /// A list's items, or a single value split at white space (how fw4 and netifd read
    /// list-typed options given as `option`).
    pub fn items(&mut self, name: &str) -> Vec<&'a str> {
        match self.take(name) {
            None => Vec::new(),
            Some(Value::Single(v)) => v.split_ascii_whitespace().collect(),
            Some(Value::List(l)) => l.iter().map(String::as_str).collect(),
        }
    }

    /// A list's items each as given (no splitting), or the single value.
    pub fn raw_items(&mut self, name: &str) -> Vec<&'a str> {
        match self.take(name) {
            None => Vec::new(),
            Some(v) => v.items().collect(),
        }
    }

    /// A single value converted by `f`; `what` completes "'v' is not ...".
    pub fn parse<T>(
        &mut self,
        name: &str,
        what: &str,
        f: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, ConfigError> {
        match self.single(name)? {
            None => Ok(None),
            Some(v) => match f(v) {
                Some(t) => Ok(Some(t)),
                None => Err(self.error(name, format!("'{v}' is not {what}"))),
            },
        }
    }

    /// Every item converted by `f`.
    pub fn parse_items<T>(
        &mut self,
        name: &str,
        what: &str,
        f: impl Fn(&str) -> Option<T>,
    ) -> Result<Vec<T>, ConfigError> {
        let items = self.items(name);
        let mut out = Vec::with_capacity(items.len());
        for v in items {
            match f(v) {
                Some(t) => out.push(t),
                None => return Err(self.error(name, format!("'{v}' is not {what}"))),
            }
        }
        Ok(out)
    }

    /// A boolean with a default.
    pub fn boolean(&mut self, name: &str, default: bool) -> Result<bool, ConfigError> {
        Ok(self
            .parse(
                name,
                "a boolean (0/1, no/yes, off/on, false/true)",
                parse_bool,
            )?
            .unwrap_or(default))
    }

    /// Warnings for every option not read or ignored.
    pub fn finish(self, warnings: &mut Vec<Diagnostic>) {
        for (o, used) in self.section.options.iter().zip(self.used.iter()) {
            if !used {
                warnings.push(ConfigError {
                    file: self.file.clone(),
                    section: self.label.clone(),
                    option: Some(o.name.clone()),
                    message: "unknown option, ignored".into(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    #[test]
    fn reader_tracks_unknown_options_and_reports_errors() {
        let p = parse(
            "/etc/config/x",
            "x",
            "config zone\n\toption a 1\n\toption b maybe\n\tlist c 'x y'\n\tlist c z\n\toption d 'p q'\n\toption e 1\n",
        )
        .unwrap();
        let mut r = SectionReader::new(&p, 0, &p.sections[0]);
        assert_eq!(r.boolean("a", false), Ok(true));
        let e = r.boolean("b", false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/etc/config/x: @zone[0]: option 'b': 'maybe' is not a boolean (0/1, no/yes, off/on, false/true)"
        );
        assert_eq!(r.raw_items("c"), ["x y", "z"]);
        assert_eq!(r.items("d"), ["p", "q"]);
        let mut w = Vec::new();
        r.finish(&mut w);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].option.as_deref(), Some("e"));
        assert_eq!(
            w[0].to_string(),
            "/etc/config/x: @zone[0]: option 'e': unknown option, ignored"
        );
    }

    #[test]
    fn booleans_and_ints() {
        for t in ["1", "yes", "on", "true", "enabled"] {
            assert_eq!(parse_bool(t), Some(true));
        }
        for f in ["0", "no", "off", "false", "disabled"] {
            assert_eq!(parse_bool(f), Some(false));
        }
        assert_eq!(parse_bool("2"), None);
        assert_eq!(parse_bool("YES"), None);
        assert_eq!(parse_uint::<u16>("65535"), Some(65535));
        assert_eq!(parse_uint::<u16>("65536"), None);
        assert_eq!(parse_uint::<u32>("-1"), None);
        assert_eq!(parse_uint::<u32>(""), None);
        assert_eq!(parse_uint::<u64>("99999999999999999999"), None);
    }
}
