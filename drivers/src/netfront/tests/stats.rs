//! The per-packet driver counters (`ethtool -S`): events, batches, slots,
//! notifications sent and suppressed, refills, ring-full stalls.

use super::{answer_tx, deliver, deliver_on, event_channel, Fake, QDIR};
use crate::netfront::{Netfront, NetfrontStats};
use alloc::vec::Vec;

const DIR: &str = "device/vif/0";

/// One event, a batch of five responses: one event, one batch, five slots and
/// packets, the five buffers posted again in one push, whose notify the backend
/// did not ask for (its `req_event` is behind).
#[test]
fn a_batch_of_responses_after_one_event_counts_one_event_one_batch_and_each_packet() {
    let f = Fake::vif();
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    f.notified.borrow_mut().clear(); // the handshake's
    let mut prod = 0;
    for i in 0..5u8 {
        deliver(&f, &mut prod, None, 0, &[i; 60], None);
    }
    f.fire(event_channel(&f, DIR));
    for i in 0..5u8 {
        assert_eq!(n.recv(), Some(alloc::vec![i; 60]));
    }
    assert_eq!(n.recv(), None);
    let s = n.driver_stats();
    assert_eq!(s.events, 1);
    assert_eq!((s.rx_slots, s.rx_packets), (5, 5));
    // the recv that found nothing polled once more, and did not arm again
    assert_eq!((s.rx_polls, s.rx_batches, s.rx_rearms), (2, 1, 1));
    assert_eq!((s.rx_reposted, s.rx_refills), (5, 1));
    assert_eq!((s.rx_notify_sent, s.rx_notify_suppressed), (0, 1));
    assert_eq!(s.rx_budget_stops, 0);
    assert!(
        f.notified.borrow().is_empty(),
        "a suppressed notify sends none"
    );

    // the backend asks to be told of the next buffer: one notify, sent
    let rx = f.page_of(&format!("{DIR}/rx-ring-ref"));
    rx.store_u32(4, rx.load_u32(0) + 1);
    deliver(&f, &mut prod, None, 0, &[9; 60], None);
    f.fire(event_channel(&f, DIR));
    assert_eq!(n.recv(), Some(alloc::vec![9; 60]));
    let s = n.driver_stats();
    assert_eq!((s.events, s.rx_batches, s.rx_refills), (2, 2, 2));
    assert_eq!((s.rx_notify_sent, s.rx_notify_suppressed), (1, 1));
    assert_eq!(f.notified.borrow().len(), 1);
}

/// A drained ring is looked at once per poll: re-armed once, not once per round.
#[test]
fn a_drained_queue_is_polled_and_rearmed_once_per_poll_and_a_full_one_until_drained() {
    let f = Fake::vif();
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    let mut prod = 0;
    for i in 0..3u8 {
        deliver(&f, &mut prod, None, 0, &[i; 60], None);
    }
    n.poll_rx();
    let s = n.driver_stats();
    assert_eq!((s.rx_polls, s.rx_batches, s.rx_rearms), (1, 1, 1));

    // 100 responses: a batch of 64 (the budget), then one of 36 that drains
    for i in 0..100u32 {
        deliver(&f, &mut prod, None, 0, &[i as u8; 60], None);
    }
    n.poll_rx();
    let s = n.driver_stats();
    assert_eq!((s.rx_polls, s.rx_batches, s.rx_rearms), (3, 3, 2));
    assert_eq!((s.rx_budget_stops, s.rx_slots, s.rx_packets), (1, 103, 103));
    assert_eq!((s.rx_refills, s.rx_reposted), (3, 103));
    let got: Vec<_> = core::iter::from_fn(|| n.recv()).collect();
    assert_eq!(got.len(), 103);
}

/// A ring polled empty again and again is armed once (at the first empty look
/// after a response), and a response that comes later is still taken and arms it
/// anew; the `rsp_event` the backend reads is the next response's each time.
#[test]
fn an_empty_ring_polled_again_is_not_armed_again() {
    let f = Fake::vif();
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    let rx = f.page_of(&format!("{DIR}/rx-ring-ref"));
    for _ in 0..10 {
        n.poll_rx();
    }
    let s = n.driver_stats();
    assert_eq!((s.rx_polls, s.rx_batches, s.rx_rearms), (10, 0, 1));
    assert_eq!(rx.load_u32(12), 1, "rsp_event: the first response");
    let mut prod = 0;
    deliver(&f, &mut prod, None, 0, &[5; 60], None);
    for _ in 0..10 {
        n.poll_rx();
    }
    let s = n.driver_stats();
    assert_eq!((s.rx_polls, s.rx_batches, s.rx_rearms), (20, 1, 2));
    assert_eq!(rx.load_u32(12), 2, "rsp_event: the second response");
    assert_eq!(n.recv(), Some(alloc::vec![5; 60]));
    // and so on: each batch taken arms it at the next response
    deliver(&f, &mut prod, None, 0, &[6; 60], None);
    assert_eq!(n.recv(), Some(alloc::vec![6; 60]));
    assert_eq!(rx.load_u32(12), 3);
}

