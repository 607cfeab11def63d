//! The kernel's shell commands and the shell loop.

use crate::bootinfo::{boot_info, boot_times};
use crate::sys::fault::{provoke, Deliberate};
use crate::{io::console, mm, shell::fscmds, sys::power, time::clock};
use alloc::string::String;
use core::fmt::Write;
use xenlet_shell::{echo, no_args, CmdError, CmdResult, Command, Shell};

pub use crate::shell::host::Host;

/// Every command, in `help` order.
pub static COMMANDS: &[Command<Host>] = &[
    Command {
        name: "version",
        usage: "",
        help: "show the Xenlet version",
        run: version,
    },
    Command {
        name: "mem",
        usage: "",
        help: "show the memory map, frames and heap",
        run: mem,
    },
    Command {
        name: "uptime",
        usage: "",
        help: "show time since boot",
        run: uptime,
    },
    Command {
        name: "sleep",
        usage: "SECONDS",
        help: "halt for SECONDS (fractions, s/m/h suffixes); under Xen on the one-shot timer",
        run: sleep,
    },
    Command {
        name: "echo",
        usage: "[-n] [WORD]...",
        help: "print the words",
        run: echo,
    },
    Command {
        name: "xen",
        usage: "",
        help: "show the Xen platform: version, features, event channels",
        run: xen,
    },
    Command {
        name: "xenstore",
        usage: "ls [PATH] | read PATH | write PATH VALUE | rm PATH | mkdir PATH | perms PATH | watch PATH | unwatch PATH",
        help: "read and change XenStore (paths relative to this domain's home)",
        run: xenstore_cmd,
    },
    Command {
        name: "devices",
        usage: "",
        help: "list the PV devices xenbus found, with frontend and backend states",
        run: devices,
    },
    Command {
        name: "dd",
        usage: "if=FILE of=FILE [bs=N] [ibs=N] [obs=N] [count=N] [skip=N] [seek=N] [conv=fsync,notrunc] [oflag=direct,dsync] [status=progress|none|noxfer]",
        help: "copy between /dev/zero, /dev/urandom, /dev/null, /dev/xvdX and files, GNU-style",
        run: dd,
    },
    Command {
        name: "sha256sum",
        usage: "[-n BYTES] /dev/xvdX... | FILE...",
        help: "SHA-256 of disks (or of their first BYTES) or of files, GNU coreutils output",
        run: sha256sum,
    },
    Command {
        name: "ip",
        usage: "[-s] { link | addr | route | neigh } [show [DEV] | add | del ...]",
        help: "show and change interfaces, addresses, routes, neighbours (iproute2 style)",
        run: ip,
    },
    Command {
        name: "conntrack",
        usage: "[-L | -C | -F | -S]",
        help: "the router's connection tracking table: list, count, flush, statistics",
        run: crate::shell::routecmds::conntrack,
    },
    Command {
        name: "fw",
        usage: "",
        help: "the firewall: zones, rules, redirects with counters (like nft list ruleset)",
        run: crate::shell::routecmds::fw,
    },
    Command {
        name: "reload",
        usage: "",
        help: "apply /etc/config/firewall again (atomically; established flows stay)",
        run: crate::shell::routecmds::reload,
    },
    Command {
        name: "logread",
        usage: "",
        help: "the firewall's log of rejected and dropped packets",
        run: crate::shell::routecmds::logread,
    },
    Command {
        name: "uci",
        usage: "show|get|set|add|add_list|del_list|delete|rename|changes|commit|revert|export ...",
        help: "OpenWrt's configuration tool over /etc/config",
        run: crate::shell::routecmds::uci,
    },
    Command {
        name: "leases",
        usage: "",
        help: "the LAN DHCP server's leases (also in /tmp/dhcp.leases, dnsmasq's format)",
        run: crate::shell::servicecmds::leases,
    },
    Command {
        name: "dnsmasq",
        usage: "",
        help: "the LAN DHCP server and DNS forwarder: pools, upstream servers, counters",
        run: crate::shell::servicecmds::dnsmasq,
    },
    Command {
        name: "ifconfig",
        usage: "[-a] [DEV]",
        help: "show network interfaces (net-tools style)",
        run: ifconfig,
    },
    Command {
        name: "udhcpc",
        usage: "[-i IFACE]",
        help: "run DHCPv4 on an interface (default eth0) and wait up to 30 s for a lease",
        run: udhcpc,
    },
    Command {
        name: "iperf3",
        usage: "-s [-p PORT] [-D]",
        help: "iperf3-compatible server on every interface (TCP; runs in the background, reports on the console)",
        run: iperf3,
    },
    Command {
        name: "echod",
        usage: "[-p PORT]",
        help: "TCP and UDP echo server (RFC 862, default port 7) on every interface, in the background",
        run: echod,
    },
    Command {
        name: "ping",
        usage: "[-c COUNT] [-i SECONDS] [-s SIZE] [-W SECONDS] [-4|-6] ADDRESS",
        help: "ICMP echo, iputils-style output and summary; Ctrl-C stops",
        run: ping,
    },
    Command {
        name: "mount",
        usage: "[-t ext2|ext4] [-o ro] DEVICE DIR",
        help: "mount an ext2/ext4 disk on a directory; alone, list the mounts",
        run: fscmds::mount,
    },
    Command {
        name: "umount",
        usage: "DIR|DEVICE...",
        help: "write back and unmount a filesystem (marked clean)",
        run: fscmds::umount,
    },
    Command {
        name: "df",
        usage: "[-h]",
        help: "space used and free on each mounted filesystem",
        run: fscmds::df,
    },
    Command {
        name: "ls",
        usage: "[-l] [-a] [-d] [PATH]...",
        help: "list directory contents",
        run: fscmds::ls,
    },
    Command {
        name: "cat",
        usage: "FILE...",
        help: "print files",
        run: fscmds::cat,
    },
    Command {
        name: "cp",
        usage: "SOURCE... DEST",
        help: "copy files",
        run: fscmds::cp,
    },
    Command {
        name: "mv",
        usage: "SOURCE... DEST",
        help: "rename or move files",
        run: fscmds::mv,
    },
    Command {
        name: "rm",
        usage: "[-r] [-f] PATH...",
        help: "remove files (and directories with -r)",
        run: fscmds::rm,
    },
    Command {
        name: "mkdir",
        usage: "[-p] DIR...",
        help: "make directories",
        run: fscmds::mkdir,
    },
    Command {
        name: "rmdir",
        usage: "DIR...",
        help: "remove empty directories",
        run: fscmds::rmdir,
    },
    Command {
        name: "touch",
        usage: "FILE...",
        help: "create files or update their times",
        run: fscmds::touch,
    },
    Command {
        name: "stat",
        usage: "PATH...",
        help: "show file metadata (GNU layout)",
        run: fscmds::stat,
    },
    Command {
        name: "hexdump",
        usage: "-C FILE",
        help: "canonical hex and ASCII dump of a file",
        run: fscmds::hexdump,
    },
    Command {
        name: "cd",
        usage: "[DIR]",
        help: "change the working directory",
        run: fscmds::cd,
    },
    Command {
        name: "pwd",
        usage: "",
        help: "print the working directory",
        run: fscmds::pwd,
    },
    Command {
        name: "dmesg",
        usage: "",
        help: "print the kernel log (boot report, device and shutdown messages)",
        run: fscmds::dmesg,
    },
    Command {
        name: "lsblk",
        usage: "",
        help: "list disks: size, sector size, read-only, negotiated blkfront features",
        run: lsblk,
    },
    Command {
        name: "sync",
        usage: "[DEVICE]...",
        help: "write back the filesystems, then flush the disks' write caches (BLKIF_OP_FLUSH_DISKCACHE)",
        run: sync,
    },
    Command {
        name: "discard",
        usage: "DEVICE OFFSET LENGTH",
        help: "discard a byte range of a disk (BLKIF_OP_DISCARD; 512-byte aligned)",
        run: discard,
    },
    Command {
        name: "poweroff",
        usage: "",
        help: "power the machine off",
        run: poweroff,
    },
    Command {
        name: "reboot",
        usage: "",
        help: "reset the machine",
        run: reboot,
    },
    Command {
        name: "crash",
        usage: "pf|gp|ud|de|panic|console",
        help: "provoke a fault or panic (tests the fault report)",
        run: crash,
    },
];

