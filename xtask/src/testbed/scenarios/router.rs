//! The router topology (see [`Topology::Router`]): a router domain between the LAN
//! bridge (namespaces `lan1`, `lan2`) and the WAN bridge (dnsmasq in dom0, `wan`,
//! `far`), proven with a Linux router domU and with Xenlet as the router: NAT,
//! conntrack, DHCP, DNS, traceroute, PMTU, the WAN kept out; Xenlet's router also
//! small, busy, and given a port forward.

use super::builders::*;
use super::model::{Disk, Need, Scenario, Step, Topology};

/// The xl config of the Linux router domU (see [`LINUX_ROUTER`]) with the kernel
/// command line `$extra` and the disks given (`disk: [..]`), or none.
macro_rules! linux_router_config {
    ($extra:tt $(, disk: $disk:tt)?) => {
        xl_config!(pvh {
            memory: 256,
            kernel: "@LINUX@",
            ramdisk: "@LINUX_INITRD_ROUTER@",
            extra: $extra,
            $(disk: $disk,)?
            vif: [
                "bridge=brlan,mac=00:16:3e:01:00:01",
                "bridge=brwan,mac=00:16:3e:77:00:01"
            ],
        })
    };
}

/// The Linux router domU of `router-linux` (and the peer of `bench router`): Debian's
/// kernel as a PVH guest (the fastest Linux boot on the bed) with the busybox initramfs
/// plus nft, conntrack and the netfilter modules (`@LINUX_INITRD_ROUTER@`, made by
/// `run.py`); eth0 on `brlan` (LAN), eth1 on `brwan` (WAN), as OpenWrt's x86 default.
/// The MACs are fixed so the leases and captures read the same in every run.
pub const LINUX_ROUTER: Scenario = Scenario {
    needs: &[],
    config: linux_router_config!("console=hvc0 loglevel=4"),
    // the prompt of `xtask/testbed/net/linux-router/init`
    prompt: "router# ",
    boot_timeout_s: 300,
    boot_expect: &[r"^ROUTER: up .*net: eth0 eth1 "],
    end_timeout_s: 60,
    budget_s: 900,
    topology: Some(Topology::Router),
    ..XENLET_PVH
};

/// The Linux router domU as a network driver domain, the Linux peer of Xenlet's
/// netback (`router-netback-linux`, `bench-clients-linux`): `driver_domain` on its
/// command line makes its `/init` load xen-netback and the bridge, put eth0 in the
/// bridge `br-lan`, and run a small devd (the part of `xl devd` and the vif-bridge
/// hotplug script a vif needs: each new `vif<domid>.<devid>` joins the bridge its
/// backend's `bridge` key names and gets `hotplug-status` = `connected`, without which
/// Linux's netback never goes Connected); `/etc/router-up` then puts the LAN address,
/// udhcpd and fw4's lan zone on br-lan. Clients name it in their vif:
/// `backend=$NAME,bridge=br-lan`.
pub const LINUX_ROUTER_DRIVER_DOMAIN: Scenario = Scenario {
    config: linux_router_config!("console=hvc0 loglevel=4 driver_domain"),
    boot_expect: &[
        r"^ROUTER: up .*net: eth0 eth1 ",
        r"^ROUTER: driver domain \d+: br-lan ports eth0 xen_netback loaded, devd \d+$",
    ],
    ..LINUX_ROUTER
};

/// `/etc/router-up` of the Linux router in driver-domain mode: the LAN on br-lan, its
/// WAN address as `${ROUTER_WAN}`.
pub const LINUX_DRIVER_DOMAIN_UP: Step = cmd_cap(
    "/etc/router-up",
    &[
        r"^udhcpc: bound eth1 10\.77\.0\.\d+/24 router 10\.77\.0\.10 dns 10\.77\.0\.1$",
        r"^router: forwarding 1; lan br-lan 192\.168\.1\.1/24 \(udhcpd up\); wan eth1 10\.77\.0\.\d+/24 via 10\.77\.0\.10; dns 10\.77\.0\.1$",
        r"^router: nft: \d+ chains, 1 masquerade$",
    ],
    &[("ROUTER_WAN", r"^router: .* wan eth1 (10\.77\.0\.\d+)/24")],
    120,
);

/// Xenlet as the router domain of the router topology with `memory = $mem` and the
/// disks `$disk`: PVH, its disk image as xvda (the root filesystem with OpenWrt's
/// `/etc/config`: lan = eth0 192.168.1.1/24, wan = eth1 by DHCP, the wan zone
/// masquerading with mtu_fix); eth0 on `brlan`, eth1 on `brwan`.
/// `on_reboot="preserve"` as in the flood config: a triple fault leaves the domain
/// for `xen-hvmctx`.
macro_rules! xenlet_router_config {
    ($mem:tt, $disk:tt) => {
        xl_config!(pvh {
            memory: $mem,
            kernel: "@FILES@/xenlet.elf",
            disk: $disk,
            vif: ["bridge=brlan,mac=00:16:3e:01:00:02", "bridge=brwan,mac=00:16:3e:77:00:02"],
        } on_reboot: "preserve")
    };
}

/// Xenlet as the router (32 MiB, its disk image's copy as xvda), up within 60 s.
pub const XENLET_ROUTER: Scenario = Scenario {
    needs: &[Need::XenletElf, Need::XenletImage],
    config: xenlet_router_config!(32, ["@DISK@,raw,xvda,w"]),
    disks: &[IMAGE_COPY],
    boot_timeout_s: 60,
    boot_expect: &[r"^net: router: forwarding between eth0, eth1 masq mtu_fix"],
    topology: Some(Topology::Router),
    ..XENLET_PVH
};

/// What Xenlet's router says at boot, with the bound of its flow table.
pub const XENLET_ROUTER_UP: &[&str] =
    &[r"^net: router: forwarding between eth0, eth1 masq mtu_fix \(conntrack max \d+\)$"];

pub const ROUTER_XENLET: Scenario = Scenario {
    name: "router-xenlet",
    about: "router topology with Xenlet as the router (PVH, its image's /etc/config): NAT, conntrack, traceroute, PMTU",
    boot_expect: XENLET_ROUTER_UP,
    steps: ROUTER_XENLET_STEPS,
    budget_s: 420,
    ..XENLET_ROUTER
};

pub const ROUTER_IPV6: Scenario = Scenario {
    name: "router-ipv6",
    about: "router topology, Xenlet router, IPv6 on the WAN as OpenWrt's wan6: RA and DHCPv6 with prefix delegation from `wan`, the LAN's /64 of the delegation by SLAAC, lan1 <-> wan over IPv6 through the router, the WAN kept out but for a v6 rule added with uci, a renumbering by the WAN deprecating the LAN's old /64, `reload` of the RA, DHCPv4, wan6 and LAN IPv4 address settings changed with uci, `ifdown wan` and `ifup wan`, the WAN switched to static and back to DHCP with uci",
    boot_expect: XENLET_ROUTER_UP,
    steps: ROUTER_IPV6_STEPS,
    budget_s: 900,
    ..XENLET_ROUTER
};

pub const SUSPEND_ROUTER: Scenario = Scenario {
    name: "suspend-router",
    about: "save, restore, checkpoint and live migration of a Xenlet router (PVH): a TCP connection through NAT held across each, the data disk and the vifs reconnected, DHCP renewed",
    // a 64 MiB data disk on the router (xvdb), written before and after each move
    config: xenlet_router_config!(32, ["@DISK@,raw,xvda,w", "@DATA@,raw,xvdb,w"]),
    disks: &[IMAGE_COPY, DATA_FILE],
    boot_expect: XENLET_ROUTER_UP,
    steps: SUSPEND_ROUTER_STEPS,
    budget_s: 900,
    ..XENLET_ROUTER
};

pub const ROUTER_REATTACH: Scenario = Scenario {
    name: "router-reattach",
    about: "a Xenlet router's LAN vif detached by dom0 and attached again with the same MAC: the interface and its address come back, the router's flows carry on",
    boot_expect: XENLET_ROUTER_UP,
    steps: ROUTER_REATTACH_STEPS,
    budget_s: 420,
    ..XENLET_ROUTER
};

pub const ROUTER_SMALL: Scenario = Scenario {
    name: "router-small",
    about: "router topology, Xenlet router in memory = 8: a flood of new flows and a cp -r that does not fit end in errors, no panic; the router still routes; e2fsck clean",
    // the router in the smallest domain that runs it, with a 64 MiB data disk (xvdb)
    config: xenlet_router_config!(8, ["@DISK@,raw,xvda,w", "@DATA@,raw,xvdb,w"]),
    disks: &[IMAGE_COPY, DATA_FILE],
    steps: ROUTER_SMALL_STEPS,
    budget_s: 900,
    ..XENLET_ROUTER
};

pub const ROUTER_NETBACK: Scenario = Scenario {
    name: "router-netback",
    about: "driver domain: two Linux PVH client domUs whose vif's backend is the Xenlet router (it runs netback): leases from its DHCP on br-lan, the WAN through its NAT, lan1 and a client switched by its bridge, a client's ip key set live drops its pings from another address and passes them from its own, a client destroyed and created again reconnects; a client flooding the router's closed port gets its port unreachables rate limited",
    boot_expect: XENLET_ROUTER_UP,
    steps: ROUTER_NETBACK_STEPS,
    budget_s: 900,
    ..XENLET_ROUTER
};

pub const ROUTER_ZONES: Scenario = Scenario {
    name: "router-zones",
    about: "driver domain, a zone per client network: OpenWrt's guest network (br-guest a port-less bridge, bridge_empty: only client vifs on it, the router's interface the bridge itself; its own zone: input and forward REJECT, DHCP and DNS allowed, forwarding to wan only) set with uci; after a reboot a client served on br-guest gets its lease there and reaches the WAN, and cannot reach lan1, the router's LAN address or the client on br-lan, nor lan1 it; the br-lan client still reaches lan1",
    config: xl_config!(pvh {
        memory: 32,
        kernel: "@FILES@/xenlet.elf",
        disk: ["@DISK@,raw,xvda,w"],
        vif: [
            "bridge=brlan,mac=00:16:3e:01:00:02",
            "bridge=brwan,mac=00:16:3e:77:00:02"
        ],
    } on_reboot: "preserve"),
    boot_expect: XENLET_ROUTER_UP,
    steps: ROUTER_ZONES_STEPS,
    budget_s: 900,
    ..XENLET_ROUTER
};

pub const ROUTER_CLIENTS: Scenario = Scenario {
    name: "router-clients",
    about: "driver domain at issue 33's size: the Xenlet router in memory = 32 serves eight Linux PVH client domUs' vifs itself (netback, br-lan): each gets its lease and reaches the WAN, lan1 reaches each through the router's bridge, all eight send to the WAN at once, the router's memory never runs low; all eight destroyed leave no page of theirs mapped",
    boot_expect: XENLET_ROUTER_UP,
    steps: ROUTER_CLIENTS_STEPS,
    budget_s: 900,
    ..XENLET_ROUTER
};

pub const ROUTER_FAIRNESS: Scenario = Scenario {
    name: "router-fairness",
    about: "two Linux PVH client domUs served by the Xenlet router (netback): client 1's TCP to wan idle, while client 2 only spins, and while client 2's pktgen floods the router's address at 1,000 datagrams a second; xen between the phases (where the router's time goes); the figures reported (issue 33's goal, flooded at least half of idle, is not met on the bed)",
    boot_expect: XENLET_ROUTER_UP,
    steps: ROUTER_FAIRNESS_STEPS,
    budget_s: 900,
    ..XENLET_ROUTER
};

pub const ROUTER_BUSY: Scenario = Scenario {
    name: "router-busy",
    about: "router topology, Xenlet router: routing, DNS and DHCP go on while its console runs sleep, dd, sha256sum and cp -r (no ping lost)",
    // a 256 MiB data disk on the router (xvdb), for the busy console's `dd` and
    // `sha256sum`
    config: xenlet_router_config!(32, ["@DISK@,raw,xvda,w", "@DATA@,raw,xvdb,w"]),
    disks: &[
        IMAGE_COPY,
        Disk {
            size_mb: 256,
            ..DATA_FILE
        },
    ],
    steps: ROUTER_BUSY_STEPS,
    budget_s: 900,
    ..XENLET_ROUTER
};

pub const ROUTER_XENLET_FW: Scenario = Scenario {
    name: "router-xenlet-fw",
    about: "router topology, Xenlet router: a port forward added with uci, committed and reloaded, reached from wan",
    steps: ROUTER_XENLET_FW_STEPS,
    budget_s: 300,
    ..XENLET_ROUTER
};

pub const ROUTER_DIFF: Scenario = Scenario {
    name: "router-diff",
    about: "the router differential: xtask/testbed/net/diff's corpus of crafted packets through Xenlet, then through Linux with fw4's rendering of the same firewall (a namespace on the same bridges, Xenlet's vifs taken off them), what comes out compared packet by packet; differences must be the documented ones (known.txt)",
    steps: ROUTER_DIFF_STEPS,
    budget_s: 900,
    ..XENLET_ROUTER
};

pub const ROUTER_DIFF_SHORT: Scenario = Scenario {
    name: "router-diff-short",
    about: "router-diff with the corpus' short cases (NAT, ICMP errors, TTL, fragments, TCP window, the WAN knocking, the port forward and its reflection; IPv6: extension headers, ICMPv6 errors quoting a flow, fragments, the WAN knocking): the form cargo xtask test runs",
    steps: ROUTER_DIFF_SHORT_STEPS,
    budget_s: 600,
    ..XENLET_ROUTER
};

pub const ROUTER_LINUX: Scenario = Scenario {
    name: "router-linux",
    about: "router topology (brlan: lan1, lan2; brwan: dnsmasq, wan, far) with a Linux PVH router domU: NAT, fw4 defaults, DHCP, DNS, traceroute, PMTU, WAN blocked",
    steps: ROUTER_LINUX_STEPS,
    ..LINUX_ROUTER
};

pub const ROUTER_NETBACK_LINUX: Scenario = Scenario {
    name: "router-netback-linux",
    about: "the peer of router-netback: the Linux PVH router domU as the driver domain (xen-netback, br-lan holding eth0, fw4's ruleset with br-lan as lan, udhcpd on br-lan, a devd writing hotplug-status) serving two Linux PVH client domUs (backend=, bridge=br-lan): their leases from its udhcpd, the WAN through its NAT, lan1 and a client switched by its bridge",
    steps: ROUTER_NETBACK_LINUX_STEPS,
    ..LINUX_ROUTER_DRIVER_DOMAIN
};

