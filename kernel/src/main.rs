//! The Xenlet kernel image. Everything lives in the `xenlet_kernel` library; the
//! binary only exists so the linker produces `xenlet` for x86_64-unknown-none.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
use xenlet_kernel as _;

#[cfg(not(target_os = "none"))]
fn main() {
    eprintln!("the Xenlet kernel runs on x86_64-unknown-none: use `cargo xtask build` or `cargo xtask run`");
    std::process::exit(2);
}
