//! OpenWrt's default config files, unmodified, as test fixtures.
//!
//! - `IMAGE_*`: the files Xenlet's image ships, `xtask/rootfs/etc/config/*`.
//! - [`FIREWALL4`]: openwrt/firewall4 `root/etc/config/firewall` at
//!   b6e5157527d361f99ad52eaa6da273cb0f2dfd59 (the firewall package's default config).
//! - [`DNSMASQ_DHCP`]: openwrt/openwrt `package/network/services/dnsmasq/files/dhcp.conf`
//!   at 1a1f361123d678a963bec73dccccdf70986a0c34 (the dnsmasq package's default).
//! - [`CONFIG_GENERATE_NETWORK`] and friends: the `uci` commands that openwrt/openwrt
//!   `package/base-files/files/bin/config_generate` (at 012911c496dc6b37f290b0bbc8512cfa0cb819ee)
//!   and `package/network/services/odhcpd/files/odhcpd.defaults` (at
//!   06eb850e5ae4d78a7663b3c03da2981e7e8712f4) run on first boot, for a board whose
//!   `board.json` has a `lan` of ports `lan1 lan2` (static) and a `wan` on `eth1` (dhcp);
//!   the tests run them through [`crate::cli`] to produce what those scripts write.

pub const IMAGE_NETWORK: &str = include_str!("../../xtask/rootfs/etc/config/network");
pub const IMAGE_FIREWALL: &str = include_str!("../../xtask/rootfs/etc/config/firewall");
pub const IMAGE_DHCP: &str = include_str!("../../xtask/rootfs/etc/config/dhcp");
pub const IMAGE_SYSTEM: &str = include_str!("../../xtask/rootfs/etc/config/system");
pub const FIREWALL4: &str = include_str!("../fixtures/firewall4.firewall");
pub const DNSMASQ_DHCP: &str = include_str!("../fixtures/dnsmasq.dhcp.conf");

/// `generate_static_network` + `generate_network lan` + `generate_network wan` of
/// config_generate, argument vectors as the script passes them to `uci` (shell quoting
/// already removed; `uci -q batch` lines given one by one).
pub const CONFIG_GENERATE_NETWORK: &[&[&str]] = &[
    &["delete", "network.loopback"],
    &["set", "network.loopback=interface"],
    &["set", "network.loopback.device=lo"],
    &["set", "network.loopback.proto=static"],
    &["set", "network.loopback.ipaddr=127.0.0.1"],
    &["set", "network.loopback.netmask=255.0.0.0"],
    &["delete", "network.globals"],
    &["set", "network.globals=globals"],
    &["set", "network.globals.ula_prefix=auto"],
    // generate_network lan (ports "lan1 lan2", protocol static)
    &["add", "network", "device"],
    &["set", "network.@device[-1].name=br-lan"],
    &["set", "network.@device[-1].type=bridge"],
    &["add_list", "network.@device[-1].ports=lan1"],
    &["add_list", "network.@device[-1].ports=lan2"],
    &["delete", "network.lan"],
    &["set", "network.lan=interface"],
    &["set", "network.lan.type="],
    &["set", "network.lan.device=br-lan"],
    &["set", "network.lan.metric="],
    &["set", "network.lan.proto=none"],
    &["set", "network.lan.proto=static"],
    &["set", "network.lan.ipaddr=192.168.1.1"],
    &["set", "network.lan.netmask=255.255.255.0"],
    &["set", "network.lan.ip6assign=60"],
    // generate_network wan (device eth1, protocol dhcp)
    &["delete", "network.wan"],
    &["set", "network.wan=interface"],
    &["set", "network.wan.type="],
    &["set", "network.wan.device=eth1"],
    &["set", "network.wan.metric="],
    &["set", "network.wan.proto=none"],
    &["set", "network.wan.proto=dhcp"],
    &["delete", "network.wan6"],
    &["set", "network.wan6=interface"],
    &["set", "network.wan6.device=eth1"],
    &["set", "network.wan6.proto=dhcpv6"],
    &["commit"],
];

/// odhcpd.defaults on a board whose lan is static, with dnsmasq installed.
pub const ODHCPD_DEFAULTS_DHCP: &[&[&str]] = &[
    &["set", "dhcp.odhcpd=odhcpd"],
    &["set", "dhcp.odhcpd.maindhcp=0"],
    &["set", "dhcp.odhcpd.leasefile=/tmp/hosts/odhcpd"],
    &["set", "dhcp.odhcpd.leasetrigger=/usr/sbin/odhcpd-update"],
    &["set", "dhcp.odhcpd.loglevel=4"],
    &["set", "dhcp.odhcpd.piofolder=/tmp/odhcpd-piofolder"],
    &["set", "dhcp.lan.dhcpv4=server"],
    &["set", "dhcp.lan.dhcpv6=server"],
    &["set", "dhcp.lan.ra=server"],
    &["set", "dhcp.lan.ra_slaac=1"],
    &["add_list", "dhcp.lan.ra_flags=managed-config"],
    &["add_list", "dhcp.lan.ra_flags=other-config"],
    &["commit", "dhcp"],
];

/// Every fixture file: (package, text).
pub const FILES: &[(&str, &str)] = &[
    ("network", IMAGE_NETWORK),
    ("firewall", IMAGE_FIREWALL),
    ("dhcp", IMAGE_DHCP),
    ("system", IMAGE_SYSTEM),
    ("firewall", FIREWALL4),
    ("dhcp", DNSMASQ_DHCP),
];
