//! The results (schema 1): what a run measured, as data. Later readers
//! (tables, reports, regression checks) read only this. Its JSON Schema is
//! generated from these types (`docs/src/results.schema.json`). The
//! figures derived from the runs are in [`figures`], the file on disk in
//! [`file`].

pub mod figures;
pub mod file;
pub mod key;
pub mod registry;
mod series;

use std::collections::BTreeMap;

use pingpong::client::Arrival;
use pingpong::protocol::Protocol;
use pingpong::server::Shape;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::adapters::GENERATOR;
use crate::defaults;
use crate::external::External;
use crate::implementation::{Implementation, Spec, Versions};
use crate::matrix::{Load, Rate, Tls, WindowAt, Workload};
use crate::placement::Placement;
use crate::revision::Source;

pub const SCHEMA: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Results {
    pub schema: u32,
    pub suite: Suite,
    /// The host compare and the clients ran on (the servers too, unless remote).
    pub host: Host,
    /// The host the servers ran on, when another one (`--remote`), as ssh found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host: Option<Host>,
    pub config: Config,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Suite {
    pub version: String,
    /// The git commit of the source tree, with "-dirty" for uncommitted changes.
    pub commit: Option<String>,
    /// Whether tracked files differed from the commit.
    #[serde(default)]
    pub dirty: Option<bool>,
    /// `rustc --version` of the toolchain that built the binaries.
    #[serde(default)]
    pub rustc: Option<String>,
    /// The cargo profile the binaries were built with.
    #[serde(default)]
    pub profile: Option<String>,
    /// SHA-256 (hex) of every binary that ran, by file name.
    #[serde(default)]
    pub binaries: BTreeMap<String, String>,
    /// SHA-256 (hex) of the Cargo.lock of each isolated build (releases and
    /// unreleased code), by implementation; the file is `locks/<hash>.lock`
    /// beside the results.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub locks: BTreeMap<String, String>,
    /// `valgrind --version`, where runs were counted under callgrind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valgrind: Option<String>,
    /// In a run of shapes that hand blocks off: the channel every hand-off
    /// goes through, as the builds locked it ("async-channel 2.5.0"; more
    /// than one where isolated builds locked others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Host {
    pub name: Option<String>,
    /// CPUs this run could use.
    pub cpus: Vec<usize>,
    pub cpu_model: Option<String>,
    pub logical_cpus: Option<usize>,
    pub physical_cores: Option<usize>,
    pub memory_kib: Option<u64>,
    pub kernel: Option<String>,
    /// net.core.somaxconn: the cap on every listener's accept backlog.
    pub somaxconn: Option<u32>,
    /// Whether this process could create an io_uring, and if not, why.
    pub io_uring: Option<bool>,
    pub io_uring_error: Option<String>,
    /// RLIMIT_NOFILE of the orchestrator; runtime processes raise soft to hard.
    pub nofile_soft: Option<u64>,
    pub nofile_hard: Option<u64>,
}

impl Host {
    /// What differs between this run's machine and `other`'s, as a phrase
    /// ("CPU AMD EPYC against Intel Xeon, kernel 6.18.44 against 6.1.0");
    /// none where they are one machine: its name, CPU model, CPUs and
    /// kernel alike.
    pub fn differs_from(&self, other: &Host) -> Option<String> {
        fn said<T: std::fmt::Display>(v: &Option<T>) -> String {
            v.as_ref().map_or("unknown".into(), T::to_string)
        }
        let fields = [
            ("name", said(&self.name), said(&other.name)),
            ("CPU", said(&self.cpu_model), said(&other.cpu_model)),
            (
                "logical CPUs",
                said(&self.logical_cpus),
                said(&other.logical_cpus),
            ),
            ("kernel", said(&self.kernel), said(&other.kernel)),
        ];
        let differ: Vec<String> = fields
            .into_iter()
            .filter(|(_, x, y)| x != y)
            .map(|(what, x, y)| format!("{what} {x} against {y}"))
            .collect();
        (!differ.is_empty()).then(|| differ.join(", "))
    }
}

/// The options of the run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Config {
    /// The implementations measured (their servers), in the tables' order.
    #[serde(rename = "runtimes")]
    pub implementations: Vec<String>,
    /// The client implementation every cell used, when one was fixed.
    pub client: Option<String>,
    pub loads: Vec<Load>,
    /// The first block size (all of them are in `blocks`).
    pub block: usize,
    /// Block sizes, each run at every load; empty in older files: `block` alone.
    #[serde(default)]
    pub blocks: Vec<usize>,
    /// Blocks in flight per connection; empty in older files: 1.
    #[serde(default)]
    pub windows: Vec<usize>,
    /// The window each of these connection counts runs at
    /// (`--preset loopback-bench`); empty: every window at every load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows_at: Vec<WindowAt>,
    /// Units of server CPU work per block echoed.
    #[serde(default)]
    pub work: u64,
    /// `--protocol`, each run at every load; empty: TCP alone (as in files
    /// from before UDP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<String>")]
    pub protocols: Vec<Protocol>,
    /// `--shapes`, each run at every load; empty: the echo alone (as in
    /// files from before servers had shapes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<String>")]
    pub shapes: Vec<Shape>,
    pub seconds: f64,
    pub warmup: f64,
    pub repeat: usize,
    /// The command line, to reproduce the run.
    pub command: String,
    /// RFC 3339 times the run started and (absent while it runs) ended.
    pub started: String,
    #[serde(default)]
    pub ended: Option<String>,
    /// `--pin`: auto, none, or SERVER_CPUS/CLIENT_CPUS.
    #[serde(default)]
    pub pin: Option<String>,
    /// A cell whose max/min MiB/s exceeds 1 + this / 100 is marked noisy.
    #[serde(default)]
    pub noisy_percent: Option<f64>,
    /// Whether round-trip times were recorded.
    #[serde(default)]
    pub latency: Option<bool>,
    /// Whether each cell got a cost run (`--no-cost` makes it false).
    #[serde(default)]
    pub cost: Option<bool>,
    /// `--cost-runs`: cost runs per cell; absent: one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_runs: Option<usize>,
    /// RFC 3339 times the run was resumed with `--resume`.
    #[serde(default)]
    pub resumed: Vec<String>,
    /// `--precision`: the half-width of the 95% interval of each cell's
    /// median MiB/s, in percent of the median, that the run repeated cells
    /// for; absent: a fixed number of repetitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_percent: Option<f64>,
    /// `--max-repeat`: the most repetitions a cell gets in pursuit of the precision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repeat: Option<usize>,
    /// `--counted`: blocks per connection of the shorter counted run of
    /// every repetition; absent: not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_blocks: Option<u64>,
    /// `--arrival`: when our client's connections start their pingpong
    /// (absent: gated, as before the option existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub arrival: Option<Arrival>,
    /// `--churn`: blocks each connection round-trips before it closes and
    /// another opens in its place; absent: connections stay open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<u64>,
    /// `--rates`: the open loop's rates, blocks a second over all
    /// connections, each run at every load; empty: the closed loop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rates: Vec<u64>,
    /// `--rates` given as shares of capacity, in percent: the closed loop
    /// runs too, first, and each share's rate follows from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_shares: Vec<u32>,
    /// `--tls`: every workload also runs inside TLS; what every TLS
    /// connection uses. Absent: plain TCP alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSettings>,
    /// Ranges of releases in `--runtimes` (`NAME@A..B`), as cargo's index
    /// listed them when the run started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub releases: Vec<ReleaseRange>,
    /// Unreleased code the run names (`git:` and `path:` versions), as it
    /// resolved when the run started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<Source>,
    /// `--p99-bound`: the p99 round trip, in microseconds, under which a
    /// sustained rate counts for the knee table (with `rates`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_bound_us: Option<f64>,
    /// `--budget`: the time, in seconds, the repetitions beyond `repeat` may take in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_seconds: Option<f64>,
    /// External implementations (`--external`), as their files described them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub externals: Vec<External>,
    /// Where the servers ran, when not on this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<Remote>,
    /// `--client-host`: the hosts the clients ran on, over ssh; none: here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_hosts: Vec<String>,
}

