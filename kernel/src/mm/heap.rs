//! The kernel's frame allocator and heap, set up from the boot memory map.

use super::frame::{FrameAllocator, FrameRun, FreeError, FRAME_BYTES};
use super::guard::{CheckedAlloc, Forbidden};
use super::regions::{Grow, HeapStats, RegionHeap};
use super::slab::SlabHeap;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use spin::Mutex;
use xenlet_boot::{BootInfo, MemoryKind};

/// The heap, checked (allocating in interrupt context panics, see
/// [`forbid_allocation`]): size classes (`slab`) in front of first-fit regions that
/// grow from the frame allocator (`regions`).
#[global_allocator]
static HEAP: CheckedAlloc<SlabHeap<RegionHeap<FrameGrow>>> =
    CheckedAlloc::new(SlabHeap::new(RegionHeap::new(FrameGrow)));

/// Frames the heap leaves to rings, grants and I/O buffers when it grows (set at
/// [`init`]: an eighth of memory, at least 512 KiB).
static FRAME_RESERVE: AtomicU64 = AtomicU64::new(u64::MAX);
/// Below this many available bytes, memory is low ([`memory_low`]).
static LOW_WATER: AtomicUsize = AtomicUsize::new(0);
/// Times [`memory_low`] said yes.
static LOW_SEEN: AtomicU64 = AtomicU64::new(0);

/// The heap's growth: runs of frames, while the frames left stay above the reserve.
struct FrameGrow;

impl Grow for FrameGrow {
    fn take(&self, bytes: usize) -> Option<(usize, usize)> {
        let count = (bytes as u64).div_ceil(FRAME_BYTES);
        x86_64::instructions::interrupts::without_interrupts(|| {
            let mut f = FRAMES.lock();
            if f.free_frames().saturating_sub(count) < FRAME_RESERVE.load(Ordering::Relaxed) {
                return None;
            }
            f.alloc(count, 1)
                .map(|r| (r.addr as usize, r.len_bytes() as usize))
        })
    }
    fn spare(&self) -> usize {
        let free =
            x86_64::instructions::interrupts::without_interrupts(|| FRAMES.lock().free_frames());
        (free.saturating_sub(FRAME_RESERVE.load(Ordering::Relaxed)) * FRAME_BYTES) as usize
    }
}

/// Forbids heap allocation until the guard is dropped: held by the interrupt
/// dispatcher around every handler.
pub fn forbid_allocation() -> Forbidden<'static> {
    HEAP.forbid()
}

static FRAMES: Mutex<FrameAllocator> = Mutex::new(FrameAllocator::new());

/// Highest physical address the boot page tables map (identity, 2 MiB pages).
pub const MAPPED_LIMIT: u64 = 4 << 30;
/// Low memory below 1 MiB stays with firmware (BIOS data, EBDA, option ROMs).
const LOW_MEMORY_END: u64 = 1 << 20;

extern "C" {
    static __kernel_start: u8;
    static __kernel_end: u8;
}

/// Physical range of the kernel image (code, data, bss, boot stack).
pub fn kernel_image() -> (u64, u64) {
    // Addresses of linker symbols only; nothing is read through them.
    (
        core::ptr::addr_of!(__kernel_start) as u64,
        core::ptr::addr_of!(__kernel_end) as u64,
    )
}

/// What `init` set up, for the boot report and `mem`.
#[derive(Clone, Copy, Debug)]
pub struct MemoryReport {
    /// Usable RAM in the boot map.
    pub usable_bytes: u64,
    /// Frames handed to the allocator.
    pub managed_frames: u64,
    /// Heap start and size.
    pub heap: FrameRun,
}

/// Why memory setup failed.
#[derive(Clone, Copy, Debug)]
pub struct NoHeapMemory;

