//! Finds the runtime binaries, building them first when run from the source tree.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;

use crate::implementations::Implementation;

/// The workspace this binary was built from, if it is still there.
pub fn source_tree() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    root.join("Cargo.toml")
        .is_file()
        .then(|| root.to_path_buf())
}

/// Paths of the binaries of `impls`, by binary name: from `bin_dir` when
/// given, else built in release mode from the source tree, else beside this
/// executable.
pub fn locate(
    impls: &[&Implementation],
    bin_dir: Option<&Path>,
) -> Result<HashMap<String, PathBuf>> {
    let dir = match (bin_dir, source_tree()) {
        (Some(dir), _) => dir.to_path_buf(),
        (None, Some(root)) => return build(impls, &root),
        (None, None) => std::env::current_exe()
            .context("locating the compare executable")?
            .parent()
            .context("the compare executable has no folder")?
            .to_path_buf(),
    };
    impls
        .iter()
        .map(|i| {
            let path = dir.join(i.binary());
            ensure!(
                path.is_file(),
                "{} not found in {}",
                i.binary(),
                dir.display()
            );
            Ok((i.binary(), path))
        })
        .collect()
}

#[derive(Deserialize)]
struct Message {
    reason: String,
    target: Option<Target>,
    executable: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Target {
    name: String,
}

/// `cargo build --release` of exactly the binaries needed; cargo says where it put them.
fn build(impls: &[&Implementation], root: &Path) -> Result<HashMap<String, PathBuf>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "--release",
            "--message-format=json-render-diagnostics",
        ])
        .stdout(Stdio::piped());
    for i in impls {
        cmd.args(["-p", i.package, "--bin", &i.binary()]);
    }
    eprintln!(
        "building the runtime binaries (release) in {}",
        root.display()
    );
    let mut child = cmd.spawn().context("running cargo build")?;
    let mut found = HashMap::new();
    for line in std::io::BufReader::new(child.stdout.take().expect("piped")).lines() {
        let line = line.context("reading cargo's output")?;
        let Ok(message) = serde_json::from_str::<Message>(&line) else {
            continue;
        };
        if let (Some(target), Some(exe)) = (message.target, message.executable)
            && message.reason == "compiler-artifact"
        {
            found.insert(target.name, exe);
        }
    }
    let status = child.wait().context("waiting for cargo build")?;
    if !status.success() {
        bail!("cargo build of the runtime binaries failed ({status})");
    }
    for i in impls {
        ensure!(
            found.contains_key(&i.binary()),
            "cargo built no {}",
            i.binary()
        );
    }
    Ok(found)
}
