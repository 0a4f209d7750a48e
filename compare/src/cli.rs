//! The command line of `compare`, as clap reads it: the only module that
//! knows clap. The options module turns what it parsed into each command's
//! options, validated once.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgGroup, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use pingpong::client::Arrival;
use pingpong::protocol::MAX_IN_FLIGHT;
use pingpong::protocol::Protocol;
use pingpong::server::Shape;

use crate::check;
use model::matrix::Rate;
use model::named::Named;
use model::placement::Pin;
use model::results::registry::Figure;
use model::{defaults, matrix, preset};

/// The command line as compare parses it: [`Cli`]'s, with `run`'s
/// `--resume` refused beside every option a run records and `--preset`
/// beside every option it sets. The conflicts come from the groups
/// `recorded` and `set_by_preset`, so a new option joins them by its group
/// alone; they are set one by one, so that clap names the option given.
pub fn command() -> clap::Command {
    // A built copy has each argument in its groups; the command parsed is
    // changed before it is built.
    let mut built = Cli::command();
    built.build();
    let members = |command: &str, group: &str| -> Vec<clap::Id> {
        let command = built.find_subcommand(command).expect("a subcommand");
        let group = command.get_groups().find(|g| g.get_id() == group);
        group.map_or(Vec::new(), |g| g.get_args().cloned().collect())
    };
    let (recorded, set) = (members("run", "recorded"), members("run", "set_by_preset"));
    // bisect's way of explaining means nothing unless it explains.
    let method = members("bisect", "ExplainMethod");
    Cli::command()
        .mut_subcommand("run", |run| {
            run.mut_arg("resume", |a| a.conflicts_with_all(recorded))
                .mut_arg("preset", |a| a.conflicts_with_all(set))
        })
        .mut_subcommand("bisect", |bisect| {
            method.iter().fold(bisect, |bisect, id| {
                bisect.mut_arg(id, |a| a.requires("explain"))
            })
        })
}

/// `words` (the program's name first) parsed as [`command`] says.
pub fn parse_from<I, T>(words: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::from_arg_matches(&command().try_get_matches_from(words)?)
}

#[derive(Debug, Parser)]
#[command(
    name = "compare",
    version,
    about = "Runs the muduo pingpong benchmark over Rust async runtimes and tabulates the results"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The implementations, their IO models, the crate versions they are
    /// built on, their crates' upkeep, and the knobs a configuration may turn.
    List {
        /// Have cargo fetch each crate's index entry first (needs the
        /// network; otherwise the upkeep is as cargo last fetched it).
        #[arg(long)]
        refresh: bool,
        /// The figures instead, as a markdown table: each one's key (what
        /// `compare check` and `bisect --metric` name), unit, better
        /// direction, the repetitions that give it and its verdict.
        #[arg(long, conflicts_with = "refresh")]
        figures: bool,
    },
    /// Runs the matrix: every implementation at every load, server and client
    /// in separate pinned processes.
    Run(Box<RunArgs>),
    /// Renders a results file as markdown, CSV, a JSON summary, SVG charts
    /// and a self-contained HTML page.
    Report(ReportArgs),
    /// Compares a candidate with a baseline cell by cell: regressed, improved
    /// or no change, telling real change from noise. Exit 1 when something
    /// regressed, 2 when the input cannot be compared.
    Check(CheckArgs),
    /// Why a cell moved between two implementations of one run: each side
    /// run again under callgrind, counted by call stack (io_uring, and with
    /// --sampled every side: sampled by perf, the kernel's time included),
    /// the functions whose figure per block moved past the runs' variation
    /// named with a differential flame graph of each side, beside the run's
    /// own system calls and context switches per block.
    Explain(ExplainArgs),
    /// Finds the first release of a runtime crate whose figure differs from
    /// a good release's: a binary search over the releases between GOOD
    /// and BAD, each step a run paired with GOOD and check's verdict.
    Bisect(BisectArgs),
    /// The history of runs: every finished run is appended to it; import
    /// results folders made before, or list what it holds.
    History(HistoryArgs),
    /// Builds a static site of the history: an index of the runs by
    /// machine and what moved, a page per implementation with trend charts,
    /// a page per run beside its report, and comparisons of runs. It needs
    /// no server (file:// or any static host).
    Site(SiteArgs),
}

