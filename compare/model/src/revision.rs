//! Unreleased code of a runtime crate: a commit, tag or branch of a git
//! repository (`tokio@git:URL#REV`), or a local checkout as it stands
//! (`tokio@path:DIR`). Each resolves, through git, to the commit it is, and
//! is recorded so: the full hash, and for a folder whether its tree differed
//! from that commit and a hash of the difference.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where unreleased code comes from, as a spec names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A git repository (a local folder, `file://`, or a remote) and a
    /// revision in it.
    Git { url: String, rev: String },
    /// A local checkout, uncommitted changes included.
    Path(PathBuf),
}

/// What a `git:` or `path:` version resolved to, as the results record it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Source {
    /// The implementation as tables name it: `tokio@main(3f2a9c1)`,
    /// `tokio@path(3f2a9c1+dirty)`.
    pub name: String,
    /// As the run asked for it: `tokio@git:../tokio#main`.
    pub spec: String,
    /// The repository (`git:`) or the folder (`path:`).
    pub location: String,
    /// The revision asked for (`git:`); absent for a folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// The full commit hash.
    pub commit: String,
    /// A folder whose tracked files differed from its commit.
    #[serde(default)]
    pub dirty: bool,
    /// SHA-256 of `git diff HEAD` of a dirty folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_sha256: Option<String>,
    /// The commit's subject line and date (ISO 8601).
    pub subject: String,
    pub date: String,
}

impl Source {
    /// Resolves `origin` for implementation `base` (`tokio`), as `spec` asked.
    pub fn resolve(base: &str, spec: &str, origin: &Origin, cache: &Path) -> Result<Self> {
        match origin {
            Origin::Git { url, rev } => {
                let repo = repository(url, cache)?;
                let commit = commit_of(&repo, rev)?;
                let short = &commit[..7];
                // A hash names itself; a tag or branch keeps its name beside the commit.
                let label = match commit.starts_with(rev.as_str()) {
                    true => short.to_string(),
                    false => format!("{rev}({short})"),
                };
                let (subject, date) = described(&repo, &commit)?;
                Ok(Self {
                    name: format!("{base}@{label}"),
                    spec: spec.into(),
                    location: url.clone(),
                    rev: Some(rev.clone()),
                    commit,
                    dirty: false,
                    diff_sha256: None,
                    subject,
                    date,
                })
            }
            Origin::Path(dir) => {
                let commit = commit_of(dir, "HEAD")?;
                let diff = git(dir, &["diff", "HEAD", "--binary"])?;
                let dirty = !diff.is_empty();
                let (subject, date) = described(dir, &commit)?;
                Ok(Self {
                    name: format!(
                        "{base}@path({}{})",
                        &commit[..7],
                        if dirty { "+dirty" } else { "" }
                    ),
                    spec: spec.into(),
                    location: dir.to_string_lossy().into_owned(),
                    rev: None,
                    commit,
                    dirty,
                    diff_sha256: dirty.then(|| sha256_hex(diff.as_bytes())),
                    subject,
                    date,
                })
            }
        }
    }

    /// The folder whose code is built: a folder as it stands, or the
    /// commit's files, written once under `trees` and never touched again
    /// (so that cargo, which compares modification times, builds a commit
    /// once). A remote repository is cloned under `cache`.
    pub fn tree(&self, trees: &Path, cache: &Path) -> Result<PathBuf> {
        if self.rev.is_none() {
            return Ok(PathBuf::from(&self.location));
        }
        let dir = trees.join(&self.commit);
        if dir.exists() {
            return Ok(dir);
        }
        // Unpacked beside it and renamed into place: a tree that exists is whole.
        let unpacking = trees.join(format!("{}.{}", self.commit, std::process::id()));
        let _ = fs::remove_dir_all(&unpacking);
        fs::create_dir_all(&unpacking)?;
        let repo = repository(&self.location, cache)?;
        let archive = unpacking.join(".archive.tar");
        git(
            &repo,
            &[
                "archive",
                "--format=tar",
                "-o",
                &archive.to_string_lossy(),
                &self.commit,
            ],
        )?;
        let status = Command::new("tar")
            .arg("-xf")
            .arg(&archive)
            .arg("-C")
            .arg(&unpacking)
            .status()
            .context("running tar")?;
        ensure!(
            status.success(),
            "tar could not unpack {}",
            archive.display()
        );
        fs::remove_file(&archive)?;
        if fs::rename(&unpacking, &dir).is_err() {
            // Another run unpacked the same commit first.
            fs::remove_dir_all(&unpacking)?;
        }
        Ok(dir)
    }

