//! Journal replay on damaged journals: a real log written by debugfs (three committed
//! transactions), then broken on purpose — bad commit, descriptor and data checksums,
//! absurd tags, impossible superblock fields, unmapped blocks, and a seeded loop of
//! random mutations. Replay must end the log, skip, or refuse cleanly; never panic,
//! loop forever, or write outside the device.

mod journal_util;

use journal_util::*;
use std::collections::BTreeMap;
use xenlet_fs::blockdev::{BlockDev, IoError, MemDisk, SECTOR};
use xenlet_fs::crc32c::crc32c;
use xenlet_fs::journal::format::{tag_flag, MAGIC};
use xenlet_fs::journal::{self, CommitBlock, JournalSuperblock, LogEnd};
use xenlet_fs::FsError;

const BS: u32 = 1024;

/// A log written by debugfs on a fresh 1 KiB-block filesystem.
struct Base {
    _dir: TempDir,
    disk: Vec<u8>,
    map: Vec<u64>,
    /// Home blocks of T1 (10 blocks), T2 (5), T3 (3).
    homes: [Vec<u64>; 3],
    /// Their contents, in the same order.
    data: Vec<Vec<u8>>,
    /// (sequence, block type, journal block) of each metadata block, from logdump.
    layout: Vec<(u32, u32, u64)>,
}

fn base(tag: &str, jo: &str) -> Base {
    let dir = TempDir::new(tag);
    let img = dir.join("fs.img");
    mkfs(&img, BS, "64M", &[]);
    let free = free_blocks(&img, 18, 30000);
    let homes = [
        free[..10].to_vec(),
        free[10..15].to_vec(),
        free[15..18].to_vec(),
    ];
    let file = dir.join("data");
    let data = data_file(&file, BS, 10, 5);
    let f = file.to_str().unwrap();
    let script = format!(
        "{jo}\njw -b {} {f}\njw -b {} {f}\njw -b {} {f}\njc\n",
        block_list(&homes[0]),
        block_list(&homes[1]),
        block_list(&homes[2])
    );
    debugfs_script(&dir, &img, &script);
    let map = journal_map(&img);
    let layout = log_layout(&img);
    let disk = std::fs::read(&img).unwrap();
    Base {
        _dir: dir,
        disk,
        map,
        homes,
        data,
        layout,
    }
}

/// "Found expected sequence 1, type 1 (descriptor block) at block 1"
fn log_layout(img: &std::path::Path) -> Vec<(u32, u32, u64)> {
    let out = debugfs_ro(img, "logdump");
    let mut v = Vec::new();
    for line in out.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() >= 6 && w[0] == "Found" && w[1] == "expected" && w[2] == "sequence" {
            let seq = w[3].trim_end_matches(',').parse().unwrap();
            let ty = w[5].parse().unwrap();
            let blk = w.last().unwrap().parse().unwrap();
            v.push((seq, ty, blk));
        }
    }
    assert!(v.len() >= 6, "unexpected logdump:\n{out}");
    v
}

