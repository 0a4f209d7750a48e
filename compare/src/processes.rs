//! The real [`Runner`]: a server process and a client process, pinned, each
//! stage within a deadline; the client's result line is the measurement,
//! and both processes are sampled at the window's edges.

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use pingpong::client::ClientConfig;
use pingpong::wire::{Failure, Line, Window};

use crate::counters::Edge;
use crate::external::{self, External};
use crate::process::{Counting, EXIT_DEADLINE, Process};
use crate::program::Program;
use crate::remote::{Site, Ssh};
use crate::results::Cost;
use crate::runner::{ClientMeasurement, Job, Measurement, RepetitionError, Runner, Side};
use crate::usage::Sample;

/// How long a server may take to print its ready line.
const READY_DEADLINE: Duration = Duration::from_secs(10);
/// Slack on every deadline derived from the options: a loaded machine is slow.
const MARGIN: Duration = Duration::from_secs(5);

/// Runs each repetition's processes, the server where `site` says.
pub struct ProcessRunner {
    site: Site,
}

impl ProcessRunner {
    pub fn new(site: Site) -> Self {
        Self { site }
    }
}

/// A server that accepts connections.
struct Server {
    /// Absent for a server started by hand; ssh, for one on another host.
    process: Option<Process>,
    /// The server's process id, where it runs on this host and can be sampled.
    pid: Option<u32>,
    addr: SocketAddr,
    cpus: Vec<usize>,
}

impl Runner for ProcessRunner {
    fn run(&mut self, job: &Job) -> Result<Measurement, RepetitionError> {
        if let Some(unavailable) = unsupported(job, &self.site) {
            return Err(unavailable);
        }
        let mut server = start_server(job, &self.site)?;
        let measured = match job.client {
            Program::Binary { path, .. } => our_client(job, path, &mut server),
            Program::External(e) => external_client(job, e, &mut server).map_err(Into::into),
        };
        let measured = match (measured, &mut server.process) {
            (Err(e), Some(process)) => return Err(blamed(process, e)),
            (measured, _) => measured?,
        };
        if let Some(mut process) = server.process {
            if let Some(status) = process.exited()? {
                let stderr = process.stderr_tail();
                return Err(anyhow!("server exited during the run ({status}){stderr}").into());
            }
            match job.server {
                Program::Binary { .. } => process.stop()?,
                Program::External(_) => process.terminate()?,
            }
        }
        Ok(measured)
    }
}

/// `error` of the client, led by the server's exit if it exited first: a
/// crashed server is the cause, the client's complaint its effect.
fn blamed(server: &mut Process, error: RepetitionError) -> RepetitionError {
    match server.exited() {
        Ok(Some(status)) => {
            let stderr = server.stderr_tail();
            anyhow!("the server exited during the run ({status}){stderr}; the client: {error}")
                .into()
        }
        _ => error,
    }
}

/// The shape options both of our binaries take.
fn shape(job: &Job) -> Vec<String> {
    [
        ("--threads", job.load.threads),
        ("--block", job.workload.block),
        ("--window", job.workload.window),
    ]
    .iter()
    .flat_map(|(option, value)| [option.to_string(), value.to_string()])
    .collect()
}

/// The arguments of our server bound to `bind`.
fn server_args(job: &Job, bind: SocketAddr) -> Vec<String> {
    let mut args = vec!["server".into(), "--bind".into(), bind.to_string()];
    args.extend(shape(job));
    args.extend(["--work".into(), job.work.to_string()]);
    args
}

fn values<'h>(job: &Job, host: &'h str, port: u16) -> external::Values<'h> {
    external::Values {
        host,
        port,
        threads: job.load.threads,
        block: job.workload.block,
        connections: job.load.connections,
        seconds: job.seconds.as_secs_f64(),
        window: job.workload.window,
        work: job.work,
    }
}

/// Why an external program cannot run this workload, if it cannot; a
/// server started by hand is what it is.
fn unsupported(job: &Job, site: &Site) -> Option<RepetitionError> {
    let server = match (job.server, site) {
        (Program::External(e), Site::Local) => e.server_unsupported(job.work).map(|w| (e, w)),
        _ => None,
    };
    let client = match job.client {
        Program::External(e) => e
            .client_unsupported(job.workload.window, job.seconds.as_secs_f64())
            .map(|w| (e, w)),
        Program::Binary { .. } => None,
    };
    let (side, (e, short)) = server
        .map(|found| (Side::Server, found))
        .or(client.map(|found| (Side::Client, found)))?;
    Some(RepetitionError::Unavailable {
        side,
        message: format!("{} cannot run this workload: {short}", e.name),
        short,
    })
}

