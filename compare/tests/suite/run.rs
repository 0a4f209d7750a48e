//! `compare run`: the results file, the repetitions, the placement, the tables.

use std::collections::BTreeSet;

use crate::IMPLEMENTATIONS;
use crate::common::{self, assert_cell_consistent, cells, compare, run_ok};

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
    assert_eq!(results["schema"], 1);
    assert_eq!(results["config"]["repeat"], 2);
    let cells = cells(&results);
    assert_eq!(cells.len(), SOME.len() * 4);
    let mut seen = BTreeSet::new();
    for cell in cells {
        assert_cell_consistent(cell, 0.2);
        assert_eq!(cell["runtime"], cell["client"]);
        assert_eq!(cell["runs"].as_array().unwrap().len(), 2);
        assert!(
            cell["version"].as_str().unwrap().starts_with('1'),
            "{}",
            cell["version"]
        );
        let placement = &cell["placement"];
        let server: BTreeSet<u64> = placement["server_cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        let client: BTreeSet<u64> = placement["client_cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .collect();
        assert!(!server.is_empty() && !client.is_empty());
        if !placement["oversubscribed"].as_bool().unwrap() {
            assert!(server.is_disjoint(&client), "{placement}");
        }
        seen.insert((
            cell["runtime"].as_str().unwrap().to_string(),
            cell["threads"].as_u64().unwrap(),
            cell["connections"].as_u64().unwrap(),
        ));
    }
    assert_eq!(seen.len(), cells.len(), "each cell once");

    // Repetitions are interleaved: at one load, runs go A B C, A B C.
    let orders: Vec<Vec<u64>> = cells[..3]
        .iter()
        .map(|c| {
            c["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["order"].as_u64().unwrap())
                .collect()
        })
        .collect();
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
            "0.3",
            "--warmup",
            "0.1",
            "--repeat",
            "1",
        ],
    );
    let cells = cells(&results);
    let names: Vec<_> = cells
        .iter()
        .map(|c| c["runtime"].as_str().unwrap())
        .collect();
    assert_eq!(names, IMPLEMENTATIONS);
    for cell in cells {
        assert_cell_consistent(cell, 0.3);
    }
}

#[test]
fn prints_the_muduo_table() {
    let out = common::out_dir("table");
    let output = compare(&[
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
    ]);
    assert!(output.status.success());
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
}
