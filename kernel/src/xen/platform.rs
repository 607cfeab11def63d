//! Xen platform bring-up: discovery, hypercall page, shared info, event-channel
//! upcalls, and the PV console — the layer the PV drivers stand on.
//!
//! Without Xen (plain QEMU, KVM, bare metal) [`init`] says so and the kernel runs on.

use crate::arch::{cpu, lapic, trap};
use crate::sync::eventcount::EventCount;
use crate::sync::irqlock::IrqLock;
use crate::{io::console, mm};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use spin::Once;
use xenlet_xen::abi::*;
use xenlet_xen::console::ConsoleRing;
use xenlet_xen::cpuid::XenCpuid;
use xenlet_xen::evtchn::{PendingScan, Port, PortTable};
use xenlet_xen::hypercall;
use xenlet_xen::shared::SharedPage;
use xenlet_xen::shared_info::SharedInfo;
use xenlet_xen::XenError;

/// Vector the event-channel upcall arrives on (Linux uses the same, 0xf3).
pub const UPCALL_VECTOR: u8 = 0xf3;

/// How event-channel upcalls are delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallbackMode {
    /// `HVMOP_set_evtchn_upcall_vector`: vCPU 0's upcalls arrive as this vector
    /// through its local APIC (x2APIC mode; each acknowledged with an EOI).
    PerVcpu(u8),
    /// `HVM_PARAM_CALLBACK_IRQ` with the vector type (XENFEAT_hvm_callback_vector).
    Vector(u8),
    /// No upcalls: events are polled from the idle loop.
    Polled,
}

/// What the platform layer found and set up.
pub struct XenInfo {
    /// CPUID facts.
    pub cpuid: XenCpuid,
    /// Version from XENVER_version, with extraversion.
    pub version: String,
    /// XENVER_get_features submap 0.
    pub features: u32,
    /// Shared info page.
    pub shared_info: SharedInfo,
    /// Upcall delivery.
    pub callback: CallbackMode,
}

/// Why Xen was found but could not be used.
#[derive(Debug)]
pub enum XenInitError {
    /// The hypercall page did not install.
    HypercallPage(hypercall::InstallError),
    /// A hypercall failed.
    Hypercall(&'static str, XenError),
    /// No frame for the shared info page.
    NoMemory,
}

impl fmt::Display for XenInitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XenInitError::HypercallPage(e) => write!(f, "hypercall page not installed: {e:?}"),
            XenInitError::Hypercall(what, e) => write!(f, "{what} failed: {e}"),
            XenInitError::NoMemory => f.write_str("no frame for the shared info page"),
        }
    }
}

static XEN: Once<XenInfo> = Once::new();
static SCAN: IrqLock<PendingScan> = IrqLock::new(PendingScan::new());
/// A handler for an event channel port, called in interrupt context: it must not
/// allocate (the heap panics there) nor take a lock other than an [`IrqLock`].
pub type PortHandler = fn(Port);

/// Ports with handlers at most (timer, console, XenStore, and each disk and vif
/// queue).
pub const MAX_PORT_HANDLERS: usize = 64;

/// Fixed size: the upcall reads it without allocating.
static PORT_HANDLERS: IrqLock<PortTable<PortHandler, MAX_PORT_HANDLERS>> =
    IrqLock::new(PortTable::new());
/// Bumped by every upcall (and every polled scan that found a port pending): the
/// count each wait compares with its own mark (see `sync::eventcount`).
static EVENTS: EventCount = EventCount::new();
/// `VIRQ_TIMER` events served.
static TIMER_EVENTS: AtomicU64 = AtomicU64::new(0);
/// vCPU 0's `VIRQ_TIMER` port ([`NO_PORT`] when unbound): a restored domain binds it
/// anew, possibly to another number.
static TIMER_PORT: AtomicU32 = AtomicU32::new(NO_PORT);
/// The PV console's event channel ([`NO_PORT`] when absent): new after a restore.
static CONSOLE_PORT: AtomicU32 = AtomicU32::new(NO_PORT);
const NO_PORT: u32 = u32::MAX;

fn set_timer_port(p: Option<Port>) {
    TIMER_PORT.store(p.map_or(NO_PORT, |p| p.0), Ordering::SeqCst);
}

