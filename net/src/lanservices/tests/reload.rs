//! `reload` of the LAN services: `/etc/config/dhcp`'s `ra_flags`, `ra_slaac`,
//! `dhcpv6` and `ra`, and `/etc/config/network`'s `ip6assign`/`ip6hint`, applied to
//! the running router (the advertisements the LAN host hears, the DHCPv6 server,
//! the LAN's addresses); the DHCPv4 pools and the DNS forwarder's settings.

use super::*;
use crate::ifreload::{reload_ipv4, Ipv4Files};
use smoltcp::wire::{IpCidr, Ipv6Address, Ipv6Packet};

/// The Router Advertisements that reached the LAN host since the last call
/// (taken): their ICMPv6 bodies.
fn take_ras(n: &mut Net) -> Vec<Vec<u8>> {
    let mut rx = n.lan_host.link.rx.borrow_mut();
    let mut out = Vec::new();
    rx.retain(|f| {
        let is_ra = f.get(12..14) == Some(&[0x86, 0xdd][..])
            && f.get(20) == Some(&58)
            && f.get(54) == Some(&134);
        if is_ra {
            let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
            out.push(ip.payload().to_vec());
        }
        !is_ra
    });
    out
}

/// Steps `steps` times (10 ms each), the advertisements gathered.
fn run(n: &mut Net, steps: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    for _ in 0..steps {
        n.step();
        got.extend(take_ras(n));
    }
    got
}

/// (M, O) of an RA.
fn flags(ra: &[u8]) -> (bool, bool) {
    (ra[5] & 0x80 != 0, ra[5] & 0x40 != 0)
}

/// Each prefix information option: (prefix, A flag, valid, preferred).
fn prefixes(ra: &[u8]) -> Vec<(Ipv6Address, bool, u32, u32)> {
    let mut out = Vec::new();
    let mut i = 16;
    while i + 2 <= ra.len() {
        let len = ra[i + 1] as usize * 8;
        assert!(len > 0 && i + len <= ra.len());
        if ra[i] == 3 {
            let o = &ra[i..i + len];
            out.push((
                Ipv6Address::from(<[u8; 16]>::try_from(&o[16..32]).unwrap()),
                o[3] & 0x40 != 0,
                u32::from_be_bytes(o[4..8].try_into().unwrap()),
                u32::from_be_bytes(o[8..12].try_into().unwrap()),
            ));
        }
        i += len;
    }
    out
}

/// Reads the files again as the shell's `reload` does and applies them.
fn reload(n: &mut Net, dhcp: &str, network: &str) -> Vec<String> {
    let plan = netplan::plan(network, Some(FIREWALL), &["eth0", "eth1"], 64, 5).unwrap();
    let spec = spec_from_files(dhcp, network, &plan).unwrap();
    n.services.reload(&spec, &mut n.stack, n.now)
}

fn a6(s: &str) -> Ipv6Address {
    s.parse().unwrap()
}

#[test]
fn new_ra_flags_and_ra_slaac_go_out_at_once_and_dhcpv6_stops() {
    let mut n = net("192.168.1.50/24", None);
    let first = run(&mut n, 100);
    assert!(!first.is_empty());
    assert_eq!(
        flags(&first[0]),
        (true, true),
        "the image: managed-config other-config"
    );
    assert!(prefixes(&first[0])[0].1, "ra_slaac 1: A set");
    assert!(n.services.summary().contains("dhcpv6: eth0"));
    // past the initial advertisements: the next periodic one is minutes away
    let _ = run(&mut n, 5_000);
    let dhcp = DHCP
        .replace(
            "\tlist ra_flags 'managed-config'\n\tlist ra_flags 'other-config'\n",
            "\tlist ra_flags 'none'\n",
        )
        .replace("option ra_slaac '1'", "option ra_slaac '0'")
        .replace("option dhcpv6 'server'", "option dhcpv6 'disabled'");
    let said = reload(&mut n, &dhcp, &wan_static_network());
    assert_said_start(&said, "ra: eth0 now");
    assert_said(&said, "dhcpv6: eth0 stopped (0 leases dropped)");
    assert!(
        !n.services.summary().contains("dhcpv6:"),
        "{}",
        n.services.summary()
    );
    // the new advertisement within a poll
    let got = run(&mut n, 2);
    assert_eq!(got.len(), 1, "sent at once");
    assert_eq!(flags(&got[0]), (false, false));
    let p = prefixes(&got[0]);
    assert_eq!(p.len(), 1);
    assert!(!p[0].1, "ra_slaac 0: A cleared");
    assert_eq!(
        (p[0].2, p[0].3),
        (5400, 2700),
        "still announced: only SLAAC is off"
    );
    // the same files again: nothing to say, nothing sent at once
    assert!(reload(&mut n, &dhcp, &wan_static_network()).is_empty());
    // then as at start: the next ones within 16 s
    let more = run(&mut n, 1_700);
    assert!(!more.is_empty());
    // and back: DHCPv6 starts again, M and O return
    let said = reload(&mut n, DHCP, &wan_static_network());
    assert_said(&said, "dhcpv6: eth0 started");
    let got = run(&mut n, 400);
    assert_eq!(flags(got.last().unwrap()), (true, true));
}

