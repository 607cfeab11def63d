//! `cargo xtask testbed build`: the dom0 disk image of the nested Xen test bed.
//!
//! Built from Debian bookworm packages (debootstrap minbase, then apt-get in a chroot)
//! into `<cache>/testbed/`, outside the clone. Two stages, each with its own stamp (a
//! hash of its recipe), so an edit to an asset only repacks the image:
//!
//! 1. `rootfs/`: debootstrap + the packages in [`PACKAGES`] (~5-10 min),
//!    then [`NET_PACKAGES`] installed on top (their own stamp, so adding one to that
//!    list costs an `apt-get install`, not a new debootstrap),
//! 2. `dom0.img` (ext4, `mkfs.ext4 -d`) with the assets of `xtask/testbed/` baked in,
//!    the Linux domU initramfs (busybox + xen-blkfront/xen-netfront), and `boot/` with
//!    Xen, the dom0 kernel and its initrd for QEMU's `-kernel`/`-initrd`.

use super::cpio::Cpio;
use crate::util::{cache_dir, require_tool, run, step, workspace_root, Error, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Bump to force a rebuild of everything.
const RECIPE_VERSION: u32 = 1;
const SUITE: &str = "bookworm";
const DEFAULT_MIRROR: &str = "http://deb.debian.org/debian";
const SECURITY_MIRROR: &str = "http://deb.debian.org/debian-security";

/// Installed into the dom0 root filesystem (with `--no-install-recommends`).
const PACKAGES: &[&str] = &[
    "xen-hypervisor-4.17-amd64",
    "xen-utils-4.17",
    "xen-utils-common",
    "xenstore-utils",
    "qemu-system-xen", // device model of HVM guests
    "seabios",
    "ipxe-qemu",
    "linux-image-amd64", // dom0 kernel, also the Linux domU's
    "initramfs-tools",
    "kmod",
    "iproute2",
    "bridge-utils",
    "busybox-static", // the Linux domU's userland
    "dosfstools",
    "e2fsprogs",
    "util-linux", // losetup
    "procps",
    "iperf3",
    "dnsmasq-base",
    "python3-minimal", // xtask/testbed/run.py (xen-utils pulls in python3 anyway)
    "python3",
    "xz-utils",
    "zstd",
];

/// Installed over the rootfs as a second step with its own stamp: the router
/// topology's tools (`xtask/testbed/net/`) in dom0 and, copied with their libraries
/// into the Linux router domU's initramfs by `run.py`, `nft` and `conntrack`.
const NET_PACKAGES: &[&str] = &[
    "nftables",        // nft: the Linux router domU's firewall (fw4's ruleset)
    "conntrack",       // conntrack -L on the Linux router
    "tcpdump",         // the capture in the `wan` namespace
    "socat",           // TCP/UDP clients with a fixed source port in the LAN namespaces
    "iputils-ping",    // ping -M do (DF) for the path-MTU check; busybox's ping has no -M
    "python3-scapy",   // the router differential's corpus (net/diff/corpus.py)
    "isc-dhcp-client", // dhclient -6: a DHCPv6 client in lan1 (busybox has no udhcpc6)
    "dmsetup", // a dm-delay disk that slows writes, so a crash lands inside a config replace
    "isc-dhcp-server", // dhcpd -6 in `wan`: DHCPv6 with prefix delegation for router-ipv6
    "linux-perf", // perf in dom0: where its CPU goes under each router (bench router)
    "netsniff-ng", // trafgen: a 64-byte packet generator beside the kernel's pktgen
];

/// Size of the dom0 root image (sparse; the packages take ~1.3 GB).
const IMAGE_SIZE: &str = "3G";

/// Files of `xtask/testbed/` baked into the image: (asset, path in the dom0 root).
/// The scenario runner (`run.py`) is not baked: it travels on the payload disk.
const BAKED: &[(&str, &str)] = &[("dom0-init", "sbin/testbed-init")];

/// The Linux domU initramfs: its `/init`, and the kernel modules it loads (with their
/// dependencies, in load order).
const DOMU_INIT: &str = "domu-init";
const DOMU_MODULES: &[&str] = &["xen-blkfront", "xen-netfront"];

/// The built test bed.
pub struct Bed {
    /// Xen, gunzipped (multiboot1 for QEMU's `-kernel`).
    pub xen: PathBuf,
    /// dom0 kernel and initrd.
    pub vmlinuz: PathBuf,
    pub initrd: PathBuf,
    /// dom0 root filesystem (ext4, used with snapshot=on).
    pub image: PathBuf,
}

fn dir() -> PathBuf {
    cache_dir().join("testbed")
}

fn mirror() -> String {
    std::env::var("XENLET_DEBIAN_MIRROR").unwrap_or_else(|_| DEFAULT_MIRROR.to_string())
}

/// Directory of the assets (`xtask/testbed/`).
pub fn assets_dir() -> PathBuf {
    workspace_root().join("xtask/testbed")
}

fn bed() -> Bed {
    let d = dir();
    Bed {
        xen: d.join("boot/xen"),
        vmlinuz: d.join("boot/vmlinuz"),
        initrd: d.join("boot/initrd.img"),
        image: d.join("dom0.img"),
    }
}

/// FNV-1a, 64 bit: enough to notice a changed recipe.
pub fn fnv1a(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.iter().chain(&[0xffu8]) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn rootfs_stamp() -> String {
    let v = RECIPE_VERSION.to_string();
    let pk = PACKAGES.join(" ");
    let m = mirror();
    fnv1a(&[v.as_bytes(), SUITE.as_bytes(), m.as_bytes(), pk.as_bytes()])
}

/// The stamp of the [`NET_PACKAGES`] step, over the rootfs it was installed in.
fn net_stamp(rootfs: &str) -> String {
    let pk = NET_PACKAGES.join(" ");
    fnv1a(&[rootfs.as_bytes(), pk.as_bytes()])
}

fn image_stamp(rootfs: &str) -> Result<String> {
    let mut owned: Vec<Vec<u8>> = vec![
        rootfs.as_bytes().to_vec(),
        net_stamp(rootfs).into_bytes(),
        IMAGE_SIZE.as_bytes().to_vec(),
        DOMU_MODULES.join(" ").into_bytes(),
    ];
    for (asset, dest) in BAKED.iter().chain(&[(DOMU_INIT, "init")]) {
        owned.push(format!("{asset}->{dest}").into_bytes());
        owned.push(read_asset(asset)?);
    }
    let parts: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    Ok(fnv1a(&parts))
}

fn read_asset(name: &str) -> Result<Vec<u8>> {
    let p = assets_dir().join(name);
    fs::read(&p).map_err(|e| Error::msg(format!("cannot read {}: {e}", p.display())))
}

fn stamp_ok(file: &Path, want: &str) -> bool {
    fs::read_to_string(file).ok().as_deref().map(str::trim) == Some(want)
}

/// The test bed, built first if missing or built from another recipe.
pub fn ensure(force: bool) -> Result<Bed> {
    let d = dir();
    let b = bed();
    let rs = rootfs_stamp();
    let ns = net_stamp(&rs);
    let is = image_stamp(&rs)?;
    let rootfs_ok = !force && stamp_ok(&d.join("rootfs.stamp"), &rs);
    let net_ok = rootfs_ok && stamp_ok(&d.join("rootfs-net.stamp"), &ns);
    let image_ok = net_ok
        && stamp_ok(&d.join("image.stamp"), &is)
        && [&b.xen, &b.vmlinuz, &b.initrd, &b.image]
            .iter()
            .all(|p| p.is_file());
    if image_ok {
        return Ok(b);
    }
    fs::create_dir_all(d.join("logs"))?;
    let t0 = Instant::now();
    step(&format!(
        "building the test bed in {} (Debian {SUITE}, Xen 4.17)",
        d.display()
    ));
    if !rootfs_ok {
        let _ = fs::remove_file(d.join("rootfs.stamp"));
        build_rootfs(&d)?;
        fs::write(d.join("rootfs.stamp"), &rs)?;
    } else if net_ok {
        step("rootfs is up to date (packages unchanged); repacking the image only");
    }
    if !net_ok {
        let _ = fs::remove_file(d.join("rootfs-net.stamp"));
        chroot_apt_install(&d.join("rootfs"), NET_PACKAGES, &d.join("logs/apt-net.log"))?;
        fs::write(d.join("rootfs-net.stamp"), &ns)?;
    }
    let _ = fs::remove_file(d.join("image.stamp"));
    build_image(&d, &b)?;
    fs::write(d.join("image.stamp"), &is)?;
    step(&format!(
        "test bed built in {:.0}s: {}",
        t0.elapsed().as_secs_f64(),
        b.image.display()
    ));
    Ok(b)
}

/// Unmounts what it mounted, also on errors.
struct Mounts(Vec<PathBuf>);

impl Mounts {
    fn bind(&mut self, what: &[&str], at: PathBuf) -> Result<()> {
        fs::create_dir_all(&at)?;
        run(Command::new("mount").args(what).arg(&at), "mount")?;
        self.0.push(at);
        Ok(())
    }
}

impl Drop for Mounts {
    fn drop(&mut self) {
        for m in self.0.iter().rev() {
            let _ = Command::new("umount").arg("-l").arg(m).status();
        }
    }
}

/// Runs `cmd` with its output going to `log`; on failure shows the log's tail.
fn run_logged(cmd: &mut Command, what: &str, log: &Path) -> Result<()> {
    let f = fs::File::create(log)?;
    cmd.stdout(f.try_clone()?).stderr(f);
    let r = run(cmd, what);
    if r.is_err() {
        let text = fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        eprintln!("--- last lines of {}:", log.display());
        for l in &lines[lines.len().saturating_sub(25)..] {
            eprintln!("    {l}");
        }
    }
    r
}

fn ensure_debootstrap() -> Result<()> {
    if crate::util::have_tool("debootstrap") {
        return Ok(());
    }
    require_tool("apt-get", "apt")?;
    step("installing debootstrap (apt-get install debootstrap)");
    let install = || {
        run(
            Command::new("apt-get")
                .args(["install", "-y", "-q", "debootstrap"])
                .env("DEBIAN_FRONTEND", "noninteractive"),
            "apt-get install debootstrap",
        )
    };
    if install().is_err() {
        run(
            Command::new("apt-get").args(["update", "-q"]),
            "apt-get update",
        )?;
        install()?;
    }
    Ok(())
}

fn build_rootfs(d: &Path) -> Result<()> {
    ensure_debootstrap()?;
    let root = d.join("rootfs");
    let logs = d.join("logs");
    if root.exists() {
        step("removing the old rootfs");
        // a crashed earlier build may have left mounts behind
        for m in ["dev/pts", "dev", "proc", "sys"] {
            let _ = Command::new("umount").arg("-l").arg(root.join(m)).status();
        }
        fs::remove_dir_all(&root)?;
    }
    let m = mirror();
    step(&format!(
        "debootstrap --variant=minbase {SUITE} ({m}); log: {}",
        logs.join("debootstrap.log").display()
    ));
    run_logged(
        Command::new("debootstrap")
            .args(["--variant=minbase", SUITE])
            .arg(&root)
            .arg(&m),
        "debootstrap",
        &logs.join("debootstrap.log"),
    )?;
    fs::write(
        root.join("etc/apt/sources.list"),
        format!(
            "deb {m} {SUITE} main\ndeb {m} {SUITE}-updates main\ndeb {SECURITY_MIRROR} {SUITE}-security main\n"
        ),
    )?;
    // no services are started inside the chroot
    let policy = root.join("usr/sbin/policy-rc.d");
    fs::write(&policy, "#!/bin/sh\nexit 101\n")?;
    set_mode(&policy, 0o755)?;
    chroot_apt_install(&root, PACKAGES, &logs.join("apt.log"))
}

/// `apt-get update` and `apt-get install --no-install-recommends PACKAGES` in the
/// chroot `root` (with /proc, /sys, /dev mounted for the time), logged to `log`.
fn chroot_apt_install(root: &Path, packages: &[&str], log: &Path) -> Result<()> {
    let mut mounts = Mounts(Vec::new());
    mounts.bind(&["-t", "proc", "proc"], root.join("proc"))?;
    mounts.bind(&["-t", "sysfs", "sys"], root.join("sys"))?;
    mounts.bind(&["--bind", "/dev"], root.join("dev"))?;
    mounts.bind(&["--bind", "/dev/pts"], root.join("dev/pts"))?;
    step(&format!(
        "apt-get install in the chroot ({} packages and their dependencies); log: {}",
        packages.len(),
        log.display()
    ));
    let script = format!(
        "apt-get update -q && apt-get install -y -q --no-install-recommends \
         -o Dpkg::Options::=--force-unsafe-io {} && apt-get clean",
        packages.join(" ")
    );
    run_logged(
        Command::new("chroot")
            .arg(root)
            .args(["/bin/sh", "-c", &script])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .env("LC_ALL", "C"),
        "apt-get install (in the dom0 chroot)",
        log,
    )?;
    drop(mounts);
    Ok(())
}

fn set_mode(p: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// The only kernel version in the rootfs.
fn kernel_version(root: &Path) -> Result<String> {
    let mut v: Vec<String> = fs::read_dir(root.join("lib/modules"))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v.pop()
        .ok_or_else(|| Error::msg("no kernel in the rootfs (lib/modules is empty)"))
}

fn build_image(d: &Path, b: &Bed) -> Result<()> {
    require_tool("mkfs.ext4", "e2fsprogs")?;
    require_tool("gzip", "gzip")?;
    let root = d.join("rootfs");
    let kver = kernel_version(&root)?;
    step(&format!(
        "baking assets and the Linux domU initramfs (kernel {kver})"
    ));
    fs::write(root.join("etc/hostname"), "testbed-dom0\n")?;
    fs::write(root.join("etc/fstab"), "/dev/vda / ext4 rw,noatime 0 1\n")?;
    for (asset, dest) in BAKED {
        let p = root.join(dest);
        fs::write(&p, read_asset(asset)?)?;
        set_mode(&p, 0o755)?;
    }
    let lab = root.join("testbed");
    fs::create_dir_all(&lab)?;
    fs::write(lab.join("domu-initrd.cpio"), domu_initramfs(&root, &kver)?)?;
    fs::copy(
        root.join(format!("boot/vmlinuz-{kver}")),
        lab.join("domu-vmlinuz"),
    )?;
    fs::write(lab.join("kernel-version"), format!("{kver}\n"))?;

    step("boot files for QEMU: xen (gunzipped), vmlinuz, initrd.img");
    fs::create_dir_all(d.join("boot"))?;
    let xen_gz = fs::read_dir(root.join("boot"))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            n.starts_with("xen-4.17") && n.ends_with(".gz")
        })
        .ok_or_else(|| Error::msg("no boot/xen-4.17*.gz in the rootfs"))?;
    let xen = Command::new("gzip")
        .arg("-dc")
        .arg(&xen_gz)
        .output()
        .map_err(|e| Error::msg(format!("gzip: {e}")))?;
    if !xen.status.success() || xen.stdout.is_empty() {
        return Err(Error::msg(format!("cannot gunzip {}", xen_gz.display())));
    }
    fs::write(&b.xen, &xen.stdout)?;
    fs::copy(root.join(format!("boot/vmlinuz-{kver}")), &b.vmlinuz)?;
    fs::copy(root.join(format!("boot/initrd.img-{kver}")), &b.initrd)?;

    step(&format!("mkfs.ext4 -d rootfs -> dom0.img ({IMAGE_SIZE})"));
    let tmp = d.join("dom0.img.tmp");
    let _ = fs::remove_file(&tmp);
    run_logged(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-L", "testbed-dom0", "-d"])
            .arg(&root)
            .arg(&tmp)
            .arg(IMAGE_SIZE),
        "mkfs.ext4",
        &d.join("logs/mkfs.log"),
    )?;
    fs::rename(&tmp, &b.image)?;
    Ok(())
}

/// A newc cpio (uncompressed; the kernel takes it as is) with busybox, the PV
/// front-end modules (decompressed) and `/init`.
fn domu_initramfs(root: &Path, kver: &str) -> Result<Vec<u8>> {
    let mdir = root.join("lib/modules").join(kver);
    let deps = fs::read_to_string(mdir.join("modules.dep"))?;
    let mut order: Vec<String> = Vec::new();
    for m in DOMU_MODULES {
        add_module(&deps, m, &mut order)?;
    }
    let mut c = Cpio::new();
    for dir in ["bin", "dev", "proc", "sys", "tmp", "lib", "lib/modules"] {
        c.dir(dir);
    }
    c.char_dev("dev/console", 5, 1);
    c.file("bin/busybox", &fs::read(root.join("bin/busybox"))?, 0o755);
    c.file("init", &read_asset(DOMU_INIT)?, 0o755);
    for (i, rel) in order.iter().enumerate() {
        let data = decompress(&mdir.join(rel))?;
        let base = Path::new(rel)
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        let base = base.split(".ko").next().unwrap_or("m");
        // numbered, so `for m in /lib/modules/*.ko` loads dependencies first
        c.file(&format!("lib/modules/{i:02}-{base}.ko"), &data, 0o644);
    }
    Ok(c.finish())
}

/// Appends module `name` (and first its dependencies) to `order`, as paths
/// relative to the modules directory.
fn add_module(deps: &str, name: &str, order: &mut Vec<String>) -> Result<()> {
    let wanted = name.replace('-', "_");
    let line = deps
        .lines()
        .find(|l| {
            let path = l.split(':').next().unwrap_or("");
            let base = path.rsplit('/').next().unwrap_or("");
            base.split(".ko").next().unwrap_or("").replace('-', "_") == wanted
        })
        .ok_or_else(|| Error::msg(format!("kernel module {name} not in modules.dep")))?;
    let (path, rest) = line.split_once(':').unwrap_or((line, ""));
    for dep in rest.split_whitespace().rev() {
        if !order.iter().any(|o| o == dep) {
            order.push(dep.to_string());
        }
    }
    if !order.iter().any(|o| o == path) {
        order.push(path.to_string());
    }
    Ok(())
}

fn decompress(p: &Path) -> Result<Vec<u8>> {
    let name = p.to_string_lossy();
    let tool = if name.ends_with(".xz") {
        Some(("xz", "xz-utils"))
    } else if name.ends_with(".zst") {
        Some(("zstd", "zstd"))
    } else if name.ends_with(".gz") {
        Some(("gzip", "gzip"))
    } else {
        None
    };
    let Some((tool, pkg)) = tool else {
        return Ok(fs::read(p)?);
    };
    require_tool(tool, pkg)?;
    let out = Command::new(tool)
        .args(["-dc"])
        .arg(p)
        .output()
        .map_err(|e| Error::msg(format!("{tool}: {e}")))?;
    if !out.status.success() {
        return Err(Error::msg(format!("{tool} -dc {name} failed")));
    }
    Ok(out.stdout)
}
