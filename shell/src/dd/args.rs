//! Operands: `NAME=VALUE` words parsed into [`DdArgs`], GNU style.

use alloc::string::String;
use alloc::vec::Vec;

use super::error::{DdError, Unsupported};
use crate::{parse_size, ParseError};

/// GNU's default block size.
pub const DEFAULT_BLOCK_SIZE: u64 = 512;

/// The largest `bs=`/`ibs=`/`obs=` GNU accepts on a 64-bit host (`IDX_MAX - 1`).
pub const MAX_BLOCK_SIZE: u64 = i64::MAX as u64 - 1;

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
pub(super) const CONV_UNSUPPORTED: &[&str] = &[
    "ascii", "ebcdic", "ibm", "block", "unblock", "lcase", "ucase", "sparse", "swab", "nocreat",
    "excl",
];
/// GNU's flag symbols (valid on Linux) this dd does not implement. (`cio`, `binary`,
/// `text` and `nolinks` are invalid flags for GNU dd on Linux, and here too.)
pub(super) const FLAG_UNSUPPORTED: &[&str] = &[
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
