//! The router's commands: `conntrack` (as conntrack-tools prints it) and `uci`
//! (OpenWrt's configuration tool over `/etc/config`).

use crate::dev::network::{now_ms, GATEWAY, NET, SERVICES};
use crate::shell::host::Host;
use alloc::string::String;
use core::fmt::Write;
use spin::Mutex;
use xenlet_shell::{CmdError, CmdResult};
use xenlet_uci::cli::Uci;

/// `conntrack -L | -C | -F | -S`.
pub fn conntrack(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let _stack = NET.lock(); // the lock order: NET, then GATEWAY
    let mut gw = GATEWAY.lock();
    let Some(gw) = gw.as_mut() else {
        return Err(CmdError::failed(
            "not routing (one vif, or xenlet.router=0, or no /etc/config/network)",
        ));
    };
    match args {
        [] | ["-L"] | ["-L", "conntrack"] => {
            // Each flow is printed as it is read: the table is not copied.
            let shown = gw.write_conntrack(out, now_ms())?;
            writeln!(
                out,
                "conntrack v1.4.7 (conntrack-tools): {shown} flow entries have been shown."
            )?;
        }
        ["-C"] => writeln!(out, "{}", gw.netfilter.count())?,
        ["-F"] => {
            let n = gw.netfilter.count();
            gw.netfilter.flush();
            writeln!(
                out,
                "conntrack v1.4.7 (conntrack-tools): connection tracking table has been emptied ({n} entries)."
            )?;
        }
        ["-S"] => {
            let s = gw.netfilter.stats();
            let live = gw.netfilter.count() as u64;
            writeln!(
                out,
                "cpu=0 found={} invalid={} insert={} insert_failed={} drop={} early_drop={} error={} clash={}",
                s.found,
                s.invalid,
                s.new.saturating_sub(s.dropped_full),
                s.dropped_full,
                s.dropped_full,
                s.evicted,
                s.malformed,
                s.clash
            )?;
            // every new flow is accounted for: still in the table, evicted, refused,
            // expired, flushed or ended by a SYN that reopened its tuple
            let accounted = live + s.evicted + s.dropped_full + s.expired + s.flushed + s.reopened;
            writeln!(
                out,
                "flows: new {} = live {live} + evicted {} + refused {} + expired {} + flushed {} + reopened {} ({}); nat exhausted {}, icmp related {}, icmp misdirected {}, icmp bad checksum {}, icmp redirects dropped {}, leaks blocked {}, tcp out of window {}",
                s.new,
                s.evicted,
                s.dropped_full,
                s.expired,
                s.flushed,
                s.reopened,
                if accounted == s.new { "balanced" } else { "UNBALANCED" },
                s.nat_exhausted,
                s.icmp_related,
                s.icmp_misdirected,
                s.icmp_bad_checksum,
                s.icmp_redirect_dropped,
                s.leak_blocked,
                s.out_of_window
            )?;
            // reassembly before conntrack (Linux's Reasm* counters)
            let d = gw.router.defrag_stats();
            writeln!(
                out,
                "reassembly: fragments {} reassembled {} timeouts {} overlaps {} duplicates {} refused {} malformed {}",
                d.fragments, d.reassembled, d.timeouts, d.overlaps, d.duplicates, d.refused, d.malformed
            )?;
            // IPv6: its conntrack table and the forwarding path's own drops
            let s6 = gw.netfilter.stats6();
            let r = gw.router.stats();
            let nd = gw.router.ndp_stats();
            writeln!(
                out,
                "ipv6: live {} found {} new {} invalid {} refused {} evicted {} expired {} malformed {}, icmp related {}, icmp misdirected {}, icmp bad checksum {}, tcp out of window {}; forwarded {} bad extension headers {} icmpv6 errors {}; nd solicits {} limited {} learnt {} invalid {}",
                gw.netfilter.count6(),
                s6.found,
                s6.new,
                s6.invalid,
                s6.dropped_full,
                s6.evicted,
                s6.expired,
                s6.malformed,
                s6.icmp_related,
                s6.icmp_misdirected,
                s6.icmp_bad_checksum,
                s6.out_of_window,
                r.ipv6_forwarded,
                r.ipv6_bad_exthdr,
                r.icmp6_errors,
                nd.solicits,
                nd.limited,
                nd.learnt,
                nd.invalid
            )?;
            // IPv6 later fragments that came before their first
            let f6 = gw.router.frag_hold6_stats();
            writeln!(
                out,
                "ipv6 fragments held for their first: {} released {} timeouts {} refused {}",
                f6.held, f6.released, f6.timeouts, f6.refused
            )?;
        }
        _ => return Err(CmdError::usage("conntrack [-L | -C | -F | -S]")),
    }
    Ok(())
}

