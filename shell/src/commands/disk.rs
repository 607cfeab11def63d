//! The disk commands' arguments and `lsblk`'s table: which `/dev/` paths are disks
//! (`xvdX`, `hdX`), `discard DEVICE OFFSET LENGTH` (BLKIF_OP_DISCARD takes whole
//! 512-byte sectors, blkif.h), `sha256sum [-n BYTES]`, and one `lsblk` row from
//! blkfront's negotiated [`Features`] (blkif.h's `feature-*` keys).

use crate::{parse_size, CmdError};
use alloc::format;
use alloc::string::String;
use xenlet_drivers::blkfront::{DiskInfo, Features};

/// The disk a `/dev/` path names (`/dev/xvda` → `xvda`; Xen's `hdX` too).
pub fn disk_name(path: &str) -> Option<&str> {
    path.strip_prefix("/dev/")
        .filter(|n| n.starts_with("xvd") || n.starts_with("hd"))
}

/// A checked `discard` request, in 512-byte sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Discard<'a> {
    /// The disk.
    pub device: &'a str,
    /// First sector.
    pub sector: u64,
    /// Sectors to discard (at least one).
    pub sectors: u64,
}

/// `DEVICE OFFSET LENGTH` (sizes with suffixes), both non-zero multiples of 512
/// (the offset may be 0).
pub fn discard_args<'a>(args: &[&'a str]) -> Result<Discard<'a>, CmdError> {
    let [device, off, len] = args else {
        return Err(CmdError::usage("expected DEVICE OFFSET LENGTH"));
    };
    let num = |s: &str| parse_size(s).map_err(|e| CmdError::usage(format!("{e}")));
    let (off, len) = (num(off)?, num(len)?);
    if off % 512 != 0 || len % 512 != 0 || len == 0 {
        return Err(CmdError::usage(
            "OFFSET and LENGTH must be non-zero multiples of 512",
        ));
    }
    Ok(Discard {
        device,
        sector: off / 512,
        sectors: len / 512,
    })
}

/// `sha256sum [-n BYTES] FILE...`: the byte limit and the files.
pub fn sha256sum_args<'a, 'b>(
    args: &'b [&'a str],
) -> Result<(Option<u64>, &'b [&'a str]), CmdError> {
    let (limit, files) = match args {
        ["-n", n, rest @ ..] => (
            Some(parse_size(n).map_err(|e| CmdError::usage(format!("{e}")))?),
            rest,
        ),
        rest => (None, rest),
    };
    if files.is_empty() {
        return Err(CmdError::usage("missing file operand"));
    }
    Ok((limit, files))
}

/// `lsblk`'s header line.
pub const LSBLK_HEADER: &str =
    "NAME   SIZE(MiB)   SECTOR PHYS  RO RING(pages/slots) SEGS   PERSISTENT FLUSH DISCARD STATE";

/// A disk's state for `lsblk`: `ok` or `broken: WHY`, and the grant pages it keeps
/// quarantined (granted to a backend that never answered for them).
pub fn disk_state(broken: Option<&str>, quarantined_pages: u64) -> String {
    match (broken, quarantined_pages) {
        (Some(why), 0) => format!("broken: {why}"),
        (Some(why), q) => format!("broken: {why}; {q} pages quarantined"),
        (None, 0) => String::from("ok"),
        (None, q) => format!("ok; {q} pages quarantined"),
    }
}

/// The cache-flush column: `flush` (BLKIF_OP_FLUSH_DISKCACHE), `barr`
/// (BLKIF_OP_WRITE_BARRIER) or `no`.
fn flush_column(f: &Features) -> &'static str {
    if f.flush {
        "flush"
    } else if f.barrier {
        "barr"
    } else {
        "no"
    }
}

