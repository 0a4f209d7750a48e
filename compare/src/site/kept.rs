//! What a build of the site keeps for the next one (`site-manifest.json`
//! in its folder): each run in brief with its digest, and each comparison
//! with the key of what it was judged from and its verdicts counted. The
//! next build by the same compare reuses a run's report and a
//! comparison's page whose inputs are the same, and makes the rest: a
//! nightly history's site makes one new run's pages, not a thousand.
//!
//! A manifest is read at the start of a build and removed, and written
//! whole at its end: a build cut short leaves none, and the next one makes
//! every page again.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::content::{Run, Tally};

/// The manifest's name in the site's folder.
pub const MANIFEST: &str = "site-manifest.json";

/// What a build made, for the next.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Kept {
    /// The compare that made the pages (the digest of its program), and
    /// whether they link the book.
    pub made_by: String,
    /// By slug.
    pub runs: BTreeMap<String, Run>,
    /// By page name: the key of its inputs, and its verdicts (none: no
    /// cell of the two had runs enough to judge).
    pub comparisons: BTreeMap<String, (String, Option<Tally>)>,
}

impl Kept {
    /// What the last build in `out` made, if it was `made_by` the same
    /// compare for the same book; then its manifest is removed until this
    /// build ends.
    pub fn take(out: &Path, made_by: &str) -> Result<Self> {
        let path = out.join(MANIFEST);
        let Ok(text) = fs::read(&path) else {
            return Ok(Self::default());
        };
        fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        Ok(serde_json::from_slice::<Self>(&text)
            .ok()
            .filter(|kept| kept.made_by == made_by)
            .unwrap_or_default())
    }

    /// The run kept under `slug`, if it was made from the same results
    /// and its report is still there.
    pub fn run(&self, slug: &str, digest: &str, out: &Path) -> Option<&Run> {
        self.runs
            .get(slug)
            .filter(|run| run.digest == digest)
            .filter(|run| {
                out.join("runs")
                    .join(&run.slug)
                    .join("report.html")
                    .is_file()
            })
    }

    /// A comparison's verdicts kept under `name`, if judged from the same
    /// inputs and its page (where it has one) is still there.
    pub fn comparison(&self, name: &str, key: &str, out: &Path) -> Option<Option<Tally>> {
        let (kept, tally) = self.comparisons.get(name)?;
        let page = out.join("comparisons").join(format!("{name}.html"));
        (kept == key && (tally.is_none() || page.is_file())).then_some(*tally)
    }

    pub fn write(&self, out: &Path) -> Result<PathBuf> {
        let path = out.join(MANIFEST);
        fs::write(&path, serde_json::to_vec(self)?)
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }
}

/// The digest of this compare's own program: pages another build of it
/// made may say other things.
pub fn this_compare() -> Result<String> {
    let program = std::env::current_exe().context("finding this compare's program")?;
    let bytes = fs::read(&program).with_context(|| format!("reading {}", program.display()))?;
    Ok(hex(&Sha256::digest(bytes)))
}

/// The key of what a page is made from: each part in turn.
pub fn key(parts: &[&str]) -> String {
    let mut digest = Sha256::new();
    for part in parts {
        digest.update((part.len() as u64).to_le_bytes());
        digest.update(part.as_bytes());
    }
    hex(&digest.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