#[derive(Debug, Args)]
pub struct SiteArgs {
    /// The folder it is written to (its pages are replaced).
    #[arg(long, value_name = "DIR", default_value = "results/site")]
    pub out: PathBuf,
    #[command(flatten)]
    pub history: HistoryStore,
    /// The rendered book (`mdbook build docs`) to copy in and link from
    /// every page, or none.
    #[arg(long, value_name = "DIR|none", default_value = "docs/book")]
    pub book: String,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: HistoryCommand,
    #[command(flatten)]
    pub history: HistoryStore,
}

/// The history a command reads (`site`, `history`'s commands).
#[derive(Debug, Args)]
pub struct HistoryStore {
    /// The history: an SQLite file, or a PostgreSQL database
    /// (postgres://USER@HOST/DB, TLS by ?sslmode= and &sslrootcert=, the
    /// password from PGPASSWORD).
    #[arg(
        id = "history",
        long = "history",
        global = true,
        value_name = "FILE|URL",
        default_value = "results/history.sqlite"
    )]
    pub path: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Appends the runs of these results folders (or files), and of every
    /// folder under them that holds one; a run it has is replaced.
    Import {
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// The runs it holds, oldest first.
    List,
    /// The steps in each cell's MiB/s over its runs on one machine, each
    /// near the run it begins with, and what changed across it.
    Steps,
}

#[derive(Debug, Args)]
pub struct BisectArgs {
    /// One of our implementations, e.g. tokio (its crate's releases are
    /// searched, or with --git the commits of a repository).
    pub name: String,
    /// A release whose figure is the reference, e.g. 1.45.0 (with --git: a
    /// commit, tag or branch).
    pub good: String,
    /// A later release whose figure differs from GOOD's (with --git: a
    /// later revision).
    pub bad: String,
    /// Search the first-parent commits from GOOD to BAD of this git
    /// repository (a folder, file://, or a remote) instead of releases.
    #[arg(long, value_name = "URL|DIR")]
    pub git: Option<String>,
    /// Each step's matrix and method by name, as `compare run --preset`
    /// takes it (default, where neither --connections nor --threads is
    /// given: services, a service's partial loads, where a release's
    /// cost per request moves).
    #[arg(long, value_parser = one_of::<preset::Preset>(), conflicts_with_all = ["connections", "threads"])]
    pub preset: Option<preset::Preset>,
    /// The loads instead: connection counts (a step differs where any cell
    /// does, and the end says which cells flip; alone: at 1 thread).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = count(u32::MAX as i64))]
    pub connections: Vec<usize>,
    /// The loads instead: thread counts, the same on both sides (alone: at
    /// 1,000 connections).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = count(1024))]
    pub threads: Vec<usize>,
    /// The figures judged, any the verdicts judge (`compare list
    /// --figures`): mib_per_s, rtt_p99_us, a side's cost per block
    /// (server_cpu_us_per_block, server_futex_per_block, ...), or with
    /// --counted its instructions (server_instructions_per_block); a step
    /// differs where any figure of any cell does, as `compare check`
    /// judges them together. Default: every figure `compare check` judges.
    #[arg(long, value_delimiter = ',', value_parser = judged_figure())]
    pub metric: Vec<&'static Figure>,
    /// Count each side's instructions per block under valgrind in every
    /// step (BLOCKS blocks per connection, then twice as many): figures that
    /// hold still where seconds do not, so fewer rounds decide.
    #[arg(long, value_name = "BLOCKS", value_parser = clap::value_parser!(u64).range(1..))]
    pub counted: Option<u64>,
    /// Repetitions of each step's cells (6 at least for an interval;
    /// default: the preset's, else 6).
    #[arg(long, value_parser = count(1000))]
    pub repeat: Option<usize>,
    /// Smallest change, in percent, that counts (default: the paired
    /// threshold of each judged figure's kind, 2% timed, 3% cost, 1%
    /// counted).
    #[arg(long, value_parser = percent)]
    pub threshold: Option<f64>,
    /// The window and warm-up (default: the preset's, else as `run`'s).
    #[command(flatten)]
    pub timing: Timing,
    /// Folder for the steps' runs (default: results/bisect-<UTC timestamp>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Explain the last run's pair (`compare explain`, wake-ups traced
    /// where perf runs) and name, beside the version found, the three
    /// functions whose cost moved most.
    #[arg(long)]
    pub explain: bool,
    /// How --explain measures each side again (these need it).
    #[command(flatten)]
    pub explain_method: ExplainMethod,
}

