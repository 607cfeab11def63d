//! The forwarding fast path: one received Ethernet frame in, edited in place, out.
//!
//! [`Router::input`] follows Linux's `ip_rcv` → `ip_route_input` → `ip_forward` →
//! `ip_output` (`net/ipv4/ip_input.c`, `route.c`, `ip_forward.c`, `ip_output.c`) and
//! RFC 1812 §5.2/§5.3:
//!
//! 1. Ethernet: ARP is learnt from and given to the local stack; anything else that
//!    is not IPv4 unicast to this interface's MAC is local too (smoltcp decides).
//! 2. IPv4 header checks (`Ipv4Packet::new_checked`: IHL ≥ 5, total length within
//!    the frame; version 4; header checksum), options allowed if well formed. Broadcast, multicast
//!    and this subnet's broadcast are local.
//! 3. [`L4Hook::prerouting`] (reverse NAT); then a destination that is one of the
//!    router's addresses is local.
//! 4. Martian source/destination (RFC 1812 §5.3.7) dropped.
//! 5. Route lookup (no route: ICMP net-unreachable); TTL ≤ 1: ICMP time-exceeded;
//!    TTL decremented with an RFC 1624 header checksum update.
//! 6. MSS clamp for interfaces with `mtu_fix`; [`L4Hook::postrouting`] (masquerade).
//! 7. MTU: GSO packets leave whole when the link takes them, else are segmented
//!    ([`crate::gso`]); larger than the path MTU with DF: ICMP fragmentation-needed
//!    with the MTU (RFC 1191); without DF: fragments ([`crate::frag`]).
//! 8. Neighbour resolution ([`crate::neigh`]), Ethernet addresses rewritten, sent.
//!
//! ICMP errors quote the packet as it arrived: its IP header and first 8 payload
//! bytes are copied (≤ 68 bytes) before the hooks edit it. Nothing here allocates
//! per packet: fragments, segments and ICMP errors are built in buffers allocated by
//! [`Router::new`].

use alloc::vec::Vec;
use core::net::Ipv4Addr;

use smoltcp::wire::{EthernetAddress, EthernetFrame, EthernetProtocol, Ipv4Packet};

use crate::checksum;
use crate::defrag::{self, Defrag, DefragConfig, DefragStats, Reassembler};
use crate::firewall::reject;
use crate::fragcache6::FragCache6;
use crate::fraghold6::{DatagramKey, FragHold6, HoldStats};
use crate::icmp_error::{self, IcmpError, PeerLimiter, RateLimiter};
use crate::icmpv6_error;
use crate::iface::{IfConfig, IfError, Interfaces};
use crate::ipv4::{self, be16, put16};
use crate::link::ETH_LEN;
use crate::ndp::{Ndp, NdpConfig};
use crate::neigh::{NeighConfig, NeighLine, NeighTable, Resolution};
use crate::route::{Ipv4Net, Route, RouteError, RouteLine, RouteProto, RouteTable};
use crate::route6::{Addrs6, Route6Table};
use crate::stats::Stats;
use crate::{frag, gso, mss};
use crate::{DropReason, IfId, L4Hook, Meta, Millis};

pub use crate::link::{Output, RxMeta, TxFull, TxMeta};

/// The longest quote kept of the original packet: a 60-byte header + 8 bytes.
const SNAPSHOT_LEN: usize = 68;

/// What [`Router::input`] did with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// For the router itself: give the frame, unchanged, to the local stack. (ARP
    /// frames were also learnt from.)
    Local,
    /// Forwarded: the buffer was edited in place and sent (or its fragments/segments
    /// were).
    Forwarded,
    /// Copied into a queue waiting for ARP or neighbour discovery; the buffer is free.
    Queued,
    /// A fragment kept until its datagram is whole ([`crate::defrag`]); the buffer
    /// is free.
    Held,
    /// The last fragment of a datagram for the router itself: give the local stack
    /// the whole datagram, [`Router::take_local_datagram`], not this frame.
    LocalReassembled,
    /// Dropped and counted.
    Dropped(DropReason),
}

