//! Synchronous transfers over an asynchronous [`BlockDevice`], for the filesystem:
//! one call reads or writes any run of whole sectors, split into requests as large as
//! the device takes (indirect descriptors: 1 MiB) and kept in flight together, then
//! waits for all of them. The device must have nothing else in flight from the caller
//! (the shell runs one command at a time); completions of an earlier call that gave
//! up are recognised by their tag and their buffers recycled.
//!
//! Every wait has a deadline; when it passes the call fails with an I/O error (the
//! buffers stay with the driver until the backend answers, so a late answer never
//! lands in memory that was reused). `interrupted` (Ctrl-C) stops submitting and
//! fails the call once what was in flight has completed.

use crate::blkfront::{BlockDevice, BlockError, BlockOp, BlockRequest, Completion, IoBuf};
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use xenlet_xen::shared::PAGE_BYTES;

/// Requests kept in flight at once (each up to the device's segment limit).
pub const MAX_IN_FLIGHT: usize = 8;

/// Time and interruption, from the kernel (or a test).
pub trait Waiter {
    /// Monotonic nanoseconds.
    fn now_ns(&self) -> u64;
    /// Whether the user asked to stop (Ctrl-C).
    fn interrupted(&self) -> bool;
    /// How long to wait without any completion before failing.
    fn timeout_ns(&self) -> u64 {
        30_000_000_000
    }
}

/// How a synchronous transfer failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncError {
    /// The device failed the request, or is broken.
    Device(BlockError),
    /// No completion for [`Waiter::timeout_ns`].
    Timeout,
    /// Stopped by [`Waiter::interrupted`]; what was in flight completed.
    Interrupted,
    /// Not whole sectors, or outside the disk.
    Range,
}

impl core::fmt::Display for SyncError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SyncError::Device(e) => write!(f, "{e}"),
            SyncError::Timeout => f.write_str("Input/output error (no answer from the backend)"),
            SyncError::Interrupted => f.write_str("Interrupted"),
            SyncError::Range => {
                f.write_str("Invalid argument (outside the disk or not whole sectors)")
            }
        }
    }
}

/// Each call's tags carry a fresh epoch in the high half, so a completion left over
/// from an abandoned call is never taken for one of this call's.
static EPOCH: AtomicU64 = AtomicU64::new(1);

/// The answers of each live [`WriteBehind`] (by epoch) that another call's poll
/// collected: (tag, result). Every poll loop on a device hands the answers it does
/// not own to [`recycle`], which keeps them here, so two filesystems on one disk's
/// partitions, or a raw-disk command beside a mounted filesystem, never swallow each
/// other's write-behind answers (which would leave that write-behind waiting for
/// them until its timeout, an I/O error for a write the backend did). Shell context
/// only: no interrupt handler polls a block device.
static STRAY: spin::Mutex<Vec<(u64, Vec<Answer>)>> = spin::Mutex::new(Vec::new());

/// A request's tag and how it ended.
type Answer = (u64, Result<(), BlockError>);

/// A tag no other call uses (a fresh epoch), for a request submitted outside this
/// module (the shell's raw-disk commands), so that [`recycle`] and every other
/// caller can tell its answer from theirs.
pub fn fresh_tag() -> u64 {
    EPOCH.fetch_add(1, Ordering::Relaxed) << 32
}

/// The epoch half of a tag.
fn epoch_of(tag: u64) -> u64 {
    tag & !0xffff_ffff
}

enum Dir<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

/// Reads `buf.len()` bytes at byte `offset` (whole sectors).
pub fn read<B: BlockDevice + ?Sized>(
    dev: &mut B,
    w: &dyn Waiter,
    offset: u64,
    buf: &mut [u8],
) -> Result<(), SyncError> {
    transfer(dev, w, offset, Dir::Read(buf))
}

/// Writes `data` at byte `offset` (whole sectors).
pub fn write<B: BlockDevice + ?Sized>(
    dev: &mut B,
    w: &dyn Waiter,
    offset: u64,
    data: &[u8],
) -> Result<(), SyncError> {
    if dev.info().readonly {
        return Err(SyncError::Device(BlockError::ReadOnly));
    }
    transfer(dev, w, offset, Dir::Write(data))
}

/// Flushes the device's write cache (a barrier if that is all it has; nothing if it
/// has neither, as Linux does for a write-through disk).
pub fn flush<B: BlockDevice + ?Sized>(dev: &mut B, w: &dyn Waiter) -> Result<(), SyncError> {
    let f = dev.info().features;
    if !f.flush && !f.barrier {
        return Ok(());
    }
    let tag = EPOCH.fetch_add(1, Ordering::Relaxed) << 32;
    submit_retrying(
        dev,
        w,
        BlockRequest {
            tag,
            op: BlockOp::Flush,
            sector: 0,
            bytes: 0,
            bufs: Vec::new(),
        },
    )?;
    dev.kick();
    let mut done = Vec::new();
    let start = w.now_ns();
    loop {
        dev.poll(&mut done);
        let mut result = None;
        for c in done.drain(..) {
            if c.tag == tag {
                result = Some(c.result.clone());
                free_bufs(dev, c);
            } else {
                recycle(dev, c);
            }
        }
        if let Some(r) = result {
            return r.map_err(SyncError::Device);
        }
        check_waiting(dev, w, start)?;
        if w.interrupted() {
            // A flush holds no buffers; its answer is recycled by a later call.
            return Err(SyncError::Interrupted);
        }
        dev.wait();
    }
}

