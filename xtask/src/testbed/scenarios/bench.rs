//! The benches' scenarios (`cargo xtask bench ...`), run by name only: `bench fs`
//! (the report's dd into a file on ext4, Xenlet against Linux), `bench files` (5,000
//! small files copied), `bench router`, `bench boot` (and the memory probes), `bench
//! net` (iperf3) and `bench dd`.

use super::builders::*;
use super::model::{Console, Disk, Need, Scenario, Step, Topology};
use super::{blk, boot, net, router};

/// dom0's `iperf3 -c` against the guest ($2: extra flags), with the CPU seconds that
/// dom0 and the guest used meanwhile (`xl list`'s Time(s), 0.1 s steps): whether a
/// throughput is bound by the guest's CPU, dom0's, or neither.
macro_rules! iperf3_cpu {
    ($addr:literal, $flags:literal) => {
        concat!(
            // `xl list` takes one domain at most: both rows picked from the full list
            "cpu() { xl list | awk -v n=\"$NAME\" '$1==\"Domain-0\"{d=$6} $1==n{g=$6} END{printf \"%s %s\", d, g}'; }; ",
            "c0=$(cpu); iperf3 -c ",
            $addr,
            " -t 5",
            $flags,
            "; c1=$(cpu); ",
            "echo $c0 $c1 | awk 'NF==4{printf \"cpu: dom0 %.1f s, guest %.1f s\\n\", $3-$1, $4-$2}'"
        )
    };
}

/// A bench step: [`iperf3_cpu`], capturing the receiver's line as `$var` and the
/// CPU seconds as `${var}_DOM0_CPU` and `${var}_GUEST_CPU`.
macro_rules! iperf3_step {
    ($addr:literal, $flags:literal, $var:literal) => {
        dom0_cap(
            iperf3_cpu!($addr, $flags),
            &[r"receiver$", r"^cpu: dom0"],
            &[
                ($var, IPERF3_RECEIVER),
                (concat!($var, "_DOM0_CPU"), IPERF3_DOM0_CPU),
                (concat!($var, "_GUEST_CPU"), IPERF3_GUEST_CPU),
            ],
            90,
        )
    };
}

/// What [`iperf3_cpu`] prints: dom0's CPU seconds, then the guest's.
const IPERF3_DOM0_CPU: &str = r"^cpu: dom0 ([0-9.]+) s, guest [0-9.]+ s$";
const IPERF3_GUEST_CPU: &str = r"^cpu: dom0 [0-9.]+ s, guest ([0-9.]+) s$";

// ---------------------------------------------------------------- bench fs
//
// `cargo xtask bench fs`: the report's experiment (mount the second disk at /mnt,
// `time dd bs=16k count=131072 if=/dev/zero of=/mnt/test`, then sync) on a 3 GiB
// disk formatted by dom0's mkfs.ext4 (4 KiB blocks at that size), `phy:` on a loop
// device (dom0's kernel blkback) as the report's second disk was. The block count is
// read in dom0 from the payload file `bench-fs-count` (written by the bench; the
// report's 131072 without it) and used as `${COUNT}`. One scenario is one run; the
// bench runs them alternating (`-1`, `-2`, `-3`).

/// The data disk: 3 GiB, so that a 2 GiB file fits on ext4 (the disks of a session
/// with such a disk are made on dom0's scratch disk, see `run.py`).
const BENCH_FS_DATA: Disk = Disk {
    var: "DATA",
    size_mb: 3072,
    source: None,
    loop_dev: true,
};

/// The shell command that says how many 16 KiB blocks to write (`count=N`).
macro_rules! echo_count {
    () => {
        "echo \"count=$(cat /payload/bench-fs-count 2>/dev/null || echo 131072)\""
    };
}

/// dom0 formats the data disk (`$mkfs`) and says how many 16 KiB blocks to write.
macro_rules! bench_fs_mkfs {
    ($mkfs:literal) => {
        dom0_cap(
            concat!($mkfs, echo_count!()),
            &[r"^Block size:\s+4096$"],
            &[("COUNT", r"^count=(\d+)$")],
            120,
        )
    };
}

/// dom0 formats the data disk with ext4's defaults.
const BENCH_FS_MKFS: Step =
    bench_fs_mkfs!("mkfs.ext4 -q -F $DATA && dumpe2fs -h $DATA 2>/dev/null | grep '^Block size'; ");

/// The raw-disk row needs only the count (the disk is blank).
const BENCH_FS_COUNT: Step = dom0_cap(echo_count!(), &[], &[("COUNT", r"^count=(\d+)$")], 30);

/// After the guest: dom0's e2fsck of what the guest left (as `$fsck`), and the file's
/// size (as `$size`).
macro_rules! bench_fs_check {
    ($fsck:expr, $size:expr) => {
        dom0_cap(
            concat!(
                "blockdev --flushbufs $DATA; e2fsck -fn $DATA >/dev/null 2>&1; echo \"e2fsck=$?\"; ",
                "debugfs -R 'stat /test' $DATA 2>/dev/null | grep -o 'Size: [0-9]*'"
            ),
            &[],
            &[($fsck, r"^e2fsck=(\d+)$"), ($size, r"Size: (\d+)")],
            300,
        )
    };
}

/// dom0 notes the CPU seconds dom0 and the guest have used so far (`xl list`'s
/// Time(s)), for [`fs_cpu_since`].
const FS_CPU_MARK: Step = dom0(
    "xl list | awk -v n=\"$NAME\" '$1==\"Domain-0\"{d=$6} $1==n{g=$6} END{print d, g}' > /tmp/fs-cpu",
    &[],
    30,
);

/// dom0: the CPU seconds dom0 and the guest used since [`FS_CPU_MARK`], captured as
/// `$dom0` and `$guest`. The bed has one CPU for both: dom0's seconds are the wall
/// time the same bytes would take if the guest's part of the path cost nothing (the
/// ceiling of any guest on this bed), and the two together against the wall time
/// say whether the CPU was the bound.
macro_rules! fs_cpu_since {
    ($dom0:expr, $guest:expr) => {
        dom0_cap(
            concat!(
                "c1=$(xl list | awk -v n=\"$NAME\" '$1==\"Domain-0\"{d=$6} $1==n{g=$6} END{print d, g}'); ",
                "echo $(cat /tmp/fs-cpu) $c1 | awk 'NF==4{printf \"cpu: dom0 %.1f s, guest %.1f s\\n\", $3-$1, $4-$2}'"
            ),
            &[r"^cpu: dom0"],
            &[($dom0, IPERF3_DOM0_CPU), ($guest, IPERF3_GUEST_CPU)],
            30,
        )
    };
}

/// `time sync`, timed by Xenlet's shell.
const TIMED_SYNC: Step = cmd_cap("time sync", &[], &[("SYNC_REAL", TIME_REAL)], 600);

/// Xenlet's `dd` (of `${COUNT}` blocks) and then `time sync`, each timed by the shell's
/// `time`, with the CPU seconds dom0 and the guest used meanwhile.
const fn timed_dd_and_sync(dd: &'static str) -> [Step; 4] {
    [
        FS_CPU_MARK,
        cmd_cap(
            dd,
            &[r"^${COUNT}\+0 records out"],
            &[("DD", DD_SUMMARY), ("DD_REAL", TIME_REAL)],
            1800,
        ),
        TIMED_SYNC,
        fs_cpu_since!("DOM0_CPU", "GUEST_CPU"),
    ]
}

/// Xenlet: the report's commands, each timed by the shell's `time`, on the disk dom0
/// formatted.
const BENCH_FS_XENLET_RUN: &[Step] = steps![
    cmd("mount /dev/xvdb /mnt", &[], 60),
    ..&timed_dd_and_sync("time dd bs=16k count=${COUNT} if=/dev/zero of=/mnt/test"),
    cmd("umount /mnt", &[], 120),
    bench_fs_check!("FSCK", "SIZE"),
    last("poweroff"),
];

/// Xenlet to the raw disk: the same dd to /dev/xvdb, then `time sync` (filesystems
/// and a flush of every disk).
const BENCH_FS_RAW_STEPS: &[Step] = steps![
    BENCH_FS_COUNT,
    ..&timed_dd_and_sync("time dd bs=16k count=${COUNT} if=/dev/zero of=/dev/xvdb"),
    last("poweroff"),
];

