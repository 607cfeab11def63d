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

/// In its own section (linker.ld `.hypercall`): mapped read-execute, as W^X wants
/// code, though it is not the kernel's own code.
#[cfg_attr(target_os = "none", link_section = ".xenlet_hypercall")]
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
    if installed() {
        return Ok(());
    }
    if xen.hypercall_pages == 0 {
        return Err(InstallError::NoPages);
    }
    let addr = PAGE.0.get() as u64;
    // SAFETY: writing Xen's hypercall MSR with the guest-physical address (identity mapped kernel) of a page-aligned, writable, executable static page that nothing else uses; Xen overwrites it with hypercall stubs.
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
    // SAFETY: `entry` is the stub for `op` in the page Xen filled (checked by `installed`); the stub executes vmcall/vmmcall and returns. The caller vouches for the arguments. All caller-saved registers are declared clobbered.
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

/// `HYPERVISOR_grant_table_op(cmd, ops, count)`: Xen's return.
///
/// # Safety
/// `ops` must point to `count` live structs of the layout `cmd` takes, which Xen may
/// read and write during the call.
unsafe fn grant_table_op<T>(cmd: u64, ops: *mut T, count: u64) -> i64 {
    // SAFETY: the caller vouches for `ops` and `count`.
    unsafe { hypercall5(__HYPERVISOR_grant_table_op, cmd, ops as u64, count, 0, 0) }
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

/// `XENMEM_memory_map`: the domain's E820 map (packed 20-byte entries) into `buf`;
/// returns how many entries Xen wrote.
pub fn memory_map(buf: &mut [u8]) -> Result<usize, XenError> {
    let room = u32::try_from(buf.len() / 20).unwrap_or(u32::MAX);
    let mut m = xen_memory_map {
        nr_entries: room,
        buffer: buf.as_mut_ptr() as u64,
    };
    // SAFETY: `m` is a `xen_memory_map` whose buffer has room for `nr_entries` 20-byte entries, all in `buf`; Xen writes at most that many.
    unsafe { op_ptr(__HYPERVISOR_memory_op, XENMEM_memory_map, &mut m) }?;
    Ok(m.nr_entries.min(room) as usize)
}

/// `HVMOP_set_evtchn_upcall_vector`: event-channel upcalls of `vcpu` arrive as
/// `vector` through its local APIC (which must then be acknowledged with an EOI).
pub fn hvm_set_evtchn_upcall_vector(vcpu: u32, vector: u8) -> Result<(), XenError> {
    let mut v = xen_hvm_evtchn_upcall_vector { vcpu, vector };
    // SAFETY: `v` is a `xen_hvm_evtchn_upcall_vector` Xen reads.
    unsafe { op_ptr(__HYPERVISOR_hvm_op, HVMOP_set_evtchn_upcall_vector, &mut v) }?;
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

/// `SCHEDOP_shutdown(SHUTDOWN_suspend)` for an HVM/PVH domain: the toolstack saves
/// the domain while the call is under way. Returns `Ok(false)` when the domain goes on
/// in a new domain (restored or migrated: every Xen-side object is new) and `Ok(true)`
/// when the suspend was cancelled (`xl save -c`, a failed migration: the toolstack's
/// fast resume makes the call return 1 in the same domain, everything still in place).
pub fn sched_suspend() -> Result<bool, XenError> {
    let mut s = sched_shutdown {
        reason: SHUTDOWN_suspend,
    };
    // SAFETY: `s` is a `sched_shutdown`.
    let r = unsafe { op_ptr(__HYPERVISOR_sched_op, SCHEDOP_shutdown, &mut s) }?;
    Ok(r != 0)
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

/// `GNTTABOP_query_size`: (frames in use, maximum frames) of this domain's table.
pub fn gnttab_query_size() -> Result<(u32, u32), XenError> {
    #[repr(C)]
    struct QuerySize {
        domid: u16,
        nr_frames: u32,
        max_nr_frames: u32,
        status: i16,
    }
    const GNTTABOP_QUERY_SIZE: u64 = 6;
    let mut q = QuerySize {
        domid: DOMID_SELF,
        nr_frames: 0,
        max_nr_frames: 0,
        status: 0,
    };
    // SAFETY: `q` has the layout of `gnttab_query_size` (u16, u32, u32, i16); count 1.
    let r = unsafe { grant_table_op(GNTTABOP_QUERY_SIZE, &mut q, 1) };
    XenError::check(r)?;
    if q.status != 0 {
        return Err(XenError::from_ret(i64::from(q.status)));
    }
    Ok((q.nr_frames, q.max_nr_frames))
}

/// `EVTCHNOP_alloc_unbound`: a port `remote` can bind to.
pub fn evtchn_alloc_unbound(remote: u16) -> Result<u32, XenError> {
    #[repr(C)]
    struct AllocUnbound {
        dom: u16,
        remote_dom: u16,
        port: u32,
    }
    let mut a = AllocUnbound {
        dom: DOMID_SELF,
        remote_dom: remote,
        port: 0,
    };
    // SAFETY: `a` has the layout of `evtchn_alloc_unbound`.
    unsafe {
        op_ptr(
            __HYPERVISOR_event_channel_op,
            EVTCHNOP_alloc_unbound,
            &mut a,
        )
    }?;
    Ok(a.port)
}

/// `EVTCHNOP_bind_interdomain`: connects to `remote_port` of domain `remote`.
pub fn evtchn_bind_interdomain(remote: u16, remote_port: u32) -> Result<u32, XenError> {
    #[repr(C)]
    struct BindInterdomain {
        remote_dom: u16,
        remote_port: u32,
        local_port: u32,
    }
    let mut b = BindInterdomain {
        remote_dom: remote,
        remote_port,
        local_port: 0,
    };
    // SAFETY: `b` has the layout of `evtchn_bind_interdomain`.
    unsafe {
        op_ptr(
            __HYPERVISOR_event_channel_op,
            EVTCHNOP_bind_interdomain,
            &mut b,
        )
    }?;
    Ok(b.local_port)
}

/// `EVTCHNOP_bind_virq` on vCPU `vcpu`.
pub fn evtchn_bind_virq(virq: u32, vcpu: u32) -> Result<u32, XenError> {
    #[repr(C)]
    struct BindVirq {
        virq: u32,
        vcpu: u32,
        port: u32,
    }
    let mut b = BindVirq {
        virq,
        vcpu,
        port: 0,
    };
    // SAFETY: `b` has the layout of `evtchn_bind_virq`.
    unsafe { op_ptr(__HYPERVISOR_event_channel_op, EVTCHNOP_bind_virq, &mut b) }?;
    Ok(b.port)
}

/// `EVTCHNOP_close`.
pub fn evtchn_close(port: u32) -> Result<(), XenError> {
    let mut c = evtchn_send { port }; // evtchn_close is { port }
                                      // SAFETY: `c` has the layout of `evtchn_close`.
    unsafe { op_ptr(__HYPERVISOR_event_channel_op, EVTCHNOP_close, &mut c) }?;
    Ok(())
}

/// `VCPUOP_set_singleshot_timer`: a `VIRQ_TIMER` on `vcpu` at Xen system time
/// `deadline_ns` (absolute, as in `vcpu_time_info`; a time already past fires at once).
pub fn set_singleshot_timer(vcpu: u32, deadline_ns: u64) -> Result<(), XenError> {
    let mut s = vcpu_set_singleshot_timer {
        timeout_abs_ns: deadline_ns,
        flags: 0,
    };
    // SAFETY: `s` is a `vcpu_set_singleshot_timer`, which Xen only reads for this command.
    unsafe { vcpu_op(VCPUOP_set_singleshot_timer, vcpu, &mut s) }.map(|_| ())
}

/// `VCPUOP_stop_singleshot_timer` on `vcpu`.
pub fn stop_singleshot_timer(vcpu: u32) -> Result<(), XenError> {
    // SAFETY: the command takes no argument.
    unsafe { vcpu_op::<u8>(VCPUOP_stop_singleshot_timer, vcpu, core::ptr::null_mut()) }.map(|_| ())
}

/// `VCPUOP_stop_periodic_timer` on `vcpu` (Xen may start vCPUs with a 10 ms tick).
pub fn stop_periodic_timer(vcpu: u32) -> Result<(), XenError> {
    // SAFETY: the command takes no argument.
    unsafe { vcpu_op::<u8>(VCPUOP_stop_periodic_timer, vcpu, core::ptr::null_mut()) }.map(|_| ())
}

/// `VCPUOP_get_runstate_info` of `vcpu`: time spent running, runnable, blocked and
/// offline (ns).
pub fn runstate_info(vcpu: u32) -> Result<vcpu_runstate_info, XenError> {
    let mut r = vcpu_runstate_info::default();
    // SAFETY: `r` is a whole 48-byte `vcpu_runstate_info`, which Xen writes.
    unsafe { vcpu_op(VCPUOP_get_runstate_info, vcpu, &mut r) }?;
    Ok(r)
}

/// `HYPERVISOR_vcpu_op(cmd, vcpuid, arg)`.
///
/// # Safety
/// `arg` must point to what `cmd` reads or writes (or be null if it takes nothing):
/// Xen writes the command's output struct whole, whatever the caller's buffer size.
unsafe fn vcpu_op<T>(cmd: u32, vcpu: u32, arg: *mut T) -> Result<u64, XenError> {
    // SAFETY: forwarded contract.
    XenError::check(unsafe {
        hypercall5(
            __HYPERVISOR_vcpu_op,
            u64::from(cmd),
            u64::from(vcpu),
            arg as u64,
            0,
            0,
        )
    })
}

/// `XENMEM_decrease_reservation` of one 4 KiB frame: the frame at `gfn` goes back to
/// Xen and the guest-physical address is left empty (a balloon), for a foreign page
/// to be mapped there. Whether Xen took it.
///
/// # Safety
/// The caller must own the frame and no longer use it as memory: reading or writing
/// the address afterwards reaches nothing (or, once something is mapped there, that).
pub unsafe fn decrease_reservation(gfn: u64) -> Result<(), XenError> {
    // SAFETY: forwarded contract.
    unsafe { reservation(XENMEM_decrease_reservation, gfn) }
}

/// `XENMEM_populate_physmap` of one 4 KiB frame at `gfn`: RAM again where a ballooned
/// frame was (its content is undefined).
///
/// # Safety
/// `gfn` must be a frame the caller ballooned out ([`decrease_reservation`]) and has
/// nothing mapped at any more.
pub unsafe fn populate_physmap(gfn: u64) -> Result<(), XenError> {
    // SAFETY: forwarded contract.
    unsafe { reservation(XENMEM_populate_physmap, gfn) }
}

/// One extent of order 0 through `cmd`; Xen returns how many extents it did.
///
/// # Safety
/// As for the callers.
unsafe fn reservation(cmd: u32, gfn: u64) -> Result<(), XenError> {
    let mut frame = gfn;
    let mut r = xen_memory_reservation {
        extent_start: &mut frame as *mut u64 as u64,
        nr_extents: 1,
        extent_order: 0,
        mem_flags: 0,
        domid: DOMID_SELF,
    };
    // SAFETY: `r` is a `xen_memory_reservation` whose handle points to one `xen_pfn_t` (`frame`, live across the call); the caller vouches for the frame.
    let done = unsafe { op_ptr(__HYPERVISOR_memory_op, cmd, &mut r) }?;
    if done == 1 {
        Ok(())
    } else {
        Err(XenError::NoMem)
    }
}

/// `GNTTABOP_map_grant_ref` with `GNTMAP_host_map` (read-only unless `writable`):
/// maps grant `gref` of domain `dom` at guest-physical address `gpa`. The grant
/// handle, or Xen's `GNTST_*` status (negative; the hypercall's own failure as
/// `GNTST_general_error`).
///
/// # Safety
/// `gpa` must be a page-aligned guest-physical address the caller owns and has
/// emptied ([`decrease_reservation`]): the foreign page appears there.
pub unsafe fn gnttab_map_grant_ref(
    gpa: u64,
    dom: u16,
    gref: u32,
    writable: bool,
) -> Result<u32, i16> {
    let mut m = gnttab_map_grant_ref {
        host_addr: gpa,
        flags: GNTMAP_host_map | if writable { 0 } else { GNTMAP_readonly },
        ref_: gref,
        dom,
        ..Default::default()
    };
    // SAFETY: `m` is one `gnttab_map_grant_ref` Xen reads and writes (count 1); the caller vouches for `gpa`.
    let r = unsafe { grant_table_op(u64::from(GNTTABOP_map_grant_ref), &mut m, 1) };
    if r < 0 {
        return Err(-1);
    }
    if m.status != 0 {
        return Err(m.status);
    }
    Ok(m.handle)
}

/// `GNTTABOP_unmap_grant_ref` of the mapping `handle` at `gpa`; Xen's status on
/// failure.
///
/// # Safety
/// Nothing may use the page at `gpa` after the call (it becomes an empty
/// guest-physical address).
pub unsafe fn gnttab_unmap_grant_ref(gpa: u64, handle: u32) -> Result<(), i16> {
    let mut u = gnttab_unmap_grant_ref {
        host_addr: gpa,
        dev_bus_addr: 0,
        handle,
        status: 0,
    };
    // SAFETY: `u` is one `gnttab_unmap_grant_ref` (count 1); the caller stops using the page.
    let r = unsafe { grant_table_op(u64::from(GNTTABOP_unmap_grant_ref), &mut u, 1) };
    if r < 0 {
        return Err(-1);
    }
    if u.status != 0 {
        return Err(u.status);
    }
    Ok(())
}

/// `GNTTABOP_copy` of every op in `ops` (one hypercall; Xen may preempt and
/// continue it itself). Each op's `status` holds Xen's `GNTST_*` after the call; when
/// the hypercall itself fails the error is returned and the statuses say nothing.
///
/// # Safety
/// Every op whose destination is a local frame (`DOMID_SELF`, no
/// `GNTCOPY_dest_gref`) must name a frame the caller owns and does not otherwise use
/// during the call, at an offset and length within that page: Xen writes it.
pub unsafe fn gnttab_copy(ops: &mut [gnttab_copy]) -> Result<(), XenError> {
    if ops.is_empty() {
        return Ok(());
    }
    // SAFETY: `ops` is a live array of `ops.len()` `gnttab_copy` structs Xen reads and writes; the caller vouches for the local destinations.
    let r = unsafe { grant_table_op(u64::from(GNTTABOP_copy), ops.as_mut_ptr(), ops.len() as u64) };
    XenError::check(r).map(|_| ())
}
