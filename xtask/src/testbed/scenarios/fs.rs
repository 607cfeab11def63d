//! The filesystem on real Xen: ext4 made by dom0, written by Xenlet and checked by
//! dom0's e2fsck and debugfs; crash safety (a `dd` cut off by `xl destroy`, the
//! journal replayed by Xenlet or by e2fsck), and the configuration on the root disk
//! across crashes inside `uci commit`.

use super::builders::*;
use super::model::{Disk, End, Need, Scenario, Step};

pub const FS_PVH: Scenario = Scenario {
    name: "fs-pvh",
    about: "ext4 on real Xen: dom0 mkfs.ext4 -d, Xenlet mounts, reads, writes, copies, renames, deletes, unmounts; dom0 e2fsck -fn clean and debugfs reads Xenlet's bytes; time dd into a file",
    steps: FS_STEPS,
    ..XENLET_PVH_DATA
};

pub const FS_FAULT_PVH: Scenario = Scenario {
    name: "fs-fault-pvh",
    about: "a full disk and a failing disk on real Xen: dd to ENOSPC, deletes, writes again, e2fsck clean; then dom0 puts the disk behind dm-flakey failing every write in the middle of a cp -r: Xenlet says why, goes read-only, the shell answers; after poweroff e2fsck -fy repairs it and the file synced before the fault is intact",
    config: xl_config!(pvh { memory: 32, kernel: "@FILES@/xenlet.elf" } on_reboot: "preserve"),
    steps: FS_FAULT_STEPS,
    end: End::Gone,
    budget_s: 178,
    ..XENLET_PVH
};

pub const FS_CRASH_PVH: Scenario = Scenario {
    name: "fs-crash-pvh",
    about: "crash safety on real Xen: a synced file, xl destroy in the middle of a dd into another, Xenlet boots again and replays the journal; the synced file intact, the cut-off one absent or zeros; e2fsck -fn clean after poweroff",
    // 256 MiB: room for a `dd` into a file that runs long enough to be cut off
    disks: &[Disk {
        size_mb: 256,
        ..DATA_LOOP
    }],
    boot_expect: &[r"^blkfront: xvdb 256 MiB"],
    steps: FS_CRASH_STEPS,
    end: End::Gone,
    ..XENLET_PVH_DATA
};

pub const FS_CRASH_E2FSCK_PVH: Scenario = Scenario {
    name: "fs-crash-e2fsck-pvh",
    about: "crash safety on real Xen: as fs-crash-pvh, with dom0's e2fsck -fy replaying the journal before Xenlet boots again",
    steps: FS_CRASH_E2FSCK_STEPS,
    ..FS_CRASH_PVH
};

pub const CONFIG_CRASH_PVH: Scenario = Scenario {
    name: "config-crash-pvh",
    about: "the configuration on the root disk: a uci commit survives a reboot; crashes cut off commits at 4 points (a dm-delay disk, pause + destroy from dom0) and each boot finds the old or the new file, whole; e2fsck -fn clean; a damaged root still gives a shell",
    needs: &[Need::XenletElf, Need::XenletImage],
    config: XENLET_ROOT_PVH_CONFIG,
    disks: &[IMAGE_LOOP],
    boot_expect: &[r"^root: /dev/xvda1 ext4, read-write$"],
    steps: CONFIG_CRASH_STEPS,
    budget_s: 420,
    ..XENLET_PVH
};