    /// A web page of the commit, where the repository is on a forge whose
    /// address scheme is known: a folder's by its `origin` remote.
    pub fn link(&self) -> Option<String> {
        let folder = Path::new(self.location.trim_start_matches("file://"));
        let remote = match folder.is_dir() {
            true => git(folder, &["remote", "get-url", "origin"]).ok()?,
            false => self.location.clone(),
        };
        let url = remote.trim().trim_end_matches(".git");
        let path = url
            .strip_prefix("https://github.com/")
            .or_else(|| url.strip_prefix("git@github.com:"))?;
        Some(format!("https://github.com/{path}/commit/{}", self.commit))
    }
}

/// The first-parent commits from `from` to `to` in `url`, both included,
/// oldest first; every `step`th of them, `to` always among them.
pub fn commits(url: &str, from: &str, to: &str, step: usize, cache: &Path) -> Result<Vec<String>> {
    let repo = repository(url, cache)?;
    let (first, last) = (commit_of(&repo, from)?, commit_of(&repo, to)?);
    let listed = git(
        &repo,
        &[
            "rev-list",
            "--first-parent",
            "--reverse",
            &format!("{first}..{last}"),
        ],
    )?;
    let mut all = vec![first.clone()];
    all.extend(listed.lines().map(String::from));
    ensure!(
        all.len() > 1,
        "{to} does not follow {from} in {url}: no commits from one to the other"
    );
    let mut picked: Vec<String> = all.iter().step_by(step.max(1)).cloned().collect();
    if picked.last() != Some(&last) {
        picked.push(last);
    }
    Ok(picked)
}

/// The folder of crate `krate` in a checkout: the folder itself, a folder
/// named after it, or any folder below whose manifest names it.
pub fn crate_folder(tree: &Path, krate: &str) -> Result<PathBuf> {
    let names = |dir: &Path| -> bool {
        let Ok(text) = fs::read_to_string(dir.join("Cargo.toml")) else {
            return false;
        };
        text.parse::<toml_edit::DocumentMut>()
            .ok()
            .and_then(|m| Some(m.get("package")?.get("name")?.as_str()? == krate))
            .unwrap_or(false)
    };
    if names(tree) {
        return Ok(tree.to_path_buf());
    }
    if names(&tree.join(krate)) {
        return Ok(tree.join(krate));
    }
    for entry in fs::read_dir(tree).with_context(|| format!("reading {}", tree.display()))? {
        let path = entry?.path();
        if path.is_dir() && names(&path) {
            return Ok(path);
        }
    }
    bail!("{} holds no crate named {krate}", tree.display())
}

/// A git directory for `url`: a local repository as it is, or a bare
/// clone of a remote one under `cache`, fetched again on each use.
fn repository(url: &str, cache: &Path) -> Result<PathBuf> {
    let local = url.strip_prefix("file://").unwrap_or(url);
    if Path::new(local).exists() {
        return Ok(PathBuf::from(local));
    }
    let clone = cache.join("git").join(&sha256_hex(url.as_bytes())[..16]);
    if clone.exists() {
        git(&clone, &["fetch", "--quiet", "origin", "+refs/*:refs/*"])
            .with_context(|| format!("fetching {url}"))?;
    } else {
        fs::create_dir_all(clone.parent().expect("under the cache"))?;
        let status = Command::new("git")
            .args(["clone", "--quiet", "--mirror", url])
            .arg(&clone)
            .status()
            .context("running git")?;
        ensure!(status.success(), "git could not clone {url}");
    }
    Ok(clone)
}

/// The full hash of `rev` in the repository at `repo`.
fn commit_of(repo: &Path, rev: &str) -> Result<String> {
    let out = git(
        repo,
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )
    .with_context(|| format!("{rev:?} is not a commit in {}", repo.display()))?;
    Ok(out.trim().to_string())
}

fn described(repo: &Path, commit: &str) -> Result<(String, String)> {
    let out = git(repo, &["show", "-s", "--format=%s%n%cI", commit])?;
    let mut lines = out.lines();
    let subject = lines.next().unwrap_or_default().to_string();
    let date = lines.next().unwrap_or_default().to_string();
    Ok((subject, date))
}

/// `git -C DIR ARGS`, its output; git's own message when it fails.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .context("running git")?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).context("git's output is not UTF-8")
}

/// SHA-256 of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
