//! Block devices on real Xen: blkfront's data path on kernel blkback (`phy:`) and on
//! QEMU's qdisk, verified from dom0; disks attached and detached at run time, and a
//! mounted disk replaced at its vdev.

use super::builders::*;
use super::model::{Scenario, Step};

pub const BLK_PHY: Scenario = Scenario {
    name: "blk-phy",
    about:
        "blkfront on kernel blkback (phy: loop device): dd, sha256 vs dom0, sync -> f_req, ENOSPC",
    config: XENLET_HVM_PHY_CONFIG,
    disks: &[IMAGE_COPY, DATA_LOOP],
    steps: BLK_PHY_STEPS,
    ..XENLET_HVM_IMAGE
};

pub const BLK_PVH: Scenario = Scenario {
    name: "blk-pvh",
    about: "as blk-phy with Xenlet as a PVH guest (no firmware, no GRUB): shell on the PV console",
    boot_expect: &[r"^clock: \d{3,} MHz", r"^blkfront: xvdb 64 MiB"],
    steps: BLK_PHY_STEPS,
    ..XENLET_PVH_DATA
};

pub const BLK_QDISK: Scenario = Scenario {
    name: "blk-qdisk",
    about: "blkfront on QEMU's qdisk (raw file): dd, sha256 vs dom0, read back",
    config: XENLET_HVM_DISK_CONFIG,
    steps: steps![..BLK_DATA_STEPS, last("poweroff")],
    ..XENLET_HVM_IMAGE
};

pub const BLK_HOTPLUG: Scenario = Scenario {
    name: "blk-hotplug",
    about: "disks at run time, PVH: xl block-detach during a dd ends it with an I/O error and the disk goes; xl block-attach gives a working disk",
    steps: BLK_HOTPLUG_STEPS,
    ..XENLET_PVH_DATA
};

pub const BLK_REPLACE: Scenario = Scenario {
    name: "blk-replace",
    about: "a mounted disk detached and another attached at its vdev, PVH: the old mount fails (disk gone), the new disk is untouched until mounted; then copied disk to disk onto blkback",
    steps: BLK_REPLACE_STEPS,
    ..XENLET_PVH_DATA
};

/// The blkfront data path: 8 MiB of random data written with a flush, hashed in the
/// guest and in dom0 from the backing store, read back.
pub(super) const BLK_DATA_STEPS: &[Step] = &[
    cmd("lsblk", &[r"^xvdb\s+64\s.*\sok\s*$"], 30),
    cmd_cap(
        "dd if=/dev/urandom of=/dev/xvdb bs=16k count=512 conv=fsync",
        &[
            r"^512\+0 records out",
            r"^8388608 bytes \(8\.4 MB, 8\.0 MiB\) copied",
        ],
        &[("DD_WRITE", DD_SUMMARY)],
        120,
    ),
    cmd_cap(
        "sha256sum -n 8M /dev/xvdb",
        &[],
        &[("SUM", r"^([0-9a-f]{64})  /dev/xvdb$")],
        90,
    ),
    dom0("head -c 8388608 $DATA | sha256sum", &[r"^${SUM}  -$"], 60),
    cmd(
        "dd if=/dev/xvdb of=/dev/null bs=1M count=8",
        &[
            r"^8\+0 records in",
            r"^8\+0 records out",
            r"^8388608 bytes \(8\.4 MB, 8\.0 MiB\) copied",
        ],
        90,
    ),
];

