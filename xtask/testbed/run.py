#!/usr/bin/env python3
"""Scenario runner of the Xenlet test bed; runs inside dom0.

Started by /sbin/testbed-init (xtask/testbed/dom0-init) from the payload disk, which
`cargo xtask testbed run` fills with this file, scenarios.json (the scenario table of
xtask/src/testbed/scenarios.rs) and files/ (the Xenlet ELF, the disk image, ...).

Starts the Xen toolstack daemons, a bridge xenbr0 (dom0 = 10.99.0.1/24, fd00:99::1/64)
and a bridge xenbr1 (10.98.0.1/24, fd00:98::1/64) served by dnsmasq's DHCP, then for
each scenario: makes its disks, writes its xl config, `xl create -p`, opens the guest
console's pty (the emulated COM1 of an HVM guest, or the Xen PV console), unpauses the
guest, waits for the prompt, runs the script (guest commands checked against regexes
up to the next prompt, dom0 shell commands, waits for output the guest prints on its
own; any of them may capture a regex group as ${VAR} for later steps), waits for the
guest to end the way the scenario expects (its own poweroff, `xl shutdown -w` or
`xl reboot` from dom0, or destroyed), collects the logs and tears the domain down.
With /payload/live every guest console line is printed as it arrives (`xtask demo`).
A scenario with a topology (e.g. "router") gets its own dom0 network from
/payload/net/<topology>.sh up (before xl create) and down (after); a dom0 step with
"netns" runs under `ip netns exec NETNS` (README: "Router topology").

With /payload/interactive (`cargo xtask testbed shell`) it starts the toolstack and
gives a root shell on the console instead of running scenarios.

Everything the host needs goes to /results (written back as a tar by dom0-init):
  run.log, xl-info.txt, xl-dmesg-boot.txt, xl-dmesg.txt (session)
  <scenario>/result.txt  key=value: status (PASS|FAIL), failed_step, message, flake,
                         t_create, t_first_prompt, t_total, ended, t_end (xl ends),
                         var.NAME=... (captures), match=... lines
  <scenario>/domu.cfg, console.log (raw bytes from the guest console), driver.log,
  xl-create.log, xl-<dom>.log, qemu-dm-<dom>.log, guest-<dom>.log, xl-dmesg.txt, crash.txt
Lines printed with the "TESTBED:" prefix reach the host on the Xen serial console; the
host watchdog reads "TESTBED: step NAME timeout=N" as the deadline of the next step.
"""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import termios
import time

import pagewalk     # /payload/pagewalk.py, beside this file
import tty

PAYLOAD = '/payload'
RESULTS = '/results'
XEN_BIN = '/usr/lib/xen-4.17/bin'
LINUX = '/testbed/domu-vmlinuz'
LINUX_INITRD = '/testbed/domu-initrd.cpio'
SCRATCH = '/var/tmp/testbed'
NET = PAYLOAD + '/net'      # xtask/testbed/net: topology scripts, the Linux router's files
TOPO = '/run/topo'          # a topology's state, logs and captures (copied to results)
os.environ['PATH'] = XEN_BIN + ':/usr/sbin:/usr/bin:/sbin:/bin'
T0 = time.monotonic()
RUN_LOG = None
LIVE = False    # /payload/live: every guest console line is printed as it arrives


# Seconds dom0's toolstack gets to destroy a domain that has shut down (apart from the
# scenario's end timeout, which bounds the guest's own part).
TOOLSTACK_DESTROY_GRACE = 60


def now():
    return time.monotonic() - T0


def say(msg):
    """A line for the host (Xen serial console) and run.log."""
    line = 'TESTBED: ' + msg
    print(line, flush=True)
    if RUN_LOG:
        RUN_LOG.write('[%8.2f] %s\n' % (now(), line))
        RUN_LOG.flush()


def step(name, timeout):
    say('step %s timeout=%d' % (name, timeout))


