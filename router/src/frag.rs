//! IPv4 fragmentation of forwarded packets larger than the next hop's MTU.
//!
//! RFC 791 §3.2 "Fragmentation" and §3.1 (options with the *copied* flag go in every
//! fragment, the others only in the first), RFC 1812 §4.2.2.7/§5.2.6, as Linux's
//! `ip_do_fragment`/`ip_options_fragment` (`net/ipv4/ip_output.c`,
//! `ip_options.c`): every fragment but the last carries a multiple of 8 data bytes,
//! keeps the identification, gets MF set (the last one keeps the original's MF, so a
//! fragment can be fragmented again), and its own header checksum. Fragments are
//! built one at a time in a caller's preallocated buffer and handed to `emit`.

use crate::ipv4::{self, put16};
use crate::link::ETH_LEN;
use crate::DropReason;

/// IPv4 option types (RFC 791).
const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
/// The "copied" flag of an option type.
const OPT_COPIED: u8 = 0x80;

/// Splits `frame` (Ethernet header and exactly one IPv4 packet) into fragments of at
/// most `mtu` IP bytes, each written to `buf` (Ethernet header copied) and passed to
/// `emit`. Stops at the first error `emit` returns. The caller has checked the header
/// (`Ipv4Packet::new_checked`) and that DF is clear.
pub fn fragment(
    frame: &[u8],
    mtu: u16,
    buf: &mut [u8],
    mut emit: impl FnMut(&mut [u8]) -> Result<(), DropReason>,
) -> Result<(), DropReason> {
    let ip = frame.get(ETH_LEN..).ok_or(DropReason::Malformed)?;
    let hl = ipv4::header_len(ip);
    let header = ip.get(..hl).ok_or(DropReason::Malformed)?;
    let data = ip.get(hl..).ok_or(DropReason::Malformed)?;
    let orig_off = ipv4::frag_offset(ip);
    let orig_mf = ipv4::be16(ip, ipv4::FRAG).ok_or(DropReason::Malformed)? & ipv4::MF != 0;
    if orig_off + data.len() > 0xffff {
        return Err(DropReason::Malformed);
    }

    // the header of the second and later fragments: fixed part + copied options
    let mut later = [0u8; 60];
    let later_len = later_header(header, &mut later)?;

    let mtu = usize::from(mtu);
    let mut off = 0;
    while off < data.len() || (off == 0 && data.is_empty()) {
        let hdr = if off == 0 {
            header
        } else {
            later.get(..later_len).ok_or(DropReason::Malformed)?
        };
        let room = mtu.checked_sub(hdr.len()).ok_or(DropReason::TooBig)? & !7;
        if room == 0 {
            return Err(DropReason::TooBig);
        }
        let n = room.min(data.len() - off);
        let is_last = off + n == data.len();
        let total = hdr.len() + n;
        let out = buf.get_mut(..ETH_LEN + total).ok_or(DropReason::TooBig)?;
        let (eth, rest) = out.split_at_mut(ETH_LEN);
        eth.copy_from_slice(frame.get(..ETH_LEN).ok_or(DropReason::Malformed)?);
        let (h, d) = rest.split_at_mut(hdr.len());
        h.copy_from_slice(hdr);
        d.copy_from_slice(data.get(off..off + n).ok_or(DropReason::Malformed)?);
        put16(
            h,
            ipv4::TOTAL_LEN,
            u16::try_from(total).map_err(|_| DropReason::Malformed)?,
        );
        let units = u16::try_from((orig_off + off) / 8).map_err(|_| DropReason::Malformed)?;
        let mf = if !is_last || orig_mf { ipv4::MF } else { 0 };
        put16(h, ipv4::FRAG, units | mf);
        ipv4::fill_header_checksum(h);
        emit(out)?;
        off += n;
        if data.is_empty() {
            break;
        }
    }
    Ok(())
}

