"""The corpus of the router differential (routerdiff.py): crafted packets sent into a
router from the LAN (hosts L1 192.168.1.50, L2 .51, L3 .52 on brlan) and the WAN (W1
10.77.0.50 on brwan), made with scapy.

A case is a list of steps; a step is a function of the context returning the side
it sends on and its frames. After each step the driver listens on both sides until
they are quiet, and writes down what the router let out. Cases run in this order
and build on each other where they say so (the TCP cases share one connection).
`short` cases are the ones `cargo xtask test` runs (router-diff-short).

The router's firewall is the image's (/etc/config/firewall: fw4's defaults, wan
REJECT with masquerade and mtu_fix) plus one port forward, Forward-8080: wan tcp 8080
-> L2:80, with reflection.
"""

from scapy.all import ICMP, IP, IPOption_RR, Raw, TCP, UDP, fragment  # noqa: F401

# seconds: quiet time that ends a step, the longest a step listens, a pause between cases
QUIET_S = 0.6
MAX_S = 3.0
GAP_S = 0.1

L1, L2, L3 = "192.168.1.50", "192.168.1.51", "192.168.1.52"
W1 = "10.77.0.50"
R_LAN = "192.168.1.1"
# addresses cases forge, named in the record
OTHER_ADDRS = {"S.lan": "192.168.1.77", "S.wan": "10.77.0.66", "lo": "127.0.0.1"}

# ports the corpus chooses (written as numbers); any other port is a router's choice
PORTS = {40000, 40001, 40002, 40003, 40004, 40005, 40010, 40020, 40030, 41234, 9000, 9999, 80,
         8080, 22, 5555, 5556, 7, 0, 77, 78, 4242} | set(range(40100, 40110))


class Case:
    def __init__(self, name, steps, short=False, note=None):
        self.name, self.steps, self.short, self.note = name, steps, short, note


def lan(ctx, pkt, src_mac=None):
    e = ctx.to_router_lan()
    return e / pkt


def wan(ctx, pkt):
    return ctx.to_router_wan() / pkt


def note_wan_port(key, proto):
    """Notes the source port (or echo id) the router gave a flow leaving by the WAN."""
    def note(ctx, step, frames):
        for f in frames:
            if f.haslayer(IP) and f[IP].dst == W1 and f[IP].src == ctx.rwan:
                if proto is UDP and f.haslayer(UDP):
                    ctx.seen[key] = f[UDP].sport
                elif proto is TCP and f.haslayer(TCP):
                    ctx.seen[key] = f[TCP].sport
                elif proto is ICMP and f.haslayer(ICMP) and f[ICMP].type == 8:
                    ctx.seen[key] = f[ICMP].id
    return note


def port(ctx, key, default):
    """A port an earlier step noted (a router that let nothing out gets `default`)."""
    return ctx.seen.get(key, default)


# ---------------------------------------------------------------- UDP through NAT

def udp_out(ctx):
    return "lan", [lan(ctx, IP(src=L1, dst=W1) / UDP(sport=40000, dport=9000) / Raw(b"hello"))]


def udp_reply(ctx):
    p = port(ctx, "udp", 40000)
    return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan) / UDP(sport=9000, dport=p) / Raw(b"world"))]


def quote_of_udp(ctx, sport, outer_dst=None, icmp_type=3, code=3):
    inner = IP(src=ctx.rwan, dst=W1, ttl=63) / UDP(sport=sport, dport=9000) / Raw(b"hello")
    return IP(src=W1, dst=outer_dst or ctx.rwan) / ICMP(type=icmp_type, code=code) / bytes(inner)


def icmp_error_live(ctx):
    return "wan", [wan(ctx, quote_of_udp(ctx, port(ctx, "udp", 40000)))]


def icmp_error_dead(ctx):
    return "wan", [wan(ctx, quote_of_udp(ctx, 41234))]


def icmp_error_other_outer(ctx):
    # quotes L1's live flow but is addressed to L2: not the flow's end
    return "wan", [wan(ctx, quote_of_udp(ctx, port(ctx, "udp", 40000), outer_dst=L2))]


