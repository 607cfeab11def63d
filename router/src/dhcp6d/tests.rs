//! The DHCPv6 server against well-behaved and misbehaving clients.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use super::config::{Dhcp6Config, NamedHost, MAX_LEASES_PER_CLIENT};
use super::lease::LeaseLine6;
use super::message::{is_to_server, msg, reply_frame, Frame, Message, ALL_SERVERS};
use super::options::{code, put, status, Options};
use super::server::{duid_mac, Dhcp6Server};
use crate::route6::Ipv6Net;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::net::Ipv6Addr;

const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const CLIENT_MAC: [u8; 6] = [0x52, 0x54, 0, 0x12, 0x34, 0x56];

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn cfg() -> Dhcp6Config {
    let mut c = Dhcp6Config::new("lan", Ipv6Net::new(a("fd00:ab:cd::"), 64).unwrap(), MAC);
    c.router_addrs = vec![a("fd00:ab:cd::1")];
    c.dns = vec![a("fd00:ab:cd::1")];
    c.domain = String::from("lan");
    c
}

fn server() -> Dhcp6Server {
    Dhcp6Server::new(cfg())
}

fn duid_ll(mac: [u8; 6]) -> Vec<u8> {
    let mut d = vec![0, 3, 0, 1];
    d.extend_from_slice(&mac);
    d
}

/// A client message builder.
struct Msg {
    b: Vec<u8>,
}

impl Msg {
    fn new(kind: u8) -> Msg {
        Msg {
            b: vec![kind, 0x12, 0x34, 0x56],
        }
    }
    fn opt(mut self, code_: u16, data: &[u8]) -> Msg {
        put(&mut self.b, code_, data);
        self
    }
    fn client(self, duid: &[u8]) -> Msg {
        self.opt(code::CLIENTID, duid)
    }
    fn server(self, duid: &[u8]) -> Msg {
        self.opt(code::SERVERID, duid)
    }
    fn ia_na(self, iaid: u32, addrs: &[Ipv6Addr]) -> Msg {
        let mut d = iaid.to_be_bytes().to_vec();
        d.extend_from_slice(&[0; 8]);
        for x in addrs {
            let mut ad = x.octets().to_vec();
            ad.extend_from_slice(&[0; 8]);
            put(&mut d, code::IAADDR, &ad);
        }
        self.opt(code::IA_NA, &d)
    }
    fn fqdn(self, name: &str) -> Msg {
        let mut d = vec![0x01];
        for l in name.split('.') {
            d.push(l.len() as u8);
            d.extend_from_slice(l.as_bytes());
        }
        self.opt(code::CLIENT_FQDN, &d)
    }
}

/// An IA_NA of a reply: IAID, (address, preferred, valid)s, its status, T1, T2.
type IaView = (u32, Vec<(Ipv6Addr, u32, u32)>, Option<u16>, u32, u32);

/// A reply, read back.
struct Reply {
    kind: u8,
    raw: Vec<u8>,
}

impl Reply {
    fn opts(&self) -> Options<'_> {
        Message::parse(&self.raw).unwrap().options
    }
    fn status(&self) -> Option<u16> {
        self.opts()
            .get(code::STATUS_CODE)
            .map(|d| u16::from_be_bytes([d[0], d[1]]))
    }
    /// (IAID, address with lifetimes, or the IA's status).
    fn ias(&self) -> Vec<IaView> {
        self.opts()
            .all(code::IA_NA)
            .map(|d| {
                let iaid = u32::from_be_bytes(d[..4].try_into().unwrap());
                let t1 = u32::from_be_bytes(d[4..8].try_into().unwrap());
                let t2 = u32::from_be_bytes(d[8..12].try_into().unwrap());
                let inner = Options::parse(&d[12..]).unwrap();
                let addrs = inner
                    .all(code::IAADDR)
                    .map(|x| {
                        (
                            Ipv6Addr::from(<[u8; 16]>::try_from(&x[..16]).unwrap()),
                            u32::from_be_bytes(x[16..20].try_into().unwrap()),
                            u32::from_be_bytes(x[20..24].try_into().unwrap()),
                        )
                    })
                    .collect();
                let st = inner
                    .get(code::STATUS_CODE)
                    .map(|x| u16::from_be_bytes([x[0], x[1]]));
                (iaid, addrs, st, t1, t2)
            })
            .collect()
    }
    fn addr(&self) -> Ipv6Addr {
        self.ias()[0].1[0].0
    }
}

