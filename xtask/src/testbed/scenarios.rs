//! The scenario table: what each test-bed scenario boots and how it is driven.
//!
//! A scenario is data: an xl config template, which console carries the shell, a
//! command script with expectations, and how the guest must end. The dom0 runner
//! (`xtask/testbed/run.py`) executes it; adding a scenario means adding an entry to
//! [`SCENARIOS`].
//!
//! Variables in a config template, replaced in dom0:
//! `@NAME@` the domain name, `@FILES@` the payload files (see [`Need`]), `@LINUX@` /
//! `@LINUX_INITRD@` the Debian kernel and the busybox initramfs of the Linux domU, and
//! each [`Disk`]'s variable (a file path, or a `/dev/loopN` for `phy:`).

/// What console carries the guest's shell.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Console {
    /// The emulated 16550 COM1 of an HVM guest (`serial="pty"`): the device model's
    /// pty at xenstore `/local/domain/<id>/serial/0/tty`.
    Serial,
    /// The Xen PV console: xenconsoled's pty at `/local/domain/<id>/console/tty`.
    Pv,
}

impl Console {
    pub fn as_str(self) -> &'static str {
        match self {
            Console::Serial => "serial",
            Console::Pv => "pv",
        }
    }
}

/// How the guest must end for the scenario to pass.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum End {
    /// The last command (with `ends: true`) powers the guest off: the xl log must say
    /// "reason code 0" and the domain must be gone.
    Poweroff,
    /// The test bed destroys the guest after the script (for guests that keep
    /// running, e.g. a server another scenario step talks to).
    #[allow(dead_code)]
    Destroy,
}

/// A file the host puts into the payload (`@FILES@/<name>` in dom0).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Need {
    /// `target/xenlet/xenlet.elf` (release build), as `@FILES@/xenlet.elf`.
    XenletElf,
    /// The same kernel behind an ELF32 header, as `@FILES@/xenlet32.elf`: what
    /// `kernel=` of an HVM guest needs (see `elf32.rs`).
    XenletElf32,
    /// `target/xenlet/xenlet.img` (`cargo xtask image`), as `@FILES@/xenlet.img`.
    XenletImage,
}

impl Need {
    pub fn file_name(self) -> &'static str {
        match self {
            Need::XenletElf => "xenlet.elf",
            Need::XenletElf32 => "xenlet32.elf",
            Need::XenletImage => "xenlet.img",
        }
    }
}

/// A disk made fresh in dom0 for each run of the scenario.
pub struct Disk {
    /// Its variable in the config template (`DATA` -> `@DATA@`).
    pub var: &'static str,
    /// Size of a blank (zeroed, sparse) disk.
    pub size_mb: u32,
    /// Start from a copy of this payload file instead of a blank disk.
    pub source: Option<Need>,
    /// Attach it to a loop device and put `/dev/loopN` into the config (for `phy:`,
    /// i.e. dom0's kernel blkback); otherwise the file path (QEMU's qdisk backend).
    pub loop_dev: bool,
}

/// One line typed into the guest's shell.
pub struct Step {
    pub send: &'static str,
    /// Regexes (Python `re`), each must match a line of the output before the next
    /// prompt (the echo of the command line itself is not searched).
    pub expect: &'static [&'static str],
    /// Seconds to the next prompt.
    pub timeout_s: u32,
    /// The command ends the guest: no prompt is awaited, the scenario's [`End`] follows.
    pub ends: bool,
}

/// A command whose output must match `expect` before the prompt returns.
const fn cmd(send: &'static str, expect: &'static [&'static str], timeout_s: u32) -> Step {
    Step {
        send,
        expect,
        timeout_s,
        ends: false,
    }
}

/// The command that ends the guest (e.g. `poweroff`).
const fn last(send: &'static str) -> Step {
    Step {
        send,
        expect: &[],
        timeout_s: 0,
        ends: true,
    }
}

pub struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    pub needs: &'static [Need],
    /// The xl config, with the variables described in the module documentation.
    pub config: &'static str,
    pub disks: &'static [Disk],
    pub console: Console,
    pub prompt: &'static str,
    /// What Enter sends.
    pub eol: &'static str,
    /// Seconds from `xl unpause` to the first prompt, and regexes the boot output must
    /// match.
    pub boot_timeout_s: u32,
    pub boot_expect: &'static [&'static str],
    pub steps: &'static [Step],
    pub end: End,
    pub end_timeout_s: u32,
    /// The whole scenario (disks, `xl create`, boot, script, end, teardown) must fit in
    /// this many seconds; each step's timeout is cut to what is left.
    pub budget_s: u32,
}

const XENLET_PROMPT: &str = "xenlet> ";
const LINUX_PROMPT: &str = "domu# ";

