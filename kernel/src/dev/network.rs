//! The network stack as the kernel runs it: every connected vif becomes an
//! interface of one [`NetStack`], configured from the kernel command line
//! (`xenlet.eth0=...`), else from XenStore (`data/xenlet/net/eth0`), else from
//! OpenWrt's `/etc/config/network` (the plan kmain passes in), else DHCPv4 (see
//! `xenlet_net::config`). When the plan routes (two or more configured vifs), the
//! [`GATEWAY`] takes every frame first and forwards what is not for the stack, and
//! the LAN services ([`SERVICES`]: DHCP server, DNS forwarder) answer on the LAN.
//! The idle loop and the network commands poll it.

use crate::dev::backends;
use crate::dev::frontends::{KernelXen, Vif, NET_EVENTS};
use crate::dev::netcost::{self, Part};
use crate::dev::port::Port;
use crate::sync::eventcount::SharedSeen;
use crate::{time::clock, xen::xenbus, xen::xenstore};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use spin::{Mutex, Once};
use xenlet_drivers::netback::BackState;
use xenlet_net::bridge::Bridge;
use xenlet_net::gateway::{Gateway, Routed};
use xenlet_net::iface::NetIf;
use xenlet_net::ifreload::{self, Ipv4Files};
use xenlet_net::lanconfig::ServicesSpec;
use xenlet_net::lanservices::{LanServices, LeaseStore};
use xenlet_net::netplan::Plan;
use xenlet_net::{config, NetStack};
use xenlet_xen::xenbus::XenbusState;
use xenlet_xen::xenstore::WatchEvent;

/// An interface's link as the stack sees it: its vif, or the bridge (`br-lan`) of
/// its vif and the client vifs this domain serves; frames pass the router first
/// when it routes.
pub type Link = Routed<Bridge<Port>>;

/// The vif (netfront) carrying interface `n`: its link's first port.
fn uplink(n: &mut NetIf<Link>) -> Option<&mut Vif> {
    n.link.inner.ports_mut().first_mut()?.link_mut().front_mut()
}

/// The same, to read.
fn uplink_ref(n: &NetIf<Link>) -> Option<&Vif> {
    n.link.inner.ports().first()?.link().front()
}

/// The stack.
pub static NET: Mutex<NetStack<Link>> = Mutex::new(NetStack::new());

/// The router over the stack's vifs, when the configuration routes. Locked after
/// [`NET`], never before it.
pub static GATEWAY: Mutex<Option<Gateway>> = Mutex::new(None);

/// The router's LAN services (DHCP server, DNS forwarder), when it routes. Locked
/// after [`GATEWAY`] (and [`NET`]), never before.
pub static SERVICES: Mutex<Option<LanServices>> = Mutex::new(None);

/// The configuration files' plan (per-vif addressing), for vifs attached later too.
static PLAN: Once<Option<Plan>> = Once::new();

/// The IPv4 settings each interface runs with and where they came from (the files,
/// the command line, XenStore, the default), for `reload` ([`reload_ipv4`]), which
/// changes only those from the files. Locked after [`NET`].
static IPV4_IN_FORCE: Mutex<Vec<InForce>> = Mutex::new(Vec::new());

/// An interface's IPv4 settings in force.
struct InForce {
    name: String,
    /// Where they came from ([`config_for`]'s source).
    source: &'static str,
    /// The settings (what the files or the source gave, less what could not be put
    /// on); while down, those it had.
    ipv4: Ipv4Files,
    /// Not taken down by `ifdown`.
    up: bool,
    /// The interface of `/etc/config/network` it carries (`wan`), if the files name one.
    network: Option<String>,
}

/// Milliseconds since boot (smoltcp's clock).
pub fn now_ms() -> i64 {
    (clock::now().as_micros() / 1000) as i64
}

/// Microseconds since boot.
pub fn now_us() -> u64 {
    clock::now().as_micros()
}

/// Where [`config_for`] found a configuration in the files.
const FILES: &str = "/etc/config/network";

fn config_for(name: &str, cmdline: &str) -> Result<(config::IfConfig, &'static str), String> {
    let (text, source) = if let Some(c) = config::from_cmdline(cmdline, name) {
        (String::from(c), "command line")
    } else if let Ok(c) = xenstore::read(&format!("data/xenlet/net/{name}")) {
        (c, "xenstore")
    } else if let Some(c) = PLAN
        .get()
        .and_then(Option::as_ref)
        .and_then(|p| p.config_of(name))
    {
        return Ok((c.clone(), FILES));
    } else {
        (String::from("dhcp"), "default")
    };
    config::parse(&text)
        .map(|c| (c, source))
        .map_err(|e| format!(" (bad configuration \"{text}\" from the {source}: {e}; using DHCP)"))
}

