//! The router's commands: `conntrack` (as conntrack-tools prints it) and `uci`
//! (OpenWrt's configuration tool over `/etc/config`).

use crate::dev::network::{now_ms, GATEWAY, NET};
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
            "conntrack: not routing (one vif, or xenlet.router=0, or no /etc/config/network)",
        ));
    };
    match args {
        [] | ["-L"] | ["-L", "conntrack"] => {
            let lines = gw.conntrack_lines(now_ms());
            for l in &lines {
                writeln!(out, "{l}")?;
            }
            writeln!(
                out,
                "conntrack v1.4.7 (conntrack-tools): {} flow entries have been shown.",
                lines.len()
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
        ["-S"] => writeln!(out, "{:?}", gw.netfilter.stats())?,
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
        let mut e = String::from(o.stderr.trim_end());
        if e.is_empty() {
            e = alloc::format!("uci: exit status {}", o.code);
        }
        Err(CmdError::failed(e))
    }
}