/// Sizes and limits of a [`Router`], all allocated by [`Router::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouterConfig {
    /// Interfaces.
    pub interfaces: usize,
    /// Routes.
    pub routes: usize,
    /// The neighbour table and its queues.
    pub neigh: NeighConfig,
    /// The largest interface MTU allowed (sizes the fragment/segment buffers).
    pub max_mtu: u16,
    /// ICMP errors a second (Linux `icmp_msgs_per_sec`).
    pub icmp_per_sec: u32,
    /// ICMP error burst (Linux `icmp_msgs_burst`).
    pub icmp_burst: u32,
    /// Keys the per-peer ICMP limit's table.
    pub icmp_peer_seed: u32,
    /// Reassembly limits.
    pub defrag: DefragConfig,
    /// IPv6 routes.
    pub routes6: usize,
    /// The IPv6 next-hop neighbour table.
    pub ndp: NdpConfig,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            interfaces: 8,
            routes: 64,
            neigh: NeighConfig::default(),
            max_mtu: 9000,
            icmp_per_sec: 1000,
            icmp_burst: 50,
            icmp_peer_seed: 0x5bd1_e995,
            defrag: DefragConfig::default(),
            routes6: 64,
            ndp: NdpConfig::default(),
        }
    }
}

/// The router: interfaces, routes, neighbours, counters and scratch buffers.
pub struct Router {
    ifaces: Interfaces,
    routes: RouteTable,
    neigh: NeighTable,
    icmp_limit: RateLimiter,
    icmp_peers: PeerLimiter,
    stats: Stats,
    max_mtu: u16,
    icmp_id: u16,
    /// One fragment or segment at a time.
    scratch: Vec<u8>,
    /// Fragments being put back together.
    defrag: Reassembler,
    /// A reassembled datagram for the local stack ([`Disposition::LocalReassembled`]).
    local_datagram: Option<Vec<u8>>,
    /// An ICMP error.
    icmp_buf: Vec<u8>,
    /// IPv6 routes (empty: no IPv6 is forwarded).
    routes6: Route6Table,
    /// The router's IPv6 addresses.
    addrs6: Addrs6,
    /// IPv6 next hops.
    ndp: Ndp,
    /// An ICMPv6 error.
    icmp6_buf: Vec<u8>,
    /// IPv6 datagrams whose first fragment the forward chain accepted.
    opened6: FragCache6,
    /// The one the packet being forwarded opened (its held fragments go next).
    opened6_now: Option<DatagramKey>,
    /// Later IPv6 fragments waiting for their first.
    held6: FragHold6,
}

/// The parts of the router the output stage needs (split so the scratch buffers can
/// be borrowed at the same time).
struct Egress<'a, O: Output> {
    ifaces: &'a Interfaces,
    neigh: &'a mut NeighTable,
    stats: &'a mut Stats,
    out: &'a mut O,
    input: IfId,
    now: Millis,
}

impl<O: Output> Egress<'_, O> {
    fn send(
        &mut self,
        ifc: IfId,
        next_hop: Ipv4Addr,
        frame: &mut [u8],
        tx: TxMeta,
    ) -> Result<Resolution, DropReason> {
        self.neigh.output(
            self.ifaces,
            ifc,
            next_hop,
            self.input,
            frame,
            tx,
            self.now,
            self.out,
            self.stats,
        )
    }
}

/// Combines the results of sending the pieces of one packet.
fn merge(acc: Option<Resolution>, r: Resolution) -> Option<Resolution> {
    match (acc, r) {
        (Some(Resolution::Queued), _) | (_, Resolution::Queued) => Some(Resolution::Queued),
        _ => Some(Resolution::Sent),
    }
}

impl Router {
    /// A router with no interfaces, every table and buffer allocated.
    pub fn new(config: RouterConfig) -> Self {
        let max_mtu = config.max_mtu.max(68);
        let frame_len = ETH_LEN + usize::from(max_mtu);
        Router {
            ifaces: Interfaces::new(config.interfaces),
            routes: RouteTable::new(config.routes),
            neigh: NeighTable::new(config.neigh),
            icmp_limit: RateLimiter::new(config.icmp_per_sec, config.icmp_burst),
            icmp_peers: PeerLimiter::new(config.icmp_peer_seed),
            stats: Stats::new(config.interfaces),
            max_mtu,
            icmp_id: 0,
            scratch: alloc::vec![0; frame_len],
            defrag: Reassembler::new(config.defrag),
            local_datagram: None,
            icmp_buf: alloc::vec![0; ETH_LEN + icmp_error::MAX_ERROR_LEN],
            routes6: Route6Table::new(config.routes6),
            addrs6: Addrs6::default(),
            ndp: Ndp::new(config.ndp),
            icmp6_buf: alloc::vec![0; ETH_LEN + icmpv6_error::MAX_ERROR_LEN],
            opened6: FragCache6::new(u64::from(config.icmp_peer_seed) ^ 0x6f70_656e),
            opened6_now: None,
            held6: FragHold6::new(config.defrag.max_bytes, config.defrag.max_datagrams),
        }
    }

