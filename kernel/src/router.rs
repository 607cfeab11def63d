//! The router's configuration, OpenWrt's way: `/etc/config/network` and the zones of
//! `/etc/config/firewall` on the root filesystem decide each vif's addresses and,
//! with two or more vifs, turn the network stack into a router (see
//! `xenlet_net::netplan`). `xenlet.router=0` on the command line keeps an end host;
//! per-vif settings on the command line or in XenStore still win over the files.
//!
//! With the router, `/etc/config/dhcp` starts the LAN services (DHCP server, DNS
//! forwarder: `xenlet_net::lanservices`), whose leases [`VfsLeaseStore`] keeps on
//! the root filesystem.
//!
//! Also the UCI store the `uci` command edits: `/etc/config/<package>`, written
//! atomically; and OpenWrt's first-boot step for IPv6: `globals.ula_prefix 'auto'`
//! becomes a random RFC 4193 prefix, committed to `/etc/config/network`
//! ([`assign_ula`]).

use crate::fs::vfs;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_net::lanconfig::{self, ServicesSpec};
use xenlet_net::lanservices::{LeaseStore, MAX_LEASE_FILE};
use xenlet_net::netplan::{self, Plan};
use xenlet_uci::cli::{ConfigStore, StoreError};

/// Where OpenWrt keeps its configuration.
pub const CONFIG_DIR: &str = "/etc/config";
/// The largest configuration file read.
const MAX_CONFIG: usize = 256 * 1024;

fn read_config(package: &str) -> Option<Result<String, String>> {
    let path = format!("{CONFIG_DIR}/{package}");
    let r = vfs::with(|v| v.read_to_vec(&path, MAX_CONFIG))?;
    match r {
        Ok(bytes) => Some(String::from_utf8(bytes).map_err(|_| format!("{path}: not UTF-8 text"))),
        Err(xenlet_fs::error::FsError::NotFound) => None,
        Err(e) => Some(Err(format!("{path}: {e}"))),
    }
}

/// [`read_config`], a file that cannot be read or is not text printed as
/// `{prefix}{reason}; {then}` and given as `Err(())`.
fn read_or_say(package: &str, prefix: &str, then: &str) -> Result<Option<String>, ()> {
    match read_config(package) {
        Some(Ok(t)) => Ok(Some(t)),
        Some(Err(e)) => {
            crate::println!("{prefix}{e}; {then}");
            Err(())
        }
        None => Ok(None),
    }
}

/// The time zone of `/etc/config/system` for the firewall's time matches: a fixed
/// offset, or UTC with a note (a zone with daylight saving, an unreadable file).
pub fn time_zone() -> xenlet_uci::system::TimeZone {
    let utc = |note| xenlet_uci::system::TimeZone {
        utc_offset_secs: 0,
        note,
    };
    match read_config("system") {
        None => utc(None),
        Some(Err(e)) => utc(Some(format!("{e}; local time is UTC"))),
        Some(Ok(text)) => match xenlet_uci::parse::parse("/etc/config/system", "system", &text) {
            Ok(p) => xenlet_uci::system::time_zone(&p),
            Err(e) => utc(Some(format!("{e}; local time is UTC"))),
        },
    }
}

/// OpenWrt's first boot (`/etc/init.d/network`): if `/etc/config/network` says
/// `ula_prefix 'auto'`, a random `fdXX:XXXX:XXXX::/48` from the kernel's generator
/// replaces it and the file is written back (as `uci commit` writes it), so the
/// prefix stays from then on. Returns the boot line when it did (or failed to).
pub fn assign_ula() -> Option<String> {
    let text = read_config("network")?.ok()?;
    let mut pkg = xenlet_uci::parse("/etc/config/network", "network", &text).ok()?;
    let r = crate::sys::random::u64().to_le_bytes();
    let prefix = xenlet_uci::ula::assign_auto(&mut pkg, [r[0], r[1], r[2], r[3], r[4]])?;
    let out = xenlet_uci::write(&pkg);
    let path = format!("{CONFIG_DIR}/network");
    Some(match vfs::with(|v| v.write_atomic(&path, out.as_bytes())) {
        Some(Ok(())) => format!("network: ula_prefix {prefix} (was 'auto'), written to {path}"),
        Some(Err(e)) => format!("network: ula_prefix 'auto': {path}: {e}; no IPv6 ULA"),
        None => String::from("network: ula_prefix 'auto': no file tree; no IPv6 ULA"),
    })
}

/// Conntrack entries for a heap of `heap_bytes`: OpenWrt's 16,384 when the heap is
/// large, fewer in a small domain (an entry with its index slots is about 200 bytes;
/// the table takes at most an eighth of the heap; the IPv6 table, a quarter as many
/// entries of about 240 bytes with their index, about a 27th more).
pub fn conntrack_max(heap_bytes: usize) -> usize {
    (heap_bytes / 8 / 200).clamp(256, 16_384)
}

/// The plan for vifs `vifs` from the files, or `None` (an end host configured as
/// before) when routing is switched off, the files are missing, or they are bad (the
/// reason is printed).
pub fn plan(cmdline: &str, vifs: &[&str], heap_bytes: usize, seed: u64) -> Option<Plan> {
    if cmdline.split_whitespace().any(|w| w == "xenlet.router=0") {
        return None;
    }
    let network = read_or_say("network", "router: ", "not routing").ok()??;
    let firewall = read_or_say("firewall", "router: ", "not routing").ok()?;
    match netplan::plan(
        &network,
        firewall.as_deref(),
        vifs,
        conntrack_max(heap_bytes),
        seed,
    ) {
        Ok(p) => {
            for w in &p.warnings {
                crate::println!("router: {w}");
            }
            Some(p)
        }
        Err(e) => {
            crate::println!("router: {e}; not routing");
            None
        }
    }
}

