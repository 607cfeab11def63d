//! 2-level event channels (xen/include/public/event_channel.h, xen.h): the pending
//! scan run on every upcall, and per-port mask/pending bits.
//!
//! A scan serves every port that is pending and unmasked exactly once, in
//! round-robin order starting after the port served last, so one busy port cannot
//! starve the others (Linux's `xen_evtchn_handle_events` does the same).

use crate::abi::*;
use crate::shared_info::SharedInfo;
use core::fmt;

/// An event channel port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Port(pub u32);

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Ports the 2-level ABI can address (64 × 64 for a 64-bit guest).
pub const MAX_PORTS: u32 = (EVTCHN_WORDS * 64) as u32;

fn word_bit(port: Port) -> Option<(usize, u64)> {
    (port.0 < MAX_PORTS).then(|| ((port.0 / 64) as usize, 1u64 << (port.0 % 64)))
}

/// Round-robin position of the pending scan.
#[derive(Debug, Default)]
pub struct PendingScan {
    last: Option<u32>,
}

impl PendingScan {
    /// A scan starting at port 0.
    pub const fn new() -> Self {
        PendingScan { last: None }
    }

    /// Clears the upcall flag, takes the pending selector and calls `f` once for each
    /// pending, unmasked port (clearing its pending bit first). Returns the count.
    pub fn scan(&mut self, si: &SharedInfo, vcpu: usize, mut f: impl FnMut(Port)) -> usize {
        let page = si.page();
        let vi = SharedInfo::vcpu_info(vcpu);
        page.store_u8(vi + VCPU_INFO_UPCALL_PENDING, 0);
        let sel = page.swap_u64(vi + VCPU_INFO_PENDING_SEL, 0);
        if sel == 0 {
            return 0;
        }
        // Collect the ready set first, then serve it in rotated order.
        let mut ready = [0u64; EVTCHN_WORDS];
        for (w, slot) in ready.iter_mut().enumerate() {
            if sel & (1 << w) != 0 {
                let p = page.load_u64(SHARED_INFO_EVTCHN_PENDING + w * 8);
                let m = page.load_u64(SHARED_INFO_EVTCHN_MASK + w * 8);
                *slot = p & !m;
            }
        }
        let start = self.last.map_or(0, |l| (l + 1) % MAX_PORTS);
        let mut served = 0;
        for i in 0..MAX_PORTS {
            let port = (start + i) % MAX_PORTS;
            let (w, bit) = ((port / 64) as usize, 1u64 << (port % 64));
            if ready[w] & bit == 0 {
                continue;
            }
            page.and_u64(SHARED_INFO_EVTCHN_PENDING + w * 8, !bit);
            self.last = Some(port);
            served += 1;
            f(Port(port));
        }
        served
    }
}

/// Whether `vcpu`'s upcall flag is set: events are pending that no scan has taken.
/// Xen raises the upcall only when it sets the flag, so a flag left set (an event
/// that came while no callback was registered: across a restore) raises none again
/// until a scan clears it.
pub fn upcall_pending(si: &SharedInfo, vcpu: usize) -> bool {
    si.page()
        .load_u8(SharedInfo::vcpu_info(vcpu) + VCPU_INFO_UPCALL_PENDING)
        != 0
}

/// Masks `port` (its events stay pending but do not raise upcalls).
pub fn mask(si: &SharedInfo, port: Port) {
    if let Some((w, bit)) = word_bit(port) {
        si.page().or_u64(SHARED_INFO_EVTCHN_MASK + w * 8, bit);
    }
}

/// Unmasks `port` as Linux's `evtchn_2l_unmask` does on HVM: clear the mask bit, then
/// look at the pending bit; if an event is pending, set the mask bit again and let
/// `EVTCHNOP_unmask` (`hypercall`) clear it: Xen re-raises a pending event only when
/// it finds the mask bit still set, so clearing it here first would lose the event.
/// Returns whether the hypercall was made.
pub fn unmask(si: &SharedInfo, port: Port, hypercall: impl FnOnce(Port)) -> bool {
    let Some((w, bit)) = word_bit(port) else {
        return false;
    };
    // Clear before testing pending, so an event that becomes pending in between is
    // seen here or raised by Xen (it is unmasked by then).
    si.page().and_u64(SHARED_INFO_EVTCHN_MASK + w * 8, !bit);
    if si.page().load_u64(SHARED_INFO_EVTCHN_PENDING + w * 8) & bit == 0 {
        return false;
    }
    si.page().or_u64(SHARED_INFO_EVTCHN_MASK + w * 8, bit);
    hypercall(port);
    true
}

/// A fixed-size table of per-port handlers: no allocation, so the upcall can read it.
/// A port has at most one entry; closing a port removes it, so a reused port number
/// never reaches the closed port's handler.
#[derive(Clone, Copy, Debug)]
pub struct PortTable<H: Copy, const N: usize> {
    entries: [Option<(Port, H)>; N],
}

/// The table is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableFull;

impl<H: Copy, const N: usize> PortTable<H, N> {
    /// An empty table.
    pub const fn new() -> Self {
        PortTable { entries: [None; N] }
    }

    /// Sets `port`'s handler (replacing the one it had).
    pub fn set(&mut self, port: Port, h: H) -> Result<(), TableFull> {
        if let Some(e) = self.entries.iter_mut().flatten().find(|(p, _)| *p == port) {
            e.1 = h;
            return Ok(());
        }
        let free = self
            .entries
            .iter_mut()
            .find(|e| e.is_none())
            .ok_or(TableFull)?;
        *free = Some((port, h));
        Ok(())
    }

