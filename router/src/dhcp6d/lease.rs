//! The DHCPv6 leases: one address per IA_NA, keyed by the client's DUID and the
//! IA's IAID, in a bounded table; and their lines in dnsmasq's lease file (the
//! IPv6 part, after a `duid SERVER-DUID` line):
//! `EXPIRY IAID ADDRESS HOSTNAME|* CLIENT-DUID` (expiry in epoch seconds, 0 for
//! never; IAID in decimal; DUID as colon-separated hex), as dnsmasq's
//! `lease_update_file` writes them.

use crate::dhcpd::lease::{parse_hex, sanitize_hostname, write_hex, Declined, NamedLease};
use crate::Millis;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};
use core::net::Ipv6Addr;

/// The longest DUID taken (RFC 8415 §11.1: at most 128 bytes after the type).
pub const MAX_DUID: usize = 130;
/// How long a declined address stays out of the pool (ms), as for DHCPv4.
pub use crate::dhcpd::lease::DECLINE_BACKOFF_MS;

/// One lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease6 {
    /// The client's DUID.
    pub duid: Vec<u8>,
    /// The IA_NA's IAID.
    pub iaid: u32,
    /// The address.
    pub addr: Ipv6Addr,
    /// The host name (a configured one, or the client's FQDN option's first label).
    pub hostname: Option<String>,
    /// When it ends (monotonic ms), `None` for never.
    pub expires: Option<Millis>,
}

impl Lease6 {
    /// Whether it still holds at `now`.
    pub fn is_active(&self, now: Millis) -> bool {
        self.expires.is_none_or(|e| e > now)
    }

    /// Whether it is the lease of IA `iaid` of client `duid`.
    pub fn is_for(&self, duid: &[u8], iaid: u32) -> bool {
        self.iaid == iaid && self.duid == duid
    }
}

impl NamedLease for Lease6 {
    type Addr = Ipv6Addr;
    fn address(&self) -> Ipv6Addr {
        self.addr
    }
    fn hostname(&self) -> Option<&str> {
        self.hostname.as_deref()
    }
}

/// The bounded lease table and the addresses recently declined.
#[derive(Clone, Debug)]
pub struct LeaseTable6 {
    leases: Vec<Lease6>,
    capacity: usize,
    declined: Declined<Ipv6Addr>,
}

impl LeaseTable6 {
    /// An empty table for at most `capacity` leases.
    pub fn new(capacity: usize) -> LeaseTable6 {
        LeaseTable6 {
            leases: Vec::new(),
            capacity,
            declined: Declined::new(),
        }
    }

    /// Its bound.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// All leases (ended ones not yet swept included).
    pub fn iter(&self) -> impl Iterator<Item = &Lease6> {
        self.leases.iter()
    }

    /// Drops ended leases and declines.
    pub fn expire(&mut self, now: Millis) {
        self.leases.retain(|l| l.is_active(now));
        self.declined.expire(now);
    }

    /// The lease of IA `iaid` of `duid`.
    pub fn find(&self, duid: &[u8], iaid: u32) -> Option<&Lease6> {
        self.leases.iter().find(|l| l.is_for(duid, iaid))
    }

    /// The active lease on `addr`.
    pub fn find_addr(&self, addr: Ipv6Addr, now: Millis) -> Option<&Lease6> {
        self.leases
            .iter()
            .find(|l| l.addr == addr && l.is_active(now))
    }

    /// How many leases `duid` holds.
    pub fn count_for(&self, duid: &[u8]) -> usize {
        self.leases.iter().filter(|l| l.duid == duid).count()
    }

    /// Whether `addr` is kept out of the pool after a Decline.
    pub fn is_declined(&self, addr: Ipv6Addr, now: Millis) -> bool {
        self.declined.contains(addr, now)
    }

    /// Keeps `addr` out of the pool for [`DECLINE_BACKOFF_MS`] (the list is as
    /// bounded as the table) and drops its lease.
    pub fn decline(&mut self, addr: Ipv6Addr, now: Millis) {
        self.leases.retain(|l| l.addr != addr);
        self.declined.add(addr, now, self.capacity);
    }

