//! The XenBus side of netfront: the handshake with netback (the vif's keys, the
//! backend's features, the queues' ring references and event channels published in
//! the single- or multi-queue layout, the xenbus state machine) and its undoing.
//! [`connect`] and [`disconnect`] are a unit of their own: they take the platform
//! and the queues, not the data path's state, so they can be run again on a live
//! device.

use super::queue::{release_all, Queue};
use super::{NetError, ETH_HEADER};
use crate::platform::{wait_for_action, XenPlatform};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use xenlet_xen::xenbus::{Action, Frontend, XenbusState};

/// The MTU when the backend names none (Ethernet's).
pub const DEFAULT_MTU: usize = 1500;

/// The largest MTU taken from the backend: a frame must fit netif's 16-bit size.
pub const MAX_MTU: usize = 65535 - ETH_HEADER;

/// The smallest MTU taken (IPv4's minimum).
pub const MIN_MTU: usize = 68;

/// The MTU from the backend's `mtu` key: [`DEFAULT_MTU`] when it is absent, not a
/// number or outside [`MIN_MTU`]..=[`MAX_MTU`]; at most [`DEFAULT_MTU`] without
/// scatter-gather (a frame must then fit one page, and Linux keeps such a vif at 1500).
pub fn mtu_from_backend(value: Option<&str>, sg: bool) -> usize {
    let mtu = value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|m| (MIN_MTU..=MAX_MTU).contains(m))
        .unwrap_or(DEFAULT_MTU);
    if sg {
        mtu
    } else {
        mtu.min(DEFAULT_MTU)
    }
}

/// Buffers per queue and direction when there is memory: one per ring slot.
pub(super) const FULL_BUFFERS: usize = 256;

/// Buffer counts a first queue tries when the full set is not to be had: each
/// still carries a 64 KiB GSO packet (17 slots) many times over.
const SMALLER_BUFFERS: [usize; 2] = [128, 64];

/// The most `queue-N/` directories an earlier attempt can have left to clear (a
/// bound on a number read back from XenStore).
const MAX_QUEUES_EVER: usize = 64;

/// How long the handshake waits for the backend.
const HANDSHAKE_TIMEOUT_NS: u64 = 60_000_000_000;

/// What a completed handshake hands to the data path: the backend, the vif's
/// address and negotiated features, and its connected queues.
pub(super) struct Link {
    pub(super) backend_id: u16,
    pub(super) mac: [u8; 6],
    /// At least one.
    pub(super) queues: Vec<Queue>,
    pub(super) sg: bool,
    pub(super) gso: bool,
    /// The backend takes TCPv6 GSO packets (`feature-gso-tcpv6`).
    pub(super) gso6: bool,
    /// The backend completes partial checksums of IPv6 packets
    /// (`feature-ipv6-csum-offload`; IPv4's are the default).
    pub(super) ipv6_csum: bool,
    pub(super) mtu: usize,
}

