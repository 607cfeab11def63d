//! The orphan list (`s_last_orphan`, linked through `i_dtime`) as a crashed Linux
//! leaves it: processed at a read-write mount (unlinked-while-open files freed,
//! interrupted truncates finished), hostile lists stopped and reported, read-only
//! mounts leaving the image untouched. Images are made with mke2fs and turned into
//! crash leftovers with debugfs (`unlink` drops the name but keeps the inode, `sif`
//! and `ssv` set the links, size, `i_dtime` and `s_last_orphan`).

mod common;

use common::*;
use std::fs;
use std::path::Path;
use std::process::Command;
use xenlet_fs::{Ext, FileSystem, FsError, MountOptions};

fn field(h: &str, key: &str) -> Option<String> {
    h.lines()
        .find(|l| l.starts_with(key))
        .map(|l| l[key.len()..].trim().to_string())
}

/// (free blocks, free inodes) from the superblock.
fn free_counts(img: &Path) -> (u64, u64) {
    let h = dumpe2fs_h(img);
    let n = |k| field(&h, k).unwrap().parse().unwrap();
    (n("Free blocks:"), n("Free inodes:"))
}

fn last_orphan(img: &Path) -> Option<String> {
    field(&dumpe2fs_h(img), "First orphan inode:")
}

fn state(img: &Path) -> String {
    field(&dumpe2fs_h(img), "Filesystem state:").unwrap()
}

fn in_use(img: &Path, ino: u32) -> bool {
    let out = String::from_utf8(debugfs(img, &format!("testi <{ino}>"))).unwrap();
    assert!(
        out.contains("is marked in use") || out.contains("is not in use"),
        "{out}"
    );
    out.contains("is marked in use")
}

