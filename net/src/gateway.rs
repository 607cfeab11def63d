//! The router in front of the stack: every frame an interface receives goes through
//! [`xenlet_router`]'s forwarding core first; what is for the router itself (its
//! addresses, broadcast, ARP, IPv6) is queued for smoltcp unchanged, everything else
//! is forwarded, with connection tracking and masquerade ([`Netfilter`]) on the way.
//!
//! The links are wrapped in [`Routed`], whose receive side (the one smoltcp sees)
//! only yields the frames the router handed to the local stack; the router itself
//! takes frames from the inner link and sends on any interface's inner link. The
//! interfaces' addresses stay smoltcp's (static or by DHCP): [`Gateway::poll`] copies
//! them into the router's table when they change, with the DHCP default route and the
//! masquerading address.
//!
//! With a firewall ([`GatewaySpec::firewall`], compiled by [`crate::fwconfig`]) the
//! router's own services are behind its input chain: a frame the firewall refuses is
//! never queued for smoltcp. The flows of what smoltcp sends are noted on the way out
//! ([`Routed`] keeps their tuples until the next poll) so that their replies are
//! established.
//!
//! IPv6: the interfaces' global IPv6 addresses (the LAN's ULA address) are copied
//! into the router too, with their connected routes, so IPv6 between the LAN and the
//! router's own addresses works (and nothing else is routed until an upstream gives
//! a route). On a link that advertises ([`Link::keep_solicitations`]) Router
//! Solicitations for the router are kept aside ([`Link::take_solicitation`], at most
//! [`SOLICITATIONS`] waiting, more dropped and counted) for the router advertisement
//! service (`crate::lanservices`); likewise DHCPv6 frames to UDP port 547
//! ([`Link::keep_dhcpv6`], [`Link::take_dhcpv6`], at most [`DHCPV6_FRAMES`]) for the
//! DHCPv6 server: smoltcp does not receive on ff02::1:2.

use crate::backlog::Backlog;
use crate::icmplimit::IcmpLimit;
use crate::iface::NetIf;
use crate::kept::Kept;
use crate::link::{Link, LinkStats, QueueStats, RxChecksum};
use crate::reflect::{self, Reflector};
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use smoltcp::wire::{EthernetAddress, IpCidr, Ipv4Address};
use xenlet_router::dhcp6d;
use xenlet_router::firewall::local::{is_own_client, sent_tuple_of, tuple_of};
use xenlet_router::firewall::ruleset::Ruleset;
use xenlet_router::firewall::timematch::WallClock;
use xenlet_router::firewall::Firewall;
use xenlet_router::flow::Tuple;
use xenlet_router::forward::{Disposition, Output, Router, RouterConfig, TxFull, TxMeta};
use xenlet_router::iface::IfConfig as PortConfig;
use xenlet_router::ipv6;
use xenlet_router::nat::{Masquerade, PortRange};
use xenlet_router::netfilter::{self, Netfilter};
use xenlet_router::ra::{advert, solicit};
use xenlet_router::route::Ipv4Net;
use xenlet_router::route::RouteProto;
use xenlet_router::route6::{Ipv6Net, Route6};

/// `::/0`.
const DEFAULT6: Ipv6Net = match Ipv6Net::new(core::net::Ipv6Addr::UNSPECIFIED, 0) {
    Some(n) => n,
    None => unreachable!(),
};
use xenlet_router::{IfId, Millis};

/// Frames the router takes from one interface per [`Gateway::poll`]: keeps one busy
/// link from starving the others and the shell.
const RX_BUDGET: usize = 256;
/// Frames waiting for smoltcp per interface; more are dropped and counted.
const LOCAL_QUEUE: usize = 512;
/// Bytes (allocated) those frames may hold per interface: 512 MTU frames fit, but
/// GSO frames of 64 KiB (128 KiB allocated) would make the count alone a 64 MiB
/// bound, far past a small guest's heap.
const LOCAL_QUEUE_BYTES: usize = 1 << 20;
/// Conntrack entries reclaimed per poll at most.
const EXPIRE_BUDGET: usize = 64;
/// Flows of the router's own packets kept per link between two polls (for the
/// firewall's input chain); more are forgotten and counted.
const SENT_FLOWS: usize = 1024;
/// Port forwards to the router itself followed per link (their replies wait for
/// [`Gateway::poll`] to translate them); a new one past this bound is refused.
const LOCAL_DNAT_FLOWS: usize = 256;
/// Frames of those replies held between two polls; more are dropped and counted.
const HELD_FRAMES: usize = 256;

/// Router Solicitations kept per link for the advertisement service; more are
/// dropped and counted (one answer serves many anyway).
pub const SOLICITATIONS: usize = 8;
/// DHCPv6 frames kept per link for the DHCPv6 server; more are dropped and counted
/// (the clients retransmit).
pub const DHCPV6_FRAMES: usize = 16;

/// Router Advertisements kept on the WAN for its router discovery; more are
/// dropped and counted.
pub const ADVERTS: usize = 8;

/// How the local stack asked for a held frame to be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendKind {
    Plain,
    Gso(u16),
    CsumBlank,
}

/// A link whose received frames pass through the router first.
pub struct Routed<L: Link> {
    /// The link itself (the router receives and sends here).
    pub inner: L,
    local: VecDeque<(Vec<u8>, RxChecksum)>,
    /// Bytes allocated for the frames in `local`.
    local_bytes: usize,
    /// Whether a router takes the frames (else this is a plain link).
    routed: bool,
    local_dropped: u64,
    /// Flows of what the local stack sent since the last poll.
    sent: VecDeque<Tuple>,
    sent_dropped: u64,
    /// Flows (as the local stack sends them) of port forwards to the router itself:
    /// their frames are held for the router to translate.
    local_dnat: Vec<Tuple>,
    held: VecDeque<(Vec<u8>, SendKind)>,
    held_dropped: u64,
    /// Router Solicitations for the advertisement service, if it asked
    /// ([`Link::keep_solicitations`]).
    solicitations: Kept,
    /// DHCPv6 frames for the DHCPv6 server, if it asked ([`Link::keep_dhcpv6`]).
    dhcpv6: Kept,
    /// Router Advertisements kept aside for the WAN's router discovery
    /// ([`Link::keep_adverts`]).
    adverts: Kept,
    /// Unicast frames to us sent straight back, when on (never while routed).
    reflect: Reflector,
    /// The limits on the local stack's ICMP errors while routed.
    icmp_limit: IcmpLimit,
}

impl<L: Link> Routed<L> {
    /// A plain link until a [`Gateway`] takes it.
    pub fn new(inner: L) -> Self {
        Routed {
            inner,
            local: VecDeque::new(),
            local_bytes: 0,
            routed: false,
            local_dropped: 0,
            sent: VecDeque::new(),
            sent_dropped: 0,
            local_dnat: Vec::new(),
            held: VecDeque::new(),
            held_dropped: 0,
            solicitations: Kept::new(SOLICITATIONS),
            dhcpv6: Kept::new(DHCPV6_FRAMES),
            adverts: Kept::new(ADVERTS),
            reflect: Reflector::default(),
            icmp_limit: IcmpLimit::new(0),
        }
    }

    /// The local stack's ICMP errors not sent for their rate limits.
    pub fn icmp_limited(&self) -> u64 {
        self.icmp_limit.limited
    }

    /// DHCPv6 frames dropped because [`DHCPV6_FRAMES`] waited already.
    pub fn dhcpv6_dropped(&self) -> u64 {
        self.dhcpv6.dropped()
    }

    /// Router Advertisements dropped because [`ADVERTS`] waited already.
    pub fn adverts_dropped(&self) -> u64 {
        self.adverts.dropped()
    }

    /// Router Solicitations dropped because [`SOLICITATIONS`] waited already.
    pub fn solicitations_dropped(&self) -> u64 {
        self.solicitations.dropped()
    }

    /// Frames of replies to port forwards to the router dropped because too many
    /// waited for translation.
    pub fn held_dropped(&self) -> u64 {
        self.held_dropped
    }

    /// Holds `frame` for translation if it belongs to a port forward to the router;
    /// whether it did (or dropped it: it must not leave untranslated).
    fn hold(&mut self, frame: &[u8], kind: SendKind) -> bool {
        if self.local_dnat.is_empty() || frame.get(12..14) != Some(&[0x08, 0x00][..]) {
            return false;
        }
        let Some(t) = frame.get(14..).and_then(tuple_of) else {
            return false;
        };
        if !self.local_dnat.contains(&t) {
            return false;
        }
        if self.held.len() >= HELD_FRAMES {
            self.held_dropped += 1;
        } else {
            self.held.push_back((frame.to_vec(), kind));
        }
        true
    }

    /// Frames for the local stack dropped because its queue was full.
    pub fn local_dropped(&self) -> u64 {
        self.local_dropped
    }

    /// Flows of the local stack's packets forgotten because too many were sent
    /// between two polls.
    pub fn sent_dropped(&self) -> u64 {
        self.sent_dropped
    }

    /// Sends a frame of the local stack: noted for the firewall, held if it is a
    /// reply of a port forward to the router, else given to the link.
    fn send_plain(&mut self, frame: &[u8]) -> Result<(), String> {
        self.note_sent(frame);
        if self.hold(frame, SendKind::Plain) {
            return Ok(());
        }
        self.inner.send(frame)
    }

    /// Notes the flow of a frame the local stack sends (IPv4 only), for the
    /// firewall: replies to it are established.
    fn note_sent(&mut self, frame: &[u8]) {
        if !self.routed || frame.get(12..14) != Some(&[0x08, 0x00][..]) {
            return;
        }
        let Some(t) = frame.get(14..).and_then(sent_tuple_of) else {
            return;
        };
        if self.sent.back() == Some(&t) {
            return; // the same flow again: one note is enough
        }
        if self.sent.len() >= SENT_FLOWS {
            // the oldest flow the router serves goes first: a flood of its answers
            // must not make it forget a flow it started (its DNS queries upstream)
            let k = self
                .sent
                .iter()
                .position(|o| !is_own_client(o))
                .unwrap_or(0);
            let _ = self.sent.remove(k);
            self.sent_dropped += 1;
        }
        self.sent.push_back(t);
    }

