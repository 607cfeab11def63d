//! Crate-wide tests: OpenWrt's default files, round trips, and seeded random mutation.
//!
//! The fixtures ([`crate::fixtures`]) are OpenWrt's unmodified defaults. The mutation
//! tests use a xorshift64 generator with fixed seeds, so a failure reproduces.

use alloc::string::String;
use alloc::vec::Vec;

use crate::cli::{ConfigStore, StoreError, Uci};
use crate::fixtures;
use crate::model::Package;
use crate::parse::{parse, parse_bytes};
use crate::write::write;
use crate::{dhcp, firewall, network};

use xenlet_testrng::XorShift;

fn typed_all(p: &Package) {
    // Whatever the text, the typed readers return a value or an error, never panic.
    let _ = network::network(p);
    let _ = firewall::firewall(p);
    let _ = dhcp::dhcp(p);
}

#[test]
fn fixtures_parse_round_trip_and_have_no_warnings() {
    for (pkg, text) in fixtures::FILES {
        let p = parse(&alloc::format!("/etc/config/{pkg}"), pkg, text).unwrap();
        assert!(!p.sections.is_empty());
        let written = write(&p);
        let again = parse("w", pkg, &written).unwrap();
        assert_eq!(again, p, "{pkg}");
        // Generated names are the same too: same sections in the same order.
        let names: Vec<&str> = p.sections.iter().map(|s| s.name.as_str()).collect();
        let names2: Vec<&str> = again.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, names2);
        assert_eq!(write(&again), written, "writing is stable");
        let (warnings, what) = match *pkg {
            "network" => (network::network(&p).unwrap().warnings, "network"),
            "firewall" => (firewall::firewall(&p).unwrap().warnings, "firewall"),
            "dhcp" => (dhcp::dhcp(&p).unwrap().warnings, "dhcp"),
            _ => (Vec::new(), "system"),
        };
        assert_eq!(warnings, [], "{what}");
    }
}

#[derive(Default)]
struct MemStore(alloc::collections::BTreeMap<String, String>);

impl ConfigStore for MemStore {
    fn read(&self, package: &str) -> Result<Option<String>, StoreError> {
        Ok(self.0.get(package).cloned())
    }
    fn write_atomic(&mut self, package: &str, text: &str) -> Result<(), StoreError> {
        self.0.insert(package.into(), text.into());
        Ok(())
    }
    fn list(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.0.keys().cloned().collect())
    }
}

#[test]
fn first_boot_files_are_typed_without_warnings() {
    let mut s = MemStore::default();
    s.0.insert("network".into(), String::new());
    s.0.insert("dhcp".into(), fixtures::DNSMASQ_DHCP.into());
    let mut u = Uci::new();
    for args in fixtures::CONFIG_GENERATE_NETWORK
        .iter()
        .chain(fixtures::ODHCPD_DEFAULTS_DHCP)
    {
        let mut a = alloc::vec!["-q"];
        a.extend_from_slice(args);
        u.run(&mut s, &a);
    }
    let net = parse("n", "network", &s.0["network"]).unwrap();
    let n = network::network(&net).unwrap();
    assert_eq!(n.warnings, []);
    let lan = n.config.interface("lan").unwrap();
    assert_eq!(lan.device.as_deref(), Some("br-lan"));
    assert_eq!(lan.ports, ["lan1", "lan2"]);
    let d = dhcp::dhcp(&parse("d", "dhcp", &s.0["dhcp"]).unwrap()).unwrap();
    assert_eq!(d.warnings, []);
    assert_eq!(d.notes.len(), 1, "odhcpd noted");
}

const TRICKY: &[&str] = &[
    "'", "\"", "\\", "\n", "\r", "\t", " ", "#", ";", "a", "Z", "0", "-", "/", "é", "✓", "''",
    "\\\n", "\r\n", "$x", "`", "!",
];

fn random_value(rng: &mut XorShift, allow_empty: bool) -> String {
    let mut v = String::new();
    let n = rng.index(8) + usize::from(!allow_empty);
    for _ in 0..n {
        v.push_str(rng.pick(TRICKY));
    }
    if v.is_empty() && !allow_empty {
        v.push('x');
    }
    v
}