/// How long each repetition measures, and warms up first: an option group
/// of `run` and `bisect`; absent, a preset's or the defaults.
#[derive(Debug, Clone, Default, Args)]
pub struct Timing {
    /// Length of the measurement window, in seconds [default: 0.2].
    #[arg(long, allow_negative_numbers = true, value_parser = pingpong::cli::seconds(true))]
    pub seconds: Option<f64>,
    /// Seconds of pingpong after connecting, before the window [default: 0.1].
    #[arg(long, allow_negative_numbers = true, value_parser = pingpong::cli::seconds(false))]
    pub warmup: Option<f64>,
}

impl Timing {
    pub fn seconds(&self) -> f64 {
        self.seconds.unwrap_or(defaults::SECONDS)
    }

    pub fn warmup(&self) -> f64 {
        self.warmup.unwrap_or(defaults::WARMUP)
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// BASELINE CANDIDATE results files (or run folders), or one with
    /// --baseline and --candidate naming two implementations of its run.
    #[arg(required = true, num_args = 1..=2)]
    pub results: Vec<PathBuf>,
    /// The baseline implementation inside one run, e.g. tokio@1.47.0.
    #[arg(long, requires = "candidate")]
    pub baseline: Option<String>,
    /// The candidate implementation inside one run, e.g. tokio.
    #[arg(long, requires = "baseline")]
    pub candidate: Option<String>,
    /// Smallest change in a timed figure, in percent, that counts as a
    /// regression or improvement (default: 2 inside one run, where the two
    /// sides are paired round by round; 5 between two runs).
    #[arg(long, value_parser = percent)]
    pub threshold: Option<f64>,
    /// The same for cost figures: CPU, context switches and system calls
    /// per block of each side (default: 3 inside one run, 5 between two).
    #[arg(long, value_parser = percent)]
    pub cost_threshold: Option<f64>,
    /// The same for counted figures (instructions, system calls per block).
    #[arg(long, default_value_t = defaults::COUNTED_THRESHOLD_PERCENT, value_parser = percent)]
    pub counted_threshold: f64,
    /// Confidence of the interval: 0.95 or 95.
    #[arg(long, default_value_t = defaults::CONFIDENCE, value_parser = confidence)]
    pub confidence: f64,
    /// table (for the terminal), markdown, bmf (Bencher Metric Format: the
    /// candidate's figures) or github-action-benchmark (customBiggerIsBetter:
    /// the candidate's throughput).
    #[arg(long, default_value = "table", value_parser = one_of::<check::Format>())]
    pub format: check::Format,
    /// Between two runs, judge each timed figure by the noise of its
    /// cell's past runs on the candidate's machine, where this history
    /// holds enough of them, or none (default: history.sqlite beside the
    /// candidate's folder, where there is one). A postgres:// URL names a
    /// PostgreSQL database.
    #[arg(long, value_name = "FILE|URL|none")]
    pub history: Option<PathBuf>,
    /// Explain each flagged cell not explained yet (`compare explain`, into
    /// its default folder, wake-ups traced where perf runs); between two
    /// runs, each implementation's cells against its own in the baseline's
    /// run, on this machine. Every format links or names each flagged
    /// cell's explanation found there.
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub settings: ExplainSettings,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A results.json, or the folder of a run; or two, BASELINE CANDIDATE,
    /// to explain a move between two runs on this machine (each runs again
    /// the binary it ran, which it keeps beside its results).
    #[arg(required = true, num_args = 1..=2)]
    pub results: Vec<PathBuf>,
    /// The baseline implementation (of the first run), e.g. tokio@1.51.0.
    #[arg(long)]
    pub baseline: String,
    /// The candidate implementation (of the second run, where there are
    /// two), e.g. tokio@1.52.0.
    #[arg(long)]
    pub candidate: String,
    /// The cell to explain, as check labels it without its implementation
    /// ("1 thread, 10 connections, 16384 B"); repeatable. Default: every
    /// cell both ran.
    #[arg(long = "cell", value_name = "LABEL")]
    pub cells: Vec<String>,
    #[command(flatten)]
    pub settings: ExplainSettings,
    /// Where the explanations go, a folder per cell (default:
    /// explain/BASELINE-vs-CANDIDATE beside the results).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Trace, besides, every wake-up each side's threads issue and every
    /// sleep they take, with its call stack (perf, as root), and tell the
    /// code paths whose wake-ups or sleeps per block moved.
    #[arg(long)]
    pub wakes: bool,
}

/// How `explain` measures each side again, and `check --explain` too.
#[derive(Debug, Args)]
pub struct ExplainSettings {
    /// Counted runs of each side of each implementation, taken in turns:
    /// a function's move is told from the runs' own variation.
    #[arg(long, default_value_t = defaults::EXPLAIN_REPEAT,
          value_parser = clap::value_parser!(u64).range(2..=50))]
    pub repeat: u64,
    #[command(flatten)]
    pub method: ExplainMethod,
    /// The cargo profile the binaries are built with, as the run's were.
    #[arg(long, env = defaults::PROFILE_ENV, default_value = defaults::PROFILE)]
    pub profile: String,
}