/// The kernel command line (per-interface configuration for vifs attached later).
static CMDLINE: Once<String> = Once::new();
/// Set by the XenStore watches on `device/vif` and on each vif's backend state.
static RESCAN: AtomicBool = AtomicBool::new(false);

fn on_vif_event(_: &WatchEvent) {
    RESCAN.store(true, Ordering::SeqCst);
}

fn backend_token(name: &str) -> String {
    format!("xenlet-vif-backend-{name}")
}

/// Watches `<backend>/state` of vif `name` (device `id`): `xl network-detach` closes
/// the backend.
fn watch_backend(name: &str, id: u32) {
    if let Ok(be) = xenstore::read(&format!("device/vif/{id}/backend")) {
        let _ = xenstore::watch(&format!("{be}/state"), &backend_token(name), on_vif_event);
    }
}

/// Makes an interface of `vif` called `name`, configured from the command line,
/// XenStore or DHCP; returns its report line.
fn add_interface(stack: &mut NetStack<Link>, name: &str, vif: Vif) -> String {
    let id = vif.id();
    let mut bridge = Bridge::plain(name, Port::Front(vif));
    // an OpenWrt bridge (`br-lan`) this vif carries: client vifs may join it
    if let Some((b, _)) = PLAN
        .get()
        .and_then(Option::as_ref)
        .and_then(|p| p.bridges.iter().find(|(_, v)| v == name))
    {
        bridge.set_name(b);
    }
    let by_default = config::IfConfig {
        dhcp: true,
        ..config::IfConfig::default()
    };
    let line = push_interface(stack, name, bridge, by_default);
    watch_backend(name, id);
    line
}

/// Makes the interface of port-less bridge `name` (`br-guest`: OpenWrt's
/// `bridge_empty`, no vif of this domain among its ports) with MAC `mac`, configured
/// as a vif's (no address by default); client vifs naming it join it later. Returns
/// its report line.
fn add_portless(stack: &mut NetStack<Link>, name: &str, mac: [u8; 6]) -> String {
    let line = push_interface(
        stack,
        name,
        Bridge::portless(name, mac),
        config::IfConfig::default(),
    );
    format!(
        "{line}; a bridge of client vifs only (bridge_empty), MAC {}",
        crate::dev::Mac(mac)
    )
}

/// Adds the stack's interface `name` over `bridge`, configured from the command line
/// or the files (`by_default` when neither says); returns its report line.
fn push_interface(
    stack: &mut NetStack<Link>,
    name: &str,
    bridge: Bridge<Port>,
    by_default: config::IfConfig,
) -> String {
    let cmdline = CMDLINE.get().map(String::as_str).unwrap_or("");
    let (cfg, source, note) = match config_for(name, cmdline) {
        Ok((c, source)) => (c, source, String::new()),
        Err(note) => (by_default, "default", note),
    };
    let mut in_force = IPV4_IN_FORCE.lock();
    in_force.retain(|f| f.name != name);
    let network = PLAN
        .get()
        .and_then(Option::as_ref)
        .and_then(|p| p.ifaces.iter().find(|(v, _, _)| v == name))
        .map(|(_, uci, _)| uci.clone());
    in_force.push(InForce {
        name: String::from(name),
        source,
        ipv4: Ipv4Files::of(&cfg),
        up: true,
        network,
    });
    drop(in_force);
    let n: NetIf<Link> = NetIf::new(
        name,
        Routed::new(bridge),
        &cfg,
        now_ms(),
        crate::sys::random::u64(),
    );
    let addrs: Vec<String> = n.addrs().iter().map(|(c, _)| format!("{c}")).collect();
    let line = format!(
        "{name}: {}{} ({source}){note}",
        addrs.join(" "),
        if n.dhcp_running() {
            ", DHCPv4 running"
        } else {
            ""
        }
    );
    stack.ifs.push(n);
    line
}

/// Releases a removed interface's ports: its vif after its backend closed (or keeping
/// pages and grants a backend that did not close may still use); -> (buffer pages,
/// ring pages) freed.
fn release_interface(n: NetIf<Link>, closed: bool) -> (usize, usize) {
    let mut freed = (0, 0);
    for (_, port) in n.link.inner.into_ports() {
        match port {
            Port::Front(v) => {
                let (b, r) = v.release_after(closed);
                freed = (freed.0 + b, freed.1 + r);
            }
            Port::Back(b) => backends::release(b),
        }
    }
    freed
}

