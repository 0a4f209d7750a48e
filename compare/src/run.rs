//! `compare run`: every implementation at every load, repetitions interleaved,
//! the results file saved after every repetition, the tables at the end.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use pingpong::protocol::MAX_IN_FLIGHT;

use crate::cli::RunArgs;
use crate::external::External;
use crate::implementations::{self, Variant};
use crate::matrix;
use crate::placement::{self, Pin};
use crate::progress::Progress;
use crate::results::{self, Built, Config, Host, Remote, Results, Rtt, Run, Status, Suite};
use crate::runner::{self, ClientMeasurement, Measurement, Program, Site, Spec};
use crate::{binaries, environment, remote, report};

/// What a finished run found.
pub enum Outcome {
    AllOk,
    SomeFailed,
    /// Stopped by Ctrl-C or SIGTERM; what it measured is saved.
    Interrupted,
}

/// Set by Ctrl-C or SIGTERM; the run stops after saving what it has.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

pub fn run(args: RunArgs) -> Result<Outcome> {
    // The repetition in flight dies with its processes; nothing outlives the run.
    ctrlc::set_handler(|| {
        INTERRUPTED.store(true, Ordering::SeqCst);
        runner::kill_all();
    })
    .context("installing the Ctrl-C handler")?;
    let (mut results, out) = match &args.resume {
        Some(dir) => (resume(dir)?, dir.clone()),
        None => fresh(&args)?,
    };
    let path = out.join("results.json");
    let config = results.config.clone();
    let plan = Plan::of(&config)?;
    let most = config.loads.iter().map(|l| l.connections).max();
    check_connection_limits(most.context("the run has no loads")?)?;
    let cpus = placement::available_cpus()?;
    plan.pin.check(&cpus)?;

    let mut needed = plan.servers.clone();
    needed.extend(plan.client.clone());
    let bins = binaries::locate(&needed, args.bin_dir.as_deref())?;
    let built = |v: &Variant| Built {
        variant: v.clone(),
        version: match v {
            Variant::Ours { .. } => bins[&v.name()].version.clone(),
            Variant::External(e) => e.version.clone(),
        },
    };
    let program = |name: &str| match &plan.variants[name] {
        Variant::Ours { .. } => Program::Ours(&bins[name].path),
        Variant::External(e) => Program::External(e),
    };
    let mut paths: HashMap<String, PathBuf> = bins
        .iter()
        .map(|(n, b)| (n.clone(), b.path.clone()))
        .collect();
    for external in &plan.externals {
        for (side, path) in external.programs()? {
            paths.insert(format!("{} {side}", external.name), path);
        }
    }
    let suite = environment::suite(&paths, args.bin_dir.is_none())?;
    if args.resume.is_some() && suite.binaries != results.suite.binaries {
        bail!(
            "the binaries differ from those the run in {} started with: finish it with the \
             same build (--bin-dir), or start a new run",
            out.display()
        );
    }
    results.suite = suite;
    let local_bins = bins
        .values()
        .next()
        .and_then(|b| b.path.parent())
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let (site, server_host) = remote::site(config.remote.as_ref(), &local_bins)?;
    if args.resume.is_none() {
        results.host = environment::host(cpus.clone());
        results.server_host = server_host;
    }
    // Made once the run can start (no empty folder for a refused one), and
    // saved before the first cell: an unwritable folder fails now, not after minutes.
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    results.save(&path)?;

    let workloads = config.workloads().len();
    let several = workloads > 1;
    let total = workloads * config.loads.len() * config.repeat * plan.servers.len();
    let done: usize = results.cells.iter().map(|c| c.runs.len()).sum();
    let mut progress = Progress::new(total, done, args.quiet);
    progress.note(&format!(
        "{total} runs: {workloads} workload(s) x {} loads x {} implementations x {} repetitions, \
         {:.2} s each at least; results in {}",
        config.loads.len(),
        plan.servers.len(),
        config.repeat,
        config.warmup + config.seconds,
        path.display()
    ));
    if let Site::Given(addr) = site {
        progress.note(&format!(
            "note: the server at {addr} was started by hand: its threads, block, window and work are \
             what it was started with"
        ));
    }
    // With the server on another host, every CPU here is the client's.
    let place = |threads| match site {
        Site::Local => plan.pin.place(&cpus, threads),
        _ => plan.pin.place_client(&cpus, threads),
    };
    if config.loads.iter().any(|l| place(l.threads).oversubscribed) {
        progress.note(&format!(
            "note: {} CPUs available: loads with more threads than CPUs per side are oversubscribed (marked *)",
            cpus.len()
        ));
    }

    let started = Instant::now();
    let mut order = results
        .cells
        .iter()
        .flat_map(|c| c.runs.iter().map(|r| r.order))
        .max()
        .unwrap_or(0);
    let matrix = config
        .workloads()
        .into_iter()
        .flat_map(|w| config.loads.iter().map(move |l| (w, *l)));
    'matrix: for (workload, load) in matrix {
        let placement = place(load.threads);
        let cells: Vec<usize> = plan
            .servers
            .iter()
            .map(|server| {
                let client = built(plan.client.as_ref().unwrap_or(server));
                results.cell_index(&built(server), &client, load, workload, &placement)
            })
            .collect();
        // Repetitions interleave the implementations (A B C, A B C, ...), so that
        // the machine's drift over time hits every implementation alike.
        for repetition in 1..=config.repeat {
            for &i in &cells {
                let cell = &results.cells[i];
                if cell.runs.len() >= repetition {
                    continue;
                }
                let what = format!(
                    "{}{:>2} threads {:>5} connections  {:<12} run {repetition}/{}",
                    if several {
                        format!("{}, ", workload.label())
                    } else {
                        String::new()
                    },
                    load.threads,
                    load.connections,
                    cell.runtime,
                    config.repeat
                );
                if interrupted() {
                    break 'matrix;
                }
                if cell.status != Status::Ok {
                    progress.finished(&format!("{what}  skipped: the cell has no figure already"));
                    continue;
                }
                progress.start(&what);
                order += 1;
                let spec = Spec {
                    server: program(&cell.runtime),
                    client: program(&cell.client),
                    site: &site,
                    threads: load.threads,
                    connections: load.connections,
                    block: workload.block,
                    window: workload.window,
                    work: config.work,
                    warmup: Duration::from_secs_f64(config.warmup),
                    seconds: Duration::from_secs_f64(config.seconds),
                    latency: plan.latency,
                    placement: &placement,
                };
                let outcome =
                    runner::run_once(&spec).and_then(|m| run_of(order, workload.block, m));
                if interrupted() {
                    // Killed by the interrupt: not a fault of the implementation.
                    break 'matrix;
                }
                let cell = &mut results.cells[i];
                match outcome {
                    Ok(run) => {
                        progress.finished(&format!("{what}  {}", brief(&run)));
                        cell.push(run, plan.noisy_percent);
                    }
                    Err(e) => match e.downcast::<runner::Unavailable>() {
                        Ok(u) => {
                            progress.finished(&format!("{what}  unavailable: {u}"));
                            cell.set_unavailable(u.short.clone(), u.to_string());
                        }
                        Err(e) => {
                            progress.finished(&format!("{what}  FAILED: {e:#}"));
                            cell.fail(format!("{e:#}"));
                        }
                    },
                }
                results.save(&path)?;
            }
        }
    }
    progress.finish();
    if interrupted() {
        results.save(&path)?;
        let runs: usize = results.cells.iter().map(|c| c.runs.len()).sum();
        eprintln!(
            "interrupted: {runs} of {total} runs saved in {}; continue with: compare run --resume {}",
            path.display(),
            out.display()
        );
        return Ok(Outcome::Interrupted);
    }
    results.config.ended = Some(chrono::Utc::now().to_rfc3339());
    results.save(&path)?;

    print!("{}", report::terminal::render(&results));
    let reference = report::reference(&results, None)?;
    let files = report::write(&results, &report::Format::ALL, &out, &reference)?;
    println!(
        "\n{} runs in {:.0} s; results: {}; report: {}",
        total - done,
        started.elapsed().as_secs_f64(),
        path.display(),
        files
            .iter()
            .find(|f| f.extension().is_some_and(|e| e == "html"))
            .unwrap_or(&path)
            .display()
    );
    // An unavailable runtime is a fact of the machine, reported, not a failure.
    Ok(
        if results.cells.iter().all(|c| c.status != Status::Failed) {
            Outcome::AllOk
        } else {
            Outcome::SomeFailed
        },
    )
}

