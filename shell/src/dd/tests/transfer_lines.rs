use super::super::output::transfer_line;

/// `(elapsed ns, GNU's line)`: GNU dd 9.1 copying the bytes the line starts with
/// from /dev/zero with its clock faked to that elapsed time; random sizes and times,
/// both of gnulib's integer paths (times dividing or multiple of 1 s) and its
/// `long double` path.
const GNU_LINES: &[(u64, &str)] = &[
    (
        400000000,
        "35300000 bytes (35 MB, 34 MiB) copied, 0.4 s, 88.2 MB/s",
    ),
    (999999999, "1000 bytes (1.0 kB) copied, 1 s, 1.0 kB/s"),
    (
        1000000000,
        "999950 bytes (1.0 MB, 977 KiB) copied, 1 s, 1.0 MB/s",
    ),
    (
        1000000000,
        "999949 bytes (1.0 MB, 977 KiB) copied, 1 s, 1.0 MB/s",
    ),
    (
        1000000000,
        "99950 bytes (100 kB, 98 KiB) copied, 1 s, 100 kB/s",
    ),
    (
        1000000000,
        "9950 bytes (10 kB, 9.7 KiB) copied, 1 s, 10 kB/s",
    ),
    (
        1000000000,
        "995000 bytes (995 kB, 972 KiB) copied, 1 s, 995 kB/s",
    ),
    (1000000000, "1 byte copied, 1 s, 1 B/s"),
    (1, "0 bytes copied, 1e-09 s, 0 B/s"),
    (1, "1 byte copied, 1e-09 s, 1.0 GB/s"),
    (
        1,
        "1800000000 bytes (1.8 GB, 1.7 GiB) copied, 1e-09 s, 1.8 EB/s",
    ),
    (
        8,
        "4737988 bytes (4.7 MB, 4.5 MiB) copied, 8e-09 s, 592 TB/s",
    ),
    (204, "5 bytes copied, 2.04e-07 s, 24.5 MB/s"),
    (
        1000,
        "80087075 bytes (80 MB, 76 MiB) copied, 1e-06 s, 80 TB/s",
    ),
    (
        34974,
        "69676721 bytes (70 MB, 66 MiB) copied, 3.4974e-05 s, 2.0 TB/s",
    ),
    (
        186402,
        "1639109063 bytes (1.6 GB, 1.5 GiB) copied, 0.000186402 s, 8.8 TB/s",
    ),
    (
        120717945474,
        "32230648 bytes (32 MB, 31 MiB) copied, 120.718 s, 267 kB/s",
    ),
    (
        207459,
        "79986019 bytes (80 MB, 76 MiB) copied, 0.000207459 s, 386 GB/s",
    ),
    (435, "6 bytes copied, 4.35e-07 s, 13.8 MB/s"),
    (19000000000, "12 bytes copied, 19 s, 1 B/s"),
    (311347352, "175 bytes copied, 0.311347 s, 0.6 kB/s"),
    (
        4163,
        "88514501 bytes (89 MB, 84 MiB) copied, 4.163e-06 s, 21.3 TB/s",
    ),
    (10, "4041 bytes (4.0 kB, 3.9 KiB) copied, 1e-08 s, 404 GB/s"),
    (
        6,
        "1309397 bytes (1.3 MB, 1.2 MiB) copied, 6e-09 s, 218 TB/s",
    ),
    (
        389375,
        "15387715 bytes (15 MB, 15 MiB) copied, 0.000389375 s, 39.5 GB/s",
    ),
    (
        2,
        "17094346 bytes (17 MB, 16 MiB) copied, 2e-09 s, 8.5 PB/s",
    ),
    (5, "9875 bytes (9.9 kB, 9.6 KiB) copied, 5e-09 s, 2.0 TB/s"),
    (5184073446258, "1 byte copied, 5184.07 s, 0.0 kB/s"),
    (
        7000000000,
        "38708970 bytes (39 MB, 37 MiB) copied, 7 s, 5.5 MB/s",
    ),
    (
        2691265,
        "160327 bytes (160 kB, 157 KiB) copied, 0.00269126 s, 59.6 MB/s",
    ),
    (
        8564671,
        "5241924 bytes (5.2 MB, 5.0 MiB) copied, 0.00856467 s, 612 MB/s",
    ),
    (
        378,
        "54626688 bytes (55 MB, 52 MiB) copied, 3.78e-07 s, 145 TB/s",
    ),
    (1134150, "10 bytes copied, 0.00113415 s, 8.8 kB/s"),
    (
        50601,
        "1512 bytes (1.5 kB, 1.5 KiB) copied, 5.0601e-05 s, 29.9 MB/s",
    ),
    (
        35,
        "942019801 bytes (942 MB, 898 MiB) copied, 3.5e-08 s, 26.9 PB/s",
    ),
    (219542, "6 bytes copied, 0.000219542 s, 27.3 kB/s"),
    (
        28921894378,
        "20393484 bytes (20 MB, 19 MiB) copied, 28.9219 s, 705 kB/s",
    ),
    (17, "10 bytes copied, 1.7e-08 s, 588 MB/s"),
    (
        335858596,
        "538120 bytes (538 kB, 526 KiB) copied, 0.335859 s, 1.6 MB/s",
    ),
    (
        189374,
        "3605323 bytes (3.6 MB, 3.4 MiB) copied, 0.000189374 s, 19.0 GB/s",
    ),
    (10, "2371 bytes (2.4 kB, 2.3 KiB) copied, 1e-08 s, 237 GB/s"),
    (158369793, "45 bytes copied, 0.15837 s, 0.3 kB/s"),
    (
        223309388234,
        "106425 bytes (106 kB, 104 KiB) copied, 223.309 s, 0.5 kB/s",
    ),
    (
        641,
        "1340054 bytes (1.3 MB, 1.3 MiB) copied, 6.41e-07 s, 2.1 TB/s",
    ),
    (
        11256083572,
        "17042 bytes (17 kB, 17 KiB) copied, 11.2561 s, 1.5 kB/s",
    ),
    (58902281682, "19 bytes copied, 58.9023 s, 0.0 kB/s"),
    (
        8000000000,
        "478356 bytes (478 kB, 467 KiB) copied, 8 s, 60 kB/s",
    ),
    (
        75004432323,
        "1000414 bytes (1.0 MB, 977 KiB) copied, 75.0044 s, 13.3 kB/s",
    ),
    (40, "343 bytes copied, 4e-08 s, 8.6 GB/s"),
    (
        141,
        "7869 bytes (7.9 kB, 7.7 KiB) copied, 1.41e-07 s, 55.8 GB/s",
    ),
    (
        436036,
        "128184 bytes (128 kB, 125 KiB) copied, 0.000436036 s, 294 MB/s",
    ),
    (4000000000, "202 bytes copied, 4 s, 50 B/s"),
    (4, "30375 bytes (30 kB, 30 KiB) copied, 4e-09 s, 7.6 TB/s"),
    (
        334,
        "668013 bytes (668 kB, 652 KiB) copied, 3.34e-07 s, 2.0 TB/s",
    ),
    (
        28140850,
        "3031752 bytes (3.0 MB, 2.9 MiB) copied, 0.0281408 s, 108 MB/s",
    ),
    (
        56920806,
        "457268576 bytes (457 MB, 436 MiB) copied, 0.0569208 s, 8.0 GB/s",
    ),
    (18000000000, "358 bytes copied, 18 s, 20 B/s"),
    (
        185,
        "3216 bytes (3.2 kB, 3.1 KiB) copied, 1.85e-07 s, 17.4 GB/s",
    ),
    (698951299313, "2 bytes copied, 698.951 s, 0.0 kB/s"),
    (12138934, "871 bytes copied, 0.0121389 s, 71.8 kB/s"),
    (
        1539679124,
        "2109 bytes (2.1 kB, 2.1 KiB) copied, 1.53968 s, 1.4 kB/s",
    ),
    (
        438351770,
        "707146 bytes (707 kB, 691 KiB) copied, 0.438352 s, 1.6 MB/s",
    ),
    (
        8715844937,
        "398471 bytes (398 kB, 389 KiB) copied, 8.71584 s, 45.7 kB/s",
    ),
    (
        1866191460,
        "11747 bytes (12 kB, 11 KiB) copied, 1.86619 s, 6.3 kB/s",
    ),
    (11341158034, "44 bytes copied, 11.3412 s, 0.0 kB/s"),
    (
        40,
        "1442599 bytes (1.4 MB, 1.4 MiB) copied, 4e-08 s, 36 TB/s",
    ),
    (
        22,
        "423081 bytes (423 kB, 413 KiB) copied, 2.2e-08 s, 19.2 TB/s",
    ),
    (
        25,
        "83571 bytes (84 kB, 82 KiB) copied, 2.5e-08 s, 3.3 TB/s",
    ),
    (
        9000000000,
        "1907 bytes (1.9 kB, 1.9 KiB) copied, 9 s, 212 B/s",
    ),
    (
        441,
        "312281174 bytes (312 MB, 298 MiB) copied, 4.41e-07 s, 708 TB/s",
    ),
    (
        5158901072,
        "488104607 bytes (488 MB, 465 MiB) copied, 5.1589 s, 94.6 MB/s",
    ),
    (
        25967263,
        "17417 bytes (17 kB, 17 KiB) copied, 0.0259673 s, 671 kB/s",
    ),
    (
        17474,
        "377075095 bytes (377 MB, 360 MiB) copied, 1.7474e-05 s, 21.6 TB/s",
    ),
    (
        15149329125,
        "34759 bytes (35 kB, 34 KiB) copied, 15.1493 s, 2.3 kB/s",
    ),
    (62963361938, "26 bytes copied, 62.9634 s, 0.0 kB/s"),
    (10800879, "9 bytes copied, 0.0108009 s, 0.8 kB/s"),
    (20, "158 bytes copied, 2e-08 s, 7.9 GB/s"),
    (
        920,
        "6643076 bytes (6.6 MB, 6.3 MiB) copied, 9.2e-07 s, 7.2 TB/s",
    ),
    (356, "27 bytes copied, 3.56e-07 s, 75.8 MB/s"),
    (8, "22578 bytes (23 kB, 22 KiB) copied, 8e-09 s, 2.8 TB/s"),
    (
        85784319,
        "48054 bytes (48 kB, 47 KiB) copied, 0.0857843 s, 560 kB/s",
    ),
    (
        22905916455,
        "18550357 bytes (19 MB, 18 MiB) copied, 22.9059 s, 810 kB/s",
    ),
    (
        1500000000,
        "6675 bytes (6.7 kB, 6.5 KiB) copied, 1.5 s, 4.4 kB/s",
    ),
    (
        700000000,
        "175350000 bytes (175 MB, 167 MiB) copied, 0.7 s, 250 MB/s",
    ),
    (
        26511649782,
        "12323940 bytes (12 MB, 12 MiB) copied, 26.5116 s, 465 kB/s",
    ),
    (600000000, "90 bytes copied, 0.6 s, 0.2 kB/s"),
    (
        22031869164,
        "1307591 bytes (1.3 MB, 1.2 MiB) copied, 22.0319 s, 59.3 kB/s",
    ),
    (
        6194141325,
        "4090920638 bytes (4.1 GB, 3.8 GiB) copied, 6.19414 s, 660 MB/s",
    ),
    (
        3851087953,
        "1903400220 bytes (1.9 GB, 1.8 GiB) copied, 3.85109 s, 494 MB/s",
    ),
    (
        8694925045,
        "4226169 bytes (4.2 MB, 4.0 MiB) copied, 8.69493 s, 486 kB/s",
    ),
    (
        15650637298,
        "10140831 bytes (10 MB, 9.7 MiB) copied, 15.6506 s, 648 kB/s",
    ),
    (
        4727320100,
        "1221303 bytes (1.2 MB, 1.2 MiB) copied, 4.72732 s, 258 kB/s",
    ),
    (
        19489800519,
        "38005112 bytes (38 MB, 36 MiB) copied, 19.4898 s, 2.0 MB/s",
    ),
    (
        18677695536,
        "1155216 bytes (1.2 MB, 1.1 MiB) copied, 18.6777 s, 61.9 kB/s",
    ),
    (
        600000000,
        "2670000 bytes (2.7 MB, 2.5 MiB) copied, 0.6 s, 4.4 MB/s",
    ),
    (
        11630953788,
        "4387777317 bytes (4.4 GB, 4.1 GiB) copied, 11.631 s, 377 MB/s",
    ),
    (
        600000000,
        "52950000 bytes (53 MB, 50 MiB) copied, 0.6 s, 88.2 MB/s",
    ),
    (
        1300000000,
        "65000 bytes (65 kB, 63 KiB) copied, 1.3 s, 50.0 kB/s",
    ),
    (
        900000000,
        "899550000 bytes (900 MB, 858 MiB) copied, 0.9 s, 1000 MB/s",
    ),
    (
        10509037574,
        "1571626 bytes (1.6 MB, 1.5 MiB) copied, 10.509 s, 150 kB/s",
    ),
    (
        15680732975,
        "14331406 bytes (14 MB, 14 MiB) copied, 15.6807 s, 914 kB/s",
    ),
    (
        1234567890123456,
        "1000000000 bytes (1.0 GB, 954 MiB) copied, 1.23457e+06 s, 0.8 kB/s",
    ),
    (
        1000000000000000000,
        "5000000000 bytes (5.0 GB, 4.7 GiB) copied, 1e+09 s, 5 B/s",
    ),
    (
        999999500000000,
        "123456789 bytes (123 MB, 118 MiB) copied, 1e+06 s, 0.1 kB/s",
    ),
    (100, "4096 bytes (4.1 kB, 4.0 KiB) copied, 1e-07 s, 41 GB/s"),
    (
        10000,
        "4096 bytes (4.1 kB, 4.0 KiB) copied, 1e-05 s, 410 MB/s",
    ),
    (
        100000,
        "4096 bytes (4.1 kB, 4.0 KiB) copied, 0.0001 s, 41 MB/s",
    ),
    (
        99999,
        "4096 bytes (4.1 kB, 4.0 KiB) copied, 9.9999e-05 s, 41.0 MB/s",
    ),
    (
        999999,
        "999999 bytes (1.0 MB, 977 KiB) copied, 0.000999999 s, 1.0 GB/s",
    ),
    (1, "1 byte copied, 1e-09 s, 1.0 GB/s"),
    (
        1000000000,
        "134217728 bytes (134 MB, 128 MiB) copied, 1 s, 134 MB/s",
    ),
    (
        500000000,
        "134217728 bytes (134 MB, 128 MiB) copied, 0.5 s, 268 MB/s",
    ),
    (
        2000000000,
        "134217728 bytes (134 MB, 128 MiB) copied, 2 s, 67 MB/s",
    ),
    (
        3000000000,
        "134217728 bytes (134 MB, 128 MiB) copied, 3 s, 45 MB/s",
    ),
    (3000000000, "1000 bytes (1.0 kB) copied, 3 s, 333 B/s"),
    (1000000000, "999 bytes copied, 1 s, 999 B/s"),
    (
        1000000000,
        "999500 bytes (1.0 MB, 976 KiB) copied, 1 s, 1.0 MB/s",
    ),
    (
        1000000000,
        "999499 bytes (999 kB, 976 KiB) copied, 1 s, 999 kB/s",
    ),
    (
        1000000000,
        "1048576 bytes (1.0 MB, 1.0 MiB) copied, 1 s, 1.0 MB/s",
    ),
    (
        1000000000,
        "1024 bytes (1.0 kB, 1.0 KiB) copied, 1 s, 1.0 kB/s",
    ),
    (
        10000000000,
        "9994 bytes (10 kB, 9.8 KiB) copied, 10 s, 999 B/s",
    ),
    (123000, "512 bytes copied, 0.000123 s, 4.2 MB/s"),
    (
        1520000000,
        "134217728 bytes (134 MB, 128 MiB) copied, 1.52 s, 88.3 MB/s",
    ),
    (1520000000, "1023 bytes (1.0 kB) copied, 1.52 s, 0.7 kB/s"),
    (
        1520000000,
        "9999 bytes (10 kB, 9.8 KiB) copied, 1.52 s, 6.6 kB/s",
    ),
    (
        1520000000,
        "10239 bytes (10 kB, 10 KiB) copied, 1.52 s, 6.7 kB/s",
    ),
    (
        1520000000,
        "999999 bytes (1.0 MB, 977 KiB) copied, 1.52 s, 658 kB/s",
    ),
    (
        1520000000,
        "1048575 bytes (1.0 MB, 1.0 MiB) copied, 1.52 s, 690 kB/s",
    ),
    (
        1520000000,
        "999500000 bytes (1.0 GB, 953 MiB) copied, 1.52 s, 658 MB/s",
    ),
    (
        1520000000,
        "2147483648 bytes (2.1 GB, 2.0 GiB) copied, 1.52 s, 1.4 GB/s",
    ),
];

