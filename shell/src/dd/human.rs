//! Numbers as GNU prints them: byte counts and rates (gnulib's `human_readable`) and
//! `printf("%g")`.

use alloc::format;
use alloc::string::{String, ToString};
use core::fmt::Write;

use super::x87::Ext;

/// A byte count as GNU dd shows it: `134 MB` (powers of 1000) or `128 MiB` (powers of
/// 1024, `base_1024`), `512 B` below the first power; 3 significant digits at most,
/// rounded to nearest (gnulib `human_readable` with `human_autoscale |
/// human_round_to_nearest | human_space_before_unit | human_SI | human_B`).
pub fn human_bytes(n: u64, base_1024: bool) -> String {
    human_readable(n, 1, 1, base_1024)
}

/// gnulib's `human_readable(n, buf, opts, from_block_size, to_block_size)` with dd's
/// options: the value `n * from / to`, autoscaled. Exact integer arithmetic when
/// `from` and `to` divide each other, as gnulib does; otherwise gnulib computes in
/// `long double`, which is x87 80-bit extended precision on x86_64 Linux (the
/// reference): [`Ext`] emulates that bit for bit.
pub(super) fn human_readable(n: u64, from: u64, to: u64, base_1024: bool) -> String {
    let base: u64 = if base_1024 { 1024 } else { 1000 };
    if to <= from {
        if from.is_multiple_of(to) {
            let multiplier = from / to;
            if let Some(amt) = n.checked_mul(multiplier) {
                return human_integer(amt, 0, 0, base);
            }
        }
    } else if from != 0 && to.is_multiple_of(from) {
        // C's uintmax_t arithmetic, wrapping included.
        let divisor = to / from;
        let r10 = (n % divisor).wrapping_mul(10);
        let r2 = (r10 % divisor).wrapping_mul(2);
        let rounding = if r2 < divisor {
            u32::from(0 < r2)
        } else {
            2 + u32::from(divisor < r2)
        };
        return human_integer(n / divisor, (r10 / divisor) as u32, rounding, base);
    }
    human_float(n, from, to, base)
}

/// The power letters after `k`/`K`.
const POWER_LETTERS: &[u8] = b"\0KMGTPEZYRQ";
const EXPONENT_MAX: u32 = 10;

/// The unit suffix: ` B`, ` kB`, ` MB`…, or ` KiB`, ` MiB`….
fn unit(exponent: u32, base: u64) -> String {
    let mut s = String::from(" ");
    if exponent > 0 {
        if base == 1000 && exponent == 1 {
            s.push('k');
        } else {
            s.push(POWER_LETTERS[exponent as usize] as char);
        }
        if base == 1024 {
            s.push('i');
        }
    }
    s.push('B');
    s
}

/// gnulib's integer path: `amt.tenths` plus a rounding indicator (0: exact, 1: below
/// half a tenth, 2: half, 3: above half).
fn human_integer(mut amt: u64, mut tenths: u32, mut rounding: u32, base: u64) -> String {
    let mut exponent = 0;
    let mut fraction: Option<u32> = None;
    if base <= amt {
        let b = base as u32;
        loop {
            let r10 = (amt % base) as u32 * 10 + tenths;
            let r2 = (r10 % b) * 2 + (rounding >> 1);
            amt /= base;
            tenths = r10 / b;
            rounding = if r2 < b {
                u32::from(r2 + rounding != 0)
            } else {
                2 + u32::from(b < r2 + rounding)
            };
            exponent += 1;
            if !(base <= amt && exponent < EXPONENT_MAX) {
                break;
            }
        }
        if amt < 10 {
            if 2 < rounding + (tenths & 1) {
                tenths += 1;
                rounding = 0;
                if tenths == 10 {
                    amt += 1;
                    tenths = 0;
                }
            }
            if amt < 10 {
                fraction = Some(tenths);
                tenths = 0;
                rounding = 0;
            }
        }
    }
    if 5 < tenths + u32::from(0 < rounding + (amt & 1) as u32) {
        amt += 1;
        if amt == base && exponent < EXPONENT_MAX {
            exponent += 1;
            fraction = Some(0);
            amt = 1;
        }
    }
    let mut s = amt.to_string();
    if let Some(t) = fraction {
        let _ = write!(s, ".{t}");
    }
    s + &unit(exponent, base)
}

/// gnulib's `long double` path with autoscaling (at least one power: `0.0 kB`).
fn human_float(n: u64, from: u64, to: u64, base: u64) -> String {
    let damt = Ext::from_u64(n).mul(Ext::from_u64(from).div(Ext::from_u64(to)));
    let b = Ext::from_u64(base);
    let mut e = Ext::from_u64(1);
    let mut exponent = 0;
    loop {
        e = e.mul(b);
        exponent += 1;
        if !(e.mul(b).le(damt) && exponent < EXPONENT_MAX) {
            break;
        }
    }
    let damt = damt.div(e);
    // sprintf("%.1Lf"); if that is longer than "99.9" (SI) or "999.9" (IEC), "%.0Lf"
    // of damt * 10 / 10.
    let tenths = damt.round_scaled(1);
    let mut s = format!("{}.{}", tenths / 10, tenths % 10);
    if s.len() > 3 + usize::from(base == 1000) {
        let ten = Ext::from_u64(10);
        s = damt.mul(ten).div(ten).round_scaled(0).to_string();
    }
    s + &unit(exponent, base)
}

/// `printf("%g", v)`: 6 significant digits, trailing zeros removed, exponent form
/// below 1e-4 and from 1e6 (`1.52`, `0.0123`, `12`, `1.6694e-05`, `1.23457e+06`).
/// Rounds ties to even on the exact binary value, as glibc does.
pub fn format_g(v: f64) -> String {
    if v == 0.0 {
        return String::from("0");
    }
    let sci = format!("{v:.5e}"); // e.g. "1.52000e0", rounded to 6 digits
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            trim_fraction(mantissa),
            exp.unsigned_abs()
        )
    } else {
        let fixed = format!("{:.*}", (5 - exp) as usize, v);
        String::from(trim_fraction(&fixed))
    }
}

/// Drops trailing zeros after a decimal point, and the point if nothing is left.
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}
