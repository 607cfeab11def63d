//! The scenario table: what each test-bed scenario boots and how it is driven.
//!
//! A scenario is data: an xl config template, which console carries the shell, a
//! command script with expectations, and how the guest must end. The dom0 runner
//! (`xtask/testbed/run.py`) executes it; adding a scenario means adding an entry to
//! [`SCENARIOS`] (or [`EXTRA`], run by name only).
//!
//! This file is the registry; the scenarios are in `scenarios/`, one file a family
//! (`boot`, `xen`, `blk`, `net`, `fs`, `router`, `bench`), each a `Scenario { .. }` that
//! states what differs from a base in `builders.rs` (Xenlet PVH, Xenlet's disk image
//! as HVM, the Linux domU; the routers in `router.rs`), with the step builders,
//! [`steps!`](builders::steps) to join step lists and
//! [`xl_config!`](builders::xl_config) for config templates. The types are in
//! `model.rs`, `scenarios.json` in `json.rs`. `cargo xtask testbed dump` prints every
//! scenario whole, to compare before and after a change of the code.
//!
//! Variables in a config template, replaced in dom0:
//! `@NAME@` the domain name, `@FILES@` the payload files (see [`Need`]), `@LINUX@` /
//! `@LINUX_INITRD@` the Debian kernel and the busybox initramfs of the Linux domU, and
//! each [`Disk`]'s variable (a file path, or a `/dev/loopN` for `phy:`).

mod bench;
mod blk;
mod boot;
mod builders;
mod fs;
mod json;
mod model;
mod net;
mod router;
mod xen;

pub use bench::{is_probe, MEM_PROBES_LINUX, MEM_PROBES_XENLET};
use builders::*;
pub use json::to_json;
pub use model::*;

pub const SCENARIOS: &[Scenario] = &[
    boot::LINUX_HVM,
    boot::LINUX_PVH,
    boot::HVM_KERNEL,
    boot::HVM_DISK,
    boot::HVM_DISK_1G,
    boot::CRASH_PVH,
    boot::EXITS_PVH,
    boot::EXITS_LOAD_PVH,
    boot::HANG_PROBE,
    boot::TRIPLE_PVH,
    boot::PVH,
    xen::XEN_HVM,
    xen::XEN_PVH,
    net::NET_PVH,
    blk::BLK_PHY,
    blk::BLK_PVH,
    fs::FS_PVH,
    fs::FS_CRASH_PVH,
    fs::CONFIG_CRASH_PVH,
    fs::FS_CRASH_E2FSCK_PVH,
    blk::BLK_HOTPLUG,
    blk::BLK_REPLACE,
    net::FLOOD_PVH,
    blk::BLK_QDISK,
];

/// A scenario under another name (one per run of a bench).
const fn renamed(s: &Scenario, name: &'static str) -> Scenario {
    Scenario { name, ..*s }
}

