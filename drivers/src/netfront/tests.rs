use super::rx::{RECEIVED_BYTES, RX_BUDGET};
use super::xenbus::{queue_count, FULL_BUFFERS};
use super::*;
use crate::flow::{flow_hash, tx_queue, ETHERTYPE_IPV4, ETHERTYPE_IPV6, IPPROTO_TCP, IPPROTO_UDP};
use crate::netif;
use crate::testplatform::FakeXen;

const BE: &str = "/local/domain/0/backend/vif/5/0";

/// netfront's tests run on the shared fake Xen.
type Fake = FakeXen;

impl FakeXen {
    /// A vif (`device/vif/0`, MAC 00:16:3e:01:02:03) whose backend, in InitWait,
    /// offers scatter-gather and connects when the frontend goes Connected.
    fn vif() -> Self {
        let f = FakeXen::with_device("device/vif/0", BE, "4");
        f.set("device/vif/0/mac", "00:16:3e:01:02:03");
        f.set(&format!("{BE}/feature-sg"), "1");
        f
    }
    /// A backend offering `max` as `multi-queue-max-queues`.
    fn offering_queues(max: &str) -> Self {
        let f = Fake::vif();
        f.xs.borrow_mut()
            .insert(format!("{BE}/multi-queue-max-queues"), max.into());
        f
    }
}

/// Backend side of the single queue's RX ring: delivers a frame into the next
/// posted buffer.
fn deliver(
    f: &Fake,
    rx_rsp_prod: &mut u32,
    id_override: Option<u16>,
    offset: u16,
    data: &[u8],
    status: Option<i16>,
) {
    deliver_on(
        f,
        "device/vif/0",
        rx_rsp_prod,
        id_override,
        offset,
        data,
        status,
    );
}

/// Backend side of the RX ring published in `dir` (`device/vif/0` or
/// `device/vif/0/queue-<k>`): delivers a frame into the next posted buffer.
fn deliver_on(
    f: &Fake,
    dir: &str,
    rx_rsp_prod: &mut u32,
    id_override: Option<u16>,
    offset: u16,
    data: &[u8],
    status: Option<i16>,
) {
    let ring = f.page_of(&format!("{dir}/rx-ring-ref"));
    // the request at the same index names the buffer
    let slot = 64 + (*rx_rsp_prod % 256) as usize * 8;
    let mut req = [0u8; 8];
    ring.read_bytes(slot, &mut req);
    let id = u16::from_le_bytes([req[0], req[1]]);
    let gref = u32::from_le_bytes([req[4], req[5], req[6], req[7]]);
    if usize::from(offset) + data.len() <= 4096 {
        f.writable_page_by_gref(gref)
            .write_bytes(usize::from(offset), data);
    }
    let mut rsp = [0u8; 8];
    rsp[0..2].copy_from_slice(&id_override.unwrap_or(id).to_le_bytes());
    rsp[2..4].copy_from_slice(&offset.to_le_bytes());
    rsp[6..8].copy_from_slice(&status.unwrap_or(data.len() as i16).to_le_bytes());
    ring.write_bytes(slot, &rsp);
    *rx_rsp_prod += 1;
    ring.store_u32(8, *rx_rsp_prod);
}

#[test]
fn handshake_mac_and_rx_pool() {
    let f = Fake::vif();
    let n = Netfront::connect(&f, 0).unwrap();
    assert_eq!(n.mac(), [0x00, 0x16, 0x3e, 1, 2, 3]);
    let xs = f.xs.borrow();
    for k in ["tx-ring-ref", "rx-ring-ref", "event-channel"] {
        assert!(xs.contains_key(&format!("device/vif/0/{k}")), "{k}");
    }
    assert_eq!(xs["device/vif/0/request-rx-copy"], "1");
    assert_eq!(xs["device/vif/0/state"], "4");
    drop(xs);
    let log = f.watch_log.borrow();
    assert!(!log.is_empty(), "the handshake waited on a watch");
    for pair in log.chunks(2) {
        assert_eq!(pair, [format!("+{BE}/state"), format!("-{BE}/state")]);
    }
    drop(log);
    let ring = f.page_of("device/vif/0/rx-ring-ref");
    assert_eq!(ring.load_u32(0), 256, "every RX buffer posted");
    assert!(n.has_sg());
}

#[test]
fn receives_frames_and_reposts_buffers() {
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    let mut prod = 0;
    for i in 0..300u32 {
        let frame = [i as u8; 60];
        deliver(&f, &mut prod, None, 0, &frame, None);
        assert_eq!(n.recv().unwrap(), frame.to_vec());
    }
    assert_eq!(n.stats().rx_packets, 300);
    assert!(n.broken().is_none());
}

#[test]
fn received_frames_are_bounded_in_bytes_and_the_rest_wait_on_the_ring() {
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    let mut prod = 0;
    for i in 0..200u32 {
        deliver(&f, &mut prod, None, 0, &[i as u8; 4000], None);
    }
    assert_eq!(n.recv().unwrap(), [0u8; 4000].to_vec());
    let held = n.received.len() + 1;
    assert!(held < 200, "{held} frames copied out at once");
    assert!(n.received_bytes + 4000 <= RECEIVED_BYTES + RX_BUDGET * 4096);
    // Nothing is lost: the rest come once the first are taken.
    let mut got = 1;
    while let Some(fr) = n.recv() {
        assert_eq!(fr, [got as u8; 4000].to_vec());
        got += 1;
    }
    assert_eq!(got, 200);
    assert_eq!((n.stats().rx_dropped, n.received_bytes), (0, 0));
}

#[test]
fn hostile_rx_responses_break_the_vif() {
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    let mut prod = 0;
    deliver(&f, &mut prod, None, 4000, &[1; 200], None); // data beyond the page
    assert!(n.recv().is_none());
    assert!(n.broken().unwrap().contains("beyond"), "{:?}", n.broken());

    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    let mut prod = 0;
    deliver(&f, &mut prod, Some(999), 0, &[1; 60], None); // unknown buffer
    assert!(n.recv().is_none());
    assert!(n.broken().unwrap().contains("where buffer 0 was posted"));
    assert!(matches!(n.send(&[0; 60]), Err(NetError::Broken(_))));
}

#[test]
fn a_response_naming_another_posted_buffer_breaks_the_vif() {
    // The data goes into the buffer posted at ring position 0 (id 0), but the
    // response names buffer 1, also posted (at position 1): taken by id, buffer
    // 1 would be read (stale data), posted again while still posted, and buffer
    // 0 never posted again.
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    let mut prod = 0;
    deliver(&f, &mut prod, Some(1), 0, &[5; 60], None);
    assert_eq!(n.recv(), None, "nothing delivered from the wrong buffer");
    let why = n.broken().expect("the vif is broken");
    assert!(why.contains("rx response id 1 at ring position 0"), "{why}");
    let ring = f.page_of("device/vif/0/rx-ring-ref");
    assert_eq!(ring.load_u32(0), 256, "no buffer posted a second time");
}

#[test]
fn csum_blank_flag_reaches_the_caller() {
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    assert!(
        !f.xs
            .borrow()
            .contains_key("device/vif/0/feature-no-csum-offload"),
        "receive checksum offload stays on"
    );
    let mut prod = 0;
    deliver(&f, &mut prod, None, 0, &[7; 60], None);
    assert_eq!(
        n.recv_flagged(),
        Some((alloc::vec![7; 60], RxChecksum::Unknown))
    );
    // the same with NETRXF_csum_blank | NETRXF_data_validated in the response (a
    // packet from dom0's stack), then with NETRXF_data_validated alone
    let ring = f.page_of("device/vif/0/rx-ring-ref");
    for (flags, want) in [
        (
            netif::NETRXF_CSUM_BLANK | netif::NETRXF_DATA_VALIDATED,
            RxChecksum::Blank,
        ),
        (netif::NETRXF_DATA_VALIDATED, RxChecksum::Validated),
    ] {
        deliver(&f, &mut prod, None, 0, &[8; 60], None);
        let slot = 64 + ((prod - 1) % 256) as usize * 8;
        ring.write_bytes(slot + 4, &flags.to_le_bytes());
        assert_eq!(n.recv_flagged(), Some((alloc::vec![8; 60], want)));
    }
}