/// Write-behind: writes that return once they are on the ring (their data copied
/// into the device's granted buffers, not the heap), up to a bound in flight. Their
/// completions are collected by later calls; an error sticks and is reported by the
/// next call and by [`drain`], as a write-back error surfaces at `fsync`. A device
/// with write-behind in use must be drained before a synchronous [`read`] or
/// [`flush`] (which recycle answers they do not know).
pub struct WriteBehind {
    epoch: u64,
    seq: u64,
    in_flight: usize,
    /// (tag, first byte, end) of each request in flight: a backend may complete
    /// requests in any order, so a write overlapping one in flight waits for it.
    ranges: Vec<(u64, u64, u64)>,
    max_in_flight: usize,
    error: Option<SyncError>,
}

impl WriteBehind {
    /// Up to `max_in_flight` requests outstanding.
    pub fn new(max_in_flight: usize) -> Self {
        let epoch = EPOCH.fetch_add(1, Ordering::Relaxed) << 32;
        STRAY.lock().push((epoch, Vec::new()));
        WriteBehind {
            epoch,
            seq: 0,
            in_flight: 0,
            ranges: Vec::new(),
            max_in_flight: max_in_flight.max(1),
            error: None,
        }
    }

    /// Requests still outstanding.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Takes this write-behind's answers that other calls collected.
    fn take_strays(&self) -> Vec<Answer> {
        let mut stray = STRAY.lock();
        stray
            .iter_mut()
            .find(|(e, _)| *e == self.epoch)
            .map(|(_, v)| core::mem::take(v))
            .unwrap_or_default()
    }

    /// Counts one of its own answers.
    fn answered(&mut self, tag: u64, result: &Result<(), BlockError>) -> bool {
        if epoch_of(tag) != self.epoch || self.in_flight == 0 {
            return false;
        }
        self.in_flight -= 1;
        self.ranges.retain(|r| r.0 != tag);
        if let Err(e) = result {
            self.error.get_or_insert(SyncError::Device(e.clone()));
        }
        true
    }
}

impl Drop for WriteBehind {
    fn drop(&mut self) {
        STRAY.lock().retain(|(e, _)| *e != self.epoch);
    }
}

/// Fails if the device broke or `w`'s timeout has passed since `start`: what ends a
/// wait for an answer that has not come.
fn check_waiting<B: BlockDevice + ?Sized>(
    dev: &B,
    w: &dyn Waiter,
    start: u64,
) -> Result<(), SyncError> {
    if let Some(why) = dev.broken() {
        return Err(SyncError::Device(BlockError::Broken(String::from(why))));
    }
    if w.now_ns().saturating_sub(start) > w.timeout_ns() {
        return Err(SyncError::Timeout);
    }
    Ok(())
}

/// Collects answers; with `block`, waits until at least one of `wb`'s arrives.
fn reap<B: BlockDevice + ?Sized>(
    dev: &mut B,
    w: &dyn Waiter,
    wb: &mut WriteBehind,
    block: bool,
) -> Result<(), SyncError> {
    let start = w.now_ns();
    let mut done = Vec::new();
    loop {
        dev.poll(&mut done);
        let mut progressed = false;
        for (tag, result) in wb.take_strays() {
            progressed |= wb.answered(tag, &result);
        }
        for c in done.drain(..) {
            if wb.answered(c.tag, &c.result) {
                progressed = true;
                free_bufs(dev, c);
            } else {
                recycle(dev, c);
            }
        }
        if progressed || !block || wb.in_flight == 0 {
            return Ok(());
        }
        check_waiting(dev, w, start)?;
        dev.wait();
    }
}

