//! NAT44 masquerade: the interfaces, the mapping table and the port choice.
//!
//! Masquerading (Linux `net/netfilter/nf_nat_masquerade.c`, firewall4's `masq` zone
//! option) rewrites the source of flows leaving an interface to that interface's
//! current address. The address is set at run time (DHCP on the WAN) and when it
//! changes the flows mapped to the old one are flushed, as Linux does on `NETDEV_DOWN`
//! / `inetaddr` events (`masq_device_event`).
//!
//! Mappings are endpoint-independent (RFC 4787 section 4.1, REQ-1): an internal
//! `address:port` keeps one external port for every destination while any flow uses
//! it; a mapping is reference-counted by the conntrack entries that use it and dies
//! with the last one. The external port is the internal one when that is free (port
//! preservation, RFC 4787 REQ-3 allows it; Linux `nf_nat_used_tuple` keeps a unique
//! tuple), otherwise a free one from the configured range, searched from a keyed-hash
//! starting point (RFC 6056 section 3.3.3 style, so ports are not guessable). Two live
//! mappings of one protocol never share an external address and port. ICMP echo
//! identifiers are mapped the same way (RFC 5508 section 3.1, REQ-1).
//!
//! The packet rewriting itself is in `rewrite.rs`.

use alloc::vec;
use alloc::vec::Vec;

use crate::flow::Endpoint;
use crate::index::{Hasher, Index};
use crate::IfId;

/// A masquerading interface and its current address (None until it has one; packets
/// leaving it are dropped meanwhile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Masquerade {
    /// The interface.
    pub iface: IfId,
    /// Its IPv4 address.
    pub addr: Option<[u8; 4]>,
}

/// An inclusive range of external ports (and ICMP identifiers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    /// The first port.
    pub min: u16,
    /// The last port (at least `min`).
    pub max: u16,
}

impl Default for PortRange {
    /// 1024-49151: Linux's masquerade takes unprivileged ports (1024-65535), less
    /// the router's own ([`ROUTER_PORTS`]), which Linux keeps apart by having its
    /// own sockets in conntrack.
    fn default() -> PortRange {
        PortRange {
            min: 1024,
            max: *ROUTER_PORTS.start() - 1,
        }
    }
}

/// Ports (and ICMP echo ids) of the router's own sockets on its addresses: its DNS
/// forwarder's upstream queries, its TCP/IP stack's ephemeral ports, its `ping`.
/// A masqueraded flow never gets one, even to keep its own port: a LAN host that
/// chose 53000 as its source would otherwise receive the answers meant for the
/// router (RFC 6056's dynamic range, which the router's sockets draw from).
pub const ROUTER_PORTS: core::ops::RangeInclusive<u16> = 49152..=65535;
/// The router's DHCP client port, kept from masqueraded flows as well.
pub const ROUTER_DHCP_CLIENT_PORT: u16 = 68;

/// Whether `port` is the router's own on its addresses ([`ROUTER_PORTS`], 68).
pub fn is_router_port(port: u16) -> bool {
    ROUTER_PORTS.contains(&port) || port == ROUTER_DHCP_CLIENT_PORT
}

#[derive(Clone, Copy, Debug)]
struct Mapping {
    /// IP protocol number (TCP, UDP or ICMP): mappings are per protocol.
    proto: u8,
    iface: IfId,
    internal: Endpoint,
    external: Endpoint,
    refs: u32,
}

const FREE: Mapping = Mapping {
    proto: 0,
    iface: IfId(0),
    internal: ([0; 4], 0),
    external: ([0; 4], 0),
    refs: 0,
};

fn endpoint_word(proto: u8, e: Endpoint) -> (u64, u64) {
    (
        u64::from(u32::from_be_bytes(e.0)),
        (u64::from(proto) << 16) | u64::from(e.1),
    )
}

/// The live NAT mappings, found by internal endpoint (for endpoint independence) and
/// by external endpoint (for uniqueness). Fixed capacity: one per conntrack entry at
/// most.
pub(crate) struct Mappings {
    slots: Vec<Mapping>,
    free: Vec<u32>,
    by_internal: Index,
    by_external: Index,
    hasher: Hasher,
}

impl Mappings {
    /// A table for `capacity` mappings.
    pub(crate) fn new(capacity: usize, seed: u64) -> Mappings {
        Mappings {
            slots: vec![FREE; capacity],
            free: (0..capacity as u32).rev().collect(),
            by_internal: Index::new(capacity),
            by_external: Index::new(capacity),
            hasher: Hasher::new(seed),
        }
    }

    fn internal_hash(&self, proto: u8, iface: IfId, e: Endpoint) -> u64 {
        let (a, b) = endpoint_word(proto, e);
        self.hasher.hash(a, b | (u64::from(iface.0) << 24))
    }

    fn external_hash(&self, proto: u8, e: Endpoint) -> u64 {
        let (a, b) = endpoint_word(proto, e);
        self.hasher.hash(a ^ 0xffff_ffff_0000_0000, b)
    }

    /// The mapping of an internal endpoint on a masquerading interface.
    pub(crate) fn find_internal(&self, proto: u8, iface: IfId, internal: Endpoint) -> Option<u32> {
        let slots = &self.slots;
        self.by_internal
            .find(self.internal_hash(proto, iface, internal), |v| {
                let m = &slots[v as usize];
                m.proto == proto && m.iface == iface && m.internal == internal
            })
    }