pub const SUSPEND_ROUTER_LINUX: Scenario = Scenario {
    name: "suspend-router-linux",
    about: "the peer of suspend-router: the Linux PVH router domU saved, restored, checkpointed and migrated with lan1's TCP connection held through it (the downtimes to compare)",
    // the Xenlet router's two disks too (unused by Linux, which runs from its
    // initramfs): the toolstack then saves, restores and moves the same devices,
    // QEMU's qdisk backend included
    config: linux_router_config!(
        "console=hvc0 loglevel=4",
        disk: ["@DISK@,raw,xvda,w", "@DATA@,raw,xvdb,w"]
    ),
    needs: &[Need::XenletImage],
    disks: &[IMAGE_COPY, DATA_FILE],
    steps: SUSPEND_ROUTER_LINUX_STEPS,
    ..LINUX_ROUTER
};

/// Xenlet's router waits for its WAN lease from dom0's dnsmasq (DHCP on eth1).
pub const WAN_LEASE_WAIT: Step = cmd("sleep 8", &[], 30);

/// The Xenlet router's first steps: its WAN lease and the address it got, as
/// `${ROUTER_WAN}`.
const ROUTER_WAN_LEASE: &[Step] = &[
    WAN_LEASE_WAIT,
    cmd_cap(
        "ip addr show eth1",
        &[r"^    inet 10\.77\.0\.\d+/24 "],
        &[("ROUTER_WAN", r"^    inet (10\.77\.0\.\d+)/24 ")],
        30,
    ),
];

/// lan1 at a static address (for checks that need no DHCP server on the router).
pub const LAN1_STATIC: Step = dom0(
    "$NET/router.sh static lan1 192.168.1.10",
    &[r"^netns lan1: 192\.168\.1\.10/24 "],
    20,
);

/// lan1 pings wan through the router.
const LAN1_PINGS_WAN: Step = ns(
    "lan1",
    "ping -c 2 -W 5 10.77.0.10",
    &[r"^2 packets transmitted, 2 received"],
    60,
);

/// A flood of 65,000 new flows from lan1: one UDP datagram to each port of `wan`.
const FLOW_FLOOD: Step = ns(
    "lan1",
    concat!(
        "python3 -c \"import socket,time; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); ",
        "t=time.time(); [s.sendto(b'x',('10.77.0.10',p)) for p in range(1,65001)]; ",
        "print('sent 65000 flows in %.1fs' % (time.time()-t))\""
    ),
    &[r"^sent 65000 flows in "],
    240,
);

/// The router's conntrack table holds the two UDP flows of [`LAN_THROUGH_NAT`] with
/// their distinct mappings.
const UDP_MAPPINGS_IN_CONNTRACK: &[&str] = &[
    r"src=${LAN1} dst=10\.77\.0\.10 sport=40000 dport=7777 .*src=10\.77\.0\.10 dst=${ROUTER_WAN} sport=7777 dport=${P1}\b",
    r"src=192\.168\.1\.20 dst=10\.77\.0\.10 sport=40000 dport=7777 .*src=10\.77\.0\.10 dst=${ROUTER_WAN} sport=7777 dport=${P2}\b",
];

// ---------------------------------------------------------------- the LAN checks
//
// What a router domain must do in the router topology (see [`Topology::Router`]),
// once it is up with LAN 192.168.1.1/24 on eth0 and its WAN address in `${ROUTER_WAN}`:
// lan1 by DHCP from the router, lan2 static; ping, TCP, iperf3 (both ways) and DNS
// from the LAN through NAT, with only `${ROUTER_WAN}` seen as source in `wan`; the
// same UDP source port from lan1 and lan2 mapped apart; traceroute router -> wan ->
// far; a DF ping over the 1400-byte hop answered by wan's frag-needed; from the WAN,
// the router answers ping but nothing else, and the LAN is unreachable.
// A router scenario runs its own configuration step first and may add checks on its
// own console (e.g. `conntrack -L`) after.

/// dom0 itself does not forward: what crosses goes through the router.
const DOM0_DOES_NOT_FORWARD: Step = dom0(
    "echo \"dom0 ip_forward=$(cat /proc/sys/net/ipv4/ip_forward)\"",
    &[r"^dom0 ip_forward=0$"],
    10,
);

/// lan1 gets its address from the router's DHCP server, as `${LAN1}`.
const LAN1_BY_DHCP: Step = dom0_cap(
    "$NET/router.sh dhcp lan1",
    &[r"^netns lan1: 192\.168\.1\.\d+/24 route: default via 192\.168\.1\.1 dev eth0"],
    &[("LAN1", r"^netns lan1: (192\.168\.1\.\d+)/24")],
    90,
);

/// lan2 static; ping, TCP and iperf3 both ways from the LAN through NAT, only
/// `${ROUTER_WAN}` seen as source in `wan`; the same UDP source port from lan1 and lan2
/// (`${P1}`, `${P2}`).
const LAN_THROUGH_NAT: &[Step] = &[
    dom0(
        "$NET/router.sh static lan2 192.168.1.20",
        &[r"^netns lan2: 192\.168\.1\.20/24 "],
        20,
    ),
    ns(
        "lan1",
        "ping -c 3 -W 5 10.77.0.10",
        &[r"^3 packets transmitted, 3 received"],
        60,
    ),
    ns(
        "lan1",
        "socat -t 10 -T 10 - TCP:10.77.0.10:7777,connect-timeout=10 </dev/null",
        &[r"^you are ${ROUTER_WAN}:\d+$"],
        30,
    ),
    ns_cap(
        "lan1",
        "iperf3 -c 10.77.0.10 -t 3",
        &[r"receiver$"],
        &[("LAN_TO_WAN", IPERF3_RECEIVER)],
        90,
    ),
    ns_cap(
        "lan1",
        "iperf3 -c 10.77.0.10 -t 3 -R",
        &[r"receiver$"],
        &[("WAN_TO_LAN", IPERF3_RECEIVER)],
        90,
    ),
    // what wan saw: every TCP flow from the LAN came from the router's WAN address
    dom0(
        concat!(
            "echo \"sources: $($NET/router.sh pcap 'tcp dst port 5201 or tcp dst port 7777' ",
            "| awk '{print $3}' | sed 's/\\.[0-9]*$//' | sort -u | paste -sd' ')\"; ",
            "echo \"lan sources: $($NET/router.sh pcap 'src net 192.168.1.0/24' | wc -l)\""
        ),
        &[r"^sources: ${ROUTER_WAN}$", r"^lan sources: 0$"],
        30,
    ),
    ns_cap(
        "lan1",
        "echo lan1 | socat -t 5 -T 10 - UDP:10.77.0.10:7777,sourceport=40000",
        &[r"^you are ${ROUTER_WAN}:\d+ said lan1$"],
        &[("P1", r"^you are [0-9.]+:(\d+) said lan1$")],
        30,
    ),
    ns_cap(
        "lan2",
        "echo lan2 | socat -t 5 -T 10 - UDP:10.77.0.10:7777,sourceport=40000",
        &[r"^you are ${ROUTER_WAN}:\d+ said lan2$"],
        &[("P2", r"^you are [0-9.]+:(\d+) said lan2$")],
        30,
    ),
];

/// The two UDP flows were mapped apart.
const DISTINCT_MAPPINGS: Step = dom0(
    "[ \"${P1}\" != \"${P2}\" ] && echo \"distinct mappings: lan1:40000 -> ${P1}, lan2:40000 -> ${P2}\"",
    &[r"^distinct mappings: "],
    10,
);

/// A name of the WAN through the router's DNS.
const LAN_DNS: Step = ns(
    "lan1",
    "busybox nslookup server.wan 192.168.1.1; true",
    &[r"^Address:\s+10\.77\.0\.10$"],
    30,
);

/// traceroute router -> wan -> far; a DF ping over the 1400-byte hop answered by
/// wan's frag-needed; from the WAN, the router answers ping but nothing else, and the
/// LAN is unreachable; 3,000-byte echoes through the router.
const PATH_AND_WAN_CHECKS: &[Step] = &[
    ns(
        "lan1",
        "busybox traceroute -n -q 1 -w 3 10.78.0.2",
        &[r"^\s*1\s+192\.168\.1\.1\s", r"^\s*2\s+10\.77\.0\.10\s", r"^\s*3\s+10\.78\.0\.2\s"],
        90,
    ),
    ns(
        "lan1",
        "ping -c 2 -W 5 10.78.0.2; ping -M do -s 1472 -c 2 -W 3 10.78.0.2; true",
        &[
            r"^2 packets transmitted, 2 received",
            r"^From 10\.77\.0\.10 icmp_seq=\d+ Frag needed and DF set \(mtu = 1400\)",
        ],
        60,
    ),
    // from the WAN: the router answers ping (Allow-Ping) and nothing else; the LAN
    // (routed to the router on purpose) is unreachable, and no answer comes back
    ns(
        "wan",
        concat!(
            "ping -c 2 -W 5 ${ROUTER_WAN}; ",
            "socat -T 3 - TCP:${ROUTER_WAN}:22,connect-timeout=4 </dev/null; echo \"router tcp rc=$?\"; ",
            "ip route replace 192.168.1.0/24 via ${ROUTER_WAN}; ",
            "ping -c 3 -W 2 ${LAN1}; ",
            "socat -T 3 - TCP:${LAN1}:7777,connect-timeout=4 </dev/null; echo \"lan tcp rc=$?\"; ",
            "echo lan | socat -t 3 -T 3 - UDP:${LAN1}:7777; echo \"lan udp rc=$?\"; ",
            "ip route del 192.168.1.0/24; true"
        ),
        &[
            r"^2 packets transmitted, 2 received",
            r"^router tcp rc=[1-9]",
            r"^3 packets transmitted, 0 received",
            r"^lan tcp rc=[1-9]",
        ],
        90,
    ),
    // ... and nothing from the WAN reached lan1's responder
    dom0(
        "echo \"lan1 responder heard the wan: $(grep -c ' from 10\\.77\\.' $TOPO/responder-lan1.log)\"",
        &[r"^lan1 responder heard the wan: 0$"],
        10,
    ),
    // 3,000-byte echoes: fragmented both ways, reassembled by the router for
    // conntrack and NAT, fragmented again on the way out
    ns("lan1", "ping -c 2 -s 3000 -W 5 10.77.0.10", &[r"^2 packets transmitted, 2 received"], 60),
];

/// The router topology, proven with a Linux router domU: `/etc/router-up` (forwarding,
/// LAN address and DHCP server, WAN by DHCP, fw4's ruleset), the LAN checks, with the
/// router's own conntrack table showing the two UDP flows' distinct mappings right
/// after they were made.
const ROUTER_LINUX_STEPS: &[Step] = steps![
    cmd_cap(
        "/etc/router-up",
        &[
            r"^udhcpc: bound eth1 10\.77\.0\.\d+/24 router 10\.77\.0\.10 dns 10\.77\.0\.1$",
            r"^router: forwarding 1; lan eth0 192\.168\.1\.1/24 \(udhcpd up\); wan eth1 10\.77\.0\.\d+/24 via 10\.77\.0\.10; dns 10\.77\.0\.1$",
            r"^router: nft: \d+ chains, 1 masquerade$",
        ],
        &[("ROUTER_WAN", r"^router: .* wan eth1 (10\.77\.0\.\d+)/24")],
        120,
    ),
    DOM0_DOES_NOT_FORWARD,
    LAN1_BY_DHCP,
    ..LAN_THROUGH_NAT,
    // right after the two UDP exchanges: a UDP entry lives 30 s after its last packet
    cmd(
        "conntrack -L -p udp --dport 7777 2>&1",
        UDP_MAPPINGS_IN_CONNTRACK,
        30,
    ),
    DISTINCT_MAPPINGS,
    LAN_DNS,
    ..PATH_AND_WAN_CHECKS,
    cmd("nft list chain inet fw4 srcnat_wan", &[r"masquerade"], 30),
    last("poweroff -f"),
];

/// The Linux router's side of `suspend-router`: the same held connection and the
/// same three moves, for the downtimes (`${GAP}` after each) to compare.
const SUSPEND_ROUTER_LINUX_STEPS: &[Step] = steps![
    ROUTER_LINUX_STEPS[0],
    LAN1_BY_DHCP,
    HOLD_START,
    MOVE_CHECKPOINT,
    HOLD_REPORT,
    MOVE_SAVE_RESTORE,
    reattach(60),
    HOLD_REPORT,
    MOVE_MIGRATE,
    reattach(60),
    HOLD_REPORT,
    LAN_THROUGH_NAT[1],
    last("poweroff -f"),
];

/// A small router under pressure: a flood of new flows from the LAN and a `cp -r`
/// that does not fit its disk end in errors (a full table, "No space left on
/// device"), never a panic; the shell answers, routing goes on, and dom0's e2fsck
/// finds the disk clean. Today the flood passes (the table stays at its bound of
/// 865, routing goes on) and the `cp -r` panics ("memory allocation of 86016 bytes
/// failed"): not in `cargo xtask test` until heap exhaustion is an error.
const ROUTER_SMALL_STEPS: &[Step] = &[
    WAN_LEASE_WAIT,
    // the heap after boot, after the flood and after the mount, for the log (the
    // cp's mkdir needs it above its low-water mark: ff62f2b had 175 KiB free of 1168)
    cmd("mem", &[r"^heap: \d+ KiB in live allocations$"], 30),
    LAN1_BY_DHCP,
    FLOW_FLOOD,
    cmd(
        "conntrack -S",
        &[r"^flows: new \d+ = live \d+ \+ evicted "],
        30,
    ),
    cmd("mem", &[r"^heap: \d+ KiB in live allocations$"], 30),
    LAN1_PINGS_WAN,
    // a tree of 48 MiB (3 x 16 MiB) onto a 64 MiB disk that already holds one copy
    dom0(
        concat!(
            "rm -rf /tmp/big && mkdir -p /tmp/big/src && ",
            "for i in 1 2 3; do head -c 16M /dev/urandom > /tmp/big/src/f$i; done && ",
            "mkfs.ext4 -q -F -d /tmp/big $DATA && echo formatted"
        ),
        &[r"^formatted$"],
        120,
    ),
    cmd("mount /dev/xvdb /mnt", &[], 60),
    cmd("mem", &[r"^heap: \d+ KiB in live allocations$"], 30),
    cmd(
        "cp -r /mnt/src /mnt/dst",
        &[r"^cp: cannot copy .*: (No space left on device|Cannot allocate memory)$"],
        400,
    ),
    cmd("df", &[r"^/dev/xvdb\s"], 30),
    cmd(
        "mem",
        &[
            r"^heap: \d+ KiB in \d+ region\(s\), \d+ KiB more to take from frames; memory low below \d+ KiB available \(seen \d+ times\)$",
        ],
        30,
    ),
    cmd("echo still here", &[r"^still here$"], 30),
    cmd("rm -r /mnt/dst", &[], 200),
    cmd("umount /mnt", &[], 120),
    dom0(
        "e2fsck -fn $DATA >/tmp/fsck.log 2>&1; echo \"e2fsck rc=$?\"; tail -2 /tmp/fsck.log",
        &[r"^e2fsck rc=0$"],
        60,
    ),
    LAN1_PINGS_WAN,
    last("poweroff"),
];

