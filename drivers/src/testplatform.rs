//! A fake Xen for the frontends' host tests: one [`XenPlatform`] that netfront's and
//! blkfront's tests share. It holds XenStore as a map of full paths, grantable pages
//! over heap memory, a grant table, event channels and a clock, plus one backend
//! domain (id 0) that answers the xenbus handshake.
//!
//! Every way a real backend or Xen can let a frontend down is a knob:
//! - the backend: stalls (never connects: [`FakeXen::backend_stalls`]), fails once the
//!   rings are published (goes Closing: [`FakeXen::backend_fails`]), follows a close
//!   or not ([`FakeXen::backend_follows_close`]), keeps pages mapped so that ending
//!   their grants fails ([`FakeXen::mapped`]), and lies in its XenStore keys
//!   (`backend-id`, `mac`, `mtu`, queue counts, sizes: write them into
//!   [`FakeXen::xs`]);
//! - Xen: runs out of grants ([`FakeXen::grant_limit`]), of memory
//!   ([`FakeXen::page_limit`]) or of event channels ([`FakeXen::evtchn_fails`]);
//! - XenStore: fails a read, write or remove of a chosen path
//!   ([`FakeXen::fail_xs`]) and refuses watches ([`FakeXen::watch_fails`], the
//!   frontend then polls).
//!
//! Lies on the rings (ids out of range or not in flight, lengths past the page,
//! unknown statuses) are written by each driver's tests through the ring pages
//! ([`FakeXen::page_of`], [`FakeXen::page_by_gref`]), as a backend writes them.
//!
//! For a backend's tests (netback) it also plays the other domains: pages they
//! granted us ([`FakeXen::grant_foreign`]), which the backend maps and copies to and
//! from, and every way that can fail: a reference that names nothing or was revoked
//! (`GNTST_bad_gntref`), a domain that does not exist (`GNTST_bad_domain`), a write
//! through a read-only grant (`GNTST_permission_denied`), a copy that fails alone
//! ([`FakeXen::copy_failing`]) or a whole copy hypercall that fails
//! ([`FakeXen::copy_hypercall_fails`]), mapping, unmapping or binding that fails
//! ([`FakeXen::map_fails`], [`FakeXen::unmap_fails`], [`FakeXen::bind_fails`]).
//!
//! The backend can also be scripted: [`FakeXen::script`] is a list of states it
//! goes through, one per watch firing (or per plain wait when watches fail). Time
//! passes only while the frontend waits: a millisecond per plain wait, and a wait on
//! a watch with nothing left to change sleeps to its deadline, so a wait for a
//! backend that never answers times out at once.

use crate::platform::{CopyDir, CopyOp, DmaPages, ForeignPage, Watch, XenBackend, XenPlatform};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use xenlet_xen::evtchn::Port;
use xenlet_xen::gnttab::{Access, Grant, GrantError, GrantRef};
use xenlet_xen::shared::SharedPage;
use xenlet_xen::xenstore::XsError;
use xenlet_xen::XenError;

