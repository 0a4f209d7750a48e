//! The shapes that call a runtime's services, beyond what a healthy run
//! shows: a read timeout that fires.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pingpong::server::READ_TIMEOUT;
use pingpong::wire::{Line, Served};

use crate::common::{QUICK, bin_dir, run_ok};
use crate::implementations;

/// The servers without a runtime's timer: the baselines.
const NO_TIMER: [&str; 3] = ["mio", "std-threads", "may"];

/// In the timeout shape, a client that connects and sends nothing has its
/// connection ended by the server once the read timeout has passed, and
/// the server counts the timer it armed and that it fired; on every
/// runtime with a timer, at once.
#[test]
fn a_quiet_connection_times_out_and_is_counted() {
    // The binaries, built as a run builds them, in the shape under test.
    let mut build = vec!["--shapes", "timeout", "--connections", "1"];
    build.extend(QUICK);
    run_ok("timeout-build", &build);
    let timed: Vec<&str> = implementations()
        .into_iter()
        .filter(|name| !NO_TIMER.contains(name))
        .collect();
    let outcomes: Vec<(&str, Duration, Served)> = std::thread::scope(|scope| {
        let waits: Vec<_> = timed
            .iter()
            .map(|name| scope.spawn(move || (*name, quiet_connection(name))))
            .collect();
        waits
            .into_iter()
            .map(|wait| {
                let (name, (ended, served)) = wait.join().expect("a server's thread");
                (name, ended, served)
            })
            .collect()
    });
    for (name, ended, served) in outcomes {
        assert!(ended >= READ_TIMEOUT, "{name}: ended after {ended:?}");
        let counted = (served.reads, served.timers, served.timeouts);
        assert_eq!(counted, (0, 1, 1), "{name}: {served:?}");
    }
}

/// Starts `name`'s server in the timeout shape, connects and sends
/// nothing: how long until the server ended the connection, and what the
/// server said it served once stopped.
fn quiet_connection(name: &str) -> (Duration, Served) {
    let mut server = Command::new(bin_dir().join(format!("pingpong-{name}")))
        .args(["server", "--shape", "timeout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {name}'s server: {e}"));
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut next = || {
        let text = lines.next().expect("a line").expect("a line");
        Line::parse(&text).unwrap_or_else(|| panic!("{name}: {text}"))
    };
    let Line::Ready(ready) = next() else {
        panic!("{name}: no ready line");
    };
    let mut stream = TcpStream::connect(ready.addr).unwrap();
    stream.set_read_timeout(Some(READ_TIMEOUT * 10)).unwrap();
    let connected = Instant::now();
    let read = stream.read(&mut [0; 16]);
    let ended = connected.elapsed();
    assert_eq!(
        read.ok(),
        Some(0),
        "{name}: the server did not end the connection"
    );
    drop(server.stdin.take());
    let Line::Served(served) = next() else {
        panic!("{name}: no word of what it served");
    };
    assert!(server.wait().unwrap().success(), "{name}");
    (ended, served)
}
