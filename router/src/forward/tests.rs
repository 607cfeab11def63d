//! The forwarding path end to end over a three-interface topology:
//! eth0 LAN 192.168.1.1/24, eth1 WAN 10.0.0.2/24 (default via 10.0.0.1, GSO capable,
//! 198.51.100.0/24 with `mtu 1400`), eth2 172.16.0.1/24 with MTU 1280 and `mtu_fix`.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::fixture::*;
use super::*;
use crate::checksum;
use crate::testutil::*;
use crate::{HookVerdict, Meta, NoHook};
use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;
use smoltcp::wire::EthernetAddress;

const HOST: [u8; 4] = [192, 168, 1, 100];
const GW: [u8; 4] = [10, 0, 0, 1];
const DMZ_HOST: [u8; 4] = [172, 16, 0, 50];
const NET: [u8; 4] = [8, 8, 8, 8];
const SMALL: [u8; 4] = [198, 51, 100, 7];

fn setup() -> Router {
    let mut r = Router::new(RouterConfig::default());
    assert_eq!(
        r.add_interface(ifcfg("eth0", MAC0, 1500, false, false)),
        Ok(LAN)
    );
    assert_eq!(
        r.add_interface(ifcfg("eth1", MAC1, 1500, true, false)),
        Ok(WAN)
    );
    assert_eq!(
        r.add_interface(ifcfg("eth2", MAC2, 1280, false, true)),
        Ok(DMZ)
    );
    r.add_address(LAN, Ipv4Net::new(ip([192, 168, 1, 1]), 24).unwrap())
        .unwrap();
    r.set_address(WAN, Ipv4Net::new(ip([10, 0, 0, 2]), 24))
        .unwrap();
    r.add_address(DMZ, Ipv4Net::new(ip([172, 16, 0, 1]), 24).unwrap())
        .unwrap();
    r.set_dhcp_default(Some((ip(GW), WAN))).unwrap();
    r.add_route(Route {
        dest: Ipv4Net::new(ip([198, 51, 100, 0]), 24).unwrap(),
        gateway: Some(ip(GW)),
        ifc: WAN,
        mtu: Some(1400),
        src: None,
        metric: 0,
        proto: RouteProto::Static,
    })
    .unwrap();
    r
}

/// Teaches the router a neighbour with an ARP reply to it.
fn learn(r: &mut Router, ifc: IfId, our_mac: [u8; 6], our_ip: [u8; 4], ip4: [u8; 4], mac: [u8; 6]) {
    let mut f = eth(our_mac, mac, 0x0806, &arp(2, mac, ip4, our_mac, our_ip));
    let mut o = Recorder::default();
    assert_eq!(
        r.input(ifc, &mut f, RxMeta::default(), 0, &mut NoHook, &mut o),
        Disposition::Local
    );
}

fn learn_all(r: &mut Router) {
    learn(r, LAN, MAC0, [192, 168, 1, 1], HOST, HOST_MAC);
    learn(r, WAN, MAC1, [10, 0, 0, 2], GW, GW_MAC);
    learn(r, DMZ, MAC2, [172, 16, 0, 1], DMZ_HOST, DMZ_MAC);
}

/// [`setup`] with every neighbour known.
fn learnt() -> Router {
    let mut r = setup();
    learn_all(&mut r);
    r
}

/// A router that knows its neighbours ([`learnt`]) and what it did with `frame`
/// arriving on the LAN at `now`: its disposition and the frames it sent.
fn learnt_then_from_lan(frame: &[u8], now: Millis) -> (Router, Disposition, Recorder) {
    let mut r = learnt();
    let mut o = Recorder::default();
    let d = run(&mut r, LAN, &mut frame.to_vec(), now, &mut o);
    (r, d, o)
}

fn udp_frame(
    to_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    ttl: u8,
    df: bool,
    len: usize,
) -> Vec<u8> {
    let payload: Vec<u8> = (0..len).map(|i| (i * 13 + 1) as u8).collect();
    let p = ipv4(
        src,
        dst,
        17,
        ttl,
        0x4242,
        df,
        &[],
        &udp(src, dst, 33000, 53, &payload),
    );
    eth(to_mac, HOST_MAC, 0x0800, &p)
}

#[test]
fn forwards_with_ttl_minus_one_and_valid_checksum() {
    let orig = udp_frame(MAC0, HOST, NET, 64, true, 100);
    let (mut r, d, mut o) = learnt_then_from_lan(&orig, 5);
    assert_eq!(d, Disposition::Forwarded);
    assert_eq!(o.sent.len(), 1);
    let (ifc, out, tx) = &o.sent[0];
    assert_eq!((*ifc, *tx), (WAN, TxMeta::default()));
    assert_eq!(&out[0..6], &GW_MAC, "to the gateway");
    assert_eq!(&out[6..12], &MAC1, "from the WAN MAC");
    let ipk = &out[14..];
    assert_eq!(ipk[8], 63);
    assert!(header_ok(ipk));
    assert_eq!(
        checksum::checksum(&ipk[..20]),
        0,
        "incremental update equals a recompute"
    );
    // nothing else changed
    assert_eq!(&out[14..22], &orig[14..22]);
    assert_eq!(&out[14 + 12..], &orig[14 + 12..]);
    assert!(ipv4::l4_checksum_ok(ipk));
    // the same frame back out of the interface it came in by is forwarded too
    let mut f = udp_frame(MAC0, HOST, [192, 168, 1, 77], 64, true, 10);
    learn(
        &mut r,
        LAN,
        MAC0,
        [192, 168, 1, 1],
        [192, 168, 1, 77],
        [0x52, 0, 0, 0, 0, 0x77],
    );
    assert_eq!(run(&mut r, LAN, &mut f, 5, &mut o), Disposition::Forwarded);
    assert_eq!(o.sent[1].0, LAN);
    assert_eq!(&o.sent[1].1[0..6], &[0x52, 0, 0, 0, 0, 0x77]);
    let s = r.stats();
    assert_eq!(s.iface(LAN).rx_packets, 2);
    assert_eq!(s.iface(WAN).tx_packets, 1);
    assert_eq!(s.iface(WAN).tx_bytes, (orig.len() - 14) as u64);
}

