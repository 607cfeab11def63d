//! The interface every filesystem offers the VFS: inode numbers, metadata, directory
//! entries, and the operations of [`FileSystem`].

use crate::error::FsError;
use alloc::string::String;
use alloc::vec::Vec;

/// An inode number within one filesystem.
pub type Ino = u64;

/// The kind of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
    /// Character device, block device, FIFO or socket.
    Special,
}

/// `stat` information.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Inode number.
    pub ino: Ino,
    /// Kind.
    pub kind: FileType,
    /// Permission bits and type bits, as in `st_mode`.
    pub mode: u16,
    /// Hard links.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size in bytes.
    pub size: u64,
    /// 512-byte sectors allocated (as `st_blocks`).
    pub blocks: u64,
    /// Last access, seconds since the epoch.
    pub atime: i64,
    /// Last modification.
    pub mtime: i64,
    /// Last status change.
    pub ctime: i64,
}

/// One directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// Name (without `/`; `.` and `..` are not listed).
    pub name: String,
    /// Its inode.
    pub ino: Ino,
    /// Its kind, as the directory records it.
    pub kind: FileType,
}

/// `statfs`/`df` information.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatFs {
    /// "ext4", "ext2", "tmpfs".
    pub kind: &'static str,
    /// Block size in bytes.
    pub block_size: u32,
    /// Blocks in all.
    pub blocks: u64,
    /// Free blocks.
    pub free_blocks: u64,
    /// Free blocks an unprivileged user may use (`df`'s "Available").
    pub avail_blocks: u64,
    /// Inodes in all.
    pub inodes: u64,
    /// Free inodes.
    pub free_inodes: u64,
}

/// How to mount.
#[derive(Clone, Copy, Debug)]
pub struct MountOptions {
    /// Never write to the device (not even the mount count or the journal).
    pub read_only: bool,
    /// Wall-clock seconds since the epoch, for inode and superblock times.
    pub now: fn() -> i64,
}

impl Default for MountOptions {
    fn default() -> Self {
        MountOptions {
            read_only: false,
            now: || 0,
        }
    }
}

/// A mounted filesystem. Names are single path components (no `/`, not empty, not
/// `.` or `..`); the VFS resolves paths.
pub trait FileSystem {
    /// "ext4", "ext2", "tmpfs".
    fn kind(&self) -> &'static str;
    /// The root directory.
    fn root(&self) -> Ino;
    /// Whether it is mounted read-only (by request, or because of a feature or an error).
    fn read_only(&self) -> bool;
    /// Why it went read-only on its own after an error (an aborted transaction), if it
    /// did: what failed and what to do. None when it is writable or read-only by request.
    fn error(&self) -> Option<String> {
        None
    }
    /// Sizes and free counts.
    fn statfs(&mut self) -> Result<StatFs, FsError>;
    /// The inode `name` names in directory `dir`.
    fn lookup(&mut self, dir: Ino, name: &str) -> Result<Ino, FsError>;
    /// Metadata of `ino`.
    fn stat(&mut self, ino: Ino) -> Result<Stat, FsError>;
    /// The entries of directory `dir`, in on-disk order, without `.` and `..`.
    fn read_dir(&mut self, dir: Ino) -> Result<Vec<DirEntry>, FsError>;
    /// Reads at `offset`; returns the bytes read (0 at or past the end).
    fn read(&mut self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize, FsError>;
    /// Writes at `offset` (extending the file, holes reading as zeros); returns the bytes
    /// written, which is all of `data` unless the disk fills (then the part that fit, or
    /// [`FsError::NoSpace`] if nothing did).
    fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize, FsError>;
    /// Sets the size (shrinking frees blocks; growing leaves a hole).
    fn truncate(&mut self, ino: Ino, size: u64) -> Result<(), FsError>;
    /// Creates an empty regular file with permission bits `perm` (e.g. 0o644).
    fn create(&mut self, dir: Ino, name: &str, perm: u16) -> Result<Ino, FsError>;
    /// Creates a directory with permission bits `perm` (e.g. 0o755).
    fn mkdir(&mut self, dir: Ino, name: &str, perm: u16) -> Result<Ino, FsError>;
    /// Removes a non-directory entry (the inode is freed when its last link goes).
    fn unlink(&mut self, dir: Ino, name: &str) -> Result<(), FsError>;
    /// Removes an empty directory.
    fn rmdir(&mut self, dir: Ino, name: &str) -> Result<(), FsError>;
    /// Renames, replacing an existing target atomically as POSIX `rename` does (a
    /// directory may replace only an empty directory; a directory cannot move below itself).
    fn rename(&mut self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<(), FsError>;
    /// Sets the access and modification times (`touch`).
    fn set_times(&mut self, ino: Ino, atime: i64, mtime: i64) -> Result<(), FsError>;
    /// Writes the file's data and the metadata needed to reach it, then flushes the
    /// device. A writeback error of this file (its data lost behind the filesystem's
    /// back) is reported once to each call that has not seen it (`errseq_t`, see
    /// [`crate::errseq`]).
    fn fsync(&mut self, ino: Ino) -> Result<(), FsError>;
    /// Writes everything dirty, then flushes the device; reports a writeback error of
    /// the filesystem once to each call that has not seen it (as `syncfs`).
    fn sync(&mut self) -> Result<(), FsError>;
    /// Syncs and marks the filesystem clean; no call may follow but `statfs`. An
    /// error leaves it mounted (a writeback error no `sync` reported fails it once).
    fn unmount(&mut self) -> Result<(), FsError>;
    /// Memory is low: give back what can be given (write out buffered data and
    /// metadata, drop clean cached blocks and inodes). Nothing is lost by it; an
    /// error is the write-out's (kept for the next `sync` as any write error is).
    fn shrink(&mut self) -> Result<(), FsError> {
        Ok(())
    }
}
