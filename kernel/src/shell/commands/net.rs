//! The network commands over [`crate::dev::network`]: `ip` (iproute2 style, with the
//! router's forwarding and neighbour tables when it runs), `ifconfig`, `udhcpc`,
//! `ping`, `ethtool -S` (a vif's driver counters), and the background servers
//! `iperf3` and `echod`.

use super::Host;
use crate::io::console;
use alloc::string::String;
use core::fmt::Write;
use xenlet_net::link::Link as _;
use xenlet_shell::commands::net::{
    ethtool_stats_iface, iperf3_port, no_such_device, port_arg, udhcpc_iface, wants_link_stats,
    write_ethtool_stats, write_router_counters,
};
use xenlet_shell::{CmdError, CmdResult};

pub(super) fn ip(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let mut stack = crate::dev::network::NET.lock();
    // a router shows its forwarding table and neighbour table (the stack's own are
    // per interface and smaller)
    if matches!(
        args,
        ["route"] | ["route", "show"] | ["r"] | ["neigh"] | ["neigh", "show"] | ["n"]
    ) {
        if let Some(gw) = crate::dev::network::GATEWAY.lock().as_ref() {
            if args[0].starts_with('r') {
                for l in gw.router.route_lines() {
                    writeln!(out, "{l}")?;
                }
            } else {
                for l in gw.router.neigh_lines() {
                    writeln!(out, "{l}")?;
                }
            }
            return Ok(());
        }
    }
    let mut text = String::new();
    let r = xenlet_net::ip::ip(&mut stack, args, &mut text);
    out.write_str(&text)?;
    if r.is_ok() && wants_link_stats(args) {
        if let Some(gw) = crate::dev::network::GATEWAY.lock().as_ref() {
            let links: alloc::vec::Vec<(&str, String)> = stack
                .ifs
                .iter()
                .enumerate()
                .filter_map(|(i, n)| {
                    let id = gw.port_of(i)?;
                    Some((
                        n.name.as_str(),
                        alloc::format!("{}", gw.router.stats().link_display(id)),
                    ))
                })
                .collect();
            let mut drops: alloc::vec::Vec<(String, u64)> = gw
                .router
                .stats()
                .drops()
                .map(|(r, n)| (alloc::format!("{r:?}"), n))
                .collect();
            // the glue's own drops: frames for the stack past its queue, and flows of
            // the stack's packets the firewall was not told of
            let (local, sent) = stack.ifs.iter().fold((0, 0), |(a, b), n| {
                (a + n.link.local_dropped(), b + n.link.sent_dropped())
            });
            drops.push((String::from("LocalQueueFull"), local));
            let limited = stack.ifs.iter().map(|n| n.link.icmp_limited()).sum();
            drops.push((String::from("IcmpRateLimited"), limited));
            drops.push((String::from("OutputFlowsForgotten"), sent));
            write_router_counters(out, &links, &drops)?;
            let (queued, most, now, pushed) = gw.backlog();
            writeln!(
                out,
                "  backlog: {queued} frames waited for TX room (at most {most} at once, {now} now; \
                 {pushed} pushed out for another flow's)"
            )?;
        }
    }
    r.map_err(CmdError::failed)
}

/// `ethtool -S IFACE`: the driver counters of an interface (a vif: its netfront's)
/// or of a bridge's port (a client's vif: its netback's).
pub(super) fn ethtool(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let name = ethtool_stats_iface(args)?;
    let stack = crate::dev::network::NET.lock();
    let stats = stack
        .ifs
        .iter()
        .find(|n| n.name == name)
        .map(|n| n.link.driver_stats())
        .or_else(|| {
            stack.ifs.iter().find_map(|n| {
                let b = n.link.bridge_view()?;
                b.ports
                    .into_iter()
                    .find(|p| p.name == name)
                    .map(|p| p.driver_stats)
            })
        });
    drop(stack);
    let stats = stats.ok_or_else(|| no_such_device(name))?;
    write_ethtool_stats(out, name, &stats)
}

pub(super) fn ifconfig(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let mut text = String::new();
    let r = xenlet_net::ip::ifconfig(&mut crate::dev::network::NET.lock(), args, &mut text);
    out.write_str(&text)?;
    r.map_err(CmdError::failed)
}

pub(super) fn reflect(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let mut text = String::new();
    let r = xenlet_net::reflect::command(&mut crate::dev::network::NET.lock(), args, &mut text);
    out.write_str(&text)?;
    r.map_err(CmdError::failed)
}

pub(super) fn brctl(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let mut text = String::new();
    let r = xenlet_net::ip::brctl(&crate::dev::network::NET.lock(), args, &mut text);
    out.write_str(&text)?;
    r.map_err(CmdError::failed)
}

/// Polls the network, with Ctrl-C, until `done` says so or `timeout_ms` passes;
/// whether `done` said so (false on timeout or Ctrl-C).
fn net_wait(
    out: &mut dyn Write,
    timeout_ms: i64,
    mut done: impl FnMut(&mut xenlet_net::NetStack<crate::dev::network::Link>) -> bool,
) -> Result<bool, CmdError> {
    use crate::dev::network::{now_ms, NET};
    let start = now_ms();
    let mut wait = crate::xen::idle::Wait::in_command();
    loop {
        let next = {
            let mut st = NET.lock();
            crate::dev::network::poll_stack(&mut st, now_ms());
            if done(&mut st) {
                return Ok(true);
            }
            st.poll_at(now_ms())
        };
        if now_ms() - start > timeout_ms {
            return Ok(false);
        }
        if console::take_interrupt() {
            writeln!(out, "^C")?;
            return Ok(false);
        }
        let deadline = next.unwrap_or(i64::MAX).min(start + timeout_ms).max(0) as u64;
        crate::dev::network::wait_until_us(&mut wait, deadline.saturating_mul(1000));
    }
}

