//! The kernel's shell commands and the shell loop. The command table ([`COMMANDS`])
//! is here; the commands are in one file per family: [`system`] (version, mem, uptime,
//! sleep, poweroff, reboot, crash), [`xen`] (xen, xenstore, devices), [`disk`] (dd,
//! sha256sum, lsblk, sync, discard), [`net`] (ip, ifconfig, udhcpc, ping, iperf3,
//! echod), and beside this folder the file commands ([`crate::shell::fscmds`]), the
//! router's ([`crate::shell::routecmds`]) and the LAN services'
//! ([`crate::shell::servicecmds`]).

mod disk;
mod net;
mod system;
mod xen;

use crate::{io::console, shell::fscmds};
use disk::{dd, discard, lsblk, sha256sum, sync};
use net::{brctl, echod, ethtool, ifconfig, ip, iperf3, ping, reflect, udhcpc};
use system::{crash, exits, mem, poweroff, reboot, sleep, uptime, version};
use xen::{devices, xen, xenstore_cmd};
use xenlet_shell::{echo, Command, Shell};

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
        usage: "[-s] [-4 | -6] { link | addr | route | neigh } [show [DEV] | add | del ...]",
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
        help: "apply /etc/config again: the firewall (atomically; established flows stay), interface addresses, DHCP, DNS, RA",
        run: crate::shell::routecmds::reload,
    },
    Command {
        name: "reload_config",
        usage: "",
        help: "OpenWrt's: the same as reload",
        run: crate::shell::routecmds::reload_config,
    },
    Command {
        name: "service",
        usage: "[NAME reload|restart|start]",
        help: "OpenWrt's init scripts (network, firewall, dnsmasq, odhcpd; also /etc/init.d/NAME ACTION): reload, restart and start apply /etc/config as reload does",
        run: crate::shell::routecmds::service,
    },
    Command {
        name: "ifup",
        usage: "NAME",
        help: "bring up interface NAME of /etc/config/network (wan, lan) from the files; a DHCP one asks for a new lease",
        run: crate::shell::routecmds::ifup,
    },
    Command {
        name: "ifdown",
        usage: "NAME",
        help: "take interface NAME of /etc/config/network down: its IPv4 addresses, gateway and DHCP client",
        run: crate::shell::routecmds::ifdown,
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
        name: "ifstatus",
        usage: "NAME",
        help: "an interface of /etc/config/network: wan6's IPv6 (address, delegated prefix, lifetimes, router, DNS); wan's or lan's IPv4 (up or down, protocol, address, gateway, DNS)",
        run: crate::shell::servicecmds::ifstatus,
    },
    Command {
        name: "dnsmasq",
        usage: "",
        help: "the LAN DHCP server, DNS forwarder and router advertisements: pools, upstream servers, counters",
        run: crate::shell::servicecmds::dnsmasq,
    },
    Command {
        name: "ethtool",
        usage: "-S IFACE",
        help: "a network interface's driver statistics (slots, batches, notifications, events), as Linux's ethtool -S",
        run: ethtool,
    },
    Command {
        name: "brctl",
        usage: "[show | showmacs BRIDGE]",
        help: "the router's bridges (br-lan): their ports (client vifs it serves) and learnt addresses",
        run: brctl,
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
        name: "reflect",
        usage: "IFACE [on|off]",
        help: "send unicast frames to IFACE's MAC straight back (MACs swapped), for measuring the link from dom0; counters",
        run: reflect,
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
        usage: "[-r] SOURCE... DEST",
        help: "copy files (-r: directories with everything in them)",
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
        name: "exits",
        usage: "cpuid|sleep N",
        help: "cause N VM exits of one kind and time them (a test-bed diagnostic)",
        run: exits,
    },
    Command {
        name: "crash",
        usage: "pf|null|wx|nx|gp|ud|de|panic|console|stack|triple",
        help: "provoke a fault or panic (tests the fault report)",
        run: crash,
    },
];

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
    // The loop's own mark on the events: the waits inside commands have theirs.
    let mut wait = crate::xen::idle::Wait::new();
    loop {
        console::poll_serial_backstop(crate::time::clock::now().as_nanos());
        console::poll_xen_console();
        crate::xen::platform::poll_events();
        crate::xen::xenstore::dispatch_watches();
        crate::dev::frontends::poll_hotplug();
        crate::dev::backends::poll();
        let net_deadline = crate::dev::network::poll();
        while let Some(b) = console::read_byte() {
            shell.feed(&mut host, b, &mut out);
        }
        // A filesystem that went read-only after an error (a command's, or the
        // write-behind's) says why, once.
        crate::fs::vfs::report_errors();
        // Sleep until the next interrupt or event (returns at once if input or an
        // event arrived since the last return), or until the network stack's next
        // timer (TCP retransmission, delayed ACK, DHCP renewal).
        wait.until(net_deadline.map(crate::dev::network::instant_of_ms));
    }
}
