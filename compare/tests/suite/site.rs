//! The site of the committed reports, built by the committed command
//! (`scripts/site.sh`, whose build checks every link): the history it
//! imports gives back every report's results file as it was, and the
//! index, an implementation's page, a comparison, a run and the chooser
//! open in a real browser with no error, nothing fetched, every chart drawn.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use history::History;
use model::results::Results;

use crate::common::{Browsed, browse, out_dir};

/// How many results files lie under `dir`, however deep.
fn results_files(dir: &Path) -> usize {
    let own = model::results::file::named(dir);
    if model::results::file::stored(&own) {
        return 1;
    }
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| results_files(&p))
        .sum()
}

/// The counts a page's self-check wrote ("tables=3 charts=2 ...").
fn counts(page: &Browsed) -> BTreeMap<String, usize> {
    page.self_check()
        .split_whitespace()
        .filter_map(|pair| {
            let (name, n) = pair.split_once('=')?;
            Some((name.to_string(), n.parse().ok()?))
        })
        .collect()
}

/// The first link of `page` into `folder` (from the site's top).
fn first_link(page: &Browsed, folder: &str) -> String {
    let start = format!("href=\"{folder}");
    let rest = page
        .dom
        .split(&start)
        .nth(1)
        .unwrap_or_else(|| panic!("no link into {folder}"));
    format!("{folder}{}", rest.split(['"', '#']).next().unwrap())
}

/// Opens a page of the site and asserts it loaded without fault.
fn open_clean(site: &Path, page: &str, profile: &Path) -> (Browsed, BTreeMap<String, usize>) {
    let browsed = browse(&site.join(page), profile);
    let found = counts(&browsed);
    assert_eq!(
        found.get("errors"),
        Some(&0),
        "{page}: {}",
        browsed.self_check()
    );
    assert_eq!(
        found.get("fetched"),
        Some(&0),
        "{page}: {}",
        browsed.self_check()
    );
    assert_eq!(
        found.get("drawn"),
        found.get("charts"),
        "{page}: {}",
        browsed.self_check()
    );
    assert!(browsed.console.is_empty(), "{page}: {:?}", browsed.console);
    (browsed, found)
}

#[test]
fn the_committed_reports_come_back_out_of_the_history_and_make_a_site_a_browser_reads() {
    let workspace: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = out_dir("site-committed");
    let site = dir.join("site");
    let output = Command::new(workspace.join("scripts/site.sh"))
        .arg(&site)
        .env("COMPARE", env!("CARGO_BIN_EXE_compare"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(said.contains("every link checked"), "{said}");

    every_committed_run_comes_back_out(&dir.join("site.history.sqlite"), &workspace);
    let profile = dir.join("chromium-profile");
    let (index, found) = open_clean(&site, "index.html", &profile);
    assert!(found["tables"] > 0, "{}", index.self_check());
    assert!(index.dom.contains("href=\"book/index.html\""));
    assert!(site.join("book/index.html").is_file());

    // mio ran on every machine: its page has trend charts, all drawn.
    assert!(index.dom.contains("href=\"implementations/mio.html\""));
    let (_, found) = open_clean(&site, "implementations/mio.html", &profile);
    assert!(found["charts"] > 0);

    let comparison = first_link(&index, "comparisons/");
    let (page, found) = open_clean(&site, &comparison, &profile);
    assert!(
        found["tables"] == 1 && page.dom.contains("verdict"),
        "{comparison}"
    );

    // Two releases inside a run whose flagged cell `check --explain`
    // explained: the page names the functions and shows the flame graphs.
    let explained = "comparisons/2026-12-04T20-22-52--tokio-1.51.0--tokio-1.52.0.html";
    let (page, _) = open_clean(&site, explained, &profile);
    assert!(
        page.dom
            .contains("Why 2 threads, 10 connections, 16384 B, blocking shape moved")
            && page
                .dom
                .contains("tokio::runtime::blocking::sharded_queue::ShardedQueue::pop"),
        "{explained}"
    );
    assert_eq!(
        page.dom.matches("<div class=\"flame\"><svg").count(),
        2,
        "{explained}"
    );

    let run = first_link(&index, "runs/");
    let (page, _) = open_clean(&site, &run, &profile);
    assert!(page.dom.contains("href=\"report.html\""), "{run}");
    // The run's report, as `compare report` renders it, with the site's
    // links at its top.
    let report = browse(
        &site.join(run.replace("index.html", "report.html")),
        &profile,
    );
    let found = counts(&report);
    assert_eq!(found["drawn"], found["charts"], "{}", report.self_check());
    assert_eq!(found["fetched"], 0);
    assert!(report.console.is_empty(), "{:?}", report.console);
    assert!(report.dom.contains("href=\"../../book/index.html\""));
    open_clean(&site, "compare.html", &profile);

    // The chooser's script, given two runs in its address: to their
    // comparison where there is one, else it says why there is none.
    let pair = comparison
        .trim_start_matches("comparisons/")
        .trim_end_matches(".html");
    let (b, c) = pair.split_once("--").unwrap();
    let (chosen, _) = open_clean(&site, &format!("compare.html?b={b}&c={c}"), &profile);
    assert!(
        chosen.dom.contains("verdict") && !chosen.dom.contains("<form"),
        "{pair}"
    );
    let (refused, _) = open_clean(&site, &format!("compare.html?b={b}&c={b}"), &profile);
    assert!(
        refused.dom.contains("<output>choose two runs</output>"),
        "{pair}"
    );
}

/// Every committed run went in, and comes back out as its file was.
fn every_committed_run_comes_back_out(history: &Path, workspace: &Path) {
    let history = History::open(history).unwrap();
    let entries = history.entries().unwrap();
    let committed = results_files(&workspace.join("reports"));
    assert!(
        committed >= 38 && entries.len() == committed,
        "{} of {committed}",
        entries.len()
    );
    let json = |r: &Results| serde_json::to_value(r).unwrap();
    for entry in entries {
        let kept = Results::load(&workspace.join(&entry.source)).unwrap();
        let back = history.load(entry.id).unwrap();
        assert!(json(&back) == json(&kept), "{} differs", entry.source);
    }
}

#[test]
fn a_site_without_its_history_or_its_book_says_which_and_builds_nothing() {
    let dir = out_dir("site-refused");
    std::fs::create_dir_all(&dir).unwrap();
    let (history, book, out) = (dir.join("none.sqlite"), dir.join("book"), dir.join("site"));
    for (args, expected) in [
        (
            vec!["--history", history.to_str().unwrap(), "--book", "none"],
            "no history at",
        ),
        (
            vec![
                "--history",
                history.to_str().unwrap(),
                "--book",
                book.to_str().unwrap(),
            ],
            "holds no rendered book: run `mdbook build docs`",
        ),
    ] {
        let mut all = vec!["site", "--out", out.to_str().unwrap()];
        all.extend(args);
        let output = crate::common::compare(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{all:?}: {stderr}");
        assert!(stderr.contains(expected), "{all:?}: {stderr}");
        assert!(!out.exists() && !history.exists(), "{all:?}");
    }
}
