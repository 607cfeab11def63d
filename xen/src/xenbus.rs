//! Xenbus: the frontend/backend handshake states (xen/include/public/io/xenbus.h)
//! and the one frontend state machine blkfront and netfront share.
//!
//! The machine is pure: it is told the backend's new state (from a watch on
//! `<backend>/state`) and answers what the driver must do next; the driver does it
//! (publish ring references, read the backend's features) and reports back.

use core::fmt;

/// `enum xenbus_state`.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XenbusState {
    Unknown,
    Initialising,
    InitWait,
    Initialised,
    Connected,
    Closing,
    Closed,
    Reconfiguring,
    Reconfigured,
}

impl XenbusState {
    /// From the decimal string stored in XenStore; junk is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.trim().parse::<u32>().ok()? {
            0 => XenbusState::Unknown,
            1 => XenbusState::Initialising,
            2 => XenbusState::InitWait,
            3 => XenbusState::Initialised,
            4 => XenbusState::Connected,
            5 => XenbusState::Closing,
            6 => XenbusState::Closed,
            7 => XenbusState::Reconfiguring,
            8 => XenbusState::Reconfigured,
            _ => return None,
        })
    }

    /// The number written to XenStore.
    pub fn number(self) -> u32 {
        self as u32
    }
}

impl fmt::Display for XenbusState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// What the driver must do after a backend state change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing.
    Wait,
    /// Allocate and publish rings/event channels, then switch to Initialised.
    Setup,
    /// Read the backend's details and switch to Connected.
    Connect,
    /// Stop I/O, switch to Closing then Closed.
    Close,
}

/// The frontend's side of the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frontend {
    state: XenbusState,
}

impl Frontend {
    /// A frontend that has just written Initialising.
    pub const fn new() -> Self {
        Frontend {
            state: XenbusState::Initialising,
        }
    }

    /// The frontend's current state.
    pub fn state(&self) -> XenbusState {
        self.state
    }

    /// Records the state the driver just wrote to XenStore.
    pub fn switched(&mut self, to: XenbusState) {
        self.state = to;
    }

    /// Decides what the backend's new state asks of the driver (Linux blkfront's
    /// `blkback_changed` / netfront's `netback_changed`, in one table).
    pub fn on_backend(&self, backend: XenbusState) -> Action {
        use XenbusState::*;
        match (self.state, backend) {
            (Closed, _) => Action::Wait,
            (_, Closing | Closed) => Action::Close,
            (Initialising, InitWait) => Action::Setup,
            // A backend may skip InitWait and go straight to Connected; set up first.
            (Initialising, Connected) => Action::Setup,
            (Initialised, Connected) => Action::Connect,
            // A backend in Initialised is not ready: Linux's blkback_changed and
            // netback_changed ignore it (as they do Unknown, Initialising,
            // Reconfiguring and Reconfigured).
            _ => Action::Wait,
        }
    }
}

impl Default for Frontend {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::XenbusState::*;
    use super::*;

    #[test]
    fn parses_states_and_rejects_junk() {
        assert_eq!(XenbusState::parse("4"), Some(Connected));
        assert_eq!(XenbusState::parse(" 2\n"), Some(InitWait));
        assert_eq!(XenbusState::parse("9"), None);
        assert_eq!(XenbusState::parse("x"), None);
        assert_eq!(Connected.number(), 4);
    }

    #[test]
    fn the_normal_handshake() {
        let mut f = Frontend::new();
        assert_eq!(f.on_backend(Initialising), Action::Wait);
        assert_eq!(f.on_backend(InitWait), Action::Setup);
        f.switched(Initialised);
        assert_eq!(f.on_backend(InitWait), Action::Wait);
        assert_eq!(f.on_backend(Connected), Action::Connect);
        f.switched(Connected);
        assert_eq!(f.on_backend(Connected), Action::Wait);
        assert_eq!(f.on_backend(Closing), Action::Close);
        f.switched(Closed);
        assert_eq!(f.on_backend(Closing), Action::Wait);
    }

    #[test]
    fn odd_backends() {
        let f = Frontend::new();
        assert_eq!(
            f.on_backend(Connected),
            Action::Setup,
            "backend skipped InitWait"
        );
        assert_eq!(
            f.on_backend(Closed),
            Action::Close,
            "backend went away before connecting"
        );
        assert_eq!(f.on_backend(Reconfiguring), Action::Wait);
    }

    #[test]
    fn a_backend_in_initialised_is_not_ready() {
        let mut f = Frontend::new();
        assert_eq!(f.on_backend(Initialised), Action::Wait, "not set up on it");
        f.switched(Initialised);
        assert_eq!(
            f.on_backend(Initialised),
            Action::Wait,
            "not connected on it"
        );
        assert_eq!(f.on_backend(Connected), Action::Connect);
    }
}