def sh(cmd, timeout=60):
    """Runs cmd (list or shell string) -> (rc, output). rc 124 on timeout."""
    try:
        p = subprocess.run(cmd, shell=isinstance(cmd, str), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        return p.returncode, p.stdout.decode('utf-8', 'replace')
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode('utf-8', 'replace') if e.stdout else ''
        return 124, out + '\n(timed out after %ss)' % timeout


def run_group(argv, env, timeout):
    """Runs argv in a process group of its own -> (rc, output); on timeout the whole
    group is killed (not only bash: a dom0 flood left running would go on sending to
    the next scenario's guest) and subprocess.TimeoutExpired is raised. Jobs the
    command put in the background on purpose (`... &`) outlive a command that ends."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = p.communicate()
        raise subprocess.TimeoutExpired(argv, timeout, output=out)
    return p.returncode, out.decode('utf-8', 'replace')


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


class Fail(Exception):
    """A scenario failed in `step`; flake=True when it looks like the nested-SVM
    flakiness: the domain crashed or triple-faulted before printing anything (seen in
    hvmloader's first instructions and in early Linux boot), or with its vCPU state
    replaced by Xen's own (seen after GRUB)."""

    def __init__(self, step, message, flake=False):
        super().__init__(message)
        self.step = step
        self.message = message
        self.flake = flake


# ---------------------------------------------------------------- toolstack

def start_toolstack():
    step('toolstack', 180)
    for m in ['xen-evtchn', 'xen-gntdev', 'xen-gntalloc', 'xen-privcmd', 'xen-blkback',
              'xen-netback', 'loop', 'bridge', 'tun']:
        rc, out = sh(['modprobe', m])
        if rc:
            say('modprobe %s: rc=%d %s' % (m, rc, out.strip()))
    if not os.path.ismount('/proc/xen'):
        sh(['mount', '-t', 'xenfs', 'xenfs', '/proc/xen'])
    for d in ['/var/run/xen', '/var/run/xenstored', '/var/log/xen/console', '/var/lib/xen',
              '/var/lib/xenstored', SCRATCH]:
        os.makedirs(d, exist_ok=True)
    for cmd in [[XEN_BIN + '/xenstored', '--pid-file', '/run/xenstored.pid'],
                [XEN_BIN + '/xen-init-dom0'],
                [XEN_BIN + '/xenconsoled', '--pid-file=/run/xenconsoled.pid', '--log=guest',
                 '--log-dir=/var/log/xen/console']]:
        rc, out = sh(cmd, timeout=60)
        if rc:
            raise Fail('toolstack', '%s failed rc=%d: %s' % (os.path.basename(cmd[0]), rc,
                                                             out.strip()[-300:]))
    mount_scratch()
    rc, out = sh('ip link add xenbr0 type bridge && ip addr add 10.99.0.1/24 dev xenbr0'
                 ' && ip link set xenbr0 up')
    if rc:
        raise Fail('toolstack', 'bridge xenbr0: ' + out.strip())
    # IPv6 on xenbr0; a second bridge with a DHCP server for the guests' second vif
    rc, out = sh('ip -6 addr add fd00:99::1/64 dev xenbr0 nodad'
                 ' && ip link add xenbr1 mtu 9000 type bridge && ip addr add 10.98.0.1/24 dev xenbr1'
                 ' && ip -6 addr add fd00:98::1/64 dev xenbr1 nodad && ip link set xenbr1 up'
                 ' && dnsmasq --interface=xenbr1 --bind-dynamic --port=0 --user=root'
                 ' --dhcp-range=10.98.0.100,10.98.0.199,1h --dhcp-leasefile=/tmp/dnsmasq.leases'
                 ' --log-dhcp --log-facility=' + RESULTS + '/dnsmasq.log')
    if rc:
        raise Fail('toolstack', 'bridge xenbr1 / dnsmasq: ' + out.strip())
    rc, info = sh(['xl', 'info'])
    write(RESULTS + '/xl-info.txt', info)
    if rc or not re.search(r'virt_caps\s*:.*\bhvm\b', info):
        raise Fail('toolstack', 'xl info: no hvm in virt_caps (rc=%d)' % rc)
    _, dm = sh(['xl', 'dmesg', '-c'])
    write(RESULTS + '/xl-dmesg-boot.txt', dm)


def mount_scratch():
    """A fourth virtio disk (/dev/vdd), given by the host when a scenario has a disk
    of 1 GiB or more (`bench fs`): formatted and mounted over the scenario disks'
    directory, since dom0's root filesystem has about 1.5 GB free. Mounted with
    discard, so deleting a run's disk frees the space on the host too."""
    if not os.path.exists('/dev/vdd'):
        return
    rc, out = sh('mkfs.ext4 -q -F -E nodiscard /dev/vdd && mount -o discard /dev/vdd ' + SCRATCH
                 + ' && df -h ' + SCRATCH + ' | tail -1', timeout=120)
    if rc:
        raise Fail('toolstack', 'scratch disk /dev/vdd: ' + out.strip())
    say('scratch disk for the scenario disks: ' + ' '.join(out.split()))


# ---------------------------------------------------------------- initramfs + iperf3

def file_entries(files):
    """cpio entries of `files` (absolute paths, links followed) as executables at the
    same paths, each parent directory made before the first file in it."""
    entries, dirs = [], set()
    for f in files:
        parts = f.strip('/').split('/')[:-1]
        for i in range(1, len(parts) + 1):
            d = '/'.join(parts[:i])
            if d not in dirs:
                dirs.add(d)
                entries.append((d, 0o040755, None))
        with open(os.path.realpath(f), 'rb') as fh:
            entries.append((f.strip('/'), 0o100755, fh.read()))
    return entries


def cpio_newc(entries):
    """A newc cpio archive of (path, mode, data) entries (directories: data None)."""
    out = bytearray()
    ino = 1000

    def add(name, mode, data):
        nonlocal ino
        ino += 1
        nb = name.encode() + b'\0'
        hdr = '070701' + ''.join('%08X' % v for v in [
            ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0])
        out.extend(hdr.encode() + nb)
        out.extend(b'\0' * (-len(out) % 4))
        out.extend(data)
        out.extend(b'\0' * (-len(out) % 4))
    for name, mode, data in entries:
        add(name, mode, data if data is not None else b'')
    add('TRAILER!!!', 0, b'')
    return bytes(out)


def initrd_with_iperf3():
    """The Linux domU's initramfs plus dom0's iperf3 and the libraries it loads (the
    kernel unpacks concatenated cpio archives in order)."""
    path = SCRATCH + '/domu-initrd-iperf3.cpio'
    if os.path.exists(path):
        return path
    files = ['/usr/bin/iperf3']
    rc, out = sh(['ldd', '/usr/bin/iperf3'])
    if rc:
        raise Fail('setup', 'ldd iperf3: ' + out.strip())
    for m in re.finditer(r'(/\S+\.so[.0-9]*)', out):
        files.append(m.group(1))
    entries = file_entries(files)
    with open(LINUX_INITRD, 'rb') as fh:
        base = fh.read()
    with open(path, 'wb') as fh:
        fh.write(base + b'\0' * (-len(base) % 512) + cpio_newc(entries))
    return path


# The Linux domU's /init for `bench fs`: domu-init's, waiting for the data disk as
# blkfront's xvdb or as the emulated IDE disk (sda, with xen_platform_pci=0), not for
# a vif (these domUs have none).
# What every /init below starts with: busybox's applets, the kernel filesystems, the
# initramfs's modules (the PV front ends first).
INIT_PRELUDE = """#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
for m in /lib/modules/*.ko; do insmod "$m" 2>&1; done
i=0
"""
FS_INIT = INIT_PRELUDE + """while [ $i -lt 60 ] && ! { [ -b /dev/xvdb ] || [ -b /dev/sda ]; }; do sleep 0.5; i=$((i+1)); done
echo "DOMU: up $(cut -d' ' -f1 /proc/uptime)s; block: $(ls /sys/block | tr '\\n' ' ')"
export PS1='domu# '
while true; do setsid cttyhack sh -i; done
"""
FS_MODULES = ['crc32c_generic', 'ext4', 'ata_piix', 'sd_mod']


def initrd_with_fs():
    """The Linux domU's initramfs plus ext4, the emulated IDE disk's drivers (ata_piix,
    sd_mod) and their dependencies from dom0's modules (the same kernel), loaded in
    order by /init (replaced: FS_INIT). gzip-compressed (2 MB, as small as the plain
    initramfs): the HVM domU's initramfs is copied in through QEMU's fw_cfg, which is
    slow nested (the uncompressed 6 MB took minutes; xz takes a minute to compress in
    dom0)."""
    import gzip
    path = SCRATCH + '/domu-initrd-fs.cpio.gz'
    if os.path.exists(path):
        return path
    entries = [('init', 0o100755, FS_INIT.encode())] + module_entries(FS_MODULES)
    with open(LINUX_INITRD, 'rb') as fh:
        base = fh.read()
    whole = base + b'\0' * (-len(base) % 512) + cpio_newc(entries)
    with open(path, 'wb') as fh:
        fh.write(gzip.compress(whole, 6))
    return path


# The /init of a client domU behind a router domain that serves its vif itself
# (`vif = [ 'backend=ROUTER' ]`: the router runs netback): netfront up, a DHCP lease
# from the router, a ping through it to the WAN host, each reported on the console
# (dom0 reads /var/log/xen/console/guest-NAME.log), then pings every 2 s for ever
# ("CLIENT: ping ok N") so a scenario sees the path keep working. `client_probe=A,B`
# pings each address once first ("CLIENT: probe A ok|lost"). With `client_bench`
# on its command line it first runs iperf3 (10 s: with the one nested CPU shared by
# three domains a round trip takes tens of ms, and 3 s were mostly the start and slow
# start) to the WAN host both ways, 1 and 4 streams ("CLIENT: iperf3 ARGS: <receiver
# line>", then what it cost: "CLIENT: counters ARGS: ..." lines), then "CLIENT: bench
# done".
CLIENT_INIT = INIT_PRELUDE + """while [ $i -lt 60 ] && ! [ -e /sys/class/net/eth0 ]; do sleep 0.5; i=$((i+1)); done
echo "CLIENT: up $(cut -d' ' -f1 /proc/uptime)s; net: $(ls /sys/class/net | tr '\\n' ' ')mac $(cat /sys/class/net/eth0/address)"
ip link set lo up
ip link set eth0 up
udhcpc -i eth0 -n -q -t 20 -T 2 -s /etc/udhcpc.script
echo "CLIENT: lease $(ip -4 -o addr show dev eth0 | awk '{print $4}') via $(ip route | awk '/^default/ {print $3}')"
# a shell on TCP 7000 for dom0's scripts (net/fairness.sh), reached from the LAN
nc -ll -p 7000 -e /bin/sh </dev/null >/dev/null 2>&1 &
# what a transfer cost the client: TCP's retransmissions, timeouts and loss probes
# (/proc/net/snmp, netstat), eth0's packets and bytes, the CPU's ticks by kind (steal:
# runnable while Xen ran another domain)
counters() {
    cat /proc/net/snmp /proc/net/netstat | awk '
        $1 == p { for (i = 2; i <= NF; i++) v[p h[i]] = $i; next }
        { p = $1; for (i = 2; i <= NF; i++) h[i] = $i }
        END { print v["Tcp:RetransSegs"] + 0, v["TcpExt:TCPTimeouts"] + 0,
                    v["TcpExt:TCPLossProbes"] + 0, v["Tcp:InSegs"] + 0, v["Tcp:OutSegs"] + 0 }'
    s=/sys/class/net/eth0/statistics
    echo $(cat $s/tx_packets $s/tx_bytes $s/rx_packets $s/rx_bytes $s/tx_dropped $s/rx_dropped)
    head -1 /proc/stat | awk '{print $2 + $3, $4, $7 + $8, $5, $9}'
}
delta() {
    echo "$1 $2" | awk '{n = NF / 2; for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? " " : ""), $(i + n) - $i}'
}
# `client_probe=A,B`: one ping to each address, said ("CLIENT: probe A ok|lost"): what
# a firewall between zones lets through
for a in $(tr ' ' '\\n' </proc/cmdline | sed -n 's/^client_probe=//p' | tr ',' ' '); do
    if ping -c 1 -W 3 "$a" >/dev/null 2>&1; then echo "CLIENT: probe $a ok"; else echo "CLIENT: probe $a lost"; fi
done
if grep -q client_bench /proc/cmdline; then
    mkdir -p /tmp
    echo "CLIENT: clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
    for a in "-t 10" "-t 10 -P 4" "-t 10 -R" "-t 10 -P 4 -R"; do
        c0=$(counters | tr '\\n' ' ')
        /usr/bin/iperf3 -c 10.77.0.10 $a --connect-timeout 5000 >/tmp/iperf3.out 2>&1 &
        p=$!
        sleep 2
        # the data connections' send queue, retransmit count, rto, cwnd, ssthresh
        mid=$(awk '$3 ~ /:1451$/ && $4 == "01" {printf " [%s r%s rto%d cwnd%d ss%d]", $5, $7, $(NF-4), $(NF-1), $NF}' /proc/net/tcp)
        wait $p
        out=$(cat /tmp/iperf3.out)
        c1=$(counters | tr '\\n' ' ')
        d=$(delta "$c0" "$c1")
        r=$(echo "$out" | grep 'receiver$' | tail -1)
        echo "CLIENT: iperf3 $a: ${r:-failed: $(echo "$out" | tail -1)}"
        echo "CLIENT: counters $a: $(echo "$out" | grep 'sender$' | tail -1 | tr -s ' ')"
        echo "$d" | awk -v a="$a" '{printf "CLIENT: counters %s: tcp retrans %d timeouts %d tlp %d in %d out %d; eth0 tx %d pkts %d B (%d B/pkt) rx %d pkts %d B drop tx %d rx %d; cpu ticks user %d sys %d irq %d idle %d steal %d\\n", a, $1, $2, $3, $4, $5, $6, $7, $6 ? $7 / $6 : 0, $8, $9, $10, $11, $12, $13, $14, $15, $16}'
        echo "CLIENT: counters $a: tcp at 2 s:${mid:- none}"
    done
    echo "CLIENT: bench done"
fi
if grep -q client_check /proc/cmdline; then
    # router-netback's checks of the backend's offloads: IPv6 by SLAAC from the
    # router's advertisements, ping and TCP to wan over IPv6, TCP from wan both ways
    i=0
    while [ $i -lt 60 ] && ! ip -6 addr show dev eth0 scope global | grep -q 'inet6 2001:db8:77'; do sleep 0.5; i=$((i+1)); done
    echo "CLIENT: ipv6 $(ip -6 -o addr show dev eth0 scope global | awk '{print $4}' | tr '\n' ' ')"
    echo "CLIENT: ipv6 route $(ip -6 route show default | head -1)"
    if ping -6 -c 2 -W 3 2001:db8:77::10 >/dev/null 2>&1 || ping6 -c 2 -W 3 2001:db8:77::10 >/dev/null 2>&1; then
        echo "CLIENT: ping6 ok"
    else
        echo "CLIENT: ping6 lost"
    fi
    for a in "-t 3 -R" "-6 -t 3" "-6 -t 3 -R"; do
        case "$a" in -6*) to=2001:db8:77::10 ;; *) to=10.77.0.10 ;; esac
        out=$(/usr/bin/iperf3 -c $to $a --connect-timeout 5000 2>&1)
        r=$(echo "$out" | grep 'receiver$' | tail -1)
        echo "CLIENT: check iperf3 $a: ${r:-failed: $(echo "$out" | tail -1); route $(ip -6 route show default | head -1); router $(ip -6 neigh show dev eth0 | grep router | tr '\n' ';')}"
    done
    echo "CLIENT: check done"
fi
n=0
while true; do
    if ping -c 1 -W 2 10.77.0.10 >/dev/null 2>&1; then n=$((n+1)); echo "CLIENT: ping ok $n"; else echo "CLIENT: ping lost"; fi
    sleep 2
done
"""


def domain_xl():
    """The xl config lines the session adds to every domain (`/payload/domain-xl`,
    from xtask's DOMAIN_XL and --xl): a dom0 step appends them to a client domU's
    config as `$DOMAIN_XL`, so a client runs as the scenario's domain does (without
    them its RDTSC was emulated, a VM exit per read)."""
    try:
        with open(PAYLOAD + '/domain-xl') as fh:
            return fh.read()
    except FileNotFoundError:
        return ''


def initrd_client():
    """The Linux domU's initramfs with iperf3 (`initrd_with_iperf3`), CLIENT_INIT as
    /init, the udhcpc script and the kernel's packet generator (pktgen: the flood of
    net/fairness.sh)."""
    path = SCRATCH + '/domu-initrd-client.cpio'
    if os.path.exists(path):
        return path
    with open(NET + '/udhcpc.script', 'rb') as fh:
        script = fh.read()
    entries = [('init', 0o100755, CLIENT_INIT.encode()), ('etc', 0o040755, None),
               ('etc/udhcpc.script', 0o100755, script)] + module_entries(['pktgen'])
    with open(initrd_with_iperf3(), 'rb') as fh:
        base = fh.read()
    with open(path, 'wb') as fh:
        fh.write(base + b'\0' * (-len(base) % 512) + cpio_newc(entries))
    return path


def module_entries(wanted):
    """cpio entries lib/modules/NN-name.ko for the kernel modules `wanted` and their
    dependencies (dom0's modules: the domU runs the same kernel), decompressed, numbered
    from 50 in load order (after domu-init's own, 00-..., the PV front ends)."""
    import lzma
    mdir = '/lib/modules/' + os.uname().release
    deps = {}
    with open(mdir + '/modules.dep') as f:
        for line in f:
            mod, _, rest = line.partition(':')
            deps[os.path.basename(mod).split('.ko')[0].replace('-', '_')] = (mod, rest.split())
    order = []
    for want in wanted:
        if want not in deps:
            raise Fail('setup', 'kernel module %s not in %s/modules.dep' % (want, mdir))
        mod, rest = deps[want]
        for m in list(reversed(rest)) + [mod]:
            if m not in order:
                order.append(m)
    entries = []
    for i, m in enumerate(order):
        with open(mdir + '/' + m, 'rb') as fh:
            data = fh.read()
        if m.endswith('.xz'):
            data = lzma.decompress(data)
        base = os.path.basename(m).split('.ko')[0]
        entries.append(('lib/modules/%02d-%s.ko' % (50 + i, base), 0o100644, data))
    return entries


def program_entries(programs):
    """cpio entries for dom0's `programs` (absolute paths) and every library ldd says
    they load, at the same paths, with their directories."""
    files = []
    for prog in programs:
        files.append(prog)
        rc, out = sh(['ldd', prog])
        if rc:
            raise Fail('setup', 'ldd %s: %s' % (prog, out.strip()))
        for m in re.finditer(r'(/\S+\.so[.0-9]*)', out):
            if m.group(1) not in files:
                files.append(m.group(1))
    return file_entries(files)


# The Linux router domU (router-linux): nft and conntrack from dom0's Debian packages
# (nftables, conntrack), the netfilter modules fw4's ruleset needs (nft loads none on
# its own: the initramfs has no modprobe path), nf_conntrack_netlink for conntrack -L.
# crc32c_generic first: libcrc32c (under nf_tables and nf_conntrack) asks the crypto
# API for "crc32c" when it loads and fails without it (busybox insmod then says
# "unknown symbol": ENOENT).
# Its driver-domain mode (`driver_domain` on its command line; its /init loads the last
# two modules only then): xen-netback and the bridge, and dom0's xenstore-read and
# xenstore-write for the init's devd (hotplug-status), which reach xenstored through
# the domU's /dev/xen/xenbus.
ROUTER_PROGRAMS = ['/usr/sbin/nft', '/usr/sbin/conntrack', '/usr/bin/xenstore-read',
                   '/usr/bin/xenstore-write']
ROUTER_MODULES = ['crc32c_generic', 'nf_tables', 'nf_conntrack', 'nf_nat', 'nft_ct', 'nft_limit', 'nft_reject',
                  'nft_reject_inet', 'nft_chain_nat', 'nft_masq', 'nft_nat',
                  'nf_conntrack_netlink', 'bridge', 'xen_netback']


def initrd_router():
    """The Linux domU's initramfs made a router: net/linux-router/init as /init (prompt
    `router# `), /etc/router-up, /etc/router-up6 (`bench router`'s IPv6), /etc/fw4.nft,
    /etc/udhcpd.conf, /etc/udhcpc.script,
    nft, conntrack, xenstore-read and xenstore-write with their libraries, the
    netfilter modules and the driver domain's (bridge, xen-netback). Uncompressed: a
    PVH guest's ramdisk is loaded by the domain builder, not through QEMU's fw_cfg."""
    path = SCRATCH + '/domu-initrd-router.cpio'
    if os.path.exists(path):
        return path
    src = NET + '/linux-router/'

    def asset(name):
        with open(name, 'rb') as fh:
            return fh.read()
    entries = [('init', 0o100755, asset(src + 'init')), ('etc', 0o040755, None),
               ('run', 0o040755, None),
               ('etc/router-up', 0o100755, asset(src + 'router-up')),
               ('etc/router-up6', 0o100755, asset(src + 'router-up6')),
               ('etc/fw4.nft', 0o100644, asset(src + 'fw4.nft')),
               ('etc/udhcpd.conf', 0o100644, asset(src + 'udhcpd.conf')),
               ('etc/udhcpc.script', 0o100755, asset(NET + '/udhcpc.script'))]
    entries += program_entries(ROUTER_PROGRAMS) + module_entries(ROUTER_MODULES)
    with open(LINUX_INITRD, 'rb') as fh:
        base = fh.read()
    with open(path, 'wb') as fh:
        fh.write(base + b'\0' * (-len(base) % 512) + cpio_newc(entries))
    return path


def topology(name, action, out):
    """Runs net/<name>.sh ACTION (up, down) in dom0; its output goes to
    <out>/topology.log and the driver log. -> (rc, output)."""
    rc, text = sh(['bash', '%s/%s.sh' % (NET, name), action], timeout=120)
    with open(out + '/topology.log', 'a') as f:
        f.write('$ %s.sh %s (rc %d)\n%s\n' % (name, action, rc, text))
    return rc, text


# ---------------------------------------------------------------- the domain

def dom_state(name):
    """None when the domain does not exist, else xl's state column (e.g. '-b----')."""
    rc, out = sh(['xl', 'list', name], timeout=30)
    if rc:
        return None
    lines = out.strip().splitlines()
    if len(lines) < 2:
        return None
    f = lines[-1].split()
    return f[4] if len(f) >= 5 else '?'


def xl_log_end(name, domid):
    """How the xl daemon of domain `domid` saw it end: 'shut down, reason code R
    (poweroff)' ('Domain N has shut down, reason code R 0x..'), 'destroyed' ('Domain N
    has been destroyed.': destroyed without a shutdown), or None (no such line yet).
    By domid, since a restarted domain's daemon may log into the same file."""
    try:
        text = open('/var/log/xen/xl-%s.log' % name, errors='replace').read()
    except OSError:
        return None
    codes = re.findall(r'Domain %s has shut down, reason code (\d+)' % domid, text)
    if codes:
        r = int(codes[-1])
        return 'shut down, reason code %d (%s)' % (r, REASONS.get(r, '?'))
    if re.search(r'Domain %s has been destroyed' % domid, text):
        return 'destroyed'
    return None


def shutdown_reason(name):
    """From the xl daemon's log: 'Domain N has shut down, reason code R 0x..'. A
    domain that came in by `xl migrate` is watched by the daemon `xl migrate-receive`
    started under its incoming name (xl-NAME--incoming.log): the log written last
    that has a shutdown line tells."""
    found = []
    for path in ['/var/log/xen/xl-%s.log' % name, '/var/log/xen/xl-%s--incoming.log' % name]:
        try:
            text = open(path, errors='replace').read()
            mtime = os.path.getmtime(path)
        except OSError:
            continue
        codes = re.findall(r'has shut down, reason code (\d+)', text)
        if codes:
            found.append((mtime, int(codes[-1])))
    return max(found)[1] if found else None


REASONS = {0: 'poweroff', 1: 'reboot', 2: 'suspend', 3: 'crash', 4: 'watchdog', 5: 'soft_reset'}

ANSI = re.compile(rb'\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]')


def clean(data):
    """Guest output as text: no CRs, no terminal escape sequences."""
    return ANSI.sub(b'', data).decode('latin-1').replace('\r', '')


class Console:
    """The guest side of a console pty in dom0 (the device model or xenconsoled holds
    the master). Every byte read goes to console.log."""

    def __init__(self, path, out_dir, log):
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        tty.setraw(self.fd)
        attrs = termios.tcgetattr(self.fd)
        attrs[3] &= ~(termios.ECHO | termios.ECHONL | termios.ICANON | termios.ISIG)
        termios.tcsetattr(self.fd, termios.TCSANOW, attrs)
        self.transcript = open(out_dir + '/console.log', 'ab', buffering=0)
        self.pending = b''
        self.total = 0
        self.last_rx = time.monotonic()
        self.eof = False
        self.log = log
        self.live = None        # a function given each complete console line, if set
        self.live_buf = b''

    def pump(self, timeout):
        if self.eof:
            time.sleep(max(0.0, min(timeout, 0.5)))
            return
        r, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not r:
            return
        try:
            data = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        except OSError:         # EIO: the other side closed (the guest is gone)
            data = b''
        if not data:
            self.eof = True
            self.log('console: end of file (the device model / console daemon closed it)')
            return
        self.transcript.write(data)
        t = time.monotonic()
        if self.total == 0:
            self.log('console: first bytes from the guest')
        elif t - self.last_rx > 3:
            self.log('console: output again after %.1fs of silence' % (t - self.last_rx))
        self.last_rx = t
        self.total += len(data)
        self.pending += data
        if self.live:
            self.live_buf += data
            *lines, self.live_buf = self.live_buf.split(b'\n')
            for ln in lines:
                text = clean(ln).rstrip()
                if text.strip():
                    self.live(text)

    def wait_for(self, needle, timeout, alive):
        """-> (status, bytes before and including needle). status: 'found', 'timeout',
        'gone' (domain no longer exists), 'crashed', 'shutdown'."""
        def found():
            i = self.pending.find(needle)
            if i < 0:
                return None
            got = self.pending[:i + len(needle)]
            self.pending = self.pending[i + len(needle):]
            return got
        return self._wait(found, timeout, alive)

    def wait_regex(self, rx, timeout, alive):
        """Like wait_for, for a regex matching a line of the cleaned output; on a match
        everything pending is taken."""
        return self._wait(
            lambda: self.take() if re.search(rx, clean(self.pending), re.M) else None,
            timeout, alive)

    def _wait(self, found, timeout, alive):
        """The wait of wait_for and wait_regex: `found()` takes what a match takes
        (None while there is none); the domain's state is looked at every 2 s."""
        end = time.monotonic() + timeout
        next_check = time.monotonic() + 2
        while True:
            got = found()
            if got is not None:
                return 'found', got
            t = time.monotonic()
            if t >= end:
                return 'timeout', self.take()
            if t >= next_check:
                next_check = t + 2
                st = alive()
                if st != 'running':
                    self.pump(0.3)      # what the guest printed last
                    return st, self.take()
            self.pump(min(0.5, end - t))

    def settle(self, quiet=0.5, limit=3.0):
        """Reads until the console has been quiet for `quiet` seconds (at most
        `limit`)."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            before = self.total
            self.pump(quiet)
            if self.total == before:
                return

    def finish(self):
        """Takes what the guest printed last and closes the console (one already
        gone is no error)."""
        try:
            self.pump(0.1)
            self.close()
        except OSError:
            pass

    def take(self):
        got, self.pending = self.pending, b''
        return got

    def send(self, data):
        while data:
            try:
                n = os.write(self.fd, data)
                data = data[n:]
            except BlockingIOError:
                time.sleep(0.05)

    def close(self):
        os.close(self.fd)
        self.transcript.close()


def run_scenario(sc):
    name = sc['name']
    # copies of one scenario in a session (`testbed soak`: NAME.1, NAME.2, ...) run
    # one after the other under the scenario's own domain name, which its steps expect
    dom = 'tb-' + re.sub(r'\.\d+$', '', name)
    out = '%s/%s' % (RESULTS, name)
    os.makedirs(out, exist_ok=True)
    drv = open(out + '/driver.log', 'a', buffering=1)
    t_start = time.monotonic()
    deadline = t_start + sc['budget']
    res = {'status': 'FAIL', 'failed_step': '', 'message': '', 'flake': 0, 'ended': '',
           't_create': '', 't_first_prompt': '', 't_total': ''}
    matches = []
    loops = []
    console = None
    domid = None
    phase = ['setup']
    topo_up = False

    def log(msg, show=True):
        drv.write('[%7.2fs] %s\n' % (time.monotonic() - t_start, msg))
        if show:
            say('[%s] %s' % (name, msg[:220]))

    def left(want):
        """A step's timeout, bounded by what is left of the scenario's budget."""
        r = deadline - time.monotonic()
        if r <= 1:
            raise Fail(phase[0], 'the scenario budget of %ds is used up' % sc['budget'])
        return min(want, r)

    def alive():
        st = dom_state(dom)
        if st is None:
            return 'gone'
        if 'c' in st:
            return 'crashed'
        if 's' in st:
            return 'shutdown'
        return 'running'

    def show_output(text):
        for ln in text.splitlines():
            if ln.strip():
                log('| ' + ln.rstrip(), not LIVE)

    say('scenario %s begin' % name)
    step('scenario:' + name, sc['budget'])
    sh(['xl', 'dmesg', '-c'])
    try:
        # disks
        caps = {}       # ${VAR} values: NAME, DOMID, captures
        env_disks = {}
        vars_ = {'NAME': dom, 'FILES': PAYLOAD + '/files', 'LINUX': LINUX,
                 'LINUX_INITRD': LINUX_INITRD}
        if '@LINUX_INITRD_IPERF3@' in sc['config']:
            vars_['LINUX_INITRD_IPERF3'] = initrd_with_iperf3()
        if '@LINUX_INITRD_FS@' in sc['config']:
            vars_['LINUX_INITRD_FS'] = initrd_with_fs()
        if '@LINUX_INITRD_ROUTER@' in sc['config']:
            vars_['LINUX_INITRD_ROUTER'] = initrd_router()
        if sc.get('topology'):
            # the bridges must exist before `xl create` (the vif hotplug script adds
            # the vifs to them)
            phase[0] = 'topology'
            topo_up = True
            rc, text = topology(sc['topology'], 'up', out)
            show_output(text)
            if rc:
                raise Fail('topology', '%s.sh up failed (rc %d): %s' % (
                    sc['topology'], rc, ' | '.join(text.strip().splitlines()[-3:])))
            phase[0] = 'setup'
        for d in sc['disks']:
            path = '%s/%s-%s.img' % (SCRATCH, name, d['var'].lower())
            if d['source']:
                shutil.copyfile(PAYLOAD + '/files/' + d['source'], path)
            else:
                with open(path, 'wb') as f:
                    f.truncate(d['size_mb'] << 20)
            if d['loop']:
                rc, dev = sh(['losetup', '-f', '--show', path])
                if rc:
                    raise Fail('setup', 'losetup %s: %s' % (path, dev.strip()))
                loops.append(dev.strip())
                vars_[d['var']] = dev.strip()
            else:
                vars_[d['var']] = path
            env_disks[d['var']] = vars_[d['var']]
        cfg = sc['config']
        pvh = re.search(r'^\s*type\s*=\s*"pvh"', cfg, re.M) is not None
        for k, v in vars_.items():
            cfg = cfg.replace('@%s@' % k, v)
        if '@' in re.sub(r'#.*', '', cfg):
            left_over = sorted(set(re.findall(r'@[A-Z0-9_]+@', cfg)))
            if left_over:
                raise Fail('setup', 'unknown variables in the xl config: ' + ' '.join(left_over))
        if sc['end'] != 'xl-reboot' and not any(
                st['kind'] in ('until-gone', 'restart') for st in sc['steps']):
            # nothing here reboots on purpose: a triple fault (which Xen turns into a
            # reboot) keeps the domain, for its registers and memory in crash.txt
            cfg = re.sub(r'(?m)^on_reboot\s*=.*$', 'on_reboot   = "preserve"', cfg)
        write(out + '/domu.cfg', cfg)
        for k in ['xl-%s.log', 'qemu-dm-%s.log', 'console/guest-%s.log']:
            # xl create rotates its log (xl-NAME.log.1, ...): a restart step's boots
            for sfx in [''] + ['.%d' % n for n in range(1, 10)]:
                try:
                    os.remove('/var/log/xen/' + k % dom + sfx)
                except OSError:
                    pass

        prompt = sc['prompt'].encode('latin-1')
        eol = sc['eol'].encode('latin-1')

        def silent(domid, dm):
            """Nested-SVM flake: nothing from the guest at all (no console byte, no
            line of its firmware in Xen's log), or its vCPU found running at a Xen
            address with Xen's code selector (QEMU mixing L1 and L2 state)."""
            mixed = re.search(r'd%sv\d+ \w+ @ e008:ffff82d' % domid, dm) or re.search(
                r'd%sv\d+ Triple fault[^\n]*\n(?:[^\n]*\n){0,4}[^\n]*RIP:\s+e008:\[<ffff82d'
                % domid, dm)
            return bool(mixed) or (console.total == 0 and '(d%s)' % domid not in dm)

        def booting():
            """The phase is a boot to the first prompt ('boot', or 'boot 2' after a
            restart step)."""
            return phase[0] == 'boot' or phase[0].startswith('boot ')

        def fail_gone(st, what, text):
            if st == 'crashed':
                diagnose(dom, out)
                _, dm = sh(['xl', 'dmesg'])
                raise Fail(phase[0], 'the domain crashed %s' % what,
                           flake=silent(domid, dm))
            if st in ('gone', 'shutdown'):
                r = shutdown_reason(dom)
                _, dm = sh(['xl', 'dmesg'])
                triple = 'd%sv0 Triple fault' % domid in dm
                intact = False
                if st == 'shutdown':
                    # kept by on_reboot="preserve": its CPU context (IDTR, GDTR, TR,
                    # CR3 ...) and its memory into crash.txt, which tells a guest's
                    # broken tables from state the nested SVM mixed up
                    res['pagewalk'] = diagnose(dom, out)
                    intact = triple and res['pagewalk'] == 'intact'
                # A triple fault before the first prompt is counted as the nested-SVM
                # flake too: it was seen at sane kernel addresses right after GRUB
                # handed over (HVM disk boots only; PVH boots of the same kernel never
                # did). A real early crash fails every retry and stays red.
                # A triple fault that began with a #PF while the guest's page tables
                # in memory map everything the deliveries touch (pagewalk 'intact')
                # cannot be the guest's own: the flake too (crash.txt has the walk).
                raise Fail(phase[0], 'the domain ended %s (%s%s%s)' % (
                    what, REASONS.get(r, 'no shutdown reason in the xl log'),
                    ', after a triple fault%s' % triple_state(domid, dm) if triple else '',
                    '; its page tables in memory map every address the #PF and #DF '
                    'deliveries touch (pagewalk: intact)' if intact else ''),
                    flake=triple and (silent(domid, dm) or booting() or intact))
            tail = text.strip().splitlines()[-1:] if text.strip() else []
            stuck = ''
            if booting():
                stuck = in_real_mode(domid)
                # A Xenlet guest whose kernel never printed its banner died in the
                # firmware or GRUB (e.g. GRUB "Aborted." after corrupted state): the
                # kernel cannot cause that unless every attempt fails, which stays red.
                # A PVH guest has no firmware (Xen enters the kernel itself): its
                # silence is named as such. It is retried as before, without
                # evidence of its own (it was seen only with one TCG thread, whose
                # timers crawl); a kernel that never starts fails every retry.
                never = (not stuck and sc['prompt'] == 'xenlet> '
                         and not re.search(r'Xenlet \S+ \(\S+\) starting', text))
            else:
                never = False
            raise Fail(phase[0], 'no prompt %r %s; last output: %r%s%s' % (
                sc['prompt'], what, tail[0][-160:] if tail else '(none)',
                '; the vCPU is still in real mode (%s): stuck in the firmware or the '
                'boot loader' % stuck if stuck else '',
                ('; the kernel never printed its banner (PVH: no firmware ran)' if pvh
                 else '; the kernel never printed its banner: died in the firmware or GRUB')
                if never else ''), flake=bool(stuck) or never)

        def open_console():
            """Opens the console pty of domain `domid` (from XenStore, waiting for it up
            to 30 s) as `console`; -> (pty path, XenStore key)."""
            nonlocal console
            xskey = '/local/domain/%s/%s' % (domid, 'serial/0/tty' if sc['console'] == 'serial'
                                             else 'console/tty')
            ptyp = ''
            end = time.monotonic() + left(30)
            while not ptyp and time.monotonic() < end:
                rc, v = sh(['xenstore-read', xskey])
                ptyp = v.strip() if rc == 0 else ''
                if not ptyp:
                    time.sleep(0.5)
            if not ptyp:
                raise Fail(phase[0], 'no pty at xenstore %s' % xskey)
            console = Console(ptyp, out, lambda m: log(m, False))
            if LIVE:
                console.live = lambda ln: say('[%s] | %s' % (name, ln[:220]))
            return ptyp, xskey

        def start_domain(boot_no, boot_timeout, boot_expect):
            """Creates the domain paused from domu.cfg, opens its console, unpauses it
            and waits for the first prompt; the boot output must match boot_expect.
            boot_no is 1 at the start, 2, 3 ... for a restart step (the phases are
            then 'create 2', 'console 2', 'unpause 2', 'boot 2', and the times
            t_create_2, t_first_prompt_2)."""
            nonlocal console, domid
            sfx = '' if boot_no == 1 else ' %d' % boot_no
            key = '' if boot_no == 1 else '_%d' % boot_no
            logf = 'xl-create%s.log' % ('' if boot_no == 1 else '-boot%d' % boot_no)

            # create, paused
            phase[0] = 'create' + sfx
            log('xl create -p (memory and disks: see domu.cfg)')
            t = time.monotonic()
            rc, text = sh(['xl', '-v', 'create', '-p', out + '/domu.cfg'], timeout=left(120))
            write(out + '/' + logf, text)
            if rc and 'scripts/block add because of timeout' in text:
                # the phy: hotplug script (a shell script, the first in line for a loop
                # device) ran out of libxl's time on a busy machine: `bench fs` saw it
                # once; the guest never ran, so try once more, and say so
                log('xl create: the block hotplug script timed out; creating once more')
                res['create_retried'] = 1
                rc, text = sh(['xl', '-v', 'create', '-p', out + '/domu.cfg'], timeout=left(120))
                write(out + '/' + logf.replace('.log', '-2.log'), text)
            if rc:
                tail = ' | '.join(l for l in text.strip().splitlines()[-4:])
                raise Fail(phase[0], 'xl create failed (rc %d): %s' % (rc, tail))
            res['t_create' + key] = '%.1f' % (time.monotonic() - t)
            rc, domid = sh(['xl', 'domid', dom])
            domid = domid.strip()
            log('created paused in %ss, domid %s' % (res['t_create' + key], domid))
            caps['NAME'] = dom
            caps['DOMID'] = domid

            # console pty
            phase[0] = 'console' + sfx
            ptyp, xskey = open_console()
            log('%s console: %s (xenstore %s)' % (sc['console'], ptyp, xskey))
            time.sleep(1)   # QEMU notices a connected pty by polling; don't lose early bytes

            phase[0] = 'unpause' + sfx
            rc, text = sh(['xl', 'unpause', dom])
            if rc:
                raise Fail(phase[0], 'xl unpause: ' + text.strip())
            t_unpause = time.monotonic()

            # boot to the first prompt
            phase[0] = 'boot' + sfx
            log('waiting up to %ds for the first prompt %r' % (boot_timeout, sc['prompt']))
            st, got = console.wait_for(prompt, left(boot_timeout), alive)
            text = clean(got)
            show_output(text)
            if st != 'found':
                fail_gone(st, 'within %ds of unpausing' % boot_timeout, text)
            res['t_first_prompt' + key] = '%.1f' % (time.monotonic() - t_unpause)
            log('first prompt %ss after unpause' % res['t_first_prompt' + key])
            check(boot_expect, text, phase[0], matches, log)

        start_domain(1, sc['boot_timeout'], sc['boot_expect'])

        # the command script
        ended = False
        end_expects = []    # the ending command's expectations, met by what it printed
        gone = ''       # set by an until-gone step: how the domain went
        boots = 1
        def typed_until(send, timeout, went, what, state):
            """Types `send`; the domain must `went` ('go', 'be moved') before the prompt
            comes back (`state()` says when it did: not 'running'). -> (its state,
            what the command printed, when it was typed); a prompt first, a timeout
            or a crash fail the step."""
            log('> %s (the domain must %s before the prompt comes back)' % (send, went))
            t = time.monotonic()
            console.send(send.encode('latin-1') + eol)
            st, got = console.wait_for(prompt, left(timeout), state)
            text = strip_echo(clean(got), send)
            if text.endswith(sc['prompt']):
                text = text[:-len(sc['prompt'])]
            show_output(text)
            if st == 'found':
                raise Fail(phase[0], 'the prompt came back %.1fs after the command: it '
                           'finished before the domain could %s (%s came too late)'
                           % (time.monotonic() - t, went, what))
            if st == 'timeout':
                raise Fail(phase[0], 'the domain did not %s within %ds of the command'
                           % (went, timeout))
            if st == 'crashed':
                fail_gone(st, 'after %r' % send, text)
            return st, text, t

        for i, s in enumerate(sc['steps'], 1):
            kind = s.get('kind', 'guest')
            expects = [subst(e, caps, True) for e in s['expect']]
            if gone and kind in ('guest', 'wait', 'until-gone', 'until-moved'):
                raise Fail('step %d' % i, 'a %s step after the domain went (%s) needs a '
                           'restart step first' % (kind, gone))
            # output the guest printed on its own since the last prompt (a watch
            # firing, say) is not taken for this step's
            stray = ''
            if kind == 'dom0':
                # let a line being printed finish (a serial console is slow), so a
                # watch's first firing is not mistaken for the one dom0 then causes
                console.settle()
                stray = clean(console.take())
            elif kind == 'guest':
                console.pump(0.05)
                stray = clean(console.take())
            if stray.strip():
                log('(console, between steps)', False)
                show_output(stray)
            if kind == 'dom0':
                send = subst(s['send'], caps, False)
                netns = s.get('netns', '')
                where = 'netns %s' % netns if netns else 'dom0'
                phase[0] = '%s %d (%s)' % (where, i, send)
                log('%s$ %s' % (netns or 'dom0', send))
                env = dict(os.environ)
                env.update(env_disks)
                env.update(caps)
                env['NET'] = NET
                env['TOPO'] = TOPO
                env['CFG'] = out + '/domu.cfg'     # a restart step boots from it again
                # client domUs a step creates (`$NAME-c1`, ...; destroyed at the end)
                env['LINUX'] = LINUX
                # the session's xl lines for every domain (native TSC), for the
                # configs of client domUs a step writes
                env['DOMAIN_XL'] = domain_xl()
                if 'CLIENT_INITRD' in send:
                    env['CLIENT_INITRD'] = initrd_client()
                argv = ['bash', '-c', send]
                if netns:
                    argv = ['ip', 'netns', 'exec', netns] + argv
                t = time.monotonic()
                timeout = left(s['timeout'])
                try:
                    rc, text = run_group(argv, env, timeout)
                except subprocess.TimeoutExpired as e:
                    show_output(e.stdout.decode('utf-8', 'replace') if e.stdout else '')
                    # the guest may have died under the command (a dom0 iperf3 then
                    # waits for ever): judge that death, flake or not, first
                    st = alive()
                    if st != 'running' and not gone:
                        fail_gone(st, 'while dom0 ran %r' % send, '')
                    raise Fail(phase[0], 'the dom0 command did not finish within %ds'
                               % timeout)
                show_output(text)
                log('%s command: exit status %d in %.1fs' % (where, rc, time.monotonic() - t))
                if rc:
                    st = alive()
                    if st != 'running' and not gone:
                        fail_gone(st, 'while dom0 ran %r' % send, '')
                    raise Fail(phase[0], 'the %s command exited with status %d: %s' % (
                        where, rc, ' | '.join(text.strip().splitlines()[-3:])))
            elif kind == 'wait':
                rx = subst(s['send'], caps, True)
                phase[0] = 'wait %d (/%s/)' % (i, rx)
                log('waiting up to %ds for /%s/ on the console' % (s['timeout'], rx))
                t = time.monotonic()
                st, got = console.wait_regex(rx, left(s['timeout']), alive)
                text = clean(got)
                show_output(text)
                if st != 'found':
                    if st == 'timeout':
                        raise Fail(phase[0], 'no /%s/ on the console within %ds' % (
                            rx, s['timeout']))
                    fail_gone(st, 'while waiting for /%s/' % rx, text)
                log('seen after %.1fs' % (time.monotonic() - t))
                expects = [rx] + expects
                # a prompt the guest may redraw after the line
                console.pump(0.5)
                more = clean(console.take())
                if more.strip():
                    show_output(more)
            elif kind == 'until-gone':
                # typed; the domain's end (an `xl destroy` armed by a dom0 step, or the
                # command itself, e.g. poweroff) must come before the prompt does
                send = subst(s['send'], caps, False)
                phase[0] = 'command %d (%s), until the domain is gone' % (i, send)
                st, text, t = typed_until(send, s['timeout'], 'go', 'the destroy', alive)
                secs = time.monotonic() - t
                gone_by = time.monotonic() + TOOLSTACK_DESTROY_GRACE
                while st == 'shutdown' and time.monotonic() < gone_by:     # being destroyed
                    time.sleep(0.2)
                    st = alive()
                if st != 'gone':
                    raise Fail(phase[0], 'the domain is %s, not gone, %ds after it shut down'
                               % (st, TOOLSTACK_DESTROY_GRACE))
                # what the xl daemon of this domain saw: a shutdown with its reason, or
                # the domain destroyed under it (`Domain N has been destroyed.`)
                how = None
                for _ in range(25):
                    how = xl_log_end(dom, domid)
                    if how:
                        break
                    time.sleep(0.2)
                how = how or 'unknown (no shutdown or destroy line in the xl log)'
                gone = '%s %.1fs after %r' % (how, secs, send)
                res['gone_%d' % i] = gone
                text += '\n(domain gone %.1fs after the command: %s)\n' % (secs, how)
                log('(domain gone %.1fs after the command: %s)' % (secs, how))
                console.pump(0.1)
            elif kind == 'until-moved':
                # typed; a move armed by a dom0 step in the background (xl save + xl
                # restore, xl migrate, xl save -c) must take the domain away while the
                # command still runs: its domid stops being the name's, or it shuts
                # down (suspended for the save). The command goes on in the new domain
                # (a reattach next).
                send = subst(s['send'], caps, False)
                phase[0] = 'command %d (%s), until the domain is moved' % (i, send)

                def still_here():
                    st = alive()
                    if st != 'running':
                        return 'moved' if st != 'crashed' else st
                    rc, v = sh(['xl', 'domid', dom])
                    return 'running' if rc == 0 and v.strip() == domid else 'moved'
                st, text, t = typed_until(send, s['timeout'], 'be moved', 'the move',
                                          still_here)
                secs = time.monotonic() - t
                res['moved_%d' % i] = '%.1fs after %r' % (secs, send)
                text += '\n(domain moved %.1fs after the command)\n' % secs
                log('(domain moved %.1fs after the command)' % secs)
            elif kind == 'restart':
                phase[0] = 'restart %d' % i
                st = alive()
                if st != 'gone':
                    log('xl destroy %s (%s) before booting it again' % (dom, st))
                    sh(['xl', 'destroy', dom], timeout=left(60))
                    end = time.monotonic() + left(60)
                    while alive() != 'gone' and time.monotonic() < end:
                        time.sleep(0.5)
                    if alive() != 'gone':
                        raise Fail(phase[0], 'xl destroy: the domain is still there')
                console.finish()
                console = None
                boots += 1
                # the xl daemon's log of the last boot is rotated by xl create
                # (xl-NAME.log.1): keep it now
                for k in ['xl-%s.log', 'console/guest-%s.log']:
                    src = '/var/log/xen/' + k % dom
                    if os.path.exists(src):
                        shutil.copyfile(src, '%s/%s.boot%d' % (out, os.path.basename(src),
                                                               boots - 1))
                log('booting the domain again (boot %d) on the same disks' % boots)
                start_domain(boots, s['timeout'] or sc['boot_timeout'], expects)
                gone = ''
                expects = []    # checked against the boot output by start_domain
                text = ''
            elif kind == 'reattach':
                # the dom0 steps before moved the domain (xl save + xl restore, xl
                # migrate): the same name, a new domid and a new console pty; the guest
                # printed its resume report meanwhile (into the console log)
                phase[0] = 'reattach %d' % i
                st = alive()
                if st != 'running':
                    fail_gone(st, 'after it was moved', '')
                console.finish()
                console = None
                rc, v = sh(['xl', 'domid', dom])
                domid = v.strip()
                caps['DOMID'] = domid
                ptyp, _ = open_console()
                log('domain %s is now domid %s; console %s' % (dom, domid, ptyp))
                t = time.monotonic()
                console.send(eol)
                st, got = console.wait_for(prompt, left(s['timeout'] or 30), alive)
                text = clean(got)
                show_output(text)
                if st != 'found':
                    fail_gone(st, 'within %ds of reattaching' % (s['timeout'] or 30), text)
                log('prompt %.1fs after reattaching' % (time.monotonic() - t))
            else:
                send = subst(s['send'], caps, False)
                phase[0] = 'command %d (%s)' % (i, send)
                log('> %s' % send)
                t = time.monotonic()
                console.send(send.encode('latin-1') + eol)
                if s['ends']:
                    ended = True
                    end_expects = expects
                    break
                st, got = console.wait_for(prompt, left(s['timeout']), alive)
                text = clean(got)
                if text.endswith(sc['prompt']):
                    text = text[:-len(sc['prompt'])]
                text = strip_echo(text, send)
                show_output(text)
                if st != 'found':
                    fail_gone(st, 'within %ds' % s['timeout'], text)
                log('answered in %.1fs' % (time.monotonic() - t), False)
            check(expects, text, phase[0], matches, log)
            for var, rx in s.get('capture', []):
                m = re.search(rx, text, re.M)
                if not m:
                    raise Fail(phase[0], 'nothing to capture into ${%s}: /%s/ not found'
                               % (var, rx))
                caps[var] = m.group(1)
                res['var.' + var] = m.group(1)
                log('captured ${%s} = %s' % (var, m.group(1)))

        # how the guest ends
        phase[0] = 'end'

        def run_out():
            """Reads the console until the domain stops running or the end timeout
            passes; -> (its state, when the wait began)."""
            t0 = time.monotonic()
            end = t0 + left(sc['end_timeout'])
            st = alive()
            while st == 'running' and time.monotonic() < end:
                console.pump(0.3)
                st = alive()
            return st, t0

        def await_end(want, after):
            """The domain must go away (on_poweroff/on_reboot = destroy) within the
            end timeout with shutdown reason `want`; -> seconds it took."""
            st, t0 = run_out()
            secs = time.monotonic() - t0
            # The guest's part ends when Xen records the shutdown; destroying the domain
            # (device-model and backend teardown, hotplug scripts) is dom0's toolstack,
            # which under load in the nested dom0 has taken over 10 s: it gets its own
            # grace, measured apart.
            t1 = time.monotonic()
            gone_by = t1 + TOOLSTACK_DESTROY_GRACE
            while st == 'shutdown' and time.monotonic() < gone_by:     # being destroyed
                time.sleep(0.2)
                st = alive()
            if st != 'shutdown' and st != 'running':
                res['destroyed'] = '%.1fs after the shutdown' % (time.monotonic() - t1)
            console.pump(0.2)
            show_output(clean(console.take()))
            if st == 'running':
                raise Fail('end', 'the guest is still running %ds after %s'
                           % (sc['end_timeout'], after))
            if st == 'crashed':
                diagnose(dom, out)
                raise Fail('end', 'the domain crashed instead of ending (%s)' % after)
            r = None
            for _ in range(10):
                r = shutdown_reason(dom)
                if r is not None:
                    break
                time.sleep(1)
            res['ended'] = '%s (reason code %s)' % (REASONS.get(r, 'unknown'), r)
            if r != want:
                # a triple fault on Xen's register state is the nested-SVM flake (seen
                # once in Linux's `poweroff -f`)
                _, dm = sh(['xl', 'dmesg'])
                intact = False
                if st == 'shutdown' and 'd%sv0 Triple fault' % domid in dm:
                    res['pagewalk'] = diagnose(dom, out)    # kept by on_reboot="preserve"
                    intact = res['pagewalk'] == 'intact'
                raise Fail('end', 'the domain shut down with reason %s, expected %s%s'
                           % (res['ended'], REASONS[want],
                              ' (a triple fault; pagewalk: intact)' if intact else ''),
                           flake=silent(domid, dm) or intact)
            if st == 'shutdown':
                raise Fail('end', 'the domain shut down (%s) but the toolstack had not '
                           'destroyed it %ds later' % (res['ended'], TOOLSTACK_DESTROY_GRACE))
            return secs

        def await_stop(what):
            """Waits up to the end timeout for the domain to stop running (it is kept:
            on_crash/on_reboot = "preserve"); -> (its state, when the wait began)."""
            log('waiting up to %ds for the domain to %s' % (sc['end_timeout'], what))
            st, t0 = run_out()
            console.pump(0.2)
            text = clean(console.take())
            show_output(text)
            return st, t0, text

        if sc['end'] == 'crash':
            if not ended:
                raise Fail('end', 'the script has no command that ends the guest')
            st, t0, text = await_stop('crash')
            if st != 'crashed':
                raise Fail('end', 'the domain is %s %ds after the crash command, not crashed'
                           % (st, sc['end_timeout']))
            check(end_expects, text, 'end', matches, log)
            res['ended'] = 'crashed %.1fs after the crash command' % (time.monotonic() - t0)
        elif sc['end'] == 'triple-fault':
            # a deliberate triple fault (on_reboot = "preserve" keeps the domain): Xen
            # must report it, and pagewalk must blame the guest's own state
            if not ended:
                raise Fail('end', 'the script has no command that ends the guest')
            st, t0, _ = await_stop('triple-fault')
            _, dm = sh(['xl', 'dmesg'])
            if st != 'shutdown' or 'd%sv0 Triple fault' % domid not in dm:
                raise Fail('end', 'the domain is %s %ds after the command, %s' % (
                    st, sc['end_timeout'], 'without a triple fault in Xen\'s log'
                    if 'd%sv0 Triple fault' % domid not in dm else 'not kept'))
            res['pagewalk'] = diagnose(dom, out)
            with open(out + '/crash.txt') as f:
                show_output(f.read().split('$ pagewalk:', 1)[-1])
            if res['pagewalk'] != 'explained':
                raise Fail('end', 'pagewalk judged the deliberate triple fault %r, not '
                           '"explained" by the guest\'s own state' % res['pagewalk'])
            res['ended'] = 'triple fault %.1fs after the command, pagewalk: %s' % (
                time.monotonic() - t0, res['pagewalk'])
        elif sc['end'] == 'gone':
            if not gone:
                raise Fail('end', 'the domain is still there: end "gone" needs an '
                           'until-gone step that ended it, after the last restart')
            if alive() != 'gone':
                raise Fail('end', 'the domain is back after it went (%s)' % gone)
            res['ended'] = 'gone: ' + gone
        elif sc['end'] == 'poweroff':
            if not ended:
                raise Fail('end', 'the script has no command that ends the guest')
            log('waiting up to %ds for the guest to power off' % sc['end_timeout'])
            await_end(0, 'the last command')
        elif sc['end'] in ('xl-shutdown', 'xl-reboot'):
            if ended:
                raise Fail('end', 'the guest was ended by the script, not by xl')
            xl = (['xl', 'shutdown', '-w', dom] if sc['end'] == 'xl-shutdown'
                  else ['xl', 'reboot', dom])
            what = ' '.join(xl[:-1]) + ' NAME'
            want = 0 if sc['end'] == 'xl-shutdown' else 1
            console.pump(0.05)
            show_output(clean(console.take()))
            log('dom0$ %s (the guest must shut down within %ds)' % (' '.join(xl),
                                                                  sc['end_timeout']))
            t0 = time.monotonic()
            rc, text = sh(xl, timeout=left(sc['end_timeout'] + 5))
            t_xl = time.monotonic() - t0
            show_output(text)
            if rc:
                raise Fail('end', '%s failed (rc %d after %.1fs): %s' % (
                    what, rc, t_xl, ' | '.join(text.strip().splitlines()[-3:])))
            secs = t_xl + await_end(want, what)
            res['t_end'] = '%.1f' % secs
            log('%s: the guest ended (%s) %.1fs after the command (xl returned after '
                '%.1fs)' % (what, res['ended'], secs, t_xl))
            if secs > sc['end_timeout']:
                raise Fail('end', 'the guest took %.1fs to end after %s, more than %ds'
                           % (secs, what, sc['end_timeout']))
            res['ended'] += ' %.1fs after %s' % (secs, what)
        else:
            console.pump(0.5)
            show_output(clean(console.take()))
            res['ended'] = 'destroyed by the test bed after the script'
        if 'destroyed' in res:
            res['ended'] += ', domain destroyed ' + res.pop('destroyed')
        log('ended: ' + res['ended'])
        res['status'] = 'PASS'
    except Fail as f:
        if dom_state(dom) is not None and not os.path.exists(out + '/crash.txt'):
            diagnose(dom, out)      # where the guest is stuck: registers, xl dmesg
        res['failed_step'] = f.step
        res['message'] = f.message
        res['flake'] = 1 if f.flake else 0
        log('FAILED in step %s: %s%s' % (f.step, f.message,
                                         ' (suspected nested-virtualisation flake)'
                                         if f.flake else ''))
    except Exception as e:      # a bug in this runner: report it, go on
        res['failed_step'] = phase[0]
        res['message'] = 'runner error: %r' % e
        log('runner error in step %s: %r' % (phase[0], e))
    finally:
        if console:
            console.finish()
        # client domUs a step created (`$NAME-...`) go before the router that serves
        # them; their console logs are kept as client-<name>.log
        rc, listing = sh(['xl', 'list'], timeout=30)
        for ln in listing.splitlines()[1:] if not rc else []:
            f = ln.split()
            if f and f[0].startswith(dom + '-'):
                sh(['xl', 'destroy', f[0]], timeout=60)
        if os.path.isdir('/var/log/xen/console'):
            for f in os.listdir('/var/log/xen/console'):
                if f.startswith('guest-%s-' % dom) and f.endswith('.log'):
                    shutil.copyfile('/var/log/xen/console/' + f,
                                    out + '/client-' + f[len('guest-%s-' % dom):])
        st = dom_state(dom)
        if st is not None:
            sh(['xl', 'list', '-v'], timeout=30)
            if ('s' in st or 'c' in st) and not os.path.exists(out + '/crash.txt'):
                # a domain kept after it ended (on_reboot/on_crash = "preserve")
                # that no failure path examined: its CPU context before it goes
                diagnose(dom, out)
            sh(['xl', 'destroy', dom], timeout=60)
        # device-mapper disks a dom0 step stacked on the loop devices (`$NAME-...`)
        if shutil.which('dmsetup') and os.path.isdir('/dev/mapper'):
            for dm in os.listdir('/dev/mapper'):
                if dm.startswith(dom + '-'):
                    sh(['dmsetup', 'remove', '--noudevsync', '--force', dm], timeout=30)
        for lo in loops:
            sh(['losetup', '-d', lo])
        if topo_up:
            rc, text = topology(sc['topology'], 'down', out)
            log('topology %s down (rc %d)' % (sc['topology'], rc))
            # its captures and logs, as topo-<file> (the host copies files, not
            # directories, of a scenario's results)
            if os.path.isdir(TOPO):
                for f in os.listdir(TOPO):
                    if os.path.isfile(TOPO + '/' + f) and not f.endswith('.pid'):
                        shutil.copyfile(TOPO + '/' + f, out + '/topo-' + f)
                shutil.rmtree(TOPO, ignore_errors=True)
        for k in ['xl-%s.log', 'qemu-dm-%s.log', 'console/guest-%s.log']:
            src = '/var/log/xen/' + k % dom
            if os.path.exists(src):
                shutil.copyfile(src, out + '/' + os.path.basename(src))
        _, dm = sh(['xl', 'dmesg', '-c'])
        write(out + '/xl-dmesg.txt', dm)
        try:
            with open(out + '/console.log', 'rb') as f:
                damaged = b'image: DAMAGED' in f.read()
        except OSError:
            damaged = False
        res['signature'] = signature(res, dm, domid, console.total if console else 0,
                                     damaged)
        for f in os.listdir(SCRATCH):
            if f.startswith(name + '-'):
                os.remove(SCRATCH + '/' + f)
    res['t_total'] = '%.1f' % (time.monotonic() - t_start)
    with open(out + '/result.txt', 'w') as f:
        for k, v in res.items():
            f.write('%s=%s\n' % (k, str(v).replace('\n', ' ')))
        for m in matches:
            f.write('match=%s\n' % m.replace('\n', ' '))
    say('scenario %s end %s in %ss [%s]%s' % (name, res['status'], res['t_total'],
                                              res.get('signature', '?'),
                                         '' if res['status'] == 'PASS' else
                                         ': %s: %s' % (res['failed_step'], res['message'])))
    drv.close()
    return res['status'] == 'PASS'


def signature(res, dm, domid, console_bytes, damaged_image=False):
    """What kind of failure this was, from the logs (for `cargo xtask testbed soak`):
    the nested-SVM signatures apart from the guest's own faults and test failures.
    `damaged_image`: Xenlet found its code or constants in memory differing from the
    built ones (`image: DAMAGED`, kernel/src/mm/image.rs) and stopped."""
    if res['status'] == 'PASS':
        return 'pass'
    msg = res.get('message', '')
    if re.search(r'Panic on CPU|FATAL PAGE FAULT|Xen BUG at', dm):
        return 'xen-panic'
    if damaged_image:
        return 'damaged-image'
    if domid is not None and (
            re.search(r'd%sv\d+ \w+ @ e008:ffff82d' % domid, dm) or re.search(
                r'd%sv\d+ Triple fault[^\n]*\n(?:[^\n]*\n){0,4}[^\n]*RIP:\s+e008:\[<ffff82d'
                % domid, dm)):
        return 'guest-on-xen-state'
    if res.get('pagewalk') == 'intact':
        return 'spurious-page-fault'
    step_kind = res.get('failed_step', '').split(' ')[0]   # 'boot 2': after a restart
    if domid is not None and 'd%sv0 Triple fault' % domid in dm:
        return ('triple-fault-before-prompt' if step_kind == 'boot'
                else 'triple-fault-in-guest')
    if 'still in real mode' in msg:
        return 'stuck-in-firmware'
    if 'never printed its banner (PVH' in msg:
        return 'silent-pvh-boot'
    if 'never printed its banner' in msg:
        return 'died-in-firmware'
    if 'crashed' in msg:
        return 'guest-crash'
    if console_bytes == 0 and step_kind in ('boot', 'create'):
        return 'silent'
    if msg.startswith('no prompt') or 'still running' in msg:
        return 'hang'
    if 'toolstack' in msg or step_kind == 'create':
        return 'toolstack'
    if msg.startswith('runner error'):
        return 'runner-error'
    return 'test-failure'


def subst(text, caps, literal):
    """${VAR} -> a captured value (regex-escaped when literal); unknown names are left
    as they are in a command (for bash) and fail in an expectation."""
    def one(m):
        if m.group(1) in caps:
            v = caps[m.group(1)]
            return re.escape(v) if literal else v
        if literal:
            raise Fail('setup', 'unknown variable ${%s} in /%s/' % (m.group(1), text))
        return m.group(0)
    return re.sub(r'\$\{(\w+)\}', one, text)


def strip_echo(text, sent):
    """The output without the guest's echo of the command line, which a line editor
    may have wrapped (extra newlines and spaces) at its terminal width."""
    i = j = 0
    while i < len(text) and j < len(sent):
        if text[i] == sent[j]:
            i += 1
            j += 1
        elif text[i] in '\n ':
            i += 1
        else:
            return text      # not an echo: keep everything
    if j < len(sent):
        return text
    return text[i:].lstrip('\n')


def check(expects, text, where, matches, log):
    """Every regex in expects must match text; records the matching lines. A regex
    that starts with \\A is matched against the whole text only (not line by line:
    `\\A...\\Z` says what the whole output must be)."""
    for rx in expects:
        if rx.startswith('\\A'):
            if not re.search(rx, text):
                raise Fail(where, 'expected the whole output to match /%s/, it does not' % rx)
            matches.append('/%s/ (the whole output) %r' % (rx, text.strip()[:200]))
            log('matched /%s/ (the whole output)' % rx)
            continue
        found = [ln for ln in text.split('\n') if re.search(rx, ln)]
        if not found and not re.search(rx, text, re.M):
            raise Fail(where, 'expected /%s/ in the output, not found' % rx)
        for ln in found or ['(multi-line match)']:
            matches.append('/%s/ %s' % (rx, ln.strip()))
            log('matched /%s/: %s' % (rx, ln.strip()))


def in_real_mode(domid):
    """'cs:rip' when the domain's vCPU 0 runs in real mode (CR0.PE clear), else ''.
    A guest kernel runs in protected or long mode; a boot that times out in real mode
    is stuck in SeaBIOS or GRUB (seen: SeaBIOS's ATA code polling the emulated IDE
    disk for minutes, right after "Booting from 0000:7c00", on the nested test bed)."""
    rc, text = sh('xen-hvmctx %s | head -40' % domid, timeout=60)
    m = re.search(r'cr0 0x([0-9a-f]+)', text)
    if rc or not m or int(m.group(1), 16) & 1:
        return ''
    cs = re.search(r'\bcs 0x([0-9a-f]+)', text)
    rip = re.search(r'rip 0x([0-9a-f]+)', text)
    return '%s:%s' % (cs.group(1) if cs else '?', rip.group(1)[-8:] if rip else '?')


def triple_state(domid, dm):
    """The vCPU state Xen dumped with a triple fault, in one line (RIP, RSP, CR2, CR3,
    CS), so a CI log tells the nested-SVM kind (Xen's own RIP) from a guest's own."""
    m = re.search(r'd%sv\d+ Triple fault[^\n]*\n((?:[^\n]*\n){1,16})' % domid, dm)
    if not m:
        return ''
    dump = m.group(1)
    got = []
    for key, rx in (('rip', r'RIP:\s+([0-9a-f]{4}:\[<[0-9a-f]+>\])'),
                    ('rsp', r'rsp: ([0-9a-f]+)'), ('cr2', r'cr2: ([0-9a-f]+)'),
                    ('cr3', r'cr3: ([0-9a-f]+)'), ('cs', r'cs: ([0-9a-f]+)')):
        v = re.search(rx, dump)
        if v:
            got.append('%s %s' % (key, v.group(1)))
    return ': ' + ', '.join(got) if got else ''


def diagnose(dom, out):
    """Xen's view of the domain into crash.txt. After a triple fault of a domain
    still there (on_reboot="preserve"), also its memory judged by pagewalk.py:
    returns 'intact' when the guest's own page tables map everything the fault's
    deliveries touch (so the fault is the emulated nested SVM's), 'explained' when
    they do not, 'not judged' otherwise."""
    parts = []
    # `xl debug-keys v` makes Xen dump the HVM vCPUs' VMCBs into its log (read next)
    for cmd in [['xl', 'list', '-v'], 'xen-hvmctx $(xl domid %s) | head -80' % dom,
                ['xl', 'debug-keys', 'v'], ['xl', 'dmesg']]:
        rc, text = sh(cmd, timeout=60)
        parts.append('$ %s (rc %d)\n%s' % (cmd if isinstance(cmd, str) else ' '.join(cmd),
                                           rc, text))
    dm = text
    verdict = 'not judged'
    rc, domid = sh(['xl', 'domid', dom], timeout=30)
    domid = domid.strip()
    if rc == 0 and 'd%sv0 Triple fault' % domid in dm:
        verdict, lines = pagewalk.read_and_judge(domid, dm)
        parts.append('$ pagewalk: the guest memory after its triple fault\n'
                     + '\n'.join(lines) + '\nverdict: ' + verdict)
        say('[%s] pagewalk verdict on the triple fault: %s (%s)' % (dom, verdict,
                                                                   lines[-1][:120]))
    write(out + '/crash.txt', '\n'.join(parts))   # despite the name: any failure
    return verdict


def main():
    global RUN_LOG, LIVE
    LIVE = os.path.exists(PAYLOAD + '/live')
    os.makedirs(RESULTS, exist_ok=True)
    RUN_LOG = open(RESULTS + '/run.log', 'a')
    with open(PAYLOAD + '/scenarios.json') as f:
        scenarios = json.load(f)
    say('runner started: %d scenario(s): %s' % (len(scenarios),
                                                 ' '.join(s['name'] for s in scenarios)))
    try:
        start_toolstack()
    except Fail as f:
        say('toolstack FAILED: %s' % f.message)
        write(RESULTS + '/toolstack-failed.txt', f.message + '\n')
        return 3
    say('toolstack up')
    if os.path.exists(PAYLOAD + '/interactive'):
        say('interactive dom0 shell (xl is on PATH, files in %s/files; exit to power off)'
            % PAYLOAD)
        with open('/dev/hvc0', 'r+b', buffering=0) as tty:
            subprocess.call(['setsid', '-c', 'bash', '-l'], stdin=tty, stdout=tty, stderr=tty,
                            cwd=PAYLOAD)
        return 0
    failed = [s['name'] for s in scenarios if not run_scenario(s)]
    _, dm = sh(['xl', 'dmesg'])
    write(RESULTS + '/xl-dmesg.txt', dm)
    say('all scenarios done; failed: %s' % (' '.join(failed) or 'none'))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
