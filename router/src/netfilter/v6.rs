//! The IPv6 side of [`Netfilter`]: conntrack and the firewall for forwarded IPv6,
//! the firewall's input chain for IPv6 to the router. No NAT66 (OpenWrt has none by
//! default): the reply tuple is the inverted original.
//!
//! As for IPv4, a packet of a known flow is established and accepted without rules
//! (fw4's `ct state established,related accept`); an ICMPv6 error quoting a known flow
//! is RELATED when its checksum verifies and it goes to the flow's end (its outer
//! destination is the quoted packet's source, as Linux's `nf_conntrack_inet_error`),
//! else INVALID and dropped; a new flow is judged by the forward chain and tracked
//! only when accepted. ND, MLD, later fragments and errors about no flow are judged
//! by the rules without being tracked (so firewall4's `Allow-ICMPv6-Forward` decides
//! on them).

use super::{can_start, filtered, Netfilter};
use crate::conntrack::{Dir, Stats, Track};
use crate::exthdr::Upper;
use crate::firewall::packet::Packet;
use crate::firewall::CtState;
use crate::flow6::{self, Kind6};
use crate::ipv6;
use crate::{DropReason, HookVerdict, Meta};

impl Netfilter {
    /// The IPv6 conntrack counters.
    pub fn stats6(&self) -> &Stats {
        self.ct6.stats()
    }

    /// Live IPv6 entries.
    pub fn count6(&self) -> usize {
        self.ct6.count()
    }

    /// Calls `f` on each live IPv6 entry (`conntrack -L -f ipv6`).
    pub fn for_each6(
        &self,
        now: crate::Millis,
        f: impl FnMut(crate::conntrack::EntryView<'_, [u8; 16]>),
    ) {
        self.ct6.for_each(now, f);
    }

    /// The forward hook for IPv6.
    pub(super) fn forward6_inner(
        &mut self,
        ip: &mut [u8],
        upper: &Upper,
        meta: &Meta,
    ) -> HookVerdict {
        if ip.len() < ipv6::HEADER_LEN {
            self.ct6.stats.malformed += 1;
            return HookVerdict::Drop(DropReason::Malformed);
        }
        let now = meta.now;
        let len = ip.len();
        let (src, dst) = (ipv6::src(ip).octets(), ipv6::dst(ip).octets());
        // a first fragment let through vouches for the rest of its datagram
        let first_frag = upper
            .fragment
            .filter(|f| f.offset == 0 && f.more)
            .map(|f| f.id);
        let v = self.forward6_judged(ip, upper, meta, len, now);
        if let (HookVerdict::Accept, Some(id)) = (v, first_frag) {
            self.frags6.note(src, dst, id, now);
        }
        v
    }

    fn forward6_judged(
        &mut self,
        ip: &mut [u8],
        upper: &Upper,
        meta: &Meta,
        len: usize,
        now: crate::Millis,
    ) -> HookVerdict {
        let Ok(kind) = flow6::parse(ip, upper) else {
            self.ct6.stats.malformed += 1;
            return HookVerdict::Drop(DropReason::Malformed);
        };
        let mut ct = CtState::New;
        let mut track_new = None;
        match kind {
            Kind6::Flow(t, tcp) => {
                if let Some((slot, dir)) = self.ct6.lookup(&t, now) {
                    match self.ct6.track(slot, dir, tcp, len, now) {
                        Track::Valid => {
                            self.ct6.stats.found += 1;
                            return self.established(len);
                        }
                        Track::Invalid => {
                            self.ct6.stats.invalid += 1;
                            ct = CtState::Invalid;
                        }
                        Track::Reopen => self.ct6.end_for_reopen(slot),
                    }
                }
                if ct == CtState::New {
                    if can_start(&t, tcp) {
                        track_new = Some((t, tcp));
                    } else {
                        self.ct6.stats.invalid += 1;
                        ct = CtState::Invalid;
                    }
                }
            }
            Kind6::IcmpError(q) => {
                if self.ct6.lookup(&q, now).is_some() {
                    let msg = ip.get(upper.offset..).unwrap_or(&[]);
                    let (src, dst) = (ipv6::src(ip), ipv6::dst(ip));
                    if !ipv6::l4_checksum_ok(src, dst, ipv6::PROTO_ICMPV6, msg) {
                        self.ct6.stats.icmp_bad_checksum += 1;
                        self.ct6.stats.invalid += 1;
                        return HookVerdict::Drop(DropReason::Invalid);
                    }
                    if dst.octets() != q.src {
                        self.ct6.stats.icmp_misdirected += 1;
                        self.ct6.stats.invalid += 1;
                        return HookVerdict::Drop(DropReason::Invalid);
                    }
                    self.ct6.stats.icmp_related += 1;
                    return self.established(len);
                }
                ct = CtState::Invalid;
            }
            Kind6::LaterFragment => {
                let (src, dst) = (ipv6::src(ip).octets(), ipv6::dst(ip).octets());
                let id = upper.fragment.map_or(0, |f| f.id);
                if self.frags6.allows(src, dst, id, now) {
                    self.ct6.stats.found += 1;
                    return self.established(len);
                }
            }
            Kind6::Untracked => {}
        }
        let verdict = match (self.firewall.as_mut(), meta.output) {
            (Some(fw), Some(out)) => {
                let Some(mut p) = Packet::parse6(ip, upper) else {
                    return HookVerdict::Drop(DropReason::Malformed);
                };
                p.src_mac = meta.src_mac;
                filtered(fw.forward(&p, meta.input, out, ct, now))
            }
            _ => HookVerdict::Accept,
        };
        if verdict != HookVerdict::Accept {
            return verdict;
        }
        if let Some((t, tcp)) = track_new {
            self.ct6.stats.new += 1;
            if !self.ct6.make_room(now) {
                self.ct6.stats.dropped_full += 1;
                return HookVerdict::Drop(DropReason::ConntrackFull);
            }
            let Some(slot) = self.ct6.insert(t, t.invert(), 0, None, None, now) else {
                self.ct6.stats.dropped_full += 1;
                return HookVerdict::Drop(DropReason::ConntrackFull);
            };
            if self.ct6.track(slot, Dir::Original, tcp, len, now) != Track::Valid {
                // a first segment its own flow finds invalid (cannot happen for a SYN)
                return HookVerdict::Drop(DropReason::Invalid);
            }
        }
        HookVerdict::Accept
    }

    fn established(&mut self, len: usize) -> HookVerdict {
        match self.firewall.as_mut() {
            Some(fw) => filtered(fw.forward_established(len)),
            None => HookVerdict::Accept,
        }
    }

    /// The input chain for IPv6 to the router.
    pub(super) fn input6_inner(&mut self, ip: &[u8], upper: &Upper, meta: &Meta) -> HookVerdict {
        let Some(fw) = self.firewall.as_mut() else {
            return HookVerdict::Accept;
        };
        let Some(mut p) = Packet::parse6(ip, upper) else {
            return HookVerdict::Drop(DropReason::Malformed);
        };
        p.src_mac = meta.src_mac;
        filtered(fw.input(&p, meta.input, CtState::New, meta.now))
    }
}
