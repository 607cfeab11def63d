//! Large segments from smoltcp (TCP segmentation offload proper): the MSS option of
//! a connection's SYN is rewritten on its way in and out, so that smoltcp builds
//! segments of up to 64 KiB that the link sends as one GSO packet, cut into segments
//! of the peer's real MSS further on (netback, or dom0's stack).
//!
//! smoltcp cuts what a socket sends into segments no larger than the peer's MSS
//! (from its SYN) and the interface's MTU, and has no setting for anything larger.
//! Its cost per segment (a dispatch through the interface, headers, a route and
//! neighbour lookup) dwarfs its cost per byte, most of all under emulation; the
//! receive side already gets whole GSO packets from the backend. So when the link
//! takes TCPv4 GSO packets and completes checksums:
//! - smoltcp is given an MTU of 64 KiB ([`crate::link::LinkDevice`]);
//! - the MSS option of an IPv4 SYN that reaches smoltcp for a port registered for
//!   bulk transfer ([`PeerMss::bulk_port`]: iperf3's) is raised to the largest
//!   multiple of the real MSS (the option, at most the link's MTU less 40) that
//!   fits a 64 KiB packet, and the real MSS is remembered for the connection;
//! - every other SYN that reaches smoltcp, and every SYN smoltcp sends (whose MSS it
//!   computes from that 64 KiB MTU), has its MSS option lowered to the link's MTU
//!   less the headers ([`clamp_syn`]): those connections keep MTU-sized segments, and
//!   no peer hears of the larger size;
//! - a segment with more payload than its connection's real MSS goes out as a GSO
//!   packet at that MSS ([`PeerMss::gso_size`]; 536, TCP's default, for a connection
//!   that was forgotten), FIN and PSH kept for the last piece.
//!
//! Only bulk ports get large segments because smoltcp also uses the peer's MSS as
//! its Nagle threshold and as the amount of received data it acknowledges at once: a
//! socket with a buffer smaller than 64 KiB (echo, DNS) would then send one buffer
//! per round trip and acknowledge only when its delayed-ACK timer fires.
//!
//! A frame other than IPv4 TCP that comes out larger than the link's MTU (a UDP
//! datagram: smoltcp has no fragmentation here) is dropped and counted, as smoltcp
//! itself would drop it with the real MTU.

use crate::headers::{
    self, ethertype, is_fragment, tcp_flag::SYN, tcp_flags, ETH, IPV4, IPV6, TCP,
};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use smoltcp::wire::{EthernetProtocol, IpProtocol};

/// TCP's default MSS (RFC 9293 3.7.1), for a connection whose own is not known.
pub const DEFAULT_MSS: u16 = 536;

/// Largest TCP payload of one large segment: what fits a GSO packet (64 KiB, the
/// most a TX request describes) with the longest IPv4 and TCP headers. Linux's
/// netfront sends segments that large too: on the test bed, with 32 KiB segments
/// dom0 spent twice Linux's CPU time per byte it received from Xenlet (it handles,
/// and acknowledges, each packet).
const MAX_SUPER_PAYLOAD: usize = 65535 - ETH - 60 - 60;

/// Connections remembered at most (the oldest is forgotten first).
const MAX_PEERS: usize = 256;

/// (peer address, peer port, local port) of an IPv4 TCP connection.
type Key = ([u8; 4], u16, u16);

/// The real MSS of connections whose SYN was raised.
#[derive(Default, Debug)]
pub struct PeerMss {
    /// Real MSS and last use (a counter) per connection.
    map: BTreeMap<Key, (u16, u64)>,
    uses: u64,
    /// Local ports whose connections get large segments.
    bulk: Vec<u16>,
    /// SYNs whose MSS option was raised.
    pub raised: u64,
    /// Large segments sent with the MSS of a forgotten connection ([`DEFAULT_MSS`]).
    pub unknown: u64,
}

