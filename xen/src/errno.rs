//! Xen error numbers (xen/include/public/errno.h) by name.

use core::fmt;

/// A hypercall failure: Xen's negative errno, named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XenError {
    /// EPERM (1): operation not permitted.
    Perm,
    /// ENOENT (2): no such entry.
    NoEnt,
    /// ESRCH (3): no such domain or process.
    Srch,
    /// EINTR (4).
    Intr,
    /// EIO (5).
    Io,
    /// E2BIG (7).
    TooBig,
    /// EAGAIN (11): try again.
    Again,
    /// ENOMEM (12).
    NoMem,
    /// EACCES (13).
    Access,
    /// EFAULT (14): bad address.
    Fault,
    /// EBUSY (16).
    Busy,
    /// EEXIST (17).
    Exist,
    /// ENODEV (19).
    NoDev,
    /// EINVAL (22).
    Inval,
    /// ENOSPC (28).
    NoSpc,
    /// ERANGE (34).
    Range,
    /// ENOSYS (38): not implemented.
    NoSys,
    /// ENOTEMPTY (39).
    NotEmpty,
    /// EISCONN (106).
    IsConn,
    /// ETIMEDOUT (110).
    TimedOut,
    /// Any other errno.
    Other(i64),
}

impl XenError {
    /// From a hypercall's negative return value (`-errno`).
    pub fn from_ret(ret: i64) -> Self {
        match -ret {
            1 => XenError::Perm,
            2 => XenError::NoEnt,
            3 => XenError::Srch,
            4 => XenError::Intr,
            5 => XenError::Io,
            7 => XenError::TooBig,
            11 => XenError::Again,
            12 => XenError::NoMem,
            13 => XenError::Access,
            14 => XenError::Fault,
            16 => XenError::Busy,
            17 => XenError::Exist,
            19 => XenError::NoDev,
            22 => XenError::Inval,
            28 => XenError::NoSpc,
            34 => XenError::Range,
            38 => XenError::NoSys,
            39 => XenError::NotEmpty,
            106 => XenError::IsConn,
            110 => XenError::TimedOut,
            n => XenError::Other(n),
        }
    }

    /// Maps a hypercall return: negative is an error, anything else is the value.
    pub fn check(ret: i64) -> Result<u64, XenError> {
        if ret < 0 {
            Err(XenError::from_ret(ret))
        } else {
            Ok(ret as u64)
        }
    }

    /// The C name, as in errno.h.
    pub fn name(self) -> &'static str {
        match self {
            XenError::Perm => "EPERM",
            XenError::NoEnt => "ENOENT",
            XenError::Srch => "ESRCH",
            XenError::Intr => "EINTR",
            XenError::Io => "EIO",
            XenError::TooBig => "E2BIG",
            XenError::Again => "EAGAIN",
            XenError::NoMem => "ENOMEM",
            XenError::Access => "EACCES",
            XenError::Fault => "EFAULT",
            XenError::Busy => "EBUSY",
            XenError::Exist => "EEXIST",
            XenError::NoDev => "ENODEV",
            XenError::Inval => "EINVAL",
            XenError::NoSpc => "ENOSPC",
            XenError::Range => "ERANGE",
            XenError::NoSys => "ENOSYS",
            XenError::NotEmpty => "ENOTEMPTY",
            XenError::IsConn => "EISCONN",
            XenError::TimedOut => "ETIMEDOUT",
            XenError::Other(_) => "E?",
        }
    }
}

impl fmt::Display for XenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XenError::Other(n) => write!(f, "Xen error {n}"),
            e => f.write_str(e.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_returns_are_named_errors() {
        assert_eq!(XenError::check(0), Ok(0));
        assert_eq!(XenError::check(5), Ok(5));
        assert_eq!(XenError::check(-22), Err(XenError::Inval));
        assert_eq!(XenError::check(-38).unwrap_err().to_string(), "ENOSYS");
        assert_eq!(XenError::check(-9999), Err(XenError::Other(9999)));
        assert_eq!(XenError::Other(9999).to_string(), "Xen error 9999");
    }
}
