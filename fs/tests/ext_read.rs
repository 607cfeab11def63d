//! Reading images made by mke2fs: every file, directory and symlink compares equal to
//! the source tree.

mod common;
use common::*;
use xenlet_fs::blockdev::MemDisk;
use xenlet_fs::{Ext, FileSystem, FsError, MountOptions};

fn roundtrip(kind: &str, bs: u32, size: &str, index: bool) {
    let t = TempDir::new(&format!("read-{kind}-{bs}"));
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    build_tree(&src, 2000);
    let img = t.path().join("img");
    mkfs(&img, kind, bs, size, Some(&src), &[]);
    if index {
        fsck_index_dirs(&img);
        let st = String::from_utf8_lossy(&debugfs(&img, "stat /many")).into_owned();
        assert!(
            st.contains("Flags: 0x81000") || st.contains("Flags: 0x1000"),
            "not indexed: {st}"
        );
    }
    let mut fs = Ext::mount(
        FileDisk::open(&img),
        MountOptions {
            read_only: true,
            now: || 0,
        },
    )
    .unwrap();
    assert!(fs.read_only());
    assert_eq!(fs.kind(), kind);
    let n = compare_tree(&mut fs, &src, "");
    assert!(n > 2000, "compared {n} entries");
    let sf = fs.statfs().unwrap();
    assert_eq!(sf.block_size, bs);
    assert!(sf.free_blocks < sf.blocks && sf.free_inodes < sf.inodes);
    assert_eq!(fs.lookup(fs.root(), "nope"), Err(FsError::NotFound));
    let big = resolve(&mut fs, "big").unwrap();
    let mut b = [0u8; 10];
    assert_eq!(fs.read(big, (1 << 20) + 12340, &mut b).unwrap(), 5);
    assert_eq!(fs.read(big, 1 << 30, &mut b).unwrap(), 0);
    assert_eq!(fs.write(big, 0, b"x"), Err(FsError::ReadOnly));
    unmount_clean(fs, &img);
}

/// One test per image: `name: (kind, block size, size, htree-indexed)`.
macro_rules! roundtrip_tests {
    ($($name:ident: $args:expr,)*) => {$(
        #[test]
        fn $name() {
            let (kind, bs, size, index) = $args;
            roundtrip(kind, bs, size, index);
        }
    )*};
}

roundtrip_tests! {
    ext4_1k: ("ext4", 1024, "64M", false),
    ext4_4k: ("ext4", 4096, "64M", false),
    ext4_4k_htree: ("ext4", 4096, "64M", true),
    ext4_1k_htree: ("ext4", 1024, "64M", true),
    ext2_1k: ("ext2", 1024, "64M", false),
    ext2_4k_htree: ("ext2", 4096, "64M", true),
}

#[test]
fn not_ext_is_refused() {
    let d = MemDisk {
        bytes: vec![0; 1 << 20],
        read_only: false,
    };
    assert!(matches!(
        Ext::mount(d, MountOptions::default()),
        Err(FsError::Unsupported(_))
    ));
}
