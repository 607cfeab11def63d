//! The disk commands: `dd` (between devices, to and from files: the glue from
//! [`xenlet_shell::dd`]'s arguments and plan to the engines in [`crate::shell::dd`] and
//! [`crate::shell::ddfile`]), `sha256sum` of disks, `lsblk` (blkfront's negotiated
//! features), `sync` (BLKIF_OP_FLUSH_DISKCACHE) and `discard` (BLKIF_OP_DISCARD).

use super::Host;
use crate::shell::fscmds;
use alloc::string::String;
use core::fmt::Write;
use xenlet_shell::commands::disk::{
    discard_args, disk_name, disk_state, lsblk_row, sha256sum_args, Discard, LSBLK_HEADER,
};
use xenlet_shell::{no_args, CmdError, CmdResult};

pub(super) fn dd(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use crate::shell::dd::{Plan, Sink, Source, Transfer};
    use xenlet_shell::dd::{parse, Status};
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            // GNU's message is already prefixed with "dd: ".
            writeln!(out, "{e}")?;
            return Ok(());
        }
    };
    if a.status != Status::None {
        for w in &a.warnings {
            writeln!(out, "dd: warning: {w}")?;
        }
    }
    let disk = |p: &str| disk_name(p).map(String::from);
    let is_file = |p: &str| !p.starts_with("/dev/");
    if is_file(&a.input) || is_file(&a.output) {
        return dd_file(&a, out);
    }
    let source = match a.input.as_str() {
        "/dev/zero" => Source::Zero,
        "/dev/urandom" | "/dev/random" => Source::Urandom,
        p => match disk(p) {
            Some(n) => Source::Disk(n),
            None => {
                writeln!(out, "dd: failed to open '{p}': No such file or directory")?;
                return Ok(());
            }
        },
    };
    let sink = match a.output.as_str() {
        "/dev/null" => Sink::Null,
        p => match disk(p) {
            Some(n) => Sink::Disk(n),
            None => {
                writeln!(out, "dd: failed to open '{p}': No such file or directory")?;
                return Ok(());
            }
        },
    };
    // Offsets and count in GNU's terms (and GNU's errors for skip/seek past an end).
    let in_size = match &source {
        Source::Disk(n) => disk_bytes(n),
        _ => None,
    };
    let out_size = match &sink {
        Sink::Disk(n) => disk_bytes(n),
        Sink::Null => None,
    };
    // GNU prints only the error (no statistics) when a file cannot be opened.
    for (is_disk, size, path) in [
        (matches!(source, Source::Disk(_)), in_size, &a.input),
        (matches!(sink, Sink::Disk(_)), out_size, &a.output),
    ] {
        if is_disk && size.is_none() {
            writeln!(out, "dd: failed to open '{path}': No such device")?;
            return Ok(());
        }
    }
    let Some(gp) = dd_plan(&a, in_size, out_size, out)? else {
        return Ok(());
    };
    let plan = Plan {
        source,
        sink,
        obs: a.obs,
        direct: a.oflag.direct,
        transfer: Transfer::new(&a, &gp),
    };
    dd_report(&a, &crate::shell::dd::run(&plan), out)
}

/// The bytes of a disk (`xvdb`), if there is one by that name.
fn disk_bytes(name: &str) -> Option<u64> {
    crate::dev::frontends::with_disk(name, |d| {
        use xenlet_drivers::blkfront::BlockDevice;
        d.info().bytes()
    })
}

/// GNU's plan for `a` over an input and an output of those sizes; `None` once its
/// error is printed.
fn dd_plan(
    a: &xenlet_shell::dd::DdArgs,
    in_size: Option<u64>,
    out_size: Option<u64>,
    out: &mut dyn Write,
) -> Result<Option<xenlet_shell::dd::Plan>, core::fmt::Error> {
    match xenlet_shell::dd::plan(a, in_size, out_size) {
        Ok(p) => Ok(Some(p)),
        Err(e) => {
            writeln!(out, "{e}")?;
            Ok(None)
        }
    }
}

