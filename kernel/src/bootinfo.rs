//! What the boot left behind, for whoever reports on it later (the shell's `mem` and
//! `uptime`): the parsed boot information, when each boot phase ended, and where the
//! memory map came from. `kmain` records them once; readers never import `kmain`.

use crate::time::instant::Instant;
use core::sync::atomic::{AtomicBool, Ordering};
use spin::Once;
use xenlet_boot::BootInfo;

static BOOT_INFO: Once<BootInfo> = Once::new();
static BOOT_TIMES: Once<BootTimes> = Once::new();
static MEMMAP_FROM_XEN: AtomicBool = AtomicBool::new(false);

/// When each boot phase ended, from kernel entry.
#[derive(Clone, Copy, Debug)]
pub struct BootTimes {
    /// Console and clock up.
    pub early: Instant,
    /// Memory map, frames and heap ready.
    pub memory: Instant,
    /// Xen platform layer up (or found absent).
    pub xen: Instant,
    /// XenStore connected, shutdown watch set.
    pub xenstore: Instant,
    /// PV devices enumerated.
    pub devices: Instant,
    /// Interrupts on, prompt about to be printed.
    pub prompt: Instant,
}

/// Records the boot information (the first call wins) and returns it.
pub fn set_boot_info(info: BootInfo) -> &'static BootInfo {
    BOOT_INFO.call_once(|| info)
}

/// The boot information, once parsed.
pub fn boot_info() -> Option<&'static BootInfo> {
    BOOT_INFO.get()
}

/// Records the boot phase times (the first call wins) and returns them.
pub fn set_boot_times(times: BootTimes) -> BootTimes {
    *BOOT_TIMES.call_once(|| times)
}

/// The boot phase times.
pub fn boot_times() -> Option<BootTimes> {
    BOOT_TIMES.get().copied()
}

/// Notes that the memory map came from `XENMEM_memory_map` (the loader gave none).
pub fn set_memory_map_from_xen() {
    MEMMAP_FROM_XEN.store(true, Ordering::Relaxed);
}

/// Whether the memory map came from `XENMEM_memory_map` (the loader gave none).
pub fn memory_map_from_xen() -> bool {
    MEMMAP_FROM_XEN.load(Ordering::Relaxed)
}
