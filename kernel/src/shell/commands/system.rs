//! The system commands: `version`, `mem` (the memory map, frames, heap), `uptime`,
//! `sleep` (on Xen's one-shot timer), `poweroff`, `reboot` and `crash` (deliberate
//! faults for the fault report). `dmesg` is with the file commands
//! ([`crate::shell::fscmds`]), as it reads the log like a file.

use super::Host;
use crate::bootinfo::{boot_info, boot_times};
use crate::sys::fault::{provoke, Deliberate};
use crate::{io::console, mm, sys::power, time::clock};
use core::fmt::Write;
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

fn kib(bytes: u64) -> u64 {
    bytes / 1024
}

pub(super) fn mem(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    let info = boot_info().ok_or_else(|| CmdError::failed("no boot information"))?;
    writeln!(out, "memory map ({}):", info.protocol)?;
    for r in info.memory.regions() {
        let end = r.start.saturating_add(r.len_bytes).saturating_sub(1);
        writeln!(
            out,
            "  {:#018x}-{:#018x} {:>10} KiB  {:?}",
            r.start,
            end,
            kib(r.len_bytes),
            r.kind
        )?;
    }
    // Xen's own copy of the map (XENMEM_memory_map): the source when the loader gave
    // none, otherwise compared with the loader's.
    if crate::xen::platform::info().is_some() {
        match crate::xen::platform::memory_map() {
            Some(x) if crate::bootinfo::memory_map_from_xen() => writeln!(
                out,
                "memory map source: XENMEM_memory_map ({} entries)",
                x.regions().len()
            )?,
            Some(x) => writeln!(
                out,
                "XENMEM_memory_map: {} entries, {} KiB usable, {} the boot map",
                x.regions().len(),
                kib(x.usable_bytes()),
                if x.regions() == info.memory.regions() {
                    "same as"
                } else {
                    "differs from"
                }
            )?,
            None => writeln!(out, "XENMEM_memory_map: failed")?,
        }
    }
    let (free, total, ranges) = mm::heap::frame_stats();
    let (used, hfree) = mm::heap::heap_stats();
    writeln!(out, "usable: {} KiB", kib(info.memory.usable_bytes()))?;
    writeln!(
        out,
        "frames: {} free of {} ({} KiB free, {} free ranges)",
        free,
        total,
        kib(free * mm::FRAME_BYTES),
        ranges
    )?;
    writeln!(
        out,
        "heap: {} KiB used, {} KiB free ({} KiB of it in size-class slabs)",
        used / 1024,
        hfree / 1024,
        mm::heap::slab_bytes() / 1024
    )?;
    let (dropped, overruns) = console::input_losses();
    writeln!(
        out,
        "serial input: {dropped} bytes dropped, {overruns} overruns"
    )?;
    Ok(())
}

pub(super) fn uptime(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    let now = clock::now();
    let s = now.as_nanos() / 1_000_000_000;
    let ms = (now.as_nanos() / 1_000_000) % 1000;
    write!(
        out,
        "up {}:{:02}:{:02}.{:03}",
        s / 3600,
        (s / 60) % 60,
        s % 60,
        ms
    )?;
    if let Some(t) = boot_times() {
        let us = t.prompt.as_micros();
        write!(out, ", booted in {}.{:03} ms", us / 1000, us % 1000)?;
    }
    writeln!(out)?;
    Ok(())
}

pub(super) fn secs_ms(ns: u64) -> alloc::string::String {
    alloc::format!("{}.{:03}", ns / 1_000_000_000, (ns / 1_000_000) % 1000)
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
    while clock::now() < end {
        if console::take_interrupt() {
            interrupted = true;
            break;
        }
        crate::xen::idle::halt_in_command(Some(end));
    }
    let slept = clock::now().saturating_duration_since(start);
    if interrupted {
        writeln!(out, "^C")?;
    }
    write!(out, "slept {} s", secs_ms(slept.as_nanos() as u64))?;
    // What Xen saw: the time the vCPU was blocked (halted) rather than running.
    if let (Some(a), Some(b)) = (run0, crate::xen::platform::runstate()) {
        write!(
            out,
            "; vCPU 0 blocked {} s of it, {} VIRQ_TIMER events",
            secs_ms(b[2].saturating_sub(a[2])),
            crate::xen::platform::timer_events() - timer0
        )?;
    }
    writeln!(out)?;
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

pub(super) fn crash(_: &mut Host, args: &[&str], _: &mut dyn Write) -> CmdResult {
    let kind = match args {
        ["pf"] => Deliberate::PageFault,
        ["gp"] => Deliberate::GeneralProtection,
        ["ud"] => Deliberate::InvalidOpcode,
        ["de"] => Deliberate::DivideError,
        ["panic"] => Deliberate::Panic,
        ["console"] => Deliberate::PanicInConsoleWrite,
        [] => return Err(CmdError::usage("missing fault kind")),
        [k] => return Err(CmdError::usage(alloc::format!("unknown fault kind '{k}'"))),
        [_, extra, ..] => return Err(CmdError::usage(alloc::format!("extra operand '{extra}'"))),
    };
    provoke(kind)
}
