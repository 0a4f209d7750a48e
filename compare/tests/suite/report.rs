//! `compare report`: every format from a real results file, the HTML page
//! in a real browser, the committed reference report regenerated
//! byte-for-byte, and clear errors for bad input.

use crate::common::{assert_ok, browse, compare, out_dir};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small/results.json")
}

/// `compare report ARGS` that must succeed; the files it wrote.
fn report_ok(args: &[&str]) -> Vec<PathBuf> {
    let mut all = vec!["report"];
    all.extend_from_slice(args);
    let output = compare(&all);
    assert_ok(&output, &all);
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(PathBuf::from)
        .collect()
}

#[test]
fn every_format_is_written_and_well_formed() {
    let out = out_dir("report-formats");
    let files = report_ok(&[fixture().to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in ["report.md", "results.csv", "summary.json", "report.html"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    let svgs: Vec<_> = files
        .iter()
        .filter(|f| f.extension().unwrap() == "svg")
        .collect();
    // The fixture's two tables by threads (1 and 10 connections) each get a chart.
    assert_eq!(svgs.len(), 2, "{names:?}");
    for svg in svgs {
        let text = std::fs::read_to_string(svg).unwrap();
        assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
        // One bar per ok cell and no bar for the unavailable implementation.
        assert!(text.contains("mio") && text.contains("monoio"), "legend");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The summary is for other programs: read as they would, untyped.
    assert_eq!(summary["cells"].as_array().unwrap().len(), 12);
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.starts_with("runtime,client,protocol,tls,shape,threads"),
        "{header}"
    );
    // 8 ok cells x 2 runs, and one row for each of the 4 unavailable cells.
    assert_eq!(csv.lines().count(), 1 + 16 + 4);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("cargo run --release -p compare -- run --runtimes mio,tokio,monoio"));
    assert!(md.contains("| threads | mio | tokio | monoio |"));
}

#[test]
fn the_html_page_renders_in_a_real_browser_with_nothing_fetched() {
    let out = out_dir("report-html");
    report_ok(&[fixture().to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let page = browse(&out.join("report.html"), &out.join("chromium-profile"));
    let check = page.self_check();
    // 2 throughput, 2 relative, 4 detailed and 4 cost tables; 2 charts, both
    // drawn, nothing fetched.
    assert_eq!(check, "tables=12 charts=2 drawn=2 fetched=0", "{check}");
    assert!(page.console.is_empty(), "{:?}", page.console);
}

#[test]
fn every_committed_report_regenerates_byte_for_byte() {
    // A committed report keeps its results (compressed) and what its pages
    // show: report.md, and a chart the README or the book draws. What it
    // keeps must be what the results render to; the rest is rendered here
    // too, so that every format still comes out of every report.
    let reports = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports");
    let mut checked = 0;
    for entry in std::fs::read_dir(&reports).unwrap() {
        let committed = entry.unwrap().path();
        // Reports of the first runs hold their results and tables only.
        if !committed.join("report.md").is_file() {
            continue;
        }
        let name = committed
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let out = out_dir(&format!("report-reference-{name}"));
        let files = report_ok(&[committed.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        let names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for whole in ["report.md", "report.html", "results.csv", "summary.json"] {
            assert!(names.iter().any(|n| n == whole), "{whole}: {names:?}");
        }
        for file in files {
            let file_name = file.file_name().unwrap().to_string_lossy().into_owned();
            let Ok(kept) = std::fs::read(committed.join(&file_name)) else {
                continue;
            };
            assert!(
                std::fs::read(&file).unwrap() == kept,
                "{name}/{file_name} differs from the committed one"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} committed files checked");
}

#[test]
fn bad_results_files_get_one_clear_line_and_exit_2() {
    let dir = out_dir("report-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let truncated = dir.join("truncated.json");
    let text = std::fs::read_to_string(fixture()).unwrap();
    std::fs::write(&truncated, &text[..text.len() / 2]).unwrap();
    let missing = dir.join("missing.json");
    let fixture = fixture();
    for (args, expected) in [
        (
            vec![truncated.to_str().unwrap()],
            "truncated.json is not valid JSON",
        ),
        (vec![missing.to_str().unwrap()], "missing.json"),
        (
            vec![fixture.to_str().unwrap(), "--reference", "nope"],
            "--reference nope is not in this run",
        ),
    ] {
        let mut all = vec!["report"];
        all.extend(args);
        all.extend(["--out", dir.to_str().unwrap()]);
        let output = compare(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{all:?}: {stderr}");
        assert!(stderr.contains(expected), "{all:?}: {stderr}");
        assert!(stderr.lines().count() <= 2, "{stderr}");
    }
}
