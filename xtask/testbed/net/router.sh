#!/bin/bash
# The router test topology of the Xenlet test bed, in dom0 (xtask/testbed/README.md,
# "Router topology"). Used by scenarios with `topology: Some(Topology::Router)`: run.py
# calls `router.sh up` before `xl create` and `router.sh down` after the scenario.
#
#   router domain (Xenlet, or the Linux router of `router-linux`):
#     vif = [ "bridge=brlan", "bridge=brwan" ]  ->  eth0 = LAN, eth1 = WAN
#
#   brlan (bridge, NO dom0 address)                  LAN 192.168.1.0/24, router .1
#     lan1, lan2: network namespaces, eth0 on brlan by a veth (dom0 end vlan1/vlan2),
#                 no address until `router.sh dhcp NS` (udhcpc, from the router) or
#                 `router.sh static NS ADDR` (ADDR/24, default via 192.168.1.1);
#                 a TCP/UDP responder on port 7777
#   brwan (bridge, dom0 10.77.0.1/24)                WAN 10.77.0.0/24
#     dnsmasq: DHCP 10.77.0.100-199 (router option 10.77.0.10, DNS 10.77.0.1) and
#              DNS: server.wan -> 10.77.0.10, far.wan -> 10.78.0.2
#     wan: namespace, eth0 10.77.0.10/24 on brwan (dom0 end vwan); the upstream
#          gateway (forwards to far); servers: iperf3 -s (5201), the responder
#          (7777 TCP and UDP: answers "you are IP:PORT"), tcpdump on eth0 to wan.pcap
#     far: namespace behind wan: wan's far0 10.78.0.1/24 <-> far's eth0 10.78.0.2/24,
#          MTU 1400 on both ends, default via 10.78.0.1; the responder on 7777
#   IPv6 on the WAN (OpenWrt's wan6): dom0's brwan 2001:db8:77::1/64 (its dnsmasq
#     answers DNS there too); wan's eth0 2001:db8:77::10/64, the upstream IPv6
#     router: router advertisements (a second dnsmasq, RA only: 2001:db8:77::/64
#     on-link with SLAAC, router lifetime 1800 s, every 10 s) and a DHCPv6 server
#     (ISC dhcpd -6: addresses 2001:db8:77::1000-1fff, prefixes /56 delegated from
#     the first half of 2001:db8:7700::/40 (the other half after `router.sh
#     renumber`), DNS 2001:db8:77::1, domain wan), and the return route of
#     the delegated prefixes via the Xenlet router's WAN link-local address
#     (fe80::216:3eff:fe77:2, of its fixed MAC 00:16:3e:77:00:02); brlan has no IPv6
#   dom0 does not forward (net.ipv4.ip_forward=0): LAN and WAN meet only in the router.
#
# `router.sh dom0router` makes the ceiling of `bench router`: dom0 itself routes, in a
# namespace `rtr` with eth0 on brlan (192.168.1.1/24) and eth1 on brwan (10.77.0.2/24,
# default via wan), forwarding on and the Linux router's fw4 ruleset (masquerade on
# eth1): the same path with no router domain on it. `router.sh dom0router6` gives it
# IPv6 for `bench router`'s IPv6 rows, as the Linux router domU's /etc/router-up6
# (linux-router/router-up6: static 2001:db8:1::1/64 on eth0, 2001:db8:77::2/64 on
# eth1, default via wan, forwarding on); `router.sh static6 NS` then gives a LAN
# namespace 2001:db8:1::10/64 (default via 2001:db8:1::1) and wan the route back to
# 2001:db8:1::/64 via 2001:db8:77::2. (Xenlet needs neither: its LAN /64 is its
# wan6 delegation, routed back by `up`, and lan1 takes its address by SLAAC.)
#
# Subcommands: up | down | dhcp NS | static NS ADDR | pcap [TCPDUMP-FILTER] | dom0router
#   | dom0router6 | static6 NS
#   | renumber (wan's DHCPv6 server delegates from another range: see renumber())
# State, logs and captures live in $TOPO (default /run/topo); run.py copies them to
# the scenario's results.
set -u
TOPO=${TOPO:-/run/topo}
HERE=$(cd "$(dirname "$0")" && pwd)

ns() { local n=$1; shift; ip netns exec "$n" "$@"; }

# Starts a long-running program in namespace $1, detached, its output to $TOPO/$2.log.
bg() {
    local n=$1 what=$2; shift 2
    setsid ip netns exec "$n" "$@" </dev/null >"$TOPO/$what.log" 2>&1 &
    echo $! >"$TOPO/$what.pid"
}

