//! The boot banner and boot report.

use std::time::Duration;
use xenlet_tests::{Boot, Guest};

#[test]
fn boot_report_names_protocol_memory_clock_and_boot_time() {
    let mut g = Guest::boot("boot_report");
    let out = g.wait_prompt();
    assert!(out.contains("Xenlet 0.1.0"), "{out}");
    assert!(out.contains("image: code and constants intact ("), "{out}");
    assert!(out.contains("boot: PVH entry"), "{out}");
    // 128 MiB guest: between 100 and 128 MiB usable
    let mib = xenlet_tests::usable_mib(&out);
    assert!((100..=128).contains(&mib), "{mib} MiB");
    assert!(out.contains("clock: "), "{out}");
    assert!(out.contains("xen: not running on Xen"), "{out}");
    assert!(out.contains("acpi: PM1a control"), "{out}");
    assert!(out.contains("receive interrupt on IRQ 4"), "{out}");
    let bt = out
        .lines()
        .find(|l| l.starts_with("boot time: "))
        .expect("boot time line");
    let ms: f64 = bt["boot time: ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(ms > 0.0 && ms < 60_000.0, "{bt}");
}

#[test]
fn command_line_reaches_the_kernel() {
    let mut g = Guest::start(
        "cmdline",
        xenlet_tests::Boot::Kernel,
        &["-append", "xenlet.test=1 hello"],
    );
    let out = g.wait_prompt();
    assert!(
        out.contains("command line \"xenlet.test=1 hello\""),
        "{out}"
    );
}

/// The file offset of the last allocated, read-only, non-executable section
/// (`.rodata`) of an ELF64.
fn rodata_offset(elf: &[u8]) -> usize {
    let u16_at = |o: usize| usize::from(u16::from_le_bytes([elf[o], elf[o + 1]]));
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
    let (shoff, size, n) = (u64_at(0x28) as usize, u16_at(0x3A), u16_at(0x3C));
    (0..n)
        .map(|i| shoff + i * size)
        .filter(|h| u64_at(h + 8) & 0b111 == 0b010) // SHF_ALLOC, not WRITE or EXECINSTR
        .max_by_key(|h| u64_at(h + 0x10))
        .map(|h| u64_at(h + 0x18) as usize)
        .expect(".rodata")
}

/// One byte of the image changed behind the loader's back (here in the file: the
/// padding just before `.rodata`, which no code reads) and the kernel refuses to run,
/// naming both digests, before it reaches anything that could write a disk.
#[test]
fn a_damaged_image_stops_at_boot() {
    let mut elf = std::fs::read(std::env::var_os("XENLET_KERNEL").expect("XENLET_KERNEL")).unwrap();
    let at = rodata_offset(&elf) - 1;
    assert_eq!(elf[at], 0, "the byte before .rodata is padding");
    elf[at] = 0x5a;
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/qemu-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let damaged = dir.join("xenlet-damaged.elf");
    std::fs::write(&damaged, &elf).unwrap();
    let mut g = Guest::start("damaged_image", Boot::KernelFile(damaged), &[]);
    g.expect("*** system halted");
    let st = g.wait_exit(Duration::from_secs(30));
    let out = g.transcript();
    assert_eq!(st.code(), Some(3), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("image: DAMAGED in memory: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("digest 0x") && line.contains(", built 0x"),
        "{line}"
    );
    assert!(!out.contains("xenlet>"), "{out}");
    assert!(!out.contains("root: "), "{out}");
}
