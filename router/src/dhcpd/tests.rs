//! Whole DHCP exchanges, with client packets built byte by byte as busybox
//! udhcpc 1.36 sends them (`networking/udhcp/dhcpc.c`: client id 01+MAC, max
//! size 576, vendor class, parameter request list, hostname with `-x`), and
//! seeded random mutations of them.

use super::message::{MessageType, MAGIC_COOKIE};
use super::options::{code, Options};
use super::*;
use crate::dns::{DnsAction, DnsConfig, DnsForwarder, Rng};
use crate::testutil::XorShift;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::{Ipv4Addr, SocketAddrV4};

const SERVER: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);
const MASK: Ipv4Addr = Ipv4Addr::new(255, 255, 255, 0);
const MAC1: [u8; 6] = [0x52, 0x54, 0x00, 0xaa, 0x00, 0x01];
const MAC2: [u8; 6] = [0x52, 0x54, 0x00, 0xaa, 0x00, 0x02];
/// udhcpc's default parameter request list (`dhcpc.c`, `udhcp_option_idx` with
/// the OPTION_REQ flag): subnet, router, dns, hostname, domain, broadcast, ...
const PRL: [u8; 9] = [1, 3, 6, 12, 15, 28, 42, 33, 121];

/// A client packet: header fields, then the options, padded like udhcpc does.
struct Client {
    mac: [u8; 6],
    xid: u32,
    hostname: Option<&'static [u8]>,
    client_id: Option<Vec<u8>>,
    broadcast: bool,
}

impl Client {
    fn new(mac: [u8; 6], xid: u32) -> Client {
        let mut cid = alloc::vec![1];
        cid.extend_from_slice(&mac);
        Client {
            mac,
            xid,
            hostname: None,
            client_id: Some(cid),
            broadcast: false,
        }
    }

    fn packet(&self, kind: u8, ciaddr: Ipv4Addr, extra: &[(u8, &[u8])]) -> Vec<u8> {
        let mut b = alloc::vec![0u8; 240];
        b[0] = 1; // BOOTREQUEST
        b[1] = 1; // Ethernet
        b[2] = 6;
        b[4..8].copy_from_slice(&self.xid.to_be_bytes());
        if self.broadcast {
            b[10] = 0x80;
        }
        b[12..16].copy_from_slice(&ciaddr.octets());
        b[28..34].copy_from_slice(&self.mac);
        b[236..240].copy_from_slice(&MAGIC_COOKIE);
        b.extend_from_slice(&[53, 1, kind]);
        if let Some(cid) = &self.client_id {
            b.push(61);
            b.push(u8::try_from(cid.len()).unwrap());
            b.extend_from_slice(cid);
        }
        b.extend_from_slice(&[57, 2, 0x02, 0x40]); // 576
        for (c, v) in extra {
            b.push(*c);
            b.push(u8::try_from(v.len()).unwrap());
            b.extend_from_slice(v);
        }
        b.extend_from_slice(&[60, 12]);
        b.extend_from_slice(b"udhcp 1.36.1");
        if let Some(h) = self.hostname {
            b.push(12);
            b.push(u8::try_from(h.len()).unwrap());
            b.extend_from_slice(h);
        }
        b.push(55);
        b.push(u8::try_from(PRL.len()).unwrap());
        b.extend_from_slice(&PRL);
        b.push(255);
        b.resize(b.len().max(300), 0);
        b
    }

    fn discover(&self) -> Vec<u8> {
        self.packet(1, Ipv4Addr::UNSPECIFIED, &[])
    }

    fn select(&self, ip: Ipv4Addr, server: Ipv4Addr) -> Vec<u8> {
        self.packet(
            3,
            Ipv4Addr::UNSPECIFIED,
            &[(50, &ip.octets()), (54, &server.octets())],
        )
    }

    fn init_reboot(&self, ip: Ipv4Addr) -> Vec<u8> {
        self.packet(3, Ipv4Addr::UNSPECIFIED, &[(50, &ip.octets())])
    }

    fn renew(&self, ip: Ipv4Addr) -> Vec<u8> {
        self.packet(3, ip, &[])
    }
}

/// What a reply says, read back from its bytes.
struct Seen {
    kind: MessageType,
    xid: u32,
    yiaddr: Ipv4Addr,
    ciaddr: Ipv4Addr,
    chaddr: [u8; 6],
    options: Options,
    codes: Vec<u8>,
}