def icmp_error_bad_checksum(ctx):
    pkt = quote_of_udp(ctx, port(ctx, "udp", 40000))
    pkt[ICMP].chksum = 0x1234
    return "wan", [wan(ctx, pkt)]


def icmp_redirect_live(ctx):
    pkt = quote_of_udp(ctx, port(ctx, "udp", 40000), icmp_type=5, code=1)
    pkt[ICMP].gw = W1
    return "wan", [wan(ctx, pkt)]


# ---------------------------------------------------------------- TTL, options, checksums

def ttl1_from_lan(ctx):
    return "lan", [lan(ctx, IP(src=L1, dst=W1, ttl=1) / UDP(sport=40001, dport=9000) / Raw(b"ttl"))]


def ttl1_tcp_from_lan(ctx):
    return "lan", [lan(ctx, IP(src=L1, dst=W1, ttl=1) / TCP(sport=40003, dport=80, flags="S",
                                                           seq=77))]


def ttl1_to_port_forward(ctx):
    return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan, ttl=1) / TCP(sport=5555, dport=8080,
                                                                  flags="S", seq=900))]


def options_from_lan(ctx):
    return "lan", [lan(ctx, IP(src=L1, dst=W1, options=[IPOption_RR(routers=["0.0.0.0"] * 2)])
                       / UDP(sport=40004, dport=9000) / Raw(b"rr"))]


def bad_udp_checksum_from_lan(ctx):
    pkt = IP(src=L1, dst=W1) / UDP(sport=40005, dport=9000, chksum=0x4321) / Raw(b"bad")
    return "lan", [lan(ctx, pkt)]


def df_from_lan(ctx):
    return "lan", [lan(ctx, IP(src=L1, dst=W1, flags="DF") / UDP(sport=40001, dport=9000)
                       / Raw(b"x" * 1400))]


# ---------------------------------------------------------------- fragments

def big_udp(sport, ident):
    return IP(src=L1, dst=W1, id=ident) / UDP(sport=sport, dport=9000) / Raw(bytes(range(256)) * 12)


def frags_from_lan(ctx):
    return "lan", [lan(ctx, f) for f in fragment(big_udp(40002, 1001), fragsize=1480)]


def frags_reversed_from_lan(ctx):
    return "lan", [lan(ctx, f) for f in reversed(fragment(big_udp(40002, 1002), fragsize=1480))]


def frags_overlapping_from_lan(ctx):
    fs = fragment(big_udp(40002, 1003), fragsize=1480)
    # the second fragment again, starting 8 bytes early: an overlap, not a duplicate
    ov = fs[1].copy()
    ov.frag -= 1
    ov.remove_payload()
    body = bytes(fs[0][IP].payload)[-8:] + bytes(fs[1][IP].payload)[:-8]
    ov = ov / Raw(body)
    ov.proto = 17  # scapy would take it from the payload, now raw bytes
    ov.len = None
    ov.chksum = None
    return "lan", [lan(ctx, fs[0]), lan(ctx, ov), lan(ctx, fs[1]), lan(ctx, fs[2])]


def frags_duplicate_from_lan(ctx):
    fs = fragment(big_udp(40002, 1004), fragsize=1480)
    return "lan", [lan(ctx, fs[0]), lan(ctx, fs[1]), lan(ctx, fs[1]), lan(ctx, fs[2])]


def frag_alone_from_lan(ctx):
    # a middle fragment whose datagram never completes
    fs = fragment(big_udp(40002, 1005), fragsize=1480)
    return "lan", [lan(ctx, fs[1])]


# ---------------------------------------------------------------- one TCP connection

C_ISN, S_ISN = 1000, 500000


def tcp_syn(ctx):
    return "lan", [lan(ctx, IP(src=L1, dst=W1) / TCP(sport=40010, dport=80, flags="S", seq=C_ISN,
                                                     window=64240, options=[("MSS", 1460)]))]


def tcp_synack(ctx):
    p = port(ctx, "tcp", 40010)
    return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan) / TCP(sport=80, dport=p, flags="SA", seq=S_ISN,
                                                           ack=C_ISN + 1, window=65000,
                                                           options=[("MSS", 1460)]))]


