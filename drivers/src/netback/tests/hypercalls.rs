//! What the data path asks of Xen per wakeup and per packet, counted on the fake:
//! grant-copy hypercalls and their ops, event-channel notifies, grant maps and
//! unmaps, XenStore reads and writes (each a trap to Xen, or a XenStore round trip,
//! on the test bed a costly VM exit each). Small packets both ways, many to a
//! wakeup and one to a wakeup, and a turn as the kernel's data plane runs it
//! (`dev::network::poll_stack`: the vifs serviced, the router, the vifs again).
//!
//! The rules followed, as Linux's xen-netback: all the grant copies of a batch in
//! one `GNTTABOP_copy`, responses pushed with `RING_PUSH_RESPONSES_AND_CHECK_NOTIFY`
//! so an event goes only when the frontend asked for one, and one event a turn for
//! both rings (they share the event channel); no map or unmap, no XenStore on the
//! data path.

use super::{connected, frame, slot, xen};
use crate::netback::RX_BUDGET;
use crate::netif;
use crate::testplatform::FakeXen;

/// What the backend asked of the fake Xen so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Calls {
    copies: u32,
    copy_ops: u64,
    notifies: usize,
    maps: u32,
    unmaps: u32,
    xs_reads: u32,
    xs_writes: u32,
}

impl Calls {
    fn now(x: &FakeXen) -> Self {
        Calls {
            copies: x.copy_calls.get(),
            copy_ops: x.copy_ops.get(),
            notifies: x.notified.borrow().len(),
            maps: x.next_handle.get(),
            unmaps: x.unmaps.get(),
            xs_reads: x.reads.get(),
            xs_writes: x.xs_writes.get(),
        }
    }

    /// The calls made since `self` was taken.
    fn since(self, x: &FakeXen) -> Self {
        let n = Calls::now(x);
        Calls {
            copies: n.copies - self.copies,
            copy_ops: n.copy_ops - self.copy_ops,
            notifies: n.notifies - self.notifies,
            maps: n.maps - self.maps,
            unmaps: n.unmaps - self.unmaps,
            xs_reads: n.xs_reads - self.xs_reads,
            xs_writes: n.xs_writes - self.xs_writes,
        }
    }

    /// Nothing but copies and notifies: no map, unmap or XenStore.
    fn data_path_only(&self) -> bool {
        (self.maps, self.unmaps, self.xs_reads, self.xs_writes) == (0, 0, 0, 0)
    }
}

/// 60-byte frames: a small UDP datagram in Ethernet.
const SMALL: usize = 60;

/// 64 small packets from the client in one wakeup: one copy hypercall of 64 ops
/// (one slot each, within one of our pages), one notify for their 64 responses.
#[test]
fn sixty_four_small_requests_in_one_wakeup_make_one_copy_batch_and_one_notify() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    for i in 0..64u16 {
        c.send(&frame(SMALL, i as u8), i);
    }
    let before = Calls::now(&x);
    nb.service();
    let d = before.since(&x);
    std::eprintln!("64 small tx requests, one wakeup: {d:?}");
    assert_eq!((d.copies, d.copy_ops), (1, 64));
    assert_eq!(d.notifies, 1);
    assert!(d.data_path_only());
    assert_eq!(nb.received_len(), 64);
    assert_eq!(c.tx_responses().len(), 64);
}

/// 64 small frames to the client in one wakeup: one copy hypercall, one notify.
#[test]
fn sixty_four_small_frames_to_the_client_make_one_copy_batch_and_one_notify() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    c.post_rx(64, true);
    for i in 0..64u8 {
        nb.send(&frame(SMALL, i)).unwrap();
    }
    let before = Calls::now(&x);
    nb.service();
    let d = before.since(&x);
    std::eprintln!("64 small rx frames, one wakeup: {d:?}");
    assert_eq!((d.copies, d.copy_ops), (1, 64));
    assert_eq!(d.notifies, 1);
    assert!(d.data_path_only());
    assert_eq!(c.rx_responses().len(), 64);
    assert_eq!(RX_BUDGET, 64);
}

/// Both rings with work in one wakeup: one copy hypercall for both (the client's
/// packets out, the frames to it in) and one notify for both (they share the event
/// channel: the frontend looks at both on it, as Linux's netfront does).
#[test]
fn both_rings_in_one_wakeup_make_one_copy_batch_and_one_notify() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    c.post_rx(64, true);
    for i in 0..64u16 {
        c.send(&frame(SMALL, i as u8), i);
        nb.send(&frame(SMALL, i as u8)).unwrap();
    }
    let before = Calls::now(&x);
    nb.service();
    let d = before.since(&x);
    std::eprintln!("64 small each way, one wakeup: {d:?}");
    assert_eq!(d.notifies, 1, "one event for both rings");
    assert_eq!((d.copies, d.copy_ops), (1, 128), "one copy for both rings");
    assert!(d.data_path_only());
    assert_eq!(c.tx_responses().len(), 64);
    assert_eq!(c.rx_responses().len(), 64);
}