/// The filesystem on real Xen: dom0 makes an ext4 disk with files in it (1 KiB blocks
/// at 64 MiB, as mkfs.ext4 chooses), Xenlet reads them, writes, copies, renames,
/// deletes, syncs and unmounts; dom0's e2fsck -fn is clean and debugfs reads back the
/// bytes Xenlet wrote. Then the report's experiment, small: mount, `time dd` into a
/// file.
const FS_STEPS: &[Step] = &[
    dom0_cap(
        concat!(
            "rm -rf /tmp/seed && mkdir -p /tmp/seed/etc/config && ",
            "printf \"config interface 'lan'\\n\\toption proto 'static'\\n\" > /tmp/seed/etc/config/network && ",
            "head -c 3000000 /dev/urandom > /tmp/seed/blob && sha256sum /tmp/seed/blob && ",
            "mkfs.ext4 -q -F -d /tmp/seed $DATA && blockdev --flushbufs $DATA && ",
            "dumpe2fs -h $DATA 2>/dev/null | grep -E '^(Block size|Filesystem features)'"
        ),
        &[r"^Block size:\s+1024$", r"metadata_csum"],
        &[("BLOB", r"^([0-9a-f]{64})  /tmp/seed/blob$")],
        60,
    ),
    cmd("mount /dev/xvdb /mnt", &[], 60),
    cmd("mount", &[r"^/dev/xvdb on /mnt type ext4 \(rw\)$"], 30),
    cmd("sha256sum /mnt/blob", &[r"^${BLOB}  /mnt/blob$"], 60),
    cmd("cat /mnt/etc/config/network", &[r"^config interface 'lan'$", r"^\toption proto 'static'$"], 30),
    cmd(
        "dd if=/dev/urandom of=/mnt/data bs=16k count=1024",
        &[r"^1024\+0 records out", r"^16777216 bytes \(17 MB, 16 MiB\) copied"],
        120,
    ),
    cmd_cap("sha256sum /mnt/data", &[], &[("DSUM", r"^([0-9a-f]{64})  /mnt/data$")], 60),
    cmd("cp /mnt/data /mnt/copy", &[], 120),
    cmd("mv /mnt/copy /mnt/etc/moved", &[], 30),
    cmd("mkdir -p /mnt/a/b/c", &[], 30),
    cmd("echo hello from xenlet > /mnt/a/b/c/f", &[], 30),
    cmd("rm /mnt/blob", &[], 60),
    cmd("ls /mnt", &[r"^a$", r"^data$", r"^etc$", r"^lost\+found$"], 30),
    cmd("sync", &[], 60),
    cmd("df -h", &[r"^/dev/xvdb\s+\S+\s+\S+\s+\S+\s+\d+% /mnt$"], 30),
    cmd("umount /mnt", &[], 60),
    cmd("mount", &[r"^rootfs on / type tmpfs"], 30),
    dom0(
        "echo 3 > /proc/sys/vm/drop_caches; blockdev --flushbufs $DATA; e2fsck -fn $DATA; echo \"e2fsck exit $?\"",
        &[r"^e2fsck exit 0$"],
        60,
    ),
    dom0("debugfs -R 'cat /etc/moved' $DATA 2>/dev/null | sha256sum", &[r"^${DSUM}  -$"], 60),
    dom0("debugfs -R 'cat /a/b/c/f' $DATA 2>/dev/null", &[r"^hello from xenlet$"], 30),
    dom0("debugfs -R 'ls -l /' $DATA 2>/dev/null; debugfs -R 'stat /blob' $DATA 2>&1 | tail -1", &[r"File not found by ext2_lookup"], 30),
    // dom0's own kernel mounts what Xenlet wrote (read-only, no journal replay: the
    // domain still has the disk) and reads the same bytes
    dom0(
        concat!(
            "mkdir -p /tmp/xm && mount -t ext4 -o ro,noload $DATA /tmp/xm && ",
            "{ sha256sum /tmp/xm/etc/moved; cat /tmp/xm/a/b/c/f; ls /tmp/xm; umount /tmp/xm; }"
        ),
        &[r"^${DSUM}  /tmp/xm/etc/moved$", r"^hello from xenlet$", r"^data$"],
        60,
    ),
    // The report's experiment, scaled to the 64 MiB disk (room made first).
    cmd("mount /dev/xvdb /mnt", &[], 60),
    cmd("rm /mnt/data /mnt/etc/moved", &[], 60),
    cmd("df", &[r"^/dev/xvdb\s+\d+\s+\d+\s+\d+\s+\d+% /mnt$"], 30),
    cmd(
        "time dd bs=16k count=2048 if=/dev/zero of=/mnt/test",
        &[r"^2048\+0 records out", r"^real\t\d+m\d+\.\d{3}s$"],
        120,
    ),
    cmd("sync", &[], 60),
    cmd("ls -l /mnt/test", &[r" 33554432 .* /mnt/test$"], 30),
    cmd("dmesg | grep xvdb", &[r"^\[\s*\d+\.\d{6}\] "], 30),
    last("poweroff"),
];

/// The output line of a guest command cut off by `xl destroy` (see
/// [`Kind::UntilGone`](super::model::Kind::UntilGone)).
const GONE_DESTROYED: &str = r"^\(domain gone [\d.]+s after the command: destroyed\)$";

/// `poweroff` as a step after which dom0 steps still follow (see [`End::Gone`]).
const POWEROFF_UNTIL_GONE: Step = until_gone(
    "poweroff",
    &[r"^\(domain gone [\d.]+s after the command: shut down, reason code 0 \(poweroff\)\)$"],
    60,
);