fn version(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    writeln!(
        out,
        "Xenlet {} (git {}), x86_64-unknown-none",
        crate::VERSION,
        crate::GIT_REV
    )?;
    Ok(())
}

fn kib(bytes: u64) -> u64 {
    bytes / 1024
}

fn mem(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    let info = boot_info().ok_or_else(|| CmdError::failed("no boot information"))?;
    writeln!(out, "memory map ({}):", info.protocol)?;
    for r in info.memory.regions() {
        let end = r.start.saturating_add(r.len_bytes).saturating_sub(1);
        writeln!(
            out,
            "  {:#018x}-{:#018x} {:>10} KiB  {:?}",
            r.start,
            end,
            kib(r.len_bytes),
            r.kind
        )?;
    }
    // Xen's own copy of the map (XENMEM_memory_map): the source when the loader gave
    // none, otherwise compared with the loader's.
    if crate::xen::platform::info().is_some() {
        match crate::xen::platform::memory_map() {
            Some(x) if crate::bootinfo::memory_map_from_xen() => writeln!(
                out,
                "memory map source: XENMEM_memory_map ({} entries)",
                x.regions().len()
            )?,
            Some(x) => writeln!(
                out,
                "XENMEM_memory_map: {} entries, {} KiB usable, {} the boot map",
                x.regions().len(),
                kib(x.usable_bytes()),
                if x.regions() == info.memory.regions() {
                    "same as"
                } else {
                    "differs from"
                }
            )?,
            None => writeln!(out, "XENMEM_memory_map: failed")?,
        }
    }
    let (free, total, ranges) = mm::heap::frame_stats();
    let (used, hfree) = mm::heap::heap_stats();
    writeln!(out, "usable: {} KiB", kib(info.memory.usable_bytes()))?;
    writeln!(
        out,
        "frames: {} free of {} ({} KiB free, {} free ranges)",
        free,
        total,
        kib(free * mm::FRAME_BYTES),
        ranges
    )?;
    writeln!(
        out,
        "heap: {} KiB used, {} KiB free ({} KiB of it in size-class slabs)",
        used / 1024,
        hfree / 1024,
        mm::heap::slab_bytes() / 1024
    )?;
    let (dropped, overruns) = console::input_losses();
    writeln!(
        out,
        "serial input: {dropped} bytes dropped, {overruns} overruns"
    )?;
    Ok(())
}

