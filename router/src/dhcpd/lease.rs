//! The lease table: who holds which address until when, and dnsmasq's lease file.
//!
//! The file format is dnsmasq's `dnsmasq.leases` (`src/lease.c`, `lease_update_file`):
//! one line per lease, `<expiry epoch seconds> <hw address> <ip> <hostname or *>
//! <client-id or *>`, the hardware address as colon-separated hex, prefixed with
//! `<htype>-` when it is not Ethernet, and expiry 0 meaning "never". OpenWrt keeps
//! it at `/tmp/dhcp.leases`; the kernel keeps it on the root fs so that clients
//! get their addresses back after a reboot.
//!
//! Time inside the table is the caller's monotonic [`Millis`]; the file needs wall
//! time, so reading and writing it take the epoch second at which the monotonic
//! clock read 0 (`epoch_offset_secs`).

use super::message::HwAddr;
use crate::Millis;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};
use core::net::Ipv4Addr;

/// How long a DECLINEd address is kept out of the pool: dnsmasq's
/// `DECLINE_BACKOFF` (600 s, `src/dnsmasq.h`).
pub const DECLINE_BACKOFF_MS: Millis = 600_000;

/// One lease: an address ACKed to a client (nothing is held at OFFER).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The client's hardware address.
    pub hw: HwAddr,
    /// The client identifier (option 61) if the client sent one.
    pub client_id: Option<Vec<u8>>,
    /// The address.
    pub ip: Ipv4Addr,
    /// The host name the client gave (option 12) or the static host's name.
    pub hostname: Option<String>,
    /// When it ends (monotonic), `None` for never.
    pub expires: Option<Millis>,
}

impl Lease {
    /// Whether this lease belongs to the client with `hw` and `client_id`: by
    /// client id when both sides have one, by hardware address otherwise (as
    /// dnsmasq's `lease_find_by_client`).
    pub fn is_for(&self, hw: &HwAddr, client_id: Option<&[u8]>) -> bool {
        match (self.client_id.as_deref(), client_id) {
            (Some(a), Some(b)) => a == b,
            _ => self.hw == *hw,
        }
    }
}

/// What the DHCPv4 and DHCPv6 leases share for host names: an address and the
/// name of the client holding it.
pub trait NamedLease {
    /// The kind of address.
    type Addr: Copy + PartialEq + fmt::Debug;
    /// The address.
    fn address(&self) -> Self::Addr;
    /// When it ends (monotonic ms), `None` for never.
    fn expires(&self) -> Option<Millis>;
    /// The host name, if any.
    fn hostname(&self) -> Option<&str>;
    /// Forgets its host name.
    fn clear_hostname(&mut self);
    /// Whether it still holds at `now`.
    fn is_active(&self, now: Millis) -> bool {
        self.expires().is_none_or(|e| e > now)
    }
    /// Whether its host name is `name` (case-insensitive).
    fn is_named(&self, name: &str) -> bool {
        self.hostname()
            .is_some_and(|h| h.eq_ignore_ascii_case(name))
    }
}

/// Implements [`NamedLease`] for a lease struct with an address field of type
/// `$addr`, and `hostname: Option<String>` and `expires: Option<Millis>` fields.
macro_rules! impl_named_lease {
    ($lease:ty, $addr:ty, $field:ident) => {
        impl $crate::dhcpd::lease::NamedLease for $lease {
            type Addr = $addr;
            fn address(&self) -> $addr {
                self.$field
            }
            fn expires(&self) -> Option<$crate::Millis> {
                self.expires
            }
            fn hostname(&self) -> Option<&str> {
                self.hostname.as_deref()
            }
            fn clear_hostname(&mut self) {
                self.hostname = None;
            }
        }
    };
}
pub(crate) use impl_named_lease;

impl_named_lease!(Lease, Ipv4Addr, ip);

/// The address of the lease among `leases` whose host name is `name`
/// (case-insensitive).
pub fn address_named<'a, L: NamedLease + 'a>(
    mut leases: impl Iterator<Item = &'a L>,
    name: &str,
) -> Option<L::Addr> {
    leases.find(|l| l.is_named(name)).map(|l| l.address())
}

