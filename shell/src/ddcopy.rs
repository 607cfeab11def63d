//! The dd engine: moves data between `/dev/zero`, `/dev/urandom`, `/dev/null` and
//! block devices, the way the original report measured disks (GNU coreutils `dd`,
//! `dd.c`, for the wording of its messages).
//!
//! Data goes straight into the disks' I/O buffers (granted pages when the backend
//! has persistent grants): `/dev/zero` and `/dev/urandom` are generated into them,
//! and a disk-to-disk copy hands the buffers a read filled to the write, with no
//! copy at all. Writes are merged into requests of up to the device's segment limit
//! and kept in flight up to the ring size (like a page cache writing back);
//! `oflag=direct` sends each output block on its own and waits for it, as O_DIRECT
//! does; `oflag=dsync` flushes after every block; `conv=fsync` flushes at the end.
//!
//! The engine knows no kernel: the disks are any [`BlockDevice`], and the clock,
//! Ctrl-C, the console and the disk table come from a [`DdHost`] (the kernel's in
//! `kernel/src/shell/dd.rs`; fakes in the tests below).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_drivers::blkfront::{BlockDevice, BlockError, BlockOp, BlockRequest, Completion, IoBuf};
use xenlet_xen::shared::PAGE_BYTES;

use crate::dd::{self, DdArgs, Status};

/// What the engine needs from its surroundings.
pub trait DdHost {
    /// The disks' type.
    type Disk: BlockDevice;
    /// Monotonic time in ns.
    fn now_ns(&self) -> u64;
    /// Whether Ctrl-C was typed since the last look (and consumes it).
    fn take_interrupt(&mut self) -> bool;
    /// Writes `text` to the console (progress lines).
    fn print(&mut self, text: &str);
    /// The names of the disks (`xvda`, …), in the order [`DdHost::with_disks`] gives them.
    fn disk_names(&self) -> Vec<String>;
    /// Runs `f` over every disk (the disk table held only meanwhile).
    fn with_disks<R>(&mut self, f: impl FnOnce(&mut Self, &mut [Self::Disk]) -> R) -> R;
    /// Whether the disk's backend is going away (`xl block-detach`).
    fn detaching(&self, disk: &Self::Disk) -> bool;
    /// Sends a flush to `disk` (nothing else in flight) and waits for it.
    fn flush(&mut self, disk: &mut Self::Disk) -> Result<(), BlockError>;
    /// A point between two steps of the copy where it holds no disk (called outside
    /// [`DdHost::with_disks`]): the kernel may suspend the domain here (`xl save`),
    /// reconnecting the disks meanwhile; requests in flight stay with their disk and
    /// are answered after. Returns whether it did: the clock then jumped by the time
    /// the domain was away, which is no backend's silence.
    fn checkpoint(&mut self) -> bool {
        false
    }
}

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

/// A resolved copy between devices.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Input.
    pub source: Source,
    /// Output.
    pub sink: Sink,
    /// Output block size (bytes), for `oflag=direct`/`dsync` granularity.
    pub obs: u64,
    /// `oflag=direct`.
    pub direct: bool,
    /// Offsets, byte count, syncs and progress.
    pub transfer: Transfer,
}

/// What every dd engine (this one over disks, the kernel's over files) takes the
/// same way from the operands and GNU's plan: where each side starts, how much is
/// copied, how the output is synced, whether progress is shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transfer {
    /// Input offset in bytes.
    pub skip_bytes: u64,
    /// Output offset in bytes.
    pub seek_bytes: u64,
    /// Bytes to copy; `None` = until an end (input or output).
    pub count_bytes: Option<u64>,
    /// `oflag=dsync` / `oflag=sync`.
    pub dsync: bool,
    /// `conv=fsync` / `conv=fdatasync`.
    pub fsync: bool,
    /// `status=progress`.
    pub progress: bool,
}

