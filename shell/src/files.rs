//! File tools over the VFS, in the habits of GNU coreutils and busybox: `ls`, `cat`,
//! `cp`, `mv`, `rm`, `mkdir`, `rmdir`, `touch`, `stat`, `df`, `hexdump -C`,
//! `sha256sum`, `cd`, `pwd`, `mount` (the table). Errors are GNU's one-line
//! messages (`cat: /x: No such file or directory`); a failing operand does not stop
//! the others, and the command then fails as a whole (exit status 1 in GNU terms).

use crate::{CmdError, CmdResult};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use sha2::Digest;
use xenlet_fs::vfs::{Handle, Vfs};
use xenlet_fs::{FileType, FsError, Stat};
use xenlet_router::firewall::timematch::civil_from_days;

/// Bytes moved per read or write call when copying a file.
const CHUNK: usize = 256 * 1024;

/// A read/write buffer for a file of `len` bytes: at most [`CHUNK`], no bigger than
/// the file (a small file gets a small buffer), and allocated fallibly, halving down
/// to 4 KiB when the heap has no run that long (a small guest's heap is a few MiB and
/// fragmented by the filesystems' caches): ENOMEM, not a panic, when even that fails.
fn io_buffer(len: u64) -> Result<Vec<u8>, FsError> {
    let mut want = (len.clamp(4096, CHUNK as u64)) as usize;
    loop {
        let mut v = Vec::new();
        if v.try_reserve_exact(want).is_ok() {
            v.resize(want, 0);
            return Ok(v);
        }
        if want <= 4096 {
            return Err(FsError::NoMemory);
        }
        want /= 2;
    }
}

/// Splits `-abc` style flags from operands (`--` ends flags). Unknown flags are an
/// error naming the first one.
fn flags<'a>(args: &[&'a str], known: &str) -> Result<(Vec<char>, Vec<&'a str>), CmdError> {
    let mut f = Vec::new();
    let mut ops = Vec::new();
    let mut only_ops = false;
    for a in args {
        if !only_ops && *a == "--" {
            only_ops = true;
        } else if !only_ops && a.len() > 1 && a.starts_with('-') {
            for c in a[1..].chars() {
                if !known.contains(c) {
                    return Err(CmdError::usage(format!("invalid option -- '{c}'")));
                }
                f.push(c);
            }
        } else {
            ops.push(*a);
        }
    }
    Ok((f, ops))
}

/// [`flags`] for a command that needs an operand: none is "missing operand".
fn flags_with_operands<'a>(
    args: &[&'a str],
    known: &str,
) -> Result<(Vec<char>, Vec<&'a str>), CmdError> {
    let (f, ops) = flags(args, known)?;
    if ops.is_empty() {
        return Err(CmdError::usage("missing operand"));
    }
    Ok((f, ops))
}

/// Prints `name: path: error` for each failure and fails the command if any.
struct Errors(bool);

impl Errors {
    fn report(&mut self, out: &mut dyn Write, what: &str, e: &FsError) -> CmdResult {
        self.0 = true;
        writeln!(out, "{what}: {e}")?;
        Ok(())
    }
    fn done(self) -> CmdResult {
        if self.0 {
            // Already printed: an empty failure adds no second line.
            Err(CmdError::Failed(String::new()))
        } else {
            Ok(())
        }
    }
}

/// `pwd`.
pub fn pwd(v: &mut Vfs, _args: &[&str], out: &mut dyn Write) -> CmdResult {
    writeln!(out, "{}", v.cwd())?;
    Ok(())
}

/// `cd [DIR]` (default `/`).
pub fn cd(v: &mut Vfs, args: &[&str], _out: &mut dyn Write) -> CmdResult {
    let dir = args.first().copied().unwrap_or("/");
    v.chdir(dir)
        .map_err(|e| CmdError::failed(format!("{dir}: {e}")))
}

