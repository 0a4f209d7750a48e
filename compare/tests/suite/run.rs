//! `compare run`: the results file, the repetitions, the placement, the tables.

use std::collections::BTreeSet;

use crate::common::{self, QUICK, assert_cell_consistent, assert_ok, compare, load, run_ok};
use crate::implementations;

const SOME: [&str; 3] = ["tokio", "tokio-local", "mio"];

#[test]
fn repetitions_are_interleaved_and_every_figure_consistent() {
    let results = run_ok(
        "matrix",
        &[
            "--runtimes",
            &SOME.join(","),
            "--connections",
            "1,10",
            "--threads",
            "1,2",
            "--seconds",
            "0.2",
            "--warmup",
            "0.05",
            "--repeat",
            "2",
        ],
    );
    assert_eq!(results.schema, 1);
    assert_eq!(results.config.repeat, 2);
    let cells = &results.cells;
    assert_eq!(cells.len(), SOME.len() * 4);
    let mut seen = BTreeSet::new();
    for cell in cells {
        assert_cell_consistent(cell, 0.2);
        assert_eq!(cell.implementation, cell.client);
        assert_eq!(cell.runs.len(), 2);
        assert!(cell.version.starts_with('1'), "{}", cell.version);
        let placement = &cell.placement;
        let server: BTreeSet<usize> = placement.server_cpus.iter().copied().collect();
        let client: BTreeSet<usize> = placement.client_cpus.iter().copied().collect();
        assert!(!server.is_empty() && !client.is_empty());
        if !placement.oversubscribed {
            assert!(server.is_disjoint(&client), "{placement:?}");
        }
        seen.insert((cell.implementation.clone(), cell.threads, cell.connections));
    }
    assert_eq!(seen.len(), cells.len(), "each cell once");

    // Repetitions are interleaved: at one load, runs go A B C, A B C.
    let orders: Vec<Vec<usize>> = cells[..3].iter().map(common::orders).collect();
    assert_eq!(orders, vec![vec![1, 4], vec![2, 5], vec![3, 6]]);
}

#[test]
fn every_implementation_at_ten_thousand_connections_all_verified() {
    let results = run_ok(
        "c10k",
        &[
            "--connections",
            "10000",
            "--threads",
            "1",
            "--seconds",
            "0.2",
            // No warm-up: the window opens once every connection has had
            // its first block back, however long 10,000 of them take.
            "--warmup",
            "0",
            "--repeat",
            "1",
            // What is tested is that every byte comes back, not its cost.
            "--no-cost",
        ],
    );
    let names: Vec<&str> = results
        .cells
        .iter()
        .map(|c| c.implementation.as_str())
        .collect();
    assert_eq!(names, implementations());
    assert_eq!(results.config.cost, Some(false));
    for cell in &results.cells {
        assert_cell_consistent(cell, 0.2);
        assert!(cell.cost_runs.is_empty(), "{}", cell.implementation);
        let why = cell.cost_absent.as_deref().unwrap_or_default();
        assert!(why.contains("--no-cost"), "{}: {why}", cell.implementation);
    }
}

#[test]
fn prints_the_muduo_table() {
    let out = common::out_dir("table");
    let args = [
        "run",
        "--runtimes",
        "mio,tokio",
        "--connections",
        "1,10",
        "--seconds",
        "0.2",
        "--warmup",
        "0",
        "--repeat",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    let output = compare(&args);
    assert_ok(&output, &args);
    // The run renders its report into its folder.
    for file in ["report.md", "report.html", "results.csv", "summary.json"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("MiB/s, 1 thread, block 16384 bytes"),
        "{stdout}"
    );
    let header = stdout
        .lines()
        .find(|l| l.contains("connections") && l.contains("mio"))
        .expect("a header row");
    assert!(
        header.find("mio") < header.find("tokio"),
        "columns in the order asked: {header}"
    );
    for rows in ["1 ", "10 "] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start_matches(['│', ' ']).starts_with(rows)),
            "row {rows}: {stdout}"
        );
    }
    // The answer comes last: the tables, their marks, and where the
    // report with every other figure is; the detail is in the report only.
    assert!(!stdout.contains("p99 us"), "{stdout}");
    let last = stdout.trim_end().lines().last().unwrap();
    assert!(
        last.contains("report (every figure, load by load)"),
        "{last}"
    );
    assert!(last.contains("report.html"), "{last}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("| implementation | MiB/s | msg/s | p50 us"),
        "{report}"
    );
}

/// Short runs of one implementation, for tests of the run's options.
fn short() -> Vec<&'static str> {
    let mut args = vec!["--runtimes", "mio"];
    args.extend(QUICK);
    args
}

#[test]
fn the_pinning_applied_is_the_pinning_asked_and_recorded() {
    let cpus = std::thread::available_parallelism().unwrap().get();
    let last = cpus - 1;
    let fixed = format!("{last}/0");
    for (pin, server, client) in [
        (fixed.as_str(), vec![last], vec![0]),
        ("none", (0..cpus).collect(), (0..cpus).collect()),
    ] {
        let mut args = short();
        args.extend(["--connections", "10", "--pin", pin]);
        let results = run_ok(&format!("pin-{}", pin.replace('/', "-")), &args);
        assert_eq!(results.config.pin.as_deref(), Some(pin));
        let cell = &results.cells[0];
        // The processes' own affinity, checked against the placement here.
        assert_cell_consistent(cell, 0.2);
        assert_eq!(cell.placement.server_cpus, server, "{pin}");
        assert_eq!(cell.placement.client_cpus, client, "{pin}");
    }
}

