//! An external program on this host (muduo, asio, anything that speaks the
//! protocol): started with its own command line, its server ready once it
//! accepts a connection, its client's throughput read from what it prints.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use pingpong::client::ClientConfig;

use super::mode::{MARGIN, Mode, READY_DEADLINE};
use super::ours::{client_config, threads};
use super::{Place, Server};
use crate::child::{Child, Counting};
use crate::counters::Edge;
use crate::repetition::{ClientMeasurement, Job, Measurement, RepetitionError, Side};
use crate::usage::Sample;
use model::external::{self, External};

/// An external program, here.
pub struct Program<'a>(pub &'a External);

impl Place for Program<'_> {
    fn server(&self, job: &Job, mode: Mode, counting: Counting) -> Result<Server, RepetitionError> {
        let deadline = Instant::now() + mode.ready_deadline();
        Ok(external_server(job, self.0, deadline, counting)?)
    }

    fn client(
        &self,
        job: &Job,
        server: &mut Server,
        _: Mode,
        _: Counting,
    ) -> Result<Measurement, RepetitionError> {
        Ok(external_client(job, self.0, server)?)
    }
}

fn values<'h>(job: &Job, side: Side, host: &'h str, port: u16) -> external::Values<'h> {
    external::Values {
        host,
        port,
        threads: threads(job, side),
        block: job.workload.block,
        connections: job.load.connections,
        seconds: job.seconds.as_secs_f64(),
        window: job.workload.window,
        work: job.work,
    }
}

/// An external server on a free port here, once it accepts a connection:
/// it has no ready line.
fn external_server(
    job: &Job,
    e: &External,
    deadline: Instant,
    counting: Counting,
) -> Result<Server> {
    let port = free_port()?;
    let command = e.server_command(&values(job, Side::Server, "127.0.0.1", port))?;
    let mut process = Child::spawn(
        "server",
        Path::new(&command[0]),
        &command[1..],
        &job.placement.server_cpus,
        counting,
    )?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    accepting(&mut process, addr, deadline, "server")?;
    let pid = process.id();
    Ok(Server {
        process: Some(process),
        pid: Some(pid),
        cpus: pingpong::affinity::of(pid).unwrap_or_default(),
        addr,
        certificate: None,
    })
}

/// Waits until `process`, started as `role`, accepts a connection on
/// `addr`: the ready signal of a program that prints none.
pub(crate) fn accepting(
    process: &mut Child,
    addr: SocketAddr,
    deadline: Instant,
    role: &str,
) -> Result<()> {
    loop {
        if let Some(status) = process.exited()? {
            let stderr = process.stderr_tail();
            bail!("{role} start: the {role} exited ({status}){stderr}");
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{role} start: nothing listened on {addr} within {:.1} s; killed",
                READY_DEADLINE.as_secs_f64()
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// A port free on loopback now, for an external server to listen on.
pub(crate) fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// An external client runs for its time and prints its throughput; the
/// server is sampled over the client's whole run.
fn external_client(job: &Job, e: &External, server: &mut Server) -> Result<Measurement> {
    let host = server.addr.ip().to_string();
    let values = values(job, Side::Client, &host, server.addr.port());
    let command = e.client_command(&values)?;
    let opened = server.pid.and_then(|pid| Sample::take(pid).ok());
    let counted_from = server.counts(Edge::Opens);
    let mut client = Child::spawn(
        "client",
        Path::new(&command[0]),
        &command[1..],
        &job.placement.client_cpus,
        Counting::Off("an external client announces no window"),
    )?;
    let cpus = pingpong::affinity::of(client.id()).unwrap_or_default();
    let config = ClientConfig {
        warmup: Duration::ZERO,
        latency: false,
        arrival: e.client.arrival.unwrap_or_default(),
        ..client_config(job, server.addr)
    };
    let (status, stdout, stderr) = client.output(Instant::now() + config.deadline() + MARGIN)?;
    let closed = server.pid.and_then(|pid| Sample::take(pid).ok());
    let counted_to = server.counts(Edge::Closes);
    ensure!(
        status.success(),
        "client: {} exited with {status}; it printed: {}",
        command[0],
        external::tail(&format!("{stdout}{stderr}"))
    );
    Ok(Measurement {
        client: ClientMeasurement::External {
            bytes: e.bytes_read(&stdout, &stderr, values.seconds)?,
            seconds: values.seconds,
            cpus,
        },
        server_usage: opened.zip(closed).map(|(a, b)| a.until(&b)),
        client_usage: None,
        server_cpus: server.cpus.clone(),
        server_cost: match (counted_from, counted_to) {
            (Ok(a), Ok(b)) => Some(b.since(&a)),
            _ => None,
        },
        client_cost: None,
        cost_absent: Some("an external client announces no window".into()),
        counted: None,
        tcp: None,
        accept_queue: None,
        served: None,
        client_hosts: None,
    })
}