/// A new run's results (no cells yet) and its folder.
fn fresh(args: &RunArgs) -> Result<(Results, PathBuf)> {
    let externals = args
        .external
        .iter()
        .map(|arg| External::from_arg(arg).map(Arc::new))
        .collect::<Result<Vec<_>>>()?;
    for (i, e) in externals.iter().enumerate() {
        if implementations::find(&e.name, &[]).is_ok() {
            bail!(
                "--external {}: the name is one of ours; choose another",
                e.name
            );
        }
        if externals[..i].iter().any(|other| other.name == e.name) {
            bail!("--external names {} twice", e.name);
        }
    }
    let runtimes: Vec<Variant> = if args.runtimes.is_empty() {
        implementations::ALL
            .iter()
            .map(Variant::from)
            .chain(externals.iter().cloned().map(Variant::External))
            .collect()
    } else {
        args.runtimes
            .iter()
            .map(|n| Variant::parse(n, &externals))
            .collect::<Result<_>>()?
    };
    if args.server.is_some() && args.runtimes.len() != 1 {
        bail!(
            "--server runs one implementation's server, started by hand: name it alone in --runtimes"
        );
    }
    let names: Vec<String> = runtimes.iter().map(Variant::name).collect();
    if let Some(twice) = names
        .iter()
        .enumerate()
        .find_map(|(i, n)| names[..i].contains(n).then_some(n))
    {
        bail!("--runtimes names {twice} twice");
    }
    let client = args
        .client
        .as_deref()
        .map(|c| Variant::parse(c, &externals))
        .transpose()?;
    let loads = match (&args.threads[..], &args.connections[..]) {
        ([], []) => matrix::muduo(),
        ([], connections) => matrix::cross(&[1], connections),
        (threads, []) => matrix::cross(threads, &[100, 1000]),
        (threads, connections) => matrix::cross(threads, connections),
    };
    for &block in &args.block {
        for &window in &args.window {
            if block * window > MAX_IN_FLIGHT {
                bail!(
                    "--block {block} with --window {window} puts {} bytes in flight per connection; \
                     the most is {MAX_IN_FLIGHT}",
                    block * window
                );
            }
        }
    }
    let out = args.out.clone().unwrap_or_else(default_out);
    let results = Results {
        schema: results::SCHEMA,
        suite: Suite::default(),
        host: Host::default(),
        server_host: None,
        config: Config {
            runtimes: names,
            client: client.as_ref().map(Variant::name),
            loads,
            block: args.block[0],
            blocks: args.block.clone(),
            windows: args.window.clone(),
            work: args.work,
            seconds: args.seconds,
            warmup: args.warmup,
            repeat: args.repeat,
            command: std::env::args().collect::<Vec<_>>().join(" "),
            started: chrono::Utc::now().to_rfc3339(),
            ended: None,
            pin: Some(args.pin.to_string()),
            noisy_percent: Some(args.noisy),
            latency: Some(!args.no_latency),
            resumed: Vec::new(),
            // The ones the run names: an unused file is not the run's business.
            externals: externals
                .iter()
                .filter(|e| runtimes.iter().chain(&client).any(|v| v.name() == e.name))
                .map(|e| e.as_ref().clone())
                .collect(),
            remote: remote::record(
                args.server.as_deref(),
                args.remote.as_deref(),
                args.remote_bin_dir.as_deref(),
            ),
        },
        cells: Vec::new(),
    };
    Ok((results, out))
}

