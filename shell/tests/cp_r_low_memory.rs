//! `cp -r` in a heap that runs out, on the host: the allocator refuses (a null
//! pointer, as the kernel's full heap does) any allocation past a bound, and the
//! VFS is told memory is low a low-water mark before it, as the kernel's
//! `mm::heap::memory_low` tells it. A small guest (memory = 8: a 1.25 MiB boot heap,
//! a quarter of it for each mount's caches) aborted here in the kernel: "memory
//! allocation of 86016 bytes failed" in the filesystem's write-behind. Now:
//!
//! 1. a copy that does not fit the disk, with the heap nearly full, ends in errors
//!    (no space, or no memory), not an abort;
//! 2. with memory low from the start, the mounts give their caches back and a copy
//!    that fits goes through;
//! 3. with nothing left to give back, the copy is refused with ENOMEM before
//!    anything is changed, and the same copy succeeds once memory is back;
//! 4. the filesystem is then clean under `e2fsck -fn`, and what was copied and what
//!    was there before reads back as it was.
//!

mod common;

use common::{disk, run, tool, TempDir};
use std::fs::File;
use std::process::Command;
use xenlet_fs::memfs::MemFs;
use xenlet_fs::vfs::{BoxedFs, Vfs};
use xenlet_fs::{Ext, MountOptions};
use xenlet_shell::files;
use xenlet_testalloc::{headroom, limited};

xenlet_testalloc::count_test_heap!();

/// Each mount's caches in a memory = 8 guest (a quarter of its 1.25 MiB heap).
const MOUNT_CACHE: usize = 320 << 10;
/// The kernel's low-water mark at that heap size (its floor).
const LOW_WATER: usize = 192 << 10;

/// The kernel's answer, over this thread's bounded heap.
fn memory_low() -> bool {
    headroom() < LOW_WATER as isize
}

/// Deterministic bytes (xorshift).
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    xenlet_testrng::XorShift(seed | 1).bytes(len)
}

fn cp(v: &mut Vfs, from: &str, to: &str) -> (bool, String) {
    let mut out = String::new();
    let r = files::cp(v, &["-r", from, to], &mut out);
    (r.is_ok(), out)
}

#[test]
fn cp_r_in_a_full_heap_fails_with_errors_and_leaves_the_filesystem_clean() {
    let base = std::env::temp_dir().join(format!("xenlet-cp-lowmem-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let tmp = TempDir(base.clone());
    // As router-small's disk: three 16 MiB files on 64 MiB (4 KiB blocks), and a
    // directory of 300 small files beside them.
    let tree = tmp.0.join("tree");
    std::fs::create_dir_all(tree.join("src")).unwrap();
    std::fs::create_dir_all(tree.join("small")).unwrap();
    for i in 1..=3u64 {
        std::fs::write(tree.join(format!("src/f{i}")), bytes(i, 16 << 20)).unwrap();
    }
    let small: Vec<(String, Vec<u8>)> = (0..300u64)
        .map(|i| {
            (
                format!("s{i:03}"),
                bytes(100 + i, 200 + (i as usize * 37) % 4000),
            )
        })
        .collect();
    for (name, data) in &small {
        std::fs::write(tree.join("small").join(name), data).unwrap();
    }
    let img = tmp.0.join("disk.img");
    File::create(&img).unwrap().set_len(64 << 20).unwrap();
    run(Command::new(tool("mke2fs"))
        .args(["-q", "-F", "-t", "ext4", "-b", "4096", "-d"])
        .arg(&tree)
        .arg(&img)
        .env("MKE2FS_CONFIG", "/etc/mke2fs.conf"));

    let mut v = Vfs::new(Box::new(MemFs::new(1 << 20, || 0)), "tmpfs");
    v.mkdir("/mnt", 0o755).unwrap();
    v.set_memory_low(memory_low);
    let opts = MountOptions {
        read_only: false,
        now: || 1_700_000_000,
    };
    let mut fs = Ext::mount(disk(&img, false), opts).expect("mount");
    fs.set_cache_bytes(MOUNT_CACHE);
    v.mount("/mnt", "/dev/xvdb", Box::new(fs) as BoxedFs)
        .expect("vfs mount");

    // 1. What is left of the heap after the mount: its caches' budget and a third
    //    of the boot heap more (the router's tables and the rest of the kernel
    //    take the other part). The copy cannot fit the disk (48 of 64 MiB used).
    let ((ok, out), refused) = limited(MOUNT_CACHE + (420 << 10), || {
        cp(&mut v, "/mnt/src", "/mnt/dst")
    });
    eprintln!(
        "1: cp -r ok={ok}, refused allocations {refused}, refused operations {}:\n{out}",
        v.refused_for_memory()
    );
    assert!(!ok, "48 MiB more cannot fit a 64 MiB disk");
    assert!(
        out.lines().all(|l| l.starts_with("cp: ")
            && (l.ends_with("No space left on device") || l.ends_with("Cannot allocate memory"))),
        "{out}"
    );
    let mut out = String::new();
    files::rm(&mut v, &["-r", "/mnt/dst"], &mut out).expect("rm -r the partial copy");

    // 2. Memory low from the start, with the caches full: the mounts give their
    //    caches back and the copy goes through in what that freed.
    let refused_before = v.refused_for_memory();
    let ((ok, out), _) = limited(LOW_WATER - (4 << 10), || {
        cp(&mut v, "/mnt/small", "/mnt/copy")
    });
    eprintln!("2: cp -r ok={ok}: {out}");
    assert!(ok, "{out}");
    assert_eq!(v.refused_for_memory(), refused_before);

    // 3. Memory low with nothing left to give back: the copy is refused for memory
    //    before anything is made, and it works once memory is back.
    v.shrink_all().expect("write-out");
    let ((ok, out), _) = limited(LOW_WATER - (4 << 10), || {
        cp(&mut v, "/mnt/small", "/mnt/copy2")
    });
    eprintln!("3: cp -r ok={ok}: {out}");
    assert!(!ok);
    assert_eq!(
        out.trim_end(),
        "cp: cannot create directory '/mnt/copy2': Cannot allocate memory"
    );
    assert!(v.refused_for_memory() > refused_before);
    assert!(
        v.resolve("/mnt/copy2").is_err(),
        "a refused mkdir made nothing"
    );
    let (ok, out) = cp(&mut v, "/mnt/small", "/mnt/copy2");
    assert!(ok, "{out}");
    drop(v.umount("/mnt").expect("umount"));

    // 4. Clean, and every file as it was and as it was copied.
    run(Command::new(tool("e2fsck")).arg("-fn").arg(&img));
    let back = tmp.0.join("back");
    std::fs::create_dir_all(&back).unwrap();
    for d in ["copy", "copy2", "small", "src"] {
        run(Command::new(tool("debugfs"))
            .arg("-R")
            .arg(format!("rdump /{d} {}", back.display()))
            .arg(&img));
    }
    for (name, data) in &small {
        for d in ["copy", "copy2", "small"] {
            let got = std::fs::read(back.join(d).join(name)).unwrap();
            assert!(got == *data, "/{d}/{name} differs");
        }
    }
    for i in 1..=3u64 {
        let got = std::fs::read(back.join(format!("src/f{i}"))).unwrap();
        assert!(got == bytes(i, 16 << 20), "/src/f{i} differs");
    }
    assert!(!back.join("dst").exists());
}