#[test]
fn arp_request_queue_and_release_on_reply() {
    let mut r = setup();
    let mut o = Recorder::default();
    let frames: Vec<Vec<u8>> = (0..4u8)
        .map(|i| udp_frame(MAC0, HOST, NET, 64, true, 20 + usize::from(i)))
        .collect();
    let mut f0 = frames[0].clone();
    assert_eq!(run(&mut r, LAN, &mut f0, 0, &mut o), Disposition::Queued);
    // one broadcast ARP request on the WAN: who has 10.0.0.1? tell 10.0.0.2
    let arps = o.of_type(0x0806);
    assert_eq!(arps.len(), 1);
    let (ifc, a, _) = arps[0];
    assert_eq!(*ifc, WAN);
    assert_eq!(&a[0..6], &[0xff; 6]);
    assert_eq!(&a[14..], &arp(1, MAC1, [10, 0, 0, 2], [0; 6], GW)[..]);
    for (i, fr) in frames.iter().enumerate().skip(1) {
        let mut f = fr.clone();
        let d = run(&mut r, LAN, &mut f, 10, &mut o);
        if i < 3 {
            assert_eq!(d, Disposition::Queued);
        } else {
            assert_eq!(
                d,
                Disposition::Dropped(DropReason::NoNeighbour),
                "3 per neighbour"
            );
        }
    }
    assert_eq!(
        o.of_type(0x0806).len(),
        1,
        "no second request while waiting"
    );
    assert_eq!(r.neighbours().queued(), 3);
    assert_eq!(r.stats().dropped(DropReason::NoNeighbour), 1);
    assert_eq!(
        r.neigh_lines().map(|l| l.to_string()).collect::<Vec<_>>(),
        ["10.0.0.1 dev eth1 INCOMPLETE"]
    );
    // the reply releases them, oldest first
    let mut rep = eth(
        MAC1,
        GW_MAC,
        0x0806,
        &arp(2, GW_MAC, GW, MAC1, [10, 0, 0, 2]),
    );
    assert_eq!(run(&mut r, WAN, &mut rep, 50, &mut o), Disposition::Local);
    let ipv4s = o.of_type(0x0800);
    assert_eq!(ipv4s.len(), 3);
    for (i, (ifc, f, _)) in ipv4s.iter().enumerate() {
        assert_eq!(*ifc, WAN);
        assert_eq!(&f[0..6], &GW_MAC);
        assert_eq!(&f[6..12], &MAC1);
        assert_eq!(f.len(), frames[i].len(), "in order");
        assert_eq!(f[14 + 8], 63);
        assert!(header_ok(&f[14..]));
    }
    assert_eq!(r.neighbours().queued(), 0);
    assert_eq!(
        r.neigh_lines().map(|l| l.to_string()).collect::<Vec<_>>(),
        ["10.0.0.1 dev eth1 lladdr 52:54:00:aa:bb:cc REACHABLE"]
    );
    assert_eq!(r.stats().iface(WAN).tx_packets, 3);
}

#[test]
fn arp_retries_then_failed_drops_and_host_unreachable() {
    let mut r = setup();
    learn(&mut r, LAN, MAC0, [192, 168, 1, 1], HOST, HOST_MAC);
    let mut o = Recorder::default();
    let target = [10, 0, 0, 77];
    for t in [0, 1] {
        let mut f = udp_frame(MAC0, HOST, target, 64, true, 30);
        assert_eq!(run(&mut r, LAN, &mut f, t, &mut o), Disposition::Queued);
    }
    r.poll(500, &mut o);
    assert_eq!(o.of_type(0x0806).len(), 1, "not yet");
    r.poll(1000, &mut o);
    r.poll(2000, &mut o);
    assert_eq!(o.of_type(0x0806).len(), 3, "three tries a second apart");
    assert_eq!(r.stats().arp_requests, 3);
    assert!(o.of_type(0x0800).is_empty());
    r.poll(3000, &mut o);
    assert_eq!(o.of_type(0x0806).len(), 3, "no fourth");
    assert_eq!(r.stats().dropped(DropReason::NoNeighbour), 2);
    assert_eq!(r.neighbours().queued(), 0);
    let icmps = o.of_type(0x0800);
    assert_eq!(icmps.len(), 2, "a host-unreachable for each");
    for (ifc, f, _) in icmps {
        assert_eq!(*ifc, LAN);
        assert_eq!(&f[0..6], &HOST_MAC);
        let ipk = &f[14..];
        assert!(header_ok(ipk));
        assert_eq!(ipv4::dst(ipk), ip(HOST));
        assert_eq!(ipv4::src(ipk), ip([192, 168, 1, 1]));
        assert_eq!((ipk[20], ipk[21]), (3, 1));
        assert_eq!(checksum::checksum(&ipk[20..]), 0);
        assert_eq!(ipv4::dst(&ipk[28..]), ip(target), "quotes the lost packet");
    }
    assert!(r
        .neigh_lines()
        .any(|l| l.to_string() == "10.0.0.77 dev eth1 FAILED"));
    // a new packet restarts resolution
    let mut f = udp_frame(MAC0, HOST, target, 64, true, 30);
    assert_eq!(run(&mut r, LAN, &mut f, 4000, &mut o), Disposition::Queued);
    assert_eq!(o.of_type(0x0806).len(), 4);
}

#[test]
fn stale_entry_is_used_and_reprobed_unicast() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let t = 31_000; // past reachable_ms
    r.poll(t, &mut o);
    assert!(r
        .neigh_lines()
        .all(|l| l.state == crate::neigh::NeighState::Stale));
    let mut f = udp_frame(MAC0, HOST, NET, 64, true, 10);
    assert_eq!(run(&mut r, LAN, &mut f, t, &mut o), Disposition::Forwarded);
    let arps = o.of_type(0x0806);
    assert_eq!(arps.len(), 1);
    assert_eq!(&arps[0].1[0..6], &GW_MAC, "unicast probe");
    // no answer: probes, then FAILED
    for k in 1..=3 {
        r.poll(t + k * 1000, &mut o);
    }
    assert_eq!(o.of_type(0x0806).len(), 3);
    assert_eq!(
        r.neighbours().lookup(WAN, ip(GW)).unwrap().0,
        crate::neigh::NeighState::Failed
    );
}

#[test]
fn gratuitous_arp_updates_and_requests_to_us_create() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let new_mac = [0x52, 0x54, 0, 0xaa, 0xbb, 0xdd];
    // gratuitous request: sender = target = 10.0.0.1
    let mut g = eth([0xff; 6], new_mac, 0x0806, &arp(1, new_mac, GW, [0; 6], GW));
    assert_eq!(run(&mut r, WAN, &mut g, 10, &mut o), Disposition::Local);
    assert_eq!(
        r.neighbours().lookup(WAN, ip(GW)).unwrap().1,
        EthernetAddress(new_mac)
    );
    // an ARP request for `target` from an unknown host, 10.0.0.9
    let stranger = [2, 9, 9, 9, 9, 9];
    let request_for = |target| {
        eth(
            [0xff; 6],
            stranger,
            0x0806,
            &arp(1, stranger, [10, 0, 0, 9], [0; 6], target),
        )
    };
    // a request for someone else creates nothing
    run(&mut r, WAN, &mut request_for([10, 0, 0, 8]), 10, &mut o);
    assert!(r.neighbours().lookup(WAN, ip([10, 0, 0, 9])).is_none());
    // a request for us does (STALE)
    run(&mut r, WAN, &mut request_for([10, 0, 0, 2]), 10, &mut o);
    assert_eq!(
        r.neighbours().lookup(WAN, ip([10, 0, 0, 9])).unwrap().0,
        crate::neigh::NeighState::Stale
    );
    assert!(
        o.sent.is_empty(),
        "the router does not answer ARP itself (smoltcp does)"
    );
}