fn read(reply: &Reply) -> Seen {
    let b = &reply.packet;
    assert_eq!(b[0], 2, "BOOTREPLY");
    assert!(b.len() >= 300);
    assert_eq!(&b[236..240], &MAGIC_COOKIE);
    let options = Options::parse(&b[240..], &[], &[]).unwrap();
    let kind = MessageType::from_u8(options.get(code::MESSAGE_TYPE).unwrap()[0]).unwrap();
    assert_eq!(kind, reply.kind);
    Seen {
        kind,
        xid: u32::from_be_bytes(b[4..8].try_into().unwrap()),
        ciaddr: Ipv4Addr::from(<[u8; 4]>::try_from(&b[12..16]).unwrap()),
        yiaddr: Ipv4Addr::from(<[u8; 4]>::try_from(&b[16..20]).unwrap()),
        chaddr: b[28..34].try_into().unwrap(),
        codes: options.codes().collect(),
        options,
    }
}

fn u32_opt(o: &Options, c: u8) -> Option<u32> {
    Some(u32::from_be_bytes(o.get(c)?.try_into().ok()?))
}

fn in_pool(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    o[..3] == [192, 168, 1] && (100..=249).contains(&o[3])
}

fn server() -> DhcpServer {
    DhcpServer::new(PoolConfig::new("lan", SERVER, MASK))
}

/// DISCOVER, OFFER, REQUEST, ACK; returns the address.
fn lease_for(s: &mut DhcpServer, c: &Client, now: u64) -> Ipv4Addr {
    let offer = read(&s.handle(&c.discover(), now).expect("an offer"));
    assert_eq!(offer.kind, MessageType::Offer);
    assert_eq!(offer.xid, c.xid);
    let ack = read(
        &s.handle(&c.select(offer.yiaddr, SERVER), now)
            .expect("an ack"),
    );
    assert_eq!(ack.kind, MessageType::Ack);
    assert_eq!(ack.yiaddr, offer.yiaddr);
    ack.yiaddr
}

/// [`server`] after client MAC1 (transaction `xid`, host name `hostname`) took a
/// lease at `now`: the server, the client and its address.
fn leased(xid: u32, hostname: Option<&'static [u8]>, now: u64) -> (DhcpServer, Client, Ipv4Addr) {
    let mut s = server();
    let mut c = Client::new(MAC1, xid);
    c.hostname = hostname;
    let ip = lease_for(&mut s, &c, now);
    (s, c, ip)
}

#[test]
fn full_exchange_gives_two_clients_different_pool_addresses() {
    let mut s = server();
    let c1 = Client::new(MAC1, 0x1111);
    let offer = s.handle(&c1.discover(), 0).unwrap();
    // udhcpc does not set the broadcast flag: unicast to yiaddr at chaddr.
    let seen = read(&offer);
    assert_eq!(
        offer.to,
        ReplyTo::UnicastNoArp {
            ip: seen.yiaddr,
            mac: MAC1
        }
    );
    assert!(in_pool(seen.yiaddr), "{}", seen.yiaddr);
    assert_eq!(seen.chaddr, MAC1);
    assert_eq!(seen.options.get_ipv4(code::SERVER_ID), Some(SERVER));
    assert_eq!(u32_opt(&seen.options, code::LEASE_TIME), Some(43_200));
    assert_eq!(u32_opt(&seen.options, code::RENEWAL_TIME), Some(21_600));
    assert_eq!(u32_opt(&seen.options, code::REBINDING_TIME), Some(37_800));
    assert_eq!(seen.options.get_ipv4(code::SUBNET_MASK), Some(MASK));
    assert_eq!(seen.options.get_ipv4(code::ROUTER), Some(SERVER));
    assert_eq!(seen.options.get_ipv4(code::DNS_SERVER), Some(SERVER));
    assert_eq!(seen.options.get(code::DOMAIN_NAME), Some(&b"lan"[..]));
    // 53 and 54 first, lease times, then the PRL's order: 1, 3, 6, 15, 28.
    assert_eq!(seen.codes, [53, 54, 51, 58, 59, 1, 3, 6, 15, 28, 61]);

    let ip1 = read(&s.handle(&c1.select(seen.yiaddr, SERVER), 10).unwrap()).yiaddr;
    assert_eq!(ip1, seen.yiaddr);
    let c2 = Client::new(MAC2, 0x2222);
    let ip2 = lease_for(&mut s, &c2, 20);
    assert!(in_pool(ip2));
    assert_ne!(ip1, ip2);
    let listed: Vec<Ipv4Addr> = s.leases(30).map(|l| l.ip).collect();
    assert_eq!(listed.len(), 2);
    assert!(listed.contains(&ip1) && listed.contains(&ip2));
    assert_eq!(s.counters().offer, 2);
    assert_eq!(s.counters().ack, 2);
}

