//! `compare run`: every implementation at every load, repetitions interleaved,
//! the results file saved after every repetition, the tables at the end.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::cli::RunArgs;
use crate::implementations::{self, Implementation};
use crate::matrix;
use crate::placement::{self, place};
use crate::results::{self, Cell, Config, Host, Results, Run, Status, Suite};
use crate::runner::{self, Spec};
use crate::{binaries, table};

/// What a finished run found.
pub enum Outcome {
    AllOk,
    SomeFailed,
}

pub fn run(args: RunArgs) -> Result<Outcome> {
    let servers: Vec<&Implementation> = if args.runtimes.is_empty() {
        implementations::ALL.iter().collect()
    } else {
        args.runtimes
            .iter()
            .map(|n| implementations::find(n))
            .collect::<Result<_>>()?
    };
    let client = args
        .client
        .as_deref()
        .map(implementations::find)
        .transpose()?;
    let loads = match (&args.threads[..], &args.connections[..]) {
        ([], []) => matrix::muduo(),
        ([], connections) => matrix::cross(&[1], connections),
        (threads, []) => matrix::cross(threads, &[100, 1000]),
        (threads, connections) => matrix::cross(threads, connections),
    };
    let most = loads.iter().map(|l| l.connections).max().expect("a load");
    check_connection_limits(most)?;
    let cpus = placement::available_cpus()?;

    let out = args.out.clone().unwrap_or_else(default_out);
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let path = out.join("results.json");

    let mut needed = servers.clone();
    needed.extend(client);
    let bins = binaries::locate(&needed, args.bin_dir.as_deref())?;

    let mut results = Results {
        schema: results::SCHEMA,
        suite: suite(),
        host: host(cpus.clone()),
        config: Config {
            runtimes: servers.iter().map(|i| i.name.to_string()).collect(),
            client: client.map(|c| c.name.to_string()),
            loads: loads.clone(),
            block: args.block,
            seconds: args.seconds,
            warmup: args.warmup,
            repeat: args.repeat,
            command: std::env::args().collect::<Vec<_>>().join(" "),
            started: chrono::Utc::now().to_rfc3339(),
        },
        cells: Vec::new(),
    };
    // Saved before the first cell: an unwritable folder fails now, not after minutes.
    results.save(&path)?;

    let total = loads.len() * args.repeat * servers.len();
    let per_run = args.warmup + args.seconds;
    eprintln!(
        "{total} runs: {} loads x {} implementations x {} repetitions (at least {:.0} s); results in {}",
        loads.len(),
        servers.len(),
        args.repeat,
        total as f64 * per_run,
        path.display()
    );
    if loads.iter().any(|l| place(&cpus, l.threads).oversubscribed) {
        eprintln!(
            "note: {} CPUs available: loads with more than {} thread(s) per side are oversubscribed (marked *)",
            cpus.len(),
            cpus.len() / 2
        );
    }

    let started = Instant::now();
    let mut order = 0;
    for load in &loads {
        let placement = place(&cpus, load.threads);
        let first = results.cells.len();
        for server in &servers {
            let client = client.unwrap_or(server);
            results.cells.push(Cell {
                runtime: server.name.into(),
                version: server.version().into(),
                model: server.model.into(),
                threads_matter: server.threads_matter && client.threads_matter,
                client: client.name.into(),
                client_version: client.version().into(),
                threads: load.threads,
                connections: load.connections,
                block: args.block,
                placement: placement.clone(),
                status: Status::Ok,
                error: None,
                unavailable: None,
                runs: Vec::new(),
                mib_per_s: None,
            });
        }
        // Repetitions interleave the implementations (A B C, A B C, ...), so that
        // the machine's drift over time hits every implementation alike.
        for repetition in 1..=args.repeat {
            for i in first..results.cells.len() {
                order += 1;
                let cell = &results.cells[i];
                let progress = format!(
                    "[{order:>4}/{total}] {:>2} threads {:>5} connections  {:<12} run {repetition}/{}",
                    load.threads, load.connections, cell.runtime, args.repeat
                );
                if cell.status != Status::Ok {
                    eprintln!("{progress}  skipped: the cell has no figure already");
                    continue;
                }
                let spec = Spec {
                    server: &bins[&format!("pingpong-{}", cell.runtime)],
                    client: &bins[&format!("pingpong-{}", cell.client)],
                    threads: load.threads,
                    connections: load.connections,
                    block: args.block,
                    warmup: Duration::from_secs_f64(args.warmup),
                    seconds: Duration::from_secs_f64(args.seconds),
                    placement: &placement,
                };
                let outcome = runner::run_once(&spec);
                let cell = &mut results.cells[i];
                match outcome {
                    Ok(r) => {
                        eprintln!("{progress}  {:>9.1} MiB/s", r.mib_per_s());
                        cell.push(Run {
                            order,
                            mib_per_s: r.mib_per_s(),
                            messages_per_s: r.messages_per_s(),
                            bytes: r.bytes,
                            seconds: r.seconds,
                            connect_seconds: r.connect_seconds,
                            verified_connections: r.verified_connections,
                        });
                    }
                    Err(e) => match e.downcast::<runner::Unavailable>() {
                        Ok(u) => {
                            eprintln!("{progress}  unavailable: {u}");
                            cell.set_unavailable(u.short.clone(), u.to_string());
                        }
                        Err(e) => {
                            eprintln!("{progress}  FAILED: {e:#}");
                            cell.fail(format!("{e:#}"));
                        }
                    },
                }
                results.save(&path)?;
            }
        }
    }

    print!("{}", table::render(&results));
    println!(
        "\n{total} runs in {:.0} s; results: {}",
        started.elapsed().as_secs_f64(),
        path.display()
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

fn suite() -> Suite {
    let commit = binaries::source_tree().and_then(|root| {
        let git = |args: &[&str]| {
            Command::new("git")
                .current_dir(&root)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let head = git(&["rev-parse", "HEAD"])?;
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        Some(if dirty { format!("{head}-dirty") } else { head })
    });
    Suite {
        version: env!("CARGO_PKG_VERSION").into(),
        commit,
    }
}

fn host(cpus: Vec<usize>) -> Host {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_string())
    };
    Host {
        cpus,
        kernel: read("/proc/sys/kernel/osrelease"),
        somaxconn: read("/proc/sys/net/core/somaxconn").and_then(|s| s.parse().ok()),
    }
}
