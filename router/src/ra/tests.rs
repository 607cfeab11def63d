//! Router advertisement tests: the message read back by smoltcp, solicitations
//! checked, the timing of RFC 4861 §6.2.4/§6.2.6.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::net::Ipv6Addr;

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::time::Duration;
use smoltcp::wire::{
    EthernetFrame, Icmpv6Packet, Icmpv6Repr, Ipv6Packet, NdiscPrefixInfoFlags, NdiscRepr,
    NdiscRouterFlags, RawHardwareAddress,
};

use super::advertiser::{ALL_NODES, MAX_INITIAL_INTERVAL_MS, MIN_DELAY_BETWEEN_MS};
use super::*;
use crate::ipv6::link_local_of;
use crate::route6::Ipv6Net;
use crate::testutil::{eth, icmp6, ipv6};

const MAC: [u8; 6] = [0x00, 0x16, 0x3e, 0x01, 0x02, 0x03];
const HOST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x42];

/// xorshift32: deterministic, covers the range (the DHCPv6 client's tests use it too).
pub(crate) use crate::testutil::XorShift as TestRng;

/// The ICMPv6 message in `ip`, read back by smoltcp (which checks the checksum).
fn icmp_repr<'a>(ip: &Ipv6Packet<&'a [u8]>) -> Icmpv6Repr<'a> {
    let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
    Icmpv6Repr::parse(
        &ip.src_addr(),
        &ip.dst_addr(),
        &icmp,
        &ChecksumCapabilities::default(),
    )
    .unwrap()
}

fn ula64() -> Ipv6Net {
    Ipv6Net::new("fd12:3456:789a::".parse().unwrap(), 64).unwrap()
}

fn config() -> RaConfig {
    RaConfig {
        mtu: Some(1500),
        prefixes: vec![RaPrefix {
            prefix: ula64(),
            on_link: true,
            autonomous: true,
            valid_secs: 5400,
            preferred_secs: 2700,
        }],
        rdnss: vec!["fd12:3456:789a::1".parse().unwrap()],
        dnssl: vec![String::from("lan")],
        ..RaConfig::default()
    }
}

/// The options of an RA's ICMPv6 body: (type, bytes after type and length).
fn options(icmp: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut o = &icmp[16..];
    while !o.is_empty() {
        let len = usize::from(o[1]) * 8;
        assert!(len > 0 && len <= o.len(), "option length {len}");
        out.push((o[0], o[2..len].to_vec()));
        o = &o[len..];
    }
    out
}

#[test]
fn the_advertisement_reads_back_through_smoltcp() {
    let body = config().body(MAC).unwrap();
    let f = message::frame(&body, MAC, [0x33, 0x33, 0, 0, 0, 1], ALL_NODES);
    let e = EthernetFrame::new_checked(&f[..]).unwrap();
    assert_eq!(e.dst_addr().0, [0x33, 0x33, 0, 0, 0, 1]);
    assert_eq!(e.src_addr().0, MAC);
    let ip = Ipv6Packet::new_checked(e.payload()).unwrap();
    assert_eq!(ip.hop_limit(), 255);
    assert_eq!(ip.src_addr(), link_local_of(MAC));
    assert_eq!(
        ip.src_addr(),
        "fe80::216:3eff:fe01:203".parse::<Ipv6Addr>().unwrap()
    );
    assert_eq!(ip.dst_addr(), ALL_NODES);
    let repr = icmp_repr(&ip);
    let Icmpv6Repr::Ndisc(NdiscRepr::RouterAdvert {
        hop_limit,
        flags,
        router_lifetime,
        reachable_time,
        retrans_time,
        lladdr,
        mtu,
        prefix_info,
    }) = repr
    else {
        panic!("not an RA: {repr:?}");
    };
    assert_eq!(hop_limit, 64);
    assert_eq!(flags, NdiscRouterFlags::OTHER);
    assert_eq!(router_lifetime, Duration::from_secs(0));
    assert_eq!(reachable_time, Duration::from_millis(0));
    assert_eq!(retrans_time, Duration::from_millis(0));
    assert_eq!(lladdr, Some(RawHardwareAddress::from_bytes(&MAC)));
    assert_eq!(mtu, Some(1500));
    let p = prefix_info.unwrap();
    assert_eq!(p.prefix_len, 64);
    assert_eq!(
        p.flags,
        NdiscPrefixInfoFlags::ON_LINK | NdiscPrefixInfoFlags::ADDRCONF
    );
    assert_eq!(p.valid_lifetime, Duration::from_secs(5400));
    assert_eq!(p.preferred_lifetime, Duration::from_secs(2700));
    assert_eq!(p.prefix, "fd12:3456:789a::".parse::<Ipv6Addr>().unwrap());
    // RDNSS, DNSSL and the interval, which smoltcp skips
    let opts = options(ip.payload());
    let types: Vec<u8> = opts.iter().map(|o| o.0).collect();
    assert_eq!(types, [1, 5, 3, 25, 31, 7]);
    let rdnss = &opts[3].1;
    assert_eq!(&rdnss[2..6], &1800u32.to_be_bytes());
    assert_eq!(
        &rdnss[6..22],
        &"fd12:3456:789a::1".parse::<Ipv6Addr>().unwrap().octets()
    );
    let dnssl = &opts[4].1;
    assert_eq!(&dnssl[2..6], &1800u32.to_be_bytes());
    assert_eq!(&dnssl[6..], b"\x03lan\0\0\0\0");
    assert_eq!(&opts[5].1, &[0, 0, 0, 0x09, 0x27, 0xc0]); // 600000 ms
}