/// `VIRQ_TIMER` of vCPU 0 (the one-shot timer [`arm_timer`] sets), when bound.
pub fn timer_port() -> Option<Port> {
    let p = TIMER_PORT.load(Ordering::SeqCst);
    (p != NO_PORT).then_some(Port(p))
}

/// The PV console's event channel, when the domain has a PV console.
pub fn console_port() -> Option<Port> {
    let p = CONSOLE_PORT.load(Ordering::SeqCst);
    (p != NO_PORT).then_some(Port(p))
}

/// The platform state, when running on Xen.
pub fn info() -> Option<&'static XenInfo> {
    XEN.get()
}

/// Detects Xen without touching it (CPUID only).
pub fn detect() -> Option<XenCpuid> {
    cpu::xen_cpuid()
}

/// The domain's memory map from Xen (`XENMEM_memory_map`), when on Xen. Usable
/// before [`init`] and before any allocator: it installs the hypercall page itself and
/// reads into a stack buffer.
pub fn memory_map() -> Option<xenlet_boot::MemoryMap> {
    let c = detect()?;
    hypercall::install(&c).ok()?;
    let mut buf = [0u8; xenlet_boot::e820::ENTRY_BYTES * 128];
    let n = hypercall::memory_map(&mut buf).ok()?;
    Some(xenlet_boot::e820::parse(&buf, n))
}

fn hc<T>(what: &'static str, r: Result<T, XenError>) -> Result<T, XenInitError> {
    r.map_err(|e| XenInitError::Hypercall(what, e))
}

/// Brings up the platform layer; `Ok(None)` when not on Xen.
pub fn init(per_vcpu_upcall: bool) -> Result<Option<&'static XenInfo>, XenInitError> {
    let Some(c) = detect() else { return Ok(None) };
    hypercall::install(&c).map_err(XenInitError::HypercallPage)?;
    let (major, minor) = hc("XENVER_version", hypercall::xen_version())?;
    let extra = hypercall::xen_extraversion().unwrap_or([0; XEN_EXTRAVERSION_LEN]);
    let extra_len = extra.iter().position(|&b| b == 0).unwrap_or(extra.len());
    let version = alloc::format!(
        "{major}.{minor}{}",
        String::from_utf8_lossy(&extra[..extra_len])
    );
    let features = hc("XENVER_get_features", hypercall::xen_features(0))?;

    // Shared info replaces one of our RAM frames; that frame is Xen's from now on.
    let frame = mm::heap::alloc_frames(1, 1).ok_or(XenInitError::NoMemory)?;
    // SAFETY: the frame was just allocated, is owned by nobody else, and is given up as RAM: Xen maps the shared info page there.
    hc("XENMEM_add_to_physmap(shared_info)", unsafe {
        hypercall::add_to_physmap(XENMAPSPACE_shared_info, 0, frame.addr >> 12)
    })?;
    // SAFETY: the frame is identity-mapped, page-aligned, now holds the shared info page, and is used only through this SharedPage.
    let shared_info = SharedInfo::new(unsafe { SharedPage::new(frame.addr as *mut u8) });

    let callback = if features & (1 << XENFEAT_hvm_callback_vector) != 0
        && trap::register(UPCALL_VECTOR, on_upcall)
    {
        // The domain-wide callback vector, as Linux uses by default: Xen injects it
        // directly, with no local APIC and no EOI (an EOI is an MSR write Xen must
        // intercept, a VM exit per upcall; one vCPU gains nothing from per-vCPU
        // vectors). The per-vCPU vector when asked for (`xenlet.upcall=percpu`), Xen
        // has it and the local APIC can take it.
        if per_vcpu_upcall
            && lapic::enable_x2apic()
            && hypercall::hvm_set_evtchn_upcall_vector(0, UPCALL_VECTOR).is_ok()
        {
            set_callback(CallbackMode::PerVcpu(UPCALL_VECTOR))?;
            CallbackMode::PerVcpu(UPCALL_VECTOR)
        } else {
            set_callback(CallbackMode::Vector(UPCALL_VECTOR))?;
            CallbackMode::Vector(UPCALL_VECTOR)
        }
    } else {
        CallbackMode::Polled
    };
    shared_info.set_upcall_mask(0, false);

    // The one-shot timer of vCPU 0: its VIRQ only has to wake the CPU (and is counted).
    // Xen may give a vCPU a periodic tick too; the idle path wants none.
    let _ = hypercall::stop_periodic_timer(0);
    let timer_port = hypercall::evtchn_bind_virq(VIRQ_TIMER, 0).ok().map(|p| {
        let port = Port(p);
        register_port(port, on_timer);
        port
    });

    match (
        hypercall::hvm_get_param(HVM_PARAM_CONSOLE_PFN),
        hypercall::hvm_get_param(HVM_PARAM_CONSOLE_EVTCHN),
    ) {
        (Ok(pfn), Ok(port)) if pfn != 0 && pfn < (mm::heap::MAPPED_LIMIT >> 12) => {
            // SAFETY: HVM_PARAM_CONSOLE_PFN names the console ring page Xen set up for this domain (reserved in the memory map, below the identity-map limit); only the console uses it, through this SharedPage.
            let page = unsafe { SharedPage::new((pfn << 12) as *mut u8) };
            // SAFETY: a second handle on the same console page, for the fault path alone (`console::emergency_write`): it writes only while the first handle's lock is held by code the fault interrupted, which never runs again (the fault path ends in SHUTDOWN_crash), so the two handles never write at once.
            let emergency = unsafe { SharedPage::new((pfn << 12) as *mut u8) };
            let port = Port(port as u32);
            console::attach_xen_console(
                ConsoleRing::new(page),
                ConsoleRing::new(emergency),
                port,
                console::PvConsoleOps { notify, yield_cpu },
            );
            register_port(port, on_console_event);
            CONSOLE_PORT.store(port.0, Ordering::SeqCst);
        }
        _ => {}
    }

    let info = XEN.call_once(|| XenInfo {
        cpuid: c,
        version,
        features,
        shared_info,
        callback,
    });
    set_timer_port(timer_port);
    crate::time::clock::use_pvclock(pvclock_system_time);
    Ok(Some(info))
}

