//! Xen ABI numbers and layouts that `xen-sys` does not carry.
//!
//! Names are Xen's C names, verbatim, so they can be grepped for in Xen's headers.
#![allow(missing_docs, non_upper_case_globals, non_camel_case_types)]

pub use xen_sys::{
    __HYPERVISOR_console_io, __HYPERVISOR_event_channel_op, __HYPERVISOR_grant_table_op,
    __HYPERVISOR_hvm_op, __HYPERVISOR_memory_op, __HYPERVISOR_sched_op, __HYPERVISOR_vcpu_op,
    __HYPERVISOR_xen_version, CONSOLEIO_write, EVTCHNOP_alloc_unbound, EVTCHNOP_bind_interdomain,
    EVTCHNOP_bind_virq, EVTCHNOP_close, EVTCHNOP_send, EVTCHNOP_unmask, SCHEDOP_shutdown,
    SCHEDOP_yield, SHUTDOWN_crash, SHUTDOWN_poweroff, SHUTDOWN_reboot, SHUTDOWN_suspend,
    VIRQ_TIMER,
};

// xen/include/public/version.h
pub const XENVER_version: u32 = 0;
pub const XENVER_extraversion: u32 = 1;
pub const XENVER_get_features: u32 = 6;
/// Length of `xen_extraversion_t`.
pub const XEN_EXTRAVERSION_LEN: usize = 16;

// xen/include/public/features.h
pub const XENFEAT_hvm_callback_vector: u32 = 8;
pub const XENFEAT_hvm_safe_pvclock: u32 = 9;
pub const XENFEAT_hvm_pirqs: u32 = 10;

// xen/include/public/hvm/hvm_op.h
pub const HVMOP_set_param: u32 = 0;
pub const HVMOP_get_param: u32 = 1;
pub const HVMOP_set_evtchn_upcall_vector: u32 = 23;
/// `xen_hvm_evtchn_upcall_vector`: vcpu u32, vector u8.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct xen_hvm_evtchn_upcall_vector {
    pub vcpu: u32,
    pub vector: u8,
}
const _: () = assert!(core::mem::size_of::<xen_hvm_evtchn_upcall_vector>() == 8);
/// `xen_hvm_param_t`: domid u16, pad, index u32, value u64.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct xen_hvm_param {
    pub domid: u16,
    pub pad: u16,
    pub index: u32,
    pub value: u64,
}
const _: () = assert!(core::mem::size_of::<xen_hvm_param>() == 16);
pub const DOMID_SELF: u16 = 0x7ff0;

// xen/include/public/vcpu.h
pub const VCPUOP_get_runstate_info: u32 = 4;
pub const VCPUOP_stop_periodic_timer: u32 = 7;
pub const VCPUOP_set_singleshot_timer: u32 = 8;
pub const VCPUOP_stop_singleshot_timer: u32 = 9;
/// `vcpu_set_singleshot_timer`: timeout_abs_ns u64 (Xen system time), flags u32.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct vcpu_set_singleshot_timer {
    pub timeout_abs_ns: u64,
    pub flags: u32,
}
const _: () = assert!(core::mem::size_of::<vcpu_set_singleshot_timer>() == 16);
/// `vcpu_runstate_info`: state i32, state_entry_time u64, time[4] u64 (ns spent
/// running, runnable, blocked, offline). 48 bytes: what VCPUOP_get_runstate_info
/// writes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct vcpu_runstate_info {
    pub state: i32,
    pub state_entry_time: u64,
    pub time: [u64; 4],
}
const _: () = assert!(core::mem::size_of::<vcpu_runstate_info>() == 48);

