//! Small helpers: errors, running commands, locating things.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// An error with a message for the user.
#[derive(Debug)]
pub struct Error(String);

impl Error {
    pub fn msg(m: impl Into<String>) -> Self {
        Error(m.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The workspace root (the parent of xtask/).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// Where downloaded tools and images are cached, outside the clone.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("XENLET_CACHE") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    home.join(".cache/xenlet")
}

/// `cargo` as invoked by this xtask.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Prints a progress line with the time since xtask started.
pub fn step(what: &str) {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let t = START.get_or_init(Instant::now).elapsed();
    println!("==> [{:>6.1}s] {what}", t.as_secs_f64());
}

/// Runs a command, turning failure into an error naming `what`.
pub fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd
        .status()
        .map_err(|e| Error::msg(format!("{what}: cannot start {:?}: {e}", cmd.get_program())))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::msg(format!("{what} failed ({status})")))
    }
}

/// Runs a command and returns its stdout.
pub fn output(cmd: &mut Command, what: &str) -> Result<String> {
    let out = cmd
        .output()
        .map_err(|e| Error::msg(format!("{what}: cannot start {:?}: {e}", cmd.get_program())))?;
    if !out.status.success() {
        return Err(Error::msg(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether `tool` is on PATH.
pub fn have_tool(tool: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// Fails with a message naming the Debian package when `tool` is missing.
pub fn require_tool(tool: &str, package: &str) -> Result<()> {
    if have_tool(tool) {
        Ok(())
    } else {
        Err(Error::msg(format!("'{tool}' not found: install the Debian package '{package}' (apt-get install {package})")))
    }
}

/// Makes sure the bare-metal Rust target is installed.
pub fn ensure_rust_target() -> Result<()> {
    let sysroot = output(
        Command::new("rustc").args(["--print", "sysroot"]),
        "rustc --print sysroot",
    )?;
    let lib = Path::new(sysroot.trim()).join("lib/rustlib/x86_64-unknown-none");
    if lib.is_dir() {
        return Ok(());
    }
    require_tool("rustup", "rustup (https://rustup.rs)")?;
    step("installing the Rust target x86_64-unknown-none");
    run(
        Command::new("rustup").args(["target", "add", "x86_64-unknown-none"]),
        "rustup target add",
    )
}

/// `LD_LIBRARY_PATH` for programs unpacked from Debian packages under `root`.
pub fn unpacked_lib_path(root: &Path) -> String {
    [
        root.join("usr/lib/x86_64-linux-gnu"),
        root.join("lib/x86_64-linux-gnu"),
    ]
    .iter()
    .map(|p| p.display().to_string())
    .collect::<Vec<_>>()
    .join(":")
}
