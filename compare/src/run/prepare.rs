//! Everything a run needs before its first repetition, checked before any
//! of it starts: the machine's limits, the CPUs, the programs (built here),
//! their hashes, where the servers go, and the results folder.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use anyhow::{Context, Result, bail};
use pingpong::server::CHANNEL;

use crate::plan::Plan;
use measure::binaries;
use measure::callgrind::Callgrind;
use measure::counters::{self, Counters};
use measure::environment;
use measure::pair::ProcessPair;
use measure::remote::{self, ServerAt};
use measure::versions;
use model::defaults;
use model::matrix::Load;
use model::placement::{self, Placement};
use model::program::{Program, Programs};
use model::results::Results;
use model::revision;

/// Where each load's processes run, by thread count.
pub type Placements = HashMap<Load, Placement>;

/// A run ready to start.
pub struct Prepared {
    pub programs: Programs,
    pub placements: Placements,
    pub pair: ProcessPair,
    /// Whether the kernel can count the processes' system calls, or why not.
    pub counting: Result<(), String>,
    /// What the user should know before it starts.
    pub notes: Vec<String>,
}

/// How a run's programs are found or built.
pub struct Build<'a> {
    /// Prebuilt binaries, instead of a build from the source tree.
    pub bin_dir: Option<&'a Path>,
    /// The cargo profile of a build from the source tree.
    pub profile: &'a str,
}

/// Prepares `plan` and records where it runs in `results` (the machine only
/// for a new run: a resumed one keeps its own); saves them into `out`.
pub fn prepare(plan: &Plan, results: &mut Results, out: &Path, build: &Build) -> Result<Prepared> {
    let config = &results.config;
    let most = config.loads.iter().map(|l| l.connections).max();
    check_connection_limits(most.context("the run has no loads")?)?;
    let cpus = placement::available_cpus()?;
    plan.pin.check(&cpus)?;

    let swept: Vec<String> = config.releases.iter().flat_map(|r| r.names()).collect();
    let programs = binaries::locate(
        &plan.implementations(),
        &swept,
        build.bin_dir,
        build.profile,
    )?;
    let suite = environment::suite(&files(&programs)?, build.bin_dir.is_none(), build.profile)?;
    let resumed = !config.resumed.is_empty();
    if resumed && suite.binaries != results.suite.binaries {
        bail!(
            "the binaries differ from those the run in {} started with: finish it with the \
             same build (--bin-dir), or start a new run",
            out.display()
        );
    }
    let local_bins = programs
        .values()
        .find_map(|p| match p {
            Program::Binary { path, .. } => path.parent(),
            Program::External(_) | Program::Unbuilt { .. } => None,
        })
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let (server_at, server_host) = remote::server_at(config.remote.as_ref(), &local_bins)?;
    let client_hosts =
        remote::client_hosts(&config.client_hosts, config.remote.as_ref(), &local_bins)?;
    let mut notes = Vec::new();
    if let ServerAt::Given(addr) = server_at {
        notes.push(format!(
            "note: the server at {addr} was started by hand: its threads, block, window and work are \
             what it was started with"
        ));
    }
    // With the server on another host, every CPU here is the client's.
    let placements: Placements = config
        .loads
        .iter()
        .map(|l| {
            let placement = match server_at {
                ServerAt::Local => plan.pin.place(&cpus, l.threads, l.client_threads()),
                _ => plan.pin.place_client(&cpus, l.client_threads()),
            };
            (*l, placement)
        })
        .collect();
    if placements.values().any(|p| p.oversubscribed) {
        notes.push(format!(
            "note: {} CPUs available: loads with more threads than CPUs per side are oversubscribed (marked *)",
            cpus.len()
        ));
    }
    results.suite = suite;
    if results.config.counted_blocks.is_some() {
        results.suite.valgrind = Callgrind::find().ok().map(|c| c.version);
    }
    if !resumed {
        results.host = environment::host(cpus);
        results.server_host = server_host;
    }
    // Made once the run can start (no empty folder for a refused one), and
    // saved before the first cell: an unwritable folder fails now, not after minutes.
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    results.suite.locks = keep_locks(&programs, out)?;
    keep_binaries(&programs, &results.suite.binaries, out);
    if results.config.shapes.iter().any(|s| s.hands_off()) {
        results.suite.channel = channel(&programs, build.bin_dir.is_none());
    }
    results.save(&model::results::file::in_folder(out))?;
    let counting = match results.config.cost {
        Some(false) => Err("--no-cost: no cost run was asked for".into()),
        _ if !client_hosts.is_empty() => {
            Err("the clients run on other hosts: the kernel here counts neither side".into())
        }
        _ => Counters::warm().map(drop),
    };
    if counters::mounted_tracefs() {
        eprintln!(
            "mounted tracefs at /sys/kernel/tracing (compare runs as root; the cost columns \
             read the kernel's system-call tracepoints there)"
        );
    }
    Ok(Prepared {
        programs,
        placements,
        pair: ProcessPair::new(server_at, client_hosts, results.config.counted_blocks),
        counting,
        notes,
    })
}

