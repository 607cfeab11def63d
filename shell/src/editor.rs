//! Line editing over a byte stream from a terminal.
//!
//! Printable ASCII is echoed and kept; Backspace (0x08) and DEL (0x7f) erase one
//! character; Ctrl-U (0x15) erases the line; Ctrl-C (0x03) cancels it; CR, LF or
//! CR LF submit. ANSI escape sequences (arrow keys and the like) are swallowed.

use core::fmt::Write;

/// What a byte did to the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEvent {
    /// Enter: the line is complete; `overflowed` if characters were refused.
    Submit {
        /// The line grew past [`LineEditor::CAPACITY`] and characters were dropped.
        overflowed: bool,
    },
    /// Ctrl-C: the line was discarded.
    Cancel,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    Esc,
    Csi,
}

/// An editable input line of printable ASCII.
pub struct LineEditor {
    buf: [u8; Self::CAPACITY],
    len: usize,
    overflowed: bool,
    after_cr: bool,
    escape: Escape,
}

impl LineEditor {
    /// Longest line accepted.
    pub const CAPACITY: usize = 512;

    /// An empty line.
    pub const fn new() -> Self {
        LineEditor {
            buf: [0; Self::CAPACITY],
            len: 0,
            overflowed: false,
            after_cr: false,
            escape: Escape::None,
        }
    }

    /// The current line.
    pub fn line(&self) -> &str {
        // Only printable ASCII is ever stored.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }

    /// Empties the line after a submit.
    pub fn clear(&mut self) {
        self.len = 0;
        self.overflowed = false;
    }

    /// Processes one byte, echoing to `out`.
    pub fn feed(&mut self, byte: u8, out: &mut dyn Write) -> Option<LineEvent> {
        let after_cr = core::mem::replace(&mut self.after_cr, false);
        match self.escape {
            Escape::Esc => {
                self.escape = if byte == b'[' {
                    Escape::Csi
                } else {
                    Escape::None
                };
                return None;
            }
            Escape::Csi => {
                if (0x40..=0x7e).contains(&byte) {
                    self.escape = Escape::None;
                }
                return None;
            }
            Escape::None => {}
        }
        match byte {
            b'\r' => {
                self.after_cr = true;
                let _ = out.write_char('\n');
                Some(LineEvent::Submit {
                    overflowed: self.overflowed,
                })
            }
            b'\n' if after_cr => None,
            b'\n' => {
                let _ = out.write_char('\n');
                Some(LineEvent::Submit {
                    overflowed: self.overflowed,
                })
            }
            0x03 => {
                let _ = out.write_str("^C\n");
                self.clear();
                Some(LineEvent::Cancel)
            }
            0x08 | 0x7f => {
                if self.len > 0 {
                    self.len -= 1;
                    let _ = out.write_str("\x08 \x08");
                }
                None
            }
            0x15 => {
                for _ in 0..self.len {
                    let _ = out.write_str("\x08 \x08");
                }
                self.len = 0;
                self.overflowed = false;
                None
            }
            0x1b => {
                self.escape = Escape::Esc;
                None
            }
            0x20..=0x7e => {
                if self.len < Self::CAPACITY {
                    self.buf[self.len] = byte;
                    self.len += 1;
                    let _ = out.write_char(char::from(byte));
                } else {
                    if !self.overflowed {
                        let _ = out.write_char('\x07');
                    }
                    self.overflowed = true;
                }
                None
            }
            b'\t' => {
                // No completion yet: a tab is a space.
                self.feed(b' ', out)
            }
            _ => None,
        }
    }
}

impl Default for LineEditor {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(e: &mut LineEditor, input: &[u8]) -> (String, Vec<LineEvent>) {
        let mut out = String::new();
        let mut ev = Vec::new();
        for &b in input {
            if let Some(x) = e.feed(b, &mut out) {
                ev.push(x);
            }
        }
        (out, ev)
    }

    #[test]
    fn backspace_and_del_erase_one_char() {
        let mut e = LineEditor::new();
        let (out, ev) = feed_all(&mut e, b"lsx\x08\x7fs");
        assert_eq!(e.line(), "ls");
        assert_eq!(out, "lsx\x08 \x08\x08 \x08s");
        assert!(ev.is_empty());
        // backspace on an empty line echoes nothing
        let mut e = LineEditor::new();
        let (out, _) = feed_all(&mut e, b"\x08\x08a");
        assert_eq!((out.as_str(), e.line()), ("a", "a"));
    }

    #[test]
    fn ctrl_u_kills_the_line() {
        let mut e = LineEditor::new();
        let (out, _) = feed_all(&mut e, b"abc\x15xy");
        assert_eq!(e.line(), "xy");
        assert_eq!(out, "abc\x08 \x08\x08 \x08\x08 \x08xy");
    }

    #[test]
    fn escape_sequences_are_swallowed() {
        let mut e = LineEditor::new();
        feed_all(&mut e, b"a\x1b[A\x1b[1;5Cb\x1bOc");
        // ESC O is not CSI: only the byte after ESC is dropped
        assert_eq!(e.line(), "abc");
    }

    #[test]
    fn crlf_submits_once_and_lf_alone_submits() {
        let mut e = LineEditor::new();
        let (_, ev) = feed_all(&mut e, b"a\r\n");
        assert_eq!(ev, vec![LineEvent::Submit { overflowed: false }]);
        e.clear();
        let (_, ev) = feed_all(&mut e, b"\n\n");
        assert_eq!(ev.len(), 2);
    }
}
