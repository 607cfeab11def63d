//! htree directories grown by Xenlet (issue 30, defect 8), as Linux's
//! `ext4_dx_add_entry`: a directory Xenlet creates is indexed once it outgrows its
//! first block (`make_indexed_dir`), full leaves are split and the index grows a
//! level below the root, so a directory of 10,000 names stays indexed (debugfs
//! shows the levels), e2fsck finds it clean (index, leaf and `dx_tail` checksums)
//! and every name is found through the index; an index made by e2fsprogs is grown
//! past leaf splits the same way, never made linear.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use xenlet_fs::{Ext, FileSystem, FsError};

fn name(i: usize) -> String {
    // Lengths vary (records of 16 to 40 bytes), so splits move unequal counts.
    format!("f{i}-{}", "x".repeat(i % 23))
}

/// `debugfs htree <dir>`: the index's indirect levels and how many leaves it lists.
fn htree_levels(img: &Path, dir: &str) -> (u32, usize) {
    let out = String::from_utf8_lossy(&debugfs(img, &format!("htree {dir}"))).into_owned();
    let levels = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Indirect levels: "))
        .unwrap_or_else(|| panic!("no htree index on {dir}: {out}"))
        .trim()
        .parse()
        .unwrap();
    let leaves = out.matches("Reading directory block").count();
    (levels, leaves)
}

fn flags(img: &Path, path: &str) -> String {
    let st = String::from_utf8_lossy(&debugfs(img, &format!("stat {path}"))).into_owned();
    st.lines()
        .find(|l| l.contains("Flags:"))
        .unwrap_or("")
        .to_string()
}

/// Asserts that `path` is an indexed directory (`EXT4_INDEX_FL` beside the extents
/// flag), `what` saying which.
fn assert_indexed(img: &Path, path: &str, what: &str) {
    let f = flags(img, path);
    assert!(f.contains("0x81000"), "{what}: {f}");
}

fn image(t: &TempDir, bs: u32, extra: &[&str]) -> PathBuf {
    let img = t.path().join("img");
    let mut args = vec!["-N", "24000"];
    args.extend_from_slice(extra);
    mkfs(&img, "ext4", bs, "96M", None, &args);
    img
}

/// Creates the files `name(i)` of `range` in `dir`, `i % 7` bytes each (the sizes
/// [`check_names`] expects).
fn create_names<F: FileSystem>(fs: &mut F, dir: u64, range: std::ops::Range<usize>) {
    for i in range {
        let ino = fs.create(dir, &name(i), 0o644).unwrap();
        if i % 7 != 0 {
            fs.write(ino, 0, &vec![b'a'; i % 7]).unwrap();
        }
    }
}

/// Looks every name up; `gone` are expected absent.
fn check_names<F: FileSystem>(fs: &mut F, dir: u64, n: usize, gone: &dyn Fn(usize) -> bool) {
    for i in 0..n {
        match fs.lookup(dir, &name(i)) {
            Ok(ino) => {
                assert!(!gone(i), "{} found after unlink", name(i));
                assert_eq!(fs.stat(ino).unwrap().size, (i % 7) as u64, "{}", name(i));
            }
            Err(FsError::NotFound) => assert!(gone(i), "{} not found", name(i)),
            Err(e) => panic!("lookup {}: {e}", name(i)),
        }
    }
}

