//! The system commands' reports: `uptime` (procps' `up H:MM:SS`, plus the boot time),
//! `sleep`'s summary (with what Xen's runstate saw, VCPUOP_get_runstate_info), and
//! `mem` (the E820-style memory map, Xen's XENMEM_memory_map beside it, frames, heap,
//! serial input losses). The kernel gathers the numbers; the text is made here.

use alloc::format;
use alloc::string::String;
use core::fmt::{self, Write};

/// Nanoseconds as seconds with milliseconds: `12.345`.
pub fn secs_ms(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000_000_000, (ns / 1_000_000) % 1000)
}

/// `uptime`'s line (without the newline): `up H:MM:SS.mmm`, and `, booted in X ms`
/// when the time to the first prompt (µs) is known.
pub fn uptime(now_ns: u64, booted_us: Option<u64>) -> String {
    let s = now_ns / 1_000_000_000;
    let ms = (now_ns / 1_000_000) % 1000;
    let mut line = format!(
        "up {}:{:02}:{:02}.{:03}",
        s / 3600,
        (s / 60) % 60,
        s % 60,
        ms
    );
    if let Some(us) = booted_us {
        line += &format!(", booted in {}.{:03} ms", us / 1000, us % 1000);
    }
    line
}

/// What Xen saw during a `sleep`: the vCPU's time blocked (ns) and the
/// `VIRQ_TIMER` events delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SleepOnXen {
    /// Nanoseconds vCPU 0 spent blocked (runstate `RUNSTATE_blocked`).
    pub blocked_ns: u64,
    /// Timer events taken.
    pub timer_events: u64,
}

/// `sleep`'s summary (without the newline).
pub fn sleep_summary(slept_ns: u64, xen: Option<SleepOnXen>) -> String {
    let mut line = format!("slept {} s", secs_ms(slept_ns));
    if let Some(x) = xen {
        line += &format!(
            "; vCPU 0 blocked {} s of it, {} VIRQ_TIMER events",
            secs_ms(x.blocked_ns),
            x.timer_events
        );
    }
    line
}

/// One memory map entry as `mem` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapEntry {
    /// First byte.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// Its kind, as the boot information names it (`Usable`, `Reserved`, ...).
    pub kind: String,
}

/// Xen's own copy of the memory map (XENMEM_memory_map), beside the loader's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XenMap {
    /// Not on Xen: nothing to say.
    NotXen,
    /// The map came from Xen (the loader gave none): its entry count.
    Source {
        /// Entries.
        entries: usize,
    },
    /// Both exist: Xen's entries, usable bytes, and whether it equals the boot map.
    Compared {
        /// Entries.
        entries: usize,
        /// Usable bytes in Xen's map.
        usable_bytes: u64,
        /// Whether it is the same as the boot map.
        same: bool,
    },
    /// The hypercall failed.
    Failed,
}

/// What `mem` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemReport {
    /// The boot protocol the map came with (`PVH`, `multiboot2`).
    pub protocol: String,
    /// The boot memory map.
    pub map: alloc::vec::Vec<MapEntry>,
    /// Xen's copy of it.
    pub xen_map: XenMap,
    /// Usable bytes in the boot map.
    pub usable_bytes: u64,
    /// Free frames, all frames, free ranges.
    pub frames: (u64, u64, u64),
    /// Bytes per frame.
    pub frame_bytes: u64,
    /// Heap bytes used and free, and bytes of it in size-class slabs.
    pub heap: (u64, u64, u64),
    /// The heap's regions and growth: (regions, bytes they span, bytes it can still
    /// take from the frames, low-water mark, times memory was found low).
    pub growth: (u64, u64, u64, u64, u64),
    /// Bytes in live allocations (used, less what the slabs keep free for reuse).
    pub live: u64,
    /// The boot stack's size and the deepest it has been, in bytes.
    pub stack: (u64, u64),
    /// Serial input bytes dropped and UART overruns.
    pub serial: (u64, u64),
}

