//! Serialising a package back to UCI text, in OpenWrt's style.
//!
//! The layout is `uci_export_package` in openwrt/uci `file.c`, i.e. what `uci commit`
//! writes and `uci export` prints: a blank line before each `config TYPE 'NAME'` line
//! (no name for anonymous sections), tab-indented `option NAME 'VALUE'` and one
//! `list NAME 'VALUE'` per item, and a final blank line. Values are single-quoted with
//! `'` written as `'\''` (`uci_escape`), which [`crate::parse::parse`] reads back exactly,
//! newlines, backslashes and double quotes included. Unlike libuci, a type holding a
//! quote or another character special to the parser is quoted too, so that
//! `parse(write(p)) == p` holds for every package the model can hold.

use alloc::string::String;

use crate::model::{Package, Value};

/// Appends `v` single-quoted (`'` becomes `'\''`).
pub fn quote_into(out: &mut String, v: &str) {
    out.push('\'');
    for c in v.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
}

/// `v` single-quoted as uci prints values.
pub fn quote(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    quote_into(&mut s, v);
    s
}

fn push_type(out: &mut String, ty: &str) {
    if ty
        .chars()
        .all(|c| c.is_ascii_graphic() && !matches!(c, '\'' | '"' | '\\' | '#' | ';'))
    {
        out.push_str(ty);
    } else {
        quote_into(out, ty);
    }
}

/// The file text for `p` (what `uci commit` writes).
pub fn write(p: &Package) -> String {
    let mut out = String::new();
    for s in &p.sections {
        out.push_str("\nconfig ");
        push_type(&mut out, &s.section_type);
        if !s.anonymous {
            out.push(' ');
            quote_into(&mut out, &s.name);
        }
        out.push('\n');
        for o in &s.options {
            match &o.value {
                Value::Single(v) => {
                    out.push_str("\toption ");
                    out.push_str(&o.name);
                    out.push(' ');
                    quote_into(&mut out, v);
                    out.push('\n');
                }
                Value::List(items) => {
                    for v in items {
                        out.push_str("\tlist ");
                        out.push_str(&o.name);
                        out.push(' ');
                        quote_into(&mut out, v);
                        out.push('\n');
                    }
                }
            }
        }
    }
    out.push('\n');
    out
}

/// What `uci export PACKAGE` prints: a `package NAME` header, then [`write()`].
pub fn export(p: &Package) -> String {
    let mut out = String::from("package ");
    out.push_str(&p.name);
    out.push('\n');
    out.push_str(&write(p));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;
    use alloc::vec;
    use alloc::vec::Vec;

    #[test]
    fn openwrt_style() {
        let mut p = Package::new("network");
        p.set_section("lan", "interface").unwrap();
        p.set_option(0, "ipaddr", "192.168.1.1").unwrap();
        let d = p.add_section("device").unwrap();
        p.add_list(d, "ports", "eth0").unwrap();
        p.add_list(d, "ports", "eth1").unwrap();
        assert_eq!(
            write(&p),
            "\nconfig interface 'lan'\n\toption ipaddr '192.168.1.1'\n\nconfig device\n\tlist ports 'eth0'\n\tlist ports 'eth1'\n\n"
        );
        assert!(export(&p).starts_with("package network\n\nconfig interface 'lan'\n"));
    }

    /// openwrt/uci tests/shunit2/references/export.result: the exact text `uci export`
    /// prints for a multi-line value and one holding a quote.
    #[test]
    fn matches_uci_export_reference() {
        let mut p = Package::new("export");
        p.set_section("section", "type").unwrap();
        p.set_option(0, "opt", "val").unwrap();
        p.add_list(0, "list_opt", "val0").unwrap();
        p.add_list(0, "list_opt", "val1").unwrap();
        p.set_option(0, "mul_line_opt_sq", "line 1\nline 2 \\\nline 3")
            .unwrap();
        p.set_option(0, "mul_line_opt_dq", "\"Hello, World.'\n")
            .unwrap();
        let expected = "package export\n\nconfig type 'section'\n\toption opt 'val'\n\tlist list_opt 'val0'\n\tlist list_opt 'val1'\n\toption mul_line_opt_sq 'line 1\nline 2 \\\nline 3'\n\toption mul_line_opt_dq '\"Hello, World.'\\''\n'\n\n";
        assert_eq!(export(&p), expected);
        assert_eq!(parse("x", "export", &export(&p)).unwrap(), p);
    }

    #[test]
    fn tricky_values_round_trip() {
        let values: Vec<&str> = vec![
            "'",
            "''",
            "\\",
            "\\\n",
            "a'b\"c\\d",
            "line\nbreak",
            "crlf\r\n",
            "\r",
            " lead and trail ",
            "#not a comment",
            "semi;colon",
            "tab\there",
            "ünïcödé ✓",
            "'\\''",
        ];
        let mut p = Package::new("t");
        p.set_section("s", "odd'type#;").unwrap();
        for (i, v) in values.iter().enumerate() {
            p.set_option(0, &alloc::format!("o{i}"), v).unwrap();
            p.add_list(0, "l", v).unwrap();
        }
        p.add_list(0, "l", "").unwrap();
        let text = write(&p);
        assert_eq!(parse("x", "t", &text).unwrap(), p, "{text}");
    }
}
