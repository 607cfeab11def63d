//! dd on a plain PC (no Xen, no disks): operands, GNU errors, the summary.

use xenlet_tests::Guest;

#[test]
fn dd_zero_to_null_prints_gnu_summary_and_errors() {
    let mut g = Guest::boot("dd");
    g.wait_prompt();
    let out = g.run("dd if=/dev/zero of=/dev/null bs=16k count=64");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "64+0 records in", "{out}");
    assert_eq!(lines[1], "64+0 records out", "{out}");
    assert!(
        lines[2].starts_with("1048576 bytes (1.0 MB, 1.0 MiB) copied, "),
        "{out}"
    );
    assert!(lines[2].ends_with("B/s"), "{out}");
    let out = g.run("dd if=/dev/zero of=/dev/null ibs=1000 count=3 obs=512");
    assert!(
        out.starts_with("3+0 records in\n5+1 records out\n3000 bytes (3.0 kB, 2.9 KiB) copied"),
        "{out}"
    );
    assert_eq!(
        g.run("dd if=/dev/zero of=/dev/null bs=12q"),
        "dd: invalid number: '12q'\n"
    );
    assert_eq!(
        g.run("dd if=/dev/zero of=/dev/null conv=bogus"),
        "dd: invalid conversion: 'bogus'\n"
    );
    assert_eq!(
        g.run("dd if=/dev/zero of=/dev/null status=loud"),
        "dd: invalid status level: 'loud'\n"
    );
    assert_eq!(g.run("dd foo"), "dd: unrecognized operand 'foo'\n");
    assert_eq!(
        g.run("dd if=/dev/zero of=/dev/xvdb count=1"),
        "dd: failed to open '/dev/xvdb': No such device\n"
    );
    assert_eq!(
        g.run("dd if=/etc/passwd of=/dev/null"),
        "dd: failed to open '/etc/passwd': No such file or directory\n"
    );
    assert_eq!(
        g.run("dd if=/dev/zero of=/dev/null count=1 status=none"),
        ""
    );
    assert!(g.run("version").starts_with("Xenlet"));
}
