//! Xenlet's router: the IPv4 (and, once it has an IPv6 route, IPv6: see
//! `forward/v6.rs`) data path that sits in front of smoltcp.
//!
//! smoltcp is an end host: it drops what is not addressed to it. Frames for the
//! router itself (its addresses, broadcast, DHCP, DNS) still go to smoltcp; everything
//! else is forwarded here, edited in place in the buffer it arrived in, with no
//! allocation per packet and tables whose size is fixed when they are built.
//!
//! The path of a forwarded IPv4 packet, in the order Linux's netfilter hooks run:
//! `prerouting` (conntrack lookup, reverse NAT of replies and port forwards), routing
//! (longest-prefix match), TTL, `postrouting` (new flows, masquerade), MTU (ICMP
//! fragmentation-needed or fragmentation), neighbour resolution, transmit. The
//! conntrack/NAT stages are behind the [`L4Hook`] trait so the forwarding core can be
//! tested alone.
//!
//! Time is a plain millisecond count ([`Millis`]) passed in by the caller: the crate
//! never reads a clock.

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

// Host tests measure their heap: each thread's live bytes and high-water mark.
#[cfg(test)]
xenlet_testalloc::count_test_heap!();

/// Declares the modules that parse what other hosts send (the DHCP, DHCPv6, DNS and
/// RA servers and clients): outside tests they may not index, unwrap, expect or
/// panic, so that no message can stop the router.
macro_rules! untrusted_input_modules {
    ($($name:ident),*) => {
        $(
            #[cfg_attr(
                not(test),
                deny(
                    clippy::indexing_slicing,
                    clippy::unwrap_used,
                    clippy::expect_used,
                    clippy::panic
                )
            )]
            pub mod $name;
        )*
    };
}

pub mod checksum;
pub mod conntrack;
pub mod defrag;
untrusted_input_modules!(dhcp6c, dhcp6d, dhcpd, dns, ra);
pub mod exthdr;
pub mod firewall;
pub mod flow;
pub mod flow6;
pub mod forward;
pub mod frag;
pub mod fragcache6;
pub mod fraghold6;
pub mod gso;
pub mod gso6;
pub mod icmp_error;
pub mod icmpv6_error;
pub mod iface;
mod index;
mod ipnet;
pub mod ipv4;
pub mod ipv6;
mod link;
pub mod mss;
pub mod nat;
pub mod ndp;
pub mod neigh;
pub mod netfilter;
mod rewrite;
pub mod route;
pub mod route6;
pub mod stats;
#[cfg(test)]
mod testutil;

/// Milliseconds on a monotonic clock the caller owns.
pub type Millis = u64;

/// An interface of the router, by its index in the router's interface table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IfId(pub u8);

/// What the connection-tracking/NAT stage says of a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookVerdict {
    /// Go on (the packet may have been rewritten in place).
    Accept,
    /// Drop it, counted under this reason.
    Drop(DropReason),
    /// Refused by the firewall with an answer (firewall4's `handle_reject`): the core
    /// sends a TCP reset for TCP, an ICMP port-unreachable for the rest, back out the
    /// input interface, and drops the packet as [`DropReason::Filtered`].
    Reject,
}

impl HookVerdict {
    /// Go on (`Ok`), or why the packet is dropped: a Drop's own reason,
    /// [`DropReason::Filtered`] for a Reject (where no answer is sent).
    pub fn result(self) -> Result<(), DropReason> {
        match self {
            HookVerdict::Accept => Ok(()),
            HookVerdict::Drop(r) => Err(r),
            HookVerdict::Reject => Err(DropReason::Filtered),
        }
    }

    /// [`HookVerdict::result`], a Reject answered first by `reject`.
    pub fn or_reject(self, reject: impl FnOnce()) -> Result<(), DropReason> {
        if self == HookVerdict::Reject {
            reject();
        }
        self.result()
    }
}

/// Why a packet was dropped: every drop is counted under one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropReason {
    /// Shorter than its headers say, bad version or header length, or bad header checksum.
    Malformed,
    /// TTL ran out (an ICMP time-exceeded was sent when the rate limit allowed).
    TtlExpired,
    /// No route to the destination.
    NoRoute,
    /// Larger than the next hop's MTU with DF set (ICMP fragmentation-needed sent).
    TooBig,
    /// The neighbour did not answer ARP, or its wait queue was full.
    NoNeighbour,
    /// The connection-tracking table is full and nothing could be evicted.
    ConntrackFull,
    /// Not valid for the connection it belongs to (e.g. a TCP segment for no known
    /// flow that is not a SYN, on its way to a masquerading zone).
    Invalid,
    /// No free port/ID for the NAT mapping.
    NatExhausted,
    /// Refused by the firewall.
    Filtered,
    /// The output link had no room.
    TxFull,
    /// Not IPv4, IPv6 or ARP, an offload the core cannot handle (GSO of anything
    /// but TCP over IPv4), or an IPv6 jumbogram.
    Unsupported,
    /// A martian: a source that can never be valid on the wire (0/8, 127/8, 224/4,
    /// 255.255.255.255, a connected subnet's broadcast) or a destination that must not
    /// be forwarded (0/8, 127/8, 240/4, a directed broadcast to another subnet), as
    /// Linux's `ip_route_input_slow` "martian source/destination" (RFC 1812 §5.3.7).
    Martian,
}