#[test]
fn backend_errors_are_counted_not_fatal() {
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    let mut prod = 0;
    deliver(&f, &mut prod, None, 0, &[], Some(netif::RSP_ERROR));
    assert!(n.recv().is_none());
    assert_eq!(n.stats().rx_errors, 1);
    assert!(n.broken().is_none());
}

/// Backend side: a data slot of `data` with `flags` in the buffer posted at the
/// next RX ring position of `device/vif/0`.
fn data_slot(f: &Fake, prod: &mut u32, data: &[u8], flags: u16) {
    let ring = f.page_of("device/vif/0/rx-ring-ref");
    let slot = 64 + (*prod % 256) as usize * 8;
    let mut req = [0u8; 8];
    ring.read_bytes(slot, &mut req);
    let gref = u32::from_le_bytes([req[4], req[5], req[6], req[7]]);
    f.writable_page_by_gref(gref).write_bytes(0, data);
    let mut rsp = [0u8; 8];
    rsp[0..2].copy_from_slice(&req[0..2]);
    rsp[4..6].copy_from_slice(&flags.to_le_bytes());
    rsp[6..8].copy_from_slice(&(data.len() as i16).to_le_bytes());
    ring.write_bytes(slot, &rsp);
    *prod += 1;
    ring.store_u32(8, *prod);
}

/// Backend side: an extra-info slot (`struct netif_extra_info`) written over
/// the next RX response.
fn extra_slot(f: &Fake, prod: &mut u32, kind: u8, more: bool, gso_size: u16, gso_type: u8) {
    let ring = f.page_of("device/vif/0/rx-ring-ref");
    let slot = 64 + (*prod % 256) as usize * 8;
    let mut e = [0u8; 8];
    e[0] = kind;
    e[1] = u8::from(more);
    e[2..4].copy_from_slice(&gso_size.to_le_bytes());
    e[4] = gso_type;
    ring.write_bytes(slot, &e);
    *prod += 1;
    ring.store_u32(8, *prod);
}

/// A 9000-byte packet as netback sends a GSO packet: first data slot, the GSO
/// extra (plus `extra` more extras), the rest of the data.
fn gso_packet(f: &Fake, prod: &mut u32, payload: &[u8], extra: Option<(u8, u16, u8)>) {
    let x = netif::NETRXF_EXTRA_INFO | netif::NETRXF_MORE_DATA | netif::NETRXF_CSUM_BLANK;
    data_slot(f, prod, &payload[..4096], x);
    extra_slot(
        f,
        prod,
        netif::EXTRA_TYPE_GSO,
        extra.is_some(),
        1448,
        netif::GSO_TYPE_TCPV4,
    );
    if let Some((kind, size, ty)) = extra {
        extra_slot(f, prod, kind, false, size, ty);
    }
    data_slot(f, prod, &payload[4096..8192], netif::NETRXF_MORE_DATA);
    data_slot(f, prod, &payload[8192..], 0);
}

#[test]
fn a_small_packet_flagged_gso_gives_back_the_room_taken_for_64k() {
    let f = Fake::vif();
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    let mut prod = 0;
    for _ in 0..20 {
        let x = netif::NETRXF_EXTRA_INFO | netif::NETRXF_MORE_DATA;
        data_slot(&f, &mut prod, &[1; 100], x);
        extra_slot(&f, &mut prod, netif::EXTRA_TYPE_GSO, false, 1448, 1);
        data_slot(&f, &mut prod, &[2; 100], 0);
    }
    let mut got = 0;
    while let Some(frame) = n.recv() {
        assert_eq!(frame.len(), 200);
        assert!(frame.capacity() <= 400, "{} held", frame.capacity());
        got += 1;
    }
    assert_eq!((got, n.received_bytes), (20, 0));
}

#[test]
fn gso_packets_arrive_whole_and_their_buffers_return() {
    let f = Fake::vif();
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    // without feature-ipv6-csum-offload Linux's netback sends no TCPv6 GSO
    for k in ["gso-tcpv4", "gso-tcpv6", "ipv6-csum-offload"] {
        let key = format!("device/vif/0/feature-{k}");
        assert_eq!(f.key(&key).as_deref(), Some("1"), "{key}");
    }
    let payload: Vec<u8> = (0..9000u32).map(|i| (i % 253) as u8).collect();
    let mut prod = 0;
    // more packets than the ring has slots: every buffer, the extra slots'
    // included, must come back
    for round in 0..100 {
        gso_packet(&f, &mut prod, &payload, None);
        let (frame, csum, gso) = n.recv_meta().unwrap();
        assert!(frame == payload, "round {round}: packet reassembled");
        assert!(
            frame.capacity() <= 8 * frame.len(),
            "a frame holds at most 8 times its length: {} for {}",
            frame.capacity(),
            frame.len()
        );
        assert_eq!(csum, RxChecksum::Blank);
        assert_eq!(gso, Some(1448), "the GSO extra's segment size is kept");
        data_slot(&f, &mut prod, &[round as u8; 60], 0);
        assert_eq!(
            n.recv_meta().unwrap(),
            (alloc::vec![round as u8; 60], RxChecksum::Unknown, None)
        );
    }
    assert!(n.broken().is_none(), "{:?}", n.broken());
    let st = n.stats();
    assert_eq!((st.rx_packets, st.rx_gso, st.rx_errors), (200, 100, 0));
    let ring = f.page_of("device/vif/0/rx-ring-ref");
    assert_eq!(
        ring.load_u32(0),
        prod + 256,
        "every slot's buffer posted again"
    );
}

#[test]
fn an_unusable_extra_drops_its_packet_not_the_vif() {
    let f = Fake::vif();
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    let payload = alloc::vec![7u8; 9000];
    let mut prod = 0;
    // a hash extra (never asked for) behind the GSO one; then a GSO extra of an
    // unknown type; then one with segment size 0
    gso_packet(
        &f,
        &mut prod,
        &payload,
        Some((netif::EXTRA_TYPE_GSO + 3, 0, 0)),
    );
    assert!(n.recv().is_none());
    let x = netif::NETRXF_EXTRA_INFO;
    data_slot(&f, &mut prod, &[1; 60], x);
    extra_slot(&f, &mut prod, netif::EXTRA_TYPE_GSO, false, 1448, 9);
    data_slot(&f, &mut prod, &[2; 60], x);
    extra_slot(
        &f,
        &mut prod,
        netif::EXTRA_TYPE_GSO,
        false,
        0,
        netif::GSO_TYPE_TCPV6,
    );
    assert!(n.recv().is_none());
    assert_eq!(n.stats().rx_errors, 3);
    assert!(n.broken().is_none());
    // the ring is still in step: the next packets arrive
    gso_packet(&f, &mut prod, &payload, None);
    assert_eq!(n.recv().unwrap().len(), 9000);
    data_slot(&f, &mut prod, &[3; 60], 0);
    assert_eq!(n.recv().unwrap(), alloc::vec![3u8; 60]);
}

#[test]
fn oversized_packet_is_dropped_and_the_ring_stays_in_step() {
    let f = Fake::vif();
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    let mut prod = 0;
    // 17 full pages: more than a 64 KiB IP packet can be
    for _ in 0..16 {
        data_slot(&f, &mut prod, &[9; 4096], netif::NETRXF_MORE_DATA);
    }
    data_slot(&f, &mut prod, &[9; 4096], 0);
    assert!(n.recv().is_none());
    assert_eq!(n.stats().rx_dropped, 1);
    data_slot(&f, &mut prod, &[4; 60], 0);
    assert_eq!(n.recv().unwrap(), alloc::vec![4u8; 60]);
    assert!(n.broken().is_none());
}

