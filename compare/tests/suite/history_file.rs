//! The history file end to end: finished runs appended beside their
//! folders by default, listed, imported again, and read by `compare check`,
//! which says which rule decided each verdict.

use std::path::Path;

use history::History;
use model::defaults::HISTORY_ENV;
use model::results::Results;

use crate::common::{assert_ok, bounded, command, compare, out_dir};

/// A short run of mio at 10 connections into `out`, as a user runs it:
/// with the history of the defaults, and these options beside.
pub fn run_mio(out: &Path, repeat: &str, more: &[&str]) -> String {
    let mut args = vec![
        "run",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "--runtimes",
        "mio",
    ];
    args.extend([
        "--connections",
        "10",
        "--seconds",
        "0.1",
        "--warmup",
        "0.05",
    ]);
    args.extend(["--repeat", repeat, "--no-cost"]);
    args.extend(more);
    let mut cmd = command();
    cmd.env_remove(HISTORY_ENV);
    let output = bounded(cmd, &args);
    assert_ok(&output, &args);
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Builds the site of a history of two runs into `site`, its links checked.
pub fn site_of_two(history: &str, site: &Path) {
    let args = [
        "site",
        "--history",
        history,
        "--out",
        site.to_str().unwrap(),
        "--book",
        "none",
    ];
    let output = compare(&args);
    assert_ok(&output, &args);
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains("2 run(s) in") && said.contains("every link checked"),
        "{said}"
    );
}

/// Builds the site of `history` into `site` again; what it said.
fn site_again(history: &Path, site: &Path) -> String {
    let args = ["site", "--history", history.to_str().unwrap()];
    let args = [
        &args[..],
        &["--out", site.to_str().unwrap(), "--book", "none"],
    ]
    .concat();
    let output = compare(&args);
    assert_ok(&output, &args);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn finished_runs_are_kept_beside_their_folders_and_check_says_which_rule_decided() {
    let dir = out_dir("history-file");
    let (a, b) = (dir.join("a"), dir.join("b"));
    for out in [&a, &b] {
        let said = run_mio(out, "6", &[]);
        assert!(said.contains("history: the run is in"), "{said}");
    }
    let path = dir.join("history.sqlite");
    let history = History::open(&path).unwrap();
    let entries = history.entries().unwrap();
    assert_eq!(entries.len(), 2);
    let kept = Results::load(&a.join("results.json")).unwrap();
    assert_eq!(
        serde_json::to_value(history.load(entries[0].id).unwrap()).unwrap(),
        serde_json::to_value(&kept).unwrap()
    );
    drop(history);

    // Listed; imported again, which replaces and adds nothing.
    let history_arg = ["--history", path.to_str().unwrap()];
    let list = |expect: &str| {
        let args = [&["history", "list"], &history_arg[..]].concat();
        let output = compare(&args);
        assert_ok(&output, &args);
        let listed = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            listed.contains(expect) && listed.contains("--runtimes mio"),
            "{listed}"
        );
    };
    list("2 run(s)");
    let args = [
        &["history", "import", dir.to_str().unwrap()],
        &history_arg[..],
    ]
    .concat();
    let output = compare(&args);
    assert_ok(&output, &args);
    let said = String::from_utf8_lossy(&output.stdout);
    assert_eq!(said.matches("replaced").count(), 2, "{said}");
    list("2 run(s)");

    // One past run is too few to learn from: the default decides, and the
    // table says so.
    let args = ["check", a.to_str().unwrap(), b.to_str().unwrap()];
    let output = compare(&args);
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.code().is_some_and(|c| c < 2), "{table}");
    assert!(
        table.contains("threshold") && table.contains("5% (default)"),
        "{table}"
    );

    let site = dir.join("site");
    site_of_two(path.to_str().unwrap(), &site);
    let slugs = both_runs_and_their_comparison(&site);
    built_again_keeps_what_did_not_change(&path, &site, &dir, &slugs);
    a_run_that_no_longer_decodes_stops_the_site(&path, &site);
    // Kept nowhere with --history none; a folder that holds no results is
    // refused by name.
    run_mio(&dir.join("c"), "1", &["--history", "none"]);
    list("3 run(s)");
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let args = [
        &["history", "import", empty.to_str().unwrap()],
        &history_arg[..],
    ]
    .concat();
    let output = compare(&args);
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("holds no results file"), "{said}");
}