/// One run in the Linux domU: dom0 formats the (unmounted) disk, the domU mounts it
/// and runs the report's commands; busybox has no `time`, so dd and sync are timed
/// with /proc/uptime (10 ms steps) in one command line; then dom0 checks the disk.
/// `DD_S_<n>`, `SYNC_S_<n>`, `DOM0_CPU_<n>`, `GUEST_CPU_<n>`, `FSCK_<n>`, `SIZE_<n>`
/// are the run's figures.
macro_rules! linux_fs_run {
    ($dev:literal, $n:literal) => {
        [
            BENCH_FS_MKFS,
            cmd(
                concat!("mkdir -p /mnt && mount -t ext4 ", $dev, " /mnt && mount | grep /mnt"),
                &[concat!("^", $dev, " on /mnt type ext4")],
                120,
            ),
            FS_CPU_MARK,
            cmd_cap(
                concat!(
                    "a=$(cut -d' ' -f1 /proc/uptime); ",
                    "dd bs=16k count=${COUNT} if=/dev/zero of=/mnt/test; ",
                    "b=$(cut -d' ' -f1 /proc/uptime); sync; c=$(cut -d' ' -f1 /proc/uptime); ",
                    "echo $a $b $c | awk '{printf \"timed by /proc/uptime: dd %.2f s, sync %.2f s\\n\", $2 - $1, $3 - $2}'"
                ),
                &[r"^${COUNT}\+0 records out"],
                &[
                    (concat!("DD_S_", $n), r"^timed by /proc/uptime: dd ([0-9.]+) s, "),
                    (concat!("SYNC_S_", $n), r", sync ([0-9.]+) s$"),
                ],
                3600,
            ),
            fs_cpu_since!(concat!("DOM0_CPU_", $n), concat!("GUEST_CPU_", $n)),
            cmd("umount /mnt", &[], 300),
            bench_fs_check!(concat!("FSCK_", $n), concat!("SIZE_", $n)),
        ]
    };
}

/// The Linux domU does its three runs in one boot (a nested Linux HVM boot takes
/// minutes when the machine is busy), the disk formatted afresh for each.
macro_rules! linux_fs_steps {
    ($dev:literal) => {
        steps![
            ..&linux_fs_run!($dev, "1"),
            ..&linux_fs_run!($dev, "2"),
            ..&linux_fs_run!($dev, "3"),
            last("poweroff -f"),
        ]
    };
}

/// The Linux PVHVM domU of `linux-hvm` (Debian's kernel, busybox initramfs) with ext4
/// and the IDE/SCSI disk modules added to its initramfs by the runner
/// (`@LINUX_INITRD_FS@`), the data disk only, no vif.
const LINUX_FS_CONFIG: &str = linux_hvm_config!(256, "@LINUX_INITRD_FS@" {
    disk: ["phy:@DATA@,xvdb,w"],
});

/// The same domU without PV drivers, the report's slow case: no Xen platform PCI
/// device, so no blkfront; the disk is QEMU's emulated IDE (ata_piix, /dev/sda).
const LINUX_IDE_CONFIG: &str = linux_hvm_config!(256, "@LINUX_INITRD_FS@" {
    xen_platform_pci: 0,
    disk: ["phy:@DATA@,hda,w"],
});

pub const BENCH_FS_PVH: Scenario = Scenario {
    name: "bench-fs-pvh",
    about:
        "bench fs: Xenlet PVH, mount ext4 xvdb at /mnt, time dd bs=16k into /mnt/test, time sync",
    config: XENLET_PVH_CONFIG,
    disks: &[BENCH_FS_DATA],
    steps: steps![BENCH_FS_MKFS, ..BENCH_FS_XENLET_RUN],
    end_timeout_s: 60,
    budget_s: 3000,
    ..XENLET_PVH
};

pub const BENCH_FS_RAW: Scenario = Scenario {
    name: "bench-fs-raw",
    about: "bench fs: Xenlet PVH, time dd bs=16k to the raw /dev/xvdb, time sync",
    steps: BENCH_FS_RAW_STEPS,
    ..BENCH_FS_PVH
};

pub const BENCH_FS_HVM: Scenario = Scenario {
    name: "bench-fs-hvm",
    about: "bench fs: Xenlet HVM booted from its disk image (the report's configuration), the bench-fs-pvh commands",
    needs: &[Need::XenletImage],
    config: XENLET_HVM_PHY_CONFIG,
    disks: &[IMAGE_COPY, BENCH_FS_DATA],
    console: Console::Serial,
    // SeaBIOS and GRUB on emulated hardware: 53 s to the prompt in one run, and still
    // in GRUB's menu after 240 s in another (the machine busy with other work)
    boot_timeout_s: 600,
    ..BENCH_FS_PVH
};

pub const BENCH_FS_LINUX: Scenario = Scenario {
    name: "bench-fs-linux",
    about: "bench fs: the Linux PVHVM domU (blkfront), 3 runs in one boot: mkfs in dom0, mount ext4 xvdb, dd bs=16k into /mnt/test, sync (timed by /proc/uptime)",
    config: LINUX_FS_CONFIG,
    disks: &[BENCH_FS_DATA],
    boot_timeout_s: 900,
    boot_expect: &[r"^DOMU: up .*block: .*xvdb"],
    steps: linux_fs_steps!("/dev/xvdb"),
    budget_s: 6000,
    ..LINUX_DOMU
};

pub const BENCH_FS_LINUX_IDE: Scenario = Scenario {
    name: "bench-fs-linux-ide",
    about: "bench fs: the same Linux domU without PV drivers (xen_platform_pci=0): QEMU's emulated IDE disk, /dev/sda",
    config: LINUX_IDE_CONFIG,
    boot_expect: &[r"^DOMU: up .*block: .*sda"],
    steps: linux_fs_steps!("/dev/sda"),
    ..BENCH_FS_LINUX
};

// ---------------------------------------------------------------- bench files
//
// `cargo xtask bench files`: the crash-safety issue's metadata-heavy work: 5,000
// small files (100-4,099 bytes, 5 directories) created on ext4 and synced. dom0 makes
// them (python3, one process) in a source disk (`mke2fs -d`, xvdc, mounted
// read-only) and formats the data disk (256 MiB, 1 KiB blocks as mkfs.ext4 picks at
// that size); the guest runs `cp -r /src/files /mnt/` then `sync`, timed; dom0's
// e2fsck -fn must be clean and the copy's manifest (every file's SHA-256) the
// source's. `bench-fs-nojournal` is `bench-fs-pvh` on ext4 made without a journal
// (`-O ^has_journal`): the journal's cost on the report's dd.

/// The source disk of the small files (read-only in the guest).
const BENCH_FILES_SRC: Disk = Disk {
    var: "SRC",
    size_mb: 64,
    source: None,
    loop_dev: true,
};
/// The disk they are copied to.
const BENCH_FILES_DATA: Disk = Disk {
    var: "DATA",
    size_mb: 256,
    source: None,
    loop_dev: true,
};

/// dom0: a tree `/tmp/smallsrc/TREE` made by python (`$py`: its lines after `import
/// os, random`, run in that directory), its manifest (every file's SHA-256), the source
/// disk, the formatted data disk.
macro_rules! bench_tree_mkfs {
    ($tree:literal, $($py:literal)*) => {
        dom0_cap(
            concat!(
                "rm -rf /tmp/smallsrc && mkdir -p /tmp/smallsrc/", $tree, " && cd /tmp/smallsrc/", $tree, " && ",
                "python3 -c \"import os, random\n",
                $($py,)*
                "\" && ",
                "echo \"manifest $(find . -type f | sort | xargs sha256sum | sha256sum | cut -c1-64)\" && ",
                "mke2fs -q -F -t ext4 -d /tmp/smallsrc $SRC && mkfs.ext4 -q -F $DATA && ",
                "dumpe2fs -h $DATA 2>/dev/null | grep '^Block size'"
            ),
            &[r"^Block size:\s+1024$"],
            &[("MANIFEST", r"^manifest ([0-9a-f]{64})$")],
            300,
        )
    };
}

/// dom0: the 5,000 small files in 5 directories.
const BENCH_FILES_MKFS: Step = bench_tree_mkfs!(
    "files",
    "r = random.Random(14)\n"
    "for d in range(5): os.mkdir('d%d' % d)\n"
    "for i in range(5000):\n"
    "    open('d%d/f%04d' % (i % 5, i), 'wb').write(r.randbytes(100 + r.randrange(4000)))\n"
);

/// dom0: one directory of 10,000 files of 0-64 bytes, named `entry-NNNNN-XXXXXXXX`
/// (a pseudo-random suffix: names that do not hash in order, as real names).
const BENCH_DIR_MKFS: Step = bench_tree_mkfs!(
    "big",
    "r = random.Random(30)\n"
    "for i in range(10000):\n"
    "    open('entry-%05d-%08x' % (i, r.getrandbits(32)), 'wb').write(r.randbytes(r.randrange(65)))\n"
);

