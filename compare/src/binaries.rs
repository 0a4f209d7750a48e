//! Finds the runtime binaries, building them first when run from the source
//! tree; versioned implementations (`tokio@1.47.0`) get isolated builds.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, ensure};
use serde::Deserialize;

use crate::implementations::{Implementation, Variant};
use crate::versions;

/// The workspace this binary was built from, if it is still there.
pub fn source_tree() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    root.join("Cargo.toml")
        .is_file()
        .then(|| root.to_path_buf())
}

/// A binary ready to run, and the version of the crate it was built on.
#[derive(Debug, Clone)]
pub struct Located {
    pub path: PathBuf,
    pub version: String,
}

/// Every variant's binary but the externals', by variant name: from `bin_dir` when given
/// (`pingpong-<variant name>`), else built in release mode from the source
/// tree, else beside this executable.
pub fn locate(variants: &[Variant], bin_dir: Option<&Path>) -> Result<HashMap<String, Located>> {
    let root = source_tree();
    let dir = match (bin_dir, &root) {
        (Some(dir), _) => dir.to_path_buf(),
        (None, Some(root)) => return build_all(variants, root),
        (None, None) => std::env::current_exe()
            .context("locating the compare executable")?
            .parent()
            .context("the compare executable has no folder")?
            .to_path_buf(),
    };
    ours(variants)
        .map(|(v, base, pinned)| {
            let path = dir.join(format!("pingpong-{}", v.name()));
            ensure!(
                path.is_file(),
                "{} not found in {}",
                path.file_name().unwrap_or_default().to_string_lossy(),
                dir.display()
            );
            let version = pinned.unwrap_or(base.version()).into();
            Ok((v.name(), Located { path, version }))
        })
        .collect()
}

fn build_all(variants: &[Variant], root: &Path) -> Result<HashMap<String, Located>> {
    let workspace: Vec<&Implementation> = ours(variants)
        .filter(|(_, _, pinned)| pinned.is_none())
        .map(|(_, base, _)| base)
        .collect();
    let mut found = HashMap::new();
    if !workspace.is_empty() {
        eprintln!(
            "building the runtime binaries (release) in {}",
            root.display()
        );
        let built = build(root, None, &workspace)?;
        for i in workspace {
            let path = built[&i.binary()].clone();
            let version = i.version().into();
            found.insert(i.name.to_string(), Located { path, version });
        }
    }
    for (v, base, pinned) in ours(variants) {
        if let Some(version) = pinned {
            found.insert(v.name(), versions::build(root, base, version)?);
        }
    }
    Ok(found)
}

/// The variants with a binary of ours (externals bring their own programs),
/// with what they are built on and the version pinned, if any.
fn ours(
    variants: &[Variant],
) -> impl Iterator<Item = (&Variant, &'static Implementation, Option<&str>)> {
    variants.iter().filter_map(|v| match v {
        Variant::Ours { base, pinned } => Some((v, *base, pinned.as_deref())),
        Variant::External(_) => None,
    })
}

#[derive(Deserialize)]
struct Message {
    reason: String,
    target: Option<Target>,
    executable: Option<PathBuf>,
    message: Option<Diagnostic>,
}

#[derive(Deserialize)]
struct Target {
    name: String,
}

#[derive(Deserialize)]
struct Diagnostic {
    level: String,
    rendered: Option<String>,
}

/// Why a build failed: cargo could not resolve the dependencies, or the
/// code did not compile (with the compiler's first error).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cargo build failed: {0}")]
    Cargo(String),
    #[error("{0}")]
    Compile(String),
}

/// `cargo build --release` of exactly the binaries of `impls` in the
/// workspace at `root` (into `target`, when given); cargo says where it put them.
pub fn build(
    root: &Path,
    target: Option<&Path>,
    impls: &[&Implementation],
) -> Result<HashMap<String, PathBuf>, BuildError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["build", "--release", "--message-format=json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(target) = target {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    for i in impls {
        cmd.args(["-p", i.package, "--bin", &i.binary()]);
    }
    let failed = |e: std::io::Error| BuildError::Cargo(format!("running cargo: {e}"));
    let mut child = cmd.spawn().map_err(failed)?;
    let mut stderr = child.stderr.take().expect("piped");
    // Cargo's progress goes on to the user; its errors are kept for the message.
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        for line in std::io::BufReader::new(&mut stderr)
            .lines()
            .map_while(Result::ok)
        {
            eprintln!("{line}");
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let mut found = HashMap::new();
    let mut first_error = None;
    for line in std::io::BufReader::new(child.stdout.take().expect("piped")).lines() {
        let Ok(message) = serde_json::from_str::<Message>(&line.map_err(failed)?) else {
            continue;
        };
        match (message.reason.as_str(), message.target, message.executable) {
            ("compiler-artifact", Some(target), Some(exe)) => {
                found.insert(target.name, exe);
            }
            ("compiler-message", _, _) => {
                if let Some(d) = message.message.filter(|d| d.level == "error") {
                    first_error.get_or_insert(d.rendered.unwrap_or_default());
                }
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
    for i in impls {
        if !found.contains_key(&i.binary()) {
            return Err(BuildError::Cargo(format!("cargo built no {}", i.binary())));
        }
    }
    Ok(found)
}

/// Cargo's own error lines (not its progress), or all it said.
fn cargo_errors(stderr: &str) -> String {
    let start = stderr.find("error").unwrap_or(0);
    stderr[start..].trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::implementations::find;

    /// A one-package workspace whose binary `pingpong-mio` has `main_rs`.
    fn workspace(name: &str, main_rs: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("build-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src/bin")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            "[package]\nname = \"pingpong-mio\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n[workspace]\n",
        )
        .unwrap();
        std::fs::write(dir.join("src/bin/pingpong-mio.rs"), main_rs).unwrap();
        dir
    }

    #[test]
    fn code_that_does_not_compile_is_reported_with_the_compilers_error() {
        let dir = workspace("broken", "fn main() { let x: u8 = \"no\"; }\n");
        let mio = find("mio", &[]).unwrap();
        let e = build(&dir, Some(&dir.join("target")), &[mio]).unwrap_err();
        let BuildError::Compile(message) = &e else {
            panic!("{e}");
        };
        assert!(message.contains("mismatched types"), "{message}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_build_says_where_the_binary_is() {
        let dir = workspace("fine", "fn main() {}\n");
        let mio = find("mio", &[]).unwrap();
        let built = build(&dir, Some(&dir.join("target")), &[mio]).unwrap();
        assert!(built["pingpong-mio"].is_file());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