#[test]
fn flags_router_lifetime_and_prefix_bits_follow_the_configuration() {
    for (managed, other, slaac, lifetime) in [
        (false, false, true, 0u16),
        (true, true, false, 1800),
        (true, false, true, 1800),
    ] {
        let mut c = config();
        c.managed = managed;
        c.other = other;
        c.router_lifetime_secs = lifetime;
        c.prefixes[0].autonomous = slaac;
        c.mtu = None;
        c.dnssl.clear();
        let body = c.body(MAC).unwrap();
        let f = message::frame(&body, MAC, [0x33, 0x33, 0, 0, 0, 1], ALL_NODES);
        let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
        let repr = icmp_repr(&ip);
        let Icmpv6Repr::Ndisc(NdiscRepr::RouterAdvert {
            flags,
            router_lifetime,
            mtu,
            prefix_info,
            ..
        }) = repr
        else {
            panic!()
        };
        assert_eq!(flags.contains(NdiscRouterFlags::MANAGED), managed);
        assert_eq!(flags.contains(NdiscRouterFlags::OTHER), other);
        assert_eq!(router_lifetime, Duration::from_secs(u64::from(lifetime)));
        assert_eq!(mtu, None);
        let p = prefix_info.unwrap();
        assert_eq!(p.flags.contains(NdiscPrefixInfoFlags::ADDRCONF), slaac);
        assert!(p.flags.contains(NdiscPrefixInfoFlags::ON_LINK));
        let types: Vec<u8> = options(ip.payload()).iter().map(|o| o.0).collect();
        assert_eq!(types, [1, 3, 25, 7]);
    }
}

#[test]
fn a_bad_configuration_is_an_error_not_a_message() {
    let mut c = config();
    c.dnssl = vec![String::from("bad..name")];
    assert_eq!(
        c.body(MAC),
        Err(RaError::BadDomain(String::from("bad..name")))
    );
    c.dnssl = vec![String::from(core::str::from_utf8(&[b'a'; 64]).unwrap())];
    assert!(matches!(c.check(), Err(RaError::BadDomain(_))));
    let mut c = config();
    c.max_interval_secs = 3;
    assert_eq!(c.check(), Err(RaError::BadInterval { min: 200, max: 3 }));
    c.max_interval_secs = 100; // min 200 > 0.75 × 100
    assert!(c.check().is_err());
    let mut c = config();
    c.prefixes[0].preferred_secs = 6000;
    assert!(matches!(c.check(), Err(RaError::BadLifetimes(_))));
    let mut c = config();
    c.rdnss = vec![Ipv6Addr::LOCALHOST; 9];
    assert_eq!(c.check(), Err(RaError::TooMany("DNS servers")));
    assert_eq!(
        RaError::BadInterval { min: 1, max: 2 }.to_string(),
        "advertisement interval 1-2 s out of bounds (max 4-1800, min 3 to 3/4 of max)"
    );
}