/// One `lsblk` row (without the newline) under [`LSBLK_HEADER`].
pub fn lsblk_row(i: &DiskInfo, state: &str) -> String {
    let f = &i.features;
    let yes = |b: bool| if b { "yes" } else { "no" };
    format!(
        "{:<6} {:>9} {:>8} {:>5} {:>3} {:>6}/{:<10} {:>4}{} {:<10} {:<5} {:<7} {}",
        i.name,
        i.bytes() >> 20,
        i.sector_size,
        i.physical_sector_size,
        u8::from(i.readonly),
        f.ring_pages,
        f.ring_entries,
        f.max_segments,
        if f.indirect_segments > 0 { "i" } else { " " },
        yes(f.persistent),
        flush_column(f),
        yes(f.discard),
        state
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::fuzz::{args, XorShift};
    use alloc::vec::Vec;

    #[test]
    fn disks_are_xvd_and_hd_under_dev() {
        assert_eq!(disk_name("/dev/xvda"), Some("xvda"));
        assert_eq!(disk_name("/dev/xvdb1"), Some("xvdb1"));
        assert_eq!(disk_name("/dev/hdc"), Some("hdc"));
        assert_eq!(disk_name("/dev/zero"), None);
        assert_eq!(disk_name("xvda"), None);
        assert_eq!(disk_name("/tmp/xvda"), None);
        assert_eq!(disk_name("/dev/"), None);
    }

    #[test]
    fn discard_takes_whole_sectors() {
        assert_eq!(
            discard_args(&["xvdb", "0", "1M"]),
            Ok(Discard {
                device: "xvdb",
                sector: 0,
                sectors: 2048
            })
        );
        assert_eq!(
            discard_args(&["xvdb", "4096", "512"]),
            Ok(Discard {
                device: "xvdb",
                sector: 8,
                sectors: 1
            })
        );
        let bad = Err(CmdError::usage(
            "OFFSET and LENGTH must be non-zero multiples of 512",
        ));
        assert_eq!(discard_args(&["xvdb", "0", "0"]), bad);
        assert_eq!(discard_args(&["xvdb", "100", "512"]), bad);
        assert_eq!(discard_args(&["xvdb", "0", "1000"]), bad);
        assert_eq!(
            discard_args(&["xvdb", "0"]),
            Err(CmdError::usage("expected DEVICE OFFSET LENGTH"))
        );
        assert!(matches!(
            discard_args(&["xvdb", "lots", "512"]),
            Err(CmdError::Usage(_))
        ));
    }

    #[test]
    fn sha256sum_limit_and_files() {
        assert_eq!(
            sha256sum_args(&["-n", "1M", "/dev/xvda"]),
            Ok((Some(1 << 20), &["/dev/xvda"][..]))
        );
        assert_eq!(sha256sum_args(&["a", "b"]), Ok((None, &["a", "b"][..])));
        assert_eq!(
            sha256sum_args(&["-n", "4k"]),
            Err(CmdError::usage("missing file operand"))
        );
        assert_eq!(
            sha256sum_args(&[]),
            Err(CmdError::usage("missing file operand"))
        );
        assert!(sha256sum_args(&["-n", "x", "f"]).is_err());
    }

    #[test]
    fn state_column() {
        assert_eq!(disk_state(None, 0), "ok");
        assert_eq!(disk_state(None, 3), "ok; 3 pages quarantined");
        assert_eq!(disk_state(Some("bad id"), 0), "broken: bad id");
        assert_eq!(
            disk_state(Some("bad id"), 2),
            "broken: bad id; 2 pages quarantined"
        );
    }

    fn disk(features: Features) -> DiskInfo {
        DiskInfo {
            name: "xvda".into(),
            sectors: 2 * 2048 * 64, // 128 MiB
            sector_size: 512,
            physical_sector_size: 4096,
            readonly: false,
            removable: false,
            features,
        }
    }

    #[test]
    fn lsblk_rows_line_up_under_the_header() {
        let f = Features {
            ring_pages: 4,
            ring_entries: 128,
            max_segments: 32,
            indirect_segments: 256,
            persistent: true,
            flush: true,
            barrier: true,
            discard: true,
        };
        let row = lsblk_row(&disk(f), "ok");
        assert_eq!(
            row,
            "xvda         128      512  4096   0      4/128          32i yes        flush yes     ok"
        );
        let mut ro = disk(Features {
            barrier: true,
            ..Features::default()
        });
        ro.readonly = true;
        assert_eq!(
            lsblk_row(&ro, "broken: x"),
            "xvda         128      512  4096   1      0/0             0  no         barr  no      broken: x"
        );
        assert_eq!(
            lsblk_row(&disk(Features::default()), "ok"),
            "xvda         128      512  4096   0      0/0             0  no         no    no      ok"
        );
    }

    #[test]
    fn random_arguments_never_panic() {
        let mut r = XorShift(0x2545_f491_4f6c_dd1d);
        let vocab = [
            "-n",
            "xvda",
            "/dev/xvdb",
            "0",
            "512",
            "1M",
            "4k",
            "18446744073709551615",
        ];
        for _ in 0..5000 {
            let owned = args(&mut r, &vocab);
            let a: Vec<&str> = owned.iter().map(String::as_str).collect();
            if let Ok(d) = discard_args(&a) {
                assert!(d.sectors > 0);
                assert_eq!(d.device, a[0]);
            }
            if let Ok((_, files)) = sha256sum_args(&a) {
                assert!(!files.is_empty());
            }
            for w in &a {
                if let Some(n) = disk_name(w) {
                    assert!(w.ends_with(n));
                }
            }
        }
    }
}