    fn queue_local(&mut self, mut frame: Vec<u8>, csum: RxChecksum) {
        if self.solicitations.is_on() && solicit::is_solicitation(&frame) {
            // smoltcp has no use for it: the advertisement service's
            self.solicitations.push(frame);
            return;
        }
        if self.dhcpv6.is_on() && dhcp6d::message::is_to_server(&frame) {
            if csum == RxChecksum::Blank {
                // the DHCPv6 server checks UDP checksums; a backend that offloads
                // IPv6 checksums (`feature-ipv6-csum-offload`) may leave it partial
                crate::tso::fill_l4_checksum(&mut frame);
            }
            // smoltcp does not take ff02::1:2: the DHCPv6 server's
            self.dhcpv6.push(frame);
            return;
        }
        if self.adverts.is_on() && advert::is_advert(&frame) {
            // the WAN's router discovery's (the LAN's own are never received here:
            // only the link that keeps them, the WAN, sets this)
            self.adverts.push(frame);
            return;
        }
        let bytes = frame.capacity();
        if self.local.len() < LOCAL_QUEUE && self.local_bytes + bytes <= LOCAL_QUEUE_BYTES {
            self.local_bytes += bytes;
            self.local.push_back((frame, csum));
        } else {
            self.local_dropped += 1;
        }
    }
}

/// Whether `frame` is an IPv4 ICMP echo reply, unreachable, time exceeded or
/// parameter problem with DF set (what [`icmp_without_df`] changes): a few byte
/// reads, before any copy.
fn is_icmp_with_df(frame: &[u8]) -> bool {
    use xenlet_router::ipv4;
    let Some(ip) = frame.get(14..) else {
        return false;
    };
    let hl = ipv4::header_len(ip);
    frame.get(12..14) == Some(&[0x08, 0x00][..])
        && ip.get(9) == Some(&1)
        && hl >= 20
        && ipv4::be16(ip, ipv4::FRAG).is_some_and(|f| f & ipv4::DF != 0)
        && matches!(ip.get(hl), Some(0 | 3 | 11 | 12))
}

/// The longest frame [`icmp_without_df`] copies (an Ethernet frame of a 1500-byte
/// packet).
const ICMP_DF_COPY: usize = 1514;

/// The local stack's ICMP messages as Linux sends its own: without DF. smoltcp sets
/// DF on every packet it emits; Linux's ICMP sockets do not (IP_PMTUDISC_DONT), so
/// an echo reply or an error on a path with a smaller MTU is fragmented, not lost
/// (the router differential's wan-ping and lan-to-router-closed-udp). Echo replies,
/// unreachables, time exceeded and parameter problems only: the copy in `buf` with
/// DF cleared and the header checksum made again, or None to send `frame` as it is.
fn icmp_without_df<'a>(frame: &[u8], buf: &'a mut [u8; ICMP_DF_COPY]) -> Option<&'a [u8]> {
    use xenlet_router::ipv4;
    if frame.len() > buf.len() || !is_icmp_with_df(frame) {
        return None;
    }
    let flags = ipv4::be16(frame.get(14..)?, ipv4::FRAG)?;
    let out = buf.get_mut(..frame.len())?;
    out.copy_from_slice(frame);
    let ip = &mut out[14..];
    let cleared = (flags & !ipv4::DF).to_be_bytes();
    ip[ipv4::FRAG..ipv4::FRAG + 2].copy_from_slice(&cleared);
    ipv4::fill_header_checksum(ip);
    Some(out)
}

impl<L: Link> Link for Routed<L> {
    fn mac(&self) -> [u8; 6] {
        self.inner.mac()
    }
    fn routes(&self) -> bool {
        self.routed
    }
    fn recv(&mut self) -> Option<Vec<u8>> {
        self.recv_flagged().map(|(f, _)| f)
    }
    fn recv_flagged(&mut self) -> Option<(Vec<u8>, RxChecksum)> {
        if self.routed {
            let f = self.local.pop_front()?;
            self.local_bytes = self.local_bytes.saturating_sub(f.0.capacity());
            Some(f)
        } else {
            loop {
                let (mut f, c) = self.inner.recv_flagged()?;
                if !(self.reflect.on && reflect::bounce(&mut f, self.inner.mac())) {
                    return Some((f, c));
                }
                match self.inner.send(&f) {
                    Ok(()) => self.reflect.reflected += 1,
                    Err(_) => self.reflect.failed += 1,
                }
            }
        }
    }
    fn set_reflect(&mut self, on: bool) -> Result<(), String> {
        if on && self.routed {
            return Err(String::from("routed: its frames are the router's"));
        }
        self.reflect.on = on;
        Ok(())
    }
    fn reflector(&self) -> Option<Reflector> {
        Some(self.reflect)
    }
    fn can_send(&mut self) -> bool {
        self.inner.can_send()
    }
    fn send(&mut self, frame: &[u8]) -> Result<(), String> {
        // a router limits its own ICMP errors as Linux does (a flood of datagrams
        // to a closed port gets a few port unreachables, not one each); dropped
        // here, as a sent frame
        if self.routed && !self.icmp_limit.allow(frame) {
            return Ok(());
        }
        // a router's neighbour advertisements say so (RFC 4861 §7.2.5): the
        // stack's answers do not
        if self.routed {
            let mut copy = [0u8; crate::garp::NA_COPY];
            if let Some(f) = crate::garp::with_router_flag(frame, &mut copy) {
                return self.send_plain(f);
            }
        }
        // the copy (and its buffer) only for the stack's ICMP messages with DF, not
        // for every frame it sends
        if is_icmp_with_df(frame) {
            let mut copy = [0u8; ICMP_DF_COPY];
            if let Some(f) = icmp_without_df(frame, &mut copy) {
                return self.send_plain(f);
            }
        }
        self.send_plain(frame)
    }
    fn stats(&self) -> LinkStats {
        self.inner.stats()
    }
    fn broken(&self) -> Option<&str> {
        self.inner.broken()
    }
    fn gso_tcpv4(&self) -> bool {
        self.inner.gso_tcpv4()
    }
    fn gso_tcpv6(&self) -> bool {
        self.inner.gso_tcpv6()
    }
    fn send_gso(&mut self, frame: &[u8], mss: u16) -> Result<(), String> {
        self.note_sent(frame);
        if self.hold(frame, SendKind::Gso(mss)) {
            return Ok(());
        }
        self.inner.send_gso(frame, mss)
    }
    fn tx_free_slots(&self) -> usize {
        self.inner.tx_free_slots()
    }
    fn queue_stats(&self) -> Vec<QueueStats> {
        self.inner.queue_stats()
    }
    fn driver_stats(&self) -> Vec<(&'static str, u64)> {
        self.inner.driver_stats()
    }
    fn mtu(&self) -> usize {
        self.inner.mtu()
    }
    fn bridge_view(&self) -> Option<crate::link::BridgeView> {
        self.inner.bridge_view()
    }
    fn recv_meta(&mut self) -> Option<(Vec<u8>, RxChecksum, Option<u16>)> {
        self.recv_flagged().map(|(f, c)| (f, c, None))
    }
    fn tx_csum_blank(&self) -> bool {
        self.inner.tx_csum_blank()
    }
    fn send_csum_blank(&mut self, frame: &[u8]) -> Result<(), String> {
        self.note_sent(frame);
        if self.hold(frame, SendKind::CsumBlank) {
            return Ok(());
        }
        self.inner.send_csum_blank(frame)
    }
    fn take_solicitation(&mut self) -> Option<Vec<u8>> {
        self.solicitations.take()
    }
    fn keep_solicitations(&mut self, on: bool) {
        self.solicitations.keep(on);
    }
    fn take_dhcpv6(&mut self) -> Option<Vec<u8>> {
        self.dhcpv6.take()
    }
    fn keep_dhcpv6(&mut self, on: bool) {
        self.dhcpv6.keep(on);
    }
    fn take_advert(&mut self) -> Option<Vec<u8>> {
        self.adverts.take()
    }
    fn keep_adverts(&mut self, on: bool) {
        self.adverts.keep(on);
    }
}

/// One interface of the router, as configured (OpenWrt's `network` and `firewall`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSpec {
    /// The stack's interface name (`eth0`).
    pub name: String,
    /// Masquerade what leaves by it (the firewall zone's `masq`).
    pub masq: bool,
    /// Clamp the TCP MSS of SYNs leaving by it (the zone's `mtu_fix`).
    pub mss_clamp: bool,
    /// The MTU the files set (`option mtu`); the router forwards no larger
    /// packets by it (at most the link's).
    pub mtu: Option<u16>,
}

impl PortSpec {
    /// A LAN port as fw4's defaults make it: no masquerade, no MSS clamping.
    pub fn lan(name: &str) -> Self {
        PortSpec {
            name: name.into(),
            masq: false,
            mss_clamp: false,
            mtu: None,
        }
    }

    /// A WAN port as fw4's defaults make it: masquerade and MSS clamping.
    pub fn wan(name: &str) -> Self {
        PortSpec {
            name: name.into(),
            masq: true,
            mss_clamp: true,
            mtu: None,
        }
    }
}

/// How the router is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewaySpec {
    /// The routed interfaces.
    pub ports: Vec<PortSpec>,
    /// Conntrack entries.
    pub conntrack_max: usize,
    /// Seed of the conntrack hash (entropy: a known seed lets a remote host pick
    /// colliding flows).
    pub hash_seed: u64,
    /// The firewall (from `/etc/config/firewall` by [`crate::fwconfig`], with the
    /// router ids of [`PortSpec`] order: the n-th port is `IfId(n)`); `None` forwards
    /// everything.
    pub firewall: Option<Ruleset>,
}

