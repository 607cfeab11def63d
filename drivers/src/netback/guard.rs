//! What the toolstack restricts a client to, beyond its MAC (the bridge locks that):
//! the source addresses of its `ip` key (anti-spoofing, as Xen's `vif-route` and
//! Qubes' `vif-route-qubes` apply it with iptables) and the transmit rate of its
//! `rate` key (Linux xen-netback's credit scheduler).
//!
//! # `ip`: the source filter
//!
//! libxl writes the vif's `ip` setting into the backend directory as a
//! space-separated list. When it names at least one address, a frame from the client
//! passes only if:
//!
//! - IPv4 (EtherType 0x0800): its source address is one of the listed IPv4
//!   addresses. DHCP from 0.0.0.0 is dropped too: a client with fixed addresses has
//!   no business asking for a lease (Qubes drops it the same way).
//! - ARP (0x0806): an Ethernet/IPv4 ARP packet whose sender protocol address is one
//!   of the listed IPv4 addresses and whose sender hardware address is the vif's MAC
//!   (the client may not poison caches for another host; ARP probes from 0.0.0.0 are
//!   dropped, which a client's duplicate-address check takes as "no conflict").
//! - IPv6 (0x86DD): its source is link-local (`fe80::/10`: neighbour and router
//!   discovery keep working) or one of the listed IPv6 addresses. With no IPv6
//!   address listed, only link-local IPv6 passes: the client cannot use a global
//!   address the toolstack did not give it. (`::`, used by duplicate-address
//!   detection and MLD before an address is up, is dropped.)
//! - Anything else (VLAN-tagged frames, other EtherTypes) is dropped: it could carry
//!   any address past this filter.
//!
//! Entries of the key that are not addresses are ignored; a key with no address at
//! all drops every IP and ARP frame (fail closed) rather than passing them. Both
//! keys are read when the client connects and again when the backend directory
//! changes while it is connected ([`super::Netback::poll_xenbus`]: a toolstack may
//! change them live, as Linux follows `rate`).
//! Dropped frames are answered `NETIF_RSP_OKAY` (the client sees a sent packet, as
//! behind a firewall) and counted in [`super::NetbackStats::rx_spoofed`].
//!
//! # `rate`: the credit scheduler
//!
//! libxl writes `rate` = `<bytes>,<usec>` (`credit_bytes`, `credit_usec`; xl's
//! `rate=10Mb/s@20ms`), Linux parses it in `xen_net_read_rate`: anything else means
//! unlimited, as does an interval of 0. As Linux's `tx_credit_exceeded`: the client's
//! packets spend a credit of `bytes`, refilled once per `usec` (to at most
//! max(`bytes`, 128 KiB), so a 64 KiB packet always passes in the end); a packet
//! larger than the credit left waits, its requests unanswered (the client's ring
//! holds the rest), until the window ends: [`super::Netback::rate_wakeup_ns`] says
//! when, and the integrator polls then (no event comes for it).

use alloc::string::String;
use alloc::vec::Vec;

/// The addresses a client may send from (its `ip` key), if restricted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceFilter {
    v4: Vec<[u8; 4]>,
    v6: Vec<[u8; 16]>,
}

/// Why a frame did not pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Pass,
    Drop,
}