#[test]
fn a_full_neighbour_table_keeps_confirmed_and_incomplete_entries() {
    let mut cfg = RouterConfig::default();
    cfg.neigh.capacity = 2;
    let mut r = Router::new(cfg);
    r.add_interface(ifcfg("eth0", MAC0, 1500, false, false))
        .unwrap();
    r.add_interface(ifcfg("eth1", MAC1, 1500, false, false))
        .unwrap();
    r.add_address(LAN, Ipv4Net::new(ip([192, 168, 1, 1]), 24).unwrap())
        .unwrap();
    r.add_address(WAN, Ipv4Net::new(ip([10, 0, 0, 2]), 24).unwrap())
        .unwrap();
    learn(&mut r, LAN, MAC0, [192, 168, 1, 1], HOST, HOST_MAC); // at 0 ms
    let mut o = Recorder::default();
    let mut f = udp_frame(MAC0, HOST, [10, 0, 0, 5], 64, true, 10);
    assert_eq!(run(&mut r, LAN, &mut f, 1, &mut o), Disposition::Queued);
    // Full: the host confirmed 2 ms ago stays, the new resolution fails (a sweep
    // of addresses used to evict the gateway this way).
    let mut f = udp_frame(MAC0, HOST, [10, 0, 0, 6], 64, true, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 2, &mut o),
        Disposition::Dropped(DropReason::NoNeighbour)
    );
    assert!(r.neighbours().lookup(LAN, ip(HOST)).is_some(), "kept");
    // Unconfirmed for 6 s, it may go.
    let mut f = udp_frame(MAC0, HOST, [10, 0, 0, 6], 64, true, 10);
    assert_eq!(run(&mut r, LAN, &mut f, 6_000, &mut o), Disposition::Queued);
    assert!(r.neighbours().lookup(LAN, ip(HOST)).is_none(), "evicted");
    let mut f = udp_frame(MAC0, HOST, [10, 0, 0, 7], 64, true, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 6_001, &mut o),
        Disposition::Dropped(DropReason::NoNeighbour),
        "only INCOMPLETE entries left: nothing evicted"
    );
    assert_eq!(r.neighbours().queued(), 2);
    assert!(r.neighbours().lookup(WAN, ip([10, 0, 0, 5])).is_some());
    assert!(r.neighbours().lookup(WAN, ip([10, 0, 0, 6])).is_some());
}

#[test]
fn a_sweep_of_the_wan_subnet_leaves_the_gateway_resolved() {
    let mut r = learnt();
    let mut o = Recorder::default();
    // every other address of the WAN's /24, from the LAN: a neighbour entry each
    for i in 3..=254u8 {
        let mut f = udp_frame(MAC0, HOST, [10, 0, 0, i], 64, true, 10);
        let d = run(&mut r, LAN, &mut f, 100 + u64::from(i), &mut o);
        // queued while the 32 wait slots last, then dropped: either way resolving
        assert!(
            matches!(
                d,
                Disposition::Queued | Disposition::Dropped(DropReason::NoNeighbour)
            ),
            "10.0.0.{i}: {d:?}"
        );
        assert!(r.neighbours().lookup(WAN, ip([10, 0, 0, i])).is_some());
    }
    // and the gateway and the hosts are all still there
    assert!(r.neighbours().lookup(WAN, ip(GW)).is_some());
    assert!(r.neighbours().lookup(LAN, ip(HOST)).is_some());
}

/// Checks an ICMP error frame: headers, checksums, addresses, and returns the quote.
fn check_icmp(f: &[u8], to_mac: [u8; 6], from: [u8; 4], ty: u8, code: u8) -> &[u8] {
    assert_eq!(&f[0..6], &to_mac);
    let ipk = &f[14..];
    assert!(header_ok(ipk));
    assert_eq!(usize::from(u16::from_be_bytes([ipk[2], ipk[3]])), ipk.len());
    assert!(ipk.len() <= 576);
    assert_eq!(ipk[9], 1);
    assert_eq!(ipv4::src(ipk), ip(from));
    let icmp = &ipk[20..];
    assert_eq!((icmp[0], icmp[1]), (ty, code));
    assert_eq!(checksum::checksum(icmp), 0, "ICMP checksum");
    &icmp[8..]
}

#[test]
fn ttl_expiry_sends_time_exceeded_quoting_the_original() {
    let orig = udp_frame(MAC0, HOST, NET, 1, false, 700);
    let (mut r, d, mut o) = learnt_then_from_lan(&orig, 0);
    assert_eq!(d, Disposition::Dropped(DropReason::TtlExpired));
    assert_eq!(o.sent.len(), 1);
    let (ifc, e, _) = &o.sent[0];
    assert_eq!(*ifc, LAN);
    let quote = check_icmp(e, HOST_MAC, [192, 168, 1, 1], 11, 0);
    assert_eq!(ipv4::dst(&e[14..]), ip(HOST));
    assert_eq!(quote.len(), 576 - 28);
    assert_eq!(
        quote,
        &orig[14..14 + 548],
        "the original header (TTL 1) and payload"
    );
    assert_eq!(r.stats().icmp_errors, 1);
    assert_eq!(r.stats().dropped(DropReason::TtlExpired), 1);
    // TTL 0 too; TTL 2 goes through
    let mut f = udp_frame(MAC0, HOST, NET, 0, false, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::TtlExpired)
    );
    let mut f = udp_frame(MAC0, HOST, NET, 2, false, 10);
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Forwarded);
}

#[test]
fn no_icmp_about_icmp_errors() {
    let mut r = learnt();
    let mut o = Recorder::default();
    // an ICMP message from HOST to NET on its last hop
    let last_hop = |icmp: &[u8]| {
        let p = ipv4(HOST, NET, 1, 1, 9, false, &[], icmp);
        eth(MAC0, HOST_MAC, 0x0800, &p)
    };
    let mut f = last_hop(&[11, 0, 0xf4, 0xff, 0, 0, 0, 0]);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::TtlExpired)
    );
    assert!(o.sent.is_empty());
    let mut f = last_hop(&[8, 0, 0xf7, 0xfe, 0, 1, 0, 0]);
    run(&mut r, LAN, &mut f, 0, &mut o);
    assert_eq!(o.sent.len(), 1, "but about an echo request, yes");
}

