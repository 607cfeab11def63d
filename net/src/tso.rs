//! Offloads: transmit segmentation (TSO) built from smoltcp's segments, and the
//! receive side's software check of TCP/UDP checksums the backend did not vouch for
//! ([`verify_l4_checksum`]).
//!
//! smoltcp cuts a TCP stream into MSS-sized segments; each one crossing to dom0 costs
//! netback a grant copy and a grant map, the bridge and dom0's TCP a packet each. When
//! the backend offers `feature-gso-tcpv4`, consecutive segments of one connection
//! that smoltcp emits in one poll are merged back into one large TCPv4 packet (up to
//! 64 KiB) sent with a GSO descriptor: the backend (or dom0's stack) cuts it again.
//!
//! When the link also completes checksums (`NETTXF_csum_blank`), smoltcp computes no
//! TCP checksum at all (the merger writes the pseudo-header sum, or the whole sum for a
//! frame it sends plainly) and builds segments larger than the MTU itself
//! ([`crate::mss`]), which go out whole; merging then only gathers what smoltcp sends
//! at the MTU. smoltcp writes every frame straight into the merger's buffer, a
//! continuing segment right behind the held data, so merging copies no payload.
//!
//! A segment is merged only when it continues the pending packet exactly: the same
//! Ethernet, IPv4 (no options, not fragmented) and TCP headers (ports, ACK number,
//! window, options) apart from length, IP id, checksums and PSH; flags ACK (and
//! PSH) only; its sequence number right after the pending data; every merged segment
//! but the last exactly one MSS long (the first segment's payload). Anything else
//! flushes the pending packet and goes out as it is; so does a segment with less
//! payload than its headers (it cannot be written in place). The merged packet's TCP
//! checksum field holds the pseudo-header sum, as `NETTXF_csum_blank` requires.

use crate::headers::{
    self, ethertype, field, is_fragment, tcp_flag, tcp_flags, ETH, IPV4, IPV6, TCP, UDP,
};
use crate::mss::{self, PeerMss};
use alloc::vec::Vec;
use smoltcp::wire::{EthernetProtocol, IpProtocol, TcpSeqNumber};

/// The IPv4 header the merger takes: no options.
const IP: usize = IPV4;

/// Largest merged frame (its length must fit a TX request's 16-bit size).
pub const MAX_GSO_FRAME: usize = 65535;

/// Longest Ethernet + IPv4 + TCP header (both with the most options).
const MAX_HEADERS: usize = ETH + 60 + 60;

/// How a frame is handed to the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Send {
    /// As it is: its checksums are complete.
    Plain,
    /// Its TCP checksum field holds the pseudo-header sum, for the link to complete
    /// (`NETTXF_csum_blank`).
    CsumBlank,
    /// A TCPv4 packet larger than the MTU, to be cut into segments of this many
    /// payload bytes; its checksum field holds the pseudo-header sum.
    Gso(u16),
}

/// Where a frame goes: the link's plain, checksum-offloaded or GSO send.
pub type Emit<'a> = dyn FnMut(&[u8], Send) -> bool + 'a;

/// The packet being built at the front of [`Coalescer::buf`].
struct Pending {
    /// Bytes of headers before the TCP payload.
    payload: usize,
    mss: usize,
    segs: usize,
    next_seq: u32,
    psh: bool,
    closed: bool,
}

/// The merger; lives with the interface, flushed after every poll.
///
/// smoltcp writes each frame straight into the merger's buffer
/// ([`Coalescer::push_with`]): a segment that continues the held packet is written
/// so that its payload lands right after the packet's data (its headers over the
/// packet's last bytes, which are put back), so merging copies no payload.
#[derive(Default)]
pub struct Coalescer {
    /// The held packet in `buf[..used]` (when `pending` is set), then room for the
    /// frame being written.
    buf: Vec<u8>,
    used: usize,
    pending: Option<Pending>,
    /// A frame that could not join the held packet, moved out of the way.
    spill: Vec<u8>,
    /// smoltcp leaves TCP checksums to the merger (its `Checksum::None`): a packet is
    /// sent with the pseudo-header sum for the link to complete, or completed here.
    /// smoltcp then also builds segments larger than the link's MTU ([`crate::mss`]).
    pub tcp_csum_left: bool,
    /// The link's MTU (IP bytes), when smoltcp is given a larger one.
    pub mtu: usize,
    /// The real MSS of connections whose SYN was raised.
    pub peers: PeerMss,
    /// Segments larger than the MTU sent as GSO packets.
    pub large: u64,
    /// Frames larger than the MTU that were not IPv4 TCP: dropped.
    pub oversize: u64,
    /// Frames the link refused.
    pub dropped: u64,
    /// Merged packets sent, and the segments they carried.
    pub merged: (u64, u64),
}

/// The payload offset of an IPv4 TCP data segment: no IP options, not fragmented,
/// its IP length the frame's, payload present, flags ACK and at most the `also` ones.
fn tcp4_data(f: &[u8], also: u8) -> Option<usize> {
    if f.len() < ETH + IP + TCP || ethertype(f)? != EthernetProtocol::Ipv4 {
        return None;
    }
    let ip = headers::ipv4(f);
    if ip.version() != 4
        || usize::from(ip.header_len()) != IP
        || ip.next_header() != IpProtocol::Tcp
        || is_fragment(&ip)
        || usize::from(ip.total_len()) != f.len() - ETH
    {
        return None;
    }
    let tcp = ETH + IP;
    let payload = tcp + usize::from(headers::tcp(f, tcp).header_len());
    let flags = tcp_flags(f, tcp);
    if payload < tcp + TCP
        || payload >= f.len()
        || flags & !(tcp_flag::ACK | also) != 0
        || flags & tcp_flag::ACK == 0
    {
        return None;
    }
    Some(payload)
}

/// The payload offset of a mergeable IPv4 TCP segment (flags ACK, maybe PSH).
fn candidate(f: &[u8]) -> Option<usize> {
    tcp4_data(f, tcp_flag::PSH)
}