/// The IPv4 TCP header offset of `f`, its header length and flags, if `f` is a
/// well-formed unfragmented IPv4 TCP frame.
fn tcp4(f: &[u8]) -> Option<(usize, usize, u8)> {
    if f.len() < ETH + IPV4 || ethertype(f)? != EthernetProtocol::Ipv4 {
        return None;
    }
    let ip = headers::ipv4(f);
    if ip.version() != 4 || ip.next_header() != IpProtocol::Tcp {
        return None;
    }
    let ihl = usize::from(ip.header_len());
    let tcp = ETH + ihl;
    if ihl < IPV4 || f.len() < tcp + TCP || is_fragment(&ip) {
        return None;
    }
    tcp_header(f, tcp)
}

/// The TCP header offset and length of an IPv6 TCP frame (no extension headers).
fn tcp6(f: &[u8]) -> Option<(usize, usize, u8)> {
    let tcp = ETH + IPV6;
    if f.len() < tcp + TCP
        || ethertype(f)? != EthernetProtocol::Ipv6
        || headers::ipv6(f).next_header() != IpProtocol::Tcp
    {
        return None;
    }
    tcp_header(f, tcp)
}

/// The offset, header length and flags of the TCP header at `tcp` (at least
/// [`TCP`] bytes there), if the frame holds all of it.
fn tcp_header(f: &[u8], tcp: usize) -> Option<(usize, usize, u8)> {
    let hlen = usize::from(headers::tcp(f, tcp).header_len());
    if hlen < TCP || f.len() < tcp + hlen {
        return None;
    }
    Some((tcp, hlen, tcp_flags(f, tcp)))
}

/// TCP option kinds (RFC 9293 3.2).
const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;
/// Length of the MSS option.
const OPT_MSS_LEN: usize = 4;

/// Offset of the 2-byte value of the MSS option in the TCP header at `tcp` (`hlen`
/// bytes), if there is one (options walked with their lengths checked).
fn mss_option(f: &[u8], tcp: usize, hlen: usize) -> Option<usize> {
    let mut i = tcp + TCP;
    let end = tcp + hlen;
    while i < end {
        match f[i] {
            OPT_END => return None,
            OPT_NOP => i += 1,
            kind => {
                let len = usize::from(*f.get(i + 1)?);
                if len < 2 || i + len > end {
                    return None;
                }
                if kind == OPT_MSS && len == OPT_MSS_LEN {
                    return Some(i + 2);
                }
                i += len;
            }
        }
    }
    None
}

/// Lowers the MSS option of a SYN that smoltcp sends to what the link carries (its
/// `mtu` less the IP and TCP headers); the caller fills the checksum afterwards.
/// Whether the frame was changed.
pub fn clamp_syn(f: &mut [u8], mtu: usize) -> bool {
    let (tcp, hlen, flags, ip) = match (tcp4(f), tcp6(f)) {
        (Some((t, h, fl)), _) => (t, h, fl, t - ETH),
        (None, Some((t, h, fl))) => (t, h, fl, IPV6),
        _ => return false,
    };
    if flags & SYN == 0 {
        return false;
    }
    let Some(at) = mss_option(f, tcp, hlen) else {
        return false;
    };
    let most = u16::try_from(mtu.saturating_sub(ip + TCP)).unwrap_or(u16::MAX);
    if u16::from_be_bytes([f[at], f[at + 1]]) <= most {
        return false;
    }
    f[at..at + 2].copy_from_slice(&most.to_be_bytes());
    true
}

impl PeerMss {
    /// Gives connections to local `port` large segments (a bulk-transfer service).
    pub fn bulk_port(&mut self, port: u16) {
        if !self.bulk.contains(&port) {
            self.bulk.push(port);
        }
    }

    /// Rewrites the MSS option of a SYN arriving for smoltcp (see the module
    /// documentation): raised for a bulk port's IPv4 connection, whose real MSS is
    /// remembered, else lowered to what `mtu` carries. The TCP checksum is not
    /// corrected: the frame's checksum was checked before.
    pub fn on_receive(&mut self, f: &mut [u8], mtu: usize) {
        if !self.raise_syn(f, mtu) {
            clamp_syn(f, mtu);
        }
    }

