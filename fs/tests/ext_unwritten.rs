//! Defect 3 of issue 30: a failed data write never exposes a deleted file's bytes.
//! New blocks are unwritten extents until their write is known to have reached the
//! disk (the flush after it succeeded, as the kernel's write-behind reports it);
//! after a lost write they stay unwritten and read as zeros, the filesystem is not
//! aborted, a retried sync succeeds and e2fsck accepts the unwritten extents.

mod common;
use common::*;
use std::path::Path;
use xenlet_fs::{Ext, FileSystem, FsError, Ino};

type Fs = Ext<Counting<FileDisk>>;

fn mount_counting(img: &Path) -> Fs {
    Ext::mount(Counting::new(FileDisk::open(img)), opts()).unwrap()
}

fn phys_blocks(fs: &mut Fs, ino: Ino) -> Vec<u64> {
    let e = fs.extents(ino).unwrap();
    e.extents
        .iter()
        .flat_map(|&(_, len, p)| p..p + len as u64)
        .collect()
}

/// Whether some `bs`-sized block of `got` equals a block of `old` (a deleted file's
/// bytes showing through).
fn shows_old(got: &[u8], old: &[u8], bs: usize) -> bool {
    let olds: std::collections::HashSet<&[u8]> = old.chunks(bs).collect();
    got.chunks(bs).any(|c| olds.contains(c))
}

/// `debugfs -R "ex PATH"`'s output.
fn ex(img: &Path, path: &str) -> String {
    String::from_utf8_lossy(&debugfs(img, &format!("ex {path}"))).into_owned()
}

/// A file is written over the blocks of a deleted one and its data write is lost,
/// the loss reported at the next flush (the sync's): the file reads zeros, never the
/// deleted file's bytes, before and after the retried sync and a remount; the
/// mount is not aborted; e2fsck -fn is clean with the unwritten extents on disk;
/// writing the blocks again turns them initialised.
#[test]
fn lost_data_write_never_exposes_a_deleted_file() {
    for bs in [1024u32, 4096] {
        let (_t, img) = fresh_image("unwritten-lost", "ext4", bs, "16M");
        let bsz = bs as usize;
        let old = Rng(3).bytes(256 * 1024);
        let new = Rng(4).bytes(256 * 1024);
        let mut fs = mount_counting(&img);
        let root = fs.root();
        let o = fs.create(root, "old", 0o644).unwrap();
        fs.write(o, 0, &old).unwrap();
        fs.sync().unwrap();
        let old_blocks = phys_blocks(&mut fs, o);
        fs.unlink(root, "old").unwrap();
        fs.sync().unwrap();
        let n = fs.create(root, "new", 0o644).unwrap();
        fs.sync().unwrap();
        // The first write from here is the file data (in the write call, which
        // sends a write this large straight out, or at the sync): lost, reported at
        // the sync's flush.
        fs.device_mut().faults = Faults {
            lose_write: Some(0),
            ..Faults::default()
        };
        fs.write(n, 0, &new).unwrap();
        let r = fs.sync();
        assert!(matches!(r, Err(FsError::Io(_))), "bs {bs}: sync gave {r:?}");
        assert_eq!(fs.device().faults.injected, 1);
        let reused = phys_blocks(&mut fs, n)
            .iter()
            .filter(|b| old_blocks.contains(b))
            .count();
        assert!(reused > 0, "bs {bs}: new took none of old's blocks");
        let got = read_all(&mut fs, n);
        assert_eq!(got.len(), new.len());
        assert!(!shows_old(&got, &old, bsz), "bs {bs}: old data exposed");
        assert!(got.iter().all(|&b| b == 0), "bs {bs}: lost data not zeros");
        assert!(
            !fs.read_only(),
            "bs {bs}: a lost data write aborted: {:?}",
            fs.read_only_reason()
        );
        // The retried sync commits the unwritten extents.
        fs.sync().unwrap();
        unmount_clean(fs, &img);
        assert!(ex(&img, "/new").contains("Uninit"), "{}", ex(&img, "/new"));
        let mut fs = mount_counting(&img);
        let n = resolve(&mut fs, "new").unwrap();
        let got = read_all(&mut fs, n);
        assert_eq!(got.len(), new.len());
        assert!(got.iter().all(|&b| b == 0), "bs {bs}: after remount");
        // Written again (no fault): initialised, the data reads back.
        fs.write(n, 0, &new).unwrap();
        unmount_clean(fs, &img);
        assert!(!ex(&img, "/new").contains("Uninit"), "{}", ex(&img, "/new"));
        assert!(debugfs(&img, "cat /new") == new);
    }
}

