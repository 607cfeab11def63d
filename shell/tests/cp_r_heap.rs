//! `bench files` on the host, for its heap: `cp -r` of 5,000 small files (100-4,099
//! bytes, 5 directories, as the benchmark's dom0 step makes them) from a read-only
//! ext4 image to a fresh ext4 image (256 MiB, 1 KiB blocks), both mounted in one
//! [`Vfs`] with the caches a 32 MiB guest gives each ext mount (a quarter of its
//! 7 MiB heap), then `sync`. A counting global allocator measures the live heap: in
//! the guest the copy ran its 7 MiB heap out, so the copy's peak must stay well
//! under that, and the heap must come back to where it was once both are unmounted.
//! The copy must also be right: `e2fsck -fn` clean and every file as in the source.

mod common;

use common::{
    check_copy, disk, make_images, make_tree, mount_ext, run, temp_dir, tool, DIRS, FILES,
};
use std::path::Path;
use std::process::Command;
use xenlet_fs::memfs::MemFs;
use xenlet_fs::vfs::Vfs;
use xenlet_shell::files;
use xenlet_testalloc::{live, peak, reset_peak};

xenlet_testalloc::count_test_heap!();

/// What the kernel's heap is in a 32 MiB guest, and what it gives each ext mount
/// for its caches (`kmain`: a quarter of the heap).
const GUEST_HEAP: usize = 7 << 20;
const MOUNT_CACHE: usize = GUEST_HEAP / 4;
/// What the copy may add to the live heap at its peak: both mounts' caches and
/// everything the copy itself holds, within the two mounts' budgets (3.5 MiB) with
/// room to spare (it was 2.6 MiB when this was written; before the inode cache
/// bounded new inodes too, 7.5 MiB, growing by about 1 KiB a file).
const PEAK_LIMIT: usize = 3 << 20;
/// What may stay allocated after both mounts are gone (the VFS's own slots).
const LEFT_LIMIT: usize = 16 << 10;

fn mount(v: &mut Vfs, img: &Path, at: &str, read_only: bool) {
    mount_ext(v, disk(img, read_only), at, read_only, MOUNT_CACHE);
}

#[test]
fn cp_r_of_5000_small_files_between_mounts_keeps_the_heap_bounded() {
    let tmp = temp_dir("heap");
    let tree = tmp.0.join("tree");
    let files = make_tree(&tree);
    let total: usize = files.iter().map(|(_, d)| d.len()).sum();
    let (src, dst) = make_images(&tmp.0, &tree);
    let info = run(Command::new(tool("dumpe2fs")).arg("-h").arg(&dst));
    assert!(
        info.lines()
            .any(|l| l.starts_with("Block size:") && l.ends_with(" 1024")),
        "{info}"
    );

    let mut v = Vfs::new(Box::new(MemFs::new(1 << 20, || 0)), "tmpfs");
    for d in ["/src", "/mnt"] {
        v.mkdir(d, 0o755).unwrap();
    }
    let before = live();
    reset_peak();
    mount(&mut v, &src, "/src", true);
    mount(&mut v, &dst, "/mnt", false);
    let mut out = String::new();
    let r = files::cp(&mut v, &["-r", "/src/files", "/mnt/"], &mut out);
    assert_eq!((r, out.as_str()), (Ok(()), ""));
    let after_cp = live() - before;
    v.sync_all().unwrap();
    let after_sync = live() - before;
    let copy_peak = (peak() - before).max(0) as usize;
    // Both mounts' state at its largest, the copy's and the caches'.
    for d in ["/mnt", "/src"] {
        drop(v.umount(d).unwrap());
    }
    let left = (live() - before).max(0) as usize;
    eprintln!(
        "cp -r of {FILES} files ({total} bytes), mount caches {MOUNT_CACHE} bytes each: \
         heap peak +{copy_peak} bytes, after cp +{after_cp}, after sync +{after_sync}, \
         after umount +{left}"
    );
    assert!(
        copy_peak < PEAK_LIMIT,
        "the copy's live heap peaked at {copy_peak} bytes (limit {PEAK_LIMIT})"
    );
    assert!(
        left < LEFT_LIMIT,
        "{left} bytes still allocated after both unmounts"
    );

    // The copy is right: e2fsck clean, every file there with its bytes.
    let back = tmp.0.join("back");
    check_copy(&dst, &back, &files);
    let copied: usize = (0..DIRS)
        .map(|d| {
            std::fs::read_dir(back.join(format!("files/d{d}")))
                .unwrap()
                .count()
        })
        .sum();
    assert_eq!(copied, FILES);
}