    /// Adds an interface.
    pub fn add_interface(&mut self, config: IfConfig) -> Result<IfId, IfError> {
        if config.mtu > self.max_mtu {
            return Err(IfError::BadMtu);
        }
        self.ifaces.add(config)
    }

    /// Changes an interface's MTU.
    pub fn set_mtu(&mut self, ifc: IfId, mtu: u16) -> Result<(), IfError> {
        if mtu > self.max_mtu {
            return Err(IfError::BadMtu);
        }
        self.ifaces.set_mtu(ifc, mtu)
    }

    /// Changes an interface's IPv6 MTU (`wan6`: the MTU option of the upstream
    /// router's advertisements, as Linux sets `mtu6`): IPv6 packets larger than it
    /// get packet-too-big; IPv4 keeps the link's.
    pub fn set_mtu6(&mut self, ifc: IfId, mtu: Option<u16>) -> Result<(), IfError> {
        self.ifaces.set_mtu6(ifc, mtu)
    }

    /// Adds an address to an interface, with its connected route
    /// (`proto kernel scope link src <addr>`).
    pub fn add_address(&mut self, ifc: IfId, net: Ipv4Net) -> Result<(), IfError> {
        self.ifaces.add_addr(ifc, net)?;
        let route = Route {
            dest: net.network(),
            gateway: None,
            ifc,
            mtu: None,
            src: Some(net.addr()),
            metric: 0,
            proto: RouteProto::Kernel,
        };
        if self.routes.add(route).is_err() {
            let _ = self.ifaces.remove_addr(ifc, net.addr());
            return Err(IfError::RouteTableFull);
        }
        Ok(())
    }

    /// Removes an address and its connected route (and, like Linux, the routes whose
    /// gateway it made reachable stay: they just stop resolving).
    pub fn remove_address(&mut self, ifc: IfId, addr: Ipv4Addr) -> Result<(), IfError> {
        let net = self.ifaces.remove_addr(ifc, addr)?;
        self.routes.remove_where(|r| {
            r.proto == RouteProto::Kernel && r.ifc == ifc && r.src == Some(net.addr())
        });
        Ok(())
    }

    /// Replaces every address of `ifc` by `net` (a new DHCP lease), or removes them.
    pub fn set_address(&mut self, ifc: IfId, net: Option<Ipv4Net>) -> Result<(), IfError> {
        let mut old = [None; crate::iface::MAX_ADDRS];
        if let Some(i) = self.ifaces.get(ifc) {
            for (slot, n) in old.iter_mut().zip(i.addrs()) {
                *slot = Some(n.addr());
            }
        } else {
            return Err(IfError::NoSuchInterface);
        }
        for a in old.into_iter().flatten() {
            self.remove_address(ifc, a)?;
        }
        match net {
            Some(n) => self.add_address(ifc, n),
            None => Ok(()),
        }
    }

    /// Adds a static route.
    pub fn add_route(&mut self, route: Route) -> Result<(), RouteError> {
        self.routes.add(route)
    }

    /// Sets (or removes) the default route from DHCP: `default via gw dev ifc`.
    pub fn set_dhcp_default(&mut self, via: Option<(Ipv4Addr, IfId)>) -> Result<(), RouteError> {
        let src = via.and_then(|(gw, ifc)| self.ifaces.get(ifc)?.source_for(gw));
        self.routes.set_dhcp_default(via, src)
    }

    /// The routing table (to add or remove routes directly).
    pub fn routes_mut(&mut self) -> &mut RouteTable {
        &mut self.routes
    }

    /// The routing table.
    pub fn routes(&self) -> &RouteTable {
        &self.routes
    }

    /// The interfaces.
    pub fn interfaces(&self) -> &Interfaces {
        &self.ifaces
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The neighbour table.
    pub fn neighbours(&self) -> &NeighTable {
        &self.neigh
    }

    /// `ip route` lines.
    pub fn route_lines(&self) -> impl Iterator<Item = RouteLine<'_>> {
        self.routes.lines(&self.ifaces)
    }