/// dom0 after the guest: e2fsck -fn of the data disk, and the manifest of the copy of
/// `$tree`.
macro_rules! bench_files_check {
    ($tree:literal, $fsck:expr, $same:expr) => {
        dom0_cap(
            concat!(
                "blockdev --flushbufs $DATA; e2fsck -fn $DATA >/dev/null 2>&1; echo \"e2fsck=$?\"; ",
                "rm -rf /tmp/smallout && mkdir /tmp/smallout && debugfs -R 'rdump /", $tree, " /tmp/smallout' $DATA 2>/dev/null; ",
                "cd /tmp/smallout/", $tree, " && m=$(find . -type f | sort | xargs sha256sum | sha256sum | cut -c1-64); ",
                "echo \"copy $([ \"$m\" = \"$MANIFEST\" ] && echo same || echo different) ($(find . -type f | wc -l) files)\""
            ),
            &[],
            &[($fsck, r"^e2fsck=(\d+)$"), ($same, r"^copy (same|different) ")],
            600,
        )
    };
}

/// A PVH Xenlet with the data disk and the source disk, in 32 MiB (a 7 MiB heap: the
/// copy's caches stay within the mounts' budgets, `shell/tests/cp_r_heap.rs`).
const XENLET_FILES_CONFIG: &str = xl_config!(pvh {
    memory: 32,
    kernel: "@FILES@/xenlet.elf",
    disk: ["phy:@DATA@,xvdb,w", "phy:@SRC@,xvdc,r"],
});

/// A Xenlet run: `$mkfs` in dom0, `time cp -r /src/$tree /mnt/` and `time sync`; with
/// `lookup` the data disk is then mounted again alone (nothing cached; the source's
/// cache freed: a 10,000-entry `ls -l` peaks at about 4 MiB of the 7 MiB heap on the
/// host) and `time ls -l /mnt/$tree | grep -c entry-` must count `$lines` (the
/// entries' rows, not `total`). Xenlet's `ls -l` (shell/src/files.rs `ls`)
/// resolves every entry by its path (`Vfs::resolve_nofollow("/mnt/big/NAME")`, a
/// lookup of NAME in the directory) and stats it: a lookup per name; the pipe keeps
/// the 10,000 lines off the console.
macro_rules! xenlet_tree_steps {
    ($mkfs:expr, $tree:literal $(, lookup $lines:literal)?) => {
        steps![
            $mkfs,
            cmd("mkdir -p /src", &[], 30),
            cmd("mount -o ro /dev/xvdc /src", &[], 60),
            cmd("mount /dev/xvdb /mnt", &[], 60),
            cmd_cap(
                concat!("time cp -r /src/", $tree, " /mnt/"),
                &[],
                &[("CP_REAL", TIME_REAL)],
                1800,
            ),
            TIMED_SYNC,
            cmd("umount /mnt", &[], 120),
            cmd("umount /src", &[], 60),
            $(
                cmd("mount /dev/xvdb /mnt", &[], 60),
                cmd_cap(
                    concat!("time ls -l /mnt/", $tree, " | grep -c entry-"),
                    &[concat!("^", $lines, "$")],
                    &[("LS_REAL", TIME_REAL)],
                    1800,
                ),
                cmd("umount /mnt", &[], 120),
            )?
            bench_files_check!($tree, "FSCK", "SAME"),
            last("poweroff"),
        ]
    };
}

pub const BENCH_FILES_XENLET: Scenario = Scenario {
    name: "bench-files-xenlet",
    about: "bench files: Xenlet PVH, cp -r of 5,000 small files from xvdc to ext4 on xvdb, sync; e2fsck and manifest in dom0",
    config: XENLET_FILES_CONFIG,
    disks: &[BENCH_FILES_DATA, BENCH_FILES_SRC],
    steps: xenlet_tree_steps!(BENCH_FILES_MKFS, "files"),
    end_timeout_s: 60,
    budget_s: 2400,
    ..XENLET_PVH
};

pub const BENCH_DIR_XENLET: Scenario = Scenario {
    name: "bench-dir-xenlet",
    about: "bench files: Xenlet PVH, a 10,000-entry directory: cp -r from xvdc to ext4 on xvdb, sync, then (mounted again) ls -l of it; e2fsck and manifest in dom0",
    steps: xenlet_tree_steps!(BENCH_DIR_MKFS, "big", lookup "10000"),
    ..BENCH_FILES_XENLET
};

/// The Linux PVHVM domU of `bench-fs-linux` with the source disk as well (writable in
/// the config: QEMU will not emulate a read-only IDE disk for an HVM domain, and xl
/// then fails with "device model did not start"; the domU mounts it read-only).
const LINUX_FILES_CONFIG: &str = linux_hvm_config!(256, "@LINUX_INITRD_FS@" {
    disk: ["phy:@DATA@,xvdb,w", "phy:@SRC@,xvdc,w"],
});

/// One run in the Linux domU (caches dropped first, so the source is read from its
/// disk as in Xenlet's fresh boot), timed by /proc/uptime: as `xenlet_tree_steps!`,
/// with `lookup` busybox's `ls -l` after the data disk is mounted again and the caches
/// dropped (it lstat()s every entry by its path).
macro_rules! linux_files_run {
    ($mkfs:expr, $tree:literal, $n:literal $(, lookup $lines:literal)?) => {
        steps![
            $mkfs,
            cmd(
                "echo 3 > /proc/sys/vm/drop_caches; mkdir -p /src /mnt && mount -t ext4 -o ro /dev/xvdc /src && mount -t ext4 /dev/xvdb /mnt && mount | grep -c ' type ext4'",
                &[r"^2$"],
                120,
            ),
            cmd_cap(
                concat!(
                    "a=$(cut -d' ' -f1 /proc/uptime); cp -r /src/", $tree, " /mnt/; ",
                    "b=$(cut -d' ' -f1 /proc/uptime); sync; c=$(cut -d' ' -f1 /proc/uptime); ",
                    "echo $a $b $c | awk '{printf \"timed by /proc/uptime: cp %.2f s, sync %.2f s\\n\", $2 - $1, $3 - $2}'"
                ),
                &[],
                &[
                    (concat!("CP_S_", $n), r"^timed by /proc/uptime: cp ([0-9.]+) s, "),
                    (concat!("SYNC_S_", $n), r", sync ([0-9.]+) s$"),
                ],
                3600,
            ),
            cmd("umount /mnt; umount /src", &[], 300),
            $(
                cmd_cap(
                    concat!(
                        "echo 3 > /proc/sys/vm/drop_caches && mount -t ext4 /dev/xvdb /mnt && ",
                        "a=$(cut -d' ' -f1 /proc/uptime); n=$(ls -l /mnt/", $tree, " | grep -c entry-); ",
                        "b=$(cut -d' ' -f1 /proc/uptime); ",
                        "echo $a $b $n | awk '{printf \"timed by /proc/uptime: ls %.2f s, %d lines\\n\", $2 - $1, $3}'"
                    ),
                    &[concat!(", ", $lines, " lines$")],
                    &[(concat!("LS_S_", $n), r"^timed by /proc/uptime: ls ([0-9.]+) s, ")],
                    3600,
                ),
                cmd("umount /mnt", &[], 300),
            )?
            bench_files_check!($tree, concat!("FSCK_", $n), concat!("SAME_", $n)),
        ]
    };
}

pub const BENCH_FILES_LINUX: Scenario = Scenario {
    name: "bench-files-linux",
    about: "bench files: the Linux PVHVM domU, 3 runs in one boot: cp -r of 5,000 small files to ext4, sync (timed by /proc/uptime)",
    config: LINUX_FILES_CONFIG,
    disks: &[BENCH_FILES_DATA, BENCH_FILES_SRC],
    steps: steps![
        ..linux_files_run!(BENCH_FILES_MKFS, "files", "1"),
        ..linux_files_run!(BENCH_FILES_MKFS, "files", "2"),
        ..linux_files_run!(BENCH_FILES_MKFS, "files", "3"),
        last("poweroff -f"),
    ],
    ..BENCH_FS_LINUX
};

pub const BENCH_DIR_LINUX: Scenario = Scenario {
    name: "bench-dir-linux",
    about: "bench files: the Linux PVHVM domU, 3 runs in one boot: a 10,000-entry directory: cp -r to ext4, sync, then (mounted again, caches dropped) ls -l of it (timed by /proc/uptime)",
    steps: steps![
        ..linux_files_run!(BENCH_DIR_MKFS, "big", "1", lookup "10000"),
        ..linux_files_run!(BENCH_DIR_MKFS, "big", "2", lookup "10000"),
        ..linux_files_run!(BENCH_DIR_MKFS, "big", "3", lookup "10000"),
        last("poweroff -f"),
    ],
    ..BENCH_FILES_LINUX
};

