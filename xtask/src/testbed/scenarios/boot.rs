//! Booting: Debian's Linux as a domU, Xenlet over each boot path (HVM `kernel=`, its
//! disk image, PVH), the fault paths (a panic, a triple fault), the flake's probes,
//! and the demo.

use super::builders::*;
use super::model::{Console, Disk, End, Need, Scenario, Step};

/// Xenlet as a PVH guest with no disk and no vif.
const XENLET_PVH_BARE_CONFIG: &str = xl_config!(pvh {
    memory: 32,
    kernel: "@FILES@/xenlet.elf",
});

pub const LINUX_HVM: Scenario = Scenario {
    name: "linux-hvm",
    about: "Debian's Linux as a PVHVM domU (busybox initramfs): blkfront, netfront, ping",
    config: LINUX_HVM_CONFIG,
    disks: &[DATA_LOOP, DATA2],
    steps: LINUX_STEPS,
    budget_s: 540,
    ..LINUX_DOMU
};

pub const LINUX_PVH: Scenario = Scenario {
    name: "linux-pvh",
    about: "Debian's Linux as a PVH domU on the PV console (checks the PV console path)",
    config: xl_config!(pvh {
        memory: 256,
        kernel: "@LINUX@",
        ramdisk: "@LINUX_INITRD@",
        extra: "console=hvc0 loglevel=4",
        disk: ["phy:@DATA@,xvdb,w"],
        vif: ["bridge=xenbr0"],
    }),
    disks: &[DATA_LOOP],
    console: Console::Pv,
    ..LINUX_HVM
};

pub const HVM_KERNEL: Scenario = Scenario {
    name: "hvm-kernel",
    about: "Xenlet ELF as an HVM guest (kernel=, loaded by QEMU through its PVH note), COM1 shell",
    needs: &[Need::XenletElf32],
    config: r#"name    = "@NAME@"
type    = "hvm"
memory  = 32
vcpus   = 1
# xenlet.elf behind an ELF32 header: the device model, qemu-system-i386, loads only
# ELF32 kernels (same segments and PVH note; see xtask/src/testbed/elf32.rs)
kernel  = "@FILES@/xenlet32.elf"
# libxl starts QEMU with -machine xenfv, an alias of xenfv-3.1, which has QEMU's PVH
# loader off (3.1 compatibility); the last -machine wins
device_model_args_hvm = [ "-machine", "xenfv-4.2" ]
disk    = [ "@DISK@,raw,xvda,w", "@DATA@,raw,xvdb,w" ]
serial  = "pty"
vga     = "none"
vnc     = 0
on_poweroff = "destroy"
on_reboot   = "destroy"
on_crash    = "preserve"
"#,
    disks: &[
        Disk {
            var: "DISK",
            size_mb: 16,
            source: None,
            loop_dev: false,
        },
        DATA_FILE,
    ],
    boot_timeout_s: 120,
    steps: XENLET_STEPS,
    end_timeout_s: 60,
    budget_s: 170,
    ..XENLET_HVM_IMAGE
};

pub const HVM_DISK: Scenario = Scenario {
    name: "hvm-disk",
    about: "Xenlet disk image (cargo xtask image) booted by SeaBIOS as HVM, 32 MiB, COM1 shell",
    config: XENLET_HVM_DISK_CONFIG,
    steps: XENLET_STEPS,
    end_timeout_s: 60,
    budget_s: 175,
    ..XENLET_HVM_IMAGE
};

pub const HVM_DISK_1G: Scenario = Scenario {
    name: "hvm-disk-1g",
    about: "as hvm-disk with memory = 1024",
    config: hvm_disk_config!(1024),
    ..HVM_DISK
};

pub const CRASH_PVH: Scenario = Scenario {
    name: "crash-pvh",
    about: "fault path, PVH: a panic while a console write holds the console locks still reaches SHUTDOWN_crash",
    config: XENLET_PVH_BARE_CONFIG,
    // the report reaches the PV console (the only one under PVH) although the
    // panic interrupted a write holding its lock: the fault path's own handle
    steps: &[
        cmd("version", &[r"^Xenlet "], 30),
        last_expect("crash console", &[r"^\*\*\* XENLET PANIC at "]),
    ],
    end: End::Crash,
    end_timeout_s: 20,
    budget_s: 170,
    ..XENLET_PVH
};

/// The flake's probe (issue 19): it strikes at VM exits, so this makes many of the
/// two kinds it was seen at, CPUID intercepts and wake-ups from `hlt` with an upcall
/// injected; `testbed soak exits-pvh` counts how often a run dies.
pub const EXITS_PVH: Scenario = Scenario {
    name: "exits-pvh",
    about:
        "VM exits in bulk, PVH: intercepted CPUIDs and timer wake-ups from hlt (the flake probe)",
    config: XENLET_PVH_BARE_CONFIG,
    boot_timeout_s: 60,
    steps: EXITS_STEPS,
    end_timeout_s: 20,
    budget_s: 175,
    ..XENLET_PVH
};

