//! The system commands: `version`, `mem` (the memory map, frames, heap), `uptime`,
//! `sleep` (on Xen's one-shot timer), `poweroff`, `reboot` and `crash` (deliberate
//! faults for the fault report). `dmesg` is with the file commands
//! ([`crate::shell::fscmds`]), as it reads the log like a file.

use super::Host;
use crate::bootinfo::{boot_info, boot_times};
use crate::sys::fault::{provoke, Deliberate};
use crate::{io::console, mm, sys::power, time::clock};
use core::fmt::Write;
pub(super) use xenlet_shell::commands::system::secs_ms;
use xenlet_shell::commands::system::{sleep_summary, SleepOnXen};
use xenlet_shell::{no_args, CmdError, CmdResult};

pub(super) fn version(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    writeln!(
        out,
        "Xenlet {} (git {}), x86_64-unknown-none",
        crate::VERSION,
        crate::GIT_REV
    )?;
    Ok(())
}

pub(super) fn mem(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use xenlet_shell::commands::system::{write_mem, MapEntry, MemReport, XenMap};
    no_args(args)?;
    let info = boot_info().ok_or_else(|| CmdError::failed("no boot information"))?;
    // Xen's own copy of the map (XENMEM_memory_map): the source when the loader gave
    // none, otherwise compared with the loader's.
    let xen_map = if crate::xen::platform::info().is_none() {
        XenMap::NotXen
    } else {
        match crate::xen::platform::memory_map() {
            Some(x) if crate::bootinfo::memory_map_from_xen() => XenMap::Source {
                entries: x.regions().len(),
            },
            Some(x) => XenMap::Compared {
                entries: x.regions().len(),
                usable_bytes: x.usable_bytes(),
                same: x.regions() == info.memory.regions(),
            },
            None => XenMap::Failed,
        }
    };
    let (free, total, ranges) = mm::heap::frame_stats();
    let hs = mm::heap::heap_stats();
    let (low_water, low_seen, spare) = mm::heap::pressure_stats();
    let report = MemReport {
        protocol: alloc::format!("{}", info.protocol),
        map: info
            .memory
            .regions()
            .iter()
            .map(|r| MapEntry {
                start: r.start,
                len: r.len_bytes,
                kind: alloc::format!("{:?}", r.kind),
            })
            .collect(),
        xen_map,
        usable_bytes: info.memory.usable_bytes(),
        frames: (free, total, ranges as u64),
        frame_bytes: mm::FRAME_BYTES,
        heap: (
            hs.used as u64,
            hs.free as u64,
            mm::heap::slab_bytes() as u64,
        ),
        growth: (
            hs.regions as u64,
            hs.size as u64,
            spare as u64,
            low_water as u64,
            low_seen,
        ),
        live: mm::heap::live_bytes() as u64,
        stack: (
            crate::arch::stack::boot_stack().bytes(),
            crate::arch::stack::high_water(),
        ),
        serial: console::input_losses(),
    };
    write_mem(&report, out)?;
    Ok(())
}

pub(super) fn uptime(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    let now = clock::now().as_nanos();
    let booted = boot_times().map(|t| t.prompt.as_micros());
    writeln!(
        out,
        "{}",
        xenlet_shell::commands::system::uptime(now, booted)
    )?;
    Ok(())
}