pub const BENCH_FS_NOJOURNAL: Scenario = Scenario {
    name: "bench-fs-nojournal",
    about: "bench fs: Xenlet PVH, the bench-fs-pvh commands on ext4 made without a journal (-O ^has_journal)",
    // `bench-fs-pvh` on ext4 without a journal
    steps: steps![
        bench_fs_mkfs!(
            "mkfs.ext4 -q -F -O ^has_journal $DATA && dumpe2fs -h $DATA 2>/dev/null | grep -E '^(Block size|Filesystem features)'; "
        ),
        ..BENCH_FS_XENLET_RUN,
    ],
    ..BENCH_FS_PVH
};

/// The measurements of `cargo xtask bench router` (`xtask/src/bench_router.rs`), taken
/// once a router domain is up in the router topology with its WAN address in
/// `${ROUTER_WAN}` and lan1 static at 192.168.1.10: wan's tcpdump stopped (its
/// capture would load dom0 during the floods); the domain's memory as `xl list`
/// gives it; 200 pings from lan1 to wan 10 ms apart (every answer's time on one line);
/// iperf3 TCP lan1 -> wan and wan -> lan1 (`-R`), 1 and 4 streams, 3 s each; iperf3
/// UDP with 64-byte payloads as fast as lan1 can send (`-b 0`), what wan received; new
/// TCP connections through the NAT for 5 s (`net/connrate.py`, 4 at a time, to wan's
/// responder). Each step only checks that its measurement gave a figure: the figures
/// themselves are the bench's to compare, never assertions.
const BENCH_ROUTER_STEPS: &[Step] = steps![
    BENCH_ROUTER_NO_TCPDUMP,
    dom0_cap(
        "xl list $NAME | awk 'NR == 2 {print \"domain memory: \" $3 \" MiB\"}'",
        &[],
        &[("MEM_MIB", r"^domain memory: (\d+) MiB$")],
        30,
    ),
    ..BENCH_ROUTER_TRAFFIC,
];

/// wan's tcpdump writes every packet but iperf3's TCP data to a file (the UDP flood
/// included): in dom0, beside the traffic being measured, on the same vCPUs.
const BENCH_ROUTER_NO_TCPDUMP: Step = dom0(
    "kill $(cat $TOPO/tcpdump.pid) && echo 'tcpdump in wan stopped for the bench'",
    &[r"^tcpdump in wan stopped"],
    10,
);

/// The traffic of [`BENCH_ROUTER_STEPS`] (the ceiling measures it too).
const BENCH_ROUTER_TRAFFIC: &[Step] = &[
    // one ping first: lan1's and the router's ARP caches are warm for the 200
    ns_cap(
        "lan1",
        concat!(
            "ping -n -c 1 -W 5 10.77.0.10 >/dev/null; ",
            "ping -n -c 200 -i 0.01 -W 2 10.77.0.10 | awk ",
            "'/ time=/ {sub(/.* time=/, \"\"); sub(/ ms.*/, \"\"); t = t \" \" $0} ",
            "/packets transmitted/ {s = $0} END {print \"ping times:\" t; print s}'"
        ),
        &[r"^200 packets transmitted"],
        &[("PING_MS", r"^ping times: ([0-9. ]+)$")],
        60,
    ),
    ns_cap(
        "lan1",
        "iperf3 -c 10.77.0.10 -t 3 --connect-timeout 5000",
        &[],
        &[("TCP_UP_1", IPERF3_RECEIVER)],
        60,
    ),
    ns_cap(
        "lan1",
        "iperf3 -c 10.77.0.10 -t 3 -P 4 --connect-timeout 5000",
        &[],
        &[("TCP_UP_4", IPERF3_SUM_RECEIVER)],
        60,
    ),
    ns_cap(
        "lan1",
        "iperf3 -c 10.77.0.10 -t 3 -R --connect-timeout 5000",
        &[],
        &[("TCP_DOWN_1", IPERF3_RECEIVER)],
        60,
    ),
    ns_cap(
        "lan1",
        "iperf3 -c 10.77.0.10 -t 3 -P 4 -R --connect-timeout 5000",
        &[],
        &[("TCP_DOWN_4", IPERF3_SUM_RECEIVER)],
        60,
    ),
    ns_cap(
        "lan1",
        "iperf3 -c 10.77.0.10 -t 3 -u -l 64 -b 0 --connect-timeout 5000",
        &[],
        &[(
            "UDP_64",
            r"^(\[ *\d+\] .* \d+/\d+ \([0-9.e+-]+%\)\s+receiver)$",
        )],
        60,
    ),
    ns_cap(
        "lan1",
        "python3 $NET/connrate.py 10.77.0.10 7777 5 4",
        &[],
        &[(
            "CONNS",
            r"^(connections: ok=\d+ failed=\d+ seconds=[0-9.]+ workers=\d+)$",
        )],
        60,
    ),
    // where the CPU goes (issue 34): dom0's and the router's CPU seconds over an 8 s
    // transfer each way, then dom0's profile over another 4 s
    dom0_cap(
        "$NET/cpucost.sh $NAME 8",
        &[r"receiver$", r"^cpu: dom0", r"^perf incl: "],
        &[
            ("CPU_UP_TCP", IPERF3_RECEIVER),
            ("CPU_UP", CPUCOST_CPU),
            ("PERF_UP_COMM", r"^perf comm: (.*)$"),
            ("PERF_UP_SYM", r"^perf sym: (.*)$"),
            ("PERF_UP_INCL", r"^perf incl: (.*)$"),
        ],
        90,
    ),
    dom0_cap(
        "$NET/cpucost.sh $NAME 8 -R",
        &[r"receiver$", r"^cpu: dom0", r"^perf incl: "],
        &[
            ("CPU_DOWN_TCP", IPERF3_RECEIVER),
            ("CPU_DOWN", CPUCOST_CPU),
            ("PERF_DOWN_COMM", r"^perf comm: (.*)$"),
            ("PERF_DOWN_SYM", r"^perf sym: (.*)$"),
            ("PERF_DOWN_INCL", r"^perf incl: (.*)$"),
        ],
        90,
    ),
    // the 64-byte knee from the kernel's pktgen (issue 34): one flow, then a new
    // flow (conntrack entry and NAT mapping) every packet; last, as the floods
    // leave the router's tables full
    dom0_cap(
        "$NET/knee.sh flow 2",
        &[r"^knee: flow \d+ pps", r"^unlimited: flow "],
        &[
            ("KNEE_FLOW", r"^knee: flow (\d+ pps .*)$"),
            ("UNLIMITED_FLOW", KNEE_UNLIMITED),
        ],
        240,
    ),
    dom0_cap(
        "$NET/knee.sh flows 2",
        &[r"^knee: flows \d+ pps", r"^unlimited: flows "],
        &[
            ("KNEE_FLOWS", r"^knee: flows (\d+ pps .*)$"),
            ("UNLIMITED_FLOWS", KNEE_UNLIMITED),
        ],
        240,
    ),
];

/// The IPv6 rows of `bench router` (issue 31), each scenario's last measurements (a
/// failed step here leaves every IPv4 figure captured): once lan1 has its IPv6 address
/// and the router its (see [`XENLET_V6_UP`], [`LINUX_V6_UP`], [`CEILING_V6_UP`]),
/// one ping to wan's 2001:db8:77::10 (lan1's and the router's neighbour caches warm;
/// its answer is not required, the transfers tell) and iperf3 `-6` TCP, 1 stream,
/// lan1 -> wan and wan -> lan1 (`-R`: lan1 is the client both ways, as in the IPv4
/// rows; fw4 keeps a new connection from the WAN out), 3 s each. Routed, no NAT66:
/// wan sees lan1's own address.
const BENCH_ROUTER_TRAFFIC6: &[Step] = &[
    ns(
        "lan1",
        "ping -6 -n -c 1 -W 5 2001:db8:77::10; ip -6 route get 2001:db8:77::10",
        &[],
        30,
    ),
    ns_cap(
        "lan1",
        "iperf3 -6 -c 2001:db8:77::10 -t 3 --connect-timeout 5000",
        &[],
        &[("TCP6_UP_1", IPERF3_RECEIVER)],
        60,
    ),
    ns_cap(
        "lan1",
        "iperf3 -6 -c 2001:db8:77::10 -t 3 -R --connect-timeout 5000",
        &[],
        &[("TCP6_DOWN_1", IPERF3_RECEIVER)],
        60,
    ),
];

