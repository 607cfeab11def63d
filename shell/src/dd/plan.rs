//! The transfer plan: where a copy starts and how much each read asks for.

use super::args::DdArgs;
use super::error::{DdError, Errno};
use super::stats::Stats;

/// Where a copy starts and how much it reads, from [`plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Input block size.
    pub ibs: u64,
    /// Byte offset in the input to start reading at (`skip=`).
    pub in_offset: u64,
    /// Byte offset in the output to start writing at (`seek=`).
    pub out_offset: u64,
    /// `count=` as full-block reads (GNU's `max_records`); `None`: read to EOF.
    pub max_records: Option<u64>,
    /// After `max_records`, one more read of this many bytes (the `count_bytes`
    /// remainder, GNU's `max_bytes`); 0: none.
    pub max_bytes: u64,
    /// Bytes the copy reads if every read is full: the `count=` limit, capped by the
    /// input's size from `in_offset`; `None` when both are unbounded.
    pub in_bytes: Option<u64>,
    /// Bytes the output has from `out_offset` to its end; `None`: unbounded. Writing
    /// beyond it fails with `ENOSPC` (GNU then prints
    /// [`IoOp::Write`](super::IoOp::Write) or [`IoOp::WriteBlock`](super::IoOp::WriteBlock)
    /// with [`Errno::NoSpace`] and the statistics).
    pub out_room: Option<u64>,
}

impl Plan {
    /// The size of the next read, GNU's loop condition: `None` once `count=` is
    /// satisfied (`records_in >= max_records`, plus one for a `max_bytes` tail),
    /// else `ibs`, or `max_bytes` for the tail read. Reads also end at EOF (a read of
    /// 0), which the engine sees.
    pub fn next_read(&self, stats: &Stats) -> Option<u64> {
        let Some(max) = self.max_records else {
            return Some(self.ibs);
        };
        let done = stats.records_in();
        let tail = u64::from(self.max_bytes > 0);
        if done >= max.saturating_add(tail) {
            None
        } else if done >= max {
            Some(self.max_bytes)
        } else {
            Some(self.ibs)
        }
    }
}

/// A skip or seek `offset` (`None`: it overflowed) checked against the `size` of
/// its file, if known: past the end is `error(Errno::Invalid)`, an overflow
/// `error(Errno::Overflow)`.
fn offset_within(
    offset: Option<u64>,
    size: Option<u64>,
    error: impl Fn(Errno) -> DdError,
) -> Result<u64, DdError> {
    let offset = offset.ok_or_else(|| error(Errno::Overflow))?;
    if size.is_some_and(|s| offset > s) {
        return Err(error(Errno::Invalid));
    }
    Ok(offset)
}

/// Plans a copy given the input and output sizes in bytes when known (disks), `None`
/// for unbounded devices such as a zero or null device.
///
/// Checks, in GNU's order, with GNU's messages for Linux block devices:
/// - `seek=` beyond `i64` without `conv=notrunc`: [`DdError::SeekTooLarge`];
/// - `skip=` beyond `i64`: `dd: X: cannot skip: Value too large for defined data
///   type`; beyond the end of a sized input: `dd: X: cannot skip: Invalid argument`
///   (skipping exactly to the end is fine and copies nothing);
/// - `seek=` likewise: `dd: X: cannot seek: …`.
///
/// (For regular files GNU only warns `dd: X: cannot skip to specified offset` and
/// copies nothing; there are no regular files here.)
pub fn plan(args: &DdArgs, in_size: Option<u64>, out_size: Option<u64>) -> Result<Plan, DdError> {
    let out_offset = args.seek_offset();
    if out_offset.is_none() && !args.conv.notrunc {
        let records = if args.oflag.seek_bytes {
            args.seek / args.obs
        } else {
            args.seek
        };
        return Err(DdError::SeekTooLarge {
            records,
            obs: args.obs,
        });
    }
    let in_offset = offset_within(args.skip_offset(), in_size, |errno| DdError::CannotSkip {
        file: args.input.clone(),
        errno,
    })?;
    let out_offset = offset_within(out_offset, out_size, |errno| DdError::CannotSeek {
        file: args.output.clone(),
        errno,
    })?;
    let (max_records, max_bytes) = match args.count_limit() {
        Some((r, b)) => (Some(r), b),
        None => (None, 0),
    };
    let count_bytes = max_records.and_then(|r| {
        r.checked_mul(args.ibs)
            .and_then(|b| b.checked_add(max_bytes))
    });
    let avail = in_size.map(|s| s - in_offset);
    let in_bytes = match (count_bytes, avail) {
        (Some(c), Some(a)) => Some(c.min(a)),
        (c, a) => c.or(a),
    };
    Ok(Plan {
        ibs: args.ibs,
        in_offset,
        out_offset,
        max_records,
        max_bytes,
        in_bytes,
        out_room: out_size.map(|s| s - out_offset),
    })
}