    /// `ip neigh` lines.
    pub fn neigh_lines(&self) -> impl Iterator<Item = NeighLine<'_>> {
        self.neigh.lines(&self.ifaces)
    }

    /// Handles one frame received on `ifc`: see the module documentation.
    pub fn input<H: L4Hook, O: Output>(
        &mut self,
        ifc: IfId,
        frame: &mut [u8],
        rx: RxMeta,
        now: Millis,
        hook: &mut H,
        out: &mut O,
    ) -> Disposition {
        match self.forward(ifc, frame, rx, now, hook, out) {
            Ok(d @ (Disposition::Local | Disposition::LocalReassembled)) => {
                self.stats.local = self.stats.local.wrapping_add(1);
                d
            }
            Ok(d) => d,
            Err(reason) => {
                self.stats.drop(Some(ifc), reason);
                Disposition::Dropped(reason)
            }
        }
    }

    fn forward<H: L4Hook, O: Output>(
        &mut self,
        ifc: IfId,
        frame: &mut [u8],
        rx: RxMeta,
        now: Millis,
        hook: &mut H,
        out: &mut O,
    ) -> Result<Disposition, DropReason> {
        let iface = self.ifaces.get(ifc).ok_or(DropReason::Unsupported)?;
        let eth = EthernetFrame::new_checked(&*frame).map_err(|_| DropReason::Malformed)?;
        let csum_partial = rx.csum_partial || rx.gso_size.is_some();
        // the addresses read once (smoltcp's accessors are calls, three a packet)
        let (dst_mac, peer_mac) = mac_addrs(frame);
        let mut meta = Meta {
            input: ifc,
            output: None,
            csum_partial,
            now,
            src_mac: Some(peer_mac),
        };
        match eth.ethertype() {
            EthernetProtocol::Arp => {
                self.neigh
                    .observe_arp(&self.ifaces, ifc, eth.payload(), now, out, &mut self.stats);
                return Ok(Disposition::Local);
            }
            EthernetProtocol::Ipv4 => {}
            EthernetProtocol::Ipv6 => return self.forward6(ifc, frame, rx, meta, hook, out),
            other => {
                return hook
                    .input_other(u16::from(other), &meta)
                    .result()
                    .map(|()| Disposition::Local);
            }
        }
        let dst_mac = EthernetAddress(dst_mac);
        let to_our_mac = dst_mac == iface.mac();
        if !to_our_mac && !dst_mac.is_broadcast() && !dst_mac.is_multicast() {
            return Ok(Disposition::Local); // another host's: smoltcp drops it
        }

        // 2. the IPv4 header
        let ip_all = frame.get(ETH_LEN..).ok_or(DropReason::Malformed)?;
        let pkt = Ipv4Packet::new_checked(ip_all).map_err(|_| DropReason::Malformed)?;
        let hdr = ip_all.get(..usize::from(pkt.header_len())).unwrap_or(&[]);
        if pkt.version() != 4 || !checksum::header_ok(hdr) || !ipv4::options_ok(hdr) {
            return Err(DropReason::Malformed);
        }
        let ip_len = usize::from(pkt.total_len());
        let hl = usize::from(pkt.header_len());
        let dst = pkt.dst_addr();
        // 2a. a fragment waits for the rest of its datagram, which then goes on whole
        // (Linux's nf_defrag_ipv4, before conntrack: NAT and the firewall see it all)
        if defrag::is_fragment(ip_all) && rx.gso_size.is_none() {
            let ip = ip_all.get(..ip_len).ok_or(DropReason::Malformed)?;
            let whole = frame.get(..ETH_LEN + ip_len).ok_or(DropReason::Malformed)?;
            return match self.defrag.add(whole, ip, now) {
                Defrag::Held => Ok(Disposition::Held),
                Defrag::Whole(mut w) => {
                    match self.forward(ifc, &mut w, RxMeta::default(), now, hook, out)? {
                        Disposition::Local => {
                            self.local_datagram = Some(w);
                            Ok(Disposition::LocalReassembled)
                        }
                        d => Ok(d),
                    }
                }
            };
        }
        // A DHCP server's answer (UDP 67 -> 68) is for the router's own DHCP client
        // whatever its IP destination: RFC 2131 §4.1 lets a server unicast the OFFER
        // and ACK to the address it is offering, which the interface does not have
        // yet.
        let dhcp_reply = ip_all.get(ipv4::PROTO) == Some(&ipv4::PROTO_UDP)
            && ip_all.get(hl_of(&pkt)..hl_of(&pkt) + 4) == Some(&[0, 67, 0, 68][..]);
        if !to_our_mac
            || dst.is_broadcast()
            || dst.is_multicast()
            // (the flat list of all subnets' broadcasts first: most packets are to none)
            || (self.ifaces.is_any_subnet_broadcast(dst) && iface.is_subnet_broadcast(dst))
            || dhcp_reply
        {
            // the input chain; never an answer to a broadcast (RFC 1122 §3.2.2)
            let ip = ip_all.get(..ip_len).ok_or(DropReason::Malformed)?;
            return hook.input(ip, &meta).result().map(|()| Disposition::Local);
        }
        // the original header + 8 bytes, for ICMP errors about this packet
        let mut snap = [0u8; SNAPSHOT_LEN];
        let snap_len = (hl + 8).min(ip_len).min(SNAPSHOT_LEN);
        snap.get_mut(..snap_len)
            .ok_or(DropReason::Malformed)?
            .copy_from_slice(ip_all.get(..snap_len).ok_or(DropReason::Malformed)?);
        let head = snap.get(..snap_len).ok_or(DropReason::Malformed)?;

        // the frame without link padding
        let frame = frame
            .get_mut(..ETH_LEN + ip_len)
            .ok_or(DropReason::Malformed)?;
        if rx.gso_size == Some(0) {
            return Err(DropReason::Malformed); // a netfront bug, not a segment size
        }

        // 3. prerouting, then local delivery (the input chain)
        {
            let ip = frame.get_mut(ETH_LEN..).ok_or(DropReason::Malformed)?;
            hook.prerouting(ip, &meta)
                .or_reject(|| self.send_reject(ifc, peer_mac, head, ip, now, out))?;
        }
        let ip = frame.get(ETH_LEN..).ok_or(DropReason::Malformed)?;
        let (src, dst) = (ipv4::src(ip), ipv4::dst(ip));
        // 4a. a martian source, for the router itself as for forwarding (Linux's
        // `ip_route_input_slow` checks it before the local route): 127/8, 0/8 (but
        // for the broadcasts above), class E, or one of the router's own addresses
        // coming in from the wire.
        if ipv4::is_martian_source(src)
            || self.ifaces.is_local_addr(src)
            || self.ifaces.is_any_subnet_broadcast(src)
        {
            return Err(DropReason::Martian);
        }
        if self.ifaces.is_local_addr(dst) {
            return hook
                .input(ip, &meta)
                .or_reject(|| self.send_reject(ifc, peer_mac, head, ip, now, out))
                .map(|()| Disposition::Local);
        }

        // 4b. martian destinations (forwarding only)
        if ipv4::is_martian_destination(dst) || self.ifaces.is_any_subnet_broadcast(dst) {
            return Err(DropReason::Martian);
        }

        // 5. route, TTL
        let rest = ip.get(snap_len..).unwrap_or(&[]);
        let Some(route) = self.routes.lookup(dst).copied() else {
            self.send_icmp(IcmpError::NetUnreachable, ifc, head, rest, now, out);
            return Err(DropReason::NoRoute);
        };
        let out_iface = self.ifaces.get(route.ifc).ok_or(DropReason::NoRoute)?;
        let mtu = route
            .mtu
            .map_or(out_iface.mtu(), |m| m.min(out_iface.mtu()));
        let is_clamped = out_iface.config().is_mss_clamped;
        let ttl = ip.get(ipv4::TTL).copied().ok_or(DropReason::Malformed)?;
        if ttl <= 1 {
            self.send_icmp(IcmpError::TimeExceeded, ifc, head, rest, now, out);
            return Err(DropReason::TtlExpired);
        }
        let out_ifc = route.ifc;
        let next_hop = route.gateway.unwrap_or(dst);
        let ip = frame.get_mut(ETH_LEN..).ok_or(DropReason::Malformed)?;
        decrement_ttl(ip);

        // 6. the forward chain, MSS clamp, postrouting
        meta.output = Some(out_ifc);
        hook.forward(ip, &meta).or_reject(|| {
            self.send_reject_forwarded(ifc, peer_mac, snap, snap_len, ip, now, out);
        })?;
        if is_clamped {
            mss::clamp(ip, mss::mss_for_mtu(mtu), csum_partial);
        }
        hook.postrouting(ip, &meta).or_reject(|| {
            self.send_reject_forwarded(ifc, peer_mac, snap, snap_len, ip, now, out);
        })?;

        // 7, 8. MTU and out (what waits for ARP keeps the packet's start as it came)
        self.neigh.begin_packet();
        let res = self.output(
            frame,
            rx,
            csum_partial,
            out_ifc,
            next_hop,
            mtu,
            ifc,
            head,
            now,
            out,
        );
        self.neigh.note_origin(head);
        let res = res?;
        self.stats.rx(ifc, ip_len);
        Ok(match res {
            Resolution::Sent => Disposition::Forwarded,
            Resolution::Queued => Disposition::Queued,
        })
    }

    /// The MTU stage and transmission of a routed packet.
    #[allow(clippy::too_many_arguments)]
    fn output<O: Output>(
        &mut self,
        frame: &mut [u8],
        rx: RxMeta,
        csum_partial: bool,
        out_ifc: IfId,
        next_hop: Ipv4Addr,
        mtu: u16,
        input: IfId,
        head: &[u8],
        now: Millis,
        out: &mut O,
    ) -> Result<Resolution, DropReason> {
        let out_iface = self.ifaces.get(out_ifc).ok_or(DropReason::NoRoute)?;
        let has_gso = out_iface.config().has_tx_gso;
        let has_csum = out_iface.config().has_tx_csum_offload;
        let ip_len = frame.len().saturating_sub(ETH_LEN);
        let ip = frame.get(ETH_LEN..).ok_or(DropReason::Malformed)?;
        let df = be16(ip, ipv4::FRAG).ok_or(DropReason::Malformed)? & ipv4::DF != 0;
        let mtu_len = usize::from(mtu);

        if ip_len <= mtu_len {
            let mut tx = TxMeta {
                csum_partial,
                gso_size: None,
            };
            if csum_partial && !has_csum {
                let ip = frame.get_mut(ETH_LEN..).ok_or(DropReason::Malformed)?;
                ipv4::complete_partial_checksum(ip);
                tx.csum_partial = false;
            }
            let mut eg = self.egress(input, now, out);
            return eg.send(out_ifc, next_hop, frame, tx);
        }

        if let Some(gso_size) = rx.gso_size {
            let headers = gso::tcp_headers_len(ip).ok_or(DropReason::Unsupported)?;
            let seg_len = headers + usize::from(gso_size);
            if seg_len <= mtu_len && has_gso && has_csum {
                let tx = TxMeta::gso(gso_size);
                let mut eg = self.egress(input, now, out);
                return eg.send(out_ifc, next_hop, frame, tx);
            }
            if seg_len > mtu_len && df {
                self.send_frag_needed(mtu, input, head, frame, now, out);
                return Err(DropReason::TooBig);
            }
            // without DF a segment may be cut smaller than the sender asked: still
            // valid TCP, and cheaper than fragmenting every segment
            let mss = u16::try_from(
                usize::from(gso_size).min(mtu_len.checked_sub(headers).ok_or(DropReason::TooBig)?),
            )
            .map_err(|_| DropReason::TooBig)?;
            if mss == 0 {
                return Err(DropReason::TooBig);
            }
            let mut acc = None;
            let (mut eg, scratch, _) = self.egress_and_buffers(input, now, out);
            gso::segment(frame, mss, scratch, |seg| {
                acc = merge(acc, eg.send(out_ifc, next_hop, seg, TxMeta::default())?);
                Ok(())
            })?;
            return acc.ok_or(DropReason::Malformed);
        }

        if df {
            self.send_frag_needed(mtu, input, head, frame, now, out);
            return Err(DropReason::TooBig);
        }
        if csum_partial {
            // fragments cannot carry a partial checksum: the link sees only pieces
            let ip = frame.get_mut(ETH_LEN..).ok_or(DropReason::Malformed)?;
            ipv4::complete_partial_checksum(ip);
        }
        let mut acc = None;
        let (mut eg, scratch, _) = self.egress_and_buffers(input, now, out);
        frag::fragment(frame, mtu, scratch, |f| {
            acc = merge(acc, eg.send(out_ifc, next_hop, f, TxMeta::default())?);
            Ok(())
        })?;
        acc.ok_or(DropReason::Malformed)
    }

    fn egress<'a, O: Output>(
        &'a mut self,
        input: IfId,
        now: Millis,
        out: &'a mut O,
    ) -> Egress<'a, O> {
        self.egress_and_buffers(input, now, out).0
    }

    /// [`Router::egress`] with the scratch buffer and the ICMP buffer at once
    /// (segments, fragments and errors are built in a buffer and sent through the
    /// egress).
    fn egress_and_buffers<'a, O: Output>(
        &'a mut self,
        input: IfId,
        now: Millis,
        out: &'a mut O,
    ) -> (Egress<'a, O>, &'a mut Vec<u8>, &'a mut Vec<u8>) {
        let Router {
            ifaces,
            neigh,
            stats,
            scratch,
            icmp_buf,
            ..
        } = self;
        let eg = Egress {
            ifaces,
            neigh,
            stats,
            out,
            input,
            now,
        };
        (eg, scratch, icmp_buf)
    }

    fn send_frag_needed<O: Output>(
        &mut self,
        mtu: u16,
        input: IfId,
        head: &[u8],
        frame: &[u8],
        now: Millis,
        out: &mut O,
    ) {
        let rest = frame.get(ETH_LEN + head.len()..).unwrap_or(&[]);
        self.send_icmp(IcmpError::FragNeeded { mtu }, input, head, rest, now, out);
    }

    /// Answers a packet the firewall rejected (fw4's `handle_reject`): a TCP reset
    /// for TCP, sent straight back to `peer_mac` on `input`; an ICMP port-unreachable
    /// for anything else. `head` is the packet as it arrived (header + 8 bytes), `ip`
    /// as it is now. The ICMP error is rate limited as any; the reset is not (Linux's
    /// `nf_send_reset` is not: one reset per segment, never more).
    fn send_reject<O: Output>(
        &mut self,
        input: IfId,
        peer_mac: [u8; 6],
        head: &[u8],
        ip: &[u8],
        now: Millis,
        out: &mut O,
    ) {
        if head.get(ipv4::PROTO) != Some(&ipv4::PROTO_TCP) {
            let rest = ip.get(head.len()..).unwrap_or(&[]);
            self.send_icmp(IcmpError::PortUnreachable, input, head, rest, now, out);
            return;
        }
        let Some(seg) = reject::TcpSegment::read(head, ip) else {
            return;
        };
        if !icmp_error::may_report(head) {
            return; // not to a broadcast, not from a martian source
        }
        let Some(mac) = self.ifaces.get(input).map(|i| i.mac().0) else {
            return;
        };
        self.icmp_id = self.icmp_id.wrapping_add(1);
        let Some(n) = reject::build(&mut self.icmp_buf, &seg, mac, peer_mac, self.icmp_id) else {
            return;
        };
        let Some(frame) = self.icmp_buf.get(..n) else {
            return;
        };
        if out.send(input, frame, TxMeta::default()).is_ok() {
            self.stats.resets = self.stats.resets.wrapping_add(1);
        }
    }

    /// [`Router::send_reject`] for a packet the forward or postrouting chain
    /// rejected: it quotes the packet's first `len` bytes as it came (`snap`) with
    /// its TTL taken down, as Linux's `ip_forward` does before its forward hook (the
    /// addresses stay as they came: Linux translates its quote back). Frag-needed
    /// quotes the TTL as it came: Linux checks the MTU before the decrement.
    #[allow(clippy::too_many_arguments)]
    fn send_reject_forwarded<O: Output>(
        &mut self,
        input: IfId,
        peer_mac: [u8; 6],
        mut snap: [u8; SNAPSHOT_LEN],
        len: usize,
        ip: &[u8],
        now: Millis,
        out: &mut O,
    ) {
        if let Some(q) = snap.get_mut(..len) {
            decrement_ttl(q);
            self.send_reject(input, peer_mac, q, ip, now, out);
        }
    }

    /// Sends an ICMP error about the packet `head` + `rest` that came in by `input`,
    /// if RFC 1812 and the rate limit allow.
    fn send_icmp<O: Output>(
        &mut self,
        kind: IcmpError,
        input: IfId,
        head: &[u8],
        rest: &[u8],
        now: Millis,
        out: &mut O,
    ) {
        if !icmp_error::may_report(head) {
            return;
        }
        let to = ipv4::src(head);
        if self.ifaces.is_local_addr(to) {
            return; // about a packet we rewrote to come from us: nobody to tell
        }
        let Some(route) = self.routes.lookup(to).copied() else {
            return;
        };
        let Some(out_iface) = self.ifaces.get(route.ifc) else {
            return;
        };
        // The source is the address of the interface the error leaves by (Linux
        // takes it from the output route): a LAN address never goes out of the WAN
        // in an error about a spoofed packet.
        let Some(from) = out_iface.source_for(to) else {
            return;
        };
        let mtu = route
            .mtu
            .map_or(out_iface.mtu(), |m| m.min(out_iface.mtu()));
        // Linux's `icmpv4_mask_allow`: fragmentation-needed is never limited (path
        // MTU discovery depends on it); the others are limited per destination
        // first, then by the global bucket (a peer over its allowance takes none).
        if !matches!(kind, IcmpError::FragNeeded { .. }) {
            if !self.icmp_peers.allow(to, now) {
                self.stats.icmp_peer_limited = self.stats.icmp_peer_limited.wrapping_add(1);
                return;
            }
            if !self.icmp_limit.allow(now) {
                self.stats.icmp_rate_limited = self.stats.icmp_rate_limited.wrapping_add(1);
                return;
            }
        }
        self.icmp_id = self.icmp_id.wrapping_add(1);
        let Some(n) = icmp_error::build(
            &mut self.icmp_buf,
            kind,
            from,
            self.icmp_id,
            head,
            rest,
            usize::from(mtu),
        ) else {
            return;
        };
        let (mut eg, _, icmp_buf) = self.egress_and_buffers(input, now, out);
        let Some(frame) = icmp_buf.get_mut(..n) else {
            return;
        };
        let next_hop = route.gateway.unwrap_or(to);
        if eg
            .send(route.ifc, next_hop, frame, TxMeta::default())
            .is_ok()
        {
            self.stats.icmp_errors = self.stats.icmp_errors.wrapping_add(1);
        }
    }

    /// The reassembled datagram of the last [`Disposition::LocalReassembled`].
    pub fn take_local_datagram(&mut self) -> Option<Vec<u8>> {
        self.local_datagram.take()
    }

    /// The reassembler's counters.
    pub fn defrag_stats(&self) -> DefragStats {
        self.defrag.stats()
    }

    /// The counters of the later IPv6 fragments held for their first.
    pub fn frag_hold6_stats(&self) -> HoldStats {
        self.held6.stats()
    }

    /// Timers: ARP and neighbour solicitation retries and ageing; packets whose
    /// neighbour failed get an ICMP host-unreachable or ICMPv6 address-unreachable
    /// (rate limited); datagrams not whole in time are dropped.
    /// Call every few hundred milliseconds.
    pub fn poll<O: Output>(&mut self, now: Millis, out: &mut O) {
        self.defrag.expire(now);
        self.held6.expire(now);
        self.neigh.poll(&self.ifaces, now, out, &mut self.stats);
        self.poll6(now, out);
        while let Some((slot, input, frame, origin)) = self.neigh.take_failed() {
            let ip = frame.get(ETH_LEN..).unwrap_or(&[]);
            let split = (ipv4::header_len(ip) + 8).min(ip.len());
            let mut snap = [0u8; SNAPSHOT_LEN];
            let n = split.min(SNAPSHOT_LEN);
            // The quote starts as the packet arrived (before NAT) when that is known.
            let first = if origin.len() == n { origin } else { ip };
            let ok = match (snap.get_mut(..n), first.get(..n)) {
                (Some(d), Some(s)) => {
                    d.copy_from_slice(s);
                    true
                }
                _ => false,
            };
            // the quote beyond the snapshot: at most what fits in 576 bytes
            let mut rest = [0u8; icmp_error::MAX_ERROR_LEN];
            let rest_src = ip.get(n..).unwrap_or(&[]);
            let rest_len = rest_src.len().min(rest.len());
            if let (Some(d), Some(s)) = (rest.get_mut(..rest_len), rest_src.get(..rest_len)) {
                d.copy_from_slice(s);
            }
            self.neigh.free_failed(slot);
            if ok {
                let head = snap.get(..n).unwrap_or(&[]);
                let tail = rest.get(..rest_len).unwrap_or(&[]);
                self.send_icmp(IcmpError::HostUnreachable, input, head, tail, now, out);
            }
        }
    }
}

/// The destination and source MAC addresses of `frame` (at least an Ethernet
/// header long: checked by the caller).
#[inline]
fn mac_addrs(frame: &[u8]) -> ([u8; 6], [u8; 6]) {
    let mut d = [0; 6];
    let mut s = [0; 6];
    if let (Some(a), Some(b)) = (frame.get(..6), frame.get(6..12)) {
        d.copy_from_slice(a);
        s.copy_from_slice(b);
    }
    (d, s)
}

/// TTL − 1 with the header checksum updated as RFC 1624 / RFC 1812 §5.3.1 (Linux's
/// `ip_decrease_ttl`).
#[inline]
fn decrement_ttl(ip: &mut [u8]) {
    let (Some(old), Some(c)) = (be16(ip, ipv4::TTL), be16(ip, ipv4::CHECKSUM)) else {
        return;
    };
    let new = old.wrapping_sub(0x0100);
    put16(ip, ipv4::TTL, new);
    put16(ip, ipv4::CHECKSUM, checksum::update16(c, old, new));
}

mod v6;

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests6;

/// The header length of a checked IPv4 packet.
fn hl_of<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> usize {
    usize::from(p.header_len())
}