// ---------------------------------------------------------------- crash safety
//
// The crash-safety issue's "Proof on real Xen": dom0 makes an ext4 disk (256 MiB,
// 1 KiB blocks); Xenlet writes a file, `sync`s it and notes its SHA-256, then a long
// `dd` of zeros into another file is cut off by `xl destroy`, and the domain is booted
// again on the same disk, twice: first a plain `dd bs=16k` (the issue's), then one
// with `oflag=dsync` (a jbd2 transaction per 64 KiB written, so the destroy lands
// among commits and the file has a committed prefix). After each crash dom0 shows the
// disk needs recovery and counts the commit blocks in its log; then either Xenlet
// replays the journal at mount (`fs-crash-pvh`) or dom0's `e2fsck -fy` does
// (`fs-crash-e2fsck-pvh`). After each boot the synced file has its SHA-256 and the
// cut-off file is absent or a prefix of what dd wrote (zeros only, `hexdump -C`).
// After `poweroff`, dom0's `e2fsck -fn` is clean and dom0 reads both files itself.

/// dom0 arms an `xl destroy` in the background that fires once blkback has seen
/// `$sectors` more sectors written (its `wr_sect` counter: in the middle of the dd
/// however fast the bed is that day). The job is a statement of its own with its
/// output redirected: the runner reads a step's output to its end, so a job holding
/// the pipe would hold the step.
macro_rules! arm_destroy {
    ($sectors:literal) => {
        dom0_cap(
            concat!(
                "v=/sys/bus/xen-backend/devices/vbd-$DOMID-51728/statistics/wr_sect; ",
                "base=$(cat $v) || exit 1; echo \"armed at wr_sect $base\"; ",
                "(for i in $(seq 1500); do w=$(cat $v 2>/dev/null) || exit 0; ",
                "[ $((w - base)) -ge ",
                $sectors,
                " ] && break; sleep 0.1; done; ",
                "xl destroy $NAME; rc=$?; ",
                "echo \"xl destroy rc=$rc at $(( (w - base) / 2048 )) MiB written\") ",
                ">/tmp/crash-destroy.log 2>&1 </dev/null &"
            ),
            &[],
            &[("WR_BASE", r"^armed at wr_sect (\d+)$")],
            30,
        )
    };
}

/// After the destroy: what the watcher did, the disk marked needs_recovery, the
/// commit blocks in the log (`$n`: the round, for the variable names).
macro_rules! after_destroy {
    ($n:literal) => {
        dom0_cap(
            concat!(
                "for i in $(seq 50); do grep -q rc= /tmp/crash-destroy.log && break; sleep 0.2; done; ",
                "cat /tmp/crash-destroy.log; ",
                "echo 3 > /proc/sys/vm/drop_caches; blockdev --flushbufs $DATA; ",
                "dumpe2fs -h $DATA 2>/dev/null | grep -E '^(Filesystem features|Filesystem state|Journal sequence|Journal start)'; ",
                "echo \"journal: $(debugfs -R logdump $DATA 2>/dev/null | grep -c 'commit block') commit blocks in the log\""
            ),
            &[r"^xl destroy rc=0 at \d+ MiB written$", r"^Filesystem features:.* needs_recovery"],
            &[
                (concat!("CUT_MIB_", $n), r"^xl destroy rc=0 at (\d+) MiB written$"),
                (concat!("LOG_COMMITS_", $n), r"^journal: (\d+) commit blocks in the log$"),
            ],
            60,
        )
    };
}

/// `hexdump -C /mnt/FILE` of a file of zeros (the zero row, `*` when there are more,
/// the size in hex), or of an empty or missing one: the whole output (`\A...\Z`).
macro_rules! zeros_or_none {
    ($f:literal) => {
        cmd(
            concat!("hexdump -C /mnt/", $f),
            &[concat!(
                r"\A(?:00000000  (?:00 ){8} (?:00 ){8} \|\.{16}\|\n(?:\*\n)?[0-9a-f]{8}\n",
                r"|hexdump: /mnt/",
                $f,
                r": No such file or directory\n)?\s*\Z"
            )],
            150,
        )
    };
}

