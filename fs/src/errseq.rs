//! A writeback error as a sequence, as Linux's `errseq_t` (`include/linux/errseq.h`,
//! `lib/errseq.c`): the last error, a counter that moves when a new error follows
//! one that was seen, and a "seen" flag.
//!
//! A caller *samples* the sequence ([`ErrSeq::sample`]) when it starts, and later
//! *checks and advances* its sample ([`ErrSeq::check_and_advance`]): it gets the
//! error if one was recorded since its sample, once, and the error is then marked
//! seen. So every caller that sampled before an error gets it once, and a caller
//! that samples after someone has seen it does not. As `errseq_sample` does, a sample
//! taken while the error has not been seen by anyone is taken from before it: an
//! error nobody has reported yet goes to the first caller that looks.

use crate::FsError;

/// What a caller has seen of an [`ErrSeq`]: its position when sampled (`None`:
/// before the last error).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrSince(Option<u32>);

/// A writeback error sequence (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct ErrSeq {
    /// The last error recorded.
    err: Option<FsError>,
    /// Moves each time an error is recorded after the last one was seen.
    seq: u32,
    /// Whether some caller has been given the last error.
    seen: bool,
}

impl ErrSeq {
    /// Records error `e` (`errseq_set`). The counter moves only if the last error
    /// was seen: two errors no one has looked at yet are reported once.
    pub fn set(&mut self, e: FsError) {
        if self.err.is_none() || self.seen {
            self.seq = self.seq.wrapping_add(1);
        }
        self.err = Some(e);
        self.seen = false;
    }

    /// Where a caller starts (`errseq_sample`): the current position if the last
    /// error was seen (or there is none), else before it, so that it is reported.
    pub fn sample(&self) -> ErrSince {
        if self.err.is_none() || self.seen {
            ErrSince(Some(self.seq))
        } else {
            ErrSince(None)
        }
    }

    /// The error recorded since `since`, if any, once (`errseq_check_and_advance`):
    /// `since` moves to the current position and the error is marked seen.
    pub fn check_and_advance(&mut self, since: &mut ErrSince) -> Result<(), FsError> {
        let Some(e) = &self.err else {
            return Ok(());
        };
        if *since == ErrSince(Some(self.seq)) {
            return Ok(());
        }
        *since = ErrSince(Some(self.seq));
        self.seen = true;
        Err(e.clone())
    }

    /// Whether an error is recorded that no caller has been given yet.
    pub fn unseen(&self) -> bool {
        self.err.is_some() && !self.seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IoError;

    const EIO: FsError = FsError::Io(IoError::Io);

    #[test]
    fn each_sampler_before_an_error_gets_it_once() {
        let mut s = ErrSeq::default();
        let (mut a, mut b) = (s.sample(), s.sample());
        assert_eq!(s.check_and_advance(&mut a), Ok(()));
        s.set(EIO);
        assert_eq!(s.check_and_advance(&mut a), Err(EIO));
        assert_eq!(s.check_and_advance(&mut a), Ok(()));
        // `b` sampled before the error too: it gets it although `a` saw it.
        assert_eq!(s.check_and_advance(&mut b), Err(EIO));
        assert_eq!(s.check_and_advance(&mut b), Ok(()));
    }

    #[test]
    fn a_seen_error_is_not_reported_to_a_later_sampler_an_unseen_one_is() {
        let mut s = ErrSeq::default();
        s.set(EIO);
        // Nobody has seen it: the first sampler gets it.
        let mut a = s.sample();
        assert!(s.unseen());
        assert_eq!(s.check_and_advance(&mut a), Err(EIO));
        assert!(!s.unseen());
        // Seen: a caller starting now does not.
        let mut c = s.sample();
        assert_eq!(s.check_and_advance(&mut c), Ok(()));
        // A new error after it was seen is a new one for everybody.
        s.set(EIO);
        s.set(EIO); // not seen in between: still one report each
        assert_eq!(s.check_and_advance(&mut c), Err(EIO));
        assert_eq!(s.check_and_advance(&mut a), Err(EIO));
        assert_eq!(s.check_and_advance(&mut a), Ok(()));
    }
}
