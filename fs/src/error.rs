//! Filesystem errors, named like the errno a POSIX tool would print.

use crate::blockdev::IoError;
use alloc::string::String;
use core::fmt;

/// What a filesystem operation can fail with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsError {
    /// ENOENT.
    NotFound,
    /// EEXIST.
    Exists,
    /// ENOTDIR.
    NotDir,
    /// EISDIR.
    IsDir,
    /// ENOTEMPTY.
    NotEmpty,
    /// ENOSPC.
    NoSpace,
    /// EROFS.
    ReadOnly,
    /// ENAMETOOLONG.
    NameTooLong,
    /// EINVAL (with what was wrong).
    Invalid(&'static str),
    /// EFBIG.
    TooBig,
    /// EBUSY (a mount point, a mounted device).
    Busy,
    /// EXDEV (rename across filesystems).
    CrossDevice,
    /// The device failed (EIO).
    Io(IoError),
    /// The on-disk structures are inconsistent (EUCLEAN / EIO): what and where.
    Corrupt(String),
    /// A feature this implementation does not handle (the mount is refused).
    Unsupported(String),
    /// EINTR.
    Interrupted,
    /// ENOMEM: a buffer could not be had (the heap is small or fragmented).
    NoMemory,
    /// EPERM: the inode is immutable or append-only (`chattr +i`, `+a`).
    NotPermitted,
}

impl From<IoError> for FsError {
    fn from(e: IoError) -> Self {
        match e {
            IoError::ReadOnly => FsError::ReadOnly,
            IoError::Interrupted => FsError::Interrupted,
            other => FsError::Io(other),
        }
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsError::NotFound => f.write_str("No such file or directory"),
            FsError::Exists => f.write_str("File exists"),
            FsError::NotDir => f.write_str("Not a directory"),
            FsError::IsDir => f.write_str("Is a directory"),
            FsError::NotEmpty => f.write_str("Directory not empty"),
            FsError::NoSpace => f.write_str("No space left on device"),
            FsError::ReadOnly => f.write_str("Read-only file system"),
            FsError::NameTooLong => f.write_str("File name too long"),
            FsError::Invalid(why) => write!(f, "Invalid argument ({why})"),
            FsError::TooBig => f.write_str("File too large"),
            FsError::Busy => f.write_str("Device or resource busy"),
            FsError::CrossDevice => f.write_str("Invalid cross-device link"),
            FsError::Io(IoError::Io) => f.write_str("Input/output error"),
            FsError::Io(e) => write!(f, "Input/output error ({e})"),
            FsError::Corrupt(what) => write!(f, "Structure needs cleaning ({what})"),
            FsError::Unsupported(what) => write!(f, "Operation not supported ({what})"),
            FsError::Interrupted => f.write_str("Interrupted system call"),
            FsError::NoMemory => f.write_str("Cannot allocate memory"),
            FsError::NotPermitted => f.write_str("Operation not permitted"),
        }
    }
}