/// dom0's own read of a cut-off file after poweroff: absent, or no longer than the
/// `$max` bytes dd would have written and zeros only (`cmp` with /dev/zero ends on
/// the file's EOF at its size).
macro_rules! zeros_in_dom0 {
    ($f:literal, $var:literal, $max:literal) => {
        dom0_cap(
            concat!(
                "s=$(debugfs -R 'stat /", $f, "' $DATA 2>/dev/null | sed -n 's/^.*Size: \\([0-9]*\\).*$/\\1/p' | head -1); ",
                "if [ -z \"$s\" ]; then echo '", $f, ": absent'; exit 0; fi; ",
                "c=$(debugfs -R 'cat /", $f, "' $DATA 2>/dev/null | cmp - /dev/zero 2>&1); echo \"$c\"; ",
                "case \"$c\" in \"cmp: EOF on - after byte $s,\"*|'cmp: EOF on - which is empty') ;; *) exit 1;; esac; ",
                "echo \"", $f, ": $s bytes, all zero (dd would have written ", $max, ")\"; [ \"$s\" -le ", $max, " ]"
            ),
            &[concat!("^", $f, r": (absent|\d+ bytes, all zero)")],
            &[($var, concat!("^", $f, r": (absent|\d+)"))],
            120,
        )
    };
}

// The configuration on the root disk (`config-crash-pvh`): Xenlet boots PVH with its
// disk image as xvda (`phy:` on a loop device) and mounts partition 1 read-write at /.
// A `uci commit` survives a reboot; then the image is put behind a dm-delay device
// (every write held 400 ms) so that a crash can land inside a commit, and dom0
// pauses and destroys the domain once blkback has seen a given share of the sectors
// a whole commit writes (measured first). After each crash Xenlet boots again:
// /etc/config/network is the old file or the new one (SHA-256), never a mix or
// empty. Last, dom0's `e2fsck -fn` is clean, and a root whose superblock dom0 has
// damaged still gives a shell, with the reason on the console.

/// A PVH domain whose root disk is its disk image.
const XENLET_ROOT_PVH_CONFIG: &str = xl_config!(pvh {
    memory: 32,
    kernel: "@FILES@/xenlet.elf",
    disk: ["phy:@DISK@,xvda,w"],
});

/// The disk image on a loop device (dom0's blkback, whose counters time the crash).
const IMAGE_LOOP: Disk = Disk {
    var: "DISK",
    size_mb: 0,
    source: Some(Need::XenletImage),
    loop_dev: true,
};

/// blkback's count of sectors written to the domain's xvda (device 51712).
macro_rules! wr_sect_xvda {
    () => {
        "/sys/bus/xen-backend/devices/vbd-$DOMID-51712/statistics/wr_sect"
    };
}

/// One crash round: the file is set back to the old one, a commit to the new address
/// is staged, dom0 arms a pause + destroy at `$num`/5 of the commit's sectors (at
/// least 1), the commit is cut off, Xenlet boots again and the file is whole.
macro_rules! config_crash_round {
    ($num:literal, $var:literal) => {
        [
            cmd("cp /etc/network.old /etc/config/network", &[], 60),
            cmd("sync", &[], 60),
            cmd("sha256sum /etc/config/network", &[r"^${OLD}  /etc/config/network$"], 60),
            cmd("uci set network.lan.ipaddr=10.9.9.1", &[], 30),
            dom0_cap(
                concat!(
                    "v=", wr_sect_xvda!(), "; read base < $v || exit 1; ",
                    "k=$(( COMMIT_SECTORS * ", $num, " / 5 )); [ $k -ge 1 ] || k=1; ",
                    "echo \"armed at wr_sect $base, crash after $k of $COMMIT_SECTORS sectors\"; ",
                    "(SECONDS=0; while read w < $v; do [ $((w - base)) -ge $k ] && break; ",
                    "[ $SECONDS -ge 60 ] && break; sleep 0.02; done; ",
                    "xl pause $NAME; read p < $v; xl destroy $NAME; rc=$?; ",
                    "echo \"xl destroy rc=$rc, $((p - base)) of $COMMIT_SECTORS sectors written at the pause\") ",
                    ">/tmp/config-crash.log 2>&1 </dev/null &"
                ),
                &[r"^armed at wr_sect \d+, crash after \d+ of \d+ sectors$"],
                &[],
                30,
            ),
            until_gone(
                "uci commit network",
                &[GONE_DESTROYED],
                120,
            ),
            dom0_cap(
                "for i in $(seq 50); do grep -q rc= /tmp/config-crash.log && break; sleep 0.2; done; cat /tmp/config-crash.log",
                &[r"^xl destroy rc=0, \d+ of \d+ sectors written at the pause$"],
                &[(concat!("CUT_", $var), r"^xl destroy rc=0, (\d+) of \d+ sectors")],
                30,
            ),
            restart(120, &[r"^root: /dev/xvda1 ext4, read-write"]),
            cmd_cap(
                "sha256sum /etc/config/network",
                &[r"^(${OLD}|${NEW})  /etc/config/network$"],
                &[($var, r"^([0-9a-f]{64})  /etc/config/network$")],
                60,
            ),
            // the file parses, and uci reads the address of the version it holds
            cmd("uci get network.lan.ipaddr", &[r"^(192\.168\.1\.1|10\.9\.9\.1)$"], 30),
            cmd("ls -a /etc/config", &[r"\A(?:(?:\.|\.\.|dhcp|firewall|network|system)\n)+\s*\Z"], 30),
        ]
    };
}

