//! Physical memory: the frame allocator, the kernel heap, and reading physical
//! memory through the identity map.

pub mod frame;
pub mod guard;
#[cfg(target_os = "none")]
pub mod heap;
pub mod image;
#[cfg(target_os = "none")]
pub mod physmem;
pub mod regions;
pub mod slab;

pub use frame::{FrameAllocator, FrameRun, FreeError, FRAME_BYTES};
