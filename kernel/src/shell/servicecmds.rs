//! The LAN services' commands: `leases` (the DHCP servers' bound leases, v4 then
//! v6), `dnsmasq` (the DHCP servers', router advertisements' and DNS forwarder's
//! state and counters, named after the daemon that does most of it on OpenWrt), and
//! `ifstatus wan6` (the WAN's IPv6: odhcp6c's address, delegated prefix, lifetimes,
//! router and DNS servers).

use crate::dev::network::{now_ms, NET, SERVICES};
use crate::shell::host::Host;
use core::fmt::Write;
use xenlet_shell::{CmdError, CmdResult};

const NOT_RUNNING: &str = "not running (the router runs them with two vifs and /etc/config/dhcp)";

/// `leases`: interface, address, MAC, time left, host name; DHCPv4 leases then
/// DHCPv6 ones (the MAC their DUID carries, else the DUID).
pub fn leases(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    if !args.is_empty() {
        return Err(CmdError::usage("leases"));
    }
    let _stack = NET.lock(); // the lock order: NET, GATEWAY, SERVICES
    let sv = SERVICES.lock();
    let Some(sv) = sv.as_ref() else {
        return Err(CmdError::failed(NOT_RUNNING));
    };
    let w = sv.lease_iface_width();
    writeln!(
        out,
        "{:<w$} {:<15} {:<17} {:<9} HOSTNAME",
        "IFACE", "ADDRESS", "MAC", "EXPIRES"
    )?;
    // Each lease is printed as it is read: the table is not copied.
    let shown = sv.write_leases(out, now_ms())?;
    writeln!(out, "{shown} leases")?;
    Ok(())
}

/// `ifstatus NAME`: for `wan6` the DHCPv6 client's state, address and delegated
/// prefix with their lifetimes left, the LAN's /64s of it, the default router, the
/// DNS servers and the counters; for an IPv4 interface (`wan`, `lan`) up or down,
/// its protocol, addresses, gateway and DNS servers (netifd's `ifstatus` says it
/// in JSON; a line or a few here).
pub fn ifstatus(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    let [name] = args else {
        return Err(CmdError::usage("ifstatus"));
    };
    let mut stack = NET.lock();
    let sv = SERVICES.lock();
    let lines = sv.as_ref().and_then(|sv| sv.wan6_lines(now_ms()));
    match lines {
        Some(lines)
            if lines
                .first()
                .is_some_and(|l| l.starts_with(&alloc::format!("{name}: "))) =>
        {
            for l in lines {
                writeln!(out, "{l}")?;
            }
            Ok(())
        }
        _ => {
            drop(sv);
            match crate::dev::network::ipv4_status(name, &mut stack) {
                Some(l) => {
                    writeln!(out, "{l}")?;
                    Ok(())
                }
                None => Err(CmdError::failed(alloc::format!(
                    "{name}: no such interface (not in /etc/config/network on a vif of this domain)"
                ))),
            }
        }
    }
}

/// `dnsmasq`: what runs, the upstream servers, and the counters.
pub fn dnsmasq(_: &mut Host, args: &[&str], out: &mut dyn Write) -> CmdResult {
    if !args.is_empty() {
        return Err(CmdError::usage("dnsmasq"));
    }
    let _stack = NET.lock();
    let sv = SERVICES.lock();
    let Some(sv) = sv.as_ref() else {
        return Err(CmdError::failed(NOT_RUNNING));
    };
    writeln!(out, "{}", sv.summary())?;
    for (vif, c) in sv.dhcp_counters() {
        writeln!(
            out,
            "dhcpd {vif}: discover {} request {} decline {} release {} inform {} | \
             offer {} ack {} nak {} | dropped malformed {} relayed {} wrong-type {} \
             invalid {} | ignored {} pool-exhausted {}",
            c.discover,
            c.request,
            c.decline,
            c.release,
            c.inform,
            c.offer,
            c.ack,
            c.nak,
            c.dropped_malformed,
            c.dropped_relayed,
            c.dropped_wrong_type,
            c.dropped_invalid,
            c.ignored,
            c.pool_exhausted
        )?;
    }
    for (vif, c, send_failed) in sv.dhcp6_counters() {
        writeln!(
            out,
            "dhcpv6 {vif}: solicit {} request {} renew {} rebind {} release {} decline {} \
             confirm {} information-request {} | advertise {} reply {} bound {} | dropped \
             malformed {} wrong-type {} invalid {} other-server {} | no-addrs {} no-binding {} \
             not-on-link {} use-multicast {} | send-failed {send_failed}",
            c.solicit,
            c.request,
            c.renew,
            c.rebind,
            c.release,
            c.decline,
            c.confirm,
            c.information_request,
            c.advertise,
            c.reply,
            c.bound,
            c.dropped_malformed,
            c.dropped_wrong_type,
            c.dropped_invalid,
            c.other_server,
            c.no_addrs,
            c.no_binding,
            c.not_on_link,
            c.use_multicast
        )?;
    }
    for (vif, c, send_failed) in sv.ra_counters() {
        writeln!(
            out,
            "ra {vif}: sent unsolicited {} solicited {} | solicitations {} coalesced {} | \
             dropped bad {} (checksum {} hop-limit {}) | send-failed {send_failed}",
            c.unsolicited,
            c.solicited,
            c.solicitations,
            c.coalesced,
            c.bad_solicitations,
            c.bad_checksum,
            c.bad_hop_limit
        )?;
    }
    if let Some(d) = sv.dns_counters() {
        let ups: alloc::vec::Vec<alloc::string::String> = sv
            .upstreams()
            .iter()
            .map(|u| alloc::format!("{u}"))
            .collect();
        writeln!(out, "dns upstreams: {}", ups.join(" "))?;
        writeln!(
            out,
            "dns: queries {} forwarded {} merged {} cache-hits {} local {} replies {} timeouts {} | \
             dropped malformed {} malformed-upstream {} rebind {} no-match {} pending-full {} \
             no-port {} | uncached-large {}",
            d.queries,
            d.forwarded,
            d.merged,
            d.cache_hits,
            d.local_answers,
            d.replies,
            d.timeouts,
            d.dropped_malformed,
            d.dropped_malformed_upstream,
            d.dropped_rebind,
            d.dropped_no_pending_match,
            d.dropped_pending_full,
            d.dropped_no_port,
            d.uncached_large
        )?;
    }
    let g = sv.counters();
    let r = sv.load_report();
    writeln!(
        out,
        "glue: not-local {} ipv6-queries {} send-failed {} unroutable {} bind-failed {} \
         upstream-changes {} lost-interface {} | leases loaded {} expired {} unreadable {}, \
         saved {} save-errors {} too-big {}",
        g.dns_not_local,
        g.dns_ipv6_queries,
        g.send_failed,
        g.upstream_unroutable,
        g.upstream_bind_failed,
        g.upstream_changes,
        g.lost_interface,
        r.loaded,
        r.expired,
        r.corrupt,
        g.lease_saves,
        g.lease_save_errors,
        g.lease_file_refused
    )?;
    Ok(())
}