const CONFIG_CRASH_STEPS: &[Step] = steps![
    cmd_cap(
        "sha256sum /etc/config/network",
        &[],
        &[("OLD", r"^([0-9a-f]{64})  /etc/config/network$")],
        60,
    ),
    cmd("uci get network.lan.ipaddr", &[r"^192\.168\.1\.1$"], 30),
    cmd("cp /etc/config/network /etc/network.old", &[], 60),
    // a change committed and a reboot: the new file is what boots
    cmd("uci set network.lan.ipaddr=10.9.9.1", &[], 30),
    dom0_cap(
        concat!("read w < ", wr_sect_xvda!(), " && echo \"wr_sect $w\""),
        &[],
        &[("WR0", r"^wr_sect (\d+)$")],
        30,
    ),
    cmd("uci commit network", &[], 60),
    dom0_cap(
        concat!(
            "read w < ", wr_sect_xvda!(), " && echo \"the commit wrote $((w - WR0)) sectors\"; ",
            "[ $((w - WR0)) -ge 2 ]"
        ),
        &[],
        &[("COMMIT_SECTORS", r"^the commit wrote (\d+) sectors$")],
        30,
    ),
    cmd_cap(
        "sha256sum /etc/config/network",
        &[],
        &[("NEW", r"^([0-9a-f]{64})  /etc/config/network$")],
        60,
    ),
    until_gone(
        "reboot",
        &[r"^\(domain gone [\d.]+s after the command: shut down, reason code 1 \(reboot\)\)$"],
        60,
    ),
    restart(120, &[r"^root: /dev/xvda1 ext4, read-write$"]),
    cmd("uci get network.lan.ipaddr", &[r"^10\.9\.9\.1$"], 30),
    cmd("sha256sum /etc/config/network", &[r"^${NEW}  /etc/config/network$"], 60),
    // the disk behind dm-delay (writes held 400 ms, reads not), from the next boot
    POWEROFF_UNTIL_GONE,
    dom0(
        concat!(
            "modprobe dm-delay && s=$(blockdev --getsz $DISK) && ",
            "dmsetup create --noudevsync $NAME-slow --table \"0 $s delay $DISK 0 0 $DISK 0 400\" && dmsetup mknodes $NAME-slow && [ -b /dev/mapper/$NAME-slow ] && ",
            "sed -i \"s|phy:$DISK,|phy:/dev/mapper/$NAME-slow,|\" $CFG && grep -n '^disk' $CFG"
        ),
        &[r"phy:/dev/mapper/\S+-slow,xvda,w"],
        60,
    ),
    restart(120, &[r"^root: /dev/xvda1 ext4, read-write$"]),
    ..&config_crash_round!("0", "AFTER_0"),
    ..&config_crash_round!("1", "AFTER_1"),
    ..&config_crash_round!("2", "AFTER_2"),
    ..&config_crash_round!("3", "AFTER_3"),
    POWEROFF_UNTIL_GONE,
    dom0(
        concat!(
            "dmsetup remove --noudevsync $NAME-slow && sed -i \"s|phy:/dev/mapper/$NAME-slow,|phy:$DISK,|\" $CFG && ",
            "blockdev --flushbufs $DISK && p=$(losetup -o 1048576 -f --show $DISK) && ",
            "{ e2fsck -fn $p; echo \"e2fsck exit $?\"; ",
            "debugfs -R 'cat /etc/config/network' $p 2>/dev/null | sha256sum; losetup -d $p; }"
        ),
        &[r"^e2fsck exit 0$", r"^(${OLD}|${NEW})  -$"],
        90,
    ),
    // a damaged root: the ext4 magic at partition offset 1024 + 0x38 zeroed
    dom0(
        "printf '\\0\\0' | dd of=$DISK bs=1 seek=$((1048576 + 1024 + 56)) conv=notrunc status=none && blockdev --flushbufs $DISK && echo damaged",
        &[r"^damaged$"],
        30,
    ),
    restart(120, &[r"^root: tmpfs \(/dev/xvda1: .+\)$"]),
    cmd("mount", &[r"^rootfs on / type tmpfs"], 30),
    cmd("uci get network.lan.ipaddr", &[r"(?i)not found|no such|entry"], 30),
    last("poweroff"),
];

