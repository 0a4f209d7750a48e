//! More workload dimensions: several block sizes and windows (pipelining)
//! in one run, each its own section of tables and charts; server CPU work
//! per block.

use crate::common::{QUICK, assert_cell_consistent, compare, load, out_dir, run_ok};

#[test]
fn blocks_and_windows_each_get_their_cells_tables_and_charts() {
    let out = out_dir("workloads");
    let mut args = vec!["run", "--runtimes", "mio,tokio", "--connections", "10"];
    args.extend(["--block", "1024,16384", "--window", "1,4", "--quiet"]);
    args.extend(QUICK);
    args.extend(["--out", out.to_str().unwrap()]);
    let output = compare(&args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = load(&out);
    assert_eq!(
        results.cells.len(),
        8,
        "2 blocks x 2 windows x 2 implementations"
    );
    let mut seen = Vec::new();
    for cell in &results.cells {
        assert_cell_consistent(cell, 0.2);
        let (block, window) = (cell.block, cell.window);
        seen.push((block, window, cell.implementation.clone()));
        // Little's law: connections x window blocks are always in flight.
        let run = &cell.runs[0];
        let expected_us = 10.0 * window as f64 / run.messages_per_s * 1e6;
        let mean_us = run.rtt.as_ref().unwrap().mean_us;
        assert!(
            (mean_us / expected_us - 1.0).abs() < 0.3,
            "block {block}, window {window}: mean RTT {mean_us} us, {expected_us} expected"
        );
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 8, "each (block, window, implementation) once");
    for section in [
        "MiB/s, 1 thread, block 1024 bytes:",
        "MiB/s, 1 thread, block 1024 bytes, window 4:",
        "MiB/s, 1 thread, block 16384 bytes:",
        "MiB/s, 1 thread, block 16384 bytes, window 4:",
    ] {
        assert!(stdout.contains(section), "{section} in {stdout}");
    }
    for chart in [
        "mib-by-connections-1-thread-1024B-w1.svg",
        "mib-by-connections-1-thread-16384B-w4.svg",
        "rtt-p99-by-connections-1-thread-1024B-w4.svg",
    ] {
        assert!(out.join(chart).is_file(), "{chart}");
    }
}

#[test]
fn server_work_per_block_is_done_in_user_space() {
    // 20,000 rounds of splitmix64 per block outweigh the echo's system
    // calls: the server's CPU time turns from mostly system to mostly user.
    let results = run_ok(
        "work",
        &[
            "--runtimes",
            "mio,tokio",
            "--connections",
            "10",
            "--work",
            "20000",
            "--seconds",
            "0.3",
            "--warmup",
            "0.05",
            "--repeat",
            "1",
            "--no-cost",
        ],
    );
    assert_eq!(results.config.work, 20000);
    for cell in &results.cells {
        assert_cell_consistent(cell, 0.3);
        assert_eq!(cell.work, 20000);
        let server = cell.runs[0].server_usage.unwrap();
        let (user, system) = (server.user_percent, server.system_percent);
        assert!(
            user > system,
            "{}: user {user}%, system {system}%",
            cell.implementation
        );
    }
}