/// Scenarios run by name only (not by `all`): `cargo xtask bench` and `cargo xtask
/// demo`.
pub const EXTRA: &[Scenario] = &[
    fs::FS_FAULT_PVH,
    xen::SUSPEND_HVM,
    router::SUSPEND_ROUTER,
    router::ROUTER_REATTACH,
    router::ROUTER_NETBACK,
    router::ROUTER_FAIRNESS,
    router::ROUTER_ZONES,
    router::ROUTER_CLIENTS,
    router::ROUTER_NETBACK_LINUX,
    router::SUSPEND_ROUTER_LINUX,
    router::ROUTER_XENLET,
    router::ROUTER_IPV6,
    router::ROUTER_SMALL,
    router::ROUTER_BUSY,
    router::ROUTER_XENLET_FW,
    router::ROUTER_DIFF,
    router::ROUTER_DIFF_SHORT,
    router::ROUTER_LINUX,
    bench::BENCH_LINUX,
    bench::BENCH_NET_LINUX,
    bench::BENCH_NET_XENLET,
    bench::BENCH_NET_XENLET_HVM,
    net::NET_SOAK,
    bench::BENCH_XENLET,
    boot::DEMO,
    renamed(&bench::BENCH_FS_PVH, "bench-fs-pvh-1"),
    renamed(&bench::BENCH_FS_PVH, "bench-fs-pvh-2"),
    renamed(&bench::BENCH_FS_PVH, "bench-fs-pvh-3"),
    renamed(&bench::BENCH_FS_PVH, "bench-fs-pvh-4"),
    renamed(&bench::BENCH_FS_PVH, "bench-fs-pvh-5"),
    renamed(&bench::BENCH_FS_RAW, "bench-fs-raw-1"),
    renamed(&bench::BENCH_FS_RAW, "bench-fs-raw-2"),
    renamed(&bench::BENCH_FS_RAW, "bench-fs-raw-3"),
    renamed(&bench::BENCH_FS_RAW, "bench-fs-raw-4"),
    renamed(&bench::BENCH_FS_RAW, "bench-fs-raw-5"),
    renamed(&bench::BENCH_FS_NOJOURNAL, "bench-fs-nojournal-1"),
    renamed(&bench::BENCH_FS_NOJOURNAL, "bench-fs-nojournal-2"),
    renamed(&bench::BENCH_FS_NOJOURNAL, "bench-fs-nojournal-3"),
    renamed(&bench::BENCH_FS_NOJOURNAL, "bench-fs-nojournal-4"),
    renamed(&bench::BENCH_FS_NOJOURNAL, "bench-fs-nojournal-5"),
    renamed(&bench::BENCH_FILES_XENLET, "bench-files-xenlet-1"),
    renamed(&bench::BENCH_FILES_XENLET, "bench-files-xenlet-2"),
    renamed(&bench::BENCH_FILES_XENLET, "bench-files-xenlet-3"),
    bench::BENCH_FILES_LINUX,
    renamed(&bench::BENCH_DIR_XENLET, "bench-dir-xenlet-1"),
    renamed(&bench::BENCH_DIR_XENLET, "bench-dir-xenlet-2"),
    renamed(&bench::BENCH_DIR_XENLET, "bench-dir-xenlet-3"),
    bench::BENCH_DIR_LINUX,
    renamed(&bench::BENCH_FS_HVM, "bench-fs-hvm-1"),
    renamed(&bench::BENCH_FS_HVM, "bench-fs-hvm-2"),
    renamed(&bench::BENCH_FS_HVM, "bench-fs-hvm-3"),
    renamed(&bench::BENCH_FS_HVM, "bench-fs-hvm-4"),
    renamed(&bench::BENCH_FS_HVM, "bench-fs-hvm-5"),
    bench::BENCH_FS_LINUX,
    bench::BENCH_FS_LINUX_IDE,
    bench::BENCH_BOOT_HVM,
    bench::BENCH_BOOT_PVH,
    bench::BENCH_BOOT_LINUX,
    bench::mem_probe_xenlet!(2),
    bench::mem_probe_xenlet!(3),
    bench::mem_probe_xenlet!(4),
    bench::mem_probe_xenlet!(6),
    bench::mem_probe_xenlet!(8),
    bench::mem_probe_xenlet!(12),
    bench::mem_probe_xenlet!(16),
    bench::mem_probe_xenlet!(24),
    bench::mem_probe_linux!(48),
    bench::mem_probe_linux!(64),
    bench::mem_probe_linux!(96),
    bench::mem_probe_linux!(128),
    renamed(&bench::BENCH_ROUTER_LINUX, "bench-router-linux-1"),
    renamed(&bench::BENCH_ROUTER_LINUX, "bench-router-linux-2"),
    renamed(&bench::BENCH_ROUTER_LINUX, "bench-router-linux-3"),
    renamed(&bench::BENCH_ROUTER_LINUX, "bench-router-linux-4"),
    renamed(&bench::BENCH_ROUTER_LINUX, "bench-router-linux-5"),
    renamed(&bench::BENCH_ROUTER_XENLET, "bench-router-xenlet-1"),
    renamed(&bench::BENCH_ROUTER_XENLET, "bench-router-xenlet-2"),
    renamed(&bench::BENCH_ROUTER_XENLET, "bench-router-xenlet-3"),
    renamed(&bench::BENCH_ROUTER_XENLET, "bench-router-xenlet-4"),
    renamed(&bench::BENCH_ROUTER_XENLET, "bench-router-xenlet-5"),
    renamed(&bench::BENCH_ROUTER_XENLET_Q1, "bench-router-xenlet-q1-1"),
    renamed(&bench::BENCH_ROUTER_XENLET_Q1, "bench-router-xenlet-q1-2"),
    renamed(&bench::BENCH_ROUTER_XENLET_Q1, "bench-router-xenlet-q1-3"),
    bench::BENCH_CLIENTS_DOM0,
    bench::BENCH_CLIENTS_NETBACK,
    bench::BENCH_CLIENTS_LINUX,
    renamed(&bench::BENCH_ROUTER_CEILING, "bench-router-ceiling-1"),
    renamed(&bench::BENCH_ROUTER_CEILING, "bench-router-ceiling-2"),
    renamed(&bench::BENCH_ROUTER_CEILING, "bench-router-ceiling-3"),
    renamed(&bench::BENCH_ROUTER_CEILING, "bench-router-ceiling-4"),
    renamed(&bench::BENCH_ROUTER_CEILING, "bench-router-ceiling-5"),
];

