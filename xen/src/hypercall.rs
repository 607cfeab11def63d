//! The hypercall page and typed hypercalls (x86_64 HVM/PVH).
//!
//! Xen fills a guest page with one 32-byte stub per hypercall when the guest writes
//! the page's address to the MSR named by CPUID (`base+2`, EBX). Arguments go in
//! rdi, rsi, rdx, r10, r8 (xen/include/public/arch-x86/xen-x86_64.h); the result
//! comes back in rax, negative for `-errno`. The stubs are entered with `call`, so
//! the asm must be allowed to use the stack (xen-sys's helpers get this, arg 5 and
//! `sched_op`'s pointer wrong, which is why they are not used).
#![allow(unsafe_code)]

use crate::abi::*;
use crate::cpuid::XenCpuid;
use crate::errno::XenError;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

#[repr(C, align(4096))]
struct HypercallPage(UnsafeCell<[u8; 4096]>);

// SAFETY: Xen writes the page once (MSR write in `install`, before any hypercall);
// afterwards it is only executed, never written by the kernel.
unsafe impl Sync for HypercallPage {}

static PAGE: HypercallPage = HypercallPage(UnsafeCell::new([0xc3; 4096]));
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Why the hypercall page could not be installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallError {
    /// Xen advertised no hypercall page.
    NoPages,
    /// After the MSR write the page still held `ret` instructions.
    NotFilled,
}

/// Installs the hypercall page through the MSR from CPUID; checks Xen filled it.
pub fn install(xen: &XenCpuid) -> Result<(), InstallError> {
    if xen.hypercall_pages == 0 {
        return Err(InstallError::NoPages);
    }
    let addr = PAGE.0.get() as u64;
    // SAFETY: writing Xen's hypercall MSR with the guest-physical address (identity
    // mapped kernel) of a page-aligned, writable, executable static page that nothing
    // else uses; Xen overwrites it with hypercall stubs.
    unsafe {
        core::arch::asm!("wrmsr", in("ecx") xen.hypercall_msr, in("eax") addr as u32,
            in("edx") (addr >> 32) as u32, options(nostack, preserves_flags));
    }
    // SAFETY: a volatile read of the first byte of our own static page.
    let first = unsafe { core::ptr::read_volatile(PAGE.0.get().cast::<u8>()) };
    if first == 0xc3 {
        return Err(InstallError::NotFilled);
    }
    INSTALLED.store(true, Ordering::SeqCst);
    Ok(())
}

/// Whether hypercalls can be made.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::SeqCst)
}

/// Raw hypercall `op` with five arguments.
///
/// # Safety
/// The arguments must be valid for `op`: pointers must point to live memory of the
/// layout the operation expects, which Xen may read or write during the call.
pub unsafe fn hypercall5(op: u32, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64) -> i64 {
    if !installed() {
        return -38; // ENOSYS: no Xen, or the page was never filled
    }
    let entry = PAGE.0.get() as u64 + u64::from(op) * 32;
    let ret: i64;
    // SAFETY: `entry` is the stub for `op` in the page Xen filled (checked by
    // `installed`); the stub executes vmcall/vmmcall and returns. The caller vouches
    // for the arguments. All caller-saved registers are declared clobbered.
    unsafe {
        core::arch::asm!(
            "call {entry}",
            entry = in(reg) entry,
            lateout("rax") ret,
            inlateout("rdi") a1 => _,
            inlateout("rsi") a2 => _,
            inlateout("rdx") a3 => _,
            inlateout("r10") a4 => _,
            inlateout("r8") a5 => _,
            clobber_abi("C"),
        );
    }
    ret
}

/// Hypercall with a pointer argument after a command number.
///
/// # Safety
/// As for [`hypercall5`]: `arg` must be what `op`/`cmd` expects.
unsafe fn op_ptr<T>(op: u32, cmd: u32, arg: *mut T) -> Result<u64, XenError> {
    // SAFETY: forwarded contract.
    XenError::check(unsafe { hypercall5(op, u64::from(cmd), arg as u64, 0, 0, 0) })
}

/// `XENVER_version`: (major, minor).
pub fn xen_version() -> Result<(u16, u16), XenError> {
    // SAFETY: XENVER_version takes no argument buffer.
    let v = unsafe {
        op_ptr::<u8>(
            __HYPERVISOR_xen_version,
            XENVER_version,
            core::ptr::null_mut(),
        )
    }?;
    Ok(((v >> 16) as u16, v as u16))
}

/// `XENVER_extraversion`: e.g. ".2" (up to 16 bytes, NUL-padded).
pub fn xen_extraversion() -> Result<[u8; XEN_EXTRAVERSION_LEN], XenError> {
    let mut buf = [0u8; XEN_EXTRAVERSION_LEN];
    // SAFETY: Xen writes at most XEN_EXTRAVERSION_LEN bytes into `buf`.
    unsafe {
        op_ptr(
            __HYPERVISOR_xen_version,
            XENVER_extraversion,
            buf.as_mut_ptr(),
        )
    }?;
    Ok(buf)
}