impl Base {
    fn jblock(&self, j: u64) -> std::ops::Range<usize> {
        let s = (self.map[j as usize] * BS as u64) as usize;
        s..s + BS as usize
    }
    /// The journal block of the `n`-th block of `ty` in transaction `seq`.
    fn find(&self, seq: u32, ty: u32) -> u64 {
        self.layout
            .iter()
            .find(|&&(s, t, _)| s == seq && t == ty)
            .unwrap_or_else(|| panic!("no type {ty} in {seq}: {:?}", self.layout))
            .2
    }
    fn seed(&self, disk: &[u8]) -> u32 {
        let r = self.jblock(0);
        crc32c(!0, &disk[r.start + 0x30..r.start + 0x40])
    }
    fn lookup(&self) -> impl Fn(u64) -> Option<u64> + '_ {
        |j| self.map.get(j as usize).copied()
    }
    fn replay(&self, disk: &mut MemDisk) -> Result<journal::ReplayStats, FsError> {
        journal::replay(disk, BS, &self.lookup())
    }
    /// A copy of the disk with `bits` flipped in byte `at` of journal block `j`.
    fn flipped(&self, j: u64, at: usize, bits: u8) -> MemDisk {
        let mut d = self.memdisk();
        let r = self.jblock(j);
        d.bytes[r.start + at] ^= bits;
        d
    }
    /// A copy of the disk with descriptor block `j` changed by `edit`, its checksum
    /// tail made right again.
    fn with_descriptor(&self, j: u64, edit: impl FnOnce(&mut [u8])) -> MemDisk {
        let mut d = self.memdisk();
        let seed = self.seed(&d.bytes);
        let buf = &mut d.bytes[self.jblock(j)];
        edit(buf);
        fix_tail(buf, seed);
        d
    }
    /// T2's home blocks on `d` still hold what they held before the replay.
    fn assert_t2_not_replayed(&self, d: &MemDisk) {
        for &h in &self.homes[1] {
            assert_eq!(home(&d.bytes, h), home(&self.disk, h));
        }
    }
    fn memdisk(&self) -> MemDisk {
        MemDisk {
            bytes: self.disk.clone(),
            read_only: false,
        }
    }
}

/// Clears `buf` to a new journal block: its header with block type `ty` (2 commit,
/// 5 revoke) of transaction `seq`.
fn new_block(buf: &mut [u8], ty: u32, seq: u32) {
    buf.fill(0);
    buf[0..4].copy_from_slice(&MAGIC.to_be_bytes());
    buf[4..8].copy_from_slice(&ty.to_be_bytes());
    buf[8..12].copy_from_slice(&seq.to_be_bytes());
}

fn fix_tail(buf: &mut [u8], seed: u32) {
    let n = buf.len();
    buf[n - 4..].fill(0);
    let c = crc32c(seed, buf);
    buf[n - 4..].copy_from_slice(&c.to_be_bytes());
}

fn fix_commit(buf: &mut [u8], seed: u32) {
    buf[16..20].fill(0);
    let c = crc32c(seed, buf);
    buf[16..20].copy_from_slice(&c.to_be_bytes());
}

fn fix_sb(buf: &mut [u8]) {
    let c = JournalSuperblock::compute_checksum(buf);
    buf[0xfc..0x100].copy_from_slice(&c.to_be_bytes());
}

fn home(disk: &[u8], b: u64) -> &[u8] {
    block(disk, BS, b)
}

#[test]
fn intact_log_replays_three_transactions() {
    let b = base("intact", "jo -c");
    let mut d = b.memdisk();
    // A dry run on a read-only device: the same answer, nothing written.
    d.read_only = true;
    let dry = journal::check(&mut d, BS, &b.lookup()).unwrap();
    assert!(d.bytes == b.disk);
    d.read_only = false;
    let s = b.replay(&mut d).unwrap();
    assert_eq!(dry, s);
    assert_eq!(s.transactions, 3);
    assert_eq!(s.blocks_replayed, 18);
    assert!(s.is_clean());
    for (t, homes) in b.homes.iter().enumerate() {
        for (i, &h) in homes.iter().enumerate() {
            assert_eq!(home(&d.bytes, h), &b.data[i][..], "T{} block {i}", t + 1);
        }
    }
    let _ = s.to_string();
}

#[test]
fn bad_commit_checksum_ends_the_log() {
    let b = base("badcommit", "jo -c");
    let mut d = b.flipped(b.find(2, 2), 200, 1);
    let s = b.replay(&mut d).unwrap();
    assert_eq!(s.transactions, 1, "{s:?}");
    assert!(
        matches!(s.log_end, LogEnd::BadCommitChecksum { tid: 2, .. }),
        "{s:?}"
    );
    assert!(!s.is_clean());
    assert_eq!(home(&d.bytes, b.homes[0][3]), &b.data[3][..]);
    for &h in b.homes[1].iter().chain(&b.homes[2]) {
        assert_eq!(home(&d.bytes, h), home(&b.disk, h), "block {h} replayed");
    }
    // Journal empty afterwards, sequence past the last replayed transaction.
    let sb = JournalSuperblock::parse(&d.bytes[b.jblock(0)]).unwrap();
    assert_eq!((sb.start, sb.sequence), (0, 3));
}