/// A fake kernel and Xen with one scripted backend domain (id 0) serving one
/// frontend device.
#[derive(Default)]
pub(crate) struct FakeXen {
    /// The frontend's directory (`device/vif/0`, `device/vbd/51712`).
    pub(crate) frontend: String,
    /// The backend's directory.
    pub(crate) backend: String,
    /// XenStore: full path to value.
    pub(crate) xs: RefCell<BTreeMap<String, String>>,
    /// Every run of pages allocated, by its first frame.
    pub(crate) pages: RefCell<BTreeMap<u64, SharedPage>>,
    /// Live grants: reference to frame.
    pub(crate) grants: RefCell<BTreeMap<u32, u64>>,
    /// Each live grant's access.
    pub(crate) access: RefCell<BTreeMap<u32, Access>>,
    /// Grants the backend keeps mapped: ending them fails, as Xen's
    /// `gnttab_end_foreign_access` does while a mapping exists.
    pub(crate) mapped: RefCell<BTreeSet<u32>>,
    pub(crate) next_gfn: Cell<u64>,
    pub(crate) next_gref: Cell<u32>,
    pub(crate) next_port: Cell<u32>,
    /// "+path" for each watch set, "-path" for each removed.
    pub(crate) watch_log: RefCell<Vec<String>>,
    /// Ports notified, in order.
    pub(crate) notified: RefCell<Vec<u32>>,
    /// Ports closed, in order.
    pub(crate) closed: RefCell<Vec<u32>>,
    /// Pages given back.
    pub(crate) pages_freed: Cell<usize>,
    /// Every frame given back.
    pub(crate) freed: RefCell<Vec<u64>>,
    /// The frontend state (its number, as written) at which the backend goes
    /// Connected: Initialised ("3") for blkback, Connected ("4") for netback; never
    /// when empty.
    pub(crate) backend_connects_on: Cell<&'static str>,
    /// The backend never goes Connected.
    pub(crate) backend_stalls: Cell<bool>,
    /// The backend goes Closing instead of Connected (it could not map the rings).
    pub(crate) backend_fails: Cell<bool>,
    /// The backend goes Closed when the frontend does.
    pub(crate) backend_follows_close: Cell<bool>,
    /// Grants made before the grant table is "full".
    pub(crate) grant_limit: Cell<Option<usize>>,
    /// Pages that can be allocated and not yet given back at once: past it,
    /// memory has run out.
    pub(crate) page_limit: Cell<Option<usize>>,
    /// Pages allocated so far (given back or not).
    pub(crate) pages_allocated: Cell<usize>,
    /// Allocating an event channel fails (Xen is out of ports).
    pub(crate) evtchn_fails: Cell<bool>,
    /// XenStore paths whose read, write or remove fails (`EACCES`).
    pub(crate) xs_failing: RefCell<BTreeSet<String>>,
    /// Setting a watch fails.
    pub(crate) watch_fails: Cell<bool>,
    /// The backend's next states, last first: one is taken per watch firing or
    /// plain wait.
    pub(crate) script: RefCell<Vec<&'static str>>,
    /// XenStore reads.
    pub(crate) reads: Cell<u32>,
    /// XenStore writes.
    pub(crate) xs_writes: Cell<u32>,
    /// Waits on a watch.
    pub(crate) watch_waits: Cell<u32>,
    /// Plain waits ([`XenPlatform::wait`]).
    pub(crate) plain_waits: Cell<u32>,
    /// The clock, in nanoseconds.
    pub(crate) clock: Cell<u64>,
    /// Times the domain was restored or migrated ([`FakeXen::restore`]).
    pub(crate) resumes: Cell<u32>,
    /// Pages other domains granted us, by (domain, reference): the page and whether
    /// the grant is read-write.
    pub(crate) foreign: RefCell<BTreeMap<(u16, u32), (SharedPage, bool)>>,
    pub(crate) next_foreign_gref: Cell<u32>,
    /// Live mappings of other domains' grants: handle to (domain, reference).
    pub(crate) mappings: RefCell<BTreeMap<u32, (u16, u32)>>,
    pub(crate) next_handle: Cell<u32>,
    /// Mappings undone.
    pub(crate) unmaps: Cell<u32>,
    /// Mapping a grant fails (`GNTST_general_error`), whatever the grant.
    pub(crate) map_fails: Cell<bool>,
    /// Unmapping fails.
    pub(crate) unmap_fails: Cell<bool>,
    /// References whose copies fail (`GNTST_general_error`).
    pub(crate) copy_failing: RefCell<BTreeSet<u32>>,
    /// The copy hypercall itself fails: no op is done.
    pub(crate) copy_hypercall_fails: Cell<bool>,
    /// Copy hypercalls made, and the ops they carried.
    pub(crate) copy_calls: Cell<u32>,
    pub(crate) copy_ops: Cell<u64>,
    /// Binding to another domain's port fails.
    pub(crate) bind_fails: Cell<bool>,
    /// Ports bound to other domains: (local port, domain, its port).
    pub(crate) bound: RefCell<Vec<(u32, u16, u32)>>,
    /// Loopback: the frontend's home (`/local/domain/<id>/`), stripped from the
    /// paths a backend reads, so that a frontend and a backend share this fake...
    pub(crate) home: RefCell<String>,
    /// ... and the domain id under which the pages this fake's frontend granted
    /// ([`XenPlatform::grant`]) are mapped and copied by the backend.
    pub(crate) loopback_domid: Cell<Option<u16>>,
    /// Events that came on each port ([`FakeXen::fire`]), for
    /// [`XenPlatform::port_events`].
    pub(crate) port_events: RefCell<BTreeMap<u32, u64>>,
}

