//! The PV frontends as the kernel runs them: [`KernelXen`] gives the drivers their
//! platform services (XenStore, grants, event channels, grantable pages), and the
//! connected disks live here for the shell.

use crate::sync::eventcount::EventCount;
use crate::{mm, time::clock, xen::gnttab, xen::platform as xen, xen::xenbus, xen::xenstore};
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use spin::Mutex;
use xenlet_drivers::blkfront::{Blkfront, BlockError};
use xenlet_drivers::platform::{DmaPages, Watch, XenPlatform};
use xenlet_xen::evtchn::Port;
use xenlet_xen::gnttab::{Access, Grant, GrantError};
use xenlet_xen::hypercall;
use xenlet_xen::shared::SharedPage;
use xenlet_xen::xenstore::XsError;
use xenlet_xen::XenError;

/// The kernel's implementation of the frontends' platform. A vif's event channels
/// also count on [`NET_EVENTS`], the network's own readiness (a disk's do not).
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelXen {
    net: bool,
}

impl KernelXen {
    /// For a disk (and for XenBus work that binds no port).
    pub const DISK: KernelXen = KernelXen { net: false };
    /// For a vif: its ports signal [`NET_EVENTS`].
    pub const NET: KernelXen = KernelXen { net: true };
}

/// Events on any vif's channels: the network service's readiness, which no other
/// wait consumes (`sync::eventcount`).
pub static NET_EVENTS: EventCount = EventCount::new();

fn on_vif_event(port: Port) {
    crate::dev::portevents::count(port);
    NET_EVENTS.signal();
}

impl XenPlatform for KernelXen {
    fn xs_read(&self, path: &str) -> Result<String, XsError> {
        xenstore::read(path)
    }
    fn xs_write(&self, path: &str, value: &str) -> Result<(), XsError> {
        xenstore::write(path, value)
    }
    fn xs_rm(&self, path: &str) -> Result<(), XsError> {
        match xenstore::rm(path) {
            Err(XsError::Remote(e)) if e == "ENOENT" => Ok(()),
            r => r,
        }
    }
    fn xs_watch(&self, path: &str) -> Result<Watch, XsError> {
        let token = xenstore::watch_for_wait(path)?;
        Ok(Watch {
            path: String::from(path),
            token,
        })
    }
    fn xs_unwatch(&self, watch: Watch) {
        let _ = xenstore::unwatch(&watch.path, &watch.token);
    }
    fn wait_watch(&self, watch: &Watch, deadline_ns: u64) -> bool {
        let deadline = clock::Instant::from_nanos(deadline_ns);
        let mut wait = crate::xen::idle::Wait::new();
        loop {
            if xenstore::take_fired(&watch.token) {
                WATCH_WAKEUPS.fetch_add(1, Ordering::Relaxed);
                return true;
            }
            if clock::now() >= deadline {
                return false;
            }
            // The watch event arrives on the store's event channel and ends the halt.
            wait.until(Some(deadline));
        }
    }
    fn alloc_pages(&self, count: usize) -> Option<DmaPages> {
        let run = mm::heap::alloc_frames(count as u64, 1)?;
        // SAFETY: a run of frames just taken from the allocator, identity-mapped below the mapping limit and owned by nobody else; from now on it is reached only through this SharedPage (it may be granted to a backend).
        let mem = unsafe { SharedPage::new_region(run.addr as *mut u8, count) };
        mem.zero();
        // SAFETY: `mem` is exactly the `count` frames at `run.addr` (identity-mapped, so guest frame `run.addr >> 12` on), just allocated and handed over whole: they go back to the allocator only through `free_pages`.
        Some(unsafe { DmaPages::from_frames(mem, run.addr >> 12, count) })
    }
    fn free_pages(&self, pages: DmaPages) {
        let (gfn, count) = pages.into_frames();
        let _ = mm::heap::free_frames(mm::FrameRun {
            addr: gfn << 12,
            count: count as u64,
        });
    }
    fn grant(
        &self,
        domid: u16,
        pages: &DmaPages,
        index: usize,
        access: Access,
    ) -> Result<Grant, GrantError> {
        let gfn = pages.frame(index).ok_or(GrantError::NoSuchPage)?;
        gnttab::grant(
            domid,
            u32::try_from(gfn).map_err(|_| GrantError::Exhausted)?,
            access,
        )
    }
    fn end_grant(&self, grant: Grant) -> Result<(), Grant> {
        gnttab::end(grant).map(|_| ())
    }
    fn alloc_unbound(&self, remote: u16) -> Result<Port, XenError> {
        let port = Port(hypercall::evtchn_alloc_unbound(remote)?);
        crate::dev::portevents::reset(port);
        // Completions are polled; a disk's event only has to wake the CPU (its
        // waiter looks), a vif's also tells the network service it has work.
        xen::register_port(port, if self.net { on_vif_event } else { |_| {} });
        Ok(port)
    }
    fn close_port(&self, port: Port) {
        // Forget the handler first: Xen may hand the number out again at once.
        xen::unregister_port(port);
        let _ = hypercall::evtchn_close(port.0);
    }
    fn notify(&self, port: Port) {
        xen::notify(port);
    }
    fn port_events(&self, port: Port) -> u64 {
        crate::dev::portevents::get(port)
    }
    fn wait(&self) {
        crate::xen::idle::pause();
    }
    fn now_ns(&self) -> u64 {
        clock::now().as_nanos()
    }
    fn resumes(&self) -> u32 {
        crate::sys::suspend::stats().resumed as u32
    }
}

