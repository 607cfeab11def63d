//! A learning Ethernet bridge across several links, as Linux's bridge
//! (`net/bridge/br_input.c`, `br_forward.c`, `br_fdb.c`) and OpenWrt's `br-lan`: the
//! stack sees one [`Link`] whose MAC is its first port's (OpenWrt's `br-lan` takes
//! `eth0`'s), and frames between ports are switched by a forwarding database learned
//! from source addresses, aged after [`AGEING_MS`] (Linux's default `ageing_time`,
//! 300 s). Broadcast and multicast go to every other port and to the stack; unknown
//! unicast to every other port; a frame for the port it came from is dropped (no
//! hairpin, Linux's default).
//!
//! A port may be locked to one source MAC: a client's vif served by this domain
//! (netback) carries only what libxl's `mac` key names, as Xen's `vif-bridge` rules
//! and Qubes' firewall VMs require. A frame with any other source is dropped and
//! counted ([`BridgeStats::spoofed`]); so is a frame from a locked port whose source
//! is a multicast address. A locked port's MAC is in the table from the start, so a
//! client cannot be impersonated by another port either: a frame from elsewhere with
//! a locked MAC as its source is dropped too.
//!
//! Offloads: the bridge takes GSO packets and partial checksums from the stack only
//! when every port does; a frame switched between ports that its output port cannot
//! take (a GSO packet, a partial checksum) is cut or completed here, in software.
//!
//! With one unlocked port the bridge is a plain pass-through: every frame goes to the
//! stack, as the link alone would give it.
//!
//! A port-less bridge ([`Bridge::portless`], OpenWrt's `option bridge_empty '1'`: a
//! bridge of client vifs only, as a Qubes firewall VM's downstream network) has a MAC
//! of its own and starts with no port; clients join and leave it, and with none the
//! stack's frames go nowhere (counted as transmit errors).
//!
//! Bounds: the table holds at most [`FDB_MAX`] addresses (a new one past it is not
//! learnt, and its frames are flooded; counted), and one [`Bridge::recv_meta`] call
//! switches at most [`SWITCH_BUDGET`] frames between ports before returning, so a
//! client flooding another cannot keep the caller in the bridge.

use crate::link::{BridgeView, Link, LinkStats, PortView, QueueStats, RxChecksum, DEFAULT_MTU};
use crate::tso;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

/// How long a learnt address stays without a frame from it (Linux: 300 s).
pub const AGEING_MS: i64 = 300_000;
/// Addresses the table holds at most.
pub const FDB_MAX: usize = 1024;
/// Frames switched between ports in one receive call at most.
pub const SWITCH_BUDGET: usize = 64;

/// A port's identity within its bridge (stable while the port exists).
pub type PortId = u32;

/// Bridge counters beyond the links' own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BridgeStats {
    /// Frames switched from one port to one other port.
    pub forwarded: u64,
    /// Frames sent to every other port (broadcast, multicast, unknown unicast).
    pub flooded: u64,
    /// Frames dropped for a source address the port may not use.
    pub spoofed: u64,
    /// Frames dropped because their destination is on the port they came from.
    pub hairpin: u64,
    /// Frames shorter than an Ethernet header.
    pub runts: u64,
    /// Addresses not learnt because the table was full.
    pub fdb_full: u64,
    /// Frames a port refused (full or broken) when the bridge sent to it.
    pub port_tx_dropped: u64,
    /// GSO packets cut for a port that cannot take them whole.
    pub segmented: u64,
}

/// One port of a bridge.
pub struct BridgePort<L: Link> {
    id: PortId,
    name: String,
    link: L,
    lock: Option<[u8; 6]>,
    /// Frames from this port delivered to the stack or switched.
    pub rx_frames: u64,
    /// Frames sent to this port (by the stack or switched).
    pub tx_frames: u64,
}