/// The host name of the lease among `leases` on `addr`.
pub fn name_at<'a, L: NamedLease + 'a>(
    mut leases: impl Iterator<Item = &'a L>,
    addr: L::Addr,
) -> Option<&'a str> {
    leases
        .find(|l| l.address() == addr)
        .and_then(|l| l.hostname())
}

/// Addresses kept out of the pool after a Decline, each until its time
/// ([`DECLINE_BACKOFF_MS`] after it), at most as many as the lease table holds.
#[derive(Clone, Debug)]
pub struct Declined<A> {
    list: Vec<(A, Millis)>,
}

impl<A: Copy + PartialEq> Declined<A> {
    /// None yet.
    pub fn new() -> Declined<A> {
        Declined { list: Vec::new() }
    }

    /// Drops those whose time is over.
    pub fn expire(&mut self, now: Millis) {
        self.list.retain(|(_, until)| *until > now);
    }

    /// Whether `addr` is still kept out.
    pub fn contains(&self, addr: A, now: Millis) -> bool {
        self.list
            .iter()
            .any(|(d, until)| *d == addr && *until > now)
    }

    /// Keeps `addr` out until `now` + [`DECLINE_BACKOFF_MS`]; past `bound` entries
    /// the oldest goes.
    pub fn add(&mut self, addr: A, now: Millis, bound: usize) {
        self.list.retain(|(d, until)| *d != addr && *until > now);
        if self.list.len() >= bound.max(1) {
            self.list.remove(0);
        }
        self.list
            .push((addr, now.saturating_add(DECLINE_BACKOFF_MS)));
    }
}

impl<A: Copy + PartialEq> Default for Declined<A> {
    fn default() -> Self {
        Self::new()
    }
}

/// Cleans a client-supplied host name the way dnsmasq does (`canonicalise`,
/// `strip_hostname`): the part before the first dot, letters, digits and `-`
/// only, 1..=63 bytes, not starting or ending with `-`. `None` if nothing legal is left.
pub fn sanitize_hostname(raw: &[u8]) -> Option<String> {
    let first = raw.split(|b| *b == b'.').next().unwrap_or(&[]);
    // Some clients NUL-terminate the option.
    let first = first.split(|b| *b == 0).next().unwrap_or(&[]);
    if first.is_empty() || first.len() > 63 {
        return None;
    }
    if !first
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        || first.first() == Some(&b'-')
        || first.last() == Some(&b'-')
    {
        return None;
    }
    core::str::from_utf8(first).ok().map(String::from)
}

/// A bounded lease table plus the addresses recently declined: what the DHCPv4
/// table ([`LeaseTable`]) and the DHCPv6 one share; each finds its clients its own
/// way.
#[derive(Clone, Debug)]
pub struct Leases<L: NamedLease> {
    leases: Vec<L>,
    capacity: usize,
    declined: Declined<L::Addr>,
}

/// The DHCPv4 lease table.
pub type LeaseTable = Leases<Lease>;

/// What loading a lease file did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Leases taken.
    pub loaded: usize,
    /// Lines that could not be read, or that the server refused (outside the
    /// subnet, duplicate address, table full).
    pub corrupt: usize,
    /// Lines whose lease had already ended.
    pub expired: usize,
}

impl LoadReport {
    /// Loads the non-blank ones of a lease file's `lines`: `parse` reads a line
    /// into its expiry (epoch seconds, 0 for never) and what it holds (a line it
    /// cannot read is corrupt), a lease already ended at `now` is expired, and
    /// `store` takes the rest with its end (monotonic ms, `None` for never) and
    /// says whether it was taken (if not, the line counts as corrupt).
    pub fn load<'a, L>(
        lines: impl Iterator<Item = &'a str>,
        now: Millis,
        epoch_offset_secs: u64,
        parse: impl Fn(&str) -> Option<(u64, L)>,
        mut store: impl FnMut(L, Option<Millis>) -> bool,
    ) -> LoadReport {
        let mut r = LoadReport::default();
        let wall_now = epoch_offset_secs.saturating_add(now / 1000);
        for line in lines.filter(|l| !l.trim().is_empty()) {
            let Some((expiry_epoch, l)) = parse(line) else {
                r.corrupt += 1;
                continue;
            };
            let expires = if expiry_epoch == 0 {
                None
            } else if expiry_epoch <= wall_now {
                r.expired += 1;
                continue;
            } else {
                Some((expiry_epoch - epoch_offset_secs).saturating_mul(1000))
            };
            if store(l, expires) {
                r.loaded += 1;
            } else {
                r.corrupt += 1;
            }
        }
        r
    }
}