/// The Xenlet script: the version, then power off.
const XENLET_STEPS: &[Step] = &[cmd("version", &[r"^Xenlet "], 30), last("poweroff")];

/// The Linux domU script: the PV front ends probed, a ping over netfront to dom0.
const LINUX_STEPS: &[Step] = &[
    cmd(
        "dmesg | grep -i front",
        &[r"blkfront: xvdb", r"xen_netfront: "],
        60,
    ),
    cmd(
        "ip link set eth0 up && ip addr add 10.99.0.2/24 dev eth0 && ping -c 3 -W 5 10.99.0.1",
        &[r" [1-3] packets received"],
        90,
    ),
    last("poweroff -f"),
];

const DATA_LOOP: Disk = Disk {
    var: "DATA",
    size_mb: 64,
    source: None,
    loop_dev: true,
};
const DATA_FILE: Disk = Disk {
    var: "DATA",
    size_mb: 64,
    source: None,
    loop_dev: false,
};
const IMAGE_COPY: Disk = Disk {
    var: "DISK",
    size_mb: 0,
    source: Some(Need::XenletImage),
    loop_dev: false,
};

const XENLET_HVM_DISK_CONFIG: &str = r#"name    = "@NAME@"
builder = "hvm"
memory  = 32
vcpus   = 1
disk    = [ "@DISK@,raw,xvda,w", "@DATA@,raw,xvdb,w" ]
serial  = "pty"
vga     = "none"
vnc     = 0
on_poweroff = "destroy"
on_reboot   = "destroy"
on_crash    = "preserve"
"#;

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "linux-hvm",
        about: "Debian's Linux as a PVHVM domU (busybox initramfs): blkfront, netfront, ping",
        needs: &[],
        config: r#"name    = "@NAME@"
type    = "hvm"
memory  = 256
vcpus   = 1
kernel  = "@LINUX@"
ramdisk = "@LINUX_INITRD@"
extra   = "console=ttyS0,115200 loglevel=4"
disk    = [ "phy:@DATA@,xvdb,w", "@DATA2@,raw,xvdc,w" ]
vif     = [ "bridge=xenbr0,type=vif" ]
serial  = "pty"
vga     = "none"
vnc     = 0
on_poweroff = "destroy"
on_reboot   = "destroy"
on_crash    = "preserve"
"#,
        disks: &[
            DATA_LOOP,
            Disk {
                var: "DATA2",
                size_mb: 16,
                source: None,
                loop_dev: false,
            },
        ],
        console: Console::Serial,
        prompt: LINUX_PROMPT,
        eol: "\r",
        boot_timeout_s: 300,
        boot_expect: &[r"^DOMU: up"],
        steps: LINUX_STEPS,
        end: End::Poweroff,
        end_timeout_s: 60,
        budget_s: 540,
    },
    Scenario {
        name: "linux-pvh",
        about: "Debian's Linux as a PVH domU on the PV console (checks the PV console path)",
        needs: &[],
        config: r#"name    = "@NAME@"
type    = "pvh"
memory  = 256
vcpus   = 1
kernel  = "@LINUX@"
ramdisk = "@LINUX_INITRD@"
extra   = "console=hvc0 loglevel=4"
disk    = [ "phy:@DATA@,xvdb,w" ]
vif     = [ "bridge=xenbr0" ]
on_poweroff = "destroy"
on_reboot   = "destroy"
on_crash    = "preserve"
"#,
        disks: &[DATA_LOOP],
        console: Console::Pv,
        prompt: LINUX_PROMPT,
        eol: "\r",
        boot_timeout_s: 300,
        boot_expect: &[r"^DOMU: up"],
        steps: LINUX_STEPS,
        end: End::Poweroff,
        end_timeout_s: 60,
        budget_s: 540,
    },
    Scenario {
        name: "hvm-kernel",
        about:
            "Xenlet ELF as an HVM guest (kernel=, loaded by QEMU through its PVH note), COM1 shell",
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
        console: Console::Serial,
        prompt: XENLET_PROMPT,
        eol: "\r",
        boot_timeout_s: 120,
        boot_expect: &[],
        steps: XENLET_STEPS,
        end: End::Poweroff,
        end_timeout_s: 60,
        budget_s: 170,
    },
    Scenario {
        name: "hvm-disk",
        about: "Xenlet disk image (cargo xtask image) booted by SeaBIOS as HVM, 32 MiB, COM1 shell",
        needs: &[Need::XenletImage],
        config: XENLET_HVM_DISK_CONFIG,
        disks: &[IMAGE_COPY, DATA_FILE],
        console: Console::Serial,
        prompt: XENLET_PROMPT,
        eol: "\r",
        boot_timeout_s: 140,
        boot_expect: &[],
        steps: XENLET_STEPS,
        end: End::Poweroff,
        end_timeout_s: 60,
        budget_s: 175,
    },
    Scenario {
        name: "hvm-disk-1g",
        about: "as hvm-disk with memory = 1024",
        needs: &[Need::XenletImage],
        config: r#"name    = "@NAME@"
builder = "hvm"
memory  = 1024
vcpus   = 1
disk    = [ "@DISK@,raw,xvda,w", "@DATA@,raw,xvdb,w" ]
serial  = "pty"
vga     = "none"
vnc     = 0
on_poweroff = "destroy"
on_reboot   = "destroy"
on_crash    = "preserve"
"#,
        disks: &[IMAGE_COPY, DATA_FILE],
        console: Console::Serial,
        prompt: XENLET_PROMPT,
        eol: "\r",
        boot_timeout_s: 140,
        boot_expect: &[],
        steps: XENLET_STEPS,
        end: End::Poweroff,
        end_timeout_s: 60,
        budget_s: 175,
    },
    Scenario {
        name: "pvh",
        about: "Xenlet ELF as a PVH guest, shell on the Xen PV console",
        needs: &[Need::XenletElf],
        config: r#"name    = "@NAME@"
type    = "pvh"
memory  = 32
vcpus   = 1
kernel  = "@FILES@/xenlet.elf"
disk    = [ "phy:@DATA@,xvdb,w" ]
on_poweroff = "destroy"
on_reboot   = "destroy"
on_crash    = "preserve"
"#,
        disks: &[DATA_LOOP],
        console: Console::Pv,
        prompt: XENLET_PROMPT,
        eol: "\r",
        boot_timeout_s: 120,
        boot_expect: &[],
        steps: XENLET_STEPS,
        end: End::Poweroff,
        end_timeout_s: 60,
        budget_s: 170,
    },
];

pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// `scenarios.json` for the dom0 runner.
pub fn to_json(list: &[&Scenario]) -> String {
    let mut o = String::from("[\n");
    for (i, s) in list.iter().enumerate() {
        let disks: Vec<String> = s
            .disks
            .iter()
            .map(|d| {
                format!(
                    "{{\"var\": {}, \"size_mb\": {}, \"source\": {}, \"loop\": {}}}",
                    js(d.var),
                    d.size_mb,
                    d.source.map_or("null".to_string(), |n| js(n.file_name())),
                    d.loop_dev
                )
            })
            .collect();
        let steps: Vec<String> = s
            .steps
            .iter()
            .map(|st| {
                format!(
                    "{{\"send\": {}, \"expect\": {}, \"timeout\": {}, \"ends\": {}}}",
                    js(st.send),
                    js_list(st.expect),
                    st.timeout_s,
                    st.ends
                )
            })
            .collect();
        let end = match s.end {
            End::Poweroff => "poweroff",
            End::Destroy => "destroy",
        };
        o.push_str(&format!(
            " {{\"name\": {}, \"config\": {}, \"console\": {}, \"prompt\": {}, \"eol\": {},\n  \
             \"boot_timeout\": {}, \"boot_expect\": {}, \"disks\": [{}],\n  \"steps\": [{}],\n  \
             \"end\": {}, \"end_timeout\": {}, \"budget\": {}}}{}\n",
            js(s.name),
            js(s.config),
            js(s.console.as_str()),
            js(s.prompt),
            js(s.eol),
            s.boot_timeout_s,
            js_list(s.boot_expect),
            disks.join(", "),
            steps.join(", "),
            js(end),
            s.end_timeout_s,
            s.budget_s,
            if i + 1 < list.len() { "," } else { "" }
        ));
    }
    o.push_str("]\n");
    o
}

fn js(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn js_list(v: &[&str]) -> String {
    let items: Vec<String> = v.iter().map(|s| js(s)).collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_unique_and_budgets_fit() {
        for (i, s) in SCENARIOS.iter().enumerate() {
            assert!(
                SCENARIOS[..i].iter().all(|o| o.name != s.name),
                "{}",
                s.name
            );
            assert!(s.boot_timeout_s < s.budget_s, "{}", s.name);
            if !s.needs.is_empty() {
                assert!(
                    s.budget_s < 180,
                    "{}: a Xenlet scenario takes < 3 min",
                    s.name
                );
            }
            if s.end == End::Poweroff {
                assert!(s.steps.last().is_some_and(|l| l.ends), "{}", s.name);
            }
            for d in s.disks {
                assert!(s.config.contains(&format!("@{}@", d.var)), "{}", s.name);
            }
        }
    }

    #[test]
    fn json_escapes() {
        assert_eq!(js("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\u0001""#);
        let j = to_json(&[find("hvm-kernel").unwrap()]);
        assert!(j.starts_with("[\n {\"name\": \"hvm-kernel\""));
        assert!(j.contains(r#""expect": ["^Xenlet "]"#));
    }
}