fn mode_string(st: &Stat) -> String {
    let mut s = String::new();
    s.push(match st.kind {
        FileType::Dir => 'd',
        FileType::Symlink => 'l',
        FileType::File => '-',
        FileType::Special => match st.mode & 0o170000 {
            0o020000 => 'c',
            0o060000 => 'b',
            0o010000 => 'p',
            0o140000 => 's',
            _ => '?',
        },
    });
    for shift in [6, 3, 0] {
        let bits = (st.mode >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    s
}

/// `YYYY-MM-DD HH:MM:SS` in UTC.
pub fn format_time(t: i64) -> String {
    let (y, mo, d) = civil_from_days(t.div_euclid(86_400));
    let s = t.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

fn ls_long(out: &mut dyn Write, st: &Stat, name: &str, link: Option<&str>) -> CmdResult {
    write!(
        out,
        "{} {:>3} {:<8} {:<8} {:>10} {} {}",
        mode_string(st),
        st.nlink,
        st.uid,
        st.gid,
        st.size,
        &format_time(st.mtime)[..16],
        name
    )?;
    if let Some(l) = link {
        write!(out, " -> {l}")?;
    }
    writeln!(out)?;
    Ok(())
}

/// `ls [-l] [-a] [-1] [PATH]...`: one name per line (as `ls | cat` prints).
pub fn ls(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (f, mut ops) = flags(args, "la1dh")?;
    let long = f.contains(&'l');
    let all = f.contains(&'a');
    if ops.is_empty() {
        ops.push(".");
    }
    let mut errs = Errors(false);
    let many = ops.len() > 1;
    let mut listed = false;
    for p in &ops {
        let h = match v.resolve(p).and_then(|h| v.stat(h).map(|s| (h, s))) {
            Ok(x) => x,
            Err(e) => {
                errs.report(out, &format!("ls: cannot access '{p}'"), &e)?;
                continue;
            }
        };
        let (h, st) = h;
        if st.kind != FileType::Dir || f.contains(&'d') {
            if long {
                let link = if st.kind == FileType::Symlink {
                    v.read_link(p).ok()
                } else {
                    None
                };
                ls_long(out, &st, p, link.as_deref())?;
            } else {
                writeln!(out, "{p}")?;
            }
            continue;
        }
        if many {
            if listed {
                writeln!(out)?;
            }
            writeln!(out, "{p}:")?;
        }
        listed = true;
        let entries = match v.read_dir(h) {
            Ok(e) => e,
            Err(e) => {
                errs.report(out, &format!("ls: cannot open directory '{p}'"), &e)?;
                continue;
            }
        };
        if long {
            let mut total = 0;
            let mut rows = Vec::new();
            for e in &entries {
                if !all && e.name.starts_with('.') {
                    continue;
                }
                let path = format!("{}/{}", p.trim_end_matches('/'), e.name);
                match v.resolve_nofollow(&path).and_then(|h| v.stat(h)) {
                    Ok(s) => {
                        total += s.blocks / 2;
                        let link = if s.kind == FileType::Symlink {
                            v.read_link(&path).ok()
                        } else {
                            None
                        };
                        rows.push((s, e.name.clone(), link));
                    }
                    Err(err) => errs.report(out, &format!("ls: cannot access '{path}'"), &err)?,
                }
            }
            writeln!(out, "total {total}")?;
            for (s, n, l) in rows {
                ls_long(out, &s, &n, l.as_deref())?;
            }
        } else {
            if all {
                writeln!(out, ".\n..")?;
            }
            for e in entries {
                if all || !e.name.starts_with('.') {
                    writeln!(out, "{}", e.name)?;
                }
            }
        }
    }
    errs.done()
}

/// Calls `f` with successive chunks of the file at `h`.
fn each_chunk(
    v: &mut Vfs,
    h: Handle,
    mut f: impl FnMut(&[u8]) -> CmdResult,
) -> Result<Result<(), FsError>, CmdError> {
    let len = v.stat(h).map(|s| s.size).unwrap_or(CHUNK as u64);
    let mut buf = match io_buffer(len) {
        Ok(b) => b,
        Err(e) => return Ok(Err(e)),
    };
    let mut off = 0u64;
    loop {
        match v.read(h, off, &mut buf) {
            Ok(0) => return Ok(Ok(())),
            Ok(n) => {
                f(&buf[..n])?;
                off += n as u64;
            }
            Err(e) => return Ok(Err(e)),
        }
    }
}

fn open_file(v: &mut Vfs, p: &str) -> Result<Handle, FsError> {
    let h = v.resolve(p)?;
    if v.stat(h)?.kind == FileType::Dir {
        return Err(FsError::IsDir);
    }
    Ok(h)
}

/// `cat FILE...`.
pub fn cat(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (_, ops) = flags_with_operands(args, "")?;
    let mut errs = Errors(false);
    for p in ops {
        let r = match open_file(v, p) {
            Ok(h) => {
                let mut text = Utf8Out::default();
                let r = each_chunk(v, h, |b| text.write(out, b))?;
                text.finish(out)?;
                r
            }
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            errs.report(out, &format!("cat: {p}"), &e)?;
        }
    }
    errs.done()
}

/// Bytes to the terminal as text, without a copy: valid UTF-8 as it is, each invalid
/// sequence as U+FFFD (as `String::from_utf8_lossy`, which allocated up to three
/// times a chunk for binary data), and a character cut by a chunk's end joined with
/// the rest of it from the next chunk.
#[derive(Default)]
struct Utf8Out {
    carry: [u8; 4],
    carried: usize,
}

impl Utf8Out {
    fn write(&mut self, out: &mut dyn Write, mut b: &[u8]) -> CmdResult {
        // Complete the character cut at the end of the last chunk.
        while self.carried > 0 && !b.is_empty() {
            if b[0] & 0xc0 != 0x80 {
                // Not a continuation byte: the cut character was bad after all.
                out.write_str("\u{FFFD}")?;
                self.carried = 0;
                break;
            }
            self.carry[self.carried] = b[0];
            self.carried += 1;
            b = &b[1..];
            match core::str::from_utf8(&self.carry[..self.carried]) {
                Ok(c) => {
                    out.write_str(c)?;
                    self.carried = 0;
                }
                Err(e) if e.error_len().is_none() && self.carried < 4 => {}
                Err(_) => {
                    out.write_str("\u{FFFD}")?;
                    self.carried = 0;
                }
            }
        }
        for chunk in b.utf8_chunks() {
            out.write_str(chunk.valid())?;
            let bad = chunk.invalid();
            if bad.is_empty() {
                continue;
            }
            // The last chunk's invalid part may be a character cut short.
            let end = bad.as_ptr_range().end == b.as_ptr_range().end;
            let first = bad[0];
            let need = if first >= 0xf0 {
                4
            } else if first >= 0xe0 {
                3
            } else {
                2
            };
            if end && (0xc2..=0xf4).contains(&first) && bad.len() < need {
                self.carry[..bad.len()].copy_from_slice(bad);
                self.carried = bad.len();
            } else {
                out.write_str("\u{FFFD}")?;
            }
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn Write) -> CmdResult {
        if self.carried > 0 {
            self.carried = 0;
            out.write_str("\u{FFFD}")?;
        }
        Ok(())
    }
}

/// `sha256sum FILE...` (coreutils output: hash, two spaces, name).
pub fn sha256sum(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let mut errs = Errors(false);
    for p in args {
        let mut h = sha2::Sha256::new();
        let r = match open_file(v, p) {
            Ok(fh) => each_chunk(v, fh, |b| {
                h.update(b);
                Ok(())
            })?,
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => {
                for b in h.finalize() {
                    write!(out, "{b:02x}")?;
                }
                writeln!(out, "  {p}")?;
            }
            Err(e) => errs.report(out, &format!("sha256sum: {p}"), &e)?,
        }
    }
    errs.done()
}

/// `hexdump -C FILE` (canonical hex+ASCII, `*` for repeated lines).
pub fn hexdump(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (f, ops) = flags(args, "C")?;
    if !f.contains(&'C') || ops.len() != 1 {
        return Err(CmdError::usage("only 'hexdump -C FILE' is supported"));
    }
    let p = ops[0];
    let h = open_file(v, p).map_err(|e| CmdError::failed(format!("{p}: {e}")))?;
    let mut off = 0u64;
    let mut prev: Option<[u8; 16]> = None;
    let mut starred = false;
    let mut pending: Vec<u8> = Vec::new();
    let mut line = |chunk: &[u8], off: u64, out: &mut dyn Write| -> CmdResult {
        let mut row = [0u8; 16];
        row[..chunk.len()].copy_from_slice(chunk);
        if chunk.len() == 16 && prev == Some(row) {
            if !starred {
                writeln!(out, "*")?;
                starred = true;
            }
            return Ok(());
        }
        starred = false;
        prev = if chunk.len() == 16 { Some(row) } else { None };
        write!(out, "{off:08x}  ")?;
        for i in 0..16 {
            match chunk.get(i) {
                Some(b) => write!(out, "{b:02x} ")?,
                None => out.write_str("   ")?,
            }
            if i == 7 {
                out.write_str(" ")?;
            }
        }
        out.write_str(" |")?;
        for &b in chunk {
            out.write_char(if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '.'
            })?;
        }
        writeln!(out, "|")?;
        Ok(())
    };
    let r = each_chunk(v, h, |b| {
        pending.extend_from_slice(b);
        let whole = pending.len() / 16 * 16;
        for c in pending[..whole].chunks(16) {
            line(c, off, out)?;
            off += 16;
        }
        pending.drain(..whole);
        Ok(())
    })?;
    if !pending.is_empty() {
        line(&pending, off, out)?;
        off += pending.len() as u64;
    }
    if off > 0 {
        writeln!(out, "{off:08x}")?;
    }
    r.map_err(|e| CmdError::failed(format!("{p}: {e}")))
}

/// `mkdir [-p] DIR...`.
pub fn mkdir(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (f, ops) = flags_with_operands(args, "p")?;
    let parents = f.contains(&'p');
    let mut errs = Errors(false);
    for p in ops {
        let r = if parents {
            let abs = v.absolute(p);
            let mut cur = String::new();
            let mut r = Ok(());
            for c in abs.split('/').filter(|c| !c.is_empty()) {
                cur.push('/');
                cur.push_str(c);
                match v.mkdir(&cur, 0o755) {
                    Ok(_) => {}
                    Err(FsError::Exists) | Err(FsError::Busy) => {
                        // An existing directory (or a mount point) is fine for -p.
                        match v.resolve(&cur).and_then(|h| v.stat(h)) {
                            Ok(s) if s.kind == FileType::Dir => {}
                            Ok(_) => {
                                r = Err(FsError::Exists);
                                break;
                            }
                            Err(e) => {
                                r = Err(e);
                                break;
                            }
                        }
                    }
                    Err(e) => {
                        r = Err(e);
                        break;
                    }
                }
            }
            r
        } else {
            v.mkdir(p, 0o755).map(|_| ())
        };
        if let Err(e) = r {
            errs.report(out, &format!("mkdir: cannot create directory '{p}'"), &e)?;
        }
    }
    errs.done()
}

/// `rmdir DIR...`.
pub fn rmdir(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (_, ops) = flags_with_operands(args, "")?;
    let mut errs = Errors(false);
    for p in ops {
        if let Err(e) = v.rmdir(p) {
            errs.report(out, &format!("rmdir: failed to remove '{p}'"), &e)?;
        }
    }
    errs.done()
}

fn remove_tree(v: &mut Vfs, path: &str) -> Result<(), FsError> {
    let h = v.resolve_nofollow(path)?;
    if v.stat(h)?.kind != FileType::Dir {
        return v.unlink(path);
    }
    // Depth-first with an explicit stack (no recursion on disk-controlled depth).
    let mut stack = alloc::vec![(String::from(path), false)];
    while let Some((p, expanded)) = stack.pop() {
        if expanded {
            v.rmdir(&p)?;
            continue;
        }
        stack.push((p.clone(), true));
        let h = v.resolve_nofollow(&p)?;
        for e in v.read_dir(h)? {
            let child = format!("{}/{}", p.trim_end_matches('/'), e.name);
            if e.kind == FileType::Dir {
                stack.push((child, false));
            } else {
                v.unlink(&child)?;
            }
        }
    }
    Ok(())
}

/// `rm [-r] [-f] PATH...`.
pub fn rm(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (f, ops) = flags(args, "rRf")?;
    let recursive = f.contains(&'r') || f.contains(&'R');
    let force = f.contains(&'f');
    if ops.is_empty() && !force {
        return Err(CmdError::usage("missing operand"));
    }
    let mut errs = Errors(false);
    for p in ops {
        let r = match v.resolve_nofollow(p).and_then(|h| v.stat(h)) {
            Ok(s) if s.kind == FileType::Dir && !recursive => Err(FsError::IsDir),
            Ok(_) if recursive => remove_tree(v, p),
            Ok(_) => v.unlink(p),
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => {}
            Err(FsError::NotFound) if force => {}
            Err(e) => errs.report(out, &format!("rm: cannot remove '{p}'"), &e)?,
        }
    }
    errs.done()
}

/// `touch FILE...`: creates missing files, sets the times of existing ones to `now`.
pub fn touch(v: &mut Vfs, args: &[&str], out: &mut dyn Write, now: i64) -> CmdResult {
    let (_, ops) = flags(args, "")?;
    if ops.is_empty() {
        return Err(CmdError::usage("missing file operand"));
    }
    let mut errs = Errors(false);
    for p in ops {
        let r = match v.resolve(p) {
            Ok(h) => v.set_times(h, now, now),
            Err(FsError::NotFound) => v.create(p, 0o644).map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            errs.report(out, &format!("touch: cannot touch '{p}'"), &e)?;
        }
    }
    errs.done()
}

/// The target path for `cp`/`mv`: into DST if it is a directory.
fn target(v: &mut Vfs, src: &str, dst: &str) -> String {
    match v.resolve(dst).and_then(|h| v.stat(h)) {
        Ok(s) if s.kind == FileType::Dir => {
            let name = src.trim_end_matches('/').rsplit('/').next().unwrap_or(src);
            format!("{}/{}", dst.trim_end_matches('/'), name)
        }
        _ => String::from(dst),
    }
}

/// Copies one regular file; the destination is truncated first.
pub fn copy_file(v: &mut Vfs, src: &str, dst: &str) -> Result<u64, FsError> {
    let s = open_file(v, src)?;
    let d = v.open_write(dst, true)?;
    if s == d {
        return Err(FsError::Invalid("source and destination are the same file"));
    }
    let mut buf = io_buffer(v.stat(s)?.size)?;
    let mut off = 0u64;
    loop {
        let n = v.read(s, off, &mut buf)?;
        if n == 0 {
            return Ok(off);
        }
        let mut w = 0;
        while w < n {
            w += v.write(d, off + w as u64, &buf[w..n])?;
        }
        off += n as u64;
    }
}

/// `cp [-r|-R] SRC... DEST`: with `-r`, directories are copied with everything in
/// them (GNU's `cp -r`: into DEST when it is a directory, else as DEST).
pub fn cp(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (f, ops) = flags(args, "rR")?;
    let recursive = f.contains(&'r') || f.contains(&'R');
    let Some((dst, srcs)) = ops.split_last().filter(|(_, s)| !s.is_empty()) else {
        return Err(CmdError::usage("missing destination file operand"));
    };
    let mut errs = Errors(false);
    for s in srcs {
        let t = target(v, s, dst);
        let is_dir = v
            .resolve(s)
            .and_then(|h| v.stat(h))
            .is_ok_and(|st| st.kind == FileType::Dir);
        if !is_dir {
            if let Err(e) = copy_file(v, s, &t) {
                errs.report(out, &format!("cp: cannot copy '{s}' to '{t}'"), &e)?;
            }
        } else if !recursive {
            errs.0 = true;
            writeln!(out, "cp: -r not specified; omitting directory '{s}'")?;
        } else {
            copy_tree(v, s, &t, out, &mut errs)?;
        }
    }
    errs.done()
}

/// Copies directory `src` as `dst` (made if missing), depth-first with an explicit
/// stack (no recursion on disk-controlled depth). Symbolic links inside are reported
/// and left out (the file tree cannot make links); every other failure is reported
/// and the copy goes on, as GNU's does.
fn copy_tree(
    v: &mut Vfs,
    src: &str,
    dst: &str,
    out: &mut dyn Write,
    errs: &mut Errors,
) -> CmdResult {
    let (abs_src, abs_dst) = (v.absolute(src), v.absolute(dst));
    if abs_dst == abs_src || abs_dst.starts_with(&format!("{}/", abs_src.trim_end_matches('/'))) {
        errs.0 = true;
        writeln!(
            out,
            "cp: cannot copy a directory, '{src}', into itself, '{dst}'"
        )?;
        return Ok(());
    }
    let mut stack = alloc::vec![(String::from(src), String::from(dst))];
    while let Some((s, d)) = stack.pop() {
        match v.mkdir(&d, 0o755) {
            Ok(_) => {}
            Err(FsError::Exists)
                if v.resolve(&d)
                    .and_then(|h| v.stat(h))
                    .is_ok_and(|st| st.kind == FileType::Dir) => {}
            Err(e) => {
                errs.report(out, &format!("cp: cannot create directory '{d}'"), &e)?;
                continue;
            }
        }
        let entries = match v.resolve(&s).and_then(|h| v.read_dir(h)) {
            Ok(e) => e,
            Err(e) => {
                errs.report(out, &format!("cp: cannot access '{s}'"), &e)?;
                continue;
            }
        };
        for e in entries {
            if e.name == "." || e.name == ".." {
                continue;
            }
            let (cs, cd) = (
                format!("{}/{}", s.trim_end_matches('/'), e.name),
                format!("{}/{}", d.trim_end_matches('/'), e.name),
            );
            match e.kind {
                FileType::Dir => stack.push((cs, cd)),
                FileType::File => {
                    if let Err(err) = copy_file(v, &cs, &cd) {
                        errs.report(out, &format!("cp: cannot copy '{cs}' to '{cd}'"), &err)?;
                    }
                }
                _ => {
                    errs.0 = true;
                    writeln!(out, "cp: omitting '{cs}': not a regular file or directory")?;
                }
            }
        }
    }
    Ok(())
}

/// `mv SRC... DEST` (a rename; across filesystems a copy and delete of a file).
pub fn mv(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (_, ops) = flags(args, "f")?;
    let Some((dst, srcs)) = ops.split_last().filter(|(_, s)| !s.is_empty()) else {
        return Err(CmdError::usage("missing destination file operand"));
    };
    let mut errs = Errors(false);
    for s in srcs {
        let t = target(v, s, dst);
        let r = match v.rename(s, &t) {
            Err(FsError::CrossDevice) => copy_file(v, s, &t).and_then(|_| v.unlink(s)),
            r => r,
        };
        if let Err(e) = r {
            errs.report(out, &format!("mv: cannot move '{s}' to '{t}'"), &e)?;
        }
    }
    errs.done()
}

/// `stat PATH...`, GNU's layout.
pub fn stat(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (_, ops) = flags_with_operands(args, "")?;
    let mut errs = Errors(false);
    for p in ops {
        let st = match v.resolve_nofollow(p).and_then(|h| v.stat(h)) {
            Ok(s) => s,
            Err(e) => {
                errs.report(out, &format!("stat: cannot statx '{p}'"), &e)?;
                continue;
            }
        };
        let kind = match st.kind {
            FileType::File if st.size == 0 => "regular empty file",
            FileType::File => "regular file",
            FileType::Dir => "directory",
            FileType::Symlink => "symbolic link",
            FileType::Special => "special file",
        };
        let name = match st.kind {
            FileType::Symlink => format!("{p} -> {}", v.read_link(p).unwrap_or_default()),
            _ => String::from(p),
        };
        writeln!(out, "  File: {name}")?;
        writeln!(
            out,
            "  Size: {:<15} Blocks: {:<10} {kind}",
            st.size, st.blocks
        )?;
        writeln!(out, "Inode: {:<15} Links: {}", st.ino, st.nlink)?;
        writeln!(
            out,
            "Access: ({:04o}/{})  Uid: ({:>5})   Gid: ({:>5})",
            st.mode & 0o7777,
            mode_string(&st),
            st.uid,
            st.gid
        )?;
        writeln!(out, "Access: {}", format_time(st.atime))?;
        writeln!(out, "Modify: {}", format_time(st.mtime))?;
        writeln!(out, "Change: {}", format_time(st.ctime))?;
    }
    errs.done()
}

/// Human-readable size as `df -h` prints it (1024-based, rounded up, one decimal
/// under 10).
fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["", "K", "M", "G", "T", "P"];
    let mut u = 0;
    while u + 1 < UNITS.len() && bytes >= 1024u64.pow(u as u32 + 1) {
        u += 1;
    }
    if u == 0 {
        return format!("{bytes}");
    }
    let div = 1024u128.pow(u as u32);
    let tenths = (u128::from(bytes) * 10).div_ceil(div);
    if tenths < 100 {
        format!("{}.{}{}", tenths / 10, tenths % 10, UNITS[u])
    } else {
        format!("{}{}", u128::from(bytes).div_ceil(div), UNITS[u])
    }
}

/// `df [-h]`: every mounted filesystem.
pub fn df(v: &mut Vfs, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let (f, _) = flags(args, "hkT")?;
    let h = f.contains(&'h');
    if h {
        writeln!(
            out,
            "{:<15} {:>6} {:>6} {:>6} {:>4} Mounted on",
            "Filesystem", "Size", "Used", "Avail", "Use%"
        )?;
    } else {
        writeln!(
            out,
            "{:<15} {:>10} {:>10} {:>10} {:>4} Mounted on",
            "Filesystem", "1K-blocks", "Used", "Available", "Use%"
        )?;
    }
    let mut errs = Errors(false);
    for m in v.mounts() {
        let s = match v.statfs_at(&m.path) {
            Ok(s) => s,
            Err(e) => {
                errs.report(out, &format!("df: {}", m.path), &e)?;
                continue;
            }
        };
        let bs = u64::from(s.block_size);
        let total = s.blocks * bs;
        let used = s.blocks.saturating_sub(s.free_blocks) * bs;
        let avail = s.avail_blocks * bs;
        // GNU: used / (used + avail), rounded up.
        let denom = used + avail;
        let pct = if denom == 0 {
            0
        } else {
            (used * 100).div_ceil(denom)
        };
        if h {
            writeln!(
                out,
                "{:<15} {:>6} {:>6} {:>6} {:>3}% {}",
                m.source,
                human(total),
                human(used),
                human(avail),
                pct,
                m.path
            )?;
        } else {
            writeln!(
                out,
                "{:<15} {:>10} {:>10} {:>10} {:>3}% {}",
                m.source,
                total / 1024,
                used / 1024,
                avail / 1024,
                pct,
                m.path
            )?;
        }
    }
    errs.done()
}

/// The mount table, as `mount` with no arguments prints it.
pub fn mount_table(v: &mut Vfs, out: &mut dyn Write) -> CmdResult {
    for m in v.mounts() {
        writeln!(
            out,
            "{} on {} type {} ({})",
            m.source,
            m.path,
            m.kind,
            if m.read_only { "ro" } else { "rw" }
        )?;
    }
    Ok(())
}

/// Writes `data` to `path` (creating it; appending or truncating), for `>`/`>>`.
pub fn redirect(v: &mut Vfs, path: &str, append: bool, data: &[u8]) -> Result<(), FsError> {
    let h = v.open_write(path, !append)?;
    let mut off = if append { v.stat(h)?.size } else { 0 };
    let mut done = 0;
    while done < data.len() {
        let n = v.write(h, off, &data[done..])?;
        done += n;
        off += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::boxed::Box;
    use xenlet_fs::memfs::MemFs;

    fn vfs() -> Vfs {
        Vfs::new(Box::new(MemFs::new(8 << 20, || 86_400 * 365)), "tmpfs")
    }

    fn run(
        v: &mut Vfs,
        f: fn(&mut Vfs, &[&str], &mut dyn Write) -> CmdResult,
        args: &[&str],
    ) -> (String, CmdResult) {
        let mut s = String::new();
        let r = f(v, args, &mut s);
        (s, r)
    }

    #[test]
    fn io_buffers_fit_the_file() {
        assert_eq!(io_buffer(10).unwrap().len(), 4096);
        assert_eq!(io_buffer(5000).unwrap().len(), 5000);
        assert_eq!(io_buffer(1 << 30).unwrap().len(), CHUNK);
    }

    #[test]
    fn cp_r_copies_a_tree_like_gnu() {
        let mut v = vfs();
        assert_eq!(run(&mut v, mkdir, &["-p", "/src/a/b", "/dst"]).1, Ok(()));
        v.write_atomic("/src/top", b"top").unwrap();
        v.write_atomic("/src/a/b/deep", b"deep").unwrap();
        for i in 0..50 {
            v.write_atomic(&format!("/src/a/f{i}"), format!("file {i}").as_bytes())
                .unwrap();
        }
        // without -r a directory is left out, with GNU's words
        let (o, r) = run(&mut v, cp, &["/src", "/dst"]);
        assert_eq!(o, "cp: -r not specified; omitting directory '/src'\n");
        assert!(r.is_err());
        // into an existing directory: /dst/src; to a new name: that name
        assert_eq!(
            run(&mut v, cp, &["-r", "/src", "/dst"]),
            (String::new(), Ok(()))
        );
        assert_eq!(
            run(&mut v, cp, &["-R", "/src/a", "/copy"]),
            (String::new(), Ok(()))
        );
        assert_eq!(v.read_to_vec("/dst/src/top", 10).unwrap(), b"top");
        assert_eq!(v.read_to_vec("/dst/src/a/b/deep", 10).unwrap(), b"deep");
        assert_eq!(v.read_to_vec("/copy/b/deep", 10).unwrap(), b"deep");
        for i in 0..50 {
            assert_eq!(
                v.read_to_vec(&format!("/dst/src/a/f{i}"), 20).unwrap(),
                format!("file {i}").as_bytes()
            );
        }
        let h = v.resolve("/copy").unwrap();
        assert_eq!(v.read_dir(h).unwrap().len(), 51);
        // again over the copy: files are overwritten, directories reused
        assert_eq!(
            run(&mut v, cp, &["-r", "/src", "/dst"]),
            (String::new(), Ok(()))
        );
        // a directory into itself is refused, nothing made
        let (o, r) = run(&mut v, cp, &["-r", "/src", "/src/a"]);
        assert_eq!(
            o,
            "cp: cannot copy a directory, '/src', into itself, '/src/a/src'\n"
        );
        assert!(r.is_err());
        assert!(v.resolve("/src/a/src").is_err());
        // a failure inside is reported and the rest still copied
        let (o, r) = run(&mut v, cp, &["-r", "/src", "/top-is-a-file/x"]);
        assert!(
            o.starts_with("cp: cannot create directory '/top-is-a-file/x'"),
            "{o}"
        );
        assert!(r.is_err());
    }

    #[test]
    fn mkdir_p_touch_ls_and_errors() {
        let mut v = vfs();
        assert_eq!(run(&mut v, mkdir, &["-p", "/etc/config", "/tmp"]).1, Ok(()));
        let (o, r) = run(&mut v, mkdir, &["/etc"]);
        assert_eq!(o, "mkdir: cannot create directory '/etc': File exists\n");
        assert!(r.is_err());
        let mut s = String::new();
        touch(
            &mut v,
            &["/etc/config/network", "/etc/config/dhcp"],
            &mut s,
            5,
        )
        .unwrap();
        assert_eq!(run(&mut v, ls, &["/etc/config"]).0, "dhcp\nnetwork\n");
        assert_eq!(run(&mut v, ls, &["/"]).0, "etc\ntmp\n");
        let (o, r) = run(&mut v, ls, &["/nope", "/tmp"]);
        assert_eq!(
            o,
            "ls: cannot access '/nope': No such file or directory\n/tmp:\n"
        );
        assert!(r.is_err());
        let (o, _) = run(&mut v, ls, &["-l", "/etc"]);
        assert!(
            o.starts_with(
                "total 4\ndrwxr-xr-x   2 0        0              4096 1971-01-01 00:00 config\n"
            ),
            "{o}"
        );
        assert!(run(&mut v, ls, &["-z"]).1.is_err());
    }

    #[test]
    fn cat_prints_text_as_from_utf8_lossy_does_across_chunks() {
        let mut v = vfs();
        // A file of CHUNK-sized reads with characters cut at every chunk's end,
        // bad bytes, a cut character at the very end.
        let mut data = alloc::vec![b'a'; CHUNK - 1];
        data.extend_from_slice("é€".as_bytes()); // é cut after its first byte
        data.extend_from_slice(&[0xff, b'x', 0xe2, 0x82, b'y', 0xc3]);
        data.resize(2 * CHUNK - 2, b'b');
        data.extend_from_slice("😀".as_bytes()); // cut after two bytes
        data.extend_from_slice(&[0xe2, 0x82]); // cut at the end of the file
        v.write_atomic("/t", &data).unwrap();
        let want = String::from_utf8_lossy(&data).into_owned();
        let (got, r) = run(&mut v, cat, &["/t"]);
        assert_eq!(r, Ok(()));
        assert!(
            got == want,
            "differs at byte {:?}",
            got.bytes().zip(want.bytes()).position(|(a, b)| a != b)
        );
        // chunk by chunk as cat gets them, and byte by byte
        for step in [CHUNK, 1] {
            let mut t = Utf8Out::default();
            let mut out = String::new();
            for c in data.chunks(step) {
                t.write(&mut out, c).unwrap();
            }
            t.finish(&mut out).unwrap();
            assert!(out == want, "step {step}");
        }
    }

    #[test]
    fn cat_cp_mv_rm_and_hashes() {
        let mut v = vfs();
        redirect(&mut v, "/a", false, b"hello\n").unwrap();
        redirect(&mut v, "/a", true, b"world\n").unwrap();
        assert_eq!(run(&mut v, cat, &["/a"]).0, "hello\nworld\n");
        run(&mut v, mkdir, &["/d"]).1.unwrap();
        run(&mut v, cp, &["/a", "/d"]).1.unwrap();
        assert_eq!(run(&mut v, cat, &["/d/a"]).0, "hello\nworld\n");
        run(&mut v, mv, &["/d/a", "/b"]).1.unwrap();
        assert_eq!(
            run(&mut v, cat, &["/d/a"]).0,
            "cat: /d/a: No such file or directory\n"
        );
        // sha256("hello\nworld\n"), from coreutils.
        assert_eq!(
            run(&mut v, sha256sum, &["/b"]).0,
            "4a1e67f2fe1d1cc7b31d0ca2ec441da4778203a036a77da10344c85e24ff0f92  /b\n"
        );
        assert_eq!(
            run(&mut v, rm, &["/d"]).0,
            "rm: cannot remove '/d': Is a directory\n"
        );
        redirect(&mut v, "/d/x", false, b"x").unwrap();
        run(&mut v, mkdir, &["-p", "/d/e/f"]).1.unwrap();
        run(&mut v, rm, &["-r", "/d"]).1.unwrap();
        assert!(v.resolve("/d").is_err());
        assert_eq!(run(&mut v, rm, &["-f", "/nothing"]).1, Ok(()));
        assert_eq!(run(&mut v, cp, &["/b", "/b"]).0, "cp: cannot copy '/b' to '/b': Invalid argument (source and destination are the same file)\n");
    }

    #[test]
    fn hexdump_canonical() {
        let mut v = vfs();
        let mut data = alloc::vec![0u8; 48];
        data.extend_from_slice(b"ABCDEFGHIJKLMNOPQ");
        redirect(&mut v, "/h", false, &data).unwrap();
        let (o, _) = run(&mut v, hexdump, &["-C", "/h"]);
        assert_eq!(
            o,
            "00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n\
             *\n\
             00000030  41 42 43 44 45 46 47 48  49 4a 4b 4c 4d 4e 4f 50  |ABCDEFGHIJKLMNOP|\n\
             00000040  51                                                |Q|\n\
             00000041\n"
        );
    }

    #[test]
    fn df_and_stat_and_cd() {
        let mut v = vfs();
        redirect(&mut v, "/f", false, &[1u8; 5000]).unwrap();
        let (o, _) = run(&mut v, df, &["-h"]);
        assert!(o.contains("tmpfs") && o.ends_with("% /\n"), "{o}");
        let (o, _) = run(&mut v, stat, &["/f"]);
        assert!(
            o.contains("Size: 5000")
                && o.contains("regular file")
                && o.contains("(0644/-rw-r--r--)"),
            "{o}"
        );
        run(&mut v, mkdir, &["/x"]).1.unwrap();
        cd(&mut v, &["/x"], &mut String::new()).unwrap();
        assert_eq!(run(&mut v, pwd, &[]).0, "/x\n");
        redirect(&mut v, "rel", false, b"r").unwrap();
        assert_eq!(run(&mut v, cat, &["/x/rel"]).0, "r");
        assert_eq!(format_time(1_764_751_200), "2025-12-03 08:40:00");
        assert_eq!(human(1536), "1.5K");
        assert_eq!(human(3 << 30), "3.0G");
    }
}