# A namespace with eth0 on bridge $2 through a veth whose dom0 end is $3.
mkns() {
    local n=$1 br=$2 peer=$3
    ip netns add "$n"
    mkdir -p "/etc/netns/$n"
    : >"/etc/netns/$n/resolv.conf"  # ip netns exec binds it over /etc/resolv.conf
    ip link add "$peer" type veth peer name eth0 netns "$n"
    ip link set "$peer" master "$br" up
    ns "$n" ip link set lo up
    ns "$n" ip link set eth0 up
}

up() {
    if ip link show brlan >/dev/null 2>&1 || ip link show brguest >/dev/null 2>&1 \
        || ip link show vlan1 >/dev/null 2>&1 \
        || [ -e /var/run/netns/lan1 ]; then
        echo "router.sh up: an earlier topology is still here; taking it down first"
        down
    fi
    set -e
    trap 'echo "router.sh up: failed: $BASH_COMMAND (line $LINENO)"' ERR
    mkdir -p "$TOPO"
    sysctl -qw net.ipv4.ip_forward=0
    ip link add brlan type bridge
    ip link add brwan type bridge
    echo 1 >/proc/sys/net/ipv6/conf/brlan/disable_ipv6
    ip addr add 10.77.0.1/24 dev brwan
    ip link set brlan up
    ip link set brwan up

    mkns lan1 brlan vlan1
    mkns lan2 brlan vlan2
    mkns wan brwan vwan
    ns wan ip addr add 10.77.0.10/24 dev eth0
    ns wan sysctl -qw net.ipv4.ip_forward=1
    ip netns add far
    ip link add far0 netns wan mtu 1400 type veth peer name eth0 netns far mtu 1400
    ns wan ip addr add 10.78.0.1/24 dev far0
    ns wan ip link set far0 up
    ns far ip link set lo up
    ns far ip addr add 10.78.0.2/24 dev eth0
    ns far ip link set eth0 up
    ns far ip route add default via 10.78.0.1
    wan6

    dnsmasq --interface=brwan --bind-dynamic --user=root --pid-file="$TOPO/dnsmasq.pid" \
        --dhcp-range=10.77.0.100,10.77.0.199,1h --dhcp-leasefile="$TOPO/dnsmasq.leases" \
        --dhcp-option=option:router,10.77.0.10 --dhcp-option=option:dns-server,10.77.0.1 \
        --no-resolv --no-hosts --domain=wan --local=/wan/ \
        --host-record=server.wan,10.77.0.10 --host-record=far.wan,10.78.0.2 \
        --host-record=public.wan,100.64.0.7 --local-ttl=300 \
        --log-dhcp --log-queries --log-facility="$TOPO/dnsmasq.log"

    bg wan tcpdump tcpdump -n -i eth0 -U -s 128 -w "$TOPO/wan.pcap" \
        'ip and not (tcp port 5201 and tcp[tcpflags] & (tcp-syn|tcp-fin|tcp-rst) == 0)'
    bg wan iperf3 iperf3 -s
    for n in wan far lan1 lan2; do
        bg "$n" "responder-$n" python3 -u "$HERE/responder.py" 7777
    done
    set +e
    trap - ERR
    # the servers are up when their ports are bound (and tcpdump says it listens)
    local i=0
    while [ $i -lt 50 ]; do
        if ns wan ss -ltn | grep -q ':5201 ' && ns wan ss -lun | grep -q ':7777 ' \
            && grep -q listening "$TOPO/tcpdump.log" && ns lan2 ss -ltn | grep -q ':7777 ' \
            && ns wan ss -lun | grep -q ':547 '; then
            break
        fi
        sleep 0.2
        i=$((i + 1))
    done
    show
}

# IPv6 on brwan: the upstream router in wan (RA, DHCPv6 with prefix delegation), the
# return route of the delegated prefixes (see the top of this file)
XENLET_WAN_LL=fe80::216:3eff:fe77:2
wan6() {
    ip -6 addr add 2001:db8:77::1/64 dev brwan nodad
    ns wan ip -6 addr add 2001:db8:77::10/64 dev eth0 nodad
    ns wan sysctl -qw net.ipv6.conf.all.forwarding=1
    ns wan ip -6 route add 2001:db8:7700::/40 via "$XENLET_WAN_LL" dev eth0
    # RA only: no DHCPv6 in this dnsmasq (dhcpd -6 has port 547), no DNS
    bg wan dnsmasq-ra dnsmasq --keep-in-foreground --port=0 --interface=eth0 --bind-interfaces \
        --user=root --pid-file= --enable-ra --dhcp-range=2001:db8:77::,ra-only,64,1h \
        --ra-param=eth0,10,1800 --log-dhcp --log-facility=-
    : >"$TOPO/dhcpd6.leases"
    dhcpd6 2001:db8:7700:: 2001:db8:777f:ff00::
}

