//! Transmit queue selection: a frame goes to the queue its flow hashes to, so one
//! flow is never reordered across queues and flows spread over them.

pub(super) const ETHERTYPE_IPV4: u16 = 0x0800;
pub(super) const ETHERTYPE_IPV6: u16 = 0x86dd;
pub(super) const IPPROTO_TCP: u8 = 6;
pub(super) const IPPROTO_UDP: u8 = 17;

/// A hash of the flow an Ethernet frame belongs to: the IP protocol, source and
/// destination addresses of an IPv4 or IPv6 packet, and its TCP or UDP ports when it
/// carries them where they are found without parsing further (not in IPv4
/// fragments, whose later pieces have no ports, nor behind IPv6 extension headers).
/// `None` for any other frame (ARP, ...). Only the fields named count, so every
/// frame of one flow hashes alike.
pub(super) fn flow_hash(frame: &[u8]) -> Option<u32> {
    let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    let ip = frame.get(14..)?;
    let (proto, addrs, l4) = match ethertype {
        ETHERTYPE_IPV4 => {
            let ihl = usize::from(*ip.first()? & 0x0f) * 4;
            if *ip.first()? >> 4 != 4 || ihl < 20 || ip.len() < ihl {
                return None;
            }
            // More-fragments flag or a fragment offset: a piece of a datagram.
            let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
            (ip[9], &ip[12..20], (!fragment).then(|| &ip[ihl..]))
        }
        ETHERTYPE_IPV6 => {
            if ip.len() < 40 || ip[0] >> 4 != 6 {
                return None;
            }
            (ip[6], &ip[8..40], Some(&ip[40..]))
        }
        _ => return None,
    };
    let ports = match (proto, l4) {
        (IPPROTO_TCP | IPPROTO_UDP, Some(l4)) => l4.get(..4).unwrap_or(&[]),
        _ => &[],
    };
    // FNV-1a, then a final mix (murmur3's) so that the low bits, which pick the
    // queue, depend on every input bit.
    let mut h: u32 = 0x811c_9dc5;
    for &b in core::iter::once(&proto).chain(addrs).chain(ports) {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    Some(h ^ (h >> 16))
}

/// The transmit queue (of `queues`) for a frame: by its flow hash, so that one flow
/// keeps to one queue (no reordering) and flows spread; frames without one go to
/// queue 0.
pub(super) fn tx_queue(frame: &[u8], queues: usize) -> usize {
    match flow_hash(frame) {
        Some(h) if queues > 1 => h as usize % queues,
        _ => 0,
    }
}