impl Transfer {
    /// The transfer of operands `a` where GNU's plan `gp` over them puts it: the
    /// bytes `count=` lets through are its whole records of `ibs` plus the tail.
    pub fn new(a: &DdArgs, gp: &dd::Plan) -> Transfer {
        Transfer {
            skip_bytes: gp.in_offset,
            seek_bytes: gp.out_offset,
            count_bytes: gp
                .max_records
                .map(|r| r.saturating_mul(a.ibs).saturating_add(gp.max_bytes)),
            dsync: a.oflag.dsync || a.oflag.sync,
            fsync: a.conv.fsync || a.conv.fdatasync,
            progress: a.status == Status::Progress,
        }
    }
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
pub struct Xoshiro([u64; 4]);

impl Xoshiro {
    /// A generator whose state is spread from `seed` (splitmix64).
    pub fn seeded(seed: u64) -> Self {
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

    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
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
            format!("{what} '/dev/{name}': No space left on device")
        }
        e => format!("{what} '/dev/{name}': {e}"),
    }
}

/// `status=progress`: GNU's once-a-second line (shell's `dd::Progress`).
struct Progress {
    on: bool,
    start_ns: u64,
    gnu: crate::dd::Progress,
}

impl Progress {
    fn tick<H: DdHost>(&mut self, host: &mut H, bytes: u64) {
        if !self.on {
            return;
        }
        let elapsed = host.now_ns().saturating_sub(self.start_ns);
        if let Some(line) = self.gnu.poll(bytes, elapsed) {
            host.print(&line);
        }
    }
    fn finish<H: DdHost>(&mut self, host: &mut H) {
        if self.on {
            host.print(self.gnu.finish());
        }
    }
}

/// Seconds without any completion after which a copy fails with an I/O error.
const REQUEST_DEADLINE_S: u64 = 30;

/// Runs the copy; Ctrl-C ([`DdHost::take_interrupt`]) stops it with the statistics
/// so far.
pub fn run<H: DdHost>(plan: &Plan, host: &mut H) -> Outcome {
    let start = host.now_ns();
    let mut out = Outcome::default();
    let mut progress = Progress {
        on: plan.transfer.progress,
        start_ns: start,
        gnu: crate::dd::Progress::new(),
    };
    let result = match (&plan.source, &plan.sink) {
        (Source::Disk(a), Sink::Disk(b)) if a == b => Err(String::from(
            "input and output are the same disk; not supported",
        )),
        (Source::Disk(_), _) | (_, Sink::Disk(_)) => {
            with_disks(plan, host, &mut out, &mut progress)
        }
        (_, Sink::Null) => {
            // Generated data to nowhere: account it, as dd does.
            let n = plan.transfer.count_bytes.unwrap_or(0);
            if plan.transfer.count_bytes.is_none() {
                Err(String::from(
                    "copying /dev/zero or /dev/urandom to /dev/null needs count=",
                ))
            } else {
                let mut rng = Xoshiro::seeded(start);
                let mut chunk = [0u8; 4096];
                let mut done = 0;
                while done < n {
                    if done % (1 << 20) == 0 && host.take_interrupt() {
                        break;
                    }
                    if plan.source == Source::Urandom {
                        for w in chunk.chunks_exact_mut(8) {
                            w.copy_from_slice(&rng.next().to_le_bytes());
                        }
                    }
                    done += (n - done).min(4096);
                    progress.tick(host, done);
                }
                out.bytes_in = done;
                out.bytes_out = done;
                Ok(())
            }
        }
    };
    progress.finish(host);
    out.elapsed_ns = host.now_ns().saturating_sub(start);
    if let Err(e) = result {
        out.error = Some(e);
    }
    out
}

/// Input and output sides resolved against the disk table (indices).
fn with_disks<H: DdHost>(
    plan: &Plan,
    host: &mut H,
    out: &mut Outcome,
    progress: &mut Progress,
) -> Result<(), String> {
    let names = host.disk_names();
    let find = |n: &String| {
        let n = n.strip_prefix("/dev/").unwrap_or(n);
        names
            .iter()
            .position(|x| x == n)
            .ok_or_else(|| format!("failed to open '/dev/{n}': No such device"))
    };
    let src = match &plan.source {
        Source::Disk(n) => Some(find(n)?),
        _ => None,
    };
    let dst = match &plan.sink {
        Sink::Disk(n) => Some(find(n)?),
        Sink::Null => None,
    };
    copy(plan, host, src, dst, out, progress)
}