/// Follows `xl network-attach` / `network-detach`: connects vifs that appeared,
/// closes and drops those whose backend is closing or gone (a router's interface is
/// kept, detached, and connected again when a vif with its MAC comes back).
fn rescan() {
    let Ok(devices) = xenbus::enumerate() else {
        return;
    };
    let vifs: Vec<&xenbus::Device> = devices.iter().filter(|d| d.kind == "vif").collect();
    let mut stack = NET.lock();
    // Detached: the backend closes (or the device went away).
    let mut i = 0;
    while i < stack.ifs.len() {
        let name = stack.ifs[i].name.clone();
        // by its device id: a router's vif taken back may be another device than its name says
        let Some(id) = uplink_ref(&stack.ifs[i]).map(|v| v.id()) else {
            i += 1;
            continue;
        };
        let dev = vifs.iter().find(|d| d.id.parse::<u32>().ok() == Some(id));
        let gone = dev.is_none_or(|d| d.backend_going());
        if !gone || uplink_ref(&stack.ifs[i]).is_some_and(|v| v.is_detached()) {
            i += 1;
            continue;
        }
        // gone from XenStore altogether: the toolstack removed a closed backend
        let mut closed = true;
        if let Some(d) = dev {
            closed = xenlet_drivers::platform::close_device(
                &KernelXen::NET,
                &d.path(),
                &format!("{}/state", d.backend),
                2_000_000_000,
            );
        }
        if let Ok(be) = xenstore::read(&format!("device/vif/{id}/backend")) {
            let _ = xenstore::unwatch(&format!("{be}/state"), &backend_token(&name));
        }
        // A router's interface stays: its addresses, routes and the flows through it
        // wait for the backend to come back (`xl network-attach` with the same MAC, a
        // driver domain restarted); meanwhile what is routed out of it is dropped.
        let routed = GATEWAY
            .lock()
            .as_ref()
            .is_some_and(|gw| gw.port_of(i).is_some());
        if routed {
            let (freed, rings) = uplink(&mut stack.ifs[i]).map_or((0, 0), |v| v.detach(closed));
            crate::println!(
                "netfront: {name} lost its backend ({freed} buffer pages, {rings} ring pages freed); the router keeps the interface until it comes back"
            );
            i += 1;
            continue;
        }
        if let Some(gw) = GATEWAY.lock().take() {
            gw.release(&mut stack.ifs);
            crate::println!("router: {name} detached; forwarding stopped");
        }
        if let Some(sv) = SERVICES.lock().take() {
            sv.shutdown(&mut *stack);
            crate::println!("dhcpd, dns, ra: {name} detached; stopped");
        }
        // a backend that did not close may still copy into (or out of) our pages
        let n = stack.ifs.remove(i);
        let (freed, rings) = release_interface(n, closed);
        if closed {
            crate::println!(
                "netfront: {name} detached ({freed} buffer pages freed, {rings} ring pages freed)"
            );
        } else {
            crate::println!(
                "netfront: {name} detached; its backend did not close: pages and grants kept"
            );
        }
    }
    // Attached: a new vif waiting for its frontend.
    for d in vifs {
        let name = d.name();
        if d.state != Some(XenbusState::Initialising) {
            continue;
        }
        let Ok(id) = d.id.parse::<u32>() else {
            continue;
        };
        // A router's interface whose backend went away, back with the same MAC
        // (possibly as another device id): connected again in place.
        let mac = xenstore::read(&format!("device/vif/{id}/mac"))
            .ok()
            .and_then(|m| xenlet_drivers::netfront::parse_mac(&m));
        if let Some(n) = stack
            .ifs
            .iter_mut()
            .find(|n| uplink_ref(n).is_some_and(|v| v.is_detached() && Some(v.mac()) == mac))
        {
            let own = n.name.clone();
            let r = uplink(n).map_or(Ok(()), |v| v.reattach(id));
            match r {
                Ok(()) => {
                    let (v4, v6) = n.announce(GATEWAY.lock().is_some());
                    watch_backend(&own, id);
                    crate::println!(
                        "netfront: {own} has its backend back (device {id}); {v4} IPv4 and {v6} IPv6 address(es) announced"
                    );
                }
                Err(e) => crate::println!("netfront: {own}: device {id} not taken back: {e}"),
            }
            NET_EVENTS.signal();
            continue;
        }
        if stack.ifs.iter().any(|n| n.name == name) {
            continue;
        }
        if let Some(why) = crate::dev::frontends::attach_refusal(stack.ifs.len(), MAX_VIFS) {
            crate::println!("netfront: {name} attach refused: {why}");
            continue;
        }
        let queues = queues(CMDLINE.get().map_or("", |c| c.as_str()));
        match xenlet_drivers::netfront::Netfront::connect_with(KernelXen::NET, id, queues) {
            Ok(vif) => {
                let line = add_interface(&mut stack, &name, vif);
                crate::println!("netfront: {name} attached; {line}");
            }
            Err(e) => crate::println!("netfront: {name} attach failed: {e}"),
        }
    }
}

