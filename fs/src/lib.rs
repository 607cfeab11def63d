//! Xenlet filesystems: ext2/ext4 as Debian's `mke2fs` makes them, read-write, over a
//! synchronous [`BlockDev`]; an in-memory filesystem for `/` and `/tmp`; and the VFS
//! (mount table, paths) the shell uses.
//!
//! Everything here is safe Rust and treats every disk block as untrusted: a bad block
//! gives [`FsError::Corrupt`] (or a refused mount), never a panic. The crate builds for
//! the host, where its tests run against images made by the real e2fsprogs.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod blockdev;
pub mod crc32c;
pub mod error;
pub mod errseq;
pub mod ext;
pub mod journal;
mod mem;
pub mod memfs;
pub mod part;
pub mod readahead;
pub mod types;
pub mod vfs;

pub use blockdev::{BlockDev, IoError};
pub use error::FsError;
pub use ext::Ext;
pub use types::{DirEntry, FileSystem, FileType, Ino, MountOptions, Stat, StatFs};
