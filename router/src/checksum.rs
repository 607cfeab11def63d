//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Forwarding rewrites a few 16-bit words of a packet (TTL, an address, a port);
//! RFC 1624's `HC' = ~(~HC + ~m + m')` updates the checksum from the old and new words
//! without reading the rest of the packet, which also keeps a `csum_blank` packet's
//! partial (pseudo-header) sum right.

/// One's-complement sum of `data` added to `sum`, not yet folded or inverted.
pub fn sum(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([c[0], c[1]])));
        // keep the carry bits from overflowing on huge inputs
        if sum >= 0x8000_0000 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    if let [b] = chunks.remainder() {
        sum = sum.wrapping_add(u32::from(*b) << 8);
    }
    sum
}

/// Folds a sum to 16 bits (end-around carry).
#[inline]
pub fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The checksum of `data`: the complement of its folded one's-complement sum.
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(0, data))
}

/// Whether an IPv4 header (its whole `ihl * 4` bytes) carries a valid checksum: its
/// one's-complement sum is all ones. Summed by 32-bit words into 64 bits and folded
/// once (RFC 1071 section 2: the sum is independent of the word size), as every
/// forwarded packet asks.
#[inline]
pub fn header_ok(hdr: &[u8]) -> bool {
    // the usual header, without options, in five words
    if let Ok(h) = <&[u8; 20]>::try_from(hdr) {
        let w = |i: usize| u64::from(u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
        let s = w(0) + w(4) + w(8) + w(12) + w(16);
        let s = (s & 0xffff_ffff) + (s >> 32);
        let s = (s & 0xffff) + (s >> 16);
        return fold(s as u32) == 0xffff;
    }
    let mut words = hdr.chunks_exact(4);
    let mut s = 0u64;
    for w in &mut words {
        s += u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    }
    // a header is a whole number of 32-bit words; anything else is summed as sum() does
    let s = (s & 0xffff_ffff) + (s >> 32);
    let s = (s & 0xffff) + (s >> 16);
    let s = match words.remainder() {
        [] => s as u32,
        rest => sum(s as u32, rest),
    };
    fold(s) == 0xffff
}

/// RFC 1624 eqn. 3: the checksum `hc` after a 16-bit word changed from `old` to `new`.
#[inline]
pub fn update16(hc: u16, old: u16, new: u16) -> u16 {
    let s = u32::from(!hc) + u32::from(!old) + u32::from(new);
    !fold(s)
}

/// The checksum `hc` after a 32-bit field (an IPv4 address) changed.
#[inline]
pub fn update32(hc: u16, old: [u8; 4], new: [u8; 4]) -> u16 {
    let hc = update16(
        hc,
        u16::from_be_bytes([old[0], old[1]]),
        u16::from_be_bytes([new[0], new[1]]),
    );
    update16(
        hc,
        u16::from_be_bytes([old[2], old[3]]),
        u16::from_be_bytes([new[2], new[3]]),
    )
}

/// A *partial* checksum field (the pseudo-header sum a `csum_blank`/GSO packet
/// carries, not inverted) after a 32-bit field of the pseudo-header changed.
#[inline]
pub fn update32_partial(partial: u16, old: [u8; 4], new: [u8; 4]) -> u16 {
    // the field holds the folded sum itself: update the sum, no complements
    !update32(!partial, old, new)
}

/// A partial checksum field after a 16-bit word of the pseudo-header changed.
pub fn update16_partial(partial: u16, old: u16, new: u16) -> u16 {
    !update16(!partial, old, new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(0, &d)), 0xddf2);
        assert_eq!(checksum(&d), !0xddf2);
    }

    #[test]
    fn header_ok_agrees_with_checksum() {
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7, 0x94, 0x04, 0x00, 0x00,
        ];
        assert!(!header_ok(&h), "checksum field still zero");
        let c = checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert!(header_ok(&h));
        // every single-bit corruption is caught
        for bit in 0..h.len() * 8 {
            let mut b = h;
            b[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(header_ok(&b), checksum(&b) == 0, "bit {bit}");
            assert!(!header_ok(&b), "bit {bit}");
        }
        // sums that carry out of 32 and 16 bits: all-ones words
        let ones = [0xff; 60];
        assert_eq!(header_ok(&ones), checksum(&ones) == 0);
        assert_eq!(header_ok(&ones[..22]), checksum(&ones[..22]) == 0);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(0, &[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    #[test]
    fn incremental_matches_recompute() {
        // an IPv4 header (from RFC 1071's companion examples), checksum field zeroed
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let c = checksum(&h);
        assert_eq!(c, 0xb861);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(checksum(&h), 0, "a header with its checksum sums to zero");
        // TTL 64 -> 63: word 8..10 changes
        let old = u16::from_be_bytes([h[8], h[9]]);
        h[8] -= 1;
        let new = u16::from_be_bytes([h[8], h[9]]);
        let inc = update16(c, old, new);
        h[10..12].copy_from_slice(&[0, 0]);
        assert_eq!(inc, checksum(&h));
        // source address rewrite
        h[10..12].copy_from_slice(&inc.to_be_bytes());
        let old_a = [h[12], h[13], h[14], h[15]];
        let new_a = [203, 0, 113, 9];
        h[12..16].copy_from_slice(&new_a);
        let inc = update32(inc, old_a, new_a);
        h[10..12].copy_from_slice(&[0, 0]);
        assert_eq!(inc, checksum(&h));
    }

    #[test]
    fn incremental_never_yields_minus_zero_wrongly() {
        // exhaustive over a word's values against recomputation on a 4-byte buffer
        for new in (0u16..=0xffff).step_by(97) {
            let mut d = [0xab, 0xcd, 0x12, 0x34];
            let c = checksum(&d);
            d[0..2].copy_from_slice(&new.to_be_bytes());
            assert_eq!(
                update16(c, 0xabcd, new),
                checksum(&d),
                "word 0xabcd -> {new:#06x}"
            );
        }
    }

    #[test]
    fn partial_update_matches_pseudo_header_sum() {
        let src = [10, 0, 0, 2];
        let dst = [192, 0, 2, 1];
        let pseudo = |s: [u8; 4]| fold(sum(sum(0, &s), &dst) + 6 + 40);
        let p = pseudo(src);
        let new = [198, 51, 100, 7];
        assert_eq!(update32_partial(p, src, new), pseudo(new));
    }
}