/// The router keeps routing while its console is busy (the event-driven core): lan1
/// pings the WAN through Xenlet 5 times a second for the whole scenario and runs
/// iperf3 through it, asks its DNS and DHCP, while the router's shell runs `sleep
/// 15`, a `cp -r` of a thousand files, a 256 MiB `dd` to its data disk and
/// `sha256sum` of that disk: not one ping lost, and iperf3, DNS and DHCP done while
/// the console sleeps. iperf3 during the sleep is printed beside the idle rate, and the
/// gate is only 0.3 of it: it catches a data plane served at the console's pace (a
/// stall, or a poll per timer tick), not a speed; speed is the benches' job. Two iperf3
/// runs in one session differ by far more than a speed gate could allow: busy/idle
/// seen 0.58-1.17 (CI of a8365d1: idle 360, busy 207 Mbit/s on a loaded machine).
const ROUTER_BUSY_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    LAN1_BY_DHCP,
    ns_cap(
        "lan1",
        "iperf3 -c 10.77.0.10 -t 4",
        &[r"receiver$"],
        &[("IDLE", r"\s([0-9.]+ [KMG]?bits/sec)\s.*receiver$")],
        90,
    ),
    ns(
        "lan1",
        "setsid ping -i 0.2 -W 2 10.77.0.10 </dev/null >/tmp/busy-ping.txt 2>&1 & echo $! >/tmp/busy-ping.pid; echo ping-started",
        &[r"^ping-started$"],
        10,
    ),
    // while the console sleeps: iperf3 through the router, then DNS and a DHCP lease
    // from it (a script of their own, started before the guest's `sleep`)
    ns(
        "lan1",
        concat!(
            "rm -f /tmp/busy-*.done; setsid bash -c '",
            "sleep 2; iperf3 -c 10.77.0.10 -t 6 >/tmp/busy-iperf.txt 2>&1; ",
            "busybox nslookup OpenWrt.lan 192.168.1.1 >/tmp/busy-dns.txt 2>&1; ",
            "busybox udhcpc -i eth0 -n -q -t 3 -T 2 -s /bin/true >/tmp/busy-dhcp.txt 2>&1; ",
            "touch /tmp/busy-jobs.done' </dev/null >/dev/null 2>&1 & echo jobs-started"
        ),
        &[r"^jobs-started$"],
        10,
    ),
    cmd("sleep 15", &[r"^slept "], 60),
    ns_cap(
        "lan1",
        // done while the router slept (iperf3 for 6 s from 2 s in, then DNS and
        // DHCP): a router that stops while its console sleeps answers only after
        // (iperf3's SYN retransmitted past the sleep)
        "[ -e /tmp/busy-jobs.done ] && echo jobs-done-during-the-sleep; cat /tmp/busy-iperf.txt /tmp/busy-dns.txt /tmp/busy-dhcp.txt",
        &[
            r"^jobs-done-during-the-sleep$",
            r"receiver$",
            r"^Address:\s+192\.168\.1\.1$",
            r"lease of 192\.168\.1\.\d+ obtained",
        ],
        &[("BUSY", r"\s([0-9.]+ [KMG]?bits/sec)\s.*receiver$")],
        40,
    ),
    dom0(
        concat!(
            "mbit() { echo \"$1\" | awk '{v=$1; if ($2 ~ /^G/) v*=1000; if ($2 ~ /^K/) v/=1000; if ($2 ~ /^bits/) v/=1e6; print v}'; }; ",
            "awk -v a=\"$(mbit '${IDLE}')\" -v b=\"$(mbit '${BUSY}')\" 'BEGIN { r = b / a; ",
            "printf \"iperf3 while the console sleeps: %.0f Mbit/s, idle %.0f (%.2f)\\n\", b, a, r; ",
            "if (r >= 0.3) print \"busy-ok\" }'"
        ),
        &[r"^busy-ok$"],
        10,
    ),
    // a thousand files copied on the data disk (dom0 made them; the dd below
    // overwrites the disk after)
    dom0(
        concat!(
            "rm -rf /tmp/many && mkdir -p /tmp/many/src && ",
            "for i in $(seq 1000); do echo \"file $i\" > /tmp/many/src/f$i; done && ",
            "mkfs.ext4 -q -F -d /tmp/many $DATA && echo formatted"
        ),
        &[r"^formatted$"],
        120,
    ),
    cmd("mount /dev/xvdb /mnt", &[], 60),
    cmd("cp -r /mnt/src /mnt/dst", &[], 400),
    cmd("ls /mnt/dst | wc -l", &[r"^1000$"], 60),
    cmd("umount /mnt", &[], 120),
    cmd(
        "dd if=/dev/zero of=/dev/xvdb bs=1M count=256 conv=fsync",
        &[r"^256\+0 records out$"],
        400,
    ),
    cmd(
        "sha256sum /dev/xvdb",
        &[r"^a6d72ac7690f53be6ae46ba88506bd97302a093f7108472bd9efc3cefda06484  /dev/xvdb$"],
        400,
    ),
    cmd(
        "xen",
        &[
            r"^core: the data plane served at [1-9]\d* waits$",
            r"^pv console: attached, \d+ bytes of output dropped",
        ],
        30,
    ),
    ns(
        "lan1",
        "kill -INT $(cat /tmp/busy-ping.pid); sleep 1; tail -3 /tmp/busy-ping.txt",
        &[r"^(\d\d+) packets transmitted, \1 received, 0% packet loss"],
        10,
    ),
    last("poweroff"),
];

/// A client domU `$NAME-cN` (Linux PVH, `CLIENT_INIT` of run.py: a lease, then a ping
/// to the WAN host every 2 s) whose vif the router serves: `backend=$NAME`, joining
/// the router's `br-lan` (or `$bridge`); `$extra` goes on its kernel's command line
/// (`client_check`: IPv6 and TCP both ways first; `client_probe=A,B`: one ping to
/// each, see run.py).
macro_rules! create_client {
    ($n:literal, $mac:literal) => {
        create_client!($n, $mac, "")
    };
    ($n:literal, $mac:literal, $extra:literal) => {
        create_client!($n, $mac, $extra, "br-lan")
    };
    ($n:literal, $mac:literal, $extra:literal, $bridge:literal) => {
        dom0(
            concat!(
                "rm -f /var/log/xen/console/guest-$NAME-c",
                $n,
                ".log; ",
                "printf '%s\\n' 'name=\"'$NAME-c",
                $n,
                "'\"' 'type=\"pvh\"' 'memory=160' ",
                "'kernel=\"'$LINUX'\"' 'ramdisk=\"'$CLIENT_INITRD'\"' ",
                "'extra=\"console=hvc0 loglevel=4",
                $extra,
                "\"' ",
                "'vif=[\"backend='$NAME',bridge=",
                $bridge,
                ",mac=",
                $mac,
                "\"]' >/tmp/client",
                $n,
                ".cfg && ",
                // the session's lines for every domain (native TSC)
                "printf '%s' \"$DOMAIN_XL\" >>/tmp/client",
                $n,
                ".cfg && ",
                "xl create /tmp/client",
                $n,
                ".cfg >/tmp/client",
                $n,
                ".log 2>&1; rc=$?; tail -3 /tmp/client",
                $n,
                ".log; ",
                "echo \"created c",
                $n,
                " rc=$rc\""
            ),
            &[concat!(r"^created c", $n, " rc=0$")],
            120,
        )
    };
}

/// Waits for client `cN`'s lease (in br-lan's 192.168.1.0/24, or `$net`'s /24 from
/// its `.1`) and first ping through the router (its console log).
macro_rules! client_up {
    ($n:literal, $after:literal) => {
        client_up!($n, $after, r"192\.168\.1")
    };
    ($n:literal, $after:literal, $net:literal) => {
        dom0_cap(
            concat!(
                "log=/var/log/xen/console/guest-$NAME-c",
                $n,
                ".log; ",
                "for i in $(seq 120); do [ \"$(grep -ac 'CLIENT: ping ok' $log)\" -gt ",
                $after,
                " ] && break; sleep 1; done; ",
                "grep -a 'CLIENT: \\(up\\|lease\\)' $log | tr -d '\\r' | tail -2; ",
                "grep -a 'CLIENT: ping' $log | tr -d '\\r' | tail -1"
            ),
            &[
                concat!(r"^CLIENT: up .*mac 00:16:3e:0c:00:0", $n, "$"),
                concat!(r"^CLIENT: lease ", $net, r"\.\d+/24 via ", $net, r"\.1$"),
                r"^CLIENT: ping ok \d+$",
            ],
            &[(
                concat!("C", $n),
                concat!(r"^CLIENT: lease (", $net, r"\.\d+)/24"),
            )],
            150,
        )
    };
}

/// One client flooding the router (pktgen: 1,000 60-byte UDP datagrams a second to
/// the router's address) against the other's TCP to wan: idle, while the flooder
/// only spins (capped at 20 % of the bed's one CPU: what CPU contention alone
/// costs), and flooded (net/fairness.sh), with `xen` between the phases: where the
/// router's time went in each (the parts of its network polls). The issue's goal is
/// at least half the idle rate; on this bed it is not met (docs/running-on-xen.md)
/// and the clients' figures swing with the bed's CPU and its stalls (a phase across
/// one takes 30 s), so the figures are reported, not checked, and the scenario is
/// run by name, not by `cargo xtask test`; what it checks is the router's side: the
/// idle transfer through it, the flood started, its port unreachables limited.
const ROUTER_FAIRNESS_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    LAN1_BY_DHCP,
    create_client!("1", "00:16:3e:0c:00:01"),
    create_client!("2", "00:16:3e:0c:00:02"),
    client_up!("1", "0"),
    client_up!("2", "0"),
    cmd("xen", &[XEN_POLLS], 30),
    dom0(
        "$NET/fairness.sh ${C1} ${C2} $NAME-c2 idle",
        &[r"^fairness: idle [0-9.]+$"],
        150,
    ),
    cmd("xen", &[XEN_POLLS], 30),
    dom0(
        "$NET/fairness.sh ${C1} ${C2} $NAME-c2 spinning",
        &[r"^fairness: spinning "],
        150,
    ),
    cmd("xen", &[XEN_POLLS], 30),
    dom0(
        "$NET/fairness.sh ${C1} ${C2} $NAME-c2 flooded",
        &[r"^fairness: flood started$", r"^fairness: flooded "],
        200,
    ),
    cmd("xen", &[XEN_POLLS], 30),
    dom0("$NET/fairness.sh ${C1} ${C2} $NAME-c2 report", &[], 30),
    cmd("ip -s link", &[r"IcmpRateLimited [1-9]\d{3,}"], 30),
    last("poweroff"),
];

