//! Configurations: a runtime with its builder's knobs set runs beside the
//! runtime as it comes, named by its knobs everywhere; a knob the runtime
//! lacks is refused before anything runs; and the binary is really told.

use std::fs;

use crate::common::{QUICK, assert_cell_consistent, bin_dir, compare, out_dir, run_ok};

#[test]
fn a_configuration_runs_beside_its_runtime_and_is_named_by_its_knobs() {
    let configured = "tokio{event_interval=1,max_io_events_per_tick=8}";
    // Knobs given out of order are named in the order tokio declares them.
    let mut args = vec![
        "--runtimes",
        "tokio,tokio{max_io_events_per_tick=8,event_interval=1},tokio-local{max_io_events_per_busy_tick=4}",
    ];
    args.extend(["--connections", "4", "--threads", "1"]);
    args.extend(QUICK);
    let out = out_dir("knobs-run");
    let results = run_ok("knobs-run", &args);
    assert_eq!(
        results.config.implementations,
        [
            "tokio",
            configured,
            "tokio-local{max_io_events_per_busy_tick=4}"
        ]
    );
    assert_eq!(results.cells.len(), 3);
    for cell in &results.cells {
        assert_cell_consistent(cell, 0.2);
        assert_eq!(cell.client, cell.implementation, "each its own client");
    }
    let knobs = |name: &str| {
        let cell = results
            .cells
            .iter()
            .find(|c| c.implementation == name)
            .unwrap();
        cell.knobs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
    };
    assert!(knobs("tokio").is_empty());
    assert_eq!(
        knobs(configured),
        ["event_interval=1", "max_io_events_per_tick=8"]
    );
    let csv = fs::read_to_string(out.join("results.csv")).unwrap();
    assert!(
        csv.contains("\"event_interval=1,max_io_events_per_tick=8\""),
        "{csv}"
    );
    let markdown = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains(configured), "{markdown}");
    let chart = fs::read_to_string(out.join("mib-by-connections-1-thread.svg")).unwrap();
    assert!(
        chart.contains("event_interval=1"),
        "the chart's legend names it"
    );
}

#[test]
fn a_knob_the_runtime_lacks_is_refused_with_the_ones_it_has() {
    for (runtimes, expected) in [
        (
            "tokio{event_intervall=1}",
            "unknown knob \"event_intervall\"; this runtime has: event_interval (1..=4294967295), \
             global_queue_interval",
        ),
        (
            "tokio-local{disable_lifo_slot=true}",
            "unknown knob \"disable_lifo_slot\"",
        ),
        (
            "tokio{event_interval=0}",
            "event_interval=0: the value must be 1..=4294967295",
        ),
        ("smol{spin=1}", "this runtime has no knobs"),
    ] {
        let output = compare(&["run", "--runtimes", runtimes]);
        assert_eq!(output.status.code(), Some(2), "{runtimes}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{runtimes}: {stderr}");
    }
}

/// The binary gets the knobs: tokio's unstable one, given to binaries built
/// without `--cfg tokio_unstable`, fails its cell with the binary's reason.
#[test]
fn the_binary_is_told_its_knobs() {
    // The binaries, built (as a run builds them) before they are taken from their folder.
    let mut build = vec!["--runtimes", "tokio", "--connections", "1"];
    build.extend(QUICK);
    run_ok("knobs-told-build", &build);
    let bins = bin_dir();
    let mut args = vec!["--runtimes", "tokio{disable_lifo_slot=true}"];
    args.extend(["--bin-dir", bins.to_str().unwrap()]);
    args.extend(["--connections", "2", "--threads", "1"]);
    args.extend(QUICK);
    let out = out_dir("knobs-told");
    let mut all = vec!["run", "--out", out.to_str().unwrap()];
    all.extend(&args);
    let output = compare(&all);
    let results = crate::common::load(&out);
    let cell = &results.cells[0];
    let error = cell.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("built without --cfg tokio_unstable"),
        "{error}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `compare list`: every implementation with its crate's upkeep, and every
/// knob a configuration may turn, with its values.
#[test]
fn list_shows_upkeep_and_knobs() {
    let output = compare(&["list"]);
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("upkeep (crates.io, as cargo last fetched it)"),
        "{text}"
    );
    for name in crate::implementations() {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    for knob in [
        "max_io_events_per_busy_tick",
        "disable_lifo_slot",
        "spin_before_park_us",
    ] {
        assert!(text.contains(knob), "{knob} missing:\n{text}");
    }
    assert!(text.contains("--cfg tokio_unstable"), "{text}");
}