/// A Router Solicitation frame from `src` with hop limit `hops` and `opts`.
fn rs(src: &str, hops: u8, opts: &[u8]) -> Vec<u8> {
    let mut body = vec![0u8; 4]; // reserved
    body.extend_from_slice(opts);
    to_routers(src, hops, &icmp6(src, "ff02::2", 133, 0, &body))
}

/// ICMPv6 message `m` from the host's `src` to all routers, with hop limit `hops`.
fn to_routers(src: &str, hops: u8, m: &[u8]) -> Vec<u8> {
    eth(
        [0x33, 0x33, 0, 0, 0, 2],
        HOST,
        0x86dd,
        &ipv6(src, "ff02::2", 58, hops, m),
    )
}

const SLLA: [u8; 8] = [1, 1, 0x02, 0, 0, 0, 0, 0x42];

#[test]
fn solicitations_are_checked_before_they_are_answered() {
    let ok = solicit::parse(&rs("fe80::42", 255, &SLLA)).unwrap();
    assert_eq!(ok.src, "fe80::42".parse::<Ipv6Addr>().unwrap());
    assert_eq!(ok.lladdr, Some(HOST));
    let ok = solicit::parse(&rs("::", 255, &[])).unwrap();
    assert_eq!((ok.src, ok.lladdr), (Ipv6Addr::UNSPECIFIED, None));
    // one smoltcp emits
    let repr = Icmpv6Repr::Ndisc(NdiscRepr::RouterSolicit {
        lladdr: Some(RawHardwareAddress::from_bytes(&HOST)),
    });
    let (src, dst): (Ipv6Addr, Ipv6Addr) =
        ("fe80::42".parse().unwrap(), "ff02::2".parse().unwrap());
    let mut m = vec![0u8; repr.buffer_len()];
    repr.emit(
        &src,
        &dst,
        &mut Icmpv6Packet::new_unchecked(&mut m[..]),
        &ChecksumCapabilities::default(),
    );
    let f = to_routers("fe80::42", 255, &m);
    assert_eq!(solicit::parse(&f).unwrap().lladdr, Some(HOST));

    assert_eq!(
        solicit::parse(&rs("fe80::42", 64, &SLLA)),
        Err(RsError::HopLimit)
    );
    assert_eq!(
        solicit::parse(&rs("::", 255, &SLLA)),
        Err(RsError::LladdrFromUnspecified)
    );
    assert_eq!(
        solicit::parse(&rs("fe80::42", 255, &[1, 0, 0, 0, 0, 0, 0, 0])),
        Err(RsError::BadOption)
    );
    assert_eq!(
        solicit::parse(&rs("fe80::42", 255, &[1, 2, 0, 0, 0, 0, 0, 0])),
        Err(RsError::BadOption)
    );
    let mut bad = rs("fe80::42", 255, &SLLA);
    bad[14 + 40 + 2] ^= 0xff;
    assert_eq!(solicit::parse(&bad), Err(RsError::Checksum));
    let mut code = rs("fe80::42", 255, &[]);
    code[14 + 40 + 1] = 1;
    assert_eq!(solicit::parse(&code), Err(RsError::Code));
    // cut short: the IPv6 header says more than there is
    let short = rs("fe80::42", 255, &SLLA);
    assert_eq!(
        solicit::parse(&short[..short.len() - 4]),
        Err(RsError::Truncated)
    );
    // the ICMPv6 message under 8 bytes
    let tiny = to_routers("fe80::42", 255, &icmp6("fe80::42", "ff02::2", 133, 0, &[]));
    assert_eq!(solicit::parse(&tiny), Err(RsError::Truncated));
    // not one at all
    let echo = to_routers(
        "fe80::42",
        255,
        &icmp6("fe80::42", "ff02::2", 128, 0, &[0; 4]),
    );
    assert!(!solicit::is_solicitation(&echo));
    assert_eq!(solicit::parse(&echo), Err(RsError::NotSolicitation));
    assert_eq!(solicit::parse(&[]), Err(RsError::NotSolicitation));
    for n in 0..rs("fe80::42", 255, &SLLA).len() {
        let _ = solicit::parse(&rs("fe80::42", 255, &SLLA)[..n]); // never panics
    }
}