#[test]
fn extra_info_where_it_cannot_be_breaks_the_vif() {
    // without scatter-gather no GSO is asked for: extra info is a protocol error
    let f = Fake::vif();
    f.xs.borrow_mut().remove(&format!("{BE}/feature-sg"));
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    assert_eq!(
        f.key("device/vif/0/feature-gso-tcpv4").as_deref(),
        Some("0")
    );
    let mut prod = 0;
    data_slot(&f, &mut prod, &[1; 60], netif::NETRXF_EXTRA_INFO);
    assert!(n.recv().is_none());
    assert!(
        n.broken().unwrap().contains("not negotiated"),
        "{:?}",
        n.broken()
    );

    // the extra-info flag on a packet's second data slot
    let f = Fake::vif();
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    let mut prod = 0;
    data_slot(&f, &mut prod, &[1; 4096], netif::NETRXF_MORE_DATA);
    data_slot(&f, &mut prod, &[1; 60], netif::NETRXF_EXTRA_INFO);
    assert!(n.recv().is_none());
    assert!(
        n.broken().unwrap().contains("after the first slot"),
        "{:?}",
        n.broken()
    );
}

#[test]
fn mtu_comes_from_the_backend_within_bounds() {
    assert_eq!(mtu_from_backend(None, true), 1500);
    assert_eq!(mtu_from_backend(Some("9000"), true), 9000);
    assert_eq!(mtu_from_backend(Some(" 9000\n"), true), 9000);
    assert_eq!(mtu_from_backend(Some("68"), true), 68);
    assert_eq!(mtu_from_backend(Some("65521"), true), 65521);
    for bad in ["", "jumbo", "-1", "67", "65522", "99999999999999999999"] {
        assert_eq!(mtu_from_backend(Some(bad), true), 1500, "{bad:?}");
    }
    // without scatter-gather a frame must fit one page: kept at 1500
    assert_eq!(mtu_from_backend(Some("9000"), false), 1500);
    assert_eq!(mtu_from_backend(Some("1280"), false), 1280);
}

#[test]
fn jumbo_mtu_from_xenstore_sets_frame_size_and_slots_needed() {
    let f = Fake::vif();
    f.xs.borrow_mut().insert(format!("{BE}/mtu"), "9000".into());
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    assert_eq!((n.mtu(), n.max_frame()), (9000, 9014));
    // a 9014-byte frame takes 3 slots: with 2 free, no frame may be promised
    for _ in 0..(n.tx_free_slots() - 2) {
        n.send(&[1; 60]).unwrap();
    }
    assert_eq!(n.tx_free_slots(), 2);
    assert!(!n.can_send(), "2 slots cannot carry a 9014-byte frame");

    let f = Fake::vif();
    let n = Netfront::connect_with(&f, 0, 1).unwrap();
    assert_eq!((n.mtu(), n.max_frame()), (1500, 1514), "no mtu key");
    let f = Fake::vif();
    f.xs.borrow_mut().remove(&format!("{BE}/feature-sg"));
    f.xs.borrow_mut().insert(format!("{BE}/mtu"), "9000".into());
    let n = Netfront::connect_with(&f, 0, 1).unwrap();
    assert_eq!(n.mtu(), 1500, "no scatter-gather: one page per frame");
}

#[test]
fn transmits_single_and_multi_slot_frames() {
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    let grants_before = f.grants.borrow().len();
    n.send(&[0xab; 60]).unwrap();
    n.send(&[0xcd; 9000]).unwrap(); // 3 slots with scatter-gather
    let ring = f.page_of("device/vif/0/tx-ring-ref");
    assert_eq!(ring.load_u32(0), 4);
    let mut e = [0u8; 12];
    ring.read_bytes(64 + 12, &mut e);
    assert_eq!(
        u16::from_le_bytes([e[6], e[7]]) & netif::NETTXF_MORE_DATA,
        netif::NETTXF_MORE_DATA
    );
    assert_eq!(u16::from_le_bytes([e[10], e[11]]), 9000);
    // backend answers all four
    for i in 0..4u32 {
        ring.read_bytes(64 + i as usize * 12, &mut e);
        let id = [e[8], e[9]];
        ring.write_bytes(64 + i as usize * 12, &[id[0], id[1], 0, 0]);
    }
    ring.store_u32(8, 4);
    n.reap_tx();
    assert_eq!(n.stats().tx_packets, 2);
    assert_eq!(n.stats().tx_bytes, 9060);
    assert_eq!(
        f.grants.borrow().len(),
        grants_before,
        "TX pages stay granted, no grant per packet"
    );
    // a response for a slot not in flight breaks the vif
    ring.write_bytes(64 + 4 * 12, &[0, 0, 0, 0]);
    ring.store_u32(8, 5);
    n.reap_tx();
    assert!(n.broken().is_some());
}

#[test]
fn tx_slots_are_reused_after_responses() {
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    let ring = f.page_of("device/vif/0/tx-ring-ref");
    for _ in 0..256 {
        n.send(&[1; 100]).unwrap();
    }
    assert_eq!(n.send(&[1; 100]), Err(NetError::Busy), "ring full");
    let mut e = [0u8; 12];
    for i in 0..256usize {
        ring.read_bytes(64 + i * 12, &mut e);
        ring.write_bytes(64 + i * 12, &[e[8], e[9], 0, 0]);
    }
    ring.store_u32(8, 256);
    n.send(&[2; 100]).unwrap();
    assert_eq!(n.stats().tx_packets, 256);
    // the new request names a page holding the new packet
    ring.read_bytes(64, &mut e);
    let gref = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
    let mut b = [0u8; 100];
    f.page_by_gref(gref).read_bytes(0, &mut b);
    assert_eq!(b, [2; 100]);
}

#[test]
fn gso_packet_carries_an_extra_info_slot() {
    let v4 = tcp4(40000, 80, 0, 9000 - 54);
    let v6 = ipv6(
        [1; 16],
        [2; 16],
        IPPROTO_TCP,
        64,
        &tcp(40000, 80, 0, 0x18, 9000 - 74),
    );
    let mut not_ip = v4.clone();
    not_ip[12..14].copy_from_slice(&[0x08, 0x06]);
    // (frame, the features it needs, the extra's gso.type)
    let ipv6_csum = "feature-ipv6-csum-offload";
    let v4_needs = ["feature-gso-tcpv4"];
    let v6_needs = ["feature-gso-tcpv6", ipv6_csum];
    for (frame, needs, kind) in [(&v4, &v4_needs[..], 1u8), (&v6, &v6_needs[..], 2)] {
        // every feature but one: not sent
        for missing in needs {
            let f = Fake::vif();
            for k in ["feature-gso-tcpv4", "feature-gso-tcpv6", ipv6_csum] {
                if k != *missing {
                    f.xs.borrow_mut().insert(format!("{BE}/{k}"), "1".into());
                }
            }
            let mut n = Netfront::connect(&f, 0).unwrap();
            assert_eq!(
                n.send_gso(frame, 1448),
                Err(NetError::BadFrame),
                "{missing} not offered by this backend"
            );
        }
        let f = Fake::vif();
        for k in needs {
            f.xs.borrow_mut().insert(format!("{BE}/{k}"), "1".into());
        }
        let mut n = Netfront::connect(&f, 0).unwrap();
        assert_eq!(
            (n.has_gso_tcpv4(), n.has_gso_tcpv6()),
            (kind == 1, kind == 2)
        );
        assert_eq!(n.send_gso(&not_ip, 1448), Err(NetError::BadFrame), "ARP");
        sends_one_gso_packet(&f, &mut n, frame, kind);
    }
}

