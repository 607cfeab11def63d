//! The `uci` command: show, get, set, add, delete, rename, changes, commit, revert, ...
//!
//! Follows openwrt/uci `cli.c` (commands, argument checks, output formats, exit codes),
//! `libuci.c` (`uci_perror` messages: `uci: Entry not found`, `uci: Invalid argument`),
//! `util.c` (`uci_parse_ptr`: `package[.section[.option]][=value]`) and `delta.c` (staged
//! changes and their `uci changes` format). The reference outputs it is tested against
//! are openwrt/uci `tests/shunit2/references/*` and `tests/shunit2/tests.d/*`.
//!
//! Storage is the [`ConfigStore`] trait (the kernel implements it with its VFS over
//! `/etc/config`); staged changes live in the [`Uci`] value in memory, playing the part of
//! uci's `/tmp/.uci/<package>` delta files: `set` and friends record a [`Delta`], every
//! load replays them on top of the file, `commit` writes the result with one atomic
//! replace and forgets them, `revert` drops them. Not implemented: `batch`, `import`,
//! and the `-c/-C/-p/-P/-t/-f/-m/-s/-S` options (one config directory, always strict).

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write as _;

use crate::model::{
    parse_c_int, valid_name, valid_package, valid_text, valid_type, EditError, Package, Value,
};
use crate::parse::parse;
use crate::write::{export, quote_into, write};

/// A storage failure (uci's "I/O error").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreError;

/// Where config files live: `/etc/config` on the kernel's ext4 root, or a map in tests.
pub trait ConfigStore {
    /// The text of `/etc/config/<package>`, `None` if there is no such file.
    fn read(&self, package: &str) -> Result<Option<String>, StoreError>;
    /// Replaces `/etc/config/<package>` with `text` atomically (write a temporary file,
    /// then rename it over the old one, as `uci_file_commit` does).
    fn write_atomic(&mut self, package: &str, text: &str) -> Result<(), StoreError>;
    /// The package names in `/etc/config`, sorted (uci skips names with a `.`).
    fn list(&self) -> Result<Vec<String>, StoreError>;
}

/// A command's result: what it printed and its exit status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Exit status (0 success, 1 failure, 255 usage).
    pub code: i32,
}

/// One staged change (`enum uci_command` in `uci.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeltaCmd {
    /// `uci add`: a new anonymous section (value: its type).
    Add,
    /// `uci delete` (value: list index, if one was given).
    Remove,
    /// `uci set` (value: new value or section type).
    Change,
    /// `uci rename` (value: new name).
    Rename,
    /// `uci reorder` (value: position).
    Reorder,
    /// `uci add_list`.
    ListAdd,
    /// `uci del_list`.
    ListDel,
}

/// A staged change to one package (`struct uci_delta`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delta {
    /// What was done.
    pub cmd: DeltaCmd,
    /// The section's real name (never an `@type[N]` reference).
    pub section: String,
    /// The option, if the change is to one.
    pub option: Option<String>,
    /// The argument.
    pub value: Option<String>,
}

/// Why loading a package failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// Not a valid package name.
    BadName,
    /// No such file.
    NotFound,
    /// The store failed.
    Io,
    /// The file does not parse.
    Parse(crate::parse::ParseError),
}

