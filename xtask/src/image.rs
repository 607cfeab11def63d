//! `cargo xtask image`: the bootable raw disk image `target/xenlet/xenlet.img`.
//!
//! Laid out like OpenWrt's x86 "combined" image: an MBR partition table, GRUB 2 for
//! i386-pc as the boot loader, and the kernel in a partition. GRUB boots the kernel
//! through its multiboot2 header (`multiboot2 /boot/xenlet.elf`).
//!
//! ```text
//! sector 0          MBR: boot.img's first 440 bytes, disk signature, partition table, 55 AA
//! sectors 1..=N     core.img (diskboot.img + lzma decompressor + GRUB kernel + modules)
//! ...               zero up to 1 MiB
//! sector 2048..     partition 1 (type 0x83, active): the ext4 root filesystem with
//!                   /boot/xenlet.elf, /boot/grub/grub.cfg and /etc/config/
//! ```
//!
//! It is built with no loop device, mount or root privilege. This is what
//! `grub-install` + `grub-bios-setup` would do on a real disk, done on plain files:
//! - `grub-mkimage -O i386-pc` makes core.img with the modules built in (nothing is
//!   loaded from the partition) and an early config that puts GRUB on the serial
//!   console. The prefix `(,msdos1)/boot/grub` means "partition 1 of the disk the
//!   BIOS booted from"; GRUB sets `root` from it and normal mode reads
//!   `$prefix/grub.cfg`.
//! - boot.img loads one sector from `kernel_sector` (offset 0x5c, default 1) to 0x8000
//!   and jumps to it: that is diskboot.img, the first sector of core.img. diskboot's
//!   blocklist at the end of its sector says "from sector 2, N-1 sectors"
//!   (grub-mkimage's default), so core.img written contiguously from sector 1 needs no
//!   patching. Both defaults are checked before they are relied on.
//! - Like grub-bios-setup on a hard disk, the two-byte jump at boot.img offset 0x66 is
//!   replaced by NOPs, which enables the workaround for BIOSes passing a bad boot
//!   drive in DL.
//! - The partition's ext4 file system is made in a separate file with `mke2fs -d`
//!   (e2fsprogs) from the kernel, the GRUB config and `xtask/rootfs/` (OpenWrt's
//!   `/etc/config` defaults), and copied to 1 MiB. Xenlet mounts it read-write at `/`.
//!
//! GRUB comes from Debian bookworm's `grub-pc-bin` and `grub-common`, fetched with
//! `apt-get download` and unpacked with `dpkg-deb -x` into `~/.cache/xenlet/grub`;
//! the machine's own GRUB (if any) is not used or touched.

use crate::util::{cache_dir, output, require_tool, run, step, workspace_root, Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

const SECTOR: usize = 512;
const MIB: usize = 1024 * 1024;
/// Default image size; it grows in 8 MiB steps if the kernel ever needs it.
const IMAGE_MIB: usize = 16;
/// First sector of partition 1: 1 MiB, as fdisk and OpenWrt align it. The sectors
/// before it hold the MBR and core.img.
pub const PART_START_LBA: u32 = 2048;
/// MBR partition type of partition 1: Linux.
pub const PART_TYPE_LINUX: u8 = 0x83;
/// MBR disk signature (offset 0x1b8): "XENL".
const DISK_SIGNATURE: u32 = u32::from_le_bytes(*b"XENL");

/// Debian packages with GRUB for i386-pc (the images and modules) and grub-mkimage.
const GRUB_PACKAGES: &[&str] = &["grub-pc-bin/bookworm", "grub-common/bookworm"];
/// Libraries grub-mkimage links against, with their bookworm packages, fetched into
/// the cache only when the machine lacks them.
const GRUB_LIBRARIES: &[(&str, &str)] = &[
    ("libdevmapper.so.1.02.1", "libdevmapper1.02.1"),
    ("liblzma.so.5", "liblzma5"),
    ("libselinux.so.1", "libselinux1"),
    ("libudev.so.1", "libudev1"),
    ("libpcre2-8.so.0", "libpcre2-8-0"),
];
/// Modules built into core.img (grub-mkimage adds their dependencies).
const GRUB_MODULES: &[&str] = &[
    "biosdisk",
    "part_msdos",
    "ext2",
    "multiboot2",
    "normal",
    "configfile",
    "serial",
    "terminal",
    "echo",
    "boot",
    "test",
    "ls",
    "cat",
    "halt",
    "reboot",
];
/// Where core.img finds grub.cfg: partition 1 of the boot disk.
const GRUB_PREFIX: &str = "(,msdos1)/boot/grub";

/// Embedded in core.img and run before normal mode: GRUB's own messages (and its
/// rescue shell, if grub.cfg cannot be read) go to the serial console too.
const EARLY_CFG: &str = "\
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
";

/// `/boot/grub/grub.cfg` on the partition.
const GRUB_CFG: &str = "\
# Xenlet: GRUB 2 on the serial console (COM1, 115200 8N1) and the VGA console.
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
set timeout=1
set default=0

menuentry \"Xenlet\" {
    multiboot2 /boot/xenlet.elf
    boot
}
";