fn send(s: &mut Dhcp6Server, m: Msg, now: u64) -> Option<Reply> {
    s.handle(&m.b, true, now)
        .map(|raw| Reply { kind: raw[0], raw })
}

/// Sends a message of `kind` with the client's id, the server's when given, and
/// one IA_NA (IAID, hinted addresses).
fn ask(
    s: &mut Dhcp6Server,
    kind: u8,
    duid: &[u8],
    sid: Option<&[u8]>,
    iaid: u32,
    addrs: &[Ipv6Addr],
    now: u64,
) -> Option<Reply> {
    let mut m = Msg::new(kind).client(duid);
    if let Some(sid) = sid {
        m = m.server(sid);
    }
    send(s, m.ia_na(iaid, addrs), now)
}

/// A Request at time 0 for one IA_NA (no hints) that names the client by FQDN.
fn request_named(s: &mut Dhcp6Server, duid: &[u8], name: &str) -> Reply {
    let sid = s.duid().to_vec();
    let m = Msg::new(msg::REQUEST).client(duid).server(&sid).fqdn(name);
    send(s, m.ia_na(1, &[]), 0).unwrap()
}

/// A client's frame to `dst` at `dst_mac` (port 546 to 547): built as the server
/// builds its own, then turned round and its UDP checksum made again.
fn client_frame(m: &[u8], dst_mac: [u8; 6], dst: Ipv6Addr) -> Vec<u8> {
    let client_ll = crate::ipv6::link_local_of(CLIENT_MAC);
    let mut f = reply_frame(m, CLIENT_MAC, dst_mac, dst);
    f[54..56].copy_from_slice(&546u16.to_be_bytes());
    f[56..58].copy_from_slice(&547u16.to_be_bytes());
    f[60..62].copy_from_slice(&[0, 0]);
    let s_ = crate::ipv6::pseudo_header_sum(client_ll, dst, 17, f.len() - 54);
    let c = !crate::checksum::fold(crate::checksum::sum(s_, &f[54..]));
    f[60..62].copy_from_slice(&c.to_be_bytes());
    f
}

/// Solicit then Request: the client's address.
fn bind(s: &mut Dhcp6Server, duid: &[u8], iaid: u32, now: u64) -> Ipv6Addr {
    let adv = ask(s, msg::SOLICIT, duid, None, iaid, &[], now).unwrap();
    assert_eq!(adv.kind, msg::ADVERTISE);
    let offered = adv.addr();
    let sid = s.duid().to_vec();
    let r = ask(s, msg::REQUEST, duid, Some(&sid), iaid, &[offered], now).unwrap();
    assert_eq!(r.kind, msg::REPLY);
    assert_eq!(r.addr(), offered);
    offered
}

#[test]
fn solicit_advertise_request_reply() {
    let mut s = server();
    let duid = duid_ll(CLIENT_MAC);
    let adv = ask(&mut s, msg::SOLICIT, &duid, None, 7, &[], 0).unwrap();
    assert_eq!(adv.kind, msg::ADVERTISE);
    assert_eq!(&adv.raw[1..4], &[0x12, 0x34, 0x56], "transaction id echoed");
    assert_eq!(adv.opts().get(code::CLIENTID), Some(&duid[..]));
    assert_eq!(
        adv.opts().get(code::SERVERID),
        Some(&[0, 3, 0, 1, 2, 0, 0, 0, 0, 1][..]),
        "DUID-LL of the LAN MAC"
    );
    assert_eq!(
        adv.opts().get(code::DNS_SERVERS),
        Some(&a("fd00:ab:cd::1").octets()[..])
    );
    assert_eq!(adv.opts().get(code::DOMAIN_LIST), Some(&b"\x03lan\x00"[..]));
    let ias = adv.ias();
    assert_eq!(ias.len(), 1);
    let (iaid, addrs, st, t1, t2) = &ias[0];
    assert_eq!((*iaid, *st, *t1, *t2), (7, None, 21_600, 34_560));
    let (addr, pref, valid) = addrs[0];
    assert_eq!((pref, valid), (43_200, 43_200), "leasetime 12h");
    assert!(Ipv6Net::new(a("fd00:ab:cd::"), 64).unwrap().contains(addr));
    let id = u128::from(addr) as u64;
    assert!(
        (0x100..=0xfff).contains(&id),
        "odhcpd's 12-bit host ids: {addr}"
    );
    // nothing reserved at Solicit
    assert_eq!(s.leases(0).count(), 0);
    // the same client is offered the same address again
    let again = ask(&mut s, msg::SOLICIT, &duid, None, 7, &[], 0).unwrap();
    assert_eq!(again.addr(), addr);
    let got = bind(&mut s, &duid, 7, 1000);
    assert_eq!(got, addr);
    let l: Vec<_> = s.leases(1000).collect();
    assert_eq!(l.len(), 1);
    assert_eq!(
        (l[0].iaid, l[0].addr, l[0].expires),
        (7, addr, Some(1000 + 43_200_000))
    );
    assert_eq!(s.counters().bound, 1);
    // another IAID of the same client is another lease, another address
    let other = bind(&mut s, &duid, 8, 1000);
    assert_ne!(other, addr);
    assert_eq!(s.leases(1000).count(), 2);
}