fn ino_of(img: &Path, path: &str) -> u32 {
    let out = String::from_utf8(debugfs(img, &format!("stat {path}"))).unwrap();
    let rest = out
        .strip_prefix("Inode: ")
        .unwrap_or_else(|| panic!("{out}"));
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

fn sha256(data: &[u8], dir: &Path) -> String {
    let p = dir.join("sha-input");
    fs::write(&p, data).unwrap();
    let out = Command::new("sha256sum").arg(&p).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// An empty 64 MiB filesystem with 1 KiB blocks, its free counts, and a file of
/// `len` random bytes written by debugfs as `/name` (its inode and contents).
fn image_with_file(
    t: &TempDir,
    kind: &str,
    name: &str,
    len: usize,
) -> (std::path::PathBuf, (u64, u64), u32, Vec<u8>) {
    let img = t.path().join("img");
    mkfs(&img, kind, 1024, "64M", None, &[]);
    let before = free_counts(&img);
    let (ino, data) = add_file(&img, t, name, len, len as u64);
    (img, before, ino, data)
}

fn add_file(img: &Path, t: &TempDir, name: &str, len: usize, seed: u64) -> (u32, Vec<u8>) {
    let data = Rng(seed | 1).bytes(len);
    let host = t.path().join(format!("host-{name}"));
    fs::write(&host, &data).unwrap();
    debugfs_w(img, &format!("write {} {name}\n", host.display()));
    (ino_of(img, &format!("/{name}")), data)
}

/// What a crash after `unlink()` of an open file leaves: the name gone, the inode
/// with no links, on the orphan list.
fn orphan_unlinked(img: &Path, name: &str, ino: u32, next: u32) {
    debugfs_w(
        img,
        &format!("unlink /{name}\nsif <{ino}> links_count 0\nsif <{ino}> dtime {next}\n"),
    );
}

fn mount_rw(img: &Path) -> Ext<FileDisk> {
    Ext::mount(FileDisk::open(img), opts()).expect("mount")
}

fn unlinked_open_file_is_freed(kind: &str) {
    let t = TempDir::new(&format!("orphan-{kind}"));
    let (img, before, ino, _) = image_with_file(&t, kind, "f", 300_000);
    assert_ne!(free_counts(&img), before);
    orphan_unlinked(&img, "f", ino, 0);
    debugfs_w(&img, &format!("ssv last_orphan {ino}\n"));
    assert_eq!(last_orphan(&img), Some(ino.to_string()));
    let fs = mount_rw(&img);
    assert!(!fs.read_only());
    let o = fs.orphans().clone();
    assert_eq!(
        (o.deleted, o.truncated, o.error, o.skipped),
        (1, 0, None, None)
    );
    // On ext4 the cleanup went through the journal.
    assert_eq!(fs.journalled(), kind == "ext4");
    assert_eq!(fs.crash_stats().commits > 0, kind == "ext4");
    unmount_clean(fs, &img);
    assert_eq!(free_counts(&img), before, "blocks or the inode leaked");
    assert!(!in_use(&img, ino));
    assert_eq!(last_orphan(&img), None);
    assert_eq!(state(&img), "clean");
}

#[test]
fn unlinked_open_file_on_orphan_list_is_freed_at_mount_ext4() {
    unlinked_open_file_is_freed("ext4");
}

#[test]
fn unlinked_open_file_on_orphan_list_is_freed_at_mount_ext2() {
    unlinked_open_file_is_freed("ext2");
}

/// A list of two: an unlinked file (the head), linked through its `i_dtime` to a
/// file whose truncate was interrupted (links 1, `i_size` below its blocks).
#[test]
fn orphan_chain_frees_one_and_finishes_the_truncate_of_the_other() {
    for kind in ["ext4", "ext2"] {
        let (t, img) = fresh_image(&format!("orphan-chain-{kind}"), kind, 1024, "64M");
        let before = free_counts(&img);
        let (a, _) = add_file(&img, &t, "a", 250_000, 7);
        let (b, bdata) = add_file(&img, &t, "b", 200_000, 9);
        let keep = 70_000u64; // not a block multiple
        orphan_unlinked(&img, "a", a, b);
        debugfs_w(
            &img,
            &format!("sif <{b}> size {keep}\nsif <{b}> dtime 0\nssv last_orphan {a}\n"),
        );
        let fs = mount_rw(&img);
        let o = fs.orphans().clone();
        assert_eq!((o.deleted, o.truncated, o.error), (1, 1, None), "{kind}");
        unmount_clean(fs, &img);
        assert!(!in_use(&img, a));
        assert_eq!(last_orphan(&img), None);
        // b keeps its first 70000 bytes and 69 blocks (no tree blocks at this size).
        let kept_blocks = keep.div_ceil(1024);
        let extra = if kind == "ext2" { 1 } else { 0 }; // one indirect block
        assert_eq!(
            free_counts(&img),
            (before.0 - kept_blocks - extra, before.1 - 1),
            "{kind}"
        );
        let got = debugfs(&img, "cat /b");
        assert_eq!(got.len() as u64, keep);
        let want = &bdata[..keep as usize];
        assert_eq!(sha256(&got, t.path()), sha256(want, t.path()));
        let stat = String::from_utf8(debugfs(&img, "stat /b")).unwrap();
        assert!(stat.contains("Links: 1"), "{stat}");
        // Through Xenlet too, and growing it again reads zeros past the old end.
        let mut fs = mount_rw(&img);
        let ino = resolve(&mut fs, "/b").unwrap();
        assert_eq!(read_all(&mut fs, ino), want);
        fs.truncate(ino, keep + 1000).unwrap();
        let all = read_all(&mut fs, ino);
        assert!(all[keep as usize..].iter().all(|&x| x == 0));
        unmount_clean(fs, &img);
    }
}

/// Lists that cannot be followed: the mount neither panics nor hangs; it stops at
/// the bad link, drops the rest of the list, marks the filesystem as having errors
/// and stays read-write; `e2fsck -fy` then leaves a clean filesystem.
#[test]
fn hostile_orphan_lists_stop_and_mark_the_filesystem_with_errors() {
    // (what to do to the image given a good orphan-able file's inode, the error
    // expected, orphans deleted before it)
    type Setup = fn(&Path, u32) -> String;
    let cases: &[(&str, Setup, &str, u32)] = &[
        (
            "reserved",
            |_, _| "ssv last_orphan 1\n".into(),
            "out of range",
            0,
        ),
        (
            "past-count",
            |_, _| "ssv last_orphan 16385\n".into(),
            "out of range",
            0,
        ),
        (
            "huge",
            |_, _| "ssv last_orphan 4294967295\n".into(),
            "out of range",
            0,
        ),
        (
            "free-inode",
            |_, _| "ssv last_orphan 500\n".into(),
            "not in use",
            0,
        ),
        (
            "self-cycle-unlinked",
            |img, ino| {
                orphan_unlinked(img, "f", ino, ino);
                format!("ssv last_orphan {ino}\n")
            },
            "cycle",
            1,
        ),
        (
            "self-cycle-linked",
            |_, ino| format!("sif <{ino}> dtime {ino}\nssv last_orphan {ino}\n"),
            "cycle",
            0,
        ),
        (
            "next-out-of-range",
            |img, ino| {
                orphan_unlinked(img, "f", ino, 99_999);
                format!("ssv last_orphan {ino}\n")
            },
            "out of range",
            0,
        ),
    ];
    for &(name, setup, want, deleted) in cases {
        let t = TempDir::new(&format!("orphan-hostile-{name}"));
        let (img, _, ino, _) = image_with_file(&t, "ext4", "f", 20_000);
        let script = setup(&img, ino);
        debugfs_w(&img, &script);
        let mut fs = mount_rw(&img);
        assert!(!fs.read_only(), "{name}");
        let o = fs.orphans().clone();
        let err = o
            .error
            .unwrap_or_else(|| panic!("{name}: no error reported"));
        assert!(err.contains(want), "{name}: {err}");
        assert_eq!(o.deleted, deleted, "{name}");
        // Still usable.
        let root = fs.root();
        let n = fs.create(root, "after", 0o644).unwrap();
        fs.write(n, 0, b"ok").unwrap();
        fs.unmount().unwrap();
        drop(fs);
        assert_eq!(last_orphan(&img), None, "{name}");
        assert_eq!(state(&img), "clean with errors", "{name}");
        fsck_repair(&img, name);
        fsck_clean(&img);
        assert_eq!(debugfs(&img, "cat /after"), b"ok");
    }
}

/// A list that runs into a cycle after a tail: a -> b -> c -> d -> b. Found without a
/// set of the inodes seen (Brent's algorithm over the links): a, b, c and d are
/// freed, and the walk stops where b would come round again.
#[test]
fn a_cycle_after_a_tail_is_found_where_it_closes() {
    let (t, img) = fresh_image("orphan-tail-cycle", "ext4", 1024, "64M");
    let inos: Vec<u32> = ["a", "b", "c", "d"]
        .iter()
        .enumerate()
        .map(|(i, n)| add_file(&img, &t, n, 5000 + i * 1000, i as u64 + 3).0)
        .collect();
    let next = [inos[1], inos[2], inos[3], inos[1]];
    for (i, n) in ["a", "b", "c", "d"].iter().enumerate() {
        orphan_unlinked(&img, n, inos[i], next[i]);
    }
    debugfs_w(&img, &format!("ssv last_orphan {}\n", inos[0]));
    let mut fs = mount_rw(&img);
    let o = fs.orphans().clone();
    let err = o.error.expect("no error reported");
    assert!(
        err.contains(&format!("inode {} twice (a cycle)", inos[1])),
        "{err}"
    );
    assert_eq!(o.deleted, 4);
    fs.unmount().unwrap();
    drop(fs);
    assert_eq!(last_orphan(&img), None);
    for &i in &inos {
        assert!(!in_use(&img, i));
    }
    fsck_repair(&img, "orphans freed");
    fsck_clean(&img);
}

/// A filesystem already marked as having errors: the list is left to e2fsck.
#[test]
fn orphan_list_on_filesystem_with_errors_is_left_alone() {
    let t = TempDir::new("orphan-errors");
    let (img, _, ino, _) = image_with_file(&t, "ext4", "f", 20_000);
    orphan_unlinked(&img, "f", ino, 0);
    debugfs_w(&img, &format!("ssv last_orphan {ino}\nssv state 3\n"));
    let mut fs = mount_rw(&img);
    assert!(fs.orphans().skipped.is_some());
    assert_eq!(fs.orphans().deleted, 0);
    fs.unmount().unwrap();
    drop(fs);
    assert_eq!(last_orphan(&img), Some(ino.to_string()));
    assert!(in_use(&img, ino));
}

/// A read-only mount (by option or because the device is read-only) writes nothing,
/// orphans or not: the image stays byte for byte the same.
#[test]
fn read_only_mount_with_orphans_leaves_the_image_unchanged() {
    let t = TempDir::new("orphan-ro");
    let (img, _, ino, data) = image_with_file(&t, "ext4", "f", 300_000);
    let (b, _) = add_file(&img, &t, "b", 50_000, 3);
    orphan_unlinked(&img, "f", ino, b);
    debugfs_w(
        &img,
        &format!("sif <{b}> size 1000\nssv last_orphan {ino}\n"),
    );
    let orig = fs::read(&img).unwrap();
    for dev_ro in [false, true] {
        let mut disk = FileDisk::open(&img);
        disk.read_only = dev_ro;
        let o = MountOptions {
            read_only: !dev_ro,
            ..opts()
        };
        let mut fs = Ext::mount(disk, o).unwrap();
        assert!(fs.read_only());
        assert!(fs.orphans().skipped.is_some());
        let root = fs.root();
        let bi = fs.lookup(root, "b").unwrap();
        assert_eq!(fs.stat(bi).unwrap().size, 1000);
        assert_eq!(fs.create(root, "x", 0o644), Err(FsError::ReadOnly));
        // The orphan is still readable by inode number.
        assert_eq!(read_all(&mut fs, u64::from(ino)), data);
        fs.unmount().unwrap();
        drop(fs);
        assert!(
            fs::read(&img).unwrap() == orig,
            "device read-only: {dev_ro}"
        );
    }
}

/// ext4's `orphan_file`: an empty one is left alone (Xenlet never adds to it); one
/// with entries (`orphan_present`) makes the mount read-only.
#[test]
fn orphan_file_feature_is_left_alone_and_orphan_present_mounts_read_only() {
    let (_t, img) = fresh_image_with("orphan-file", "ext4", 1024, "64M", &["-O", "orphan_file"]);
    assert!(dumpe2fs_h(&img).contains("orphan_file"));
    let mut fs = mount_rw(&img);
    assert!(!fs.read_only());
    let root = fs.root();
    let f = fs.create(root, "f", 0o644).unwrap();
    fs.write(f, 0, &[7u8; 5000]).unwrap();
    fs.unlink(root, "f").unwrap();
    let g = fs.create(root, "g", 0o644).unwrap();
    fs.write(g, 0, b"g").unwrap();
    unmount_clean(fs, &img);
    debugfs_w(&img, "feature orphan_present\n");
    let orig = fs::read(&img).unwrap();
    let mut fs = mount_rw(&img);
    assert!(fs.read_only());
    assert_eq!(fs.create(root, "x", 0o644), Err(FsError::ReadOnly));
    fs.unmount().unwrap();
    drop(fs);
    assert!(fs::read(&img).unwrap() == orig);
}

/// A crash at any write of the mount that processes the orphan list. ext4 (the
/// cleanup goes through the journal): the next mount replays the log and finishes
/// the list; after it e2fsck is clean and everything the orphans held is free.
/// ext2 (ordered writes, no journal): as for any crash there, what is left is for
/// `e2fsck -p` to repair (free counts, or a list naming an inode already freed in
/// its bitmap, which the next mount reports as an error) with nothing lost.
#[test]
fn crash_during_orphan_cleanup_is_finished_by_the_next_mount() {
    for kind in ["ext4", "ext2"] {
        let (t, img) = fresh_image(&format!("orphan-crash-{kind}"), kind, 1024, "16M");
        let before = free_counts(&img);
        let (a, _) = add_file(&img, &t, "a", 150_000, 5);
        let (b, _) = add_file(&img, &t, "b", 100_000, 6);
        orphan_unlinked(&img, "a", a, b);
        orphan_unlinked(&img, "b", b, 0);
        debugfs_w(&img, &format!("ssv last_orphan {a}\n"));
        let orig = fs::read(&img).unwrap();
        let mut fs = Ext::mount(RecDisk::new(orig.clone()), opts()).unwrap();
        assert_eq!(fs.orphans().deleted, 2);
        fs.unmount().unwrap();
        let writes = fs.into_device().log.take().writes;
        assert!(writes.len() > 3, "{kind}: {} writes", writes.len());
        let mut needed_y = 0;
        for n in 0..=writes.len() {
            let mut crashed = orig.clone();
            for (off, data, _) in &writes[..n] {
                crashed[*off as usize..*off as usize + data.len()].copy_from_slice(data);
            }
            fs::write(&img, &crashed).unwrap();
            let mut fs = mount_rw(&img);
            if kind == "ext4" {
                assert!(fs.orphans().error.is_none(), "{kind} crash at {n}");
            }
            fs.unmount().unwrap();
            drop(fs);
            if kind == "ext2" {
                let fsck = |arg: &str| matches!(e2fsck(&img, &[arg]).0, 0..=1);
                if !fsck("-fp") {
                    needed_y += 1;
                    assert!(fsck("-fy"), "{kind} crash at {n}: e2fsck -fy failed");
                }
            }
            fsck_clean(&img);
            assert_eq!(free_counts(&img), before, "{kind} crash at {n}");
            assert_eq!(last_orphan(&img), None);
        }
        eprintln!(
            "{kind}: {} crash points, {needed_y} needed e2fsck -y",
            writes.len() + 1
        );
        if kind == "ext4" {
            assert_eq!(needed_y, 0);
        }
    }
}
