//! Shell commands, line editing and pasted input.

use xenlet_tests::{Guest, PROMPT};

fn booted(name: &str) -> Guest {
    let mut g = Guest::boot(name);
    g.wait_prompt();
    g
}

#[test]
fn help_lists_every_command() {
    let mut g = booted("help");
    let out = g.run("help");
    for c in [
        "help", "version", "mem", "uptime", "echo", "poweroff", "reboot", "crash",
    ] {
        assert!(out.lines().any(|l| l.starts_with(c)), "{c} missing:\n{out}");
    }
    let out = g.run("help uptime");
    assert!(out.starts_with("usage: uptime"), "{out}");
}

#[test]
fn version_mem_uptime_echo() {
    let mut g = booted("commands");
    let out = g.run("version");
    assert!(out.starts_with("Xenlet 0.1.0 (git "), "{out}");
    let out = g.run("mem");
    assert!(out.contains("memory map (PVH):"), "{out}");
    assert!(out.lines().any(|l| l.contains("Usable")), "{out}");
    let frames = out
        .lines()
        .find(|l| l.starts_with("frames: "))
        .expect("frames line");
    let free: u64 = frames.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(free > 1000, "{frames}");
    assert!(out.contains("heap: "), "{out}");
    let up = |g: &mut Guest| -> f64 {
        let out = g.run("uptime");
        let t = out.strip_prefix("up ").unwrap_or_else(|| panic!("{out}"));
        let t = t.split(',').next().unwrap();
        let parts: Vec<f64> = t.split(':').map(|p| p.parse().unwrap()).collect();
        parts[0] * 3600.0 + parts[1] * 60.0 + parts[2]
    };
    let a = up(&mut g);
    std::thread::sleep(std::time::Duration::from_millis(2000));
    let b = up(&mut g);
    // 2 s plus command round trips; a clock off by more than 25 % fails.
    assert!(b - a >= 1.5 && b - a < 30.0, "uptime went from {a} to {b}");
    assert_eq!(g.run("echo hello   \"xen let\""), "hello xen let\n");
    assert_eq!(g.run("echo"), "\n");
    // plain QEMU/KVM: no Xen, said clearly
    assert_eq!(g.run("xen"), "xen: not running on Xen\n");
    assert_eq!(
        g.run("xenstore read name"),
        "xenstore: XenStore is not connected (not running on Xen?)\n"
    );
    assert!(g.run("lsblk").contains("no disks"));
    assert_eq!(g.run("ip link"), "");
    assert_eq!(
        g.run("ip link show eth0"),
        "ip: Device \"eth0\" does not exist.\n"
    );
    assert_eq!(
        g.run("discard xvdb 0 4096"),
        "discard: xvdb: No such device\n"
    );
    assert_eq!(g.run("discard xvdb 1 4096"), "discard: OFFSET and LENGTH must be non-zero multiples of 512 (usage: discard DEVICE OFFSET LENGTH)\n");
    // Ctrl-C ends a long sleep; what is typed after it waits for the shell
    g.send(b"sleep 600\r");
    std::thread::sleep(std::time::Duration::from_millis(500));
    g.send(b"\x03echo after\r");
    let out = g.wait_prompt();
    assert!(out.contains("^C"), "{out}");
    assert!(out.contains("slept "), "{out}");
    let out = g.wait_prompt();
    assert!(out.lines().any(|l| l == "after"), "{out}");
}

#[test]
fn bad_commands_and_arguments_get_one_line_and_the_shell_goes_on() {
    let mut g = booted("errors");
    assert_eq!(
        g.run("frobnicate --now"),
        "xenlet: frobnicate: command not found (try 'help')\n"
    );
    assert_eq!(
        g.run("version extra"),
        "version: extra operand 'extra' (usage: version )\n"
    );
    assert_eq!(
        g.run("crash"),
        "crash: missing fault kind (usage: crash pf|null|wx|nx|gp|ud|de|panic|console|stack|triple)\n"
    );
    assert_eq!(
        g.run("crash bogus"),
        "crash: unknown fault kind 'bogus' (usage: crash pf|null|wx|nx|gp|ud|de|panic|console|stack|triple)\n"
    );
    assert_eq!(g.run("echo 'open"), "xenlet: unterminated quote\n");
    assert!(g.run("version").starts_with("Xenlet"));
}

#[test]
fn line_editing_backspace_ctrl_u_ctrl_c() {
    let mut g = booted("editing");
    // Backspace (DEL and BS) fixes a typo: "echx" -> "echo".
    g.send(b"echx\x7fo ab\x08c\r");
    let out = g.expect(PROMPT);
    assert!(out.contains("\nac\n"), "{out:?}");
    // Ctrl-U throws the line away.
    g.send(b"poweroff\x15echo kept\r");
    let out = g.expect(PROMPT);
    assert!(out.contains("\nkept\n"), "{out:?}");
    // Ctrl-C cancels; nothing runs.
    g.send(b"poweroff\x03");
    let out = g.expect(PROMPT);
    assert!(out.contains("^C\n"), "{out:?}");
    assert_eq!(g.run("echo alive"), "alive\n");
}

#[test]
fn pasted_4kib_of_commands_loses_nothing() {
    let mut g = booted("paste");
    let mut paste = String::new();
    let mut n = 0;
    while paste.len() < 4096 {
        paste.push_str(&format!(
            "echo paste-line-{n:04} abcdefghijklmnopqrstuvwxyz\r"
        ));
        n += 1;
    }
    assert!(paste.len() >= 4096);
    g.send(paste.as_bytes());
    for i in 0..n {
        g.expect(&format!("\npaste-line-{i:04} abcdefghijklmnopqrstuvwxyz\n"));
    }
    g.expect(PROMPT);
    let out = g.run("mem");
    assert!(
        out.contains("serial input: 0 bytes dropped, 0 overruns"),
        "{out}"
    );
}
