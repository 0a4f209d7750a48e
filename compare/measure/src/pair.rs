//! The real [`Measure`](crate::repetition::Measure): a server process and a client process, pinned, each
//! stage within a deadline; the client's result line is the measurement,
//! and both processes are sampled at the window's edges.

use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use pingpong::cli::{Cli, ClientArgs, Command, ServerArgs, Sizes};
use pingpong::client::{Arrival, ClientConfig};
use pingpong::protocol::Protocol;
use pingpong::wire::{ClientResult, Line, Window};

use crate::accept_queue::Sampler;
use crate::callgrind::{self, Callgrind};
use crate::child::{Child, Counting, EXIT_DEADLINE};
use crate::client_hosts;
use crate::counters::{Counters, Edge};
use crate::perf::Perf;
use crate::remote::{ServerAt, Ssh};
use crate::repetition::{ClientMeasurement, Job, Measure, Measurement, RepetitionError, Side};
use crate::tcp_stats;
use crate::usage::{Sample, Sampling};
use model::external::{self, External};
use model::matrix::Tls;
use model::program::Program;
use model::results::TcpStats;
use model::results::{Cost, Counted};

/// How long a server may take to print its ready line (under callgrind, six
/// times as long: valgrind reads the binary's debug information first).
const READY_DEADLINE: Duration = Duration::from_secs(10);
/// Slack on every deadline derived from the options: a loaded machine is slow.
const MARGIN: Duration = Duration::from_secs(5);

/// Runs each repetition's processes, the server where `server_at` says; with
/// `counted`, also counts each side's instructions for that many blocks.
pub struct ProcessPair {
    server_at: ServerAt,
    /// `--client-host`: where the clients run, if not here.
    client_hosts: Vec<Ssh>,
    counted: Option<(u64, Result<Callgrind, String>)>,
    /// Held while repetitions are counted, so that each process's counters
    /// open quickly; dropped before a timed one, since while it is held
    /// every system call on the machine takes the kernel's slow path.
    warm: Option<Counters>,
}

/// Why an io_uring runtime is not counted under callgrind: seen here with
/// valgrind 3.19, a thread waiting in io_uring_enter keeps valgrind's lock
/// (one thread runs at a time), so the process's other threads never run.
const UNDER_VALGRIND: &str = "io_uring under valgrind: a thread waiting in io_uring_enter holds \
     valgrind's one-thread-at-a-time lock and the others never run";

/// Why the kernel does not count a run counted by call stack: callgrind
/// counts its system calls, function by function.
const STACKS: &str = "callgrind counts the system calls, by function";

/// Why the kernel does not count a sampled run: perf counts its system
/// calls, by name.
const SAMPLED: &str = "perf counts the system calls, by name";

/// Why a timed window's processes are not counted.
const TIMED: &str = "a timed window is not counted: counting slows every system call";

impl ProcessPair {
    pub fn new(server_at: ServerAt, client_hosts: Vec<Ssh>, counted: Option<u64>) -> Self {
        Self {
            server_at,
            client_hosts,
            counted: counted.map(|blocks| (blocks, Callgrind::find())),
            warm: None,
        }
    }

    /// Holds the tracepoints on while counting, and off otherwise.
    fn counting(&mut self, on: bool) {
        match on {
            true if self.warm.is_none() => self.warm = Counters::warm().ok(),
            true => {}
            false => self.warm = None,
        }
    }
}

/// How one pair of processes runs.
#[derive(Clone, Copy)]
enum Mode<'a> {
    /// The timed window of the options.
    Timed,
    /// `span`'s pingpong, the `under` side run by `profiler`, which writes
    /// what it counted to `out`.
    Counted {
        span: Span,
        under: Side,
        profiler: Profiler<'a>,
        out: &'a Path,
    },
}

/// How much a counted pair round-trips.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Span {
    /// So many blocks per connection, the connections started together,
    /// no warm-up and no clock: the closed loop's count.
    Blocks(u64),
    /// A window of so many seconds at the job's own rate, no warm-up: the
    /// open loop's, whose schedule no count of blocks keeps.
    Seconds(f64),
}

