//! `--rates`: the open loop. The generator sends blocks on a schedule to
//! every server; each round trip is timed from when its block was due, and
//! a rate the server cannot keep up with is marked as such.

use crate::common::{QUICK, compare, folder, run_ok};

/// More blocks a second than any server here moves (a few hundred
/// thousand at most): it can never be sustained.
const IMPOSSIBLE: u64 = 100_000_000;

#[test]
fn the_open_loop_times_blocks_from_when_due_and_marks_a_rate_not_sustained() {
    let rates = format!("2000,{IMPOSSIBLE}");
    let mut args = vec![
        "--runtimes",
        "mio,tokio,monoio",
        "--connections",
        "20",
        "--rates",
        &rates,
        // The generator sized apart from the server.
        "--client-threads",
        "2",
    ];
    args.extend(QUICK);
    let results = run_ok("open-loop", &args);
    assert_eq!(results.config.rates, [2000, IMPOSSIBLE]);
    // The fixed client of the closed loop beside it (none here), and the
    // generator for every open-loop cell.
    assert_eq!(results.config.client.as_deref(), Some("mio"));
    assert_eq!(results.cells.len(), 6);
    for cell in &results.cells {
        let name = format!("{} at {:?}", cell.implementation, cell.rate);
        assert_eq!(cell.client, "generator", "{name}: the one generator");
        assert_eq!((cell.threads, cell.client_threads), (1, Some(2)), "{name}");
        let rate = cell.rate.expect("a rate");
        for run in &cell.runs {
            // Every byte that came back was verified, on every connection.
            assert_eq!(run.verified_connections, Some(20), "{name}");
            let open = run.open_loop.as_ref().expect("the open loop's figures");
            let rtt = run.rtt.as_ref().expect("round trips from when due");
            assert_eq!(open.rate, rate);
            assert!(open.returned <= open.due, "{name}: {open:?}");
            assert_eq!(rtt.count, open.returned, "{name}");
            assert_eq!(open.uncorrected.count, open.returned, "{name}");
            assert_eq!(open.lag_series.len(), 20, "{name}");
            if rate == IMPOSSIBLE {
                let why = open.not_sustained.as_deref().expect("not sustained");
                assert!(why.contains("blocks/s came back"), "{name}: {why}");
                continue;
            }
            // A 0.2 s window at 2,000 blocks a second: 400 due, give or
            // take one per connection at either edge.
            assert!(open.due.abs_diff(400) <= 20, "{name}: {open:?}");
            assert!(open.achieved <= 2000.0 * 1.05, "{name}: {open:?}");
            // A block's round trip from when it was due includes its send
            // lag: never shorter than from when it went out.
            assert!(
                rtt.p50_us >= open.uncorrected.p50_us && rtt.max_us >= open.uncorrected.max_us,
                "{name}: {rtt:?} {:?}",
                open.uncorrected
            );
            // The generator waits between due times this far apart.
            assert!(open.timer.count > 0, "{name}: never woke for a due time");
        }
        // Whether 2,000 a second is sustained is the clock's to say (a block
        // due in a 0.2 s window's last round trip cannot come back inside
        // it): the verdict's rule is unit-tested; here, only the impossible
        // rate's, which no machine can sustain.
        if rate == IMPOSSIBLE {
            assert!(cell.not_sustained().is_some(), "{name}");
        }
    }
    let report = std::fs::read_to_string(folder("open-loop").join("report.md")).unwrap();
    let row = report
        .lines()
        .find(|l| l.starts_with("| 100,000,000 |"))
        .expect("a row of the impossible rate");
    // Short of it, or with the generator too busy to say whose fault that was.
    let short = row.matches("not sustained (").count() + row.matches("client-bound^ (").count();
    assert_eq!(short, 3, "{row}");
    assert!(report.contains("Open loop: the knee"), "the knee table");
    assert!(
        folder("open-loop")
            .join("latency-by-rate-1t-c2t-20c-16384B.svg")
            .exists(),
        "the latency-against-load chart"
    );
}

#[test]
fn the_open_loop_refuses_what_it_cannot_run() {
    for (extra, expected) in [
        (
            ["--client", "tokio"],
            "the open loop's client is the generator for every server",
        ),
        (["--window", "2"], "--window does not apply"),
        (["--churn", "3"], "does not run with --churn"),
    ] {
        let mut args = vec!["run", "--rates", "1000"];
        args.extend(extra);
        let output = compare(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}