# (Re)starts ISC dhcpd -6 in wan delegating /56s from $1 to $2 (the first half of
# the /40 at `up`, the other half after `renumber`).
dhcpd6() {
    cat >"$TOPO/dhcpd6.conf" <<CONF
default-lease-time 600;
preferred-lifetime 300;
max-lease-time 1200;
option dhcp6.name-servers 2001:db8:77::1;
option dhcp6.domain-search "wan";
subnet6 2001:db8:77::/64 {
    range6 2001:db8:77::1000 2001:db8:77::1fff;
    prefix6 $1 $2 /56;
}
CONF
    bg wan dhcpd6 dhcpd -6 -d -cf "$TOPO/dhcpd6.conf" -lf "$TOPO/dhcpd6.leases" \
        -pf "$TOPO/dhcpd6.pidfile" eth0
}

# The ISP renumbers: wan's DHCPv6 server comes back delegating from the other half
# of 2001:db8:7700::/40 and has forgotten its bindings (an empty lease file but for
# its own DUID, so it is the same server): the router's next Renew gets NoBinding
# (a Rebind, if the Renew went unanswered, gets the old prefix with lifetimes 0),
# and the Request that follows a new /56.
renumber() {
    local pid i=0
    pid=$(cat "$TOPO/dhcpd6.pid" 2>/dev/null)
    echo "renumber: old bindings: $(grep -c '^ia-' "$TOPO/dhcpd6.leases"), $(grep -o 'iaprefix [0-9a-f:]*/56' "$TOPO/dhcpd6.leases" | sort -u | tr '\n' ' ')"
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    grep '^server-duid' "$TOPO/dhcpd6.leases" >"$TOPO/dhcpd6.leases.new"
    mv "$TOPO/dhcpd6.leases.new" "$TOPO/dhcpd6.leases"
    mv "$TOPO/dhcpd6.log" "$TOPO/dhcpd6-before-renumber.log" 2>/dev/null
    dhcpd6 2001:db8:7780:: 2001:db8:77ff:ff00::
    i=0
    while [ $i -lt 50 ] && ! ns wan ss -lun | grep -q ':547 '; do
        sleep 0.2
        i=$((i + 1))
    done
    echo "renumber: dhcpd6 pid $(cat "$TOPO/dhcpd6.pid") listening $(ns wan ss -lun | grep -c ':547 '), prefixes 2001:db8:7780:: - 2001:db8:77ff:ff00:: /56, $(grep -c '^server-duid' "$TOPO/dhcpd6.leases") server-duid kept"
}

dom0router() {
    set -e
    trap 'echo "router.sh dom0router: failed: $BASH_COMMAND (line $LINENO)"' ERR
    ip netns add rtr
    ip link add vrl type veth peer name eth0 netns rtr
    ip link add vrw type veth peer name eth1 netns rtr
    ip link set vrl master brlan up
    ip link set vrw master brwan up
    ns rtr ip link set lo up
    ns rtr ip link set eth0 up
    ns rtr ip link set eth1 up
    ns rtr ip addr add 192.168.1.1/24 dev eth0
    ns rtr ip addr add 10.77.0.2/24 dev eth1
    ns rtr ip route add default via 10.77.0.10
    ns rtr sysctl -qw net.ipv4.ip_forward=1
    ns rtr nft -f "$HERE/linux-router/fw4.nft"
    set +e
    trap - ERR
    echo "router: dom0 namespace rtr forwarding $(ns rtr cat /proc/sys/net/ipv4/ip_forward); lan eth0 192.168.1.1/24; wan eth1 10.77.0.2/24"
    echo "router: nft: $(ns rtr nft list ruleset | grep -c 'chain ') chains, $(ns rtr nft list ruleset | grep -c masquerade) masquerade"
}

# IPv6 for the ceiling: linux-router/router-up6 in rtr (after dom0router)
dom0router6() {
    ns rtr sh "$HERE/linux-router/router-up6"
}

