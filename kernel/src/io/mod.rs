//! The kernel's text I/O: the console (COM1 and, registered by the Xen layer, the PV
//! console ring) and the `dmesg` message log behind `println!`.

pub mod klog;

#[cfg(target_os = "none")]
pub mod console;
