//! `uci` command scenarios. Expected outputs are those of real uci: the reference files
//! of openwrt/uci `tests/shunit2/references/` (cited per test), and for `show` the format
//! `uci_show_package`/`uci_show_section` print (`firewall.@zone[0].network='wan' 'wan6'`).

use super::*;
use crate::fixtures;
use alloc::vec;

/// An in-memory `/etc/config`.
#[derive(Default)]
struct MemStore {
    files: BTreeMap<String, String>,
    writes: usize,
    fail_writes: bool,
}

impl ConfigStore for MemStore {
    fn read(&self, package: &str) -> Result<Option<String>, StoreError> {
        Ok(self.files.get(package).cloned())
    }
    fn write_atomic(&mut self, package: &str, text: &str) -> Result<(), StoreError> {
        if self.fail_writes {
            return Err(StoreError);
        }
        self.writes += 1;
        self.files.insert(package.to_string(), text.to_string());
        Ok(())
    }
    fn list(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.files.keys().cloned().collect())
    }
}

fn store(files: &[(&str, &str)]) -> MemStore {
    let mut s = MemStore::default();
    for (n, t) in files {
        s.files.insert(n.to_string(), t.to_string());
    }
    s
}

fn run(uci: &mut Uci, s: &mut MemStore, args: &[&str]) -> Output {
    uci.run(s, args)
}

fn ok(uci: &mut Uci, s: &mut MemStore, args: &[&str]) -> String {
    let o = uci.run(s, args);
    assert_eq!((o.code, o.stderr.as_str()), (0, ""), "{args:?}");
    o.stdout
}

fn prepare_list_test() -> (Uci, MemStore) {
    // tests.d/080_list prepare_list_test
    let mut s = store(&[("list_test_config", "")]);
    let mut u = Uci::new();
    ok(&mut u, &mut s, &["set", "list_test_config.SEC0=section"]);
    ok(
        &mut u,
        &mut s,
        &["add_list", "list_test_config.SEC0.list0=value0"],
    );
    ok(
        &mut u,
        &mut s,
        &["add_list", "list_test_config.SEC0.list0=\"Hello\n, world\""],
    );
    (u, s)
}

#[test]
fn add_list_changes_show_get_match_references() {
    let (mut u, mut s) = prepare_list_test();
    // references/add_list_changes.result
    assert_eq!(
        ok(&mut u, &mut s, &["changes"]),
        "list_test_config.SEC0='section'\nlist_test_config.SEC0.list0+='value0'\nlist_test_config.SEC0.list0+='\"Hello\n, world\"'\n"
    );
    // references/add_list_show.result
    assert_eq!(
        ok(&mut u, &mut s, &["show", "list_test_config"]),
        "list_test_config.SEC0=section\nlist_test_config.SEC0.list0='value0' '\"Hello\n, world\"'\n"
    );
    // 080_list test_add_list_get: only items with blanks are quoted.
    assert_eq!(
        ok(&mut u, &mut s, &["get", "list_test_config.SEC0.list0"]),
        "value0 '\"Hello\n, world\"'\n"
    );
    assert_eq!(s.writes, 0, "nothing is written before commit");
}

#[test]
fn commit_then_del_list_matches_reference_file() {
    let (mut u, mut s) = prepare_list_test();
    ok(&mut u, &mut s, &["commit"]);
    assert_eq!(s.writes, 1);
    assert_eq!(ok(&mut u, &mut s, &["changes"]), "");
    ok(
        &mut u,
        &mut s,
        &["del_list", "list_test_config.SEC0.list0=value0"],
    );
    ok(&mut u, &mut s, &["commit"]);
    // references/del_list_config.result
    assert_eq!(
        s.files["list_test_config"],
        "\nconfig section 'SEC0'\n\tlist list0 '\"Hello\n, world\"'\n\n"
    );
    // Nothing staged: commit writes nothing.
    ok(&mut u, &mut s, &["commit", "list_test_config"]);
    assert_eq!(s.writes, 2);
}

fn revert_test_prepare() -> (Uci, MemStore) {
    // tests.d/070_revert revert_test_prepare
    let mut s = store(&[("revert", "")]);
    let mut u = Uci::new();
    ok(&mut u, &mut s, &["set", "revert.SEC0=section"]);
    ok(&mut u, &mut s, &["set", "revert.SEC0.option0=value0"]);
    ok(
        &mut u,
        &mut s,
        &["set", "revert.SEC0.option1=\"Hello,\n  World\""],
    );
    (u, s)
}