impl<L: Link> BridgePort<L> {
    /// Its id.
    pub fn id(&self) -> PortId {
        self.id
    }
    /// Its name (`eth0`, `vif5.0`).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The link.
    pub fn link(&self) -> &L {
        &self.link
    }
    /// The link, to poll or reconfigure it.
    pub fn link_mut(&mut self) -> &mut L {
        &mut self.link
    }
    /// The only source MAC the port accepts, if locked.
    pub fn lock(&self) -> Option<[u8; 6]> {
        self.lock
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    port: PortId,
    seen_ms: i64,
    /// A locked port's own address: never aged, never moved.
    fixed: bool,
}

/// A learning bridge over links of type `L`.
pub struct Bridge<L: Link> {
    /// `None`: a plain link wrapped (one port, no name, never shown as a bridge).
    name: Option<String>,
    ports: Vec<BridgePort<L>>,
    fdb: BTreeMap<[u8; 6], Entry>,
    next_id: PortId,
    /// The port the next receive call starts with (round robin).
    cursor: usize,
    now_ms: i64,
    stats: BridgeStats,
    /// Frames to and from the stack.
    own: LinkStats,
    /// Segments of a GSO packet cut for a port (reused).
    scratch: Vec<u8>,
    /// A port-less bridge's own MAC (`None`: its first port's).
    own_mac: Option<[u8; 6]>,
}

fn is_multicast(mac: &[u8]) -> bool {
    mac.first().is_some_and(|b| b & 1 == 1)
}

fn dst_of(frame: &[u8]) -> [u8; 6] {
    let mut m = [0; 6];
    m.copy_from_slice(&frame[..6]);
    m
}

fn src_of(frame: &[u8]) -> [u8; 6] {
    let mut m = [0; 6];
    m.copy_from_slice(&frame[6..12]);
    m
}

/// Where a received frame goes.
enum Verdict {
    /// To the stack only.
    Local,
    /// To the stack and every other port.
    LocalAndFlood,
    /// To one other port.
    Port(usize),
    /// To every other port.
    Flood,
    /// Nowhere.
    Drop,
}

impl<L: Link> Bridge<L> {
    /// A bridge named `name` (`br-lan`) whose first port is `first` (its MAC is the
    /// bridge's).
    pub fn new(name: &str, first_name: &str, first: L) -> Self {
        let mut b = Self::plain(first_name, first);
        b.name = Some(String::from(name));
        b
    }

    /// `link` alone, as a bridge with no name: a pass-through that is no bridge to
    /// `ip link` and `brctl` until it is named ([`Bridge::set_name`]).
    pub fn plain(first_name: &str, first: L) -> Self {
        let mut b = Self::empty(None, None);
        b.ports.push(BridgePort {
            id: 0,
            name: String::from(first_name),
            link: first,
            lock: None,
            rx_frames: 0,
            tx_frames: 0,
        });
        b.next_id = 1;
        b
    }

    /// A bridge named `name` (`br-guest`) with no port yet and MAC `mac` of its own:
    /// the stack's interface is the bridge itself, and every port is a client's
    /// (OpenWrt's `option bridge_empty '1'`).
    pub fn portless(name: &str, mac: [u8; 6]) -> Self {
        Self::empty(Some(String::from(name)), Some(mac))
    }

    /// A bridge with no port, nothing learnt and no traffic counted yet.
    fn empty(name: Option<String>, own_mac: Option<[u8; 6]>) -> Self {
        Bridge {
            name,
            ports: Vec::new(),
            fdb: BTreeMap::new(),
            next_id: 0,
            cursor: 0,
            now_ms: 0,
            stats: BridgeStats::default(),
            own: LinkStats::default(),
            scratch: Vec::new(),
            own_mac,
        }
    }

    /// Whether it is port-less ([`Bridge::portless`]): no port carries its MAC.
    pub fn is_portless(&self) -> bool {
        self.own_mac.is_some()
    }

    /// Its name, if it is a named bridge.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Names it (a plain link becomes a bridge that ports can join).
    pub fn set_name(&mut self, name: &str) {
        self.name = Some(String::from(name));
    }