/// OpenWrt's guest network on the router's third vif (eth2), as its guides set one up:
/// a bridge `br-guest`, the interface `guest` (192.168.2.1/24) with a DHCP pool, and
/// a zone of its own that rejects input and forwarding, allows DHCP and DNS to the
/// router and forwards to wan only (no forwarding to or from lan); then a reboot, as
/// OpenWrt's `network restart` (Xenlet applies new interfaces at boot). Client 1 is
/// on br-lan, client 2 on br-guest; client 2 probes lan1, the router's LAN address
/// and client 1 once each (`client_probe`), all refused, while its pings to the WAN
/// host pass; lan1 cannot reach client 2 either, and still reaches client 1.
const ROUTER_ZONES_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    LAN1_BY_DHCP,
    cmd("uci set network.guest_dev=device", &[], 30),
    cmd("uci set network.guest_dev.name=br-guest", &[], 30),
    cmd("uci set network.guest_dev.type=bridge", &[], 30),
    // no port of the router's: a bridge of client vifs only (OpenWrt's bridge_empty)
    cmd("uci set network.guest_dev.bridge_empty=1", &[], 30),
    cmd("uci set network.guest=interface", &[], 30),
    cmd("uci set network.guest.device=br-guest", &[], 30),
    cmd("uci set network.guest.proto=static", &[], 30),
    cmd("uci set network.guest.ipaddr=192.168.2.1", &[], 30),
    cmd("uci set network.guest.netmask=255.255.255.0", &[], 30),
    cmd("uci set dhcp.guest=dhcp", &[], 30),
    cmd("uci set dhcp.guest.interface=guest", &[], 30),
    cmd("uci set dhcp.guest.start=100", &[], 30),
    cmd("uci set dhcp.guest.limit=50", &[], 30),
    cmd("uci set dhcp.guest.leasetime=1h", &[], 30),
    cmd("uci set firewall.guest=zone", &[], 30),
    cmd("uci set firewall.guest.name=guest", &[], 30),
    cmd("uci add_list firewall.guest.network=guest", &[], 30),
    cmd("uci set firewall.guest.input=REJECT", &[], 30),
    cmd("uci set firewall.guest.output=ACCEPT", &[], 30),
    cmd("uci set firewall.guest.forward=REJECT", &[], 30),
    cmd("uci set firewall.guest_wan=forwarding", &[], 30),
    cmd("uci set firewall.guest_wan.src=guest", &[], 30),
    cmd("uci set firewall.guest_wan.dest=wan", &[], 30),
    cmd("uci set firewall.guest_dhcp=rule", &[], 30),
    cmd("uci set firewall.guest_dhcp.name=Allow-DHCP-Guest", &[], 30),
    cmd("uci set firewall.guest_dhcp.src=guest", &[], 30),
    cmd("uci set firewall.guest_dhcp.proto=udp", &[], 30),
    cmd("uci set firewall.guest_dhcp.dest_port=67", &[], 30),
    cmd("uci set firewall.guest_dhcp.family=ipv4", &[], 30),
    cmd("uci set firewall.guest_dhcp.target=ACCEPT", &[], 30),
    cmd("uci set firewall.guest_dns=rule", &[], 30),
    cmd("uci set firewall.guest_dns.name=Allow-DNS-Guest", &[], 30),
    cmd("uci set firewall.guest_dns.src=guest", &[], 30),
    cmd("uci set firewall.guest_dns.proto=udp", &[], 30),
    cmd("uci set firewall.guest_dns.dest_port=53", &[], 30),
    cmd("uci set firewall.guest_dns.target=ACCEPT", &[], 30),
    cmd("uci commit", &[], 60),
    cmd("uci show firewall.guest", &[r"^firewall\.guest=zone$"], 30),
    cmd("sync", &[], 60),
    until_gone("poweroff", &[r"^\(domain gone "], 60),
    restart(
        120,
        &[
            r"^net: br-guest: (\S+ )*192\.168\.2\.1/24 \(/etc/config/network\); a bridge of client vifs only \(bridge_empty\), MAC 06:16:3e:01:00:02$",
            r"^net: router: forwarding between eth0, eth1 masq mtu_fix, br-guest \(conntrack max \d+\)$",
        ],
    ),
    ..ROUTER_WAN_LEASE,
    cmd(
        "ip addr show br-guest",
        &[
            r"^\d+: br-guest: .* state UP",
            r"^    link/ether 06:16:3e:01:00:02 ",
            r"^    bridge of client ports only \(bridge_empty\); ports none yet$",
            r"^    inet 192\.168\.2\.1/24 brd 192\.168\.2\.255 scope global br-guest$",
        ],
        30,
    ),
    create_client!("1", "00:16:3e:0c:00:01"),
    client_up!("1", "0"),
    create_client!(
        "2",
        "00:16:3e:0c:00:02",
        " client_probe=10.77.0.10,${LAN1},192.168.1.1,${C1},192.168.2.1",
        "br-guest"
    ),
    client_up!("2", "0", r"192\.168\.2"),
    // what client 2's probes met: the WAN host reached (the path works), lan1, the
    // router's LAN address and client 1 refused by the guest zone; the router's own
    // guest address too (input REJECT, ping is not among the allowed)
    dom0(
        "grep -a 'CLIENT: probe' /var/log/xen/console/guest-$NAME-c2.log | tr -d '\\r'",
        &[
            r"^CLIENT: probe 10\.77\.0\.10 ok$",
            r"^CLIENT: probe ${LAN1} lost$",
            r"^CLIENT: probe 192\.168\.1\.1 lost$",
            r"^CLIENT: probe ${C1} lost$",
            r"^CLIENT: probe 192\.168\.2\.1 lost$",
        ],
        30,
    ),
    ns(
        "lan1",
        "ping -c 2 -W 2 ${C2}; true",
        &[r"^2 packets transmitted, 0 received"],
        30,
    ),
    ns(
        "lan1",
        "ping -c 2 -W 3 ${C1}",
        &[r"^2 packets transmitted, 2 received"],
        30,
    ),
    cmd(
        "ip link",
        &[
            r"vif\d+\.0: .*master br-lan",
            r"vif\d+\.0: .*master br-guest",
            r"^    bridge of client ports only \(bridge_empty\); ports vif\d+\.0$",
        ],
        30,
    ),
    cmd(
        "brctl show",
        &[r"^br-guest\s+8000\.06163e010002\s+no\s+vif\d+\.0$"],
        30
    ),
    // the IFACE column as wide as br-guest: every column lines up
    cmd(
        "leases",
        &[
            r"^IFACE    ADDRESS         MAC               EXPIRES   HOSTNAME$",
            r"^eth0     192\.168\.1\.\d+ +00:16:3e:0c:00:01 ",
            r"^br-guest 192\.168\.2\.\d+ +00:16:3e:0c:00:02 ",
        ],
        30,
    ),
    last("poweroff"),
];

/// What `xen` says of the data plane's time: its polls and their parts.
const XEN_POLLS: &str = r"^core: \d+ network polls took clients \d+ us, router \d+ us, ";

/// The router as a driver domain (issue 33): its netback serves two client domUs
/// on `br-lan` beside `eth0` (dom0's brlan, lan1), each client locked to its MAC.
const ROUTER_NETBACK_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    LAN1_BY_DHCP,
    create_client!("1", "00:16:3e:0c:00:01", " client_check"),
    create_client!("2", "00:16:3e:0c:00:02"),
    client_up!("1", "0"),
    client_up!("2", "0"),
    // client 1's checks through the router's netback (`client_check`): an IPv6
    // address from the router's advertisements in the LAN's /64 of wan6's
    // delegation, ping and TCP to wan over IPv6 (its TCPv6 GSO packets and IPv6
    // partial checksums taken, as the backend offers them), TCP from wan over both
    // (64 KiB GSO packets handed to it whole, as it asked)
    dom0_cap(
        concat!(
            "log=/var/log/xen/console/guest-$NAME-c1.log; ",
            "grep -a 'CLIENT: \\(ipv6\\|ping6\\|check\\)' $log | tr -d '\\r'; ",
            "echo \"c1 domid $(xl domid $NAME-c1)\"; ",
            "echo \"c2 domid $(xl domid $NAME-c2)\""
        ),
        &[
            r"^CLIENT: ipv6 .*\b2001:db8:77[0-9a-f]{2}:",
            r"^CLIENT: ping6 ok$",
            r"^CLIENT: check iperf3 -t 3 -R: .*[0-9.]+ [KMG]bits/sec .*receiver$",
            r"^CLIENT: check iperf3 -6 -t 3: .*[0-9.]+ [KMG]bits/sec .*receiver$",
            r"^CLIENT: check iperf3 -6 -t 3 -R: .*[0-9.]+ [KMG]bits/sec .*receiver$",
            r"^CLIENT: check done$",
        ],
        &[
            ("C1_DOMID", r"^c1 domid (\d+)$"),
            ("C2_DOMID", r"^c2 domid (\d+)$"),
        ],
        30,
    ),
    // ... and its vif's counters: GSO packets both ways
    cmd(
        "ethtool -S vif${C1_DOMID}.0",
        &[r"^     rx_gso: [1-9]\d*$", r"^     tx_gso: [1-9]\d*$"],
        30,
    ),
    // the figures before the burst, to compare with those after
    cmd("xen", &[XEN_POLLS], 30),
    cmd("ethtool -S vif${C2_DOMID}.0", &[r"^     events: \d+$"], 30),
    // client 2 floods the router's address (pktgen: 5,000 60-byte UDP datagrams
    // to a closed port, 1,000 a second): the router answers a few with a port
    // unreachable and counts the rest as rate limited, as Linux does (the whole
    // measurement against client 1's TCP is `router-fairness`)
    dom0(
        "$NET/fairness.sh ${C1} ${C2} $NAME-c2 burst",
        &[r"^fairness: flood started$"],
        120,
    ),
    cmd("ip -s link", &[r"IcmpRateLimited [1-9]\d{3,}"], 30),
    // where the router's time went, by part of its network polls, and what
    // client 2's vif cost in batches, copies and notifies
    cmd("xen", &[XEN_POLLS], 30),
    cmd("ethtool -S vif${C2_DOMID}.0", &[r"^     rx_packets: [1-9]\d{3,}$"], 30),
    cmd(
        "ip link",
        &[r"vif\d+\.0: .*master br-lan", r"^\d+: br-lan: "],
        30,
    ),
    cmd("leases", &[r"00:16:3e:0c:00:01", r"00:16:3e:0c:00:02"], 30,),
    // lan1 (behind eth0) and client 1 on one LAN: switched by the router's bridge
    ns(
        "lan1",
        "ping -c 3 -W 3 ${C1}",
        &[r"^3 packets transmitted, 3 received"],
        60,
    ),
    // client 2's `ip` key set live (as libxl writes `ip=` into the backend
    // directory) to an address it does not use: its pings to the WAN, from its
    // lease, are dropped at the router and counted; set to its lease, they pass
    dom0(
        concat!(
            "be=/local/domain/$DOMID/backend/vif/$(xl domid $NAME-c2)/0; ",
            "log=/var/log/xen/console/guest-$NAME-c2.log; ",
            "xenstore-write $be/ip 192.168.1.250 && echo wrote; ",
            "sleep 1; n=$(grep -ac 'CLIENT: ping lost' $log); ",
            "for i in $(seq 40); do [ $(grep -ac 'CLIENT: ping lost' $log) -gt $((n+1)) ] && break; sleep 1; done; ",
            "echo \"spoofed lost $(( $(grep -ac 'CLIENT: ping lost' $log) - n ))\""
        ),
        &[r"^wrote$", r"^spoofed lost ([2-9]|\d\d+)$"],
        60,
    ),
    cmd(
        "ip link",
        &[r"^    source ip 192\.168\.1\.250 \([1-9]\d* spoofed dropped\)$"],
        30,
    ),
    dom0(
        concat!(
            "be=/local/domain/$DOMID/backend/vif/$(xl domid $NAME-c2)/0; ",
            "log=/var/log/xen/console/guest-$NAME-c2.log; ",
            "xenstore-write $be/ip ${C2} && echo wrote; ",
            "n=$(grep -ac 'CLIENT: ping ok' $log); ",
            "for i in $(seq 40); do [ $(grep -ac 'CLIENT: ping ok' $log) -gt $((n+1)) ] && break; sleep 1; done; ",
            "echo \"allowed ok $(( $(grep -ac 'CLIENT: ping ok' $log) - n ))\""
        ),
        &[r"^wrote$", r"^allowed ok ([2-9]|\d\d+)$"],
        60,
    ),
    cmd("ip link", &[r"^    source ip ${C2} \(\d+ spoofed dropped\)$"], 30),
    // client 1 goes away (its vif closed and unmapped by the router) and comes back
    dom0(
        concat!(
            "xl destroy $NAME-c1 && echo destroyed; ",
            "mv /var/log/xen/console/guest-$NAME-c1.log /var/log/xen/console/guest-$NAME-c1.old; ",
            "sleep 3; xenstore-ls /local/domain/$DOMID/backend/vif 2>&1 | head -20; true"
        ),
        &[r"^destroyed$"],
        60,
    ),
    cmd("ip link", &[r"vif\d+\.0: "], 30),
    create_client!("1", "00:16:3e:0c:00:01"),
    client_up!("1", "0"),
    client_up!("2", "5"),
    last("poweroff"),
];