    /// Removes `port`'s handler; whether it had one.
    pub fn remove(&mut self, port: Port) -> bool {
        match self
            .entries
            .iter_mut()
            .find(|e| e.is_some_and(|(p, _)| p == port))
        {
            Some(e) => {
                *e = None;
                true
            }
            None => false,
        }
    }

    /// `port`'s handler.
    pub fn get(&self, port: Port) -> Option<H> {
        self.entries
            .iter()
            .flatten()
            .find(|(p, _)| *p == port)
            .map(|(_, h)| *h)
    }

    /// Every (port, handler).
    pub fn iter(&self) -> impl Iterator<Item = (Port, H)> + '_ {
        self.entries.iter().flatten().copied()
    }
}

impl<H: Copy, const N: usize> Default for PortTable<H, N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::testpage::page;

    fn raise(si: &SharedInfo, port: u32) {
        let (w, bit) = word_bit(Port(port)).unwrap();
        si.page().or_u64(SHARED_INFO_EVTCHN_PENDING + w * 8, bit);
        si.page().or_u64(VCPU_INFO_PENDING_SEL, 1 << w);
        si.page().store_u8(VCPU_INFO_UPCALL_PENDING, 1);
    }

    /// Xen's `evtchn_unmask` (common/event_2l.c): only if it finds the mask bit set
    /// does it clear it and, with the port pending, raise the selector and upcall.
    fn xen_unmask(si: &SharedInfo, port: Port) {
        let (w, bit) = word_bit(port).unwrap();
        let was_masked = si.page().and_u64(SHARED_INFO_EVTCHN_MASK + w * 8, !bit) & bit != 0;
        let pending = si.page().load_u64(SHARED_INFO_EVTCHN_PENDING + w * 8) & bit != 0;
        if was_masked && pending {
            si.page().or_u64(VCPU_INFO_PENDING_SEL, 1 << w);
            si.page().store_u8(VCPU_INFO_UPCALL_PENDING, 1);
        }
    }

    fn collect(scan: &mut PendingScan, si: &SharedInfo) -> Vec<u32> {
        let mut v = Vec::new();
        scan.scan(si, 0, |p| v.push(p.0));
        v
    }

    #[test]
    fn the_upcall_flag_left_set_is_seen_and_a_scan_clears_it() {
        let si = SharedInfo::new(page());
        assert!(!upcall_pending(&si, 0));
        raise(&si, 5);
        assert!(upcall_pending(&si, 0));
        assert_eq!(collect(&mut PendingScan::new(), &si), [5]);
        assert!(!upcall_pending(&si, 0));
    }

    #[test]
    fn serves_pending_unmasked_ports_once_and_clears_them() {
        let si = SharedInfo::new(page());
        for p in [3, 64, 700, 4095] {
            raise(&si, p);
        }
        mask(&si, Port(700));
        let mut scan = PendingScan::new();
        assert_eq!(collect(&mut scan, &si), vec![3, 64, 4095]);
        assert!(!si.upcall_pending(0));
        // nothing left but the masked port, and the selector is consumed
        assert!(collect(&mut scan, &si).is_empty());
        // unmasking hands the held event to Xen's EVTCHNOP_unmask
        assert!(unmask(&si, Port(700), |p| xen_unmask(&si, p)));
        assert_eq!(collect(&mut scan, &si), vec![700]);
        assert!(!unmask(&si, Port(5), |_| panic!("nothing pending on 5")));
    }

    #[test]
    fn a_busy_port_does_not_starve_the_others() {
        let si = SharedInfo::new(page());
        let mut scan = PendingScan::new();
        raise(&si, 1);
        raise(&si, 2);
        raise(&si, 3);
        assert_eq!(collect(&mut scan, &si), vec![1, 2, 3]);
        // port 1 fires constantly; port 200 fires once: it is still served in the
        // first scan after it was raised, and the scan resumes after the last port.
        raise(&si, 1);
        raise(&si, 200);
        assert_eq!(collect(&mut scan, &si), vec![200, 1]);
        raise(&si, 1);
        raise(&si, 150);
        assert_eq!(collect(&mut scan, &si), vec![150, 1]);
    }

    #[test]
    fn port_table_is_fixed_size_and_a_closed_port_leaves_no_entry() {
        let mut t: PortTable<u32, 3> = PortTable::new();
        t.set(Port(5), 1).unwrap();
        t.set(Port(6), 2).unwrap();
        t.set(Port(5), 3).unwrap(); // replaced, not a second entry
        assert_eq!(t.get(Port(5)), Some(3));
        assert_eq!(t.iter().count(), 2);
        t.set(Port(7), 4).unwrap();
        assert_eq!(t.set(Port(8), 5), Err(TableFull));
        // port 5 closed, then handed out again by Xen to another user
        assert!(t.remove(Port(5)));
        assert!(!t.remove(Port(5)));
        assert_eq!(t.get(Port(5)), None);
        t.set(Port(5), 9).unwrap();
        assert_eq!(t.get(Port(5)), Some(9), "the new handler, not the old one");
        assert_eq!(t.iter().filter(|(p, _)| *p == Port(5)).count(), 1);
    }

    #[test]
    fn out_of_range_ports_are_ignored() {
        let si = SharedInfo::new(page());
        mask(&si, Port(MAX_PORTS));
        assert!(!unmask(&si, Port(u32::MAX), |_| panic!("no such port")));
    }
}