/// Sends `frame` (9,000 bytes) as GSO and checks its four slots and responses.
fn sends_one_gso_packet(f: &Fake, n: &mut Netfront<&Fake>, frame: &[u8], kind: u8) {
    let free = n.tx_free_slots();
    n.send_gso(frame, 1448).unwrap();
    assert_eq!(
        n.tx_free_slots(),
        free - 4,
        "3 data slots + 1 extra-info slot"
    );
    let ring = f.page_of("device/vif/0/tx-ring-ref");
    assert_eq!(ring.load_u32(0), 4);
    let mut e = [0u8; 12];
    ring.read_bytes(64, &mut e);
    let flags = u16::from_le_bytes([e[6], e[7]]);
    assert_eq!(
        flags,
        netif::NETTXF_EXTRA_INFO
            | netif::NETTXF_CSUM_BLANK
            | netif::NETTXF_DATA_VALIDATED
            | netif::NETTXF_MORE_DATA
    );
    assert_eq!(u16::from_le_bytes([e[10], e[11]]), 9000);
    // netif_extra_info: type GSO (1), flags 0, gso.size, gso.type TCPv4 (1)/v6 (2)
    ring.read_bytes(64 + 12, &mut e);
    assert_eq!(&e[..6], &[1, 0, 0xa8, 0x05, kind, 0]);
    // responses: the first data slot, NULL for the extra slot, the other two
    let mut d = [0u8; 12];
    let mut ids = Vec::new();
    for i in [0usize, 2, 3] {
        ring.read_bytes(64 + i * 12, &mut d);
        ids.push([d[8], d[9]]);
    }
    ring.write_bytes(64, &[ids[0][0], ids[0][1], 0, 0]);
    ring.write_bytes(64 + 12, &[0xff, 0xff, 1, 0]); // RSP_NULL, id not meaningful
    ring.write_bytes(64 + 24, &[ids[1][0], ids[1][1], 0, 0]);
    ring.write_bytes(64 + 36, &[ids[2][0], ids[2][1], 0, 0]);
    ring.store_u32(8, 4);
    n.reap_tx();
    assert!(n.broken().is_none(), "{:?}", n.broken());
    assert_eq!(n.stats().tx_packets, 1);
    assert_eq!(n.stats().tx_bytes, 9000);
    assert_eq!(n.tx_free_slots(), free);
}

#[test]
fn csum_blank_send_flags_the_slot_and_plain_send_does_not() {
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    n.send(&[1; 60]).unwrap();
    n.send_csum_blank(&[2; 60]).unwrap();
    let ring = f.page_of("device/vif/0/tx-ring-ref");
    assert_eq!(ring.load_u32(0), 2);
    let mut e = [0u8; 12];
    ring.read_bytes(64, &mut e);
    assert_eq!(u16::from_le_bytes([e[6], e[7]]), 0, "plain: no flags");
    ring.read_bytes(64 + 12, &mut e);
    assert_eq!(
        u16::from_le_bytes([e[6], e[7]]),
        netif::NETTXF_CSUM_BLANK | netif::NETTXF_DATA_VALIDATED
    );
}

#[test]
fn release_ends_the_buffer_grants() {
    let f = Fake::vif();
    let before = f.grants.borrow().len();
    let n = Netfront::connect(&f, 0).unwrap();
    assert_eq!(
        f.grants.borrow().len(),
        before + 2 + 512,
        "rings + 256 RX + 256 TX"
    );
    assert_eq!(n.release(), (512, 2));
    assert_eq!(f.grants.borrow().len(), before, "ring grants ended too");
    assert_eq!(f.pages_freed.get(), 514, "ring pages freed too");
}

/// The handshake of `r` failed with an error naming `word`.
fn handshake_fails<T>(r: Result<T, NetError>, word: &str) {
    let e = r.err().expect("the handshake fails");
    assert!(
        matches!(&e, NetError::Handshake(w) if w.contains(word)),
        "{e:?}"
    );
}

/// Every grant ended and every page allocated given back.
fn assert_nothing_kept(f: &Fake) {
    assert!(f.grants.borrow().is_empty(), "every grant ended");
    assert_eq!(f.pages_freed.get(), f.pages_allocated.get());
}

#[test]
fn a_handshake_that_times_out_gives_everything_back_and_can_be_retried() {
    let f = Fake::offering_queues("2");
    f.backend_stalls.set(true);
    handshake_fails(Netfront::connect_with(&f, 0, 2), "timed out");
    assert!(f.grants.borrow().is_empty(), "every grant ended");
    assert_eq!(
        f.pages_freed.get(),
        f.pages.borrow().len(),
        "every page freed"
    );
    assert_eq!(f.pages_freed.get(), 2 * 514);
    assert_eq!(f.closed.borrow().len(), 2, "both ports closed");
    assert_eq!(
        f.key("device/vif/0/state").as_deref(),
        Some("1"),
        "back to Initialising, so the vif is connected again later"
    );
    // and it is: the backend now answers
    f.backend_stalls.set(false);
    f.xs.borrow_mut().insert(format!("{BE}/state"), "2".into());
    let n = Netfront::connect_with(&f, 0, 2).unwrap();
    assert_eq!(n.queues(), 2);
}

#[test]
fn a_backend_that_took_the_rings_and_closed_gets_everything_back() {
    let f = Fake::vif();
    f.backend_fails.set(true);
    f.backend_follows_close.set(true);
    handshake_fails(Netfront::connect(&f, 0), "backend closed");
    assert!(f.grants.borrow().is_empty(), "every grant ended");
    assert_eq!(f.pages_freed.get(), 514, "every page freed");
    assert_eq!(f.closed.borrow().len(), 1, "the port closed");
    assert_eq!(f.key("device/vif/0/state").as_deref(), Some("1"));
}

#[test]
fn a_backend_that_took_the_rings_and_does_not_close_keeps_every_grant() {
    let f = Fake::vif();
    f.backend_fails.set(true);
    let e = Netfront::connect(&f, 0).err().expect("backend closed");
    assert!(matches!(&e, NetError::Handshake(_)), "{e:?}");
    assert_eq!(
        f.grants.borrow().len(),
        2 + 2 * FULL_BUFFERS,
        "no grant ended: netback may still copy into the RX buffers"
    );
    assert_eq!(f.pages_freed.get(), 0, "no page freed");
    assert_eq!(f.closed.borrow().len(), 1, "the port closed");
    assert_eq!(
        f.key("device/vif/0/state").as_deref(),
        Some("6"),
        "the frontend told the backend to let go"
    );
}

#[test]
fn a_setup_that_runs_out_of_grants_gives_everything_back() {
    let f = Fake::offering_queues("2");
    // not enough for the first queue even with the fewest buffers (2 + 64 + 64)
    f.grant_limit.set(Some(100));
    handshake_fails(Netfront::connect_with(&f, 0, 2), "grant");
    assert!(f.grants.borrow().is_empty(), "every grant ended");
    assert_eq!(
        f.pages_freed.get(),
        f.pages.borrow().len(),
        "every page freed"
    );
    assert!(f.closed.borrow().is_empty(), "no port was opened");
}

#[test]
fn a_small_domain_gets_a_queue_with_fewer_buffers() {
    // 300 grants: not a whole queue (514), but 2 rings and 128 + 128 buffers
    let f = Fake::offering_queues("2");
    f.grant_limit.set(Some(300));
    let mut n = Netfront::connect_with(&f, 0, 2).expect("a smaller queue");
    assert_eq!(n.queues(), 1);
    assert_eq!(f.grants.borrow().len(), 2 + 128 + 128);
    assert_eq!(f.key(MQ_NUM), None);
    assert!(f.closed.borrow().is_empty());
    // 128 TX buffers: the 129th packet waits for a response
    let ring = f.page_of("device/vif/0/tx-ring-ref");
    for _ in 0..128 {
        n.send(&[1; 100]).unwrap();
    }
    assert_eq!(
        n.send(&[1; 100]),
        Err(NetError::Busy),
        "128 buffers in flight"
    );
    let mut e = [0u8; 12];
    for i in 0..128usize {
        ring.read_bytes(64 + i * 12, &mut e);
        ring.write_bytes(64 + i * 12, &[e[8], e[9], 0, 0]);
    }
    ring.store_u32(8, 128);
    n.send(&[2; 100]).unwrap();
    // 128 RX buffers posted, and reposted as frames arrive
    let rx = f.page_of("device/vif/0/rx-ring-ref");
    assert_eq!(rx.load_u32(0), 128, "128 RX buffers posted");
    let mut prod = 0;
    for i in 0..300u32 {
        let frame = [i as u8; 60];
        deliver(&f, &mut prod, None, 0, &frame, None);
        assert_eq!(n.recv().unwrap(), frame.to_vec());
    }
    assert!(n.broken().is_none());
}