/// Prints a dd outcome as GNU does: the error, then the statistics. Every read and
/// write of the engines is full except the last one of a stream, so the records
/// follow from the byte totals (GNU counts the same way then).
fn dd_report(
    a: &xenlet_shell::dd::DdArgs,
    o: &crate::shell::dd::Outcome,
    out: &mut dyn Write,
) -> CmdResult {
    use xenlet_shell::dd::{summary, Stats};
    if let Some(e) = &o.error {
        writeln!(out, "dd: {e}")?;
    }
    let stats = Stats {
        full_in: o.bytes_in / a.ibs,
        partial_in: u64::from(!o.bytes_in.is_multiple_of(a.ibs)),
        full_out: o.bytes_out / a.obs,
        partial_out: u64::from(!o.bytes_out.is_multiple_of(a.obs)),
        bytes_out: o.bytes_out,
        truncated: 0,
    };
    out.write_str(&summary(&stats, o.elapsed_ns, a.status))?;
    Ok(())
}

/// `dd` with a file on one side or both (see `ddfile`).
fn dd_file(a: &xenlet_shell::dd::DdArgs, out: &mut dyn Write) -> CmdResult {
    use crate::shell::dd::Transfer;
    use crate::shell::ddfile::{End, FilePlan};
    let end = |p: &str, input: bool| -> Result<End, String> {
        Ok(match p {
            "/dev/zero" if input => End::Zero,
            "/dev/urandom" | "/dev/random" if input => End::Urandom,
            "/dev/null" if !input => End::Null,
            p if p.starts_with("/dev/") => {
                let n = &p[5..];
                if crate::dev::frontends::with_disk(n, |_| ()).is_none() {
                    return Err(alloc::format!("failed to open '{p}': No such device"));
                }
                End::Disk(String::from(n))
            }
            p => End::File(String::from(p)),
        })
    };
    let (src, dst) = match (end(&a.input, true), end(&a.output, false)) {
        (Ok(s), Ok(d)) => (s, d),
        (Err(e), _) | (_, Err(e)) => {
            writeln!(out, "dd: {e}")?;
            return Ok(());
        }
    };
    let in_size = match &src {
        End::File(p) => {
            crate::fs::vfs::with(|v| v.resolve(p).and_then(|h| v.stat(h)).map(|s| s.size))
                .and_then(Result::ok)
        }
        End::Disk(n) => disk_bytes(n),
        _ => None,
    };
    let out_size = match &dst {
        End::Disk(n) => disk_bytes(n),
        _ => None,
    };
    let Some(gp) = dd_plan(a, in_size, out_size, out)? else {
        return Ok(());
    };
    let plan = FilePlan {
        src,
        dst,
        ibs: a.ibs,
        notrunc: a.conv.notrunc,
        transfer: Transfer::new(a, &gp),
    };
    match crate::shell::ddfile::run(&plan) {
        Ok(o) => dd_report(a, &o, out),
        Err(e) => {
            writeln!(out, "dd: {e}")?;
            Ok(())
        }
    }
}

/// The clock for a raw-disk command's waits (not interruptible mid-request).
struct DiskWait;

impl xenlet_drivers::blocksync::Waiter for DiskWait {
    fn now_ns(&self) -> u64 {
        crate::time::clock::now().as_nanos()
    }
    fn interrupted(&self) -> bool {
        false
    }
}

/// Reads `len` bytes of a disk from offset 0 through blkfront and hashes them.
fn hash_disk(
    d: &mut crate::dev::frontends::Disk,
    len: u64,
) -> Result<[u8; 32], xenlet_drivers::blkfront::BlockError> {
    use sha2::Digest;
    use xenlet_drivers::blkfront::{BlockDevice, BlockError, BlockOp, BlockRequest};
    let mut h = sha2::Sha256::new();
    let chunk_pages = d.info().features.max_segments as u64;
    let mut pos = 0u64;
    let mut page = [0u8; 4096];
    let mut done = alloc::vec::Vec::new();
    while pos < len {
        let bytes = (len - pos).min(chunk_pages * 4096);
        let pages = bytes.div_ceil(4096) as usize;
        // waits while a mounted filesystem's write-behind holds the pool
        let bufs = xenlet_drivers::blocksync::alloc_waiting(&mut *d, &DiskWait, pages).map_err(
            |e| match e {
                xenlet_drivers::blocksync::SyncError::Device(e) => e,
                e => BlockError::Broken(alloc::format!("{e}")),
            },
        )?;
        let tag = xenlet_drivers::blocksync::fresh_tag();
        d.submit(BlockRequest {
            tag,
            op: BlockOp::Read,
            sector: pos / 512,
            bytes: bytes as usize,
            bufs,
        })
        .map_err(|(e, _)| e)?;
        d.kick();
        let c = loop {
            d.poll(&mut done);
            let mut mine = None;
            for c in done.drain(..) {
                if c.tag == tag && mine.is_none() {
                    mine = Some(c);
                } else {
                    // not this read's: to its owner (a mounted filesystem's
                    // write-behind), the buffers to the pool
                    xenlet_drivers::blocksync::recycle(&mut *d, c);
                }
            }
            if let Some(c) = mine {
                break c;
            }
            if let Some(why) = d.broken() {
                return Err(BlockError::Broken(String::from(why)));
            }
            d.wait();
        };
        let result = c.result;
        let mut left = bytes as usize;
        for b in c.bufs {
            let n = left.min(4096);
            b.read_at(0, &mut page[..n]);
            h.update(&page[..n]);
            left -= n;
            d.free_buf(b);
        }
        result?;
        pos += bytes;
        crate::xen::idle::serve(); // hashing is CPU work: the data plane's check-point
    }
    Ok(h.finalize().into())
}