def tcp_ack(ctx):
    return "lan", [lan(ctx, IP(src=L1, dst=W1) / TCP(sport=40010, dport=80, flags="A",
                                                     seq=C_ISN + 1, ack=S_ISN + 1, window=64240))]


def tcp_from_server(flags, seq, data=b"", ack=C_ISN + 1):
    def step(ctx):
        p = port(ctx, "tcp", 40010)
        return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan) / TCP(sport=80, dport=p, flags=flags,
                                                               seq=seq, ack=ack, window=65000)
                           / Raw(data))]
    return step


def tcp_client_data(ctx):
    return "lan", [lan(ctx, IP(src=L1, dst=W1) / TCP(sport=40010, dport=80, flags="PA",
                                                     seq=C_ISN + 1, ack=S_ISN + 1, window=64240)
                       / Raw(b"GET /"))]


def tcp_frag_needed(ctx):
    p = port(ctx, "tcp", 40010)
    inner = IP(src=ctx.rwan, dst=W1, ttl=63) / TCP(sport=p, dport=80, flags="PA", seq=C_ISN + 1,
                                                    ack=S_ISN + 1)
    return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan) / ICMP(type=3, code=4, nexthopmtu=1280)
                       / bytes(inner)[:28])]


# ---------------------------------------------------------------- the WAN knocks

def wan_syn_closed(ctx):
    return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan) / TCP(sport=5555, dport=22, flags="S", seq=7))]


def wan_udp_closed(ctx):
    return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan) / UDP(sport=5555, dport=9999) / Raw(b"knock"))]


def wan_ping(ctx):
    return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan) / ICMP(type=8, id=77, seq=1) / Raw(b"ping"))]


def wan_to_lan_address(ctx):
    # straight at a LAN address through the router's WAN MAC
    return "wan", [wan(ctx, IP(src=W1, dst=L1) / TCP(sport=5555, dport=80, flags="S", seq=7))]


def wan_udp_to_lan_address(ctx):
    # rejected by the wan zone's forward policy: the port-unreachable quotes the
    # datagram as the forward hook saw it, its TTL already taken down (64 -> 63)
    return "wan", [wan(ctx, IP(src=W1, dst=L1, ttl=64) / UDP(sport=5555, dport=9999) / Raw(b"knock"))]


def wan_spoofs_lan_source(ctx):
    return "wan", [wan(ctx, IP(src=OTHER_ADDRS["S.lan"], dst=ctx.rwan) / UDP(sport=5555, dport=9999)
                       / Raw(b"spoof"))]


def wan_ack_no_flow(ctx):
    return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan) / TCP(sport=5555, dport=41234, flags="A",
                                                           seq=1, ack=1))]


# ---------------------------------------------------------------- the LAN misbehaves

def lan_spoofs_wan_source(ctx):
    return "lan", [lan(ctx, IP(src=OTHER_ADDRS["S.wan"], dst=W1) / UDP(sport=40030, dport=9000)
                       / Raw(b"spoof"))]


def lan_loopback_source(ctx):
    return "lan", [lan(ctx, IP(src="127.0.0.1", dst=W1) / UDP(sport=40030, dport=9000)
                       / Raw(b"martian"))]


def lan_to_router_closed_udp(ctx):
    return "lan", [lan(ctx, IP(src=L1, dst=R_LAN) / UDP(sport=40030, dport=9999) / Raw(b"?"))]


def lan_ping(ctx):
    return "lan", [lan(ctx, IP(src=L1, dst=W1) / ICMP(type=8, id=4242, seq=1) / Raw(b"ping"))]


def lan_ping_reply(ctx):
    i = port(ctx, "echo", 4242)
    return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan) / ICMP(type=0, id=i, seq=1) / Raw(b"ping"))]


# ---------------------------------------------------------------- the port forward

def fwd_syn(ctx):
    return "wan", [wan(ctx, IP(src=W1, dst=ctx.rwan) / TCP(sport=5556, dport=8080, flags="S", seq=300,
                                                           options=[("MSS", 1460)]))]


def fwd_synack(ctx):
    return "lan", [lan(ctx, IP(src=L2, dst=W1) / TCP(sport=80, dport=5556, flags="SA", seq=700,
                                                     ack=301, options=[("MSS", 1460)]))]