/// Replays one delta on a package (`uci_parse_delta_line`); returns whether the
/// package changed.
pub fn apply_delta(p: &mut Package, d: &Delta) -> Result<bool, EditError> {
    let value = d.value.as_deref();
    let sec = p.find_section(&d.section)?;
    match (d.cmd, &d.option) {
        (DeltaCmd::Add, _) => {
            let changed = p.set_section(&d.section, value.ok_or(EditError::Invalid)?)?;
            if let Some(s) = p.sections.iter_mut().find(|s| s.name == d.section) {
                s.anonymous = true;
            }
            Ok(changed)
        }
        (DeltaCmd::Change, None) => match value.ok_or(EditError::Invalid)? {
            "" => match sec {
                Some(i) => p.delete_section(i).map(|()| true),
                None => Ok(false),
            },
            ty => p.set_section(&d.section, ty),
        },
        (DeltaCmd::Change, Some(o)) => p.set_option(
            sec.ok_or(EditError::Invalid)?,
            o,
            value.ok_or(EditError::Invalid)?,
        ),
        (DeltaCmd::Remove, None) => p
            .delete_section(sec.ok_or(EditError::NotFound)?)
            .map(|()| true),
        (DeltaCmd::Remove, Some(o)) => {
            let index = match value {
                Some(v) if !v.is_empty() => Some(parse_c_int(v).ok_or(EditError::Invalid)?),
                _ => None,
            };
            p.delete_option(sec.ok_or(EditError::NotFound)?, o, index)
                .map(|()| true)
        }
        (DeltaCmd::Rename, None) => p
            .rename_section(
                sec.ok_or(EditError::NotFound)?,
                value.ok_or(EditError::Invalid)?,
            )
            .map(|()| true),
        (DeltaCmd::Rename, Some(o)) => p
            .rename_option(
                sec.ok_or(EditError::NotFound)?,
                o,
                value.ok_or(EditError::Invalid)?,
            )
            .map(|()| true),
        (DeltaCmd::Reorder, None) => p.reorder(
            sec.ok_or(EditError::NotFound)?,
            leading_uint(value.unwrap_or("")),
        ),
        (DeltaCmd::Reorder, Some(_)) => Err(EditError::Invalid),
        (DeltaCmd::ListAdd, Some(o)) => p
            .add_list(
                sec.ok_or(EditError::Invalid)?,
                o,
                value.ok_or(EditError::Invalid)?,
            )
            .map(|()| true),
        (DeltaCmd::ListDel, Some(o)) => p.del_list(
            sec.ok_or(EditError::Invalid)?,
            o,
            value.ok_or(EditError::Invalid)?,
        ),
        (DeltaCmd::ListAdd | DeltaCmd::ListDel, None) => Err(EditError::Invalid),
    }
}

/// `strtoul(s, NULL, 10)` for reorder positions: leading digits, saturating.
fn leading_uint(s: &str) -> usize {
    s.bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0usize, |n, c| {
            n.saturating_mul(10).saturating_add(usize::from(c - b'0'))
        })
}

/// uci's usage text (`uci_usage` in `cli.c`), printed on stderr.
pub const USAGE: &str = "Usage: uci [<options>] <command> [<arguments>]\n\n\
Commands:\n\
\tbatch\n\
\texport     [<config>]\n\
\timport     [<config>]\n\
\tchanges    [<config>]\n\
\tcommit     [<config>]\n\
\tadd        <config> <section-type>\n\
\tadd_list   <config>.<section>.<option>=<string>\n\
\tdel_list   <config>.<section>.<option>=<string>\n\
\tshow       [<config>[.<section>[.<option>]]]\n\
\tget        <config>.<section>[.<option>]\n\
\tset        <config>.<section>[.<option>]=<value>\n\
\tdelete     <config>[.<section>[[.<option>][=<id>]]]\n\
\trename     <config>.<section>[.<option>]=<name>\n\
\trevert     <config>[.<section>[.<option>]]\n\
\treorder    <config>.<section>=<position>\n\
\n\
Options:\n\
\t-d <str>   set the delimiter for list values in uci show\n\
\t-n         name unnamed sections on export\n\
\t-N         don't name unnamed sections (default)\n\
\t-q         quiet mode (don't print error messages)\n\
\t-X         do not use extended syntax on 'show'\n\
\n";

/// libuci's error codes as `uci_perror` prints them.
#[derive(Clone, Debug, PartialEq, Eq)]
enum CliError {
    Invalid,
    NotFound,
    Io,
    /// A malformed `package.section.option=value` argument.
    Parse,
    /// A config file that does not parse: reason, line, byte.
    ParseFile(String, u32, u32),
    /// [`MAX_CHANGES`] uncommitted changes to the package already.
    TooManyChanges,
}

/// Most uncommitted changes (`set`, `add_list`, `add`, …) kept for one package; a
/// further one is refused until `commit` or `revert` (each change keeps its
/// section, option and value).
pub const MAX_CHANGES: usize = 1024;

