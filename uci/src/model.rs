//! The in-memory UCI tree: packages, sections, options, and libuci's edit operations.
//!
//! A [`Package`] (one `/etc/config` file) is an ordered list of [`Section`]s; a section
//! has a type, a name and an ordered list of options, each a single string or a list of
//! strings. Anonymous sections (`config zone` with no name) get a generated name as
//! libuci gives them (`cfg` + section counter + hash of the type, `uci_fixup_section` in
//! openwrt/uci `list.c`) and are addressed as `@type[N]` / `@type[-1]`
//! (`uci_lookup_ext_section`). The edit operations follow `uci_set`, `uci_add_list`,
//! `uci_del_list`, `uci_delete`, `uci_rename` and `uci_reorder_section` in `list.c`,
//! including their quirks (setting an empty value deletes; `list` on a single value turns
//! it into a list; a type change keeps the section's position).
//!
//! Invariants kept by every operation here: names are valid ([`valid_name`],
//! [`valid_type`]), a [`Value::Single`] is never empty (libuci cannot store one), and
//! no string holds a NUL.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// An option's value: `option name 'v'` or a run of `list name 'v'` lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// `option NAME VALUE` (never empty).
    Single(String),
    /// `list NAME VALUE`, in order (items may be empty).
    List(Vec<String>),
}

impl Value {
    /// The values as a slice-like iterator: one item for a single value, all for a list.
    pub fn items(&self) -> impl Iterator<Item = &str> {
        let (one, many): (Option<&str>, &[String]) = match self {
            Value::Single(s) => (Some(s.as_str()), &[]),
            Value::List(l) => (None, l.as_slice()),
        };
        one.into_iter().chain(many.iter().map(String::as_str))
    }
}

/// One option of a section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UciOption {
    /// The option's name (`[A-Za-z0-9_]+`).
    pub name: String,
    /// Its value.
    pub value: Value,
}

/// One `config TYPE ['NAME']` section.
#[derive(Clone, Debug, Eq)]
pub struct Section {
    /// The section type (`interface`, `zone`, ...).
    pub section_type: String,
    /// The name: the given one, or the generated `cfgXXXXXX` for an anonymous section.
    pub name: String,
    /// True for a section written without a name (`config zone`).
    pub anonymous: bool,
    /// The options in file order.
    pub options: Vec<UciOption>,
}

/// Two sections are equal when their type, anonymity and options are, and (for named
/// sections) their names: an anonymous section's generated name depends on how many
/// sections the package had allocated when it was created, which a rewrite renumbers.
impl PartialEq for Section {
    fn eq(&self, other: &Self) -> bool {
        self.section_type == other.section_type
            && self.anonymous == other.anonymous
            && self.options == other.options
            && (self.anonymous || self.name == other.name)
    }
}

impl Section {
    /// The option called `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.options
            .iter()
            .find(|o| o.name == name)
            .map(|o| &o.value)
    }

    fn option_index(&self, name: &str) -> Option<usize> {
        self.options.iter().position(|o| o.name == name)
    }
}

/// One configuration package (one file in `/etc/config`).
#[derive(Clone, Debug, Eq)]
pub struct Package {
    /// The package name (the file name).
    pub name: String,
    /// The sections in file order.
    pub sections: Vec<Section>,
    /// How many sections were ever allocated (libuci's `n_section`), the counter in
    /// generated `cfgNNHHHH` names.
    pub allocated: u32,
}

impl PartialEq for Package {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.sections == other.sections
    }
}

/// Why an edit or a lookup failed (libuci's `UCI_ERR_*` that the CLI prints).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditError {
    /// `UCI_ERR_INVAL`: "Invalid argument".
    Invalid,
    /// `UCI_ERR_NOTFOUND`: "Entry not found".
    NotFound,
}

