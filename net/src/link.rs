//! The link layer under smoltcp: the [`Link`] trait a network frontend implements
//! (frames in, frames out, statistics), the link types ([`LinkStats`],
//! [`QueueStats`], [`RxChecksum`]: the Xen drivers' own, from `xenlet_drivers::netif`,
//! so a driver hands them over as they are), and [`LinkDevice`], the smoltcp
//! [`Device`] over a link. The
//! device also learns neighbours (IPv4 ARP, IPv6 neighbour discovery) from what it
//! receives, for `ip neigh`: smoltcp keeps its own cache private.
//!
//! The statistics are those of Linux's `struct rtnl_link_stats64`
//! (include/uapi/linux/if_link.h) that `ip -s link` prints; the checksum states are
//! those of netif.h's `NETRXF_data_validated` / `NETRXF_csum_blank` and Linux's
//! `CHECKSUM_UNNECESSARY` / `CHECKSUM_PARTIAL` (include/linux/skbuff.h).

use crate::tso::{Coalescer, Send};
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant;
use smoltcp::wire::{
    ArpOperation, ArpPacket, EthernetFrame, EthernetProtocol, IpAddress, IpProtocol, Ipv6Packet,
};

/// The MTU of a link that names none (Ethernet's).
pub const DEFAULT_MTU: usize = 1500;
/// Ethernet header bytes in front of the MTU's worth of packet.
pub const ETH_HEADER: usize = 14;

/// A link's counters (as `ip -s link` shows them), its queues' counters, and what it
/// vouches for of a received packet's TCP/UDP checksum (receive checksum offload): the
/// types the Xen drivers fill in, which every other link fills in too.
pub use xenlet_drivers::netif::{LinkStats, QueueStats, RxChecksum};

/// One port of a bridge, as `ip link` and `brctl show` print it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortView {
    /// Its name (`eth0`, `vif5.0`).
    pub name: String,
    /// Its link's MAC (for a client's vif served here: the client's).
    pub mac: [u8; 6],
    /// The only source MAC it accepts, if locked.
    pub lock: Option<[u8; 6]>,
    /// The link's counters.
    pub stats: LinkStats,
    /// Frames it brought in and frames sent to it through the bridge.
    pub rx_frames: u64,
    /// Frames sent to it by the bridge.
    pub tx_frames: u64,
    /// Why its link is broken, if it is.
    pub broken: Option<String>,
    /// Its MTU.
    pub mtu: usize,
    /// What restricts the link beyond its MAC lock ([`Link::guard`]), if anything.
    pub guard: Option<String>,
    /// Its driver's counters ([`Link::driver_stats`]), for `ethtool -S PORT`.
    pub driver_stats: Vec<(&'static str, u64)>,
}

/// A bridge as `ip link`, `brctl show` and `brctl showmacs` print it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgeView {
    /// Its name (`br-lan`).
    pub name: String,
    /// Its MAC (its first port's, or a port-less bridge's own).
    pub mac: [u8; 6],
    /// Port-less (OpenWrt's `bridge_empty`): the stack's interface is the bridge
    /// itself, and every port is a client's.
    pub portless: bool,
    /// Its ports, the one carrying the stack's interface first (none carries it on a
    /// port-less bridge).
    pub ports: Vec<PortView>,
    /// The forwarding table: (MAC, port name, age in ms, fixed).
    pub fdb: Vec<([u8; 6], String, i64, bool)>,
    /// Its counters, as text (`forwarded 3, flooded 1, ...`).
    pub counters: String,
}

