//! In-place rewriting of IPv4 addresses, ports and ICMP ids with checksum updates.
//!
//! Every change is one or two 16-bit words, so every checksum that covers them is
//! updated incrementally (RFC 1624 eqn. 3, [`crate::checksum`]) instead of recomputed:
//! the IPv4 header checksum, the TCP/UDP checksum (whose pseudo-header holds the
//! addresses, RFC 9293 section 3.1 / RFC 768) and the ICMP checksum (no pseudo-header,
//! RFC 792). An incremental update also carries a corrupt checksum through unchanged,
//! so the end host still sees the corruption.
//!
//! Special cases:
//! - a UDP checksum of 0 means "none" and stays 0; an update that computes 0 writes
//!   0xffff, its other one's-complement form (RFC 768);
//! - a `csum_partial` packet (see [`crate::Meta::csum_partial`]) holds only the
//!   pseudo-header sum in its TCP/UDP checksum field: an address change updates that
//!   sum, a port change leaves it alone (ports are summed later with the payload);
//! - in an ICMP error, the quoted packet's header changes too (RFC 5508 section 4.1:
//!   its address and port, its IP header checksum, its transport checksum when the
//!   quote is long enough to hold it: a UDP or echo quote's 8 bytes, a TCP quote's
//!   whole 20-byte header, as Linux's `tcp_manip_pkt`) and the ICMP checksum is updated by the
//!   difference of the one's-complement sums of the quoted header before and after.

use crate::checksum::{fold, sum, update16, update32, update32_partial};
use crate::flow::{get_addr, ip_proto, Endpoint, Proto, Quoted};
use crate::ipv4::{self, be16};

/// Which end of a packet to rewrite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The source address and port.
    Source,
    /// The destination address and port.
    Destination,
}

/// How the transport checksum field is to be treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Csum {
    /// A complete checksum.
    Full,
    /// A pseudo-header sum (`csum_partial`).
    Partial,
}

/// Something in the packet was not where its headers said (the caller parsed it, so
/// this means the packet is shorter than the parse assumed: never expected).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Truncated;

fn put16(b: &mut [u8], off: usize, v: u16) -> Result<(), Truncated> {
    let s = b
        .get_mut(off..off.checked_add(2).ok_or(Truncated)?)
        .ok_or(Truncated)?;
    s.copy_from_slice(&v.to_be_bytes());
    Ok(())
}

fn put_addr(b: &mut [u8], off: usize, a: [u8; 4]) -> Result<(), Truncated> {
    let s = b
        .get_mut(off..off.checked_add(4).ok_or(Truncated)?)
        .ok_or(Truncated)?;
    s.copy_from_slice(&a);
    Ok(())
}

/// Where the checksum covering the transport ports is, and how to treat it.
#[derive(Clone, Copy)]
enum L4Csum {
    /// TCP (offset 16), always present.
    Tcp,
    /// UDP (offset 6): 0 means none.
    Udp,
    /// ICMP (offset 2): no pseudo-header.
    Icmp,
    /// None known.
    None,
}

fn l4_csum(proto: Proto) -> (L4Csum, usize) {
    match proto {
        Proto::Tcp => (L4Csum::Tcp, 16),
        Proto::Udp => (L4Csum::Udp, 6),
        Proto::IcmpEchoRequest | Proto::IcmpEchoReply => (L4Csum::Icmp, 2),
        Proto::Other(_) => (L4Csum::None, 0),
    }
}

/// Applies a checksum change to the transport checksum at `off` (skipped if the
/// field is not in `b`, as in a short ICMP quote).
fn fix_l4(
    b: &mut [u8],
    kind: L4Csum,
    off: usize,
    csum: Csum,
    in_pseudo: bool,
    change: impl Fn(u16, Csum) -> u16,
) {
    let Some(old) = be16(b, off) else {
        return;
    };
    let new = match kind {
        L4Csum::None => return,
        L4Csum::Icmp if in_pseudo => return,
        // ICMP checksums are always complete
        L4Csum::Icmp => change(old, Csum::Full),
        // inside an ICMP error, only a whole quoted TCP header has its checksum
        // updated (Linux's tcp_manip_pkt: with less than 20 bytes, the ports
        // change and the checksum is left as it was quoted)
        L4Csum::Tcp if b.len() < off.saturating_add(4) => return,
        L4Csum::Tcp => change(old, csum),
        L4Csum::Udp => {
            if csum == Csum::Full && old == 0 {
                return;
            }
            let n = change(old, csum);
            if csum == Csum::Full && n == 0 {
                0xffff
            } else {
                n
            }
        }
    };
    // `off` was just read, so the write cannot fail
    let _ = put16(b, off, new);
}