#[test]
fn bad_descriptor_checksum_ends_the_log() {
    let b = base("baddesc", "jo -c");
    let mut d = b.flipped(b.find(2, 1), 15, 0x10); // the first tag's block number
    let s = b.replay(&mut d).unwrap();
    assert_eq!(s.transactions, 1, "{s:?}");
    assert!(
        matches!(s.log_end, LogEnd::BadDescriptorChecksum { tid: 2, .. }),
        "{s:?}"
    );
    b.assert_t2_not_replayed(&d);
}

#[test]
fn bad_data_checksum_skips_that_block_only() {
    let b = base("baddata", "jo -c");
    let desc = b.find(2, 1);
    let mut d = b.flipped(desc + 2, 500, 0x80); // T2's second data block
    let dry = journal::check(&mut d, BS, &b.lookup()).unwrap();
    let s = b.replay(&mut d).unwrap();
    assert_eq!(dry, s);
    assert_eq!(s.transactions, 3, "{s:?}");
    assert_eq!(s.data_csum_errors, 1);
    assert_eq!(s.blocks_replayed, 17);
    assert!(!s.is_clean());
    assert_eq!(home(&d.bytes, b.homes[1][1]), home(&b.disk, b.homes[1][1]));
    assert_eq!(home(&d.bytes, b.homes[1][0]), &b.data[0][..]);
    assert_eq!(home(&d.bytes, b.homes[1][2]), &b.data[2][..]);
}