impl From<EditError> for CliError {
    fn from(e: EditError) -> Self {
        match e {
            EditError::Invalid => CliError::Invalid,
            EditError::NotFound => CliError::NotFound,
        }
    }
}

impl From<LoadError> for CliError {
    fn from(e: LoadError) -> Self {
        match e {
            LoadError::BadName => CliError::Parse,
            LoadError::NotFound => CliError::NotFound,
            LoadError::Io => CliError::Io,
            LoadError::Parse(p) => {
                CliError::ParseFile(p.message, p.line, p.column.saturating_sub(1))
            }
        }
    }
}

/// `struct uci_ptr` after `uci_parse_ptr`.
struct Ptr<'a> {
    package: &'a str,
    section: Option<&'a str>,
    option: Option<&'a str>,
    value: Option<&'a str>,
}

fn parse_ptr(s: &str) -> Result<Ptr<'_>, CliError> {
    let (path, value) = match s.split_once('=') {
        Some((p, v)) => (p, Some(v)),
        None => (s, None),
    };
    let mut parts = path.split('.');
    let package = parts.next().unwrap_or("");
    let section = parts.next();
    let option = parts.next();
    if parts.next().is_some()
        || !valid_package(package)
        || option.is_some_and(|o| !valid_name(o))
        || value.is_some_and(|v| !valid_text(v))
    {
        return Err(CliError::Parse);
    }
    Ok(Ptr {
        package,
        section,
        option,
        value,
    })
}

/// A resolved pointer: the loaded package and what of the path exists.
struct Found {
    pkg: Package,
    /// Index of the section, if it exists.
    sec: Option<usize>,
    /// The section's real name (the `@` reference resolved), or the name as given.
    section_name: Option<String>,
    /// Whether everything named exists (`UCI_LOOKUP_COMPLETE`).
    complete: bool,
}

/// The `uci` command's state: staged changes per package and the CLI flags.
#[derive(Clone, Debug, Default)]
pub struct Uci {
    deltas: BTreeMap<String, Vec<Delta>>,
}

struct Flags {
    quiet: bool,
    show_ext: bool,
    export_names: bool,
    delimiter: String,
}

/// What every command works with: the store, the flags, the output.
struct Cx<'a> {
    store: &'a mut dyn ConfigStore,
    flags: &'a Flags,
    out: &'a mut Output,
}

impl Uci {
    /// No staged changes.
    pub fn new() -> Self {
        Uci::default()
    }

    /// The staged changes of `package`, oldest first.
    pub fn staged(&self, package: &str) -> &[Delta] {
        self.deltas.get(package).map_or(&[], Vec::as_slice)
    }

    /// Loads `package` from `store` with the staged changes applied (what every uci
    /// command sees). Changes that no longer apply are skipped, as libuci does.
    pub fn load(&self, store: &dyn ConfigStore, package: &str) -> Result<Package, LoadError> {
        let mut p = load_committed(store, package)?;
        for d in self.staged(package) {
            let _ = apply_delta(&mut p, d);
        }
        Ok(p)
    }