fn uptime(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    let now = clock::now();
    let s = now.as_nanos() / 1_000_000_000;
    let ms = (now.as_nanos() / 1_000_000) % 1000;
    write!(
        out,
        "up {}:{:02}:{:02}.{:03}",
        s / 3600,
        (s / 60) % 60,
        s % 60,
        ms
    )?;
    if let Some(t) = boot_times() {
        let us = t.prompt.as_micros();
        write!(out, ", booted in {}.{:03} ms", us / 1000, us % 1000)?;
    }
    writeln!(out)?;
    Ok(())
}

fn secs_ms(ns: u64) -> alloc::string::String {
    alloc::format!("{}.{:03}", ns / 1_000_000_000, (ns / 1_000_000) % 1000)
}

fn sleep(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let [arg] = args else {
        return Err(CmdError::usage("expected one operand"));
    };
    let d =
        xenlet_shell::parse_duration(arg).map_err(|e| CmdError::usage(alloc::format!("{e}")))?;
    let (timer0, run0) = (
        crate::xen::platform::timer_events(),
        crate::xen::platform::runstate(),
    );
    let start = clock::now();
    let end = start + d;
    let mut interrupted = false;
    while clock::now() < end {
        if console::take_interrupt() {
            interrupted = true;
            break;
        }
        crate::xen::idle::halt_in_command(Some(end));
    }
    let slept = clock::now().saturating_duration_since(start);
    if interrupted {
        writeln!(out, "^C")?;
    }
    write!(out, "slept {} s", secs_ms(slept.as_nanos() as u64))?;
    // What Xen saw: the time the vCPU was blocked (halted) rather than running.
    if let (Some(a), Some(b)) = (run0, crate::xen::platform::runstate()) {
        write!(
            out,
            "; vCPU 0 blocked {} s of it, {} VIRQ_TIMER events",
            secs_ms(b[2].saturating_sub(a[2])),
            crate::xen::platform::timer_events() - timer0
        )?;
    }
    writeln!(out)?;
    Ok(())
}

fn xen(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    let Some(x) = crate::xen::platform::info() else {
        return Err(CmdError::failed("not running on Xen"));
    };
    writeln!(out, "version: Xen {}", x.version)?;
    writeln!(
        out,
        "cpuid: base {:#x}, max leaf {:#x}, hypercall MSR {:#x}, HVM features {:#x}{}",
        x.cpuid.base,
        x.cpuid.max_leaf,
        x.cpuid.hypercall_msr,
        x.cpuid.hvm_features,
        x.cpuid
            .vcpu_id
            .map(|v| alloc::format!(", vcpu {v}"))
            .unwrap_or_default()
    )?;
    writeln!(out, "features: {:#010x}", x.features)?;
    writeln!(out, "shared info: {:#x}", x.shared_info.page().addr())?;
    match x.callback {
        crate::xen::platform::CallbackMode::PerVcpu(v) => writeln!(
            out,
            "upcall: per-vCPU vector {v:#x} (HVMOP_set_evtchn_upcall_vector, x2APIC)"
        )?,
        crate::xen::platform::CallbackMode::Vector(v) => writeln!(
            out,
            "upcall: callback vector {v:#x} (HVM_PARAM_CALLBACK_IRQ)"
        )?,
        crate::xen::platform::CallbackMode::Polled => {
            writeln!(out, "upcall: none (events polled)")?
        }
    }
    let ports = crate::xen::platform::bound_ports();
    write!(out, "event channels bound: {}", ports.len())?;
    for p in &ports {
        write!(out, " {p}")?;
    }
    writeln!(out)?;
    match x.timer_port {
        Some(p) => writeln!(
            out,
            "timer: VIRQ_TIMER on event channel {p}, {} events",
            crate::xen::platform::timer_events()
        )?,
        None => writeln!(out, "timer: VIRQ_TIMER not bound")?,
    }
    // Interrupts taken on the idle `hlt` before it ran (an STI shadow not honoured
    // by the virtualization below), resumed past it rather than slept through.
    writeln!(
        out,
        "idle: {} wakeups taken before the hlt, resumed past it",
        crate::arch::halt::rescued()
    )?;
    if let Some(t) = crate::xen::platform::runstate() {
        writeln!(
            out,
            "vcpu 0: running {} s, runnable {} s, blocked {} s, offline {} s",
            secs_ms(t[0]),
            secs_ms(t[1]),
            secs_ms(t[2]),
            secs_ms(t[3])
        )?;
    }
    match crate::xen::gnttab::stats() {
        // Frames are mapped on demand: more than one means the table grew.
        Some(g) => writeln!(
            out,
            "grant table: v1, {} of {} frames mapped, {} refs in use of {}",
            g.frames,
            g.max_frames,
            g.refs_in_use,
            g.frames * xenlet_xen::gnttab::ENTRIES_PER_FRAME
        )?,
        None => writeln!(out, "grant table: not set up")?,
    }
    writeln!(
        out,
        "pv console: {}",
        if console::has_xen_console() {
            "attached"
        } else {
            "absent"
        }
    )?;
    Ok(())
}

fn xs_err(e: crate::xen::xenstore::Error) -> CmdError {
    CmdError::failed(alloc::format!("{e}"))
}

