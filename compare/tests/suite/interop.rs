//! One protocol: every implementation's client against every
//! implementation's server exchanges verified bytes, over plain TCP and
//! inside TLS.

use model::results::{Cell, Served, Status};
use pingpong::server::{Shape, WORKERS_PER_THREAD};

use crate::common::{assert_cell_consistent, compare, load, out_dir, run_ok};
use crate::implementations;

/// One short window per pair, and no cost run: what is tested is that the
/// bytes come back verified, not how fast or at what cost.
const SECONDS: f64 = 0.05;
const WINDOW: [&str; 7] = [
    "--seconds",
    "0.05",
    "--warmup",
    "0",
    "--repeat",
    "1",
    "--no-cost",
];

#[test]
fn every_client_against_every_server() {
    let mut failures = Vec::new();
    let mut pairs = 0;
    for client in implementations() {
        let out = out_dir(&format!("interop-{client}"));
        let mut args = vec!["run", "--client", client, "--out", out.to_str().unwrap()];
        // Two threads, three connections: a thread with more than one.
        args.extend(["--connections", "3", "--threads", "2"]);
        args.extend(["--tls", "--no-handshakes"]);
        args.extend(WINDOW);
        let output = compare(&args);
        let results = load(&out);
        for cell in &results.cells {
            pairs += 1;
            assert_eq!(cell.client, client);
            if cell.status == Status::Ok {
                assert_served_as_shaped(cell);
            }
            let verified = cell.runs.first().and_then(|r| r.verified_connections);
            if cell.status != Status::Ok || verified != Some(cell.connections) {
                failures.push(format!(
                    "server {} / client {client} ({:?}): {:?} ({verified:?} verified): {:?}",
                    cell.implementation, cell.tls, cell.status, cell.error
                ));
            }
        }
        if failures.is_empty() {
            assert!(output.status.success(), "{output:?}");
        }
    }
    assert_eq!(pairs, implementations().len().pow(2) * 2);
    assert!(
        failures.is_empty(),
        "{} failing pairs:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_client_with_more_threads_than_connections() {
    // A client thread with no connection has nothing to do but end well;
    // and every client runs the threads it is asked (`--client-threads`),
    // whatever the server's: it reports them, and compare checks.
    let mut args = vec!["--connections", "1,2", "--threads", "1"];
    args.extend(["--client-threads", "3"]);
    args.extend(WINDOW);
    let results = run_ok("interop-idle-threads", &args);
    assert_eq!(results.cells.len(), implementations().len() * 2);
    for cell in &results.cells {
        assert_cell_consistent(cell, SECONDS);
        assert_eq!((cell.threads, cell.client_threads), (1, Some(3)));
    }
}

/// The servers with no tasks and no runtime services: they serve the
/// echo alone.
const NO_TASKS: [&str; 3] = ["mio", "std-threads", "may"];

/// What a server lacks for a shape, in the words of its cells.
fn lacks(name: &str, shape: Shape) -> Option<&'static str> {
    match (name, shape) {
        (_, Shape::Split | Shape::Spawn | Shape::Pool) if NO_TASKS.contains(&name) => {
            Some("no tasks to hand blocks to")
        }
        _ if NO_TASKS.contains(&name) => Some("no runtime services"),
        ("kimojio", Shape::Blocking) => Some("no blocking pool"),
        // Its wakers are bound to their thread, and the test runs two.
        ("kimojio", Shape::Shared) => Some("no lock across threads"),
        _ => None,
    }
}

#[test]
fn every_server_in_every_shape_against_one_client() {
    // The full matrix of clients is the echo's (above); the shapes change
    // only the server's inside, so one client tells whether the bytes come
    // back verified through every server's hand-offs and services.
    let shapes = [
        Shape::Split,
        Shape::Spawn,
        Shape::Pool,
        Shape::Timeout,
        Shape::Blocking,
        Shape::Select,
        Shape::Shared,
    ];
    let names: Vec<&str> = shapes.iter().map(|s| s.name()).collect();
    let names = names.join(",");
    let mut args = vec!["--client", "mio", "--shapes", &names];
    args.extend(["--connections", "3", "--threads", "2"]);
    args.extend(["--tls", "--no-handshakes"]);
    args.extend(WINDOW);
    let results = run_ok("interop-shapes", &args);
    assert_eq!(results.config.shapes, shapes);
    // The hand-offs' channel, as this workspace locked it.
    let channel = results.suite.channel.as_deref().unwrap_or_default();
    assert!(channel.starts_with("async-channel 2."), "{channel:?}");
    assert_eq!(
        results.cells.len(),
        implementations().len() * shapes.len() * 2
    );
    for cell in &results.cells {
        let name = cell.implementation.as_str();
        assert_ne!(cell.shape, Shape::Echo, "{name}");
        if let Some(lack) = lacks(name, cell.shape) {
            let error = cell.error.as_deref().unwrap_or_default();
            assert_eq!(cell.status, Status::Unavailable, "{name}: {error}");
            assert_eq!(cell.unavailable.as_deref(), Some(lack), "{name}: {error}");
            let shape = format!("the {} shape", cell.shape.name());
            assert!(error.contains(&shape), "{name}: {error}");
        } else {
            assert_cell_consistent(cell, SECONDS);
            let verified = cell.runs.first().and_then(|r| r.verified_connections);
            assert_eq!(verified, Some(cell.connections), "{name} {:?}", cell.shape);
            assert_served_as_shaped(cell);
        }
    }
}

/// What the server said its connections did is what its shape defines: a
/// hand-off for every read in the shapes that hand blocks to other tasks,
/// and the tasks spawned for them; a timer armed around every read; every
/// block through the blocking pool, or under the lock; a future per
/// thread driving its connections.
fn assert_served_as_shaped(cell: &Cell) {
    let name = &cell.implementation;
    for run in &cell.runs {
        let served = run
            .served
            .unwrap_or_else(|| panic!("{name}: no word of what it served"));
        let reads = served.reads;
        assert!(reads > 0, "{name}: {served:?}");
        let connections = cell.connections as u64;
        let expected = match cell.shape {
            Shape::Echo => Served { reads, ..NOTHING },
            // One writer for each connection.
            Shape::Split => Served {
                reads,
                handoffs: reads,
                spawned: connections,
                ..NOTHING
            },
            // A handler for each read.
            Shape::Spawn => Served {
                reads,
                handoffs: reads,
                spawned: reads,
                ..NOTHING
            },
            // The workers, once.
            Shape::Pool => Served {
                reads,
                handoffs: reads,
                spawned: (WORKERS_PER_THREAD * cell.threads) as u64,
                ..NOTHING
            },
            // One more for the read that finds the end of each stream, and
            // none fired.
            Shape::Timeout => Served {
                reads,
                timers: reads + connections,
                ..NOTHING
            },
            Shape::Blocking => Served {
                reads,
                unblocked: reads,
                ..NOTHING
            },
            Shape::Shared => Served {
                reads,
                locked: reads,
                ..NOTHING
            },
            // No task per connection: a future for each thread.
            Shape::Select => Served {
                reads,
                selects: cell.threads as u64,
                ..NOTHING
            },
        };
        assert_eq!(served, expected, "{name} {:?} {:?}", cell.shape, cell.tls);
    }
}

/// A server that did nothing but read.
const NOTHING: Served = Served {
    reads: 0,
    handoffs: 0,
    spawned: 0,
    timers: 0,
    timeouts: 0,
    unblocked: 0,
    locked: 0,
    selects: 0,
};