/// A client's TLS handshakes with resumption on: all of them, and those
/// that offered a ticket from an earlier connection.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Resumptions {
    pub handshakes: u64,
    pub with_ticket: u64,
}

/// What every TLS connection of a run uses: the only protocol version,
/// cipher suite, key exchange group and crypto provider offered, and the
/// certificate; and whether the run has the handshake scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TlsSettings {
    pub version: String,
    pub suite: String,
    pub group: String,
    pub provider: String,
    /// How each server's certificate is made.
    pub certificate: String,
    /// Kernel TLS (kTLS) on the host of the run, as the kernel said: every
    /// figure is of user-space TLS (rustls) either way.
    #[serde(default)]
    pub kernel_tls: String,
    /// Whether the run has the handshake scenario: a new connection after
    /// every block (`churn` 1), over plain TCP, inside TLS, and inside TLS
    /// with resumption.
    pub handshakes: bool,
    /// `--handshakes`: the connection counts of the loads the handshake
    /// scenario ran at; empty: every load of the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handshake_connections: Vec<usize>,
}

/// A range of releases (`tokio@1.45.0..1.54.1`) or of commits
/// (`tokio@git:URL#A..B`), and what it expanded to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReleaseRange {
    pub spec: String,
    /// The runtime crate whose releases these are.
    pub krate: String,
    /// The releases run, oldest first (each an implementation
    /// `NAME@VERSION`); of commits, the implementations' names.
    pub versions: Vec<String>,
    /// The releases of the range left out, and why (yanked, pre-release).
    pub skipped: Vec<Skipped>,
}

