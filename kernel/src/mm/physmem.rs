//! Reading loader and firmware data out of identity-mapped physical memory.

use crate::mm::heap::MAPPED_LIMIT;
use xenlet_boot::PhysMemory;

/// Physical memory below [`MAPPED_LIMIT`], as the boot page tables map it (virtual ==
/// physical). Used only for loader data (start_info, multiboot2) and ACPI tables.
pub struct IdentityMemory;

/// Lowest address read: address 0 stays out of reach so no read is through a null
/// pointer (QEMU's PVH loader does put tables in the first page).
const LOWEST: u64 = 1;

impl PhysMemory for IdentityMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), ()> {
        let end = addr.checked_add(buf.len() as u64).ok_or(())?;
        if addr < LOWEST || end > MAPPED_LIMIT {
            return Err(());
        }
        // SAFETY: [addr, end) lies in the identity map set up in boot/src/entry.rs (first 4 GiB, always mapped) and does not start at the null address. Callers only pass addresses the loader or the firmware named as data (boot information, ACPI tables), never MMIO, and the bytes are copied out, not referenced.
        unsafe { core::ptr::copy_nonoverlapping(addr as *const u8, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }
}