    /// Raises the MSS option of a bulk port's IPv4 SYN; whether it did.
    fn raise_syn(&mut self, f: &mut [u8], mtu: usize) -> bool {
        let Some((tcp, hlen, flags)) = tcp4(f) else {
            return false;
        };
        let local_port = headers::tcp(f, tcp).dst_port();
        if flags & SYN == 0 || !self.bulk.contains(&local_port) {
            return false;
        }
        let Some(at) = mss_option(f, tcp, hlen) else {
            return false; // smoltcp then uses 536, and so do we
        };
        let offered = u16::from_be_bytes([f[at], f[at + 1]]);
        let most = u16::try_from(mtu.saturating_sub(IPV4 + TCP)).unwrap_or(u16::MAX);
        let real = offered.min(most);
        if real < DEFAULT_MSS {
            // smoltcp ignores a zero; a peer asking for tiny segments gets them
            // from smoltcp as before, not 64 KiB packets for dom0 to cut that fine
            return false;
        }
        let key = (
            headers::ipv4(f).src_addr().octets(),
            headers::tcp(f, tcp).src_port(),
            local_port,
        );
        if self.map.len() >= MAX_PEERS && !self.map.contains_key(&key) {
            // forget the connection unused longest
            if let Some(old) = self.map.iter().min_by_key(|(_, v)| v.1).map(|(k, _)| *k) {
                self.map.remove(&old);
            }
        }
        self.uses += 1;
        self.map.insert(key, (real, self.uses));
        let r = usize::from(real);
        let big = (MAX_SUPER_PAYLOAD / r * r).max(r);
        f[at..at + 2].copy_from_slice(&u16::try_from(big).unwrap_or(real).to_be_bytes());
        self.raised += 1;
        true
    }

    /// The real MSS of the connection of `f`, an IPv4 TCP segment smoltcp sends,
    /// if its SYN was raised and it is still remembered.
    fn lookup(&mut self, f: &[u8], tcp: usize) -> Option<u16> {
        let t = headers::tcp(f, tcp);
        let key = (
            headers::ipv4(f).dst_addr().octets(),
            t.dst_port(),
            t.src_port(),
        );
        let e = self.map.get_mut(&key)?;
        self.uses += 1;
        e.1 = self.uses;
        Some(e.0)
    }

