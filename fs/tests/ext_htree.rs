//! htree index blocks under metadata_csum: a directory indexed by e2fsprogs (two
//! levels: a dx root and interior dx nodes, 1 KiB blocks) is looked up and grown
//! through the index, whose `dx_tail` checksums must verify; an index block whose
//! checksum fails is not trusted: lookups scan the directory linearly (and so still
//! find every name, even when the damaged index points elsewhere), changes to that
//! directory are refused, and nothing of it is rewritten.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use xenlet_fs::{Ext, FileSystem, FsError, MountOptions};

const NAMES: usize = 2000;
const BS: usize = 1024;

fn name(i: usize) -> String {
    format!("a-rather-long-file-name-to-fill-the-leaves-{i:05}")
}

/// Files with contents (the rest are empty).
fn content(i: usize) -> Vec<u8> {
    Rng(i as u64 + 1).bytes(100 + 37 * i)
}

const WITH_DATA: [usize; 4] = [0, 7, 1234, 1999];

/// An ext4 image (metadata_csum, 1 KiB blocks) made with `mke2fs -d`, with /big a
/// directory of `NAMES` entries indexed by `e2fsck -fyD` (mke2fs -d writes it linear).
fn indexed_image(t: &TempDir) -> PathBuf {
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("big")).unwrap();
    std::fs::create_dir_all(src.join("other")).unwrap();
    for i in 0..NAMES {
        let data = if WITH_DATA.contains(&i) {
            content(i)
        } else {
            Vec::new()
        };
        std::fs::write(src.join("big").join(name(i)), data).unwrap();
    }
    let img = t.path().join("img");
    mkfs(&img, "ext4", BS as u32, "16M", Some(&src), &[]);
    fsck_index_dirs(&img);
    fsck_clean(&img);
    let st = String::from_utf8_lossy(&debugfs(&img, "stat /big")).into_owned();
    assert!(st.contains("Flags: 0x81000"), "/big is not indexed: {st}");
    assert!(
        String::from_utf8_lossy(&debugfs(&img, "features")).contains("metadata_csum"),
        "no metadata_csum"
    );
    img
}

/// The logical blocks the dx root of /big points at (its interior nodes: the tree has
/// one indirect level), from `debugfs htree`.
fn dx_nodes(img: &Path) -> Vec<u64> {
    let out = String::from_utf8_lossy(&debugfs(img, "htree /big")).into_owned();
    assert!(out.contains("Indirect levels: 1"), "{out}");
    let root = out.split("\n\n").next().unwrap();
    let v: Vec<u64> = root
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Entry #"))
        .map(|l| l.rsplit("block ").next().unwrap().trim().parse().unwrap())
        .collect();
    assert!(v.len() >= 2, "{out}");
    v
}

/// The physical block of logical block `lblk` of /big.
fn phys(img: &Path, lblk: u64) -> u64 {
    let out = debugfs(img, &format!("bmap /big {lblk}"));
    String::from_utf8_lossy(&out).trim().parse().unwrap()
}

fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

fn le16(b: &[u8], off: usize) -> usize {
    u16::from_le_bytes(b[off..off + 2].try_into().unwrap()) as usize
}

/// Applies `f` to the bytes of block `pblk` of the image file.
fn edit_block(img: &Path, pblk: u64, f: impl FnOnce(&mut [u8])) {
    let mut data = std::fs::read(img).unwrap();
    let s = pblk as usize * BS;
    f(&mut data[s..s + BS]);
    std::fs::write(img, data).unwrap();
}

/// The bytes of every block of /big, in logical order.
fn dir_bytes(img: &Path) -> Vec<u8> {
    let data = std::fs::read(img).unwrap();
    let blocks = String::from_utf8_lossy(&debugfs(img, "blocks /big")).into_owned();
    blocks
        .split_whitespace()
        .flat_map(|b| {
            let b: usize = b.parse().unwrap();
            data[b * BS..(b + 1) * BS].to_vec()
        })
        .collect()
}