#[test]
fn grants_for_one_queue_only_make_a_one_queue_vif() {
    let f = Fake::offering_queues("2");
    // enough for the first queue (514) and part of the second
    f.grant_limit.set(Some(514 + 100));
    let mut n = Netfront::connect_with(&f, 0, 2).expect("one queue");
    assert_eq!(n.queues(), 1);
    // the second queue's share was given back, and the vif is set up as a
    // single-queue one (keys at the top)
    assert_eq!(f.grants.borrow().len(), 514);
    // (100 granted, and the one whose grant failed; its port was never opened)
    assert_eq!(f.pages_freed.get(), 101);
    assert!(f.closed.borrow().is_empty());
    assert_eq!(f.key(MQ_NUM), None);
    assert!(f.key("device/vif/0/tx-ring-ref").is_some());
    assert_eq!(f.key("device/vif/0/queue-0/tx-ring-ref"), None);
    assert!(n.send(&[0u8; 60]).is_ok(), "and it sends");
}

#[test]
fn a_retry_with_fewer_queues_leaves_no_stale_multi_queue_keys() {
    let f = Fake::offering_queues("2");
    // what an earlier two-queue attempt published before it failed
    for (k, v) in [
        (MQ_NUM, "2"),
        ("device/vif/0/queue-0/tx-ring-ref", "8"),
        ("device/vif/0/queue-0/event-channel", "9"),
        ("device/vif/0/queue-1/tx-ring-ref", "10"),
        ("device/vif/0/queue-1/event-channel", "11"),
    ] {
        f.xs.borrow_mut().insert(k.into(), v.into());
    }
    f.grant_limit.set(Some(514 + 100));
    let n = Netfront::connect_with(&f, 0, 2).expect("one queue");
    assert_eq!(n.queues(), 1);
    assert_eq!(f.key(MQ_NUM), None);
    assert!(f.key("device/vif/0/tx-ring-ref").is_some());
    let stale = f.keys_under("device/vif/0/queue-");
    assert!(stale.is_empty(), "stale queue keys: {stale:?}");
}

#[test]
fn a_multi_queue_retry_removes_the_single_queue_keys() {
    let f = Fake::offering_queues("2");
    for k in ["tx-ring-ref", "rx-ring-ref", "event-channel"] {
        f.xs.borrow_mut()
            .insert(format!("device/vif/0/{k}"), "7".into());
    }
    let n = Netfront::connect_with(&f, 0, 2).expect("two queues");
    assert_eq!(n.queues(), 2);
    assert_eq!(f.key(MQ_NUM).as_deref(), Some("2"));
    assert_eq!(f.key("device/vif/0/tx-ring-ref"), None);
    assert_eq!(f.key("device/vif/0/event-channel"), None);
    assert!(f.key("device/vif/0/queue-1/event-channel").is_some());
}

#[test]
fn a_backend_that_did_not_close_keeps_every_grant() {
    let f = Fake::vif();
    let n = Netfront::connect(&f, 0).unwrap();
    let grants = f.grants.borrow().len();
    assert_eq!(n.release_after(false), (0, 0));
    assert_eq!(f.grants.borrow().len(), grants, "no grant ended");
    assert_eq!(f.pages_freed.get(), 0, "no page freed");
    assert_eq!(f.closed.borrow().len(), 1, "the port closed");
}

#[test]
fn release_keeps_a_page_the_backend_still_maps() {
    let f = Fake::vif();
    let n = Netfront::connect(&f, 0).unwrap();
    let ring = f.page_of("device/vif/0/rx-ring-ref");
    let mut req = [0u8; 8];
    ring.read_bytes(64, &mut req);
    let gref = u32::from_le_bytes([req[4], req[5], req[6], req[7]]);
    f.mapped.borrow_mut().insert(gref);
    assert_eq!(n.release(), (511, 2), "the mapped page is not freed");
    assert_eq!(f.pages_freed.get(), 513);
    assert!(f.grants.borrow().contains_key(&gref), "its grant stays");
}

/// An Ethernet frame holding an IPv4 packet (20-byte header, `frag` = flags and
/// fragment offset, TTL `ttl`) whose payload is `l4`.
fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, frag: u16, ttl: u8, l4: &[u8]) -> Vec<u8> {
    let mut f = alloc::vec![0u8; 14];
    f[0..6].copy_from_slice(&[0x00, 0x16, 0x3e, 9, 9, 9]);
    f[6..12].copy_from_slice(&[0x00, 0x16, 0x3e, 1, 2, 3]);
    f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&(20 + l4.len() as u16).to_be_bytes());
    f.extend_from_slice(&[0x12, 0x34]);
    f.extend_from_slice(&frag.to_be_bytes());
    f.extend_from_slice(&[ttl, proto, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(l4);
    f
}

/// A TCP segment's bytes: ports, then the rest of a 20-byte header (flags
/// `flags`, sequence `seq`), then `payload` bytes.
fn tcp(sport: u16, dport: u16, seq: u32, flags: u8, payload: usize) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    t.resize(20 + payload, seq as u8);
    t
}

/// [`ipv4`] from 10.0.0.2 to 10.0.0.1.
fn ipv4_2_to_1(proto: u8, frag: u16, ttl: u8, l4: &[u8]) -> Vec<u8> {
    ipv4([10, 0, 0, 2], [10, 0, 0, 1], proto, frag, ttl, l4)
}

/// A TCP/IPv4 frame from 10.0.0.2:`sport` to 10.0.0.1:`dport`.
fn tcp4(sport: u16, dport: u16, seq: u32, payload: usize) -> Vec<u8> {
    ipv4_2_to_1(
        IPPROTO_TCP,
        0x4000, // don't fragment
        64,
        &tcp(sport, dport, seq, 0x18, payload),
    )
}

