use super::*;

#[test]
fn defaults() {
    let a = ok("if=/dev/xvda of=null");
    assert_eq!(a.input, "/dev/xvda");
    assert_eq!(a.output, "null");
    assert_eq!((a.ibs, a.obs, a.bs), (512, 512, None));
    assert_eq!((a.count, a.skip, a.seek), (None, 0, 0));
    assert_eq!(a.conv, Conv::default());
    assert_eq!(a.iflag, Flags::default());
    assert_eq!(a.oflag, Flags::default());
    assert_eq!(a.status, Status::Default);
    assert!(a.warnings.is_empty());
}

#[test]
fn block_sizes() {
    let a = ok("if=a of=b bs=16k");
    assert_eq!((a.ibs, a.obs, a.bs), (16384, 16384, Some(16384)));
    let a = ok("if=a of=b ibs=1M obs=4kB");
    assert_eq!((a.ibs, a.obs, a.bs), (1 << 20, 4000, None));
    let a = ok("if=a of=b ibs=100");
    assert_eq!((a.ibs, a.obs), (100, 512));
    // bs= wins over ibs=/obs= in any order, as in GNU.
    let a = ok("if=a of=b bs=4096 ibs=1 obs=2");
    assert_eq!((a.ibs, a.obs, a.bs), (4096, 4096, Some(4096)));
    let a = ok("if=a of=b ibs=1 bs=2x1K obs=3");
    assert_eq!((a.ibs, a.obs), (2048, 2048));
    // Later operands override earlier ones.
    let a = ok("if=a of=b if=c of=d bs=1 bs=2 count=1 count=3");
    assert_eq!((a.input.as_str(), a.output.as_str()), ("c", "d"));
    assert_eq!((a.bs, a.count), (Some(2), Some(3)));
    assert_eq!(ok("if=a of=b bs=7E").ibs, 7 << 60);
    assert_eq!(ok("if=a of=b bs=9223372036854775806").ibs, MAX_BLOCK_SIZE);
}

#[test]
fn counts_skips_and_seeks() {
    let a = ok("if=a of=b count=10 skip=2 seek=3");
    assert_eq!((a.count, a.skip, a.seek), (Some(10), 2, 3));
    assert!(!a.iflag.count_bytes && !a.iflag.skip_bytes && !a.oflag.seek_bytes);
    let a = ok("if=a of=b iseek=4 oseek=5 count=0");
    assert_eq!((a.count, a.skip, a.seek), (Some(0), 4, 5));
    // A 'B' anywhere in the number counts bytes (coreutils 9.1+).
    let a = ok("if=a of=b count=1MiB skip=512B seek=1KB");
    assert_eq!((a.count, a.skip, a.seek), (Some(1 << 20), 512, 1000));
    assert!(a.iflag.count_bytes && a.iflag.skip_bytes && a.oflag.seek_bytes);
    // …from the operand that is in effect, OR-ed with the flags.
    let a = ok("if=a of=b count=1B count=2 skip=3 iflag=skip_bytes");
    assert!(!a.iflag.count_bytes && a.iflag.skip_bytes);
    let a = ok("if=a of=b iflag=count_bytes,skip_bytes oflag=seek_bytes");
    assert!(a.iflag.count_bytes && a.iflag.skip_bytes && a.oflag.seek_bytes);
    assert_eq!(
        ok("if=a of=b skip=9223372036854775807").skip,
        i64::MAX as u64
    );
}

#[test]
fn conversions_flags_and_status() {
    let a = ok("if=a of=b conv=fsync,fdatasync conv=notrunc,noerror,sync");
    assert_eq!(
        a.conv,
        Conv {
            fsync: true,
            fdatasync: true,
            notrunc: true,
            noerror: true,
            sync: true
        }
    );
    let a = ok("if=a of=b iflag=direct,fullblock iflag=dsync,sync oflag=direct,dsync,sync");
    assert_eq!(
        a.iflag,
        Flags {
            direct: true,
            dsync: true,
            sync: true,
            fullblock: true,
            ..Flags::default()
        }
    );
    assert_eq!(
        a.oflag,
        Flags {
            direct: true,
            dsync: true,
            sync: true,
            ..Flags::default()
        }
    );
    // Symbols for the other side are accepted and do nothing, as in GNU.
    let a = ok("if=a of=b iflag=seek_bytes oflag=count_bytes,skip_bytes");
    assert!(a.iflag.seek_bytes && a.oflag.count_bytes && a.oflag.skip_bytes);
    assert_eq!(ok("if=a of=b status=none").status, Status::None);
    assert_eq!(ok("if=a of=b status=noxfer").status, Status::NoXfer);
    assert_eq!(ok("if=a of=b status=progress").status, Status::Progress);
    // Exclusive: the last one wins, in a list or across operands.
    assert_eq!(ok("if=a of=b status=progress,none").status, Status::None);
    assert_eq!(
        ok("if=a of=b status=none status=noxfer").status,
        Status::NoXfer
    );
}

#[test]
fn zero_multiplier_warning() {
    // GNU: "dd: warning: '0x' is a zero multiplier; use '00x' if that is intended".
    const W: &str = "'0x' is a zero multiplier; use '00x' if that is intended";
    assert_eq!(ok("if=a of=b count=0x5").warnings, [W]);
    assert_eq!(ok("if=a of=b count=2x0x5").warnings, [W]);
    assert!(ok("if=a of=b count=00x5").warnings.is_empty());
    assert!(ok("if=a of=b count=0").warnings.is_empty());
    assert!(ok("if=a of=b count=5x0").warnings.is_empty());
}
