//! Flows of Ethernet frames: a frame's flow hash, and by it netfront's transmit
//! queue selection (a frame goes to the queue its flow hashes to, so one flow is
//! never reordered across queues and flows spread over them) and the router's fair
//! egress queues (`xenlet-net`'s backlog).

/// The EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// The EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// TCP's IP protocol number.
pub const IPPROTO_TCP: u8 = 6;
/// UDP's IP protocol number.
pub const IPPROTO_UDP: u8 = 17;

/// Where the fields the hash reads sit. The driver has no network stack below it
/// (`xenlet-net` builds on this crate and smoltcp), so rather than a dependency on
/// smoltcp's wire types for four fields, they are named here as smoltcp names them.
mod field {
    use core::ops::Range;

    /// The EtherType in the Ethernet header, and that header's length.
    pub const ETHERTYPE: Range<usize> = 12..14;
    pub const ETH_HEADER: usize = 14;

    /// IPv4 (RFC 791 3.1): version and IHL (in 32-bit words), flags and fragment
    /// offset, protocol, source and destination addresses.
    pub mod ipv4 {
        use super::Range;
        pub const VER_IHL: usize = 0;
        pub const FLG_OFF: Range<usize> = 6..8;
        /// More fragments (0x2000) and the fragment offset (0x1fff).
        pub const MF_AND_OFFSET: u16 = 0x3fff;
        pub const PROTOCOL: usize = 9;
        pub const ADDRS: Range<usize> = 12..20;
        pub const MIN_HEADER: usize = 20;
    }

    /// IPv6 (RFC 8200 3): version, next header, source and destination addresses.
    pub mod ipv6 {
        use super::Range;
        /// The version in the high 4 bits.
        pub const VERSION: usize = 0;
        pub const NXT_HDR: usize = 6;
        pub const ADDRS: Range<usize> = 8..40;
        pub const HEADER: usize = 40;
    }

    /// The source and destination ports, first in a TCP or UDP header.
    pub const PORTS: Range<usize> = 0..4;
}

/// A hash of the flow an Ethernet frame belongs to: the IP protocol, source and
/// destination addresses of an IPv4 or IPv6 packet, and its TCP or UDP ports when it
/// carries them where they are found without parsing further (not in IPv4
/// fragments, whose later pieces have no ports, nor behind IPv6 extension headers).
/// `None` for any other frame (ARP, ...). Only the fields named count, so every
/// frame of one flow hashes alike.
pub fn flow_hash(frame: &[u8]) -> Option<u32> {
    flow_hash_keyed(frame, FNV_OFFSET)
}

/// FNV-1a's offset basis: [`flow_hash`]'s key.
const FNV_OFFSET: u32 = 0x811c_9dc5;

/// [`flow_hash`] with `key` in place of FNV's offset basis: a sender that does not
/// know the key cannot choose flows that share a queue with another's (the router's
/// egress queues take it from the boot's entropy, as fq_codel perturbs its hash).
pub fn flow_hash_keyed(frame: &[u8], key: u32) -> Option<u32> {
    use field::{ipv4, ipv6};
    let ethertype = u16::from_be_bytes(frame.get(field::ETHERTYPE)?.try_into().ok()?);
    let ip = frame.get(field::ETH_HEADER..)?;
    let (proto, addrs, l4) = match ethertype {
        ETHERTYPE_IPV4 => {
            let ver_ihl = *ip.get(ipv4::VER_IHL)?;
            let ihl = usize::from(ver_ihl & 0x0f) * 4;
            if ver_ihl >> 4 != 4 || ihl < ipv4::MIN_HEADER || ip.len() < ihl {
                return None;
            }
            // More-fragments flag or a fragment offset: a piece of a datagram.
            let flg_off = u16::from_be_bytes(ip[ipv4::FLG_OFF].try_into().ok()?);
            let fragment = flg_off & ipv4::MF_AND_OFFSET != 0;
            (
                ip[ipv4::PROTOCOL],
                &ip[ipv4::ADDRS],
                (!fragment).then(|| &ip[ihl..]),
            )
        }
        ETHERTYPE_IPV6 => {
            if ip.len() < ipv6::HEADER || ip[ipv6::VERSION] >> 4 != 6 {
                return None;
            }
            (
                ip[ipv6::NXT_HDR],
                &ip[ipv6::ADDRS],
                Some(&ip[ipv6::HEADER..]),
            )
        }
        _ => return None,
    };
    let ports = match (proto, l4) {
        (IPPROTO_TCP | IPPROTO_UDP, Some(l4)) => l4.get(field::PORTS).unwrap_or(&[]),
        _ => &[],
    };
    // FNV-1a, then a final mix (murmur3's) so that the low bits, which pick the
    // queue, depend on every input bit.
    let mut h: u32 = key;
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
pub fn tx_queue(frame: &[u8], queues: usize) -> usize {
    match flow_hash(frame) {
        Some(h) if queues > 1 => h as usize % queues,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 UDP frame with one 4-byte option (IHL 6) before ports `sport`, 53.
    fn with_option(option: u8, sport: u16) -> [u8; 14 + 24 + 8] {
        let mut f = [0u8; 14 + 24 + 8];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f[14] = 0x46;
        f[14 + 9] = IPPROTO_UDP;
        f[14 + 12..14 + 20].copy_from_slice(&[10, 0, 0, 2, 10, 0, 0, 1]);
        f[14 + 20..14 + 24].copy_from_slice(&[option, 1, 1, 1]);
        f[14 + 24..14 + 26].copy_from_slice(&sport.to_be_bytes());
        f[14 + 26..14 + 28].copy_from_slice(&53u16.to_be_bytes());
        f
    }

    /// The ports are found behind IPv4 options; the options do not count; a header
    /// longer than the frame is not parsed.
    #[test]
    fn ports_behind_ipv4_options() {
        let h = flow_hash(&with_option(1, 1000)).unwrap();
        assert_eq!(flow_hash(&with_option(0x94, 1000)), Some(h));
        assert_ne!(flow_hash(&with_option(1, 1001)), Some(h));
        assert_eq!(flow_hash(&with_option(1, 1000)[..14 + 23]), None);
        assert!(flow_hash(&with_option(1, 1000)[..14 + 24]).is_some());
    }
}