struct Pending {
    /// Bytes this request carries.
    bytes: usize,
    /// A read whose buffers go to the output next.
    read_for_write_at: Option<u64>,
}

/// The pipelined copy. `src`/`dst` index the disk table, which is held for one
/// step at a time ([`Copy::step`]): between two steps the host has its
/// [`DdHost::checkpoint`].
fn copy<H: DdHost>(
    plan: &Plan,
    host: &mut H,
    src: Option<usize>,
    dst: Option<usize>,
    out: &mut Outcome,
    progress: &mut Progress,
) -> Result<(), String> {
    let names = host.disk_names();
    let mut c = host.with_disks(|host, disks| Copy::new(plan, host, disks, src, dst))?;
    loop {
        if host.checkpoint() {
            // the time away is not a backend's: its deadline starts again
            c.last_progress = host.now_ns();
        }
        // The table is the same between steps (disks come and go only between
        // commands), but a copy never writes a disk it did not start on.
        if host.disk_names() != names {
            return Err(String::from("the disks changed under the copy; stopped"));
        }
        let r = host.with_disks(|host, disks| c.step(plan, host, disks, out, progress));
        match r {
            Step::More => {}
            Step::Drained => break,
            Step::Failed(e) => return Err(e),
        }
    }
    host.with_disks(|host, disks| c.finish(plan, host, disks))
}

/// How a step of the copy ended.
enum Step {
    /// Work is left.
    More,
    /// Nothing in flight and nothing more to issue.
    Drained,
    /// The copy failed at once (no answer from the backend).
    Failed(String),
}

/// The copy's state between steps.
struct Copy {
    src: Option<usize>,
    dst: Option<usize>,
    out_size: Option<u64>,
    total: u64,
    req_pages: usize,
    depth: usize,
    rng: Xoshiro,
    /// Bytes handed to the first stage.
    issued: u64,
    in_flight: Vec<(u64, Pending)>,
    next_tag: u64,
    done: Vec<Completion>,
    error: Option<String>,
    since_flush: u64,
    /// Ctrl-C stops issuing; what is in flight completes (its pages are granted),
    /// and the statistics so far are printed, as GNU dd does on SIGINT.
    interrupted: bool,
    last_progress: u64,
    last_look: u64,
}

