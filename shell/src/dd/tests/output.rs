use super::*;

/// A minimal engine over an in-memory input of `len` bytes, as GNU's `dd_copy`
/// without errors: reads as [`Plan::next_read`] says, pads with `conv=sync`,
/// writes each block with `bs=` or reblocks into `obs` without.
fn simulate(line: &str, len: u64) -> Stats {
    let a = ok(line);
    let p = plan(&a, Some(len), None).unwrap();
    let mut pos = p.in_offset;
    let mut st = Stats::new();
    let mut pending = 0;
    while let Some(want) = p.next_read(&st) {
        let n = want.min(len - pos);
        if n == 0 {
            break;
        }
        pos += n;
        st.record_read(n, a.ibs);
        let n = if a.conv.sync { a.ibs } else { n };
        if a.bs.is_some() {
            st.record_write(n, a.obs);
        } else {
            pending += n;
            while pending >= a.obs {
                st.record_write(a.obs, a.obs);
                pending -= a.obs;
            }
        }
    }
    if pending > 0 {
        st.record_write(pending, a.obs);
    }
    st
}

/// Whole summaries of GNU dd 9.1 runs on files of those sizes (elapsed time fixed
/// at 1.52 s through an LD_PRELOAD clock).
#[test]
fn gnu_runs() {
    let cases: &[(&str, u64, &str)] = &[
        (
            "bs=1000 count=2500 iflag=count_bytes",
            u64::MAX,
            "2+1 records in\n2+1 records out\n\
             2500 bytes (2.5 kB, 2.4 KiB) copied, 1.52 s, 1.6 kB/s\n",
        ),
        (
            "ibs=1000 obs=512 count=3",
            u64::MAX,
            "3+0 records in\n5+1 records out\n\
             3000 bytes (3.0 kB, 2.9 KiB) copied, 1.52 s, 2.0 kB/s\n",
        ),
        (
            "bs=512 conv=sync",
            1300,
            "2+1 records in\n3+0 records out\n\
             1536 bytes (1.5 kB, 1.5 KiB) copied, 1.52 s, 1.0 kB/s\n",
        ),
        (
            "bs=512",
            1300,
            "2+1 records in\n2+1 records out\n\
             1300 bytes (1.3 kB, 1.3 KiB) copied, 1.52 s, 0.9 kB/s\n",
        ),
        (
            "ibs=512 obs=1000 conv=sync",
            1300,
            "2+1 records in\n1+1 records out\n\
             1536 bytes (1.5 kB, 1.5 KiB) copied, 1.52 s, 1.0 kB/s\n",
        ),
        (
            "ibs=512 obs=1000",
            1300,
            "2+1 records in\n1+1 records out\n\
             1300 bytes (1.3 kB, 1.3 KiB) copied, 1.52 s, 0.9 kB/s\n",
        ),
        (
            "bs=1000 skip=2 count=2",
            5000,
            "2+0 records in\n2+0 records out\n\
             2000 bytes (2.0 kB, 2.0 KiB) copied, 1.52 s, 1.3 kB/s\n",
        ),
        (
            "bs=1000 skip=2500B count=1000B",
            5000,
            "1+0 records in\n1+0 records out\n\
             1000 bytes (1.0 kB) copied, 1.52 s, 0.7 kB/s\n",
        ),
        (
            "bs=1000 skip=2500 count=1000 iflag=skip_bytes,count_bytes",
            5000,
            "1+0 records in\n1+0 records out\n\
             1000 bytes (1.0 kB) copied, 1.52 s, 0.7 kB/s\n",
        ),
        (
            "ibs=300 obs=700 skip=1 count=7",
            5000,
            "7+0 records in\n3+0 records out\n\
             2100 bytes (2.1 kB, 2.1 KiB) copied, 1.52 s, 1.4 kB/s\n",
        ),
        (
            "obs=4096",
            5000,
            "9+1 records in\n1+1 records out\n\
             5000 bytes (5.0 kB, 4.9 KiB) copied, 1.52 s, 3.3 kB/s\n",
        ),
        (
            "bs=1024 count=0",
            5000,
            "0+0 records in\n0+0 records out\n0 bytes copied, 1.52 s, 0.0 kB/s\n",
        ),
        (
            "bs=1024 skip=4",
            5000,
            "0+1 records in\n0+1 records out\n904 bytes copied, 1.52 s, 0.6 kB/s\n",
        ),
        (
            "bs=1M count=3 iflag=count_bytes",
            u64::MAX,
            "0+1 records in\n0+1 records out\n3 bytes copied, 1.52 s, 0.0 kB/s\n",
        ),
        (
            "bs=16k count=8192",
            u64::MAX,
            "8192+0 records in\n8192+0 records out\n\
             134217728 bytes (134 MB, 128 MiB) copied, 1.52 s, 88.3 MB/s\n",
        ),
    ];
    for (ops, len, want) in cases {
        let st = simulate(&format!("if=in of=out {ops}"), *len);
        assert_eq!(summary(&st, 1_520_000_000, Status::Default), *want, "{ops}");
    }
}