/// Rewrites one end of the IPv4 packet whose header starts at `ip` in `b` (0 for the
/// packet itself, the quoted header's offset inside an ICMP error) and whose
/// transport header starts at `l4`. `port` is None to change the address only.
fn rewrite_at(
    b: &mut [u8],
    ip: usize,
    l4: usize,
    proto: Proto,
    side: Side,
    (addr, port): ([u8; 4], Option<u16>),
    csum: Csum,
) -> Result<(), Truncated> {
    let (kind, csum_off) = l4_csum(proto);
    let csum_at = l4.checked_add(csum_off).ok_or(Truncated)?;
    let addr_at = match side {
        Side::Source => ip + ipv4::SRC,
        Side::Destination => ip + ipv4::DST,
    };
    let old_addr = get_addr(b, addr_at).ok_or(Truncated)?;
    if old_addr != addr {
        put_addr(b, addr_at, addr)?;
        let hc = be16(b, ip + ipv4::CHECKSUM).ok_or(Truncated)?;
        put16(b, ip + ipv4::CHECKSUM, update32(hc, old_addr, addr))?;
        fix_l4(b, kind, csum_at, csum, true, |c, how| match how {
            Csum::Full => update32(c, old_addr, addr),
            Csum::Partial => update32_partial(c, old_addr, addr),
        });
    }
    let Some(port) = port else {
        return Ok(());
    };
    // the field holding this end's "port": TCP/UDP ports; an echo's identifier is the
    // requester's (source of a request, destination of a reply)
    let port_at = match (proto, side) {
        (Proto::Tcp | Proto::Udp, Side::Source) => l4,
        (Proto::Tcp | Proto::Udp, Side::Destination) => l4 + 2,
        (Proto::IcmpEchoRequest, Side::Source) | (Proto::IcmpEchoReply, Side::Destination) => {
            l4 + 4
        }
        _ => return Ok(()),
    };
    let old_port = be16(b, port_at).ok_or(Truncated)?;
    if old_port != port {
        put16(b, port_at, port)?;
        fix_l4(b, kind, csum_at, csum, false, |c, how| match how {
            Csum::Full => update16(c, old_port, port),
            // ports are not in the pseudo-header
            Csum::Partial => c,
        });
    }
    Ok(())
}

/// Rewrites the `side` end of a packet of a flow to `to` (address and port/id; the
/// port is ignored for protocols without one). `ihl` is the IPv4 header length.
pub(crate) fn rewrite_flow(
    ip: &mut [u8],
    ihl: usize,
    proto: Proto,
    side: Side,
    to: Endpoint,
    csum_partial: bool,
) -> Result<(), Truncated> {
    let csum = if csum_partial {
        Csum::Partial
    } else {
        Csum::Full
    };
    rewrite_at(ip, 0, ihl, proto, side, (to.0, Some(to.1)), csum)
}

/// Rewrites only the address of the `side` end (and the IPv4 header checksum): for
/// fragments after the first, which carry no transport header.
pub(crate) fn rewrite_address(ip: &mut [u8], side: Side, to: [u8; 4]) -> Result<(), Truncated> {
    rewrite_at(ip, 0, 0, Proto::Other(0), side, (to, None), Csum::Full)
}

