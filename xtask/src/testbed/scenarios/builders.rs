//! What the scenario families share: the step builders, [`steps!`] to join step
//! lists, [`xl_config!`] for config templates, the common disks, configs and scripts,
//! and the base scenarios a scenario starts from (`Scenario { name, about, config,
//! steps, ..XENLET_PVH }`: it states only what differs).

use super::model::{Console, Disk, End, Kind, Need, Scenario, Step};

// ---------------------------------------------------------------- steps

/// Regexes a step's output must match (see [`Step::expect`]); `secs` below is a
/// step's [`Step::timeout_s`].
type Regexes = &'static [&'static str];
/// `(VAR, regex)` pairs (see [`Step::capture`]).
type Captures = &'static [(&'static str, &'static str)];

/// A step of `kind` with no captures that does not end the guest.
const fn step(kind: Kind, send: &'static str, expect: Regexes, timeout_s: u32) -> Step {
    Step {
        kind,
        send,
        expect,
        capture: &[],
        timeout_s,
        ends: false,
        netns: "",
    }
}

/// A command whose output must match `expect` before the prompt returns.
pub const fn cmd(send: &'static str, expect: Regexes, secs: u32) -> Step {
    step(Kind::Guest, send, expect, secs)
}

/// A guest command whose output also sets variables.
pub const fn cmd_cap(send: &'static str, expect: Regexes, capture: Captures, secs: u32) -> Step {
    Step {
        capture,
        ..cmd(send, expect, secs)
    }
}

/// A dom0 shell command.
pub const fn dom0(send: &'static str, expect: Regexes, secs: u32) -> Step {
    step(Kind::Dom0, send, expect, secs)
}

/// A dom0 shell command whose output sets variables.
pub const fn dom0_cap(send: &'static str, expect: Regexes, capture: Captures, secs: u32) -> Step {
    Step {
        capture,
        ..dom0(send, expect, secs)
    }
}

/// A shell command (bash) run in dom0 inside the network namespace `netns` of the
/// scenario's [`Topology`](super::model::Topology) (e.g. `lan1`): `ip netns exec
/// NETNS bash -c SEND`, with the environment of a dom0 step.
pub const fn ns(netns: &'static str, send: &'static str, expect: Regexes, secs: u32) -> Step {
    Step {
        netns,
        ..dom0(send, expect, secs)
    }
}

/// A command in a network namespace whose output sets variables.
pub const fn ns_cap(
    netns: &'static str,
    send: &'static str,
    expect: Regexes,
    capture: Captures,
    secs: u32,
) -> Step {
    Step {
        netns,
        ..dom0_cap(send, expect, capture, secs)
    }
}

/// Wait for console output matching `regex` that the guest prints on its own.
pub const fn wait_output(regex: &'static str, timeout_s: u32) -> Step {
    step(Kind::WaitOutput, regex, &[], timeout_s)
}

/// A guest command the domain's end must cut off (see [`Kind::UntilGone`]).
pub const fn until_gone(send: &'static str, expect: Regexes, timeout_s: u32) -> Step {
    step(Kind::UntilGone, send, expect, timeout_s)
}

/// Boot the domain again on the same disks (see [`Kind::Restart`]); `boot_timeout_s`
/// to the first prompt.
pub const fn restart(boot_timeout_s: u32, expect: Regexes) -> Step {
    step(Kind::Restart, "", expect, boot_timeout_s)
}

/// A guest command a move armed in the background must find still running (see
/// [`Kind::UntilMoved`]); a [`reattach`] next.
pub const fn until_moved(send: &'static str, timeout_s: u32) -> Step {
    step(Kind::UntilMoved, send, &[], timeout_s)
}

/// Find the domain again after dom0 moved it (see [`Kind::Reattach`]).
pub const fn reattach(timeout_s: u32) -> Step {
    step(Kind::Reattach, "", &[], timeout_s)
}

/// The command that ends the guest, and what it must print before the domain is
/// gone (checked for an [`End::Crash`]: the fault report).
pub const fn last_expect(send: &'static str, expect: Regexes) -> Step {
    Step {
        ends: true,
        ..cmd(send, expect, 0)
    }
}

