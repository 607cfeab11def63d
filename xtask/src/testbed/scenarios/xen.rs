//! The Xen platform layer on real Xen: version, the one-shot timer, XenStore both
//! ways (a guest write read in dom0, a dom0 write firing a guest watch, a listing
//! longer than one message), the PV devices, a DHCP lease and pings both ways on the
//! vif; over the HVM disk-image boot and over PVH. The guest is then ended from dom0.

use super::builders::*;
use super::model::{End, Scenario, Step};

pub const XEN_HVM: Scenario = Scenario {
    name: "xen-hvm",
    about: "Xen platform layer, HVM disk image: version, XenStore both ways, a watch, devices; xl shutdown -w",
    // the hvm-disk configuration plus a vif on xenbr1 (DHCP from dom0's dnsmasq)
    config: hvm_disk_config!(32, vif: ["bridge=xenbr1"]),
    boot_expect: XEN_HVM_BOOT,
    steps: XEN_HVM_STEPS,
    end: End::XlShutdown,
    end_timeout_s: 10,
    budget_s: 238,
    ..XENLET_HVM_IMAGE
};

pub const SUSPEND_HVM: Scenario = Scenario {
    name: "suspend-hvm",
    about: "xl save -c, xl save + xl restore and xl migrate of Xenlet booted HVM from its disk image (QEMU's device model saved too): the serial shell, the root filesystem, the data disk and the vif go on",
    steps: SUSPEND_HVM_STEPS,
    ..XEN_HVM
};

pub const XEN_PVH: Scenario = Scenario {
    name: "xen-pvh",
    about: "Xen platform layer, PVH (memory map from XENMEM_memory_map): version, XenStore both ways, a watch, devices; xl reboot",
    // `xenlet.memmap=xen`: the kernel ignores the start info's memory map and takes
    // Xen's (`XENMEM_memory_map`), the path a start info without a map (version 0)
    // takes; `xenlet.upcall=percpu`: the per-vCPU upcall vector instead of the default
    // callback vector. A vif on xenbr1, configured by DHCP.
    config: xl_config!(pvh {
        memory: 32,
        kernel: "@FILES@/xenlet.elf",
        extra: "xenlet.memmap=xen xenlet.upcall=percpu",
        disk: ["phy:@DATA@,xvdb,w"],
        vif: ["bridge=xenbr1"],
    }),
    disks: &[DATA_LOOP],
    boot_expect: XEN_PVH_BOOT,
    steps: XEN_PVH_STEPS,
    end: End::XlReboot,
    end_timeout_s: 10,
    ..XENLET_PVH
};

const XEN_HVM_BOOT: &[&str] = &[
    // The image check at boot (`mm::image`): the kernel GRUB loaded from the disk
    // image digests as `cargo xtask build` stamped it. (Under PVH the console ring
    // attaches after this line, so only the serial console of HVM shows it.)
    r"^image: code and constants intact \(\d+ KiB\)$",
    r"^xen: Xen 4\.17.*, upcall vector 0xf3, ",
    r"^boot time: .* xen .* xenstore .* devices",
    r"^unplug: emulated IDE disks and NICs unplugged",
    // The image's ext4 root partition, mounted read-write through blkfront.
    r"^root: /dev/xvda1 ext4, read-write$",
];
const XEN_PVH_BOOT: &[&str] = &[
    r"^xen: Xen 4\.17.*, upcall per-vCPU vector 0xf3, ",
    r"^root: tmpfs \(no root disk\)$",
    // booted with xenlet.memmap=xen: the frame allocator runs on Xen's map
    r"^memory: map from XENMEM_memory_map",
    r"^boot time: .* xen .* xenstore .* devices",
    r"^unplug: no emulated devices",
];