#[test]
fn revert_matches_references() {
    let (mut u, mut s) = revert_test_prepare();
    ok(&mut u, &mut s, &["revert", "revert.SEC0.option0"]);
    // references/revert_option.result
    assert_eq!(
        ok(&mut u, &mut s, &["changes", "revert"]),
        "revert.SEC0='section'\nrevert.SEC0.option1='\"Hello,\n  World\"'\n"
    );
    ok(&mut u, &mut s, &["revert", "revert.SEC0"]);
    // references/revert_section.result is empty.
    assert_eq!(ok(&mut u, &mut s, &["changes", "revert"]), "");
    // test_revert_option_long
    let val = "a".repeat(8192);
    let mut s = store(&[("p", "")]);
    ok(&mut u, &mut s, &["set", "p.s=sec"]);
    ok(&mut u, &mut s, &["set", &format!("p.s.o={val}")]);
    assert_eq!(
        ok(&mut u, &mut s, &["changes"]),
        format!("p.s='sec'\np.s.o='{val}'\n")
    );
    ok(&mut u, &mut s, &["revert", "p"]);
    assert_eq!(ok(&mut u, &mut s, &["changes"]), "");
}

#[test]
fn malformed_paths_fail_silently_with_q() {
    // tests.d/020_get test_get_parsing / test_get_section_index_parsing and
    // tests.d/050_show test_get_parsing: each must fail and print nothing with -q.
    let data = "config type 'section'\n\toption opt 'val'\n\nconfig zer\n\toption val 'x'\n";
    let mut s = store(&[("test", data)]);
    let mut u = Uci::new();
    for cmd in ["get", "show"] {
        for a in [
            "test.",
            "test.section.",
            "test.section.opt.",
            "test.section.opt.val.",
            "test.section.opt.val.qsdf.qsd",
            "test.section.opt.valqsqsd",
            "test.@",
            "test.@zer.",
            "test.@.",
            "test.@zer[1]",
            "test.@.opt",
            "test.@[28]",
            "test.@[1].",
            "test.@[1].val.",
            "test.nilsection",
            "test.nilsection.nilopt",
            "test.section.nilopt",
        ] {
            let o = run(&mut u, &mut s, &["-q", cmd, a]);
            assert_ne!(o.code, 0, "{cmd} {a}");
            assert_eq!(
                (o.stdout.as_str(), o.stderr.as_str()),
                ("", ""),
                "{cmd} {a}"
            );
        }
    }
    // tests.d/030_set test_set_parsing
    for a in [
        "test.=val",
        "test.section.=val",
        "test.section.opt.=val",
        "test.section.opt.zflk=val",
    ] {
        let o = run(&mut u, &mut s, &["-q", "set", a]);
        assert_ne!(o.code, 0, "{a}");
    }
    // test_get_option / test_get_section
    assert_eq!(ok(&mut u, &mut s, &["get", "test.section.opt"]), "val\n");
    assert_eq!(ok(&mut u, &mut s, &["get", "test.section"]), "type\n");
    assert_eq!(ok(&mut u, &mut s, &["get", "test.@zer[0].val"]), "x\n");
    assert_eq!(ok(&mut u, &mut s, &["get", "test.@[1]"]), "zer\n");
}

