//! The IPv6 extension header chain (RFC 8200 §4): where the upper-layer header is.
//!
//! [`walk`] follows the next-header values from the fixed header as Linux's
//! `ipv6_skip_exthdr` (`net/ipv6/exthdrs_core.c`) does: hop-by-hop, routing,
//! fragment, destination options and AH are skipped by their lengths; ESP (50) and
//! no-next-header (59) end the walk (nothing after them can be read); any other value
//! is the upper-layer protocol. A fragment that is not the first ends the walk too
//! (its upper header is in another fragment). Every header must lie wholly within the
//! packet (an 8-byte header at least, so the walk is bounded by the packet's length,
//! as Linux's is); a chain that does not is [`ExtError::Truncated`].
//!
//! The hop-by-hop header is the one a router processes (RFC 8200 §4.3): it must come
//! first (Linux's `ipv6_parse_hopopts` is only called there; elsewhere it is a
//! parameter problem), its options are walked within its length, at most
//! [`MAX_OPTS`] of them (Linux's `net.ipv6.max_hbh_opts_number`, 8) and no run of
//! padding longer than 7 bytes (`ip6_parse_tlv`); an unknown option whose action bits
//! say "discard" (RFC 8200 §4.2: anything but `00`) drops the packet. Destination
//! options and routing headers are the destination's business: only their lengths
//! are checked.

use crate::DropReason;

/// Hop-by-hop options.
pub const HOP_BY_HOP: u8 = 0;
/// Routing header.
pub const ROUTING: u8 = 43;
/// Fragment header.
pub const FRAGMENT: u8 = 44;
/// Encapsulating security payload.
pub const ESP: u8 = 50;
/// Authentication header.
pub const AH: u8 = 51;
/// No next header.
pub const NO_NEXT: u8 = 59;
/// Destination options.
pub const DEST_OPTS: u8 = 60;

/// The most options (padding aside) in a hop-by-hop header (Linux's
/// `IP6_DEFAULT_MAX_HBH_OPTS_CNT`).
pub const MAX_OPTS: usize = 8;
/// The longest run of padding in an options header (Linux's `ip6_parse_tlv`).
const MAX_PAD: usize = 7;

/// Why a chain was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtError {
    /// A header runs past the end of the packet.
    Truncated,
    /// A hop-by-hop header that is not the first.
    HopByHopNotFirst,
    /// A hop-by-hop option that is malformed or one too many (Linux drops these
    /// silently).
    BadOption,
    /// An unknown hop-by-hop option whose action bits say discard (RFC 8200 §4.2):
    /// `at` is its offset in the packet; `answer` whether a parameter problem is
    /// due (actions `10`, and `11` unless the destination is multicast).
    UnknownOption {
        /// Offset of the option type from the start of the IPv6 header.
        at: usize,
        /// The action bits (1, 2 or 3).
        action: u8,
    },
}

impl ExtError {
    /// The drop reason it is counted under.
    pub fn reason(self) -> DropReason {
        DropReason::Malformed
    }
}

/// A fragment header's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fragment {
    /// Offset of the fragment in 8-byte units.
    pub offset: u16,
    /// More fragments follow.
    pub more: bool,
    /// Identification.
    pub id: u32,
}

/// Where the walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Upper {
    /// The protocol of what starts at `offset` (TCP 6, UDP 17, ICMPv6 58, ESP 50,
    /// no-next-header 59, ...; for a non-first fragment, the next header its
    /// fragment header names).
    pub proto: u8,
    /// Offset of the upper-layer header from the start of the IPv6 header.
    pub offset: usize,
    /// The fragment header, if there was one.
    pub fragment: Option<Fragment>,
    /// Extension headers skipped.
    pub headers: usize,
}

impl Upper {
    /// Whether the upper-layer header is in this packet (not a later fragment).
    pub fn has_l4(&self) -> bool {
        self.fragment.is_none_or(|f| f.offset == 0) && !matches!(self.proto, ESP | NO_NEXT)
    }
}

