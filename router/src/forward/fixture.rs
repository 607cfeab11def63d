//! What the IPv4 and IPv6 forwarding tests share: the three interfaces (eth0 LAN,
//! eth1 WAN, eth2 DMZ) and the link-layer addresses of the router and its neighbours.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::*;
use crate::testutil::Recorder;
use crate::NoHook;

pub(super) const LAN: IfId = IfId(0);
pub(super) const WAN: IfId = IfId(1);
pub(super) const DMZ: IfId = IfId(2);
pub(super) const MAC0: [u8; 6] = [2, 0, 0, 0, 0, 0xa0];
pub(super) const MAC1: [u8; 6] = [2, 0, 0, 0, 0, 0xa1];
pub(super) const MAC2: [u8; 6] = [2, 0, 0, 0, 0, 0xa2];
pub(super) const HOST_MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x56];
pub(super) const GW_MAC: [u8; 6] = [0x52, 0x54, 0, 0xaa, 0xbb, 0xcc];
pub(super) const DMZ_MAC: [u8; 6] = [0x52, 0x54, 0, 0xdd, 0, 0x50];

pub(super) fn ifcfg(name: &str, mac: [u8; 6], mtu: u16, gso: bool, clamp: bool) -> IfConfig {
    IfConfig {
        has_tx_gso: gso,
        has_tx_gso6: gso,
        is_mss_clamped: clamp,
        ..crate::testutil::ifconfig(name, mac, mtu)
    }
}

pub(super) fn run(
    r: &mut Router,
    ifc: IfId,
    f: &mut [u8],
    now: Millis,
    o: &mut Recorder,
) -> Disposition {
    r.input(ifc, f, RxMeta::default(), now, &mut NoHook, o)
}