#[test]
fn df_oversize_gets_frag_needed_with_next_hop_mtu() {
    let orig = udp_frame(MAC0, HOST, SMALL, 64, true, 1472 - 8);
    assert_eq!(orig.len(), 14 + 1492);
    let (mut r, d, mut o) = learnt_then_from_lan(&orig, 0);
    assert_eq!(d, Disposition::Dropped(DropReason::TooBig));
    assert_eq!(o.sent.len(), 1);
    let quote = check_icmp(&o.sent[0].1, HOST_MAC, [192, 168, 1, 1], 3, 4);
    let icmp = &o.sent[0].1[14 + 20..];
    assert_eq!(
        u16::from_be_bytes([icmp[6], icmp[7]]),
        1400,
        "the route's MTU"
    );
    assert_eq!(&quote[..28], &orig[14..42], "as received (TTL 64)");
    // on the 1280 interface the interface MTU is the limit
    let mut f = udp_frame(MAC0, HOST, DMZ_HOST, 64, true, 1300);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::TooBig)
    );
    let icmp = &o.sent[1].1[14 + 20..];
    assert_eq!(u16::from_be_bytes([icmp[6], icmp[7]]), 1280);
    // exactly the MTU goes through
    let mut f = udp_frame(MAC0, HOST, SMALL, 64, true, 1400 - 28);
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Forwarded);
}

/// Whether the UDP datagram `data` (header and payload, as reassembled) has a
/// checksum right for `src` → SMALL.
fn udp_checksum_ok(src: [u8; 4], data: &[u8]) -> bool {
    ipv4::l4_checksum_ok(&ipv4(src, SMALL, 17, 63, 0, false, &[], data))
}

/// Reassembles IPv4 fragments sent on `ifc`, checking each.
fn reassemble(frames: &[&(IfId, Vec<u8>, TxMeta)], mtu: usize) -> (Vec<u8>, Vec<u8>) {
    let mut data = Vec::new();
    let first_header = frames[0].1[14..34].to_vec();
    for (i, (_, f, _)) in frames.iter().enumerate() {
        let ipk = &f[14..];
        assert!(ipk.len() <= mtu, "fragment {i} fits");
        assert!(header_ok(ipk), "fragment {i} header checksum");
        assert_eq!(&ipk[4..6], &first_header[4..6], "same id");
        assert_eq!(ipk[6] & 0x40, 0, "DF clear");
        assert_eq!(ipk[6] & 0x20 != 0, i + 1 < frames.len(), "MF");
        assert_eq!(ipv4::frag_offset(ipk), data.len(), "offset of {i}");
        assert_eq!(&ipk[12..20], &first_header[12..20]);
        data.extend_from_slice(&ipk[20..]);
    }
    (first_header, data)
}

#[test]
fn non_df_oversize_is_fragmented_and_reassembles() {
    let orig = udp_frame(MAC0, HOST, SMALL, 64, false, 3000);
    let (r, d, o) = learnt_then_from_lan(&orig, 0);
    assert_eq!(d, Disposition::Forwarded);
    let frags = o.of_type(0x0800);
    assert_eq!(frags.len(), 3);
    assert!(frags
        .iter()
        .all(|(i, f, _)| *i == WAN && f[0..6] == GW_MAC && f[14 + 8] == 63));
    let (_, data) = reassemble(&frags, 1400);
    assert_eq!(data, &orig[34..], "the original payload");
    assert!(udp_checksum_ok(HOST, &data));
    assert_eq!(r.stats().iface(WAN).tx_packets, 3);
    assert_eq!(r.stats().iface(LAN).rx_packets, 1);
}

#[test]
fn partial_checksum_completed_before_fragmenting() {
    let mut r = learnt();
    let mut f = udp_frame(MAC0, HOST, SMALL, 64, false, 2000);
    let ulen = f.len() - 34;
    let p = checksum::fold(ipv4::pseudo_header_sum(ip(HOST), ip(SMALL), 17, ulen));
    f[34 + 6..34 + 8].copy_from_slice(&p.to_be_bytes());
    let mut o = Recorder::default();
    let rx = RxMeta {
        csum_partial: true,
        gso_size: None,
    };
    assert_eq!(
        r.input(LAN, &mut f, rx, 0, &mut NoHook, &mut o),
        Disposition::Forwarded
    );
    let frags = o.of_type(0x0800);
    assert!(frags.iter().all(|(_, _, tx)| *tx == TxMeta::default()));
    let (_, data) = reassemble(&frags, 1400);
    assert!(udp_checksum_ok(HOST, &data));
}

fn syn_frame(src: [u8; 4], dst: [u8; 4], flags: u8, mss: u16) -> Vec<u8> {
    let m = mss.to_be_bytes();
    let opts = [2, 4, m[0], m[1], 1, 1, 4, 2, 1, 3, 3, 7];
    let t = tcp(src, dst, 40000, 443, 1000, flags, &opts, &[]);
    eth(
        MAC0,
        HOST_MAC,
        0x0800,
        &ipv4(src, dst, 6, 64, 1, true, &[], &t),
    )
}

#[test]
fn mss_clamped_on_syn_and_syn_ack_with_valid_checksum() {
    let mut r = learnt();
    let mut o = Recorder::default();
    for flags in [SYN, SYN | ACK] {
        let mut f = syn_frame(HOST, DMZ_HOST, flags, 1460);
        assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Forwarded);
        let (ifc, out, _) = o.sent.last().unwrap();
        assert_eq!(*ifc, DMZ);
        let ipk = &out[14..];
        assert_eq!(&ipk[40..44], &[2, 4, 0x04, 0xd8], "1280 - 40 = 1240");
        assert!(ipv4::l4_checksum_ok(ipk), "TCP checksum");
        assert!(header_ok(ipk));
    }
    // a smaller MSS is kept; the non-clamped WAN keeps 1460
    let mut f = syn_frame(HOST, DMZ_HOST, SYN, 1000);
    run(&mut r, LAN, &mut f, 0, &mut o);
    assert_eq!(
        &o.sent.last().unwrap().1[14 + 40..14 + 44],
        &[2, 4, 0x03, 0xe8]
    );
    let mut f = syn_frame(HOST, NET, SYN, 1460);
    run(&mut r, LAN, &mut f, 0, &mut o);
    assert_eq!(o.sent.last().unwrap().0, WAN);
    assert_eq!(
        &o.sent.last().unwrap().1[14 + 40..14 + 44],
        &[2, 4, 0x05, 0xb4]
    );
}