#[test]
fn a_mount_whose_replay_skipped_a_bad_block_fails_and_marks_the_errors() {
    // As Linux: jbd2 reports EFSBADCRC and the mount fails ("error loading
    // journal"); the filesystem is left marked as having errors for e2fsck.
    let b = base("baddata-mount", "jo -c");
    let d = b.flipped(b.find(2, 1) + 2, 500, 0x80);
    let img = b._dir.join("bad.img");
    std::fs::write(&img, &d.bytes).unwrap();
    assert!(needs_recovery(&img), "debugfs left the log to replay");
    match xenlet_fs::Ext::mount(FileDev::open(&img), xenlet_fs::MountOptions::default()) {
        Err(FsError::Corrupt(m)) => assert!(m.contains("1 block(s) with bad checksums"), "{m}"),
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("mounted"),
    }
    let out = run_ok("dumpe2fs", &["-h", img.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let state = text
        .lines()
        .find(|l| l.starts_with("Filesystem state:"))
        .unwrap_or("");
    assert!(state.contains("with errors"), "{state}");
    // the rest of the log went home, and recovery is not asked again
    assert!(!needs_recovery(&img));
}

#[test]
fn without_checksums_corrupt_data_is_replayed_as_is() {
    let b = base("nocsum-data", "jo");
    let desc = b.find(2, 1);
    let mut d = b.flipped(desc + 2, 500, 0x80);
    let s = b.replay(&mut d).unwrap();
    assert_eq!((s.transactions, s.blocks_replayed), (3, 18));
    let mut want = b.data[1].clone();
    want[500] ^= 0x80;
    assert_eq!(home(&d.bytes, b.homes[1][1]), &want[..]);
}

#[test]
fn absurd_tag_count_is_bounded_by_the_block() {
    let b = base("absurd-tags", "jo -c");
    // Tags everywhere, all SAME_UUID, none LAST_TAG: 63 tags in a 1 KiB block.
    let mut d = b.with_descriptor(b.find(2, 1), |buf| {
        let mut off = 12;
        while off + 16 <= 1020 {
            buf[off..off + 4].copy_from_slice(&(b.homes[1][0] as u32).to_be_bytes());
            buf[off + 4..off + 8].copy_from_slice(&tag_flag::SAME_UUID.to_be_bytes());
            buf[off + 8..off + 16].fill(0);
            off += 16;
        }
    });
    let s = b.replay(&mut d).unwrap();
    // The "data" swallows T2's commit and T3: no commit follows, T2 is not committed.
    assert_eq!(s.transactions, 1, "{s:?}");
    b.assert_t2_not_replayed(&d);
}

#[test]
fn tag_outside_the_device_is_refused_before_any_write() {
    let b = base("tag-outside", "jo -c");
    let mut d = b.with_descriptor(b.find(3, 1), |buf| {
        buf[12..16].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
        buf[20..24].copy_from_slice(&7u32.to_be_bytes()); // blocknr_high (64-bit journal)
    });
    let before = d.bytes.clone();
    match b.replay(&mut d) {
        Err(FsError::Corrupt(_)) => {}
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert!(d.bytes == before, "something was written");
}

#[test]
fn revoked_block_outside_the_device_is_harmless() {
    // T1's first tag points outside the device; T3 is rewritten into a revoke block
    // for that block plus a commit: revocation is checked first, so nothing is refused.
    let b = base("revoke-outside", "jo -c");
    let far: u64 = (7 << 32) | 0xffff_fff0;
    let mut d = b.with_descriptor(b.find(1, 1), |buf| {
        buf[12..16].copy_from_slice(&(far as u32).to_be_bytes());
        buf[20..24].copy_from_slice(&((far >> 32) as u32).to_be_bytes());
    });
    let seed = b.seed(&d.bytes);
    let t3 = b.find(3, 1);
    let r = b.jblock(t3);
    let buf = &mut d.bytes[r];
    new_block(buf, 5, 3);
    buf[12..16].copy_from_slice(&24u32.to_be_bytes());
    buf[16..24].copy_from_slice(&far.to_be_bytes());
    fix_tail(buf, seed);
    let r = b.jblock(t3 + 1);
    let buf = &mut d.bytes[r];
    new_block(buf, 2, 3);
    fix_commit(buf, seed);
    let s = b.replay(&mut d).unwrap();
    assert_eq!(
        (s.transactions, s.revoked, s.revoke_records),
        (3, 1, 1),
        "{s:?}"
    );
    assert_eq!(s.blocks_replayed, 9 + 5);
    assert_eq!(home(&d.bytes, b.homes[0][0]), home(&b.disk, b.homes[0][0]));
    assert_eq!(home(&d.bytes, b.homes[0][1]), &b.data[1][..]);

    // Without the revoke (T3 not committed), the same tag is refused.
    let mut d2 = d.clone();
    d2.bytes.clone_from(&b.disk);
    let r = b.jblock(b.find(1, 1));
    d2.bytes[r.clone()].copy_from_slice(&d.bytes[r]);
    expect_corrupt(&b, &mut d2, "unrevoked tag outside the device");
}

fn expect_corrupt(b: &Base, d: &mut MemDisk, what: &str) {
    let before = d.bytes.clone();
    match b.replay(d) {
        Err(FsError::Corrupt(_)) => {}
        other => panic!("{what}: expected Corrupt, got {other:?}"),
    }
    assert!(d.bytes == before, "{what}: something was written");
}

fn with_sb(b: &Base, f: impl FnOnce(&mut [u8])) -> MemDisk {
    let mut d = b.memdisk();
    let r = b.jblock(0);
    f(&mut d.bytes[r.clone()]);
    fix_sb(&mut d.bytes[r]);
    d
}

#[test]
fn impossible_superblocks_are_refused() {
    let b = base("bad-sb", "jo -c");
    let be = |v: u32| v.to_be_bytes();
    type Edit = Box<dyn Fn(&mut [u8])>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "s_first = s_maxlen",
            Box::new(move |s| s.copy_within(0x10..0x14, 0x14)),
        ),
        (
            "s_first = s_maxlen, journal clean",
            Box::new(move |s| {
                s.copy_within(0x10..0x14, 0x14);
                s[0x1c..0x20].fill(0);
            }),
        ),
        (
            "s_first = 0, journal clean",
            Box::new(move |s| {
                s[0x14..0x18].fill(0);
                s[0x1c..0x20].fill(0);
            }),
        ),
        (
            "s_first > s_maxlen",
            Box::new(move |s| s[0x14..0x18].copy_from_slice(&be(5000))),
        ),
        (
            "s_first = 0",
            Box::new(move |s| s[0x14..0x18].copy_from_slice(&be(0))),
        ),
        (
            "s_start past s_maxlen",
            Box::new(move |s| s[0x1c..0x20].copy_from_slice(&be(4096))),
        ),
        (
            "s_maxlen past the journal",
            Box::new(move |s| s[0x10..0x14].copy_from_slice(&be(4097))),
        ),
        (
            "s_maxlen huge",
            Box::new(move |s| s[0x10..0x14].copy_from_slice(&be(u32::MAX))),
        ),
        (
            "block size",
            Box::new(move |s| s[0x0c..0x10].copy_from_slice(&be(4096))),
        ),
        ("v2 and v3", Box::new(move |s| s[0x2b] |= 0x08)),
        ("checksum type", Box::new(move |s| s[0x50] = 1)),
        ("magic", Box::new(move |s| s[0] ^= 1)),
        ("block type", Box::new(move |s| s[7] = 1)),
    ];
    for (what, f) in cases {
        let mut d = with_sb(&b, f);
        expect_corrupt(&b, &mut d, what);
    }
    // A bad checksum (not fixed afterwards).
    let mut d = b.flipped(0, 0x40, 1);
    expect_corrupt(&b, &mut d, "superblock checksum");
}

#[test]
fn unknown_features_are_unsupported() {
    let b = base("features", "jo -c");
    for (what, off, bit) in [
        ("incompat 0x100", 0x2a, 0x01u8),
        ("fast commit", 0x2b, 0x20),
        ("ro_compat", 0x2f, 0x01),
    ] {
        let mut d = with_sb(&b, |s| s[off] |= bit);
        let before = d.bytes.clone();
        match b.replay(&mut d) {
            Err(FsError::Unsupported(_)) => {}
            other => panic!("{what}: expected Unsupported, got {other:?}"),
        }
        assert!(d.bytes == before);
    }
}

#[test]
fn bad_arguments_and_devices() {
    let b = base("args", "jo -c");
    let mut d = b.memdisk();
    assert_eq!(
        journal::replay(&mut d, 1000, &b.lookup()).unwrap_err(),
        FsError::Invalid("block size")
    );
    // The filesystem's block size is not the journal's.
    assert!(matches!(
        journal::replay(&mut d, 4096, &b.lookup()),
        Err(FsError::Corrupt(_))
    ));
    // Journal block 5 unmapped, or mapped off the device: refused before writing.
    let holes = |j: u64| {
        if j == 5 {
            None
        } else {
            b.map.get(j as usize).copied()
        }
    };
    let before = d.bytes.clone();
    assert!(matches!(
        journal::replay(&mut d, BS, &holes),
        Err(FsError::Corrupt(_))
    ));
    let off = |j: u64| {
        if j == 5 {
            Some(1 << 40)
        } else {
            b.map.get(j as usize).copied()
        }
    };
    assert!(matches!(
        journal::replay(&mut d, BS, &off),
        Err(FsError::Corrupt(_))
    ));
    // A map shorter than s_maxlen.
    let short = |j: u64| {
        if j < 100 {
            b.map.get(j as usize).copied()
        } else {
            None
        }
    };
    assert!(matches!(
        journal::replay(&mut d, BS, &short),
        Err(FsError::Corrupt(_))
    ));
    assert!(d.bytes == before);
    d.read_only = true;
    assert_eq!(b.replay(&mut d).unwrap_err(), FsError::ReadOnly);
    // The superblock is readable on a read-only device.
    let sb = journal::read_superblock(&mut d, BS, &b.lookup()).unwrap();
    assert!(
        sb.start != 0 && sb.to_string().contains("needs recovery"),
        "{sb}"
    );
}

#[test]
fn a_log_of_revoke_blocks_all_round_the_journal_ends() {
    // Every log block a revoke block of the same transaction: no commit ever comes,
    // and the walk must stop after one lap instead of going round forever.
    let b = base("revoke-lap", "jo -c");
    let mut d = b.memdisk();
    let seed = b.seed(&d.bytes);
    for j in 1..b.map.len() as u64 {
        let r = b.jblock(j);
        let buf = &mut d.bytes[r];
        new_block(buf, 5, 1);
        buf[12..16].copy_from_slice(&24u32.to_be_bytes());
        buf[16..24].copy_from_slice(&(b.homes[0][0]).to_be_bytes());
        fix_tail(buf, seed);
    }
    let s = b.replay(&mut d).unwrap();
    assert_eq!(s.transactions, 0);
    assert_eq!(s.log_end, LogEnd::Wrapped);
}

#[test]
fn a_log_of_commits_all_round_the_journal_ends() {
    // Each block a valid commit of the next transaction: after one lap the log is
    // longer than the journal.
    let b = base("commit-lap", "jo -c");
    let mut d = b.memdisk();
    let seed = b.seed(&d.bytes);
    let n = b.map.len() as u64;
    for j in 1..n {
        let r = b.jblock(j);
        let buf = &mut d.bytes[r];
        new_block(buf, 2, j as u32);
        fix_commit(buf, seed);
        assert!(CommitBlock::checksum_ok(buf, seed));
    }
    // s_start 1, s_sequence 1: transaction j at block j for all j; then the walk is
    // back at block 1 and stops.
    let s = b.replay(&mut d).unwrap();
    assert_eq!(s.transactions as u64, n - 1);
    assert_eq!(s.log_end, LogEnd::Wrapped, "{s:?}");
}

/// A copy-on-write view of a base image: cheap to make per iteration.
struct CowDisk<'a> {
    base: &'a [u8],
    over: BTreeMap<u64, [u8; SECTOR as usize]>,
}