// ---- GRUB from Debian, unpacked into the cache ----

/// An unpacked GRUB: grub-mkimage and the i386-pc images and modules.
struct Grub {
    mkimage: PathBuf,
    /// `usr/lib/grub/i386-pc`: boot.img, diskboot.img, kernel.img, *.mod.
    platform_dir: PathBuf,
    lib_path: String,
    version: String,
}

impl Grub {
    fn at(root: &Path) -> Grub {
        let lib_path = crate::util::unpacked_lib_path(root);
        Grub {
            mkimage: root.join("usr/bin/grub-mkimage"),
            platform_dir: root.join("usr/lib/grub/i386-pc"),
            lib_path,
            version: String::new(),
        }
    }

    fn mkimage(&self) -> Command {
        let mut c = Command::new(&self.mkimage);
        c.env("LD_LIBRARY_PATH", &self.lib_path);
        c
    }

    fn probe(&mut self) -> Result<()> {
        if !self.platform_dir.join("boot.img").is_file() {
            return Err(Error::msg("GRUB's i386-pc images are missing"));
        }
        let v = output(self.mkimage().arg("--version"), "grub-mkimage --version")?;
        // "grub-mkimage (GRUB) 2.06-13+deb12u2"
        self.version = v.split_whitespace().last().unwrap_or("?").to_string();
        Ok(())
    }

    /// Libraries the dynamic loader cannot find for grub-mkimage.
    fn missing_libraries(&self) -> Result<Vec<String>> {
        let mut ldd = Command::new("ldd");
        ldd.env("LD_LIBRARY_PATH", &self.lib_path)
            .arg(&self.mkimage);
        let libs = output(&mut ldd, "ldd grub-mkimage")?;
        Ok(libs
            .lines()
            .filter(|l| l.contains("not found"))
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect())
    }
}

/// Names the packages a GRUB tree was unpacked from; written last, so a tree
/// without it is incomplete.
const STAMP_FILE: &str = "xenlet-packages.stamp";

fn grub_stamp() -> String {
    GRUB_PACKAGES.join(" ")
}

/// The GRUB tree at `root` if it is complete and grub-mkimage runs.
fn usable_grub(root: &Path) -> Option<Grub> {
    let stamp = std::fs::read_to_string(root.join(STAMP_FILE)).ok()?;
    let mut g = Grub::at(root);
    (stamp == grub_stamp() && g.probe().is_ok()).then_some(g)
}

