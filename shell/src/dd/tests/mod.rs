//! The dd tests, one file per concept; the operand helpers are shared.

use super::*;

mod args;
mod error;
mod human;
mod output;
mod plan;
mod stats;
mod transfer_lines;
mod x87;

fn args(line: &str) -> Result<DdArgs, DdError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    parse(&words)
}

fn ok(line: &str) -> DdArgs {
    args(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn err(line: &str) -> String {
    match args(line) {
        Ok(a) => panic!("{line}: parsed as {a:?}"),
        Err(e) => e.to_string(),
    }
}