pub(super) fn sleep(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let [arg] = args else {
        return Err(CmdError::usage("expected one operand"));
    };
    let d =
        xenlet_shell::parse_duration(arg).map_err(|e| CmdError::usage(alloc::format!("{e}")))?;
    let (timer0, run0) = (
        crate::xen::platform::timer_events(),
        crate::xen::platform::runstate(),
    );
    let start = clock::now();
    let end = start + d;
    let mut interrupted = false;
    // The router, the LAN services and the vifs are served at every wake-up
    // (`xen::idle`): a sleeping console stops nothing.
    let mut wait = crate::xen::idle::Wait::in_command();
    while clock::now() < end {
        if console::take_interrupt() {
            interrupted = true;
            break;
        }
        // a save asked for meanwhile happens now (nothing held here)
        let _ = crate::sys::shutdown::checkpoint();
        wait.until(Some(end));
    }
    let slept = clock::now().saturating_duration_since(start);
    if interrupted {
        writeln!(out, "^C")?;
    }
    // What Xen saw: the time the vCPU was blocked (halted) rather than running.
    let xen = match (run0, crate::xen::platform::runstate()) {
        (Some(a), Some(b)) => Some(SleepOnXen {
            blocked_ns: b[2].saturating_sub(a[2]),
            timer_events: crate::xen::platform::timer_events() - timer0,
        }),
        _ => None,
    };
    writeln!(out, "{}", sleep_summary(slept.as_nanos() as u64, xen))?;
    Ok(())
}

pub(super) fn poweroff(_: &mut Host, args: &[&str], _: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    power::poweroff()
}

pub(super) fn reboot(_: &mut Host, args: &[&str], _: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    power::reboot()
}

/// `exits cpuid|sleep N`: N VM exits of one kind, timed. Under Xen every CPUID is
/// intercepted (an exit and a resume); every sleep is a one-shot timer hypercall, a
/// `hlt` the vCPU blocks on and a wake-up with the timer's upcall injected. A
/// diagnostic for the nested test bed, whose flake strikes at VM exits (`testbed
/// soak exits-pvh`), and a figure: what one exit costs.
pub(super) fn exits(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    const MAX: u32 = 10_000_000;
    let (kind, count) = match args {
        [kind @ ("cpuid" | "sleep"), n] => (
            *kind,
            n.parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX).contains(n))
                .ok_or_else(|| {
                    CmdError::usage(alloc::format!("invalid count '{n}' (1 to {MAX})"))
                })?,
        ),
        [kind, _] => {
            return Err(CmdError::usage(alloc::format!(
                "unknown exit kind '{kind}' (cpuid or sleep)"
            )))
        }
        _ => {
            return Err(CmdError::usage(
                "expected a kind (cpuid or sleep) and a count",
            ))
        }
    };
    let start = clock::now();
    let mut done = 0u32;
    while done < count {
        if done.is_multiple_of(256) && console::take_interrupt() {
            writeln!(out, "^C")?;
            break;
        }
        if kind == "cpuid" {
            core::hint::black_box(crate::arch::cpu::cpuid(0));
        } else {
            let end = clock::now() + core::time::Duration::from_micros(20);
            let mut wait = crate::xen::idle::Wait::in_command();
            while clock::now() < end {
                wait.until(Some(end));
            }
        }
        done += 1;
    }
    let ns = clock::now().saturating_duration_since(start).as_nanos() as u64;
    writeln!(
        out,
        "{done} {kind} exits in {}.{:03} s, {} ns each",
        ns / 1_000_000_000,
        ns / 1_000_000 % 1000,
        ns / u64::from(done.max(1))
    )?;
    Ok(())
}

pub(super) fn crash(_: &mut Host, args: &[&str], _: &mut dyn Write) -> CmdResult {
    let kind = match args {
        ["pf"] => Deliberate::PageFault,
        ["null"] => Deliberate::NullPointer,
        ["wx"] => Deliberate::WriteCode,
        ["nx"] => Deliberate::ExecuteData,
        ["gp"] => Deliberate::GeneralProtection,
        ["ud"] => Deliberate::InvalidOpcode,
        ["de"] => Deliberate::DivideError,
        ["panic"] => Deliberate::Panic,
        ["console"] => Deliberate::PanicInConsoleWrite,
        ["stack"] => Deliberate::StackOverflow,
        ["triple"] => Deliberate::TripleFault,
        [] => return Err(CmdError::usage("missing fault kind")),
        [k] => return Err(CmdError::usage(alloc::format!("unknown fault kind '{k}'"))),
        [_, extra, ..] => return Err(CmdError::usage(alloc::format!("extra operand '{extra}'"))),
    };
    provoke(kind)
}
