//! The file tree: mounts, disks and partitions as block devices, the root mount
//! ([`vfs`]).

pub mod vfs;
