//! TCP MSS clamping of forwarded SYNs (OpenWrt's per-zone `mtu_fix`).
//!
//! firewall4 (`openwrt/firewall4`, `root/usr/share/firewall4/templates/ruleset.uc`)
//! emits `tcp flags syn / syn,rst tcp option maxseg size set rt mtu` in the mangle
//! forward chain of a zone with `option mtu_fix 1`; Linux's `xt_TCPMSS.c`
//! (`--clamp-mss-to-pmtu`) computes the limit as path MTU − 20 (IPv4) − 20 (TCP).
//! Only a larger MSS option is lowered (nothing is added when the SYN has none). The
//! TCP checksum is updated incrementally (RFC 1624) on the 16-bit words the option
//! value touches, which may be unaligned after a single NOP; for a partial-checksum
//! packet the field holds the pseudo-header sum only, which the option is not part
//! of, so it is left alone.

use crate::checksum;
use crate::flow::tcp_flag;
use crate::ipv4::{self, be16, put16, tcp, PROTO_TCP};

/// TCP option kinds.
const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;

/// The MSS a path MTU allows for IPv4 TCP without options.
pub fn mss_for_mtu(mtu: u16) -> u16 {
    mtu.saturating_sub(40)
}

/// Lowers the MSS option of `ip` (a whole IPv4 packet) to `max_mss` when it is a
/// SYN (or SYN-ACK) whose MSS is larger. Returns the `(old, new)` MSS when changed.
/// Anything that is not a well-formed first-fragment TCP SYN is left untouched.
pub fn clamp(ip: &mut [u8], max_mss: u16, csum_partial: bool) -> Option<(u16, u16)> {
    if ip.get(ipv4::PROTO) != Some(&PROTO_TCP) || ipv4::frag_offset(ip) != 0 {
        return None;
    }
    let hl = ipv4::header_len(ip);
    let seg = ip.get_mut(hl..)?;
    let flags = *seg.get(tcp::FLAGS)?;
    if flags & (tcp_flag::SYN | tcp_flag::RST) != tcp_flag::SYN {
        return None;
    }
    let thl = tcp::header_len(seg)?;
    if thl < tcp::MIN_HEADER_LEN || thl > seg.len() {
        return None;
    }
    // the value, after kind and length
    let at = find_mss(seg.get(tcp::MIN_HEADER_LEN..thl)?)? + tcp::MIN_HEADER_LEN + 2;
    let old = be16(seg, at)?;
    if old <= max_mss {
        return None;
    }
    // the aligned words holding the value, before and after
    let start = at & !1;
    let words = if at.is_multiple_of(2) { 1 } else { 2 };
    let mut before = [0u16; 2];
    for (i, w) in before.iter_mut().enumerate().take(words) {
        *w = be16(seg, start + 2 * i)?;
    }
    put16(seg, at, max_mss);
    if !csum_partial {
        let mut c = be16(seg, tcp::CHECKSUM)?;
        for (i, w) in before.iter().enumerate().take(words) {
            c = checksum::update16(c, *w, be16(seg, start + 2 * i)?);
        }
        put16(seg, tcp::CHECKSUM, c);
    }
    Some((old, max_mss))
}

/// The offset of a well-formed MSS option in `opts` (the TCP options).
fn find_mss(opts: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(&kind) = opts.get(i) {
        match kind {
            OPT_END => return None,
            OPT_NOP => i += 1,
            _ => {
                let len = usize::from(*opts.get(i + 1)?);
                if len < 2 || i + len > opts.len() {
                    return None;
                }
                if kind == OPT_MSS && len == 4 {
                    return Some(i);
                }
                i += len;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::testutil::*;

    fn syn(flags: u8, options: &[u8]) -> alloc::vec::Vec<u8> {
        ipv4(
            A,
            B,
            6,
            64,
            1,
            true,
            &[],
            &tcp(A, B, 40000, 443, 7, flags, options, &[]),
        )
    }

    fn mss_of(ip: &[u8]) -> u16 {
        let at = find_mss(&ip[40..ipv4::header_len(ip) + usize::from(ip[32] >> 4) * 4]).unwrap();
        u16::from_be_bytes([ip[40 + at + 2], ip[40 + at + 3]])
    }

    #[test]
    fn clamps_syn_and_syn_ack_with_valid_checksum() {
        for flags in [SYN, SYN | ACK] {
            // MSS 1460, SACK permitted, timestamps, NOP, window scale (Linux's SYN)
            let opts = [
                2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
            ];
            let mut p = syn(flags, &opts);
            assert!(ipv4::l4_checksum_ok(&p));
            assert_eq!(clamp(&mut p, mss_for_mtu(1400), false), Some((1460, 1360)));
            assert_eq!(mss_of(&p), 1360);
            assert!(ipv4::l4_checksum_ok(&p), "checksum after clamp");
            assert_eq!(clamp(&mut p, 1360, false), None, "already small enough");
        }
    }

    #[test]
    fn unaligned_option_checksum() {
        // NOP, MSS at an odd offset, then NOP NOP NOP pad
        let opts = [1, 2, 4, 0x23, 0x28, 1, 1, 1];
        let mut p = syn(SYN, &opts);
        assert_eq!(clamp(&mut p, 1000, false), Some((9000, 1000)));
        assert_eq!(mss_of(&p), 1000);
        assert!(ipv4::l4_checksum_ok(&p));
    }

    #[test]
    fn partial_checksum_left_alone() {
        let mut p = syn(SYN, &[2, 4, 0x05, 0xb4]);
        let before = [p[36], p[37]];
        assert!(clamp(&mut p, 1200, true).is_some());
        assert_eq!([p[36], p[37]], before);
        assert_eq!(mss_of(&p), 1200);
    }

    #[test]
    fn not_syn_or_rst_or_no_option_untouched() {
        for (flags, opts) in [
            (ACK, &[2u8, 4, 0x05, 0xb4][..]),
            (SYN | RST, &[2, 4, 0x05, 0xb4]),
            (SYN, &[1, 1, 1, 0]),
            (SYN, &[2, 3, 0x05, 0xb4]), // bad length
            (SYN, &[3, 9, 0, 0]),       // option runs past the header
        ] {
            let mut p = syn(flags, opts);
            let orig = p.clone();
            assert_eq!(clamp(&mut p, 536, false), None);
            assert_eq!(p, orig);
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = Rng(0x5eed_0001);
        let base = syn(SYN, &[2, 4, 0x05, 0xb4, 1, 3, 3, 7]);
        for _ in 0..5000 {
            let mut p = base.clone();
            rng.mangle(&mut p, 4, 0, base.len());
            let _ = clamp(&mut p, rng.below(2000) as u16, rng.next() & 1 == 0);
        }
    }
}
