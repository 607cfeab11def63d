//! The DHCPv6 server over the test links: a LAN client's frames to ff02::1:2 are
//! kept aside by the routed link, answered on the link to the client's link-local
//! address; its lease gives `NAME.lan` an AAAA, is listed and saved with the v4
//! leases, and comes back after a reboot.

use super::*;
use xenlet_router::dhcp6d::message::msg;
use xenlet_router::dhcp6d::options::{code, put, Options};
use xenlet_router::ipv6;

const ALL_SERVERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 1, 2);

fn client_ll() -> Ipv6Addr {
    ipv6::link_local_of(LAN_HOST_MAC)
}

fn client_duid() -> Vec<u8> {
    let mut d = vec![0, 3, 0, 1];
    d.extend_from_slice(&LAN_HOST_MAC);
    d
}

/// The client's frame carrying DHCPv6 `payload` to ff02::1:2, UDP 546 → 547.
fn client_frame(payload: &[u8]) -> Vec<u8> {
    let src = client_ll();
    let ulen = 8 + payload.len();
    let mut udp = Vec::new();
    udp.extend_from_slice(&546u16.to_be_bytes());
    udp.extend_from_slice(&547u16.to_be_bytes());
    udp.extend_from_slice(&(ulen as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let s = ipv6::pseudo_header_sum(src, ALL_SERVERS, 17, ulen);
    let c = !xenlet_router::checksum::fold(xenlet_router::checksum::sum(s, &udp));
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    let mut f = vec![0x33, 0x33, 0, 1, 0, 2];
    f.extend_from_slice(&LAN_HOST_MAC);
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
    f.extend_from_slice(&(ulen as u16).to_be_bytes());
    f.extend_from_slice(&[17, 1]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&ALL_SERVERS.octets());
    f.extend_from_slice(&udp);
    f
}

/// A client message: type, transaction id 0xabcdef, options.
fn message(kind: u8, opts: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut m = vec![kind, 0xab, 0xcd, 0xef];
    for (c, d) in opts {
        put(&mut m, *c, d);
    }
    m
}

fn ia_na(iaid: u32, addr: Option<Ipv6Addr>) -> Vec<u8> {
    let mut d = iaid.to_be_bytes().to_vec();
    d.extend_from_slice(&[0; 8]);
    if let Some(a) = addr {
        let mut x = a.octets().to_vec();
        x.extend_from_slice(&[0; 8]);
        put(&mut d, code::IAADDR, &x);
    }
    d
}

/// Sends `payload` from the LAN client and runs the router until a DHCPv6 answer
/// reaches the client's link (checked: to its MAC and link-local address, from
/// the router's, UDP 547 → 546, checksum right); its payload.
fn exchange(n: &mut Net, payload: &[u8]) -> Option<Vec<u8>> {
    n.lan_host.link.send(&client_frame(payload)).unwrap();
    for _ in 0..50 {
        n.now += 10;
        let now = n.now;
        n.gw.poll(&mut n.stack.ifs, now);
        n.stack.poll(now);
        if n.services.poll(&mut n.stack, now) {
            n.stack.poll(now);
        }
        while let Some(f) = n.lan_host.link.recv() {
            if f.get(12..14) != Some(&[0x86, 0xdd][..]) || f.get(20) != Some(&17) {
                continue;
            }
            assert_eq!(&f[0..6], &LAN_HOST_MAC);
            let src = Ipv6Addr::from(<[u8; 16]>::try_from(&f[22..38]).unwrap());
            let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&f[38..54]).unwrap());
            assert_eq!(src, ipv6::link_local_of([2, 0, 0, 0, 1, 1]));
            assert_eq!(dst, client_ll());
            assert_eq!(&f[54..58], &[0x02, 0x23, 0x02, 0x22]);
            assert!(ipv6::l4_checksum_ok(src, dst, 17, &f[54..]));
            return Some(f[62..].to_vec());
        }
    }
    None
}

fn iaaddr(reply: &[u8]) -> Ipv6Addr {
    let o = Options::parse(&reply[4..]).unwrap();
    let ia = o.get(code::IA_NA).unwrap();
    let inner = Options::parse(&ia[12..]).unwrap();
    let a = inner.get(code::IAADDR).unwrap();
    Ipv6Addr::from(<[u8; 16]>::try_from(&a[..16]).unwrap())
}