/// The results of an interrupted run, to continue.
fn resume(dir: &Path) -> Result<Results> {
    let mut results = Results::load(&dir.join("results.json"))?;
    results.config.resumed.push(chrono::Utc::now().to_rfc3339());
    results.config.ended = None;
    Ok(results)
}

/// A run's options, resolved.
struct Plan {
    servers: Vec<Variant>,
    client: Option<Variant>,
    externals: Vec<Arc<External>>,
    /// Every implementation of the run, by name.
    variants: HashMap<String, Variant>,
    pin: Pin,
    noisy_percent: f64,
    latency: bool,
}

impl Plan {
    fn of(config: &Config) -> Result<Self> {
        let externals: Vec<Arc<External>> =
            config.externals.iter().cloned().map(Arc::new).collect();
        let parse = |name: &str| Variant::parse(name, &externals);
        let servers: Vec<Variant> = config
            .runtimes
            .iter()
            .map(|n| parse(n))
            .collect::<Result<_>>()?;
        let client = config.client.as_deref().map(parse).transpose()?;
        if let (Some(Remote::Ssh { .. }), Some(Variant::External(e))) = (
            &config.remote,
            servers.iter().find(|v| matches!(v, Variant::External(_))),
        ) {
            bail!(
                "--remote starts our servers only; start {}'s server on the other host by hand \
                 and use --server",
                e.name
            );
        }
        let variants = servers
            .iter()
            .chain(&client)
            .map(|v| (v.name(), v.clone()))
            .collect();
        Ok(Self {
            servers,
            client,
            externals,
            variants,
            pin: config
                .pin
                .as_deref()
                .unwrap_or("auto")
                .parse()
                .map_err(anyhow::Error::msg)?,
            noisy_percent: config.noisy_percent.unwrap_or(10.0),
            latency: config.latency.unwrap_or(true),
        })
    }
}