impl<L: NamedLease> Leases<L> {
    /// An empty table for at most `capacity` leases.
    pub fn new(capacity: usize) -> Leases<L> {
        Leases {
            leases: Vec::new(),
            capacity,
            declined: Declined::new(),
        }
    }

    /// The maximum number of leases.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// All leases (possibly expired but not yet swept).
    pub fn iter(&self) -> impl Iterator<Item = &L> {
        self.leases.iter()
    }

    /// Drops ended leases and declines.
    pub fn expire(&mut self, now: Millis) {
        self.leases.retain(|l| l.is_active(now));
        self.declined.expire(now);
    }

    /// The active lease on `addr`.
    pub fn find_at(&self, addr: L::Addr, now: Millis) -> Option<&L> {
        self.leases
            .iter()
            .find(|l| l.address() == addr && l.is_active(now))
    }

    /// Whether `addr` was declined and is still being kept out of the pool.
    pub fn is_declined(&self, addr: L::Addr, now: Millis) -> bool {
        self.declined.contains(addr, now)
    }

    /// Keeps `addr` out of the pool until `now` + [`DECLINE_BACKOFF_MS`] (the
    /// list is as bounded as the table) and drops its lease.
    pub fn decline(&mut self, addr: L::Addr, now: Millis) {
        self.leases.retain(|l| l.address() != addr);
        self.declined.add(addr, now, self.capacity);
    }

    /// The first lease `is_it` picks, active or not.
    pub(crate) fn find_where(&self, is_it: impl Fn(&L) -> bool) -> Option<&L> {
        self.leases.iter().find(|l| is_it(l))
    }

    /// Keeps only the leases `keep` picks.
    pub(crate) fn retain(&mut self, keep: impl FnMut(&L) -> bool) {
        self.leases.retain(keep);
    }

    /// Removes the first lease `is_it` picks; returns it.
    pub(crate) fn remove_where(&mut self, is_it: impl Fn(&L) -> bool) -> Option<L> {
        let i = self.leases.iter().position(is_it)?;
        Some(self.leases.remove(i))
    }

    /// Whether a lease of the client `is_its` picks could be stored now: it has
    /// one, there is a free place, or one that has ended can go.
    pub(crate) fn has_room_for(&self, is_its: impl Fn(&L) -> bool, now: Millis) -> bool {
        self.leases.len() < self.capacity
            || self.leases.iter().any(|l| is_its(l) || !l.is_active(now))
    }

    /// Adds `lease` when there is room, ended leases swept to make some; `false`
    /// if still full.
    pub(crate) fn push_bounded(&mut self, lease: L, now: Millis) -> bool {
        if self.leases.len() >= self.capacity {
            self.expire(now);
        }
        if self.leases.len() >= self.capacity {
            return false;
        }
        self.leases.push(lease);
        true
    }

    /// Takes host name `name` (case-insensitive) away from every lease `keep`
    /// does not pick.
    pub(crate) fn clear_hostname_where(&mut self, name: &str, keep: impl Fn(&L) -> bool) {
        for l in self
            .leases
            .iter_mut()
            .filter(|l| !keep(l) && l.is_named(name))
        {
            l.clear_hostname();
        }
    }

    /// The active leases.
    pub(crate) fn active(&self, now: Millis) -> impl Iterator<Item = &L> {
        self.leases.iter().filter(move |l| l.is_active(now))
    }
}

