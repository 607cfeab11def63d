//! Seeded random corruption of metadata blocks (superblock, group descriptors, bitmaps,
//! inode table, directory, extent and indirect blocks): mounting, walking, reading and
//! writing must give errors, never panic or hang.

mod common;
use common::*;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;
use xenlet_fs::{BlockDev, Ext, FileSystem, FileType, Ino, IoError, MountOptions};

/// A copy-on-write view of a shared image: cheap to make per iteration.
struct Overlay {
    base: Rc<Vec<u8>>,
    sectors: HashMap<u64, [u8; 512]>,
}

impl Overlay {
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
        false
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        if !offset.is_multiple_of(512)
            || !buf.len().is_multiple_of(512)
            || offset + buf.len() as u64 > self.base.len() as u64
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
        if !offset.is_multiple_of(512)
            || !data.len().is_multiple_of(512)
            || offset + data.len() as u64 > self.base.len() as u64
        {
            return Err(IoError::OutOfRange);
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
    let d = std::process::Command::new(tool("dumpe2fs"))
        .arg(img)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&d.stdout).into_owned();
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

fn make_image(t: &TempDir, extra: &[&str], kind: &str) -> Vec<u8> {
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
    mkfs(&img, kind, 1024, "3M", Some(&src), extra);
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

fn exercise(disk: Overlay, seed: u64) -> bool {
    let Ok(mut fs) = Ext::mount(
        disk,
        MountOptions {
            read_only: false,
            now: || 1_700_000_000,
        },
    ) else {
        return false;
    };
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
    true
}

/// `XENLET_FUZZ_SCALE=n` runs n times the iterations (with other seeds past the first).
fn fuzz(kind: &str, extra: &[&str], iterations: u64, seed: u64) {
    let scale: u64 = std::env::var("XENLET_FUZZ_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let iterations = iterations * scale.max(1);
    let t = TempDir::new(&format!("fuzz-{kind}"));
    let image = Rc::new(make_image(&t, extra, kind));
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
    let fresh = |image: &Rc<Vec<u8>>| Overlay {
        base: image.clone(),
        sectors: HashMap::new(),
    };
    assert!(exercise(fresh(&image), 1), "the clean image does not mount");
    let mut r = Rng(seed);
    let mut out = Outcome::default();
    for it in 0..iterations {
        let mut img = fresh(&image);
        let flips = 1 + r.below(6);
        for _ in 0..flips {
            let blk = meta[r.below(meta.len() as u64) as usize];
            let off = if r.below(2) == 0 {
                r.below(128)
            } else {
                r.below(1024)
            };
            let pos = (blk * 1024 + off) as usize;
            if pos < image.len() {
                let (how, bit, val) = (r.below(3), r.below(8), r.next() as u8);
                img.poke(pos, |b| match how {
                    0 => b ^ (1 << bit),
                    1 => val,
                    _ => 0xFF,
                });
            }
        }
        let s = r.next();
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || exercise(img, s)));
        match res {
            Ok(true) => out.mounted += 1,
            Ok(false) => out.refused += 1,
            Err(_) => panic!("{kind}: iteration {it} (seed {seed}) panicked"),
        }
    }
    eprintln!("{kind} {extra:?}: {out:?}");
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