def fwd_icmp_error_from_server(ctx):
    # the server of the port forward refuses what it was sent: the error leaves by
    # the WAN about W1 -> R.wan:8080, from R.wan
    inner = IP(src=W1, dst=L2, ttl=63) / TCP(sport=5556, dport=80, flags="S", seq=300)
    return "lan", [lan(ctx, IP(src=L2, dst=W1) / ICMP(type=3, code=3) / bytes(inner)[:28])]


def reflect_syn(src, sport):
    def step(ctx):
        return "lan", [lan(ctx, IP(src=src, dst=ctx.rwan) / TCP(sport=sport, dport=8080, flags="S",
                                                               seq=400))]
    return step


CASES = [
    Case("udp-out", [udp_out], short=True, note=note_wan_port("udp", UDP)),
    Case("udp-reply", [udp_reply], short=True),
    Case("icmp-error-live-flow", [icmp_error_live], short=True),
    Case("icmp-error-dead-flow", [icmp_error_dead], short=True),
    Case("icmp-error-other-outer-dst", [icmp_error_other_outer], short=True),
    Case("icmp-error-bad-checksum", [icmp_error_bad_checksum]),
    Case("icmp-redirect-live-flow", [icmp_redirect_live]),
    Case("ttl1-udp-from-lan", [ttl1_from_lan], short=True),
    Case("ttl1-tcp-from-lan", [ttl1_tcp_from_lan]),
    Case("ttl1-to-port-forward", [ttl1_to_port_forward]),
    Case("ip-options-from-lan", [options_from_lan]),
    Case("bad-udp-checksum-from-lan", [bad_udp_checksum_from_lan]),
    Case("df-1428-from-lan", [df_from_lan]),
    Case("fragments-from-lan", [frags_from_lan], short=True),
    Case("fragments-reversed", [frags_reversed_from_lan]),
    Case("fragments-overlapping", [frags_overlapping_from_lan], short=True),
    Case("fragments-duplicate", [frags_duplicate_from_lan]),
    Case("fragment-alone", [frag_alone_from_lan]),
    Case("tcp-handshake", [tcp_syn, tcp_synack, tcp_ack], short=True,
         note=note_wan_port("tcp", TCP)),
    Case("tcp-rst-out-of-window", [tcp_from_server("R", S_ISN + 1 + 10_000_000)], short=True),
    Case("tcp-fin-out-of-window", [tcp_from_server("FA", S_ISN + 1 + 10_000_000)]),
    Case("tcp-data-in-window", [tcp_from_server("PA", S_ISN + 1, b"HTTP/1.0")], short=True),
    Case("tcp-client-data", [tcp_client_data]),
    Case("tcp-frag-needed-live-flow", [tcp_frag_needed]),
    Case("tcp-rst-in-window", [tcp_from_server("R", S_ISN + 9)], short=True),
    Case("tcp-after-rst", [tcp_from_server("PA", S_ISN + 9, b"late")]),
    Case("wan-syn-closed-port", [wan_syn_closed], short=True),
    Case("wan-udp-closed-port", [wan_udp_closed]),
    Case("wan-ping", [wan_ping], short=True),
    Case("wan-to-lan-address", [wan_to_lan_address], short=True),
    Case("wan-udp-to-lan-address", [wan_udp_to_lan_address], short=True),
    Case("wan-spoofs-lan-source", [wan_spoofs_lan_source]),
    Case("wan-ack-without-flow", [wan_ack_no_flow]),
    Case("lan-spoofs-wan-source", [lan_spoofs_wan_source]),
    Case("lan-loopback-source", [lan_loopback_source]),
    Case("lan-to-router-closed-udp", [lan_to_router_closed_udp]),
    Case("lan-ping", [lan_ping, lan_ping_reply], short=True, note=note_wan_port("echo", ICMP)),
    Case("port-forward", [fwd_syn, fwd_synack], short=True),
    Case("port-forward-icmp-error-from-server", [fwd_icmp_error_from_server]),
    Case("reflection", [reflect_syn(L1, 40020)], short=True),
    Case("reflection-same-port", [reflect_syn(L3, 40020)]),
]