/// The files the run's programs execute, by the name the results hash them under.
fn files(programs: &Programs) -> Result<BTreeMap<String, std::path::PathBuf>> {
    let mut files = BTreeMap::new();
    for (name, program) in programs {
        match program {
            Program::Binary { path, .. } => {
                files.insert(name.clone(), path.clone());
            }
            Program::External(e) => {
                for (side, path) in e.programs()? {
                    files.insert(format!("{name} {side}"), path);
                }
            }
            Program::Unbuilt { .. } => {}
        }
    }
    Ok(files)
}

/// Copies the Cargo.lock of each isolated build into `out/locks/`, named by
/// its hash (one file for builds that locked alike); their hashes, by
/// implementation.
fn keep_locks(programs: &Programs, out: &Path) -> Result<BTreeMap<String, String>> {
    let mut locks = BTreeMap::new();
    for (name, program) in programs {
        let Program::Binary {
            lock: Some(lock), ..
        } = program
        else {
            continue;
        };
        let text = std::fs::read(lock).with_context(|| format!("reading {}", lock.display()))?;
        let hash = revision::sha256_hex(&text);
        let dir = out.join("locks");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(format!("{hash}.lock")), &text)?;
        locks.insert(name.clone(), hash);
    }
    Ok(locks)
}

/// Keeps each of our binaries beside the results, hard-linked as
/// `out/binaries/HASH/NAME`: `compare explain` between two runs runs them
/// again after the source tree has built others. Linked, not copied: a
/// copy of every binary would take more room than the results (tens of
/// megabytes a run); results on another file system than the build keep
/// none, which is said.
fn keep_binaries(programs: &Programs, hashes: &BTreeMap<String, String>, out: &Path) {
    for (name, program) in programs {
        let (Program::Binary { path, .. }, Some(hash)) = (program, hashes.get(name)) else {
            continue;
        };
        let kept = binaries::kept(out, hash, path);
        let keep = || -> std::io::Result<()> {
            if kept.exists() {
                return Ok(());
            }
            std::fs::create_dir_all(kept.parent().expect("a kept binary's folder"))?;
            std::fs::hard_link(path, &kept)
        };
        if let Err(e) = keep() {
            eprintln!(
                "note: {name}'s binary is not kept beside the results (a link to it: {e}): \
                 explaining this run against another needs today's build to be the one it ran"
            );
        }
    }
}

/// The channel the shapes hand blocks off through, as every build that
/// runs locked pingpong's: the source tree's lock (where the binaries were
/// built here) and each isolated build's. None where no lock says.
fn channel(programs: &Programs, built_here: bool) -> Option<String> {
    let tree = defaults::source_tree()
        .filter(|_| built_here)
        .map(|root| root.join("Cargo.lock"));
    let isolated = programs.values().filter_map(|p| match p {
        Program::Binary { lock, .. } => lock.clone(),
        Program::External(_) | Program::Unbuilt { .. } => None,
    });
    let versions: BTreeSet<String> = tree
        .into_iter()
        .chain(isolated)
        .filter_map(|lock| versions::locked_version(&lock, "pingpong", CHANNEL).ok())
        .collect();
    (!versions.is_empty()).then(|| {
        let versions: Vec<String> = versions.into_iter().collect();
        format!("{CHANNEL} {}", versions.join(", "))
    })
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