#[test]
fn address_is_dnsmasqs_hash_of_the_mac() {
    let mut s = server();
    let ip = lease_for(&mut s, &Client::new(MAC1, 1), 0);
    let expected = 100 + super::server::hw_hash(&MAC1) % 150;
    assert_eq!(
        ip,
        Ipv4Addr::new(192, 168, 1, u8::try_from(expected).unwrap())
    );
}

#[test]
fn broadcast_flag_gets_a_broadcast_reply() {
    let mut s = server();
    let mut c = Client::new(MAC1, 7);
    c.broadcast = true;
    let offer = s.handle(&c.discover(), 0).unwrap();
    assert_eq!(offer.to, ReplyTo::Broadcast);
    assert_eq!(offer.packet[10], 0x80);
}

#[test]
fn static_host_gets_its_fixed_address_and_others_cannot_take_it() {
    let mut cfg = PoolConfig::new("lan", SERVER, MASK);
    let fixed = Ipv4Addr::new(192, 168, 1, 50);
    cfg.hosts.push(StaticHost {
        name: Some(String::from("nas")),
        mac: MAC1,
        ip: fixed,
    });
    let mut s = DhcpServer::new(cfg);
    assert_eq!(lease_for(&mut s, &Client::new(MAC1, 1), 0), fixed);
    assert_eq!(s.address_of("nas", 0), Some(fixed));
    // The static host asking for a pool address is refused.
    let nak = read(
        &s.handle(
            &Client::new(MAC1, 2).init_reboot(Ipv4Addr::new(192, 168, 1, 150)),
            0,
        )
        .unwrap(),
    );
    assert_eq!(nak.kind, MessageType::Nak);
    // Another client asking for the static address is refused too.
    let reply = s
        .handle(&Client::new(MAC2, 3).init_reboot(fixed), 0)
        .unwrap();
    assert_eq!(reply.kind, MessageType::Nak);
    assert_eq!(reply.to, ReplyTo::Broadcast);
}

#[test]
fn request_for_a_foreign_subnet_is_nakked() {
    let mut s = server();
    let c = Client::new(MAC1, 9);
    // A laptop coming from another network does INIT-REBOOT with its old address.
    let reply = s
        .handle(&c.init_reboot(Ipv4Addr::new(10, 0, 0, 23)), 0)
        .unwrap();
    let seen = read(&reply);
    assert_eq!(seen.kind, MessageType::Nak);
    assert_eq!(reply.to, ReplyTo::Broadcast);
    assert_eq!(seen.yiaddr, Ipv4Addr::UNSPECIFIED);
    assert_eq!(seen.options.get(code::MESSAGE), Some(&b"wrong network"[..]));
    assert_eq!(s.counters().nak, 1);
    assert_eq!(s.leases(0).count(), 0);
}

#[test]
fn a_select_of_an_address_another_client_holds_is_nakked() {
    // Nothing is reserved at DISCOVER: a SELECTING REQUEST is checked against the
    // leases then (as dnsmasq does): a free address in the pool is granted, one
    // that another client took meanwhile is not.
    let mut s = server();
    let taken = lease_for(&mut s, &Client::new(MAC2, 1), 0);
    let c = Client::new(MAC1, 9);
    let nak = read(&s.handle(&c.select(taken, SERVER), 0).unwrap());
    assert_eq!(nak.kind, MessageType::Nak);
    assert_eq!(
        nak.options.get(code::MESSAGE),
        Some(&b"address not available"[..])
    );
    let offered = read(&s.handle(&c.discover(), 0).unwrap()).yiaddr;
    assert_ne!(offered, taken);
    assert_eq!(
        read(&s.handle(&c.select(offered, SERVER), 0).unwrap()).kind,
        MessageType::Ack
    );
}