#[test]
fn rapid_commit_only_when_asked_and_allowed() {
    let duid = duid_ll(CLIENT_MAC);
    // (allowed, the answer, leases held): committed at once only when allowed
    for (allowed, kind, held) in [(true, msg::REPLY, 1), (false, msg::ADVERTISE, 0)] {
        let mut c = cfg();
        c.rapid_commit = allowed;
        let mut s = Dhcp6Server::new(c);
        let m = Msg::new(msg::SOLICIT)
            .client(&duid)
            .opt(code::RAPID_COMMIT, &[]);
        let r = send(&mut s, m.ia_na(1, &[]), 0).unwrap();
        assert_eq!(r.kind, kind);
        assert_eq!(r.opts().has(code::RAPID_COMMIT), allowed);
        assert_eq!(s.leases(0).count(), held, "committed at once: {allowed}");
    }
}

#[test]
fn renew_rebind_extend_and_refuse() {
    let mut s = server();
    let duid = duid_ll(CLIENT_MAC);
    let sid = s.duid().to_vec();
    let addr = bind(&mut s, &duid, 1, 0);
    let (t1, t2) = (20_000_000, 30_000_000);
    let r = ask(&mut s, msg::RENEW, &duid, Some(&sid), 1, &[addr], t1).unwrap();
    assert_eq!(r.ias()[0].1, vec![(addr, 43_200, 43_200)]);
    assert_eq!(
        s.leases(0).next().unwrap().expires,
        Some(20_000_000 + 43_200_000)
    );
    // Renew of an IA it does not hold: NoBinding
    let r = ask(&mut s, msg::RENEW, &duid, Some(&sid), 9, &[addr], t1).unwrap();
    assert_eq!(r.ias()[0].2, Some(status::NO_BINDING));
    // Rebind (no server id): extended too
    let r = ask(&mut s, msg::REBIND, &duid, None, 1, &[addr], t2).unwrap();
    assert_eq!(r.ias()[0].1, vec![(addr, 43_200, 43_200)]);
    // Rebind with an address of another link: lifetimes 0
    let elsewhere = a("2001:db8::5");
    let r = ask(&mut s, msg::REBIND, &duid, None, 5, &[elsewhere], t2).unwrap();
    assert_eq!(r.ias()[0].1, vec![(a("2001:db8::5"), 0, 0)]);
    // Rebind after the lease was lost (a new server state): given again if free
    let mut fresh = server();
    let r = ask(&mut fresh, msg::REBIND, &duid, None, 1, &[addr], 0).unwrap();
    assert_eq!(r.ias()[0].1, vec![(addr, 43_200, 43_200)]);
    assert_eq!(fresh.leases(0).count(), 1);
    // Renew to a server that never had it: NoBinding, nothing made
    let mut fresh = server();
    let fsid = fresh.duid().to_vec();
    let r = ask(&mut fresh, msg::RENEW, &duid, Some(&fsid), 1, &[addr], 0).unwrap();
    assert_eq!(r.ias()[0].2, Some(status::NO_BINDING));
    assert_eq!(fresh.leases(0).count(), 0);
    // a lease ends
    assert_eq!(s.leases(30_000_000 + 43_200_000).count(), 0);
}

