//! The Xen commands: `xen` (version, CPUID leaves, upcall, event channels, timer,
//! runstate, grant table), `xenstore` (xs_wire.h's operations on this domain's store)
//! and `devices` (the PV devices xenbus found, with frontend and backend states).

use super::system::secs_ms;
use super::Host;
use crate::io::console;
use core::fmt::Write;
use xenlet_shell::commands::xen::{child_path, xenstore_op, XsOp};
use xenlet_shell::{no_args, CmdError, CmdResult};

pub(super) fn xen(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    let Some(x) = crate::xen::platform::info() else {
        return Err(CmdError::failed("not running on Xen"));
    };
    writeln!(out, "version: Xen {}", x.version)?;
    writeln!(
        out,
        "cpuid: base {:#x}, max leaf {:#x}, hypercall MSR {:#x}, HVM features {:#x}{}",
        x.cpuid.base,
        x.cpuid.max_leaf,
        x.cpuid.hypercall_msr,
        x.cpuid.hvm_features,
        x.cpuid
            .vcpu_id
            .map(|v| alloc::format!(", vcpu {v}"))
            .unwrap_or_default()
    )?;
    writeln!(out, "features: {:#010x}", x.features)?;
    writeln!(out, "shared info: {:#x}", x.shared_info.page().addr())?;
    match x.callback {
        crate::xen::platform::CallbackMode::PerVcpu(v) => writeln!(
            out,
            "upcall: per-vCPU vector {v:#x} (HVMOP_set_evtchn_upcall_vector, x2APIC)"
        )?,
        crate::xen::platform::CallbackMode::Vector(v) => writeln!(
            out,
            "upcall: callback vector {v:#x} (HVM_PARAM_CALLBACK_IRQ)"
        )?,
        crate::xen::platform::CallbackMode::Polled => {
            writeln!(out, "upcall: none (events polled)")?
        }
    }
    let ports = crate::xen::platform::bound_ports();
    write!(out, "event channels bound: {}", ports.len())?;
    for p in &ports {
        write!(out, " {p}")?;
    }
    writeln!(out)?;
    match crate::xen::platform::timer_port() {
        Some(p) => writeln!(
            out,
            "timer: VIRQ_TIMER on event channel {p}, {} events",
            crate::xen::platform::timer_events()
        )?,
        None => writeln!(out, "timer: VIRQ_TIMER not bound")?,
    }
    let s = crate::sys::suspend::stats();
    writeln!(
        out,
        "suspend: {} (cancelled {}, resumed in a new domain {}; last {} ms)",
        s.suspends, s.cancelled, s.resumed, s.last_ms
    )?;
    // Interrupts taken on the idle `hlt` before it ran (an STI shadow not honoured
    // by the virtualization below), resumed past it rather than slept through.
    writeln!(
        out,
        "idle: {} wakeups taken before the hlt, resumed past it",
        crate::arch::halt::rescued()
    )?;
    if let Some(t) = crate::xen::platform::runstate() {
        writeln!(
            out,
            "vcpu 0: running {} s, runnable {} s, blocked {} s, offline {} s",
            secs_ms(t[0]),
            secs_ms(t[1]),
            secs_ms(t[2]),
            secs_ms(t[3])
        )?;
    }
    match crate::xen::gnttab::stats() {
        // Frames are mapped on demand: more than one means the table grew.
        Some(g) => writeln!(
            out,
            "grant table: v1, {} of {} frames mapped, {} refs in use of {}",
            g.frames,
            g.max_frames,
            g.refs_in_use,
            g.frames * xenlet_xen::gnttab::ENTRIES_PER_FRAME
        )?,
        None => writeln!(out, "grant table: not set up")?,
    }
    // As a driver domain (only once it served a client vif).
    let (mapped, lost) = crate::xen::gnttab::foreign_stats();
    let events = crate::dev::backends::backend_events();
    if mapped + lost + events > 0 {
        writeln!(
            out,
            "driver domain: {mapped} pages of other domains mapped, {lost} frames lost to failed unmaps, {events} backend vif events"
        )?;
    }
    writeln!(
        out,
        "pv console: {}",
        if console::has_xen_console() {
            alloc::format!(
                "attached, {} bytes of output dropped (ring not drained)",
                console::pv_console_dropped()
            )
        } else {
            alloc::string::String::from("absent")
        }
    )?;
    if let Some(n) = crate::xen::xenstore::events_dropped() {
        writeln!(
            out,
            "xenstore: {n} watch events merged or dropped (at most {} queued)",
            xenlet_xen::xenstore::MAX_QUEUED_EVENTS
        )?;
    }
    // The data plane's turns at the kernel's waits (`sync::wait`): it runs while
    // commands wait, not only between them.
    writeln!(
        out,
        "core: the data plane served at {} waits",
        crate::xen::idle::service_turns()
    )?;
    // where its time went (compare two `xen`s around some traffic)
    let (polls, ns) = crate::dev::netcost::totals();
    let parts: alloc::vec::Vec<alloc::string::String> = crate::dev::netcost::NAMES
        .iter()
        .zip(ns)
        .map(|(name, ns)| alloc::format!("{name} {} us", ns / 1000))
        .collect();
    writeln!(out, "core: {polls} network polls took {}", parts.join(", "))?;
    // the traps to Xen among them (and elsewhere: any port's sends)
    let (traps, copy_ops) = crate::xen::traps::totals();
    let traps: alloc::vec::Vec<alloc::string::String> = crate::xen::traps::NAMES
        .iter()
        .zip(traps)
        .map(|(name, (n, ns))| alloc::format!("{n} {name} took {} us", ns / 1000))
        .collect();
    writeln!(
        out,
        "core: traps: {} ({copy_ops} grant-copy ops)",
        traps.join(", ")
    )?;
    Ok(())
}