/// The Linux router as a driver domain (the peer of [`ROUTER_NETBACK_STEPS`]): its
/// xen-netback serves two client domUs on br-lan beside eth0 (dom0's brlan, lan1);
/// each vif connected only once the init's devd wrote its `hotplug-status`.
const ROUTER_NETBACK_LINUX_STEPS: &[Step] = steps![
    LINUX_DRIVER_DOMAIN_UP,
    DOM0_DOES_NOT_FORWARD,
    // lan1 through eth0, a port of br-lan, to the bridge's address
    LAN1_BY_DHCP,
    create_client!("1", "00:16:3e:0c:00:01"),
    create_client!("2", "00:16:3e:0c:00:02"),
    client_up!("1", "0"),
    client_up!("2", "0"),
    // the devd put both vifs on br-lan and said they were plugged in
    cmd(
        "cat /tmp/devd.log; echo \"connected: $(grep -c 'hotplug-status connected$' /tmp/devd.log)\"",
        &[
            r"^devd: vif\d+\.0 \(domain \d+ vif 0\) on br-lan \(backend state \d, hotplug-status was '.*'\), /local/domain/\d+/backend/vif/\d+/0/hotplug-status connected$",
            r"^connected: 2$",
        ],
        30,
    ),
    // both backends Connected (4) in this domain, as dom0's toolstack sees them
    dom0(
        concat!(
            "for c in c1 c2; do d=$(xl domid $NAME-$c); be=/local/domain/$DOMID/backend/vif/$d/0; ",
            "echo \"$c backend $be state $(xenstore-read $be/state) hotplug-status $(xenstore-read $be/hotplug-status) ",
            "frontend state $(xenstore-read /local/domain/$d/device/vif/0/state)\"; done; ",
            "xl network-list $NAME-c1"
        ),
        &[
            r"^c1 backend /local/domain/\d+/backend/vif/\d+/0 state 4 hotplug-status connected frontend state 4$",
            r"^c2 backend /local/domain/\d+/backend/vif/\d+/0 state 4 hotplug-status connected frontend state 4$",
        ],
        30,
    ),
    cmd(
        "echo \"ports: $(ls /sys/class/net/br-lan/brif | tr '\\n' ' ')\"",
        &[r"^ports: eth0 vif\d+\.0 vif\d+\.0 $"],
        30,
    ),
    cmd(
        "nft list chain inet fw4 input",
        &[r#"iifname "br-lan" jump input_lan"#],
        30,
    ),
    // lan1 (behind eth0) and client 1 on one LAN: switched by the router's bridge
    ns(
        "lan1",
        "ping -c 3 -W 3 ${C1}",
        &[r"^3 packets transmitted, 3 received"],
        60,
    ),
    // ... and the clients still reach the WAN through the router's NAT
    client_up!("1", "3"),
    client_up!("2", "3"),
    // busybox's ip has no -s: the counters from /proc
    cmd(
        "ip link show br-lan; cat /proc/net/dev",
        &[r"^\d+: br-lan: ", r"^\s*vif\d+\.0:"],
        30,
    ),
    last("poweroff -f"),
];

/// The Xenlet router: the WAN lease, then the LAN checks (lan1 by DHCP from Xenlet's
/// server, names through its DNS forwarder), with its own conntrack table showing the
/// two UDP flows' distinct mappings, and fw4's default firewall keeping the WAN out.
/// IPv6 on the LAN from the image's defaults (issue 31's LAN side): the ULA prefix
/// made at first boot from `ula_prefix 'auto'` and written back, the router's
/// `<ula>::1/64` as `${ULA}::1`; its router advertisements give lan1 a SLAAC address in
/// that /64 (lan1's kernel: accept_ra on, not forwarding); lan1 pings the router's
/// ULA and asks its DNS forwarder over IPv6 for the router's own name (AAAA: the
/// ULA) and for a WAN name (forwarded upstream over IPv4).
const LAN_IPV6: &[Step] = &[
    cmd(
        "uci get network.globals.ula_prefix",
        &[r"^fd[0-9a-f]{2}:[0-9a-f]{1,4}:[0-9a-f]{1,4}::/48$"],
        30,
    ),
    cmd_cap(
        "ip -6 addr show eth0",
        &[r"^    inet6 fd[0-9a-f:]+::1/64 scope global", r"^    inet6 fe80::"],
        &[("ULA", r"^    inet6 (fd[0-9a-f:]+)::1/64 scope global")],
        30,
    ),
    ns(
        "lan1",
        "i=0; while [ $i -lt 60 ] && ! ip -6 addr show dev eth0 scope global | grep -q 'inet6 ${ULA}:'; do sleep 0.5; i=$((i+1)); done; ip -6 addr show dev eth0 scope global",
        &[r"inet6 ${ULA}:[0-9a-f:]+/64 scope global"],
        60,
    ),
    ns(
        "lan1",
        "ping -6 -c 2 -W 5 ${ULA}::1",
        &[r"^2 packets transmitted, 2 received"],
        30,
    ),
    ns(
        "lan1",
        "busybox nslookup -type=AAAA OpenWrt.lan ${ULA}::1; busybox nslookup public.wan ${ULA}::1; true",
        &[r"^Address:\s+${ULA}::1$", r"^Address:\s+100\.64\.0\.7$"],
        60,
    ),
    // a stateful address from the router's DHCPv6 server (the RA's M flag, as the
    // image's ra_flags ask), named lan1 by its FQDN option: in the leases, and
    // lan1.lan answers AAAA with it
    ns(
        "lan1",
        "printf 'send fqdn.fqdn \"lan1\";\n' >/tmp/dhc6.conf; timeout 40 dhclient -6 -1 -v -cf /tmp/dhc6.conf -lf /tmp/dhc6.leases -pf /tmp/dhc6.pid eth0 2>&1 | tail -3; ip -6 addr show dev eth0 scope global | grep -o 'inet6 [^ ]*/128'",
        &[r"^inet6 ${ULA}::[0-9a-f]{3}/128$"],
        60,
    ),
    cmd("leases", &[r"^eth0 +${ULA}::[0-9a-f]{3} .*lan1"], 30),
    ns(
        "lan1",
        "busybox nslookup -type=AAAA lan1.lan ${ULA}::1; true",
        &[r"^Address:\s+${ULA}::[0-9a-f]{3}$"],
        30,
    ),
    ns("lan1", "dhclient -6 -x -pf /tmp/dhc6.pid eth0 2>&1; true", &[], 30),
    cmd(
        "dnsmasq",
        &[r"ipv6-queries [1-9]", r"^ra eth0: ", r"^dhcpv6 eth0: "],
        30,
    ),
];

/// The LAN's /64 of wan6's delegation in `ifstatus wan6` (`lan eth0 PREFIX::/64`):
/// its first four groups at most, as `${PD64}:` begins an address in it.
pub const IFSTATUS_LAN_PD64: &str = r"lan eth0 (2001:db8:77[0-9a-f]{2}(?::[0-9a-f]{1,4})?)::/64";

/// IPv6 on the WAN (`wan6`, `proto dhcpv6`, as odhcp6c does): dom0's side is up
/// (`router.sh up`: RA and dhcpd -6 in `wan`, the return route of the delegated
/// prefixes); the router has its WAN address, a /56 delegated, the default route
/// via wan's link-local address and wan's DNS server (`ifstatus wan6`); the LAN's
/// /64 of the delegation is on eth0 (the router at ::1) and lan1 takes an address in
/// it from the router's advertisements (`${PD64}`, `${LAN1_6}`); lan1 reaches wan
/// over IPv6 (ping, TCP) through the router, not masqueraded (wan sees lan1's own
/// address); a new TCP connection from wan to lan1 is refused by fw4's rules.
const WAN_IPV6: &[Step] = &[
    dom0(
        "$NET/router.sh show",
        &[
            r"^brwan ipv6: .*2001:db8:77::1/64",
            r"wan route6: 2001:db8:7700::/40 via fe80::216:3eff:fe77:2 dev eth0",
        ],
        20,
    ),
    dom0(
        "echo \"dhcpd6: $(pgrep -c -x dhcpd)\"; tail -3 $TOPO/dhcpd6.log",
        &[r"^dhcpd6: [1-9]"],
        20,
    ),
    cmd_cap(
        "ifstatus wan6",
        &[
            r"^wan6: eth1 bound",
            r"prefix 2001:db8:77[0-9a-f]{2}:[0-9a-f:]*/56 preferred \d+s valid \d+s",
            r"^wan6: router fe80::[0-9a-f:]+ lifetime [1-9]\d*s",
            r"^wan6: dns 2001:db8:77::1\b",
        ],
        &[("PD64", IFSTATUS_LAN_PD64)],
        30,
    ),
    cmd(
        "ip -6 addr show eth0",
        &[r"^    inet6 ${PD64}::1/64 scope global"],
        30,
    ),
    ns_cap(
        "lan1",
        "i=0; while [ $i -lt 60 ] && ! ip -6 addr show dev eth0 scope global | grep -q 'inet6 ${PD64}:'; do sleep 0.5; i=$((i+1)); done; ip -6 addr show dev eth0 scope global; ip -6 route show default",
        &[
            r"inet6 ${PD64}:[0-9a-f:]+/64 scope global",
            r"^default via fe80::216:3eff:fe01:2 dev eth0",
        ],
        &[("LAN1_6", r"inet6 (2001:db8:77[0-9a-f:]+)/64 scope global")],
        60,
    ),
    // every echo answered, the first too: the router holds a packet while it
    // resolves its next hop (wan on the WAN, then lan1's fresh address on the LAN)
    ns(
        "lan1",
        "ping -6 -c 3 -W 5 2001:db8:77::10",
        &[r"^3 packets transmitted, 3 received"],
        30,
    ),
    // TCP over IPv6 from lan1 to wan: wan sees lan1's own address (no NAT66); the
    // listeners' output goes nowhere (a step waits for its output to close)
    ns(
        "wan",
        "(timeout 30 socat -T 5 TCP6-LISTEN:7778,reuseaddr SYSTEM:'echo \"you are $SOCAT_PEERADDR\"' </dev/null >/dev/null 2>&1 &) ; sleep 0.5; echo listening",
        &[r"^listening$"],
        10,
    ),
    ns(
        "lan1",
        // (socat writes the peer's address in full: compressed again to compare)
        "socat -T 5 - TCP6:[2001:db8:77::10]:7778,connect-timeout=5 </dev/null | python3 -c \"import sys,ipaddress; l=sys.stdin.read(); print('you are', ipaddress.ip_address(l.split('[')[1].split(']')[0]) if '[' in l else l)\"",
        &[r"^you are ${LAN1_6}$"],
        30,
    ),
    // from wan: a new TCP connection to lan1 is refused by the firewall, though
    // lan1 listens (the same listener answers lan1 itself)
    ns(
        "lan1",
        "(timeout 30 socat TCP6-LISTEN:7779,reuseaddr,fork SYSTEM:'echo hello' </dev/null >/dev/null 2>&1 &) ; sleep 0.5; socat -T 3 - TCP6:[::1]:7779 </dev/null",
        &[r"^hello$"],
        10,
    ),
    ns(
        "wan",
        "ip -6 route show 2001:db8:7700::/40; socat -T 3 - TCP6:[${LAN1_6}]:7779,connect-timeout=4 </dev/null; echo \"lan tcp rc=$?\"",
        &[r"^lan tcp rc=[1-9]"],
        30,
    ),
];

/// An IPv6 rule from the WAN made the OpenWrt way (`uci add firewall rule`, `uci
/// commit`, `reload`): wan -> lan1's address, TCP port 80, accepted; before it port
/// 80 is refused, after it another port of lan1 still is.
const V6_ALLOW_RULE: &[Step] = &[
    ns(
        "lan1",
        "for p in 80 81; do (timeout 120 socat TCP6-LISTEN:$p,reuseaddr,fork SYSTEM:\"echo web $p\" </dev/null >/dev/null 2>&1 &) ; done; sleep 0.5; ss -ltn | grep -c ':8[01] '",
        &[r"^2$"],
        10,
    ),
    ns(
        "wan",
        "socat -T 3 - TCP6:[${LAN1_6}]:80,connect-timeout=4 </dev/null; echo \"before rc=$?\"",
        &[r"^before rc=[1-9]"],
        30,
    ),
    cmd("uci add firewall rule", &[r"^cfg[0-9a-f]+$"], 30),
    cmd("uci set firewall.@rule[-1].name=Allow-HTTP-lan1", &[], 30),
    cmd("uci set firewall.@rule[-1].src=wan", &[], 30),
    cmd("uci set firewall.@rule[-1].dest=lan", &[], 30),
    cmd("uci set firewall.@rule[-1].family=ipv6", &[], 30),
    cmd("uci set firewall.@rule[-1].proto=tcp", &[], 30),
    cmd("uci set firewall.@rule[-1].dest_ip=${LAN1_6}", &[], 30),
    cmd("uci set firewall.@rule[-1].dest_port=80", &[], 30),
    cmd("uci set firewall.@rule[-1].target=ACCEPT", &[], 30),
    cmd(
        "uci changes firewall",
        &[r"^firewall\.cfg[0-9a-f]+\.dest_ip='${LAN1_6}'$"],
        30,
    ),
    cmd("uci commit firewall", &[], 30),
    cmd("reload", &[r"^reload: firewall rules replaced"], 30),
    ns(
        "wan",
        "socat -T 3 - TCP6:[${LAN1_6}]:80,connect-timeout=4 </dev/null; echo \"allowed rc=$?\"",
        &[r"^web 80$", r"^allowed rc=0$"],
        30,
    ),
    ns(
        "wan",
        "socat -T 3 - TCP6:[${LAN1_6}]:81,connect-timeout=4 </dev/null; echo \"other port rc=$?\"",
        &[r"^other port rc=[1-9]"],
        30,
    ),
    cmd("fw", &[r"Allow-HTTP-lan1"], 30),
];

/// Duplicate address detection of the router's own IPv6 addresses: lan2 has
/// fd00:dad::5 (and answers a probe for it, as Linux does); the router given the same
/// address probes it, hears lan2's advertisement and drops it, as Linux's `DAD
/// failed`. (Every address the router takes is probed: the ULA, the delegated /64's
/// ::1 before and after the renumbering below, kept since nobody else has them.)
const DAD: &[Step] = &[
    ns(
        "lan2",
        "ip -6 addr add fd00:dad::5/64 dev eth0 nodad; ip -6 addr show dev eth0 | grep -c 'inet6 fd00:dad::5/64'",
        &[r"^1$"],
        10,
    ),
    cmd("ip addr add fd00:dad::5/64 dev eth0", &[], 30),
    wait_output(r"ipv6: fd00:dad::5 duplicate on eth0, not used", 20),
    ns(
        "lan2",
        "ip -6 addr del fd00:dad::5/64 dev eth0; echo removed",
        &[r"^removed$"],
        10,
    ),
];

/// `reload` applies `/etc/config/dhcp`'s RA settings to the running router:
/// `ra_flags none` set with uci, committed and reloaded; the router says so and its
/// next advertisement, at once, carries neither M nor O (lan1 hears it: tcpdump's
/// `Flags [none]`), where before it carried both (the image's `managed-config
/// other-config`).
const RA_RELOAD: &[Step] = &[
    ns(
        "lan1",
        "(timeout 60 tcpdump -n -l -v -i eth0 'icmp6 and ip6[40] == 134' </dev/null >$TOPO/lan1-ra.txt 2>/dev/null &) ; sleep 1; echo capturing",
        &[r"^capturing$"],
        10,
    ),
    cmd("uci delete dhcp.lan.ra_flags", &[], 30),
    cmd("uci add_list dhcp.lan.ra_flags=none", &[], 30),
    cmd("uci commit dhcp", &[], 30),
    cmd("reload", &[r"^reload: ra: eth0 now "], 30),
    ns(
        "lan1",
        "sleep 4; cat $TOPO/lan1-ra.txt",
        &[r"router advertisement", r"Flags \[none\]"],
        15,
    ),
    cmd("dnsmasq", &[r"^ra eth0: "], 30),
];

/// `reload` applies `/etc/config/dhcp`'s DHCPv4 settings to the running router:
/// `leasetime` 2h set with uci, committed and reloaded; the router says its pool
/// changed (leases that fit kept), and the next lease lan1 asks for (busybox
/// udhcpc, not applied) comes from the new settings: lease time 7200 s, where the
/// image's is 12 h.
const DHCP4_RELOAD: &[Step] = &[
    cmd("uci set dhcp.lan.leasetime=2h", &[], 30),
    cmd("uci commit dhcp", &[], 30),
    cmd(
        "reload",
        &[
            r"^reload: dhcpd: eth0 now 192\.168\.1\.100-249, lease 2h \(\d+ leases kept, 0 dropped\)$",
        ],
        30,
    ),
    ns(
        "lan1",
        "busybox udhcpc -i eth0 -n -q -t 3 -T 2 -s /bin/true 2>&1",
        &[r"lease of 192\.168\.1\.\d+ obtained from 192\.168\.1\.1, lease time 7200"],
        30,
    ),
];

/// `reload` applies a new LAN address (the most common OpenWrt change, `uci set
/// network.lan.ipaddr`): the router takes 192.168.7.1/24 off 192.168.1.1/24 at once,
/// its DHCP pool moves to the new subnet (the old leases dropped: they do not fit
/// it), lan1 asking again gets a lease there with the router as gateway and DNS, and
/// reaches the WAN through NAT; the router's own name resolves to its new address.
const LAN4_RELOAD: &[Step] = &[
    cmd("uci set network.lan.ipaddr=192.168.7.1", &[], 30),
    cmd("uci commit network", &[], 30),
    cmd(
        "reload",
        &[
            r"^reload: eth0: 192\.168\.1\.1/24 removed$",
            r"^reload: eth0: 192\.168\.7\.1/24 added$",
            r"^reload: dhcpd: eth0 now 192\.168\.7\.100-249, lease 2h \(0 leases kept, \d+ dropped\)$",
            r"^reload: firewall rules replaced \(established flows kept\)$",
        ],
        30,
    ),
    cmd("ip addr show eth0", &[r"inet 192\.168\.7\.1/24"], 30),
    dom0(
        "$NET/router.sh dhcp lan1",
        &[
            r"^netns lan1: 192\.168\.7\.\d+/24 route: default via 192\.168\.7\.1 dev eth0 .*dns: 192\.168\.7\.1",
        ],
        90,
    ),
    LAN1_PINGS_WAN,
    ns(
        "lan1",
        "busybox nslookup OpenWrt.lan 192.168.7.1",
        &[r"Address:\s+192\.168\.7\.1$"],
        30,
    ),
    cmd("leases", &[r"^eth0 +192\.168\.7\.\d+ "], 30),
];

/// OpenWrt's `ifdown wan` / `ifup wan`: down stops the WAN's DHCPv4 client and drops
/// its lease (lan1 no longer reaches wan), up asks for a lease afresh (the router
/// says it on its console) and lan1 reaches wan again through NAT.
const WAN_IFUPDOWN: &[Step] = &[
    cmd(
        "ifdown wan",
        &[r"^ifdown: eth1: DHCPv4 stopped, lease 10\.77\.0\.\d+/24 dropped$"],
        30,
    ),
    cmd("ifstatus wan", &[r"^wan: eth1 down, proto dhcp$"], 30),
    ns(
        "lan1",
        "ping -c 2 -W 2 10.77.0.10; true",
        &[r"^2 packets transmitted, 0 received"],
        30,
    ),
    cmd("ifup wan", &[r"^ifup: eth1: DHCPv4 started$"], 30),
    wait_output(r"eth1: DHCP lease 10\.77\.0\.\d+/24 via 10\.77\.0\.10", 40),
    LAN1_PINGS_WAN,
    cmd(
        "ifstatus wan",
        &[
            r"^wan: eth1 up, proto dhcp, address 10\.77\.0\.\d+/24, gateway 10\.77\.0\.10, dns 10\.77\.0\.1$",
        ],
        30,
    ),
];

/// The WAN switched from DHCP to static with uci and `reload`, as netifd restarts an
/// interface whose `proto` changed: its lease dropped, 10.77.0.50/24 via 10.77.0.10
/// put on, and lan1's TCP to wan comes from the new address (NAT's masquerading
/// address followed it); switched back, it asks for a lease and lan1 reaches wan.
const WAN_PROTO_RELOAD: &[Step] = &[
    cmd("uci set network.wan.proto=static", &[], 30),
    cmd("uci set network.wan.ipaddr=10.77.0.50", &[], 30),
    cmd("uci set network.wan.netmask=255.255.255.0", &[], 30),
    cmd("uci set network.wan.gateway=10.77.0.10", &[], 30),
    cmd("uci commit network", &[], 30),
    cmd(
        "reload",
        &[
            r"^reload: eth1: proto dhcp -> static$",
            r"^reload: eth1: DHCPv4 stopped, lease 10\.77\.0\.\d+/24 dropped$",
            r"^reload: eth1: 10\.77\.0\.50/24 added$",
            r"^reload: eth1: gateway 10\.77\.0\.10$",
        ],
        30,
    ),
    ns(
        "lan1",
        "socat -t 10 -T 10 - TCP:10.77.0.10:7777,connect-timeout=10 </dev/null",
        &[r"^you are 10\.77\.0\.50:\d+$"],
        30,
    ),
    cmd("uci set network.wan.proto=dhcp", &[], 30),
    cmd("uci delete network.wan.ipaddr", &[], 30),
    cmd("uci delete network.wan.netmask", &[], 30),
    cmd("uci delete network.wan.gateway", &[], 30),
    cmd("uci commit network", &[], 30),
    cmd(
        "reload",
        &[
            r"^reload: eth1: proto static -> dhcp$",
            r"^reload: eth1: 10\.77\.0\.50/24 removed$",
            r"^reload: eth1: gateway removed$",
            r"^reload: eth1: DHCPv4 started$",
        ],
        30,
    ),
    wait_output(r"eth1: DHCP lease 10\.77\.0\.\d+/24 via 10\.77\.0\.10", 40),
    LAN1_PINGS_WAN,
];

/// The router's commands refuse what does not exist with one line each, named once
/// by the command (as OpenWrt's tools say it).
const ROUTER_CMD_ERRORS: &[Step] = &[
    cmd(
        "ifup nosuch",
        &[r"^ifup: interface 'nosuch' not found "],
        30,
    ),
    cmd(
        "uci get network.nosuch.ipaddr",
        &[r"^uci: Entry not found$"],
        30,
    ),
    cmd(
        "ifstatus nosuch",
        &[r"^ifstatus: nosuch: no such interface "],
        30,
    ),
    cmd(
        "ifstatus lan",
        &[r"^lan: eth0 up, proto static, address 192\.168\.7\.1/24$"],
        30,
    ),
    cmd(
        "service nosuch reload",
        &[r"^service: nosuch: no such service$"],
        30,
    ),
];

/// OpenWrt's habits for applying `/etc/config`: `/etc/init.d/network reload`,
/// `service firewall restart` (said to be applied as a reload) and `reload_config`
/// each do what `reload` does.
const INIT_SCRIPTS: &[Step] = &[
    cmd(
        "/etc/init.d/network reload",
        &[r"^reload: firewall rules replaced \(established flows kept\)$"],
        30,
    ),
    cmd(
        "service firewall restart",
        &[
            r"^firewall: restart applied as reload: ",
            r"^reload: firewall rules replaced ",
        ],
        30,
    ),
    cmd("reload_config", &[r"^reload: firewall rules replaced "], 30),
];

/// `reload` applies `wan6`'s own options, as netifd restarts an interface whose
/// options changed: `reqprefix no` set with uci, committed and reloaded; the router
/// releases its lease (wan's dhcpd6 logs the Release) and is bound again with an
/// address and no prefix; lan1's address in the delegated /64 is deprecated (the
/// router's advertisement of it with lifetimes 0). `reqprefix` deleted (`auto`
/// again): a new delegation, lan1 a preferred address in its /64, and the WAN
/// reached from it.
const WAN6_RELOAD: &[Step] = &[
    cmd("uci set network.wan6.reqprefix=no", &[], 30),
    cmd("uci commit network", &[], 30),
    cmd(
        "reload",
        &[r"^reload: wan6: eth1 restarted \(address try, prefix no\), lease released$"],
        30,
    ),
    dom0(
        "sleep 3; grep -E 'Release message|Solicit message' $TOPO/dhcpd6.log | tail -4",
        &[r"Release message from fe80::"],
        20,
    ),
    ns(
        "lan1",
        "i=0; while [ $i -lt 30 ] && ! ip -6 addr show dev eth0 | grep -q 'inet6 ${NEW6}/64 scope global deprecated'; do sleep 1; i=$((i+1)); done; echo \"waited $i s\"; ip -6 addr show dev eth0 scope global",
        &[r"inet6 ${NEW6}/64 scope global deprecated dynamic"],
        40,
    ),
    cmd(
        "ifstatus wan6",
        &[r"^wan6: eth1 bound address [0-9a-f:]+/128 preferred \d+s valid \d+s renew in \d+s$"],
        30,
    ),
    cmd("uci delete network.wan6.reqprefix", &[], 30),
    cmd("uci commit network", &[], 30),
    cmd(
        "reload",
        &[r"^reload: wan6: eth1 restarted \(address try, prefix auto\), lease released$"],
        30,
    ),
    ns(
        "lan1",
        "i=0; while [ $i -lt 30 ] && ! ip -6 addr show dev eth0 scope global | grep -v deprecated | grep -q 'inet6 2001:db8:77'; do sleep 1; i=$((i+1)); done; echo \"waited $i s\"; ip -6 addr show dev eth0 scope global",
        &[r"inet6 2001:db8:77[0-9a-f:]+/64 scope global dynamic"],
        40,
    ),
    cmd_cap(
        "ifstatus wan6",
        &[
            r"^wan6: eth1 bound address ",
            r"prefix 2001:db8:77[0-9a-f:]*/56 preferred \d+s valid \d+s",
        ],
        &[("PD64C", IFSTATUS_LAN_PD64)],
        30,
    ),
    ns_cap(
        "lan1",
        "ip -6 addr show dev eth0 scope global",
        &[r"inet6 ${PD64C}:[0-9a-f:]+/64 scope global dynamic"],
        &[("ADDR6C", r"inet6 (2001:db8:77[0-9a-f:]+)/64 scope global dynamic")],
        30,
    ),
    ns(
        "lan1",
        "ping -6 -c 3 -W 5 -I ${ADDR6C} 2001:db8:77::10",
        &[r"^3 packets transmitted, 3 received"],
        30,
    ),
];

/// The ISP renumbers (`router.sh renumber`: wan's DHCPv6 server comes back with
/// another range and no bindings): at its next Renew the router gets a new /56, the
/// LAN a new /64 by SLAAC, the old /64 announced with lifetimes 0 so lan1's address
/// in it is deprecated at once; the router announces its new address by an
/// unsolicited neighbour advertisement; lan1 reaches wan from its new address.
const RENUMBER: &[Step] = &[
    cmd("ifstatus wan6", &[r"^wan6: eth1 bound .* renew in \d+s"], 30),
    // lan1 keeps the neighbour advertisements to all nodes it hears
    ns(
        "lan1",
        "(timeout 400 tcpdump -n -l -v -i eth0 'icmp6 and ip6[40] == 136 and ip6 dst ff02::1' </dev/null >$TOPO/lan1-na.txt 2>/dev/null &) ; sleep 1; echo capturing",
        &[r"^capturing$"],
        10,
    ),
    dom0(
        "$NET/router.sh renumber",
        &[r"^renumber: dhcpd6 pid \d+ listening [1-9]"],
        30,
    ),
    // the Renew at T1 (half the preferred 300 s, from the Reply) or the Rebind at T2
    ns(
        "lan1",
        "i=0; while [ $i -lt 330 ] && ! ip -6 addr show dev eth0 scope global | grep -v '${PD64}:' | grep -q 'inet6 2001:db8:77'; do sleep 1; i=$((i+1)); done; sleep 2; echo \"waited $i s\"; ip -6 addr show dev eth0 scope global",
        &[r"inet6 2001:db8:77[89a-f][0-9a-f]:[0-9a-f:]+/64 scope global dynamic"],
        360,
    ),
    // what the server saw: the Renew it had no binding for (or the Rebind), the
    // Request, the new /56
    dom0(
        "grep -E '(Renew|Rebind|Request) message|Reply (NA|PD)|NoBinding|not bound' $TOPO/dhcpd6.log | tail -8",
        &[r"Reply PD: address 2001:db8:77[89a-f][0-9a-f]:"],
        20,
    ),
    cmd_cap(
        "ifstatus wan6",
        &[
            r"^wan6: eth1 bound",
            r"prefix 2001:db8:77[89a-f][0-9a-f]:[0-9a-f:]*/56 preferred \d+s valid \d+s",
        ],
        &[("NEWPD64", IFSTATUS_LAN_PD64)],
        30,
    ),
    cmd(
        "ip -6 addr show eth0",
        &[r"^    inet6 ${NEWPD64}::1/64 scope global"],
        30,
    ),
    // the router's new address, probed for a second and then announced to all
    // nodes with the Router and Override flags
    ns(
        "lan1",
        "cat $TOPO/lan1-na.txt",
        &[r"tgt is ${NEWPD64}::1, Flags \[router.*override"],
        10,
    ),
    // the new address preferred, the old one deprecated (preferred_lft 0: the
    // router's advertisement of the old /64 with lifetimes 0)
    ns_cap(
        "lan1",
        "ip -6 addr show dev eth0 scope global",
        &[
            r"inet6 ${NEWPD64}:[0-9a-f:]+/64 scope global dynamic",
            r"inet6 ${LAN1_6}/64 scope global deprecated dynamic",
            r"preferred_lft 0sec",
        ],
        &[("NEW6", r"inet6 (2001:db8:77[0-9a-f:]+)/64 scope global dynamic")],
        30,
    ),
    ns(
        "lan1",
        "ping -6 -c 3 -W 5 -I ${NEW6} 2001:db8:77::10",
        &[r"^3 packets transmitted, 3 received"],
        30,
    ),
    cmd("dnsmasq", &[r"^ra eth0: "], 30),
];

const ROUTER_IPV6_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    ..WAN_IPV6,
    // the flow in the IPv6 table, with lan1's own address
    cmd(
        "conntrack -L",
        &[r"src=${LAN1_6} dst=2001:db8:77::10 sport=\d+ dport=7778 "],
        30,
    ),
    ..V6_ALLOW_RULE,
    ..DAD,
    ..RENUMBER,
    ..RA_RELOAD,
    ..DHCP4_RELOAD,
    ..WAN6_RELOAD,
    ..LAN4_RELOAD,
    ..WAN_IFUPDOWN,
    ..WAN_PROTO_RELOAD,
    ..ROUTER_CMD_ERRORS,
    ..INIT_SCRIPTS,
    last("poweroff"),
];

