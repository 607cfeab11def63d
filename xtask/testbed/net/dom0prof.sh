#!/bin/bash
# dom0's profile while a command runs (`cargo xtask bench router` and `bench net`):
#
#   dom0prof.sh COMMAND [ARGS...]
#
# runs COMMAND (its output discarded) under `perf record -a -g` (cpu-clock, 199 Hz,
# all of dom0's vCPUs) and prints:
#
#   perf comm: P% NAME; ...      dom0's samples by command (swapper = idle), top 8
#   perf sym: P% SYMBOL; ...     by the symbol the sample was in, top 10
#                                (xen_hypercall_* is time in Xen on dom0's behalf)
#   perf incl: P% SYMBOL; ...    by symbol including what it called, the top 14
#                                after the generic entry points: which kernel paths
#                                the hypercalls and copies belong to
#
# Exits with COMMAND's status (perf's, if perf failed to start it).
set -u
[ $# -ge 1 ] || { echo "usage: dom0prof.sh COMMAND [ARGS...]" >&2; exit 2; }
DATA=$(mktemp /tmp/dom0prof.XXXXXX)
trap 'rm -f "$DATA"' EXIT
perf record -q -a -g -e cpu-clock -F 199 -o "$DATA" -- "$@" >/dev/null 2>&1
rc=$?
# `perf report -q` lines: "    12.34%  comm", "    12.34%  [k] symbol" or, with
# --children, "    40.00%     1.00%  [k] symbol"
GENERIC='^(ret_from_fork|kthread|entry_|do_syscall|__x64_sys|x64_sys|asm_|cpu_startup|do_idle|secondary_startup|start_kernel|rest_init|arch_call_rest_init|smpboot|worker_thread|process_one_work|__do_softirq|handle_softirqs|irq_exit|__irq_exit|do_softirq|__local_bh_enable|run_ksoftirqd|xen_evtchn_do_upcall|__xen_evtchn_do_upcall|exc_xen|xen_pv_evtchn|handle_irq_event|__handle_irq|handle_edge|generic_handle|__libc|__GI_|_start|main$|0x)'
top() {
    local n=$1
    shift
    perf report -i "$DATA" -q --stdio "$@" -g none --percent-limit 1 2>/dev/null |
        awk -v n="$n" -v skip="$GENERIC" 'NF >= 2 && $1 ~ /%$/ && c < n {
            p = $1; i = 2
            if ($2 ~ /%$/) i = 3              # --children: the inclusive figure first
            if ($i ~ /^\[/) i++
            name = $i
            if (name ~ skip) next
            s = s (c ? "; " : "") sprintf("%.1f%% %s", p, name); c++
        } END {print s}'
}
echo "perf comm: $(top 8 --no-children --sort comm)"
echo "perf sym: $(top 10 --no-children --sort sym)"
echo "perf incl: $(top 14 --children --sort sym)"
exit $rc
