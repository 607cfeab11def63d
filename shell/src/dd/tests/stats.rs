use super::*;

#[test]
fn record_accounting() {
    let mut s = Stats::new();
    s.record_read(512, 512);
    s.record_read(100, 512);
    s.record_read(0, 512); // a failed read replaced by conv=noerror,sync
    assert_eq!((s.full_in, s.partial_in, s.records_in()), (1, 2, 3));
    s.record_write(512, 512);
    s.record_write(1, 512);
    s.record_write(0, 512);
    assert_eq!((s.full_out, s.partial_out, s.bytes_out), (1, 1, 513));
}