    /// Runs `uci ARGS...` (`args` without the program name).
    pub fn run(&mut self, store: &mut dyn ConfigStore, args: &[&str]) -> Output {
        let mut out = Output::default();
        let mut flags = Flags {
            quiet: false,
            show_ext: true,
            export_names: false,
            delimiter: " ".into(),
        };
        let mut i = 0;
        while let Some(a) = args.get(i).filter(|a| a.starts_with('-') && a.len() > 1) {
            match *a {
                "-q" => flags.quiet = true,
                "-X" => flags.show_ext = false,
                "-n" => flags.export_names = true,
                "-N" => flags.export_names = false,
                "-d" => {
                    i += 1;
                    match args.get(i) {
                        Some(d) => flags.delimiter = d.to_string(),
                        None => return usage(out, 0),
                    }
                }
                _ => return usage(out, 0),
            }
            i += 1;
        }
        let rest = args.get(i..).unwrap_or(&[]);
        let Some((cmd, cmd_args)) = rest.split_first() else {
            return usage(out, 0);
        };
        if cmd.eq_ignore_ascii_case("help") {
            return usage(out, 0);
        }
        let cx = &mut Cx {
            store,
            flags: &flags,
            out: &mut out,
        };
        let result = match cmd.to_ascii_lowercase().as_str() {
            "show" => self.package_cmd(cx, cmd_args, Self::show),
            "changes" => self.package_cmd(cx, cmd_args, Self::changes),
            "export" => self.package_cmd(cx, cmd_args, Self::export),
            "commit" => self.package_cmd(cx, cmd_args, Self::commit),
            "get" | "set" | "ren" | "rename" | "revert" | "reorder" | "del" | "delete"
            | "add_list" | "del_list" => match cmd_args {
                [arg] => self.section_cmd(cx, cmd, arg),
                _ => Err(None),
            },
            "add" => match cmd_args {
                [pkg, ty] => self.add(cx, pkg, ty),
                _ => Err(None),
            },
            _ => Err(None),
        };
        match result {
            Ok(()) => out,
            // Wrong arguments or an unknown command: uci returns 255 and prints usage.
            Err(None) => usage(out, 255),
            Err(Some((code, err))) => {
                if let (Some(e), false) = (err, flags.quiet) {
                    perror(&mut out, &e);
                }
                out.code = code;
                out
            }
        }
    }

    /// `uci_do_package_cmd`: one package, or each package in the store.
    fn package_cmd(&mut self, cx: &mut Cx<'_>, args: &[&str], f: PackageFn) -> CmdResult {
        match args {
            [one] => {
                let ptr = parse_ptr(one).map_err(fail)?;
                f(self, cx, &ptr).map_err(fail)
            }
            [] => {
                let names = cx.store.list().map_err(|_| fail(CliError::Io))?;
                for name in names.iter().filter(|n| valid_package(n)) {
                    let ptr = Ptr {
                        package: name,
                        section: None,
                        option: None,
                        value: None,
                    };
                    if let Err(e) = f(self, cx, &ptr) {
                        if !cx.flags.quiet {
                            perror(cx.out, &e);
                        }
                    }
                }
                Ok(())
            }
            _ => Err(None),
        }
    }