impl ReleaseRange {
    /// The implementation names of its releases, oldest first
    /// (`tokio@1.45.0`); none where the spec or a version does not parse
    /// (a file edited by hand).
    pub fn names(&self) -> Vec<String> {
        let Ok(spec) = Spec::parse(&self.spec) else {
            return Vec::new();
        };
        if let Versions::Commits { .. } = spec.versions {
            return self.versions.clone();
        }
        self.versions
            .iter()
            .filter_map(|v| Some(spec.at(semver::Version::parse(v).ok()?).to_string()))
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Skipped {
    pub version: String,
    pub reason: String,
}

/// A server on another host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Remote {
    /// `--server HOST:PORT`: already running there, started by hand.
    Given { address: String },
    /// `--remote ssh://HOST`: started there over ssh for every repetition,
    /// from the binaries in `bin_dir` on that host (absent: where they lie here).
    Ssh {
        url: String,
        bin_dir: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Failed,
    Unavailable,
}

/// One implementation at one load: its repetitions and their summary.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Cell {
    /// The implementation measured: its server (and its client, unless fixed).
    #[serde(rename = "runtime")]
    pub implementation: String,
    /// What carried the pingpong; absent: TCP.
    #[serde(default, skip_serializing_if = "is_tcp")]
    #[schemars(with = "String")]
    pub protocol: Protocol,
    pub version: String,
    pub model: String,
    /// False where `threads` has no effect (one thread per connection).
    pub threads_matter: bool,
    /// The client implementation: the same as `runtime` unless fixed.
    pub client: String,
    pub client_version: String,
    pub threads: usize,
    /// The client's threads where they differ from the server's
    /// (`--client-threads`); absent: as many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_threads: Option<usize>,
    pub connections: usize,
    pub block: usize,
    /// Blocks in flight per connection.
    #[serde(default = "default_window")]
    pub window: usize,
    /// The open loop's rate, blocks a second over all connections; absent:
    /// the closed loop (or a share's, until its capacity is known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<u64>,
    /// An open loop at a share of capacity (`--rates 10%`): its percent of
    /// the closed-loop blocks a second of the run's first implementation
    /// at the same load, which made `rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_share: Option<u32>,
    /// Blocks each connection round-trips before it closes and another
    /// opens in its place; absent: connections stay open. (Files written
    /// before cells had it take the run's `churn`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<u64>,
    /// Inside TLS, and how; absent: plain TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Tls>,
    /// What the server's connections do with each block (`--shapes`);
    /// absent: echo.
    #[serde(default, skip_serializing_if = "is_echo")]
    #[schemars(with = "String")]
    pub shape: Shape,
    /// The runtime's builder settings of a configuration
    /// (`tokio{event_interval=1}`), by knob; absent: the adapter's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub knobs: BTreeMap<String, String>,
    /// Units of server CPU work per block echoed.
    #[serde(default)]
    pub work: u64,
    pub placement: Placement,
    pub status: Status,
    pub error: Option<String>,
    /// For an unavailable cell: a few words of why (`error` has the whole reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    pub runs: Vec<Run>,
    /// Median, min and max over the runs; absent unless the cell is ok.
    pub mib_per_s: Option<Summary>,
    /// Every figure of the registry, summarized the same way; absent unless
    /// the cell is ok. Computed again from the runs whenever a file is read:
    /// what a file holds of them is not read.
    // An older file's are of another layout, and reading them was a tenth
    // of loading a history's runs.
    #[serde(default, deserialize_with = "skipped")]
    pub figures: Option<Figures>,
    /// The runs' MiB/s spread (max / min) exceeds the run's noise threshold.
    #[serde(default)]
    pub noisy: bool,
    /// Half its runs or more were client-bound ([`Run::client_bound`]): the
    /// figure is a lower bound for the server.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_bound: bool,
    /// The distribution-free interval of the median MiB/s; absent unless ok.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// Where the runs' MiB/s fall into two clusters, each one's median: a
    /// cell whose median would flip between two states.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<[f64; 2]>,
    /// Repetitions after the others (`--cost-runs`, one by default), in
    /// which the kernel counted each process's system calls by kind.
    /// Counting slows every system call, so no figure of `runs` comes from
    /// them, and they give only the figures the registry says they do.
    /// (A file from before there could be several has its one as `cost_run`.)
    #[serde(
        default,
        alias = "cost_run",
        deserialize_with = "one_or_more",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub cost_runs: Vec<Run>,
    /// Why the cell has no cost run, where it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_absent: Option<String>,
}

/// An interval of a median: order statistics of the runs, and the
/// probability that it holds the true median (its coverage, binomial).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
}

