//! Faults on purpose (`PINGPONG_FAULT`, the runtime binaries' hidden test
//! mode): each costs the faulty cell only, is named in its error, and leaves
//! no process behind; Ctrl-C and SIGTERM stop a run with what it measured
//! saved and nothing left running, while it builds too.

use std::process::Stdio;
use std::time::{Duration, Instant};

use model::results::{Results, Status};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common::{
    self, MARK, compare_with, left_in_groups, left_marked, load, out_dir, processes,
};

/// tokio with `fault` beside a healthy mio: tokio's cell fails with a
/// reason containing `expected`, mio's succeeds, nothing is left running.
fn fault_costs_one_cell(test: &str, fault: &str, expected: &[&str]) {
    fault_costs_one_cell_of(test, fault, expected, &[]);
}

/// [`fault_costs_one_cell`] with `extra` options (another protocol).
fn fault_costs_one_cell_of(test: &str, fault: &str, expected: &[&str], extra: &[&str]) {
    fault_costs_one_cell_beside("mio", test, fault, expected, extra);
}

/// [`fault_costs_one_cell_of`] beside `healthy` rather than mio.
fn fault_costs_one_cell_beside(
    healthy: &str,
    test: &str,
    fault: &str,
    expected: &[&str],
    extra: &[&str],
) {
    let out = out_dir(test);
    let spec = format!("pingpong-tokio:{fault}");
    let runtimes = format!("tokio,{healthy}");
    let mut args = vec![
        "run",
        "--runtimes",
        &runtimes,
        "--connections",
        "10",
        "--seconds",
        "0.3",
        "--warmup",
        "0.1",
        "--repeat",
        "1",
        "--no-cost",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let output = compare_with(&args, &[("PINGPONG_FAULT", &spec), (MARK, test)]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{fault}: {stderr}");
    let results = load(&out);
    let (tokio, other) = (&results.cells[0], &results.cells[1]);
    assert_eq!(
        (tokio.implementation.as_str(), other.implementation.as_str()),
        ("tokio", healthy)
    );
    assert_eq!(tokio.status, Status::Failed, "{fault}");
    assert!(
        tokio.mib_per_s.is_none(),
        "{fault}: a failed cell has no figure"
    );
    let error = tokio.error.as_deref().unwrap();
    for part in expected {
        assert!(error.contains(part), "{fault}: {part:?} not in {error:?}");
    }
    common::assert_cell_consistent(other, 0.3);
    // The summary at the end names the failed cell.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("tokio at 1 thread, 10 connections: failed"),
        "{stdout}"
    );
    assert_eq!(
        left_marked(test),
        Vec::<String>::new(),
        "{fault}: processes left"
    );
}

#[test]
fn a_server_that_crashes_mid_run() {
    fault_costs_one_cell(
        "fault-crash",
        "crash-after=200",
        &["the server exited during the run", "SIGABRT", "the client:"],
    );
}

#[test]
fn a_server_that_never_reports_ready() {
    fault_costs_one_cell(
        "fault-hang",
        "hang-before-ready",
        &["server start: the server passed its deadline of 10.0 s; killed"],
    );
}

#[test]
fn a_server_that_refuses_connections() {
    fault_costs_one_cell("fault-refuse", "refuse", &["connect failed", "refused"]);
}

#[test]
fn a_server_that_corrupts_a_byte() {
    fault_costs_one_cell(
        "fault-flip",
        "flip-byte=20000",
        &["corrupt stream: byte 20000 of the stream"],
    );
}

#[test]
fn a_server_that_corrupts_a_byte_of_a_datagram() {
    fault_costs_one_cell_of(
        "fault-flip-udp",
        "flip-byte=100",
        &["byte 100 of a datagram is"],
        &["--protocol", "udp", "--block", "1024"],
    );
}

#[test]
fn a_server_that_corrupts_a_body_or_answers_a_malformed_head() {
    for (protocol, malformed) in [
        ("http", "malformed HTTP answer: invalid response status"),
        (
            "websocket",
            "malformed WebSocket answer: invalid response status",
        ),
    ] {
        let extra = ["--protocol", protocol];
        let corrupt = ["corrupt stream: byte 20000 of the stream"];
        let flip = format!("fault-flip-{protocol}");
        fault_costs_one_cell_beside("smol", &flip, "flip-byte=20000", &corrupt, &extra);
        let test = format!("fault-malformed-{protocol}");
        fault_costs_one_cell_beside("smol", &test, "malformed-answer", &[malformed], &extra);
    }
}

#[test]
fn a_client_that_dies() {
    fault_costs_one_cell(
        "fault-client",
        "client-abort-after=200",
        &["the client exited", "SIGABRT"],
    );
}

/// The process groups that `parent`'s children lead (the runtime
/// processes; cargo, when it builds, stays in the parent's group).
fn child_groups(parent: u32) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|p| p.parent == parent && p.group == p.pid)
        .map(|p| p.group)
        .collect()
}

