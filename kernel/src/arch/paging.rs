//! Changes to the boot page tables (boot/src/entry.rs) after boot: the null guard.
//!
//! The boot code maps the first 2 MiB with 4 KiB pages, page 0 included, because
//! boot loaders leave their information there (QEMU's PVH option ROM puts the
//! `hvm_start_info` and the memory map in page 0). Once the kernel has read it, page
//! 0 goes: a null pointer dereference then faults and is reported, as Linux's null
//! guard and MirageOS/Solo5's do.

extern "C" {
    /// The page table for 0-2 MiB (boot/src/entry.rs), live in CR3's hierarchy.
    static mut xenlet_boot_pt_low: [u64; 512];
}

/// Unmaps page 0. Call once nothing reads the boot information in low memory.
pub fn unmap_page_zero() {
    // SAFETY: entry 0 of the live 0-2 MiB page table maps page 0 only; clearing it (a volatile write to a static the boot code owns and nothing else writes after boot) and flushing that one TLB entry removes just that mapping, which kmain calls for after the last read of the boot information.
    unsafe {
        core::ptr::write_volatile(core::ptr::addr_of_mut!(xenlet_boot_pt_low[0]), 0);
        core::arch::asm!("invlpg [{}]", in(reg) 0u64, options(nostack, preserves_flags));
    }
}