fn grow_big_directory(bs: u32, extra: &[&str], want_levels: u32) {
    const N: usize = 10_000;
    let t = TempDir::new("htree-grow");
    let img = image(&t, bs, extra);
    {
        let mut fs = mount(&img);
        let root = fs.root();
        let big = fs.mkdir(root, "big", 0o755).unwrap();
        create_names(&mut fs, big, 0..N);
        check_names(&mut fs, big, N, &|_| false);
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    assert_indexed(&img, "/big", "not indexed");
    let (levels, leaves) = htree_levels(&img, "/big");
    assert_eq!(levels, want_levels, "{bs}-byte blocks");
    assert!(leaves > N / (bs as usize / 24), "{leaves} leaves");
    // Every name through a fresh mount (the index as read from disk), some deleted.
    let gone = |i: usize| i % 97 == 5;
    {
        let mut fs = mount(&img);
        let big = resolve(&mut fs, "big").unwrap();
        check_names(&mut fs, big, N, &|_| false);
        for i in (0..N).filter(|&i| gone(i)) {
            fs.unlink(big, &name(i)).unwrap();
        }
        check_names(&mut fs, big, N, &gone);
        // And added back, into the leaves they hash to.
        for i in (0..N).filter(|&i| gone(i) && i % 2 == 0) {
            let ino = fs.create(big, &name(i), 0o644).unwrap();
            fs.write(ino, 0, &vec![b'b'; i % 7]).unwrap();
        }
        check_names(&mut fs, big, N, &|i| gone(i) && i % 2 == 1);
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    assert_indexed(&img, "/big", "not indexed");
    assert_eq!(htree_levels(&img, "/big").0, want_levels);
    let mut fs = mount(&img);
    let big = resolve(&mut fs, "big").unwrap();
    check_names(&mut fs, big, N, &|i| gone(i) && i % 2 == 1);
}

/// 1 KiB blocks: 10,000 names need more leaves than the root holds (123): a level
/// of index nodes below it.
#[test]
fn ten_thousand_names_1k_blocks_two_levels() {
    grow_big_directory(1024, &[], 1);
}

/// 4 KiB blocks: the root (507 entries) indexes every leaf.
#[test]
fn ten_thousand_names_4k_blocks() {
    grow_big_directory(4096, &[], 0);
}

/// Without metadata_csum (no tails, no dx_tail): limits one entry larger.
#[test]
fn ten_thousand_names_without_metadata_csum() {
    grow_big_directory(1024, &["-O", "^metadata_csum"], 1);
}

/// A small directory Xenlet makes is indexed as soon as it outgrows one block, as
/// Linux does, and stays one block (linear) until then.
#[test]
fn new_directory_is_indexed_past_one_block() {
    let t = TempDir::new("htree-small");
    let img = image(&t, 1024, &[]);
    let mut fs = mount(&img);
    let root = fs.root();
    let d = fs.mkdir(root, "d", 0o755).unwrap();
    let mut i = 0;
    while fs.stat(d).unwrap().size == 1024 {
        fs.create(d, &name(i), 0o644).unwrap();
        i += 1;
    }
    // Block 0 became the dx root, its names moved to block 1.
    assert_eq!(fs.stat(d).unwrap().size, 2 * 1024, "root and one leaf");
    fs.sync().unwrap();
    fsck_clean(&img);
    assert!(
        flags(&img, "/d").contains("0x81000"),
        "{}",
        flags(&img, "/d")
    );
    assert_eq!(htree_levels(&img, "/d"), (0, 1));
    // That leaf, once full, is split in two.
    while fs.stat(d).unwrap().size == 2 * 1024 {
        fs.create(d, &name(i), 0o644).unwrap();
        i += 1;
    }
    unmount_clean(fs, &img);
    assert_eq!(htree_levels(&img, "/d"), (0, 2));
    let mut fs = mount(&img);
    let d = resolve(&mut fs, "d").unwrap();
    for k in 0..i {
        fs.lookup(d, &name(k)).unwrap();
    }
}

/// A directory mke2fs -d wrote and e2fsck -D indexed (its leaves packed full) grows
/// through leaf splits and index nodes, staying indexed.
#[test]
fn e2fsprogs_index_grows_past_leaf_splits() {
    const OLD: usize = 1500;
    const NEW: usize = 3000;
    let (_t, img) = tree_image("htree-e2fs-grow", "ext4", 1024, "32M", |src| {
        std::fs::create_dir_all(src.join("big")).unwrap();
        for i in 0..OLD {
            std::fs::write(src.join("big").join(name(i)), vec![b'a'; i % 7]).unwrap();
        }
    });
    fsck_index_dirs(&img);
    fsck_clean(&img);
    assert_indexed(&img, "/big", "not indexed");
    let (_, leaves_before) = htree_levels(&img, "/big");
    {
        let mut fs: Ext<FileDisk> = mount(&img);
        let big = resolve(&mut fs, "big").unwrap();
        create_names(&mut fs, big, OLD..OLD + NEW);
        check_names(&mut fs, big, OLD + NEW, &|_| false);
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    assert_indexed(&img, "/big", "de-indexed");
    let (levels, leaves) = htree_levels(&img, "/big");
    assert_eq!(levels, 1);
    assert!(leaves > leaves_before * 2, "{leaves_before} -> {leaves}");
    let mut fs = mount(&img);
    let big = resolve(&mut fs, "big").unwrap();
    check_names(&mut fs, big, OLD + NEW, &|_| false);
}
