//! The dd engine: moves data between `/dev/zero`, `/dev/urandom`, `/dev/null` and
//! the blkfront disks, the way the original report measured disks.
//!
//! Data goes straight into the disks' I/O buffers (granted pages when the backend
//! has persistent grants): `/dev/zero` and `/dev/urandom` are generated into them,
//! and a disk-to-disk copy hands the buffers a read filled to the write, with no
//! copy at all. Writes are merged into requests of up to the device's segment limit
//! and kept in flight up to the ring size (like a page cache writing back);
//! `oflag=direct` sends each output block on its own and waits for it, as O_DIRECT
//! does; `oflag=dsync` flushes after every block; `conv=fsync` flushes at the end.

use crate::dev::frontends::{self, Disk};
use crate::{io::console, time::clock};
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_drivers::blkfront::{BlockDevice, BlockError, BlockOp, BlockRequest, Completion, IoBuf};
use xenlet_xen::shared::PAGE_BYTES;

/// Where data comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// `/dev/zero`.
    Zero,
    /// `/dev/urandom`: a fast PRNG (xoshiro256**), seeded from the TSC.
    Urandom,
    /// A disk.
    Disk(String),
}

/// Where data goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sink {
    /// `/dev/null`.
    Null,
    /// A disk.
    Disk(String),
}

/// A resolved transfer.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Input.
    pub source: Source,
    /// Output.
    pub sink: Sink,
    /// Output block size (bytes), for `oflag=direct`/`dsync` granularity.
    pub obs: u64,
    /// Input offset in bytes.
    pub skip_bytes: u64,
    /// Output offset in bytes.
    pub seek_bytes: u64,
    /// Bytes to copy; `None` = until an end (input or output).
    pub count_bytes: Option<u64>,
    /// `oflag=direct`.
    pub direct: bool,
    /// `oflag=dsync` / `oflag=sync`.
    pub dsync: bool,
    /// `conv=fsync` / `conv=fdatasync`.
    pub fsync: bool,
    /// `status=progress`.
    pub progress: bool,
}

/// What happened.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Bytes read from the input.
    pub bytes_in: u64,
    /// Bytes written to the output.
    pub bytes_out: u64,
    /// Elapsed time in ns.
    pub elapsed_ns: u64,
    /// The error that stopped the copy (GNU wording, without the `dd: ` prefix).
    pub error: Option<String>,
}

/// xoshiro256** (Blackman & Vigna), for `/dev/urandom`-speed pseudo-random data.
pub(crate) struct Xoshiro([u64; 4]);

impl Xoshiro {
    pub(crate) fn seeded(seed: u64) -> Self {
        // splitmix64 to spread the seed over the state.
        let mut z = seed;
        let mut s = [0u64; 4];
        for v in &mut s {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            *v = x ^ (x >> 31);
        }
        Xoshiro(s)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let s = &mut self.0;
        let r = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        r
    }
}

fn fill(buf: &IoBuf, source: &Source, rng: &mut Xoshiro, bytes: usize) {
    match source {
        Source::Zero => buf.zero(),
        Source::Urandom => {
            let mut chunk = [0u8; 512];
            let mut off = 0;
            while off < bytes.min(PAGE_BYTES) {
                for w in chunk.chunks_exact_mut(8) {
                    w.copy_from_slice(&rng.next().to_le_bytes());
                }
                buf.write_at(off, &chunk);
                off += chunk.len();
            }
        }
        Source::Disk(_) => {}
    }
}

fn disk_err(name: &str, writing: bool, e: &BlockError) -> String {
    let what = if writing {
        "error writing"
    } else {
        "error reading"
    };
    match e {
        BlockError::Invalid("beyond the end of the disk") if writing => {
            alloc::format!("{what} '/dev/{name}': No space left on device")
        }
        e => alloc::format!("{what} '/dev/{name}': {e}"),
    }
}

/// `status=progress`: GNU's once-a-second line (shell's `dd::Progress`).
pub(crate) struct Progress {
    pub(crate) on: bool,
    pub(crate) start_ns: u64,
    pub(crate) gnu: xenlet_shell::dd::Progress,
}

impl Progress {
    pub(crate) fn tick(&mut self, bytes: u64) {
        if !self.on {
            return;
        }
        let elapsed = clock::now().as_nanos().saturating_sub(self.start_ns);
        if let Some(line) = self.gnu.poll(bytes, elapsed) {
            console::write_bytes(line.as_bytes());
        }
    }
    pub(crate) fn finish(&mut self) {
        if self.on {
            console::write_bytes(self.gnu.finish().as_bytes());
        }
    }
}

/// Seconds without any completion after which a copy fails with an I/O error.
const REQUEST_DEADLINE_S: u64 = 30;