fn xs_ls(path: &str, depth: usize, out: &mut dyn Write) -> CmdResult {
    let children = crate::xen::xenstore::directory(path).map_err(xs_err)?;
    for c in children {
        let child = if path == "/" {
            alloc::format!("/{c}")
        } else {
            alloc::format!("{path}/{c}")
        };
        let value = crate::xen::xenstore::read(&child).unwrap_or_default();
        writeln!(out, "{:indent$}{c} = \"{value}\"", "", indent = depth)?;
        if depth < 8 {
            xs_ls(&child, depth + 1, out)?;
        }
    }
    Ok(())
}

fn xenstore_cmd(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    if !crate::xen::xenstore::connected() {
        return Err(CmdError::failed(
            "XenStore is not connected (not running on Xen?)",
        ));
    }
    match args {
        ["ls"] => xs_ls("/local/domain", 0, out).or_else(|_| xs_ls("device", 0, out)),
        ["ls", path] => xs_ls(path, 0, out),
        ["read", path] => {
            let v = crate::xen::xenstore::read(path).map_err(xs_err)?;
            writeln!(out, "{v}")?;
            Ok(())
        }
        ["write", path, value] => crate::xen::xenstore::write(path, value).map_err(xs_err),
        ["rm", path] => crate::xen::xenstore::rm(path).map_err(xs_err),
        ["mkdir", path] => crate::xen::xenstore::mkdir(path).map_err(xs_err),
        ["perms", path] => {
            let p = crate::xen::xenstore::get_perms(path).map_err(xs_err)?;
            writeln!(out, "{}", p.join(" "))?;
            Ok(())
        }
        ["watch", path] => crate::xen::xenstore::watch(path, path, |ev| {
            crate::println!("xenstore: watch {} fired: {}", ev.token, ev.path);
        })
        .map_err(xs_err),
        ["unwatch", path] => crate::xen::xenstore::unwatch(path, path).map_err(xs_err),
        [] => Err(CmdError::usage("missing operation")),
        [op, ..]
            if [
                "ls", "read", "write", "rm", "mkdir", "perms", "watch", "unwatch",
            ]
            .contains(op) =>
        {
            Err(CmdError::usage(alloc::format!(
                "wrong number of operands for '{op}'"
            )))
        }
        [op, ..] => Err(CmdError::usage(alloc::format!("unknown operation '{op}'"))),
    }
}

fn devices(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    if !crate::xen::xenstore::connected() {
        return Err(CmdError::failed(
            "XenStore is not connected (not running on Xen?)",
        ));
    }
    let devs = crate::xen::xenbus::enumerate().map_err(xs_err)?;
    if devs.is_empty() {
        writeln!(out, "no PV devices")?;
    }
    for d in devs {
        let st = |s: Option<xenlet_xen::xenbus::XenbusState>| {
            s.map_or(alloc::string::String::from("?"), |s| alloc::format!("{s}"))
        };
        writeln!(
            out,
            "{:<6} {:<5} {:<12} frontend {:<12} backend dom{} {} ({})",
            d.name(),
            d.kind,
            d.path(),
            st(d.state),
            d.backend_id
                .map_or(alloc::string::String::from("?"), |b| alloc::format!("{b}")),
            st(d.backend_state),
            d.backend
        )?;
    }
    writeln!(
        out,
        "handshake waits woken by a XenStore watch on the backend state: {}",
        crate::dev::frontends::watch_wakeups()
    )?;
    Ok(())
}

fn dd(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use crate::shell::dd::{Plan, Sink, Source};
    use xenlet_shell::dd::{parse, Status};
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            // GNU's message is already prefixed with "dd: ".
            writeln!(out, "{e}")?;
            return Ok(());
        }
    };
    if a.status != Status::None {
        for w in &a.warnings {
            writeln!(out, "dd: warning: {w}")?;
        }
    }
    let disk = |p: &str| {
        p.strip_prefix("/dev/")
            .filter(|n| n.starts_with("xvd") || n.starts_with("hd"))
            .map(String::from)
    };
    let is_file = |p: &str| !p.starts_with("/dev/");
    if is_file(&a.input) || is_file(&a.output) {
        return dd_file(&a, out);
    }
    let source = match a.input.as_str() {
        "/dev/zero" => Source::Zero,
        "/dev/urandom" | "/dev/random" => Source::Urandom,
        p => match disk(p) {
            Some(n) => Source::Disk(n),
            None => {
                writeln!(out, "dd: failed to open '{p}': No such file or directory")?;
                return Ok(());
            }
        },
    };
    let sink = match a.output.as_str() {
        "/dev/null" => Sink::Null,
        p => match disk(p) {
            Some(n) => Sink::Disk(n),
            None => {
                writeln!(out, "dd: failed to open '{p}': No such file or directory")?;
                return Ok(());
            }
        },
    };
    // Offsets and count in GNU's terms (and GNU's errors for skip/seek past an end).
    let size_of = |n: &str| {
        crate::dev::frontends::with_disk(n, |d| {
            use xenlet_drivers::blkfront::BlockDevice;
            d.info().bytes()
        })
    };
    let in_size = match &source {
        Source::Disk(n) => size_of(n),
        _ => None,
    };
    let out_size = match &sink {
        Sink::Disk(n) => size_of(n),
        Sink::Null => None,
    };
    // GNU prints only the error (no statistics) when a file cannot be opened.
    for (is_disk, size, path) in [
        (matches!(source, Source::Disk(_)), in_size, &a.input),
        (matches!(sink, Sink::Disk(_)), out_size, &a.output),
    ] {
        if is_disk && size.is_none() {
            writeln!(out, "dd: failed to open '{path}': No such device")?;
            return Ok(());
        }
    }
    let gp = match xenlet_shell::dd::plan(&a, in_size, out_size) {
        Ok(p) => p,
        Err(e) => {
            writeln!(out, "{e}")?;
            return Ok(());
        }
    };
    let plan = Plan {
        source,
        sink,
        obs: a.obs,
        skip_bytes: gp.in_offset,
        seek_bytes: gp.out_offset,
        count_bytes: gp
            .max_records
            .map(|r| r.saturating_mul(a.ibs).saturating_add(gp.max_bytes)),
        direct: a.oflag.direct,
        dsync: a.oflag.dsync || a.oflag.sync,
        fsync: a.conv.fsync || a.conv.fdatasync,
        progress: a.status == Status::Progress,
    };
    dd_report(&a, &crate::shell::dd::run(&plan), out)
}

