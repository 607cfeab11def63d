//! The disk image (`cargo xtask image`): SeaBIOS → GRUB 2 → multiboot2 → Xenlet.

use std::path::PathBuf;
use std::time::Duration;
use xenlet_tests::{Boot, Guest};

fn image() -> PathBuf {
    match std::env::var_os("XENLET_IMAGE") {
        Some(p) => PathBuf::from(p),
        None => panic!("XENLET_IMAGE is not set: run the QEMU tests with `cargo xtask test`"),
    }
}

#[test]
fn disk_image_boots_through_grub_and_multiboot2() {
    // TCG, not KVM: GRUB runs in real mode and unpaged protected mode, which some KVM
    // hosts (kvm_pvm, nested without unrestricted guest) emulate instruction by
    // instruction: 30-50 s to the prompt there, about 2 s with TCG.
    let mut g = Guest::start(
        "multiboot2_disk",
        Boot::Disk(image()),
        &["-accel", "tcg", "-cpu", "qemu64"],
    );
    g.expect("GNU GRUB");
    g.expect("Booting `Xenlet'");
    let out = g.wait_prompt();
    assert!(out.contains("Xenlet 0.1.0"), "{out}");
    assert!(out.contains("boot: multiboot2 entry"), "{out}");
    // GRUB's copy of the kernel, read through the BIOS, is the one built
    assert!(out.contains("image: code and constants intact ("), "{out}");
    // 128 MiB guest: GRUB's memory map (from the BIOS's E820) leaves 100-128 MiB usable
    let mib = xenlet_tests::usable_mib(&out);
    assert!((100..=128).contains(&mib), "{mib} MiB");
    assert!(out.contains("acpi: PM1a control"), "{out}");

    let out = g.run("version");
    assert!(out.starts_with("Xenlet 0.1.0 (git "), "{out}");
    let out = g.run("mem");
    assert!(out.contains("memory map (multiboot2):"), "{out}");
    let usable: Vec<&str> = out.lines().filter(|l| l.contains("Usable")).collect();
    assert!(
        usable
            .iter()
            .any(|l| l.trim_start().starts_with("0x0000000000100000-")),
        "no usable RAM from 1 MiB:\n{out}"
    );

    g.send(b"poweroff\r");
    g.expect("xenlet: powering off");
    let st = g.wait_exit(Duration::from_secs(30));
    assert_eq!(st.code(), Some(0), "{}", g.transcript());
}