/// Downloads Debian packages into `debs` (refreshing the package lists once if the
/// first try fails) and unpacks them into `root`.
fn fetch_debs(packages: &[&str], debs: &Path, root: &Path, what: &str) -> Result<()> {
    let _ = std::fs::remove_dir_all(debs);
    std::fs::create_dir_all(debs)?;
    let download = || {
        let mut c = Command::new("apt-get");
        c.current_dir(debs).args(["download", "-q"]).args(packages);
        run(&mut c, &format!("apt-get download ({what})"))
    };
    if download().is_err() {
        step("apt-get download failed; refreshing the package lists (apt-get update) and retrying");
        run(
            Command::new("apt-get").args(["update", "-q"]),
            "apt-get update",
        )?;
        download()?;
    }
    std::fs::create_dir_all(root)?;
    for entry in std::fs::read_dir(debs)? {
        let p = entry?.path();
        if p.extension().is_some_and(|e| e == "deb") {
            run(
                Command::new("dpkg-deb").arg("-x").arg(&p).arg(root),
                "dpkg-deb -x",
            )?;
        }
    }
    let _ = std::fs::remove_dir_all(debs);
    Ok(())
}

/// The unpacked GRUB, fetching it first if needed.
///
/// Several xtasks may run at once (tests, the test bed): each unpacks into its own
/// directory and renames it into place; whoever comes second uses the winner's tree.
fn ensure_grub() -> Result<Grub> {
    let dir = cache_dir().join("grub");
    let root = dir.join("root");
    if let Some(g) = usable_grub(&root) {
        return Ok(g);
    }
    require_tool("apt-get", "apt")?;
    require_tool("dpkg-deb", "dpkg")?;
    require_tool("ldd", "libc-bin")?;
    step("fetching GRUB 2 for i386-pc from Debian bookworm (grub-pc-bin, grub-common; apt-get download, unpacked into the cache)");
    let tmp = TempDir(dir.join(format!(".new-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&tmp.0);
    let new_root = tmp.0.join("root");
    let debs = tmp.0.join("debs");
    fetch_debs(GRUB_PACKAGES, &debs, &new_root, "GRUB")?;
    let g = Grub::at(&new_root);
    let missing = g.missing_libraries()?;
    if !missing.is_empty() {
        let mut packages = Vec::new();
        for lib in &missing {
            match GRUB_LIBRARIES.iter().find(|(so, _)| so == lib) {
                Some((_, pkg)) => packages.push(*pkg),
                None => {
                    return Err(Error::msg(format!(
                        "grub-mkimage needs {lib}, which this machine lacks; install the Debian package that provides it (apt-file search {lib})"
                    )))
                }
            }
        }
        step(&format!(
            "fetching libraries for grub-mkimage: {}",
            packages.join(" ")
        ));
        fetch_debs(&packages, &debs, &new_root, "grub-mkimage's libraries")?;
        let still = g.missing_libraries()?;
        if !still.is_empty() {
            return Err(Error::msg(format!(
                "grub-mkimage still lacks libraries: {}",
                still.join(", ")
            )));
        }
    }
    std::fs::write(new_root.join(STAMP_FILE), grub_stamp())?;
    if root.exists() && usable_grub(&root).is_none() {
        // A stale or broken tree: move it aside, then delete it.
        let old = TempDir(dir.join(format!(".old-{}", std::process::id())));
        let _ = std::fs::rename(&root, &old.0);
    }
    if let Err(e) = std::fs::rename(&new_root, &root) {
        // Another xtask may have put its tree in place first.
        if usable_grub(&root).is_none() {
            return Err(Error::msg(format!(
                "cannot move GRUB into {}: {e}",
                root.display()
            )));
        }
    }
    usable_grub(&root).ok_or_else(|| Error::msg("the unpacked grub-mkimage does not run"))
}

/// A directory deleted when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Finds a program on PATH or in the sbin directories (not on a normal user's PATH
/// in Debian), naming the Debian package when it is missing.
fn find_tool(tool: &str, package: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::msg(format!(
                "'{tool}' not found: install the Debian package '{package}' (apt-get install {package})"
            ))
        })
}

// ---- building ----

/// Builds the kernel (release) and the disk image; returns the image's path,
/// `target/xenlet/xenlet.img`.
pub fn build() -> Result<PathBuf> {
    let kernel = crate::build_kernel(crate::Profile::Release)?;
    let out = workspace_root().join("target/xenlet/xenlet.img");
    build_from(&kernel, &out)?;
    Ok(out)
}

/// Builds the disk image at `out` with `kernel` as /boot/xenlet.elf.
pub fn build_from(kernel: &Path, out: &Path) -> Result<()> {
    let mke2fs = find_tool("mke2fs", "e2fsprogs")?;
    let grub = ensure_grub()?;
    // A work directory of this process's own: other xtasks may build at the same time.
    let out_dir = out.parent().unwrap_or(Path::new("."));
    let work_dir = TempDir(out_dir.join(format!(".image-{}", std::process::id())));
    let work = &work_dir.0;
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)?;

    // core.img
    let early = work.join("early.cfg");
    std::fs::write(&early, EARLY_CFG)?;
    let core_path = work.join("core.img");
    run(
        grub.mkimage()
            .args(["-O", "i386-pc", "-d"])
            .arg(&grub.platform_dir)
            .arg("-o")
            .arg(&core_path)
            .arg("-c")
            .arg(&early)
            .args(["-p", GRUB_PREFIX])
            .args(GRUB_MODULES),
        "grub-mkimage",
    )?;
    let core = std::fs::read(&core_path)?;
    let boot = std::fs::read(grub.platform_dir.join("boot.img"))?;
    step(&format!(
        "GRUB {} core.img: {} KiB, modules {}",
        grub.version,
        core.len().div_ceil(1024),
        GRUB_MODULES.join(" ")
    ));

    // The partition's file system.
    let kernel_len = usize::try_from(std::fs::metadata(kernel)?.len())
        .map_err(|_| Error::msg("kernel too large"))?;
    let image_bytes = image_size(kernel_len);
    let fs_bytes = image_bytes - PART_START_LBA as usize * SECTOR;
    let tree = work.join("fs");
    std::fs::create_dir_all(tree.join("boot/grub"))?;
    std::fs::copy(kernel, tree.join("boot/xenlet.elf"))?;
    std::fs::write(tree.join("boot/grub/grub.cfg"), GRUB_CFG)?;
    // OpenWrt's shape: the configuration in /etc/config, and the mount points.
    copy_tree(&workspace_root().join("xtask/rootfs"), &tree)?;
    for d in ["tmp", "mnt"] {
        std::fs::create_dir_all(tree.join(d))?;
    }
    let fs_path = work.join("root.ext4");
    std::fs::File::create(&fs_path)?.set_len(fs_bytes as u64)?;
    run(
        Command::new(&mke2fs)
            .args(["-q", "-F", "-t", "ext4", "-L", "rootfs", "-m", "0"])
            .args(["-E", "root_owner=0:0", "-d"])
            .arg(&tree)
            .arg(&fs_path),
        "mke2fs -t ext4 -d (root partition)",
    )?;
    let fs = std::fs::read(&fs_path)?;
    step(&format!(
        "ext4 root partition: {} MiB with /boot/xenlet.elf ({} KiB), /boot/grub/grub.cfg, /etc/config/",
        fs.len() / MIB,
        kernel_len.div_ceil(1024)
    ));

    // The image: written in the work directory beside the target, then renamed into
    // place, so nothing ever sees half an image.
    let img = assemble(&boot, &core, &fs, image_bytes)?;
    check_layout(&img)?;
    let tmp = work.join("xenlet.img");
    std::fs::write(&tmp, &img)?;
    std::fs::rename(&tmp, out)?;
    let core_sectors = core.len().div_ceil(SECTOR);
    step(&format!(
        "image {} ({} MiB): MBR at 0, core.img at sectors 1-{} (0x200-{:#x}), partition 1 ext4 at sector {} ({:#x}), {} MiB",
        out.display(),
        image_bytes / MIB,
        core_sectors,
        (core_sectors + 1) * SECTOR - 1,
        PART_START_LBA,
        PART_START_LBA as usize * SECTOR,
        fs.len() / MIB,
    ));
    Ok(())
}

