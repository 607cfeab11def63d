//! Router advertisements on the LAN (RFC 4861 §6.2, RFC 8106), sans-I/O, as odhcpd's
//! `ra 'server'` sends them on OpenWrt (`src/router.c`).
//!
//! - [`message`]: the Router Advertisement, built once per configuration into the
//!   ICMPv6 body, and the Ethernet frames that carry it.
//! - [`solicit`]: the checked Router Solicitation parser (RFC 4861 §6.1.1).
//! - [`advertiser`]: when to send ([`Advertiser`]): unsolicited advertisements to
//!   ff02::1 at random intervals between `MinRtrAdvInterval` and
//!   `MaxRtrAdvInterval` (the first three at most 16 s apart), and answers to
//!   solicitations after a random delay of up to 500 ms, never two multicast
//!   advertisements within 3 s (§6.2.4, §6.2.6).
//!
//! - [`advert`]: the checked Router Advertisement parser (RFC 4861 §6.1.2), for
//!   the WAN.
//! - [`upstream`]: the WAN side ([`Upstream`]), as odhcp6c's `ra.c`: Router
//!   Solicitations, and the default router, MTU, on-link prefixes, SLAAC address
//!   and RDNSS servers the upstream router's advertisements give.
//!
//! The glue (`xenlet_net::lanservices`) hands the Router Solicitations the LAN
//! interface receives to [`Advertiser::solicited`] and sends the frames
//! [`Advertiser::poll`] returns on that interface.

pub mod advert;
pub mod advertiser;
pub mod message;
pub mod solicit;
pub mod upstream;

pub use advertiser::{Advertiser, RaCounters};
pub use message::{RaConfig, RaError, RaPrefix};
pub use solicit::{RsError, Solicitation};
pub use upstream::{Upstream, UpstreamCounters};

#[cfg(test)]
pub(crate) mod tests;
