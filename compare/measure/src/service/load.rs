//! One repetition of a service's load: the service started from its
//! file's command on a free port, pinned where asked; ready once it prints
//! its ready line (or, without one, accepts a connection); loaded by
//! `pingpong-load` for the warm-up and the window (closed loop, or open at
//! a rate); its CPU read over the
//! load's whole run; stopped (SIGTERM to its group). A service that exits,
//! is never ready or answers badly fails the repetition with what it said.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use pingpong_load::{Outcome, Plan};

use crate::child::{Child, Counting};
use crate::place::external::{accepting, free_port};
use crate::place::mode::{MARGIN, READY_DEADLINE};
use crate::usage::Sample;
use model::results::Usage;
use model::service::{Protocol, Service};

/// Where each side's program is and the CPUs it may run on (none: any).
pub struct Sides<'a> {
    pub service: &'a Path,
    pub load: &'a Path,
    pub service_cpus: &'a [usize],
    pub load_cpus: &'a [usize],
}

/// How much load, for how long.
pub struct Shape {
    /// The service's `{threads}`.
    pub threads: usize,
    pub connections: usize,
    pub load_threads: usize,
    pub warmup: Duration,
    pub seconds: Duration,
    /// The open loop's requests a second; none: the closed loop.
    pub rate: Option<f64>,
}

/// What one repetition measured.
#[derive(Debug)]
pub struct Loaded {
    pub outcome: Outcome,
    /// The service's, over the load's whole run.
    pub usage: Option<Usage>,
    /// The service's CPU time per good answer, over the load's whole run.
    pub cpu_ns_per_answer: Option<f64>,
}

/// The load's plan of `service`: its requests with their bodies read.
pub fn plan(service: &Service) -> Result<Plan> {
    let load = &service.load;
    let protocol = match load.protocol {
        Protocol::Http1 => pingpong_load::Protocol::Http1,
        Protocol::Tcp => pingpong_load::Protocol::Tcp,
        Protocol::Http2 => pingpong_load::Protocol::Http2,
    };
    let requests = (load.requests.iter())
        .map(|r| {
            Ok(pingpong_load::Request {
                method: r.method.clone(),
                path: r.path.clone(),
                headers: r.headers.clone().into_iter().collect(),
                body: service.body(r)?,
                weight: r.weight,
            })
        })
        .collect::<Result<_>>()?;
    Ok(Plan {
        protocol,
        requests,
        exchange: load.exchange.as_ref().map(|e| pingpong_load::Exchange {
            send: e.send.clone().into_bytes(),
            read_bytes: e.read_bytes,
            read_until: e.read_until.clone().map(String::into_bytes),
        }),
        expect: pingpong_load::Expect {
            status: load.expect.status,
            body_contains: load.expect.body_contains.clone(),
        },
    })
}

/// Loads `service` once, as `shape` says.
pub fn once(service: &Service, sides: &Sides, shape: &Shape) -> Result<Loaded> {
    let plan_file = tempfile::NamedTempFile::new().context("a file for the load's plan")?;
    std::fs::write(plan_file.path(), serde_json::to_vec(&plan(service)?)?)?;
    let port = free_port()?;
    let words = service.command(sides.service, port, shape.threads)?;
    let mut command = Command::new(&words[0]);
    command.args(&words[1..]).envs(&service.start.env);
    let counting = Counting::Off("a service's system calls are not counted yet");
    let mut server = Child::spawn_command("service", command, sides.service_cpus, counting)?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    ready(&mut server, service, addr)?;
    let before = Sample::take(server.id())?;
    let args = [
        "--plan".into(),
        plan_file.path().display().to_string(),
        "--connect".into(),
        addr.to_string(),
        "--connections".into(),
        shape.connections.to_string(),
        "--threads".into(),
        shape.load_threads.to_string(),
        "--warmup".into(),
        shape.warmup.as_secs_f64().to_string(),
        "--seconds".into(),
        shape.seconds.as_secs_f64().to_string(),
    ];
    let rate = shape
        .rate
        .map(|rate| ["--rate".to_string(), rate.to_string()]);
    let args: Vec<String> = args.into_iter().chain(rate.into_iter().flatten()).collect();
    let counting = Counting::Off("the load is not the process measured");
    let mut load = Child::spawn("load", sides.load, &args, sides.load_cpus, counting)?;
    let deadline = Instant::now() + shape.warmup + shape.seconds + pingpong_load::GRACE + MARGIN;
    let (status, stdout, stderr) = load.output(deadline)?;
    let after = Sample::take(server.id());
    if let Some(status) = server.exited()? {
        bail!(
            "the service exited during the load ({status}){}",
            server.stderr_tail()
        );
    }
    server.terminate()?;
    ensure!(
        status.success(),
        "the load exited with {status}: {}",
        stderr.trim()
    );
    let line = stdout.lines().last().unwrap_or_default();
    let outcome: Outcome =
        serde_json::from_str(line).with_context(|| format!("the load printed {line:?}"))?;
    judged(&outcome)?;
    let usage = after.ok().map(|after| before.until(&after));
    let cpu_ns_per_answer = (usage.as_ref())
        .and_then(|u| u.cpu_ns)
        .map(|ns| ns as f64 / outcome.all_answered as f64);
    Ok(Loaded {
        outcome,
        usage,
        cpu_ns_per_answer,
    })
}

/// Waits for the service's ready line, or for it to accept a connection.
fn ready(server: &mut Child, service: &Service, addr: SocketAddr) -> Result<()> {
    let deadline = Instant::now() + READY_DEADLINE;
    if let Some(text) = &service.start.ready {
        return server.next_line(deadline, "service start", |line| {
            line.contains(text).then_some(())
        });
    }
    accepting(server, addr, deadline, "service")
}

/// A repetition with a bad answer inside its window, or none good, fails:
/// a service answering errors is not the service to measure.
fn judged(outcome: &Outcome) -> Result<()> {
    let bad: u64 = outcome.errors.iter().map(|f| f.count).sum();
    let failures = |all: &[pingpong_load::Failures]| {
        (all.iter())
            .map(|f| format!("{} ({}): {}", f.kind, f.count, f.first))
            .collect::<Vec<_>>()
            .join("; ")
    };
    ensure!(
        bad == 0,
        "{bad} of {} answers in the window were bad: {}",
        bad + outcome.answered,
        failures(&outcome.errors)
    );
    ensure!(
        outcome.answered > 0,
        "no good answer in the window{}",
        match outcome.before_window.is_empty() {
            true => String::new(),
            false => format!("; before it: {}", failures(&outcome.before_window)),
        }
    );
    Ok(())
}