/// Every name of /big resolves (to a file with the right contents, for those that
/// have some) through `fs`.
fn all_found<F: FileSystem>(fs: &mut F) {
    let big = resolve(fs, "big").unwrap();
    for i in 0..NAMES {
        let ino = fs
            .lookup(big, &name(i))
            .unwrap_or_else(|e| panic!("lookup {}: {e}", name(i)));
        if WITH_DATA.contains(&i) {
            assert!(read_all(fs, ino) == content(i), "{} differs", name(i));
        }
    }
}

#[test]
fn indexed_directory_checksums_verify() {
    let t = TempDir::new("htree-csum-ok");
    let img = indexed_image(&t);
    dx_nodes(&img);
    let mut fs = mount(&img);
    all_found(&mut fs);
    assert_eq!(fs.stats.dx_csum_errors, 0);
    // New names go into the leaves the (verified) index selects: refused if any index
    // block on the way failed its checksum.
    let big = resolve(&mut fs, "big").unwrap();
    for i in 0..20 {
        fs.create(big, &format!("new-{i}"), 0o644).unwrap();
    }
    fs.unlink(big, &name(3)).unwrap();
    assert_eq!(fs.stats.dx_csum_errors, 0);
    unmount_clean(fs, &img);
    let st = String::from_utf8_lossy(&debugfs(&img, "stat /big")).into_owned();
    assert!(st.contains("Flags: 0x81000"), "index dropped: {st}");
}

/// An index larger than the mount keeps flattened (an eighth of a 4 KiB budget: 64
/// leaves, and /big has over 100) is followed from the root at each lookup: every
/// name is found, new names go where the index says, a damaged node is caught.
#[test]
fn an_index_too_large_to_keep_is_followed_per_lookup() {
    let t = TempDir::new("htree-walk");
    let img = indexed_image(&t);
    let leaves = String::from_utf8_lossy(&debugfs(&img, "htree /big"))
        .lines()
        .filter(|l| l.trim_start().starts_with("Entry #") && l.contains("block"))
        .count();
    assert!(leaves > 64 + dx_nodes(&img).len(), "{leaves} index entries");
    let mut fs = mount(&img);
    fs.set_cache_bytes(4 << 10);
    all_found(&mut fs);
    assert_eq!(fs.stats.dx_csum_errors, 0);
    let big = resolve(&mut fs, "big").unwrap();
    assert_eq!(fs.lookup(big, "no-such-name"), Err(FsError::NotFound));
    for i in 0..20 {
        fs.create(big, &format!("new-{i}"), 0o644).unwrap();
    }
    fs.unlink(big, "new-0").unwrap();
    for i in 1..20 {
        fs.lookup(big, &format!("new-{i}")).unwrap();
    }
    assert_eq!(fs.lookup(big, "new-0"), Err(FsError::NotFound));
    unmount_clean(fs, &img);
    let st = String::from_utf8_lossy(&debugfs(&img, "stat /big")).into_owned();
    assert!(st.contains("Flags: 0x81000"), "index dropped: {st}");
    // A damaged interior node on the way is not followed either.
    let node = phys(&img, dx_nodes(&img)[0]);
    edit_block(&img, node, |b| {
        let limit = le16(b, 8);
        b[8 + 8 * limit + 4] ^= 0x10;
    });
    let mut fs = mount(&img);
    fs.set_cache_bytes(4 << 10);
    all_found(&mut fs);
    assert!(fs.stats.dx_csum_errors >= 1, "{:?}", fs.stats);
    let big = resolve(&mut fs, "big").unwrap();
    assert!(matches!(
        fs.create(big, "refused", 0o644),
        Err(FsError::Corrupt(_))
    ));
}