# ================================================================ IPv6 (issue 31)
#
# Run when the scenario gives the LAN's /64 (DIFF_LAN6: the router's ULA /64, its
# first three groups) and the router's WAN address (DIFF_WAN6: its SLAAC address on
# brwan's 2001:db8:77::/64): L1..L3 at ::50..::52 of the LAN /64, W1 at
# 2001:db8:77::50. No NAT66: replies go to L1's own address. The router's firewall
# adds fw4's IPv6 defaults (Allow-DHCPv6, Allow-MLD, Allow-ICMPv6-Input,
# Allow-ICMPv6-Forward).

from scapy.layers.inet6 import (  # noqa: E402
    HBHOptUnknown, ICMPv6DestUnreach, ICMPv6EchoRequest, ICMPv6TimeExceeded, IPv6,
    IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, PadN,
    fragment6,
)

W1_6 = "2001:db8:77::50"


def l6(ctx, host="L1"):
    return f"{ctx.lan6}::{ {'L1': '50', 'L2': '51', 'L3': '52'}[host] }"


def v6_udp(ctx, sport=40100, ext=None, hlim=64, payload=b"hello6"):
    pkt = IPv6(src=l6(ctx), dst=W1_6, hlim=hlim)
    if ext is not None:
        pkt = pkt / ext
    return pkt / UDP(sport=sport, dport=9000) / Raw(payload)


def v6_udp_out(ctx):
    return "lan", [lan(ctx, v6_udp(ctx))]


def v6_udp_reply(ctx):
    return "wan", [wan(ctx, IPv6(src=W1_6, dst=l6(ctx)) / UDP(sport=9000, dport=40100)
                       / Raw(b"world6"))]


def v6_hlim1(ctx):
    return "lan", [lan(ctx, v6_udp(ctx, sport=40101, hlim=1))]


def v6_quote(ctx, sport):
    inner = IPv6(src=l6(ctx), dst=W1_6, hlim=63) / UDP(sport=sport, dport=9000) / Raw(b"hello6")
    return IPv6(src=W1_6, dst=l6(ctx)) / ICMPv6DestUnreach(code=4) / bytes(inner)


def v6_icmp_error_live(ctx):
    return "wan", [wan(ctx, v6_quote(ctx, 40100))]


def v6_icmp_error_dead(ctx):
    return "wan", [wan(ctx, v6_quote(ctx, 41234))]


