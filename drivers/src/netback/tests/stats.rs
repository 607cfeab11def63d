//! The per-packet counters `ethtool -S` shows of a vif served: events, batches,
//! slots, grant copies and their hypercalls, notifications sent and suppressed,
//! a client short of buffers.

use super::{connected, frame, xen};
use crate::netback::NetbackStats;
use alloc::vec::Vec;

/// The port the backend bound (the fake's first).
const PORT: u32 = 20;

/// Ten packets after one event: one event, one batch of ten packets and slots,
/// the copy ops in one hypercall, one notify (the client's `rsp_event` is 1);
/// two more before the client read its responses: a second batch whose notify
/// is suppressed.
#[test]
fn a_batch_from_the_client_counts_one_event_one_batch_its_slots_and_copies() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    let slots: usize = (0..10u16)
        .map(|i| c.send(&frame(1000 + usize::from(i), i as u8), i * 2))
        .sum();
    x.fire(PORT);
    assert!(!nb.poll());
    let s = nb.stats();
    assert_eq!(s.events, 1);
    assert_eq!((s.rx_polls, s.rx_batches, s.rx_taken), (1, 1, 10));
    assert_eq!(s.rx_slots, slots as u64);
    assert_eq!(s.copy_batches, u64::from(x.copy_calls.get()));
    assert_eq!(s.copy_ops, x.copy_ops.get());
    assert!(s.copy_ops >= 10);
    assert_eq!((s.rx_notify_sent, s.rx_notify_suppressed), (1, 0));
    // nothing for the client: its ring looked at, no batch
    assert_eq!((s.tx_polls, s.tx_batches, s.tx_no_buffers), (1, 0, 0));

    c.send(&frame(60, 1), 40);
    c.send(&frame(60, 2), 41);
    nb.poll();
    let s = nb.stats();
    assert_eq!((s.rx_batches, s.rx_taken), (2, 12));
    assert_eq!((s.rx_notify_sent, s.rx_notify_suppressed), (1, 1));
    assert_eq!(s.notifies, 1);
    assert_eq!(c.tx_responses().len(), 12);
}

/// Frames to a client that posted two buffers for three: a batch of two, one slot
/// each, a stop for want of buffers, one notify.
#[test]
fn frames_to_the_client_count_slots_batches_and_a_stop_for_buffers() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    c.post_rx(2, true);
    for i in 0..3 {
        nb.send(&frame(1514, i)).unwrap();
    }
    nb.poll();
    let s = nb.stats();
    assert_eq!(
        (s.tx_polls, s.tx_batches, s.tx_handed, s.tx_slots),
        (1, 1, 2, 2)
    );
    assert_eq!(s.tx_no_buffers, 1);
    assert_eq!((s.tx_notify_sent, s.tx_notify_suppressed), (1, 0));
    assert_eq!(c.rx_responses().len(), 2);
    c.post_rx(1, true);
    nb.poll();
    let s = nb.stats();
    assert_eq!((s.tx_batches, s.tx_handed, s.tx_packets), (2, 3, 3));
}

/// Events are read from the vif's port while it is connected.
#[test]
fn events_are_the_ports() {
    let x = xen();
    let (nb, _c) = connected(&x);
    x.fire(PORT);
    x.fire(PORT);
    x.fire(PORT + 1);
    assert_eq!(nb.stats().events, 2);
}

/// `ethtool -S` names each counter once.
#[test]
fn entries_name_each_counter_once() {
    let s = NetbackStats {
        copy_ops: 5,
        tx_no_buffers: 2,
        ..NetbackStats::default()
    };
    let e = s.entries();
    assert!(e.contains(&("copy_ops", 5)) && e.contains(&("tx_no_buffers", 2)));
    let mut names: Vec<&str> = e.iter().map(|(k, _)| *k).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), e.len());
}
