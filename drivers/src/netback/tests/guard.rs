//! The toolstack's limits on a client (`guard`): the `ip` source filter, the `rate`
//! credit scheduler, and one client's flood against another's packets.

use super::*;

const MAC5: [u8; 6] = [0, 0x16, 0x3e, 0, 0, 5];

/// An Ethernet header from the client (MAC5) of EtherType `ty`.
fn eth(ty: u16) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&MAC5);
    f.extend_from_slice(&ty.to_be_bytes());
    f
}

/// An IPv4/UDP frame from `src` (a 20-byte header, 8 bytes of UDP, some data).
fn ipv4_from(src: [u8; 4]) -> Vec<u8> {
    let mut f = eth(0x0800);
    let mut ip = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 17, 0, 0];
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&[10, 0, 0, 1]);
    f.extend_from_slice(&ip);
    f.extend_from_slice(&[0, 68, 0, 67, 0, 20, 0, 0]);
    f.extend_from_slice(&[0xab; 12]);
    f
}

/// An ARP request from sender (`sha`, `spa`).
fn arp_from(sha: [u8; 6], spa: [u8; 4]) -> Vec<u8> {
    let mut f = eth(0x0806);
    f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&sha);
    f.extend_from_slice(&spa);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&[10, 0, 0, 1]);
    f
}

/// An IPv6 frame from `src` (a 40-byte header, no payload).
fn ipv6_from(src: [u8; 16]) -> Vec<u8> {
    let mut f = eth(0x86dd);
    f.extend_from_slice(&[0x60, 0, 0, 0, 0, 0, 59, 64]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    f
}

fn v6(head: [u8; 2], last: u8) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..2].copy_from_slice(&head);
    a[15] = last;
    a
}

/// Sends each frame (ids 1, 2, ...), polls, and gives back what came through and
/// the statuses the client got.
fn through(nb: &mut Netback<&FakeXen>, c: &mut Client<'_>, frames: &[Vec<u8>]) -> Vec<Vec<u8>> {
    for (i, f) in frames.iter().enumerate() {
        c.send(f, 1 + i as u16);
    }
    while nb.poll() {}
    let answers = c.tx_responses();
    assert_eq!(answers.len(), frames.len(), "every packet answered");
    assert!(
        answers.iter().all(|&(_, s)| s == netif::RSP_OKAY),
        "dropped as a firewall drops: the client sees them sent ({answers:?})"
    );
    core::iter::from_fn(|| nb.recv()).collect()
}

#[test]
fn the_ip_key_lets_only_its_sources_through_and_counts_the_spoofed() {
    let x = xen();
    // written before the client connects: read at connect
    let (mut nb, mut c) = connected_with(&x, |x| x.set(&format!("{BE}/ip"), "10.0.0.5 10.0.0.6"));
    assert_eq!(
        nb.source_filter().unwrap().v4(),
        [[10, 0, 0, 5], [10, 0, 0, 6]]
    );
    let good = [
        ipv4_from([10, 0, 0, 5]),
        ipv4_from([10, 0, 0, 6]),
        arp_from(MAC5, [10, 0, 0, 6]),
        ipv6_from(v6([0xfe, 0x80], 5)),
    ];
    let spoofed = [
        ipv4_from([10, 0, 0, 9]),
        ipv4_from([0, 0, 0, 0]), // DHCP: a client with fixed addresses
        arp_from(MAC5, [10, 0, 0, 9]),
        arp_from([0, 0x16, 0x3e, 0, 0, 9], [10, 0, 0, 5]), // another MAC inside
        arp_from(MAC5, [0, 0, 0, 0]),                      // an ARP probe
        ipv6_from(v6([0x20, 0x01], 5)),                    // a global it was not given
        ipv6_from([0; 16]),
        {
            // a VLAN tag around an IPv4 packet
            let mut f = eth(0x8100);
            f.extend_from_slice(&[0, 5, 8, 0]);
            f.extend_from_slice(&ipv4_from([10, 0, 0, 9])[14..]);
            f
        },
        ipv4_from([10, 0, 0, 5])[..20].to_vec(), // too short to show its source
    ];
    let mut all: Vec<Vec<u8>> = Vec::new();
    for (g, s) in good.iter().zip(spoofed.iter()) {
        all.push(s.clone());
        all.push(g.clone());
    }
    all.extend(spoofed[good.len()..].iter().cloned());
    assert_eq!(through(&mut nb, &mut c, &all), good);
    let s = nb.stats();
    assert_eq!(s.rx_spoofed, spoofed.len() as u64);
    assert_eq!(s.rx_packets, good.len() as u64);
    assert_eq!(s.rx_dropped + s.rx_errors + s.fatal, 0);
}