impl Leases<Lease> {
    /// The client's lease, active or not.
    pub fn find_client(&self, hw: &HwAddr, client_id: Option<&[u8]>) -> Option<&Lease> {
        self.leases.iter().find(|l| l.is_for(hw, client_id))
    }

    /// The active lease on `ip`.
    pub fn find_ip(&self, ip: Ipv4Addr, now: Millis) -> Option<&Lease> {
        self.find_at(ip, now)
    }

    /// Removes the client's lease; returns it.
    pub fn remove_client(&mut self, hw: &HwAddr, client_id: Option<&[u8]>) -> Option<Lease> {
        self.remove_where(|l| l.is_for(hw, client_id))
    }

    /// Whether a lease for this client could be stored now: it has one, there is a
    /// free place, or one that has ended can go.
    pub fn has_room(&self, hw: &HwAddr, client_id: Option<&[u8]>, now: Millis) -> bool {
        self.has_room_for(|l| l.is_for(hw, client_id), now)
    }

    /// Puts `lease` in the table, replacing the client's previous lease and any
    /// ended lease on the same address. When full, ended leases are swept; if still
    /// full the lease is refused (`false`).
    pub fn upsert(&mut self, lease: Lease, now: Millis) -> bool {
        let cid = lease.client_id.clone();
        self.leases.retain(|l| {
            !(l.is_for(&lease.hw, cid.as_deref()) || (l.ip == lease.ip && !l.is_active(now)))
        });
        if self.leases.iter().any(|l| l.ip == lease.ip) {
            return false;
        }
        self.push_bounded(lease, now)
    }

    /// Takes host name `name` (case-insensitive) away from every lease but the
    /// one on `keep`.
    pub fn clear_hostname(&mut self, name: &str, keep: Ipv4Addr) {
        self.clear_hostname_where(name, |l| l.ip == keep);
    }

    /// The active leases as dnsmasq's lease file.
    pub fn to_text(&self, now: Millis, epoch_offset_secs: u64) -> String {
        let mut s = String::new();
        let _ = self.write_text(&mut s, now, epoch_offset_secs);
        s
    }

    /// [`Self::to_text`] written to `out` line by line; stops at `out`'s first error.
    pub fn write_text(
        &self,
        out: &mut dyn Write,
        now: Millis,
        epoch_offset_secs: u64,
    ) -> fmt::Result {
        for l in self.active(now) {
            let expiry = l
                .expires
                .map_or(0, |e| epoch_offset_secs.saturating_add(e / 1000));
            write!(out, "{} ", expiry)?;
            if l.hw.htype != 1 {
                write!(out, "{:02x}-", l.hw.htype)?;
            }
            write_hex(out, l.hw.as_bytes())?;
            write!(out, " {} {} ", l.ip, l.hostname.as_deref().unwrap_or("*"))?;
            match &l.client_id {
                Some(c) => write_hex(out, c)?,
                None => out.write_char('*')?,
            }
            out.write_char('\n')?;
        }
        Ok(())
    }
}

/// `bytes` as colon-separated hex (as dnsmasq writes hardware addresses, client
/// ids and DUIDs).
pub fn write_hex(out: &mut dyn Write, bytes: &[u8]) -> fmt::Result {
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            out.write_char(':')?;
        }
        write!(out, "{:02x}", b)?;
    }
    Ok(())
}

/// Text that grows fallibly and never past a bound: a write that would take it
/// past `max` bytes, or that the heap cannot make room for, fails ([`fmt::Error`])
/// and leaves it as it was. The lease file is built in one, so a large table
/// cannot take more of the heap than the file may hold.
#[derive(Clone, Debug, Default)]
pub struct BoundedText {
    text: String,
    max: usize,
}

