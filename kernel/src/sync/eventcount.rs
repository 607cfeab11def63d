//! Event counts: readiness that one waiter cannot consume for another.
//!
//! An [`EventCount`] is a counter that an interrupt handler bumps ([`EventCount::signal`])
//! each time its source has something new (an event channel fired, a byte arrived).
//! Nobody ever resets it. A consumer keeps its own [`Seen`] mark: the count when it last
//! looked. "Has anything happened since I looked?" is then a comparison, which any
//! number of consumers, nested inside each other, can ask without taking the answer
//! away from the others.
//!
//! This replaces a single "an event arrived" flag that every halt cleared: a wait
//! inside a command (a disk request, a XenStore reply, `sleep`) took the flag that the
//! network's own wait needed, and the network slept through its event (a lost wakeup).
//! It is the eventcount of Reed and Kanodia (1979) and the shape of Linux's
//! `prepare_to_wait`/`schedule` pairing: take the mark *before* checking the condition,
//! halt only if the count has not moved since the mark.
//!
//! Pure logic: builds and is tested on the host.

use core::sync::atomic::{AtomicU64, Ordering};

/// A source's count of events. Bumped from interrupt context; read anywhere.
#[derive(Debug, Default)]
pub struct EventCount(AtomicU64);

impl EventCount {
    /// A count at zero.
    pub const fn new() -> Self {
        EventCount(AtomicU64::new(0))
    }

    /// Records one event (interrupt-safe: one atomic add, no lock, no allocation).
    pub fn signal(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// The count now.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// A mark at the count now: what a consumer has seen.
    pub fn mark(&self) -> Seen {
        Seen(self.count())
    }

    /// Whether an event came since `seen` was taken (or last advanced).
    pub fn since(&self, seen: &Seen) -> bool {
        self.count() != seen.0
    }

    /// Whether an event came since `seen`; moves `seen` to now either way. A consumer
    /// calls this *before* it looks at its source, so that an event arriving after
    /// the look is still news at the next call.
    pub fn take(&self, seen: &mut Seen) -> bool {
        let now = self.count();
        let new = now != seen.0;
        seen.0 = now;
        new
    }
}

/// One consumer's mark on an [`EventCount`]: the count when it last looked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen(u64);

impl Seen {
    /// A mark that has seen nothing: the first [`EventCount::take`] reports news if
    /// any event ever came.
    pub const fn zero() -> Self {
        Seen(0)
    }
}

/// A marker a consumer keeps in a static (interrupt-safe, lock-free): the same as
/// [`Seen`] for a consumer with no place of its own to keep one (the network's
/// service, called from whichever wait runs it).
#[derive(Debug, Default)]
pub struct SharedSeen(AtomicU64);

impl SharedSeen {
    /// A mark that has seen nothing.
    pub const fn new() -> Self {
        SharedSeen(AtomicU64::new(0))
    }

    /// As [`EventCount::take`] for this mark.
    pub fn take(&self, ec: &EventCount) -> bool {
        let now = ec.count();
        self.0.swap(now, Ordering::SeqCst) != now
    }

    /// The mark, as a [`Seen`].
    pub fn get(&self) -> Seen {
        Seen(self.0.load(Ordering::SeqCst))
    }

    /// Sets the mark.
    pub fn set(&self, seen: Seen) {
        self.0.store(seen.0, Ordering::SeqCst);
    }

    /// Whether `ec` moved since this mark, without moving it.
    pub fn pending(&self, ec: &EventCount) -> bool {
        ec.count() != self.0.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_consumer_sees_each_event_once() {
        let ec = EventCount::new();
        let mut s = ec.mark();
        assert!(!ec.take(&mut s));
        ec.signal();
        assert!(ec.since(&s));
        assert!(ec.take(&mut s));
        assert!(!ec.take(&mut s), "taken once");
    }

    #[test]
    fn nested_consumers_do_not_consume_each_others_events() {
        // The shell loop marks, then runs a command whose disk wait marks too; an
        // event arrives during the command and the inner wait takes it.
        let ec = EventCount::new();
        let mut outer = ec.mark();
        let mut inner = ec.mark();
        ec.signal();
        assert!(ec.take(&mut inner));
        // After the command, the outer loop must still see it.
        assert!(
            ec.take(&mut outer),
            "the inner wait consumed the outer loop's event"
        );
    }

    #[test]
    fn a_mark_taken_before_the_check_catches_an_event_after_it() {
        let ec = EventCount::new();
        let mut s = ec.mark();
        let _ = ec.take(&mut s); // mark, then "check the condition"
        ec.signal(); // the event lands after the check, before the halt
        assert!(ec.since(&s), "the halt must not start");
    }

    #[test]
    fn shared_marks_behave_like_local_ones() {
        let ec = EventCount::new();
        let m = SharedSeen::new();
        assert!(!m.take(&ec));
        ec.signal();
        ec.signal();
        assert!(m.pending(&ec));
        assert!(m.take(&ec));
        assert!(!m.pending(&ec));
        assert!(!m.take(&ec));
    }

    #[test]
    fn a_zero_mark_reports_any_history() {
        let ec = EventCount::new();
        ec.signal();
        let mut s = Seen::zero();
        assert!(ec.take(&mut s));
    }
}