/// Watch firings the frontends' handshake waits woke on (for `devices`).
static WATCH_WAKEUPS: AtomicU64 = AtomicU64::new(0);

/// How many times a frontend's handshake wait was woken by its XenStore watch.
pub fn watch_wakeups() -> u64 {
    WATCH_WAKEUPS.load(Ordering::Relaxed)
}

/// A connected disk.
pub type Disk = Blkfront<KernelXen>;

static DISKS: Mutex<Vec<Disk>> = Mutex::new(Vec::new());

/// The instance each connected disk is, by vdev (locked after [`DISKS`]): a disk
/// detached and another attached at the same vdev is a new instance, which the
/// holders of the old one's [`DiskHandle`] (a mount) never reach.
static DISK_IDS: Mutex<Vec<(u16, u64)>> = Mutex::new(Vec::new());
static NEXT_DISK_ID: AtomicU64 = AtomicU64::new(1);

/// One connected disk instance, as a mount holds it: its I/O fails (the disk is
/// gone) once that disk is detached, even if another disk takes its name, as Linux
/// keeps a dead block device bound to its mount until the unmount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskHandle {
    name: String,
    vdev: u16,
    id: u64,
}

impl DiskHandle {
    /// The disk's name (`xvdb`).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A handle on the disk called `name` ("xvdb" or "/dev/xvdb") as it is now.
pub fn open_disk(name: &str) -> Option<DiskHandle> {
    use xenlet_drivers::blkfront::BlockDevice;
    let name = name.strip_prefix("/dev/").unwrap_or(name);
    let disks = DISKS.lock();
    let vdev = disks.iter().find(|d| d.info().name == name)?.vdev();
    let id = DISK_IDS.lock().iter().find(|(v, _)| *v == vdev)?.1;
    Some(DiskHandle {
        name: String::from(name),
        vdev,
        id,
    })
}

/// Runs `f` on the disk instance `h` names; None once it is gone (detached, or
/// replaced by another disk at its vdev).
pub fn with_handle<T>(h: &DiskHandle, f: impl FnOnce(&mut Disk) -> T) -> Option<T> {
    let mut disks = DISKS.lock();
    let current = DISK_IDS
        .lock()
        .iter()
        .any(|&(v, id)| v == h.vdev && id == h.id);
    if !current {
        return None;
    }
    disks.iter_mut().find(|d| d.vdev() == h.vdev).map(f)
}

/// Connects every vbd; returns one line per device for the boot report.
pub fn connect_disks(devices: &[xenbus::Device]) -> Vec<Result<String, (String, BlockError)>> {
    let mut report = Vec::new();
    for d in devices.iter().filter(|d| d.kind == "vbd") {
        let name = d.name();
        let Ok(vdev) = d.id.parse::<u16>() else {
            report.push(Err((
                name,
                BlockError::Handshake(alloc::format!("vdev {} not supported", d.id)),
            )));
            continue;
        };
        match connect_disk(vdev, &name) {
            Ok(line) => report.push(Ok(line)),
            Err(e) => report.push(Err((name, e))),
        }
    }
    report
}

/// Connects one vbd and adds it to the disks; returns its boot-report line.
fn connect_disk(vdev: u16, name: &str) -> Result<String, BlockError> {
    use xenlet_drivers::blkfront::BlockDevice;
    let disk = Blkfront::connect(KernelXen::DISK, vdev, String::from(name))?;
    let i = disk.info();
    let f = i.features;
    let line = alloc::format!(
        "{} {} MiB, {}-byte sectors{}, ring {} page(s)/{} slots, {} segments/request{}{}{}{}",
        i.name,
        i.bytes() >> 20,
        i.sector_size,
        if i.readonly { ", read-only" } else { "" },
        f.ring_pages,
        f.ring_entries,
        f.max_segments,
        if f.indirect_segments > 0 {
            " (indirect)"
        } else {
            ""
        },
        if f.persistent {
            ", persistent grants"
        } else {
            ""
        },
        if f.flush {
            ", flush"
        } else if f.barrier {
            ", barrier"
        } else {
            ""
        },
        if f.discard { ", discard" } else { "" },
    );
    watch_backend(vdev);
    let mut disks = DISKS.lock();
    disks.push(disk);
    let mut ids = DISK_IDS.lock();
    ids.retain(|(v, _)| *v != vdev);
    ids.push((vdev, NEXT_DISK_ID.fetch_add(1, Ordering::Relaxed)));
    Ok(line)
}

/// Set by the XenStore watches on `device/vbd` and on each disk's backend state.
static DISK_RESCAN: AtomicBool = AtomicBool::new(false);

fn on_vbd_event(_: &xenlet_xen::xenstore::WatchEvent) {
    DISK_RESCAN.store(true, Ordering::SeqCst);
}

fn backend_token(vdev: u16) -> String {
    alloc::format!("xenlet-vbd-backend-{vdev}")
}

/// The backend path of vbd `vdev`.
fn backend_of(vdev: u16) -> Option<String> {
    xenstore::read(&alloc::format!("device/vbd/{vdev}/backend")).ok()
}

/// Watches `<backend>/state` of vbd `vdev`: `xl block-detach` closes the backend.
fn watch_backend(vdev: u16) {
    if let Some(be) = backend_of(vdev) {
        let _ = xenstore::watch(
            &alloc::format!("{be}/state"),
            &backend_token(vdev),
            on_vbd_event,
        );
    }
}

/// Watches `device/vbd` for disks attached at run time (`xl block-attach`).
pub fn watch_disks() {
    let _ = xenstore::watch("device/vbd", "xenlet-vbds", on_vbd_event);
}

/// Whether the backend of vbd `vdev` is closing or gone (a detach under way): long
/// transfers look every second and stop with an I/O error.
pub fn backend_closing(vdev: u16) -> bool {
    let Some(be) = backend_of(vdev) else {
        return true;
    };
    match xenstore::read(&alloc::format!("{be}/state")) {
        Ok(s) => crate::xen::xenbus::going(xenlet_xen::xenbus::XenbusState::parse(&s)),
        Err(_) => true,
    }
}

/// Follows `xl block-attach` / `block-detach` (from the shell loop, after a watch
/// fired): a disk whose backend is closing or gone is closed and released (its
/// filesystem, if mounted, then fails with I/O errors until unmounted); a new vbd is
/// connected.
pub fn poll_hotplug() {
    if !DISK_RESCAN.swap(false, Ordering::SeqCst) {
        return;
    }
    use xenlet_drivers::blkfront::BlockDevice;
    use xenlet_xen::xenbus::XenbusState;
    let Ok(devices) = xenbus::enumerate() else {
        return;
    };
    let vbds: Vec<&xenbus::Device> = devices.iter().filter(|d| d.kind == "vbd").collect();
    let mut gone = Vec::new();
    {
        let mut disks = DISKS.lock();
        let mut i = 0;
        while i < disks.len() {
            let vdev = disks[i].vdev();
            let dev = vbds.iter().find(|d| d.id.parse::<u16>().ok() == Some(vdev));
            let closing = dev.is_none_or(|d| d.backend_going());
            if closing {
                DISK_IDS.lock().retain(|(v, _)| *v != vdev);
                gone.push((disks.remove(i), dev.map(|d| (d.path(), d.backend.clone()))));
            } else {
                i += 1;
            }
        }
    }
    for (disk, dev) in gone {
        let name = disk.info().name.clone();
        let vdev = disk.vdev();
        // gone from XenStore altogether: the toolstack removed a closed backend
        let mut closed = true;
        if let Some((path, be)) = dev {
            closed = xenlet_drivers::platform::close_device(
                &KernelXen::DISK,
                &path,
                &alloc::format!("{be}/state"),
                2_000_000_000,
            );
            let _ = xenstore::unwatch(&alloc::format!("{be}/state"), &backend_token(vdev));
        }
        // a backend that did not close may still consume what it never answered
        let (freed, kept) = disk.release_after(String::from("disk detached"), closed);
        crate::println!(
            "blkfront: {name} detached ({freed} pages freed{})",
            if kept > 0 {
                alloc::format!(", {kept} kept back: the backend still maps them")
            } else {
                String::new()
            }
        );
    }
    for d in vbds {
        let Ok(vdev) = d.id.parse::<u16>() else {
            continue;
        };
        let (known, count) = {
            let disks = DISKS.lock();
            (disks.iter().any(|x| x.vdev() == vdev), disks.len())
        };
        if known || d.state != Some(XenbusState::Initialising) {
            continue;
        }
        if let Some(why) = attach_refusal(count, MAX_DISKS) {
            crate::println!("blkfront: {} attach refused: {why}", d.name());
            continue;
        }
        match connect_disk(vdev, &d.name()) {
            Ok(line) => crate::println!("blkfront: {line} attached"),
            Err(e) => crate::println!("blkfront: {} attach failed: {e}", d.name()),
        }
    }
}

/// Disks a domain takes at once.
const MAX_DISKS: usize = 16;

/// Why a device hot-plugged now is not taken, if it is not: `have` of at most `max`
/// are connected, or memory is low (a device's rings, buffers and driver state
/// would take what the running ones need; Linux fails such a probe with ENOMEM).
pub fn attach_refusal(have: usize, max: usize) -> Option<String> {
    if have >= max {
        return Some(alloc::format!(
            "{have} devices of this kind already (at most {max})"
        ));
    }
    crate::mm::heap::memory_low().then(|| String::from("memory low"))
}

/// Sends one request without buffers (flush, discard) to `disk` and waits up to 60 s
/// for it. Only for a disk with nothing else in flight: other completions seen
/// meanwhile are dropped.
pub fn run_one(
    disk: &mut Disk,
    op: xenlet_drivers::blkfront::BlockOp,
    sector: u64,
) -> Result<(), BlockError> {
    use xenlet_drivers::blkfront::{BlockDevice, BlockRequest};
    let tag = xenlet_drivers::blocksync::fresh_tag();
    disk.submit(BlockRequest {
        tag,
        op,
        sector,
        bytes: 0,
        bufs: Vec::new(),
    })
    .map_err(|(e, _)| e)?;
    disk.kick();
    let start = clock::now();
    let mut done = Vec::new();
    loop {
        disk.poll(&mut done);
        let mut mine = None;
        for c in done.drain(..) {
            if c.tag == tag && mine.is_none() {
                mine = Some(c.result);
            } else {
                // a filesystem's write-behind answer (or an abandoned call's): to its
                // owner, the buffers to the pool
                xenlet_drivers::blocksync::recycle(disk, c);
            }
        }
        if let Some(result) = mine {
            return result;
        }
        if clock::now().saturating_duration_since(start).as_secs() > 60 {
            return Err(BlockError::Broken(String::from("no response in 60 s")));
        }
        disk.wait();
    }
}

/// Before a suspend: lets every disk answer what it has in flight (up to 10 s in
/// all); the answers stay with the disk for whoever polls it next (a command paused
/// at its check-point gets its own); returns how many requests stayed unanswered (a
/// restored domain's disk sends them again).
pub fn quiesce_disks() -> usize {
    use xenlet_drivers::blkfront::BlockDevice;
    let end = clock::now() + core::time::Duration::from_secs(10);
    let mut disks = DISKS.lock();
    let mut left = 0;
    for disk in disks.iter_mut() {
        while disk.in_flight() > 0 && clock::now() < end {
            disk.collect();
            if disk.in_flight() > 0 {
                disk.wait();
            }
        }
        left += disk.in_flight();
    }
    left
}

/// In a new domain (restored or migrated): every disk goes through the handshake
/// again with its new backend (new ring grants and event channel; unanswered
/// requests sent again). One line per disk.
pub fn resume_disks() -> Vec<String> {
    use xenlet_drivers::blkfront::BlockDevice;
    let mut lines = Vec::new();
    for disk in DISKS.lock().iter_mut() {
        let name = disk.info().name.clone();
        let t = clock::now();
        let r = disk.resume();
        let ms = t.elapsed().as_millis();
        lines.push(match r {
            Ok(n) => alloc::format!(
                "{name} reconnected in {ms} ms (port {}){}",
                disk.port().0,
                if n > 0 {
                    alloc::format!(", {n} request(s) sent again")
                } else {
                    String::new()
                }
            ),
            Err(e) => alloc::format!("{name} not reconnected: {e}"),
        });
    }
    lines
}

/// Runs `f` on the disk called `name` (e.g. "xvdb" or "/dev/xvdb").
pub fn with_disk<T>(name: &str, f: impl FnOnce(&mut Disk) -> T) -> Option<T> {
    let name = name.strip_prefix("/dev/").unwrap_or(name);
    let mut disks = DISKS.lock();
    use xenlet_drivers::blkfront::BlockDevice;
    disks.iter_mut().find(|d| d.info().name == name).map(f)
}

/// A connected network interface.
pub type Vif = xenlet_drivers::netfront::Netfront<KernelXen>;

static VIFS: Mutex<Vec<(String, Vif)>> = Mutex::new(Vec::new());

/// Connects every vif with up to `queues` queues each; returns one line per device
/// for the boot report.
pub fn connect_vifs(devices: &[xenbus::Device], queues: usize) -> Vec<Result<String, String>> {
    let mut report = Vec::new();
    for d in devices.iter().filter(|d| d.kind == "vif") {
        let name = d.name();
        let Ok(id) = d.id.parse::<u32>() else {
            continue;
        };
        match xenlet_drivers::netfront::Netfront::connect_with(KernelXen::NET, id, queues) {
            Ok(n) => {
                report.push(Ok(alloc::format!(
                    "{name} {}{}{}{}",
                    super::Mac(n.mac()),
                    if n.has_sg() { ", scatter-gather" } else { "" },
                    match n.queues() {
                        1 => String::new(),
                        q => alloc::format!(", {q} queues"),
                    },
                    match n.rx_buffers() {
                        256 => String::new(),
                        b => alloc::format!(", {b} buffers each way (short of memory)"),
                    }
                )));
                VIFS.lock().push((name, n));
            }
            Err(e) => report.push(Err(alloc::format!("{name}: {e}"))),
        }
    }
    report
}

/// Hands the connected vifs over (to the network stack).
pub fn take_vifs() -> Vec<(String, Vif)> {
    core::mem::take(&mut *VIFS.lock())
}

/// The names of the connected vifs not yet taken by the network stack.
pub fn vif_names() -> Vec<String> {
    VIFS.lock().iter().map(|(n, _)| n.clone()).collect()
}

/// Runs `f` with all disks at once (a copy between two disks).
pub fn with_all_disks<T>(f: impl FnOnce(&mut [Disk]) -> T) -> T {
    f(&mut DISKS.lock())
}

/// Runs `f` on every disk.
pub fn for_each_disk(mut f: impl FnMut(&mut Disk)) {
    for d in DISKS.lock().iter_mut() {
        f(d);
    }
}

/// Closes every connected PV device (frontend Closing, the backend given up to 1 s
/// to follow, frontend Closed) before the domain shuts down, so the backends unmap
/// this domain's rings and pages while it still runs and the toolstack's teardown does
/// not wait on them. Returns how many devices and how many backends followed in time.
pub fn close_all() -> (usize, usize) {
    let Ok(devices) = xenbus::enumerate() else {
        return (0, 0);
    };
    let mut followed = 0;
    let mut n = 0;
    for d in devices
        .iter()
        .filter(|d| d.state == Some(xenlet_xen::xenbus::XenbusState::Connected))
    {
        n += 1;
        let be = alloc::format!("{}/state", d.backend);
        if xenlet_drivers::platform::close_device(&KernelXen::DISK, &d.path(), &be, 1_000_000_000) {
            followed += 1;
        }
    }
    (n, followed)
}