/// Tells Xen how to deliver upcalls (`mode` as [`init`] chose it).
fn set_callback(mode: CallbackMode) -> Result<(), XenInitError> {
    match mode {
        CallbackMode::PerVcpu(v) => {
            hc(
                "HVMOP_set_evtchn_upcall_vector",
                hypercall::hvm_set_evtchn_upcall_vector(0, v),
            )?;
            // The toolstack takes a zero HVM_PARAM_CALLBACK_IRQ for "no PV drivers"
            // (then `xl shutdown` and `xl save` refuse): set GSI 1 as Linux does,
            // which Xen never raises while a per-vCPU vector is set.
            hc(
                "HVM_PARAM_CALLBACK_IRQ",
                hypercall::hvm_set_param(HVM_PARAM_CALLBACK_IRQ, 1),
            )
        }
        CallbackMode::Vector(v) => {
            let via = (HVM_PARAM_CALLBACK_TYPE_VECTOR << 56) | u64::from(v);
            hc(
                "HVM_PARAM_CALLBACK_IRQ",
                hypercall::hvm_set_param(HVM_PARAM_CALLBACK_IRQ, via),
            )
        }
        CallbackMode::Polled => Ok(()),
    }
}

/// What [`resume`] set up again in the new domain.
#[derive(Clone, Copy, Debug)]
pub struct Resumed {
    /// vCPU 0's `VIRQ_TIMER`, bound again.
    pub timer_port: Option<Port>,
    /// The PV console's new event channel.
    pub console_port: Option<Port>,
}