#[test]
fn periodic_advertisements_start_at_once_then_fast_then_every_200_to_600_s() {
    let mut rng = TestRng(7);
    let mut a = Advertiser::new(&config(), MAC, 1000).unwrap();
    assert_eq!(a.poll_at(), 1000);
    assert!(a.poll(999, &mut rng).is_none());
    let mut times = Vec::new();
    let mut now = 1000;
    while times.len() < 40 {
        now = a.poll_at();
        let f = a.poll(now, &mut rng).expect("due");
        assert_eq!(&f[..6], &[0x33, 0x33, 0, 0, 0, 1]);
        times.push(now);
    }
    assert_eq!(times[0], 1000);
    for w in times.windows(2).take(2) {
        assert!(w[1] - w[0] <= MAX_INITIAL_INTERVAL_MS, "{w:?}");
        assert!(w[1] - w[0] >= 200_000.min(MAX_INITIAL_INTERVAL_MS));
    }
    let gaps: Vec<u64> = times.windows(2).skip(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|g| (200_000..=600_000).contains(g)),
        "{gaps:?}"
    );
    // random, not fixed
    assert!(gaps.iter().any(|g| *g != gaps[0]));
    assert_eq!(a.counters().unsolicited, 40);
    assert_eq!(a.counters().solicited, 0);
    let _ = now;
}

#[test]
fn solicitations_are_answered_within_half_a_second_and_rate_limited() {
    let mut rng = TestRng(99);
    let mut a = Advertiser::new(&config(), MAC, 0).unwrap();
    // the initial advertisements
    for _ in 0..3 {
        let t = a.poll_at();
        a.poll(t, &mut rng).unwrap();
    }
    let last = a.poll_at(); // next periodic, ≥ 200 s away
    let start = a.poll_at() - 200_000 + 10_000;
    assert!(start > 16_000 * 3);
    a.solicited(&rs("fe80::42", 255, &SLLA), start, &mut rng)
        .unwrap();
    let at = a.poll_at();
    assert!(at >= start && at <= start + 500, "{at} {start}");
    assert!(a.poll(at, &mut rng).is_some());
    assert_eq!(a.counters().solicited, 1);
    // a flood: one solicitation every 10 ms for 10 s
    let mut sent = 0;
    let mut now = at;
    let mut sent_at = Vec::new();
    while now < at + 10_000 {
        now += 10;
        a.solicited(&rs("::", 255, &[]), now, &mut rng).unwrap();
        if a.poll(now, &mut rng).is_some() {
            sent += 1;
            sent_at.push(now);
        }
    }
    assert!((3..=4).contains(&sent), "{sent}");
    for w in sent_at.windows(2) {
        assert!(w[1] - w[0] >= MIN_DELAY_BETWEEN_MS);
    }
    let c = a.counters();
    assert_eq!(c.solicitations, 1001);
    assert_eq!(c.solicited, 1 + sent);
    // each answer was scheduled by one solicitation (the last may still wait)
    assert!(c.coalesced == 1000 - sent || c.coalesced == 1000 - sent - 1);
    // the periodic timer restarted from the last answer
    assert!(a.poll_at() >= now.min(last));
}

#[test]
fn bad_solicitations_are_dropped_and_counted() {
    let mut rng = TestRng(3);
    let mut a = Advertiser::new(&config(), MAC, 0).unwrap();
    let t = a.poll_at();
    a.poll(t, &mut rng).unwrap();
    let next = a.poll_at();
    let mut bad = rs("fe80::42", 255, &SLLA);
    bad[14 + 40 + 2] ^= 1;
    assert_eq!(a.solicited(&bad, 20_000, &mut rng), Err(RsError::Checksum));
    assert_eq!(
        a.solicited(&rs("fe80::42", 1, &SLLA), 20_000, &mut rng),
        Err(RsError::HopLimit)
    );
    let c = a.counters();
    assert_eq!(
        (
            c.bad_solicitations,
            c.bad_checksum,
            c.bad_hop_limit,
            c.solicitations
        ),
        (2, 1, 1, 0)
    );
    assert_eq!(a.poll_at(), next, "nothing scheduled for them");
}

