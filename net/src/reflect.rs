//! The reflector: a link's raw cost, measured from outside (`bench net`'s
//! reflector row, issue 34's "raw netback <-> netfront cost").
//!
//! `reflect IFACE on` makes an interface send every unicast frame addressed to its
//! MAC straight back where it came from (destination and source MAC swapped, the
//! rest untouched) before the stack sees it: a packet generator in dom0 (pktgen)
//! then measures what one vif's round trip through netback and netfront costs with
//! no stack, router or application in the way, the ceiling of any packet path
//! through the domain. Broadcast and multicast frames (ARP, neighbour discovery) go
//! to the stack as before, so the interface keeps its address; a routed interface
//! (the router's) refuses: its frames belong to the router.

use crate::link::Link;
use crate::NetStack;
use alloc::format;
use alloc::string::String;
use core::fmt::Write;

/// What a reflecting interface did: frames sent back, and frames it could not send
/// back (the link refused: full ring, broken), which are dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reflector {
    /// Whether frames are reflected.
    pub on: bool,
    /// Frames sent back.
    pub reflected: u64,
    /// Frames that could not be sent back (dropped).
    pub failed: u64,
}

/// Turns `frame` back to its sender if it is a unicast Ethernet frame to `mac`:
/// swaps its destination and source MAC. Whether it did (a frame too short for an
/// Ethernet header, or to another, broadcast or multicast address, is left alone).
pub fn bounce(frame: &mut [u8], mac: [u8; 6]) -> bool {
    let Some(head) = frame.get_mut(..12) else {
        return false;
    };
    if head[..6] != mac || head[0] & 1 != 0 {
        return false;
    }
    let (dst, src) = head.split_at_mut(6);
    dst.swap_with_slice(src);
    true
}

/// `reflect IFACE [on|off]`: turns the reflector of IFACE on or off, then prints
/// its state and counters.
pub fn command<L: Link>(
    stack: &mut NetStack<L>,
    args: &[&str],
    out: &mut String,
) -> Result<(), String> {
    let (name, set) = match args {
        [name] => (*name, None),
        [name, "on"] => (*name, Some(true)),
        [name, "off"] => (*name, Some(false)),
        _ => return Err(String::from("usage: reflect IFACE [on|off]")),
    };
    let n = stack
        .ifs
        .iter_mut()
        .find(|n| n.name == name)
        .ok_or_else(|| format!("reflect: {name}: no such interface"))?;
    if let Some(on) = set {
        n.link
            .set_reflect(on)
            .map_err(|e| format!("reflect: {name}: {e}"))?;
    }
    let r = n
        .link
        .reflector()
        .ok_or_else(|| format!("reflect: {name}: not supported by this link"))?;
    let _ = writeln!(
        out,
        "{name}: reflect {}, {} frames reflected, {} not sent back",
        if r.on { "on" } else { "off" },
        r.reflected,
        r.failed
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: [u8; 6] = [0x00, 0x16, 0x3e, 0, 0, 1];
    const PEER: [u8; 6] = [0x02, 0, 0, 0, 0, 9];

    fn frame(dst: [u8; 6], src: [u8; 6]) -> alloc::vec::Vec<u8> {
        let mut f = alloc::vec::Vec::new();
        f.extend_from_slice(&dst);
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 20]);
        f
    }

    #[test]
    fn unicast_to_us_goes_back_with_its_payload_untouched() {
        let mut f = frame(US, PEER);
        assert!(bounce(&mut f, US));
        assert_eq!(f[..6], PEER);
        assert_eq!(f[6..12], US);
        assert_eq!(f[12..], [0x08, 0x00, 0x45, 0, 0, 20]);
    }

    #[test]
    fn others_are_left_alone() {
        let other = [0x00, 0x16, 0x3e, 0, 0, 2];
        for (mut f, why) in [
            (frame(other, PEER), "another host's"),
            (frame([0xff; 6], PEER), "broadcast"),
            (frame([0x33, 0x33, 0, 0, 0, 1], PEER), "multicast"),
            (US.to_vec(), "shorter than a header"),
            (alloc::vec::Vec::new(), "empty"),
        ] {
            let before = f.clone();
            assert!(!bounce(&mut f, US), "{why}");
            assert_eq!(f, before, "{why}");
        }
    }
}
