#!/bin/bash
# Where the CPU goes during a TCP transfer through the router (`cargo xtask bench
# router`), in dom0 of the router topology (router.sh):
#
#   cpucost.sh DOMAIN [SECONDS] [IPERF3-FLAGS...]
#
# runs `iperf3 -c 10.77.0.10 -t SECONDS FLAGS` in namespace lan1 (lan1 -> wan; `-R`
# for wan -> lan1), then the same for 4 s under `perf record -a -g` (cpu-clock,
# 199 Hz, dom0's whole vCPU), and prints:
#
#   the iperf3 receiver line of the first transfer;
#   cpu: dom0 X s, router Y s          `xl list`'s Time(s) of Domain-0 and DOMAIN
#                                      before and after the first (0.1 s steps)
#   perf comm: P% NAME; ...            dom0's samples by command (swapper = idle)
#   perf sym: P% SYMBOL; ...           by symbol where the sample was (top 10;
#                                      xen_hypercall_* is time in Xen on dom0's behalf)
#   perf incl: P% SYMBOL; ...          by symbol including what it called (top 14
#                                      after the generic entry points): which kernel
#                                      paths the hypercalls and copies belong to
#
# The profile (dom0prof.sh) is a separate transfer: its sampling does not count in
# the CPU seconds.
set -u
DOMAIN=${1:?usage: cpucost.sh DOMAIN [SECONDS] [IPERF3-FLAGS...]}
SECS=${2:-8}
shift $(($# >= 2 ? 2 : 1))

cpu() {
    xl list | awk -v n="$DOMAIN" '$1=="Domain-0"{d=$6} $1==n{g=$6} END{printf "%s %s", d, g}'
}
iperf() {
    ip netns exec lan1 iperf3 -c 10.77.0.10 -t "$1" --connect-timeout 5000 "${@:2}" 2>/dev/null
}
c0=$(cpu)
iperf "$SECS" "$@" | grep -E 'receiver$'
c1=$(cpu)
echo "$c0 $c1" | awk 'NF==4{printf "cpu: dom0 %.1f s, router %.1f s\n", $3-$1, $4-$2}'
# the profile is best effort: a transfer that failed under it (a bed stall) leaves
# its lines empty, not the figures above without a step
"$(dirname "$0")/dom0prof.sh" bash -c "$(declare -f iperf); iperf 4 $*" ||
    echo "cpucost: the profiled transfer failed (status $?)"
exit 0