#[test]
fn release_and_decline() {
    let mut s = server();
    let duid = duid_ll(CLIENT_MAC);
    let sid = s.duid().to_vec();
    let addr = bind(&mut s, &duid, 1, 0);
    let r = ask(&mut s, msg::RELEASE, &duid, Some(&sid), 1, &[addr], 1).unwrap();
    assert_eq!((r.kind, r.status()), (msg::REPLY, Some(status::SUCCESS)));
    assert_eq!(s.leases(1).count(), 0);
    // releasing again: NoBinding for the IA
    let r = ask(&mut s, msg::RELEASE, &duid, Some(&sid), 1, &[addr], 1).unwrap();
    assert_eq!(r.ias()[0].2, Some(status::NO_BINDING));
    // decline: the address stays out of the pool for a while
    let addr = bind(&mut s, &duid, 1, 2);
    let r = ask(&mut s, msg::DECLINE, &duid, Some(&sid), 1, &[addr], 3).unwrap();
    assert_eq!(r.status(), Some(status::SUCCESS));
    assert_eq!(s.leases(3).count(), 0);
    let next = bind(&mut s, &duid, 1, 4);
    assert_ne!(
        next, addr,
        "a declined address is not offered again at once"
    );
    // another client cannot release it
    let d2 = duid_ll([2; 6]);
    let r = ask(&mut s, msg::RELEASE, &d2, Some(&sid), 1, &[next], 5).unwrap();
    assert_eq!(r.ias()[0].2, Some(status::NO_BINDING));
    assert_eq!(s.leases(5).count(), 1);
}

#[test]
fn confirm_and_information_request() {
    let mut s = server();
    let duid = duid_ll(CLIENT_MAC);
    let (on_link, off_link) = (a("fd00:ab:cd::1234"), a("fd00:ab:ce::1234"));
    let r = ask(&mut s, msg::CONFIRM, &duid, None, 1, &[on_link], 0).unwrap();
    assert_eq!(r.status(), Some(status::SUCCESS));
    let r = ask(&mut s, msg::CONFIRM, &duid, None, 1, &[off_link], 0).unwrap();
    assert_eq!(r.status(), Some(status::NOT_ON_LINK));
    // Confirm without addresses: no reply
    assert!(ask(&mut s, msg::CONFIRM, &duid, None, 1, &[], 0).is_none());
    // stateless: DNS and the search list, no lease
    let r = send(&mut s, Msg::new(msg::INFORMATION_REQUEST), 0).unwrap();
    assert_eq!(r.kind, msg::REPLY);
    assert_eq!(
        r.opts().get(code::DNS_SERVERS),
        Some(&a("fd00:ab:cd::1").octets()[..])
    );
    assert_eq!(r.opts().get(code::DOMAIN_LIST), Some(&b"\x03lan\x00"[..]));
    assert!(r.ias().is_empty());
    assert_eq!(s.leases(0).count(), 0);
    // with IA options it is invalid (RFC 8415 §16.12)
    assert!(ask(&mut s, msg::INFORMATION_REQUEST, &duid, None, 1, &[], 0).is_none());
    assert_eq!(s.counters().dropped_invalid, 1);
}

#[test]
fn server_id_rules() {
    let mut s = server();
    let duid = duid_ll(CLIENT_MAC);
    let sid = s.duid().to_vec();
    // Solicit with a server id; Request without one or with another server's
    assert!(ask(&mut s, msg::SOLICIT, &duid, Some(&sid), 1, &[], 0).is_none());
    assert!(ask(&mut s, msg::REQUEST, &duid, None, 1, &[], 0).is_none());
    assert_eq!(s.counters().dropped_invalid, 2);
    let other = duid_ll([9; 6]);
    assert!(ask(&mut s, msg::REQUEST, &duid, Some(&other), 1, &[], 0).is_none());
    assert_eq!(s.counters().other_server, 1);
    assert_eq!(
        s.leases(0).count(),
        0,
        "a Request to another server binds nothing"
    );
    // no client id
    assert!(send(&mut s, Msg::new(msg::SOLICIT).ia_na(1, &[]), 0).is_none());
    // a client id too short or too long
    assert!(ask(&mut s, msg::SOLICIT, &[1], None, 1, &[], 0).is_none());
    assert!(ask(&mut s, msg::SOLICIT, &[1; 200], None, 1, &[], 0).is_none());
    assert_eq!(s.counters().dropped_invalid, 5);
    // server messages are not for us
    for k in [
        msg::ADVERTISE,
        msg::REPLY,
        msg::RECONFIGURE,
        msg::RELAY_FORW,
        msg::RELAY_REPL,
        0,
        200,
    ] {
        assert!(send(&mut s, Msg::new(k).client(&duid), 0).is_none());
    }
    assert_eq!(s.counters().dropped_wrong_type, 7);
}