/// Walks the chain of `ip` (exactly the packet: header and payload, no padding),
/// whose fixed header says `first` comes next.
pub fn walk(ip: &[u8], first: u8) -> Result<Upper, ExtError> {
    let mut nh = first;
    let mut off = crate::ipv6::HEADER_LEN;
    let mut fragment = None;
    let mut headers = 0;
    loop {
        let len = match nh {
            HOP_BY_HOP | ROUTING | DEST_OPTS => {
                let n = ip.get(off + 1).ok_or(ExtError::Truncated)?;
                (usize::from(*n) + 1) * 8
            }
            AH => {
                let n = ip.get(off + 1).ok_or(ExtError::Truncated)?;
                (usize::from(*n) + 2) * 4
            }
            FRAGMENT => 8,
            _ => {
                return Ok(Upper {
                    proto: nh,
                    offset: off,
                    fragment,
                    headers,
                })
            }
        };
        let hdr = ip.get(off..off + len).ok_or(ExtError::Truncated)?;
        let next = *hdr.first().ok_or(ExtError::Truncated)?;
        match nh {
            HOP_BY_HOP => {
                if off != crate::ipv6::HEADER_LEN {
                    return Err(ExtError::HopByHopNotFirst);
                }
                check_hbh_options(hdr.get(2..).ok_or(ExtError::Truncated)?, off + 2)?;
            }
            FRAGMENT => {
                let fo = u16::from_be_bytes([
                    *hdr.get(2).ok_or(ExtError::Truncated)?,
                    *hdr.get(3).ok_or(ExtError::Truncated)?,
                ]);
                let id = hdr
                    .get(4..8)
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map(u32::from_be_bytes)
                    .ok_or(ExtError::Truncated)?;
                let f = Fragment {
                    offset: fo >> 3,
                    more: fo & 1 != 0,
                    id,
                };
                fragment = Some(f);
                if f.offset != 0 {
                    return Ok(Upper {
                        proto: next,
                        offset: off + len,
                        fragment,
                        headers: headers + 1,
                    });
                }
            }
            _ => {}
        }
        headers += 1;
        off += len;
        nh = next;
    }
}