/// A GSO TCP packet with a partial checksum from the WAN.
fn gso_frame(to_mac: [u8; 6], src: [u8; 4], dst: [u8; 4], len: usize) -> (Vec<u8>, Vec<u8>) {
    let payload: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
    let mut t = tcp(
        src,
        dst,
        443,
        50123,
        0x1234_5678,
        ACK | PSH,
        &[1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 8],
        &payload,
    );
    let p = checksum::fold(ipv4::pseudo_header_sum(ip(src), ip(dst), 6, t.len()));
    t[16..18].copy_from_slice(&p.to_be_bytes());
    (
        eth(
            to_mac,
            GW_MAC,
            0x0800,
            &ipv4(src, dst, 6, 60, 100, true, &[], &t),
        ),
        payload,
    )
}

#[test]
fn gso_to_non_gso_output_is_segmented_with_full_checksums() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let (mut f, payload) = gso_frame(MAC1, NET, HOST, 5000);
    let rx = RxMeta::gso(1448);
    assert_eq!(
        r.input(WAN, &mut f, rx, 0, &mut NoHook, &mut o),
        Disposition::Forwarded
    );
    let segs = o.of_type(0x0800);
    assert_eq!(segs.len(), 4);
    let mut data = Vec::new();
    for (i, (ifc, s, tx)) in segs.iter().enumerate() {
        assert_eq!((*ifc, *tx), (LAN, TxMeta::default()));
        assert_eq!(&s[0..6], &HOST_MAC);
        let ipk = &s[14..];
        assert!(ipk.len() <= 1500);
        assert!(header_ok(ipk));
        assert_eq!(ipk[8], 59);
        assert_eq!(u16::from_be_bytes([ipk[4], ipk[5]]), 100 + i as u16);
        assert!(
            ipv4::l4_checksum_ok(ipk),
            "segment {i} checksum by recomputation"
        );
        let seq = u32::from_be_bytes(ipk[24..28].try_into().unwrap());
        assert_eq!(seq, 0x1234_5678 + data.len() as u32);
        assert_eq!(ipk[33] & PSH != 0, i == 3);
        data.extend_from_slice(&ipk[52..]);
    }
    assert_eq!(data, payload);
}

#[test]
fn gso_leaves_whole_when_the_output_can_and_frag_needed_when_df_too_big() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let (mut f, _) = gso_frame(MAC0, HOST, NET, 5000);
    let orig_tcp = f[34..].to_vec();
    let rx = RxMeta::gso(1448);
    assert_eq!(
        r.input(LAN, &mut f, rx, 0, &mut NoHook, &mut o),
        Disposition::Forwarded
    );
    let (ifc, out, tx) = &o.sent[0];
    assert_eq!((*ifc, *tx), (WAN, rx), "GSO kept with its size");
    assert_eq!(out.len(), f.len());
    assert_eq!(&out[34..], &orig_tcp[..], "partial checksum untouched");
    // segments of 1448 + 52 do not fit the 1280 link and DF is set
    let (mut f, _) = gso_frame(MAC0, HOST, DMZ_HOST, 5000);
    assert_eq!(
        r.input(LAN, &mut f, rx, 0, &mut NoHook, &mut o),
        Disposition::Dropped(DropReason::TooBig)
    );
    let icmp = &o.sent[1].1[14 + 20..];
    assert_eq!((icmp[0], icmp[1]), (3, 4));
    assert_eq!(u16::from_be_bytes([icmp[6], icmp[7]]), 1280);
    // GSO of UDP is not something we cut
    let mut u = udp_frame(MAC0, HOST, DMZ_HOST, 64, false, 3000);
    let rx = RxMeta::gso(1000);
    assert_eq!(
        r.input(LAN, &mut u, rx, 0, &mut NoHook, &mut o),
        Disposition::Dropped(DropReason::Unsupported)
    );
}

#[test]
fn icmp_errors_are_limited_per_peer_and_overall_but_frag_needed_never() {
    let mut r = learnt();
    let mut o = Recorder::default();
    // One host sending TTL-1 packets fast: six errors, then one a second.
    for _ in 0..60 {
        let mut f = udp_frame(MAC0, HOST, NET, 1, false, 10);
        run(&mut r, LAN, &mut f, 1000, &mut o);
    }
    assert_eq!(o.sent.len(), 6, "the peer's burst");
    assert_eq!(r.stats().icmp_peer_limited, 54);
    assert_eq!(r.stats().dropped(DropReason::TtlExpired), 60);
    let mut f = udp_frame(MAC0, HOST, NET, 1, false, 10);
    run(&mut r, LAN, &mut f, 2000, &mut o);
    assert_eq!(o.sent.len(), 7, "one a second");
    // ... while fragmentation-needed still reaches it, however many
    for _ in 0..20 {
        let mut f = udp_frame(MAC0, HOST, DMZ_HOST, 64, true, 1400);
        assert_eq!(
            run(&mut r, LAN, &mut f, 2000, &mut o),
            Disposition::Dropped(DropReason::TooBig)
        );
    }
    assert_eq!(o.sent.len(), 27, "path MTU discovery is never limited");
    // Other hosts have their own allowance, within the global 1000/s, burst 50
    // (full again a second later, less the first host's one at 2000 ms).
    for i in 0..60u8 {
        let h = [192, 168, 1, 10 + i];
        learn(&mut r, LAN, MAC0, [192, 168, 1, 1], h, [2, 0, 0, 0, 3, i]);
        let mut f = udp_frame(MAC0, h, NET, 1, false, 10);
        run(&mut r, LAN, &mut f, 2000, &mut o);
    }
    assert_eq!(o.sent.len(), 27 + 49, "the global burst");
    assert_eq!(r.stats().icmp_rate_limited, 11);
}

#[test]
fn an_error_leaving_by_the_wan_comes_from_the_wan_address() {
    // A LAN-side packet with a WAN host's source (spoofed) and TTL 1: the error
    // goes to that host by the WAN, from the WAN address, not the LAN one.
    let mut r = learnt();
    let mut o = Recorder::default();
    let mut f = udp_frame(MAC0, [10, 0, 0, 1], NET, 1, false, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::TtlExpired)
    );
    let (ifc, e, _) = &o.sent[0];
    assert_eq!(*ifc, WAN);
    check_icmp(e, GW_MAC, [10, 0, 0, 2], 11, 0);
}

#[test]
fn a_martian_source_is_dropped_before_local_delivery_too() {
    let mut r = learnt();
    let mut o = Recorder::default();
    for (ifc, src, dst) in [
        (LAN, [127, 0, 0, 1], [192, 168, 1, 1]),
        (WAN, [127, 0, 0, 1], [10, 0, 0, 2]),
        (WAN, [10, 0, 0, 2], [10, 0, 0, 2]), // the router's own address, from the wire
        (WAN, [192, 168, 1, 1], [10, 0, 0, 2]),
        (LAN, [0, 0, 0, 0], [192, 168, 1, 1]),
        (LAN, [240, 0, 0, 9], [192, 168, 1, 1]),
    ] {
        let mac = if ifc == LAN { MAC0 } else { MAC1 };
        let mut f = udp_frame(mac, src, dst, 64, false, 10);
        assert_eq!(
            run(&mut r, ifc, &mut f, 0, &mut o),
            Disposition::Dropped(DropReason::Martian),
            "{src:?} -> {dst:?}"
        );
    }
    // a DHCP DISCOVER from 0.0.0.0 to the broadcast address still reaches the stack
    let mut f = udp_frame([0xff; 6], [0, 0, 0, 0], [255, 255, 255, 255], 64, false, 10);
    assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Local);
}