/// Xenlet's IPv6 as OpenWrt's defaults make it: wan6 bound with a /56 delegated by
/// wan's DHCPv6 server (`router.sh up`, which also routes the delegated prefixes
/// back via Xenlet's WAN link-local address), the LAN's /64 of it as `${PD64}`;
/// lan1's IPv6 started afresh (`router.sh static` flushed its link-local address
/// with the rest: disable_ipv6 off and on again, and it solicits), its address in
/// that /64 by SLAAC from the router's answer (waited for until its duplicate
/// address detection is done: the first session matched it still tentative), its
/// default route via the router's link-local address.
const XENLET_V6_UP: &[Step] = &[
    cmd_cap(
        "ifstatus wan6",
        &[r"^wan6: eth1 bound"],
        &[("PD64", router::IFSTATUS_LAN_PD64)],
        30,
    ),
    ns_cap(
        "lan1",
        "sysctl -qw net.ipv6.conf.eth0.disable_ipv6=1; sysctl -qw net.ipv6.conf.eth0.disable_ipv6=0; i=0; while [ $i -lt 60 ] && ! ip -6 addr show dev eth0 scope global | grep 'inet6 ${PD64}:' | grep -qv tentative; do sleep 0.5; i=$((i+1)); done; ip -6 addr show dev eth0; ip -6 route show default",
        &[
            r"inet6 ${PD64}:[0-9a-f:]+/64 scope global",
            r"^default via fe80::216:3eff:fe01:2 dev eth0",
        ],
        &[("LAN1_6", r"inet6 (2001:db8:77[0-9a-f:]+)/64 scope global")],
        60,
    ),
];

/// What `net/linux-router/router-up6` says once its static addresses are up.
const ROUTER_UP6: &str = r"^router6: forwarding 1; lan eth0 2001:db8:1::1/64; wan eth1 2001:db8:77::2/64 via 2001:db8:77::10$";

/// lan1 at 2001:db8:1::10/64 (default via the router's 2001:db8:1::1), and wan's
/// route back to 2001:db8:1::/64 via the router's 2001:db8:77::2 (`router.sh
/// static6`): the Linux router's and the ceiling's LAN over IPv6.
const LAN1_STATIC6: Step = dom0(
    "$NET/router.sh static6 lan1",
    &[
        r"^netns lan1: 2001:db8:1::10/64 route6: default via 2001:db8:1::1 ",
        r"wan route6: 2001:db8:1::/64 via 2001:db8:77::2 ",
    ],
    20,
);

/// The Linux router domU's IPv6: `/etc/router-up6` (static addresses, forwarding on;
/// its busybox has no DHCPv6-PD client or RA daemon; fw4.nft has fw4's IPv6 rules
/// since `/etc/router-up`), then lan1's and wan's side, then what the router sees
/// of wan over both families (no expectation: a record for when the transfers fail;
/// the first session's router answered lan1's ping to wan with address unreachable,
/// its neighbour solicitations on eth1 unanswered, where the ceiling's with the same
/// script and ruleset passed: whether eth1 still sends after the floods, whether
/// wan's advertisement came and the wan zone's ICMPv6 rule counted it).
const LINUX_V6_UP: &[Step] = &[
    cmd("/etc/router-up6", &[ROUTER_UP6], 60),
    LAN1_STATIC6,
    cmd(
        "grep eth1 /proc/net/dev; ping -c 1 -W 2 10.77.0.10; ping -6 -c 1 -W 3 2001:db8:77::10; ip -6 neigh show dev eth1; grep eth1 /proc/net/dev; nft list chain inet fw4 input_wan | grep -i icmpv6",
        &[],
        60,
    ),
];

/// The ceiling's IPv6: the same `router-up6` in dom0's namespace `rtr` (`router.sh
/// dom0router6`), the same addresses.
const CEILING_V6_UP: &[Step] = &[
    dom0("$NET/router.sh dom0router6", &[ROUTER_UP6], 30),
    LAN1_STATIC6,
];

/// `net/cpucost.sh`'s CPU seconds line, whole.
const CPUCOST_CPU: &str = r"^(cpu: dom0 [0-9.]+ s, router [0-9.]+ s)$";

/// `net/knee.sh`'s probe without a rate limit: `offered N pps, forwarded M pps`.
const KNEE_UNLIMITED: &str = r"^unlimited: \w+ (offered \d+ pps, forwarded \d+ pps)$";

/// The iperf3 summary of all streams (`-P N`) as the receiver saw it.
const IPERF3_SUM_RECEIVER: &str = r"^(\[SUM\] .*bits/sec .*receiver)$";

/// `bench router`'s Linux router: the domain of `router-linux` (256 MiB: Debian's
/// kernel and initramfs need it to boot; 1 vCPU) configured by `/etc/router-up` (fw4's
/// ruleset, masquerade), then the measurements and the counters of its vifs.
pub const BENCH_ROUTER_LINUX: Scenario = Scenario {
    name: "bench-router-linux",
    about:
        "bench router: the Linux PVH router domU (256 MiB, fw4 ruleset) measured from lan1 and wan",
    steps: steps![
        cmd_cap(
            "/etc/router-up",
            &[r"^router: nft: \d+ chains, 1 masquerade$"],
            &[("ROUTER_WAN", r"^router: .* wan eth1 (10\.77\.0\.\d+)/24")],
            120,
        ),
        router::LAN1_STATIC,
        ..BENCH_ROUTER_STEPS,
        // busybox's ip has no -s: the vifs' counters from /proc
        cmd("cat /proc/net/dev", &[r"^\s*eth1:"], 30),
        cmd("conntrack -S", &[], 30),
        ..LINUX_V6_UP,
        ..BENCH_ROUTER_TRAFFIC6,
        last("poweroff -f"),
    ],
    ..router::LINUX_ROUTER
};

/// `bench router`'s ceiling: no router domain on the path. dom0 itself forwards
/// between brlan and brwan (`router.sh dom0router`: a namespace with the Linux
/// router's fw4 ruleset, masquerade on its WAN side), measured by the same traffic;
/// the bed runs a domain per scenario, so an idle Xenlet without vifs is there,
/// off the path.
pub const BENCH_ROUTER_CEILING: Scenario = Scenario {
    name: "bench-router-ceiling",
    about: "bench router: the ceiling, dom0 forwarding between brlan and brwan itself (fw4 ruleset in a namespace), no router domain on the path",
    config: xl_config!(pvh {
        memory: 32,
        kernel: "@FILES@/xenlet.elf",
    }),
    steps: steps![
        dom0_cap(
            "$NET/router.sh dom0router",
            &[r"^router: nft: \d+ chains, 1 masquerade$"],
            &[("ROUTER_WAN", r"^router: .* wan eth1 (10\.77\.0\.\d+)/24")],
            60,
        ),
        router::LAN1_STATIC,
        BENCH_ROUTER_NO_TCPDUMP,
        ..BENCH_ROUTER_TRAFFIC,
        ..CEILING_V6_UP,
        ..BENCH_ROUTER_TRAFFIC6,
        last("poweroff"),
    ],
    budget_s: 900,
    topology: Some(Topology::Router),
    ..XENLET_PVH
};

