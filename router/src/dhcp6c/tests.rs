//! DHCPv6 client tests against a fake server that behaves, and one that does not.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::net::Ipv6Addr;

use super::client::*;
use super::message::*;
use crate::ra::tests::TestRng;
use crate::route6::Ipv6Net;
use crate::Millis;

const MAC: [u8; 6] = [0x00, 0x16, 0x3e, 0x0a, 0x0b, 0x0c];
const SERVER: &[u8] = &[0, 3, 0, 1, 2, 0, 0, 0, 0, 1];
const OTHER_SERVER: &[u8] = &[0, 3, 0, 1, 2, 0, 0, 0, 0, 2];

fn cfg() -> ClientConfig {
    ClientConfig {
        mac: MAC,
        reqaddress: ReqAddress::Try,
        reqprefix: ReqPrefix::Auto,
        rapid_commit: false,
    }
}

fn addr() -> Ipv6Addr {
    "2001:db8:77::1234".parse().unwrap()
}

fn pd() -> Ipv6Net {
    Ipv6Net::new("2001:db8:7700:100::".parse().unwrap(), 56).unwrap()
}

/// What the fake server puts in its answers.
#[derive(Clone)]
struct Answer {
    server: Vec<u8>,
    na: Option<(u32, u32, Option<u16>, Vec<IaAddr>)>,
    pd: Option<(u32, u32, Option<u16>, Vec<IaPrefix>)>,
    status: Option<u16>,
    preference: Option<u8>,
    dns: Vec<Ipv6Addr>,
    domains: Vec<u8>,
    rapid: bool,
}

fn good() -> Answer {
    Answer {
        server: SERVER.to_vec(),
        na: Some((
            1800,
            2880,
            None,
            vec![IaAddr {
                addr: addr(),
                preferred: 3600,
                valid: 7200,
            }],
        )),
        pd: Some((
            1800,
            2880,
            None,
            vec![IaPrefix {
                prefix: pd(),
                preferred: 3600,
                valid: 7200,
            }],
        )),
        status: None,
        preference: None,
        dns: vec!["2001:db8:77::53".parse().unwrap()],
        domains: b"\x03wan\x07example\x00".to_vec(),
        rapid: false,
    }
}

fn status_body(s: u16) -> Vec<u8> {
    let mut b = s.to_be_bytes().to_vec();
    b.extend_from_slice(b"msg");
    b
}

fn ia(t1: u32, t2: u32, status: Option<u16>, mut inner: Vec<u8>) -> Vec<u8> {
    let mut b = IAID.to_be_bytes().to_vec();
    b.extend_from_slice(&t1.to_be_bytes());
    b.extend_from_slice(&t2.to_be_bytes());
    if let Some(s) = status {
        let sb = status_body(s);
        b.extend_from_slice(&OPT_STATUS_CODE.to_be_bytes());
        b.extend_from_slice(&(sb.len() as u16).to_be_bytes());
        b.extend_from_slice(&sb);
    }
    b.append(&mut inner);
    b
}

/// The server's answer of type `kind` to the client message `to`.
fn answer(kind: u8, to: &Message, a: &Answer) -> Vec<u8> {
    let mut b = Builder::new(kind, to.xid);
    b.option(OPT_CLIENTID, to.client_id.as_deref().unwrap());
    b.option(OPT_SERVERID, &a.server);
    if let Some(s) = a.status {
        b.option(OPT_STATUS_CODE, &status_body(s));
    }
    if let Some(p) = a.preference {
        b.option(OPT_PREFERENCE, &[p]);
    }
    if a.rapid {
        b.option(OPT_RAPID_COMMIT, &[]);
    }
    if let (Some((t1, t2, st, addrs)), Some(_)) = (&a.na, &to.ia_na) {
        let inner = ia_na_body(0, addrs)[12..].to_vec();
        b.option(OPT_IA_NA, &ia(*t1, *t2, *st, inner));
    }
    if let (Some((t1, t2, st, ps)), Some(_)) = (&a.pd, &to.ia_pd) {
        let inner = ia_pd_body(0, ps)[12..].to_vec();
        b.option(OPT_IA_PD, &ia(*t1, *t2, *st, inner));
    }
    if !a.dns.is_empty() {
        let d: Vec<u8> = a.dns.iter().flat_map(|x| x.octets()).collect();
        b.option(OPT_DNS_SERVERS, &d);
    }
    if !a.domains.is_empty() {
        b.option(OPT_DOMAIN_LIST, &a.domains);
    }
    b.finish()
}