/// Staged `uci set`/`add`/... changes until `commit` (OpenWrt keeps them in
/// /tmp/.uci; here they live in memory).
static UCI: Mutex<Option<Uci>> = Mutex::new(None);

/// `uci [show|get|set|add|add_list|del_list|delete|rename|changes|commit|revert|export] ...`.
pub fn uci(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let mut u = UCI.lock();
    let u = u.get_or_insert_with(Uci::new);
    let o = u.run(&mut crate::router::VfsStore, args);
    out.write_str(&o.stdout)?;
    if o.code == 0 {
        out.write_str(&o.stderr)?;
        Ok(())
    } else {
        // uci's own message says `uci: ...`; the shell puts the command's name first
        let e = o.stderr.trim_end();
        let e = e.strip_prefix("uci: ").unwrap_or(e);
        Err(CmdError::failed(if e.is_empty() {
            alloc::format!("exit status {}", o.code)
        } else {
            String::from(e)
        }))
    }
}

/// `fw` (like `nft list ruleset`): the firewall's zones, rules and redirects with
/// their packet and byte counters.
pub fn fw(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    xenlet_shell::no_args(args)?;
    let _stack = NET.lock();
    let gw = GATEWAY.lock();
    let listing = gw
        .as_ref()
        .and_then(|g| g.firewall_listing())
        .ok_or_else(|| CmdError::failed("no firewall (not routing, or no /etc/config/firewall)"))?;
    out.write_str(&listing)?;
    Ok(())
}

/// The stack's interface names (the lock taken only to copy them).
fn if_names() -> alloc::vec::Vec<String> {
    NET.lock().ifs.iter().map(|n| n.name.clone()).collect()
}

/// `reload`: reads `/etc/config/network` and `/etc/config/firewall` again and swaps
/// the new ruleset in atomically (established flows stay); a bad file changes nothing.
/// The interfaces' static IPv4 addresses, gateways and `proto` follow the files
/// ([`crate::dev::network::reload_ipv4`]); `/etc/config/system`'s time zone is read
/// again too (for time matches), and
/// `/etc/config/dhcp`'s services (DHCPv4 pools, DNS, router advertisements, DHCPv6)
/// with the files' IPv6 addresses and `wan6`'s options
/// ([`xenlet_net::lanservices::LanServices::reload`]).
pub fn reload(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    xenlet_shell::no_args(args)?;
    // The files are read before any lock is taken: the data plane serves on while
    // the disk is read (it only tries the stack's lock).
    let names = if_names();
    let names: alloc::vec::Vec<&str> = names.iter().map(String::as_str).collect();
    let mut plan = crate::router::replan(&names).map_err(CmdError::failed)?;
    let services = crate::router::services_for_reload(&plan);
    let tz = crate::router::time_zone();
    let mut stack = NET.lock(); // the lock order: NET, GATEWAY, SERVICES
    let mut gw = GATEWAY.lock();
    let Some(g) = gw.as_mut() else {
        return Err(CmdError::failed("not routing"));
    };
    let spec = plan
        .gateway
        .as_mut()
        .ok_or_else(|| CmdError::failed("the files no longer route two vifs; reboot to apply"))?;
    let rules = spec
        .firewall
        .take()
        .ok_or_else(|| CmdError::failed("no /etc/config/firewall"))?;
    g.reload_firewall(rules).map_err(CmdError::failed)?;
    for line in g.set_mtus(spec, &stack.ifs) {
        writeln!(out, "reload: {line}")?;
    }
    // the interfaces' static IPv4 settings; the router takes them at its next poll,
    // the LAN services below
    for line in crate::dev::network::reload_ipv4(&plan, &mut stack) {
        writeln!(out, "reload: {line}")?;
    }
    g.set_wall_clock(crate::dev::network::wall_clock(tz.utc_offset_secs));
    for w in plan.warnings.iter().chain(tz.note.iter()) {
        writeln!(out, "reload: {w}")?;
    }
    writeln!(
        out,
        "reload: firewall rules replaced (established flows kept)"
    )?;
    // /etc/config/dhcp's services (DHCPv4, DNS, router advertisements, DHCPv6) and
    // the files' IPv6 addresses (ip6assign); a bad file leaves them as they run
    let mut sv = SERVICES.lock();
    if let Some(sv) = sv.as_mut() {
        match services {
            Ok(spec) => {
                for w in &spec.warnings {
                    writeln!(out, "reload: dhcp: {w}")?;
                }
                for line in sv.reload(&spec, &mut stack, now_ms()) {
                    writeln!(out, "reload: {line}")?;
                }
            }
            Err(e) => writeln!(
                out,
                "reload: {e}; router advertisements and DHCPv6 unchanged"
            )?,
        }
    }
    Ok(())
}

