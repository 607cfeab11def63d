//! The DHCPv6 leases: one address per IA_NA, keyed by the client's DUID and the
//! IA's IAID, in a bounded table; and their lines in dnsmasq's lease file (the
//! IPv6 part, after a `duid SERVER-DUID` line):
//! `EXPIRY IAID ADDRESS HOSTNAME|* CLIENT-DUID` (expiry in epoch seconds, 0 for
//! never; IAID in decimal; DUID as colon-separated hex), as dnsmasq's
//! `lease_update_file` writes them.

use crate::dhcpd::lease::{
    impl_named_lease, lease_fields, lease_hostname, parse_hex, write_hex, Leases, NamedLease,
};
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
    /// Whether it is the lease of IA `iaid` of client `duid`.
    pub fn is_for(&self, duid: &[u8], iaid: u32) -> bool {
        self.iaid == iaid && self.duid == duid
    }
}

impl_named_lease!(Lease6, Ipv6Addr, addr);

/// The DHCPv6 lease table.
pub type LeaseTable6 = Leases<Lease6>;

impl Leases<Lease6> {
    /// The lease of IA `iaid` of `duid`.
    pub fn find(&self, duid: &[u8], iaid: u32) -> Option<&Lease6> {
        self.find_where(|l| l.is_for(duid, iaid))
    }

    /// The active lease on `addr`.
    pub fn find_addr(&self, addr: Ipv6Addr, now: Millis) -> Option<&Lease6> {
        self.find_at(addr, now)
    }

    /// How many leases `duid` holds.
    pub fn count_for(&self, duid: &[u8]) -> usize {
        self.iter().filter(|l| l.duid == duid).count()
    }

    /// Removes the lease of IA `iaid` of `duid`; returns it.
    pub fn remove(&mut self, duid: &[u8], iaid: u32) -> Option<Lease6> {
        self.remove_where(|l| l.is_for(duid, iaid))
    }

    /// Whether a lease for IA `iaid` of `duid` could be stored now.
    pub fn has_room(&self, duid: &[u8], iaid: u32, now: Millis) -> bool {
        self.has_room_for(|l| l.is_for(duid, iaid), now)
    }

    /// Stores `lease`, replacing the IA's previous lease and an ended lease on the
    /// same address; `false` (nothing changed) if the address is another client's
    /// or the table is full.
    pub fn upsert(&mut self, lease: Lease6, now: Millis) -> bool {
        if self
            .iter()
            .any(|l| l.addr == lease.addr && l.is_active(now) && !l.is_for(&lease.duid, lease.iaid))
        {
            return false;
        }
        self.retain(|l| !(l.is_for(&lease.duid, lease.iaid) || l.addr == lease.addr));
        self.push_bounded(lease, now)
    }

    /// Takes host name `name` away from every lease of another client than `duid`.
    pub fn clear_hostname(&mut self, name: &str, duid: &[u8]) {
        self.clear_hostname_where(name, |l| l.duid == duid);
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
        if self.active(now).next().is_none() {
            return Ok(()); // no IPv6 part: the file stays dnsmasq's DHCPv4 one
        }
        out.write_str("duid ")?;
        write_hex(out, server_duid)?;
        out.write_char('\n')?;
        for l in self.active(now) {
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
    /// The lease it records, ending at `expires` (monotonic ms, `None` for never).
    pub fn into_lease(self, expires: Option<Millis>) -> Lease6 {
        Lease6 {
            duid: self.duid,
            iaid: self.iaid,
            addr: self.addr,
            hostname: self.hostname,
            expires,
        }
    }

    /// Parses one line; `None` unless exactly five well-formed fields.
    pub fn parse(line: &str) -> Option<LeaseLine6> {
        let [exp, iaid, addr, name, duid] = lease_fields(line)?;
        let hostname = lease_hostname(name)?;
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