/// The checks both boot paths make: version, timer, memory map, XenStore, devices.
const XEN_LAYER_STEPS: &[Step] = &[
    cmd(
        "xen",
        &[
            r"^version: Xen 4\.17",
            // the callback vector by default; xen-pvh asks for the per-vCPU vector
            // (HVMOP_set_evtchn_upcall_vector, in Xen since 4.6); each boot line is
            // checked in the scenario's boot_expect
            r"^upcall: (callback vector 0xf3 \(HVM_PARAM_CALLBACK_IRQ\)|per-vCPU vector 0xf3 \(HVMOP_set_evtchn_upcall_vector, x2APIC\))$",
            r"^timer: VIRQ_TIMER on event channel \d+, \d+ events$",
            r"^vcpu 0: running \d+\.\d{3} s, runnable \d+\.\d{3} s, blocked \d+\.\d{3} s",
            r"^xenstore: \d+ watch events merged or dropped \(at most 32 queued\)$",
        ],
        30,
    ),
    // The idle path halts on the one-shot timer: at least 1 s passes, the vCPU is
    // blocked in Xen (not running) for most of it, and VIRQ_TIMER fired.
    cmd(
        "sleep 1",
        &[
            r"^slept 1\.\d{3} s; vCPU 0 blocked (0\.[5-9]|1\.)\d+ s of it, [1-9]\d* VIRQ_TIMER events$",
        ],
        30,
    ),
    // Xen's E820 (XENMEM_memory_map): the map in use (xen-pvh boots with
    // xenlet.memmap=xen), or compared with the loader's
    cmd(
        "mem",
        &[concat!(
            r"^(memory map source: XENMEM_memory_map \([1-9]\d* entries\)",
            r"|XENMEM_memory_map: [1-9]\d* entries, [1-9]\d* KiB usable, (same as|differs from) the boot map)$"
        )],
        30,
    ),
    cmd("xenstore read name", &[r"^${NAME}$"], 30),
    cmd("xenstore write data/x 1", &[], 30),
    dom0("xenstore-read /local/domain/$DOMID/data/x", &[r"^1$"], 30),
    cmd("xenstore watch data/y", &[], 30),
    // the runner drains the console before a dom0 step, so the watch's first firing
    // (on registration) is not taken for the one this write causes
    dom0("xenstore-write /local/domain/$DOMID/data/y hello", &[], 30),
    wait_output(r"xenstore: watch data/y fired: data/y", 30),
    // A directory whose listing (300 names of 27 bytes, about 8 KiB) is longer than
    // one XenStore message: XS_DIRECTORY answers E2BIG and the guest pages it with
    // XS_DIRECTORY_PART; names from every part (about 150 a part) must show.
    dom0(
        "xenstore-write $(for i in $(seq -w 1 300); do echo /local/domain/$DOMID/data/big/entry-with-a-long-name-$i $i; done) && xenstore-list /local/domain/$DOMID/data/big | wc -l",
        &[r"^300$"],
        60,
    ),
    cmd(
        "xenstore ls data/big",
        &[
            r#"^entry-with-a-long-name-001 = "001"$"#,
            r#"^entry-with-a-long-name-025 = "025"$"#,
            r#"^entry-with-a-long-name-050 = "050"$"#,
            r#"^entry-with-a-long-name-075 = "075"$"#,
            r#"^entry-with-a-long-name-100 = "100"$"#,
            r#"^entry-with-a-long-name-125 = "125"$"#,
            r#"^entry-with-a-long-name-150 = "150"$"#,
            r#"^entry-with-a-long-name-151 = "151"$"#,
            r#"^entry-with-a-long-name-152 = "152"$"#,
            r#"^entry-with-a-long-name-175 = "175"$"#,
            r#"^entry-with-a-long-name-200 = "200"$"#,
            r#"^entry-with-a-long-name-225 = "225"$"#,
            r#"^entry-with-a-long-name-250 = "250"$"#,
            r#"^entry-with-a-long-name-275 = "275"$"#,
            r#"^entry-with-a-long-name-299 = "299"$"#,
            r#"^entry-with-a-long-name-300 = "300"$"#,
        ],
        120,
    ),
    // gone again, so the rest of the scenario meets the XenStore it always did
    dom0("xenstore-rm /local/domain/$DOMID/data/big", &[], 60),
    // the frontends' handshakes waited on XenStore watches of the backends' state
    cmd(
        "devices",
        &[
            r"xvdb",
            r"^handshake waits woken by a XenStore watch on the backend state: [1-9]\d*$",
        ],
        30,
    ),
    cmd("lsblk", &[r"xvdb"], 30),
];

/// PVH adds netfront (a DHCP lease, pings both ways), the triple-fault evidence reader
/// on a live domain and the image check's line in the kernel log.
const XEN_PVH_STEPS: &[Step] = steps![
    ..XEN_LAYER_STEPS,
    // netfront on this boot path too: a vif on xenbr1, configured by DHCP (the
    // default without a configuration), reaches dom0
    cmd_cap(
        "udhcpc -i eth0",
        &[r"^udhcpc: lease of 10\.98\.0\.\d+/24 obtained, router 10\.98\.0\.1$"],
        &[("LEASE", r"lease of (10\.98\.0\.\d+)/24")],
        60,
    ),
    cmd(
        "ping -c 2 -i 0.2 10.98.0.1",
        &[r"^2 packets transmitted, 2 received, 0% packet loss"],
        30,
    ),
    dom0(
        "busybox ping -c 2 -W 5 ${LEASE}",
        &[r"^2 packets transmitted, 2 packets received, 0% packet loss$"],
        60,
    ),
    // The triple-fault evidence reader (`pagewalk.py`, which judges a domain's
    // memory after a triple fault) on a live domain: its memory mapped from dom0,
    // the guest's page tables walked from the VMCB's CR3 to its RIP, where the
    // bytes must be the kernel image's, and the #PF and #DF gates found present.
    dom0(
        "python3 /payload/pagewalk.py live $NAME /payload/files/xenlet.elf",
        &[
            r"^pagewalk: RIP 0x[0-9a-f]+ -> 0x[0-9a-f]+: the kernel image's bytes$",
            r"^pagewalk: IDT gate 14 present: selector 0x8, ",
            r"^pagewalk: IDT gate 8 present: selector 0x8, IST [1-7], ",
            r"^pagewalk: verdict intact \(\d+ pages read\)$",
        ],
        120,
    ),
    // The image check at boot (`mm::image`) ran before the PV console was attached
    // (PVH has no serial port): its line is in the kernel log.
    cmd(
        "dmesg | grep image:",
        &[r"^\[\s*\d+\.\d{6}\] image: code and constants intact \(\d+ KiB\)$"],
        30,
    ),
];