/// What a mount of an image whose /big index fails its checksum must do: find every
/// name (by a linear scan), count the bad block, refuse changes to /big (and leave its
/// blocks as they were), and still change other directories.
fn check_untrusted(img: &Path) {
    let before = dir_bytes(img);
    let mut ro = Ext::mount(
        FileDisk::open(img),
        MountOptions {
            read_only: true,
            now: || 1_700_000_000,
        },
    )
    .unwrap();
    all_found(&mut ro);
    assert!(ro.stats.dx_csum_errors >= 1, "{:?}", ro.stats);
    drop(ro);

    let mut fs = mount(img);
    all_found(&mut fs);
    assert!(fs.stats.dx_csum_errors >= 1, "{:?}", fs.stats);
    let root = fs.root();
    let big = resolve(&mut fs, "big").unwrap();
    assert_eq!(fs.lookup(big, "no-such-name"), Err(FsError::NotFound));
    assert!(matches!(
        fs.create(big, "new-name", 0o644),
        Err(FsError::Corrupt(_))
    ));
    assert!(matches!(
        fs.mkdir(big, "new-dir", 0o755),
        Err(FsError::Corrupt(_))
    ));
    assert!(matches!(fs.unlink(big, &name(5)), Err(FsError::Corrupt(_))));
    assert!(matches!(
        fs.rename(big, &name(6), root, "moved-out"),
        Err(FsError::Corrupt(_))
    ));
    // Moving /big itself would rewrite its "..", which de-indexes it: refused too.
    let other = fs.lookup(root, "other").unwrap();
    assert!(matches!(
        fs.rename(root, "big", other, "big"),
        Err(FsError::Corrupt(_))
    ));
    // Elsewhere the filesystem works.
    fs.create(root, "fine", 0o644).unwrap();
    fs.lookup(big, &name(5)).unwrap();
    fs.sync().unwrap();
    fs.unmount().unwrap();
    assert!(dir_bytes(img) == before, "/big was rewritten");
    assert!(debugfs(img, "ls /").windows(4).any(|w| w == b"fine"));
}

/// Only the checksum of an interior node is damaged: `e2fsck -fn` objects, and so do
/// we (the index is not followed, nothing of /big is changed).
#[test]
fn bad_dx_node_checksum_is_not_trusted() {
    let t = TempDir::new("htree-csum-node");
    let img = indexed_image(&t);
    let node = phys(&img, dx_nodes(&img)[0]);
    edit_block(&img, node, |b| {
        let limit = le16(b, 8);
        b[8 + 8 * limit + 4] ^= 0x10; // dt_checksum
    });
    assert_ne!(e2fsck(&img, &["-fn"]).0, 0, "e2fsck -fn accepts the damage");
    check_untrusted(&img);
}

/// The index itself is damaged, its checksums left stale: two leaf pointers of an
/// interior node swapped, and a root entry's hash changed so that names of the second
/// node's range go to the first. Followed blindly, the index sends lookups of those
/// names to the wrong leaves (not found); verified, it is not followed and every name
/// is found.
#[test]
fn misleading_index_is_caught_by_its_checksum() {
    let t = TempDir::new("htree-csum-entries");
    let img = indexed_image(&t);
    let nodes = dx_nodes(&img);
    // Interior node: swap the leaves of entries 1 and 2.
    edit_block(&img, phys(&img, nodes[0]), |b| {
        let (e1, e2) = (8 + 8 + 4, 8 + 16 + 4);
        let (l1, l2) = (le32(b, e1), le32(b, e2));
        b[e1..e1 + 4].copy_from_slice(&l2.to_le_bytes());
        b[e2..e2 + 4].copy_from_slice(&l1.to_le_bytes());
    });
    check_untrusted(&img);

    let t2 = TempDir::new("htree-csum-root");
    let img2 = indexed_image(&t2);
    // Root: entry 1 (the second node) starts at 0xfffffffe instead.
    edit_block(&img2, phys(&img2, 0), |b| {
        assert_eq!(le16(b, 0x22), nodes.len(), "root count");
        b[0x28..0x2C].copy_from_slice(&0xffff_fffeu32.to_le_bytes());
    });
    check_untrusted(&img2);
}

