//! The `xenstore` command's operations (the requests of xen/include/public/io/
//! xs_wire.h it offers: `XS_DIRECTORY`, `XS_READ`, `XS_WRITE`, `XS_RM`, `XS_MKDIR`,
//! `XS_GET_PERMS`, `XS_WATCH`, `XS_UNWATCH`) parsed from its arguments, and the paths
//! of a listing's children.

use crate::CmdError;
use alloc::format;
use alloc::string::String;

/// One `xenstore` operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XsOp<'a> {
    /// `ls [PATH]`: the tree under PATH (the domain's home without one).
    Ls(Option<&'a str>),
    /// `read PATH`.
    Read(&'a str),
    /// `write PATH VALUE`.
    Write(&'a str, &'a str),
    /// `rm PATH`.
    Rm(&'a str),
    /// `mkdir PATH`.
    Mkdir(&'a str),
    /// `perms PATH`.
    Perms(&'a str),
    /// `watch PATH`.
    Watch(&'a str),
    /// `unwatch PATH`.
    Unwatch(&'a str),
}

const OPS: [&str; 8] = [
    "ls", "read", "write", "rm", "mkdir", "perms", "watch", "unwatch",
];

/// The operation `args` ask for.
pub fn xenstore_op<'a>(args: &[&'a str]) -> Result<XsOp<'a>, CmdError> {
    Ok(match *args {
        ["ls"] => XsOp::Ls(None),
        ["ls", path] => XsOp::Ls(Some(path)),
        ["read", path] => XsOp::Read(path),
        ["write", path, value] => XsOp::Write(path, value),
        ["rm", path] => XsOp::Rm(path),
        ["mkdir", path] => XsOp::Mkdir(path),
        ["perms", path] => XsOp::Perms(path),
        ["watch", path] => XsOp::Watch(path),
        ["unwatch", path] => XsOp::Unwatch(path),
        [] => return Err(CmdError::usage("missing operation")),
        [op, ..] if OPS.contains(&op) => {
            return Err(CmdError::usage(format!(
                "wrong number of operands for '{op}'"
            )))
        }
        [op, ..] => return Err(CmdError::usage(format!("unknown operation '{op}'"))),
    })
}

/// The path of child `name` of `parent` (`/` has no separator of its own).
pub fn child_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::fuzz::{args, XorShift};
    use alloc::vec::Vec;

    #[test]
    fn every_operation_with_its_operands() {
        assert_eq!(xenstore_op(&["ls"]), Ok(XsOp::Ls(None)));
        assert_eq!(xenstore_op(&["ls", "device"]), Ok(XsOp::Ls(Some("device"))));
        assert_eq!(xenstore_op(&["read", "name"]), Ok(XsOp::Read("name")));
        assert_eq!(
            xenstore_op(&["write", "data/x", "1"]),
            Ok(XsOp::Write("data/x", "1"))
        );
        assert_eq!(xenstore_op(&["rm", "data/x"]), Ok(XsOp::Rm("data/x")));
        assert_eq!(xenstore_op(&["mkdir", "data/y"]), Ok(XsOp::Mkdir("data/y")));
        assert_eq!(xenstore_op(&["perms", "data"]), Ok(XsOp::Perms("data")));
        assert_eq!(xenstore_op(&["watch", "data"]), Ok(XsOp::Watch("data")));
        assert_eq!(xenstore_op(&["unwatch", "data"]), Ok(XsOp::Unwatch("data")));
    }

    #[test]
    fn errors_tell_a_missing_an_unknown_and_a_miscounted_operation_apart() {
        assert_eq!(xenstore_op(&[]), Err(CmdError::usage("missing operation")));
        assert_eq!(
            xenstore_op(&["read"]),
            Err(CmdError::usage("wrong number of operands for 'read'"))
        );
        assert_eq!(
            xenstore_op(&["write", "a"]),
            Err(CmdError::usage("wrong number of operands for 'write'"))
        );
        assert_eq!(
            xenstore_op(&["ls", "a", "b"]),
            Err(CmdError::usage("wrong number of operands for 'ls'"))
        );
        assert_eq!(
            xenstore_op(&["cat", "a"]),
            Err(CmdError::usage("unknown operation 'cat'"))
        );
    }

    #[test]
    fn children_of_the_root_and_of_a_path() {
        assert_eq!(child_path("/", "local"), "/local");
        assert_eq!(child_path("/local/domain", "0"), "/local/domain/0");
        assert_eq!(child_path("device", "vif"), "device/vif");
    }

    #[test]
    fn random_arguments_never_panic_and_keep_their_operands() {
        let mut r = XorShift(0x0123_4567_89ab_cdef);
        for _ in 0..5000 {
            let owned = args(&mut r, &OPS);
            let a: Vec<&str> = owned.iter().map(String::as_str).collect();
            match xenstore_op(&a) {
                Ok(XsOp::Write(p, v)) => assert_eq!((a.len(), a[1], a[2]), (3, p, v)),
                Ok(XsOp::Ls(p)) => assert_eq!(p, a.get(1).copied()),
                Ok(_) => assert_eq!(a.len(), 2),
                Err(CmdError::Usage(_)) => {}
                Err(e) => panic!("{e:?}"),
            }
        }
    }
}
