//! Deliberate faults print the fault report and stop the machine (exit status 3).

use std::time::Duration;
use xenlet_tests::Guest;

fn crash(kind: &str) -> String {
    let mut g = Guest::boot(&format!("crash_{kind}"));
    g.wait_prompt();
    g.send(format!("crash {kind}\r").as_bytes());
    g.expect("*** system halted");
    let st = g.wait_exit(Duration::from_secs(30));
    assert_eq!(st.code(), Some(3), "{}", g.transcript());
    g.transcript()
}

/// [`crash`], checking that the transcript says each of `says`; the transcript.
fn crash_says(kind: &str, says: &[&str]) -> String {
    let out = crash(kind);
    for want in says {
        assert!(out.contains(want), "crash {kind}: no {want:?} in\n{out}");
    }
    out
}

fn field(out: &str, name: &str) -> u64 {
    let at = out
        .find(&format!("{name} 0x"))
        .unwrap_or_else(|| panic!("no {name} in\n{out}"));
    let hex = &out[at + name.len() + 3..];
    let end = hex
        .find(|c: char| !c.is_ascii_hexdigit())
        .unwrap_or(hex.len());
    u64::from_str_radix(&hex[..end], 16).unwrap()
}

#[test]
fn page_fault_report_has_vector_error_rip_cr2_rsp() {
    let out = crash_says(
        "pf",
        &["*** XENLET FAULT: page fault (#PF) (vector 14), error code 0x0"],
    );
    assert_eq!(field(&out, "cr2"), 0x1000_0000_0000);
    let rip = field(&out, "rip");
    assert!(
        (0x200000..0x1000_0000).contains(&rip),
        "rip {rip:#x} not in the kernel"
    );
    assert!(field(&out, "rsp") > 0x200000);
}

#[test]
fn a_null_pointer_faults_page_0_is_not_mapped() {
    let out = crash_says(
        "null",
        &[
            "page fault (#PF) (vector 14), error code 0x0",
            "***   a null pointer dereference",
        ],
    );
    assert_eq!(field(&out, "cr2"), 0);
}

#[test]
fn code_is_not_writable_and_data_not_executable() {
    // W^X: a write to the kernel's code faults (present, write)...
    let out = crash_says(
        "wx",
        &[
            "page fault (#PF) (vector 14), error code 0x3",
            "a write to read-only memory",
        ],
    );
    assert!((0x200000..0x400000).contains(&field(&out, "cr2")), "{out}");
    // ...and a jump into data faults on the fetch (present, instruction fetch)
    let out = crash_says(
        "nx",
        &[
            "page fault (#PF) (vector 14), error code 0x11",
            "code fetched from no-execute memory",
        ],
    );
    assert_eq!(field(&out, "cr2"), field(&out, "rip"), "{out}");
}

#[test]
fn invalid_opcode_divide_error_and_gp_are_reported() {
    crash_says("ud", &["invalid opcode (#UD) (vector 6)"]);
    crash_says("de", &["divide error (#DE) (vector 0)"]);
    crash_says("gp", &["general protection (#GP) (vector 13)"]);
}

#[test]
fn a_stack_overflow_hits_the_guard_page_and_is_reported() {
    // Without the guard page the recursion wrote through the page tables below the
    // boot stack and the machine triple-faulted (QEMU reset) without a word.
    crash_says(
        "stack",
        &[
            "double fault (#DF) (vector 8)",
            "***   the kernel stack overflowed: 64 KiB at 0x",
        ],
    );
}

#[test]
fn a_panic_during_a_console_write_is_reported_and_stops() {
    // The console locks are held: the report goes out through a fresh UART handle
    // and the machine still stops (on Xen: SHUTDOWN_crash, the crash-pvh scenario).
    crash_says("console", &[": deliberate panic during a console write"]);
}

#[test]
fn panic_prints_message_and_location() {
    crash_says(
        "panic",
        &[
            "*** XENLET PANIC at kernel/src/sys/fault.rs:",
            ": deliberate panic from the shell",
        ],
    );
}