/// A repetition's record, from what the runner measured.
fn run_of(order: usize, block: usize, m: Measurement) -> Result<Run> {
    let (bytes, seconds) = match &m.client {
        ClientMeasurement::Ours(r) => (r.bytes, r.seconds),
        ClientMeasurement::External { bytes, seconds, .. } => (*bytes, *seconds),
    };
    ensure!(
        bytes > 0,
        "no byte came back inside the {seconds:.2} s window: at this load a round trip takes \
         longer than the warm-up and the window; lengthen --warmup or --seconds"
    );
    let mib_per_s = bytes as f64 / seconds / (1 << 20) as f64;
    let mut run = Run {
        order,
        mib_per_s,
        messages_per_s: bytes as f64 / block as f64 / seconds,
        bytes,
        seconds,
        connect_seconds: None,
        verified_connections: None,
        fairness: None,
        starved_connections: None,
        rtt: None,
        mib_per_server_cpu_s: m
            .server_usage
            .filter(|u| u.cpu_percent > 0.0)
            .map(|u| mib_per_s / (u.cpu_percent / 100.0)),
        server_usage: m.server_usage,
        client_usage: m.client_usage,
        server_cpus: m.server_cpus,
        client_cpus: Vec::new(),
    };
    match m.client {
        ClientMeasurement::Ours(r) => {
            run.connect_seconds = Some(r.connect_seconds);
            run.verified_connections = Some(r.verified_connections);
            run.fairness = r.fairness;
            run.starved_connections = Some(r.starved_connections);
            run.rtt = r.rtt_histogram.map(Rtt::from_histogram).transpose()?;
            run.client_cpus = r.cpus;
        }
        ClientMeasurement::External { cpus, .. } => run.client_cpus = cpus,
    }
    Ok(run)
}

/// A run's outcome in one line.
fn brief(run: &Run) -> String {
    let mut line = format!("{:>9.1} MiB/s", run.mib_per_s);
    if let Some(rtt) = &run.rtt {
        line += &format!("  p99 {:>8.0} us", rtt.p99_us);
    }
    if let (Some(s), Some(c)) = (run.server_usage, run.client_usage) {
        line += &format!(
            "  CPU server {:>4.0}% client {:>4.0}%",
            s.cpu_percent, c.cpu_percent
        );
    }
    line
}

/// Fails before the first cell when the largest load cannot fit the machine's limits.
fn check_connection_limits(connections: usize) -> Result<()> {
    // Each process raises its own soft limit; the hard limit is what counts.
    pingpong::limits::check_nofile(connections)?;
    if let Ok(range) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range") {
        let ports: Vec<usize> = range
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if let [low, high] = ports[..]
            && connections > high - low + 1
        {
            bail!(
                "{connections} connections to one server need as many local ports, but \
                 net.ipv4.ip_local_port_range allows {}",
                high - low + 1
            );
        }
    }
    Ok(())
}

fn default_out() -> PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let base = Path::new("results").join(stamp.to_string());
    (1..)
        .map(|n| {
            if n == 1 {
                base.clone()
            } else {
                base.with_extension(n.to_string())
            }
        })
        .find(|p| !p.exists())
        .expect("a free folder name")
}
