//! Random operation sequences checked against an in-memory model, with syncs and
//! remounts in between; at the end e2fsck -fn must be clean and debugfs must agree.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use xenlet_fs::{Ext, FileSystem, FsError};

#[derive(Clone, Debug, PartialEq)]
enum E {
    File(Vec<u8>),
    Dir,
}

type Model = BTreeMap<String, E>;

const NAMES: &[&str] = &[
    "a",
    "b",
    "c",
    "dd",
    "eee",
    "a-much-longer-file-name-to-fill-blocks",
    "x1",
    "x2",
];

fn children<'a>(m: &'a Model, dir: &str) -> impl Iterator<Item = &'a String> + 'a {
    let prefix = format!("{dir}/");
    m.keys()
        .filter(move |k| k.starts_with(&prefix) && !k[prefix.len()..].contains('/'))
}

fn pick<'a>(r: &mut Rng, v: &'a [String]) -> Option<&'a String> {
    if v.is_empty() {
        None
    } else {
        Some(&v[r.below(v.len() as u64) as usize])
    }
}

fn split(p: &str) -> (&str, &str) {
    let i = p.rfind('/').unwrap();
    (&p[..i], &p[i + 1..])
}

fn dir_ino(fs: &mut Ext<FileDisk>, d: &str) -> u64 {
    resolve(fs, d).unwrap_or_else(|e| panic!("resolve {d}: {e}"))
}

