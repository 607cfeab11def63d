//! The pure parts of a GNU-compatible `dd`: operand parsing, record accounting, the
//! transfer plan, and the statistics lines, all as GNU coreutils 9.x prints them.
//!
//! The I/O engine lives elsewhere and works against these types:
//!
//! 1. [`parse`] the operands into [`DdArgs`] (print its `warnings`, if any, as
//!    `dd: warning: …`).
//! 2. Open the devices, then [`plan`] the copy with their sizes: byte offsets to start
//!    at, and [`Plan::next_read`] says how much each read asks for and when `count=`
//!    is satisfied.
//! 3. Count every read and write in [`Stats`] ([`Stats::record_read`],
//!    [`Stats::record_write`]).
//! 4. With `status=progress`, call [`Progress::poll`] before each read and print what
//!    it returns; at the end print [`Progress::finish`], then [`summary`].
//!
//! GNU semantics kept: `bs=` sets both block sizes and makes every input block one
//! output write (no reblocking); without `bs=`, output is collected into `obs`-sized
//! writes. `count=`, `skip=` and `seek=` are in blocks of `ibs`/`ibs`/`obs` unless
//! `iflag=count_bytes`, `iflag=skip_bytes`, `oflag=seek_bytes` is given or the number
//! contains a `B` (`count=1MiB`, `skip=512B`), as in coreutils 9.1+. `count=N` limits
//! the number of reads, not bytes: a short read still counts as a (partial) record.
//!
//! Messages use the C locale's ASCII quotes (`'foo'`), as `LC_ALL=C dd` does; GNU's
//! second line `Try 'dd --help' for more information.` is not printed.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::{self, Write};

use crate::{parse_size, CmdError, ParseError};

/// GNU's default block size.
pub const DEFAULT_BLOCK_SIZE: u64 = 512;

/// The largest `bs=`/`ibs=`/`obs=` GNU accepts on a 64-bit host (`IDX_MAX - 1`).
pub const MAX_BLOCK_SIZE: u64 = i64::MAX as u64 - 1;

/// Nanoseconds per second.
const NS_PER_S: u64 = 1_000_000_000;

// ---------------------------------------------------------------------------------
// Operands
// ---------------------------------------------------------------------------------

/// What is printed on the console (`status=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Status {
    /// No `status=`: the record lines and the transfer line.
    #[default]
    Default,
    /// `status=none`: no statistics and no run-time warnings (parse-time
    /// [`DdArgs::warnings`] are still printed by GNU).
    None,
    /// `status=noxfer`: only the record lines.
    NoXfer,
    /// `status=progress`: a transfer line once a second while copying, then as default.
    Progress,
}

/// The `conv=` symbols this dd implements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Conv {
    /// `fsync`: flush data and metadata before finishing.
    pub fsync: bool,
    /// `fdatasync`: flush data before finishing.
    pub fdatasync: bool,
    /// `notrunc`: do not truncate the output (a no-op on disks).
    pub notrunc: bool,
    /// `noerror`: go on after read errors.
    pub noerror: bool,
    /// `sync`: pad every input block to `ibs` with zero bytes.
    pub sync: bool,
}

/// The `iflag=`/`oflag=` symbols this dd implements. GNU shares one table between the
/// two operands, so every symbol is accepted in both; the ones that make no sense on
/// that side are accepted and have no effect, as in GNU (except `oflag=fullblock`,
/// which GNU refuses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// `direct`: bypass caches.
    pub direct: bool,
    /// `dsync`: synchronized I/O for data.
    pub dsync: bool,
    /// `sync`: synchronized I/O for data and metadata.
    pub sync: bool,
    /// `fullblock` (input only): retry short reads until a block is full or at EOF.
    pub fullblock: bool,
    /// `count_bytes` (input only): `count=` is in bytes.
    pub count_bytes: bool,
    /// `skip_bytes` (input only): `skip=` is in bytes.
    pub skip_bytes: bool,
    /// `seek_bytes` (output only): `seek=` is in bytes.
    pub seek_bytes: bool,
}

/// Parsed `dd` operands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DdArgs {
    /// `if=`: the input device or file name.
    pub input: String,
    /// `of=`: the output device or file name.
    pub output: String,
    /// Input block size in bytes (`ibs=`, or `bs=`); 512 by default.
    pub ibs: u64,
    /// Output block size in bytes (`obs=`, or `bs=`); 512 by default.
    pub obs: u64,
    /// `bs=` if given: then `ibs == obs == bs` and each block read is written as it
    /// is (a short read makes a short write); without it, output is reblocked into
    /// `obs`-sized writes.
    pub bs: Option<u64>,
    /// `count=`: in input blocks, or bytes with `iflag.count_bytes`; `None`: to EOF.
    pub count: Option<u64>,
    /// `skip=`/`iseek=`: in input blocks, or bytes with `iflag.skip_bytes`.
    pub skip: u64,
    /// `seek=`/`oseek=`: in output blocks, or bytes with `oflag.seek_bytes`.
    pub seek: u64,
    /// `conv=`.
    pub conv: Conv,
    /// `iflag=`; `count_bytes`/`skip_bytes` are also set by a `B` in the number.
    pub iflag: Flags,
    /// `oflag=`; `seek_bytes` is also set by a `B` in the number.
    pub oflag: Flags,
    /// `status=`.
    pub status: Status,
    /// Warnings GNU prints while parsing (about `0x`), without the `dd: warning: `
    /// prefix: print each as `dd: warning: {w}` before starting. GNU prints these
    /// even with `status=none` (it has not read `status=` yet when it warns).
    pub warnings: Vec<String>,
}

/// GNU's `conv=` symbols this dd does not implement.
const CONV_UNSUPPORTED: &[&str] = &[
    "ascii", "ebcdic", "ibm", "block", "unblock", "lcase", "ucase", "sparse", "swab", "nocreat",
    "excl",
];
/// GNU's flag symbols (valid on Linux) this dd does not implement. (`cio`, `binary`,
/// `text` and `nolinks` are invalid flags for GNU dd on Linux, and here too.)
const FLAG_UNSUPPORTED: &[&str] = &[
    "append",
    "directory",
    "noatime",
    "nocache",
    "noctty",
    "nofollow",
    "nonblock",
];

/// Parses `dd` operands (the words after `dd`), GNU style: `NAME=VALUE`, left to
/// right, the first error wins; later `if=`, `of=`, numbers and `status=` override
/// earlier ones, `conv=`/`iflag=`/`oflag=` accumulate. `if=` and `of=` are required
/// (there is no standard input or output). Unlike GNU, words starting with `-` are
/// not options: they are unrecognized operands. On an error, parse-time warnings are
/// dropped (GNU prints the `0x` warning before `dd: invalid number: '0x512'`).
pub fn parse(args: &[&str]) -> Result<DdArgs, DdError> {
    let mut input = None;
    let mut output = None;
    let (mut bs, mut ibs, mut obs) = (None, None, None);
    let mut count = None;
    let (mut skip, mut seek) = (0, 0);
    let (mut count_b, mut skip_b, mut seek_b) = (false, false, false);
    let mut conv = Conv::default();
    let mut iflag = Flags::default();
    let mut oflag = Flags::default();
    let mut status = Status::Default;
    let mut warnings = Vec::new();

    for &arg in args {
        let Some((name, val)) = arg.split_once('=') else {
            return Err(DdError::UnrecognizedOperand(arg.into()));
        };
        match name {
            "if" => input = Some(val),
            "of" => output = Some(val),
            "conv" => parse_conv(val, &mut conv)?,
            "iflag" => parse_flags(val, &mut iflag, FlagSide::Input)?,
            "oflag" => parse_flags(val, &mut oflag, FlagSide::Output)?,
            "status" => status = parse_status(val)?,
            _ => {
                // GNU parses the number before looking at the name.
                let parsed = parse_size(val);
                let has_b = val.contains('B');
                let (n_min, n_max) = match name {
                    "bs" | "ibs" | "obs" => (1, MAX_BLOCK_SIZE),
                    "count" | "skip" | "iseek" | "seek" | "oseek" => (0, i64::MAX as u64),
                    "cbs" => return Err(DdError::Unsupported(Unsupported::Operand, arg.into())),
                    _ => return Err(DdError::UnrecognizedOperand(arg.into())),
                };
                if parsed == Ok(0) && zero_multiplier(val) {
                    warnings.push(String::from(
                        "'0x' is a zero multiplier; use '00x' if that is intended",
                    ));
                }
                let n = match parsed {
                    Ok(n) if n < n_min => return Err(DdError::InvalidNumber(val.into())),
                    Ok(n) if n > n_max => return Err(DdError::NumberTooLarge(val.into())),
                    Ok(n) => n,
                    Err(ParseError::Overflow(_)) => {
                        return Err(DdError::NumberTooLarge(val.into()))
                    }
                    Err(_) => return Err(DdError::InvalidNumber(val.into())),
                };
                match name {
                    "bs" => bs = Some(n),
                    "ibs" => ibs = Some(n),
                    "obs" => obs = Some(n),
                    "count" => (count, count_b) = (Some(n), has_b),
                    "skip" | "iseek" => (skip, skip_b) = (n, has_b),
                    _ => (seek, seek_b) = (n, has_b),
                }
            }
        }
    }

    if oflag.fullblock {
        return Err(DdError::InvalidOutputFlag("fullblock".into()));
    }
    let input = input.ok_or(DdError::MissingInput)?;
    let output = output.ok_or(DdError::MissingOutput)?;
    iflag.count_bytes |= count_b;
    iflag.skip_bytes |= skip_b;
    oflag.seek_bytes |= seek_b;
    Ok(DdArgs {
        input: input.into(),
        output: output.into(),
        ibs: bs.or(ibs).unwrap_or(DEFAULT_BLOCK_SIZE),
        obs: bs.or(obs).unwrap_or(DEFAULT_BLOCK_SIZE),
        bs,
        count,
        skip,
        seek,
        conv,
        iflag,
        oflag,
        status,
        warnings,
    })
}

/// Whether GNU warns about a `0x` factor: some factor before an `x` is exactly `0`
/// (`0x512` is 0, which is rarely what was meant; `00x512` silences it).
fn zero_multiplier(val: &str) -> bool {
    let parts: Vec<&str> = val.split('x').collect();
    parts[..parts.len() - 1].contains(&"0")
}

