//! The abort state (issue 30): an error in the middle of an operation that changes
//! metadata aborts the running transaction (nothing of it is committed), makes the
//! filesystem read-only with ERROR_FS in the superblock, and says why; an error
//! before the first change changes nothing. Driven by read errors injected at each
//! read of a `rename` over an existing file (the case where the old target used to
//! be released before the source entry went).

mod common;
use common::*;
use std::path::Path;
use xenlet_fs::{Ext, FileSystem, FsError};

/// `s_state` of the primary superblock of the image.
fn sb_state(img: &Path) -> u16 {
    let b = std::fs::read(img).unwrap();
    u16::from_le_bytes([b[1024 + 0x3A], b[1024 + 0x3B]])
}

const ERROR_FS: u16 = 2;

/// An image whose `/d` holds `new` (to be renamed over) `old` (a fragmented file,
/// with an extent tree block on disk) and `keep`; `errors` for tune2fs -e.
fn image(t: &TempDir, errors: &str) -> (std::path::PathBuf, Vec<u8>, Vec<u8>, Vec<u8>) {
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("d")).unwrap();
    let mut r = Rng(30);
    let (new, keep) = (r.bytes(5000), r.bytes(7000));
    std::fs::write(src.join("d/new"), &new).unwrap();
    std::fs::write(src.join("d/keep"), &keep).unwrap();
    let img = t.path().join("img");
    mkfs(&img, "ext4", 1024, "16M", Some(&src), &["-e", errors]);
    // `old`: written a block at a time between other files' blocks, so that it has
    // more extents than the inode holds.
    let old = r.bytes(40 * 1024);
    {
        let mut fs = mount(&img);
        let d = resolve(&mut fs, "d").unwrap();
        let o = fs.create(d, "old", 0o644).unwrap();
        let f = fs.create(d, "filler", 0o644).unwrap();
        for (i, c) in old.chunks(1024).enumerate() {
            fs.write(o, (i * 1024) as u64, c).unwrap();
            fs.write(f, (i * 1024) as u64, &[i as u8; 1024]).unwrap();
            fs.sync().unwrap();
        }
        assert!(fs.extents(o).unwrap().depth >= 1, "old has no tree block");
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    (img, old, new, keep)
}

struct Outcome {
    result: Result<(), FsError>,
    aborted: Option<String>,
}

/// Renames `d/new` over `d/old` with read `k` of the rename failing, then syncs and
/// unmounts (as a shutdown does); checks what the image must be.
/// The contents of the file at `path`.
fn cat<F: FileSystem>(fs: &mut F, path: &str) -> Vec<u8> {
    let i = resolve(fs, path).unwrap_or_else(|e| panic!("{path}: {e}"));
    read_all(fs, i)
}