/// Connects to `device/vif/<id>`: reads the vif's keys, waits for the backend to
/// wait (InitWait), sets up as many queues as are wanted, offered and to be had
/// (see `Netfront::connect_with`), publishes them and the features, and waits
/// for the backend to connect. On failure everything taken is given back, or,
/// when a backend that took the rings does not close, kept for good (see
/// [`disconnect`]); the frontend is left Initialising when it can be tried again.
pub(super) fn connect<P: XenPlatform>(p: &P, id: u32, max_queues: usize) -> Result<Link, NetError> {
    let base = format!("device/vif/{id}");
    let backend = hs("backend path", p.xs_read(&format!("{base}/backend")))?;
    let backend_id = p
        .xs_read(&format!("{base}/backend-id"))
        .ok()
        .and_then(|v| v.trim().parse::<u16>().ok())
        .ok_or_else(|| NetError::Handshake(String::from("bad backend-id")))?;
    let mac = parse_mac(&hs("mac", p.xs_read(&format!("{base}/mac")))?)
        .ok_or_else(|| NetError::Handshake(String::from("malformed mac")))?;
    let bstate = format!("{backend}/state");
    let mut fe = Frontend::new();
    wait_for_action(p, &bstate, &fe, Action::Setup, HANDSHAKE_TIMEOUT_NS)
        .map_err(NetError::Handshake)?;

    let flag = |k: &str| {
        p.xs_read(&format!("{backend}/{k}"))
            .ok()
            .is_some_and(|v| v.trim() == "1")
    };
    let sg = flag("feature-sg");
    // TCP segmentation offload on transmit: the backend splits large TCPv4
    // packets (needs scatter-gather to carry them).
    let gso = sg && flag("feature-gso-tcpv4");
    // TCPv6 GSO packets carry a partial checksum: both are needed (Linux's
    // `netdev_fix_features` drops TSO6 without IPv6 checksum offload)
    let ipv6_csum = flag("feature-ipv6-csum-offload");
    let gso6 = sg && ipv6_csum && flag("feature-gso-tcpv6");
    let mtu = mtu_from_backend(p.xs_read(&format!("{backend}/mtu")).ok().as_deref(), sg);
    let max = p.xs_read(&format!("{backend}/multi-queue-max-queues")).ok();
    let n = queue_count(max_queues, max.as_deref());
    let mut queues = Vec::with_capacity(n);
    for k in 0..n {
        match Queue::setup(p, backend_id, FULL_BUFFERS) {
            Ok(q) => queues.push(q),
            // The first queue makes do with fewer buffers (a small domain: a
            // router's two vifs at memory = 8 do not have 514 pages each);
            // further queues are only worth it whole.
            Err(_) if k == 0 => match setup_smaller(p, backend_id) {
                Ok(q) => queues.push(q),
                Err(e) => return Err(e),
            },
            // Fewer queues rather than no vif: a small domain may have the
            // pages (or grants) for one queue only. The failed queue gave back
            // what it took.
            Err(_) if k > 0 => break,
            Err(e) => {
                release_all(p, queues);
                return Err(e);
            }
        }
    }
    match publish_and_connect(p, &base, &bstate, &mut fe, &queues, sg) {
        Ok(()) => {}
        Err(e) => {
            // A backend still in InitWait (or gone, or Closed) never took the
            // rings: everything goes back. One that went further (Connected,
            // then Closing: netback failed to map, or our wait ran out) may be
            // copying packets into the RX buffers' grants: it is closed the
            // xenbus way first, and if it does not reach Closed every grant and
            // page stays for good (a reference ended and reused could carry a
            // packet into another device's page), as at a detach that timed out.
            let untouched = matches!(
                crate::platform::read_state(p, &bstate),
                None | Some(
                    XenbusState::Initialising | XenbusState::InitWait | XenbusState::Closed
                )
            );
            if untouched || crate::platform::close_device(p, &base, &bstate, HANDSHAKE_TIMEOUT_NS) {
                // Nothing leaks, and the device can be connected again: the
                // frontend goes back to Initialising (netback returns to InitWait).
                disconnect(p, queues, true);
                let _ = p.xs_write(
                    &format!("{base}/state"),
                    &format!("{}", XenbusState::Initialising.number()),
                );
            } else {
                disconnect(p, queues, false);
            }
            return Err(e);
        }
    }
    for q in &queues {
        p.notify(q.port);
    }

    Ok(Link {
        backend_id,
        mac,
        queues,
        sg,
        gso,
        gso6,
        ipv6_csum,
        mtu,
    })
}

