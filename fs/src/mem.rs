//! Fallible, bounded growth for structures whose size comes from the disk.
//!
//! In the kernel a failed infallible allocation (`vec!`, `Vec::push`) aborts the whole
//! guest, whose heap may be about 1.25 MiB. Anything that a disk image sizes therefore
//! grows through these helpers: never past a bound given in items or bytes, and with
//! [`FsError::NoMemory`] instead of an abort when the heap cannot give the room.

use crate::error::FsError;
use alloc::vec::Vec;

/// `n` zero bytes, or [`FsError::NoMemory`].
pub(crate) fn zeroed(n: usize) -> Result<Vec<u8>, FsError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| FsError::NoMemory)?;
    v.resize(n, 0);
    Ok(v)
}

/// Makes room in `v` for one more item without letting it hold more than `max` items
/// (capacity included: it doubles, but never past `max`). [`FsError::NoMemory`] when
/// `v` already holds `max` items or the heap refuses.
pub(crate) fn reserve_one<T>(v: &mut Vec<T>, max: usize) -> Result<(), FsError> {
    if v.len() >= max {
        return Err(FsError::NoMemory);
    }
    if v.len() == v.capacity() {
        let want = v.capacity().saturating_mul(2).clamp(4, max);
        v.try_reserve_exact(want - v.len())
            .map_err(|_| FsError::NoMemory)?;
    }
    Ok(())
}

/// The bytes `v`'s buffer takes on the heap.
pub(crate) fn vec_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * core::mem::size_of::<T>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_stops_at_the_cap() {
        let mut v: Vec<u32> = Vec::new();
        for i in 0..10 {
            reserve_one(&mut v, 10).unwrap();
            v.push(i);
        }
        assert!(v.capacity() <= 10);
        assert_eq!(reserve_one(&mut v, 10), Err(FsError::NoMemory));
        assert_eq!(vec_bytes(&v), v.capacity() * 4);
        assert_eq!(zeroed(3).unwrap(), alloc::vec![0, 0, 0]);
    }
}
