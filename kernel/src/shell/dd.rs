//! `dd` between devices on the kernel's disks: the engine (`xenlet_shell::ddcopy`,
//! host-tested) run over the blkfront disk table, the clock, Ctrl-C and the console;
//! and the `status=progress` line `ddfile` shares.

use crate::dev::frontends::{self, Disk};
use crate::{io::console, time::clock};
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_drivers::blkfront::{BlockDevice, BlockError, BlockOp};
use xenlet_shell::ddcopy::DdHost;
pub use xenlet_shell::ddcopy::{Outcome, Plan, Sink, Source, Transfer, Xoshiro};

/// The kernel as the dd engine's host.
struct Kernel;

impl DdHost for Kernel {
    type Disk = Disk;
    fn now_ns(&self) -> u64 {
        clock::now().as_nanos()
    }
    fn take_interrupt(&mut self) -> bool {
        // Called once a MiB: the data plane's check-point too (a copy from
        // /dev/zero to /dev/null never waits).
        crate::xen::idle::serve();
        console::take_interrupt()
    }
    fn print(&mut self, text: &str) {
        console::write_bytes(text.as_bytes());
    }
    fn disk_names(&self) -> Vec<String> {
        let mut v = Vec::new();
        frontends::for_each_disk(|d| v.push(d.info().name.clone()));
        v
    }
    fn with_disks<R>(&mut self, f: impl FnOnce(&mut Self, &mut [Disk]) -> R) -> R {
        frontends::with_all_disks(|disks| f(self, disks))
    }
    fn detaching(&self, disk: &Disk) -> bool {
        frontends::backend_closing(disk.vdev())
    }
    fn flush(&mut self, disk: &mut Disk) -> Result<(), BlockError> {
        frontends::run_one(disk, BlockOp::Flush, 0)
    }
    fn checkpoint(&mut self) -> bool {
        // the disk table is free here: a save the toolstack asked for meanwhile
        // happens now, not after the copy
        crate::sys::shutdown::checkpoint()
    }
}

/// Runs the copy; Ctrl-C stops it with the statistics so far.
pub fn run(plan: &Plan) -> Outcome {
    xenlet_shell::ddcopy::run(plan, &mut Kernel)
}

/// `status=progress`: GNU's once-a-second line (shell's `dd::Progress`).
pub(crate) struct Progress {
    pub(crate) on: bool,
    pub(crate) start_ns: u64,
    pub(crate) gnu: xenlet_shell::dd::Progress,
}

impl Progress {
    pub(crate) fn tick(&mut self, bytes: u64) {
        if !self.on {
            return;
        }
        let elapsed = clock::now().as_nanos().saturating_sub(self.start_ns);
        if let Some(line) = self.gnu.poll(bytes, elapsed) {
            console::write_bytes(line.as_bytes());
        }
    }
    pub(crate) fn finish(&mut self) {
        if self.on {
            console::write_bytes(self.gnu.finish().as_bytes());
        }
    }
}
