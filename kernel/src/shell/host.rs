//! The state the shell's commands work on: one value handed to every command, so
//! command families in separate files share it without importing each other.

/// State the commands work on (grows with the Xen layer and drivers).
pub struct Host {
    _private: (),
}

impl Host {
    /// The shell's one host.
    pub(crate) fn new() -> Host {
        Host { _private: () }
    }
}