/// SHA-256 (hex) of a file, by coreutils' sha256sum.
fn sha256(path: &Path) -> String {
    let o = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("run sha256sum");
    assert!(o.status.success(), "sha256sum {}", path.display());
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// An indexed directory that Xenlet grows past full leaves (split, the index kept:
/// issue 30, defect 8) and shrinks: `e2fsck -fn` is clean, `debugfs ls -l` lists exactly the names it should,
/// and files old and new read back (through `debugfs dump`) with the right SHA-256.
#[test]
fn grown_directory_reads_back_with_debugfs() {
    let t = TempDir::new("htree-deindex");
    let img = indexed_image(&t);
    let mut want: std::collections::BTreeSet<String> = (0..NAMES).map(name).collect();
    let mut files: Vec<(String, Vec<u8>)> =
        WITH_DATA.iter().map(|&i| (name(i), content(i))).collect();
    {
        let mut fs = mount(&img);
        let big = resolve(&mut fs, "big").unwrap();
        for i in 0..400 {
            let n = format!("added-{i:04}-{}", "z".repeat(i % 50));
            let ino = fs.create(big, &n, 0o644).unwrap();
            if i % 97 == 0 {
                let data = Rng(0xadd + i as u64).bytes(3000 + i * 11);
                assert_eq!(fs.write(ino, 0, &data).unwrap(), data.len());
                files.push((n.clone(), data));
            }
            want.insert(n);
        }
        // Removing: every third original name (but those with contents).
        for i in (1..NAMES).step_by(3).filter(|i| !WITH_DATA.contains(i)) {
            fs.unlink(big, &name(i)).unwrap();
            want.remove(&name(i));
        }
        assert_eq!(fs.stats.dx_csum_errors, 0);
        fs.unmount().unwrap();
    }
    let st = String::from_utf8_lossy(&debugfs(&img, "stat /big")).into_owned();
    assert!(st.contains("Flags: 0x81000"), "/big was made linear: {st}");
    fsck_clean(&img);
    let ls = String::from_utf8_lossy(&debugfs(&img, "ls -l /big")).into_owned();
    // " 1875  100644 (1)  0  0  0  3-Dec-2026 17:39 NAME"; debugfs also shows unused
    // records (inode 0: names removed from the start of a block, index blocks).
    let live: Vec<String> = ls
        .lines()
        .filter(|l| l.split_whitespace().next().is_some_and(|i| i != "0"))
        .filter_map(|l| l.split_whitespace().last())
        .filter(|n| *n != "." && *n != "..")
        .map(String::from)
        .collect();
    let listed: std::collections::BTreeSet<String> = live.iter().cloned().collect();
    assert_eq!(live.len(), listed.len(), "a name listed twice");
    let extra: Vec<_> = listed.difference(&want).take(10).collect();
    let missing: Vec<_> = want.difference(&listed).take(10).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "debugfs ls -l /big: {} names, {} expected; extra {extra:?}, missing {missing:?}",
        listed.len(),
        want.len()
    );
    for (n, data) in &files {
        let expect = t.path().join("expect");
        std::fs::write(&expect, data).unwrap();
        let got = t.path().join("got");
        let _ = std::fs::remove_file(&got);
        debugfs(&img, &format!("dump /big/{n} {}", got.display()));
        assert_eq!(sha256(&got), sha256(&expect), "/big/{n}");
    }
    // And e2fsck can rebuild its index.
    fsck_index_dirs(&img);
    fsck_clean(&img);
    let mut fs = mount(&img);
    let big = resolve(&mut fs, "big").unwrap();
    for n in &want {
        fs.lookup(big, n).unwrap();
    }
    assert_eq!(fs.stats.dx_csum_errors, 0);
}

/// Issue 30, defect 8: an indexed directory moved into another directory keeps its
/// index (its ".." is changed in the root and the root's `dx_tail` sealed again, as
/// Linux does), e2fsck is clean, and every name is still found through the index.
#[test]
fn cross_directory_rename_keeps_the_index() {
    let t = TempDir::new("htree-move");
    let img = indexed_image(&t);
    {
        let mut fs = mount(&img);
        let root = fs.root();
        let other = resolve(&mut fs, "other").unwrap();
        fs.rename(root, "big", other, "big").unwrap();
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    let st = String::from_utf8_lossy(&debugfs(&img, "stat /other/big")).into_owned();
    assert!(
        st.contains("Flags: 0x81000") || st.contains("Flags: 0x1000"),
        "index dropped: {st}"
    );
    let ht = String::from_utf8_lossy(&debugfs(&img, "htree /other/big")).into_owned();
    assert!(ht.contains("Root node dump"), "{ht}");
    let mut fs = mount(&img);
    let big = resolve(&mut fs, "other/big").unwrap();
    for i in (0..NAMES).step_by(7) {
        fs.lookup(big, &name(i)).unwrap();
    }
    let other = resolve(&mut fs, "other").unwrap();
    assert_eq!(fs.lookup(big, "..").unwrap(), other);
    fs.unmount().unwrap();
}
