//! Unreleased code as a version: `mio@git:REPO#REV`, `mio@path:DIR`, and
//! `compare bisect --git` over commits. Without a network: each test makes
//! its own git repository from the mio release in cargo's registry cache
//! (the one the workspace locks), with commits of its own on top.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{BISECT_STEP, QUICK, assert_ok, compare, folder, load};

/// The source of the mio release the workspace locks, as cargo unpacked it.
fn mio_release() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let lock = cargo_lock::Lockfile::load(root.join("Cargo.lock")).unwrap();
    let version = lock
        .packages
        .iter()
        .filter(|p| p.name.as_str() == "mio")
        .map(|p| p.version.clone())
        .max()
        .expect("the workspace locks mio");
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(&std::env::var_os("HOME").unwrap()).join(".cargo"));
    fs::read_dir(home.join("registry/src"))
        .expect("cargo's registry cache")
        .map(|e| e.unwrap().path().join(format!("mio-{version}")))
        .find(|p| p.is_dir())
        .expect("mio's source in cargo's registry cache")
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
        .args(args)
        .output()
        .expect("running git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Commits every change in `repo` with `subject`; the new commit's hash.
fn commit(repo: &Path, subject: &str) -> String {
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", subject]);
    git(repo, &["rev-parse", "HEAD"])
}

/// Changes `file` of `repo` with `edit`.
fn edit(repo: &Path, file: &str, edit: impl FnOnce(String) -> String) {
    let path = repo.join(file);
    fs::write(&path, edit(fs::read_to_string(&path).unwrap())).unwrap();
}

/// A repository of mio's release as its first commit, under the test's folder.
fn repository(test: &str) -> PathBuf {
    let repo = folder(test).join("mio");
    let _ = fs::remove_dir_all(&repo);
    fs::create_dir_all(&repo).unwrap();
    let status = Command::new("cp")
        .arg("-r")
        .arg(format!("{}/.", mio_release().display()))
        .arg(&repo)
        .status()
        .unwrap();
    assert!(status.success());
    // What cargo added when it packaged the release.
    for file in ["Cargo.toml.orig", ".cargo_vcs_info.json", ".cargo-ok"] {
        let _ = fs::remove_file(repo.join(file));
    }
    git(&repo, &["init", "-q"]);
    commit(&repo, "base");
    repo
}

/// A slowdown of known size in mio's hot path: every poll spins 2 ms.
fn slow_down(source: String) -> String {
    let poll = "-> io::Result<()> {";
    let at = source.find("pub fn poll(").expect("Poll::poll");
    let body = at + source[at..].find(poll).unwrap() + poll.len();
    format!(
        "{}\n        let spin = std::time::Instant::now();\n        \
         while spin.elapsed() < std::time::Duration::from_millis(2) {{}}{}",
        &source[..body],
        &source[body..]
    )
}

fn bisect(repo: &Path, good: &str, bad: &str, connections: &str, out: &str) -> String {
    let out = folder(out);
    let _ = fs::remove_dir_all(&out);
    let repo = repo.to_str().unwrap();
    let mut args = vec!["bisect", "mio", good, bad, "--git", repo];
    args.extend(["--connections", connections]);
    args.extend(BISECT_STEP);
    args.extend(["--out", out.to_str().unwrap()]);
    let output = compare(&args);
    assert_ok(&output, &args);
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn bisect_over_commits_names_the_slowing_one_and_skips_what_does_not_build() {
    let repo = repository("unreleased-bisect");
    let base = git(&repo, &["rev-parse", "HEAD"]);
    edit(&repo, "README.md", |t| t + "\nDocumentation only.\n");
    commit(&repo, "docs: a line of the README");
    edit(&repo, "src/lib.rs", |t| {
        t + "\ncompile_error!(\"broken on purpose\");\n"
    });
    let broken = commit(&repo, "broken: does not compile");
    edit(&repo, "src/lib.rs", |t| {
        t.replace("\ncompile_error!(\"broken on purpose\");\n", "")
    });
    let fixed = commit(&repo, "fix the build");
    edit(&repo, "src/poll.rs", slow_down);
    let slow = commit(&repo, "poll: spin 2 ms");
    edit(&repo, "README.md", |t| t + "\nMore documentation.\n");
    let last = commit(&repo, "docs: another line");
    // A clone of a forge's repository: the end links the commit there.
    git(
        &repo,
        &[
            "remote",
            "add",
            "origin",
            "https://github.com/tokio-rs/mio.git",
        ],
    );

    // Two loads: a step differs where either cell does, and the end says
    // which cells flip.
    let stdout = bisect(&repo, &base, &last, "1,10", "unreleased-bisect-out");
    assert!(
        stdout.contains("bisecting 6 first-parent commits"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "skipped {} \"broken: does not compile\": does not build",
            &broken[..10]
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{} \"fix the build\" against", &fixed[..10])),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "first commit that differs from {base}: {slow} \"poll: spin 2 ms\""
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("(https://github.com/tokio-rs/mio/commit/{slow})")),
        "{stdout}"
    );
    assert!(!stdout.contains("not confirmed"), "{stdout}");
    // Every figure compare check judges is judged: MiB/s among them, at
    // both loads.
    let found = stdout
        .lines()
        .find(|l| l.starts_with(&format!("at {} \"poll: spin 2 ms\": ", &slow[..10])))
        .unwrap_or_else(|| panic!("{stdout}"));
    for load in ["1 connection", "10 connections"] {
        let mib = format!("REGRESSED at MiB/s, 1 thread, {load}, 16384 B");
        assert!(found.contains(&mib), "{found}");
    }
    assert!(
        stdout.contains(&format!("--candidate mio@{}", &slow[..7])),
        "{stdout}"
    );

    // Documentation alone changes nothing to find.
    let stdout = bisect(&repo, &base, &fixed, "10", "unreleased-bisect-none");
    assert!(stdout.contains("nothing to bisect"), "{stdout}");
}

