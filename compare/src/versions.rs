//! Isolated builds of an implementation against an exact version of its
//! runtime crate (`tokio@1.47.0`): the adapter is copied into its own
//! workspace under `target/versions/`, with the crate's requirement pinned to
//! `=VERSION`, the main Cargo.lock as its starting point (so that nothing
//! else moves), and its own lockfile, kept for the next run. Every release
//! builds into one target folder, `target/versions/target`, so that what
//! the releases share (pingpong and its dependencies) is built once; each
//! release's binary is copied out beside its workspace.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use cargo_lock::Lockfile;
use toml_edit::{DocumentMut, Item, value};

use pingpong::knobs::Settings;

use crate::adapters::Adapter;
use crate::cargo::{self, BuildError, cfg_folder};
use crate::program::Program;

/// Builds `adapter` against `version` of its crate with cargo profile
/// `profile`, and checks the version cargo resolved.
pub fn build(
    root: &Path,
    adapter: &'static Adapter,
    version: &str,
    profile: &str,
    knobs: &Settings,
) -> Result<Program> {
    let name = format!("{}@{version}", adapter.name);
    let cfgs = knobs.cfgs();
    let sources = root
        .join("runtimes")
        .join(adapter.package.trim_start_matches("pingpong-"));
    let dir = root
        .join("target")
        .join("versions")
        .join(format!("{}-{version}", adapter.package));
    eprintln!(
        "building {} against {} {version} in {}",
        adapter.name,
        adapter.krate,
        dir.display()
    );
    prepare(root, &sources, &dir, adapter.krate, version)
        .with_context(|| format!("preparing the build of {name}"))?;
    let shared = root.join("target").join("versions").join("target");
    let target = match cfgs.is_empty() {
        true => shared.clone(),
        false => shared.join(cfg_folder(&cfgs)),
    };
    fs::create_dir_all(&target)?;
    // Every release's binary has one name in the shared folder: from the
    // build until it is copied out, no other compare builds there.
    let lock = fs::File::create(target.join("compare.lock"))?;
    lock.lock()
        .with_context(|| format!("locking {}", target.display()))?;
    let built =
        cargo::build(&dir, Some(&target), profile, &[adapter], &cfgs).map_err(|e| match e {
            BuildError::Compile(error) => anyhow!(
                "the {} adapter does not compile against {} {version}:\n{error}",
                adapter.name,
                adapter.krate
            ),
            BuildError::Cargo(error) => anyhow!(
                "cannot build {} against {} {version}: cargo cannot resolve it (no such version, \
                 or not with the features the adapter uses): {error}",
                adapter.name,
                adapter.krate
            ),
        })?;
    let resolved = locked_version(&dir.join("Cargo.lock"), adapter.package, adapter.krate)?;
    if resolved != version {
        bail!(
            "{name} resolved to {} {resolved}, not {version}",
            adapter.krate
        );
    }
    let binary = dir.join(match cfgs.is_empty() {
        true => adapter.binary(),
        false => format!("{}-{}", adapter.binary(), cfg_folder(&cfgs)),
    });
    fs::copy(&built[&adapter.binary()], &binary)
        .with_context(|| format!("copying {name}'s binary to {}", binary.display()))?;
    drop(lock);
    Ok(Program::Binary {
        path: binary,
        version: resolved,
        adapter,
        knobs: knobs.clone(),
    })
}

/// The crate that gives the workspace's crates one set of features (cargo hakari).
const HACK: &str = "workspace-hack";

/// Writes the isolated workspace: the root manifest with one member (the
/// adapter's copy) and pingpong as a path outside it, and the adapter with
/// its runtime crate pinned.
fn prepare(root: &Path, sources: &Path, dir: &Path, krate: &str, version: &str) -> Result<()> {
    let member = dir.join("adapter");
    fs::create_dir_all(member.join("src"))?;
    copy_tree(&sources.join("src"), &member.join("src"))?;
    // A build script says what the crate's release offers (tokio's has one).
    let script = sources.join("build.rs");
    if script.is_file() {
        fs::copy(&script, member.join("build.rs"))?;
    }

    let mut manifest: DocumentMut = fs::read_to_string(root.join("Cargo.toml"))?.parse()?;
    let workspace = manifest["workspace"]
        .as_table_mut()
        .context("the root Cargo.toml has no [workspace]")?;
    workspace["members"] = value(toml_edit::Array::from_iter(["adapter"]));
    let pingpong = root.join("pingpong");
    workspace["dependencies"]["pingpong"]["path"] = value(pingpong.to_string_lossy().as_ref());
    // The workspace's one set of features is for the workspace's own builds;
    // a release resolves its own.
    workspace["dependencies"]
        .as_table_like_mut()
        .context("the root Cargo.toml has no [workspace.dependencies]")?
        .remove(HACK);
    fs::write(dir.join("Cargo.toml"), manifest.to_string())?;

    let mut adapter_manifest: DocumentMut =
        fs::read_to_string(sources.join("Cargo.toml"))?.parse()?;
    if let Some(dependencies) = adapter_manifest["dependencies"].as_table_like_mut() {
        dependencies.remove(HACK);
    }
    let requirement = format!("={version}");
    match &mut adapter_manifest["dependencies"][krate] {
        Item::Value(toml_edit::Value::String(_)) => {
            adapter_manifest["dependencies"][krate] = value(requirement);
        }
        Item::Value(toml_edit::Value::InlineTable(table)) => {
            table.insert("version", requirement.into());
        }
        _ => bail!("the adapter's Cargo.toml has no dependency on {krate}"),
    }
    fs::write(member.join("Cargo.toml"), adapter_manifest.to_string())?;

    // The main lockfile as a start: every other crate stays at its version.
    let lock = dir.join("Cargo.lock");
    if !lock.exists() {
        fs::copy(root.join("Cargo.lock"), &lock)?;
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The version of `krate` that `package` depends on in a lockfile.
fn locked_version(lock: &Path, package: &str, krate: &str) -> Result<String> {
    let lockfile = Lockfile::load(lock).with_context(|| format!("reading {}", lock.display()))?;
    lockfile
        .packages
        .iter()
        .find(|p| p.name.as_str() == package)
        .and_then(|p| p.dependencies.iter().find(|d| d.name.as_str() == krate))
        .map(|d| d.version.to_string())
        .with_context(|| format!("{} locks no {krate} for {package}", lock.display()))
}
