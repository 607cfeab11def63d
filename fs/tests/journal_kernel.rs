//! Journal replay of logs written by the running Linux kernel: an image is loop-mounted,
//! written to, synced (transactions committed to the journal but not checkpointed),
//! shut down with `EXT4_IOC_SHUTDOWN` (log flushed, no checkpoint) and unmounted,
//! which leaves needs_recovery set and real transactions (with revokes) in the log.
//! The log is replayed by us and by `e2fsck -E journal_only`; the images must match.
//!
//! These need root, loop devices and ext4 in the host kernel, so they are `#[ignore]`d:
//! run them with `cargo test -p xenlet-fs --test journal_kernel -- --ignored` as root.

mod journal_util;

use journal_util::*;
use std::fs::{self, File};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Unmounts on drop (also when the test fails half way).
struct Mount(PathBuf);

impl Mount {
    fn new(img: &Path, dir: &Path) -> Mount {
        fs::create_dir_all(dir).unwrap();
        let o = Command::new("mount")
            .args(["-t", "ext4", "-o", "loop"])
            .arg(img)
            .arg(dir)
            .output()
            .expect("running mount");
        assert!(
            o.status.success(),
            "mount failed (these tests need root and loop devices): {}",
            String::from_utf8_lossy(&o.stderr)
        );
        Mount(dir.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        // The tests run in parallel: another test's child, between its fork and exec,
        // can hold a copy of a descriptor on this mount for a moment ("target is
        // busy"). Try again, then detach it lazily rather than leave it (and its loop
        // device) mounted on the machine.
        for _ in 0..20 {
            let ok = Command::new("umount")
                .arg(&self.0)
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

extern "C" {
    fn ioctl(fd: i32, request: u64, ...) -> i32;
}

/// `EXT4_IOC_SHUTDOWN` with `EXT4_GOING_FLAGS_LOGFLUSH`: commit the running
/// transaction, then stop all I/O (no checkpoint, the journal stays full).
fn shutdown(dir: &Path) {
    let f = File::open(dir).unwrap();
    let mut flags: u32 = 1;
    // SAFETY: EXT4_IOC_SHUTDOWN (_IOR('X', 125, __u32)) reads one u32 through the
    // pointer, which points at a live local for the duration of the call.
    // SAFETY: EXT4_IOC_SHUTDOWN reads one u32 through the pointer, which points at a live local.
    let r = unsafe { ioctl(f.as_raw_fd(), 0x8004_587d, &mut flags as *mut u32) };
    assert_eq!(
        r,
        0,
        "EXT4_IOC_SHUTDOWN: {}",
        std::io::Error::last_os_error()
    );
}

fn sync() {
    assert!(Command::new("sync").status().unwrap().success());
}

fn workload(root: &Path, seed: u64) {
    let mut rng = Rng(seed);
    // Phase 1: directories and files of several sizes.
    for d in 0..12 {
        let dir = root.join(format!("d{d}"));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..40 {
            let mut data = vec![0u8; 1 + rng.below(20_000) as usize];
            rng.fill(&mut data);
            fs::write(dir.join(format!("f{f}")), data).unwrap();
        }
    }
    sync();
    // Phase 2: delete half of it (freed metadata blocks get revoke records), rename.
    for d in (0..12).step_by(2) {
        fs::remove_dir_all(root.join(format!("d{d}"))).unwrap();
    }
    fs::rename(root.join("d1"), root.join("renamed")).unwrap();
    sync();
    // Phase 3: reuse the freed space, with directories big enough to need htree blocks.
    for d in 0..4 {
        let dir = root.join(format!("e{d}"));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..150 {
            fs::write(
                dir.join(format!("a-rather-long-file-name-{f:05}")),
                [f as u8; 100],
            )
            .unwrap();
        }
    }
    sync();
}

/// Many small transactions (creates, appends, deletes), each committed by an fsync:
/// unlike sync(2), fsync does not write the checkpointed metadata home, so the log
/// fills up and the kernel has to checkpoint and wrap.
fn small_transactions(root: &Path, seed: u64, rounds: u32) {
    let mut rng = Rng(seed);
    for r in 0..rounds {
        let dir = root.join(format!("r{}", r % 7));
        fs::create_dir_all(&dir).unwrap();
        let mut last = None;
        for f in 0..4 {
            let mut data = vec![0u8; 1 + rng.below(3000) as usize];
            rng.fill(&mut data);
            let p = dir.join(format!("f{r}-{f}"));
            fs::write(&p, data).unwrap();
            last = Some(p);
        }
        if r >= 3 {
            let old = root.join(format!("r{}", (r - 3) % 7));
            let _ = fs::remove_file(old.join(format!("f{}-1", r - 3)));
        }
        File::open(last.unwrap()).unwrap().sync_all().unwrap();
        File::open(&dir).unwrap().sync_all().unwrap();
    }
}

/// Whether the log described by `logdump` wraps from the end of the journal, and the
/// block it starts at.
fn log_wraps(logdump: &str) -> (u64, bool) {
    let first = logdump
        .lines()
        .find_map(|l| l.strip_prefix("Journal starts at block "))
        .and_then(|l| l.split(',').next())
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no start in logdump:\n{logdump}"));
    let wrapped = logdump
        .lines()
        .filter_map(|l| l.strip_prefix("Found expected sequence "))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .any(|b| b < first);
    (first, wrapped)
}

fn kernel_journal(tag: &str, bs: u32, size: &str, mkfs_extra: &[&str], seed: u64) {
    let dir = TempDir::new(tag);
    let img = dir.join("fs.img");
    mkfs(&img, bs, size, mkfs_extra);
    {
        let m = Mount::new(&img, &dir.join("mnt"));
        workload(&m.0, seed);
        shutdown(&m.0);
    }
    check_kernel_log(&dir, &img, bs, tag);
}

fn check_kernel_log(dir: &TempDir, img: &Path, bs: u32, tag: &str) {
    let (dir, img) = (dir, img.to_path_buf());
    assert!(needs_recovery(&img), "the kernel left no needs_recovery");
    let logdump = debugfs_ro(&img, "logdump");
    let commits = logdump.matches("(commit block)").count();
    let revokes = logdump.matches("(revoke table)").count();
    assert!(
        commits >= 2,
        "only {commits} commits in the log:\n{logdump}"
    );
    let (stats, ours, theirs) = replay_both(dir, &img, bs);
    assert_same_but_superblock(&ours, &theirs, bs);
    assert_eq!(stats.transactions as usize, commits, "{stats:?}\n{logdump}");
    assert!(stats.is_clean(), "{stats:?}");
    let (first, wrapped) = log_wraps(&logdump);
    eprintln!("{tag}: {stats}; {revokes} revoke blocks; log from {first}, wrapped {wrapped}");

    // After clearing needs_recovery by hand, e2fsck -fn must say of our image what it
    // says of e2fsck's own replay (the kernel leaves the superblock's free counts stale,
    // which both copies share).
    let o = dir.join("ours.img");
    let t = dir.join("theirs.img");
    clear_needs_recovery(&o);
    let ro = run("e2fsck", &["-fn", o.to_str().unwrap()]);
    let rt = run("e2fsck", &["-fn", t.to_str().unwrap()]);
    assert_eq!(
        ro.status.code(),
        rt.status.code(),
        "ours:\n{}\ne2fsck's:\n{}",
        String::from_utf8_lossy(&ro.stdout),
        String::from_utf8_lossy(&rt.stdout)
    );
    assert!(matches!(ro.status.code(), Some(0)), "{ro:?}");
}

#[test]
#[ignore = "needs root, loop devices and the host's ext4: run with --ignored"]
fn kernel_journal_4k_matches_e2fsck() {
    kernel_journal("kernel-4k", 4096, "256M", &[], 11);
}

#[test]
#[ignore = "needs root, loop devices and the host's ext4: run with --ignored"]
fn kernel_journal_1k_matches_e2fsck() {
    kernel_journal("kernel-1k", 1024, "64M", &[], 12);
}

#[test]
#[ignore = "needs root, loop devices and the host's ext4: run with --ignored"]
fn kernel_journal_wrapped_small_journal_matches_e2fsck() {
    // The smallest journal (1024 blocks of 1 KiB), filled by many small transactions
    // until the kernel has checkpointed and the log runs over the end of the journal
    // (where it stops depends on the kernel's timing: a few lengths are tried).
    for attempt in 0..10u32 {
        let tag = "kernel-wrap";
        let dir = TempDir::new(tag);
        let img = dir.join("fs.img");
        mkfs(&img, 1024, "64M", &["-J", "size=1"]);
        {
            let m = Mount::new(&img, &dir.join("mnt"));
            small_transactions(&m.0, 100 + attempt as u64, 40 + 17 * attempt);
            shutdown(&m.0);
        }
        let (first, wrapped) = log_wraps(&debugfs_ro(&img, "logdump"));
        eprintln!("attempt {attempt}: log from {first}, wrapped {wrapped}");
        if wrapped {
            check_kernel_log(&dir, &img, 1024, tag);
            return;
        }
    }
    panic!("no attempt left a log wrapping round the journal");
}

#[test]
#[ignore = "needs root, loop devices and the host's ext4: run with --ignored"]
fn kernel_journal_32bit_matches_e2fsck() {
    kernel_journal("kernel-32bit", 4096, "256M", &["-O", "^64bit"], 14);
}
