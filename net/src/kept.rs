//! Frames of one kind that a link sets aside for a service which asked for them,
//! instead of giving them to the stack: Router Solicitations for the advertisement
//! service, DHCPv6 frames for the DHCPv6 server, Router Advertisements for the WAN's
//! router discovery ([`crate::gateway::Routed`]). The queue is bounded: frames past
//! the bound are dropped and counted (the senders try again).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// A bounded queue of frames kept for a service while it wants them.
pub(crate) struct Kept {
    /// Whether the service asked for them ([`Kept::keep`]).
    on: bool,
    frames: VecDeque<Vec<u8>>,
    /// How many frames may wait at once.
    bound: usize,
    /// Frames dropped because `bound` waited already.
    dropped: u64,
}

impl Kept {
    /// Not kept (until [`Kept::keep`]), at most `bound` frames waiting then.
    pub(crate) fn new(bound: usize) -> Kept {
        Kept {
            on: false,
            frames: VecDeque::new(),
            bound,
            dropped: 0,
        }
    }

    /// Whether frames of this kind are kept.
    pub(crate) fn is_on(&self) -> bool {
        self.on
    }

    /// Starts or stops keeping them; stopping forgets the frames waiting.
    pub(crate) fn keep(&mut self, on: bool) {
        self.on = on;
        if !on {
            self.frames.clear();
        }
    }

    /// Keeps `frame`, or counts it dropped when `bound` frames wait already.
    pub(crate) fn push(&mut self, frame: Vec<u8>) {
        if self.frames.len() < self.bound {
            self.frames.push_back(frame);
        } else {
            self.dropped += 1;
        }
    }

    /// The oldest frame waiting.
    pub(crate) fn take(&mut self) -> Option<Vec<u8>> {
        self.frames.pop_front()
    }

    /// Forgets the frames waiting (whether more are kept stays as it was).
    pub(crate) fn clear(&mut self) {
        self.frames.clear();
    }

    /// Frames dropped because the queue was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_first_in_first_out_and_forgotten_when_no_longer_kept() {
        let mut k = Kept::new(2);
        assert!(!k.is_on());
        k.keep(true);
        for b in 1..=4u8 {
            k.push(alloc::vec![b]);
        }
        assert_eq!(k.dropped(), 2);
        assert_eq!(k.take(), Some(alloc::vec![1]));
        k.push(alloc::vec![5]);
        k.clear();
        assert_eq!((k.is_on(), k.take()), (true, None), "cleared, still kept");
        k.push(alloc::vec![6]);
        k.keep(false);
        assert_eq!((k.is_on(), k.take()), (false, None));
    }
}
