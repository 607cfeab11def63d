//! `dd` with a file on either side (`of=/mnt/test`, `if=/etc/config/network`): the
//! data moves in chunks of up to [`CHUNK`] bytes (whole input blocks; [`SMALL_CHUNK`]
//! when the heap is short) through the VFS. ext4 writes a chunk's whole blocks into
//! a hole straight from this buffer, in one disk write as large as the chunk (the
//! raw disk's `dd` sends requests of 1 MiB too); smaller pieces it gathers. GNU's file semantics:
//! the output is created, and truncated at the `seek=` offset unless
//! `conv=notrunc`; `conv=fsync`/`fdatasync` syncs the file before the statistics,
//! `oflag=dsync` after every chunk; a full disk ends the copy with GNU's message;
//! Ctrl-C stops it between chunks with the statistics so far.

use crate::fs::vfs::FsWait;
use crate::shell::dd::{Outcome, Progress, Transfer, Xoshiro};
use crate::{dev::frontends, fs::vfs, io::console, time::clock};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_drivers::blocksync;
use xenlet_fs::vfs::Handle;
use xenlet_fs::FsError;

/// Largest piece moved at once.
pub const CHUNK: u64 = 1 << 20;
/// Largest piece when the heap has less than [`ROOM_FOR_CHUNK`] bytes to give.
pub const SMALL_CHUNK: u64 = 256 << 10;
/// Heap bytes available (`mm::heap::available`, growth from the frames included)
/// for a [`CHUNK`] buffer: what is left after it stays above the heap's low-water
/// mark (at most 2 MiB), so the mounts' caches are not made to shrink for it.
const ROOM_FOR_CHUNK: usize = 4 * CHUNK as usize;

/// One side of the copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// `/dev/zero` (input).
    Zero,
    /// `/dev/urandom` (input).
    Urandom,
    /// `/dev/null` (output).
    Null,
    /// A disk, by name.
    Disk(String),
    /// A file, by path.
    File(String),
}

/// A resolved file copy.
#[derive(Clone, Debug)]
pub struct FilePlan {
    /// Input.
    pub src: End,
    /// Output.
    pub dst: End,
    /// Input block size (chunks are whole input blocks).
    pub ibs: u64,
    /// `conv=notrunc`.
    pub notrunc: bool,
    /// Offsets, byte count (`None`: to the end of the input), syncs and progress.
    pub transfer: Transfer,
}

fn fs_err(e: FsError) -> String {
    format!("{e}")
}

fn open_in(end: &End) -> Result<Option<Handle>, String> {
    match end {
        End::File(p) => vfs::with(|v| {
            let h = v.resolve(p)?;
            if v.stat(h)?.kind == xenlet_fs::FileType::Dir {
                return Err(FsError::IsDir);
            }
            Ok(h)
        })
        .ok_or_else(|| String::from("no file tree"))?
        .map(Some)
        .map_err(|e| format!("failed to open '{p}': {}", fs_err(e))),
        _ => Ok(None),
    }
}

fn open_out(plan: &FilePlan) -> Result<Option<Handle>, String> {
    let End::File(p) = &plan.dst else {
        return Ok(None);
    };
    vfs::with(|v| {
        let h = v.open_write(p, false)?;
        if !plan.notrunc {
            // GNU: ftruncate(seek offset), growing or shrinking to it.
            v.truncate(h, plan.transfer.seek_bytes)?;
        }
        Ok(h)
    })
    .ok_or_else(|| String::from("no file tree"))?
    .map(Some)
    .map_err(|e| format!("failed to open '{p}': {}", fs_err(e)))
}

/// Runs the copy. Err: a file could not be opened (GNU then prints only that).
pub fn run(plan: &FilePlan) -> Result<Outcome, String> {
    let hin = open_in(&plan.src)?;
    let hout = open_out(plan)?;
    let start = clock::now().as_nanos();
    let mut out = Outcome::default();
    let mut progress = Progress {
        on: plan.transfer.progress,
        start_ns: start,
        gnu: xenlet_shell::dd::Progress::new(),
    };
    if let Err(e) = copy(plan, hin, hout, &mut out, &mut progress) {
        out.error = Some(e);
    }
    progress.finish();
    out.elapsed_ns = clock::now().as_nanos() - start;
    Ok(out)
}