/// `cargo xtask bench clients`: a Linux PVH client domU behind the router runs iperf3
/// to wan both ways, 1 and 4 streams (run.py's CLIENT_INIT with `client_bench`), its
/// vif `$vif`: on dom0's brlan (through dom0's netback and bridge to the router's
/// eth0: today's path) or served by the router itself (`backend=`: the driver domain,
/// Xenlet's netback or the Linux router's). The client's lines are read from its
/// console log in dom0.
macro_rules! bench_client_run {
    ($vif:literal) => {
        &[
            dom0(
                concat!(
                    "rm -f /var/log/xen/console/guest-$NAME-c1.log; ",
                    "printf '%s\\n' 'name=\"'$NAME-c1'\"' 'type=\"pvh\"' 'memory=160' ",
                    "'kernel=\"'$LINUX'\"' 'ramdisk=\"'$CLIENT_INITRD'\"' ",
                    "'extra=\"console=hvc0 loglevel=4 client_bench\"' ",
                    "'vif=[\"", $vif, ",mac=00:16:3e:0c:00:01\"]' >/tmp/client1.cfg && ",
                    // the session's lines for every domain (native TSC)
                    "printf '%s' \"$DOMAIN_XL\" >>/tmp/client1.cfg && ",
                    "xl create /tmp/client1.cfg >/tmp/client1.log 2>&1; rc=$?; tail -3 /tmp/client1.log; ",
                    "echo \"created c1 rc=$rc\""
                ),
                &[r"^created c1 rc=0$"],
                120,
            ),
            // the domains' CPU seconds from the client's lease to the bench's end
            dom0_cap(
                concat!(
                    "log=/var/log/xen/console/guest-$NAME-c1.log; ",
                    "for i in $(seq 240); do grep -aq 'CLIENT: lease' $log && break; sleep 1; done; ",
                    "xl list | awk 'NR > 1 {print $1, $6}' >/tmp/cpu0; t0=$(date +%s); ",
                    "for i in $(seq 300); do grep -aq 'CLIENT: bench done' $log && break; sleep 1; done; ",
                    "xl list | awk 'NR > 1 {print $1, $6}' >/tmp/cpu1; t1=$(date +%s); ",
                    "echo \"cpu over the bench's $((t1 - t0)) s:$(awk 'NR == FNR {a[$1] = $2; next} ",
                    "$1 in a {printf \" %s %.1f s\", $1, $2 - a[$1]}' /tmp/cpu0 /tmp/cpu1)\"; ",
                    "xl debug-keys s; xl dmesg | tail -20 | grep -a 'TSC\\|: mode=' | tail -3; ",
                    "grep -a 'CLIENT: \\(lease\\|clocksource\\|iperf3\\|counters\\|bench\\)' $log | tr -d '\\r'"
                ),
                &[r"^CLIENT: bench done$", r"^cpu over the bench"],
                &[
                    ("UP_1", r"^CLIENT: iperf3 -t 10: (.*receiver)$"),
                    ("UP_4", r"^CLIENT: iperf3 -t 10 -P 4: (.*receiver)$"),
                    ("DOWN_1", r"^CLIENT: iperf3 -t 10 -R: (.*receiver)$"),
                    ("DOWN_4", r"^CLIENT: iperf3 -t 10 -P 4 -R: (.*receiver)$"),
                ],
                600,
            ),
        ]
    };
}

/// `bench clients` behind the Xenlet router: the client's vif `$vif`, then the
/// router's view (its bridge, its LAN vif's counters, conntrack).
macro_rules! bench_clients {
    ($name:literal, $about:literal, $vif:literal) => {
        Scenario {
            name: $name,
            about: $about,
            steps: steps![
                router::WAN_LEASE_WAIT,
                BENCH_ROUTER_NO_TCPDUMP,
                ..bench_client_run!($vif),
                cmd("brctl show", &[], 30),
                cmd("ip -s link show eth0", &[], 30),
                cmd("ethtool -S eth0", &[], 30),
                cmd("conntrack -S", &[], 30),
                last("poweroff"),
            ],
            budget_s: 900,
            boot_expect: router::XENLET_ROUTER_UP,
            ..router::XENLET_ROUTER
        }
    };
}

pub const BENCH_CLIENTS_DOM0: Scenario = bench_clients!(
    "bench-clients-dom0",
    "bench clients: a Linux client domU on dom0's brlan behind the Xenlet router (dom0's netback and bridge on the path): iperf3 to wan both ways",
    "bridge=brlan"
);

pub const BENCH_CLIENTS_NETBACK: Scenario = bench_clients!(
    "bench-clients-netback",
    "bench clients: a Linux client domU whose vif the Xenlet router serves itself (netback, br-lan): iperf3 to wan both ways",
    "backend='$NAME',bridge=br-lan"
);

/// `bench clients`' Linux driver domain: the same client behind the Linux router domU
/// in driver-domain mode (`router-netback-linux`'s: xen-netback, the bridge br-lan,
/// fw4's ruleset with br-lan as lan), which serves its vif.
pub const BENCH_CLIENTS_LINUX: Scenario = Scenario {
    name: "bench-clients-linux",
    about: "bench clients: a Linux client domU whose vif the Linux router domU serves as a driver domain (xen-netback, its bridge br-lan, fw4's ruleset): iperf3 to wan both ways",
    steps: steps![
        router::LINUX_DRIVER_DOMAIN_UP,
        BENCH_ROUTER_NO_TCPDUMP,
        ..bench_client_run!("backend='$NAME',bridge=br-lan"),
        cmd(
            "ls /sys/class/net/br-lan/brif; cat /tmp/devd.log",
            &[],
            30,
        ),
        // busybox's ip has no -s: the counters from /proc
        cmd("cat /proc/net/dev", &[], 30),
        cmd("conntrack -S", &[], 30),
        last("poweroff -f"),
    ],
    ..router::LINUX_ROUTER_DRIVER_DOMAIN
};

/// `bench router`'s Xenlet router: the domain of `router-xenlet` (PVH, 32 MiB, 1 vCPU,
/// its image's `/etc/config`), its WAN lease, then the measurements, the counters of its
/// WAN vif and its heap.
pub const BENCH_ROUTER_XENLET: Scenario = Scenario {
    name: "bench-router-xenlet",
    about: "bench router: Xenlet as the router (PVH, 32 MiB, its image's /etc/config) measured from lan1 and wan",
    boot_expect: router::XENLET_ROUTER_UP,
    steps: steps![
        router::WAN_LEASE_WAIT,
        cmd_cap(
            "ip addr show eth1",
            &[],
            &[("ROUTER_WAN", r"^    inet (10\.77\.0\.\d+)/24 ")],
            30,
        ),
        router::LAN1_STATIC,
        ..BENCH_ROUTER_STEPS,
        cmd("ip -s link show eth1", &[r"^\d+: eth1: "], 30),
        cmd("conntrack -S", &[], 30),
        cmd("mem", &[r"^heap: "], 30),
        ..XENLET_V6_UP,
        ..BENCH_ROUTER_TRAFFIC6,
        // the counters again, the IPv6 rows' share in them (GSO received and sent
        // whole, drops and their reasons, IPv6 flows)
        cmd("ip -s link show eth0", &[r"^\d+: eth0: "], 30),
        cmd("ethtool -S eth0", &[], 30),
        cmd("conntrack -S", &[], 30),
        last("poweroff"),
    ],
    budget_s: 900,
    ..router::XENLET_ROUTER
};

// ---------------------------------------------------------------- bench boot
//
// `cargo xtask bench boot`: `xl create` to the first shell prompt, Xenlet booted as
// HVM from its disk image (the report's configuration) and as PVH, against the Linux
// PVHVM domU of `linux-hvm` to its init's shell (the prompt follows init's first line,
// `DOMU: up`, at once); the runner's `t_create` (`xl create -p`) and
// `t_first_prompt` (unpause to prompt) of each run. Then the smallest `memory=` with
// which each boots and passes a dd + ping check: one probe scenario per size.

/// Xenlet HVM from its disk image: the `hvm-disk` configuration.
pub const BENCH_BOOT_HVM: Scenario = Scenario {
    name: "bench-boot-hvm",
    about: "bench boot: Xenlet HVM from its disk image (hvm-disk's config), xl create to the first prompt",
    // a benchmark must not drop its slow runs: an HVM disk boot took 53-173 s to the
    // prompt on a busy machine (`bench fs`), so it gets as long as bench-fs-hvm
    boot_timeout_s: 600,
    end_timeout_s: 30,
    budget_s: 720,
    ..boot::HVM_DISK
};

/// Xenlet PVH: the `pvh` configuration.
pub const BENCH_BOOT_PVH: Scenario = Scenario {
    name: "bench-boot-pvh",
    about: "bench boot: Xenlet PVH (pvh's config), xl create to the first prompt",
    end_timeout_s: 30,
    ..boot::PVH
};

/// The Linux PVHVM domU of `linux-hvm` (256 MiB), to its init's shell.
pub const BENCH_BOOT_LINUX: Scenario = Scenario {
    name: "bench-boot-linux",
    about: "bench boot: the Linux PVHVM domU (linux-hvm's config), xl create to its init's shell",
    steps: &[last("poweroff -f")],
    budget_s: 420,
    ..boot::LINUX_HVM
};

/// The check of a memory probe, Xenlet: 8 MiB written to xvdb with a flush, three
/// pings to dom0 on xenbr0 (eth0's address from the command line).
const MEM_XENLET_STEPS: &[Step] = &[
    cmd(
        "dd if=/dev/zero of=/dev/xvdb bs=16k count=512 conv=fsync",
        &[r"^512\+0 records out"],
        120,
    ),
    cmd(
        "ping -c 3 -i 0.2 10.99.0.1",
        &[r"^3 packets transmitted, [1-3] received"],
        60,
    ),
    last("poweroff"),
];

