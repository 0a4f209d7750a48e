//! Every default of `compare`, in one place: the command line shows them,
//! and results files written before an option existed read as these.

/// Length of the measurement window, in seconds. A fifth of a second: on
/// the machine this suite grew on, a run's noise did not shrink with longer
/// windows (0.25 to 1 s), so shorter ones buy more runs per minute for the
/// default run's 15 minutes (the book's "The default run").
pub const SECONDS: f64 = 0.2;
/// Pingpong after connecting and before the window, in seconds. The window
/// also waits until every connection has had its first block back, however
/// long that takes.
pub const WARMUP: f64 = 0.1;
/// Repetitions of each cell when `--precision` is off.
pub const REPEAT: usize = 3;
/// The first rounds of a run in pursuit of a precision: six, the fewest
/// runs whose median has a 95% interval. Fewer left a run's slowest cells
/// (10,000 connections) without an interval when the budget ran out: the
/// default run at +-25% with three first rounds ended with all ten of them
/// at five runs.
pub const PRECISE_REPEAT: usize = FEWEST_TIMED_RUNS;
/// The half-width, in percent of the median, of the 95% interval of each
/// cell's median MiB/s that a run repeats cells for. What the default run
/// can reach within 15 minutes on the 2-core VM this suite grew on: there,
/// a run at +-10% spent 18 minutes and left 95 of 110 cells short (machine-
/// wide slow periods halve every implementation for seconds); +-25% was
/// reached by 97 of them in that run. Quieter machines: `--precision 5`.
pub const PRECISION_PERCENT: f64 = 25.0;
/// The most repetitions a cell gets in pursuit of the precision.
pub const MAX_REPEAT: usize = 12;
/// Minutes the repetitions beyond the first rounds may take in all: with
/// six first rounds, what the default run, build included, has left of its
/// 15 minutes from a fresh clone here.
pub const BUDGET_MINUTES: f64 = 0.5;
/// Bytes per block: the muduo article's 16 KiB.
pub const BLOCK: usize = 16384;
/// Blocks in flight per connection: one, as in muduo's pingpong.
pub const WINDOW: usize = 1;
/// A cell is noisy when its max MiB/s exceeds its min by more than this.
pub const NOISY_PERCENT: f64 = 10.0;
/// CPU placement.
pub const PIN: &str = "auto";
/// The smallest change in a timed figure that `compare check` calls a
/// regression or improvement, between two runs,
pub const THRESHOLD_PERCENT: f64 = 5.0;
/// and inside one run, where the two sides ran interleaved and are paired
/// round by round.
pub const PAIRED_THRESHOLD_PERCENT: f64 = 2.0;
/// The same for cost figures (CPU, context switches and system calls per
/// block, each side's), between two runs,
pub const COST_THRESHOLD_PERCENT: f64 = 5.0;
/// and inside one run, paired round by round as the timed figures are.
pub const PAIRED_COST_THRESHOLD_PERCENT: f64 = 3.0;
/// What `compare check` adds to both sides' cost figures per block before
/// it divides them: a count that is none on one side (no futex call at
/// all) still has a ratio, and a change of a few hundredths of a call or a
/// switch per block counts for little. At 0.01, a run of three tokio
/// releases here called a client's 0.024 voluntary switches per block
/// against 0.037 a regression ([+6%, +73%]); a tenth leaves a real step
/// of 0.4 to 1.8 futex calls per block far past any threshold.
pub const COST_FLOOR: f64 = 0.1;
/// The same for counted figures (instructions and system calls per block).
pub const COUNTED_THRESHOLD_PERCENT: f64 = 1.0;
/// The fewest runs on each side that `compare check` judges a timed figure
/// by: below six, even the interval of a median that knows no distribution
/// cannot reach 95% (all of five runs fall on one side of the true median
/// one time in sixteen). Here, checks of three paired runs of mio against an
/// identical build called MiB/s changed in 5 of 10 trials.
pub const FEWEST_TIMED_RUNS: usize = 6;
/// The same for counted figures, which move by well under their threshold
/// between runs (none of 10 such A/A trials of three runs raised an alarm).
pub const FEWEST_COUNTED_RUNS: usize = 3;
/// Sets `compare run --history`: the tests' runs keep none.
pub const HISTORY_ENV: &str = "COMPARE_HISTORY";
/// The fewest past runs of a cell on one machine from which `compare check`
/// learns its noise threshold (five changes between consecutive runs);
/// with fewer, the default threshold decides.
pub const HISTORY_FEWEST_RUNS: usize = 6;
/// The most past runs of a cell a threshold is learned from: its latest.
pub const HISTORY_LEARNING_RUNS: u64 = 50;
/// The least threshold a history teaches, in percent: a quiet history
/// does not make every wobble a verdict.
pub const HISTORY_FLOOR_PERCENT: f64 = 1.0;
/// Confidence of `compare check`'s intervals.
pub const CONFIDENCE: f64 = 0.95;
/// The implementation relative tables divide by, when the run has it.
pub const REFERENCE: &str = "mio";
/// The cargo profile the runtime binaries are built with: every published
/// figure comes from it.
pub const PROFILE: &str = "release";
/// The environment variable that sets `--profile`.
pub const PROFILE_ENV: &str = "COMPARE_PROFILE";