/// A network interface's frame interface.
pub trait Link {
    /// The MAC address.
    fn mac(&self) -> [u8; 6];
    /// The next received frame.
    fn recv(&mut self) -> Option<Vec<u8>>;
    /// The next received frame, and what the link vouches for of its TCP/UDP
    /// checksum (receive checksum offload).
    fn recv_flagged(&mut self) -> Option<(Vec<u8>, RxChecksum)> {
        self.recv().map(|f| (f, RxChecksum::Unknown))
    }
    /// The next received frame, its checksum state, and for a TCP packet received
    /// whole (GSO) the segment size it was built from.
    fn recv_meta(&mut self) -> Option<(Vec<u8>, RxChecksum, Option<u16>)> {
        self.recv_flagged().map(|(f, c)| (f, c, None))
    }
    /// Whether the link completes partial TCP/UDP checksums on send
    /// ([`Link::send_csum_blank`]).
    fn tx_csum_blank(&self) -> bool {
        false
    }
    /// Sends a frame whose TCP/UDP checksum field holds only the pseudo-header sum,
    /// for the link to complete.
    fn send_csum_blank(&mut self, _frame: &[u8]) -> Result<(), String> {
        Err(String::from("checksum offload not supported"))
    }
    /// Whether the domain routes over this link (the Router flag of its neighbour
    /// advertisements).
    fn routes(&self) -> bool {
        false
    }
    /// Whether a frame can be sent now (reaps send completions first).
    fn can_send(&mut self) -> bool;
    /// Sends one frame.
    fn send(&mut self, frame: &[u8]) -> Result<(), String>;
    /// Counters.
    fn stats(&self) -> LinkStats;
    /// Why the link is broken, if it is.
    fn broken(&self) -> Option<&str>;
    /// Whether the link takes TCPv4 GSO packets ([`Link::send_gso`]).
    fn gso_tcpv4(&self) -> bool {
        false
    }
    /// Whether the link takes TCPv6 GSO packets ([`Link::send_gso`]).
    fn gso_tcpv6(&self) -> bool {
        false
    }
    /// Whether the link takes `frame` (Ethernet, IPv4 or IPv6 by its EtherType) as
    /// a GSO packet.
    fn takes_gso(&self, frame: &[u8]) -> bool {
        match frame.get(12..14) {
            Some([0x08, 0x00]) => self.gso_tcpv4(),
            Some([0x86, 0xdd]) => self.gso_tcpv6(),
            _ => false,
        }
    }
    /// Sends a TCP packet (IPv4 or IPv6) larger than the MTU, to be cut into
    /// `mss`-byte segments further on; its TCP checksum field holds the
    /// pseudo-header sum.
    fn send_gso(&mut self, _frame: &[u8], _mss: u16) -> Result<(), String> {
        Err(String::from("GSO not supported"))
    }
    /// Transmit slots free now (a GSO packet takes up to 17).
    fn tx_free_slots(&self) -> usize {
        usize::MAX
    }
    /// Per-queue packet counters when the link has several queues (else empty).
    fn queue_stats(&self) -> Vec<QueueStats> {
        Vec::new()
    }
    /// The driver's own counters, `(name, value)` in the order `ethtool -S` prints
    /// them (a vif's slots, batches, notifications, events); empty when the link
    /// has none.
    fn driver_stats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// The MTU: the largest IP packet sent without GSO.
    fn mtu(&self) -> usize {
        DEFAULT_MTU
    }
    /// What the link restricts its far end to, as `ip link` shows it under a
    /// bridge port: a client vif's allowed source addresses and transmit rate (the
    /// backend's `ip` and `rate` keys) with their counters. `None`: nothing.
    fn guard(&self) -> Option<String> {
        None
    }
    /// The bridge behind the link, if it is one ([`crate::bridge::Bridge`]).
    fn bridge_view(&self) -> Option<BridgeView> {
        None
    }
    /// The next IPv6 Router Solicitation the link kept aside for the router
    /// advertisement service (a routed link does: [`crate::gateway::Routed`]; smoltcp
    /// ignores them).
    fn take_solicitation(&mut self) -> Option<Vec<u8>> {
        None
    }
    /// Asks the link to keep Router Solicitations aside for
    /// [`Link::take_solicitation`] (an interface that advertises), or no longer
    /// (those waiting are dropped); otherwise they go to the stack like any frame.
    fn keep_solicitations(&mut self, _on: bool) {}
    /// The next DHCPv6 frame (UDP over IPv6 to port 547) the link kept aside for
    /// the DHCPv6 server (a routed link does: [`crate::gateway::Routed`]; smoltcp
    /// would not take ff02::1:2).
    fn take_dhcpv6(&mut self) -> Option<Vec<u8>> {
        None
    }
    /// Asks the link to keep DHCPv6 frames aside for [`Link::take_dhcpv6`] (an
    /// interface with a DHCPv6 server), or no longer (those waiting are dropped).
    fn keep_dhcpv6(&mut self, _on: bool) {}
    /// The next IPv6 Router Advertisement the link kept aside for the WAN's router
    /// discovery (`wan6`: [`xenlet_router::ra::Upstream`]; smoltcp ignores them).
    fn take_advert(&mut self) -> Option<Vec<u8>> {
        None
    }
    /// Asks the link to keep Router Advertisements aside for [`Link::take_advert`]
    /// (the WAN with `proto dhcpv6`), or no longer.
    fn keep_adverts(&mut self, _on: bool) {}
    /// Turns the reflector ([`crate::reflect`]) on or off: unicast frames to the
    /// link's MAC sent straight back instead of received.
    fn set_reflect(&mut self, _on: bool) -> Result<(), String> {
        Err(String::from("this link cannot reflect"))
    }
    /// The reflector's state and counters, if the link has one.
    fn reflector(&self) -> Option<crate::reflect::Reflector> {
        None
    }
}