fn parse_conv(val: &str, conv: &mut Conv) -> Result<(), DdError> {
    for sym in val.split(',') {
        match sym {
            "fsync" => conv.fsync = true,
            "fdatasync" => conv.fdatasync = true,
            "notrunc" => conv.notrunc = true,
            "noerror" => conv.noerror = true,
            "sync" => conv.sync = true,
            s if CONV_UNSUPPORTED.contains(&s) => {
                return Err(DdError::Unsupported(Unsupported::Conversion, s.into()))
            }
            s => return Err(DdError::InvalidConversion(s.into())),
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum FlagSide {
    Input,
    Output,
}

fn parse_flags(val: &str, flags: &mut Flags, side: FlagSide) -> Result<(), DdError> {
    for sym in val.split(',') {
        match sym {
            "direct" => flags.direct = true,
            "dsync" => flags.dsync = true,
            "sync" => flags.sync = true,
            "fullblock" => flags.fullblock = true,
            "count_bytes" => flags.count_bytes = true,
            "skip_bytes" => flags.skip_bytes = true,
            "seek_bytes" => flags.seek_bytes = true,
            s => {
                return Err(match (FLAG_UNSUPPORTED.contains(&s), side) {
                    (true, FlagSide::Input) => {
                        DdError::Unsupported(Unsupported::InputFlag, s.into())
                    }
                    (true, FlagSide::Output) => {
                        DdError::Unsupported(Unsupported::OutputFlag, s.into())
                    }
                    (false, FlagSide::Input) => DdError::InvalidInputFlag(s.into()),
                    (false, FlagSide::Output) => DdError::InvalidOutputFlag(s.into()),
                })
            }
        }
    }
    Ok(())
}

/// `status=` symbols are exclusive: the last one of a comma list wins, as in GNU.
fn parse_status(val: &str) -> Result<Status, DdError> {
    let mut status = Status::Default;
    for sym in val.split(',') {
        status = match sym {
            "none" => Status::None,
            "noxfer" => Status::NoXfer,
            "progress" => Status::Progress,
            s => return Err(DdError::InvalidStatus(s.into())),
        };
    }
    Ok(status)
}

impl DdArgs {
    /// The input offset `skip=` asks for, in bytes; `None` if it does not fit GNU's
    /// `off_t` (`i64`).
    pub fn skip_offset(&self) -> Option<u64> {
        offset(self.skip, self.ibs, self.iflag.skip_bytes)
    }

    /// The output offset `seek=` asks for, in bytes; `None` if it does not fit `i64`.
    pub fn seek_offset(&self) -> Option<u64> {
        offset(self.seek, self.obs, self.oflag.seek_bytes)
    }

    /// `count=` as GNU's `(max_records, max_bytes)`: that many reads of `ibs`, then
    /// one read of `max_bytes` if nonzero. `None`: no limit.
    pub fn count_limit(&self) -> Option<(u64, u64)> {
        self.count.map(|c| {
            if self.iflag.count_bytes {
                (c / self.ibs, c % self.ibs)
            } else {
                (c, 0)
            }
        })
    }
}

/// `n` blocks of `block` bytes (or `n` bytes), within `i64`.
fn offset(n: u64, block: u64, bytes: bool) -> Option<u64> {
    let off = if bytes { Some(n) } else { n.checked_mul(block) };
    off.filter(|&o| o <= i64::MAX as u64)
}

// ---------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------

/// A GNU operand or flag this dd does not implement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsupported {
    /// An operand such as `cbs=`.
    Operand,
    /// A `conv=` symbol such as `swab`.
    Conversion,
    /// An `iflag=` symbol such as `nocache`.
    InputFlag,
    /// An `oflag=` symbol such as `append`.
    OutputFlag,
}

/// An error number, printed as glibc's `strerror` text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errno {
    /// `EINVAL`
    Invalid,
    /// `EOVERFLOW`
    Overflow,
    /// `ENOSPC`
    NoSpace,
    /// `EIO`
    Io,
    /// `ENOENT`
    NotFound,
    /// `ENXIO`
    NoDevice,
    /// `EROFS`
    ReadOnly,
    /// `EPERM`
    NotPermitted,
    /// `ENOMEM`
    NoMemory,
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Errno::Invalid => "Invalid argument",
            Errno::Overflow => "Value too large for defined data type",
            Errno::NoSpace => "No space left on device",
            Errno::Io => "Input/output error",
            Errno::NotFound => "No such file or directory",
            Errno::NoDevice => "No such device or address",
            Errno::ReadOnly => "Read-only file system",
            Errno::NotPermitted => "Operation not permitted",
            Errno::NoMemory => "Cannot allocate memory",
        })
    }
}

/// Which I/O step failed, for [`DdError::Io`]; each has GNU's wording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoOp {
    /// `failed to open 'X'`
    Open,
    /// `error reading 'X'`
    Read,
    /// `error writing 'X'`: a write of an input block as read (`bs=`), or the final
    /// partial output block.
    Write,
    /// `writing to 'X'`: a full `obs` block when reblocking (no `bs=`), or the zeros
    /// written for `seek=` on an unseekable output.
    WriteBlock,
    /// `fsync failed for 'X'`
    Fsync,
    /// `fdatasync failed for 'X'`
    Fdatasync,
}

/// A `dd` error. `Display` prints GNU's one-line message, `dd: ` included; converting
/// to a [`CmdError`] drops the `dd: ` (the shell prefixes the command name itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DdError {
    /// A word that is not `NAME=VALUE` with a known name.
    UnrecognizedOperand(String),
    /// Not a number, or zero for a block size.
    InvalidNumber(String),
    /// A number beyond GNU's limits.
    NumberTooLarge(String),
    /// An unknown `conv=` symbol.
    InvalidConversion(String),
    /// An unknown `iflag=` symbol.
    InvalidInputFlag(String),
    /// An unknown `oflag=` symbol, or `fullblock`.
    InvalidOutputFlag(String),
    /// An unknown `status=` level.
    InvalidStatus(String),
    /// A GNU operand or symbol this dd does not implement.
    Unsupported(Unsupported, String),
    /// No `if=`.
    MissingInput,
    /// No `of=`.
    MissingOutput,
    /// `skip=` cannot be reached: beyond the end of a sized input (`Invalid`, as
    /// Linux block devices refuse it) or beyond `i64` (`Overflow`).
    CannotSkip {
        /// The input name.
        file: String,
        /// Why.
        errno: Errno,
    },
    /// `seek=` cannot be reached, as for [`DdError::CannotSkip`].
    CannotSeek {
        /// The output name.
        file: String,
        /// Why.
        errno: Errno,
    },
    /// `seek=` beyond `i64` without `conv=notrunc` (GNU checks this when opening).
    SeekTooLarge {
        /// The `seek=` in output blocks (GNU's `seek_records`).
        records: u64,
        /// The output block size.
        obs: u64,
    },
    /// A block buffer could not be allocated.
    NoMemory {
        /// The input buffer (`ibs`) rather than the output buffer (`obs`).
        input: bool,
        /// Its size in bytes.
        size: u64,
    },
    /// An I/O step failed.
    Io {
        /// Which step.
        op: IoOp,
        /// The device or file name.
        file: String,
        /// Why.
        errno: Errno,
    },
}

impl DdError {
    /// The message without the leading `dd: `.
    fn body(&self, f: &mut dyn Write) -> fmt::Result {
        match self {
            DdError::UnrecognizedOperand(s) => write!(f, "unrecognized operand {}", quote(s)),
            DdError::InvalidNumber(s) => write!(f, "invalid number: {}", quote(s)),
            DdError::NumberTooLarge(s) => {
                write!(f, "invalid number: {}: {}", quote(s), Errno::Overflow)
            }
            DdError::InvalidConversion(s) => write!(f, "invalid conversion: {}", quote(s)),
            DdError::InvalidInputFlag(s) => write!(f, "invalid input flag: {}", quote(s)),
            DdError::InvalidOutputFlag(s) => write!(f, "invalid output flag: {}", quote(s)),
            DdError::InvalidStatus(s) => write!(f, "invalid status level: {}", quote(s)),
            DdError::Unsupported(what, s) => {
                let what = match what {
                    Unsupported::Operand => "operand",
                    Unsupported::Conversion => "conversion",
                    Unsupported::InputFlag => "input flag",
                    Unsupported::OutputFlag => "output flag",
                };
                write!(f, "unsupported {what}: {}", quote(s))
            }
            DdError::MissingInput => {
                f.write_str("missing operand 'if=FILE' (there is no standard input)")
            }
            DdError::MissingOutput => {
                f.write_str("missing operand 'of=FILE' (there is no standard output)")
            }
            DdError::CannotSkip { file, errno } => {
                write!(f, "{}: cannot skip: {errno}", quote_file(file))
            }
            DdError::CannotSeek { file, errno } => {
                write!(f, "{}: cannot seek: {errno}", quote_file(file))
            }
            DdError::SeekTooLarge { records, obs } => write!(
                f,
                "offset too large: cannot truncate to a length of seek={records} \
                 ({obs}-byte) blocks"
            ),
            DdError::NoMemory { input, size } => write!(
                f,
                "memory exhausted by {} buffer of size {size} bytes ({})",
                if *input { "input" } else { "output" },
                human_bytes(*size, true)
            ),
            DdError::Io { op, file, errno } => {
                let file = quote_always(file);
                match op {
                    IoOp::Open => write!(f, "failed to open {file}: {errno}"),
                    IoOp::Read => write!(f, "error reading {file}: {errno}"),
                    IoOp::Write => write!(f, "error writing {file}: {errno}"),
                    IoOp::WriteBlock => write!(f, "writing to {file}: {errno}"),
                    IoOp::Fsync => write!(f, "fsync failed for {file}: {errno}"),
                    IoOp::Fdatasync => write!(f, "fdatasync failed for {file}: {errno}"),
                }
            }
        }
    }
}

impl fmt::Display for DdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dd: ")?;
        self.body(f)
    }
}

impl From<DdError> for CmdError {
    fn from(e: DdError) -> Self {
        let mut msg = String::new();
        let _ = e.body(&mut msg);
        CmdError::Failed(msg)
    }
}

/// GNU's `quote()` in the C locale: `'…'`, with `\` and `'` escaped by a backslash.
/// (Control characters, which GNU escapes too, are printed as they are.)
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('\'');
    for c in s.chars() {
        if matches!(c, '\\' | '\'') {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('\'');
    q
}

/// Characters GNU's shell quoting leaves alone.
fn shell_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || "%+,-./:]_".contains(c)
}

/// GNU's `quoteaf()` for file names: always quoted, `'…'`, or `"…"` when the name
/// has a single quote (and nothing a double quote would expand).
fn quote_always(s: &str) -> String {
    if s.contains('\'') {
        if !s.contains(['"', '$', '`', '\\', '!']) {
            return format!("\"{s}\"");
        }
        return format!("'{}'", s.replace('\'', "'\\''"));
    }
    format!("'{s}'")
}

/// GNU's `quotef()`: a file name as is when the shell would not need quotes for it,
/// else as [`quote_always`].
fn quote_file(s: &str) -> String {
    if !s.is_empty() && s.chars().all(shell_safe) {
        String::from(s)
    } else {
        quote_always(s)
    }
}

// ---------------------------------------------------------------------------------
// Record accounting
// ---------------------------------------------------------------------------------

/// What GNU dd counts: records (blocks) read and written, full and partial, and
/// bytes written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Reads that filled `ibs`.
    pub full_in: u64,
    /// Reads shorter than `ibs`.
    pub partial_in: u64,
    /// Writes of a full output block.
    pub full_out: u64,
    /// Writes shorter than a full output block.
    pub partial_out: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Records truncated by `conv=block` (never, as it is not implemented; printed
    /// as GNU does when nonzero).
    pub truncated: u64,
}

impl Stats {
    /// No records yet.
    pub const fn new() -> Self {
        Stats {
            full_in: 0,
            partial_in: 0,
            full_out: 0,
            partial_out: 0,
            bytes_out: 0,
            truncated: 0,
        }
    }

    /// Counts a read that returned `n` bytes with input block size `ibs`: full if
    /// `n >= ibs`, else partial (a `count_bytes` tail read is partial too). Do not call
    /// it at EOF (a read of 0); do call it with 0 for a failed read that
    /// `conv=noerror,sync` replaces by zeros: GNU counts that as a partial record.
    pub fn record_read(&mut self, n: u64, ibs: u64) {
        if n >= ibs {
            self.full_in += 1;
        } else {
            self.partial_in += 1;
        }
    }

    /// Counts a write of `n` bytes (what the device took) where a full block is `obs`
    /// bytes (`ibs` too when `bs=` is given): full if `n >= obs`, partial if `0 < n <
    /// obs`, nothing if 0. For a failed or short write pass the bytes that were
    /// written: a partial write counts as a partial record (coreutils 9.11+).
    pub fn record_write(&mut self, n: u64, obs: u64) {
        self.bytes_out += n;
        if n >= obs {
            self.full_out += 1;
        } else if n > 0 {
            self.partial_out += 1;
        }
    }

