//! Writing: workloads through `Ext`, then e2fsck -fn must be clean and debugfs must
//! read back what the model says.

mod common;
use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use xenlet_fs::{Ext, FileSystem, FileType, FsError, Ino};

/// Expected contents: path -> Some(bytes) for files, None for directories.
type Model = BTreeMap<String, Option<Vec<u8>>>;

fn check_with_debugfs(img: &Path, model: &Model) {
    fsck_clean(img);
    for (p, v) in model {
        match v {
            Some(data) => {
                let got = debugfs(img, &format!("cat {p}"));
                assert_eq!(got.len(), data.len(), "debugfs cat {p}: length");
                assert!(got == *data, "debugfs cat {p}: content differs");
            }
            None => {
                let st = String::from_utf8_lossy(&debugfs(img, &format!("stat {p}"))).into_owned();
                assert!(st.contains("Type: directory"), "{p}: {st}");
            }
        }
    }
}

fn check_with_ext(img: &Path, model: &Model) {
    let mut fs = mount(img);
    for (p, v) in model {
        let ino = resolve(&mut fs, p).unwrap_or_else(|e| panic!("{p}: {e}"));
        match v {
            Some(data) => assert!(read_all(&mut fs, ino) == *data, "{p} differs"),
            None => assert_eq!(fs.stat(ino).unwrap().kind, FileType::Dir),
        }
    }
    fs.unmount().unwrap();
}

fn write_file<F: FileSystem>(fs: &mut F, ino: Ino, data: &[u8], r: &mut Rng) {
    let mut off = 0;
    while off < data.len() {
        let n = (1 + r.below(20000) as usize).min(data.len() - off);
        assert_eq!(fs.write(ino, off as u64, &data[off..off + n]).unwrap(), n);
        off += n;
    }
}

