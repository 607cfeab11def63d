//! OpenWrt's Unified Configuration Interface (UCI) for Xenlet.
//!
//! OpenWrt keeps its configuration in `/etc/config/<package>` files written in the UCI
//! syntax (`config`/`option`/`list` lines). This crate is the whole of what Xenlet needs
//! from it, in safe `no_std` Rust, with no dependency:
//!
//! - [`parse`](mod@parse): the file syntax exactly as libuci's `file.c` reads it (quoting, escapes,
//!   comments, `;`, line continuations, name validation), errors with file, line, column.
//! - [`model`]: a [`Package`] of ordered [`Section`]s of ordered options, with libuci's
//!   semantics for set/add_list/delete/rename and its addressing (`@type[N]`, `cfgXXXXXX`).
//! - [`write`](mod@write): serialisation in OpenWrt's style (what `uci commit` writes).
//! - [`cli`]: the `uci` command (show/get/set/add/delete/rename/changes/commit/revert/
//!   export) over a [`ConfigStore`] the kernel implements with its VFS, with staged
//!   changes kept in memory like uci's `/tmp/.uci` delta files.
//! - [`network`](mod@network), [`firewall`](mod@firewall), [`dhcp`](mod@dhcp): typed, validated views of the three packages the
//!   router needs, each returning warnings (unknown options, as fw4 prints them) and
//!   errors naming the file, section and option of a bad value.
//! - [`system`](mod@system): the time zone of `/etc/config/system`, as a fixed offset.
//!
//! References: openwrt/uci (`file.c`, `list.c`, `delta.c`, `cli.c`, `util.c`), the
//! OpenWrt wiki "The UCI system", openwrt/firewall4 (`fw4.uc`), netifd and dnsmasq's
//! `dhcp.conf` / `dnsmasq.init`.
//!
//! Everything here treats its input as untrusted: no panics, no unchecked indexing, every
//! loop bounded by the input.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

// Host tests measure their heap: each thread's live bytes and high-water mark.
#[cfg(test)]
xenlet_testalloc::count_test_heap!();

pub mod cli;
pub mod dhcp;
pub mod firewall;
pub mod model;
pub mod network;
pub mod parse;
pub mod ra;
pub mod system;
pub mod ula;
pub mod validate;
pub mod write;
pub use cli::{ConfigStore, Output, StoreError, Uci};
pub use dhcp::{dhcp, DhcpConfig};
pub use firewall::{firewall, FirewallConfig};
pub use model::{Package, Section, UciOption, Value};
pub use network::{network, NetworkConfig};
pub use parse::{parse, ParseError};
pub use validate::{Checked, ConfigError, Diagnostic};
pub use write::{export, write};

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;