#[test]
fn summary_statuses() {
    let st = Stats {
        full_in: 2,
        full_out: 2,
        bytes_out: 246_912,
        ..Stats::new()
    };
    let records = "2+0 records in\n2+0 records out\n";
    let xfer = "246912 bytes (247 kB, 241 KiB) copied, 1 s, 247 kB/s\n";
    assert_eq!(
        summary(&st, 1_000_000_000, Status::Default),
        format!("{records}{xfer}")
    );
    assert_eq!(
        summary(&st, 1_000_000_000, Status::Progress),
        format!("{records}{xfer}")
    );
    assert_eq!(summary(&st, 1_000_000_000, Status::NoXfer), records);
    assert_eq!(summary(&st, 1_000_000_000, Status::None), "");
    // No time at all: GNU's "Infinity B/s".
    let one = Stats {
        full_in: 1,
        full_out: 1,
        bytes_out: 1,
        ..Stats::new()
    };
    assert_eq!(
        summary(&one, 0, Status::Default),
        "1+0 records in\n1+0 records out\n1 byte copied, 0 s, Infinity B/s\n"
    );
    let t = Stats {
        truncated: 1,
        ..Stats::new()
    };
    assert!(summary(&t, 1, Status::NoXfer).ends_with("records out\n1 truncated record\n"));
    let t = Stats {
        truncated: 3,
        ..Stats::new()
    };
    assert!(summary(&t, 1, Status::NoXfer).ends_with("3 truncated records\n"));
}

/// GNU dd 9.1 with status=progress and its clock stuck at the given time: one line
/// per loop while the schedule catches up, then "\n" and the summary.
#[test]
fn progress_like_gnu() {
    // bs=1000 count=5, 3.5 s: lines before the 1st, 2nd and 3rd reads.
    let mut p = Progress::new();
    let mut out = String::new();
    for bytes in [0, 1000, 2000, 3000, 4000] {
        out.extend(p.poll(bytes, 3_500_000_000));
    }
    out.push_str(p.finish());
    let st = Stats {
        full_in: 5,
        full_out: 5,
        bytes_out: 5000,
        ..Stats::new()
    };
    out.push_str(&summary(&st, 3_500_000_000, Status::Progress));
    assert_eq!(
        out,
        "\r0 bytes copied, 4 s, 0.0 kB/s\
         \r1000 bytes (1.0 kB) copied, 4 s, 0.3 kB/s\
         \r2000 bytes (2.0 kB, 2.0 KiB) copied, 4 s, 0.6 kB/s\n\
         5+0 records in\n5+0 records out\n\
         5000 bytes (5.0 kB, 4.9 KiB) copied, 3.5 s, 1.4 kB/s\n"
    );
    // bs=100000 count=3, 2.5 s: "%.0f" rounds 2.5 to 2.
    let mut p = Progress::new();
    let lines: Vec<String> = [0, 100_000, 200_000]
        .iter()
        .filter_map(|&b| p.poll(b, 2_500_000_000))
        .collect();
    assert_eq!(
        lines,
        [
            "\r0 bytes copied, 2 s, 0.0 kB/s",
            "\r100000 bytes (100 kB, 98 KiB) copied, 2 s, 40.0 kB/s"
        ]
    );
    assert_eq!(
        progress_line(0, 1_000_000_000),
        "\r0 bytes copied, 1 s, 0 B/s"
    );
    assert_eq!(
        progress_line(123_456, 1_000_000_000),
        "\r123456 bytes (123 kB, 121 KiB) copied, 1 s, 123 kB/s"
    );
}

#[test]
fn progress_schedule_and_padding() {
    let mut p = Progress::new();
    assert_eq!(p.finish(), "");
    assert_eq!(p.poll(0, 999_999_999), None);
    let first = p.poll(109_923, 1_100_000_000).unwrap();
    assert_eq!(
        first,
        "\r109923 bytes (110 kB, 107 KiB) copied, 1 s, 99.9 kB/s"
    );
    assert_eq!(p.poll(109_923, 1_999_999_999), None);
    // A shorter line is padded to erase the longer one.
    let second = p.poll(210_000, 2_100_000_000).unwrap();
    assert_eq!(
        second,
        "\r210000 bytes (210 kB, 205 KiB) copied, 2 s, 100 kB/s "
    );
    assert_eq!(second.len(), first.len());
    assert_eq!(p.finish(), "\n");
    assert_eq!(p.finish(), "");
}
