//! Large writes straight from the caller's buffer (issue 30, "Speed"; `direct.rs`):
//! a write call's whole blocks (at least 256 KiB, what the kernel's `dd of=FILE`
//! passes) into a hole reach the device during the call, in requests as large as
//! the call, with no heap in proportion to the data; what the direct path cannot
//! take (blocks buffered or mapped already, a refused write, a disk too full for the
//! whole call) is buffered as before, and the file reads back whole.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use xenlet_fs::{Ext, FileSystem, FsError, Ino};

xenlet_testalloc::count_test_heap!();

type Fs = Ext<Counting<FileDisk>>;

/// A new ext4 image of `size` in a temp dir of its own (`tag`), mounted, with an
/// empty file `/f`: the dir (removed when dropped), the image, the mount, the file.
fn fresh(tag: &str, size: &str) -> (TempDir, PathBuf, Fs, Ino) {
    let (t, img) = fresh_image(tag, "ext4", 4096, size);
    let mut fs = Ext::mount(Counting::new(FileDisk::open(&img)), opts()).unwrap();
    let root = fs.root();
    let f = fs.create(root, "f", 0o644).unwrap();
    fs.sync().unwrap();
    (t, img, fs, f)
}

/// Syncs and unmounts `fs`, then checks its image `img`: e2fsck clean, the file
/// initialised and holding `data`.
fn reads_back(mut fs: Fs, img: &Path, data: &[u8]) {
    fs.sync().unwrap();
    fs.unmount().unwrap();
    drop(fs);
    fsck_clean(img);
    let ex = String::from_utf8_lossy(&debugfs(img, "ex /f")).into_owned();
    assert!(!ex.contains("Uninit"), "{ex}");
    assert!(debugfs(img, "cat /f") == data, "the file's data differs");
}

/// dd's 256 KiB chunks: each goes to the device within its call as one 256 KiB
/// write, the heap rising by far less than a chunk; the file is whole after a
/// sync, initialised, and e2fsck is clean.
#[test]
fn chunks_go_out_within_the_call_without_buffering() {
    let (_t, img, mut fs, f) = fresh("direct-chunks", "64M");
    let chunk = 256 << 10;
    let data = Rng(1).bytes(16 * chunk);
    for (i, c) in data.chunks(chunk).enumerate() {
        let before = fs.device().sizes.len();
        let (r, rise) = xenlet_testalloc::peak_during(|| fs.write(f, (i * chunk) as u64, c));
        assert_eq!(r.unwrap(), chunk);
        assert!(rise < 16 << 10, "chunk {i}: the heap rose by {rise} bytes");
        let sizes = &fs.device().sizes[before..];
        assert_eq!(sizes, [chunk], "chunk {i}: device writes {sizes:?}");
    }
    assert_eq!(fs.stats.data_bytes, data.len() as u64);
    reads_back(fs, &img, &data);
}

/// A write the device refuses ends the direct part: the call still succeeds, its
/// data is buffered (and reads back) until a sync writes it.
#[test]
fn a_refused_write_is_buffered_for_the_sync() {
    let (_t, img, mut fs, f) = fresh("direct-refused", "64M");
    let data = Rng(2).bytes(1 << 20);
    fs.device_mut().fail_writes = true;
    assert_eq!(fs.write(f, 0, &data).unwrap(), data.len());
    assert!(!fs.read_only(), "{:?}", fs.read_only_reason());
    assert_eq!(read_all(&mut fs, f), data);
    fs.device_mut().fail_writes = false;
    reads_back(fs, &img, &data);
}

/// A large write over buffered and mapped blocks: straight out up to the first
/// block that is not a hole, buffered from there (overwrites in place); every
/// byte lands where it should.
#[test]
fn blocks_buffered_or_mapped_are_written_the_buffered_way() {
    let (_t, img, mut fs, f) = fresh("direct-mixed", "64M");
    let mut model = vec![0u8; 3 << 20];
    let mut put = |fs: &mut Fs, off: usize, d: Vec<u8>| {
        assert_eq!(fs.write(f, off as u64, &d).unwrap(), d.len());
        model[off..off + d.len()].copy_from_slice(&d);
    };
    // Buffered (small) at 1 MiB + 4 KiB, then direct across it from 0.
    put(&mut fs, (1 << 20) + 4096, Rng(3).bytes(4096));
    put(&mut fs, 0, Rng(4).bytes(2 << 20));
    fs.sync().unwrap();
    // Over mapped blocks (and on into the hole past them), unaligned at the start.
    put(&mut fs, 512 << 10 | 100, Rng(5).bytes(2 << 20));
    assert_eq!(
        read_all(&mut fs, f),
        &model[..(512 << 10 | 100) + (2 << 20)]
    );
    reads_back(fs, &img, &model[..(512 << 10 | 100) + (2 << 20)]);
}

/// Filling the disk with large writes ends in ENOSPC at the data's limit, the
/// metadata reserve kept (a directory can still be made), and a clean filesystem
/// holding every byte the calls reported written.
#[test]
fn a_full_disk_ends_in_enospc_with_the_reserve_kept() {
    let (_t, img, mut fs, f) = fresh("direct-full", "16M");
    let chunk = Rng(6).bytes(1 << 20);
    let mut written = Vec::new();
    let end = loop {
        match fs.write(f, written.len() as u64, &chunk) {
            Ok(n) if n == chunk.len() => written.extend_from_slice(&chunk),
            Ok(n) => written.extend_from_slice(&chunk[..n]),
            Err(e) => break e,
        }
        assert!(written.len() < 16 << 20, "the disk never filled");
    };
    assert_eq!(end, FsError::NoSpace);
    assert!(
        written.len() > 8 << 20,
        "only {} bytes written",
        written.len()
    );
    let root = fs.root();
    fs.mkdir(root, "d", 0o755)
        .expect("mkdir on a full disk (the reserve)");
    reads_back(fs, &img, &written);
}
