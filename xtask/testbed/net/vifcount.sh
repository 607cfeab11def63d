#!/bin/bash
# What crosses the guest's vif during an iperf3 transfer (`cargo xtask bench net`),
# in dom0:
#
#   vifcount.sh ADDR [IPERF3-FLAGS...]
#
# runs `iperf3 -c ADDR -t 4 FLAGS` against the domain $DOMID and prints dom0's
# counters of its vif (vif$DOMID.0) over the transfer:
#
#   vif: from guest P packets, B bytes, A B/packet; to guest P packets, B bytes, A B/packet
#
# "from guest" is what netback took off the guest's TX ring, one packet per GSO
# packet (so A is the mean GSO packet size); "to guest" what it put on the RX ring
# (the ACKs, when the guest sends). `cargo xtask bench net` divides the ACKs by the
# MB they answer. Exits with iperf3's status.
set -u
ADDR=${1:?usage: vifcount.sh ADDR [IPERF3-FLAGS...]}
shift
VIF=/sys/class/net/vif${DOMID:?DOMID unset}.0/statistics
[ -d "$VIF" ] || { echo "vifcount: no $VIF" >&2; exit 2; }
count() { echo "$(cat $VIF/rx_packets) $(cat $VIF/rx_bytes) $(cat $VIF/tx_packets) $(cat $VIF/tx_bytes)"; }
c0=$(count)
iperf3 -c "$ADDR" -t 4 "$@" >/dev/null
rc=$?
c1=$(count)
echo "$c0 $c1" | awk '{rp=$5-$1; rb=$6-$2; tp=$7-$3; tb=$8-$4;
    printf "vif: from guest %d packets, %d bytes, %d B/packet; to guest %d packets, %d bytes, %d B/packet\n",
        rp, rb, rp ? rb/rp : 0, tp, tb, tp ? tb/tp : 0}'
exit $rc