#[test]
fn ipv6_addresses_in_the_ip_key_are_allowed_and_junk_in_it_fails_closed() {
    let x = xen();
    let (mut nb, mut c) = connected_with(&x, |x| {
        x.set(&format!("{BE}/ip"), "10.0.0.5/24 2001:db8::5")
    });
    let mut g = [0u8; 16];
    g[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    g[15] = 5;
    let frames = [ipv4_from([10, 0, 0, 5]), ipv6_from(g)];
    assert_eq!(through(&mut nb, &mut c, &frames), frames);
    assert_eq!(nb.stats().rx_spoofed, 0);

    let x = xen();
    let (mut nb, mut c) = connected_with(&x, |x| x.set(&format!("{BE}/ip"), "dhcp"));
    let frames = [ipv4_from([10, 0, 0, 5]), arp_from(MAC5, [10, 0, 0, 5])];
    assert!(through(&mut nb, &mut c, &frames).is_empty());
    assert_eq!(nb.stats().rx_spoofed, 2);
    assert_eq!(nb.source_filter().unwrap().text(), "(none)");
}

#[test]
fn without_an_ip_key_every_source_passes() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    assert!(nb.source_filter().is_none());
    let frames = [
        ipv4_from([10, 0, 0, 9]),
        arp_from([0, 0x16, 0x3e, 0, 0, 9], [0, 0, 0, 0]),
        ipv6_from(v6([0x20, 0x01], 5)),
    ];
    assert_eq!(through(&mut nb, &mut c, &frames), frames);
    assert_eq!(nb.stats().rx_spoofed, 0);
}

#[test]
fn the_rate_key_reads_as_linux_reads_it() {
    assert_eq!(parse_rate("1250000,50000"), Some((1_250_000, 50_000)));
    assert_eq!(parse_rate("0,1"), Some((0, 1)));
    for bad in [
        "", "1250000", "1250000,", ",50000", "12 5,50", "1,2,3", "-1,5", "5,0",
    ] {
        assert_eq!(parse_rate(bad), None, "{bad:?}: unlimited");
    }
    let f = SourceFilter::parse("10.0.0.5 fe80::1 junk 300.1.1.1 1.2.3").unwrap();
    assert_eq!(f.v4(), [[10, 0, 0, 5]]);
    assert_eq!(f.v6(), [v6([0xfe, 0x80], 1)]);
    assert_eq!(f.text(), "10.0.0.5 fe80:0:0:0:0:0:0:1");
    assert_eq!(SourceFilter::parse("  "), None);
}

/// A connected vif whose `rate` key is `rate`, its clock at 1 s.
fn rated<'a>(x: &'a FakeXen, rate: &str) -> (Netback<&'a FakeXen>, Client<'a>) {
    x.clock.set(1_000_000_000);
    connected_with(x, |x| x.set(&format!("{BE}/rate"), rate))
}

#[test]
fn the_rate_bounds_what_a_client_sends_per_window_and_loses_nothing() {
    let x = xen();
    // 10000 bytes per 100 ms: ten 1000-byte frames a window
    let (mut nb, mut c) = rated(&x, "10000,100000");
    assert_eq!(nb.rate(), Some((10_000, 100_000)));
    let t0 = x.clock.get();
    for i in 0..95u16 {
        c.send(&frame(1000, i as u8), i);
    }
    let mut got = Vec::new();
    let mut answered = 0;
    let mut windows = 0;
    loop {
        // events (and the integrator's turns) inside the window change nothing
        for _ in 0..3 {
            assert!(!nb.service() || nb.received_len() > 0);
            let mut this = 0;
            while let Some(f) = nb.recv() {
                got.push(f);
                this += 1;
            }
            assert!(this <= 10, "window {windows}: {this} frames of 1000 bytes");
            x.clock.set(x.clock.get() + 30_000_000);
            if nb.rate_wakeup_ns().is_some_and(|t| x.clock.get() < t) {
                assert!(!nb.poll(), "a waiting packet asks for no busy poll");
            }
        }
        answered += c.tx_responses().len();
        let Some(at) = nb.rate_wakeup_ns() else { break };
        assert_eq!(
            at,
            t0 + (windows + 1) * 100_000_000,
            "one window after the last"
        );
        x.clock.set(at);
        windows += 1;
        assert!(windows < 20, "stalled");
    }
    assert_eq!(
        windows, 9,
        "95 frames at 10 a window: the tenth window takes the last 5"
    );
    assert_eq!(got.len(), 95, "no packet lost");
    for (i, f) in got.iter().enumerate() {
        assert_eq!(*f, frame(1000, i as u8), "in order");
    }
    assert_eq!(answered, 95);
    assert_eq!(nb.stats().rate_waits, 9);
    assert_eq!(nb.stats().rx_dropped, 0);
}

