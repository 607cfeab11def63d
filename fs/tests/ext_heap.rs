//! Heap bounds against large or hostile disks (issue 28 item 9): what an image sizes
//! (a directory, a file's map, the group descriptors, the journal, the caches' floors)
//! must not grow the heap without a bound; nor may a tmpfs hold more than its limit. In the guest a failed infallible
//! allocation aborts everything, so these tests run under a limiting allocator: an
//! allocation past the limit gets a null pointer, which aborts an infallible one (the
//! test binary dies) and is `FsError::NoMemory` for a fallible one. Passing under a
//! limit shows the path is bounded and fallible; the peak is checked too.
//!
//! The allocator counts each thread's allocations apart (a test's filesystem runs on
//! its own thread), and the tests take a lock and run their limited parts one at a
//! time.

mod common;

use common::*;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use xenlet_fs::journal::ReplayStats;
use xenlet_fs::{Ext, FileSystem, FsError};

// `xenlet_testalloc`'s allocator: the system allocator, counting live bytes and their
// high-water mark, and refusing (a null pointer, as a full kernel heap does) what
// would take the live bytes past [`Heap::limit`]. The counters are the thread's own: a test's setup on another
// thread (an image's data, a child process's output) neither counts against the
// limit of the test under it nor is refused by it.
xenlet_testalloc::count_test_heap!();

/// One test at a time (the counters are global); lifts any limit when dropped.
struct Heap {
    _lock: MutexGuard<'static, ()>,
}

impl Heap {
    fn take() -> Heap {
        static LOCK: Mutex<()> = Mutex::new(());
        static HOOK: std::sync::Once = std::sync::Once::new();
        // A failing assertion under a limit must not run out of heap printing itself
        // (the backtrace's symbols take megabytes, and OOM there deadlocks).
        HOOK.call_once(|| {
            let print = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                xenlet_testalloc::lift_limit();
                print(info)
            }));
        });
        let g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        xenlet_testalloc::lift_limit();
        Heap { _lock: g }
    }
    /// Live bytes now.
    fn live(&self) -> isize {
        xenlet_testalloc::live()
    }
    /// Refuses allocations past `bytes` more than are live now; starts a new peak.
    fn limit(&self, bytes: usize) -> isize {
        xenlet_testalloc::set_limit(bytes)
    }
    /// The high-water mark since [`Heap::limit`], above `base`.
    fn peak_above(&self, base: isize) -> usize {
        usize::try_from(xenlet_testalloc::peak().saturating_sub(base)).unwrap_or(0)
    }
    /// Allocations and reallocations asked for so far on this thread.
    fn count(&self) -> u64 {
        xenlet_testalloc::allocations() as u64
    }
    fn unlimit(&self) {
        xenlet_testalloc::lift_limit();
    }
    /// Runs `f` with 512 KiB of heap to spare, which it must stay well inside: its
    /// peak is under 256 KiB (the small budget's size).
    fn within_small_budget<T>(&self, f: impl FnOnce() -> T) -> T {
        let base = self.limit(512 << 10);
        let r = f();
        let peak = self.peak_above(base);
        assert!(peak < 256 << 10, "peak {peak}");
        self.unlimit();
        r
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        xenlet_testalloc::lift_limit();
    }
}

/// What the small guest gives each ext mount (a quarter of a 1.25 MiB heap, rounded
/// down).
const SMALL_BUDGET: usize = 256 << 10;

fn mount_small(img: &Path) -> Ext<FileDisk> {
    let mut fs = mount(img);
    fs.set_cache_bytes(SMALL_BUDGET);
    fs
}

/// The number in the first line of a debugfs output that has one (`blocks`, `ffb`).
fn first_number(out: &[u8]) -> u64 {
    String::from_utf8_lossy(out)
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())
        .and_then(|w| w.parse().ok())
        .expect("a number in the debugfs output")
}

