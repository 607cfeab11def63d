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

use crate::blkif::{self, Segment};
use crate::platform::{DmaPages, XenPlatform};
use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use xenlet_xen::evtchn::Port;
use xenlet_xen::gnttab::{Access, Grant};
use xenlet_xen::ring::FrontRing;
use xenlet_xen::shared::PAGE_BYTES;
use xenlet_xen::xenbus::{Action, Frontend, XenbusState};

/// Largest ring order asked for (16 pages, 512 requests in flight).
pub const MAX_RING_ORDER: u32 = 4;
/// Most indirect segments used per request (1 MiB and more of 4 KiB pages).
pub const MAX_INDIRECT_SEGMENTS: u32 = 256;
/// Sector unit of the protocol.
pub const SECTOR_BYTES: u64 = 512;
/// Most I/O buffer pages per disk (4 MiB of data plus indirect pages): bounded so a
/// 32 MiB guest keeps memory for everything else.
pub const POOL_MAX_PAGES: usize = 1024 + 64;
/// How long the handshake waits for the backend.
const HANDSHAKE_TIMEOUT_NS: u64 = 60_000_000_000;

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

/// A 4 KiB I/O buffer in grantable memory. Its bytes are reached by copy only.
pub struct IoBuf {
    page: DmaPages,
    /// Persistent grant, and the domain it was made to.
    grant: Option<(Grant, u16)>,
}