/// Copies the files under `from` into `to` (directories made as needed).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let dst = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            std::fs::create_dir_all(&dst)?;
            copy_tree(&e.path(), &dst)?;
        } else {
            std::fs::copy(e.path(), &dst)?;
        }
    }
    Ok(())
}

/// Image size for a kernel of `kernel_len` bytes: 16 MiB, or more in 8 MiB steps
/// if the kernel plus room for the file system's own blocks would not fit.
fn image_size(kernel_len: usize) -> usize {
    let need = PART_START_LBA as usize * SECTOR + kernel_len + 4 * MIB;
    (IMAGE_MIB * MIB).max(need.div_ceil(8 * MIB) * 8 * MIB)
}

// ---- layout (pure functions, host-tested) ----

/// One MBR partition table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub bootable: bool,
    pub kind: u8,
    pub start_lba: u32,
    pub sectors: u32,
}

/// Offsets in boot.img (grub-core/boot/i386/pc/boot.S, include/grub/i386/pc/boot.h).
const BOOT_KERNEL_SECTOR: usize = 0x5c;
const BOOT_DRIVE: usize = 0x64;
const BOOT_DRIVE_CHECK: usize = 0x66;
/// Bytes of boot code that fit before the disk signature.
const MBR_CODE_BYTES: usize = 440;
const MBR_SIGNATURE: usize = 0x1b8;
const MBR_TABLE: usize = 0x1be;
/// diskboot.img's first blocklist entry (start u64, len u16, segment u16) ends its
/// sector.
const DISKBOOT_BLOCKLIST: usize = SECTOR - 12;

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The CHS address of `lba` for the usual 255 heads × 63 sectors geometry, or the
/// "use LBA" marker (1023/254/63) beyond what CHS can address.
fn chs(lba: u32) -> [u8; 3] {
    let (heads, spt) = (255u32, 63u32);
    let c = lba / (heads * spt);
    if c > 1023 {
        return [0xfe, 0xff, 0xff];
    }
    let h = (lba / spt) % heads;
    let s = lba % spt + 1;
    [h as u8, (s as u8) | (((c >> 8) as u8) << 6), c as u8]
}

