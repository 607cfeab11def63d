//! Devices as the rest of the kernel sees them: the PV frontends connected to their
//! backends with the platform services drivers get ([`frontends`]), the network
//! backends this domain serves to client domains as a driver domain ([`backends`]),
//! and the network stack over the vifs ([`network`]); the events counted per
//! port for the drivers' statistics ([`portevents`]); where the data plane's time
//! goes ([`netcost`]).

pub mod backends;
pub mod frontends;
pub mod netcost;
pub mod network;
pub mod port;
pub mod portevents;

/// A MAC address as `ip link` prints it: `00:16:3e:01:02:03`.
pub struct Mac(pub [u8; 6]);

impl core::fmt::Display for Mac {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}