/// Runs the copy; Ctrl-C stops it with the statistics so far.
pub fn run(plan: &Plan) -> Outcome {
    let start = clock::now().as_nanos();
    let mut out = Outcome::default();
    let mut progress = Progress {
        on: plan.progress,
        start_ns: start,
        gnu: xenlet_shell::dd::Progress::new(),
    };
    let result = match (&plan.source, &plan.sink) {
        (Source::Disk(a), Sink::Disk(b)) if a == b => Err(String::from(
            "input and output are the same disk; not supported",
        )),
        (Source::Disk(_), _) | (_, Sink::Disk(_)) => with_disks(plan, &mut out, &mut progress),
        (_, Sink::Null) => {
            // Generated data to nowhere: account it, as dd does.
            let n = plan.count_bytes.unwrap_or(0);
            if plan.count_bytes.is_none() {
                Err(String::from(
                    "copying /dev/zero or /dev/urandom to /dev/null needs count=",
                ))
            } else {
                let mut rng = Xoshiro::seeded(start);
                let mut chunk = [0u8; 4096];
                let mut done = 0;
                while done < n {
                    if done % (1 << 20) == 0 && console::take_interrupt() {
                        break;
                    }
                    if plan.source == Source::Urandom {
                        for w in chunk.chunks_exact_mut(8) {
                            w.copy_from_slice(&rng.next().to_le_bytes());
                        }
                    }
                    done += (n - done).min(4096);
                    progress.tick(done);
                }
                out.bytes_in = done;
                out.bytes_out = done;
                Ok(())
            }
        }
    };
    progress.finish();
    out.elapsed_ns = clock::now().as_nanos() - start;
    if let Err(e) = result {
        out.error = Some(e);
    }
    out
}

/// Input and output sides resolved against the disk table (indices).
fn with_disks(plan: &Plan, out: &mut Outcome, progress: &mut Progress) -> Result<(), String> {
    let names: Vec<String> = {
        let mut v = Vec::new();
        frontends::for_each_disk(|d| v.push(d.info().name.clone()));
        v
    };
    let find = |n: &String| {
        let n = n.strip_prefix("/dev/").unwrap_or(n);
        names
            .iter()
            .position(|x| x == n)
            .ok_or_else(|| alloc::format!("failed to open '/dev/{n}': No such device"))
    };
    let src = match &plan.source {
        Source::Disk(n) => Some(find(n)?),
        _ => None,
    };
    let dst = match &plan.sink {
        Sink::Disk(n) => Some(find(n)?),
        Sink::Null => None,
    };
    frontends::with_all_disks(|disks| copy(plan, disks, src, dst, out, progress))
}

struct Pending {
    /// Bytes this request carries.
    bytes: usize,
    /// A read whose buffers go to the output next.
    read_for_write_at: Option<u64>,
}