/// What [`Gateway::poll`] knows of one routed interface.
struct Port {
    /// Index in the stack's interface list.
    netif: usize,
    id: IfId,
    masq: bool,
    /// The address last copied into the router.
    addr: Option<Ipv4Net>,
    /// The DHCP default route last copied.
    gw: Option<Ipv4Address>,
    /// The global IPv6 addresses last copied.
    addrs6: Vec<Ipv6Net>,
    /// The IPv6 default route last copied.
    gw6: Option<core::net::Ipv6Addr>,
    /// Frames routed out by it that wait for room in its TX ring.
    backlog: Backlog,
}

/// The router: forwarding core, conntrack/NAT, and which stack interfaces it routes.
pub struct Gateway {
    /// The forwarding core.
    pub router: Router,
    /// Connection tracking and NAT.
    pub netfilter: Netfilter,
    ports: Vec<Port>,
    last_poll: Option<Millis>,
    /// The delegated prefix routed to a LAN port ([`Gateway::set_delegated6`]).
    delegated6: Option<(Ipv6Net, IfId)>,
    /// Frames handed to the local stack.
    pub local: u64,
    /// Port forwards to the router refused because [`LOCAL_DNAT_FLOWS`] were
    /// followed on their link.
    pub local_dnat_refused: u64,
    /// Replies of port forwards to the router dropped (conntrack found them
    /// invalid).
    pub local_dnat_dropped: u64,
    /// The wall clock for the firewall's time matches, kept across reloads.
    wall_clock: Option<WallClock>,
}

/// Sends the router's frames on the interfaces' inner links.
struct Out<'a, L: Link> {
    ifs: &'a mut [NetIf<Routed<L>>],
    ports: &'a mut [Port],
}

impl<L: Link> Output for Out<'_, L> {
    /// Sends by the port's backlog: a full ring makes the frame wait there (in
    /// order); a full backlog is the router's TxFull drop.
    fn send(&mut self, ifc: IfId, frame: &[u8], tx: TxMeta) -> Result<(), TxFull> {
        let port = self.ports.iter_mut().find(|p| p.id == ifc).ok_or(TxFull)?;
        let link = &mut self.ifs.get_mut(port.netif).ok_or(TxFull)?.link.inner;
        port.backlog.send(link, frame, tx)
    }
}

impl Gateway {
    /// Takes the interfaces named in `spec` from the stack's `ifs`; an interface
    /// that does not exist is an error naming it.
    pub fn new<L: Link>(spec: &GatewaySpec, ifs: &mut [NetIf<Routed<L>>]) -> Result<Self, String> {
        let mut router = Router::new(RouterConfig {
            interfaces: spec.ports.len().max(1),
            // Reassembly memory in step with the conntrack table, which is sized
            // to the heap: 32 bytes a flow, 64 KiB to 1 MiB (a few 64 KiB
            // datagrams at once at memory = 8; Linux allows 4 MiB).
            defrag: xenlet_router::defrag::DefragConfig {
                max_bytes: (spec.conntrack_max * 32).clamp(64 << 10, 1 << 20),
                ..Default::default()
            },
            ..RouterConfig::default()
        });
        let mut ports = Vec::new();
        let mut masq = Vec::new();
        for p in &spec.ports {
            let netif = ifs
                .iter()
                .position(|n| n.name == p.name)
                .ok_or_else(|| format!("router: no interface {}", p.name))?;
            let n = &mut ifs[netif];
            let link_mtu = u16::try_from(n.link.mtu()).unwrap_or(1500);
            let mtu = p.mtu.map_or(link_mtu, |m| m.min(link_mtu));
            let id = router
                .add_interface(PortConfig {
                    name: p.name.clone(),
                    mac: EthernetAddress(n.link.mac()),
                    mtu,
                    has_tx_gso: n.link.inner.gso_tcpv4(),
                    has_tx_gso6: n.link.inner.gso_tcpv6(),
                    has_tx_csum_offload: n.link.inner.tx_csum_blank(),
                    is_mss_clamped: p.mss_clamp,
                })
                .map_err(|e| format!("router: {}: {e:?}", p.name))?;
            if p.masq {
                masq.push(Masquerade {
                    iface: id,
                    addr: None,
                });
            }
            n.link.routed = true;
            n.link.reflect.on = false;
            n.link.icmp_limit =
                IcmpLimit::new(spec.hash_seed as u32 ^ 0x1c3b_0000 ^ u32::from(id.0));
            ports.push(Port {
                netif,
                id,
                masq: p.masq,
                addr: None,
                gw: None,
                addrs6: Vec::new(),
                gw6: None,
                // its flows hashed with a key of the boot's entropy
                backlog: Backlog::new(
                    (spec.hash_seed.rotate_left(17) >> 32) as u32 ^ u32::from(id.0),
                ),
            });
        }
        let mut netfilter = Netfilter::new(netfilter::Config {
            capacity: spec.conntrack_max.max(1),
            // IPv6 flows in a table of their own, a quarter the size (176 bytes
            // an entry against IPv4's 128; no NAT mappings)
            capacity6: (spec.conntrack_max / 4).clamp(64, 4096),
            masquerade: masq,
            // clear of smoltcp's ephemeral ports (49152-65535), which the router's
            // own connections on the same address use
            ports: PortRange {
                min: 1024,
                max: 49151,
            },
            hash_seed: spec.hash_seed,
            ..netfilter::Config::default()
        });
        if let Some(rs) = &spec.firewall {
            let fw = Firewall::new(rs.clone()).map_err(|e| format!("firewall: {e:?}"))?;
            netfilter.set_firewall(Some(fw));
        }
        Ok(Gateway {
            router,
            netfilter,
            ports,
            last_poll: None,
            delegated6: None,
            local: 0,
            local_dnat_refused: 0,
            local_dnat_dropped: 0,
            wall_clock: None,
        })
    }

    /// Stops routing: the links hand their frames straight to the stack again (an
    /// interface went away, so the port numbering no longer holds).
    pub fn release<L: Link>(self, ifs: &mut [NetIf<Routed<L>>]) {
        for p in &self.ports {
            if let Some(n) = ifs.get_mut(p.netif) {
                n.link.routed = false;
                n.link.local.clear();
                n.link.local_bytes = 0;
                n.link.solicitations.clear();
                n.link.dhcpv6.clear();
            }
        }
    }

    /// Gives the firewall the wall clock its time matches (`start_time`,
    /// `weekdays`, ...) are judged by; kept across reloads. Until then they fail
    /// closed (see [`xenlet_router::firewall::Firewall::set_wall_clock`]).
    pub fn set_wall_clock(&mut self, clock: Option<WallClock>) {
        self.wall_clock = clock;
        if let Some(fw) = self.netfilter.firewall_mut() {
            fw.set_wall_clock(clock);
        }
    }

    /// Replaces the firewall's ruleset (all or nothing; established flows stay).
    pub fn reload_firewall(&mut self, rules: Ruleset) -> Result<(), String> {
        self.netfilter
            .reload_firewall(rules)
            .map_err(|e| format!("firewall: {e:?}"))?;
        if let Some(fw) = self.netfilter.firewall_mut() {
            fw.set_wall_clock(self.wall_clock);
        }
        for p in &self.ports {
            let a = p.addr.map(|a| a.addr().octets());
            self.netfilter.set_iface_addr(p.id, a);
        }
        Ok(())
    }

    /// `fw` / `nft list ruleset`: the firewall's chains with their counters.
    pub fn firewall_listing(&self) -> Option<String> {
        self.netfilter.firewall().map(|f| f.listing())
    }

    /// The firewall's log lines (rejected/dropped packets, rate limited) since the
    /// last call, for `logread`.
    pub fn take_firewall_log(&mut self) -> Vec<String> {
        self.netfilter
            .firewall_mut()
            .map(|f| f.take_log())
            .unwrap_or_default()
    }

    /// Routes a delegated prefix (`wan6`) to the LAN interface named `vif` (`proto
    /// static`, behind the LAN's /64 of it, which is longer): the rest of the
    /// prefix is not sent back upstream by the default route (a loop until the hop
    /// limit runs out) but dropped on the LAN unresolved, as netifd's route for a
    /// delegation does. `None` removes it.
    pub fn set_delegated6<L: Link>(
        &mut self,
        ifs: &[NetIf<Routed<L>>],
        delegated: Option<(Ipv6Net, &str)>,
    ) {
        let want = delegated.and_then(|(p, vif)| {
            let k = ifs.iter().position(|n| n.name == vif)?;
            Some((p.network(), self.port_of(k)?))
        });
        if want == self.delegated6 {
            return;
        }
        if let Some((old, ifc)) = self.delegated6.take() {
            self.router
                .routes6_mut()
                .remove_where(|r| r.dest == old && r.ifc == ifc && r.proto == RouteProto::Static);
        }
        if let Some((dest, ifc)) = want {
            let r = Route6 {
                dest,
                gateway: None,
                ifc,
                mtu: None,
                metric: 1024,
                proto: RouteProto::Static,
            };
            if self.router.add_route6(r).is_ok() {
                self.delegated6 = want;
            }
        }
    }

    /// The IPv6 MTU of the WAN interface named `vif` is `mtu` (`wan6`: the MTU
    /// option of the upstream router's advertisements, as Linux sets `mtu6`;
    /// `None`: the link's): the router sends packet-too-big for larger IPv6
    /// packets leaving by it.
    pub fn set_mtu6<L: Link>(&mut self, ifs: &[NetIf<Routed<L>>], vif: &str, mtu: Option<u32>) {
        let Some(id) = ifs
            .iter()
            .position(|n| n.name == vif)
            .and_then(|k| self.port_of(k))
        else {
            return;
        };
        let mtu = mtu.map(|m| u16::try_from(m).unwrap_or(u16::MAX));
        if self.router.interfaces().get(id).map(|i| i.mtu6())
            != Some(mtu.map_or(self.link_mtu(id), |m| m.min(self.link_mtu(id))))
        {
            let _ = self.router.set_mtu6(id, mtu);
        }
    }

    fn link_mtu(&self, id: IfId) -> u16 {
        self.router.interfaces().get(id).map_or(1500, |i| i.mtu())
    }