    /// Records read so far, full and partial (what `count=` limits).
    pub fn records_in(&self) -> u64 {
        self.full_in + self.partial_in
    }
}

// ---------------------------------------------------------------------------------
// Transfer plan
// ---------------------------------------------------------------------------------

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
    /// beyond it fails with `ENOSPC` (GNU then prints [`IoOp::Write`] or
    /// [`IoOp::WriteBlock`] with [`Errno::NoSpace`] and the statistics).
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
    let in_offset = args.skip_offset().ok_or_else(|| DdError::CannotSkip {
        file: args.input.clone(),
        errno: Errno::Overflow,
    })?;
    if in_size.is_some_and(|s| in_offset > s) {
        return Err(DdError::CannotSkip {
            file: args.input.clone(),
            errno: Errno::Invalid,
        });
    }
    let out_offset = out_offset.ok_or_else(|| DdError::CannotSeek {
        file: args.output.clone(),
        errno: Errno::Overflow,
    })?;
    if out_size.is_some_and(|s| out_offset > s) {
        return Err(DdError::CannotSeek {
            file: args.output.clone(),
            errno: Errno::Invalid,
        });
    }
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

// ---------------------------------------------------------------------------------
// Statistics lines
// ---------------------------------------------------------------------------------

/// The statistics GNU prints at the end (each line ends in `\n`): the record lines,
/// truncated records if any, and the transfer line; only the record lines with
/// `status=noxfer`; nothing with `status=none`. With `status=progress`, print
/// [`Progress::finish`] first.
pub fn summary(stats: &Stats, elapsed_ns: u64, status: Status) -> String {
    let mut s = String::new();
    if status == Status::None {
        return s;
    }
    let _ = write!(
        s,
        "{}+{} records in\n{}+{} records out\n",
        stats.full_in, stats.partial_in, stats.full_out, stats.partial_out
    );
    if stats.truncated != 0 {
        let plural = if stats.truncated == 1 { "" } else { "s" };
        let _ = writeln!(s, "{} truncated record{plural}", stats.truncated);
    }
    if status != Status::NoXfer {
        s.push_str(&transfer_line(stats.bytes_out, elapsed_ns, false));
        s.push('\n');
    }
    s
}

/// One `status=progress` line: `\r` then, e.g., `123456 bytes (123 kB, 121 KiB)
/// copied, 1 s, 123 kB/s` (whole seconds), without a newline. GNU also pads the line
/// with spaces to cover a longer previous one; [`Progress`] does that.
pub fn progress_line(bytes: u64, elapsed_ns: u64) -> String {
    let mut s = String::from("\r");
    s.push_str(&transfer_line(bytes, elapsed_ns, true));
    s
}

/// GNU's once-a-second `status=progress` output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Elapsed time at which the next line is due (GNU's `next_time`).
    next_ns: u64,
    /// Length of the last line printed, without the `\r` (GNU's `progress_len`).
    len: usize,
}

impl Progress {
    /// Nothing printed yet; the first line is due after one second.
    pub const fn new() -> Self {
        Progress {
            next_ns: NS_PER_S,
            len: 0,
        }
    }

    /// Call before each read with the bytes written so far and the time since the
    /// copy started: once a line is due, returns it (`\r`, the transfer line, and
    /// spaces to erase a longer previous line) and schedules the next one a second
    /// later, as GNU does (a slow copy catches up one line per call).
    pub fn poll(&mut self, bytes: u64, elapsed_ns: u64) -> Option<String> {
        if elapsed_ns < self.next_ns {
            return None;
        }
        self.next_ns = self.next_ns.saturating_add(NS_PER_S);
        let line = transfer_line(bytes, elapsed_ns, true);
        let mut s = String::with_capacity(line.len().max(self.len) + 1);
        s.push('\r');
        s.push_str(&line);
        for _ in line.len()..self.len {
            s.push(' ');
        }
        self.len = line.len();
        Some(s)
    }

    /// What to print before the final statistics: `\n` if a progress line is on
    /// the screen, else nothing.
    pub fn finish(&mut self) -> &'static str {
        if core::mem::take(&mut self.len) > 0 {
            "\n"
        } else {
            ""
        }
    }
}

/// GNU's `print_xfer_stats` text, without `\r` or newline.
fn transfer_line(bytes: u64, elapsed_ns: u64, progress: bool) -> String {
    let si = human_bytes(bytes, false);
    let iec = human_bytes(bytes, true);
    let (secs, rate) = if elapsed_ns > 0 {
        // GNU: delta_s = delta_xtime / 1e9 in double.
        let delta_s = elapsed_ns as f64 / NS_PER_S as f64;
        let secs = if progress {
            format!("{delta_s:.0}")
        } else {
            format_g(delta_s)
        };
        (
            secs,
            human_readable(bytes, NS_PER_S, elapsed_ns, false) + "/s",
        )
    } else {
        (String::from("0"), String::from("Infinity B/s"))
    };
    if lacks_prefix(&si) {
        let unit = if bytes == 1 { "byte" } else { "bytes" };
        format!("{bytes} {unit} copied, {secs} s, {rate}")
    } else if lacks_prefix(&iec) {
        format!("{bytes} bytes ({si}) copied, {secs} s, {rate}")
    } else {
        format!("{bytes} bytes ({si}, {iec}) copied, {secs} s, {rate}")
    }
}

/// GNU's `abbreviation_lacks_prefix`: `"512 B"` has no SI prefix.
fn lacks_prefix(s: &str) -> bool {
    s.len() >= 2 && s.as_bytes()[s.len() - 2] == b' '
}

/// A byte count as GNU dd shows it: `134 MB` (powers of 1000) or `128 MiB` (powers of
/// 1024, `base_1024`), `512 B` below the first power; 3 significant digits at most,
/// rounded to nearest (gnulib `human_readable` with `human_autoscale |
/// human_round_to_nearest | human_space_before_unit | human_SI | human_B`).
pub fn human_bytes(n: u64, base_1024: bool) -> String {
    human_readable(n, 1, 1, base_1024)
}

/// gnulib's `human_readable(n, buf, opts, from_block_size, to_block_size)` with dd's
/// options: the value `n * from / to`, autoscaled. Exact integer arithmetic when
/// `from` and `to` divide each other, as gnulib does; otherwise gnulib computes in
/// `long double`, which is x87 80-bit extended precision on x86_64 Linux (the
/// reference): [`Ext`] emulates that bit for bit.
fn human_readable(n: u64, from: u64, to: u64, base_1024: bool) -> String {
    let base: u64 = if base_1024 { 1024 } else { 1000 };
    if to <= from {
        if from.is_multiple_of(to) {
            let multiplier = from / to;
            if let Some(amt) = n.checked_mul(multiplier) {
                return human_integer(amt, 0, 0, base);
            }
        }
    } else if from != 0 && to.is_multiple_of(from) {
        // C's uintmax_t arithmetic, wrapping included.
        let divisor = to / from;
        let r10 = (n % divisor).wrapping_mul(10);
        let r2 = (r10 % divisor).wrapping_mul(2);
        let rounding = if r2 < divisor {
            u32::from(0 < r2)
        } else {
            2 + u32::from(divisor < r2)
        };
        return human_integer(n / divisor, (r10 / divisor) as u32, rounding, base);
    }
    human_float(n, from, to, base)
}

/// The power letters after `k`/`K`.
const POWER_LETTERS: &[u8] = b"\0KMGTPEZYRQ";
const EXPONENT_MAX: u32 = 10;

/// The unit suffix: ` B`, ` kB`, ` MB`…, or ` KiB`, ` MiB`….
fn unit(exponent: u32, base: u64) -> String {
    let mut s = String::from(" ");
    if exponent > 0 {
        if base == 1000 && exponent == 1 {
            s.push('k');
        } else {
            s.push(POWER_LETTERS[exponent as usize] as char);
        }
        if base == 1024 {
            s.push('i');
        }
    }
    s.push('B');
    s
}

/// gnulib's integer path: `amt.tenths` plus a rounding indicator (0: exact, 1: below
/// half a tenth, 2: half, 3: above half).
fn human_integer(mut amt: u64, mut tenths: u32, mut rounding: u32, base: u64) -> String {
    let mut exponent = 0;
    let mut fraction: Option<u32> = None;
    if base <= amt {
        let b = base as u32;
        loop {
            let r10 = (amt % base) as u32 * 10 + tenths;
            let r2 = (r10 % b) * 2 + (rounding >> 1);
            amt /= base;
            tenths = r10 / b;
            rounding = if r2 < b {
                u32::from(r2 + rounding != 0)
            } else {
                2 + u32::from(b < r2 + rounding)
            };
            exponent += 1;
            if !(base <= amt && exponent < EXPONENT_MAX) {
                break;
            }
        }
        if amt < 10 {
            if 2 < rounding + (tenths & 1) {
                tenths += 1;
                rounding = 0;
                if tenths == 10 {
                    amt += 1;
                    tenths = 0;
                }
            }
            if amt < 10 {
                fraction = Some(tenths);
                tenths = 0;
                rounding = 0;
            }
        }
    }
    if 5 < tenths + u32::from(0 < rounding + (amt & 1) as u32) {
        amt += 1;
        if amt == base && exponent < EXPONENT_MAX {
            exponent += 1;
            fraction = Some(0);
            amt = 1;
        }
    }
    let mut s = amt.to_string();
    if let Some(t) = fraction {
        let _ = write!(s, ".{t}");
    }
    s + &unit(exponent, base)
}

/// gnulib's `long double` path with autoscaling (at least one power: `0.0 kB`).
fn human_float(n: u64, from: u64, to: u64, base: u64) -> String {
    let damt = Ext::from_u64(n).mul(Ext::from_u64(from).div(Ext::from_u64(to)));
    let b = Ext::from_u64(base);
    let mut e = Ext::from_u64(1);
    let mut exponent = 0;
    loop {
        e = e.mul(b);
        exponent += 1;
        if !(e.mul(b).le(damt) && exponent < EXPONENT_MAX) {
            break;
        }
    }
    let damt = damt.div(e);
    // sprintf("%.1Lf"); if that is longer than "99.9" (SI) or "999.9" (IEC), "%.0Lf"
    // of damt * 10 / 10.
    let tenths = damt.round_scaled(1);
    let mut s = format!("{}.{}", tenths / 10, tenths % 10);
    if s.len() > 3 + usize::from(base == 1000) {
        let ten = Ext::from_u64(10);
        s = damt.mul(ten).div(ten).round_scaled(0).to_string();
    }
    s + &unit(exponent, base)
}

/// An x87 80-bit extended value `m * 2^e`, `m` normalized (bit 63 set) or zero;
/// nonnegative only. Operations round to nearest, ties to even, as the FPU does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ext {
    m: u64,
    e: i32,
}

impl Ext {
    const ZERO: Ext = Ext { m: 0, e: 0 };

    /// Exact, as the 64-bit significand holds any u64.
    fn from_u64(x: u64) -> Ext {
        if x == 0 {
            return Ext::ZERO;
        }
        let s = x.leading_zeros();
        Ext {
            m: x << s,
            e: -(s as i32),
        }
    }

    /// Rounds `q` (64 bits, top bit set) given the next bit and whether anything
    /// below it is nonzero.
    fn round(q: u64, e: i32, guard: bool, sticky: bool) -> Ext {
        if guard && (sticky || q & 1 == 1) {
            match q.checked_add(1) {
                Some(m) => Ext { m, e },
                None => Ext {
                    m: 1 << 63,
                    e: e + 1,
                },
            }
        } else {
            Ext { m: q, e }
        }
    }

