//! The kernel's layering check, run by `cargo xtask lint`: imports inside
//! `kernel/src` point one way.
//!
//! Every `crate::a::b` path in a kernel source file (in `use` trees, inline paths and
//! `$crate::` macro bodies; `super::` paths too) is an edge from the file's module to
//! the module it names. A module is a file at most two levels deep: `xen/xenstore.rs`
//! is `xen::xenstore`, a folder's `mod.rs` is the folder, `kmain.rs` is `kmain`. The
//! check fails when
//! - an edge goes from one layer (a top-level folder or file, see [`LAYERS`]) to a
//!   layer that is not below it, or
//! - the edges form a cycle (this also catches cycles among the files of one layer),
//! - or a top-level module is missing from [`LAYERS`].
//!
//! Upward needs are met by registration instead (the lower layer declares a hook or
//! a trait, `kmain` plugs the higher layer into it), as Asterinas's
//! `layered-kernel-crates` guideline and Tock's board files do. Test modules
//! (`#[cfg(test)] mod …`) are left out; comments and literals are blanked first.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// The kernel's layers, lowest first: a module may import only from layers earlier in
/// this list (and from its own layer, without a cycle). Keep in step with the `pub mod`
/// order in kernel/src/lib.rs and the README's layout table.
pub const LAYERS: &[&str] = &[
    "sync",     // the interrupt-safe lock
    "mm",       // frames, heap, physical memory reads
    "arch",     // x86_64: cpu, gdt, idt/trap stubs, pic, lapic, pio, halt
    "time",     // Instant, TSC arithmetic, the clock source
    "bootinfo", // boot information and boot phase times, recorded by kmain
    "io",       // console (COM1, PV console ring) and the dmesg log (println!)
    "xen",      // platform bring-up, events, idle, grant table, XenStore, xenbus
    "sys",      // power, shutdown policy, fault and panic reports, ACPI
    "dev",      // PV frontends (disks, vifs) and the network stack over them
    "fs",       // the file tree (VFS, root mount)
    "router",   // the router's configuration from /etc/config, the uci store
    "shell",    // the commands and the shell loop
    "kmain",    // wiring and init order
];

/// One `crate::` reference from a module to another.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    /// Importing module (`xen::xenstore`).
    pub from: String,
    /// Imported module.
    pub to: String,
    /// File and line of the reference.
    pub at: String,
}

/// What is wrong with the module graph.
#[derive(Debug, PartialEq, Eq)]
pub enum Violation {
    /// An import from a layer into one that is not below it.
    Upward(Edge),
    /// Modules that import each other, in a cycle (sorted).
    Cycle(Vec<String>),
    /// A top-level module that is not in [`LAYERS`].
    Undeclared(String),
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Upward(e) => write!(
                f,
                "{}: `{}` imports `{}`, which is not in a lower layer",
                e.at, e.from, e.to
            ),
            Violation::Cycle(c) => write!(f, "import cycle among: {}", c.join(" ")),
            Violation::Undeclared(m) => write!(
                f,
                "kernel module `{m}` is in no layer (add it to LAYERS in xtask/src/layers.rs)"
            ),
        }
    }
}

/// The module graph of a kernel source tree.
#[derive(Debug, Default)]
pub struct Graph {
    /// Every module found.
    pub modules: BTreeSet<String>,
    /// Every distinct edge between two different modules (first place seen).
    pub edges: Vec<Edge>,
}