/// Client vifs this domain serves (netback, as a driver domain): a new one joins the
/// bridge its backend's `bridge` key names (`br-lan`; the only bridge when the key
/// names none here, as libxl's default `xenbr0` does), locked to the client's MAC;
/// one whose client or toolstack closed it leaves its bridge and is released.
fn follow_clients(stack: &mut NetStack<Link>) {
    for nb in backends::take_new_netbacks() {
        let name = nb.name();
        let want = String::from(nb.bridge().unwrap_or(""));
        let named: Vec<usize> = (0..stack.ifs.len())
            .filter(|&i| stack.ifs[i].link.inner.name().is_some())
            .collect();
        let at = named
            .iter()
            .copied()
            .find(|&i| stack.ifs[i].link.inner.name() == Some(want.as_str()))
            .or_else(|| (named.len() == 1).then(|| named[0]));
        let Some(i) = at else {
            crate::println!(
                "netback: {name}: no bridge '{want}' here (/etc/config/network has {} bridge(s)); released",
                named.len()
            );
            backends::release(nb);
            continue;
        };
        let mac = nb.mac();
        let n = &mut stack.ifs[i];
        let bridge = String::from(n.link.inner.name().unwrap_or(""));
        match n.link.inner.add_port(&name, Port::Back(nb), Some(mac)) {
            Ok(_) => crate::println!(
                "netback: {name} joined {bridge} (with {}){}",
                n.name,
                if want == bridge {
                    String::new()
                } else {
                    format!("; its backend named bridge '{want}'")
                }
            ),
            Err(Port::Back(nb)) => {
                crate::println!("netback: {name}: its MAC is another port's on {bridge}; released");
                backends::release(nb);
            }
            Err(Port::Front(_)) => {}
        }
    }
    if !backends::xenbus_changed() {
        return;
    }
    for n in stack.ifs.iter_mut() {
        let mut leaving = Vec::new();
        for p in n.link.inner.ports_mut() {
            let id = p.id();
            if let Some(nb) = p.link_mut().back_mut() {
                match nb.poll_xenbus() {
                    Ok(BackState::Gone) => leaving.push(id),
                    Ok(BackState::Closed) if nb.removal_requested() => leaving.push(id),
                    Ok(_) => {}
                    Err(e) => crate::println!("netback: {}: {e}", nb.name()),
                }
            }
        }
        for id in leaving {
            if let Some(Port::Back(nb)) = n.link.inner.remove_port(id) {
                backends::release(nb);
            }
        }
    }
}

/// Services the client vifs' rings ([`Netback::service`]: bounded batches, again
/// while work is left, up to 5 polls): what clients sent comes in, what was sent to
/// them goes out. Whether a vif needs another turn at once (requests left in its
/// ring, frames taken and not yet received): no event comes for either. `quiet`
/// (the turn's first): the events the clients asked for are left owed
/// ([`Netback::service_quiet`]), for the turn's second to send with its own: one
/// event a turn to a client whose packets were answered in it, not two (on the
/// nested test bed each is a costly trap to Xen).
///
/// [`Netback::service`]: xenlet_drivers::netback::Netback::service
/// [`Netback::service_quiet`]: xenlet_drivers::netback::Netback::service_quiet
fn poll_clients(stack: &mut NetStack<Link>, quiet: bool) -> bool {
    let mut busy = false;
    let mut due: Option<u64> = None;
    for n in stack.ifs.iter_mut() {
        // only a named bridge has clients (a port-less one may have one, or none)
        if n.link.inner.name().is_none() {
            continue;
        }
        for p in n.link.inner.ports_mut() {
            if let Some(nb) = p.link_mut().back_mut() {
                busy |= if quiet {
                    nb.service_quiet()
                } else {
                    nb.service()
                };
                // a client packet waiting for its credit (the `rate` key): no event
                // comes when the credit does, the data plane's timer must
                if let Some(t) = nb.rate_wakeup_ns() {
                    due = Some(due.map_or(t, |d| d.min(t)));
                }
            }
        }
    }
    // rounded up to the millisecond: a turn before the credit comes finds it waiting
    let ms = due.map_or(i64::MAX, |ns| {
        i64::try_from(ns.div_ceil(1_000_000)).unwrap_or(i64::MAX)
    });
    CLIENTS_DUE_MS.store(ms, Ordering::SeqCst);
    busy
}

