//! Isolated builds of an implementation against an exact version of its
//! runtime crate (`tokio@1.47.0`), or against unreleased code of it (a
//! commit's files or a checkout, through `[patch.crates-io]`): the adapter is copied into its own
//! workspace under `target/versions/`, with the crate's requirement pinned to
//! `=VERSION`, the main Cargo.lock as its starting point (so that nothing
//! else moves), and its own lockfile, kept for the next run.
//!
//! It builds into the workspace's own target folder, with the workspace's
//! one set of features (workspace-hack), so that what a release shares with
//! the workspace (pingpong's dependencies, the runtime's other crates) is
//! built once for all of them: between releases only the runtime crate, the
//! glue and pingpong build again. Its copy of the adapter is a package of
//! its own name, `<package>-<version>` with its binaries named so, which no
//! other build overwrites; each release's binary is copied out beside its
//! workspace, under the adapter's own name.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use cargo_lock::Lockfile;
use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table, value};

use pingpong::knobs::Settings;

use crate::cargo::{self, Binary, BuildError, Flags};
use model::adapters::Adapter;
use model::implementation::Pin;
use model::program::Program;
use model::{defaults, revision};

/// Builds `adapter` against `pin`, a release or unreleased code of its
/// crate, with cargo profile `profile` (and frame pointers where asked),
/// and checks the version cargo resolved.
pub fn build(
    root: &Path,
    adapter: &'static Adapter,
    pin: &Pin,
    profile: &str,
    knobs: &Settings,
    frame_pointers: bool,
) -> Result<Program> {
    let Pinned {
        what,
        label,
        version,
        patch,
    } = Pinned::of(adapter, pin)?;
    let name = format!("{}@{label}", adapter.name);
    let flags = Flags {
        cfgs: knobs.cfgs(),
        frame_pointers,
    };
    let sources = root
        .join("runtimes")
        .join(adapter.package.trim_start_matches("pingpong-"));
    let dir = root
        .join("target")
        .join("versions")
        .join(format!("{}-{label}", adapter.package));
    eprintln!(
        "building {} against {what} in {}",
        adapter.name,
        dir.display()
    );
    let package = release_name(adapter.package, &label);
    let requirement = Requirement {
        krate: adapter.krate,
        version: &version,
        patch: patch.as_deref(),
    };
    prepare(root, &sources, &dir, &package, &label, &requirement)
        .with_context(|| format!("preparing the build of {name}"))?;
    let target = match flags.folder() {
        None => root.join("target"),
        Some(folder) => root.join("target").join(folder),
    };
    let binary = Binary {
        name: release_name(&adapter.binary(), &label),
        package: package.clone(),
    };
    let built = cargo::build(
        &dir,
        Some(&target),
        profile,
        std::slice::from_ref(&binary),
        &flags,
    )
    .map_err(|e| match e {
        BuildError::Compile(error) => anyhow!(
            "the {} adapter does not compile against {what}:\n{error}",
            adapter.name,
        ),
        BuildError::Cargo(error) => anyhow!(
            "cannot build {} against {what}: cargo cannot resolve it (no such version, \
                 or not with the features the adapter uses): {error}",
            adapter.name,
        ),
    })?;
    let lock = dir.join("Cargo.lock");
    let resolved = locked_version(&lock, &package, adapter.krate)?;
    if resolved != version {
        bail!(
            "{name} resolved to {} {resolved}, not {version}",
            adapter.krate
        );
    }
    let path = dir.join(match flags.folder() {
        None => adapter.binary(),
        Some(folder) => format!("{}-{folder}", adapter.binary()),
    });
    keep(&built[&binary.name], &path)
        .with_context(|| format!("copying {name}'s binary to {}", path.display()))?;
    Ok(Program::Binary {
        path,
        version: resolved,
        adapter,
        knobs: knobs.clone(),
        lock: Some(lock),
    })
}

