//! The owned, validated boot information the kernel works from.

use core::fmt;

/// Which boot protocol entered the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootProtocol {
    /// PVH: `XEN_ELFNOTE_PHYS32_ENTRY` with `hvm_start_info` (QEMU `-kernel`, xl `type="pvh"`).
    Pvh,
    /// multiboot2 (GRUB, the HVM disk image).
    Multiboot2,
}

impl fmt::Display for BootProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BootProtocol::Pvh => "PVH",
            BootProtocol::Multiboot2 => "multiboot2",
        })
    }
}

/// What a region of the physical memory map holds (E820 types, shared by PVH and multiboot2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryKind {
    /// Free RAM (type 1).
    Usable,
    /// Reserved (type 2).
    Reserved,
    /// ACPI tables, reclaimable (type 3).
    AcpiReclaimable,
    /// ACPI non-volatile storage (type 4).
    AcpiNvs,
    /// Bad memory (type 5).
    Unusable,
    /// Any other type number.
    Other(u32),
}

impl MemoryKind {
    /// From an E820-style type number.
    pub fn from_e820(t: u32) -> Self {
        match t {
            1 => MemoryKind::Usable,
            2 => MemoryKind::Reserved,
            3 => MemoryKind::AcpiReclaimable,
            4 => MemoryKind::AcpiNvs,
            5 => MemoryKind::Unusable,
            n => MemoryKind::Other(n),
        }
    }
}

/// One region of the memory map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRegion {
    /// First physical byte.
    pub start: u64,
    /// Length in bytes.
    pub len_bytes: u64,
    /// What the region holds.
    pub kind: MemoryKind,
}

/// A fixed-capacity memory map (no heap exists when it is built).
#[derive(Clone, Debug)]
pub struct MemoryMap {
    regions: [MemoryRegion; Self::CAPACITY],
    len: usize,
    dropped: usize,
}

impl MemoryMap {
    /// Most regions kept; further ones are counted in [`MemoryMap::dropped`].
    pub const CAPACITY: usize = 64;

    /// An empty map.
    pub const fn new() -> Self {
        MemoryMap {
            regions: [MemoryRegion {
                start: 0,
                len_bytes: 0,
                kind: MemoryKind::Reserved,
            }; Self::CAPACITY],
            len: 0,
            dropped: 0,
        }
    }

    /// Adds a region; empty regions are ignored, overflow is counted.
    pub fn push(&mut self, r: MemoryRegion) {
        if r.len_bytes == 0 {
            return;
        }
        match self.regions.get_mut(self.len) {
            Some(slot) => {
                *slot = r;
                self.len += 1;
            }
            None => self.dropped += 1,
        }
    }

    /// The regions, in loader order.
    pub fn regions(&self) -> &[MemoryRegion] {
        &self.regions[..self.len]
    }

    /// Regions that did not fit.
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// Total bytes of usable RAM.
    pub fn usable_bytes(&self) -> u64 {
        self.regions()
            .iter()
            .filter(|r| r.kind == MemoryKind::Usable)
            .fold(0u64, |a, r| a.saturating_add(r.len_bytes))
    }
}

impl Default for MemoryMap {
    fn default() -> Self {
        Self::new()
    }
}

/// The kernel command line, copied out of loader memory.
#[derive(Clone)]
pub struct CmdLine {
    buf: [u8; Self::CAPACITY],
    len: usize,
}

impl CmdLine {
    /// Longest command line kept; longer ones are cut at a character boundary.
    pub const CAPACITY: usize = 512;

    /// An empty command line.
    pub const fn new() -> Self {
        CmdLine {
            buf: [0; Self::CAPACITY],
            len: 0,
        }
    }

    /// Builds from raw bytes (up to a NUL), replacing invalid UTF-8.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        let mut c = CmdLine::new();
        for &b in bytes[..end].iter().take(Self::CAPACITY) {
            // Keep printable ASCII only: the line is shown on the console.
            c.buf[c.len] = if (0x20..0x7f).contains(&b) { b } else { b'?' };
            c.len += 1;
        }
        c
    }

    /// The command line text.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl Default for CmdLine {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for CmdLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// Where the ACPI tables start, from a validated RSDP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcpiRoot {
    /// RSDP revision (0 = ACPI 1.0, 2 = ACPI 2.0+).
    pub revision: u8,
    /// Physical address of the RSDT.
    pub rsdt: u32,
    /// Physical address of the XSDT (revision 2+ with a valid extended checksum).
    pub xsdt: Option<u64>,
}

/// Everything the kernel takes from its loader.
#[derive(Clone, Debug)]
pub struct BootInfo {
    /// How the kernel was entered.
    pub protocol: BootProtocol,
    /// Physical memory map.
    pub memory: MemoryMap,
    /// Kernel command line.
    pub cmdline: CmdLine,
    /// ACPI root, when the loader gave one.
    pub acpi: Option<AcpiRoot>,
    /// Physical range `[start, end)` of loader data the kernel must not reuse
    /// (e.g. PVH modules); empty when none.
    pub reserved_ranges: [(u64, u64); 4],
}

/// Why boot information could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootInfoError {
    /// The structure does not carry the protocol's magic number.
    BadMagic(u32),
    /// A structure or table lies outside readable memory.
    Unreadable(u64),
    /// The structure is malformed (sizes, alignment).
    Malformed(&'static str),
    /// No memory map was given (PVH start_info version 0).
    NoMemoryMap,
}

impl fmt::Display for BootInfoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BootInfoError::BadMagic(m) => write!(f, "bad boot information magic {m:#x}"),
            BootInfoError::Unreadable(a) => write!(f, "boot information unreadable at {a:#x}"),
            BootInfoError::Malformed(what) => write!(f, "malformed boot information: {what}"),
            BootInfoError::NoMemoryMap => f.write_str("the loader gave no memory map"),
        }
    }
}