#[test]
fn unicast_requests_get_use_multicast() {
    let mut s = server();
    let duid = duid_ll(CLIENT_MAC);
    let sid = s.duid().to_vec();
    let m = Msg::new(msg::REQUEST)
        .client(&duid)
        .server(&sid)
        .ia_na(1, &[]);
    let r = s.handle(&m.b, false, 0).unwrap();
    let r = Reply { kind: r[0], raw: r };
    assert_eq!(
        (r.kind, r.status()),
        (msg::REPLY, Some(status::USE_MULTICAST))
    );
    assert_eq!(s.leases(0).count(), 0);
    // a unicast Solicit is answered (it may be sent to a known server)
    let m = Msg::new(msg::SOLICIT).client(&duid).ia_na(1, &[]);
    assert!(s.handle(&m.b, false, 0).is_some());
}

#[test]
fn truncated_and_malformed_messages_are_dropped() {
    let mut s = server();
    let duid = duid_ll(CLIENT_MAC);
    let good = Msg::new(msg::SOLICIT)
        .client(&duid)
        .ia_na(1, &[a("fd00:ab:cd::123")])
        .b;
    // every truncation of a good message: dropped or answered, never a panic
    for n in 0..good.len() {
        let _ = s.handle(&good[..n], true, 0);
    }
    assert!(s.counters().dropped_malformed > 0);
    // an option claiming more than is there
    let mut bad = good.clone();
    bad[6] = 0xff;
    let before = s.counters().dropped_malformed;
    assert!(s.handle(&bad, true, 0).is_none());
    assert_eq!(s.counters().dropped_malformed, before + 1);
    // an IA_NA shorter than its fixed part; an IAADDR shorter than its own
    let r = Msg::new(msg::SOLICIT)
        .client(&duid)
        .opt(code::IA_NA, &[0, 0, 0, 1]);
    assert!(send(&mut s, r, 0).is_none());
    let mut ia = vec![0u8; 12];
    put(&mut ia, code::IAADDR, &[0xfd; 20]);
    let r = Msg::new(msg::SOLICIT).client(&duid).opt(code::IA_NA, &ia);
    assert!(send(&mut s, r, 0).is_none());
    // an IA whose inner option runs past it
    let mut ia = vec![0u8; 12];
    ia.extend_from_slice(&[0, 5, 0, 200]);
    let r = Msg::new(msg::SOLICIT).client(&duid).opt(code::IA_NA, &ia);
    assert!(send(&mut s, r, 0).is_none());
    // too many options
    let mut m = Msg::new(msg::SOLICIT).client(&duid);
    for _ in 0..100 {
        m = m.opt(999, &[]);
    }
    assert!(send(&mut s, m, 0).is_none());
    // unknown options are ignored
    let r = send(
        &mut s,
        Msg::new(msg::SOLICIT)
            .client(&duid)
            .opt(4242, b"whatever")
            .ia_na(1, &[]),
        0,
    )
    .unwrap();
    assert_eq!(r.kind, msg::ADVERTISE);
    // random bytes
    let mut x: u32 = 0x1234_5678;
    for _ in 0..2000 {
        let len = (x % 120) as usize;
        let mut b = Vec::with_capacity(len);
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b.push(x as u8);
        }
        let _ = s.handle(&b, true, 0);
        let _ = s.handle_frame(&b, 0);
    }
    assert_eq!(s.leases(0).count(), 0);
}