    /// `uci_lookup_ptr`: load the package and find the section and option.
    fn lookup(&self, store: &dyn ConfigStore, ptr: &Ptr<'_>) -> Result<Found, CliError> {
        let pkg = self.load(store, ptr.package)?;
        let Some(sref) = ptr.section else {
            return Ok(Found {
                pkg,
                sec: None,
                section_name: None,
                complete: ptr.option.is_none(),
            });
        };
        let sec = pkg.find_section(sref)?;
        let section_name = Some(match sec.and_then(|i| pkg.sections.get(i)) {
            Some(s) => s.name.clone(),
            None => sref.to_string(),
        });
        let complete = match (sec.and_then(|i| pkg.sections.get(i)), ptr.option) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(s), Some(o)) => s.get(o).is_some(),
        };
        Ok(Found {
            pkg,
            sec,
            section_name,
            complete,
        })
    }

    fn show(&mut self, cx: &mut Cx<'_>, ptr: &Ptr<'_>) -> Result<(), CliError> {
        let (store, flags, out) = (&mut *cx.store, cx.flags, &mut *cx.out);
        let f = self.lookup(store, ptr)?;
        if !f.complete {
            return Err(CliError::NotFound);
        }
        let pkg = &f.pkg;
        match (f.sec, ptr.option) {
            (Some(i), Some(o)) => {
                if let (Some(s), Some(v)) = (
                    pkg.sections.get(i),
                    pkg.sections.get(i).and_then(|s| s.get(o)),
                ) {
                    show_option(out, &pkg.name, &s.name, o, v, flags, true);
                }
            }
            (Some(i), None) => {
                if let Some(s) = pkg.sections.get(i) {
                    show_section(out, pkg, i, &s.name, flags);
                }
            }
            _ => {
                for (i, s) in pkg.sections.iter().enumerate() {
                    let sref = if flags.show_ext {
                        pkg.extended_ref(i).unwrap_or_default()
                    } else {
                        s.name.clone()
                    };
                    show_section(out, pkg, i, &sref, flags);
                }
            }
        }
        Ok(())
    }

    /// `uci_show_changes`.
    fn changes(&mut self, cx: &mut Cx<'_>, ptr: &Ptr<'_>) -> Result<(), CliError> {
        let (store, out) = (&mut *cx.store, &mut *cx.out);
        // uci loads the package first: a missing file is "Entry not found".
        self.lookup(store, ptr)?;
        for d in self.staged(ptr.package) {
            let (prefix, op) = match d.cmd {
                DeltaCmd::Remove => ("-", "="),
                DeltaCmd::ListAdd => ("", "+="),
                DeltaCmd::ListDel => ("", "-="),
                _ => ("", "="),
            };
            let _ = write!(out.stdout, "{prefix}{}.{}", ptr.package, d.section);
            if let Some(o) = &d.option {
                out.stdout.push('.');
                out.stdout.push_str(o);
            }
            if d.cmd != DeltaCmd::Remove {
                out.stdout.push_str(op);
                quote_into(&mut out.stdout, d.value.as_deref().unwrap_or(""));
            }
            out.stdout.push('\n');
        }
        Ok(())
    }

    fn export(&mut self, cx: &mut Cx<'_>, ptr: &Ptr<'_>) -> Result<(), CliError> {
        let (store, flags, out) = (&mut *cx.store, cx.flags, &mut *cx.out);
        let mut pkg = self.load(store, ptr.package)?;
        if flags.export_names {
            for s in &mut pkg.sections {
                s.anonymous = false;
            }
        }
        out.stdout.push_str(&export(&pkg));
        Ok(())
    }

    /// `uci_commit`: write the package with its staged changes, then forget them.
    fn commit(&mut self, cx: &mut Cx<'_>, ptr: &Ptr<'_>) -> Result<(), CliError> {
        let store = &mut *cx.store;
        let pkg = self.load(store, ptr.package)?;
        if self.staged(ptr.package).is_empty() {
            return Ok(());
        }
        // What is written must read back: the parser's bounds (sections, options,
        // list items) are checked on the text as it will be, so a commit never
        // leaves a file that no longer parses (and the package as it was).
        let text = write(&pkg);
        if let Err(p) = parse("", ptr.package, &text) {
            return Err(CliError::ParseFile(
                p.message,
                p.line,
                p.column.saturating_sub(1),
            ));
        }
        store
            .write_atomic(ptr.package, &text)
            .map_err(|_| CliError::Io)?;
        self.deltas.remove(ptr.package);
        Ok(())
    }

    fn add(&mut self, cx: &mut Cx<'_>, package: &str, ty: &str) -> CmdResult {
        let (store, out) = (&mut *cx.store, &mut *cx.out);
        if !valid_package(package) {
            return Err(fail(CliError::Parse));
        }
        let mut pkg = self.load(store, package).map_err(|e| fail(e.into()))?;
        if self.staged(package).len() >= MAX_CHANGES {
            return Err(fail(CliError::TooManyChanges));
        }
        let idx = pkg.add_section(ty).map_err(|e| fail(e.into()))?;
        let name = pkg
            .sections
            .get(idx)
            .map(|s| s.name.clone())
            .unwrap_or_default();
        self.record(package, DeltaCmd::Add, &name, None, Some(ty));
        out.stdout.push_str(&name);
        out.stdout.push('\n');
        Ok(())
    }

    fn record(
        &mut self,
        package: &str,
        cmd: DeltaCmd,
        section: &str,
        option: Option<&str>,
        value: Option<&str>,
    ) {
        self.deltas
            .entry(package.to_string())
            .or_default()
            .push(Delta {
                cmd,
                section: section.to_string(),
                option: option.map(str::to_string),
                value: value.map(str::to_string),
            });
    }

    /// `uci_do_section_cmd`.
    fn section_cmd(&mut self, cx: &mut Cx<'_>, cmd: &str, arg: &str) -> CmdResult {
        let (store, flags, out) = (&mut *cx.store, cx.flags, &mut *cx.out);
        let ptr = parse_ptr(arg).map_err(fail)?;
        let f = self.lookup(store, &ptr).map_err(fail)?;
        let cmd = cmd.to_ascii_lowercase();
        let takes_value = matches!(
            cmd.as_str(),
            "set" | "del" | "delete" | "add_list" | "del_list" | "ren" | "rename" | "reorder"
        );
        if ptr.value.is_some() && !takes_value {
            return Err(Some((1, None)));
        }
        let mut pkg = f.pkg;
        let section = f.section_name.as_deref().unwrap_or("");
        let sec_obj = f.sec.and_then(|i| pkg.sections.get(i));
        let delta = |c: DeltaCmd, value: Option<&str>| Delta {
            cmd: c,
            section: section.to_string(),
            option: ptr.option.map(str::to_string),
            value: value.map(str::to_string),
        };
        let d = match cmd.as_str() {
            "get" => {
                if !f.complete {
                    return Err(fail(CliError::NotFound));
                }
                match (sec_obj, ptr.option) {
                    (Some(s), Some(o)) => {
                        if let Some(v) = s.get(o) {
                            show_value(out, v, flags, false);
                        }
                    }
                    (Some(s), None) => {
                        out.stdout.push_str(&s.section_type);
                        out.stdout.push('\n');
                    }
                    _ => {}
                }
                return Ok(());
            }
            "revert" => {
                if let Some(list) = self.deltas.get_mut(ptr.package) {
                    list.retain(|d| {
                        let matches = ptr.section.is_none_or(|_| d.section == section)
                            && ptr.option.is_none_or(|o| d.option.as_deref() == Some(o));
                        !matches
                    });
                }
                return Ok(());
            }
            "set" => {
                let value = ptr.value.ok_or_else(|| fail(CliError::Invalid))?;
                if ptr.section.is_none() {
                    return Err(fail(CliError::Invalid));
                }
                if ptr.option.is_some() && sec_obj.is_none() {
                    return Err(fail(CliError::Invalid));
                }
                if value.is_empty() {
                    if !f.complete {
                        return Ok(());
                    }
                    delta(DeltaCmd::Remove, None)
                } else {
                    if ptr.option.is_none() && !valid_type(value) {
                        return Err(fail(CliError::Invalid));
                    }
                    // An `@type[N]` that matches nothing cannot name a new section.
                    if sec_obj.is_none() && !valid_name(section) {
                        return Err(fail(CliError::Invalid));
                    }
                    delta(DeltaCmd::Change, Some(value))
                }
            }
            "add_list" | "del_list" => {
                let value = ptr.value.ok_or_else(|| fail(CliError::Invalid))?;
                if sec_obj.is_none() || ptr.option.is_none() {
                    return Err(fail(CliError::Invalid));
                }
                if cmd == "add_list" {
                    delta(DeltaCmd::ListAdd, Some(value))
                } else {
                    let is_list = ptr.option.and_then(|o| sec_obj.and_then(|s| s.get(o)));
                    if !matches!(is_list, Some(Value::List(_))) {
                        return Ok(());
                    }
                    delta(DeltaCmd::ListDel, Some(value))
                }
            }
            "del" | "delete" => {
                if let Some(v) = ptr.value {
                    if parse_c_int(v).is_none() {
                        return Err(Some((1, None)));
                    }
                }
                if !f.complete {
                    return Err(fail(CliError::NotFound));
                }
                if sec_obj.is_none() {
                    return Err(fail(CliError::Invalid));
                }
                let is_list = ptr.option.and_then(|o| sec_obj.and_then(|s| s.get(o)));
                let index = ptr
                    .value
                    .filter(|_| matches!(is_list, Some(Value::List(_))));
                delta(DeltaCmd::Remove, index)
            }
            "ren" | "rename" => {
                if !f.complete {
                    return Err(fail(CliError::NotFound));
                }
                match ptr.value {
                    Some(v) if sec_obj.is_some() && valid_name(v) => {
                        delta(DeltaCmd::Rename, Some(v))
                    }
                    _ => return Err(fail(CliError::Invalid)),
                }
            }
            "reorder" => match (sec_obj, ptr.value, ptr.option) {
                (Some(_), Some(v), None) => delta(DeltaCmd::Reorder, Some(v)),
                _ => return Err(fail(CliError::NotFound)),
            },
            _ => return Err(None),
        };
        if self.staged(ptr.package).len() >= MAX_CHANGES {
            return Err(fail(CliError::TooManyChanges));
        }
        match apply_delta(&mut pkg, &d) {
            Ok(true) => {
                self.deltas
                    .entry(ptr.package.to_string())
                    .or_default()
                    .push(d);
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) => Err(fail(e.into())),
        }
    }
}