/// A version of an adapter's crate, as its build names it.
struct Pinned {
    /// In words: "tokio 1.51.0", or "tokio 1.52.0 at git:URL#REV".
    what: String,
    /// In the build's names: the release, or the commit or folder.
    label: String,
    /// As the crate's manifest says it.
    version: String,
    /// The crate's folder, for unreleased code.
    patch: Option<PathBuf>,
}

impl Pinned {
    fn of(adapter: &Adapter, pin: &Pin) -> Result<Self> {
        let source = match pin {
            Pin::Release(version) => {
                return Ok(Self {
                    what: format!("{} {version}", adapter.krate),
                    label: version.clone(),
                    version: version.clone(),
                    patch: None,
                });
            }
            Pin::Source(source) => source,
        };
        let tree = source.tree(&defaults::trees_folder()?, &defaults::versions_folder()?)?;
        let folder = revision::crate_folder(&tree, adapter.krate)?;
        let version = crate_version(&folder, &tree)?;
        // A commit's build is its own; a folder's is rebuilt as it changes.
        let label = match &source.rev {
            Some(_) => format!("g{}", &source.commit[..12]),
            None => format!(
                "path-{}",
                &revision::sha256_hex(source.location.as_bytes())[..12]
            ),
        };
        Ok(Self {
            what: format!("{} {version} at {}", adapter.krate, source.spec),
            label,
            version,
            patch: Some(folder),
        })
    }
}

/// `built` copied to `path`, beside it and renamed over it: another
/// compare may be running the old one, which the kernel will not let a
/// copy write into. Not replaced when the same: a process running the one
/// replaced finds its own path gone (" (deleted)"), and a fault asked of
/// that path with it.
pub(crate) fn keep(built: &Path, path: &Path) -> std::io::Result<()> {
    if fs::read(path).ok() == Some(fs::read(built)?) {
        return Ok(());
    }
    let dir = path.parent().expect("a binary's path has a folder");
    let fresh = tempfile::NamedTempFile::new_in(dir)?;
    fs::copy(built, fresh.path())?;
    fresh.persist(path)?;
    Ok(())
}

/// What an isolated build asks of the runtime crate: exactly `version`,
/// from crates.io, or from the folder `patch` (`[patch.crates-io]`).
struct Requirement<'a> {
    krate: &'a str,
    version: &'a str,
    patch: Option<&'a Path>,
}

/// The version a crate's manifest gives, its workspace's where it inherits it.
fn crate_version(folder: &Path, tree: &Path) -> Result<String> {
    let read = |dir: &Path| -> Result<DocumentMut> {
        let path = dir.join("Cargo.toml");
        fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .parse()
            .with_context(|| format!("parsing {}", path.display()))
    };
    let manifest = read(folder)?;
    if let Some(version) = manifest["package"]["version"].as_str() {
        return Ok(version.into());
    }
    read(tree)?["workspace"]["package"]["version"]
        .as_str()
        .map(String::from)
        .with_context(|| format!("{} gives no version", folder.join("Cargo.toml").display()))
}

/// `name` with the release in it, as a package or binary may be named:
/// `pingpong-mio-1_2_4`.
fn release_name(name: &str, version: &str) -> String {
    let version: String = version
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() {
            true => c,
            false => '_',
        })
        .collect();
    format!("{name}-{version}")
}