/// Encodes sector 0: `boot_code` (at most 440 bytes), the disk signature, up to four
/// partitions and the 0x55AA boot signature.
pub fn encode_mbr(boot_code: &[u8], disk_signature: u32, parts: &[Partition]) -> Result<[u8; 512]> {
    if boot_code.len() > MBR_CODE_BYTES {
        return Err(Error::msg("MBR boot code is longer than 440 bytes"));
    }
    if parts.len() > 4 {
        return Err(Error::msg("an MBR holds at most four partitions"));
    }
    let mut s = [0u8; 512];
    s[..boot_code.len()].copy_from_slice(boot_code);
    s[MBR_SIGNATURE..MBR_SIGNATURE + 4].copy_from_slice(&disk_signature.to_le_bytes());
    for (i, p) in parts.iter().enumerate() {
        if p.sectors == 0 || p.start_lba == 0 {
            return Err(Error::msg(format!(
                "partition {} is empty or at sector 0",
                i + 1
            )));
        }
        let last = p
            .start_lba
            .checked_add(p.sectors - 1)
            .ok_or_else(|| Error::msg("partition past 2 TiB"))?;
        let e = &mut s[MBR_TABLE + 16 * i..MBR_TABLE + 16 * (i + 1)];
        e[0] = if p.bootable { 0x80 } else { 0 };
        e[1..4].copy_from_slice(&chs(p.start_lba));
        e[4] = p.kind;
        e[5..8].copy_from_slice(&chs(last));
        e[8..12].copy_from_slice(&p.start_lba.to_le_bytes());
        e[12..16].copy_from_slice(&p.sectors.to_le_bytes());
    }
    s[510] = 0x55;
    s[511] = 0xaa;
    Ok(s)
}