/// What `ethtool -S` prints of a vif that has carried traffic.
const ETHTOOL_VIF: &[&str] = &[
    r"^NIC statistics:$",
    r"^     events: [1-9]\d*$",
    r"^     rx_packets: [1-9]\d*$",
    r"^     tx_slots: [1-9]\d*$",
    r"^     tx_notify_suppressed: \d+$",
];

const ROUTER_XENLET_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    DOM0_DOES_NOT_FORWARD,
    LAN1_BY_DHCP,
    cmd("leases", &[r"192\.168\.1\.\d+"], 30),
    // the vifs' driver counters before and after the transfers (issue 34: slots per
    // packet, packets per batch, notifications sent and suppressed; the difference
    // is the transfers' and their pings')
    cmd("ethtool -S eth0", ETHTOOL_VIF, 30),
    cmd("ethtool -S eth1", ETHTOOL_VIF, 30),
    ..LAN_THROUGH_NAT,
    cmd("ethtool -S eth0", ETHTOOL_VIF, 30),
    cmd("ethtool -S eth1", ETHTOOL_VIF, 30),
    cmd("ip -s link show eth0", &[r"^\d+: eth0: "], 30),
    // no segment of those transfers was taken for out of window (the window
    // tracking once dropped every wan -> lan1 segment past the first 1000 bytes:
    // 0.1 Mbit/s, and the transfer still "passed")
    cmd("conntrack -S", &[r" tcp out of window 0$"], 30),
    cmd("conntrack -L", UDP_MAPPINGS_IN_CONNTRACK, 30,),
    DISTINCT_MAPPINGS,
    // DNS through Xenlet's forwarder, with OpenWrt's defaults: a public address is
    // forwarded and then cached (public.wan: 100.64.0.7, RFC 6598 shared space, which
    // dnsmasq does not count as private; a record only, nothing connects to it); a
    // private one for an upstream name is dropped (rebind protection: dnsmasq's
    // default on OpenWrt, which server.wan's 10.77.0.10 trips); the router's own name
    // is answered locally
    ns(
        "lan1",
        "busybox nslookup public.wan 192.168.1.1; busybox nslookup public.wan 192.168.1.1; \
         busybox nslookup server.wan 192.168.1.1; busybox nslookup OpenWrt.lan 192.168.1.1; true",
        &[
            r"^Address:\s+100\.64\.0\.7$",
            r"^Address:\s+192\.168\.1\.1$",
        ],
        60,
    ),
    cmd(
        "dnsmasq",
        &[
            r"^dns: queries \d+ forwarded [1-9]\d* merged \d+ cache-hits [1-9]\d* local [1-9]\d* .* rebind [1-9]",
        ],
        30,
    ),
    ..PATH_AND_WAN_CHECKS,
    ..LAN_IPV6,
    // the 3,000-byte echoes were put back together by the router
    cmd(
        "conntrack -S",
        &[r"^reassembly: fragments [1-9]\d* reassembled [1-9]\d* "],
        30,
    ),
    // a flood of 65,000 new flows from lan1 (one UDP datagram to each port of `wan`):
    // the table stays bounded, every flow is accounted for, the shell answers, and a
    // new flow still gets through
    FLOW_FLOOD,
    cmd_cap("conntrack -C", &[r"^\d+$"], &[("CT_COUNT", r"^(\d+)$")], 30),
    cmd(
        "conntrack -S",
        &[r"^flows: new \d+ = live \d+ \+ evicted [1-9]\d* \+ .*\(balanced\)"],
        30,
    ),
    LAN1_PINGS_WAN,
    cmd(
        "fw",
        &[r"^\s+chain input_wan \{", r"^\s+chain forward_lan \{"],
        30,
    ),
    cmd("logread", &[r"^reject wan in: IN=eth1 "], 30),
    cmd(
        "ip -s link show eth1",
        &[
            r"^\d+: eth1: ",
            r"^forwarding \(router\):$",
            r"^  dropped: ",
        ],
        30,
    ),
    cmd(
        "ip route",
        &[
            r"^default via 10\.77\.0\.10 dev eth1",
            r"^192\.168\.1\.0/24 dev eth0 ",
        ],
        30,
    ),
    cmd(
        "ip neigh",
        &[r"^10\.77\.0\.10 dev eth1 lladdr [0-9a-f:]{17} "],
        30,
    ),
    // the deepest the boot stack has been after all of the above (a guard page
    // below it turns an overflow into a fault report)
    cmd(
        "mem",
        &[r"^heap: ", r"^stack: 64 KiB, at most \d+ KiB used so far"],
        30,
    ),
    last("poweroff"),
];