/// Who configured an interface in place of the files, if someone did: the kernel
/// command line and XenStore win over `/etc/config/network` ([`config_for`]); an
/// interface that took DHCP by default (the files did not name it at boot) takes the
/// files' settings.
fn overridden(source: &str) -> Option<&'static str> {
    match source {
        "command line" => Some("the kernel command line"),
        "xenstore" => Some("XenStore"),
        _ => None,
    }
}

/// `reload` of the interfaces' IPv4 settings from `plan` (the files read again):
/// each interface the files configured takes their new static addresses and gateway
/// ([`ifreload::reload_ipv4`]); the router and the LAN services follow. A line for
/// each change, and one for each interface whose settings in the files differ from
/// those it runs with from elsewhere (the command line, XenStore), which win.
pub fn reload_ipv4(plan: &Plan, stack: &mut NetStack<Link>) -> Vec<String> {
    let mut said = Vec::new();
    let mut in_force = IPV4_IN_FORCE.lock();
    for (name, _, cfg) in &plan.ifaces {
        let new = Ipv4Files::of(cfg);
        let (Some(n), Some(f)) = (
            stack.by_name(name),
            in_force.iter_mut().find(|f| f.name == *name),
        ) else {
            continue;
        };
        // one taken down stays down (netifd's reload leaves it): `ifup` reads the files
        if f.ipv4 == new || !f.up {
            continue;
        }
        if let Some(by) = overridden(f.source) {
            said.push(format!(
                "{name}: configured by {by}, which wins over the files; their IPv4 settings not applied"
            ));
            continue;
        }
        let (now, lines) = ifreload::reload_ipv4(n, &f.ipv4, &new);
        f.ipv4 = now;
        f.source = FILES;
        said.extend(lines);
    }
    said
}

/// `ifstatus NAME` of the interface of `/etc/config/network` called `network`
/// (`wan`, `lan`), for its IPv4 ([`ifreload::status`]); `None` if no interface
/// carries it.
pub fn ipv4_status(network: &str, stack: &mut NetStack<Link>) -> Option<String> {
    let in_force = IPV4_IN_FORCE.lock();
    let f = in_force
        .iter()
        .find(|f| f.network.as_deref() == Some(network))?;
    let n = stack.by_name(&f.name)?;
    Some(ifreload::status(network, n, &f.ipv4, f.up))
}

/// OpenWrt's `ifdown` (`up` false) and `ifup` of the interface the files call
/// `network` (`wan`), for its IPv4 ([`ifreload::down`], [`ifreload::up`]): down
/// takes off what its settings put on and stops its DHCPv4 client; up takes it down
/// if it is up, then puts on what the files (read again into `plan`) give now, a
/// `proto dhcp` one asking for a lease afresh. Its IPv6 (`wan6`, the ULA) is another
/// interface's, as in OpenWrt, and stays. What changed, a line each, or why not.
pub fn ifupdown(
    plan: &Plan,
    network: &str,
    up: bool,
    stack: &mut NetStack<Link>,
) -> Result<Vec<String>, String> {
    let (name, _, cfg) = plan
        .ifaces
        .iter()
        .find(|(_, uci, _)| uci == network)
        .ok_or_else(|| format!("interface '{network}' not found (not in /etc/config/network on a vif of this domain)"))?;
    let n = stack
        .by_name(name)
        .ok_or_else(|| format!("{network}: no interface {name}"))?;
    let mut in_force = IPV4_IN_FORCE.lock();
    let f = in_force
        .iter_mut()
        .find(|f| f.name == *name)
        .ok_or_else(|| format!("{network}: {name} has no settings in force"))?;
    if let Some(by) = overridden(f.source) {
        return Err(format!(
            "{network}: {name} is configured by {by}, which wins over the files"
        ));
    }
    f.source = FILES;
    let mut said = Vec::new();
    if f.up {
        said = ifreload::down(n, &f.ipv4);
        f.up = false; // its settings kept: `ifstatus` says its protocol
    }
    if up {
        let (now, lines) = ifreload::up(n, &Ipv4Files::of(cfg));
        f.ipv4 = now;
        f.up = true;
        said.extend(lines);
    }
    Ok(said)
}