/// Reads the partition table of sector 0 (non-empty entries only); checks the 0x55AA
/// signature.
pub fn parse_mbr(sector: &[u8]) -> Result<Vec<Partition>> {
    if sector.len() < SECTOR || sector[510..512] != [0x55, 0xaa] {
        return Err(Error::msg("no 0x55AA boot signature in sector 0"));
    }
    Ok((0..4)
        .map(|i| &sector[MBR_TABLE + 16 * i..MBR_TABLE + 16 * (i + 1)])
        .filter(|e| e[4] != 0)
        .map(|e| Partition {
            bootable: e[0] == 0x80,
            kind: e[4],
            start_lba: le_u32(e, 8),
            sectors: le_u32(e, 12),
        })
        .collect())
}

/// Lays out the disk image: MBR from `boot_img` with the partition table, `core_img`
/// from sector 1, `fs` (the partition's file system) at [`PART_START_LBA`], zeros
/// elsewhere, `total` bytes in all.
pub fn assemble(boot_img: &[u8], core_img: &[u8], fs: &[u8], total: usize) -> Result<Vec<u8>> {
    if boot_img.len() != SECTOR {
        return Err(Error::msg("boot.img is not one sector"));
    }
    // boot.img loads core.img's first sector from `kernel_sector` and honours the
    // BIOS's boot drive (0xff): both as grub-mkimage leaves them.
    if le_u64(boot_img, BOOT_KERNEL_SECTOR) != 1 || boot_img[BOOT_DRIVE] != 0xff {
        return Err(Error::msg(
            "boot.img does not load core.img from sector 1 of the boot drive",
        ));
    }
    if boot_img[BOOT_DRIVE_CHECK] != 0xeb {
        return Err(Error::msg("boot.img has no drive-check jump at 0x66"));
    }
    let core_sectors = core_img.len().div_ceil(SECTOR);
    if core_sectors < 2 {
        return Err(Error::msg("core.img is too small"));
    }
    // diskboot's default blocklist: the rest of core.img from sector 2, loaded to
    // segment 0x820 (0x8200, right after diskboot itself at 0x8000).
    let start = le_u64(core_img, DISKBOOT_BLOCKLIST);
    let len = le_u16(core_img, DISKBOOT_BLOCKLIST + 8);
    let seg = le_u16(core_img, DISKBOOT_BLOCKLIST + 10);
    if start != 2 || usize::from(len) != core_sectors - 1 || seg != 0x820 {
        return Err(Error::msg(format!(
            "core.img's blocklist is {len} sectors from {start} to segment {seg:#x}, \
             expected {} from 2 to 0x820",
            core_sectors - 1
        )));
    }
    if 1 + core_sectors > PART_START_LBA as usize {
        return Err(Error::msg(format!(
            "core.img ({core_sectors} sectors) does not fit before the partition at sector {PART_START_LBA}"
        )));
    }
    let part_at = PART_START_LBA as usize * SECTOR;
    if fs.len() / SECTOR * SECTOR != fs.len() || part_at + fs.len() != total {
        return Err(Error::msg(format!(
            "the file system ({} bytes) must fill the image from {part_at:#x} to {total:#x} in whole sectors",
            fs.len()
        )));
    }
    let sectors = u32::try_from(fs.len() / SECTOR).map_err(|_| Error::msg("image too large"))?;
    let mut code = boot_img[..MBR_CODE_BYTES].to_vec();
    // What grub-bios-setup does for a hard disk: NOP the jump over the check that
    // forces DL to 0x80 when a buggy BIOS passes a floppy drive number.
    code[BOOT_DRIVE_CHECK] = 0x90;
    code[BOOT_DRIVE_CHECK + 1] = 0x90;
    let mbr = encode_mbr(
        &code,
        DISK_SIGNATURE,
        &[Partition {
            bootable: true,
            kind: PART_TYPE_LINUX,
            start_lba: PART_START_LBA,
            sectors,
        }],
    )?;
    let mut img = vec![0u8; total];
    img[..SECTOR].copy_from_slice(&mbr);
    img[SECTOR..SECTOR + core_img.len()].copy_from_slice(core_img);
    img[part_at..].copy_from_slice(fs);
    Ok(img)
}

