//! HTTP/1.1 and WebSocket end to end: every server that serves them
//! against a foreign client, plain and inside TLS, and every client against
//! a foreign server, every body verified; the servers that cannot serve
//! them say why. (A corrupt or malformed answer: `faults`.)

use model::results::{Cell, Status};

use crate::common::{assert_cell_consistent, compare_with, load, name, out_dir, run_ok};
use crate::implementations;

/// The servers of hyper and tungstenite: those whose glue hands its
/// connections over as futures-io streams.
const SERVERS: [&str; 8] = [
    "tokio",
    "tokio-local",
    "async-std",
    "smol",
    "glommio",
    "monoio",
    "monoio-epoll",
    "compio",
];

/// Short windows and no cost run, three connections pipelining four
/// requests each: what is tested is that every body comes back verified.
const SHORT: [&str; 16] = [
    "--protocol",
    "http,websocket",
    "--block",
    "1024",
    "--window",
    "4",
    "--connections",
    "3",
    "--seconds",
    "0.3",
    "--warmup",
    "0.05",
    "--repeat",
    "1",
    "--no-cost",
    "--quiet",
];

fn assert_served(cell: &Cell) {
    // Every body verified on every connection; the window's edges may cut
    // a body, as they cut a TCP block, so its bytes need not be whole blocks.
    assert_cell_consistent(cell, 0.3);
}

#[test]
fn every_web_server_answers_a_foreign_client_and_every_client_a_foreign_server() {
    // Every server against mio's client, plain and inside TLS.
    let mut args = vec!["--client", "mio", "--tls", "--no-handshakes"];
    args.extend(SHORT);
    let results = run_ok("web-servers", &args);
    assert_eq!(results.cells.len(), implementations().len() * 4);
    for cell in &results.cells {
        if SERVERS.contains(&cell.implementation.as_str()) {
            assert_served(cell);
            continue;
        }
        let name = name(cell);
        assert_eq!(cell.status, Status::Unavailable, "{name}: {:?}", cell.error);
        assert_eq!(
            cell.unavailable.as_deref(),
            Some("no HTTP or WebSocket server"),
            "{name}"
        );
        let error = cell.error.as_deref().unwrap();
        assert!(
            error.contains("hyper and tungstenite serve"),
            "{name}: {error}"
        );
    }

    // Every client against tokio's server.
    for client in implementations() {
        let out = out_dir(&format!("web-client-{client}"));
        let mut args = vec!["run", "--runtimes", "tokio", "--client", client];
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(SHORT);
        let output = compare_with(&args, &[]);
        assert!(output.status.success(), "{client}: {output:?}");
        let results = load(&out);
        assert_eq!(results.cells.len(), 2, "{client}");
        results.cells.iter().for_each(assert_served);
    }
}
