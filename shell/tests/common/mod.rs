//! What the heap tests share: a block device over a host image file, temp dirs and
//! e2fsprogs (the counting, limiting allocator is `xenlet_testalloc`).

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// The ext tests' helpers: a block device over a host image file, temp dirs,
/// e2fsprogs' paths.
#[path = "../../../fs/tests/common/mod.rs"]
mod fs_common;

pub use fs_common::{tool, FileDisk as Disk, TempDir};

/// A block device over the image at `path`, read-only or not.
pub fn disk(path: &Path, read_only: bool) -> Disk {
    let mut d = Disk::open(path);
    d.read_only = read_only;
    d
}

/// Runs a command (e2fsprogs); fails the test with its output if it fails.
pub fn run(c: &mut Command) -> String {
    let out = c.output().expect("run e2fsprogs");
    assert!(
        out.status.success(),
        "{c:?} failed ({:?}):\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
