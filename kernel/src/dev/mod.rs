//! Devices as the rest of the kernel sees them: the PV frontends connected to their
//! backends with the platform services drivers get ([`frontends`]), and the network
//! stack over the vifs ([`network`]).

pub mod frontends;
pub mod network;
pub mod port;
