//! The IPv6 forwarding path, beside the IPv4 one: Linux's `ipv6_rcv` →
//! `ip6_route_input` → `ip6_forward` → `ip6_output` (`net/ipv6/ip6_input.c`,
//! `route.c`, `ip6_output.c`) and RFC 8200.
//!
//! With no IPv6 route configured ([`Router::add_route6`], [`Router::add_address6`])
//! every IPv6 frame goes to the local stack as it always did (through
//! [`L4Hook::input_other`]), untouched: nothing is forwarded. Otherwise:
//!
//! 1. Frames not to this interface's MAC (nor multicast) are the local stack's to drop.
//! 2. The fixed header ([`crate::ipv6::parse`]) and the extension header chain
//!    ([`crate::exthdr::walk`]) are checked: a chain that cannot be walked within the
//!    packet is dropped and counted ([`crate::stats::Stats::ipv6_bad_exthdr`]).
//! 3. ND messages are learnt from ([`crate::ndp`]).
//! 4. Multicast, link-local and unspecified destinations and the router's own
//!    addresses are local ([`L4Hook::input6`]).
//! 5. A source no router forwards from (multicast, loopback, unspecified, one of
//!    ours, link-local: the latter gets destination-unreachable "beyond scope",
//!    RFC 4443 §3.1) is dropped as [`DropReason::Martian`].
//! 6. Route lookup (none: destination-unreachable "no route"), hop limit ≤ 1:
//!    time-exceeded; larger than the path MTU: packet-too-big with the MTU (a router
//!    never fragments, RFC 8200 §5); the hop limit is decremented.
//! 7. [`L4Hook::forward6`] (the firewall's forward chain, conntrack).
//! 8. The next hop's MAC from [`crate::ndp`] (unknown: a solicitation goes out and
//!    the packet waits for the advertisement in a bounded queue, as IPv4's for ARP;
//!    if none comes, an ICMPv6 address-unreachable), sent.
//!
//! ICMPv6 errors quote the packet as it arrived (the hop limit is put back for a
//! reject after the decrement), up to 1280 bytes.

use core::net::Ipv6Addr;

use smoltcp::wire::EthernetFrame;

use super::{Disposition, Router, ETH_LEN};
use crate::exthdr::{self, Upper};
use crate::firewall::reject6;
use crate::gso6;
use crate::icmpv6_error::{self, Icmpv6Error};
use crate::iface::{IfError, Interfaces};
use crate::ipv6;
use crate::link::{Output, RxMeta, TxMeta};
use crate::ndp::{self, Lookup, NdpStats};
use crate::route::{RouteError, RouteProto};
use crate::route6::{Ipv6Net, Route6, Route6Table};
use crate::stats::Stats;
use crate::{DropReason, HookVerdict, IfId, L4Hook, Meta, Millis};

/// Linux's `net.ipv6.icmp.ratelimit` (ms).
const PEER_INTERVAL6_MS: Millis = 1000;

impl Router {
    /// Adds an IPv6 address to an interface, with its on-link route (unless a /128).
    /// An RA/SLAAC or DHCPv6-PD client calls this for the addresses it configures.
    pub fn add_address6(&mut self, ifc: IfId, net: Ipv6Net) -> Result<(), IfError> {
        if self.ifaces.get(ifc).is_none() {
            return Err(IfError::NoSuchInterface);
        }
        if !self.addrs6.add(ifc, net) {
            return Err(IfError::TooManyAddrs);
        }
        if net.prefix_len() < 128 {
            let route = Route6 {
                dest: net.network(),
                gateway: None,
                ifc,
                mtu: None,
                metric: 256,
                proto: RouteProto::Kernel,
            };
            if self.routes6.add(route).is_err() {
                let _ = self.addrs6.remove(ifc, net.addr());
                return Err(IfError::RouteTableFull);
            }
        }
        Ok(())
    }

    /// Removes an IPv6 address and its on-link route.
    pub fn remove_address6(&mut self, ifc: IfId, addr: Ipv6Addr) -> Result<(), IfError> {
        let net = self.addrs6.remove(ifc, addr).ok_or(IfError::NoSuchAddr)?;
        let still = self.addrs6.of(ifc).any(|n| n.network() == net.network());
        if !still {
            self.routes6.remove_where(|r| {
                r.proto == RouteProto::Kernel && r.ifc == ifc && r.dest == net.network()
            });
        }
        Ok(())
    }

