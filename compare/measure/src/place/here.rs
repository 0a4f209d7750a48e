//! Our binaries on this host: both sides pinned to their CPUs, sampled at
//! the window's edges as the client announces them, and counted by the
//! kernel where asked.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use anyhow::anyhow;
use pingpong::cli::{Cli, Command};
use pingpong::wire::{Line, Window};

use super::mode::{MARGIN, Mode, profiled_span};
use super::ours::{check_result, client_args, client_config, knobs, ready, server_args};
use super::{Place, Server};
use crate::child::{Child, Counting, EXIT_DEADLINE};
use crate::counters::Edge;
use crate::repetition::{ClientMeasurement, Job, Measurement, RepetitionError, Side};
use crate::usage::{Sample, Sampling};
use model::results::Cost;

/// One of our binaries, here.
pub struct Here<'a>(pub &'a Path);

impl Place for Here<'_> {
    fn server(&self, job: &Job, mode: Mode, counting: Counting) -> Result<Server, RepetitionError> {
        let deadline = Instant::now() + mode.ready_deadline();
        let args = server_args(job, SocketAddr::from(([127, 0, 0, 1], 0)));
        let (program, args) = mode.wrap(Side::Server, self.0, args);
        let cpus = &job.placement.server_cpus;
        let process = Child::spawn("server", &program, &args, cpus, counting)?;
        ready(process, deadline, None)
    }

    fn client(
        &self,
        job: &Job,
        server: &mut Server,
        mode: Mode,
        counting: Counting,
    ) -> Result<Measurement, RepetitionError> {
        our_client(job, self.0, server, mode, counting)
    }
}

fn our_client(
    job: &Job,
    bin: &Path,
    server: &mut Server,
    mode: Mode,
    counting: Counting,
) -> Result<Measurement, RepetitionError> {
    let mut config = client_config(job, server.addr);
    profiled_span(&mut config, mode);
    let client = client_args(job, &config, server)?;
    let args = Cli {
        command: Command::Client(client),
        knobs: knobs(job.client),
    }
    .to_args();
    let (program, args) = mode.wrap(Side::Client, bin, args);
    let mut client = Child::spawn(
        "client",
        &program,
        &args,
        &job.placement.client_cpus,
        counting,
    )?;
    // Both processes are sampled at the window's edges, as the client
    // announces them; each stage has its own deadline.
    let pids = [server.pid, Some(client.id())];
    let sample = || Sample::start(pids);
    let (mut opened, mut closed) = (None, None);
    let (mut counted_from, mut counted_to) = (None, None);
    let mut stage = "connecting and warm-up";
    let mut deadline = Instant::now()
        + config.connect_deadline()
        + config.warmup
        + config.first_round_deadline()
        + MARGIN;
    let result = loop {
        match client.next_line(deadline, stage, Line::parse)? {
            Line::Window(Window::Open) => {
                counted_from = Some([server.counts(Edge::Opens), client.counts(Edge::Opens)]);
                opened = Some(sample());
                stage = "measurement window";
                deadline = Instant::now() + config.window_deadline() + MARGIN;
            }
            Line::Window(Window::Closed) => {
                counted_to = Some([server.counts(Edge::Closes), client.counts(Edge::Closes)]);
                closed = Some(sample());
                stage = "shutdown";
                deadline = Instant::now() + config.drain_deadline() + MARGIN;
            }
            Line::Result(result) => break result,
            Line::Error(f) => return Err(RepetitionError::of_failure(Side::Client, f)),
            other => {
                return Err(anyhow!("client printed {other:?} instead of its result").into());
            }
        }
    };
    let (opened, closed) = (opened.map(Sampling::finish), closed.map(Sampling::finish));
    let usage = |side: usize| match (&opened, &closed) {
        (Some(a), Some(b)) => Some(a[side].as_ref()?.until(b[side].as_ref()?)),
        _ => None,
    };
    client.close_stdin();
    let status = client.wait(EXIT_DEADLINE)?;
    if !status.success() {
        return Err(anyhow!("exit: client exited with {status} after its result").into());
    }
    check_result(job, &result)?;
    let ([server_cost, client_cost], cost_absent) = costs(counted_from, counted_to);
    Ok(Measurement {
        server_usage: usage(0),
        client_usage: usage(1),
        server_cpus: server.cpus.clone(),
        client: ClientMeasurement::Ours(result),
        server_cost,
        client_cost,
        cost_absent,
        counted: None,
        tcp: None,
        accept_queue: None,
        served: None,
        client_hosts: None,
    })
}

/// What the kernel counted of each process between two readings, and the
/// first reason a side has none.
fn costs(
    opened: Option<[Result<Cost, String>; 2]>,
    closed: Option<[Result<Cost, String>; 2]>,
) -> ([Option<Cost>; 2], Option<String>) {
    let (Some(opened), Some(closed)) = (opened, closed) else {
        return ([None, None], None);
    };
    let mut absent = None;
    let mut side = |i: usize| match (&opened[i], &closed[i]) {
        (Ok(a), Ok(b)) => Some(b.since(a)),
        (Err(why), _) | (_, Err(why)) => {
            absent.get_or_insert_with(|| why.clone());
            None
        }
    };
    let cost = [side(0), side(1)];
    (cost, absent)
}