/// Which sides are measured again and how: explain's, and that of each
/// command that explains (check, bisect).
#[derive(Debug, Args)]
#[command(next_help_heading = "How each side is measured again")]
pub struct ExplainMethod {
    /// Count one side only, server or client (default: both).
    #[arg(long, value_parser = ["server", "client"])]
    pub side: Option<String>,
    /// Blocks per connection of the shorter count (the longer has twice
    /// as many; their difference is what a block costs).
    #[arg(long, default_value_t = defaults::EXPLAIN_BLOCKS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub blocks: u64,
    /// Sample every side with perf on the CPU clock (the kernel's time
    /// included, by call stack) rather than count its instructions under
    /// callgrind; the sides callgrind cannot run (io_uring) are sampled
    /// always.
    #[arg(long)]
    pub sampled: bool,
    /// Seconds of a sampled side's shorter count, at the cell's rate: more
    /// gather more samples, and each figure's precision grows as their
    /// square root.
    #[arg(long, default_value_t = defaults::SAMPLE_SECONDS, value_name = "SECONDS",
          allow_negative_numbers = true, value_parser = pingpong::cli::seconds(true))]
    pub sample_seconds: f64,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results.json, or the folder of a run.
    pub results: PathBuf,
    /// Formats to write (comma-separated).
    #[arg(long, value_delimiter = ',', default_values = report::Format::NAMES,
          value_parser = one_of::<report::Format>())]
    pub format: Vec<report::Format>,
    /// Folder to write into (default: the folder of the results file).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The implementation the relative tables divide by (default: mio, if in the run).
    #[arg(long)]
    pub reference: Option<String>,
}