impl CowDisk<'_> {
    /// `len` bytes at `offset` are whole sectors within the disk.
    fn check(&self, offset: u64, len: usize) -> Result<(), IoError> {
        let n = len as u64;
        if !offset.is_multiple_of(SECTOR)
            || !n.is_multiple_of(SECTOR)
            || offset + n > self.size_bytes()
        {
            return Err(IoError::OutOfRange);
        }
        Ok(())
    }
}

impl BlockDev for CowDisk<'_> {
    fn size_bytes(&self) -> u64 {
        self.base.len() as u64
    }
    fn read_only(&self) -> bool {
        false
    }
    fn read(&mut self, offset: u64, buf: &mut [u8]) -> Result<(), IoError> {
        self.check(offset, buf.len())?;
        for (i, chunk) in buf.chunks_mut(SECTOR as usize).enumerate() {
            let s = offset / SECTOR + i as u64;
            match self.over.get(&s) {
                Some(d) => chunk.copy_from_slice(d),
                None => {
                    let o = (s * SECTOR) as usize;
                    chunk.copy_from_slice(&self.base[o..o + SECTOR as usize]);
                }
            }
        }
        Ok(())
    }
    fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), IoError> {
        self.check(offset, data.len())?;
        for (i, chunk) in data.chunks(SECTOR as usize).enumerate() {
            self.over
                .insert(offset / SECTOR + i as u64, chunk.try_into().unwrap());
        }
        Ok(())
    }
    fn flush(&mut self) -> Result<(), IoError> {
        Ok(())
    }
}

