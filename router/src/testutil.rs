//! Test helpers: packet builders with valid checksums, a recording output, a PRNG.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use alloc::vec::Vec;
use core::net::Ipv4Addr;

use crate::checksum;
use crate::ipv4;
use crate::link::{Output, TxFull, TxMeta};
use crate::{DropReason, IfId};

/// A LAN host (192.168.1.100), the usual source of the packets the tests build.
pub const A: [u8; 4] = [192, 168, 1, 100];
/// A host on the internet (198.51.100.7), the usual destination.
pub const B: [u8; 4] = [198, 51, 100, 7];

/// TCP flags.
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;
pub const CWR: u8 = 0x80;

/// An IPv4 header (20 bytes + `options`) and `payload`, valid header checksum.
#[allow(clippy::too_many_arguments)]
pub fn ipv4(
    src: [u8; 4],
    dst: [u8; 4],
    proto: u8,
    ttl: u8,
    id: u16,
    df: bool,
    options: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    assert_eq!(options.len() % 4, 0);
    let hl = 20 + options.len();
    let total = hl + payload.len();
    let mut p = Vec::with_capacity(total);
    p.push(0x40 | (hl / 4) as u8);
    p.push(0);
    p.extend_from_slice(&(total as u16).to_be_bytes());
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&(if df { 0x4000u16 } else { 0 }).to_be_bytes());
    p.push(ttl);
    p.push(proto);
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(options);
    p.extend_from_slice(payload);
    ipv4::fill_header_checksum(&mut p);
    p
}

/// An IPv6 packet from `src` to `dst` (textual addresses) with `next_header` and
/// `payload` (which may start with extension headers).
pub fn ipv6(src: &str, dst: &str, next_header: u8, hop_limit: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = alloc::vec![0u8; 40];
    p[0] = 0x60;
    p[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
    p[6] = next_header;
    p[7] = hop_limit;
    p[8..24].copy_from_slice(&src.parse::<core::net::Ipv6Addr>().unwrap().octets());
    p[24..40].copy_from_slice(&dst.parse::<core::net::Ipv6Addr>().unwrap().octets());
    p.extend_from_slice(payload);
    p
}

/// An ICMPv6 message (`body` after type, code, checksum) with a valid checksum.
pub fn icmp6(src: &str, dst: &str, ty: u8, code: u8, body: &[u8]) -> Vec<u8> {
    let mut m = alloc::vec![ty, code, 0, 0];
    m.extend_from_slice(body);
    let s = Addr::pseudo_header_sum(src, dst, 58, m.len());
    let c = !checksum::fold(checksum::sum(s, &m));
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

/// An address as the packet builders take it: `[a, b, c, d]` for IPv4, text
/// (`"fd00::1"`) for IPv6.
pub trait Addr: Copy {
    /// The pseudo-header sum of a `proto` message of `len` bytes from `src` to `dst`.
    fn pseudo_header_sum(src: Self, dst: Self, proto: u8, len: usize) -> u32;
}

impl Addr for [u8; 4] {
    fn pseudo_header_sum(src: Self, dst: Self, proto: u8, len: usize) -> u32 {
        ipv4::pseudo_header_sum(src.into(), dst.into(), proto, len)
    }
}

impl Addr for &str {
    fn pseudo_header_sum(src: Self, dst: Self, proto: u8, len: usize) -> u32 {
        crate::ipv6::pseudo_header_sum(src.parse().unwrap(), dst.parse().unwrap(), proto, len)
    }
}

/// A TCP segment (header with `options` padded by the caller to 4 bytes; ack
/// 0x10000000, window 65535) with a full checksum for `src` → `dst` of either family.
#[allow(clippy::too_many_arguments)]
pub fn tcp<A: Addr>(
    src: A,
    dst: A,
    sport: u16,
    dport: u16,
    seq: u32,
    flags: u8,
    options: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    assert_eq!(options.len() % 4, 0);
    let hl = 20 + options.len();
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&0x1000_0000u32.to_be_bytes()); // ack
    t.push(((hl / 4) as u8) << 4);
    t.push(flags);
    t.extend_from_slice(&65535u16.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 0]);
    t.extend_from_slice(options);
    t.extend_from_slice(payload);
    let c = !checksum::fold(checksum::sum(
        A::pseudo_header_sum(src, dst, 6, t.len()),
        &t,
    ));
    t[16..18].copy_from_slice(&c.to_be_bytes());
    t
}

/// A UDP datagram with a full checksum for `src` → `dst` of either family (a computed
/// 0 is sent as 0xffff).
pub fn udp<A: Addr>(src: A, dst: A, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    let mut c = !checksum::fold(checksum::sum(
        A::pseudo_header_sum(src, dst, 17, u.len()),
        &u,
    ));
    if c == 0 {
        c = 0xffff;
    }
    u[6..8].copy_from_slice(&c.to_be_bytes());
    u
}