/// Median, min and max over a cell's repetitions of each figure of the
/// [`registry`] that they give, by its key; a figure none gives is absent
/// (round-trip times with `--no-latency`, system calls without cost runs).
pub type Figures = BTreeMap<String, Summary>;

/// Throughput inside the window, slice by slice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Series {
    /// How long each slice lasted, in seconds.
    pub seconds: Vec<f64>,
    /// Bytes the client read in each slice.
    pub bytes: Vec<u64>,
}

/// What a process spent between two samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// CPU time over wall time: 100 is one core busy all the time.
    pub cpu_percent: f64,
    pub user_percent: f64,
    pub system_percent: f64,
    /// Peak resident set size (VmHWM) at the end of the window, in KiB.
    pub peak_rss_kib: u64,
    pub voluntary_switches_per_s: f64,
    pub involuntary_switches_per_s: f64,
    /// CPU time over the window in nanoseconds, from the process's CPU
    /// clock (every thread, those that ended meanwhile too): `cpu_percent`
    /// is read in clock ticks, too coarse for the CPU a block costs.
    /// Absent in files from before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
    /// The CPU it wanted, over wall time: `cpu_ns`, plus the time its
    /// threads waited in a run queue, plus its part of the hypervisor's
    /// steal on the CPUs it may run on (the steal weighed by the share of
    /// those CPUs it ran and waited for). Beside `cpu_percent` it tells a process that had
    /// no more work from one that was given no more CPU; it is what the
    /// client-bound rule judges. Absent in files from before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demand_percent: Option<f64>,
}

impl Usage {
    /// What the process wanted, as a percentage of a core: its demand
    /// where the file has it, else its CPU.
    pub fn wanted_percent(&self) -> f64 {
        self.demand_percent.unwrap_or(self.cpu_percent)
    }
}

/// A server's accept queue over a repetition: connections the kernel had
/// completed and the server not yet accepted, summed over its listeners,
/// one sample every `interval_ms` from the client's start, those after
/// the last non-empty one left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AcceptQueue {
    pub interval_ms: f64,
    /// The largest backlog among the listeners: a queue this long drops
    /// the SYNs that follow.
    pub backlog: u32,
    pub depths: Vec<u32>,
}

impl AcceptQueue {
    /// The most connections seen waiting at once.
    pub fn peak(&self) -> u32 {
        self.depths.iter().copied().max().unwrap_or(0)
    }

    /// Seconds from the client's start to the end of the last sample that
    /// saw a connection waiting (0 where none did).
    pub fn held_seconds(&self) -> f64 {
        self.depths.len() as f64 * self.interval_ms / 1e3
    }

    /// Leaves out the samples after the last non-empty one.
    pub fn trim(&mut self) {
        let held = self
            .depths
            .iter()
            .rposition(|&d| d > 0)
            .map_or(0, |i| i + 1);
        self.depths.truncate(held);
    }
}

/// TCP counters of the network namespace, and UDP's receive-buffer drops,
/// or their change over a repetition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TcpStats {
    /// Handshakes completed that the accept queue had no room for
    /// (TcpExt ListenOverflows).
    pub listen_overflows: u64,
    /// SYNs and handshakes a listener dropped, overflows among them
    /// (TcpExt ListenDrops).
    pub listen_drops: u64,
    /// SYNs sent again for want of an answer (TcpExt TCPSynRetrans).
    pub syn_retransmits: u64,
    /// Segments sent again, SYNs among them (Tcp RetransSegs).
    pub retransmitted_segments: u64,
    /// Connections opened by connect(2) (Tcp ActiveOpens).
    pub active_opens: u64,
    /// Connections a listener completed (Tcp PassiveOpens).
    pub passive_opens: u64,
    /// UDP datagrams the kernel dropped for a full socket receive buffer
    /// (Udp RcvbufErrors); absent in files from before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_receive_buffer_errors: Option<u64>,
}

impl TcpStats {
    /// What changed since `earlier`.
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            listen_overflows: self
                .listen_overflows
                .saturating_sub(earlier.listen_overflows),
            listen_drops: self.listen_drops.saturating_sub(earlier.listen_drops),
            syn_retransmits: self.syn_retransmits.saturating_sub(earlier.syn_retransmits),
            retransmitted_segments: self
                .retransmitted_segments
                .saturating_sub(earlier.retransmitted_segments),
            active_opens: self.active_opens.saturating_sub(earlier.active_opens),
            passive_opens: self.passive_opens.saturating_sub(earlier.passive_opens),
            udp_receive_buffer_errors: self
                .udp_receive_buffer_errors
                .zip(earlier.udp_receive_buffer_errors)
                .map(|(now, then)| now.saturating_sub(then)),
        }
    }

    /// The connection troubles counted, in words, if any.
    pub fn troubles(&self) -> Option<String> {
        (self.listen_drops + self.syn_retransmits > 0).then(|| {
            format!(
                "the kernel counted {} listen-queue overflows, {} listen drops and {} SYN \
                 retransmissions over the run",
                self.listen_overflows, self.listen_drops, self.syn_retransmits
            )
        })
    }
}

