//! poweroff and reboot end QEMU with known statuses.

use std::time::Duration;
use xenlet_tests::Guest;

#[test]
fn poweroff_ends_qemu_with_status_0() {
    let mut g = Guest::boot("poweroff");
    g.wait_prompt();
    g.send(b"poweroff\r");
    g.expect("xenlet: powering off");
    let st = g.wait_exit(Duration::from_secs(30));
    // 0 = ACPI S5 worked; 33 would mean the isa-debug-exit fallback ran.
    assert_eq!(st.code(), Some(0), "{}", g.transcript());
}

#[test]
fn reboot_resets_the_machine() {
    // -no-reboot turns the reset into a clean QEMU exit.
    let mut g = Guest::boot("reboot");
    g.wait_prompt();
    g.send(b"reboot\r");
    g.expect("xenlet: rebooting");
    let st = g.wait_exit(Duration::from_secs(30));
    assert_eq!(st.code(), Some(0), "{}", g.transcript());
    assert!(!g.transcript().contains("reset failed"));
}