fn workload(kind: &str, bs: u32, extra: &[&str]) {
    let t = TempDir::new(&format!("write-{kind}-{bs}"));
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    build_tree(&src, 300);
    let img = t.path().join("img");
    mkfs(&img, kind, bs, "64M", Some(&src), extra);
    fsck_index_dirs(&img); // /many becomes an htree directory
    let mut r = Rng(0xfeed_beef ^ bs as u64);
    let mut model = Model::new();
    {
        let mut fs = mount(&img);
        assert!(!fs.read_only());
        let root = fs.root();
        // New files of varied sizes.
        for (i, size) in [0usize, 1, 4095, 4096, 4097, 70000, 1 << 20, 3 << 20]
            .iter()
            .enumerate()
        {
            let ino = fs.create(root, &format!("new{i}"), 0o644).unwrap();
            let data = r.bytes(*size);
            write_file(&mut fs, ino, &data, &mut r);
            model.insert(format!("/new{i}"), Some(data));
        }
        assert_eq!(fs.create(root, "new1", 0o644), Err(FsError::Exists));
        // Overwrite in the middle of an existing file (from mkfs).
        let big = resolve(&mut fs, "big").unwrap();
        let mut data = std::fs::read(src.join("big")).unwrap();
        let patch = r.bytes(10000);
        fs.write(big, 5000, &patch).unwrap();
        data[5000..15000].copy_from_slice(&patch);
        model.insert("/big".into(), Some(data));
        // Holes: write far past the end.
        let h = fs.create(root, "holes", 0o600).unwrap();
        fs.write(h, 3 << 20, b"tail").unwrap();
        fs.write(h, 100, b"head").unwrap();
        let mut hd = vec![0u8; (3 << 20) + 4];
        hd[100..104].copy_from_slice(b"head");
        hd[3 << 20..].copy_from_slice(b"tail");
        model.insert("/holes".into(), Some(hd));
        // Truncate: shrink (mid-block), grow.
        let t5 = resolve(&mut fs, "new5").unwrap();
        fs.truncate(t5, 12345).unwrap();
        let mut d5 = model["/new5"].clone().unwrap();
        d5.truncate(12345);
        fs.truncate(t5, 20000).unwrap();
        d5.resize(20000, 0);
        model.insert("/new5".into(), Some(d5));
        let t7 = resolve(&mut fs, "new7").unwrap();
        fs.truncate(t7, 0).unwrap();
        fs.write(t7, 0, b"again").unwrap();
        model.insert("/new7".into(), Some(b"again".to_vec()));
        // Directories.
        let a = fs.mkdir(root, "a", 0o755).unwrap();
        let b = fs.mkdir(a, "b", 0o755).unwrap();
        let c = fs.mkdir(b, "c", 0o755).unwrap();
        let f = fs.create(c, "deep", 0o644).unwrap();
        fs.write(f, 0, b"deep file").unwrap();
        assert_eq!(fs.stat(a).unwrap().nlink, 3);
        model.insert("/a".into(), None);
        model.insert("/a/b".into(), None);
        let e = fs.mkdir(root, "empty-dir", 0o755).unwrap();
        assert_eq!(fs.rmdir(root, "a"), Err(FsError::NotEmpty));
        fs.rmdir(root, "empty-dir").unwrap();
        assert_eq!(fs.stat(e).unwrap().nlink, 0);
        // Rename: move a directory across parents.
        fs.rename(b, "c", root, "c-moved").unwrap();
        assert_eq!(fs.lookup(c, "..").unwrap(), root);
        model.insert("/c-moved".into(), None);
        model.insert("/c-moved/deep".into(), Some(b"deep file".to_vec()));
        assert!(matches!(
            fs.rename(root, "a", b, "under-itself"),
            Err(FsError::Invalid(_))
        ));
        // Rename replacing a file.
        fs.rename(root, "new2", root, "new3").unwrap();
        let d2 = model.remove("/new2").unwrap();
        model.insert("/new3".into(), d2);
        // Replace an empty directory with a directory.
        fs.mkdir(root, "target", 0o755).unwrap();
        fs.rename(root, "a", root, "target").unwrap();
        model.remove("/a");
        model.remove("/a/b");
        model.insert("/target".into(), None);
        model.insert("/target/b".into(), None);
        // Unlink.
        fs.unlink(root, "new4").unwrap();
        model.remove("/new4");
        assert_eq!(fs.unlink(root, "target"), Err(FsError::IsDir));
        // The htree directory: add and remove names.
        let many = resolve(&mut fs, "many").unwrap();
        for i in 0..400 {
            let ino = fs.create(many, &format!("added-{i}"), 0o644).unwrap();
            fs.write(ino, 0, format!("added {i}").as_bytes()).unwrap();
            if i % 50 == 0 {
                model.insert(
                    format!("/many/added-{i}"),
                    Some(format!("added {i}").into_bytes()),
                );
            }
        }
        for i in (0..300).step_by(3) {
            fs.unlink(many, &format!("entry-with-a-longer-name-{i:05}"))
                .unwrap();
        }
        model.insert(
            "/many/entry-with-a-longer-name-00001".into(),
            Some(b"1".to_vec()),
        );
        // Times.
        fs.set_times(f, 1000, 2000).unwrap();
        assert_eq!(fs.stat(f).unwrap().mtime, 2000);
        fs.unmount().unwrap();
    }
    check_with_debugfs(&img, &model);
    check_with_ext(&img, &model);
    let st = String::from_utf8_lossy(&debugfs(&img, "stat /c-moved/deep")).into_owned();
    assert!(st.contains("mtime: 0x000007d0"), "{st}");
}