// xen/include/public/hvm/params.h
pub const HVM_PARAM_CALLBACK_IRQ: u32 = 0;
pub const HVM_PARAM_STORE_PFN: u32 = 1;
pub const HVM_PARAM_STORE_EVTCHN: u32 = 2;
pub const HVM_PARAM_CONSOLE_PFN: u32 = 17;
pub const HVM_PARAM_CONSOLE_EVTCHN: u32 = 18;
/// `HVM_PARAM_CALLBACK_TYPE_VECTOR` in bits 63:56 of `HVM_PARAM_CALLBACK_IRQ`.
pub const HVM_PARAM_CALLBACK_TYPE_VECTOR: u64 = 2;

// xen/include/public/memory.h
pub const XENMEM_add_to_physmap: u32 = 7;
pub const XENMEM_memory_map: u32 = 9;
/// `xen_memory_map`: nr_entries u32 (in: room, out: written), pad, buffer u64.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct xen_memory_map {
    pub nr_entries: u32,
    pub buffer: u64,
}
const _: () = assert!(core::mem::size_of::<xen_memory_map>() == 16);
pub const XENMAPSPACE_shared_info: u32 = 0;
pub const XENMAPSPACE_grant_table: u32 = 1;
/// `xen_add_to_physmap`: domid u16, size u16, space u32, idx u64, gpfn u64.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct xen_add_to_physmap {
    pub domid: u16,
    pub size: u16,
    pub space: u32,
    pub idx: u64,
    pub gpfn: u64,
}
const _: () = assert!(core::mem::size_of::<xen_add_to_physmap>() == 24);

// xen/include/public/event_channel.h (xen-sys has the structs; these are the plain
// layouts we pass, checked against it)
/// `evtchn_send`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct evtchn_send {
    pub port: u32,
}
const _: () =
    assert!(core::mem::size_of::<evtchn_send>() == core::mem::size_of::<xen_sys::evtchn_send>());

/// `sched_shutdown`: passed to SCHEDOP_shutdown by pointer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct sched_shutdown {
    pub reason: u32,
}
const _: () = assert!(
    core::mem::size_of::<sched_shutdown>() == core::mem::size_of::<xen_sys::sched_shutdown>()
);

// xen/include/public/xen.h: shared_info layout (x86_64), checked against xen-sys.
pub const SHARED_INFO_VCPU_INFO: usize = 0;
pub const VCPU_INFO_BYTES: usize = 64;
pub const VCPU_INFO_UPCALL_PENDING: usize = 0;
pub const VCPU_INFO_UPCALL_MASK: usize = 1;
pub const VCPU_INFO_PENDING_SEL: usize = 8;
pub const VCPU_INFO_TIME: usize = 32;
pub const SHARED_INFO_EVTCHN_PENDING: usize = 2048;
pub const SHARED_INFO_EVTCHN_MASK: usize = 2560;
pub const SHARED_INFO_WC_VERSION: usize = 3072;
pub const SHARED_INFO_WC_SEC: usize = 3076;
pub const SHARED_INFO_WC_NSEC: usize = 3080;
/// `wc_sec_hi` (not on 32-bit guests), right after `wc_nsec`.
pub const SHARED_INFO_WC_SEC_HI: usize = 3084;
/// Event channel words (2-level ABI, 64-bit guest): 64 words of 64 ports.
pub const EVTCHN_WORDS: usize = 64;
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<xen_sys::vcpu_info>() == VCPU_INFO_BYTES);
    assert!(offset_of!(xen_sys::vcpu_info, evtchn_pending_sel) == VCPU_INFO_PENDING_SEL);
    assert!(offset_of!(xen_sys::vcpu_info, time) == VCPU_INFO_TIME);
    assert!(offset_of!(xen_sys::shared_info, evtchn_pending) == SHARED_INFO_EVTCHN_PENDING);
    assert!(offset_of!(xen_sys::shared_info, evtchn_mask) == SHARED_INFO_EVTCHN_MASK);
    assert!(offset_of!(xen_sys::shared_info, wc_version) == SHARED_INFO_WC_VERSION);
    assert!(offset_of!(xen_sys::shared_info, wc_sec) == SHARED_INFO_WC_SEC);
    assert!(offset_of!(xen_sys::shared_info, wc_nsec) == SHARED_INFO_WC_NSEC);
};