/// The same check in the Linux domU (busybox dd and ping).
const MEM_LINUX_STEPS: &[Step] = &[
    cmd(
        "dd if=/dev/zero of=/dev/xvdb bs=16k count=512 conv=fsync",
        &[r"^512\+0 records out"],
        240,
    ),
    LINUX_PING,
    last("poweroff -f"),
];

/// What every memory probe of Xenlet shares but its name and config.
pub const MEM_PROBE_XENLET: Scenario = Scenario {
    disks: &[DATA_LOOP],
    boot_timeout_s: 60,
    steps: MEM_XENLET_STEPS,
    budget_s: 150,
    ..XENLET_PVH
};

/// A memory probe of Xenlet (in the registry's `EXTRA`): the `pvh` configuration with
/// `memory = $mem` and a vif on xenbr0 (10.99.0.2/24 from the command line).
macro_rules! mem_probe_xenlet {
    ($mem:literal) => {
        $crate::testbed::scenarios::Scenario {
            name: concat!("bench-mem-xenlet-", $mem),
            about: concat!(
                "bench boot: Xenlet PVH with memory = ",
                $mem,
                ": boots, dd to xvdb, ping dom0"
            ),
            config: xl_config!(pvh {
                memory: $mem,
                kernel: "@FILES@/xenlet.elf",
                cmdline: "xenlet.eth0=10.99.0.2/24",
                disk: ["phy:@DATA@,xvdb,w"],
                vif: ["bridge=xenbr0,mac=00:16:3e:58:00:02"],
            }),
            ..$crate::testbed::scenarios::bench::MEM_PROBE_XENLET
        }
    };
}
pub(crate) use mem_probe_xenlet;

/// What every memory probe of the Linux domU shares but its name and config.
pub const MEM_PROBE_LINUX: Scenario = Scenario {
    boot_timeout_s: 240,
    steps: MEM_LINUX_STEPS,
    budget_s: 480,
    ..boot::LINUX_HVM
};

/// A memory probe of the Linux PVHVM domU (in the registry's `EXTRA`): `linux-hvm`'s
/// config with `memory = $mem`.
macro_rules! mem_probe_linux {
    ($mem:literal) => {
        $crate::testbed::scenarios::Scenario {
            name: concat!("bench-mem-linux-", $mem),
            about: concat!(
                "bench boot: the Linux PVHVM domU with memory = ",
                $mem,
                ": boots, dd to xvdb, ping dom0"
            ),
            config: linux_hvm_probe_config!($mem),
            ..$crate::testbed::scenarios::bench::MEM_PROBE_LINUX
        }
    };
}
pub(crate) use mem_probe_linux;

/// The `memory=` sizes (MiB) `bench boot` tries, smallest first; each has its probe
/// scenario `bench-mem-xenlet-N` / `bench-mem-linux-N` in [`EXTRA`](super::EXTRA). Seen on the bed:
/// Xenlet PVH at 2 and 3 MiB is refused by `xl create` (the domain cannot be built),
/// at 4 MiB it boots but netfront finds no memory for its TX buffers, at 6 and 8 MiB
/// none for its RX buffers; 16 MiB passed.
pub const MEM_PROBES_XENLET: &[u32] = &[2, 3, 4, 6, 8, 12, 16, 24];
/// Seen on the bed: Linux at 48 and 64 MiB triple-faulted early in its boot (at
/// 0x100145, 1.5-3.5 min after unpause), 96 and 128 MiB passed; smaller sizes are
/// not tried.
pub const MEM_PROBES_LINUX: &[u32] = &[48, 64, 96, 128];

/// A memory probe fails by design below the smallest size that works: a scenario
/// of this name failing, even before any sign of life, is a result and not the
/// nested-SVM flake (no whole-session retry for it).
pub fn is_probe(name: &str) -> bool {
    name.starts_with("bench-mem-")
}

// ---------------------------------------------------------------- bench dd, bench net

/// `cargo xtask bench dd`'s Linux row.
pub const BENCH_LINUX: Scenario = Scenario {
    name: "bench-linux",
    about: "bench: dom0's dd to the loop device, then the Linux PVHVM domU's dd to xvdb (phy:)",
    boot_expect: &[],
    steps: &[
        dom0_cap(
            "dd if=/dev/zero of=$DATA bs=16k count=512 conv=fsync 2>&1",
            &[r"^512\+0 records out"],
            &[("DOM0", DD_SUMMARY)],
            120,
        ),
        // Debian's busybox dd prints no summary line: timed with /proc/uptime
        // (10 ms steps), printed as dd would
        cmd_cap(
            concat!(
                "a=$(cut -d' ' -f1 /proc/uptime); ",
                "dd if=/dev/zero of=/dev/xvdb bs=16k count=512 conv=fsync && ",
                "b=$(cut -d' ' -f1 /proc/uptime) && ",
                "echo \"8388608 bytes copied, $(echo $a $b | awk '{printf \"%.2f\", $2 - $1}') s ",
                "(busybox dd, timed by /proc/uptime)\""
            ),
            &[r"^512\+0 records out"],
            &[("LINUX", DD_SUMMARY)],
            240,
        ),
        last("poweroff -f"),
    ],
    budget_s: 600,
    ..boot::LINUX_HVM
};

/// `cargo xtask bench dd`'s Xenlet row: blk-phy's domain.
pub const BENCH_XENLET: Scenario = Scenario {
    name: "bench-xenlet",
    about: "bench: Xenlet's dd to xvdb (phy:), HVM disk image",
    steps: &[
        cmd_cap(
            "dd if=/dev/zero of=/dev/xvdb bs=16k count=512 conv=fsync",
            &[r"^512\+0 records out"],
            &[("XENLET", DD_SUMMARY)],
            240,
        ),
        last("poweroff"),
    ],
    ..blk::BLK_PHY
};

/// dom0's `iperf3 -c` against the guest at `$addr` to it and back (`-R`), as `RX` and
/// `TX` (see [`iperf3_step`]).
macro_rules! iperf3_both_ways {
    ($addr:literal) => {
        [
            iperf3_step!($addr, "", "RX"),
            iperf3_step!($addr, " -R", "TX"),
            dom0_profile!($addr, "", "RX"),
            dom0_profile!($addr, " -R", "TX"),
            vif_count!($addr, "", "RX"),
            vif_count!($addr, " -R", "TX"),
        ]
    };
}

/// What crosses the guest's vif over a further 4 s `iperf3 -c` against it
/// (`net/vifcount.sh`: dom0's counters of vif$DOMID.0), as `VIF_${var}`: the mean
/// size of what the sender's netfront (or netback) puts on the ring, and how many
/// packets go the other way per MB.
macro_rules! vif_count {
    ($addr:literal, $flags:literal, $var:literal) => {
        dom0_cap(
            concat!("$NET/vifcount.sh ", $addr, $flags),
            &[r"^vif: from guest "],
            &[(concat!("VIF_", $var), r"^vif: (.*)$")],
            60,
        )
    };
}

/// dom0's profile (`net/dom0prof.sh`: perf by command, by symbol, and including
/// callees) over a further 4 s `iperf3 -c` against the guest at `$addr`, as
/// `PROF_${var}_COMM`, `_SYM` and `_INCL`: where dom0's CPU goes per direction.
macro_rules! dom0_profile {
    ($addr:literal, $flags:literal, $var:literal) => {
        dom0_cap(
            concat!("$NET/dom0prof.sh iperf3 -c ", $addr, " -t 4", $flags),
            &[r"^perf incl: "],
            &[
                (concat!("PROF_", $var, "_COMM"), r"^perf comm: (.*)$"),
                (concat!("PROF_", $var, "_SYM"), r"^perf sym: (.*)$"),
                (concat!("PROF_", $var, "_INCL"), r"^perf incl: (.*)$"),
            ],
            90,
        )
    };
}

pub const BENCH_NET_LINUX: Scenario = Scenario {
    name: "bench-net-linux",
    about: "bench net: iperf3 from dom0 to the Linux PVHVM domU (iperf3 -s) and back (-R)",
    config: linux_hvm_config!(256, "@LINUX_INITRD_IPERF3@" {
        disk: ["phy:@DATA@,xvdb,w"],
        vif: ["bridge=xenbr0,type=vif"],
    }),
    disks: &[DATA_LOOP],
    boot_expect: &[],
    steps: steps![
        cmd(
            "ip link set eth0 up && ip addr add 10.99.0.3/24 dev eth0 && /usr/bin/iperf3 -s -D && sleep 1 && echo iperf3-ready",
            &[r"^iperf3-ready$"],
            60,
        ),
        ..&iperf3_both_ways!("10.99.0.3"),
        last("poweroff -f"),
    ],
    budget_s: 600,
    ..LINUX_DOMU
};