/// What a process did over the window, as the kernel counted it for the
/// process and every thread it started (perf_event_open tracepoints).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cost {
    /// Every system call.
    pub syscalls: u64,
    /// read, readv, recvfrom, recvmsg, recvmmsg.
    pub reads: u64,
    /// write, writev, sendto, sendmsg, sendmmsg.
    pub writes: u64,
    /// Readiness waits: epoll_wait, epoll_pwait, epoll_pwait2, poll, ppoll,
    /// select, pselect6, io_uring_enter.
    pub waits: u64,
    /// futex: threads waiting for or waking each other.
    pub futex: u64,
}

impl Cost {
    /// What was counted from `earlier` until these counts.
    pub fn since(&self, earlier: &Cost) -> Cost {
        Cost {
            syscalls: self.syscalls.saturating_sub(earlier.syscalls),
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            waits: self.waits.saturating_sub(earlier.waits),
            futex: self.futex.saturating_sub(earlier.futex),
        }
    }

    /// The system calls of no kind above.
    pub fn other_syscalls(&self) -> u64 {
        self.syscalls
            .saturating_sub(self.reads + self.writes + self.waits + self.futex)
    }
}

/// One repetition of a cell.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Run {
    /// Position of this run in the whole run's sequence (repetitions are interleaved).
    pub order: usize,
    pub mib_per_s: f64,
    pub messages_per_s: f64,
    pub bytes: u64,
    pub seconds: f64,
    /// Absent where an external client measured: it reports its throughput only.
    pub connect_seconds: Option<f64>,
    /// Connections that ended cleanly after at least one whole block came back verified.
    pub verified_connections: Option<usize>,
    /// Jain's index of the connections' bytes in the window (1 = even).
    #[serde(default)]
    pub fairness: Option<f64>,
    /// Connections that received no byte inside the window.
    #[serde(default)]
    pub starved_connections: Option<usize>,
    /// Round-trip times of blocks inside the window.
    #[serde(default)]
    pub rtt: Option<Rtt>,
    /// Each connection's time to connect, SYN retransmissions included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<Rtt>,
    /// Each connection's first round trip; with immediate arrival it waits
    /// for the server to accept the connection too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_rtt: Option<Rtt>,
    /// What the kernel counted of TCP over the whole repetition (connecting,
    /// warm-up, window, drain): listen-queue overflows, SYN retransmissions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpStats>,
    /// The server's accept queue, sampled from the client's start, where
    /// connections arrived while it served (immediate arrival, a storm, churn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_queue: Option<AcceptQueue>,
    /// With churn: connections that came up inside the window, each one
    /// replacing one closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_connections: Option<u64>,
    /// Over UDP: the datagrams sent inside the window, and those counted
    /// lost (no answer within the client's loss timeout; each was sent again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams: Option<Datagrams>,
    /// With TLS resumption: the client's handshakes over the whole
    /// repetition, and those that offered a session ticket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumptions: Option<Resumptions>,
    /// In the open loop: what the schedule asked and got; `rtt` then times
    /// each block from when it was due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoop>,
    /// What each process spent over the window.
    #[serde(default)]
    pub server_usage: Option<Usage>,
    #[serde(default)]
    pub client_usage: Option<Usage>,
    /// MiB/s per server core busy: MiB moved per CPU-second of the server.
    #[serde(default)]
    pub mib_per_server_cpu_s: Option<f64>,
    /// The CPUs each process found in its own affinity: the pinning applied.
    #[serde(default)]
    pub server_cpus: Vec<usize>,
    #[serde(default)]
    pub client_cpus: Vec<usize>,
    /// Throughput inside the window, slice by slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<Series>,
    /// In a cell's cost run only: what each process did over the window,
    /// as the kernel counted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cost: Option<Cost>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cost: Option<Cost>,
    /// With `--counted`: each side's user-space instructions and system
    /// calls per block, for a fixed number of blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<Counted>,
    /// Why, with `--counted`, a run was not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_absent: Option<String>,
    /// What our server's connections did over the repetition (warm-up
    /// included), as it reported when stopped; absent for external servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<Served>,
    /// The client, not the server, set the pace: the open-loop generator
    /// busy past its limit, or the client's CPU near its capacity while
    /// the server's had room ([`Cell::summarize`] works it out again from
    /// the run's usage whenever a file is read).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_bound: bool,
    /// With `--client-host`: the hosts' clients, each with its part of the
    /// repetition; the figures above are theirs summed and merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_hosts: Option<ClientHosts>,
}