/// Queues `data` for writing at byte `offset` (whole sectors) and returns once it is
/// on the ring; waits only while `wb`'s bound of requests is in flight.
pub fn write_behind<B: BlockDevice + ?Sized>(
    dev: &mut B,
    w: &dyn Waiter,
    wb: &mut WriteBehind,
    offset: u64,
    data: &[u8],
) -> Result<(), SyncError> {
    // A write lost before this one is not this call's: it waits for the next drain
    // (a disk reports a failed write to the flush after it, not to the next
    // submission), so the filesystem writing on commits what it must and learns of
    // the loss where it can act on it.
    let info = dev.info();
    if info.readonly {
        return Err(SyncError::Device(BlockError::ReadOnly));
    }
    let size = info.bytes();
    let max_segs = (info.features.max_segments.max(1) as usize).min(256);
    if !offset.is_multiple_of(512)
        || !data.len().is_multiple_of(512)
        || offset
            .checked_add(data.len() as u64)
            .is_none_or(|end| end > size)
    {
        return Err(SyncError::Range);
    }
    let chunk = max_segs * PAGE_BYTES;
    let mut start = 0;
    let mut submitted = false;
    // since when the device has had no room for us (its pool held by others)
    let mut room_since: Option<u64> = None;
    while start < data.len() {
        reap(dev, w, wb, false)?;
        let bytes = chunk.min(data.len() - start);
        let (lo, hi) = (offset + start as u64, offset + (start + bytes) as u64);
        let overlaps = wb.ranges.iter().any(|r| r.1 < hi && lo < r.2);
        if wb.in_flight >= wb.max_in_flight || overlaps {
            dev.kick();
            reap(dev, w, wb, true)?;
            continue;
        }
        let Some(bufs) = alloc_bufs(dev, bytes.div_ceil(PAGE_BYTES)) else {
            if wb.in_flight == 0 {
                // the pool is another user's (a raw-disk command, a filesystem on
                // another partition): wait for it, as for our own
                wait_for_room(dev, w, *room_since.get_or_insert_with(|| w.now_ns()))?;
                continue;
            }
            dev.kick();
            reap(dev, w, wb, true)?;
            continue;
        };
        room_since = None;
        for (i, b) in bufs.iter().enumerate() {
            let s = start + i * PAGE_BYTES;
            let e = (s + PAGE_BYTES).min(start + bytes);
            b.write_at(0, &data[s..e]);
        }
        wb.seq = (wb.seq + 1) & 0xffff_ffff;
        let req = BlockRequest {
            tag: wb.epoch | wb.seq,
            op: BlockOp::Write,
            sector: (offset + start as u64) / 512,
            bytes,
            bufs,
        };
        let tag = req.tag;
        match dev.submit(req) {
            Ok(()) => {
                wb.in_flight += 1;
                wb.ranges.push((tag, lo, hi));
                start += bytes;
                submitted = true;
            }
            Err((BlockError::Busy, back)) => {
                for b in back.bufs {
                    dev.free_buf(b);
                }
                if wb.in_flight == 0 {
                    wait_for_room(dev, w, *room_since.get_or_insert_with(|| w.now_ns()))?;
                    continue;
                }
                dev.kick();
                reap(dev, w, wb, true)?;
            }
            Err((e, back)) => {
                for b in back.bufs {
                    dev.free_buf(b);
                }
                return Err(SyncError::Device(e));
            }
        }
    }
    if submitted {
        dev.kick();
    }
    Ok(())
}

