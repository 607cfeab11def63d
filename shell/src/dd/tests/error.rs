use super::super::args::{CONV_UNSUPPORTED, FLAG_UNSUPPORTED};
use super::*;
use crate::CmdError;

/// Messages compared with `LC_ALL=C dd` 9.1 (without its "Try 'dd --help'" line).
#[test]
fn gnu_error_messages() {
    let cases = [
        ("if=a of=b foo", "dd: unrecognized operand 'foo'"),
        ("if=a of=b if", "dd: unrecognized operand 'if'"),
        ("if=a of=b =x", "dd: unrecognized operand '=x'"),
        ("if=a of=b bar=1q", "dd: unrecognized operand 'bar=1q'"),
        ("if=a of=b foo'x", "dd: unrecognized operand 'foo\\'x'"),
        ("if=a of=b x\\y", "dd: unrecognized operand 'x\\\\y'"),
        ("if=a of=b -x", "dd: unrecognized operand '-x'"),
        ("if=a of=b bs=12q", "dd: invalid number: '12q'"),
        ("if=a of=b bs=0", "dd: invalid number: '0'"),
        ("if=a of=b ibs=0", "dd: invalid number: '0'"),
        ("if=a of=b obs=0", "dd: invalid number: '0'"),
        ("if=a of=b bs=0x512", "dd: invalid number: '0x512'"),
        ("if=a of=b bs=", "dd: invalid number: ''"),
        ("if=a of=b bs=-1", "dd: invalid number: '-1'"),
        ("if=a of=b bs=1x", "dd: invalid number: '1x'"),
        ("if=a of=b bs=1'q", "dd: invalid number: '1\\'q'"),
        ("if=a of=b bs=a\\b", "dd: invalid number: 'a\\\\b'"),
        ("if=a of=b count=12q", "dd: invalid number: '12q'"),
        ("if=a of=b count=-1", "dd: invalid number: '-1'"),
        ("if=a of=b skip=1m", "dd: invalid number: '1m'"),
        ("if=a of=b seek=x2", "dd: invalid number: 'x2'"),
        (
            "if=a of=b bs=99999999999T",
            "dd: invalid number: '99999999999T': Value too large for defined data type",
        ),
        (
            "if=a of=b bs=16E",
            "dd: invalid number: '16E': Value too large for defined data type",
        ),
        (
            "if=a of=b bs=9223372036854775807",
            "dd: invalid number: '9223372036854775807': Value too large for defined data type",
        ),
        (
            "if=a of=b count=9223372036854775808",
            "dd: invalid number: '9223372036854775808': Value too large for defined data type",
        ),
        (
            "if=a of=b skip=99999999999999999999",
            "dd: invalid number: '99999999999999999999': Value too large for defined data type",
        ),
        ("if=a of=b conv=bogus", "dd: invalid conversion: 'bogus'"),
        (
            "if=a of=b conv=sync,bogus",
            "dd: invalid conversion: 'bogus'",
        ),
        ("if=a of=b conv=", "dd: invalid conversion: ''"),
        ("if=a of=b conv=sync,", "dd: invalid conversion: ''"),
        ("if=a of=b conv=it's", "dd: invalid conversion: 'it\\'s'"),
        ("if=a of=b conv=a\"b", "dd: invalid conversion: 'a\"b'"),
        ("if=a of=b status=loud", "dd: invalid status level: 'loud'"),
        ("if=a of=b status=", "dd: invalid status level: ''"),
        (
            "if=a of=b status=default",
            "dd: invalid status level: 'default'",
        ),
        ("if=a of=b iflag=x", "dd: invalid input flag: 'x'"),
        ("if=a of=b iflag=", "dd: invalid input flag: ''"),
        (
            "if=a of=b iflag=count_bytes,x",
            "dd: invalid input flag: 'x'",
        ),
        ("if=a of=b iflag=cio", "dd: invalid input flag: 'cio'"),
        ("if=a of=b iflag=binary", "dd: invalid input flag: 'binary'"),
        (
            "if=a of=b iflag=nolinks",
            "dd: invalid input flag: 'nolinks'",
        ),
        ("if=a of=b oflag=x", "dd: invalid output flag: 'x'"),
        (
            "if=a of=b oflag=seek_bytes,dsync,x",
            "dd: invalid output flag: 'x'",
        ),
        (
            "if=a of=b oflag=fullblock",
            "dd: invalid output flag: 'fullblock'",
        ),
        // The first error wins.
        ("if=a of=b bs=0 conv=bogus", "dd: invalid number: '0'"),
        (
            "if=a of=b conv=bogus bs=0",
            "dd: invalid conversion: 'bogus'",
        ),
        ("if=a of=b zzz=0 bs=0", "dd: unrecognized operand 'zzz=0'"),
    ];
    for (line, want) in cases {
        assert_eq!(err(line), want, "{line}");
    }
}