/// The uci port forward `Forward-8080`, staged: wan tcp 8080 -> `$ip`:`$port` (a DNAT
/// redirect to the LAN).
macro_rules! forward_8080 {
    ($ip:literal, $port:literal) => {
        &[
            cmd("uci add firewall redirect", &[r"^cfg[0-9a-f]+$"], 30),
            cmd("uci set firewall.@redirect[-1].name=Forward-8080", &[], 30),
            cmd("uci set firewall.@redirect[-1].src=wan", &[], 30),
            cmd("uci set firewall.@redirect[-1].src_dport=8080", &[], 30),
            cmd("uci set firewall.@redirect[-1].dest=lan", &[], 30),
            cmd(
                concat!("uci set firewall.@redirect[-1].dest_ip=", $ip),
                &[],
                30,
            ),
            cmd(
                concat!("uci set firewall.@redirect[-1].dest_port=", $port),
                &[],
                30,
            ),
            cmd("uci set firewall.@redirect[-1].proto=tcp", &[], 30),
            cmd("uci set firewall.@redirect[-1].target=DNAT", &[], 30),
        ]
    };
}

/// A port forward made the OpenWrt way on the running router: `uci add` a `redirect`
/// (wan:8080 -> lan1:7777), `uci commit`, `reload`; then `wan` reaches lan1's
/// responder through the router's WAN address, and the file on the root disk holds
/// the new section.
const ROUTER_XENLET_FW_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    LAN1_STATIC,
    ns(
        "wan",
        "socat -T 3 - TCP:${ROUTER_WAN}:8080,connect-timeout=4 </dev/null; echo \"before rc=$?\"",
        &[r"^before rc=[1-9]"],
        30,
    ),
    ..forward_8080!("192.168.1.10", "7777"),
    cmd(
        "uci changes firewall",
        &[r"^firewall\.cfg[0-9a-f]+\.dest_port='7777'$"],
        30,
    ),
    cmd("uci commit firewall", &[], 30),
    cmd("reload", &[r"^reload: firewall rules replaced"], 30),
    ns(
        "wan",
        "socat -T 5 - TCP:${ROUTER_WAN}:8080,connect-timeout=5 </dev/null",
        &[r"^you are 10\.77\.0\.10:\d+$"],
        30,
    ),
    cmd(
        "cat /etc/config/firewall | grep 8080",
        &[r"option src_dport .8080."],
        30,
    ),
    last("poweroff"),
];

// ---------------------------------------------------------------- the differential
//
// `xtask/testbed/net/diff/routerdiff.py` (its docstring says how): the Xenlet router
// gets the corpus' port forward with uci, the corpus runs through it, its vifs leave
// the bridges, Linux routes the same corpus from a namespace with fw4's rendering of
// the same firewall and the same WAN address, the vifs come back, the two records are
// compared against `known.txt`.

/// The port forward the corpus expects: wan tcp 8080 -> 192.168.1.51:80 (reflection on,
/// fw4's default), as `fw4-diff.nft` has it for Linux.
const DIFF_FORWARD: &[Step] = steps![
    ..forward_8080!("192.168.1.51", "80"),
    cmd("uci commit firewall", &[], 30),
    cmd("reload", &[r"^reload: firewall rules replaced"], 30),
    // for the corpus' IPv6 cases: wan6 bound (the IPv6 default route), the LAN's
    // /64 (the ULA's first: its three groups as `${LAN6}`) and the router's SLAAC
    // address on brwan (`${WAN6}`), which the Linux router takes too
    cmd("ifstatus wan6", &[r"^wan6: eth1 bound"], 30),
    cmd_cap(
        "ip -6 addr show eth0",
        &[r"^    inet6 fd[0-9a-f:]+::1/64 "],
        &[(
            "LAN6",
            r"^    inet6 (fd[0-9a-f]{2}:[0-9a-f]{1,4}:[0-9a-f]{1,4})::1/64 "
        )],
        30,
    ),
    cmd_cap(
        "ip -6 addr show eth1",
        &[r"^    inet6 2001:db8:77:[0-9a-f:]+/64 "],
        &[("WAN6", r"^    inet6 (2001:db8:77:[0-9a-f:]+)/64 ")],
        30,
    ),
    dom0(
        "DIFF_LAN6=${LAN6} DIFF_WAN6=${WAN6} python3 $NET/diff/routerdiff.py setup",
        &[r"^routerdiff: dlan .* with IPv6 up$"],
        60,
    ),
];

/// The two routers' records compared: every difference a documented one.
const DIFF_COMPARE: &[Step] = &[
    dom0(
        "python3 $NET/diff/routerdiff.py linux-down; ip link set vif${DOMID}.0 master brlan && ip link set vif${DOMID}.1 master brwan && echo vifs back",
        &[r"^vifs back$"],
        60,
    ),
    dom0(
        "python3 $NET/diff/routerdiff.py compare $TOPO/diff-xenlet.json $TOPO/diff-linux.json $NET/diff/known.txt",
        &[r"^routerdiff: \d+ cases: \d+ the same, \d+ known differences, 0 unexplained, 0 known but gone, 0 run by one only$"],
        60,
    ),
    dom0("python3 $NET/diff/routerdiff.py teardown", &[r"^routerdiff: down$"], 30),
    // the router still routes after the corpus
    LAN1_STATIC,
    LAN1_PINGS_WAN,
    last("poweroff"),
];

/// Xenlet's own account of the corpus (fragments reassembled, overlaps and duplicates
/// dropped, segments out of window), in the log beside the records.
const DIFF_XENLET_COUNTERS: Step = cmd(
    "conntrack -S",
    &[
        r"^reassembly: fragments [1-9]",
        r"^ipv6 fragments held for their first: \d+ released \d+ timeouts \d+ refused 0$",
    ],
    30,
);

/// Xenlet's vifs off the bridges and Linux on them, with Xenlet's WAN address.
const DIFF_TO_LINUX: &[Step] = &[
    dom0(
        "ip link set vif${DOMID}.0 nomaster && ip link set vif${DOMID}.1 nomaster && echo vifs off",
        &[r"^vifs off$"],
        30,
    ),
    dom0(
        "DIFF_LAN6=${LAN6} DIFF_WAN6=${WAN6} python3 $NET/diff/routerdiff.py linux-up ${ROUTER_WAN}",
        &[r"^routerdiff: Linux routes in namespace rtr"],
        60,
    ),
];

const ROUTER_DIFF_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    ..DIFF_FORWARD,
    dom0(
        "DIFF_LAN6=${LAN6} DIFF_WAN6=${WAN6} python3 $NET/diff/routerdiff.py run xenlet ${ROUTER_WAN} $TOPO/diff-xenlet.json",
        &[r"^routerdiff: xenlet: \d+ cases written"],
        400,
    ),
    DIFF_XENLET_COUNTERS,
    ..DIFF_TO_LINUX,
    dom0(
        "DIFF_LAN6=${LAN6} DIFF_WAN6=${WAN6} python3 $NET/diff/routerdiff.py run linux ${ROUTER_WAN} $TOPO/diff-linux.json",
        &[r"^routerdiff: linux: \d+ cases written"],
        400,
    ),
    ..DIFF_COMPARE,
];

const ROUTER_DIFF_SHORT_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    ..DIFF_FORWARD,
    dom0(
        "DIFF_LAN6=${LAN6} DIFF_WAN6=${WAN6} python3 $NET/diff/routerdiff.py run xenlet ${ROUTER_WAN} $TOPO/diff-xenlet.json --short",
        &[r"^routerdiff: xenlet: \d+ cases written"],
        200,
    ),
    DIFF_XENLET_COUNTERS,
    ..DIFF_TO_LINUX,
    dom0(
        "DIFF_LAN6=${LAN6} DIFF_WAN6=${WAN6} python3 $NET/diff/routerdiff.py run linux ${ROUTER_WAN} $TOPO/diff-linux.json --short",
        &[r"^routerdiff: linux: \d+ cases written"],
        200,
    ),
    ..DIFF_COMPARE,
];

/// What lan1's held TCP connection (`holdconn.py`, to wan's responder through NAT)
/// must say after each move: still up (no reset, no error, an echo within the last
/// second, waited for up to 120 s: lan1's TCP backs off its retransmissions while the
/// router is away), and the last gap between two echoes (the move's downtime seen from the
/// LAN) as `${GAP}`.
const HOLD_REPORT: Step = ns_cap(
    "lan1",
    "python3 $NET/holdconn.py report $TOPO/hold.log 120",
    &[
        r"^held: yes$",
        r"^last echo: [01]\.\d s ago$",
        r"^last error: none$",
    ],
    &[
        ("GAP", r"^gaps over 1 s: ?(?:[0-9.]+ )*([0-9.]*)$"),
        ("OUTAGE", r"^udp gaps over 1 s: ?(?:[0-9.]+ )*([0-9.]*)$"),
    ],
    150,
);

/// lan1 opens a TCP connection through the router to wan's echo responder and keeps
/// it busy (`holdconn.py`: a line every 0.2 s) in the background.
const HOLD_START: Step = ns(
    "lan1",
    concat!(
        "(python3 $NET/holdconn.py run 10.77.0.10 7777 $TOPO/hold.log </dev/null >/dev/null 2>&1 &); ",
        "sleep 3; python3 $NET/holdconn.py report $TOPO/hold.log"
    ),
    &[r"^held: yes$", r"^echoes: ([5-9]|\d\d+)$"],
    30,
);

/// The data disk's first 8 MiB read back as `${SUM}` (written by the last
/// `BLK_DATA_STEPS`).
const DATA_SUM_AGAIN: Step = cmd("sha256sum -n 8M /dev/xvdb", &[r"^${SUM}  /dev/xvdb$"], 90);

/// A dom0 step that checks dom0's backing file of the data disk from `$off` MiB for
/// `$len` MiB: every 512-byte sector holds data (the `dd` from `/dev/urandom` that
/// wrote it across a move; a write lost in the move would have left one zero).
macro_rules! no_zero_sectors {
    ($off:literal, $len:literal, $expect:literal) => {
        dom0(
            concat!(
                "python3 -c \"import sys; f=open(sys.argv[1],'rb'); f.seek(",
                $off,
                "<<20); d=f.read(",
                $len,
                "<<20); print('zero sectors', sum(d[i:i+512]==bytes(512) for i in range(0,len(d),512)), 'of', len(d)//512)\" $DATA"
            ),
            &[$expect],
            60,
        )
    };
}

/// Waits for the move armed in the background (`/tmp/move.log`) to end: its status
/// 0 and the domain's new id.
const MOVE_DONE: Step = dom0(
    "for i in $(seq 200); do grep -q 'move rc=' /tmp/move.log && break; sleep 1; done; cat /tmp/move.log | tail -4; echo \"domid now $(xl domid $NAME)\"",
    &[r"^move rc=0$", r"^domid now \d+$"],
    240,
);

/// A move armed in the background by the dom0 command `arm` (which writes `move
/// rc=N` to `/tmp/move.log`), while the console runs `during` (the move must find it
/// still running); then [`MOVE_DONE`] and the domain found again. The prompt comes
/// back when `during` has ended, in the new domain.
const fn move_during(arm: &'static str, during: &'static str) -> [Step; 4] {
    [
        dom0(arm, &[], 30),
        until_moved(during, 120),
        MOVE_DONE,
        reattach(180),
    ]
}

