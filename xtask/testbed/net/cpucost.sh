#!/bin/bash
# Where the CPU goes during a TCP transfer through the router (`cargo xtask bench
# router`), in dom0 of the router topology (router.sh):
#
#   cpucost.sh DOMAIN [SECONDS] [IPERF3-FLAGS...]
#
# runs `iperf3 -c 10.77.0.10 -t SECONDS FLAGS` in namespace lan1 (lan1 -> wan; `-R`
# for wan -> lan1) under `perf record -a` (cpu-clock, 499 Hz, dom0's whole vCPU) and
# prints:
#
#   the iperf3 receiver line;
#   cpu: dom0 X s, router Y s          `xl list`'s Time(s) of Domain-0 and DOMAIN
#                                      before and after (0.1 s steps)
#   perf comm: P% NAME; ...            dom0's samples by command (swapper = idle)
#   perf sym: P% SYMBOL; ...           dom0's samples by symbol, the top 12
#
# The profile's sampling costs dom0 a little CPU too, the same for every router.
set -u
DOMAIN=${1:?usage: cpucost.sh DOMAIN [SECONDS] [IPERF3-FLAGS...]}
SECS=${2:-8}
shift $(($# >= 2 ? 2 : 1))
DATA=/tmp/cpucost.perf

cpu() {
    xl list | awk -v n="$DOMAIN" '$1=="Domain-0"{d=$6} $1==n{g=$6} END{printf "%s %s", d, g}'
}
c0=$(cpu)
perf record -q -a -e cpu-clock -F 499 -o "$DATA" -- \
    ip netns exec lan1 iperf3 -c 10.77.0.10 -t "$SECS" --connect-timeout 5000 "$@" \
    2>/dev/null | grep -E 'receiver$'
c1=$(cpu)
echo "$c0 $c1" | awk 'NF==4{printf "cpu: dom0 %.1f s, router %.1f s\n", $3-$1, $4-$2}'
# `perf report -q` lines: "    12.34%  comm" or "    12.34%  [k] symbol"
top() {
    perf report -i "$DATA" -q --stdio --no-children --sort "$1" --percent-limit 1 2>/dev/null |
        awk -v n="$2" 'NF >= 2 && $1 ~ /%$/ && c < n {
            $1 = sprintf("%.1f%%", $1); if ($2 ~ /^\[/) $2 = ""; s = s (c ? "; " : "") $0; c++
        } END {print s}' | tr -s ' '
}
echo "perf comm: $(top comm 8)"
echo "perf sym: $(top sym 12)"
rm -f "$DATA"