#[test]
fn local_traffic_goes_to_the_stack_unchanged() {
    let mut r = setup();
    let mut o = Recorder::default();
    let cases = [
        udp_frame(MAC0, HOST, [192, 168, 1, 1], 64, false, 10),
        udp_frame(MAC0, HOST, [10, 0, 0, 2], 64, false, 10), // another of our addresses
        udp_frame(MAC0, HOST, [255, 255, 255, 255], 64, false, 10),
        udp_frame(MAC0, HOST, [192, 168, 1, 255], 64, false, 10),
        udp_frame(MAC0, HOST, [224, 0, 0, 251], 64, false, 10),
        udp_frame(
            [0xff; 6],
            [0, 0, 0, 0],
            [255, 255, 255, 255],
            64,
            false,
            300,
        ), // DHCP
        udp_frame([2, 0, 0, 0, 0, 0x99], HOST, NET, 64, false, 10), // not our MAC
        udp_frame(MAC0, HOST, [192, 168, 1, 1], 1, false, 10),      // TTL 1 for us
        eth(MAC0, HOST_MAC, 0x86dd, &[0x60; 60]),                   // IPv6
    ];
    for c in cases {
        let mut f = c.clone();
        assert_eq!(run(&mut r, LAN, &mut f, 0, &mut o), Disposition::Local);
        assert_eq!(f, c, "unchanged");
    }
    assert!(o.sent.is_empty());
    assert_eq!(r.stats().local, 9);
    assert_eq!(r.stats().dropped_total(), 0);
}

#[test]
fn a_dhcp_offer_unicast_to_an_address_we_lack_is_ours() {
    // dnsmasq unicasts the OFFER to the address it offers (RFC 2131 §4.1): the WAN
    // interface does not have it yet, and it must reach the router's DHCP client
    let mut r = learnt();
    let mut o = Recorder::default();
    let offered = [10, 0, 0, 77];
    let p = ipv4(
        GW,
        offered,
        17,
        64,
        1,
        false,
        &[],
        &udp(GW, offered, 67, 68, &[0; 300]),
    );
    let c = eth(MAC1, GW_MAC, 0x0800, &p);
    let mut f = c.clone();
    assert_eq!(run(&mut r, WAN, &mut f, 0, &mut o), Disposition::Local);
    assert_eq!(f, c, "unchanged");
    // the same datagram to another port is forwarded as any other
    let p = ipv4(
        GW,
        HOST,
        17,
        64,
        1,
        false,
        &[],
        &udp(GW, HOST, 67, 69, &[0; 30]),
    );
    let mut f = eth(MAC1, GW_MAC, 0x0800, &p);
    assert_eq!(run(&mut r, WAN, &mut f, 0, &mut o), Disposition::Forwarded);
}

#[test]
fn martians_and_directed_broadcasts_dropped() {
    let mut r = learnt();
    let mut o = Recorder::default();
    for (src, dst) in [
        ([127, 0, 0, 1], NET),
        ([0, 1, 2, 3], NET),
        ([224, 1, 1, 1], NET),
        ([192, 168, 1, 255], NET),
        ([10, 0, 0, 2], NET),      // our own address as source
        (HOST, [172, 16, 0, 255]), // directed broadcast to the DMZ
        (HOST, [127, 0, 0, 1]),
        (HOST, [0, 0, 0, 9]),
        (HOST, [250, 0, 0, 1]),
    ] {
        let mut f = udp_frame(MAC0, src, dst, 64, false, 10);
        assert_eq!(
            run(&mut r, LAN, &mut f, 0, &mut o),
            Disposition::Dropped(DropReason::Martian),
            "{src:?} -> {dst:?}"
        );
    }
    assert!(o.sent.is_empty(), "no ICMP about martians");
    assert_eq!(r.stats().dropped(DropReason::Martian), 9);
}

#[test]
fn no_route_gives_net_unreachable() {
    let mut r = learnt();
    r.set_dhcp_default(None).unwrap();
    let mut o = Recorder::default();
    let mut f = udp_frame(MAC0, HOST, NET, 64, false, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::NoRoute)
    );
    check_icmp(&o.sent[0].1, HOST_MAC, [192, 168, 1, 1], 3, 0);
}

#[test]
fn full_link_is_counted() {
    let mut r = learnt();
    let mut o = Recorder {
        full: true,
        ..Default::default()
    };
    let mut f = udp_frame(MAC0, HOST, NET, 64, false, 10);
    assert_eq!(
        run(&mut r, LAN, &mut f, 0, &mut o),
        Disposition::Dropped(DropReason::TxFull)
    );
    assert_eq!(r.stats().dropped(DropReason::TxFull), 1);
    assert_eq!(r.stats().iface(WAN).tx_dropped, 1);
}

#[test]
fn malformed_frames_are_dropped_and_counted() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let good = udp_frame(MAC0, HOST, NET, 64, false, 40);
    // every truncation
    for len in 0..good.len() {
        let mut f = good[..len].to_vec();
        assert_eq!(
            run(&mut r, LAN, &mut f, 0, &mut o),
            Disposition::Dropped(DropReason::Malformed),
            "truncated to {len}"
        );
    }
    let n = good.len() as u64;
    assert_eq!(r.stats().dropped(DropReason::Malformed), n);
    // link padding after the datagram is fine, and not sent on
    let mut padded = good.clone();
    padded.extend_from_slice(&[0; 6]);
    assert_eq!(
        run(&mut r, LAN, &mut padded, 0, &mut o),
        Disposition::Forwarded
    );
    assert_eq!(o.sent.last().unwrap().1.len(), good.len());
    type Edit = (&'static str, fn(&mut Vec<u8>));
    let edits: [Edit; 7] = [
        ("IHL 4", |f| f[14] = 0x44),
        ("IHL 15 beyond total length", |f| {
            f[14] = 0x4f;
            f[16..18].copy_from_slice(&[0, 40]);
        }),
        ("IHL 15: options run into the UDP header", |f| f[14] = 0x4f),
        ("total length < header", |f| {
            f[16..18].copy_from_slice(&[0, 19])
        }),
        ("total length > frame", |f| {
            f[16..18].copy_from_slice(&[0x05, 0xdc])
        }),
        ("version 6", |f| f[14] = 0x65),
        ("bad checksum", |f| f[24] ^= 0x01),
    ];
    for (what, edit) in edits {
        let mut f = good.clone();
        edit(&mut f);
        if what != "bad checksum" {
            // keep the checksum right so only the edited field is wrong
            let hl = usize::from(f[14] & 0xf) * 4;
            if hl >= 20 && 14 + hl <= f.len() {
                ipv4::fill_header_checksum(&mut f[14..]);
            }
        }
        assert_eq!(
            run(&mut r, LAN, &mut f, 0, &mut o),
            Disposition::Dropped(DropReason::Malformed),
            "{what}"
        );
    }
    assert_eq!(r.stats().dropped(DropReason::Malformed), n + 7);
    assert_eq!(r.stats().iface(LAN).rx_dropped, n + 7);
}