/// Checks a finished image: boot signature, one active Linux partition at 1 MiB
/// filling the image, boot.img pointing at sector 1, an ext2 superblock in the
/// partition.
pub fn check_layout(img: &[u8]) -> Result<()> {
    let parts = parse_mbr(img)?;
    let expect = Partition {
        bootable: true,
        kind: PART_TYPE_LINUX,
        start_lba: PART_START_LBA,
        sectors: u32::try_from(img.len() / SECTOR)
            .unwrap_or(0)
            .saturating_sub(PART_START_LBA),
    };
    if parts != [expect] {
        return Err(Error::msg(format!(
            "partition table {parts:?}, expected [{expect:?}]"
        )));
    }
    if le_u64(img, BOOT_KERNEL_SECTOR) != 1 {
        return Err(Error::msg("the MBR does not load core.img from sector 1"));
    }
    // ext2 superblock at 1024 bytes into the partition; s_magic at offset 56.
    let sb = PART_START_LBA as usize * SECTOR + 1024;
    if img.len() < sb + 58 || le_u16(img, sb + 56) != 0xef53 {
        return Err(Error::msg("no ext2 superblock in partition 1"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A boot.img with GRUB's defaults where assemble() looks.
    fn fake_boot_img() -> Vec<u8> {
        let mut b = vec![0u8; 512];
        b[0] = 0xeb;
        b[BOOT_KERNEL_SECTOR] = 1;
        b[BOOT_DRIVE] = 0xff;
        b[BOOT_DRIVE_CHECK] = 0xeb;
        b[BOOT_DRIVE_CHECK + 1] = 0x05;
        b[0x1c0] = 0x99; // floppy code in the partition table area: overwritten
        b[510] = 0x55;
        b[511] = 0xaa;
        b
    }

    /// A core.img of `sectors` sectors with grub-mkimage's default blocklist.
    fn fake_core_img(sectors: usize) -> Vec<u8> {
        let mut c = vec![0xc0u8; sectors * SECTOR - 100];
        c[DISKBOOT_BLOCKLIST..DISKBOOT_BLOCKLIST + 8].copy_from_slice(&2u64.to_le_bytes());
        c[DISKBOOT_BLOCKLIST + 8..DISKBOOT_BLOCKLIST + 10]
            .copy_from_slice(&((sectors - 1) as u16).to_le_bytes());
        c[DISKBOOT_BLOCKLIST + 10..DISKBOOT_BLOCKLIST + 12]
            .copy_from_slice(&0x820u16.to_le_bytes());
        c
    }

    fn fake_ext2(bytes: usize) -> Vec<u8> {
        let mut fs = vec![0u8; bytes];
        fs[1024 + 56..1024 + 58].copy_from_slice(&0xef53u16.to_le_bytes());
        fs
    }

    #[test]
    fn mbr_has_boot_signature_and_one_linux_partition_at_1mib() {
        let code = [0xfau8; 440];
        let p = Partition {
            bootable: true,
            kind: PART_TYPE_LINUX,
            start_lba: 2048,
            sectors: 30720,
        };
        let s = encode_mbr(&code, 0x1234_5678, &[p]).unwrap();
        assert_eq!(&s[510..], &[0x55, 0xaa]);
        assert_eq!(&s[..440], &code[..]);
        assert_eq!(&s[0x1b8..0x1bc], &0x1234_5678u32.to_le_bytes());
        // entry 1: active, CHS 0/32/33 .. 2/10/8, type 0x83, LBA 2048, 30720 sectors
        assert_eq!(
            &s[0x1be..0x1ce],
            &[0x80, 0x20, 0x21, 0x00, 0x83, 0x0a, 0x08, 0x02, 0x00, 0x08, 0, 0, 0x00, 0x78, 0, 0]
        );
        assert!(s[0x1ce..0x1fe].iter().all(|&b| b == 0), "entries 2-4 empty");
        assert_eq!(parse_mbr(&s).unwrap(), vec![p]);
    }

    #[test]
    fn chs_saturates_beyond_1024_cylinders() {
        assert_eq!(chs(0), [0, 1, 0]);
        assert_eq!(chs(63), [1, 1, 0]);
        // cylinder 300: its high bits go to the top of the sector byte
        assert_eq!(chs(300 * 255 * 63), [0, 0x41, 0x2c]);
        assert_eq!(chs(1024 * 255 * 63), [0xfe, 0xff, 0xff]);
    }

    #[test]
    fn bad_tables_are_refused() {
        assert!(encode_mbr(&[0; 441], 0, &[]).is_err());
        let p = Partition {
            bootable: false,
            kind: 0x83,
            start_lba: 1,
            sectors: 1,
        };
        assert!(encode_mbr(&[], 0, &[p; 5]).is_err());
        assert!(encode_mbr(&[], 0, &[Partition { sectors: 0, ..p }]).is_err());
        assert!(parse_mbr(&[0u8; 512]).is_err());
    }

    #[test]
    fn assembled_image_layout() {
        let boot = fake_boot_img();
        let core = fake_core_img(300);
        let total = 16 * MIB;
        let fs = fake_ext2(total - MIB);
        let img = assemble(&boot, &core, &fs, total).unwrap();
        assert_eq!(img.len(), total);
        check_layout(&img).unwrap();
        let parts = parse_mbr(&img).unwrap();
        assert_eq!(
            parts,
            vec![Partition {
                bootable: true,
                kind: 0x83,
                start_lba: 2048,
                sectors: 30720
            }]
        );
        // MBR: boot code with the drive check NOPed, our table over boot.img's bytes
        assert_eq!(img[0], 0xeb);
        assert_eq!(&img[0x66..0x68], &[0x90, 0x90]);
        assert_eq!(img[0x1c0], 0x21);
        assert_eq!(&img[0x1b8..0x1bc], b"XENL");
        // core.img right after the MBR, zeros up to the partition
        assert_eq!(&img[512..512 + core.len()], &core[..]);
        assert!(img[512 + core.len()..MIB].iter().all(|&b| b == 0));
        assert_eq!(&img[MIB..], &fs[..]);
    }

    #[test]
    fn assemble_checks_grubs_defaults_and_sizes() {
        let total = 16 * MIB;
        let fs = fake_ext2(total - MIB);
        let core = fake_core_img(300);
        let mut boot = fake_boot_img();
        boot[BOOT_KERNEL_SECTOR] = 2;
        assert!(assemble(&boot, &core, &fs, total).is_err());
        let boot = fake_boot_img();
        let mut bad = core.clone();
        bad[DISKBOOT_BLOCKLIST] = 5;
        assert!(assemble(&boot, &bad, &fs, total).is_err());
        // core.img too big for the gap before 1 MiB
        assert!(assemble(&boot, &fake_core_img(2048), &fs, total).is_err());
        // file system not filling the partition
        assert!(assemble(&boot, &core, &fs[..MIB], total).is_err());
        // check_layout notices a missing file system
        let img = assemble(&boot, &core, &vec![0u8; total - MIB], total).unwrap();
        assert!(check_layout(&img).is_err());
    }

    #[test]
    fn image_grows_only_for_big_kernels() {
        assert_eq!(image_size(2 * MIB), 16 * MIB);
        assert_eq!(image_size(11 * MIB), 16 * MIB);
        assert_eq!(image_size(12 * MIB), 24 * MIB);
    }
}
