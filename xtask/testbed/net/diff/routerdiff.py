#!/usr/bin/python3
"""The router differential: one corpus of crafted packets (corpus.py, made with scapy)
replayed through a router, and what comes out of each side written down in a form that
does not depend on which router it was; then two such records compared.

    routerdiff.py setup                    namespaces dlan (brlan) and dwan (brwan)
    routerdiff.py teardown
    routerdiff.py linux-up WAN             Linux routes: namespace rtr, fw4-diff.nft
    routerdiff.py linux-down
    routerdiff.py run NAME WAN OUT [--short]
    routerdiff.py compare A.json B.json KNOWN

`dlan` holds the LAN hosts L1 192.168.1.50, L2 .51 (the port forward's server) and
L3 .52; `dwan` the WAN host W1 10.77.0.50. Their kernels answer ARP and nothing else
(an nft table drops every IPv4 packet in and out): every IPv4 packet on their wires is
one the corpus sent or one the router made. The driver sends and listens on both at
once with AF_PACKET sockets opened inside each namespace (setns), so a case can
answer what the router sent (the masqueraded port) on the other side.

What comes out is written as lines such as
    wan  R.wan > W1 udp 40000 > 9000 len 5 ttl 63
with the addresses named (R.lan, R.wan, L1, W1, ...; the router's WAN address differs
between the two routers), ports the corpus did not choose numbered in order of
appearance (P1, P2, ...), IP ids and checksums left out but a wrong checksum marked
BADSUM. The router's own traffic (DHCP, DNS, ARP, neighbour discovery, MLD, router
advertisements) is not the corpus' and is ignored. Addresses BRNS: the namespace
holding brlan and brwan (default: this one).

IPv6 (corpus.CASES6) runs when the environment gives DIFF_LAN6 (the router's LAN
/64, its first three groups: L1..L3 at ::50..::52 of it, the router at ::1) and
DIFF_WAN6 (the router's address on brwan's 2001:db8:77::/64; W1 is 2001:db8:77::50).
The hosts' kernels then answer neighbour solicitations and drop every other IPv6
packet. An IPv6 line reads
    wan  L1 > W1 udp 40100 > 9000 len 6 hlim 63 plen 14
with the extension headers in order (hbh, rt0 segleft 1, dst, frag 0+), ICMPv6
errors with their quote; R.lan6 is the router's LAN address, R.wan6 any of its
addresses on brwan's /64.
"""

import ctypes
import json
import os
import select
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from scapy.all import ARP, Ether, ICMP, IP, IPerror, Raw, TCP, UDP  # noqa: E402
from scapy.layers.inet import TCPerror, UDPerror  # noqa: E402
from scapy.layers.inet6 import (  # noqa: E402
    IPerror6, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting, _ICMPv6,
)

import corpus  # noqa: E402

CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_AUXDATA = 8
# tpacket_auxdata.tp_status: the checksum is left to hardware (a partial checksum the
# sender's virtual NIC never filled in): not a verdict on the packet
TP_STATUS_CSUMNOTREADY = 8
BRNS = os.environ.get("BRNS", "")

LAN_HOSTS = {"L1": "192.168.1.50", "L2": "192.168.1.51", "L3": "192.168.1.52"}
WAN_HOSTS = {"W1": "10.77.0.50"}
R_LAN = "192.168.1.1"
# IPv6: the LAN /64's first three groups and the router's WAN address, if given
LAN6 = os.environ.get("DIFF_LAN6", "")
WAN6 = os.environ.get("DIFF_WAN6", "")
WAN6_NET = "2001:db8:77::"
W1_6 = "2001:db8:77::50"


def lan6_hosts():
    return {k: f"{LAN6}::{v}" for k, v in (("L1", "50"), ("L2", "51"), ("L3", "52"))} if LAN6 else {}