    /// Adds a port; `lock` restricts its frames to that source MAC. Returns its id.
    /// A locked MAC another port already holds fixed is refused (`Err` with the link).
    pub fn add_port(&mut self, name: &str, link: L, lock: Option<[u8; 6]>) -> Result<PortId, L> {
        if let Some(mac) = lock {
            if is_multicast(&mac) || self.fdb.get(&mac).is_some_and(|e| e.fixed) {
                return Err(link);
            }
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        if let Some(mac) = lock {
            self.fdb.insert(
                mac,
                Entry {
                    port: id,
                    seen_ms: self.now_ms,
                    fixed: true,
                },
            );
        }
        self.ports.push(BridgePort {
            id,
            name: String::from(name),
            link,
            lock,
            rx_frames: 0,
            tx_frames: 0,
        });
        Ok(id)
    }

    /// Removes a port (never the first of a bridge whose MAC is its), forgetting every
    /// address learnt on it; gives its link back.
    pub fn remove_port(&mut self, id: PortId) -> Option<L> {
        let i = self.ports.iter().position(|p| p.id == id)?;
        if i == 0 && self.own_mac.is_none() {
            return None;
        }
        self.fdb.retain(|_, e| e.port != id);
        let port = self.ports.remove(i);
        if self.cursor >= self.ports.len() {
            self.cursor = 0;
        }
        Some(port.link)
    }

    /// Takes the bridge apart: every port's name and link, the first one first.
    pub fn into_ports(self) -> Vec<(String, L)> {
        self.ports.into_iter().map(|p| (p.name, p.link)).collect()
    }

    /// The ports, the first one first.
    pub fn ports(&self) -> &[BridgePort<L>] {
        &self.ports
    }

    /// The ports, to poll their links.
    pub fn ports_mut(&mut self) -> &mut [BridgePort<L>] {
        &mut self.ports
    }

    /// The counters.
    pub fn bridge_stats(&self) -> BridgeStats {
        self.stats
    }

    /// The learnt addresses: (MAC, port id, age in ms, fixed).
    pub fn fdb(&self) -> impl Iterator<Item = ([u8; 6], PortId, i64, bool)> + '_ {
        self.fdb
            .iter()
            .map(|(m, e)| (*m, e.port, self.now_ms.saturating_sub(e.seen_ms), e.fixed))
    }

    /// Sets the clock (milliseconds) and forgets addresses not seen for
    /// [`AGEING_MS`].
    pub fn set_now_ms(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        self.fdb
            .retain(|_, e| e.fixed || now_ms.saturating_sub(e.seen_ms) < AGEING_MS);
    }

    fn passthrough(&self) -> bool {
        self.own_mac.is_none() && self.ports.len() == 1 && self.ports[0].lock.is_none()
    }

    fn index_of(&self, id: PortId) -> Option<usize> {
        self.ports.iter().position(|p| p.id == id)
    }

    fn learn(&mut self, from: usize, src: [u8; 6]) -> bool {
        let id = self.ports[from].id;
        if let Some(lock) = self.ports[from].lock {
            if src != lock {
                return false;
            }
        }
        if is_multicast(&src) {
            return false;
        }
        let full = self.fdb.len() >= FDB_MAX;
        match self.fdb.get_mut(&src) {
            Some(e) if e.fixed => e.port == id,
            Some(e) => {
                e.port = id;
                e.seen_ms = self.now_ms;
                true
            }
            None if full => {
                self.stats.fdb_full += 1;
                true
            }
            None => {
                self.fdb.insert(
                    src,
                    Entry {
                        port: id,
                        seen_ms: self.now_ms,
                        fixed: false,
                    },
                );
                true
            }
        }
    }

    fn verdict(&mut self, from: usize, frame: &[u8]) -> Verdict {
        if frame.len() < 14 {
            self.stats.runts += 1;
            return Verdict::Drop;
        }
        if !self.learn(from, src_of(frame)) {
            self.stats.spoofed += 1;
            return Verdict::Drop;
        }
        let dst = dst_of(frame);
        if is_multicast(&dst) {
            return Verdict::LocalAndFlood;
        }
        if dst == self.mac() {
            return Verdict::Local;
        }
        match self.fdb.get(&dst).map(|e| e.port) {
            Some(id) => match self.index_of(id) {
                Some(to) if to == from => {
                    self.stats.hairpin += 1;
                    Verdict::Drop
                }
                Some(to) => Verdict::Port(to),
                None => Verdict::Flood,
            },
            None => Verdict::Flood,
        }
    }

    /// Sends `frame` (with its receive metadata) to port `to`, completing a partial
    /// checksum or cutting a GSO packet the port cannot take.
    fn emit(&mut self, to: usize, frame: &[u8], csum: RxChecksum, gso: Option<u16>) -> bool {
        let port = &mut self.ports[to];
        let sent = match gso {
            Some(mss) if port.link.takes_gso(frame) => port.link.send_gso(frame, mss).is_ok(),
            Some(mss) => match tso::segment(frame, usize::from(mss)) {
                Some(segs) => {
                    self.stats.segmented += 1;
                    let mut all = true;
                    for s in segs {
                        all &= port.link.send(&s).is_ok();
                    }
                    all
                }
                None => false,
            },
            None if csum == RxChecksum::Blank && port.link.tx_csum_blank() => {
                port.link.send_csum_blank(frame).is_ok()
            }
            None if csum == RxChecksum::Blank => {
                self.scratch.clear();
                self.scratch.extend_from_slice(frame);
                tso::fill_l4_checksum(&mut self.scratch);
                port.link.send(&self.scratch).is_ok()
            }
            None => port.link.send(frame).is_ok(),
        };
        if sent {
            self.ports[to].tx_frames += 1;
        } else {
            self.stats.port_tx_dropped += 1;
        }
        sent
    }