#[test]
fn discovers_reserve_nothing_so_a_flood_of_made_up_macs_leaves_the_pool_free() {
    let mut s = server();
    // More DISCOVERs from made-up MACs than the pool has addresses: each is
    // offered one, none is held.
    for n in 0..400u32 {
        let mut mac = MAC1;
        mac[2..6].copy_from_slice(&n.to_be_bytes());
        assert!(s.handle(&Client::new(mac, n).discover(), 0).is_some());
    }
    assert_eq!(s.leases(0).count(), 0);
    // A real client still gets its lease, and the same address it was offered.
    let c = Client::new(MAC2, 7);
    let offered = read(&s.handle(&c.discover(), 1).unwrap()).yiaddr;
    let ack = read(&s.handle(&c.select(offered, SERVER), 2).unwrap());
    assert_eq!((ack.kind, ack.yiaddr), (MessageType::Ack, offered));
}

#[test]
fn a_client_name_never_takes_a_configured_hosts_name() {
    let mut cfg = PoolConfig::new("lan", SERVER, MASK);
    cfg.hosts.push(StaticHost {
        name: Some(String::from("nas")),
        mac: MAC2,
        ip: Ipv4Addr::new(192, 168, 1, 20),
    });
    let mut s = DhcpServer::new(cfg);
    let mut c = Client::new(MAC1, 1);
    c.hostname = Some(b"NAS");
    let ip = lease_for(&mut s, &c, 0);
    let l = s.leases(0).find(|l| l.ip == ip).unwrap();
    assert_eq!(l.hostname, None, "the laptop does not become nas.lan");
    let mut c = Client::new(MAC1, 2);
    c.hostname = Some(b"laptop");
    let ip = lease_for(&mut s, &c, 10);
    let l = s.leases(10).find(|l| l.ip == ip).unwrap();
    assert_eq!(l.hostname.as_deref(), Some("laptop"));
}

#[test]
fn address_held_by_another_client_is_nakked() {
    let mut s = server();
    let ip1 = lease_for(&mut s, &Client::new(MAC1, 1), 0);
    let nak = s.handle(&Client::new(MAC2, 2).init_reboot(ip1), 0).unwrap();
    assert_eq!(nak.kind, MessageType::Nak);
    // And a DISCOVER asking for it (option 50) gets a different one.
    let c2 = Client::new(MAC2, 3);
    let offer = read(
        &s.handle(
            &c2.packet(1, Ipv4Addr::UNSPECIFIED, &[(50, &ip1.octets())]),
            0,
        )
        .unwrap(),
    );
    assert_ne!(offer.yiaddr, ip1);
}

#[test]
fn renew_keeps_the_address_and_extends_the_lease() {
    let (mut s, c, ip) = leased(5, None, 0);
    // T1 = 6 h later, udhcpc renews by unicast with ciaddr set.
    let t1 = 21_600_000;
    let reply = s.handle(&c.renew(ip), t1).unwrap();
    let seen = read(&reply);
    assert_eq!(seen.kind, MessageType::Ack);
    assert_eq!(seen.yiaddr, ip);
    assert_eq!(seen.ciaddr, ip);
    assert_eq!(reply.to, ReplyTo::Unicast(ip));
    let lease = s.leases(t1).next().unwrap();
    assert_eq!(lease.expires, Some(t1 + 43_200_000));
    // Still held after the first lease would have ended.
    assert_eq!(s.leases(43_200_001).count(), 1);
    // A REBINDING (broadcast) request is answered the same way.
    let mut cb = Client::new(MAC1, 6);
    cb.broadcast = true;
    assert_eq!(
        read(&s.handle(&cb.renew(ip), t1 + 1000).unwrap()).yiaddr,
        ip
    );
}

#[test]
fn lease_expires_and_the_address_goes_back_to_the_pool() {
    let mut cfg = PoolConfig::new("lan", SERVER, MASK);
    cfg.start = 10;
    cfg.limit = 1;
    let mut s = DhcpServer::new(cfg);
    let ip = lease_for(&mut s, &Client::new(MAC1, 1), 0);
    assert!(s.handle(&Client::new(MAC2, 2).discover(), 1000).is_none());
    assert_eq!(s.counters().pool_exhausted, 1);
    let later = 43_200_000 + 1;
    assert_eq!(lease_for(&mut s, &Client::new(MAC2, 3), later), ip);
}

