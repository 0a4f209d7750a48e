//! Every implementation's program: our binaries built in the source tree
//! (exact versions in isolated builds), taken from a folder, or found beside
//! this executable; external programs as their files describe them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

use crate::adapters::Adapter;
use crate::cargo;
use crate::implementation::Implementation;
use crate::program::{Program, Programs};
use crate::versions;

/// The workspace this binary was built from, if it is still there.
pub fn source_tree() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    root.join("Cargo.toml")
        .is_file()
        .then(|| root.to_path_buf())
}

/// The program of each implementation, by name: from `bin_dir` when given
/// (`pingpong-<implementation name>`), else built with cargo profile
/// `profile` from the source tree, else beside this executable. A release
/// named in `swept` (from a range) that does not build is
/// [`Program::Unbuilt`]; any other build failure is the run's.
pub fn locate(
    implementations: &[Implementation],
    swept: &[String],
    bin_dir: Option<&Path>,
    profile: &str,
) -> Result<Programs> {
    let mut programs: Programs = implementations
        .iter()
        .filter_map(|i| match i {
            Implementation::External(e) => Some((i.name(), Program::External(e.clone()))),
            Implementation::Ours { .. } => None,
        })
        .collect();
    let ours = implementations.iter().filter_map(|i| match i {
        Implementation::Ours { adapter, pinned } => Some((i.name(), *adapter, pinned.as_deref())),
        Implementation::External(_) => None,
    });
    let dir = match (bin_dir, source_tree()) {
        (Some(dir), _) => dir.to_path_buf(),
        (None, Some(root)) => {
            programs.extend(build(ours.collect(), swept, &root, profile)?);
            return Ok(programs);
        }
        (None, None) => std::env::current_exe()
            .context("locating the compare executable")?
            .parent()
            .context("the compare executable has no folder")?
            .to_path_buf(),
    };
    for (name, adapter, pinned) in ours {
        let path = dir.join(format!("pingpong-{name}"));
        ensure!(
            path.is_file(),
            "{} not found in {}",
            path.file_name().unwrap_or_default().to_string_lossy(),
            dir.display()
        );
        let version = pinned.unwrap_or(adapter.version()).into();
        programs.insert(
            name,
            Program::Binary {
                path,
                version,
                adapter,
            },
        );
    }
    Ok(programs)
}

/// Builds ours in the workspace at `root`: the locked versions in one cargo
/// build, each exact version in its own.
fn build(
    ours: Vec<(String, &'static Adapter, Option<&str>)>,
    swept: &[String],
    root: &Path,
    profile: &str,
) -> Result<Programs> {
    let locked: Vec<&Adapter> = ours
        .iter()
        .filter(|(_, _, pinned)| pinned.is_none())
        .map(|(_, adapter, _)| *adapter)
        .collect();
    let mut programs = Programs::new();
    if !locked.is_empty() {
        eprintln!(
            "building the runtime binaries (profile {profile}) in {}",
            root.display()
        );
        let built = cargo::build(root, None, profile, &locked)?;
        for adapter in locked {
            let path = built[&adapter.binary()].clone();
            let version = adapter.version().into();
            let binary = Program::Binary {
                path,
                version,
                adapter,
            };
            programs.insert(adapter.name.into(), binary);
        }
    }
    for (name, adapter, pinned) in ours {
        if let Some(version) = pinned {
            let program = match versions::build(root, adapter, version, profile) {
                Ok(program) => program,
                // A release of a range: its column says why, the sweep goes on.
                Err(e) if swept.contains(&name) => {
                    eprintln!("{name} is unavailable: {e:#}");
                    Program::Unbuilt {
                        version: version.into(),
                        reason: format!("{e:#}"),
                    }
                }
                Err(e) => return Err(e),
            };
            programs.insert(name, program);
        }
    }
    Ok(programs)
}