/// lan1 listens for the router's neighbour advertisements (`$TOPO/na.log`) while it
/// moves.
const NA_LISTEN: Step = ns(
    "lan1",
    "(timeout 240 tcpdump -l -n -v -i eth0 'icmp6 and ip6[40] == 136' > $TOPO/na.log 2>&1 </dev/null &); sleep 2; echo listening",
    &[r"^listening$"],
    30,
);

/// What lan1 heard: the router's unsolicited neighbour advertisements after the move,
/// link-local and ULA, with the Router and Override flags.
const NA_HEARD: Step = ns(
    "lan1",
    "cat $TOPO/na.log",
    &[
        r"neighbor advertisement, length 32, tgt is fe80::[0-9a-f:]+, Flags \[router, override\]",
        r"neighbor advertisement, length 32, tgt is fd[0-9a-f:]+, Flags \[router, override\]",
    ],
    30,
);

/// The last `dd` in the console log ended without an error (it printed after the
/// move, in the new domain: the runner's console may have missed it). The log
/// written last: a domain that came in by `xl migrate` logs under its incoming name
/// (`guest-$NAME--incoming.log`).
const DD_LOGGED_2048: Step = dom0(
    "log=$(ls -t /var/log/xen/console/guest-$NAME.log /var/log/xen/console/guest-$NAME--incoming.log 2>/dev/null | head -1); tr -d '\\r' < $log | grep -E '^dd: |records (in|out)$|bytes .* copied' | tail -3",
    &[r"^2048\+0 records in$", r"^2048\+0 records out$", r"bytes \([\d.]+ MB, [\d.]+ MiB\) copied"],
    30,
);

/// `xl save -c` (a checkpoint) while the console runs a `dd` of 8 MiB to the data
/// disk (its 8-16 MiB, a flush per 4 KiB: about 12 s; the checkpoint comes 3 s in):
/// the copy pauses at its check-point, the same domain goes on (suspended for the
/// save meanwhile: the runner sees it go, finds it again, the same domid), the copy
/// ends.
const CHECKPOINT_DURING_DD: &[Step] = steps![
    ..&move_during(
        concat!(
            "(sleep 3; xl save -c $NAME /var/tmp/$NAME.ckpt; echo \"move rc=$?\"; ",
            "rm -f /var/tmp/$NAME.ckpt) > /tmp/move.log 2>&1 </dev/null &"
        ),
        "dd if=/dev/urandom of=/dev/xvdb bs=4k count=2048 seek=2048 oflag=dsync",
    ),
    DD_LOGGED_2048,
    no_zero_sectors!("8", "8", r"^zero sectors 0 of 16384$"),
];

/// `xl save` + `xl restore` while the router's console runs a `dd` of 32 MiB to the
/// data disk (its 16-48 MiB, a flush per 16 KiB: about 15 s; the save comes 3 s in),
/// with lan1 listening for the router's neighbour advertisements meanwhile: the save
/// does not wait for the command, which goes on in the new domain (its requests in
/// flight answered before the suspend or sent again after it).
const SAVE_RESTORE_DURING_DD: &[Step] = steps![
    NA_LISTEN,
    ..&move_during(
        concat!(
            "(sleep 3; xl save $NAME /var/tmp/$NAME.save && xl restore /var/tmp/$NAME.save; ",
            "echo \"move rc=$?\"; rm -f /var/tmp/$NAME.save) > /tmp/move.log 2>&1 </dev/null &"
        ),
        "dd if=/dev/urandom of=/dev/xvdb bs=16k count=2048 seek=1024 oflag=dsync",
    ),
];

/// After the save and restore: the dd's end, its sectors on dom0's file, lan1's
/// advertisements.
const DD_ACROSS_THE_SAVE: &[Step] = &[
    DD_LOGGED_2048,
    no_zero_sectors!("16", "32", r"^zero sectors 0 of 65536$"),
    NA_HEARD,
];

/// `xl migrate` to this host while the console runs a `dd` of 8 MiB to the data
/// disk (its 48-56 MiB, a flush per 4 KiB): the copy ends in the new domain.
const MIGRATE_DURING_DD: &[Step] = steps![
    ..&move_during(
        concat!(
            "(sleep 3; xl migrate -s '' $NAME 'xl migrate-receive'; echo \"move rc=$?\") ",
            "> /tmp/move.log 2>&1 </dev/null &"
        ),
        "dd if=/dev/urandom of=/dev/xvdb bs=4k count=2048 seek=12288 oflag=dsync",
    ),
    DD_LOGGED_2048,
    no_zero_sectors!("48", "8", r"^zero sectors 0 of 16384$"),
];

/// Xenlet reads the whole data disk as dom0 finds it in the backing file.
const DATA_SUM_ALL: &[Step] = &[
    cmd_cap(
        "sha256sum -n 64M /dev/xvdb",
        &[],
        &[("SUM64", r"^([0-9a-f]{64})  /dev/xvdb$")],
        120,
    ),
    dom0(
        "head -c 67108864 $DATA | sha256sum",
        &[r"^${SUM64}  -$"],
        60,
    ),
];

/// Save, restore, checkpoint and migrate a Xenlet router (the appliance survives
/// what a Xen host does to it). Before: the WAN lease, lan1's lease, a TCP connection
/// from lan1 through NAT to wan's echo responder held open (a line every 0.2 s), 8 MiB
/// written to the data disk. Then `xl save -c` (a checkpoint: the same domain goes
/// on), `xl save` + `xl restore` (a new domain: every ring, grant and channel new),
/// `xl migrate` to this host. After each the connection still echoes (no reset), the
/// disk reads back the same bytes and takes new ones (dom0 checks them), new flows
/// pass, and lan1's DHCP renew is answered.
const SUSPEND_ROUTER_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    LAN1_BY_DHCP,
    cmd("xen", &[r"^suspend: 0 \(cancelled 0, resumed in a new domain 0; last 0 ms\)$"], 30),
    HOLD_START,
    super::blk::BLK_DATA_STEPS[1],
    super::blk::BLK_DATA_STEPS[2],
    // checkpoint, in the middle of a dd: the guest goes on in the same domain
    ..CHECKPOINT_DURING_DD,
    cmd("xen", &[r"^suspend: 1 \(cancelled 1, resumed in a new domain 0; "], 30),
    HOLD_REPORT,
    // save and restore, in the middle of a dd to the data disk: a new domain
    ..SAVE_RESTORE_DURING_DD,
    cmd("xen", &[r"^suspend: 2 \(cancelled 1, resumed in a new domain 1; "], 30),
    dom0(
        "grep -a -E 'xenlet: (resumed|xenstore)|blkfront: xvd[ab] reconnected|netfront: eth[01] reconnected' /var/log/xen/console/guest-$NAME.log",
        &[
            r"xenlet: resumed in a new domain",
            r"xenlet: xenstore: reconnected on event channel \d+",
            r"blkfront: xvdb reconnected in \d+ ms",
            // eth0 (lan): its IPv4, link-local and ULA addresses; eth1 (wan): IPv4 and
            // link-local at least
            r"netfront: eth0 reconnected in \d+ ms(, \d+ send\(s\) lost)?; 1 IPv4 and [2-9] IPv6 address\(es\) announced",
            r"netfront: eth1 reconnected in \d+ ms(, \d+ send\(s\) lost)?; 1 IPv4 and [1-9] IPv6 address\(es\) announced",
        ],
        30,
    ),
    HOLD_REPORT,
    ..DD_ACROSS_THE_SAVE,
    // the disk: the bytes written before the move read back through the new
    // backend, and new ones written and checked by dom0
    DATA_SUM_AGAIN,
    super::blk::BLK_DATA_STEPS[1],
    super::blk::BLK_DATA_STEPS[2],
    super::blk::BLK_DATA_STEPS[3],
    LAN_THROUGH_NAT[1],
    LAN1_BY_DHCP,
    // live migration to this host, in the middle of a dd
    ..MIGRATE_DURING_DD,
    cmd("xen", &[r"^suspend: 3 \(cancelled 1, resumed in a new domain 2; "], 30),
    HOLD_REPORT,
    LAN_THROUGH_NAT[1],
    DATA_SUM_AGAIN,
    ..DATA_SUM_ALL,
    last("poweroff"),
];

/// A backend that goes away and comes back under a running router: dom0 detaches the
/// router's LAN vif (`xl network-detach`), then attaches one with the same MAC and
/// bridge (`xl network-attach`, under a new device id). The router keeps eth0 (its
/// address, the LAN services, the flows through it) while the backend is gone and
/// connects it again when the vif comes back; lan1's held TCP connection to wan goes
/// on, lan1 pings through the router and renews its lease.
const ROUTER_REATTACH_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    LAN1_BY_DHCP,
    HOLD_START,
    dom0(
        "xl network-detach $NAME 0 && echo detached",
        &[r"^detached$"],
        60
    ),
    wait_output(
        r"netfront: eth0 lost its backend \(\d+ buffer pages, \d+ ring pages freed\); the router keeps the interface",
        30
    ),
    cmd("ip addr show eth0", &[r"^    inet 192\.168\.1\.1/24 "], 30),
    dom0(
        "xl network-attach $NAME bridge=brlan mac=00:16:3e:01:00:02 && echo attached",
        &[r"^attached$"],
        60
    ),
    wait_output(
        r"netfront: eth0 has its backend back \(device \d+\); 1 IPv4 and [2-9] IPv6 address\(es\) announced",
        30
    ),
    HOLD_REPORT,
    LAN_THROUGH_NAT[1],
    LAN1_BY_DHCP,
    cmd("ip -s link show eth0", &[r"^\d+: eth0: "], 30),
    last("poweroff"),
];

/// The router's memory (`mem`): the heap in live allocations as `${$name}` (KiB), and
/// never low so far.
macro_rules! router_mem {
    ($name:literal) => {
        cmd_cap(
            "mem",
            &[
                r"^heap: \d+ KiB in live allocations$",
                r"^heap: .*memory low below \d+ KiB available \(seen 0 times\)$",
            ],
            &[($name, r"^heap: (\d+) KiB in live allocations$")],
            30,
        )
    };
}

/// Issue 33's size for a driver domain: eight clients served by a router in 32 MiB.
/// Each client (`create_client!`, 160 MiB, the same Linux PVH domU as
/// `router-netback`'s) gets its lease from the router's DHCP on br-lan and pings the
/// WAN host through its NAT every 2 s; lan1 (behind eth0) pings each through the
/// router's bridge; then the eight send 1,400-byte pings to the WAN host at once,
/// 40 each, five a second (through their shells on TCP 7000, as fairness.sh reaches
/// them), and must get at least 36 answers each. The router's heap is read before,
/// with the eight, and after they are destroyed: never low, and every page of theirs
/// unmapped.
const ROUTER_CLIENTS_STEPS: &[Step] = steps![
    ..ROUTER_WAN_LEASE,
    LAN1_BY_DHCP,
    router_mem!("HEAP0"),
    create_client!("1", "00:16:3e:0c:00:01"),
    create_client!("2", "00:16:3e:0c:00:02"),
    create_client!("3", "00:16:3e:0c:00:03"),
    create_client!("4", "00:16:3e:0c:00:04"),
    create_client!("5", "00:16:3e:0c:00:05"),
    create_client!("6", "00:16:3e:0c:00:06"),
    create_client!("7", "00:16:3e:0c:00:07"),
    create_client!("8", "00:16:3e:0c:00:08"),
    client_up!("1", "0"),
    client_up!("2", "0"),
    client_up!("3", "0"),
    client_up!("4", "0"),
    client_up!("5", "0"),
    client_up!("6", "0"),
    client_up!("7", "0"),
    client_up!("8", "0"),
    cmd("brctl show | grep -c vif", &[r"^8$"], 30),
    cmd("leases | grep -c 00:16:3e:0c:00:0", &[r"^8$"], 30),
    ns(
        "lan1",
        concat!(
            "n=0; for c in ${C1} ${C2} ${C3} ${C4} ${C5} ${C6} ${C7} ${C8}; do ",
            "ping -c 2 -W 3 $c >/dev/null && n=$((n+1)) || echo \"lan1: $c lost\"; done; ",
            "echo \"lan1 reached $n of 8\""
        ),
        &[r"^lan1 reached 8 of 8$"],
        120,
    ),
    router_mem!("HEAP8"),
    dom0(
        concat!(
            "for c in ${C1} ${C2} ${C3} ${C4} ${C5} ${C6} ${C7} ${C8}; do ",
            "( printf '%s\\n' 'ping -c 40 -i 0.2 -W 3 -s 1400 10.77.0.10 | tail -2' | ",
            "timeout 90 ip netns exec lan1 busybox nc -w 60 $c 7000 | ",
            "awk -v c=$c '/packets transmitted/ { print \"load: \" c \" \" $4 \" of \" $1 }' ) & ",
            "done; wait; echo 'load: done'"
        ),
        &[
            r"^load: ${C1} (3[6-9]|40) of 40$",
            r"^load: ${C2} (3[6-9]|40) of 40$",
            r"^load: ${C3} (3[6-9]|40) of 40$",
            r"^load: ${C4} (3[6-9]|40) of 40$",
            r"^load: ${C5} (3[6-9]|40) of 40$",
            r"^load: ${C6} (3[6-9]|40) of 40$",
            r"^load: ${C7} (3[6-9]|40) of 40$",
            r"^load: ${C8} (3[6-9]|40) of 40$",
            r"^load: done$",
        ],
        150,
    ),
    cmd("xen", &[XEN_POLLS, r"^driver domain: [1-9]\d* pages of other domains mapped, 0 frames lost"], 30),
    router_mem!("HEAP8B"),
    dom0(
        concat!(
            "for n in 1 2 3 4 5 6 7 8; do xl destroy $NAME-c$n || echo \"destroy c$n failed\"; done; ",
            "be=/local/domain/$DOMID/backend/vif; ",
            "for i in $(seq 30); do [ -z \"$(xenstore-list $be 2>/dev/null)\" ] && break; sleep 1; done; ",
            "echo \"backend vifs left: $(xenstore-list $be 2>/dev/null | wc -l)\""
        ),
        &[r"^backend vifs left: 0$"],
        120,
    ),
    cmd("brctl show | grep -c vif", &[r"^0$"], 30),
    cmd("xen", &[r"^driver domain: 0 pages of other domains mapped, 0 frames lost"], 30),
    router_mem!("HEAP_AFTER"),
    last("poweroff"),
];
