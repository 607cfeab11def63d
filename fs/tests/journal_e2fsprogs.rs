//! Journal replay against e2fsprogs: journals written by `debugfs` (jo/jw/jc) on images
//! made by `mkfs.ext4`, replayed by `xenlet_fs::journal::replay` on one copy and by
//! `e2fsck -E journal_only` on another; the two images must then be identical but for
//! the ext4 superblock (which e2fsck updates and replay leaves to the caller).

mod journal_util;

use journal_util::*;
use std::fs;
use std::path::{Path, PathBuf};
use xenlet_fs::journal::{self, JournalSuperblock, LogEnd};

/// The journal superblock of an image.
fn jsb(data: &[u8], bs: u32, map: &[u64]) -> JournalSuperblock {
    JournalSuperblock::parse(block(data, bs, map[0])).unwrap()
}

/// After our replay, clearing needs_recovery by hand must leave a filesystem `e2fsck -fn`
/// finds clean (the logged blocks are free blocks, so a full check is fair).
fn assert_fsck_clean_after_replay(dir: &TempDir, img: &Path, bs: u32) {
    let copy = dir.join("fsck.img");
    fs::copy(img, &copy).unwrap();
    let map = journal_map(&copy);
    let mut dev = FileDev::open(&copy);
    journal::replay(&mut dev, bs, &|j| map.get(j as usize).copied()).unwrap();
    drop(dev);
    assert!(
        needs_recovery(&copy),
        "replay must not touch the ext4 superblock"
    );
    clear_needs_recovery(&copy);
    let o = run("e2fsck", &["-fn", copy.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "e2fsck -fn after replay: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

struct Fixture {
    dir: TempDir,
    img: PathBuf,
    bs: u32,
}

fn fixture(tag: &str, bs: u32, size: &str, mkfs_extra: &[&str]) -> Fixture {
    let dir = TempDir::new(tag);
    let img = dir.join("fs.img");
    mkfs(&img, bs, size, mkfs_extra);
    Fixture { dir, img, bs }
}

/// The main scenario: several committed transactions (one larger than a descriptor
/// block holds), a revoke of an earlier block, a block rewritten after its revoke, a
/// data block starting with the jbd2 magic (escaped), and an uncommitted tail.
fn scenario(f: &Fixture, jo: &str) -> (Vec<u64>, Vec<Vec<u8>>) {
    let free = free_blocks(&f.img, 200, 20000 * 1024 / f.bs as u64);
    let many = &free[..150];
    let data = f.dir.join("data");
    let mut blocks = data_file(&data, f.bs, 150, 7);
    // Block 0 of the data begins with the magic: debugfs escapes it in the log.
    blocks[0][..4].copy_from_slice(&0xc03b_3998u32.to_be_bytes());
    let flat: Vec<u8> = blocks.concat();
    fs::write(&data, flat).unwrap();
    let d = data.to_str().unwrap();
    let script = format!(
        "{jo}\n\
         jw -b {big} {d}\n\
         jw -b {b151},{b152} -r {b1},{b2} {d}\n\
         jc\n\
         jo\n\
         jw -b {b2},{b153} {d}\n\
         jw -b {b160},{b161},{b0} -c {d}\n\
         jc\n",
        big = block_list(many),
        b0 = free[0],
        b1 = free[1],
        b2 = free[2],
        b151 = free[151],
        b152 = free[152],
        b153 = free[153],
        b160 = free[160],
        b161 = free[161],
    );
    debugfs_script(&f.dir, &f.img, &script);
    assert!(needs_recovery(&f.img), "debugfs left no needs_recovery");
    (free, blocks)
}

fn check_scenario(f: &Fixture, jo: &str) {
    check_scenario_from(f, jo, 1);
}

/// [`check_scenario`], then the journal superblock it left in the image.
fn check_scenario_sb(f: &Fixture, jo: &str) -> JournalSuperblock {
    check_scenario(f, jo);
    let map = journal_map(&f.img);
    let data = fs::read(&f.img).unwrap();
    jsb(&data, f.bs, &map)
}

/// The scenario with the journal's first transaction ID `tid0` (set in the journal
/// superblock before debugfs writes the log).
fn check_scenario_from(f: &Fixture, jo: &str, tid0: u32) {
    if tid0 != 1 {
        set_journal_sequence(&f.img, f.bs, tid0);
    }
    let (free, blocks) = scenario(f, jo);
    let logged = logged_blocks(&f.img);
    assert!(logged.len() >= 155, "logdump shows {} tags", logged.len());
    let map = journal_map(&f.img);
    let before = fs::read(&f.img).unwrap();
    let (stats, ours, theirs) = replay_both(&f.dir, &f.img, f.bs);
    assert_same_but_superblock(&ours, &theirs, f.bs);

    assert_eq!(stats.transactions, 3, "{stats:?}");
    assert_eq!(
        (stats.first_tid, stats.end_tid),
        (tid0, tid0.wrapping_add(3)),
        "{stats:?}"
    );
    assert_eq!(stats.last_tid(), Some(tid0.wrapping_add(2)));
    // 150 - 2 revoked + 2 + 2 written: free[1] and free[2] revoked in T2 (free[2] then
    // logged again in T3).
    assert_eq!(stats.blocks_replayed, 152, "{stats:?}");
    assert_eq!(stats.revoked, 2, "{stats:?}");
    assert_eq!(stats.revoke_records, 2, "{stats:?}");
    assert_eq!(stats.data_csum_errors, 0);
    assert!(
        matches!(stats.log_end, LogEnd::EndOfLog { .. }),
        "{stats:?}"
    );
    assert!(stats.is_clean());

    let bs = f.bs;
    // Escaped block restored with its magic.
    assert_eq!(block(&ours, bs, free[0]), &blocks[0][..]);
    // Revoked, never rewritten: as before.
    assert_eq!(block(&ours, bs, free[1]), block(&before, bs, free[1]));
    // Revoked in T2, logged again in T3 (with data block 0 of the file).
    assert_eq!(block(&ours, bs, free[2]), &blocks[0][..]);
    assert_eq!(block(&ours, bs, free[149]), &blocks[149][..]);
    // Uncommitted transaction: untouched.
    for b in [free[160], free[161]] {
        assert_eq!(block(&ours, bs, b), block(&before, bs, b));
    }
    // Journal marked empty, sequence one past the log's end (as e2fsck does).
    let sb = jsb(&ours, bs, &map);
    assert_eq!((sb.start, sb.sequence), (0, tid0.wrapping_add(4)));
    assert_eq!(sb, jsb(&theirs, bs, &map));
    assert_eq!(block(&ours, bs, map[0]), block(&theirs, bs, map[0]));

    // Replaying again: nothing to do, nothing written.
    let again = f.dir.join("ours.img");
    let mut dev = FileDev::open(&again);
    let s2 = journal::replay(&mut dev, bs, &|j| map.get(j as usize).copied()).unwrap();
    assert_eq!(s2.log_end, LogEnd::Clean);
    assert_eq!(dev.writes, 0);

    assert_fsck_clean_after_replay(&f.dir, &f.img, bs);
}

#[test]
fn csum_v3_1k_blocks_matches_e2fsck() {
    let f = fixture("v3-1k", 1024, "64M", &[]);
    check_scenario(&f, "jo -c");
    let map = journal_map(&f.img);
    let mut dev = FileDev::open(&f.img);
    let sb = journal::read_superblock(&mut dev, 1024, &|j| map.get(j as usize).copied()).unwrap();
    assert!(sb.csum_v3() && sb.is_64bit(), "{sb}");
    assert!(sb.to_string().contains("csum_v3"), "{sb}");
}

/// Sets `s_sequence` of a clean journal (fixing the checksum if it has one).
fn set_journal_sequence(img: &Path, bs: u32, seq: u32) {
    let map = journal_map(img);
    let mut data = fs::read(img).unwrap();
    let off = (map[0] * bs as u64) as usize;
    let sb = jsb(&data, bs, &map);
    assert_eq!(sb.start, 0);
    data[off + 0x18..off + 0x1c].copy_from_slice(&seq.to_be_bytes());
    if sb.has_csum() {
        let c = JournalSuperblock::compute_checksum(&data[off..off + 1024]);
        data[off + 0xfc..off + 0x100].copy_from_slice(&c.to_be_bytes());
    }
    fs::write(img, data).unwrap();
}

#[test]
fn transaction_ids_wrapping_past_u32_max_match_e2fsck() {
    // T1..T4 are 0xfffffffe, 0xffffffff, 0, 1: the revoke in 0xffffffff must still
    // win over 0xfffffffe and lose to 0.
    let f = fixture("tidwrap", 1024, "64M", &[]);
    check_scenario_from(&f, "jo -c", 0xffff_fffe);
}

#[test]
fn csum_v3_4k_blocks_matches_e2fsck() {
    let f = fixture("v3-4k", 4096, "256M", &[]);
    check_scenario(&f, "jo -c");
}

#[test]
fn csum_v2_matches_e2fsck() {
    let f = fixture("v2", 1024, "64M", &[]);
    let sb = check_scenario_sb(&f, "jo -c -v 2");
    assert!(sb.has_csum() && !sb.csum_v3(), "{sb}");
}

#[test]
fn no_csum_matches_e2fsck() {
    let f = fixture("nocsum", 4096, "256M", &[]);
    assert!(!check_scenario_sb(&f, "jo").has_csum());
}

#[test]
fn journal_32bit_matches_e2fsck() {
    let f = fixture("32bit", 4096, "256M", &["-O", "^64bit,^metadata_csum"]);
    let sb = check_scenario_sb(&f, "jo");
    assert!(!sb.is_64bit(), "{sb}");
    assert_eq!(sb.tag_bytes(), 8);
}

#[test]
fn journal_32bit_csum_v3_matches_e2fsck() {
    let f = fixture("32bit-v3", 1024, "64M", &["-O", "^64bit"]);
    check_scenario(&f, "jo -c");
}

#[test]
fn clean_journal_is_left_alone() {
    let f = fixture("clean", 1024, "64M", &[]);
    let before = fs::read(&f.img).unwrap();
    let map = journal_map(&f.img);
    let mut dev = FileDev::open(&f.img);
    let stats = journal::replay(&mut dev, 1024, &|j| map.get(j as usize).copied()).unwrap();
    assert_eq!(stats.log_end, LogEnd::Clean);
    assert_eq!(stats.transactions, 0);
    assert_eq!(stats.last_tid(), None);
    assert_eq!(dev.writes, 0);
    drop(dev);
    assert_eq!(fs::read(&f.img).unwrap(), before);
}

/// Rotates the log of a journal that starts at `s_first` by `k` blocks inside
/// `[s_first, s_maxlen)` and points `s_start` there: the same log, now wrapping from
/// the end of the journal to its beginning. Fixes the superblock checksum.
fn rotate_log(img: &Path, bs: u32, map: &[u64], k: u32) {
    let mut data = fs::read(img).unwrap();
    let sb = jsb(&data, bs, map);
    assert_eq!(sb.start, sb.first, "expected a log starting at s_first");
    let (first, maxlen) = (sb.first as u64, sb.max_len as u64);
    let len = maxlen - first;
    let old: Vec<Vec<u8>> = (first..maxlen)
        .map(|j| block(&data, bs, map[j as usize]).to_vec())
        .collect();
    for (i, content) in old.iter().enumerate() {
        let j = first + (i as u64 + k as u64) % len;
        let off = (map[j as usize] * bs as u64) as usize;
        data[off..off + bs as usize].copy_from_slice(content);
    }
    let off = (map[0] * bs as u64) as usize;
    let new_start = first as u32 + k;
    data[off + 0x1c..off + 0x20].copy_from_slice(&new_start.to_be_bytes());
    if sb.has_csum() {
        let c = JournalSuperblock::compute_checksum(&data[off..off + 1024]);
        data[off + 0xfc..off + 0x100].copy_from_slice(&c.to_be_bytes());
    }
    fs::write(img, data).unwrap();
}

fn check_wraparound(jo: &str, tag: &str) {
    // 1 KiB blocks, the smallest journal mkfs makes: 1024 blocks.
    let f = fixture(tag, 1024, "64M", &["-J", "size=1"]);
    let map = journal_map(&f.img);
    assert_eq!(map.len(), 1024);
    let free = free_blocks(&f.img, 400, 20000);
    let data = f.dir.join("data");
    let blocks = data_file(&data, 1024, 100, 99);
    let d = data.to_str().unwrap();
    let mut script = format!("{jo}\n");
    // 6 transactions of 100 blocks (with descriptors): about 620 log blocks.
    for t in 0..6 {
        script.push_str(&format!(
            "jw -b {} {d}\n",
            block_list(&free[t * 50..t * 50 + 100])
        ));
    }
    script.push_str("jc\n");
    debugfs_script(&f.dir, &f.img, &script);
    let before = fs::read(&f.img).unwrap();
    // Start the log 300 blocks before the end of the journal.
    rotate_log(&f.img, 1024, &map, 1023 - 300);
    let data_rot = fs::read(&f.img).unwrap();
    assert_ne!(before, data_rot);
    let (stats, ours, theirs) = replay_both(&f.dir, &f.img, 1024);
    assert_same_but_superblock(&ours, &theirs, 1024);
    assert_eq!(stats.transactions, 6, "{stats:?}");
    assert_eq!(stats.blocks_replayed, 600);
    // The last transaction wrote free[250..350] with blocks[0..100].
    for i in 0..100 {
        assert_eq!(block(&ours, 1024, free[250 + i]), &blocks[i][..]);
    }
    // Overlapping transactions: the newest copy wins (free[50..100] from T2).
    assert_eq!(block(&ours, 1024, free[60]), &blocks[10][..]);
    assert_fsck_clean_after_replay(&f.dir, &f.img, 1024);
}

#[test]
fn wraparound_csum_v3_matches_e2fsck() {
    check_wraparound("jo -c", "wrap-v3");
}

#[test]
fn wraparound_no_csum_matches_e2fsck() {
    check_wraparound("jo", "wrap-nocsum");
}

#[test]
fn stale_transactions_after_the_log_are_ignored() {
    // An old log, replayed by e2fsck (journal empty, sequence advanced); then a new log
    // from s_first that overwrites only the old log's first transaction: the blocks
    // after it are stale metadata of older transactions, which must end the log.
    let f = fixture("stale", 1024, "64M", &[]);
    let free = free_blocks(&f.img, 40, 30000);
    let data = f.dir.join("data");
    let blocks = data_file(&data, 1024, 10, 3);
    let d = data.to_str().unwrap();
    let old = format!(
        "jo -c\njw -b {} {d}\njw -b {} {d}\njw -b {} {d}\njc\n",
        block_list(&free[0..10]),
        block_list(&free[10..20]),
        block_list(&free[20..30])
    );
    debugfs_script(&f.dir, &f.img, &old);
    let o = run(
        "e2fsck",
        &["-y", "-E", "journal_only", f.img.to_str().unwrap()],
    );
    assert!(matches!(o.status.code(), Some(0) | Some(1)), "{o:?}");
    let map = journal_map(&f.img);
    let sb = jsb(&fs::read(&f.img).unwrap(), 1024, &map);
    assert_eq!((sb.start, sb.sequence), (0, 5));
    // Zero the old transactions' home blocks so a stale replay would show.
    let script: String = free[..30]
        .iter()
        .map(|b| format!("zap_block -p 0 {b}\n"))
        .collect();
    debugfs_script(&f.dir, &f.img, &script);
    let new = format!("jo\njw -b {} {d}\njc\n", block_list(&free[30..40]));
    debugfs_script(&f.dir, &f.img, &new);
    let (stats, ours, theirs) = replay_both(&f.dir, &f.img, 1024);
    assert_same_but_superblock(&ours, &theirs, 1024);
    assert_eq!((stats.first_tid, stats.end_tid), (5, 6), "{stats:?}");
    assert_eq!(stats.blocks_replayed, 10);
    assert!(
        matches!(stats.log_end, LogEnd::EndOfLog { block: 13 }),
        "{stats:?}"
    );
    for i in 0..10 {
        assert_eq!(block(&ours, 1024, free[30 + i]), &blocks[i][..]);
        assert!(block(&ours, 1024, free[10 + i]).iter().all(|&x| x == 0));
    }
}
