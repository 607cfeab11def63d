//! `cargo xtask demo`: Xenlet on real Xen, live on this terminal.
//!
//! Sets up what it needs (the Rust target, QEMU 7.2, the test-bed dom0 image, the
//! kernel and the disk image; each only when missing or out of date), boots Xen 4.17
//! with a Debian dom0 nested in QEMU, creates Xenlet as an HVM domain from its disk
//! image with the report's configuration (`memory = 32`, xvda the image, xvdb a blank
//! 64 MiB disk) and shows its console as it happens: the boot report, `version`,
//! `xen`, `lsblk` and a `dd` to xvdb; then powers it off. It is the test-bed scenario
//! `demo` run with the console streamed (see `xtask/testbed/README.md`).

use crate::testbed;
use crate::util::{step, Error, Result};

const USAGE: &str = "\
usage: cargo xtask demo [--retries N] [-v] [--smp N] [--xen-arg ARG]

  boots Xen 4.17 nested in QEMU (needs root), creates Xenlet as an HVM domain from its
  disk image (memory 32, xvda image, xvdb data) and shows its console live: the boot
  report, version, xen, lsblk, a dd to xvdb, its address, a ping to dom0 and iperf3
        from dom0 both ways, poweroff (logs in target/testbed/demo/)
";

pub fn main(args: &[&str]) -> Result<()> {
    if matches!(args, ["help" | "-h" | "--help"]) {
        print!("{USAGE}");
        return Ok(());
    }
    let (mut opts, names) = testbed::parse_options(args)?;
    if !names.is_empty() {
        return Err(Error::msg(USAGE));
    }
    opts.live = true;
    step(
        "demo: Xen 4.17 + dom0 nested in QEMU, then Xenlet as an HVM domain; its console \
         appears below as `[demo] | ...` (about 2-3 minutes)",
    );
    testbed::run(&["demo"], &opts)
}