/// On kernel blkback: a `sync` of the disk reaches blkback as a flush (its `f_req`
/// counter), a `dd` past the disk's end stops at ENOSPC, and the grant table grew.
const BLK_PHY_STEPS: &[Step] = steps![
    ..BLK_DATA_STEPS,
    dom0_cap(
        "cat /sys/bus/xen-backend/devices/vbd-$DOMID-51728/statistics/f_req",
        &[],
        &[("FLUSHES", r"^(\d+)$")],
        30,
    ),
    cmd("sync /dev/xvdb", &[], 30),
    dom0(
        concat!(
            "n=$(cat /sys/bus/xen-backend/devices/vbd-$DOMID-51728/statistics/f_req); ",
            "echo \"blkback f_req: ${FLUSHES} -> $n\"; test \"$n\" -gt \"${FLUSHES}\""
        ),
        &[r"^blkback f_req: \d+ -> \d+$"],
        30,
    ),
    cmd(
        "dd if=/dev/zero of=/dev/xvdb bs=1M count=80",
        &[r"No space left on device", r"^64\+0 records out"],
        150,
    ),
    // blkfront's persistent-grant pool grew with the 1 MiB requests past the 512
    // entries of the first grant frame: the table was grown on demand
    cmd(
        "xen",
        &[r"^grant table: v1, ([2-9]|[1-9]\d+) of \d+ frames mapped, \d+ refs in use of \d+$"],
        30,
    ),
    last("poweroff"),
];

/// Disks attached and detached at run time (issue 11 item 6): `xl block-detach`
/// during a long `dd` ends the dd with an I/O error within seconds and the disk goes;
/// `xl block-attach` of a new disk gives a working disk, its data checked from dom0,
/// and that disk detached while idle goes as well.
const BLK_HOTPLUG_STEPS: &[Step] = &[
    cmd("lsblk", &[r"^xvdb\s+64\s.*\sok\s*$"], 30),
    dom0(
        "(sleep 5; xl block-detach $NAME xvdb; echo \"detach rc=$?\") > /tmp/detach.log 2>&1 &",
        &[],
        30,
    ),
    // oflag=dsync: a flush after every 4 KiB, so this takes far longer than 5 s.
    cmd(
        "dd if=/dev/zero of=/dev/xvdb bs=4k count=16384 oflag=dsync",
        &[r"^dd: error writing '/dev/xvdb': Input/output error \(the disk is being detached\)$", r"^\d+\+0 records out"],
        120,
    ),
    dom0(
        "for i in $(seq 30); do grep -q rc= /tmp/detach.log && break; sleep 1; done; cat /tmp/detach.log",
        &[r"^detach rc=0$"],
        60,
    ),
    // After the backend closed, it unmapped everything: all pages freed, none kept.
    cmd("dmesg | grep detached", &[r"blkfront: xvdb detached \([1-9]\d* pages freed\)$"], 30),
    cmd("lsblk", &[r"^no disks"], 30),
    dom0(
        concat!(
            "truncate -s 32M /tmp/hot.img && lo=$(losetup -f --show /tmp/hot.img) && ",
            "xl block-attach $NAME phy:$lo,xvdc,w && echo attached $lo"
        ),
        &[r"^attached /dev/loop\d+$"],
        60,
    ),
    cmd("sleep 3", &[], 30),
    cmd("dmesg | grep attached", &[r"blkfront: xvdc 32 MiB, .* attached$"], 30),
    cmd(
        "dd if=/dev/urandom of=/dev/xvdc bs=16k count=64 conv=fsync",
        &[r"^64\+0 records out"],
        60,
    ),
    cmd_cap(
        "sha256sum -n 1M /dev/xvdc",
        &[],
        &[("HOTSUM", r"^([0-9a-f]{64})  /dev/xvdc$")],
        60,
    ),
    dom0(
        "head -c 1048576 $(losetup -j /tmp/hot.img | cut -d: -f1) | sha256sum",
        &[r"^${HOTSUM}  -$"],
        60,
    ),
    // an idle disk detached: the frontend answers the backend's Closing, libxl's
    // detach succeeds and the disk is dropped
    dom0("xl block-detach $NAME xvdc; echo \"idle detach rc=$?\"", &[r"^idle detach rc=0$"], 60),
    cmd("dmesg | grep 'xvdc detached'", &[r"blkfront: xvdc detached \(\d+ pages freed\)$"], 30),
    cmd("lsblk", &[r"^no disks"], 30),
    last("poweroff"),
];

