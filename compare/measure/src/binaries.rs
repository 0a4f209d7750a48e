//! Every implementation's program: our binaries built in the source tree
//! (exact versions in isolated builds), taken from a folder, or found beside
//! this executable; external programs as their files describe them.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use pingpong::knobs::Settings;

use crate::cargo;
use crate::versions;
use model::adapters::Adapter;
use model::defaults;
use model::implementation::{Implementation, Pin};
use model::program::{Program, Programs};

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
    located(implementations, swept, bin_dir, profile, false)
}

/// Where a run in `folder` keeps the binary at `path` whose SHA-256 is
/// `hash`: under its hash, by its own file name (a fault asked of a
/// binary by the end of its path still finds it by name).
pub fn kept(folder: &Path, hash: &str, path: &Path) -> std::path::PathBuf {
    folder
        .join("binaries")
        .join(hash)
        .join(path.file_name().unwrap_or_default())
}

/// The same built from the source tree with frame pointers kept in every
/// function, beside the others (`target/frame-pointers`): the programs
/// whose stacks the kernel walks at a wake-up (`compare explain --wakes`).
pub fn with_frame_pointers(implementations: &[Implementation], profile: &str) -> Result<Programs> {
    ensure!(
        defaults::source_tree().is_some(),
        "builds with frame pointers come from the source tree, and this compare has none"
    );
    located(implementations, &[], None, profile, true)
}

fn located(
    implementations: &[Implementation],
    swept: &[String],
    bin_dir: Option<&Path>,
    profile: &str,
    frame_pointers: bool,
) -> Result<Programs> {
    let mut programs: Programs = implementations
        .iter()
        .filter_map(|i| match i {
            Implementation::External(e) => Some((i.name(), Program::External(e.clone()))),
            Implementation::Ours { .. } => None,
        })
        .collect();
    let ours = implementations.iter().filter_map(|i| match i {
        Implementation::Ours {
            adapter,
            pinned,
            knobs,
        } => Some(Ours {
            name: i.name(),
            adapter,
            pinned: pinned.as_ref(),
            knobs,
        }),
        Implementation::External(_) => None,
    });
    let dir = match (bin_dir, defaults::source_tree()) {
        (Some(dir), _) => dir.to_path_buf(),
        (None, Some(root)) => {
            let how = How {
                swept,
                profile,
                frame_pointers,
            };
            programs.extend(build(ours.collect(), &root, how)?);
            return Ok(programs);
        }
        (None, None) => std::env::current_exe()
            .context("locating the compare executable")?
            .parent()
            .context("the compare executable has no folder")?
            .to_path_buf(),
    };
    for Ours {
        name,
        adapter,
        pinned,
        knobs,
    } in ours
    {
        // A configuration runs its implementation's binary, told its knobs.
        let file = match pinned {
            Some(Pin::Release(version)) => format!("{}@{version}", adapter.binary()),
            Some(Pin::Source(source)) => bail!(
                "{}: unreleased code is built from the source tree, not taken from a folder",
                source.spec
            ),
            None => adapter.binary(),
        };
        let path = dir.join(file);
        ensure!(
            path.is_file(),
            "{} not found in {}",
            path.file_name().unwrap_or_default().to_string_lossy(),
            dir.display()
        );
        let version = match pinned {
            Some(Pin::Release(version)) => version.clone(),
            _ => adapter.version().into(),
        };
        programs.insert(
            name,
            Program::Binary {
                path,
                version,
                adapter,
                knobs: knobs.clone(),
                lock: None,
            },
        );
    }
    Ok(programs)
}

/// One of ours, as a run names it.
struct Ours<'a> {
    name: String,
    adapter: &'static Adapter,
    pinned: Option<&'a Pin>,
    knobs: &'a Settings,
}

/// How ours are built: the releases of a range (`swept`, whose failures
/// are their columns'), the cargo profile, and frame pointers or not.
#[derive(Clone, Copy)]
struct How<'a> {
    swept: &'a [String],
    profile: &'a str,
    frame_pointers: bool,
}

/// Builds ours in the workspace at `root`: the locked versions in one cargo
/// build for each set of compiler flags their knobs need (none: the
/// workspace's own target folder; `--cfg tokio_unstable`: one of its own,
/// `target/cfg-tokio_unstable`), each exact version in its own.
fn build(ours: Vec<Ours>, root: &Path, how: How) -> Result<Programs> {
    let How {
        swept,
        profile,
        frame_pointers,
    } = how;
    let mut programs = Programs::new();
    let locked: Vec<&Ours> = ours.iter().filter(|o| o.pinned.is_none()).collect();
    let flags_of = |o: &Ours| cargo::Flags {
        cfgs: o.knobs.cfgs(),
        frame_pointers,
    };
    let mut flag_sets: Vec<cargo::Flags> = locked.iter().map(|o| flags_of(o)).collect();
    flag_sets.sort();
    flag_sets.dedup();
    for flags in flag_sets {
        let mut adapters: Vec<&Adapter> = locked
            .iter()
            .filter(|o| flags_of(o) == flags)
            .map(|o| o.adapter)
            .collect();
        // A runtime and its configurations share one binary.
        adapters.sort_by_key(|a| a.name);
        adapters.dedup();
        let target = flags.folder().map(|f| root.join("target").join(f));
        eprintln!(
            "building the runtime binaries (profile {profile}{}{}) in {}",
            flags
                .cfgs
                .iter()
                .map(|c| format!(", --cfg {c}"))
                .collect::<String>(),
            if flags.frame_pointers {
                ", frame pointers"
            } else {
                ""
            },
            root.display()
        );
        let binaries: Vec<cargo::Binary> = adapters.iter().map(|&a| a.into()).collect();
        let built = cargo::build(root, target.as_deref(), profile, &binaries, &flags)?;
        for o in locked.iter().filter(|o| flags_of(o) == flags) {
            let binary = Program::Binary {
                path: built[&o.adapter.binary()].clone(),
                version: o.adapter.version().into(),
                adapter: o.adapter,
                knobs: o.knobs.clone(),
                lock: None,
            };
            programs.insert(o.name.clone(), binary);
        }
    }
    for Ours {
        name,
        adapter,
        pinned,
        knobs,
    } in ours
    {
        if let Some(pin) = pinned {
            let program = match versions::build(root, adapter, pin, profile, knobs, frame_pointers)
            {
                Ok(program) => program,
                // A release or commit of a range: its column says why, the sweep goes on.
                Err(e) if swept.contains(&name) => {
                    eprintln!("{name} is unavailable: {e:#}");
                    Program::Unbuilt {
                        version: match pin {
                            Pin::Release(version) => version.clone(),
                            Pin::Source(source) => source.commit.clone(),
                        },
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
