//! What a page fault's error code and address say, in words, for the fault report:
//! a null pointer, a write to read-only code or constants, code fetched from
//! no-execute data (the boot page tables are W^X and leave page 0 unmapped).
//! Pure logic: host-tested.

/// Error code bits of #PF (Intel SDM vol. 3, 4.7).
const PRESENT: u64 = 1 << 0;
const WRITE: u64 = 1 << 1;
const RESERVED: u64 = 1 << 3;
const FETCH: u64 = 1 << 4;

/// One line on the cause of a page fault with `error_code` at `cr2`.
pub fn cause(error_code: u64, cr2: u64) -> &'static str {
    if error_code & RESERVED != 0 {
        return "a reserved bit set in a page table entry";
    }
    if error_code & PRESENT == 0 {
        if cr2 < 0x1000 {
            return "a null pointer dereference (page 0 is not mapped)";
        }
        return if error_code & FETCH != 0 {
            "code fetched from an address that is not mapped"
        } else {
            "an address that is not mapped"
        };
    }
    if error_code & FETCH != 0 {
        "code fetched from no-execute memory (data, stack or heap)"
    } else if error_code & WRITE != 0 {
        "a write to read-only memory (the kernel's code or constants)"
    } else {
        "a protection violation"
    }
}

#[cfg(test)]
mod tests {
    use super::cause;

    #[test]
    fn each_kind_is_told_apart() {
        assert!(cause(0, 0).contains("null pointer"));
        assert!(cause(0x2, 0x8).contains("null pointer"));
        assert_eq!(cause(0, 0x1000_0000_0000), "an address that is not mapped");
        assert!(cause(0x3, 0x20_1000).contains("read-only"));
        assert!(cause(0x11, 0x38_0000).contains("no-execute"));
        assert!(cause(0x9, 0).contains("reserved bit"));
    }
}