#[test]
fn error_messages_as_uci_prints_them() {
    let mut s = store(&[("network", fixtures::IMAGE_NETWORK)]);
    let mut u = Uci::new();
    let o = run(&mut u, &mut s, &["get", "network.nope"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, "uci: Entry not found\n"));
    let o = run(&mut u, &mut s, &["get", "nosuch.lan"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, "uci: Entry not found\n"));
    let o = run(&mut u, &mut s, &["set", "network.lan.mtu"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, "uci: Invalid argument\n"));
    let o = run(&mut u, &mut s, &["set", "network.nope.mtu=1500"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, "uci: Invalid argument\n"));
    let o = run(&mut u, &mut s, &["set", "network.@device[3]=device"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, "uci: Invalid argument\n"));
    let o = run(&mut u, &mut s, &["get", "network.bad-name"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, "uci: Invalid argument\n"));
    let o = run(&mut u, &mut s, &["delete", "network.lan.nope"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, "uci: Entry not found\n"));
    let o = run(&mut u, &mut s, &["add", "network", "bad type"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, "uci: Invalid argument\n"));
    let o = run(&mut u, &mut s, &["get", "bad.pkg.name.x"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, "uci: Parse error\n"));
    // A value on get is refused without a message (cli.c returns 1).
    let o = run(&mut u, &mut s, &["get", "network.lan.proto=x"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, ""));
    // Usage: unknown command or wrong argument count exits 255, no command exits 0.
    for (args, code) in [
        (&["frob"][..], 255),
        (&["get"][..], 255),
        (&["add", "network"][..], 255),
        (&[][..], 0),
        (&["help"][..], 0),
    ] {
        let o = run(&mut u, &mut s, args);
        assert_eq!(o.code, code, "{args:?}");
        assert!(o
            .stderr
            .starts_with("Usage: uci [<options>] <command> [<arguments>]\n"));
    }
    // No change was staged by any of this.
    assert_eq!(ok(&mut u, &mut s, &["changes"]), "");
    // A broken file: libuci's "Parse error (reason) at line N, byte M".
    let mut s = store(&[("broken", "config t\nfoo bar\n")]);
    let o = run(&mut u, &mut s, &["show", "broken"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .starts_with("uci: Parse error (invalid command 'foo'")
            && o.stderr.ends_with(") at line 2, byte 0\n"),
        "{}",
        o.stderr
    );
    // Writes failing are "I/O error" and keep the staged change.
    let mut s = store(&[("network", fixtures::IMAGE_NETWORK)]);
    s.fail_writes = true;
    ok(&mut u, &mut s, &["set", "network.lan.mtu=1400"]);
    let o = run(&mut u, &mut s, &["commit", "network"]);
    assert_eq!((o.code, o.stderr.as_str()), (1, "uci: I/O error\n"));
    assert_eq!(
        ok(&mut u, &mut s, &["changes", "network"]),
        "network.lan.mtu='1400'\n"
    );
}

#[test]
fn show_uses_at_type_refs_and_real_names() {
    let mut s = store(&[("firewall", fixtures::IMAGE_FIREWALL)]);
    let mut u = Uci::new();
    let all = ok(&mut u, &mut s, &["show", "firewall"]);
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines[0], "firewall.@defaults[0]=defaults");
    assert_eq!(lines[1], "firewall.@defaults[0].syn_flood='1'");
    assert!(lines.contains(&"firewall.@zone[1]=zone"));
    assert!(lines.contains(&"firewall.@zone[1].network='wan' 'wan6'"));
    assert!(lines.contains(&"firewall.@rule[1].icmp_type='echo-request'"));
    // 10 sections and 59 option lines (a list shows on one line).
    assert_eq!(lines.len(), 69);
    // Addressed directly, a section is shown under its real (generated) name.
    assert_eq!(
        ok(&mut u, &mut s, &["show", "firewall.@zone[0]"]),
        "firewall.cfg02dc81=zone\nfirewall.cfg02dc81.name='lan'\nfirewall.cfg02dc81.network='lan'\nfirewall.cfg02dc81.input='ACCEPT'\nfirewall.cfg02dc81.output='ACCEPT'\nfirewall.cfg02dc81.forward='ACCEPT'\n"
    );
    assert_eq!(
        ok(&mut u, &mut s, &["show", "firewall.@zone[-1].masq"]),
        "firewall.cfg03dc81.masq='1'\n"
    );
    // -X: real names everywhere.
    assert!(ok(&mut u, &mut s, &["-X", "show", "firewall"])
        .starts_with("firewall.cfg01e63d=defaults\n"));
    assert_eq!(
        ok(
            &mut u,
            &mut s,
            &["-d", ",", "get", "firewall.@zone[1].network"]
        ),
        "wan,wan6\n"
    );
    // show without arguments: every package.
    let mut s2 = store(&[
        ("firewall", fixtures::IMAGE_FIREWALL),
        ("system", fixtures::IMAGE_SYSTEM),
    ]);
    let every = ok(&mut u, &mut s2, &["show"]);
    assert!(every.starts_with(&all));
    assert!(every.ends_with("system.@system[0].urandom_seed='0'\n"));
}