impl Span {
    /// Twice as much.
    pub fn doubled(self) -> Self {
        match self {
            Self::Blocks(n) => Self::Blocks(2 * n),
            Self::Seconds(s) => Self::Seconds(2.0 * s),
        }
    }
}

/// A profiled pair's file, and the blocks its client round-tripped.
pub struct Profile {
    pub file: PathBuf,
    pub blocks: f64,
}

/// What counts a side of a counted pair.
#[derive(Clone, Copy)]
enum Profiler<'a> {
    /// callgrind, its instructions in all or, with `stacks`, by call stack.
    Callgrind {
        callgrind: &'a Callgrind,
        stacks: bool,
    },
    /// perf, sampling by call stack.
    Perf(&'a Perf),
}

impl Mode<'_> {
    /// `program args`, or the two under the profiler where `side` is counted.
    fn wrap(
        &self,
        side: Side,
        program: &Path,
        args: Vec<String>,
    ) -> (std::path::PathBuf, Vec<String>) {
        match self {
            Mode::Counted {
                under,
                profiler,
                out,
                ..
            } if *under == side => match profiler {
                Profiler::Callgrind { callgrind, stacks } => {
                    callgrind.wrap(program, &args, out, *stacks)
                }
                Profiler::Perf(perf) => perf.wrap(program, &args, out),
            },
            _ => (program.to_path_buf(), args),
        }
    }

    fn ready_deadline(&self) -> Duration {
        match self {
            Mode::Timed => READY_DEADLINE,
            Mode::Counted { .. } => READY_DEADLINE * 6,
        }
    }
}

/// A server that accepts connections.
struct Server {
    /// Absent for a server started by hand; ssh, for one on another host.
    process: Option<Child>,
    /// The server's process id, where it runs on this host and can be sampled.
    pid: Option<u32>,
    addr: SocketAddr,
    cpus: Vec<usize>,
    /// With TLS: the certificate it made, for the client to trust.
    certificate: Option<String>,
}

impl Measure for ProcessPair {
    fn measure(&mut self, job: &Job) -> Result<Measurement, RepetitionError> {
        if let Some(unavailable) = unsupported(job, &self.server_at, !self.client_hosts.is_empty())
        {
            return Err(unavailable);
        }
        self.counting(job.counting);
        let mut measured = self.pair(job, Mode::Timed)?;
        measured.counted = match self.counted.clone() {
            None => None,
            Some((_, Err(why))) => Some(Err(why)),
            Some((blocks, Ok(callgrind))) => {
                self.counting(true);
                let counted = self.count(job, blocks, &callgrind);
                self.counting(job.counting);
                Some(counted)
            }
        };
        Ok(measured)
    }
}