/// A queue with fewer buffers ([`SMALLER_BUFFERS`]), when the full set's pages or
/// grants are not to be had; the last error if none fits.
fn setup_smaller<P: XenPlatform>(p: &P, backend_id: u16) -> Result<Queue, NetError> {
    let mut last = NetError::Handshake(String::from("no memory for a queue"));
    for n in SMALLER_BUFFERS {
        match Queue::setup(p, backend_id, n) {
            Ok(q) => return Ok(q),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Publishes the queues and features, goes Connected and waits for the backend.
fn publish_and_connect<P: XenPlatform>(
    p: &P,
    base: &str,
    bstate: &str,
    fe: &mut Frontend,
    queues: &[Queue],
    sg: bool,
) -> Result<(), NetError> {
    let n = queues.len();
    let w = |k: &str, v: &str| hs(k, p.xs_write(&format!("{base}/{k}"), v));
    clear_stale_layout(p, base, n)?;
    if n > 1 {
        w("multi-queue-num-queues", &format!("{n}"))?;
    }
    for (k, q) in queues.iter().enumerate() {
        // One queue: the keys at the top, as without multi-queue (netif.h).
        let dir = if n > 1 {
            format!("queue-{k}/")
        } else {
            String::new()
        };
        w(
            &format!("{dir}tx-ring-ref"),
            &format!("{}", q.tx_ring_grant.gref()),
        )?;
        w(
            &format!("{dir}rx-ring-ref"),
            &format!("{}", q.rx_ring_grant.gref()),
        )?;
        w(&format!("{dir}event-channel"), &format!("{}", q.port.0))?;
    }
    w("request-rx-copy", "1")?;
    w("feature-rx-notify", "1")?;
    w("feature-sg", if sg { "1" } else { "0" })?;
    // Receive GSO: with scatter-gather, TCP packets up to 64 KiB arrive whole
    // (several data slots and a GSO extra-info slot) instead of cut to the MTU.
    let gso_rx = if sg { "1" } else { "0" };
    w("feature-gso-tcpv4", gso_rx)?;
    w("feature-gso-tcpv6", gso_rx)?;
    // IPv6 TCP/UDP packets may come with a partial checksum too (IPv4's may by
    // default): without it Linux's netback sends no TCPv6 GSO either.
    w("feature-ipv6-csum-offload", "1")?;
    w("state", &format!("{}", XenbusState::Connected.number()))?;
    fe.switched(XenbusState::Initialised);
    wait_for_action(p, bstate, fe, Action::Connect, HANDSHAKE_TIMEOUT_NS)
        .map_err(NetError::Handshake)
}

/// Takes a vif down once the handshake is undone or the backend has gone: with
/// `backend_closed`, every queue is released (grants ended, pages freed, a page the
/// backend still maps kept) and the (buffer, ring) pages freed are returned; without
/// it only the event channels are closed and every grant and page is kept for good
/// (a reference ended and reused could carry a packet into another device's page),
/// returning (0, 0).
pub(super) fn disconnect<P: XenPlatform>(
    p: &P,
    queues: Vec<Queue>,
    backend_closed: bool,
) -> (usize, usize) {
    if backend_closed {
        return release_all(p, queues);
    }
    for q in queues {
        p.close_port(q.port);
        // Dropped, not released: a DmaPages not given back to the platform
        // stays allocated for good, and a Grant dropped is never ended.
        drop(q);
    }
    (0, 0)
}

/// Removes what an earlier attempt published in the other layout (netif.h): a
/// retry that makes do with fewer queues must not leave `multi-queue-num-queues` and
/// `queue-N/` behind for netback to read, nor a multi-queue retry the single-queue
/// keys at the top.
fn clear_stale_layout<P: XenPlatform>(p: &P, base: &str, n: usize) -> Result<(), NetError> {
    let old = p
        .xs_read(&format!("{base}/multi-queue-num-queues"))
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0)
        // bounded by what a frontend could have published
        .min(MAX_QUEUES_EVER);
    let rm = |k: &str| hs(k, p.xs_rm(&format!("{base}/{k}")));
    if n > 1 {
        for k in ["tx-ring-ref", "rx-ring-ref", "event-channel"] {
            rm(k)?;
        }
    } else {
        rm("multi-queue-num-queues")?;
    }
    let first_stale = if n > 1 { n } else { 0 };
    for k in first_stale..old {
        rm(&format!("queue-{k}"))?;
    }
    Ok(())
}

pub(super) fn hs<T, E: fmt::Display>(what: &str, r: Result<T, E>) -> Result<T, NetError> {
    r.map_err(|e| NetError::Handshake(format!("{what}: {e}")))
}

/// Parses "aa:bb:cc:dd:ee:ff".
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.trim().split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// The number of queues to use: the caller's cap `max_queues`, no more than the
/// backend's `multi-queue-max-queues` value `backend_max` (absent, malformed or 0:
/// the backend has one queue), and at least 1.
pub(super) fn queue_count(max_queues: usize, backend_max: Option<&str>) -> usize {
    let offered = backend_max
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(1);
    max_queues.min(offered).max(1)
}