/// The pipelined copy. `src`/`dst` index `disks`.
fn copy(
    plan: &Plan,
    disks: &mut [Disk],
    src: Option<usize>,
    dst: Option<usize>,
    out: &mut Outcome,
    progress: &mut Progress,
) -> Result<(), String> {
    let in_size = src.map(|i| disks[i].info().bytes());
    let out_size = dst.map(|i| disks[i].info().bytes());
    for (v, what) in [(plan.skip_bytes, "skip"), (plan.seek_bytes, "seek")] {
        if v % 512 != 0 {
            return Err(alloc::format!(
                "{what} offset {v} is not a multiple of 512 bytes"
            ));
        }
    }
    if !plan.obs.is_multiple_of(512) && dst.is_some() {
        return Err(String::from(
            "output block size must be a multiple of 512 for a disk",
        ));
    }
    if let Some(sz) = in_size {
        if plan.skip_bytes > sz {
            return Err(String::from("'/dev/input': cannot skip: Invalid argument"));
        }
    }
    // How much to move: count, else to the end of the input disk, else to the end of
    // the output disk (where GNU dd stops with "No space left on device").
    let mut total = match (plan.count_bytes, in_size) {
        (Some(c), _) => c,
        (None, Some(sz)) => sz - plan.skip_bytes,
        (None, None) => u64::MAX,
    };
    if let Some(sz) = in_size {
        total = total.min(sz - plan.skip_bytes); // reads stop at the end of the input
    }
    if total % 512 != 0 {
        return Err(String::from(
            "transfer length is not a multiple of 512 bytes",
        ));
    }
    let max_pages = |i: usize| disks[i].info().features.max_segments as usize;
    let mut req_pages = match (src, dst) {
        (Some(s), Some(d)) => max_pages(s).min(max_pages(d)),
        (Some(s), None) => max_pages(s),
        (None, Some(d)) => max_pages(d),
        (None, None) => 1,
    };
    if plan.direct || plan.dsync {
        req_pages = req_pages.min(((plan.obs as usize).div_ceil(PAGE_BYTES)).max(1));
    }
    let depth = if plan.direct || plan.dsync {
        1
    } else {
        usize::MAX
    };
    let mut rng = Xoshiro::seeded(clock::now().as_nanos() | 1);
    let mut issued: u64 = 0; // bytes handed to the first stage
    let mut in_flight: Vec<(u64, Pending)> = Vec::new();
    let mut next_tag: u64 = 1;
    let mut done = Vec::new();
    let mut error: Option<String> = None;
    let mut since_flush: u64 = 0;
    // Ctrl-C stops issuing; what is in flight completes (its pages are granted), and
    // the statistics so far are printed, as GNU dd does on SIGINT.
    let mut interrupted = false;
    let mut last_progress = clock::now();
    let mut last_look = clock::now();

    loop {
        if !interrupted && console::take_interrupt() {
            interrupted = true;
        }
        // A disk being detached (`xl block-detach`): stop issuing, let what is in
        // flight complete, and fail with an I/O error.
        if error.is_none()
            && clock::now()
                .saturating_duration_since(last_look)
                .as_millis()
                >= 1000
        {
            last_look = clock::now();
            for (i, writing) in [(src, false), (dst, true)] {
                if let Some(i) = i {
                    if crate::dev::frontends::backend_closing(disks[i].vdev()) {
                        error = Some(alloc::format!(
                            "error {} '/dev/{}': Input/output error (the disk is being detached)",
                            if writing { "writing" } else { "reading" },
                            disks[i].info().name
                        ));
                    }
                }
            }
        }
        // Issue while there is work, room and buffers.
        while error.is_none() && !interrupted && issued < total && in_flight.len() < depth {
            let mut bytes = (total - issued).min((req_pages * PAGE_BYTES) as u64);
            if let (Some(sz), Some(_)) = (out_size, dst) {
                let room = sz.saturating_sub(plan.seek_bytes + issued);
                if room == 0 {
                    if in_flight.is_empty() {
                        error = Some(disk_err(
                            disk_name(disks, dst),
                            true,
                            &BlockError::Invalid("beyond the end of the disk"),
                        ));
                    }
                    break;
                }
                bytes = bytes.min(room);
            }
            let pages = (bytes as usize).div_ceil(PAGE_BYTES);
            let first = src.or(dst).unwrap_or(0);
            let mut bufs = Vec::with_capacity(pages);
            while bufs.len() < pages {
                match disks[first].alloc_buf() {
                    Some(b) => bufs.push(b),
                    None => break,
                }
            }
            if bufs.len() < pages {
                for b in bufs {
                    disks[first].free_buf(b);
                }
                break; // wait for completions to return buffers
            }
            let tag = next_tag;
            next_tag += 1;
            let req = match (src, dst) {
                (Some(_), _) => BlockRequest {
                    tag,
                    op: BlockOp::Read,
                    sector: (plan.skip_bytes + issued) / 512,
                    bytes: bytes as usize,
                    bufs,
                },
                // `run` never brings a copy without a disk here: no input disk means
                // an output disk.
                (None, _) => {
                    for (i, b) in bufs.iter().enumerate() {
                        fill(b, &plan.source, &mut rng, bytes as usize - i * PAGE_BYTES);
                    }
                    BlockRequest {
                        tag,
                        op: BlockOp::Write,
                        sector: (plan.seek_bytes + issued) / 512,
                        bytes: bytes as usize,
                        bufs,
                    }
                }
            };
            let read_for_write_at = match (src, dst) {
                (Some(_), Some(_)) => Some(plan.seek_bytes + issued),
                _ => None,
            };
            match disks[first].submit(req) {
                Ok(()) => {
                    in_flight.push((
                        tag,
                        Pending {
                            bytes: bytes as usize,
                            read_for_write_at,
                        },
                    ));
                    issued += bytes;
                }
                Err((BlockError::Busy, req)) => {
                    for b in req.bufs {
                        disks[first].free_buf(b);
                    }
                    break;
                }
                Err((e, req)) => {
                    for b in req.bufs {
                        disks[first].free_buf(b);
                    }
                    error = Some(disk_err(disk_name(disks, Some(first)), src.is_none(), &e));
                    break;
                }
            }
        }
        for d in disks.iter_mut() {
            d.kick();
        }
        if in_flight.is_empty() {
            break;
        }
        // Collect completions from both sides.
        let mut got_any = false;
        for idx in [src, dst].into_iter().flatten() {
            done.clear();
            disks[idx].poll(&mut done);
            for c in done.drain(..) {
                got_any = true;
                handle(
                    plan,
                    disks,
                    src,
                    dst,
                    idx,
                    c,
                    &mut in_flight,
                    out,
                    &mut error,
                    &mut next_tag,
                    &mut since_flush,
                );
            }
        }
        progress.tick(
            out.bytes_out
                .max(if dst.is_none() { out.bytes_in } else { 0 }),
        );
        if got_any {
            last_progress = clock::now();
        } else {
            // A backend that stops answering fails the copy instead of hanging the
            // shell; its requests stay with the driver (their pages stay granted).
            if clock::now()
                .saturating_duration_since(last_progress)
                .as_secs()
                >= REQUEST_DEADLINE_S
            {
                let who = String::from(disk_name(disks, src.or(dst)));
                return Err(alloc::format!(
                    "error {} '/dev/{who}': Input/output error (no answer from the backend in {REQUEST_DEADLINE_S} s)",
                    if src.is_some() { "reading" } else { "writing" }
                ));
            }
            disks[src.or(dst).unwrap_or(0)].wait();
        }
    }
    if error.is_none() && dst.is_some() && (plan.fsync || plan.dsync) && since_flush > 0 {
        if let Some(d) = dst {
            if let Err(e) = flush_wait(&mut disks[d]) {
                error = Some(alloc::format!(
                    "fsync failed for '/dev/{}': {e}",
                    disks[d].info().name
                ));
            }
        }
    }
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn disk_name(disks: &[Disk], idx: Option<usize>) -> &str {
    idx.and_then(|i| disks.get(i))
        .map_or("?", |d| d.info().name.as_str())
}

#[allow(clippy::too_many_arguments)]
fn handle(
    plan: &Plan,
    disks: &mut [Disk],
    src: Option<usize>,
    dst: Option<usize>,
    from: usize,
    c: Completion,
    in_flight: &mut Vec<(u64, Pending)>,
    out: &mut Outcome,
    error: &mut Option<String>,
    next_tag: &mut u64,
    since_flush: &mut u64,
) {
    let Some(pos) = in_flight.iter().position(|(t, _)| *t == c.tag) else {
        for b in c.bufs {
            disks[from].free_buf(b);
        }
        return;
    };
    let (_, p) = in_flight.swap_remove(pos);
    // Reads only ever go to the input disk, writes to the output disk (never the same).
    let is_read = Some(from) == src;
    if let Err(e) = &c.result {
        for b in c.bufs {
            disks[from].free_buf(b);
        }
        if error.is_none() {
            *error = Some(disk_err(disk_name(disks, Some(from)), !is_read, e));
        }
        return;
    }
    if is_read {
        out.bytes_in += p.bytes as u64;
        match (p.read_for_write_at, dst) {
            (Some(at), Some(d)) if error.is_none() => {
                // Hand the filled buffers to the output disk: zero copy. Buffers come
                // from the input disk's pool and are granted to its backend, so the
                // output disk (another backend) gets them granted per request.
                let tag = *next_tag;
                *next_tag += 1;
                let req = BlockRequest {
                    tag,
                    op: BlockOp::Write,
                    sector: at / 512,
                    bytes: p.bytes,
                    bufs: c.bufs,
                };
                match disks[d].submit(req) {
                    Ok(()) => in_flight.push((
                        tag,
                        Pending {
                            bytes: p.bytes,
                            read_for_write_at: None,
                        },
                    )),
                    Err((e, req)) => {
                        for b in req.bufs {
                            disks[from].free_buf(b);
                        }
                        *error = Some(disk_err(disk_name(disks, Some(d)), true, &e));
                    }
                }
            }
            (_, None) => {
                // Written to /dev/null: it takes everything.
                out.bytes_out += p.bytes as u64;
                for b in c.bufs {
                    disks[from].free_buf(b);
                }
            }
            _ => {
                for b in c.bufs {
                    disks[from].free_buf(b);
                }
            }
        }
    } else {
        out.bytes_out += p.bytes as u64;
        *since_flush += p.bytes as u64;
        let owner = src.unwrap_or(from);
        for b in c.bufs {
            disks[owner].free_buf(b);
        }
        if src.is_none() {
            out.bytes_in += p.bytes as u64;
        }
        if plan.dsync {
            if let Err(e) = flush_wait(&mut disks[from]) {
                *error = Some(alloc::format!(
                    "error writing '/dev/{}': flush: {e}",
                    disks[from].info().name
                ));
            }
            *since_flush = 0;
        }
    }
}

/// Flushes one disk and waits (nothing else is in flight when this runs); a backend
/// without a flush operation has nothing to flush.
fn flush_wait(d: &mut Disk) -> Result<(), BlockError> {
    match frontends::run_one(d, BlockOp::Flush, 0) {
        Err(BlockError::NotSupported) => Ok(()),
        r => r,
    }
}
