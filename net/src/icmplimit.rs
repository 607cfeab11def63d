//! Rate limits on the ICMP errors the router's own stack sends, as Linux limits its
//! own (`icmpv4_xrlim_allow`, `icmpv6_xrlim_allow`): each destination gets six at
//! once and then one a second (`icmp_ratelimit` 1000 ms, `XRLIM_BURST_FACTOR`), and
//! all of them together at most 1,000 a second with 50 saved up
//! (`icmp_msgs_per_sec`, `icmp_msgs_burst`). The limited kinds are Linux's
//! `icmp_ratemask` (destination unreachable, source quench, time exceeded,
//! parameter problem) and ICMPv6's errors; a fragmentation-needed or packet-too-big
//! is never limited (path MTU discovery depends on it), nor is anything else the
//! stack sends.
//!
//! smoltcp answers every datagram to a closed port with a port unreachable: without
//! this a client flooding the router's address made it build, switch and copy one
//! reply per datagram into the flooder's ring, and the flooder take them in (on the
//! bed, 64,157 replies to 65,708 datagrams in 9 s). The forwarding path's errors
//! have their own limits in the router (`xenlet_router::icmp_error`), which this
//! reuses.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use xenlet_router::icmp_error::{PeerLimiter, RateLimiter};
use xenlet_router::Millis;

/// All the stack's limited ICMP errors: at most this many a second ...
pub const PER_SEC: u32 = 1000;
/// ... with this many saved up (Linux's `icmp_msgs_burst`).
pub const BURST: u32 = 50;

/// The limits of one link.
#[derive(Clone, Debug)]
pub struct IcmpLimit {
    all: RateLimiter,
    /// Made at the first limited error (a link that never sends one has no table).
    peers: Option<PeerLimiter>,
    seed: u32,
    now: Millis,
    /// Errors not sent because of the limits.
    pub limited: u64,
}

impl IcmpLimit {
    /// No errors sent yet; `seed` keys the per-destination table.
    pub fn new(seed: u32) -> Self {
        IcmpLimit {
            all: RateLimiter::new(PER_SEC, BURST),
            peers: None,
            seed,
            now: 0,
            limited: 0,
        }
    }

    /// The time the next frames are sent at (ms; the data plane's poll sets it).
    pub fn set_now(&mut self, now: Millis) {
        self.now = now;
    }

    /// Whether `frame` may be sent: anything but a limited ICMP error, or one
    /// within its destination's allowance and the total's. One not allowed is
    /// counted in [`IcmpLimit::limited`].
    pub fn allow(&mut self, frame: &[u8]) -> bool {
        let Some(peer) = limited_error_to(frame) else {
            return true;
        };
        let now = self.now;
        let seed = self.seed;
        let peers = self.peers.get_or_insert_with(|| PeerLimiter::new(seed));
        // the destination's allowance first: a peer past its own does not use up
        // everybody's
        if peers.allow(peer, now) && self.all.allow(now) {
            return true;
        }
        self.limited += 1;
        false
    }
}

