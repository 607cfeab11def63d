//! Helpers for the journal tests: e2fsprogs (mkfs.ext4, debugfs, e2fsck) to make real
//! journals, a file-backed block device, temporary directories, and a small PRNG.
//! Tests that need e2fsprogs fail (not skip) when a tool is missing.
#![allow(dead_code)]

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Command, Output};

use xenlet_fs::blockdev::{BlockDev, IoError, SECTOR};
use xenlet_fs::crc32c::crc32c;
use xenlet_fs::journal::{self, ReplayStats};

/// The ext tests' helpers: the e2fsprogs tools, temp dirs and the device checks are
/// theirs.
#[path = "../common/mod.rs"]
mod common;
#[allow(unused_imports)] // not every journal test lists blocks
pub use common::{block_list, tool, TempDir};

fn show(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `tool args`, returning its output whatever the exit status.
pub fn run(name: &str, args: &[&str]) -> Output {
    Command::new(tool(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {name}: {e}"))
}

/// Runs `tool args` and insists on exit status 0.
pub fn run_ok(name: &str, args: &[&str]) -> Output {
    let o = run(name, args);
    assert!(o.status.success(), "{name} {args:?} failed: {}", show(&o));
    o
}

/// Makes an ext4 image `size` long with `mkfs.ext4 -q -F -b block_size extra...`.
pub fn mkfs(img: &Path, block_size: u32, size: &str, extra: &[&str]) {
    File::create(img).unwrap();
    let bs = block_size.to_string();
    let mut args = vec!["-q", "-F", "-b", bs.as_str()];
    args.extend_from_slice(extra);
    args.push(img.to_str().unwrap());
    args.push(size);
    run_ok("mkfs.ext4", &args);
}

/// Runs debugfs commands (one a line) read-write on `img`; any error message fails.
pub fn debugfs_script(dir: &TempDir, img: &Path, script: &str) -> String {
    let cmdfile = dir.join("debugfs.cmds");
    fs::write(&cmdfile, script).unwrap();
    let o = run_ok(
        "debugfs",
        &["-w", "-f", cmdfile.to_str().unwrap(), img.to_str().unwrap()],
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let bad: Vec<&str> = err
        .lines()
        .chain(out.lines())
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("error")
                || l.contains("while ")
                || l.contains("not open")
                || l.contains("need a file")
                || l.contains("usage")
        })
        .collect();
    assert!(bad.is_empty(), "debugfs complained: {bad:?}\n{out}\n{err}");
    out
}

/// Runs one read-only debugfs request and returns its stdout.
pub fn debugfs_ro(img: &Path, request: &str) -> String {
    let o = run_ok("debugfs", &["-R", request, img.to_str().unwrap()]);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The journal inode's (<8>) block map from `debugfs stat`'s EXTENTS (or BLOCKS)
/// section: index = journal block, value = filesystem block.
pub fn journal_map(img: &Path) -> Vec<u64> {
    let out = debugfs_ro(img, "stat <8>");
    let section = out
        .split("EXTENTS:")
        .nth(1)
        .or_else(|| out.split("BLOCKS:").nth(1))
        .unwrap_or_else(|| panic!("no EXTENTS/BLOCKS in debugfs stat <8>:\n{out}"));
    let mut map: Vec<u64> = Vec::new();
    for item in section.split([',', '\n', ' ']).map(str::trim) {
        // "(0-4095):16385-20480", "(12):1234", "(IND):99", "(ETB0):1234", "TOTAL: 4096"
        let Some(rest) = item.strip_prefix('(') else {
            continue;
        };
        let Some((logical, physical)) = rest.split_once("):") else {
            continue;
        };
        let Ok(l0) = logical.split('-').next().unwrap().parse::<u64>() else {
            continue; // index or tree blocks
        };
        let l1: u64 = logical.split('-').nth(1).map_or(l0, |s| s.parse().unwrap());
        let p0: u64 = physical.split('-').next().unwrap().parse().unwrap();
        assert_eq!(map.len() as u64, l0, "journal map not contiguous: {item}");
        for i in 0..=(l1 - l0) {
            map.push(p0 + i);
        }
    }
    assert!(!map.is_empty(), "empty journal map from:\n{out}");
    map
}

/// `count` free blocks at or after `goal` (debugfs ffb).
pub fn free_blocks(img: &Path, count: u32, goal: u64) -> Vec<u64> {
    let out = debugfs_ro(img, &format!("ffb {count} {goal}"));
    let list = out
        .split("Free blocks found:")
        .nth(1)
        .unwrap_or_else(|| panic!("ffb gave:\n{out}"));
    let v: Vec<u64> = list
        .split_whitespace()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(v.len(), count as usize, "ffb gave {out}");
    v
}

/// The (filesystem block, journal block) pairs `debugfs logdump` lists.
pub fn logged_blocks(img: &Path) -> Vec<(u64, u64)> {
    let out = debugfs_ro(img, "logdump -a");
    let mut v = Vec::new();
    for line in out.lines() {
        // "  FS block 300 logged at journal block 2 (flags 0x0)"
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() >= 8 && words[0] == "FS" && words[1] == "block" && words[3] == "logged" {
            v.push((words[2].parse().unwrap(), words[7].parse().unwrap()));
        }
    }
    v
}

/// A file as a block device.
pub struct FileDev {
    pub file: File,
    pub size: u64,
    pub writes: u64,
    pub flushes: u64,
}

impl FileDev {
    pub fn open(p: &Path) -> FileDev {
        let file = OpenOptions::new().read(true).write(true).open(p).unwrap();
        let size = file.metadata().unwrap().len() / SECTOR * SECTOR;
        FileDev {
            file,
            size,
            writes: 0,
            flushes: 0,
        }
    }
}

impl BlockDev for FileDev {
    fn size_bytes(&self) -> u64 {
        self.size
    }
    fn read_only(&self) -> bool {
        false
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        common::whole_sectors_within(offset, buf.len(), self.size)?;
        self.file
            .read_exact_at(buf, offset)
            .map_err(|_| IoError::Io)
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        common::whole_sectors_within(offset, data.len(), self.size)?;
        self.writes += 1;
        self.file
            .write_all_at(data, offset)
            .map_err(|_| IoError::Io)
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.flushes += 1;
        self.file.sync_data().map_err(|_| IoError::Io)
    }
}

/// Clears ext4's needs_recovery (incompat 0x4) in the primary superblock of the image
/// file and fixes its metadata_csum checksum, as the ext4 code will after replay.
pub fn clear_needs_recovery(img: &Path) {
    let f = OpenOptions::new().read(true).write(true).open(img).unwrap();
    let mut sb = [0u8; 1024];
    f.read_exact_at(&mut sb, 1024).unwrap();
    assert_eq!(&sb[0x38..0x3a], &[0x53, 0xef], "no ext4 magic");
    let mut incompat = u32::from_le_bytes(sb[0x60..0x64].try_into().unwrap());
    incompat &= !0x4;
    sb[0x60..0x64].copy_from_slice(&incompat.to_le_bytes());
    let ro_compat = u32::from_le_bytes(sb[0x64..0x68].try_into().unwrap());
    if ro_compat & 0x400 != 0 {
        let c = crc32c(!0, &sb[..0x3fc]);
        sb[0x3fc..].copy_from_slice(&c.to_le_bytes());
    }
    f.write_all_at(&sb, 1024).unwrap();
}

/// The ext4 superblock says the journal needs recovery.
pub fn needs_recovery(img: &Path) -> bool {
    let data = fs::read(img).unwrap();
    let incompat = u32::from_le_bytes(data[1024 + 0x60..1024 + 0x64].try_into().unwrap());
    incompat & 0x4 != 0
}

/// Block `n` (of `bs` bytes) of an image in memory.
pub fn block(data: &[u8], bs: u32, n: u64) -> &[u8] {
    let s = (n * bs as u64) as usize;
    &data[s..s + bs as usize]
}

/// A xorshift64* generator: reproducible pseudo-random numbers for the seeded tests.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next() as u8;
        }
    }
}