/// Free transmit slots required before smoltcp may queue one more frame while
/// segments are merged: the frame's own slots plus room for two held 64 KiB packets of
/// 17 slots each (one sent while taking the frame, one at the flush after the poll).
fn gso_slots(frame: usize) -> usize {
    2 * 17 + frame.div_ceil(4096)
}

/// A neighbour learned from the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Neighbor {
    /// Its link-layer address.
    pub mac: [u8; 6],
    /// When it was last heard from (ms).
    pub seen_ms: i64,
}

/// Neighbours by IP address (bounded: the oldest entry makes room).
#[derive(Default, Debug)]
pub struct Neighbors {
    map: BTreeMap<IpAddress, Neighbor>,
}

const MAX_NEIGHBORS: usize = 64;

impl Neighbors {
    /// Records that `ip` is at `mac`.
    pub fn learn(&mut self, ip: IpAddress, mac: [u8; 6], now_ms: i64) {
        if mac[0] & 1 != 0 || mac == [0; 6] || ip.is_unspecified() || ip.is_multicast() {
            return;
        }
        if self.map.len() >= MAX_NEIGHBORS && !self.map.contains_key(&ip) {
            if let Some(oldest) = self
                .map
                .iter()
                .min_by_key(|(_, n)| n.seen_ms)
                .map(|(k, _)| *k)
            {
                self.map.remove(&oldest);
            }
        }
        self.map.insert(
            ip,
            Neighbor {
                mac,
                seen_ms: now_ms,
            },
        );
    }

    /// Every entry.
    pub fn iter(&self) -> impl Iterator<Item = (&IpAddress, &Neighbor)> {
        self.map.iter()
    }