/// A mounted disk detached, another attached at the same vdev: the old mount holds
/// the old disk instance (its I/O fails, its dirty metadata never reaches the new
/// disk), the new disk is untouched until it is mounted itself.
const BLK_REPLACE_STEPS: &[Step] = &[
    dom0(
        "mkfs.ext4 -q -F $DATA && blockdev --flushbufs $DATA && echo formatted",
        &[r"^formatted$"],
        60,
    ),
    cmd("mount /dev/xvdb /mnt", &[], 60),
    cmd("echo synced > /mnt/f", &[], 30),
    cmd("sync", &[], 60),
    // dirty in the mount's cache only
    cmd("mkdir /mnt/d", &[], 30),
    cmd("echo dirty > /mnt/d/g", &[], 30),
    dom0("xl block-detach $NAME xvdb; echo \"detach rc=$?\"", &[r"^detach rc=0$"], 60),
    cmd("sleep 2", &[], 30),
    cmd("dmesg | grep 'xvdb detached'", &[r"blkfront: xvdb detached"], 30),
    dom0_cap(
        concat!(
            "truncate -s 32M /tmp/new.img && mkfs.ext4 -q -F /tmp/new.img && sha256sum /tmp/new.img && ",
            "lo=$(losetup -f --show /tmp/new.img) && xl block-attach $NAME phy:$lo,xvdb,w && echo attached $lo"
        ),
        &[r"^attached /dev/loop\d+$"],
        &[("NEWSUM", r"^([0-9a-f]{64})  /tmp/new\.img$")],
        60,
    ),
    cmd("sleep 3", &[], 30),
    cmd("lsblk", &[r"^xvdb\s+32\s"], 30),
    // the old mount's write-back fails: its disk is gone, not the new one
    cmd("sync", &[r"disk gone"], 60),
    dom0(
        "sha256sum $(losetup -j /tmp/new.img | cut -d: -f1)",
        &[r"^${NEWSUM}  /dev/loop\d+$"],
        60,
    ),
    cmd("umount /mnt", &[], 60),
    cmd("dmesg | grep 'the disk is gone'", &[r"vfs: /mnt: the disk is gone; unmounted without writing back"], 30),
    cmd("mount /dev/xvdb /mnt", &[], 60),
    cmd("ls /mnt", &[r"\A\s*lost\+found\s*\Z"], 30),
    cmd("umount /mnt", &[], 60),
    dom0(
        "e2fsck -fn $(losetup -j /tmp/new.img | cut -d: -f1) >/tmp/fsck.log 2>&1; echo \"e2fsck rc=$?\"; tail -2 /tmp/fsck.log",
        &[r"^e2fsck rc=0$"],
        60,
    ),
    // disk to disk onto blkback, whose persistent grants are mapped read-write:
    // the source disk's buffers go through the target's own pages
    dom0(
        concat!(
            "truncate -s 32M /tmp/copy.img && lo=$(losetup -f --show /tmp/copy.img) && ",
            "xl block-attach $NAME phy:$lo,xvdc,w && echo attached $lo"
        ),
        &[r"^attached /dev/loop\d+$"],
        60,
    ),
    cmd("sleep 3", &[], 30),
    cmd("lsblk", &[r"^xvdc\s+32\s.*\syes\s"], 30),
    cmd("dd if=/dev/xvdb of=/dev/xvdc bs=1M count=32 conv=fsync", &[r"^32\+0 records out"], 120),
    dom0(
        concat!(
            // direct reads: dom0's page cache of the loop device can hold what it
            // read before the guest wrote
            "a=$(dd if=$(losetup -j /tmp/new.img | cut -d: -f1) bs=1M iflag=direct status=none | sha256sum | cut -c1-64); ",
            "b=$(dd if=$(losetup -j /tmp/copy.img | cut -d: -f1) bs=1M iflag=direct status=none | sha256sum | cut -c1-64); ",
            "[ \"$a\" = \"$b\" ] && echo \"copy identical $b\""
        ),
        &[r"^copy identical [0-9a-f]{64}$"],
        60,
    ),
    last("poweroff"),
];
