//! `--tls`: every workload inside TLS beside its plain twin, the handshake
//! scenario, and TLS's failures (an untrusted certificate, a close_notify
//! alert mid-stream) costing only their cells.

use model::matrix::Tls;
use model::results::{Cell, Results, Status};

use crate::common::{QUICK, assert_cell_consistent, compare_with, load, out_dir, run_ok};

/// The cell of `implementation` with `tls`, connections staying open or churning.
fn find<'a>(results: &'a Results, implementation: &str, tls: Option<Tls>, churn: bool) -> &'a Cell {
    results
        .cells
        .iter()
        .find(|c| c.implementation == implementation && c.tls == tls && c.churn.is_some() == churn)
        .unwrap_or_else(|| panic!("no cell of {implementation} with {tls:?}, churn {churn}"))
}

#[test]
fn a_tls_run_measures_the_steady_state_and_the_handshakes() {
    let mut args = vec!["--runtimes", "mio,tokio", "--tls", "--connections", "4"];
    // The client sized apart: the handshakes' certificate checks are its.
    args.extend(["--threads", "1", "--client-threads", "2"]);
    args.extend(QUICK);
    let out = out_dir("tls-run");
    let results = run_ok("tls-run", &args);
    let settings = results.config.tls.as_ref().expect("the run's TLS settings");
    assert_eq!(
        (settings.version.as_str(), settings.suite.as_str()),
        ("TLSv1.3", "TLS13_AES_128_GCM_SHA256")
    );
    assert!(settings.handshakes);
    assert!(
        settings.kernel_tls.contains("tls"),
        "{}",
        settings.kernel_tls
    );
    // Two steady workloads, three of the handshake scenario, per implementation.
    assert_eq!(results.cells.len(), 2 * 5);
    for name in ["mio", "tokio"] {
        for tls in [None, Some(Tls::Full)] {
            assert_cell_consistent(find(&results, name, tls, false), 0.2);
        }
        for tls in [None, Some(Tls::Full), Some(Tls::Resumption)] {
            let cell = find(&results, name, tls, true);
            assert_eq!((cell.status, cell.churn), (Status::Ok, Some(1)));
            assert_eq!(cell.client_threads, Some(2));
            let run = &cell.runs[0];
            // A new connection after every block: as many opened as round trips.
            let opened = run.opened_connections.unwrap();
            let blocks = run.bytes / cell.block as u64;
            assert!(
                opened > 0 && opened.abs_diff(blocks) <= 4,
                "{opened} {blocks}"
            );
            match tls {
                Some(Tls::Resumption) => {
                    let r = run.resumptions.expect("counted handshakes");
                    // Each connection's first handshake has no ticket to offer; the rest do.
                    assert!(r.handshakes >= opened && r.with_ticket > 0, "{r:?}");
                    assert!(r.with_ticket + 4 >= r.handshakes, "{r:?}");
                }
                _ => assert_eq!(run.resumptions, None),
            }
        }
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for part in [
        "## TLS against plain TCP",
        "TLS / plaintext (block 16384 bytes)",
        "TLS against plain TCP, 1 thread, client 2 threads, 4 connections",
        "Handshakes, 1 thread, client 2 threads, 4 connections",
        "kernel TLS (kTLS): ",
    ] {
        assert!(report.contains(part), "{part:?} not in the report");
    }
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert!(csv.lines().any(|l| l.contains(",resumption,")), "{csv}");
}

/// `--runtimes tokio,mio --tls --no-handshakes` with `fault` on `binary`;
/// the results, once compare has said a cell failed.
fn with_fault(test: &str, fault: &str) -> Results {
    let out = out_dir(test);
    let mut args = vec!["run", "--runtimes", "tokio,mio", "--tls", "--no-handshakes"];
    args.extend(["--connections", "2", "--quiet"]);
    args.extend(QUICK);
    args.extend(["--out", out.to_str().unwrap()]);
    let output = compare_with(&args, &[("PINGPONG_FAULT", fault)]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    load(&out)
}

#[test]
fn a_certificate_the_client_does_not_trust_fails_the_tls_cell_alone() {
    let results = with_fault("tls-untrusted", "pingpong-tokio:untrusted-certificate");
    let failed = find(&results, "tokio", Some(Tls::Full), false);
    assert_eq!(failed.status, Status::Failed);
    let error = failed.error.as_deref().unwrap();
    assert!(
        error.contains("TLS handshake: invalid peer certificate"),
        "{error}"
    );
    assert_cell_consistent(find(&results, "tokio", None, false), 0.2);
    assert_cell_consistent(find(&results, "mio", Some(Tls::Full), false), 0.2);
}

#[test]
fn a_close_notify_mid_stream_fails_only_its_cells() {
    let results = with_fault("tls-alert", "pingpong-tokio:close-notify-after=100000");
    for tls in [None, Some(Tls::Full)] {
        let failed = find(&results, "tokio", tls, false);
        assert_eq!(failed.status, Status::Failed);
        let error = failed.error.as_deref().unwrap();
        assert!(error.contains("server closed the connection"), "{error}");
        assert_cell_consistent(find(&results, "mio", tls, false), 0.2);
    }
}