/// Slots per packet (a GSO packet's extra-info slot counts), one notify when the
/// backend waits and none while it works, ring-full stalls, and the reaps.
#[test]
fn tx_counts_slots_notifies_suppressed_ring_full_and_reaps() {
    let f = Fake::vif();
    f.set(&format!("{}/feature-gso-tcpv4", super::BE), "1");
    let mut n = Netfront::connect_with(&f, 0, 1).unwrap();
    let port = event_channel(&f, DIR);
    f.notified.borrow_mut().clear(); // the handshake's
    n.send(&[0xab; 60]).unwrap();
    n.send(&[0xcd; 9000]).unwrap(); // 3 slots
    n.send_gso(&super::tcp4(40000, 80, 0, 5000), 1448).unwrap(); // 2 data + 1 extra
    let s = n.driver_stats();
    assert_eq!((s.tx_packets, s.tx_slots), (3, 7));
    // req_event is 1 (the backend never re-armed): the first push crosses it,
    // the others do not
    assert_eq!((s.tx_notify_sent, s.tx_notify_suppressed), (1, 2));
    assert_eq!(*f.notified.borrow(), [port]);

    // fill the ring: 7 slots in flight of 256, then 60-byte frames until refused
    let mut sent = 0;
    while n.send(&[1; 60]).is_ok() {
        sent += 1;
    }
    assert_eq!(sent, 256 - 7);
    assert_eq!(n.driver_stats().tx_ring_full, 1);
    // the refused send reaped once and found nothing (armed)
    let s = n.driver_stats();
    assert_eq!((s.tx_reaps, s.tx_reap_batches, s.tx_rearms), (1, 0, 1));

    answer_tx(&f, DIR, 0, 256);
    // the GSO packet's extra-info slot (request 5) is answered NETIF_RSP_NULL
    let ring = f.page_of(&format!("{DIR}/tx-ring-ref"));
    ring.write_bytes(64 + 5 * 12 + 2, &crate::netif::RSP_NULL.to_le_bytes());
    f.fire(port);
    n.reap_tx();
    let s = n.driver_stats();
    assert_eq!((s.events, s.tx_reaps, s.tx_reap_batches), (1, 2, 1));
    assert_eq!((s.tx_responses, s.tx_rearms), (256, 2));
    assert_eq!(n.stats().tx_packets, 3 + 249);
    assert!(n.broken().is_none());
    n.send(&[2; 60]).unwrap();
    assert_eq!(n.driver_stats().tx_ring_full, 1);
}

/// Events are the sum over the vif's queues' ports.
#[test]
fn events_are_summed_over_the_queues() {
    let f = Fake::offering_queues("2");
    let n = Netfront::connect_with(&f, 0, 2).unwrap();
    f.fire(event_channel(&f, QDIR[0]));
    f.fire(event_channel(&f, QDIR[1]));
    f.fire(event_channel(&f, QDIR[1]));
    assert_eq!(n.driver_stats().events, 3);
    let mut prod = 0;
    let mut n = n;
    deliver_on(&f, QDIR[1], &mut prod, None, 0, &[7; 60], None);
    assert_eq!(n.recv(), Some(alloc::vec![7; 60]));
    let s = n.driver_stats();
    // queue 1's batch; queue 0 looked at and empty
    assert_eq!((s.rx_polls, s.rx_batches, s.rx_packets), (2, 1, 1));
}

/// `ethtool -S` names: each once, the counters in their fields.
#[test]
fn entries_name_each_counter_once() {
    let s = NetfrontStats {
        events: 1,
        tx_slots: 2,
        rx_notify_suppressed: 3,
        ..NetfrontStats::default()
    };
    let e = s.entries();
    let mut names: Vec<&str> = e.iter().map(|(k, _)| *k).collect();
    assert!(e.contains(&("events", 1)));
    assert!(e.contains(&("tx_slots", 2)));
    assert!(e.contains(&("rx_notify_suppressed", 3)));
    assert_eq!(e.iter().map(|(_, v)| v).sum::<u64>(), 6);
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), e.len());
}
