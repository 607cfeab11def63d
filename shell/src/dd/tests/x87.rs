use super::super::x87::Ext;

#[test]
fn x87_emulation() {
    let x = |n| Ext::from_u64(n);
    // 1/3 rounded to 64 bits, times 3, is 1 (ties to even on the way back).
    assert_eq!(x(1).div(x(3)).mul(x(3)), x(1));
    assert_eq!(x(10).mul(x(1000)), x(10_000));
    assert_eq!(x(7).div(x(7)), x(1));
    assert!(x(999).le(x(1000)) && !x(1000).le(x(999)) && x(0).le(x(0)));
    assert_eq!(x(5).div(x(2)).round_scaled(0), 2); // 2.5 -> 2
    assert_eq!(x(7).div(x(2)).round_scaled(0), 4); // 3.5 -> 4
    assert_eq!(x(1).div(x(4)).round_scaled(1), 2); // 0.25 -> 0.2
    assert_eq!(x(3).div(x(4)).round_scaled(1), 8); // 0.75 -> 0.8
    assert_eq!(x(1).div(x(1 << 62)).div(x(1 << 62)).round_scaled(1), 0);
    assert_eq!(x(u64::MAX).round_scaled(0), u128::from(u64::MAX));
}