/// Writes into `out` the header of non-first fragments: `header`'s fixed 20 bytes and
/// its options that have the copied flag, padded with END to 4 bytes, IHL updated.
fn later_header(header: &[u8], out: &mut [u8; 60]) -> Result<usize, DropReason> {
    let fixed = header.get(..20).ok_or(DropReason::Malformed)?;
    let opts = header.get(20..).ok_or(DropReason::Malformed)?;
    out.get_mut(..20)
        .ok_or(DropReason::Malformed)?
        .copy_from_slice(fixed);
    let mut len = 20;
    let mut i = 0;
    while let Some(&kind) = opts.get(i) {
        match kind {
            OPT_END => break,
            OPT_NOP => i += 1,
            _ => {
                let olen = usize::from(*opts.get(i + 1).ok_or(DropReason::Malformed)?);
                let opt = opts
                    .get(i..i + olen)
                    .filter(|_| olen >= 2)
                    .ok_or(DropReason::Malformed)?;
                if kind & OPT_COPIED != 0 {
                    out.get_mut(len..len + olen)
                        .ok_or(DropReason::Malformed)?
                        .copy_from_slice(opt);
                    len += olen;
                }
                i += olen;
            }
        }
    }
    let padded = (len + 3) & !3;
    out.get_mut(len..padded)
        .ok_or(DropReason::Malformed)?
        .fill(OPT_END);
    if let Some(b) = out.first_mut() {
        *b = 0x40 | u8::try_from(padded / 4).map_err(|_| DropReason::Malformed)?;
    }
    Ok(padded)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::testutil::*;
    use alloc::vec::Vec;

    fn frags(frame: &[u8], mtu: u16) -> Vec<Vec<u8>> {
        let mut buf = alloc::vec![0u8; 9000];
        let mut v = Vec::new();
        fragment(frame, mtu, &mut buf, |f| {
            v.push(f.to_vec());
            Ok(())
        })
        .unwrap();
        v
    }

    /// Reassembles fragments (Ethernet headers included) into (header of first, data).
    fn reassemble(fs: &[Vec<u8>]) -> Vec<u8> {
        let mut data = Vec::new();
        for (i, f) in fs.iter().enumerate() {
            let ip = &f[14..];
            assert!(header_ok(ip), "fragment {i} header checksum");
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            assert_eq!(total, ip.len());
            let off = ipv4::frag_offset(ip);
            let mf = ip[6] & 0x20 != 0;
            assert_eq!(mf, i + 1 < fs.len(), "MF on all but the last");
            assert_eq!(off, data.len(), "fragment {i} offset");
            let hl = ipv4::header_len(ip);
            if mf {
                assert_eq!((total - hl) % 8, 0);
            }
            data.extend_from_slice(&ip[hl..]);
        }
        data
    }

    #[test]
    fn fragments_reassemble_to_the_payload() {
        let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7 + 3) as u8).collect();
        let u = udp(A, B, 5000, 6000, &payload);
        let p = ipv4(A, B, 17, 63, 0xbeef, false, &[], &u);
        let f = eth([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1], 0x0800, &p);
        let fs = frags(&f, 1280);
        assert_eq!(fs.len(), 3);
        for x in &fs {
            assert!(x.len() - 14 <= 1280);
            assert_eq!(&x[..14], &f[..14]);
            assert_eq!(&x[14 + 4..14 + 6], &[0xbe, 0xef], "same id");
            assert_eq!(x[14 + 8], 63, "same TTL");
        }
        assert_eq!(reassemble(&fs), u);
        assert!(ipv4::l4_checksum_ok(&ipv4(
            A,
            B,
            17,
            1,
            0,
            false,
            &[],
            &reassemble(&fs)
        )));
    }

    #[test]
    fn only_copied_options_in_later_fragments() {
        // a copied option (0x83 loose source route, len 7, pointer 4, one address)
        // padded with END, then a not-copied one (0x07 record route len 7) + NOP
        let opts = [0x83, 7, 4, 10, 0, 0, 1, 0x07, 7, 4, 0, 0, 0, 0, 1, 0];
        let payload = [0x5a; 200];
        let p = ipv4(A, B, 17, 64, 7, false, &opts, &payload);
        let f = eth([2; 6], [4; 6], 0x0800, &p);
        let fs = frags(&f, 100);
        assert!(fs.len() > 2);
        assert_eq!(
            ipv4::header_len(&fs[0][14..]),
            36,
            "first keeps all options"
        );
        for x in &fs[1..] {
            let ip = &x[14..];
            assert_eq!(ipv4::header_len(ip), 28);
            assert_eq!(&ip[20..28], &[0x83, 7, 4, 10, 0, 0, 1, 0]);
        }
        assert_eq!(reassemble(&fs), payload);
    }

    #[test]
    fn refragmenting_a_fragment_keeps_offsets_and_mf() {
        let payload = [1u8; 1000];
        let mut p = ipv4(A, B, 17, 64, 9, false, &[], &payload);
        // a middle fragment: offset 800 bytes, MF set
        p[6] = 0x20;
        p[7] = 100;
        ipv4::fill_header_checksum(&mut p);
        let f = eth([2; 6], [4; 6], 0x0800, &p);
        let fs = frags(&f, 600);
        assert_eq!(fs.len(), 2);
        assert_eq!(ipv4::frag_offset(&fs[0][14..]), 800);
        assert_eq!(ipv4::frag_offset(&fs[1][14..]), 800 + 576);
        assert!(
            fs.iter().all(|x| x[14 + 6] & 0x20 != 0),
            "MF kept on the last"
        );
    }

    #[test]
    fn emit_error_stops() {
        let p = ipv4(A, B, 17, 64, 9, false, &[], &[0; 3000]);
        let f = eth([2; 6], [4; 6], 0x0800, &p);
        let mut buf = [0u8; 1600];
        let mut n = 0;
        let r = fragment(&f, 1000, &mut buf, |_| {
            n += 1;
            Err(DropReason::TxFull)
        });
        assert_eq!((r, n), (Err(DropReason::TxFull), 1));
    }

    #[test]
    fn hostile_headers_never_panic() {
        let mut rng = Rng(0xf4a9);
        let p = ipv4(
            A,
            B,
            17,
            64,
            9,
            false,
            &[0x83, 7, 4, 1, 2, 3, 4, 1],
            &[7; 700],
        );
        let base = eth([2; 6], [4; 6], 0x0800, &p);
        let mut buf = alloc::vec![0u8; 2000];
        for _ in 0..5000 {
            let mut f = base.clone();
            rng.mangle(&mut f, 3, 14, 28);
            let mtu = 68 + rng.below(1000) as u16;
            let _ = fragment(&f, mtu, &mut buf, |x| {
                assert!(x.len() <= 14 + usize::from(mtu));
                Ok(())
            });
        }
    }
}
