//! The shared info page (xen/include/public/xen.h `struct shared_info`) and the
//! legacy `vcpu_info` slots in it.

use crate::abi::*;
use crate::shared::SharedPage;

/// The mapped shared info page.
pub struct SharedInfo {
    page: SharedPage,
}

impl SharedInfo {
    /// Wraps the page Xen mapped with `XENMAPSPACE_shared_info`.
    pub fn new(page: SharedPage) -> Self {
        SharedInfo { page }
    }

    /// The underlying page.
    pub fn page(&self) -> &SharedPage {
        &self.page
    }

    /// Offset of vCPU `vcpu`'s `vcpu_info` (legacy slots: vCPUs 0–31).
    pub fn vcpu_info(vcpu: usize) -> usize {
        assert!(vcpu < 32, "legacy vcpu_info slots cover vCPUs 0-31");
        SHARED_INFO_VCPU_INFO + vcpu * VCPU_INFO_BYTES
    }

    /// Sets or clears `evtchn_upcall_mask` (events held back while set).
    pub fn set_upcall_mask(&self, vcpu: usize, masked: bool) {
        self.page.store_u8(
            Self::vcpu_info(vcpu) + VCPU_INFO_UPCALL_MASK,
            u8::from(masked),
        );
    }

    /// Reads `evtchn_upcall_pending`.
    pub fn upcall_pending(&self, vcpu: usize) -> bool {
        self.page
            .load_u8(Self::vcpu_info(vcpu) + VCPU_INFO_UPCALL_PENDING)
            != 0
    }

    /// Copies out vCPU `vcpu`'s `vcpu_time_info` (32 bytes) for pvclock.
    pub fn read_time_info(&self, vcpu: usize, buf: &mut [u8; 32]) {
        self.page
            .read_bytes(Self::vcpu_info(vcpu) + VCPU_INFO_TIME, buf);
    }
}