/// Polls until the client sends; the message and when.
fn next_send(c: &mut Client, now: &mut Millis, rng: &mut TestRng) -> (Message, Vec<u8>) {
    for _ in 0..10_000 {
        if let Some(p) = c.poll(*now, rng) {
            return (parse(&p).unwrap(), p);
        }
        *now = c.poll_at().expect("the client has nothing to do").max(*now);
    }
    panic!("the client never sent");
}

/// A client of `cfg` starting at time 0, with random numbers from `seed`.
fn client(cfg: ClientConfig, seed: u32) -> (Client, Millis, TestRng) {
    let mut rng = TestRng(seed);
    let c = Client::new(cfg, 0, &mut rng);
    (c, 0, rng)
}

/// Solicit → Advertise → Request → Reply, the server answering with `a`.
fn bind_with(c: &mut Client, now: &mut Millis, rng: &mut TestRng, a: &Answer) {
    let (sol, _) = next_send(c, now, rng);
    c.received(&answer(ADVERTISE, &sol, a), *now, rng);
    let (req, _) = next_send(c, now, rng);
    c.received(&answer(REPLY, &req, a), *now, rng);
}

/// Declines our address; the server's Reply ends it, and `wait` ms after that
/// Reply the client's next message (a Request, or a Solicit).
fn decline_then_next(c: &mut Client, now: &mut Millis, rng: &mut TestRng, wait: Millis) -> Message {
    assert!(c.decline(addr(), *now, rng));
    let (dec, _) = next_send(c, now, rng);
    c.received(&answer(REPLY, &dec, &good()), *now + 10, rng);
    *now += 10 + wait;
    next_send(c, now, rng).0
}