/// The payload offset of an IPv4 TCP data segment that may be cut into pieces by
/// the link (no IP options, not fragmented, payload present, ACK with PSH and FIN
/// allowed: they stay on the last piece).
fn large_tcp(f: &[u8]) -> Option<usize> {
    tcp4_data(f, tcp_flag::PSH | tcp_flag::FIN)
}

/// The sequence number of a [`tcp4_data`] segment.
fn seq(f: &[u8]) -> u32 {
    headers::tcp(f, ETH + IP).seq_number().0 as u32
}

/// Whether the PSH flag of a [`tcp4_data`] segment is set.
fn psh(f: &[u8]) -> bool {
    tcp_flags(f, ETH + IP) & tcp_flag::PSH != 0
}

/// Whether `b`'s headers equal `a`'s except length, id, checksums, seq and PSH.
fn same_flow(a: &[u8], b: &[u8], payload: usize) -> bool {
    use field::{ipv4, tcp};
    let (ia, ib) = (&a[ETH..ETH + IP], &b[ETH..ETH + IP]);
    let (ta, tb) = (&a[ETH + IP..payload], &b[ETH + IP..payload]);
    a[..ETH] == b[..ETH]
        && ia[ipv4::VER_TOS] == ib[ipv4::VER_TOS]
        && ia[ipv4::FRAG_TTL_PROTO] == ib[ipv4::FRAG_TTL_PROTO]
        && ia[ipv4::ADDRS] == ib[ipv4::ADDRS]
        && ta[tcp::PORTS] == tb[tcp::PORTS]
        && ta[tcp::ACK_OFFSET] == tb[tcp::ACK_OFFSET]
        && (ta[tcp::FLAGS] | tcp_flag::PSH) == (tb[tcp::FLAGS] | tcp_flag::PSH)
        && ta[tcp::WINDOW] == tb[tcp::WINDOW]
        && ta[tcp::URGENT..] == tb[tcp::URGENT..]
}