/// Rewrites the checksums of every block that looks like journal metadata, and of the
/// superblock, so that mutations get past them.
fn fix_all_checksums(b: &Base, disk: &mut [u8], upto: u64) {
    let seed = b.seed(disk);
    for j in 1..upto {
        let r = b.jblock(j);
        let buf = &mut disk[r];
        if buf[0..4] != MAGIC.to_be_bytes() {
            continue;
        }
        match u32::from_be_bytes(buf[4..8].try_into().unwrap()) {
            1 | 5 => fix_tail(buf, seed),
            2 => fix_commit(buf, seed),
            _ => {}
        }
    }
    let r = b.jblock(0);
    fix_sb(&mut disk[r]);
}

fn mutation_loop(b: &Base, seed: u64, iterations: u32) -> (u32, u32) {
    let mut rng = Rng(seed);
    let log_end = b.layout.iter().map(|l| l.2).max().unwrap() + 4;
    let (mut oks, mut errs) = (0, 0);
    // One copy of the image; the mutated journal blocks are restored each iteration.
    let mut img = b.disk.clone();
    for it in 0..iterations {
        for j in 0..log_end {
            let r = b.jblock(j);
            img[r.clone()].copy_from_slice(&b.disk[r]);
        }
        let n = 1 + rng.below(6);
        for _ in 0..n {
            let j = rng.below(log_end);
            let r = b.jblock(j);
            let buf = &mut img[r];
            match rng.below(5) {
                0 => buf[rng.below(BS as u64) as usize] ^= 1 << rng.below(8),
                1 => {
                    // A header- or tag-aligned word set to an interesting value.
                    let off = (rng.below(BS as u64 / 4) * 4) as usize;
                    let v = match rng.below(6) {
                        0 => 0,
                        1 => u32::MAX,
                        2 => rng.below(5) as u32,
                        3 => 4096 + rng.below(3) as u32 - 1,
                        4 => tag_flag::LAST_TAG | tag_flag::SAME_UUID,
                        _ => rng.next() as u32,
                    };
                    buf[off..off + 4].copy_from_slice(&v.to_be_bytes());
                }
                2 => {
                    // Make it look like a metadata block of a nearby transaction.
                    buf[0..4].copy_from_slice(&MAGIC.to_be_bytes());
                    buf[4..8].copy_from_slice(&(1 + rng.below(5) as u32).to_be_bytes());
                    buf[8..12].copy_from_slice(&(rng.below(5) as u32).to_be_bytes());
                }
                3 => {
                    // Superblock fields.
                    let r0 = b.jblock(0);
                    let off = r0.start + 0x0c + (rng.below(8) * 4) as usize;
                    let v = rng.below(5000) as u32;
                    img[off..off + 4].copy_from_slice(&v.to_be_bytes());
                }
                _ => {
                    let o = rng.below(BS as u64 - 64) as usize;
                    rng.fill(&mut buf[o..o + 64]);
                }
            }
        }
        if rng.below(2) == 0 {
            fix_all_checksums(b, &mut img, log_end);
        }
        let mut dev = CowDisk {
            base: &img,
            over: BTreeMap::new(),
        };
        match journal::replay(&mut dev, BS, &b.lookup()) {
            Ok(s) => {
                oks += 1;
                assert!(s.transactions <= 4096, "iteration {it}: {s:?}");
                let _ = s.to_string();
            }
            Err(e) => {
                errs += 1;
                // Refusals write nothing (no device errors here).
                assert!(
                    dev.over.is_empty(),
                    "iteration {it}: wrote then failed: {e}"
                );
            }
        }
    }
    (oks, errs)
}