/// Prints a dd outcome as GNU does: the error, then the statistics. Every read and
/// write of the engines is full except the last one of a stream, so the records
/// follow from the byte totals (GNU counts the same way then).
fn dd_report(
    a: &xenlet_shell::dd::DdArgs,
    o: &crate::shell::dd::Outcome,
    out: &mut dyn Write,
) -> CmdResult {
    use xenlet_shell::dd::{summary, Stats};
    if let Some(e) = &o.error {
        writeln!(out, "dd: {e}")?;
    }
    let stats = Stats {
        full_in: o.bytes_in / a.ibs,
        partial_in: u64::from(!o.bytes_in.is_multiple_of(a.ibs)),
        full_out: o.bytes_out / a.obs,
        partial_out: u64::from(!o.bytes_out.is_multiple_of(a.obs)),
        bytes_out: o.bytes_out,
        truncated: 0,
    };
    out.write_str(&summary(&stats, o.elapsed_ns, a.status))?;
    Ok(())
}

/// `dd` with a file on one side or both (see `ddfile`).
fn dd_file(a: &xenlet_shell::dd::DdArgs, out: &mut dyn Write) -> CmdResult {
    use crate::shell::ddfile::{End, FilePlan};
    use xenlet_shell::dd::Status;
    let end = |p: &str, input: bool| -> Result<End, String> {
        Ok(match p {
            "/dev/zero" if input => End::Zero,
            "/dev/urandom" | "/dev/random" if input => End::Urandom,
            "/dev/null" if !input => End::Null,
            p if p.starts_with("/dev/") => {
                let n = &p[5..];
                if crate::dev::frontends::with_disk(n, |_| ()).is_none() {
                    return Err(alloc::format!("failed to open '{p}': No such device"));
                }
                End::Disk(String::from(n))
            }
            p => End::File(String::from(p)),
        })
    };
    let (src, dst) = match (end(&a.input, true), end(&a.output, false)) {
        (Ok(s), Ok(d)) => (s, d),
        (Err(e), _) | (_, Err(e)) => {
            writeln!(out, "dd: {e}")?;
            return Ok(());
        }
    };
    let in_size = match &src {
        End::File(p) => {
            crate::fs::vfs::with(|v| v.resolve(p).and_then(|h| v.stat(h)).map(|s| s.size))
                .and_then(Result::ok)
        }
        End::Disk(n) => crate::dev::frontends::with_disk(n, |d| {
            use xenlet_drivers::blkfront::BlockDevice;
            d.info().bytes()
        }),
        _ => None,
    };
    let out_size = match &dst {
        End::Disk(n) => crate::dev::frontends::with_disk(n, |d| {
            use xenlet_drivers::blkfront::BlockDevice;
            d.info().bytes()
        }),
        _ => None,
    };
    let gp = match xenlet_shell::dd::plan(a, in_size, out_size) {
        Ok(p) => p,
        Err(e) => {
            writeln!(out, "{e}")?;
            return Ok(());
        }
    };
    let plan = FilePlan {
        src,
        dst,
        ibs: a.ibs,
        skip_bytes: gp.in_offset,
        seek_bytes: gp.out_offset,
        count_bytes: gp
            .max_records
            .map(|r| r.saturating_mul(a.ibs).saturating_add(gp.max_bytes)),
        notrunc: a.conv.notrunc,
        fsync: a.conv.fsync || a.conv.fdatasync,
        dsync: a.oflag.dsync || a.oflag.sync,
        progress: a.status == Status::Progress,
    };
    match crate::shell::ddfile::run(&plan) {
        Ok(o) => dd_report(a, &o, out),
        Err(e) => {
            writeln!(out, "dd: {e}")?;
            Ok(())
        }
    }
}