impl BoundedText {
    /// Empty, for at most `max` bytes.
    pub fn new(max: usize) -> BoundedText {
        BoundedText {
            text: String::new(),
            max,
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The text, taken out.
    pub fn into_string(self) -> String {
        self.text
    }
}

impl Write for BoundedText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let need = self.text.len().checked_add(s.len()).ok_or(fmt::Error)?;
        if need > self.max {
            return Err(fmt::Error);
        }
        if need > self.text.capacity() {
            // Doubling, but never past the bound.
            let want = self.text.capacity().saturating_mul(2).clamp(need, self.max);
            self.text
                .try_reserve_exact(want - self.text.len())
                .map_err(|_| fmt::Error)?;
        }
        self.text.push_str(s);
        Ok(())
    }
}

/// Colon-separated hex of at most `max` bytes, as [`write_hex`] writes it.
pub fn parse_hex(s: &str, max: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for part in s.split(':') {
        if part.is_empty() || part.len() > 2 || out.len() >= max {
            return None;
        }
        out.push(u8::from_str_radix(part, 16).ok()?);
    }
    Some(out)
}

/// The five whitespace-separated fields of a lease line (dnsmasq's, either
/// family); `None` unless exactly five.
pub fn lease_fields(line: &str) -> Option<[&str; 5]> {
    let mut f = line.split_ascii_whitespace();
    let fields = [f.next()?, f.next()?, f.next()?, f.next()?, f.next()?];
    f.next().is_none().then_some(fields)
}

/// A lease line's host name field: `*` for none, else a name that
/// [`sanitize_hostname`] keeps as it is (`None` if it does not).
pub fn lease_hostname(field: &str) -> Option<Option<String>> {
    match field {
        "*" => Some(None),
        n => Some(Some(sanitize_hostname(n.as_bytes()).filter(|s| s == n)?)),
    }
}

/// One line of a lease file, read but not yet checked against a pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseLine {
    /// Expiry in epoch seconds, 0 for never.
    pub expiry_epoch: u64,
    /// Hardware address.
    pub hw: HwAddr,
    /// Address.
    pub ip: Ipv4Addr,
    /// Host name, if not `*`.
    pub hostname: Option<String>,
    /// Client id, if not `*`.
    pub client_id: Option<Vec<u8>>,
}

impl LeaseLine {
    /// The lease it records, ending at `expires` (monotonic ms, `None` for never).
    pub fn into_lease(self, expires: Option<Millis>) -> Lease {
        Lease {
            hw: self.hw,
            client_id: self.client_id,
            ip: self.ip,
            hostname: self.hostname,
            expires,
        }
    }