    /// `reload`: each port's MTU as `spec` sets it now (`option mtu`, at most the
    /// link's; without it the link's). What changed, a line each.
    pub fn set_mtus<L: Link>(
        &mut self,
        spec: &GatewaySpec,
        ifs: &[NetIf<Routed<L>>],
    ) -> Vec<String> {
        let mut said = Vec::new();
        for p in &self.ports {
            let Some(n) = ifs.get(p.netif) else { continue };
            let link = u16::try_from(n.link.mtu()).unwrap_or(1500);
            let want = spec
                .ports
                .iter()
                .find(|s| s.name == n.name)
                .and_then(|s| s.mtu)
                .map_or(link, |m| m.min(link));
            if self.link_mtu(p.id) != want && self.router.set_mtu(p.id, want).is_ok() {
                said.push(format!("{}: mtu {want}", n.name));
            }
        }
        said
    }

    /// The router's id of the stack interface `netif`, if it routes it.
    pub fn port_of(&self, netif: usize) -> Option<IfId> {
        self.ports.iter().find(|p| p.netif == netif).map(|p| p.id)
    }

    /// Copies addresses and DHCP default routes that changed into the router (and
    /// the masquerading address into NAT, which flushes flows of the old one).
    fn sync_addresses<L: Link>(&mut self, ifs: &mut [NetIf<Routed<L>>]) {
        for p in self.ports.iter_mut() {
            let Some(n) = ifs.get_mut(p.netif) else {
                continue;
            };
            let addr = n
                .ipv4_cidr()
                .and_then(|c| Ipv4Net::new(c.address(), c.prefix_len()));
            if addr != p.addr {
                let _ = self.router.set_address(p.id, addr);
                self.netfilter
                    .set_iface_addr(p.id, addr.map(|a| a.addr().octets()));
                if p.masq {
                    self.netfilter
                        .set_masquerade_address(p.id, addr.map(|a| a.addr().octets()));
                }
                p.addr = addr;
                p.gw = None;
            }
            let addrs6 = n.iface.ip_addrs().iter().filter_map(|c| match c {
                IpCidr::Ipv6(c) if !ipv6::is_link_local(c.address()) => {
                    Ipv6Net::new(c.address(), c.prefix_len())
                }
                _ => None,
            });
            if !addrs6.clone().eq(p.addrs6.iter().copied()) {
                for old in p.addrs6.drain(..) {
                    let _ = self.router.remove_address6(p.id, old.addr());
                }
                for new in addrs6 {
                    // kept even if the router's table is full: tried again only
                    // when the interface's addresses change
                    let _ = self.router.add_address6(p.id, new);
                    p.addrs6.push(new);
                }
            }
            let gw6 = n.default_gw6();
            if gw6 != p.gw6 {
                // the stack's IPv6 default route (the WAN's router, from its
                // advertisements: `wan6`) is the router's too
                self.router.routes6_mut().remove_where(|r| {
                    r.ifc == p.id && r.proto == RouteProto::Dhcp && r.dest.prefix_len() == 0
                });
                if let Some(g) = gw6 {
                    let _ = self.router.add_route6(Route6 {
                        dest: DEFAULT6,
                        gateway: Some(g),
                        ifc: p.id,
                        mtu: None,
                        metric: 0,
                        proto: RouteProto::Dhcp,
                    });
                }
                p.gw6 = gw6;
            }
            let gw = n.default_gw4();
            if gw != p.gw {
                if let Some(g) = gw {
                    let _ = self.router.set_dhcp_default(Some((g, p.id)));
                } else if p.gw.is_some() {
                    let _ = self.router.set_dhcp_default(None);
                }
                p.gw = gw;
            }
        }
    }

    /// Takes what the routed links received: forwards it, or queues it for the local
    /// stack; runs the router's timers. Whether any frame was handled.
    pub fn poll<L: Link>(&mut self, ifs: &mut [NetIf<Routed<L>>], now_ms: i64) -> bool {
        let now = u64::try_from(now_ms).unwrap_or(0);
        self.sync_addresses(ifs);
        // what the local stack sent since the last poll: its replies are established
        for p in &self.ports {
            let Some(n) = ifs.get_mut(p.netif) else {
                continue;
            };
            // the clock of the local stack's sends in this turn (its ICMP limits)
            n.link.icmp_limit.set_now(now);
            while let Some(t) = n.link.sent.pop_front() {
                if let Some(fw) = self.netfilter.firewall_mut() {
                    fw.note_output_tuple(t, now);
                }
            }
        }
        let mut any = self.release_held(ifs, now);
        // what waited for TX room goes first (a TX completion's event woke us)
        for p in &mut self.ports {
            if let Some(n) = ifs.get_mut(p.netif) {
                any |= p.backlog.flush(&mut n.link.inner);
            }
        }
        for k in 0..self.ports.len() {
            let (netif, id) = (self.ports[k].netif, self.ports[k].id);
            for _ in 0..RX_BUDGET {
                let Some(n) = ifs.get_mut(netif) else { break };
                let Some((mut frame, csum, gso)) = n.link.inner.recv_meta() else {
                    break;
                };
                any = true;
                let rx = TxMeta {
                    csum_partial: csum == RxChecksum::Blank || gso.is_some(),
                    gso_size: gso,
                };
                let mut out = Out {
                    ifs,
                    ports: &mut self.ports,
                };
                let local_dnat = self.netfilter.stats().local_dnat;
                let d = self
                    .router
                    .input(id, &mut frame, rx, now, &mut self.netfilter, &mut out);
                match d {
                    Disposition::Local => {
                        if self.netfilter.stats().local_dnat != local_dnat
                            && !self.follow_local_dnat(ifs, netif, &frame)
                        {
                            continue;
                        }
                        self.local += 1;
                        if let Some(n) = ifs.get_mut(netif) {
                            n.link.queue_local(frame, csum);
                        }
                    }
                    // the stack gets the datagram its fragments made, checked
                    // (reassembly copied bytes, no checksum is vouched for)
                    Disposition::LocalReassembled => {
                        self.local += 1;
                        if let (Some(w), Some(n)) =
                            (self.router.take_local_datagram(), ifs.get_mut(netif))
                        {
                            n.link.queue_local(w, RxChecksum::Unknown);
                        }
                    }
                    _ => {}
                }
            }
        }
        if self.last_poll.is_none_or(|t| now >= t + 100) {
            self.last_poll = Some(now);
            let mut out = Out {
                ifs,
                ports: &mut self.ports,
            };
            self.router.poll(now, &mut out);
            self.netfilter.expire(now, EXPIRE_BUDGET);
            for p in &self.ports {
                if let Some(n) = ifs.get_mut(p.netif) {
                    let nf = &self.netfilter;
                    n.link.local_dnat.retain(|t| nf.is_local_dnat_reply(t));
                }
            }
        }
        any
    }

    /// A port forward to the router itself was accepted with `frame` (delivered on
    /// `netif`): the local stack's frames of its flow are held for translation.
    /// Whether the frame may go to the local stack (not if its replies could not be
    /// translated).
    fn follow_local_dnat<L: Link>(
        &mut self,
        ifs: &mut [NetIf<Routed<L>>],
        netif: usize,
        frame: &[u8],
    ) -> bool {
        let Some(t) = frame.get(14..).and_then(tuple_of) else {
            return false;
        };
        let Some(n) = ifs.get_mut(netif) else {
            return false;
        };
        let reply = t.invert();
        if n.link.local_dnat.contains(&reply) {
            return true;
        }
        if n.link.local_dnat.len() >= LOCAL_DNAT_FLOWS {
            let nf = &self.netfilter;
            n.link.local_dnat.retain(|t| nf.is_local_dnat_reply(t));
        }
        if n.link.local_dnat.len() < LOCAL_DNAT_FLOWS {
            n.link.local_dnat.push(reply);
            true
        } else {
            // Its replies would leave untranslated: the packet is dropped (its
            // entry expires unanswered) and counted.
            self.local_dnat_refused += 1;
            false
        }
    }

    /// Sends the held replies of port forwards to the router, translated; whether
    /// there were any.
    fn release_held<L: Link>(&mut self, ifs: &mut [NetIf<Routed<L>>], now: Millis) -> bool {
        let mut any = false;
        for p in &self.ports {
            let Some(n) = ifs.get_mut(p.netif) else {
                continue;
            };
            while let Some((mut frame, kind)) = n.link.held.pop_front() {
                any = true;
                let partial = kind != SendKind::Plain;
                let Some(ip) = frame.get_mut(14..) else {
                    continue;
                };
                if self.netfilter.local_output(ip, now, partial).is_err() {
                    self.local_dnat_dropped += 1;
                    continue;
                }
                let link = &mut n.link.inner;
                let _ = match kind {
                    SendKind::Plain => link.send(&frame),
                    SendKind::Gso(mss) => link.send_gso(&frame, mss),
                    SendKind::CsumBlank => link.send_csum_blank(&frame),
                };
            }
        }
        any
    }

    /// The egress backlogs summed over the ports: (frames that waited for TX room,
    /// the most that waited at once on a port, frames waiting now, frames that had
    /// waited and were pushed out for another flow's).
    pub fn backlog(&self) -> (u64, usize, usize, u64) {
        self.ports.iter().fold((0, 0, 0, 0), |(q, h, n, o), p| {
            (
                q + p.backlog.queued,
                h.max(p.backlog.high_water),
                n + p.backlog.len(),
                o + p.backlog.pushed_out,
            )
        })
    }