impl Copy {
    /// Checks the plan against the disks and sizes the copy.
    fn new<H: DdHost>(
        plan: &Plan,
        host: &mut H,
        disks: &mut [H::Disk],
        src: Option<usize>,
        dst: Option<usize>,
    ) -> Result<Copy, String> {
        let in_size = src.map(|i| disks[i].info().bytes());
        let out_size = dst.map(|i| disks[i].info().bytes());
        for (v, what) in [
            (plan.transfer.skip_bytes, "skip"),
            (plan.transfer.seek_bytes, "seek"),
        ] {
            if v % 512 != 0 {
                return Err(format!("{what} offset {v} is not a multiple of 512 bytes"));
            }
        }
        if !plan.obs.is_multiple_of(512) && dst.is_some() {
            return Err(String::from(
                "output block size must be a multiple of 512 for a disk",
            ));
        }
        if let Some(sz) = in_size {
            if plan.transfer.skip_bytes > sz {
                return Err(String::from("'/dev/input': cannot skip: Invalid argument"));
            }
        }
        // How much to move: count, else to the end of the input disk, else to the end
        // of the output disk (where GNU dd stops with "No space left on device").
        let mut total = match (plan.transfer.count_bytes, in_size) {
            (Some(c), _) => c,
            (None, Some(sz)) => sz - plan.transfer.skip_bytes,
            (None, None) => u64::MAX,
        };
        if let Some(sz) = in_size {
            total = total.min(sz - plan.transfer.skip_bytes); // reads stop at the end of the input
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
        if plan.direct || plan.transfer.dsync {
            req_pages = req_pages.min(((plan.obs as usize).div_ceil(PAGE_BYTES)).max(1));
        }
        let depth = if plan.direct || plan.transfer.dsync {
            1
        } else {
            usize::MAX
        };
        let now = host.now_ns();
        Ok(Copy {
            src,
            dst,
            out_size,
            total,
            req_pages,
            depth,
            rng: Xoshiro::seeded(now | 1),
            issued: 0,
            in_flight: Vec::new(),
            next_tag: 1,
            done: Vec::new(),
            error: None,
            since_flush: 0,
            interrupted: false,
            last_progress: now,
            last_look: now,
        })
    }

    /// One step: issue while there is work, room and buffers; collect the answers;
    /// wait for more if none came.
    fn step<H: DdHost>(
        &mut self,
        plan: &Plan,
        host: &mut H,
        disks: &mut [H::Disk],
        out: &mut Outcome,
        progress: &mut Progress,
    ) -> Step {
        let (src, dst, total) = (self.src, self.dst, self.total);
        if !self.interrupted && host.take_interrupt() {
            self.interrupted = true;
        }
        // A disk being detached (`xl block-detach`): stop issuing, let what is in
        // flight complete, and fail with an I/O error.
        if self.error.is_none() && host.now_ns().saturating_sub(self.last_look) >= 1_000_000_000 {
            self.last_look = host.now_ns();
            for (i, writing) in [(src, false), (dst, true)] {
                if let Some(i) = i {
                    if host.detaching(&disks[i]) {
                        self.error = Some(format!(
                            "error {} '/dev/{}': Input/output error (the disk is being detached)",
                            if writing { "writing" } else { "reading" },
                            disks[i].info().name
                        ));
                    }
                }
            }
        }
        // Issue while there is work, room and buffers.
        while self.error.is_none()
            && !self.interrupted
            && self.issued < total
            && self.in_flight.len() < self.depth
        {
            let issued = self.issued;
            let mut bytes = (total - issued).min((self.req_pages * PAGE_BYTES) as u64);
            if let (Some(sz), Some(_)) = (self.out_size, dst) {
                let room = sz.saturating_sub(plan.transfer.seek_bytes + issued);
                if room == 0 {
                    if self.in_flight.is_empty() {
                        self.error = Some(disk_err(
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
            let tag = self.next_tag;
            self.next_tag += 1;
            let req = match (src, dst) {
                (Some(_), _) => BlockRequest {
                    tag,
                    op: BlockOp::Read,
                    sector: (plan.transfer.skip_bytes + issued) / 512,
                    bytes: bytes as usize,
                    bufs,
                },
                // `run` never brings a copy without a disk here: no input disk means
                // an output disk.
                (None, _) => {
                    for (i, b) in bufs.iter().enumerate() {
                        fill(
                            b,
                            &plan.source,
                            &mut self.rng,
                            bytes as usize - i * PAGE_BYTES,
                        );
                    }
                    BlockRequest {
                        tag,
                        op: BlockOp::Write,
                        sector: (plan.transfer.seek_bytes + issued) / 512,
                        bytes: bytes as usize,
                        bufs,
                    }
                }
            };
            let read_for_write_at = match (src, dst) {
                (Some(_), Some(_)) => Some(plan.transfer.seek_bytes + issued),
                _ => None,
            };
            match disks[first].submit(req) {
                Ok(()) => {
                    self.in_flight.push((
                        tag,
                        Pending {
                            bytes: bytes as usize,
                            read_for_write_at,
                        },
                    ));
                    self.issued += bytes;
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
                    self.error = Some(disk_err(disk_name(disks, Some(first)), src.is_none(), &e));
                    break;
                }
            }
        }
        for d in disks.iter_mut() {
            d.kick();
        }
        if self.in_flight.is_empty() {
            return Step::Drained;
        }
        // Collect completions from both sides.
        let mut got_any = false;
        for idx in [src, dst].into_iter().flatten() {
            let mut done = core::mem::take(&mut self.done);
            done.clear();
            disks[idx].poll(&mut done);
            for c in done.drain(..) {
                got_any = true;
                handle(
                    plan,
                    host,
                    disks,
                    src,
                    dst,
                    idx,
                    c,
                    &mut self.in_flight,
                    out,
                    &mut self.error,
                    &mut self.next_tag,
                    &mut self.since_flush,
                );
            }
            self.done = done;
        }
        progress.tick(
            host,
            out.bytes_out
                .max(if dst.is_none() { out.bytes_in } else { 0 }),
        );
        if got_any {
            self.last_progress = host.now_ns();
        } else {
            // A backend that stops answering fails the copy instead of hanging the
            // shell; its requests stay with the driver (their pages stay granted).
            if host.now_ns().saturating_sub(self.last_progress)
                >= REQUEST_DEADLINE_S * 1_000_000_000
            {
                let who = String::from(disk_name(disks, src.or(dst)));
                return Step::Failed(format!(
                    "error {} '/dev/{who}': Input/output error (no answer from the backend in {REQUEST_DEADLINE_S} s)",
                    if src.is_some() { "reading" } else { "writing" }
                ));
            }
            disks[src.or(dst).unwrap_or(0)].wait();
        }
        Step::More
    }

    /// After the last answer: the flush `conv=fsync`/`oflag=dsync` ask for, and the
    /// copy's result.
    fn finish<H: DdHost>(
        mut self,
        plan: &Plan,
        host: &mut H,
        disks: &mut [H::Disk],
    ) -> Result<(), String> {
        if self.error.is_none()
            && (plan.transfer.fsync || plan.transfer.dsync)
            && self.since_flush > 0
        {
            if let Some(d) = self.dst {
                if let Err(e) = flush_wait(host, &mut disks[d]) {
                    self.error = Some(format!(
                        "fsync failed for '/dev/{}': {e}",
                        disks[d].info().name
                    ));
                }
            }
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn disk_name<D: BlockDevice>(disks: &[D], idx: Option<usize>) -> &str {
    idx.and_then(|i| disks.get(i))
        .map_or("?", |d| d.info().name.as_str())
}

#[allow(clippy::too_many_arguments)]
fn handle<H: DdHost>(
    plan: &Plan,
    host: &mut H,
    disks: &mut [H::Disk],
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
        if plan.transfer.dsync {
            if let Err(e) = flush_wait(host, &mut disks[from]) {
                *error = Some(format!(
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
fn flush_wait<H: DdHost>(host: &mut H, d: &mut H::Disk) -> Result<(), BlockError> {
    match host.flush(d) {
        Err(BlockError::NotSupported) => Ok(()),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use xenlet_drivers::blkfront::MemDisk;

    /// The kernel stand-in: a clock that advances a step (1 ms) per look, Ctrl-C after a
    /// number of looks, a console that keeps what it is given.
    struct Host {
        disks: Vec<MemDisk>,
        t: Cell<u64>,
        /// How far the clock moves per look.
        step_ns: u64,
        interrupt_at: Option<u32>,
        looks: u32,
        printed: String,
        /// What a check-point does (a suspend, a table that changes); whether the
        /// domain was suspended.
        on_checkpoint: fn(&mut Host) -> bool,
        /// Check-points seen, and of those, how many found requests in flight.
        checkpoints: (u32, u32),
    }

    impl Host {
        fn new(disks: Vec<MemDisk>) -> Host {
            Host {
                disks,
                t: Cell::new(0),
                step_ns: 1_000_000,
                interrupt_at: None,
                looks: 0,
                printed: String::new(),
                on_checkpoint: |_| false,
                checkpoints: (0, 0),
            }
        }
    }

    impl DdHost for Host {
        type Disk = MemDisk;
        fn now_ns(&self) -> u64 {
            self.t.set(self.t.get() + self.step_ns);
            self.t.get()
        }
        fn take_interrupt(&mut self) -> bool {
            self.looks += 1;
            self.interrupt_at.is_some_and(|n| self.looks >= n)
        }
        fn print(&mut self, text: &str) {
            self.printed.push_str(text);
        }
        fn disk_names(&self) -> Vec<String> {
            self.disks.iter().map(|d| d.info.name.clone()).collect()
        }
        fn with_disks<R>(&mut self, f: impl FnOnce(&mut Self, &mut [MemDisk]) -> R) -> R {
            let mut disks = core::mem::take(&mut self.disks);
            let r = f(self, &mut disks);
            self.disks = disks;
            r
        }
        fn detaching(&self, disk: &MemDisk) -> bool {
            disk.detaching
        }
        fn flush(&mut self, disk: &mut MemDisk) -> Result<(), BlockError> {
            disk.log.push((BlockOp::Flush, 0, 0));
            Ok(())
        }
        fn checkpoint(&mut self) -> bool {
            // the table is the host's again here: not held by the copy
            assert!(!self.disks.is_empty(), "a check-point inside with_disks");
            self.checkpoints.0 += 1;
            if self.disks.iter().any(|d| d.in_flight() > 0) {
                self.checkpoints.1 += 1;
            }
            (self.on_checkpoint)(self)
        }
    }

    fn plan(source: Source, sink: Sink) -> Plan {
        Plan {
            source,
            sink,
            obs: 512,
            direct: false,
            transfer: Transfer::default(),
        }
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 512) as u8).collect()
    }

    fn disk(name: &str) -> Source {
        Source::Disk(name.into())
    }

    #[test]
    fn disk_to_disk_copies_the_bytes_at_skip_and_seek() {
        let a = MemDisk::new("xvda", pattern(64 << 10), 11);
        let b = MemDisk::new("xvdb", vec![0xee; 64 << 10], 4);
        let mut h = Host::new(vec![a, b]);
        let mut p = plan(disk("/dev/xvda"), Sink::Disk("xvdb".into()));
        p.transfer.skip_bytes = 1024;
        p.transfer.seek_bytes = 4096;
        p.transfer.count_bytes = Some(40 << 10);
        let o = run(&p, &mut h);
        assert_eq!(o.error, None);
        assert_eq!((o.bytes_in, o.bytes_out), (40 << 10, 40 << 10));
        let src = pattern(64 << 10);
        let dst = &h.disks[1].data;
        assert_eq!(&dst[4096..4096 + (40 << 10)], &src[1024..1024 + (40 << 10)]);
        assert!(dst[..4096].iter().all(|&b| b == 0xee));
        assert!(dst[4096 + (40 << 10)..].iter().all(|&b| b == 0xee));
        // Requests are merged up to the smaller segment limit: 4 pages.
        assert!(h.disks[1].log.iter().all(|r| r.2 <= 4 * PAGE_BYTES));
        assert_eq!(h.disks[1].flushes(), 0);
    }

    #[test]
    fn check_points_come_between_steps_with_requests_in_flight_and_the_copy_goes_on() {
        let a = MemDisk::new("xvda", pattern(256 << 10), 11);
        let b = MemDisk::new("xvdb", vec![0xee; 256 << 10], 4);
        let mut h = Host::new(vec![a, b]);
        // a suspend at a check-point: the disks reconnect, what was in flight is
        // answered after (the fake answers at the next poll, as a resumed blkfront
        // that sent it again)
        h.on_checkpoint = |h| {
            // the backend goes quiet at the second check-point; at the third the
            // domain is saved and restored, 50 s away on the clock (longer than the
            // backend's deadline), and the new backend answers a step later
            match h.checkpoints.0 {
                2 => h.disks[0].silent = true,
                3 => {
                    h.t.set(h.t.get() + 50_000_000_000);
                    return true;
                }
                4 => h.disks[0].silent = false,
                _ => {}
            }
            false
        };
        let p = plan(disk("/dev/xvda"), Sink::Disk("xvdb".into()));
        let o = run(&p, &mut h);
        assert_eq!(o.error, None);
        assert_eq!(o.bytes_out, 256 << 10);
        assert_eq!(h.disks[1].data, pattern(256 << 10));
        let (seen, busy) = h.checkpoints;
        assert!(seen > 4, "{seen} check-points");
        assert!(busy > 0, "no check-point with requests in flight");
    }

    #[test]
    fn a_disk_table_changed_at_a_check_point_stops_the_copy() {
        let d = MemDisk::new("xvdb", vec![0xaa; 64 << 10], 1);
        let mut h = Host::new(vec![d]);
        h.on_checkpoint = |h| {
            if h.checkpoints.0 == 3 {
                h.disks[0].info.name = String::from("xvdc");
            }
            false
        };
        let mut p = plan(Source::Zero, Sink::Disk("xvdb".into()));
        p.transfer.count_bytes = Some(64 << 10);
        let o = run(&p, &mut h);
        assert_eq!(
            o.error.as_deref(),
            Some("the disks changed under the copy; stopped")
        );
        assert!(o.bytes_out < 64 << 10);
    }

    #[test]
    fn zero_fills_to_the_end_then_no_space_left() {
        let d = MemDisk::new("xvdb", vec![0xaa; 20 << 10], 11);
        let mut h = Host::new(vec![d]);
        let mut p = plan(Source::Zero, Sink::Disk("xvdb".into()));
        p.transfer.seek_bytes = 8192;
        p.transfer.count_bytes = Some(16 << 10);
        let o = run(&p, &mut h);
        assert_eq!(
            o.error.as_deref(),
            Some("error writing '/dev/xvdb': No space left on device")
        );
        assert_eq!(o.bytes_out, 12 << 10);
        assert!(h.disks[0].data[..8192].iter().all(|&b| b == 0xaa));
        assert!(h.disks[0].data[8192..].iter().all(|&b| b == 0));
    }

    #[test]
    fn urandom_is_not_constant_and_null_counts_the_input() {
        let d = MemDisk::new("xvdb", vec![0; 16 << 10], 11);
        let mut h = Host::new(vec![d]);
        let mut p = plan(Source::Urandom, Sink::Disk("xvdb".into()));
        p.transfer.count_bytes = Some(8 << 10);
        assert_eq!(run(&p, &mut h).error, None);
        let written = &h.disks[0].data[..8 << 10];
        assert!(written.iter().filter(|&&b| b == 0).count() < 200);
        assert!(h.disks[0].data[8 << 10..].iter().all(|&b| b == 0));

        let o = run(&plan(disk("xvdb"), Sink::Null), &mut h);
        assert_eq!(
            (o.error, o.bytes_in, o.bytes_out),
            (None, 16 << 10, 16 << 10)
        );
    }

    #[test]
    fn dsync_flushes_every_block_and_fsync_once() {
        let mut p = plan(Source::Zero, Sink::Disk("xvdb".into()));
        p.transfer.count_bytes = Some(16384);
        p.obs = 4096;
        p.transfer.dsync = true;
        let mut h = Host::new(vec![MemDisk::new("xvdb", vec![1; 16384], 11)]);
        assert_eq!(run(&p, &mut h).error, None);
        assert_eq!(h.disks[0].flushes(), 4);
        assert!(h.disks[0]
            .log
            .iter()
            .all(|r| r.0 == BlockOp::Flush || r.2 == 4096));

        p.transfer.dsync = false;
        p.transfer.fsync = true;
        let mut h = Host::new(vec![MemDisk::new("xvdb", vec![1; 16384], 11)]);
        assert_eq!(run(&p, &mut h).error, None);
        assert_eq!(h.disks[0].flushes(), 1);
        assert_eq!(h.disks[0].data, vec![0; 16384]);
        assert_eq!(h.disks[0].log.last().map(|r| r.0), Some(BlockOp::Flush));
    }

    #[test]
    fn errors_use_gnu_wording() {
        let mut h = Host::new(vec![MemDisk::new("xvda", pattern(8192), 11)]);
        let o = run(&plan(disk("xvda"), Sink::Disk("xvda".into())), &mut h);
        assert_eq!(
            o.error.as_deref(),
            Some("input and output are the same disk; not supported")
        );
        let o = run(&plan(disk("/dev/xvdz"), Sink::Null), &mut h);
        assert_eq!(
            o.error.as_deref(),
            Some("failed to open '/dev/xvdz': No such device")
        );
        let o = run(&plan(Source::Zero, Sink::Null), &mut h);
        assert_eq!(
            o.error.as_deref(),
            Some("copying /dev/zero or /dev/urandom to /dev/null needs count=")
        );
        let mut p = plan(disk("xvda"), Sink::Null);
        p.transfer.skip_bytes = 100;
        assert_eq!(
            run(&p, &mut h).error.as_deref(),
            Some("skip offset 100 is not a multiple of 512 bytes")
        );
        h.disks[0].fail_sector = Some(0);
        let o = run(&plan(disk("xvda"), Sink::Null), &mut h);
        assert_eq!(
            o.error.as_deref(),
            Some("error reading '/dev/xvda': Input/output error")
        );
    }

    #[test]
    fn a_silent_backend_fails_after_the_deadline_and_a_detach_stops_the_copy() {
        let mut d = MemDisk::new("xvda", pattern(8192), 11);
        d.silent = true;
        let mut h = Host::new(vec![d]);
        let o = run(&plan(disk("xvda"), Sink::Null), &mut h);
        assert_eq!(
            o.error.as_deref(),
            Some("error reading '/dev/xvda': Input/output error (no answer from the backend in 30 s)")
        );
        assert!(h.t.get() >= 30_000_000_000);

        let mut d = MemDisk::new("xvdb", vec![0; 1 << 20], 1);
        d.detaching = true;
        d.ring = 1;
        let mut h = Host::new(vec![d]);
        h.step_ns = 100_000_000;
        let mut p = plan(Source::Zero, Sink::Disk("xvdb".into()));
        p.transfer.count_bytes = Some(1 << 20);
        let o = run(&p, &mut h);
        assert_eq!(
            o.error.as_deref(),
            Some("error writing '/dev/xvdb': Input/output error (the disk is being detached)")
        );
        assert!(o.bytes_out < 1 << 20, "stopped early: {}", o.bytes_out);
    }

    #[test]
    fn ctrl_c_stops_with_the_bytes_so_far_and_progress_is_printed() {
        let mut d = MemDisk::new("xvdb", vec![0; 1 << 20], 1);
        d.ring = 1;
        let mut h = Host::new(vec![d]);
        h.interrupt_at = Some(10);
        h.step_ns = 300_000_000;
        let mut p = plan(Source::Zero, Sink::Disk("xvdb".into()));
        p.transfer.count_bytes = Some(1 << 20);
        p.transfer.progress = true;
        let o = run(&p, &mut h);
        assert_eq!(o.error, None);
        assert!(o.bytes_out > 0 && o.bytes_out < 1 << 20, "{}", o.bytes_out);
        assert_eq!(o.bytes_out % 4096, 0);
        assert!(!h.printed.is_empty());
    }

    #[test]
    fn random_plans_never_panic_and_never_copy_more_than_asked() {
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..3000 {
            let in_len = (next() % 40) as usize * 512;
            let out_len = (next() % 40) as usize * 512;
            let mut a = MemDisk::new("xvda", pattern(in_len), 1 + (next() % 12) as u32);
            let mut b = MemDisk::new("xvdb", vec![0; out_len], 1 + (next() % 12) as u32);
            a.ring = 1 + (next() % 4) as usize;
            b.ring = 1 + (next() % 4) as usize;
            if next() % 8 == 0 {
                a.fail_sector = Some(next() % 40);
            }
            let source = match next() % 4 {
                0 => Source::Zero,
                1 => Source::Urandom,
                2 => disk("xvda"),
                _ => disk("xvdc"),
            };
            let sink = match next() % 3 {
                0 => Sink::Null,
                _ => Sink::Disk("xvdb".into()),
            };
            let mut p = plan(source, sink);
            p.transfer.skip_bytes = next() % 24_000;
            p.transfer.seek_bytes = next() % 24_000;
            p.obs = next() % 5000;
            p.transfer.count_bytes = (next() % 2 == 0).then(|| next() % 30_000);
            p.direct = next() % 4 == 0;
            p.transfer.dsync = next() % 4 == 0;
            p.transfer.fsync = next() % 4 == 0;
            let mut h = Host::new(vec![a, b]);
            if next() % 8 == 0 {
                h.interrupt_at = Some((next() % 20) as u32);
            }
            let o = run(&p, &mut h);
            if let Some(c) = p.transfer.count_bytes {
                assert!(o.bytes_in <= c && o.bytes_out <= c, "{p:?} {o:?}");
            }
            assert!(o.bytes_out <= o.bytes_in.max(out_len as u64), "{p:?} {o:?}");
            assert_eq!(h.disks[1].data.len(), out_len);
        }
    }
}
