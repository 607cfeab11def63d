//! The boot banner and boot report.

use xenlet_tests::Guest;

#[test]
fn boot_report_names_protocol_memory_clock_and_boot_time() {
    let mut g = Guest::boot("boot_report");
    let out = g.wait_prompt();
    assert!(out.contains("Xenlet 0.1.0"), "{out}");
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