/// The LAN services for a plan that routes, from `/etc/config/dhcp` (and the `dns`
/// options of `/etc/config/network`); `None` for an end host, without the file, or
/// when it is bad (the reason is printed).
pub fn services(plan: &Plan, heap_bytes: usize) -> Option<ServicesSpec> {
    plan.gateway.as_ref()?;
    SERVICES_HEAP.store(heap_bytes, core::sync::atomic::Ordering::Relaxed);
    let dhcp = read_or_say("dhcp", "dhcp: ", "no DHCP or DNS service").ok()??;
    let network = read_or_say("network", "dhcp: ", "no DHCP or DNS service").ok()??;
    match lanconfig::spec_from_files(&dhcp, &network, plan) {
        Ok(mut s) => {
            for w in &s.warnings {
                crate::println!("dhcp: {w}");
            }
            s.fit_to_heap(heap_bytes);
            Some(s)
        }
        Err(e) => {
            crate::println!("dhcp: {e}; no DHCP or DNS service");
            None
        }
    }
}

/// The heap size the services were sized to at boot ([`services`]), for `reload`.
static SERVICES_HEAP: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// The LAN services from the files as they are now, for `reload`, sized as at
/// boot: errors are returned, not printed (the warnings are in the spec).
pub fn services_for_reload(plan: &Plan) -> Result<ServicesSpec, String> {
    let dhcp = read_config("dhcp").ok_or("no /etc/config/dhcp")??;
    let network = read_config("network").ok_or("no /etc/config/network")??;
    let mut s = lanconfig::spec_from_files(&dhcp, &network, plan)?;
    s.fit_to_heap(SERVICES_HEAP.load(core::sync::atomic::Ordering::Relaxed));
    Ok(s)
}

/// The DHCP leases on the file tree: the lease file on the root filesystem (kept
/// across reboots), copied to dnsmasq's `/tmp/dhcp.leases` for `cat`.
pub struct VfsLeaseStore {
    path: String,
    view: Option<String>,
}

impl VfsLeaseStore {
    /// The store `spec` names.
    pub fn new(spec: &ServicesSpec) -> VfsLeaseStore {
        VfsLeaseStore {
            path: spec.lease_file.clone(),
            view: spec.lease_view.clone(),
        }
    }
}

impl LeaseStore for VfsLeaseStore {
    fn load(&mut self) -> Option<String> {
        let bytes = vfs::with(|v| v.read_to_vec(&self.path, MAX_LEASE_FILE))?.ok()?;
        let text = String::from_utf8(bytes).ok()?;
        if let Some(view) = &self.view {
            let _ = vfs::with(|v| v.write_atomic(view, text.as_bytes()));
        }
        Some(text)
    }
    fn save(&mut self, text: &str) -> Result<(), String> {
        if let Some(view) = &self.view {
            // The copy first: a full /tmp must not stop the real file.
            let _ = vfs::with(|v| v.write_atomic(view, text.as_bytes()));
        }
        vfs::with(|v| v.write_atomic(&self.path, text.as_bytes()))
            .ok_or_else(|| String::from("no file tree"))?
            .map_err(|e| format!("{}: {e}", self.path))
    }
}

/// The `uci` command's store: `/etc/config/<package>` on the file tree.
pub struct VfsStore;

/// The store's errors carry no text: the reason goes to the console.
fn store_err(e: impl core::fmt::Display) -> StoreError {
    crate::println!("uci: {e}");
    StoreError
}

impl ConfigStore for VfsStore {
    fn read(&self, package: &str) -> Result<Option<String>, StoreError> {
        match read_config(package) {
            None => Ok(None),
            Some(Ok(t)) => Ok(Some(t)),
            Some(Err(e)) => Err(store_err(e)),
        }
    }
    fn write_atomic(&mut self, package: &str, text: &str) -> Result<(), StoreError> {
        let path = format!("{CONFIG_DIR}/{package}");
        vfs::with(|v| v.write_atomic(&path, text.as_bytes()))
            .ok_or_else(|| store_err("no file tree"))?
            .map_err(|e| store_err(format!("{path}: {e}")))
    }
    fn list(&self) -> Result<Vec<String>, StoreError> {
        vfs::with(|v| {
            let h = v.resolve(CONFIG_DIR)?;
            v.read_dir(h)
        })
        .ok_or_else(|| store_err("no file tree"))?
        .map(|entries| {
            let mut names: Vec<String> = entries
                .into_iter()
                .map(|e| e.name)
                .filter(|n| !n.starts_with('.'))
                .collect();
            names.sort();
            names
        })
        .map_err(|e| store_err(format!("{CONFIG_DIR}: {e}")))
    }
}

/// The plan from the files as they are now, for `reload`: errors are returned, not
/// printed.
pub fn replan(vifs: &[&str]) -> Result<Plan, String> {
    let network = read_config("network").ok_or("no /etc/config/network")??;
    let firewall = match read_config("firewall") {
        Some(r) => Some(r?),
        None => None,
    };
    netplan::plan(&network, firewall.as_deref(), vifs, 1, 0)
}