// xen/include/public/io/console.h: struct xencons_interface
pub const XENCONS_IN: usize = 0;
pub const XENCONS_IN_SIZE: u32 = 1024;
pub const XENCONS_OUT: usize = 1024;
pub const XENCONS_OUT_SIZE: u32 = 2048;
pub const XENCONS_IN_CONS: usize = 3072;
pub const XENCONS_IN_PROD: usize = 3076;
pub const XENCONS_OUT_CONS: usize = 3080;
pub const XENCONS_OUT_PROD: usize = 3084;

// xen/include/public/grant_table.h: the backend's operations (map, unmap, copy).
pub const GNTTABOP_map_grant_ref: u32 = 0;
pub const GNTTABOP_unmap_grant_ref: u32 = 1;
pub const GNTTABOP_copy: u32 = 5;
/// `GNTMAP_host_map`: map at `host_addr` (for an HVM/PVH guest, a guest-physical
/// address).
pub const GNTMAP_host_map: u32 = 1 << 1;
/// `GNTMAP_readonly`.
pub const GNTMAP_readonly: u32 = 1 << 2;
/// `GNTCOPY_source_gref`: `source.u` is a grant reference (else a frame).
pub const GNTCOPY_source_gref: u16 = 1 << 0;
/// `GNTCOPY_dest_gref`.
pub const GNTCOPY_dest_gref: u16 = 1 << 1;
/// `gnttab_map_grant_ref`: host_addr u64, flags u32, ref u32, dom u16, status i16,
/// handle u32, dev_bus_addr u64.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct gnttab_map_grant_ref {
    pub host_addr: u64,
    pub flags: u32,
    pub ref_: u32,
    pub dom: u16,
    pub status: i16,
    pub handle: u32,
    pub dev_bus_addr: u64,
}
const _: () = assert!(core::mem::size_of::<gnttab_map_grant_ref>() == 32);
/// `gnttab_unmap_grant_ref`: host_addr u64, dev_bus_addr u64, handle u32, status i16.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct gnttab_unmap_grant_ref {
    pub host_addr: u64,
    pub dev_bus_addr: u64,
    pub handle: u32,
    pub status: i16,
}
const _: () = assert!(core::mem::size_of::<gnttab_unmap_grant_ref>() == 24);
/// One side of a `gnttab_copy`: `u` is a grant reference or a frame (`xen_pfn_t`,
/// 64-bit on x86_64), then the domain and the offset in the page.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct gnttab_copy_ptr {
    pub u: u64,
    pub domid: u16,
    pub offset: u16,
}
const _: () = assert!(core::mem::size_of::<gnttab_copy_ptr>() == 16);
/// `gnttab_copy`: source, dest, len u16, flags u16, status i16.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct gnttab_copy {
    pub source: gnttab_copy_ptr,
    pub dest: gnttab_copy_ptr,
    pub len: u16,
    pub flags: u16,
    pub status: i16,
}
const _: () = assert!(core::mem::size_of::<gnttab_copy>() == 40);
const _: () = assert!(core::mem::offset_of!(gnttab_copy, status) == 36);

// xen/include/public/memory.h: giving frames back to Xen and taking them again.
pub const XENMEM_increase_reservation: u32 = 0;
pub const XENMEM_decrease_reservation: u32 = 1;
pub const XENMEM_populate_physmap: u32 = 6;
/// `xen_memory_reservation`: extent_start (a guest handle to `xen_pfn_t`s) u64,
/// nr_extents u64, extent_order u32, mem_flags u32, domid u16.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct xen_memory_reservation {
    pub extent_start: u64,
    pub nr_extents: u64,
    pub extent_order: u32,
    pub mem_flags: u32,
    pub domid: u16,
}
const _: () = assert!(core::mem::size_of::<xen_memory_reservation>() == 32);
