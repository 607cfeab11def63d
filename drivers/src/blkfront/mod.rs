//! blkfront: the Xen PV block frontend (xen/include/public/io/blkif.h).
//!
//! Handshake ([`Blkfront::connect`], driven by the shared xenbus [`Frontend`] state
//! machine; the backend's state is polled from XenStore): read the backend's transport features at
//! InitWait (`max-ring-page-order`), publish the ring (`ring-ref` or
//! `ring-page-order` + `ring-refN`), `event-channel`, `protocol` and
//! `feature-persistent`, go Initialised; when the backend is Connected read the disk
//! (`sectors`, `info`, `sector-size`, `physical-sector-size`) and its I/O features
//! (`feature-persistent`, `feature-max-indirect-segments`, `feature-flush-cache`,
//! `feature-barrier`, `feature-discard`) and go Connected.
//!
//! Data path: I/O buffers are 4 KiB pages ([`IoBuf`]) from a pool. With persistent
//! grants the pool's pages stay granted to the backend, so callers (dd, the
//! filesystem) fill and read the granted memory directly — no bounce copy and no
//! grant/ungrant per request; without the feature each request grants its pages and
//! ends the grants on completion. Requests of more than 11 pages go out as indirect
//! requests when the backend offers them. Submission and completion are
//! asynchronous ([`BlockDevice::submit`], [`BlockDevice::poll`]); the ring is kept
//! full by the caller.
//!
//! Every response is copied out of the ring once and checked (id in range and in
//! flight, operation matching, status known). A bad one marks the disk broken: its
//! pending I/O fails, nothing panics, other disks go on.
//!
//! The files: `xenbus` holds the handshake and the ring's release (`connect`,
//! `disconnect`), `device` the block interface, `pool` the I/O buffers, `request`
//! the submit path, `response` the completion path, `grants` the per-request grants
//! and the teardown, `resume` the reconnect after a restore, `stats` the counters;
//! `memdisk` a disk in memory for other code's host tests.

mod device;
mod grants;
mod pool;
mod request;
mod response;
mod resume;
mod stats;
mod xenbus;

#[cfg(any(test, feature = "test-util"))]
mod memdisk;
#[cfg(test)]
mod tests;

pub use device::{
    BlockDevice, BlockError, BlockOp, BlockRequest, Completion, DiskInfo, Features, SECTOR_BYTES,
};
#[cfg(any(test, feature = "test-util"))]
pub use memdisk::MemDisk;
pub use pool::{IoBuf, POOL_MAX_PAGES};
pub use stats::BlkStats;
pub use xenbus::{MAX_INDIRECT_SEGMENTS, MAX_RING_ORDER};

use crate::blkif;
use crate::platform::XenPlatform;
use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use grants::{Abandoned, Quarantined};
use request::Slot;
use xenlet_xen::evtchn::Port;

/// One connected virtual block device.
pub struct Blkfront<P: XenPlatform> {
    platform: P,
    vdev: u16,
    /// What the handshake set up (the backend, the ring, its grants and event
    /// channel): all of it is replaced when the handshake runs again.
    link: xenbus::Link,
    /// The connection persistent grants belong to: the backend's domain id, and how
    /// many times the domain was restored or migrated (`resume::conn`). A buffer
    /// granted on another connection (another disk's, or before a restore) is not
    /// the backend's.
    conn: u32,
    /// The ring's slots: the request in flight in each, by id (`request.rs`).
    slots: Vec<Option<Box<Slot>>>,
    free_slots: Vec<usize>,
    pool: Vec<IoBuf>,
    pool_total: usize,
    pool_limit: usize,
    done: VecDeque<Completion>,
    info: DiskInfo,
    broken: Option<String>,
    stats: BlkStats,
    quarantine: Vec<Quarantined>,
    /// Requests in flight when the device broke, with their grants and pages: the
    /// backend may still consume them (it has not answered), so their grants stay
    /// and their pages are not reused until [`Blkfront::release`] at teardown, as
    /// Linux leaves in-flight grants alone until then. Bounded by the pool.
    abandoned: Vec<Abandoned>,
}

impl<P: XenPlatform> Blkfront<P> {
    /// Connects to `device/vbd/<vdev>`; `name` is the Linux-style name.
    pub fn connect(platform: P, vdev: u16, name: String) -> Result<Self, BlockError> {
        let (link, info) = xenbus::connect(&platform, vdev, name)?;
        let entries = link.ring.size() as usize;
        let slots = (0..entries).map(|_| None).collect();
        let conn = resume::conn(&platform, link.backend_id);
        let pool_limit = (entries * info.features.max_segments as usize + 64).min(POOL_MAX_PAGES);
        Ok(Blkfront {
            platform,
            vdev,
            link,
            conn,
            slots,
            free_slots: (0..entries).rev().collect(),
            pool: Vec::new(),
            pool_total: 0,
            pool_limit,
            done: VecDeque::new(),
            info,
            broken: None,
            stats: BlkStats::default(),
            quarantine: Vec::new(),
            abandoned: Vec::new(),
        })
    }

    /// The virtual device number.
    pub fn vdev(&self) -> u16 {
        self.vdev
    }

    /// The event channel.
    pub fn port(&self) -> Port {
        self.link.port
    }

    /// Statistics.
    pub fn stats(&self) -> BlkStats {
        self.stats
    }

    /// Grant references of the ring pages.
    pub fn ring_refs(&self) -> Vec<u32> {
        self.link.ring_grants.iter().map(|g| g.gref().0).collect()
    }

    /// Takes the backend's answers off the ring and keeps them for the next
    /// [`BlockDevice::poll`], whoever calls it: how a suspend lets the disk answer
    /// what is in flight without taking the answers from the command that waits for
    /// them (a `dd` paused at its check-point).
    pub fn collect(&mut self) {
        let mut raw = [0u8; blkif::RESPONSE_BYTES];
        loop {
            if self.broken.is_some() {
                break;
            }
            match self.link.ring.take_response_or_arm(&mut raw) {
                Ok(true) => self.complete(&raw),
                Ok(false) => break,
                Err(e) => {
                    self.fail(format!("{e}"));
                    break;
                }
            }
        }
    }
}

impl<P: XenPlatform> BlockDevice for Blkfront<P> {
    fn info(&self) -> &DiskInfo {
        &self.info
    }

    fn alloc_buf(&mut self) -> Option<IoBuf> {
        self.pool.pop().or_else(|| self.new_buf())
    }

    fn free_buf(&mut self, buf: IoBuf) {
        let buf = self.refresh(buf);
        self.pool.push(buf);
    }

    fn submit(&mut self, req: BlockRequest) -> Result<(), (BlockError, BlockRequest)> {
        self.start(req)
    }

    fn kick(&mut self) {
        if self.broken.is_none() && self.link.ring.push_requests_and_check_notify() {
            self.stats.notifies += 1;
            self.platform.notify(self.link.port);
        }
    }

    fn poll(&mut self, out: &mut Vec<Completion>) {
        self.collect();
        out.extend(self.done.drain(..));
    }

    fn in_flight(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    fn wait(&self) {
        self.platform.wait();
    }
}