/// The router's services as OpenWrt's init scripts name them.
const INIT_SCRIPTS: &[&str] = &["network", "firewall", "dnsmasq", "odhcpd"];

/// `service NAME ACTION`, also typed as `/etc/init.d/NAME ACTION` (the shell maps
/// it), and `service` alone to list them: OpenWrt's init scripts of the router's
/// services. `reload`, `restart` and `start` of any of them apply `/etc/config` again
/// as [`reload`] does, all of it: Xenlet has one reload for its services, which
/// keeps what did not change running (a `restart` does not bounce the interfaces,
/// and says so).
pub fn service(h: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    match args {
        [] => {
            for s in INIT_SCRIPTS {
                writeln!(out, "{s}")?;
            }
            Ok(())
        }
        [name, action] if INIT_SCRIPTS.contains(name) => match *action {
            "reload" | "start" => reload(h, &[], out),
            "restart" => {
                writeln!(
                    out,
                    "{name}: restart applied as reload: what changed in /etc/config (interfaces are not bounced)"
                )?;
                reload(h, &[], out)
            }
            "stop" | "enable" | "disable" => Err(CmdError::failed(alloc::format!(
                "{name}: {action}: not supported (the router's services run while it routes; reload applies /etc/config)"
            ))),
            _ => Err(CmdError::usage(alloc::format!("{name}: unknown action '{action}'"))),
        },
        [name, ..] if !INIT_SCRIPTS.contains(name) => {
            Err(CmdError::failed(alloc::format!("{name}: no such service")))
        }
        _ => Err(CmdError::usage("service")),
    }
}

/// `reload_config`: OpenWrt's, what `reload` does.
pub fn reload_config(h: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    reload(h, args, out)
}

/// `ifup NAME` / `ifdown NAME`: OpenWrt's, for an interface of `/etc/config/network`
/// (`wan`, `lan`): its IPv4 taken down, and for `ifup` brought up again from the
/// files as they are now (a DHCP one asks for a new lease: `ifup wan` renews it).
/// A line for each change ([`crate::dev::network::ifupdown`]).
fn ifupdown(cmd: &str, up: bool, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let [network] = args else {
        return Err(CmdError::usage(cmd));
    };
    // the files read with no lock held, as `reload` reads them
    let names = if_names();
    let names: alloc::vec::Vec<&str> = names.iter().map(String::as_str).collect();
    let plan = crate::router::replan(&names).map_err(CmdError::failed)?;
    let mut stack = NET.lock();
    let said =
        crate::dev::network::ifupdown(&plan, network, up, &mut stack).map_err(CmdError::failed)?;
    for line in said {
        writeln!(out, "{cmd}: {line}")?;
    }
    Ok(())
}

/// `ifup NAME`.
pub fn ifup(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    ifupdown("ifup", true, args, out)
}

/// `ifdown NAME`.
pub fn ifdown(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    ifupdown("ifdown", false, args, out)
}

/// `logread`: the firewall's log of rejected and dropped packets (rate limited).
pub fn logread(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    xenlet_shell::no_args(args)?;
    let _stack = NET.lock();
    let mut gw = GATEWAY.lock();
    let mut log = LOG.lock();
    if let Some(g) = gw.as_mut() {
        for l in g.take_firewall_log() {
            if log.len() >= LOG_LINES {
                log.remove(0);
            }
            log.push(l);
        }
    }
    for l in log.iter() {
        writeln!(out, "{l}")?;
    }
    Ok(())
}

/// The firewall log lines `logread` has collected (the last [`LOG_LINES`]).
static LOG: Mutex<alloc::vec::Vec<String>> = Mutex::new(alloc::vec::Vec::new());
const LOG_LINES: usize = 200;