#[test]
fn add_set_delete_rename_commit_cycle() {
    let mut s = store(&[("firewall", fixtures::IMAGE_FIREWALL)]);
    let mut u = Uci::new();
    let id = ok(&mut u, &mut s, &["add", "firewall", "rule"]);
    let id = id.trim_end();
    // 10 sections in the file: the 11th allocation, plus the hash of "rule" (uci show
    // -X on OpenWrt prints rules as cfgNN92bd).
    assert!(id == "cfg0b92bd" && id.len() == 9, "{id}");
    ok(
        &mut u,
        &mut s,
        &["set", "firewall.@rule[-1].name=Allow-SSH"],
    );
    ok(&mut u, &mut s, &["set", "firewall.@rule[-1].dest_port=22"]);
    ok(
        &mut u,
        &mut s,
        &["add_list", "firewall.@rule[-1].proto=tcp"],
    );
    ok(&mut u, &mut s, &["set", "firewall.@zone[1].input=DROP"]);
    ok(&mut u, &mut s, &["delete", "firewall.@zone[1].network=1"]);
    ok(&mut u, &mut s, &["rename", "firewall.@zone[0]=lanzone"]);
    ok(&mut u, &mut s, &["delete", "firewall.@forwarding[0]"]);
    // Setting the current value stages nothing.
    ok(&mut u, &mut s, &["set", "firewall.lanzone.input=ACCEPT"]);
    let changes = ok(&mut u, &mut s, &["changes", "firewall"]);
    assert_eq!(
        changes,
        format!(
            "firewall.{id}='rule'\nfirewall.{id}.name='Allow-SSH'\nfirewall.{id}.dest_port='22'\nfirewall.{id}.proto+='tcp'\nfirewall.cfg03dc81.input='DROP'\n-firewall.cfg03dc81.network\nfirewall.cfg02dc81='lanzone'\n-firewall.cfg04ad58\n"
        )
    );
    assert_eq!(
        ok(&mut u, &mut s, &["get", "firewall.lanzone.name"]),
        "lan\n"
    );
    assert_eq!(
        ok(&mut u, &mut s, &["get", "firewall.@zone[1].network"]),
        "wan\n"
    );
    assert_eq!(s.files["firewall"], fixtures::IMAGE_FIREWALL);
    ok(&mut u, &mut s, &["commit", "firewall"]);
    let text = &s.files["firewall"].clone();
    assert!(
        text.contains("\nconfig zone 'lanzone'\n\toption name 'lan'\n"),
        "{text}"
    );
    assert!(text.ends_with("\nconfig rule\n\toption name 'Allow-SSH'\n\toption dest_port '22'\n\tlist proto 'tcp'\n\n"), "{text}");
    assert!(!text.contains("config forwarding"));
    assert!(text.contains("\tlist network 'wan'\n\toption input 'DROP'\n"));
    assert_eq!(ok(&mut u, &mut s, &["changes"]), "");
    // export = package header + the committed text.
    assert_eq!(
        ok(&mut u, &mut s, &["export", "firewall"]),
        format!("package firewall\n{text}")
    );
    // Set to empty deletes; revert drops staged changes only.
    ok(&mut u, &mut s, &["set", "firewall.lanzone.input="]);
    assert_eq!(
        ok(&mut u, &mut s, &["changes"]),
        "-firewall.lanzone.input\n"
    );
    let o = run(&mut u, &mut s, &["get", "firewall.lanzone.input"]);
    assert_eq!(o.code, 1);
    ok(&mut u, &mut s, &["revert", "firewall.lanzone"]);
    assert_eq!(
        ok(&mut u, &mut s, &["get", "firewall.lanzone.input"]),
        "ACCEPT\n"
    );
}

#[test]
fn config_generate_and_odhcpd_defaults_produce_openwrts_files() {
    let mut s = store(&[("network", ""), ("dhcp", fixtures::DNSMASQ_DHCP)]);
    let mut u = Uci::new();
    for args in fixtures::CONFIG_GENERATE_NETWORK
        .iter()
        .chain(fixtures::ODHCPD_DEFAULTS_DHCP)
    {
        let mut a = vec!["-q"];
        a.extend_from_slice(args);
        let o = run(&mut u, &mut s, &a);
        // Only the deletes of sections that are not there yet fail, silently.
        assert!(o.code == 0 || args[0] == "delete", "{args:?}: {o:?}");
        assert_eq!(o.stderr, "");
    }
    assert_eq!(
        s.files["network"],
        "\nconfig interface 'loopback'\n\toption device 'lo'\n\toption proto 'static'\n\toption ipaddr '127.0.0.1'\n\toption netmask '255.0.0.0'\n\nconfig globals 'globals'\n\toption ula_prefix 'auto'\n\nconfig device\n\toption name 'br-lan'\n\toption type 'bridge'\n\tlist ports 'lan1'\n\tlist ports 'lan2'\n\nconfig interface 'lan'\n\toption device 'br-lan'\n\toption proto 'static'\n\toption ipaddr '192.168.1.1'\n\toption netmask '255.255.255.0'\n\toption ip6assign '60'\n\nconfig interface 'wan'\n\toption device 'eth1'\n\toption proto 'dhcp'\n\nconfig interface 'wan6'\n\toption device 'eth1'\n\toption proto 'dhcpv6'\n\n"
    );
    let dhcp = &s.files["dhcp"];
    assert!(dhcp.contains("\nconfig dhcp 'lan'\n\toption interface 'lan'\n\toption start '100'\n\toption limit '150'\n\toption leasetime '12h'\n\toption dhcpv4 'server'\n\toption dhcpv6 'server'\n\toption ra 'server'\n\toption ra_slaac '1'\n\tlist ra_flags 'managed-config'\n\tlist ra_flags 'other-config'\n"), "{dhcp}");
    assert!(dhcp.ends_with("\nconfig odhcpd 'odhcpd'\n\toption maindhcp '0'\n\toption leasefile '/tmp/hosts/odhcpd'\n\toption leasetrigger '/usr/sbin/odhcpd-update'\n\toption loglevel '4'\n\toption piofolder '/tmp/odhcpd-piofolder'\n\n"), "{dhcp}");
}