/// Loads `package` as committed (no staged changes).
pub fn load_committed(store: &dyn ConfigStore, package: &str) -> Result<Package, LoadError> {
    if !valid_package(package) {
        return Err(LoadError::BadName);
    }
    let text = store.read(package).map_err(|_| LoadError::Io)?;
    let text = text.ok_or(LoadError::NotFound)?;
    parse(&format!("/etc/config/{package}"), package, &text).map_err(LoadError::Parse)
}

/// A command run on one package (`show`, `changes`, `export`, `commit`).
type PackageFn = fn(&mut Uci, &mut Cx<'_>, &Ptr<'_>) -> Result<(), CliError>;

/// `Err(None)`: print usage, exit 255. `Err(Some((code, error)))`: print the error
/// unless quiet (or silent if `None`), exit `code`.
type CmdResult = Result<(), Option<(i32, Option<CliError>)>>;

fn fail(e: CliError) -> Option<(i32, Option<CliError>)> {
    Some((1, Some(e)))
}

fn usage(mut out: Output, code: i32) -> Output {
    out.stderr.push_str(USAGE);
    out.code = code;
    out
}

fn perror(out: &mut Output, e: &CliError) {
    let _ = match e {
        CliError::Invalid => writeln!(out.stderr, "uci: Invalid argument"),
        CliError::NotFound => writeln!(out.stderr, "uci: Entry not found"),
        CliError::Io => writeln!(out.stderr, "uci: I/O error"),
        CliError::Parse => writeln!(out.stderr, "uci: Parse error"),
        CliError::TooManyChanges => writeln!(
            out.stderr,
            "uci: Too many uncommitted changes (at most {MAX_CHANGES}): commit or revert first"
        ),
        CliError::ParseFile(reason, line, byte) => writeln!(
            out.stderr,
            "uci: Parse error ({reason}) at line {line}, byte {byte}"
        ),
    };
}

