//! A port of one of the stack's links: a vif this domain's frontend drives (dom0 or
//! a driver domain serves it), or a client domU's vif this domain serves itself
//! (netback, as a driver domain). Every interface is a [`Bridge`] of ports: a plain
//! vif is a bridge of one (a pass-through), and an OpenWrt `br-lan` takes the client
//! vifs whose backend's `bridge` key names it.
//!
//! [`Bridge`]: xenlet_net::bridge::Bridge

use crate::dev::backends::Vifback;
use crate::dev::frontends::Vif;
use alloc::string::String;
use alloc::vec::Vec;
use xenlet_net::link::{Link, LinkStats, QueueStats, RxChecksum};

/// One port.
// A handful live for the domain's lifetime, one per vif: the size difference
// between a netfront and a netback costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub enum Port {
    /// A vif of this domain (netfront).
    Front(Vif),
    /// A client domain's vif this domain serves (netback).
    Back(Vifback),
}

impl Port {
    /// The netfront, for a vif of this domain.
    pub fn front(&self) -> Option<&Vif> {
        match self {
            Port::Front(v) => Some(v),
            Port::Back(_) => None,
        }
    }

    /// The netfront, to reconnect it.
    pub fn front_mut(&mut self) -> Option<&mut Vif> {
        match self {
            Port::Front(v) => Some(v),
            Port::Back(_) => None,
        }
    }

    /// The netback, for a client's vif.
    pub fn back_mut(&mut self) -> Option<&mut Vifback> {
        match self {
            Port::Back(b) => Some(b),
            Port::Front(_) => None,
        }
    }
}

/// Delegates a [`Link`] method to the port's driver.
macro_rules! each {
    ($self:expr, $l:ident => $e:expr) => {
        match $self {
            Port::Front($l) => $e,
            Port::Back($l) => $e,
        }
    };
}

impl Link for Port {
    fn mac(&self) -> [u8; 6] {
        each!(self, l => l.mac())
    }
    fn recv(&mut self) -> Option<Vec<u8>> {
        each!(self, l => Link::recv(l))
    }
    fn recv_flagged(&mut self) -> Option<(Vec<u8>, RxChecksum)> {
        each!(self, l => Link::recv_flagged(l))
    }
    fn recv_meta(&mut self) -> Option<(Vec<u8>, RxChecksum, Option<u16>)> {
        each!(self, l => Link::recv_meta(l))
    }
    fn tx_csum_blank(&self) -> bool {
        each!(self, l => Link::tx_csum_blank(l))
    }
    fn send_csum_blank(&mut self, frame: &[u8]) -> Result<(), String> {
        each!(self, l => Link::send_csum_blank(l, frame))
    }
    fn can_send(&mut self) -> bool {
        each!(self, l => Link::can_send(l))
    }
    fn send(&mut self, frame: &[u8]) -> Result<(), String> {
        each!(self, l => Link::send(l, frame))
    }
    fn stats(&self) -> LinkStats {
        each!(self, l => Link::stats(l))
    }
    fn broken(&self) -> Option<&str> {
        each!(self, l => Link::broken(l))
    }
    fn gso_tcpv4(&self) -> bool {
        each!(self, l => Link::gso_tcpv4(l))
    }
    fn gso_tcpv6(&self) -> bool {
        each!(self, l => Link::gso_tcpv6(l))
    }
    fn send_gso(&mut self, frame: &[u8], mss: u16) -> Result<(), String> {
        each!(self, l => Link::send_gso(l, frame, mss))
    }
    fn tx_free_slots(&self) -> usize {
        each!(self, l => Link::tx_free_slots(l))
    }
    fn queue_stats(&self) -> Vec<QueueStats> {
        each!(self, l => Link::queue_stats(l))
    }
    fn driver_stats(&self) -> Vec<(&'static str, u64)> {
        each!(self, l => Link::driver_stats(l))
    }
    fn mtu(&self) -> usize {
        each!(self, l => Link::mtu(l))
    }
    fn guard(&self) -> Option<String> {
        each!(self, l => Link::guard(l))
    }
}
