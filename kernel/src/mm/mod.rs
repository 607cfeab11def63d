//! Physical memory: the frame allocator and the kernel heap.

pub mod frame;
pub mod guard;
#[cfg(target_os = "none")]
pub mod heap;
pub mod slab;

pub use frame::{FrameAllocator, FrameRun, FreeError, FRAME_BYTES};
