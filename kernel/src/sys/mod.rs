//! System policy: power-off and reboot ([`power`], with the ACPI tables it reads in
//! [`acpi`]), the toolstack's shutdown requests ([`shutdown`]) and suspends ([`suspend`]: save,
//! restore, migration), and the fault and
//! panic reports ([`fault`]). What this layer needs from higher layers (closing the
//! PV devices, syncing the filesystems) is registered with it by `kmain`.

pub mod acpi;
pub mod pagefault;
pub mod random;

#[cfg(target_os = "none")]
pub mod fault;
#[cfg(target_os = "none")]
pub mod power;
#[cfg(target_os = "none")]
pub mod shutdown;
#[cfg(target_os = "none")]
pub mod suspend;