/// Ties and near-ties where GNU's `long double` result differs from the exact
/// quotient (exact rounding would print 3.8, 100, 10.0, 1000, 6.6, 0.0): the x87
/// emulation has to get these right.
const GNU_X87_LINES: &[(u64, &str)] = &[
    (
        700000000,
        "2625 bytes (2.6 kB, 2.6 KiB) copied, 0.7 s, 3.7 kB/s",
    ),
    (
        700000000,
        "2625000 bytes (2.6 MB, 2.5 MiB) copied, 0.7 s, 3.7 MB/s",
    ),
    (
        300000000,
        "29985 bytes (30 kB, 29 KiB) copied, 0.3 s, 99.9 kB/s",
    ),
    (
        1100000000,
        "109945 bytes (110 kB, 107 KiB) copied, 1.1 s, 99.9 kB/s",
    ),
    (
        300000000,
        "29985000 bytes (30 MB, 29 MiB) copied, 0.3 s, 99.9 MB/s",
    ),
    (
        1100000000,
        "109945000 bytes (110 MB, 105 MiB) copied, 1.1 s, 99.9 MB/s",
    ),
    (
        300000000,
        "2985 bytes (3.0 kB, 2.9 KiB) copied, 0.3 s, 9.9 kB/s",
    ),
    (
        1100000000,
        "10945 bytes (11 kB, 11 KiB) copied, 1.1 s, 9.9 kB/s",
    ),
    (
        300000000,
        "2985000 bytes (3.0 MB, 2.8 MiB) copied, 0.3 s, 9.9 MB/s",
    ),
    (
        1100000000,
        "10945000 bytes (11 MB, 10 MiB) copied, 1.1 s, 9.9 MB/s",
    ),
    (
        700000000,
        "699650 bytes (700 kB, 683 KiB) copied, 0.7 s, 999 kB/s",
    ),
    (
        700000000,
        "699650000 bytes (700 MB, 667 MiB) copied, 0.7 s, 999 MB/s",
    ),
    (
        300000000,
        "1995 bytes (2.0 kB, 1.9 KiB) copied, 0.3 s, 6.7 kB/s",
    ),
    (
        3100000000,
        "20615 bytes (21 kB, 20 KiB) copied, 3.1 s, 6.7 kB/s",
    ),
    (
        300000000,
        "1995000 bytes (2.0 MB, 1.9 MiB) copied, 0.3 s, 6.7 MB/s",
    ),
    (
        3100000000,
        "20615000 bytes (21 MB, 20 MiB) copied, 3.1 s, 6.7 MB/s",
    ),
    (300000000, "15 bytes copied, 0.3 s, 0.1 kB/s"),
    (3100000000, "155 bytes copied, 3.1 s, 0.1 kB/s"),
];

#[test]
fn transfer_lines_match_gnu() {
    for &(ns, want) in GNU_LINES.iter().chain(GNU_X87_LINES) {
        let bytes = leading_bytes(want);
        assert_eq!(
            transfer_line(bytes, ns, false),
            want,
            "{bytes} bytes in {ns} ns"
        );
    }
}

/// The byte count a transfer line starts with (`35300000` of `35300000 bytes (35 MB,
/// 34 MiB) copied, ...`).
fn leading_bytes(line: &str) -> u64 {
    line.split(' ').next().and_then(|n| n.parse().ok()).unwrap()
}