    fn flood(
        &mut self,
        from: Option<usize>,
        frame: &[u8],
        csum: RxChecksum,
        gso: Option<u16>,
    ) -> bool {
        let mut any = false;
        for to in 0..self.ports.len() {
            if Some(to) != from {
                any |= self.emit(to, frame, csum, gso);
            }
        }
        any
    }

    fn deliver(&mut self, frame: &[u8]) {
        self.own.rx_packets += 1;
        self.own.rx_bytes += frame.len() as u64;
    }
}

impl<L: Link> Link for Bridge<L> {
    fn mac(&self) -> [u8; 6] {
        match (self.own_mac, self.ports.first()) {
            (Some(m), _) => m,
            (None, Some(p)) => p.link.mac(),
            (None, None) => [0; 6],
        }
    }

    fn recv(&mut self) -> Option<Vec<u8>> {
        self.recv_meta().map(|(f, _, _)| f)
    }

    fn recv_flagged(&mut self) -> Option<(Vec<u8>, RxChecksum)> {
        self.recv_meta().map(|(f, c, _)| (f, c))
    }

    fn recv_meta(&mut self) -> Option<(Vec<u8>, RxChecksum, Option<u16>)> {
        if self.passthrough() {
            return self.ports[0].link.recv_meta();
        }
        let mut switched = 0;
        let mut idle = 0;
        while switched < SWITCH_BUDGET && idle < self.ports.len() {
            let from = self.cursor % self.ports.len();
            let Some((frame, csum, gso)) = self.ports[from].link.recv_meta() else {
                self.cursor = (from + 1) % self.ports.len();
                idle += 1;
                continue;
            };
            // the next call (or turn of this loop) starts with the next port: a busy
            // port cannot keep the others waiting
            self.cursor = (from + 1) % self.ports.len();
            idle = 0;
            self.ports[from].rx_frames += 1;
            match self.verdict(from, &frame) {
                Verdict::Local => {
                    self.deliver(&frame);
                    return Some((frame, csum, gso));
                }
                Verdict::LocalAndFlood => {
                    self.stats.flooded += 1;
                    self.flood(Some(from), &frame, csum, gso);
                    self.deliver(&frame);
                    return Some((frame, csum, gso));
                }
                Verdict::Port(to) => {
                    self.stats.forwarded += 1;
                    self.emit(to, &frame, csum, gso);
                }
                Verdict::Flood => {
                    self.stats.flooded += 1;
                    self.flood(Some(from), &frame, csum, gso);
                }
                Verdict::Drop => {}
            }
            switched += 1;
        }
        None
    }

    fn tx_csum_blank(&self) -> bool {
        self.ports.iter().all(|p| p.link.tx_csum_blank())
    }

    fn send_csum_blank(&mut self, frame: &[u8]) -> Result<(), String> {
        self.send_with(frame, RxChecksum::Blank, None)
    }

    fn can_send(&mut self) -> bool {
        if self.passthrough() {
            return self.ports[0].link.can_send();
        }
        if self.ports.is_empty() {
            // a port-less bridge with no client yet: what the stack sends goes
            // nowhere, and is counted (as Linux's bridge with no port)
            return true;
        }
        let mut any = false;
        for p in &mut self.ports {
            any |= p.link.can_send();
        }
        any
    }

    fn send(&mut self, frame: &[u8]) -> Result<(), String> {
        self.send_with(frame, RxChecksum::Unknown, None)
    }

    fn stats(&self) -> LinkStats {
        if self.passthrough() {
            return self.ports[0].link.stats();
        }
        self.own
    }

    fn broken(&self) -> Option<&str> {
        // a port-less bridge is up with no port, as Linux's with no carrier-less port
        if self.own_mac.is_some() {
            return None;
        }
        match self.ports.first() {
            Some(first) if self.ports.iter().all(|p| p.link.broken().is_some()) => {
                first.link.broken()
            }
            _ => None,
        }
    }

    fn gso_tcpv4(&self) -> bool {
        self.ports.iter().all(|p| p.link.gso_tcpv4())
    }

    fn gso_tcpv6(&self) -> bool {
        self.ports.iter().all(|p| p.link.gso_tcpv6())
    }

    fn send_gso(&mut self, frame: &[u8], mss: u16) -> Result<(), String> {
        self.send_with(frame, RxChecksum::Blank, Some(mss))
    }