fn copy(
    plan: &FilePlan,
    hin: Option<Handle>,
    hout: Option<Handle>,
    out: &mut Outcome,
    progress: &mut Progress,
) -> Result<(), String> {
    let most = if crate::mm::heap::available() >= ROOM_FOR_CHUNK {
        CHUNK
    } else {
        SMALL_CHUNK
    };
    let chunk = (most / plan.ibs).max(1) * plan.ibs;
    // fallible: a large bs= in a small guest is an error line, not a panic
    let mut buf: Vec<u8> = Vec::new();
    if buf.try_reserve_exact(chunk as usize).is_err() {
        return Err(format!(
            "memory exhausted by a buffer of size {chunk} bytes (bs= too large for this guest's heap)"
        ));
    }
    buf.resize(chunk as usize, 0);
    // Whether `buf` holds only zeros (`/dev/zero` then needs no fill per chunk).
    let mut zeroed = true;
    let mut rng = Xoshiro::seeded(clock::now().as_nanos());
    let in_name = match &plan.src {
        End::File(p) => p.clone(),
        End::Disk(d) => format!("/dev/{d}"),
        _ => String::new(),
    };
    let out_name = match &plan.dst {
        End::File(p) => p.clone(),
        End::Disk(d) => format!("/dev/{d}"),
        _ => String::new(),
    };
    loop {
        crate::xen::idle::serve(); // a check-point for the data plane, each chunk
        let _ = crate::sys::shutdown::checkpoint(); // and for a save (no file system held)
        if console::take_interrupt() {
            return Err(String::from("Interrupted"));
        }
        let want = match plan.transfer.count_bytes {
            Some(c) => (c - out.bytes_in).min(chunk),
            None => chunk,
        } as usize;
        if want == 0 {
            break;
        }
        let pos_in = plan.transfer.skip_bytes + out.bytes_in;
        let got = match &plan.src {
            End::Zero => {
                if !zeroed {
                    buf.fill(0);
                    zeroed = true;
                }
                want
            }
            End::Urandom => {
                zeroed = false;
                for w in buf[..want].chunks_mut(8) {
                    let r = rng.next().to_le_bytes();
                    w.copy_from_slice(&r[..w.len()]);
                }
                want
            }
            End::Disk(d) => {
                zeroed = false;
                let size = frontends::with_disk(d, |x| {
                    use xenlet_drivers::blkfront::BlockDevice;
                    x.info().bytes()
                })
                .ok_or_else(|| format!("error reading '{in_name}': No such device"))?;
                let n = (size.saturating_sub(pos_in)).min(want as u64) as usize;
                if !n.is_multiple_of(512) || !pos_in.is_multiple_of(512) {
                    return Err(format!("error reading '{in_name}': Invalid argument"));
                }
                frontends::with_disk(d, |x| blocksync::read(x, &FsWait, pos_in, &mut buf[..n]))
                    .ok_or_else(|| format!("error reading '{in_name}': No such device"))?
                    .map_err(|e| format!("error reading '{in_name}': {e}"))?;
                n
            }
            End::File(_) => {
                zeroed = false;
                let h = hin.ok_or("no input")?;
                let mut n = 0;
                while n < want {
                    let k = vfs::with(|v| v.read(h, pos_in + n as u64, &mut buf[n..want]))
                        .ok_or("no file tree")?
                        .map_err(|e| format!("error reading '{in_name}': {e}"))?;
                    if k == 0 {
                        break;
                    }
                    n += k;
                }
                n
            }
            End::Null => 0,
        };
        if got == 0 {
            break;
        }
        out.bytes_in += got as u64;
        let pos_out = plan.transfer.seek_bytes + out.bytes_out;
        match &plan.dst {
            End::Null => out.bytes_out += got as u64,
            End::Disk(d) => {
                if !got.is_multiple_of(512) || !pos_out.is_multiple_of(512) {
                    return Err(format!("error writing '{out_name}': Invalid argument"));
                }
                frontends::with_disk(d, |x| blocksync::write(x, &FsWait, pos_out, &buf[..got]))
                    .ok_or_else(|| format!("error writing '{out_name}': No such device"))?
                    .map_err(|e| match e {
                        blocksync::SyncError::Range => {
                            format!("error writing '{out_name}': No space left on device")
                        }
                        e => format!("error writing '{out_name}': {e}"),
                    })?;
                out.bytes_out += got as u64;
            }
            End::File(_) => {
                let h = hout.ok_or("no output")?;
                let mut n = 0;
                while n < got {
                    let r = vfs::with(|v| v.write(h, pos_out + n as u64, &buf[n..got]))
                        .ok_or("no file tree")?;
                    match r {
                        Ok(k) => n += k,
                        Err(e) => {
                            out.bytes_out += n as u64;
                            return Err(format!("error writing '{out_name}': {e}"));
                        }
                    }
                }
                out.bytes_out += got as u64;
                if plan.transfer.dsync {
                    vfs::with(|v| v.fsync(h))
                        .ok_or("no file tree")?
                        .map_err(|e| format!("fsync failed for '{out_name}': {e}"))?;
                }
            }
            End::Zero | End::Urandom => return Err(String::from("cannot write to a source")),
        }
        progress.tick(out.bytes_out);
        if got < want {
            break; // end of the input
        }
    }
    if plan.transfer.fsync {
        match (&plan.dst, hout) {
            (End::File(_), Some(h)) => vfs::with(|v| v.fsync(h))
                .ok_or("no file tree")?
                .map_err(|e| format!("fsync failed for '{out_name}': {e}"))?,
            (End::Disk(d), _) => frontends::with_disk(d, |x| blocksync::flush(x, &FsWait))
                .ok_or_else(|| format!("fsync failed for '{out_name}': No such device"))?
                .map_err(|e| format!("fsync failed for '{out_name}': {e}"))?,
            _ => {}
        }
    }
    Ok(())
}