/// Appends whose write is lost extend an initialised extent physically: the map
/// splits into an initialised and an unwritten extent; rewriting the middle of the
/// unwritten part splits it again; e2fsck accepts every step and each range reads
/// what it must. The loss is reported later: the data went out as write-behind
/// (the write call's own write-out of a full buffer), the error at the sync's flush.
#[test]
fn mixed_initialised_and_unwritten_extents_split() {
    let bs = 1024usize;
    let (_t, img) = fresh_image("unwritten-mixed", "ext4", bs as u32, "16M");
    let a = Rng(5).bytes(16 * bs);
    let b = Rng(6).bytes(96 * bs);
    let c = Rng(7).bytes(4 * bs);
    {
        let mut fs = mount_counting(&img);
        let root = fs.root();
        let f = fs.create(root, "f", 0o644).unwrap();
        fs.write(f, 0, &a).unwrap();
        fs.sync().unwrap();
        // Data held back past 64 KiB is written by the write call itself.
        fs.set_cache_bytes(64 << 10);
        fs.device_mut().faults = Faults {
            lose_write: Some(0),
            ..Faults::default()
        };
        let mut off = 0;
        while off < b.len() {
            off += fs.write(f, (16 * bs + off) as u64, &b[off..]).unwrap();
        }
        assert_eq!(
            fs.device().faults.injected,
            1,
            "the data write was not lost"
        );
        assert!(matches!(fs.sync(), Err(FsError::Io(_))));
        assert!(!fs.read_only());
        fs.sync().unwrap();
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    let e = ex(&img, "/f");
    assert!(e.contains("Uninit"), "{e}");
    let check = |want: &[(usize, &[u8])]| {
        let mut fs = mount_counting(&img);
        let f = resolve(&mut fs, "f").unwrap();
        let got = read_all(&mut fs, f);
        assert_eq!(got.len(), 112 * bs);
        let mut expect = vec![0u8; 112 * bs];
        for (at, d) in want {
            expect[*at..*at + d.len()].copy_from_slice(d);
        }
        for (i, (g, w)) in got.chunks(bs).zip(expect.chunks(bs)).enumerate() {
            assert!(g == w, "block {i} differs: {}", ex(&img, "/f"));
        }
        fs.unmount().unwrap();
    };
    // The first 64 KiB of the append went out with the write and were lost, the rest
    // at the sync; the flush that failed cannot say which write it was, so every
    // block written since the last good flush is unwritten again (zeros).
    check(&[(0, &a)]);
    {
        let mut fs = mount_counting(&img);
        let f = resolve(&mut fs, "f").unwrap();
        fs.write(f, (20 * bs) as u64, &c).unwrap();
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    let e = ex(&img, "/f");
    assert_eq!(e.matches("Uninit").count(), 2, "{e}");
    check(&[(0, &a), (20 * bs, &c)]);
}

/// A disk that fails every write from some point (dm-flakey's `error_writes` under
/// the real-Xen `fs-fault-pvh`): a copy's data and the syncs after it fail; the
/// sync that gets to the metadata commit finds the journal unwritable and aborts:
/// the filesystem goes read-only with its reason (it does not stay writable,
/// failing every sync for ever), reads go on, and a file synced before is whole.
#[test]
fn a_disk_failing_every_write_ends_in_an_abort_not_endless_eio() {
    let (_t, img) = fresh_image("unwritten-dead", "ext4", 1024, "16M");
    let mut fs = mount_counting(&img);
    let root = fs.root();
    let kept = Rng(5).bytes(64 * 1024);
    let k = fs.create(root, "synced", 0o644).unwrap();
    fs.write(k, 0, &kept).unwrap();
    fs.sync().unwrap();
    let from = fs.device().faults.writes;
    fs.device_mut().faults.lose_writes_from = Some(from);
    let d = fs.mkdir(root, "dst", 0o755).unwrap();
    for i in 0..20 {
        let data = Rng(100 + i).bytes(32 * 1024);
        match fs.create(d, &format!("f{i}"), 0o644) {
            Ok(f) => {
                let _ = fs.write(f, 0, &data);
            }
            Err(_) => break,
        }
    }
    let mut results = Vec::new();
    for _ in 0..4 {
        results.push(fs.sync());
        if fs.error().is_some() {
            break;
        }
    }
    assert!(
        fs.error().is_some(),
        "still writable after {} failing syncs: {results:?}",
        results.len()
    );
    assert!(fs.read_only());
    assert!(matches!(
        fs.create(root, "after", 0o644),
        Err(FsError::ReadOnly)
    ));
    assert_eq!(read_all(&mut fs, k), kept);
}
