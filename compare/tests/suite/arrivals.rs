//! `--arrival`: connections that start their pingpong as soon as they are
//! up, each one's connect time and first round trip, and the kernel's TCP
//! counters over every run.

use model::results::Results;
use pingpong::client::Arrival;

use crate::common::{QUICK, assert_cell_consistent, folder, run_ok};

fn run(test: &str, arrival: &str) -> Results {
    let mut args = vec![
        "--runtimes",
        "mio,tokio",
        "--connections",
        "200",
        "--arrival",
        arrival,
    ];
    args.extend(QUICK);
    run_ok(test, &args)
}

#[test]
fn every_connection_s_arrival_and_the_kernel_s_counts_are_recorded() {
    for (arrival, expected) in [
        ("immediate", Arrival::Immediate),
        ("storm", Arrival::Storm),
        ("gated", Arrival::Gated),
    ] {
        let test = format!("arrival-{arrival}");
        let results = run(&test, arrival);
        assert_eq!(results.config.arrival, Some(expected));
        for cell in &results.cells {
            let run = &cell.runs[0];
            // One entry per connection, every one of them.
            let connect = run.connect.as_ref().expect("connect times");
            let first = run.first_rtt.as_ref().expect("first round trips");
            assert_eq!(
                (connect.count, first.count),
                (200, 200),
                "{}",
                cell.implementation
            );
            assert!(connect.p50_us > 0.0 && connect.p50_us <= connect.max_us);
            assert!(first.p50_us > 0.0 && first.p50_us <= first.max_us);
            // The kernel counted the run's connections: this machine runs
            // nothing else that connects during the tests' runs, but others
            // may, so at least these.
            let tcp = run.tcp.expect("the kernel's TCP counters");
            assert!(
                tcp.active_opens >= 200 && tcp.passive_opens >= 200,
                "{tcp:?}"
            );
            // The accept queue is sampled where connections arrive while
            // the server serves; 200 connections fit its backlog.
            match (expected, &run.accept_queue) {
                (Arrival::Gated, queue) => assert_eq!(queue, &None),
                (_, Some(queue)) => {
                    assert_eq!(queue.interval_ms, 5.0);
                    assert!(queue.backlog >= 200 && queue.peak() <= 200, "{queue:?}");
                    assert!(queue.depths.last().is_none_or(|&d| d > 0), "{queue:?}");
                }
                (_, None) => panic!("{}: no accept queue sampled", cell.implementation),
            }
        }
        // A storm is made by one client, mio's, for every server.
        if expected == Arrival::Storm {
            assert_eq!(results.config.client.as_deref(), Some("mio"));
        }
        let report = std::fs::read_to_string(folder(&test).join("report.md")).unwrap();
        let troubled = results
            .cells
            .iter()
            .flat_map(|c| &c.runs)
            .any(|r| r.tcp.is_some_and(|t| t.troubles().is_some()));
        assert_eq!(
            report.contains("Arrivals, 1 thread, 200 connections"),
            expected != Arrival::Gated || troubled,
            "an arrivals table where arrival was immediate or a storm, or the kernel counted drops"
        );
    }
}

/// The servers that accept another way than their runtime's users write
/// it: std-threads draining its listener before it starts a thread, and
/// each runtime's accept knob. Each must serve every connection of a storm.
#[test]
fn every_accept_configuration_serves_a_storm() {
    let configurations = [
        "std-threads",
        "tokio{accept_unconstrained=true}",
        "tokio-local{accept_unconstrained=true}",
        "glommio{accept_latency_us=1000}",
        "may{accept_thread=true}",
    ];
    let runtimes = configurations.join(",");
    let mut args = vec!["--runtimes", &runtimes, "--connections", "200"];
    args.extend(["--threads", "1", "--arrival", "storm"]);
    args.extend(QUICK);
    let results = run_ok("arrival-accept", &args);
    assert_eq!(results.config.implementations, configurations);
    for cell in &results.cells {
        assert_cell_consistent(cell, 0.2);
        let run = &cell.runs[0];
        assert_eq!(
            run.verified_connections,
            Some(200),
            "{}",
            cell.implementation
        );
        assert!(run.accept_queue.is_some(), "{}", cell.implementation);
    }
}

#[test]
fn with_churn_every_implementation_reconnects_and_counts_its_connections() {
    let churn = 3;
    let mut args = vec!["--connections", "10", "--churn", "3"];
    args.extend(QUICK);
    let results = run_ok("churn", &args);
    assert_eq!(results.config.churn, Some(churn));
    assert_eq!(results.cells.len(), crate::implementations().len());
    for cell in &results.cells {
        let name = &cell.implementation;
        let run = &cell.runs[0];
        let opened = run.opened_connections.expect("connections opened");
        let round_trips = run.bytes / cell.block as u64;
        // Each connection in the window round-tripped at most `churn`
        // blocks; those open at either edge, part of them.
        let slots = cell.connections as u64;
        assert!(opened > slots, "{name}: {opened} opened");
        assert!(
            round_trips <= (opened + slots) * churn && round_trips >= (opened - slots) * churn,
            "{name}: {round_trips} round trips for {opened} connections of {churn} blocks"
        );
        // Every connection's arrival, warm-up included; every place ended clean.
        assert!(run.connect.as_ref().unwrap().count >= opened, "{name}");
        assert_eq!(run.verified_connections, Some(cell.connections), "{name}");
    }
    let report = std::fs::read_to_string(folder("churn").join("report.md")).unwrap();
    assert!(report.contains("a new connection every 3 blocks"));
}