/// The options a run records: `--resume` continues with the run's own and
/// takes none of them. A preset sets those of `set_by_preset` (the layout
/// of its cells and their timing). The window's timing is flattened in, so
/// its two join the groups here.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("recorded").multiple(true).args(["seconds", "warmup"])))]
#[command(group(ArgGroup::new("set_by_preset").multiple(true).args(["seconds", "warmup"])))]
pub struct RunArgs {
    /// Implementations to compare (comma-separated); default: all. A
    /// configuration sets its runtime's knobs: 'tokio{event_interval=1}'
    /// (quote it: the shell expands braces).
    #[arg(group = "recorded", long)]
    pub runtimes: Vec<String>,
    /// With a range of releases in --runtimes (NAME@A..B): keep the
    /// pre-releases in it too.
    #[arg(group = "recorded", long)]
    pub pre_releases: bool,
    /// With a range of commits in --runtimes (NAME@git:URL#A..B): every
    /// Nth first-parent commit from A, B always among them.
    #[arg(group = "recorded", long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub step: u64,
    /// Use this implementation's client against every server (default: each its own).
    #[arg(group = "recorded", long)]
    pub client: Option<String>,
    /// An implementation outside this repository, named in --runtimes or
    /// --client: NAME=FILE, a TOML file of its server and client command
    /// lines (examples in compare/external/). Repeatable.
    #[arg(group = "recorded", long, value_name = "NAME=FILE")]
    pub external: Vec<String>,
    /// Measure against a server already running at HOST:PORT, started by
    /// hand (pingpong-<name> server --bind ADDR ...); --runtimes names it.
    #[arg(
        group = "recorded",
        group = "set_by_preset",
        long,
        value_name = "HOST:PORT",
        conflicts_with = "remote"
    )]
    pub server: Option<String>,
    /// Start every server on this host over ssh, bound to its address:
    /// ssh://[USER@]HOST[:PORT]. $COMPARE_SSH_COMMAND replaces `ssh`.
    #[arg(
        group = "recorded",
        group = "set_by_preset",
        long,
        value_name = "ssh://HOST"
    )]
    pub remote: Option<String>,
    /// Where the pingpong-<name> binaries lie on the --remote host
    /// (default: the same folder as here).
    #[arg(group = "recorded", long, requires = "remote")]
    pub remote_bin_dir: Option<PathBuf>,
    /// Start the clients on this host over ssh (ssh://[USER@]HOST[:PORT];
    /// repeatable): the connections split among the hosts, all started by
    /// one signal, their throughput summed and round trips merged. The
    /// server must be on a host they reach (--remote or --server); their
    /// binaries lie where the --remote host's do.
    #[arg(
        group = "recorded",
        group = "set_by_preset",
        long = "client-host",
        value_name = "ssh://HOST"
    )]
    pub client_hosts: Vec<String>,
    /// The loads where neither --connections nor --threads names them:
    /// quick (the muduo article's matrix less its 10,000-connection load,
    /// which a 2-core machine cannot also repeat to the default precision
    /// within 15 minutes, and less the thread counts over this machine's
    /// CPUs where the server runs here) or muduo (the article's whole matrix).
    #[arg(group = "recorded", group = "set_by_preset", long, default_value = "quick", value_parser = one_of::<matrix::Matrix>(), conflicts_with_all = ["connections", "threads"])]
    pub matrix: matrix::Matrix,
    /// A matrix and method by name: loopback-bench (the C++ library's
    /// loopback benchmark: blocks of 64, 1,024 and 16,384 bytes; 1
    /// connection at window 1 and 16 at window 16; TCP, inside TLS and UDP;
    /// 1 thread; 0.25 s of warm-up, 1 s windows, 3 repetitions) or services
    /// (a service's regression workload: 10 connections, 1 and 2 server
    /// threads, 1 client thread, the echo and the split, spawn and pool
    /// shapes, each in the closed loop and in the open loop at 10% and 30%
    /// of the first implementation's capacity; 0.2 s of warm-up, 0.5 s
    /// windows, 6 runs and 6 cost runs a cell).
    #[arg(group = "recorded", long, value_parser = one_of::<preset::Preset>())]
    pub preset: Option<preset::Preset>,
    /// Connection counts; with --threads, the matrix is their cross product
    /// (alone: 1 thread). Default: --matrix.
    #[arg(group = "recorded", group = "set_by_preset", long, value_delimiter = ',', allow_negative_numbers = true, value_parser = count(u32::MAX as i64))]
    pub connections: Vec<usize>,
    /// Thread counts, the same on both sides (alone: at 100 and 1000 connections).
    #[arg(group = "recorded", group = "set_by_preset", long, value_delimiter = ',', allow_negative_numbers = true, value_parser = count(1024))]
    pub threads: Vec<usize>,
    /// The client's thread counts, apart from the server's: a list runs
    /// each at every load (default: as many as the server's --threads).
    /// The open loop's generator and the handshake scenario's clients too.
    #[arg(group = "recorded", group = "set_by_preset", long, value_delimiter = ',', allow_negative_numbers = true, value_parser = count(1024))]
    pub client_threads: Vec<usize>,
    /// Bytes per block (a list runs each size at every load).
    #[arg(group = "recorded", group = "set_by_preset", long, value_delimiter = ',', default_values_t = [defaults::BLOCK], allow_negative_numbers = true, value_parser = count(MAX_IN_FLIGHT as i64))]
    pub block: Vec<usize>,
    /// Blocks in flight per connection (pipelining; 1 in muduo's pingpong).
    /// Each window runs with each block size.
    #[arg(group = "recorded", group = "set_by_preset", long, value_delimiter = ',', default_values_t = [defaults::WINDOW], allow_negative_numbers = true, value_parser = count(1024))]
    pub window: Vec<usize>,
    /// Units of deterministic CPU work the server does per block echoed
    /// (one unit: one round of splitmix64), in the task the shape hands
    /// the block to.
    #[arg(group = "recorded", long, default_value_t = 0)]
    pub work: u64,
    /// What carries the pingpong (a list runs each at every load): tcp
    /// (a stream per connection), udp (a connected UDP socket per
    /// connection, one datagram of --block bytes in flight, at most
    /// 65,507). UDP runs the closed-loop echo at window 1 alone: no TLS
    /// twin, churn, open loop or other shape.
    #[arg(group = "recorded", group = "set_by_preset", long, value_enum, value_delimiter = ',', default_values_t = [Protocol::Tcp])]
    pub protocol: Vec<Protocol>,
    /// Server shapes (a list runs each at every load): echo (the task that
    /// reads a block writes it back), split (the connection's reading and
    /// writing in two tasks, joined by a channel), spawn (a task per block, which
    /// returns it through a one-shot channel), pool (one queue to a pool
    /// of worker tasks), timeout (a timer armed and cancelled around every
    /// read), blocking (each block through the runtime's blocking pool),
    /// select (a thread's connections driven by one future, no task each),
    /// shared (each block counted under one async mutex). The bytes on the
    /// wire are the same in each.
    #[arg(group = "recorded", group = "set_by_preset", long, value_enum, value_delimiter = ',', default_values_t = [Shape::Echo])]
    pub shapes: Vec<Shape>,
    #[command(flatten)]
    pub timing: Timing,
    /// Repetitions of each cell, exactly (3 by default with --precision off);
    /// the cell's figure is their median. With --precision, the fewest (6
    /// by default: the fewest with a 95% interval).
    #[arg(group = "recorded", long, allow_negative_numbers = true, value_parser = count(1000))]
    pub repeat: Option<usize>,
    /// Repeat cells, in further interleaved rounds, until the 95% interval
    /// of each one's median MiB/s is within this percentage of the median
    /// (six runs at least), up to --max-repeat and --budget; "off" for a
    /// fixed number of repetitions. The default unless --repeat is given.
    #[arg(group = "recorded", long, value_name = "PCT|off", value_parser = precision)]
    pub precision: Option<Precision>,
    /// When our client's connections start their pingpong: once every one
    /// is up (gated), or each as soon as it is connected (immediate), as
    /// independent clients do, so that the server accepts while it serves.
    #[arg(group = "recorded", long, value_enum, default_value_t = Arrival::Gated)]
    pub arrival: Arrival,
    /// Blocks each connection round-trips before it closes and another
    /// opens in its place (short-lived connections, as HTTP/1.0 clients
    /// make them): connections per second beside round trips per second.
    #[arg(group = "recorded", group = "set_by_preset", long, value_name = "BLOCKS", value_parser = clap::value_parser!(u64).range(1..))]
    pub churn: Option<u64>,
    /// Open loop (wrk2's model): blocks a second over all connections, sent
    /// on a schedule whatever comes back, each round trip timed from when
    /// its block was due; a list sweeps the rates (latency against load).
    /// A rate such as 10% is that share of the capacity the first
    /// implementation of --runtimes shows in the closed loop at the same
    /// load, which then runs too, first. The generator (pingpong-generator)
    /// is the client for every server, and mio's the closed loop's.
    #[arg(
        group = "recorded",
        group = "set_by_preset",
        long,
        visible_alias = "rate",
        value_name = "BLOCKS_PER_S|PERCENT%",
        value_delimiter = ',',
        allow_negative_numbers = true
    )]
    pub rates: Vec<Rate>,
    /// Every workload also inside TLS 1.3 (rustls, one suite, one provider
    /// for every implementation), interleaved with its plain twin; and the
    /// handshake scenario: a new connection after every block, over plain
    /// TCP, inside TLS, and inside TLS with session resumption.
    #[arg(group = "recorded", group = "set_by_preset", long, conflicts_with_all = ["rates", "server"])]
    pub tls: bool,
    /// With --tls: the steady state alone, no handshake scenario.
    #[arg(
        group = "recorded",
        long,
        requires = "tls",
        conflicts_with = "handshakes"
    )]
    pub no_handshakes: bool,
    /// With --tls: the handshake scenario at the loads with these
    /// connection counts only (default: every load of the run).
    #[arg(group = "recorded", long, requires = "tls", value_name = "CONNECTIONS", value_delimiter = ',', allow_negative_numbers = true, value_parser = count(100_000))]
    pub handshakes: Vec<usize>,
    /// With --rates: the p99 round trip, in milliseconds, under which a
    /// sustained rate counts for the knee table (the highest rate each
    /// implementation sustains with p99 under it).
    #[arg(group = "recorded", long, value_name = "MS", default_value_t = defaults::P99_BOUND_MS, value_parser = positive_ms)]
    pub p99_bound: f64,
    /// The most repetitions a cell gets in pursuit of --precision.
    #[arg(group = "recorded", long, allow_negative_numbers = true, value_parser = count(1000))]
    pub max_repeat: Option<usize>,
    /// Minutes the repetitions beyond the first --repeat rounds may take in
    /// all; cells still short of --precision then are named at the end.
    #[arg(group = "recorded", long, value_name = "MINUTES", allow_negative_numbers = true, value_parser = minutes)]
    pub budget: Option<f64>,
    /// Mark a cell noisy when its max MiB/s exceeds its min by more than this percentage.
    #[arg(group = "recorded", long, default_value_t = defaults::NOISY_PERCENT, value_parser = percent)]
    pub noisy: f64,
    /// CPU placement: auto (disjoint sets, one CPU per thread where there are
    /// enough), none, or SERVER_CPUS/CLIENT_CPUS such as 0-3/4-7.
    #[arg(group = "recorded", long, default_value = defaults::PIN)]
    pub pin: Pin,
    /// The client's CPUs, such as 8-15; the server's come from the others,
    /// one per thread (the same as --pin auto/8-15).
    #[arg(group = "recorded", long, value_name = "CPUS", conflicts_with = "pin", value_parser = client_cpus)]
    pub client_cpus: Option<Pin>,
    /// Do not record round-trip times.
    #[arg(group = "recorded", long)]
    pub no_latency: bool,
    /// No cost run per cell (the kernel counting each process's system
    /// calls): a quicker run, whose cost columns say why they are absent.
    #[arg(group = "recorded", long)]
    pub no_cost: bool,
    /// Cost runs per cell, after its timed runs, the cells of a group
    /// interleaved round by round as theirs are: six or more give the
    /// system calls per block an interval that `compare check` judges.
    #[arg(group = "recorded", group = "set_by_preset", long, default_value_t = 1, conflicts_with = "no_cost", value_parser = count(1000))]
    pub cost_runs: usize,
    /// Also count, in every repetition, each side's user-space instructions
    /// per block under valgrind's callgrind (BLOCKS blocks per connection,
    /// then twice as many) and its system calls per block: figures that
    /// hold still where seconds do not, for `compare check`.
    #[arg(group = "recorded", long, value_name = "BLOCKS", value_parser = clap::value_parser!(u64).range(1..))]
    pub counted: Option<u64>,
    /// Folder for results.json (default: results/<UTC timestamp>).
    #[arg(group = "recorded", long)]
    pub out: Option<PathBuf>,
    /// The history the finished run is appended to, or none (default:
    /// history.sqlite beside the run's folder, results/history.sqlite for
    /// the default folder). A postgres://USER@HOST/DB URL names a
    /// PostgreSQL database, which several machines may append to (TLS by
    /// ?sslmode= and &sslrootcert=, the password from PGPASSWORD).
    #[arg(long, value_name = "FILE|URL|none", env = defaults::HISTORY_ENV)]
    pub history: Option<PathBuf>,
    /// Continue the interrupted run in this folder with its own options,
    /// skipping the runs its results.json already holds.
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Plain progress lines instead of a progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Take the pingpong-<name> binaries from this folder instead of building them.
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// The cargo profile to build the runtime binaries with (none is built
    /// with --bin-dir); results record it. Published figures use release;
    /// the tests use dev, which builds in seconds.
    #[arg(long, env = defaults::PROFILE_ENV, default_value = defaults::PROFILE)]
    pub profile: String,
}

