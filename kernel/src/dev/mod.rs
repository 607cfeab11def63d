//! Devices as the rest of the kernel sees them: the PV frontends connected to their
//! backends with the platform services drivers get ([`frontends`]), the network
//! backends this domain serves to client domains as a driver domain ([`backends`]),
//! and the network stack over the vifs ([`network`]).

pub mod backends;
pub mod frontends;
pub mod network;
pub mod port;
