//! Mounting a filesystem that needs journal recovery: the journal is replayed (as
//! Linux and `e2fsck` would), the result matches e2fsck's replay, and the
//! filesystem is clean afterwards. A log is written with debugfs's journal
//! commands (`jo -c`, `jw`, `jc`), which leave `needs_recovery` set.

mod common;

use common::*;
use std::fs;
use xenlet_fs::{FileSystem, FsError};

fn block_of(img: &std::path::Path, path: &str) -> u64 {
    let out = String::from_utf8(debugfs(img, &format!("bmap {path} 0"))).unwrap();
    out.trim().parse().unwrap_or_else(|_| panic!("bmap: {out}"))
}

fn needs_recovery(img: &std::path::Path) -> bool {
    dumpe2fs_h(img).contains("needs_recovery")
}

#[test]
fn a_logged_file_block_is_replayed_at_mount_like_e2fsck_does() {
    for bs in [1024u32, 4096] {
        let t = TempDir::new(&format!("recover{bs}"));
        let src = t.path().join("src");
        fs::create_dir_all(src.join("etc/config")).unwrap();
        fs::write(src.join("etc/config/network"), vec![b'A'; bs as usize]).unwrap();
        fs::write(src.join("keep"), b"unchanged\n").unwrap();
        let img = t.path().join("ours.img");
        mkfs(&img, "ext4", bs, "64M", Some(&src), &[]);
        let b = block_of(&img, "/etc/config/network");
        // The new content of that block, logged and committed but not written home.
        let data = t.path().join("data");
        fs::write(&data, vec![b'B'; bs as usize]).unwrap();
        debugfs_w(&img, &format!("jo -c\njw -b {b} {}\njc\n", data.display()));
        assert!(needs_recovery(&img), "debugfs left no log");
        let theirs = t.path().join("theirs.img");
        fs::copy(&img, &theirs).unwrap();

        // A read-only device cannot be replayed: refused, nothing written.
        let before = fs::read(&img).unwrap();
        let mut ro = FileDisk::open(&img);
        ro.read_only = true;
        assert!(matches!(
            xenlet_fs::Ext::mount(ro, opts()).err(),
            Some(FsError::Unsupported(_))
        ));
        assert_eq!(fs::read(&img).unwrap(), before, "nothing written");

        let mut fs = mount(&img);
        let st = *fs.replayed().expect("replayed");
        assert_eq!((st.transactions, st.blocks_replayed), (1, 1), "{st:?}");
        let ino = resolve(&mut fs, "/etc/config/network").unwrap();
        assert_eq!(read_all(&mut fs, ino), vec![b'B'; bs as usize]);
        let keep = resolve(&mut fs, "/keep").unwrap();
        assert_eq!(read_all(&mut fs, keep), b"unchanged\n");
        fs.unmount().unwrap();
        drop(fs);
        assert!(!needs_recovery(&img));
        fsck_clean(&img);

        // e2fsck's replay gives the same file.
        fsck_repair(&theirs, "e2fsck's replay");
        assert_eq!(
            debugfs(&img, "cat /etc/config/network"),
            debugfs(&theirs, "cat /etc/config/network")
        );
    }
}