    /// How to cut an IPv4 TCP segment smoltcp sends with `payload` bytes of data:
    /// the payload per piece (its connection's real MSS less the TCP options it
    /// carries beyond 20 bytes) when the segment holds more than that, else `None`.
    /// A segment larger than the MTU (`over_mtu`) of a connection no longer
    /// remembered is cut at [`DEFAULT_MSS`]; a smaller one is taken to be of a
    /// connection that was never raised.
    pub fn gso_size(&mut self, f: &[u8], payload: usize, over_mtu: bool) -> Option<u16> {
        let (tcp, hlen, _) = tcp4(f)?;
        let mss = match self.lookup(f, tcp) {
            Some(m) => m,
            None if over_mtu => {
                self.unknown += 1;
                DEFAULT_MSS
            }
            None => return None,
        };
        let opts = u16::try_from(hlen - TCP).unwrap_or(0);
        let size = mss.saturating_sub(opts).max(1);
        (payload > usize::from(size)).then_some(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// An IPv4 TCP frame 10.0.0.2:40000 -> 10.0.0.1:5201 with `opts` and flags.
    fn frame(flags: u8, opts: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; ETH + 20 + 20];
        f[12..14].copy_from_slice(&[8, 0]);
        f[ETH] = 0x45;
        f[ETH + 9] = 6;
        f[ETH + 12..ETH + 16].copy_from_slice(&[10, 0, 0, 2]);
        f[ETH + 16..ETH + 20].copy_from_slice(&[10, 0, 0, 1]);
        let t = ETH + 20;
        f[t..t + 2].copy_from_slice(&40000u16.to_be_bytes());
        f[t + 2..t + 4].copy_from_slice(&5201u16.to_be_bytes());
        f.extend_from_slice(opts);
        f[t + 12] = (((20 + opts.len()) / 4) as u8) << 4;
        f[t + 13] = flags;
        f
    }

    fn mss_of(f: &[u8]) -> Option<u16> {
        let (t, h, _) = tcp4(f).or_else(|| tcp6(f))?;
        mss_option(f, t, h).map(|at| u16::from_be_bytes([f[at], f[at + 1]]))
    }

    /// The same connection seen from our side: 10.0.0.1:5201 -> 10.0.0.2:40000.
    fn reply(payload: usize, opts: &[u8]) -> Vec<u8> {
        let mut f = frame(0x10, opts);
        f[ETH + 12..ETH + 16].copy_from_slice(&[10, 0, 0, 1]);
        f[ETH + 16..ETH + 20].copy_from_slice(&[10, 0, 0, 2]);
        let t = ETH + 20;
        f[t..t + 2].copy_from_slice(&5201u16.to_be_bytes());
        f[t + 2..t + 4].copy_from_slice(&40000u16.to_be_bytes());
        f.resize(f.len() + payload, 7);
        f
    }

    fn bulk() -> PeerMss {
        let mut p = PeerMss::default();
        p.bulk_port(5201);
        p
    }

    #[test]
    fn a_bulk_ports_syn_is_raised_and_its_segments_cut_at_the_real_mss() {
        let mut p = bulk();
        // NOP, NOP, MSS 1460, window scale 7 (+NOP)
        let mut syn = frame(SYN, &[1, 1, 2, 4, 0x05, 0xb4, 1, 3, 3, 7, 0, 0]);
        p.on_receive(&mut syn, 1500);
        // 44 segments of 1460 in one
        assert_eq!(mss_of(&syn), Some(44 * 1460));
        assert_eq!(p.raised, 1);
        assert_eq!(p.gso_size(&reply(0, &[]), 30_000, true), Some(1460));
        // a segment no larger than the real MSS is sent as it is
        assert_eq!(p.gso_size(&reply(0, &[]), 1460, false), None);
        // with 12 bytes of timestamps each piece carries 12 bytes less
        let ts = reply(0, &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!(p.gso_size(&ts, 1460, false), Some(1448));
        assert_eq!(p.unknown, 0);
        // a peer offering more than the link's MTU allows gets the MTU's
        let mut syn = frame(SYN, &[2, 4, 0x23, 0x28]); // 9000
        syn[ETH + 20] = 0x9c;
        p.on_receive(&mut syn, 1500);
        assert_eq!(
            p.map.get(&([10, 0, 0, 2], 0x9c40, 5201)).map(|e| e.0),
            Some(1460)
        );
        // one behind a smaller path (MSS 1400) is cut at 1400 even below the MTU
        let mut syn = frame(SYN, &[2, 4, 0x05, 0x78]);
        syn[ETH + 20] = 0x9d;
        p.on_receive(&mut syn, 1500);
        let mut seg = reply(0, &[]);
        seg[ETH + 22] = 0x9d;
        assert_eq!(p.gso_size(&seg, 1450, false), Some(1400));
    }

    #[test]
    fn other_syns_are_clamped_to_the_link_and_not_remembered() {
        let mut p = PeerMss::default(); // no bulk port
        let mut syn = frame(SYN, &[2, 4, 0x23, 0x28]); // 9000 on a 1500 link
        p.on_receive(&mut syn, 1500);
        assert_eq!(mss_of(&syn), Some(1460));
        assert_eq!((p.raised, p.map.len()), (0, 0));
        // a segment of a connection never raised: as it is, or over the MTU at 536
        assert_eq!(p.gso_size(&reply(0, &[]), 1460, false), None);
        assert_eq!(p.gso_size(&reply(0, &[]), 10_000, true), Some(DEFAULT_MSS));
        assert_eq!(p.unknown, 1);
        // IPv6: the MTU less 60, even for a bulk port
        let mut p = bulk();
        let mut f = vec![0u8; ETH + 40 + 24];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[ETH] = 0x60;
        f[ETH + 6] = 6;
        let t = ETH + 40;
        f[t + 2..t + 4].copy_from_slice(&5201u16.to_be_bytes());
        f[t + 12] = 6 << 4;
        f[t + 13] = SYN;
        f[t + 20..t + 24].copy_from_slice(&[2, 4, 0x23, 0x28]);
        p.on_receive(&mut f, 1500);
        assert_eq!(mss_of(&f), Some(1440));
        assert_eq!(p.raised, 0);
    }

    #[test]
    fn what_is_not_a_syn_with_an_mss_is_left_alone() {
        let mut p = bulk();
        for (flags, opts) in [
            (0x10, vec![2, 4, 0xff, 0xff]), // ACK carrying an MSS option
            (SYN, vec![1, 1, 1, 1]),        // SYN without MSS
            (SYN, vec![3, 3, 7, 0]),        // window scale only
            (SYN, vec![2, 9, 0xff, 0xff]),  // option longer than the header
            (SYN, vec![8, 1, 2, 4]),        // length 1: malformed, walk stops
            (SYN, vec![0, 2, 4, 5]),        // end of options first
            (SYN, vec![2, 4, 0, 88]),       // tiny MSS: not raised
        ] {
            let f0 = frame(flags, &opts);
            let mut f = f0.clone();
            p.on_receive(&mut f, 1500);
            assert_eq!(f, f0, "flags {flags:#x} options {opts:?}");
        }
        assert_eq!(p.raised, 0);
        // truncated frames and other protocols
        let mut short = frame(SYN, &[2, 4, 5, 0xb4])[..40].to_vec();
        let s0 = short.clone();
        p.on_receive(&mut short, 1500);
        assert_eq!(short, s0);
        assert_eq!(p.gso_size(&[0u8; 60], 100, true), None);
    }

    #[test]
    fn the_table_forgets_the_connection_unused_longest() {
        let mut p = bulk();
        let syn_from = |p: &mut PeerMss, port: u16| {
            let mut syn = frame(SYN, &[2, 4, 0x05, 0xb4]);
            syn[ETH + 20..ETH + 22].copy_from_slice(&port.to_be_bytes());
            p.on_receive(&mut syn, 1500);
        };
        let seg_to = |port: u16| {
            let mut f = reply(0, &[]);
            f[ETH + 22..ETH + 24].copy_from_slice(&port.to_be_bytes());
            f
        };
        for port in 0..MAX_PEERS as u16 {
            syn_from(&mut p, 1000 + port);
        }
        // the first connection keeps sending: it stays
        assert_eq!(p.gso_size(&seg_to(1000), 5000, true), Some(1460));
        for port in 0..10u16 {
            syn_from(&mut p, 5000 + port);
        }
        assert_eq!(p.map.len(), MAX_PEERS);
        assert!(p.map.contains_key(&([10, 0, 0, 2], 1000, 5201)));
        assert!(!p.map.contains_key(&([10, 0, 0, 2], 1001, 5201)));
        assert_eq!(p.gso_size(&seg_to(1001), 5000, true), Some(DEFAULT_MSS));
    }

    #[test]
    fn our_syns_are_clamped_to_the_link() {
        // smoltcp with a 64 KiB MTU offers 65481
        let mut syn = reply(0, &[2, 4, 0xff, 0xc9]);
        syn[ETH + 20 + 13] = SYN | 0x10;
        assert!(clamp_syn(&mut syn, 1500));
        assert_eq!(mss_of(&syn), Some(1460));
        assert!(!clamp_syn(&mut syn, 1500), "already small enough");
        // a data segment is never touched
        let mut d = reply(100, &[2, 4, 0xff, 0xff]);
        assert!(!clamp_syn(&mut d, 1500));
    }
}