/// The clients of one repetition on several hosts, started by one signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientHosts {
    /// How far apart the hosts' windows opened, in seconds: the spread of
    /// `window[0]` over the hosts (each on its own clock, after the signal).
    pub skew_seconds: f64,
    /// Each host's part, in the order given.
    pub parts: Vec<HostPart>,
}

/// One client host's part of a repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostPart {
    /// Its `--client-host` URL.
    pub host: String,
    pub connections: usize,
    pub bytes: u64,
    pub seconds: f64,
    pub mib_per_s: f64,
    /// Its round trips, before they were merged with the other hosts'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt: Option<Rtt>,
    /// When its window opened and closed: seconds after the start signal
    /// came, on that host's monotonic clock.
    pub window: [f64; 2],
}

/// What a UDP client's sockets sent inside the window and lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Datagrams {
    pub sent: u64,
    pub lost: u64,
}

impl Datagrams {
    /// Lost datagrams in percent of those sent; 0 when none was sent.
    pub fn loss_percent(&self) -> f64 {
        match self.sent {
            0 => 0.0,
            sent => self.lost as f64 / sent as f64 * 100.0,
        }
    }
}

impl From<pingpong::wire::Datagrams> for Datagrams {
    fn from(d: pingpong::wire::Datagrams) -> Self {
        Self {
            sent: d.sent,
            lost: d.lost,
        }
    }
}

/// What a server's connections did with their blocks: the shape's hand-offs,
/// tasks and runtime services, to check against its definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Served {
    /// Reads that returned bytes, each echoed.
    pub reads: u64,
    /// Reads whose bytes went to another task.
    pub handoffs: u64,
    /// Tasks the shape spawned: handlers, workers, connections' writers.
    pub spawned: u64,
    /// Timers armed around a read (the timeout shape).
    #[serde(default)]
    pub timers: u64,
    /// Timers that fired before their read: a connection ended for each.
    #[serde(default)]
    pub timeouts: u64,
    /// Blocks handed to the runtime's blocking pool.
    #[serde(default)]
    pub unblocked: u64,
    /// Blocks counted under the shared shape's lock.
    #[serde(default)]
    pub locked: u64,
    /// Futures that each drove a thread's connections (the select shape).
    #[serde(default)]
    pub selects: u64,
}

impl From<pingpong::wire::Served> for Served {
    fn from(s: pingpong::wire::Served) -> Self {
        Self {
            reads: s.reads,
            handoffs: s.handoffs,
            spawned: s.spawned,
            timers: s.timers,
            timeouts: s.timeouts,
            unblocked: s.unblocked,
            locked: s.locked,
            selects: s.selects,
        }
    }
}

/// An open-loop run: the rate asked for and what the server made of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpenLoop {
    /// Blocks a second asked for, over all connections.
    pub rate: u64,
    /// Blocks that came back inside the window, per second.
    pub achieved: f64,
    /// Blocks due inside the window, and of those, the ones that came back.
    pub due: u64,
    pub returned: u64,
    /// Round trips from when each block went out, not when it was due.
    pub uncorrected: Rtt,
    /// How late each block went out after it was due.
    pub lag: Rtt,
    /// How late the generator woke for a due time: its timing error.
    pub timer: Rtt,
    /// The mean send lag of each slice of the window, in seconds.
    pub lag_series: Vec<Option<f64>>,
    /// The share of the window the generator's threads had work.
    pub generator_busy: f64,
    /// Why the run did not sustain the rate, if it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_sustained: Option<String>,
}

/// What a block cost each side, counted rather than timed: user-space
/// instructions under valgrind's callgrind, the difference between a count
/// of `blocks` blocks per connection and one of twice as many (so that
/// starting and stopping cancel out), and system calls per block of the
/// side running natively meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Counted {
    pub blocks: u64,
    pub server_instructions: f64,
    pub client_instructions: f64,
    pub server_syscalls: Option<f64>,
    pub client_syscalls: Option<f64>,
}

/// Round-trip time percentiles of one run, in microseconds, and the
/// histogram they come from (absent where a published report left it out
/// to stay light: its tables and charts need only the percentiles).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Rtt {
    /// Round trips recorded (blocks that came back inside the window).
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// Nanoseconds, HdrHistogram V2 deflate encoding, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// None, whatever the file holds: what follows from the runs is computed
/// again.
fn skipped<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Figures>, D::Error> {
    serde::de::IgnoredAny::deserialize(d)?;
    Ok(None)
}

