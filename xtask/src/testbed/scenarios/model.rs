//! The scenario's types: the guest, its disks and network, the script's steps and how
//! the guest must end.

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
    /// dom0 runs `xl shutdown -w NAME`: the guest must end with reason code 0
    /// (poweroff) within `end_timeout_s`; the seconds are measured and reported.
    XlShutdown,
    /// dom0 runs `xl reboot NAME` (the config has `on_reboot = "destroy"`): the guest
    /// must end with reason code 1 (reboot) within `end_timeout_s`.
    XlReboot,
    /// The last command (with `ends: true`) crashes the guest: within `end_timeout_s`
    /// the domain must be crashed (`on_crash = "preserve"`), i.e. it reached
    /// `SHUTDOWN_crash` rather than hanging on the way.
    Crash,
    /// The last command (with `ends: true`) triple-faults the guest on purpose: the
    /// config keeps the domain (`on_reboot = "preserve"`), Xen's log must report the
    /// triple fault within `end_timeout_s`, and the test bed's evidence reader
    /// (`pagewalk.py`) must find it explained by the guest's own state.
    TripleFault,
    /// The script's last [`Kind::UntilGone`] step (e.g. `poweroff`, checked for its
    /// shutdown reason there) ended the domain, and dom0 steps may follow it (e.g.
    /// `e2fsck` on the powered-off guest's disk): the domain must be gone at the end.
    Gone,
}

impl End {
    pub fn as_str(self) -> &'static str {
        match self {
            End::Poweroff => "poweroff",
            End::TripleFault => "triple-fault",
            End::Destroy => "destroy",
            End::XlShutdown => "xl-shutdown",
            End::XlReboot => "xl-reboot",
            End::Crash => "crash",
            End::Gone => "gone",
        }
    }
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
#[derive(Debug)]
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

/// Where a step runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// A line typed into the guest's shell; its output runs to the next prompt.
    Guest,
    /// A shell command (bash) run in dom0; its output is stdout and stderr, and a
    /// non-zero exit status fails the step. Environment: `$DOMID`, `$NAME` (the
    /// domain name), each disk's variable (`$DATA`: the file or `/dev/loopN`) and
    /// every variable captured so far.
    Dom0,
    /// Wait for guest console output matching `send` (a regex) that arrives on its
    /// own, e.g. a XenStore watch firing; nothing is typed.
    WaitOutput,
    /// A line typed into the guest's shell that the domain's end must cut off: the
    /// runner waits until the domain is gone instead of for a prompt, and fails if the
    /// prompt comes back first (the command finished: e.g. a `dd` that an earlier
    /// dom0 step's `xl destroy` in the background was meant to interrupt) or if it
    /// crashed. The output then gets a last line from the runner,
    /// `(domain gone N.Ns after the command: destroyed)` or `(... : shut down, reason
    /// code R (poweroff))` from the xl log, for the expectations. Later guest steps
    /// need a [`Kind::Restart`] first.
    UntilGone,
    /// The domain is booted again from the same xl config and the same disks: the
    /// runner destroys it if it is still there, then `xl create -p`, console,
    /// unpause and waits for the first prompt, as at the start (boot checks and flake
    /// classification included; `timeout_s` is the boot timeout, `expect` is matched
    /// against the boot output). `${DOMID}` is the new domain's id afterwards.
    Restart,
    /// A line typed into the guest's shell that is still running when a move armed
    /// by an earlier dom0 step in the background (`xl save` + `xl restore`, `xl
    /// migrate`, or `xl save -c`, which suspends it for a while) takes the domain
    /// away: the runner waits until the domain it typed into is gone or suspended
    /// (shut down for the save, or its domid no longer the name's)
    /// instead of for a prompt, and fails if the prompt comes back first (the
    /// command ended before the move). The command goes on in the new domain: a
    /// [`Kind::Reattach`] next, which waits for its prompt; what it printed after the
    /// move is in the console log (`/var/log/xen/console/guest-$NAME.log`).
    UntilMoved,
    /// The dom0 steps before moved the domain (`xl save` + `xl restore`, `xl
    /// migrate`): the runner finds it again by name (a new domid, `${DOMID}`), opens
    /// its new console, presses Enter and waits for the prompt (`timeout_s`).
    Reattach,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Guest => "guest",
            Kind::Dom0 => "dom0",
            Kind::WaitOutput => "wait",
            Kind::UntilGone => "until-gone",
            Kind::Restart => "restart",
            Kind::UntilMoved => "until-moved",
            Kind::Reattach => "reattach",
        }
    }
}

/// One step of a scenario's script.
///
/// `${VAR}` in `send` and `expect` is replaced by a variable captured by an earlier
/// step (in an expectation, as a literal: regex-escaped); in a dom0 command, other
/// `${VAR}`/`$VAR` are left to bash (the environment above).
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub kind: Kind,
    /// The guest command line, the dom0 shell command, or the regex to wait for.
    pub send: &'static str,
    /// Regexes (Python `re`), each must match a line of the output (for a guest
    /// command: before the next prompt, the echo of the command line not searched).
    /// A regex that starts with `\A` is matched against the whole output instead
    /// (`\A...\Z`: the output must be exactly that).
    pub expect: &'static [&'static str],
    /// `(VAR, regex)`: the regex's first group in the output becomes `${VAR}` (and is
    /// written to `result.txt` as `var.VAR=...`); no match fails the step.
    pub capture: &'static [(&'static str, &'static str)],
    /// Seconds to the next prompt (the dom0 command's run time, the wait).
    pub timeout_s: u32,
    /// The command ends the guest: no prompt is awaited, the scenario's [`End`] follows.
    pub ends: bool,
    /// For a [`Kind::Dom0`] step: the network namespace of the scenario's [`Topology`]
    /// it runs in (`ip netns exec NETNS bash -c SEND`), or `""` for dom0's own.
    pub netns: &'static str,
}

#[derive(Clone, Debug)]
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
    /// The dom0 network the guest's vifs join, set up before `xl create` and torn
    /// down after the scenario; `None`: only the bridges every session has (`xenbr0`,
    /// `xenbr1`).
    pub topology: Option<Topology>,
}

/// A dom0 network made for one scenario by the script `xtask/testbed/net/<name>.sh`
/// (`up` before `xl create`, `down` after the scenario; its log and captures land in
/// the scenario's results). Its namespaces are what [`Step::netns`] names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Topology {
    /// The router test network (`net/router.sh`; see the README's "Router topology"):
    /// bridge `brlan` (no dom0 address) with the namespaces `lan1` and `lan2`, bridge
    /// `brwan` (dom0 10.77.0.1/24, dnsmasq DHCP and DNS) with the namespace `wan`
    /// (10.77.0.10, the upstream gateway, iperf3 / TCP+UDP responder / tcpdump) and
    /// `far` (10.78.0.2) one hop behind it over a 1400-byte-MTU link. dom0 does not
    /// forward. A router domain has `vif = [ "bridge=brlan", "bridge=brwan" ]`.
    Router,
}

impl Topology {
    pub fn as_str(self) -> &'static str {
        match self {
            Topology::Router => "router",
        }
    }
}