/// Writes the isolated workspace: the root manifest with one member (the
/// adapter's copy, named `package`) and the workspace's own crates as paths
/// outside it, and the adapter with its runtime crate pinned.
fn prepare(
    root: &Path,
    sources: &Path,
    dir: &Path,
    package: &str,
    label: &str,
    requirement: &Requirement,
) -> Result<()> {
    let member = dir.join("adapter");
    fs::create_dir_all(member.join("src"))?;
    copy_tree(&sources.join("src"), &member.join("src"))?;
    // A build script says what the crate's release offers (tokio's has one).
    let script = sources.join("build.rs");
    if script.is_file() {
        write_if_changed(&member.join("build.rs"), &fs::read(&script)?)?;
    }

    let mut adapter_manifest: DocumentMut =
        fs::read_to_string(sources.join("Cargo.toml"))?.parse()?;
    let mut manifest: DocumentMut = fs::read_to_string(root.join("Cargo.toml"))?.parse()?;
    let own = adapter_manifest["package"]["name"]
        .as_str()
        .context("the adapter's Cargo.toml names no package")?;
    let lock =
        Lockfile::load(root.join("Cargo.lock")).context("reading the workspace's Cargo.lock")?;
    keep_profiles_of(&mut manifest, &built_with(&lock, own));
    let workspace = manifest["workspace"]
        .as_table_mut()
        .context("the root Cargo.toml has no [workspace]")?;
    workspace["members"] = value(Array::from_iter(["adapter"]));
    for (crate_name, folder) in [
        ("pingpong", "pingpong"),
        ("workspace-hack", "workspace-hack"),
    ] {
        let path = root.join(folder);
        workspace["dependencies"][crate_name]["path"] = value(path.to_string_lossy().as_ref());
    }
    if let Some(folder) = requirement.patch {
        manifest["patch"]["crates-io"][requirement.krate]["path"] =
            value(folder.to_string_lossy().as_ref());
    }
    write_if_changed(&dir.join("Cargo.toml"), manifest.to_string().as_bytes())?;

    let (krate, exact) = (requirement.krate, format!("={}", requirement.version));
    match &mut adapter_manifest["dependencies"][krate] {
        Item::Value(toml_edit::Value::String(_)) => {
            adapter_manifest["dependencies"][krate] = value(exact);
        }
        Item::Value(toml_edit::Value::InlineTable(table)) => {
            table.insert("version", exact.into());
        }
        _ => bail!("the adapter's Cargo.toml has no dependency on {krate}"),
    }
    rename(&mut adapter_manifest, sources, package, label)?;
    write_if_changed(
        &member.join("Cargo.toml"),
        adapter_manifest.to_string().as_bytes(),
    )?;

    // The main lockfile as a start: every other crate stays at its version.
    let lock = dir.join("Cargo.lock");
    if !lock.exists() {
        fs::copy(root.join("Cargo.lock"), &lock)?;
    }
    Ok(())
}

/// The crates `package` builds with, by name, as `lock` resolves them.
fn built_with(lock: &Lockfile, package: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut next = vec![package.to_string()];
    while let Some(name) = next.pop() {
        if !found.insert(name.clone()) {
            continue;
        }
        for p in lock.packages.iter().filter(|p| p.name.as_str() == name) {
            next.extend(p.dependencies.iter().map(|d| d.name.to_string()));
        }
    }
    found
}

/// Drops the root manifest's settings for single crates (`[profile.dev.package.sha2]`)
/// that the isolated build does not have, compare's own: cargo would warn
/// of each at every build.
fn keep_profiles_of(manifest: &mut DocumentMut, crates: &BTreeSet<String>) {
    let profiles = manifest
        .get_mut("profile")
        .and_then(Item::as_table_like_mut);
    for (_, profile) in profiles.into_iter().flat_map(|p| p.iter_mut()) {
        if let Some(packages) = profile.get_mut("package").and_then(Item::as_table_like_mut) {
            let absent: Vec<String> = packages
                .iter()
                .map(|(name, _)| name.to_string())
                .filter(|name| name != "*" && !crates.contains(name))
                .collect();
            for name in absent {
                packages.remove(&name);
            }
        }
    }
}

