//! The results file on disk: its one name, reading any file of this
//! schema (its figures computed again from its runs), and writing it so
//! that it is complete at every moment. A committed report keeps its file
//! compressed (gzip, `results.json.gz`), which reads the same.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use flate2::read::GzDecoder;

use super::{Results, SCHEMA};

/// The name of a run's results file in its folder.
pub const NAME: &str = "results.json";
/// The same compressed, as a committed report keeps it.
pub const COMPRESSED: &str = "results.json.gz";

/// The first bytes of a gzip stream.
const GZIP: [u8; 2] = [0x1f, 0x8b];

/// The results file of the run in `folder`.
pub fn in_folder(folder: &Path) -> PathBuf {
    folder.join(NAME)
}

/// The file a results path names: the file itself, or the results file of
/// the run in a folder (compressed where only that is there, whole or in
/// parts).
pub fn named(path: &Path) -> PathBuf {
    let compressed = path.join(COMPRESSED);
    match path.is_dir() {
        true if !in_folder(path).exists() && stored(&compressed) => compressed,
        true => in_folder(path),
        false => path.to_path_buf(),
    }
}

/// Whether the file is there, whole or in parts.
pub fn stored(path: &Path) -> bool {
    path.exists() || part(path, 1).exists()
}

/// Part `n` of a file kept in parts (`results.json.gz.1`, `.2`, ...), so
/// that no committed file is over 5 MB.
fn part(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    name.into()
}

/// The bytes of `path`, or of its parts one after another where it is kept
/// in parts.
fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    if path.exists() || !part(path, 1).exists() {
        return fs::read(path);
    }
    let mut bytes = Vec::new();
    for n in 1.. {
        match fs::read(part(path, n)) {
            Ok(more) => bytes.extend(more),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => return Err(e),
        }
    }
    Ok(bytes)
}

impl Results {
    /// Reads a results file of this schema.
    pub fn load(path: &Path) -> Result<Self> {
        let text = || -> Result<String> {
            let bytes = read(path)?;
            let mut text = String::new();
            match bytes.starts_with(&GZIP) {
                true => GzDecoder::new(&bytes[..]).read_to_string(&mut text)?,
                false => {
                    text = String::from_utf8(bytes)?;
                    0
                }
            };
            Ok(text)
        };
        let text = text().with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Reads the text of a results file; `name` names it in errors.
    pub fn parse(text: &str, name: &str) -> Result<Self> {
        let value: serde_json::Value =
            serde_json::from_str(text).with_context(|| format!("{name} is not valid JSON"))?;
        let schema = value.get("schema").and_then(serde_json::Value::as_u64);
        ensure!(
            schema == Some(SCHEMA.into()),
            "{name} has results schema {}, but this compare reads schema {SCHEMA}",
            schema.map_or("(none)".into(), |s| s.to_string())
        );
        let mut results: Self = serde_json::from_value(value)
            .with_context(|| format!("{name} is not a valid results file"))?;
        // Summaries follow from the runs: files written before a figure
        // existed get it wherever their runs have the data.
        for cell in &mut results.cells {
            cell.churn = cell.churn.or(results.config.churn);
            cell.name_the_generator();
        }
        results.summarize();
        Ok(results)
    }

    /// Writes the file so that it is complete at every moment: a new file
    /// in the same folder, renamed over the old one.
    pub fn save(&self, path: &Path) -> Result<()> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let write = || -> Result<()> {
            let mut file = tempfile::NamedTempFile::new_in(dir.unwrap_or(Path::new(".")))?;
            // One write: serde_json writes token by token, a system call each
            // on an unbuffered file (a 1,000-run file took 0.4 s a save).
            let mut json = serde_json::to_vec_pretty(self)?;
            json.push(b'\n');
            file.write_all(&json)?;
            file.as_file().sync_all()?;
            file.persist(path)?;
            Ok(())
        };
        write().with_context(|| format!("writing {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Cell;

    #[test]
    fn a_file_from_before_the_additions_still_loads() {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../reports/2026-11-30-vm-2cpu");
        let old = Results::load(&named(&folder)).unwrap();
        assert_eq!(old.cells.len(), 110);
        assert!(old.cells[0].runs[0].rtt.is_none());
        let figures = old.cells[0].figures.as_ref().unwrap();
        assert!(figures.contains_key("messages_per_s") && !figures.contains_key("rtt_p99_us"));
    }

    #[test]
    fn an_open_loop_run_by_mio_s_client_reads_as_the_generator_s() {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../reports/2026-11-30-vm-2cpu-open-loop");
        let mut text = String::new();
        GzDecoder::new(&read(&named(&folder)).unwrap()[..])
            .read_to_string(&mut text)
            .unwrap();
        assert!(
            text.contains(r#""client": "mio""#),
            "written by mio's client"
        );
        let old = Results::parse(&text, "open loop").unwrap();
        let (open, closed): (Vec<&Cell>, Vec<&Cell>) =
            old.cells.iter().partition(|c| c.workload().rate.is_some());
        assert!(!open.is_empty() && open.iter().all(|c| c.client == "generator"));
        assert!(closed.iter().all(|c| c.client != "generator"));
    }

    #[test]
    fn an_unknown_schema_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("schema-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.json");
        fs::write(&path, r#"{"schema": 2, "cells": []}"#).unwrap();
        let e = format!("{:#}", Results::load(&path).unwrap_err());
        assert!(e.contains("schema 2") && e.contains("schema 1"), "{e}");
        fs::write(&path, r#"{"schema": 1, "cells": ["#).unwrap();
        let e = format!("{:#}", Results::load(&path).unwrap_err());
        assert!(e.contains("not valid JSON") && e.contains("line 1"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    proptest::proptest! {
        #[test]
        fn any_text_loads_or_is_refused_without_a_panic(text in ".{0,400}") {
            let _ = Results::parse(&text, "input");
        }

        #[test]
        fn a_damaged_results_file_is_refused_without_a_panic(
            cut in 0usize..100_000,
            at in 0usize..100_000,
            byte in proptest::num::u8::ANY,
        ) {
            let path = crate::fixtures::small_path();
            let mut bytes = fs::read(path).unwrap();
            bytes.truncate(cut % (bytes.len() + 1));
            if !bytes.is_empty() {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
            let _ = Results::parse(&String::from_utf8_lossy(&bytes), "input");
        }
    }
}
