//! A full disk never wedges the mount (issue 30): tree blocks come from a reserved
//! pool that file data cannot take (as Linux's `s_resv_clusters`), frees are usable
//! for the next transaction's allocations, an allocation that fails is retried after
//! a commit; `statfs` reports the reserve as Linux does.

mod common;
use common::*;
use xenlet_fs::{Ext, FileSystem, FsError, Ino};

/// Fills the filesystem with small files whose blocks are fragmented (every other
/// one-block file deleted), then writes files of many one-block extents (each needs
/// a tree block at sync), without a sync between, until the disk is full; then deletes files: writes work
/// again, sync and unmount succeed, and e2fsck is clean.
#[test]
fn a_full_disk_of_fragmented_files_recovers_after_deletes() {
    // 12 one-block extents a file: the tree blocks fit the reserve, a sync of the
    // full disk succeeds.
    full_disk_of_fragmented_files(12, true);
}

/// As above with 5 one-block extents a file: more tree blocks than the reserve
/// holds, so the sync of the full disk may report ENOSPC (nothing is lost: the
/// data stays buffered); deleting files makes room: the next sync commits it all.
#[test]
fn tree_blocks_past_the_reserve_take_the_blocks_deletes_free() {
    full_disk_of_fragmented_files(5, false);
}

fn full_disk_of_fragmented_files(per_file: usize, sync_when_full: bool) {
    let (_t, img) = fresh_image_with(
        "enospc-frag",
        "ext4",
        1024,
        "4M",
        &["-N", "4096", "-m", "0"],
    );
    let mut fs = mount(&img);
    let root = fs.root();
    // One-block files until the disk is full.
    let mut n = 0;
    loop {
        let f = match fs.create(root, &format!("s{n}"), 0o644) {
            Ok(f) => f,
            Err(FsError::NoSpace) => break,
            Err(e) => panic!("create s{n}: {e}"),
        };
        match fs.write(f, 0, &[n as u8; 1024]) {
            Ok(_) => n += 1,
            Err(FsError::NoSpace) => {
                fs.unlink(root, &format!("s{n}")).unwrap();
                break;
            }
            Err(e) => panic!("write s{n}: {e}"),
        }
    }
    fs.sync().unwrap();
    assert!(n > 1000, "{n} small files");
    for i in (0..n).step_by(2) {
        fs.unlink(root, &format!("s{i}")).unwrap();
    }
    fs.sync().unwrap();
    // Files of `per_file` one-block extents each, until full.
    let mut big: Vec<(String, Ino, Vec<u8>)> = Vec::new();
    let mut r = Rng(4);
    let mut full = None;
    'fill: for i in 0.. {
        let name = format!("b{i}");
        let f = match fs.create(root, &name, 0o644) {
            Ok(f) => f,
            Err(e) => {
                full = Some(e);
                break;
            }
        };
        let data = r.bytes(per_file * 1024);
        for (j, c) in data.chunks(1024).enumerate() {
            if let Err(e) = fs.write(f, (j * 1024) as u64, c) {
                full = Some(e);
                big.push((name, f, data[..j * 1024].to_vec()));
                break 'fill;
            }
        }
        // No sync: the tree blocks all these files need are allocated at once.
        big.push((name, f, data));
    }
    assert_eq!(full, Some(FsError::NoSpace));
    let st = fs.statfs().unwrap();
    assert!(st.avail_blocks <= st.free_blocks);
    let synced = fs.sync();
    eprintln!(
        "{per_file} extents a file: {n} small files, {} files until {full:?}; sync when full: {synced:?}",
        big.len()
    );
    match synced {
        Ok(()) => {}
        Err(FsError::NoSpace) if !sync_when_full => {}
        Err(e) => panic!("sync of a full disk: {e}"),
    }
    // Delete half the small files: writes work again without a remount.
    for i in (1..n).step_by(2).take(n / 4) {
        fs.unlink(root, &format!("s{i}")).unwrap();
    }
    let f = fs
        .create(root, "after", 0o644)
        .expect("create after deletes");
    let data = r.bytes(100 * 1024);
    assert_eq!(
        fs.write(f, 0, &data).expect("write after deletes"),
        data.len()
    );
    fs.sync().expect("sync after deletes");
    fs.unmount().expect("unmount");
    drop(fs);
    fsck_clean(&img);
    let mut fs = mount(&img);
    assert_eq!(read_all(&mut fs, f), data);
    for (name, ino, d) in &big {
        assert_eq!(resolve(&mut fs, name).unwrap(), *ino);
        assert_eq!(&read_all(&mut fs, *ino), d, "{name}");
    }
    fs.unmount().unwrap();
}

/// `statfs` as Linux's ext4: free blocks exclude blocks promised to buffered data;
/// available ones also the root reserve and the metadata reserve (2 % of the
/// blocks, at most 4,096).
#[test]
fn statfs_reports_the_metadata_reserve() {
    let (_t, img) = fresh_image_with("enospc-statfs", "ext4", 1024, "16M", &["-m", "5"]);
    let mut fs = Ext::mount(FileDisk::open(&img), opts()).unwrap();
    let st = fs.statfs().unwrap();
    let resv = (st.blocks / 50).min(4096);
    let r_blocks = st.blocks * 5 / 100;
    assert_eq!(st.avail_blocks, st.free_blocks - r_blocks - resv, "{st:?}");
    fs.unmount().unwrap();
}