fn start_server(job: &Job, site: &Site) -> Result<Server, RepetitionError> {
    let cpus = &job.placement.server_cpus;
    let deadline = Instant::now() + READY_DEADLINE;
    match (site, job.server) {
        (Site::Given(addr), _) => Ok(Server {
            process: None,
            pid: None,
            addr: *addr,
            cpus: Vec::new(),
        }),
        (Site::Local, Program::Binary { path, .. }) => {
            let args = server_args(job, SocketAddr::from(([127, 0, 0, 1], 0)));
            let process = Process::spawn("server", path, &args, cpus, Counting::On)?;
            ready(process, deadline, None)
        }
        (Site::Ssh(ssh), Program::Binary { path, .. }) => {
            let args = ssh_server_args(ssh, path, job)?;
            let counting = Counting::Off("the server runs on another host");
            let process = Process::spawn("server", Path::new(&ssh.program), &args, cpus, counting)?;
            ready(process, deadline, Some(ssh.ip))
        }
        (Site::Local, Program::External(e)) => Ok(external_server(job, e, deadline)?),
        (Site::Ssh(_), Program::External(e)) => Err(anyhow!(
            "{} is external: start its server on the other host by hand and use --server",
            e.name
        )
        .into()),
    }
}

/// The server as its ready line says, at `host` when it runs on another one.
fn ready(
    mut process: Process,
    deadline: Instant,
    host: Option<IpAddr>,
) -> Result<Server, RepetitionError> {
    let ready = match process.next_line(deadline, "server start", line)? {
        Line::Ready(ready) => ready,
        Line::Error(f) => return Err(failure(Side::Server, f)),
        other => {
            return Err(anyhow!("server printed {other:?} instead of its ready line").into());
        }
    };
    let (addr, pid) = match host {
        Some(ip) => (SocketAddr::new(ip, ready.addr.port()), None),
        None => (ready.addr, Some(process.id())),
    };
    Ok(Server {
        process: Some(process),
        pid,
        addr,
        cpus: ready.cpus,
    })
}