/// Reads `len` bytes of a disk from offset 0 through blkfront and hashes them.
fn hash_disk(
    d: &mut crate::dev::frontends::Disk,
    len: u64,
) -> Result<[u8; 32], xenlet_drivers::blkfront::BlockError> {
    use sha2::Digest;
    use xenlet_drivers::blkfront::{BlockDevice, BlockError, BlockOp, BlockRequest};
    let mut h = sha2::Sha256::new();
    let chunk_pages = d.info().features.max_segments as u64;
    let mut pos = 0u64;
    let mut page = [0u8; 4096];
    let mut done = alloc::vec::Vec::new();
    while pos < len {
        let bytes = (len - pos).min(chunk_pages * 4096);
        let pages = bytes.div_ceil(4096) as usize;
        let mut bufs = alloc::vec::Vec::with_capacity(pages);
        for _ in 0..pages {
            bufs.push(d.alloc_buf().ok_or(BlockError::Busy)?);
        }
        let tag = pos;
        d.submit(BlockRequest {
            tag,
            op: BlockOp::Read,
            sector: pos / 512,
            bytes: bytes as usize,
            bufs,
        })
        .map_err(|(e, _)| e)?;
        d.kick();
        let c = loop {
            done.clear();
            d.poll(&mut done);
            if let Some(i) = done.iter().position(|c| c.tag == tag) {
                break done.swap_remove(i);
            }
            if let Some(why) = d.broken() {
                return Err(BlockError::Broken(String::from(why)));
            }
            d.wait();
        };
        let result = c.result;
        let mut left = bytes as usize;
        for b in c.bufs {
            let n = left.min(4096);
            b.read_at(0, &mut page[..n]);
            h.update(&page[..n]);
            left -= n;
            d.free_buf(b);
        }
        result?;
        pos += bytes;
    }
    Ok(h.finalize().into())
}

fn sha256sum(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use xenlet_drivers::blkfront::BlockDevice;
    let (limit, files) = match args {
        ["-n", n, rest @ ..] => (
            Some(xenlet_shell::parse_size(n).map_err(|e| CmdError::usage(alloc::format!("{e}")))?),
            rest,
        ),
        rest => (None, rest),
    };
    if files.is_empty() {
        return Err(CmdError::usage("missing file operand"));
    }
    if limit.is_none() && files.iter().all(|f| !f.starts_with("/dev/")) {
        return fscmds::sha256sum_files(files, out);
    }
    for f in files {
        let r = crate::dev::frontends::with_disk(f, |d| {
            let size = d.info().bytes();
            let len = limit.unwrap_or(size).min(size);
            if len % 512 != 0 {
                return Err(xenlet_drivers::blkfront::BlockError::Invalid(
                    "length not a multiple of 512",
                ));
            }
            hash_disk(d, len)
        });
        match r {
            None => writeln!(out, "sha256sum: {f}: No such device")?,
            Some(Err(e)) => writeln!(out, "sha256sum: {f}: {e}")?,
            Some(Ok(h)) => {
                for b in h {
                    write!(out, "{b:02x}")?;
                }
                writeln!(out, "  {f}")?;
            }
        }
    }
    Ok(())
}

fn ip(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let mut stack = crate::dev::network::NET.lock();
    // a router shows its forwarding table and neighbour table (the stack's own are
    // per interface and smaller)
    if matches!(
        args,
        ["route"] | ["route", "show"] | ["r"] | ["neigh"] | ["neigh", "show"] | ["n"]
    ) {
        if let Some(gw) = crate::dev::network::GATEWAY.lock().as_ref() {
            if args[0].starts_with('r') {
                for l in gw.router.route_lines() {
                    writeln!(out, "{l}")?;
                }
            } else {
                for l in gw.router.neigh_lines() {
                    writeln!(out, "{l}")?;
                }
            }
            return Ok(());
        }
    }
    let mut text = String::new();
    let r = xenlet_net::ip::ip(&mut stack, args, &mut text);
    out.write_str(&text)?;
    if r.is_ok() && matches!(args, ["-s", "link", ..] | ["-s", "l", ..]) {
        if let Some(gw) = crate::dev::network::GATEWAY.lock().as_ref() {
            writeln!(out, "forwarding (router):")?;
            for (i, n) in stack.ifs.iter().enumerate() {
                if let Some(id) = gw.port_of(i) {
                    writeln!(out, "  {}:\n{}", n.name, gw.router.stats().link_display(id))?;
                }
            }
            let drops: alloc::vec::Vec<String> = gw
                .router
                .stats()
                .drops()
                .filter(|(_, n)| *n > 0)
                .map(|(r, n)| alloc::format!("{r:?} {n}"))
                .collect();
            writeln!(
                out,
                "  dropped: {}",
                if drops.is_empty() {
                    "none".into()
                } else {
                    drops.join(", ")
                }
            )?;
        }
    }
    r.map_err(CmdError::failed)
}

fn ifconfig(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let mut text = String::new();
    let r = xenlet_net::ip::ifconfig(&mut crate::dev::network::NET.lock(), args, &mut text);
    out.write_str(&text)?;
    r.map_err(CmdError::failed)
}

/// Polls the network, with Ctrl-C, until `done` says so or `timeout_ms` passes;
/// whether `done` said so (false on timeout or Ctrl-C).
fn net_wait(
    out: &mut dyn Write,
    timeout_ms: i64,
    mut done: impl FnMut(&mut xenlet_net::NetStack<crate::dev::network::Link>) -> bool,
) -> Result<bool, CmdError> {
    use crate::dev::network::{now_ms, NET};
    let start = now_ms();
    loop {
        let next = {
            let mut st = NET.lock();
            crate::dev::network::poll_stack(&mut st, now_ms());
            if done(&mut st) {
                return Ok(true);
            }
            st.poll_at(now_ms())
        };
        if now_ms() - start > timeout_ms {
            return Ok(false);
        }
        if console::take_interrupt() {
            writeln!(out, "^C")?;
            return Ok(false);
        }
        let deadline = next.unwrap_or(i64::MAX).min(start + timeout_ms).max(0) as u64;
        crate::dev::network::wait_until_us(deadline.saturating_mul(1000));
    }
}

