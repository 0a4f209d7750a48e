//! What a runtime crate's own metadata says of its upkeep, for `compare
//! list`: its newest release and when it came out (crates.io's index, as
//! cargo last fetched it), the compiler that release needs, and a notice
//! its manifest gives (a description or maintenance badge that says
//! deprecated, discontinued or unmaintained). Read from cargo's caches:
//! nothing is fetched unless asked (`compare list --refresh`).

use semver::Version;

use crate::releases::{self, Entry};
use model::adapters::{Adapter, RUSTC_VERSION};

/// Words of a manifest that say a crate is no longer kept up.
const NOTICES: [&str; 4] = [
    "deprecated",
    "discontinued",
    "unmaintained",
    "no longer maintained",
];

/// The adapter's crate's upkeep, in a few words.
pub fn of(adapter: &Adapter) -> String {
    if adapter.krate == "std" {
        return format!("the Rust toolchain ({RUSTC_VERSION})");
    }
    let entries = match releases::cached(adapter.krate) {
        Ok(entries) => entries,
        Err(_) => {
            return "unknown: cargo has no index entry cached (compare list --refresh)".into();
        }
    };
    let notice = releases::manifest(adapter.krate, adapter.version())
        .and_then(|path| std::fs::read_to_string(path).ok())
        .and_then(|text| notice(&text));
    describe(&entries, adapter.version(), notice)
}

/// `newest RELEASE (DATE)`, then what else a reader should know: that the
/// locked release is older (and when it came out), that the newest needs a
/// newer compiler than this one, and the manifest's notice.
pub fn describe(entries: &[Entry], locked: &str, notice: Option<String>) -> String {
    let date = |e: &Entry| {
        e.pubtime
            .as_deref()
            .map_or("before 2025".to_string(), |t| t.chars().take(10).collect())
    };
    let stable = entries
        .iter()
        .filter(|e| !e.yanked && Version::parse(&e.vers).is_ok_and(|v| v.pre.is_empty()));
    let Some(newest) = stable.max_by_key(|e| Version::parse(&e.vers).ok()) else {
        return "no release in cargo's index".into();
    };
    let mut words = vec![format!("newest {} ({})", newest.vers, date(newest))];
    if let Some(ours) = entries
        .iter()
        .find(|e| e.vers == locked && newest.vers != locked)
    {
        words.push(format!("built on {} ({})", ours.vers, date(ours)));
    }
    let needs = newest
        .rust_version
        .as_deref()
        .and_then(|r| Some((r, Version::parse(&full(r)).ok()?)));
    if let (Some((needs, wanted)), Ok(ours)) = (needs, Version::parse(RUSTC_VERSION))
        && wanted > ours
    {
        words.push(format!("the newest needs rustc {needs}"));
    }
    words.extend(notice);
    words.join("; ")
}

/// "1.85" as semver: "1.85.0".
fn full(version: &str) -> String {
    match version.matches('.').count() {
        0 => format!("{version}.0.0"),
        1 => format!("{version}.0"),
        _ => version.into(),
    }
}

/// The manifest's description or maintenance badge, where it says the
/// crate is no longer kept up.
pub fn notice(manifest: &str) -> Option<String> {
    let manifest: toml::Table = manifest.parse().ok()?;
    let badge = manifest
        .get("badges")
        .and_then(|b| b.get("maintenance"))
        .and_then(|m| m.get("status"))
        .and_then(|s| s.as_str());
    if let Some(status) = badge.filter(|s| ["deprecated", "looking-for-maintainer"].contains(s)) {
        return Some(format!("maintenance badge: {status}"));
    }
    let description = manifest.get("package")?.get("description")?.as_str()?;
    let lower = description.to_lowercase();
    NOTICES
        .iter()
        .any(|word| lower.contains(word))
        .then(|| format!("its description: \"{}\"", description.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(vers: &str, pubtime: Option<&str>, rust: Option<&str>) -> Entry {
        Entry {
            vers: vers.into(),
            yanked: false,
            pubtime: pubtime.map(Into::into),
            rust_version: rust.map(Into::into),
        }
    }

    #[test]
    fn the_newest_release_its_date_and_what_holds_us_back() {
        let entries = [
            entry("0.4.4", None, None),
            entry("0.5.3", Some("2026-11-01T10:00:00Z"), Some("99.1")),
            entry("0.6.0-rc.1", Some("2026-11-20T10:00:00Z"), None),
        ];
        assert_eq!(
            describe(&entries, "0.4.4", None),
            "newest 0.5.3 (2026-11-01); built on 0.4.4 (before 2025); the newest needs rustc 99.1"
        );
        assert_eq!(
            describe(&entries[1..2], "0.5.3", Some("x".into())),
            "newest 0.5.3 (2026-11-01); the newest needs rustc 99.1; x"
        );
        assert_eq!(describe(&[], "1.0.0", None), "no release in cargo's index");
    }

    #[test]
    fn a_manifest_that_says_it_is_not_kept_up_is_quoted() {
        let deprecated = "[package]\nname = \"async-std\"\ndescription = \"Deprecated in favor of `smol` - Async version of the Rust standard library\"\n";
        assert_eq!(
            notice(deprecated).unwrap(),
            "its description: \"Deprecated in favor of `smol` - Async version of the Rust standard library\""
        );
        let badge = "[package]\nname = \"x\"\n[badges.maintenance]\nstatus = \"deprecated\"\n";
        assert_eq!(notice(badge).unwrap(), "maintenance badge: deprecated");
        let kept = "[package]\nname = \"tokio\"\ndescription = \"An event-driven platform\"\n";
        assert_eq!(notice(kept), None);
    }
}