    fn tx_free_slots(&self) -> usize {
        if self.passthrough() {
            return self.ports[0].link.tx_free_slots();
        }
        if self.ports.is_empty() {
            return usize::MAX;
        }
        self.ports
            .iter()
            .map(|p| p.link.tx_free_slots())
            .max()
            .unwrap_or(0)
    }

    fn queue_stats(&self) -> Vec<QueueStats> {
        match self.ports.first() {
            Some(p) if self.own_mac.is_none() => p.link.queue_stats(),
            _ => Vec::new(),
        }
    }

    /// A bridge of one is its port's driver; a bridge of several has none of its
    /// own (as Linux's `ethtool -S br-lan`: no stats available).
    fn driver_stats(&self) -> Vec<(&'static str, u64)> {
        if self.passthrough() {
            return self.ports[0].link.driver_stats();
        }
        Vec::new()
    }

    fn mtu(&self) -> usize {
        self.ports
            .iter()
            .map(|p| p.link.mtu())
            .min()
            .unwrap_or(DEFAULT_MTU)
    }

    fn bridge_view(&self) -> Option<BridgeView> {
        let name = self.name.clone()?;
        let port_name = |id: PortId| {
            self.ports
                .iter()
                .find(|p| p.id == id)
                .map_or_else(|| String::from("?"), |p| p.name.clone())
        };
        let s = self.stats;
        Some(BridgeView {
            name,
            mac: self.mac(),
            portless: self.own_mac.is_some(),
            ports: self
                .ports
                .iter()
                .map(|p| PortView {
                    name: p.name.clone(),
                    mac: p.link.mac(),
                    lock: p.lock,
                    stats: p.link.stats(),
                    rx_frames: p.rx_frames,
                    tx_frames: p.tx_frames,
                    broken: p.link.broken().map(String::from),
                    mtu: p.link.mtu(),
                    guard: p.link.guard(),
                    driver_stats: p.link.driver_stats(),
                })
                .collect(),
            fdb: self
                .fdb
                .iter()
                .map(|(m, e)| {
                    (
                        *m,
                        port_name(e.port),
                        self.now_ms.saturating_sub(e.seen_ms),
                        e.fixed,
                    )
                })
                .collect(),
            counters: alloc::format!(
                "forwarded {}, flooded {}, spoofed {}, hairpin {}, runts {}, table full {}, port refused {}, segmented {}",
                s.forwarded, s.flooded, s.spoofed, s.hairpin, s.runts, s.fdb_full, s.port_tx_dropped, s.segmented
            ),
        })
    }
}

impl<L: Link> Bridge<L> {
    /// A frame from the stack: to the port its destination was learnt on, else to
    /// every port.
    fn send_with(
        &mut self,
        frame: &[u8],
        csum: RxChecksum,
        gso: Option<u16>,
    ) -> Result<(), String> {
        if self.passthrough() {
            let link = &mut self.ports[0].link;
            return match (gso, csum) {
                (Some(mss), _) => link.send_gso(frame, mss),
                (None, RxChecksum::Blank) => link.send_csum_blank(frame),
                _ => link.send(frame),
            };
        }
        if frame.len() < 14 {
            return Err(String::from("frame shorter than an Ethernet header"));
        }
        let dst = dst_of(frame);
        let to = if is_multicast(&dst) {
            None
        } else {
            self.fdb.get(&dst).and_then(|e| self.index_of(e.port))
        };
        let sent = match to {
            Some(to) => self.emit(to, frame, csum, gso),
            None => self.flood(None, frame, csum, gso),
        };
        if sent {
            self.own.tx_packets += 1;
            self.own.tx_bytes += frame.len() as u64;
            Ok(())
        } else {
            self.own.tx_errors += 1;
            Err(String::from("no bridge port took the frame"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::tests::{cable, Pipe};

    const ROUTER: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const LAN1: [u8; 6] = [0x02, 0x11, 0, 0, 0, 1];
    const CLIENT: [u8; 6] = [0x00, 0x16, 0x3e, 0, 0, 5];
    const CLIENT2: [u8; 6] = [0x00, 0x16, 0x3e, 0, 0, 6];
    const BCAST: [u8; 6] = [0xff; 6];

    fn frame(dst: [u8; 6], src: [u8; 6], tag: u8) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x88, 0xb5, tag]);
        f.resize(60, tag);
        f
    }

    /// A bridge (ports: uplink, client locked to CLIENT, client2 locked to CLIENT2);
    /// the far ends of the three cables (what the wire on each port sees).
    fn three() -> (Bridge<Pipe>, Pipe, Pipe, Pipe) {
        let (up, up_far) = cable();
        let (mut c, c_far) = cable();
        c.mac = [2, 0, 0, 0, 0, 0x11];
        let (mut c2, c2_far) = cable();
        c2.mac = [2, 0, 0, 0, 0, 0x12];
        let mut b = Bridge::new("br-lan", "eth0", up);
        b.add_port("vif5.0", c, Some(CLIENT)).ok().unwrap();
        b.add_port("vif6.0", c2, Some(CLIENT2)).ok().unwrap();
        (b, up_far, c_far, c2_far)
    }

    fn put(far: &Pipe, f: Vec<u8>) {
        far.tx.borrow_mut().push_back(f);
    }

    fn taken(far: &Pipe) -> Vec<Vec<u8>> {
        far.rx.borrow_mut().drain(..).collect()
    }

    #[test]
    fn one_unlocked_port_passes_everything_through() {
        let (up, up_far) = cable();
        let mut b = Bridge::new("br-lan", "eth0", up);
        // a frame for someone else still reaches the stack, as the link alone gives it
        put(&up_far, frame(LAN1, CLIENT, 1));
        assert_eq!(b.recv().unwrap(), frame(LAN1, CLIENT, 1));
        b.send(&frame(LAN1, ROUTER, 2)).unwrap();
        assert_eq!(taken(&up_far), vec![frame(LAN1, ROUTER, 2)]);
        assert_eq!(b.mac(), ROUTER);
    }

    /// `ethtool -S`: a bridge of one is its port's driver; a bridge of several has
    /// no counters of its own, and each port's are under its name.
    #[test]
    fn driver_stats_pass_through_a_bridge_of_one_and_are_per_port_in_a_larger_one() {
        let (up, _far) = cable();
        let b = Bridge::new("br-lan", "eth0", up);
        assert_eq!(b.driver_stats(), vec![("mac_last", 1)]);
        let (b, ..) = three();
        assert!(b.driver_stats().is_empty());
        let ports: Vec<(String, Vec<(&str, u64)>)> = b
            .bridge_view()
            .unwrap()
            .ports
            .into_iter()
            .map(|p| (p.name, p.driver_stats))
            .collect();
        assert_eq!(
            ports,
            vec![
                (String::from("eth0"), vec![("mac_last", 1)]),
                (String::from("vif5.0"), vec![("mac_last", 0x11)]),
                (String::from("vif6.0"), vec![("mac_last", 0x12)]),
            ]
        );
    }

    #[test]
    fn frames_for_the_bridge_reach_the_stack_and_broadcasts_every_port() {
        let (mut b, up_far, c_far, c2_far) = three();
        put(&c_far, frame(ROUTER, CLIENT, 1));
        assert_eq!(b.recv().unwrap(), frame(ROUTER, CLIENT, 1));
        assert!(taken(&up_far).is_empty() && taken(&c2_far).is_empty());
        // a DHCP discover: the stack and both other ports, not back to the sender
        put(&c_far, frame(BCAST, CLIENT, 2));
        assert_eq!(b.recv().unwrap(), frame(BCAST, CLIENT, 2));
        assert_eq!(taken(&up_far), vec![frame(BCAST, CLIENT, 2)]);
        assert_eq!(taken(&c2_far), vec![frame(BCAST, CLIENT, 2)]);
        assert!(taken(&c_far).is_empty());
    }

    #[test]
    fn learnt_unicast_goes_to_one_port_unknown_is_flooded() {
        let (mut b, up_far, c_far, c2_far) = three();
        // LAN1 (behind the uplink) talks to CLIENT: CLIENT is locked, so known already
        put(&up_far, frame(CLIENT, LAN1, 1));
        assert!(b.recv().is_none());
        assert_eq!(taken(&c_far), vec![frame(CLIENT, LAN1, 1)]);
        assert!(taken(&c2_far).is_empty());
        // the answer goes to the uplink only: LAN1 was learnt there
        put(&c_far, frame(LAN1, CLIENT, 2));
        assert!(b.recv().is_none());
        assert_eq!(taken(&up_far), vec![frame(LAN1, CLIENT, 2)]);
        assert!(taken(&c2_far).is_empty());
        // nobody knows this address: every other port
        let stranger = [2, 9, 9, 9, 9, 9];
        put(&c_far, frame(stranger, CLIENT, 3));
        assert!(b.recv().is_none());
        assert_eq!(taken(&up_far).len(), 1);
        assert_eq!(taken(&c2_far).len(), 1);
        let s = b.bridge_stats();
        assert_eq!((s.forwarded, s.flooded), (2, 1));
        // the stack's frame to the client goes to its port only
        b.send(&frame(CLIENT, ROUTER, 4)).unwrap();
        assert_eq!(taken(&c_far), vec![frame(CLIENT, ROUTER, 4)]);
        assert!(taken(&up_far).is_empty() && taken(&c2_far).is_empty());
    }

    #[test]
    fn a_locked_port_cannot_use_another_source_nor_be_impersonated() {
        let (mut b, up_far, c_far, c2_far) = three();
        // the client forges LAN1's address, then the other client's, then a multicast
        put(&c_far, frame(BCAST, LAN1, 1));
        put(&c_far, frame(ROUTER, CLIENT2, 2));
        put(&c_far, frame(ROUTER, [1, 0, 0x5e, 0, 0, 1], 3));
        // the uplink claims the client's address
        put(&up_far, frame(ROUTER, CLIENT, 4));
        assert!(b.recv().is_none());
        assert_eq!(b.bridge_stats().spoofed, 4);
        assert!(taken(&up_far).is_empty() && taken(&c2_far).is_empty());
        // LAN1 was never learnt on the client's port: a frame to it is flooded, and
        // the client's address still leads to the client
        b.send(&frame(CLIENT, ROUTER, 5)).unwrap();
        assert_eq!(taken(&c_far).len(), 1);
        assert!(b.fdb().all(|(m, _, _, _)| m != LAN1));
        // a second port locked to a MAC in use is refused
        let (x, _) = cable();
        assert!(b.add_port("vif7.0", x, Some(CLIENT)).is_err());
    }

    #[test]
    fn a_frame_for_its_own_port_is_dropped_and_addresses_age() {
        let (mut b, up_far, c_far, _c2_far) = three();
        let lan2 = [0x02, 0x11, 0, 0, 0, 2];
        b.set_now_ms(1_000);
        put(&up_far, frame(BCAST, LAN1, 1));
        assert!(b.recv().is_some());
        taken(&c_far);
        put(&up_far, frame(LAN1, lan2, 2));
        assert!(b.recv().is_none());
        assert_eq!(b.bridge_stats().hairpin, 1);
        assert!(taken(&c_far).is_empty());
        // 300 s later LAN1 is forgotten (lan2 with it); the clients' fixed entries stay
        b.set_now_ms(1_000 + AGEING_MS);
        let left: Vec<_> = b.fdb().map(|(m, ..)| m).collect();
        assert_eq!(left.len(), 2);
        assert!(left.contains(&CLIENT) && left.contains(&CLIENT2));
    }

    #[test]
    fn the_table_is_bounded_and_a_flood_of_frames_returns_within_the_budget() {
        let (mut b, up_far, c_far, _c2_far) = three();
        for i in 0..(FDB_MAX + 100) {
            let src = [2, 0x22, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8];
            put(&up_far, frame(CLIENT, src, 1));
        }
        let mut calls = 0;
        while !up_far.tx.borrow().is_empty() {
            assert!(b.recv().is_none());
            calls += 1;
        }
        assert_eq!(calls, (FDB_MAX + 100).div_ceil(SWITCH_BUDGET));
        assert!(b.fdb().count() <= FDB_MAX);
        assert!(b.bridge_stats().fdb_full >= 100);
        assert_eq!(taken(&c_far).len(), FDB_MAX + 100);
    }

    #[test]
    fn ports_take_turns_so_a_busy_one_starves_no_other() {
        let (mut b, up_far, c_far, _c2_far) = three();
        // the uplink has 100 frames for the router, the client one
        for k in 0..100 {
            put(&up_far, frame(ROUTER, LAN1, k));
        }
        put(&c_far, frame(ROUTER, CLIENT, 200));
        let first: Vec<Vec<u8>> = (0..3).filter_map(|_| b.recv()).collect();
        assert!(
            first.contains(&frame(ROUTER, CLIENT, 200)),
            "the client waited behind the uplink"
        );
    }

    #[test]
    fn removing_a_port_forgets_its_addresses_and_the_first_port_stays() {
        let (mut b, up_far, c_far, c2_far) = three();
        let id = b.ports()[1].id();
        assert!(b.remove_port(b.ports()[0].id()).is_none());
        assert!(b.remove_port(id).is_some());
        assert!(b.fdb().all(|(m, ..)| m != CLIENT));
        b.send(&frame(CLIENT, ROUTER, 1)).unwrap();
        assert_eq!(taken(&up_far).len(), 1);
        assert_eq!(taken(&c2_far).len(), 1);
        assert!(taken(&c_far).is_empty());
        // the MAC is free for a new port again
        let (x, _) = cable();
        assert!(b.add_port("vif5.1", x, Some(CLIENT)).is_ok());
    }

    #[test]
    fn a_partial_checksum_switched_to_a_port_without_offload_is_completed() {
        let (mut up, up_far) = cable();
        up.csum_blank = true;
        let (c, c_far) = cable();
        let mut b = Bridge::new("br-lan", "eth0", up);
        b.add_port("vif5.0", c, Some(CLIENT)).ok().unwrap();
        assert!(!b.tx_csum_blank());
        // a TCP/IPv4 frame from LAN1 to the client with only the pseudo-header sum
        let mut f = vec![0u8; 14 + 20 + 20 + 8];
        f[..6].copy_from_slice(&CLIENT);
        f[6..12].copy_from_slice(&LAN1);
        f[12..14].copy_from_slice(&[8, 0]);
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&48u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&[192, 168, 1, 100]);
        ip[16..20].copy_from_slice(&[192, 168, 1, 150]);
        f[34 + 12] = 0x50;
        let pseudo = tso::pseudo_header_sum(&f[14..34], 28);
        f[34 + 16..34 + 18].copy_from_slice(&pseudo.to_be_bytes());
        let mut whole = f.clone();
        tso::fill_l4_checksum(&mut whole);
        assert_ne!(whole, f);
        // as the uplink hands it over flagged blank (dom0's stack never computed it)
        assert!(b.emit(1, &f, RxChecksum::Blank, None));
        assert_eq!(taken(&c_far), vec![whole]);
        assert!(taken(&up_far).is_empty());
    }