#[test]
fn a_flood_of_solicits_exhausts_nothing() {
    let mut s = server();
    let mut x: u64 = 1;
    for _ in 0..20_000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut duid = vec![0, 4];
        duid.extend_from_slice(&x.to_be_bytes());
        let r = ask(&mut s, msg::SOLICIT, &duid, None, 1, &[], 0).unwrap();
        assert_eq!(r.kind, msg::ADVERTISE);
    }
    assert_eq!(s.leases(0).count(), 0, "nothing held at Solicit");
    // a real client still gets its address
    bind(&mut s, &duid_ll(CLIENT_MAC), 1, 0);
}

#[test]
fn the_table_and_each_client_are_bounded() {
    let mut c = cfg();
    c.max_leases = 8;
    let mut s = Dhcp6Server::new(c);
    let sid = s.duid().to_vec();
    // one client with many IAs: at most MAX_LEASES_PER_CLIENT
    let duid = duid_ll(CLIENT_MAC);
    let mut m = Msg::new(msg::REQUEST).client(&duid).server(&sid);
    for iaid in 0..20 {
        m = m.ia_na(iaid, &[]);
    }
    let r = send(&mut s, m, 0).unwrap();
    let ias = r.ias();
    assert_eq!(ias.len(), 20);
    let given = ias.iter().filter(|i| !i.1.is_empty()).count();
    assert_eq!(given, MAX_LEASES_PER_CLIENT);
    assert!(ias
        .iter()
        .filter(|i| i.1.is_empty())
        .all(|i| i.2 == Some(status::NO_ADDRS_AVAIL)));
    // many clients: the table stops at its size
    for k in 0..20u8 {
        let d = duid_ll([2, 0, 0, 0, 1, k]);
        let _ = ask(&mut s, msg::REQUEST, &d, Some(&sid), 1, &[], 0);
    }
    assert_eq!(s.leases(0).count(), 8);
    let d = duid_ll([2, 0, 0, 0, 2, 0]);
    let adv = ask(&mut s, msg::SOLICIT, &d, None, 1, &[], 0).unwrap();
    assert_eq!(adv.status(), Some(status::NO_ADDRS_AVAIL));
    assert_eq!(adv.ias()[0].2, Some(status::NO_ADDRS_AVAIL));
    // once leases end there is room again
    let later = 43_200_001;
    let adv = ask(&mut s, msg::SOLICIT, &d, None, 1, &[], later).unwrap();
    assert_eq!(adv.ias()[0].2, None);
}

#[test]
fn addresses_avoid_the_router_and_taken_ones_and_honour_hints() {
    let mut s = server();
    let duid = duid_ll(CLIENT_MAC);
    let sid = s.duid().to_vec();
    // a hint in the pool is honoured; ::1 (the router), ::5 (outside the pool) and
    // another prefix are not
    let (router, abc) = (a("fd00:ab:cd::1"), a("fd00:ab:cd::abc"));
    let r = ask(&mut s, msg::SOLICIT, &duid, None, 1, &[router], 0).unwrap();
    assert_ne!(r.addr(), a("fd00:ab:cd::1"));
    let r = ask(&mut s, msg::SOLICIT, &duid, None, 1, &[abc], 0).unwrap();
    assert_eq!(r.addr(), a("fd00:ab:cd::abc"));
    let r = ask(&mut s, msg::REQUEST, &duid, Some(&sid), 1, &[abc], 0).unwrap();
    assert_eq!(r.addr(), a("fd00:ab:cd::abc"));
    // another client asking for the same address gets another one
    let d2 = duid_ll([2; 6]);
    let r = ask(&mut s, msg::SOLICIT, &d2, None, 1, &[abc], 0).unwrap();
    assert_ne!(r.addr(), a("fd00:ab:cd::abc"));
    // a pool of one address left: probes reach it
    let mut c = cfg();
    c.router_addrs.push(a("fd00:ab:cd::100"));
    let mut s = Dhcp6Server::new(c);
    for k in 0..50u8 {
        let got = bind(&mut s, &duid_ll([4, 0, 0, 0, 0, k]), 1, 0);
        assert_ne!(got, a("fd00:ab:cd::100"));
        assert_ne!(got, a("fd00:ab:cd::1"));
    }
    let mut all: Vec<_> = s.leases(0).map(|l| l.addr).collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 50, "no address given twice");
}