/// Writes `mem`'s report.
pub fn write_mem(r: &MemReport, out: &mut dyn Write) -> fmt::Result {
    let kib = |b: u64| b / 1024;
    writeln!(out, "memory map ({}):", r.protocol)?;
    for e in &r.map {
        let end = e.start.saturating_add(e.len).saturating_sub(1);
        writeln!(
            out,
            "  {:#018x}-{:#018x} {:>10} KiB  {}",
            e.start,
            end,
            kib(e.len),
            e.kind
        )?;
    }
    match r.xen_map {
        XenMap::NotXen => {}
        XenMap::Source { entries } => writeln!(
            out,
            "memory map source: XENMEM_memory_map ({entries} entries)"
        )?,
        XenMap::Compared {
            entries,
            usable_bytes,
            same,
        } => writeln!(
            out,
            "XENMEM_memory_map: {} entries, {} KiB usable, {} the boot map",
            entries,
            kib(usable_bytes),
            if same { "same as" } else { "differs from" }
        )?,
        XenMap::Failed => writeln!(out, "XENMEM_memory_map: failed")?,
    }
    let (free, total, ranges) = r.frames;
    let (used, hfree, slab) = r.heap;
    writeln!(out, "usable: {} KiB", kib(r.usable_bytes))?;
    writeln!(
        out,
        "frames: {} free of {} ({} KiB free, {} free ranges)",
        free,
        total,
        kib(free.saturating_mul(r.frame_bytes)),
        ranges
    )?;
    writeln!(
        out,
        "heap: {} KiB used, {} KiB free ({} KiB of it in size-class slabs)",
        kib(used),
        kib(hfree),
        kib(slab)
    )?;
    writeln!(out, "heap: {} KiB in live allocations", kib(r.live))?;
    let (regions, size, spare, low, seen) = r.growth;
    writeln!(
        out,
        "heap: {} KiB in {} region(s), {} KiB more to take from frames; memory low below {} KiB available (seen {} times)",
        kib(size),
        regions,
        kib(spare),
        kib(low),
        seen
    )?;
    writeln!(
        out,
        "stack: {} KiB, at most {} KiB used so far (a guard page below it)",
        kib(r.stack.0),
        r.stack.1.div_ceil(1024)
    )?;
    writeln!(
        out,
        "serial input: {} bytes dropped, {} overruns",
        r.serial.0, r.serial.1
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn seconds_keep_three_digits_of_milliseconds() {
        assert_eq!(secs_ms(0), "0.000");
        assert_eq!(secs_ms(1_005_000_000), "1.005");
        assert_eq!(secs_ms(61_999_999_999), "61.999");
        assert_eq!(secs_ms(u64::MAX), "18446744073.709");
    }

    #[test]
    fn uptime_is_hours_minutes_seconds_and_the_boot_time() {
        assert_eq!(uptime(0, None), "up 0:00:00.000");
        // 1 h 2 min 3.004 s, booted in 12.345 ms
        let ns = ((3600 + 120 + 3) * 1000 + 4) * 1_000_000;
        assert_eq!(
            uptime(ns, Some(12_345)),
            "up 1:02:03.004, booted in 12.345 ms"
        );
        // hours are not wrapped at a day
        assert_eq!(uptime(100 * 3600 * 1_000_000_000, None), "up 100:00:00.000");
        assert_eq!(
            uptime(59_999_000_000, Some(7)),
            "up 0:00:59.999, booted in 0.007 ms"
        );
    }

    #[test]
    fn sleep_says_what_xen_saw_only_on_xen() {
        assert_eq!(sleep_summary(1_500_000_000, None), "slept 1.500 s");
        assert_eq!(
            sleep_summary(
                2_000_000_000,
                Some(SleepOnXen {
                    blocked_ns: 1_990_000_000,
                    timer_events: 3
                })
            ),
            "slept 2.000 s; vCPU 0 blocked 1.990 s of it, 3 VIRQ_TIMER events"
        );
    }

    fn report(xen_map: XenMap) -> MemReport {
        MemReport {
            protocol: "PVH".into(),
            map: vec![
                MapEntry {
                    start: 0,
                    len: 0xa0000,
                    kind: "Usable".into(),
                },
                MapEntry {
                    start: 0xfc00_0000,
                    len: 0,
                    kind: "Reserved".into(),
                },
            ],
            xen_map,
            usable_bytes: 640 * 1024,
            frames: (10, 160, 2),
            frame_bytes: 4096,
            heap: (3 * 1024 + 1023, 2048, 1024),
            growth: (2, 6 << 10, 512 << 10, 192 << 10, 3),
            live: 2 * 1024 + 512,
            stack: (64 * 1024, 20 * 1024 + 8),
            serial: (5, 1),
        }
    }

    #[test]
    fn mem_report_lines() {
        let mut s = String::new();
        write_mem(&report(XenMap::NotXen), &mut s).unwrap();
        assert_eq!(
            s,
            "memory map (PVH):\n\
             \x20 0x0000000000000000-0x000000000009ffff        640 KiB  Usable\n\
             \x20 0x00000000fc000000-0x00000000fbffffff          0 KiB  Reserved\n\
             usable: 640 KiB\n\
             frames: 10 free of 160 (40 KiB free, 2 free ranges)\n\
             heap: 3 KiB used, 2 KiB free (1 KiB of it in size-class slabs)\n\
             heap: 2 KiB in live allocations\n\
             heap: 6 KiB in 2 region(s), 512 KiB more to take from frames; memory low below 192 KiB available (seen 3 times)\n\
             stack: 64 KiB, at most 21 KiB used so far (a guard page below it)\n\
             serial input: 5 bytes dropped, 1 overruns\n"
        );
    }

    #[test]
    fn mem_report_says_where_xens_map_stands() {
        let line = |m| {
            let mut s = String::new();
            write_mem(&report(m), &mut s).unwrap();
            s.lines().nth(3).unwrap().to_string()
        };
        use alloc::string::ToString;
        assert_eq!(
            line(XenMap::Source { entries: 4 }),
            "memory map source: XENMEM_memory_map (4 entries)"
        );
        assert_eq!(
            line(XenMap::Compared {
                entries: 5,
                usable_bytes: 8 << 20,
                same: false
            }),
            "XENMEM_memory_map: 5 entries, 8192 KiB usable, differs from the boot map"
        );
        assert_eq!(
            line(XenMap::Compared {
                entries: 2,
                usable_bytes: 4096,
                same: true
            }),
            "XENMEM_memory_map: 2 entries, 4 KiB usable, same as the boot map"
        );
        assert_eq!(line(XenMap::Failed), "XENMEM_memory_map: failed");
    }
}