    /// `conntrack -L`: one line per flow, as Linux's conntrack tool prints them,
    /// written to `out` as they are read (nothing is gathered: the table can hold
    /// thousands of flows); the number written. After `out`'s first error nothing
    /// more is written and the error is returned.
    pub fn write_conntrack(
        &self,
        out: &mut dyn core::fmt::Write,
        now_ms: i64,
    ) -> Result<usize, core::fmt::Error> {
        let mut n = 0;
        let mut r = Ok(());
        let now = u64::try_from(now_ms).unwrap_or(0);
        self.netfilter.for_each(now, |e| {
            if r.is_ok() {
                r = writeln!(out, "{e}");
                n += 1;
            }
        });
        // then the IPv6 table (conntrack -L lists both families)
        self.netfilter.for_each6(now, |e| {
            if r.is_ok() {
                r = writeln!(out, "{e}");
                n += 1;
            }
        });
        r.map(|()| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;
    use crate::link::tests::{cable, Pipe};
    use smoltcp::iface::SocketHandle;
    use smoltcp::socket::udp;
    use smoltcp::wire::{IpAddress, IpEndpoint};

    /// The hosts on either side and the router's addresses, as the net() sockets
    /// address them.
    const LAN_HOST: IpAddress = IpAddress::v4(192, 168, 1, 100);
    const WAN_HOST: IpAddress = IpAddress::v4(10, 0, 0, 1);
    const ROUTER_LAN: IpAddress = IpAddress::v4(192, 168, 1, 1);
    const ROUTER_WAN: IpAddress = IpAddress::v4(10, 0, 0, 2);

    fn udp_socket() -> udp::Socket<'static> {
        crate::testnet::udp_socket(8, 8192)
    }

    /// Sends `data` from the UDP socket `h` of `host` to `to`.
    fn udp_send<L: Link>(
        host: &mut NetIf<L>,
        h: SocketHandle,
        data: &[u8],
        to: impl Into<IpEndpoint>,
    ) {
        host.sockets
            .get_mut::<udp::Socket>(h)
            .send_slice(data, to.into())
            .unwrap();
    }

    /// The next datagram the UDP socket `h` of `host` received, if one did.
    fn udp_recv<L: Link>(host: &mut NetIf<L>, h: SocketHandle) -> Option<Vec<u8>> {
        let s = host.sockets.get_mut::<udp::Socket>(h);
        s.recv().ok().map(|(d, _)| d.to_vec())
    }

    #[test]
    fn a_routing_interface_advertises_a_new_address_with_the_router_flag() {
        let (a, _b) = cable();
        let wire = a.tx.clone();
        let mut r = Routed::new(a);
        assert!(!r.routes());
        r.routed = true;
        assert!(r.routes());
        let mac = r.mac();
        let mut n = NetIf::new("eth0", r, &config::parse("192.168.1.1/24").unwrap(), 0, 1);
        let addr: smoltcp::wire::Ipv6Address = "2001:db8:1::1".parse().unwrap();
        n.add_addr(smoltcp::wire::IpCidr::new(IpAddress::Ipv6(addr), 64))
            .unwrap();
        n.poll(0);
        assert!(wire.borrow().contains(&crate::dad::probe(mac, addr)));
        n.poll(1_000);
        assert!(wire
            .borrow()
            .contains(&crate::garp::neighbour_advertisement(mac, addr, true)));
    }

    #[test]
    fn a_routing_link_sends_the_stacks_neighbour_advertisements_with_the_router_flag() {
        let ip: smoltcp::wire::Ipv6Address = "fe80::216:3eff:fe01:2".parse().unwrap();
        for routed in [false, true] {
            let (a, _b) = cable();
            let wire = a.tx.clone();
            let mut r = Routed::new(a);
            r.routed = routed;
            let mac = r.mac();
            // as smoltcp answers a solicitation: no Router flag
            r.send(&crate::garp::neighbour_advertisement(mac, ip, false))
                .unwrap();
            let sent = wire.borrow_mut().pop_back().unwrap();
            assert_eq!(
                sent,
                crate::garp::neighbour_advertisement(mac, ip, routed),
                "routed {routed}"
            );
        }
    }

    #[test]
    fn the_stack_answers_a_hosts_reachability_probe_as_a_router() {
        use smoltcp::wire::{Icmpv6Repr, NdiscNeighborFlags, NdiscRepr, RawHardwareAddress};
        let (a, b) = cable();
        let wire = a.tx.clone();
        let host_mac = b.mac();
        let mut r = Routed::new(a);
        r.routed = true;
        let mac = r.mac();
        let ours = config::link_local(mac);
        let host = config::link_local(host_mac);
        // a LAN host's unicast probe of its router's link-local address (Linux's
        // NUD PROBE: to the address itself, its link-layer address with it), as
        // the router's forwarding hands it to the local stack
        let ns = Icmpv6Repr::Ndisc(NdiscRepr::NeighborSolicit {
            target_addr: ours,
            lladdr: Some(RawHardwareAddress::from_bytes(&host_mac)),
        });
        let mut f = crate::garp::ndisc_frame(host_mac, host, ours, &ns);
        f[0..6].copy_from_slice(&mac);
        r.queue_local(f, RxChecksum::Unknown);
        let mut n = NetIf::new("eth0", r, &config::parse("192.168.1.1/24").unwrap(), 0, 1);
        n.poll(0);
        let answers: Vec<_> = wire
            .borrow()
            .iter()
            .filter(|f| f.len() > 54 && f[12..14] == [0x86, 0xdd] && f[54] == 136)
            .cloned()
            .collect();
        assert_eq!(answers.len(), 1, "one advertisement");
        let eth = smoltcp::wire::EthernetFrame::new_checked(&answers[0][..]).unwrap();
        let p = smoltcp::wire::Ipv6Packet::new_checked(eth.payload()).unwrap();
        let ip6 = smoltcp::wire::Ipv6Repr::parse(&p).unwrap();
        assert_eq!((ip6.src_addr, ip6.dst_addr), (ours, host));
        let icmp = smoltcp::wire::Icmpv6Packet::new_checked(p.payload()).unwrap();
        // the checksum is checked by the parse
        let repr = Icmpv6Repr::parse(
            &ip6.src_addr,
            &ip6.dst_addr,
            &icmp,
            &smoltcp::phy::ChecksumCapabilities::default(),
        );
        match repr {
            Ok(Icmpv6Repr::Ndisc(NdiscRepr::NeighborAdvert { flags, .. })) => assert!(
                flags.contains(NdiscNeighborFlags::ROUTER | NdiscNeighborFlags::SOLICITED),
                "solicited, from a router: {flags:?}"
            ),
            other => panic!("not an advertisement: {other:?}"),
        }
    }

    /// A host flooding the router's address with datagrams to a closed port gets
    /// six port unreachables, not one each (Linux's per-destination limit); the
    /// rest are counted.
    #[test]
    fn a_flood_to_a_closed_port_gets_a_few_port_unreachables() {
        use smoltcp::wire::{
            ArpOperation, ArpPacket, ArpRepr, EthernetFrame, EthernetProtocol, EthernetRepr,
            IpProtocol, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr,
        };
        let (a, b) = cable();
        let wire = a.tx.clone();
        let host_mac = EthernetAddress(b.mac());
        let mut r = Routed::new(a);
        r.routed = true;
        let mac = EthernetAddress(r.mac());
        let (us, host) = (
            Ipv4Address::new(192, 168, 1, 1),
            Ipv4Address::new(192, 168, 1, 50),
        );
        let caps = smoltcp::phy::ChecksumCapabilities::default();
        // the host's ARP request first: the stack then knows where to answer
        let arp = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: host_mac,
            source_protocol_addr: host,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: us,
        };
        let mut f = alloc::vec![0u8; 14 + arp.buffer_len()];
        let mut eth = EthernetFrame::new_unchecked(&mut f[..]);
        EthernetRepr {
            src_addr: host_mac,
            dst_addr: EthernetAddress::BROADCAST,
            ethertype: EthernetProtocol::Arp,
        }
        .emit(&mut eth);
        arp.emit(&mut ArpPacket::new_unchecked(eth.payload_mut()));
        r.queue_local(f, RxChecksum::Unknown);
        for i in 0..100u16 {
            let udp = UdpRepr {
                src_port: 40000,
                dst_port: 9,
            };
            let ip = Ipv4Repr {
                src_addr: host,
                dst_addr: us,
                next_header: IpProtocol::Udp,
                payload_len: udp.header_len() + 18,
                hop_limit: 64,
            };
            let mut f = alloc::vec![0u8; 14 + ip.buffer_len() + ip.payload_len];
            let mut eth = EthernetFrame::new_unchecked(&mut f[..]);
            EthernetRepr {
                src_addr: host_mac,
                dst_addr: mac,
                ethertype: EthernetProtocol::Ipv4,
            }
            .emit(&mut eth);
            let mut p = Ipv4Packet::new_unchecked(eth.payload_mut());
            ip.emit(&mut p, &caps);
            p.set_ident(i);
            p.fill_checksum();
            udp.emit(
                &mut UdpPacket::new_unchecked(p.payload_mut()),
                &host.into(),
                &us.into(),
                18,
                |b| b.fill(7),
                &caps,
            );
            r.queue_local(f, RxChecksum::Unknown);
        }
        let mut n = NetIf::new("eth0", r, &config::parse("192.168.1.1/24").unwrap(), 0, 1);
        for _ in 0..10 {
            n.poll(0);
        }
        let unreachables = wire
            .borrow()
            .iter()
            .filter(|f| f.len() > 35 && f[12..14] == [0x08, 0x00] && f[23] == 1 && f[34] == 3)
            .count();
        assert_eq!(unreachables, 6);
        assert_eq!(n.link.icmp_limited(), 94);
    }

    #[test]
    fn a_reflecting_interface_sends_unicast_back_and_keeps_the_rest() {
        let (a, mut b) = cable();
        let (us, peer) = (a.mac(), b.mac());
        let mut r = Routed::new(a);
        r.set_reflect(true).unwrap();
        let frame = |dst: [u8; 6], kind: [u8; 2]| {
            let mut f = alloc::vec::Vec::from(dst);
            f.extend_from_slice(&peer);
            f.extend_from_slice(&kind);
            f.extend_from_slice(&[0x45, 0, 0, 28, 1, 2, 3]);
            f
        };
        let unicast = frame(us, [0x08, 0x00]);
        let broadcast = frame([0xff; 6], [0x08, 0x06]);
        b.send(&unicast).unwrap();
        b.send(&broadcast).unwrap();
        // the stack gets the broadcast only; the unicast went back, MACs swapped
        assert_eq!(r.recv(), Some(broadcast.clone()));
        assert_eq!(r.recv(), None);
        let back = b.recv().unwrap();
        assert_eq!(
            (back[..6].to_vec(), back[6..12].to_vec()),
            (peer.to_vec(), us.to_vec())
        );
        assert_eq!(back[12..], unicast[12..]);
        assert_eq!(b.recv(), None, "nothing else sent");
        assert_eq!(
            r.reflector(),
            Some(Reflector {
                on: true,
                reflected: 1,
                failed: 0
            })
        );
        // off: received as before
        r.set_reflect(false).unwrap();
        b.send(&unicast).unwrap();
        assert_eq!(r.recv(), Some(unicast));
        // a routed interface's frames are the router's
        r.routed = true;
        assert!(r.set_reflect(true).is_err());
        assert!(!r.reflector().unwrap().on);
    }

