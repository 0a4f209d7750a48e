//! Ranges of releases (`tokio@1.45.0..1.54.1`): every published release of
//! a crate between two, inclusive, as cargo's own registry index lists
//! them. cargo refreshes its on-disk cache of the crate's index entry
//! (`cargo info`), and this module reads that cache: yanked releases are
//! left out and named, pre-releases kept only when asked for.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use semver::Version;
use serde::Deserialize;

/// `NAME@A..B`: the implementation's name and the two ends, if `spec` is a range.
pub fn parse_range(spec: &str) -> Result<Option<(&str, Version, Version)>> {
    let Some((name, range)) = spec.split_once('@') else {
        return Ok(None);
    };
    let Some((from, to)) = range.split_once("..") else {
        return Ok(None);
    };
    let version = |v: &str| {
        Version::parse(v)
            .with_context(|| format!("{spec:?}: {v:?} is not a version, as in {name}@1.2.3..1.4.0"))
    };
    let (from, to) = (version(from)?, version(to)?);
    ensure!(from <= to, "{spec:?}: the range ends before it starts");
    Ok(Some((name, from, to)))
}

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
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Entry {
    pub vers: String,
    #[serde(default)]
    pub yanked: bool,
    /// When it was published (RFC 3339; entries from before 2025 have none).
    #[serde(default)]
    pub pubtime: Option<String>,
    /// The oldest compiler it declares it builds with.
    #[serde(default)]
    pub rust_version: Option<String>,
}

/// Every release of `krate` in cargo's cache of its index entry, as cargo
/// last fetched it (nothing is fetched here).
pub fn cached(krate: &str) -> Result<Vec<Entry>> {
    let cache = cache_file(&cargo_home()?, krate)?;
    let bytes = std::fs::read(&cache)
        .with_context(|| format!("reading cargo's index cache {}", cache.display()))?;
    parse_cache(&bytes).with_context(|| format!("reading cargo's index cache {}", cache.display()))
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

/// Parses cargo's index cache file: a cache version byte, the index format
/// version (4 bytes), the index revision and then each release's version
/// and JSON entry, every string ending in a NUL byte.
pub fn parse_cache(bytes: &[u8]) -> Result<Vec<Entry>> {
    ensure!(bytes.len() > 5, "too short for cargo's index cache");
    let mut fields = bytes[5..].split(|&b| b == 0);
    fields.next().context("no index revision")?;
    let mut entries = Vec::new();
    while let Some(version) = fields.next() {
        if version.is_empty() {
            break;
        }
        let json = fields.next().context("a version with no entry")?;
        let entry: Entry = serde_json::from_slice(json)
            .with_context(|| format!("the entry of {}", String::from_utf8_lossy(version)))?;
        entries.push(entry);
    }
    Ok(entries)
}

/// Where cargo caches crates.io's index entry of `krate`.
fn cache_file(cargo_home: &Path, krate: &str) -> Result<PathBuf> {
    let index = cargo_home.join("registry").join("index");
    let registry = std::fs::read_dir(&index)
        .with_context(|| format!("reading {}", index.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("index.crates.io-"))
        })
        .with_context(|| format!("no crates.io index under {}", index.display()))?;
    Ok(registry.join(".cache").join(prefix(krate)).join(krate))
}

/// The index's folder of a crate: 1, 2, 3/a, or ab/cd.
fn prefix(krate: &str) -> PathBuf {
    let name = krate.to_lowercase();
    match name.len() {
        1 => "1".into(),
        2 => "2".into(),
        3 => Path::new("3").join(&name[..1]),
        _ => Path::new(&name[..2]).join(&name[2..4]),
    }
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

    fn cache(entries: &[(&str, bool)]) -> Vec<u8> {
        let mut bytes = vec![3, 2, 0, 0, 0];
        bytes.extend(b"Unknown\0");
        for (vers, yanked) in entries {
            bytes.extend(vers.as_bytes());
            bytes.push(0);
            bytes.extend(format!(r#"{{"name":"x","vers":"{vers}","yanked":{yanked}}}"#).bytes());
            bytes.push(0);
        }
        bytes
    }

    #[test]
    fn a_range_is_every_release_between_its_ends_less_the_yanked() {
        let entries = parse_cache(&cache(&[
            ("1.0.0", false),
            ("1.2.0", false),
            ("1.1.0", false),
            ("1.1.1", true),
            ("1.3.0-rc.1", false),
            ("1.3.0", false),
            ("2.0.0", false),
        ]))
        .unwrap();
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
    fn ranges_parse_or_say_why_not() {
        let (name, from, to) = parse_range("tokio@1.45.0..1.54.1").unwrap().unwrap();
        assert_eq!(
            (name, from.to_string(), to.to_string()),
            ("tokio", "1.45.0".into(), "1.54.1".into())
        );
        assert_eq!(parse_range("tokio@1.45.0").unwrap(), None);
        assert_eq!(parse_range("tokio").unwrap(), None);
        for bad in [
            "tokio@1.45..1.46.0",
            "tokio@1.46.0..1.45.0",
            "tokio@x..1.0.0",
        ] {
            assert!(parse_range(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_crate_s_index_folder_follows_cargo_s_rule() {
        assert_eq!(prefix("a"), Path::new("1"));
        assert_eq!(prefix("io"), Path::new("2"));
        assert_eq!(prefix("mio"), Path::new("3/m"));
        assert_eq!(prefix("Tokio"), Path::new("to/ki"));
        assert!(parse_cache(b"\x03").is_err());
    }
}