/// Waits for every write-behind request, then reports the first write that failed
/// since the last report, once (as a disk reports a failed write to the flush
/// after it): the filesystem above keeps what it means (the blocks it covered
/// unwritten, a transaction aborted, the filesystem marked with errors) and reports
/// it to every later `sync`/`fsync` itself. A device that goes on failing fails the
/// next writes and flushes on their own. What a read needs is [`settle`].
pub fn drain<B: BlockDevice + ?Sized>(
    dev: &mut B,
    w: &dyn Waiter,
    wb: &mut WriteBehind,
) -> Result<(), SyncError> {
    settle(dev, w, wb)?;
    match wb.error.take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Waits for every write-behind request (a read must see what was written before
/// it) without reporting their failures: a read fails for its own reasons only, and
/// never takes a write's error from the `sync` that must report it. Fails only if
/// the device stops answering.
pub fn settle<B: BlockDevice + ?Sized>(
    dev: &mut B,
    w: &dyn Waiter,
    wb: &mut WriteBehind,
) -> Result<(), SyncError> {
    dev.kick();
    while wb.in_flight > 0 {
        reap(dev, w, wb, true)?;
    }
    Ok(())
}

/// `pages` buffers from the device's pool, waiting (see [`wait_for_room`]) while
/// another user of the disk holds them: for a caller that submits its own requests
/// (the shell's `sha256sum` of a disk).
pub fn alloc_waiting<B: BlockDevice + ?Sized>(
    dev: &mut B,
    w: &dyn Waiter,
    pages: usize,
) -> Result<Vec<IoBuf>, SyncError> {
    let since = w.now_ns();
    loop {
        if let Some(b) = alloc_bufs(dev, pages) {
            return Ok(b);
        }
        wait_for_room(dev, w, since)?;
    }
}

/// `pages` buffers from the device's pool, or none (all given back) if it has not
/// that many free now.
fn alloc_bufs<B: BlockDevice + ?Sized>(dev: &mut B, pages: usize) -> Option<Vec<IoBuf>> {
    let mut bufs: Vec<IoBuf> = Vec::with_capacity(pages);
    while bufs.len() < pages {
        match dev.alloc_buf() {
            Some(b) => bufs.push(b),
            None => {
                for b in bufs {
                    dev.free_buf(b);
                }
                return None;
            }
        }
    }
    Some(bufs)
}

/// Waits for room in the device (free buffers in its pool, a free ring slot) that
/// another user of the disk holds: a mounted filesystem's write-behind, a raw-disk
/// command's abandoned requests. Collects the device's answers (routed to their
/// owners by [`recycle`], their buffers back in the pool) and waits for the next;
/// `Ok` to try again. Fails with `Busy` only when nothing is in flight that could
/// free room (the request can never fit), and with `Timeout` when the holders do not
/// answer for the waiter's timeout from `since` (ns).
fn wait_for_room<B: BlockDevice + ?Sized>(
    dev: &mut B,
    w: &dyn Waiter,
    since: u64,
) -> Result<(), SyncError> {
    if dev.in_flight() == 0 {
        return Err(SyncError::Device(BlockError::Busy));
    }
    dev.kick();
    let mut done = Vec::new();
    dev.poll(&mut done);
    if !done.is_empty() {
        for c in done.drain(..) {
            recycle(dev, c);
        }
        return Ok(());
    }
    check_waiting(dev, w, since)?;
    dev.wait();
    Ok(())
}

/// Takes care of an answer the caller does not own: its buffers go back to the
/// device's pool, and if it belongs to a live [`WriteBehind`] that write-behind is
/// told (see [`STRAY`]). Everything that polls a block device hands it the
/// completions that are not its own.
pub fn recycle<B: BlockDevice + ?Sized>(dev: &mut B, c: Completion) {
    {
        let mut stray = STRAY.lock();
        if let Some((_, v)) = stray.iter_mut().find(|(e, _)| *e == epoch_of(c.tag)) {
            v.push((c.tag, c.result.clone()));
        }
    }
    free_bufs(dev, c);
}

fn free_bufs<B: BlockDevice + ?Sized>(dev: &mut B, c: Completion) {
    for b in c.bufs {
        dev.free_buf(b);
    }
}

/// Submits, waiting for room while the ring is full.
fn submit_retrying<B: BlockDevice + ?Sized>(
    dev: &mut B,
    w: &dyn Waiter,
    mut req: BlockRequest,
) -> Result<(), SyncError> {
    let start = w.now_ns();
    loop {
        match dev.submit(req) {
            Ok(()) => return Ok(()),
            Err((BlockError::Busy, back)) => {
                req = back;
                let mut done = Vec::new();
                dev.kick();
                dev.poll(&mut done);
                for c in done {
                    recycle(dev, c);
                }
                if w.now_ns().saturating_sub(start) > w.timeout_ns() {
                    for b in req.bufs {
                        dev.free_buf(b);
                    }
                    return Err(SyncError::Timeout);
                }
                dev.wait();
            }
            Err((e, back)) => {
                for b in back.bufs {
                    dev.free_buf(b);
                }
                return Err(SyncError::Device(e));
            }
        }
    }
}

fn transfer<B: BlockDevice + ?Sized>(
    dev: &mut B,
    w: &dyn Waiter,
    offset: u64,
    mut dir: Dir<'_>,
) -> Result<(), SyncError> {
    let len = match &dir {
        Dir::Read(b) => b.len(),
        Dir::Write(d) => d.len(),
    };
    let info = dev.info();
    let size = info.bytes();
    let max_segs = (info.features.max_segments.max(1) as usize).min(256);
    if !offset.is_multiple_of(512)
        || !len.is_multiple_of(512)
        || offset.checked_add(len as u64).is_none_or(|end| end > size)
    {
        return Err(SyncError::Range);
    }
    if let Some(why) = dev.broken() {
        return Err(SyncError::Device(BlockError::Broken(String::from(why))));
    }
    let chunk = max_segs * PAGE_BYTES;
    let epoch = EPOCH.fetch_add(1, Ordering::Relaxed) << 32;
    let chunks = len.div_ceil(chunk);
    let mut next = 0usize; // next chunk to submit
    let mut completed = 0usize;
    let mut in_flight = 0usize;
    let mut error: Option<SyncError> = None;
    let mut done: Vec<Completion> = Vec::new();
    let mut last_progress = w.now_ns();
    while completed < next || (next < chunks && error.is_none()) {
        // Fill the pipeline.
        let mut submitted_any = false;
        while error.is_none() && next < chunks && in_flight < MAX_IN_FLIGHT {
            if w.interrupted() {
                error = Some(SyncError::Interrupted);
                break;
            }
            let start = next * chunk;
            let bytes = chunk.min(len - start);
            let Some(bufs) = alloc_bufs(dev, bytes.div_ceil(PAGE_BYTES)) else {
                if in_flight == 0 {
                    // the pool is held by another user of the disk: wait for it
                    if let Err(e) = wait_for_room(dev, w, last_progress) {
                        error = Some(e);
                    }
                    continue;
                }
                break;
            };
            let op = match &dir {
                Dir::Read(_) => BlockOp::Read,
                Dir::Write(d) => {
                    for (i, b) in bufs.iter().enumerate() {
                        let s = start + i * PAGE_BYTES;
                        let e = (s + PAGE_BYTES).min(start + bytes);
                        b.write_at(0, &d[s..e]);
                    }
                    BlockOp::Write
                }
            };
            let req = BlockRequest {
                tag: epoch | next as u64,
                op,
                sector: (offset + start as u64) / 512,
                bytes,
                bufs,
            };
            match dev.submit(req) {
                Ok(()) => {
                    next += 1;
                    in_flight += 1;
                    submitted_any = true;
                }
                Err((BlockError::Busy, back)) => {
                    for b in back.bufs {
                        dev.free_buf(b);
                    }
                    if in_flight == 0 {
                        if let Err(e) = wait_for_room(dev, w, last_progress) {
                            error = Some(e);
                        }
                        continue;
                    }
                    break;
                }
                Err((e, back)) => {
                    for b in back.bufs {
                        dev.free_buf(b);
                    }
                    error = Some(SyncError::Device(e));
                }
            }
        }
        if submitted_any {
            dev.kick();
        }
        if in_flight == 0 {
            break;
        }
        // Collect.
        dev.poll(&mut done);
        let mut progressed = false;
        for c in done.drain(..) {
            let idx = c.tag & 0xffff_ffff;
            if c.tag & !0xffff_ffff != epoch || idx as usize >= next {
                // An abandoned call's answer: its buffers are free now.
                recycle(dev, c);
                continue;
            }
            in_flight -= 1;
            completed += 1;
            progressed = true;
            match &c.result {
                Ok(()) => {
                    if let Dir::Read(buf) = &mut dir {
                        let start = idx as usize * chunk;
                        let bytes = chunk.min(len - start);
                        for (i, b) in c.bufs.iter().enumerate() {
                            let s = start + i * PAGE_BYTES;
                            let e = (s + PAGE_BYTES).min(start + bytes);
                            if s < e {
                                b.read_at(0, &mut buf[s..e]);
                            }
                        }
                    }
                }
                Err(e) => {
                    if error.is_none() {
                        error = Some(SyncError::Device(e.clone()));
                    }
                }
            }
            // its own answer: the buffers back, nothing to route
            free_bufs(dev, c);
        }
        let now = w.now_ns();
        if progressed {
            last_progress = now;
            continue;
        }
        if let Some(why) = dev.broken().map(String::from) {
            // A broken device fails what it holds; collect once more, then give up.
            dev.poll(&mut done);
            for c in done.drain(..) {
                recycle(dev, c);
            }
            return Err(SyncError::Device(BlockError::Broken(why)));
        }
        if now.saturating_sub(last_progress) > w.timeout_ns() {
            return Err(SyncError::Timeout);
        }
        if w.interrupted() && error.is_none() {
            error = Some(SyncError::Interrupted);
        }
        dev.wait();
    }
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blkfront::MemDisk;
    use core::cell::Cell;

    /// A disk of `bytes` (a pattern) with a ring of 32 and buffers enough for it.
    fn fake_disk(bytes: usize, max_segments: u32) -> MemDisk {
        let data = (0..bytes).map(|i| (i * 7 % 251) as u8).collect();
        let mut d = MemDisk::new("xvdb", data, max_segments);
        d.info.features.ring_entries = 32;
        d.ring = 32;
        d.buf_limit = 4096;
        d
    }

    /// [`fake_disk`] of 4 MiB with a pool of 16 buffers and answers 5 polls late:
    /// one write-behind can hold the whole pool.
    fn busy_disk() -> MemDisk {
        let mut d = fake_disk(4 << 20, 4);
        d.buf_limit = 16;
        d.delay = 5;
        d
    }

    /// A clock that advances a millisecond per look.
    struct Clock {
        t: Cell<u64>,
        stop_after: Cell<Option<u32>>,
    }
    impl Clock {
        fn new() -> Self {
            Clock {
                t: Cell::new(0),
                stop_after: Cell::new(None),
            }
        }
    }
    impl Waiter for Clock {
        fn now_ns(&self) -> u64 {
            self.t.set(self.t.get() + 1_000_000);
            self.t.get()
        }
        fn interrupted(&self) -> bool {
            match self.stop_after.get() {
                Some(0) => true,
                Some(n) => {
                    self.stop_after.set(Some(n - 1));
                    false
                }
                None => false,
            }
        }
        fn timeout_ns(&self) -> u64 {
            1_000_000_000
        }
    }

    #[test]
    fn large_transfers_are_split_pipelined_and_exact() {
        let mut d = fake_disk(8 << 20, 256);
        let orig = d.data.clone();
        let c = Clock::new();
        let mut buf = alloc::vec![0u8; 3 << 20];
        read(&mut d, &c, 512, &mut buf).unwrap();
        assert_eq!(buf[..], orig[512..512 + (3 << 20)]);
        assert_eq!(d.log.len(), 3, "three 1 MiB requests: {:?}", d.log);
        let data: Vec<u8> = (0..(2 << 20) + 1536).map(|i| (i % 13) as u8).collect();
        write(&mut d, &c, 4096, &data).unwrap();
        assert_eq!(d.data[4096..4096 + data.len()], data[..]);
        assert_eq!(d.data[..4096], orig[..4096], "nothing before it touched");
        assert_eq!(
            d.data[4096 + data.len()],
            orig[4096 + data.len()],
            "nor after"
        );
        flush(&mut d, &c).unwrap();
        assert_eq!(d.flushes(), 1);
        assert_eq!(d.bufs_made, d.pool.len(), "every buffer back in the pool");
    }

    #[test]
    fn small_rings_and_few_buffers_still_finish() {
        let mut d = fake_disk(1 << 20, 11);
        d.ring = 1;
        d.buf_limit = 12;
        d.delay = 3;
        let c = Clock::new();
        let data = alloc::vec![0x5a; 600 * 1024];
        write(&mut d, &c, 0, &data).unwrap();
        assert_eq!(d.data[..data.len()], data[..]);
    }

    #[test]
    fn bad_ranges_are_refused_without_io() {
        let mut d = fake_disk(1 << 20, 11);
        let c = Clock::new();
        let mut b = [0u8; 1024];
        assert_eq!(read(&mut d, &c, 100, &mut b), Err(SyncError::Range));
        assert_eq!(
            read(&mut d, &c, (1 << 20) - 512, &mut b),
            Err(SyncError::Range)
        );
        assert_eq!(
            read(&mut d, &c, u64::MAX - 511, &mut b),
            Err(SyncError::Range)
        );
        assert_eq!(read(&mut d, &c, 0, &mut b[..100]), Err(SyncError::Range));
        d.info.readonly = true;
        assert_eq!(
            write(&mut d, &c, 0, &b),
            Err(SyncError::Device(BlockError::ReadOnly))
        );
        assert!(d.log.is_empty());
    }

    #[test]
    fn device_errors_fail_the_call_after_everything_lands() {
        let mut d = fake_disk(4 << 20, 256);
        d.fail_sector = Some(2048); // the second 1 MiB chunk
        let c = Clock::new();
        let mut buf = alloc::vec![0u8; 3 << 20];
        assert_eq!(
            read(&mut d, &c, 0, &mut buf),
            Err(SyncError::Device(BlockError::Io))
        );
        assert_eq!(d.bufs_made, d.pool.len(), "no buffer lost");
    }

    #[test]
    fn a_silent_backend_times_out_and_its_late_answer_is_recycled() {
        let mut d = fake_disk(1 << 20, 11);
        d.silent = true;
        let c = Clock::new();
        let mut buf = alloc::vec![0u8; 8192];
        assert_eq!(read(&mut d, &c, 0, &mut buf), Err(SyncError::Timeout));
        assert_eq!(
            d.pool.len(),
            0,
            "buffers stay with the device while it may write them"
        );
        d.silent = false;
        read(&mut d, &c, 4096, &mut buf).unwrap();
        assert_eq!(buf[..], d.data[4096..4096 + 8192]);
        assert_eq!(
            d.bufs_made,
            d.pool.len(),
            "the old answer's buffers came back"
        );
    }

    #[test]
    fn a_lying_backend_cannot_complete_a_request_it_was_not_given() {
        let mut d = fake_disk(1 << 20, 11);
        d.wrong_tag = Some(12345);
        let c = Clock::new();
        let mut buf = alloc::vec![0u8; 8192];
        assert_eq!(read(&mut d, &c, 0, &mut buf), Err(SyncError::Timeout));
        assert!(
            buf.iter().all(|&b| b == 0),
            "nothing copied from an unknown answer"
        );
    }

    #[test]
    fn interruption_stops_submitting_and_drains() {
        let mut d = fake_disk(16 << 20, 11);
        d.delay = 2;
        let c = Clock::new();
        c.stop_after.set(Some(3));
        let data = alloc::vec![1u8; 8 << 20];
        assert_eq!(write(&mut d, &c, 0, &data), Err(SyncError::Interrupted));
        assert!(d.log.len() < 20, "stopped early: {}", d.log.len());
        assert_eq!(d.in_flight(), 0, "what was in flight completed");
        assert_eq!(d.bufs_made, d.pool.len());
    }

    #[test]
    fn write_behind_returns_early_keeps_order_of_content_and_drains() {
        let mut d = fake_disk(8 << 20, 256);
        d.delay = 5;
        let c = Clock::new();
        let mut wb = WriteBehind::new(4);
        let a = alloc::vec![0xa1u8; 3 << 20];
        write_behind(&mut d, &c, &mut wb, 0, &a).unwrap();
        assert!(wb.in_flight() > 0, "returned with writes in flight");
        assert!(wb.in_flight() <= 4);
        let b = alloc::vec![0xb2u8; 1 << 20];
        write_behind(&mut d, &c, &mut wb, 4 << 20, &b).unwrap();
        drain(&mut d, &c, &mut wb).unwrap();
        assert_eq!(wb.in_flight(), 0);
        assert!(d.data[..3 << 20].iter().all(|&x| x == 0xa1));
        assert!(d.data[4 << 20..5 << 20].iter().all(|&x| x == 0xb2));
        assert_eq!(d.bufs_made, d.pool.len(), "every buffer back");
        // A synchronous read after draining sees the data.
        let mut r = alloc::vec![0u8; 4096];
        read(&mut d, &c, (4 << 20) + 4096, &mut r).unwrap();
        assert!(r.iter().all(|&x| x == 0xb2));
    }

    #[test]
    fn a_read_waits_for_a_pool_a_mounted_filesystem_holds() {
        // The filesystem's write-behind holds every buffer of the pool, its answers
        // late; a raw-disk read (sha256sum /dev/xvdb beside the mount) must wait for
        // them, not fail with EBUSY.
        let mut d = busy_disk();
        let c = Clock::new();
        let mut wb = WriteBehind::new(8);
        write_behind(&mut d, &c, &mut wb, 0, &alloc::vec![0x5au8; 64 << 10]).unwrap();
        assert_eq!(wb.in_flight(), 4, "the whole pool is in flight");
        let mut r = alloc::vec![0u8; 16 << 10];
        read(&mut d, &c, 1 << 20, &mut r).expect("waited for the pool");
        assert!(r
            .iter()
            .enumerate()
            .all(|(i, &x)| x == ((((1 << 20) + i) * 7 % 251) as u8)));
        // and the write-behind still gets its own answers
        drain(&mut d, &c, &mut wb).unwrap();
        assert!(d.data[..64 << 10].iter().all(|&x| x == 0x5a));
    }

    #[test]
    fn a_write_behind_waits_for_a_pool_another_holds() {
        let mut d = busy_disk();
        let c = Clock::new();
        let mut p1 = WriteBehind::new(8);
        let mut p2 = WriteBehind::new(8);
        write_behind(&mut d, &c, &mut p1, 0, &alloc::vec![1u8; 64 << 10]).unwrap();
        write_behind(&mut d, &c, &mut p2, 2 << 20, &alloc::vec![2u8; 16 << 10]).unwrap();
        drain(&mut d, &c, &mut p1).unwrap();
        drain(&mut d, &c, &mut p2).unwrap();
        assert!(d.data[2 << 20..(2 << 20) + (16 << 10)]
            .iter()
            .all(|&x| x == 2));
        assert_eq!(d.bufs_made, d.pool.len(), "every buffer back");
    }

    #[test]
    fn a_request_that_can_never_fit_still_fails_busy() {
        // nothing in flight anywhere, and no buffer to be had: no waiting
        let mut d = fake_disk(4 << 20, 4);
        d.buf_limit = 0;
        let c = Clock::new();
        let mut r = alloc::vec![0u8; 4096];
        assert_eq!(
            read(&mut d, &c, 0, &mut r),
            Err(SyncError::Device(BlockError::Busy))
        );
    }

    #[test]
    fn a_lost_write_is_reported_once_by_the_next_drain_and_never_by_a_read() {
        let mut d = fake_disk(4 << 20, 256);
        d.delay = 2; // the failure arrives later, as the backend's answer
        d.fail_sector = Some(2048);
        let c = Clock::new();
        let mut wb = WriteBehind::new(8);
        write_behind(&mut d, &c, &mut wb, 1 << 20, &alloc::vec![1u8; 1 << 20]).unwrap();
        // A read of elsewhere waits for the writes but does not take their error.
        settle(&mut d, &c, &mut wb).unwrap();
        let mut r = alloc::vec![0u8; 4096];
        read(&mut d, &c, 0, &mut r).unwrap();
        // The next sync reports it, once: the filesystem keeps what it means.
        assert_eq!(
            drain(&mut d, &c, &mut wb),
            Err(SyncError::Device(BlockError::Io))
        );
        assert_eq!(drain(&mut d, &c, &mut wb), Ok(()));
        // Later writes are the device's to fail or not: this one lands.
        write_behind(&mut d, &c, &mut wb, 0, &alloc::vec![2u8; 4096]).unwrap();
        assert_eq!(drain(&mut d, &c, &mut wb), Ok(()));
        read(&mut d, &c, 0, &mut r).unwrap();
        assert_eq!(r, alloc::vec![2u8; 4096]);
        // A write lost again is reported again.
        write_behind(&mut d, &c, &mut wb, 2048 * 512, &alloc::vec![3u8; 4096]).unwrap();
        assert_eq!(
            drain(&mut d, &c, &mut wb),
            Err(SyncError::Device(BlockError::Io))
        );
    }

    #[test]
    fn a_write_error_seen_by_a_later_write_waits_for_the_next_drain() {
        let mut d = fake_disk(4 << 20, 256);
        d.fail_sector = Some(2048);
        let c = Clock::new();
        let mut wb = WriteBehind::new(8);
        write_behind(&mut d, &c, &mut wb, 1 << 20, &alloc::vec![1u8; 4096]).unwrap();
        // the later writes reap the failed answer but are accepted themselves
        for _ in 0..10 {
            write_behind(&mut d, &c, &mut wb, 0, &alloc::vec![3u8; 4096]).unwrap();
        }
        assert_eq!(
            drain(&mut d, &c, &mut wb),
            Err(SyncError::Device(BlockError::Io))
        );
        let mut r = alloc::vec![0u8; 4096];
        read(&mut d, &c, 0, &mut r).unwrap();
        assert_eq!(r, alloc::vec![3u8; 4096], "the later writes landed");
    }

    #[test]
    fn write_behinds_sharing_a_disk_never_swallow_each_others_answers() {
        // Two filesystems on one disk's partitions: each drains only its own
        // write-behind before a read, and that read's poll collects the other's
        // answers too. They must reach their owner, failures included.
        let mut d = fake_disk(8 << 20, 256);
        d.delay = 3;
        d.fail_sector = Some(6 << 11); // a write of the second filesystem fails
        let c = Clock::new();
        let mut p1 = WriteBehind::new(8);
        let mut p2 = WriteBehind::new(8);
        write_behind(&mut d, &c, &mut p2, 6 << 20, &alloc::vec![0xc3u8; 1 << 20]).unwrap();
        write_behind(&mut d, &c, &mut p2, 7 << 20, &alloc::vec![0xd4u8; 4096]).unwrap();
        assert_eq!(p2.in_flight(), 2);
        // The first filesystem writes, drains and reads: its polls take every answer.
        write_behind(&mut d, &c, &mut p1, 0, &alloc::vec![0xa1u8; 4096]).unwrap();
        drain(&mut d, &c, &mut p1).unwrap();
        let mut r = alloc::vec![0u8; 4096];
        read(&mut d, &c, 0, &mut r).unwrap();
        assert!(r.iter().all(|&x| x == 0xa1));
        assert_eq!(d.in_flight(), 0, "the backend answered everything");
        // A raw-disk command beside them (a flush) sees nothing of theirs either.
        flush(&mut d, &c).unwrap();
        // The second drains at once (no timeout: the clock moves 1 ms per look) and
        // gets its own failure, not the first's success.
        let t0 = c.t.get();
        assert_eq!(
            drain(&mut d, &c, &mut p2),
            Err(SyncError::Device(BlockError::Io))
        );
        assert_eq!(p2.in_flight(), 0);
        assert!(
            c.t.get() - t0 < 1_000_000_000,
            "drained without waiting out a timeout"
        );
        assert!(d.data[7 << 20..(7 << 20) + 4096].iter().all(|&x| x == 0xd4));
        assert_eq!(d.bufs_made, d.pool.len(), "every buffer back");
        // Nothing is kept for a write-behind once it is gone.
        let e2 = p2.epoch;
        drop(p2);
        assert!(STRAY.lock().iter().all(|(e, _)| *e != e2));
    }

    #[test]
    fn overlapping_write_behind_waits_for_the_older_write() {
        let mut d = fake_disk(1 << 20, 11);
        d.lifo = true; // the backend answers the newest first
        d.delay = 10; // and only after all five are queued
        let c = Clock::new();
        let mut wb = WriteBehind::new(16);
        for v in 1..=5u8 {
            // The same block rewritten: a bitmap or an inode table block.
            write_behind(&mut d, &c, &mut wb, 8192, &[v; 1024]).unwrap();
        }
        drain(&mut d, &c, &mut wb).unwrap();
        assert!(
            d.data[8192..9216].iter().all(|&x| x == 5),
            "the last write wins"
        );
    }

    #[test]
    fn a_silent_backend_times_out_write_behind() {
        let mut d = fake_disk(4 << 20, 11);
        d.silent = true;
        let c = Clock::new();
        let mut wb = WriteBehind::new(2);
        let r = write_behind(&mut d, &c, &mut wb, 0, &alloc::vec![0u8; 1 << 20]);
        assert_eq!(r, Err(SyncError::Timeout));
        assert_eq!(drain(&mut d, &c, &mut wb), Err(SyncError::Timeout));
    }

    #[test]
    fn broken_device_fails_fast() {
        let mut d = fake_disk(1 << 20, 11);
        d.broken = Some("bad response id".into());
        let c = Clock::new();
        let mut b = [0u8; 512];
        assert!(matches!(
            read(&mut d, &c, 0, &mut b),
            Err(SyncError::Device(BlockError::Broken(_)))
        ));
    }
}
