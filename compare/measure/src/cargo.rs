//! `cargo build` of runtime binaries: cargo's progress goes on to the user,
//! and its JSON messages say where each binary is, or what did not compile.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cargo_metadata::Message;
use cargo_metadata::diagnostic::DiagnosticLevel;

use crate::groups::Group;
use model::adapters::Adapter;

/// Why a build failed: cargo could not resolve the dependencies, or the
/// code did not compile (with the compiler's first error).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cargo build failed: {0}")]
    Cargo(String),
    #[error("{0}")]
    Compile(String),
}

/// A binary to build: its package and its name.
pub struct Binary {
    pub package: String,
    pub name: String,
}

impl From<&Adapter> for Binary {
    fn from(adapter: &Adapter) -> Self {
        Self {
            package: adapter.package.into(),
            name: adapter.binary(),
        }
    }
}

/// What a build adds to the compiler's flags.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Flags<'a> {
    /// `--cfg` of each, as a runtime's knobs need them.
    pub cfgs: Vec<&'a str>,
    /// Every function keeps a frame pointer, so that the kernel can walk a
    /// stack at any event (`compare explain --wakes`).
    pub frame_pointers: bool,
}

impl Flags<'_> {
    /// The target folder of a build with these flags, beside the
    /// workspace's own: one per set, so that no build undoes another's;
    /// none with no flags.
    pub fn folder(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.cfgs.is_empty() {
            parts.push(format!("cfg-{}", self.cfgs.join("-")));
        }
        if self.frame_pointers {
            parts.push("frame-pointers".into());
        }
        (!parts.is_empty()).then(|| parts.join("-"))
    }

    /// RUSTFLAGS: what the environment has, and these; none with none.
    fn rustflags(&self) -> Option<String> {
        self.folder()?;
        let mut flags = std::env::var("RUSTFLAGS").unwrap_or_default();
        for cfg in &self.cfgs {
            flags.push_str(&format!(" --cfg {cfg}"));
        }
        if self.frame_pointers {
            flags.push_str(" -C force-frame-pointers=yes");
        }
        Some(flags.trim().to_string())
    }
}

/// `cargo build --profile PROFILE` of exactly `binaries` in the workspace
/// at `root` (into `target`, when given), with `flags` added to RUSTFLAGS;
/// cargo says where it put them, by binary name.
pub fn build(
    root: &Path,
    target: Option<&Path>,
    profile: &str,
    binaries: &[Binary],
    flags: &Flags,
) -> Result<HashMap<String, PathBuf>, BuildError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    for name in set_for_a_crate() {
        cmd.env_remove(name);
    }
    cmd.current_dir(root)
        .args(["build", "--profile", profile, "--message-format=json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(target) = target {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    if let Some(rustflags) = flags.rustflags() {
        cmd.env("RUSTFLAGS", rustflags);
    }
    for b in binaries {
        cmd.args(["-p", &b.package, "--bin", &b.name]);
    }
    let failed = |e: std::io::Error| BuildError::Cargo(format!("running cargo: {e}"));
    // A group of its own, cargo and its compilers, killed whole on a stop.
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(failed)?;
    let _group = Group::led_by(&child);
    let stderr = child.stderr.take().expect("piped");
    // Cargo's progress goes on to the user; its errors are kept for the message.
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let mut found = HashMap::new();
    let mut first_error = None;
    for message in Message::parse_stream(BufReader::new(child.stdout.take().expect("piped"))) {
        match message.map_err(failed)? {
            Message::CompilerArtifact(artifact) => {
                if let Some(exe) = artifact.executable {
                    found.insert(artifact.target.name.to_string(), exe.into_std_path_buf());
                }
            }
            Message::CompilerMessage(m) if m.message.level == DiagnosticLevel::Error => {
                first_error.get_or_insert(m.message.rendered.unwrap_or_default());
            }
            _ => {}
        }
    }
    let status = child.wait().map_err(failed)?;
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        return Err(match first_error {
            Some(e) => BuildError::Compile(e.trim().to_string()),
            None => BuildError::Cargo(cargo_errors(&stderr)),
        });
    }
    for b in binaries {
        if !found.contains_key(&b.name) {
            return Err(BuildError::Cargo(format!("cargo built no {}", b.name)));
        }
    }
    Ok(found)
}

/// What cargo set in this process's environment for the crate it runs
/// (compare itself, under `cargo run` or a test). A build script that
/// reruns when one changes (ring's, on CARGO_PKG_NAME and
/// CARGO_MANIFEST_DIR) is judged against the environment of the cargo that
/// builds: left in, they would rebuild ring and everything above it here,
/// and again at the next build from a shell.
fn set_for_a_crate() -> Vec<std::ffi::OsString> {
    const NAMES: [&str; 5] = [
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "OUT_DIR",
    ];
    std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| {
            let name = name.to_string_lossy();
            name.starts_with("CARGO_PKG_")
                || name.starts_with("CARGO_MANIFEST_")
                || name.starts_with("CARGO_BIN_EXE_")
                || NAMES.contains(&name.as_ref())
        })
        .collect()
}

/// Cargo's own error lines (not its progress), or all it said.
fn cargo_errors(stderr: &str) -> String {
    let start = stderr.find("error").unwrap_or(0);
    stderr[start..].trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-package workspace whose binary `pingpong-mio` has `main_rs`.
    fn workspace(main_rs: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/bin")).unwrap();
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[package]\nname = \"pingpong-mio\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n[workspace]\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("src/bin/pingpong-mio.rs"), main_rs).unwrap();
        dir
    }

    fn mio() -> Binary {
        Adapter::find("mio").unwrap().into()
    }

    #[test]
    fn code_that_does_not_compile_is_reported_with_the_compilers_error() {
        let dir = workspace("fn main() { let x: u8 = \"no\"; }\n");
        let target = dir.path().join("target");
        let e = build(
            dir.path(),
            Some(&target),
            "dev",
            &[mio()],
            &Flags::default(),
        )
        .unwrap_err();
        let BuildError::Compile(message) = &e else {
            panic!("{e}");
        };
        assert!(message.contains("mismatched types"), "{message}");
    }

    #[test]
    fn what_cargo_set_for_this_crate_is_left_out_of_a_build() {
        // This test runs under cargo, which set these for its crate.
        let left_out = set_for_a_crate();
        for name in ["CARGO_PKG_NAME", "CARGO_MANIFEST_DIR"] {
            assert!(left_out.iter().any(|n| n == name), "{name}: {left_out:?}");
        }
        assert!(!left_out.iter().any(|n| n == "CARGO_HOME" || n == "CARGO"));
    }

    #[test]
    fn a_build_says_where_the_binary_is() {
        let dir = workspace("fn main() {}\n");
        let target = dir.path().join("target");
        let built = build(
            dir.path(),
            Some(&target),
            "dev",
            &[mio()],
            &Flags::default(),
        )
        .unwrap();
        assert!(built["pingpong-mio"].is_file());
        assert!(built["pingpong-mio"].starts_with(target.join("debug")));
    }
}