    /// Removes the lease of IA `iaid` of `duid`; returns it.
    pub fn remove(&mut self, duid: &[u8], iaid: u32) -> Option<Lease6> {
        let i = self.leases.iter().position(|l| l.is_for(duid, iaid))?;
        Some(self.leases.remove(i))
    }

    /// Whether a lease for IA `iaid` of `duid` could be stored now.
    pub fn has_room(&self, duid: &[u8], iaid: u32, now: Millis) -> bool {
        self.leases.len() < self.capacity
            || self
                .leases
                .iter()
                .any(|l| l.is_for(duid, iaid) || !l.is_active(now))
    }

    /// Stores `lease`, replacing the IA's previous lease and an ended lease on the
    /// same address; `false` (nothing changed) if the address is another client's
    /// or the table is full.
    pub fn upsert(&mut self, lease: Lease6, now: Millis) -> bool {
        if self
            .leases
            .iter()
            .any(|l| l.addr == lease.addr && l.is_active(now) && !l.is_for(&lease.duid, lease.iaid))
        {
            return false;
        }
        self.leases
            .retain(|l| !(l.is_for(&lease.duid, lease.iaid) || l.addr == lease.addr));
        if self.leases.len() >= self.capacity {
            self.expire(now);
        }
        if self.leases.len() >= self.capacity {
            return false;
        }
        self.leases.push(lease);
        true
    }

    /// Takes host name `name` away from every lease of another client than `duid`.
    pub fn clear_hostname(&mut self, name: &str, duid: &[u8]) {
        for l in self.leases.iter_mut().filter(|l| l.duid != duid) {
            if l.is_named(name) {
                l.hostname = None;
            }
        }
    }

    /// The active leases as dnsmasq's IPv6 lease lines, after `duid SERVER-DUID`
    /// (nothing at all without one).
    pub fn write_text(
        &self,
        out: &mut dyn Write,
        server_duid: &[u8],
        now: Millis,
        epoch_offset_secs: u64,
    ) -> fmt::Result {
        if !self.leases.iter().any(|l| l.is_active(now)) {
            return Ok(()); // no IPv6 part: the file stays dnsmasq's DHCPv4 one
        }
        out.write_str("duid ")?;
        write_hex(out, server_duid)?;
        out.write_char('\n')?;
        for l in self.leases.iter().filter(|l| l.is_active(now)) {
            let expiry = l
                .expires
                .map_or(0, |e| epoch_offset_secs.saturating_add(e / 1000));
            write!(
                out,
                "{expiry} {} {} {} ",
                l.iaid,
                l.addr,
                l.hostname.as_deref().unwrap_or("*")
            )?;
            write_hex(out, &l.duid)?;
            out.write_char('\n')?;
        }
        Ok(())
    }
}

/// One IPv6 lease line, read but not yet checked against a prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseLine6 {
    /// Expiry in epoch seconds, 0 for never.
    pub expiry_epoch: u64,
    /// IAID.
    pub iaid: u32,
    /// Address.
    pub addr: Ipv6Addr,
    /// Host name, if not `*`.
    pub hostname: Option<String>,
    /// The client's DUID.
    pub duid: Vec<u8>,
}

impl LeaseLine6 {
    /// Parses one line; `None` unless exactly five well-formed fields.
    pub fn parse(line: &str) -> Option<LeaseLine6> {
        let mut f = line.split_ascii_whitespace();
        let (Some(exp), Some(iaid), Some(addr), Some(name), Some(duid), None) =
            (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return None;
        };
        let hostname = match name {
            "*" => None,
            n => Some(sanitize_hostname(n.as_bytes()).filter(|s| s == n)?),
        };
        let d = parse_hex(duid, MAX_DUID)?;
        if d.len() < 2 {
            return None;
        }
        Some(LeaseLine6 {
            expiry_epoch: exp.parse().ok()?,
            iaid: iaid.parse().ok()?,
            addr: addr.parse().ok()?,
            hostname,
            duid: d,
        })
    }
}
