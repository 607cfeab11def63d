//! Token buckets for `limit rate N/unit burst B` (nftables' `limit` statement, as
//! firewall4 emits it for a rule's `limit`/`limit_burst` and the `syn_flood` chain).
//!
//! Credit is kept in exact integer units: every millisecond adds `rate` credit and a
//! packet costs `period_ms` (so `25/second` is 25 credit a ms against 1000 a packet),
//! so minute/hour/day rates lose nothing to rounding. The bucket starts full, as
//! nftables' does (`net/netfilter/nft_limit.c`: `limit->tokens = limit->tokens_max`).

use crate::Millis;

/// A rate: `rate` events every `period_ms`, with `burst` saved up at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Events per period (0 never allows anything).
    pub rate: u32,
    /// The period in milliseconds (1000 for `/second`).
    pub period_ms: u64,
    /// Events that may come at once (nftables' default is 5; at least 1 is kept).
    pub burst: u32,
}

impl Limit {
    /// `rate`/second with `burst`.
    pub const fn per_second(rate: u32, burst: u32) -> Limit {
        Limit {
            rate,
            period_ms: 1000,
            burst,
        }
    }
}

/// A token bucket over a [`Limit`].
#[derive(Clone, Debug)]
pub struct Bucket {
    limit: Limit,
    credit: u64,
    last: Option<Millis>,
}

impl Bucket {
    /// A full bucket.
    pub fn new(limit: Limit) -> Bucket {
        let limit = Limit {
            period_ms: limit.period_ms.max(1),
            burst: limit.burst.max(1),
            ..limit
        };
        Bucket {
            limit,
            credit: Self::max_credit(&limit),
            last: None,
        }
    }

    fn max_credit(l: &Limit) -> u64 {
        u64::from(l.burst).saturating_mul(l.period_ms)
    }

    /// The limit.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Takes one event's worth of credit at `now`, if there is enough.
    pub fn allow(&mut self, now: Millis) -> bool {
        let elapsed = match self.last {
            Some(t) => now.saturating_sub(t),
            None => 0,
        };
        self.last = Some(now);
        let add = elapsed.saturating_mul(u64::from(self.limit.rate));
        self.credit = self
            .credit
            .saturating_add(add)
            .min(Self::max_credit(&self.limit));
        if self.limit.rate > 0 && self.credit >= self.limit.period_ms {
            self.credit -= self.limit.period_ms;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_rate_per_second() {
        let mut b = Bucket::new(Limit::per_second(25, 50));
        let first = (0..200).filter(|_| b.allow(0)).count();
        assert_eq!(first, 50);
        // 2 s later: 50 more at most (refill capped at the burst)
        let later = (0..200).filter(|_| b.allow(2000)).count();
        assert_eq!(later, 50);
        // 200 ms: 5 tokens
        let more = (0..200).filter(|_| b.allow(2200)).count();
        assert_eq!(more, 5);
    }

    #[test]
    fn per_minute_is_exact() {
        let mut b = Bucket::new(Limit {
            rate: 3,
            period_ms: 60_000,
            burst: 1,
        });
        assert!(b.allow(0));
        assert!(!b.allow(19_999));
        assert!(b.allow(20_000));
        assert!(!b.allow(20_001));
    }

    #[test]
    fn zero_rate_allows_nothing_and_clock_going_back_is_harmless() {
        let mut z = Bucket::new(Limit::per_second(0, 3));
        assert!(!z.allow(10));
        let mut b = Bucket::new(Limit::per_second(1, 1));
        assert!(b.allow(5000));
        assert!(!b.allow(100));
        assert!(!b.allow(100));
        assert!(b.allow(1100));
    }
}