#[test]
fn a_new_ip6hint_moves_the_lan_and_the_old_prefix_goes_with_lifetimes_0() {
    let mut n = net("192.168.1.50/24", None);
    let _ = run(&mut n, 100);
    let has = |n: &Net, a: &str| {
        n.stack.ifs[0]
            .iface
            .ip_addrs()
            .contains(&IpCidr::new(a6(a).into(), 64))
    };
    assert!(has(&n, "fd12:3456:789a::1"));
    let network = wan_static_network().replace(
        "option ip6assign '60'",
        "option ip6assign '60'\n\toption ip6hint '10'", // the /60 at 0x10: :100::
    );
    let said = reload(&mut n, DHCP, &network);
    assert_said(&said, "eth0: fd12:3456:789a::1/64 removed");
    assert_said(&said, "eth0: fd12:3456:789a:100::1/64 added");
    assert_said_start(&said, "dhcpv6: eth0 now fd12:3456:789a:100::/64");
    assert!(!has(&n, "fd12:3456:789a::1") && has(&n, "fd12:3456:789a:100::1"));
    let got = run(&mut n, 400);
    let p = prefixes(got.last().expect("an advertisement at once"));
    assert!(
        p.contains(&(a6("fd12:3456:789a:100::"), true, 5400, 2700)),
        "the new /64: {p:?}"
    );
    assert!(
        p.contains(&(a6("fd12:3456:789a::"), true, 0, 0)),
        "the old /64 withdrawn: {p:?}"
    );
    // the RDNSS follows: the router's new ULA address
    let ra = got.last().unwrap();
    let at = ra
        .windows(2)
        .position(|w| w == [25, 3])
        .expect("an RDNSS option");
    assert_eq!(&ra[at + 8..at + 24], &a6("fd12:3456:789a:100::1").octets());
}

#[test]
fn ra_off_sends_a_final_advertisement_then_nothing() {
    let mut n = net("192.168.1.50/24", None);
    let _ = run(&mut n, 100);
    let dhcp = DHCP.replace("option ra 'server'", "option ra 'disabled'");
    let said = reload(&mut n, &dhcp, &wan_static_network());
    assert_said(&said, "ra: eth0 stopped (final advertisement sent)");
    // sent by the reload itself (the interface stops)
    let got = take_ras(&mut n);
    assert_eq!(got.len(), 1);
    assert_eq!(&got[0][6..8], &[0, 0], "router lifetime 0");
    assert_eq!(
        prefixes(&got[0]),
        [(a6("fd12:3456:789a::"), true, 0, 0)],
        "the prefix with lifetimes 0"
    );
    assert!(run(&mut n, 3_000).is_empty(), "no more advertisements");
    assert!(!n.services.summary().contains("ra:"));
}