/// An external server on a free port here, once it accepts a connection:
/// it has no ready line.
fn external_server(job: &Job, e: &External, deadline: Instant) -> Result<Server> {
    let port = free_port()?;
    let command = e.server_command(&values(job, "127.0.0.1", port))?;
    let mut process = Process::spawn(
        "server",
        Path::new(&command[0]),
        &command[1..],
        &job.placement.server_cpus,
        Counting::On,
    )?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    loop {
        if let Some(status) = process.exited()? {
            let stderr = process.stderr_tail();
            bail!("server start: the server exited ({status}){stderr}");
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "server start: nothing listened on {addr} within {:.1} s; killed",
                READY_DEADLINE.as_secs_f64()
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
    let pid = process.id();
    Ok(Server {
        process: Some(process),
        pid: Some(pid),
        cpus: pingpong::affinity::of(pid).unwrap_or_default(),
        addr,
    })
}

/// A line of our binaries' stdout; anything else they print is not ours to read.
fn line(text: &str) -> Option<Line> {
    serde_json::from_str(text).ok()
}

/// The client's settings, for the deadlines it keeps itself.
fn client_config(job: &Job, connect: SocketAddr) -> ClientConfig {
    ClientConfig {
        connect,
        threads: job.load.threads,
        connections: job.load.connections,
        block: job.workload.block,
        window: job.workload.window,
        warmup: job.warmup,
        seconds: job.seconds,
        latency: job.latency,
    }
}

impl Server {
    /// What the kernel has counted of the server so far, or why it cannot say.
    fn counts(&mut self, edge: Edge) -> Result<Cost, String> {
        match &mut self.process {
            Some(process) => process.counts(edge),
            None => Err("the server was started by hand".into()),
        }
    }
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

fn our_client(job: &Job, bin: &Path, server: &mut Server) -> Result<Measurement, RepetitionError> {
    let config = client_config(job, server.addr);
    // Lingering, it is still alive (not a zombie) when sampled at the window's end.
    let mut args: Vec<String> = ["client", "--linger", "--connect"].map(String::from).into();
    args.push(server.addr.to_string());
    args.extend(shape(job));
    args.extend([
        "--connections".into(),
        job.load.connections.to_string(),
        "--warmup".into(),
        job.warmup.as_secs_f64().to_string(),
        "--seconds".into(),
        job.seconds.as_secs_f64().to_string(),
    ]);
    if !job.latency {
        args.push("--no-latency".into());
    }
    let mut client = Process::spawn(
        "client",
        bin,
        &args,
        &job.placement.client_cpus,
        Counting::On,
    )?;
    // Both processes are sampled at the window's edges, as the client
    // announces them; each stage has its own deadline.
    let pids = [server.pid, Some(client.id())];
    let sample = || pids.map(|pid| Sample::take(pid?).ok());
    let (mut opened, mut closed) = (None, None);
    let (mut counted_from, mut counted_to) = (None, None);
    let mut stage = "connecting and warm-up";
    let mut deadline = Instant::now() + config.connect_deadline() + job.warmup + MARGIN;
    let result = loop {
        match client.next_line(deadline, stage, line)? {
            Line::Window(Window::Open) => {
                counted_from = Some([server.counts(Edge::Opens), client.counts(Edge::Opens)]);
                opened = Some(sample());
                stage = "measurement window";
                deadline = Instant::now() + job.seconds + MARGIN;
            }
            Line::Window(Window::Closed) => {
                counted_to = Some([server.counts(Edge::Closes), client.counts(Edge::Closes)]);
                closed = Some(sample());
                stage = "shutdown";
                deadline = Instant::now() + config.drain_deadline() + MARGIN;
            }
            Line::Result(result) => break result,
            Line::Error(f) => return Err(failure(Side::Client, f)),
            other => {
                return Err(anyhow!("client printed {other:?} instead of its result").into());
            }
        }
    };
    let usage = |side: usize| match (&opened, &closed) {
        (Some(a), Some(b)) => Some(a[side].as_ref()?.until(b[side].as_ref()?)),
        _ => None,
    };
    client.close_stdin();
    let status = client.wait(EXIT_DEADLINE)?;
    if !status.success() {
        return Err(anyhow!("exit: client exited with {status} after its result").into());
    }
    let asked = (job.load.threads, job.load.connections, job.workload.block);
    if (result.threads, result.connections, result.block) != asked {
        return Err(anyhow!(
            "client ran {} threads, {} connections, block {} instead of what it was asked",
            result.threads,
            result.connections,
            result.block
        )
        .into());
    }
    let ([server_cost, client_cost], cost_absent) = costs(counted_from, counted_to);
    Ok(Measurement {
        server_usage: usage(0),
        client_usage: usage(1),
        server_cpus: server.cpus.clone(),
        client: ClientMeasurement::Ours(result),
        server_cost,
        client_cost,
        cost_absent,
    })
}

/// An external client runs for its time and prints its throughput; the
/// server is sampled over the client's whole run.
fn external_client(job: &Job, e: &External, server: &mut Server) -> Result<Measurement> {
    let host = server.addr.ip().to_string();
    let values = values(job, &host, server.addr.port());
    let command = e.client_command(&values)?;
    let opened = server.pid.and_then(|pid| Sample::take(pid).ok());
    let counted_from = server.counts(Edge::Opens);
    let mut client = Process::spawn(
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
    })
}

/// A port free on loopback now, for an external server to listen on.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// The arguments of ssh that start `bin`'s server on the other host, bound
/// to the host's address; it stops when its stdin, which ssh forwards, closes.
fn ssh_server_args(ssh: &Ssh, bin: &Path, job: &Job) -> Result<Vec<String>> {
    let name = bin.file_name().context("a binary has no file name")?;
    let remote_bin = ssh.bin_dir.join(name).to_string_lossy().into_owned();
    let mut remote = vec![remote_bin];
    remote.extend(server_args(job, SocketAddr::new(ssh.ip, 0)));
    Ok(ssh.args(&remote))
}

/// A process's error line: unavailable with its reason, or failed.
fn failure(side: Side, f: Failure) -> RepetitionError {
    match f.unavailable {
        Some(short) => RepetitionError::Unavailable {
            side,
            short,
            message: f.message,
        },
        None => anyhow!("{side}: {}", f.message).into(),
    }
}
