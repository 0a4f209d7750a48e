//! Ranges of releases (`tokio@1.45.0..1.54.1`): every published release of
//! a crate between two, inclusive, as cargo's own registry index lists
//! them. cargo refreshes its on-disk cache of the crate's index entry
//! (`cargo info`), and this module reads that cache: yanked releases are
//! left out and named, pre-releases kept only when asked for.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use semver::Version;

/// The releases of a range, in order, and those left out with why.
#[derive(Debug, Clone, PartialEq)]
pub struct Releases {
    pub versions: Vec<String>,
    pub skipped: Vec<(String, String)>,
}

/// Every release of `krate` from `from` to `to`, inclusive, from cargo's
/// index of crates.io, refreshed first.
pub fn between(krate: &str, from: &Version, to: &Version, pre: bool) -> Result<Releases> {
    refresh(krate)?;
    let entries = cached(krate)?;
    let releases = select(&entries, from, to, pre);
    if releases.versions.is_empty() {
        bail!("{krate} has no release from {from} to {to} in cargo's index");
    }
    Ok(releases)
}

/// One release as the index lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub vers: String,
    pub yanked: bool,
    /// When it was published (RFC 3339; entries from before 2025 have none).
    pub pubtime: Option<String>,
    /// The oldest compiler it declares it builds with.
    pub rust_version: Option<String>,
}

impl From<&crates_index::Version> for Entry {
    fn from(v: &crates_index::Version) -> Self {
        Self {
            vers: v.version().into(),
            yanked: v.is_yanked(),
            pubtime: v.pubtime().map(Into::into),
            rust_version: v.rust_version().map(Into::into),
        }
    }
}

/// Every release of `krate` in cargo's cache of its index entry, as cargo
/// last fetched it (nothing is fetched here): the cache of the cargo that
/// runs, by crates-index, wherever cargo versions keep theirs apart.
pub fn cached(krate: &str) -> Result<Vec<Entry>> {
    let index = crates_index::SparseIndex::from_url_with_hash_kind(
        crates_index::sparse::URL,
        &hash_kind()?,
    )
    .context("finding cargo's cache of the crates.io index")?;
    let found = index
        .crate_from_cache(krate)
        .with_context(|| format!("reading cargo's index cache of {krate}"))?;
    Ok(found.versions().iter().map(Entry::from).collect())
}

/// The manifest of release `version` of `krate`, as cargo unpacked it
/// when it built against it, if it did.
pub fn manifest(krate: &str, version: &str) -> Option<PathBuf> {
    let src = cargo_home().ok()?.join("registry").join("src");
    std::fs::read_dir(src)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| {
            e.path()
                .join(format!("{krate}-{version}"))
                .join("Cargo.toml")
        })
        .find(|p| p.is_file())
}

/// The releases in range, oldest first.
pub fn select(entries: &[Entry], from: &Version, to: &Version, pre: bool) -> Releases {
    let mut found: Vec<(Version, &Entry)> = entries
        .iter()
        .filter_map(|e| Some((Version::parse(&e.vers).ok()?, e)))
        .filter(|(v, _)| v >= from && v <= to)
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut releases = Releases {
        versions: Vec::new(),
        skipped: Vec::new(),
    };
    for (version, entry) in found {
        if entry.yanked {
            releases.skipped.push((entry.vers.clone(), "yanked".into()));
        } else if !version.pre.is_empty() && !pre {
            releases.skipped.push((
                entry.vers.clone(),
                "a pre-release (--pre-releases to include)".into(),
            ));
        } else {
            releases.versions.push(entry.vers.clone());
        }
    }
    releases
}

/// How the cargo that runs names its index folder: cargo 1.85 changed the
/// hash, and a machine may keep both folders side by side.
fn hash_kind() -> Result<crates_index::HashKind> {
    let output = Command::new("cargo")
        .arg("--version")
        .output()
        .context("running cargo --version")?;
    // "cargo 1.95.0 (f2d3ce0bd 2026-03-21)": the version is the second word.
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text
        .split_whitespace()
        .nth(1)
        .and_then(|v| Version::parse(v).ok())
        .with_context(|| format!("cargo --version printed {text:?}"))?;
    Ok(match version >= Version::new(1, 85, 0) {
        true => crates_index::HashKind::Stable,
        false => crates_index::HashKind::Legacy,
    })
}

fn cargo_home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        return Ok(home.into());
    }
    let home = std::env::var_os("HOME").context("neither CARGO_HOME nor HOME is set")?;
    Ok(Path::new(&home).join(".cargo"))
}

/// Has cargo bring its cache of the crate's index entry up to date.
pub fn refresh(krate: &str) -> Result<()> {
    let output = Command::new("cargo")
        .args(["info", "--quiet", krate])
        .current_dir(std::env::temp_dir())
        .output()
        .context("running cargo info")?;
    ensure!(
        output.status.success(),
        "cargo info {krate} failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(())
}

/// A release's repository or changelog, as `cargo info` reads it from the
/// crate's own metadata, if it has one.
pub fn link(krate: &str, version: &str) -> Option<String> {
    let output = Command::new("cargo")
        .args(["info", "--quiet", &format!("{krate}@{version}")])
        .current_dir(std::env::temp_dir())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("repository: "))
        .map(|url| url.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(entries: &[(&str, bool)]) -> Vec<Entry> {
        entries
            .iter()
            .map(|&(vers, yanked)| Entry {
                vers: vers.into(),
                yanked,
                pubtime: None,
                rust_version: None,
            })
            .collect()
    }

    #[test]
    fn a_range_is_every_release_between_its_ends_less_the_yanked() {
        let entries = entries(&[
            ("1.0.0", false),
            ("1.2.0", false),
            ("1.1.0", false),
            ("1.1.1", true),
            ("1.3.0-rc.1", false),
            ("1.3.0", false),
            ("2.0.0", false),
        ]);
        let v = |s: &str| Version::parse(s).unwrap();
        let releases = select(&entries, &v("1.1.0"), &v("1.3.0"), false);
        assert_eq!(releases.versions, ["1.1.0", "1.2.0", "1.3.0"]);
        let skipped: Vec<&str> = releases.skipped.iter().map(|(v, _)| v.as_str()).collect();
        assert_eq!(skipped, ["1.1.1", "1.3.0-rc.1"]);
        assert_eq!(releases.skipped[0].1, "yanked");
        let with_pre = select(&entries, &v("1.1.0"), &v("1.3.0"), true);
        assert_eq!(with_pre.versions, ["1.1.0", "1.2.0", "1.3.0-rc.1", "1.3.0"]);
    }

    #[test]
    fn cargo_s_cache_of_a_crate_it_built_holds_the_locked_release() {
        // This workspace built semver, so cargo's index cache has its entry.
        let found = cached("semver").unwrap();
        let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
        let lock = cargo_lock::Lockfile::load(lock).unwrap();
        let semver = lock.packages.iter().find(|p| p.name.as_str() == "semver");
        let locked = semver.unwrap().version.to_string();
        assert!(
            found.iter().any(|e| e.vers == locked),
            "semver {locked} in {:?}",
            found.iter().map(|e| &e.vers).collect::<Vec<_>>()
        );
    }
}