/// One of `T`'s choices, by name: clap lists the names in its help and errors.
fn one_of<T: Named + Send + Sync>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::NAMES)
        .map(|name| T::from_name(&name).expect("a name of the list is a choice"))
}

/// A figure the verdicts judge, by its key in the registry.
fn judged_figure() -> impl TypedValueParser<Value = &'static Figure> {
    PossibleValuesParser::new(Figure::judged().map(|f| f.key))
        .map(|key| Figure::named(&key).expect("a key of the list is a figure"))
}

/// A whole number from 1 to `max`; 0 and negative numbers get the range.
fn count(max: i64) -> impl TypedValueParser<Value = usize> {
    clap::value_parser!(i64).range(1..=max).map(|v| v as usize)
}

/// `--precision`: a percentage, or off.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Precision {
    Percent(f64),
    Off,
}

/// `--client-cpus`: a CPU list, the client's; the server's placed beside it.
fn client_cpus(s: &str) -> Result<Pin, String> {
    Ok(Pin::Client(model::placement::cpu_list(s)?))
}

fn precision(s: &str) -> Result<Precision, String> {
    match s {
        "off" => Ok(Precision::Off),
        _ => match percent(s)? {
            p if p > 0.0 => Ok(Precision::Percent(p)),
            _ => Err(format!("{s} is not a positive percentage (or off)")),
        },
    }
}

