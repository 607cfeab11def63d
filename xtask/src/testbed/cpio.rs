//! A minimal writer for the `newc` cpio format, as the Linux kernel unpacks an
//! initramfs: no external `cpio`, and device nodes without `mknod` on the host.

/// An archive being built in memory.
pub struct Cpio {
    out: Vec<u8>,
    ino: u32,
}

impl Cpio {
    pub fn new() -> Cpio {
        Cpio {
            out: Vec::new(),
            ino: 1,
        }
    }

    pub fn dir(&mut self, path: &str) {
        self.entry(path, 0o040_755, &[], (0, 0));
    }

    pub fn file(&mut self, path: &str, data: &[u8], perm: u32) {
        self.entry(path, 0o100_000 | perm, data, (0, 0));
    }

    pub fn char_dev(&mut self, path: &str, major: u32, minor: u32) {
        self.entry(path, 0o020_600, &[], (major, minor));
    }

    /// The archive, with its trailer.
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[], (0, 0));
        self.out
    }

    fn entry(&mut self, path: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        let name_len = path.len() + 1;
        let ino = self.ino;
        self.ino += 1;
        let nlink = if mode & 0o170_000 == 0o040_000 { 2 } else { 1 };
        let size = u32::try_from(data.len()).expect("cpio member under 4 GiB");
        let fields = [
            ino,
            mode,
            0,
            0,
            nlink,
            0,
            size,
            0,
            0,
            rdev.0,
            rdev.1,
            name_len as u32,
            0,
        ];
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.out.extend_from_slice(path.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while self.out.len() & 3 != 0 {
            self.out.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cpio;

    #[test]
    fn header_layout() {
        let mut c = Cpio::new();
        c.file("init", b"#!", 0o755);
        let a = c.finish();
        assert_eq!(&a[..6], b"070701");
        // magic + 13 fields of 8 hex digits, then the name "init\0", padded to 4
        assert_eq!(&a[110..115], b"init\0");
        assert_eq!(&a[116..118], b"#!");
        assert_eq!(a.len() % 4, 0);
        assert!(a.windows(10).any(|w| w == b"TRAILER!!!"));
    }
}
