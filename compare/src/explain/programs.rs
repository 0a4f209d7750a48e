//! The programs an explanation runs again: built from the source tree now
//! and, between two runs, each the very binary its run ran (today's build
//! where it hashes alike, else the copy the run kept beside its results);
//! and for tracing wake-ups, their builds with frame pointers.

use std::path::Path;

use anyhow::{Context, Result, ensure};

use crate::plan::Plan;
use measure::binaries;
use model::implementation::Implementation;
use model::program::{Program, Programs};
use model::results::Results;

/// One run's programs for an explanation.
pub struct Programmed {
    /// What its cells ran.
    pub plain: Programs,
    /// Where wake-ups are traced: the same with frame pointers, or why
    /// there are none.
    pub traced: Option<Result<Programs, String>>,
}

/// How the programs are had: the cargo profile, whether wake-ups are
/// traced (and frame-pointer builds wanted), and whether the explanation
/// is between two runs.
#[derive(Clone, Copy)]
pub struct Wanted<'a> {
    pub profile: &'a str,
    pub wakes: bool,
    pub between: bool,
}

/// The programs `names` of `run` (from `file`): today's builds; between
/// two runs, each checked against the SHA-256 the run recorded of it.
pub fn programmed(
    run: &Results,
    file: &Path,
    names: &[&str],
    wanted: Wanted,
) -> Result<Programmed> {
    let Wanted {
        profile,
        wakes,
        between,
    } = wanted;
    let plan = Plan::of(&run.config)?;
    let all = plan.implementations();
    let mut implementations: Vec<Implementation> = Vec::new();
    for name in names {
        let found = all
            .iter()
            .find(|i| i.name() == *name)
            .with_context(|| format!("the run has no program named {name}"))?;
        if !implementations.contains(found) {
            implementations.push(found.clone());
        }
    }
    let mut plain = binaries::locate(&implementations, &[], None, profile)?;
    let mut earlier = Vec::new();
    if between {
        let folder = file.parent().unwrap_or(Path::new("."));
        for (name, program) in plain.iter_mut() {
            let (Program::Binary { path, .. }, Some(hash)) =
                (program, run.suite.binaries.get(name))
            else {
                continue;
            };
            if measure::environment::sha256(path)? == *hash {
                continue;
            }
            let kept = binaries::kept(folder, hash, path);
            ensure!(
                kept.is_file(),
                "{name} is not the binary the run in {} ran (its SHA-256 was {hash}), and the \
                 run kept no copy of it: explain it against a run made with today's build",
                folder.display()
            );
            *path = kept;
            earlier.push(name.clone());
        }
    }
    let traced = match (wakes, earlier.is_empty()) {
        (false, _) => None,
        (true, true) => Some(Ok(binaries::with_frame_pointers(
            &implementations,
            profile,
        )?)),
        (true, false) => Some(Err(format!(
            "{} ran an earlier build than today's (kept beside its run), and no build of it \
             with frame pointers can be made",
            earlier.join(", ")
        ))),
    };
    Ok(Programmed { plain, traced })
}
