#!/bin/bash
# The reflector row of `cargo xtask bench net`: a vif's raw cost, no stack in the way.
#
#   reflect.sh GUEST-ADDR [SECONDS]
#
# with the guest on dom0's bridge xenbr0 (10.99.0.0/24) reflecting (Xenlet's
# `reflect eth0 on`: unicast frames to its MAC go straight back, MACs swapped):
# a namespace `gen` (10.99.0.5/24, a veth on xenbr0) runs knee.sh with pktgen
# sending 64-byte frames to the guest's MAC and counting what comes back, so each
# frame crosses dom0's bridge and netback, the guest's netfront both ways, and
# nothing else. Prints knee.sh's lines (`knee: flow N pps ...`, `unlimited: ...`).
set -u
ADDR=${1:?usage: reflect.sh GUEST-ADDR [SECONDS]}
SECS=${2:-2}
HERE=$(cd "$(dirname "$0")" && pwd)

cleanup() {
    ip netns del gen 2>/dev/null
    ip link del vgen 2>/dev/null
}
cleanup
trap cleanup EXIT
ip netns add gen &&
    ip link add vgen type veth peer name eth0 netns gen &&
    ip link set vgen master xenbr0 up &&
    ip netns exec gen ip addr add 10.99.0.5/24 dev eth0 &&
    ip netns exec gen ip link set eth0 up &&
    ip netns exec gen ip link set lo up || { echo "reflect: cannot make namespace gen" >&2; exit 1; }
# the guest answers ARP (broadcast: not reflected) before the frames start
KNEE_TX_NS=gen KNEE_RX_NS=gen KNEE_DST="$ADDR" KNEE_NEXT="$ADDR" "$HERE/knee.sh" flow "$SECS"
