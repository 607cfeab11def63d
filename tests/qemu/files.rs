//! The file tree on a plain PC (tmpfs root and /tmp): file tools, redirection,
//! pipes, dd into files, time and dmesg.

use xenlet_tests::Guest;

#[test]
fn file_tools_redirection_pipes_dd_and_dmesg_on_tmpfs() {
    let mut g = Guest::boot("files");
    g.wait_prompt();
    assert_eq!(
        g.run("mount"),
        "rootfs on / type tmpfs (rw)\ntmpfs on /tmp type tmpfs (rw)\n"
    );
    assert_eq!(g.run("mkdir -p /tmp/a/b"), "");
    assert_eq!(g.run("echo hello world > /tmp/a/f"), "");
    assert_eq!(g.run("echo again >> /tmp/a/f"), "");
    assert_eq!(g.run("cat /tmp/a/f"), "hello world\nagain\n");
    assert_eq!(g.run("ls /tmp/a"), "b\nf\n");
    assert_eq!(g.run("cat /tmp/a/f | grep -c o"), "1\n");
    assert_eq!(g.run("cat /tmp/a/f | grep -v -i HELLO"), "again\n");
    assert_eq!(g.run("cd /tmp/a"), "");
    assert_eq!(g.run("mv f g"), "");
    assert_eq!(g.run("cp g /tmp/h"), "");
    assert_eq!(g.run("pwd"), "/tmp/a\n");
    assert_eq!(g.run("cat /tmp/h"), "hello world\nagain\n");
    assert_eq!(g.run("cat f"), "cat: f: No such file or directory\n");
    assert_eq!(
        g.run("rm /tmp/a"),
        "rm: cannot remove '/tmp/a': Is a directory\n"
    );
    // a buffer larger than the heap is an error line, and the shell goes on
    let out = g.run("dd if=/dev/zero of=/tmp/big bs=1G count=1");
    assert!(
        out.contains("dd: memory exhausted by a buffer of size 1073741824 bytes"),
        "{out}"
    );
    let out = g.run("dd if=/dev/zero of=/tmp/z bs=1k count=64");
    assert!(
        out.starts_with("64+0 records in\n64+0 records out\n65536 bytes"),
        "{out}"
    );
    assert_eq!(
        g.run("sha256sum /tmp/z"),
        "de2f256064a0af797747c2b97505dc0b9f3df0de4f489eac731c23ae9ca9cc31  /tmp/z\n"
    );
    let out = g.run("stat /tmp/z");
    assert!(
        out.contains("Size: 65536") && out.contains("regular file"),
        "{out}"
    );
    // dd from a file, skipping into it; then conv=notrunc keeps the rest.
    let out = g.run("dd if=/tmp/h of=/tmp/part bs=6 skip=1 count=1");
    assert!(
        out.starts_with("1+0 records in\n1+0 records out\n6 bytes"),
        "{out}"
    );
    assert_eq!(g.run("cat /tmp/part"), "world\n");
    let out = g.run("df -h");
    assert!(
        out.starts_with("Filesystem") && out.contains(" /tmp\n"),
        "{out}"
    );
    let out = g.run("time sleep 0.2");
    assert!(
        out.contains("\nreal\t0m0.2") && out.contains("\nsys\t"),
        "{out}"
    );
    let out = g.run("dmesg | grep clock:");
    assert!(out.starts_with('[') && out.contains("] clock: "), "{out}");
    assert_eq!(g.run("rm -r /tmp/a"), "");
    assert_eq!(
        g.run("ls /tmp/a"),
        "ls: cannot access '/tmp/a': No such file or directory\n"
    );
    assert_eq!(
        g.run("echo x > /nonexistent/dir/f"),
        "xenlet: /nonexistent/dir/f: No such file or directory\n"
    );
    assert_eq!(
        g.run("mount /dev/xvdb /mnt"),
        "mount: /dev/xvdb: No such device\n"
    );
}
