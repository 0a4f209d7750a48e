//! The client-bound rule, validated: a client slowed on purpose (the
//! `client-slow` fault) against a fast server is marked client-bound, in
//! its results and in its report; a fast client against a server slowed
//! the same way (the `slow` fault) is not.

use model::results::{Results, Usage};

use crate::common::{QUICK, assert_cell_consistent, assert_ok, compare_with, load, out_dir};

/// Units of work per block (rounds of splitmix64): a few tenths of a
/// millisecond, many times what a 16 KiB round trip costs either side.
const UNITS: u64 = 200_000;

/// mio at one thread and 10 connections with `fault` on its binary: the
/// results and the report.
fn mio_with(test: &str, fault: &str) -> (Results, String) {
    let out = out_dir(test);
    let mut args = vec!["run", "--runtimes", "mio", "--connections", "10"];
    args.extend(["--threads", "1", "--out", out.to_str().unwrap()]);
    args.extend(QUICK);
    let spec = format!("pingpong-mio:{fault}={UNITS}");
    assert_ok(&compare_with(&args, &[("PINGPONG_FAULT", &spec)]), &args);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    (load(&out), report)
}

/// The CPU a side ran and the CPU it wanted, in percent of a core.
fn cpu(usage: Option<Usage>) -> String {
    let usage = usage.expect("a run's CPU usage");
    format!(
        "ran {:.0}%, wanted {:.0}%",
        usage.cpu_percent,
        usage.wanted_percent()
    )
}

#[test]
fn a_slowed_client_is_client_bound_and_a_slowed_server_is_not() {
    let (results, report) = mio_with("client-bound", "client-slow");
    let cell = &results.cells[0];
    assert_cell_consistent(cell, 0.2);
    let run = &cell.runs[0];
    let (server, client) = (cpu(run.server_usage), cpu(run.client_usage));
    assert!(
        run.client_bound && cell.client_bound,
        "a slowed client: client {client}, server {server}"
    );
    assert!(report.contains("^ client-bound"), "{report}");
    let figure = format!("{:.0}^", cell.mib_per_s.unwrap().median);
    assert!(report.contains(&figure), "{figure} not in {report}");

    let (results, report) = mio_with("server-bound", "slow");
    let cell = &results.cells[0];
    assert_cell_consistent(cell, 0.2);
    let run = &cell.runs[0];
    let (server, client) = (cpu(run.server_usage), cpu(run.client_usage));
    assert!(
        !run.client_bound && !cell.client_bound,
        "a slowed server: client {client}, server {server}"
    );
    assert!(!report.contains("client-bound"), "{report}");
}