/// A hostile ext2 image (4 KiB blocks): directory `big` has one block of 126 names,
/// and every one of its 1,036 block pointers (12 direct, 1,024 through an indirect
/// block) points at that block, so it lists 130,536 names from 4 MiB of `i_size`
/// and two blocks of disk. `small` is a file beside it.
fn hostile_dir_image(t: &TempDir) -> std::path::PathBuf {
    let src = t.path().join("src");
    let d = src.join("big");
    std::fs::create_dir_all(&d).unwrap();
    for i in 0..126 {
        std::fs::File::create(d.join(format!("f-{i:022}"))).unwrap();
    }
    std::fs::write(src.join("small"), b"x").unwrap();
    let img = t.path().join("fs.img");
    mkfs(&img, "ext2", 4096, "16M", Some(&src), &[]);
    let p = first_number(&debugfs(&img, "blocks big"));
    let ind = first_number(&debugfs(&img, "ffb 1 2000"));
    let ptrs: Vec<u8> = (0..1024).flat_map(|_| (p as u32).to_le_bytes()).collect();
    std::os::unix::fs::FileExt::write_all_at(
        &std::fs::OpenOptions::new().write(true).open(&img).unwrap(),
        &ptrs,
        ind * 4096,
    )
    .unwrap();
    let mut script = format!("setb {ind}\nsif big block[IND] {ind}\n");
    for i in 1..12 {
        script += &format!("sif big block[{i}] {p}\n");
    }
    let blocks = 12 + 1024;
    script += &format!("sif big size {}\n", blocks * 4096);
    script += &format!("sif big blocks {}\n", (blocks + 1) * 8);
    debugfs_w(&img, &script);
    img
}

#[test]
fn listing_a_hostile_directory_is_refused_within_the_budget() {
    let t = TempDir::new("heap-dir");
    let img = hostile_dir_image(&t);
    let heap = Heap::take();
    let mut fs = mount_small(&img);
    let big = resolve(&mut fs, "big").unwrap();
    // Half the budget for the listing, 3/8 for blocks, and slack: far below the
    // 10 MiB the listing took (two vectors of 130,536 entries and their names).
    let base = heap.limit(768 << 10);
    assert_eq!(fs.read_dir(big), Err(FsError::NoMemory));
    let peak = heap.peak_above(base);
    assert!(peak < 384 << 10, "peak {peak}");
    // Small directories still list, and the filesystem goes on working.
    let root = fs.root();
    let names = dir_names(&mut fs, root);
    assert!(names.contains(&"small".to_string()), "{names:?}");
    let f = fs.create(root, "after", 0o644).unwrap();
    fs.write(f, 0, b"still here").unwrap();
    fs.unmount().unwrap();
    drop(fs);
    heap.unlimit();
    // However large the budget, a listing stops at 64 Ki names.
    let mut fs = mount(&img);
    let big = resolve(&mut fs, "big").unwrap();
    assert_eq!(fs.read_dir(big), Err(FsError::NoMemory));
    let root = fs.root();
    let after = resolve(&mut fs, "after").unwrap();
    assert_eq!(read_all(&mut fs, after), b"still here");
    assert!(fs.read_dir(root).is_ok());
}

/// A directory of `n` files with 40-byte names, made by `mke2fs -d`.
fn big_dir_image(t: &TempDir, n: usize) -> std::path::PathBuf {
    let src = t.path().join("src");
    let d = src.join("big");
    std::fs::create_dir_all(&d).unwrap();
    for i in 0..n {
        std::fs::File::create(d.join(format!("a-rather-long-file-name-number-{i:08}"))).unwrap();
    }
    let img = t.path().join("fs.img");
    let inodes = (n + 1000).to_string();
    mkfs(&img, "ext4", 4096, "32M", Some(&src), &["-N", &inodes]);
    img
}