    /// A link whose every send fails (a full or broken ring).
    struct Refusing(VecDeque<Vec<u8>>);

    impl Link for Refusing {
        fn mac(&self) -> [u8; 6] {
            [2, 0, 0, 0, 0, 1]
        }
        fn recv(&mut self) -> Option<Vec<u8>> {
            self.0.pop_front()
        }
        fn can_send(&mut self) -> bool {
            false
        }
        fn send(&mut self, _: &[u8]) -> Result<(), String> {
            Err(String::from("ring full"))
        }
        fn stats(&self) -> LinkStats {
            LinkStats::default()
        }
        fn broken(&self) -> Option<&str> {
            None
        }
    }

    #[test]
    fn a_frame_that_cannot_be_reflected_is_dropped_and_counted() {
        let mut f = alloc::vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0, 20]);
        let mut r = Routed::new(Refusing(VecDeque::from([f.clone(), f])));
        r.set_reflect(true).unwrap();
        assert_eq!(r.recv(), None, "neither reaches the stack");
        assert_eq!(
            r.reflector(),
            Some(Reflector {
                on: true,
                reflected: 0,
                failed: 2
            })
        );
    }

    #[test]
    fn the_local_queue_is_bounded_in_bytes_as_well_as_frames() {
        let (a, _b) = cable();
        let mut r = Routed::new(a);
        r.routed = true;
        // GSO-sized frames: the byte bound is reached long before 512 frames.
        for _ in 0..20 {
            r.queue_local(alloc::vec![0u8; 64 << 10], RxChecksum::Unknown);
        }
        assert_eq!(r.local.len(), 16, "1 MiB of 64 KiB frames");
        assert_eq!(r.local_dropped(), 4);
        // What the stack takes gives its bytes back.
        assert!(r.recv_flagged().is_some());
        r.queue_local(alloc::vec![0u8; 64 << 10], RxChecksum::Unknown);
        assert_eq!((r.local.len(), r.local_dropped()), (16, 4));
        while r.recv_flagged().is_some() {}
        assert_eq!(r.local_bytes, 0);
        // Small frames: the frame count bounds them.
        for _ in 0..600 {
            r.queue_local(alloc::vec![0u8; 60], RxChecksum::Unknown);
        }
        assert_eq!(r.local.len(), LOCAL_QUEUE);
        assert_eq!(r.local_dropped(), 4 + 600 - LOCAL_QUEUE as u64);
    }

    /// An Ethernet frame of a UDP datagram (no checksums: only the tuple is read).
    fn udp_frame(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Vec<u8> {
        let mut f = alloc::vec![0u8; 14 + 28];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&28u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&src);
        ip[16..20].copy_from_slice(&dst);
        ip[20..22].copy_from_slice(&sport.to_be_bytes());
        ip[22..24].copy_from_slice(&dport.to_be_bytes());
        ip[24..26].copy_from_slice(&8u16.to_be_bytes());
        f
    }

    #[test]
    fn a_burst_of_answers_between_polls_does_not_drop_the_routers_own_query() {
        // The router's DNS forwarder asks upstream; before the next poll its DNS
        // server answers more LAN clients than the link keeps flows for. The query's
        // flow is kept (the answers' go first), so its reply is still established.
        let (a, _b) = cable();
        let mut r = Routed::new(a);
        r.routed = true;
        let query = udp_frame([10, 0, 0, 2], 50000, [8, 8, 8, 8], 53);
        r.note_sent(&query);
        for i in 0..(SENT_FLOWS as u16 + 100) {
            r.note_sent(&udp_frame(
                [192, 168, 1, 1],
                53,
                [192, 168, 1, 100],
                1024 + i,
            ));
        }
        assert_eq!(r.sent_dropped(), 101);
        assert_eq!(r.sent.len(), SENT_FLOWS);
        assert_eq!(r.sent.front(), tuple_of(&query[14..]).as_ref());
    }

    #[test]
    fn the_stacks_icmp_messages_leave_without_df_as_linuxs() {
        let mut buf = [0u8; ICMP_DF_COPY];
        let mut f = udp_frame([192, 168, 1, 1], 53, [192, 168, 1, 50], 4000);
        f[14 + 9] = 1; // ICMP
        f[14 + 6] = 0x40; // DF
        xenlet_router::ipv4::fill_header_checksum(&mut f[14..]);
        for (ty, cleared) in [
            (0u8, true),
            (3, true),
            (11, true),
            (12, true),
            (8, false),
            (5, false),
        ] {
            f[14 + 20] = ty;
            let out = icmp_without_df(&f, &mut buf).map(<[u8]>::to_vec);
            assert_eq!(out.is_some(), cleared, "type {ty}");
            if let Some(o) = out {
                assert_eq!(o[14 + 6] & 0x40, 0, "DF cleared");
                let mut again = o.clone();
                xenlet_router::ipv4::fill_header_checksum(&mut again[14..]);
                assert_eq!(again, o, "header checksum made again");
                assert_eq!(o[14 + 20..], f[14 + 20..], "the message itself untouched");
            }
        }
        // UDP with DF, and ICMP without it: as they are
        f[14 + 20] = 0;
        f[14 + 6] = 0;
        assert!(icmp_without_df(&f, &mut buf).is_none());
        f[14 + 9] = 17;
        f[14 + 6] = 0x40;
        assert!(icmp_without_df(&f, &mut buf).is_none());
    }

    #[test]
    fn router_solicitations_are_kept_aside_bounded_not_given_to_the_stack() {
        let (a, _b) = cable();
        let mut r = Routed::new(a);
        r.routed = true;
        let mut rs = alloc::vec![0u8; 14 + 40 + 8];
        rs[12..14].copy_from_slice(&[0x86, 0xdd]);
        rs[14 + 6] = 58;
        rs[14 + 40] = 133;
        // not asked for (no advertisements on this link): the stack's like any frame
        r.queue_local(rs.clone(), RxChecksum::Unknown);
        assert_eq!((r.local.len(), r.take_solicitation()), (1, None));
        assert!(r.recv_flagged().is_some());
        r.keep_solicitations(true);
        for _ in 0..SOLICITATIONS + 3 {
            r.queue_local(rs.clone(), RxChecksum::Unknown);
        }
        r.queue_local(alloc::vec![0u8; 60], RxChecksum::Unknown);
        assert_eq!(r.local.len(), 1, "only the other frame goes to the stack");
        assert_eq!(r.solicitations_dropped(), 3);
        let mut n = 0;
        while let Some(f) = r.take_solicitation() {
            assert_eq!(f, rs);
            n += 1;
        }
        assert_eq!(n, SOLICITATIONS);
        r.queue_local(rs.clone(), RxChecksum::Unknown);
        r.keep_solicitations(false);
        assert_eq!(r.take_solicitation(), None, "dropped when no longer wanted");
    }

    #[test]
    fn dhcpv6_frames_are_kept_aside_bounded_not_given_to_the_stack() {
        let (a, _b) = cable();
        let mut r = Routed::new(a);
        r.routed = true;
        let mut f = alloc::vec![0u8; 14 + 40 + 8 + 4];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14 + 6] = 17;
        f[14 + 40 + 2..14 + 40 + 4].copy_from_slice(&547u16.to_be_bytes());
        r.queue_local(f.clone(), RxChecksum::Unknown);
        assert_eq!((r.local.len(), r.take_dhcpv6()), (1, None), "not asked for");
        assert!(r.recv_flagged().is_some());
        r.keep_dhcpv6(true);
        for _ in 0..DHCPV6_FRAMES + 2 {
            r.queue_local(f.clone(), RxChecksum::Unknown);
        }
        // UDP to another port goes to the stack
        let mut dns = f.clone();
        dns[14 + 40 + 2..14 + 40 + 4].copy_from_slice(&53u16.to_be_bytes());
        r.queue_local(dns, RxChecksum::Unknown);
        assert_eq!(r.local.len(), 1);
        assert_eq!(r.dhcpv6_dropped(), 2);
        let mut n = 0;
        while let Some(g) = r.take_dhcpv6() {
            assert_eq!(g, f);
            n += 1;
        }
        assert_eq!(n, DHCPV6_FRAMES);
        // a partial checksum (IPv6 offload) is completed for the server
        let mut partial = f.clone();
        partial[14 + 4..14 + 6].copy_from_slice(&12u16.to_be_bytes());
        partial[14 + 40 + 4..14 + 40 + 6].copy_from_slice(&12u16.to_be_bytes());
        partial[14 + 40 + 6..14 + 40 + 8].copy_from_slice(&[0xab, 0xcd]);
        assert_eq!(crate::tso::verify_l4_checksum(&partial), Some(false));
        r.queue_local(partial, RxChecksum::Blank);
        let got = r.take_dhcpv6().unwrap();
        assert_eq!(crate::tso::verify_l4_checksum(&got), Some(true));
        r.queue_local(f.clone(), RxChecksum::Unknown);
        r.keep_dhcpv6(false);
        assert_eq!(r.take_dhcpv6(), None, "dropped when no longer wanted");
    }

    struct Net {
        lan_host: NetIf<Pipe>,
        wan_host: NetIf<Pipe>,
        router: Vec<NetIf<Routed<Pipe>>>,
        gw: Gateway,
    }

    /// lan host 192.168.1.100 -- eth0 192.168.1.1 [router] eth1 10.0.0.2 -- wan host
    /// 10.0.0.1 (the router's default gateway).
    fn net() -> Net {
        let (mut l1, mut l2) = cable();
        let (mut w1, mut w2) = cable();
        l1.mac = [2, 0, 0, 0, 1, 100];
        l2.mac = [2, 0, 0, 0, 1, 1];
        w1.mac = [2, 0, 0, 0, 2, 2];
        w2.mac = [2, 0, 0, 0, 2, 1];
        let lan_host = NetIf::new(
            "eth0",
            l1,
            &config::parse("192.168.1.100/24,gw=192.168.1.1").unwrap(),
            0,
            1,
        );
        let wan_host = NetIf::new(
            "eth0",
            w2,
            &config::parse("10.0.0.1/24,gw=10.0.0.2").unwrap(),
            0,
            2,
        );
        let mut router = alloc::vec![
            NetIf::new(
                "eth0",
                Routed::new(l2),
                &config::parse("192.168.1.1/24").unwrap(),
                0,
                3
            ),
            NetIf::new(
                "eth1",
                Routed::new(w1),
                &config::parse("10.0.0.2/24,gw=10.0.0.1").unwrap(),
                0,
                4
            ),
        ];
        let spec = GatewaySpec {
            ports: alloc::vec![PortSpec::lan("eth0"), PortSpec::wan("eth1"),],
            conntrack_max: 64,
            hash_seed: 7,
            firewall: Some(default_firewall()),
        };
        let gw = Gateway::new(&spec, &mut router).unwrap();
        Net {
            lan_host,
            wan_host,
            router,
            gw,
        }
    }

    impl Net {
        /// A UDP socket on the LAN host's port 5000 and one on the WAN host's 6000.
        fn udp_pair(&mut self) -> (smoltcp::iface::SocketHandle, smoltcp::iface::SocketHandle) {
            let (mut a, mut b) = (udp_socket(), udp_socket());
            a.bind(5000).unwrap();
            b.bind(6000).unwrap();
            (self.lan_host.sockets.add(a), self.wan_host.sockets.add(b))
        }

        fn step(&mut self, now: i64) {
            self.lan_host.poll(now);
            self.wan_host.poll(now);
            self.gw.poll(&mut self.router, now);
            for n in self.router.iter_mut() {
                n.poll(now);
            }
        }
    }

    #[test]
    fn frames_for_a_full_ring_wait_in_order_and_go_when_it_has_room() {
        let mut n = net();
        let (ha, hb) = n.udp_pair();
        let wan_recv = |n: &mut Net| {
            let mut got = Vec::new();
            while let Ok((data, _)) = n.wan_host.sockets.get_mut::<udp::Socket>(hb).recv() {
                got.push(data.to_vec());
            }
            got
        };
        let send = |n: &mut Net, what: &[u8]| {
            udp_send(&mut n.lan_host, ha, what, (WAN_HOST, 6000));
        };
        // the path and the WAN neighbour first
        send(&mut n, b"first");
        let mut got = Vec::new();
        for now in 0..200 {
            n.step(now * 10);
            got.extend(wan_recv(&mut n));
            if !got.is_empty() {
                break;
            }
        }
        assert_eq!(got, [b"first".to_vec()]);
        // the WAN ring full: what the router forwards waits
        n.router[1].link.inner.tx_room = Some(0);
        for i in 0..3u8 {
            send(&mut n, &[b'a' + i; 8]);
        }
        for now in 200..220 {
            n.step(now * 10);
        }
        assert_eq!(wan_recv(&mut n), Vec::<Vec<u8>>::new());
        assert_eq!(n.gw.backlog(), (3, 3, 3, 0), "three wait, none dropped");
        let drops = n.gw.router.stats().drops().filter(|d| d.1 > 0).count();
        assert_eq!(drops, 0, "nothing counted as dropped");
        // room for two: the oldest two go, the third still waits
        n.router[1].link.inner.tx_room = Some(2);
        n.step(2200);
        n.step(2201); // the WAN host reads what the router sent in the last step
        assert_eq!(wan_recv(&mut n), [[b'a'; 8].to_vec(), [b'b'; 8].to_vec()]);
        assert_eq!(n.gw.backlog(), (3, 3, 1, 0));
        n.router[1].link.inner.tx_room = None;
        n.step(2210);
        n.step(2211);
        assert_eq!(wan_recv(&mut n), [[b'c'; 8].to_vec()]);
        assert_eq!(n.gw.backlog(), (3, 3, 0, 0));
    }

    #[test]
    fn lan_udp_reaches_the_wan_masqueraded_and_the_reply_comes_back() {
        let mut n = net();
        let (ha, hb) = n.udp_pair();
        udp_send(&mut n.lan_host, ha, b"ping through", (WAN_HOST, 6000));
        let mut seen = None;
        for now in 0..200 {
            n.step(now * 10);
            if let Ok((data, meta)) = n.wan_host.sockets.get_mut::<udp::Socket>(hb).recv() {
                assert_eq!(data, b"ping through");
                seen = Some(meta.endpoint);
                break;
            }
        }
        let from = seen.expect("the datagram crossed the router");
        assert_eq!(
            from.addr,
            IpAddress::v4(10, 0, 0, 2),
            "masqueraded to the router's WAN address"
        );
        assert_eq!(from.port, 5000, "port preserved while free");
        let mut text = String::new();
        assert_eq!(n.gw.write_conntrack(&mut text, 0), Ok(1));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("udp      17 ")
                && lines[0].contains("src=192.168.1.100 dst=10.0.0.1 sport=5000 dport=6000"),
            "{lines:?}"
        );
        udp_send(&mut n.wan_host, hb, b"pong", from);
        let mut back = None;
        for now in 200..400 {
            n.step(now * 10);
            if let Ok((data, meta)) = n.lan_host.sockets.get_mut::<udp::Socket>(ha).recv() {
                back = Some((data.to_vec(), meta.endpoint));
                break;
            }
        }
        let (data, ep) = back.expect("the reply was translated back to the LAN host");
        assert_eq!(data, b"pong");
        assert_eq!(ep.addr, IpAddress::v4(10, 0, 0, 1));
        assert_eq!(ep.port, 6000);
        let st = n.gw.router.stats();
        assert_eq!(
            st.iface(IfId(0)).rx_packets,
            1,
            "forwarded LAN to WAN: {st:?}"
        );
        assert_eq!(
            st.iface(IfId(1)).rx_packets,
            1,
            "forwarded WAN to LAN: {st:?}"
        );
        assert!(
            n.gw.local > 0,
            "ARP and the router's own traffic went to smoltcp"
        );
    }

    /// `ip` cut into fragments of `piece` payload bytes, in Ethernet frames.
    fn fragment_frames(ip: &[u8], piece: usize, to: [u8; 6], from: [u8; 6]) -> Vec<Vec<u8>> {
        use xenlet_router::ipv4;
        let data = &ip[20..];
        let mut out = Vec::new();
        let mut off = 0;
        while off < data.len() {
            let end = (off + piece).min(data.len());
            let mut f = ip[..20].to_vec();
            f.extend_from_slice(&data[off..end]);
            let n = f.len() as u16;
            ipv4::put16(&mut f, 2, n);
            let mf = if end < data.len() { 0x2000 } else { 0 };
            ipv4::put16(&mut f, 6, mf | (off / 8) as u16);
            ipv4::fill_header_checksum(&mut f);
            let mut frame = to.to_vec();
            frame.extend_from_slice(&from);
            frame.extend_from_slice(&[8, 0]);
            frame.extend_from_slice(&f);
            out.push(frame);
            off = end;
        }
        out
    }

    #[test]
    fn a_fragmented_reply_to_a_masqueraded_flow_reaches_the_lan_host_translated() {
        let mut n = net();
        let (ha, hb) = n.udp_pair();
        udp_send(&mut n.lan_host, ha, b"big answer please", (WAN_HOST, 6000));
        let mut t = 0;
        while n
            .wan_host
            .sockets
            .get_mut::<udp::Socket>(hb)
            .recv()
            .is_err()
        {
            t += 10;
            assert!(t < 2000, "the query crossed the router");
            n.step(t);
        }
        // A 3,000-byte answer in three fragments, as the WAN host's kernel cuts it:
        // before reassembly only the first was translated (the rest went to the
        // router's own input and were rejected).
        let payload: Vec<u8> = (0..3000u32).map(|i| (i * 31 % 251) as u8).collect();
        let (wan_host, router_wan) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let udp = crate::testnet::udp(wan_host, router_wan, 6000, 5000, &payload);
        let ip = crate::testnet::ipv4(wan_host, router_wan, 17, 0x4242, false, &udp);
        let frags = fragment_frames(&ip, 1480, [2, 0, 0, 0, 2, 2], [2, 0, 0, 0, 2, 1]);
        assert_eq!(frags.len(), 3);
        n.lan_host.link.rx.borrow_mut().clear();
        for f in frags.into_iter().rev() {
            n.wan_host.link.tx.borrow_mut().push_back(f);
        }
        for _ in 0..5 {
            t += 10;
            n.gw.poll(&mut n.router, t);
        }
        // What reached the LAN: fragments of one datagram to 192.168.1.100:5000
        // that put together give the answer, checksum right.
        let got: Vec<Vec<u8>> = n.lan_host.link.rx.borrow().iter().cloned().collect();
        let ipf: Vec<&[u8]> = got
            .iter()
            .filter(|f| f.get(12..14) == Some(&[8, 0][..]))
            .map(|f| &f[14..])
            .collect();
        assert!(ipf.len() >= 3, "{} frames", got.len());
        let mut whole = alloc::vec![0u8; 8 + payload.len()];
        let mut filled = 0;
        for p in &ipf {
            assert_eq!(&p[16..20], &[192, 168, 1, 100]);
            assert!(p.len() <= 1500);
            let off = usize::from(u16::from_be_bytes([p[6], p[7]]) & 0x1fff) * 8;
            let body = &p[20..usize::from(u16::from_be_bytes([p[2], p[3]]))];
            whole[off..off + body.len()].copy_from_slice(body);
            filled += body.len();
        }
        assert_eq!(filled, whole.len());
        assert_eq!(&whole[2..4], &5000u16.to_be_bytes(), "translated port");
        assert_eq!(&whole[8..], &payload[..]);
        let ps = xenlet_router::ipv4::pseudo_header_sum(
            [10, 0, 0, 1].into(),
            [192, 168, 1, 100].into(),
            17,
            whole.len(),
        );
        assert_eq!(
            xenlet_router::checksum::fold(xenlet_router::checksum::sum(ps, &whole)),
            0xffff,
            "the UDP checksum fits the translated datagram"
        );
        assert_eq!(n.gw.router.defrag_stats().reassembled, 1);
    }

    /// OpenWrt's default firewall file (the image's), lan = eth0, wan = eth1.
    fn default_firewall() -> Ruleset {
        let (c, warnings) = compile_image_firewall("");
        assert!(warnings.is_empty(), "{warnings:?}");
        c.ruleset
    }

    /// The image's firewall file followed by `extra`, compiled for lan = eth0,
    /// wan = wan6 = eth1.
    fn compile_image_firewall(extra: &str) -> (crate::fwconfig::Compiled, Vec<String>) {
        let text = alloc::format!(
            "{}{extra}",
            include_str!("../../xtask/rootfs/etc/config/firewall")
        );
        let n = crate::fwconfig::NetworkIface::new;
        let ifaces = [
            n("lan", IfId(0), "eth0"),
            n("wan", IfId(1), "eth1"),
            n("wan6", IfId(1), "eth1"),
        ];
        crate::fwconfig::compile_text(&text, &ifaces).unwrap()
    }

    fn recv_within(
        n: &mut Net,
        from: i64,
        steps: i64,
        which: impl Fn(&mut Net) -> Option<Vec<u8>>,
    ) -> Option<Vec<u8>> {
        for now in from..from + steps {
            n.step(now * 10);
            if let Some(d) = which(n) {
                return Some(d);
            }
        }
        None
    }

    #[test]
    fn unsolicited_wan_to_lan_traffic_is_not_forwarded_under_the_default_firewall() {
        let mut n = net();
        let (ha, hb) = n.udp_pair();
        udp_send(&mut n.wan_host, hb, b"knock knock", (LAN_HOST, 5000));
        let got = recv_within(&mut n, 0, 200, |n| udp_recv(&mut n.lan_host, ha));
        assert_eq!(got, None, "the datagram must not reach the LAN host");
        let st = n.gw.router.stats();
        assert_eq!(st.iface(IfId(1)).rx_packets, 0, "nothing forwarded: {st:?}");
        let fw = n.gw.netfilter.firewall().unwrap();
        assert_eq!(
            fw.stats().default_forward.packets,
            1,
            "the forward policy refused it"
        );
        let log = n.gw.take_firewall_log();
        assert!(
            log.iter().any(|l| l.starts_with(
                "reject wan forward: IN=eth1 OUT=eth0 SRC=10.0.0.1 DST=192.168.1.100"
            )),
            "{log:?}"
        );
        assert!(n
            .gw
            .firewall_listing()
            .unwrap()
            .contains("chain forward_wan"));
    }

    #[test]
    fn a_port_forward_to_the_routers_own_address_reaches_its_stack_and_replies_come_back_translated(
    ) {
        use smoltcp::socket::tcp;
        let mut n = net();
        let (c, _) = compile_image_firewall(
            "\nconfig redirect\n\toption name 'ssh-router'\n\toption src 'wan'\n\t\
             option proto 'tcp'\n\toption src_dport '8022'\n\toption dest_ip '192.168.1.1'\n\t\
             option dest_port '22'\n",
        );
        n.gw.reload_firewall(c.ruleset).unwrap();
        let sock = || crate::testnet::tcp_socket(4096);
        // The router's service on port 22 (its stack listens per interface).
        let mut l = sock();
        l.listen(22).unwrap();
        let hs = n.router[1].sockets.add(l);
        // Straight to port 22 from the WAN: the input chain refuses it.
        let direct = n.wan_host.sockets.add(sock());
        let cx = n.wan_host.iface.context();
        n.wan_host
            .sockets
            .get_mut::<tcp::Socket>(direct)
            .connect(cx, (IpAddress::v4(10, 0, 0, 2), 22), 41000)
            .unwrap();
        for now in 0..100 {
            n.step(now * 10);
        }
        assert_eq!(
            n.router[1].sockets.get_mut::<tcp::Socket>(hs).state(),
            tcp::State::Listen,
            "not reached directly"
        );
        // Through the forward: connected, and data both ways.
        let hc = n.wan_host.sockets.add(sock());
        let cx = n.wan_host.iface.context();
        n.wan_host
            .sockets
            .get_mut::<tcp::Socket>(hc)
            .connect(cx, (IpAddress::v4(10, 0, 0, 2), 8022), 41001)
            .unwrap();
        let mut now = 100;
        while n.wan_host.sockets.get_mut::<tcp::Socket>(hc).state() != tcp::State::Established {
            n.step(now * 10);
            now += 1;
            assert!(now < 400, "the forward to the router connected");
        }
        n.wan_host
            .sockets
            .get_mut::<tcp::Socket>(hc)
            .send_slice(b"hello router")
            .unwrap();
        let got = recv_within(&mut n, now, 100, |n| {
            let s = n.router[1].sockets.get_mut::<tcp::Socket>(hs);
            s.can_recv()
                .then(|| s.recv(|b| (b.len(), b.to_vec())).unwrap())
        });
        assert_eq!(got.as_deref(), Some(&b"hello router"[..]));
        let s = n.router[1].sockets.get_mut::<tcp::Socket>(hs);
        assert_eq!(
            s.remote_endpoint(),
            Some(smoltcp::wire::IpEndpoint::new(
                IpAddress::v4(10, 0, 0, 1),
                41001
            ))
        );
        s.send_slice(b"hello client").unwrap();
        let got = recv_within(&mut n, now + 100, 100, |n| {
            let s = n.wan_host.sockets.get_mut::<tcp::Socket>(hc);
            s.can_recv()
                .then(|| s.recv(|b| (b.len(), b.to_vec())).unwrap())
        });
        assert_eq!(got.as_deref(), Some(&b"hello client"[..]));
        assert_eq!(n.gw.netfilter.stats().local_dnat, 1);
        assert_eq!(n.gw.local_dnat_dropped + n.gw.local_dnat_refused, 0);
    }

    #[test]
    fn the_router_answers_the_lan_not_the_wan_and_its_own_flows_get_replies() {
        let mut n = net();
        let mut srv = udp_socket();
        srv.bind(9999).unwrap();
        let hs = n.router[1].sockets.add(srv);
        let mut srv0 = udp_socket();
        srv0.bind(9999).unwrap();
        let hs0 = n.router[0].sockets.add(srv0);
        let (mut w, mut l) = (udp_socket(), udp_socket());
        w.bind(7000).unwrap();
        l.bind(7001).unwrap();
        let hw = n.wan_host.sockets.add(w);
        let hl = n.lan_host.sockets.add(l);
        // from the WAN: the router's input chain rejects it before smoltcp sees it
        udp_send(&mut n.wan_host, hw, b"from wan", (ROUTER_WAN, 9999));
        let got = recv_within(&mut n, 0, 100, |n| udp_recv(&mut n.router[1], hs));
        assert_eq!(got, None);
        // from the LAN: accepted
        udp_send(&mut n.lan_host, hl, b"from lan", (ROUTER_LAN, 9999));
        let got = recv_within(&mut n, 100, 100, |n| udp_recv(&mut n.router[0], hs0));
        assert_eq!(got.as_deref(), Some(&b"from lan"[..]));
        // the router's own datagram to the WAN host, and its reply
        udp_send(&mut n.router[1], hs, b"out", (WAN_HOST, 7000));
        let got = recv_within(&mut n, 200, 100, |n| udp_recv(&mut n.wan_host, hw));
        assert_eq!(got.as_deref(), Some(&b"out"[..]));
        udp_send(&mut n.wan_host, hw, b"back", (ROUTER_WAN, 9999));
        let got = recv_within(&mut n, 300, 100, |n| udp_recv(&mut n.router[1], hs));
        assert_eq!(
            got.as_deref(),
            Some(&b"back"[..]),
            "a reply to the router's own flow"
        );
    }

    #[test]
    fn a_port_that_is_not_there_is_an_error() {
        let mut n = net();
        let spec = GatewaySpec {
            ports: alloc::vec![PortSpec::lan("eth7")],
            conntrack_max: 8,
            hash_seed: 1,
            firewall: None,
        };
        assert_eq!(
            Gateway::new(&spec, &mut n.router).err().as_deref(),
            Some("router: no interface eth7")
        );
    }

    /// A writer that only counts lines (a console that prints them).
    struct Lines(usize);

    impl core::fmt::Write for Lines {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            self.0 += s.matches('\n').count();
            Ok(())
        }
    }

    #[test]
    fn conntrack_is_listed_line_by_line_not_gathered() {
        let mut n = net();
        let mut a = udp_socket();
        a.bind(5000).unwrap();
        let ha = n.lan_host.sockets.add(a);
        let mut now = 0;
        for i in 0..40u16 {
            udp_send(&mut n.lan_host, ha, b"x", (WAN_HOST, 6000 + i));
            for _ in 0..3 {
                now += 10;
                n.step(now);
            }
        }
        for _ in 0..20 {
            now += 10;
            n.step(now);
        }
        assert_eq!(n.gw.netfilter.count(), 40);
        let mut out = Lines(0);
        let (r, rise) = xenlet_testalloc::peak_during(|| n.gw.write_conntrack(&mut out, now));
        assert_eq!(r, Ok(40));
        assert_eq!(out.0, 40);
        assert!(rise < 1024, "listing 40 flows took {rise} bytes");
        // A writer's error stops the listing.
        struct Full;
        impl core::fmt::Write for Full {
            fn write_str(&mut self, _: &str) -> core::fmt::Result {
                Err(core::fmt::Error)
            }
        }
        assert!(n.gw.write_conntrack(&mut Full, now).is_err());
    }
}