/// The destination of `frame` if it is an ICMP or ICMPv6 error of a limited kind.
fn limited_error_to(frame: &[u8]) -> Option<IpAddr> {
    let ip = frame.get(14..)?;
    match frame.get(12..14)? {
        [0x08, 0x00] => {
            let hl = usize::from(ip.first()? & 0x0f) * 4;
            if ip.first()? >> 4 != 4 || hl < 20 || *ip.get(9)? != 1 {
                return None;
            }
            let (kind, code) = (*ip.get(hl)?, *ip.get(hl + 1)?);
            let limited = match kind {
                3 => code != 4, // fragmentation needed: never
                4 | 11 | 12 => true,
                _ => false,
            };
            let dst: [u8; 4] = ip.get(16..20)?.try_into().ok()?;
            limited.then_some(IpAddr::V4(Ipv4Addr::from(dst)))
        }
        [0x86, 0xdd] => {
            // an error straight after the fixed header (the stack adds no
            // extension headers): destination unreachable, time exceeded,
            // parameter problem; packet too big never
            if ip.first()? >> 4 != 6 || *ip.get(6)? != 58 {
                return None;
            }
            let dst: [u8; 16] = ip.get(24..40)?.try_into().ok()?;
            matches!(ip.get(40)?, 1 | 3 | 4).then_some(IpAddr::V6(Ipv6Addr::from(dst)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// An Ethernet frame of an IPv4 ICMP message `kind`/`code` to `dst`.
    fn icmp4(kind: u8, code: u8, dst: [u8; 4]) -> Vec<u8> {
        let mut f = alloc::vec![0u8; 14 + 20 + 36];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[14 + 9] = 1;
        f[14 + 12..14 + 16].copy_from_slice(&[192, 168, 1, 1]);
        f[14 + 16..14 + 20].copy_from_slice(&dst);
        f[34] = kind;
        f[35] = code;
        f
    }

    /// An Ethernet frame of an ICMPv6 message `kind` to `2001:db8::<last>`.
    fn icmp6(kind: u8, last: u8) -> Vec<u8> {
        let mut f = alloc::vec![0u8; 14 + 40 + 48];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[14 + 6] = 58;
        f[14 + 24..14 + 26].copy_from_slice(&[0x20, 0x01]);
        f[14 + 26..14 + 28].copy_from_slice(&[0x0d, 0xb8]);
        f[14 + 39] = last;
        f[54] = kind;
        f
    }

    /// How many of `n` copies of `frame` sent at `now` pass.
    fn passed(l: &mut IcmpLimit, frame: &[u8], n: usize) -> usize {
        (0..n).filter(|_| l.allow(frame)).count()
    }

    /// A flood of datagrams to a closed port from one host: six port unreachables
    /// at once, then one a second, the rest counted.
    #[test]
    fn one_destination_gets_six_then_one_a_second() {
        let mut l = IcmpLimit::new(1);
        l.set_now(10_000);
        let unreachable = icmp4(3, 3, [192, 168, 1, 226]);
        assert_eq!(passed(&mut l, &unreachable, 1000), 6);
        assert_eq!(l.limited, 994);
        l.set_now(10_500);
        assert_eq!(passed(&mut l, &unreachable, 100), 0, "half a second: none");
        l.set_now(11_000);
        assert_eq!(passed(&mut l, &unreachable, 100), 1);
        // another host is not held back by the first one's flood
        assert_eq!(passed(&mut l, &icmp4(11, 0, [192, 168, 1, 225]), 3), 3);
        assert_eq!(passed(&mut l, &icmp6(1, 7), 10), 6, "IPv6 alike");
    }

    /// Never limited: fragmentation needed, packet too big, echo replies, anything
    /// that is not an ICMP error.
    #[test]
    fn what_path_mtu_discovery_needs_and_non_errors_always_pass() {
        let mut l = IcmpLimit::new(1);
        l.set_now(5_000);
        let dst = [10, 0, 0, 9];
        assert_eq!(passed(&mut l, &icmp4(3, 4, dst), 500), 500, "frag needed");
        assert_eq!(passed(&mut l, &icmp6(2, 9), 500), 500, "packet too big");
        assert_eq!(passed(&mut l, &icmp4(0, 0, dst), 500), 500, "echo reply");
        assert_eq!(passed(&mut l, &icmp6(129, 9), 500), 500, "echo reply (v6)");
        let mut udp = icmp4(3, 3, dst);
        udp[14 + 9] = 17;
        assert_eq!(passed(&mut l, &udp, 500), 500, "UDP");
        assert_eq!(passed(&mut l, &[0u8; 20], 5), 5, "a runt");
        assert_eq!(l.limited, 0);
    }

    /// Many destinations at once: no more than the total's burst and rate.
    #[test]
    fn all_destinations_together_are_held_to_a_thousand_a_second() {
        let mut l = IcmpLimit::new(3);
        l.set_now(1_000);
        let mut ok = 0;
        for i in 0..200u8 {
            ok += passed(&mut l, &icmp4(3, 1, [10, 1, 0, i]), 1);
        }
        assert_eq!(ok as u32, BURST);
        l.set_now(1_010); // 10 ms: ten more
        let mut ok = 0;
        for i in 0..200u8 {
            ok += passed(&mut l, &icmp4(3, 1, [10, 2, 0, i]), 1);
        }
        assert_eq!(ok, 10);
    }
}