/// What the forwarding core knows of a packet besides its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The interface it arrived on.
    pub input: IfId,
    /// The interface it leaves by (set for [`L4Hook::postrouting`], `None` before
    /// routing).
    pub output: Option<IfId>,
    /// Its TCP/UDP checksum field holds only the pseudo-header sum, not inverted
    /// (a `csum_blank` or GSO packet from a netfront; the link completes it): NAT then
    /// adjusts that field for address changes only, since ports are summed later.
    pub csum_partial: bool,
    /// Now.
    pub now: Millis,
    /// The Ethernet source of the frame it came in (a firewall rule's `src_mac`).
    pub src_mac: Option<[u8; 6]>,
}

/// Connection tracking and NAT, as seen by the forwarding core.
///
/// `ip` is the IPv4 packet (header and payload, no link header), exactly
/// `total length` bytes, already checked by the core: version 4, header length and
/// header checksum valid. Implementations rewrite addresses, ports, ICMP ids and the
/// checksums in place and never change the length; they must not panic on any bytes
/// after the IPv4 header (a truncated TCP header is [`DropReason::Malformed`]).
pub trait L4Hook {
    /// Before routing: replies to masqueraded flows and port forwards get their
    /// destination translated back (the core then routes on the new destination; a
    /// packet still addressed to the router goes to the local stack).
    fn prerouting(&mut self, ip: &mut [u8], meta: &Meta) -> HookVerdict;
    /// After routing, before the MTU check: new flows are tracked, and those leaving
    /// through a masquerading interface get the source rewritten.
    fn postrouting(&mut self, ip: &mut [u8], meta: &Meta) -> HookVerdict;
    /// Between routing (and the TTL decrement) and [`L4Hook::postrouting`], for a
    /// forwarded packet (netfilter's FORWARD hook: the firewall's forward chain).
    /// `meta.output` is set.
    fn forward(&mut self, _ip: &mut [u8], _meta: &Meta) -> HookVerdict {
        HookVerdict::Accept
    }
    /// For an IPv4 packet the core is about to give to the local stack (netfilter's
    /// INPUT hook: the firewall's input chain); a packet that is not accepted never
    /// reaches it. Broadcast and multicast packets come here too (before
    /// prerouting, which they skip); ARP never does.
    fn input(&mut self, _ip: &[u8], _meta: &Meta) -> HookVerdict {
        HookVerdict::Accept
    }
    /// For a frame that is neither IPv4 nor ARP (IPv6, ...) before it goes to the
    /// local stack: [`HookVerdict::Accept`] lets it through, anything else drops it.
    fn input_other(&mut self, _ethertype: u16, _meta: &Meta) -> HookVerdict {
        HookVerdict::Accept
    }
    /// For an IPv6 packet the core gives to the local stack (`ip`: the packet
    /// without link padding when the core routes IPv6, else everything after the
    /// Ethernet header; `upper`: its extension header walk, `None` when the core is
    /// not routing IPv6 and did not look). The default is [`L4Hook::input_other`].
    fn input6(&mut self, _ip: &[u8], _upper: Option<&exthdr::Upper>, meta: &Meta) -> HookVerdict {
        self.input_other(0x86dd, meta)
    }
    /// For a forwarded IPv6 packet, after routing and the hop limit decrement
    /// (netfilter's FORWARD hook for IPv6; `meta.output` is set). `upper` is where its
    /// upper-layer header is. The packet's length must not change.
    fn forward6(&mut self, _ip: &mut [u8], _upper: &exthdr::Upper, _meta: &Meta) -> HookVerdict {
        HookVerdict::Accept
    }
}

/// An [`L4Hook`] that tracks nothing and translates nothing (plain routing).
pub struct NoHook;

impl L4Hook for NoHook {
    fn prerouting(&mut self, _: &mut [u8], _: &Meta) -> HookVerdict {
        HookVerdict::Accept
    }
    fn postrouting(&mut self, _: &mut [u8], _: &Meta) -> HookVerdict {
        HookVerdict::Accept
    }
}
