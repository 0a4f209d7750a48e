//! Runs the real `compare` binary, which builds and runs the real runtime
//! binaries: real processes, real sockets on loopback. Its results are read
//! back with the library's own types.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use model::defaults::{HISTORY_ENV, PROFILE_ENV};
use model::results::Usage;
use model::results::{Cell, Results, Rtt, Run};

/// Long enough for a cold build of the runtime binaries on two cores.
const LIMIT: Duration = Duration::from_secs(900);

/// The tests build the runtime binaries in the dev profile: they check
/// behaviour, not speed, and a dev build takes seconds where release takes
/// minutes (and keeps debug assertions and overflow checks on).
pub const PROFILE: &str = "dev";

/// The shortest runs that still measure: one 0.2 s window per cell, and no
/// cost run (the tests of cost runs ask for theirs).
pub const QUICK: [&str; 7] = [
    "--seconds",
    "0.2",
    "--warmup",
    "0.05",
    "--repeat",
    "1",
    "--no-cost",
];

/// Each step of a test's bisect: a 0.2 s window, and a threshold wide
/// enough that six runs of two equal versions settle "no change" (their
/// 95% intervals at 0.2 s reach 30% here: at 25% a step took up to 18 runs
/// a cell to settle), far below the slowdowns of ten times and more that
/// the tests inject.
pub const BISECT_STEP: [&str; 6] = ["--seconds", "0.2", "--warmup", "0.05", "--threshold", "50"];

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

/// Where compare puts the runtime binaries it builds for the tests: the
/// dev profile's folder, which is this test's compare's own.
pub fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_compare"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The `compare` binary, building with the tests' profile.
pub fn command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_compare"));
    cmd.env(PROFILE_ENV, PROFILE);
    // Every test's folder lies in one place: no history beside them all.
    cmd.env(HISTORY_ENV, "none");
    cmd
}

/// Runs `compare ARGS` to its end, killing it past [`LIMIT`].
pub fn compare(args: &[&str]) -> Output {
    compare_with(args, &[])
}

/// [`compare`] with environment variables set. Which tests may run beside
/// which is nextest's to decide (`.config/nextest.toml`): each test is a
/// process of its own.
pub fn compare_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command();
    cmd.envs(env.iter().copied());
    bounded(cmd, args)
}

/// Runs `cmd ARGS` to its end, killing it past [`LIMIT`]. Its output is
/// read as it comes: a pipe left full would hold it up for good.
pub fn bounded(mut cmd: Command, args: &[&str]) -> Output {
    let mut child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting compare");
    let stdout = drain(child.stdout.take().expect("piped"));
    let stderr = drain(child.stderr.take().expect("piped"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for compare") {
            break status;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("compare {args:?} ran longer than {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |pipe: std::thread::JoinHandle<Vec<u8>>| pipe.join().expect("reading compare");
    Output {
        status,
        stdout: read(stdout),
        stderr: read(stderr),
    }
}

/// Reads `pipe` to its end on a thread of its own.
fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        // What came before an error is all there is to show.
        let _ = pipe.read_to_end(&mut all);
        all
    })
}