#[test]
fn an_mtu_in_the_files_is_the_routers_at_start_and_after_a_reload() {
    let mut n = net("192.168.1.50/24", None);
    let wan = n.gw.port_of(1).unwrap();
    assert_eq!(n.gw.router.interfaces().get(wan).unwrap().mtu(), 1500);
    let network = wan_static_network().replace(
        "option proto 'static'\n\toption ipaddr '10.0.0.2'",
        "option proto 'static'\n\toption mtu '1400'\n\toption ipaddr '10.0.0.2'",
    );
    let plan = netplan::plan(&network, Some(FIREWALL), &["eth0", "eth1"], 64, 5).unwrap();
    let said = n.gw.set_mtus(plan.gateway.as_ref().unwrap(), &n.stack.ifs);
    assert_eq!(said, ["eth1: mtu 1400"]);
    let i = n.gw.router.interfaces().get(wan).unwrap();
    assert_eq!((i.mtu(), i.mtu6()), (1400, 1400), "both families");
    // over the link's: the link's
    let big = network.replace("'1400'", "'9000'");
    let plan = netplan::plan(&big, Some(FIREWALL), &["eth0", "eth1"], 64, 5).unwrap();
    assert_eq!(
        n.gw.set_mtus(plan.gateway.as_ref().unwrap(), &n.stack.ifs),
        ["eth1: mtu 1500"]
    );
    // a new router from the files takes it at start
    let plan = netplan::plan(&network, Some(FIREWALL), &["eth0", "eth1"], 64, 5).unwrap();
    let gw = Gateway::new(plan.gateway.as_ref().unwrap(), &mut n.stack.ifs).unwrap();
    assert_eq!(
        gw.router
            .interfaces()
            .get(gw.port_of(1).unwrap())
            .unwrap()
            .mtu(),
        1400
    );
}

#[test]
fn a_changed_dhcpv4_pool_runs_at_once_with_the_leases_that_fit_it() {
    let store = MemStore::default();
    let mut n = net("", Some(store.clone()));
    let ip = lease(&mut n);
    assert!(n.services.save_leases(n.now));
    assert_eq!(n.services.save_at(), None, "saved");
    let unchanged = reload(&mut n, DHCP, &wan_static_network());
    assert!(
        !unchanged
            .iter()
            .any(|l| l.starts_with("dhcpd") || l.starts_with("dns")),
        "the same files change nothing: {unchanged:?}"
    );
    let dhcp = DHCP.replace("option leasetime '12h'", "option leasetime '2h'");
    let said = reload(&mut n, &dhcp, &wan_static_network());
    assert_said(
        &said,
        "dhcpd: eth0 now 192.168.1.100-249, lease 2h (1 leases kept, 0 dropped)",
    );
    assert!(n
        .services
        .summary()
        .starts_with("dhcpd: eth0 192.168.1.100-249, lease 2h;"));
    assert!(
        n.services.save_at().is_some(),
        "the lease file is due again: the new server's counters start at 0, the mark must not go back"
    );
    let mut text = String::new();
    assert_eq!(n.services.write_leases(&mut text, n.now), Ok(1));
    assert!(text.contains(&ip.to_string()), "the lease kept: {text}");
    // the new server answers: the client, starting over, gets its address back
    for (_, s) in n.lan_host.sockets.iter_mut() {
        if let Some(d) = dhcpv4::Socket::downcast_mut(s) {
            d.reset();
        }
    }
    n.until(2000, |n| {
        (n.services.dhcp_counters()[0].1.ack > 0).then_some(())
    })
    .expect("acked by the new server");
    let c = *n.services.dhcp_counters()[0].1;
    assert_eq!(
        (c.discover, c.offer, c.ack),
        (1, 1, 1),
        "the new server's own counters"
    );
    // one ACK each, old server and new: the file must still be due
    assert!(n.services.save_at().is_some(), "the new lease to be saved");
    let mut text = String::new();
    assert_eq!(n.services.write_leases(&mut text, n.now), Ok(1));
    assert!(
        text.contains(&ip.to_string()) && text.contains(" 2h0m0s "),
        "the same address, for the new lease time: {text}"
    );
    // `ignore '1'`: the server stops, its leases dropped, and DNS with it (the
    // forwarder serves the pools' interfaces)
    let off = dhcp.replace(
        "option interface 'lan'\n\toption start",
        "option interface 'lan'\n\toption ignore '1'\n\toption start",
    );
    assert_ne!(off, dhcp);
    let said = reload(&mut n, &off, &wan_static_network());
    assert_said_start(&said, "dhcpd: eth0 stopped (");
    assert!(
        !n.services.summary().contains("dhcpd:"),
        "{}",
        n.services.summary()
    );
    // and back
    let said = reload(&mut n, DHCP, &wan_static_network());
    assert_said(&said, "dhcpd: eth0 started, 192.168.1.100-249, lease 12h");
    let _ = lease(&mut n);
}

