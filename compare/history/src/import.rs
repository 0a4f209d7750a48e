//! `compare history import`: results folders made before the history, or
//! elsewhere, brought into it.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::{Appended, History};
use model::results::{Results, file};

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

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        #[test]
        fn a_damaged_folder_is_imported_whole_or_refused_and_the_history_stays_readable(
            cut in 0usize..100_000,
            at in 0usize..100_000,
            byte in proptest::num::u8::ANY,
        ) {
            let fixture = model::fixtures::small_path();
            let mut bytes = fs::read(fixture).unwrap();
            bytes.truncate(cut % (bytes.len() + 1));
            if !bytes.is_empty() {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            let dir = tempfile::tempdir().unwrap();
            let run = dir.path().join("run");
            fs::create_dir(&run).unwrap();
            fs::write(run.join(file::NAME), &bytes).unwrap();
            let mut history = History::open(&dir.path().join("history.sqlite")).unwrap();
            let imported = folders(&mut history, &[dir.path().to_path_buf()], |_| {});
            let entries = history.entries().unwrap();
            proptest::prop_assert_eq!(entries.len(), usize::from(imported.is_ok()));
            for entry in entries {
                history.load(entry.id).unwrap();
            }
        }
    }
}