/// `uci_show_value`: a single value, or list items joined by the delimiter; with
/// `quote` every value is quoted, without it only list items holding white space.
fn show_value(out: &mut Output, v: &Value, flags: &Flags, quote: bool) {
    match v {
        Value::Single(s) if quote => quote_into(&mut out.stdout, s),
        Value::Single(s) => out.stdout.push_str(s),
        Value::List(items) => {
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.stdout.push_str(&flags.delimiter);
                }
                if !quote && !item.contains([' ', '\t', '\r', '\n']) {
                    out.stdout.push_str(item);
                } else {
                    quote_into(&mut out.stdout, item);
                }
            }
        }
    }
    out.stdout.push('\n');
}

fn show_option(
    out: &mut Output,
    pkg: &str,
    sref: &str,
    opt: &str,
    v: &Value,
    flags: &Flags,
    quote: bool,
) {
    let _ = write!(out.stdout, "{pkg}.{sref}.{opt}=");
    show_value(out, v, flags, quote);
}

fn show_section(out: &mut Output, pkg: &Package, idx: usize, sref: &str, flags: &Flags) {
    let Some(s) = pkg.sections.get(idx) else {
        return;
    };
    let _ = writeln!(out.stdout, "{}.{}={}", pkg.name, sref, s.section_type);
    for o in &s.options {
        show_option(out, &pkg.name, sref, &o.name, &o.value, flags, true);
    }
}

#[cfg(test)]
mod tests;