    /// OpenWrt's `bridge_empty`: a bridge of client ports only, the stack's
    /// interface on the bridge itself with a MAC of its own.
    #[test]
    fn a_portless_bridge_has_its_own_mac_and_switches_between_its_clients() {
        const OWN: [u8; 6] = [0x02, 0x16, 0x3e, 0, 0, 0x10];
        let mut b: Bridge<Pipe> = Bridge::portless("br-guest", OWN);
        assert!(b.is_portless());
        assert_eq!(b.mac(), OWN);
        assert_eq!(b.broken(), None, "up with no port");
        assert_eq!(b.recv(), None);
        assert!(b.can_send());
        assert!(b.send(&frame(BCAST, OWN, 1)).is_err(), "no port took it");
        assert_eq!(b.stats().tx_errors, 1);
        let v = b.bridge_view().unwrap();
        assert_eq!(
            (v.name.as_str(), v.mac, v.portless),
            ("br-guest", OWN, true)
        );
        assert!(v.ports.is_empty());
        // two clients join
        let (c, c_far) = cable();
        let (c2, c2_far) = cable();
        let id = b.add_port("vif5.0", c, Some(CLIENT)).ok().unwrap();
        b.add_port("vif6.0", c2, Some(CLIENT2)).ok().unwrap();
        assert_eq!(b.mac(), OWN, "still its own, not its first port's");
        // a client's broadcast (an ARP request for the router) reaches the stack and
        // the other client
        put(&c_far, frame(BCAST, CLIENT, 2));
        assert_eq!(b.recv(), Some(frame(BCAST, CLIENT, 2)));
        assert_eq!(taken(&c2_far), vec![frame(BCAST, CLIENT, 2)]);
        // unicast to the bridge's MAC: the stack's
        put(&c_far, frame(OWN, CLIENT, 3));
        assert_eq!(b.recv(), Some(frame(OWN, CLIENT, 3)));
        // client to client: switched, not the stack's
        put(&c2_far, frame(CLIENT, CLIENT2, 4));
        assert_eq!(b.recv(), None);
        assert_eq!(taken(&c_far), vec![frame(CLIENT, CLIENT2, 4)]);
        // the stack's unicast to a client goes to its port only
        b.send(&frame(CLIENT2, OWN, 5)).unwrap();
        assert_eq!(taken(&c2_far), vec![frame(CLIENT2, OWN, 5)]);
        assert!(taken(&c_far).is_empty());
        // the first client leaves (a port-less bridge's first port is no carrier)
        assert!(b.remove_port(id).is_some());
        assert_eq!(b.ports().len(), 1);
        assert_eq!(b.mac(), OWN);
        put(&c2_far, frame(BCAST, CLIENT2, 6));
        assert_eq!(b.recv(), Some(frame(BCAST, CLIENT2, 6)));
    }
}