fn parse_v4(s: &str) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = s.split('.');
    for b in &mut out {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        *b = p.parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// An IPv6 address in its text form (`::` compression, no embedded IPv4).
fn parse_v6(s: &str) -> Option<[u8; 16]> {
    fn groups(part: &str) -> Option<Vec<u16>> {
        if part.is_empty() {
            return Some(Vec::new());
        }
        part.split(':')
            .map(|g| {
                if g.is_empty() || g.len() > 4 {
                    None
                } else {
                    u16::from_str_radix(g, 16).ok()
                }
            })
            .collect()
    }
    let (head, tail) = match s.split_once("::") {
        Some((h, t)) => (groups(h)?, Some(groups(t)?)),
        None => (groups(s)?, None),
    };
    let mut all = head.clone();
    match tail {
        Some(t) => {
            if head.len() + t.len() > 7 {
                return None;
            }
            all.resize(8 - t.len(), 0);
            all.extend(t);
        }
        None if all.len() != 8 => return None,
        None => {}
    }
    let mut out = [0u8; 16];
    for (i, g) in all.iter().enumerate() {
        out[2 * i..2 * i + 2].copy_from_slice(&g.to_be_bytes());
    }
    Some(out)
}

impl SourceFilter {
    /// The filter of an `ip` key's value; `None` when it is empty (no restriction).
    /// Entries that are not addresses (a prefix length is cut off first) are
    /// skipped.
    pub fn parse(key: &str) -> Option<Self> {
        if key.trim().is_empty() {
            return None;
        }
        let mut f = SourceFilter::default();
        for word in key.split_whitespace() {
            let addr = word.split('/').next().unwrap_or("");
            if let Some(a) = parse_v4(addr) {
                f.v4.push(a);
            } else if let Some(a) = parse_v6(addr) {
                f.v6.push(a);
            }
        }
        Some(f)
    }

    /// The IPv4 addresses allowed.
    pub fn v4(&self) -> &[[u8; 4]] {
        &self.v4
    }

    /// The IPv6 addresses allowed (besides link-local ones).
    pub fn v6(&self) -> &[[u8; 16]] {
        &self.v6
    }

    /// Whether a frame from the client whose MAC is `mac` may pass.
    pub(super) fn check(&self, frame: &[u8], mac: [u8; 6]) -> Verdict {
        let ok = match frame.get(12..14) {
            Some([0x08, 0x00]) => frame
                .get(26..30)
                .is_some_and(|s| frame[14] >> 4 == 4 && self.v4.iter().any(|a| a == s)),
            Some([0x08, 0x06]) => {
                // htype 1, ptype IPv4, hlen 6, plen 4; sender MAC at 22, IP at 28
                frame.get(14..20) == Some(&[0, 1, 8, 0, 6, 4])
                    && frame.get(22..28) == Some(&mac[..])
                    && frame
                        .get(28..32)
                        .is_some_and(|s| self.v4.iter().any(|a| a == s))
            }
            Some([0x86, 0xdd]) => frame.get(22..38).is_some_and(|s| {
                frame[14] >> 4 == 6
                    && ((s[0] == 0xfe && s[1] & 0xc0 == 0x80) || self.v6.iter().any(|a| a == s))
            }),
            _ => false,
        };
        if ok {
            Verdict::Pass
        } else {
            Verdict::Drop
        }
    }

    /// The addresses, as the key would list them.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for a in &self.v4 {
            if !s.is_empty() {
                s.push(' ');
            }
            s += &alloc::format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        }
        for a in &self.v6 {
            if !s.is_empty() {
                s.push(' ');
            }
            let g: Vec<String> = a
                .chunks(2)
                .map(|c| alloc::format!("{:x}", u16::from_be_bytes([c[0], c[1]])))
                .collect();
            s += &g.join(":");
        }
        if s.is_empty() {
            s.push_str("(none)");
        }
        s
    }
}

/// Bytes a client may always send in one burst, whatever its credit (Linux: 128 KiB,
/// so a 64 KiB GSO packet cannot stall the vif).
pub const MIN_BURST: u64 = 131_072;

/// The `rate` key parsed as Linux's `xen_net_read_rate`: `<bytes>,<usec>` in
/// decimal, nothing else around; `None` (unlimited) when absent, malformed or of a
/// zero interval.
pub fn parse_rate(key: &str) -> Option<(u64, u64)> {
    let (b, u) = key.split_once(',')?;
    let num = |s: &str| {
        if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
            None
        } else {
            s.parse::<u64>().ok()
        }
    };
    let (bytes, usec) = (num(b)?, num(u)?);
    (usec > 0).then_some((bytes, usec))
}

/// A client's transmit credit (Linux's `remaining_credit`, `credit_window_start`
/// and `credit_timeout`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credit {
    /// Bytes per window.
    pub bytes: u64,
    /// The window, in microseconds.
    pub usec: u64,
    remaining: u64,
    window_start_ns: u64,
    /// When the credit is refilled for a packet waiting for it.
    timer_ns: Option<u64>,
}

impl Credit {
    /// A full credit, its window starting at `now_ns` (Linux fills it at connect).
    pub fn new(bytes: u64, usec: u64, now_ns: u64) -> Self {
        Credit {
            bytes,
            usec,
            remaining: bytes,
            window_start_ns: now_ns,
            timer_ns: None,
        }
    }

    fn period_ns(&self) -> u64 {
        self.usec.saturating_mul(1000)
    }

    fn refill(&mut self) {
        let max_burst = self.bytes.max(MIN_BURST);
        self.remaining = self.remaining.saturating_add(self.bytes).min(max_burst);
    }

    /// Whether a packet of `size` bytes may go at `now_ns` (its bytes spent if so);
    /// if not, it waits until [`Credit::wakeup_ns`].
    pub fn admit(&mut self, size: u64, now_ns: u64) -> bool {
        if let Some(at) = self.timer_ns {
            if now_ns < at {
                return false;
            }
            // the timer's callback (tx_credit_callback): the window began at `at`
            self.timer_ns = None;
            self.refill();
        }
        if size > self.remaining {
            let next = self.window_start_ns.saturating_add(self.period_ns());
            if now_ns >= next {
                self.window_start_ns = now_ns;
                self.refill();
            }
        }
        if size > self.remaining {
            let next = self.window_start_ns.saturating_add(self.period_ns());
            self.timer_ns = Some(next);
            self.window_start_ns = next;
            return false;
        }
        self.remaining -= size;
        true
    }

    /// When a waiting packet's credit comes (ns on the platform's clock), if one
    /// waits.
    pub fn wakeup_ns(&self) -> Option<u64> {
        self.timer_ns
    }
}