/// The HVM disk-image boot adds its root filesystem: the image's ext4 partition at
/// `/` with OpenWrt's `/etc/config`, written through blkfront and read back.
const XEN_HVM_STEPS: &[Step] = steps![
    ..XEN_LAYER_STEPS,
    cmd(
        "mount",
        &[
            r"^/dev/xvda1 on / type ext4 \(rw\)$",
            r"^tmpfs on /tmp type tmpfs",
        ],
        30,
    ),
    cmd(
        "ls /etc/config",
        &[r"^dhcp$", r"^firewall$", r"^network$", r"^system$"],
        30,
    ),
    cmd("cat /etc/config/network | grep -c interface", &[r"^4$"], 30),
    cmd("cp /etc/config/system /etc/config/system.new", &[], 30),
    cmd(
        "echo \"option zonename 'UTC'\" >> /etc/config/system.new",
        &[],
        30,
    ),
    cmd("mv /etc/config/system.new /etc/config/system", &[], 30),
    cmd("sync", &[], 30),
    cmd(
        "cat /etc/config/system",
        &[r"^\toption hostname 'Xenlet'$", r"^option zonename 'UTC'$"],
        30,
    ),
    cmd(
        "ls -l /boot/xenlet.elf",
        &[r" \d{6,} \d{4}-\d\d-\d\d \d\d:\d\d /boot/xenlet\.elf$"],
        30,
    ),
];

/// What an HVM guest must still do after each move: its shell (on the new device
/// model's serial port), a file written to the root disk and read back, the data
/// disk, a ping to dom0 over the vif.
const AFTER_MOVE_HVM: &[Step] = &[
    cmd("sha256sum -n 1M /dev/xvdb", &[r"^${SUM}  /dev/xvdb$"], 60),
    cmd("cp /etc/config/system /etc/config/system.copy", &[], 60),
    cmd("sync", &[], 60),
    cmd(
        "sha256sum /etc/config/system.copy",
        &[r"^${SYS}  /etc/config/system\.copy$"],
        30,
    ),
    cmd(
        "ping -c 2 -i 0.2 10.98.0.1",
        &[r"^2 packets transmitted, 2 received, 0% packet loss"],
        60,
    ),
];

/// Save, restore, checkpoint and migrate an HVM Xenlet booted from its disk image:
/// the same as `suspend-router` does for PVH, over QEMU's device model (its state is
/// saved and restored with the domain; the emulated devices come back and are
/// unplugged again).
const SUSPEND_HVM_STEPS: &[Step] = steps![
    cmd(
        "udhcpc -i eth0",
        &[r"^udhcpc: lease of 10\.98\.0\.\d+/24 obtained"],
        60
    ),
    cmd(
        "dd if=/dev/urandom of=/dev/xvdb bs=64k count=16 conv=fsync",
        &[r"^16\+0 records out"],
        60
    ),
    cmd_cap(
        "sha256sum -n 1M /dev/xvdb",
        &[],
        &[("SUM", r"^([0-9a-f]{64})  /dev/xvdb$")],
        60
    ),
    cmd_cap(
        "sha256sum /etc/config/system",
        &[],
        &[("SYS", r"^([0-9a-f]{64})  /etc/config/system$")],
        30
    ),
    MOVE_CHECKPOINT,
    cmd(
        "xen",
        &[r"^suspend: 1 \(cancelled 1, resumed in a new domain 0; "],
        30
    ),
    ..AFTER_MOVE_HVM,
    MOVE_SAVE_RESTORE,
    reattach(60),
    cmd(
        "xen",
        &[r"^suspend: 2 \(cancelled 1, resumed in a new domain 1; "],
        30
    ),
    ..AFTER_MOVE_HVM,
    MOVE_MIGRATE,
    reattach(60),
    cmd(
        "xen",
        &[r"^suspend: 3 \(cancelled 1, resumed in a new domain 2; "],
        30
    ),
    ..AFTER_MOVE_HVM,
];