    /// Learns from a received frame: ARP senders, IPv6 neighbour solicitations and
    /// advertisements (the source of the packet at the frame's source MAC).
    pub fn learn_from_frame(&mut self, frame: &[u8], now_ms: i64) {
        let Ok(eth) = EthernetFrame::new_checked(frame) else {
            return;
        };
        let src_mac = eth.src_addr().0;
        match eth.ethertype() {
            EthernetProtocol::Arp => {
                let Ok(arp) = ArpPacket::new_checked(eth.payload()) else {
                    return;
                };
                if matches!(arp.operation(), ArpOperation::Request | ArpOperation::Reply)
                    && arp.protocol_len() == 4
                    && arp.hardware_len() == 6
                {
                    let ip = arp.source_protocol_addr();
                    let hw = arp.source_hardware_addr();
                    if let (Ok(ip), Ok(hw)) = (<[u8; 4]>::try_from(ip), <[u8; 6]>::try_from(hw)) {
                        self.learn(IpAddress::Ipv4(ip.into()), hw, now_ms);
                    }
                }
            }
            EthernetProtocol::Ipv6 => {
                let Ok(ip) = Ipv6Packet::new_checked(eth.payload()) else {
                    return;
                };
                // ICMPv6 type 135 (NS) / 136 (NA) straight after the fixed header.
                if ip.next_header() == IpProtocol::Icmpv6
                    && matches!(ip.payload().first(), Some(135 | 136))
                    && !ip.src_addr().is_unspecified()
                {
                    self.learn(IpAddress::Ipv6(ip.src_addr()), src_mac, now_ms);
                }
            }
            _ => {}
        }
    }
}

/// The smoltcp device over a [`Link`] (borrowed for one poll).
pub struct LinkDevice<'a, L: Link> {
    link: &'a mut L,
    neighbors: &'a mut Neighbors,
    scratch: &'a mut Vec<u8>,
    /// Frames the link refused (counted as drops).
    pub tx_dropped: &'a mut u64,
    tso: Option<&'a mut Coalescer>,
    /// Duplicate address detection: sees every received frame.
    dad: Option<&'a mut crate::dad::Dad>,
    /// What became of received frames' TCP/UDP checksums.
    pub rx_csum: RxCsumStats,
}

/// Received TCP/UDP checksums: vouched for by the link (checked by the backend, or
/// never computed because the packet comes from dom0's stack), checked here in
/// software, and found wrong (those frames are dropped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxCsumStats {
    /// Vouched for by the link (receive checksum offload).
    pub offloaded: u64,
    /// Checked in software and right.
    pub verified: u64,
    /// Checked in software and wrong: dropped.
    pub bad: u64,
}

impl core::ops::AddAssign for RxCsumStats {
    fn add_assign(&mut self, o: Self) {
        self.offloaded += o.offloaded;
        self.verified += o.verified;
        self.bad += o.bad;
    }
}

impl<'a, L: Link> LinkDevice<'a, L> {
    /// A device for one poll.
    pub fn new(
        link: &'a mut L,
        neighbors: &'a mut Neighbors,
        scratch: &'a mut Vec<u8>,
        tx_dropped: &'a mut u64,
    ) -> Self {
        LinkDevice {
            link,
            neighbors,
            scratch,
            tx_dropped,
            tso: None,
            dad: None,
            rx_csum: RxCsumStats::default(),
        }
    }

    /// Shows every received frame to `dad` (a neighbour that has or probes a
    /// tentative address).
    pub fn with_dad(mut self, dad: &'a mut crate::dad::Dad) -> Self {
        self.dad = Some(dad);
        self
    }

    /// Merges TCP segments into GSO packets through `tso` (flushed by the caller
    /// after the poll) when the link takes them.
    /// smoltcp then leaves TCP checksums to the merger when the link completes them.
    pub fn with_tso(mut self, tso: &'a mut Coalescer) -> Self {
        if self.link.gso_tcpv4() {
            tso.tcp_csum_left = self.link.tx_csum_blank();
            tso.mtu = self.link.mtu();
            self.tso = Some(tso);
        }
        self
    }
}

/// Sends what the coalescer hands out: plain frames or GSO packets.
pub fn emit_to<L: Link>(link: &mut L) -> impl FnMut(&[u8], Send) -> bool + '_ {
    move |f, how| match how {
        Send::Plain => link.send(f).is_ok(),
        Send::CsumBlank => link.send_csum_blank(f).is_ok(),
        Send::Gso(mss) => link.send_gso(f, mss).is_ok(),
    }
}

/// A received frame.
pub struct RxToken(Vec<u8>);

impl phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