/// One's-complement sum of 16-bit big-endian words.
fn sum16(data: &[u8], mut acc: u32) -> u32 {
    let mut it = data.chunks_exact(2);
    for w in &mut it {
        acc = acc.wrapping_add(u32::from(u16::from_be_bytes([w[0], w[1]])));
    }
    if let [last] = it.remainder() {
        acc = acc.wrapping_add(u32::from(*last) << 8);
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The pseudo-header sum (not complemented) for a TCP segment of `tcp_len` bytes.
pub fn pseudo_header_sum(ip_header: &[u8], tcp_len: usize) -> u16 {
    let proto = u32::from(u8::from(IpProtocol::Tcp));
    fold(sum16(
        &ip_header[field::ipv4::ADDRS],
        proto + tcp_len as u32,
    ))
}

/// Writes the header checksum of a frame's IPv4 header (no options).
fn fill_ipv4_checksum(f: &mut [u8]) {
    headers::ipv4_mut(f).set_checksum(0);
    let sum = !fold(sum16(&f[ETH..ETH + IP], 0));
    headers::ipv4_mut(f).set_checksum(sum);
}

/// Writes the full TCP or UDP checksum of an IPv4 or IPv6 frame (no-op for other or
/// malformed frames).
pub fn fill_l4_checksum(f: &mut [u8]) {
    let Some((l4, len, proto, pseudo, at)) = l4_span(f) else {
        return;
    };
    f[at..at + 2].copy_from_slice(&[0, 0]);
    let mut sum = !fold(sum16(&f[l4..l4 + len], pseudo));
    if proto == IpProtocol::Udp && sum == 0 {
        sum = 0xffff;
    }
    f[at..at + 2].copy_from_slice(&sum.to_be_bytes());
}

/// A copy of `f` with its TCP/UDP checksum completed (from the pseudo-header sum a
/// partial one holds), for a link that does not take it partial.
pub fn with_l4_checksum(f: &[u8]) -> Vec<u8> {
    let mut f = f.to_vec();
    fill_l4_checksum(&mut f);
    f
}

/// Whether `frame` is TCP over IPv4 or IPv6.
fn is_tcp(f: &[u8]) -> bool {
    match ethertype(f) {
        Some(EthernetProtocol::Ipv4) if f.len() >= ETH + IPV4 => {
            headers::ipv4(f).next_header() == IpProtocol::Tcp
        }
        Some(EthernetProtocol::Ipv6) if f.len() >= ETH + IPV6 => {
            headers::ipv6(f).next_header() == IpProtocol::Tcp
        }
        _ => false,
    }
}

impl Pending {
    /// Whether `frame` (a [`candidate`] with its payload at `payload`) continues the
    /// packet whose headers are `head`.
    fn continued_by(&self, head: &[u8], frame: &[u8], payload: usize, limit: usize) -> bool {
        let len = frame.len() - payload;
        !self.closed
            && limit + len <= MAX_GSO_FRAME
            && payload == self.payload
            && len <= self.mss
            && seq(frame) == self.next_seq
            && same_flow(head, frame, payload)
    }

    fn extend(&mut self, frame: &[u8], payload: usize) {
        let len = frame.len() - payload;
        self.segs += 1;
        self.next_seq = self.next_seq.wrapping_add(len as u32);
        self.psh |= psh(frame);
        self.closed = len < self.mss;
    }

    /// Whether no further full segment fits.
    fn full(&self, used: usize) -> bool {
        self.closed || used + self.mss > MAX_GSO_FRAME
    }
}

impl Coalescer {
    /// Makes `buf` at least `n` bytes long (zeroed once; reused afterwards).
    fn room(&mut self, n: usize) {
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
    }

    /// Takes one frame smoltcp emitted: merges it, or flushes and sends.
    pub fn push(&mut self, frame: &[u8], emit: &mut Emit<'_>) {
        self.push_with(frame.len(), |b| b.copy_from_slice(frame), emit);
    }

    /// Takes one `len`-byte frame that `fill` writes (smoltcp's transmit token):
    /// written in place after the held packet's data when it may continue it, merged
    /// or else flushed and sent.
    pub fn push_with<R>(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> R,
        emit: &mut Emit<'_>,
    ) -> R {
        if self.tcp_csum_left && len > self.mtu + ETH {
            self.flush(emit);
            self.room(len);
            let r = fill(&mut self.buf[..len]);
            let cut = large_tcp(&self.buf[..len])
                .and_then(|payload| self.peers.gso_size(&self.buf[..len], len - payload, true));
            match cut {
                Some(size) => self.send_cut(len, size, emit),
                None => self.oversize += 1,
            }
            return r;
        }
        if let Some(h) = self.pending.as_ref().map(|p| p.payload) {
            // In place: the frame's headers over the packet's last `h` bytes, which
            // must not reach into the packet's own headers.
            let start = self.used - h;
            if start >= h && h <= MAX_HEADERS && len > h {
                self.room(start + len);
                let mut saved = [0u8; MAX_HEADERS];
                saved[..h].copy_from_slice(&self.buf[start..self.used]);
                let r = fill(&mut self.buf[start..start + len]);
                let joins = {
                    let (head, rest) = self.buf.split_at(start);
                    let frame = &rest[..len];
                    candidate(frame).is_some_and(|payload| {
                        self.pending
                            .as_ref()
                            .is_some_and(|p| p.continued_by(&head[..h], frame, payload, self.used))
                    })
                };
                let frame_end = start + len;
                if joins {
                    if let Some(p) = self.pending.as_mut() {
                        p.extend(&self.buf[start..frame_end], h);
                    }
                    self.buf[start..self.used].copy_from_slice(&saved[..h]);
                    self.used = frame_end;
                    if self.pending.as_ref().is_some_and(|p| p.full(self.used)) {
                        self.flush(emit);
                    }
                } else {
                    self.spill.clear();
                    self.spill.extend_from_slice(&self.buf[start..frame_end]);
                    self.buf[start..self.used].copy_from_slice(&saved[..h]);
                    self.flush(emit);
                    let spill = core::mem::take(&mut self.spill);
                    self.room(spill.len());
                    self.buf[..spill.len()].copy_from_slice(&spill);
                    self.spill = spill;
                    self.take_front(len, emit);
                }
                return r;
            }
            self.flush(emit);
        }
        self.room(len);
        let r = fill(&mut self.buf[..len]);
        self.take_front(len, emit);
        r
    }

    /// A new frame in `buf[..len]` with nothing held: held as the start of a packet,
    /// or sent.
    fn take_front(&mut self, len: usize, emit: &mut Emit<'_>) {
        if self.tcp_csum_left {
            // more payload than the connection's real MSS (a peer behind a smaller
            // path): cut by the link even though it fits the MTU
            let frame = &self.buf[..len];
            let cut = large_tcp(frame)
                .and_then(|payload| self.peers.gso_size(frame, len - payload, false));
            if let Some(size) = cut {
                self.send_cut(len, size, emit);
                return;
            }
        }
        let frame = &self.buf[..len];
        if let Some(payload) = candidate(frame) {
            let p = Pending {
                payload,
                mss: len - payload,
                segs: 1,
                next_seq: seq(frame).wrapping_add((len - payload) as u32),
                psh: psh(frame),
                closed: false,
            };
            self.used = len;
            let full = p.full(len);
            self.pending = Some(p);
            if full {
                self.flush(emit);
            }
            return;
        }
        if self.tcp_csum_left && is_tcp(frame) {
            mss::clamp_syn(&mut self.buf[..len], self.mtu);
            fill_l4_checksum(&mut self.buf[..len]);
        }
        if !emit(&self.buf[..len], Send::Plain) {
            self.dropped += 1;
        }
    }

    /// Sends the TCP segment in `buf[..len]` as a GSO packet to be cut into pieces
    /// of `size` payload bytes.
    fn send_cut(&mut self, len: usize, size: u16, emit: &mut Emit<'_>) {
        let frame = &mut self.buf[..len];
        let tcp = ETH + IP;
        let ps = pseudo_header_sum(&frame[ETH..tcp], len - tcp);
        headers::tcp_mut(frame, tcp).set_checksum(ps);
        self.large += 1;
        if !emit(frame, Send::Gso(size)) {
            self.dropped += 1;
        }
    }

    /// Sends the pending packet, if any.
    pub fn flush(&mut self, emit: &mut Emit<'_>) {
        let Some(p) = self.pending.take() else { return };
        let used = core::mem::take(&mut self.used);
        let frame = &mut self.buf[..used];
        let tcp = ETH + IP;
        let how = if p.segs >= 2 {
            self.merged.0 += 1;
            self.merged.1 += p.segs as u64;
            headers::ipv4_mut(frame).set_total_len((used - ETH) as u16);
            fill_ipv4_checksum(frame);
            if p.psh {
                headers::tcp_mut(frame, tcp).set_psh(true);
            }
            Send::Gso(p.mss as u16)
        } else if self.tcp_csum_left {
            Send::CsumBlank
        } else {
            Send::Plain
        };
        if how != Send::Plain {
            let ps = pseudo_header_sum(&frame[ETH..tcp], used - tcp);
            headers::tcp_mut(frame, tcp).set_checksum(ps);
        }
        if !emit(frame, how) {
            self.dropped += 1;
        }
    }
}

/// Cuts a GSO packet (TCP over IPv4 without options, or over IPv6 without
/// extension headers) into MSS-sized segments with full checksums, as a backend
/// does; for tests and a link that must segment in software. `None` for any other
/// frame.
pub fn segment(frame: &[u8], mss: usize) -> Option<Vec<Vec<u8>>> {
    let v6 = match ethertype(frame)? {
        EthernetProtocol::Ipv4 => false,
        EthernetProtocol::Ipv6 => true,
        _ => return None,
    };
    let tcp = ETH + if v6 { IPV6 } else { IP };
    if frame.len() < tcp + TCP || mss == 0 {
        return None;
    }
    if v6 && headers::ipv6(frame).next_header() != IpProtocol::Tcp {
        return None;
    }
    let payload = tcp + usize::from(headers::tcp(frame, tcp).header_len());
    if payload > frame.len() {
        return None;
    }
    let data = &frame[payload..];
    let chunks: Vec<&[u8]> = data.chunks(mss).collect();
    let base_seq = headers::tcp(frame, tcp).seq_number().0 as u32;
    let mut out = Vec::new();
    let mut off = 0u32;
    for (i, c) in chunks.iter().enumerate() {
        let mut f = frame[..payload].to_vec();
        f.extend_from_slice(c);
        if v6 {
            let len = (f.len() - tcp) as u16;
            f[ETH + 4..ETH + 6].copy_from_slice(&len.to_be_bytes());
        } else {
            let total = (f.len() - ETH) as u16;
            let id = headers::ipv4(frame).ident();
            let mut ip = headers::ipv4_mut(&mut f);
            ip.set_total_len(total);
            ip.set_ident(id.wrapping_add(i as u16));
            fill_ipv4_checksum(&mut f);
        }
        let mut t = headers::tcp_mut(&mut f, tcp);
        t.set_seq_number(TcpSeqNumber(base_seq.wrapping_add(off) as i32));
        if i + 1 < chunks.len() {
            // PSH and FIN stay on the last piece
            t.set_psh(false);
            t.set_fin(false);
        }
        fill_l4_checksum(&mut f);
        off = off.wrapping_add(c.len() as u32);
        out.push(f);
    }
    Some(out)
}

/// Where the TCP or UDP checksum of an IPv4 or IPv6 (no extension headers) frame
/// sits: (start of the L4 header, L4 length, protocol, pseudo-header sum, offset of
/// the checksum field). `None` for other or malformed frames.
fn l4_span(f: &[u8]) -> Option<(usize, usize, IpProtocol, u32, usize)> {
    if f.len() < ETH + IPV4 {
        return None;
    }
    let (l4, len, proto, pseudo) = match ethertype(f)? {
        EthernetProtocol::Ipv4 => {
            let ip = headers::ipv4(f);
            let ihl = usize::from(ip.header_len());
            let total = usize::from(ip.total_len());
            if ip.version() != 4 || ihl < IPV4 || total < ihl || ETH + total > f.len() {
                return None;
            }
            // a fragment's checksum covers the whole datagram
            if is_fragment(&ip) {
                return None;
            }
            let proto = ip.next_header();
            let len = total - ihl;
            let acc = sum16(
                &f[ETH..][field::ipv4::ADDRS],
                u32::from(u8::from(proto)) + len as u32,
            );
            (ETH + ihl, len, proto, acc)
        }
        EthernetProtocol::Ipv6 => {
            if f.len() < ETH + IPV6 {
                return None;
            }
            let ip = headers::ipv6(f);
            let len = usize::from(ip.payload_len());
            if ETH + IPV6 + len > f.len() {
                return None;
            }
            let proto = ip.next_header();
            let acc = sum16(
                &f[ETH..][field::ipv6::ADDRS],
                u32::from(u8::from(proto)) + len as u32,
            );
            (ETH + IPV6, len, proto, acc)
        }
        _ => return None,
    };
    let at = match proto {
        IpProtocol::Tcp if len >= TCP => l4 + field::tcp::CHECKSUM.start,
        IpProtocol::Udp if len >= UDP => l4 + field::udp::CHECKSUM.start,
        _ => return None,
    };
    Some((l4, len, proto, pseudo, at))
}

/// Checks the TCP or UDP checksum of a received IPv4 or IPv6 frame in software (the
/// stack itself is told not to, so that packets the backend vouched for are not
/// summed again). `Some(false)` for a wrong checksum; `None` when the frame is not
/// TCP or UDP over IP, or is malformed (the stack then judges it).
pub fn verify_l4_checksum(f: &[u8]) -> Option<bool> {
    let (l4, len, proto, pseudo, at) = l4_span(f)?;
    if proto == IpProtocol::Udp
        && f[at..at + 2] == [0, 0]
        && ethertype(f) == Some(EthernetProtocol::Ipv4)
    {
        return Some(true); // IPv4 UDP without a checksum
    }
    Some(fold(sum16(&f[l4..l4 + len], pseudo)) == 0xffff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// A TCP segment with full checksums: `seq`, payload `data`, flags.
    fn seg(seq: u32, data: &[u8], flags: u8) -> Vec<u8> {
        seg_id(seq, data, flags, 0)
    }

    fn seg_id(seq: u32, data: &[u8], flags: u8, id: u16) -> Vec<u8> {
        let mut f = vec![0u8; ETH + IP + 20];
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[8, 0]);
        f[ETH] = 0x45;
        f[ETH + 4..ETH + 6].copy_from_slice(&id.to_be_bytes());
        f[ETH + 8] = 64;
        f[ETH + 9] = 6;
        f[ETH + 12..ETH + 16].copy_from_slice(&[10, 0, 0, 1]);
        f[ETH + 16..ETH + 20].copy_from_slice(&[10, 0, 0, 2]);
        let t = ETH + IP;
        f[t..t + 2].copy_from_slice(&5201u16.to_be_bytes());
        f[t + 2..t + 4].copy_from_slice(&40000u16.to_be_bytes());
        f[t + 8..t + 12].copy_from_slice(&77u32.to_be_bytes());
        f[t + 12] = 5 << 4;
        f[t + 14..t + 16].copy_from_slice(&[0x10, 0]);
        f.extend_from_slice(data);
        f[t + 13] = flags;
        f[t + 4..t + 8].copy_from_slice(&seq.to_be_bytes());
        // let segment() compute the checksums of a one-segment "GSO" packet
        segment(&f, 65535).unwrap().remove(0)
    }

    type Sent = Vec<(Vec<u8>, Send)>;

    fn run(frames: &[Vec<u8>]) -> (Sent, Coalescer) {
        let mut c = Coalescer::default();
        let mut out = Vec::new();
        {
            let mut emit = |f: &[u8], g: Send| {
                out.push((f.to_vec(), g));
                true
            };
            for f in frames {
                c.push(f, &mut emit);
            }
            c.flush(&mut emit);
        }
        (out, c)
    }

    #[test]
    fn merges_a_run_and_backend_segmentation_restores_it() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 13) as u8).collect();
        let mss = 1460;
        let mut frames = Vec::new();
        for (i, c) in data.chunks(mss).enumerate() {
            let last = (i + 1) * mss >= data.len();
            let flags = if last { 0x18 } else { 0x10 };
            frames.push(seg_id(1000 + (i * mss) as u32, c, flags, i as u16));
        }
        let (out, c) = run(&frames);
        assert_eq!(out.len(), 1, "one GSO packet");
        assert_eq!(out[0].1, Send::Gso(1460));
        assert_eq!(c.merged, (1, 4));
        let big = &out[0].0;
        // the checksum field holds the pseudo-header sum for the whole TCP length
        let t = ETH + IP;
        // NIC-style completion (sum over the TCP bytes starting from the partial sum in
        // the field) gives the checksum computed independently from scratch
        let tcp_len = (big.len() - t) as u32;
        let mut pseudo = 6 + tcp_len;
        for w in big[ETH + 12..ETH + 20].chunks(2) {
            pseudo += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        let mut zeroed = big[t..].to_vec();
        zeroed[16] = 0;
        zeroed[17] = 0;
        let want = !fold(sum16(&zeroed, pseudo));
        let nic = !fold(sum16(&big[t..], 0));
        assert_eq!(nic, want, "partial checksum completes to the right one");
        assert_eq!(big[t + 13], 0x18, "PSH of the last segment kept");
        // a backend cutting it again gives back the very frames smoltcp made
        let again = segment(big, 1460).unwrap();
        assert_eq!(again.len(), frames.len());
        assert!(again == frames, "segmentation did not restore the frames");
    }

    /// As smoltcp emits them when told to leave TCP checksums alone: field zero.
    fn unsummed(mut f: Vec<u8>) -> Vec<u8> {
        f[ETH + IP + 16] = 0;
        f[ETH + IP + 17] = 0;
        f
    }

    /// A coalescer for a 1500-byte link whose TCP checksums it leaves to the
    /// merger (`tcp_csum_left`).
    fn csum_left_coalescer() -> Coalescer {
        Coalescer {
            tcp_csum_left: true,
            mtu: 1500,
            ..Coalescer::default()
        }
    }

    #[test]
    fn checksums_left_to_the_merger_are_filled_or_offloaded() {
        let mut c = csum_left_coalescer();
        let mut out: Sent = Vec::new();
        let a = seg(1000, &[5; 700], 0x10);
        let b = seg_id(1700, &[6; 700], 0x18, 1);
        let lone = seg(9000, &[7; 300], 0x18);
        let syn = TCP4_SYN.to_vec();
        {
            let mut emit = |f: &[u8], g: Send| {
                out.push((f.to_vec(), g));
                true
            };
            for f in [&a, &b, &lone, &syn] {
                c.push(&unsummed(f.clone()), &mut emit);
            }
            c.flush(&mut emit);
        }
        assert_eq!(out.len(), 3);
        // two segments merged: GSO with the pseudo-header sum; cut again they are
        // exactly the frames with full checksums
        assert_eq!(out[0].1, Send::Gso(700));
        assert!(segment(&out[0].0, 700).unwrap() == vec![a, b]);
        // a lone segment goes out for the link to complete
        assert_eq!(out[1].1, Send::CsumBlank);
        let t = ETH + IP;
        let f = &out[1].0;
        let ps = pseudo_header_sum(&f[ETH..t], f.len() - t);
        assert_eq!(u16::from_be_bytes([f[t + 16], f[t + 17]]), ps);
        let mut done = f.clone();
        fill_l4_checksum(&mut done);
        assert!(done == lone);
        // a frame that is never merged (SYN) gets its whole checksum here
        assert_eq!(out[2], (syn, Send::Plain));
        assert_eq!(verify_l4_checksum(&out[2].0), Some(true));
    }

    #[test]
    fn a_segment_larger_than_the_mtu_goes_out_whole_at_its_peers_mss() {
        let mut c = csum_left_coalescer();
        // the peer's SYN (10.0.0.2:40000 -> 10.0.0.1:5201) offered MSS 1400
        let mut syn = seg(5, &[0; 4], 0x02);
        syn.truncate(ETH + IP + 20);
        syn[ETH + 12..ETH + 20].copy_from_slice(&[10, 0, 0, 2, 10, 0, 0, 1]);
        syn[ETH + IP..ETH + IP + 4].copy_from_slice(&[0x9c, 0x40, 0x14, 0x51]);
        syn[ETH + IP + 12] = 6 << 4;
        syn.extend_from_slice(&[2, 4, 0x05, 0x78]);
        c.peers.bulk_port(5201);
        c.peers.on_receive(&mut syn, 1500);
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 241) as u8).collect();
        let held = seg(100, &[1; 1400], 0x10);
        // FIN rides on the large segment: the link keeps it for the last piece
        let big = unsummed(seg(1500, &data, 0x19));
        let mut udp = big.clone();
        udp[ETH + 9] = 17;
        // within the MTU but more than the peer takes
        let mid = unsummed(seg(21_500, &[3; 1450], 0x10));
        let mut out: Sent = Vec::new();
        {
            let mut emit = |f: &[u8], g: Send| {
                out.push((f.to_vec(), g));
                true
            };
            c.push(&unsummed(held.clone()), &mut emit);
            c.push(&big, &mut emit);
            c.push(&udp, &mut emit);
            c.push(&mid, &mut emit);
            c.flush(&mut emit);
        }
        // the held segment first, then the large one cut at 1400 by the link
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].1, Send::CsumBlank);
        assert_eq!(out[1].1, Send::Gso(1400));
        let segs = segment(&out[1].0, 1400).unwrap();
        assert_eq!(segs.len(), 15);
        let mut back = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            assert!(s.len() <= 1514);
            assert_eq!(verify_l4_checksum(s), Some(true));
            let fin = s[ETH + IP + 13] & 1 != 0;
            assert_eq!(fin, i == 14, "FIN on the last piece only");
            back.extend_from_slice(&s[ETH + IP + 20..]);
        }
        assert!(back == data);
        assert_eq!(out[2].1, Send::Gso(1400));
        assert_eq!(segment(&out[2].0, 1400).unwrap().len(), 2);
        assert_eq!((c.large, c.oversize, c.peers.unknown), (2, 1, 0));
    }

    #[test]
    fn in_place_merging_survives_interleaved_flows_and_tiny_segments() {
        // two flows taking turns: nothing merges, every frame comes out intact
        let mut other = seg(50_000, &[9; 1460], 0x10);
        other[ETH + IP + 1] ^= 1;
        let x = seg(1000, &[1; 1460], 0x10);
        let (out, c) = run(&[x.clone(), other.clone(), x.clone()]);
        assert!(
            out == vec![
                (x.clone(), Send::Plain),
                (other, Send::Plain),
                (x, Send::Plain)
            ]
        );
        assert_eq!(c.merged, (0, 0));
        // segments with less payload than their headers are sent as they are
        let t1 = seg(1000, &[1; 20], 0x10);
        let t2 = seg(1020, &[2; 20], 0x10);
        let (out, _) = run(&[t1.clone(), t2.clone()]);
        assert!(out == vec![(t1, Send::Plain), (t2, Send::Plain)]);
        // a long run fills packets up to the limit and the next one starts anew,
        // every byte in order
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 253) as u8).collect();
        let frames: Vec<Vec<u8>> = data
            .chunks(1460)
            .enumerate()
            .map(|(i, d)| seg(7 + (i * 1460) as u32, d, 0x10))
            .collect();
        let (out, _) = run(&frames);
        let mut back = Vec::new();
        for (f, how) in &out {
            assert!(f.len() <= MAX_GSO_FRAME);
            let segs = match how {
                Send::Gso(m) => segment(f, usize::from(*m)).unwrap(),
                _ => vec![f.clone()],
            };
            for s in segs {
                assert_eq!(verify_l4_checksum(&s), Some(true));
                back.extend_from_slice(&s[ETH + IP + 20..]);
            }
        }
        assert!(back == data);
    }

    /// The header checks the merger makes through the typed views: a fragment, IP
    /// options and IPv6 keep a segment out of a merge; with checksums left to the
    /// merger, IPv4 with options and IPv6 TCP are completed, a fragment is not; a
    /// difference in the IPv4 flags or TTL keeps two segments apart.
    #[test]
    fn fragments_options_and_ipv6_are_sent_alone() {
        let a = seg(1000, &[1; 100], 0x10);
        for (what, frame) in [
            ("more fragments", {
                let mut f = a.clone();
                f[ETH + 6] |= 0x20;
                f
            }),
            ("a fragment offset", {
                let mut f = a.clone();
                f[ETH + 7] = 1;
                f
            }),
        ] {
            let (out, c) = run(core::slice::from_ref(&frame));
            assert_eq!(out, vec![(frame.clone(), Send::Plain)], "{what}");
            assert_eq!(c.merged, (0, 0));
            let mut c = csum_left_coalescer();
            let mut blank = frame.clone();
            blank[ETH + IP + 16..ETH + IP + 18].copy_from_slice(&[0, 0]);
            let mut out = Vec::new();
            c.push(&blank, &mut |f: &[u8], g| {
                out.push((f.to_vec(), g));
                true
            });
            c.flush(&mut |_, _| true);
            assert_eq!(out, vec![(blank, Send::Plain)], "{what}: left as it is");
        }
        // IPv4 with an option (a NOP word), its checksum left to the merger
        let mut opt = a[..ETH + IP].to_vec();
        opt[ETH] = 0x46;
        opt.extend_from_slice(&[1, 1, 1, 1]);
        opt.extend_from_slice(&a[ETH + IP..]);
        let total = (opt.len() - ETH) as u16;
        opt[ETH + 2..ETH + 4].copy_from_slice(&total.to_be_bytes());
        fill_ipv4_checksum_any(&mut opt);
        opt[ETH + 24 + 16..ETH + 24 + 18].copy_from_slice(&[0, 0]);
        // IPv6 TCP, checksum zero
        let mut v6 = vec![0u8; ETH + IPV6];
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        v6[ETH] = 0x60;
        v6[ETH + 4..ETH + 6].copy_from_slice(&((a.len() - ETH - IP) as u16).to_be_bytes());
        v6[ETH + 6] = 6;
        v6[ETH + 23] = 1;
        v6[ETH + 39] = 2;
        v6.extend_from_slice(&a[ETH + IP..]);
        v6[ETH + IPV6 + 16..ETH + IPV6 + 18].copy_from_slice(&[0, 0]);
        for (what, frame) in [("IPv4 options", opt), ("IPv6", v6)] {
            assert_eq!(verify_l4_checksum(&frame), Some(false), "{what}");
            let mut c = csum_left_coalescer();
            let mut out = Vec::new();
            let mut emit = |f: &[u8], g| {
                out.push((f.to_vec(), g));
                true
            };
            c.push(&frame, &mut emit);
            c.push(&frame, &mut emit);
            c.flush(&mut emit);
            assert_eq!(out.len(), 2, "{what}: not merged");
            for (f, how) in out {
                assert_eq!(how, Send::Plain);
                assert_eq!(verify_l4_checksum(&f), Some(true), "{what}: completed");
            }
        }
        // the IPv4 header's flags (DF) and TTL must match for a merge
        for (at, bit) in [(ETH + 6, 0x40u8), (ETH + 8, 1)] {
            let mut b = seg(1100, &[2; 100], 0x10);
            b[at] ^= bit;
            let (out, c) = run(&[a.clone(), b]);
            assert_eq!((out.len(), c.merged), (2, (0, 0)), "byte {at}");
        }
    }

    /// The IPv4 header checksum of a frame whatever its header length.
    fn fill_ipv4_checksum_any(f: &mut [u8]) {
        let ihl = usize::from(f[ETH] & 0x0f) * 4;
        f[ETH + 10..ETH + 12].copy_from_slice(&[0, 0]);
        let sum = !fold(sum16(&f[ETH..ETH + ihl], 0));
        f[ETH + 10..ETH + 12].copy_from_slice(&sum.to_be_bytes());
    }

    #[test]
    fn only_continuations_are_merged() {
        let a = seg(1000, &[1; 100], 0x10);
        let gap = seg(1200, &[2; 100], 0x10); // not 1100: a hole
        let (out, _) = run(&[a.clone(), gap.clone()]);
        assert!(out == vec![(a.clone(), Send::Plain), (gap, Send::Plain)]);
        // after a short segment the packet is closed
        let full = seg(1000, &[1; 100], 0x10);
        let short = seg(1100, &[1; 50], 0x10);
        let next = seg(1150, &[1; 100], 0x10);
        let (out, _) = run(&[full, short, next]);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].1, Send::Gso(100));
        assert_eq!(out[0].0.len(), 54 + 150);
        // a segment longer than the first one's payload starts anew
        let (out, _) = run(&[seg(1000, &[1; 50], 0x10), seg(1050, &[1; 100], 0x10)]);
        assert_eq!(out.len(), 2);
        // a FIN, a SYN or a pure ACK is never merged, and flushes what is held
        let fin = seg(1100, &[3; 10], 0x11);
        let (out, _) = run(&[a.clone(), fin.clone()]);
        assert!(out == vec![(a.clone(), Send::Plain), (fin, Send::Plain)]);
        let mut other_port = seg(1100, &[4; 100], 0x10);
        other_port[ETH + IP + 1] ^= 1;
        let (out, _) = run(&[a.clone(), other_port]);
        assert_eq!(out.len(), 2);
        // non-IPv4 frames pass through untouched
        let arp = vec![0xffu8; 42];
        let (out, _) = run(core::slice::from_ref(&arp));
        assert_eq!(out, vec![(arp, Send::Plain)]);
    }

    #[test]
    fn receive_checksums_are_verified_in_software() {
        // IPv4 TCP with smoltcp-style full checksums
        let good = seg(5, &[9; 333], 0x18);
        assert_eq!(verify_l4_checksum(&good), Some(true));
        let mut bad = good.clone();
        *bad.last_mut().unwrap() ^= 0x40;
        assert_eq!(verify_l4_checksum(&bad), Some(false));
        // a checksum field left as the pseudo-header sum (csum_blank) is not valid
        let mut blank = good.clone();
        let t = ETH + IP;
        let ps = pseudo_header_sum(&blank[ETH..t], blank.len() - t);
        blank[t + 16..t + 18].copy_from_slice(&ps.to_be_bytes());
        assert_eq!(verify_l4_checksum(&blank), Some(false));
        // IPv6 UDP, built by hand
        let mut f = vec![0u8; ETH + 40 + 8 + 5];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[ETH] = 0x60;
        f[ETH + 4..ETH + 6].copy_from_slice(&13u16.to_be_bytes());
        f[ETH + 6] = 17;
        f[ETH + 8] = 0xfd;
        f[ETH + 23] = 1;
        f[ETH + 24] = 0xfd;
        f[ETH + 39] = 2;
        let u = ETH + 40;
        f[u..u + 2].copy_from_slice(&7u16.to_be_bytes());
        f[u + 2..u + 4].copy_from_slice(&9u16.to_be_bytes());
        f[u + 4..u + 6].copy_from_slice(&13u16.to_be_bytes());
        f[u + 8..].copy_from_slice(b"hello");
        assert_eq!(
            verify_l4_checksum(&f),
            Some(false),
            "zero is no IPv6 UDP checksum"
        );
        fill_l4_checksum(&mut f);
        assert_eq!(verify_l4_checksum(&f), Some(true));
        f[u + 8] ^= 1;
        assert_eq!(verify_l4_checksum(&f), Some(false));
        // IPv4 UDP with checksum 0: none was sent, nothing to check
        let mut v4 = good[..ETH + IP].to_vec();
        v4[ETH + 9] = 17;
        v4[ETH + 2..ETH + 4].copy_from_slice(&28u16.to_be_bytes());
        v4.extend_from_slice(&[0, 7, 0, 9, 0, 8, 0, 0]);
        assert_eq!(verify_l4_checksum(&v4), Some(true));
        // truncated, lying, fragmented and foreign frames are the stack's to judge
        assert_eq!(verify_l4_checksum(&good[..40]), None);
        let mut lying = good.clone();
        lying[ETH + 2..ETH + 4].copy_from_slice(&9000u16.to_be_bytes());
        assert_eq!(verify_l4_checksum(&lying), None);
        let mut frag = good.clone();
        frag[ETH + 6] = 0x20; // more fragments
        assert_eq!(verify_l4_checksum(&frag), None);
        assert_eq!(verify_l4_checksum(&[0xffu8; 60]), None);
    }

    /// RFC 1071 section 3's worked example: bytes 00 01 f2 03 f4 f5 f6 f7 sum to
    /// ddf2 (carries folded), whose complement 220d is the checksum.
    #[test]
    fn rfc1071_worked_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum16(&data, 0)), 0xddf2);
        assert_eq!(!fold(sum16(&data, 0)), 0x220d);
        // with the checksum appended the sum is all ones (how a receiver checks)
        let mut with = data.to_vec();
        with.extend_from_slice(&0x220du16.to_be_bytes());
        assert_eq!(fold(sum16(&with, 0)), 0xffff);
        // an odd trailing byte counts as the high byte of a word (RFC 1071 4.1)
        assert_eq!(fold(sum16(&[0x12, 0x34, 0x56], 0)), 0x6834);
    }

    /// Frames whose checksums were computed outside this crate (a separate
    /// RFC 1071 implementation, not the helpers under test), hard-coded.
    const UDP4_FRAME: [u8; 64] = [
        0x00, 0x16, 0x3e, 0x01, 0x02, 0x03, 0x00, 0x16, 0x3e, 0x04, 0x05, 0x06, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x32, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x18, 0xc0, 0xa8, 0x01, 0x0a,
        0xc0, 0xa8, 0x01, 0x14, 0x14, 0xe9, 0x00, 0x09, 0x00, 0x1e, 0x04, 0xf5, 0x78, 0x65, 0x6e,
        0x6c, 0x65, 0x74, 0x20, 0x63, 0x68, 0x65, 0x63, 0x6b, 0x73, 0x75, 0x6d, 0x20, 0x76, 0x65,
        0x63, 0x74, 0x6f, 0x72,
    ];
    /// A TCP SYN 192.168.1.10:40000 -> 192.168.1.20:80, checksum 0x90ec.
    const TCP4_SYN: [u8; 54] = [
        0x00, 0x16, 0x3e, 0x01, 0x02, 0x03, 0x00, 0x16, 0x3e, 0x04, 0x05, 0x06, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x28, 0x43, 0x21, 0x40, 0x00, 0x40, 0x06, 0x74, 0x40, 0xc0, 0xa8, 0x01, 0x0a,
        0xc0, 0xa8, 0x01, 0x14, 0x9c, 0x40, 0x00, 0x50, 0x01, 0x02, 0x03, 0x04, 0x00, 0x00, 0x00,
        0x00, 0x50, 0x02, 0xfa, 0xf0, 0x90, 0xec, 0x00, 0x00,
    ];

    #[test]
    fn independent_vectors_verify() {
        assert_eq!(verify_l4_checksum(&UDP4_FRAME), Some(true));
        assert_eq!(verify_l4_checksum(&TCP4_SYN), Some(true));
        // every single-bit error in the UDP header and payload is caught
        for i in ETH + IP..UDP4_FRAME.len() {
            for bit in 0..8 {
                let mut f = UDP4_FRAME;
                f[i] ^= 1 << bit;
                if i == ETH + IP + 4 || i == ETH + IP + 5 {
                    continue; // the length field: the frame is then malformed
                }
                assert_eq!(verify_l4_checksum(&f), Some(false), "byte {i} bit {bit}");
            }
        }
        // the pseudo-header sum of the SYN: 192.168.1.10, 192.168.1.20, TCP, 20 bytes
        assert_eq!(pseudo_header_sum(&TCP4_SYN[ETH..ETH + IP], 20), 0x8389);
        // our own fill agrees with the independent checksum
        let mut f = TCP4_SYN;
        f[ETH + IP + 16] = 0;
        f[ETH + IP + 17] = 0;
        fill_l4_checksum(&mut f);
        assert_eq!(f, TCP4_SYN);
    }

    #[test]
    fn stays_under_64k_and_counts_refusals() {
        let frames: Vec<Vec<u8>> = (0..60u32)
            .map(|i| seg(i * 1460, &[7; 1460], 0x10))
            .collect();
        let (out, c) = run(&frames);
        assert!(out.len() >= 2);
        assert!(out.iter().all(|(f, _)| f.len() <= MAX_GSO_FRAME));
        let segs: usize = out.iter().map(|(f, _)| (f.len() - 54) / 1460).sum();
        assert_eq!(segs, 60);
        assert_eq!(c.dropped, 0);
        let mut c = Coalescer::default();
        let mut refuse = |_: &[u8], _: Send| false;
        c.push(&frames[0], &mut refuse);
        c.flush(&mut refuse);
        assert_eq!(c.dropped, 1);
    }

    /// A TCP/IPv6 frame (next header `next`), `data` behind a 20-byte TCP header
    /// with sequence number `seq` and `flags`.
    fn seg6(next: u8, seq: u32, data: &[u8], flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; ETH + IPV6 + 20];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[ETH] = 0x60;
        f[ETH + 4..ETH + 6].copy_from_slice(&((20 + data.len()) as u16).to_be_bytes());
        f[ETH + 6] = next;
        f[ETH + 7] = 64;
        f[ETH + 8..ETH + 24].copy_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f[ETH + 24..ETH + 40].copy_from_slice(&[0xfd, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        let t = ETH + IPV6;
        f[t..t + 2].copy_from_slice(&5201u16.to_be_bytes());
        f[t + 2..t + 4].copy_from_slice(&40000u16.to_be_bytes());
        f[t + 4..t + 8].copy_from_slice(&seq.to_be_bytes());
        f[t + 12] = 5 << 4;
        f[t + 13] = flags;
        f.extend_from_slice(data);
        f
    }

    #[test]
    fn a_partial_checksum_is_completed_for_ipv6_and_ipv4() {
        let data = [7u8; 333];
        for mut f in [seg6(6, 9, &data, 0x18), seg(9, &data, 0x18)] {
            let (l4, at) = if headers::is_ipv6(&f) {
                (ETH + IPV6, 16)
            } else {
                (ETH + IP, 16)
            };
            f[l4 + at..l4 + at + 2].copy_from_slice(&[0x12, 0x34]); // a pseudo-header sum, say
            assert_eq!(verify_l4_checksum(&f), Some(false));
            assert_eq!(verify_l4_checksum(&with_l4_checksum(&f)), Some(true));
        }
    }

    #[test]
    fn an_ipv6_gso_packet_is_cut_with_its_own_lengths_sequence_numbers_and_checksums() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        let psh_fin = tcp_flag::PSH | tcp_flag::FIN | tcp_flag::ACK;
        let segs = segment(&seg6(6, 1_000, &data, psh_fin), 1440).unwrap();
        assert_eq!(segs.len(), 4);
        let mut got = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            let len = usize::from(u16::from_be_bytes([s[ETH + 4], s[ETH + 5]]));
            assert_eq!(len + ETH + IPV6, s.len(), "segment {i}: payload length");
            assert_eq!(verify_l4_checksum(s), Some(true), "segment {i}: checksum");
            let t = ETH + IPV6;
            let seq = u32::from_be_bytes([s[t + 4], s[t + 5], s[t + 6], s[t + 7]]);
            assert_eq!(seq, 1_000 + 1440 * i as u32);
            let last = i == 3;
            assert_eq!(s[t + 13] & (tcp_flag::PSH | tcp_flag::FIN) != 0, last);
            got.extend_from_slice(&s[t + 20..]);
        }
        assert_eq!(got, data);
        // an extension header first, or not TCP: not cut (the caller drops it)
        assert_eq!(segment(&seg6(0, 1, &data, 0x10), 1440), None);
        assert_eq!(segment(&seg6(17, 1, &data, 0x10), 1440), None);
        let mut arp = seg6(6, 1, &data, 0x10);
        arp[12..14].copy_from_slice(&[8, 6]);
        assert_eq!(segment(&arp, 1440), None);
    }
}