impl ProcessPair {
    /// Each side's user-space instructions per block: the difference between
    /// counts of `blocks` and of twice as many blocks per connection (so
    /// that starting and stopping cancel out), over as many blocks; and each
    /// side's system calls per block, counted while the other ran under callgrind.
    fn count(&self, job: &Job, blocks: u64, callgrind: &Callgrind) -> Result<Counted, String> {
        let (
            Program::Binary {
                adapter: server, ..
            },
            Program::Binary {
                adapter: client, ..
            },
        ) = (job.server, job.client)
        else {
            return Err("an external program is not counted".into());
        };
        if let Some(adapter) = [server, client].into_iter().find(|a| a.io_uring) {
            return Err(format!("{}: {UNDER_VALGRIND}", adapter.name));
        }
        if !matches!(self.server_at, ServerAt::Local) {
            return Err("the server runs elsewhere: not counted".into());
        }
        let dir = tempfile::tempdir().map_err(|e| format!("a folder for callgrind: {e}"))?;
        let all = (blocks * job.load.connections as u64) as f64;
        let mut instructions = [0.0; 2];
        let mut syscalls = [None; 2];
        for (i, under) in [Side::Server, Side::Client].into_iter().enumerate() {
            let mut totals = [0u64; 2];
            for (k, n) in [blocks, 2 * blocks].into_iter().enumerate() {
                let out = dir.path().join(format!("{under}-{n}"));
                let mode = Mode::Counted {
                    span: Span::Blocks(n),
                    under,
                    profiler: Profiler::Callgrind {
                        callgrind,
                        stacks: false,
                    },
                    out: &out,
                };
                let measured = self
                    .pair(job, mode)
                    .map_err(|e| format!("with the {under} under callgrind: {e}"))?;
                totals[k] = callgrind::total(&out)?;
                let other = [measured.server_cost, measured.client_cost][1 - i];
                if let (1, Some(cost), ClientMeasurement::Ours(result)) =
                    (k, other, &measured.client)
                {
                    let done = result.bytes as f64 / job.workload.block as f64;
                    syscalls[1 - i] = Some(cost.syscalls as f64 / done);
                }
            }
            instructions[i] = totals[1].saturating_sub(totals[0]) as f64 / all;
        }
        Ok(Counted {
            blocks,
            server_instructions: instructions[0],
            client_instructions: instructions[1],
            server_syscalls: syscalls[0],
            client_syscalls: syscalls[1],
        })
    }

    /// `job`'s `under` side under callgrind, counted by call stack, with
    /// `blocks` per connection and then twice as many: the two counts.
    pub fn counted_stacks(
        &self,
        job: &Job,
        blocks: u64,
        under: Side,
        dir: &Path,
    ) -> Result<[Profile; 2], String> {
        if let Program::Binary { adapter, .. } = side_program(job, under)?
            && adapter.io_uring
        {
            return Err(format!("{}: {UNDER_VALGRIND}", adapter.name));
        }
        let callgrind = Callgrind::find()?;
        let profiler = Profiler::Callgrind {
            callgrind: &callgrind,
            stacks: true,
        };
        self.profiled(job, Span::Blocks(blocks), under, profiler, dir)
    }

    /// `job`'s `under` side sampled by perf over `span` and then twice as
    /// much: the two samples, written into `dir`.
    pub fn sampled_stacks(
        &self,
        job: &Job,
        span: Span,
        under: Side,
        perf: &Perf,
        dir: &Path,
    ) -> Result<[Profile; 2], String> {
        side_program(job, under)?;
        self.profiled(job, span, under, Profiler::Perf(perf), dir)
    }

    fn profiled(
        &self,
        job: &Job,
        span: Span,
        under: Side,
        profiler: Profiler,
        dir: &Path,
    ) -> Result<[Profile; 2], String> {
        let (name, extension) = match profiler {
            Profiler::Callgrind { .. } => ("callgrind", "callgrind"),
            Profiler::Perf(_) => ("perf", "perf.data"),
        };
        let run = |(k, span): (usize, Span)| {
            let file = dir.join(format!("{under}-{k}.{extension}"));
            let mode = Mode::Counted {
                span,
                under,
                profiler,
                out: &file,
            };
            let measured = self
                .pair(job, mode)
                .map_err(|e| format!("with the {under} under {name}: {e}"))?;
            let ClientMeasurement::Ours(result) = &measured.client else {
                return Err(format!(
                    "with the {under} under {name}: no client of ours counted its blocks"
                ));
            };
            let blocks = result.bytes as f64 / job.workload.block.max(1) as f64;
            Ok::<_, String>(Profile { file, blocks })
        };
        Ok([run((1, span))?, run((2, span.doubled()))?])
    }

