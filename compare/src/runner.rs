//! One repetition of one cell, behind a trait: the run's loop asks a
//! [`Runner`] for a measurement and records what comes back. The real one
//! starts processes (`ProcessRunner`, in the processes module); tests of the
//! loop use a mock that answers in microseconds.

use std::fmt;
use std::time::Duration;

use pingpong::client::Arrival;
use pingpong::wire::ClientResult;

use crate::matrix::{Load, Workload};
use crate::placement::Placement;
use crate::program::Program;
use crate::results::{Cost, Counted};
use crate::tcp_stats::TcpStats;
use crate::usage::Usage;

/// What one repetition runs.
pub struct Job<'a> {
    pub server: &'a Program,
    pub client: &'a Program,
    pub load: Load,
    pub workload: Workload,
    /// Units of server CPU work per block echoed.
    pub work: u64,
    pub warmup: Duration,
    pub seconds: Duration,
    /// Whether the client records round-trip times.
    pub latency: bool,
    /// When our client's connections start their pingpong.
    pub arrival: Arrival,
    pub placement: &'a Placement,
    /// Whether the kernel counts each process's system calls and switches:
    /// a cost run. Counting slows every system call, so a timed run is never
    /// counted.
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
    /// In a cost run: what the kernel counted of each process over the window.
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

/// Runs repetitions.
pub trait Runner {
    fn run(&mut self, job: &Job) -> Result<Measurement, RepetitionError>;
}