impl FakeXen {
    /// A Xen whose backend at `backend` waits (InitWait) for the frontend at
    /// `frontend`, and connects when the frontend's state becomes `connects_on`.
    pub(crate) fn with_device(frontend: &str, backend: &str, connects_on: &'static str) -> Self {
        let f = FakeXen {
            frontend: frontend.into(),
            backend: backend.into(),
            ..FakeXen::default()
        };
        f.next_gfn.set(0x1000);
        f.next_gref.set(8);
        f.next_port.set(9);
        f.backend_connects_on.set(connects_on);
        f.set(&format!("{frontend}/backend"), backend);
        f.set(&format!("{frontend}/backend-id"), "0");
        f.set(&format!("{backend}/state"), "2");
        f
    }

    /// An event comes on `port` (its handler counts it, as the kernel's does).
    pub(crate) fn fire(&self, port: u32) {
        *self.port_events.borrow_mut().entry(port).or_default() += 1;
    }

    /// Has the backend go through `states`, one per watch firing or plain wait.
    pub(crate) fn script(&self, states: &[&'static str]) {
        *self.script.borrow_mut() = states.iter().rev().copied().collect();
    }

    /// The backend's next scripted step, if any: true if it took one.
    fn step(&self) -> bool {
        let Some(s) = self.script.borrow_mut().pop() else {
            return false;
        };
        self.set(&format!("{}/state", self.backend), s);
        true
    }

    /// The paths watched, in order.
    pub(crate) fn watched(&self) -> Vec<String> {
        self.watch_log_entries('+')
    }

    /// The paths whose watch was removed, in order.
    pub(crate) fn unwatched(&self) -> Vec<String> {
        self.watch_log_entries('-')
    }

    fn watch_log_entries(&self, sign: char) -> Vec<String> {
        self.watch_log
            .borrow()
            .iter()
            .filter_map(|e| e.strip_prefix(sign).map(String::from))
            .collect()
    }

    /// Sets a XenStore key.
    pub(crate) fn set(&self, key: &str, value: &str) {
        let key = self.norm(key);
        self.xs.borrow_mut().insert(key, value.into());
    }

    /// A path as stored: without the loopback frontend's home.
    fn norm(&self, path: &str) -> String {
        let home = self.home.borrow();
        match path.strip_prefix(home.as_str()) {
            Some(rest) if !home.is_empty() => rest.into(),
            _ => path.into(),
        }
    }

    /// The page the loopback frontend granted as `gref` (through
    /// [`XenPlatform::grant`]), if `domid` is the loopback domain: the page and
    /// whether the grant is read-write.
    fn loopback_page(&self, domid: u16, gref: u32) -> Option<(SharedPage, bool)> {
        if self.loopback_domid.get() != Some(domid) {
            return None;
        }
        let gfn = *self.grants.borrow().get(&gref)?;
        let rw = self.access.borrow().get(&gref) == Some(&Access::ReadWrite);
        let page = self.pages.borrow().get(&gfn)?.alias_for_test();
        Some((page, rw))
    }

    /// Whether domain `domid` exists (has granted us something, or is the
    /// loopback frontend).
    fn domain_exists(&self, domid: u16) -> bool {
        self.loopback_domid.get() == Some(domid)
            || self.foreign.borrow().keys().any(|(d, _)| *d == domid)
    }

    /// A XenStore key's value.
    pub(crate) fn key(&self, key: &str) -> Option<String> {
        self.xs.borrow().get(key).cloned()
    }

    /// The XenStore keys that start with `prefix`, in order.
    pub(crate) fn keys_under(&self, prefix: &str) -> Vec<String> {
        self.xs
            .borrow()
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// Makes every XenStore operation on `path` fail.
    pub(crate) fn fail_xs(&self, path: &str) {
        self.xs_failing.borrow_mut().insert(path.into());
    }

    fn xs_check(&self, path: &str) -> Result<(), XsError> {
        if self.xs_failing.borrow().contains(path) {
            return Err(XsError::Remote("EACCES".into()));
        }
        Ok(())
    }

    /// The page of the grant whose reference XenStore's `key` holds.
    pub(crate) fn page_of(&self, key: &str) -> SharedPage {
        let gref: u32 = self.xs.borrow()[key].parse().unwrap();
        self.page_by_gref(gref)
    }

    /// The page (the run of pages) grant `gref` is for.
    pub(crate) fn page_by_gref(&self, gref: u32) -> SharedPage {
        let gfn = self.grants.borrow()[&gref];
        self.pages.borrow()[&gfn].alias_for_test()
    }

    /// The page of `gref` for the backend to write: only through a read-write
    /// grant, as Xen enforces.
    pub(crate) fn writable_page_by_gref(&self, gref: u32) -> SharedPage {
        assert_eq!(
            self.access.borrow().get(&gref),
            Some(&Access::ReadWrite),
            "the backend writes only through read-write grants"
        );
        self.page_by_gref(gref)
    }

    /// The domain is restored (or migrated) into a new one, as `xl restore` leaves
    /// it: memory as it was, an empty grant table (every reference the frontend
    /// holds names nothing now), event channel numbers handed out from the start
    /// again (an old port's number may be a new channel's), the frontend's directory
    /// rewritten by the toolstack (its own keys gone, state Initialising) and a new
    /// backend waiting (InitWait). Requests left in the old ring are never answered.
    pub(crate) fn restore(&self) {
        self.grants.borrow_mut().clear();
        self.access.borrow_mut().clear();
        self.mapped.borrow_mut().clear();
        self.next_port.set(1);
        let fe = format!("{}/", self.frontend);
        let keep = ["backend", "backend-id", "mac", "handle"];
        self.xs
            .borrow_mut()
            .retain(|k, _| !k.starts_with(&fe) || keep.iter().any(|x| k[fe.len()..] == **x));
        self.set(&format!("{}/state", self.frontend), "1");
        self.set(&format!("{}/state", self.backend), "2");
        self.resumes.set(self.resumes.get() + 1);
    }

    /// Every frame freed so far.
    pub(crate) fn freed_gfns(&self) -> Vec<u64> {
        self.freed.borrow().clone()
    }

    /// Ports closed so far.
    pub(crate) fn ports_closed(&self) -> usize {
        self.closed.borrow().len()
    }

    /// Domain `domid` grants us a fresh zeroed page (read-write if `writable`):
    /// its reference, and a handle on the page for the test playing that domain.
    pub(crate) fn grant_foreign(&self, domid: u16, writable: bool) -> (u32, SharedPage) {
        let r = self.next_foreign_gref.get().max(8);
        self.next_foreign_gref.set(r + 1);
        let page = SharedPage::leak_new(1);
        let alias = page.alias_for_test();
        self.foreign
            .borrow_mut()
            .insert((domid, r), (page, writable));
        (r, alias)
    }

    /// Domain `domid` ends its grant `gref` (copies and maps of it fail from now).
    pub(crate) fn revoke_foreign(&self, domid: u16, gref: u32) {
        self.foreign.borrow_mut().remove(&(domid, gref));
    }

    /// Mappings of other domains' grants still in place.
    pub(crate) fn live_mappings(&self) -> usize {
        self.mappings.borrow().len()
    }
}

impl XenBackend for &FakeXen {
    fn map_grant(&self, domid: u16, gref: u32, writable: bool) -> Result<ForeignPage, i16> {
        use xenlet_xen::gnttab::*;
        if self.map_fails.get() {
            return Err(GNTST_GENERAL_ERROR);
        }
        if !self.domain_exists(domid) {
            return Err(GNTST_BAD_DOMAIN);
        }
        let looped = self.loopback_page(domid, gref);
        let found = match looped {
            Some(p) => Some(p),
            None => self
                .foreign
                .borrow()
                .get(&(domid, gref))
                .map(|(p, rw)| (p.alias_for_test(), *rw)),
        };
        let Some((page, rw)) = found else {
            return Err(GNTST_BAD_GNTREF);
        };
        if writable && !rw {
            return Err(GNTST_PERMISSION_DENIED);
        }
        if self.loopback_domid.get() == Some(domid) {
            // the frontend cannot end this grant while it is mapped
            self.mapped.borrow_mut().insert(gref);
        }
        let h = self.next_handle.get();
        self.next_handle.set(h + 1);
        self.mappings.borrow_mut().insert(h, (domid, gref));
        Ok(ForeignPage::alias_for_test(
            &page,
            0x8_0000 + u64::from(h),
            h,
        ))
    }
    fn unmap_grant(&self, page: ForeignPage) -> bool {
        let (_, handle) = page.into_mapping();
        if self.unmap_fails.get() {
            return false;
        }
        self.unmaps.set(self.unmaps.get() + 1);
        match self.mappings.borrow_mut().remove(&handle) {
            Some((domid, gref)) => {
                if self.loopback_domid.get() == Some(domid) {
                    self.mapped.borrow_mut().remove(&gref);
                }
                true
            }
            None => false,
        }
    }
    fn grant_copy(&self, ops: &mut [CopyOp<'_>]) {
        use xenlet_xen::gnttab::*;
        self.copy_calls.set(self.copy_calls.get() + 1);
        self.copy_ops.set(self.copy_ops.get() + ops.len() as u64);
        let foreign = self.foreign.borrow();
        for op in ops.iter_mut() {
            op.status = if self.copy_hypercall_fails.get() {
                GNTST_GENERAL_ERROR
            } else if !op.in_bounds() {
                GNTST_BAD_COPY_ARG
            } else if !self.domain_exists(op.domid) {
                GNTST_BAD_DOMAIN
            } else if self.copy_failing.borrow().contains(&op.gref) {
                GNTST_GENERAL_ERROR
            } else {
                let looped = self.loopback_page(op.domid, op.gref);
                let found = looped
                    .as_ref()
                    .map(|(p, rw)| (p, *rw))
                    .or_else(|| foreign.get(&(op.domid, op.gref)).map(|(p, rw)| (p, *rw)));
                match found {
                    None => GNTST_BAD_GNTREF,
                    Some((_, false)) if op.dir == CopyDir::ToRemote => GNTST_PERMISSION_DENIED,
                    Some((page, _)) => {
                        let mut buf = alloc::vec![0u8; usize::from(op.len)];
                        let local = op.page * 4096 + usize::from(op.offset);
                        match op.dir {
                            CopyDir::FromRemote => {
                                page.read_bytes(usize::from(op.remote_offset), &mut buf);
                                op.local.mem().write_bytes(local, &buf);
                            }
                            CopyDir::ToRemote => {
                                op.local.mem().read_bytes(local, &mut buf);
                                page.write_bytes(usize::from(op.remote_offset), &buf);
                            }
                        }
                        GNTST_OKAY
                    }
                }
            };
        }
    }
    fn bind_interdomain(&self, remote: u16, remote_port: u32) -> Result<Port, XenError> {
        if self.bind_fails.get() {
            return Err(XenError::Inval);
        }
        let p = self.next_port.get().max(1);
        self.next_port.set(p + 1);
        self.bound.borrow_mut().push((p, remote, remote_port));
        Ok(Port(p))
    }
}

impl XenPlatform for &FakeXen {
    fn xs_read(&self, path: &str) -> Result<String, XsError> {
        let path = &self.norm(path);
        self.reads.set(self.reads.get() + 1);
        self.xs_check(path)?;
        self.xs
            .borrow()
            .get(path)
            .cloned()
            .ok_or_else(|| XsError::Remote("ENOENT".into()))
    }
    fn xs_write(&self, path: &str, value: &str) -> Result<(), XsError> {
        let path = &self.norm(path);
        self.xs_writes.set(self.xs_writes.get() + 1);
        self.xs_check(path)?;
        let own_state = path.strip_suffix("/state") == Some(self.frontend.as_str());
        let be_state = format!("{}/state", self.backend);
        if own_state && value == self.backend_connects_on.get() && !self.backend_stalls.get() {
            let to = if self.backend_fails.get() { "5" } else { "4" };
            self.set(&be_state, to);
        }
        if own_state && value == "6" && self.backend_follows_close.get() {
            self.set(&be_state, "6");
        }
        self.set(path, value);
        Ok(())
    }
    fn xs_rm(&self, path: &str) -> Result<(), XsError> {
        let path = &self.norm(path);
        self.xs_check(path)?;
        // the node and everything below it
        let below = format!("{path}/");
        self.xs
            .borrow_mut()
            .retain(|k, _| k != path && !k.starts_with(&below));
        Ok(())
    }
    fn xs_watch(&self, path: &str) -> Result<Watch, XsError> {
        if self.watch_fails.get() {
            return Err(XsError::Remote("EACCES".into()));
        }
        self.watch_log.borrow_mut().push(format!("+{path}"));
        Ok(Watch {
            path: path.into(),
            token: "fe".into(),
        })
    }
    fn xs_unwatch(&self, w: Watch) {
        self.watch_log.borrow_mut().push(format!("-{}", w.path));
    }
    fn wait_watch(&self, w: &Watch, deadline_ns: u64) -> bool {
        let count = |v: Vec<String>| v.iter().filter(|p| **p == w.path).count();
        assert!(
            count(self.watched()) > count(self.unwatched()),
            "waits only on a watch that is set"
        );
        self.watch_waits.set(self.watch_waits.get() + 1);
        if self.step() {
            return true;
        }
        // Nothing will change: sleep to the deadline.
        self.clock.set(self.clock.get().max(deadline_ns));
        false
    }
    fn alloc_pages(&self, count: usize) -> Option<DmaPages> {
        let live = self.pages_allocated.get() - self.pages_freed.get();
        if self.page_limit.get().is_some_and(|l| live + count > l) {
            return None;
        }
        self.pages_allocated.set(self.pages_allocated.get() + count);
        let gfn = self.next_gfn.get();
        self.next_gfn.set(gfn + count as u64);
        let (pages, alias) = DmaPages::leak_for_test(gfn, count);
        self.pages.borrow_mut().insert(gfn, alias);
        Some(pages)
    }
    fn free_pages(&self, p: DmaPages) {
        self.pages_freed.set(self.pages_freed.get() + p.count());
        let (gfn, count) = p.into_frames();
        self.freed.borrow_mut().extend(gfn..gfn + count as u64);
    }
    fn grant(
        &self,
        _domid: u16,
        pages: &DmaPages,
        index: usize,
        access: Access,
    ) -> Result<Grant, GrantError> {
        let gfn = pages.frame(index).ok_or(GrantError::NoSuchPage)?;
        if self
            .grant_limit
            .get()
            .is_some_and(|l| self.grants.borrow().len() >= l)
        {
            return Err(GrantError::Exhausted);
        }
        let r = self.next_gref.get();
        self.next_gref.set(r + 1);
        self.grants.borrow_mut().insert(r, gfn);
        self.access.borrow_mut().insert(r, access);
        Ok(Grant::new(GrantRef(r), gfn as u32))
    }
    fn end_grant(&self, g: Grant) -> Result<(), Grant> {
        if self.mapped.borrow().contains(&g.gref().0) {
            return Err(g);
        }
        self.grants.borrow_mut().remove(&g.gref().0);
        self.access.borrow_mut().remove(&g.gref().0);
        Ok(())
    }
    fn alloc_unbound(&self, _remote: u16) -> Result<Port, XenError> {
        if self.evtchn_fails.get() {
            return Err(XenError::NoMem);
        }
        let p = self.next_port.get();
        self.next_port.set(p + 1);
        Ok(Port(p))
    }
    fn close_port(&self, p: Port) {
        self.closed.borrow_mut().push(p.0);
    }
    fn notify(&self, p: Port) {
        self.notified.borrow_mut().push(p.0);
    }
    fn port_events(&self, p: Port) -> u64 {
        self.port_events.borrow().get(&p.0).copied().unwrap_or(0)
    }
    fn wait(&self) {
        self.plain_waits.set(self.plain_waits.get() + 1);
        self.step();
        self.clock.set(self.clock.get() + 1_000_000);
    }
    fn now_ns(&self) -> u64 {
        self.clock.get()
    }
    fn resumes(&self) -> u32 {
        self.resumes.get()
    }
}