/// The p99 round trip under which a sustained open-loop rate counts for
/// the knee table, in milliseconds.
pub const P99_BOUND_MS: f64 = 1.0;

/// The client of an open-loop run's closed-loop cells, whose capacity a
/// rate such as 10% is a share of: one for every server, as the open
/// loop's generator is (`adapters::GENERATOR`), so that only the server differs.
pub const CAPACITY_CLIENT: &str = "mio";

/// The client that makes a connect storm (`--arrival storm`) for every
/// server: the baseline's, which issues its connects in one burst.
pub const STORM_CLIENT: &str = "mio";

/// Counted runs of each side of each implementation in `compare explain`:
/// the fewest whose range is a variation, and one more.
pub const EXPLAIN_REPEAT: u64 = 3;
/// Blocks per connection of its shorter count.
pub const EXPLAIN_BLOCKS: u64 = 50;
/// `compare explain --sample-seconds`: a second of a sampled side at its
/// cell's rate, about 5,000 samples of each busy thread.
pub const SAMPLE_SECONDS: f64 = 1.0;

/// Blocks per connection in the handshake scenario of `--tls`: one round
/// trip, then a new connection, so that the handshakes set the pace.
pub const HANDSHAKE_CHURN: u64 = 1;

/// The workspace this binary was built from, if it is still there.
pub fn source_tree() -> Option<std::path::PathBuf> {
    // This crate lies at compare/model in it.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)?;
    root.join("Cargo.toml")
        .is_file()
        .then(|| root.to_path_buf())
}

/// Where unreleased versions are built, and remote repositories cloned:
/// `target/versions` of the source tree.
pub fn versions_folder() -> anyhow::Result<std::path::PathBuf> {
    let root = source_tree().ok_or_else(|| {
        anyhow::anyhow!(
            "git: and path: versions are built from the source tree, and it is not here"
        )
    })?;
    Ok(root.join("target").join("versions"))
}

/// Where the files of commits are unpacked to be built: outside the source
/// tree (`$XDG_CACHE_HOME/pingpong-compare/trees`, else under `~/.cache`),
/// since cargo takes a crate inside it for a member of this workspace, whose
/// settings (`[workspace.lints]`, ...) the crate's own manifest then
/// inherits in vain.
pub fn trees_folder() -> anyhow::Result<std::path::PathBuf> {
    let cache = match std::env::var_os("XDG_CACHE_HOME") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::path::PathBuf::from(
            std::env::var_os("HOME")
                .ok_or_else(|| anyhow::anyhow!("neither XDG_CACHE_HOME nor HOME is set"))?,
        )
        .join(".cache"),
    };
    Ok(cache.join("pingpong-compare").join("trees"))
}