#[test]
fn a_commit_and_a_dirty_checkout_are_recorded_as_they_resolved_and_built_once() {
    let repo = repository("unreleased-sources");
    let base = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["tag", "v-base"]);
    edit(&repo, "README.md", |t| t + "\nNot committed.\n");
    let run = |test: &str| {
        let out = folder(test);
        let _ = fs::remove_dir_all(&out);
        let runtimes = format!(
            "mio@git:{repo}#v-base,mio@path:{repo}",
            repo = repo.display()
        );
        let mut args = vec!["run", "--runtimes", &runtimes, "--connections", "2"];
        args.extend(QUICK);
        args.extend(["--out", out.to_str().unwrap()]);
        let output = compare(&args);
        assert_ok(&output, &args);
        (load(&out), String::from_utf8(output.stderr).unwrap())
    };
    let (results, stderr) = run("unreleased-sources-1");
    let short = &base[..7];
    let names: Vec<&str> = results
        .cells
        .iter()
        .map(|c| c.implementation.as_str())
        .collect();
    let (tagged, checkout) = (
        format!("mio@v-base({short})"),
        format!("mio@path({short}+dirty)"),
    );
    assert_eq!(names, [tagged.as_str(), checkout.as_str()]);
    let sources = &results.config.sources;
    assert_eq!(sources.len(), 2);
    assert_eq!(
        (sources[0].commit.as_str(), sources[0].dirty),
        (base.as_str(), false)
    );
    assert_eq!(sources[0].rev.as_deref(), Some("v-base"));
    assert_eq!(
        (sources[1].commit.as_str(), sources[1].dirty),
        (base.as_str(), true)
    );
    let diff = sources[1]
        .diff_sha256
        .as_deref()
        .expect("a dirty tree's diff");
    assert_eq!(diff.len(), 64);
    for cell in &results.cells {
        assert_eq!(cell.status, model::results::Status::Ok, "{cell:?}");
        let lock = &results.suite.locks[&cell.implementation];
        let file = folder("unreleased-sources-1").join(format!("locks/{lock}.lock"));
        let text = fs::read_to_string(&file).expect("the lockfile kept");
        assert!(text.contains("name = \"mio\""), "{}", file.display());
    }
    assert!(
        stderr.contains("Compiling mio"),
        "the first build: {stderr}"
    );

    // The same commit and the same checkout again: nothing to build.
    let (again, stderr) = run("unreleased-sources-2");
    let compiled: Vec<&str> = stderr
        .lines()
        .filter(|l| l.trim_start().starts_with("Compiling"))
        .collect();
    assert!(compiled.is_empty(), "built again: {compiled:?}");
    assert_eq!(again.suite.binaries, results.suite.binaries);
}
