//! Writeback errors kept as Linux's `errseq_t` (issue 30): a data write lost behind
//! the filesystem's back (reported by the device at the next flush) is recorded for
//! the file and for the filesystem; each later `fsync` of that file that has not
//! seen it gets EIO once, `sync` and `umount` get the filesystem's once, a read
//! never consumes it, another file's `fsync` never gets it, and the filesystem is
//! not aborted (e2fsck -fn clean after).

mod common;
use common::*;
use std::path::PathBuf;
use xenlet_fs::{Ext, FileSystem, FsError, Ino};

type Fs = Ext<Counting<FileDisk>>;

fn is_eio(r: &Result<(), FsError>) -> bool {
    matches!(r, Err(FsError::Io(_)))
}

/// A mounted ext4 (in a temp dir tagged `tag`) with files "a" and "b" written and
/// synced, whose next device write will be lost ([`lose_next_write`]).
fn setup(tag: &str) -> (TempDir, PathBuf, Fs, Ino, Ino) {
    let (t, img) = fresh_image(tag, "ext4", 1024, "16M");
    let mut fs: Fs = Ext::mount(Counting::new(FileDisk::open(&img)), opts()).unwrap();
    let root = fs.root();
    let a = fs.create(root, "a", 0o644).unwrap();
    let b = fs.create(root, "b", 0o644).unwrap();
    fs.write(a, 0, &Rng(1).bytes(32 * 1024)).unwrap();
    fs.write(b, 0, &Rng(2).bytes(32 * 1024)).unwrap();
    fs.sync().unwrap();
    lose_next_write(&mut fs);
    (t, img, fs, a, b)
}

/// The next device write is lost; the next flush reports it.
fn lose_next_write(fs: &mut Fs) {
    let n = fs.device().faults.writes;
    fs.device_mut().faults.lose_write = Some(n);
}

/// "a" is appended to and its write lost; `fsync` of "b" makes the flush that finds
/// it (b's own fsync succeeds); a read of "a" does not consume it; the first `fsync`
/// of "a" gets EIO, the second Ok; `sync` (its own sampler) then gets it once too,
/// and `umount` (after that sync saw it) succeeds; e2fsck -fn is clean.
#[test]
fn fsync_reports_a_lost_write_to_its_file_once_and_sync_to_its_caller_once() {
    let (_t, img, mut fs, a, b) = setup("errseq-fsync");
    fs.write(a, 32 * 1024, &Rng(3).bytes(16 * 1024)).unwrap();
    // Another file's fsync: its flush finds the loss, which is not b's.
    assert_eq!(fs.fsync(b), Ok(()), "b's fsync got a's error");
    assert_eq!(fs.device().faults.injected, 1, "the write was not lost");
    assert!(!fs.read_only(), "a lost data write aborted");
    assert!(fs.writeback_error_pending());
    // A read does not take it.
    let got = read_all(&mut fs, a);
    assert_eq!(got.len(), 48 * 1024);
    assert_eq!(got[..32 * 1024], Rng(1).bytes(32 * 1024)[..]);
    assert!(
        got[32 * 1024..].iter().all(|&x| x == 0),
        "lost data not zeros"
    );
    // a's fsync: EIO once.
    let r = fs.fsync(a);
    assert!(is_eio(&r), "first fsync of a gave {r:?}");
    assert_eq!(fs.fsync(a), Ok(()), "second fsync of a");
    assert_eq!(fs.fsync(b), Ok(()));
    // The filesystem's sequence is another: the first sync gets it, once.
    assert!(fs.writeback_error_pending());
    let r = fs.sync();
    assert!(is_eio(&r), "first sync gave {r:?}");
    assert!(!fs.writeback_error_pending());
    assert_eq!(fs.sync(), Ok(()), "second sync");
    assert_eq!(fs.fsync(a), Ok(()));
    unmount_clean(fs, &img);
}

/// The loss found by `fsync` of the file itself is reported by that fsync (the
/// error comes after its sample); no `sync` has seen it, so `umount` reports it
/// once and leaves the filesystem mounted, and the next `umount` succeeds. A
/// rewrite of blocks already on the disk, lost, is such an error too (not an abort).
#[test]
fn umount_reports_an_error_no_sync_has_seen_once() {
    let (_t, img, mut fs, a, b) = setup("errseq-umount");
    fs.write(a, 0, &Rng(4).bytes(8 * 1024)).unwrap(); // a rewrite in place
    let r = fs.fsync(a);
    assert!(is_eio(&r), "fsync of a gave {r:?}");
    assert!(
        !fs.read_only(),
        "a lost rewrite aborted: {:?}",
        fs.read_only_reason()
    );
    assert_eq!(fs.fsync(a), Ok(()));
    assert_eq!(fs.fsync(b), Ok(()));
    let r = fs.unmount();
    assert!(is_eio(&r), "first umount gave {r:?}");
    // Still mounted and readable; the retry unmounts.
    let got = read_all(&mut fs, b);
    assert_eq!(got, Rng(2).bytes(32 * 1024));
    unmount_clean(fs, &img);
}

/// A file with an unreported error deleted, and its inode number given to a new
/// file: the new file's fsync does not get the old one's error (the filesystem's
/// sync still does).
#[test]
fn a_freed_inode_takes_its_error_with_it() {
    let (_t, img, mut fs, a, b) = setup("errseq-reuse");
    fs.write(a, 32 * 1024, &Rng(5).bytes(16 * 1024)).unwrap();
    assert_eq!(fs.fsync(b), Ok(()));
    let root = fs.root();
    fs.unlink(root, "a").unwrap();
    fs.sync().unwrap_err();
    let c = fs.create(root, "c", 0o644).unwrap();
    assert_eq!(c, a, "the inode number was not reused");
    fs.write(c, 0, b"new").unwrap();
    assert_eq!(fs.fsync(c), Ok(()));
    unmount_clean(fs, &img);
}

/// The same when the file is deleted before the flush that finds its lost write:
/// the error is the filesystem's only (the sync's), never the next file's on that
/// inode number. (A file whose data goes out before the same flush as the lost
/// write gets it too: the device cannot say which write it was.)
#[test]
fn a_file_deleted_before_the_flush_leaves_its_error_to_sync_only() {
    let (_t, img, mut fs, a, _) = setup("errseq-reuse-early");
    // Large enough to go out with the write call (not held back).
    fs.set_cache_bytes(64 << 10);
    fs.write(a, 32 * 1024, &Rng(6).bytes(256 * 1024)).unwrap();
    assert_eq!(fs.device().faults.injected, 1, "the write did not go out");
    let root = fs.root();
    fs.unlink(root, "a").unwrap();
    let r = fs.sync();
    assert!(is_eio(&r), "sync gave {r:?}");
    let c = fs.create(root, "c", 0o644).unwrap();
    assert_eq!(c, a, "the inode number was not reused");
    fs.write(c, 0, b"new").unwrap();
    assert_eq!(fs.fsync(c), Ok(()), "c got a's error");
    assert_eq!(fs.sync(), Ok(()));
    unmount_clean(fs, &img);
}