#[test]
fn no_latency_records_no_round_trip_times() {
    let mut args = short();
    args.extend(["--connections", "10", "--no-latency"]);
    let results = run_ok("no-latency", &args);
    assert_eq!(results.config.latency, Some(false));
    let run = &results.cells[0].runs[0];
    assert!(run.bytes > 0);
    assert!(run.rtt.is_none(), "{run:?}");
}

#[test]
fn mean_round_trip_time_agrees_with_the_message_rate() {
    let mut args = short();
    args.extend(["--connections", "1,10"]);
    let results = run_ok("little", &args);
    for cell in &results.cells {
        let connections = cell.connections as f64;
        let run = &cell.runs[0];
        // Little's law: each connection has one block in flight at a time.
        let expected_us = connections / run.messages_per_s * 1e6;
        let mean_us = run.rtt.as_ref().unwrap().mean_us;
        assert!(
            (mean_us / expected_us - 1.0).abs() < 0.25,
            "{connections} connections: mean RTT {mean_us} us, {expected_us} us expected"
        );
    }
}

#[test]
fn a_killed_run_resumes_and_holds_every_cell_once() {
    let out = common::out_dir("resume");
    let path = out.join("results.json");
    {
        let mut child = common::start_resumable_run(&out, std::process::Stdio::null());
        // Killed (no chance to clean up) once two of the eight runs are saved.
        common::wait_until_saved(&mut child, &path, 2);
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let before = load(&out).runs();
    assert!(
        (2..8).contains(&before),
        "{before} runs saved before the kill"
    );

    let args = ["run", "--resume", out.to_str().unwrap(), "--quiet"];
    assert_ok(&compare(&args), &args);
    let results = load(&out);
    assert_eq!(
        results.cells.len(),
        4,
        "2 implementations x 2 loads, each once"
    );
    let mut orders = Vec::new();
    for cell in &results.cells {
        assert_cell_consistent(cell, 0.2);
        assert_eq!(cell.runs.len(), 2, "{cell:?}");
        orders.extend(common::orders(cell));
        // Where the kernel counts, each cell's cost run comes in the sequence too.
        orders.extend(cell.cost_runs.iter().map(|run| run.order));
    }
    orders.sort_unstable();
    let cost_runs: usize = results.cells.iter().map(|c| c.cost_runs.len()).sum();
    assert!([0, 4].contains(&cost_runs), "{cost_runs} cost runs");
    assert_eq!(
        orders,
        (1..=8 + cost_runs).collect::<Vec<_>>(),
        "every run once, in one sequence"
    );
    assert_eq!(results.config.resumed.len(), 1);
    assert!(results.config.ended.is_some());
}

#[test]
#[ignore = "needs root, for the kernel's counters: scripts/test.sh runs it as root"]
fn the_kernel_counts_what_the_protocol_does() {
    // A cost run of its own: QUICK runs have none.
    let mut args = vec!["--runtimes", "mio", "--seconds", "0.2", "--warmup", "0.05"];
    args.extend(["--repeat", "1"]);
    args.extend(["--connections", "1"]);
    let results = run_ok("cost", &args);
    let cell = &results.cells[0];
    let run = cell
        .cost_runs
        .first()
        .unwrap_or_else(|| panic!("not counted: {:?}", cell.cost_absent));
    let (Some(server), Some(client)) = (run.server_cost, run.client_cost) else {
        panic!("a side not counted: {:?}", cell.cost_absent);
    };
    // The mio baseline, one connection: a block comes in with one read or
    // more and goes out with one write or more (16 KiB may take several),
    // between waits; nothing else on the way.
    let blocks = run.bytes as f64 / 16384.0;
    for (side, cost) in [("server", server), ("client", client)] {
        let per = |n: u64| n as f64 / blocks;
        // A block may straddle the window's edges: a little under one each.
        let counts = format!("{side}: {cost:?} for {blocks:.0} blocks");
        assert!((0.9..4.0).contains(&per(cost.reads)), "{counts}");
        assert!((0.9..3.0).contains(&per(cost.writes)), "{counts}");
        assert!(
            per(cost.waits) <= 2.0 && per(cost.futex) < 0.1,
            "{side}: {cost:?}"
        );
        assert!(per(cost.other_syscalls()) < 0.5, "{side}: {cost:?}");
    }
}

#[test]
fn cells_repeat_until_their_median_is_precise_enough() {
    let out = common::out_dir("precision");
    let args = [
        "run",
        "--out",
        out.to_str().unwrap(),
        "--runtimes",
        "mio,tokio",
        "--connections",
        "10",
        "--seconds",
        "0.1",
        "--warmup",
        "0",
        "--precision",
        "40",
        "--max-repeat",
        "7",
    ];
    let output = common::compare(&args);
    common::assert_ok(&output, &args);
    let results = common::load(&out);
    // The run ends by saying the precision it reached.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let reached = results.reached().expect("every cell has six runs");
    assert_eq!(reached.with_interval, 2);
    assert!(stdout.contains(&reached.to_string()), "{stdout}");
    assert!(stdout.contains("precision reached"), "{stdout}");
    assert_eq!(results.config.precision_percent, Some(40.0));
    assert_eq!(
        (results.config.repeat, results.config.max_repeat),
        (6, Some(7))
    );
    for cell in &results.cells {
        assert_cell_consistent(cell, 0.1);
        // Six runs make a 95% interval; a seventh only where still short.
        assert!(
            (6..=7).contains(&cell.runs.len()),
            "{} runs",
            cell.runs.len()
        );
        // A seventh run is made only where six fell short; whether seven
        // then reached it, the cell says.
        if cell.runs.len() == 6 {
            let reached = cell.precision().expect("a 95% interval");
            assert!(reached <= 40.0, "+-{reached}% after six runs");
        }
    }
}