/// An Ethernet frame carrying `payload` with `ethertype`.
pub fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An ARP packet (no Ethernet header).
pub fn arp(op: u16, sha: [u8; 6], spa: [u8; 4], tha: [u8; 6], tpa: [u8; 4]) -> Vec<u8> {
    let mut a = alloc::vec![0, 1, 8, 0, 6, 4];
    a.extend_from_slice(&op.to_be_bytes());
    a.extend_from_slice(&sha);
    a.extend_from_slice(&spa);
    a.extend_from_slice(&tha);
    a.extend_from_slice(&tpa);
    a
}

/// Whether the IPv4 header checksum of `ip` verifies.
pub fn header_ok(ip: &[u8]) -> bool {
    checksum::checksum(&ip[..ipv4::header_len(ip)]) == 0
}

/// An [`Output`] that records every frame, or refuses them when `full`.
#[derive(Default)]
pub struct Recorder {
    pub sent: Vec<(IfId, Vec<u8>, TxMeta)>,
    pub full: bool,
}

impl Output for Recorder {
    fn send(&mut self, ifc: IfId, frame: &[u8], tx: TxMeta) -> Result<(), TxFull> {
        if self.full {
            return Err(TxFull);
        }
        self.sent.push((ifc, frame.to_vec(), tx));
        Ok(())
    }
}

impl Recorder {
    /// The frames sent with the given ethertype.
    pub fn of_type(&self, ethertype: u16) -> Vec<&(IfId, Vec<u8>, TxMeta)> {
        self.sent
            .iter()
            .filter(|(_, f, _)| u16::from_be_bytes([f[12], f[13]]) == ethertype)
            .collect()
    }
}

/// xorshift64* for the mutation tests.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// Overwrites one to `most` bytes of `p[start..start + span]` with random values,
    /// then cuts `p` to a random length: one case of a mutation test.
    pub fn mangle(&mut self, p: &mut Vec<u8>, most: usize, start: usize, span: usize) {
        for _ in 0..1 + self.below(most) {
            let i = start + self.below(span);
            p[i] = self.next() as u8;
        }
        p.truncate(self.below(p.len() + 1));
    }
}

/// xorshift32, seeded: the same cases every run (the DHCP and DNS mutation tests).
pub struct XorShift(pub u32);

impl XorShift {
    pub fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next()).unwrap() % n.max(1)
    }
    pub fn byte(&mut self) -> u8 {
        u8::try_from(self.below(256)).unwrap()
    }
}

/// The random numbers of the code under test (DNS ids, DHCPv6 transaction ids,
/// RA timing), from the same sequence.
impl crate::dns::Rng for XorShift {
    fn next_u32(&mut self) -> u32 {
        self.next()
    }
}

/// The address `a.b.c.d`.
pub fn ip(a: [u8; 4]) -> Ipv4Addr {
    Ipv4Addr::from(a)
}

/// The frames a segmenting function hands to its `emit`, in order (it must succeed).
pub fn emitted(
    run: impl FnOnce(&mut dyn FnMut(&mut [u8]) -> Result<(), DropReason>) -> Result<(), DropReason>,
) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    run(&mut |f| {
        frames.push(f.to_vec());
        Ok(())
    })
    .unwrap();
    frames
}

/// A firewall zone of one interface whose output is accepted, without masquerade or
/// MSS clamping.
pub fn zone(
    name: &str,
    ifc: IfId,
    input: crate::firewall::ruleset::Verdict,
    forward: crate::firewall::ruleset::Verdict,
) -> crate::firewall::ruleset::Zone {
    use crate::firewall::ruleset::{Verdict, Zone};
    Zone {
        name: name.into(),
        ifaces: alloc::vec![ifc],
        input,
        output: Verdict::Accept,
        forward,
        masq: false,
        mtu_fix: false,
    }
}

/// A hook's view of a packet from `input` (to `output`) at `now` with a full checksum
/// and no source MAC.
pub fn meta(input: IfId, output: Option<IfId>, now: crate::Millis) -> crate::Meta {
    crate::Meta {
        input,
        output,
        csum_partial: false,
        now,
        src_mac: None,
    }
}

/// An Ethernet interface of `mtu` with checksum offload, no GSO and no MSS clamping.
pub fn ifconfig(name: &str, mac: [u8; 6], mtu: u16) -> crate::iface::IfConfig {
    crate::iface::IfConfig {
        name: name.into(),
        mac: smoltcp::wire::EthernetAddress(mac),
        mtu,
        has_tx_gso: false,
        has_tx_gso6: false,
        has_tx_csum_offload: true,
        is_mss_clamped: false,
    }
}