#[test]
fn restart_from_the_lease_file_gives_the_same_address_back() {
    let (s, c, ip) = leased(1, Some(b"lan1"), 5_000);
    let epoch = 1_700_000_000;
    let text = s.lease_file(6_000, epoch);
    assert_eq!(
        text,
        alloc::format!("1700043205 52:54:00:aa:00:01 {ip} lan1 01:52:54:00:aa:00:01\n")
    );

    // Reboot: monotonic time starts again at 0, one hour of wall time later.
    let mut s2 = server();
    let report = s2.load_lease_file(&text, 0, epoch + 3600);
    assert_eq!(
        report,
        LoadReport {
            loaded: 1,
            corrupt: 0,
            expired: 0
        }
    );
    let lease = s2.leases(0).next().unwrap();
    assert_eq!(lease.expires, Some((43_205 - 3600) * 1000));
    assert_eq!(s2.address_of("lan1", 0), Some(ip));
    // The client rediscovers and gets the same address, even after the other
    // client tried for it in between.
    assert_eq!(
        s2.handle(&Client::new(MAC2, 2).init_reboot(ip), 0)
            .unwrap()
            .kind,
        MessageType::Nak
    );
    let offer = read(&s2.handle(&c.discover(), 1000).unwrap());
    assert_eq!(offer.yiaddr, ip);
    // Or does INIT-REBOOT directly.
    assert_eq!(
        read(&s2.handle(&c.init_reboot(ip), 1000).unwrap()).kind,
        MessageType::Ack
    );
}

#[test]
fn corrupt_and_expired_lease_lines_are_skipped_and_counted() {
    let text = "\
1700043205 52:54:00:aa:00:01 192.168.1.120 lan1 01:52:54:00:aa:00:01
garbage line
1700043205 52:54:00:aa:00:02 10.0.0.4 far *
1700043205 52:54:00:aa:00:03 192.168.1.120 dup *
1600000000 52:54:00:aa:00:04 192.168.1.121 old *
0 52:54:00:aa:00:05 192.168.1.122 forever *
";
    let mut s = server();
    let r = s.load_lease_file(text, 0, 1_700_000_000);
    assert_eq!(
        r,
        LoadReport {
            loaded: 2,
            corrupt: 3,
            expired: 1
        }
    );
    assert_eq!(
        s.address_of("forever", 1 << 60),
        Some(Ipv4Addr::new(192, 168, 1, 122))
    );
}

#[test]
fn decline_keeps_the_address_out_of_the_pool() {
    let (mut s, c, ip) = leased(1, None, 0);
    // The client found the address in use (ARP probe) and declines it.
    assert!(s
        .handle(
            &c.packet(
                4,
                Ipv4Addr::UNSPECIFIED,
                &[(50, &ip.octets()), (54, &SERVER.octets())]
            ),
            1000
        )
        .is_none());
    assert_eq!(s.leases(1000).count(), 0);
    let again = read(&s.handle(&c.discover(), 2000).unwrap());
    assert_ne!(again.yiaddr, ip);
    assert!(in_pool(again.yiaddr));
    // After the back-off the address can be given again.
    let mut s2 = s.clone();
    assert_eq!(
        read(
            &s2.handle(&Client::new(MAC1, 9).init_reboot(ip), 601_001)
                .unwrap()
        )
        .kind,
        MessageType::Ack
    );
    assert_eq!(
        s.handle(&Client::new(MAC2, 9).init_reboot(ip), 3000)
            .unwrap()
            .kind,
        MessageType::Nak
    );
}

#[test]
fn release_frees_the_lease() {
    let (mut s, c, ip) = leased(1, None, 0);
    assert!(s
        .handle(&c.packet(7, ip, &[(54, &SERVER.octets())]), 10)
        .is_none());
    assert_eq!(s.leases(10).count(), 0);
    // Another client's RELEASE of someone else's address changes nothing.
    let ip = lease_for(&mut s, &c, 20);
    assert!(s
        .handle(&Client::new(MAC2, 2).packet(7, ip, &[]), 30)
        .is_none());
    assert_eq!(s.leases(30).count(), 1);
}

#[test]
fn inform_is_acked_without_a_lease() {
    let mut s = server();
    let c = Client::new(MAC1, 1);
    let ip = Ipv4Addr::new(192, 168, 1, 10);
    let reply = s.handle(&c.packet(8, ip, &[]), 0).unwrap();
    let seen = read(&reply);
    assert_eq!(seen.kind, MessageType::Ack);
    assert_eq!(seen.yiaddr, Ipv4Addr::UNSPECIFIED);
    assert_eq!(seen.options.get(code::LEASE_TIME), None);
    assert_eq!(seen.options.get_ipv4(code::DNS_SERVER), Some(SERVER));
    assert_eq!(reply.to, ReplyTo::Unicast(ip));
    assert_eq!(s.leases(0).count(), 0);
}