def v6_hbh_padn(ctx):
    return "lan", [lan(ctx, v6_udp(ctx, sport=40102, ext=IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\0" * 4)])))]


def v6_hbh_unknown_discard(ctx):
    # an unknown option whose type's top bits (10) say: discard, parameter problem
    # code 2 pointing at it
    opt = HBHOptUnknown(otype=0x9e, optdata=b"\0\0")
    return "lan", [lan(ctx, v6_udp(ctx, sport=40103, ext=IPv6ExtHdrHopByHop(options=[opt])))]


def v6_hbh_unknown_skip(ctx):
    opt = HBHOptUnknown(otype=0x1e, optdata=b"\0\0")  # top bits 00: skip it
    return "lan", [lan(ctx, v6_udp(ctx, sport=40104, ext=IPv6ExtHdrHopByHop(options=[opt])))]


def v6_routing_type0(ctx):
    # RH0 (deprecated, RFC 5095) with segments left: only its destination acts on it
    rh = IPv6ExtHdrRouting(type=0, segleft=1, addresses=[f"{ctx.lan6}::52"])
    return "lan", [lan(ctx, v6_udp(ctx, sport=40105, ext=rh))]


def v6_unknown_next_header(ctx):
    # next header 253 (RFC 3692 experimentation): not a header the router knows
    pkt = IPv6(src=l6(ctx), dst=W1_6, nh=253) / Raw(b"\x11\0\0\0\0\0\0\0" + b"x" * 16)
    return "lan", [lan(ctx, pkt)]


def v6_long_chain(ctx):
    # twelve destination options headers before UDP
    ext = IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\0" * 4)])
    for _ in range(11):
        ext = ext / IPv6ExtHdrDestOpt(options=[PadN(optdata=b"\0" * 4)])
    return "lan", [lan(ctx, v6_udp(ctx, sport=40106, ext=ext))]


def v6_chain_past_end(ctx):
    # a hop-by-hop header that claims 64 bytes more than the packet has
    b = bytearray(bytes(v6_udp(ctx, sport=40107, ext=IPv6ExtHdrHopByHop(options=[PadN(optdata=b"\0" * 4)]))))
    b[41] = 8  # hdr ext len: 72 bytes
    return "lan", [lan(ctx, IPv6(bytes(b)))]


def v6_fragments(ctx):
    pkt = (IPv6(src=l6(ctx), dst=W1_6) / IPv6ExtHdrFragment(id=0x6001)
           / UDP(sport=40108, dport=9000) / Raw(bytes(range(256)) * 12))
    return "lan", [lan(ctx, f) for f in fragment6(pkt, 1280)]


def v6_fragment_alone(ctx):
    pkt = (IPv6(src=l6(ctx), dst=W1_6) / IPv6ExtHdrFragment(id=0x6002)
           / UDP(sport=40109, dport=9000) / Raw(bytes(range(256)) * 12))
    return "lan", [lan(ctx, fragment6(pkt, 1280)[1])]


def v6_wan_syn_to_lan(ctx):
    return "wan", [wan(ctx, IPv6(src=W1_6, dst=l6(ctx)) / TCP(sport=5555, dport=22, flags="S", seq=7))]


def v6_wan_udp_to_lan(ctx):
    return "wan", [wan(ctx, IPv6(src=W1_6, dst=l6(ctx)) / UDP(sport=5555, dport=9999) / Raw(b"knock6"))]


def v6_wan_ping_lan(ctx):
    # Allow-ICMPv6-Forward: echo requests from the WAN reach the LAN
    return "wan", [wan(ctx, IPv6(src=W1_6, dst=l6(ctx)) / ICMPv6EchoRequest(id=77, seq=1, data=b"ping6"))]


def v6_wan_ping_router(ctx):
    return "wan", [wan(ctx, IPv6(src=W1_6, dst=ctx.rwan6) / ICMPv6EchoRequest(id=78, seq=1, data=b"ping6"))]


def v6_wan_time_exceeded_live(ctx):
    inner = IPv6(src=l6(ctx), dst=W1_6, hlim=1) / UDP(sport=40100, dport=9000) / Raw(b"hello6")
    return "wan", [wan(ctx, IPv6(src=W1_6, dst=l6(ctx)) / ICMPv6TimeExceeded(code=0) / bytes(inner))]


CASES6 = [
    Case("v6-udp-out", [v6_udp_out], short=True),
    Case("v6-udp-reply", [v6_udp_reply], short=True),
    Case("v6-hlim1-from-lan", [v6_hlim1], short=True),
    Case("v6-icmp-error-live-flow", [v6_icmp_error_live], short=True),
    Case("v6-icmp-error-dead-flow", [v6_icmp_error_dead], short=True),
    Case("v6-time-exceeded-live-flow", [v6_wan_time_exceeded_live]),
    Case("v6-hop-by-hop-padn", [v6_hbh_padn], short=True),
    Case("v6-hop-by-hop-unknown-discard", [v6_hbh_unknown_discard], short=True),
    Case("v6-hop-by-hop-unknown-skip", [v6_hbh_unknown_skip]),
    Case("v6-routing-type0", [v6_routing_type0], short=True),
    Case("v6-unknown-next-header", [v6_unknown_next_header], short=True),
    Case("v6-long-chain", [v6_long_chain], short=True),
    Case("v6-chain-past-end", [v6_chain_past_end], short=True),
    Case("v6-fragments", [v6_fragments], short=True),
    Case("v6-fragment-alone", [v6_fragment_alone]),
    Case("v6-wan-syn-to-lan", [v6_wan_syn_to_lan], short=True),
    Case("v6-wan-udp-to-lan", [v6_wan_udp_to_lan], short=True),
    Case("v6-wan-ping-lan", [v6_wan_ping_lan], short=True),
    Case("v6-wan-ping-router", [v6_wan_ping_router], short=True),
]
