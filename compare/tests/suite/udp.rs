//! UDP pingpong end to end: every server against a foreign client and
//! every client against a foreign server, every datagram verified; on every
//! client a dropped datagram is counted lost, sent again and never hung on.

use model::results::{Cell, Status};
use pingpong::datagram::LOSS_TIMEOUT;

use crate::common::{compare_with, load, name, out_dir, run_ok};
use crate::implementations;

/// Short windows and no cost run: what is tested is that the datagrams
/// come back verified and counted, not how fast.
const SHORT: [&str; 10] = [
    "--protocol",
    "udp",
    "--block",
    "1024",
    "--warmup",
    "0",
    "--repeat",
    "1",
    "--no-cost",
    "--quiet",
];

/// A UDP cell that ran: every socket verified, its counts consistent.
/// Returns the datagrams lost inside the window.
fn assert_datagrams_consistent(cell: &Cell) -> u64 {
    let name = name(cell);
    assert_eq!(cell.status, Status::Ok, "{name}: {:?}", cell.error);
    let run = &cell.runs[0];
    assert_eq!(run.verified_connections, Some(cell.connections), "{name}");
    assert_eq!(run.bytes % cell.block as u64, 0, "{name}: whole datagrams");
    let answered = run.bytes / cell.block as u64;
    let datagrams = run.datagrams.unwrap_or_else(|| panic!("{name}: no counts"));
    // Sent inside the window, answered or lost; the window's edges may
    // cut one send of each socket from its answer.
    let (sent, lost) = (datagrams.sent, datagrams.lost);
    assert!(answered > 0 && sent >= lost, "{name}: {datagrams:?}");
    assert!(
        (sent - lost).abs_diff(answered) <= cell.connections as u64,
        "{name}: {sent} sent, {lost} lost, {answered} answered"
    );
    lost
}

#[test]
fn every_server_and_every_client_answer_a_foreign_peer_and_count_what_was_lost() {
    // Every server against mio's client; two threads, three sockets.
    let mut args = vec!["--client", "mio", "--connections", "3", "--threads", "2"];
    args.extend(["--seconds", "0.3"]);
    args.extend(SHORT);
    let results = run_ok("udp-servers", &args);
    assert_eq!(results.cells.len(), implementations().len());
    for cell in &results.cells {
        assert_eq!(assert_datagrams_consistent(cell), 0, "{}", name(cell));
    }

    // Every client against mio's server, which drops every 25th datagram
    // it receives: each client counts its losses, sends again, and ends
    // its window on time. A loss is counted when its timeout fires inside
    // the window: the window outlasts the timeout by 0.4 s, for a loaded
    // machine that is slow to reach the first dropped datagram (0.3 s left
    // it 0.1 s, and a CI run saw mio's client count nothing).
    let seconds = (LOSS_TIMEOUT.as_secs_f64() + 0.4).to_string();
    for client in implementations() {
        let out = out_dir(&format!("udp-client-{client}"));
        let mut args = vec!["run", "--runtimes", "mio", "--client", client];
        args.extend(["--connections", "3", "--out", out.to_str().unwrap()]);
        args.extend(["--seconds", &seconds]);
        args.extend(SHORT);
        let output = compare_with(&args, &[("PINGPONG_FAULT", "pingpong-mio:drop-every=25")]);
        let results = load(&out);
        let cell = &results.cells[0];
        assert!(output.status.success(), "{client}: {output:?}");
        let lost = assert_datagrams_consistent(cell);
        assert!(lost > 0, "{client}: nothing counted lost");
    }
}