#[test]
fn random_mutations_never_panic() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let (gso, _) = gso_frame(MAC1, NET, HOST, 3000);
    let seeds: Vec<(IfId, Vec<u8>)> = vec![
        (LAN, udp_frame(MAC0, HOST, NET, 64, false, 40)),
        (LAN, udp_frame(MAC0, HOST, SMALL, 64, false, 2000)),
        // to an unresolved WAN neighbour: waits for ARP (before the neighbour table
        // kept confirmed entries, evicting the gateway made such waits)
        (LAN, udp_frame(MAC0, HOST, [10, 0, 0, 77], 64, false, 40)),
        (LAN, syn_frame(HOST, DMZ_HOST, SYN, 1460)),
        (WAN, gso),
        (
            WAN,
            eth(
                MAC1,
                GW_MAC,
                0x0806,
                &arp(2, GW_MAC, GW, MAC1, [10, 0, 0, 2]),
            ),
        ),
        (
            LAN,
            eth(
                MAC0,
                HOST_MAC,
                0x0800,
                &ipv4(
                    HOST,
                    NET,
                    1,
                    1,
                    1,
                    false,
                    &[0x83, 7, 4, 1, 2, 3, 4, 0],
                    &[8, 0, 0, 0, 0, 0, 0, 0],
                ),
            ),
        ),
    ];
    let mut rng = Rng(0x0ddc_0ffe_e15b_ad00);
    let mut outcomes = [0usize; 4];
    for n in 0..20_000u64 {
        let (ifc, base) = &seeds[rng.below(seeds.len())];
        let mut f = base.clone();
        for _ in 0..1 + rng.below(6) {
            let i = rng.below(f.len().min(80));
            f[i] = rng.next() as u8;
        }
        if rng.below(4) == 0 {
            f.truncate(rng.below(f.len() + 1));
        }
        let rx = RxMeta {
            csum_partial: rng.below(3) == 0,
            gso_size: (rng.below(4) == 0).then(|| rng.below(3000) as u16),
        };
        o.full = rng.below(20) == 0;
        let ifc = if rng.below(10) == 0 {
            IfId(rng.below(5) as u8)
        } else {
            *ifc
        };
        let d = r.input(ifc, &mut f, rx, n, &mut NoHook, &mut o);
        outcomes[match d {
            Disposition::Local | Disposition::LocalReassembled => 0,
            Disposition::Forwarded => 1,
            Disposition::Queued | Disposition::Held => 2,
            Disposition::Dropped(_) => 3,
        }] += 1;
        if n % 97 == 0 {
            r.poll(n, &mut o);
        }
        o.sent.clear();
    }
    // the mutations exercise every outcome, not just early rejection
    assert!(outcomes.iter().all(|&c| c > 0), "{outcomes:?}");
}

/// A hook that masquerades on postrouting (source := 10.0.0.2 towards the WAN) and
/// records what it saw, or drops in prerouting.
#[derive(Default)]
struct Masq {
    pre: Vec<Meta>,
    post: Vec<(Meta, u8)>,
    drop_pre: bool,
    dnat_to: Option<[u8; 4]>,
}

impl L4Hook for Masq {
    fn prerouting(&mut self, ip: &mut [u8], meta: &Meta) -> HookVerdict {
        self.pre.push(*meta);
        if self.drop_pre {
            return HookVerdict::Drop(DropReason::Filtered);
        }
        if let Some(to) = self.dnat_to {
            rewrite(ip, 16, to);
        }
        HookVerdict::Accept
    }
    fn postrouting(&mut self, ip: &mut [u8], meta: &Meta) -> HookVerdict {
        self.post.push((*meta, ip[8]));
        if meta.output == Some(WAN) {
            rewrite(ip, 12, [10, 0, 0, 2]);
        }
        HookVerdict::Accept
    }
}

/// Rewrites the address at `at` with both checksums updated (UDP here).
fn rewrite(ip: &mut [u8], at: usize, to: [u8; 4]) {
    let old: [u8; 4] = ip[at..at + 4].try_into().unwrap();
    ip[at..at + 4].copy_from_slice(&to);
    let c = u16::from_be_bytes([ip[10], ip[11]]);
    ip[10..12].copy_from_slice(&checksum::update32(c, old, to).to_be_bytes());
    let c = u16::from_be_bytes([ip[26], ip[27]]);
    ip[26..28].copy_from_slice(&checksum::update32(c, old, to).to_be_bytes());
}

#[test]
fn hook_runs_after_routing_and_before_the_mtu_check() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let mut h = Masq::default();
    let orig = udp_frame(MAC0, HOST, SMALL, 64, false, 3000);
    let mut f = orig.clone();
    assert_eq!(
        r.input(LAN, &mut f, RxMeta::default(), 7, &mut h, &mut o),
        Disposition::Forwarded
    );
    assert_eq!(h.pre.len(), 1);
    assert_eq!(h.pre[0].output, None, "prerouting: before routing");
    assert_eq!(h.post.len(), 1, "once per packet, not per fragment");
    assert_eq!(h.post[0].0.output, Some(WAN), "postrouting: after routing");
    assert_eq!(h.post[0].1, 63, "after the TTL decrement");
    assert_eq!(h.post[0].0.now, 7);
    // every fragment carries the rewritten source: the hook ran before fragmentation
    let frags = o.of_type(0x0800);
    assert_eq!(frags.len(), 3);
    for (_, fr, _) in &frags {
        assert_eq!(ipv4::src(&fr[14..]), ip([10, 0, 0, 2]));
    }
    let (_, data) = reassemble(&frags, 1400);
    assert!(udp_checksum_ok([10, 0, 0, 2], &data));

    // DF: the frag-needed goes to the real source and quotes the packet as sent
    let orig = udp_frame(MAC0, HOST, SMALL, 64, true, 1450);
    let mut f = orig.clone();
    assert_eq!(
        r.input(LAN, &mut f, RxMeta::default(), 8, &mut h, &mut o),
        Disposition::Dropped(DropReason::TooBig)
    );
    let e = &o.sent.last().unwrap().1;
    let quote = check_icmp(e, HOST_MAC, [192, 168, 1, 1], 3, 4);
    assert_eq!(&quote[..28], &orig[14..42]);

    // prerouting drop is counted under the hook's reason
    h.drop_pre = true;
    let mut f = udp_frame(MAC0, HOST, NET, 64, false, 10);
    assert_eq!(
        r.input(LAN, &mut f, RxMeta::default(), 9, &mut h, &mut o),
        Disposition::Dropped(DropReason::Filtered)
    );
    assert_eq!(r.stats().dropped(DropReason::Filtered), 1);

    // a reply to the router's WAN address translated back in prerouting is routed on
    // the new destination
    h.drop_pre = false;
    h.dnat_to = Some(HOST);
    let mut f = eth(
        MAC1,
        GW_MAC,
        0x0800,
        &ipv4(
            NET,
            [10, 0, 0, 2],
            17,
            50,
            1,
            true,
            &[],
            &udp(NET, [10, 0, 0, 2], 53, 33000, &[1, 2, 3]),
        ),
    );
    assert_eq!(
        r.input(WAN, &mut f, RxMeta::default(), 10, &mut h, &mut o),
        Disposition::Forwarded
    );
    let (ifc, out, _) = o.sent.last().unwrap();
    assert_eq!(*ifc, LAN);
    assert_eq!(ipv4::dst(&out[14..]), ip(HOST));
    assert!(header_ok(&out[14..]));
    assert!(ipv4::l4_checksum_ok(&out[14..]));
}