#[test]
fn a_large_directory_lists_within_its_budget_or_not_at_all() {
    // 3,000 names of 40 bytes: about 240 KiB listed, over half of a 256 KiB budget
    // and well within 1 MiB.
    let t = TempDir::new("heap-dir-large");
    let n = 3000;
    let img = big_dir_image(&t, n);
    let heap = Heap::take();
    let mut fs = mount_small(&img);
    let big = resolve(&mut fs, "big").unwrap();
    assert_eq!(fs.read_dir(big), Err(FsError::NoMemory));
    fs.set_cache_bytes(1 << 20);
    let base = heap.limit(1 << 20);
    let v = fs.read_dir(big).unwrap();
    assert_eq!(v.len(), n);
    assert!(heap.peak_above(base) < 900 << 10);
    drop(v);
    heap.unlimit();
    let root = fs.root();
    fs.create(root, "more", 0o644).unwrap();
    unmount_clean(fs, &img);
}

#[test]
fn listing_without_file_types_reads_the_kinds() {
    // ext2 without `filetype`: each entry's kind comes from its inode.
    let t = TempDir::new("heap-dir-ext2");
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::write(src.join("file"), b"x").unwrap();
    std::os::unix::fs::symlink("file", src.join("link")).unwrap();
    let img = t.path().join("fs.img");
    mkfs(&img, "ext2", 1024, "8M", Some(&src), &["-O", "^filetype"]);
    let _heap = Heap::take();
    let mut fs = mount_small(&img);
    let root = fs.root();
    let mut v: Vec<(String, xenlet_fs::FileType, u64)> = fs
        .read_dir(root)
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.kind, e.ino))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    let kinds: Vec<(&str, xenlet_fs::FileType)> =
        v.iter().map(|(n, k, _)| (n.as_str(), *k)).collect();
    use xenlet_fs::FileType::*;
    assert_eq!(
        kinds,
        [
            ("file", File),
            ("link", Symlink),
            ("lost+found", Dir),
            ("sub", Dir)
        ]
    );
    for (n, _, ino) in &v {
        assert_eq!(*ino, resolve(&mut fs, n).unwrap());
    }
}

/// An image (1 KiB blocks) with `frag`: `n` data blocks, each its own extent (every
/// other block of the file is a hole), made by `mke2fs -d` (which skips zero
/// blocks); and a small file `small`.
fn fragmented_image(t: &TempDir, kind: &str, n: u64) -> (std::path::PathBuf, Vec<u8>) {
    let src = t.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let mut data = vec![0u8; (2 * n as usize) * 1024];
    let mut r = Rng(0x5eed_0001);
    for b in 0..n as usize {
        let blk = &mut data[2 * b * 1024..(2 * b + 1) * 1024];
        blk.copy_from_slice(&r.bytes(1024));
    }
    std::fs::write(src.join("frag"), &data).unwrap();
    std::fs::write(src.join("small"), b"small").unwrap();
    let img = t.path().join("fs.img");
    mkfs(&img, kind, 1024, "96M", Some(&src), &[]);
    (img, data)
}

fn fragmented_file_map_is_bounded(kind: &str) {
    let t = TempDir::new(&format!("heap-map-{kind}"));
    let n = 20_000;
    let (img, data) = fragmented_image(&t, kind, n);
    let heap = Heap::take();
    let mut fs = mount_small(&img);
    let root = fs.root();
    let frag = resolve(&mut fs, "frag").unwrap();
    // The map would take 20,000 extents (480 KiB, 512 KiB of vector): a quarter of
    // the 256 KiB budget holds 2,700.
    let base = heap.limit(512 << 10);
    let mut buf = [0u8; 1024];
    assert_eq!(fs.read(frag, 0, &mut buf), Err(FsError::NoMemory));
    assert_eq!(fs.truncate(frag, 10), Err(FsError::NoMemory));
    assert_eq!(fs.unlink(root, "frag"), Err(FsError::NoMemory));
    assert!(
        heap.peak_above(base) < 256 << 10,
        "peak {}",
        heap.peak_above(base)
    );
    // Nothing changed; the rest works.
    assert_eq!(resolve(&mut fs, "frag"), Ok(frag));
    assert_eq!(fs.stat(frag).unwrap().size, data.len() as u64);
    let small = resolve(&mut fs, "small").unwrap();
    assert_eq!(read_all(&mut fs, small), b"small");
    fs.unmount().unwrap();
    drop(fs);
    heap.unlimit();
    fsck_clean(&img);
    // With the default budget the file reads, and goes.
    let mut fs = mount(&img);
    let frag = resolve(&mut fs, "frag").unwrap();
    assert_eq!(fs.extents(frag).unwrap().extents.len() as u64, n);
    assert!(read_all(&mut fs, frag) == data);
    fs.unlink(root, "frag").unwrap();
    unmount_clean(fs, &img);
}

