//! The shell's file and filesystem commands: the tools themselves live in
//! `xenlet_shell::files` (host-tested); here they get the kernel's file tree, and
//! `mount`, `umount`, `sync` and `dmesg` get the kernel's devices and log.

use crate::fs::vfs;
use crate::shell::host::Host;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use xenlet_fs::vfs::Vfs;
use xenlet_shell::files;
use xenlet_shell::{CmdError, CmdResult};

fn on_tree(f: impl FnOnce(&mut Vfs) -> CmdResult) -> CmdResult {
    vfs::with(f).unwrap_or_else(|| Err(CmdError::failed("no file tree")))
}

/// Runs a file tool on the kernel's tree.
macro_rules! tool {
    ($name:ident) => {
        pub(crate) fn $name(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
            on_tree(|v| files::$name(v, args, out))
        }
    };
}

tool!(ls);
tool!(cat);
tool!(cp);
tool!(mv);
tool!(rm);
tool!(mkdir);
tool!(rmdir);
tool!(stat);
tool!(df);
tool!(hexdump);
tool!(cd);
tool!(pwd);

pub(crate) fn touch(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    on_tree(|v| files::touch(v, args, out, vfs::now_secs()))
}

/// `sha256sum` of files (the disk form, `/dev/xvdX`, is the caller's).
pub(crate) fn sha256sum_files(args: &[&str], out: &mut dyn Write) -> CmdResult {
    on_tree(|v| files::sha256sum(v, args, out))
}

/// `mount`, `mount [-t TYPE] [-o ro|rw] DEV DIR`.
pub(crate) fn mount(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let mut kind = None;
    let mut ro = false;
    let mut ops: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "-t" => {
                kind = Some(
                    *it.next()
                        .ok_or_else(|| CmdError::usage("-t needs a type"))?,
                )
            }
            "-o" => {
                for o in it
                    .next()
                    .ok_or_else(|| CmdError::usage("-o needs options"))?
                    .split(',')
                {
                    match o {
                        "ro" => ro = true,
                        "rw" | "defaults" => ro = false,
                        o => return Err(CmdError::usage(alloc::format!("unknown option '{o}'"))),
                    }
                }
            }
            "-r" => ro = true,
            a if a.starts_with('-') => {
                return Err(CmdError::usage(alloc::format!("invalid option '{a}'")))
            }
            a => ops.push(a),
        }
    }
    match (kind, ops.as_slice()) {
        (_, []) => on_tree(|v| files::mount_table(v, out)),
        (Some(k), _) if !matches!(k, "ext2" | "ext3" | "ext4" | "auto") => Err(CmdError::failed(
            alloc::format!("unknown filesystem type '{k}'"),
        )),
        (k, [dev, dir]) => {
            let line =
                vfs::mount(dev, dir, k.filter(|k| *k != "auto"), ro).map_err(CmdError::failed)?;
            crate::io::klog::log_only(&line);
            Ok(())
        }
        _ => Err(CmdError::usage("expected DEVICE DIRECTORY")),
    }
}

/// `umount DIR|DEV...`.
pub(crate) fn umount(_: &mut Host, args: &[&str], _: &mut dyn Write) -> CmdResult {
    if args.is_empty() {
        return Err(CmdError::usage("missing operand"));
    }
    for a in args {
        vfs::umount(a).map_err(CmdError::failed)?;
    }
    Ok(())
}

/// Writes back every filesystem (for `sync`); every failure is said with its mount
/// point (a lost write is reported once: `fs/src/ext/wberr.rs`).
pub(crate) fn sync_filesystems() -> Result<(), String> {
    let failed = vfs::with(|v| v.sync_each()).unwrap_or_default();
    if failed.is_empty() {
        return Ok(());
    }
    let said: Vec<String> = failed
        .iter()
        .map(|(path, e)| alloc::format!("{path}: {e}"))
        .collect();
    Err(said.join("; "))
}

/// `dmesg`: the kernel log.
pub(crate) fn dmesg(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    xenlet_shell::no_args(args)?;
    let mut text = String::new();
    crate::io::klog::read_log(|b| text.push_str(&String::from_utf8_lossy(b)));
    out.write_str(&text)?;
    Ok(())
}

/// `>`/`>>`: writes a command's output to a file.
pub(crate) fn redirect(_: &mut Host, path: &str, append: bool, text: &str) -> Result<(), String> {
    vfs::with(|v| files::redirect(v, path, append, text.as_bytes()))
        .ok_or_else(|| String::from("no file tree"))?
        .map_err(|e| alloc::format!("{e}"))
}

/// Clock and CPU time for `time`.
pub(crate) fn times() -> (u64, u64) {
    let cpu = crate::xen::platform::runstate().map_or(0, |r| r[0]);
    (crate::time::clock::now().as_nanos(), cpu)
}