/// Runs written as a list, or as the one run of an older file.
fn one_or_more<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Run>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMore {
        More(Vec<Run>),
        One(Box<Run>),
    }
    Ok(match OneOrMore::deserialize(d)? {
        OneOrMore::More(runs) => runs,
        OneOrMore::One(run) => vec![*run],
    })
}

fn is_tcp(protocol: &Protocol) -> bool {
    *protocol == Protocol::Tcp
}

fn is_echo(shape: &Shape) -> bool {
    *shape == Shape::Echo
}

fn default_window() -> usize {
    defaults::WINDOW
}

impl Config {
    /// The CPU placement, as the run set it or by default.
    pub fn pin(&self) -> &str {
        self.pin.as_deref().unwrap_or(defaults::PIN)
    }

    /// When our client's connections start, as the run set it or by default.
    pub fn arrival(&self) -> Arrival {
        self.arrival.unwrap_or_default()
    }

    /// The noise threshold, as the run set it or by default.
    pub fn noisy_percent(&self) -> f64 {
        self.noisy_percent.unwrap_or(defaults::NOISY_PERCENT)
    }

    /// The loads `workload` runs at: every load of the run, but where
    /// `--handshakes` names connection counts, the handshake scenario's at
    /// those, and where the run ties windows to connection counts, those
    /// of its window (over UDP, every one: its window is always 1).
    pub fn loads_of(&self, workload: Workload) -> Vec<Load> {
        let only = match &self.tls {
            Some(tls) if self.handshake_workloads().contains(&workload) => {
                &tls.handshake_connections[..]
            }
            _ => &[],
        };
        let tied = |load: &Load| {
            workload.protocol == Protocol::Udp
                || self
                    .windows_at
                    .iter()
                    .filter(|w| w.connections == load.connections)
                    .all(|w| w.window == workload.window)
        };
        self.loads
            .iter()
            .filter(|l| only.is_empty() || only.contains(&l.connections))
            .filter(|l| tied(l))
            .copied()
            .collect()
    }

    /// The handshake scenario of `--tls`: a new connection after every
    /// block of the first size, plain, TLS, TLS with resumption.
    fn handshake_workloads(&self) -> Vec<Workload> {
        if !self.tls.as_ref().is_some_and(|t| t.handshakes) {
            return Vec::new();
        }
        [None, Some(Tls::Full), Some(Tls::Resumption)]
            .map(|tls| Workload {
                protocol: Protocol::Tcp,
                // The first size: `block` is always `blocks[0]`.
                block: self.block,
                window: 1,
                rate: None,
                churn: Some(defaults::HANDSHAKE_CHURN),
                tls,
                shape: Shape::Echo,
            })
            .to_vec()
    }

    /// Every block size with every window (each plain and, with `--tls`,
    /// inside TLS), then the handshake scenario, in the order they run.
    pub fn workloads(&self) -> Vec<Workload> {
        let blocks = if self.blocks.is_empty() {
            vec![self.block]
        } else {
            self.blocks.clone()
        };
        let windows = if self.windows.is_empty() {
            vec![defaults::WINDOW]
        } else {
            self.windows.clone()
        };
        // Shares of capacity need the closed loop first, where it is measured.
        let closed = self.rates.is_empty() || !self.rate_shares.is_empty();
        let rates: Vec<Option<Rate>> = closed
            .then_some(None)
            .into_iter()
            .chain(self.rates.iter().map(|&r| Some(Rate::PerSecond(r))))
            .chain(self.rate_shares.iter().map(|&p| Some(Rate::Share(p))))
            .collect();
        let tls: &[Option<Tls>] = match self.tls {
            Some(_) => &[None, Some(Tls::Full)],
            None => &[None],
        };
        let shapes = match self.shapes.is_empty() {
            true => &[Shape::Echo][..],
            false => &self.shapes[..],
        };
        let protocols = match self.protocols.is_empty() {
            true => &[Protocol::Tcp][..],
            false => &self.protocols[..],
        };
        let mut workloads = Vec::new();
        for &protocol in protocols {
            for &block in &blocks {
                for &window in &windows {
                    for &rate in &rates {
                        for &tls in tls {
                            for &shape in shapes {
                                let workload = Workload {
                                    protocol,
                                    block,
                                    window,
                                    rate,
                                    churn: self.churn,
                                    tls,
                                    shape,
                                };
                                if let Some(w) = workload.over(protocol)
                                    && !workloads.contains(&w)
                                {
                                    workloads.push(w);
                                }
                            }
                        }
                    }
                }
            }
        }
        for handshakes in self.handshake_workloads() {
            if !workloads.contains(&handshakes) {
                workloads.push(handshakes);
            }
        }
        workloads
    }
}