/// Asserts that `compare` succeeded, showing all it said otherwise.
pub fn assert_ok(output: &Output, what: &[&str]) {
    assert!(
        output.status.success(),
        "compare {what:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `compare run ARGS --out DIR` that must succeed; returns its results.
pub fn run_ok(test: &str, args: &[&str]) -> Results {
    let out = out_dir(test);
    let mut all = vec!["run", "--out", out.to_str().unwrap()];
    all.extend_from_slice(args);
    assert_ok(&compare(&all), &all);
    load(&out)
}

/// The results in a run's folder.
pub fn load(folder: &Path) -> Results {
    Results::load(&folder.join("results.json")).expect("a readable results.json")
}

/// The run the resume tests interrupt: mio and tokio at 1 and 10
/// connections, two runs of 0.2 s each (eight runs), into `out`, its
/// stderr to `stderr`.
pub fn start_resumable_run(out: &Path, stderr: Stdio) -> std::process::Child {
    command()
        .args([
            "run",
            "--out",
            out.to_str().unwrap(),
            "--runtimes",
            "mio,tokio",
        ])
        .args([
            "--connections",
            "1,10",
            "--seconds",
            "0.2",
            "--warmup",
            "0.05",
        ])
        .args(["--repeat", "2", "--quiet"])
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Waits, ten minutes at most, until the run `child` makes has saved
/// `runs` runs in its results file `path`; fails where it ends first.
pub fn wait_until_saved(child: &mut std::process::Child, path: &Path, runs: usize) {
    let start = Instant::now();
    while Results::load(path).map_or(0, |r| r.runs()) < runs {
        assert!(
            child.try_wait().unwrap().is_none(),
            "compare ended before it saved {runs} runs"
        );
        assert!(
            start.elapsed().as_secs() < 600,
            "no {runs} runs saved in time"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The positions in the run's sequence of a cell's repetitions.
pub fn orders(cell: &Cell) -> Vec<usize> {
    cell.runs.iter().map(|r| r.order).collect()
}

/// The cell of `implementation` at `connections`.
pub fn cell<'a>(results: &'a Results, implementation: &str, connections: usize) -> &'a Cell {
    results
        .cells
        .iter()
        .find(|c| c.implementation == implementation && c.connections == connections)
        .unwrap_or_else(|| panic!("no cell of {implementation} at {connections} connections"))
}

/// A cell for messages.
pub fn name(cell: &Cell) -> String {
    format!(
        "{} (client {}) at {} threads, {} connections",
        cell.implementation, cell.client, cell.threads, cell.connections
    )
}

/// Which processes' affinity and usage this host can see.
#[derive(Clone, Copy, PartialEq)]
enum Seen {
    Both,
    /// A server on another host: only the client.
    Client,
    /// Server and clients on other hosts (`--client-host`): neither.
    Neither,
}

/// Checks that a cell is ok and that its figures agree with each other.
pub fn assert_cell_consistent(cell: &Cell, seconds: f64) {
    check_cell(cell, seconds, Seen::Both);
}

/// [`assert_cell_consistent`] for a server on another host, whose
/// affinity and usage this host cannot see.
pub fn assert_remote_cell_consistent(cell: &Cell, seconds: f64) {
    check_cell(cell, seconds, Seen::Client);
}

/// [`assert_cell_consistent`] for a server and clients on other hosts.
pub fn assert_hosted_cell_consistent(cell: &Cell, seconds: f64) {
    check_cell(cell, seconds, Seen::Neither);
}

fn check_cell(cell: &Cell, seconds: f64, seen: Seen) {
    let name = name(cell);
    assert_eq!(
        cell.status,
        model::results::Status::Ok,
        "{name}: {:?}",
        cell.error
    );
    assert!(cell.error.is_none(), "{name}");
    let block = cell.block as f64;
    assert!(!cell.runs.is_empty(), "{name}: no runs");
    for run in &cell.runs {
        let bytes = run.bytes as f64;
        assert!(bytes > 0.0, "{name}: no bytes in the window");
        assert!(
            run.seconds >= seconds && run.seconds < seconds + 0.5,
            "{name}: window of {} s for {seconds} s asked",
            run.seconds
        );
        let mib = run.mib_per_s;
        assert!(
            (mib - bytes / run.seconds / 1048576.0).abs() < 1e-6 * mib,
            "{name}: MiB/s"
        );
        let messages = run.messages_per_s;
        assert!(
            (messages - bytes / block / run.seconds).abs() < 1e-6 * messages,
            "{name}: messages/s"
        );
        assert_eq!(
            run.verified_connections,
            Some(cell.connections),
            "{name}: verified connections"
        );
        let in_flight = cell.connections * cell.window;
        let rtt = run.rtt.as_ref().unwrap_or_else(|| panic!("{name}: no rtt"));
        assert_rtt_consistent(&name, rtt, bytes / block, in_flight);
        let fairness = run.fairness.expect("fairness");
        let starved = run.starved_connections.expect("starved connections");
        assert!(
            fairness > 0.0 && fairness <= 1.0 + 1e-9,
            "{name}: fairness {fairness}"
        );
        assert!(starved < cell.connections, "{name}: {starved} starved");
        if cell.connections == 1 {
            assert!(
                (fairness - 1.0).abs() < 1e-9,
                "{name}: one connection is fair to itself"
            );
        }
        assert_series_consistent(&name, run);
        assert!(
            run.server_cost.is_none() && run.client_cost.is_none(),
            "{name}: a timed run was counted"
        );
        if seen != Seen::Neither {
            assert_eq!(
                run.client_cpus, cell.placement.client_cpus,
                "{name}: the client's affinity is the placement recorded"
            );
            assert_usage_sane(&name, run.client_usage);
        }
        if seen == Seen::Both {
            assert_eq!(
                run.server_cpus, cell.placement.server_cpus,
                "{name}: the server's affinity is the placement recorded"
            );
            assert_usage_sane(&name, run.server_usage);
        }
    }
    assert_costs_consistent(&name, cell, seen);
    let summary = cell.mib_per_s.expect("a figure");
    assert!(cell.figures.is_some(), "{name}: figures");
    assert!(
        summary.min <= summary.median && summary.median <= summary.max,
        "{name}"
    );
}

/// The window's slices add up to it: their bytes to its bytes, their
/// durations to its length; twenty at most, planned 10 ms or longer.
fn assert_series_consistent(name: &str, run: &Run) {
    let series = run
        .series
        .as_ref()
        .unwrap_or_else(|| panic!("{name}: no series"));
    assert_eq!(
        series.bytes.iter().sum::<u64>(),
        run.bytes,
        "{name}: slice bytes"
    );
    let seconds: f64 = series.seconds.iter().sum();
    assert!(
        (seconds - run.seconds).abs() < 1e-6,
        "{name}: {seconds} s of slices"
    );
    assert_eq!(series.bytes.len(), series.seconds.len(), "{name}");
    assert!((1..=20).contains(&series.bytes.len()), "{name}: {series:?}");
    // Slices end at fixed times: a late wake-up lengthens one and shortens
    // the next, but their planned length is 10 ms or more.
    let planned = run.seconds / series.seconds.len() as f64;
    assert!(planned >= 0.0099, "{name}: {series:?}");
}

/// The cell's cost runs, where the kernel counted them, hold together and
/// came after its timed runs; where there is none, the cell says why.
fn assert_costs_consistent(name: &str, cell: &Cell, seen: Seen) {
    if cell.cost_runs.is_empty() {
        assert!(
            cell.cost_absent.as_ref().is_some_and(|why| !why.is_empty()),
            "{name}: no cost run and no reason"
        );
    }
    for run in &cell.cost_runs {
        assert_cost_run_consistent(name, cell, run, seen);
    }
}

fn assert_cost_run_consistent(name: &str, cell: &Cell, run: &Run, seen: Seen) {
    assert!(cell.runs.iter().all(|r| r.order < run.order), "{name}");
    let sides = match seen {
        Seen::Both => vec![run.server_cost, run.client_cost],
        Seen::Client => vec![run.client_cost],
        Seen::Neither => Vec::new(),
    };
    for cost in sides {
        let c =
            cost.unwrap_or_else(|| panic!("{name}: a side not counted: {:?}", cell.cost_absent));
        assert!(
            c.syscalls >= c.reads + c.writes + c.waits + c.futex && c.syscalls > 0,
            "{name}: {c:?}"
        );
    }
}

/// The round-trip times count the blocks of the window, their percentiles
/// rise, and the histogram they come from gives them back.
fn assert_rtt_consistent(name: &str, rtt: &Rtt, blocks: f64, in_flight: usize) {
    // A block that straddles a window edge is counted by bytes or by time, not both.
    assert!(
        (rtt.count as f64 - blocks).abs() <= in_flight as f64 + 1.0,
        "{name}: {} round trips for {blocks} blocks",
        rtt.count
    );
    let p = [
        rtt.p50_us,
        rtt.p90_us,
        rtt.p95_us,
        rtt.p99_us,
        rtt.p999_us,
        rtt.max_us,
    ];
    assert!(
        p[0] > 0.0 && p.windows(2).all(|w| w[0] <= w[1]),
        "{name}: {p:?}"
    );
    let histogram = rtt.histogram.as_deref().expect("a run keeps its histogram");
    let h = pingpong::latency::decode(histogram).unwrap();
    assert_eq!(h.len(), rtt.count, "{name}: histogram count");
    assert_eq!(
        h.value_at_quantile(0.99) as f64 / 1000.0,
        rtt.p99_us,
        "{name}: p99"
    );
}

/// CPU time adds up and stays within what the machine has; memory was used.
fn assert_usage_sane(name: &str, usage: Option<Usage>) {
    let usage = usage.unwrap_or_else(|| panic!("{name}: no usage"));
    let parts = usage.user_percent + usage.system_percent;
    assert!(
        (usage.cpu_percent - parts).abs() < 1e-6,
        "{name}: {usage:?}"
    );
    let cores = std::thread::available_parallelism().unwrap().get() as f64;
    // Clock ticks are 10 ms: a short window may round one tick up, and a
    // process that mostly waits (on a delayed link) may spend none.
    assert!(
        usage.cpu_percent >= 0.0 && usage.cpu_percent <= 100.0 * cores * 1.2,
        "{name}: {usage:?}"
    );
    assert!(usage.peak_rss_kib > 0, "{name}: {usage:?}");
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
    procfs::process::all_processes()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let stat = p.ok()?.stat().ok()?;
            Some(Proc {
                pid: stat.pid,
                parent: stat.ppid as u32,
                group: stat.pgrp,
                zombie: stat.state == 'Z',
            })
        })
        .collect()
}

/// Set for a test's compare, and so inherited by every process it starts:
/// what the test finds still running with its mark was left by it alone,
/// whatever other tests run beside it.
pub const MARK: &str = "PINGPONG_TEST_MARK";

/// Live processes (not zombies) that `hit` picks: pid and executable.
fn live(hit: impl Fn(&Proc) -> bool) -> Vec<String> {
    processes()
        .into_iter()
        .filter(|p| !p.zombie && hit(p))
        .filter_map(|p| {
            let exe = std::fs::read_link(format!("/proc/{}/exe", p.pid)).ok()?;
            Some(format!("{} {}", p.pid, exe.display()))
        })
        .collect()
}

/// Live processes in the process groups `groups`.
pub fn left_in_groups(groups: &[i32]) -> Vec<String> {
    live(|p| groups.contains(&p.group))
}

/// Live processes whose environment holds [`MARK`]`=mark`.
pub fn left_marked(mark: &str) -> Vec<String> {
    let entry = format!("{MARK}={mark}");
    live(|p| {
        std::fs::read(format!("/proc/{}/environ", p.pid))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == entry.as_bytes()))
    })
}

/// Debian's chromium, which `scripts/test.sh` installs where it is missing.
fn chromium() -> PathBuf {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| which::which(name).ok())
        .expect("no chromium: scripts/test.sh installs Debian's chromium package")
}

/// A page as a real browser made it, and what its console said.
pub struct Browsed {
    pub dom: String,
    /// The console's messages, as chromium logs them.
    pub console: Vec<String>,
}

impl Browsed {
    /// What the page's script wrote into `#self-check` once loaded.
    pub fn self_check(&self) -> &str {
        self.dom
            .split("<pre id=\"self-check\">")
            .nth(1)
            .and_then(|rest| rest.split("</pre>").next())
            .expect("the page's self-check ran")
    }
}

/// Opens `page` in headless chromium with a profile of its own, no
/// network, and its console logged.
pub fn browse(page: &Path, profile: &Path) -> Browsed {
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("running chromium");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    Browsed {
        dom: String::from_utf8_lossy(&output.stdout).into_owned(),
        console: stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .map(String::from)
            .collect(),
    }
}
