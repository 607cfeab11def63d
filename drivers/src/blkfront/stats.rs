//! The disk's counters, as `lsblk` and `disks` show them.

/// Statistics for `lsblk`/`disks`.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlkStats {
    /// Requests completed.
    pub requests: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub written_bytes: u64,
    /// Flushes sent.
    pub flushes: u64,
    /// Notifications sent.
    pub notifies: u64,
    /// Grants left in place because the backend kept the page mapped.
    pub leaked_grants: u64,
    /// Pages held back for good (with their grants) because the backend kept them
    /// mapped: never given back to the caller, the pool or the kernel.
    pub quarantined_pages: u64,
    /// Pages of other disks' buffers copied through this disk's own persistently
    /// granted pages (a disk-to-disk copy onto a persistent-grant backend).
    pub bounced_pages: u64,
}