impl IoBuf {
    /// Copies `data` into the buffer at `offset`.
    pub fn write_at(&self, offset: usize, data: &[u8]) {
        self.page.mem().write_bytes(offset, data);
    }
    /// Copies bytes out of the buffer at `offset`.
    pub fn read_at(&self, offset: usize, out: &mut [u8]) {
        self.page.mem().read_bytes(offset, out);
    }
    /// Zeroes the buffer.
    pub fn zero(&self) {
        self.page.mem().zero();
    }
    /// Size in bytes.
    pub fn len(&self) -> usize {
        PAGE_BYTES
    }
    /// Never empty.
    pub fn is_empty(&self) -> bool {
        false
    }
    /// A buffer over plain memory, for host tests of code above [`BlockDevice`].
    #[cfg(any(test, feature = "test-util"))]
    pub fn for_test() -> IoBuf {
        IoBuf {
            page: DmaPages::leak_for_test(0, 1).0,
            grant: None,
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

/// The page a per-request grant is for: a data buffer or an indirect page of the
/// request (index into its `bufs` / `indirect`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Held {
    Buf(usize),
    Indirect(usize),
}

struct Slot {
    tag: u64,
    op: u8,
    in_flight: bool,
    bufs: Vec<IoBuf>,
    grants: Vec<(Grant, Held)>,
    indirect: Vec<IoBuf>,
    /// The caller's buffers that were not this backend's (another disk's pool, a
    /// disk-to-disk copy) and went through one of ours instead: (index in `bufs`,
    /// the caller's buffer). See [`Blkfront::bounce`].
    bounced: Vec<(usize, IoBuf)>,
}

/// A page the backend still maps after its grant was to end: kept with the grant
/// for good, never reused (as Linux does since XSA-396).
struct Quarantined {
    _page: Option<IoBuf>,
    _grant: Option<Grant>,
}

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

/// One connected virtual block device.
pub struct Blkfront<P: XenPlatform> {
    platform: P,
    vdev: u16,
    backend_id: u16,
    ring: FrontRing,
    ring_grants: Vec<Grant>,
    port: Port,
    slots: Vec<Slot>,
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

/// One abandoned request's grants and pages (see `Blkfront::abandoned`).
struct Abandoned {
    grants: Vec<(Grant, Held)>,
    bufs: Vec<IoBuf>,
    indirect: Vec<IoBuf>,
}

fn read_u64<P: XenPlatform>(p: &P, path: &str) -> Option<u64> {
    p.xs_read(path).ok()?.trim().parse().ok()
}

fn wait_for_action<P: XenPlatform>(
    p: &P,
    path: &str,
    fe: &Frontend,
    want: Action,
) -> Result<(), BlockError> {
    crate::platform::wait_for_action(p, path, fe, want, HANDSHAKE_TIMEOUT_NS)
        .map_err(BlockError::Handshake)
}

fn hs<T, E: fmt::Display>(what: &str, r: Result<T, E>) -> Result<T, BlockError> {
    r.map_err(|e| BlockError::Handshake(format!("{what}: {e}")))
}

impl<P: XenPlatform> Blkfront<P> {
    /// Connects to `device/vbd/<vdev>`; `name` is the Linux-style name.
    pub fn connect(platform: P, vdev: u16, name: String) -> Result<Self, BlockError> {
        let p = &platform;
        let base = format!("device/vbd/{vdev}");
        let backend = hs("backend path", p.xs_read(&format!("{base}/backend")))?;
        let backend_id = read_u64(p, &format!("{base}/backend-id"))
            .and_then(|v| u16::try_from(v).ok())
            .ok_or_else(|| BlockError::Handshake(String::from("bad backend-id")))?;
        let bstate = format!("{backend}/state");
        let mut fe = Frontend::new();
        wait_for_action(p, &bstate, &fe, Action::Setup)?;

        let order = read_u64(p, &format!("{backend}/max-ring-page-order"))
            .unwrap_or(0)
            .min(u64::from(MAX_RING_ORDER)) as u32;
        let pages = 1usize << order;
        let ring_mem = p
            .alloc_pages(pages)
            .ok_or_else(|| BlockError::Handshake(String::from("no memory for the ring")))?;
        // The ring pages belong to the ring (and the backend's mapping) from now on.
        let ring = FrontRing::init(ring_mem, blkif::ENTRY_BYTES);
        let mut ring_grants = Vec::with_capacity(pages);
        let mut port = None;
        let disk = Self::handshake(
            p,
            &base,
            &backend,
            &mut fe,
            (backend_id, order, &ring),
            &mut ring_grants,
            &mut port,
        );
        let (sectors, info_bits, sector_size, physical_sector_size, features) = match disk {
            Ok(d) => d,
            Err(e) => {
                // Give back what was taken: the frontend goes Closing (as Linux's
                // xenbus_dev_fatal), the port is closed, and the ring pages are freed
                // if every grant ends (a backend still mapping one keeps them).
                let _ = p.xs_write(
                    &format!("{base}/state"),
                    &format!("{}", XenbusState::Closing.number()),
                );
                if let Some(port) = port {
                    p.close_port(port);
                }
                let mut all_ended = true;
                for g in ring_grants {
                    all_ended &= p.end_grant(g).is_ok();
                }
                if all_ended {
                    p.free_pages(ring.into_pages());
                }
                return Err(e);
            }
        };
        let Some(port) = port else {
            return Err(BlockError::Handshake(String::from("no event channel")));
        };

        let entries = ring.size() as usize;
        let slots = (0..entries)
            .map(|_| Slot {
                tag: 0,
                op: 0,
                in_flight: false,
                bufs: Vec::new(),
                grants: Vec::new(),
                indirect: Vec::new(),
                bounced: Vec::new(),
            })
            .collect();
        let pool_limit = (entries * features.max_segments as usize + 64).min(POOL_MAX_PAGES);
        Ok(Blkfront {
            platform,
            vdev,
            backend_id,
            ring,
            ring_grants,
            port,
            slots,
            free_slots: (0..entries).rev().collect(),
            pool: Vec::new(),
            pool_total: 0,
            pool_limit,
            done: VecDeque::new(),
            info: DiskInfo {
                name,
                sectors,
                sector_size,
                physical_sector_size,
                readonly: info_bits & blkif::VDISK_READONLY != 0,
                removable: info_bits & blkif::VDISK_REMOVABLE != 0,
                features,
            },
            broken: None,
            stats: BlkStats::default(),
            quarantine: Vec::new(),
            abandoned: Vec::new(),
        })
    }

    /// The handshake after the ring is allocated: grants it (into `ring_grants`),
    /// allocates the event channel (into `port`), publishes them, waits for the
    /// backend and reads the disk. The caller gives back what was taken on failure.
    #[allow(clippy::type_complexity)]
    fn handshake(
        p: &P,
        base: &str,
        backend: &str,
        fe: &mut Frontend,
        (backend_id, order, ring): (u16, u32, &FrontRing),
        ring_grants: &mut Vec<Grant>,
        port: &mut Option<Port>,
    ) -> Result<(u64, u32, u32, u32, Features), BlockError> {
        let pages = 1usize << order;
        for i in 0..pages {
            let g = hs(
                "grant ring page",
                p.grant(backend_id, ring.pages(), i, Access::ReadWrite),
            )?;
            ring_grants.push(g);
        }
        let evtchn = hs("event channel", p.alloc_unbound(backend_id))?;
        *port = Some(evtchn);

        let w = |k: &str, v: &str| hs(k, p.xs_write(&format!("{base}/{k}"), v));
        if order == 0 {
            w("ring-ref", &format!("{}", ring_grants[0].gref()))?;
        } else {
            w("ring-page-order", &format!("{order}"))?;
            for (i, g) in ring_grants.iter().enumerate() {
                w(&format!("ring-ref{i}"), &format!("{}", g.gref()))?;
            }
        }
        w("event-channel", &format!("{}", evtchn.0))?;
        w("protocol", "x86_64-abi")?;
        w("feature-persistent", "1")?;
        w("state", &format!("{}", XenbusState::Initialised.number()))?;
        fe.switched(XenbusState::Initialised);

        let bstate = format!("{backend}/state");
        wait_for_action(p, &bstate, fe, Action::Connect)?;
        let sectors = read_u64(p, &format!("{backend}/sectors"))
            .ok_or_else(|| BlockError::Handshake(String::from("no sectors")))?;
        let info_bits = read_u64(p, &format!("{backend}/info")).unwrap_or(0) as u32;
        let sector_size = read_u64(p, &format!("{backend}/sector-size")).unwrap_or(512) as u32;
        let physical_sector_size = read_u64(p, &format!("{backend}/physical-sector-size"))
            .unwrap_or(u64::from(sector_size)) as u32;
        let flag = |k: &str| read_u64(p, &format!("{backend}/{k}")).unwrap_or(0) != 0;
        let indirect = read_u64(p, &format!("{backend}/feature-max-indirect-segments"))
            .unwrap_or(0)
            .min(u64::from(MAX_INDIRECT_SEGMENTS)) as u32;
        let features = Features {
            ring_pages: pages as u32,
            ring_entries: ring.size(),
            max_segments: if indirect > blkif::MAX_SEGMENTS as u32 {
                indirect
            } else {
                blkif::MAX_SEGMENTS as u32
            },
            indirect_segments: if indirect > blkif::MAX_SEGMENTS as u32 {
                indirect
            } else {
                0
            },
            persistent: flag("feature-persistent"),
            flush: flag("feature-flush-cache"),
            barrier: flag("feature-barrier"),
            discard: flag("feature-discard"),
        };
        if sector_size == 0 || !sector_size.is_multiple_of(512) {
            return Err(BlockError::Handshake(format!(
                "unsupported sector-size {sector_size}"
            )));
        }
        w("state", &format!("{}", XenbusState::Connected.number()))?;
        Ok((
            sectors,
            info_bits,
            sector_size,
            physical_sector_size,
            features,
        ))
    }

    /// The virtual device number.
    pub fn vdev(&self) -> u16 {
        self.vdev
    }

    /// The event channel.
    pub fn port(&self) -> Port {
        self.port
    }

    /// Statistics.
    pub fn stats(&self) -> BlkStats {
        self.stats
    }

    /// Grant references of the ring pages.
    pub fn ring_refs(&self) -> Vec<u32> {
        self.ring_grants.iter().map(|g| g.gref().0).collect()
    }

    fn new_buf(&mut self) -> Option<IoBuf> {
        if self.pool_total >= self.pool_limit {
            return None;
        }
        let page = self.platform.alloc_pages(1)?;
        let grant = if self.info.features.persistent {
            match self
                .platform
                .grant(self.backend_id, &page, 0, Access::ReadWrite)
            {
                Ok(g) => Some((g, self.backend_id)),
                Err(_) => {
                    self.platform.free_pages(page);
                    return None;
                }
            }
        } else {
            None
        };
        self.pool_total += 1;
        Some(IoBuf { page, grant })
    }

    /// Gives the device up (the backend is closing, or the disk was detached):
    /// in-flight requests fail with `why`, every grant is ended, and the pages whose
    /// grant ended (buffers, indirect pages, the ring) go back to the platform; a page
    /// the backend still maps is never freed (it is leaked with its grant, as Linux
    /// does since XSA-396), and the event channel is closed. Returns (pages freed,
    /// pages kept back).
    pub fn release(self, why: String) -> (usize, usize) {
        self.release_after(why, true)
    }

    /// As [`Blkfront::release`], saying whether the backend closed (followed the
    /// frontend to Closed). If it did not (the close timed out: a backend that is
    /// stuck, or hostile), it may still consume the requests it never answered:
    /// their grants are never ended and their pages never freed (quarantined for
    /// good), so no stale request can reach a reused reference.
    pub fn release_after(mut self, why: String, backend_closed: bool) -> (usize, usize) {
        self.fail(why);
        if !backend_closed {
            for a in core::mem::take(&mut self.abandoned) {
                let Abandoned {
                    grants,
                    bufs,
                    indirect,
                } = a;
                self.stats.quarantined_pages += (bufs.len() + indirect.len()) as u64;
                for (g, _) in grants {
                    self.quarantine.push(Quarantined {
                        _page: None,
                        _grant: Some(g),
                    });
                }
                for b in bufs.into_iter().chain(indirect) {
                    // its persistent grant (if any) stays with it
                    self.quarantine.push(Quarantined {
                        _page: Some(b),
                        _grant: None,
                    });
                }
            }
        }
        // The backend is gone: the requests it never answered end their grants
        // now (a page it still maps is quarantined, never reused).
        let mut from_abandoned = Vec::new();
        for a in core::mem::take(&mut self.abandoned) {
            let Abandoned {
                grants,
                mut bufs,
                mut indirect,
            } = a;
            self.end_grants(grants, &mut bufs, &mut indirect);
            from_abandoned.extend(bufs);
            from_abandoned.extend(indirect);
        }
        let mut freed = 0;
        let mut kept = self.quarantine.len();
        let mut bufs: Vec<IoBuf> = core::mem::take(&mut self.pool);
        bufs.extend(from_abandoned);
        for c in core::mem::take(&mut self.done) {
            bufs.extend(c.bufs);
        }
        for b in bufs {
            let IoBuf { page, grant } = b;
            let ended = match grant {
                Some((g, _)) => self.platform.end_grant(g).map_err(|g| {
                    self.quarantine.push(Quarantined {
                        _page: None,
                        _grant: Some(g),
                    })
                }),
                None => Ok(()),
            };
            if ended.is_ok() {
                self.platform.free_pages(page);
                freed += 1;
            } else {
                // Still mapped: the page is not given back (a DmaPages that is not
                // freed leaves its frames allocated), so it is never reused.
                kept += 1;
            }
        }
        let mut all_ended = true;
        for g in core::mem::take(&mut self.ring_grants) {
            all_ended &= self.platform.end_grant(g).is_ok();
        }
        self.platform.close_port(self.port);
        let Blkfront {
            platform,
            ring,
            quarantine,
            ..
        } = self;
        let pages = ring.into_pages();
        if all_ended {
            freed += pages.count();
            platform.free_pages(pages);
        } else {
            // Not given back: its frames stay allocated for good.
            kept += pages.count();
        }
        // Quarantined pages stay allocated for good (dropping them frees nothing).
        drop(quarantine);
        (freed, kept)
    }

    /// Marks the device broken and fails everything in flight.
    fn fail(&mut self, why: String) {
        if self.broken.is_some() {
            return;
        }
        self.ring.mark_broken();
        for idx in 0..self.slots.len() {
            if !self.slots[idx].in_flight {
                continue;
            }
            let slot = &mut self.slots[idx];
            slot.in_flight = false;
            let tag = slot.tag;
            // The backend has not answered: it may still consume the request, so
            // its grants stay and its pages are held until the teardown (a grant
            // ended now frees its ref, which a stale request could then reach on
            // another page). The caller gets its answer without buffers.
            // A bounced buffer of the caller's was never the backend's: it goes
            // back (our page in its place stays with the request).
            let theirs: Vec<IoBuf> = core::mem::take(&mut slot.bounced)
                .into_iter()
                .map(|(_, b)| b)
                .collect();
            self.abandoned.push(Abandoned {
                grants: core::mem::take(&mut slot.grants),
                bufs: core::mem::take(&mut slot.bufs),
                indirect: core::mem::take(&mut slot.indirect),
            });
            self.done.push_back(Completion {
                tag,
                result: Err(BlockError::Broken(why.clone())),
                bufs: theirs,
            });
        }
        self.broken = Some(why);
    }

    /// Ends per-request `grants`. A page whose grant the backend still maps is
    /// taken out of `bufs` / `indirect` and quarantined with its grant. Returns how
    /// many pages were quarantined.
    fn end_grants(
        &mut self,
        grants: Vec<(Grant, Held)>,
        bufs: &mut Vec<IoBuf>,
        indirect: &mut Vec<IoBuf>,
    ) -> usize {
        let mut held: Vec<(Grant, Held)> = Vec::new();
        for (g, h) in grants {
            if let Err(g) = self.platform.end_grant(g) {
                held.push((g, h));
            }
        }
        // Take pages out from the highest index down, so the lower ones stay put.
        held.sort_by_key(|(_, h)| core::cmp::Reverse(*h));
        let mut n = 0;
        for (g, h) in held {
            self.stats.leaked_grants += 1;
            let page = match h {
                Held::Buf(i) if i < bufs.len() => Some(bufs.remove(i)),
                Held::Indirect(i) if i < indirect.len() => Some(indirect.remove(i)),
                // Not reachable (indexes come from `start`); the grant is kept.
                _ => None,
            };
            self.quarantine.push(Quarantined {
                _page: page,
                _grant: Some(g),
            });
            self.stats.quarantined_pages += 1;
            n += 1;
        }
        n
    }

    fn segments_for(&self, req: &BlockRequest) -> Result<Vec<u8>, BlockError> {
        // Sectors per buffer: 8 except possibly the last.
        let total_sectors = (req.bytes as u64) / SECTOR_BYTES;
        let mut left = total_sectors;
        let mut per = Vec::with_capacity(req.bufs.len());
        for _ in &req.bufs {
            let n = left.min(8) as u8;
            if n == 0 {
                return Err(BlockError::Invalid("more buffers than bytes"));
            }
            per.push(n);
            left -= u64::from(n);
        }
        if left != 0 {
            return Err(BlockError::Invalid("buffers too small for the byte count"));
        }
        Ok(per)
    }

    fn start(&mut self, req: BlockRequest) -> Result<(), (BlockError, BlockRequest)> {
        if let Some(why) = &self.broken {
            return Err((BlockError::Broken(why.clone()), req));
        }
        let f = self.info.features;
        let (op, sectors) = match req.op {
            BlockOp::Read => (blkif::OP_READ, req.bytes as u64 / SECTOR_BYTES),
            BlockOp::Write => (blkif::OP_WRITE, req.bytes as u64 / SECTOR_BYTES),
            BlockOp::Flush if f.flush => (blkif::OP_FLUSH_DISKCACHE, 0),
            BlockOp::Flush if f.barrier => (blkif::OP_WRITE_BARRIER, 0),
            BlockOp::Flush => return Err((BlockError::NotSupported, req)),
            BlockOp::Discard { sectors } if f.discard => (blkif::OP_DISCARD, sectors),
            BlockOp::Discard { .. } => return Err((BlockError::NotSupported, req)),
        };
        if matches!(req.op, BlockOp::Write | BlockOp::Discard { .. }) && self.info.readonly {
            return Err((BlockError::ReadOnly, req));
        }
        if matches!(req.op, BlockOp::Read | BlockOp::Write) {
            if req.bytes == 0 || !(req.bytes as u64).is_multiple_of(SECTOR_BYTES) {
                return Err((BlockError::Invalid("length not a multiple of 512"), req));
            }
            if req.bufs.len() > f.max_segments as usize {
                return Err((BlockError::Invalid("too many buffers for one request"), req));
            }
        }
        if req
            .sector
            .checked_add(sectors)
            .is_none_or(|end| end > self.info.sectors)
        {
            return Err((BlockError::Invalid("beyond the end of the disk"), req));
        }
        let per = match self.segments_for(&req) {
            Ok(p) => p,
            Err(e) if matches!(req.op, BlockOp::Read | BlockOp::Write) => return Err((e, req)),
            Err(_) => Vec::new(),
        };
        let Some(slot_idx) = self.free_slots.pop() else {
            return Err((BlockError::Busy, req));
        };

        // A backend with persistent grants maps every grant it gets read-write and
        // keeps it: a foreign buffer goes through one of our own granted pages.
        let mut req = req;
        let bounced = match self.bounce(op, &mut req.bufs) {
            Ok(b) => b,
            Err(()) => {
                self.free_slots.push(slot_idx);
                return Err((BlockError::Busy, req));
            }
        };

        // Grant references for the buffers.
        let mut grants = Vec::new();
        let mut segs = Vec::with_capacity(req.bufs.len());
        let access = if op == blkif::OP_READ {
            Access::ReadWrite
        } else {
            Access::ReadOnly
        };
        for (bi, (buf, n)) in req.bufs.iter().zip(per.iter()).enumerate() {
            // A buffer persistently granted to this backend is used as is; one from
            // another disk's pool (a disk-to-disk copy) is granted for this request.
            let gref = match &buf.grant {
                Some((g, dom)) if *dom == self.backend_id => g.gref().0,
                _ => match self.platform.grant(self.backend_id, &buf.page, 0, access) {
                    Ok(g) => {
                        let r = g.gref().0;
                        grants.push((g, Held::Buf(bi)));
                        r
                    }
                    Err(_) => {
                        let mut req = req;
                        self.unwind(slot_idx, grants, Vec::new(), &mut req.bufs, bounced);
                        return Err((BlockError::Busy, req));
                    }
                },
            };
            segs.push(Segment {
                gref,
                first_sect: 0,
                last_sect: n - 1,
            });
        }

        let id = slot_idx as u64;
        let mut indirect = Vec::new();
        let entry = match op {
            blkif::OP_READ | blkif::OP_WRITE if segs.len() <= blkif::MAX_SEGMENTS => {
                blkif::encode_rw(op, self.vdev, id, req.sector, &segs)
            }
            blkif::OP_READ | blkif::OP_WRITE => {
                let pages = segs.len().div_ceil(blkif::SEGMENTS_PER_INDIRECT_PAGE);
                let mut irefs = Vec::with_capacity(pages);
                for chunk in segs.chunks(blkif::SEGMENTS_PER_INDIRECT_PAGE) {
                    let Some(ib) = self.pool.pop().or_else(|| self.new_buf()) else {
                        let mut req = req;
                        self.unwind(slot_idx, grants, indirect, &mut req.bufs, bounced);
                        return Err((BlockError::Busy, req));
                    };
                    let mut raw = [0u8; PAGE_BYTES];
                    blkif::encode_indirect_segments(chunk, &mut raw);
                    ib.write_at(0, &raw[..chunk.len() * 8]);
                    let r = match &ib.grant {
                        Some((g, _)) => g.gref().0,
                        None => match self.platform.grant(
                            self.backend_id,
                            &ib.page,
                            0,
                            Access::ReadOnly,
                        ) {
                            Ok(g) => {
                                let r = g.gref().0;
                                grants.push((g, Held::Indirect(indirect.len())));
                                r
                            }
                            Err(_) => {
                                indirect.push(ib);
                                let mut req = req;
                                self.unwind(slot_idx, grants, indirect, &mut req.bufs, bounced);
                                return Err((BlockError::Busy, req));
                            }
                        },
                    };
                    irefs.push(r);
                    indirect.push(ib);
                }
                blkif::encode_indirect(op, self.vdev, id, req.sector, segs.len() as u16, &irefs)
            }
            blkif::OP_DISCARD => blkif::encode_discard(self.vdev, id, req.sector, sectors),
            _ => blkif::encode_flush(op, self.vdev, id),
        };
        if let Err(e) = self.ring.push_request(&entry) {
            let mut req = req;
            self.unwind(slot_idx, grants, indirect, &mut req.bufs, bounced);
            let err = if e == xenlet_xen::ring::RingError::Full {
                BlockError::Busy
            } else {
                BlockError::Broken(format!("{e}"))
            };
            return Err((err, req));
        }
        let slot = &mut self.slots[slot_idx];
        slot.tag = req.tag;
        slot.op = op;
        slot.in_flight = true;
        slot.bufs = req.bufs;
        slot.grants = grants;
        slot.indirect = indirect;
        slot.bounced = bounced;
        if op == blkif::OP_FLUSH_DISKCACHE || op == blkif::OP_WRITE_BARRIER {
            self.stats.flushes += 1;
        }
        Ok(())
    }

    /// Undoes a request that did not reach the ring: ends its grants (a page the
    /// backend maps all the same is quarantined, out of `bufs`), pools its indirect
    /// pages, frees the slot.
    fn unwind(
        &mut self,
        slot_idx: usize,
        grants: Vec<(Grant, Held)>,
        mut indirect: Vec<IoBuf>,
        bufs: &mut Vec<IoBuf>,
        bounced: Vec<(usize, IoBuf)>,
    ) {
        self.unbounce(bufs, bounced, false);
        self.end_grants(grants, bufs, &mut indirect);
        self.pool.extend(indirect);
        self.free_slots.push(slot_idx);
    }

    /// With persistent grants, swaps each buffer of `bufs` that is not granted to
    /// this backend (another disk's, in a disk-to-disk copy) for one of our own pool
    /// pages, copying a write's data in: Linux's blkback maps every grant of a
    /// persistent frontend read-write and keeps it, so a read-only per-request grant
    /// fails and a read-write one would stay mapped for good. Linux's blkfront copies
    /// into its persistent pages the same way. Returns the swapped-out buffers (for
    /// [`Blkfront::unbounce`]); `Err` if the pool has no page now (all swaps undone).
    fn bounce(&mut self, op: u8, bufs: &mut [IoBuf]) -> Result<Vec<(usize, IoBuf)>, ()> {
        let mut bounced = Vec::new();
        if !self.info.features.persistent {
            return Ok(bounced);
        }
        let mut page = [0u8; PAGE_BYTES];
        for i in 0..bufs.len() {
            if matches!(&bufs[i].grant, Some((_, dom)) if *dom == self.backend_id) {
                continue;
            }
            let Some(own) = self.pool.pop().or_else(|| self.new_buf()) else {
                self.unbounce(bufs, bounced, false);
                return Err(());
            };
            if op == blkif::OP_WRITE {
                bufs[i].read_at(0, &mut page);
                own.write_at(0, &page);
            }
            let theirs = core::mem::replace(&mut bufs[i], own);
            bounced.push((i, theirs));
            self.stats.bounced_pages += 1;
        }
        Ok(bounced)
    }

    /// Puts the caller's buffers back in `bufs` (a read's data copied into them
    /// when `copy_back`), our pages back in the pool.
    fn unbounce(&mut self, bufs: &mut [IoBuf], bounced: Vec<(usize, IoBuf)>, copy_back: bool) {
        let mut page = [0u8; PAGE_BYTES];
        for (i, theirs) in bounced {
            let Some(slot) = bufs.get_mut(i) else {
                continue; // not reachable: indexes come from `bounce`
            };
            let own = core::mem::replace(slot, theirs);
            if copy_back {
                own.read_at(0, &mut page);
                slot.write_at(0, &page);
            }
            self.pool.push(own);
        }
    }

    fn complete(&mut self, raw: &[u8; blkif::RESPONSE_BYTES]) {
        let rsp = blkif::decode_response(raw);
        let Some(idx) = usize::try_from(rsp.id)
            .ok()
            .filter(|&i| i < self.slots.len())
        else {
            return self.fail(format!("response id {} out of range", rsp.id));
        };
        if !self.slots[idx].in_flight {
            return self.fail(format!("response id {} not in flight (duplicate?)", rsp.id));
        }
        let sent = self.slots[idx].op;
        let op_ok = rsp.operation == sent
            || (rsp.operation == blkif::OP_INDIRECT && !self.slots[idx].indirect.is_empty());
        if !op_ok {
            return self.fail(format!(
                "response id {} has operation {} for request operation {sent}",
                rsp.id, rsp.operation
            ));
        }
        let result = match rsp.status {
            blkif::RSP_OKAY => Ok(()),
            blkif::RSP_ERROR => Err(BlockError::Io),
            blkif::RSP_EOPNOTSUPP => {
                match sent {
                    blkif::OP_FLUSH_DISKCACHE => self.info.features.flush = false,
                    blkif::OP_WRITE_BARRIER => self.info.features.barrier = false,
                    blkif::OP_DISCARD => self.info.features.discard = false,
                    _ => {}
                }
                Err(BlockError::NotSupported)
            }
            s => return self.fail(format!("response id {} has unknown status {s}", rsp.id)),
        };
        let slot = &mut self.slots[idx];
        slot.in_flight = false;
        let grants = core::mem::take(&mut slot.grants);
        let mut indirect = core::mem::take(&mut slot.indirect);
        let mut bufs = core::mem::take(&mut slot.bufs);
        let bounced = core::mem::take(&mut slot.bounced);
        let tag = slot.tag;
        // (bounced buffers were never granted per request: their indexes are not
        // among the grants' below)
        self.unbounce(&mut bufs, bounced, sent == blkif::OP_READ && result.is_ok());
        // A page the backend still maps after answering is quarantined (never
        // reused: not returned, not pooled) and the disk is marked broken, as Linux
        // does since XSA-396.
        let kept = self.end_grants(grants, &mut bufs, &mut indirect);
        self.pool.extend(indirect);
        self.free_slots.push(idx);
        let (result, broken) = if kept > 0 {
            let why = format!(
                "response id {} answered with {kept} page(s) still mapped by the backend",
                rsp.id
            );
            (Err(BlockError::Broken(why.clone())), Some(why))
        } else {
            (result, None)
        };
        let bytes: u64 = bufs.len() as u64 * PAGE_BYTES as u64;
        self.stats.requests += 1;
        match sent {
            blkif::OP_READ => self.stats.read_bytes += bytes,
            blkif::OP_WRITE => self.stats.written_bytes += bytes,
            _ => {}
        }
        self.done.push_back(Completion { tag, result, bufs });
        if let Some(why) = broken {
            self.fail(why);
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
        self.pool.push(buf);
    }

    fn submit(&mut self, req: BlockRequest) -> Result<(), (BlockError, BlockRequest)> {
        self.start(req)
    }

    fn kick(&mut self) {
        if self.broken.is_none() && self.ring.push_requests_and_check_notify() {
            self.stats.notifies += 1;
            self.platform.notify(self.port);
        }
    }

    fn poll(&mut self, out: &mut Vec<Completion>) {
        let mut raw = [0u8; blkif::RESPONSE_BYTES];
        loop {
            if self.broken.is_some() {
                break;
            }
            match self.ring.take_response(&mut raw) {
                Ok(true) => self.complete(&raw),
                Ok(false) => match self.ring.final_check_for_responses() {
                    Ok(true) => continue,
                    Ok(false) => break,
                    Err(e) => {
                        self.fail(format!("{e}"));
                        break;
                    }
                },
                Err(e) => {
                    self.fail(format!("{e}"));
                    break;
                }
            }
        }
        out.extend(self.done.drain(..));
    }

    fn in_flight(&self) -> usize {
        self.slots.iter().filter(|s| s.in_flight).count()
    }

    fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    fn wait(&self) {
        self.platform.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeMap;
    use core::cell::{Cell, RefCell};
    use xenlet_xen::gnttab::GrantRef;
    use xenlet_xen::shared::SharedPage;
    use xenlet_xen::xenstore::XsError;
    use xenlet_xen::XenError;

    /// A fake kernel plus a scripted backend domain (id 0).
    #[derive(Default)]
    struct Fake {
        xs: RefCell<BTreeMap<String, String>>,
        pages: RefCell<Vec<(u64, SharedPage)>>,
        grants: RefCell<BTreeMap<u32, u64>>,
        /// Each live grant's access.
        access: RefCell<BTreeMap<u32, Access>>,
        /// Grants the backend keeps mapped: ending them fails, as Xen's
        /// `gnttab_end_foreign_access` does while a mapping exists.
        mapped: RefCell<alloc::collections::BTreeSet<u32>>,
        next_gfn: Cell<u64>,
        next_gref: Cell<u32>,
        notifies: Cell<u32>,
        pages_freed: Cell<usize>,
        /// The first frame of each run freed.
        freed: RefCell<Vec<u64>>,
        ports_closed: Cell<usize>,
        /// "+path" for each watch set, "-path" for each removed.
        watch_log: RefCell<Vec<String>>,
    }

    const BE: &str = "/local/domain/0/backend/vbd/5/51712";

    impl Fake {
        fn new(persistent: bool, indirect: u32, order: u32) -> Self {
            let f = Fake::default();
            f.next_gfn.set(0x1000);
            f.next_gref.set(8);
            let mut xs = f.xs.borrow_mut();
            xs.insert("device/vbd/51712/backend".into(), BE.into());
            xs.insert("device/vbd/51712/backend-id".into(), "0".into());
            xs.insert(format!("{BE}/state"), "2".into());
            xs.insert(format!("{BE}/max-ring-page-order"), format!("{order}"));
            xs.insert(format!("{BE}/sectors"), "2048".into());
            xs.insert(format!("{BE}/info"), "0".into());
            xs.insert(format!("{BE}/sector-size"), "512".into());
            xs.insert(format!("{BE}/feature-flush-cache"), "1".into());
            xs.insert(
                format!("{BE}/feature-persistent"),
                if persistent { "1" } else { "0" }.into(),
            );
            if indirect > 0 {
                xs.insert(
                    format!("{BE}/feature-max-indirect-segments"),
                    format!("{indirect}"),
                );
            }
            drop(xs);
            f
        }

        /// Every frame freed so far.
        fn freed_gfns(&self) -> Vec<u64> {
            self.freed.borrow().clone()
        }

        /// The backend writes into the page of grant `gref`: only through a
        /// read-write grant, as Xen enforces.
        fn backend_write(&self, gref: u32, data: &[u8]) -> Result<(), &'static str> {
            match self.access.borrow().get(&gref) {
                None => return Err("no such grant"),
                Some(Access::ReadOnly) => return Err("read-only grant"),
                Some(Access::ReadWrite) => {}
            }
            let gfn = self.grants.borrow()[&gref];
            let pages = self.pages.borrow();
            let page = &pages.iter().find(|(g, _)| *g == gfn).unwrap().1;
            page.write_bytes(0, data);
            Ok(())
        }

        fn ring(&self) -> SharedPage {
            let xs = self.xs.borrow();
            let gref: u32 = xs
                .get("device/vbd/51712/ring-ref")
                .or_else(|| xs.get("device/vbd/51712/ring-ref0"))
                .unwrap()
                .parse()
                .unwrap();
            let gfn = self.grants.borrow()[&gref];
            self.pages
                .borrow()
                .iter()
                .find(|(g, _)| *g == gfn)
                .unwrap()
                .1
                .alias_for_test()
        }
    }

    impl XenPlatform for &Fake {
        fn xs_read(&self, path: &str) -> Result<String, XsError> {
            self.xs
                .borrow()
                .get(path)
                .cloned()
                .ok_or_else(|| XsError::Remote("ENOENT".into()))
        }
        fn xs_write(&self, path: &str, value: &str) -> Result<(), XsError> {
            if path == "device/vbd/51712/state" && value == "3" {
                self.xs
                    .borrow_mut()
                    .insert(format!("{BE}/state"), "4".into());
            }
            self.xs.borrow_mut().insert(path.into(), value.into());
            Ok(())
        }
        fn xs_rm(&self, path: &str) -> Result<(), XsError> {
            crate::platform::rm_tree(&mut self.xs.borrow_mut(), path);
            Ok(())
        }
        fn xs_watch(&self, path: &str) -> Result<crate::platform::Watch, XsError> {
            self.watch_log.borrow_mut().push(format!("+{path}"));
            Ok(crate::platform::Watch {
                path: path.into(),
                token: "fe".into(),
            })
        }
        fn xs_unwatch(&self, w: crate::platform::Watch) {
            self.watch_log.borrow_mut().push(format!("-{}", w.path));
        }
        fn wait_watch(&self, _: &crate::platform::Watch, _: u64) -> bool {
            true
        }
        fn alloc_pages(&self, count: usize) -> Option<DmaPages> {
            let gfn = self.next_gfn.get();
            self.next_gfn.set(gfn + count as u64);
            let (pages, alias) = DmaPages::leak_for_test(gfn, count);
            self.pages.borrow_mut().push((gfn, alias));
            Some(pages)
        }
        fn free_pages(&self, p: DmaPages) {
            self.pages_freed.set(self.pages_freed.get() + p.count());
            let (gfn, count) = p.into_frames();
            self.freed.borrow_mut().extend(gfn..gfn + count as u64);
        }
        fn grant(
            &self,
            _domid: u16,
            pages: &DmaPages,
            index: usize,
            access: Access,
        ) -> Result<Grant, xenlet_xen::gnttab::GrantError> {
            let gfn = pages
                .frame(index)
                .ok_or(xenlet_xen::gnttab::GrantError::NoSuchPage)?;
            let r = self.next_gref.get();
            self.next_gref.set(r + 1);
            self.grants.borrow_mut().insert(r, gfn);
            self.access.borrow_mut().insert(r, access);
            Ok(Grant::new(GrantRef(r), gfn as u32))
        }
        fn end_grant(&self, g: Grant) -> Result<(), Grant> {
            if self.mapped.borrow().contains(&g.gref().0) {
                return Err(g);
            }
            self.grants.borrow_mut().remove(&g.gref().0);
            self.access.borrow_mut().remove(&g.gref().0);
            Ok(())
        }
        fn alloc_unbound(&self, _remote: u16) -> Result<Port, XenError> {
            Ok(Port(7))
        }
        fn close_port(&self, _: Port) {
            self.ports_closed.set(self.ports_closed.get() + 1);
        }
        fn notify(&self, _: Port) {
            self.notifies.set(self.notifies.get() + 1);
        }
        fn wait(&self) {}
        fn now_ns(&self) -> u64 {
            0
        }
    }

    /// The backend: takes every queued request, answers with `answer(id, op)`.
    struct Backend {
        ring: SharedPage,
        req_cons: u32,
        rsp_prod: u32,
        size: u32,
    }

    /// The data segments' and the indirect pages' grant references of the request
    /// with `id` still in the ring (read-write requests only).
    fn request_grefs(be: &Backend, id: u64) -> (Vec<u32>, Vec<u32>) {
        for i in 0..be.req_cons {
            let off = 64 + (i & (be.size - 1)) as usize * 112;
            let mut e = [0u8; 112];
            be.ring.read_bytes(off, &mut e);
            if u64::from_le_bytes(e[8..16].try_into().unwrap()) != id {
                continue;
            }
            let word = |at: usize| u32::from_le_bytes(e[at..at + 4].try_into().unwrap());
            if e[0] == blkif::OP_INDIRECT {
                let nseg = usize::from(u16::from_le_bytes([e[2], e[3]]));
                let pages = nseg.div_ceil(blkif::SEGMENTS_PER_INDIRECT_PAGE);
                return (Vec::new(), (0..pages).map(|p| word(28 + p * 4)).collect());
            }
            return (
                (0..usize::from(e[1])).map(|k| word(24 + k * 8)).collect(),
                Vec::new(),
            );
        }
        panic!("no request {id}");
    }

    impl Backend {
        fn requests(&mut self) -> Vec<(u64, u8, u8, u16)> {
            let prod = self.ring.load_u32(0);
            let mut v = Vec::new();
            while self.req_cons != prod {
                let off = 64 + (self.req_cons & (self.size - 1)) as usize * 112;
                let mut e = [0u8; 112];
                self.ring.read_bytes(off, &mut e);
                let id = u64::from_le_bytes(e[8..16].try_into().unwrap());
                let nseg = if e[0] == blkif::OP_INDIRECT {
                    u16::from_le_bytes([e[2], e[3]])
                } else {
                    u16::from(e[1])
                };
                v.push((id, e[0], e[1], nseg));
                self.req_cons += 1;
            }
            v
        }
        fn respond(&mut self, id: u64, op: u8, status: i16) {
            let off = 64 + (self.rsp_prod & (self.size - 1)) as usize * 112;
            let mut r = [0u8; 16];
            r[0..8].copy_from_slice(&id.to_le_bytes());
            r[8] = op;
            r[10..12].copy_from_slice(&status.to_le_bytes());
            self.ring.write_bytes(off, &r);
            self.rsp_prod += 1;
            self.ring.store_u32(8, self.rsp_prod);
        }
    }

    fn connect(f: &Fake) -> (Blkfront<&Fake>, Backend) {
        let d = Blkfront::connect(f, 51712, "xvda".into()).unwrap();
        let size = d.info().features.ring_entries;
        (
            d,
            Backend {
                ring: f.ring(),
                req_cons: 0,
                rsp_prod: 0,
                size,
            },
        )
    }

    fn write_req(d: &mut Blkfront<&Fake>, tag: u64, sector: u64, pages: usize) -> BlockRequest {
        let bufs = (0..pages).map(|_| d.alloc_buf().unwrap()).collect();
        BlockRequest {
            tag,
            op: BlockOp::Write,
            sector,
            bytes: pages * 4096,
            bufs,
        }
    }

    #[test]
    fn handshake_publishes_ring_and_reads_the_disk() {
        let f = Fake::new(true, 0, 0);
        let (d, _) = connect(&f);
        let xs = f.xs.borrow();
        assert!(xs.contains_key("device/vbd/51712/ring-ref"));
        assert_eq!(xs["device/vbd/51712/event-channel"], "7");
        assert_eq!(xs["device/vbd/51712/protocol"], "x86_64-abi");
        assert_eq!(xs["device/vbd/51712/state"], "4");
        // Both handshake waits (InitWait, Connected) watched the backend's state, and
        // each watch was removed afterwards.
        let st = format!("{BE}/state");
        assert_eq!(
            *f.watch_log.borrow(),
            [
                format!("+{st}"),
                format!("-{st}"),
                format!("+{st}"),
                format!("-{st}")
            ]
        );
        let i = d.info();
        assert_eq!((i.sectors, i.sector_size, i.bytes()), (2048, 512, 1 << 20));
        assert!(i.features.persistent && i.features.flush && !i.features.discard);
        assert_eq!(
            (
                i.features.ring_pages,
                i.features.ring_entries,
                i.features.max_segments
            ),
            (1, 32, 11)
        );
    }

    #[test]
    fn multi_page_ring_and_indirect_segments_are_negotiated() {
        let f = Fake::new(true, 512, 3);
        let (mut d, mut be) = connect(&f);
        assert_eq!(f.xs.borrow()["device/vbd/51712/ring-page-order"], "3");
        assert!(f.xs.borrow().contains_key("device/vbd/51712/ring-ref7"));
        let ft = d.info().features;
        assert_eq!(
            (
                ft.ring_pages,
                ft.ring_entries,
                ft.max_segments,
                ft.indirect_segments
            ),
            (8, 256, 256, 256)
        );
        // a 1 MiB write goes out as one indirect request of 256 segments
        let req = write_req(&mut d, 1, 0, 256);
        d.submit(req).map_err(|(e, _)| e).unwrap();
        d.kick();
        let reqs = be.requests();
        assert_eq!(reqs, vec![(0, blkif::OP_INDIRECT, blkif::OP_WRITE, 256)]);
        be.respond(0, blkif::OP_WRITE, 0);
        let mut out = Vec::new();
        d.poll(&mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].result, Ok(()));
        assert_eq!(out[0].bufs.len(), 256);
    }

    #[test]
    fn a_backend_that_did_not_close_keeps_its_unanswered_grants_for_good() {
        let f = Fake::new(false, 0, 0);
        let (mut d, mut be) = connect(&f);
        let req = read_req(&mut d, 1, 0, 2);
        d.submit(req).map_err(|(e, _)| e).unwrap();
        d.kick();
        let r = be.requests();
        let (grefs, _) = request_grefs(&be, r[0].0);
        let gfns: Vec<u64> = grefs.iter().map(|g| f.grants.borrow()[g]).collect();
        // the close timed out: the backend may still read the request
        let (_, kept) = d.release_after(String::from("detached"), false);
        for g in &grefs {
            assert!(f.grants.borrow().contains_key(g), "grant {g} ended");
        }
        let freed = f.freed_gfns();
        assert!(gfns.iter().all(|g| !freed.contains(g)), "a page freed");
        assert!(kept >= 2);
    }

    /// A buffer from outside this disk's pool (another disk's, in a disk-to-disk
    /// copy), never granted to this backend.
    fn foreign_buf(f: &Fake, fill: u8) -> IoBuf {
        let b = IoBuf {
            page: f.alloc_pages(1).unwrap(),
            grant: None,
        };
        b.write_at(0, &[fill; PAGE_BYTES]);
        b
    }

    /// Submits a one-page request of a foreign buffer and kicks; returns the
    /// backend's view of it: (id, op) and its data grant refs.
    fn submit_foreign(
        d: &mut Blkfront<&Fake>,
        be: &mut Backend,
        op: BlockOp,
        sector: u64,
        buf: IoBuf,
    ) -> ((u64, u8), Vec<u32>) {
        d.submit(BlockRequest {
            tag: 7,
            op,
            sector,
            bytes: PAGE_BYTES,
            bufs: alloc::vec![buf],
        })
        .map_err(|(e, _)| e)
        .unwrap();
        d.kick();
        let r = be.requests();
        let (grefs, _) = request_grefs(be, r[0].0);
        ((r[0].0, r[0].1), grefs)
    }

    /// What the backend reads through grant `gref`.
    fn backend_read(f: &Fake, gref: u32) -> Vec<u8> {
        let gfn = f.grants.borrow()[&gref];
        let pages = f.pages.borrow();
        let page = &pages.iter().find(|(g, _)| *g == gfn).unwrap().1;
        let mut v = alloc::vec![0u8; PAGE_BYTES];
        page.read_bytes(0, &mut v);
        v
    }

    #[test]
    fn a_foreign_write_goes_through_our_persistent_page() {
        // Linux's blkback maps a persistent frontend's grants read-write: a
        // read-only per-request grant of the other disk's page would be refused.
        let f = Fake::new(true, 0, 0);
        let (mut d, mut be) = connect(&f);
        let theirs = foreign_buf(&f, 0xab);
        let their_gfn = theirs.page.frame(0).unwrap();
        let ((id, op), grefs) = submit_foreign(&mut d, &mut be, BlockOp::Write, 16, theirs);
        assert_eq!(f.access.borrow()[&grefs[0]], Access::ReadWrite);
        assert!(
            !f.grants.borrow().values().any(|&g| g == their_gfn),
            "the other disk's page is never granted"
        );
        assert!(backend_read(&f, grefs[0]).iter().all(|&x| x == 0xab));
        be.respond(id, op, 0);
        let mut out = Vec::new();
        d.poll(&mut out);
        let c = out.pop().unwrap();
        assert!(c.result.is_ok());
        assert_eq!(c.bufs.len(), 1);
        assert_eq!(
            c.bufs[0].page.frame(0),
            Some(their_gfn),
            "their buffer back"
        );
        assert_eq!(d.stats().bounced_pages, 1);
    }

    #[test]
    fn a_foreign_read_is_copied_back_into_the_callers_buffer() {
        let f = Fake::new(true, 0, 0);
        let (mut d, mut be) = connect(&f);
        let theirs = foreign_buf(&f, 0);
        let ((id, op), grefs) = submit_foreign(&mut d, &mut be, BlockOp::Read, 0, theirs);
        f.backend_write(grefs[0], &[0x5c; PAGE_BYTES]).unwrap();
        be.respond(id, op, 0);
        let mut out = Vec::new();
        d.poll(&mut out);
        let c = out.pop().unwrap();
        let mut got = alloc::vec![0u8; PAGE_BYTES];
        c.bufs[0].read_at(0, &mut got);
        assert!(got.iter().all(|&x| x == 0x5c));
    }

    #[test]
    fn persistent_grants_are_made_once_per_buffer() {
        let f = Fake::new(true, 0, 0);
        let (mut d, mut be) = connect(&f);
        let mut out = Vec::new();
        let mut bufs: Vec<IoBuf> = (0..4).map(|_| d.alloc_buf().unwrap()).collect();
        let grants_before = f.grants.borrow().len();
        for round in 0..10 {
            let req = BlockRequest {
                tag: round,
                op: BlockOp::Write,
                sector: 8 * round,
                bytes: 4 * 4096,
                bufs,
            };
            d.submit(req).map_err(|(e, _)| e).unwrap();
            d.kick();
            for (id, op, _, _) in be.requests() {
                be.respond(id, op, 0);
            }
            d.poll(&mut out);
            bufs = out.pop().unwrap().bufs;
        }
        assert_eq!(
            f.grants.borrow().len(),
            grants_before,
            "no grant per request"
        );
        assert_eq!(d.stats().written_bytes, 10 * 4 * 4096);
    }

    #[test]
    fn without_persistent_grants_each_request_grants_and_ends() {
        let f = Fake::new(false, 0, 0);
        let (mut d, mut be) = connect(&f);
        let base = f.grants.borrow().len();
        let req = write_req(&mut d, 1, 0, 3);
        d.submit(req).map_err(|(e, _)| e).unwrap();
        assert_eq!(f.grants.borrow().len(), base + 3);
        d.kick();
        for (id, op, _, _) in be.requests() {
            be.respond(id, op, 0);
        }
        let mut out = Vec::new();
        d.poll(&mut out);
        assert_eq!(out[0].result, Ok(()));
        assert_eq!(f.grants.borrow().len(), base, "grants ended on completion");
    }

    #[test]
    fn bad_requests_are_refused_before_the_ring() {
        let f = Fake::new(true, 0, 0);
        let (mut d, _) = connect(&f);
        let req = write_req(&mut d, 1, 2047, 1); // 8 sectors from 2047: past the end
        assert_eq!(
            d.submit(req).err().map(|(e, _)| e),
            Some(BlockError::Invalid("beyond the end of the disk"))
        );
        let req = write_req(&mut d, 1, 0, 12); // 12 pages, no indirect
        assert_eq!(
            d.submit(req).err().map(|(e, _)| e),
            Some(BlockError::Invalid("too many buffers for one request"))
        );
        let mut req = write_req(&mut d, 1, 0, 1);
        req.bytes = 100;
        assert!(matches!(
            d.submit(req).err().map(|(e, _)| e),
            Some(BlockError::Invalid(_))
        ));
        let req = BlockRequest {
            tag: 9,
            op: BlockOp::Discard { sectors: 8 },
            sector: 0,
            bytes: 0,
            bufs: Vec::new(),
        };
        assert_eq!(
            d.submit(req).err().map(|(e, _)| e),
            Some(BlockError::NotSupported)
        );
        assert_eq!(d.in_flight(), 0);
    }

    fn hostile(
        answer: impl Fn(&mut Backend, u64, u8),
    ) -> (Blkfront<&'static Fake>, Vec<Completion>) {
        let f: &'static Fake = Box::leak(Box::new(Fake::new(true, 0, 0)));
        let (mut d, mut be) = connect(f);
        for tag in 0..3 {
            let req = write_req(&mut d, tag, tag * 8, 1);
            d.submit(req).map_err(|(e, _)| e).unwrap();
        }
        d.kick();
        let reqs = be.requests();
        answer(&mut be, reqs[0].0, reqs[0].1);
        let mut out = Vec::new();
        d.poll(&mut out);
        (d, out)
    }

    #[test]
    fn hostile_responses_break_the_disk_and_fail_pending_io() {
        type Answer = fn(&mut Backend, u64, u8);
        let cases: [(&str, Answer); 5] = [
            ("out of range", |b, _, op| b.respond(999, op, 0)),
            ("not in flight", |b, id, op| {
                b.respond(id, op, 0);
                b.respond(id, op, 0);
            }),
            ("operation", |b, id, _| b.respond(id, blkif::OP_READ, 0)),
            ("unknown status", |b, id, op| b.respond(id, op, 77)),
            ("corrupted", |b, _, _| b.ring.store_u32(8, 50)),
        ];
        for (why, answer) in cases {
            let (mut d, out) = hostile(answer);
            let msg = d
                .broken()
                .unwrap_or_else(|| panic!("not broken for {why}"))
                .to_string();
            assert!(msg.contains(why), "{why}: {msg}");
            let failed = out
                .iter()
                .filter(|c| matches!(c.result, Err(BlockError::Broken(_))))
                .count();
            assert!(failed >= 2, "{why}: pending requests failed ({failed})");
            // further I/O is refused, no panic
            let buf = d.alloc_buf().unwrap();
            let req = BlockRequest {
                tag: 5,
                op: BlockOp::Read,
                sector: 0,
                bytes: 4096,
                bufs: vec![buf],
            };
            assert!(matches!(
                d.submit(req).err().map(|(e, _)| e),
                Some(BlockError::Broken(_))
            ));
        }
    }

    #[test]
    fn io_errors_and_unsupported_flush_are_reported_not_fatal() {
        let f = Fake::new(true, 0, 0);
        let (mut d, mut be) = connect(&f);
        let req = write_req(&mut d, 1, 0, 1);
        d.submit(req).map_err(|(e, _)| e).unwrap();
        d.submit(BlockRequest {
            tag: 2,
            op: BlockOp::Flush,
            sector: 0,
            bytes: 0,
            bufs: Vec::new(),
        })
        .map_err(|(e, _)| e)
        .unwrap();
        d.kick();
        let r = be.requests();
        be.respond(r[0].0, r[0].1, blkif::RSP_ERROR);
        be.respond(r[1].0, r[1].1, blkif::RSP_EOPNOTSUPP);
        let mut out = Vec::new();
        d.poll(&mut out);
        assert_eq!(out[0].result, Err(BlockError::Io));
        assert_eq!(out[1].result, Err(BlockError::NotSupported));
        assert!(d.broken().is_none());
        assert!(
            !d.info().features.flush,
            "flush turned off after EOPNOTSUPP"
        );
    }

    fn read_req(d: &mut Blkfront<&Fake>, tag: u64, sector: u64, pages: usize) -> BlockRequest {
        let mut r = write_req(d, tag, sector, pages);
        r.op = BlockOp::Read;
        r
    }

    #[test]
    fn the_fake_backend_writes_only_through_read_write_grants() {
        let f = Fake::new(false, 0, 0);
        let (mut d, mut be) = connect(&f);
        let req = write_req(&mut d, 1, 0, 1);
        d.submit(req).map_err(|(e, _)| e).unwrap();
        let req = read_req(&mut d, 2, 8, 1);
        d.submit(req).map_err(|(e, _)| e).unwrap();
        d.kick();
        let r = be.requests();
        let (w, _) = request_grefs(&be, r[0].0);
        let (rd, _) = request_grefs(&be, r[1].0);
        assert_eq!(f.backend_write(w[0], b"x"), Err("read-only grant"));
        assert_eq!(f.backend_write(rd[0], b"y"), Ok(()));
    }

    #[test]
    fn a_page_the_backend_keeps_mapped_after_answering_is_quarantined() {
        let f = Fake::new(false, 0, 0);
        let (mut d, mut be) = connect(&f);
        let req = read_req(&mut d, 1, 0, 2);
        let kept_gfn = req.bufs[1].page.frame(0).unwrap();
        d.submit(req).map_err(|(e, _)| e).unwrap();
        d.kick();
        let r = be.requests();
        let (grefs, _) = request_grefs(&be, r[0].0);
        f.backend_write(grefs[0], &[1; 4096]).unwrap();
        f.backend_write(grefs[1], &[2; 4096]).unwrap();
        // it answers, but keeps the second page mapped (it could write it later)
        f.mapped.borrow_mut().insert(grefs[1]);
        be.respond(r[0].0, r[0].1, blkif::RSP_OKAY);
        let mut out = Vec::new();
        d.poll(&mut out);
        assert_eq!(out.len(), 1);
        assert!(
            matches!(&out[0].result, Err(BlockError::Broken(w)) if w.contains("still mapped")),
            "{:?}",
            out[0].result
        );
        assert_eq!(out[0].bufs.len(), 1, "the mapped page is not handed back");
        assert_ne!(out[0].bufs[0].page.frame(0).unwrap(), kept_gfn);
        assert!(d.broken().is_some(), "the disk is broken");
        let st = d.stats();
        assert_eq!((st.quarantined_pages, st.leaked_grants), (1, 1));
        assert!(f.grants.borrow().contains_key(&grefs[1]), "its grant stays");
        assert!(
            !f.grants.borrow().contains_key(&grefs[0]),
            "the other ended"
        );
        // the page never comes back, not from the pool either
        for b in out.pop().unwrap().bufs {
            d.free_buf(b);
        }
        while let Some(b) = d.alloc_buf() {
            assert_ne!(
                b.page.frame(0).unwrap(),
                kept_gfn,
                "quarantined page reused"
            );
        }
    }

    #[test]
    fn a_mapped_indirect_page_is_quarantined_not_pooled() {
        let f = Fake::new(false, 256, 0);
        let (mut d, mut be) = connect(&f);
        let req = read_req(&mut d, 1, 0, 12);
        d.submit(req).map_err(|(e, _)| e).unwrap();
        d.kick();
        let r = be.requests();
        let (_, indirect) = request_grefs(&be, r[0].0);
        assert_eq!(indirect.len(), 1);
        let kept_gfn = f.grants.borrow()[&indirect[0]];
        f.mapped.borrow_mut().insert(indirect[0]);
        be.respond(r[0].0, r[0].1, blkif::RSP_OKAY);
        let mut out = Vec::new();
        d.poll(&mut out);
        assert!(matches!(out[0].result, Err(BlockError::Broken(_))));
        assert_eq!(out[0].bufs.len(), 12, "the data pages were unmapped");
        assert_eq!(d.stats().quarantined_pages, 1);
        while let Some(b) = d.alloc_buf() {
            assert_ne!(
                b.page.frame(0).unwrap(),
                kept_gfn,
                "quarantined indirect page reused"
            );
        }
    }

    #[test]
    fn a_broken_disk_keeps_the_grants_of_pending_io_until_teardown() {
        // The backend has not answered these requests: it may still consume them,
        // so their grants stay (and their refs are not reused) while it is live.
        let f = Fake::new(false, 0, 0);
        let (mut d, mut be) = connect(&f);
        for tag in 0..3 {
            let req = read_req(&mut d, tag, tag * 8, 1);
            d.submit(req).map_err(|(e, _)| e).unwrap();
        }
        d.kick();
        let r = be.requests();
        let (g1, _) = request_grefs(&be, r[1].0);
        let (g2, _) = request_grefs(&be, r[2].0);
        let kept_gfn = f.grants.borrow()[&g1[0]];
        be.respond(999, blkif::OP_READ, 0); // hostile: breaks the disk
        let mut out = Vec::new();
        d.poll(&mut out);
        assert!(d.broken().is_some());
        assert_eq!(out.len(), 3, "every request answered, as failed");
        assert!(out.iter().all(|c| c.result.is_err() && c.bufs.is_empty()));
        assert!(f.grants.borrow().contains_key(&g1[0]), "grant kept");
        assert!(f.grants.borrow().contains_key(&g2[0]), "grant kept");
        // At the teardown (the backend closed) they end; one it still maps is
        // quarantined, its page never freed.
        f.mapped.borrow_mut().insert(g1[0]);
        let (_, kept) = d.release(String::from("detached"));
        assert!(
            !f.grants.borrow().contains_key(&g2[0]),
            "unmapped: grant ended"
        );
        assert!(f.grants.borrow().contains_key(&g1[0]), "mapped: grant kept");
        assert!(kept >= 1);
        assert!(
            !f.freed_gfns().contains(&kept_gfn),
            "the mapped page is not freed"
        );
    }

    #[test]
    fn a_failed_handshake_gives_the_ring_and_port_back() {
        let f = Fake::new(false, 0, 2);
        f.xs.borrow_mut()
            .insert(format!("{BE}/sector-size"), "1000".into());
        let e = Blkfront::connect(&f, 51712, "xvda".into()).err().unwrap();
        assert!(
            matches!(&e, BlockError::Handshake(w) if w.contains("sector-size")),
            "{e:?}"
        );
        assert!(f.grants.borrow().is_empty(), "ring grants ended");
        assert_eq!(f.pages_freed.get(), 4, "the 4 ring pages freed");
        assert_eq!(f.ports_closed.get(), 1);
        assert_eq!(f.xs.borrow()["device/vbd/51712/state"], "5", "Closing");
        // a backend that still maps a ring page: its pages stay allocated
        let g = Fake::new(false, 0, 0);
        g.xs.borrow_mut()
            .insert(format!("{BE}/sector-size"), "1000".into());
        g.mapped.borrow_mut().insert(8); // the first grant made: the ring's
        assert!(Blkfront::connect(&g, 51712, "xvda".into()).is_err());
        assert_eq!(g.pages_freed.get(), 0);
        assert!(g.grants.borrow().contains_key(&8));
    }

    #[test]
    fn release_fails_pending_io_and_frees_all_but_what_the_backend_maps() {
        // persistent grants: buffers stay granted in the pool until release
        let f = Fake::new(true, 0, 1);
        let (mut d, mut be) = connect(&f);
        for tag in 0..3 {
            let req = read_req(&mut d, tag, tag * 8, 1);
            d.submit(req).map_err(|(e, _)| e).unwrap();
        }
        d.kick();
        let r = be.requests();
        let (g1, _) = request_grefs(&be, r[1].0);
        // one request answered, its buffer back in the pool
        be.respond(r[0].0, blkif::OP_READ, 0);
        let mut out = Vec::new();
        d.poll(&mut out);
        for c in out.drain(..) {
            for b in c.bufs {
                d.free_buf(b);
            }
        }
        // the backend still maps the second request's page
        f.mapped.borrow_mut().insert(g1[0]);
        let (freed, kept) = d.release(String::from("disk detached"));
        assert_eq!(kept, 1, "the mapped page is kept back");
        // 3 buffer pages were made; 2 are freed, and the 2 ring pages
        assert_eq!((freed, f.pages_freed.get()), (4, 4));
        assert_eq!(f.ports_closed.get(), 1);
        let grants = f.grants.borrow();
        assert_eq!(
            grants.len(),
            1,
            "every grant ended but the mapped one: {grants:?}"
        );
        assert!(grants.contains_key(&g1[0]));
    }
}