def sh(cmd, check=True):
    r = subprocess.run(cmd, shell=True, text=True, capture_output=True)
    if check and r.returncode != 0:
        raise SystemExit(f"routerdiff: `{cmd}` failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def brcmd(cmd):
    """A command in the namespace of the bridges."""
    return f"ip netns exec {BRNS} {cmd}" if BRNS else cmd


# ------------------------------------------------------------------ topology

QUIET = """table inet quiet {
 chain in { type filter hook prerouting priority -400; policy accept; meta nfproto ipv4 drop;
  icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept; meta nfproto ipv6 drop; }
 chain out { type filter hook output priority -400; policy accept; meta nfproto ipv4 drop;
  icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept; meta nfproto ipv6 drop; }
}"""


def mkhost(ns, bridge, peer, addrs, addrs6=()):
    sh(f"ip netns add {ns}")
    sh(brcmd(f"ip link add {peer} type veth peer name eth0"))
    sh(brcmd(f"ip link set eth0 netns {ns}"))
    sh(brcmd(f"ip link set {peer} master {bridge} up"))
    if addrs6:
        # IPv6 for neighbour discovery only: no router advertisements taken, no
        # addresses of their own, no duplicate address detection
        for c in ("all", "default", "eth0"):
            for k, v in (("accept_ra", 0), ("autoconf", 0), ("accept_dad", 0), ("dad_transmits", 0)):
                sh(f"ip netns exec {ns} sysctl -qw net.ipv6.conf.{c}.{k}={v}")
    else:
        sh(f"ip netns exec {ns} sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        sh(f"ip netns exec {ns} sysctl -qw net.ipv6.conf.default.disable_ipv6=1")
    sh(f"ip netns exec {ns} ip link set lo up")
    sh(f"ip netns exec {ns} ip link set eth0 up")
    for a in addrs:
        sh(f"ip netns exec {ns} ip addr add {a} dev eth0")
    for a in addrs6:
        sh(f"ip netns exec {ns} ip -6 addr add {a} dev eth0 nodad")
    # ARP answers for every address on the wire, none for others (arp_ignore 1 as
    # OpenWrt's hosts would); no IPv4 in or out of this kernel
    sh(f"ip netns exec {ns} sysctl -qw net.ipv4.conf.eth0.arp_ignore=1")
    r = subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=QUIET, text=True,
                       capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"routerdiff: nft in {ns}: {r.stderr.strip()}")


BRNF = "/proc/sys/net/bridge/bridge-nf-call-iptables"
BRNF_SAVED = "/run/routerdiff-brnf"


def setup():
    teardown(quiet=True)
    # the bridges are plain wires while the corpus runs: with br_netfilter, dom0's own
    # netfilter would see (and reassemble) bridged packets before either router
    # (OpenWrt's sysctl turns bridge-nf-call-iptables off too); restored at teardown
    if not BRNS and os.path.exists(BRNF):
        with open(BRNF) as f, open(BRNF_SAVED, "w") as saved:
            saved.write(f.read())
        with open(BRNF, "w") as f:
            f.write("0\n")
    v6 = bool(LAN6)
    mkhost("dlan", "brlan", "vdl", [f"{a}/24" for a in LAN_HOSTS.values()],
           [f"{a}/64" for a in lan6_hosts().values()] if v6 else ())
    mkhost("dwan", "brwan", "vdw", [f"{a}/24" for a in WAN_HOSTS.values()],
           [f"{W1_6}/64"] if v6 else ())
    print(f"routerdiff: dlan (L1 L2 L3 on brlan) and dwan (W1 on brwan){' with IPv6' if v6 else ''} up")


def teardown(quiet=False):
    for ns in ("dlan", "dwan"):
        subprocess.run(f"ip netns del {ns}", shell=True, capture_output=True)
    for l in ("vdl", "vdw"):
        subprocess.run(brcmd(f"ip link del {l}"), shell=True, capture_output=True)
    if os.path.exists(BRNF_SAVED):
        with open(BRNF_SAVED) as saved, open(BRNF, "w") as f:
            f.write(saved.read())
        os.unlink(BRNF_SAVED)
    if not quiet:
        print("routerdiff: down")


def linux_up(wan):
    """Linux as the router: a namespace rtr on both bridges with the image's
    firewall as fw4 renders it (fw4-diff.nft), OpenWrt's routing sysctls."""
    linux_down(quiet=True)
    sh("ip netns add rtr")
    for dev, peer, br in (("eth0", "vrl", "brlan"), ("eth1", "vrw", "brwan")):
        sh(brcmd(f"ip link add {peer} type veth peer name {dev}"))
        sh(brcmd(f"ip link set {dev} netns rtr"))
        sh(brcmd(f"ip link set {peer} master {br} up"))
    v6 = ("net.ipv6.conf.all.forwarding=1", "net.ipv6.conf.all.accept_ra=0",
          "net.ipv6.conf.default.accept_ra=0", "net.ipv6.conf.default.accept_dad=0",
          "net.ipv6.conf.all.accept_dad=0") if LAN6 else (
        "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
    for s in v6 + ("net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0",
                   "net.ipv4.conf.default.rp_filter=0"):
        sh(f"ip netns exec rtr sysctl -qw {s}")
    cmds = ["ip link set lo up", "ip link set eth0 up", "ip link set eth1 up",
            "ip addr add 192.168.1.1/24 dev eth0", f"ip addr add {wan}/24 dev eth1",
            "ip route add default via 10.77.0.10"]
    if LAN6:
        # the same addresses as the Xenlet router's: its LAN ::1, its WAN SLAAC one
        cmds += [f"ip -6 addr add {LAN6}::1/64 dev eth0 nodad",
                 f"ip -6 addr add {WAN6}/64 dev eth1 nodad",
                 "ip -6 route add default via 2001:db8:77::10 dev eth1"]
    for cmd in cmds:
        sh(f"ip netns exec rtr {cmd}")
    with open(os.path.join(HERE, "fw4-diff.nft")) as f:
        rules = f.read().replace("@WAN@", wan)
    r = subprocess.run(["ip", "netns", "exec", "rtr", "nft", "-f", "-"], input=rules, text=True,
                       capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"routerdiff: nft -f fw4-diff.nft: {r.stderr.strip()}")
    # OpenWrt's conntrack sysctls (package/kernel/linux/files/sysctl-nf-conntrack.conf)
    # that change what a packet meets: no checksum verification by conntrack
    sh("ip netns exec rtr sysctl -qw net.netfilter.nf_conntrack_checksum=0")
    n = sh("ip netns exec rtr nft list ruleset").count("chain ")
    print(f"routerdiff: Linux routes in namespace rtr (lan 192.168.1.1, wan {wan}), fw4: {n} chains")


def linux_down(quiet=False):
    subprocess.run("ip netns del rtr", shell=True, capture_output=True)
    for l in ("vrl", "vrw"):
        subprocess.run(brcmd(f"ip link del {l}"), shell=True, capture_output=True)
    if not quiet:
        print("routerdiff: Linux router down")


# ------------------------------------------------------------------ the wires

_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def setns(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"setns {path}: {os.strerror(e)}")
    finally:
        os.close(fd)


class Wire:
    """eth0 of a namespace: frames sent raw, frames heard (not our own)."""

    def __init__(self, side, ns):
        self.side = side
        home = "/proc/self/ns/net"
        home_fd = os.open(home, os.O_RDONLY)
        try:
            setns(f"/var/run/netns/{ns}")
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            self.sock.bind(("eth0", 0))
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            self.sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            # (not /sys/class/net: sysfs stays the one mounted in the first namespace)
            self.mac = ":".join(f"{b:02x}" for b in self.sock.getsockname()[4])
        finally:
            if _libc.setns(home_fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
            os.close(home_fd)
        self.sock.setblocking(False)

    def send(self, frame):
        self.sock.send(bytes(frame))

    def drain(self):
        while True:
            try:
                self.sock.recvfrom(65535)
            except BlockingIOError:
                return

    def recv(self):
        """One frame heard, or None: (bytes, whether its checksums are complete)."""
        while True:
            try:
                data, anc, _, addr = self.sock.recvmsg(65535, socket.CMSG_SPACE(20))
            except BlockingIOError:
                return None
            if addr[2] == PACKET_OUTGOING:
                continue
            ready = True
            for level, kind, value in anc:
                if level == SOL_PACKET and kind == PACKET_AUXDATA and len(value) >= 4:
                    ready = not (int.from_bytes(value[:4], "little") & TP_STATUS_CSUMNOTREADY)
            return data, ready


def listen(wires, quiet_s, max_s):
    """Frames heard on `wires` until none came for `quiet_s` (or `max_s` passed)."""
    heard = []
    start = last = time.monotonic()
    socks = {w.sock: w for w in wires}
    while True:
        now = time.monotonic()
        if now - last >= quiet_s or now - start >= max_s:
            return heard
        r, _, _ = select.select(list(socks), [], [], min(quiet_s - (now - last), 0.05))
        for s in r:
            w = socks[s]
            while True:
                f = w.recv()
                if f is None:
                    break
                heard.append((w.side, f[0], f[1]))
                last = time.monotonic()


# ------------------------------------------------------------------ naming what came out

class Namer:
    def __init__(self, rwan):
        self.addr = {R_LAN: "R.lan", rwan: "R.wan"}
        self.addr.update({v: k for k, v in LAN_HOSTS.items()})
        self.addr.update({v: k for k, v in WAN_HOSTS.items()})
        self.addr.update({v: k for k, v in corpus.OTHER_ADDRS.items()})
        self.addr6 = {}
        if LAN6:
            self.addr6 = {norm6(v): k for k, v in lan6_hosts().items()}
            self.addr6[norm6(f"{LAN6}::1")] = "R.lan6"
            self.addr6[norm6(W1_6)] = "W1"
        self.ports = {}

    def a(self, ip):
        return self.addr.get(ip)

    def a6(self, ip):
        """An IPv6 address's name: the hosts, R.lan6, R.wan6 (any other address of
        brwan's /64 but wan's and dom0's), else None (not the corpus')."""
        n = norm6(ip)
        if n in self.addr6:
            return self.addr6[n]
        if n[:16] == norm6(WAN6_NET)[:16] and n not in (norm6("2001:db8:77::10"),
                                                               norm6("2001:db8:77::1")):
            return "R.wan6"
        return None

    def p(self, port):
        if port in corpus.PORTS:
            return str(port)
        if port not in self.ports:
            self.ports[port] = f"P{len(self.ports) + 1}"
        return self.ports[port]


def norm6(a):
    """An IPv6 address as 32 hex digits (for comparing; its first 16 are its /64)."""
    return socket.inet_pton(socket.AF_INET6, a).hex()


EXT6 = (IPv6ExtHdrHopByHop, IPv6ExtHdrDestOpt, IPv6ExtHdrRouting, IPv6ExtHdrFragment)
# neighbour discovery, router discovery and MLD: the routers' own
ICMP6_OWN = {130, 131, 132, 133, 134, 135, 136, 137, 143}


def describe6_l4(n, p, inner=False):
    """Words for the headers after the fixed IPv6 one (p: its payload)."""
    words = []
    while isinstance(p, EXT6):
        if isinstance(p, IPv6ExtHdrHopByHop):
            words.append("hbh")
        elif isinstance(p, IPv6ExtHdrDestOpt):
            words.append("dst")
        elif isinstance(p, IPv6ExtHdrRouting):
            words.append(f"rt{p.type} segleft {p.segleft}")
        else:
            words.append(f"frag {p.offset * 8}{'+' if p.m else ''}")
            if p.offset:
                return words
        p = p.payload
    if isinstance(p, (TCP, TCPerror)):
        words += ["tcp", n.p(p.sport), ">", n.p(p.dport), f"flags {p.flags}"]
        if not inner:
            words += [f"seq {p.seq}", f"ack {p.ack}"]
    elif isinstance(p, (UDP, UDPerror)):
        words += ["udp", n.p(p.sport), ">", n.p(p.dport)]
        if not inner and isinstance(p.payload, Raw):
            words.append(f"len {len(p.payload.load)}")
    elif isinstance(p, _ICMPv6):
        words += ["icmp6", f"type {p.type}", f"code {p.code}"]
        if p.type in (128, 129) and not inner:
            words += [f"id {n.p(p.id)}", f"seq {p.seq}"]
        elif p.type == 2:
            words.append(f"mtu {p.mtu}")
        elif p.type == 4:
            words.append(f"ptr {p.ptr}")
        if p.type < 128 and not inner:
            quote = bytes(p.payload)
            words.append(f"quote {len(quote)}")
            if len(quote) >= 40:
                q = IPerror6(quote)
                qs, qd = n.a6(q.src) or q.src, n.a6(q.dst) or q.dst
                words += ["[", qs, ">", qd] + describe6_l4(n, q.payload, inner=True) + [
                    f"hlim {q.hlim}", "]"]
    else:
        words.append("raw" if isinstance(p, Raw) else f"{p.__class__.__name__}")
    return words


def describe6(n, side, e):
    ip = e[IPv6]
    src, dst = n.a6(ip.src), n.a6(ip.dst)
    if src is None or dst is None:
        return None
    p, nh = ip.payload, ip.nh
    while isinstance(p, EXT6):
        p, nh = p.payload, p.nh
    head = bytes(p)[:1]
    if nh == 58 and head and head[0] in ICMP6_OWN:
        return None
    words = [side, src, ">", dst] + describe6_l4(n, ip.payload)
    words += [f"hlim {ip.hlim}", f"plen {ip.plen}"]
    return " ".join(str(w) for w in words)


def checksum_ok(pkt, layer):
    """Whether `layer`'s checksum in `pkt` is what scapy computes."""
    l = pkt[layer]
    got = l.chksum
    c = l.copy()
    c.chksum = None
    if layer is IP:
        fresh = IP(bytes(c))
    else:
        ip = pkt[IP].copy()
        ip.remove_payload()
        fresh = IP(bytes(ip / c))[layer]
    return fresh.chksum == got


def describe_l4(n, p, inner=False):
    """Words for p's transport header (p an IP or IPerror layer)."""
    words = []
    if p.proto == 6 and p.haslayer(TCPerror if inner else TCP):
        t = p[TCPerror if inner else TCP]
        words += ["tcp", n.p(t.sport), ">", n.p(t.dport), f"flags {t.flags}"]
        if not inner:
            words += [f"seq {t.seq}", f"ack {t.ack}"]
            mss = [v for k, v in t.options if k == "MSS"]
            if mss:
                words.append(f"mss {mss[0]}")
    elif p.proto == 17 and p.haslayer(UDPerror if inner else UDP):
        u = p[UDPerror if inner else UDP]
        words += ["udp", n.p(u.sport), ">", n.p(u.dport)]
    elif p.proto == 1 and not inner and p.haslayer(ICMP):
        i = p[ICMP]
        words += ["icmp", f"type {i.type}", f"code {i.code}"]
        if i.type in (0, 8):
            words += [f"id {n.p(i.id)}", f"seq {i.seq}"]
        elif i.type == 3 and i.code == 4:
            words.append(f"mtu {i.nexthopmtu}")
    elif p.proto == 1 and inner:
        words.append("icmp")
    else:
        words.append(f"proto {p.proto}")
    return words


def describe(n, side, frame, sums_ready=True):
    """One line for a frame the corpus is about, or None for the router's own
    traffic and anything else not ours. `sums_ready`: whether the transport checksum
    was filled in (else only the IP header's is checked)."""
    e = Ether(frame)
    if e.haslayer(IPv6) and not e.haslayer(IP):
        return describe6(n, side, e) if LAN6 else None
    if not e.haslayer(IP):
        return None
    ip = e[IP]
    src, dst = n.a(ip.src), n.a(ip.dst)
    if src is None or dst is None:
        return None
    words = [side, src, ">", dst]
    if ip.frag or ip.flags.MF:
        words += [f"frag {ip.frag * 8}{'+' if ip.flags.MF else ''}", f"iplen {ip.len}"]
        if ip.frag == 0:
            words += describe_l4(n, ip)
    else:
        words += describe_l4(n, ip)
        payload = ip.payload
        if ip.proto == 1 and ip.haslayer(ICMP) and ip[ICMP].type in (3, 11, 12):
            quote = bytes(ip[ICMP].payload)
            words.append(f"quote {len(quote)}")
            q = IPerror(quote) if len(quote) >= 20 else None
            if q is not None:
                qs, qd = n.a(q.src) or q.src, n.a(q.dst) or q.dst
                words += ["[", qs, ">", qd] + describe_l4(n, q, inner=True) + [f"ttl {q.ttl}", "]"]
        else:
            while payload is not None and not isinstance(payload, Raw) and payload.payload:
                payload = payload.payload
            if isinstance(payload, Raw):
                words.append(f"len {len(payload.load)}")
    words.append(f"ttl {ip.ttl}")
    if ip.flags.DF:
        words.append("DF")
    if ip.ihl > 5:
        words.append(f"options {(ip.ihl - 5) * 4}")
    sums = [IP]
    if sums_ready and not (ip.frag or ip.flags.MF):
        sums += [l for l in (TCP, UDP, ICMP) if ip.haslayer(l)][:1]
    for l in sums:
        try:
            ok = checksum_ok(e, l)
        except Exception:  # a header scapy cannot rebuild is not a checksum verdict
            ok = True
        if not ok:
            words.append(f"BADSUM({l.__name__})")
    return " ".join(str(w) for w in words)


# ------------------------------------------------------------------ running the corpus

class Ctx:
    """What a case's packets are built from: the two wires, the router's MACs and
    WAN address, and what earlier packets showed (the masqueraded ports)."""

    def __init__(self, lan, wan, rwan):
        self.lan, self.wan, self.rwan = lan, wan, rwan
        self.lan6, self.rwan6 = LAN6, WAN6
        self.rlan_mac = None
        self.rwan_mac = None
        self.seen = {}  # name -> value noted by a case

    def to_router_lan(self, src_host="L1"):
        return Ether(src=self.lan.mac, dst=self.rlan_mac)

    def to_router_wan(self):
        return Ether(src=self.wan.mac, dst=self.rwan_mac)


def arp_mac(wire, src_ip, target_ip):
    for _ in range(6):
        wire.drain()
        wire.send(Ether(src=wire.mac, dst="ff:ff:ff:ff:ff:ff")
                  / ARP(op=1, hwsrc=wire.mac, psrc=src_ip, pdst=target_ip))
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            select.select([wire.sock], [], [], 0.05)
            f = wire.recv()
            while f is not None:
                e = Ether(f[0])
                if e.haslayer(ARP) and e[ARP].op == 2 and e[ARP].psrc == target_ip:
                    return e[ARP].hwsrc
                f = wire.recv()
    raise SystemExit(f"routerdiff: no ARP answer from {target_ip} on {wire.side}")


def run(name, rwan, out, short):
    lan, wan = Wire("lan", "dlan"), Wire("wan", "dwan")
    ctx = Ctx(lan, wan, rwan)
    ctx.rlan_mac = arp_mac(lan, LAN_HOSTS["L1"], R_LAN)
    ctx.rwan_mac = arp_mac(wan, WAN_HOSTS["W1"], rwan)
    n = Namer(rwan)
    record = {"router": name, "cases": {}}
    cases = [c for c in corpus.CASES + (corpus.CASES6 if LAN6 else []) if c.short or not short]
    print(f"routerdiff: {name}: {len(cases)} cases (router lan {ctx.rlan_mac}, wan {rwan} {ctx.rwan_mac})",
          flush=True)
    for i, case in enumerate(cases):
        lines = []
        for j, step in enumerate(case.steps):
            lan.drain()
            wan.drain()
            side, frames = step(ctx)
            wire = lan if side == "lan" else wan
            for f in frames:
                wire.send(f)
            heard = listen([lan, wan], corpus.QUIET_S, corpus.MAX_S)
            said = [d for d in (describe(n, s, f, ok) for s, f, ok in heard) if d]
            # what a later step answers (a masqueraded port) is noted from the frames
            if case.note:
                case.note(ctx, j, [Ether(f) for s, f, _ in heard])
            lines += [f"{j}: {d}" for d in sorted(said)] or [f"{j}: (nothing)"]
        record["cases"][case.name] = lines
        print(f"  [{i + 1}/{len(cases)}] {case.name}: " + " | ".join(lines), flush=True)
        time.sleep(corpus.GAP_S)
    with open(out, "w") as f:
        json.dump(record, f, indent=1)
    print(f"routerdiff: {name}: {len(cases)} cases written to {out}")


# ------------------------------------------------------------------ comparing

def load_known(path):
    """`case: reason` lines (# comments): differences that are choices."""
    known = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                case, reason = line.split(":", 1)
                known[case.strip()] = reason.strip()
    return known


def compare(a_path, b_path, known_path):
    a, b = json.load(open(a_path)), json.load(open(b_path))
    known = load_known(known_path)
    names = [c for c in a["cases"] if c in b["cases"]]
    missing = sorted(set(a["cases"]) ^ set(b["cases"]))
    same = unexplained = explained = 0
    vanished = []
    for c in names:
        la, lb = a["cases"][c], b["cases"][c]
        if la == lb:
            same += 1
            if c in known:
                vanished.append(c)
            continue
        if c in known:
            explained += 1
            print(f"differs (known) {c}: {known[c]}")
        else:
            unexplained += 1
            print(f"DIFFERS {c}:")
        for line in la:
            print(f"    {a['router']:>6}{'  ' if line in lb else ' *'} {line}")
        for line in lb:
            print(f"    {b['router']:>6}{'  ' if line in la else ' *'} {line}")
    for c in vanished:
        print(f"known difference no longer differs: {c} (take it out of {os.path.basename(known_path)})")
    for c in missing:
        print(f"case run by one router only: {c}")
    print(f"routerdiff: {len(names)} cases: {same} the same, {explained} known differences, "
          f"{unexplained} unexplained, {len(vanished)} known but gone, {len(missing)} run by one only")
    return 0 if unexplained == 0 and not vanished and not missing else 1


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    cmd = argv[1]
    if cmd == "setup":
        setup()
    elif cmd == "teardown":
        teardown()
    elif cmd == "linux-up":
        linux_up(argv[2])
    elif cmd == "linux-down":
        linux_down()
    elif cmd == "run":
        run(argv[2], argv[3], argv[4], "--short" in argv[5:])
    elif cmd == "compare":
        sys.exit(compare(argv[2], argv[3], argv[4]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