/// Builds the frame allocator from the memory map (below [`MAPPED_LIMIT`], above
/// 1 MiB, minus the kernel image and loader data) and carves the heap out of it.
pub fn init(info: &BootInfo) -> Result<MemoryReport, NoHeapMemory> {
    let mut frames = FRAMES.lock();
    for r in info
        .memory
        .regions()
        .iter()
        .filter(|r| r.kind == MemoryKind::Usable)
    {
        let start = r.start.max(LOW_MEMORY_END);
        let end = r.start.saturating_add(r.len_bytes).min(MAPPED_LIMIT);
        frames.add_region(start, end);
    }
    let (ks, ke) = kernel_image();
    frames.reserve(ks, ke);
    for &(s, e) in &info.reserved_ranges {
        if e > s {
            frames.reserve(s, e);
        }
    }
    let managed = frames.total_frames();
    // A quarter of memory, between 1 MiB and 64 MiB: the rest stays in frames for
    // rings, grants and I/O buffers.
    let heap_bytes = (managed * FRAME_BYTES / 4).clamp(1 << 20, 64 << 20);
    let heap = frames
        .alloc(heap_bytes / FRAME_BYTES, 1)
        .or_else(|| frames.alloc(256, 1))
        .ok_or(NoHeapMemory)?;
    // The heap may grow later, down to an eighth of memory (at least 512 KiB) left
    // in frames; below a low-water mark of an eighth of the boot heap (192 KiB to
    // 2 MiB) memory is low and the paths that grow without bound refuse work.
    FRAME_RESERVE.store((managed / 8).max(128), Ordering::Relaxed);
    LOW_WATER.store(
        (heap.len_bytes() as usize / 8).clamp(192 << 10, 2 << 20),
        Ordering::Relaxed,
    );
    drop(frames);
    // SAFETY: `heap` is a run of free RAM from the allocator (usable in the memory map, outside the kernel image and loader data), identity-mapped below MAPPED_LIMIT, and owned by the heap from now on: it is never returned to FRAMES.
    let added = unsafe {
        HEAP.inner()
            .backing()
            .add_region(heap.addr as usize, heap.len_bytes() as usize)
    };
    if !added {
        return Err(NoHeapMemory);
    }
    Ok(MemoryReport {
        usable_bytes: info.memory.usable_bytes(),
        managed_frames: managed,
        heap,
    })
}

/// Allocates `count` physically contiguous frames aligned to `align_frames`.
pub fn alloc_frames(count: u64, align_frames: u64) -> Option<FrameRun> {
    x86_64::instructions::interrupts::without_interrupts(|| {
        FRAMES.lock().alloc(count, align_frames)
    })
}

/// Returns frames to the allocator.
pub fn free_frames(run: FrameRun) -> Result<(), FreeError> {
    x86_64::instructions::interrupts::without_interrupts(|| FRAMES.lock().free(run))
}

/// Frame statistics: (free, total managed, free ranges).
pub fn frame_stats() -> (u64, u64, usize) {
    x86_64::instructions::interrupts::without_interrupts(|| {
        let f = FRAMES.lock();
        (f.free_frames(), f.total_frames(), f.free_ranges())
    })
}

/// Heap statistics: its regions' size, use and count.
pub fn heap_stats() -> HeapStats {
    HEAP.inner().backing().stats()
}

/// Bytes the heap could still hand out: free in its regions, and what it could
/// still take from the frames.
pub fn available() -> usize {
    HEAP.inner().backing().available()
}

/// Whether memory is low: fewer than the low-water mark's bytes [`available`].
/// Paths that grow without bound (a filesystem's caches and write-behind, a new
/// command's buffers) ask first and shrink or refuse (ENOMEM); what is left below
/// the mark serves the small allocations of work under way.
pub fn memory_low() -> bool {
    let low = available() < LOW_WATER.load(Ordering::Relaxed);
    if low {
        LOW_SEEN.fetch_add(1, Ordering::Relaxed);
    }
    low
}

/// (low-water mark in bytes, times memory was found low, bytes the heap can still
/// take from the frames).
pub fn pressure_stats() -> (usize, u64, usize) {
    (
        LOW_WATER.load(Ordering::Relaxed),
        LOW_SEEN.load(Ordering::Relaxed),
        HEAP.inner().backing().grower().spare(),
    )
}

/// Bytes in live allocations: what the kernel holds, not what the allocator keeps.
pub fn live_bytes() -> usize {
    HEAP.live_bytes()
}

/// Bytes the size classes hold (in use or free for reuse).
pub fn slab_bytes() -> usize {
    x86_64::instructions::interrupts::without_interrupts(|| HEAP.inner().slab_bytes())
}