#[test]
fn our_error_messages() {
    let cases = [
        (
            "of=b",
            "dd: missing operand 'if=FILE' (there is no standard input)",
        ),
        (
            "",
            "dd: missing operand 'if=FILE' (there is no standard input)",
        ),
        (
            "if=a",
            "dd: missing operand 'of=FILE' (there is no standard output)",
        ),
        (
            "if=a of=b oflag=fullblock if=",
            "dd: invalid output flag: 'fullblock'",
        ),
        ("if=a of=b conv=swab", "dd: unsupported conversion: 'swab'"),
        (
            "if=a of=b conv=sync,sparse",
            "dd: unsupported conversion: 'sparse'",
        ),
        (
            "if=a of=b iflag=nocache",
            "dd: unsupported input flag: 'nocache'",
        ),
        (
            "if=a of=b oflag=append",
            "dd: unsupported output flag: 'append'",
        ),
        ("if=a of=b cbs=80", "dd: unsupported operand: 'cbs=80'"),
    ];
    for (line, want) in cases {
        assert_eq!(err(line), want, "{line}");
    }
    for c in CONV_UNSUPPORTED {
        assert_eq!(
            err(&format!("if=a of=b conv={c}")),
            format!("dd: unsupported conversion: '{c}'"),
            "conv={c}"
        );
    }
    for f in FLAG_UNSUPPORTED {
        assert_eq!(
            err(&format!("if=a of=b iflag={f}")),
            format!("dd: unsupported input flag: '{f}'"),
            "iflag={f}"
        );
    }
}

#[test]
fn errors_become_shell_errors_without_the_prefix() {
    let e: CmdError = DdError::InvalidNumber("12q".into()).into();
    assert_eq!(e, CmdError::failed("invalid number: '12q'"));
    let e: CmdError = DdError::MissingInput.into();
    assert_eq!(
        e,
        CmdError::failed("missing operand 'if=FILE' (there is no standard input)")
    );
}

#[test]
fn runtime_error_messages() {
    let io = |op, file: &str, errno| DdError::Io {
        op,
        file: file.into(),
        errno,
    };
    let no_memory = |input, size| DdError::NoMemory { input, size };
    let cases = [
        // Compared with GNU dd 9.1.
        (
            io(IoOp::Open, "/tmp/nonexist", Errno::NotFound),
            "dd: failed to open '/tmp/nonexist': No such file or directory",
        ),
        (
            io(IoOp::Open, "/tmp/no'pe", Errno::NotFound),
            "dd: failed to open \"/tmp/no'pe\": No such file or directory",
        ),
        (
            io(IoOp::Open, "/tmp/no pe", Errno::NotFound),
            "dd: failed to open '/tmp/no pe': No such file or directory",
        ),
        (
            io(IoOp::Write, "/dev/loop0", Errno::NoSpace),
            "dd: error writing '/dev/loop0': No space left on device",
        ),
        (
            io(IoOp::WriteBlock, "/dev/loop0", Errno::NoSpace),
            "dd: writing to '/dev/loop0': No space left on device",
        ),
        (
            no_memory(true, 1 << 60),
            "dd: memory exhausted by input buffer of size 1152921504606846976 bytes (1.0 EiB)",
        ),
        (
            no_memory(true, 1_000_000_000_000),
            "dd: memory exhausted by input buffer of size 1000000000000 bytes (931 GiB)",
        ),
        // GNU's wording for these steps.
        (
            io(IoOp::Read, "xvda", Errno::Io),
            "dd: error reading 'xvda': Input/output error",
        ),
        (
            io(IoOp::Fsync, "xvdb", Errno::ReadOnly),
            "dd: fsync failed for 'xvdb': Read-only file system",
        ),
        (
            io(IoOp::Fdatasync, "xvdb", Errno::Invalid),
            "dd: fdatasync failed for 'xvdb': Invalid argument",
        ),
        (
            no_memory(false, 1 << 30),
            "dd: memory exhausted by output buffer of size 1073741824 bytes (1.0 GiB)",
        ),
    ];
    for (e, want) in cases {
        assert_eq!(e.to_string(), want, "{e:?}");
    }
}