    /// Parses one line; `None` if it is not exactly five well-formed fields.
    pub fn parse(line: &str) -> Option<LeaseLine> {
        let [exp, hw, ip, name, cid] = lease_fields(line)?;
        let expiry_epoch = exp.parse::<u64>().ok()?;
        let (htype, hw) = match hw.split_once('-') {
            Some((t, rest)) => (u8::from_str_radix(t, 16).ok()?, rest),
            None => (1, hw),
        };
        let hw = HwAddr::new(htype, &parse_hex(hw, 16)?)?;
        if htype == 1 && hw.as_bytes().len() != 6 {
            return None;
        }
        let ip = ip.parse::<Ipv4Addr>().ok()?;
        let hostname = lease_hostname(name)?;
        let client_id = match cid {
            "*" => None,
            c => Some(parse_hex(c, 255)?),
        };
        Some(LeaseLine {
            expiry_epoch,
            hw,
            ip,
            hostname,
            client_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];

    fn lease(ip: [u8; 4], mac: [u8; 6], expires: Option<Millis>) -> Lease {
        Lease {
            hw: HwAddr::ethernet(mac),
            client_id: Some(alloc::vec![
                1, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]
            ]),
            ip: Ipv4Addr::from(ip),
            hostname: Some(String::from("lan1")),
            expires,
        }
    }

    #[test]
    fn lease_file_round_trip() {
        let mut t = LeaseTable::new(4);
        assert!(t.upsert(lease([192, 168, 1, 120], MAC, Some(43_200_000)), 0));
        let mut other = lease([192, 168, 1, 121], [2, 0, 0, 0, 0, 9], None);
        other.client_id = None;
        other.hostname = None;
        assert!(t.upsert(other, 0));
        let text = t.to_text(1000, 1_700_000_000);
        assert_eq!(
            text,
            "1700043200 52:54:00:12:34:56 192.168.1.120 lan1 01:52:54:00:12:34:56\n\
             0 02:00:00:00:00:09 192.168.1.121 * *\n"
        );
        let l = LeaseLine::parse(text.lines().next().unwrap()).unwrap();
        assert_eq!(l.expiry_epoch, 1_700_043_200);
        assert_eq!(l.hw.as_ethernet(), Some(MAC));
        assert_eq!(l.hostname.as_deref(), Some("lan1"));
        assert_eq!(
            l.client_id.as_deref(),
            Some(&[1, 0x52, 0x54, 0, 0x12, 0x34, 0x56][..])
        );
    }

    #[test]
    fn corrupt_lines_are_refused() {
        for bad in [
            "",
            "x 52:54:00:12:34:56 192.168.1.120 lan1 *",
            "1 52:54:00:12:34 192.168.1.120 lan1 *",
            "1 52:54:00:12:34:56 192.168.1.300 lan1 *",
            "1 52:54:00:12:34:56 192.168.1.120 bad_name *",
            "1 52:54:00:12:34:56 192.168.1.120 lan1 zz",
            "1 52:54:00:12:34:56 192.168.1.120 lan1 * extra",
            "1 52:54:00:12:34:566 192.168.1.120 lan1 *",
        ] {
            assert_eq!(LeaseLine::parse(bad), None, "{bad}");
        }
        let l = LeaseLine::parse("5 20-01:02:03 10.0.0.5 * *").unwrap();
        assert_eq!(l.hw.htype, 0x20);
        assert_eq!(l.hw.as_bytes(), &[1, 2, 3]);
    }

    #[test]
    fn table_is_bounded() {
        let mut t = LeaseTable::new(2);
        assert!(t.upsert(lease([10, 0, 0, 1], [2, 0, 0, 0, 0, 1], Some(100)), 0));
        assert!(t.upsert(lease([10, 0, 0, 3], [2, 0, 0, 0, 0, 3], Some(100)), 0));
        let (known, new) = (
            HwAddr::ethernet([2, 0, 0, 0, 0, 3]),
            HwAddr::ethernet([2; 6]),
        );
        assert!(t.has_room(&known, None, 0) && !t.has_room(&new, None, 0));
        assert!(t.has_room(&new, None, 100));
        assert!(!t.upsert(lease([10, 0, 0, 4], [2, 0, 0, 0, 0, 4], Some(100)), 0));
        // Once the leases end there is room again.
        assert!(t.upsert(lease([10, 0, 0, 4], [2, 0, 0, 0, 0, 4], Some(300)), 200));
    }

    #[test]
    fn the_lease_file_text_stops_at_its_bound() {
        let mut t = LeaseTable::new(64);
        for i in 0..64u8 {
            let mut l = lease([10, 0, 0, i], [2, 0, 0, 0, 0, i], None);
            l.client_id = Some(alloc::vec![i; 255]);
            assert!(t.upsert(l, 0));
        }
        let full = t.to_text(0, 0);
        assert!(full.len() > 40_000, "{}", full.len());
        let mut text = BoundedText::new(16 * 1024);
        assert!(t.write_text(&mut text, 0, 0).is_err());
        // What fitted, never past the bound (the caller drops it).
        assert!(text.as_str().len() <= 16 * 1024);
        assert!(full.starts_with(text.as_str()));
        let mut text = BoundedText::new(full.len());
        assert!(t.write_text(&mut text, 0, 0).is_ok());
        assert_eq!(text.into_string(), full);
    }

    #[test]
    fn hostnames_are_cleaned() {
        assert_eq!(sanitize_hostname(b"lan1.home").as_deref(), Some("lan1"));
        assert_eq!(sanitize_hostname(b"my-pc\0").as_deref(), Some("my-pc"));
        assert_eq!(sanitize_hostname(b"bad name"), None);
        assert_eq!(sanitize_hostname(b"-x"), None);
        assert_eq!(sanitize_hostname(&[b'a'; 64]), None);
    }
}