#[test]
fn a_packet_larger_than_the_credit_passes_once_enough_has_come() {
    let x = xen();
    // 1000 bytes per ms, a 60000-byte GSO-sized frame: the credit grows to it
    let (mut nb, mut c) = rated(&x, "1000,1000");
    let big = frame(60_000, 3);
    c.send(&big, 0);
    c.send(&frame(100, 4), 20);
    let mut polls = 0;
    while nb.received_len() < 2 {
        nb.poll();
        match nb.rate_wakeup_ns() {
            Some(t) => x.clock.set(t),
            None => assert_eq!(nb.received_len(), 2),
        }
        polls += 1;
        assert!(polls < 100, "stalled");
    }
    assert_eq!(nb.recv().unwrap(), big);
    assert_eq!(nb.recv().unwrap(), frame(100, 4));
    assert!(nb.rate_wakeup_ns().is_none());
}

#[test]
fn without_a_rate_key_nothing_waits() {
    let x = xen();
    let (mut nb, mut c) = connected_with(&x, |x| x.set(&format!("{BE}/rate"), "garbage"));
    assert_eq!(nb.rate(), None);
    for i in 0..50u16 {
        c.send(&frame(1500, i as u8), i * 2);
    }
    while nb.poll() {}
    assert_eq!(nb.received_len(), 50);
    assert_eq!(nb.rate_wakeup_ns(), None);
}

#[test]
fn a_flooding_client_cannot_starve_another_in_one_service_round() {
    let x = xen();
    let ((mut flood, mut c), (mut quiet, mut c6)) = two_vifs(&x);
    for i in 0..250u16 {
        c.send(&frame(60, i as u8), i);
    }
    c6.send(&frame(80, 6), 1);
    // one round of the data plane: each vif's turn in order, the flooder first
    let flood_busy = flood.service();
    quiet.service();
    assert_eq!(
        quiet.recv().unwrap(),
        frame(80, 6),
        "served in the same round"
    );
    assert!(flood_busy, "the flooder has work left for its next turn");
    assert!(
        flood.received_len() <= (SERVICE_POLLS * TX_BUDGET).min(RECEIVED_MAX),
        "bounded work a turn: {}",
        flood.received_len()
    );
    // the bridge above then takes one frame of each port in turn
    // (bridge::tests::ports_take_turns_so_a_busy_one_starves_no_other)
}

#[test]
fn ip_and_rate_changed_while_connected_apply_at_the_next_xenbus_poll() {
    let x = xen();
    let (mut nb, mut c) = connected(&x);
    assert_eq!(
        through(&mut nb, &mut c, &[ipv4_from([10, 0, 0, 9])]).len(),
        1
    );
    // the toolstack (or an admin's xenstore-write) sets ip: the watch fires
    x.set(&format!("{BE}/ip"), "10.0.0.5");
    assert_eq!(nb.poll_xenbus(), Ok(BackState::Connected));
    let frames = [ipv4_from([10, 0, 0, 9]), ipv4_from([10, 0, 0, 5])];
    assert_eq!(through(&mut nb, &mut c, &frames), [frames[1].clone()]);
    assert_eq!(nb.stats().rx_spoofed, 1);
    // and back to the address it uses
    x.set(&format!("{BE}/ip"), "10.0.0.9");
    nb.poll_xenbus().unwrap();
    assert_eq!(through(&mut nb, &mut c, &frames), [frames[0].clone()]);
    assert_eq!(nb.stats().rx_spoofed, 2);
    // a rate set live (and ip removed): a packet past its credit waits, a rate
    // removed lets it go
    (&x).xs_rm(&format!("{BE}/ip")).unwrap();
    x.set(&format!("{BE}/rate"), "1000,1000000");
    nb.poll_xenbus().unwrap();
    assert!(nb.source_filter().is_none());
    assert_eq!(nb.rate(), Some((1000, 1_000_000)));
    c.send(&frame(600, 1), 10);
    c.send(&frame(600, 2), 11);
    while nb.poll() {}
    assert_eq!(nb.received_len(), 1);
    assert!(nb.rate_wakeup_ns().is_some());
    // the same rate written again keeps the credit (the packet still waits)
    nb.poll_xenbus().unwrap();
    nb.poll();
    assert_eq!(nb.received_len(), 1);
    (&x).xs_rm(&format!("{BE}/rate")).unwrap();
    nb.poll_xenbus().unwrap();
    assert_eq!(nb.rate(), None);
    assert_eq!(nb.rate_wakeup_ns(), None);
    nb.poll();
    assert_eq!(nb.received_len(), 2);
    assert_eq!(c.tx_responses().len(), 2);
}
