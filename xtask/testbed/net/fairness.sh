#!/bin/bash
# One client that floods the router must not starve another (issue 33), in dom0 of
# the router topology (router.sh) with two client domUs whose vifs the router serves
# (router-netback):
#
#   fairness.sh C1 C2 C2-DOMAIN
#
# C1 and C2 are the clients' LAN addresses; each client runs a shell on TCP port
# 7000 (run.py's CLIENT_INIT: busybox `nc -ll -p 7000 -e /bin/sh`), reached from
# lan1 (on the same LAN: the router's bridge switches it). Prints:
#
#   fairness: idle <Mbit/s>                 C1's TCP to wan alone (iperf3 -t 4)
#   fairness: flooded <Mbit/s>              the same while C2 floods the router
#   fairness: flood <pkt/s> ...             what C2 sent
#   fairness: ratio R ok|LOW                flooded / idle; ok when >= 0.5
#
# The flood: the kernel's packet generator (pktgen) in C2 sends 60-byte UDP
# datagrams to the router's own LAN address (port 9, no socket: the router's stack
# drops each, or answers it with a port unreachable) as fast as C2's netfront takes
# them. It ends at the router: dom0, which carries C1's transfer to wan, carries
# none of it, so what slows C1 is the router's CPU and how its data plane shares it
# between its clients. The bed has one CPU for every domain, and pktgen spins: C2's
# vCPU is capped at 20 % of it while it floods (`xl sched-credit2 -c`), so that the
# figure is the router's sharing and not Xen's scheduler giving the flooder a
# quarter of the machine that dom0, the router and C1 shared before (on a real host
# a client's CPU is its own).
set -u
C1=${1:?usage: fairness.sh C1 C2 C2-DOMAIN}
C2=${2:?usage: fairness.sh C1 C2 C2-DOMAIN}
D2=${3:?usage: fairness.sh C1 C2 C2-DOMAIN}
cap() {
    xl sched-credit2 -d "$D2" -c "$1" 2>/dev/null || xl sched-credit -d "$D2" -c "$1" ||
        echo "fairness: cannot cap $D2's CPU"
}

# run a command line on a client through its shell (output back, then EOF)
on() {
    printf '%s\n' "$2" | ip netns exec lan1 busybox nc -w 10 "$1" 7000
}
# Mbit/s of the iperf3 receiver line in "$1" (empty when there is none)
mbits() {
    awk '/receiver$/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /bits\/sec$/) {
        v = $i; u = $(i + 1); if (u ~ /^G/) v *= 1000; else if (u ~ /^K/) v /= 1000;
        else if (u !~ /^M/) v /= 1e6; printf "%.1f", v } }' <<<"$1"
}
# CPU seconds so far of dom0, the router, C1 and C2 (`xl list`'s Time(s))
cpu() {
    xl list | awk -v r="${D2%-c2}" '$1 == "Domain-0" { d = $6 } $1 == r { g = $6 }
        $1 == r "-c1" { a = $6 } $1 == r "-c2" { b = $6 } END { print d, g, a, b }'
}
# C1's TCP to wan for 4 s; "$1": what the CPU line calls it
xfer() {
    local c0 c1
    c0=$(cpu)
    on "$C1" "/usr/bin/iperf3 -c 10.77.0.10 -t 4 --connect-timeout 5000 2>&1 | tail -4"
    c1=$(cpu)
    echo "$c0 $c1" | awk -v w="$1" 'NF == 8 { printf "fairness: cpu %s: dom0 %.1f s, router %.1f s, c1 %.1f s, c2 %.1f s\n",
        w, $5 - $1, $6 - $2, $7 - $3, $8 - $4 }' >>"$CPU_LINES"
}
CPU_LINES=$(mktemp)
trap 'rm -f "$CPU_LINES"' EXIT

# one 4 s transfer of C1 named $1: prints "fairness: $1 <Mbit/s>", sets RATE
phase() {
    local out
    out=$(xfer "$1")
    RATE=$(mbits "$out")
    echo "fairness: $1 ${RATE:-failed: $(tail -1 <<<"$out")}"
}
# C2's pktgen started in the background (the shell's connection closes at once):
# $1 pkt/s, 0 for as fast as it goes; at most 2,000,000 datagrams
flood_start() {
    local pace="delay 0"
    [ "$1" -gt 0 ] && pace="ratep $1"
    local started
    started=$(on "$C2" '
PG=/proc/net/pktgen
ping -c 1 -W 2 192.168.1.1 >/dev/null 2>&1
mac=$(ip neigh show 192.168.1.1 dev eth0 | awk "{for (i = 1; i < NF; i++) if (\$i == \"lladdr\") print \$(i + 1)}")
[ -e $PG/pgctrl ] || { echo "no pktgen"; exit; }
[ -n "$mac" ] || { echo "no neighbour entry for the router"; exit; }
echo rem_device_all > $PG/kpktgend_0
echo "add_device eth0" > $PG/kpktgend_0
for c in "clone_skb 0" "pkt_size 60" "burst 1" "dst 192.168.1.1" "dst_mac $mac" \
         "udp_src_min 40000" "udp_src_max 40000" "udp_dst_min 9" "udp_dst_max 9" \
         "count 2000000" "'"$pace"'"; do
    echo "$c" > $PG/eth0 || echo "pktgen refused: $c"
done
(echo start > $PG/pgctrl) </dev/null >/dev/null 2>&1 &
echo "flood started"')
    echo "fairness: ${started:-no answer from C2}"
    sleep 1.5
}
# stops C2's pktgen; prints "fairness: flood $1 N pkt/s (...)"
flood_stop() {
    on "$C2" 'echo stop > /proc/net/pktgen/pgctrl; cat /proc/net/pktgen/eth0' |
        awk -v w="$1" '/pkts-sofar:/ { s = $2 } /^Result: OK:/ { sub(/\(.*/, "", $3); u = $3 }
        END { if (s && u > 0) printf "fairness: flood %s %d pkt/s (%d datagrams in %.1f s)\n", w, s * 1e6 / u, s, u / 1e6;
              else print "fairness: flood " w " failed" }'
}

phase idle
idle=$RATE
# what the bed's one CPU costs C1 alone: C2 busy (capped at 20 %), sending nothing
cap 20
on "$C2" '(while :; do :; done) </dev/null >/dev/null 2>&1 & echo $! >/tmp/spin.pid'
phase spinning
on "$C2" 'kill $(cat /tmp/spin.pid)'
cap 0
# a flood the router can take at no cost to C2's CPU: 1,000 pkt/s (pktgen sleeps
# between them)
flood_start 1000
phase "flooded at 1000 pkt/s"
flood_stop "at 1000 pkt/s"
# the flood: as fast as C2's netfront takes them, C2 capped at 20 %
cap 20
flood_start 0
phase flooded
flooded=$RATE
flood_stop "unlimited"
cap 0
cat "$CPU_LINES"
[ -n "$idle" ] && [ -n "$flooded" ] &&
    awk -v a="$idle" -v b="$flooded" 'BEGIN { r = a > 0 ? b / a : 0;
        printf "fairness: ratio %.2f %s\n", r, (r >= 0.5 ? "ok" : "LOW") }'
exit 0