    /// One pair of processes: the server where `server_at` says, the client
    /// here; what the client measured, and what both spent.
    fn pair(&self, job: &Job, mode: Mode) -> Result<Measurement, RepetitionError> {
        let counting = match (job.counting, mode) {
            (
                _,
                Mode::Counted {
                    profiler: Profiler::Callgrind { stacks: true, .. },
                    ..
                },
            ) => Counting::Off(STACKS),
            (
                _,
                Mode::Counted {
                    profiler: Profiler::Perf(_),
                    ..
                },
            ) => Counting::Off(SAMPLED),
            (true, _) | (_, Mode::Counted { .. }) => Counting::On,
            (false, Mode::Timed) => Counting::Off(TIMED),
        };
        let mut server = start_server(job, &self.server_at, mode, counting)?;
        // The counters of this host's kernel say nothing of a server or
        // clients on another.
        let tcp_before = match (&self.server_at, &self.client_hosts[..]) {
            (ServerAt::Local | ServerAt::Given(_), []) => tcp_stats::read().ok(),
            _ => None,
        };
        // Where sock_diag cannot be read, the tables show no queue: it
        // measures the run, it is not the run.
        let sampler = (accept_queue_sampled(job) && tcp_before.is_some())
            .then(|| Sampler::start(server.addr).ok())
            .flatten();
        let measured = match job.client {
            Program::Binary { path, .. } if !self.client_hosts.is_empty() => {
                hosted_clients(job, path, &self.client_hosts, &server)
            }
            Program::Binary { path, .. } => our_client(job, path, &mut server, mode, counting),
            Program::External(e) => external_client(job, e, &mut server).map_err(Into::into),
            Program::Unbuilt { reason, .. } => Err(anyhow!("{reason}").into()),
        };
        let tcp = tcp_before.and_then(|before| Some(tcp_stats::read().ok()?.since(&before)));
        let accept_queue = sampler.and_then(|s| s.finish().ok());
        let mut measured = match (measured, &mut server.process) {
            (Err(e), Some(process)) => return Err(troubled(blamed(process, e), tcp)),
            (measured, _) => measured.map_err(|e| troubled(e, tcp))?,
        };
        measured.tcp = tcp;
        measured.accept_queue = accept_queue;
        if let Some(mut process) = server.process {
            if let Some(status) = process.exited()? {
                let stderr = process.stderr_tail();
                return Err(anyhow!("server exited during the run ({status}){stderr}").into());
            }
            match job.server {
                Program::Binary { .. } => {
                    let last = process.stop()?;
                    measured.served = last.iter().find_map(|text| match Line::parse(text) {
                        Some(Line::Served(served)) => Some(served.into()),
                        _ => None,
                    });
                }
                Program::External(_) | Program::Unbuilt { .. } => process.terminate()?,
            }
        }
        Ok(measured)
    }
}

/// The program of `job`'s `side`, where it is one of ours: an external
/// program's symbols and stacks are not the suite's to profile.
fn side_program<'j>(job: &Job<'j>, side: Side) -> Result<&'j Program, String> {
    match [job.server, job.client][usize::from(side == Side::Client)] {
        program @ Program::Binary { .. } => Ok(program),
        _ => Err("an external program is not counted".into()),
    }
}

/// Whether a repetition samples its server's accept queue: where
/// connections arrive while it serves, over TCP. Sampling wakes a thread of
/// ours every few milliseconds, which a run that measures nothing of the
/// accepting need not pay.
fn accept_queue_sampled(job: &Job) -> bool {
    let arrival = match job.client {
        Program::External(e) => e.client.arrival.unwrap_or_default(),
        _ => job.arrival,
    };
    let arriving = arrival != Arrival::Gated || job.workload.churn.is_some();
    arriving && job.workload.protocol != Protocol::Udp
}

/// `error` of the client, led by the server's exit if it exited first: a
/// crashed server is the cause, the client's complaint its effect.
fn blamed(server: &mut Child, error: RepetitionError) -> RepetitionError {
    match server.exited() {
        Ok(Some(status)) => {
            let stderr = server.stderr_tail();
            anyhow!("the server exited during the run ({status}){stderr}; the client: {error}")
                .into()
        }
        _ => error,
    }
}

