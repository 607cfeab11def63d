//! The WAN side: solicitations, and what the upstream router's advertisements give.

use alloc::vec;
use core::net::Ipv6Addr;

use super::{TestRng, HOST, MAC};
use crate::ipv6::link_local_of;
use crate::ra::advert::{self, AdvertError};
use crate::ra::message::{self, RaConfig, RaPrefix};
use crate::ra::solicit;
use crate::ra::upstream::*;
use crate::route6::Ipv6Net;

/// Our WAN MAC; [`MAC`] is the upstream router's.
const WAN: [u8; 6] = HOST;

fn wan64() -> Ipv6Net {
    Ipv6Net::new("2001:db8:77::".parse().unwrap(), 64).unwrap()
}

fn upstream_ra(router_lifetime: u16, valid: u32, preferred: u32) -> RaConfig {
    RaConfig {
        router_lifetime_secs: router_lifetime,
        mtu: Some(1480),
        prefixes: vec![RaPrefix {
            prefix: wan64(),
            on_link: true,
            autonomous: true,
            valid_secs: valid,
            preferred_secs: preferred,
        }],
        rdnss: vec!["2001:db8:77::53".parse().unwrap()],
        ..RaConfig::default()
    }
}

fn frame(c: &RaConfig) -> alloc::vec::Vec<u8> {
    let body = c.body(MAC).unwrap();
    message::frame(&body, MAC, [0x33, 0x33, 0, 0, 0, 1], super::ALL_NODES)
}

#[test]
fn solicitations_three_four_seconds_apart_then_back_off_until_an_advert() {
    let mut rng = TestRng(3);
    let mut u = Upstream::new(WAN, 1500, 0, &mut rng);
    let mut times = vec![];
    let mut now = 0;
    while times.len() < 8 {
        now = u.poll_at().unwrap();
        if let Some(f) = u.poll(now, &mut rng) {
            // a valid solicitation, from our link-local, with our MAC
            let s = solicit::parse(&f).unwrap();
            assert_eq!(s.src, link_local_of(WAN));
            assert_eq!(s.lladdr, Some(WAN));
            assert_eq!(&f[..6], &[0x33, 0x33, 0, 0, 0, 2]);
            times.push(now);
        }
    }
    assert!(times[0] <= MAX_RS_DELAY_MS);
    let gaps: alloc::vec::Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps[0] >= RS_INTERVAL_MS && gaps[0] <= RS_INTERVAL_MS * 11 / 10,
        "{gaps:?}"
    );
    assert!(gaps[2] >= 2 * RS_INTERVAL_MS, "backs off: {gaps:?}");
    assert!(gaps.iter().all(|g| *g <= MAX_RS_INTERVAL_MS * 11 / 10));
    u.received(&frame(&upstream_ra(1800, 86400, 14400)), now)
        .unwrap();
    assert_eq!(u.poll_at(), Some(now + 1_800_000), "no more solicitations");
    assert_eq!(u.counters().solicitations, 8);
}

#[test]
fn an_advert_gives_the_default_router_mtu_on_link_prefix_slaac_and_rdnss() {
    let mut rng = TestRng(5);
    let mut u = Upstream::new(WAN, 1500, 0, &mut rng);
    u.received(&frame(&upstream_ra(1800, 86400, 14400)), 1000)
        .unwrap();
    assert!(u.take_changed());
    let r = u.router().unwrap();
    assert_eq!(r.addr, link_local_of(MAC));
    assert_eq!(r.lladdr, Some(MAC));
    assert_eq!(r.until, 1000 + 1_800_000);
    assert_eq!(u.mtu(), Some(1480));
    assert_eq!(u.prefixes()[0].prefix, wan64());
    let s = u.slaac().unwrap();
    // EUI-64 of 02:00:00:00:00:42: the U/L bit flipped
    assert_eq!(
        s.addr.addr(),
        "2001:db8:77::ff:fe00:42".parse::<Ipv6Addr>().unwrap()
    );
    assert_eq!(s.addr.prefix_len(), 64);
    assert_eq!(
        (s.preferred_until, s.valid_until),
        (1000 + 14_400_000, 1000 + 86_400_000)
    );
    assert_eq!(
        u.rdnss().collect::<alloc::vec::Vec<_>>(),
        ["2001:db8:77::53".parse::<Ipv6Addr>().unwrap()]
    );
    // the same advertisement again changes nothing worth redoing
    u.received(&frame(&upstream_ra(1800, 86400, 14400)), 2000)
        .unwrap();
    assert!(!u.take_changed());
}

#[test]
fn router_lifetime_zero_or_its_end_removes_the_default_route_and_solicits_again() {
    let mut rng = TestRng(7);
    let mut u = Upstream::new(WAN, 1500, 0, &mut rng);
    u.received(&frame(&upstream_ra(30, 86400, 14400)), 0)
        .unwrap();
    u.take_changed();
    assert!(u.poll(29_999, &mut rng).is_none());
    assert!(u.router().is_some());
    let f = u.poll(30_000, &mut rng);
    assert!(u.router().is_none());
    assert!(u.take_changed());
    assert!(f.is_some(), "solicits for another router");
    u.received(&frame(&upstream_ra(600, 86400, 14400)), 31_000)
        .unwrap();
    assert!(u.router().is_some());
    u.received(&frame(&upstream_ra(0, 86400, 14400)), 32_000)
        .unwrap();
    assert!(u.router().is_none());
    assert!(u.take_changed());
}