    /// Adds an IPv6 route (a static one, the default route an RA gives: `::/0` via
    /// the router's link-local address with [`RouteProto::Dhcp`], ...).
    pub fn add_route6(&mut self, route: Route6) -> Result<(), RouteError> {
        self.routes6.add(route)
    }

    /// The IPv6 routing table (to remove routes, e.g. when an RA's lifetime ends).
    pub fn routes6_mut(&mut self) -> &mut Route6Table {
        &mut self.routes6
    }

    /// The IPv6 routing table.
    pub fn routes6(&self) -> &Route6Table {
        &self.routes6
    }

    /// The router's IPv6 addresses on `ifc` (besides its link-local one).
    pub fn addresses6(&self, ifc: IfId) -> impl Iterator<Item = Ipv6Net> + '_ {
        self.addrs6.of(ifc)
    }

    /// The neighbour discovery counters.
    pub fn ndp_stats(&self) -> NdpStats {
        self.ndp.stats()
    }

    /// The MAC the forwarding path knows for `ip` on `ifc`.
    pub fn neighbour6(&self, ifc: IfId, ip: Ipv6Addr) -> Option<[u8; 6]> {
        self.ndp.get(ifc, ip)
    }

    /// An IPv6 frame received on `ifc`: see the module documentation. A first
    /// fragment the forward chain accepts takes the later fragments of its datagram
    /// that were held waiting for it ([`crate::fraghold6`]) on after it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn forward6<H: L4Hook, O: Output>(
        &mut self,
        ifc: IfId,
        frame: &mut [u8],
        rx: RxMeta,
        meta: Meta,
        hook: &mut H,
        out: &mut O,
    ) -> Result<Disposition, DropReason> {
        let r = self.forward6_one(ifc, frame, rx, meta, hook, out);
        if let Some(key) = self.opened6_now.take() {
            for (input, mut f) in self.held6.release(&key) {
                let m = Meta {
                    input,
                    output: None,
                    csum_partial: false,
                    now: meta.now,
                    src_mac: f.get(6..12).and_then(|m| m.try_into().ok()),
                };
                if let Err(reason) =
                    self.forward6_one(input, &mut f, RxMeta::default(), m, hook, out)
                {
                    self.stats.drop(Some(input), reason);
                }
            }
        }
        r
    }

    /// One IPv6 frame: [`Self::forward6`] without the release of held fragments.
    #[allow(clippy::too_many_arguments)]
    fn forward6_one<H: L4Hook, O: Output>(
        &mut self,
        ifc: IfId,
        frame: &mut [u8],
        rx: RxMeta,
        mut meta: Meta,
        hook: &mut H,
        out: &mut O,
    ) -> Result<Disposition, DropReason> {
        if self.routes6.is_empty() {
            // not routing IPv6: as before, the local stack's (fails closed)
            let ip = frame.get(ETH_LEN..).unwrap_or(&[]);
            return hook
                .input6(ip, None, &meta)
                .result()
                .map(|()| Disposition::Local);
        }
        let now = meta.now;
        let iface = self.ifaces.get(ifc).ok_or(DropReason::Unsupported)?;
        let eth = EthernetFrame::new_checked(&*frame).map_err(|_| DropReason::Malformed)?;
        let to_our_mac = eth.dst_addr() == iface.mac();
        let peer_mac = eth.src_addr().0;
        if !to_our_mac && !eth.dst_addr().is_multicast() {
            return Ok(Disposition::Local); // another host's: the local stack drops it
        }

        // 2. the headers
        let ip_all = frame.get(ETH_LEN..).ok_or(DropReason::Malformed)?;
        let h = ipv6::parse(ip_all)?;
        let ip = ip_all.get(..h.total_len).ok_or(DropReason::Malformed)?;
        let upper = match exthdr::walk(ip, h.next_header) {
            Ok(u) => u,
            Err(e) => {
                self.stats.ipv6_bad_exthdr = self.stats.ipv6_bad_exthdr.wrapping_add(1);
                // Linux's `ip6_tlvopt_unknown`: actions 10 and 11 answer with a
                // parameter problem (11 not to a multicast destination)
                if let exthdr::ExtError::UnknownOption { at, action } = e {
                    if action >= 2 && (to_our_mac || action == 2) {
                        let kind = Icmpv6Error::UnknownOption {
                            pointer: u32::try_from(at).unwrap_or(u32::MAX),
                            to_multicast: action == 2,
                        };
                        self.send_icmp6(kind, ifc, ip, now, out);
                    }
                }
                return Err(e.reason());
            }
        };
        // 3. neighbour discovery is learnt from (and still goes to the local stack)
        if upper.proto == ipv6::PROTO_ICMPV6 {
            self.ndp.observe(ifc, ip, &upper, now, out, &mut self.stats);
        }

        // 4. for the router itself
        if h.dst.is_loopback() {
            return Err(DropReason::Martian);
        }
        if !to_our_mac
            || h.dst.is_multicast()
            || h.dst.is_unspecified()
            || ipv6::is_link_local(h.dst)
            || self.addrs6.contains(h.dst)
        {
            return hook
                .input6(ip, Some(&upper), &meta)
                .or_reject(|| {
                    // never an answer to a multicast (RFC 4443 §2.4 (e), RFC 9293)
                    if to_our_mac && !h.dst.is_multicast() {
                        self.send_reject6(ifc, peer_mac, ip, &upper, now, out);
                    }
                })
                .map(|()| Disposition::Local);
        }

        // 5. sources no router forwards from
        if ipv6::is_unforwardable_source(h.src) || self.addrs6.contains(h.src) {
            if ipv6::is_link_local(h.src) {
                self.send_icmp6(Icmpv6Error::BeyondScope, ifc, ip, now, out);
            }
            return Err(DropReason::Martian);
        }

        // 5a. a later fragment of a datagram whose first fragment the forward chain
        // has not accepted waits for it (Linux's nf_defrag_ipv6 holds it, at
        // PREROUTING, until the datagram is whole)
        if let Some(f) = upper.fragment.filter(|f| f.offset > 0) {
            let key = (h.src.octets(), h.dst.octets(), f.id);
            if !self.opened6.allows(key.0, key.1, key.2, now) {
                let whole = frame
                    .get(..ETH_LEN + h.total_len)
                    .ok_or(DropReason::Malformed)?;
                // refused when full: counted there, as the IPv4 reassembler's
                self.held6.hold(key, ifc, whole, now);
                return Ok(Disposition::Held);
            }
        }

        // 6. route, hop limit, MTU
        let Some(route) = self.routes6.lookup(h.dst).copied() else {
            self.send_icmp6(Icmpv6Error::NoRoute, ifc, ip, now, out);
            return Err(DropReason::NoRoute);
        };
        let out_iface = self.ifaces.get(route.ifc).ok_or(DropReason::NoRoute)?;
        let mtu = route
            .mtu
            .map_or(out_iface.mtu6(), |m| m.min(out_iface.mtu6()))
            .max(ipv6::MIN_MTU);
        let out_mac = out_iface.mac().0;
        let has_csum = out_iface.config().has_tx_csum_offload;
        // a GSO packet (its checksum partial) leaves whole to a link that cuts
        // TCPv6 and completes checksums itself (Linux's `skb_gso_ok`)
        let whole_gso = out_iface.config().has_tx_gso6 && has_csum;
        if h.hop_limit <= 1 {
            self.send_icmp6(Icmpv6Error::HopLimitExceeded, ifc, ip, now, out);
            return Err(DropReason::TtlExpired);
        }
        // a GSO packet (TCPv6 from a netfront) is judged by its segments' size
        // (Linux's `ip6_pkt_too_big` with `skb_gso_validate_network_len`)
        let seg_len = match rx.gso_size {
            Some(0) => return Err(DropReason::Malformed),
            Some(g) => {
                gso6::tcp_headers_len(ip, &upper).ok_or(DropReason::Unsupported)? + usize::from(g)
            }
            None => h.total_len,
        };
        if seg_len > usize::from(mtu) {
            self.send_icmp6(Icmpv6Error::PacketTooBig { mtu }, ifc, ip, now, out);
            return Err(DropReason::TooBig);
        }
        let frame = frame
            .get_mut(..ETH_LEN + h.total_len)
            .ok_or(DropReason::Malformed)?;
        let ip = frame.get_mut(ETH_LEN..).ok_or(DropReason::Malformed)?;
        if let Some(hl) = ip.get_mut(ipv6::HOP_LIMIT) {
            *hl = h.hop_limit - 1;
        }

        // 7. the forward chain
        meta.output = Some(route.ifc);
        match hook.forward6(ip, &upper, &meta) {
            HookVerdict::Accept => {
                // a first fragment vouches for the rest of its datagram
                if let Some(f) = upper.fragment.filter(|f| f.offset == 0 && f.more) {
                    let key = (h.src.octets(), h.dst.octets(), f.id);
                    self.opened6.note(key.0, key.1, key.2, now);
                    self.opened6_now = Some(key);
                }
            }
            HookVerdict::Drop(r) => return Err(r),
            HookVerdict::Reject => {
                // quoted with its hop limit decremented: Linux's forward hook runs
                // after `ip6_forward` took one off (router-diff's
                // v6-wan-udp-to-lan: fw4's port-unreachable quotes hlim 63)
                self.send_reject6(ifc, peer_mac, ip, &upper, now, out);
                return Err(DropReason::Filtered);
            }
        }

        // 8. the next hop (unknown: the packet waits for it, unless a GSO one)
        let next_hop = route.gateway.unwrap_or(h.dst);
        let out_ifc = route.ifc;
        if let (Some(g), true) = (rx.gso_size, whole_gso) {
            let mac = self
                .resolve6(out_ifc, next_hop, now, out, None)?
                .ok_or(DropReason::NoNeighbour)?;
            fill_eth(frame, mac, out_mac);
            let tx = TxMeta::gso(g);
            if out.send(out_ifc, frame, tx).is_err() {
                self.stats.tx_full(out_ifc);
                return Err(DropReason::TxFull);
            }
            self.stats.tx(out_ifc, h.total_len);
        } else if let Some(g) = rx.gso_size {
            let mac = self
                .resolve6(out_ifc, next_hop, now, out, None)?
                .ok_or(DropReason::NoNeighbour)?;
            fill_eth(frame, mac, out_mac);
            // the link cannot take it whole: cut here, each segment with a full checksum
            let Router { scratch, stats, .. } = self;
            gso6::segment6(frame, &upper, g, scratch, |seg| {
                let len = seg.len().saturating_sub(ETH_LEN);
                if out.send(out_ifc, seg, TxMeta::default()).is_err() {
                    stats.tx_full(out_ifc);
                    return Err(DropReason::TxFull);
                }
                stats.tx(out_ifc, len);
                Ok(())
            })?;
        } else {
            let mut tx = TxMeta {
                csum_partial: meta.csum_partial,
                gso_size: None,
            };
            if meta.csum_partial && !has_csum {
                let ip = frame.get_mut(ETH_LEN..).ok_or(DropReason::Malformed)?;
                if !gso6::complete_partial6(ip, &upper) {
                    return Err(DropReason::Unsupported);
                }
                tx.csum_partial = false;
            }
            let Some(mac) = self.resolve6(out_ifc, next_hop, now, out, Some((ifc, &*frame, tx)))?
            else {
                self.stats.rx(ifc, h.total_len);
                return Ok(Disposition::Queued);
            };
            fill_eth(frame, mac, out_mac);
            if out.send(out_ifc, frame, tx).is_err() {
                self.stats.tx_full(out_ifc);
                return Err(DropReason::TxFull);
            }
            self.stats.tx(out_ifc, h.total_len);
        }
        self.stats.rx(ifc, h.total_len);
        self.stats.ipv6_forwarded = self.stats.ipv6_forwarded.wrapping_add(1);
        Ok(Disposition::Forwarded)
    }

    /// Answers a packet the firewall rejected (fw4's `handle_reject`): a TCP reset
    /// for TCP, straight back to `peer_mac` on `input` (not rate limited, as Linux's
    /// `nf_send_reset6`), an ICMPv6 port-unreachable for anything else.
    fn send_reject6<O: Output>(
        &mut self,
        input: IfId,
        peer_mac: [u8; 6],
        ip: &[u8],
        upper: &Upper,
        now: Millis,
        out: &mut O,
    ) {
        if upper.proto != ipv6::PROTO_TCP {
            self.send_icmp6(Icmpv6Error::PortUnreachable, input, ip, now, out);
            return;
        }
        let Some(mac) = self.ifaces.get(input).map(|i| i.mac().0) else {
            return;
        };
        let mut buf = [0u8; reject6::RESET6_FRAME_LEN];
        let Some(n) = reject6::build6(&mut buf, ip, upper, mac, peer_mac) else {
            return;
        };
        if let Some(f) = buf.get(..n) {
            if out.send(input, f, TxMeta::default()).is_ok() {
                self.stats.resets = self.stats.resets.wrapping_add(1);
            }
        }
    }

    /// The MAC of `next_hop` on `ifc`; if unknown, a solicitation is sent (when due)
    /// and the frame in `hold` (with the interface it came in by) waits for the
    /// answer (`None`), or without one is [`DropReason::NoNeighbour`].
    fn resolve6<O: Output>(
        &mut self,
        ifc: IfId,
        next_hop: Ipv6Addr,
        now: Millis,
        out: &mut O,
        hold: Option<(IfId, &[u8], TxMeta)>,
    ) -> Result<Option<[u8; 6]>, DropReason> {
        let unknown = match self.ndp.resolve(ifc, next_hop, now) {
            Lookup::Known(mac) => return Ok(Some(mac)),
            Lookup::Probe(mac) => {
                send_solicit(&self.ifaces, &mut self.stats, ifc, next_hop, Some(mac), out);
                return Ok(Some(mac));
            }
            Lookup::Waiting => Err(DropReason::NoNeighbour),
            Lookup::Solicit => {
                send_solicit(&self.ifaces, &mut self.stats, ifc, next_hop, None, out);
                Err(DropReason::NoNeighbour)
            }
        };
        let (Some((input, frame, tx)), Some(iface)) = (hold, self.ifaces.get(ifc)) else {
            return unknown;
        };
        self.ndp
            .hold(ifc, next_hop, input, iface.mac().0, frame, tx)
            .map(|()| None)
    }

    /// Timers of IPv6 neighbour discovery: solicitations retried for the next hops
    /// packets wait for; the packets of one that failed get an ICMPv6
    /// address-unreachable (RFC 4443 code 3, rate limited as the other errors).
    pub(super) fn poll6<O: Output>(&mut self, now: Millis, out: &mut O) {
        let Router {
            ndp, ifaces, stats, ..
        } = self;
        ndp.poll(now, stats, |ifc, target, stats| {
            send_solicit(ifaces, stats, ifc, target, None, out);
        });
        while let Some((slot, input, frame)) = self.ndp.take_failed() {
            // copied out (the ICMPv6 error is built from it while the slot is free)
            let mut quote = core::mem::take(&mut self.scratch);
            let ip = frame.get(ETH_LEN..).unwrap_or(&[]);
            let n = ip.len().min(quote.len());
            if let (Some(d), Some(s)) = (quote.get_mut(..n), ip.get(..n)) {
                d.copy_from_slice(s);
            }
            self.ndp.free_failed(slot);
            // quoted as it arrived: the hop limit put back
            if let Some(hl) = quote
                .get_mut(ipv6::HOP_LIMIT)
                .filter(|_| n > ipv6::HOP_LIMIT)
            {
                *hl = hl.saturating_add(1);
            }
            let orig = quote.get(..n).unwrap_or(&[]);
            self.send_icmp6(Icmpv6Error::AddressUnreachable, input, orig, now, out);
            self.scratch = quote;
        }
    }

    /// Sends an ICMPv6 error about `orig` (as it arrived on `input`) to its source,
    /// if RFC 4443 §2.4 and the rate limits allow.
    fn send_icmp6<O: Output>(
        &mut self,
        kind: Icmpv6Error,
        input: IfId,
        orig: &[u8],
        now: Millis,
        out: &mut O,
    ) {
        if !icmpv6_error::may_report(kind, orig) {
            return;
        }
        let to = ipv6::src(orig);
        if self.addrs6.contains(to) {
            return;
        }
        // back the way the packet came: a link-local source is on the input link
        let (ifc, next_hop, mtu, plen) = if ipv6::is_link_local(to) {
            let Some(i) = self.ifaces.get(input) else {
                return;
            };
            (input, to, i.mtu6(), 64)
        } else {
            let Some(r) = self.routes6.lookup(to).copied() else {
                return;
            };
            let Some(i) = self.ifaces.get(r.ifc) else {
                return;
            };
            let mtu = r.mtu.map_or(i.mtu6(), |m| m.min(i.mtu6()));
            (r.ifc, r.gateway.unwrap_or(to), mtu, r.dest.prefix_len())
        };
        let Some(mac) = self.ifaces.get(ifc).map(|i| i.mac().0) else {
            return;
        };
        // the source: an address of the output interface (on the peer's prefix
        // first), else any of the router's, else its link-local address (Linux's
        // source address selection over all interfaces)
        let from = if ipv6::is_link_local(to) {
            ipv6::link_local_of(mac)
        } else {
            self.addrs6
                .source_for(ifc, to)
                .or_else(|| self.addrs6.any())
                .unwrap_or_else(|| ipv6::link_local_of(mac))
        };
        if kind.is_rate_limited() {
            // Linux's `icmpv6_xrlim_allow`: one a second (`icmpv6_time`) to a peer,
            // more to peers behind wider prefixes: 1000 ms >> ((128 - plen) >> 5)
            let shift = (128 - u32::from(plen.min(128))) >> 5;
            let interval = PEER_INTERVAL6_MS >> shift;
            if !self.icmp_peers.allow_every(to, now, interval) {
                self.stats.icmp_peer_limited = self.stats.icmp_peer_limited.wrapping_add(1);
                return;
            }
            if !self.icmp_limit.allow(now) {
                self.stats.icmp_rate_limited = self.stats.icmp_rate_limited.wrapping_add(1);
                return;
            }
        }
        let Some(n) = icmpv6_error::build(&mut self.icmp6_buf, kind, from, orig, usize::from(mtu))
        else {
            return;
        };
        // a peer not resolved yet: the error waits for its advertisement as a
        // forwarded packet does (Linux queues it on the neighbour entry too);
        // `icmp6_buf` is out of `self` meanwhile (no allocation: taken, put back)
        let buf = core::mem::take(&mut self.icmp6_buf);
        let peer = match buf.get(..n) {
            Some(f) => self.resolve6(ifc, next_hop, now, out, Some((ifc, f, TxMeta::default()))),
            None => Err(DropReason::NoNeighbour),
        };
        self.icmp6_buf = buf;
        let Ok(Some(peer_mac)) = peer else {
            return;
        };
        let Some(frame) = self.icmp6_buf.get_mut(..n) else {
            return;
        };
        fill_eth(frame, peer_mac, mac);
        if out.send(ifc, frame, TxMeta::default()).is_ok() {
            self.stats.icmp6_errors = self.stats.icmp6_errors.wrapping_add(1);
        } else {
            self.stats.tx_full(ifc);
        }
    }
}

/// Sets the Ethernet addresses of `frame`.
fn fill_eth(frame: &mut [u8], dst: [u8; 6], src: [u8; 6]) {
    if let Some(d) = frame.get_mut(..6) {
        d.copy_from_slice(&dst);
    }
    if let Some(s) = frame.get_mut(6..12) {
        s.copy_from_slice(&src);
    }
}

/// Sends a neighbour solicitation for `target` out of `ifc` (multicast, or unicast to
/// `to` to re-confirm it).
fn send_solicit<O: Output>(
    ifaces: &Interfaces,
    stats: &mut Stats,
    ifc: IfId,
    target: Ipv6Addr,
    to: Option<[u8; 6]>,
    out: &mut O,
) {
    let Some(mac) = ifaces.get(ifc).map(|i| i.mac().0) else {
        return;
    };
    let src = ipv6::link_local_of(mac);
    let mut buf = [0u8; ndp::NS_FRAME_LEN];
    let Ok(n) = ndp::build_solicit(&mut buf, mac, src, target, to) else {
        return;
    };
    if let Some(f) = buf.get(..n) {
        if out.send(ifc, f, TxMeta::default()).is_err() {
            stats.tx_full(ifc);
        }
    }
}