#[test]
fn a_lan_client_gets_a_dhcpv6_address_its_name_resolves_aaaa_and_the_lease_is_saved() {
    let store = MemStore::default();
    let mut n = net("192.168.1.50/24,gw=192.168.1.1", Some(store.clone()));
    let fqdn = vec![1, 4, b'l', b'a', b'n', b'1', 0];
    let adv = exchange(
        &mut n,
        &message(
            msg::SOLICIT,
            &[
                (code::CLIENTID, client_duid()),
                (code::IA_NA, ia_na(1, None)),
                (code::CLIENT_FQDN, fqdn.clone()),
            ],
        ),
    )
    .expect("an Advertise");
    assert_eq!(adv[0], msg::ADVERTISE);
    assert_eq!(&adv[1..4], &[0xab, 0xcd, 0xef]);
    let offered = iaaddr(&adv);
    let prefix =
        xenlet_router::route6::Ipv6Net::new("fd12:3456:789a::".parse().unwrap(), 64).unwrap();
    assert!(prefix.contains(offered), "{offered}");
    let o = Options::parse(&adv[4..]).unwrap();
    let sid = o.get(code::SERVERID).unwrap().to_vec();
    assert_eq!(sid, [0, 3, 0, 1, 2, 0, 0, 0, 1, 1], "DUID-LL of eth0's MAC");
    let ula1: Ipv6Addr = "fd12:3456:789a::1".parse().unwrap();
    assert_eq!(o.get(code::DNS_SERVERS), Some(&ula1.octets()[..]));
    assert_eq!(n.services.dhcp6.ports[0].server.leases(0).count(), 0);
    let reply = exchange(
        &mut n,
        &message(
            msg::REQUEST,
            &[
                (code::CLIENTID, client_duid()),
                (code::SERVERID, sid.clone()),
                (code::IA_NA, ia_na(1, Some(offered))),
                (code::CLIENT_FQDN, fqdn),
            ],
        ),
    )
    .expect("a Reply");
    assert_eq!((reply[0], iaaddr(&reply)), (msg::REPLY, offered));
    let (_, c, send_failed) = n.services.dhcp6_counters()[0];
    assert_eq!(
        (
            c.solicit,
            c.advertise,
            c.request,
            c.reply,
            c.bound,
            send_failed
        ),
        (1, 1, 1, 1, 1, 0)
    );
    // the listing
    let mut text = String::new();
    assert_eq!(n.services.write_leases(&mut text, n.now), Ok(1));
    assert!(
        text.starts_with(&format!("eth0   {offered} 02:00:00:00:01:64 12h"))
            && text.trim_end().ends_with(" lan1"),
        "{text}"
    );
    // AAAA for lan1.lan (asked over IPv4), from the DHCPv6 lease
    let mut c = udp_socket();
    c.bind(40002).unwrap();
    let hc = n.lan_host.sockets.add(c);
    ask(&mut n, hc, &query(11, "lan1.lan", 28));
    let r = reply_to(&mut n, hc).expect("answered");
    assert_eq!(&r[6..8], &[0, 1], "one answer");
    assert_eq!(&r[r.len() - 16..], &offered.octets());
    // the lease file: the v4 part (none), then dnsmasq's IPv6 part
    assert!(n.services.save_leases(n.now));
    let saved = store.0.lock().unwrap().clone().unwrap();
    let lines: Vec<&str> = saved.lines().collect();
    assert_eq!(lines[0], "duid 00:03:00:01:02:00:00:00:01:01", "{saved}");
    assert!(
        lines[1].ends_with(&format!(" 1 {offered} lan1 00:03:00:01:02:00:00:00:01:64")),
        "{saved}"
    );
    // after a reboot: loaded back, and the same client renews it
    let mut m = net("192.168.1.50/24,gw=192.168.1.1", Some(store.clone()));
    let r = m.services.load_report();
    assert_eq!((r.loaded, r.corrupt), (1, 0));
    let reply = exchange(
        &mut m,
        &message(
            msg::RENEW,
            &[
                (code::CLIENTID, client_duid()),
                (code::SERVERID, sid),
                (code::IA_NA, ia_na(1, Some(offered))),
            ],
        ),
    )
    .expect("a Reply");
    assert_eq!((reply[0], iaaddr(&reply)), (msg::REPLY, offered));
}

#[test]
fn stateless_clients_and_bad_frames() {
    let mut n = net("192.168.1.50/24,gw=192.168.1.1", None);
    let r = exchange(
        &mut n,
        &message(msg::INFORMATION_REQUEST, &[(code::CLIENTID, client_duid())]),
    )
    .expect("a Reply");
    let o = Options::parse(&r[4..]).unwrap();
    assert_eq!(o.get(code::DOMAIN_LIST), Some(&b"\x03lan\x00"[..]));
    assert!(o.get(code::DNS_SERVERS).is_some());
    // a frame with a bad checksum: dropped and counted, nothing sent
    let mut f = client_frame(&message(msg::SOLICIT, &[(code::CLIENTID, client_duid())]));
    let last = f.len() - 1;
    f[last] ^= 0xff;
    n.lan_host.link.send(&f).unwrap();
    assert_eq!(exchange(&mut n, &[1, 2]), None, "truncated message dropped");
    let (_, c, _) = n.services.dhcp6_counters()[0];
    assert_eq!(c.dropped_malformed, 2);
}