#[test]
fn the_two_hour_rule_keeps_a_forged_short_valid_lifetime_from_killing_the_address() {
    let mut rng = TestRng(9);
    let mut u = Upstream::new(WAN, 1500, 0, &mut rng);
    u.received(&frame(&upstream_ra(1800, 86400, 14400)), 0)
        .unwrap();
    u.received(&frame(&upstream_ra(1800, 10, 0)), 1000).unwrap();
    let s = u.slaac().unwrap();
    assert_eq!(s.valid_until, 1000 + 7_200_000);
    assert_eq!(s.preferred_until, 1000);
    // it expires then, with its on-link prefix (valid 10 s)
    u.poll(12_000, &mut rng);
    assert!(u.prefixes().is_empty());
    assert!(u.slaac().is_some());
    u.poll(1000 + 7_200_000, &mut rng);
    assert!(u.slaac().is_none());
}

/// Recomputes the ICMPv6 checksum of an RA frame from [`MAC`] to all nodes.
fn resum(f: &mut [u8]) {
    let icmp_at = 14 + 40;
    f[icmp_at + 2..icmp_at + 4].fill(0);
    let s =
        crate::ipv6::pseudo_header_sum(link_local_of(MAC), super::ALL_NODES, 58, f.len() - icmp_at);
    let c = !crate::checksum::fold(crate::checksum::sum(s, &f[icmp_at..]));
    f[icmp_at + 2..icmp_at + 4].copy_from_slice(&c.to_be_bytes());
}

#[test]
fn an_mtu_outside_1280_and_the_link_mtu_is_ignored() {
    let mut rng = TestRng(11);
    let mut u = Upstream::new(WAN, 1500, 0, &mut rng);
    for mtu in [1000, 9000] {
        let mut c = upstream_ra(1800, 86400, 14400);
        c.mtu = Some(mtu);
        // RaConfig raises an MTU under 1280 to 1280: patch the bytes instead
        let mut f = frame(&c);
        let at = f.windows(4).position(|w| w == [5, 1, 0, 0]).unwrap();
        f[at + 4..at + 8].copy_from_slice(&mtu.to_be_bytes());
        resum(&mut f);
        u.received(&f, 0).unwrap();
        assert_eq!(u.mtu(), None, "{mtu}");
    }
}

#[test]
fn bad_adverts_are_dropped_and_counted() {
    let mut rng = TestRng(13);
    let mut u = Upstream::new(WAN, 1500, 0, &mut rng);
    let good = frame(&upstream_ra(1800, 86400, 14400));
    let mut hop = good.clone();
    hop[14 + 7] = 64;
    let mut sum = good.clone();
    sum[14 + 40 + 2] ^= 1;
    let mut code = good.clone();
    code[14 + 41] = 1;
    let mut opt = good.clone();
    opt[14 + 40 + 17] = 0; // first option's length 0
    resum(&mut opt);
    let mut global = good.clone();
    global[14 + 8] = 0x20; // source 2xxx:: not link-local
    let cases = [
        (hop, AdvertError::HopLimit),
        (sum, AdvertError::Checksum),
        (code, AdvertError::Code),
        (opt, AdvertError::BadOption),
        (global, AdvertError::Source),
        (good[..14 + 40 + 10].to_vec(), AdvertError::Truncated),
    ];
    for (f, e) in &cases {
        assert_eq!(u.received(f, 0), Err(*e));
    }
    for cut in 0..good.len() {
        let _ = advert::parse(&good[..cut]);
    }
    assert_eq!(u.counters().bad_adverts, cases.len() as u64);
    assert!(u.router().is_none());
    assert!(!u.take_changed());
}

#[test]
fn prefixes_are_bounded() {
    let mut rng = TestRng(17);
    let mut u = Upstream::new(WAN, 1500, 0, &mut rng);
    for round in 0..4u16 {
        let mut c = upstream_ra(1800, 86400, 14400);
        c.prefixes = (0..8u16)
            .map(|i| RaPrefix {
                prefix: Ipv6Net::new(Ipv6Addr::new(0x2001, 0xdb8, round, i, 0, 0, 0, 0), 64)
                    .unwrap(),
                on_link: true,
                autonomous: true,
                valid_secs: 86400,
                preferred_secs: 3600,
            })
            .collect();
        u.received(&frame(&c), 0).unwrap();
    }
    assert_eq!(u.prefixes().len(), crate::ra::message::MAX_PREFIXES);
    assert_eq!(u.counters().prefixes_full, 24);
    // one SLAAC address, in the first prefix with A
    assert_eq!(
        u.slaac().unwrap().addr.network().addr(),
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0)
    );
}