fn start_service(
    out: &mut dyn Write,
    what: &str,
    port: u16,
    start: impl Fn(&mut xenlet_net::iface::NetIf<crate::dev::network::Link>, u16) -> bool,
) -> CmdResult {
    let mut st = crate::dev::network::NET.lock();
    if st.ifs.is_empty() {
        return Err(CmdError::failed("no network interface"));
    }
    for n in st.ifs.iter_mut() {
        if start(n, port) {
            writeln!(out, "{what}: listening on {} port {port}", n.name)?;
        } else {
            writeln!(out, "{what}: already running on {}", n.name)?;
        }
    }
    Ok(())
}

pub(super) fn iperf3(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let port = iperf3_port(args, xenlet_net::iperf3::DEFAULT_PORT)?;
    // A server runs on each interface; each sizes its data buffers from what the
    // heap can grow to (its regions and the frames it can still take: at boot the
    // heap is a fraction of that), for about a quarter of it at most (1 MiB a stream
    // in a 64 MiB guest, 512 KiB in 32). They are allocated fallibly and none while
    // memory is low, so two servers at full use at once are refused cleanly. (Sized from the heap's first region alone, and
    // split between the interfaces, a 32 MiB guest got 64 KiB buffers, not 256:
    // TCP's window, and `bench net` fell from 726 / 583 to 534 / 402 Mbit/s.)
    let (_, _, spare) = crate::mm::heap::pressure_stats();
    let heap = crate::mm::heap::heap_stats().size.saturating_add(spare);
    let mem = xenlet_net::iperf3::Iperf3Memory::for_heap(heap, crate::mm::heap::memory_low);
    start_service(out, "iperf3", port, |n, p| n.start_iperf3(p, mem))?;
    writeln!(
        out,
        "iperf3: data buffers of {} KiB a stream",
        mem.data_buffer / 1024
    )?;
    Ok(())
}

pub(super) fn echod(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let port = port_arg(args, xenlet_net::echo::DEFAULT_PORT)?;
    start_service(out, "echod", port, |n, p| n.start_echo(p))
}

pub(super) fn udhcpc(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use crate::dev::network::NET;
    let dev = udhcpc_iface(args)?;
    {
        let mut st = NET.lock();
        let n = st.by_name(dev).ok_or_else(|| {
            CmdError::failed(alloc::format!("SIOCGIFINDEX: No such device ({dev})"))
        })?;
        n.start_dhcp();
    }
    writeln!(out, "udhcpc: started on {dev}")?;
    let got = net_wait(out, 30_000, |st| {
        st.by_name(dev).is_some_and(|n| n.dhcp_address().is_some())
    })?;
    let mut st = NET.lock();
    let n = st
        .by_name(dev)
        .ok_or_else(|| CmdError::failed("interface gone"))?;
    match (got, n.dhcp_address()) {
        (true, Some(a)) => {
            let via = n
                .routes()
                .iter()
                .find(|r| r.dhcp)
                .and_then(|r| r.via)
                .map(|v| alloc::format!(", router {v}"))
                .unwrap_or_default();
            writeln!(out, "udhcpc: lease of {a} obtained{via}")?;
            Ok(())
        }
        _ => Err(CmdError::failed("no lease, failing")),
    }
}

pub(super) fn ping(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    use crate::dev::network::{now_ms, now_us, NET};
    use xenlet_net::ping::{parse_args, Ping};
    let (opts, target) = parse_args(args).map_err(CmdError::failed)?;
    // From the router's own range, which masquerade never hands to a LAN flow.
    let span = u64::from(
        *xenlet_router::nat::ROUTER_PORTS.end() - *xenlet_router::nat::ROUTER_PORTS.start(),
    ) + 1;
    let ident =
        *xenlet_router::nat::ROUTER_PORTS.start() + (crate::sys::random::u64() % span) as u16;
    let (idx, mut p) = {
        let mut st = NET.lock();
        let idx = st.route(target).ok_or_else(|| {
            CmdError::failed(alloc::format!("connect: Network is unreachable ({target})"))
        })?;
        let p = Ping::start(&mut st.ifs[idx], target, opts, ident, now_us())
            .map_err(CmdError::failed)?;
        (idx, p)
    };
    writeln!(out, "{}", p.header())?;
    let mut interrupted = false;
    let mut wait = crate::xen::idle::Wait::in_command();
    loop {
        let next = {
            let mut st = NET.lock();
            crate::dev::network::poll_stack(&mut st, now_ms());
            let Some(n) = st.ifs.get_mut(idx) else {
                return Err(CmdError::failed("interface gone"));
            };
            for line in p.poll(n, now_us()) {
                writeln!(out, "{line}")?;
            }
            n.poll(now_ms());
            st.poll_at(now_ms())
        };
        if p.done() {
            break;
        }
        interrupted = console::take_interrupt();
        if interrupted {
            writeln!(out, "^C")?;
            break;
        }
        let deadline_us = next
            .map(|ms| (ms.max(0) as u64) * 1000)
            .unwrap_or(u64::MAX)
            .min(p.next_deadline_us());
        crate::dev::network::wait_until_us(&mut wait, deadline_us);
    }
    let (_, received) = p.counts();
    let summary = {
        let mut st = NET.lock();
        match st.ifs.get_mut(idx) {
            Some(n) => p.finish(n, now_us()),
            None => alloc::vec::Vec::new(),
        }
    };
    writeln!(out)?;
    for line in summary {
        writeln!(out, "{line}")?;
    }
    if received == 0 && !interrupted {
        return Err(CmdError::failed("no reply"));
    }
    Ok(())
}
