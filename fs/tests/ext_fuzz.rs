//! Seeded random corruption of metadata blocks (superblock, group descriptors, bitmaps,
//! inode table, directory, extent and indirect blocks), and of a journal holding
//! committed transactions to replay (journal superblock, descriptor, revoke, commit and
//! logged blocks): mounting (which replays), walking, reading and writing must give
//! errors, never panic, hang or write outside the device.

mod common;
use common::*;
use std::cell::Cell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use xenlet_fs::{BlockDev, Ext, FileSystem, FileType, Ino, IoError, MountOptions};

/// A copy-on-write view of a shared image: cheap to make per iteration.
struct Overlay {
    base: Rc<Vec<u8>>,
    sectors: HashMap<u64, [u8; 512]>,
    /// Report it as read-only (writes fail).
    read_only: bool,
    /// Shared with the test: write attempts, and those outside the device.
    writes: Rc<Cell<u32>>,
    outside: Rc<Cell<u32>>,
}

impl Overlay {
    fn new(base: &Rc<Vec<u8>>) -> Overlay {
        Overlay {
            base: base.clone(),
            sectors: HashMap::new(),
            read_only: false,
            writes: Rc::new(Cell::new(0)),
            outside: Rc::new(Cell::new(0)),
        }
    }

    fn poke(&mut self, pos: usize, f: impl FnOnce(u8) -> u8) {
        let s = (pos / 512) as u64;
        let base = &self.base;
        let sec = self.sectors.entry(s).or_insert_with(|| {
            let mut b = [0u8; 512];
            b.copy_from_slice(&base[s as usize * 512..s as usize * 512 + 512]);
            b
        });
        sec[pos % 512] = f(sec[pos % 512]);
    }
}