/// After `SCHEDOP_shutdown(SHUTDOWN_suspend)` returned in a new domain (restored or
/// migrated): everything Xen-side is new, memory is as it was. Maps the shared info
/// page again at its frame, tells Xen the upcall vector again, binds `VIRQ_TIMER`
/// again and takes the PV console's new event channel (Linux's
/// `xen_hvm_post_suspend`, Mini-OS's `arch_post_suspend`). Every other event channel
/// is gone: their owners (XenStore, the frontends) take new ones. Called with
/// interrupts off, before anything reads the time (the clock's records are in the
/// shared info page); the caller turns them on after.
pub fn resume() -> Result<Resumed, XenInitError> {
    let Some(x) = XEN.get() else {
        return Ok(Resumed {
            timer_port: None,
            console_port: None,
        });
    };
    let gfn = x.shared_info.page().addr() >> 12;
    // SAFETY: the frame has held the shared info page since `init` (given up as RAM then, reached only through `x.shared_info`); the new domain's shared info is mapped at the same guest frame.
    hc("XENMEM_add_to_physmap(shared_info)", unsafe {
        hypercall::add_to_physmap(XENMAPSPACE_shared_info, 0, gfn)
    })?;
    // Every port the handler table names belongs to the old domain.
    let stale: Vec<Port> = bound_ports();
    for p in stale {
        unregister_port(p);
    }
    *SCAN.lock() = PendingScan::new();
    set_callback(x.callback)?;
    x.shared_info.set_upcall_mask(0, false);
    forget_timer();
    let _ = hypercall::stop_periodic_timer(0);
    let timer_port = hypercall::evtchn_bind_virq(VIRQ_TIMER, 0).ok().map(|p| {
        let port = Port(p);
        register_port(port, on_timer);
        port
    });
    set_timer_port(timer_port);
    let console_port = if console_port().is_some() {
        match hypercall::hvm_get_param(HVM_PARAM_CONSOLE_EVTCHN) {
            Ok(p) => {
                let port = Port(p as u32);
                console::set_xen_console_port(port);
                register_port(port, on_console_event);
                CONSOLE_PORT.store(port.0, Ordering::SeqCst);
                Some(port)
            }
            Err(_) => None,
        }
    } else {
        None
    };
    Ok(Resumed {
        timer_port,
        console_port,
    })
}

/// Xen system time now, from vCPU 0's `vcpu_time_info`.
fn pvclock_system_time() -> Option<u64> {
    let x = XEN.get()?;
    let (t, tsc) = xenlet_xen::pvclock::read_consistent(
        || {
            let mut b = [0u8; 32];
            x.shared_info.read_time_info(0, &mut b);
            b
        },
        cpu::rdtsc_ordered,
    )?;
    Some(t.system_time_at(tsc))
}

/// The TSC frequency pvclock implies (for the boot report).
pub fn pvclock_tsc_hz() -> Option<u64> {
    let x = XEN.get()?;
    let mut b = [0u8; 32];
    x.shared_info.read_time_info(0, &mut b);
    Some(xenlet_xen::pvclock::TimeInfo::decode(&b).tsc_hz())
}

/// Calls `handler` (in interrupt context) whenever `port` fires (replacing the
/// port's handler, if it had one). False when the table is full: the port's events
/// then only wake the CPU.
pub fn register_port(port: Port, handler: PortHandler) -> bool {
    PORT_HANDLERS.lock().set(port, handler).is_ok()
}

/// Forgets `port`'s handler (the port is closed; Xen may hand the number out again).
pub fn unregister_port(port: Port) {
    PORT_HANDLERS.lock().remove(port);
}

/// Ports with handlers, for the `xen` command.
pub fn bound_ports() -> Vec<Port> {
    let table = *PORT_HANDLERS.lock();
    table.iter().map(|(p, _)| p).collect()
}

/// Serves pending events (from the upcall, or polled from the idle loop). Runs with
/// interrupts off: an upcall arriving mid-scan would spin on the scan's lock.
pub fn poll_events() {
    x86_64::instructions::interrupts::without_interrupts(poll_events_masked);
}

/// The scan and the handlers, with no allocation (the upcall runs this; the
/// tables are fixed-size and copied to the stack).
fn poll_events_masked() {
    let Some(x) = XEN.get() else { return };
    let mut fired: [Option<Port>; 16] = [None; 16];
    let mut n = 0;
    let mut overflow = false;
    SCAN.lock().scan(&x.shared_info, 0, |p| {
        if let Some(slot) = fired.get_mut(n) {
            *slot = Some(p);
            n += 1;
        } else {
            overflow = true;
        }
    });
    if n > 0 {
        // Found by a poll (no upcalls, or a port the upcall had not reached yet).
        EVENTS.signal();
    }
    // A copy of the table, so no lock is held while handlers run.
    let table = *PORT_HANDLERS.lock();
    for p in fired.iter().flatten() {
        if let Some(h) = table.get(*p) {
            h(*p);
        }
    }
    if overflow {
        // More than 16 ports at once: run every handler so none is lost.
        for (p, h) in table.iter() {
            h(p);
        }
    }
}

/// Whether events are pending that no upcall announced (the flag Xen raises the
/// upcall on is set: see [`xenlet_xen::evtchn::upcall_pending`]): a wait must scan
/// ([`poll_events`]) rather than halt.
pub fn upcall_pending() -> bool {
    XEN.get()
        .is_some_and(|x| xenlet_xen::evtchn::upcall_pending(&x.shared_info, 0))
}

