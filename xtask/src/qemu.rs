//! QEMU for plain-PC runs and tests: Debian bookworm's 7.2, unpacked, not installed.
//!
//! The nested Xen test bed needs exactly this QEMU (10.0.2's TCG mis-reports nested
//! CR reads to an SVM guest hypervisor), and it boots plain Xenlet just as well, so
//! there is one QEMU for everything. It is fetched with `apt-get download` and
//! unpacked with `dpkg-deb -x` into the cache, so the machine's own packages
//! (qemu-utils 10.0.2) stay untouched.

use crate::util::{cache_dir, output, require_tool, run, step, Error, Result};
use std::path::PathBuf;
use std::process::Command;

/// Debian packages unpacked, with the libraries QEMU 7.2 needs that a minimal bookworm
/// machine lacks.
const PACKAGES: &[&str] = &[
    "qemu-system-x86/bookworm",
    "qemu-system-common/bookworm",
    "qemu-system-data/bookworm",
    "seabios/bookworm",
    "ipxe-qemu/bookworm",
    "libcapstone4",
    "libfdt1",
    "libpmem1",
    "librdmacm1",
    "libibverbs1",
    "libslirp0",
    "libvdeplug2",
    "libndctl6",
    "libdaxctl1",
    "libnl-3-200",
    "libnl-route-3-200",
    "liburing2",
    "libaio1",
    "libgfapi0",
];

/// An unpacked QEMU and how to invoke it.
pub struct Qemu {
    pub bin: PathBuf,
    pub lib_path: String,
    pub module_dir: PathBuf,
    pub data_dirs: Vec<PathBuf>,
    pub version: String,
}

impl Qemu {
    fn at(root: PathBuf) -> Qemu {
        let lib_path = crate::util::unpacked_lib_path(&root);
        Qemu {
            bin: root.join("usr/bin/qemu-system-x86_64"),
            lib_path,
            module_dir: root.join("usr/lib/x86_64-linux-gnu/qemu"),
            data_dirs: vec![
                root.join("usr/share/qemu"),
                root.join("usr/share/seabios"),
                root.join("usr/lib/ipxe/qemu"),
            ],
            version: String::new(),
        }
    }

    /// A command running this QEMU with its libraries and firmware found.
    pub fn command(&self) -> Command {
        self.command_niced(0)
    }

    /// [`Qemu::command`] at niceness `nice` (through `nice(1)`; 0: as is). A negative
    /// one gives the emulated machine the CPU before the host's other work (builds):
    /// the benches' figures are the nested machine's, not the host's load. Without the
    /// right to raise its priority `nice` says so and runs QEMU anyway.
    pub fn command_niced(&self, nice: i32) -> Command {
        let mut c = if nice == 0 {
            Command::new(&self.bin)
        } else {
            let mut c = Command::new("nice");
            c.arg("-n").arg(nice.to_string()).arg(&self.bin);
            c
        };
        c.env("LD_LIBRARY_PATH", &self.lib_path)
            .env("QEMU_MODULE_DIR", &self.module_dir);
        for d in &self.data_dirs {
            c.arg("-L").arg(d);
        }
        c
    }

    /// Passes this QEMU to the boot tests (tests/src/lib.rs reads these).
    pub fn export_env(&self, cmd: &mut Command) {
        let dirs: Vec<String> = self
            .data_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        cmd.env("XENLET_QEMU", &self.bin)
            .env("XENLET_QEMU_LD_LIBRARY_PATH", &self.lib_path)
            .env("XENLET_QEMU_MODULE_DIR", &self.module_dir)
            .env("XENLET_QEMU_DATADIRS", dirs.join(":"));
    }

    fn probe_version(&mut self) -> Result<()> {
        let mut c = Command::new(&self.bin);
        c.env("LD_LIBRARY_PATH", &self.lib_path).arg("--version");
        let v = output(&mut c, "qemu-system-x86_64 --version")?;
        self.version = v
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("QEMU emulator version ")
            .to_string();
        if !self.version.starts_with("7.2") {
            return Err(Error::msg(format!(
                "expected QEMU 7.2, found {}",
                self.version
            )));
        }
        Ok(())
    }
}

fn stamp() -> String {
    PACKAGES.join(" ")
}

/// The unpacked QEMU 7.2, fetching it first if needed.
pub fn ensure() -> Result<Qemu> {
    let dir = cache_dir().join("qemu72");
    let root = dir.join("root");
    let stamp_file = dir.join("packages.stamp");
    let mut q = Qemu::at(root.clone());
    let cached = std::fs::read_to_string(&stamp_file).ok().as_deref() == Some(stamp().as_str());
    if cached && q.bin.is_file() && q.probe_version().is_ok() {
        return Ok(q);
    }
    require_tool("apt-get", "apt")?;
    require_tool("dpkg-deb", "dpkg")?;
    step("fetching QEMU 7.2 from Debian bookworm (apt-get download, unpacked into the cache)");
    let debs = dir.join("debs");
    let _ = std::fs::remove_dir_all(&debs);
    std::fs::create_dir_all(&debs)?;
    let download = |debs: &PathBuf| {
        let mut c = Command::new("apt-get");
        c.current_dir(debs).arg("download").args(PACKAGES);
        run(&mut c, "apt-get download (QEMU 7.2 and its libraries)")
    };
    if download(&debs).is_err() {
        step("apt-get download failed; refreshing the package lists (apt-get update) and retrying");
        run(
            Command::new("apt-get").args(["update", "-q"]),
            "apt-get update",
        )?;
        download(&debs)?;
    }
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root)?;
    for entry in std::fs::read_dir(&debs)? {
        let p = entry?.path();
        if p.extension().is_some_and(|e| e == "deb") {
            run(
                Command::new("dpkg-deb").arg("-x").arg(&p).arg(&root),
                "dpkg-deb -x",
            )?;
        }
    }
    let mut ldd = Command::new("ldd");
    ldd.env("LD_LIBRARY_PATH", &q.lib_path).arg(&q.bin);
    let libs = output(&mut ldd, "ldd qemu-system-x86_64")?;
    let missing: Vec<&str> = libs
        .lines()
        .filter(|l| l.contains("not found"))
        .map(str::trim)
        .collect();
    if !missing.is_empty() {
        return Err(Error::msg(format!(
            "QEMU 7.2 needs libraries this machine lacks: {}; install them with apt-get",
            missing.join(", ")
        )));
    }
    q.probe_version()?;
    std::fs::write(&stamp_file, stamp())?;
    let _ = std::fs::remove_dir_all(&debs);
    Ok(q)
}

/// Whether KVM can be used (a plain guest, no Xen emulation).
pub fn kvm_usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

/// Machine, accelerator, CPU and memory for a plain-PC boot.
pub fn machine_args(kvm: bool) -> Vec<String> {
    let accel: &[&str] = if kvm {
        &["-accel", "kvm", "-cpu", "host"]
    } else {
        &["-accel", "tcg", "-cpu", "qemu64"]
    };
    let mut v: Vec<String> = accel.iter().map(|s| s.to_string()).collect();
    v.extend(
        ["-machine", "pc", "-m", "128M", "-no-reboot"]
            .iter()
            .map(|s| s.to_string()),
    );
    v
}