/// A failure, with the kernel's count of connection troubles over the
/// repetition where there were any: a full accept queue is often the cause.
fn troubled(error: RepetitionError, tcp: Option<TcpStats>) -> RepetitionError {
    match (error, tcp.and_then(|t| t.troubles())) {
        (RepetitionError::Failed(e), Some(troubles)) => anyhow!("{e:#}; {troubles}").into(),
        (error, _) => error,
    }
}

/// The sizes both of our binaries take, with the threads of `side`.
fn sizes(job: &Job, side: Side) -> Sizes {
    Sizes {
        protocol: job.workload.protocol,
        threads: threads(job, side) as u32,
        block: job.workload.block as u32,
        window: job.workload.window as u32,
    }
}

/// A configuration's settings, if `program` has any, for `--knobs`.
fn knobs(program: &Program) -> String {
    match program {
        Program::Binary { knobs, .. } => knobs.to_arg(),
        _ => String::new(),
    }
}

/// The arguments of our server bound to `bind`.
fn server_args(job: &Job, bind: SocketAddr) -> Vec<String> {
    let server = ServerArgs {
        bind,
        sizes: sizes(job, Side::Server),
        work: job.work,
        shape: job.workload.shape,
        until_killed: false,
        tls: job.workload.tls.is_some(),
        tls_resumption: job.workload.tls == Some(Tls::Resumption),
    };
    Cli {
        command: Command::Server(server),
        knobs: knobs(job.server),
    }
    .to_args()
}

