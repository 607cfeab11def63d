//! The XenBus side of blkfront: the handshake with blkback (transport features at
//! InitWait, the ring's pages and grants, the event channel, protocol and features
//! published, the xenbus state machine, the disk read once the backend is
//! Connected) and the ring's release. [`connect`] and [`disconnect`] take the
//! platform and the ring, not the data path's state, so they can be run again on a
//! live device.

use super::{BlockError, DiskInfo, Features};
use crate::blkif;
use crate::platform::{wait_for_action, XenPlatform};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use xenlet_xen::evtchn::Port;
use xenlet_xen::gnttab::{Access, Grant};
use xenlet_xen::ring::FrontRing;
use xenlet_xen::xenbus::{Action, Frontend, XenbusState};

/// Largest ring order asked for (16 pages, 512 requests in flight).
pub const MAX_RING_ORDER: u32 = 4;

/// Most indirect segments used per request (1 MiB and more of 4 KiB pages).
pub const MAX_INDIRECT_SEGMENTS: u32 = 256;

/// How long the handshake waits for the backend.
const HANDSHAKE_TIMEOUT_NS: u64 = 60_000_000_000;

/// What a completed handshake hands to the data path (with the [`DiskInfo`]): the
/// backend, and the ring with its grants and event channel.
pub(super) struct Link {
    pub(super) backend_id: u16,
    pub(super) ring: FrontRing,
    pub(super) ring_grants: Vec<Grant>,
    pub(super) port: Port,
}

/// Connects to `device/vbd/<vdev>`: waits for the backend to wait (InitWait),
/// allocates and grants the ring (as many pages as the backend takes, up to
/// [`MAX_RING_ORDER`]), allocates the event channel, publishes them with the
/// protocol and features, waits for the backend to connect and reads the disk
/// (`name` is its Linux-style name). On failure the frontend goes Closing and what was taken is given back (ring
/// pages a backend still maps are kept).
pub(super) fn connect<P: XenPlatform>(
    p: &P,
    vdev: u16,
    name: String,
) -> Result<(Link, DiskInfo), BlockError> {
    let base = format!("device/vbd/{vdev}");
    let backend = hs("backend path", p.xs_read(&format!("{base}/backend")))?;
    let backend_id = read_u64(p, &format!("{base}/backend-id"))
        .and_then(|v| u16::try_from(v).ok())
        .ok_or_else(|| BlockError::Handshake(String::from("bad backend-id")))?;
    let bstate = format!("{backend}/state");
    let mut fe = Frontend::new();
    wait_for_action(p, &bstate, &fe, Action::Setup, HANDSHAKE_TIMEOUT_NS)
        .map_err(BlockError::Handshake)?;

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
    let disk = handshake(
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

    let info = DiskInfo {
        name,
        sectors,
        sector_size,
        physical_sector_size,
        readonly: info_bits & blkif::VDISK_READONLY != 0,
        removable: info_bits & blkif::VDISK_REMOVABLE != 0,
        features,
    };
    Ok((
        Link {
            backend_id,
            ring,
            ring_grants,
            port,
        },
        info,
    ))
}

/// The handshake after the ring is allocated: grants it (into `ring_grants`),
/// allocates the event channel (into `port`), publishes them, waits for the
/// backend and reads the disk. The caller gives back what was taken on failure.
#[allow(clippy::type_complexity)]
fn handshake<P: XenPlatform>(
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
    wait_for_action(p, &bstate, fe, Action::Connect, HANDSHAKE_TIMEOUT_NS)
        .map_err(BlockError::Handshake)?;
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

/// Undoes [`connect`]'s [`Link`] once the backend has let go: ends the ring's
/// grants, closes the event channel, and frees the ring pages if every grant ended
/// (a ring the backend still maps is kept for good). Returns the ring pages (freed,
/// kept).
pub(super) fn disconnect<P: XenPlatform>(p: &P, link: Link) -> (usize, usize) {
    let Link {
        ring,
        ring_grants,
        port,
        ..
    } = link;
    let mut all_ended = true;
    for g in ring_grants {
        all_ended &= p.end_grant(g).is_ok();
    }
    if port != super::resume::NO_PORT {
        p.close_port(port);
    }
    let pages = ring.into_pages();
    if all_ended {
        let n = pages.count();
        p.free_pages(pages);
        (n, 0)
    } else {
        // Not given back: its frames stay allocated for good.
        (0, pages.count())
    }
}

fn read_u64<P: XenPlatform>(p: &P, path: &str) -> Option<u64> {
    p.xs_read(path).ok()?.trim().parse().ok()
}

fn hs<T, E: fmt::Display>(what: &str, r: Result<T, E>) -> Result<T, BlockError> {
    r.map_err(|e| BlockError::Handshake(format!("{what}: {e}")))
}