#[test]
fn choosing_another_server_frees_the_offer() {
    let mut s = server();
    let c = Client::new(MAC1, 1);
    let offered = read(&s.handle(&c.discover(), 0).unwrap()).yiaddr;
    assert!(s
        .handle(&c.select(offered, Ipv4Addr::new(192, 168, 1, 2)), 0)
        .is_none());
    assert_eq!(s.counters().ignored, 1);
    // The address is free for another client now.
    assert_eq!(
        s.handle(&Client::new(MAC2, 2).init_reboot(offered), 0)
            .unwrap()
            .kind,
        MessageType::Ack
    );
}

#[test]
fn client_id_of_any_type_identifies_the_client() {
    let mut s = server();
    // Two clients behind the same MAC (e.g. a VM host), told apart by a
    // non-Ethernet client id (type 255, RFC 4361 IAID+DUID).
    let mut a = Client::new(MAC1, 1);
    a.client_id = Some(alloc::vec![255, 0, 0, 0, 1, 0, 2, 0, 0, 0, 9]);
    let mut b = Client::new(MAC1, 2);
    b.client_id = Some(b"\x00router-b".to_vec());
    let ia = lease_for(&mut s, &a, 0);
    let ib = lease_for(&mut s, &b, 0);
    assert_ne!(ia, ib);
    let seen = read(&s.handle(&b.renew(ib), 1000).unwrap());
    assert_eq!(
        seen.options.get(code::CLIENT_ID),
        Some(&b"\x00router-b"[..])
    );
    let text = s.lease_file(1000, 0);
    assert!(text.contains("00:72:6f:75:74:65:72:2d:62"), "{text}");
}

#[test]
fn an_overlong_client_id_is_ignored_and_the_mac_identifies_the_client() {
    let mut s = server();
    let c = Client::new(MAC1, 1);
    // 355 bytes of client id in two pieces (RFC 3396): 1.4 KB each could be held
    // per lease for every spoofed MAC.
    let long = [7u8; 255];
    let pkt = c.packet(1, Ipv4Addr::UNSPECIFIED, &[(61, &long), (61, &long[..100])]);
    let offer = read(&s.handle(&pkt, 0).unwrap());
    assert_eq!(offer.options.get(code::CLIENT_ID), None);
    let ip = lease_for(&mut s, &c, 0);
    assert_eq!(offer.yiaddr, ip, "the same client, by its MAC");
    let text = s.lease_file(1000, 0);
    assert!(!text.contains("07:07:07"), "{text}");
}

#[test]
fn prl_order_and_extra_options_are_respected() {
    let mut cfg = PoolConfig::new("lan", SERVER, MASK);
    cfg.extra.push(ExtraOption::parse("6,192.168.1.2").unwrap());
    cfg.extra
        .push(ExtraOption::parse("42,192.168.1.3").unwrap());
    let mut s = DhcpServer::new(cfg);
    let c = Client::new(MAC1, 1);
    let prl: &[u8] = &[42, 6, 3, 1];
    let mut pkt = c.discover();
    // Replace udhcpc's PRL with ours: rebuild with the option placed first.
    pkt.truncate(240);
    pkt.extend_from_slice(&[53, 1, 1, 55, 4]);
    pkt.extend_from_slice(prl);
    pkt.push(255);
    let seen = read(&s.handle(&pkt, 0).unwrap());
    assert_eq!(seen.codes, [53, 54, 51, 58, 59, 42, 6, 3, 1]);
    assert_eq!(
        seen.options.get_ipv4(code::DNS_SERVER),
        Some(Ipv4Addr::new(192, 168, 1, 2))
    );
    assert_eq!(
        seen.options.get_ipv4(42),
        Some(Ipv4Addr::new(192, 168, 1, 3))
    );
}

#[test]
fn overloaded_options_are_read_from_file_and_sname() {
    let mut s = server();
    let c = Client::new(MAC1, 1);
    let mut pkt = c.discover();
    pkt.truncate(240);
    pkt.extend_from_slice(&[53, 1, 1, 52, 1, 3, 255]);
    // Hostname split across `file` (108..236) and `sname` (44..108).
    pkt[108..114].copy_from_slice(&[12, 3, b'l', b'a', b'n', 255]);
    pkt[44..48].copy_from_slice(&[12, 1, b'9', 255]);
    let offer = read(&s.handle(&pkt, 0).unwrap());
    let mut req = c.select(offer.yiaddr, SERVER);
    req.truncate(240);
    req.extend_from_slice(&[53, 1, 3, 50, 4]);
    req.extend_from_slice(&offer.yiaddr.octets());
    req.extend_from_slice(&[54, 4, 192, 168, 1, 1, 52, 1, 3, 255]);
    req[108..114].copy_from_slice(&[12, 3, b'l', b'a', b'n', 255]);
    req[44..48].copy_from_slice(&[12, 1, b'9', 255]);
    assert_eq!(read(&s.handle(&req, 0).unwrap()).kind, MessageType::Ack);
    assert_eq!(s.address_of("lan9", 0), Some(offer.yiaddr));
}