/// Runs `XENLET_RANDOM_SEEDS` seeds (default 1) from `seed` on.
fn run(kind: &str, bs: u32, size: &str, ops: usize, seed: u64, fill: bool) {
    let n: u64 = std::env::var("XENLET_RANDOM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut nospace = 0;
    for s in seed..seed + n {
        nospace += run_one(kind, bs, size, ops, s * 1000 + 1, fill);
        // An even seed: the same with a 16-block metadata cache (constant eviction).
        nospace += run_one(kind, bs, size, ops / 2, s * 1000 + 2, fill);
    }
    assert!(!fill || nospace > 0, "the disk never filled");
}

fn run_one(kind: &str, bs: u32, size: &str, ops: usize, seed: u64, fill: bool) -> u32 {
    let tiny_cache = seed.is_multiple_of(2);
    let (_t, img) = fresh_image(&format!("random-{kind}-{bs}-{size}"), kind, bs, size);
    let mut r = Rng(seed);
    let mut m = Model::new();
    let mut fs = mount(&img);
    if tiny_cache {
        fs.set_cache_blocks(16);
    }
    let mut nospace = 0;
    for step in 0..ops {
        let mut dirs: Vec<String> = m
            .iter()
            .filter(|(_, e)| **e == E::Dir)
            .map(|(k, _)| k.clone())
            .collect();
        dirs.push(String::new());
        let files: Vec<String> = m
            .iter()
            .filter(|(_, e)| matches!(e, E::File(_)))
            .map(|(k, _)| k.clone())
            .collect();
        let d = pick(&mut r, &dirs).unwrap().clone();
        let name = NAMES[r.below(NAMES.len() as u64) as usize];
        let path = format!("{d}/{name}");
        let ctx = format!("step {step}");
        match r.below(20) {
            0..=3 => {
                let di = dir_ino(&mut fs, &d);
                match fs.create(di, name, 0o644) {
                    Ok(_) => assert!(
                        m.insert(path.clone(), E::File(Vec::new())).is_none(),
                        "{ctx}"
                    ),
                    Err(FsError::Exists) => assert!(m.contains_key(&path), "{ctx}"),
                    Err(FsError::NoSpace) => nospace += 1,
                    Err(e) => panic!("{ctx} create {path}: {e}"),
                }
            }
            4..=8 => {
                let Some(f) = pick(&mut r, &files).cloned() else {
                    continue;
                };
                let ino = resolve(&mut fs, &f).unwrap();
                let E::File(data) = m.get_mut(&f).unwrap() else {
                    unreachable!()
                };
                let off = match r.below(4) {
                    0 => r.below(3 << 20),
                    _ => r.below(data.len() as u64 + 5000),
                } as usize;
                let cap = if r.below(5) == 0 || fill {
                    300_000
                } else {
                    9000
                };
                let len = 1 + r.below(cap) as usize;
                let buf = r.bytes(len);
                match fs.write(ino, off as u64, &buf) {
                    Ok(n) => {
                        if data.len() < off + n {
                            data.resize(off + n, 0);
                        }
                        data[off..off + n].copy_from_slice(&buf[..n]);
                        if n < len {
                            nospace += 1;
                        }
                    }
                    Err(FsError::NoSpace) => nospace += 1,
                    Err(e) => panic!("{ctx} write {f}: {e}"),
                }
            }
            9 => {
                let Some(f) = pick(&mut r, &files).cloned() else {
                    continue;
                };
                let ino = resolve(&mut fs, &f).unwrap();
                let E::File(data) = m.get_mut(&f).unwrap() else {
                    unreachable!()
                };
                let sz = r.below(data.len() as u64 * 2 + 10) as usize;
                fs.truncate(ino, sz as u64).unwrap();
                data.resize(sz, 0);
            }
            10 | 11 => {
                let Some(f) = pick(&mut r, &files).cloned() else {
                    continue;
                };
                let (pd, n) = split(&f);
                let di = dir_ino(&mut fs, pd);
                fs.unlink(di, n).unwrap();
                m.remove(&f);
            }
            12 | 13 => {
                let di = dir_ino(&mut fs, &d);
                match fs.mkdir(di, name, 0o755) {
                    Ok(_) => assert!(m.insert(path.clone(), E::Dir).is_none(), "{ctx}"),
                    Err(FsError::Exists) => assert!(m.contains_key(&path), "{ctx}"),
                    Err(FsError::NoSpace) => nospace += 1,
                    Err(e) => panic!("{ctx} mkdir {path}: {e}"),
                }
            }
            14 => {
                let Some(victim) = pick(&mut r, &dirs).cloned() else {
                    continue;
                };
                if victim.is_empty() {
                    continue;
                }
                let (pd, n) = split(&victim);
                let di = dir_ino(&mut fs, pd);
                let empty = children(&m, &victim).next().is_none();
                match fs.rmdir(di, n) {
                    Ok(()) => {
                        assert!(empty, "{ctx}");
                        m.remove(&victim);
                    }
                    Err(FsError::NotEmpty) => assert!(!empty, "{ctx}"),
                    Err(e) => panic!("{ctx} rmdir {victim}: {e}"),
                }
            }
            15..=17 => {
                let all: Vec<String> = m.keys().cloned().collect();
                let Some(src) = pick(&mut r, &all).cloned() else {
                    continue;
                };
                let (sd, sn) = split(&src);
                let dst = path.clone();
                let sdi = dir_ino(&mut fs, sd);
                let ddi = dir_ino(&mut fs, &d);
                let src_is_dir = m[&src] == E::Dir;
                let res = fs.rename(sdi, sn, ddi, name);
                let under = src_is_dir && (dst == src || dst.starts_with(&format!("{src}/")));
                if src == dst {
                    assert_eq!(res, Ok(()), "{ctx}");
                    continue;
                }
                if under {
                    assert!(
                        matches!(res, Err(FsError::Invalid(_))),
                        "{ctx} {src} -> {dst}: {res:?}"
                    );
                    continue;
                }
                match m.get(&dst) {
                    Some(E::Dir) if !src_is_dir => {
                        assert_eq!(res, Err(FsError::IsDir), "{ctx}");
                        continue;
                    }
                    Some(E::File(_)) if src_is_dir => {
                        assert_eq!(res, Err(FsError::NotDir), "{ctx}");
                        continue;
                    }
                    Some(E::Dir) if children(&m, &dst).next().is_some() => {
                        assert_eq!(res, Err(FsError::NotEmpty), "{ctx}");
                        continue;
                    }
                    _ => {}
                }
                if res == Err(FsError::NoSpace) {
                    nospace += 1;
                    continue;
                }
                assert_eq!(res, Ok(()), "{ctx} rename {src} -> {dst}");
                m.remove(&dst);
                let moved: Vec<String> = m
                    .keys()
                    .filter(|k| **k == src || k.starts_with(&format!("{src}/")))
                    .cloned()
                    .collect();
                for k in moved {
                    let v = m.remove(&k).unwrap();
                    m.insert(format!("{dst}{}", &k[src.len()..]), v);
                }
            }
            18 => fs.sync().unwrap(),
            _ => {
                fs.unmount().unwrap();
                if r.below(3) == 0 {
                    fsck_clean(&img);
                }
                fs = mount(&img);
                if tiny_cache {
                    fs.set_cache_blocks(16);
                }
            }
        }
    }
    fs.unmount().unwrap();
    eprintln!(
        "{kind} {bs} {size} seed {seed}: {} entries, {nospace} out-of-space results",
        m.len()
    );
    verify(&img, &m);
    nospace
}

fn verify(img: &Path, m: &Model) {
    fsck_clean(img);
    let mut fs = mount(img);
    for (p, e) in m {
        let ino = resolve(&mut fs, p).unwrap_or_else(|err| panic!("{p}: {err}"));
        match e {
            E::File(d) => assert!(read_all(&mut fs, ino) == *d, "{p} differs"),
            E::Dir => {
                let mut names = dir_names(&mut fs, ino);
                names.sort();
                let mut want: Vec<String> =
                    children(m, p).map(|k| split(k).1.to_string()).collect();
                want.sort();
                assert_eq!(names, want, "{p}");
            }
        }
    }
    fs.unmount().unwrap();
    for (p, e) in m.iter().take(60) {
        if let E::File(d) = e {
            assert!(debugfs(img, &format!("cat {p}")) == *d, "debugfs cat {p}");
        }
    }
}

/// One test per image: `name: (kind, block size, size, operations, seed)` for
/// [`run`] on a disk that does not fill.
macro_rules! random_tests {
    ($($name:ident: $args:expr,)*) => {$(
        #[test]
        fn $name() {
            let (kind, bs, size, ops, seed) = $args;
            run(kind, bs, size, ops, seed, false);
        }
    )*};
}

random_tests! {
    random_ext4_1k: ("ext4", 1024, "64M", 700, 11),
    random_ext4_4k: ("ext4", 4096, "64M", 700, 12),
    random_ext2_1k: ("ext2", 1024, "64M", 700, 13),
}

#[test]
fn random_small_disk() {
    run("ext4", 1024, "4M", 500, 14, true);
    run("ext2", 1024, "4M", 500, 15, true);
}
