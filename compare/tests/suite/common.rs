//! Runs the real `compare` binary, which builds and runs the real runtime
//! binaries: real processes, real sockets on loopback.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Long enough for a cold release build of the runtime binaries on two cores.
const LIMIT: Duration = Duration::from_secs(900);

/// The shortest runs that still measure: one 0.2 s window per cell.
pub const QUICK: [&str; 6] = ["--seconds", "0.2", "--warmup", "0.05", "--repeat", "1"];

/// A test's results folder, as the test left it.
pub fn folder(test: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(test)
}

/// A fresh folder for one test's results.
pub fn out_dir(test: &str) -> PathBuf {
    let dir = folder(test);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// One `compare` at a time: tests run in parallel, and two runs at once on a
/// small machine would starve each other past their deadlines.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Holds off every other test's `compare` while alive.
pub fn turn() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `compare ARGS` to its end, killing it past [`LIMIT`].
pub fn compare(args: &[&str]) -> Output {
    compare_with(args, &[])
}

/// [`compare`] with environment variables set.
pub fn compare_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let _turn = turn();
    run_compare(args, env)
}

/// Runs `compare ARGS` without taking a turn: the caller holds one.
pub fn run_compare(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_compare"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting compare");
    let start = Instant::now();
    while child.try_wait().expect("waiting for compare").is_none() {
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("compare {args:?} ran longer than {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("compare's output")
}

/// `compare run ARGS --out DIR` that must succeed; returns results.json.
pub fn run_ok(test: &str, args: &[&str]) -> Value {
    let out = out_dir(test);
    let mut all = vec!["run", "--out", out.to_str().unwrap()];
    all.extend_from_slice(args);
    let output = compare(&all);
    assert!(
        output.status.success(),
        "compare {all:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    serde_json::from_str(&text).expect("results.json is JSON")
}

/// The positions in the run's sequence of a cell's repetitions.
pub fn orders(cell: &Value) -> Vec<u64> {
    cell["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["order"].as_u64().unwrap())
        .collect()
}

pub fn cells(results: &Value) -> &Vec<Value> {
    results["cells"].as_array().expect("cells")
}

/// Checks that a cell is ok and that its figures agree with each other.
pub fn assert_cell_consistent(cell: &Value, seconds: f64) {
    check_cell(cell, seconds, &["server", "client"]);
}

/// [`assert_cell_consistent`] for a server on another host, whose
/// affinity and usage this host cannot see.
pub fn assert_remote_cell_consistent(cell: &Value, seconds: f64) {
    check_cell(cell, seconds, &["client"]);
}

/// The checks of a cell, with the affinity and usage of the processes of `sides`.
fn check_cell(cell: &Value, seconds: f64, sides: &[&str]) {
    let name = format!(
        "{} (client {}) at {} threads, {} connections",
        cell["runtime"], cell["client"], cell["threads"], cell["connections"]
    );
    assert_eq!(cell["status"], "ok", "{name}: {}", cell["error"]);
    assert!(cell["error"].is_null(), "{name}");
    let block = cell["block"].as_f64().unwrap();
    let connections = cell["connections"].as_u64().unwrap();
    let runs = cell["runs"].as_array().unwrap();
    assert!(!runs.is_empty(), "{name}: no runs");
    for run in runs {
        let bytes = run["bytes"].as_f64().unwrap();
        let window = run["seconds"].as_f64().unwrap();
        assert!(bytes > 0.0, "{name}: no bytes in the window");
        assert!(
            window >= seconds && window < seconds + 0.5,
            "{name}: window of {window} s for {seconds} s asked"
        );
        let mib = run["mib_per_s"].as_f64().unwrap();
        assert!(
            (mib - bytes / window / 1048576.0).abs() < 1e-6 * mib,
            "{name}: MiB/s"
        );
        let messages = run["messages_per_s"].as_f64().unwrap();
        assert!(
            (messages - bytes / block / window).abs() < 1e-6 * messages,
            "{name}: messages/s"
        );
        assert_eq!(
            run["verified_connections"].as_u64().unwrap(),
            connections,
            "{name}: verified connections"
        );
        let in_flight = connections * cell["window"].as_u64().unwrap_or(1);
        assert_rtt_consistent(&name, &run["rtt"], bytes / block, in_flight);
        let fairness = run["fairness"].as_f64().unwrap();
        let starved = run["starved_connections"].as_u64().unwrap();
        assert!(
            fairness > 0.0 && fairness <= 1.0 + 1e-9,
            "{name}: fairness {fairness}"
        );
        assert!(starved < connections, "{name}: {starved} starved");
        if connections == 1 {
            assert!(
                (fairness - 1.0).abs() < 1e-9,
                "{name}: one connection is fair to itself"
            );
        }
        for side in sides {
            assert_eq!(
                run[format!("{side}_cpus")],
                cell["placement"][format!("{side}_cpus")],
                "{name}: the {side}'s affinity is the placement recorded"
            );
            assert_usage_sane(&name, &run[format!("{side}_usage")]);
        }
    }
    let summary = &cell["mib_per_s"];
    assert!(cell["figures"].is_object(), "{name}: figures");
    let median = summary["median"].as_f64().unwrap();
    assert!(
        summary["min"].as_f64().unwrap() <= median && median <= summary["max"].as_f64().unwrap(),
        "{name}"
    );
}

/// The round-trip times count the blocks of the window, their percentiles
/// rise, and the histogram they come from gives them back.
fn assert_rtt_consistent(name: &str, rtt: &Value, blocks: f64, in_flight: u64) {
    let count = rtt["count"]
        .as_u64()
        .unwrap_or_else(|| panic!("{name}: no rtt"));
    // A block that straddles a window edge is counted by bytes or by time, not both.
    assert!(
        (count as f64 - blocks).abs() <= in_flight as f64 + 1.0,
        "{name}: {count} round trips for {blocks} blocks"
    );
    let p: Vec<f64> = ["p50_us", "p90_us", "p95_us", "p99_us", "p999_us", "max_us"]
        .iter()
        .map(|k| rtt[k].as_f64().unwrap())
        .collect();
    assert!(
        p[0] > 0.0 && p.windows(2).all(|w| w[0] <= w[1]),
        "{name}: {p:?}"
    );
    let h = pingpong::latency::decode(rtt["histogram"].as_str().unwrap()).unwrap();
    assert_eq!(h.len(), count, "{name}: histogram count");
    assert_eq!(
        h.value_at_quantile(0.99) as f64 / 1000.0,
        p[3],
        "{name}: p99"
    );
}

/// CPU time adds up and stays within what the machine has; memory was used.
fn assert_usage_sane(name: &str, usage: &Value) {
    let cpu = usage["cpu_percent"]
        .as_f64()
        .unwrap_or_else(|| panic!("{name}: no usage"));
    let parts = usage["user_percent"].as_f64().unwrap() + usage["system_percent"].as_f64().unwrap();
    assert!((cpu - parts).abs() < 1e-6, "{name}: {usage}");
    let cores = std::thread::available_parallelism().unwrap().get() as f64;
    // Clock ticks are 10 ms: a short window may round one tick up, and a
    // process that mostly waits (on a delayed link) may spend none.
    assert!(cpu >= 0.0 && cpu <= 100.0 * cores * 1.2, "{name}: {usage}");
    assert!(
        usage["peak_rss_kib"].as_u64().unwrap() > 0,
        "{name}: {usage}"
    );
}

/// A process as /proc shows it.
pub struct Proc {
    pub pid: i32,
    pub parent: u32,
    pub group: i32,
    pub zombie: bool,
}

/// Every process on the machine.
pub fn processes() -> Vec<Proc> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|p| {
            let pid = p.ok()?.file_name().to_str()?.parse::<i32>().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // Fields after the command name, which may hold spaces: state, ppid, pgrp.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            Some(Proc {
                pid,
                zombie: *fields.first()? == "Z",
                parent: fields.get(1)?.parse().ok()?,
                group: fields.get(2)?.parse().ok()?,
            })
        })
        .collect()
}

/// Live processes (not zombies) in the process groups `groups`, or, with
/// none given, running a `pingpong-*` binary of this build.
pub fn leftovers(groups: &[i32]) -> Vec<String> {
    processes()
        .into_iter()
        .filter(|p| !p.zombie)
        .filter_map(|p| {
            let exe = std::fs::read_link(format!("/proc/{}/exe", p.pid)).ok()?;
            let ours = exe.to_string_lossy().contains("/target/release/pingpong-");
            let hit = if groups.is_empty() {
                ours
            } else {
                groups.contains(&p.group)
            };
            hit.then(|| format!("{} {}", p.pid, exe.display()))
        })
        .collect()
}