/// 2000 random mutations of the journal debugfs writes after opening it with `jo`
/// (`jo -c`: checksums v3), in temp dir `tag`: some replay, some are refused, none
/// panics.
fn mutations_never_panic(tag: &str, jo: &str, seed: u64) {
    let b = base(tag, jo);
    let (oks, errs) = mutation_loop(&b, seed, 2000);
    eprintln!("{oks} ok, {errs} refused");
    assert!(oks > 0 && errs > 0, "{oks} ok, {errs} refused");
}

#[test]
fn random_mutations_never_panic_csum_v3() {
    mutations_never_panic("fuzz-v3", "jo -c", 0x5eed_0001);
}

#[test]
fn random_mutations_never_panic_no_csum() {
    mutations_never_panic("fuzz-nocsum", "jo", 0x5eed_0002);
}

#[test]
fn fragmented_journal_map() {
    // Every third journal block moved elsewhere, in reverse order: the same replay.
    let b = base("fragmented", "jo -c");
    let mut want = b.memdisk();
    let s_want = b.replay(&mut want).unwrap();
    let mut d = b.memdisk();
    let n = b.map.len() as u64;
    let moved = |j: u64| j % 3 == 1;
    let map2: Vec<u64> = (0..n)
        .map(|j| {
            if moved(j) {
                50_000 + (n - j)
            } else {
                b.map[j as usize]
            }
        })
        .collect();
    for j in 0..n {
        if moved(j) {
            let from = b.jblock(j);
            let to = (map2[j as usize] * BS as u64) as usize;
            d.bytes.copy_within(from.clone(), to);
            d.bytes[from].fill(0xee); // the old place must not be read
        }
    }
    let lookup = |j: u64| map2.get(j as usize).copied();
    let s = journal::replay(&mut d, BS, &lookup).unwrap();
    assert_eq!(s, s_want);
    for h in b.homes.iter().flatten() {
        assert_eq!(home(&d.bytes, *h), home(&want.bytes, *h));
    }
}