    fn mul(self, o: Ext) -> Ext {
        if self.m == 0 || o.m == 0 {
            return Ext::ZERO;
        }
        let p = u128::from(self.m) * u128::from(o.m); // in [2^126, 2^128)
        let shift = if p >> 127 != 0 { 64 } else { 63 };
        let q = (p >> shift) as u64;
        let guard = (p >> (shift - 1)) & 1 == 1;
        let sticky = p & ((1u128 << (shift - 1)) - 1) != 0;
        Ext::round(q, self.e + o.e + shift, guard, sticky)
    }

    fn div(self, o: Ext) -> Ext {
        debug_assert!(o.m != 0);
        if self.m == 0 {
            return Ext::ZERO;
        }
        let num = u128::from(self.m) << 64;
        let d = u128::from(o.m);
        let (q, r) = (num / d, num % d); // q in (2^63, 2^65)
        let e = self.e - o.e - 64;
        if q >> 64 != 0 {
            Ext::round((q >> 1) as u64, e + 1, q & 1 == 1, r != 0)
        } else {
            let r2 = r * 2;
            let guard = r2 >= d;
            let sticky = if guard { r2 != d } else { r2 != 0 };
            Ext::round(q as u64, e, guard, sticky)
        }
    }

    fn le(self, o: Ext) -> bool {
        match (self.m, o.m) {
            (0, _) => true,
            (_, 0) => false,
            _ => (self.e, self.m) <= (o.e, o.m),
        }
    }

    /// `self * 10^decimals` rounded to an integer, ties to even: the digits of
    /// `printf("%.*Lf", decimals, self)` (glibc prints the exact binary value).
    fn round_scaled(self, decimals: u32) -> u128 {
        let s = u128::from(self.m) * 10u128.pow(decimals); // < 2^68
        if self.e >= 0 {
            return s << self.e; // only for values below 2^60 here
        }
        let sh = self.e.unsigned_abs();
        if sh >= 128 {
            return 0;
        }
        let q = s >> sh;
        let rem = s & ((1u128 << sh) - 1);
        let half = 1u128 << (sh - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    }
}

/// `printf("%g", v)`: 6 significant digits, trailing zeros removed, exponent form
/// below 1e-4 and from 1e6 (`1.52`, `0.0123`, `12`, `1.6694e-05`, `1.23457e+06`).
/// Rounds ties to even on the exact binary value, as glibc does.
pub fn format_g(v: f64) -> String {
    if v == 0.0 {
        return String::from("0");
    }
    let sci = format!("{v:.5e}"); // e.g. "1.52000e0", rounded to 6 digits
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            trim_fraction(mantissa),
            exp.unsigned_abs()
        )
    } else {
        let fixed = format!("{:.*}", (5 - exp) as usize, v);
        String::from(trim_fraction(&fixed))
    }
}