/// `uci_validate_str(s, name=true)`: `[A-Za-z0-9_]+`, for section and option names.
pub fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// `uci_validate_type`: non-empty printable ASCII without spaces (33..=126).
pub fn valid_type(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| (33..=126).contains(&c))
}

/// `uci_validate_package`: `[A-Za-z0-9_-]+`.
pub fn valid_package(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// `uci_validate_text`: no control characters but tab, newline and carriage return.
pub fn valid_text(s: &str) -> bool {
    s.bytes()
        .all(|c| c >= 32 || c == b'\t' || c == b'\n' || c == b'\r')
}

/// libuci's `djbhash` (D. J. Bernstein's hash, masked to 31 bits after each string).
fn djbhash(mut hash: u32, s: &str) -> u32 {
    if hash == u32::MAX {
        hash = 5381;
    }
    for &c in s.as_bytes() {
        // libuci adds a `char`, signed on x86: bytes >= 0x80 count as negative.
        let c = c as i8 as i32 as u32;
        hash = hash.wrapping_shl(5).wrapping_add(hash).wrapping_add(c);
    }
    hash & 0x7FFF_FFFF
}

/// The name libuci gives a new anonymous section (`uci_fixup_section`): `cfg`, the
/// package's section counter in (at least) two hex digits, and the low 16 bits of the hash
/// of the type and options.
pub fn anonymous_name(counter: u32, section_type: &str, options: &[UciOption]) -> String {
    let mut hash = djbhash(u32::MAX, section_type);
    for o in options {
        hash = djbhash(hash, &o.name);
        if let Value::Single(v) = &o.value {
            hash = djbhash(hash, v);
        }
    }
    format!("cfg{:02x}{:04x}", counter, hash % (1 << 16))
}

impl Package {
    /// An empty package.
    pub fn new(name: &str) -> Package {
        Package {
            name: name.to_string(),
            sections: Vec::new(),
            allocated: 0,
        }
    }

    /// The section called `name` (its real or generated name).
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// Sections of one type, in order.
    pub fn sections_of_type<'a>(&'a self, ty: &'a str) -> impl Iterator<Item = &'a Section> {
        self.sections.iter().filter(move |s| s.section_type == ty)
    }

    /// Finds a section by name or by `@type[N]` / `@type[-N]` / `@[N]`.
    ///
    /// `Ok(None)` is "no such section"; a malformed `@` reference is
    /// [`EditError::Invalid`], as in `uci_lookup_ext_section`.
    pub fn find_section(&self, sref: &str) -> Result<Option<usize>, EditError> {
        if valid_name(sref) {
            return Ok(self.sections.iter().position(|s| s.name == sref));
        }
        let rest = sref.strip_prefix('@').ok_or(EditError::Invalid)?;
        let open = rest.find('[').ok_or(EditError::Invalid)?;
        let (ty, idx) = rest.split_at(open);
        let idx = idx
            .strip_prefix('[')
            .and_then(|i| i.strip_suffix(']'))
            .ok_or(EditError::Invalid)?;
        if !ty.is_empty() && !valid_type(ty) {
            return Err(EditError::Invalid);
        }
        let idx: i64 = parse_c_int(idx).ok_or(EditError::Invalid)?;
        let matches = |s: &&Section| ty.is_empty() || s.section_type == ty;
        let count = self.sections.iter().filter(matches).count();
        let idx = if idx < 0 {
            idx.checked_add(i64::try_from(count).unwrap_or(i64::MAX))
        } else {
            Some(idx)
        };
        let Some(idx) = idx.and_then(|i| usize::try_from(i).ok()) else {
            return Ok(None);
        };
        let found = self
            .sections
            .iter()
            .enumerate()
            .filter(|(_, s)| matches(s))
            .nth(idx)
            .map(|(i, _)| i);
        Ok(found)
    }

    /// How `uci show` names section `idx` of the package: `@type[N]` for anonymous ones
    /// (N counts every section of that type before it, named or not), else its name.
    pub fn extended_ref(&self, idx: usize) -> Option<String> {
        let s = self.sections.get(idx)?;
        if !s.anonymous {
            return Some(s.name.clone());
        }
        let n = self
            .sections
            .iter()
            .take(idx)
            .filter(|t| t.section_type == s.section_type)
            .count();
        Some(format!("@{}[{}]", s.section_type, n))
    }

    /// Appends a new anonymous section (`uci_add_section`); returns its index.
    pub fn add_section(&mut self, ty: &str) -> Result<usize, EditError> {
        if !valid_type(ty) {
            return Err(EditError::Invalid);
        }
        self.allocated = self.allocated.saturating_add(1);
        let name = anonymous_name(self.allocated, ty, &[]);
        self.sections.push(Section {
            section_type: ty.to_string(),
            name,
            anonymous: true,
            options: Vec::new(),
        });
        Ok(self.sections.len() - 1)
    }

    /// `uci_set` on a section: creates `name` with type `ty`, or changes the type of the
    /// existing one in place. Returns whether anything changed.
    pub fn set_section(&mut self, name: &str, ty: &str) -> Result<bool, EditError> {
        if !valid_type(ty) || !valid_name(name) {
            return Err(EditError::Invalid);
        }
        match self.sections.iter_mut().find(|s| s.name == name) {
            Some(s) if s.section_type == ty => Ok(false),
            Some(s) => {
                s.section_type = ty.to_string();
                Ok(true)
            }
            None => {
                self.allocated = self.allocated.saturating_add(1);
                self.sections.push(Section {
                    section_type: ty.to_string(),
                    name: name.to_string(),
                    anonymous: false,
                    options: Vec::new(),
                });
                Ok(true)
            }
        }
    }

    /// `uci_set` on an option: sets a single value (replacing a list in place); an empty
    /// value deletes the option. Returns whether anything changed.
    pub fn set_option(&mut self, sec: usize, opt: &str, value: &str) -> Result<bool, EditError> {
        if !valid_name(opt) || value.contains('\0') {
            return Err(EditError::Invalid);
        }
        let s = self.sections.get_mut(sec).ok_or(EditError::Invalid)?;
        let idx = s.option_index(opt);
        if value.is_empty() {
            return Ok(match idx {
                Some(i) => {
                    s.options.remove(i);
                    true
                }
                None => false,
            });
        }
        match idx.and_then(|i| s.options.get_mut(i)) {
            Some(o) if o.value == Value::Single(value.to_string()) => Ok(false),
            Some(o) => {
                o.value = Value::Single(value.to_string());
                Ok(true)
            }
            None => {
                s.options.push(UciOption {
                    name: opt.to_string(),
                    value: Value::Single(value.to_string()),
                });
                Ok(true)
            }
        }
    }

    /// `uci_add_list`: appends to a list option, turning a single value into a list
    /// whose first item is the old value.
    pub fn add_list(&mut self, sec: usize, opt: &str, value: &str) -> Result<(), EditError> {
        if !valid_name(opt) || value.contains('\0') {
            return Err(EditError::Invalid);
        }
        let s = self.sections.get_mut(sec).ok_or(EditError::Invalid)?;
        match s.option_index(opt).and_then(|i| s.options.get_mut(i)) {
            Some(o) => match &mut o.value {
                Value::List(l) => l.push(value.to_string()),
                Value::Single(old) => {
                    let old = core::mem::take(old);
                    o.value = Value::List(alloc::vec![old, value.to_string()]);
                }
            },
            None => s.options.push(UciOption {
                name: opt.to_string(),
                value: Value::List(alloc::vec![value.to_string()]),
            }),
        }
        Ok(())
    }

    /// `uci_del_list`: removes every item equal to `value` from a list option; a missing
    /// option or a single value is left alone. Returns whether the option was a list.
    pub fn del_list(&mut self, sec: usize, opt: &str, value: &str) -> Result<bool, EditError> {
        let s = self.sections.get_mut(sec).ok_or(EditError::Invalid)?;
        match s.option_index(opt).and_then(|i| s.options.get_mut(i)) {
            Some(UciOption {
                value: Value::List(l),
                ..
            }) => {
                l.retain(|v| v != value);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// `uci_delete` of a whole section.
    pub fn delete_section(&mut self, sec: usize) -> Result<(), EditError> {
        if sec >= self.sections.len() {
            return Err(EditError::NotFound);
        }
        self.sections.remove(sec);
        Ok(())
    }

    /// `uci_delete` of an option, or of the `index`-th item of a list option.
    pub fn delete_option(
        &mut self,
        sec: usize,
        opt: &str,
        index: Option<i64>,
    ) -> Result<(), EditError> {
        let s = self.sections.get_mut(sec).ok_or(EditError::NotFound)?;
        let i = s.option_index(opt).ok_or(EditError::NotFound)?;
        let o = s.options.get_mut(i).ok_or(EditError::NotFound)?;
        match (&mut o.value, index) {
            (Value::List(l), Some(n)) => {
                // Out of range (or negative) deletes nothing, as libuci's walk does.
                if let Some(n) = usize::try_from(n).ok().filter(|&n| n < l.len()) {
                    l.remove(n);
                }
            }
            _ => {
                s.options.remove(i);
            }
        }
        Ok(())
    }

    /// `uci_rename` of a section (which stops being anonymous).
    pub fn rename_section(&mut self, sec: usize, new: &str) -> Result<(), EditError> {
        if !valid_name(new) {
            return Err(EditError::Invalid);
        }
        let s = self.sections.get_mut(sec).ok_or(EditError::NotFound)?;
        s.name = new.to_string();
        s.anonymous = false;
        Ok(())
    }

    /// `uci_rename` of an option.
    pub fn rename_option(&mut self, sec: usize, opt: &str, new: &str) -> Result<(), EditError> {
        if !valid_name(new) {
            return Err(EditError::Invalid);
        }
        let s = self.sections.get_mut(sec).ok_or(EditError::NotFound)?;
        let o = s
            .options
            .iter_mut()
            .find(|o| o.name == opt)
            .ok_or(EditError::NotFound)?;
        o.name = new.to_string();
        Ok(())
    }

    /// `uci_reorder_section`: moves a section to position `pos` (clamped to the end).
    /// Returns whether it moved.
    pub fn reorder(&mut self, sec: usize, pos: usize) -> Result<bool, EditError> {
        if sec >= self.sections.len() {
            return Err(EditError::NotFound);
        }
        let s = self.sections.remove(sec);
        let pos = pos.min(self.sections.len());
        self.sections.insert(pos, s);
        Ok(pos != sec)
    }
}

/// `sscanf("%d")`/`strtol` as libuci uses them for indices: optional sign, decimal
/// digits, nothing else; out of `i32` range is rejected.
pub fn parse_c_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if digits.is_empty() || digits.len() > 10 || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut n: i64 = 0;
    for c in digits.bytes() {
        n = n.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
    }
    let n = if neg { -n } else { n };
    i32::try_from(n).ok().map(i64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkg() -> Package {
        let mut p = Package::new("network");
        p.set_section("lan", "interface").unwrap();
        p.add_section("device").unwrap();
        p.set_section("wan", "interface").unwrap();
        p.add_section("device").unwrap();
        p
    }

    #[test]
    fn generated_names_match_libuci() {
        // `uci show -X firewall` on OpenWrt's default firewall prints
        // `firewall.cfg01e63d=defaults` and `firewall.cfg02dc81=zone` (widely quoted in
        // the OpenWrt forum and wiki); those are section counter + djbhash of the type.
        assert_eq!(anonymous_name(1, "defaults", &[]), "cfg01e63d");
        assert_eq!(anonymous_name(2, "zone", &[]), "cfg02dc81");
        assert_eq!(anonymous_name(3, "zone", &[]), "cfg03dc81");
        // More than 255 sections: the counter grows past two digits like `%02x` does.
        assert_eq!(&anonymous_name(0x123, "zone", &[])[..6], "cfg123");
    }

    #[test]
    fn at_type_index_lookup() {
        let p = pkg();
        assert_eq!(p.find_section("@device[0]"), Ok(Some(1)));
        assert_eq!(p.find_section("@device[1]"), Ok(Some(3)));
        assert_eq!(p.find_section("@device[-1]"), Ok(Some(3)));
        assert_eq!(p.find_section("@device[-2]"), Ok(Some(1)));
        assert_eq!(p.find_section("@device[-3]"), Ok(None));
        assert_eq!(p.find_section("@device[2]"), Ok(None));
        assert_eq!(p.find_section("@interface[1]"), Ok(Some(2)));
        assert_eq!(p.find_section("@[2]"), Ok(Some(2)));
        assert_eq!(p.find_section("lan"), Ok(Some(0)));
        assert_eq!(p.find_section("nope"), Ok(None));
        for bad in [
            "@",
            "@device",
            "@device[",
            "@device[x]",
            "@device[0]x",
            "@de vice[0]",
            "a-b",
        ] {
            assert_eq!(p.find_section(bad), Err(EditError::Invalid), "{bad}");
        }
        assert_eq!(p.extended_ref(3).as_deref(), Some("@device[1]"));
        assert_eq!(p.extended_ref(2).as_deref(), Some("wan"));
    }

    #[test]
    fn set_add_list_delete_follow_libuci() {
        let mut p = pkg();
        assert_eq!(p.set_option(0, "ipaddr", "10.0.0.1"), Ok(true));
        assert_eq!(p.set_option(0, "ipaddr", "10.0.0.1"), Ok(false));
        p.add_list(0, "ipaddr", "10.0.0.2").unwrap();
        assert_eq!(
            p.sections[0].get("ipaddr"),
            Some(&Value::List(alloc::vec![
                "10.0.0.1".into(),
                "10.0.0.2".into()
            ]))
        );
        p.add_list(0, "ipaddr", "10.0.0.1").unwrap();
        assert_eq!(p.del_list(0, "ipaddr", "10.0.0.1"), Ok(true));
        assert_eq!(
            p.sections[0].get("ipaddr"),
            Some(&Value::List(alloc::vec!["10.0.0.2".into()]))
        );
        // A single value replaces a list at the same position.
        p.set_option(0, "proto", "static").unwrap();
        p.set_option(0, "ipaddr", "1.2.3.4").unwrap();
        assert_eq!(p.sections[0].options[0].name, "ipaddr");
        // Empty value deletes.
        assert_eq!(p.set_option(0, "ipaddr", ""), Ok(true));
        assert_eq!(p.sections[0].get("ipaddr"), None);
        assert_eq!(p.delete_option(0, "ipaddr", None), Err(EditError::NotFound));
        // Type change keeps position.
        assert_eq!(p.set_section("lan", "alias"), Ok(true));
        assert_eq!(p.sections[0].section_type, "alias");
        p.rename_section(1, "mydev").unwrap();
        assert!(!p.sections[1].anonymous);
        assert_eq!(p.rename_section(1, "bad-name"), Err(EditError::Invalid));
        assert_eq!(p.reorder(3, 0), Ok(true));
        assert_eq!(p.sections[0].section_type, "device");
    }

    #[test]
    fn c_int() {
        assert_eq!(parse_c_int("-1"), Some(-1));
        assert_eq!(parse_c_int("+7"), Some(7));
        assert_eq!(parse_c_int("2147483648"), None);
        assert_eq!(parse_c_int(""), None);
        assert_eq!(parse_c_int("1x"), None);
    }
}