/// The threads `side` runs: the client's may differ (`--client-threads`).
fn threads(job: &Job, side: Side) -> usize {
    match side {
        Side::Server => job.load.threads,
        Side::Client => job.load.client_threads(),
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

/// Why an external program cannot run this workload (or, with `hosted`
/// clients, run its client on other hosts), if it cannot; a server started
/// by hand is what it is.
fn unsupported(job: &Job, server_at: &ServerAt, hosted: bool) -> Option<RepetitionError> {
    let unbuilt = [(Side::Server, job.server), (Side::Client, job.client)]
        .into_iter()
        .find_map(|(side, program)| match program {
            Program::Unbuilt { reason, .. } => Some((side, reason)),
            _ => None,
        });
    if let Some((side, reason)) = unbuilt {
        return Some(RepetitionError::Unavailable {
            side,
            short: "does not build against this release".into(),
            message: reason.clone(),
        });
    }
    // External programs speak the protocol over plain TCP only.
    let plain_only = match (job.workload.protocol, job.workload.tls) {
        (Protocol::Tcp, None) => None,
        (Protocol::Tcp, Some(_)) => Some("it speaks plain TCP only, no TLS".to_string()),
        (other, _) => Some(format!("it speaks TCP pingpong only, no {}", other.label())),
    };
    let server = match (job.server, server_at) {
        (Program::External(e), ServerAt::Local) => e
            .server_unsupported(job.work, job.workload.shape)
            .or_else(|| plain_only.clone())
            .map(|w| (e, w)),
        _ => None,
    };
    let client = match job.client {
        Program::External(e) if hosted => Some((
            e,
            "its client runs on this host only, not on --client-host hosts".into(),
        )),
        Program::External(e) => e
            .client_unsupported(
                job.workload.window,
                job.seconds.as_secs_f64(),
                job.workload.churn,
            )
            .or_else(|| plain_only.clone())
            .map(|w| (e, w)),
        Program::Binary { .. } | Program::Unbuilt { .. } => None,
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

fn start_server(
    job: &Job,
    server_at: &ServerAt,
    mode: Mode,
    counting: Counting,
) -> Result<Server, RepetitionError> {
    let cpus = &job.placement.server_cpus;
    let deadline = Instant::now() + mode.ready_deadline();
    match (server_at, job.server) {
        (ServerAt::Given(addr), _) => Ok(Server {
            process: None,
            pid: None,
            addr: *addr,
            cpus: Vec::new(),
            certificate: None,
        }),
        (ServerAt::Local, Program::Binary { path, .. }) => {
            let args = server_args(job, SocketAddr::from(([127, 0, 0, 1], 0)));
            let (program, args) = mode.wrap(Side::Server, path, args);
            let process = Child::spawn("server", &program, &args, cpus, counting)?;
            ready(process, deadline, None)
        }
        (ServerAt::Ssh(ssh), Program::Binary { path, .. }) => {
            let args = ssh_server_args(ssh, path, job)?;
            let counting = Counting::Off("the server runs on another host");
            let process = Child::spawn("server", Path::new(&ssh.program), &args, cpus, counting)?;
            ready(process, deadline, Some(ssh.ip))
        }
        (ServerAt::Local, Program::External(e)) => Ok(external_server(job, e, deadline, counting)?),
        (_, Program::Unbuilt { reason, .. }) => Err(anyhow!("{reason}").into()),
        (ServerAt::Ssh(_), Program::External(e)) => Err(anyhow!(
            "{} is external: start its server on the other host by hand and use --server",
            e.name
        )
        .into()),
    }
}

/// The server as its ready line says, at `host` when it runs on another one.
fn ready(
    mut process: Child,
    deadline: Instant,
    host: Option<IpAddr>,
) -> Result<Server, RepetitionError> {
    let ready = match process.next_line(deadline, "server start", Line::parse)? {
        Line::Ready(ready) => ready,
        Line::Error(f) => return Err(RepetitionError::of_failure(Side::Server, f)),
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
        certificate: ready.tls_certificate,
    })
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
        certificate: None,
    })
}

/// The client's settings, for the deadlines it keeps itself.
fn client_config(job: &Job, connect: SocketAddr) -> ClientConfig {
    ClientConfig {
        protocol: job.workload.protocol,
        connect,
        threads: job.load.client_threads(),
        connections: job.load.connections,
        block: job.workload.block,
        window: job.workload.window,
        warmup: job.warmup,
        seconds: job.seconds,
        latency: job.latency,
        blocks: None,
        arrival: job.arrival,
        churn: job.workload.churn,
        rate: job.rate,
        tls: None,
        knobs: Default::default(),
        start_signal: false,
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

/// Our client's arguments for `config`, against `server`.
fn client_args(job: &Job, config: &ClientConfig, server: &Server) -> Result<ClientArgs> {
    let tls_trust = match job.workload.tls {
        None => None,
        Some(_) => Some(server.certificate.clone().ok_or_else(|| {
            anyhow!("the server's ready line carries no certificate for the client to trust")
        })?),
    };
    Ok(ClientArgs {
        connect: server.addr,
        sizes: sizes(job, Side::Client),
        connections: job.load.connections as u32,
        warmup: config.warmup.as_secs_f64(),
        seconds: config.seconds.as_secs_f64(),
        blocks: config.blocks,
        no_latency: !config.latency,
        arrival: config.arrival,
        churn: config.churn,
        rate: config.rate,
        tls_trust,
        tls_resumption: job.workload.tls == Some(Tls::Resumption),
        // Lingering, it is still alive (not a zombie) when sampled at the window's end.
        linger: true,
        start_signal: false,
    })
}

/// What a counted pair's client does instead of the timed window: its
/// span of blocks, or its window at the job's rate.
fn profiled_span(config: &mut ClientConfig, mode: Mode) {
    match mode {
        Mode::Counted {
            span: Span::Blocks(blocks),
            ..
        } => {
            // The clock that times round trips is the suite's work, not the
            // runtime's: counted without it. Connections stay open and start
            // together.
            config.blocks = Some(blocks);
            config.churn = None;
            config.rate = None;
            config.arrival = Arrival::Gated;
            config.warmup = Duration::ZERO;
            config.latency = false;
        }
        Mode::Counted {
            span: Span::Seconds(seconds),
            ..
        } => {
            // The open loop times every block from when it was due: its
            // clock is how it keeps the rate.
            config.seconds = Duration::from_secs_f64(seconds);
            config.warmup = Duration::ZERO;
            config.latency = true;
        }
        Mode::Timed => {}
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

/// Refuses a client's result that is not of the load asked, or cannot be
/// a measurement.
fn check_result(job: &Job, result: &ClientResult) -> Result<(), RepetitionError> {
    let asked = (
        job.load.client_threads(),
        job.load.connections,
        job.workload.block,
    );
    if (result.threads, result.connections, result.block) != asked {
        return Err(anyhow!(
            "client ran {} threads, {} connections, block {} instead of what it was asked",
            result.threads,
            result.connections,
            result.block
        )
        .into());
    }
    if let Some(why) = result.impossible() {
        return Err(anyhow!("client's result cannot be a measurement: {why}").into());
    }
    if let Some(wrong) = tls_mismatch(job, result.tls.as_deref()) {
        return Err(anyhow!("client {wrong}").into());
    }
    Ok(())
}

/// Our client on the `--client-host` hosts: what they measured, merged,
/// and each host's part. Nothing is sampled or counted from here.
fn hosted_clients(
    job: &Job,
    bin: &Path,
    hosts: &[Ssh],
    server: &Server,
) -> Result<Measurement, RepetitionError> {
    let config = client_config(job, server.addr);
    let args = client_args(job, &config, server)?;
    let (result, parts) = client_hosts::run(hosts, bin, &args, &knobs(job.client), &config)?;
    if let Some(why) = result.impossible() {
        return Err(anyhow!("client's result cannot be a measurement: {why}").into());
    }
    if let Some(wrong) = tls_mismatch(job, result.tls.as_deref()) {
        return Err(anyhow!("client {wrong}").into());
    }
    Ok(Measurement {
        client: ClientMeasurement::Ours(Box::new(result)),
        server_usage: None,
        client_usage: None,
        server_cpus: server.cpus.clone(),
        server_cost: None,
        client_cost: None,
        cost_absent: Some("the clients run on other hosts".into()),
        counted: None,
        tcp: None,
        accept_queue: None,
        served: None,
        client_hosts: Some(parts),
    })
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

/// How the client's TLS differs from what the workload asked, if it does:
/// another version, suite, group or provider than this compare's.
fn tls_mismatch(job: &Job, got: Option<&pingpong::wire::Tls>) -> Option<String> {
    use pingpong::tls::{GROUP, PROVIDER, SUITE, VERSION};
    match (job.workload.tls, got) {
        (None, None) => None,
        (None, Some(_)) => Some("ran TLS where plain TCP was asked".into()),
        (Some(_), None) => Some("ran plain TCP where TLS was asked".into()),
        (Some(tls), Some(got)) => {
            let negotiated =
                [&got.version, &got.suite, &got.group, &got.provider].map(|s| s.as_str());
            let expected = [VERSION, SUITE, GROUP, PROVIDER];
            if negotiated != expected {
                Some(format!("used {negotiated:?} instead of {expected:?}"))
            } else if got.resumption != (tls == Tls::Resumption) {
                Some(format!(
                    "had resumption {} where {} was asked",
                    got.resumption,
                    tls.label()
                ))
            } else {
                None
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_connection_troubles_the_kernel_counted() {
        let overflowed = TcpStats {
            listen_overflows: 12,
            listen_drops: 12,
            syn_retransmits: 20,
            ..TcpStats::default()
        };
        let failed = || RepetitionError::Failed(anyhow!("the client passed its deadline"));
        let named = troubled(failed(), Some(overflowed)).to_string();
        assert_eq!(
            named,
            "the client passed its deadline; the kernel counted 12 listen-queue overflows, \
             12 listen drops and 20 SYN retransmissions over the run"
        );
        let quiet = troubled(failed(), Some(TcpStats::default())).to_string();
        assert_eq!(quiet, "the client passed its deadline");
        let unavailable = RepetitionError::Unavailable {
            side: Side::Server,
            short: "no io_uring".into(),
            message: "io_uring is off".into(),
        };
        assert!(matches!(
            troubled(unavailable, Some(overflowed)),
            RepetitionError::Unavailable { .. }
        ));
    }
}
