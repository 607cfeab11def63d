//! poweroff and reboot end QEMU with known statuses.

use std::time::Duration;
use xenlet_tests::Guest;

/// Boots a guest (named after `command`), types `command` at its prompt and waits
/// for its `banner` and for QEMU to exit with status 0; hands back the guest for
/// its transcript.
fn ends_qemu_cleanly(command: &str, banner: &str) -> Guest {
    let mut g = Guest::boot(command);
    g.wait_prompt();
    g.send(format!("{command}\r").as_bytes());
    g.expect(banner);
    let st = g.wait_exit(Duration::from_secs(30));
    assert_eq!(st.code(), Some(0), "{}", g.transcript());
    g
}

#[test]
fn poweroff_ends_qemu_with_status_0() {
    // 0 = ACPI S5 worked; 33 would mean the isa-debug-exit fallback ran.
    ends_qemu_cleanly("poweroff", "xenlet: powering off");
}

#[test]
fn reboot_resets_the_machine() {
    // -no-reboot turns the reset into a clean QEMU exit.
    let g = ends_qemu_cleanly("reboot", "xenlet: rebooting");
    assert!(!g.transcript().contains("reset failed"));
}