fn port_arg(args: &[&str], default: u16) -> Result<u16, CmdError> {
    match args {
        [] => Ok(default),
        ["-p", p] => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| CmdError::usage(alloc::format!("bad port '{p}'"))),
        [a, ..] => Err(CmdError::usage(alloc::format!("unknown option '{a}'"))),
    }
}

fn start_service(
    out: &mut dyn Write,
    what: &str,
    port: u16,
    start: impl Fn(&mut xenlet_net::iface::NetIf<crate::dev::network::Link>, u16) -> bool,
) -> CmdResult {
    let mut st = crate::dev::network::NET.lock();
    if st.ifs.is_empty() {
        return Err(CmdError::failed("no network interface"));
    }
    for n in st.ifs.iter_mut() {
        if start(n, port) {
            writeln!(out, "{what}: listening on {} port {port}", n.name)?;
        } else {
            writeln!(out, "{what}: already running on {}", n.name)?;
        }
    }
    Ok(())
}

fn iperf3(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let args: alloc::vec::Vec<&str> = args.iter().copied().filter(|a| *a != "-D").collect();
    let ["-s", rest @ ..] = args.as_slice() else {
        return Err(CmdError::usage("only the server (-s) is implemented"));
    };
    let port = port_arg(rest, xenlet_net::iperf3::DEFAULT_PORT)?;
    start_service(out, "iperf3", port, |n, p| n.start_iperf3(p))
}

fn echod(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let port = port_arg(args, xenlet_net::echo::DEFAULT_PORT)?;
    start_service(out, "echod", port, |n, p| n.start_echo(p))
}

fn udhcpc(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use crate::dev::network::NET;
    let dev = match args {
        [] => "eth0",
        ["-i", d] => d,
        _ => return Err(CmdError::usage("unknown option")),
    };
    {
        let mut st = NET.lock();
        let n = st.by_name(dev).ok_or_else(|| {
            CmdError::failed(alloc::format!("SIOCGIFINDEX: No such device ({dev})"))
        })?;
        n.start_dhcp();
    }
    writeln!(out, "udhcpc: started on {dev}")?;
    let got = net_wait(out, 30_000, |st| {
        st.by_name(dev).is_some_and(|n| n.dhcp_address().is_some())
    })?;
    let mut st = NET.lock();
    let n = st
        .by_name(dev)
        .ok_or_else(|| CmdError::failed("interface gone"))?;
    match (got, n.dhcp_address()) {
        (true, Some(a)) => {
            let via = n
                .routes()
                .iter()
                .find(|r| r.dhcp)
                .and_then(|r| r.via)
                .map(|v| alloc::format!(", router {v}"))
                .unwrap_or_default();
            writeln!(out, "udhcpc: lease of {a} obtained{via}")?;
            Ok(())
        }
        _ => Err(CmdError::failed("no lease, failing")),
    }
}

fn ping(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use crate::dev::network::{now_ms, now_us, NET};
    use xenlet_net::ping::{parse_args, Ping};
    let (opts, target) = parse_args(args).map_err(CmdError::failed)?;
    let ident = (crate::arch::cpu::rdtsc() as u16) | 1;
    let (idx, mut p) = {
        let mut st = NET.lock();
        let idx = st.route(target).ok_or_else(|| {
            CmdError::failed(alloc::format!("connect: Network is unreachable ({target})"))
        })?;
        let p = Ping::start(&mut st.ifs[idx], target, opts, ident, now_us())
            .map_err(CmdError::failed)?;
        (idx, p)
    };
    writeln!(out, "{}", p.header())?;
    let mut interrupted = false;
    loop {
        let next = {
            let mut st = NET.lock();
            crate::dev::network::poll_stack(&mut st, now_ms());
            let Some(n) = st.ifs.get_mut(idx) else {
                return Err(CmdError::failed("interface gone"));
            };
            for line in p.poll(n, now_us()) {
                writeln!(out, "{line}")?;
            }
            n.poll(now_ms());
            st.poll_at(now_ms())
        };
        if p.done() {
            break;
        }
        interrupted = console::take_interrupt();
        if interrupted {
            writeln!(out, "^C")?;
            break;
        }
        let deadline_us = next
            .map(|ms| (ms.max(0) as u64) * 1000)
            .unwrap_or(u64::MAX)
            .min(p.next_deadline_us());
        crate::dev::network::wait_until_us(deadline_us);
    }
    let (_, received) = p.counts();
    let summary = {
        let mut st = NET.lock();
        match st.ifs.get_mut(idx) {
            Some(n) => p.finish(n, now_us()),
            None => alloc::vec::Vec::new(),
        }
    };
    writeln!(out)?;
    for line in summary {
        writeln!(out, "{line}")?;
    }
    if received == 0 && !interrupted {
        return Err(CmdError::failed("no reply"));
    }
    Ok(())
}