/// An Ethernet frame holding an IPv6 packet (next header `next`, payload `l4`).
fn ipv6(src: [u8; 16], dst: [u8; 16], next: u8, hops: u8, l4: &[u8]) -> Vec<u8> {
    let mut f = alloc::vec![0u8; 14];
    f[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    f.extend_from_slice(&[next, hops]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(l4);
    f
}

#[test]
fn one_flow_hashes_alike_whatever_else_changes() {
    let h = flow_hash(&tcp4(40000, 80, 1, 0)).unwrap();
    // payload, length, sequence number, flags, TTL: none of them count
    assert_eq!(flow_hash(&tcp4(40000, 80, 99_999, 1400)), Some(h));
    let other_flags = ipv4_2_to_1(IPPROTO_TCP, 0, 3, &tcp(40000, 80, 7, 0x11, 5));
    assert_eq!(flow_hash(&other_flags), Some(h));
    // a 64 KiB GSO packet of the flow goes the same way as its small segments
    assert_eq!(flow_hash(&tcp4(40000, 80, 5, 65_000)), Some(h));
    // every field of the flow counts
    assert_ne!(flow_hash(&tcp4(40001, 80, 1, 0)), Some(h), "source port");
    assert_ne!(
        flow_hash(&tcp4(40000, 81, 1, 0)),
        Some(h),
        "destination port"
    );
    let other_host = ipv4(
        [10, 0, 0, 3],
        [10, 0, 0, 1],
        IPPROTO_TCP,
        0x4000,
        64,
        &tcp(40000, 80, 1, 0x18, 0),
    );
    assert_ne!(flow_hash(&other_host), Some(h), "source address");
    let udp = ipv4_2_to_1(IPPROTO_UDP, 0, 64, &tcp(40000, 80, 1, 0, 0)[..8]);
    assert_ne!(flow_hash(&udp), Some(h), "protocol");
    let udp2 = ipv4_2_to_1(IPPROTO_UDP, 0, 64, &tcp(40000, 53, 1, 0, 0)[..8]);
    assert_ne!(flow_hash(&udp2), flow_hash(&udp), "UDP ports count");
}

#[test]
fn pieces_of_a_datagram_and_portless_protocols_hash_by_address() {
    let dgram = tcp(5353, 5353, 0, 0, 3000);
    let first = ipv4_2_to_1(IPPROTO_UDP, 0x2000, 64, &dgram[..1480]);
    let last = ipv4_2_to_1(IPPROTO_UDP, 185, 64, &dgram[1480..]);
    assert_eq!(flow_hash(&first), flow_hash(&last));
    assert!(flow_hash(&first).is_some());
    // ICMP: the bytes after the IP header do not count
    let ping = |id: u8| ipv4_2_to_1(1, 0, 64, &[8, 0, 0, 0, id, 1]);
    assert_eq!(flow_hash(&ping(1)), flow_hash(&ping(2)));
}

#[test]
fn ipv6_flows_hash_by_addresses_and_ports() {
    let a = [0xfd, 0, 0, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    let b = [0xfd, 0, 0, 0x99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    let f =
        |sport, hops, payload| ipv6(a, b, IPPROTO_TCP, hops, &tcp(sport, 443, 1, 0x10, payload));
    let h = flow_hash(&f(50000, 64, 0)).unwrap();
    assert_eq!(flow_hash(&f(50000, 1, 1000)), Some(h));
    assert_ne!(flow_hash(&f(50001, 64, 0)), Some(h));
    assert_ne!(
        flow_hash(&ipv6(b, a, IPPROTO_TCP, 64, &tcp(50000, 443, 1, 0, 0))),
        Some(h)
    );
    // truncated: no IPv6 header, no hash
    assert_eq!(flow_hash(&f(50000, 64, 0)[..50]), None);
}

#[test]
fn frames_without_a_flow_go_to_queue_0() {
    let mut arp = alloc::vec![0u8; 42];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(flow_hash(&arp), None);
    assert_eq!(tx_queue(&arp, 4), 0);
    for short in [&[][..], &[0u8; 13][..], &tcp4(1, 2, 3, 0)[..30]] {
        assert_eq!(flow_hash(short), None);
        assert_eq!(tx_queue(short, 4), 0);
    }
    // an IPv4 header with a bad version or length is not parsed
    let mut bad = tcp4(1, 2, 3, 0);
    bad[14] = 0x44;
    assert_eq!(flow_hash(&bad), None);
    bad[14] = 0x65;
    assert_eq!(flow_hash(&bad), None);
    // with one queue everything goes to queue 0
    assert_eq!(tx_queue(&tcp4(40000, 80, 1, 0), 1), 0);
}

#[test]
fn flows_spread_over_the_queues() {
    for queues in [2usize, 3, 4] {
        let mut used = alloc::vec![0u32; queues];
        for sport in 40000..40064 {
            let q = tx_queue(&tcp4(sport, 80, 1, 0), queues);
            assert!(q < queues);
            used[q] += 1;
        }
        // 64 flows: every queue gets a fair share (at least half the average)
        let fair = 64 / queues as u32 / 2;
        assert!(used.iter().all(|&n| n >= fair), "{queues} queues: {used:?}");
    }
}

const QDIR: [&str; 2] = ["device/vif/0/queue-0", "device/vif/0/queue-1"];
const MQ_NUM: &str = "device/vif/0/multi-queue-num-queues";
const QUEUE_KEYS: [&str; 3] = ["tx-ring-ref", "rx-ring-ref", "event-channel"];

/// Backend side of a TX ring: answers the requests `from..to` with OKAY.
fn answer_tx(f: &Fake, dir: &str, from: u32, to: u32) {
    let ring = f.page_of(&format!("{dir}/tx-ring-ref"));
    let mut e = [0u8; 12];
    for i in from..to {
        let slot = 64 + (i % 256) as usize * 12;
        ring.read_bytes(slot, &mut e);
        ring.write_bytes(slot, &[e[8], e[9], 0, 0]);
    }
    ring.store_u32(8, to);
}

/// The frame bytes at `at` in the page the `i`-th request of a TX ring names.
fn tx_bytes(f: &Fake, dir: &str, i: u32, at: usize, buf: &mut [u8]) {
    let ring = f.page_of(&format!("{dir}/tx-ring-ref"));
    let mut e = [0u8; 12];
    ring.read_bytes(64 + (i % 256) as usize * 12, &mut e);
    let gref = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
    f.page_by_gref(gref).read_bytes(at, buf);
}

fn event_channel(f: &Fake, dir: &str) -> u32 {
    f.key(&format!("{dir}/event-channel"))
        .unwrap()
        .parse()
        .unwrap()
}

/// A source port whose TCP flow to port 80 goes to the other of two queues
/// than source port 40000's.
fn flows_on_both_queues() -> (u16, usize, u16, usize) {
    let qa = tx_queue(&tcp4(40000, 80, 0, 0), 2);
    let b = (40001..40100)
        .find(|&p| tx_queue(&tcp4(p, 80, 0, 0), 2) != qa)
        .expect("some flow goes to the other queue");
    (40000, qa, b, 1 - qa)
}

#[test]
fn multi_queue_handshake_publishes_each_queue_in_its_directory() {
    let f = Fake::offering_queues("4");
    let n = Netfront::connect_with(&f, 0, 2).unwrap();
    assert_eq!(n.queues(), 2);
    assert_eq!(f.key(MQ_NUM).as_deref(), Some("2"));
    for k in QUEUE_KEYS {
        assert_eq!(f.key(&format!("device/vif/0/{k}")), None, "top-level {k}");
        assert_eq!(f.key(&format!("device/vif/0/queue-2/{k}")), None);
    }
    let mut refs = Vec::new();
    let mut ports = Vec::new();
    for dir in QDIR {
        refs.push(f.key(&format!("{dir}/tx-ring-ref")).unwrap());
        refs.push(f.key(&format!("{dir}/rx-ring-ref")).unwrap());
        ports.push(event_channel(&f, dir));
        let rx = f.page_of(&format!("{dir}/rx-ring-ref"));
        assert_eq!(rx.load_u32(0), 256, "{dir}: every RX buffer posted");
    }
    refs.sort();
    refs.dedup();
    assert_eq!(refs.len(), 4, "four rings");
    assert_ne!(ports[0], ports[1], "an event channel per queue");
    // the vif's own keys stay at the top
    assert_eq!(f.key("device/vif/0/request-rx-copy").as_deref(), Some("1"));
    assert_eq!(
        f.key("device/vif/0/feature-rx-notify").as_deref(),
        Some("1")
    );
    assert_eq!(f.key("device/vif/0/feature-sg").as_deref(), Some("1"));
    assert_eq!(f.key("device/vif/0/state").as_deref(), Some("4"));
    assert_eq!(f.key("device/vif/0/queue-0/state"), None);
    let notified = f.notified.borrow();
    assert!(ports.iter().all(|p| notified.contains(p)), "{notified:?}");
    assert_eq!(f.grants.borrow().len(), 2 * (2 + 512));
}

#[test]
fn connect_takes_what_the_backend_offers_up_to_two_queues() {
    for (offer, want) in [("1", 1), ("2", 2), ("3", 2), ("16", 2)] {
        let f = Fake::offering_queues(offer);
        assert_eq!(Netfront::connect(&f, 0).unwrap().queues(), want, "{offer}");
        let num = (want > 1).then(|| format!("{want}"));
        assert_eq!(f.key(MQ_NUM), num, "{offer}");
    }
    // the caller's cap wins over a larger offer
    let f = Fake::offering_queues("8");
    assert_eq!(Netfront::connect_with(&f, 0, 3).unwrap().queues(), 3);
    assert_eq!(f.key(MQ_NUM).as_deref(), Some("3"));
}

#[test]
fn one_queue_keeps_the_keys_at_the_top() {
    // a backend without multi-queue, and one offering it to a frontend asking
    // for a single queue (or none at all)
    for (f, cap) in [
        (Fake::vif(), 4),
        (Fake::offering_queues("4"), 1),
        (Fake::offering_queues("4"), 0),
    ] {
        let n = Netfront::connect_with(&f, 0, cap).unwrap();
        assert_eq!(n.queues(), 1);
        assert_eq!(f.key(MQ_NUM), None, "cap {cap}");
        for k in QUEUE_KEYS {
            assert!(f.key(&format!("device/vif/0/{k}")).is_some(), "{k}");
            assert_eq!(f.key(&format!("device/vif/0/queue-0/{k}")), None);
        }
    }
}

#[test]
fn a_malformed_queue_offer_means_one_queue() {
    for offer in ["x", "0", "", "-2", "2.5", "99999999999999999999999"] {
        let f = Fake::offering_queues(offer);
        let n = Netfront::connect_with(&f, 0, 4).unwrap();
        assert_eq!(n.queues(), 1, "{offer:?}");
        assert_eq!(f.key(MQ_NUM), None, "{offer:?}");
        assert!(f.key("device/vif/0/tx-ring-ref").is_some());
    }
    assert_eq!(queue_count(4, Some(" 3\n")), 3);
    assert_eq!(queue_count(4, None), 1);
    assert_eq!(queue_count(0, Some("4")), 1);
    assert_eq!(queue_count(usize::MAX, Some("2")), 2);
}

#[test]
fn frames_are_received_on_every_queue() {
    let f = Fake::offering_queues("2");
    let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
    let mut prod = [0u32; 2];
    deliver_on(&f, QDIR[1], &mut prod[1], None, 0, &[0x11; 60], None);
    assert_eq!(n.recv(), Some(alloc::vec![0x11; 60]));
    deliver_on(&f, QDIR[0], &mut prod[0], None, 0, &[0x22; 60], None);
    deliver_on(&f, QDIR[1], &mut prod[1], None, 0, &[0x33; 70], None);
    let mut got = Vec::new();
    while let Some(fr) = n.recv() {
        got.push(fr);
    }
    got.sort();
    assert_eq!(got, [alloc::vec![0x22; 60], alloc::vec![0x33; 70]]);
    let qs = n.queue_stats();
    assert_eq!(qs[0].rx_packets, 1);
    assert_eq!(qs[1].rx_packets, 2);
    assert_eq!(n.stats().rx_packets, 3);
    assert_eq!(n.stats().rx_bytes, 190);
    // the buffers go back to the ring they came from, and a backend waiting
    // for requests on queue 1 is woken on queue 1's event channel
    let rx1 = f.page_of(&format!("{}/rx-ring-ref", QDIR[1]));
    assert_eq!(rx1.load_u32(0), 256 + 2, "two buffers reposted on queue 1");
    rx1.store_u32(4, rx1.load_u32(0) + 1); // req_event
    f.notified.borrow_mut().clear();
    deliver_on(&f, QDIR[1], &mut prod[1], None, 0, &[0x44; 60], None);
    assert_eq!(n.recv(), Some(alloc::vec![0x44; 60]));
    assert_eq!(*f.notified.borrow(), [event_channel(&f, QDIR[1])]);
    assert!(n.broken().is_none());
}

#[test]
fn a_busy_queue_does_not_starve_the_other() {
    let f = Fake::offering_queues("2");
    let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
    let mut prod = [0u32; 2];
    for i in 0..200u8 {
        for q in 0..2u8 {
            let mut fr = [0u8; 60];
            fr[0] = q;
            fr[1] = i;
            deliver_on(
                &f,
                QDIR[usize::from(q)],
                &mut prod[usize::from(q)],
                None,
                0,
                &fr,
                None,
            );
        }
    }
    let mut order = Vec::new();
    while let Some(fr) = n.recv() {
        order.push((fr[0], fr[1]));
    }
    assert_eq!(order.len(), 400);
    // in ring order within each queue
    for q in 0..2 {
        let seq: Vec<u8> = order.iter().filter(|o| o.0 == q).map(|o| o.1).collect();
        assert_eq!(seq, (0..200).collect::<Vec<u8>>());
    }
    // and taken in turns of at most 64 frames
    let longest = order
        .chunk_by(|a, b| a.0 == b.0)
        .map(<[_]>::len)
        .max()
        .unwrap();
    assert!(longest <= 64, "a run of {longest} frames from one queue");
}

#[test]
fn each_flow_keeps_to_one_queue_and_flows_spread() {
    let f = Fake::offering_queues("2");
    let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
    let (a, qa, b, qb) = flows_on_both_queues();
    for i in 0..3 {
        n.send(&tcp4(a, 80, i, 10 * i as usize)).unwrap();
    }
    for i in 0..2 {
        n.send(&tcp4(b, 80, i, 100)).unwrap();
    }
    let mut arp = alloc::vec![0u8; 42];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    n.send(&arp).unwrap();
    let sent = |q: usize| f.page_of(&format!("{}/tx-ring-ref", QDIR[q])).load_u32(0);
    let arp_on = |q: usize| u32::from(q == 0);
    assert_eq!(sent(qa), 3 + arp_on(qa), "flow A");
    assert_eq!(sent(qb), 2 + arp_on(qb), "flow B");
    // the requests carry their flow's frames (source port at byte 34)
    let mut port = [0u8; 2];
    for i in 0..3 {
        tx_bytes(&f, QDIR[qa], i, 34, &mut port);
        assert_eq!(u16::from_be_bytes(port), a);
    }
    for i in 0..2 {
        tx_bytes(&f, QDIR[qb], i, 34, &mut port);
        assert_eq!(u16::from_be_bytes(port), b);
    }
    let mut ethertype = [0u8; 2];
    tx_bytes(&f, QDIR[0], sent(0) - 1, 12, &mut ethertype);
    assert_eq!(ethertype, [0x08, 0x06], "ARP on queue 0");
    // answered on both rings: counted per queue
    for (q, dir) in QDIR.iter().enumerate() {
        answer_tx(&f, dir, 0, sent(q));
    }
    n.reap_tx();
    assert!(n.broken().is_none(), "{:?}", n.broken());
    let qs = n.queue_stats();
    assert_eq!(qs[qa].tx_packets, u64::from(3 + arp_on(qa)));
    assert_eq!(qs[qb].tx_packets, u64::from(2 + arp_on(qb)));
    assert_eq!(n.stats().tx_packets, 6);
}

#[test]
fn the_fullest_queue_decides_can_send() {
    let f = Fake::offering_queues("2");
    let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
    let (a, qa, b, qb) = flows_on_both_queues();
    assert_eq!(n.tx_free_slots(), 256);
    for i in 0..256 {
        n.send(&tcp4(a, 80, i, 0)).unwrap();
    }
    assert_eq!(n.send(&tcp4(a, 80, 256, 0)), Err(NetError::Busy));
    assert!(!n.can_send(), "queue {qa} is full");
    assert_eq!(n.tx_free_slots(), 0);
    // a frame of another flow still goes out on its own queue
    n.send(&tcp4(b, 80, 0, 0)).unwrap();
    assert_eq!(
        f.page_of(&format!("{}/tx-ring-ref", QDIR[qb])).load_u32(0),
        1
    );
    answer_tx(&f, QDIR[qa], 0, 256);
    n.reap_tx();
    assert!(n.can_send());
    assert_eq!(n.tx_free_slots(), 255, "queue {qb} has one in flight");
}

#[test]
fn a_bad_response_on_queue_1_breaks_the_whole_vif() {
    // RX: a response naming a buffer never posted
    let f = Fake::offering_queues("2");
    let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
    let mut prod = [0u32; 2];
    deliver_on(&f, QDIR[1], &mut prod[1], Some(999), 0, &[1; 60], None);
    assert!(n.recv().is_none());
    assert!(
        n.broken().unwrap().contains("rx response id 999"),
        "{:?}",
        n.broken()
    );
    deliver_on(&f, QDIR[0], &mut prod[0], None, 0, &[2; 60], None);
    assert!(n.recv().is_none(), "queue 0 is not read any more");
    let (a, _, b, _) = flows_on_both_queues();
    for fr in [tcp4(a, 80, 0, 0), tcp4(b, 80, 0, 0)] {
        assert!(matches!(n.send(&fr), Err(NetError::Broken(_))));
    }
    assert!(!n.can_send());
    assert_eq!(n.tx_free_slots(), 0);
    for q in QDIR {
        let tx = f.page_of(&format!("{q}/tx-ring-ref"));
        assert_eq!(tx.load_u32(0), 0, "{q}: nothing sent");
    }

    // TX: a response on queue 1 for a slot not in flight
    let f = Fake::offering_queues("2");
    let mut n = Netfront::connect_with(&f, 0, 2).unwrap();
    let (a, qa, b, _) = flows_on_both_queues();
    let on_1 = if qa == 1 { a } else { b };
    n.send(&tcp4(on_1, 80, 0, 0)).unwrap();
    let tx1 = f.page_of(&format!("{}/tx-ring-ref", QDIR[1]));
    tx1.write_bytes(64, &[200, 0, 0, 0]);
    tx1.store_u32(8, 1);
    n.reap_tx();
    assert!(
        n.broken().unwrap().contains("not in flight"),
        "{:?}",
        n.broken()
    );
    let on_0 = if qa == 0 { a } else { b };
    assert!(matches!(
        n.send(&tcp4(on_0, 80, 1, 0)),
        Err(NetError::Broken(_))
    ));
    let tx0 = f.page_of(&format!("{}/tx-ring-ref", QDIR[0]));
    assert_eq!(tx0.load_u32(0), 0);
}

#[test]
fn release_frees_every_queue() {
    let f = Fake::offering_queues("4");
    let n = Netfront::connect_with(&f, 0, 3).unwrap();
    assert_eq!(f.grants.borrow().len(), 3 * (2 + 512));
    let mut ports: Vec<u32> = (0..3)
        .map(|k| event_channel(&f, &format!("device/vif/0/queue-{k}")))
        .collect();
    assert_eq!(n.release(), (3 * 512, 3 * 2));
    assert_eq!(f.pages_freed.get(), 3 * 514);
    assert!(f.grants.borrow().is_empty(), "the ring grants ended too");
    let mut closed = f.closed.borrow().clone();
    closed.sort();
    ports.sort();
    assert_eq!(closed, ports, "every queue's event channel closed");
}

#[test]
fn mac_parsing() {
    assert_eq!(
        parse_mac("00:16:3e:aa:bb:cc"),
        Some([0, 0x16, 0x3e, 0xaa, 0xbb, 0xcc])
    );
    assert_eq!(parse_mac("00:16:3e:aa:bb"), None);
    assert_eq!(parse_mac("00:16:3e:aa:bb:cc:dd"), None);
    assert_eq!(parse_mac("zz:16:3e:aa:bb:cc"), None);
}

#[test]
fn a_domain_short_of_memory_gets_a_queue_with_fewer_buffers() {
    // memory for 2 rings and 128 + 128 buffers, not for a whole queue (514 pages)
    let f = Fake::offering_queues("2");
    f.page_limit.set(Some(2 + 128 + 128));
    let n = Netfront::connect_with(&f, 0, 2).expect("a smaller queue");
    assert_eq!(n.queues(), 1);
    assert_eq!(n.rx_buffers(), 128);
    assert_eq!(f.grants.borrow().len(), 2 + 128 + 128);
    // and with memory for no queue at all, nothing is kept
    let g = Fake::vif();
    g.page_limit.set(Some(100));
    handshake_fails(Netfront::connect(&g, 0), "no memory");
    assert_nothing_kept(&g);
    assert_eq!(g.key("device/vif/0/state"), None, "nothing published");
}

#[test]
fn no_event_channel_means_no_vif_and_nothing_kept() {
    let f = Fake::vif();
    f.evtchn_fails.set(true);
    handshake_fails(Netfront::connect(&f, 0), "event channel");
    assert_nothing_kept(&f);
    assert!(f.closed.borrow().is_empty(), "no port was opened");
}

#[test]
fn a_xenstore_write_that_fails_gives_everything_back_and_can_be_retried() {
    let f = Fake::vif();
    f.fail_xs("device/vif/0/feature-sg");
    handshake_fails(Netfront::connect(&f, 0), "feature-sg");
    // the backend never left InitWait: everything went back
    assert_nothing_kept(&f);
    assert_eq!(f.ports_closed(), 1);
    assert_eq!(f.key("device/vif/0/state").as_deref(), Some("1"));
    f.xs_failing.borrow_mut().clear();
    let n = Netfront::connect(&f, 0).expect("the retry connects");
    assert_eq!(n.queues(), 1);
}

#[test]
fn without_watches_the_handshake_polls() {
    let f = Fake::vif();
    f.watch_fails.set(true);
    let n = Netfront::connect(&f, 0).expect("connects by polling");
    assert_eq!(n.queues(), 1);
    assert!(f.watch_log.borrow().is_empty(), "no watch was set");
}

#[test]
fn a_backend_lying_in_its_keys_is_refused_or_bounded() {
    let f = Fake::vif();
    f.set("device/vif/0/backend-id", "70000");
    handshake_fails(Netfront::connect(&f, 0), "backend-id");
    let g = Fake::vif();
    g.set("device/vif/0/mac", "00:16:3e:01:02");
    handshake_fails(Netfront::connect(&g, 0), "malformed mac");
    assert!(
        g.grants.borrow().is_empty(),
        "refused before anything was taken"
    );
    // a backend claiming 1,000 queues gets the caller's cap
    let h = Fake::offering_queues("1000");
    let n = Netfront::connect_with(&h, 0, 2).unwrap();
    assert_eq!(n.queues(), 2);
}

#[test]
fn after_a_restore_the_vif_reconnects_reposts_its_buffers_and_closes_no_port() {
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    let mut prod = 0;
    deliver(&f, &mut prod, None, 0, &[7u8; 60], None);
    // Two sends the old backend never answers; one frame received, not yet taken.
    n.send(&[1u8; 60]).unwrap();
    n.send(&[2u8; 60]).unwrap();
    n.poll_rx();
    let old_rx = f.key("device/vif/0/rx-ring-ref");

    f.restore();
    assert_eq!(n.resume().unwrap(), 2, "the unanswered sends are lost");
    assert!(n.broken().is_none());
    assert_eq!(f.ports_closed(), 0, "no port of the new domain closed");
    assert_eq!(f.key("device/vif/0/state").as_deref(), Some("4"));
    assert_ne!(f.key("device/vif/0/rx-ring-ref"), old_rx);
    let ring = f.page_of("device/vif/0/rx-ring-ref");
    assert_eq!(ring.load_u32(0), 256, "every RX buffer posted again");
    // the frame received before the move is still there
    assert_eq!(n.recv().unwrap(), alloc::vec![7u8; 60]);
    // the new rings work: a frame in, a frame out
    let mut prod = 0;
    deliver(&f, &mut prod, None, 0, &[9u8; 60], None);
    assert_eq!(n.recv().unwrap(), alloc::vec![9u8; 60]);
    n.send(&[3u8; 60]).unwrap();
    let tx = f.page_of("device/vif/0/tx-ring-ref");
    assert_eq!(tx.load_u32(0), 1, "one request on the new TX ring");
    assert_eq!(n.stats().tx_errors, 2);
}

#[test]
fn a_restore_whose_backend_never_comes_breaks_the_vif_without_panicking() {
    let f = Fake::vif();
    let mut n = Netfront::connect(&f, 0).unwrap();
    f.restore();
    f.backend_stalls.set(true);
    assert!(n.resume().is_err());
    assert!(n
        .broken()
        .unwrap()
        .contains("not reconnected after a restore"));
    assert!(n.send(&[1u8; 60]).is_err());
    n.poll_rx();
    n.reap_tx();
    assert_eq!(n.recv(), None);
    assert_eq!(n.tx_free_slots(), 0);
    assert!(!n.can_send());
    let _ = n.release();
}

#[test]
fn a_backend_that_goes_and_comes_back_is_reconnected_with_the_same_mac() {
    let f = Fake::vif();
    f.backend_follows_close.set(true);
    let mut n = Netfront::connect(&f, 0).unwrap();
    // `xl network-detach`: the backend closes, the queues are given back
    let (bufs, rings) = n.detach(true);
    assert_eq!((bufs, rings), (512, 2));
    assert!(n.is_detached());
    assert!(n.send(&[1u8; 60]).is_err());
    assert!(n.broken().unwrap().contains("waiting for it to come back"));
    // another device with another MAC is not this vif
    f.set("device/vif/3/mac", "00:16:3e:99:99:99");
    assert!(n.reattach(3).is_err());
    assert!(n.is_detached());
    // `xl network-attach` with the same MAC: the toolstack writes the device anew
    f.restore();
    f.set("device/vif/0/mac", "00:16:3e:01:02:03");
    n.reattach(0).unwrap();
    assert!(!n.is_detached());
    assert!(n.broken().is_none());
    assert_eq!(f.key("device/vif/0/state").as_deref(), Some("4"));
    let mut prod = 0;
    deliver(&f, &mut prod, None, 0, &[4u8; 60], None);
    assert_eq!(n.recv().unwrap(), alloc::vec![4u8; 60]);
    n.send(&[5u8; 60]).unwrap();
}

mod stats;