/// In a new domain (restored or migrated): every vif goes through the handshake
/// again with its new backend (new rings, grants and event channels; the receive
/// buffers posted again, sends the old backend had not answered counted lost), then
/// announces its addresses (gratuitous ARP, unsolicited neighbour advertisements)
/// so the bridge and the neighbours learn where the domain is now. The stack, the router's flows and the LAN services' leases are
/// memory, kept as they were. One line per vif.
pub fn resume_vifs() -> Vec<String> {
    let mut stack = NET.lock();
    let router = GATEWAY.lock().is_some();
    let mut lines = Vec::new();
    for n in stack.ifs.iter_mut() {
        let name = n.name.clone();
        let t = clock::now();
        let Some(vif) = uplink(n) else {
            continue;
        };
        let r = vif.resume();
        let ms = t.elapsed().as_millis();
        match r {
            Ok(lost) => {
                let (v4, v6) = n.announce(router);
                lines.push(format!(
                    "{name} reconnected in {ms} ms{}; {v4} IPv4 and {v6} IPv6 address(es) announced",
                    if lost > 0 {
                        format!(", {lost} send(s) lost")
                    } else {
                        String::new()
                    }
                ));
            }
            Err(e) => lines.push(format!("{name} not reconnected: {e}")),
        }
    }
    NET_EVENTS.signal();
    lines
}

/// Vifs a domain takes (a toolstack attaching more gets a refusal on the console).
const MAX_VIFS: usize = 16;

/// How many queues a vif asks for: `xenlet.netqueues=N`, else
/// [`config::DEFAULT_QUEUES`] (a malformed value is reported and the default used).
pub fn queues(cmdline: &str) -> usize {
    config::queues_from_cmdline(cmdline).unwrap_or_else(|e| {
        crate::println!("net: {e}; using {}", config::DEFAULT_QUEUES);
        config::DEFAULT_QUEUES
    })
}

/// The names of the vifs connected at boot (`eth0`, ...), for the plan.
pub fn vif_names() -> Vec<String> {
    crate::dev::frontends::vif_names()
}

/// Makes an interface of every connected vif (configured by `plan` where the command
/// line and XenStore say nothing), starts the router if the plan routes, and watches
/// for vifs attached or detached later; returns boot report lines.
pub fn init(cmdline: &str, plan: Option<Plan>) -> Vec<String> {
    CMDLINE.call_once(|| String::from(cmdline));
    let plan = PLAN.call_once(|| plan);
    let mut report = Vec::new();
    if xenstore::connected() {
        let _ = xenstore::watch("device/vif", "xenlet-vifs", on_vif_event);
    }
    let mut stack = NET.lock();
    for (name, vif) in crate::dev::frontends::take_vifs() {
        report.push(add_interface(&mut stack, &name, vif));
    }
    // port-less bridges (`bridge_empty`), after the vifs: their MAC is derived from
    // the first vif's unless their device sets `macaddr`
    if let Some(p) = plan.as_ref() {
        let first = stack.ifs.first().and_then(uplink_ref).map(|v| v.mac());
        for (k, (name, mac)) in p.portless.iter().enumerate() {
            let mac = mac
                .unwrap_or_else(|| xenlet_net::netplan::portless_mac(first.unwrap_or([0; 6]), k));
            report.push(add_portless(&mut stack, name, mac));
        }
    }
    if let Some(spec) = plan.as_ref().and_then(|p| p.gateway.as_ref()) {
        match Gateway::new(spec, &mut stack.ifs) {
            Ok(mut gw) => {
                gw.set_wall_clock(wall_clock(0));
                let ports: Vec<String> = spec
                    .ports
                    .iter()
                    .map(|p| {
                        format!(
                            "{}{}{}",
                            p.name,
                            if p.masq { " masq" } else { "" },
                            if p.mss_clamp { " mtu_fix" } else { "" }
                        )
                    })
                    .collect();
                report.push(format!(
                    "router: forwarding between {} (conntrack max {})",
                    ports.join(", "),
                    spec.conntrack_max
                ));
                *GATEWAY.lock() = Some(gw);
            }
            Err(e) => report.push(format!("{e}; not routing")),
        }
    }
    report
}

/// The wall clock for the firewall's time matches: Xen's, with local time
/// `utc_offset_secs` ahead of UTC (a fixed offset: Xenlet has no time zone
/// database); `None` without Xen's (plain QEMU).
pub fn wall_clock(utc_offset_secs: i32) -> Option<xenlet_router::firewall::timematch::WallClock> {
    let secs = crate::xen::platform::wallclock_secs()?;
    Some(xenlet_router::firewall::timematch::WallClock {
        unix_ms_at_zero: secs.saturating_mul(1000).saturating_sub(now_ms()),
        utc_offset_secs,
    })
}

