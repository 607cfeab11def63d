#!/bin/bash
# One client that floods the router must not starve another (issue 33), in dom0 of
# the router topology (router.sh) with two client domUs whose vifs the router serves
# (router-netback):
#
#   fairness.sh C1 C2 C2-DOMAIN PHASE
#
# PHASE is one of idle, spinning, flooded (in that order; each a 4 s transfer, so
# that the router's `xen` can be read between them: where its time went), then
# report (the `router-fairness` scenario); or burst: C2's flood alone for 5 s, no
# transfer (`router-netback`: the router's port unreachables to it are limited).
#
# C1 and C2 are the clients' LAN addresses; each client runs a shell on TCP port
# 7000 (run.py's CLIENT_INIT: busybox `nc -ll -p 7000 -e /bin/sh`), reached from
# lan1 (on the same LAN: the router's bridge switches it). Prints:
#
#   fairness: idle <Mbit/s>                 C1's TCP to wan alone (iperf3 -t 4)
#   fairness: spinning <Mbit/s>             the same while C2 only spins, capped at
#                                           20 % of the CPU (`xl sched-credit2 -c`)
#   fairness: flooded <Mbit/s>              the same while C2 floods the router
#   fairness: flood at 1000 pkt/s N pkt/s   what C2 sent
#   fairness: cpu PHASE: dom0 ...           each domain's CPU seconds in each phase
#   fairness: ratio R of idle, Q of spinning (the goal, 0.5 of idle, met|not met)
#
# The flood: the kernel's packet generator (pktgen) in C2 sends 60-byte UDP
# datagrams, 1,000 a second, to the router's own LAN address (port 9, no socket:
# the router's stack drops each, answering a few with a port unreachable). It ends
# at the router: dom0, which carries C1's transfer to wan, carries none of it. But
# the bed has one CPU for every domain: what C2 spends on sending (about 40 % of it
# at 1,000 a second, nested) is taken from dom0, the router and C1 too, which a
# real host with a core per domain would not do; the spinning phase shows what CPU
# contention alone costs C1, so that the router's part can be told from the bed's.
set -u
USAGE="usage: fairness.sh C1 C2 C2-DOMAIN idle|spinning|flooded|report|burst"
C1=${1:?$USAGE}
C2=${2:?$USAGE}
D2=${3:?$USAGE}
PHASE=${4:?$USAGE}
# each phase's rate, kept for the report
STATE=/tmp/fairness
mkdir -p "$STATE"
cap() {
    xl sched-credit2 -d "$D2" -c "$1" 2>/dev/null || xl sched-credit -d "$D2" -c "$1" ||
        echo "fairness: cannot cap $D2's CPU"
}

# run a command line on a client through its shell (output back, then EOF); at
# most 60 s (a client's shell has taken 30 s to answer on the bed)
on() {
    printf '%s\n' "$2" | timeout 60 ip netns exec lan1 busybox nc -w 10 "$1" 7000
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
    local c0 c1 t0 t1 out
    c0=$(cpu)
    t0=$(date +%s.%N)
    out=$(on "$C1" "echo client-up \$(cut -d' ' -f1 /proc/uptime); /usr/bin/iperf3 -c 10.77.0.10 -t 4 --connect-timeout 5000 2>&1; echo client-up \$(cut -d' ' -f1 /proc/uptime); top -b -n 1 | head -8")
    t1=$(date +%s.%N)
    c1=$(cpu)
    echo "$c0 $c1 $t0 $t1" | awk -v w="$1" 'NF == 10 { printf "fairness: cpu %s: dom0 %.1f s, router %.1f s, c1 %.1f s, c2 %.1f s in %.1f s\n",
        w, $5 - $1, $6 - $2, $7 - $3, $8 - $4, $10 - $9 }'
    # the transfer's seconds
    grep -E 'sec .*bits/sec' <<<"$out" | sed "s/^/fairness: iperf3 $1: /"
    grep -q 'receiver$' <<<"$out" || echo "fairness: iperf3 $1 failed: $(tail -1 <<<"$out")"
    # C1's clock around its transfer, and its busiest tasks after it
    grep -E '^client-up|^CPU:|^ *[0-9]+ +[0-9]+ ' <<<"$out" | sed "s/^/fairness: c1 $1: /"
}

# one 4 s transfer of C1 named $1: prints "fairness: $1 <Mbit/s>" last, keeps the
# rate
phase() {
    local out rate
    out=$(xfer "$1")
    rate=$(mbits "$out")
    grep '^fairness: ' <<<"$out"
    echo "fairness: $1 ${rate:-failed}"
    echo "$rate" >"$STATE/$1"
}
# C2's pktgen started in the background (the shell's connection closes at once):
# $1 pkt/s (paced: pktgen sleeps between them; unpaced it spins and takes C2's
# shell with it); at most $2 datagrams (30,000: it ends by itself if the stop below
# does not reach it)
flood_start() {
    local count=${2:-30000}
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
         "count '"$count"'" "ratep '"$1"'"; do
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

case "$PHASE" in
idle)
    rm -f "$STATE"/*
    phase idle
    ;;
spinning)
    # what the bed's shared CPU costs C1 alone: C2 busy (capped at 20 %), sending
    # nothing
    cap 20
    on "$C2" '(while :; do :; done) </dev/null >/dev/null 2>&1 & echo $! >/tmp/spin.pid'
    phase spinning
    on "$C2" 'kill $(cat /tmp/spin.pid)'
    cap 0
    ;;
flooded)
    # the flood: 1,000 datagrams a second
    flood_start 1000
    phase flooded
    flood_stop "at 1000 pkt/s"
    ;;
burst)
    flood_start 1000 5000
    sleep 5
    flood_stop "burst at 1000 pkt/s"
    ;;
report)
    idle=$(cat "$STATE/idle" 2>/dev/null)
    spinning=$(cat "$STATE/spinning" 2>/dev/null)
    flooded=$(cat "$STATE/flooded" 2>/dev/null)
    [ -n "$idle" ] && [ -n "$flooded" ] && [ -n "$spinning" ] &&
        awk -v a="$idle" -v s="$spinning" -v b="$flooded" 'BEGIN {
            r = a > 0 ? b / a : 0; q = s > 0 ? b / s : 0;
            printf "fairness: ratio %.2f of idle, %.2f of spinning (the goal, 0.5 of idle, %s)\n",
                r, q, (r >= 0.5 ? "met" : "not met") }'
    ;;
*)
    echo "$USAGE" >&2
    exit 2
    ;;
esac
exit 0
