//! Time: [`instant::Instant`] and the TSC arithmetic (pure, host-tested), and the
//! clock source behind it ([`clock`]: the TSC calibrated at boot, pvclock once the Xen
//! platform layer registers it).

pub mod instant;

#[cfg(target_os = "none")]
pub mod clock;