/// Solicit → Advertise → Request → Reply with the good server.
fn bound(cfg: ClientConfig) -> (Client, Millis, TestRng) {
    let mut rng = TestRng(7);
    let mut now = 1_000;
    let mut c = Client::new(cfg, now, &mut rng);
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(sol.msg_type, SOLICIT);
    c.received(&answer(ADVERTISE, &sol, &good()), now + 10, &mut rng);
    let (req, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(req.msg_type, REQUEST);
    c.received(&answer(REPLY, &req, &good()), now + 10, &mut rng);
    assert_eq!(c.state(), State::Bound);
    (c, now + 10, rng)
}

#[test]
fn solicit_asks_for_an_address_a_prefix_and_dns_with_our_duid_ll() {
    let (mut c, mut now, mut rng) = client(
        ClientConfig {
            reqprefix: ReqPrefix::Len(56),
            rapid_commit: true,
            ..cfg()
        },
        1,
    );
    let (m, raw) = next_send(&mut c, &mut now, &mut rng);
    assert!(now <= SOL_MAX_DELAY_MS, "first Solicit within 1 s: {now}");
    assert_eq!(m.msg_type, SOLICIT);
    assert_eq!(
        m.client_id.as_deref(),
        Some(&[0, 3, 0, 1, 0x00, 0x16, 0x3e, 0x0a, 0x0b, 0x0c][..])
    );
    assert!(m.server_id.is_none());
    assert!(m.rapid_commit);
    assert_eq!(m.ia_na.as_ref().unwrap().iaid, IAID);
    assert_eq!(m.ia_pd.as_ref().unwrap().iaid, IAID);
    // the /56 hint: ::/56 with lifetimes 0 (the parser only keeps usable prefixes,
    // so look at the bytes)
    let hint = [&[0, 0, 0, 0, 0, 0, 0, 0, 56][..], &[0; 16]].concat();
    assert!(raw.windows(hint.len()).any(|w| w == hint.as_slice()));
    // ORO asks for 23 and 24; elapsed time 0 in the first message
    assert!(raw.windows(8).any(|w| w == [0, 6, 0, 4, 0, 23, 0, 24]));
    assert!(raw.windows(6).any(|w| w == [0, 8, 0, 2, 0, 0]));
}

#[test]
fn the_four_messages_bind_an_address_a_prefix_dns_and_domains() {
    let (mut c, now, _) = bound(cfg());
    assert!(c.take_changed());
    assert!(!c.take_changed());
    let l = c.lease().unwrap();
    assert_eq!(l.server_id, SERVER);
    assert_eq!(l.address.unwrap().addr, addr());
    assert_eq!(l.prefix.unwrap().prefix, pd());
    assert_eq!(l.dns, vec!["2001:db8:77::53".parse::<Ipv6Addr>().unwrap()]);
    assert_eq!(l.domains, vec![String::from("wan.example")]);
    assert_eq!((l.t1, l.t2), (1800, 2880));
    assert_eq!(
        l.prefix_left(now + 600_000).map(|x| (x.1, x.2)),
        Some((3000, 6600))
    );
    assert_eq!(c.counters().bound, 1);
}

#[test]
fn rapid_commit_binds_on_the_reply_to_the_solicit() {
    let (mut c, mut now, mut rng) = client(
        ClientConfig {
            rapid_commit: true,
            ..cfg()
        },
        3,
    );
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    let mut a = good();
    a.rapid = true;
    c.received(&answer(REPLY, &sol, &a), now, &mut rng);
    assert_eq!(c.state(), State::Bound);
    // without Rapid Commit asked, such a Reply is not taken
    let mut c = Client::new(cfg(), 0, &mut rng);
    let mut now = 0;
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    c.received(&answer(REPLY, &sol, &a), now, &mut rng);
    assert_eq!(c.state(), State::Soliciting);
}

#[test]
fn a_wrong_transaction_id_another_client_or_no_server_id_is_dropped() {
    let (mut c, mut now, mut rng) = client(cfg(), 5);
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    let mut other = sol.clone();
    other.xid ^= 1;
    c.received(&answer(ADVERTISE, &other, &good()), now, &mut rng);
    other = sol.clone();
    other.client_id = Some(vec![0, 3, 0, 1, 1, 2, 3, 4, 5, 6]);
    c.received(&answer(ADVERTISE, &other, &good()), now, &mut rng);
    let mut no_sid = answer(ADVERTISE, &sol, &good());
    // drop the server id option (the second option: after 4 + 4 + 10 bytes)
    no_sid.drain(18..18 + 4 + SERVER.len());
    c.received(&no_sid, now, &mut rng);
    let k = c.counters();
    assert_eq!((k.wrong_xid, k.wrong_client, k.wrong_server), (1, 1, 1));
    assert_eq!(k.advertises, 0);
    // nothing taken: the client keeps soliciting and requests nothing
    let (m, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(m.msg_type, SOLICIT);
}

#[test]
fn truncated_and_malformed_messages_are_dropped_and_counted() {
    let (mut c, mut now, mut rng) = client(cfg(), 9);
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    let full = answer(ADVERTISE, &sol, &good());
    for cut in 0..full.len() {
        c.received(&full[..cut], now, &mut rng);
    }
    // an option length pointing past the end, nested
    let mut bad = full.clone();
    let at = bad.windows(2).position(|w| w == [0, 25]).unwrap();
    bad[at + 2] = 0xff;
    c.received(&bad, now, &mut rng);
    // an IAADDR too short inside a well-formed IA_NA
    let mut b = Builder::new(ADVERTISE, sol.xid);
    b.option(OPT_CLIENTID, c.duid());
    b.option(OPT_SERVERID, SERVER);
    b.option(OPT_IA_NA, &ia(0, 0, None, vec![0, 5, 0, 4, 1, 2, 3, 4]));
    c.received(&b.finish(), now, &mut rng);
    // DNS servers not a multiple of 16; a bad domain label; a DUID too long
    for (code, body) in [
        (OPT_DNS_SERVERS, vec![0u8; 17]),
        (OPT_DOMAIN_LIST, vec![64u8; 70]),
        (OPT_SERVERID, vec![0u8; MAX_DUID + 1]),
    ] {
        let mut b = Builder::new(ADVERTISE, sol.xid);
        b.option(OPT_CLIENTID, c.duid());
        b.option(code, &body);
        c.received(&b.finish(), now, &mut rng);
    }
    // too many options
    let mut b = Builder::new(ADVERTISE, sol.xid);
    for _ in 0..=MAX_OPTIONS {
        b.option(999, &[]);
    }
    c.received(&b.finish(), now, &mut rng);
    // every message is accounted for: cuts at an option boundary are whole (shorter)
    // messages, the rest malformed or, under the client id, naming no client
    let k = c.counters();
    let sent = full.len() as u64 + 6;
    assert_eq!(
        k.advertises + k.malformed + k.wrong_client + k.wrong_server,
        sent,
        "{k:?}"
    );
    assert!(k.advertises <= 5, "{k:?}");
    assert!(k.malformed >= full.len() as u64 - 18, "{k:?}");
    assert_eq!(c.state(), State::Soliciting);
    let before = c.counters().advertises;
    // the whole message is still taken afterwards
    c.received(&full, now, &mut rng);
    assert_eq!(c.counters().advertises, before + 1);
}

#[test]
fn no_reply_retransmits_with_backoff_capped_at_mrt() {
    let (mut c, mut now, mut rng) = client(cfg(), 11);
    let mut times = Vec::new();
    let mut xids = Vec::new();
    for _ in 0..20 {
        let (m, raw) = next_send(&mut c, &mut now, &mut rng);
        assert_eq!(m.msg_type, SOLICIT);
        times.push(now);
        xids.push(m.xid);
        // elapsed time grows (centiseconds, capped)
        let at = raw.windows(4).position(|w| w == [0, 8, 0, 2]).unwrap();
        let elapsed = u16::from_be_bytes([raw[at + 4], raw[at + 5]]);
        assert_eq!(u64::from(elapsed), ((now - times[0]) / 10).min(0xffff));
    }
    assert!(xids.iter().all(|x| *x == xids[0]), "one transaction");
    let gaps: Vec<Millis> = times.windows(2).map(|w| w[1] - w[0]).collect();
    // first RT in (1 s, 1.1 s]; then about double; never over MRT + 10 %
    assert!(gaps[0] > 1000 && gaps[0] <= 1100, "{gaps:?}");
    for w in gaps.windows(2) {
        if w[1] < SOL.mrt * 9 / 10 {
            assert!(w[1] >= w[0] * 19 / 10 && w[1] <= w[0] * 21 / 10, "{gaps:?}");
        }
    }
    assert!(gaps.iter().all(|g| *g <= SOL.mrt * 11 / 10), "{gaps:?}");
    assert!(*gaps.last().unwrap() >= SOL.mrt * 9 / 10, "{gaps:?}");
    assert_eq!(c.counters().retransmits, 19);
}

#[test]
fn an_unanswered_request_is_given_up_after_ten_and_the_client_solicits_again() {
    let (mut c, mut now, mut rng) = client(cfg(), 13);
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    c.received(&answer(ADVERTISE, &sol, &good()), now, &mut rng);
    let mut requests = 0;
    loop {
        let (m, _) = next_send(&mut c, &mut now, &mut rng);
        if m.msg_type == SOLICIT {
            break;
        }
        assert_eq!(m.msg_type, REQUEST);
        assert_eq!(m.server_id.as_deref(), Some(SERVER));
        requests += 1;
    }
    assert_eq!(requests, REQ.mrc);
    assert_eq!(c.counters().gave_up, 1);
}

#[test]
fn no_addrs_avail_with_try_takes_the_prefix_alone() {
    let (mut c, mut now, mut rng) = client(cfg(), 17);
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    let mut a = good();
    a.na = Some((0, 0, Some(STATUS_NO_ADDRS_AVAIL), vec![]));
    c.received(&answer(ADVERTISE, &sol, &a), now, &mut rng);
    let (req, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(req.msg_type, REQUEST);
    c.received(&answer(REPLY, &req, &a), now, &mut rng);
    let l = c.lease().unwrap();
    assert!(l.address.is_none());
    assert_eq!(l.prefix.unwrap().prefix, pd());
    assert_eq!(c.counters().no_addrs_avail, 2);
}

#[test]
fn no_addrs_avail_with_force_and_no_prefix_avail_alone_are_ignored() {
    for (reqaddress, na, pd) in [
        (ReqAddress::Force, Some(STATUS_NO_ADDRS_AVAIL), None),
        (ReqAddress::None, None, Some(STATUS_NO_PREFIX_AVAIL)),
    ] {
        let (mut c, mut now, mut rng) = client(
            ClientConfig {
                reqaddress,
                ..cfg()
            },
            19,
        );
        let (sol, _) = next_send(&mut c, &mut now, &mut rng);
        let mut a = good();
        if let Some(s) = na {
            a.na = Some((0, 0, Some(s), vec![]));
        }
        if let Some(s) = pd {
            a.pd = Some((0, 0, Some(s), vec![]));
        }
        c.received(&answer(ADVERTISE, &sol, &a), now, &mut rng);
        assert_eq!(c.counters().unusable, 1);
        let (m, _) = next_send(&mut c, &mut now, &mut rng);
        assert_eq!(m.msg_type, SOLICIT, "{reqaddress:?}");
        if reqaddress == ReqAddress::None {
            assert!(m.ia_na.is_none());
            assert_eq!(c.counters().no_prefix_avail, 1);
        }
    }
}

#[test]
fn the_best_preference_wins_and_255_is_taken_at_once() {
    let (mut c, mut now, mut rng) = client(cfg(), 23);
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    let mut low = good();
    low.server = OTHER_SERVER.to_vec();
    low.preference = Some(10);
    let mut high = good();
    high.preference = Some(200);
    c.received(&answer(ADVERTISE, &sol, &low), now, &mut rng);
    c.received(&answer(ADVERTISE, &sol, &high), now, &mut rng);
    assert!(
        c.poll(now + 1, &mut rng).is_none(),
        "waits for the first RT"
    );
    let (req, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(req.msg_type, REQUEST);
    assert_eq!(req.server_id.as_deref(), Some(SERVER));
    // a Reply from the other server is not the one asked
    c.received(&answer(REPLY, &req, &low), now, &mut rng);
    assert_eq!(c.counters().wrong_server, 1);
    assert_eq!(c.state(), State::Requesting);

    let mut c = Client::new(cfg(), 0, &mut rng);
    let mut now = 0;
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    let mut top = low.clone();
    top.preference = Some(255);
    c.received(&answer(ADVERTISE, &sol, &top), now, &mut rng);
    assert_eq!(c.state(), State::Requesting);
}

#[test]
fn renew_at_t1_rebind_at_t2_and_the_lease_is_lost_at_the_end() {
    let (mut c, start, mut rng) = bound(cfg());
    c.take_changed();
    let mut now = start;
    let (renew, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(renew.msg_type, RENEW);
    assert_eq!(now, start + 1_800_000);
    assert_eq!(renew.server_id.as_deref(), Some(SERVER));
    assert_eq!(renew.ia_na.unwrap().entries[0].addr, addr());
    assert_eq!(renew.ia_pd.unwrap().entries[0].prefix, pd());
    // no answer: Renews until T2, then Rebinds without a server id
    let rebind = loop {
        let (m, _) = next_send(&mut c, &mut now, &mut rng);
        if m.msg_type != RENEW {
            break m;
        }
        assert!(now < start + 2_880_000);
    };
    assert_eq!(rebind.msg_type, REBIND);
    assert!(rebind.server_id.is_none());
    assert!(now >= start + 2_880_000);
    // no answer still: the lease ends with the valid lifetimes, then Solicit
    let sol = loop {
        let (m, _) = next_send(&mut c, &mut now, &mut rng);
        if m.msg_type != REBIND {
            break m;
        }
    };
    assert_eq!(sol.msg_type, SOLICIT);
    assert!(now >= start + 7_200_000);
    assert!(c.lease().is_none());
    assert!(c.take_changed());
    assert_eq!(c.counters().lost, 1);
}

#[test]
fn a_renew_reply_extends_the_lifetimes_and_a_new_prefix_replaces_the_old() {
    let (mut c, start, mut rng) = bound(cfg());
    let mut now = start;
    let (renew, _) = next_send(&mut c, &mut now, &mut rng);
    let mut a = good();
    let newp = Ipv6Net::new("2001:db8:7700:200::".parse().unwrap(), 56).unwrap();
    a.pd.as_mut().unwrap().3[0].prefix = newp;
    a.dns.clear();
    c.received(&answer(REPLY, &renew, &a), now, &mut rng);
    let l = c.lease().unwrap();
    assert_eq!(l.at, now);
    assert_eq!(l.prefix.unwrap().prefix, newp);
    assert_eq!(l.dns.len(), 1, "DNS servers kept when the Reply has none");
    assert_eq!(c.state(), State::Bound);
    assert_eq!(c.poll_at(), Some(now + 1_800_000));
}

#[test]
fn a_renew_reply_naming_the_old_prefix_with_lifetime_0_and_a_new_one_takes_the_new() {
    let (mut c, start, mut rng) = bound(cfg());
    let mut now = start;
    let (renew, _) = next_send(&mut c, &mut now, &mut rng);
    let newp = Ipv6Net::new("2001:db8:7700:300::".parse().unwrap(), 56).unwrap();
    let mut a = good();
    a.pd.as_mut().unwrap().3 = vec![
        IaPrefix {
            prefix: pd(),
            preferred: 0,
            valid: 0,
        },
        IaPrefix {
            prefix: newp,
            preferred: 3600,
            valid: 7200,
        },
    ];
    c.received(&answer(REPLY, &renew, &a), now, &mut rng);
    assert_eq!(c.lease().unwrap().prefix.unwrap().prefix, newp);
}

#[test]
fn no_binding_in_a_renew_reply_sends_a_request() {
    let (mut c, start, mut rng) = bound(cfg());
    let mut now = start;
    let (renew, _) = next_send(&mut c, &mut now, &mut rng);
    let mut a = good();
    a.na = Some((0, 0, Some(STATUS_NO_BINDING), vec![]));
    c.received(&answer(REPLY, &renew, &a), now, &mut rng);
    let (req, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(req.msg_type, REQUEST);
    assert_eq!(req.server_id.as_deref(), Some(SERVER));
    assert_eq!(req.ia_pd.unwrap().entries[0].prefix, pd());
}

#[test]
fn an_unspec_fail_reply_keeps_the_exchange_going() {
    let (mut c, mut now, mut rng) = client(cfg(), 29);
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    c.received(&answer(ADVERTISE, &sol, &good()), now, &mut rng);
    let (req, _) = next_send(&mut c, &mut now, &mut rng);
    let mut a = good();
    a.status = Some(STATUS_UNSPEC_FAIL);
    c.received(&answer(REPLY, &req, &a), now, &mut rng);
    assert_eq!(c.state(), State::Requesting);
    assert_eq!(c.counters().other_status, 1);
    let (again, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!((again.msg_type, again.xid), (REQUEST, req.xid));
}

#[test]
fn zero_or_absurd_t1_t2_fall_back_to_the_preferred_lifetime() {
    let (mut c, mut now, mut rng) = client(cfg(), 31);
    let mut a = good();
    a.na.as_mut().unwrap().0 = 0;
    a.pd.as_mut().unwrap().0 = 5000; // T1 over T2: ignored
    bind_with(&mut c, &mut now, &mut rng, &a);
    let l = c.lease().unwrap();
    assert_eq!((l.t1, l.t2), (1800, 2880));
    // lifetimes of 0 s: T1 is never under the floor
    let mut a = good();
    a.na = None;
    a.pd = Some((
        0,
        0,
        None,
        vec![IaPrefix {
            prefix: pd(),
            preferred: 0,
            valid: 30,
        }],
    ));
    let mut c = Client::new(cfg(), 0, &mut rng);
    let mut now = 0;
    bind_with(&mut c, &mut now, &mut rng, &a);
    assert_eq!(c.lease().unwrap().t1, MIN_T1_SECS);
}

#[test]
fn release_names_what_is_held_and_the_client_goes_idle() {
    let (mut c, now, mut rng) = bound(cfg());
    let r = parse(&c.release(&mut rng).unwrap()).unwrap();
    assert_eq!(r.msg_type, RELEASE);
    assert_eq!(r.server_id.as_deref(), Some(SERVER));
    assert_eq!(r.ia_na.unwrap().entries[0].addr, addr());
    assert_eq!(r.ia_pd.unwrap().entries[0].prefix, pd());
    assert!(c.lease().is_none());
    assert_eq!(c.state(), State::Idle);
    assert!(c.poll(now + 10_000_000, &mut rng).is_none());
    assert!(c.release(&mut rng).is_none());
}

#[test]
fn nothing_asked_sends_nothing() {
    let mut rng = TestRng(37);
    let mut c = Client::new(
        ClientConfig {
            reqaddress: ReqAddress::None,
            reqprefix: ReqPrefix::No,
            ..cfg()
        },
        0,
        &mut rng,
    );
    assert_eq!(c.state(), State::Idle);
    assert!(c.poll(100_000, &mut rng).is_none());
    assert_eq!(c.poll_at(), None);
}

#[test]
fn a_flood_of_replies_keeps_memory_bounded() {
    let (mut c, mut now, mut rng) = client(cfg(), 41);
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    // 20 DNS servers, 10 prefixes, 50 domains: kept at most the bounds
    let mut a = good();
    a.dns = (0..20u16)
        .map(|i| Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i))
        .collect();
    a.pd.as_mut().unwrap().3 = (0..10u16)
        .map(|i| IaPrefix {
            prefix: Ipv6Net::new(Ipv6Addr::new(0x2001, 0xdb8, i, 0, 0, 0, 0, 0), 48).unwrap(),
            preferred: 10,
            valid: 20,
        })
        .collect();
    a.domains = b"\x01a\x00".repeat(50);
    let m = parse(&answer(ADVERTISE, &sol, &a)).unwrap();
    assert_eq!(m.dns.len(), MAX_DNS);
    assert_eq!(m.ia_pd.unwrap().entries.len(), MAX_IA_ENTRIES);
    assert_eq!(m.domains.len(), MAX_DOMAINS);
    assert!(parse(&vec![2u8; MAX_MESSAGE + 1]).is_err());
}

mod delegation;

fn other_addr() -> Ipv6Addr {
    "2001:db8:77::5678".parse().unwrap()
}

#[test]
fn a_duplicate_address_is_declined_and_a_new_one_requested() {
    let (mut c, mut now, mut rng) = bound(cfg());
    let _ = c.take_changed();
    assert!(!c.decline(other_addr(), now, &mut rng), "not ours");
    assert!(c.decline(addr(), now, &mut rng));
    assert!(c.take_changed());
    let l = c.lease().unwrap();
    assert_eq!(l.address, None, "dropped at once");
    assert_eq!(l.prefix.unwrap().prefix, pd(), "the prefix stays");
    assert_eq!(c.state(), State::Declining);
    let (dec, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(dec.msg_type, DECLINE);
    assert_eq!(dec.server_id.as_deref(), Some(SERVER));
    let na = dec.ia_na.clone().unwrap();
    assert_eq!(na.entries.len(), 1);
    assert_eq!((na.entries[0].addr, na.entries[0].valid), (addr(), 0));
    assert!(dec.ia_pd.is_none(), "only the address is declined");
    // the server's Reply ends it; a Request for a new address follows at once
    c.received(&answer(REPLY, &dec, &good()), now + 10, &mut rng);
    now += 10;
    let (req, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(req.msg_type, REQUEST);
    assert_eq!(req.server_id.as_deref(), Some(SERVER));
    assert!(req.ia_na.as_ref().unwrap().entries.is_empty(), "no address hinted");
    assert_eq!(req.ia_pd.as_ref().unwrap().entries[0].prefix, pd());
    let mut fresh = good();
    fresh.na.as_mut().unwrap().3[0].addr = other_addr();
    c.received(&answer(REPLY, &req, &fresh), now + 10, &mut rng);
    assert_eq!(c.state(), State::Bound);
    assert_eq!(c.lease().unwrap().address.unwrap().addr, other_addr());
    assert_eq!(c.counters().declines, 1);
}

#[test]
fn an_unanswered_decline_is_sent_four_times_then_a_request_follows() {
    let (mut c, mut now, mut rng) = bound(cfg());
    assert!(c.decline(addr(), now, &mut rng));
    let mut at = Vec::new();
    let req = loop {
        let (m, _) = next_send(&mut c, &mut now, &mut rng);
        if m.msg_type != DECLINE {
            break m;
        }
        at.push(now);
        assert!(at.len() <= 4, "DEC_MAX_RC");
    };
    assert_eq!(at.len(), 4);
    // 1 s, then doubling (±10 %)
    let gaps: Vec<Millis> = at.windows(2).map(|w| w[1] - w[0]).collect();
    assert!((900..=1100).contains(&gaps[0]), "{gaps:?}");
    assert!((1700..=2300).contains(&gaps[1]), "{gaps:?}");
    assert_eq!(req.msg_type, REQUEST);
}

#[test]
fn a_server_that_offers_the_declined_address_again_is_not_taken_at_its_word() {
    let (mut c, mut now, mut rng) = bound(cfg());
    let req = decline_then_next(&mut c, &mut now, &mut rng, 0);
    // the same duplicate again: reqaddress try keeps the prefix alone
    c.received(&answer(REPLY, &req, &good()), now + 10, &mut rng);
    assert_eq!(c.state(), State::Bound);
    let l = c.lease().unwrap();
    assert_eq!(l.address, None);
    assert_eq!(l.prefix.unwrap().prefix, pd());
    assert_eq!(c.counters().declined_offers, 1);
    // with reqaddress force nothing is taken: the client solicits again
    let mut f = cfg();
    f.reqaddress = ReqAddress::Force;
    let (mut c, mut now, mut rng) = bound(f);
    let req = decline_then_next(&mut c, &mut now, &mut rng, 0);
    c.received(&answer(REPLY, &req, &good()), now + 10, &mut rng);
    assert_eq!(c.state(), State::Soliciting);
    // ten minutes on, the address may be taken again
    let (mut c, mut now, mut rng) = bound(cfg());
    let req = decline_then_next(&mut c, &mut now, &mut rng, DECLINED_MS);
    c.received(&answer(REPLY, &req, &good()), now + 10, &mut rng);
    assert_eq!(c.lease().unwrap().address.unwrap().addr, addr());
}

#[test]
fn a_decline_with_nothing_else_held_solicits_again() {
    let mut f = cfg();
    f.reqprefix = ReqPrefix::No;
    let (mut c, mut now, mut rng) = bound(f);
    assert!(c.decline(addr(), now, &mut rng));
    let (dec, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(dec.msg_type, DECLINE);
    c.received(&answer(REPLY, &dec, &good()), now + 10, &mut rng);
    assert!(c.lease().is_none());
    now += 10;
    let (sol, _) = next_send(&mut c, &mut now, &mut rng);
    assert_eq!(sol.msg_type, SOLICIT);
}
