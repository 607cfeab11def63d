//! Xenlet networking: the smoltcp TCP/IP stack over the PV network frontends, the
//! interface configuration (static or DHCPv4), and the network services and tools
//! the shell drives (ping, an iperf3-compatible server, TCP/UDP echo), and the
//! router's LAN services (DHCP server, DNS forwarder: [`lanservices`]).
//!
//! Everything here is safe Rust over the [`smoltcp`] socket API and the frontends'
//! frame interface, so it is tested on the host.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

// Host tests measure their heap: each thread's live bytes and high-water mark.
#[cfg(test)]
xenlet_testalloc::count_test_heap!();

pub mod backlog;
pub mod bridge;
pub mod config;
pub mod dad;
pub mod echo;
pub mod fwconfig;
pub mod garp;
pub mod gateway;
pub mod headers;
pub mod icmplimit;
pub mod iface;
pub mod ifreload;
pub mod ip;
pub mod iperf3;
mod kept;
pub mod lanconfig;
pub mod lanservices;
pub mod link;
pub mod mss;
pub mod netback;
pub mod netfront;
pub mod netplan;
pub mod ping;
#[cfg(test)]
mod portless_tests;
pub mod reflect;
#[cfg(test)]
mod testnet;
pub mod tso;

use alloc::string::String;
use alloc::vec::Vec;
use iface::NetIf;
use link::Link;
use smoltcp::wire::IpAddress;

/// Every network interface, and the time of the last poll.
pub struct NetStack<L: Link> {
    /// Interfaces, eth0 first.
    pub ifs: Vec<NetIf<L>>,
    /// Monotonic ms at the last [`NetStack::poll`].
    pub now_ms: i64,
}

impl<L: Link> Default for NetStack<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: Link> NetStack<L> {
    /// No interfaces yet.
    pub const fn new() -> Self {
        NetStack {
            ifs: Vec::new(),
            now_ms: 0,
        }
    }

    /// The interface named `name`.
    pub fn by_name(&mut self, name: &str) -> Option<&mut NetIf<L>> {
        self.ifs.iter_mut().find(|n| n.name == name)
    }

    /// The interface that reaches `dst`: one it is on-link for, else one with a
    /// default route of its family, else (IPv6 link-local) the first.
    pub fn route(&mut self, dst: IpAddress) -> Option<usize> {
        if let Some(i) = self.ifs.iter().position(|n| n.on_link(dst)) {
            return Some(i);
        }
        if let Some(i) = self.ifs.iter_mut().position(|n| n.has_default_for(dst)) {
            return Some(i);
        }
        match dst {
            IpAddress::Ipv6(a) if a.is_unicast_link_local() && !self.ifs.is_empty() => Some(0),
            _ => None,
        }
    }

    /// Polls every interface; whether any socket may have changed.
    pub fn poll(&mut self, now_ms: i64) -> bool {
        self.now_ms = now_ms;
        let mut changed = false;
        for n in self.ifs.iter_mut() {
            changed |= n.poll(now_ms);
        }
        changed
    }

    /// The earliest time (ms) any interface wants to be polled again.
    pub fn poll_at(&mut self, now_ms: i64) -> Option<i64> {
        self.ifs.iter_mut().filter_map(|n| n.poll_at(now_ms)).min()
    }

    /// Console messages from every interface.
    pub fn take_events(&mut self) -> Vec<String> {
        let mut v = Vec::new();
        for n in self.ifs.iter_mut() {
            while let Some(e) = n.take_event() {
                v.push(e);
            }
        }
        v
    }
}