/// Names the adapter's copy `package`, and each of its binaries with the
/// release in its name; its library keeps its name, which its binaries use.
fn rename(manifest: &mut DocumentMut, sources: &Path, package: &str, version: &str) -> Result<()> {
    let own = manifest["package"]["name"]
        .as_str()
        .context("the adapter's Cargo.toml names no package")?
        .to_string();
    manifest["package"]["name"] = value(package);
    manifest["package"]["autobins"] = value(false);
    if sources.join("src/lib.rs").is_file() {
        manifest["lib"]["name"] = value(own.replace('-', "_"));
    }
    let mut bins = ArrayOfTables::new();
    for (name, path) in binaries(manifest, sources, &own)? {
        let mut bin = Table::new();
        bin["name"] = value(release_name(&name, version));
        bin["path"] = value(path.to_string_lossy().as_ref());
        bins.push(bin);
    }
    manifest["bin"] = Item::ArrayOfTables(bins);
    Ok(())
}

/// The adapter's binaries, by name and path under its folder: its
/// `[[bin]]` entries, else `src/main.rs` (named after the package) and
/// `src/bin/*.rs`.
fn binaries(manifest: &DocumentMut, sources: &Path, own: &str) -> Result<Vec<(String, PathBuf)>> {
    if let Some(bins) = manifest.get("bin").and_then(Item::as_array_of_tables) {
        return bins
            .iter()
            .map(|b| {
                let name = b.get("name").and_then(Item::as_str);
                let path = b.get("path").and_then(Item::as_str);
                Ok((
                    name.context("a [[bin]] without a name")?.to_string(),
                    path.context("a [[bin]] without a path")?.into(),
                ))
            })
            .collect();
    }
    let mut found = Vec::new();
    if sources.join("src/main.rs").is_file() {
        found.push((own.to_string(), "src/main.rs".into()));
    }
    if let Ok(dir) = fs::read_dir(sources.join("src/bin")) {
        for entry in dir {
            let path = entry?.path();
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            found.push((
                stem.into_owned(),
                Path::new("src/bin").join(path.file_name().unwrap()),
            ));
        }
    }
    found.sort();
    Ok(found)
}

/// Copies the files under `from` to `to`, but a build's `target` folder
/// and git's own.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        if ["target", ".git"]
            .map(std::ffi::OsStr::new)
            .contains(&entry.file_name().as_os_str())
        {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else {
            write_if_changed(&target, &fs::read(entry.path())?)?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` unless it holds them already: cargo goes by
/// modification times, and an isolated build prepared again as it was
/// builds nothing again.
pub(crate) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// The version of `krate` that `package` depends on in a lockfile.
pub fn locked_version(lock: &Path, package: &str, krate: &str) -> Result<String> {
    let lockfile = Lockfile::load(lock).with_context(|| format!("reading {}", lock.display()))?;
    lockfile
        .packages
        .iter()
        .find(|p| p.name.as_str() == package)
        .and_then(|p| p.dependencies.iter().find(|d| d.name.as_str() == krate))
        .map(|d| d.version.to_string())
        .with_context(|| format!("{} locks no {krate} for {package}", lock.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_isolated_build_keeps_the_settings_of_the_crates_it_has_and_drops_compare_s() {
        let root = defaults::source_tree().expect("a source tree");
        let lock = Lockfile::load(root.join("Cargo.lock")).unwrap();
        let crates = built_with(&lock, "pingpong-mio");
        for name in ["pingpong-mio", "mio", "pingpong", "ring", "hdrhistogram"] {
            assert!(crates.contains(name), "{name}: {crates:?}");
        }
        for name in ["compare", "sha2", "procfs-core", "tokio-rustls"] {
            assert!(!crates.contains(name), "{name}");
        }

        let text = fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let mut manifest: DocumentMut = text.parse().unwrap();
        keep_profiles_of(&mut manifest, &crates);
        let kept = |profile: &str| -> Vec<String> {
            manifest["profile"][profile]["package"]
                .as_table_like()
                .map(|t| t.iter().map(|(name, _)| name.to_string()).collect())
                .unwrap_or_default()
        };
        assert_eq!(kept("dev"), ["*", "ring", "hdrhistogram"]);
        assert!(kept("release").is_empty(), "{:?}", kept("release"));
        // What the build itself is set to stays.
        assert_eq!(manifest["profile"]["release"]["lto"].as_str(), Some("fat"));
    }
}