impl Cell {
    pub fn workload(&self) -> Workload {
        Workload {
            protocol: self.protocol,
            block: self.block,
            window: self.window,
            rate: match self.rate_share {
                Some(p) => Some(Rate::Share(p)),
                None => self.rate.map(Rate::PerSecond),
            },
            churn: self.churn,
            tls: self.tls,
            shape: self.shape,
        }
    }

    pub fn load(&self) -> Load {
        Load {
            threads: self.threads,
            connections: self.connections,
            client_threads: self.client_threads,
        }
    }

    /// Names the open loop's client as it is named now: until the generator
    /// left the mio baseline for a crate of its own (the same code), it ran
    /// as mio's client, and cells written then say so. Their figures, and
    /// the version (mio's), carry over.
    pub fn name_the_generator(&mut self) {
        if self.workload().rate.is_some() && self.client == "mio" {
            self.client = GENERATOR.name.into();
        }
    }
}

impl Results {
    /// A new run's results: its options, and nothing measured yet.
    pub fn new(config: Config) -> Self {
        Self {
            schema: SCHEMA,
            suite: Suite::default(),
            host: Host::default(),
            server_host: None,
            config,
            cells: Vec::new(),
        }
    }

    /// The repetitions recorded.
    pub fn runs(&self) -> usize {
        self.cells.iter().map(|c| c.runs.len()).sum()
    }

    /// The index of the cell of `server` (with `client`'s client) at
    /// `load`, made (with no runs) if new; each side is an implementation
    /// and the version its program was built on.
    pub fn cell_index(
        &mut self,
        server: (&Implementation, &str),
        client: (&Implementation, &str),
        load: Load,
        workload: Workload,
        placement: &Placement,
    ) -> usize {
        let (server_name, client_name) = (server.0.name(), client.0.name());
        let found = self.cells.iter().position(|c| {
            (&c.implementation, &c.client, c.load(), c.workload())
                == (&server_name, &client_name, load, workload)
        });
        found.unwrap_or_else(|| {
            self.cells.push(Cell {
                implementation: server_name,
                protocol: workload.protocol,
                version: server.1.into(),
                model: server.0.model(),
                threads_matter: server.0.threads_matter() && client.0.threads_matter(),
                client: client_name,
                client_version: client.1.into(),
                threads: load.threads,
                client_threads: load.client_threads,
                connections: load.connections,
                block: workload.block,
                window: workload.window,
                rate: match workload.rate {
                    Some(Rate::PerSecond(r)) => Some(r),
                    Some(Rate::Share(_)) | None => None,
                },
                rate_share: match workload.rate {
                    Some(Rate::Share(p)) => Some(p),
                    _ => None,
                },
                churn: workload.churn,
                tls: workload.tls,
                shape: workload.shape,
                knobs: server.0.knobs(),
                work: self.config.work,
                placement: placement.clone(),
                status: Status::Ok,
                error: None,
                unavailable: None,
                runs: Vec::new(),
                mib_per_s: None,
                figures: None,
                noisy: false,
                client_bound: false,
                interval: None,
                modes: None,
                cost_runs: Vec::new(),
                cost_absent: None,
            });
            self.cells.len() - 1
        })
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;

    fn docs() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src")
    }

    fn schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Results)).unwrap()
    }

    #[test]
    fn the_committed_json_schema_is_that_of_the_types() {
        let path = docs().join("results.schema.json");
        let fresh = serde_json::to_string_pretty(&schema()).unwrap() + "\n";
        if std::env::var_os("COMPARE_WRITE_SCHEMA").is_some() {
            fs::write(&path, &fresh).unwrap();
        }
        let committed = fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == fresh,
            "docs/src/results.schema.json is not the schema of model::results::Results; \
             write it anew with: COMPARE_WRITE_SCHEMA=1 cargo test -p model --lib schema"
        );
    }

    #[test]
    fn the_schema_page_explains_every_field() {
        fn fields(value: &serde_json::Value, found: &mut std::collections::BTreeSet<String>) {
            match value {
                serde_json::Value::Object(map) => {
                    if let Some(serde_json::Value::Object(properties)) = map.get("properties") {
                        found.extend(properties.keys().cloned());
                    }
                    map.values().for_each(|v| fields(v, found));
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| fields(v, found)),
                _ => {}
            }
        }
        let mut found = std::collections::BTreeSet::new();
        fields(&schema(), &mut found);
        let page = fs::read_to_string(docs().join("methodology/results-schema.md")).unwrap();
        let missing: Vec<&String> = found
            .iter()
            .filter(|f| !page.contains(&format!("`{f}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/src/methodology/results-schema.md does not explain {missing:?}"
        );
    }
}