/// Reads every `.rs` file under `src` and builds the module graph.
pub fn scan(src: &Path) -> std::io::Result<Graph> {
    let mut files = Vec::new();
    collect(src, &mut files)?;
    files.sort();
    // Module path of each file, and exported macros (`crate::println` is io::klog's).
    let mut sources = Vec::new();
    let mut macros = BTreeMap::new();
    let mut g = Graph::default();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap_or(f);
        let mut segs: Vec<String> = rel
            .iter()
            .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if matches!(
            segs.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            segs.pop();
        }
        let text = blank(&std::fs::read_to_string(f)?);
        let text = strip_test_modules(&text);
        let node = segs.iter().take(2).cloned().collect::<Vec<_>>().join("::");
        if !node.is_empty() {
            g.modules.insert(node.clone());
        }
        for name in exported_macros(&text) {
            macros.insert(name, node.clone());
        }
        sources.push((rel.display().to_string(), segs, node, text));
    }
    let mut seen = BTreeSet::new();
    for (file, segs, node, text) in &sources {
        if node.is_empty() {
            continue; // lib.rs / main.rs: the crate root declares, it does not import
        }
        for (line, path) in paths(text, segs) {
            let Some(first) = path.first() else { continue };
            let to = if let Some(m) = macros.get(first) {
                m.clone()
            } else {
                let two = path.iter().take(2).cloned().collect::<Vec<_>>().join("::");
                if g.modules.contains(&two) {
                    two
                } else if g.modules.contains(first) {
                    first.clone()
                } else {
                    continue; // an item of the crate root (`crate::VERSION`)
                }
            };
            if &to != node && seen.insert((node.clone(), to.clone())) {
                g.edges.push(Edge {
                    from: node.clone(),
                    to,
                    at: format!("kernel/src/{file}:{line}"),
                });
            }
        }
    }
    Ok(g)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

fn layer_of(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

fn rank(layer: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == layer)
}

/// Checks `g` against [`LAYERS`]: every violation found, none if the graph is fine.
pub fn check(g: &Graph) -> Vec<Violation> {
    let mut v = Vec::new();
    let layers: BTreeSet<&str> = g.modules.iter().map(|m| layer_of(m)).collect();
    for l in layers {
        if rank(l).is_none() {
            v.push(Violation::Undeclared(l.to_string()));
        }
    }
    for e in &g.edges {
        let (a, b) = (layer_of(&e.from), layer_of(&e.to));
        if let (Some(ra), Some(rb)) = (rank(a), rank(b)) {
            if a != b && rb > ra {
                v.push(Violation::Upward(e.clone()));
            }
        }
    }
    for c in cycles(g) {
        v.push(Violation::Cycle(c));
    }
    v
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    let names: Vec<&String> = g.modules.iter().collect();
    let index_of: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut adj = vec![Vec::new(); names.len()];
    for e in &g.edges {
        if let (Some(&a), Some(&b)) = (index_of.get(e.from.as_str()), index_of.get(e.to.as_str())) {
            adj[a].push(b);
        }
    }
    struct T<'a> {
        adj: &'a [Vec<usize>],
        idx: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T<'_>, v: usize) {
        t.idx[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on[v] = true;
        for i in 0..t.adj[v].len() {
            let w = t.adj[v][i];
            match t.idx[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on[w] => t.low[v] = t.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(t.low[v]) == t.idx[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            t.out.push(comp);
        }
    }
    let n = names.len();
    let mut t = T {
        adj: &adj,
        idx: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.idx[v].is_none() {
            visit(&mut t, v);
        }
    }
    let mut out: Vec<Vec<String>> = t
        .out
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
            c.sort();
            c
        })
        .collect();
    out.sort();
    out
}