#[test]
fn relayed_and_server_messages_are_dropped() {
    let mut s = server();
    let mut pkt = Client::new(MAC1, 1).discover();
    pkt[24..28].copy_from_slice(&[10, 0, 0, 1]);
    assert!(s.handle(&pkt, 0).is_none());
    assert_eq!(s.counters().dropped_relayed, 1);
    let pkt = Client::new(MAC1, 1).packet(2, Ipv4Addr::UNSPECIFIED, &[]);
    assert!(s.handle(&pkt, 0).is_none());
    assert_eq!(s.counters().dropped_wrong_type, 1);
}

struct SeqRng(u32);
impl Rng for SeqRng {
    fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        self.0
    }
}

#[test]
fn hostname_is_remembered_and_resolved_by_the_dns_side() {
    let (mut s, c, ip) = leased(1, Some(b"lan1"), 0);
    assert_eq!(
        s.leases(0).next().unwrap().hostname.as_deref(),
        Some("lan1")
    );
    let mut dns = DnsForwarder::new(DnsConfig::new(SERVER, MASK));
    let client = SocketAddrV4::new(Ipv4Addr::new(192, 168, 1, 7), 40000);
    let mut q = alloc::vec![0xbe, 0xef, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    q.extend_from_slice(b"\x04LAN1\x03lan\x00\x00\x01\x00\x01");
    let out = dns.handle_query(&q, client, 0, &mut SeqRng(1), &s);
    let [DnsAction::ToClient { client: to, packet }] = out.as_slice() else {
        panic!("{out:?}");
    };
    assert_eq!(*to, client.into());
    let m = crate::dns::message::Message::parse(packet).unwrap();
    assert_eq!(m.header.id, 0xbeef);
    assert_eq!(&packet[m.records[0].rdata.clone()], &ip.octets());
    // The reverse lookup names the lease.
    let o = ip.octets();
    let mut q = alloc::vec![0, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in [o[3], o[2], o[1], o[0]] {
        let t = alloc::format!("{label}");
        q.push(u8::try_from(t.len()).unwrap());
        q.extend_from_slice(t.as_bytes());
    }
    q.extend_from_slice(b"\x07in-addr\x04arpa\x00\x00\x0c\x00\x01");
    let out = dns.handle_query(&q, client, 0, &mut SeqRng(1), &s);
    let [DnsAction::ToClient { packet, .. }] = out.as_slice() else {
        panic!("{out:?}");
    };
    let m = crate::dns::message::Message::parse(packet).unwrap();
    let (name, _) = crate::dns::name::Name::parse(packet, m.records[0].rdata.start).unwrap();
    assert_eq!(name.to_dotted(), "lan1.lan");
    // Once the lease is released, the name is gone (NXDOMAIN under local=/lan/).
    s.handle(&c.packet(7, ip, &[]), 10);
    let mut q = alloc::vec![0xbe, 0xef, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    q.extend_from_slice(b"\x04lan1\x03lan\x00\x00\x01\x00\x01");
    let out = dns.handle_query(&q, client, 20, &mut SeqRng(1), &s);
    let [DnsAction::ToClient { packet, .. }] = out.as_slice() else {
        panic!("{out:?}");
    };
    assert_eq!(packet[3] & 0xf, 3);
    assert_eq!(dns.counters().forwarded, 0);
}


/// Flips, overwrites, truncates and extends valid client packets; the server
/// must never panic, every packet must be counted, and every reply must be a
/// well-formed BOOTREPLY.
#[test]
fn random_mutations_never_panic() {
    let mut rng = XorShift(0x2545_f491);
    let mut s = server();
    let mut c = Client::new(MAC1, 1);
    c.hostname = Some(b"fuzz");
    let ip = Ipv4Addr::new(192, 168, 1, 120);
    let seeds = [
        c.discover(),
        c.select(ip, SERVER),
        c.init_reboot(ip),
        c.renew(ip),
        c.packet(4, Ipv4Addr::UNSPECIFIED, &[(50, &ip.octets())]),
        c.packet(7, ip, &[]),
        c.packet(8, ip, &[]),
    ];
    let mut replies = 0;
    for i in 0..20_000u64 {
        let mut p = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(8) {
            match rng.below(6) {
                0 => {
                    let at = rng.below(p.len());
                    p[at] ^= 1 << rng.below(8);
                }
                1 if p.len() > 240 => {
                    // Hit the options area where the structure is.
                    let at = 240 + rng.below(p.len() - 240);
                    p[at] = u8::try_from(rng.below(256)).unwrap();
                }
                1 | 2 => p.truncate(rng.below(p.len() + 1)),
                3 => p.extend((0..rng.below(64)).map(|_| u8::try_from(rng.below(256)).unwrap())),
                4 => {
                    // Overload option pointing at random file/sname contents.
                    if p.len() > 243 {
                        p[240..243].copy_from_slice(&[52, 1, u8::try_from(rng.below(5)).unwrap()]);
                        for b in &mut p[44..236] {
                            *b = u8::try_from(rng.below(256)).unwrap();
                        }
                    }
                }
                _ => {
                    // A length byte claiming more than is left.
                    if p.len() > 245 {
                        let at = 241 + rng.below(p.len() - 241);
                        p[at] = 0xff;
                    }
                }
            }
            if p.is_empty() {
                break;
            }
        }
        if let Some(r) = s.handle(&p, i * 1000) {
            replies += 1;
            assert_eq!(r.packet[0], 2);
            assert!(Options::parse(&r.packet[240..], &[], &[]).is_ok());
            assert!(r.packet.len() <= 1472);
        }
        assert!(s.leases(i * 1000).count() <= 150);
    }
    let k = s.counters();
    let handled = k.discover + k.request + k.decline + k.release + k.inform;
    assert_eq!(
        handled + k.dropped_malformed + k.dropped_relayed + k.dropped_wrong_type,
        20_000,
        "every packet is counted once: {k:?}"
    );
    assert!(k.dropped_malformed > 1000, "{k:?}");
    assert!(replies > 100, "{replies}");
}

/// A client with MAC 52:54:00:bb + `n` and a client id of 255 bytes (the most
/// kept), sized to fill the lease table's heap.
fn big_client(n: u32) -> Client {
    let b = n.to_be_bytes();
    let mac = [0x52, 0x54, 0x00, b[1], b[2], b[3]];
    let mut c = Client::new(mac, n);
    let mut cid = alloc::vec![0xffu8; 255];
    cid[..4].copy_from_slice(&b);
    c.client_id = Some(cid);
    c
}

#[test]
fn a_big_pool_keeps_at_most_max_leases_and_refuses_new_clients_when_full() {
    // A /16 with OpenWrt's `limit` raised: 60000 addresses.
    let mut cfg = PoolConfig::new("lan", SERVER, Ipv4Addr::new(255, 255, 0, 0));
    cfg.limit = 60_000;
    assert_eq!(cfg.max_leases, super::config::DEFAULT_MAX_LEASES);
    cfg.max_leases = 40;
    let mut s = DhcpServer::new(cfg);
    for n in 0..40 {
        lease_for(&mut s, &big_client(n), 0);
    }
    // Full of bound leases: no offer for a new client, counted.
    for n in 40..100 {
        assert!(s.handle(&big_client(n).discover(), 0).is_none());
    }
    assert_eq!(s.counters().pool_exhausted, 60);
    assert_eq!(s.leases(0).count(), 40);
    // A client that has a lease still renews it.
    let first = s.leases(0).next().unwrap().ip;
    let c = big_client(0);
    assert_eq!(
        read(&s.handle(&c.renew(first), 1000).unwrap()).yiaddr,
        first
    );
}

#[test]
fn the_default_lease_cap_bounds_a_flood_of_spoofed_clients() {
    let mut cfg = PoolConfig::new("lan", SERVER, Ipv4Addr::new(255, 255, 0, 0));
    cfg.limit = 60_000;
    let mut s = DhcpServer::new(cfg);
    let cap = super::config::DEFAULT_MAX_LEASES;
    for n in 0..cap as u32 + 50 {
        let c = big_client(n);
        if let Some(offer) = s.handle(&c.discover(), 0) {
            let ip = read(&offer).yiaddr;
            s.handle(&c.select(ip, SERVER), 0);
        }
    }
    assert_eq!(s.leases(0).count(), cap);
    assert_eq!(s.counters().pool_exhausted, 50);
}
