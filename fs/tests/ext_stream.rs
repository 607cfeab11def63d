//! The streaming benchmark's shape: `dd bs=16k count=131072` (2 GiB) into a file on a
//! 3 GiB ext4 must end in few, long extents and reach the device in large writes,
//! without reading file data back.

mod common;
use common::*;
use xenlet_fs::FileSystem;

#[test]
fn two_gib_in_16k_writes() {
    let (_t, img, mut fs, ino) = stream_fs("stream");
    let chunk = vec![0u8; 16 << 10];
    let count = 131072u64;
    for i in 0..count {
        assert_eq!(
            fs.write(ino, i * chunk.len() as u64, &chunk).unwrap(),
            chunk.len()
        );
    }
    fs.fsync(ino).unwrap();
    let total = count * chunk.len() as u64;
    assert_eq!(fs.stat(ino).unwrap().size, total);
    assert_eq!(fs.stat(ino).unwrap().blocks, total / 512 + 8); // + one extent leaf block
    let ext = fs.extents(ino).unwrap();
    eprintln!(
        "{} extents at depth {}: {:?}",
        ext.extents.len(),
        ext.depth,
        ext.extents
    );
    assert!(
        ext.extents.len() <= 20,
        "{} extents: {:?}",
        ext.extents.len(),
        ext.extents
    );
    assert!(ext.depth <= 1);
    let covered: u64 = ext.extents.iter().map(|e| e.1 as u64).sum();
    assert_eq!(covered * 4096, total);
    fs.unmount().unwrap();
    let disk = fs.into_device();
    let large = disk.sizes.iter().filter(|&&s| s >= 1 << 20).count() as u64;
    let large_bytes: u64 = disk
        .sizes
        .iter()
        .filter(|&&s| s >= 1 << 20)
        .map(|&s| s as u64)
        .sum();
    eprintln!(
        "{} writes ({} of >= 1 MiB carrying {} MiB), {} MiB written, {} reads ({} KiB)",
        disk.writes,
        large,
        large_bytes >> 20,
        disk.bytes >> 20,
        disk.reads,
        disk.read_bytes >> 10
    );
    // Runs are cut only where the free space is (backup superblocks, the journal, the
    // next flex group's tables): all but a few MiB go in large writes.
    assert!(
        large_bytes >= total - (8 << 20),
        "file data not in large writes"
    );
    assert!(
        disk.writes <= total / (1 << 20) + 64,
        "{} writes",
        disk.writes
    );
    assert!(
        disk.bytes < total + (16 << 20),
        "{} bytes written",
        disk.bytes
    );
    assert!(
        disk.read_bytes < 16 << 20,
        "read {} bytes: read-modify-write?",
        disk.read_bytes
    );
    fsck_clean(&img);
    let st = String::from_utf8_lossy(&debugfs(&img, "stat /test")).into_owned();
    assert!(st.contains("Size: 2147483648"), "{st}");
    // debugfs sees the same shape: one index block (ETB0), <= 20 extents.
    let etb = st.matches("(ETB").count();
    let extents = st.matches("):").count() - etb;
    assert!(etb <= 1 && !st.contains("(ETB1)"), "{st}");
    assert!((1..=20).contains(&extents), "{extents} extents: {st}");
}