impl BlockDev for Overlay {
    fn size_bytes(&self) -> u64 {
        self.base.len() as u64
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        if !offset.is_multiple_of(512)
            || !buf.len().is_multiple_of(512)
            || offset.saturating_add(buf.len() as u64) > self.base.len() as u64
        {
            return Err(IoError::OutOfRange);
        }
        for (i, chunk) in buf.chunks_mut(512).enumerate() {
            let s = offset / 512 + i as u64;
            match self.sectors.get(&s) {
                Some(d) => chunk.copy_from_slice(d),
                None => chunk.copy_from_slice(&self.base[s as usize * 512..s as usize * 512 + 512]),
            }
        }
        Ok(())
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        self.writes.set(self.writes.get() + 1);
        if !offset.is_multiple_of(512)
            || !data.len().is_multiple_of(512)
            || offset.saturating_add(data.len() as u64) > self.base.len() as u64
        {
            self.outside.set(self.outside.get() + 1);
            return Err(IoError::OutOfRange);
        }
        if self.read_only {
            return Err(IoError::ReadOnly);
        }
        for (i, chunk) in data.chunks(512).enumerate() {
            let mut b = [0u8; 512];
            b.copy_from_slice(chunk);
            self.sectors.insert(offset / 512 + i as u64, b);
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

#[derive(Default, Debug)]
struct Outcome {
    mounted: u32,
    refused: u32,
}

/// Blocks holding metadata, found with dumpe2fs and debugfs.
fn metadata_blocks(img: &Path, paths: &[&str]) -> Vec<u64> {
    let mut v = vec![1u64, 2]; // superblock and GDT (1 KiB blocks)
    let text = dumpe2fs(img, &[]);
    for line in text.lines() {
        for key in ["Block bitmap at ", "Inode bitmap at ", "Inode table at "] {
            if let Some(i) = line.find(key) {
                let rest = &line[i + key.len()..];
                let num: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
                if let Ok(n) = num.parse::<u64>() {
                    let k = if key.starts_with("Inode table") {
                        40
                    } else {
                        1
                    };
                    v.extend(n..n + k);
                }
            }
        }
        if v.len() > 200 {
            break;
        }
    }
    for p in paths {
        let st = String::from_utf8_lossy(&debugfs(img, &format!("stat {p}"))).into_owned();
        for tag in ["(ETB0):", "(ETB1):", "(IND):", "(DIND):", "(TIND):"] {
            for part in st.split(tag).skip(1) {
                let num: String = part.chars().take_while(|c| c.is_ascii_digit()).collect();
                if let Ok(n) = num.parse::<u64>() {
                    v.push(n);
                }
            }
        }
        if st.contains("Type: directory") {
            let b = String::from_utf8_lossy(&debugfs(img, &format!("blocks {p}"))).into_owned();
            v.extend(b.split_whitespace().filter_map(|s| s.parse::<u64>().ok()));
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn make_image(t: &TempDir, extra: &[&str], kind: &str, size: &str) -> Vec<u8> {
    let src = t.path().join(format!("src-{kind}-{}", extra.len()));
    std::fs::create_dir(&src).unwrap();
    let mut r = Rng(7);
    for i in 0..12 {
        std::fs::write(src.join(format!("f{i}")), r.bytes(i * i * 700)).unwrap();
    }
    std::os::unix::fs::symlink("f1", src.join("link")).unwrap();
    std::os::unix::fs::symlink("x/".repeat(40), src.join("longlink")).unwrap();
    std::fs::create_dir_all(src.join("d/e/f")).unwrap();
    std::fs::write(src.join("d/e/f/g"), b"deep").unwrap();
    std::fs::create_dir(src.join("many")).unwrap();
    for i in 0..150 {
        std::fs::write(src.join(format!("many/name-number-{i}")), b"m").unwrap();
    }
    let img = t.path().join(format!("img-{kind}-{}", extra.len()));
    mkfs(&img, kind, 1024, size, Some(&src), extra);
    // Fragment one file so it has an extent tree block / indirect blocks.
    {
        let mut fs = mount(&img);
        let root = fs.root();
        let a = fs.create(root, "frag", 0o644).unwrap();
        let b = fs.create(root, "frag2", 0o644).unwrap();
        for i in 0..30u64 {
            fs.write(a, i * 1024, &[i as u8; 1024]).unwrap();
            fs.write(b, i * 1024, &[!(i as u8); 1024]).unwrap();
            fs.sync().unwrap();
        }
        fs.unmount().unwrap();
    }
    fsck_index_dirs(&img);
    fsck_clean(&img);
    std::fs::read(&img).unwrap()
}

fn walk<F: FileSystem>(fs: &mut F, dir: Ino, depth: u32, budget: &mut u32) {
    if depth > 16 || *budget == 0 {
        return;
    }
    let Ok(ents) = fs.read_dir(dir) else { return };
    for e in ents {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        if (*budget).is_multiple_of(16) {
            let _ = fs.lookup(dir, &e.name);
        }
        let Ok(st) = fs.stat(e.ino) else { continue };
        let mut buf = vec![0u8; 8192];
        match st.kind {
            FileType::Dir if e.ino != dir => walk(fs, e.ino, depth + 1, budget),
            FileType::File | FileType::Symlink => {
                let _ = fs.read(e.ino, 0, &mut buf);
                let _ = fs.read(e.ino, st.size / 2, &mut buf);
            }
            _ => {}
        }
    }
}

/// Mounts read-write (replaying any journal), walks, reads and changes things; `None`
/// if the mount is refused, else the number of transactions replayed at mount.
fn exercise(disk: Overlay, seed: u64) -> Option<u32> {
    let Ok(mut fs) = Ext::mount(
        disk,
        MountOptions {
            read_only: false,
            now: || 1_700_000_000,
        },
    ) else {
        return None;
    };
    let replayed = fs.replayed().map_or(0, |s| s.transactions);
    if seed.is_multiple_of(3) {
        fs.set_cache_blocks(16); // constant eviction and write-back
    }
    let mut budget = 400;
    let root = fs.root();
    walk(&mut fs, root, 0, &mut budget);
    let _ = fs.statfs();
    let mut r = Rng(seed | 1);
    if let Ok(ino) = fs.create(root, "new", 0o644) {
        let _ = fs.write(ino, r.below(50_000), &r.bytes(5000));
        let _ = fs.truncate(ino, r.below(40_000));
    }
    for name in ["f3", "frag", "link", "d", "many"] {
        match r.below(4) {
            0 => {
                let _ = fs.unlink(root, name);
            }
            1 => {
                let _ = fs.rename(root, name, root, "renamed");
            }
            2 => {
                if let Ok(i) = fs.lookup(root, name) {
                    let _ = fs.write(i, r.below(20_000), &[1u8; 3000]);
                    let _ = fs.truncate(i, r.below(10_000));
                }
            }
            _ => {
                let _ = fs.rmdir(root, name);
            }
        }
    }
    if let Ok(m) = fs.lookup(root, "many") {
        let _ = fs.create(m, "one-more", 0o644);
        let _ = fs.mkdir(m, "sub", 0o755);
        let _ = fs.unlink(m, "name-number-7");
    }
    let _ = fs.mkdir(root, "newdir", 0o755);
    let _ = fs.sync();
    let _ = fs.unmount();
    Some(replayed)
}

/// `XENLET_FUZZ_SCALE=n` runs n times the iterations (with other seeds past the first).
fn scaled(iterations: u64) -> u64 {
    let scale: u64 = std::env::var("XENLET_FUZZ_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    iterations * scale.max(1)
}

/// Turns a hung iteration into a failure: aborts the test process (naming the
/// iteration) if `progress` does not move for a minute, until dropped.
struct Watchdog {
    progress: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
}

impl Watchdog {
    fn new(what: String) -> Watchdog {
        let progress = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let (p, d) = (progress.clone(), done.clone());
        std::thread::spawn(move || {
            let mut last = u64::MAX;
            loop {
                for _ in 0..600 {
                    std::thread::sleep(Duration::from_millis(100));
                    if d.load(Ordering::Relaxed) {
                        return;
                    }
                }
                let now = p.load(Ordering::Relaxed);
                if now == last {
                    eprintln!("{what}: iteration {now} hung for over 60 s");
                    std::process::abort();
                }
                last = now;
            }
        });
        Watchdog { progress, done }
    }
    fn at(&self, iteration: u64) {
        self.progress.store(iteration, Ordering::Relaxed);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// One corrupting write at byte `pos`: flip bit `bit` (`how` 0), store the low byte
/// of `val` (1), store 0xFF (2), or store `val` as the big-endian word (jbd2's byte
/// order) holding `pos` (3).
#[derive(Clone, Copy, Debug)]
struct Poke {
    pos: usize,
    how: u64,
    bit: u64,
    val: u32,
}

impl Poke {
    fn random(r: &mut Rng, pos: usize) -> Poke {
        Poke {
            pos,
            how: r.below(3),
            bit: r.below(8),
            val: r.next() as u8 as u32,
        }
    }
    /// A word from `values` or a random one.
    fn word(r: &mut Rng, pos: usize, values: &[u32]) -> Poke {
        let val = match r.below(values.len() as u64 + 1) as usize {
            i if i < values.len() => values[i],
            _ => r.next() as u32,
        };
        Poke {
            pos: pos & !3,
            how: 3,
            bit: 0,
            val,
        }
    }
    fn apply(&self, img: &mut Overlay) {
        if self.pos + 4 > img.base.len() {
            return;
        }
        let Poke { how, bit, val, .. } = *self;
        if how == 3 {
            for (i, b) in val.to_be_bytes().into_iter().enumerate() {
                img.poke(self.pos + i, |_| b);
            }
            return;
        }
        img.poke(self.pos, |b| match how {
            0 => b ^ (1 << bit),
            1 => val as u8,
            _ => 0xFF,
        });
    }
}

/// Runs `f` on `img`, catching a panic as a failure
/// of iteration `it`; then checks that nothing was written outside the device.
fn run_one<T>(what: &str, it: u64, img: Overlay, f: impl FnOnce(Overlay) -> T) -> T {
    let outside = img.outside.clone();
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || f(img)));
    match res {
        Ok(v) => {
            assert_eq!(outside.get(), 0, "{what}: iteration {it} wrote outside");
            v
        }
        Err(_) => panic!("{what}: iteration {it} panicked"),
    }
}

fn fuzz(kind: &str, extra: &[&str], iterations: u64, seed: u64) {
    let iterations = scaled(iterations);
    let t = TempDir::new(&format!("fuzz-{kind}"));
    let image = Rc::new(make_image(&t, extra, kind, "3M"));
    let img_path = t.path().join(format!("img-{kind}-{}", extra.len()));
    let meta = metadata_blocks(
        &img_path,
        &[
            "/",
            "/many",
            "/d",
            "/d/e",
            "/frag",
            "/frag2",
            "/f11",
            "/longlink",
        ],
    );
    assert!(meta.len() > 20, "metadata blocks: {meta:?}");
    // The clean image itself must pass.
    assert!(
        exercise(Overlay::new(&image), 1).is_some(),
        "the clean image does not mount"
    );
    let what = format!("{kind} {extra:?} (seed {seed})");
    let dog = Watchdog::new(what.clone());
    let mut r = Rng(seed);
    let mut out = Outcome::default();
    for it in 0..iterations {
        dog.at(it);
        let mut img = Overlay::new(&image);
        let flips = 1 + r.below(6);
        for _ in 0..flips {
            let blk = meta[r.below(meta.len() as u64) as usize];
            let off = if r.below(2) == 0 {
                r.below(128)
            } else {
                r.below(1024)
            };
            Poke::random(&mut r, (blk * 1024 + off) as usize).apply(&mut img);
        }
        let s = r.next();
        match run_one(&what, it, img, move |img| exercise(img, s)) {
            Some(_) => out.mounted += 1,
            None => out.refused += 1,
        }
    }
    eprintln!("{what}: {out:?}");
    // The corruption must not be so heavy that nothing mounts.
    assert!(out.mounted as u64 > iterations / 5, "{out:?}");
}

#[test]
fn fuzz_ext4_metadata_csum() {
    fuzz("ext4", &["-O", "^has_journal"], 600, 0xC0FFEE);
}

#[test]
fn fuzz_ext4_no_csum() {
    fuzz(
        "ext4",
        &["-O", "^has_journal,^metadata_csum"],
        1500,
        0xBADC0DE,
    );
}

#[test]
fn fuzz_ext2() {
    fuzz("ext2", &[], 1500, 0x5EED);
}

#[derive(Default, Debug)]
struct JournalOutcome {
    mounted: u32,
    refused: u32,
    /// Read-write mounts that replayed all three committed transactions, some of them,
    /// or none.
    replayed_all: u32,
    replayed_some: u32,
    replayed_none: u32,
    /// Mounts with the read-only option (which replay too) that worked.
    ro_mounted: u32,
    /// Mounts of a read-only device that worked (the corruption cleared
    /// needs_recovery).
    ro_device_mounted: u32,
}

/// `count` free blocks from `goal` on (debugfs ffb).
fn free_blocks(img: &Path, count: u32, goal: u64) -> Vec<u64> {
    let out = String::from_utf8_lossy(&debugfs(img, &format!("ffb {count} {goal}"))).into_owned();
    let v: Vec<u64> = out
        .split("Free blocks found:")
        .nth(1)
        .unwrap_or_else(|| panic!("ffb: {out}"))
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(v.len(), count as usize, "ffb: {out}");
    v
}

/// The journal inode's blocks in journal order, from `debugfs stat <8>`'s extents
/// ("(0-1):48-49, (2-16):51-65, ...").
fn journal_map(img: &Path) -> Vec<u64> {
    let out = String::from_utf8_lossy(&debugfs(img, "stat <8>")).into_owned();
    let ext = out.split("EXTENTS:").nth(1).expect("journal extents");
    let range = |s: &str| -> (u64, u64) {
        let mut it = s.split('-').map(|n| n.trim().parse::<u64>().unwrap());
        let a = it.next().unwrap();
        (a, it.next().unwrap_or(a))
    };
    let mut map = Vec::new();
    for item in ext.split(',') {
        let Some((l, p)) = item
            .trim()
            .strip_prefix('(')
            .and_then(|r| r.split_once("):"))
        else {
            continue;
        };
        if l.starts_with("ETB") {
            continue;
        }
        let ((l0, l1), (p0, _)) = (range(l), range(p));
        assert_eq!(map.len() as u64, l0, "journal map: {ext}");
        map.extend(p0..=p0 + (l1 - l0));
    }
    assert_eq!(map.len(), 1024, "journal map: {ext}");
    map
}

/// The journal fuzz's seed: `make_image`'s tree on ext4 (1 KiB blocks) with a journal
/// of 1024 blocks (the smallest mke2fs makes), then a log written by debugfs (`jo`
/// opening it as `jo` says, so with or without checksums) that leaves needs_recovery
/// set: T1 logs copies of metadata blocks (superblock, descriptors, bitmaps, inode
/// table, directory and extent blocks: replaying the clean log changes nothing there,
/// replaying a damaged one damages them) and free blocks; T2 logs two free blocks and
/// revokes two of T1's; T3 logs more metadata copies and a revoked block again; T4 is
/// left uncommitted. Returns the image, the blocks the log occupies (the journal
/// superblock first) and the metadata blocks.
fn make_journal_image(t: &TempDir, extra: &[&str], jo: &str) -> (Vec<u8>, Vec<u64>, Vec<u64>) {
    let mut ex = vec!["-J", "size=1"];
    ex.extend_from_slice(extra);
    let clean = make_image(t, &ex, "ext4", "4M");
    let img = t.path().join(format!("img-ext4-{}", ex.len()));
    let meta = metadata_blocks(&img, &["/", "/many", "/d", "/d/e", "/frag", "/frag2"]);
    let jmap = journal_map(&img);
    let logged: Vec<u64> = meta
        .iter()
        .copied()
        .step_by((meta.len() / 24).max(1))
        .filter(|b| !jmap.contains(b))
        .collect();
    assert!(logged.len() >= 16 && logged.contains(&1), "{logged:?}");
    let (a, b) = logged.split_at(logged.len() / 2);
    let free = free_blocks(&img, 10, 1);
    let mut r = Rng(0x0106);
    let content = |blocks: &[u64], r: &mut Rng| -> Vec<u8> {
        blocks
            .iter()
            .flat_map(|&b| {
                if free.contains(&b) {
                    r.bytes(1024)
                } else {
                    clean[b as usize * 1024..(b as usize + 1) * 1024].to_vec()
                }
            })
            .collect()
    };
    let t1: Vec<u64> = a.iter().copied().chain(free[..6].iter().copied()).collect();
    let t3: Vec<u64> = b.iter().copied().chain([free[0]]).collect();
    let mut script = format!("{jo}\n");
    for (i, (blocks, flags)) in [
        (t1, String::new()),
        (
            free[6..8].to_vec(),
            format!("-r {}", block_list(&free[..2])),
        ),
        (t3, String::new()),
        (free[8..10].to_vec(), String::from("-c")),
    ]
    .into_iter()
    .enumerate()
    {
        let data = t.path().join(format!("jdata{i}"));
        std::fs::write(&data, content(&blocks, &mut r)).unwrap();
        script.push_str(&format!(
            "jw -b {} {flags} {}\n",
            block_list(&blocks),
            data.display()
        ));
        if i == 1 {
            // debugfs writes the next transaction over a revoking one's commit block
            // unless the journal is closed and opened again in between.
            script.push_str(&format!("jc\n{jo}\n"));
        }
    }
    script.push_str("jc\n");
    debugfs_w(&img, &script);
    let image = std::fs::read(&img).unwrap();
    assert_ne!(image[1024 + 0x60] & 4, 0, "debugfs left no needs_recovery");
    // The log: the journal blocks debugfs wrote.
    let log: Vec<u64> = jmap
        .iter()
        .copied()
        .filter(|&b| {
            let s = b as usize * 1024..(b as usize + 1) * 1024;
            image[s.clone()] != clean[s]
        })
        .collect();
    assert_eq!(log.first(), Some(&jmap[0]), "journal superblock unchanged?");
    assert!(log.len() > logged.len() + 10, "log: {log:?}");
    // Our replay of the clean log gives a filesystem e2fsck finds clean.
    let copy = t.path().join("replayed");
    std::fs::write(&copy, &image).unwrap();
    let mut fs = mount(&copy);
    assert_eq!(fs.replayed().map(|s| s.transactions), Some(3));
    assert_eq!(fs.replayed().map(|s| s.revoke_records), Some(2));
    fs.unmount().unwrap();
    fsck_clean(&copy);
    (image, log, meta)
}

/// Mounts with `opts` and walks the tree; `None` if refused.
fn walk_mount(disk: Overlay, read_only: bool) -> Option<()> {
    let mut fs = Ext::mount(
        disk,
        MountOptions {
            read_only,
            now: || 1_700_000_000,
        },
    )
    .ok()?;
    let mut budget = 200;
    let root = fs.root();
    walk(&mut fs, root, 0, &mut budget);
    let _ = fs.statfs();
    let _ = fs.unmount();
    Some(())
}

/// Corrupts the journal (its superblock, descriptor, revoke, commit and logged blocks,
/// often in their headers and tags, often with whole big-endian words) and sometimes
/// the metadata, then mounts: from a read-only device (refused unless the damage
/// cleared needs_recovery; never a write), read-only (replays) and read-write
/// (replays, then `exercise`).
fn fuzz_journal(extra: &[&str], jo: &str, iterations: u64, seed: u64) {
    let iterations = scaled(iterations);
    let t = TempDir::new("fuzz-journal");
    let (image, log, meta) = make_journal_image(&t, extra, jo);
    let image = Rc::new(image);
    let nblocks = (image.len() / 1024) as u32;
    // Words worth trying in jbd2 fields: magic, block types, sequence numbers near the
    // log's (1..5), block numbers at the device's and the journal's ends, extremes.
    let words = [
        0xC03B_3998,
        1,
        2,
        3,
        4,
        5,
        0,
        0xFFFF_FFFF,
        0x8000_0000,
        nblocks - 1,
        nblocks,
        1023,
        1024,
        1025,
    ];
    // The journal superblock and the descriptor, revoke and commit blocks.
    let control: Vec<u64> = log
        .iter()
        .copied()
        .filter(|&b| image[b as usize * 1024..][..4] == [0xC0, 0x3B, 0x39, 0x98])
        .collect();
    assert!(control.len() >= 8, "{control:?}");
    assert_eq!(exercise(Overlay::new(&image), 1), Some(3), "clean image");
    let what = format!("journal {extra:?} {jo} (seed {seed})");
    let dog = Watchdog::new(what.clone());
    let mut r = Rng(seed);
    let mut out = JournalOutcome::default();
    for it in 0..iterations {
        dog.at(it);
        let mut pokes = Vec::new();
        for _ in 0..1 + r.below(4) {
            let (blk, journal) = if r.below(5) < 2 {
                (control[r.below(control.len() as u64) as usize], true)
            } else if r.below(3) < 2 {
                (log[r.below(log.len() as u64) as usize], true)
            } else {
                (meta[r.below(meta.len() as u64) as usize], false)
            };
            let off = match r.below(3) {
                0 => r.below(64),
                1 => r.below(256),
                _ => r.below(1024),
            };
            let pos = (blk * 1024 + off) as usize;
            pokes.push(if journal && r.below(2) == 0 {
                Poke::word(&mut r, pos, &words)
            } else {
                Poke::random(&mut r, pos)
            });
        }
        let make = |read_only: bool| {
            let mut img = Overlay::new(&image);
            img.read_only = read_only;
            for p in &pokes {
                p.apply(&mut img);
            }
            img
        };
        let dev = make(true);
        let writes = dev.writes.clone();
        if run_one(&what, it, dev, |d| walk_mount(d, false)).is_some() {
            out.ro_device_mounted += 1;
        }
        assert_eq!(
            writes.get(),
            0,
            "{what}: iteration {it} wrote to a read-only device"
        );
        if run_one(&what, it, make(false), |d| walk_mount(d, true)).is_some() {
            out.ro_mounted += 1;
        }
        let s = r.next();
        match run_one(&what, it, make(false), move |d| exercise(d, s)) {
            Some(n) => {
                out.mounted += 1;
                match n {
                    3 => out.replayed_all += 1,
                    0 => out.replayed_none += 1,
                    _ => out.replayed_some += 1,
                }
            }
            None => out.refused += 1,
        }
    }
    eprintln!("{what}: {out:?}");
    let n = iterations as u32;
    assert!(out.mounted > n / 5, "{out:?}");
    // The damage reached the log: some replays were cut short, some went through.
    assert!(out.replayed_some + out.replayed_none > 0, "{out:?}");
    // (a replay that skipped a block with a bad checksum refuses the mount, as
    // Linux's does: fewer whole replays mount than when it went on regardless)
    assert!(out.replayed_all > n / 20, "{out:?}");
}

#[test]
fn fuzz_journal_csum_v3() {
    fuzz_journal(&[], "jo -c", 250, 0x7041_0001);
}

#[test]
fn fuzz_journal_no_csum() {
    fuzz_journal(&["-O", "^metadata_csum"], "jo", 250, 0x7041_0002);
}