/// `exits-pvh`'s script.
const EXITS_STEPS: &[Step] = &[
    cmd(
        "exits cpuid 500000",
        &[r"^500000 cpuid exits in \d+\.\d{3} s, \d+ ns each$"],
        80,
    ),
    cmd(
        "exits sleep 50000",
        &[r"^50000 sleep exits in \d+\.\d{3} s, \d+ ns each$"],
        50,
    ),
    last("poweroff"),
];

/// The same with dom0 busy on its vCPUs meanwhile (reading a file through its page
/// cache and listing XenStore in loops, in the background for 110 s), as in the flood
/// and router scenarios where the flake struck: do the exits fail more often when the
/// outer QEMU's other vCPU thread runs Xen and dom0 at the same time?
pub const EXITS_LOAD_PVH: Scenario = Scenario {
    name: "exits-load-pvh",
    about: "exits-pvh with dom0 busy meanwhile (the flake probe under load)",
    steps: steps![
        dom0(
            "(timeout 110 sh -c 'while :; do cat /payload/files/xenlet.elf /payload/run.py > /dev/null; done' > /dev/null 2>&1 &); \
             (timeout 110 sh -c 'while :; do xenstore-ls > /dev/null; done' > /dev/null 2>&1 &); echo dom0 busy",
            &[r"^dom0 busy$"],
            30,
        ),
        ..EXITS_STEPS,
    ],
    ..EXITS_PVH
};

/// The host watchdog's evidence for a hang (issue 19): dom0's runner stops itself
/// (SIGSTOP), so nothing more comes out; the host must give up on the scenario's
/// step, type Xen's debug keys and find Xen answering. The session fails by design;
/// run by name only.
pub const HANG_PROBE: Scenario = Scenario {
    name: "hang-probe",
    about: "dom0's runner stops itself: the host watchdog's debug-key dump (the session fails by design)",
    steps: &[dom0("kill -STOP $PPID; echo runner stopped", &[], 10)],
    end: End::XlShutdown,
    end_timeout_s: 10,
    budget_s: 90,
    ..EXITS_PVH
};

/// The negative control for the flake's evidence (issue 19): a triple fault that is
/// the guest's own (an empty IDT, then a #PF) must be judged so.
pub const TRIPLE_PVH: Scenario = Scenario {
    name: "triple-pvh",
    about: "a deliberate triple fault, PVH: Xen reports it and pagewalk blames the guest's IDT",
    config: xl_config!(pvh {
        memory: 32,
        kernel: "@FILES@/xenlet.elf",
    } on_reboot: "preserve"),
    boot_timeout_s: 60,
    steps: &[cmd("version", &[r"^Xenlet "], 30), last("crash triple")],
    end: End::TripleFault,
    end_timeout_s: 20,
    budget_s: 170,
    ..XENLET_PVH
};

pub const PVH: Scenario = Scenario {
    name: "pvh",
    about: "Xenlet ELF as a PVH guest, shell on the Xen PV console",
    config: XENLET_PVH_CONFIG,
    disks: &[DATA_LOOP],
    steps: XENLET_STEPS,
    end_timeout_s: 60,
    budget_s: 170,
    ..XENLET_PVH
};

/// `cargo xtask demo`.
pub const DEMO: Scenario = Scenario {
    name: "demo",
    about: "demo: the report's HVM configuration plus a vif, boot report, shell commands, dd, ping, iperf3",
    config: hvm_disk_config!(32, vif: ["bridge=xenbr0"]),
    steps: &[
        cmd("version", &[r"^Xenlet "], 30),
        cmd("xen", &[r"^version: Xen "], 30),
        cmd("lsblk", &[r"^xvdb"], 30),
        cmd("mount", &[r"^/dev/xvda1 on / type ext4"], 30),
        cmd("cat /etc/config/network | grep ipaddr", &[r"192\.168\.1\.1"], 30),
        // The report's experiment: the second disk, formatted ext4 in dom0,
        // mounted at /mnt, and dd into a file there.
        dom0("mkfs.ext4 -q -F $DATA && echo formatted", &[r"^formatted$"], 60),
        cmd("mount /dev/xvdb /mnt", &[], 60),
        cmd(
            "time dd bs=16k count=2048 if=/dev/zero of=/mnt/test",
            &[r"^2048\+0 records out", r"^real\t"],
            120,
        ),
        cmd("time sync", &[r"^real\t"], 60),
        cmd("df -h", &[r" /mnt$"], 30),
        cmd("ip addr add 10.99.0.2/24 dev eth0", &[], 30),
        cmd("ip addr show eth0", &[r"inet 10\.99\.0\.2/24"], 30),
        cmd("ping -c 3 -i 0.2 10.99.0.1", &[r"^3 packets transmitted, 3 received"], 60),
        cmd("iperf3 -s -D", &[r"^iperf3: listening on eth0"], 30),
        dom0("iperf3 -c 10.99.0.2 -t 3", &[r"receiver$"], 60),
        dom0("iperf3 -c 10.99.0.2 -t 3 -R", &[r"receiver$"], 60),
        last("poweroff"),
    ],
    ..XENLET_HVM_IMAGE
};