fn random_name(rng: &mut XorShift) -> String {
    const C: &[u8] = b"abcxyz_019";
    (0..rng.index(6) + 1)
        .map(|_| char::from(rng.pick(C)))
        .collect()
}

#[test]
fn generated_packages_round_trip() {
    let mut rng = XorShift(0x5eed_1234_abcd_0001);
    let types = [
        "interface",
        "zone",
        "a-b",
        "t'q",
        "x#y",
        "semi;",
        "back\\slash",
        "q\"d",
    ];
    for case in 0..2000 {
        let mut p = Package::new("gen");
        for _ in 0..rng.index(5) {
            let sec = if rng.index(2) == 0 {
                p.add_section(rng.pick(&types)).unwrap()
            } else {
                let name = random_name(&mut rng);
                p.set_section(&name, rng.pick(&types)).unwrap();
                p.find_section(&name).unwrap().unwrap()
            };
            for _ in 0..rng.index(5) {
                let opt = random_name(&mut rng);
                if rng.index(2) == 0 {
                    let v = random_value(&mut rng, false);
                    p.set_option(sec, &opt, &v).unwrap();
                } else {
                    for _ in 0..rng.index(3) + 1 {
                        let v = random_value(&mut rng, true);
                        p.add_list(sec, &opt, &v).unwrap();
                    }
                }
            }
        }
        let text = write(&p);
        let back =
            parse("gen", "gen", &text).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        assert_eq!(back, p, "case {case}:\n{text}");
    }
}

#[test]
fn mutated_fixtures_never_panic() {
    let mut rng = XorShift(0x0123_4567_89ab_cdef);
    let inserts: &[&[u8]] = &[
        b"'",
        b"\"",
        b"\\",
        b"\n",
        b"\r",
        b"#",
        b";",
        b" ",
        b"\t",
        b"config",
        b"option",
        b"list",
        b"package",
        b"\0",
        b"\xff",
        b"\xc3",
        b"@",
        b"[",
        b"]",
        b"=",
        b".",
        b"!",
        b"/",
        b"-",
        b"999999999999",
        b"0",
    ];
    let mut parsed_ok = 0;
    for round in 0..6000 {
        let (pkg, text) = fixtures::FILES[round % fixtures::FILES.len()];
        let mut bytes = text.as_bytes().to_vec();
        for _ in 0..rng.index(4) + 1 {
            let at = rng.index(bytes.len() + 1);
            match rng.index(4) {
                0 if !bytes.is_empty() => {
                    let end = (at + rng.index(8)).min(bytes.len());
                    bytes.drain(at.min(end)..end);
                }
                1 if at < bytes.len() => bytes[at] = rng.next() as u8,
                2 => {
                    let ins = rng.pick(inserts);
                    bytes.splice(at..at, ins.iter().copied());
                }
                _ => {
                    // Duplicate a slice elsewhere (repeated sections and options).
                    let start = rng.index(bytes.len());
                    let end = (start + rng.index(64)).min(bytes.len());
                    let chunk: Vec<u8> = bytes[start..end].to_vec();
                    bytes.splice(at..at, chunk);
                }
            }
        }
        match parse_bytes("/etc/config/x", pkg, &bytes) {
            Ok(p) => {
                parsed_ok += 1;
                let back = parse("w", pkg, &write(&p)).unwrap();
                assert_eq!(back, p, "round {round}");
                typed_all(&p);
            }
            Err(e) => {
                assert!(e.line >= 1 && e.column >= 1);
                assert!(!e.message.is_empty());
            }
        }
    }
    // The mutations are mild enough that many inputs still parse: the typed readers and
    // the round trip were exercised, not only the error paths.
    assert!(parsed_ok > 600, "{parsed_ok}");
}

