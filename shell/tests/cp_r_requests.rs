//! `bench files` on the host, for its disk requests: `cp -r` of 5,000 small files
//! (100-4,099 bytes, 5 directories, as the benchmark's dom0 step makes them) from a
//! read-only ext4 image (`mke2fs -d`) to a fresh ext4 image, then `sync`, counting
//! every read and write each device is asked for. On a virtual disk each request is
//! a round trip through the backend, so the copy's time follows their number, not
//! its bytes.

mod common;

use common::{check_copy, disk, make_images, make_tree, mount_ext, temp_dir, Disk, FILES};
use std::path::Path;
use std::sync::{Arc, Mutex};
use xenlet_fs::blockdev::{BlockDev, IoError};
use xenlet_fs::memfs::MemFs;
use xenlet_fs::vfs::Vfs;
use xenlet_shell::files;

/// What each ext mount's caches get in a 32 MiB guest (a quarter of its 7 MiB heap).
const MOUNT_CACHE: usize = (7 << 20) / 4;

#[derive(Clone, Default)]
struct Counts(Arc<Mutex<(u64, u64, u64, u64)>>);

impl Counts {
    fn get(&self) -> (u64, u64, u64, u64) {
        *self.0.lock().unwrap()
    }
}

/// A device that counts requests: (reads, bytes read, writes, bytes written).
struct Counted {
    dev: Disk,
    n: Counts,
}

impl BlockDev for Counted {
    fn size_bytes(&self) -> u64 {
        self.dev.size_bytes()
    }
    fn read_only(&self) -> bool {
        self.dev.read_only()
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let mut n = self.n.0.lock().unwrap();
        n.0 += 1;
        n.1 += buf.len() as u64;
        drop(n);
        self.dev.read(offset, buf)
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        let mut n = self.n.0.lock().unwrap();
        n.2 += 1;
        n.3 += data.len() as u64;
        drop(n);
        self.dev.write(offset, data)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.dev.flush()
    }
}

fn mount(v: &mut Vfs, img: &Path, at: &str, read_only: bool) -> Counts {
    let n = Counts::default();
    let dev = Counted {
        dev: disk(img, read_only),
        n: n.clone(),
    };
    mount_ext(v, dev, at, read_only, MOUNT_CACHE);
    n
}

#[test]
fn cp_r_of_5000_small_files_reads_in_few_requests() {
    let tmp = temp_dir("req");
    let tree = tmp.0.join("tree");
    let files = make_tree(&tree);
    let (src, dst) = make_images(&tmp.0, &tree);
    let mut v = Vfs::new(Box::new(MemFs::new(1 << 20, || 0)), "tmpfs");
    for d in ["/src", "/mnt"] {
        v.mkdir(d, 0o755).unwrap();
    }
    let s = mount(&mut v, &src, "/src", true);
    let d = mount(&mut v, &dst, "/mnt", false);
    let mut out = String::new();
    let r = files::cp(&mut v, &["-r", "/src/files", "/mnt/"], &mut out);
    assert_eq!((r, out.as_str()), (Ok(()), ""));
    let (sr, srb, _, _) = s.get();
    let (dr, drb, dw, dwb) = d.get();
    v.sync_all().unwrap();
    let (_, _, dw2, dwb2) = d.get();
    for m in ["/mnt", "/src"] {
        drop(v.umount(m).unwrap());
    }
    eprintln!(
        "cp -r of {FILES} files: source {sr} reads ({srb} bytes); destination {dr} reads \
         ({drb} bytes), {dw} writes ({dwb} bytes) during cp, {} writes ({} bytes) at sync",
        dw2 - dw,
        dwb2 - dwb
    );
    // Before readahead (`xenlet_fs::readahead`): 6,346 source reads and 1,232
    // destination reads, one per block an inode, directory or small file needed;
    // with it, 631 and 74.
    assert!(sr < 1500, "{sr} reads of the source");
    assert!(dr < 300, "{dr} reads of the destination");
    check_copy(&dst, &tmp.0.join("back"), &files);
}