fn lsblk(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use xenlet_drivers::blkfront::BlockDevice;
    no_args(args)?;
    writeln!(out, "NAME   SIZE(MiB)   SECTOR PHYS  RO RING(pages/slots) SEGS   PERSISTENT FLUSH DISCARD STATE")?;
    let mut n = 0;
    let mut res = Ok(());
    crate::dev::frontends::for_each_disk(|d| {
        n += 1;
        let i = d.info();
        let f = i.features;
        res = res.and(writeln!(
            out,
            "{:<6} {:>9} {:>8} {:>5} {:>3} {:>6}/{:<10} {:>4}{} {:<10} {:<5} {:<7} {}",
            i.name,
            i.bytes() >> 20,
            i.sector_size,
            i.physical_sector_size,
            if i.readonly { 1 } else { 0 },
            f.ring_pages,
            f.ring_entries,
            f.max_segments,
            if f.indirect_segments > 0 { "i" } else { " " },
            if f.persistent { "yes" } else { "no" },
            if f.flush {
                "flush"
            } else if f.barrier {
                "barr"
            } else {
                "no"
            },
            if f.discard { "yes" } else { "no" },
            match (d.broken(), d.stats().quarantined_pages) {
                (Some(why), 0) => alloc::format!("broken: {why}"),
                (Some(why), q) => alloc::format!("broken: {why}; {q} pages quarantined"),
                (None, 0) => alloc::string::String::from("ok"),
                (None, q) => alloc::format!("ok; {q} pages quarantined"),
            }
        ));
    });
    res?;
    if n == 0 {
        writeln!(
            out,
            "no disks (blkfront needs Xen and a vbd in the domain's config)"
        )?;
    }
    Ok(())
}

fn sync(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use xenlet_drivers::blkfront::{BlockDevice, BlockOp};
    let mut res = Ok(());
    if args.is_empty() {
        if let Err(e) = fscmds::sync_filesystems() {
            res = Err(CmdError::failed(e));
        }
    }
    let mut flush = |d: &mut crate::dev::frontends::Disk| {
        let name = d.info().name.clone();
        match crate::dev::frontends::run_one(d, BlockOp::Flush, 0) {
            Ok(()) => {}
            Err(xenlet_drivers::blkfront::BlockError::NotSupported) => {}
            Err(e) => res = Err(CmdError::failed(alloc::format!("{name}: {e}"))),
        }
    };
    if args.is_empty() {
        crate::dev::frontends::for_each_disk(&mut flush);
    } else {
        for a in args {
            if crate::dev::frontends::with_disk(a, &mut flush).is_none() {
                return Err(CmdError::failed(alloc::format!("{a}: No such device")));
            }
        }
    }
    let _ = out; // GNU sync prints nothing on success
    res
}

fn discard(_: &mut Host, args: &[&str], _: &mut dyn Write) -> CmdResult {
    use xenlet_drivers::blkfront::BlockOp;
    let [dev, off, len] = args else {
        return Err(CmdError::usage("expected DEVICE OFFSET LENGTH"));
    };
    let num =
        |s: &str| xenlet_shell::parse_size(s).map_err(|e| CmdError::usage(alloc::format!("{e}")));
    let (off, len) = (num(off)?, num(len)?);
    if off % 512 != 0 || len % 512 != 0 || len == 0 {
        return Err(CmdError::usage(
            "OFFSET and LENGTH must be non-zero multiples of 512",
        ));
    }
    crate::dev::frontends::with_disk(dev, |d| {
        crate::dev::frontends::run_one(d, BlockOp::Discard { sectors: len / 512 }, off / 512)
    })
    .ok_or_else(|| CmdError::failed(alloc::format!("{dev}: No such device")))?
    .map_err(|e| CmdError::failed(alloc::format!("{dev}: {e}")))
}

fn poweroff(_: &mut Host, args: &[&str], _: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    power::poweroff()
}

fn reboot(_: &mut Host, args: &[&str], _: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    power::reboot()
}

fn crash(_: &mut Host, args: &[&str], _: &mut dyn Write) -> CmdResult {
    let kind = match args {
        ["pf"] => Deliberate::PageFault,
        ["gp"] => Deliberate::GeneralProtection,
        ["ud"] => Deliberate::InvalidOpcode,
        ["de"] => Deliberate::DivideError,
        ["panic"] => Deliberate::Panic,
        ["console"] => Deliberate::PanicInConsoleWrite,
        [] => return Err(CmdError::usage("missing fault kind")),
        [k] => return Err(CmdError::usage(alloc::format!("unknown fault kind '{k}'"))),
        [_, extra, ..] => return Err(CmdError::usage(alloc::format!("extra operand '{extra}'"))),
    };
    provoke(kind)
}

/// Runs the shell on the console forever.
pub fn run_shell() -> ! {
    static HOOKS: xenlet_shell::Hooks<Host> = xenlet_shell::Hooks {
        redirect: fscmds::redirect,
        times: fscmds::times,
    };
    let mut shell = Shell::with_hooks(COMMANDS, &HOOKS);
    let mut host = Host::new();
    let mut out = console::ConsoleWriter;
    shell.prompt(&mut out);
    loop {
        console::poll_serial();
        console::poll_xen_console();
        crate::xen::platform::poll_events();
        crate::xen::xenstore::dispatch_watches();
        crate::dev::frontends::poll_hotplug();
        let net_deadline = crate::dev::network::poll();
        while let Some(b) = console::read_byte() {
            shell.feed(&mut host, b, &mut out);
        }
        // Sleep until the next interrupt or event (returns at once if input or an
        // event arrived since the checks above), or until the network stack's next
        // timer (TCP retransmission, delayed ACK, DHCP renewal).
        crate::xen::idle::halt_until(net_deadline.map(crate::dev::network::instant_of_ms));
    }
}