/// Room to send one frame.
pub struct TxToken<'a, L: Link> {
    link: &'a mut L,
    scratch: &'a mut Vec<u8>,
    dropped: &'a mut u64,
    tso: Option<&'a mut Coalescer>,
}

impl<L: Link> phy::TxToken for TxToken<'_, L> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        if let Some(c) = self.tso {
            // written straight into the merger's buffer
            return c.push_with(len, f, &mut emit_to(self.link));
        }
        // the scratch buffer only grows: no zeroing per frame
        if self.scratch.len() < len {
            self.scratch.resize(len, 0);
        }
        let frame = &mut self.scratch[..len];
        let r = f(frame);
        if self.link.send(frame).is_err() {
            *self.dropped += 1;
        }
        r
    }
}

impl<L: Link> LinkDevice<'_, L> {
    /// The largest frame smoltcp may build: the link's MTU, or 64 KiB when the
    /// merger sends larger TCP segments as GSO packets ([`crate::mss`]).
    fn max_frame(&self) -> usize {
        if self.tso.as_ref().is_some_and(|c| c.tcp_csum_left) {
            crate::tso::MAX_GSO_FRAME
        } else {
            self.link.mtu() + ETH_HEADER
        }
    }

    /// Whether smoltcp may build a frame now ([`Device::transmit`]): the link can
    /// send (its completions reaped first) and, while segments are merged, has the
    /// slots [`gso_slots`] asks for.
    pub fn tx_room(&mut self) -> bool {
        self.link.can_send()
            && (self.tso.is_none() || self.link.tx_free_slots() >= gso_slots(self.max_frame()))
    }
}

