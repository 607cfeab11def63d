//! Checksums of ext4 metadata: the `metadata_csum` crc32c family (seeded by the
//! filesystem's uuid or `s_checksum_seed`, then by inode number and generation), and the
//! older `gdt_csum` crc16 for group descriptors.

use crate::crc32c::crc32c;

/// CRC-16 (ANSI, reflected polynomial 0xA001), as e2fsprogs' `ext2fs_crc16`.
pub fn crc16(mut crc: u16, data: &[u8]) -> u16 {
    for &b in data {
        crc ^= b as u16;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xA001
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// The per-inode seed: crc32c(crc32c(fs_seed, ino), generation).
pub fn inode_seed(fs_seed: u32, ino: u32, generation: u32) -> u32 {
    crc32c(
        crc32c(fs_seed, &ino.to_le_bytes()),
        &generation.to_le_bytes(),
    )
}

/// Little-endian field access that never panics: out-of-range reads give 0 and
/// out-of-range writes are dropped (callers size their buffers from validated values).
pub fn get16(b: &[u8], off: usize) -> u16 {
    match off.checked_add(2).and_then(|e| b.get(off..e)) {
        Some(s) => u16::from_le_bytes([s[0], s[1]]),
        None => 0,
    }
}

/// See [`get16`].
pub fn get32(b: &[u8], off: usize) -> u32 {
    match off.checked_add(4).and_then(|e| b.get(off..e)) {
        Some(s) => u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

/// See [`get16`].
pub fn get64(b: &[u8], off: usize) -> u64 {
    get32(b, off) as u64 | (get32(b, off.saturating_add(4)) as u64) << 32
}

/// See [`get16`].
pub fn put16(b: &mut [u8], off: usize, v: u16) {
    if let Some(s) = off.checked_add(2).and_then(|e| b.get_mut(off..e)) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

/// See [`get16`].
pub fn put32(b: &mut [u8], off: usize, v: u32) {
    if let Some(s) = off.checked_add(4).and_then(|e| b.get_mut(off..e)) {
        s.copy_from_slice(&v.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_check_value() {
        // CRC-16/ARC of "123456789" is 0xBB3D (initial 0).
        assert_eq!(crc16(0, b"123456789"), 0xBB3D);
    }

    #[test]
    fn fields_never_panic() {
        let mut b = [0u8; 6];
        put32(&mut b, 4, 7);
        assert_eq!(get32(&b, 4), 0);
        put32(&mut b, 2, 0x0102_0304);
        assert_eq!(get32(&b, 2), 0x0102_0304);
        assert_eq!(get16(&b, usize::MAX - 1), 0);
    }
}
