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

    /// The wall-clock time at Xen system time 0 (`wc_sec`, `wc_nsec`, `wc_sec_hi`), in
    /// nanoseconds since the epoch, read consistently (`wc_version` even and
    /// unchanged across the read); None if it never settles.
    pub fn wallclock_base_ns(&self) -> Option<u64> {
        for _ in 0..1000 {
            let v0 = self.page.load_u32(SHARED_INFO_WC_VERSION);
            if v0 & 1 != 0 {
                core::hint::spin_loop();
                continue;
            }
            let sec = u64::from(self.page.load_u32(SHARED_INFO_WC_SEC))
                | u64::from(self.page.load_u32(SHARED_INFO_WC_SEC_HI)) << 32;
            let nsec = u64::from(self.page.load_u32(SHARED_INFO_WC_NSEC));
            if self.page.load_u32(SHARED_INFO_WC_VERSION) == v0 {
                return sec.checked_mul(1_000_000_000)?.checked_add(nsec);
            }
        }
        None
    }
}

#[cfg(test)]
mod wallclock_tests {
    use super::*;

    #[test]
    fn wallclock_reads_sec_hi_and_refuses_an_odd_version() {
        let page = SharedPage::leak_new(1);
        let si = SharedInfo::new(page.alias_for_test());
        page.store_u32(SHARED_INFO_WC_SEC, 1_764_751_200);
        page.store_u32(SHARED_INFO_WC_NSEC, 5);
        page.store_u32(SHARED_INFO_WC_VERSION, 2);
        assert_eq!(si.wallclock_base_ns(), Some(1_764_751_200_000_000_005));
        page.store_u32(SHARED_INFO_WC_SEC_HI, 1);
        assert_eq!(
            si.wallclock_base_ns(),
            Some(((1u64 << 32) + 1_764_751_200) * 1_000_000_000 + 5)
        );
        page.store_u32(SHARED_INFO_WC_VERSION, 3);
        assert_eq!(
            si.wallclock_base_ns(),
            None,
            "an update that never finishes"
        );
    }
}