/// The site of two runs shows both, each beside its report, and judges
/// one against the other: the runs' slugs.
fn both_runs_and_their_comparison(site: &Path) -> Vec<String> {
    let read = |page: &str| std::fs::read_to_string(site.join(page)).unwrap();
    let index = read("index.html");
    let slugs: Vec<String> = index
        .split("href=\"runs/")
        .skip(1)
        .filter_map(|rest| rest.split('/').next().map(String::from))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(slugs.len(), 2, "{index}");
    for slug in &slugs {
        let run = read(&format!("runs/{slug}/index.html"));
        assert!(
            run.contains("--runtimes mio") && run.contains("report.html"),
            "{run}"
        );
        assert!(read(&format!("runs/{slug}/report.html")).contains("<svg"));
    }
    let comparison = read(&format!("comparisons/{}--{}.html", slugs[0], slugs[1]));
    assert!(
        comparison.contains("mio, 1 thread, 10 connections") && comparison.contains("5% (default)"),
        "{comparison}"
    );
    let mio = read("implementations/mio.html");
    assert!(mio.contains("<svg") && mio.contains("2 runs"), "{mio}");

    slugs
}

/// Built again: what did not change is kept as it was, and the pages of
/// what the history no longer has go (what else the folder holds stays).
fn built_again_keeps_what_did_not_change(path: &Path, site: &Path, dir: &Path, slugs: &[String]) {
    let read = |page: &str| std::fs::read_to_string(site.join(page)).unwrap();
    let report = site.join(format!("runs/{}/report.html", slugs[0]));
    let written = || std::fs::metadata(&report).unwrap().modified().unwrap();
    let before = written();
    std::fs::create_dir_all(site.join("runs/gone")).unwrap();
    std::fs::write(site.join("comparisons/gone.html"), "").unwrap();
    std::fs::write(site.join("mine.txt"), "").unwrap();
    let said = site_again(path, site);
    assert!(
        said.contains("2 of 2 run(s): 0 report(s) made, 0 comparison(s) judged, 3 kept")
            && said.contains("2 page(s) of runs no longer there removed"),
        "{said}"
    );
    assert_eq!(written(), before);
    assert!(!site.join("runs/gone").exists() && !site.join("comparisons/gone.html").exists());
    assert!(site.join("mine.txt").exists());
    // A night later: its report, and it against the run before it.
    run_mio(&dir.join("later"), "6", &[]);
    let said = site_again(path, site);
    assert!(
        said.contains("3 of 3 run(s): 1 report(s) made, 1 comparison(s) judged, 3 kept"),
        "{said}"
    );
    assert_eq!(written(), before);
    let index = read("index.html");
    assert_eq!(index.matches("href=\"comparisons/").count(), 2, "{index}");
    // Without its manifest (a build cut short leaves none), all again.
    std::fs::remove_file(site.join("site-manifest.json")).unwrap();
    let said = site_again(path, site);
    assert!(
        said.contains("3 of 3 run(s): 3 report(s) made, 2 comparison(s) judged, 0 kept"),
        "{said}"
    );
}

/// A run whose repetitions no longer decode, read ahead of the pages:
/// the build stops on it, by name, and keeps no manifest of itself.
fn a_run_that_no_longer_decodes_stops_the_site(path: &Path, site: &Path) {
    let db = rusqlite::Connection::open(path).unwrap();
    let latest: i64 = db
        .query_row("SELECT max(id) FROM run", [], |row| row.get(0))
        .unwrap();
    db.execute(
        "UPDATE repetition SET record = X'00' WHERE cell IN (SELECT id FROM cell WHERE run = ?1)",
        [latest],
    )
    .unwrap();
    drop(db);
    std::fs::remove_file(site.join("site-manifest.json")).unwrap();
    let args = ["site", "--history", path.to_str().unwrap()];
    let args = [
        &args[..],
        &["--out", site.to_str().unwrap()],
        &["--book", "none"],
    ]
    .concat();
    let output = compare(&args);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success()
            && said.contains(&format!("reading run {latest} ahead"))
            && said.contains("a repetition of cell"),
        "{said}"
    );
    assert!(!site.join("site-manifest.json").exists());
}

#[test]
fn an_import_killed_halfway_leaves_a_history_of_whole_runs() {
    let dir = out_dir("history-killed");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("history.sqlite");
    let reports = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports");
    let mut child = command()
        .args(["history", "import", reports.to_str().unwrap()])
        .args(["--history", path.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Killed (SIGKILL: nothing of its own runs) once the first runs are in,
    // in the middle of another's transaction, or just after one.
    let mut said = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for _ in 0..3 {
        std::io::BufRead::read_line(&mut said, &mut line).unwrap();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let history = History::open(&path).unwrap();
    let entries = history.entries().unwrap();
    assert!(entries.len() >= 3, "{line}");
    for entry in entries {
        let kept = Results::load(Path::new(&entry.source)).unwrap();
        let back = history.load(entry.id).unwrap();
        assert_eq!(back.cells.len(), kept.cells.len(), "{}", entry.source);
        let runs = |r: &Results| r.cells.iter().map(|c| c.runs.len()).sum::<usize>();
        assert_eq!(runs(&back), runs(&kept), "{}", entry.source);
    }
}