/// A crash: dom0 arms the destroy at `$sectors` more sectors written, the guest's
/// `$dd` is cut off by it, then dom0 looks at the disk (`$n`: the round).
macro_rules! crash_during {
    ($sectors:literal, $dd:literal, $n:literal) => {
        [
            arm_destroy!($sectors),
            until_gone($dd, &[GONE_DESTROYED], 150),
            after_destroy!($n),
        ]
    };
}

/// After a boot: the file synced before the crashes is whole.
const SYNCED_INTACT: &[Step] = &[
    cmd("sha256sum /mnt/synced", &[r"^${SYNCED}  /mnt/synced$"], 60),
    cmd("ls -l /mnt", &[r" synced$"], 30),
];

/// The whole script; `$boot1` and `$boot2` boot the domain again after the first and
/// the second crash and mount the disk (with or without dom0's `e2fsck -fy` first).
macro_rules! fs_crash_steps {
    ($boot1:expr, $boot2:expr) => {
        steps![
            dom0(
                concat!(
                    "mkfs.ext4 -q -F $DATA && blockdev --flushbufs $DATA && ",
                    "dumpe2fs -h $DATA 2>/dev/null | grep -E '^(Block size|Filesystem features)'"
                ),
                &[r"^Block size:\s+1024$", r"has_journal", r"metadata_csum"],
                60,
            ),
            cmd("mount /dev/xvdb /mnt", &[], 60),
            cmd("dd if=/dev/urandom of=/mnt/synced bs=16k count=256", &[r"^256\+0 records out"], 60),
            cmd("sync", &[], 60),
            cmd_cap("sha256sum /mnt/synced", &[], &[("SYNCED", r"^([0-9a-f]{64})  /mnt/synced$")], 60),
            // crash 1: a plain dd of 200 MiB, destroyed after 32 MiB
            ..&crash_during!(65536, "dd if=/dev/zero of=/mnt/zero bs=16k count=12800", 1),
            ..$boot1,
            ..SYNCED_INTACT,
            zeros_or_none!("zero"),
            // crash 2: 200 MiB with a commit per 64 KiB, destroyed after 8 MiB
            ..&crash_during!(16384, "dd if=/dev/zero of=/mnt/zero2 bs=64k count=3200 oflag=dsync", 2),
            ..$boot2,
            ..SYNCED_INTACT,
            zeros_or_none!("zero"),
            zeros_or_none!("zero2"),
            POWEROFF_UNTIL_GONE,
            dom0(
                "echo 3 > /proc/sys/vm/drop_caches; blockdev --flushbufs $DATA; e2fsck -fn $DATA; echo \"e2fsck exit $?\"",
                &[r"^e2fsck exit 0$"],
                90,
            ),
            dom0("debugfs -R 'cat /synced' $DATA 2>/dev/null | sha256sum", &[r"^${SYNCED}  -$"], 60),
            zeros_in_dom0!("zero", "ZERO", 209715200),
            zeros_in_dom0!("zero2", "ZERO2", 209715200),
        ]
    };
}

/// Xenlet boots again and replays the journal at mount (`$n`: the round).
macro_rules! xenlet_replays {
    ($n:literal) => {
        [
            restart(120, &[r"^blkfront: xvdb 256 MiB"]),
            cmd_cap(
                "mount /dev/xvdb /mnt",
                &[r"^ext4: journal replayed at mount: "],
                &[(
                    concat!("REPLAY_", $n),
                    r"^ext4: journal replayed at mount: (.*)$",
                )],
                90,
            ),
        ]
    };
}

/// dom0's `e2fsck -fy` replays the journal (and checks everything), then Xenlet
/// boots again and mounts.
const E2FSCK_BOOT: &[Step] = &[
    dom0(
        "e2fsck -fy $DATA; rc=$?; echo \"e2fsck exit $rc\"; blockdev --flushbufs $DATA; [ $rc -le 1 ]",
        &[r"recovering journal", r"^e2fsck exit [01]$"],
        120,
    ),
    restart(120, &[r"^blkfront: xvdb 256 MiB"]),
    cmd("mount /dev/xvdb /mnt", &[], 90),
];

const FS_CRASH_STEPS: &[Step] = fs_crash_steps!(&xenlet_replays!(1), &xenlet_replays!(2));

const FS_CRASH_E2FSCK_STEPS: &[Step] = fs_crash_steps!(E2FSCK_BOOT, E2FSCK_BOOT);