pub(super) fn sha256sum(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use xenlet_drivers::blkfront::BlockDevice;
    let (limit, files) = sha256sum_args(args)?;
    if limit.is_none() && files.iter().all(|f| !f.starts_with("/dev/")) {
        return fscmds::sha256sum_files(files, out);
    }
    for f in files {
        let r = crate::dev::frontends::with_disk(f, |d| {
            let size = d.info().bytes();
            let len = limit.unwrap_or(size).min(size);
            if len % 512 != 0 {
                return Err(xenlet_drivers::blkfront::BlockError::Invalid(
                    "length not a multiple of 512",
                ));
            }
            hash_disk(d, len)
        });
        match r {
            None => writeln!(out, "sha256sum: {f}: No such device")?,
            Some(Err(e)) => writeln!(out, "sha256sum: {f}: {e}")?,
            Some(Ok(h)) => {
                for b in h {
                    write!(out, "{b:02x}")?;
                }
                writeln!(out, "  {f}")?;
            }
        }
    }
    Ok(())
}

pub(super) fn lsblk(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use xenlet_drivers::blkfront::BlockDevice;
    no_args(args)?;
    writeln!(out, "{LSBLK_HEADER}")?;
    let mut n = 0;
    let mut res = Ok(());
    crate::dev::frontends::for_each_disk(|d| {
        n += 1;
        let state = disk_state(d.broken(), d.stats().quarantined_pages);
        res = res.and(writeln!(out, "{}", lsblk_row(d.info(), &state)));
    });
    res?;
    if n == 0 {
        writeln!(
            out,
            "no disks (blkfront needs Xen and a vbd in the domain's config)"
        )?;
    }
    Ok(())
}

pub(super) fn sync(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use xenlet_drivers::blkfront::{BlockDevice, BlockOp};
    // every failure is said (the filesystems' and each disk's), not only the last
    let mut failures: alloc::vec::Vec<String> = alloc::vec::Vec::new();
    if args.is_empty() {
        if let Err(e) = fscmds::sync_filesystems() {
            failures.push(e);
        }
    }
    let mut flush = |d: &mut crate::dev::frontends::Disk| {
        let name = d.info().name.clone();
        if d.info().readonly {
            // nothing was written to it (blkback refuses a flush of a read-only
            // disk: `sync` said "xvdc: Input/output error" for a source mounted ro)
            return;
        }
        match crate::dev::frontends::run_one(d, BlockOp::Flush, 0) {
            Ok(()) => {}
            Err(xenlet_drivers::blkfront::BlockError::NotSupported) => {}
            Err(e) => failures.push(alloc::format!("{name}: {e}")),
        }
    };
    if args.is_empty() {
        crate::dev::frontends::for_each_disk(&mut flush);
    } else {
        for a in args {
            if crate::dev::frontends::with_disk(a, &mut flush).is_none() {
                return Err(CmdError::failed(alloc::format!("{a}: No such device")));
            }
        }
    }
    let _ = out; // GNU sync prints nothing on success
    if failures.is_empty() {
        Ok(())
    } else {
        Err(CmdError::failed(failures.join("; ")))
    }
}

pub(super) fn discard(_: &mut Host, args: &[&str], _: &mut dyn Write) -> CmdResult {
    use xenlet_drivers::blkfront::BlockOp;
    let Discard {
        device: dev,
        sector,
        sectors,
    } = discard_args(args)?;
    crate::dev::frontends::with_disk(dev, |d| {
        crate::dev::frontends::run_one(d, BlockOp::Discard { sectors }, sector)
    })
    .ok_or_else(|| CmdError::failed(alloc::format!("{dev}: No such device")))?
    .map_err(|e| CmdError::failed(alloc::format!("{dev}: {e}")))
}