/// Writes `n` blocks of pseudo-random data (seeded) to a file for `jw`, returns them.
pub fn data_file(path: &Path, bs: u32, n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed | 1);
    let mut all = Vec::new();
    let mut blocks = Vec::new();
    for _ in 0..n {
        let mut b = vec![0u8; bs as usize];
        rng.fill(&mut b);
        all.extend_from_slice(&b);
        blocks.push(b);
    }
    fs::write(path, all).unwrap();
    blocks
}

/// Replays `img` with our code on a copy and with e2fsck on another; returns our stats
/// and both images' bytes.
pub fn replay_both(dir: &TempDir, img: &Path, bs: u32) -> (ReplayStats, Vec<u8>, Vec<u8>) {
    let ours = dir.join("ours.img");
    let theirs = dir.join("theirs.img");
    fs::copy(img, &ours).unwrap();
    fs::copy(img, &theirs).unwrap();
    let map = journal_map(img);
    let mut dev = FileDev::open(&ours);
    let lookup = |j: u64| map.get(j as usize).copied();
    let dry = journal::check(&mut dev, bs, &lookup).expect("check failed");
    assert_eq!(dev.writes, 0, "check wrote");
    let stats = journal::replay(&mut dev, bs, &lookup).expect("replay failed");
    assert_eq!(dry, stats, "check and replay disagree");
    assert!(
        dev.flushes >= 2,
        "replay must flush before and after the superblock"
    );
    drop(dev);
    let o = run(
        "e2fsck",
        &["-y", "-E", "journal_only", theirs.to_str().unwrap()],
    );
    assert!(
        matches!(o.status.code(), Some(0) | Some(1)),
        "e2fsck -E journal_only failed: {o:?}"
    );
    (stats, fs::read(&ours).unwrap(), fs::read(&theirs).unwrap())
}

/// Both images are identical outside the ext4 superblock (bytes 1024..2048).
pub fn assert_same_but_superblock(ours: &[u8], theirs: &[u8], bs: u32) {
    assert_eq!(ours.len(), theirs.len());
    let mut diff = Vec::new();
    for (i, (a, b)) in ours
        .chunks(bs as usize)
        .zip(theirs.chunks(bs as usize))
        .enumerate()
    {
        let (a, b) = if i * bs as usize <= 1024 && 1024 < (i + 1) * bs as usize {
            // Block holding the ext4 superblock: compare around it.
            let s = 1024 - i * bs as usize;
            if a[..s] != b[..s] || a[s + 1024..] != b[s + 1024..] {
                diff.push(i);
            }
            continue;
        } else {
            (a, b)
        };
        if a != b {
            diff.push(i);
        }
    }
    assert!(
        diff.is_empty(),
        "blocks differing from e2fsck's replay: {diff:?}"
    );
}