# IPv6 of a LAN namespace $1 behind the Linux router or the ceiling (router-up6's
# static addresses): 2001:db8:1::10/64, default via 2001:db8:1::1; wan's route back
# to 2001:db8:1::/64 via the router's 2001:db8:77::2. The namespace's IPv6 starts
# afresh (disable_ipv6 off and on: `static` flushed its link-local address too).
static6() {
    local n=$1
    set -e
    ns "$n" sysctl -qw net.ipv6.conf.eth0.disable_ipv6=1
    ns "$n" sysctl -qw net.ipv6.conf.eth0.disable_ipv6=0
    ns "$n" ip -6 addr add 2001:db8:1::10/64 dev eth0 nodad
    ns "$n" ip -6 route replace default via 2001:db8:1::1 dev eth0
    ns wan ip -6 route replace 2001:db8:1::/64 via 2001:db8:77::2 dev eth0
    set +e
    echo "netns $n: $(ns "$n" ip -6 addr show dev eth0 scope global | awk '/inet6/ {print $2}' | tr '\n' ' ')route6: $(ns "$n" ip -6 route show default)"
    echo "wan route6: $(ns wan ip -6 route show 2001:db8:1::/64)"
}

show() {
    echo "topology router: dom0 ip_forward=$(cat /proc/sys/net/ipv4/ip_forward)"
    for br in brlan brwan; do
        echo "$br: $(ip -br addr show dev "$br" | awk '{print $3}') ports: $(ls /sys/class/net/$br/brif | tr '\n' ' ')"
    done
    for n in lan1 lan2 wan far; do
        echo "netns $n: $(ns "$n" ip -br -4 addr | grep -v '^lo ' | awk '{print $1, $3}' | tr '\n' ' ')"
    done
    echo "brwan ipv6: $(ip -br -6 addr show dev brwan | awk '{$1=$2=""; print}'); wan ipv6: $(ns wan ip -br -6 addr show dev eth0 | awk '{$1=$2=""; print}'); wan route6: $(ns wan ip -6 route show 2001:db8:7700::/40)"
    echo "wan listening: $(ns wan ss -ltnu | awk 'NR>1 {print $1 "/" $5}' | sort -u | tr '\n' ' ')"
}

down() {
    for f in "$TOPO"/*.pid; do
        [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
    done
    # dlan, dwan: the router differential's hosts (diff/routerdiff.py)
    for n in lan1 lan2 wan far rtr dlan dwan; do
        for p in $(ip netns pids "$n" 2>/dev/null); do kill "$p" 2>/dev/null; done
    done
    sleep 0.5
    for n in lan1 lan2 wan far rtr dlan dwan; do
        for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
        ip netns del "$n" 2>/dev/null
        rm -rf "/etc/netns/$n"
    done
    # the dom0 ends of the veths too: a namespace still held by a process outlives
    # `ip netns del` with its veth, and the next `up` found vlan1 there (`bench router`
    # after a router domain crashed)
    # (brguest: an older topology's, router-zones' before its br-guest was port-less)
    for l in vlan1 vlan2 vwan vrl vrw vdl vdw brlan brwan brguest; do
        ip link del "$l" 2>/dev/null
    done
    echo "topology router: down"
}

# udhcpc (busybox) in namespace $1 on eth0: the lease and the address it set
dhcp() {
    local n=$1
    ns "$n" busybox udhcpc -i eth0 -n -q -t 8 -T 2 -s "$HERE/udhcpc.script" 2>&1
    local rc=$?
    echo "netns $n: $(ns "$n" ip -br -4 addr show dev eth0 | awk '{print $3}')" \
        "route: $(ns "$n" ip route show default)" "dns: $(grep nameserver "/etc/netns/$n/resolv.conf" | awk '{print $2}' | tr '\n' ' ')"
    return $rc
}

# a static LAN address: $2/24, default via the router, DNS the router
static() {
    local n=$1 a=$2
    set -e
    ns "$n" ip addr flush dev eth0
    ns "$n" ip addr add "$a/24" dev eth0
    ns "$n" ip route replace default via 192.168.1.1
    echo "nameserver 192.168.1.1" >"/etc/netns/$n/resolv.conf"
    echo "netns $n: $a/24 route: $(ns "$n" ip route show default)"
}

# the packets tcpdump saw in wan so far (optionally filtered)
pcap() {
    tcpdump -n -r "$TOPO/wan.pcap" "$@" 2>/dev/null
}

case "${1:-}" in
up) up ;;
down) down ;;
show) show ;;
dhcp) dhcp "$2" ;;
static) static "$2" "$3" ;;
pcap) shift; pcap "$@" ;;
dom0router) dom0router ;;
dom0router6) dom0router6 ;;
static6) static6 "$2" ;;
renumber) renumber ;;
*) echo "usage: $0 up|down|show|dhcp NS|static NS ADDR|pcap [FILTER]|dom0router|dom0router6|static6 NS|renumber" >&2; exit 2 ;;
esac