/// The command that ends the guest (e.g. `poweroff`).
pub const fn last(send: &'static str) -> Step {
    last_expect(send, &[])
}

/// The number of steps in `parts`, for [`steps!`].
pub const fn total_len(parts: &[&[Step]]) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

/// `parts` one after the other, for [`steps!`].
pub const fn join<const N: usize>(parts: &[&[Step]]) -> [Step; N] {
    let mut out = [last(""); N];
    let (mut k, mut i) = (0, 0);
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[k] = parts[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    assert!(k == N);
    out
}

/// A `&'static [Step]` of steps and step lists in order: `steps![cmd(..), ..LIST,
/// last("poweroff")]`, a list spread where it stands with `..`.
macro_rules! steps {
    (@parts [$($part:expr,)*]) => {{
        use $crate::testbed::scenarios::{builders, Step};
        const PARTS: &[&[Step]] = &[$($part),*];
        const JOINED: [Step; builders::total_len(PARTS)] = builders::join(PARTS);
        &JOINED
    }};
    (@parts [$($part:expr,)*] .. $list:expr $(, $($rest:tt)*)?) => {
        steps!(@parts [$($part,)* $list,] $($($rest)*)?)
    };
    (@parts [$($part:expr,)*] $step:expr $(, $($rest:tt)*)?) => {
        steps!(@parts [$($part,)* &[$step],] $($($rest)*)?)
    };
    ($($item:tt)*) => {
        steps!(@parts [] $($item)*)
    };
}
pub(crate) use steps;

// ---------------------------------------------------------------- xl configs

/// An xl config template: `name = "@NAME@"`, the guest's type (`pvh`, `hvm`, or
/// `builder_hvm` for `builder = "hvm"`), the lines given in that order (`memory`
/// followed by `vcpus = 1`; a list as `disk: ["a", "b"]`), an HVM guest's `serial =
/// "pty"`, `vga = "none"` and `vnc = 0`, then the domain destroyed on poweroff and
/// reboot (or `on_reboot: "preserve"` after the braces) and kept on a crash.
macro_rules! xl_config {
    (@type pvh) => { "type    = \"pvh\"\n" };
    (@type hvm) => { "type    = \"hvm\"\n" };
    (@type builder_hvm) => { "builder = \"hvm\"\n" };
    (@display pvh) => { "" };
    (@display $hvm:ident) => { "serial  = \"pty\"\nvga     = \"none\"\nvnc     = 0\n" };
    (@line memory $v:tt) => { concat!("memory  = ", $v, "\nvcpus   = 1\n") };
    (@line kernel $v:tt) => { concat!("kernel  = \"", $v, "\"\n") };
    (@line ramdisk $v:tt) => { concat!("ramdisk = \"", $v, "\"\n") };
    (@line extra $v:tt) => { concat!("extra   = \"", $v, "\"\n") };
    (@line cmdline $v:tt) => { concat!("cmdline = \"", $v, "\"\n") };
    (@line xen_platform_pci $v:tt) => { concat!("xen_platform_pci = ", $v, "\n") };
    (@line disk [$($item:tt),*]) => { concat!("disk    = [ ", xl_config!(@list $($item),*), " ]\n") };
    (@line vif [$($item:tt),*]) => { concat!("vif     = [ ", xl_config!(@list $($item),*), " ]\n") };
    (@list $first:tt $(, $item:tt)*) => { concat!("\"", $first, "\"" $(, ", \"", $item, "\"")*) };
    (@reboot) => { "destroy" };
    (@reboot $action:tt) => { $action };
    ($type:ident { $($key:ident: $value:tt),* $(,)? } $(on_reboot: $reboot:tt)?) => {
        concat!(
            "name    = \"@NAME@\"\n",
            xl_config!(@type $type),
            $(xl_config!(@line $key $value),)*
            xl_config!(@display $type),
            "on_poweroff = \"destroy\"\n",
            "on_reboot   = \"", xl_config!(@reboot $($reboot)?), "\"\n",
            "on_crash    = \"preserve\"\n",
        )
    };
}
pub(crate) use xl_config;

/// The Linux PVHVM domU (Debian's kernel on the serial console) with `memory = $mem`,
/// the initramfs `$ramdisk` and the lines that follow (its disks, its vif).
macro_rules! linux_hvm_config {
    ($mem:tt, $ramdisk:tt { $($rest:tt)* }) => {
        xl_config!(hvm {
            memory: $mem,
            kernel: "@LINUX@",
            ramdisk: $ramdisk,
            extra: "console=ttyS0,115200 loglevel=4",
            $($rest)*
        })
    };
}
pub(crate) use linux_hvm_config;

/// The Linux PVHVM domU's xl config of `linux-hvm` with `memory = $mem` (`bench boot`
/// probes the smallest that works with the same config otherwise).
macro_rules! linux_hvm_probe_config {
    ($mem:tt) => {
        linux_hvm_config!($mem, "@LINUX_INITRD@" {
            disk: ["phy:@DATA@,xvdb,w", "@DATA2@,raw,xvdc,w"],
            vif: ["bridge=xenbr0,type=vif"],
        })
    };
}
pub(crate) use linux_hvm_probe_config;

pub const LINUX_HVM_CONFIG: &str = linux_hvm_probe_config!(256);

/// Xenlet as a PVH guest with a data disk on dom0's kernel blkback.
pub const XENLET_PVH_CONFIG: &str = xl_config!(pvh {
    memory: 32,
    kernel: "@FILES@/xenlet.elf",
    disk: ["phy:@DATA@,xvdb,w"],
});

/// The hvm-disk configuration (Xenlet's disk image as xvda, the data disk as xvdb)
/// with `memory` MiB and the vifs given (`vif: [..]`), or none.
macro_rules! hvm_disk_config {
    ($memory:tt $(, vif: $vif:tt)?) => {
        xl_config!(builder_hvm {
            memory: $memory,
            disk: ["@DISK@,raw,xvda,w", "@DATA@,raw,xvdb,w"],
            $(vif: $vif,)?
        })
    };
}
pub(crate) use hvm_disk_config;

/// Xenlet's disk image booted as HVM (the report's configuration) with a data disk
/// on QEMU's qdisk.
pub const XENLET_HVM_DISK_CONFIG: &str = hvm_disk_config!(32);

/// The hvm-disk configuration with xvdb on dom0's kernel blkback (`phy:` on a loop
/// device) instead of QEMU's qdisk.
pub const XENLET_HVM_PHY_CONFIG: &str = xl_config!(builder_hvm {
    memory: 32,
    disk: ["@DISK@,raw,xvda,w", "phy:@DATA@,xvdb,w"],
});

// ---------------------------------------------------------------- disks

pub const DATA_LOOP: Disk = Disk {
    var: "DATA",
    size_mb: 64,
    source: None,
    loop_dev: true,
};
pub const DATA_FILE: Disk = Disk {
    loop_dev: false,
    ..DATA_LOOP
};
pub const DATA2: Disk = Disk {
    var: "DATA2",
    size_mb: 16,
    ..DATA_FILE
};
/// A copy of the disk image (QEMU's qdisk).
pub const IMAGE_COPY: Disk = Disk {
    var: "DISK",
    size_mb: 0,
    source: Some(Need::XenletImage),
    loop_dev: false,
};

// ---------------------------------------------------------------- scripts

pub const XENLET_PROMPT: &str = "xenlet> ";
pub const LINUX_PROMPT: &str = "domu# ";

/// The Xenlet script: the version, then power off.
pub const XENLET_STEPS: &[Step] = &[cmd("version", &[r"^Xenlet "], 30), last("poweroff")];

/// The Linux domU's ping over netfront to dom0.
pub const LINUX_PING: Step = cmd(
    "ip link set eth0 up && ip addr add 10.99.0.2/24 dev eth0 && ping -c 3 -W 5 10.99.0.1",
    &[r" [1-3] packets received"],
    90,
);

/// The Linux domU script: the PV front ends probed, a ping over netfront to dom0.
pub const LINUX_STEPS: &[Step] = &[
    cmd(
        "dmesg | grep -i front",
        &[r"blkfront: xvdb", r"xen_netfront: "],
        60,
    ),
    LINUX_PING,
    last("poweroff -f"),
];

/// A GNU dd summary line, captured whole (`bench` reads bytes and seconds from it).
pub const DD_SUMMARY: &str = r"^(\d+ bytes .*copied, [0-9.]+ s.*)$";

/// Xenlet's `time` prints bash's `real\t0m12.345s`.
pub const TIME_REAL: &str = r"^real\t(\d+m\d+\.\d+s)$";

/// The iperf3 client's receiver summary line, captured whole (`bench net` reads the
/// rate from it).
pub const IPERF3_RECEIVER: &str = r"^(\[ *\d+\] .*bits/sec .*receiver)$";

// ---------------------------------------------------------------- base scenarios

/// Xenlet as a PVH guest (`xenlet.elf`) on the PV console, up within 120 s, powered
/// off by its script within 30 s, all in 178 s.
pub const XENLET_PVH: Scenario = Scenario {
    name: "",
    about: "",
    needs: &[Need::XenletElf],
    config: "",
    disks: &[],
    console: Console::Pv,
    prompt: XENLET_PROMPT,
    eol: "\r",
    boot_timeout_s: 120,
    boot_expect: &[],
    steps: &[],
    end: End::Poweroff,
    end_timeout_s: 30,
    budget_s: 178,
    topology: None,
};

/// Xenlet's disk image booted by SeaBIOS and GRUB as HVM, on COM1 (a copy of the
/// image as xvda and a data disk on QEMU's qdisk), up within 140 s.
pub const XENLET_HVM_IMAGE: Scenario = Scenario {
    needs: &[Need::XenletImage],
    disks: &[IMAGE_COPY, DATA_FILE],
    console: Console::Serial,
    boot_timeout_s: 140,
    ..XENLET_PVH
};

/// Debian's Linux as a domU with the busybox initramfs, on its serial console,
/// up (`DOMU: up`) within 300 s, powered off within 60 s.
pub const LINUX_DOMU: Scenario = Scenario {
    needs: &[],
    console: Console::Serial,
    prompt: LINUX_PROMPT,
    boot_timeout_s: 300,
    boot_expect: &[r"^DOMU: up"],
    end_timeout_s: 60,
    ..XENLET_PVH
};

/// [`XENLET_PVH`] with a 64 MiB data disk on dom0's kernel blkback (xvdb), which it
/// must find at boot.
pub const XENLET_PVH_DATA: Scenario = Scenario {
    config: XENLET_PVH_CONFIG,
    disks: &[DATA_LOOP],
    boot_expect: &[r"^blkfront: xvdb 64 MiB"],
    ..XENLET_PVH
};

/// `xl save -c`: a checkpoint, the domain goes on (its suspend cancelled).
pub const MOVE_CHECKPOINT: Step = dom0(
    "xl save -c $NAME /var/tmp/$NAME.ckpt && ls -s /var/tmp/$NAME.ckpt; rm -f /var/tmp/$NAME.ckpt",
    &[r"^\d+ /var/tmp/"],
    240,
);

/// `xl save` then `xl restore`: the domain goes on in a new one (a [`reattach`] next).
pub const MOVE_SAVE_RESTORE: Step = dom0(
    concat!(
        "xl save $NAME /var/tmp/$NAME.save && xl restore /var/tmp/$NAME.save; rc=$?; ",
        "rm -f /var/tmp/$NAME.save; echo \"domid now $(xl domid $NAME)\"; exit $rc"
    ),
    &[r"^domid now \d+$"],
    300,
);

/// `xl migrate` to this host (a [`reattach`] next).
pub const MOVE_MIGRATE: Step = dom0(
    "xl migrate -s '' $NAME 'xl migrate-receive' 2>&1 | tail -3; echo \"domid now $(xl domid $NAME)\"",
    &[r"^domid now \d+$"],
    300,
);
