#!/bin/bash
# The 64-byte forwarding knee of `cargo xtask bench router`, in dom0 of the router
# topology (router.sh): the kernel's pktgen in namespace lan1 offers minimum-size UDP
# frames (60 bytes + FCS = 64 on the wire) to wan (10.77.0.10, port 9) through the
# router at a fixed rate; wan counts what arrives (an nftables counter at prerouting,
# priority raw, that then drops them: no ICMP back, no conntrack in wan).
#
#   knee.sh flow  [SECONDS]   one flow (the same source port every packet)
#   knee.sh flows [SECONDS]   a new flow every packet (the source port counts up
#                             through 1024..65535): each packet is a new conntrack
#                             entry and NAT mapping in the router
#
# The rate starts at 1000 packets/s and doubles while less than 0.1 % is lost and
# pktgen reaches at least 90 % of the rate asked; then 3 halvings of the gap between
# the last good and the first bad rate. Then one probe with no rate limit: what
# pktgen offers at most and what the router forwards of it. Prints one line per
# probe and, last:
#
#   knee: MODE N pps (loss < 0.1 %)        (+ "; bound by the sender" when the rate
#                                           above it failed for pktgen's shortfall,
#                                           not for loss: the router's knee is higher)
#   unlimited: MODE offered N pps, forwarded M pps
#
# The sender (pktgen, a kernel thread) is not the bottleneck when `unlimited`'s
# offered rate is well above the knee. Exits 1 if pktgen or nft cannot be set up.
#
# The path is the router topology's unless the environment says otherwise (the
# reflector of `bench net`, reflect.sh): KNEE_TX_NS (pktgen's namespace, lan1),
# KNEE_RX_NS (where arrivals are counted, wan), KNEE_DST (the packets' destination,
# 10.77.0.10) and KNEE_NEXT (the neighbour whose MAC the frames are sent to, the
# router 192.168.1.1).
set -u
MODE=${1:-flow}
SECS=${2:-3}
PG=/proc/net/pktgen
TX_NS=${KNEE_TX_NS:-lan1}
RX_NS=${KNEE_RX_NS:-wan}
DST=${KNEE_DST:-10.77.0.10}
GW=${KNEE_NEXT:-192.168.1.1}

ns() { local n=$1; shift; ip netns exec "$n" "$@"; }
die() { echo "knee: $*" >&2; exit 1; }

case "$MODE" in flow | flows) ;; *) die "mode is flow or flows, not '$MODE'" ;; esac
modprobe pktgen || die "no pktgen module"
src=$(ns "$TX_NS" ip -4 -o addr show dev eth0 | awk '{sub(/\/.*/, "", $4); print $4; exit}')
[ -n "$src" ] || die "$TX_NS has no IPv4 address"
# (a reflecting destination sends the echo request back instead of answering: only
# its ARP reply is needed then)
if ! ns "$TX_NS" ping -n -c 1 -W 3 "$DST" >/dev/null && [ "$GW" != "$DST" ]; then
    die "$TX_NS cannot ping $DST"
fi
gwmac=$(ns "$TX_NS" ip neigh show "$GW" dev eth0 | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}')
[ -n "$gwmac" ] || die "$TX_NS has no neighbour entry for $GW"

ns "$RX_NS" nft -f - <<'EOF' || die "nft in $RX_NS"
table inet knee {
    chain pre {
        type filter hook prerouting priority raw; policy accept;
        udp dport 9 counter name got drop
    }
    counter got { }
}
EOF
trap 'ns "$RX_NS" nft delete table inet knee 2>/dev/null' EXIT
got() { ns "$RX_NS" nft list counter inet knee got | awk '/packets/ {print $2; exit}'; }

# pktgen's files are per network namespace: everything below runs in TX_NS
pg() { ns "$TX_NS" sh -c "echo '$1' > $PG/$2" || die "pktgen: '$1' > $2"; }
pg rem_device_all kpktgend_0
pg "add_device eth0" kpktgend_0
pg "clone_skb 0" eth0 # veth cannot share one skb between sends
pg "pkt_size 60" eth0
pg "burst 1" eth0
pg "src_min $src" eth0
pg "src_max $src" eth0
pg "dst $DST" eth0
pg "dst_mac $gwmac" eth0
pg "udp_dst_min 9" eth0
pg "udp_dst_max 9" eth0
if [ "$MODE" = flows ]; then
    pg "udp_src_min 1024" eth0
    pg "udp_src_max 65535" eth0
else
    pg "udp_src_min 40000" eth0
    pg "udp_src_max 40000" eth0
fi

# probe RATE (0: unlimited): prints "probe ..." and sets SENT, GOT, PPS, LOSS_PPM
probe() {
    local rate=$1 count
    if [ "$rate" -gt 0 ]; then count=$((rate * SECS)); else count=$((200000 * SECS)); fi
    pg "count $count" eth0
    if [ "$rate" -gt 0 ]; then pg "ratep $rate" eth0; else pg "delay 0" eth0; fi
    local before after
    before=$(got)
    if [ "$rate" -gt 0 ]; then
        ns "$TX_NS" sh -c "echo start > $PG/pgctrl"
    else
        # no rate limit: stopped after SECS, whatever it sent by then
        ns "$TX_NS" sh -c "echo start > $PG/pgctrl" &
        sleep "$SECS"
        ns "$TX_NS" sh -c "echo stop > $PG/pgctrl"
        wait
    fi
    sleep 1 # what is still queued in the router arrives
    after=$(got)
    local res
    res=$(ns "$TX_NS" cat $PG/eth0)
    SENT=$(echo "$res" | awk '/pkts-sofar:/ {print $2; exit}')
    USEC=$(echo "$res" | awk '/^Result: OK:/ {sub(/\(.*/, "", $3); print $3; exit}')
    [ -n "$SENT" ] && [ -n "$USEC" ] && [ "$USEC" -gt 0 ] || die "no pktgen result: $res"
    GOT=$((after - before))
    PPS=$((SENT * 1000000 / USEC))
    LOSS_PPM=$(((SENT - GOT) * 1000000 / (SENT > 0 ? SENT : 1)))
    echo "probe: $MODE rate=$rate sent=$SENT in ${USEC}us (${PPS} pps) received=$GOT loss=$((LOSS_PPM / 10))e-4"
}

# good RATE: under 0.1 % lost and pktgen kept up with the rate
good() { [ "$LOSS_PPM" -lt 1000 ] && [ "$PPS" -ge $(($1 * 9 / 10)) ]; }

# why the lowest bad rate was bad: the router lost packets, or pktgen fell short
why=""
verdict() {
    if good "$1"; then ok=$1; return 0; fi
    bad=$1
    if [ "$LOSS_PPM" -lt 1000 ]; then why="sender"; else why="loss"; fi
    return 1
}
ok=0
bad=0
rate=1000
while [ "$rate" -le 1024000 ]; do
    probe "$rate"
    verdict "$rate" || break
    rate=$((rate * 2))
done
if [ "$bad" -gt 0 ]; then
    for _ in 1 2 3; do
        probe $(((ok + bad) / 2))
        verdict $(((ok + bad) / 2)) || true
    done
fi
# "bound by the sender": pktgen could not offer more without loss, the router's
# knee is higher than the figure
if [ "$why" = sender ]; then
    echo "knee: $MODE $ok pps (loss < 0.1 %; bound by the sender)"
else
    echo "knee: $MODE $ok pps (loss < 0.1 %)"
fi
probe 0
echo "unlimited: $MODE offered $PPS pps, forwarded $((GOT * 1000000 / USEC)) pps"