/// Every scenario's whole definition, `{:#?}` of each in table order (`SCENARIOS`,
/// then `EXTRA`): `testbed dump`, for checking that a change of this table's code
/// left the scenarios as they were.
pub fn dump() -> String {
    let mut o = String::new();
    for s in SCENARIOS.iter().chain(EXTRA) {
        o.push_str(&format!("{s:#?}\n"));
    }
    o
}

pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().chain(EXTRA).find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_states_what_its_base_leaves_empty() {
        for s in SCENARIOS.iter().chain(EXTRA) {
            assert!(!s.name.is_empty() && !s.about.is_empty(), "{s:?}");
            assert!(s.config.starts_with("name    = \"@NAME@\"\n"), "{}", s.name);
            assert!(!s.steps.is_empty(), "{}", s.name);
        }
    }

    #[test]
    fn names_unique_and_budgets_fit() {
        let all: Vec<&Scenario> = SCENARIOS.iter().chain(EXTRA).collect();
        for (i, s) in all.iter().enumerate() {
            assert!(all[..i].iter().all(|o| o.name != s.name), "{}", s.name);
            assert!(s.boot_timeout_s < s.budget_s, "{}", s.name);
            // `bench fs` writes the report's 2 GiB (the benches take what they need:
            // `bench boot` must not drop its slow HVM boots), and a router scenario runs some
            // fifteen checks across its topology (iperf3 both ways, traceroute): minutes,
            // by design
            // an HVM disk boot (SeaBIOS, GRUB reading the kernel through the BIOS,
            // then the checks) took 107 s on a quiet test bed and 193 s on a loaded
            // one: it gets up to 4 min
            let hvm_disk_boot =
                s.needs.contains(&Need::XenletImage) && s.console == Console::Serial;
            // a scenario that boots the domain again (`restart`) gets the time of a
            // scenario per boot (config-crash-pvh: seven boots, four of them after
            // crashes on a disk whose writes dm-delay holds 400 ms)
            let boots = 1 + s.steps.iter().filter(|st| st.kind == Kind::Restart).count() as u32;
            if !s.needs.is_empty()
                && !s.name.starts_with("bench-")
                && s.topology != Some(Topology::Router)
            {
                let limit = boots * if hvm_disk_boot { 240 } else { 180 };
                assert!(
                    s.budget_s < limit,
                    "{}: a Xenlet scenario takes < {limit} s",
                    s.name
                );
            }
            if matches!(s.end, End::Poweroff | End::Crash | End::TripleFault) {
                assert!(s.steps.last().is_some_and(|l| l.ends), "{}", s.name);
            }
            if matches!(s.end, End::XlShutdown | End::XlReboot) {
                assert!(s.steps.iter().all(|l| !l.ends), "{}", s.name);
                assert!(s.end_timeout_s <= 10, "{}: xl ends within 10 s", s.name);
            }
            // once an until-gone step ended the domain, the guest is back only after a
            // restart; end "gone" wants it gone at the end, every other end alive
            // and after an until-moved step, the next guest-side step is a reattach
            let mut up = true;
            let mut moving = false;
            for st in s.steps {
                match st.kind {
                    Kind::Guest | Kind::WaitOutput => {
                        assert!(up && !moving, "{}: {}", s.name, st.send)
                    }
                    Kind::UntilGone => {
                        assert!(up && !moving, "{}: {}", s.name, st.send);
                        up = false;
                    }
                    Kind::UntilMoved => {
                        assert!(up && !moving, "{}: {}", s.name, st.send);
                        moving = true;
                    }
                    Kind::Restart => {
                        assert!(!moving, "{}: a restart while moving", s.name);
                        up = true
                    }
                    Kind::Reattach => {
                        assert!(up, "{}: reattach to a domain that went", s.name);
                        moving = false;
                    }
                    Kind::Dom0 => {}
                }
            }
            assert!(!moving, "{}: an until-moved step with no reattach", s.name);
            assert_eq!(up, s.end != End::Gone, "{}", s.name);
            if s.end == End::Gone {
                assert!(s.steps.iter().all(|l| !l.ends), "{}", s.name);
            }
            for st in s.steps {
                assert!(!st.ends || st.kind == Kind::Guest, "{}", s.name);
                for (_, rx) in st.capture {
                    assert!(rx.contains('('), "{}: a capture needs a group", s.name);
                }
            }
            for d in s.disks {
                assert!(s.config.contains(&format!("@{}@", d.var)), "{}", s.name);
            }
        }
    }

    #[test]
    fn client_domains_get_the_sessions_xl_lines() {
        // a dom0 step that writes a domain's config and creates it appends run.py's
        // `$DOMAIN_XL` (the lines every scenario's own domain gets: native TSC) to it;
        // a bench client without them had its RDTSC emulated
        let mut seen = 0;
        for s in SCENARIOS.iter().chain(EXTRA) {
            for st in s.steps.iter().filter(|st| st.kind == Kind::Dom0) {
                let Some((_, rest)) = st.send.split_once("xl create ") else {
                    continue;
                };
                let cfg = rest.split_whitespace().next().unwrap();
                assert!(
                    st.send.contains(&format!("\"$DOMAIN_XL\" >>{cfg} ")),
                    "{}: {}",
                    s.name,
                    st.send
                );
                seen += 1;
            }
        }
        assert!(seen >= 2, "the router-netback and bench clients steps");
    }

    #[test]
    fn netns_steps_name_their_topologys_namespaces() {
        for s in SCENARIOS.iter().chain(EXTRA) {
            for st in s.steps.iter().filter(|st| !st.netns.is_empty()) {
                assert_eq!(st.kind, Kind::Dom0, "{}: a netns step runs in dom0", s.name);
                match s.topology {
                    Some(Topology::Router) => assert!(
                        ["lan1", "lan2", "wan", "far"].contains(&st.netns),
                        "{}: no namespace {} in the router topology",
                        s.name,
                        st.netns
                    ),
                    None => panic!("{}: a netns step needs a topology", s.name),
                }
            }
            // (a domain off the path has no vifs: the ceiling of `bench router`)
            if s.topology == Some(Topology::Router) && s.config.contains("vif") {
                assert!(s.config.contains(r#""bridge=brlan"#), "{}", s.name);
                assert!(s.config.contains(r#""bridge=brwan"#), "{}", s.name);
                let lan = s.config.find("bridge=brlan");
                assert!(
                    lan < s.config.find("bridge=brwan"),
                    "{}: eth0 = LAN",
                    s.name
                );
            }
        }
        let j = to_json(&[find("router-linux").unwrap()]);
        assert!(j.contains(r#""topology": "router"}"#));
        assert!(j.contains(r#""netns": "lan1"}"#));
        assert!(to_json(&[find("pvh").unwrap()]).contains(r#""topology": ""}"#));
    }
}