#[test]
fn hostnames_from_fqdn_but_never_over_a_configured_name() {
    let mut c = cfg();
    c.hosts.push(NamedHost {
        mac: CLIENT_MAC,
        name: String::from("nas"),
    });
    let mut s = Dhcp6Server::new(c);
    let sid = s.duid().to_vec();
    let duid = duid_ll(CLIENT_MAC);
    let r = request_named(&mut s, &duid, "evil.example");
    let addr = r.addr();
    assert_eq!(s.address_of("NAS", 0), Some(addr));
    assert_eq!(s.address_of("evil", 0), None);
    assert_eq!(s.name_of(addr, 0), Some("nas"));
    // a DUID-LLT with the same MAC is the same host
    let mut llt = vec![0, 1, 0, 1, 1, 2, 3, 4];
    llt.extend_from_slice(&CLIENT_MAC);
    assert_eq!(duid_mac(&llt), Some(CLIENT_MAC));
    // another client names itself by FQDN (first label, cleaned)
    let d2 = duid_ll([2; 6]);
    let r = request_named(&mut s, &d2, "lan1.home");
    assert_eq!(s.address_of("lan1", 0), Some(r.addr()));
    // a bad name is not taken; a truncated FQDN option neither
    let d3 = duid_ll([3; 6]);
    let r = request_named(&mut s, &d3, "bad_name");
    assert_eq!(s.name_of(r.addr(), 0), None);
    let r = send(
        &mut s,
        Msg::new(msg::REQUEST)
            .client(&d3)
            .server(&sid)
            .opt(code::CLIENT_FQDN, &[1, 40, b'x'])
            .ia_na(1, &[]),
        0,
    )
    .unwrap();
    assert_eq!(s.name_of(r.addr(), 0), None);
    // the name moves to the client that takes it last
    let d4 = duid_ll([5; 6]);
    let r = request_named(&mut s, &d4, "lan1");
    assert_eq!(s.address_of("lan1", 0), Some(r.addr()));
    assert_eq!(
        s.leases(0)
            .filter(|l| l.hostname.as_deref() == Some("lan1"))
            .count(),
        1
    );
}

#[test]
fn lease_file_round_trip() {
    let mut s = server();
    let d1 = duid_ll(CLIENT_MAC);
    let sid = s.duid().to_vec();
    let r = send(
        &mut s,
        Msg::new(msg::REQUEST)
            .client(&d1)
            .server(&sid)
            .fqdn("lan1")
            .ia_na(305_419_896, &[a("fd00:ab:cd::123")]),
        1000,
    )
    .unwrap();
    assert_eq!(r.addr(), a("fd00:ab:cd::123"));
    let mut text = String::new();
    s.write_lease_file(&mut text, 1000, 1_700_000_000).unwrap();
    assert_eq!(
        text,
        "duid 00:03:00:01:02:00:00:00:00:01\n\
         1700043201 305419896 fd00:ab:cd::123 lan1 00:03:00:01:52:54:00:12:34:56\n"
    );
    let mut t = server();
    let r = t.load_lease_lines(text.lines(), 0, 1_700_000_000);
    assert_eq!(
        (r.loaded, r.corrupt, r.expired),
        (1, 1, 0),
        "the duid line is not a lease"
    );
    assert_eq!(t.address_of("lan1", 0), Some(a("fd00:ab:cd::123")));
    // an ended lease, one of another prefix, one on the router, junk
    let r = t.load_lease_lines(
        [
            "1600000000 1 fd00:ab:cd::124 * 00:01",
            "1800000000 1 fd00:ab:ce::124 * 00:02",
            "1800000000 1 fd00:ab:cd::1 * 00:03",
            "1800000000 x fd00:ab:cd::125 * 00:04",
            "1800000000 1 fd00:ab:cd::126 bad_name 00:05",
            "1800000000 1 fd00:ab:cd::127 * 0",
        ]
        .into_iter(),
        0,
        1_700_000_000,
    );
    assert_eq!((r.loaded, r.corrupt, r.expired), (0, 5, 1));
    assert!(LeaseLine6::parse("0 1 fd00:ab:cd::130 * 00:03:00:01:02:02:02:02:02:02").is_some());
}

