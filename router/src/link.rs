//! The link the router sends on: the kernel's [`Output`] (a netfront each) and the
//! offload metadata that travels with a frame.

use crate::IfId;

/// Length of an Ethernet header, where an IP packet starts in a frame.
pub(crate) const ETH_LEN: usize = 14;

/// The link layer the router sends on, implemented by the kernel (a netfront each).
pub trait Output {
    /// Queues `frame` (a whole Ethernet frame) for transmission on `ifc`.
    fn send(&mut self, ifc: IfId, frame: &[u8], tx: TxMeta) -> Result<(), TxFull>;
}

/// The link had no room for the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxFull;

/// Offload metadata of a frame: netif's `NETTXF_csum_blank`/`NETRXF_csum_blank` and
/// the GSO extra info.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxMeta {
    /// The TCP/UDP checksum field holds only the pseudo-header sum (see
    /// [`Meta::csum_partial`](crate::Meta::csum_partial)); the link must complete it.
    pub csum_partial: bool,
    /// A TCP packet larger than the MTU, to be cut into segments of this many payload
    /// bytes (implies `csum_partial`).
    pub gso_size: Option<u16>,
}

impl TxMeta {
    /// A TCP packet to be cut into segments of `size` payload bytes, its checksum
    /// partial (as GSO implies).
    pub const fn gso(size: u16) -> Self {
        TxMeta {
            csum_partial: true,
            gso_size: Some(size),
        }
    }
}

/// The same metadata for a received frame.
pub type RxMeta = TxMeta;