/// One test per image: `name: (kind, block size, extra mke2fs options)` for
/// [`workload`], each with its doc.
macro_rules! workload_tests {
    ($($(#[$doc:meta])* $name:ident: $args:expr,)*) => {$(
        $(#[$doc])*
        #[test]
        fn $name() {
            let (kind, bs, extra): (&str, u32, &[&str]) = $args;
            workload(kind, bs, extra);
        }
    )*};
}

workload_tests! {
    workload_ext4_1k: ("ext4", 1024, &[]),
    workload_ext4_4k: ("ext4", 4096, &[]),
    /// metadata_csum with 32-byte group descriptors (no 64bit): 16-bit bitmap
    /// checksums.
    workload_ext4_32bit_descriptors: ("ext4", 4096, &["-O", "^64bit"]),
    /// uninit_bg (gdt_csum, crc16 descriptors) instead of metadata_csum, as older
    /// ext4.
    workload_ext4_gdt_csum: ("ext4", 1024, &["-O", "^metadata_csum,uninit_bg"]),
    /// ext3: a journal and indirect blocks.
    workload_ext3: ("ext3", 1024, &[]),
    workload_ext2_1k: ("ext2", 1024, &[]),
    workload_ext2_4k: ("ext2", 4096, &[]),
}

/// Interleaved, synced one-block writes fragment two files into hundreds of extents:
/// the tree must grow (depth 2 with 1 KiB blocks) and shrink again on truncate.
#[test]
fn extent_tree_grows_and_shrinks() {
    let (_t, img) = fresh_image("deep-extents", "ext4", 1024, "32M");
    let mut r = Rng(99);
    let n = 400;
    let (da, db) = (r.bytes(n * 1024), r.bytes(n * 1024));
    {
        let mut fs = mount(&img);
        let root = fs.root();
        let a = fs.create(root, "a", 0o644).unwrap();
        let b = fs.create(root, "b", 0o644).unwrap();
        for i in 0..n {
            fs.write(a, (i * 1024) as u64, &da[i * 1024..(i + 1) * 1024])
                .unwrap();
            fs.write(b, (i * 1024) as u64, &db[i * 1024..(i + 1) * 1024])
                .unwrap();
            fs.sync().unwrap();
        }
        let ea = fs.extents(a).unwrap();
        assert!(ea.extents.len() > 336, "only {} extents", ea.extents.len());
        assert_eq!(ea.depth, 2);
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    assert!(debugfs(&img, "cat /a") == da);
    assert!(debugfs(&img, "cat /b") == db);
    {
        let mut fs = mount(&img);
        let a = resolve(&mut fs, "a").unwrap();
        fs.truncate(a, 100 * 1024).unwrap();
        fs.sync().unwrap();
        let ea = fs.extents(a).unwrap();
        assert_eq!(ea.depth, 1);
        fs.truncate(a, 3 * 1024).unwrap();
        fs.sync().unwrap();
        assert_eq!(fs.extents(a).unwrap().depth, 0);
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    assert!(debugfs(&img, "cat /a") == da[..3 * 1024]);
}

/// Filling the disk gives NoSpace (or a short write), never corruption.
#[test]
fn enospc_is_clean() {
    for kind in ["ext4", "ext2"] {
        let (_t, img) = fresh_image("enospc", kind, 1024, "8M");
        let mut written = Vec::new();
        {
            let mut fs = mount(&img);
            let root = fs.root();
            let mut r = Rng(5);
            let mut full = false;
            for i in 0..100 {
                let ino = match fs.create(root, &format!("f{i}"), 0o644) {
                    Ok(i) => i,
                    Err(FsError::NoSpace) => break,
                    Err(e) => panic!("{e}"),
                };
                let data = r.bytes(300_000);
                let mut off = 0;
                while off < data.len() {
                    match fs.write(ino, off as u64, &data[off..(off + 65536).min(data.len())]) {
                        Ok(n) => off += n,
                        Err(FsError::NoSpace) => {
                            full = true;
                            break;
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                written.push((format!("/f{i}"), data[..off].to_vec()));
                if full {
                    break;
                }
            }
            assert!(full, "{kind}: disk never filled");
            fs.unmount().unwrap();
        }
        fsck_clean(&img);
        for (p, d) in &written {
            assert!(debugfs(&img, &format!("cat {p}")) == *d, "{kind} {p}");
        }
        // Freeing space makes room again.
        let mut fs = mount(&img);
        let root = fs.root();
        fs.unlink(root, "f0").unwrap();
        let ino = fs.create(root, "after", 0o644).unwrap();
        assert_eq!(fs.write(ino, 0, &[7u8; 100_000]).unwrap(), 100_000);
        unmount_clean(fs, &img);
    }
}

#[test]
fn read_only_mount_refuses_writes_and_leaves_image_alone() {
    let (_t, img) = fresh_image("ro", "ext4", 4096, "16M");
    let before = std::fs::read(&img).unwrap();
    let mut disk = FileDisk::open(&img);
    disk.read_only = true;
    let mut fs = Ext::mount(disk, opts()).unwrap();
    assert!(fs.read_only());
    let root = fs.root();
    assert_eq!(fs.create(root, "x", 0o644), Err(FsError::ReadOnly));
    assert_eq!(fs.mkdir(root, "x", 0o755), Err(FsError::ReadOnly));
    fs.unmount().unwrap();
    assert!(std::fs::read(&img).unwrap() == before);
}

/// Moving an htree-indexed directory to another parent rewrites its "..": the index
/// root's checksum covers it, so the directory is de-indexed first.
#[test]
fn move_indexed_directory() {
    let t = TempDir::new("move-htree");
    let src = t.path().join("src");
    std::fs::create_dir_all(src.join("big")).unwrap();
    std::fs::create_dir_all(src.join("other")).unwrap();
    for i in 0..500 {
        std::fs::write(src.join(format!("big/some-file-name-{i}")), format!("{i}")).unwrap();
    }
    let img = t.path().join("img");
    mkfs(&img, "ext4", 1024, "16M", Some(&src), &[]);
    fsck_index_dirs(&img);
    assert!(String::from_utf8_lossy(&debugfs(&img, "stat /big")).contains("Flags: 0x81000"));
    let mut fs = mount(&img);
    let root = fs.root();
    let other = fs.lookup(root, "other").unwrap();
    fs.rename(root, "big", other, "moved").unwrap();
    let moved = resolve(&mut fs, "other/moved").unwrap();
    assert_eq!(fs.lookup(moved, "..").unwrap(), other);
    assert_eq!(fs.stat(other).unwrap().nlink, 3);
    unmount_clean(fs, &img);
    assert_eq!(debugfs(&img, "cat /other/moved/some-file-name-321"), b"321");
}

/// Writing into preallocated (uninitialised) extents splits them; unwritten parts
/// still read as zeros.
#[test]
fn write_into_uninitialised_extents() {
    let (_t, img) = fresh_image("uninit-extents", "ext4", 4096, "16M");
    {
        let mut fs = mount(&img);
        let root = fs.root();
        fs.create(root, "pre", 0o644).unwrap();
        fs.unmount().unwrap();
    }
    debugfs_w_req(&img, "fallocate /pre 0 99");
    // debugfs fallocate leaves i_size alone: set it so the blocks are inside the file.
    debugfs_w_req(&img, "sif /pre size 409600");
    let st = String::from_utf8_lossy(&debugfs(&img, "stat /pre")).into_owned();
    assert!(st.contains("[u]):"), "{st}");
    fsck_clean(&img);
    let mut want = vec![0u8; 409600];
    {
        let mut fs = mount(&img);
        let ino = resolve(&mut fs, "pre").unwrap();
        assert!(read_all(&mut fs, ino).iter().all(|&b| b == 0));
        fs.write(ino, 10 * 4096 + 100, b"hello").unwrap();
        want[10 * 4096 + 100..10 * 4096 + 105].copy_from_slice(b"hello");
        fs.write(ino, 50 * 4096, &[9u8; 3 * 4096]).unwrap();
        want[50 * 4096..53 * 4096].fill(9);
        assert!(read_all(&mut fs, ino) == want);
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    assert!(debugfs(&img, "cat /pre") == want);
    let st = String::from_utf8_lossy(&debugfs(&img, "stat /pre")).into_owned();
    assert!(st.contains("[u]):"), "{st}");
}

#[test]
fn symlinks_and_hard_links() {
    for (kind, bs) in [("ext4", 1024u32), ("ext4", 4096), ("ext2", 1024)] {
        let (_t, img) = fresh_image("links", kind, bs, "16M");
        let long = "b/".repeat(100) + "end";
        {
            let mut fs = mount(&img);
            let root = fs.root();
            let f = fs.create(root, "file", 0o644).unwrap();
            fs.write(f, 0, b"linked").unwrap();
            let s = fs.symlink(root, "short", "file").unwrap();
            let l = fs.symlink(root, "long", &long).unwrap();
            assert_eq!(fs.stat(s).unwrap().kind, FileType::Symlink);
            assert_eq!(read_all(&mut fs, s), b"file");
            assert_eq!(read_all(&mut fs, l), long.as_bytes());
            let d = fs.mkdir(root, "d", 0o755).unwrap();
            fs.link(f, d, "again").unwrap();
            assert_eq!(fs.stat(f).unwrap().nlink, 2);
            assert_eq!(fs.link(d, root, "dirlink"), Err(FsError::IsDir));
            assert_eq!(fs.symlink(root, "short", "x"), Err(FsError::Exists));
            fs.unlink(root, "file").unwrap();
            assert_eq!(fs.stat(f).unwrap().nlink, 1);
            fs.unmount().unwrap();
        }
        fsck_clean(&img);
        assert_eq!(debugfs(&img, "cat /d/again"), b"linked");
        let st = String::from_utf8_lossy(&debugfs(&img, "stat /short")).into_owned();
        assert!(st.contains("Fast link dest: \"file\""), "{st}");
        let st = String::from_utf8_lossy(&debugfs(&img, "stat /long")).into_owned();
        assert!(
            st.contains("Type: symlink") && st.contains(&format!("Size: {}", long.len())),
            "{st}"
        );
        let mut fs = mount(&img);
        let l = resolve(&mut fs, "long").unwrap();
        assert_eq!(read_all(&mut fs, l), long.as_bytes());
        let root = fs.root();
        fs.unlink(root, "long").unwrap();
        fs.unlink(root, "short").unwrap();
        let d = resolve(&mut fs, "d").unwrap();
        fs.unlink(d, "again").unwrap();
        unmount_clean(fs, &img);
    }
}

/// A file over 2 GiB on an ext2 made without large_file turns the feature on.
#[test]
fn large_file_feature_is_set_when_needed() {
    let (_t, img) = fresh_image("largefile", "ext2", 4096, "32M");
    debugfs_w_req(&img, "feature -large_file");
    let feats = |img: &Path| String::from_utf8_lossy(&debugfs(img, "features")).into_owned();
    assert!(!feats(&img).contains("large_file"));
    let mut fs = mount(&img);
    let root = fs.root();
    let f = fs.create(root, "big", 0o644).unwrap();
    fs.write(f, 3 << 30, b"end").unwrap();
    fs.unmount().unwrap();
    assert!(feats(&img).contains("large_file"), "{}", feats(&img));
    fsck_clean(&img);
    let st = String::from_utf8_lossy(&debugfs(&img, "stat /big")).into_owned();
    assert!(st.contains("Size: 3221225475"), "{st}");
}

/// Write errors during writeback keep the data buffered: once the device works again a
/// sync writes it all and the filesystem is consistent.
#[test]
fn write_errors_keep_data_for_a_retry() {
    let (_t, img) = fresh_image("ioerr", "ext4", 4096, "64M");
    let data = Rng(77).bytes(10 << 20);
    {
        let mut fs = Ext::mount(Counting::new(FileDisk::open(&img)), opts()).unwrap();
        let root = fs.root();
        let f = fs.create(root, "f", 0o644).unwrap();
        fs.sync().unwrap();
        // The device: FileDisk under Counting; fail its writes for a while.
        set_fail(&mut fs, true);
        let mut errors = 0;
        for (i, c) in data.chunks(65536).enumerate() {
            match fs.write(f, (i * 65536) as u64, c) {
                Ok(n) => assert_eq!(n, c.len()),
                Err(FsError::Io(_)) => errors += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(errors > 0);
        assert!(matches!(fs.sync(), Err(FsError::Io(_))));
        assert!(read_all(&mut fs, f) == data, "buffered data lost");
        set_fail(&mut fs, false);
        fs.sync().unwrap();
        fs.unmount().unwrap();
    }
    fsck_clean(&img);
    assert!(debugfs(&img, "cat /f") == data);
}

fn set_fail(fs: &mut Ext<Counting<FileDisk>>, on: bool) {
    fs.device_mut().fail_writes = on;
}

/// Names added to an htree directory go into the leaf their hash selects while it has
/// room (the index stays; e2fsck checks every name's hash against its leaf's range),
/// and a full leaf is split (issue 30, defect 8): the index stays.
#[test]
fn htree_inserts_keep_the_index() {
    for (kind, bs, alg) in [
        ("ext4", 4096u32, "half_md4"),
        ("ext4", 1024, "tea"),
        ("ext2", 1024, "legacy"),
    ] {
        let (_t, img) = tree_image("htree-insert", kind, bs, "32M", |src| {
            std::fs::create_dir_all(src.join("d")).unwrap();
            for i in 0..1500 {
                std::fs::write(src.join(format!("d/{i:x}-{}", "n".repeat(i % 40))), b"").unwrap();
            }
        });
        let out = std::process::Command::new(tool("tune2fs"))
            .args(["-E", &format!("hash_alg={alg}")])
            .arg(&img)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        fsck_index_dirs(&img);
        // Make room in the leaves (as a Linux-grown directory has).
        {
            let mut fs = mount(&img);
            let d = resolve(&mut fs, "d").unwrap();
            for i in (0..1500).step_by(3) {
                fs.unlink(d, &format!("{i:x}-{}", "n".repeat(i % 40)))
                    .unwrap();
            }
            fs.unmount().unwrap();
        }
        fsck_clean(&img);
        let mut fs = mount(&img);
        let d = resolve(&mut fs, "d").unwrap();
        // Varied names: the legacy hash clusters similar ones into one leaf.
        let mut r = Rng(bs as u64);
        let added: Vec<String> = (0..100).map(|_| format!("{:016x}", r.next())).collect();
        for n in &added {
            fs.create(d, n, 0o644).unwrap();
        }
        fs.unmount().unwrap();
        let st = String::from_utf8_lossy(&debugfs(&img, "stat /d")).into_owned();
        assert!(
            st.contains("Flags: 0x81000") || st.contains("Flags: 0x1000"),
            "{kind} {alg}: index dropped: {st}"
        );
        fsck_clean(&img);
        let mut fs = mount(&img);
        let d = resolve(&mut fs, "d").unwrap();
        assert_eq!(fs.read_dir(d).unwrap().len(), 1000 + 100);
        for n in &added {
            fs.lookup(d, n).unwrap();
        }
        fs.unmount().unwrap();
    }
}

/// Buffered data holds its blocks: once writes report NoSpace, new directories are
/// refused too, and the buffered data still reaches the disk at sync.
#[test]
fn buffered_data_keeps_its_reservation() {
    for kind in ["ext4", "ext2"] {
        let (_t, img) = fresh_image("reserve", kind, 1024, "4M");
        let mut fs = mount(&img);
        let root = fs.root();
        let f = fs.create(root, "fill", 0o644).unwrap();
        let data = Rng(9).bytes(8 << 20);
        let mut off = 0;
        while off < data.len() {
            match fs.write(f, off as u64, &data[off..off + 4096]) {
                Ok(n) => off += n,
                Err(FsError::NoSpace) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(off < data.len(), "{kind}: never full");
        let mut made = 0;
        for i in 0..200 {
            match fs.mkdir(root, &format!("d{i}"), 0o755) {
                Ok(_) => made += 1,
                Err(FsError::NoSpace) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert!(made < 200, "{kind}");
        fs.sync().unwrap();
        unmount_clean(fs, &img);
        assert!(debugfs(&img, "cat /fill") == data[..off], "{kind}");
    }
}

/// Many new files through an inode cache of 64 (the least a mount budget gives):
/// new inodes are evicted once synced, so later appends, renames, unlinks and links
/// read them back from the inode table; all of it must reach the disk.
#[test]
fn new_inodes_pass_through_a_small_inode_cache() {
    for kind in ["ext4", "ext2"] {
        let (_t, img) = fresh_image(&format!("small-icache-{kind}"), kind, 1024, "16M");
        let mut fs = mount(&img);
        fs.set_cache_bytes(64 << 10);
        let mut r = Rng(0x1cac4e ^ kind.len() as u64);
        let mut model = Model::new();
        let root = fs.root();
        let dirs: Vec<Ino> = (0..3)
            .map(|d| {
                model.insert(format!("/d{d}"), None);
                fs.mkdir(root, &format!("d{d}"), 0o755).unwrap()
            })
            .collect();
        let mut files = Vec::new();
        for i in 0..450 {
            let (d, name) = (i % 3, format!("f{i:03}"));
            let ino = fs.create(dirs[d], &name, 0o644).unwrap();
            let len = 1 + r.below(3000) as usize;
            let data = r.bytes(len);
            write_file(&mut fs, ino, &data, &mut r);
            model.insert(format!("/d{d}/{name}"), Some(data));
            files.push((d, name, ino));
        }
        for (i, (d, name, ino)) in files.iter().enumerate() {
            let p = format!("/d{d}/{name}");
            if i % 7 == 0 {
                let len = 1 + r.below(2000) as usize;
                let more = r.bytes(len);
                let data = model.get_mut(&p).unwrap().as_mut().unwrap();
                assert_eq!(
                    fs.write(*ino, data.len() as u64, &more).unwrap(),
                    more.len()
                );
                data.extend_from_slice(&more);
            } else if i % 11 == 0 {
                let to = (d + 1) % 3;
                fs.rename(dirs[*d], name, dirs[to], &format!("m{i}"))
                    .unwrap();
                let v = model.remove(&p).unwrap();
                model.insert(format!("/d{to}/m{i}"), v);
            } else if i % 13 == 0 {
                fs.unlink(dirs[*d], name).unwrap();
                model.remove(&p);
            } else if i % 17 == 0 {
                fs.link(*ino, root, &format!("l{i}")).unwrap();
                let v = model[&p].clone();
                model.insert(format!("/l{i}"), v);
            }
        }
        fs.sync().unwrap();
        fs.unmount().unwrap();
        check_with_debugfs(&img, &model);
        check_with_ext(&img, &model);
    }
}