/// The filesystem when the disk fails it (issue: failure is a first-class path).
/// dom0 makes an ext4 image with a tree of 300 files (`/src`, 32 KiB each), puts it
/// behind a device-mapper device (linear at first) and attaches that to the running
/// Xenlet as xvdb (so its table can be swapped under blkback later).
/// 1. A full disk never wedges the mount: `dd` until ENOSPC, the file deleted, 8 MiB
///    written again, `sync` and `umount` succeed, dom0's e2fsck -fn is clean.
/// 2. A file written and synced, then dom0 swaps the table for dm-flakey failing
///    every write (`error_writes`; reads still work): a `cp -r` of the tree and a
///    `sync` end in errors, Xenlet prints why the filesystem went read-only, later
///    writes are refused (EROFS), reads go on, the shell answers.
/// 3. After poweroff, dom0's e2fsck -fy repairs what the aborted transaction left,
///    a second e2fsck -fn is clean, and the synced file reads back whole.
const FS_FAULT_STEPS: &[Step] = &[
    dom0_cap(
        concat!(
            "set -e; f=/var/tmp/$NAME-fault.img; r=/var/tmp/$NAME-root; rm -rf $f $r; ",
            "mkdir -p $r/src; for i in $(seq 1 300); do head -c 32768 /dev/urandom >$r/src/f$i; done; ",
            "truncate -s 64M $f; mkfs.ext4 -q -F -d $r $f; rm -rf $r; l=$(losetup -f --show $f); ",
            "dmsetup create --noudevsync $NAME-f --table \"0 $(blockdev --getsz $l) linear $l 0\"; ",
            "dmsetup mknodes $NAME-f; xl block-attach $NAME phy:/dev/mapper/$NAME-f,xvdb,w; echo \"backing $l\""
        ),
        &[r"^backing /dev/loop\d+$"],
        &[("LOOP", r"^backing (/dev/loop\d+)$")],
        120,
    ),
    wait_output(r"blkfront: xvdb 64 MiB.* attached", 60),
    cmd("mount /dev/xvdb /mnt", &[], 60),
    // 1. the full disk
    cmd("dd if=/dev/zero of=/mnt/fill bs=1M count=100", &[r"No space left on device"], 120),
    cmd("rm /mnt/fill", &[], 60),
    cmd("dd if=/dev/zero of=/mnt/again bs=1M count=8", &[r"^8\+0 records out"], 120),
    cmd("sync", &[], 60),
    cmd("umount /mnt", &[], 60),
    dom0("e2fsck -fn /dev/mapper/$NAME-f; echo \"e2fsck exit $?\"", &[r"^e2fsck exit 0$"], 120),
    cmd("mount /dev/xvdb /mnt", &[], 60),
    // 2. a synced file, then every write fails
    cmd("dd if=/dev/urandom of=/mnt/synced bs=64k count=16", &[r"^16\+0 records out"], 60),
    cmd("sync", &[], 60),
    cmd_cap("sha256sum /mnt/synced", &[], &[("SUM", r"^([0-9a-f]{64})  /mnt/synced$")], 60),
    dom0(
        concat!(
            "modprobe dm-flakey && s=$(blockdev --getsz ${LOOP}) && ",
            "dmsetup load --noudevsync $NAME-f --table \"0 $s flakey ${LOOP} 0 0 3600 1 error_writes\" && ",
            "dmsetup suspend --noudevsync $NAME-f && dmsetup resume --noudevsync $NAME-f && dmsetup table $NAME-f"
        ),
        &[r" flakey \d+:\d+ 0 0 3600 1 error_writes"],
        60,
    ),
    cmd("cp -r /mnt/src /mnt/dst", &[], 120),
    // the metadata commit (the cp's own, when its cache fills, or this sync's) finds
    // the journal's writes failing: the transaction is aborted, the filesystem
    // read-only; the data writes lost are a writeback error (the new blocks stay
    // unwritten, as Linux reports it); a second sync is refused
    cmd("sync", &[r"(Input/output error|Read-only file system)"], 120),
    cmd("sync", &[r"Read-only file system"], 120),
    cmd("touch /mnt/after", &[r"Read-only file system"], 30),
    // why, said once from the shell loop after the command that aborted (the cp or
    // the first sync), in the kernel's log
    cmd(
        "dmesg | grep 'vfs: /mnt'",
        &[r"vfs: /mnt \(/dev/xvdb\): .*read-only"],
        30,
    ),
    cmd("sha256sum /mnt/synced", &[r"^${SUM}  /mnt/synced$"], 60),
    cmd("ls /mnt/src", &[r"f300"], 30),
    cmd("version", &[r"^Xenlet "], 30),
    // 3. dom0 repairs, the synced file is whole
    POWEROFF_UNTIL_GONE,
    dom0(
        concat!(
            "dmsetup remove --noudevsync $NAME-f; e2fsck -fy ${LOOP} >/dev/null 2>&1; echo \"repair exit $?\"; ",
            "e2fsck -fn ${LOOP}; echo \"check exit $?\"; debugfs -R 'cat /synced' ${LOOP} 2>/dev/null | sha256sum; ",
            "losetup -d ${LOOP}; rm -f /var/tmp/$NAME-fault.img"
        ),
        &[r"^repair exit [0-2]$", r"^check exit 0$", r"^${SUM}  -$"],
        120,
    ),
];