fn rename_with_read_error(
    t: &TempDir,
    tmpl: &[u8],
    k: Option<u64>,
    want: (&[u8], &[u8], &[u8]),
) -> Outcome {
    let (old, new, keep) = want;
    let img = t.path().join("run.img");
    std::fs::write(&img, tmpl).unwrap();
    let mut fs = Ext::mount(Counting::new(FileDisk::open(&img)), opts()).unwrap();
    fs.set_cache_blocks(4);
    let d = resolve(&mut fs, "d").unwrap();
    fs.device_mut().faults = Faults {
        fail_read: k,
        ..Faults::default()
    };
    let result = fs.rename(d, "new", d, "old");
    let aborted = fs
        .read_only()
        .then(|| fs.read_only_reason().unwrap_or_default());
    // The bad sectors are mended (remapped) before the checks read around them.
    fs.device_mut().faults.bad.clear();
    match (&result, &aborted) {
        (Ok(()), None) => {}
        (Ok(()), Some(why)) => {
            panic!("k={k:?}: rename succeeded but the mount is read-only: {why}")
        }
        (Err(e), None) => {
            // Failed before the first change: everything as it was.
            assert_eq!(cat(&mut fs, "d/new"), new, "k={k:?} {e}");
            assert_eq!(cat(&mut fs, "d/old"), old, "k={k:?} {e}");
        }
        (Err(_), Some(why)) => {
            assert!(
                why.contains("read-only") && why.contains("rename"),
                "k={k:?}: {why}"
            );
            let root = fs.root();
            assert_eq!(fs.create(root, "x", 0o644), Err(FsError::ReadOnly));
            assert_eq!(fs.unlink(d, "keep"), Err(FsError::ReadOnly));
            // Reads still work.
            assert_eq!(cat(&mut fs, "d/keep"), keep);
        }
    }
    let _ = fs.sync();
    fs.unmount()
        .unwrap_or_else(|e| panic!("k={k:?}: unmount: {e}"));
    drop(fs);
    if aborted.is_some() {
        assert_ne!(sb_state(&img) & ERROR_FS, 0, "k={k:?}: ERROR_FS not set");
        fsck_repair(&img, &format!("k={k:?}"));
    }
    fsck_clean(&img);
    // Synced before: intact. The rename: all or nothing.
    let mut fs = Ext::mount(
        FileDisk::open(&img),
        xenlet_fs::MountOptions {
            read_only: true,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(cat(&mut fs, "d/keep"), keep, "k={k:?}");
    let got_old = cat(&mut fs, "d/old");
    match resolve(&mut fs, "d/new") {
        Ok(i) => {
            assert_eq!(got_old, old, "k={k:?}: both names, old replaced");
            assert_eq!(read_all(&mut fs, i), new, "k={k:?}");
        }
        Err(_) => assert_eq!(got_old, new, "k={k:?}: rename half done"),
    }
    Outcome { result, aborted }
}

/// A read error at each read of a rename over an existing file: the rename happens
/// whole, fails before changing anything, or aborts (read-only, ERROR_FS, nothing
/// of it committed); the image is then clean (after e2fsck -fy for an abort).
#[test]
fn rename_over_a_file_with_a_read_error_anywhere() {
    let t = TempDir::new("abort-rename");
    let (img, old, new, keep) = image(&t, "continue");
    let tmpl = std::fs::read(&img).unwrap();
    // The reads of a rename without faults.
    let reads = {
        let mut fs = Ext::mount(Counting::new(FileDisk::open(&img)), opts()).unwrap();
        fs.set_cache_blocks(4);
        let d = resolve(&mut fs, "d").unwrap();
        let before = fs.device().faults.reads;
        fs.rename(d, "new", d, "old").unwrap();
        fs.device().faults.reads - before
    };
    std::fs::write(&img, &tmpl).unwrap();
    assert!(reads >= 3, "{reads} reads");
    let (mut failed_clean, mut aborts) = (0, 0);
    for k in 0..reads {
        let o = rename_with_read_error(&t, &tmpl, Some(k), (&old, &new, &keep));
        match (&o.result, &o.aborted) {
            (Err(_), None) => failed_clean += 1,
            (Err(_), Some(_)) => aborts += 1,
            _ => {}
        }
    }
    eprintln!("{reads} reads: {failed_clean} failed before any change, {aborts} aborted");
    assert!(aborts > 0, "no read error came after the first change");
    assert!(failed_clean > 0);
}

/// The superblock's `s_errors` is honoured and said: continue and remount-ro both
/// abort the transaction (it cannot be committed half done) and go read-only; panic is
/// treated as remount-ro, saying so.
#[test]
fn abort_reports_the_errors_behaviour() {
    for (errors, says) in [
        ("remount-ro", "errors=remount-ro"),
        ("panic", "errors=panic"),
        ("continue", "errors=continue"),
    ] {
        let t = TempDir::new("abort-errors");
        let (img, old, new, keep) = image(&t, errors);
        let tmpl = std::fs::read(&img).unwrap();
        // The last read of the rename comes after its first change.
        let mut k = 0;
        let why = loop {
            let o = rename_with_read_error(&t, &tmpl, Some(k), (&old, &new, &keep));
            if let Some(why) = o.aborted {
                break why;
            }
            k += 1;
            assert!(k < 100, "{errors}: never aborted");
        };
        assert!(why.contains(says), "{errors}: {why}");
        if errors == "panic" {
            assert!(why.contains("remount-ro"), "{why}");
        }
    }
}