/// `XENVER_get_features` submap `index` (32 feature bits each).
pub fn xen_features(index: u32) -> Result<u32, XenError> {
    #[repr(C)]
    struct FeatureInfo {
        submap_idx: u32,
        submap: u32,
    }
    let mut fi = FeatureInfo {
        submap_idx: index,
        submap: 0,
    };
    // SAFETY: `xen_feature_info` is {u32 submap_idx; u32 submap}; Xen fills submap.
    unsafe { op_ptr(__HYPERVISOR_xen_version, XENVER_get_features, &mut fi) }?;
    Ok(fi.submap)
}

/// `HVMOP_get_param` for this domain.
pub fn hvm_get_param(index: u32) -> Result<u64, XenError> {
    let mut p = xen_hvm_param {
        domid: DOMID_SELF,
        index,
        ..Default::default()
    };
    // SAFETY: `p` is a `xen_hvm_param_t` Xen reads and writes.
    unsafe { op_ptr(__HYPERVISOR_hvm_op, HVMOP_get_param, &mut p) }?;
    Ok(p.value)
}

/// `HVMOP_set_param` for this domain.
pub fn hvm_set_param(index: u32, value: u64) -> Result<(), XenError> {
    let mut p = xen_hvm_param {
        domid: DOMID_SELF,
        index,
        value,
        ..Default::default()
    };
    // SAFETY: `p` is a `xen_hvm_param_t` Xen reads.
    unsafe { op_ptr(__HYPERVISOR_hvm_op, HVMOP_set_param, &mut p) }?;
    Ok(())
}

/// `XENMEM_add_to_physmap`: maps Xen's `space`/`idx` page at guest frame `gpfn`.
///
/// # Safety
/// The frame at `gpfn` is replaced by the Xen page: it must be a frame the kernel
/// owns and no longer uses as RAM (what was there is lost).
pub unsafe fn add_to_physmap(space: u32, idx: u64, gpfn: u64) -> Result<(), XenError> {
    let mut a = xen_add_to_physmap {
        domid: DOMID_SELF,
        size: 0,
        space,
        idx,
        gpfn,
    };
    // SAFETY: `a` is a `xen_add_to_physmap`; the caller owns `gpfn`.
    unsafe { op_ptr(__HYPERVISOR_memory_op, XENMEM_add_to_physmap, &mut a) }?;
    Ok(())
}

/// `EVTCHNOP_send`: notifies the other end of `port`.
pub fn evtchn_send(port: u32) -> Result<(), XenError> {
    let mut s = evtchn_send { port };
    // SAFETY: `s` is an `evtchn_send`.
    unsafe { op_ptr(__HYPERVISOR_event_channel_op, EVTCHNOP_send, &mut s) }?;
    Ok(())
}

/// `EVTCHNOP_unmask`: unmasks `port` and redelivers a pending event.
pub fn evtchn_unmask(port: u32) -> Result<(), XenError> {
    let mut s = evtchn_send { port }; // evtchn_unmask has the same layout: { port }
                                      // SAFETY: `s` has the layout of `evtchn_unmask`.
    unsafe { op_ptr(__HYPERVISOR_event_channel_op, EVTCHNOP_unmask, &mut s) }?;
    Ok(())
}

/// `SCHEDOP_shutdown` with `reason` (`SHUTDOWN_*`), passed by pointer as Xen expects.
pub fn sched_shutdown(reason: u32) -> Result<(), XenError> {
    let mut s = sched_shutdown { reason };
    // SAFETY: `s` is a `sched_shutdown`.
    unsafe { op_ptr(__HYPERVISOR_sched_op, SCHEDOP_shutdown, &mut s) }?;
    Ok(())
}

/// `SCHEDOP_yield`: gives the CPU to another vCPU or domain.
pub fn sched_yield() {
    // SAFETY: SCHEDOP_yield takes no argument.
    let _ = unsafe { op_ptr::<u8>(__HYPERVISOR_sched_op, SCHEDOP_yield, core::ptr::null_mut()) };
}

/// `CONSOLEIO_write` to Xen's own console (only privileged or debug builds accept).
pub fn console_io_write(bytes: &[u8]) -> Result<(), XenError> {
    // SAFETY: Xen reads `len` bytes from `bytes`.
    let r = unsafe {
        hypercall5(
            __HYPERVISOR_console_io,
            u64::from(CONSOLEIO_write),
            bytes.len() as u64,
            bytes.as_ptr() as u64,
            0,
            0,
        )
    };
    XenError::check(r).map(|_| ())
}