#[cfg(test)]
mod tests {
    use super::super::{find, to_json};
    use super::*;
    use crate::testbed::scenarios::model::Kind;

    fn kinds(s: &Scenario) -> Vec<Kind> {
        s.steps.iter().map(|st| st.kind).collect()
    }

    #[test]
    fn crash_scenarios_destroy_mid_dd_and_boot_again() {
        for name in ["fs-crash-pvh", "fs-crash-e2fsck-pvh"] {
            let s = find(name).unwrap();
            assert_eq!(s.end, End::Gone);
            assert!(s.budget_s < 180, "{name}");
            // 200 MiB fit on the 256 MiB disk beside the 4 MiB synced file
            assert_eq!(s.disks[0].size_mb, 256);
            let k = kinds(s);
            let gone: Vec<usize> = (0..k.len()).filter(|&i| k[i] == Kind::UntilGone).collect();
            assert_eq!(gone.len(), 3, "{name}: two crashes and the poweroff");
            for (&cut, dd) in gone.iter().zip([
                "of=/mnt/zero bs=16k count=12800",
                "of=/mnt/zero2 bs=64k count=3200 oflag=dsync",
            ]) {
                // the destroy is armed in the background by the dom0 step right before
                // the dd it cuts off, and the domain is booted again after it
                let arm = &s.steps[cut - 1];
                assert_eq!(arm.kind, Kind::Dom0);
                assert!(arm.send.contains("xl destroy $NAME"));
                assert!(arm.send.ends_with(" &"), "{name}: in the background");
                assert!(s.steps[cut].send.contains(dd), "{name}");
                assert!(s.steps[cut].expect[0].contains(": destroyed"));
                assert!(k[cut..].contains(&Kind::Restart));
            }
            // the synced file's SHA-256 from before the crashes is checked after each
            // boot, and from dom0 after the poweroff
            let sum = s
                .steps
                .iter()
                .position(|st| st.capture.iter().any(|c| c.0 == "SYNCED"));
            assert!(sum.unwrap() < gone[0]);
            let checks = s.steps[gone[0]..]
                .iter()
                .filter(|st| st.expect.iter().any(|e| e.contains("${SYNCED}")))
                .count();
            assert_eq!(checks, 3, "{name}");
            // powered off last, then e2fsck -fn on the disk
            let off = gone[2];
            assert_eq!(s.steps[off].send, "poweroff");
            assert!(s.steps[off + 1].send.contains("e2fsck -fn $DATA"));
            assert_eq!(s.steps[off + 1].expect, &[r"^e2fsck exit 0$"]);
        }
        // e2fsck -fy replays before each boot; Xenlet's mounts say what they replayed
        let e = find("fs-crash-e2fsck-pvh").unwrap();
        let fy: Vec<usize> = (0..e.steps.len())
            .filter(|&i| e.steps[i].send.contains("e2fsck -fy"))
            .collect();
        assert_eq!(fy.len(), 2);
        assert!(fy.iter().all(|&i| e.steps[i + 1].kind == Kind::Restart));
        let x = find("fs-crash-pvh").unwrap();
        let replays = x
            .steps
            .iter()
            .filter(|st| st.capture.iter().any(|c| c.0.starts_with("REPLAY_")))
            .count();
        assert_eq!(replays, 2);
        let j = to_json(&[x]);
        assert!(j.contains(r#""kind": "until-gone""#));
        assert!(
            j.contains(r#""kind": "restart", "send": "", "expect": ["^blkfront: xvdb 256 MiB"]"#)
        );
        assert!(j.contains(r#""end": "gone""#));
        let hex = x.steps.iter().find(|st| st.send == "hexdump -C /mnt/zero2");
        assert!(
            hex.unwrap().expect[0].starts_with(r"\A"),
            "whole-output match"
        );
        assert!(hex.unwrap().expect[0].contains("|hexdump: /mnt/zero2: No such file"));
    }
}
