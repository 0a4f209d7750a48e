//! The builds: a copy of the project per version, a target folder per
//! service, what moved in the lock recorded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use cargo_lock::Lockfile;
use semver::Version;
use toml_edit::{DocumentMut, InlineTable, Item, value};

use crate::cargo::{self, Binary, Flags};
use crate::versions::{copy_tree, keep, write_if_changed};
use model::service::{Moved, Service};

/// One build of the service.
#[derive(Debug)]
pub struct Built {
    /// The binary, copied out of the shared target folder.
    pub binary: PathBuf,
    /// The crates whose locked versions differ from the service's own lock.
    pub moved: Vec<Moved>,
}

/// Builds `service` with `krate` at exactly `version`, under `into`
/// (`target/services`), with cargo profile `profile`.
pub fn build(
    service: &Service,
    krate: &str,
    version: &Version,
    into: &Path,
    profile: &str,
) -> Result<Built> {
    let project = service.project();
    let dir = into.join(&service.name).join(format!("{krate}-{version}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    copy_tree(&project, &dir)?;
    let package = package_of(service, &dir)?;
    pin(&package.manifest, &dir, krate, version)?;
    let target = into.join(&service.name).join("target");
    let binary = Binary {
        package: package.name,
        name: service.build.binary.clone(),
    };
    let built = cargo::build(&dir, Some(&target), profile, &[binary], &Flags::default())
        .with_context(|| format!("building {} with {krate} {version}", service.name))?;
    let lock = dir.join("Cargo.lock");
    let moved = moved(&project.join("Cargo.lock"), &lock)?;
    let locked = locked(&lock, krate)?;
    ensure!(
        locked.contains(&version.to_string()),
        "{} with {krate} {version}: cargo locked {krate} at {}",
        service.name,
        locked.join(", ")
    );
    let kept = dir.join(&service.build.binary);
    keep(&built[&service.build.binary], &kept)
        .with_context(|| format!("keeping {}", kept.display()))?;
    Ok(Built {
        binary: kept,
        moved,
    })
}

/// The package that holds the service's binary.
struct Package {
    name: String,
    manifest: PathBuf,
}

fn package_of(service: &Service, dir: &Path) -> Result<Package> {
    let metadata = cargo_metadata::MetadataCommand::new()
        .current_dir(dir)
        .no_deps()
        .exec()
        .with_context(|| {
            format!(
                "reading the cargo project at {}",
                service.project().display()
            )
        })?;
    let binary = &service.build.binary;
    let found = metadata
        .workspace_packages()
        .into_iter()
        .find(|p| match &service.build.package {
            Some(name) => p.name.as_str() == name,
            None => p.targets.iter().any(|t| t.is_bin() && &t.name == binary),
        });
    match found {
        Some(p) if p.targets.iter().any(|t| t.is_bin() && &t.name == binary) => Ok(Package {
            name: p.name.to_string(),
            manifest: p.manifest_path.clone().into_std_path_buf(),
        }),
        Some(p) => bail!("build.binary: package {} has no binary {binary}", p.name),
        None => bail!(
            "build.binary: no package of {} has a binary {binary}",
            service.project().display()
        ),
    }
}

/// Requires `krate` at exactly `version` in `manifest`: its own
/// requirement, or its workspace's where it inherits it, or one added
/// without default features (which adds none to the build).
fn pin(manifest: &Path, root: &Path, krate: &str, version: &Version) -> Result<()> {
    let exact = format!("={version}");
    let mut doc = read(manifest)?;
    let deps = doc["dependencies"].or_insert(toml_edit::table());
    let inherited = deps
        .get(krate)
        .and_then(|d| d.get("workspace"))
        .and_then(Item::as_bool)
        .unwrap_or(false);
    if inherited {
        let root_manifest = root.join("Cargo.toml");
        let mut root_doc = read(&root_manifest)?;
        set_version(&mut root_doc["workspace"]["dependencies"][krate], &exact);
        write_if_changed(&root_manifest, root_doc.to_string().as_bytes())?;
    } else if let Some(dep) = deps.get_mut(krate).filter(|d| !d.is_none()) {
        set_version(dep, &exact);
    } else {
        let mut dep = InlineTable::new();
        dep.insert("version", exact.into());
        dep.insert("default-features", false.into());
        deps[krate] = value(dep);
    }
    write_if_changed(manifest, doc.to_string().as_bytes())
}

fn read(manifest: &Path) -> Result<DocumentMut> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    text.parse()
        .with_context(|| format!("parsing {}", manifest.display()))
}

/// A requirement, `"1.50"` or `{ version = "1.50", ... }`, made `exact`.
fn set_version(dep: &mut Item, exact: &str) {
    match dep.as_table_like_mut() {
        Some(table) => {
            table.insert("version", value(exact));
        }
        None => *dep = value(exact),
    }
}

/// The versions of `krate` a lockfile holds.
fn locked(lock: &Path, krate: &str) -> Result<Vec<String>> {
    let lockfile = Lockfile::load(lock).with_context(|| format!("reading {}", lock.display()))?;
    Ok(lockfile
        .packages
        .iter()
        .filter(|p| p.name.as_str() == krate)
        .map(|p| p.version.to_string())
        .collect())
}

/// What moved from the lockfile `from` to `to`: each crate whose set of
/// locked versions differs, with the versions on each side.
fn moved(from: &Path, to: &Path) -> Result<Vec<Moved>> {
    let versions = |lock: &Path| -> Result<BTreeMap<String, Vec<String>>> {
        let lockfile =
            Lockfile::load(lock).with_context(|| format!("reading {}", lock.display()))?;
        let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in &lockfile.packages {
            found
                .entry(p.name.to_string())
                .or_default()
                .push(p.version.to_string());
        }
        Ok(found)
    };
    let (before, after) = (versions(from)?, versions(to)?);
    let names: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    Ok(names
        .into_iter()
        .filter(|name| before.get(*name) != after.get(*name))
        .map(|name| Moved {
            name: name.clone(),
            from: before.get(name).map(|v| v.join(", ")),
            to: after.get(name).map(|v| v.join(", ")),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crate_the_service_has_only_through_others_is_required_directly() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("Cargo.toml");
        let text = "[package]\nname = \"s\"\n\n[dependencies]\naxum = \"0.8\"\nserde = { version = \"1\", features = [\"derive\"] }\n";
        std::fs::write(&manifest, text).unwrap();
        let v = Version::parse("1.50.0").unwrap();
        pin(&manifest, dir.path(), "tokio", &v).unwrap();
        pin(
            &manifest,
            dir.path(),
            "serde",
            &Version::parse("1.0.200").unwrap(),
        )
        .unwrap();
        let doc = read(&manifest).unwrap();
        let deps = &doc["dependencies"];
        assert_eq!(deps["tokio"]["version"].as_str(), Some("=1.50.0"));
        assert_eq!(deps["tokio"]["default-features"].as_bool(), Some(false));
        assert_eq!(deps["serde"]["version"].as_str(), Some("=1.0.200"));
        assert_eq!(deps["axum"].as_str(), Some("0.8"));
    }
}
