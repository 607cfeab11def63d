//! Errors: GNU's one-line messages, with its quoting of names.

use alloc::format;
use alloc::string::String;
use core::fmt::{self, Write};

use super::human::human_bytes;
use crate::CmdError;

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