    /// Whether a live mapping of `proto` uses this external endpoint.
    pub(crate) fn external_used(&self, proto: u8, external: Endpoint) -> bool {
        let slots = &self.slots;
        self.by_external
            .find(self.external_hash(proto, external), |v| {
                let m = &slots[v as usize];
                m.proto == proto && m.external == external
            })
            .is_some()
    }

    /// The external endpoint of a mapping.
    pub(crate) fn external(&self, id: u32) -> Endpoint {
        self.slots[id as usize].external
    }

    /// One more flow uses the mapping.
    pub(crate) fn acquire(&mut self, id: u32) {
        let m = &mut self.slots[id as usize];
        m.refs = m.refs.saturating_add(1);
    }

    /// A new mapping with one user, or None if the table is full.
    pub(crate) fn create(
        &mut self,
        proto: u8,
        iface: IfId,
        internal: Endpoint,
        external: Endpoint,
    ) -> Option<u32> {
        let id = self.free.pop()?;
        self.slots[id as usize] = Mapping {
            proto,
            iface,
            internal,
            external,
            refs: 1,
        };
        let hi = self.internal_hash(proto, iface, internal);
        let he = self.external_hash(proto, external);
        let ok = self.by_internal.insert(hi, id) && self.by_external.insert(he, id);
        debug_assert!(ok, "the indexes are sized for every mapping");
        Some(id)
    }

    /// One flow less uses the mapping; the last one frees it.
    pub(crate) fn release(&mut self, id: u32) {
        let Some(m) = self.slots.get(id as usize).copied() else {
            return;
        };
        if m.refs > 1 {
            self.slots[id as usize].refs -= 1;
            return;
        }
        if m.refs == 0 {
            return;
        }
        let hi = self.internal_hash(m.proto, m.iface, m.internal);
        let he = self.external_hash(m.proto, m.external);
        let (slots, hasher) = (&self.slots, &self.hasher);
        let internal_of = |v: u32| {
            let m = &slots[v as usize];
            let (a, b) = endpoint_word(m.proto, m.internal);
            hasher.hash(a, b | (u64::from(m.iface.0) << 24))
        };
        self.by_internal.remove(hi, id, internal_of);
        let external_of = |v: u32| {
            let m = &slots[v as usize];
            let (a, b) = endpoint_word(m.proto, m.external);
            hasher.hash(a ^ 0xffff_ffff_0000_0000, b)
        };
        self.by_external.remove(he, id, external_of);
        self.slots[id as usize] = FREE;
        self.free.push(id);
    }

    /// A keyed hash for choosing where a port search starts.
    pub(crate) fn search_start(&self, internal: Endpoint, remote: Endpoint) -> u64 {
        let (a, b) = endpoint_word(0, internal);
        let (c, d) = endpoint_word(0, remote);
        self.hasher.hash(a ^ (c << 32), b ^ (d << 20))
    }

    /// Forgets every mapping.
    pub(crate) fn clear(&mut self) {
        self.slots.fill(FREE);
        self.free.clear();
        self.free.extend((0..self.slots.len() as u32).rev());
        self.by_internal.clear();
        self.by_external.clear();
    }
}

/// The external port for a new mapping: `preferred` if `is_free` says so, else the
/// first free one in `range` from `start` on, wrapping (every port of the range is
/// tried once, so the search is bounded and finds a port whenever one is free).
pub(crate) fn choose_port(
    preferred: u16,
    range: PortRange,
    start: u64,
    mut is_free: impl FnMut(u16) -> bool,
) -> Option<u16> {
    if is_free(preferred) {
        return Some(preferred);
    }
    let (min, max) = (
        u32::from(range.min.min(range.max)),
        u32::from(range.max.max(range.min)),
    );
    let size = max - min + 1;
    let first = (start % u64::from(size)) as u32;
    for i in 0..size {
        let p = min + (first + i) % size;
        // p <= max <= 65535
        let p = p as u16;
        if is_free(p) {
            return Some(p);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preferred_port_kept_when_free_else_from_range() {
        let r = PortRange {
            min: 2000,
            max: 2003,
        };
        assert_eq!(choose_port(5000, r, 7, |_| true), Some(5000));
        let taken = [5000u16, 2003, 2000];
        assert_eq!(choose_port(5000, r, 3, |p| !taken.contains(&p)), Some(2001));
        assert_eq!(choose_port(5000, r, 3, |p| p == 2002), Some(2002));
        assert_eq!(choose_port(5000, r, 0, |_| false), None);
    }

    #[test]
    fn mappings_refcount_and_uniqueness() {
        let mut m = Mappings::new(4, 9);
        let int = ([192, 168, 1, 10], 4000);
        let ext = ([203, 0, 113, 5], 4000);
        let id = m.create(17, IfId(1), int, ext).unwrap();
        assert_eq!(m.find_internal(17, IfId(1), int), Some(id));
        assert_eq!(m.find_internal(6, IfId(1), int), None, "per protocol");
        assert_eq!(m.find_internal(17, IfId(2), int), None, "per interface");
        assert!(m.external_used(17, ext));
        assert!(!m.external_used(6, ext));
        m.acquire(id);
        m.release(id);
        assert!(m.external_used(17, ext), "still one user");
        m.release(id);
        assert!(!m.external_used(17, ext));
        assert_eq!(m.find_internal(17, IfId(1), int), None);
        // the freed slot is reusable, and the table holds exactly its capacity
        for p in 0..4 {
            assert!(m
                .create(6, IfId(1), ([10, 0, 0, 1], p), ([1, 1, 1, 1], p))
                .is_some());
        }
        assert!(m
            .create(6, IfId(1), ([10, 0, 0, 1], 9), ([1, 1, 1, 1], 9))
            .is_none());
    }
}