fn minutes(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s} is not a positive number of minutes")),
    }
}

fn positive_ms(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{s} is not a positive number of milliseconds")),
    }
}

fn percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s} is not a non-negative percentage")),
    }
}

fn confidence(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s} is not a number"))?;
    let level = if v > 1.0 { v / 100.0 } else { v };
    if level > 0.5 && level < 1.0 {
        Ok(level)
    } else {
        Err(format!(
            "{s} is not a confidence level between 0.5 and 1 (or 50 and 100)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{command, parse_from};

    #[test]
    fn the_command_line_is_declared_consistently() {
        // clap's own checks: every conflict, requirement and group names an
        // argument that exists, no two share a name or a short flag.
        command().debug_assert();
    }

    #[test]
    fn resume_and_preset_conflict_with_every_option_they_set() {
        // A new option of `run` is recorded (and so refused beside
        // --resume) unless it is one of these, which a resumed run may
        // take: where its history goes, how it shows progress, which
        // binaries it runs.
        const BESIDE_RESUME: [&str; 6] =
            ["history", "resume", "quiet", "bin_dir", "profile", "help"];
        let mut cli = command();
        cli.build();
        let run = cli.find_subcommand("run").unwrap();
        let members = |group: &str| -> Vec<String> {
            let group = run.get_groups().find(|g| g.get_id() == group).unwrap();
            group.get_args().map(|a| a.to_string()).collect()
        };
        let recorded = members("recorded");
        for arg in run.get_arguments() {
            let id = arg.get_id().as_str();
            assert!(
                recorded.iter().any(|r| r == id) != BESIDE_RESUME.contains(&id),
                "--{id}: recorded, or taken beside --resume, not both nor neither"
            );
        }
        // What a preset sets is what it conflicts with.
        let set = members("set_by_preset");
        for id in [
            "connections",
            "threads",
            "seconds",
            "warmup",
            "rates",
            "shapes",
        ] {
            assert!(set.iter().any(|s| s == id), "{id}");
        }
        for (words, refused) in [
            (&["run", "--resume", "x", "--seconds", "1"][..], true),
            (&["run", "--resume", "x", "--quiet"][..], false),
            (&["run", "--preset", "services", "--threads", "2"][..], true),
            (&["run", "--preset", "services", "--repeat", "2"][..], false),
            (
                &[
                    "run",
                    "--connections",
                    "1,10",
                    "--threads",
                    "2",
                    "--seconds",
                    "1",
                ][..],
                false,
            ),
        ] {
            let parsed = parse_from(std::iter::once(&"compare").chain(words));
            assert_eq!(parsed.is_err(), refused, "{words:?}");
        }
    }

    /// Every subcommand, every flag and every value clap lists for them, as
    /// `Cli::command()` declares them (a new flag is generated without
    /// being named here), and values a user might type, valid and not.
    fn words() -> Vec<String> {
        let mut words = Vec::new();
        let mut commands = vec![command()];
        while let Some(command) = commands.pop() {
            for sub in command.get_subcommands() {
                words.push(sub.get_name().to_string());
                commands.push(sub.clone());
            }
            for arg in command.get_arguments() {
                let longs = arg.get_long_and_visible_aliases().unwrap_or_default();
                words.extend(longs.into_iter().map(|l| format!("--{l}")));
                words.extend(arg.get_short().map(|s| format!("-{s}")));
                let values = arg.get_possible_values();
                words.extend(values.iter().map(|v| v.get_name().to_string()));
            }
        }
        words.extend(
            [
                "tokio",
                "mio@1.0.0",
                "0",
                "-1",
                "1,10",
                "0.5",
                "1e309",
                "NaN",
                "off",
                "auto",
                "none",
                "0-1/2",
                "3-1/0",
                "markdown,svg",
                "67108865",
                "",
            ]
            .map(String::from),
        );
        words.sort();
        words.dedup();
        words
    }

    #[test]
    fn every_flag_and_subcommand_is_among_the_words() {
        let words = words();
        for expected in [
            "explain",
            "bisect",
            "history",
            "site",
            "--counted",
            "--sample-seconds",
        ] {
            assert!(
                words.iter().any(|w| w == expected),
                "{expected} missing: {words:?}"
            );
        }
    }

    /// Words a user might type, so that parsing gets past the first
    /// unknown word.
    fn word() -> impl Strategy<Value = String> {
        prop_oneof![prop::sample::select(words()), ".{0,12}"]
    }

    proptest! {
        #[test]
        fn any_command_line_parses_or_is_refused_without_a_panic(
            words in prop::collection::vec(word(), 0..8)
        ) {
            let _ = parse_from(std::iter::once("compare".to_string()).chain(words));
        }
    }
}