#[test]
fn a_new_configuration_goes_out_at_once_and_an_unchanged_one_waits() {
    let mut rng = TestRng(21);
    let mut a = Advertiser::new(&config(), MAC, 0).unwrap();
    a.poll(0, &mut rng).unwrap();
    let next = a.poll_at();
    assert!(next > 3_000);
    a.set_config(&config(), 1_000, true).unwrap();
    assert_eq!(a.poll_at(), next, "same message: the timers stay");
    let mut c = config();
    c.prefixes[0].valid_secs -= 1;
    a.set_config(&c, 1_000, false).unwrap();
    assert_eq!(
        a.poll_at(),
        next,
        "lifetimes counting down: the timers stay"
    );
    c.prefixes[0].valid_secs = 0;
    c.prefixes[0].preferred_secs = 0;
    a.set_config(&c, 1_000, true).unwrap();
    // at once, but never within 3 s of the last one
    assert_eq!(a.poll_at(), MIN_DELAY_BETWEEN_MS);
    let f = a.poll(MIN_DELAY_BETWEEN_MS, &mut rng).unwrap();
    let opts = options(&f[14 + 40..]);
    let pi = &opts.iter().find(|o| o.0 == 3).unwrap().1;
    assert_eq!(&pi[2..10], &[0; 8], "lifetimes 0");
    // a configuration that cannot be advertised keeps the old one
    c.max_interval_secs = 1;
    assert!(a.set_config(&c, 5_000, true).is_err());
    assert_eq!(a.body(), c_body(&config_zero()));
}

#[test]
fn a_reconfiguration_goes_out_at_once_then_fast_again() {
    let mut rng = TestRng(33);
    let mut a = Advertiser::new(&config(), MAC, 0).unwrap();
    // past the initial advertisements: the periodic interval is 200-600 s
    let mut t = 0;
    for _ in 0..4 {
        t = a.poll_at();
        a.poll(t, &mut rng).unwrap();
    }
    assert!(a.poll_at() - t >= 200_000);
    // `reload` with ra_flags none and ra_slaac 0
    let mut c = config();
    c.managed = false;
    c.other = false;
    c.prefixes[0].autonomous = false;
    assert_eq!(a.reconfigure(&c, t + 10_000), Ok(true));
    assert_eq!(a.poll_at(), t + 10_000, "at once");
    let f = a.poll(t + 10_000, &mut rng).unwrap();
    let icmp = &f[14 + 40..];
    assert_eq!(icmp[5] & 0xc0, 0, "M and O cleared");
    let opts = options(icmp);
    let pi = &opts.iter().find(|o| o.0 == 3).unwrap().1;
    assert_eq!(pi[3] & 0x40, 0, "A cleared");
    // then as at start: the next ones at most 16 s apart
    let next = a.poll_at();
    assert!(next - (t + 10_000) <= MAX_INITIAL_INTERVAL_MS);
    // the same configuration again changes nothing
    assert_eq!(a.reconfigure(&c, t + 11_000), Ok(false));
    assert_eq!(a.poll_at(), next);
}

#[test]
fn the_final_advertisement_has_router_lifetime_and_prefix_lifetimes_0() {
    let mut c = config();
    c.router_lifetime_secs = 1800;
    let a = Advertiser::new(&c, MAC, 0).unwrap();
    let f = a.final_frame(&c).unwrap();
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    assert_eq!(ip.dst_addr(), ALL_NODES);
    assert_eq!(ip.hop_limit(), 255);
    match icmp_repr(&ip) {
        Icmpv6Repr::Ndisc(NdiscRepr::RouterAdvert {
            router_lifetime,
            prefix_info,
            ..
        }) => {
            assert_eq!(router_lifetime, Duration::from_secs(0));
            let p = prefix_info.unwrap();
            assert_eq!(p.valid_lifetime, Duration::from_secs(0));
            assert_eq!(p.preferred_lifetime, Duration::from_secs(0));
        }
        other => panic!("not an advertisement: {other:?}"),
    }
}

fn config_zero() -> RaConfig {
    let mut c = config();
    c.prefixes[0].valid_secs = 0;
    c.prefixes[0].preferred_secs = 0;
    c
}

fn c_body(c: &RaConfig) -> Vec<u8> {
    c.body(MAC).unwrap()
}

mod upstream;