#[test]
fn sigterm_while_building_stops_the_build_and_the_run() {
    // A target folder of its own: the build starts from nothing, and is
    // still compiling when the signal comes.
    let target = out_dir("signal-build-target");
    let out = out_dir("signal-build");
    let mark = "signal-build";
    let mut child = common::command()
        .args(["run", "--runtimes", "mio", "--connections", "1"])
        .args(["--seconds", "0.1", "--warmup", "0", "--repeat", "1"])
        .args(["--no-cost", "--quiet", "--out", out.to_str().unwrap()])
        .env("CARGO_TARGET_DIR", &target)
        .env(MARK, mark)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // Under way: a crate compiled (its fingerprint written) and a
    // compiler running.
    let compiled = |target: &std::path::Path| {
        std::fs::read_dir(target.join("debug/.fingerprint")).is_ok_and(|mut d| d.next().is_some())
    };
    while !(compiled(&target) && left_marked(mark).iter().any(|p| p.ends_with("/rustc"))) {
        assert!(child.try_wait().unwrap().is_none(), "compare ended first");
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no compiler started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted while preparing"), "{stderr}");
    // cargo and its compilers went with it (a killed process may take a
    // moment to leave the process table).
    let start = Instant::now();
    while !left_marked(mark).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "left running: {:?}",
            left_marked(mark)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_dir_all(&target);
}

#[test]
fn ctrl_c_and_sigterm_save_the_runs_and_leave_nothing_running() {
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        let out = out_dir(&format!("signal-{signal}"));
        let path = out.join("results.json");
        let mut child = common::command()
            .args(["run", "--runtimes", "mio,tokio", "--connections", "1,10"])
            .args([
                "--seconds",
                "0.3",
                "--warmup",
                "0.05",
                "--repeat",
                "3",
                "--no-cost",
                "--quiet",
            ])
            .args(["--out", out.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let mut groups = Vec::new();
        loop {
            groups.extend(child_groups(child.id()));
            let saved = Results::load(&path).is_ok_and(|r| r.runs() > 0);
            // Interrupted with a run saved and the next one's processes up.
            if saved && !child_groups(child.id()).is_empty() {
                break;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "{signal}: compare ended first"
            );
            assert!(
                start.elapsed() < Duration::from_secs(600),
                "{signal}: no run saved"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        groups.extend(child_groups(child.id()));
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(130), "{signal}: {stderr}");
        assert!(
            stderr.contains("interrupted:") && stderr.contains("--resume"),
            "{stderr}"
        );
        assert!(
            load(&out).cells.iter().all(|c| c.status == Status::Ok),
            "{signal}: no cell blamed"
        );
        groups.sort_unstable();
        groups.dedup();
        assert!(!groups.is_empty());
        assert_eq!(
            left_in_groups(&groups),
            Vec::<String>::new(),
            "{signal}: processes left"
        );
    }
}