#[test]
fn host_unreachable_quotes_the_packet_as_it_came_not_as_translated() {
    // A WAN packet to the router's address, port-forwarded to a LAN host that does
    // not answer ARP: the host-unreachable to the WAN sender must quote what it
    // sent (the router's address), not the LAN address it was translated to.
    let mut r = setup();
    learn(&mut r, WAN, MAC1, [10, 0, 0, 2], GW, GW_MAC);
    let mut h = Masq {
        dnat_to: Some([192, 168, 1, 77]),
        ..Masq::default()
    };
    let mut o = Recorder::default();
    let payload = udp(NET, [10, 0, 0, 2], 5000, 8080, &[7; 20]);
    let mut f = eth(
        MAC1,
        GW_MAC,
        0x0800,
        &ipv4(NET, [10, 0, 0, 2], 17, 50, 1, false, &[], &payload),
    );
    assert_eq!(
        r.input(WAN, &mut f, RxMeta::default(), 0, &mut h, &mut o),
        Disposition::Queued
    );
    for t in (0..=5_000).step_by(500) {
        r.poll(t, &mut o);
    }
    let (ifc, err, _) = o
        .sent
        .iter()
        .find(|(_, e, _)| e.get(14 + 9) == Some(&1))
        .expect("an ICMP error");
    assert_eq!(*ifc, WAN);
    let quote = check_icmp(err, GW_MAC, [10, 0, 0, 2], 3, 1);
    assert_eq!(ipv4::src(quote), ip(NET));
    assert_eq!(
        ipv4::dst(quote),
        ip([10, 0, 0, 2]),
        "the address the sender used"
    );
    assert!(
        !err.windows(4).any(|w| w == [192, 168, 1, 77]),
        "the LAN address does not leak"
    );
}

#[test]
fn ip_route_listing_and_dhcp_address_change() {
    let mut r = setup();
    let lines: Vec<_> = r.route_lines().map(|l| l.to_string()).collect();
    assert_eq!(
        lines,
        [
            "192.168.1.0/24 dev eth0 proto kernel scope link src 192.168.1.1",
            "10.0.0.0/24 dev eth1 proto kernel scope link src 10.0.0.2",
            "172.16.0.0/24 dev eth2 proto kernel scope link src 172.16.0.1",
            "default via 10.0.0.1 dev eth1 proto dhcp src 10.0.0.2",
            "198.51.100.0/24 via 10.0.0.1 dev eth1 mtu 1400",
        ]
    );
    // a new lease on the WAN
    r.set_address(WAN, Ipv4Net::new(ip([100, 64, 3, 9]), 22))
        .unwrap();
    r.set_dhcp_default(Some((ip([100, 64, 0, 1]), WAN)))
        .unwrap();
    let lines: Vec<_> = r.route_lines().map(|l| l.to_string()).collect();
    assert!(lines
        .contains(&"100.64.0.0/22 dev eth1 proto kernel scope link src 100.64.3.9".to_string()));
    assert!(!lines.iter().any(|l| l.contains("10.0.0.0/24")));
    assert!(
        lines.contains(&"default via 100.64.0.1 dev eth1 proto dhcp src 100.64.3.9".to_string())
    );
    assert!(r.interfaces().is_local_addr(ip([100, 64, 3, 9])));
    assert!(!r.interfaces().is_local_addr(ip([10, 0, 0, 2])));
    let link = r.stats().link_display(WAN).to_string();
    assert!(link.contains("RX:"));
}

/// Rejects every packet at the forward hook (fw4's zone policy REJECT).
struct RejectForward;

impl crate::L4Hook for RejectForward {
    fn prerouting(&mut self, _: &mut [u8], _: &Meta) -> HookVerdict {
        HookVerdict::Accept
    }
    fn postrouting(&mut self, _: &mut [u8], _: &Meta) -> HookVerdict {
        HookVerdict::Accept
    }
    fn forward(&mut self, _: &mut [u8], _: &Meta) -> HookVerdict {
        HookVerdict::Reject
    }
}

#[test]
fn a_forward_reject_quotes_the_datagram_with_its_ttl_taken_down() {
    let mut r = learnt();
    let mut o = Recorder::default();
    let sent = udp_frame(MAC0, HOST, NET, 64, false, 10);
    let mut f = sent.clone();
    assert_eq!(
        r.input(
            LAN,
            &mut f,
            RxMeta::default(),
            0,
            &mut RejectForward,
            &mut o
        ),
        Disposition::Dropped(DropReason::Filtered)
    );
    assert_eq!(o.sent.len(), 1);
    let (ifc, e, _) = &o.sent[0];
    let ip = &e[14..];
    assert_eq!(
        (*ifc, ip[9], ip[20], ip[21]),
        (LAN, 1, 3, 3),
        "port unreachable"
    );
    let quoted = &ip[28..];
    // Linux's ip_forward takes the TTL down before its forward hook: 63, and the
    // header checksum to match; the rest as it came
    assert_eq!(quoted[8], 63);
    assert!(checksum::header_ok(&quoted[..20]), "quoted header checksum");
    let mut want = sent[14..14 + 28].to_vec();
    want[8] = 63;
    want[10..12].copy_from_slice(&quoted[10..12]);
    assert_eq!(&quoted[..28], &want[..]);
}
