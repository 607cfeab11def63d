//! Xen platform bring-up: discovery, hypercall page, shared info, event-channel
//! upcalls, and the PV console — the layer the PV drivers stand on.
//!
//! Without Xen (plain QEMU, KVM, bare metal) [`init`] says so and the kernel runs on.

use crate::arch::{cpu, trap};
use crate::{console, mm};
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use spin::{Mutex, Once};
use xenlet_xen::abi::*;
use xenlet_xen::console::ConsoleRing;
use xenlet_xen::cpuid::{self, Regs, XenCpuid};
use xenlet_xen::evtchn::{PendingScan, Port};
use xenlet_xen::hypercall;
use xenlet_xen::shared::SharedPage;
use xenlet_xen::shared_info::SharedInfo;
use xenlet_xen::XenError;

/// Vector the event-channel upcall arrives on (Linux uses the same, 0xf3).
pub const UPCALL_VECTOR: u8 = 0xf3;

/// How event-channel upcalls are delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallbackMode {
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
    /// PV console event channel, when the domain has a PV console.
    pub console_port: Option<Port>,
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
static SCAN: Mutex<PendingScan> = Mutex::new(PendingScan::new());
/// A handler for an event channel port, called in interrupt context.
pub type PortHandler = fn(Port);

static PORT_HANDLERS: Mutex<Vec<(Port, PortHandler)>> = Mutex::new(Vec::new());

/// The platform state, when running on Xen.
pub fn info() -> Option<&'static XenInfo> {
    XEN.get()
}

/// Detects Xen without touching it (CPUID only).
pub fn detect() -> Option<XenCpuid> {
    cpuid::detect(|leaf| {
        let r = cpu::cpuid(leaf);
        Regs {
            eax: r.eax,
            ebx: r.ebx,
            ecx: r.ecx,
            edx: r.edx,
        }
    })
}

fn hc<T>(what: &'static str, r: Result<T, XenError>) -> Result<T, XenInitError> {
    r.map_err(|e| XenInitError::Hypercall(what, e))
}

/// Brings up the platform layer; `Ok(None)` when not on Xen.
pub fn init() -> Result<Option<&'static XenInfo>, XenInitError> {
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
        let via = (HVM_PARAM_CALLBACK_TYPE_VECTOR << 56) | u64::from(UPCALL_VECTOR);
        hc(
            "HVM_PARAM_CALLBACK_IRQ",
            hypercall::hvm_set_param(HVM_PARAM_CALLBACK_IRQ, via),
        )?;
        CallbackMode::Vector(UPCALL_VECTOR)
    } else {
        CallbackMode::Polled
    };
    shared_info.set_upcall_mask(0, false);

    let console_port = match (
        hypercall::hvm_get_param(HVM_PARAM_CONSOLE_PFN),
        hypercall::hvm_get_param(HVM_PARAM_CONSOLE_EVTCHN),
    ) {
        (Ok(pfn), Ok(port)) if pfn != 0 && pfn < (mm::heap::MAPPED_LIMIT >> 12) => {
            // SAFETY: HVM_PARAM_CONSOLE_PFN names the console ring page Xen set up for this domain (reserved in the memory map, below the identity-map limit); only the console uses it, through this SharedPage.
            let page = unsafe { SharedPage::new((pfn << 12) as *mut u8) };
            let port = Port(port as u32);
            console::attach_xen_console(ConsoleRing::new(page), port);
            register_port(port, on_console_event);
            Some(port)
        }
        _ => None,
    };

    let info = XEN.call_once(|| XenInfo {
        cpuid: c,
        version,
        features,
        shared_info,
        callback,
        console_port,
    });
    crate::clock::use_pvclock(pvclock_system_time);
    Ok(Some(info))
}

/// Xen system time now, from vCPU 0's `vcpu_time_info`.
fn pvclock_system_time() -> Option<u64> {
    let x = XEN.get()?;
    let t = xenlet_xen::pvclock::read_consistent(|| {
        let mut b = [0u8; 32];
        x.shared_info.read_time_info(0, &mut b);
        b
    })?;
    Some(t.system_time_at(cpu::rdtsc()))
}

/// The TSC frequency pvclock implies (for the boot report).
pub fn pvclock_tsc_hz() -> Option<u64> {
    let x = XEN.get()?;
    let mut b = [0u8; 32];
    x.shared_info.read_time_info(0, &mut b);
    Some(xenlet_xen::pvclock::TimeInfo::decode(&b).tsc_hz())
}

/// Calls `handler` (in interrupt context) whenever `port` fires.
pub fn register_port(port: Port, handler: PortHandler) {
    x86_64::instructions::interrupts::without_interrupts(|| {
        PORT_HANDLERS.lock().push((port, handler))
    });
}

/// Ports with handlers, for the `xen` command.
pub fn bound_ports() -> Vec<Port> {
    x86_64::instructions::interrupts::without_interrupts(|| {
        PORT_HANDLERS.lock().iter().map(|(p, _)| *p).collect()
    })
}

/// Serves pending events (from the upcall, or polled from the idle loop).
pub fn poll_events() {
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
    for p in fired.iter().flatten() {
        let h = PORT_HANDLERS
            .lock()
            .iter()
            .find(|(q, _)| q == p)
            .map(|(_, h)| *h);
        if let Some(h) = h {
            h(*p);
        }
    }
    if overflow {
        // More than 16 ports at once: run every handler so none is lost.
        let all: Vec<(Port, PortHandler)> = PORT_HANDLERS.lock().clone();
        for (p, h) in all {
            h(p);
        }
    }
}

fn on_upcall(_vector: u8) {
    poll_events();
}

fn on_console_event(_port: Port) {
    console::poll_xen_console();
}

/// Notifies the other end of `port` (errors are the backend's problem; logged once).
pub fn notify(port: Port) {
    let _ = hypercall::evtchn_send(port.0);
}

/// Asks Xen to shut the domain down; returns only if Xen refused.
pub fn shutdown(reason: u32) -> Result<(), XenError> {
    hypercall::sched_shutdown(reason)
}

/// Gives the CPU away for a moment (waiting on a backend).
pub fn yield_cpu() {
    hypercall::sched_yield();
}
