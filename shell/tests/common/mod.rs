//! What the heap tests share: a block device over a host image file, temp dirs and
//! e2fsprogs (the counting, limiting allocator is `xenlet_testalloc`).

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use xenlet_fs::blockdev::BlockDev;
use xenlet_fs::vfs::{BoxedFs, Vfs};
use xenlet_fs::{Ext, MountOptions};

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

/// A temp dir of its own for one test (`xenlet-cp-TAG-PID`), emptied first.
pub fn temp_dir(tag: &str) -> TempDir {
    let base = std::env::temp_dir().join(format!("xenlet-cp-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    TempDir(base)
}

/// Mounts the ext4 on `dev` at `at` in `v` (as `/dev/AT`), read-only or not, its
/// caches given `cache` bytes.
pub fn mount_ext<D: BlockDev + Send + 'static>(
    v: &mut Vfs,
    dev: D,
    at: &str,
    read_only: bool,
    cache: usize,
) {
    let opts = MountOptions {
        read_only,
        now: || 1_700_000_000,
    };
    let mut fs = Ext::mount(dev, opts).expect("mount");
    fs.set_cache_bytes(cache);
    v.mount(at, &format!("/dev/{at}"), Box::new(fs) as BoxedFs)
        .expect("vfs mount");
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

/// Files in `bench files`' tree.
pub const FILES: usize = 5000;
/// Its directories.
pub const DIRS: usize = 5;

/// The benchmark's tree: `files/dN/fIIII`, file `i` in directory `i % 5`, of
/// 100-4,099 pseudo-random bytes (a fixed xorshift, not Python's generator); returns
/// each file's path and bytes.
pub fn make_tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut rng = xenlet_testrng::XorShift(0x2545_f491_4f6c_dd1d);
    for d in 0..DIRS {
        std::fs::create_dir_all(root.join(format!("files/d{d}"))).unwrap();
    }
    let mut out = Vec::with_capacity(FILES);
    for i in 0..FILES {
        let len = 100 + rng.below(4000) as usize;
        let data = rng.bytes(len);
        let rel = format!("files/d{}/f{i:04}", i % DIRS);
        std::fs::write(root.join(&rel), &data).unwrap();
        out.push((rel, data));
    }
    out
}

/// As the benchmark's dom0 step: `mke2fs -t ext4 -d tree` of a 64 MiB disk as the
/// source, and a fresh 256 MiB one as the destination (mke2fs picks 1 KiB blocks
/// for both sizes), in `dir`; returns (source, destination).
pub fn make_images(dir: &Path, tree: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (src, dst) = (dir.join("src.img"), dir.join("dst.img"));
    for (img, mb) in [(&src, 64u64), (&dst, 256)] {
        std::fs::File::create(img)
            .unwrap()
            .set_len(mb << 20)
            .unwrap();
    }
    for (img, from) in [(&src, Some(tree)), (&dst, None)] {
        let mut c = Command::new(tool("mke2fs"));
        c.args(["-q", "-F", "-t", "ext4"]);
        if let Some(d) = from {
            c.arg("-d").arg(d);
        }
        c.arg(img).env("MKE2FS_CONFIG", "/etc/mke2fs.conf");
        run(&mut c);
    }
    (src, dst)
}

/// Checks the copy in `dst` under `/files`: `e2fsck -fn` clean, and every file of
/// `files` there with its bytes (dumped with debugfs into `scratch`).
pub fn check_copy(dst: &Path, scratch: &Path, files: &[(String, Vec<u8>)]) {
    run(Command::new(tool("e2fsck")).arg("-fn").arg(dst));
    std::fs::create_dir_all(scratch).unwrap();
    run(Command::new(tool("debugfs"))
        .arg("-R")
        .arg(format!("rdump /files {}", scratch.display()))
        .arg(dst));
    for (rel, data) in files {
        let got = std::fs::read(scratch.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
        assert!(got == *data, "{rel}: contents differ");
    }
}
