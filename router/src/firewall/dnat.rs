//! Port forwards as conntrack applies them: firewall4's `redirect` sections with
//! `target DNAT`, made by [`Firewall::dnat_rules`](super::Firewall::dnat_rules).

use alloc::vec::Vec;

use super::ruleset::Net4;
use super::timematch::TimeMatch;
use crate::flow::{Endpoint, Proto};
use crate::IfId;

/// A port forward: a new flow arriving on `input` for `proto`, a destination port in
/// `dport..=dport_max` (and `dst`, if set; a source in `src_ip` if that is not empty)
/// has its destination rewritten to `to` (the port moved by as much as it was past
/// `dport`): firewall4's `redirect` with `target DNAT`. With `snat`, the flow's source
/// is rewritten to that address as well (NAT reflection: a LAN client reaching the
/// WAN address is sent to the LAN host from the router's LAN address, so the replies
/// come back through the router).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dnat {
    /// The interface the flow arrives on.
    pub input: IfId,
    /// [`Proto::Tcp`] or [`Proto::Udp`].
    pub proto: Proto,
    /// The destination address to match (None: any).
    pub dst: Option<[u8; 4]>,
    /// The first destination port to match.
    pub dport: u16,
    /// The last destination port to match.
    pub dport_max: u16,
    /// The internal address and port (for `dport`) to send the flow to.
    pub to: Endpoint,
    /// Sources allowed (empty: any).
    pub src_ip: Vec<Net4>,
    /// The source address to give the flow (reflection), if any.
    pub snat: Option<[u8; 4]>,
    /// The redirect's time match (`start_time`, `weekdays`, ...): outside it, or
    /// while the wall clock is unknown, the port forward does not apply.
    pub time: Option<TimeMatch>,
}