pub const BENCH_NET_XENLET: Scenario = Scenario {
    name: "bench-net-xenlet",
    about: "bench net: iperf3 from dom0 to Xenlet (PVH, iperf3 -s) and back (-R)",
    config: net::XENLET_NET_CONFIG,
    steps: steps![
        net::IPERF3_SERVER,
        ..&iperf3_both_ways!("10.99.0.2"),
        // netfront's counters over the whole run, in the log
        cmd("ethtool -S eth0", &[r"^     tx_slots: [1-9]"], 30),
        // the reflector (issue 34): the vif's own cost, no stack in the way
        cmd("reflect eth0 on", &[r"^eth0: reflect on, "], 30),
        dom0_cap(
            "$NET/reflect.sh 10.99.0.2",
            &[r"^knee: flow \d+ pps", r"^unlimited: flow "],
            &[
                ("REFLECT_KNEE", r"^knee: flow (\d+ pps .*)$"),
                (
                    "REFLECT_UNLIMITED",
                    r"^unlimited: flow (offered \d+ pps, forwarded \d+ pps)$"
                ),
            ],
            240,
        ),
        cmd(
            "reflect eth0 off",
            &[r"^eth0: reflect off, [1-9]\d* frames reflected"],
            30
        ),
        last("poweroff"),
    ],
    end_timeout_s: 60,
    budget_s: 900,
    ..XENLET_PVH
};

pub const BENCH_NET_XENLET_HVM: Scenario = Scenario {
    name: "bench-net-xenlet-hvm",
    about: "bench net: iperf3 from dom0 to Xenlet booted as HVM from its disk image (iperf3 -s) and back (-R)",
    config: xl_config!(builder_hvm {
        memory: 64,
        disk: ["@DISK@,raw,xvda,w"],
        vif: ["bridge=xenbr0,mac=00:16:3e:58:00:02"],
    }),
    disks: &[IMAGE_COPY],
    steps: steps![
        cmd("ip addr add 10.99.0.2/24 dev eth0", &[], 30),
        net::IPERF3_SERVER,
        ..&iperf3_both_ways!("10.99.0.2"),
        last("poweroff"),
    ],
    end_timeout_s: 60,
    ..XENLET_HVM_IMAGE
};

#[cfg(test)]
mod boot_tests {
    use super::super::find;
    use super::*;

    #[test]
    fn memory_probes_differ_only_in_memory() {
        assert_eq!(LINUX_HVM_CONFIG, find("linux-hvm").unwrap().config);
        assert!(LINUX_HVM_CONFIG.contains("\nmemory  = 256\n"));
        for (sizes, prefix, base) in [
            (MEM_PROBES_XENLET, "bench-mem-xenlet-", None),
            (MEM_PROBES_LINUX, "bench-mem-linux-", Some(LINUX_HVM_CONFIG)),
        ] {
            assert!(sizes.windows(2).all(|w| w[0] < w[1]), "smallest first");
            for m in sizes {
                let s = find(&format!("{prefix}{m}")).unwrap();
                assert!(is_probe(s.name));
                assert!(
                    s.config.contains(&format!("\nmemory  = {m}\n")),
                    "{}",
                    s.name
                );
                if let Some(base) = base {
                    assert_eq!(s.config, base.replace("= 256\n", &format!("= {m}\n")));
                }
                assert!(s.steps.iter().any(|st| st.send.contains("dd if=/dev/zero")));
                assert!(s.steps.iter().any(|st| st.send.contains("ping -c 3")));
            }
        }
        assert!(!is_probe("bench-boot-pvh"));
    }
}

#[cfg(test)]
mod fs_tests {
    use super::super::find;

    #[test]
    fn bench_fs_linux_runs() {
        let s = find("bench-fs-linux").unwrap();
        let caps: Vec<&str> = s
            .steps
            .iter()
            .flat_map(|st| st.capture.iter().map(|c| c.0))
            .collect();
        for n in 1..=3 {
            for v in ["DD_S_", "SYNC_S_", "DOM0_CPU_", "GUEST_CPU_", "FSCK_"] {
                assert!(caps.contains(&format!("{v}{n}").as_str()), "{v}{n}");
            }
        }
        // mkfs, mount, the CPU mark, then the timed dd + sync
        let dd = s.steps[3].send;
        assert!(dd.contains(
            r#"awk '{printf "timed by /proc/uptime: dd %.2f s, sync %.2f s\n", $2 - $1, $3 - $2}'"#
        ));
        assert!(dd.contains("dd bs=16k count=${COUNT} if=/dev/zero of=/mnt/test; "));
        assert!(find("bench-fs-linux-ide")
            .unwrap()
            .config
            .contains("xen_platform_pci = 0"));
    }
}

/// `bench router`'s Xenlet router with one queue a vif (`xenlet.netqueues=1`), as a
/// Linux netfront on one vCPU asks for: the A/B of the queue count.
pub const BENCH_ROUTER_XENLET_Q1: Scenario = Scenario {
    name: "bench-router-xenlet-q1",
    config: xl_config!(pvh {
        memory: 32,
        kernel: "@FILES@/xenlet.elf",
        cmdline: "xenlet.netqueues=1",
        disk: ["@DISK@,raw,xvda,w"],
        vif: ["bridge=brlan,mac=00:16:3e:01:00:02", "bridge=brwan,mac=00:16:3e:77:00:02"],
    } on_reboot: "preserve"),
    ..BENCH_ROUTER_XENLET
};

#[cfg(test)]
mod router_tests {
    use super::super::find;
    use super::*;

    /// The captures of `bench router`'s IPv4 measurements (`bench_router.rs` reads them).
    const V4: &[&str] = &[
        "MEM_MIB",
        "PING_MS",
        "TCP_UP_1",
        "TCP_UP_4",
        "TCP_DOWN_1",
        "TCP_DOWN_4",
        "UDP_64",
        "CONNS",
        "CPU_UP",
        "CPU_DOWN",
        "KNEE_FLOW",
        "KNEE_FLOWS",
    ];

    /// Every bench router scenario measures IPv6 both ways with iperf3 `-6` from lan1,
    /// and only after every IPv4 measurement (a failed IPv6 step cannot cost an IPv4
    /// figure); the IPv4 traffic is the same steps for the routers and the ceiling.
    #[test]
    fn ipv6_rows_come_after_every_ipv4_measurement() {
        for name in [
            "bench-router-linux-1",
            "bench-router-xenlet-1",
            "bench-router-ceiling-1",
        ] {
            let s = find(name).unwrap();
            let at = |var: &str| {
                s.steps
                    .iter()
                    .position(|st| st.capture.iter().any(|c| c.0 == var))
                    .unwrap_or_else(|| panic!("{name}: no capture {var}"))
            };
            let first6 = s
                .steps
                .iter()
                .position(|st| {
                    ["ifstatus wan6", "/etc/router-up6", "router.sh dom0router6"]
                        .iter()
                        .any(|m| st.send.contains(m))
                })
                .unwrap_or_else(|| panic!("{name}: no IPv6 step"));
            for v in V4
                .iter()
                .filter(|v| !(name.contains("ceiling") && **v == "MEM_MIB"))
            {
                assert!(at(v) < first6, "{name}: {v} after the IPv6 steps");
            }
            for (v, reverse) in [("TCP6_UP_1", false), ("TCP6_DOWN_1", true)] {
                let st = &s.steps[at(v)];
                assert_eq!(st.netns, "lan1", "{name}: {v}");
                assert!(
                    st.send.starts_with("iperf3 -6 -c 2001:db8:77::10 -t 3 "),
                    "{name}: {v}"
                );
                assert_eq!(st.send.contains(" -R "), reverse, "{name}: {v}");
                assert!(at(v) > first6, "{name}: {v}");
            }
            let last = s.steps.last().unwrap();
            assert!(last.ends && last.send.starts_with("poweroff"), "{name}");
            // the IPv4 traffic is BENCH_ROUTER_TRAFFIC's, unchanged, in one piece
            let sends: Vec<&str> = s.steps.iter().map(|st| st.send).collect();
            let traffic: Vec<&str> = BENCH_ROUTER_TRAFFIC.iter().map(|st| st.send).collect();
            assert!(
                sends
                    .windows(traffic.len())
                    .any(|w| w == traffic.as_slice()),
                "{name}"
            );
        }
    }
}
