//! Issue 30: the unlink of a file too large to free in one transaction goes in
//! several, as Linux's ext4 does it: the inode goes on the orphan list with the
//! name's removal, its blocks are freed in steps (a commit each), and the last step
//! frees the inode and takes it off the list. A crash at any write leaves a
//! filesystem that Xenlet's mount (journal replay, then orphan cleanup) or e2fsck
//! finishes, with every synced file intact.

mod common;
use common::*;
use std::path::Path;
use xenlet_fs::blockdev::MemDisk;
use xenlet_fs::{Ext, FileSystem};

/// Journal blocks: far fewer than freeing the big file changes at once (one bitmap
/// for each of its groups, with `-g 1024` a group per MiB).
const JOURNAL_BLOCKS: u32 = 12;

/// An image of 1 KiB blocks, 1 MiB groups, a 1 MiB journal (`-J size=1`) whose
/// superblock then says 12 blocks (as `ext_journal.rs` does: Xenlet's transactions
/// must fit in that; e2fsck accepts it).
fn small_journal_image(img: &Path) {
    mkfs(
        img,
        "ext4",
        1024,
        "24M",
        None,
        &["-g", "1024", "-J", "size=1"],
    );
    shrink_journal(img, JOURNAL_BLOCKS);
}

/// The unlink of a 12 MiB file (12 groups' bitmaps) over a 12-block journal commits
/// in several transactions, none written unjournalled; then, crashed after each of
/// its writes (and with the writes since the last flush lost too), the image mounted
/// by Xenlet (replay, orphan cleanup) and unmounted is e2fsck -fn clean, the synced
/// file is intact and the big file is whole or gone; `e2fsck -fy` of the raw crashed
/// image also finishes it (exit 0 or 1). Some crash points leave the inode on the
/// orphan list (the cleanup frees it, in steps as well): the steps are really
/// separate transactions.
#[test]
fn unlink_of_a_huge_file_commits_in_steps_and_survives_a_crash_at_each_write() {
    let t = TempDir::new("unlink-steps");
    let path = t.path().join("img");
    small_journal_image(&path);
    let keep = Rng(1).bytes(20 * 1024);
    let big = Rng(2).bytes(12 << 20);
    let disk = RecDisk::new(std::fs::read(&path).unwrap());
    let log = disk.log.clone();
    let mut fs = Ext::mount(disk, opts()).unwrap();
    assert!(fs.journalled(), "{:?}", fs.crash_stats());
    let root = fs.root();
    let k = fs.create(root, "keep", 0o644).unwrap();
    fs.write(k, 0, &keep).unwrap();
    let b = fs.create(root, "big", 0o644).unwrap();
    assert_eq!(fs.write(b, 0, &big).unwrap(), big.len());
    fs.sync().unwrap();
    let groups: std::collections::BTreeSet<u64> = fs
        .extents(b)
        .unwrap()
        .extents
        .iter()
        .flat_map(|&(_, len, p)| (p - 1) / 1024..=(p + len as u64 - 2) / 1024)
        .collect();
    assert!(groups.len() > 8, "big spans only {} groups", groups.len());
    // Recording starts here.
    let base = fs.device().img.clone();
    log.borrow_mut().writes.clear();
    let before = fs.crash_stats();
    fs.unlink(root, "big").unwrap();
    fs.sync().unwrap();
    let st = fs.crash_stats();
    assert_eq!(st.oversized, 0, "the unlink went out unjournalled: {st:?}");
    assert!(
        st.commits > before.commits + 3,
        "the unlink was not split: {} commits",
        st.commits - before.commits
    );
    fs.unmount().unwrap();
    let end = fs.into_device().img;
    std::fs::write(&path, &end).unwrap();
    fsck_clean(&path);
    let writes = log.take().writes;
    // Crash points: after each write, with everything since the last flush kept
    // (`cut`) or lost (`unflushed`).
    let crash = t.path().join("crash.img");
    let (mut checked, mut orphaned, mut failures) = (0, 0, Vec::new());
    for n in 0..=writes.len() {
        let cur = if n == 0 { 0 } else { writes[n - 1].2 };
        for unflushed in [false, true] {
            if unflushed && (n == 0 || writes[..n].iter().all(|w| w.2 < cur)) {
                continue;
            }
            let mut img = base.clone();
            for (off, data, epoch) in &writes[..n] {
                if unflushed && *epoch == cur {
                    continue;
                }
                img[*off as usize..*off as usize + data.len()].copy_from_slice(data);
            }
            checked += 1;
            let r = (|| -> Result<bool, String> {
                // e2fsck's own recovery of the raw image finishes it too.
                std::fs::write(&crash, &img).unwrap();
                let (code, out) = e2fsck(&crash, &["-fy"]);
                if code > 1 {
                    return Err(format!("e2fsck -fy of the raw image exit {code}:\n{out}"));
                }
                // Xenlet's mount: replay, orphan cleanup.
                let mut fs = Ext::mount(
                    MemDisk {
                        bytes: img,
                        read_only: false,
                    },
                    opts(),
                )
                .map_err(|e| format!("mount: {e}"))?;
                let cleaned = fs.orphans().deleted > 0;
                // The cleanup frees it in steps too, never unjournalled.
                if fs.crash_stats().oversized > 0 {
                    return Err(format!("cleanup went unjournalled: {:?}", fs.crash_stats()));
                }
                if let Some(e) = &fs.orphans().error {
                    return Err(format!("orphan cleanup: {e}"));
                }
                let root = fs.root();
                let k = fs.lookup(root, "keep").map_err(|e| format!("keep: {e}"))?;
                if read_all(&mut fs, k) != keep {
                    return Err(String::from("the synced file changed"));
                }
                if let Ok(b) = fs.lookup(root, "big") {
                    if read_all(&mut fs, b) != big {
                        return Err(String::from("big is there but not whole"));
                    }
                }
                fs.unmount().map_err(|e| format!("unmount: {e}"))?;
                std::fs::write(&crash, fs.into_device().bytes).unwrap();
                let (code, out) = e2fsck(&crash, &["-fn"]);
                if code != 0 {
                    return Err(format!(
                        "e2fsck -fn after Xenlet's mount exit {code}:\n{out}"
                    ));
                }
                Ok(cleaned)
            })();
            match r {
                Ok(c) => orphaned += usize::from(c),
                Err(e) => failures.push(format!("n={n} unflushed={unflushed}: {e}")),
            }
        }
    }
    eprintln!(
        "{} writes, {checked} crash images, {orphaned} finished by the orphan cleanup, {} failed",
        writes.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} crash points failed; first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(4)].join("\n")
    );
    assert!(
        orphaned > 0,
        "no crash point left the inode on the orphan list"
    );
}