/// T3 rewritten as four full revoke blocks (125 records each, one of them for a
/// block T1 logged) and a commit.
fn many_revokes(b: &Base) -> MemDisk {
    let mut d = b.memdisk();
    let seed = b.seed(&d.bytes);
    let t3 = b.find(3, 1);
    let mut rng = Rng(77);
    for k in 0..4u64 {
        let r = b.jblock(t3 + k);
        let buf = &mut d.bytes[r];
        new_block(buf, 5, 3);
        buf[12..16].copy_from_slice(&(16 + 125 * 8u32).to_be_bytes());
        for i in 0..125 {
            let v = if k == 2 && i == 60 {
                b.homes[0][5]
            } else {
                rng.next() >> 8
            };
            buf[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_be_bytes());
        }
        fix_tail(buf, seed);
    }
    let r = b.jblock(t3 + 4);
    let buf = &mut d.bytes[r];
    new_block(buf, 2, 3);
    fix_commit(buf, seed);
    d
}

#[test]
fn many_revoke_records_only_logged_blocks_matter() {
    let b = base("many-revokes", "jo -c");
    let mut d = many_revokes(&b);
    let s = b.replay(&mut d).unwrap();
    assert_eq!(
        (
            s.transactions,
            s.revoke_records,
            s.revoked,
            s.blocks_replayed
        ),
        (3, 500, 1, 14),
        "{s:?}"
    );
    assert_eq!(home(&d.bytes, b.homes[0][5]), home(&b.disk, b.homes[0][5]));
    assert_eq!(home(&d.bytes, b.homes[0][4]), &b.data[4][..]);
}

#[test]
fn a_small_budget_keeps_only_revokes_of_logged_blocks() {
    // 12 KiB: a table of 384 entries cannot take the 500 records, so only those of
    // the 18 logged blocks enter it; a one-block run buffer. The same replay.
    let b = base("revokes-budget", "jo -c");
    let mut want = many_revokes(&b);
    let s_want = b.replay(&mut want).unwrap();
    let mut d = many_revokes(&b);
    let s = journal::replay_within(&mut d, BS, &b.lookup(), 12 << 10).unwrap();
    assert_eq!(s, s_want);
    assert!(d.bytes == want.bytes);
    // 256 bytes: not even the 18 logged blocks fit; refused, nothing written.
    let mut d = many_revokes(&b);
    let before = d.bytes.clone();
    assert_eq!(
        journal::replay_within(&mut d, BS, &b.lookup(), 256),
        Err(FsError::NoMemory)
    );
    assert!(d.bytes == before);
    // Without revokes, any budget does (one block at a time).
    let mut d = b.memdisk();
    let s = journal::replay_within(&mut d, BS, &b.lookup(), 0).unwrap();
    assert_eq!((s.transactions, s.blocks_replayed), (3, 18));
}
