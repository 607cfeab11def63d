//! The block device interface the rest of the system uses (dd, the filesystem,
//! [`crate::blocksync`]): requests and completions over I/O buffers, the disk's
//! description and the errors, independent of Xen.

use super::IoBuf;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Sector unit of the protocol.
pub const SECTOR_BYTES: u64 = 512;

/// Negotiated protocol features.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// Ring pages in use.
    pub ring_pages: u32,
    /// Requests the ring holds.
    pub ring_entries: u32,
    /// Segments per request (11 direct, more when indirect).
    pub max_segments: u32,
    /// Indirect segments the backend accepts (0: none).
    pub indirect_segments: u32,
    /// Persistent grants in use.
    pub persistent: bool,
    /// `BLKIF_OP_FLUSH_DISKCACHE` available.
    pub flush: bool,
    /// `BLKIF_OP_WRITE_BARRIER` available.
    pub barrier: bool,
    /// `BLKIF_OP_DISCARD` available.
    pub discard: bool,
}

/// What the backend says about the disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskInfo {
    /// Linux-style name (xvda, …).
    pub name: String,
    /// Size in 512-byte sectors.
    pub sectors: u64,
    /// Logical sector size in bytes.
    pub sector_size: u32,
    /// Physical sector size in bytes.
    pub physical_sector_size: u32,
    /// Read-only disk.
    pub readonly: bool,
    /// Removable medium.
    pub removable: bool,
    /// Negotiated features.
    pub features: Features,
}

impl DiskInfo {
    /// Size in bytes.
    pub fn bytes(&self) -> u64 {
        self.sectors.saturating_mul(SECTOR_BYTES)
    }
}

/// Block-layer errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockError {
    /// The backend reported an I/O error.
    Io,
    /// The backend does not support the operation.
    NotSupported,
    /// The device is broken (bad response, dead backend); the reason is kept.
    Broken(String),
    /// Outside the disk, misaligned, or too many buffers for one request.
    Invalid(&'static str),
    /// The disk is read-only.
    ReadOnly,
    /// No free ring slot: poll for completions first.
    Busy,
    /// Handshake failed.
    Handshake(String),
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::Io => f.write_str("Input/output error"),
            BlockError::NotSupported => f.write_str("Operation not supported"),
            BlockError::Broken(why) => write!(f, "device broken: {why}"),
            BlockError::Invalid(why) => write!(f, "Invalid argument ({why})"),
            BlockError::ReadOnly => f.write_str("Read-only file system"),
            BlockError::Busy => f.write_str("device busy"),
            BlockError::Handshake(why) => write!(f, "handshake failed: {why}"),
        }
    }
}

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockOp {
    /// Read into the buffers.
    Read,
    /// Write from the buffers.
    Write,
    /// Flush the backend's write cache (or a barrier when only that exists).
    Flush,
    /// Discard `sectors` sectors.
    Discard {
        /// Sectors to discard.
        sectors: u64,
    },
}

/// A request: `bytes` (a multiple of 512) at 512-byte `sector`, through `bufs`.
pub struct BlockRequest {
    /// Caller's cookie, returned in the completion.
    pub tag: u64,
    /// Operation.
    pub op: BlockOp,
    /// First sector (512-byte units).
    pub sector: u64,
    /// Bytes to transfer (reads/writes).
    pub bytes: usize,
    /// Buffers, 4 KiB each, in order.
    pub bufs: Vec<IoBuf>,
}

/// A finished request with its buffers returned.
pub struct Completion {
    /// The request's tag.
    pub tag: u64,
    /// Outcome.
    pub result: Result<(), BlockError>,
    /// The buffers, to reuse or free.
    pub bufs: Vec<IoBuf>,
}

/// Asynchronous block devices, as dd and the filesystem use them.
pub trait BlockDevice {
    /// Size, sector sizes, features.
    fn info(&self) -> &DiskInfo;
    /// An I/O buffer (from the device's pool).
    fn alloc_buf(&mut self) -> Option<IoBuf>;
    /// Returns a buffer to the pool.
    fn free_buf(&mut self, buf: IoBuf);
    /// Queues a request; on failure the request comes back with the error.
    fn submit(&mut self, req: BlockRequest) -> Result<(), (BlockError, BlockRequest)>;
    /// Makes queued requests visible to the device.
    fn kick(&mut self);
    /// Takes finished requests.
    fn poll(&mut self, out: &mut Vec<Completion>);
    /// Requests in flight.
    fn in_flight(&self) -> usize;
    /// Whether the device has failed for good.
    fn broken(&self) -> Option<&str>;
    /// Waits a little for completions (yields the CPU).
    fn wait(&self);
}