/// Rewrites an ICMP error: the outer `side` address becomes `to.0`, and the quoted
/// packet's opposite end (the one that is the outer packet's `side` end: an error
/// goes back to whoever sent the quoted packet) becomes `to`.
pub(crate) fn rewrite_icmp_error(
    ip: &mut [u8],
    q: &Quoted,
    side: Side,
    to: Endpoint,
) -> Result<(), Truncated> {
    // the outer header: ICMP has no pseudo-header, only the IP header checksum moves
    rewrite_at(
        ip,
        0,
        q.icmp,
        Proto::Other(ip_proto::ICMP),
        side,
        (to.0, None),
        Csum::Full,
    )?;
    let inner_side = match side {
        Side::Source => Side::Destination,
        Side::Destination => Side::Source,
    };
    // the quoted header and the start of its transport header: every word that can
    // change lies in [q.ip, q.l4 + 18), which starts at an even offset from the ICMP
    // header, so the ICMP checksum moves by the difference of the two sums
    let end = q.l4.saturating_add(18).min(ip.len());
    let region = q.ip..end;
    let before = fold(sum(0, ip.get(region.clone()).ok_or(Truncated)?));
    rewrite_at(
        ip,
        q.ip,
        q.l4,
        q.tuple.proto,
        inner_side,
        (to.0, Some(to.1)),
        Csum::Full,
    )?;
    let after = fold(sum(0, ip.get(region).ok_or(Truncated)?));
    let icmp_csum_at = q.icmp + 2;
    let c = be16(ip, icmp_csum_at).ok_or(Truncated)?;
    put16(ip, icmp_csum_at, update16(c, before, after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::checksum;

    /// Rewrites the source of [`udp_packet`] `p` to `addr`:`port`.
    fn nat_udp_source(p: &mut [u8], addr: [u8; 4], port: u16) {
        rewrite_flow(p, 20, Proto::Udp, Side::Source, (addr, port), false).unwrap();
    }

    /// A UDP packet 10.0.0.2:1234 -> 192.0.2.1:53 with a valid checksum.
    fn udp_packet() -> [u8; 32] {
        let mut p = [
            0x45, 0, 0, 32, 0x12, 0x34, 0, 0, 64, 17, 0, 0, 10, 0, 0, 2, 192, 0, 2, 1, //
            0x04, 0xd2, 0, 53, 0, 12, 0, 0, b'a', b'b', b'c', b'd',
        ];
        let c = checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        let c = udp_checksum(&p);
        p[26..28].copy_from_slice(&c.to_be_bytes());
        p
    }

    fn udp_checksum(p: &[u8]) -> u16 {
        let mut s = sum(0, &p[12..20]);
        s += 17 + (p.len() as u32 - 20);
        let mut q = p[20..].to_vec();
        q[6] = 0;
        q[7] = 0;
        let c = !fold(sum(s, &q));
        if c == 0 {
            0xffff
        } else {
            c
        }
    }

    #[test]
    fn udp_source_rewrite_matches_recompute() {
        let mut p = udp_packet();
        nat_udp_source(&mut p, [203, 0, 113, 7], 40000);
        assert_eq!(&p[12..16], &[203, 0, 113, 7]);
        assert_eq!(u16::from_be_bytes([p[20], p[21]]), 40000);
        assert_eq!(checksum(&p[..20]), 0, "IP header checksum");
        assert_eq!(u16::from_be_bytes([p[26], p[27]]), udp_checksum(&p));
    }

    #[test]
    fn udp_zero_checksum_stays_zero() {
        let mut p = udp_packet();
        p[26] = 0;
        p[27] = 0;
        nat_udp_source(&mut p, [203, 0, 113, 7], 40000);
        assert_eq!(&p[26..28], &[0, 0]);
    }

    #[test]
    fn udp_computed_zero_is_sent_as_ffff() {
        // search for a new source port whose correct checksum is 0 (i.e. 0xffff)
        let base = udp_packet();
        let hit = (0..=u16::MAX).find(|&port| {
            let mut p = base;
            p[20..22].copy_from_slice(&port.to_be_bytes());
            udp_checksum(&p) == 0xffff
        });
        let port = hit.expect("some port sums to zero");
        let mut p = base;
        nat_udp_source(&mut p, [10, 0, 0, 2], port);
        assert_eq!(u16::from_be_bytes([p[26], p[27]]), 0xffff);
    }
}