/// Sets the router's local time to `utc_offset_secs` ahead of UTC (from
/// `/etc/config/system`), for the firewall's time matches.
pub fn set_time_zone(utc_offset_secs: i32) {
    let _stack = NET.lock(); // the lock order is NET, then GATEWAY
    if let Some(gw) = GATEWAY.lock().as_mut() {
        gw.set_wall_clock(wall_clock(utc_offset_secs));
    }
}

/// Starts the LAN services of `spec` on the stack's interfaces (after [`init`]),
/// their leases kept in `store`; returns the boot line.
pub fn start_services(spec: &ServicesSpec, store: Box<dyn LeaseStore + Send>) -> String {
    let mut stack = NET.lock();
    if GATEWAY.lock().is_none() {
        return String::from("dhcpd, dns, ra: not started (not routing)");
    }
    let now = now_ms();
    // The lease file holds wall-clock expiries: the Unix time at our clock's 0.
    let epoch_offset = crate::xen::platform::wallclock_secs()
        .and_then(|s| u64::try_from(s.saturating_sub(now / 1000)).ok())
        .unwrap_or(0);
    let sv = LanServices::new(
        spec,
        &mut *stack,
        Some(store),
        epoch_offset,
        crate::sys::random::seed(),
        now,
    );
    let r = sv.load_report();
    let mut line = sv.summary();
    if r.loaded + r.expired + r.corrupt > 0 {
        line.push_str(&format!(
            "; {} leases from {} ({} expired, {} unreadable)",
            r.loaded, spec.lease_file, r.expired, r.corrupt
        ));
    }
    *SERVICES.lock() = Some(sv);
    line
}

/// The network service's mark on [`NET_EVENTS`]: what it has seen of the vifs'
/// events (its own, so no other wait takes them).
static NET_SEEN: SharedSeen = SharedSeen::new();
/// When the stack, the router or the LAN services next want a poll (ms since boot;
/// `i64::MAX`: only on an event).
static NET_DUE_MS: AtomicI64 = AtomicI64::new(0);
/// A client vif had work left at the end of the last poll ([`poll_clients`]): the
/// data plane wants its next turn at once.
static CLIENTS_BUSY: AtomicBool = AtomicBool::new(false);
/// When a client vif's packet waiting for its transmit credit may go (ms since
/// boot; `i64::MAX`: none waits): the data plane's timer, as Linux's
/// `credit_timeout`.
static CLIENTS_DUE_MS: AtomicI64 = AtomicI64::new(i64::MAX);

/// Polls the stack (unless a command holds it) and prints its messages, saves the
/// DHCP leases when they changed; returns when it next wants to be polled (ms
/// since boot). The shell loop's full turn: also follows vifs attached or detached.
pub fn poll() -> Option<i64> {
    if RESCAN.swap(false, Ordering::SeqCst) {
        rescan();
    }
    follow_clients(&mut NET.lock());
    let next = poll_data_plane().flatten();
    // File I/O outside every network lock, from the shell loop only (no command
    // holds the file tree here): the store is taken out of the services for the
    // write, so its disk waits serve the whole data plane, the LAN services too.
    let save = SERVICES
        .lock()
        .as_mut()
        .and_then(|sv| sv.take_lease_save(now_ms()));
    if let Some(mut save) = save {
        let ok = save.store.save(&save.text).is_ok();
        if let Some(sv) = SERVICES.lock().as_mut() {
            sv.lease_saved(save, ok);
        }
    }
    let save_at = SERVICES.lock().as_ref().and_then(|sv| sv.save_at());
    [next, save_at].into_iter().flatten().min()
}

/// The data plane's turn at every wait (registered with `xen::idle`): polls the
/// vifs, the router and the LAN services when a vif's event came since the last turn
/// or their timer is due; returns when it next wants a turn (ns since boot). Skips
/// the turn when a command holds the stack (that command polls it itself).
pub fn serve() -> Option<u64> {
    let due = NET_DUE_MS.load(Ordering::SeqCst);
    if !NET_SEEN.pending(&NET_EVENTS) && now_ms() < due {
        return (due != i64::MAX).then(|| instant_of_ms(due).as_nanos());
    }
    poll_data_plane()
        .flatten()
        .map(|ms| instant_of_ms(ms).as_nanos())
}

