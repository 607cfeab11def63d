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

mod args;
mod error;
mod human;
mod output;
mod plan;
mod stats;
mod x87;

pub use args::{parse, Conv, DdArgs, Flags, Status, DEFAULT_BLOCK_SIZE, MAX_BLOCK_SIZE};
pub use error::{DdError, Errno, IoOp, Unsupported};
pub use human::{format_g, human_bytes};
pub use output::{progress_line, summary, Progress};
pub use plan::{plan, Plan};
pub use stats::Stats;

#[cfg(test)]
mod tests;