/// `src` with comments, string and character literals replaced by spaces (newlines
/// kept, so line numbers stay right).
fn blank(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let keep_nl = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep_nl(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&b, i) {
            // Raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            while j < b.len() {
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &b[i..j.min(b.len())] {
                out.push(keep_nl(ch));
            }
            i = j;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(keep_nl(b[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{7f}'), not a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..b.len()).find(|&k| b[k] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    for _ in i..=e {
                        out.push(' ');
                    }
                    i = e + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// `src` without `#[cfg(test)] mod name { … }` blocks (blanked, lines kept).
fn strip_test_modules(src: &str) -> String {
    let mut out: Vec<char> = src.chars().collect();
    let pat: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + pat.len() <= out.len() {
        if out[i..i + pat.len()] != pat[..] {
            i += 1;
            continue;
        }
        let rest: String = out[i + pat.len()..].iter().collect();
        let trimmed = rest.trim_start();
        let is_mod = trimmed.starts_with("mod ") || trimmed.starts_with("pub mod ");
        let Some(open) = out[i..].iter().position(|&c| c == '{' || c == ';') else {
            break;
        };
        if !is_mod || out[i + open] == ';' {
            i += pat.len();
            continue;
        }
        let mut depth = 0;
        let mut j = i + open;
        while j < out.len() {
            match out[j] {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        let end = (j + 1).min(out.len());
        for c in out.iter_mut().take(end).skip(i) {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = j + 1;
    }
    out.into_iter().collect()
}

/// Names of `#[macro_export] macro_rules! name` in `src`.
fn exported_macros(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(p) = rest.find("#[macro_export]") {
        rest = &rest[p + "#[macro_export]".len()..];
        if let Some(r) = rest.trim_start().strip_prefix("macro_rules!") {
            let name: String = r
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

/// Every path after `crate::`, `$crate::` or `super::` in `src`, with its line, as
/// segments from the crate root; use trees (`crate::{a::b, c::{d, e}}`) are expanded.
/// `module` is the file's module path (for `super::`).
fn paths(src: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        if b[i] == '\n' {
            line += 1;
            i += 1;
            continue;
        }
        let word_start = i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '_');
        let prefix = if !word_start {
            None
        } else if starts(&b, i, "crate::") {
            Some((Vec::new(), "crate::".len()))
        } else if starts(&b, i, "super::") {
            let parent = module[..module.len().saturating_sub(1)].to_vec();
            Some((parent, "super::".len()))
        } else {
            None
        };
        match prefix {
            Some((base, n)) => {
                let mut j = i + n;
                let mut found = Vec::new();
                tree(&b, &mut j, base, &mut found);
                for p in found {
                    out.push((line, p));
                }
                // Count the newlines the tree spanned.
                line += b[i..j].iter().filter(|&&c| c == '\n').count();
                i = j.max(i + 1);
            }
            None => i += 1,
        }
    }
    out
}

fn starts(b: &[char], i: usize, s: &str) -> bool {
    s.chars().enumerate().all(|(k, c)| b.get(i + k) == Some(&c))
}

fn skip_ws(b: &[char], j: &mut usize) {
    while *j < b.len() && b[*j].is_whitespace() {
        *j += 1;
    }
}

/// Parses a use tree at `j` below `base` (`a::b::c`, `a::{b, c::d}`, `a as x`, `*`).
fn tree(b: &[char], j: &mut usize, base: Vec<String>, out: &mut Vec<Vec<String>>) {
    skip_ws(b, j);
    if b.get(*j) == Some(&'{') {
        *j += 1;
        loop {
            skip_ws(b, j);
            match b.get(*j) {
                None => return,
                Some('}') => {
                    *j += 1;
                    return;
                }
                Some(',') => *j += 1,
                Some(_) => {
                    let before = *j;
                    tree(b, j, base.clone(), out);
                    // Skip `as name` and anything else up to the next item.
                    while *j < b.len() && b[*j] != ',' && b[*j] != '}' {
                        *j += 1;
                    }
                    if *j == before {
                        *j += 1;
                    }
                }
            }
        }
    }
    let mut path = base;
    loop {
        let s = *j;
        while *j < b.len() && (b[*j].is_alphanumeric() || b[*j] == '_') {
            *j += 1;
        }
        if *j == s {
            break;
        }
        let seg: String = b[s..*j].iter().collect();
        if seg == "self" {
            break;
        }
        path.push(seg);
        if starts(b, *j, "::") {
            *j += 2;
            if b.get(*j) == Some(&'{') {
                tree(b, j, path, out);
                return;
            }
        } else {
            break;
        }
    }
    if !path.is_empty() {
        out.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel source tree in a fresh temporary directory.
    struct Tree(PathBuf);

    impl Tree {
        fn new(name: &str, files: &[(&str, &str)]) -> Tree {
            let dir =
                std::env::temp_dir().join(format!("xenlet-layers-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            for (path, text) in files {
                let p = dir.join(path);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            Tree(dir)
        }
        fn check(&self) -> Vec<Violation> {
            check(&scan(&self.0).unwrap())
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_downward_tree_passes() {
        let t = Tree::new(
            "ok",
            &[
                ("lib.rs", "pub mod arch; pub mod xen; pub mod kmain;"),
                ("arch/mod.rs", "pub mod cpu;"),
                ("arch/cpu.rs", "pub fn cpuid() {}"),
                ("xen/mod.rs", "pub mod platform; pub mod idle;"),
                ("xen/platform.rs", "use crate::arch::cpu::cpuid;"),
                ("xen/idle.rs", "use crate::{arch::cpu, xen::platform};"),
                (
                    "kmain.rs",
                    "fn f() { crate::xen::idle::x(); crate::println!(); crate::VERSION; }",
                ),
            ],
        );
        assert_eq!(t.check(), vec![]);
        let g = scan(&t.0).unwrap();
        let mut e: Vec<(String, String)> = g
            .edges
            .iter()
            .map(|e| (e.from.clone(), e.to.clone()))
            .collect();
        e.sort();
        assert_eq!(
            e,
            [
                ("kmain", "xen::idle"),
                ("xen::idle", "arch::cpu"),
                ("xen::idle", "xen::platform"),
                ("xen::platform", "arch::cpu"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
    }

    #[test]
    fn a_cycle_between_layers_fails() {
        let t = Tree::new(
            "cycle",
            &[
                ("arch/trap.rs", "fn d() { crate::sys::fault::report(); }"),
                ("sys/fault.rs", "use crate::arch::trap::Frame;"),
            ],
        );
        let v = t.check();
        assert!(
            v.contains(&Violation::Cycle(vec![
                "arch::trap".into(),
                "sys::fault".into()
            ])),
            "{v:?}"
        );
        assert!(
            v.iter().any(|x| matches!(x, Violation::Upward(e)
                if e.from == "arch::trap" && e.to == "sys::fault"
                    && e.at == "kernel/src/arch/trap.rs:1")),
            "{v:?}"
        );
    }

    #[test]
    fn a_cycle_inside_one_layer_fails() {
        let t = Tree::new(
            "inner",
            &[
                ("shell/commands.rs", "use crate::shell::fscmds;"),
                ("shell/fscmds.rs", "use super::{\n    commands::Host,\n};"),
            ],
        );
        assert_eq!(
            t.check(),
            vec![Violation::Cycle(vec![
                "shell::commands".into(),
                "shell::fscmds".into()
            ])]
        );
    }

    #[test]
    fn an_upward_edge_fails_and_names_the_line() {
        let t = Tree::new(
            "upward",
            &[
                (
                    "io/console.rs",
                    "\n\nfn n() { crate::xen::platform::notify(); }",
                ),
                ("xen/platform.rs", "use crate::io::console;"),
            ],
        );
        let v = t.check();
        assert_eq!(v.len(), 2, "{v:?}"); // upward edge, and the cycle it closes
        assert_eq!(
            v[0].to_string(),
            "kernel/src/io/console.rs:3: `io::console` imports `xen::platform`, which is not in a lower layer"
        );
    }

    #[test]
    fn macros_count_for_the_module_that_exports_them() {
        let t = Tree::new(
            "macro",
            &[
                (
                    "io/klog.rs",
                    "#[macro_export]\nmacro_rules! println { () => { $crate::io::klog::w() }; }",
                ),
                ("arch/trap.rs", "fn f() { crate::println!(); }"),
            ],
        );
        let v = t.check();
        assert!(
            matches!(&v[..], [Violation::Upward(e)] if e.to == "io::klog"),
            "{v:?}"
        );
    }

    #[test]
    fn comments_strings_and_tests_are_not_imports() {
        let t = Tree::new(
            "quiet",
            &[
                (
                    "arch/cpu.rs",
                    "// crate::kmain::x\n/* crate::kmain */ const S: &str = \"crate::kmain\";\n\
                     const R: &str = r#\"crate::kmain\"#; const C: char = '{';\n\
                     #[cfg(test)]\nmod tests { use crate::kmain::x; fn f() { let _ = '}'; } }\n\
                     fn after() {}",
                ),
                ("kmain.rs", "use crate::arch::cpu;"),
            ],
        );
        assert_eq!(t.check(), vec![]);
    }

    #[test]
    fn an_undeclared_module_fails() {
        let t = Tree::new("undeclared", &[("bridge/glue.rs", "fn f() {}")]);
        assert_eq!(t.check(), vec![Violation::Undeclared("bridge".into())]);
    }

    #[test]
    fn the_real_kernel_is_layered() {
        let src = crate::util::workspace_root().join("kernel/src");
        let g = scan(&src).unwrap();
        assert!(g.modules.len() > 20, "{:?}", g.modules);
        let v = check(&g);
        assert!(
            v.is_empty(),
            "{}",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