#[test]
fn changed_dns_settings_take_a_new_forwarder() {
    let mut n = net("", None);
    let ip = lease(&mut n);
    let dhcp = DHCP.replace("option domain 'lan'", "option domain 'home'");
    let said = reload(&mut n, &dhcp, &wan_static_network());
    assert_said(&said, "dns: new settings (cache emptied)");
    assert!(
        n.services.summary().contains("dns: OpenWrt.home"),
        "{}",
        n.services.summary()
    );
    let mut c = udp_socket();
    c.bind(40001).unwrap();
    let hc = n.lan_host.sockets.add(c);
    ask(&mut n, hc, &query(7, "lan1.home", 1));
    let r = reply_to(&mut n, hc).expect("answered");
    assert_eq!(
        a_records(&r),
        [ip.octets()],
        "the lease under the new domain"
    );
}

/// The shell's `reload` after `/etc/config/network` changed from `old` to `network`:
/// each interface's IPv4 settings ([`crate::ifreload`]), then the services.
fn reload_network(n: &mut Net, old: &str, network: &str) -> Vec<String> {
    let was = netplan::plan(old, Some(FIREWALL), &["eth0", "eth1"], 64, 5).unwrap();
    let plan = netplan::plan(network, Some(FIREWALL), &["eth0", "eth1"], 64, 5).unwrap();
    let mut said = Vec::new();
    for (vif, _, c) in &plan.ifaces {
        let before = Ipv4Files::of(was.config_of(vif).unwrap());
        let netif = n.stack.by_name(vif).unwrap();
        said.extend(reload_ipv4(netif, &before, &Ipv4Files::of(c)).1);
    }
    let spec = spec_from_files(DHCP, network, &plan).unwrap();
    said.extend(n.services.reload(&spec, &mut n.stack, n.now));
    said
}

#[test]
fn a_new_lan_address_moves_the_router_its_pool_and_its_dns() {
    let mut n = net("", None);
    let old = lease(&mut n);
    assert_eq!(&old.octets()[..3], &[192, 168, 1]);
    let network = wan_static_network().replace("'192.168.1.1'", "'192.168.7.1'");
    assert_ne!(network, wan_static_network());
    let said = reload_network(&mut n, &wan_static_network(), &network);
    for line in [
        "eth0: 192.168.1.1/24 removed",
        "eth0: 192.168.7.1/24 added",
        "dhcpd: eth0 now 192.168.7.100-249, lease 12h (0 leases kept, 1 dropped)",
        "dns: new settings (cache emptied)",
    ] {
        assert_said(&said, line);
    }
    assert!(
        !said.iter().any(|l| l.starts_with("eth1")),
        "the WAN unchanged: {said:?}"
    );
    assert!(
        n.services
            .summary()
            .contains("dns: OpenWrt.lan on 192.168.7.1 "),
        "{}",
        n.services.summary()
    );
    // the client starting over (as after the new server's NAK at its renewal)
    for (_, s) in n.lan_host.sockets.iter_mut() {
        if let Some(d) = dhcpv4::Socket::downcast_mut(s) {
            d.reset();
        }
    }
    let ip = n
        .until(3000, |n| {
            n.lan_host
                .ipv4()
                .filter(|a| a.octets()[..3] == [192, 168, 7])
        })
        .expect("a lease in the new subnet");
    assert!((100..=249).contains(&ip.octets()[3]), "{ip}");
    assert_eq!(
        n.lan_host.default_gw4(),
        Some(Ipv4Address::new(192, 168, 7, 1)),
        "the router at its new address"
    );
    // the forwarder answers at the new address, with it as the router's name
    let mut c = udp_socket();
    c.bind(40002).unwrap();
    let hc = n.lan_host.sockets.add(c);
    n.lan_host
        .sockets
        .get_mut::<udp::Socket>(hc)
        .send_slice(
            &query(9, "OpenWrt.lan", 1),
            (IpAddress::v4(192, 168, 7, 1), 53),
        )
        .unwrap();
    let (r, m) = datagram(&mut n, lan, hc).expect("answered");
    assert_eq!(
        m.endpoint,
        IpEndpoint::new(IpAddress::v4(192, 168, 7, 1), 53)
    );
    assert_eq!(a_records(&r), [[192, 168, 7, 1]]);
    // and the router itself took it: its address on the LAN port
    let lan_port = n.gw.port_of(0).unwrap();
    assert_eq!(
        n.gw.router
            .interfaces()
            .get(lan_port)
            .unwrap()
            .primary_addr(),
        Some(core::net::Ipv4Addr::new(192, 168, 7, 1))
    );
}
