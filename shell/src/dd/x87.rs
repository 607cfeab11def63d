//! x87 80-bit `long double` arithmetic, emulated so that rates round as gnulib's do on
//! x86_64 Linux.

/// An x87 80-bit extended value `m * 2^e`, `m` normalized (bit 63 set) or zero;
/// nonnegative only. Operations round to nearest, ties to even, as the FPU does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Ext {
    m: u64,
    e: i32,
}

impl Ext {
    const ZERO: Ext = Ext { m: 0, e: 0 };

    /// Exact, as the 64-bit significand holds any u64.
    pub(super) fn from_u64(x: u64) -> Ext {
        if x == 0 {
            return Ext::ZERO;
        }
        let s = x.leading_zeros();
        Ext {
            m: x << s,
            e: -(s as i32),
        }
    }

    /// Rounds `q` (64 bits, top bit set) given the next bit and whether anything
    /// below it is nonzero.
    fn round(q: u64, e: i32, guard: bool, sticky: bool) -> Ext {
        if guard && (sticky || q & 1 == 1) {
            match q.checked_add(1) {
                Some(m) => Ext { m, e },
                None => Ext {
                    m: 1 << 63,
                    e: e + 1,
                },
            }
        } else {
            Ext { m: q, e }
        }
    }

    pub(super) fn mul(self, o: Ext) -> Ext {
        if self.m == 0 || o.m == 0 {
            return Ext::ZERO;
        }
        let p = u128::from(self.m) * u128::from(o.m); // in [2^126, 2^128)
        let shift = if p >> 127 != 0 { 64 } else { 63 };
        let q = (p >> shift) as u64;
        let guard = (p >> (shift - 1)) & 1 == 1;
        let sticky = p & ((1u128 << (shift - 1)) - 1) != 0;
        Ext::round(q, self.e + o.e + shift, guard, sticky)
    }

    pub(super) fn div(self, o: Ext) -> Ext {
        debug_assert!(o.m != 0);
        if self.m == 0 {
            return Ext::ZERO;
        }
        let num = u128::from(self.m) << 64;
        let d = u128::from(o.m);
        let (q, r) = (num / d, num % d); // q in (2^63, 2^65)
        let e = self.e - o.e - 64;
        if q >> 64 != 0 {
            Ext::round((q >> 1) as u64, e + 1, q & 1 == 1, r != 0)
        } else {
            let r2 = r * 2;
            let guard = r2 >= d;
            let sticky = if guard { r2 != d } else { r2 != 0 };
            Ext::round(q as u64, e, guard, sticky)
        }
    }

    pub(super) fn le(self, o: Ext) -> bool {
        match (self.m, o.m) {
            (0, _) => true,
            (_, 0) => false,
            _ => (self.e, self.m) <= (o.e, o.m),
        }
    }

    /// `self * 10^decimals` rounded to an integer, ties to even: the digits of
    /// `printf("%.*Lf", decimals, self)` (glibc prints the exact binary value).
    pub(super) fn round_scaled(self, decimals: u32) -> u128 {
        let s = u128::from(self.m) * 10u128.pow(decimals); // < 2^68
        if self.e >= 0 {
            return s << self.e; // only for values below 2^60 here
        }
        let sh = self.e.unsigned_abs();
        if sh >= 128 {
            return 0;
        }
        let q = s >> sh;
        let rem = s & ((1u128 << sh) - 1);
        let half = 1u128 << (sh - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    }
}