/// Polls the stack, the router and the LAN services and prints the stack's
/// messages; `None` when a command holds the stack (skipped), else when they next
/// want a poll (`Some(None)`: only on an event).
fn poll_data_plane() -> Option<Option<i64>> {
    let mut stack = NET.try_lock()?;
    if stack.ifs.is_empty() {
        NET_DUE_MS.store(i64::MAX, Ordering::SeqCst);
        return Some(None);
    }
    let now = now_ms();
    poll_stack(&mut stack, now);
    for e in stack.take_events() {
        crate::println!("{e}");
    }
    let services_at = SERVICES
        .try_lock()
        .and_then(|sv| sv.as_ref().map(|s| s.poll_at()));
    let busy = CLIENTS_BUSY.load(Ordering::SeqCst).then_some(now);
    let credit = Some(CLIENTS_DUE_MS.load(Ordering::SeqCst)).filter(|&t| t != i64::MAX);
    let next = [stack.poll_at(now), services_at.flatten(), busy, credit]
        .into_iter()
        .flatten()
        .min();
    NET_DUE_MS.store(next.unwrap_or(i64::MAX), Ordering::SeqCst);
    Some(next)
}

/// Polls the router (when it routes: it takes every received frame first), the
/// stack, and the LAN services (then the stack again, to send their answers at
/// once); every poll of [`NET`] goes through here. The router and services are only
/// tried (a command may hold them: `leases`, `dnsmasq`).
pub fn poll_stack(stack: &mut NetStack<Link>, now: i64) -> bool {
    // Marked before the poll: a vif event during it is news for the next turn, and
    // one before it is served here (a command's own poll counts: the data plane's
    // turn at its next wait does not poll again for the same events).
    let _ = NET_SEEN.take(&NET_EVENTS);
    netcost::count_poll();
    let mut t = clock::now().as_nanos();
    // the time since `t` to `part`, and `t` moved on
    let mut spent = |part| {
        let n = clock::now().as_nanos();
        netcost::add(part, n.saturating_sub(t));
        t = n;
    };
    // the events owed to clients go with the second's (always run, below)
    let _ = poll_clients(stack, true);
    spent(Part::Clients);
    if let Some(mut gw) = GATEWAY.try_lock() {
        if let Some(gw) = gw.as_mut() {
            gw.poll(&mut stack.ifs, now);
        }
    }
    spent(Part::Router);
    let mut changed = stack.poll(now);
    spent(Part::Stack);
    let mut delegated = None;
    let mut wan_mtu6 = None;
    if let Some(mut sv) = SERVICES.try_lock() {
        if let Some(sv) = sv.as_mut() {
            if sv.poll(stack, now) {
                changed |= stack.poll(now);
            }
            delegated = Some(sv.delegated6());
            wan_mtu6 = sv.wan6_mtu();
        }
    }
    // wan6's delegated prefix routed to the LAN and the WAN's advertised IPv6 MTU
    // (the lock order: GATEWAY before SERVICES, so after it is released)
    if let Some(d) = delegated {
        if let Some(mut gw) = GATEWAY.try_lock() {
            if let Some(gw) = gw.as_mut() {
                gw.set_delegated6(&stack.ifs, d.as_ref().map(|(p, v)| (*p, v.as_str())));
                if let Some((vif, mtu)) = &wan_mtu6 {
                    gw.set_mtu6(&stack.ifs, vif, *mtu);
                }
            }
        }
    }
    // what the router and the stack sent to clients goes out now; a client vif with
    // work left (its ring held back by a full received queue, frames taken here and
    // not yet routed) gets the data plane's next turn at once: its client sends no
    // event for work it already published (a Linux client's 64 KiB GSO packets
    // stalled so, ring full, until this)
    spent(Part::Services);
    let busy = poll_clients(stack, false);
    spent(Part::Clients);
    CLIENTS_BUSY.store(busy, Ordering::SeqCst);
    if busy {
        NET_DUE_MS.fetch_min(now, Ordering::SeqCst);
    }
    changed
}

/// The clock instant of `ms` milliseconds since boot (smoltcp's time).
pub fn instant_of_ms(ms: i64) -> clock::Instant {
    clock::Instant::from_nanos(u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000))
}

/// Waits for an event (a packet, a key) or until `deadline_us` (µs since boot), on
/// a command's `wait`.
pub fn wait_until_us(wait: &mut crate::xen::idle::Wait, deadline_us: u64) {
    wait.until(Some(clock::Instant::from_nanos(
        deadline_us.saturating_mul(1000),
    )));
}
