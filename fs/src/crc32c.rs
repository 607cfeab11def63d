//! CRC-32C (Castagnoli), as ext4 and jbd2 use it for `metadata_csum` and checksum v3:
//! the raw update with a caller-given seed, no final inversion — e2fsprogs'
//! `ext2fs_crc32c_le(seed, buf, len)`, Linux's `ext4_chksum`. Written here (a 1 KiB
//! table built at compile time) because the `crc` crate's seeded digest reflects the
//! seed, which is not what chained ext4 checksums (uuid, then inode number, ...) need.

const POLY: u32 = 0x82f6_3b78; // 0x1edc6f41 bit-reversed

const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// Continues a CRC-32C from `seed` over `data` (no pre- or post-inversion).
pub fn crc32c(seed: u32, data: &[u8]) -> u32 {
    let mut c = seed;
    for &b in data {
        c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::crc32c;

    #[test]
    fn rfc3720_vectors() {
        // iSCSI's CRC32C (RFC 3720 B.4) is ~crc32c(!0, data).
        assert_eq!(!crc32c(!0, &[0u8; 32]), 0x8a91_36aa);
        assert_eq!(!crc32c(!0, &[0xffu8; 32]), 0x62a8_ab43);
        let inc: [u8; 32] = core::array::from_fn(|i| i as u8);
        assert_eq!(!crc32c(!0, &inc), 0x46dd_794e);
        assert_eq!(!crc32c(!0, b"123456789"), 0xe306_9283);
    }

    #[test]
    fn chaining_equals_one_pass() {
        let data = b"the quick brown fox jumps over the lazy dog";
        let (a, b) = data.split_at(17);
        assert_eq!(crc32c(crc32c(!0, a), b), crc32c(!0, data));
    }
}