/// One packet a wakeup (a flood the router keeps up with): a copy and a notify
/// each, the least there is when the client asks for an event each time (Linux's
/// netfront does: `RING_FINAL_CHECK_FOR_RESPONSES` after reading its responses).
/// A client that has not read its responses yet asks for none: copies alone.
#[test]
fn one_packet_a_wakeup_costs_one_copy_and_one_notify_only_when_asked() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    let before = Calls::now(&x);
    for i in 0..10u16 {
        c.send(&frame(SMALL, i as u8), i);
        nb.service();
        assert_eq!(c.tx_responses().len(), 1);
    }
    let d = before.since(&x);
    std::eprintln!("10 wakeups of one packet, client reading each time: {d:?}");
    assert_eq!((d.copies, d.notifies), (10, 10));
    assert!(d.data_path_only());

    let before = Calls::now(&x);
    for i in 10..20u16 {
        c.send(&frame(SMALL, i as u8), i);
        nb.service();
    }
    let d = before.since(&x);
    std::eprintln!("10 wakeups of one packet, client not reading: {d:?}");
    assert_eq!(
        (d.copies, d.notifies),
        (10, 1),
        "only the first crossed rsp_event"
    );
    assert_eq!(c.tx_responses().len(), 10);
}

/// A turn as the kernel's data plane runs it (`poll_stack`): the client's packets
/// taken ([`Netback::service_quiet`]), the router answers them, the answers handed
/// to the client ([`Netback::service`]): one event for the turn, not one for each
/// ring; the answers go with it.
#[test]
fn a_turn_that_answers_the_clients_packets_sends_one_event() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    c.post_rx(64, true);
    for round in 0..3u16 {
        for i in 0..8u16 {
            c.send(&frame(SMALL, i as u8), round * 8 + i);
        }
        let before = Calls::now(&x);
        assert!(nb.service_quiet(), "frames taken, not yet received");
        assert_eq!(before.since(&x).notifies, 0, "the event is owed");
        while let Some(f) = nb.recv() {
            nb.send(&f).unwrap(); // the router's answer
        }
        assert!(!nb.service());
        let d = before.since(&x);
        std::eprintln!("a turn of 8 packets answered: {d:?}");
        assert_eq!((d.copies, d.notifies), (2, 1));
        assert!(d.data_path_only());
        assert_eq!(c.tx_responses().len(), 8);
        assert_eq!(c.rx_responses().len(), 8);
    }
    // an owed event goes with the next service even with nothing new for either ring
    c.send(&frame(SMALL, 1), 100);
    nb.service_quiet();
    assert_eq!(x.notified.borrow().len(), 3);
    nb.flush_notify();
    assert_eq!(x.notified.borrow().len(), 4);
    nb.flush_notify();
    assert_eq!(x.notified.borrow().len(), 4, "owed once, sent once");
    assert_eq!(nb.stats().notifies, 4);
}

/// One copy call for both rings, each op's status still its own: a client packet
/// whose copy fails and a frame to a buffer the client granted read-only fail
/// alone, the others of the same call pass.
#[test]
fn one_copy_for_both_rings_keeps_each_ops_status_its_own() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    c.post_rx(1, false);
    c.post_rx(1, true);
    let g = c.page_with(0, &frame(SMALL, 9));
    x.copy_failing.borrow_mut().insert(g);
    c.push_tx(&[slot(g, 0, 0, 1, SMALL as u16)]);
    c.send(&frame(SMALL, 2), 2);
    nb.send(&frame(SMALL, 3)).unwrap();
    nb.send(&frame(SMALL, 4)).unwrap();
    let before = Calls::now(&x);
    nb.poll();
    let d = before.since(&x);
    assert_eq!((d.copies, d.copy_ops, d.notifies), (1, 4, 1));
    assert_eq!(
        c.tx_responses(),
        [(1, netif::RSP_ERROR), (2, netif::RSP_OKAY)]
    );
    assert_eq!(nb.recv(), Some(frame(SMALL, 2)));
    let r = c.rx_responses();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].0.status, netif::RSP_ERROR);
    assert_eq!((r[1].0.status, &r[1].1), (SMALL as i16, &frame(SMALL, 4)));
    let s = nb.stats();
    assert_eq!(
        (s.rx_errors, s.rx_packets, s.tx_errors, s.tx_packets),
        (1, 1, 1, 1)
    );
    // the whole call failing fails both rings' slots
    x.copy_hypercall_fails.set(true);
    c.post_rx(1, true);
    c.send(&frame(SMALL, 5), 5);
    nb.send(&frame(SMALL, 6)).unwrap();
    nb.poll();
    assert_eq!(c.tx_responses(), [(5, netif::RSP_ERROR)]);
    assert_eq!(c.rx_responses()[0].0.status, netif::RSP_ERROR);
    assert!(nb.broken().is_none());
}

/// What a small packet costs besides the traps, the heap allocations, counted for
/// the report (the kernel's slab serves them; on the bed they are part of the
/// clients' time that is not a trap): per packet each way in a batch of 64.
#[test]
fn allocations_per_small_packet_are_counted() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    for i in 0..64u16 {
        c.send(&frame(SMALL, i as u8), i);
    }
    let a = xenlet_testalloc::allocations();
    nb.service();
    let tx = xenlet_testalloc::allocations() - a;
    assert_eq!(nb.received_len(), 64);
    c.post_rx(64, true);
    let frames: alloc::vec::Vec<_> = (0..64u8).map(|i| frame(SMALL, i)).collect();
    let a = xenlet_testalloc::allocations();
    for f in &frames {
        nb.send(f).unwrap();
    }
    nb.service();
    let rx = xenlet_testalloc::allocations() - a;
    std::eprintln!(
        "allocations for 64 small packets: {tx} from the client ({:.1} each), {rx} to it with send ({:.1} each)",
        tx as f64 / 64.0,
        rx as f64 / 64.0
    );
    assert!(tx <= 64 * 6 && rx <= 64 * 4, "{tx} {rx}");
}