#[test]
fn frames_in_and_out() {
    let mut s = server();
    let duid = duid_ll(CLIENT_MAC);
    let m = Msg::new(msg::SOLICIT).client(&duid).ia_na(1, &[]).b;
    let client_ll = a("fe80::5054:ff:fe12:3456");
    let f = client_frame(&m, [0x33, 0x33, 0, 1, 0, 2], ALL_SERVERS);
    assert!(is_to_server(&f));
    let p = Frame::parse(&f).unwrap();
    assert_eq!(
        (p.src, p.dst, p.src_port, p.src_mac),
        (client_ll, ALL_SERVERS, 546, CLIENT_MAC)
    );
    let out = s.handle_frame(&f, 0).unwrap();
    assert_eq!(&out[0..6], &CLIENT_MAC, "to the client's MAC");
    assert_eq!(&out[6..12], &MAC);
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&out[38..54]).unwrap());
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&out[22..38]).unwrap());
    assert_eq!((src, dst), (crate::ipv6::link_local_of(MAC), client_ll));
    assert_eq!(&out[54..58], &[0x02, 0x23, 0x02, 0x22], "547 -> 546");
    assert!(crate::ipv6::l4_checksum_ok(src, dst, 17, &out[54..]));
    assert_eq!(out[62], msg::ADVERTISE);
    // a bad checksum, a zero checksum, a wrong UDP length, a multicast source
    let mut bad = f.clone();
    bad[70] ^= 1;
    assert!(s.handle_frame(&bad, 0).is_none());
    let mut bad = f.clone();
    bad[60..62].copy_from_slice(&[0, 0]);
    assert!(s.handle_frame(&bad, 0).is_none());
    let mut bad = f.clone();
    bad[58] = 0xff;
    assert!(s.handle_frame(&bad, 0).is_none());
    let mut bad = f.clone();
    bad[6] = 0x33;
    assert!(s.handle_frame(&bad, 0).is_none());
    assert_eq!(s.counters().dropped_malformed, 4);
    // every truncation of the frame
    for n in 0..f.len() {
        assert!(s.handle_frame(&f[..n], 0).is_none());
    }
    // a frame for another host (another MAC, another address), seen on a bridge
    let mut other = f.clone();
    other[0..6].copy_from_slice(&[2, 9, 9, 9, 9, 9]);
    assert!(s.handle_frame(&other, 0).is_none());
    assert_eq!(s.counters().other_server, 1);
    // unicast to the router's link-local address: answered
    let ll = crate::ipv6::link_local_of(MAC);
    let m = Msg::new(msg::INFORMATION_REQUEST).b;
    let u = client_frame(&m, MAC, ll);
    assert!(s.handle_frame(&u, 0).is_some());
    // to another group's multicast MAC
    let mut g = u.clone();
    g[0..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
    assert!(s.handle_frame(&g, 0).is_none());
    assert_eq!(s.counters().other_server, 2);
}

#[test]
fn a_reconfiguration_keeps_the_leases_it_still_serves_and_drops_the_rest() {
    let mut s = server();
    let duid = duid_ll(CLIENT_MAC);
    let addr = bind(&mut s, &duid, 1, 0);
    // the same prefix, another leasetime and DNS: the lease stays, the next
    // reply carries the new settings
    let mut c = cfg();
    c.lease_secs = 3600;
    assert_eq!(s.reconfigure(c.clone(), 1000), 0);
    assert_eq!(s.leases(1000).count(), 1);
    let sid = s.duid().to_vec();
    let r = ask(&mut s, msg::RENEW, &duid, Some(&sid), 1, &[addr], 2000).unwrap();
    assert_eq!(r.ias()[0].1[0], (addr, 3600, 3600), "the new leasetime");
    assert_eq!(s.counters().bound, 2, "the counters stay");
    // another /64 (ip6hint): the lease is not of it, dropped; its Renew gets
    // NoBinding and the client a new address
    c.prefix = Ipv6Net::new(a("fd00:ab:cd:5::"), 64).unwrap();
    c.router_addrs = vec![a("fd00:ab:cd:5::1")];
    assert_eq!(s.reconfigure(c, 3000), 1);
    assert_eq!(s.leases(3000).count(), 0);
    let r = ask(&mut s, msg::RENEW, &duid, Some(&sid), 1, &[addr], 4000).unwrap();
    assert_eq!(r.ias()[0].2, Some(status::NO_BINDING));
    let new = bind(&mut s, &duid, 1, 5000);
    assert!(Ipv6Net::new(a("fd00:ab:cd:5::"), 64).unwrap().contains(new));
}