fn on_upcall(_vector: u8) {
    // Per-vCPU vector: acknowledge first (as Linux does); an event arriving while the
    // scan runs raises the vector again. A no-op in the other modes.
    if matches!(
        XEN.get().map(|x| x.callback),
        Some(CallbackMode::PerVcpu(_))
    ) {
        lapic::eoi();
    }
    EVENTS.signal();
    poll_events_masked();
}

fn on_timer(_port: Port) {
    TIMER_EVENTS.fetch_add(1, Ordering::Relaxed);
}

/// The count of event-channel upcalls: what every wait compares with its own mark
/// before halting, so an event served between a caller's last look and the halt is
/// not slept through, and no wait takes it from another.
pub fn events() -> &'static EventCount {
    &EVENTS
}

/// `VIRQ_TIMER` events served so far.
pub fn timer_events() -> u64 {
    TIMER_EVENTS.load(Ordering::Relaxed)
}

/// The Xen system time vCPU 0's one-shot timer was last set for ([`NOT_ARMED`]:
/// none, or not known to be pending), and the `VIRQ_TIMER` events served then.
static ARMED_AT: AtomicU64 = AtomicU64::new(NOT_ARMED);
static ARMED_EVENTS: AtomicU64 = AtomicU64::new(0);
const NOT_ARMED: u64 = u64::MAX;

/// Arms vCPU 0's one-shot timer for `deadline`; false when there is no bound
/// `VIRQ_TIMER`, no upcall to deliver it, no pvclock to convert the time, or Xen
/// refused. A timer already set for that very time and not fired yet (no
/// `VIRQ_TIMER` served since) is left as it is: one hypercall fewer at each halt
/// of a data plane whose deadline stays put (a costly trap on the nested test bed).
pub fn arm_timer(deadline: crate::time::clock::Instant) -> bool {
    let Some(x) = XEN.get() else { return false };
    if timer_port().is_none() || x.callback == CallbackMode::Polled {
        return false;
    }
    let Some(sys) = crate::time::clock::to_system_time(deadline) else {
        return false;
    };
    let events = TIMER_EVENTS.load(Ordering::SeqCst);
    if ARMED_AT.load(Ordering::SeqCst) == sys && ARMED_EVENTS.load(Ordering::SeqCst) == events {
        return true;
    }
    let ok = super::traps::timed(super::traps::Trap::Timer, || {
        hypercall::set_singleshot_timer(0, sys)
    })
    .is_ok();
    // Unknown after a failure; an interrupt between the two stores can only make
    // the next call set the timer again.
    ARMED_AT.store(NOT_ARMED, Ordering::SeqCst);
    if ok {
        ARMED_EVENTS.store(events, Ordering::SeqCst);
        ARMED_AT.store(sys, Ordering::SeqCst);
    }
    ok
}

/// Forgets the one-shot timer set (a new domain after a restore has none).
fn forget_timer() {
    ARMED_AT.store(NOT_ARMED, Ordering::SeqCst);
}

/// vCPU 0's runstate times from Xen: (running, runnable, blocked, offline) in ns.
pub fn runstate() -> Option<[u64; 4]> {
    XEN.get()?;
    hypercall::runstate_info(0).ok().map(|r| r.time)
}

fn on_console_event(_port: Port) {
    console::poll_xen_console();
}

/// Notifies the other end of `port` (errors are the backend's problem; logged once).
pub fn notify(port: Port) {
    let _ = super::traps::timed(super::traps::Trap::Notify, || {
        hypercall::evtchn_send(port.0)
    });
}

/// Asks Xen to shut the domain down; returns only if Xen refused.
pub fn shutdown(reason: u32) -> Result<(), XenError> {
    hypercall::sched_shutdown(reason)
}

/// Gives the CPU away for a moment (waiting on a backend).
pub fn yield_cpu() {
    hypercall::sched_yield();
}

/// Wall-clock seconds since the epoch from Xen's shared info and pvclock (None when
/// not under Xen or before pvclock).
pub fn wallclock_secs() -> Option<i64> {
    let base = XEN.get()?.shared_info.wallclock_base_ns()?;
    let sys = crate::time::clock::to_system_time(crate::time::clock::now())?;
    i64::try_from(base.checked_add(sys)? / 1_000_000_000).ok()
}
