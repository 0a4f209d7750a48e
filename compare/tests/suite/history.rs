//! Runtime history: a range of releases, each built in isolation and run
//! interleaved, with the trend in the report; and `compare bisect` finding
//! a release that was made slower on purpose (the fault hook, aimed at one
//! release's build).

use std::process::Output;

use model::results::Status;

use crate::common::{BISECT_STEP, QUICK, assert_ok, compare_with, folder, out_dir, run_ok};

#[test]
fn a_range_runs_every_release_and_one_that_does_not_build_is_unavailable() {
    let mut args = vec![
        "--runtimes",
        // 0.6 has none of the features the adapter asks of mio.
        "mio@1.2.2..1.2.4,mio@0.6.23..0.6.23",
        "--connections",
        "10",
    ];
    args.extend(QUICK);
    let results = run_ok("history-range", &args);
    let range = &results.config.releases[0];
    assert_eq!(range.spec, "mio@1.2.2..1.2.4");
    assert_eq!(range.versions, ["1.2.2", "1.2.3", "1.2.4"]);
    assert_eq!(
        results.config.implementations,
        ["mio@1.2.2", "mio@1.2.3", "mio@1.2.4", "mio@0.6.23"]
    );
    for cell in &results.cells {
        let name = &cell.implementation;
        if name == "mio@0.6.23" {
            // A release the adapter cannot build against: its column says
            // why, and the sweep went on.
            assert_eq!(cell.status, Status::Unavailable, "{name}");
            assert_eq!(
                cell.unavailable.as_deref(),
                Some("does not build against this release")
            );
            assert!(
                cell.error
                    .as_deref()
                    .unwrap_or_default()
                    .contains("cannot build mio against mio 0.6.23"),
                "{:?}",
                cell.error
            );
        } else {
            assert_eq!(cell.status, Status::Ok, "{name}: {:?}", cell.error);
            assert_eq!(cell.version, name.trim_start_matches("mio@"), "{name}");
        }
    }
    let report = std::fs::read_to_string(folder("history-range").join("report.md")).unwrap();
    assert!(
        report.contains("Releases of mio, 1 thread, 10 connections"),
        "the trend table"
    );
    for version in ["| 1.2.2 |", "| 1.2.3 |", "| 1.2.4 |"] {
        assert!(report.contains(version), "{version}");
    }
    assert!(
        report.contains("mio@1.2.2..1.2.4: 3 release(s) of mio from cargo's index"),
        "the range and what it expanded to"
    );
    assert!(
        folder("history-range")
            .join("releases-mio-1t-10c-16384B.svg")
            .exists(),
        "the chart by release"
    );
}

fn bisect(env: &[(&str, &str)], extra: &[&str]) -> Output {
    let out = out_dir("history-bisect");
    let mut args = vec!["bisect", "mio", "1.2.2", "1.2.4", "--connections", "10"];
    args.extend(BISECT_STEP);
    args.extend(extra);
    args.extend(["--out", out.to_str().unwrap()]);
    let output = compare_with(&args, env);
    assert_ok(&output, &args);
    output
}

#[test]
fn bisect_finds_the_release_that_was_made_slower() {
    let fault = "pingpong-mio-1.2.4/pingpong-mio:slow=5000";
    let explained = ["--explain", "--side", "server", "--blocks", "10"];
    let output = bisect(&[("PINGPONG_FAULT", fault)], &explained);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("1.2.3 against 1.2.2: no change"),
        "{stdout}"
    );
    assert!(
        stdout.contains("first release that differs from 1.2.2: mio 1.2.4"),
        "{stdout}"
    );
    // Confirmed where it ends (a step flagged but not yet confirmed on the
    // way gets more rounds, which a noisy VM may ask for).
    let found = stdout
        .lines()
        .find(|l| l.starts_with("first release that differs"))
        .unwrap_or_default();
    assert!(!found.contains("not confirmed"), "{stdout}");
    assert!(
        stdout.contains("reproduce: compare run --runtimes mio@1.2.3,mio@1.2.4"),
        "{stdout}"
    );
    // Explained, on the server, as asked: the slowdown's work
    // (pingpong::work's rounds of splitmix64, unoptimised in the tests'
    // build).
    let last = stdout.lines().last().unwrap_or_default();
    let work = last
        .split_once("pingpong::work::")
        .and_then(|(_, named)| named.split_once(')'))
        .map(|(named, _)| named);
    assert!(
        last.starts_with("mio 1.2.4: moved most: ")
            && work.is_some_and(|named| named.contains("(server, +")),
        "{stdout}"
    );
    // Without the slowdown there is nothing to find.
    let output = bisect(&[], &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("nothing to bisect"), "{stdout}");
}
