//! `compare history import`: results folders made before the history, or
//! elsewhere, brought into it.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{Appended, History};
use crate::results::{Results, file};

/// Appends the run of each path (a results file or a run's folder) and of
/// every folder under it that holds one, each in its own transaction;
/// tells `say` what it did as it goes, a line a run.
pub fn folders(history: &mut History, paths: &[PathBuf], mut say: impl FnMut(&str)) -> Result<()> {
    for path in paths {
        let found = results_under(path)?;
        if found.is_empty() {
            bail!(
                "{} holds no results file, nor does any folder under it",
                path.display()
            );
        }
        for results in found {
            let run = Results::load(&results)?;
            let what = match history.append(&run, &results.display().to_string())? {
                Appended::New => "imported",
                Appended::Replaced => "replaced",
            };
            say(&format!(
                "{what} {} ({} cells, started {})",
                results.display(),
                run.cells.len(),
                run.config.started
            ));
        }
    }
    Ok(())
}

/// The results files at `path` and under it, in name order.
fn results_under(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return match file::stored(path) {
            true => Ok(vec![path.to_path_buf()]),
            false => bail!("{}: no such file or folder", path.display()),
        };
    }
    let own = file::named(path);
    if file::stored(&own) {
        return Ok(vec![own]);
    }
    let mut folders: Vec<PathBuf> = fs::read_dir(path)
        .with_context(|| format!("reading {}", path.display()))?
        .map(|e| Ok(e?.path()))
        .collect::<std::io::Result<Vec<_>>>()?
        .into_iter()
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    let mut found = Vec::new();
    for folder in folders {
        found.extend(results_under(&folder)?);
    }
    Ok(found)
}