#[test]
fn fragmented_extent_tree_is_refused_within_the_budget() {
    fragmented_file_map_is_bounded("ext4");
}

#[test]
fn fragmented_block_map_is_refused_within_the_budget() {
    fragmented_file_map_is_bounded("ext2");
}

/// `mke2fs -g 256` on 512 MiB with 1 KiB blocks: 2,048 groups of 32-byte
/// descriptors (64 KiB of table). No resize inode, no 64bit: mke2fs would switch to
/// meta_bg, which Xenlet does not mount.
fn many_groups_image(t: &TempDir, kind: &str) -> std::path::PathBuf {
    let img = t.path().join("fs.img");
    mkfs(
        &img,
        kind,
        1024,
        "512M",
        None,
        &["-g", "256", "-N", "8192", "-O", "^64bit,^resize_inode"],
    );
    img
}

fn mount_bounded(img: &Path, bytes: usize) -> Result<Ext<FileDisk>, FsError> {
    Ext::mount_bounded(FileDisk::open(img), opts(), bytes)
}

#[test]
fn group_descriptors_are_kept_in_one_table_within_the_budget() {
    for kind in ["ext2", "ext4"] {
        let t = TempDir::new(&format!("heap-groups-{kind}"));
        let img = many_groups_image(&t, kind);
        let heap = Heap::take();
        // The table (64 KiB) fits half of 256 KiB; a descriptor apiece took 192 KiB
        // (the table, a vector of descriptors and one small vector each).
        let base = heap.limit(160 << 10);
        let mut fs = mount_bounded(&img, SMALL_BUDGET).expect("mount");
        let peak = heap.peak_above(base);
        assert!(peak < 128 << 10, "{kind}: mount peak {peak}");
        heap.unlimit();
        // Files in many groups (a directory each spreads them), then a clean check.
        let root = fs.root();
        for d in 0..40 {
            let dir = fs.mkdir(root, &format!("d{d}"), 0o755).unwrap();
            for f in 0..5 {
                let ino = fs.create(dir, &format!("f{f}"), 0o644).unwrap();
                fs.write(ino, 0, &vec![d as u8; 3000 + f * 700]).unwrap();
            }
            if d % 10 == 9 {
                fs.sync().unwrap();
            }
        }
        fs.unmount().unwrap();
        drop(fs);
        drop(heap);
        fsck_clean(&img);
        let mut fs = mount(&img);
        let d7 = resolve(&mut fs, "d7/f3").unwrap();
        assert_eq!(read_all(&mut fs, d7), vec![7u8; 3000 + 3 * 700]);
        // Half of 64 KiB cannot keep the table: refused, with why.
        match mount_bounded(&img, 64 << 10) {
            Err(FsError::Unsupported(why)) => {
                assert!(why.contains("2048 group descriptors"), "{why}")
            }
            other => panic!("{kind}: {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn a_superblock_claiming_a_million_groups_is_refused_before_reading_them() {
    // An ext2 superblock rewritten to 8 blocks and 8 inodes a group: 65,536 groups,
    // 2 MiB of descriptors (and 2 MiB more kept one by one), nearly all garbage.
    let t = TempDir::new("heap-groups-hostile");
    let img = many_groups_image(&t, "ext2");
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&img)
            .unwrap();
        let mut sb = [0u8; 1024];
        f.read_exact_at(&mut sb, 1024).unwrap();
        let blocks = u32::from_le_bytes(sb[4..8].try_into().unwrap());
        let groups = (blocks - 1).div_ceil(8);
        sb[0x20..0x24].copy_from_slice(&8u32.to_le_bytes());
        sb[0x28..0x2C].copy_from_slice(&8u32.to_le_bytes());
        sb[0..4].copy_from_slice(&(groups * 8).to_le_bytes());
        f.write_all_at(&sb, 1024).unwrap();
    }
    let heap = Heap::take();
    let base = heap.limit(1 << 20);
    match mount_bounded(&img, SMALL_BUDGET) {
        Err(FsError::Unsupported(why)) => {
            assert!(why.contains("65536 group descriptors"), "{why}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert!(heap.peak_above(base) < 64 << 10);
    heap.unlimit();
    // The default bound (16 MiB) reads the table, and the garbage in it refuses
    // the mount.
    assert!(matches!(
        Ext::mount(FileDisk::open(&img), opts()),
        Err(FsError::Corrupt(_))
    ));
}

#[test]
fn an_orphan_whose_map_is_over_the_budget_stays_listed() {
    let t = TempDir::new("heap-orphan-map");
    let (img, _) = fragmented_image(&t, "ext4", 20_000);
    let out = String::from_utf8(debugfs(&img, "stat frag")).unwrap();
    let ino: u32 = out
        .strip_prefix("Inode: ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    debugfs_w(
        &img,
        &format!(
            "unlink /frag\nsif <{ino}> links_count 0\nsif <{ino}> dtime 0\nssv last_orphan {ino}\n"
        ),
    );
    let heap = Heap::take();
    let fs = heap.within_small_budget(|| mount_bounded(&img, SMALL_BUDGET).expect("mount"));
    let o = fs.orphans().clone();
    assert_eq!((o.deleted, o.error), (0, None));
    assert!(o.skipped.is_some_and(|s| s.contains("memory budget")));
    let mut fs = fs;
    fs.unmount().unwrap();
    drop(fs);
    let h = dumpe2fs_h(&img);
    assert!(
        h.contains(&format!("First orphan inode:       {ino}")),
        "{h}"
    );
    // A mount with room frees it.
    let fs = mount(&img);
    assert_eq!(fs.orphans().deleted, 1);
    unmount_clean(fs, &img);
}

/// Free blocks from `goal` on, as debugfs `ffb` finds them, as `a-b,c-d` ranges.
fn free_ranges(img: &Path, count: usize, goal: u64) -> (Vec<u64>, String) {
    let out = String::from_utf8(debugfs(img, &format!("ffb {count} {goal}"))).unwrap();
    let blocks: Vec<u64> = out
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(blocks.len(), count, "{out}");
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for &b in &blocks {
        match ranges.last_mut() {
            Some(r) if r.1 + 1 == b => r.1 = b,
            _ => ranges.push((b, b)),
        }
    }
    let list = ranges
        .iter()
        .map(|&(a, b)| format!("{a}-{b}"))
        .collect::<Vec<_>>()
        .join(",");
    (blocks, list)
}

/// An ext4 image (1 KiB blocks, a 32 MiB journal) that needs recovery: debugfs
/// logged `n` free blocks in one transaction (random data), then `script` (more
/// journal commands) in later ones. Returns the image, the blocks, their data.
fn journalled_image(
    t: &TempDir,
    n: usize,
    script: &str,
) -> (std::path::PathBuf, Vec<u64>, Vec<u8>) {
    let img = t.path().join("fs.img");
    mkfs(&img, "ext4", 1024, "160M", None, &["-J", "size=32"]);
    let (blocks, list) = free_ranges(&img, n, 1000);
    let data = Rng(0x10_9000).bytes(n * 1024);
    let file = t.path().join("data");
    std::fs::write(&file, &data).unwrap();
    debugfs_w(
        &img,
        &format!("jo -c\njw -b {list} {}\njc\n{script}", file.display()),
    );
    (img, blocks, data)
}

fn block_of(img: &Path, b: u64) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 1024];
    std::fs::File::open(img)
        .unwrap()
        .read_exact_at(&mut buf, b * 1024)
        .unwrap();
    buf
}

/// Mounts `img` (replaying its journal) within the small budget, unmounts it; what
/// the replay did.
fn replay_in_small_budget(heap: &Heap, img: &Path) -> ReplayStats {
    let mut fs = heap.within_small_budget(|| mount_bounded(img, SMALL_BUDGET).expect("mount"));
    let r = *fs.replayed().expect("replayed");
    fs.unmount().unwrap();
    r
}

#[test]
fn a_journal_of_25000_logged_blocks_replays_in_a_small_heap() {
    // Replay kept every tag of every transaction (24 bytes each, 600 KiB here, in a
    // vector that doubles), a set of the logged blocks and a 256 KiB buffer: now it
    // reads the log again in each pass and keeps only the revoke table.
    let t = TempDir::new("heap-journal");
    let n = 25_000;
    let heap = Heap::take(); // before the image's data: a limit elsewhere would refuse it
    let (img, blocks, data) = journalled_image(&t, n, "");
    let r = replay_in_small_budget(&heap, &img);
    assert_eq!((r.transactions, r.blocks_replayed), (1, n as u64), "{r:?}");
    for (i, &b) in blocks.iter().enumerate().step_by(997) {
        assert!(
            block_of(&img, b) == data[i * 1024..(i + 1) * 1024],
            "block {b}"
        );
    }
    fsck_clean(&img);
}

#[test]
fn revoked_blocks_the_log_does_not_hold_cost_nothing() {
    // 30,000 revoke records (20,000 in one transaction) for blocks no transaction
    // logs: they are left out of the table, which a 256 KiB budget could not hold.
    let t = TempDir::new("heap-journal-revoke-other");
    let heap = Heap::take(); // before the image's data: a limit elsewhere would refuse it
    let (img, blocks, data) = journalled_image(&t, 100, "jo\njw -r 100000-129999\njc\n");
    let r = replay_in_small_budget(&heap, &img);
    assert_eq!(
        (
            r.transactions,
            r.blocks_replayed,
            r.revoke_records,
            r.revoked
        ),
        (2, 100, 30_000, 0),
        "{r:?}"
    );
    assert!(block_of(&img, blocks[42]) == data[42 * 1024..43 * 1024]);
    fsck_clean(&img);
}

#[test]
fn a_revoke_table_over_the_budget_refuses_the_mount_untouched() {
    // 20,000 logged blocks, all revoked by the next transaction: the table needs
    // 20,000 entries, and so would the list of logged blocks that filters it.
    let t = TempDir::new("heap-journal-revoke-all");
    let heap = Heap::take(); // before the image's data: a limit elsewhere would refuse it
    let (img, blocks, _) = journalled_image(&t, 20_000, "");
    let (_, list) = free_ranges(&img, 20_000, 1000);
    debugfs_w(&img, &format!("jo\njw -r {list}\njc\n"));
    let before = std::fs::read(&img).unwrap();
    heap.within_small_budget(|| match mount_bounded(&img, SMALL_BUDGET) {
        Err(FsError::Unsupported(why)) => assert!(why.contains("journal replay needs"), "{why}"),
        other => panic!("{:?}", other.map(|_| ())),
    });
    assert!(
        std::fs::read(&img).unwrap() == before,
        "a refused replay wrote"
    );
    // With room it replays: every logged block revoked, none written.
    let fs = mount(&img);
    let r = *fs.replayed().expect("replayed");
    assert_eq!(
        (r.transactions, r.blocks_replayed, r.revoked),
        (2, 0, 20_000),
        "{r:?}"
    );
    assert!(block_of(&img, blocks[7]).iter().all(|&b| b == 0));
    unmount_clean(fs, &img);
}

/// 64 KiB blocks and 4 KiB inodes (as mke2fs allows): the caches' floors counted
/// blocks and inodes (16 blocks, 64 inodes, 64 blocks pinned until a journal commit),
/// 5 MiB here whatever the budget; now they hold in bytes.
#[test]
fn big_blocks_and_inodes_keep_the_caches_within_the_budget() {
    let t = TempDir::new("heap-bigblocks");
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("d")).unwrap();
    for i in 0..100 {
        std::fs::write(
            src.join("d").join(format!("f{i}")),
            vec![i as u8; 1000 + 37 * i],
        )
        .unwrap();
    }
    let img = t.path().join("fs.img");
    mkfs(
        &img,
        "ext4",
        65536,
        "256M",
        Some(&src),
        &["-I", "4096", "-N", "2048"],
    );
    let heap = Heap::take();
    // The small guest's whole heap: the floors alone took 1.8 MiB here.
    let base = heap.limit(1280 << 10);
    let mut fs = mount_bounded(&img, SMALL_BUDGET).expect("mount");
    let d = resolve(&mut fs, "d").unwrap();
    for i in 0..100 {
        let ino = fs.lookup(d, &format!("f{i}")).unwrap();
        assert_eq!(read_all(&mut fs, ino), vec![i as u8; 1000 + 37 * i]);
    }
    let root = fs.root();
    let new = fs.mkdir(root, "new", 0o755).unwrap();
    for i in 0..100 {
        let ino = fs.create(new, &format!("g{i}"), 0o644).unwrap();
        fs.write(ino, 0, &[i as u8; 100]).unwrap();
    }
    fs.sync().unwrap();
    // Still over the budget: one operation's blocks (an inode table block, two
    // bitmaps, directory blocks: 64 KiB each) stay until its commit.
    let peak = heap.peak_above(base);
    assert!(peak < 1 << 20, "peak {peak}");
    fs.unmount().unwrap();
    drop(fs);
    heap.unlimit();
    fsck_clean(&img);
}

#[test]
fn a_tmpfs_holds_no_more_heap_than_its_limit() {
    // A 600 KiB tmpfs, a log appended 1,000 bytes at a time until it is full: the
    // buffer doubled to 1 MiB (charged by length, 600 KiB) and each doubling asked
    // the heap for twice the file at once.
    let heap = Heap::take();
    let limit = 600 << 10;
    let base = heap.limit(usize::MAX / 2);
    let mut m = xenlet_fs::memfs::MemFs::new(limit as u64, || 0);
    let root = m.root();
    let f = m.create(root, "log", 0o644).unwrap();
    let mut n = 0u64;
    while m.write(f, n, &[7u8; 1000]).is_ok() {
        n += 1000;
    }
    assert!(n > limit as u64 - 2000, "{n}");
    let held = heap.live() - base;
    assert!(
        held <= limit + (8 << 10),
        "{held} bytes for a {limit}-byte tmpfs"
    );
    assert_eq!(m.write(f, n, &[7u8; 1000]), Err(FsError::NoSpace));
}

/// What [`sequential_writer`] measured.
struct Writer {
    allocs: u64,
    peak: usize,
    /// The device writes' sizes in bytes, from the first call on.
    sizes: Vec<usize>,
    /// The bytes in writes of at least 256 KiB, and their number.
    run_bytes: usize,
    runs: usize,
}

/// A file on a fresh 64 MiB ext4 written in `calls` calls of `call` bytes one after
/// another (call i filled with `i % 251`), then synced, the heap limited to the
/// mount's 2 MiB budget and 1 MiB more; checks the data read back and unmounts
/// clean.
fn sequential_writer(name: &str, call: usize, calls: u64) -> Writer {
    let (_t, img) = fresh_image(name, "ext4", 4096, "64M");
    let heap = Heap::take();
    let disk = Counting::new(FileDisk::open(&img));
    let mut fs = Ext::mount_bounded(disk, opts(), BUDGET).expect("mount");
    let root = fs.root();
    let ino = fs.create(root, "test", 0o644).unwrap();
    fs.sync().unwrap();
    let mut chunk = vec![0u8; call];
    fs.device_mut().sizes.clear();
    let base = heap.limit(BUDGET + (1 << 20));
    let n0 = heap.count();
    for i in 0..calls {
        chunk.fill((i % 251) as u8);
        assert_eq!(fs.write(ino, i * call as u64, &chunk).unwrap(), call);
    }
    fs.sync().unwrap();
    let allocs = heap.count() - n0;
    let peak = heap.peak_above(base);
    heap.unlimit();
    let sizes = fs.device().sizes.clone();
    let runs: Vec<usize> = sizes.iter().copied().filter(|&s| s >= 256 << 10).collect();
    eprintln!("{allocs} allocations, peak {peak} bytes, writes {sizes:?}");
    let data = read_all(&mut fs, ino);
    assert_eq!(data.len() as u64, calls * call as u64);
    for (i, c) in data.chunks(call).enumerate() {
        assert!(c.iter().all(|&b| b == (i % 251) as u8), "call {i}");
    }
    unmount_clean(fs, &img);
    Writer {
        allocs,
        peak,
        run_bytes: runs.iter().sum(),
        runs: runs.len(),
        sizes,
    }
}

/// The mount's budget in [`sequential_writer`].
const BUDGET: usize = 2 << 20;

#[test]
fn a_16k_writer_buffers_in_runs_of_the_budget() {
    // dd's 16 KiB writes through the buffered path (issue 30, Speed): each call's
    // blocks join one run (one copy, no buffer per block) and each run reaches the
    // device in one write of a quarter of the mount's budget. This was six
    // allocations a call (a Vec per 4 KiB block, and the inode cloned), and every
    // block copied again into a gathering buffer at write-out (3,090 allocations
    // and a peak of 1.06 MiB here).
    let calls = 512u64; // 8 MiB
    let w = sequential_writer("heap-16k", 16 << 10, calls);
    // 8 MiB in runs of 512 KiB (a few shorter where the free space breaks one).
    assert!(w.run_bytes >= (8 << 20) - (1 << 20), "{:?}", w.sizes);
    assert!(w.runs <= 8 * 2 + 2, "{:?}", w.sizes);
    assert!(
        w.allocs < calls / 2,
        "{} allocations for {calls} calls",
        w.allocs
    );
    // The runs' quarter of the budget and little more (the write-out's gathering
    // buffer of as much again is gone).
    assert!(w.peak < BUDGET / 4 + (64 << 10), "peak {}", w.peak);
}

#[test]
fn a_1000_byte_writer_fills_its_runs_in_place() {
    // Writes that are not whole blocks (a shell's redirection, a program's small
    // writes): each block is made in its run's buffer (zeros, then the parts), and
    // after a write-out the next run starts with the block written last (mapped,
    // read back) followed by new ones, one device write from the run's buffer.
    // Before: a Vec per block, and the run copied once more into a gathering buffer.
    let calls = (4 << 20) / 1000; // 4 MiB
    let w = sequential_writer("heap-1000", 1000, calls);
    assert!(w.run_bytes >= (4 << 20) - (1 << 20), "{:?}", w.sizes);
    assert!(
        w.allocs < calls / 20,
        "{} allocations for {calls} calls",
        w.allocs
    );
    assert!(w.peak < BUDGET / 4 + (64 << 10), "peak {}", w.peak);
}
