//! The LAN's /64 of the delegation: picked as ip6assign/ip6hint say, announced
//! with the delegation's remaining lifetimes, deprecated when it goes.

use core::net::Ipv6Addr;

use crate::dhcp6c::delegation::*;
use crate::route6::Ipv6Net;

fn net(s: &str, len: u8) -> Ipv6Net {
    Ipv6Net::new(s.parse().unwrap(), len).unwrap()
}

#[test]
fn ip6assign_and_ip6hint_pick_the_subnet_and_the_router_is_1() {
    let pd = net("2001:db8:7700:100::", 56);
    assert_eq!(
        lan_subnet(pd, 60, None),
        Some((
            net("2001:db8:7700:100::", 64),
            "2001:db8:7700:100::1".parse().unwrap()
        ))
    );
    assert_eq!(
        lan_subnet(pd, 64, Some(0x2a)).unwrap().0,
        net("2001:db8:7700:12a::", 64)
    );
    assert_eq!(
        lan_subnet(pd, 60, Some(0xf)).unwrap().0,
        net("2001:db8:7700:1f0::", 64)
    );
    // does not fit: a hint beyond the bits, a /60 of a /64, over /64
    assert_eq!(lan_subnet(pd, 60, Some(0x10)), None);
    assert_eq!(lan_subnet(net("2001:db8::", 64), 60, None), None);
    assert_eq!(lan_subnet(pd, 65, None), None);
    assert_eq!(
        lan_subnet(net("2001:db8::", 64), 64, None).unwrap().0,
        net("2001:db8::", 64)
    );
}

#[test]
fn announced_lifetimes_follow_the_delegation_and_never_exceed_it() {
    let mut l = LanPrefix::default();
    let c = l.update(
        Some((net("2001:db8:7700:100::", 56), 3600, 7200)),
        60,
        None,
        1000,
    );
    let lan = net("2001:db8:7700:100::", 64);
    assert_eq!(
        c.added,
        Some((lan, "2001:db8:7700:100::1".parse::<Ipv6Addr>().unwrap()))
    );
    assert_eq!(c.removed, None);
    let p = l.ra_prefixes(1000);
    assert_eq!(
        (p[0].prefix, p[0].preferred_secs, p[0].valid_secs),
        (lan, 3600, 7200)
    );
    assert!(p[0].on_link && p[0].autonomous);
    // 10 minutes later, the lifetimes left
    let p = l.ra_prefixes(601_000);
    assert_eq!((p[0].preferred_secs, p[0].valid_secs), (3000, 6600));
    // past the preferred lifetime: 0, still valid
    let p = l.ra_prefixes(3_601_000 + 5000);
    assert_eq!((p[0].preferred_secs, p[0].valid_secs), (0, 3595));
    // a renewal with the same prefix changes no address or route
    let c = l.update(
        Some((net("2001:db8:7700:100::", 56), 3600, 7200)),
        60,
        None,
        4_000_000,
    );
    assert_eq!(c, Change::default());
    assert_eq!(l.ra_prefixes(4_000_000)[0].valid_secs, 7200);
}

#[test]
fn a_new_prefix_deprecates_the_old_with_lifetime_0_then_forgets_it() {
    let mut l = LanPrefix::default();
    l.update(
        Some((net("2001:db8:7700:100::", 56), 3600, 7200)),
        64,
        None,
        0,
    );
    let c = l.update(
        Some((net("2001:db8:7700:200::", 56), 3600, 7200)),
        64,
        None,
        10_000,
    );
    let old = net("2001:db8:7700:100::", 64);
    let new = net("2001:db8:7700:200::", 64);
    assert_eq!(c.removed.unwrap().0, old);
    assert_eq!(c.added.unwrap().0, new);
    let p = l.ra_prefixes(10_000);
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].prefix, p[0].valid_secs), (new, 7200));
    assert_eq!(
        (p[1].prefix, p[1].preferred_secs, p[1].valid_secs),
        (old, 0, 0)
    );
    assert!(!l.expire(10_000 + DEPRECATE_MS - 1));
    assert!(l.expire(10_000 + DEPRECATE_MS));
    assert_eq!(l.ra_prefixes(10_000 + DEPRECATE_MS).len(), 1);
    // the delegation ends: the /64 goes, deprecated
    let c = l.update(None, 64, None, 20_000);
    assert_eq!(c.removed.unwrap().0, new);
    assert_eq!(l.current(), None);
    let p = l.ra_prefixes(20_000);
    assert_eq!((p[0].prefix, p[0].valid_secs), (new, 0));
}

#[test]
fn deprecated_prefixes_are_bounded() {
    let mut l = LanPrefix::default();
    for i in 0..20u16 {
        l.update(
            Some((
                Ipv6Net::new(Ipv6Addr::new(0x2001, 0xdb8, i, 0, 0, 0, 0, 0), 48).unwrap(),
                60,
                60,
            )),
            64,
            None,
            u64::from(i),
        );
    }
    assert_eq!(l.ra_prefixes(20).len(), 1 + MAX_DEPRECATED);
}
