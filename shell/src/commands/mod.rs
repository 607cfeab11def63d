//! The pure half of the kernel's shell commands (kernel/src/shell/commands/): their
//! argument parsing and report formatting, given the numbers the kernel gathers, so
//! that they are tested on the host. One file per family, as in the kernel:
//! [`system`] (`mem`, `uptime`, `sleep`), [`xen`] (`xenstore`), [`disk`] (`lsblk`,
//! `discard`, `sha256sum`, `dd`'s device names), [`net`] (`ip -s link`'s router
//! block, `iperf3`, `echod`, `udhcpc`).

pub mod disk;
pub mod net;
pub mod system;
pub mod xen;

#[cfg(test)]
pub(crate) mod fuzz {
    //! Seeded random argument lists for the parsers' no-panic tests.
    use alloc::string::String;
    use alloc::vec::Vec;

    pub use xenlet_testrng::XorShift;

    /// Words drawn from `vocab` and random bytes, up to five of them.
    pub fn args(r: &mut XorShift, vocab: &[&str]) -> Vec<String> {
        let n = (r.next() % 6) as usize;
        (0..n)
            .map(|_| {
                if r.next().is_multiple_of(3) {
                    let len = (r.next() % 12) as usize;
                    (0..len)
                        .map(|_| {
                            char::from(b" -/0123456789abcdefxkKMGs.\xff"[(r.next() % 27) as usize])
                        })
                        .collect()
                } else {
                    String::from(vocab[(r.next() as usize) % vocab.len()])
                }
            })
            .collect()
    }
}