fn xs_err(e: crate::xen::xenstore::Error) -> CmdError {
    CmdError::failed(alloc::format!("{e}"))
}

fn xs_ls(path: &str, depth: usize, out: &mut dyn Write) -> CmdResult {
    let children = crate::xen::xenstore::directory(path).map_err(xs_err)?;
    for c in children {
        let child = child_path(path, &c);
        let value = crate::xen::xenstore::read(&child).unwrap_or_default();
        writeln!(out, "{:indent$}{c} = \"{value}\"", "", indent = depth)?;
        if depth < 8 {
            xs_ls(&child, depth + 1, out)?;
        }
    }
    Ok(())
}

pub(super) fn xenstore_cmd(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    if !crate::xen::xenstore::connected() {
        return Err(CmdError::failed(
            "XenStore is not connected (not running on Xen?)",
        ));
    }
    match xenstore_op(args)? {
        XsOp::Ls(None) => xs_ls("/local/domain", 0, out).or_else(|_| xs_ls("device", 0, out)),
        XsOp::Ls(Some(path)) => xs_ls(path, 0, out),
        XsOp::Read(path) => {
            let v = crate::xen::xenstore::read(path).map_err(xs_err)?;
            writeln!(out, "{v}")?;
            Ok(())
        }
        XsOp::Write(path, value) => crate::xen::xenstore::write(path, value).map_err(xs_err),
        XsOp::Rm(path) => crate::xen::xenstore::rm(path).map_err(xs_err),
        XsOp::Mkdir(path) => crate::xen::xenstore::mkdir(path).map_err(xs_err),
        XsOp::Perms(path) => {
            let p = crate::xen::xenstore::get_perms(path).map_err(xs_err)?;
            writeln!(out, "{}", p.join(" "))?;
            Ok(())
        }
        XsOp::Watch(path) => crate::xen::xenstore::watch(path, path, |ev| {
            crate::println!("xenstore: watch {} fired: {}", ev.token, ev.path);
        })
        .map_err(xs_err),
        XsOp::Unwatch(path) => crate::xen::xenstore::unwatch(path, path).map_err(xs_err),
    }
}

pub(super) fn devices(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    no_args(args)?;
    if !crate::xen::xenstore::connected() {
        return Err(CmdError::failed(
            "XenStore is not connected (not running on Xen?)",
        ));
    }
    let devs = crate::xen::xenbus::enumerate().map_err(xs_err)?;
    if devs.is_empty() {
        writeln!(out, "no PV devices")?;
    }
    for d in devs {
        let st = |s: Option<xenlet_xen::xenbus::XenbusState>| {
            s.map_or(alloc::string::String::from("?"), |s| alloc::format!("{s}"))
        };
        writeln!(
            out,
            "{:<6} {:<5} {:<12} frontend {:<12} backend dom{} {} ({})",
            d.name(),
            d.kind,
            d.path(),
            st(d.state),
            d.backend_id
                .map_or(alloc::string::String::from("?"), |b| alloc::format!("{b}")),
            st(d.backend_state),
            d.backend
        )?;
    }
    writeln!(
        out,
        "handshake waits woken by a XenStore watch on the backend state: {}",
        crate::dev::frontends::watch_wakeups()
    )?;
    Ok(())
}