/// Drops trailing zeros after a decimal point, and the point if nothing is left.
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<DdArgs, DdError> {
        let words: Vec<&str> = line.split_whitespace().collect();
        parse(&words)
    }

    fn ok(line: &str) -> DdArgs {
        args(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn err(line: &str) -> String {
        match args(line) {
            Ok(a) => panic!("{line}: parsed as {a:?}"),
            Err(e) => e.to_string(),
        }
    }

    // -- operands -------------------------------------------------------------------

    #[test]
    fn defaults() {
        let a = ok("if=/dev/xvda of=null");
        assert_eq!(a.input, "/dev/xvda");
        assert_eq!(a.output, "null");
        assert_eq!((a.ibs, a.obs, a.bs), (512, 512, None));
        assert_eq!((a.count, a.skip, a.seek), (None, 0, 0));
        assert_eq!(a.conv, Conv::default());
        assert_eq!(a.iflag, Flags::default());
        assert_eq!(a.oflag, Flags::default());
        assert_eq!(a.status, Status::Default);
        assert!(a.warnings.is_empty());
    }

    #[test]
    fn block_sizes() {
        let a = ok("if=a of=b bs=16k");
        assert_eq!((a.ibs, a.obs, a.bs), (16384, 16384, Some(16384)));
        let a = ok("if=a of=b ibs=1M obs=4kB");
        assert_eq!((a.ibs, a.obs, a.bs), (1 << 20, 4000, None));
        let a = ok("if=a of=b ibs=100");
        assert_eq!((a.ibs, a.obs), (100, 512));
        // bs= wins over ibs=/obs= in any order, as in GNU.
        let a = ok("if=a of=b bs=4096 ibs=1 obs=2");
        assert_eq!((a.ibs, a.obs, a.bs), (4096, 4096, Some(4096)));
        let a = ok("if=a of=b ibs=1 bs=2x1K obs=3");
        assert_eq!((a.ibs, a.obs), (2048, 2048));
        // Later operands override earlier ones.
        let a = ok("if=a of=b if=c of=d bs=1 bs=2 count=1 count=3");
        assert_eq!((a.input.as_str(), a.output.as_str()), ("c", "d"));
        assert_eq!((a.bs, a.count), (Some(2), Some(3)));
        assert_eq!(ok("if=a of=b bs=7E").ibs, 7 << 60);
        assert_eq!(ok("if=a of=b bs=9223372036854775806").ibs, MAX_BLOCK_SIZE);
    }

    #[test]
    fn counts_skips_and_seeks() {
        let a = ok("if=a of=b count=10 skip=2 seek=3");
        assert_eq!((a.count, a.skip, a.seek), (Some(10), 2, 3));
        assert!(!a.iflag.count_bytes && !a.iflag.skip_bytes && !a.oflag.seek_bytes);
        let a = ok("if=a of=b iseek=4 oseek=5 count=0");
        assert_eq!((a.count, a.skip, a.seek), (Some(0), 4, 5));
        // A 'B' anywhere in the number counts bytes (coreutils 9.1+).
        let a = ok("if=a of=b count=1MiB skip=512B seek=1KB");
        assert_eq!((a.count, a.skip, a.seek), (Some(1 << 20), 512, 1000));
        assert!(a.iflag.count_bytes && a.iflag.skip_bytes && a.oflag.seek_bytes);
        // …from the operand that is in effect, OR-ed with the flags.
        let a = ok("if=a of=b count=1B count=2 skip=3 iflag=skip_bytes");
        assert!(!a.iflag.count_bytes && a.iflag.skip_bytes);
        let a = ok("if=a of=b iflag=count_bytes,skip_bytes oflag=seek_bytes");
        assert!(a.iflag.count_bytes && a.iflag.skip_bytes && a.oflag.seek_bytes);
        assert_eq!(
            ok("if=a of=b skip=9223372036854775807").skip,
            i64::MAX as u64
        );
    }

    #[test]
    fn conversions_flags_and_status() {
        let a = ok("if=a of=b conv=fsync,fdatasync conv=notrunc,noerror,sync");
        assert_eq!(
            a.conv,
            Conv {
                fsync: true,
                fdatasync: true,
                notrunc: true,
                noerror: true,
                sync: true
            }
        );
        let a = ok("if=a of=b iflag=direct,fullblock iflag=dsync,sync oflag=direct,dsync,sync");
        assert_eq!(
            a.iflag,
            Flags {
                direct: true,
                dsync: true,
                sync: true,
                fullblock: true,
                ..Flags::default()
            }
        );
        assert_eq!(
            a.oflag,
            Flags {
                direct: true,
                dsync: true,
                sync: true,
                ..Flags::default()
            }
        );
        // Symbols for the other side are accepted and do nothing, as in GNU.
        let a = ok("if=a of=b iflag=seek_bytes oflag=count_bytes,skip_bytes");
        assert!(a.iflag.seek_bytes && a.oflag.count_bytes && a.oflag.skip_bytes);
        assert_eq!(ok("if=a of=b status=none").status, Status::None);
        assert_eq!(ok("if=a of=b status=noxfer").status, Status::NoXfer);
        assert_eq!(ok("if=a of=b status=progress").status, Status::Progress);
        // Exclusive: the last one wins, in a list or across operands.
        assert_eq!(ok("if=a of=b status=progress,none").status, Status::None);
        assert_eq!(
            ok("if=a of=b status=none status=noxfer").status,
            Status::NoXfer
        );
    }

    /// Messages compared with `LC_ALL=C dd` 9.1 (without its "Try 'dd --help'" line).
    #[test]
    fn gnu_error_messages() {
        let cases = [
            ("if=a of=b foo", "dd: unrecognized operand 'foo'"),
            ("if=a of=b if", "dd: unrecognized operand 'if'"),
            ("if=a of=b =x", "dd: unrecognized operand '=x'"),
            ("if=a of=b bar=1q", "dd: unrecognized operand 'bar=1q'"),
            ("if=a of=b foo'x", "dd: unrecognized operand 'foo\\'x'"),
            ("if=a of=b x\\y", "dd: unrecognized operand 'x\\\\y'"),
            ("if=a of=b -x", "dd: unrecognized operand '-x'"),
            ("if=a of=b bs=12q", "dd: invalid number: '12q'"),
            ("if=a of=b bs=0", "dd: invalid number: '0'"),
            ("if=a of=b ibs=0", "dd: invalid number: '0'"),
            ("if=a of=b obs=0", "dd: invalid number: '0'"),
            ("if=a of=b bs=0x512", "dd: invalid number: '0x512'"),
            ("if=a of=b bs=", "dd: invalid number: ''"),
            ("if=a of=b bs=-1", "dd: invalid number: '-1'"),
            ("if=a of=b bs=1x", "dd: invalid number: '1x'"),
            ("if=a of=b bs=1'q", "dd: invalid number: '1\\'q'"),
            ("if=a of=b bs=a\\b", "dd: invalid number: 'a\\\\b'"),
            ("if=a of=b count=12q", "dd: invalid number: '12q'"),
            ("if=a of=b count=-1", "dd: invalid number: '-1'"),
            ("if=a of=b skip=1m", "dd: invalid number: '1m'"),
            ("if=a of=b seek=x2", "dd: invalid number: 'x2'"),
            (
                "if=a of=b bs=99999999999T",
                "dd: invalid number: '99999999999T': Value too large for defined data type",
            ),
            (
                "if=a of=b bs=16E",
                "dd: invalid number: '16E': Value too large for defined data type",
            ),
            (
                "if=a of=b bs=9223372036854775807",
                "dd: invalid number: '9223372036854775807': Value too large for defined data type",
            ),
            (
                "if=a of=b count=9223372036854775808",
                "dd: invalid number: '9223372036854775808': Value too large for defined data type",
            ),
            (
                "if=a of=b skip=99999999999999999999",
                "dd: invalid number: '99999999999999999999': Value too large for defined data type",
            ),
            ("if=a of=b conv=bogus", "dd: invalid conversion: 'bogus'"),
            (
                "if=a of=b conv=sync,bogus",
                "dd: invalid conversion: 'bogus'",
            ),
            ("if=a of=b conv=", "dd: invalid conversion: ''"),
            ("if=a of=b conv=sync,", "dd: invalid conversion: ''"),
            ("if=a of=b conv=it's", "dd: invalid conversion: 'it\\'s'"),
            ("if=a of=b conv=a\"b", "dd: invalid conversion: 'a\"b'"),
            ("if=a of=b status=loud", "dd: invalid status level: 'loud'"),
            ("if=a of=b status=", "dd: invalid status level: ''"),
            (
                "if=a of=b status=default",
                "dd: invalid status level: 'default'",
            ),
            ("if=a of=b iflag=x", "dd: invalid input flag: 'x'"),
            ("if=a of=b iflag=", "dd: invalid input flag: ''"),
            (
                "if=a of=b iflag=count_bytes,x",
                "dd: invalid input flag: 'x'",
            ),
            ("if=a of=b iflag=cio", "dd: invalid input flag: 'cio'"),
            ("if=a of=b iflag=binary", "dd: invalid input flag: 'binary'"),
            (
                "if=a of=b iflag=nolinks",
                "dd: invalid input flag: 'nolinks'",
            ),
            ("if=a of=b oflag=x", "dd: invalid output flag: 'x'"),
            (
                "if=a of=b oflag=seek_bytes,dsync,x",
                "dd: invalid output flag: 'x'",
            ),
            (
                "if=a of=b oflag=fullblock",
                "dd: invalid output flag: 'fullblock'",
            ),
            // The first error wins.
            ("if=a of=b bs=0 conv=bogus", "dd: invalid number: '0'"),
            (
                "if=a of=b conv=bogus bs=0",
                "dd: invalid conversion: 'bogus'",
            ),
            ("if=a of=b zzz=0 bs=0", "dd: unrecognized operand 'zzz=0'"),
        ];
        for (line, want) in cases {
            assert_eq!(err(line), want, "{line}");
        }
    }

    #[test]
    fn our_error_messages() {
        let cases = [
            (
                "of=b",
                "dd: missing operand 'if=FILE' (there is no standard input)",
            ),
            (
                "",
                "dd: missing operand 'if=FILE' (there is no standard input)",
            ),
            (
                "if=a",
                "dd: missing operand 'of=FILE' (there is no standard output)",
            ),
            (
                "if=a of=b oflag=fullblock if=",
                "dd: invalid output flag: 'fullblock'",
            ),
            ("if=a of=b conv=swab", "dd: unsupported conversion: 'swab'"),
            (
                "if=a of=b conv=sync,sparse",
                "dd: unsupported conversion: 'sparse'",
            ),
            (
                "if=a of=b iflag=nocache",
                "dd: unsupported input flag: 'nocache'",
            ),
            (
                "if=a of=b oflag=append",
                "dd: unsupported output flag: 'append'",
            ),
            ("if=a of=b cbs=80", "dd: unsupported operand: 'cbs=80'"),
        ];
        for (line, want) in cases {
            assert_eq!(err(line), want, "{line}");
        }
        for c in CONV_UNSUPPORTED {
            assert_eq!(
                err(&format!("if=a of=b conv={c}")),
                format!("dd: unsupported conversion: '{c}'")
            );
        }
        for f in FLAG_UNSUPPORTED {
            assert_eq!(
                err(&format!("if=a of=b iflag={f}")),
                format!("dd: unsupported input flag: '{f}'")
            );
        }
    }

    #[test]
    fn zero_multiplier_warning() {
        // GNU: "dd: warning: '0x' is a zero multiplier; use '00x' if that is intended".
        const W: &str = "'0x' is a zero multiplier; use '00x' if that is intended";
        assert_eq!(ok("if=a of=b count=0x5").warnings, [W]);
        assert_eq!(ok("if=a of=b count=2x0x5").warnings, [W]);
        assert!(ok("if=a of=b count=00x5").warnings.is_empty());
        assert!(ok("if=a of=b count=0").warnings.is_empty());
        assert!(ok("if=a of=b count=5x0").warnings.is_empty());
    }

    #[test]
    fn errors_become_shell_errors_without_the_prefix() {
        let e: CmdError = DdError::InvalidNumber("12q".into()).into();
        assert_eq!(e, CmdError::failed("invalid number: '12q'"));
        let e: CmdError = DdError::MissingInput.into();
        assert_eq!(
            e,
            CmdError::failed("missing operand 'if=FILE' (there is no standard input)")
        );
    }

    #[test]
    fn runtime_error_messages() {
        let io = |op, file: &str, errno| DdError::Io {
            op,
            file: file.into(),
            errno,
        };
        let cases = [
            // Compared with GNU dd 9.1.
            (
                io(IoOp::Open, "/tmp/nonexist", Errno::NotFound),
                "dd: failed to open '/tmp/nonexist': No such file or directory",
            ),
            (
                io(IoOp::Open, "/tmp/no'pe", Errno::NotFound),
                "dd: failed to open \"/tmp/no'pe\": No such file or directory",
            ),
            (
                io(IoOp::Open, "/tmp/no pe", Errno::NotFound),
                "dd: failed to open '/tmp/no pe': No such file or directory",
            ),
            (
                io(IoOp::Write, "/dev/loop0", Errno::NoSpace),
                "dd: error writing '/dev/loop0': No space left on device",
            ),
            (
                io(IoOp::WriteBlock, "/dev/loop0", Errno::NoSpace),
                "dd: writing to '/dev/loop0': No space left on device",
            ),
            (
                DdError::NoMemory {
                    input: true,
                    size: 1 << 60,
                },
                "dd: memory exhausted by input buffer of size 1152921504606846976 bytes (1.0 EiB)",
            ),
            (
                DdError::NoMemory {
                    input: true,
                    size: 1_000_000_000_000,
                },
                "dd: memory exhausted by input buffer of size 1000000000000 bytes (931 GiB)",
            ),
            // GNU's wording for these steps.
            (
                io(IoOp::Read, "xvda", Errno::Io),
                "dd: error reading 'xvda': Input/output error",
            ),
            (
                io(IoOp::Fsync, "xvdb", Errno::ReadOnly),
                "dd: fsync failed for 'xvdb': Read-only file system",
            ),
            (
                io(IoOp::Fdatasync, "xvdb", Errno::Invalid),
                "dd: fdatasync failed for 'xvdb': Invalid argument",
            ),
            (
                DdError::NoMemory {
                    input: false,
                    size: 1 << 30,
                },
                "dd: memory exhausted by output buffer of size 1073741824 bytes (1.0 GiB)",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }

    // -- record accounting ------------------------------------------------------------

    #[test]
    fn record_accounting() {
        let mut s = Stats::new();
        s.record_read(512, 512);
        s.record_read(100, 512);
        s.record_read(0, 512); // a failed read replaced by conv=noerror,sync
        assert_eq!((s.full_in, s.partial_in, s.records_in()), (1, 2, 3));
        s.record_write(512, 512);
        s.record_write(1, 512);
        s.record_write(0, 512);
        assert_eq!((s.full_out, s.partial_out, s.bytes_out), (1, 1, 513));
    }

    /// A minimal engine over an in-memory input of `len` bytes, as GNU's `dd_copy`
    /// without errors: reads as [`Plan::next_read`] says, pads with `conv=sync`,
    /// writes each block with `bs=` or reblocks into `obs` without.
    fn simulate(line: &str, len: u64) -> Stats {
        let a = ok(line);
        let p = plan(&a, Some(len), None).unwrap();
        let mut pos = p.in_offset;
        let mut st = Stats::new();
        let mut pending = 0;
        while let Some(want) = p.next_read(&st) {
            let n = want.min(len - pos);
            if n == 0 {
                break;
            }
            pos += n;
            st.record_read(n, a.ibs);
            let n = if a.conv.sync { a.ibs } else { n };
            if a.bs.is_some() {
                st.record_write(n, a.obs);
            } else {
                pending += n;
                while pending >= a.obs {
                    st.record_write(a.obs, a.obs);
                    pending -= a.obs;
                }
            }
        }
        if pending > 0 {
            st.record_write(pending, a.obs);
        }
        st
    }

    /// Whole summaries of GNU dd 9.1 runs on files of those sizes (elapsed time fixed
    /// at 1.52 s through an LD_PRELOAD clock).
    #[test]
    fn gnu_runs() {
        let cases: &[(&str, u64, &str)] = &[
            (
                "bs=1000 count=2500 iflag=count_bytes",
                u64::MAX,
                "2+1 records in\n2+1 records out\n\
                 2500 bytes (2.5 kB, 2.4 KiB) copied, 1.52 s, 1.6 kB/s\n",
            ),
            (
                "ibs=1000 obs=512 count=3",
                u64::MAX,
                "3+0 records in\n5+1 records out\n\
                 3000 bytes (3.0 kB, 2.9 KiB) copied, 1.52 s, 2.0 kB/s\n",
            ),
            (
                "bs=512 conv=sync",
                1300,
                "2+1 records in\n3+0 records out\n\
                 1536 bytes (1.5 kB, 1.5 KiB) copied, 1.52 s, 1.0 kB/s\n",
            ),
            (
                "bs=512",
                1300,
                "2+1 records in\n2+1 records out\n\
                 1300 bytes (1.3 kB, 1.3 KiB) copied, 1.52 s, 0.9 kB/s\n",
            ),
            (
                "ibs=512 obs=1000 conv=sync",
                1300,
                "2+1 records in\n1+1 records out\n\
                 1536 bytes (1.5 kB, 1.5 KiB) copied, 1.52 s, 1.0 kB/s\n",
            ),
            (
                "ibs=512 obs=1000",
                1300,
                "2+1 records in\n1+1 records out\n\
                 1300 bytes (1.3 kB, 1.3 KiB) copied, 1.52 s, 0.9 kB/s\n",
            ),
            (
                "bs=1000 skip=2 count=2",
                5000,
                "2+0 records in\n2+0 records out\n\
                 2000 bytes (2.0 kB, 2.0 KiB) copied, 1.52 s, 1.3 kB/s\n",
            ),
            (
                "bs=1000 skip=2500B count=1000B",
                5000,
                "1+0 records in\n1+0 records out\n\
                 1000 bytes (1.0 kB) copied, 1.52 s, 0.7 kB/s\n",
            ),
            (
                "bs=1000 skip=2500 count=1000 iflag=skip_bytes,count_bytes",
                5000,
                "1+0 records in\n1+0 records out\n\
                 1000 bytes (1.0 kB) copied, 1.52 s, 0.7 kB/s\n",
            ),
            (
                "ibs=300 obs=700 skip=1 count=7",
                5000,
                "7+0 records in\n3+0 records out\n\
                 2100 bytes (2.1 kB, 2.1 KiB) copied, 1.52 s, 1.4 kB/s\n",
            ),
            (
                "obs=4096",
                5000,
                "9+1 records in\n1+1 records out\n\
                 5000 bytes (5.0 kB, 4.9 KiB) copied, 1.52 s, 3.3 kB/s\n",
            ),
            (
                "bs=1024 count=0",
                5000,
                "0+0 records in\n0+0 records out\n0 bytes copied, 1.52 s, 0.0 kB/s\n",
            ),
            (
                "bs=1024 skip=4",
                5000,
                "0+1 records in\n0+1 records out\n904 bytes copied, 1.52 s, 0.6 kB/s\n",
            ),
            (
                "bs=1M count=3 iflag=count_bytes",
                u64::MAX,
                "0+1 records in\n0+1 records out\n3 bytes copied, 1.52 s, 0.0 kB/s\n",
            ),
            (
                "bs=16k count=8192",
                u64::MAX,
                "8192+0 records in\n8192+0 records out\n\
                 134217728 bytes (134 MB, 128 MiB) copied, 1.52 s, 88.3 MB/s\n",
            ),
        ];
        for (ops, len, want) in cases {
            let st = simulate(&format!("if=in of=out {ops}"), *len);
            assert_eq!(summary(&st, 1_520_000_000, Status::Default), *want, "{ops}");
        }
    }

    #[test]
    fn summary_statuses() {
        let st = Stats {
            full_in: 2,
            full_out: 2,
            bytes_out: 246_912,
            ..Stats::new()
        };
        let records = "2+0 records in\n2+0 records out\n";
        let xfer = "246912 bytes (247 kB, 241 KiB) copied, 1 s, 247 kB/s\n";
        assert_eq!(
            summary(&st, 1_000_000_000, Status::Default),
            format!("{records}{xfer}")
        );
        assert_eq!(
            summary(&st, 1_000_000_000, Status::Progress),
            format!("{records}{xfer}")
        );
        assert_eq!(summary(&st, 1_000_000_000, Status::NoXfer), records);
        assert_eq!(summary(&st, 1_000_000_000, Status::None), "");
        // No time at all: GNU's "Infinity B/s".
        let one = Stats {
            full_in: 1,
            full_out: 1,
            bytes_out: 1,
            ..Stats::new()
        };
        assert_eq!(
            summary(&one, 0, Status::Default),
            "1+0 records in\n1+0 records out\n1 byte copied, 0 s, Infinity B/s\n"
        );
        let t = Stats {
            truncated: 1,
            ..Stats::new()
        };
        assert!(summary(&t, 1, Status::NoXfer).ends_with("records out\n1 truncated record\n"));
        let t = Stats {
            truncated: 3,
            ..Stats::new()
        };
        assert!(summary(&t, 1, Status::NoXfer).ends_with("3 truncated records\n"));
    }

    // -- transfer line numbers ----------------------------------------------------------

    /// `(bytes, elapsed ns, GNU's line)`: GNU dd 9.1 copying that many bytes from
    /// /dev/zero with its clock faked to that elapsed time; random sizes and times,
    /// both of gnulib's integer paths (times dividing or multiple of 1 s) and its
    /// `long double` path.
    const GNU_LINES: &[(u64, u64, &str)] = &[
        (
            35300000,
            400000000,
            "35300000 bytes (35 MB, 34 MiB) copied, 0.4 s, 88.2 MB/s",
        ),
        (1000, 999999999, "1000 bytes (1.0 kB) copied, 1 s, 1.0 kB/s"),
        (
            999950,
            1000000000,
            "999950 bytes (1.0 MB, 977 KiB) copied, 1 s, 1.0 MB/s",
        ),
        (
            999949,
            1000000000,
            "999949 bytes (1.0 MB, 977 KiB) copied, 1 s, 1.0 MB/s",
        ),
        (
            99950,
            1000000000,
            "99950 bytes (100 kB, 98 KiB) copied, 1 s, 100 kB/s",
        ),
        (
            9950,
            1000000000,
            "9950 bytes (10 kB, 9.7 KiB) copied, 1 s, 10 kB/s",
        ),
        (
            995000,
            1000000000,
            "995000 bytes (995 kB, 972 KiB) copied, 1 s, 995 kB/s",
        ),
        (1, 1000000000, "1 byte copied, 1 s, 1 B/s"),
        (0, 1, "0 bytes copied, 1e-09 s, 0 B/s"),
        (1, 1, "1 byte copied, 1e-09 s, 1.0 GB/s"),
        (
            1800000000,
            1,
            "1800000000 bytes (1.8 GB, 1.7 GiB) copied, 1e-09 s, 1.8 EB/s",
        ),
        (
            4737988,
            8,
            "4737988 bytes (4.7 MB, 4.5 MiB) copied, 8e-09 s, 592 TB/s",
        ),
        (5, 204, "5 bytes copied, 2.04e-07 s, 24.5 MB/s"),
        (
            80087075,
            1000,
            "80087075 bytes (80 MB, 76 MiB) copied, 1e-06 s, 80 TB/s",
        ),
        (
            69676721,
            34974,
            "69676721 bytes (70 MB, 66 MiB) copied, 3.4974e-05 s, 2.0 TB/s",
        ),
        (
            1639109063,
            186402,
            "1639109063 bytes (1.6 GB, 1.5 GiB) copied, 0.000186402 s, 8.8 TB/s",
        ),
        (
            32230648,
            120717945474,
            "32230648 bytes (32 MB, 31 MiB) copied, 120.718 s, 267 kB/s",
        ),
        (
            79986019,
            207459,
            "79986019 bytes (80 MB, 76 MiB) copied, 0.000207459 s, 386 GB/s",
        ),
        (6, 435, "6 bytes copied, 4.35e-07 s, 13.8 MB/s"),
        (12, 19000000000, "12 bytes copied, 19 s, 1 B/s"),
        (175, 311347352, "175 bytes copied, 0.311347 s, 0.6 kB/s"),
        (
            88514501,
            4163,
            "88514501 bytes (89 MB, 84 MiB) copied, 4.163e-06 s, 21.3 TB/s",
        ),
        (
            4041,
            10,
            "4041 bytes (4.0 kB, 3.9 KiB) copied, 1e-08 s, 404 GB/s",
        ),
        (
            1309397,
            6,
            "1309397 bytes (1.3 MB, 1.2 MiB) copied, 6e-09 s, 218 TB/s",
        ),
        (
            15387715,
            389375,
            "15387715 bytes (15 MB, 15 MiB) copied, 0.000389375 s, 39.5 GB/s",
        ),
        (
            17094346,
            2,
            "17094346 bytes (17 MB, 16 MiB) copied, 2e-09 s, 8.5 PB/s",
        ),
        (
            9875,
            5,
            "9875 bytes (9.9 kB, 9.6 KiB) copied, 5e-09 s, 2.0 TB/s",
        ),
        (1, 5184073446258, "1 byte copied, 5184.07 s, 0.0 kB/s"),
        (
            38708970,
            7000000000,
            "38708970 bytes (39 MB, 37 MiB) copied, 7 s, 5.5 MB/s",
        ),
        (
            160327,
            2691265,
            "160327 bytes (160 kB, 157 KiB) copied, 0.00269126 s, 59.6 MB/s",
        ),
        (
            5241924,
            8564671,
            "5241924 bytes (5.2 MB, 5.0 MiB) copied, 0.00856467 s, 612 MB/s",
        ),
        (
            54626688,
            378,
            "54626688 bytes (55 MB, 52 MiB) copied, 3.78e-07 s, 145 TB/s",
        ),
        (10, 1134150, "10 bytes copied, 0.00113415 s, 8.8 kB/s"),
        (
            1512,
            50601,
            "1512 bytes (1.5 kB, 1.5 KiB) copied, 5.0601e-05 s, 29.9 MB/s",
        ),
        (
            942019801,
            35,
            "942019801 bytes (942 MB, 898 MiB) copied, 3.5e-08 s, 26.9 PB/s",
        ),
        (6, 219542, "6 bytes copied, 0.000219542 s, 27.3 kB/s"),
        (
            20393484,
            28921894378,
            "20393484 bytes (20 MB, 19 MiB) copied, 28.9219 s, 705 kB/s",
        ),
        (10, 17, "10 bytes copied, 1.7e-08 s, 588 MB/s"),
        (
            538120,
            335858596,
            "538120 bytes (538 kB, 526 KiB) copied, 0.335859 s, 1.6 MB/s",
        ),
        (
            3605323,
            189374,
            "3605323 bytes (3.6 MB, 3.4 MiB) copied, 0.000189374 s, 19.0 GB/s",
        ),
        (
            2371,
            10,
            "2371 bytes (2.4 kB, 2.3 KiB) copied, 1e-08 s, 237 GB/s",
        ),
        (45, 158369793, "45 bytes copied, 0.15837 s, 0.3 kB/s"),
        (
            106425,
            223309388234,
            "106425 bytes (106 kB, 104 KiB) copied, 223.309 s, 0.5 kB/s",
        ),
        (
            1340054,
            641,
            "1340054 bytes (1.3 MB, 1.3 MiB) copied, 6.41e-07 s, 2.1 TB/s",
        ),
        (
            17042,
            11256083572,
            "17042 bytes (17 kB, 17 KiB) copied, 11.2561 s, 1.5 kB/s",
        ),
        (19, 58902281682, "19 bytes copied, 58.9023 s, 0.0 kB/s"),
        (
            478356,
            8000000000,
            "478356 bytes (478 kB, 467 KiB) copied, 8 s, 60 kB/s",
        ),
        (
            1000414,
            75004432323,
            "1000414 bytes (1.0 MB, 977 KiB) copied, 75.0044 s, 13.3 kB/s",
        ),
        (343, 40, "343 bytes copied, 4e-08 s, 8.6 GB/s"),
        (
            7869,
            141,
            "7869 bytes (7.9 kB, 7.7 KiB) copied, 1.41e-07 s, 55.8 GB/s",
        ),
        (
            128184,
            436036,
            "128184 bytes (128 kB, 125 KiB) copied, 0.000436036 s, 294 MB/s",
        ),
        (202, 4000000000, "202 bytes copied, 4 s, 50 B/s"),
        (
            30375,
            4,
            "30375 bytes (30 kB, 30 KiB) copied, 4e-09 s, 7.6 TB/s",
        ),
        (
            668013,
            334,
            "668013 bytes (668 kB, 652 KiB) copied, 3.34e-07 s, 2.0 TB/s",
        ),
        (
            3031752,
            28140850,
            "3031752 bytes (3.0 MB, 2.9 MiB) copied, 0.0281408 s, 108 MB/s",
        ),
        (
            457268576,
            56920806,
            "457268576 bytes (457 MB, 436 MiB) copied, 0.0569208 s, 8.0 GB/s",
        ),
        (358, 18000000000, "358 bytes copied, 18 s, 20 B/s"),
        (
            3216,
            185,
            "3216 bytes (3.2 kB, 3.1 KiB) copied, 1.85e-07 s, 17.4 GB/s",
        ),
        (2, 698951299313, "2 bytes copied, 698.951 s, 0.0 kB/s"),
        (871, 12138934, "871 bytes copied, 0.0121389 s, 71.8 kB/s"),
        (
            2109,
            1539679124,
            "2109 bytes (2.1 kB, 2.1 KiB) copied, 1.53968 s, 1.4 kB/s",
        ),
        (
            707146,
            438351770,
            "707146 bytes (707 kB, 691 KiB) copied, 0.438352 s, 1.6 MB/s",
        ),
        (
            398471,
            8715844937,
            "398471 bytes (398 kB, 389 KiB) copied, 8.71584 s, 45.7 kB/s",
        ),
        (
            11747,
            1866191460,
            "11747 bytes (12 kB, 11 KiB) copied, 1.86619 s, 6.3 kB/s",
        ),
        (44, 11341158034, "44 bytes copied, 11.3412 s, 0.0 kB/s"),
        (
            1442599,
            40,
            "1442599 bytes (1.4 MB, 1.4 MiB) copied, 4e-08 s, 36 TB/s",
        ),
        (
            423081,
            22,
            "423081 bytes (423 kB, 413 KiB) copied, 2.2e-08 s, 19.2 TB/s",
        ),
        (
            83571,
            25,
            "83571 bytes (84 kB, 82 KiB) copied, 2.5e-08 s, 3.3 TB/s",
        ),
        (
            1907,
            9000000000,
            "1907 bytes (1.9 kB, 1.9 KiB) copied, 9 s, 212 B/s",
        ),
        (
            312281174,
            441,
            "312281174 bytes (312 MB, 298 MiB) copied, 4.41e-07 s, 708 TB/s",
        ),
        (
            488104607,
            5158901072,
            "488104607 bytes (488 MB, 465 MiB) copied, 5.1589 s, 94.6 MB/s",
        ),
        (
            17417,
            25967263,
            "17417 bytes (17 kB, 17 KiB) copied, 0.0259673 s, 671 kB/s",
        ),
        (
            377075095,
            17474,
            "377075095 bytes (377 MB, 360 MiB) copied, 1.7474e-05 s, 21.6 TB/s",
        ),
        (
            34759,
            15149329125,
            "34759 bytes (35 kB, 34 KiB) copied, 15.1493 s, 2.3 kB/s",
        ),
        (26, 62963361938, "26 bytes copied, 62.9634 s, 0.0 kB/s"),
        (9, 10800879, "9 bytes copied, 0.0108009 s, 0.8 kB/s"),
        (158, 20, "158 bytes copied, 2e-08 s, 7.9 GB/s"),
        (
            6643076,
            920,
            "6643076 bytes (6.6 MB, 6.3 MiB) copied, 9.2e-07 s, 7.2 TB/s",
        ),
        (27, 356, "27 bytes copied, 3.56e-07 s, 75.8 MB/s"),
        (
            22578,
            8,
            "22578 bytes (23 kB, 22 KiB) copied, 8e-09 s, 2.8 TB/s",
        ),
        (
            48054,
            85784319,
            "48054 bytes (48 kB, 47 KiB) copied, 0.0857843 s, 560 kB/s",
        ),
        (
            18550357,
            22905916455,
            "18550357 bytes (19 MB, 18 MiB) copied, 22.9059 s, 810 kB/s",
        ),
        (
            6675,
            1500000000,
            "6675 bytes (6.7 kB, 6.5 KiB) copied, 1.5 s, 4.4 kB/s",
        ),
        (
            175350000,
            700000000,
            "175350000 bytes (175 MB, 167 MiB) copied, 0.7 s, 250 MB/s",
        ),
        (
            12323940,
            26511649782,
            "12323940 bytes (12 MB, 12 MiB) copied, 26.5116 s, 465 kB/s",
        ),
        (90, 600000000, "90 bytes copied, 0.6 s, 0.2 kB/s"),
        (
            1307591,
            22031869164,
            "1307591 bytes (1.3 MB, 1.2 MiB) copied, 22.0319 s, 59.3 kB/s",
        ),
        (
            4090920638,
            6194141325,
            "4090920638 bytes (4.1 GB, 3.8 GiB) copied, 6.19414 s, 660 MB/s",
        ),
        (
            1903400220,
            3851087953,
            "1903400220 bytes (1.9 GB, 1.8 GiB) copied, 3.85109 s, 494 MB/s",
        ),
        (
            4226169,
            8694925045,
            "4226169 bytes (4.2 MB, 4.0 MiB) copied, 8.69493 s, 486 kB/s",
        ),
        (
            10140831,
            15650637298,
            "10140831 bytes (10 MB, 9.7 MiB) copied, 15.6506 s, 648 kB/s",
        ),
        (
            1221303,
            4727320100,
            "1221303 bytes (1.2 MB, 1.2 MiB) copied, 4.72732 s, 258 kB/s",
        ),
        (
            38005112,
            19489800519,
            "38005112 bytes (38 MB, 36 MiB) copied, 19.4898 s, 2.0 MB/s",
        ),
        (
            1155216,
            18677695536,
            "1155216 bytes (1.2 MB, 1.1 MiB) copied, 18.6777 s, 61.9 kB/s",
        ),
        (
            2670000,
            600000000,
            "2670000 bytes (2.7 MB, 2.5 MiB) copied, 0.6 s, 4.4 MB/s",
        ),
        (
            4387777317,
            11630953788,
            "4387777317 bytes (4.4 GB, 4.1 GiB) copied, 11.631 s, 377 MB/s",
        ),
        (
            52950000,
            600000000,
            "52950000 bytes (53 MB, 50 MiB) copied, 0.6 s, 88.2 MB/s",
        ),
        (
            65000,
            1300000000,
            "65000 bytes (65 kB, 63 KiB) copied, 1.3 s, 50.0 kB/s",
        ),
        (
            899550000,
            900000000,
            "899550000 bytes (900 MB, 858 MiB) copied, 0.9 s, 1000 MB/s",
        ),
        (
            1571626,
            10509037574,
            "1571626 bytes (1.6 MB, 1.5 MiB) copied, 10.509 s, 150 kB/s",
        ),
        (
            14331406,
            15680732975,
            "14331406 bytes (14 MB, 14 MiB) copied, 15.6807 s, 914 kB/s",
        ),
        (
            1000000000,
            1234567890123456,
            "1000000000 bytes (1.0 GB, 954 MiB) copied, 1.23457e+06 s, 0.8 kB/s",
        ),
        (
            5000000000,
            1000000000000000000,
            "5000000000 bytes (5.0 GB, 4.7 GiB) copied, 1e+09 s, 5 B/s",
        ),
        (
            123456789,
            999999500000000,
            "123456789 bytes (123 MB, 118 MiB) copied, 1e+06 s, 0.1 kB/s",
        ),
        (
            4096,
            100,
            "4096 bytes (4.1 kB, 4.0 KiB) copied, 1e-07 s, 41 GB/s",
        ),
        (
            4096,
            10000,
            "4096 bytes (4.1 kB, 4.0 KiB) copied, 1e-05 s, 410 MB/s",
        ),
        (
            4096,
            100000,
            "4096 bytes (4.1 kB, 4.0 KiB) copied, 0.0001 s, 41 MB/s",
        ),
        (
            4096,
            99999,
            "4096 bytes (4.1 kB, 4.0 KiB) copied, 9.9999e-05 s, 41.0 MB/s",
        ),
        (
            999999,
            999999,
            "999999 bytes (1.0 MB, 977 KiB) copied, 0.000999999 s, 1.0 GB/s",
        ),
        (1, 1, "1 byte copied, 1e-09 s, 1.0 GB/s"),
        (
            134217728,
            1000000000,
            "134217728 bytes (134 MB, 128 MiB) copied, 1 s, 134 MB/s",
        ),
        (
            134217728,
            500000000,
            "134217728 bytes (134 MB, 128 MiB) copied, 0.5 s, 268 MB/s",
        ),
        (
            134217728,
            2000000000,
            "134217728 bytes (134 MB, 128 MiB) copied, 2 s, 67 MB/s",
        ),
        (
            134217728,
            3000000000,
            "134217728 bytes (134 MB, 128 MiB) copied, 3 s, 45 MB/s",
        ),
        (1000, 3000000000, "1000 bytes (1.0 kB) copied, 3 s, 333 B/s"),
        (999, 1000000000, "999 bytes copied, 1 s, 999 B/s"),
        (
            999500,
            1000000000,
            "999500 bytes (1.0 MB, 976 KiB) copied, 1 s, 1.0 MB/s",
        ),
        (
            999499,
            1000000000,
            "999499 bytes (999 kB, 976 KiB) copied, 1 s, 999 kB/s",
        ),
        (
            1048576,
            1000000000,
            "1048576 bytes (1.0 MB, 1.0 MiB) copied, 1 s, 1.0 MB/s",
        ),
        (
            1024,
            1000000000,
            "1024 bytes (1.0 kB, 1.0 KiB) copied, 1 s, 1.0 kB/s",
        ),
        (
            9994,
            10000000000,
            "9994 bytes (10 kB, 9.8 KiB) copied, 10 s, 999 B/s",
        ),
        (512, 123000, "512 bytes copied, 0.000123 s, 4.2 MB/s"),
        (
            134217728,
            1520000000,
            "134217728 bytes (134 MB, 128 MiB) copied, 1.52 s, 88.3 MB/s",
        ),
        (
            1023,
            1520000000,
            "1023 bytes (1.0 kB) copied, 1.52 s, 0.7 kB/s",
        ),
        (
            9999,
            1520000000,
            "9999 bytes (10 kB, 9.8 KiB) copied, 1.52 s, 6.6 kB/s",
        ),
        (
            10239,
            1520000000,
            "10239 bytes (10 kB, 10 KiB) copied, 1.52 s, 6.7 kB/s",
        ),
        (
            999999,
            1520000000,
            "999999 bytes (1.0 MB, 977 KiB) copied, 1.52 s, 658 kB/s",
        ),
        (
            1048575,
            1520000000,
            "1048575 bytes (1.0 MB, 1.0 MiB) copied, 1.52 s, 690 kB/s",
        ),
        (
            999500000,
            1520000000,
            "999500000 bytes (1.0 GB, 953 MiB) copied, 1.52 s, 658 MB/s",
        ),
        (
            2147483648,
            1520000000,
            "2147483648 bytes (2.1 GB, 2.0 GiB) copied, 1.52 s, 1.4 GB/s",
        ),
    ];

    /// Ties and near-ties where GNU's `long double` result differs from the exact
    /// quotient (exact rounding would print 3.8, 100, 10.0, 1000, 6.6, 0.0): the x87
    /// emulation has to get these right.
    const GNU_X87_LINES: &[(u64, u64, &str)] = &[
        (
            2625,
            700000000,
            "2625 bytes (2.6 kB, 2.6 KiB) copied, 0.7 s, 3.7 kB/s",
        ),
        (
            2625000,
            700000000,
            "2625000 bytes (2.6 MB, 2.5 MiB) copied, 0.7 s, 3.7 MB/s",
        ),
        (
            29985,
            300000000,
            "29985 bytes (30 kB, 29 KiB) copied, 0.3 s, 99.9 kB/s",
        ),
        (
            109945,
            1100000000,
            "109945 bytes (110 kB, 107 KiB) copied, 1.1 s, 99.9 kB/s",
        ),
        (
            29985000,
            300000000,
            "29985000 bytes (30 MB, 29 MiB) copied, 0.3 s, 99.9 MB/s",
        ),
        (
            109945000,
            1100000000,
            "109945000 bytes (110 MB, 105 MiB) copied, 1.1 s, 99.9 MB/s",
        ),
        (
            2985,
            300000000,
            "2985 bytes (3.0 kB, 2.9 KiB) copied, 0.3 s, 9.9 kB/s",
        ),
        (
            10945,
            1100000000,
            "10945 bytes (11 kB, 11 KiB) copied, 1.1 s, 9.9 kB/s",
        ),
        (
            2985000,
            300000000,
            "2985000 bytes (3.0 MB, 2.8 MiB) copied, 0.3 s, 9.9 MB/s",
        ),
        (
            10945000,
            1100000000,
            "10945000 bytes (11 MB, 10 MiB) copied, 1.1 s, 9.9 MB/s",
        ),
        (
            699650,
            700000000,
            "699650 bytes (700 kB, 683 KiB) copied, 0.7 s, 999 kB/s",
        ),
        (
            699650000,
            700000000,
            "699650000 bytes (700 MB, 667 MiB) copied, 0.7 s, 999 MB/s",
        ),
        (
            1995,
            300000000,
            "1995 bytes (2.0 kB, 1.9 KiB) copied, 0.3 s, 6.7 kB/s",
        ),
        (
            20615,
            3100000000,
            "20615 bytes (21 kB, 20 KiB) copied, 3.1 s, 6.7 kB/s",
        ),
        (
            1995000,
            300000000,
            "1995000 bytes (2.0 MB, 1.9 MiB) copied, 0.3 s, 6.7 MB/s",
        ),
        (
            20615000,
            3100000000,
            "20615000 bytes (21 MB, 20 MiB) copied, 3.1 s, 6.7 MB/s",
        ),
        (15, 300000000, "15 bytes copied, 0.3 s, 0.1 kB/s"),
        (155, 3100000000, "155 bytes copied, 3.1 s, 0.1 kB/s"),
    ];

    #[test]
    fn transfer_lines_match_gnu() {
        for &(bytes, ns, want) in GNU_LINES.iter().chain(GNU_X87_LINES) {
            assert_eq!(
                transfer_line(bytes, ns, false),
                want,
                "{bytes} bytes in {ns} ns"
            );
        }
    }

    #[test]
    fn human_sizes() {
        let cases: &[(u64, &str, &str)] = &[
            (0, "0 B", "0 B"),
            (1, "1 B", "1 B"),
            (999, "999 B", "999 B"),
            (1000, "1.0 kB", "1000 B"),
            (1023, "1.0 kB", "1023 B"),
            (1024, "1.0 kB", "1.0 KiB"),
            (3584, "3.6 kB", "3.5 KiB"),
            (9999, "10 kB", "9.8 KiB"),
            (99_999, "100 kB", "98 KiB"),
            (999_499, "999 kB", "976 KiB"),
            (999_500, "1.0 MB", "976 KiB"),
            (1_000_000, "1.0 MB", "977 KiB"),
            (1 << 30, "1.1 GB", "1.0 GiB"),
            (1_000_000_000_000, "1.0 TB", "931 GiB"),
            (1 << 40, "1.1 TB", "1.0 TiB"),
            (1 << 50, "1.1 PB", "1.0 PiB"),
            (1_000_000_000_000_000, "1.0 PB", "909 TiB"),
            (1_000_000_000_000_000_000, "1.0 EB", "888 PiB"),
            (7 << 60, "8.1 EB", "7.0 EiB"),
            (9_223_372_036_854_775_806, "9.2 EB", "8.0 EiB"),
            (u64::MAX, "18 EB", "16 EiB"),
        ];
        for &(n, si, iec) in cases {
            assert_eq!(human_bytes(n, false), si, "{n}");
            assert_eq!(human_bytes(n, true), iec, "{n}");
        }
    }

    #[test]
    fn percent_g() {
        // Compared with C's printf("%g").
        let cases: &[(f64, &str)] = &[
            (1.52, "1.52"),
            (0.0123, "0.0123"),
            (12.0, "12"),
            (100000.0, "100000"),
            (999999.0, "999999"),
            (999999.5, "1e+06"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00009999, "9.999e-05"),
            (1.6694e-05, "1.6694e-05"),
            (0.000123, "0.000123"),
            (1e-9, "1e-09"),
            (123.4565, "123.457"),
            (0.00009999995, "0.0001"),
            (1e15, "1e+15"),
            (0.5, "0.5"),
            (2.5e100, "2.5e+100"),
            (0.0, "0"),
        ];
        for &(v, want) in cases {
            assert_eq!(format_g(v), want, "{v:e}");
        }
    }

    #[test]
    fn x87_emulation() {
        let x = |n| Ext::from_u64(n);
        // 1/3 rounded to 64 bits, times 3, is 1 (ties to even on the way back).
        assert_eq!(x(1).div(x(3)).mul(x(3)), x(1));
        assert_eq!(x(10).mul(x(1000)), x(10_000));
        assert_eq!(x(7).div(x(7)), x(1));
        assert!(x(999).le(x(1000)) && !x(1000).le(x(999)) && x(0).le(x(0)));
        assert_eq!(x(5).div(x(2)).round_scaled(0), 2); // 2.5 -> 2
        assert_eq!(x(7).div(x(2)).round_scaled(0), 4); // 3.5 -> 4
        assert_eq!(x(1).div(x(4)).round_scaled(1), 2); // 0.25 -> 0.2
        assert_eq!(x(3).div(x(4)).round_scaled(1), 8); // 0.75 -> 0.8
        assert_eq!(x(1).div(x(1 << 62)).div(x(1 << 62)).round_scaled(1), 0);
        assert_eq!(x(u64::MAX).round_scaled(0), u128::from(u64::MAX));
    }

    // -- progress -----------------------------------------------------------------------

    /// GNU dd 9.1 with status=progress and its clock stuck at the given time: one line
    /// per loop while the schedule catches up, then "\n" and the summary.
    #[test]
    fn progress_like_gnu() {
        // bs=1000 count=5, 3.5 s: lines before the 1st, 2nd and 3rd reads.
        let mut p = Progress::new();
        let mut out = String::new();
        for bytes in [0, 1000, 2000, 3000, 4000] {
            out.extend(p.poll(bytes, 3_500_000_000));
        }
        out.push_str(p.finish());
        let st = Stats {
            full_in: 5,
            full_out: 5,
            bytes_out: 5000,
            ..Stats::new()
        };
        out.push_str(&summary(&st, 3_500_000_000, Status::Progress));
        assert_eq!(
            out,
            "\r0 bytes copied, 4 s, 0.0 kB/s\
             \r1000 bytes (1.0 kB) copied, 4 s, 0.3 kB/s\
             \r2000 bytes (2.0 kB, 2.0 KiB) copied, 4 s, 0.6 kB/s\n\
             5+0 records in\n5+0 records out\n\
             5000 bytes (5.0 kB, 4.9 KiB) copied, 3.5 s, 1.4 kB/s\n"
        );
        // bs=100000 count=3, 2.5 s: "%.0f" rounds 2.5 to 2.
        let mut p = Progress::new();
        let lines: Vec<String> = [0, 100_000, 200_000]
            .iter()
            .filter_map(|&b| p.poll(b, 2_500_000_000))
            .collect();
        assert_eq!(
            lines,
            [
                "\r0 bytes copied, 2 s, 0.0 kB/s",
                "\r100000 bytes (100 kB, 98 KiB) copied, 2 s, 40.0 kB/s"
            ]
        );
        assert_eq!(
            progress_line(0, 1_000_000_000),
            "\r0 bytes copied, 1 s, 0 B/s"
        );
        assert_eq!(
            progress_line(123_456, 1_000_000_000),
            "\r123456 bytes (123 kB, 121 KiB) copied, 1 s, 123 kB/s"
        );
    }

    #[test]
    fn progress_schedule_and_padding() {
        let mut p = Progress::new();
        assert_eq!(p.finish(), "");
        assert_eq!(p.poll(0, 999_999_999), None);
        let first = p.poll(109_923, 1_100_000_000).unwrap();
        assert_eq!(
            first,
            "\r109923 bytes (110 kB, 107 KiB) copied, 1 s, 99.9 kB/s"
        );
        assert_eq!(p.poll(109_923, 1_999_999_999), None);
        // A shorter line is padded to erase the longer one.
        let second = p.poll(210_000, 2_100_000_000).unwrap();
        assert_eq!(
            second,
            "\r210000 bytes (210 kB, 205 KiB) copied, 2 s, 100 kB/s "
        );
        assert_eq!(second.len(), first.len());
        assert_eq!(p.finish(), "\n");
        assert_eq!(p.finish(), "");
    }

    // -- plan ----------------------------------------------------------------------------

    #[test]
    fn plan_offsets_and_counts() {
        let a = ok("if=xvda of=xvdb bs=4k skip=2 seek=3 count=10");
        let p = plan(&a, Some(1 << 20), Some(1 << 20)).unwrap();
        assert_eq!((p.in_offset, p.out_offset), (8192, 12288));
        assert_eq!((p.max_records, p.max_bytes), (Some(10), 0));
        assert_eq!(p.in_bytes, Some(40960));
        assert_eq!(p.out_room, Some((1 << 20) - 12288));

        // Input shorter than count: to its end.
        let p = plan(&a, Some(20_000), None).unwrap();
        assert_eq!((p.in_bytes, p.out_room), (Some(20_000 - 8192), None));
        // Unbounded both ways.
        let a = ok("if=zero of=null");
        let p = plan(&a, None, None).unwrap();
        assert_eq!((p.in_bytes, p.max_records), (None, None));
        // Bytes, with different block sizes.
        let a = ok("if=a of=b ibs=1000 obs=4096 skip=1500 seek=5000 count=2500 iflag=skip_bytes,count_bytes oflag=seek_bytes");
        let p = plan(&a, None, None).unwrap();
        assert_eq!((p.in_offset, p.out_offset), (1500, 5000));
        assert_eq!(
            (p.max_records, p.max_bytes, p.in_bytes),
            (Some(2), 500, Some(2500))
        );
        // Blocks, with different block sizes.
        let a = ok("if=a of=b ibs=1000 obs=4096 skip=2 seek=3");
        let p = plan(&a, None, None).unwrap();
        assert_eq!((p.in_offset, p.out_offset), (2000, 12288));
        // Exactly at the end is fine.
        let a = ok("if=a of=b skip=128 seek=128");
        let p = plan(&a, Some(65536), Some(65536)).unwrap();
        assert_eq!((p.in_bytes, p.out_room), (Some(0), Some(0)));
    }

    #[test]
    fn plan_next_read() {
        let a = ok("if=a of=b bs=1000 count=2500 iflag=count_bytes");
        let p = plan(&a, None, None).unwrap();
        let mut st = Stats::new();
        let mut reads = Vec::new();
        while let Some(n) = p.next_read(&st) {
            reads.push(n);
            st.record_read(n, a.ibs);
        }
        assert_eq!(reads, [1000, 1000, 500]);
        // count= counts reads, short ones included.
        let a = ok("if=a of=b bs=1000 count=2");
        let p = plan(&a, None, None).unwrap();
        let mut st = Stats::new();
        st.record_read(10, 1000);
        assert_eq!(p.next_read(&st), Some(1000));
        st.record_read(10, 1000);
        assert_eq!(p.next_read(&st), None);
        // count=0 reads nothing; no count reads forever.
        let p = plan(&ok("if=a of=b count=0"), None, None).unwrap();
        assert_eq!(p.next_read(&Stats::new()), None);
        let p = plan(&ok("if=a of=b ibs=7"), None, None).unwrap();
        let st = Stats {
            full_in: u64::MAX,
            ..Stats::new()
        };
        assert_eq!(p.next_read(&st), Some(7));
    }

    /// Messages compared with GNU dd 9.1 on a 64 KiB loop device.
    #[test]
    fn plan_errors_like_gnu() {
        let size = Some(65536);
        let e = |line: &str| plan(&ok(line), size, size).unwrap_err().to_string();
        assert_eq!(
            e("if=/dev/loop0 of=null skip=200"),
            "dd: /dev/loop0: cannot skip: Invalid argument"
        );
        assert_eq!(
            e("if=/dev/loop0 of=null skip=100 bs=1k"),
            "dd: /dev/loop0: cannot skip: Invalid argument"
        );
        assert_eq!(
            e("if=zero of=/dev/loop0 seek=200 count=1"),
            "dd: /dev/loop0: cannot seek: Invalid argument"
        );
        assert_eq!(
            e("if=/dev/loop0 of=null skip=9000000000000000000 bs=1M"),
            "dd: /dev/loop0: cannot skip: Value too large for defined data type"
        );
        assert_eq!(
            e("if=zero of=/dev/loop0 seek=9000000000000000000 bs=1M count=1 conv=notrunc"),
            "dd: /dev/loop0: cannot seek: Value too large for defined data type"
        );
        assert_eq!(
            e("if=zero of=/dev/loop0 bs=1M seek=99999999999999 count=1"),
            "dd: offset too large: cannot truncate to a length of seek=99999999999999 \
             (1048576-byte) blocks"
        );
        assert_eq!(
            e("if=zero of=/tmp/f2 seek=99999999999999999 count=1"),
            "dd: offset too large: cannot truncate to a length of seek=99999999999999999 \
             (512-byte) blocks"
        );
        // GNU's order: the seek= size check comes first (when opening the output).
        assert_eq!(
            e("if=a of=b skip=9000000000000000000 seek=9000000000000000000 bs=1M"),
            "dd: offset too large: cannot truncate to a length of seek=9000000000000000000 \
             (1048576-byte) blocks"
        );
        assert_eq!(
            e("if=a of=b skip=200 seek=200"),
            "dd: a: cannot skip: Invalid argument"
        );
        // Unsized devices can be skipped and seeked anywhere below i64::MAX.
        let p = plan(&ok("if=z of=n skip=1000000 seek=1000000"), None, None).unwrap();
        assert_eq!((p.in_offset, p.out_offset), (512_000_000, 512_000_000));
        // Names are quoted only when needed, as GNU's quotef does.
        let mut a = ok("if=x of=y skip=200");
        a.input = "my disk".into();
        assert_eq!(
            plan(&a, size, size).unwrap_err().to_string(),
            "dd: 'my disk': cannot skip: Invalid argument"
        );
        a.input = "it's".into();
        assert_eq!(
            plan(&a, size, size).unwrap_err().to_string(),
            "dd: \"it's\": cannot skip: Invalid argument"
        );
    }
}
