//! One repetition of one cell, behind a trait: the run's loop asks a
//! [`Measure`] for a measurement and records what comes back. The real one
//! starts a pair of processes (`ProcessPair`, in the pair module); tests of
//! the loop use a mock that answers in microseconds.

use std::fmt;
use std::time::Duration;

use anyhow::{Result, ensure};
use pingpong::client::Arrival;
use pingpong::wire::{ClientResult, Failure};

use model::matrix::{Load, Workload};
use model::placement::Placement;
use model::program::Program;
use model::results::Usage;
use model::results::{AcceptQueue, TcpStats};
use model::results::{ClientHosts, Cost, Counted, OpenLoop, Resumptions, Rtt, Run, Series, Served};

/// What one repetition runs.
pub struct Job<'a> {
    pub server: &'a Program,
    pub client: &'a Program,
    pub load: Load,
    pub workload: Workload,
    /// The open loop's rate, blocks a second over all connections (a
    /// share's, as its capacity made it); none: the closed loop.
    pub rate: Option<u64>,
    /// Units of server CPU work per block echoed.
    pub work: u64,
    pub warmup: Duration,
    pub seconds: Duration,
    /// Whether the client records round-trip times.
    pub latency: bool,
    /// When our client's connections start their pingpong.
    pub arrival: Arrival,
    pub placement: &'a Placement,
    /// Whether the kernel counts each process's system calls by kind: a
    /// cost run. Counting slows every system call, so a timed run is never
    /// counted (its CPU clock and context switches are read, at no cost).
    pub counting: bool,
}

/// What one repetition measured.
#[derive(Debug)]
pub struct Measurement {
    pub client: ClientMeasurement,
    /// What each process spent over the window (absent if a sample failed,
    /// or the process is not on this host).
    pub server_usage: Option<Usage>,
    pub client_usage: Option<Usage>,
    /// The CPUs the server found in its own affinity.
    pub server_cpus: Vec<usize>,
    /// In a cost run: the system calls the kernel counted of each process
    /// over the window.
    pub server_cost: Option<Cost>,
    pub client_cost: Option<Cost>,
    /// Why a process's cost was not counted, where it was not.
    pub cost_absent: Option<String>,
    /// Each side's instructions and system calls per block, counted with a
    /// fixed number of blocks, or why not (where asked for).
    pub counted: Option<Result<Counted, String>>,
    /// What the kernel counted of TCP over the repetition (absent where
    /// the server runs on another host, or the counters cannot be read).
    pub tcp: Option<TcpStats>,
    /// The server's accept queue over the repetition, where connections
    /// arrived while it served and it runs on this host.
    pub accept_queue: Option<AcceptQueue>,
    /// What our server said its connections did, as it stopped.
    pub served: Option<Served>,
    /// With `--client-host`: each host's part; `client` is theirs merged.
    pub client_hosts: Option<ClientHosts>,
}

#[derive(Debug)]
pub enum ClientMeasurement {
    /// Our client's result: the window and everything measured in it.
    Ours(Box<ClientResult>),
    /// What an external client printed: bytes read over its whole run
    /// (connecting included), and how long it was told to run.
    External {
        bytes: u64,
        seconds: f64,
        cpus: Vec<usize>,
    },
}

/// The open loop's record, from what the client printed.
fn open_loop_of(o: pingpong::wire::OpenLoop) -> Result<OpenLoop> {
    Ok(OpenLoop {
        rate: o.rate,
        achieved: o.achieved,
        due: o.due,
        returned: o.returned,
        uncorrected: Rtt::from_histogram(o.uncorrected_histogram)?,
        lag: Rtt::from_histogram(o.lag_histogram)?,
        timer: Rtt::from_histogram(o.timer_histogram)?,
        lag_series: o.lag_series,
        generator_busy: o.generator_busy,
        not_sustained: o.not_sustained,
    })
}

impl Measurement {
    /// The repetition's record: the `order`th of the run, of blocks of
    /// `block` bytes; none where no byte came back inside the window.
    pub fn into_run(self, order: usize, block: usize) -> Result<Run> {
        let m = self;
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
            connect: None,
            first_rtt: None,
            opened_connections: None,
            datagrams: None,
            resumptions: None,
            open_loop: None,
            tcp: m.tcp,
            accept_queue: m.accept_queue,
            mib_per_server_cpu_s: m
                .server_usage
                .filter(|u| u.cpu_percent > 0.0)
                .map(|u| mib_per_s / (u.cpu_percent / 100.0)),
            server_usage: m.server_usage,
            client_usage: m.client_usage,
            server_cpus: m.server_cpus,
            client_cpus: Vec::new(),
            series: None,
            server_cost: m.server_cost,
            client_cost: m.client_cost,
            counted: m.counted.clone().and_then(Result::ok),
            counted_absent: m.counted.and_then(Result::err),
            served: m.served,
            client_bound: false,
            client_hosts: m.client_hosts,
        };
        match m.client {
            ClientMeasurement::Ours(r) => {
                run.connect_seconds = Some(r.connect_seconds);
                run.verified_connections = Some(r.verified_connections);
                run.fairness = r.fairness;
                run.starved_connections = Some(r.starved_connections);
                run.rtt = r.rtt_histogram.map(Rtt::from_histogram).transpose()?;
                run.opened_connections = r.opened_connections;
                run.datagrams = r.datagrams.map(Into::into);
                run.resumptions = r.tls.and_then(|t| {
                    Some(Resumptions {
                        handshakes: t.handshakes?,
                        with_ticket: t.with_ticket?,
                    })
                });
                run.open_loop = r.open_loop.map(|o| open_loop_of(*o)).transpose()?;
                run.connect = r.connect_histogram.map(Rtt::from_histogram).transpose()?;
                run.first_rtt = r.first_rtt_histogram.map(Rtt::from_histogram).transpose()?;
                run.client_cpus = r.cpus;
                run.series = (!r.series.is_empty()).then_some(Series {
                    seconds: r.slice_seconds,
                    bytes: r.series,
                });
            }
            ClientMeasurement::External { cpus, .. } => run.client_cpus = cpus,
        }
        Ok(run)
    }
}

/// Which process of a repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Server,
    Client,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Server => "server",
            Self::Client => "client",
        })
    }
}

/// Why a repetition has no measurement.
#[derive(Debug, thiserror::Error)]
pub enum RepetitionError {
    /// The implementation cannot run here (no io_uring, a workload its
    /// program cannot express): a fact of the machine, reported with the
    /// reason, not a failure.
    #[error("{side}: {message}")]
    Unavailable {
        side: Side,
        /// A few words for a table cell.
        short: String,
        message: String,
    },
    /// It failed: crashed, hung past a deadline, corrupted the stream.
    #[error("{0:#}")]
    Failed(#[from] anyhow::Error),
}

impl RepetitionError {
    /// A process's error line: unavailable with its reason, or failed.
    pub fn of_failure(side: Side, f: Failure) -> Self {
        match f.unavailable {
            Some(short) => Self::Unavailable {
                side,
                short,
                message: f.message,
            },
            None => anyhow::anyhow!("{side}: {}", f.message).into(),
        }
    }
}

/// Measures repetitions.
pub trait Measure {
    fn measure(&mut self, job: &Job) -> Result<Measurement, RepetitionError>;
}
