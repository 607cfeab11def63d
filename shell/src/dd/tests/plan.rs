use super::*;

#[test]
fn plan_offsets_and_counts() {
    let a = ok("if=xvda of=xvdb bs=4k skip=2 seek=3 count=10");
    let p = plan(&a, Some(1 << 20), Some(1 << 20)).unwrap();
    assert_eq!((p.in_offset, p.out_offset), (8192, 12288));
    assert_eq!((p.max_records, p.max_bytes), (Some(10), 0));
    assert_eq!(p.in_bytes, Some(40960));
    assert_eq!(p.out_room, Some((1 << 20) - 12288));

    // Input shorter than count: to its end.
    let p = plan(&a, Some(20_000), None).unwrap();
    assert_eq!((p.in_bytes, p.out_room), (Some(20_000 - 8192), None));
    // Unbounded both ways.
    let a = ok("if=zero of=null");
    let p = plan(&a, None, None).unwrap();
    assert_eq!((p.in_bytes, p.max_records), (None, None));
    // Bytes, with different block sizes.
    let a = ok("if=a of=b ibs=1000 obs=4096 skip=1500 seek=5000 count=2500 iflag=skip_bytes,count_bytes oflag=seek_bytes");
    let p = plan(&a, None, None).unwrap();
    assert_eq!((p.in_offset, p.out_offset), (1500, 5000));
    assert_eq!(
        (p.max_records, p.max_bytes, p.in_bytes),
        (Some(2), 500, Some(2500))
    );
    // Blocks, with different block sizes.
    let a = ok("if=a of=b ibs=1000 obs=4096 skip=2 seek=3");
    let p = plan(&a, None, None).unwrap();
    assert_eq!((p.in_offset, p.out_offset), (2000, 12288));
    // Exactly at the end is fine.
    let a = ok("if=a of=b skip=128 seek=128");
    let p = plan(&a, Some(65536), Some(65536)).unwrap();
    assert_eq!((p.in_bytes, p.out_room), (Some(0), Some(0)));
}

#[test]
fn plan_next_read() {
    let a = ok("if=a of=b bs=1000 count=2500 iflag=count_bytes");
    let p = plan(&a, None, None).unwrap();
    let mut st = Stats::new();
    let mut reads = Vec::new();
    while let Some(n) = p.next_read(&st) {
        reads.push(n);
        st.record_read(n, a.ibs);
    }
    assert_eq!(reads, [1000, 1000, 500]);
    // count= counts reads, short ones included.
    let a = ok("if=a of=b bs=1000 count=2");
    let p = plan(&a, None, None).unwrap();
    let mut st = Stats::new();
    st.record_read(10, 1000);
    assert_eq!(p.next_read(&st), Some(1000));
    st.record_read(10, 1000);
    assert_eq!(p.next_read(&st), None);
    // count=0 reads nothing; no count reads forever.
    let p = plan(&ok("if=a of=b count=0"), None, None).unwrap();
    assert_eq!(p.next_read(&Stats::new()), None);
    let p = plan(&ok("if=a of=b ibs=7"), None, None).unwrap();
    let st = Stats {
        full_in: u64::MAX,
        ..Stats::new()
    };
    assert_eq!(p.next_read(&st), Some(7));
}

/// Messages compared with GNU dd 9.1 on a 64 KiB loop device.
#[test]
fn plan_errors_like_gnu() {
    let size = Some(65536);
    let e = |line: &str| plan(&ok(line), size, size).unwrap_err().to_string();
    assert_eq!(
        e("if=/dev/loop0 of=null skip=200"),
        "dd: /dev/loop0: cannot skip: Invalid argument"
    );
    assert_eq!(
        e("if=/dev/loop0 of=null skip=100 bs=1k"),
        "dd: /dev/loop0: cannot skip: Invalid argument"
    );
    assert_eq!(
        e("if=zero of=/dev/loop0 seek=200 count=1"),
        "dd: /dev/loop0: cannot seek: Invalid argument"
    );
    assert_eq!(
        e("if=/dev/loop0 of=null skip=9000000000000000000 bs=1M"),
        "dd: /dev/loop0: cannot skip: Value too large for defined data type"
    );
    assert_eq!(
        e("if=zero of=/dev/loop0 seek=9000000000000000000 bs=1M count=1 conv=notrunc"),
        "dd: /dev/loop0: cannot seek: Value too large for defined data type"
    );
    assert_eq!(
        e("if=zero of=/dev/loop0 bs=1M seek=99999999999999 count=1"),
        "dd: offset too large: cannot truncate to a length of seek=99999999999999 \
         (1048576-byte) blocks"
    );
    assert_eq!(
        e("if=zero of=/tmp/f2 seek=99999999999999999 count=1"),
        "dd: offset too large: cannot truncate to a length of seek=99999999999999999 \
         (512-byte) blocks"
    );
    // GNU's order: the seek= size check comes first (when opening the output).
    assert_eq!(
        e("if=a of=b skip=9000000000000000000 seek=9000000000000000000 bs=1M"),
        "dd: offset too large: cannot truncate to a length of seek=9000000000000000000 \
         (1048576-byte) blocks"
    );
    assert_eq!(
        e("if=a of=b skip=200 seek=200"),
        "dd: a: cannot skip: Invalid argument"
    );
    // Unsized devices can be skipped and seeked anywhere below i64::MAX.
    let p = plan(&ok("if=z of=n skip=1000000 seek=1000000"), None, None).unwrap();
    assert_eq!((p.in_offset, p.out_offset), (512_000_000, 512_000_000));
    // Names are quoted only when needed, as GNU's quotef does.
    let mut a = ok("if=x of=y skip=200");
    a.input = "my disk".into();
    assert_eq!(
        plan(&a, size, size).unwrap_err().to_string(),
        "dd: 'my disk': cannot skip: Invalid argument"
    );
    a.input = "it's".into();
    assert_eq!(
        plan(&a, size, size).unwrap_err().to_string(),
        "dd: \"it's\": cannot skip: Invalid argument"
    );
}