/// The options of a hop-by-hop header (after its two first bytes, which start at
/// `at` in the packet).
fn check_hbh_options(mut opts: &[u8], mut at: usize) -> Result<(), ExtError> {
    let mut count = 0;
    let mut pad = 0;
    while let Some(&t) = opts.first() {
        let len = if t == 0 {
            1 // Pad1
        } else {
            2 + usize::from(*opts.get(1).ok_or(ExtError::BadOption)?)
        };
        if opts.len() < len {
            return Err(ExtError::BadOption);
        }
        if t == 0 || t == 1 {
            pad += len;
            if pad > MAX_PAD {
                return Err(ExtError::BadOption);
            }
        } else {
            pad = 0;
            count += 1;
            if count > MAX_OPTS {
                return Err(ExtError::BadOption);
            }
            // Router Alert (5) and the experimental/IOAM/CALIPSO options a router may
            // skip carry action 00; an unknown option asking to be discarded is
            // (Linux's `ip6_tlvopt_unknown`, which adds a parameter problem for
            // actions 10 and 11)
            if t >> 6 != 0 {
                return Err(ExtError::UnknownOption { at, action: t >> 6 });
            }
        }
        opts = opts.get(len..).unwrap_or(&[]);
        at += len;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use alloc::vec::Vec;

    /// A fixed header (payload length filled) followed by `rest`.
    fn packet(first: u8, rest: &[u8]) -> Vec<u8> {
        let mut p = alloc::vec![0u8; 40];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&(rest.len() as u16).to_be_bytes());
        p[6] = first;
        p[7] = 64;
        p.extend_from_slice(rest);
        p
    }

    #[test]
    fn the_upper_layer_is_found_after_each_kind_of_header() {
        // HBH (PadN 4) -> routing (8) -> dest opts (8) -> AH (12) -> fragment 0 -> UDP
        let mut rest = Vec::new();
        rest.extend_from_slice(&[ROUTING, 0, 1, 4, 0, 0, 0, 0]);
        rest.extend_from_slice(&[DEST_OPTS, 0, 0, 0, 0, 0, 0, 0]);
        rest.extend_from_slice(&[AH, 0, 1, 4, 0, 0, 0, 0]);
        rest.extend_from_slice(&[FRAGMENT, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        rest.extend_from_slice(&[17, 0, 0, 1, 0, 0, 0, 9]);
        rest.extend_from_slice(&[0; 8]); // UDP header
        let p = packet(HOP_BY_HOP, &rest);
        let u = walk(&p, HOP_BY_HOP).unwrap();
        assert_eq!(u.proto, 17);
        assert_eq!(u.offset, 40 + 8 + 8 + 12 + 8 + 8);
        assert_eq!(u.headers, 5);
        assert_eq!(
            u.fragment,
            Some(Fragment {
                offset: 0,
                more: true,
                id: 9
            })
        );
        assert!(u.has_l4());
    }

    #[test]
    fn esp_no_next_header_and_later_fragments_stop_the_walk() {
        let p = packet(ESP, &[0; 16]);
        let u = walk(&p, ESP).unwrap();
        assert_eq!((u.proto, u.offset), (ESP, 40));
        assert!(!u.has_l4());
        let p = packet(NO_NEXT, &[]);
        assert!(!walk(&p, NO_NEXT).unwrap().has_l4());
        // a second fragment (offset 185 * 8) of a TCP segment: no TCP header in it
        let p = packet(FRAGMENT, &[6, 0, 0x05, 0xc8, 0, 0, 0, 1, 0xaa, 0xbb]);
        let u = walk(&p, FRAGMENT).unwrap();
        assert_eq!(u.proto, 6);
        assert_eq!(u.fragment.unwrap().offset, 185);
        assert!(!u.has_l4());
    }

    #[test]
    fn a_chain_that_runs_past_the_packet_is_refused() {
        // routing header claiming 16 bytes in 8
        let p = packet(ROUTING, &[6, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(walk(&p, ROUTING), Err(ExtError::Truncated));
        // a header whose length byte is missing
        let p = packet(DEST_OPTS, &[6]);
        assert_eq!(walk(&p, DEST_OPTS), Err(ExtError::Truncated));
        // a fragment header cut short
        let p = packet(FRAGMENT, &[6, 0, 0, 0]);
        assert_eq!(walk(&p, FRAGMENT), Err(ExtError::Truncated));
        // a chain of destination options to the very end, never an upper layer
        let mut rest = Vec::new();
        for _ in 0..100 {
            rest.extend_from_slice(&[DEST_OPTS, 0, 1, 4, 0, 0, 0, 0]);
        }
        let p = packet(DEST_OPTS, &rest);
        assert_eq!(walk(&p, DEST_OPTS), Err(ExtError::Truncated));
    }

    #[test]
    fn hop_by_hop_options_are_checked() {
        // must come first
        let p = packet(
            DEST_OPTS,
            &[HOP_BY_HOP, 0, 1, 4, 0, 0, 0, 0, 6, 0, 1, 4, 0, 0, 0, 0],
        );
        assert_eq!(walk(&p, DEST_OPTS), Err(ExtError::HopByHopNotFirst));
        // Router Alert (MLD) is fine
        let p = packet(HOP_BY_HOP, &[58, 0, 5, 2, 0, 0, 1, 0]);
        assert_eq!(walk(&p, HOP_BY_HOP).unwrap().proto, 58);
        // an unknown option with action 01 (discard), after a Pad1
        let p = packet(HOP_BY_HOP, &[58, 0, 0, 0x45, 1, 0, 0, 0]);
        assert_eq!(
            walk(&p, HOP_BY_HOP),
            Err(ExtError::UnknownOption { at: 43, action: 1 })
        );
        // an option running past its header
        let p = packet(HOP_BY_HOP, &[58, 0, 5, 9, 0, 0, 1, 0]);
        assert_eq!(walk(&p, HOP_BY_HOP), Err(ExtError::BadOption));
        // 8 bytes of padding in a row (PadN 6 + Pad1 x2)
        let p = packet(
            HOP_BY_HOP,
            &[58, 1, 1, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        assert_eq!(walk(&p, HOP_BY_HOP), Err(ExtError::BadOption));
        // nine options (type 0x1e, empty) where eight are allowed
        let mut rest = alloc::vec![58, 2];
        for _ in 0..9 {
            rest.extend_from_slice(&[0x1e, 0]);
        }
        rest.extend_from_slice(&[1, 2, 0, 0]);
        let p = packet(HOP_BY_HOP, &rest);
        assert_eq!(walk(&p, HOP_BY_HOP), Err(ExtError::BadOption));
        // eight are fine
        let mut rest = alloc::vec![58, 2];
        for _ in 0..8 {
            rest.extend_from_slice(&[0x1e, 0]);
        }
        rest.extend_from_slice(&[1, 4, 0, 0, 0, 0]);
        let p = packet(HOP_BY_HOP, &rest);
        assert!(walk(&p, HOP_BY_HOP).is_ok());
    }
}
