#!/bin/bash
# The differential's own check, on a Linux host (root, python3-scapy, nftables): Linux
# against Linux must show no difference. Bridges brlan/brwan are made in a namespace
# `tb` (nothing touches the host's own network); the router is routerdiff's Linux
# namespace `rtr`, started afresh for each run. Arguments go to `routerdiff.py run`
# (`--short`).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/routerdiff-selftest}
mkdir -p "$OUT"
export BRNS=tb
py=/usr/bin/python3
cleanup() {
    $py "$HERE/routerdiff.py" linux-down >/dev/null 2>&1 || true
    $py "$HERE/routerdiff.py" teardown >/dev/null 2>&1 || true
    ip netns del tb 2>/dev/null || true
}
trap cleanup EXIT
cleanup
ip netns add tb
for br in brlan brwan; do
    ip netns exec tb ip link add $br type bridge
    ip netns exec tb ip link set $br up
done
$py "$HERE/routerdiff.py" setup
for run in a b; do
    $py "$HERE/routerdiff.py" linux-up 10.77.0.2
    $py "$HERE/routerdiff.py" run linux-$run 10.77.0.2 "$OUT/$run.json" "$@"
    $py "$HERE/routerdiff.py" linux-down
done
$py "$HERE/routerdiff.py" compare "$OUT/a.json" "$OUT/b.json" "$HERE/known.txt"
