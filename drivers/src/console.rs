//! The console seam: where the kernel's text output goes.
//!
//! The 16550 serial port implements it now; the Xen PV console (`io/console.h`) will
//! implement it too, and the kernel writes to every registered console.

/// A byte sink for console text. `\n` is sent as is; implementations add the `\r`
/// their device needs.
pub trait Console: Send {
    /// Short name shown in the boot report (e.g. "com1").
    fn name(&self) -> &'static str;
    /// Writes all of `bytes`, blocking until the device took them (or gave up).
    fn write_bytes(&mut self, bytes: &[u8]);
}

/// Hands `bytes` to `send` with every `\n` sent as `\r\n` (a terminal on the other
/// end), in pieces, without allocating.
pub fn write_crlf(bytes: &[u8], mut send: impl FnMut(&[u8])) {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' {
            send(&bytes[start..i]);
            send(b"\r\n");
            start = i + 1;
        }
    }
    send(&bytes[start..]);
}