impl<L: Link> Device for LinkDevice<'_, L> {
    type RxToken<'b>
        = RxToken
    where
        Self: 'b;
    type TxToken<'b>
        = TxToken<'b, L>
    where
        Self: 'b;

    fn receive(&mut self, now: Instant) -> Option<(RxToken, TxToken<'_, L>)> {
        // smoltcp does not check TCP/UDP checksums (see `capabilities`): what the
        // link vouches for is taken, the rest checked here, and a bad frame dropped.
        let frame = loop {
            let (frame, csum) = self.link.recv_flagged()?;
            match csum {
                RxChecksum::Blank | RxChecksum::Validated => self.rx_csum.offloaded += 1,
                RxChecksum::Unknown => match crate::tso::verify_l4_checksum(&frame) {
                    Some(true) => self.rx_csum.verified += 1,
                    Some(false) => {
                        self.rx_csum.bad += 1;
                        continue;
                    }
                    None => {}
                },
            }
            break frame;
        };
        let mut frame = frame;
        if let Some(c) = self.tso.as_deref_mut().filter(|c| c.tcp_csum_left) {
            c.peers.on_receive(&mut frame, c.mtu);
        }
        self.neighbors.learn_from_frame(&frame, now.total_millis());
        if let Some(d) = self.dad.as_deref_mut() {
            d.observe(&frame);
        }
        Some((
            RxToken(frame),
            TxToken {
                link: self.link,
                scratch: self.scratch,
                dropped: self.tx_dropped,
                tso: self.tso.as_deref_mut(),
            },
        ))
    }

    fn transmit(&mut self, _now: Instant) -> Option<TxToken<'_, L>> {
        if !self.tx_room() {
            return None;
        }
        Some(TxToken {
            link: self.link,
            scratch: self.scratch,
            dropped: self.tx_dropped,
            tso: self.tso.as_deref_mut(),
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = self.max_frame();
        // Compute TCP/UDP checksums on transmit, never check them on receive: that
        // is done in `receive`, only for packets the backend did not vouch for. TCP's
        // are left to the merger when the link completes them (one pass fewer over
        // every byte sent; the merger fills the pseudo-header sum, or the whole
        // checksum of a frame it sends plainly).
        caps.checksum.tcp = if self.tso.as_ref().is_some_and(|c| c.tcp_csum_left) {
            smoltcp::phy::Checksum::None
        } else {
            smoltcp::phy::Checksum::Tx
        };
        caps.checksum.udp = smoltcp::phy::Checksum::Tx;
        caps
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use alloc::collections::VecDeque;
    use alloc::rc::Rc;
    use core::cell::RefCell;

    /// The frames in flight one way along a cable.
    pub type Wire = Rc<RefCell<VecDeque<Vec<u8>>>>;

    /// One end of an in-memory cable.
    pub struct Pipe {
        pub mac: [u8; 6],
        pub rx: Wire,
        pub tx: Wire,
        pub stats: LinkStats,
        /// Drop every frame sent while set.
        pub cut: Rc<RefCell<bool>>,
        /// Take GSO packets (cut in software, as a backend would).
        pub gso: bool,
        /// Take frames with a partial TCP checksum (completed here, as a backend
        /// would, after checking that the field holds the right pseudo-header sum).
        pub csum_blank: bool,
        /// Partial-checksum frames taken.
        pub blank_frames: u64,
        /// Received frames larger than this end's MTU: dropped, as a NIC would.
        pub rx_too_big: u64,
        /// GSO packets taken.
        pub gso_packets: u64,
        /// Per-queue counters to report.
        pub queues: Vec<QueueStats>,
        /// The MTU it reports.
        pub mtu: usize,
        /// Frames it takes before its TX "ring" is full (`None`: no limit); a test
        /// playing the backend adds room as it completes them.
        pub tx_room: Option<usize>,
        /// Frames in flight on the wire (sent, not yet received by the other end)
        /// at which `can_send` says no: a ring waiting for its completions.
        pub tx_limit: usize,
    }

    /// Two links connected back to back.
    pub fn cable() -> (Pipe, Pipe) {
        let a = Rc::new(RefCell::new(VecDeque::new()));
        let b = Rc::new(RefCell::new(VecDeque::new()));
        let cut = Rc::new(RefCell::new(false));
        // one end of the cable: receives from `rx`, sends to `tx`
        let end = |last: u8, rx: &Wire, tx: &Wire| Pipe {
            mac: [2, 0, 0, 0, 0, last],
            rx: rx.clone(),
            tx: tx.clone(),
            stats: LinkStats::default(),
            cut: cut.clone(),
            gso: false,
            csum_blank: false,
            blank_frames: 0,
            rx_too_big: 0,
            gso_packets: 0,
            queues: Vec::new(),
            mtu: DEFAULT_MTU,
            tx_room: None,
            tx_limit: 512,
        };
        (end(1, &a, &b), end(2, &b, &a))
    }

    /// A partial-checksum frame must carry its pseudo-header sum in the TCPv4
    /// checksum field (Linux's netback trusts it: `skb_checksum_setup`).
    fn check_pseudo_sum(f: &[u8]) -> Result<(), String> {
        let tcp = ETH_HEADER + 20;
        if f.len() < tcp + 20 || f[12..14] != [8, 0] || f[ETH_HEADER + 9] != 6 {
            return Err(String::from(
                "partial checksum on a frame that is not TCPv4",
            ));
        }
        let want = crate::tso::pseudo_header_sum(&f[ETH_HEADER..tcp], f.len() - tcp);
        let got = u16::from_be_bytes([f[tcp + 16], f[tcp + 17]]);
        if got != want {
            return Err(alloc::format!(
                "pseudo-header sum {got:#06x}, want {want:#06x}"
            ));
        }
        Ok(())
    }

    impl Link for Pipe {
        fn queue_stats(&self) -> Vec<QueueStats> {
            self.queues.clone()
        }
        /// One counter that tells the ends apart: the MAC's last byte.
        fn driver_stats(&self) -> Vec<(&'static str, u64)> {
            alloc::vec![("mac_last", u64::from(self.mac[5]))]
        }
        fn mtu(&self) -> usize {
            self.mtu
        }
        fn mac(&self) -> [u8; 6] {
            self.mac
        }
        fn recv(&mut self) -> Option<Vec<u8>> {
            let mut f = self.rx.borrow_mut().pop_front()?;
            while f.len() > self.mtu + ETH_HEADER {
                self.rx_too_big += 1;
                f = self.rx.borrow_mut().pop_front()?;
            }
            self.stats.rx_packets += 1;
            self.stats.rx_bytes += f.len() as u64;
            Some(f)
        }
        fn can_send(&mut self) -> bool {
            self.tx.borrow().len() < self.tx_limit
        }
        fn send(&mut self, frame: &[u8]) -> Result<(), String> {
            if frame.len() > self.mtu + ETH_HEADER {
                return Err(alloc::format!("{}-byte frame over the MTU", frame.len()));
            }
            if *self.cut.borrow() {
                return Ok(());
            }
            if let Some(room) = self.tx_room.as_mut() {
                if *room == 0 {
                    return Err(String::from("tx ring full"));
                }
                *room -= 1;
            }
            self.stats.tx_packets += 1;
            self.stats.tx_bytes += frame.len() as u64;
            self.tx.borrow_mut().push_back(frame.to_vec());
            Ok(())
        }
        fn stats(&self) -> LinkStats {
            self.stats
        }
        fn broken(&self) -> Option<&str> {
            None
        }
        fn gso_tcpv4(&self) -> bool {
            self.gso
        }
        fn tx_csum_blank(&self) -> bool {
            self.csum_blank
        }
        fn send_csum_blank(&mut self, frame: &[u8]) -> Result<(), String> {
            if !self.csum_blank {
                return Err(String::from("checksum offload not supported"));
            }
            check_pseudo_sum(frame)?;
            self.blank_frames += 1;
            let mut f = frame.to_vec();
            crate::tso::fill_l4_checksum(&mut f);
            self.send(&f)
        }
        fn send_gso(&mut self, frame: &[u8], mss: u16) -> Result<(), String> {
            check_pseudo_sum(frame)?;
            let segs = crate::tso::segment(frame, usize::from(mss)).ok_or("bad GSO packet")?;
            self.gso_packets += 1;
            for s in segs {
                self.send(&s)?;
            }
            Ok(())
        }
        fn tx_free_slots(&self) -> usize {
            self.tx_limit - self.tx.borrow().len().min(self.tx_limit)
        }
    }

    #[test]
    fn neighbors_learned_from_arp_bounded_and_sane() {
        let mut n = Neighbors::default();
        // ARP request from 10.0.0.1 at 02:..:01
        let mut f = alloc::vec![0u8; 42];
        f[0..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        f[22..28].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[28..32].copy_from_slice(&[10, 0, 0, 1]);
        f[38..42].copy_from_slice(&[10, 0, 0, 2]);
        n.learn_from_frame(&f, 5);
        let v: Vec<_> = n.iter().collect();
        assert_eq!(v.len(), 1);
        assert_eq!(*v[0].0, IpAddress::v4(10, 0, 0, 1));
        assert_eq!(v[0].1.mac, [2, 0, 0, 0, 0, 1]);
        // truncated and garbage frames teach nothing
        n.learn_from_frame(&f[..30], 6);
        n.learn_from_frame(&[0xff; 7], 6);
        // a multicast MAC is never learned
        n.learn(IpAddress::v4(10, 0, 0, 9), [1, 0, 0x5e, 0, 0, 1], 7);
        assert_eq!(n.iter().count(), 1);
        for i in 0..200u8 {
            n.learn(
                IpAddress::v4(10, 1, 0, i),
                [2, 0, 0, 0, 1, i],
                10 + i64::from(i),
            );
        }
        assert_eq!(n.iter().count(), MAX_NEIGHBORS);
        assert!(n.iter().any(|(ip, _)| *ip == IpAddress::v4(10, 1, 0, 199)));
        assert!(!n.iter().any(|(ip, _)| *ip == IpAddress::v4(10, 0, 0, 1)));
    }
}