#[test]
fn random_cli_sessions_never_panic_and_commit_parseable_files() {
    let mut rng = XorShift(0xfeed_f00d_dead_beef);
    let cmds = [
        "get", "set", "add_list", "del_list", "delete", "rename", "revert", "reorder", "show",
        "changes", "commit", "export", "add", "frob",
    ];
    let pkgs = ["network", "firewall", "dhcp", "nope", "bad.pkg", ""];
    let secs = [
        "lan",
        "wan",
        "@zone[0]",
        "@zone[-1]",
        "@rule[9]",
        "@[0]",
        "@",
        "cfg02dc81",
        "x-y",
        "",
        "@zone[99999999999]",
    ];
    let opts = [
        "proto", "name", "network", "ipaddr", "", "bad-opt", "new_opt",
    ];
    for session in 0..300 {
        let mut s = MemStore::default();
        for (pkg, text) in &fixtures::FILES[..4] {
            s.0.insert((*pkg).into(), (*text).into());
        }
        let mut u = Uci::new();
        for _ in 0..30 {
            let cmd = rng.pick(&cmds);
            let mut path = String::from(rng.pick(&pkgs));
            if rng.index(4) != 0 {
                path.push('.');
                path.push_str(rng.pick(&secs));
                if rng.index(2) == 0 {
                    path.push('.');
                    path.push_str(rng.pick(&opts));
                }
            }
            if rng.index(2) == 0 {
                path.push('=');
                path.push_str(&random_value(&mut rng, true));
            }
            let args: Vec<&str> = match cmd {
                "add" => alloc::vec![
                    cmd,
                    rng.pick(&pkgs),
                    rng.pick(&["zone", "rule", "bad type", ""])
                ],
                "show" | "changes" | "commit" | "export" if rng.index(3) == 0 => alloc::vec![cmd],
                _ => alloc::vec![cmd, path.as_str()],
            };
            let out = u.run(&mut s, &args);
            assert!([0, 1, 255].contains(&out.code), "{args:?}");
        }
        u.run(&mut s, &["commit"]);
        for (pkg, text) in &s.0 {
            parse("c", pkg, text)
                .unwrap_or_else(|e| panic!("session {session}: {pkg}: {e}\n{text}"));
        }
    }
}

#[test]
fn a_commit_that_would_not_parse_back_is_refused() {
    // 300 options in one section: uci set can stage them, but the file would be
    // past the parser's bound on the next read; the commit refuses and the file
    // stays as it was.
    let mut s = MemStore::default();
    s.0.insert("network".into(), "config interface 'lan'\n".into());
    let mut u = Uci::new();
    for i in 0..300 {
        let arg = alloc::format!("network.lan.opt{i}=x");
        assert_eq!(u.run(&mut s, &["set", &arg]).code, 0);
    }
    let o = u.run(&mut s, &["commit", "network"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("too many options"), "{}", o.stderr);
    assert_eq!(s.0["network"], "config interface 'lan'\n");
    // once fewer, it commits
    assert_eq!(u.run(&mut s, &["revert", "network"]).code, 0);
    assert_eq!(u.run(&mut s, &["set", "network.lan.proto=static"]).code, 0);
    assert_eq!(u.run(&mut s, &["commit", "network"]).code, 0);
}

#[test]
fn uncommitted_changes_are_bounded_per_package() {
    let mut s = MemStore::default();
    s.0.insert("network".into(), "config interface 'lan'\n".into());
    s.0.insert("dhcp".into(), String::new());
    let mut u = Uci::new();
    for i in 0..crate::cli::MAX_CHANGES {
        let arg = alloc::format!("network.lan.proto=v{i}");
        let o = u.run(&mut s, &["set", &arg]);
        assert_eq!(o.code, 0, "{}", o.stderr);
    }
    assert_eq!(u.staged("network").len(), crate::cli::MAX_CHANGES);
    // One more is refused with a clear error, and nothing changes.
    let o = u.run(&mut s, &["set", "network.lan.proto=static"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("Too many uncommitted changes"),
        "{}",
        o.stderr
    );
    let o = u.run(&mut s, &["add", "network", "device"]);
    assert_eq!(o.code, 1);
    assert_eq!(u.staged("network").len(), crate::cli::MAX_CHANGES);
    let o = u.run(&mut s, &["get", "network.lan.proto"]);
    assert_eq!(
        o.stdout,
        alloc::format!("v{}\n", crate::cli::MAX_CHANGES - 1)
    );
    // Another package is not affected.
    assert_eq!(u.run(&mut s, &["add", "dhcp", "host"]).code, 0);
    // A commit makes room again.
    assert_eq!(u.run(&mut s, &["commit", "network"]).code, 0);
    assert!(u.staged("network").is_empty());
    assert_eq!(u.run(&mut s, &["set", "network.lan.proto=static"]).code, 0);
}
