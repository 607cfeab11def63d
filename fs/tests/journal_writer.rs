//! The jbd2 transaction writer against e2fsprogs: transactions written by
//! `xenlet_fs::journal::writer` into the journal of a `mkfs.ext4` image are listed by
//! `debugfs logdump`, and replayed the same by our replay and by `e2fsck`; the
//! replayed home blocks hold what was logged (escaped blocks included); a log that
//! wraps round the end of the journal replays the same way.

mod journal_util;

use journal_util::*;
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use xenlet_fs::journal::format::MAGIC;
use xenlet_fs::journal::writer::{JournalMap, JournalWriter};

fn map_of(img: &Path) -> JournalMap {
    let m = journal_map(img);
    JournalMap {
        runs: m
            .iter()
            .enumerate()
            .map(|(j, &p)| (j as u64, 1, p))
            .collect(),
    }
}

/// Sets ext4's needs_recovery (as a mounted journalled filesystem has it).
fn set_needs_recovery(img: &Path) {
    let f = OpenOptions::new().read(true).write(true).open(img).unwrap();
    let mut sb = [0u8; 1024];
    f.read_exact_at(&mut sb, 1024).unwrap();
    let mut incompat = u32::from_le_bytes(sb[0x60..0x64].try_into().unwrap());
    incompat |= 0x4;
    sb[0x60..0x64].copy_from_slice(&incompat.to_le_bytes());
    let ro_compat = u32::from_le_bytes(sb[0x64..0x68].try_into().unwrap());
    if ro_compat & 0x400 != 0 {
        let c = xenlet_fs::crc32c::crc32c(!0, &sb[..0x3fc]);
        sb[0x3fc..].copy_from_slice(&c.to_le_bytes());
    }
    f.write_all_at(&sb, 1024).unwrap();
}

/// `n` random blocks for free home blocks of `img`; every fifth starts with the jbd2
/// magic number (must be escaped).
fn payload(img: &Path, bs: u32, n: u32, seed: u64) -> Vec<(u64, Vec<u8>)> {
    let homes = free_blocks(img, n, 1000);
    let mut rng = Rng(seed | 1);
    homes
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            let mut b = vec![0u8; bs as usize];
            rng.fill(&mut b);
            if i % 5 == 0 {
                b[..4].copy_from_slice(&MAGIC.to_be_bytes());
            }
            (h, b)
        })
        .collect()
}

fn commit(w: &mut JournalWriter, dev: &mut FileDev, tx: &[(u64, Vec<u8>)]) -> u32 {
    let refs: Vec<(u64, &[u8])> = tx.iter().map(|(h, b)| (*h, b.as_slice())).collect();
    w.commit(dev, &refs, 1_700_000_000).expect("commit")
}

fn check_replay(dir: &TempDir, img: &Path, bs: u32, tx: &[(u64, Vec<u8>)]) {
    set_needs_recovery(img);
    // debugfs lists what we logged, in order.
    let logged = logged_blocks(img);
    let homes: Vec<u64> = logged.iter().map(|&(h, _)| h).collect();
    let want: Vec<u64> = tx.iter().map(|(h, _)| *h).collect();
    assert_eq!(homes, want, "debugfs logdump lists other blocks");
    let (stats, ours, theirs) = replay_both(dir, img, bs);
    assert_eq!(stats.transactions, 1, "{stats:?}");
    assert_eq!(stats.blocks_replayed, tx.len() as u64, "{stats:?}");
    assert!(stats.is_clean(), "{stats:?}");
    assert_same_but_superblock(&ours, &theirs, bs);
    for (h, b) in tx {
        assert_eq!(block(&ours, bs, *h), b.as_slice(), "home block {h}");
    }
}

fn one_transaction(bs: u32, size: &str, n: u32) {
    let dir = TempDir::new("jwriter");
    let img = dir.join("fs.img");
    mkfs(&img, bs, size, &[]);
    let tx = payload(&img, bs, n, u64::from(n) * 7 + u64::from(bs));
    let mut dev = FileDev::open(&img);
    let mut w = JournalWriter::open(&mut dev, bs, map_of(&img), true, true).unwrap();
    assert!(w.max_blocks() >= n as usize);
    let flushes = dev.flushes;
    commit(&mut w, &mut dev, &tx);
    assert!(dev.flushes >= flushes + 2, "commit must flush twice");
    drop(dev);
    let jsb = debugfs_ro(&img, "logdump");
    assert!(
        jsb.contains("Found expected sequence 1, type 1 (descriptor block)"),
        "{jsb}"
    );
    check_replay(&dir, &img, bs, &tx);
}

#[test]
fn writer_1k_small_transaction() {
    one_transaction(1024, "8M", 5);
}

#[test]
fn writer_4k_several_descriptors() {
    // 4 KiB blocks, 600 blocks: three descriptor blocks.
    one_transaction(4096, "32M", 600);
}

#[test]
fn writer_1k_several_descriptors() {
    one_transaction(1024, "8M", 200);
}

#[test]
fn writer_refuses_a_transaction_longer_than_the_log() {
    let dir = TempDir::new("jwriter");
    let img = dir.join("fs.img");
    mkfs(&img, 1024, "8M", &[]);
    let mut dev = FileDev::open(&img);
    let mut w = JournalWriter::open(&mut dev, 1024, map_of(&img), true, true).unwrap();
    let n = w.max_blocks() + 1;
    let blk = vec![0u8; 1024];
    let tx: Vec<(u64, &[u8])> = (0..n as u64).map(|i| (3000 + i, blk.as_slice())).collect();
    let writes = dev.writes;
    assert!(w.commit(&mut dev, &tx, 0).is_err());
    assert_eq!(dev.writes, writes, "a refused transaction wrote");
}

#[test]
fn writer_wraps_round_the_journal() {
    let dir = TempDir::new("jwriter");
    let img = dir.join("fs.img");
    mkfs(&img, 1024, "8M", &[]);
    let bs = 1024;
    let mut dev = FileDev::open(&img);
    let mut w = JournalWriter::open(&mut dev, bs, map_of(&img), true, true).unwrap();
    let maxlen = w.superblock().max_len;
    // Transactions of 90 blocks (+ 2 descriptors + commit), each checkpointed (the test
    // does not write them home: the journal is just marked empty), until the next
    // one would cross the end of the journal.
    let filler = payload(&img, bs, 90, 3);
    let mut n = 0;
    let need = w.blocks_needed(90) as u32;
    while w.head() + need < maxlen {
        commit(&mut w, &mut dev, &filler);
        w.checkpointed(&mut dev).unwrap();
        n += 1;
    }
    assert!(n >= 5);
    let tx = payload(&img, bs, 150, 11);
    let start = w.head();
    let wraps = w.stats.wraps;
    let tid = commit(&mut w, &mut dev, &tx);
    assert_eq!(w.stats.wraps, wraps + 1);
    assert!(w.head() < start, "the transaction did not wrap");
    assert_eq!(tid, n + 1);
    drop(dev);
    check_replay(&dir, &img, bs, &tx);
    // After replay, e2fsck finds the filesystem clean (the home blocks were free).
    let copy = dir.join("check.img");
    fs::copy(&img, &copy).unwrap();
    let o = run("e2fsck", &["-fy", copy.to_str().unwrap()]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{o:?}");
}
